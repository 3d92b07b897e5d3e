/* CLBlast provider: row-major calls on the context's queue; every CLBlast status mapped. */
#include "backends/clblast.h"

#include <clblast_c.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/*
 * Every status CLBlast 1.5 defines, with the kiln status it becomes. OpenCL
 * codes follow kiln__status_from_cl(); argument errors CLBlast reports after
 * kiln validated the same arguments are kiln bugs (KILN_ERR_INTERNAL);
 * missing device features are KILN_ERR_UNSUPPORTED. A code outside the
 * table (a newer CLBlast) is KILN_ERR_PROVIDER. The raw code always goes into
 * the error record.
 */
#define CLBLAST_STATUS_MAP(X)                              \
  X(CLBlastSuccess, KILN_OK)                               \
  X(CLBlastOpenCLCompilerNotAvailable, KILN_ERR_BUILD)     \
  X(CLBlastTempBufferAllocFailure, KILN_ERR_DEVICE_MEMORY) \
  X(CLBlastOpenCLOutOfResources, KILN_ERR_DEVICE_MEMORY)   \
  X(CLBlastOpenCLOutOfHostMemory, KILN_ERR_HOST_MEMORY)    \
  X(CLBlastOpenCLBuildProgramFailure, KILN_ERR_BUILD)      \
  X(CLBlastInvalidValue, KILN_ERR_OPENCL)                  \
  X(CLBlastInvalidCommandQueue, KILN_ERR_OPENCL)           \
  X(CLBlastInvalidMemObject, KILN_ERR_OPENCL)              \
  X(CLBlastInvalidBinary, KILN_ERR_BUILD)                  \
  X(CLBlastInvalidBuildOptions, KILN_ERR_BUILD)            \
  X(CLBlastInvalidProgram, KILN_ERR_OPENCL)                \
  X(CLBlastInvalidProgramExecutable, KILN_ERR_OPENCL)      \
  X(CLBlastInvalidKernelName, KILN_ERR_OPENCL)             \
  X(CLBlastInvalidKernelDefinition, KILN_ERR_OPENCL)       \
  X(CLBlastInvalidKernel, KILN_ERR_OPENCL)                 \
  X(CLBlastInvalidArgIndex, KILN_ERR_OPENCL)               \
  X(CLBlastInvalidArgValue, KILN_ERR_OPENCL)               \
  X(CLBlastInvalidArgSize, KILN_ERR_OPENCL)                \
  X(CLBlastInvalidKernelArgs, KILN_ERR_OPENCL)             \
  X(CLBlastInvalidLocalNumDimensions, KILN_ERR_OPENCL)     \
  X(CLBlastInvalidLocalThreadsTotal, KILN_ERR_OPENCL)      \
  X(CLBlastInvalidLocalThreadsDim, KILN_ERR_OPENCL)        \
  X(CLBlastInvalidGlobalOffset, KILN_ERR_OPENCL)           \
  X(CLBlastInvalidEventWaitList, KILN_ERR_OPENCL)          \
  X(CLBlastInvalidEvent, KILN_ERR_OPENCL)                  \
  X(CLBlastInvalidOperation, KILN_ERR_OPENCL)              \
  X(CLBlastInvalidBufferSize, KILN_ERR_DEVICE_MEMORY)      \
  X(CLBlastInvalidGlobalWorkSize, KILN_ERR_OPENCL)         \
  X(CLBlastNotImplemented, KILN_ERR_UNSUPPORTED)           \
  X(CLBlastInvalidMatrixA, KILN_ERR_INTERNAL)              \
  X(CLBlastInvalidMatrixB, KILN_ERR_INTERNAL)              \
  X(CLBlastInvalidMatrixC, KILN_ERR_INTERNAL)              \
  X(CLBlastInvalidVectorX, KILN_ERR_INTERNAL)              \
  X(CLBlastInvalidVectorY, KILN_ERR_INTERNAL)              \
  X(CLBlastInvalidDimension, KILN_ERR_INTERNAL)            \
  X(CLBlastInvalidLeadDimA, KILN_ERR_INTERNAL)             \
  X(CLBlastInvalidLeadDimB, KILN_ERR_INTERNAL)             \
  X(CLBlastInvalidLeadDimC, KILN_ERR_INTERNAL)             \
  X(CLBlastInvalidIncrementX, KILN_ERR_INTERNAL)           \
  X(CLBlastInvalidIncrementY, KILN_ERR_INTERNAL)           \
  X(CLBlastInsufficientMemoryA, KILN_ERR_INTERNAL)         \
  X(CLBlastInsufficientMemoryB, KILN_ERR_INTERNAL)         \
  X(CLBlastInsufficientMemoryC, KILN_ERR_INTERNAL)         \
  X(CLBlastInsufficientMemoryX, KILN_ERR_INTERNAL)         \
  X(CLBlastInsufficientMemoryY, KILN_ERR_INTERNAL)         \
  X(CLBlastInsufficientMemoryTemp, KILN_ERR_INTERNAL)      \
  X(CLBlastInvalidBatchCount, KILN_ERR_INTERNAL)           \
  X(CLBlastInvalidOverrideKernel, KILN_ERR_PROVIDER)       \
  X(CLBlastMissingOverrideParameter, KILN_ERR_PROVIDER)    \
  X(CLBlastInvalidLocalMemUsage, KILN_ERR_UNSUPPORTED)     \
  X(CLBlastNoHalfPrecision, KILN_ERR_UNSUPPORTED)          \
  X(CLBlastNoDoublePrecision, KILN_ERR_UNSUPPORTED)        \
  X(CLBlastInvalidVectorScalar, KILN_ERR_INTERNAL)         \
  X(CLBlastInsufficientMemoryScalar, KILN_ERR_INTERNAL)    \
  X(CLBlastDatabaseError, KILN_ERR_PROVIDER)               \
  X(CLBlastUnknownError, KILN_ERR_PROVIDER)                \
  X(CLBlastUnexpectedError, KILN_ERR_PROVIDER)

static const struct {
  int32_t code;
  const char *name;
  kiln_status status;
} status_table[] = {
#define X(code, st) {code, #code, st},
    CLBLAST_STATUS_MAP(X)
#undef X
};

kiln_status
kiln__clblast_status(int32_t code)
{
  for (size_t i = 0; i < sizeof status_table / sizeof status_table[0]; i++)
    if (status_table[i].code == code)
      return status_table[i].status;
  return KILN_ERR_PROVIDER;
}

const char *
kiln__clblast_status_name(int32_t code)
{
  for (size_t i = 0; i < sizeof status_table / sizeof status_table[0]; i++)
    if (status_table[i].code == code)
      return status_table[i].name;
  return "unknown CLBlast status";
}

/* Records a failed CLBlast call; KILN_OK passes through. */
static kiln_status
check(const char *op, const char *routine, CLBlastStatusCode code)
{
  if (code == CLBlastSuccess)
    return KILN_OK;
  return kiln__fail(kiln__clblast_status(code), op, code, "CLBlast %s failed: %s (%d)%s", routine,
                    kiln__clblast_status_name(code), (int)code,
                    kiln__clblast_status(code) == KILN_ERR_INTERNAL
                        ? " (CLBlast rejected arguments kiln had validated: a kiln bug)"
                        : "");
}

/* Runs one CLBlast call between profiling markers. */
#define PROVIDER_CALL(op, ctx, routine, call)                  \
  do {                                                         \
    cl_event begin_;                                           \
    KILN_TRY(kiln__provider_span_begin(op, ctx, &begin_));     \
    kiln_status s_ = check(op, routine, call);                 \
    kiln_status e_ = kiln__provider_span_end(op, ctx, begin_); \
    return s_ != KILN_OK ? s_ : e_;                            \
  } while (0)

static CLBlastTranspose
tr(int t)
{
  return t == 2 ? CLBlastTransposeConjugate : t ? CLBlastTransposeYes : CLBlastTransposeNo;
}

static cl_float2
c64(kiln_complex128 v)
{
  return (cl_float2){{(float)v.re, (float)v.im}};
}

static cl_double2
c128(kiln_complex128 v)
{
  return (cl_double2){{v.re, v.im}};
}

#define ROW CLBlastLayoutRowMajor
#define COL CLBlastLayoutColMajor

/*
 * One call of routine CLBlast<p><name> for the dtype: p is S (f32), D (f64),
 * C (c64) or Z (c128); ARGS(conv) is the parenthesised argument list with
 * alpha and beta passed through the conversion the precision needs.
 */
#define REAL_F(v) ((float)(v).re)
#define REAL_D(v) ((v).re)
#define BY_DTYPE(op, ctx, dt, name, ARGS)                                     \
  do {                                                                        \
    switch (dt) {                                                             \
    case KILN_F32:                                                            \
      PROVIDER_CALL(op, ctx, "S" #name, CLBlastS##name ARGS(REAL_F));         \
    case KILN_F64:                                                            \
      PROVIDER_CALL(op, ctx, "D" #name, CLBlastD##name ARGS(REAL_D));         \
    case KILN_C64:                                                            \
      PROVIDER_CALL(op, ctx, "C" #name, CLBlastC##name ARGS(c64));            \
    case KILN_C128:                                                           \
      PROVIDER_CALL(op, ctx, "Z" #name, CLBlastZ##name ARGS(c128));           \
    default:                                                                  \
      return kiln__fail(KILN_ERR_INTERNAL, op, 0, "CLBlast " #name " for %s", \
                        kiln_dtype_name(dt));                                 \
    }                                                                         \
  } while (0)

kiln_status
kiln__clblast_gemm(const char *op, kiln_context *ctx, kiln_dtype dt, int ta, int tb, size_t m,
                   size_t n, size_t k, kiln_complex128 alpha, cl_mem a, size_t aoff, size_t lda,
                   size_t astride, cl_mem b, size_t boff, size_t ldb, size_t bstride,
                   kiln_complex128 beta, cl_mem c, size_t coff, size_t ldc, size_t cstride,
                   size_t batch)
{
  cl_command_queue *q = &ctx->queue;
  /*
   * Asked as the column-major C^T = op(B)^T op(A)^T (the same memory): CLBlast's Xgemm wants A
   * as stored column-major and B transposed, so a row-major call costs it a transpose of A plus
   * a temporary C and a transpose back, the column-major one only a transpose of (kiln's) A.
   * op(A)^T of the row-major A is op applied to its column-major view, conjugation included.
   */
  if (batch == 1) {
#define GEMM_ARGS(cv)                                                                              \
  (COL, tr(tb), tr(ta), n, m, k, cv(alpha), b, boff, ldb, a, aoff, lda, cv(beta), c, coff, ldc, q, \
   NULL)
    BY_DTYPE(op, ctx, dt, gemm, GEMM_ARGS);
#undef GEMM_ARGS
  }
#define GEMM_ARGS(cv)                                                                     \
  (COL, tr(tb), tr(ta), n, m, k, cv(alpha), b, boff, ldb, bstride, a, aoff, lda, astride, \
   cv(beta), c, coff, ldc, cstride, batch, q, NULL)
  BY_DTYPE(op, ctx, dt, gemmStridedBatched, GEMM_ARGS);
#undef GEMM_ARGS
}

kiln_status
kiln__clblast_gemm_temp_size(const char *op, kiln_context *ctx, kiln_dtype dt, int ta, int tb,
                             size_t m, size_t n, size_t k, size_t aoff, size_t lda, size_t boff,
                             size_t ldb, size_t coff, size_t ldc, size_t *bytes)
{
  cl_command_queue *q = &ctx->queue;
  /* The column-major form of kiln__clblast_gemm; the answer is in bytes. */
  CLBlastStatusCode code = dt == KILN_F32
                               ? CLBlastSGemmTempBufferSize(COL, tr(tb), tr(ta), n, m, k, boff, ldb,
                                                            aoff, lda, coff, ldc, q, bytes)
                               : CLBlastDGemmTempBufferSize(COL, tr(tb), tr(ta), n, m, k, boff, ldb,
                                                            aoff, lda, coff, ldc, q, bytes);
  return check(op, "GemmTempBufferSize", code);
}

kiln_status
kiln__clblast_gemv(const char *op, kiln_context *ctx, kiln_dtype dt, int ta, size_t m, size_t n,
                   kiln_complex128 alpha, cl_mem a, size_t aoff, size_t lda, cl_mem x, size_t xoff,
                   kiln_complex128 beta, cl_mem y, size_t yoff)
{
  cl_command_queue *q = &ctx->queue;
#define GEMV_ARGS(cv) \
  (ROW, tr(ta), m, n, cv(alpha), a, aoff, lda, x, xoff, 1, cv(beta), y, yoff, 1, q, NULL)
  BY_DTYPE(op, ctx, dt, gemv, GEMV_ARGS);
#undef GEMV_ARGS
}

kiln_status
kiln__clblast_gemm_with_temp(const char *op, kiln_context *ctx, kiln_dtype dt, int ta, int tb,
                             size_t m, size_t n, size_t k, double alpha, cl_mem a, size_t aoff,
                             size_t lda, cl_mem b, size_t boff, size_t ldb, double beta, cl_mem c,
                             size_t coff, size_t ldc, cl_mem temp)
{
  cl_command_queue *q = &ctx->queue;
  /* The column-major form of kiln__clblast_gemm (kiln__clblast_gemm_temp_size sizes it). */
  if (dt == KILN_F32)
    PROVIDER_CALL(op, ctx, "SgemmWithTempBuffer",
                  CLBlastSgemmWithTempBuffer(COL, tr(tb), tr(ta), n, m, k, (float)alpha, b, boff,
                                             ldb, a, aoff, lda, (float)beta, c, coff, ldc, q, NULL,
                                             temp));
  if (dt == KILN_F64)
    PROVIDER_CALL(op, ctx, "DgemmWithTempBuffer",
                  CLBlastDgemmWithTempBuffer(COL, tr(tb), tr(ta), n, m, k, alpha, b, boff, ldb, a,
                                             aoff, lda, beta, c, coff, ldc, q, NULL, temp));
  return kiln__fail(KILN_ERR_DTYPE, op, 0, "CLBlast GEMM with a temporary buffer for %s",
                    kiln_dtype_name(dt));
}

kiln_status
kiln__clblast_test_override(const char *op, kiln_context *ctx, kiln_dtype dt, const char *kernel,
                            const char *param, size_t value)
{
  const char *names[1] = {param};
  size_t values[1] = {value};
  CLBlastPrecision prec = dt == KILN_F32 ? CLBlastPrecisionSingle : CLBlastPrecisionDouble;
  return check(op, "OverrideParameters",
               CLBlastOverrideParameters(ctx->device, kernel, prec, 1, names, values));
}

kiln_status
kiln__clblast_syrk(const char *op, kiln_context *ctx, kiln_dtype dt, int upper, int ta, size_t n,
                   size_t k, kiln_complex128 alpha, cl_mem a, size_t aoff, size_t lda,
                   kiln_complex128 beta, cl_mem c, size_t coff, size_t ldc)
{
  cl_command_queue *q = &ctx->queue;
  CLBlastTriangle tri = upper ? CLBlastTriangleUpper : CLBlastTriangleLower;
#define SYRK_ARGS(cv) \
  (ROW, tri, tr(ta), n, k, cv(alpha), a, aoff, lda, cv(beta), c, coff, ldc, q, NULL)
  BY_DTYPE(op, ctx, dt, syrk, SYRK_ARGS);
#undef SYRK_ARGS
}

kiln_status
kiln__clblast_dot(const char *op, kiln_context *ctx, kiln_dtype dt, size_t n, cl_mem x, size_t xoff,
                  cl_mem y, size_t yoff, cl_mem out, size_t outoff)
{
  cl_command_queue *q = &ctx->queue;
  if (dt == KILN_F32)
    PROVIDER_CALL(op, ctx, "Sdot", CLBlastSdot(n, out, outoff, x, xoff, 1, y, yoff, 1, q, NULL));
  PROVIDER_CALL(op, ctx, "Ddot", CLBlastDdot(n, out, outoff, x, xoff, 1, y, yoff, 1, q, NULL));
}

kiln_status
kiln__clblast_axpy(const char *op, kiln_context *ctx, kiln_dtype dt, size_t n, double alpha,
                   cl_mem x, size_t xoff, cl_mem y, size_t yoff)
{
  cl_command_queue *q = &ctx->queue;
  if (dt == KILN_F32)
    PROVIDER_CALL(op, ctx, "Saxpy", CLBlastSaxpy(n, (float)alpha, x, xoff, 1, y, yoff, 1, q, NULL));
  PROVIDER_CALL(op, ctx, "Daxpy", CLBlastDaxpy(n, alpha, x, xoff, 1, y, yoff, 1, q, NULL));
}

kiln_status
kiln__clblast_scal(const char *op, kiln_context *ctx, kiln_dtype dt, size_t n, double alpha,
                   cl_mem x, size_t xoff)
{
  cl_command_queue *q = &ctx->queue;
  if (dt == KILN_F32)
    PROVIDER_CALL(op, ctx, "Sscal", CLBlastSscal(n, (float)alpha, x, xoff, 1, q, NULL));
  PROVIDER_CALL(op, ctx, "Dscal", CLBlastDscal(n, alpha, x, xoff, 1, q, NULL));
}

kiln_status
kiln__clblast_fill_cache(const char *op, kiln_context *ctx)
{
  return check(op, "FillCache", CLBlastFillCache(ctx->device));
}

/* The Xgemm parameter set in force per (device, precision) in this process. */
static struct {
  cl_device_id device;
  CLBlastPrecision precision;
  uint32_t id;
} xgemm_applied[32];
static size_t xgemm_napplied;
static pthread_mutex_t xgemm_lock = PTHREAD_MUTEX_INITIALIZER;

kiln_status
kiln__clblast_xgemm_override(const char *op, kiln_context *ctx, kiln_dtype dt, uint32_t id,
                             const size_t *values)
{
  KILN_RETURN_IF(dt != KILN_F32 && dt != KILN_F64, KILN_ERR_INTERNAL, op, "Xgemm parameters for %s",
                 kiln_dtype_name(dt));
  KILN_RETURN_IF(id != 0 && !values, KILN_ERR_INTERNAL, op, "Xgemm parameter set %u has no values",
                 id);
  CLBlastPrecision prec = dt == KILN_F32 ? CLBlastPrecisionSingle : CLBlastPrecisionDouble;
  static const char *const names[KILN__XGEMM_NPARAMS] = {KILN__XGEMM_PARAM_NAMES};
  kiln_status s = KILN_OK;
  pthread_mutex_lock(&xgemm_lock);
  size_t i = 0;
  while (i < xgemm_napplied &&
         (xgemm_applied[i].device != ctx->device || xgemm_applied[i].precision != prec))
    i++;
  uint32_t current = i < xgemm_napplied ? xgemm_applied[i].id : 0;
  if (id == current) {
    /* in force already */
  } else if (id == 0) {
    s = kiln__fail(KILN_ERR_UNSUPPORTED, op, 0,
                   "CLBlast's own Xgemm parameters cannot be restored in a process that "
                   "overrode them (set %u is in force)",
                   current);
  } else if (i == xgemm_napplied && i == sizeof xgemm_applied / sizeof xgemm_applied[0]) {
    s = kiln__fail(KILN_ERR_UNSUPPORTED, op, 0, "too many devices with Xgemm parameters");
  } else {
    CLBlastStatusCode code = CLBlastOverrideParameters(
        ctx->device, "Xgemm", prec, KILN__XGEMM_NPARAMS, (const char **)names, values);
    s = check(op, "OverrideParameters(Xgemm)", code);
    if (s == KILN_OK) {
      xgemm_applied[i].device = ctx->device;
      xgemm_applied[i].precision = prec;
      xgemm_applied[i].id = id;
      if (i == xgemm_napplied)
        xgemm_napplied++;
    }
  }
  pthread_mutex_unlock(&xgemm_lock);
  return s;
}
/* The KILN_DEBUG_CLBLAST spec in force per (device, precision), by hash. */
static struct {
  cl_device_id device;
  CLBlastPrecision precision;
  uint32_t hash;
} debug_applied[32];
static size_t debug_napplied;

kiln_status
kiln__clblast_debug_params(const char *op, kiln_context *ctx, kiln_dtype dt, const char *spec)
{
  KILN_RETURN_IF(dt != KILN_F32 && dt != KILN_F64, KILN_ERR_INTERNAL, op,
                 "CLBlast parameters for %s", kiln_dtype_name(dt));
  CLBlastPrecision prec = dt == KILN_F32 ? CLBlastPrecisionSingle : CLBlastPrecisionDouble;
  uint32_t h = 2166136261u;
  for (const char *p = spec; *p; p++)
    h = (h ^ (uint8_t)*p) * 16777619u;
  kiln_status s = KILN_OK;
  pthread_mutex_lock(&xgemm_lock);
  size_t i = 0;
  while (i < debug_napplied &&
         (debug_applied[i].device != ctx->device || debug_applied[i].precision != prec))
    i++;
  if (i < debug_napplied && debug_applied[i].hash == h) {
    pthread_mutex_unlock(&xgemm_lock);
    return KILN_OK;
  }
  /* "Kernel:NAME=V,NAME=V;Kernel:..." (spaces or commas between entries). */
  for (const char *p = spec; *p && s == KILN_OK;) {
    size_t glen = strcspn(p, ";"), klen = strcspn(p, ":");
    char kernel[64];
    const char *names[32];
    char namebuf[32][48];
    size_t values[32], n = 0;
    if (klen >= glen || klen >= sizeof kernel) {
      s = kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                     "KILN_DEBUG_CLBLAST: '%.*s' is not Kernel:NAME=VALUE,...", (int)glen, p);
      break;
    }
    memcpy(kernel, p, klen);
    kernel[klen] = 0;
    for (const char *q = p + klen + 1; q < p + glen && s == KILN_OK;) {
      if (*q == ' ' || *q == ',') {
        q++;
        continue;
      }
      size_t len = strcspn(q, " ,;"), nlen = strcspn(q, "=");
      char *end = NULL;
      unsigned long long v = nlen < len ? strtoull(q + nlen + 1, &end, 10) : 0;
      if (nlen >= len || nlen >= sizeof namebuf[0] || n == 32 || end != q + len) {
        s = kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                       "KILN_DEBUG_CLBLAST: '%.*s' is not NAME=VALUE", (int)len, q);
        break;
      }
      memcpy(namebuf[n], q, nlen);
      namebuf[n][nlen] = 0;
      names[n] = namebuf[n];
      values[n++] = (size_t)v;
      q += len;
    }
    if (s == KILN_OK)
      s = check(op, "OverrideParameters (KILN_DEBUG_CLBLAST)",
                CLBlastOverrideParameters(ctx->device, kernel, prec, n, names, values));
    p += glen + (p[glen] == ';');
  }
  if (s == KILN_OK && i < sizeof debug_applied / sizeof debug_applied[0]) {
    debug_applied[i].device = ctx->device;
    debug_applied[i].precision = prec;
    debug_applied[i].hash = h;
    if (i == debug_napplied)
      debug_napplied++;
  }
  pthread_mutex_unlock(&xgemm_lock);
  return s;
}

/* ---- triangular routines (linalg family) ---- */

#define TRI_ARGS(cv)                                                                              \
  (ROW, left ? CLBlastSideLeft : CLBlastSideRight,                                                \
   upper ? CLBlastTriangleUpper : CLBlastTriangleLower, tr(ta),                                   \
   unit ? CLBlastDiagonalUnit : CLBlastDiagonalNonUnit, m, n, cv(al), a, aoff, lda, b, boff, ldb, \
   q, NULL)

kiln_status
kiln__clblast_trsm(const char *op, kiln_context *ctx, kiln_dtype dt, int left, int upper, int ta,
                   int unit, size_t m, size_t n, double alpha, cl_mem a, size_t aoff, size_t lda,
                   cl_mem b, size_t boff, size_t ldb)
{
  cl_command_queue *q = &ctx->queue;
  kiln_complex128 al = {alpha, 0.0};
  BY_DTYPE(op, ctx, dt, trsm, TRI_ARGS);
}

kiln_status
kiln__clblast_trmm(const char *op, kiln_context *ctx, kiln_dtype dt, int left, int upper, int ta,
                   int unit, size_t m, size_t n, double alpha, cl_mem a, size_t aoff, size_t lda,
                   cl_mem b, size_t boff, size_t ldb)
{
  cl_command_queue *q = &ctx->queue;
  kiln_complex128 al = {alpha, 0.0};
  BY_DTYPE(op, ctx, dt, trmm, TRI_ARGS);
}
#undef TRI_ARGS

kiln_status
kiln__clblast_convgemm(const char *op, kiln_context *ctx, kiln_dtype dt, size_t channels,
                       size_t height, size_t width, size_t kh, size_t kw, size_t ph, size_t pw,
                       size_t sh, size_t sw, size_t dh, size_t dw, size_t kernels, size_t batch,
                       cl_mem im, size_t imoff, cl_mem w, size_t woff, cl_mem out, size_t outoff)
{
  cl_command_queue *q = &ctx->queue;
#define CONVGEMM_ARGS                                                                          \
  (CLBlastKernelModeCrossCorrelation, channels, height, width, kh, kw, ph, pw, sh, sw, dh, dw, \
   kernels, batch, im, imoff, w, woff, out, outoff, q, NULL)
  if (dt == KILN_F32)
    PROVIDER_CALL(op, ctx, "Sconvgemm", CLBlastSconvgemm CONVGEMM_ARGS);
  if (dt == KILN_F64)
    PROVIDER_CALL(op, ctx, "Dconvgemm", CLBlastDconvgemm CONVGEMM_ARGS);
#undef CONVGEMM_ARGS
  return kiln__fail(KILN_ERR_INTERNAL, op, 0, "CLBlast convgemm for %s", kiln_dtype_name(dt));
}
