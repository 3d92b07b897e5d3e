/*
 * The CLBlast provider: thin wrappers that call CLBlast on a context's queue
 * with row-major layout, bracket each call for profiling and turn CLBlast's
 * status into a kiln status with the raw code kept.
 *
 * Every function is called with ctx->lock held. Offsets, leading dimensions
 * and strides are in elements. Built only when kiln_config.h says
 * KILN_HAVE_CLBLAST; callers check that first.
 */
#ifndef KILN_PROVIDERS_CLBLAST_H
#define KILN_PROVIDERS_CLBLAST_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime.h"

/* kiln status for a raw CLBlast status (the table in clblast.c); KILN_ERR_PROVIDER for unknown
 * codes. */
kiln_status kiln__clblast_status(int32_t code);

/* CLBlast's name for a status ("CLBlastInvalidLeadDimA"), "unknown CLBlast status" otherwise. */
const char *kiln__clblast_status_name(int32_t code);

/*
 * GEMM, GEMV and SYRK take dt f32, f64, c64 or c128; alpha and beta are
 * complex (real dtypes use the real part). ta/tb: 0 as stored, 1
 * transposed, 2 conjugate-transposed.
 */

/* C = alpha op(A) op(B) + beta C for batch matrices (batch > 1: strided batched routine). */
kiln_status kiln__clblast_gemm(const char *op, kiln_context *ctx, kiln_dtype dt, int ta, int tb,
                               size_t m, size_t n, size_t k, kiln_complex128 alpha, cl_mem a,
                               size_t aoff, size_t lda, size_t astride, cl_mem b, size_t boff,
                               size_t ldb, size_t bstride, kiln_complex128 beta, cl_mem c,
                               size_t coff, size_t ldc, size_t cstride, size_t batch);

/*
 * One f32/f64 GEMM (batch 1) with a caller's temporary buffer: CLBlast's indirect kernel
 * copies (pads) A, B and C into a temporary of its own for views with offsets or padded
 * leading dimensions, and allocates and frees that buffer on every call otherwise. A buffer
 * smaller than CLBlast needs is refused before anything is enqueued
 * (KILN_ERR_PROVIDER-class status). KILN_ERR_DTYPE for other dtypes; other statuses as
 * kiln__clblast_gemm.
 */
kiln_status kiln__clblast_gemm_with_temp(const char *op, kiln_context *ctx, kiln_dtype dt, int ta,
                                         int tb, size_t m, size_t n, size_t k, double alpha,
                                         cl_mem a, size_t aoff, size_t lda, cl_mem b, size_t boff,
                                         size_t ldb, double beta, cl_mem c, size_t coff,
                                         size_t ldc, cl_mem temp);

/*
 * Test hook: sets one parameter of a CLBlast kernel's database entry for dt (f32/f64) on ctx's
 * device, process-wide (CLBlastOverrideParameters), e.g. ("GemmRoutine",
 * "XGEMM_MIN_INDIRECT_SIZE", 1) to send every GEMM through the indirect kernel.
 */
kiln_status kiln__clblast_test_override(const char *op, kiln_context *ctx, kiln_dtype dt,
                                        const char *kernel, const char *param, size_t value);

/* y = alpha op(A) x + beta y with A stored m x n (row-major), unit increments. */
kiln_status kiln__clblast_gemv(const char *op, kiln_context *ctx, kiln_dtype dt, int ta, size_t m,
                               size_t n, kiln_complex128 alpha, cl_mem a, size_t aoff, size_t lda,
                               cl_mem x, size_t xoff, kiln_complex128 beta, cl_mem y, size_t yoff);

/* One triangle (upper != 0: upper) of C = alpha op(A) op(A)^T + beta C, C n x n. */
kiln_status kiln__clblast_syrk(const char *op, kiln_context *ctx, kiln_dtype dt, int upper, int ta,
                               size_t n, size_t k, kiln_complex128 alpha, cl_mem a, size_t aoff,
                               size_t lda, kiln_complex128 beta, cl_mem c, size_t coff, size_t ldc);

/* Level 1: f32 and f64 only (kiln's kernels do the other dtypes). */

kiln_status kiln__clblast_dot(const char *op, kiln_context *ctx, kiln_dtype dt, size_t n, cl_mem x,
                              size_t xoff, cl_mem y, size_t yoff, cl_mem out, size_t outoff);
kiln_status kiln__clblast_axpy(const char *op, kiln_context *ctx, kiln_dtype dt, size_t n,
                               double alpha, cl_mem x, size_t xoff, cl_mem y, size_t yoff);
kiln_status kiln__clblast_scal(const char *op, kiln_context *ctx, kiln_dtype dt, size_t n,
                               double alpha, cl_mem x, size_t xoff);

/* Parameters of CLBlast's Xgemm kernel, in the order of KILN__XGEMM_PARAM_NAMES. */
#define KILN__XGEMM_NPARAMS 16
#define KILN__XGEMM_PARAM_NAMES                                                                \
  "GEMMK", "KREG", "KWG", "KWI", "MDIMA", "MDIMC", "MWG", "NDIMB", "NDIMC", "NWG", "SA", "SB", \
      "STRM", "STRN", "VWM", "VWN"

/*
 * Makes CLBlast's Xgemm kernel (its GEMM, batched GEMM and SYRK) use `values` on ctx's device
 * for dt (f32 or f64) from the next call on; id names the set (0: CLBlast's own database,
 * values NULL). CLBlast keeps overrides per process and device, so this records what it set
 * and does nothing when id is already in force. CLBlast has no call that restores its own
 * parameters: asking for id 0 after an override is KILN_ERR_UNSUPPORTED. Statuses of
 * CLBlastOverrideParameters are mapped (kiln__clblast_status). Needs no lock.
 */
/*
 * kiln__clblast_gemm for one f32/f64 matrix with the caller's temporary buffer (CLBlast's
 * WithTempBuffer routines: no buffer created and released per call). CLBlast refuses a
 * buffer too small before it enqueues anything.
 */
/* What kiln__clblast_gemm_with_temp's buffer needs for these arguments (CLBlast's
 * GemmTempBufferSize: it builds its parameter database on each call, so callers cache it). */
kiln_status kiln__clblast_gemm_temp_size(const char *op, kiln_context *ctx, kiln_dtype dt, int ta,
                                         int tb, size_t m, size_t n, size_t k, size_t aoff,
                                         size_t lda, size_t boff, size_t ldb, size_t coff,
                                         size_t ldc, size_t *bytes);

/*
 * KILN_DEBUG_CLBLAST="Kernel:NAME=VALUE,...;Kernel:..." put in force for dt (f32/f64) on ctx's
 * device through CLBlastOverrideParameters, once per spec: any of CLBlast's parameter databases
 * (e.g. GemmRoutine:XGEMM_MIN_INDIRECT_SIZE=8193 sends GEMMs up to 8192^3 to XgemmDirect;
 * XgemmDirect:WGD=...). Each kernel's list must name all its parameters (CLBlast's rule).
 */
kiln_status kiln__clblast_debug_params(const char *op, kiln_context *ctx, kiln_dtype dt,
                                       const char *spec);
kiln_status kiln__clblast_xgemm_override(const char *op, kiln_context *ctx, kiln_dtype dt,
                                         uint32_t id, const size_t *values);
/*
 * Triangular solve and multiply (row-major, f32/f64/c64/c128): B = alpha op(A)^-1 B (trsm) or
 * B = alpha op(A) B (trmm), A on the left (left != 0, m x m) or the right (n x n) of the
 * m x n matrix B; upper/unit select the triangle and a unit diagonal. Used by linalg.
 */
kiln_status kiln__clblast_trsm(const char *op, kiln_context *ctx, kiln_dtype dt, int left,
                               int upper, int ta, int unit, size_t m, size_t n, double alpha,
                               cl_mem a, size_t aoff, size_t lda, cl_mem b, size_t boff,
                               size_t ldb);
kiln_status kiln__clblast_trmm(const char *op, kiln_context *ctx, kiln_dtype dt, int left,
                               int upper, int ta, int unit, size_t m, size_t n, double alpha,
                               cl_mem a, size_t aoff, size_t lda, cl_mem b, size_t boff,
                               size_t ldb);

/*
 * Batched 2-D cross-correlation as CLBlast's implicit GEMM (f32/f64): im [batch, channels,
 * height, width], w [kernels, channels, kh, kw], out [batch, kernels, out_h, out_w], all
 * contiguous (NCHW). Used by the nn_conv family's convgemm route.
 */
kiln_status kiln__clblast_convgemm(const char *op, kiln_context *ctx, kiln_dtype dt,
                                   size_t channels, size_t height, size_t width, size_t kh,
                                   size_t kw, size_t ph, size_t pw, size_t sh, size_t sw, size_t dh,
                                   size_t dw, size_t kernels, size_t batch, cl_mem im, size_t imoff,
                                   cl_mem w, size_t woff, cl_mem out, size_t outoff);

/* CLBlastFillCache for the context's device: every routine, every precision. */
kiln_status kiln__clblast_fill_cache(const char *op, kiln_context *ctx);

#endif
