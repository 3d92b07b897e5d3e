/*
 * nn family: softmax, log_softmax, layer_norm, rms_norm and their backward passes
 * (cl_kernels/nn_rows.cl), the helpers nn_loss.c shares, and the family descriptor.
 * Activations and losses are in nn_loss.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "core/shape.h"
#include "kiln/nn.h"
#include "ops/families.h"
#include "ops/nn_internal.h"
#include "ops/tuned.h"
#include "runtime/runtime.h"

/* Most work-groups a row launch asks for; the kernels loop over further blocks of rows. */
#define NN_MAX_GROUPS ((uint64_t)1 << 20)

kiln_dtype
kiln__nn_compute_dtype(kiln_dtype dtype)
{
  return kiln__dtype_is_half(dtype) ? KILN_F32 : dtype;
}

static size_t
tsize(kiln_dtype dtype)
{
  return kiln_dtype_size(kiln__nn_compute_dtype(dtype));
}

int
kiln_nn_supports(kiln_dtype dtype)
{
  return kiln__dtype_valid(dtype) && (KILN__NN_DTYPES & KILN__DT_BIT(dtype)) != 0;
}

kiln_status
kiln__nn_check_float(const char *op, kiln_context *ctx, const kiln_tensor *t)
{
  KILN_TRY(kiln__tensor_check(op, t, ctx));
  KILN_RETURN_IF(!(KILN__NN_DTYPES & KILN__DT_BIT(t->dtype)), KILN_ERR_DTYPE, op,
                 "dtype %s is not accepted (f16, bf16, f32 or f64)", kiln_dtype_name(t->dtype));
  return KILN_OK;
}

kiln_status
kiln__nn_check_like(const char *op, kiln_context *ctx, const kiln_tensor *t, const kiln_tensor *ref,
                    const char *what)
{
  KILN_TRY(kiln__tensor_check(op, t, ctx));
  KILN_RETURN_IF(t->dtype != ref->dtype, KILN_ERR_DTYPE, op, "%s is %s, expected %s", what,
                 kiln_dtype_name(t->dtype), kiln_dtype_name(ref->dtype));
  if (!kiln__shape_equal(&t->shape, &ref->shape)) {
    char a[128], b[128];
    return kiln__fail(KILN_ERR_SHAPE, op, 0, "%s has shape %s, expected %s", what,
                      kiln__shape_format(&t->shape, a, sizeof a),
                      kiln__shape_format(&ref->shape, b, sizeof b));
  }
  return KILN_OK;
}

kiln_status
kiln__nn_check_reduction(const char *op, kiln_reduction reduction)
{
  KILN_RETURN_IF((unsigned)reduction > KILN_REDUCTION_SUM, KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown reduction %d (none, mean or sum)", (int)reduction);
  return KILN_OK;
}

kiln_status
kiln__nn_check_grad_out(const char *op, kiln_context *ctx, const kiln_tensor *g, kiln_dtype dtype,
                        const kiln__shape *shape, kiln_reduction reduction)
{
  KILN_TRY(kiln__tensor_check(op, g, ctx));
  KILN_RETURN_IF(g->dtype != dtype, KILN_ERR_DTYPE, op, "grad_out is %s, expected %s",
                 kiln_dtype_name(g->dtype), kiln_dtype_name(dtype));
  char a[128], b[128];
  if (reduction == KILN_REDUCTION_NONE)
    KILN_RETURN_IF(!kiln__shape_equal(&g->shape, shape), KILN_ERR_SHAPE, op,
                   "grad_out has shape %s, expected %s (reduction none)",
                   kiln__shape_format(&g->shape, a, sizeof a),
                   kiln__shape_format(shape, b, sizeof b));
  else
    KILN_RETURN_IF(g->numel != 1, KILN_ERR_SHAPE, op,
                   "grad_out has shape %s, expected one element (a reduced loss)",
                   kiln__shape_format(&g->shape, a, sizeof a));
  return KILN_OK;
}

kiln_status
kiln__nn_finish(const char *op, kiln_context *ctx, kiln_dtype dtype, cl_mem a, cl_mem b, uint64_t n,
                kiln_tensor *out, double scale)
{
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__NN_ROWS, dtype, "nn_finish", &k));
  size_t local = kiln__launch_pow2_local(ctx, k);
  kiln__args args = kiln__args_begin(op, k);
  kiln__args_mem(&args, a);
  kiln__args_mem(&args, b);
  kiln__args_u64(&args, n);
  kiln__args_tensor(&args, out);
  kiln__args_float(&args, kiln__nn_compute_dtype(dtype), scale);
  kiln__args_u32(&args, b ? 1u : 0u);
  kiln__args_local(&args, local * tsize(dtype));
  kiln__args_local(&args, local * tsize(dtype));
  return kiln__args_enqueue_1d(&args, ctx, local, local);
}

/* ---------------------------------------------------------------- row launches */

void
kiln__nn_row_shape(kiln_context *ctx, cl_kernel k, const kiln__nn_knobs *kn, uint64_t rows,
                   uint64_t len, uint64_t inner, size_t *local, uint32_t *lpr)
{
  /* The kernel's limit as a power of two (the scratch trees need one); the tests' local
   * size hook fixes the local size. */
  size_t kmax = 0, max = 1;
  if (clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax,
                               NULL) != CL_SUCCESS ||
      kmax == 0)
    kmax = ctx->info.max_work_group_size ? ctx->info.max_work_group_size : 1;
  while (max * 2 <= kmax)
    max *= 2;
  if (kiln__launch_local_override)
    max = kiln__launch_local_override;
  size_t wg = kiln__launch_local_override ? max : kn->row_wg < max ? kn->row_wg : max;
  if (kn->row_cpu) {
    /* One row per work-item, in groups of rows that give each compute unit a few groups. */
    uint64_t cu = ctx->info.compute_units ? ctx->info.compute_units : 1, per = rows / (4 * cu);
    size_t g = 1;
    while (g * 2 <= per && g * 2 <= wg)
      g *= 2;
    *local = kiln__launch_local_override ? wg : g;
    *lpr = 1;
    return;
  }
  uint64_t per = kn->row_items ? (len + kn->row_items - 1) / kn->row_items : len;
  uint32_t p = 1;
  while (p < per && p < max)
    p *= 2;
  if (inner > 1)
    p = 1;
  /* Streamed rows (row_items 0) fit any group: no reason to grow it. */
  if (kn->row_items && p > wg)
    wg = p;
  *local = wg;
  *lpr = p < wg ? p : (uint32_t)wg;
}

void
kiln__nn_row_cache_args(kiln__args *a, kiln_context *ctx, const kiln__nn_knobs *kn,
                        kiln_dtype dtype, size_t local, uint32_t lpr, uint64_t len, unsigned nbuf,
                        unsigned nscratch)
{
  size_t ts = tsize(dtype);
  uint64_t nch = 0, lanes = lpr & ~((uint32_t)1 << 31);
  if (!kn->row_items && kn->row_local && lanes) {
    uint64_t want = (len + 4 * lanes - 1) / (4 * lanes), step = (uint64_t)nbuf * local * 4 * ts;
    uint64_t budget = (uint64_t)kn->row_local * 1024, scratch = (uint64_t)nscratch * local * ts;
    uint64_t avail = ctx->info.local_mem_bytes > scratch ? ctx->info.local_mem_bytes - scratch : 0;
    if (budget > avail)
      budget = avail;
    nch = budget / step < want ? budget / step : want;
  }
  kiln__args_u32(a, (uint32_t)nch);
  kiln__args_local(a, nch ? nch * nbuf * local * 4 * ts : 4 * ts);
}

kiln_status
kiln__nn_row_enqueue(const kiln__args *a, kiln_context *ctx, size_t local, uint32_t lpr,
                     uint64_t rows)
{
  if (a->status != KILN_OK || rows == 0)
    return a->status;
  lpr &= ~((uint32_t)1 << 31); /* kiln__nn_row_vec's bit */
  uint64_t rpg = local / lpr, groups = (rows + rpg - 1) / rpg;
  if (groups > NN_MAX_GROUPS)
    groups = NN_MAX_GROUPS;
  return kiln__args_enqueue_1d(a, ctx, (size_t)(groups * local), local);
}

uint32_t
kiln__nn_row_vec(const kiln__nn_knobs *k, uint64_t len, uint64_t inner,
                 const kiln_tensor *const *ts, size_t n)
{
  if ((!k->row_items && !k->row_local) || inner != 1 || len % 4)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (ts[i] && (ts[i]->offset / kiln_dtype_size(ts[i]->dtype)) % 4)
      return 0;
  return (uint32_t)1 << 31;
}

/* A row kernel, its local size and lanes per row (with kiln__nn_row_vec's bit for the operands
 * ts), and the knobs it was built with. */
typedef struct {
  cl_kernel k;
  size_t local;
  uint32_t lpr;
  kiln__nn_knobs kn;
} row_kernel;

static void
row_cache_args(kiln__args *a, kiln_context *ctx, const row_kernel *rk, kiln_dtype dtype,
               uint64_t len, unsigned nbuf, unsigned nscratch)
{
  kiln__nn_row_cache_args(a, ctx, &rk->kn, dtype, rk->local, rk->lpr, len, nbuf, nscratch);
}

static kiln_status
row_kernel_get(const char *op, kiln_context *ctx, kiln_dtype dtype, const char *name, uint64_t rows,
               uint64_t len, uint64_t inner, const kiln_tensor *const *ts, size_t nts,
               row_kernel *rk)
{
  kiln__nn_knobs_get(ctx, dtype, &rk->kn);
  KILN_TRY(kiln__nn_kernel(op, ctx, KILN__NN_ROWS, dtype, &rk->kn, name, &rk->k));
  kiln__nn_row_shape(ctx, rk->k, &rk->kn, rows, len, inner, &rk->local, &rk->lpr);
  rk->lpr |= kiln__nn_row_vec(&rk->kn, len, inner, ts, nts);
  return KILN_OK;
}

/* ---------------------------------------------------------------- softmax */

static kiln_status
check_out_ptr(const char *op, kiln_context *ctx, kiln_tensor **out)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  return KILN_OK;
}

/* rows, len and inner of a softmax along axis ax. */
static void
axis_geometry(const kiln__shape *s, size_t ax, uint64_t *rows, uint64_t *len, uint64_t *inner)
{
  uint64_t outer = 1, in = 1;
  for (size_t i = 0; i < ax; i++)
    outer *= (uint64_t)s->dims[i];
  for (size_t i = ax + 1; i < s->ndim; i++)
    in *= (uint64_t)s->dims[i];
  *len = (uint64_t)s->dims[ax];
  *inner = in;
  *rows = outer * in;
}

/*
 * The shared body of the softmax kernels: forward (bwd 0, y is the input x, grad unused) or
 * backward (y the forward output, grad its gradient); the forward kernel takes one more scratch
 * array.
 */
static kiln_status
softmax_run(const char *op, kiln_context *ctx, int bwd, const kiln_tensor *grad,
            const kiln_tensor *y, int64_t axis, uint32_t logmode, kiln_tensor **out)
{
  KILN_TRY(check_out_ptr(op, ctx, out));
  KILN_TRY(kiln__nn_check_float(op, ctx, y));
  if (bwd)
    KILN_TRY(kiln__nn_check_like(op, ctx, grad, y, "grad"));
  size_t ax;
  KILN_TRY(kiln__ops_axis(op, axis, y->shape.ndim, &ax));
  uint64_t rows, len, inner;
  axis_geometry(&y->shape, ax, &rows, &len, &inner);
  const kiln_tensor *ins[2] = {grad, y};
  const kiln_tensor *const *in = bwd ? ins : ins + 1;
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, y->dtype, &y->shape, out, in, bwd ? 2 : 1, 1, &t));
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  if (y->numel) {
    row_kernel rk;
    const kiln_tensor *ops[3] = {grad, y, t.dst};
    s = row_kernel_get(op, ctx, y->dtype, bwd ? "softmax_bwd" : "softmax_fwd", rows, len, inner,
                       ops, 3, &rk);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, rk.k);
      if (bwd)
        kiln__args_tensor(&a, grad);
      kiln__args_tensor(&a, y);
      kiln__args_tensor(&a, t.dst);
      kiln__args_u64(&a, rows);
      kiln__args_u64(&a, len);
      kiln__args_u64(&a, inner);
      kiln__args_u32(&a, rk.lpr);
      kiln__args_u32(&a, logmode);
      for (int i = 0; i < (bwd ? 1 : 2); i++)
        kiln__args_local(&a, rk.local * tsize(y->dtype));
      row_cache_args(&a, ctx, &rk, y->dtype, len, bwd ? 2 : 1, bwd ? 1 : 2);
      s = kiln__nn_row_enqueue(&a, ctx, rk.local, rk.lpr, rows);
    }
  }
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_softmax(kiln_context *ctx, const kiln_tensor *x, int64_t axis, kiln_tensor **out)
{
  return softmax_run("kiln_softmax", ctx, 0, NULL, x, axis, 0, out);
}

kiln_status
kiln_log_softmax(kiln_context *ctx, const kiln_tensor *x, int64_t axis, kiln_tensor **out)
{
  return softmax_run("kiln_log_softmax", ctx, 0, NULL, x, axis, 1, out);
}

kiln_status
kiln_softmax_backward(kiln_context *ctx, const kiln_tensor *grad, const kiln_tensor *y,
                      int64_t axis, kiln_tensor **grad_in)
{
  return softmax_run("kiln_softmax_backward", ctx, 1, grad, y, axis, 0, grad_in);
}

kiln_status
kiln_log_softmax_backward(kiln_context *ctx, const kiln_tensor *grad, const kiln_tensor *y,
                          int64_t axis, kiln_tensor **grad_in)
{
  return softmax_run("kiln_log_softmax_backward", ctx, 1, grad, y, axis, 1, grad_in);
}

/* ---------------------------------------------------------------- layer_norm, rms_norm */

/* Flags of the norm kernels (cl_kernels/nn_rows.cl). */
enum {
  NORM_W = 1,
  NORM_B = 2,
  NORM_RMS = 4,
  NORM_MEAN = 8,
  NORM_RSTD = 16,
  NORM_DW = 32,
  NORM_DB = 64,
};

/* The rows, row length and shapes of a normalisation over the trailing axes [axis, ndim). */
typedef struct {
  uint64_t rows, len;
  kiln__shape stats;  /* x.shape[0:axis] */
  kiln__shape params; /* x.shape[axis:] */
} norm_geo;

static kiln_status
norm_geometry(const char *op, const kiln_tensor *x, int64_t axis, norm_geo *g)
{
  size_t ax;
  KILN_TRY(kiln__ops_axis(op, axis, x->shape.ndim, &ax));
  memset(g, 0, sizeof *g);
  g->rows = 1;
  g->len = 1;
  g->stats.ndim = ax;
  g->params.ndim = x->shape.ndim - ax;
  for (size_t i = 0; i < x->shape.ndim; i++) {
    if (i < ax) {
      g->rows *= (uint64_t)x->shape.dims[i];
      g->stats.dims[i] = x->shape.dims[i];
    } else {
      g->len *= (uint64_t)x->shape.dims[i];
      g->params.dims[i - ax] = x->shape.dims[i];
    }
  }
  KILN_RETURN_IF(g->len == 0, KILN_ERR_SHAPE, op, "the normalised axes [%zu, %zu) hold no element",
                 ax, x->shape.ndim);
  return KILN_OK;
}

/* An optional per-row (n = rows) or per-column (n = len) operand of x's dtype. */
static kiln_status
check_vec(const char *op, kiln_context *ctx, const kiln_tensor *v, const kiln_tensor *x, uint64_t n,
          const char *what)
{
  if (!v)
    return KILN_OK;
  KILN_TRY(kiln__tensor_check(op, v, ctx));
  KILN_RETURN_IF(v->dtype != x->dtype, KILN_ERR_DTYPE, op, "%s is %s, expected %s", what,
                 kiln_dtype_name(v->dtype), kiln_dtype_name(x->dtype));
  KILN_RETURN_IF(v->numel != n, KILN_ERR_SHAPE, op, "%s has %llu elements, expected %llu", what,
                 (unsigned long long)v->numel, (unsigned long long)n);
  return KILN_OK;
}

static kiln_status
check_eps(const char *op, double eps)
{
  KILN_RETURN_IF(!(eps >= 0), KILN_ERR_INVALID_ARGUMENT, op, "eps %g must be >= 0", eps);
  return KILN_OK;
}

static kiln_status
norm_forward(const char *op, kiln_context *ctx, const kiln_tensor *x, int64_t axis,
             const kiln_tensor *w, const kiln_tensor *b, double eps, int rms, kiln_tensor **out,
             kiln_tensor **mean, kiln_tensor **rstd)
{
  KILN_TRY(check_out_ptr(op, ctx, out));
  KILN_TRY(kiln__nn_check_float(op, ctx, x));
  norm_geo g;
  KILN_TRY(norm_geometry(op, x, axis, &g));
  KILN_TRY(check_vec(op, ctx, w, x, g.len, "weight"));
  KILN_TRY(check_vec(op, ctx, b, x, g.len, "bias"));
  KILN_TRY(check_eps(op, eps));
  kiln_tensor **outs[3] = {out, mean, rstd};
  static const char *const names[3] = {"out", "mean", "rstd"};
  KILN_TRY(kiln__ops_outs_check(op, ctx, outs, names, 3));
  const kiln__shape *shapes[3] = {&x->shape, &g.stats, &g.stats};
  const kiln_tensor *ins[3] = {x, w, b};
  kiln__out_target t[3];
  KILN_TRY(kiln__ops_outs_begin(op, ctx, (const kiln_dtype[3]){x->dtype, x->dtype, x->dtype},
                                shapes, outs, ins, 3, 3, 1, t));
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  if (x->numel) {
    row_kernel rk;
    const kiln_tensor *ops[4] = {x, w, b, t[0].dst};
    s = row_kernel_get(op, ctx, x->dtype, "norm_fwd", g.rows, g.len, 1, ops, 4, &rk);
    if (s == KILN_OK) {
      uint32_t flags = (w ? NORM_W : 0) | (b ? NORM_B : 0) | (rms ? NORM_RMS : 0) |
                       (mean ? NORM_MEAN : 0) | (rstd ? NORM_RSTD : 0);
      kiln__args a = kiln__args_begin(op, rk.k);
      kiln__args_tensor(&a, x);
      kiln__args_tensor(&a, w);
      kiln__args_tensor(&a, b);
      kiln__args_tensor(&a, t[0].dst);
      kiln__args_tensor(&a, mean ? t[1].dst : NULL);
      kiln__args_tensor(&a, rstd ? t[2].dst : NULL);
      kiln__args_u64(&a, g.rows);
      kiln__args_u64(&a, g.len);
      kiln__args_float(&a, kiln__nn_compute_dtype(x->dtype), eps);
      kiln__args_u32(&a, rk.lpr);
      kiln__args_u32(&a, flags);
      for (int i = 0; i < 3; i++)
        kiln__args_local(&a, rk.local * tsize(x->dtype));
      row_cache_args(&a, ctx, &rk, x->dtype, g.len, 1, 3);
      s = kiln__nn_row_enqueue(&a, ctx, rk.local, rk.lpr, g.rows);
    }
  }
  s = kiln__ops_outs_finish(op, ctx, outs, 3, t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_layer_norm(kiln_context *ctx, const kiln_tensor *x, int64_t axis, const kiln_tensor *weight,
                const kiln_tensor *bias, double eps, kiln_tensor **out, kiln_tensor **mean,
                kiln_tensor **rstd)
{
  return norm_forward("kiln_layer_norm", ctx, x, axis, weight, bias, eps, 0, out, mean, rstd);
}

kiln_status
kiln_rms_norm(kiln_context *ctx, const kiln_tensor *x, int64_t axis, const kiln_tensor *weight,
              double eps, kiln_tensor **out, kiln_tensor **rstd)
{
  return norm_forward("kiln_rms_norm", ctx, x, axis, weight, NULL, eps, 1, out, NULL, rstd);
}

/* Column sums of the weight and bias gradients: chunks of rows, then a sum over chunks. */
static kiln_status
norm_param_grads(const char *op, kiln_context *ctx, const kiln_tensor *grad, const kiln_tensor *x,
                 const kiln_tensor *mean, const kiln_tensor *rstd, const norm_geo *g,
                 uint32_t flags, kiln_tensor *dw, kiln_tensor *db)
{
  /* Enough chunks for about 2^col_items work-items, each summing rows / nchunk rows; the CPU
   * forms (row_cpu: a work-item per band of KILN__NN_COL_BAND 64-byte vectors of columns,
   * nn_rows_cpu.clh's NC_BAND) for about four per compute unit. */
  kiln__nn_knobs kn;
  kiln__nn_knobs_get(ctx, x->dtype, &kn);
  uint64_t strip = KILN__NN_COL_BAND * kiln__nn_vw64(x->dtype), nb = (g->len + strip - 1) / strip;
  uint64_t cu = ctx->info.compute_units ? ctx->info.compute_units : 1;
  uint64_t nchunk = kn.row_cpu ? 4 * cu / nb : ((uint64_t)1 << kn.col_items) / g->len;
  if (nchunk > g->rows)
    nchunk = g->rows;
  if (nchunk < 1)
    nchunk = 1;
  kiln__ops_tmp part;
  KILN_TRY(kiln__ops_tmp_alloc(ctx, 2 * nchunk * g->len * tsize(x->dtype), &part));
  cl_kernel k;
  kiln_status s = kiln__nn_kernel(op, ctx, KILN__NN_ROWS, x->dtype, &kn, "norm_cols", &k);
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, grad);
    kiln__args_tensor(&a, x);
    kiln__args_tensor(&a, mean);
    kiln__args_tensor(&a, rstd);
    kiln__args_mem(&a, part.mem);
    kiln__args_u64(&a, g->rows);
    kiln__args_u64(&a, g->len);
    kiln__args_u64(&a, nchunk);
    kiln__args_u32(&a, flags);
    s = kiln__args_launch_1d(&a, ctx, nchunk * (kn.row_cpu ? nb : g->len), 0);
  }
  if (s == KILN_OK)
    s = kiln__nn_kernel(op, ctx, KILN__NN_ROWS, x->dtype, &kn, "norm_cols_finish", &k);
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_mem(&a, part.mem);
    kiln__args_u64(&a, nchunk);
    kiln__args_u64(&a, g->len);
    kiln__args_tensor(&a, dw);
    kiln__args_tensor(&a, db);
    kiln__args_u32(&a, flags);
    s = kiln__args_launch_1d(&a, ctx, g->len, 0);
  }
  kiln__ops_tmp_free(ctx, &part);
  return s;
}

static kiln_status
norm_backward(const char *op, kiln_context *ctx, const kiln_tensor *grad, const kiln_tensor *x,
              const kiln_tensor *mean, const kiln_tensor *rstd, const kiln_tensor *w, int64_t axis,
              int rms, kiln_tensor **gx, kiln_tensor **gw, kiln_tensor **gb)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(kiln__nn_check_float(op, ctx, x));
  KILN_TRY(kiln__nn_check_like(op, ctx, grad, x, "grad"));
  norm_geo g;
  KILN_TRY(norm_geometry(op, x, axis, &g));
  if (!rms) {
    KILN_RETURN_IF(!mean, KILN_ERR_INVALID_HANDLE, op, "mean is NULL");
    KILN_TRY(check_vec(op, ctx, mean, x, g.rows, "mean"));
  }
  KILN_RETURN_IF(!rstd, KILN_ERR_INVALID_HANDLE, op, "rstd is NULL");
  KILN_TRY(check_vec(op, ctx, rstd, x, g.rows, "rstd"));
  KILN_TRY(check_vec(op, ctx, w, x, g.len, "weight"));
  kiln_tensor **outs[3] = {gx, gw, gb};
  static const char *const names[3] = {"grad_x", "grad_weight", "grad_bias"};
  KILN_TRY(kiln__ops_outs_check(op, ctx, outs, names, 3));
  const kiln__shape *shapes[3] = {&x->shape, &g.params, &g.params};
  const kiln_tensor *ins[5] = {grad, x, mean, rstd, w};
  kiln__out_target t[3];
  KILN_TRY(kiln__ops_outs_begin(op, ctx, (const kiln_dtype[3]){x->dtype, x->dtype, x->dtype},
                                shapes, outs, ins, 5, 3, 1, t));
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  uint32_t base = (w ? NORM_W : 0) | (rms ? NORM_RMS : 0);
  /* Parameter gradients first: grad_x may be written over grad or x. */
  if (gw || gb)
    s = norm_param_grads(op, ctx, grad, x, mean, rstd, &g,
                         base | (gw ? NORM_DW : 0) | (gb ? NORM_DB : 0), gw ? t[1].dst : NULL,
                         gb ? t[2].dst : NULL);
  if (s == KILN_OK && gx && x->numel) {
    row_kernel rk;
    const kiln_tensor *ops[4] = {grad, x, w, t[0].dst};
    s = row_kernel_get(op, ctx, x->dtype, "norm_bwd", g.rows, g.len, 1, ops, 4, &rk);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, rk.k);
      kiln__args_tensor(&a, grad);
      kiln__args_tensor(&a, x);
      kiln__args_tensor(&a, w);
      kiln__args_tensor(&a, mean);
      kiln__args_tensor(&a, rstd);
      kiln__args_tensor(&a, t[0].dst);
      kiln__args_u64(&a, g.rows);
      kiln__args_u64(&a, g.len);
      kiln__args_u32(&a, rk.lpr);
      kiln__args_u32(&a, base);
      kiln__args_local(&a, rk.local * tsize(x->dtype));
      kiln__args_local(&a, rk.local * tsize(x->dtype));
      row_cache_args(&a, ctx, &rk, x->dtype, g.len, 2, 2);
      s = kiln__nn_row_enqueue(&a, ctx, rk.local, rk.lpr, g.rows);
    }
  }
  s = kiln__ops_outs_finish(op, ctx, outs, 3, t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_layer_norm_backward(kiln_context *ctx, const kiln_tensor *grad, const kiln_tensor *x,
                         const kiln_tensor *mean, const kiln_tensor *rstd,
                         const kiln_tensor *weight, int64_t axis, kiln_tensor **grad_x,
                         kiln_tensor **grad_weight, kiln_tensor **grad_bias)
{
  return norm_backward("kiln_layer_norm_backward", ctx, grad, x, mean, rstd, weight, axis, 0,
                       grad_x, grad_weight, grad_bias);
}

kiln_status
kiln_rms_norm_backward(kiln_context *ctx, const kiln_tensor *grad, const kiln_tensor *x,
                       const kiln_tensor *rstd, const kiln_tensor *weight, int64_t axis,
                       kiln_tensor **grad_x, kiln_tensor **grad_weight)
{
  return norm_backward("kiln_rms_norm_backward", ctx, grad, x, NULL, rstd, weight, axis, 1, grad_x,
                       grad_weight, NULL);
}

/* ---------------------------------------------------------------- family */

kiln__nn_knob_override kiln__nn_test_knobs = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1};

/*
 * The device defaults (docs/nn.md, "Launch knobs"). GPUs: 32 bytes per work-item in the flat
 * kernels, 4-byte types as two 4-vectors (H200, 2^26 f32, ms: gelu 0.136 against 0.152 with 8
 * scalars, gelu_bwd 0.193 against 0.211, gelu_tanh 0.138 against 0.147, silu 0.138 against
 * 0.144, relu 0.136 against 0.133; faster for all five at 2^22; bench/h200/act.sh, session
 * 17), 4 doubles (the elementwise family's default; 4-vectors of doubles lost), 8 halves;
 * kiln's erfc (f32: 0.164 ms against 0.300 ms with
 * OpenCL's), rows in groups of 256 held in a local cache of up to 32 KiB (H200, 2026-12-02,
 * 16384 x 4096 f32, ms: softmax 0.159 against 0.397 streamed and 0.441 with 16 per lane in
 * registers, layer_norm 0.175 against 0.347 and 0.432, cross_entropy 0.175 against 0.316;
 * groups of 512 and 1024 within 1%; the register caches' kernels take so many registers that
 * the 16-per-lane form lost everywhere, and lost further under a 64-register cap). CPUs: the
 * activations on whole vectors of 64 bytes (16 floats, 8 doubles: nn_act.cl's vector math),
 * where the scalar grid-stride loop ran element by element, and the row kernels' CPU forms,
 * one work-item per row in the same vectors (row_cpu), where the lanes' trees and barriers ran
 * element by element too (PoCL, 2 cores, ms at 2^18, PyTorch 2.15's CPU build on the same
 * cores beside it, docs/perf-data/pocl-2026-12-05-s26: gelu f32 1.57 -> 0.18 against 0.031,
 * relu 0.050 -> 0.018 against 0.012, gelu f64 3.41 -> 0.38 against 0.23, softmax f32 1.16 ->
 * 0.085 against 0.053, layer_norm 0.35 -> 0.041 against 0.037; docs/nn.md, "CPU devices").
 * row_wg 0 stands for the context's work-group size.
 */
static void
nn_default_knobs(const kiln_device_info *info, kiln_dtype dtype, kiln__nn_knobs *k)
{
  const size_t esz = kiln_dtype_size(dtype);
  k->act_items = !info->is_gpu ? 1 : esz == 4 ? 2 : esz < 4 ? 8 : 4;
  k->erf = 1;
  k->fast = 0;
  k->act_vec = info->is_gpu ? (esz == 4 ? 4 : 1) : kiln__nn_vw64(dtype);
  k->row_items = info->is_gpu ? 0 : 16;
  k->row_wg = info->is_gpu ? 256 : 0;
  k->verbose = 0;
  k->maxreg = 0;
  k->row_local = info->is_gpu ? 32 : 0;
  k->col_items = 17;
  k->row_cpu = !info->is_gpu;
}

static int
knob_valid(const char *name, unsigned long v)
{
  if (strcmp(name, "act_items") == 0)
    return v == 1 || v == 2 || v == 4 || v == 8;
  if (strcmp(name, "act_vec") == 0)
    return v == 1 || v == 4 || v == 8 || v == 16;
  if (strcmp(name, "erf") == 0 || strcmp(name, "fast") == 0)
    return v <= 1;
  if (strcmp(name, "row_items") == 0)
    return v == 0 || v == 4 || v == 8 || v == 16;
  if (strcmp(name, "row_wg") == 0)
    return v >= 1 && v <= 1024 && (v & (v - 1)) == 0;
  if (strcmp(name, "verbose") == 0)
    return v <= 1;
  if (strcmp(name, "row_local") == 0)
    return v <= 64;
  if (strcmp(name, "col_items") == 0)
    return v <= 22;
  if (strcmp(name, "row_cpu") == 0)
    return v <= 1;
  if (strcmp(name, "maxreg") == 0)
    return v == 0 || v == 32 || v == 40 || v == 48 || v == 64 || v == 96 || v == 128;
  return 0;
}

static void
knob_set(kiln__nn_knobs *k, const char *name, uint32_t v)
{
  if (strcmp(name, "act_items") == 0)
    k->act_items = v;
  else if (strcmp(name, "erf") == 0)
    k->erf = v;
  else if (strcmp(name, "fast") == 0)
    k->fast = v;
  else if (strcmp(name, "act_vec") == 0)
    k->act_vec = v;
  else if (strcmp(name, "row_items") == 0)
    k->row_items = v;
  else if (strcmp(name, "verbose") == 0)
    k->verbose = v;
  else if (strcmp(name, "maxreg") == 0)
    k->maxreg = v;
  else if (strcmp(name, "row_local") == 0)
    k->row_local = v;
  else if (strcmp(name, "col_items") == 0)
    k->col_items = v;
  else if (strcmp(name, "row_cpu") == 0)
    k->row_cpu = v;
  else
    k->row_wg = v;
}

/* KILN_DEBUG_NN's valid name=value entries over k; others are skipped with a warning. */
static void
knobs_from_env(kiln__nn_knobs *k)
{
  const char *e = kiln__env(KILN__ENV_DEBUG_NN);
  while (e && *e) {
    size_t n = strcspn(e, ",");
    char item[48], *end = NULL;
    if (n < sizeof item) {
      memcpy(item, e, n);
      item[n] = '\0';
      char *eq = strchr(item, '=');
      if (eq) {
        *eq = '\0';
        unsigned long v = strtoul(eq + 1, &end, 10);
        if (end != eq + 1 && *end == '\0' && knob_valid(item, v))
          knob_set(k, item, (uint32_t)v);
        else
          end = NULL;
      }
    }
    if (!end)
      kiln__log(
          KILN__LOG_WARN,
          "KILN_DEBUG_NN: ignoring '%.*s' (act_items=1|2|4|8, act_vec=1|4|8|16, erf=0|1, fast=0|1, "
          "row_items=0|4|8|16, row_wg=a power of two up to 1024, verbose=0|1, "
          "maxreg=0|32|40|48|64|96|128, row_local=KiB 0-64, col_items=0-22, row_cpu=0|1)",
          (int)n, e);
    e += n;
    if (*e == ',')
      e++;
  }
}

void
kiln__nn_knobs_get(const kiln_context *ctx, kiln_dtype dtype, kiln__nn_knobs *k)
{
  nn_default_knobs(&ctx->info, dtype, k);
  knobs_from_env(k);
  const kiln__nn_knob_override *o = &kiln__nn_test_knobs;
  const char *names[10] = {"act_items", "erf",    "row_items", "row_wg",    "fast",
                           "act_vec",   "maxreg", "row_local", "col_items", "row_cpu"};
  const int32_t vals[10] = {o->act_items, o->erf,    o->row_items, o->row_wg,    o->fast,
                            o->act_vec,   o->maxreg, o->row_local, o->col_items, o->row_cpu};
  for (int i = 0; i < 10; i++)
    if (vals[i] >= 0 && knob_valid(names[i], (unsigned long)vals[i]))
      knob_set(k, names[i], (uint32_t)vals[i]);
  if (k->row_wg == 0)
    k->row_wg = (uint32_t)ctx->wg_size;
}

/*
 * KILN_DEBUG_NN=verbose=1: once per kernel object, its private memory per work-item (spilled
 * registers and arrays placed in off-chip memory count there) and, from a fresh build (an
 * empty KILN_CACHE_DIR) on NVIDIA, the build log with ptxas' register and spill report
 * (-cl-nv-verbose). A debug aid for choosing the row kernels' caches on a GPU.
 */
static void
log_kernel(kiln_context *ctx, cl_kernel k, const char *source, kiln_dtype dtype,
           const kiln__nn_knobs *kn, const char *name)
{
  static cl_kernel seen[256];
  static size_t nseen;
  for (size_t i = 0; i < nseen; i++)
    if (seen[i] == k)
      return;
  if (nseen < sizeof seen / sizeof seen[0])
    seen[nseen++] = k;
  cl_ulong priv = 0;
  size_t wg = 0;
  clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof priv, &priv, NULL);
  clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
  kiln__log(KILN__LOG_WARN, "nn %s %s %s row_items=%u act_items=%u: private %llu bytes, max wg %zu",
            source, kiln_dtype_name(dtype), name, kn->row_items, kn->act_items,
            (unsigned long long)priv, wg);
  cl_program prog = NULL;
  size_t len = 0;
  if (clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof prog, &prog, NULL) != CL_SUCCESS ||
      clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &len) != CL_SUCCESS ||
      len < 2)
    return;
  char *log = malloc(len + 1);
  if (log && clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, len, log, NULL) ==
                 CL_SUCCESS) {
    log[len] = '\0';
    /* Only this kernel's lines of ptxas' report (from "entry function 'NAME'": stack, spills,
     * registers). */
    char key[96];
    snprintf(key, sizeof key, "entry function '%s'", name);
    const char *at = strstr(log, key);
    if (at)
      kiln__log(KILN__LOG_WARN, "nn %s ptxas: %.400s", name, at);
  }
  free(log);
}

kiln_status
kiln__nn_kernel(const char *op, kiln_context *ctx, const char *source, kiln_dtype dtype,
                const kiln__nn_knobs *k, const char *name, cl_kernel *out)
{
  kiln__program_variant v;
  memset(&v, 0, sizeof v);
  v.nn_items = k->act_items;
  v.nn_erf = k->erf + 1;
  v.nn_fast = k->fast + 1;
  v.nn_vec = k->act_vec;
  v.nn_row_items = k->row_items + 1;
  v.nn_verbose = k->verbose;
  v.nn_maxreg = k->maxreg;
  v.nn_row_cpu = k->row_cpu + 1;
  KILN_TRY(kiln__ops_kernel_variant(op, ctx, source, dtype, &v, name, out));
  if (k->verbose)
    log_kernel(ctx, *out, source, dtype, k, name);
  return KILN_OK;
}

static void
nn_build_options(const kiln_device_info *info, const char *source, kiln_dtype dtype,
                 const void *variant, char *buf, size_t len)
{
  const kiln__program_variant *v = variant;
  kiln__nn_knobs k;
  nn_default_knobs(info, dtype, &k);
  if (v && v->nn_items)
    k.act_items = v->nn_items;
  if (v && v->nn_erf)
    k.erf = v->nn_erf - 1;
  if (v && v->nn_fast)
    k.fast = v->nn_fast - 1;
  if (v && v->nn_vec)
    k.act_vec = v->nn_vec;
  if (v && v->nn_row_items)
    k.row_items = v->nn_row_items - 1;
  if (v && v->nn_row_cpu)
    k.row_cpu = v->nn_row_cpu - 1;
  if (v && v->nn_verbose && strstr(info->vendor, "NVIDIA"))
    kiln__options_append(buf, len, " -cl-nv-verbose");
  if (v && v->nn_maxreg)
    k.maxreg = v->nn_maxreg;
  /* NVIDIA's register cap (its compiler's option; other devices have none to take). */
  if (k.maxreg && strstr(info->vendor, "NVIDIA"))
    kiln__options_append(buf, len, " -cl-nv-maxrregcount=%u", k.maxreg);
  /* The kernels' own defaults (1 item, kiln's erfc, streamed rows) add no option. */
  if (strcmp(source, KILN__NN_ACT) == 0) {
    if (k.act_items != 1)
      kiln__options_append(buf, len, " -DKILN_NN_ITEMS=%u", k.act_items);
    if (k.erf != 1)
      kiln__options_append(buf, len, " -DKILN_NN_ERF=%u", k.erf);
    if (k.fast && dtype != KILN_F64)
      kiln__options_append(buf, len, " -DKILN_NN_FAST=1");
    if (k.act_vec != 1)
      kiln__options_append(buf, len, " -DKILN_NN_VEC=%u", k.act_vec);
    /* kiln's own branch-free exp for doubles on CPU devices (exp64.clh), as the elementwise
     * family's */
    if (dtype == KILN_F64 && !info->is_gpu)
      kiln__options_append(buf, len, " -DKILN_EXP64=1");
  } else if (strcmp(source, KILN__NN_ROWS) == 0) {
    if (k.row_items != 0)
      kiln__options_append(buf, len, " -DKILN_NN_ROW_ITEMS=%u", k.row_items);
    if (k.row_cpu)
      kiln__options_append(buf, len, " -DKILN_NN_ROW_CPU=1");
    /* The CPU forms' exps of doubles: kiln's own, as the activations' (nn_rows_cpu.clh). */
    if (k.row_cpu && dtype == KILN_F64 && !info->is_gpu)
      kiln__options_append(buf, len, " -DKILN_EXP64=1");
  }
}

static const struct kiln__source nn_sources[] = {
    {KILN__NN_ROWS, KILN__NN_DTYPES}, {KILN__NN_ACT, KILN__NN_DTYPES}, {NULL, 0}};

const struct kiln__family kiln__nn_family = {
    .name = "nn", .sources = nn_sources, .build_options = nn_build_options};
