/*
 * Layout operations: reshape, transpose and permute, flip, roll, concat,
 * stack, split, slices (read and write), tile, repeat, pad, tril/triu, diag,
 * kron and broadcast_to. They accept every dtype (f16, bf16, c64 and c128
 * included) and move data without computing on it, bit for bit (NaN
 * payloads and -0 kept). kron multiplies: f16/bf16 in f32, rounded once;
 * complex as complex. Fill values (pad) convert by kiln_cast() rules
 * (complex: imaginary part 0). docs/layout.md has the semantics with
 * examples; docs/ops.md the new dtypes.
 *
 * Axes are given in [-ndim, ndim); a negative axis counts from the end.
 *
 * Output convention (as in elementwise.h): if *out is NULL, kiln creates the
 * result and stores it in *out (the caller releases it); otherwise *out must
 * already have the result's shape and dtype and belong to the same context,
 * and kiln writes into it. *out may be (or share bytes with) an input:
 * kiln then computes into a temporary and copies, so the result is as if
 * the input had been read first; kiln_tril/kiln_triu over exactly x's
 * bytes work in place (docs/ops.md, "Aliasing"). Results are independent
 * copies, except
 * kiln_reshape with *out NULL, which returns a view (see there).
 *
 * Statuses common to every operation here:
 *   KILN_OK; KILN_ERR_INVALID_HANDLE (NULL, released or foreign ctx/tensor);
 *   KILN_ERR_INVALID_ARGUMENT (NULL out or NULL array argument, an axis out
 *   of range, other argument values named below);
 *   KILN_ERR_CONTEXT_MISMATCH (a tensor of another context);
 *   KILN_ERR_DTYPE (inputs or a given *out of different dtypes);
 *   KILN_ERR_SHAPE (shapes that do not fit as described, or a given *out of
 *   the wrong shape); KILN_ERR_OVERFLOW (result too large);
 *   KILN_ERR_BUILD; KILN_ERR_OPENCL; KILN_ERR_DEVICE_MEMORY;
 *   KILN_ERR_HOST_MEMORY.
 */
#ifndef KILN_LAYOUT_H
#define KILN_LAYOUT_H

#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Gives x a new shape with the same number of elements. One entry of shape
 * may be -1: it is inferred (KILN_ERR_SHAPE if it cannot be, or for more than
 * one -1).
 *
 * With *out NULL the result is a view: a new handle on x's buffer, made
 * without copying or launching anything. Writes through either handle are
 * seen by both; the buffer lives until both are released (in any order).
 * With *out given, x's data is copied into it (it must have the new shape).
 */
KILN_API kiln_status kiln_reshape(kiln_context *ctx, const kiln_tensor *x, size_t ndim,
                                  const int64_t *shape, kiln_tensor **out);

/**
 * Swaps the last two axes: for x of shape [..., m, n] the result has shape
 * [..., n, m] (a batched matrix transpose), through 32x32 tiles in local
 * memory when m and n are both >= 8. KILN_ERR_SHAPE if x has fewer than 2
 * dimensions.
 */
KILN_API kiln_status kiln_transpose(kiln_context *ctx, const kiln_tensor *x, kiln_tensor **out);

/**
 * Reorders the axes: result axis i is x's axis perm[i] (NumPy transpose with
 * axes). perm must hold each axis of x exactly once (nperm == ndim, negative
 * entries allowed), else KILN_ERR_INVALID_ARGUMENT. After unit axes are
 * dropped and adjacent ones merged, a permutation whose source-contiguous
 * axis is not the result's innermost one (both >= 8 long) moves through
 * local-memory tiles like kiln_transpose; others map elements directly.
 */
KILN_API kiln_status kiln_permute(kiln_context *ctx, const kiln_tensor *x, const int64_t *perm,
                                  size_t nperm, kiln_tensor **out);

/**
 * Reverses the order of elements along each of the naxes axes (duplicates
 * are KILN_ERR_INVALID_ARGUMENT). axes NULL with naxes 0 flips every axis.
 */
KILN_API kiln_status kiln_flip(kiln_context *ctx, const kiln_tensor *x, const int64_t *axes,
                               size_t naxes, kiln_tensor **out);

/**
 * Circular shift (NumPy roll, MATLAB circshift): along axes[i] elements move
 * shifts[i] places towards higher indices, wrapping around; negative shifts
 * move the other way, any magnitude is reduced modulo the axis length. A
 * repeated axis adds its shifts. With axes NULL, x is rolled as if flattened
 * (row-major) by shifts[0] and n must be 1.
 */
KILN_API kiln_status kiln_roll(kiln_context *ctx, const kiln_tensor *x, const int64_t *shifts,
                               const int64_t *axes, size_t n, kiln_tensor **out);

/**
 * Joins n >= 1 tensors of one dtype and rank >= 1 along an existing axis; all
 * other dimensions must agree (KILN_ERR_SHAPE). Empty inputs are allowed.
 */
KILN_API kiln_status kiln_concat(kiln_context *ctx, const kiln_tensor *const *inputs, size_t n,
                                 int64_t axis, kiln_tensor **out);

/**
 * Joins n >= 1 tensors of one shape and dtype along a new axis, which has
 * index axis in the result (axis in [-(ndim+1), ndim]). The result has rank
 * ndim + 1 (KILN_ERR_INVALID_ARGUMENT beyond KILN_MAX_DIMS).
 */
KILN_API kiln_status kiln_stack(kiln_context *ctx, const kiln_tensor *const *inputs, size_t n,
                                int64_t axis, kiln_tensor **out);

/**
 * Cuts x along axis into n consecutive pieces of sizes[0], ..., sizes[n-1]
 * elements, which must be >= 0 and sum to the axis length (else
 * KILN_ERR_SHAPE). outs[i] follows the output convention for each piece;
 * given pieces that share bytes with each other are KILN_ERR_INVALID_ARGUMENT
 * (nothing written). On failure, pieces kiln created are released and their
 * outs[i] reset to NULL.
 */
KILN_API kiln_status kiln_split(kiln_context *ctx, const kiln_tensor *x, int64_t axis,
                                const int64_t *sizes, size_t n, kiln_tensor **outs);

/** Marks an omitted start or stop of a kiln_range (Python's None). */
#define KILN_SLICE_OMIT INT64_MIN

/**
 * A Python-style slice start:stop:step along one axis. A negative start or
 * stop counts from the end; out-of-range values are clamped as Python does;
 * KILN_SLICE_OMIT means "from the first element in step order" (start) and
 * "through the last in step order" (stop). step must not be 0; a negative
 * step walks backwards (start defaults to the last element).
 */
typedef struct kiln_range {
  int64_t start;
  int64_t stop;
  int64_t step;
} kiln_range;

/** The whole axis, [::1]. */
static inline kiln_range
kiln_range_all(void)
{
  kiln_range r = {KILN_SLICE_OMIT, KILN_SLICE_OMIT, 1};
  return r;
}

/**
 * x[ranges[0], ranges[1], ...]: ranges apply to the first nranges axes
 * (nranges <= ndim; the other axes are taken whole). The result keeps x's
 * rank; an axis may become empty. A step of 0 is KILN_ERR_INVALID_ARGUMENT.
 */
KILN_API kiln_status kiln_slice(kiln_context *ctx, const kiln_tensor *x, const kiln_range *ranges,
                                size_t nranges, kiln_tensor **out);

/**
 * Slice assignment, in place: x[ranges...] = values. values must have x's
 * dtype and broadcast (NumPy rules) to the slice's shape (KILN_ERR_SHAPE).
 * values may share x's buffer (it is read before x is written).
 */
KILN_API kiln_status kiln_slice_assign(kiln_context *ctx, kiln_tensor *x, const kiln_range *ranges,
                                       size_t nranges, const kiln_tensor *values);

/**
 * Repeats x as a whole reps[i] times along each axis (NumPy tile, MATLAB
 * repmat). When nreps > ndim, x is treated as having leading unit axes;
 * when nreps < ndim, reps is treated as having leading ones. reps >= 0.
 */
KILN_API kiln_status kiln_tile(kiln_context *ctx, const kiln_tensor *x, const int64_t *reps,
                               size_t nreps, kiln_tensor **out);

/**
 * Repeats each element repeats times along axis (NumPy repeat with a scalar
 * count, MATLAB repelem along one axis): [a, b] -> [a, a, b, b]. repeats >= 0.
 */
KILN_API kiln_status kiln_repeat(kiln_context *ctx, const kiln_tensor *x, int64_t repeats,
                                 int64_t axis, kiln_tensor **out);

/** How kiln_pad fills the border. */
typedef enum kiln_pad_mode {
  KILN_PAD_CONSTANT = 0, /**< value (converted to x's dtype) */
  KILN_PAD_EDGE,         /**< repeat the edge element */
  KILN_PAD_REFLECT,      /**< mirror without repeating the edge: [1,2,3] -> 3,2,[1,2,3],2,1 */
  KILN_PAD_SYMMETRIC,    /**< mirror repeating the edge: [1,2,3] -> 2,1,[1,2,3],3,2 */
} kiln_pad_mode;

/**
 * Pads axis i with before[i] elements in front and after[i] behind (both
 * arrays have ndim entries, each >= 0). Widths larger than the axis keep
 * reflecting periodically, as NumPy does. Non-constant modes on an empty
 * axis with a nonzero width are KILN_ERR_SHAPE. value is used only by
 * KILN_PAD_CONSTANT.
 */
KILN_API kiln_status kiln_pad(kiln_context *ctx, const kiln_tensor *x, const int64_t *before,
                              const int64_t *after, kiln_pad_mode mode, kiln_scalar value,
                              kiln_tensor **out);

/**
 * Lower triangle: keeps elements with column - row <= k of every matrix in
 * the last two axes, zeroes the rest (k = 0 is the main diagonal, k > 0
 * above it). KILN_ERR_SHAPE for rank < 2.
 */
KILN_API kiln_status kiln_tril(kiln_context *ctx, const kiln_tensor *x, int64_t k,
                               kiln_tensor **out);

/** Upper triangle: keeps column - row >= k; otherwise as kiln_tril. */
KILN_API kiln_status kiln_triu(kiln_context *ctx, const kiln_tensor *x, int64_t k,
                               kiln_tensor **out);

/**
 * NumPy diag. For a 1-D x of length n: the (n+|k|) x (n+|k|) matrix with x
 * on diagonal k (k > 0 above the main one) and zeros elsewhere, every
 * element written. For a 2-D x: the 1-D diagonal k (possibly empty). Other
 * ranks are KILN_ERR_SHAPE.
 */
KILN_API kiln_status kiln_diag(kiln_context *ctx, const kiln_tensor *x, int64_t k,
                               kiln_tensor **out);

/**
 * Kronecker product of a and b (one dtype), N-D: the shorter shape gets
 * leading unit axes and the result has shape a.shape[i] * b.shape[i].
 * Integers wrap; for bool it is the logical and.
 */
KILN_API kiln_status kiln_kron(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b,
                               kiln_tensor **out);

/**
 * Materialises x broadcast (NumPy rules) to shape; KILN_ERR_SHAPE if x does
 * not broadcast to exactly that shape.
 */
KILN_API kiln_status kiln_broadcast_to(kiln_context *ctx, const kiln_tensor *x, size_t ndim,
                                       const int64_t *shape, kiln_tensor **out);

#ifdef __cplusplus
}
#endif
#endif
