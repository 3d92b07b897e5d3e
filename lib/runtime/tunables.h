/*
 * Named tunables: the built-in defaults of choices that depend on the device.
 * Each is one constant here, read in one place; the autotuner will own them
 * (per device, stored), these values stay as its fallbacks.
 */
#ifndef KILN_RUNTIME_TUNABLES_H
#define KILN_RUNTIME_TUNABLES_H

/*
 * GEMM-family routing: a GEMM (or GEMV, SYRK) whose m*n*k per matrix is at
 * most this runs on kiln's own tiled kernel (cl_kernels/gemm_small.cl),
 * larger ones on CLBlast. Context option KILN_OPT_GEMM_SMALL_MNK overrides it.
 * 64^3: on PoCL here (2 cores) the crossover, measured in docs/blas_fft.md,
 * lies between 64^3 and 128^3; on GPUs CLBlast's launch of two to four
 * kernels costs tens of microseconds, which a 64^3 product does not repay.
 */
#define KILN__GEMM_SMALL_MNK_DEFAULT (64 * 64 * 64)

/* Edge of the square tile (and work-group) of gemm_small.cl on devices that allow TILE^2 items. */
#define KILN__GEMM_TILE_DEFAULT 16

/*
 * FFT back end that KILN_FFT_BACKEND_AUTO picks on non-GPU devices when both
 * can do a size (GPUs get VkFFT). Measured on PoCL here: docs/blas_fft.md.
 */
#define KILN__FFT_CPU_BACKEND KILN_FFT_BACKEND_VKFFT

/* FFT plans kept per context (LRU over plans no caller holds). */
#define KILN__FFT_PLAN_CACHE_CAPACITY 16

#endif
