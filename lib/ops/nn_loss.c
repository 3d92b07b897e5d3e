/*
 * nn family: activations with their gradients and the losses (cross_entropy, nll and the
 * pointwise ones of KILN_POINT_LOSSES), forward and backward. Kernels: cl_kernels/nn_act.cl
 * (activations, pointwise losses) and nn_rows.cl (cross_entropy, nll, the final sums).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "core/shape.h"
#include "kiln/nn.h"
#include "ops/families.h"
#include "ops/nn_internal.h"
#include "runtime/runtime.h"

/* Most work-groups of a reducing pointwise loss: its partial sums, summed by one group. */
#define LOSS_MAX_GROUPS 1024

enum { V_IN = 0, V_OUT = 1 };

static const struct {
  const char *name;
  int uses_out;
} act_rows[] = {
#define X(E, n, v, f, b) {#n, V_##v},
    KILN_ACTIVATIONS(X)
#undef X
};

static const char *const loss_names[] = {
#define X(E, n, f, b) #n,
    KILN_POINT_LOSSES(X)
#undef X
};

const char *
kiln_activation_name(kiln_activation op)
{
  return (unsigned)op < KILN_ACTIVATION_COUNT ? act_rows[op].name : "?";
}

int
kiln_activation_supports(kiln_activation op, kiln_dtype dtype)
{
  return (unsigned)op < KILN_ACTIVATION_COUNT && kiln__dtype_valid(dtype) &&
         (KILN__NN_DTYPES & KILN__DT_BIT(dtype)) != 0;
}

int
kiln_activation_backward_uses_output(kiln_activation op)
{
  return (unsigned)op < KILN_ACTIVATION_COUNT ? act_rows[op].uses_out : -1;
}

const char *
kiln_loss_op_name(kiln_loss_op op)
{
  return (unsigned)op < KILN_LOSS_OP_COUNT ? loss_names[op] : "?";
}

static size_t
tsize(kiln_dtype dtype)
{
  return kiln_dtype_size(kiln__nn_compute_dtype(dtype));
}

static kiln_status
check_out_ptr(const char *op, kiln_context *ctx, kiln_tensor **out)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  return KILN_OK;
}

/* Whether a pointwise loss runs its vector loop (nn_act.cl, LOSS_VEC_FWD): the CPU forms'
 * vector math (act_vec 8 or 16), without a weight. */
static int
loss_vec(const kiln__nn_knobs *kn, const kiln_tensor *pw)
{
  return kn->act_vec >= 8 && !pw;
}

/*
 * The groups (and their local size) of a reducing pointwise loss over n elements, each group
 * writing one partial sum. The vector loop (vec) in few small groups, each work-item a
 * contiguous run of vectors (one vector per work-item in groups of 256 spent its time in the
 * groups' merge trees on PoCL: docs/nn.md, "CPU devices", has the figures).
 */
static uint64_t
loss_groups(kiln_context *ctx, cl_kernel k, const kiln__nn_knobs *kn, int vec, uint64_t n,
            size_t *local)
{
  *local = kiln__launch_pow2_local(ctx, k);
  if (vec && *local > 16)
    *local = 16;
  uint64_t per = (uint64_t)*local * kn->act_items * (vec ? kn->act_vec : 1);
  uint64_t groups = (n + per - 1) / per, most = LOSS_MAX_GROUPS;
  if (vec && ctx->info.compute_units && 8 * (uint64_t)ctx->info.compute_units < most)
    most = 8 * (uint64_t)ctx->info.compute_units;
  return groups > most ? most : groups < 1 ? 1 : groups;
}

/* A flat launch over n elements of a kernel of nn_act.cl built with knobs kn (vec: the
 * activations' vector width applies). */
static kiln_status
flat_launch(const kiln__args *a, kiln_context *ctx, const kiln__nn_knobs *kn, uint64_t n, int vec)
{
  uint64_t items = (uint64_t)kn->act_items * (vec ? kn->act_vec : 1);
  return kiln__args_launch_1d(a, ctx, n / items + (n % items != 0), 0);
}

/* ---------------------------------------------------------------- activations */

static kiln_status
check_activation(const char *op, kiln_activation act)
{
  KILN_RETURN_IF((unsigned)act >= KILN_ACTIVATION_COUNT, KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown activation %d", (int)act);
  return KILN_OK;
}

/* Forward (grad NULL) or backward of act over v into t's output: one flat launch. */
static kiln_status
act_run(const char *op, kiln_context *ctx, kiln_activation act, const kiln_tensor *grad,
        const kiln_tensor *v, double p0, double p1, kiln__out_target *t)
{
  char kname[64];
  snprintf(kname, sizeof kname, "act_%s_%s", grad ? "bwd" : "fwd", act_rows[act].name);
  kiln_dtype cdt = kiln__nn_compute_dtype(v->dtype);
  kiln__nn_knobs kn;
  kiln__nn_knobs_get(ctx, v->dtype, &kn);
  kiln__ctx_lock(ctx);
  cl_kernel k;
  kiln_status s = kiln__nn_kernel(op, ctx, KILN__NN_ACT, v->dtype, &kn, kname, &k);
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, k);
    if (grad)
      kiln__args_tensor(&a, grad);
    kiln__args_tensor(&a, v);
    kiln__args_tensor(&a, t->dst);
    kiln__args_u64(&a, v->numel);
    kiln__args_float(&a, cdt, p0);
    kiln__args_float(&a, cdt, p1);
    s = flat_launch(&a, ctx, &kn, v->numel, 1);
  }
  s = kiln__ops_out_finish(op, ctx, t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_activation_forward(kiln_context *ctx, kiln_activation act, const kiln_tensor *x, double p0,
                        double p1, kiln_tensor **out)
{
  char op[64];
  snprintf(op, sizeof op, "kiln_activation_forward(%s)", kiln_activation_name(act));
  KILN_TRY(check_out_ptr(op, ctx, out));
  KILN_TRY(check_activation(op, act));
  KILN_TRY(kiln__nn_check_float(op, ctx, x));
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, &x->shape, out, &x, 1, 1, &t));
  return act_run(op, ctx, act, NULL, x, p0, p1, &t);
}

kiln_status
kiln_activation_backward(kiln_context *ctx, kiln_activation act, const kiln_tensor *grad,
                         const kiln_tensor *v, double p0, double p1, kiln_tensor **grad_in)
{
  char op[64];
  snprintf(op, sizeof op, "kiln_activation_backward(%s)", kiln_activation_name(act));
  KILN_TRY(check_out_ptr(op, ctx, grad_in));
  KILN_TRY(check_activation(op, act));
  KILN_TRY(kiln__nn_check_float(op, ctx, v));
  KILN_TRY(kiln__nn_check_like(op, ctx, grad, v, "grad"));
  const kiln_tensor *ins[2] = {grad, v};
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, v->dtype, &v->shape, grad_in, ins, 2, 1, &t));
  return act_run(op, ctx, act, grad, v, p0, p1, &t);
}

/* ---------------------------------------------------------------- class losses */

/* Rows of C classes over the last axis of x, and the batch shape B = x.shape[0:ndim-1]. */
typedef struct {
  uint64_t rows, classes;
  kiln__shape batch;
  int probs; /* target holds probabilities (else i64 class indices) */
} class_geo;

static const kiln__shape scalar_shape = {0};

static kiln_status
class_geometry(const char *op, kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *target,
               int allow_probs, class_geo *g)
{
  KILN_RETURN_IF(x->shape.ndim < 1, KILN_ERR_SHAPE, op,
                 "the input is 0-d; it needs a class axis (the last)");
  memset(g, 0, sizeof *g);
  g->batch.ndim = x->shape.ndim - 1;
  g->rows = 1;
  for (size_t i = 0; i + 1 < x->shape.ndim; i++) {
    g->batch.dims[i] = x->shape.dims[i];
    g->rows *= (uint64_t)x->shape.dims[i];
  }
  g->classes = (uint64_t)x->shape.dims[x->shape.ndim - 1];
  KILN_RETURN_IF(g->classes == 0, KILN_ERR_SHAPE, op, "the class axis is empty");
  KILN_TRY(kiln__tensor_check(op, target, ctx));
  char a[128], b[128];
  if (target->dtype == KILN_I64) {
    KILN_RETURN_IF(!kiln__shape_equal(&target->shape, &g->batch), KILN_ERR_SHAPE, op,
                   "target indices have shape %s, expected %s",
                   kiln__shape_format(&target->shape, a, sizeof a),
                   kiln__shape_format(&g->batch, b, sizeof b));
    return KILN_OK;
  }
  KILN_RETURN_IF(!allow_probs || target->dtype != x->dtype, KILN_ERR_DTYPE, op,
                 "target is %s, expected i64 class indices%s", kiln_dtype_name(target->dtype),
                 allow_probs ? " or probabilities of the input's dtype" : "");
  KILN_TRY(kiln__nn_check_like(op, ctx, target, x, "target probabilities"));
  g->probs = 1;
  return KILN_OK;
}

static kiln_status
check_smoothing(const char *op, double e)
{
  KILN_RETURN_IF(!(e >= 0 && e <= 1), KILN_ERR_INVALID_ARGUMENT, op,
                 "label_smoothing %g is outside [0, 1]", e);
  return KILN_OK;
}

/* Two compute-dtype temporaries of n values each (per-row losses and weights). */
typedef struct {
  kiln__ops_tmp lr, lv;
} row_tmps;

static kiln_status
row_tmps_alloc(kiln_context *ctx, kiln_dtype dtype, uint64_t n, row_tmps *t)
{
  memset(t, 0, sizeof *t);
  KILN_TRY(kiln__ops_tmp_alloc(ctx, n * tsize(dtype), &t->lr));
  kiln_status s = kiln__ops_tmp_alloc(ctx, n * tsize(dtype), &t->lv);
  if (s != KILN_OK)
    kiln__ops_tmp_free(ctx, &t->lr);
  return s;
}

static void
row_tmps_free(kiln_context *ctx, row_tmps *t)
{
  kiln__ops_tmp_free(ctx, &t->lr);
  kiln__ops_tmp_free(ctx, &t->lv);
}

/* The checks shared by the class losses, forward and backward, and their geometry. */
static kiln_status
class_check(const char *op, kiln_context *ctx, int ce, const kiln_tensor *x,
            const kiln_tensor *target, double eps, kiln_reduction red, kiln_tensor **out,
            class_geo *g)
{
  KILN_TRY(check_out_ptr(op, ctx, out));
  KILN_TRY(kiln__nn_check_float(op, ctx, x));
  KILN_TRY(kiln__nn_check_reduction(op, red));
  KILN_TRY(check_smoothing(op, eps));
  return class_geometry(op, ctx, x, target, ce, g);
}

/*
 * The trailing arguments and the launch of a class-loss kernel, after rows and classes. ce
 * kernels give each row lpr lanes (the next power of two of the classes, up to the group) and
 * take nlocal group scratch arrays; nll kernels run one item per element of items. scale is
 * passed only by the backward kernels (NULL for forward).
 */
static kiln_status
class_launch(kiln__args *a, kiln_context *ctx, const kiln__nn_knobs *kn, cl_kernel k, int ce,
             const class_geo *g, kiln_dtype dtype, int64_t ignore, double eps, const double *scale,
             uint32_t flags, int nlocal, uint64_t items, const kiln_tensor *const *vts)
{
  kiln_dtype cdt = kiln__nn_compute_dtype(dtype);
  size_t local = 0;
  uint32_t lpr = 1;
  if (ce) {
    kiln__nn_row_shape(ctx, k, kn, g->rows, g->classes, 1, &local, &lpr);
    kiln__args_u32(a, lpr | kiln__nn_row_vec(kn, g->classes, 1, vts, 3));
  }
  kiln__args_i64(a, ignore);
  if (ce)
    kiln__args_float(a, cdt, eps);
  if (scale)
    kiln__args_float(a, cdt, *scale);
  kiln__args_u32(a, flags);
  if (!ce)
    return kiln__args_launch_1d(a, ctx, items, 0);
  for (int i = 0; i < nlocal; i++)
    kiln__args_local(a, local * tsize(dtype));
  /* ce_bwd keeps the smoothed target probabilities beside exp(z - m). */
  unsigned nbuf = scale && g->probs ? 2 : 1;
  kiln__nn_row_cache_args(a, ctx, kn, dtype, local, lpr, g->classes, nbuf, (unsigned)nlocal);
  return kiln__nn_row_enqueue(a, ctx, local, lpr, g->rows);
}

/*
 * The shared body of cross_entropy and nll forward: the per-row kernel (kname: ce_fwd, which
 * takes the row arguments, or nll_fwd), writing out directly (none) or per-row values
 * folded by nn_finish.
 */
static kiln_status
class_forward(const char *op, kiln_context *ctx, int ce, const kiln_tensor *x,
              const kiln_tensor *target, int64_t ignore, double eps, kiln_reduction red,
              kiln_tensor **out)
{
  class_geo g;
  KILN_TRY(class_check(op, ctx, ce, x, target, eps, red, out, &g));
  const kiln__shape *shape = red == KILN_REDUCTION_NONE ? &g.batch : &scalar_shape;
  const kiln_tensor *ins[2] = {x, target};
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, shape, out, ins, 2, 0, &t));
  int reduce = red != KILN_REDUCTION_NONE;
  kiln__nn_knobs kn;
  kiln__nn_knobs_get(ctx, x->dtype, &kn);
  kiln__ctx_lock(ctx);
  row_tmps tmp;
  memset(&tmp, 0, sizeof tmp);
  kiln_status s = reduce ? row_tmps_alloc(ctx, x->dtype, g.rows ? g.rows : 1, &tmp) : KILN_OK;
  cl_kernel k = NULL;
  if (s == KILN_OK && g.rows)
    s = kiln__nn_kernel(op, ctx, KILN__NN_ROWS, x->dtype, &kn, ce ? "ce_fwd" : "nll_fwd", &k);
  if (s == KILN_OK && g.rows) {
    uint32_t flags = (g.probs ? 1u : 0u) | (reduce ? 2u : 0u);
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, x);
    kiln__args_tensor(&a, g.probs ? NULL : target);
    if (ce)
      kiln__args_tensor(&a, g.probs ? target : NULL);
    kiln__args_tensor(&a, reduce ? NULL : t.dst);
    kiln__args_mem(&a, tmp.lr.mem);
    kiln__args_mem(&a, tmp.lv.mem);
    kiln__args_u64(&a, g.rows);
    kiln__args_u64(&a, g.classes);
    const kiln_tensor *vts[3] = {x, g.probs ? target : NULL, NULL};
    s = class_launch(&a, ctx, &kn, k, ce, &g, x->dtype, ignore, eps, NULL, flags, 4, g.rows, vts);
  }
  if (s == KILN_OK && reduce) {
    /* Indices: mean over the rows not ignored; probabilities: over every row. */
    int by_weight = red == KILN_REDUCTION_MEAN && !g.probs;
    double scale = red == KILN_REDUCTION_MEAN && g.probs ? 1.0 / (double)g.rows : 1.0;
    s = kiln__nn_finish(op, ctx, x->dtype, tmp.lr.mem, by_weight ? tmp.lv.mem : NULL, g.rows, t.dst,
                        scale);
  }
  if (reduce)
    row_tmps_free(ctx, &tmp);
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_cross_entropy(kiln_context *ctx, const kiln_tensor *logits, const kiln_tensor *target,
                   int64_t ignore_index, double label_smoothing, kiln_reduction reduction,
                   kiln_tensor **out)
{
  return class_forward("kiln_cross_entropy", ctx, 1, logits, target, ignore_index, label_smoothing,
                       reduction, out);
}

kiln_status
kiln_nll_loss(kiln_context *ctx, const kiln_tensor *logp, const kiln_tensor *target,
              int64_t ignore_index, kiln_reduction reduction, kiln_tensor **out)
{
  return class_forward("kiln_nll_loss", ctx, 0, logp, target, ignore_index, 0.0, reduction, out);
}

/* The number of rows not ignored, into a one-value compute-dtype temporary. */
static kiln_status
count_valid(const char *op, kiln_context *ctx, kiln_dtype dtype, const kiln_tensor *target,
            uint64_t rows, int64_t ignore, kiln__ops_tmp *denom)
{
  KILN_TRY(kiln__ops_tmp_alloc(ctx, tsize(dtype), denom));
  cl_kernel k;
  kiln_status s = kiln__ops_kernel(op, ctx, KILN__NN_ROWS, dtype, "nn_count", &k);
  if (s == KILN_OK) {
    size_t local = kiln__launch_pow2_local(ctx, k);
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, target);
    kiln__args_u64(&a, rows);
    kiln__args_i64(&a, ignore);
    kiln__args_mem(&a, denom->mem);
    kiln__args_local(&a, local * tsize(dtype));
    kiln__args_local(&a, local * tsize(dtype));
    s = kiln__args_enqueue_1d(&a, ctx, local, local);
  }
  if (s != KILN_OK)
    kiln__ops_tmp_free(ctx, denom);
  return s;
}

static kiln_status
class_backward(const char *op, kiln_context *ctx, int ce, const kiln_tensor *gout,
               const kiln_tensor *x, const kiln_tensor *target, int64_t ignore, double eps,
               kiln_reduction red, kiln_tensor **out)
{
  class_geo g;
  KILN_TRY(class_check(op, ctx, ce, x, target, eps, red, out, &g));
  KILN_TRY(kiln__nn_check_grad_out(op, ctx, gout, x->dtype, &g.batch, red));
  const kiln_tensor *ins[3] = {gout, x, target};
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, &x->shape, out, ins, 3, 1, &t));
  int by_count = red == KILN_REDUCTION_MEAN && !g.probs;
  double scale = red == KILN_REDUCTION_MEAN && g.probs ? 1.0 / (double)g.rows : 1.0;
  uint32_t flags =
      (g.probs ? 1u : 0u) | (red == KILN_REDUCTION_NONE ? 4u : 0u) | (by_count ? 8u : 0u);
  kiln__nn_knobs kn;
  kiln__nn_knobs_get(ctx, x->dtype, &kn);
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  kiln__ops_tmp denom = {NULL, 0};
  if (x->numel && by_count)
    s = count_valid(op, ctx, x->dtype, target, g.rows, ignore, &denom);
  cl_kernel k = NULL;
  if (s == KILN_OK && x->numel)
    s = kiln__nn_kernel(op, ctx, KILN__NN_ROWS, x->dtype, &kn, ce ? "ce_bwd" : "nll_bwd", &k);
  if (s == KILN_OK && x->numel) {
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, gout);
    if (ce)
      kiln__args_tensor(&a, x);
    kiln__args_tensor(&a, g.probs ? NULL : target);
    if (ce)
      kiln__args_tensor(&a, g.probs ? target : NULL);
    kiln__args_tensor(&a, t.dst);
    kiln__args_mem(&a, denom.mem);
    kiln__args_u64(&a, g.rows);
    kiln__args_u64(&a, g.classes);
    const kiln_tensor *vts[3] = {x, g.probs ? target : NULL, t.dst};
    s = class_launch(&a, ctx, &kn, k, ce, &g, x->dtype, ignore, eps, &scale, flags, 3, x->numel,
                     vts);
  }
  if (denom.mem)
    kiln__ops_tmp_free(ctx, &denom);
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_cross_entropy_backward(kiln_context *ctx, const kiln_tensor *grad_out,
                            const kiln_tensor *logits, const kiln_tensor *target,
                            int64_t ignore_index, double label_smoothing, kiln_reduction reduction,
                            kiln_tensor **grad_logits)
{
  return class_backward("kiln_cross_entropy_backward", ctx, 1, grad_out, logits, target,
                        ignore_index, label_smoothing, reduction, grad_logits);
}

kiln_status
kiln_nll_loss_backward(kiln_context *ctx, const kiln_tensor *grad_out, const kiln_tensor *logp,
                       const kiln_tensor *target, int64_t ignore_index, kiln_reduction reduction,
                       kiln_tensor **grad_logp)
{
  return class_backward("kiln_nll_loss_backward", ctx, 0, grad_out, logp, target, ignore_index, 0.0,
                        reduction, grad_logp);
}

/* ---------------------------------------------------------------- pointwise losses */

static kiln_status
check_point_loss(const char *op, kiln_context *ctx, kiln_loss_op lop, const kiln_tensor *x,
                 const kiln_tensor *y, const kiln_tensor *pw, double param, kiln_reduction red,
                 uint64_t *wlen)
{
  KILN_RETURN_IF((unsigned)lop >= KILN_LOSS_OP_COUNT, KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown loss %d", (int)lop);
  KILN_TRY(kiln__nn_check_float(op, ctx, x));
  KILN_TRY(kiln__nn_check_like(op, ctx, y, x, "target"));
  KILN_TRY(kiln__nn_check_reduction(op, red));
  KILN_RETURN_IF(lop == KILN_LOSS_SMOOTH_L1 && !(param >= 0), KILN_ERR_INVALID_ARGUMENT, op,
                 "beta %g must be >= 0", param);
  KILN_RETURN_IF(lop == KILN_LOSS_HUBER && !(param > 0), KILN_ERR_INVALID_ARGUMENT, op,
                 "delta %g must be > 0", param);
  *wlen = 0;
  if (!pw)
    return KILN_OK;
  KILN_RETURN_IF(lop != KILN_LOSS_BCE_WITH_LOGITS, KILN_ERR_INVALID_ARGUMENT, op,
                 "pos_weight is for bce_with_logits only");
  KILN_TRY(kiln__tensor_check(op, pw, ctx));
  KILN_RETURN_IF(pw->dtype != x->dtype, KILN_ERR_DTYPE, op, "pos_weight is %s, expected %s",
                 kiln_dtype_name(pw->dtype), kiln_dtype_name(x->dtype));
  uint64_t last = x->shape.ndim ? (uint64_t)x->shape.dims[x->shape.ndim - 1] : 1;
  KILN_RETURN_IF(pw->numel != last, KILN_ERR_SHAPE, op,
                 "pos_weight has %llu elements, expected %llu (the last axis)",
                 (unsigned long long)pw->numel, (unsigned long long)last);
  *wlen = last;
  return KILN_OK;
}

kiln_status
kiln_loss(kiln_context *ctx, kiln_loss_op lop, const kiln_tensor *x, const kiln_tensor *y,
          const kiln_tensor *pw, double param, kiln_reduction red, kiln_tensor **out)
{
  char op[64];
  snprintf(op, sizeof op, "kiln_loss(%s)", kiln_loss_op_name(lop));
  KILN_TRY(check_out_ptr(op, ctx, out));
  uint64_t wlen;
  KILN_TRY(check_point_loss(op, ctx, lop, x, y, pw, param, red, &wlen));
  int reduce = red != KILN_REDUCTION_NONE;
  const kiln_tensor *ins[3] = {x, y, pw};
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, reduce ? &scalar_shape : &x->shape, out, ins, 3,
                               1, &t));
  char kname[64];
  snprintf(kname, sizeof kname, "loss_%s", loss_names[lop]);
  kiln_dtype cdt = kiln__nn_compute_dtype(x->dtype);
  uint64_t n = x->numel;
  kiln__nn_knobs kn;
  kiln__nn_knobs_get(ctx, x->dtype, &kn);
  kiln__ctx_lock(ctx);
  cl_kernel k;
  kiln__ops_tmp part = {NULL, 0};
  kiln_status s = kiln__nn_kernel(op, ctx, KILN__NN_ACT, x->dtype, &kn, kname, &k);
  if (s == KILN_OK && (n || reduce)) {
    int vec = loss_vec(&kn, pw);
    size_t local;
    uint64_t groups = loss_groups(ctx, k, &kn, vec, n, &local);
    if (reduce)
      s = kiln__ops_tmp_alloc(ctx, groups * tsize(x->dtype), &part);
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, x);
    kiln__args_tensor(&a, y);
    kiln__args_tensor(&a, pw);
    kiln__args_u64(&a, wlen);
    kiln__args_tensor(&a, reduce ? NULL : t.dst);
    kiln__args_mem(&a, part.mem);
    kiln__args_u64(&a, n);
    kiln__args_float(&a, cdt, param);
    kiln__args_u32(&a, (reduce ? 1u : 0u) | (pw ? 2u : 0u));
    kiln__args_local(&a, local * tsize(x->dtype));
    if (s == KILN_OK && reduce)
      s = kiln__args_enqueue_1d(&a, ctx, (size_t)(groups * local), local);
    else if (s == KILN_OK)
      s = flat_launch(&a, ctx, &kn, n, vec);
    if (s == KILN_OK && reduce)
      s = kiln__nn_finish(op, ctx, x->dtype, part.mem, NULL, groups, t.dst,
                          red == KILN_REDUCTION_MEAN ? 1.0 / (double)n : 1.0);
  }
  if (part.mem)
    kiln__ops_tmp_free(ctx, &part);
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_loss_backward(kiln_context *ctx, kiln_loss_op lop, const kiln_tensor *gout,
                   const kiln_tensor *x, const kiln_tensor *y, const kiln_tensor *pw, double param,
                   kiln_reduction red, kiln_tensor **grad_input)
{
  char op[64];
  snprintf(op, sizeof op, "kiln_loss_backward(%s)", kiln_loss_op_name(lop));
  KILN_TRY(check_out_ptr(op, ctx, grad_input));
  uint64_t wlen;
  KILN_TRY(check_point_loss(op, ctx, lop, x, y, pw, param, red, &wlen));
  KILN_TRY(kiln__nn_check_grad_out(op, ctx, gout, x->dtype, &x->shape, red));
  const kiln_tensor *ins[4] = {gout, x, y, pw};
  kiln__out_target t;
  /* Reduced losses read grad_out[0] from every work-item: an output over it needs a copy. */
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, &x->shape, grad_input, ins, 4,
                               red == KILN_REDUCTION_NONE, &t));
  char kname[64];
  snprintf(kname, sizeof kname, "lossb_%s", loss_names[lop]);
  kiln_dtype cdt = kiln__nn_compute_dtype(x->dtype);
  uint64_t n = x->numel;
  double scale = red == KILN_REDUCTION_MEAN ? 1.0 / (double)n : 1.0;
  kiln__nn_knobs kn;
  kiln__nn_knobs_get(ctx, x->dtype, &kn);
  kiln__ctx_lock(ctx);
  cl_kernel k;
  kiln_status s = kiln__nn_kernel(op, ctx, KILN__NN_ACT, x->dtype, &kn, kname, &k);
  if (s == KILN_OK && n) {
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, gout);
    kiln__args_tensor(&a, x);
    kiln__args_tensor(&a, y);
    kiln__args_tensor(&a, pw);
    kiln__args_u64(&a, wlen);
    kiln__args_tensor(&a, t.dst);
    kiln__args_u64(&a, n);
    kiln__args_float(&a, cdt, param);
    kiln__args_float(&a, cdt, scale);
    kiln__args_u32(&a, (pw ? 2u : 0u) | (red == KILN_REDUCTION_NONE ? 4u : 0u));
    s = flat_launch(&a, ctx, &kn, n, loss_vec(&kn, pw));
  }
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}
