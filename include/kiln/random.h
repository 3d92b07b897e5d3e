/*
 * Random numbers: a counter-based Philox4x32-10 generator with one stream
 * state (seed, counter) per context, save/restore of that state, and
 * uniform, normal, integer, Bernoulli, raw-bit, permutation and shuffle
 * generators. docs/layout.md ("Random numbers") defines the stream exactly.
 *
 * Determinism: a result depends only on the state when the call starts, the
 * number of elements and the dtype; not on the device, the work-group size
 * or how the work is launched. Identical bits on every conforming OpenCL
 * device (no built-in transcendental functions are used). Each call reads
 * consecutive 128-bit counter blocks starting at the state's counter and
 * advances the counter past them (modulo 2^64):
 *   bits i32, uniform and normal f32/f16/bf16, bernoulli: 4 elements per block;
 *   bits i64, uniform f64, normal f64/c64, permutation, shuffle: 2 per block;
 *   integers, normal c128: 1 element per block.
 * f16 and bf16 values are the f32 values of the same state rounded to
 * nearest even (uniform: see below for the bounds), so an f16 tensor equals
 * kiln_cast of the f32 tensor the same call would have made.
 * So generating n elements in pieces whose sizes are multiples of the
 * per-block count gives exactly the same values as one call.
 *
 * Calls that fill a tensor take it as `out` (it must exist: create it with
 * kiln_tensor_create) and overwrite every element. The context lock orders
 * concurrent calls; each takes its own counter range.
 *
 * Statuses common to every operation here:
 *   KILN_OK; KILN_ERR_INVALID_HANDLE (NULL, released or foreign ctx/tensor);
 *   KILN_ERR_INVALID_ARGUMENT (NULL pointer, parameter values named below);
 *   KILN_ERR_CONTEXT_MISMATCH; KILN_ERR_DTYPE (a dtype the generator does
 *   not produce); KILN_ERR_SHAPE (a given *out of the wrong shape);
 *   KILN_ERR_BUILD; KILN_ERR_OPENCL; KILN_ERR_DEVICE_MEMORY;
 *   KILN_ERR_HOST_MEMORY. A failed call leaves the state unchanged.
 */
#ifndef KILN_RANDOM_H
#define KILN_RANDOM_H

#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A generator state: the Philox key and the next counter block. */
typedef struct kiln_rng_state {
  uint64_t seed;    /**< key: low 32 bits are k0, high 32 bits k1 */
  uint64_t counter; /**< next 128-bit counter block is (counter_lo, counter_hi, 0, 0) */
} kiln_rng_state;

/** Sets the context's state to {seed, 0}. A new context starts at {0, 0}. */
KILN_API kiln_status kiln_rng_seed(kiln_context *ctx, uint64_t seed);

/** Reads the context's state (to restore it later with kiln_rng_state_set). */
KILN_API kiln_status kiln_rng_state_get(const kiln_context *ctx, kiln_rng_state *out);

/** Replaces the context's state; any value is valid. */
KILN_API kiln_status kiln_rng_state_set(kiln_context *ctx, const kiln_rng_state *state);

/**
 * Fills out (f32, f64, f16 or bf16) with uniform values in [lo, hi). The
 * unit value is u = k * 2^-24 (f32, k from the top 24 bits of a word) or
 * k * 2^-53 (f64, k from 53 bits of two words), so u lies in [0, 1) on an
 * even grid; the element is lo + (hi - lo) * u computed in the dtype,
 * replaced by the largest value below hi if rounding reaches hi. lo < hi,
 * both finite and with hi - lo finite in the dtype (else
 * KILN_ERR_INVALID_ARGUMENT).
 *
 * f16 and bf16: lo and hi are first rounded up to the storage type (L, H:
 * the storage values in [L, H) are exactly those in [lo, hi)); the element
 * is the f32 element for [L, H) rounded to nearest even, and the largest
 * storage value below H where that rounding reaches H. Every element lies in
 * [lo, hi). KILN_ERR_INVALID_ARGUMENT also when [lo, hi) holds no value of
 * the storage type or H is not finite (f16: hi > 65504).
 */
KILN_API kiln_status kiln_random_uniform(kiln_context *ctx, kiln_tensor *out, double lo,
                                         double hi);

/**
 * Fills out (f32, f64, f16, bf16, c64 or c128) with normal values
 * mean + stddev * z, z standard normal by the Box-Muller transform: from u1
 * in (0, 1] and u2 in [0, 1) (24- or 53-bit grids as above),
 * z0 = sqrt(-2 ln u1) cos(2 pi u2) and z1 = sqrt(-2 ln u1) sin(2 pi u2).
 * The grid bounds |z| by 5.77 (f32) and 8.57 (f64). mean and stddev finite
 * (in f32 for f32, c64, f16, bf16; in the storage type for f16 and bf16),
 * stddev >= 0. f16 and bf16: the f32 values rounded to nearest even (values
 * beyond the storage range round to infinity).
 *
 * c64 and c128: complex normal as PyTorch's randn: real and imaginary parts
 * independent, each with standard deviation stddev / sqrt(2), so that
 * E|x - mean|^2 = stddev^2; mean (a real number) is added to the real part.
 * Element i is (mean + s z0, 0 + s z1) from the pair (z0, z1) that makes f32
 * (f64) elements 2i and 2i + 1, with s = stddev / sqrt(2) rounded to f32
 * (f64): for mean 0 the c64 tensor viewed as 2n f32 values equals the f32
 * normal tensor of 2n elements with stddev s.
 */
KILN_API kiln_status kiln_random_normal(kiln_context *ctx, kiln_tensor *out, double mean,
                                        double stddev);

/**
 * Fills out (i32, i64 or u8) with integers uniform in [lo, hi), without
 * modulo bias (Lemire's multiply-and-reject; a rejected draw takes the
 * element's next words, so the result stays a function of the state). lo <
 * hi and [lo, hi - 1] must fit the dtype (else KILN_ERR_INVALID_ARGUMENT).
 */
KILN_API kiln_status kiln_random_integers(kiln_context *ctx, kiln_tensor *out, int64_t lo,
                                          int64_t hi);

/**
 * Fills out (any dtype) with 1 with probability p and 0 otherwise: an
 * element is 1 when its 32-bit word w satisfies w < floor(p * 2^32) (so p
 * is used to 2^-32 resolution; p = 1 gives all ones). p in [0, 1]. Complex
 * ones are 1 + 0i. As a dropout mask: bernoulli(1 - p) in the activations'
 * dtype (f16 and bf16 included), then multiply.
 */
KILN_API kiln_status kiln_random_bernoulli(kiln_context *ctx, kiln_tensor *out, double p);

/**
 * Fills out with raw generator words: i32 elements are words, i64 elements
 * are (w[2t+1] << 32) | w[2t]. Other dtypes are KILN_ERR_DTYPE.
 */
KILN_API kiln_status kiln_random_bits(kiln_context *ctx, kiln_tensor *out);

/**
 * A uniformly random permutation of 0 .. n-1 as a 1-D tensor of dtype (i32
 * with n <= 2^31, or i64): element i gets a 64-bit random key, and the
 * indices sorted by (key, index) on the device form the result. n >= 0.
 * Output convention as in elementwise.h (*out NULL creates it).
 */
KILN_API kiln_status kiln_random_permutation(kiln_context *ctx, int64_t n, kiln_dtype dtype,
                                             kiln_tensor **out);

/**
 * x with its slices along axis 0 in random order: out[i] = x[p[i]] for the
 * permutation p that kiln_random_permutation(x.shape[0]) would give from the
 * same state (and it consumes the same counter blocks). x must have rank >=
 * 1; any dtype. Output convention as in elementwise.h; *out may be x or
 * share bytes with it (through a temporary; docs/ops.md, "Aliasing").
 */
KILN_API kiln_status kiln_random_shuffle(kiln_context *ctx, const kiln_tensor *x,
                                         kiln_tensor **out);

#ifdef __cplusplus
}
#endif
#endif
