/* Creation family: ones, full_complex, *_like, arange, linspace, logspace, eye, tri, meshgrid. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "kiln/create.h"
#include "ops/families.h"
#include "ops/ops_common.h"

kiln_status
kiln_tensor_ones(kiln_context *ctx, kiln_dtype dtype, size_t ndim, const int64_t *shape,
                 kiln_tensor **out)
{
  return kiln_tensor_full(ctx, dtype, ndim, shape, kiln_scalar_i64(1), out);
}

static kiln_status
like(const char *op, const kiln_tensor *x, const kiln_scalar *value, kiln_tensor **out)
{
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  *out = NULL;
  KILN_TRY(kiln__tensor_check(op, x, NULL));
  if (!value)
    return kiln_tensor_create(x->ctx, x->dtype, x->shape.ndim, x->shape.dims, out);
  return kiln_tensor_full(x->ctx, x->dtype, x->shape.ndim, x->shape.dims, *value, out);
}

kiln_status
kiln_tensor_empty_like(const kiln_tensor *x, kiln_tensor **out)
{
  return like("kiln_tensor_empty_like", x, NULL, out);
}

kiln_status
kiln_tensor_zeros_like(const kiln_tensor *x, kiln_tensor **out)
{
  kiln_scalar v = kiln_scalar_i64(0);
  return like("kiln_tensor_zeros_like", x, &v, out);
}

kiln_status
kiln_tensor_ones_like(const kiln_tensor *x, kiln_tensor **out)
{
  kiln_scalar v = kiln_scalar_i64(1);
  return like("kiln_tensor_ones_like", x, &v, out);
}

kiln_status
kiln_tensor_full_like(const kiln_tensor *x, kiln_scalar value, kiln_tensor **out)
{
  return like("kiln_tensor_full_like", x, &value, out);
}

static kiln_status
check_dtype(const char *op, kiln_dtype dtype)
{
  KILN_RETURN_IF(!kiln__dtype_valid(dtype), KILN_ERR_INVALID_ARGUMENT, op, "invalid dtype %d",
                 (int)dtype);
  return KILN_OK;
}

/* The dtypes whose values arange, linspace and logspace compute in floating point. */
static int
spaced_dtype(kiln_dtype dtype)
{
  return kiln__dtype_is_floating(dtype) || kiln__dtype_is_complex(dtype);
}

kiln_status
kiln_tensor_full_complex(kiln_context *ctx, kiln_dtype dtype, size_t ndim, const int64_t *shape,
                         kiln_complex128 value, kiln_tensor **out)
{
  static const char op[] = "kiln_tensor_full_complex";
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  *out = NULL;
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(check_dtype(op, dtype));
  KILN_RETURN_IF(!kiln__dtype_is_complex(dtype), KILN_ERR_DTYPE, op,
                 "dtype must be c64 or c128, not %s (kiln_tensor_full takes real values)",
                 kiln_dtype_name(dtype));
  KILN_RETURN_IF(dtype == KILN_C128 && !ctx->info.has_fp64, KILN_ERR_UNSUPPORTED, op,
                 "c128 needs fp64 support, which device \"%s\" lacks", ctx->info.name);
  kiln__shape s;
  KILN_TRY(kiln__shape_make(op, ndim, shape, kiln_dtype_size(dtype), &s, NULL, NULL));
  kiln_complex64 c64 = {(float)value.re, (float)value.im};
  const void *pattern = dtype == KILN_C64 ? (const void *)&c64 : (const void *)&value;
  kiln__ctx_lock(ctx);
  kiln_status st = kiln__tensor_new_locked(op, ctx, dtype, &s, out);
  if (st == KILN_OK && (*out)->nbytes) {
    cl_int err = clEnqueueFillBuffer(ctx->queue, (*out)->mem, pattern, kiln_dtype_size(dtype),
                                     (*out)->offset, (*out)->nbytes, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      st = kiln__fail_cl(op, err, "clEnqueueFillBuffer");
  }
  kiln__ctx_unlock(ctx);
  if (st != KILN_OK) {
    kiln_tensor_release(*out);
    *out = NULL;
  }
  return st;
}

/*
 * Prepares the output of shape dims (checked), enqueues kernel `name` with
 * (out, off, n) followed by extra arguments set by `more`, and unwinds on
 * failure.
 */
typedef void (*more_args_fn)(kiln__args *a, const void *data);

static kiln_status
fill_kernel(const char *op, kiln_context *ctx, kiln_dtype dtype, size_t ndim, const int64_t *dims,
            const char *name, more_args_fn more, const void *data, kiln_tensor **out)
{
  kiln__shape s;
  KILN_TRY(kiln__shape_make(op, ndim, dims, kiln_dtype_size(dtype), &s, NULL, NULL));
  int made;
  KILN_TRY(kiln__output_prepare(op, ctx, dtype, &s, out, &made));
  uint64_t n = (*out)->numel;
  kiln_status st = KILN_OK;
  kiln__ctx_lock(ctx);
  if (n) {
    cl_kernel k;
    st = kiln__ops_kernel(op, ctx, "create", dtype, name, &k);
    if (st == KILN_OK) {
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, *out);
      kiln__args_u64(&a, n);
      more(&a, data);
      st = a.status;
    }
    if (st == KILN_OK)
      st = kiln__launch_1d(op, ctx, k, n, 0);
  }
  kiln__ctx_unlock(ctx);
  if (st != KILN_OK)
    kiln__output_discard(out, made);
  return st;
}

/* The compute type of the float kernels: double with fp64, else float. */
struct ct_args {
  int fp64;
  int width; /* CT values per argument: 1, or 2 for the CT2 (complex) ones */
  double v[6];
  size_t nv;
  int has_flag;
  uint32_t flag;
  int has_base;
  double base;
};

/* One CT (width 1) or CT2 (width 2) argument from v[0 .. width). */
static void
ct_arg(kiln__args *a, int fp64, int width, const double *v)
{
  cl_double d[2];
  cl_float f[2];
  for (int i = 0; i < width; i++) {
    d[i] = v[i];
    f[i] = (float)v[i];
  }
  if (fp64)
    kiln__args_raw(a, (size_t)width * sizeof *d, d);
  else
    kiln__args_raw(a, (size_t)width * sizeof *f, f);
}

static void
more_ct(kiln__args *a, const void *data)
{
  const struct ct_args *c = data;
  int w = c->width ? c->width : 1;
  for (size_t i = 0; i + (size_t)w <= c->nv; i += (size_t)w)
    ct_arg(a, c->fp64, w, &c->v[i]);
  if (c->has_flag)
    kiln__args_u32(a, c->flag);
  if (c->has_base)
    ct_arg(a, c->fp64, 1, &c->base);
}

struct int_args {
  int64_t start, step;
};

static void
more_int(kiln__args *a, const void *data)
{
  const struct int_args *c = data;
  kiln__args_i64(a, c->start);
  kiln__args_i64(a, c->step);
}

static double
scalar_value(kiln_scalar s)
{
  return s.is_integer ? (double)s.i : s.f;
}

/* An integral int64 from a scalar, or INVALID_ARGUMENT. */
static kiln_status
scalar_integral(const char *op, const char *what, kiln_scalar s, int64_t *out)
{
  if (s.is_integer) {
    *out = s.i;
    return KILN_OK;
  }
  KILN_RETURN_IF(!(s.f == floor(s.f)) || s.f < -9223372036854775808.0 ||
                     s.f >= 9223372036854775808.0,
                 KILN_ERR_INVALID_ARGUMENT, op,
                 "%s %g is not an integer, which an integer dtype needs", what, s.f);
  *out = (int64_t)s.f;
  return KILN_OK;
}

kiln_status
kiln_arange(kiln_context *ctx, kiln_scalar start, kiln_scalar stop, kiln_scalar step,
            kiln_dtype dtype, kiln_tensor **out)
{
  static const char op[] = "kiln_arange";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(check_dtype(op, dtype));
  KILN_RETURN_IF(dtype == KILN_BOOL, KILN_ERR_DTYPE, op,
                 "arange does not accept bool (accepts every other dtype)");
  if (spaced_dtype(dtype)) {
    double a = scalar_value(start), b = scalar_value(stop), d = scalar_value(step);
    KILN_RETURN_IF(!isfinite(a) || !isfinite(b) || !isfinite(d), KILN_ERR_INVALID_ARGUMENT, op,
                   "start, stop and step must be finite (%g, %g, %g)", a, b, d);
    KILN_RETURN_IF(d == 0.0, KILN_ERR_INVALID_ARGUMENT, op, "step is 0");
    /*
     * An infinite quotient (it overflows double) describes no sequence: an
     * argument error. A finite one that no int64 or buffer holds is a size
     * limit. A range running away from stop is empty however long.
     */
    double len = ceil((b - a) / d);
    KILN_RETURN_IF(isinf(len) && len > 0, KILN_ERR_INVALID_ARGUMENT, op,
                   "the length (stop - start) / step is not finite (start %g, stop %g, step %g)", a,
                   b, d);
    KILN_RETURN_IF(len >= 9223372036854775808.0, KILN_ERR_OVERFLOW, op,
                   "length %g does not fit in int64", len);
    int64_t n = len > 0 ? (int64_t)len : 0;
    struct ct_args c = {.fp64 = ctx->info.has_fp64, .v = {a, d}, .nv = 2};
    return fill_kernel(op, ctx, dtype, 1, &n, "arange_float", more_ct, &c, out);
  }
  int64_t a = 0, b = 0, d = 0;
  KILN_TRY(scalar_integral(op, "start", start, &a));
  KILN_TRY(scalar_integral(op, "stop", stop, &b));
  KILN_TRY(scalar_integral(op, "step", step, &d));
  KILN_RETURN_IF(d == 0, KILN_ERR_INVALID_ARGUMENT, op, "step is 0");
  /* Differences in unsigned arithmetic: exact whenever the range is non-empty. */
  uint64_t n = 0;
  if (d > 0 && b > a)
    n = ((uint64_t)b - (uint64_t)a - 1) / (uint64_t)d + 1;
  else if (d < 0 && a > b)
    n = ((uint64_t)a - (uint64_t)b - 1) / (0 - (uint64_t)d) + 1;
  KILN_RETURN_IF(n > (uint64_t)INT64_MAX, KILN_ERR_OVERFLOW, op, "length is too large");
  int64_t len = (int64_t)n;
  struct int_args c = {a, d};
  return fill_kernel(op, ctx, dtype, 1, &len, "arange_int", more_int, &c, out);
}

/* The common checks of the spaced ops; dtypes lists the accepted ones for the message. */
static kiln_status
spaced_check(const char *op, kiln_context *ctx, int64_t n, kiln_dtype dtype, int ok,
             const char *dtypes, kiln_tensor **out)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(check_dtype(op, dtype));
  KILN_RETURN_IF(!ok, KILN_ERR_DTYPE, op, "%s does not accept %s (accepts %s)", op + 5,
                 kiln_dtype_name(dtype), dtypes);
  KILN_RETURN_IF(n < 0, KILN_ERR_INVALID_ARGUMENT, op, "n is negative (%lld)", (long long)n);
  return KILN_OK;
}

/* The step from start to stop in n values, or INVALID_ARGUMENT (what names the pair). */
static kiln_status
spaced_step(const char *op, const char *what, double start, double stop, int64_t n, int endpoint,
            double *step)
{
  KILN_RETURN_IF(!isfinite(start) || !isfinite(stop), KILN_ERR_INVALID_ARGUMENT, op,
                 "%s must be finite (%g, %g)", what, start, stop);
  int64_t div = endpoint ? n - 1 : n;
  *step = div > 0 ? (stop - start) / (double)div : 0.0;
  /* As arange's infinite length: start + i * step would be NaN or infinite from element 0. */
  KILN_RETURN_IF(!isfinite(*step), KILN_ERR_INVALID_ARGUMENT, op,
                 "the step (stop - start) / %s is not finite (%s %g, %g, n %lld)",
                 endpoint ? "(n - 1)" : "n", what, start, stop, (long long)n);
  return KILN_OK;
}

static kiln_status
spaced(const char *op, kiln_context *ctx, double start, double stop, int64_t n, int endpoint,
       const double *base, kiln_dtype dtype, kiln_tensor **out)
{
  KILN_TRY(
      spaced_check(op, ctx, n, dtype, spaced_dtype(dtype), "f16, bf16, f32, f64, c64, c128", out));
  KILN_RETURN_IF(base && !(*base > 0.0 && isfinite(*base)), KILN_ERR_INVALID_ARGUMENT, op,
                 "base must be positive and finite (%g)", *base);
  double step;
  KILN_TRY(spaced_step(op, "start and stop", start, stop, n, endpoint, &step));
  struct ct_args c = {.fp64 = ctx->info.has_fp64,
                      .v = {start, step, stop},
                      .nv = 3,
                      .has_flag = 1,
                      .flag = (uint32_t)(endpoint && n > 1),
                      .has_base = base != NULL,
                      .base = base ? *base : 0};
  return fill_kernel(op, ctx, dtype, 1, &n, base ? "logspace_values" : "linspace_values", more_ct,
                     &c, out);
}

kiln_status
kiln_linspace(kiln_context *ctx, double start, double stop, int64_t n, int endpoint,
              kiln_dtype dtype, kiln_tensor **out)
{
  return spaced("kiln_linspace", ctx, start, stop, n, endpoint, NULL, dtype, out);
}

kiln_status
kiln_linspace_complex(kiln_context *ctx, kiln_complex128 start, kiln_complex128 stop, int64_t n,
                      int endpoint, kiln_dtype dtype, kiln_tensor **out)
{
  static const char op[] = "kiln_linspace_complex";
  KILN_TRY(spaced_check(op, ctx, n, dtype, kiln__dtype_is_complex(dtype), "c64, c128", out));
  double re, im;
  KILN_TRY(
      spaced_step(op, "the real parts of start and stop", start.re, stop.re, n, endpoint, &re));
  KILN_TRY(spaced_step(op, "the imaginary parts of start and stop", start.im, stop.im, n, endpoint,
                       &im));
  /* Pairs of CT: (re, im) of start, step and last. */
  struct ct_args c = {.fp64 = ctx->info.has_fp64,
                      .width = 2,
                      .v = {start.re, start.im, re, im, stop.re, stop.im},
                      .nv = 6,
                      .has_flag = 1,
                      .flag = (uint32_t)(endpoint && n > 1)};
  return fill_kernel(op, ctx, dtype, 1, &n, "linspace_complex", more_ct, &c, out);
}

kiln_status
kiln_logspace(kiln_context *ctx, double start, double stop, int64_t n, int endpoint, double base,
              kiln_dtype dtype, kiln_tensor **out)
{
  return spaced("kiln_logspace", ctx, start, stop, n, endpoint, &base, dtype, out);
}

struct diag_args {
  uint64_t cols;
  int64_t k;
};

static void
more_diag(kiln__args *a, const void *data)
{
  const struct diag_args *c = data;
  kiln__args_u64(a, c->cols);
  kiln__args_i64(a, c->k);
}

static kiln_status
matrix(const char *op, kiln_context *ctx, int64_t rows, int64_t cols, int64_t k, kiln_dtype dtype,
       const char *kernel, kiln_tensor **out)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(check_dtype(op, dtype));
  KILN_RETURN_IF(rows < 0 || cols < 0, KILN_ERR_INVALID_ARGUMENT, op,
                 "rows and cols must be >= 0 (%lld, %lld)", (long long)rows, (long long)cols);
  int64_t dims[2] = {rows, cols};
  struct diag_args c = {(uint64_t)(cols ? cols : 1), k};
  return fill_kernel(op, ctx, dtype, 2, dims, kernel, more_diag, &c, out);
}

kiln_status
kiln_eye(kiln_context *ctx, int64_t rows, int64_t cols, int64_t k, kiln_dtype dtype,
         kiln_tensor **out)
{
  return matrix("kiln_eye", ctx, rows, cols, k, dtype, "eye_values", out);
}

kiln_status
kiln_tri(kiln_context *ctx, int64_t rows, int64_t cols, int64_t k, kiln_dtype dtype,
         kiln_tensor **out)
{
  return matrix("kiln_tri", ctx, rows, cols, k, dtype, "tri_values", out);
}

kiln_status
kiln_meshgrid(kiln_context *ctx, const kiln_tensor *const *inputs, size_t n,
              kiln_meshgrid_indexing indexing, kiln_tensor **outs)
{
  static const char op[] = "kiln_meshgrid";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!outs, KILN_ERR_INVALID_ARGUMENT, op, "outs is NULL");
  KILN_RETURN_IF(!inputs, KILN_ERR_INVALID_ARGUMENT, op, "inputs is NULL");
  KILN_RETURN_IF(n == 0 || n > KILN_MAX_DIMS, KILN_ERR_INVALID_ARGUMENT, op,
                 "needs 1 to %d inputs, got %zu", KILN_MAX_DIMS, n);
  KILN_RETURN_IF((unsigned)indexing > KILN_MESHGRID_IJ, KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown indexing %d", (int)indexing);
  int64_t dims[KILN_MAX_DIMS];
  for (size_t i = 0; i < n; i++) {
    KILN_TRY(kiln__tensor_check(op, inputs[i], ctx));
    KILN_RETURN_IF(inputs[i]->shape.ndim != 1, KILN_ERR_SHAPE, op,
                   "input %zu has %zu dimensions; meshgrid takes 1-D inputs", i,
                   inputs[i]->shape.ndim);
    KILN_RETURN_IF(inputs[i]->dtype != inputs[0]->dtype, KILN_ERR_DTYPE, op,
                   "input %zu is %s, input 0 is %s", i, kiln_dtype_name(inputs[i]->dtype),
                   kiln_dtype_name(inputs[0]->dtype));
    dims[i] = inputs[i]->shape.dims[0];
  }
  /* axis_of[i]: the result axis input i varies along. */
  size_t axis_of[KILN_MAX_DIMS];
  for (size_t i = 0; i < n; i++)
    axis_of[i] = i;
  if (indexing == KILN_MESHGRID_XY && n >= 2) {
    int64_t t = dims[0];
    dims[0] = dims[1];
    dims[1] = t;
    axis_of[0] = 1;
    axis_of[1] = 0;
  }
  kiln__shape s;
  KILN_TRY(kiln__shape_make(op, n, dims, kiln_dtype_size(inputs[0]->dtype), &s, NULL, NULL));
  /* Grids written one after another must not land on each other. */
  for (size_t i = 0; i < n; i++)
    if (outs[i])
      KILN_TRY(kiln__tensor_check(op, outs[i], ctx));
  KILN_TRY(kiln__ops_outputs_disjoint(op, outs, NULL, n));
  int made[KILN_MAX_DIMS] = {0};
  kiln_status st = KILN_OK;
  size_t i;
  for (i = 0; i < n && st == KILN_OK; i++) {
    /* Every input, not just input i: a later grid still reads its input. */
    kiln__out_target t;
    st = kiln__ops_out_begin(op, ctx, inputs[0]->dtype, &s, &outs[i], inputs, n, 0, &t);
    if (st != KILN_OK)
      break;
    made[i] = t.made;
    t.made = 0; /* unwound below for every grid at once */
    uint64_t total = outs[i]->numel, inner = 1;
    for (size_t d = axis_of[i] + 1; d < n; d++)
      inner *= (uint64_t)dims[d];
    kiln__ctx_lock(ctx);
    if (total) {
      cl_kernel k;
      st = kiln__ops_kernel(op, ctx, "create", kiln__ops_move_dtype(inputs[0]->dtype), "axis_bcast",
                            &k);
      if (st == KILN_OK) {
        kiln__args a = kiln__args_begin(op, k);
        kiln__args_tensor(&a, inputs[i]);
        kiln__args_tensor(&a, t.dst);
        kiln__args_u64(&a, total);
        kiln__args_u64(&a, (uint64_t)dims[axis_of[i]]);
        kiln__args_u64(&a, inner);
        st = a.status;
      }
      if (st == KILN_OK)
        st = kiln__launch_1d(op, ctx, k, total, 0);
    }
    st = kiln__ops_out_finish(op, ctx, &t, st);
    kiln__ctx_unlock(ctx);
  }
  if (st != KILN_OK)
    for (size_t j = 0; j < n; j++)
      kiln__output_discard(&outs[j], made[j]);
  return st;
}

static const struct kiln__source create_sources[] = {{"create", KILN__DT_EVERY}, {NULL, 0}};

const struct kiln__family kiln__create_family = {.name = "create", .sources = create_sources};
