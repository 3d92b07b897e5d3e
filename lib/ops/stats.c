/*
 * stats family: histograms, bincount, quantiles, cov and corrcoef (cl_kernels/statistics.cl,
 * docs/stats.md). One source, built for f32 and f64: the value type of each op (the input's,
 * or bincount's weights').
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "core/shape.h"
#include "kiln/blas.h"
#include "kiln/stats.h"
#include "ops/families.h"
#include "ops/ops_common.h"
#include "ops/tuned.h"
#include "runtime/runtime.h"

#define STATS_SRC "statistics"
#define STATS_DTYPES KILN__DT_FLOATS

/* Must match cl_kernels/statistics.cl. */
enum { HIST_UNIFORM = 0, HIST_EDGES = 1, HIST_2D = 2, HIST_BINCOUNT = 3 };
enum { HIST_W = 1, HIST_ACCUMULATE = 2 };
enum { COV_F = 1, COV_A = 2 };

/* Largest local histogram (bytes) and quantile row (keys of 8 bytes) a work-group holds. */
#define STATS_LOCAL_CAP 32768u
/* Elements per histogram pass: a work-group's uint counters cannot wrap within one. A test
 * hook (ops/tuned.h). */
uint64_t kiln__stats_hist_chunk = (uint64_t)1 << 31;
/* Most work-groups of grid-stride launches. */
#define STATS_MAX_GROUPS ((uint64_t)1 << 16)

/* ---------------------------------------------------------------- helpers */

static kiln_status
check_out_ptr(const char *op, kiln_context *ctx, kiln_tensor **out)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  return KILN_OK;
}

static kiln_status
check_device_dtype(const char *op, kiln_context *ctx, kiln_dtype dt)
{
  KILN_RETURN_IF(!kiln__device_has_dtype(&ctx->info, dt), KILN_ERR_UNSUPPORTED, op,
                 "%s needs a device with fp64", kiln_dtype_name(dt));
  return KILN_OK;
}

/* A tensor of f32 or f64 the device runs. */
static kiln_status
check_float(const char *op, kiln_context *ctx, const kiln_tensor *t, const char *what)
{
  KILN_TRY(kiln__tensor_check(op, t, ctx));
  KILN_RETURN_IF(!(STATS_DTYPES & KILN__DT_BIT(t->dtype)), KILN_ERR_DTYPE, op,
                 "%s is %s, expected f32 or f64", what, kiln_dtype_name(t->dtype));
  return check_device_dtype(op, ctx, t->dtype);
}

/* An optional tensor of dtype dt (KILN_DTYPE_COUNT: f32 or f64) with n elements. */
static kiln_status
check_opt(const char *op, kiln_context *ctx, const kiln_tensor *t, kiln_dtype dt, uint64_t n,
          int one_d, const char *what)
{
  if (!t)
    return KILN_OK;
  KILN_TRY(check_float(op, ctx, t, what));
  KILN_RETURN_IF(dt != KILN_DTYPE_COUNT && t->dtype != dt, KILN_ERR_DTYPE, op,
                 "%s is %s, expected %s", what, kiln_dtype_name(t->dtype), kiln_dtype_name(dt));
  KILN_RETURN_IF(one_d && t->shape.ndim != 1, KILN_ERR_SHAPE, op,
                 "%s has %zu dimensions, expected 1", what, t->shape.ndim);
  KILN_RETURN_IF(t->numel != n, KILN_ERR_SHAPE, op, "%s has %llu elements, expected %llu", what,
                 (unsigned long long)t->numel, (unsigned long long)n);
  return KILN_OK;
}

static kiln_status
check_path(const char *op, kiln_stats_path path)
{
  KILN_RETURN_IF((unsigned)path > KILN_STATS_SERIAL, KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown path %d (auto, local, global or serial)", (int)path);
  return KILN_OK;
}

static int
has_int64_atomics(kiln_context *ctx)
{
  size_t len = 0;
  if (clGetDeviceInfo(ctx->device, CL_DEVICE_EXTENSIONS, 0, NULL, &len) != CL_SUCCESS || !len)
    return 0;
  char *ext = malloc(len + 1);
  if (!ext)
    return 0;
  int has = 0;
  if (clGetDeviceInfo(ctx->device, CL_DEVICE_EXTENSIONS, len, ext, NULL) == CL_SUCCESS) {
    ext[len] = 0;
    has = strstr(ext, "cl_khr_int64_base_atomics") != NULL;
  }
  free(ext);
  return has;
}

/* Rounds a double to the precision of dtype (f32 or f64). */
static double
to_dtype(kiln_dtype dt, double v)
{
  return dt == KILN_F32 ? (double)(float)v : v;
}

/* Local memory a work-group's histogram or sort may take: at most half the device's (two
 * groups per compute unit) and STATS_LOCAL_CAP. */
static uint64_t
local_cap(const kiln_context *ctx)
{
  uint64_t half = ctx->info.local_mem_bytes / 2;
  return half < STATS_LOCAL_CAP ? half : STATS_LOCAL_CAP;
}

static uint64_t
groups_for(uint64_t items, size_t local)
{
  uint64_t g = (items + local - 1) / local;
  if (g > STATS_MAX_GROUPS)
    g = STATS_MAX_GROUPS;
  return g ? g : 1;
}

/* Enqueues a blocking upload of host bytes into a pooled temporary (ctx->lock held). */
static kiln_status
upload_tmp(const char *op, kiln_context *ctx, const void *host, size_t bytes, kiln__ops_tmp *t)
{
  KILN_TRY(kiln__ops_tmp_alloc(ctx, bytes, t));
  if (!bytes)
    return KILN_OK;
  cl_int err = clEnqueueWriteBuffer(ctx->queue, t->mem, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
  if (err != CL_SUCCESS) {
    kiln__ops_tmp_free(ctx, t);
    return kiln__fail_cl(op, err, "clEnqueueWriteBuffer");
  }
  return KILN_OK;
}

static kiln_status
fill_zero(const char *op, kiln_context *ctx, cl_mem mem, uint64_t offset, uint64_t bytes)
{
  if (!bytes)
    return KILN_OK;
  static const cl_uint zero = 0;
  cl_int err =
      clEnqueueFillBuffer(ctx->queue, mem, &zero, sizeof zero, offset, bytes, 0, NULL, NULL);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "clEnqueueFillBuffer");
}

/* The kernels' code of an integer dtype (0 i32, 1 i64, 2 u8/bool); -1 for the others. */
static int
int_code(kiln_dtype dt)
{
  switch (dt) {
  case KILN_I32:
    return 0;
  case KILN_I64:
    return 1;
  case KILN_U8:
  case KILN_BOOL:
    return 2;
  default:
    return -1;
  }
}

#define XCODE_T 3u /* x holds the value type itself */

/*
 * A histogram input: f32/f64, or an integer dtype whose values convert to the value type
 * vdt (checked by the caller). Sets *code to the kernels' read code.
 */
static kiln_status
check_hist_input(const char *op, kiln_context *ctx, const kiln_tensor *t, const char *what,
                 uint32_t *code)
{
  KILN_TRY(kiln__tensor_check(op, t, ctx));
  int c = int_code(t->dtype);
  if (c >= 0) {
    *code = (uint32_t)c;
    return KILN_OK;
  }
  *code = XCODE_T;
  return check_float(op, ctx, t, what);
}

/* The value type of a histogram of x: x's float dtype, else the weights' or edges' (f32 or
 * f64), else f64 (f32 on devices without fp64). */
static kiln_dtype
hist_value_dtype(kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *w,
                 const kiln_tensor *edges)
{
  if (int_code(x->dtype) < 0)
    return x->dtype;
  if (w)
    return w->dtype;
  if (edges && (edges->dtype == KILN_F32 || edges->dtype == KILN_F64))
    return edges->dtype;
  return ctx->info.has_fp64 ? KILN_F64 : KILN_F32;
}

/* ---------------------------------------------------------------- min / max */

/* Min and max of x's non-NaN elements (float x) or of its integers (xcode < 3); reads back. */
static kiln_status
data_minmax(const char *op, kiln_context *ctx, const kiln_tensor *x, int is_int, uint32_t xcode,
            double *mn, double *mx, int64_t *imn, int64_t *imx)
{
  kiln_dtype pdt = is_int ? KILN_F32 : x->dtype;
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel(op, ctx, STATS_SRC, pdt, is_int ? "minmax_i" : "minmax_f", &k));
  size_t local = kiln__launch_pow2_local(ctx, k);
  /* Enough groups to stream x at full bandwidth (8 per compute unit, 8 elements per work-item
   * at least); the host folds their partial results. */
  uint64_t groups = groups_for(x->numel, local * 8);
  uint64_t most = 8 * (uint64_t)(ctx->info.compute_units ? ctx->info.compute_units : 1);
  if (groups > most)
    groups = most;
  kiln_dtype partdt = is_int ? KILN_I64 : x->dtype;
  kiln_tensor *part = NULL;
  KILN_TRY(kiln__ops_scratch(op, ctx, partdt, 2 * groups, &part));
  kiln__args a = kiln__args_begin(op, k);
  kiln__args_tensor(&a, x);
  if (is_int)
    kiln__args_u32(&a, xcode);
  kiln__args_u64(&a, x->numel);
  kiln__args_mem(&a, part->mem);
  kiln__args_local(&a, 2 * local * kiln_dtype_size(partdt));
  kiln_status s = kiln__args_enqueue_1d(&a, ctx, (size_t)(groups * local), local);
  double *buf = malloc((size_t)(2 * groups) * sizeof *buf);
  if (!buf && s == KILN_OK)
    s = kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "no memory for %llu partial results",
                   (unsigned long long)groups);
  if (s == KILN_OK)
    s = kiln__ops_read(op, ctx, part, 0, buf, (size_t)(2 * groups * kiln_dtype_size(partdt)));
  kiln_tensor_release(part);
  if (s != KILN_OK) {
    free(buf);
    return s;
  }
  if (is_int) {
    const int64_t *v = (const int64_t *)buf;
    *imn = INT64_MAX;
    *imx = INT64_MIN;
    for (uint64_t g = 0; g < groups; g++) {
      *imn = v[2 * g] < *imn ? v[2 * g] : *imn;
      *imx = v[2 * g + 1] > *imx ? v[2 * g + 1] : *imx;
    }
  } else {
    *mn = INFINITY;
    *mx = -INFINITY;
    for (uint64_t g = 0; g < groups; g++) {
      double lo = partdt == KILN_F32 ? (double)((const float *)buf)[2 * g] : buf[2 * g];
      double hi = partdt == KILN_F32 ? (double)((const float *)buf)[2 * g + 1] : buf[2 * g + 1];
      *mn = lo < *mn ? lo : *mn;
      *mx = hi > *mx ? hi : *mx;
    }
  }
  free(buf);
  return KILN_OK;
}

/* The range of one histogram dimension (NumPy's _get_outer_edges), in x's precision. */
static kiln_status
hist_range(const char *op, kiln_context *ctx, const kiln_tensor *x, kiln_dtype vdt,
           const double *given, const char *dim, double *lo, double *hi)
{
  if (given) {
    KILN_RETURN_IF(!isfinite(given[0]) || !isfinite(given[1]), KILN_ERR_INVALID_ARGUMENT, op,
                   "%srange [%g, %g] is not finite", dim, given[0], given[1]);
    KILN_RETURN_IF(given[0] > given[1], KILN_ERR_INVALID_ARGUMENT, op,
                   "%srange [%g, %g] has its lower bound above the upper", dim, given[0], given[1]);
    *lo = given[0];
    *hi = given[1];
  } else if (x->numel == 0) {
    *lo = 0;
    *hi = 1;
  } else if (int_code(x->dtype) >= 0) {
    int64_t imn = 0, imx = 0;
    KILN_TRY(data_minmax(op, ctx, x, 1, (uint32_t)int_code(x->dtype), NULL, NULL, &imn, &imx));
    *lo = (double)imn;
    *hi = (double)imx;
  } else {
    KILN_TRY(data_minmax(op, ctx, x, 0, 0, lo, hi, NULL, NULL));
    if (*lo > *hi) { /* only NaN */
      *lo = 0;
      *hi = 1;
    }
    KILN_RETURN_IF(!isfinite(*lo) || !isfinite(*hi), KILN_ERR_INVALID_ARGUMENT, op,
                   "%sautodetected range [%g, %g] is not finite", dim, *lo, *hi);
  }
  if (*lo == *hi) {
    *lo -= 0.5;
    *hi += 0.5;
  }
  *lo = to_dtype(vdt, *lo);
  *hi = to_dtype(vdt, *hi);
  KILN_RETURN_IF(!isfinite(to_dtype(vdt, *hi - *lo)), KILN_ERR_INVALID_ARGUMENT, op,
                 "%srange [%g, %g] is wider than %s holds", dim, *lo, *hi, kiln_dtype_name(vdt));
  return KILN_OK;
}

/* ---------------------------------------------------------------- histogram core */

typedef struct hist_job {
  kiln_dtype pdt; /* program dtype: the value type */
  const kiln_tensor *x, *y, *edges, *w;
  uint32_t xcode, mode;
  double lo0, hi0, lo1, hi1;
  uint64_t nb0, nb1, nbins, n;
  kiln_stats_path path;
} hist_job;

/* Bytes of a work-group's private histogram of a job. */
static uint64_t
hist_local_bytes(const hist_job *j)
{
  return j->nbins * (j->w ? kiln_dtype_size(j->pdt) : 4u);
}

static void
hist_args(kiln__args *a, const hist_job *j, uint64_t start, uint64_t n)
{
  kiln__args_tensor(a, j->x);
  kiln__args_u32(a, j->xcode);
  kiln__args_tensor(a, j->y);
  kiln__args_tensor(a, j->edges);
  kiln__args_tensor(a, j->w);
  kiln__args_u32(a, j->w ? HIST_W : 0u);
  kiln__args_u32(a, j->mode);
  kiln__args_float(a, j->pdt, j->lo0);
  kiln__args_float(a, j->pdt, j->hi0);
  kiln__args_float(a, j->pdt, j->lo1);
  kiln__args_float(a, j->pdt, j->hi1);
  kiln__args_u64(a, j->nb0);
  kiln__args_u64(a, j->nb1);
  kiln__args_u64(a, start);
  kiln__args_u64(a, n);
}

/* Runs a histogram job into out (i64 counts or pdt sums of nbins; ctx->lock held). */
static kiln_status
hist_run(const char *op, kiln_context *ctx, const hist_job *j, kiln_tensor *out)
{
  if (j->nbins == 0)
    return KILN_OK;
  uint64_t lbytes = hist_local_bytes(j);
  uint64_t cap = local_cap(ctx);
  int fits = lbytes <= cap;
  KILN_RETURN_IF(j->path == KILN_STATS_LOCAL && !fits, KILN_ERR_INVALID_ARGUMENT, op,
                 "%llu bins do not fit a local histogram (%llu bytes at most)",
                 (unsigned long long)j->nbins, (unsigned long long)cap);
  int local_path = j->path == KILN_STATS_LOCAL || (j->path == KILN_STATS_AUTO && fits);
  cl_kernel kh, km;
  KILN_TRY(
      kiln__ops_kernel(op, ctx, STATS_SRC, j->pdt, local_path ? "hist_local" : "hist_global", &kh));
  KILN_TRY(kiln__ops_kernel(op, ctx, STATS_SRC, j->pdt, "hist_merge", &km));
  size_t local = kiln__launch_pow2_local(ctx, kh);
  const uint64_t chunk = kiln__stats_hist_chunk ? kiln__stats_hist_chunk : (uint64_t)1 << 31;
  uint64_t first = j->n < chunk ? j->n : chunk;
  uint64_t groups = 1;
  if (local_path) {
    /* Enough groups to fill the device, each with a long run of elements. */
    groups = groups_for(first, local * 16);
    uint64_t most = 8 * (uint64_t)(ctx->info.compute_units ? ctx->info.compute_units : 1);
    if (groups > most)
      groups = most;
  }
  uint64_t esize = j->w ? kiln_dtype_size(j->pdt) : 4u;
  kiln__ops_tmp part = {0};
  KILN_TRY(kiln__ops_tmp_alloc(ctx, groups * j->nbins * esize, &part));
  kiln_status s = KILN_OK;
  uint64_t start = 0;
  do {
    uint64_t n = j->n - start < chunk ? j->n - start : chunk;
    uint32_t accumulate = start > 0 ? HIST_ACCUMULATE : 0u;
    uint64_t ng = n ? groups : 0;
    if (n && !local_path)
      s = fill_zero(op, ctx, part.mem, 0, j->nbins * esize);
    if (s == KILN_OK && n) {
      kiln__args a = kiln__args_begin(op, kh);
      hist_args(&a, j, start, n);
      kiln__args_mem(&a, j->w ? NULL : part.mem);
      kiln__args_mem(&a, j->w ? part.mem : NULL);
      if (local_path) {
        kiln__args_local(&a, (size_t)lbytes);
        s = kiln__args_enqueue_1d(&a, ctx, (size_t)(groups * local), local);
      } else {
        s = kiln__args_launch_1d(&a, ctx, n, 0);
      }
    }
    if (s == KILN_OK && (n || start == 0)) {
      kiln__args a = kiln__args_begin(op, km);
      kiln__args_mem(&a, j->w ? NULL : part.mem);
      kiln__args_mem(&a, j->w ? part.mem : NULL);
      kiln__args_u32(&a, (j->w ? HIST_W : 0u) | accumulate);
      kiln__args_u64(&a, ng);
      kiln__args_u64(&a, j->nbins);
      kiln__args_tensor(&a, j->w ? NULL : out);
      kiln__args_tensor(&a, j->w ? out : NULL);
      s = kiln__args_launch_1d(&a, ctx, j->nbins, 0);
    }
    start += n;
  } while (s == KILN_OK && start < j->n);
  kiln__ops_tmp_free(ctx, &part);
  return s;
}

static kiln_status
check_weights_atomics(const char *op, kiln_context *ctx, const kiln_tensor *w)
{
  KILN_RETURN_IF(w && w->dtype == KILN_F64 && !has_int64_atomics(ctx), KILN_ERR_UNSUPPORTED, op,
                 "f64 weights need cl_khr_int64_base_atomics, which the device lacks");
  return KILN_OK;
}

static kiln_status
hist_opts(const char *op, const kiln_histogram_options *opts, kiln_stats_path *path)
{
  *path = opts ? opts->path : KILN_STATS_AUTO;
  KILN_RETURN_IF(*path == KILN_STATS_SERIAL, KILN_ERR_INVALID_ARGUMENT, op,
                 "the serial path is for quantiles; histograms take auto, local or global");
  return check_path(op, *path);
}

/* The shared tail of the histogram entry points: output, range, run. */
static kiln_status
hist_call(const char *op, kiln_context *ctx, hist_job *j, const double *range, int nranges,
          double *range_used, const kiln__shape *shape, kiln_tensor **out)
{
  kiln_dtype odt = j->w ? j->w->dtype : KILN_I64;
  const kiln_tensor *ins[4] = {j->x, j->y, j->edges, j->w};
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, odt, shape, out, ins, 4, 0, &t));
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  if (nranges >= 1)
    s = hist_range(op, ctx, j->x, j->pdt, range, nranges == 2 ? "x " : "", &j->lo0, &j->hi0);
  if (s == KILN_OK && nranges == 2)
    s = hist_range(op, ctx, j->y, j->pdt, range ? range + 2 : NULL, "y ", &j->lo1, &j->hi1);
  if (s == KILN_OK && range_used && nranges >= 1) {
    range_used[0] = j->lo0;
    range_used[1] = j->hi0;
    if (nranges == 2) {
      range_used[2] = j->lo1;
      range_used[3] = j->hi1;
    }
  }
  if (s == KILN_OK)
    s = hist_run(op, ctx, j, t.dst);
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_histogram(kiln_context *ctx, const kiln_tensor *x, uint64_t bins, const double *range,
               const kiln_tensor *weights, const kiln_histogram_options *opts, double *range_used,
               kiln_tensor **out)
{
  static const char op[] = "kiln_histogram";
  KILN_TRY(check_out_ptr(op, ctx, out));
  uint32_t code;
  KILN_TRY(check_hist_input(op, ctx, x, "x", &code));
  KILN_TRY(check_opt(op, ctx, weights, code == XCODE_T ? x->dtype : KILN_DTYPE_COUNT, x->numel, 0,
                     "weights"));
  KILN_TRY(check_weights_atomics(op, ctx, weights));
  hist_job j = {.pdt = hist_value_dtype(ctx, x, weights, NULL),
                .x = x,
                .xcode = code,
                .w = weights,
                .mode = HIST_UNIFORM,
                .nb0 = bins,
                .nb1 = 1,
                .nbins = bins,
                .n = x->numel};
  KILN_TRY(hist_opts(op, opts, &j.path));
  KILN_RETURN_IF(bins == 0 || bins > (uint64_t)INT64_MAX, KILN_ERR_INVALID_ARGUMENT, op,
                 "bins is %llu, expected at least 1", (unsigned long long)bins);
  kiln__shape shape = {.ndim = 1, .dims = {(int64_t)bins}};
  return hist_call(op, ctx, &j, range, 1, range_used, &shape, out);
}

kiln_status
kiln_histogram_edges(kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *edges,
                     const kiln_tensor *weights, const kiln_histogram_options *opts,
                     kiln_tensor **out)
{
  static const char op[] = "kiln_histogram_edges";
  KILN_TRY(check_out_ptr(op, ctx, out));
  uint32_t code;
  KILN_TRY(check_hist_input(op, ctx, x, "x", &code));
  KILN_TRY(check_float(op, ctx, edges, "edges"));
  kiln_dtype vdt = hist_value_dtype(ctx, x, NULL, edges);
  KILN_RETURN_IF(edges->dtype != vdt, KILN_ERR_DTYPE, op, "edges is %s, expected %s",
                 kiln_dtype_name(edges->dtype), kiln_dtype_name(vdt));
  KILN_RETURN_IF(edges->shape.ndim != 1 || edges->numel < 2, KILN_ERR_SHAPE, op,
                 "edges must be 1-D with at least 2 elements");
  KILN_TRY(check_opt(op, ctx, weights, vdt, x->numel, 0, "weights"));
  KILN_TRY(check_weights_atomics(op, ctx, weights));
  hist_job j = {.pdt = vdt,
                .x = x,
                .xcode = code,
                .edges = edges,
                .w = weights,
                .mode = HIST_EDGES,
                .nb0 = edges->numel - 1,
                .nb1 = 1,
                .nbins = edges->numel - 1,
                .n = x->numel};
  KILN_TRY(hist_opts(op, opts, &j.path));
  /* The edges are read back and checked: a binary search over unsorted edges means nothing. */
  size_t esz = kiln_dtype_size(edges->dtype);
  void *host = malloc((size_t)edges->numel * esz);
  KILN_RETURN_IF(!host, KILN_ERR_HOST_MEMORY, op, "no memory for %llu edges",
                 (unsigned long long)edges->numel);
  kiln__ctx_lock(ctx);
  kiln_status s = kiln__ops_read(op, ctx, edges, 0, host, (size_t)edges->numel * esz);
  kiln__ctx_unlock(ctx);
  for (uint64_t i = 0; s == KILN_OK && i < edges->numel; i++) {
    double v = esz == 4 ? (double)((float *)host)[i] : ((double *)host)[i];
    double p = i ? (esz == 4 ? (double)((float *)host)[i - 1] : ((double *)host)[i - 1]) : v;
    if (isnan(v) || v < p)
      s = kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                     "edges must be non-decreasing and not NaN (edges[%llu] = %g)",
                     (unsigned long long)i, v);
  }
  free(host);
  KILN_TRY(s);
  kiln__shape shape = {.ndim = 1, .dims = {(int64_t)j.nbins}};
  return hist_call(op, ctx, &j, NULL, 0, NULL, &shape, out);
}

kiln_status
kiln_histogram2d(kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *y, uint64_t bins_x,
                 uint64_t bins_y, const double *range, const kiln_tensor *weights,
                 const kiln_histogram_options *opts, double *range_used, kiln_tensor **out)
{
  static const char op[] = "kiln_histogram2d";
  KILN_TRY(check_out_ptr(op, ctx, out));
  uint32_t code, ycode;
  KILN_TRY(check_hist_input(op, ctx, x, "x", &code));
  KILN_TRY(check_hist_input(op, ctx, y, "y", &ycode));
  KILN_RETURN_IF(y->dtype != x->dtype, KILN_ERR_DTYPE, op, "y is %s, expected %s",
                 kiln_dtype_name(y->dtype), kiln_dtype_name(x->dtype));
  KILN_RETURN_IF(y->numel != x->numel, KILN_ERR_SHAPE, op,
                 "x has %llu elements and y %llu: a point needs both", (unsigned long long)x->numel,
                 (unsigned long long)y->numel);
  KILN_TRY(check_opt(op, ctx, weights, code == XCODE_T ? x->dtype : KILN_DTYPE_COUNT, x->numel, 0,
                     "weights"));
  KILN_TRY(check_weights_atomics(op, ctx, weights));
  KILN_RETURN_IF(bins_x == 0 || bins_y == 0 || bins_x > (uint64_t)INT64_MAX ||
                     bins_y > (uint64_t)INT64_MAX / bins_x,
                 KILN_ERR_INVALID_ARGUMENT, op, "bins %llu x %llu: each must be at least 1",
                 (unsigned long long)bins_x, (unsigned long long)bins_y);
  hist_job j = {.pdt = hist_value_dtype(ctx, x, weights, NULL),
                .x = x,
                .xcode = code,
                .y = y,
                .w = weights,
                .mode = HIST_2D,
                .nb0 = bins_x,
                .nb1 = bins_y,
                .nbins = bins_x * bins_y,
                .n = x->numel};
  KILN_TRY(hist_opts(op, opts, &j.path));
  kiln__shape shape = {.ndim = 2, .dims = {(int64_t)bins_x, (int64_t)bins_y}};
  return hist_call(op, ctx, &j, range, 2, range_used, &shape, out);
}

kiln_status
kiln_bincount(kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *weights,
              uint64_t minlength, const kiln_histogram_options *opts, kiln_tensor **out)
{
  static const char op[] = "kiln_bincount";
  KILN_TRY(check_out_ptr(op, ctx, out));
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_RETURN_IF(int_code(x->dtype) < 0, KILN_ERR_DTYPE, op,
                 "x is %s, expected i32, i64, u8 or bool", kiln_dtype_name(x->dtype));
  uint32_t code = (uint32_t)int_code(x->dtype);
  KILN_TRY(check_opt(op, ctx, weights, KILN_DTYPE_COUNT, x->numel, 0, "weights"));
  KILN_TRY(check_weights_atomics(op, ctx, weights));
  KILN_RETURN_IF(minlength > (uint64_t)INT64_MAX, KILN_ERR_INVALID_ARGUMENT, op,
                 "minlength %llu is too large", (unsigned long long)minlength);
  hist_job j = {.pdt = weights ? weights->dtype : KILN_F32,
                .x = x,
                .w = weights,
                .xcode = code,
                .mode = HIST_BINCOUNT,
                .nb1 = 1,
                .n = x->numel};
  KILN_TRY(hist_opts(op, opts, &j.path));
  int64_t mn = 0, mx = -1;
  if (x->numel) {
    kiln__ctx_lock(ctx);
    kiln_status s = data_minmax(op, ctx, x, 1, code, NULL, NULL, &mn, &mx);
    kiln__ctx_unlock(ctx);
    KILN_TRY(s);
    KILN_RETURN_IF(mn < 0, KILN_ERR_INVALID_ARGUMENT, op,
                   "x holds a negative value (%lld); bincount counts non-negative integers",
                   (long long)mn);
  }
  j.nb0 = (uint64_t)(mx + 1) > minlength ? (uint64_t)(mx + 1) : minlength;
  j.nbins = j.nb0;
  kiln__shape shape = {.ndim = 1, .dims = {(int64_t)j.nbins}};
  return hist_call(op, ctx, &j, NULL, 0, NULL, &shape, out);
}

/* ---------------------------------------------------------------- quantiles */

/* Bytes of a key of the local quantile sort (statistics.cl's LKT). */
static uint64_t
quant_key_size(kiln_dtype dtype)
{
  return dtype == KILN_F64 ? 8 : 4;
}

uint64_t
kiln_quantile_local_max(const kiln_context *ctx, kiln_dtype dtype)
{
  if (kiln__ctx_check("kiln_quantile_local_max", ctx) != KILN_OK)
    return 0;
  uint64_t cap = local_cap(ctx), n = 1, ksize = quant_key_size(dtype);
  while (n * 2 * ksize <= cap)
    n *= 2;
  return n;
}

/* The slices the quantile kernels that read x start with: x, rows of len elements, inner
 * apart. */
static void
args_slices(kiln__args *a, const kiln_tensor *x, uint64_t rows, uint64_t len, uint64_t inner)
{
  kiln__args_tensor(a, x);
  kiln__args_u64(a, rows);
  kiln__args_u64(a, len);
  kiln__args_u64(a, inner);
}

/* The ranks wanted, as every quantile kernel that picks takes them: the nq q (QT) in q, the
 * interpolation method, whether NaNs are omitted. */
static void
args_ranks(kiln__args *a, cl_mem q, uint64_t nq, uint32_t method, uint32_t omit)
{
  kiln__args_mem(a, q);
  kiln__args_u64(a, nq);
  kiln__args_u32(a, method);
  kiln__args_u32(a, omit);
}

/* Largest rows * slots the radix selection takes (its digit counts grow with both). */
#define RS_MAX_SLOTS 4096u

/*
 * The GPU global path for few q: a radix selection of every needed rank, 8 key bits per
 * pass (statistics.cl, quant_rs_*), on x's rows of len > 0 elements (ctx->lock held).
 */
static kiln_status
quantile_radix(const char *op, kiln_context *ctx, const kiln_tensor *x, uint64_t rows, uint64_t len,
               uint64_t inner, cl_mem q, uint64_t nq, uint32_t method, uint32_t omit,
               kiln_tensor *out)
{
  const uint64_t nt = 2 * nq;
  kiln_tensor *nnan = NULL, *sel = NULL;
  kiln__ops_tmp hist = {0};
  cl_kernel kn, ki, kh, kp, kf;
  kiln_status s = kiln__ops_kernel(op, ctx, STATS_SRC, x->dtype, "quant_rs_nan", &kn);
  if (s == KILN_OK)
    s = kiln__ops_kernel(op, ctx, STATS_SRC, x->dtype, "quant_rs_init", &ki);
  if (s == KILN_OK)
    s = kiln__ops_kernel(op, ctx, STATS_SRC, x->dtype, "quant_rs_hist", &kh);
  if (s == KILN_OK)
    s = kiln__ops_kernel(op, ctx, STATS_SRC, x->dtype, "quant_rs_pick", &kp);
  if (s == KILN_OK)
    s = kiln__ops_kernel(op, ctx, STATS_SRC, x->dtype, "quant_rs_final", &kf);
  size_t local = s == KILN_OK ? kiln__launch_pow2_local(ctx, kh) : 1;
  /* Chunks of a row per work-group: enough groups to fill the device. */
  uint64_t cu = ctx->info.compute_units ? ctx->info.compute_units : 1;
  uint64_t nchunk = (len + local * 64 - 1) / (local * 64);
  uint64_t most = (8 * cu + rows - 1) / rows;
  if (nchunk > most)
    nchunk = most;
  if (nchunk < 1)
    nchunk = 1;
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, KILN_I32, rows, &nnan);
  if (s == KILN_OK)
    s = fill_zero(op, ctx, nnan->mem, nnan->offset, rows * 4);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, KILN_I64, rows * nt * 2, &sel);
  if (s == KILN_OK)
    s = kiln__ops_tmp_alloc(ctx, rows * nchunk * nt * 256 * 4, &hist);
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, kn);
    args_slices(&a, x, rows, len, inner);
    kiln__args_mem(&a, nnan->mem);
    s = kiln__args_launch_1d(&a, ctx, rows * len, 0);
  }
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, ki);
    kiln__args_u64(&a, rows);
    kiln__args_u64(&a, len);
    args_ranks(&a, q, nq, method, omit);
    kiln__args_mem(&a, nnan->mem);
    kiln__args_mem(&a, sel->mem);
    s = kiln__args_launch_1d(&a, ctx, rows * nq, 0);
  }
  const uint32_t bits = x->dtype == KILN_F64 ? 64u : 32u;
  for (uint32_t shift = bits - 8; s == KILN_OK; shift -= 8) {
    kiln__args a = kiln__args_begin(op, kh);
    args_slices(&a, x, rows, len, inner);
    kiln__args_u64(&a, nchunk);
    kiln__args_u64(&a, nt);
    kiln__args_mem(&a, sel->mem);
    kiln__args_u32(&a, shift);
    kiln__args_mem(&a, hist.mem);
    kiln__args_local(&a, (size_t)(nt * 256 * 4));
    s = kiln__args_enqueue_1d(&a, ctx, (size_t)(groups_for(rows * nchunk, 1) * local), local);
    if (s == KILN_OK) {
      kiln__args b = kiln__args_begin(op, kp);
      kiln__args_u64(&b, rows);
      kiln__args_u64(&b, nchunk);
      kiln__args_u64(&b, nt);
      kiln__args_mem(&b, hist.mem);
      kiln__args_mem(&b, sel->mem);
      kiln__args_u32(&b, shift);
      s = kiln__args_launch_1d(&b, ctx, rows * nt, 0);
    }
    if (shift == 0)
      break;
  }
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, kf);
    kiln__args_u64(&a, rows);
    kiln__args_u64(&a, len);
    args_ranks(&a, q, nq, method, omit);
    kiln__args_mem(&a, nnan->mem);
    kiln__args_mem(&a, sel->mem);
    kiln__args_tensor(&a, out);
    s = kiln__args_launch_1d(&a, ctx, nq * rows, 0);
  }
  kiln__ops_tmp_free(ctx, &hist);
  if (sel)
    kiln_tensor_release(sel);
  if (nnan)
    kiln_tensor_release(nnan);
  return s;
}

static kiln_status
quantile_run(const char *op, kiln_context *ctx, const kiln_tensor *x, const double *q, size_t nq,
             int q_vector, const int64_t *axis, const kiln_quantile_options *opts, double scale,
             kiln_tensor **out)
{
  KILN_TRY(check_out_ptr(op, ctx, out));
  KILN_TRY(check_float(op, ctx, x, "x"));
  kiln_quantile_options o = {0};
  if (opts)
    o = *opts;
  KILN_RETURN_IF((unsigned)o.method > KILN_QUANTILE_MIDPOINT, KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown method %d", (int)o.method);
  KILN_RETURN_IF((unsigned)o.nan_policy > KILN_NAN_OMIT, KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown NaN policy %d", (int)o.nan_policy);
  KILN_TRY(check_path(op, o.path));
  KILN_RETURN_IF(!q && nq, KILN_ERR_INVALID_ARGUMENT, op, "q is NULL with nq = %zu", nq);
  KILN_RETURN_IF(!q_vector && nq != 1, KILN_ERR_INVALID_ARGUMENT, op,
                 "a scalar q needs nq = 1, not %zu", nq);
  for (size_t i = 0; i < nq; i++)
    KILN_RETURN_IF(!(q[i] >= 0 && q[i] <= scale), KILN_ERR_INVALID_ARGUMENT, op,
                   "q[%zu] = %g is outside [0, %g]", i, q[i], scale);
  /* Geometry: rows slices of len elements, element j of row r at (r / inner) len inner +
   * r % inner + j inner; the result is [nq] + the kept dimensions. */
  uint64_t rows = 1, len = x->numel, inner = 1;
  kiln__shape shape = {0};
  if (q_vector)
    shape.dims[shape.ndim++] = (int64_t)nq;
  size_t ax = 0;
  if (axis)
    KILN_TRY(kiln__ops_axis(op, *axis, x->shape.ndim, &ax));
  size_t keep =
      axis ? (o.keepdims ? x->shape.ndim : x->shape.ndim - 1) : (o.keepdims ? x->shape.ndim : 0);
  KILN_RETURN_IF(shape.ndim + keep > KILN_MAX_DIMS, KILN_ERR_SHAPE, op,
                 "the result would have %zu dimensions (at most %d)", shape.ndim + keep,
                 KILN_MAX_DIMS);
  if (axis) {
    len = (uint64_t)x->shape.dims[ax];
    rows = 1;
    for (size_t i = 0; i < x->shape.ndim; i++) {
      if (i > ax)
        inner *= (uint64_t)x->shape.dims[i];
      if (i != ax)
        rows *= (uint64_t)x->shape.dims[i];
      if (i != ax || o.keepdims)
        shape.dims[shape.ndim++] = i == ax ? 1 : x->shape.dims[i];
    }
  } else {
    for (size_t i = 0; o.keepdims && i < x->shape.ndim; i++)
      shape.dims[shape.ndim++] = 1;
  }
  uint64_t lmax = kiln_quantile_local_max(ctx, x->dtype);
  KILN_RETURN_IF(o.path == KILN_STATS_LOCAL && len > lmax, KILN_ERR_INVALID_ARGUMENT, op,
                 "slices of %llu elements are longer than the local sort holds (%llu)",
                 (unsigned long long)len, (unsigned long long)lmax);
  kiln_stats_path path = o.path;
  if (path == KILN_STATS_AUTO)
    path = !ctx->info.is_gpu ? KILN_STATS_SERIAL
           : len <= lmax     ? KILN_STATS_LOCAL
                             : KILN_STATS_GLOBAL;

  kiln__out_target t;
  const kiln_tensor *ins[1] = {x};
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, &shape, out, ins, 1, 0, &t));
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  kiln__ops_tmp qbuf = {0};
  kiln_tensor *keys = NULL, *vals = NULL;
  if (rows && nq) {
    /* q as QT: double with fp64 (NumPy computes the virtual index in double), else float. */
    int qd = ctx->info.has_fp64;
    void *qh = malloc(nq * (qd ? 8 : 4));
    if (!qh)
      s = kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "no memory for %zu q", nq);
    for (size_t i = 0; s == KILN_OK && i < nq; i++) {
      double v = scale == 1 ? q[i] : q[i] / scale;
      if (qd)
        ((double *)qh)[i] = v;
      else
        ((float *)qh)[i] = (float)v;
    }
    if (s == KILN_OK)
      s = upload_tmp(op, ctx, qh, nq * (qd ? 8 : 4), &qbuf);
    free(qh);
  }
  uint32_t method = (uint32_t)o.method, omit = o.nan_policy == KILN_NAN_OMIT;
  if (s == KILN_OK && rows && nq && path == KILN_STATS_SERIAL && len > 0) {
    /* One work-item per slice, on a copy of the slices' keys. On CPUs one work-item per
     * group: PoCL runs a group's work-items in lockstep loops, which the selections'
     * data-dependent loops would serialise anyway. */
    cl_kernel k;
    s = kiln__ops_scratch(op, ctx, KILN_I64, rows * len, &keys);
    if (s == KILN_OK)
      s = kiln__ops_kernel(op, ctx, STATS_SRC, x->dtype, "quant_select", &k);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, k);
      args_slices(&a, x, rows, len, inner);
      args_ranks(&a, qbuf.mem, nq, method, omit);
      kiln__args_tensor(&a, t.dst);
      kiln__args_tensor(&a, keys);
      s = kiln__args_launch_1d(&a, ctx, rows, ctx->info.is_gpu ? 0 : 1);
    }
  } else if (s == KILN_OK && rows && nq && path == KILN_STATS_LOCAL && len > 0) {
    cl_kernel k;
    s = kiln__ops_kernel(op, ctx, STATS_SRC, x->dtype, "quant_local", &k);
    if (s == KILN_OK) {
      uint64_t np = kiln__ops_pow2(len);
      size_t local = kiln__launch_pow2_local(ctx, k);
      while (local > 1 && local > np / 2)
        local /= 2;
      kiln__args a = kiln__args_begin(op, k);
      args_slices(&a, x, rows, len, inner);
      args_ranks(&a, qbuf.mem, nq, method, omit);
      kiln__args_tensor(&a, t.dst);
      kiln__args_local(&a, (size_t)(np * quant_key_size(x->dtype)));
      kiln__args_u64(&a, np);
      s = kiln__args_enqueue_1d(&a, ctx, (size_t)(groups_for(rows, 1) * local), local);
    }
  } else if (s == KILN_OK && rows && nq && len > 0 && 2 * nq * 256 * 4 <= local_cap(ctx) &&
             rows * 2 * nq <= RS_MAX_SLOTS) {
    s = quantile_radix(op, ctx, x, rows, len, inner, qbuf.mem, nq, method, omit, t.dst);
  } else if (s == KILN_OK && rows && nq) {
    uint64_t total = rows * len, np = kiln__ops_pow2(total);
    if (total) {
      s = kiln__ops_scratch(op, ctx, KILN_I64, np, &keys);
      if (s == KILN_OK)
        s = kiln__ops_scratch(op, ctx, KILN_I64, np, &vals);
      cl_kernel k;
      if (s == KILN_OK)
        s = kiln__ops_kernel(op, ctx, STATS_SRC, x->dtype, "quant_pack", &k);
      if (s == KILN_OK) {
        kiln__args a = kiln__args_begin(op, k);
        args_slices(&a, x, rows, len, inner);
        kiln__args_u64(&a, np);
        kiln__args_tensor(&a, keys);
        kiln__args_tensor(&a, vals);
        s = kiln__args_launch_1d(&a, ctx, np, 0);
      }
      if (s == KILN_OK)
        s = kiln__ops_sort_pairs(op, ctx, STATS_SRC, x->dtype, keys, vals, np);
    }
    cl_kernel k;
    if (s == KILN_OK)
      s = kiln__ops_kernel(op, ctx, STATS_SRC, x->dtype, "quant_pick", &k);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, vals);
      kiln__args_u64(&a, rows);
      kiln__args_u64(&a, len);
      args_ranks(&a, qbuf.mem, nq, method, omit);
      kiln__args_tensor(&a, t.dst);
      s = kiln__args_launch_1d(&a, ctx, nq * rows, 0);
    }
  }
  if (keys)
    kiln_tensor_release(keys);
  if (vals)
    kiln_tensor_release(vals);
  kiln__ops_tmp_free(ctx, &qbuf);
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_quantile(kiln_context *ctx, const kiln_tensor *x, const double *q, size_t nq, int q_vector,
              const int64_t *axis, const kiln_quantile_options *opts, kiln_tensor **out)
{
  return quantile_run("kiln_quantile", ctx, x, q, nq, q_vector, axis, opts, 1.0, out);
}

kiln_status
kiln_percentile(kiln_context *ctx, const kiln_tensor *x, const double *p, size_t np, int q_vector,
                const int64_t *axis, const kiln_quantile_options *opts, kiln_tensor **out)
{
  return quantile_run("kiln_percentile", ctx, x, p, np, q_vector, axis, opts, 100.0, out);
}

/* ---------------------------------------------------------------- cov, corrcoef */

static kiln_status
cov_run(const char *op, kiln_context *ctx, const kiln_tensor *x, int rowvar, int64_t ddof,
        const kiln_tensor *fw, const kiln_tensor *aw, int corr, kiln_tensor **out)
{
  KILN_TRY(check_out_ptr(op, ctx, out));
  KILN_TRY(check_float(op, ctx, x, "x"));
  KILN_RETURN_IF(x->shape.ndim != 1 && x->shape.ndim != 2, KILN_ERR_SHAPE, op,
                 "x has %zu dimensions, expected 1 or 2", x->shape.ndim);
  /* Variables x observations; x(i, j) at i * vs + j * os. A 1-D x is one variable. */
  uint64_t nvars, nobs, vs, os;
  int by_rows = x->shape.ndim == 1 || rowvar;
  if (x->shape.ndim == 1) {
    nvars = 1;
    nobs = (uint64_t)x->shape.dims[0];
  } else if (rowvar) {
    nvars = (uint64_t)x->shape.dims[0];
    nobs = (uint64_t)x->shape.dims[1];
  } else {
    nobs = (uint64_t)x->shape.dims[0];
    nvars = (uint64_t)x->shape.dims[1];
  }
  vs = by_rows ? nobs : 1;
  os = by_rows ? 1 : nvars;
  KILN_TRY(check_opt(op, ctx, fw, x->dtype, nobs, 1, "fweights"));
  KILN_TRY(check_opt(op, ctx, aw, x->dtype, nobs, 1, "aweights"));
  kiln__shape shape = {0};
  if (nvars != 1) {
    shape.ndim = 2;
    shape.dims[0] = shape.dims[1] = (int64_t)nvars;
  }
  const kiln_tensor *ins[3] = {x, fw, aw};
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, &shape, out, ins, 3, 0, &t));
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  kiln_tensor *params = NULL, *flag = NULL, *A = NULL, *C = NULL, *d = NULL, *part = NULL,
              *means = NULL;
  uint32_t flags = (fw ? COV_F : 0u) | (aw ? COV_A : 0u);
  size_t tsz = kiln_dtype_size(x->dtype);
  cl_kernel k;
  if (nvars == 0)
    goto done;
  s = kiln__ops_scratch(op, ctx, x->dtype, 2, &params);
  if (s == KILN_OK)
    s = kiln__ops_flag_new(op, ctx, &flag);
  if (s == KILN_OK)
    s = kiln__ops_kernel(op, ctx, STATS_SRC, x->dtype, "cov_wsum", &k);
  if (s == KILN_OK) {
    size_t local = kiln__launch_pow2_local(ctx, k);
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, fw);
    kiln__args_tensor(&a, aw);
    kiln__args_u64(&a, nobs);
    kiln__args_i64(&a, ddof);
    kiln__args_u32(&a, flags);
    kiln__args_mem(&a, params->mem);
    kiln__args_mem(&a, flag->mem);
    kiln__args_local(&a, local * tsz);
    kiln__args_local(&a, local * tsz);
    s = kiln__args_enqueue_1d(&a, ctx, local, local);
  }
  if (s == KILN_OK && flags) {
    uint32_t f[4];
    s = kiln__ops_flag_read(op, ctx, flag, f);
    if (s == KILN_OK && (f[0] & 1u))
      s = kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                     "weights must be finite and >= 0 (fweights whole numbers)");
    else if (s == KILN_OK && (f[0] & 2u))
      s = kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "the weights sum to zero");
  }
  /* C: the result's bytes as an [nvars, nvars] matrix (a 0-d result is viewed as [1, 1]). */
  if (s == KILN_OK) {
    if (t.dst->shape.ndim == 2) {
      C = t.dst;
    } else {
      kiln__shape s11 = {.ndim = 2, .dims = {1, 1}};
      s = kiln__tensor_view(op, t.dst, 0, &s11, &C);
    }
  }
  if (s == KILN_OK && nobs == 0) {
    s = fill_zero(op, ctx, C->mem, C->offset, C->nbytes);
  } else if (s == KILN_OK) {
    kiln__shape as = {.ndim = 2};
    as.dims[0] = (int64_t)(by_rows ? nvars : nobs);
    as.dims[1] = (int64_t)(by_rows ? nobs : nvars);
    s = kiln__tensor_new_locked(op, ctx, x->dtype, &as, &A);
    /* Weighted means: chunked partial sums (enough work-groups to fill the device even for
     * few variables), folded per variable; then the centring, elementwise. */
    uint64_t cu = ctx->info.compute_units ? ctx->info.compute_units : 1;
    uint64_t nchunk = (8 * cu + nvars - 1) / nvars;
    if (s == KILN_OK)
      s = kiln__ops_kernel(op, ctx, STATS_SRC, x->dtype, "cov_mean", &k);
    size_t local = s == KILN_OK ? kiln__launch_pow2_local(ctx, k) : 1;
    if (nchunk > (nobs + local - 1) / local)
      nchunk = (nobs + local - 1) / local;
    if (nchunk < 1)
      nchunk = 1;
    if (s == KILN_OK)
      s = kiln__ops_scratch(op, ctx, x->dtype, nvars * nchunk, &part);
    if (s == KILN_OK)
      s = kiln__ops_scratch(op, ctx, x->dtype, nvars, &means);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, x);
      kiln__args_u64(&a, nvars);
      kiln__args_u64(&a, nobs);
      kiln__args_u64(&a, vs);
      kiln__args_u64(&a, os);
      kiln__args_tensor(&a, fw);
      kiln__args_tensor(&a, aw);
      kiln__args_u32(&a, flags);
      kiln__args_u64(&a, nchunk);
      kiln__args_mem(&a, part->mem);
      kiln__args_local(&a, local * tsz);
      s = kiln__args_enqueue_1d(&a, ctx, (size_t)(groups_for(nvars * nchunk, 1) * local), local);
    }
    if (s == KILN_OK)
      s = kiln__ops_kernel(op, ctx, STATS_SRC, x->dtype, "cov_mean_fin", &k);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_mem(&a, part->mem);
      kiln__args_u64(&a, nvars);
      kiln__args_u64(&a, nchunk);
      kiln__args_mem(&a, params->mem);
      kiln__args_mem(&a, means->mem);
      s = kiln__args_launch_1d(&a, ctx, nvars, 0);
    }
    if (s == KILN_OK)
      s = kiln__ops_kernel(op, ctx, STATS_SRC, x->dtype, "cov_center", &k);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, x);
      kiln__args_u64(&a, nvars);
      kiln__args_u64(&a, nobs);
      kiln__args_u32(&a, (uint32_t)by_rows);
      kiln__args_tensor(&a, fw);
      kiln__args_tensor(&a, aw);
      kiln__args_u32(&a, flags);
      kiln__args_mem(&a, means->mem);
      kiln__args_tensor(&a, A);
      s = kiln__args_launch_1d(&a, ctx, nvars * nobs, 0);
    }
    if (s == KILN_OK)
      s = kiln_syrk(ctx, KILN_UPPER, by_rows ? KILN_NO_TRANS : KILN_TRANS, 1.0, A, 0.0, &C, 1);
  }
  if (s == KILN_OK && corr) {
    s = kiln__ops_scratch(op, ctx, x->dtype, nvars, &d);
    if (s == KILN_OK)
      s = kiln__ops_kernel(op, ctx, STATS_SRC, x->dtype, "cov_diag", &k);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, C);
      kiln__args_u64(&a, nvars);
      kiln__args_mem(&a, d->mem);
      s = kiln__args_launch_1d(&a, ctx, nvars, 0);
    }
  }
  if (s == KILN_OK)
    s = kiln__ops_kernel(op, ctx, STATS_SRC, x->dtype, "cov_finish", &k);
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, C);
    kiln__args_mem(&a, d ? d->mem : NULL);
    kiln__args_u64(&a, nvars);
    kiln__args_mem(&a, params->mem);
    kiln__args_u32(&a, (uint32_t)corr);
    s = kiln__args_launch_1d(&a, ctx, nvars * nvars, 0);
  }
done:
  if (C && C != t.dst)
    kiln_tensor_release(C);
  if (A)
    kiln_tensor_release(A);
  if (d)
    kiln_tensor_release(d);
  if (part)
    kiln_tensor_release(part);
  if (means)
    kiln_tensor_release(means);
  if (params)
    kiln_tensor_release(params);
  if (flag)
    kiln_tensor_release(flag);
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_cov(kiln_context *ctx, const kiln_tensor *x, int rowvar, int64_t ddof,
         const kiln_tensor *fweights, const kiln_tensor *aweights, kiln_tensor **out)
{
  return cov_run("kiln_cov", ctx, x, rowvar, ddof, fweights, aweights, 0, out);
}

kiln_status
kiln_corrcoef(kiln_context *ctx, const kiln_tensor *x, int rowvar, kiln_tensor **out)
{
  return cov_run("kiln_corrcoef", ctx, x, rowvar, 1, NULL, NULL, 1, out);
}

/* ---------------------------------------------------------------- family */

static const struct kiln__source stats_sources[] = {{STATS_SRC, STATS_DTYPES}, {NULL, 0}};

const struct kiln__family kiln__stats_family = {.name = "stats", .sources = stats_sources};
