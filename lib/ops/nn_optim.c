/*
 * nn training family: optimizer steps (SGD, Adam, AdamW) and gradient-norm clipping over
 * lists of tensors (cl_kernels/nn_optim.cl), and the family descriptor.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "core/shape.h"
#include "kiln/dtype.h"
#include "kiln/nn_optim.h"
#include "ops/families.h"
#include "ops/nn_internal.h"
#include "ops/nn_train.h"
#include "runtime/runtime.h"

int kiln__nnt_optim_form = 0;
int kiln__nnt_optim_run = 0;

/* Tensors per launch; must match OPT_SLOTS of nn_optim.cl. */
#define OPT_SLOTS 8
/* Most work-groups of one sumsq_part launch. */
#define SUMSQ_GROUPS 1024

/* Must match cl_kernels/nn_optim.cl. */
enum {
  OPT_MAXIMIZE = 1,
  OPT_NESTEROV = 2,
  OPT_FIRST = 4,
  OPT_MOMENTUM = 8,
  OPT_AMSGRAD = 16,
  OPT_DECOUPLED = 32,
};

kiln_status
kiln__nnt_check_float(const char *op, kiln_context *ctx, const kiln_tensor *t, const char *what)
{
  KILN_RETURN_IF(!t, KILN_ERR_INVALID_HANDLE, op, "%s is NULL", what);
  KILN_TRY(kiln__tensor_check(op, t, ctx));
  KILN_RETURN_IF(!(KILN__DT_FLOATS & KILN__DT_BIT(t->dtype)), KILN_ERR_DTYPE, op,
                 "%s is %s, expected f32 or f64", what, kiln_dtype_name(t->dtype));
  KILN_RETURN_IF(!kiln__device_has_dtype(&ctx->info, t->dtype), KILN_ERR_UNSUPPORTED, op,
                 "%s needs a device with fp64", kiln_dtype_name(t->dtype));
  return KILN_OK;
}

kiln_status
kiln__nnt_check_real(const char *op, kiln_context *ctx, const kiln_tensor *t, const char *what)
{
  KILN_RETURN_IF(!t, KILN_ERR_INVALID_HANDLE, op, "%s is NULL", what);
  KILN_TRY(kiln__tensor_check(op, t, ctx));
  KILN_RETURN_IF(!((KILN__DT_FLOATS | KILN__DT_HALVES) & KILN__DT_BIT(t->dtype)), KILN_ERR_DTYPE,
                 op, "%s is %s, expected f16, bf16, f32 or f64", what, kiln_dtype_name(t->dtype));
  KILN_RETURN_IF(!kiln__device_has_dtype(&ctx->info, t->dtype), KILN_ERR_UNSUPPORTED, op,
                 "%s needs a device with fp64", kiln_dtype_name(t->dtype));
  return KILN_OK;
}

kiln_dtype
kiln__nnt_cdt(kiln_dtype dtype)
{
  return kiln__dtype_is_half(dtype) ? KILN_F32 : dtype;
}

kiln_status
kiln__nnt_check_like(const char *op, kiln_context *ctx, const kiln_tensor *t,
                     const kiln_tensor *ref, const char *what)
{
  KILN_RETURN_IF(!t, KILN_ERR_INVALID_HANDLE, op, "%s is NULL", what);
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

/*
 * Checks nl lists of n entries (lists[0] the parameters or the gradients written in place;
 * lists[k] NULL: not used). wrote[k]: list k is written. Entry i's tensors must match
 * lists[0][i] and, where written, share no byte with the entry's others; lists[0]'s tensors
 * share no byte with each other.
 */
static kiln_status
check_lists(const char *op, kiln_context *ctx, size_t n, const kiln_tensor *const *const *lists,
            const char *const *names, const int *wrote, size_t nl)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  for (size_t k = 0; k < nl; k++)
    KILN_RETURN_IF(n && k < 2 && !lists[k], KILN_ERR_INVALID_ARGUMENT, op, "the %s list is NULL",
                   names[k]);
  char what[64];
  for (size_t i = 0; i < n; i++) {
    snprintf(what, sizeof what, "%s[%zu]", names[0], i);
    const kiln_tensor *p = lists[0][i];
    KILN_TRY(kiln__nnt_check_real(op, ctx, p, what));
    KILN_RETURN_IF(i && p->dtype != lists[0][0]->dtype, KILN_ERR_DTYPE, op,
                   "%s is %s, %s[0] %s", what, kiln_dtype_name(p->dtype), names[0],
                   kiln_dtype_name(lists[0][0]->dtype));
    for (size_t k = 1; k < nl; k++) {
      if (!lists[k])
        continue;
      snprintf(what, sizeof what, "%s[%zu]", names[k], i);
      KILN_TRY(kiln__nnt_check_like(op, ctx, lists[k][i], p, what));
    }
    for (size_t k = 0; k < nl; k++)
      for (size_t l = k + 1; l < nl; l++)
        if (lists[k] && lists[l] && (wrote[k] || wrote[l]) && p->numel &&
            kiln__ops_overlap(lists[k][i], lists[l][i]) != KILN__OVERLAP_NONE)
          return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                            "%s[%zu] and %s[%zu] share bytes", names[k], i, names[l], i);
  }
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++)
      if (lists[0][i]->numel && lists[0][j]->numel &&
          kiln__ops_overlap(lists[0][i], lists[0][j]) != KILN__OVERLAP_NONE)
        return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "%s[%zu] and %s[%zu] share bytes",
                          names[0], i, names[0], j);
  return KILN_OK;
}

/* Pushes the slots of entries [first, first + OPT_SLOTS) of nl lists (NULL lists pass NULL
 * tensors), each slot ending with its element count; returns the most elements of a slot. */
static uint64_t
push_slots(kiln__args *a, size_t n, size_t first, const kiln_tensor *const *const *lists,
           size_t nl)
{
  uint64_t most = 0;
  for (size_t s = 0; s < OPT_SLOTS; s++) {
    size_t i = first + s;
    for (size_t k = 0; k < nl; k++)
      kiln__args_tensor(a, i < n && lists[k] ? lists[k][i] : NULL);
    uint64_t cnt = i < n ? lists[0][i]->numel : 0;
    kiln__args_u64(a, cnt);
    if (cnt > most)
      most = cnt;
  }
  kiln__args_u32(a, (uint32_t)(n - first < OPT_SLOTS ? n - first : OPT_SLOTS));
  return most;
}

static kiln_status
check_hyper(const char *op, const char *name, double v, double lo, int lo_open, double hi)
{
  int ok = lo_open ? v > lo : v >= lo;
  ok = ok && (hi == INFINITY ? v < INFINITY : v < hi);
  KILN_RETURN_IF(!ok, KILN_ERR_INVALID_ARGUMENT, op, "%s %g is out of range", name, v);
  return KILN_OK;
}

/*
 * Launches a step over slots of at most `most` elements, `per` elements per work-item; the
 * vector forms (vec: sgd_stepv, adam_stepv, CPU devices) take a contiguous run of vectors per
 * work-item (KILN_RUN_LOOP of common.cl), the launch sized for runs of up to 32 vectors with
 * two groups per compute unit (measured in nn_optim.cl, above adam_vec).
 */
static kiln_status
launch_slots(kiln__args *a, kiln_context *ctx, uint64_t most, uint64_t per, int vec)
{
  uint64_t nvec = (most + per - 1) / per, run = 1;
  if (vec) {
    uint64_t fill = (uint64_t)ctx->info.compute_units * ctx->wg_size * 2;
    run = fill ? nvec / fill : 1;
    run = run < 1 ? 1 : run > 32 ? 32 : run;
    if (kiln__nnt_optim_run > 0)
      run = (uint64_t)kiln__nnt_optim_run;
  }
  return kiln__args_launch_1d(a, ctx, (nvec + run - 1) / run, 0);
}

kiln_status
kiln_sgd_step(kiln_context *ctx, size_t n, kiln_tensor *const *params,
              const kiln_tensor *const *grads, kiln_tensor *const *momentum_bufs,
              const kiln_sgd_options *opt, int64_t step)
{
  static const char op[] = "kiln_sgd_step";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!opt, KILN_ERR_INVALID_ARGUMENT, op, "opt is NULL");
  KILN_RETURN_IF(step < 1, KILN_ERR_INVALID_ARGUMENT, op, "step %lld must be >= 1",
                 (long long)step);
  KILN_TRY(check_hyper(op, "lr", opt->lr, 0, 0, INFINITY));
  KILN_TRY(check_hyper(op, "momentum", opt->momentum, 0, 0, INFINITY));
  KILN_TRY(check_hyper(op, "weight_decay", opt->weight_decay, 0, 0, INFINITY));
  KILN_RETURN_IF(!isfinite(opt->dampening), KILN_ERR_INVALID_ARGUMENT, op,
                 "dampening %g is not finite", opt->dampening);
  KILN_RETURN_IF(opt->nesterov && (opt->momentum <= 0 || opt->dampening != 0),
                 KILN_ERR_INVALID_ARGUMENT, op,
                 "nesterov needs momentum > 0 and dampening 0 (momentum %g, dampening %g)",
                 opt->momentum, opt->dampening);
  int mom = opt->momentum > 0;
  KILN_RETURN_IF(mom && n && !momentum_bufs, KILN_ERR_INVALID_ARGUMENT, op,
                 "momentum %g needs momentum_bufs", opt->momentum);
  const kiln_tensor *const *lists[3] = {(const kiln_tensor *const *)params, grads,
                                        mom ? (const kiln_tensor *const *)momentum_bufs : NULL};
  static const char *const names[3] = {"params", "grads", "momentum_bufs"};
  static const int wrote[3] = {1, 0, 1};
  KILN_TRY(check_lists(op, ctx, n, lists, names, wrote, 3));
  if (!n)
    return KILN_OK;
  kiln_dtype dt = params[0]->dtype;
  uint32_t flags = (opt->maximize ? OPT_MAXIMIZE : 0) | (opt->nesterov ? OPT_NESTEROV : 0) |
                   (step == 1 ? OPT_FIRST : 0) | (mom ? OPT_MOMENTUM : 0);
  /* CPU devices: 64-byte vectors, runs of them per work-item (as Adam's; kiln__nnt_optim_form
   * 1 or 4 takes the one-element form there too). */
  int vec = !ctx->info.is_gpu && (kiln__nnt_optim_form == 0 || kiln__nnt_optim_form == 16);
  uint64_t per = vec ? kiln__nn_vw64(dt) : 1;
  kiln__ctx_lock(ctx);
  cl_kernel k;
  kiln_status s =
      kiln__ops_kernel(op, ctx, KILN__NNT_OPTIM, dt, vec ? "sgd_stepv" : "sgd_step", &k);
  for (size_t first = 0; s == KILN_OK && first < n; first += OPT_SLOTS) {
    kiln__args a = kiln__args_begin(op, k);
    uint64_t most = push_slots(&a, n, first, lists, 3);
    kiln__args_float(&a, kiln__nnt_cdt(dt), opt->lr);
    kiln__args_float(&a, kiln__nnt_cdt(dt), opt->momentum);
    kiln__args_float(&a, kiln__nnt_cdt(dt), opt->dampening);
    kiln__args_float(&a, kiln__nnt_cdt(dt), opt->weight_decay);
    kiln__args_u32(&a, flags);
    s = launch_slots(&a, ctx, most, per, vec);
  }
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_adam_step(kiln_context *ctx, size_t n, kiln_tensor *const *params,
               const kiln_tensor *const *grads, kiln_tensor *const *exp_avgs,
               kiln_tensor *const *exp_avg_sqs, kiln_tensor *const *max_exp_avg_sqs,
               const kiln_adam_options *opt, int64_t step)
{
  static const char op[] = "kiln_adam_step";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!opt, KILN_ERR_INVALID_ARGUMENT, op, "opt is NULL");
  KILN_RETURN_IF(step < 1, KILN_ERR_INVALID_ARGUMENT, op, "step %lld must be >= 1",
                 (long long)step);
  KILN_TRY(check_hyper(op, "lr", opt->lr, 0, 0, INFINITY));
  KILN_TRY(check_hyper(op, "beta1", opt->beta1, 0, 0, 1));
  KILN_TRY(check_hyper(op, "beta2", opt->beta2, 0, 0, 1));
  KILN_TRY(check_hyper(op, "eps", opt->eps, 0, 0, INFINITY));
  KILN_TRY(check_hyper(op, "weight_decay", opt->weight_decay, 0, 0, INFINITY));
  KILN_RETURN_IF(n && (!exp_avgs || !exp_avg_sqs), KILN_ERR_INVALID_ARGUMENT, op,
                 "exp_avgs and exp_avg_sqs are required");
  KILN_RETURN_IF(n && opt->amsgrad && !max_exp_avg_sqs, KILN_ERR_INVALID_ARGUMENT, op,
                 "amsgrad needs max_exp_avg_sqs");
  const kiln_tensor *const *lists[5] = {
      (const kiln_tensor *const *)params, grads, (const kiln_tensor *const *)exp_avgs,
      (const kiln_tensor *const *)exp_avg_sqs,
      opt->amsgrad ? (const kiln_tensor *const *)max_exp_avg_sqs : NULL};
  static const char *const names[5] = {"params", "grads", "exp_avgs", "exp_avg_sqs",
                                       "max_exp_avg_sqs"};
  static const int wrote[5] = {1, 0, 1, 1, 1};
  KILN_TRY(check_lists(op, ctx, n, lists, names, wrote, 5));
  if (!n)
    return KILN_OK;
  kiln_dtype dt = params[0]->dtype;
  double bc1 = 1 - pow(opt->beta1, (double)step);
  double bc2 = 1 - pow(opt->beta2, (double)step);
  /* Four elements per work-item on GPUs (as the elementwise family's measured H200 default),
   * on CPUs runs of 64-byte vectors (16 floats, 8 doubles: the one-element form ran element by
   * element on PoCL); kiln__nnt_optim_form (test hook) forces one of the three. */
  int form = kiln__nnt_optim_form ? kiln__nnt_optim_form : ctx->info.is_gpu ? 4 : 16;
  uint64_t per = form != 16 ? (uint64_t)form : kiln__nn_vw64(params[0]->dtype);
  uint32_t flags = (opt->maximize ? OPT_MAXIMIZE : 0) | (opt->amsgrad ? OPT_AMSGRAD : 0) |
                   (opt->decoupled ? OPT_DECOUPLED : 0);
  kiln__ctx_lock(ctx);
  cl_kernel k;
  kiln_status s = kiln__ops_kernel(op, ctx, KILN__NNT_OPTIM, dt,
                                   form == 1   ? "adam_step"
                                   : form == 4 ? "adam_step4"
                                               : "adam_stepv",
                                   &k);
  for (size_t first = 0; s == KILN_OK && first < n; first += OPT_SLOTS) {
    kiln__args a = kiln__args_begin(op, k);
    uint64_t most = push_slots(&a, n, first, lists, 5);
    kiln_dtype cdt = kiln__nnt_cdt(dt);
    kiln__args_float(&a, cdt, opt->lr);
    kiln__args_float(&a, cdt, opt->beta1);
    kiln__args_float(&a, cdt, opt->beta2);
    kiln__args_float(&a, cdt, opt->eps);
    kiln__args_float(&a, cdt, opt->weight_decay);
    kiln__args_float(&a, cdt, opt->lr / bc1);
    kiln__args_float(&a, cdt, sqrt(bc2));
    kiln__args_u32(&a, flags);
    s = launch_slots(&a, ctx, most, per, form == 16);
  }
  kiln__ctx_unlock(ctx);
  return s;
}

static const kiln__shape scalar_shape = {0};

kiln_status
kiln_clip_grad_norm(kiln_context *ctx, size_t n, kiln_tensor *const *grads, double max_norm,
                    kiln_tensor **total_norm, double *total_norm_host)
{
  static const char op[] = "kiln_clip_grad_norm";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!(max_norm >= 0), KILN_ERR_INVALID_ARGUMENT, op, "max_norm %g must be >= 0",
                 max_norm);
  KILN_RETURN_IF(n && !grads, KILN_ERR_INVALID_ARGUMENT, op, "the grads list is NULL");
  const kiln_tensor *const *lists[1] = {(const kiln_tensor *const *)grads};
  static const char *const names[1] = {"grads"};
  static const int wrote[1] = {1};
  KILN_TRY(check_lists(op, ctx, n, lists, names, wrote, 1));
  if (!n) {
    if (total_norm_host)
      *total_norm_host = 0;
    return KILN_OK;
  }
  kiln_dtype dt = grads[0]->dtype;
  size_t ts = kiln_dtype_size(kiln__nnt_cdt(dt));
  kiln__out_target t;
  memset(&t, 0, sizeof t);
  kiln_tensor *norm = NULL;
  if (total_norm) {
    KILN_TRY(kiln__ops_out_begin(op, ctx, dt, &scalar_shape, total_norm, lists[0], n, 0, &t));
    norm = t.dst;
  }
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  if (!norm)
    s = kiln__ops_scratch(op, ctx, dt, 1, &norm);
  size_t nlaunch = (n + OPT_SLOTS - 1) / OPT_SLOTS;
  kiln__ops_tmp part = {0};
  if (s == KILN_OK)
    s = kiln__ops_tmp_alloc(ctx, nlaunch * SUMSQ_GROUPS * ts, &part);
  cl_kernel k = NULL;
  if (s == KILN_OK)
    s = kiln__ops_kernel(op, ctx, KILN__NNT_OPTIM, dt, "sumsq_part", &k);
  uint64_t nparts = 0;
  size_t local = s == KILN_OK ? kiln__launch_pow2_local(ctx, k) : 1;
  for (size_t first = 0; s == KILN_OK && first < n; first += OPT_SLOTS) {
    /* The launch shape is fixed by the sizes alone: the sum's rounding does not change with
     * the device's scheduling. */
    uint64_t most = 0;
    for (size_t i = first; i < n && i < first + OPT_SLOTS; i++)
      if (grads[i]->numel > most)
        most = grads[i]->numel;
    uint64_t groups = (most + local - 1) / local;
    if (groups > SUMSQ_GROUPS)
      groups = SUMSQ_GROUPS;
    if (groups < 1)
      groups = 1;
    kiln__args a = kiln__args_begin(op, k);
    push_slots(&a, n, first, lists, 1);
    kiln__args_mem(&a, part.mem);
    kiln__args_u64(&a, nparts);
    kiln__args_local(&a, local * ts);
    s = kiln__args_enqueue_1d(&a, ctx, (size_t)(groups * local), local);
    nparts += groups;
  }
  if (s == KILN_OK)
    s = kiln__ops_kernel(op, ctx, KILN__NNT_OPTIM, dt, "norm_finish", &k);
  if (s == KILN_OK) {
    size_t l1 = kiln__launch_pow2_local(ctx, k);
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_mem(&a, part.mem);
    kiln__args_u64(&a, nparts);
    kiln__args_tensor(&a, norm);
    kiln__args_local(&a, l1 * ts);
    s = kiln__args_enqueue_1d(&a, ctx, l1, l1);
  }
  if (s == KILN_OK)
    s = kiln__ops_kernel(op, ctx, KILN__NNT_OPTIM, dt, "clip_scale", &k);
  for (size_t first = 0; s == KILN_OK && first < n; first += OPT_SLOTS) {
    kiln__args a = kiln__args_begin(op, k);
    uint64_t most = push_slots(&a, n, first, lists, 1);
    kiln__args_tensor(&a, norm);
    kiln__args_float(&a, kiln__nnt_cdt(dt), max_norm);
    s = kiln__args_launch_1d(&a, ctx, most, 0);
  }
  kiln__ops_tmp_free(ctx, &part);
  if (s == KILN_OK && total_norm_host) {
    unsigned char h[8];
    s = kiln__ops_read(op, ctx, norm, 0, h, kiln_dtype_size(dt));
    if (s == KILN_OK) {
      float f;
      uint16_t b;
      memcpy(&f, h, 4);
      memcpy(&b, h, 2);
      if (dt == KILN_F64)
        memcpy(total_norm_host, h, 8);
      else
        *total_norm_host = dt == KILN_F32 ? f : dt == KILN_F16 ? kiln_f16_to_f32(b) : kiln_bf16_to_f32(b);
    }
  }
  if (total_norm)
    s = kiln__ops_out_finish(op, ctx, &t, s);
  else if (norm)
    kiln_tensor_release(norm);
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---------------------------------------------------------------- family */

static const struct kiln__source nnt_sources[] = {
    {KILN__NNT_OPTIM, KILN__DT_FLOATS | KILN__DT_HALVES},
    {KILN__NNT_NORM, KILN__DT_FLOATS | KILN__DT_HALVES},
    {KILN__NNT_ATT, KILN__DT_FLOATS | KILN__DT_HALVES},
    {KILN__NNT_EMBED, KILN__DT_FLOATS | KILN__DT_HALVES},
    {KILN__NNT_WLOSS, KILN__DT_FLOATS | KILN__DT_HALVES}, {NULL, 0}};

const struct kiln__family kiln__nn_train_family = {.name = "nn_train",
                                                   .sources = nnt_sources,
                                                   .build_options = kiln__nnt_build_options,
                                                   .tune = &kiln__attention_tune};
