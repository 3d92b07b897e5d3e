/*
 * Entry points of the tuned families that take explicit parameters, for the
 * autotuner (lib/runtime/tuner.c) and for tests that sweep the tunables.
 *
 * Reduce and scan: the public functions call these with NULL (the device
 * defaults of lib/runtime/launch_params.c). Arguments and statuses otherwise
 * as in include/kiln/reduce.h; invalid parameters are
 * KILN_ERR_INVALID_ARGUMENT.
 *
 * FFT and GEMM: the problems the fft and gemm families time, with the back
 * end or route given instead of looked up.
 */
#ifndef KILN_OPS_TUNED_H
#define KILN_OPS_TUNED_H

#include "kiln/fft.h"
#include "kiln/reduce.h"
#include "ops/launch_params.h"

kiln_status kiln__reduce_tuned(kiln_context *ctx, kiln_reduce_op op, const kiln_tensor *x,
                               const int64_t *axes, size_t naxes, int keepdims,
                               const kiln_reduce_options *opts, const kiln__launch_params *lp,
                               kiln_tensor **out);

kiln_status kiln__argreduce_tuned(kiln_context *ctx, kiln_reduce_op op, const kiln_tensor *x,
                                  const int64_t *axes, size_t naxes, int keepdims,
                                  const kiln_reduce_options *opts,
                                  const kiln__launch_params *lp, kiln_tensor **values,
                                  kiln_tensor **indices);

kiln_status kiln__scan_tuned(kiln_context *ctx, kiln_scan_op op, const kiln_tensor *x,
                             int64_t axis, const kiln_scan_options *opts,
                             const kiln__launch_params *lp, kiln_tensor **out);

kiln_status kiln__scan_indexed_tuned(kiln_context *ctx, kiln_scan_op op, const kiln_tensor *x,
                                     int64_t axis, const kiln_scan_options *opts,
                                     const kiln__launch_params *lp, kiln_tensor **values,
                                     kiln_tensor **indices);

/*
 * The back end KILN_FFT_BACKEND_AUTO takes when the autotuner has no choice
 * for a transform of 2^log2n to 2^(log2n+1) points of precision (f32 or f64; the fft
 * family's default): VkFFT on GPUs; on other devices clFFT within
 * KILN__FFT_CPU_CLFFT_F32_LOG2 / _F64_LOG2 and VkFFT outside; the other one when this
 * libkiln lacks that one.
 */
kiln_fft_backend kiln__fft_default_backend(const kiln_context *ctx, kiln_dtype precision,
                                           int log2n);

/*
 * One forward, unnormalised, out-of-place 1-D C2C transform of x ([n, 2],
 * f32 or f64, batch 1) on backend (not AUTO), with a plan from the context's
 * plan cache; *out follows kiln's output convention. Statuses as
 * kiln_fft_plan_create() and kiln_fft_execute() (KILN_ERR_UNSUPPORTED when
 * the back end cannot do n or is missing from this build).
 */
kiln_status kiln__fft_c2c_forward(kiln_context *ctx, kiln_tensor *x, kiln_fft_backend backend,
                                  kiln_tensor **out);

/*
 * kiln_matmul() of 2-D a and b on an explicit route (an enum
 * kiln__gemm_route of ops/blas_route.h), whatever KILN_OPT_GEMM_SMALL_MNK and
 * the autotuner say. KILN_ERR_UNSUPPORTED for the CLBlast route on a context
 * without CLBlast; KILN_ERR_INVALID_ARGUMENT for another route value; other
 * statuses as kiln_matmul().
 */
kiln_status kiln__matmul_routed(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b,
                                int route, kiln_tensor **out);

/*
 * Test hook: GEMM, GEMV and SYRK calls routed since the process started
 * (each strided GEMM batch, GEMV and SYRK call counts once), out[0] on
 * kiln's kernel, out[1] on CLBlast.
 */
void kiln__blas_test_routes(uint64_t out[2]);
/* Calls routed to kiln's large GEMM kernel (cl_kernels/gemm_large.cl) in this process. */
uint64_t kiln__blas_test_large_calls(void);
/* Which kernel the large route runs: 0 the rule (gemm_cpu.cl on CPU devices, unless
 * KILN_DEBUG_GEMM_LARGE is set), 1 gemm_large.cl, 2 gemm_cpu.cl, on any device. */
void kiln__blas_test_large_form(int form);
/* Launches of gemm_cpu.cl in this process. */
uint64_t kiln__blas_test_cpu_calls(void);
/* gemm_cpu.cl's blocks as for a device whose native float vectors have this width (16, 8 or
 * 4: lib/ops/blas_route.c, cpu_blocks); 0 takes the device's. */
void kiln__blas_test_cpu_width(unsigned width);

/*
 * Test hook of the stats family: elements per histogram pass (default 2^31, what a
 * work-group's 32-bit counters hold); smaller values make tests run several passes, each
 * merged into the result.
 */
extern uint64_t kiln__stats_hist_chunk;

/*
 * Test hook of the nn family: fields >= 0 (and valid) replace the device defaults and
 * KILN_DEBUG_NN's values of the launch knobs of ops/nn_internal.h (act_items, erf,
 * row_items, row_wg, fast, act_vec, maxreg); -1 leaves them. Read at every nn call.
 */
typedef struct kiln__nn_knob_override {
  int32_t act_items, erf, row_items, row_wg, fast, act_vec, maxreg, row_local, col_items, row_cpu;
} kiln__nn_knob_override;
extern kiln__nn_knob_override kiln__nn_test_knobs;

/*
 * Test hook of the nn_conv family: the largest im2col buffer of one batch chunk, in bytes
 * (default 256 MiB); smaller values make tests run several chunks, or the direct route when
 * one sample's columns do not fit.
 */
extern uint64_t kiln__conv_col_bytes;

/* Test hook of the nn_conv family: nonzero makes CPU devices take the GPUs' im2col and col2im
 * (one work-item per element) instead of im2col_lines and col2im_lines. */
extern int kiln__nn_test_gpu_im2col;

/* Test hook of the nn_conv family: nonzero makes CPU devices take the GPUs' pool_tiled (one
 * work-item per output) instead of pool_tiled_rows. */
extern int kiln__nn_test_gpu_pool;

/* The autotuner's description of the fft family (lib/ops/fft_tune.c). */
struct kiln__tune_family;
extern const struct kiln__tune_family kiln__fft_tune;

#endif
