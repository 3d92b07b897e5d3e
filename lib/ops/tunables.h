/*
 * Named tunables: the built-in defaults of choices that depend on the device.
 * Each is one constant here, read in one place. Where the autotuner owns a
 * choice (per device and size bucket, stored: lib/runtime/tuner.c), these
 * values are its defaults.
 */
#ifndef KILN_OPS_TUNABLES_H
#define KILN_OPS_TUNABLES_H

/*
 * GEMM-family routing: a GEMM (or GEMV, SYRK) whose m*n*k per matrix is at
 * most this runs on kiln's own tiled kernel (cl_kernels/gemm_small.cl),
 * larger ones on CLBlast. The default route of the autotuner's gemm family;
 * context option KILN_OPT_GEMM_SMALL_MNK, once set, replaces both.
 * 32^3: on PoCL here (2 cores) a call costs about the same wall time on both
 * routes at 32x32x32 (0.047 vs 0.050 ms); below, kiln's single launch wins
 * (0.027 vs 0.035-0.07 ms at 16^3), above, CLBlast's tuned kernels do
 * (docs/blas_fft.md has the table and the command). On GPUs `kiln bench
 * --filter blas.gemm_` gives the same comparison.
 */
#define KILN__GEMM_SMALL_MNK_DEFAULT (32 * 32 * 32)

/* Edge of the square tile (and work-group) of gemm_small.cl on devices that allow TILE^2 items. */
#define KILN__GEMM_TILE_DEFAULT 16

/*
 * FFT back end that KILN_FFT_BACKEND_AUTO picks on non-GPU devices when both
 * can do a size and the autotuner's fft family has no choice stored (GPUs
 * get VkFFT). Measured on PoCL here: docs/blas_fft.md.
 */
#define KILN__FFT_CPU_BACKEND KILN_FFT_BACKEND_VKFFT

/* FFT plans kept per context (LRU over plans no caller holds). */
#define KILN__FFT_PLAN_CACHE_CAPACITY 16

#endif
