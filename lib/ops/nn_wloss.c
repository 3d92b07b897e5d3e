/*
 * nn training family: cross_entropy and nll with class weights (cl_kernels/nn_wloss.cl).
 * The unweighted ones stay in nn_loss.c; these take PyTorch's `weight=` on top.
 */
#include <string.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "core/shape.h"
#include "kiln/nn.h"
#include "ops/nn_internal.h"
#include "ops/nn_train.h"
#include "runtime/runtime.h"

/* Must match cl_kernels/nn_wloss.cl. */
enum { WL_PROBS = 1, WL_NLL = 2, WL_GROW = 4, WL_DENOM = 8 };

static const kiln__shape scalar_shape = {0};

typedef struct {
  uint64_t rows, C;
  kiln__shape batch;
  int probs;
} wl_geo;

static kiln_status
wl_check(const char *op, kiln_context *ctx, int nll, const kiln_tensor *x,
         const kiln_tensor *target, const kiln_tensor *w, double eps, kiln_reduction red,
         wl_geo *g)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(kiln__nnt_check_real(op, ctx, x, nll ? "logp" : "logits"));
  KILN_TRY(kiln__nn_check_reduction(op, red));
  KILN_RETURN_IF(!(eps >= 0 && eps <= 1), KILN_ERR_INVALID_ARGUMENT, op,
                 "label_smoothing %g is outside [0, 1]", eps);
  KILN_RETURN_IF(x->shape.ndim < 1, KILN_ERR_SHAPE, op, "the input is 0-d; it needs a class axis");
  memset(g, 0, sizeof *g);
  g->batch.ndim = x->shape.ndim - 1;
  g->rows = 1;
  for (size_t i = 0; i + 1 < x->shape.ndim; i++) {
    g->batch.dims[i] = x->shape.dims[i];
    g->rows *= (uint64_t)x->shape.dims[i];
  }
  g->C = (uint64_t)x->shape.dims[x->shape.ndim - 1];
  KILN_RETURN_IF(g->C == 0, KILN_ERR_SHAPE, op, "the class axis is empty");
  KILN_RETURN_IF(!target, KILN_ERR_INVALID_HANDLE, op, "target is NULL");
  KILN_TRY(kiln__tensor_check(op, target, ctx));
  char a[128], b[128];
  if (target->dtype == KILN_I64) {
    KILN_RETURN_IF(!kiln__shape_equal(&target->shape, &g->batch), KILN_ERR_SHAPE, op,
                   "target indices have shape %s, expected %s",
                   kiln__shape_format(&target->shape, a, sizeof a),
                   kiln__shape_format(&g->batch, b, sizeof b));
  } else {
    KILN_RETURN_IF(nll, KILN_ERR_DTYPE, op, "target is %s, expected i64 class indices",
                   kiln_dtype_name(target->dtype));
    KILN_TRY(kiln__nnt_check_like(op, ctx, target, x, "target probabilities"));
    g->probs = 1;
  }
  if (w) {
    KILN_TRY(kiln__tensor_check(op, w, ctx));
    KILN_RETURN_IF(w->dtype != x->dtype, KILN_ERR_DTYPE, op, "weight is %s, expected %s",
                   kiln_dtype_name(w->dtype), kiln_dtype_name(x->dtype));
    KILN_RETURN_IF(w->numel != g->C, KILN_ERR_SHAPE, op,
                   "weight has %llu elements, expected one per class (%llu)",
                   (unsigned long long)w->numel, (unsigned long long)g->C);
  }
  return KILN_OK;
}

/* One wl_fwd over every row into loss and lw (compute values); ctx->lock held. */
static kiln_status
wl_rows(const char *op, kiln_context *ctx, int nll, const kiln_tensor *x,
        const kiln_tensor *target, const kiln_tensor *w, int64_t ignore, double eps,
        const wl_geo *g, cl_mem loss, cl_mem lw)
{
  if (!g->rows)
    return KILN_OK;
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__NNT_WLOSS, x->dtype, "wl_fwd", &k));
  size_t local = kiln__launch_pow2_local(ctx, k);
  kiln__args a = kiln__args_begin(op, k);
  kiln__args_tensor(&a, x);
  kiln__args_tensor(&a, g->probs ? NULL : target);
  kiln__args_tensor(&a, g->probs ? target : NULL);
  kiln__args_tensor(&a, w);
  kiln__args_mem(&a, loss);
  kiln__args_mem(&a, lw);
  kiln__args_u64(&a, g->rows);
  kiln__args_u64(&a, g->C);
  kiln__args_i64(&a, ignore);
  kiln__args_float(&a, kiln__nnt_cdt(x->dtype), eps);
  kiln__args_u32(&a, (g->probs ? WL_PROBS : 0) | (nll ? WL_NLL : 0));
  kiln__args_local(&a, local * kiln_dtype_size(kiln__nnt_cdt(x->dtype)));
  uint64_t groups = g->rows < ((uint64_t)1 << 16) ? g->rows : ((uint64_t)1 << 16);
  return kiln__args_enqueue_1d(&a, ctx, (size_t)groups * local, local);
}

/* out[0] = sum(loss) (mode 0), sum(loss) / sum(lw) (1) or sum(lw) (2); ctx->lock held. */
static kiln_status
wl_fold(const char *op, kiln_context *ctx, kiln_dtype dt, cl_mem loss, cl_mem lw, uint64_t rows,
        kiln_tensor *out, uint32_t mode)
{
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__NNT_WLOSS, dt, "wl_finish", &k));
  size_t local = kiln__launch_pow2_local(ctx, k);
  kiln__args a = kiln__args_begin(op, k);
  kiln__args_mem(&a, loss);
  kiln__args_mem(&a, lw);
  kiln__args_u64(&a, rows);
  kiln__args_tensor(&a, out);
  kiln__args_u32(&a, mode);
  kiln__args_local(&a, local * kiln_dtype_size(kiln__nnt_cdt(dt)));
  return kiln__args_enqueue_1d(&a, ctx, local, local);
}

static kiln_status
wl_forward(const char *op, kiln_context *ctx, int nll, const kiln_tensor *x,
           const kiln_tensor *target, const kiln_tensor *w, int64_t ignore, double eps,
           kiln_reduction red, kiln_tensor **out)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  wl_geo g;
  KILN_TRY(wl_check(op, ctx, nll, x, target, w, eps, red, &g));
  const kiln__shape *shape = red == KILN_REDUCTION_NONE ? &g.batch : &scalar_shape;
  const kiln_tensor *ins[3] = {x, target, w};
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, shape, out, ins, 3, 0, &t));
  kiln__ctx_lock(ctx);
  size_t ts = kiln_dtype_size(kiln__nnt_cdt(x->dtype));
  uint64_t n = g.rows ? g.rows : 1;
  kiln__ops_tmp loss = {0}, lw = {0};
  kiln_status s = kiln__ops_tmp_alloc(ctx, n * ts, &loss);
  if (s == KILN_OK)
    s = kiln__ops_tmp_alloc(ctx, n * ts, &lw);
  if (s == KILN_OK)
    s = wl_rows(op, ctx, nll, x, target, w, ignore, eps, &g, loss.mem, lw.mem);
  /* Reduction none: the per-row values into the output (converted for f16 and bf16). */
  if (s == KILN_OK && red == KILN_REDUCTION_NONE && g.rows)
    s = wl_fold(op, ctx, x->dtype, loss.mem, lw.mem, g.rows, t.dst, 3);
  if (s == KILN_OK && red != KILN_REDUCTION_NONE)
    s = wl_fold(op, ctx, x->dtype, loss.mem, lw.mem, g.rows, t.dst,
                red == KILN_REDUCTION_MEAN ? 1 : 0);
  if (loss.mem)
    kiln__ops_tmp_free(ctx, &loss);
  if (lw.mem)
    kiln__ops_tmp_free(ctx, &lw);
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

static kiln_status
wl_backward(const char *op, kiln_context *ctx, int nll, const kiln_tensor *gout,
            const kiln_tensor *x, const kiln_tensor *target, const kiln_tensor *w, int64_t ignore,
            double eps, kiln_reduction red, kiln_tensor **dx)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!dx, KILN_ERR_INVALID_ARGUMENT, op, "the gradient output is NULL");
  wl_geo g;
  KILN_TRY(wl_check(op, ctx, nll, x, target, w, eps, red, &g));
  KILN_TRY(kiln__nn_check_grad_out(op, ctx, gout, x->dtype, &g.batch, red));
  const kiln_tensor *ins[4] = {gout, x, target, w};
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, &x->shape, dx, ins, 4, 1, &t));
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  kiln_tensor *denom = NULL;
  int mean = red == KILN_REDUCTION_MEAN;
  if (x->numel && mean) {
    /* The mean's divisor: the rows' weights, summed on the device. */
    size_t ts = kiln_dtype_size(kiln__nnt_cdt(x->dtype));
    kiln__ops_tmp loss = {0}, lw = {0};
    s = kiln__ops_tmp_alloc(ctx, g.rows * ts, &loss);
    if (s == KILN_OK)
      s = kiln__ops_tmp_alloc(ctx, g.rows * ts, &lw);
    if (s == KILN_OK)
      s = kiln__ops_scratch(op, ctx, x->dtype, 1, &denom);
    if (s == KILN_OK)
      s = wl_rows(op, ctx, nll, x, target, w, ignore, eps, &g, loss.mem, lw.mem);
    if (s == KILN_OK)
      s = wl_fold(op, ctx, x->dtype, loss.mem, lw.mem, g.rows, denom, 2);
    if (loss.mem)
      kiln__ops_tmp_free(ctx, &loss);
    if (lw.mem)
      kiln__ops_tmp_free(ctx, &lw);
  }
  if (s == KILN_OK && x->numel) {
    cl_kernel k;
    s = kiln__ops_kernel(op, ctx, KILN__NNT_WLOSS, x->dtype, "wl_bwd", &k);
    if (s == KILN_OK) {
      size_t local = kiln__launch_pow2_local(ctx, k);
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, gout);
      kiln__args_tensor(&a, x);
      kiln__args_tensor(&a, g.probs ? NULL : target);
      kiln__args_tensor(&a, g.probs ? target : NULL);
      kiln__args_tensor(&a, w);
      kiln__args_tensor(&a, denom);
      kiln__args_tensor(&a, t.dst);
      kiln__args_u64(&a, g.rows);
      kiln__args_u64(&a, g.C);
      kiln__args_i64(&a, ignore);
      kiln__args_float(&a, kiln__nnt_cdt(x->dtype), eps);
      kiln__args_u32(&a, (g.probs ? WL_PROBS : 0) | (nll ? WL_NLL : 0) |
                             (red == KILN_REDUCTION_NONE ? WL_GROW : 0) | (mean ? WL_DENOM : 0));
      kiln__args_local(&a, local * kiln_dtype_size(kiln__nnt_cdt(x->dtype)));
      uint64_t groups = g.rows < ((uint64_t)1 << 16) ? g.rows : ((uint64_t)1 << 16);
      s = kiln__args_enqueue_1d(&a, ctx, (size_t)groups * local, local);
    }
  }
  kiln_tensor_release(denom);
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_cross_entropy_weighted(kiln_context *ctx, const kiln_tensor *logits,
                            const kiln_tensor *target, const kiln_tensor *weight,
                            int64_t ignore_index, double label_smoothing, kiln_reduction reduction,
                            kiln_tensor **out)
{
  return wl_forward("kiln_cross_entropy_weighted", ctx, 0, logits, target, weight, ignore_index,
                    label_smoothing, reduction, out);
}

kiln_status
kiln_cross_entropy_weighted_backward(kiln_context *ctx, const kiln_tensor *grad_out,
                                     const kiln_tensor *logits, const kiln_tensor *target,
                                     const kiln_tensor *weight, int64_t ignore_index,
                                     double label_smoothing, kiln_reduction reduction,
                                     kiln_tensor **grad_logits)
{
  return wl_backward("kiln_cross_entropy_weighted_backward", ctx, 0, grad_out, logits, target,
                     weight, ignore_index, label_smoothing, reduction, grad_logits);
}

kiln_status
kiln_nll_loss_weighted(kiln_context *ctx, const kiln_tensor *logp, const kiln_tensor *target,
                       const kiln_tensor *weight, int64_t ignore_index, kiln_reduction reduction,
                       kiln_tensor **out)
{
  return wl_forward("kiln_nll_loss_weighted", ctx, 1, logp, target, weight, ignore_index, 0.0,
                    reduction, out);
}

kiln_status
kiln_nll_loss_weighted_backward(kiln_context *ctx, const kiln_tensor *grad_out,
                                const kiln_tensor *logp, const kiln_tensor *target,
                                const kiln_tensor *weight, int64_t ignore_index,
                                kiln_reduction reduction, kiln_tensor **grad_logp)
{
  return wl_backward("kiln_nll_loss_weighted_backward", ctx, 1, grad_out, logp, target, weight,
                     ignore_index, 0.0, reduction, grad_logp);
}
