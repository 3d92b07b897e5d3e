/*
 * Fast Fourier transforms through clFFT or VkFFT, behind one plan API.
 *
 * Complex data comes in two forms with the same bytes: a complex tensor
 * (c64 for f32 plans, c128 for f64 ones) of shape [..., n], or the older
 * trailing-2 form, a real tensor (f32 or f64) of shape [..., n, 2] holding
 * interleaved (re, im) pairs. This is the memory layout of C99 complex
 * arrays, NumPy's complex64/complex128 and cl_float2/cl_double2, so host
 * data can be uploaded as is. Every complex side below is written in the
 * trailing-2 form; a complex tensor drops that last 2. Either form is
 * accepted for any complex input or given output. An output kiln
 * allocates is a complex tensor when the plan was created with precision
 * c64/c128 or the (C2C) input is complex, else in the trailing-2 form.
 * 16-bit precisions are not offered: clFFT has none, and VkFFT 1.2's
 * half-precision mode does not build on OpenCL (it emits GLSL's f16vec2
 * and would need cl_khr_fp16, which neither PoCL nor NVIDIA's OpenCL has).
 *
 * Transforms run over the last `rank` logical dimensions (sizes, outermost
 * first, as in a row-major array); every dimension before them is batch,
 * and their product must equal the plan's batch. A caller who wants other
 * axes permutes first.
 *
 * Kinds and shapes (L = sizes[rank-1], H = L/2 + 1):
 *   C2C: in and out [batch..., sizes..., 2].
 *   R2C (forward only): in [batch..., sizes...] real, out
 *        [batch..., sizes[0..rank-2]..., H, 2] (the non-negative frequencies
 *        of the last axis, as numpy.fft.rfftn).
 *   C2R (inverse only): in [batch..., sizes[0..rank-2]..., H, 2], out
 *        [batch..., sizes...] real (numpy.fft.irfftn with s = sizes). The
 *        imaginary parts that a real result cannot have are ignored, for
 *        every batch count, back end and placement: at rank 1 those of the
 *        zero and, for even L, the Nyquist frequency; at rank 2-3 those
 *        columns are taken as their Hermitian part over the other axes,
 *        (c[j] + conj(c[-j])) / 2, which is what irfftn computes.
 * In-place plans take one tensor: for C2C [batch..., sizes..., 2]; for
 * R2C/C2R the complex shape [batch..., ..., H, 2], where the real data sits
 * in each last-axis row's first L elements (row stride 2H reals, the
 * padded layout of FFTW and cuFFT). An in-place C2R overwrites its input
 * (as the result); an out-of-place one leaves it unchanged.
 *
 * Normalisation (as numpy.fft's norm, N = product of sizes):
 *   KILN_FFT_NORM_BACKWARD: forward unscaled, inverse scaled by 1/N (default);
 *   KILN_FFT_NORM_ORTHO: both scaled by 1/sqrt(N);
 *   KILN_FFT_NORM_FORWARD: forward scaled by 1/N, inverse unscaled;
 *   KILN_FFT_NORM_NONE: neither scaled (the raw sums of both libraries).
 * The back ends always run unnormalised; a factor other than 1 costs one
 * extra elementwise pass over the output.
 *
 * Back ends. KILN_FFT_BACKEND_CLFFT handles sizes whose prime factors are
 * 2, 3, 5, 7, 11 and 13; KILN_FFT_BACKEND_VKFFT any size (other primes
 * through Bluestein's algorithm). KILN_FFT_BACKEND_AUTO in a plan means the
 * context's KILN_OPT_FFT_BACKEND (environment KILN_FFT_BACKEND =
 * auto|clfft|vkfft). When that is auto too and both back ends can do the
 * sizes, the autotuner's "fft" family decides per device, precision and
 * bucket of points (floor(log2) of the product of the sizes; batch, rank,
 * kind and placement share it): an override (kiln_tune_override), a stored
 * result of `kiln tune`, or in mode KILN_TUNE_ONLINE both back ends timed
 * on first use; without one, the built-in rule: VkFFT on GPUs (8-17x faster
 * than clFFT on the H200 at 2^20-2^24 points) and the back end measured
 * faster on CPU devices (docs/blas_fft.md). When only one back end can do
 * the sizes, auto takes that one whatever is stored; when the one auto
 * chose refuses the plan while planning (KILN_ERR_UNSUPPORTED: a VkFFT
 * limit that depends on the device), auto takes the other.
 * kiln_fft_plan_backend() tells which one a plan got.
 *
 * Plans are cached per context: creating a plan that matches one already
 * made (same kind, rank, sizes, batch, precision, placement and back end)
 * returns a new handle to the same compiled plan. The cache keeps up to 16
 * plans that no handle holds, evicting the least recently used. Plan
 * creation compiles kernels (seconds on PoCL); clFFT's own binary cache is
 * pointed at <kernel cache dir>/clfft unless CLFFT_CACHE_PATH is set, and
 * VkFFT's compiled binaries are kept in the context's kernel cache (source
 * name "vkfft") on platforms where VkFFT 1.2.26 can reload them (NVIDIA by
 * default; KILN_VKFFT_BINARY_CACHE=on|off overrides), so a second process
 * skips the compile there. Binaries that VkFFT's C-string copies would cut
 * (PoCL's) are never stored (see docs/blas_fft.md).
 */
#ifndef KILN_FFT_H
#define KILN_FFT_H

#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque plan handle. */
typedef struct kiln_fft_plan kiln_fft_plan;

typedef enum kiln_fft_kind {
  KILN_FFT_C2C = 0, /**< complex to complex, both directions */
  KILN_FFT_R2C = 1, /**< real to half-spectrum complex, forward only */
  KILN_FFT_C2R = 2, /**< half-spectrum complex to real, inverse only */
} kiln_fft_kind;

/** Sign of the exponent: forward is exp(-2 pi i jk/n), inverse exp(+2 pi i jk/n). */
typedef enum kiln_fft_direction {
  KILN_FFT_FORWARD = -1,
  KILN_FFT_INVERSE = 1,
} kiln_fft_direction;

typedef enum kiln_fft_norm {
  KILN_FFT_NORM_BACKWARD = 0,
  KILN_FFT_NORM_ORTHO = 1,
  KILN_FFT_NORM_FORWARD = 2,
  KILN_FFT_NORM_NONE = 3,
} kiln_fft_norm;

typedef enum kiln_fft_backend {
  KILN_FFT_BACKEND_AUTO = 0,
  KILN_FFT_BACKEND_CLFFT = 1,
  KILN_FFT_BACKEND_VKFFT = 2,
} kiln_fft_backend;

/**
 * Creates (or finds in the context's plan cache) a plan.
 *
 * @param kind C2C, R2C or C2R.
 * @param rank 1, 2 or 3.
 * @param sizes rank logical transform sizes, outermost first; each >= 1.
 * @param batch number of transforms per execution, >= 1.
 * @param precision KILN_F32 or KILN_F64 (the dtype of real tensors), or
 *        KILN_C64 / KILN_C128: the same plans as f32 / f64, whose
 *        allocated complex outputs are complex tensors.
 * @param inplace nonzero: kiln_fft_execute() transforms its input tensor.
 * @param backend a back end, or KILN_FFT_BACKEND_AUTO (see above).
 * @param out receives the plan; release it with kiln_fft_plan_release()
 *        before the context.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE (ctx); KILN_ERR_INVALID_ARGUMENT
 *         (NULL out or sizes, kind/backend outside the enum, rank outside
 *         1-3, size or batch < 1); KILN_ERR_DTYPE (precision not f32, f64,
 *         c64 or c128);
 *         KILN_ERR_OVERFLOW (the transform does not fit in memory sizes,
 *         or its complex data exceeds the device's largest allocation:
 *         checked before a back end is chosen, so alike for all);
 *         KILN_ERR_UNSUPPORTED (f16 or bf16 precision, f64/c128 without
 *         fp64, a back end missing from
 *         this build, or a size the back end cannot do: clFFT's prime
 *         factors above 13 or real sizes over 2^24 (f32) / 2^22 (f64),
 *         VkFFT's real last size 1, an axis it cannot split into 3
 *         passes or an odd real last size beyond one pass;
 *         docs/blas_fft.md lists the limits);
 *         KILN_ERR_PROVIDER (clFFT or VkFFT failed; the raw clfftStatus or
 *         VkFFTResult is kiln_last_error_code()); KILN_ERR_BUILD;
 *         KILN_ERR_OPENCL; KILN_ERR_DEVICE_MEMORY; KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_fft_plan_create(kiln_context *ctx, kiln_fft_kind kind, size_t rank,
                                          const int64_t *sizes, int64_t batch, kiln_dtype precision,
                                          int inplace, kiln_fft_backend backend,
                                          kiln_fft_plan **out);

/**
 * Runs a plan on a tensor. The work is enqueued; downloads and
 * kiln_context_finish() wait for it. The input of an out-of-place plan is
 * left unchanged.
 *
 * @param direction KILN_FFT_FORWARD or KILN_FFT_INVERSE (R2C plans are
 *        forward only, C2R plans inverse only).
 * @param norm scaling, see above.
 * @param in input tensor (for an in-place plan, also the output).
 * @param out out-of-place plans: the output convention of kiln (*out NULL
 *        allocates, else it must have the output shape and dtype).
 *        In-place plans: NULL, or a pointer to NULL or to in (left as is).
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE (plan, tensors, or a plan whose
 *         context was released); KILN_ERR_INVALID_ARGUMENT (direction or
 *         norm outside the enum or not allowed for the kind, NULL out for an
 *         out-of-place plan, an in-place plan given another output, an
 *         output sharing any byte with the input, nothing written:
 *         docs/ops.md, "Aliasing"); KILN_ERR_CONTEXT_MISMATCH;
 *         KILN_ERR_DTYPE (a real side's tensor is not the plan's real
 *         precision, a complex side's neither that nor its complex dtype);
 *         KILN_ERR_SHAPE (tensor shapes do not match the plan; the message
 *         names the expected shape); KILN_ERR_PROVIDER; KILN_ERR_OPENCL;
 *         KILN_ERR_DEVICE_MEMORY; KILN_ERR_BUILD; KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_fft_execute(kiln_fft_plan *plan, kiln_fft_direction direction,
                                      kiln_fft_norm norm, kiln_tensor *in, kiln_tensor **out);

/**
 * Releases a plan handle. The compiled plan stays in the context's cache
 * until evicted or the context is released. NULL is accepted and ignored.
 * @return KILN_OK or KILN_ERR_INVALID_HANDLE (already released / not a plan).
 */
KILN_API kiln_status kiln_fft_plan_release(kiln_fft_plan *plan);

/**
 * The back end a plan resolved to (never AUTO).
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (NULL out).
 */
KILN_API kiln_status kiln_fft_plan_backend(const kiln_fft_plan *plan, kiln_fft_backend *out);

/** "auto", "clfft" or "vkfft"; "?" outside the enum. */
KILN_API const char *kiln_fft_backend_name(kiln_fft_backend backend);

/** Nonzero when this libkiln was built with the back end (AUTO: with any). */
KILN_API int kiln_fft_backend_available(kiln_fft_backend backend);

/** Counters of a context's FFT plan cache and of VkFFT's binary store. */
typedef struct kiln_fft_stats {
  uint64_t plan_hits;             /**< kiln_fft_plan_create() served from the cache */
  uint64_t plan_misses;           /**< plans compiled */
  uint64_t plan_evictions;        /**< compiled plans dropped to stay within the bound */
  uint64_t plans_cached;          /**< compiled plans held now (in use or idle) */
  uint64_t vkfft_binary_hits;     /**< VkFFT plans built from stored binaries */
  uint64_t vkfft_binary_stores;   /**< VkFFT binaries written to the disk cache */
  uint64_t vkfft_binary_rejects;  /**< stored binaries VkFFT refused (rebuilt from source) */
  uint64_t vkfft_binary_unusable; /**< binaries cut by VkFFT's C-string copy (PoCL): not stored */
} kiln_fft_stats;

/**
 * Reads the counters of a context.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (NULL out).
 */
KILN_API kiln_status kiln_fft_stats_get(kiln_context *ctx, kiln_fft_stats *out);

#ifdef __cplusplus
}
#endif
#endif
