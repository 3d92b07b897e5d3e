/*
 * nn training family: dropout from the context's Philox stream, group_norm and batch_norm
 * forward and backward (cl_kernels/nn_norm.cl).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "core/shape.h"
#include "kiln/nn.h"
#include "ops/nn_train.h"
#include "runtime/runtime.h"

/* Must match cl_kernels/nn_norm.cl. */
enum { DROP_MASK_IN = 1, DROP_MASK_OUT = 2 };
enum { NN_W = 1, NN_B = 2, NN_BN = 4, BN_RUNNING = 8, BN_EVAL = 16 };
enum { CP_GRAD = 2, CP_STAT = 3 };

uint64_t kiln__nnt_chan_groups = 0;

/* Most work-groups of the one-row (one-channel) per group kernels; they loop beyond. */
#define ROW_GROUPS ((uint64_t)1 << 16)

static kiln_status
check_out_ptr(const char *op, kiln_context *ctx, kiln_tensor **out)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  return KILN_OK;
}

/* ---------------------------------------------------------------- dropout */

static kiln_status
check_p(const char *op, double p)
{
  KILN_RETURN_IF(!(p >= 0 && p <= 1), KILN_ERR_INVALID_ARGUMENT, op, "p %g is outside [0, 1]",
                 p);
  return KILN_OK;
}

/* One dropout launch over x's n elements (ctx->lock held). */
static kiln_status
dropout_launch(const char *op, kiln_context *ctx, const kiln_tensor *x, kiln_tensor *y,
               const kiln_tensor *min, kiln_tensor *mout, double p, uint64_t base, uint64_t seed)
{
  if (!x->numel)
    return KILN_OK;
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__NNT_NORM, x->dtype, "dropout", &k));
  uint64_t threshold = (uint64_t)ldexp(p, 32);
  kiln__args a = kiln__args_begin(op, k);
  kiln__args_tensor(&a, x);
  kiln__args_tensor(&a, y);
  kiln__args_tensor(&a, min);
  kiln__args_tensor(&a, mout);
  kiln__args_u64(&a, x->numel);
  kiln__args_u64(&a, base);
  kiln__args_u32(&a, (uint32_t)seed);
  kiln__args_u32(&a, (uint32_t)(seed >> 32));
  kiln__args_u64(&a, threshold);
  kiln__args_float(&a, kiln__nnt_cdt(x->dtype), p < 1 ? 1 / (1 - p) : 0);
  kiln__args_u32(&a, (min ? DROP_MASK_IN : 0) | (mout ? DROP_MASK_OUT : 0));
  return kiln__args_launch_1d(&a, ctx, (x->numel + 3) / 4, 0);
}

kiln_status
kiln_dropout(kiln_context *ctx, const kiln_tensor *x, double p, kiln_tensor **out,
             kiln_tensor **mask, kiln_rng_state *state)
{
  static const char op[] = "kiln_dropout";
  KILN_TRY(check_out_ptr(op, ctx, out));
  KILN_TRY(kiln__nnt_check_real(op, ctx, x, "x"));
  KILN_TRY(check_p(op, p));
  kiln_tensor **outs[2] = {out, mask};
  static const char *const names[2] = {"out", "mask"};
  KILN_TRY(kiln__ops_outs_check(op, ctx, outs, names, 2));
  const kiln__shape *shapes[2] = {&x->shape, &x->shape};
  const kiln_dtype dts[2] = {x->dtype, KILN_BOOL};
  kiln__out_target t[2];
  KILN_TRY(kiln__ops_outs_begin(op, ctx, dts, shapes, outs, &x, 1, 2, 1, t));
  kiln__ctx_lock(ctx);
  uint64_t seed, base;
  kiln__random_stream_locked(ctx, &seed, &base);
  kiln_status s = dropout_launch(op, ctx, x, t[0].dst, NULL, mask ? t[1].dst : NULL, p, base, seed);
  if (s == KILN_OK) {
    kiln__random_advance_locked(ctx, (x->numel + 3) / 4);
    if (state) {
      state->seed = seed;
      state->counter = base;
    }
  }
  s = kiln__ops_outs_finish(op, ctx, outs, 2, t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_dropout_backward(kiln_context *ctx, const kiln_tensor *grad, const kiln_tensor *mask,
                      const kiln_rng_state *state, double p, kiln_tensor **grad_in)
{
  static const char op[] = "kiln_dropout_backward";
  KILN_TRY(check_out_ptr(op, ctx, grad_in));
  KILN_TRY(kiln__nnt_check_real(op, ctx, grad, "grad"));
  KILN_TRY(check_p(op, p));
  KILN_RETURN_IF(!mask == !state, KILN_ERR_INVALID_ARGUMENT, op,
                 "exactly one of mask and state must be given");
  if (mask) {
    KILN_TRY(kiln__tensor_check(op, mask, ctx));
    KILN_RETURN_IF(mask->dtype != KILN_BOOL, KILN_ERR_DTYPE, op, "mask is %s, expected bool",
                   kiln_dtype_name(mask->dtype));
    if (!kiln__shape_equal(&mask->shape, &grad->shape)) {
      char a[128], b[128];
      return kiln__fail(KILN_ERR_SHAPE, op, 0, "mask has shape %s, expected %s",
                        kiln__shape_format(&mask->shape, a, sizeof a),
                        kiln__shape_format(&grad->shape, b, sizeof b));
    }
  }
  const kiln_tensor *ins[2] = {grad, mask};
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, grad->dtype, &grad->shape, grad_in, ins, 2, 1, &t));
  kiln__ctx_lock(ctx);
  kiln_status s = dropout_launch(op, ctx, grad, t.dst, mask, NULL, p, state ? state->counter : 0,
                                 state ? state->seed : 0);
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---------------------------------------------------------------- group_norm, batch_norm */

/* x as [N, C, S]. */
typedef struct {
  uint64_t N, C, S;
  kiln__shape chan; /* [C] */
} nc_geo;

static kiln_status
nc_geometry(const char *op, const kiln_tensor *x, nc_geo *g)
{
  char a[128];
  KILN_RETURN_IF(x->shape.ndim < 2, KILN_ERR_SHAPE, op, "x has shape %s; expected [N, C, ...]",
                 kiln__shape_format(&x->shape, a, sizeof a));
  memset(g, 0, sizeof *g);
  g->N = (uint64_t)x->shape.dims[0];
  g->C = (uint64_t)x->shape.dims[1];
  g->S = 1;
  for (size_t i = 2; i < x->shape.ndim; i++)
    g->S *= (uint64_t)x->shape.dims[i];
  g->chan.ndim = 1;
  g->chan.dims[0] = x->shape.dims[1];
  return KILN_OK;
}

/* An optional (allow_null) tensor of x's dtype and n elements. */
static kiln_status
check_vec(const char *op, kiln_context *ctx, const kiln_tensor *v, const kiln_tensor *x,
          uint64_t n, const char *what)
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
  KILN_RETURN_IF(!(eps >= 0 && eps < INFINITY), KILN_ERR_INVALID_ARGUMENT, op,
                 "eps %g must be finite and >= 0", eps);
  return KILN_OK;
}

/* A launch of `groups` work-groups of the power-of-two local size, with nloc local T arrays
 * as the kernel's last arguments (pushed here). */
static kiln_status
group_launch(kiln__args *a, kiln_context *ctx, cl_kernel k, uint64_t groups, kiln_dtype dt,
             int nloc)
{
  size_t local = kiln__launch_pow2_local(ctx, k);
  for (int i = 0; i < nloc; i++)
    kiln__args_local(a, local * kiln_dtype_size(kiln__nnt_cdt(dt)));
  if (groups > ROW_GROUPS)
    groups = ROW_GROUPS;
  if (!groups)
    return a->status;
  return kiln__args_enqueue_1d(a, ctx, (size_t)groups * local, local);
}

/* The forward statistics in the compute type into st[0..1] (nn_norm.cl): the wanted outputs
 * themselves when they have that type, else scratch (made); ctx->lock held. */
static kiln_status
stats_scratch(const char *op, kiln_context *ctx, kiln_dtype dt, uint64_t n, kiln__out_target *t,
              kiln_tensor **const *outs, kiln_tensor **st, kiln_tensor **made)
{
  for (int i = 0; i < 2; i++) {
    if (outs[1 + i] && kiln__nnt_cdt(dt) == dt) {
      st[i] = t[1 + i].dst;
    } else {
      KILN_TRY(kiln__ops_scratch(op, ctx, kiln__nnt_cdt(dt), n, &made[i]));
      st[i] = made[i];
    }
  }
  return KILN_OK;
}

/* The wanted statistics outputs of the 16-bit types from their scratch (stats_scratch). */
static kiln_status
stats_store(const char *op, kiln_context *ctx, kiln_dtype dt, uint64_t n, kiln__out_target *t,
            kiln_tensor **const *outs, kiln_tensor *const *st)
{
  if (kiln__nnt_cdt(dt) == dt || (!outs[1] && !outs[2]))
    return KILN_OK;
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__NNT_NORM, dt, "stats_store", &k));
  for (int i = 0; i < 2; i++)
    if (outs[1 + i]) {
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, st[i]);
      kiln__args_tensor(&a, t[1 + i].dst);
      kiln__args_u64(&a, n);
      KILN_TRY(kiln__args_launch_1d(&a, ctx, n, 0));
    }
  return KILN_OK;
}

int kiln__nnt_norm_gpu;

static kiln_status
apply_launch(const char *op, kiln_context *ctx, const kiln_tensor *x, kiln_tensor *const *st,
             const kiln_tensor *w, const kiln_tensor *b, kiln_tensor *y, const nc_geo *g,
             uint64_t G, uint64_t cpg, uint32_t flags)
{
  if (!x->numel)
    return KILN_OK;
  /* CPU devices: a work-item per chunk of a plane in 64-byte vectors (norm_apply_lines),
   * about eight chunks per compute unit; the 3-D launch's strided items ran element by
   * element there. kiln__nnt_norm_gpu (test hook) takes the GPUs' form anyway. */
  int lines = !ctx->info.is_gpu && !kiln__nnt_norm_gpu;
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__NNT_NORM, x->dtype,
                            lines ? "norm_apply_lines" : "norm_apply", &k));
  kiln__args a = kiln__args_begin(op, k);
  kiln__args_tensor(&a, x);
  kiln__args_tensor(&a, st[0]);
  kiln__args_tensor(&a, st[1]);
  kiln__args_tensor(&a, w);
  kiln__args_tensor(&a, b);
  kiln__args_tensor(&a, y);
  kiln__args_u64(&a, g->N);
  kiln__args_u64(&a, g->C);
  kiln__args_u64(&a, g->S);
  kiln__args_u64(&a, G);
  kiln__args_u64(&a, cpg);
  kiln__args_u32(&a, flags | (w ? NN_W : 0) | (b ? NN_B : 0));
  if (lines) {
    uint64_t planes = g->N * g->C, cu = ctx->info.compute_units ? ctx->info.compute_units : 1;
    uint64_t nch = (8 * cu + planes - 1) / planes, most = (g->S + 1023) / 1024;
    nch = nch < most ? nch : most;
    nch = nch ? nch : 1;
    kiln__args_u64(&a, nch);
    return kiln__args_launch_1d(&a, ctx, planes * nch, 0);
  }
  KILN_TRY(a.status);
  /* Four elements per work-item along S (APPLY_ITEMS of nn_norm.cl). */
  return kiln__launch_3d(op, ctx, k, (g->S + 3) / 4, g->C, g->N);
}

kiln_status
kiln_group_norm(kiln_context *ctx, const kiln_tensor *x, int64_t groups,
                const kiln_tensor *weight, const kiln_tensor *bias, double eps,
                kiln_tensor **out, kiln_tensor **mean, kiln_tensor **rstd)
{
  static const char op[] = "kiln_group_norm";
  KILN_TRY(check_out_ptr(op, ctx, out));
  KILN_TRY(kiln__nnt_check_real(op, ctx, x, "x"));
  nc_geo g = {0};
  KILN_TRY(nc_geometry(op, x, &g));
  KILN_RETURN_IF(groups <= 0 || g.C % (uint64_t)groups != 0, KILN_ERR_INVALID_ARGUMENT, op,
                 "groups %lld must be > 0 and divide the %llu channels", (long long)groups,
                 (unsigned long long)g.C);
  uint64_t G = (uint64_t)groups, cpg = g.C / G, rows = g.N * G, len = cpg * g.S;
  KILN_RETURN_IF(rows && !len, KILN_ERR_SHAPE, op, "each group holds no element");
  KILN_TRY(check_vec(op, ctx, weight, x, g.C, "weight"));
  KILN_TRY(check_vec(op, ctx, bias, x, g.C, "bias"));
  KILN_TRY(check_eps(op, eps));
  kiln_tensor **outs[3] = {out, mean, rstd};
  static const char *const names[3] = {"out", "mean", "rstd"};
  KILN_TRY(kiln__ops_outs_check(op, ctx, outs, names, 3));
  kiln__shape sshape = {0};
  sshape.ndim = 2;
  sshape.dims[0] = (int64_t)g.N;
  sshape.dims[1] = groups;
  const kiln__shape *shapes[3] = {&x->shape, &sshape, &sshape};
  const kiln_dtype dts[3] = {x->dtype, x->dtype, x->dtype};
  const kiln_tensor *ins[3] = {x, weight, bias};
  kiln__out_target t[3];
  KILN_TRY(kiln__ops_outs_begin(op, ctx, dts, shapes, outs, ins, 3, 3, 1, t));
  kiln__ctx_lock(ctx);
  kiln_tensor *st[2] = {NULL, NULL}, *made[2] = {NULL, NULL};
  kiln_status s = KILN_OK;
  if (rows) {
    s = stats_scratch(op, ctx, x->dtype, rows, t, outs, st, made);
    cl_kernel k;
    if (s == KILN_OK)
      s = kiln__ops_kernel(op, ctx, KILN__NNT_NORM, x->dtype, "gn_stats", &k);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, x);
      kiln__args_tensor(&a, st[0]);
      kiln__args_tensor(&a, st[1]);
      kiln__args_u64(&a, rows);
      kiln__args_u64(&a, len);
      kiln__args_float(&a, kiln__nnt_cdt(x->dtype), eps);
      s = group_launch(&a, ctx, k, rows, x->dtype, 1);
    }
    if (s == KILN_OK)
      s = apply_launch(op, ctx, x, st, weight, bias, t[0].dst, &g, G, cpg, 0);
    if (s == KILN_OK)
      s = stats_store(op, ctx, x->dtype, rows, t, outs, st);
  }
  kiln_tensor_release(made[0]);
  kiln_tensor_release(made[1]);
  s = kiln__ops_outs_finish(op, ctx, outs, 3, t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/* Chunks per channel of the chan_part reductions: on GPUs about 2048 work-groups in all
 * (64 channels would otherwise fill half an H200), each summing at least 1024 elements; on
 * CPUs one group per channel (PoCL pays tens of microseconds per work-group with barriers).
 * A function of the shape and the device kind, so a device reproduces its own bits. */
static uint64_t
chan_chunks(const kiln_context *ctx, const nc_geo *g)
{
  uint64_t target = kiln__nnt_chan_groups ? kiln__nnt_chan_groups : ctx->info.is_gpu ? 2048 : 1;
  uint64_t M = g->N * g->S, want = g->C ? (target + g->C - 1) / g->C : 1;
  uint64_t most = (M + 1023) / 1024;
  if (want > most)
    want = most;
  return want ? want : 1;
}

/* One chan_stats (CP_STAT) or chan_part (CP_GRAD) pass and its chan_fin (ctx->lock held).
 * mean, rstd: the results of CP_STAT, the statistics CP_GRAD reads; rm, rv: the running mean
 * and variance (CP_STAT only, may be NULL). */
static kiln_status
chan_pass(const char *op, kiln_context *ctx, uint32_t mode, const kiln_tensor *x,
          const kiln_tensor *grad, const kiln_tensor *mean, const kiln_tensor *rstd,
          kiln_tensor *rm, kiln_tensor *rv, double eps, double momentum, cl_mem sums,
          kiln_tensor *dw, kiln_tensor *db, const nc_geo *g, uint64_t G, uint64_t cpg,
          uint32_t flags)
{
  kiln_dtype dt = x->dtype;
  int stat = mode == CP_STAT;
  /* CPU devices' statistics: a work-item per (sample, channel) plane, a chunk each
   * (chan_stats_lines; one group per channel strode through the planes element by element). */
  int lines = stat && !ctx->info.is_gpu && !kiln__nnt_norm_gpu && g->N > 0;
  uint64_t nchunk = lines ? g->N : chan_chunks(ctx, g);
  kiln__ops_tmp part;
  size_t ts = kiln_dtype_size(kiln__nnt_cdt(dt));
  KILN_TRY(kiln__ops_tmp_alloc(ctx, (stat ? 3 : 2) * g->C * nchunk * ts, &part));
  cl_kernel k;
  kiln_status s = kiln__ops_kernel(op, ctx, KILN__NNT_NORM, dt,
                                   lines  ? "chan_stats_lines"
                                   : stat ? "chan_stats"
                                          : "chan_part",
                                   &k);
  if (s == KILN_OK && stat) {
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, x);
    kiln__args_mem(&a, part.mem);
    kiln__args_u64(&a, g->N);
    kiln__args_u64(&a, g->C);
    kiln__args_u64(&a, g->S);
    kiln__args_u64(&a, nchunk);
    if (lines) {
      for (int i = 0; i < 3; i++)
        kiln__args_local(&a, ts);
      s = kiln__args_launch_1d(&a, ctx, g->C * nchunk, 0);
    } else {
      s = group_launch(&a, ctx, k, g->C * nchunk, dt, 3);
    }
  } else if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, x);
    kiln__args_tensor(&a, grad);
    kiln__args_tensor(&a, mean);
    kiln__args_tensor(&a, rstd);
    kiln__args_mem(&a, part.mem);
    kiln__args_u64(&a, g->N);
    kiln__args_u64(&a, g->C);
    kiln__args_u64(&a, g->S);
    kiln__args_u64(&a, G);
    kiln__args_u64(&a, cpg);
    kiln__args_u64(&a, nchunk);
    kiln__args_u32(&a, mode);
    kiln__args_u32(&a, flags);
    s = group_launch(&a, ctx, k, g->C * nchunk, dt, 1);
  }
  if (s == KILN_OK)
    s = kiln__ops_kernel(op, ctx, KILN__NNT_NORM, dt, "chan_fin", &k);
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_mem(&a, part.mem);
    kiln__args_u64(&a, nchunk);
    kiln__args_u64(&a, g->C);
    kiln__args_u64(&a, g->N * g->S);
    kiln__args_u32(&a, mode);
    kiln__args_u32(&a, flags);
    kiln__args_tensor(&a, mode == CP_GRAD ? NULL : mean);
    kiln__args_tensor(&a, mode == CP_GRAD ? NULL : rstd);
    kiln__args_tensor(&a, rm);
    kiln__args_tensor(&a, rv);
    kiln__args_float(&a, kiln__nnt_cdt(dt), eps);
    kiln__args_float(&a, kiln__nnt_cdt(dt), momentum);
    kiln__args_mem(&a, sums);
    kiln__args_tensor(&a, dw);
    kiln__args_tensor(&a, db);
    s = kiln__args_launch_1d(&a, ctx, g->C, 0);
  }
  kiln__ops_tmp_free(ctx, &part);
  return s;
}

/* Per-channel sums of grad and grad xhat into sums (2C compute values, may be NULL) and the
 * parameter gradients dw, db (may be NULL); ctx->lock held. */
static kiln_status
chan_grad_launch(const char *op, kiln_context *ctx, const kiln_tensor *grad, const kiln_tensor *x,
                 const kiln_tensor *mean, const kiln_tensor *rstd, cl_mem sums, kiln_tensor *dw,
                 kiln_tensor *db, const nc_geo *g, uint64_t G, uint64_t cpg, uint32_t flags)
{
  return chan_pass(op, ctx, CP_GRAD, x, grad, mean, rstd, NULL, NULL, 0, 0, sums, dw, db, g, G,
                   cpg, flags);
}

/* Common checks of the two backward passes: grad like x, stats of nstat elements. */
static kiln_status
backward_checks(const char *op, kiln_context *ctx, const kiln_tensor *grad, const kiln_tensor *x,
                const kiln_tensor *mean, const kiln_tensor *rstd, const kiln_tensor *w,
                nc_geo *g)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(kiln__nnt_check_real(op, ctx, x, "x"));
  KILN_TRY(kiln__nnt_check_like(op, ctx, grad, x, "grad"));
  KILN_TRY(nc_geometry(op, x, g));
  KILN_RETURN_IF(!mean || !rstd, KILN_ERR_INVALID_HANDLE, op, "the statistics are NULL");
  KILN_TRY(check_vec(op, ctx, w, x, g->C, "weight"));
  return KILN_OK;
}

kiln_status
kiln_group_norm_backward(kiln_context *ctx, const kiln_tensor *grad, const kiln_tensor *x,
                         const kiln_tensor *mean, const kiln_tensor *rstd,
                         const kiln_tensor *weight, int64_t groups, kiln_tensor **grad_x,
                         kiln_tensor **grad_weight, kiln_tensor **grad_bias)
{
  static const char op[] = "kiln_group_norm_backward";
  nc_geo g = {0};
  KILN_TRY(backward_checks(op, ctx, grad, x, mean, rstd, weight, &g));
  KILN_RETURN_IF(groups <= 0 || g.C % (uint64_t)groups != 0, KILN_ERR_INVALID_ARGUMENT, op,
                 "groups %lld must be > 0 and divide the %llu channels", (long long)groups,
                 (unsigned long long)g.C);
  uint64_t G = (uint64_t)groups, cpg = g.C / G, rows = g.N * G, len = cpg * g.S;
  KILN_RETURN_IF(rows && !len, KILN_ERR_SHAPE, op, "each group holds no element");
  KILN_TRY(check_vec(op, ctx, mean, x, rows, "mean"));
  KILN_TRY(check_vec(op, ctx, rstd, x, rows, "rstd"));
  kiln_tensor **outs[3] = {grad_x, grad_weight, grad_bias};
  static const char *const names[3] = {"grad_x", "grad_weight", "grad_bias"};
  KILN_TRY(kiln__ops_outs_check(op, ctx, outs, names, 3));
  const kiln__shape *shapes[3] = {&x->shape, &g.chan, &g.chan};
  const kiln_dtype dts[3] = {x->dtype, x->dtype, x->dtype};
  const kiln_tensor *ins[5] = {grad, x, mean, rstd, weight};
  kiln__out_target t[3];
  KILN_TRY(kiln__ops_outs_begin(op, ctx, dts, shapes, outs, ins, 5, 3, 1, t));
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  /* Parameter gradients first: grad_x may be written over grad or x. */
  if (grad_weight || grad_bias)
    s = chan_grad_launch(op, ctx, grad, x, mean, rstd, NULL, grad_weight ? t[1].dst : NULL,
                         grad_bias ? t[2].dst : NULL, &g, G, cpg, 0);
  if (s == KILN_OK && grad_x && rows) {
    cl_kernel k;
    s = kiln__ops_kernel(op, ctx, KILN__NNT_NORM, x->dtype, "gn_dx", &k);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, grad);
      kiln__args_tensor(&a, x);
      kiln__args_tensor(&a, mean);
      kiln__args_tensor(&a, rstd);
      kiln__args_tensor(&a, weight);
      kiln__args_tensor(&a, t[0].dst);
      kiln__args_u64(&a, rows);
      kiln__args_u64(&a, len);
      kiln__args_u64(&a, g.S);
      kiln__args_u64(&a, g.C);
      kiln__args_u64(&a, G);
      kiln__args_u64(&a, cpg);
      kiln__args_u32(&a, weight ? NN_W : 0);
      s = group_launch(&a, ctx, k, rows, x->dtype, 1);
    }
  }
  s = kiln__ops_outs_finish(op, ctx, outs, 3, t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_batch_norm(kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *weight,
                const kiln_tensor *bias, kiln_tensor *running_mean, kiln_tensor *running_var,
                int training, double momentum, double eps, kiln_tensor **out,
                kiln_tensor **save_mean, kiln_tensor **save_rstd)
{
  static const char op[] = "kiln_batch_norm";
  KILN_TRY(check_out_ptr(op, ctx, out));
  KILN_TRY(kiln__nnt_check_real(op, ctx, x, "x"));
  nc_geo g = {0};
  KILN_TRY(nc_geometry(op, x, &g));
  KILN_TRY(check_vec(op, ctx, weight, x, g.C, "weight"));
  KILN_TRY(check_vec(op, ctx, bias, x, g.C, "bias"));
  KILN_TRY(check_vec(op, ctx, running_mean, x, g.C, "running_mean"));
  KILN_TRY(check_vec(op, ctx, running_var, x, g.C, "running_var"));
  KILN_TRY(check_eps(op, eps));
  KILN_RETURN_IF(!running_mean != !running_var, KILN_ERR_INVALID_ARGUMENT, op,
                 "give both running_mean and running_var, or neither");
  KILN_RETURN_IF(!training && !running_mean, KILN_ERR_INVALID_ARGUMENT, op,
                 "evaluation (training 0) needs running_mean and running_var");
  KILN_RETURN_IF(training && !(momentum >= 0 && momentum <= 1), KILN_ERR_INVALID_ARGUMENT, op,
                 "momentum %g is outside [0, 1]", momentum);
  KILN_RETURN_IF(training && g.C && g.N * g.S == 0, KILN_ERR_SHAPE, op,
                 "training needs at least one element per channel");
  KILN_RETURN_IF(running_mean && (kiln__ops_overlap(running_mean, running_var) !=
                                  KILN__OVERLAP_NONE),
                 KILN_ERR_INVALID_ARGUMENT, op, "running_mean and running_var share bytes");
  kiln_tensor **outs[3] = {out, save_mean, save_rstd};
  static const char *const names[3] = {"out", "save_mean", "save_rstd"};
  KILN_TRY(kiln__ops_outs_check(op, ctx, outs, names, 3));
  const kiln__shape *shapes[3] = {&x->shape, &g.chan, &g.chan};
  const kiln_dtype dts[3] = {x->dtype, x->dtype, x->dtype};
  const kiln_tensor *ins[5] = {x, weight, bias, running_mean, running_var};
  kiln__out_target t[3];
  KILN_TRY(kiln__ops_outs_begin(op, ctx, dts, shapes, outs, ins, 5, 3, 1, t));
  kiln__ctx_lock(ctx);
  kiln_tensor *st[2] = {NULL, NULL}, *made[2] = {NULL, NULL};
  kiln_status s = KILN_OK;
  if (g.C) {
    s = stats_scratch(op, ctx, x->dtype, g.C, t, outs, st, made);
    cl_kernel k;
    if (s == KILN_OK && !training) {
      s = kiln__ops_kernel(op, ctx, KILN__NNT_NORM, x->dtype, "bn_eval_stats", &k);
      if (s == KILN_OK) {
        kiln__args a = kiln__args_begin(op, k);
        kiln__args_tensor(&a, st[0]);
        kiln__args_tensor(&a, st[1]);
        kiln__args_tensor(&a, running_mean);
        kiln__args_tensor(&a, running_var);
        kiln__args_u64(&a, g.C);
        kiln__args_float(&a, kiln__nnt_cdt(x->dtype), eps);
        s = kiln__args_launch_1d(&a, ctx, g.C, 0);
      }
    } else if (s == KILN_OK) {
      /* Training: count, mean and squared deviations in one read of x (chan_stats). */
      uint32_t fl = NN_BN | (running_mean ? BN_RUNNING : 0);
      s = chan_pass(op, ctx, CP_STAT, x, NULL, st[0], st[1], running_mean, running_var, eps,
                    momentum, NULL, NULL, NULL, &g, g.C, 1, fl);
    }
    if (s == KILN_OK)
      s = apply_launch(op, ctx, x, st, weight, bias, t[0].dst, &g, g.C, 1, NN_BN);
    if (s == KILN_OK)
      s = stats_store(op, ctx, x->dtype, g.C, t, outs, st);
  }
  kiln_tensor_release(made[0]);
  kiln_tensor_release(made[1]);
  s = kiln__ops_outs_finish(op, ctx, outs, 3, t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_batch_norm_backward(kiln_context *ctx, const kiln_tensor *grad, const kiln_tensor *x,
                         const kiln_tensor *weight, const kiln_tensor *save_mean,
                         const kiln_tensor *save_rstd, int training, kiln_tensor **grad_x,
                         kiln_tensor **grad_weight, kiln_tensor **grad_bias)
{
  static const char op[] = "kiln_batch_norm_backward";
  nc_geo g = {0};
  KILN_TRY(backward_checks(op, ctx, grad, x, save_mean, save_rstd, weight, &g));
  KILN_TRY(check_vec(op, ctx, save_mean, x, g.C, "save_mean"));
  KILN_TRY(check_vec(op, ctx, save_rstd, x, g.C, "save_rstd"));
  kiln_tensor **outs[3] = {grad_x, grad_weight, grad_bias};
  static const char *const names[3] = {"grad_x", "grad_weight", "grad_bias"};
  KILN_TRY(kiln__ops_outs_check(op, ctx, outs, names, 3));
  const kiln__shape *shapes[3] = {&x->shape, &g.chan, &g.chan};
  const kiln_dtype dts[3] = {x->dtype, x->dtype, x->dtype};
  const kiln_tensor *ins[5] = {grad, x, save_mean, save_rstd, weight};
  kiln__out_target t[3];
  KILN_TRY(kiln__ops_outs_begin(op, ctx, dts, shapes, outs, ins, 5, 3, 1, t));
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  kiln__ops_tmp sums = {0};
  int need_sums = grad_x && training && x->numel;
  if (g.C && (need_sums || grad_weight || grad_bias)) {
    if (need_sums)
      s = kiln__ops_tmp_alloc(ctx, 2 * g.C * kiln_dtype_size(kiln__nnt_cdt(x->dtype)),
                              &sums);
    if (s == KILN_OK)
      s = chan_grad_launch(op, ctx, grad, x, save_mean, save_rstd, sums.mem,
                           grad_weight ? t[1].dst : NULL, grad_bias ? t[2].dst : NULL, &g, g.C,
                           1, NN_BN);
  }
  if (s == KILN_OK && grad_x && x->numel) {
    cl_kernel k;
    s = kiln__ops_kernel(op, ctx, KILN__NNT_NORM, x->dtype, "bn_dx", &k);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, grad);
      kiln__args_tensor(&a, x);
      kiln__args_tensor(&a, save_mean);
      kiln__args_tensor(&a, save_rstd);
      kiln__args_tensor(&a, weight);
      kiln__args_mem(&a, sums.mem);
      kiln__args_tensor(&a, t[0].dst);
      kiln__args_u64(&a, g.N);
      kiln__args_u64(&a, g.C);
      kiln__args_u64(&a, g.S);
      kiln__args_u32(&a, (weight ? NN_W : 0) | (training ? 0 : BN_EVAL));
      s = a.status;
      if (s == KILN_OK)
        s = kiln__launch_3d(op, ctx, k, g.S, g.C, g.N);
    }
  }
  if (sums.mem)
    kiln__ops_tmp_free(ctx, &sums);
  s = kiln__ops_outs_finish(op, ctx, outs, 3, t, s);
  kiln__ctx_unlock(ctx);
  return s;
}
