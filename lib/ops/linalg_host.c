/*
 * Host staging of the hybrid factorizations (lib/ops/linalg_host.h).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kiln_config.h"
#include "ops/families.h"
#include "ops/linalg_host.h"
#include "ops/linalg_internal.h"
#include "runtime/family.h"
#if KILN_HAVE_CLBLAST
#include "backends/clblast.h"
#endif

static atomic_uint_least64_t temp_gemms; /* kiln__linalg_test_temp_gemms */

uint64_t
kiln__linalg_test_temp_gemms(void)
{
  return atomic_load(&temp_gemms);
}

struct lh_state {
  kiln__lh_buf b[KILN__LH_SLOTS];
  cl_mem gemm_temp; /* CLBlast GEMM temporary (kiln__lh_gemm) */
  size_t gemm_temp_bytes;
  cl_command_queue q2; /* kiln__lh_queue2 */
  cl_mem ones[4];      /* kiln__lh_ones: f32, f64, c64, c128 */
  uint64_t ones_n[4];
};

kiln_status
kiln__lh_state_create(kiln_context *ctx, void **state)
{
  (void)ctx;
  *state = calloc(1, sizeof(struct lh_state));
  return *state ? KILN_OK
                : kiln__fail(KILN_ERR_HOST_MEMORY, "kiln_context_create", 0,
                             "cannot allocate the linalg state");
}

void
kiln__lh_state_destroy(kiln_context *ctx, void *state)
{
  struct lh_state *st = state;
  for (int i = 0; st && i < KILN__LH_SLOTS; i++)
    if (st->b[i].p)
      kiln__lh_buf_free(ctx, &st->b[i]);
  if (st && st->gemm_temp)
    clReleaseMemObject(st->gemm_temp);
  if (st && st->q2) {
    clFinish(st->q2);
    clReleaseCommandQueue(st->q2);
  }
  for (int i = 0; st && i < 4; i++)
    if (st->ones[i])
      clReleaseMemObject(st->ones[i]);
  free(st);
}

kiln_status
kiln__lh_queue2(const char *op, kiln_context *ctx, cl_command_queue *q)
{
  struct lh_state *st = kiln__family_state(ctx, &kiln__linalg_family);
  if (!st->q2) {
    cl_int err;
    st->q2 = clCreateCommandQueue(ctx->cl, ctx->device,
                                  ctx->queue_profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
    if (err != CL_SUCCESS) {
      st->q2 = NULL;
      return kiln__fail_cl(op, err, "clCreateCommandQueue (look-ahead queue)");
    }
  }
  *q = st->q2;
  return KILN_OK;
}

kiln_status
kiln__lh_ones(const char *op, kiln_context *ctx, kiln_dtype dt, uint64_t n, cl_mem *mem)
{
  static const float f1[2] = {1.0f, 0.0f};
  static const double d1[2] = {1.0, 0.0};
  KILN_RETURN_IF(dt != KILN_F32 && dt != KILN_F64 && dt != KILN_C64 && dt != KILN_C128,
                 KILN_ERR_DTYPE, op, "a vector of ones of %s: only f32, f64, c64 and c128",
                 kiln_dtype_name(dt));
  const int i = dt == KILN_F32 ? 0 : dt == KILN_F64 ? 1 : dt == KILN_C64 ? 2 : 3;
  const size_t ts = kiln_dtype_size(dt);
  const void *one = dt == KILN_F32 || dt == KILN_C64 ? (const void *)f1 : (const void *)d1;
  struct lh_state *st = kiln__family_state(ctx, &kiln__linalg_family);
  if (st->ones_n[i] < n) {
    if (st->ones[i])
      clReleaseMemObject(st->ones[i]); /* commands still using it keep it alive */
    st->ones[i] = NULL;
    st->ones_n[i] = 0;
    cl_int err;
    cl_mem m = clCreateBuffer(ctx->cl, CL_MEM_READ_ONLY, n * ts, NULL, &err);
    if (err != CL_SUCCESS)
      return kiln__fail_cl(op, err, "clCreateBuffer (a vector of ones)");
    err = clEnqueueFillBuffer(ctx->queue, m, one, ts, 0, n * ts, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
      clReleaseMemObject(m);
      return kiln__fail_cl(op, err, "clEnqueueFillBuffer (a vector of ones)");
    }
    st->ones[i] = m;
    st->ones_n[i] = n;
  }
  *mem = st->ones[i];
  return KILN_OK;
}

kiln_status
kiln__lh_join(const char *op, cl_command_queue from, cl_command_queue to)
{
  cl_event e = NULL;
  cl_int err = clEnqueueMarkerWithWaitList(from, 0, NULL, &e);
  /* a queue waiting on another queue's event needs that event submitted */
  if (err == CL_SUCCESS)
    err = clFlush(from);
  if (err == CL_SUCCESS)
    err = clEnqueueBarrierWithWaitList(to, 1, &e, NULL);
  if (e)
    clReleaseEvent(e);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "joining the look-ahead queues");
}

kiln_status
kiln__lh_slot(const char *op, kiln_context *ctx, int slot, size_t bytes, kiln__lh_buf **b)
{
  struct lh_state *st = kiln__family_state(ctx, &kiln__linalg_family);
  kiln__lh_buf *x = &st->b[slot];
  if (x->p && x->bytes >= bytes) {
    *b = x;
    return KILN_OK;
  }
  size_t old = x->bytes;
  if (x->p)
    kiln__lh_buf_free(ctx, x);
  /* grow geometrically: a run of growing matrices pins a few times, not once per call */
  size_t want = bytes < 2 * old ? 2 * old : bytes;
  kiln_status s = kiln__lh_buf_make(op, ctx, want, x);
  if (s != KILN_OK)
    s = kiln__lh_buf_make(op, ctx, bytes, x);
  *b = s == KILN_OK ? x : NULL;
  return s;
}

kiln_status
kiln__lh_buf_make(const char *op, kiln_context *ctx, size_t bytes, kiln__lh_buf *b)
{
  memset(b, 0, sizeof *b);
  b->bytes = bytes ? bytes : 8;
  cl_int err;
  b->dev = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, b->bytes, NULL, &err);
  if (err != CL_SUCCESS)
    return kiln__fail_cl(op, err, "clCreateBuffer (panel staging)");
  b->pin = clCreateBuffer(ctx->cl, CL_MEM_ALLOC_HOST_PTR, b->bytes, NULL, &err);
  if (err == CL_SUCCESS) {
    b->p = clEnqueueMapBuffer(ctx->queue, b->pin, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, b->bytes,
                              0, NULL, NULL, &err);
    if (err == CL_SUCCESS)
      return KILN_OK;
    clReleaseMemObject(b->pin);
  }
  /* Pinned memory is an optimisation: ordinary memory works with every transfer. */
  b->pin = NULL;
  b->p = malloc(b->bytes);
  if (!b->p) {
    clReleaseMemObject(b->dev);
    b->dev = NULL;
    return kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "no host memory for a %zu-byte panel buffer",
                      b->bytes);
  }
  return KILN_OK;
}

void
kiln__lh_buf_free(kiln_context *ctx, kiln__lh_buf *b)
{
  if (b->pin) {
    cl_event ev = NULL;
    if (clEnqueueUnmapMemObject(ctx->queue, b->pin, b->p, 0, NULL, &ev) == CL_SUCCESS && ev) {
      clWaitForEvents(1, &ev);
      clReleaseEvent(ev);
    }
    clReleaseMemObject(b->pin);
  } else {
    free(b->p);
  }
  if (b->dev)
    clReleaseMemObject(b->dev);
  memset(b, 0, sizeof *b);
}

/*
 * The rectangle of rows x cols elements at element e of a row-major matrix with row stride
 * ld: origin (column, row) within the pitch where that is how the matrix lies, which every
 * driver takes (the linear offset they compute is the same either way).
 */
static void
rect(uint64_t e, uint64_t ld, uint64_t rows, uint64_t cols, size_t ts, size_t origin[3],
     size_t region[3])
{
  origin[0] = (size_t)((e % ld) * ts);
  origin[1] = (size_t)(e / ld);
  origin[2] = 0;
  region[0] = (size_t)(cols * ts);
  region[1] = (size_t)rows;
  region[2] = 1;
}

kiln_status
kiln__lh_read(const char *op, kiln_context *ctx, cl_mem mem, uint64_t e, uint64_t ld, uint64_t rows,
              uint64_t cols, size_t ts, const kiln__lh_buf *b, cl_event *ev)
{
  if (ev)
    *ev = NULL;
  if (rows == 0 || cols == 0)
    return KILN_OK;
  size_t bo[3], reg[3], zo[3] = {0, 0, 0};
  rect(e, ld, rows, cols, ts, bo, reg);
  cl_int err = clEnqueueCopyBufferRect(ctx->queue, mem, b->dev, bo, zo, reg, (size_t)(ld * ts), 0,
                                       (size_t)(cols * ts), 0, 0, NULL, NULL);
  if (err != CL_SUCCESS)
    return kiln__fail_cl(op, err, "clEnqueueCopyBufferRect (panel)");
  err = clEnqueueReadBuffer(ctx->queue, b->dev, ev ? CL_FALSE : CL_TRUE, 0,
                            (size_t)(rows * cols * ts), b->p, 0, NULL, ev);
  if (err == CL_SUCCESS && ev)
    err = clFlush(ctx->queue);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "clEnqueueReadBuffer (panel)");
}

kiln_status
kiln__lh_write(const char *op, kiln_context *ctx, cl_mem mem, uint64_t e, uint64_t ld,
               uint64_t rows, uint64_t cols, size_t ts, const kiln__lh_buf *b)
{
  if (rows == 0 || cols == 0)
    return KILN_OK;
  size_t bo[3], reg[3], zo[3] = {0, 0, 0};
  rect(e, ld, rows, cols, ts, bo, reg);
  cl_int err = clEnqueueWriteBuffer(ctx->queue, b->dev, CL_FALSE, 0, (size_t)(rows * cols * ts),
                                    b->p, 0, NULL, NULL);
  if (err != CL_SUCCESS)
    return kiln__fail_cl(op, err, "clEnqueueWriteBuffer (panel)");
  err = clEnqueueCopyBufferRect(ctx->queue, b->dev, mem, zo, bo, reg, (size_t)(cols * ts), 0,
                                (size_t)(ld * ts), 0, 0, NULL, NULL);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "clEnqueueCopyBufferRect (panel)");
}

kiln_status
kiln__lh_wait(const char *op, kiln_context *ctx, cl_event ev)
{
  (void)ctx;
  if (!ev)
    return KILN_OK;
  cl_int err = clWaitForEvents(1, &ev);
  clReleaseEvent(ev);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "clWaitForEvents (panel read)");
}

/*
 * The transposes run over blocks of TB rows, column by column inside a block: row by row
 * over the whole panel each write (or read) of the column-major side jumps a full column
 * (32 KiB for 4096 f64 rows), and the power-of-two strides alias in the cache: 0.8 ms for a
 * 4096 x 32 panel on the build machine, as long as LAPACK's dgetrf of it, against 0.04 ms
 * blocked.
 */
#define TB 64

void
kiln__lh_to_colmajor(kiln_dtype dt, const void *src, uint64_t rows, uint64_t cols, double *w)
{
  for (uint64_t i0 = 0; i0 < rows; i0 += TB) {
    uint64_t i1 = rows - i0 < TB ? rows : i0 + TB;
    for (uint64_t j = 0; j < cols; j++)
      for (uint64_t i = i0; i < i1; i++)
        w[j * rows + i] = dt == KILN_F32 ? (double)((const float *)src)[i * cols + j]
                                         : ((const double *)src)[i * cols + j];
  }
}

void
kiln__lh_from_colmajor(kiln_dtype dt, const double *w, uint64_t ldw, uint64_t rows, uint64_t cols,
                       void *dst)
{
  for (uint64_t i0 = 0; i0 < rows; i0 += TB) {
    uint64_t i1 = rows - i0 < TB ? rows : i0 + TB;
    for (uint64_t j = 0; j < cols; j++)
      for (uint64_t i = i0; i < i1; i++) {
        double v = w[j * ldw + i];
        if (dt == KILN_F32)
          ((float *)dst)[i * cols + j] = (float)v;
        else
          ((double *)dst)[i * cols + j] = v;
      }
  }
}

void
kiln__lh_store(kiln_dtype dt, const double *x, uint64_t n, void *dst)
{
  for (uint64_t i = 0; i < n; i++) {
    if (dt == KILN_F32)
      ((float *)dst)[i] = (float)x[i];
    else
      ((double *)dst)[i] = x[i];
  }
}

kiln_status
kiln__lh_gemm(const char *op, kiln_context *ctx, kiln_dtype dt, int ta, int tb, size_t m, size_t n,
              size_t k, double alpha, cl_mem a, size_t aoff, size_t lda, cl_mem b, size_t boff,
              size_t ldb, double beta, cl_mem c, size_t coff, size_t ldc)
{
#if KILN_HAVE_CLBLAST
  struct lh_state *st = kiln__family_state(ctx, &kiln__linalg_family);
  /* An upper bound of what CLBlast asks (Xgemm::GetTempSize: A, B and C each padded to its
   * kernel's tiles, at most 128 here) instead of its size query, which builds its parameter
   * database on every call. */
  size_t ts = kiln_dtype_size(dt), mp = m + 127, np = n + 127, kp = k + 127;
  size_t bytes = (mp * kp + kp * np + mp * np) * ts;
  if (st->gemm_temp_bytes < bytes) {
    if (st->gemm_temp)
      clReleaseMemObject(st->gemm_temp);
    size_t want = bytes < 2 * st->gemm_temp_bytes ? 2 * st->gemm_temp_bytes : bytes;
    cl_int err;
    st->gemm_temp = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, want, NULL, &err);
    st->gemm_temp_bytes = err == CL_SUCCESS ? want : 0;
    if (err != CL_SUCCESS)
      st->gemm_temp = NULL;
  }
  /* CLBlast checks the buffer's size before it enqueues anything: a refusal falls back to
   * the plain call, which allocates its own */
  if (st->gemm_temp &&
      kiln__clblast_gemm_with_temp(op, ctx, dt, ta, tb, m, n, k, alpha, a, aoff, lda, b, boff, ldb,
                                   beta, c, coff, ldc, st->gemm_temp) == KILN_OK) {
    atomic_fetch_add(&temp_gemms, 1);
    return KILN_OK;
  }
  return kiln__clblast_gemm(op, ctx, dt, ta, tb, m, n, k, (kiln_complex128){alpha, 0.0}, a, aoff,
                            lda, 0, b, boff, ldb, 0, (kiln_complex128){beta, 0.0}, c, coff, ldc, 0,
                            1);
#else
  (void)dt, (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)aoff;
  (void)lda, (void)b, (void)boff, (void)ldb, (void)beta, (void)c, (void)coff, (void)ldc;
  return kiln__fail(KILN_ERR_UNSUPPORTED, op, 0, "CLBlast GEMM in a kiln built without CLBlast");
#endif
}

kiln_status
kiln__linalg_test_gemm_indirect(kiln_context *ctx, kiln_dtype dt)
{
#if KILN_HAVE_CLBLAST
  return kiln__clblast_test_override("kiln__linalg_test_gemm_indirect", ctx, dt, "GemmRoutine",
                                     "XGEMM_MIN_INDIRECT_SIZE", 1);
#else
  (void)ctx;
  (void)dt;
  return kiln__fail(KILN_ERR_UNSUPPORTED, "kiln__linalg_test_gemm_indirect", 0, "no CLBlast");
#endif
}
