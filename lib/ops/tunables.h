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
 * The sizes (log2 of the points, inclusive) for which KILN_FFT_BACKEND_AUTO picks clFFT on
 * non-GPU devices when both back ends can do a plan and the autotuner's fft family has no
 * choice stored; VkFFT outside them (and on GPUs). PoCL here, session 24
 * (`bench/pocl_fft_backends.sh build 3`, docs/blas_fft.md): clFFT 1.24x-2.48x faster for f32
 * at 2^16 and 2^19-2^22 and 1.3x-2.0x for f64 at 2^12-2^20, within 11% of VkFFT at the other sizes
 * inside; VkFFT 1.15x-2.1x faster above and up to 1.8x below.
 */
#define KILN__FFT_CPU_CLFFT_F32_LOG2 13, 22
#define KILN__FFT_CPU_CLFFT_F64_LOG2 11, 20

/* FFT plans kept per context (LRU over plans no caller holds). */
#define KILN__FFT_PLAN_CACHE_CAPACITY 16

#endif
