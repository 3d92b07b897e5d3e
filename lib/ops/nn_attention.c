/*
 * nn training family: scaled dot-product attention forward and backward, and rotary position
 * embedding (cl_kernels/nn_attention.cl).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "core/shape.h"
#include "kiln/nn_attention.h"
#include "ops/nn_train.h"
#include "runtime/runtime.h"

/* Must match cl_kernels/nn_attention.cl. */
#define ATT_DMAX 128
enum { ATT_CAUSAL = 1, ATT_MASK = 2 };
enum { ROPE_HALF = 1, ROPE_INV = 2 };

/* Work-group sizes of att_fwd (ATT_BQ) and the backward kernels (ATT_BB) per dtype. */
static uint64_t
att_bq(kiln_dtype dt)
{
  return dt == KILN_F64 ? 16 : 32;
}

static uint64_t
att_bb(kiln_dtype dt)
{
  return dt == KILN_F64 ? 7 : 15;
}

/* The geometry of one attention call. */
typedef struct {
  uint64_t BH, Sq, Sk, D, Dv, mstride;
  kiln__shape oshape, lshape;
  double scale;
} att_geo;

static kiln_status
att_geometry(const char *op, kiln_context *ctx, const kiln_tensor *q, const kiln_tensor *k,
             const kiln_tensor *v, const kiln_tensor *mask, double scale, att_geo *g)
{
  KILN_TRY(kiln__nnt_check_float(op, ctx, q, "q"));
  KILN_RETURN_IF(!k || !v, KILN_ERR_INVALID_HANDLE, op, "k or v is NULL");
  KILN_TRY(kiln__tensor_check(op, k, ctx));
  KILN_TRY(kiln__tensor_check(op, v, ctx));
  KILN_RETURN_IF(k->dtype != q->dtype || v->dtype != q->dtype, KILN_ERR_DTYPE, op,
                 "q, k and v are %s, %s and %s; they must share one dtype",
                 kiln_dtype_name(q->dtype), kiln_dtype_name(k->dtype), kiln_dtype_name(v->dtype));
  size_t nd = q->shape.ndim;
  char a[128], b[128], c[128];
  KILN_RETURN_IF(nd < 2 || k->shape.ndim != nd || v->shape.ndim != nd, KILN_ERR_SHAPE, op,
                 "q %s, k %s, v %s: expected [..., Sq, D], [..., Sk, D], [..., Sk, Dv]",
                 kiln__shape_format(&q->shape, a, sizeof a),
                 kiln__shape_format(&k->shape, b, sizeof b),
                 kiln__shape_format(&v->shape, c, sizeof c));
  memset(g, 0, sizeof *g);
  g->BH = 1;
  for (size_t i = 0; i + 2 < nd; i++) {
    KILN_RETURN_IF(k->shape.dims[i] != q->shape.dims[i] || v->shape.dims[i] != q->shape.dims[i],
                   KILN_ERR_SHAPE, op, "q %s, k %s, v %s: the leading axes differ",
                   kiln__shape_format(&q->shape, a, sizeof a),
                   kiln__shape_format(&k->shape, b, sizeof b),
                   kiln__shape_format(&v->shape, c, sizeof c));
    g->BH *= (uint64_t)q->shape.dims[i];
  }
  g->Sq = (uint64_t)q->shape.dims[nd - 2];
  g->D = (uint64_t)q->shape.dims[nd - 1];
  g->Sk = (uint64_t)k->shape.dims[nd - 2];
  g->Dv = (uint64_t)v->shape.dims[nd - 1];
  KILN_RETURN_IF(k->shape.dims[nd - 1] != q->shape.dims[nd - 1] ||
                     v->shape.dims[nd - 2] != k->shape.dims[nd - 2],
                 KILN_ERR_SHAPE, op, "q %s, k %s, v %s: expected [..., Sq, D], [..., Sk, D], "
                 "[..., Sk, Dv]",
                 kiln__shape_format(&q->shape, a, sizeof a),
                 kiln__shape_format(&k->shape, b, sizeof b),
                 kiln__shape_format(&v->shape, c, sizeof c));
  KILN_RETURN_IF(g->D == 0 || g->Dv == 0, KILN_ERR_SHAPE, op, "a head dimension is 0");
  KILN_RETURN_IF(g->D > ATT_DMAX || g->Dv > ATT_DMAX, KILN_ERR_UNSUPPORTED, op,
                 "head dimensions %llu and %llu: at most %d are supported",
                 (unsigned long long)g->D, (unsigned long long)g->Dv, ATT_DMAX);
  KILN_RETURN_IF(scale != 0 && !isfinite(scale), KILN_ERR_INVALID_ARGUMENT, op,
                 "scale %g must be finite (0: 1 / sqrt(D))", scale);
  g->scale = scale != 0 ? scale : 1 / sqrt((double)g->D);
  g->oshape = q->shape;
  g->oshape.dims[nd - 1] = (int64_t)g->Dv;
  g->lshape = q->shape;
  g->lshape.ndim = nd - 1;
  if (mask) {
    KILN_TRY(kiln__tensor_check(op, mask, ctx));
    KILN_RETURN_IF(mask->dtype != q->dtype, KILN_ERR_DTYPE, op, "mask is %s, expected %s",
                   kiln_dtype_name(mask->dtype), kiln_dtype_name(q->dtype));
    kiln__shape full = q->shape;
    full.dims[nd - 1] = (int64_t)g->Sk;
    int two = mask->shape.ndim == 2 && (uint64_t)mask->shape.dims[0] == g->Sq &&
              (uint64_t)mask->shape.dims[1] == g->Sk;
    KILN_RETURN_IF(!two && !kiln__shape_equal(&mask->shape, &full), KILN_ERR_SHAPE, op,
                   "mask has shape %s, expected [%llu, %llu] or %s",
                   kiln__shape_format(&mask->shape, a, sizeof a), (unsigned long long)g->Sq,
                   (unsigned long long)g->Sk, kiln__shape_format(&full, b, sizeof b));
    g->mstride = two ? 0 : g->Sq * g->Sk;
  }
  return KILN_OK;
}

static kiln_status
group_count(const char *op, uint64_t BH, uint64_t S, uint64_t tile, uint64_t *groups)
{
  uint64_t t = (S + tile - 1) / tile;
  KILN_RETURN_IF(t && BH > (uint64_t)INT32_MAX / t, KILN_ERR_OVERFLOW, op,
                 "%llu x %llu work-groups exceed 2^31 - 1", (unsigned long long)BH,
                 (unsigned long long)t);
  *groups = BH * t;
  return KILN_OK;
}

/* The arguments every attention kernel starts with: q, k, v, mask. */
static void
att_args_qkvm(kiln__args *a, const kiln_tensor *q, const kiln_tensor *k, const kiln_tensor *v,
              const kiln_tensor *mask)
{
  kiln__args_tensor(a, q);
  kiln__args_tensor(a, k);
  kiln__args_tensor(a, v);
  kiln__args_tensor(a, mask);
}

static void
att_args_geo(kiln__args *a, const att_geo *g, kiln_dtype dt, uint32_t flags)
{
  kiln__args_u64(a, g->BH);
  kiln__args_u64(a, g->Sq);
  kiln__args_u64(a, g->Sk);
  kiln__args_u64(a, g->D);
  kiln__args_u64(a, g->Dv);
  kiln__args_u64(a, g->mstride);
  kiln__args_float(a, dt, g->scale);
  kiln__args_u32(a, flags);
}

static kiln_status
check_outs(const char *op, kiln_context *ctx, kiln_tensor **const *outs, const char *const *names,
           size_t n)
{
  kiln_tensor *given[3] = {NULL, NULL, NULL};
  for (size_t i = 0; i < n; i++)
    if (outs[i] && *outs[i]) {
      KILN_TRY(kiln__tensor_check(op, *outs[i], ctx));
      given[i] = *outs[i];
    }
  return kiln__ops_outputs_disjoint(op, given, names, n);
}

/* Begins the wanted targets (none in place: the kernels read inputs other items write). */
static kiln_status
begin_targets(const char *op, kiln_context *ctx, kiln_dtype dt, kiln_tensor **const *outs,
              const kiln__shape *const *shapes, const kiln_tensor *const *ins, size_t nins,
              size_t n, kiln__out_target *t)
{
  for (size_t i = 0; i < n; i++) {
    memset(&t[i], 0, sizeof t[i]);
    if (!outs[i])
      continue;
    kiln_status s = kiln__ops_out_begin(op, ctx, dt, shapes[i], outs[i], ins, nins, 0, &t[i]);
    if (s != KILN_OK) {
      kiln__ctx_lock(ctx);
      for (size_t j = 0; j < i; j++)
        if (outs[j])
          kiln__ops_out_finish(op, ctx, &t[j], s);
      kiln__ctx_unlock(ctx);
      return s;
    }
  }
  return KILN_OK;
}

static kiln_status
finish_targets(const char *op, kiln_context *ctx, kiln_tensor **const *outs, size_t n,
               kiln__out_target *t, kiln_status s)
{
  for (size_t i = 0; i < n; i++)
    if (outs[i])
      s = kiln__ops_out_finish(op, ctx, &t[i], s);
  return s;
}

kiln_status
kiln_attention(kiln_context *ctx, const kiln_tensor *q, const kiln_tensor *k,
               const kiln_tensor *v, const kiln_tensor *mask, int causal, double scale,
               kiln_tensor **out, kiln_tensor **lse)
{
  static const char op[] = "kiln_attention";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  att_geo g;
  KILN_TRY(att_geometry(op, ctx, q, k, v, mask, scale, &g));
  kiln_dtype dt = q->dtype;
  uint64_t groups = 0;
  KILN_TRY(group_count(op, g.BH, g.Sq, att_bq(dt), &groups));
  kiln_tensor **outs[2] = {out, lse};
  static const char *const names[2] = {"out", "lse"};
  KILN_TRY(check_outs(op, ctx, outs, names, 2));
  const kiln__shape *shapes[2] = {&g.oshape, &g.lshape};
  const kiln_tensor *ins[4] = {q, k, v, mask};
  kiln__out_target t[2];
  KILN_TRY(begin_targets(op, ctx, dt, outs, shapes, ins, 4, 2, t));
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  kiln_tensor *lt = NULL;
  if (groups) {
    if (lse)
      lt = t[1].dst;
    else
      s = kiln__ops_scratch(op, ctx, dt, g.BH * g.Sq, &lt);
    cl_kernel kk;
    if (s == KILN_OK)
      s = kiln__ops_kernel(op, ctx, KILN__NNT_ATT, dt, "att_fwd", &kk);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, kk);
      att_args_qkvm(&a, q, k, v, mask);
      kiln__args_tensor(&a, t[0].dst);
      kiln__args_tensor(&a, lt);
      att_args_geo(&a, &g, dt, (causal ? ATT_CAUSAL : 0) | (mask ? ATT_MASK : 0));
      /* Two work-items per query row (cl_kernels/nn_attention.cl). */
      size_t local = 2 * (size_t)att_bq(dt);
      s = kiln__args_enqueue_1d(&a, ctx, (size_t)groups * local, local);
    }
    if (!lse)
      kiln_tensor_release(lt);
  }
  s = finish_targets(op, ctx, outs, 2, t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_attention_backward(kiln_context *ctx, const kiln_tensor *grad_out, const kiln_tensor *q,
                        const kiln_tensor *k, const kiln_tensor *v, const kiln_tensor *mask,
                        int causal, double scale, const kiln_tensor *out, const kiln_tensor *lse,
                        kiln_tensor **grad_q, kiln_tensor **grad_k, kiln_tensor **grad_v)
{
  static const char op[] = "kiln_attention_backward";
  KILN_TRY(kiln__ctx_check(op, ctx));
  att_geo g;
  KILN_TRY(att_geometry(op, ctx, q, k, v, mask, scale, &g));
  kiln_dtype dt = q->dtype;
  char a1[128], a2[128];
  const kiln_tensor *chk[3] = {grad_out, out, lse};
  static const char *const cn[3] = {"grad_out", "out", "lse"};
  const kiln__shape *cs[3] = {&g.oshape, &g.oshape, &g.lshape};
  for (int i = 0; i < 3; i++) {
    KILN_RETURN_IF(!chk[i], KILN_ERR_INVALID_HANDLE, op, "%s is NULL", cn[i]);
    KILN_TRY(kiln__tensor_check(op, chk[i], ctx));
    KILN_RETURN_IF(chk[i]->dtype != dt, KILN_ERR_DTYPE, op, "%s is %s, expected %s", cn[i],
                   kiln_dtype_name(chk[i]->dtype), kiln_dtype_name(dt));
    KILN_RETURN_IF(!kiln__shape_equal(&chk[i]->shape, cs[i]), KILN_ERR_SHAPE, op,
                   "%s has shape %s, expected %s", cn[i],
                   kiln__shape_format(&chk[i]->shape, a1, sizeof a1),
                   kiln__shape_format(cs[i], a2, sizeof a2));
  }
  uint64_t gq = 0, gk = 0;
  KILN_TRY(group_count(op, g.BH, g.Sq, att_bb(dt), &gq));
  KILN_TRY(group_count(op, g.BH, g.Sk, att_bb(dt), &gk));
  kiln_tensor **outs[3] = {grad_q, grad_k, grad_v};
  static const char *const names[3] = {"grad_q", "grad_k", "grad_v"};
  KILN_TRY(check_outs(op, ctx, outs, names, 3));
  const kiln__shape *shapes[3] = {&q->shape, &k->shape, &v->shape};
  const kiln_tensor *ins[7] = {grad_out, q, k, v, mask, out, lse};
  kiln__out_target t[3];
  KILN_TRY(begin_targets(op, ctx, dt, outs, shapes, ins, 7, 3, t));
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  uint32_t flags = (causal ? ATT_CAUSAL : 0) | (mask ? ATT_MASK : 0);
  size_t local = (size_t)att_bb(dt);
  kiln__ops_tmp delta = {0};
  uint64_t rows = g.BH * g.Sq;
  if (rows && (grad_q || ((grad_k || grad_v) && g.Sk))) {
    s = kiln__ops_tmp_alloc(ctx, rows * kiln_dtype_size(dt), &delta);
    cl_kernel kk;
    if (s == KILN_OK)
      s = kiln__ops_kernel(op, ctx, KILN__NNT_ATT, dt, "att_bwd_pre", &kk);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, kk);
      kiln__args_tensor(&a, grad_out);
      kiln__args_tensor(&a, out);
      kiln__args_mem(&a, delta.mem);
      kiln__args_u64(&a, rows);
      kiln__args_u64(&a, g.Dv);
      s = kiln__args_launch_1d(&a, ctx, rows, 0);
    }
  }
  if (s == KILN_OK && (grad_k || grad_v) && gk) {
    /* dk and dv come from one kernel; an unwanted one goes to a scratch tensor. */
    kiln_tensor *dk = grad_k ? t[1].dst : NULL, *dv = grad_v ? t[2].dst : NULL;
    kiln_tensor *mk = NULL, *mv = NULL;
    if (!dk)
      s = kiln__ops_scratch(op, ctx, dt, k->numel, &mk), dk = mk;
    if (s == KILN_OK && !dv)
      s = kiln__ops_scratch(op, ctx, dt, v->numel, &mv), dv = mv;
    cl_kernel kk;
    if (s == KILN_OK)
      s = kiln__ops_kernel(op, ctx, KILN__NNT_ATT, dt, "att_bwd_dkdv", &kk);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, kk);
      att_args_qkvm(&a, q, k, v, mask);
      kiln__args_tensor(&a, grad_out);
      kiln__args_tensor(&a, lse);
      kiln__args_mem(&a, delta.mem);
      kiln__args_tensor(&a, dk);
      kiln__args_tensor(&a, dv);
      att_args_geo(&a, &g, dt, flags);
      s = kiln__args_enqueue_1d(&a, ctx, (size_t)gk * local, local);
    }
    kiln_tensor_release(mk);
    kiln_tensor_release(mv);
  }
  if (s == KILN_OK && grad_q && gq) {
    cl_kernel kk;
    s = kiln__ops_kernel(op, ctx, KILN__NNT_ATT, dt, "att_bwd_dq", &kk);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, kk);
      att_args_qkvm(&a, q, k, v, mask);
      kiln__args_tensor(&a, grad_out);
      kiln__args_tensor(&a, lse);
      kiln__args_mem(&a, delta.mem);
      kiln__args_tensor(&a, t[0].dst);
      att_args_geo(&a, &g, dt, flags);
      s = kiln__args_enqueue_1d(&a, ctx, (size_t)gq * local, local);
    }
  }
  if (delta.mem)
    kiln__ops_tmp_free(ctx, &delta);
  s = finish_targets(op, ctx, outs, 3, t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---------------------------------------------------------------- RoPE */

static kiln_status
rope_run(const char *op, kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *c,
         const kiln_tensor *sn, kiln_rope_layout layout, int inv, kiln_tensor **out)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(kiln__nnt_check_float(op, ctx, x, inv ? "grad" : "x"));
  KILN_RETURN_IF(layout != KILN_ROPE_INTERLEAVED && layout != KILN_ROPE_HALF,
                 KILN_ERR_INVALID_ARGUMENT, op, "unknown layout %d", (int)layout);
  char a[128], b[128];
  KILN_RETURN_IF(x->shape.ndim < 2, KILN_ERR_SHAPE, op, "x has shape %s, expected [..., S, D]",
                 kiln__shape_format(&x->shape, a, sizeof a));
  KILN_RETURN_IF(!c || !sn, KILN_ERR_INVALID_HANDLE, op, "cos or sin is NULL");
  KILN_TRY(kiln__nnt_check_like(op, ctx, sn, c, "sin"));
  KILN_RETURN_IF(c->dtype != x->dtype, KILN_ERR_DTYPE, op, "cos is %s, expected %s",
                 kiln_dtype_name(c->dtype), kiln_dtype_name(x->dtype));
  uint64_t S = (uint64_t)x->shape.dims[x->shape.ndim - 2];
  uint64_t D = (uint64_t)x->shape.dims[x->shape.ndim - 1];
  KILN_RETURN_IF(c->shape.ndim != 2 || (uint64_t)c->shape.dims[0] != S ||
                     2 * (uint64_t)c->shape.dims[1] > D,
                 KILN_ERR_SHAPE, op, "cos has shape %s; x %s needs [S, R/2] with R <= D",
                 kiln__shape_format(&c->shape, a, sizeof a),
                 kiln__shape_format(&x->shape, b, sizeof b));
  uint64_t R = 2 * (uint64_t)c->shape.dims[1];
  const kiln_tensor *ins[3] = {x, c, sn};
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, &x->shape, out, ins, 3, 1, &t));
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  if (x->numel) {
    cl_kernel kk;
    s = kiln__ops_kernel(op, ctx, KILN__NNT_ATT, x->dtype, "rope", &kk);
    if (s == KILN_OK) {
      uint64_t rows = x->numel / D;
      kiln__args ar = kiln__args_begin(op, kk);
      kiln__args_tensor(&ar, x);
      kiln__args_tensor(&ar, c);
      kiln__args_tensor(&ar, sn);
      kiln__args_tensor(&ar, t.dst);
      kiln__args_u64(&ar, rows);
      kiln__args_u64(&ar, S);
      kiln__args_u64(&ar, D);
      kiln__args_u64(&ar, R);
      kiln__args_u32(&ar, (layout == KILN_ROPE_HALF ? ROPE_HALF : 0) | (inv ? ROPE_INV : 0));
      s = kiln__args_launch_1d(&ar, ctx, rows * (R / 2 + D - R), 0);
    }
  }
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_rope(kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *cos_table,
          const kiln_tensor *sin_table, kiln_rope_layout layout, kiln_tensor **out)
{
  return rope_run("kiln_rope", ctx, x, cos_table, sin_table, layout, 0, out);
}

kiln_status
kiln_rope_backward(kiln_context *ctx, const kiln_tensor *grad, const kiln_tensor *cos_table,
                   const kiln_tensor *sin_table, kiln_rope_layout layout, kiln_tensor **grad_in)
{
  return rope_run("kiln_rope_backward", ctx, grad, cos_table, sin_table, layout, 1, grad_in);
}
