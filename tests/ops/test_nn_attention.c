/*
 * nn_attention suite: scaled dot-product attention (kiln/nn_attention.h) forward and backward
 * against the unfused composition in double precision (scores, softmax, weighted sum, and its
 * analytic gradients), by central finite differences of the f64 forward, every forward tile the
 * `attention` tuner family can pick, and bad input. RoPE is in the nn_train suite.
 *
 * Tolerances: |got - want| <= tol (1 + |want|), forward 2e-5 (f32) and 1e-12 (f64), backward
 * 1e-4 and 1e-11; f16 2e-3 and bf16 1.6e-2 (att_tol).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kiln.h"
#include "kiln/nn_attention.h"
#include "nn_hostdata.h"
#include "ops/nn_train.h"

static const kiln_dtype dtypes[] = {KILN_F32, KILN_F64, KILN_F16, KILN_BF16};

/* Loops dt over f32, f64 (with fp64), f16 and bf16. */
#define FOR_DTYPES(dt)                                                                      \
  for (size_t dt##_i = 0; dt##_i < sizeof dtypes / sizeof dtypes[0]; dt##_i++)              \
    for (int dt##_k = dtypes[dt##_i] != KILN_F64 || harness_has_fp64(); dt##_k; dt##_k = 0) \
      for (kiln_dtype dt = dtypes[dt##_i]; dt##_k; dt##_k = 0)

/* Forward and backward tolerances. f16 and bf16 are computed in f32 from the rounded inputs
 * and rounded once on the way out (a few units of 2^-11 and 2^-8; the backward pass takes
 * delta from the rounded out); lse stays in f32. */
static double
att_tol(kiln_dtype dt, int backward)
{
  if (dt == KILN_F16)
    return 2e-3;
  if (dt == KILN_BF16)
    return 1.6e-2;
  if (dt == KILN_F32)
    return backward ? 1e-4 : 2e-5;
  return backward ? 1e-11 : 1e-12;
}

/* ------------------------------------------------------------------ attention */

typedef struct {
  int64_t B0, B1; /* leading shape [B0, B1] (B1 = 0: one leading axis) */
  int64_t Sq, Sk, D, Dv;
  int causal;
  int mask; /* 0 none, 1 shared [Sq, Sk], 2 full */
} att_case;

static const att_case att_cases[] = {
    {1, 0, 1, 1, 16, 16, 0, 0},     {2, 2, 37, 37, 16, 16, 1, 0},   {3, 0, 50, 70, 64, 64, 0, 1},
    {2, 0, 33, 17, 128, 128, 1, 2}, {1, 0, 100, 45, 24, 40, 0, 0},  {2, 0, 5, 0, 16, 16, 0, 0},
    {0, 2, 3, 3, 16, 16, 0, 0},     {1, 0, 129, 129, 32, 32, 1, 1}, {1, 2, 20, 31, 128, 8, 0, 2},
    {1, 0, 9, 13, 16, 16, 1, 1},    {1, 0, 11, 6, 7, 9, 0, 1},
    /* causal with enough queries for the CPU forms' blocks (att_cpu_qblock: 32 rows here),
     * keys no query sees (Sk > Sq) and queries that see every key (Sq > Sk) */
    {1, 0, 130, 200, 16, 16, 1, 0}, {2, 0, 200, 70, 16, 24, 1, 1},
};
/* The cases the small mode (oclgrind) runs: every kernel path at the smallest cost. */
static int
att_small_case(size_t i)
{
  return i == 1 || i == 5 || i == 8 || i == 9;
}

static uint64_t
att_bh(const att_case *c)
{
  return (uint64_t)(c->B0 * (c->B1 ? c->B1 : 1));
}

/* A tensor of the case's leading shape + [r, cl]. */
static kiln_tensor *
att_up(kiln_dtype dt, const att_case *c, int64_t r, int64_t cl, const double *v)
{
  int64_t shape[4];
  size_t nd = 0;
  shape[nd++] = c->B0;
  if (c->B1)
    shape[nd++] = c->B1;
  shape[nd++] = r;
  shape[nd++] = cl;
  return up(dt, nd, shape, v);
}

/* The unfused composition in double: scores, softmax, weighted sum; p kept for backward. */
static void
ref_attention(const att_case *c, const double *q, const double *k, const double *v,
              const double *mask, double scale, double *out, double *lse, double *p)
{
  uint64_t BH = att_bh(c), Sq = (uint64_t)c->Sq, Sk = (uint64_t)c->Sk, D = (uint64_t)c->D,
           Dv = (uint64_t)c->Dv;
  for (uint64_t b = 0; b < BH; b++)
    for (uint64_t i = 0; i < Sq; i++) {
      double *pr = p + (b * Sq + i) * Sk, m = -INFINITY, l = 0;
      for (uint64_t j = 0; j < Sk; j++) {
        double s = 0;
        for (uint64_t d = 0; d < D; d++)
          s += q[(b * Sq + i) * D + d] * k[(b * Sk + j) * D + d];
        s *= scale;
        if (c->causal && j > i)
          s = -INFINITY;
        else if (c->mask)
          s += mask[(c->mask == 2 ? b * Sq * Sk : 0) + i * Sk + j];
        pr[j] = s;
        m = fmax(m, s);
      }
      for (uint64_t j = 0; j < Sk; j++)
        l += m == -INFINITY ? 0 : exp(pr[j] - m);
      for (uint64_t j = 0; j < Sk; j++)
        pr[j] = exp(pr[j] - m) / l;
      lse[b * Sq + i] = m + log(l);
      for (uint64_t d = 0; d < Dv; d++) {
        double a = 0;
        for (uint64_t j = 0; j < Sk; j++)
          a += pr[j] * v[(b * Sk + j) * Dv + d];
        out[(b * Sq + i) * Dv + d] = Sk && m > -INFINITY ? a : NAN;
      }
    }
}

static void
ref_attention_bwd(const att_case *c, const double *q, const double *k, const double *v,
                  const double *p, const double *go, double scale, double *dq, double *dk,
                  double *dv)
{
  uint64_t BH = att_bh(c), Sq = (uint64_t)c->Sq, Sk = (uint64_t)c->Sk, D = (uint64_t)c->D,
           Dv = (uint64_t)c->Dv;
  memset(dq, 0, (BH * Sq * D + 1) * 8);
  memset(dk, 0, (BH * Sk * D + 1) * 8);
  memset(dv, 0, (BH * Sk * Dv + 1) * 8);
  for (uint64_t b = 0; b < BH; b++)
    for (uint64_t i = 0; i < Sq; i++) {
      const double *pr = p + (b * Sq + i) * Sk, *g = go + (b * Sq + i) * Dv;
      double dsum = 0;
      for (uint64_t j = 0; j < Sk; j++) {
        double dp = 0;
        for (uint64_t d = 0; d < Dv; d++)
          dp += g[d] * v[(b * Sk + j) * Dv + d];
        dsum += pr[j] * dp;
      }
      for (uint64_t j = 0; j < Sk; j++) {
        if (pr[j] == 0)
          continue;
        double dp = 0;
        for (uint64_t d = 0; d < Dv; d++) {
          dp += g[d] * v[(b * Sk + j) * Dv + d];
          dv[(b * Sk + j) * Dv + d] += pr[j] * g[d];
        }
        double ds = pr[j] * (dp - dsum) * scale;
        for (uint64_t d = 0; d < D; d++) {
          dq[(b * Sq + i) * D + d] += ds * k[(b * Sk + j) * D + d];
          dk[(b * Sk + j) * D + d] += ds * q[(b * Sq + i) * D + d];
        }
      }
    }
}

START_TEST(attention_against_composition)
{
  kiln_context *ctx = harness_ctx();
  FOR_DTYPES(dt)
  {
    for (size_t ci = 0; ci < sizeof att_cases / sizeof att_cases[0]; ci++) {
      /* The small mode runs f64 and f16 on one case (their loads and stores; the kernels
       * index memory as for f32; bf16 moves the same 2-byte elements as f16). */
      if (harness_small() &&
          (!att_small_case(ci) || (dt != KILN_F32 && ci != 9) || dt == KILN_BF16))
        continue;
      att_case cs = att_cases[ci];
      /* the simulator: heads [1, 2], still two batches over both key tiles, at half the cost */
      if (harness_small() && ci == 1)
        cs.B0 = 1;
      const att_case *c = &cs;
      uint64_t BH = att_bh(c), nq = BH * (uint64_t)(c->Sq * c->D),
               nk = BH * (uint64_t)(c->Sk * c->D), nv = BH * (uint64_t)(c->Sk * c->Dv),
               no = BH * (uint64_t)(c->Sq * c->Dv),
               nm = (c->mask == 2 ? BH : 1) * (uint64_t)(c->Sq * c->Sk);
      double *qh = rand_vec(nq, -1, 1), *kh = rand_vec(nk, -1, 1), *vh = rand_vec(nv, -1, 1);
      double *mh = rand_vec(nm, -2, 1), *gh = rand_vec(no, -1, 1);
      /* A few hidden keys in the masks (never a whole row: row i keeps key 0). */
      for (uint64_t e = 0; e < nm; e++)
        if (e % 7 == 3 && e % (uint64_t)(c->Sk ? c->Sk : 1) != 0)
          mh[e] = -INFINITY;
      round_to(dt, qh, nq), round_to(dt, kh, nk), round_to(dt, vh, nv), round_to(dt, mh, nm);
      round_to(dt, gh, no);
      double scale = ci % 2 ? 0.3 : 1 / sqrt((double)c->D);
      double *out = malloc((no + 1) * 8), *lse = malloc((BH * (uint64_t)c->Sq + 1) * 8);
      double *p = malloc((BH * (uint64_t)(c->Sq * c->Sk) + 1) * 8);
      ref_attention(c, qh, kh, vh, mh, scale, out, lse, p);
      kiln_tensor *q = att_up(dt, c, c->Sq, c->D, qh), *k = att_up(dt, c, c->Sk, c->D, kh);
      kiln_tensor *v = att_up(dt, c, c->Sk, c->Dv, vh), *g = att_up(dt, c, c->Sq, c->Dv, gh);
      kiln_tensor *mask = NULL;
      if (c->mask == 1) {
        int64_t ms[2] = {c->Sq, c->Sk};
        mask = up(dt, 2, ms, mh);
      } else if (c->mask == 2) {
        mask = att_up(dt, c, c->Sq, c->Sk, mh);
      }
      kiln_tensor *o = NULL, *l = NULL;
      KOK(kiln_attention(ctx, q, k, v, mask, c->causal, ci % 2 ? 0.3 : 0, &o, &l));
      ck_assert_int_eq(kiln_tensor_dtype(o), dt);
      ck_assert_int_eq(kiln_tensor_dtype(l), dt == KILN_F64 ? KILN_F64 : KILN_F32);
      expect_tensor(o, out, att_tol(dt, 0), "attention out");
      expect_tensor(l, lse, NN_HALF(dt) ? 1e-4 : att_tol(dt, 0), "attention lse");
      if (c->Sk) {
        double *dq = malloc((nq + 1) * 8), *dk = malloc((nk + 1) * 8), *dv = malloc((nv + 1) * 8);
        ref_attention_bwd(c, qh, kh, vh, p, gh, scale, dq, dk, dv);
        kiln_tensor *tq = NULL, *tk = NULL, *tv = NULL;
        KOK(kiln_attention_backward(ctx, g, q, k, v, mask, c->causal, ci % 2 ? 0.3 : 0, o, l, &tq,
                                    &tk, &tv));
        double btol = att_tol(dt, 1);
        expect_tensor(tq, dq, btol, "attention grad_q");
        expect_tensor(tk, dk, btol, "attention grad_k");
        expect_tensor(tv, dv, btol, "attention grad_v");
        /* Only some gradients wanted (the simulator: on one case, where the kernels' stores
         * of the gradients not wanted are left out). */
        if (!harness_small() || ci == 9) {
          kiln_tensor *tk2 = NULL;
          KOK(kiln_attention_backward(ctx, g, q, k, v, mask, c->causal, ci % 2 ? 0.3 : 0, o, l,
                                      NULL, &tk2, NULL));
          expect_tensor(tk2, dk, btol, "attention grad_k alone");
          kiln_tensor_release(tk2);
        }
        free(dq), free(dk), free(dv);
        kiln_tensor_release(tq), kiln_tensor_release(tk), kiln_tensor_release(tv);
      }
      free(qh), free(kh), free(vh), free(mh), free(gh), free(out), free(lse), free(p);
      kiln_tensor_release(q), kiln_tensor_release(k), kiln_tensor_release(v);
      kiln_tensor_release(g), kiln_tensor_release(mask), kiln_tensor_release(o);
      kiln_tensor_release(l);
    }
  }
}
END_TEST

/*
 * Every tile the `attention` tuner family can pick (tile=0 is the rule; tiles that do not fit
 * the device fall back to it), forced with kiln_tune_override, against the composition:
 * lengths around the tiles (1, 7, 65, 130), head dimensions 128, 64 and odd ones (33 runs on
 * the 64-wide accumulators, 5 with Dv 19 on the 32- or 64-wide ones), causal (also with
 * Sq < Sk and Sq > Sk), both masks.
 */
static const att_case att_tile_cases[] = {
    {1, 0, 130, 130, 128, 128, 1, 0}, {2, 0, 65, 7, 64, 64, 0, 1},  {1, 0, 7, 65, 33, 33, 1, 2},
    {1, 0, 1, 130, 5, 19, 0, 2},      {1, 0, 130, 65, 5, 19, 1, 1},
};
#define ATT_TILES 12

START_TEST(attention_every_tile)
{
  kiln_context *ctx = harness_ctx();
  /* The flash kernel's tiles on every device (CPU devices run the forward as GEMMs by default,
   * attention_against_composition). */
  kiln__nnt_att_flash = 1;
  FOR_DTYPES(dt)
  {
    if (NN_HALF(dt))
      continue; /* the tuner times f32 and f64; halves run the rule's tile (above) */
    for (int tile = 0; tile < ATT_TILES; tile++) {
      /* the simulator: tile 0 on f32, tile 3 on f64 (a tile indexes memory alike for both) */
      if (harness_small() && tile != (dt == KILN_F32 ? 0 : 3))
        continue;
      char params[16];
      snprintf(params, sizeof params, "tile=%d", tile);
      KOK(kiln_tune_override(ctx, "attention", dt, NULL, params));
      for (size_t ci = 0; ci < sizeof att_tile_cases / sizeof att_tile_cases[0]; ci++) {
        /* Not in the small mode: 130 x 130 at head 128 (4 M multiply-adds a pass, minutes in
         * oclgrind); the other cases cross the same tile edges. */
        if (harness_small() && ci == 0)
          continue;
        const att_case *c = &att_tile_cases[ci];
        uint64_t BH = att_bh(c), nq = BH * (uint64_t)(c->Sq * c->D),
                 nk = BH * (uint64_t)(c->Sk * c->D), nv = BH * (uint64_t)(c->Sk * c->Dv),
                 no = BH * (uint64_t)(c->Sq * c->Dv),
                 nm = (c->mask == 2 ? BH : 1) * (uint64_t)(c->Sq * c->Sk);
        double *qh = rand_vec(nq, -1, 1), *kh = rand_vec(nk, -1, 1), *vh = rand_vec(nv, -1, 1);
        double *mh = rand_vec(nm, -2, 1);
        for (uint64_t e = 0; e < nm; e++)
          if (e % 5 == 2 && e % (uint64_t)c->Sk != 0)
            mh[e] = -INFINITY;
        round_to(dt, qh, nq), round_to(dt, kh, nk), round_to(dt, vh, nv), round_to(dt, mh, nm);
        double scale = 1 / sqrt((double)c->D);
        double *out = malloc((no + 1) * 8), *lse = malloc((BH * (uint64_t)c->Sq + 1) * 8);
        double *p = malloc((BH * (uint64_t)(c->Sq * c->Sk) + 1) * 8);
        ref_attention(c, qh, kh, vh, mh, scale, out, lse, p);
        kiln_tensor *q = att_up(dt, c, c->Sq, c->D, qh), *k = att_up(dt, c, c->Sk, c->D, kh);
        kiln_tensor *v = att_up(dt, c, c->Sk, c->Dv, vh), *mask = NULL;
        if (c->mask == 1) {
          int64_t ms[2] = {c->Sq, c->Sk};
          mask = up(dt, 2, ms, mh);
        } else if (c->mask == 2) {
          mask = att_up(dt, c, c->Sq, c->Sk, mh);
        }
        kiln_tensor *o = NULL, *l = NULL;
        KOK(kiln_attention(ctx, q, k, v, mask, c->causal, 0, &o, &l));
        char what[64];
        snprintf(what, sizeof what, "attention out (tile %d, case %zu)", tile, ci);
        double tol = dt == KILN_F32 ? 2e-5 : 1e-12;
        expect_tensor(o, out, tol, what);
        snprintf(what, sizeof what, "attention lse (tile %d, case %zu)", tile, ci);
        expect_tensor(l, lse, tol, what);
        free(qh), free(kh), free(vh), free(mh), free(out), free(lse), free(p);
        kiln_tensor_release(q), kiln_tensor_release(k), kiln_tensor_release(v);
        kiln_tensor_release(mask), kiln_tensor_release(o), kiln_tensor_release(l);
      }
    }
    KOK(kiln_tune_override(ctx, "attention", dt, NULL, NULL));
  }
  KEXPECT(kiln_tune_override(ctx, "attention", KILN_F32, NULL, "tile=12"),
          KILN_ERR_INVALID_ARGUMENT);
  kiln__nnt_att_flash = 0;
}
END_TEST

/*
 * Every backward table the `attention` family's "bwd" can name (0 the rule; 2 to 7 fall back
 * to 1 on devices without their work-groups or local memory, all but 3 in f64), against the
 * analytic gradients: lengths around the tables' tiles (7, 65, 130), causal with Sq above and
 * below Sk, both masks, heads 128, 64 and odd; f16 and bf16 with the rule (on GPUs the
 * fused table 6).
 */
static const att_case att_bwd_cases[] = {
    {1, 0, 130, 130, 128, 128, 1, 1},
    {2, 0, 65, 7, 64, 64, 0, 2},
    {1, 0, 7, 130, 33, 19, 1, 0},
    {1, 0, 130, 65, 5, 128, 1, 2},
};

/* Whether table bwd runs: all, or those KILN_TEST_ATT_BWD lists (space- or comma-separated;
 * bench/h200/attn.sh names the tables it times, whose programs its kiln cache holds). */
static int
att_bwd_wanted(int bwd)
{
  const char *list = getenv("KILN_TEST_ATT_BWD");
  if (!list || !*list)
    return 1;
  for (const char *p = list; *p;) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p) {
      p++;
      continue;
    }
    if (v == bwd)
      return 1;
    p = end;
  }
  return 0;
}

START_TEST(attention_every_backward)
{
  kiln_context *ctx = harness_ctx();
  /* The flash kernels' tables on every device (CPU devices run the backward as GEMMs by
   * default: attention_against_composition, attention_finite_differences). */
  kiln__nnt_att_flash = 1;
  FOR_DTYPES(dt)
  {
    for (size_t ci = 0; ci < sizeof att_bwd_cases / sizeof att_bwd_cases[0]; ci++) {
      const att_case *c = &att_bwd_cases[ci];
      uint64_t BH = att_bh(c), nq = BH * (uint64_t)(c->Sq * c->D),
               nk = BH * (uint64_t)(c->Sk * c->D), nv = BH * (uint64_t)(c->Sk * c->Dv),
               no = BH * (uint64_t)(c->Sq * c->Dv),
               nm = (c->mask == 2 ? BH : 1) * (uint64_t)(c->Sq * c->Sk);
      double *qh = rand_vec(nq, -1, 1), *kh = rand_vec(nk, -1, 1), *vh = rand_vec(nv, -1, 1);
      double *mh = rand_vec(nm, -2, 1), *gh = rand_vec(no, -1, 1);
      for (uint64_t e = 0; e < nm; e++)
        if (e % 5 == 2 && e % (uint64_t)c->Sk != 0)
          mh[e] = -INFINITY;
      round_to(dt, qh, nq), round_to(dt, kh, nk), round_to(dt, vh, nv), round_to(dt, mh, nm);
      round_to(dt, gh, no);
      double scale = 1 / sqrt((double)c->D);
      double *out = malloc((no + 1) * 8), *lse = malloc((BH * (uint64_t)c->Sq + 1) * 8);
      double *p = malloc((BH * (uint64_t)(c->Sq * c->Sk) + 1) * 8);
      double *dq = malloc((nq + 1) * 8), *dk = malloc((nk + 1) * 8), *dv = malloc((nv + 1) * 8);
      ref_attention(c, qh, kh, vh, mh, scale, out, lse, p);
      ref_attention_bwd(c, qh, kh, vh, p, gh, scale, dq, dk, dv);
      kiln_tensor *q = att_up(dt, c, c->Sq, c->D, qh), *k = att_up(dt, c, c->Sk, c->D, kh);
      kiln_tensor *v = att_up(dt, c, c->Sk, c->Dv, vh), *g = att_up(dt, c, c->Sq, c->Dv, gh);
      kiln_tensor *mask = NULL;
      if (c->mask == 1) {
        int64_t ms[2] = {c->Sq, c->Sk};
        mask = up(dt, 2, ms, mh);
      } else if (c->mask == 2) {
        mask = att_up(dt, c, c->Sq, c->Sk, mh);
      }
      /* One forward with the rule (the tables' programs then build the backward kernels
       * alone), then the backward with each table. */
      kiln_tensor *o = NULL, *l = NULL;
      KOK(kiln_attention(ctx, q, k, v, mask, c->causal, 0, &o, &l));
      for (int bwd = 0; bwd < 8; bwd++) {
        /* Halves take no override (the tuner times f32 and f64): the rule, which on GPUs
         * is the fused table 6 (its f32 accumulator and dq_store), on CPUs table 1. */
        if (!att_bwd_wanted(bwd) || (NN_HALF(dt) && bwd != 0))
          continue;
        char params[16];
        snprintf(params, sizeof params, "bwd=%d", bwd);
        if (!NN_HALF(dt))
          KOK(kiln_tune_override(ctx, "attention", dt, NULL, params));
        kiln_tensor *tq = NULL, *tk = NULL, *tv = NULL;
        KOK(kiln_attention_backward(ctx, g, q, k, v, mask, c->causal, 0, o, l, &tq, &tk, &tv));
        char what[64];
        const char *names[3] = {"grad_q", "grad_k", "grad_v"};
        kiln_tensor *got[3] = {tq, tk, tv};
        double *want[3] = {dq, dk, dv};
        for (int w = 0; w < 3; w++) {
          snprintf(what, sizeof what, "attention %s (bwd %d, case %zu)", names[w], bwd, ci);
          expect_tensor(got[w], want[w], att_tol(dt, 1), what);
        }
        kiln_tensor_release(tq), kiln_tensor_release(tk), kiln_tensor_release(tv);
      }
      if (!NN_HALF(dt))
        KOK(kiln_tune_override(ctx, "attention", dt, NULL, NULL));
      free(qh), free(kh), free(vh), free(mh), free(gh), free(out), free(lse), free(p);
      free(dq), free(dk), free(dv);
      kiln_tensor_release(q), kiln_tensor_release(k), kiln_tensor_release(v);
      kiln_tensor_release(g), kiln_tensor_release(mask), kiln_tensor_release(o);
      kiln_tensor_release(l);
    }
  }
  KEXPECT(kiln_tune_override(ctx, "attention", KILN_F32, NULL, "bwd=8"), KILN_ERR_INVALID_ARGUMENT);
  kiln__nnt_att_flash = 0;
}
END_TEST

static double
att_objective(const att_case *c, const double *qh, const double *kh, const double *vh,
              const double *u)
{
  kiln_tensor *q = att_up(KILN_F64, c, c->Sq, c->D, qh), *k = att_up(KILN_F64, c, c->Sk, c->D, kh);
  kiln_tensor *v = att_up(KILN_F64, c, c->Sk, c->Dv, vh), *o = NULL;
  KOK(kiln_attention(harness_ctx(), q, k, v, NULL, c->causal, 0, &o, NULL));
  double *oh = down(o), a = 0;
  for (uint64_t i = 0; i < kiln_tensor_numel(o); i++)
    a += u[i] * oh[i];
  free(oh);
  kiln_tensor_release(q), kiln_tensor_release(k), kiln_tensor_release(v), kiln_tensor_release(o);
  return a;
}

START_TEST(attention_finite_differences)
{
  if (!harness_has_fp64())
    return;
  static const att_case small[] = {{1, 0, 5, 7, 16, 16, 0, 0}, {2, 0, 9, 9, 16, 16, 1, 0}};
  const double h = 1e-6;
  for (size_t ci = 0; ci < 2; ci++) {
    const att_case *c = &small[ci];
    uint64_t BH = att_bh(c), nq = BH * (uint64_t)(c->Sq * c->D), nk = BH * (uint64_t)(c->Sk * c->D),
             nv = BH * (uint64_t)(c->Sk * c->Dv), no = BH * (uint64_t)(c->Sq * c->Dv);
    double *qh = rand_vec(nq, -1, 1), *kh = rand_vec(nk, -1, 1), *vh = rand_vec(nv, -1, 1);
    double *u = rand_vec(no, -1, 1);
    kiln_tensor *q = att_up(KILN_F64, c, c->Sq, c->D, qh),
                *k = att_up(KILN_F64, c, c->Sk, c->D, kh);
    kiln_tensor *v = att_up(KILN_F64, c, c->Sk, c->Dv, vh),
                *g = att_up(KILN_F64, c, c->Sq, c->Dv, u);
    kiln_tensor *o = NULL, *l = NULL, *dq = NULL, *dk = NULL, *dv = NULL;
    KOK(kiln_attention(harness_ctx(), q, k, v, NULL, c->causal, 0, &o, &l));
    KOK(kiln_attention_backward(harness_ctx(), g, q, k, v, NULL, c->causal, 0, o, l, &dq, &dk,
                                &dv));
    double *an[3] = {down(dq), down(dk), down(dv)};
    double *vals[3] = {qh, kh, vh};
    uint64_t cnt[3] = {nq, nk, nv};
    for (int w = 0; w < 3; w++)
      for (uint64_t i = 0; i < cnt[w]; i += 1 + cnt[w] / 40) {
        double keep = vals[w][i], f[2];
        for (int sg = 0; sg < 2; sg++) {
          vals[w][i] = keep + (sg ? -h : h);
          f[sg] = att_objective(c, qh, kh, vh, u);
        }
        vals[w][i] = keep;
        double fd = (f[0] - f[1]) / (2 * h);
        EXPECT(fabs(fd - an[w][i]) <= 1e-6 * (1 + fabs(an[w][i])),
               "case %zu d%c[%llu]: fd %.12g analytic %.12g", ci, "qkv"[w], (unsigned long long)i,
               fd, an[w][i]);
      }
    for (int w = 0; w < 3; w++)
      free(an[w]);
    free(qh), free(kh), free(vh), free(u);
    kiln_tensor_release(q), kiln_tensor_release(k), kiln_tensor_release(v);
    kiln_tensor_release(g), kiln_tensor_release(o), kiln_tensor_release(l);
    kiln_tensor_release(dq), kiln_tensor_release(dk), kiln_tensor_release(dv);
  }
}
END_TEST

/*
 * A query row whose keys the mask hides entirely gives NaN and lse -inf, a causal row its keys
 * up to itself; on the flash kernel and on the CPU devices' GEMM form alike, rows of 37 keys
 * (a whole vector and a tail), f32 and f64.
 */
START_TEST(attention_hidden_rows)
{
  kiln_context *ctx = harness_ctx();
  const att_case c = {2, 0, 5, 37, 8, 6, 0, 1};
  for (int causal = 0; causal < 2; causal++)
    for (int flash = 0; flash < 2; flash++)
      FOR_DTYPES(dt)
      {
        if (dt != KILN_F32 && dt != KILN_F64)
          continue;
        kiln__nnt_att_flash = flash;
        att_case cc = c;
        cc.causal = causal;
        uint64_t BH = att_bh(&cc), nq = BH * 5 * 8, nk = BH * 37 * 8, nv = BH * 37 * 6;
        double *qh = rand_vec(nq, -1, 1), *kh = rand_vec(nk, -1, 1), *vh = rand_vec(nv, -1, 1);
        double *mh = rand_vec(5 * 37, -1, 1);
        for (int j = 0; j < 37; j++)
          mh[2 * 37 + j] = -INFINITY; /* row 2 sees nothing */
        round_to(dt, qh, nq), round_to(dt, kh, nk), round_to(dt, vh, nv);
        round_to(dt, mh, 5 * 37);
        double *out = malloc((BH * 5 * 6 + 1) * 8), *lse = malloc((BH * 5 + 1) * 8);
        double *p = malloc((BH * 5 * 37 + 1) * 8);
        ref_attention(&cc, qh, kh, vh, mh, 0.25, out, lse, p);
        int64_t ms[2] = {5, 37};
        kiln_tensor *q = att_up(dt, &cc, 5, 8, qh), *k = att_up(dt, &cc, 37, 8, kh);
        kiln_tensor *v = att_up(dt, &cc, 37, 6, vh), *mask = up(dt, 2, ms, mh);
        kiln_tensor *o = NULL, *l = NULL;
        KOK(kiln_attention(ctx, q, k, v, mask, causal, 0.25, &o, &l));
        char what[80];
        snprintf(what, sizeof what, "hidden rows, causal %d, flash %d, %s", causal, flash,
                 kiln_dtype_name(dt));
        double tol = dt == KILN_F32 ? 2e-5 : 1e-12;
        expect_tensor(o, out, tol, what);
        expect_tensor(l, lse, tol, what);
        free(qh), free(kh), free(vh), free(mh), free(out), free(lse), free(p);
        kiln_tensor_release(q), kiln_tensor_release(k), kiln_tensor_release(v);
        kiln_tensor_release(mask), kiln_tensor_release(o), kiln_tensor_release(l);
      }
  kiln__nnt_att_flash = 0;
}
END_TEST

START_TEST(attention_bad_input)
{
  kiln_context *ctx = harness_ctx();
  double z[2 * 3 * 200] = {0};
  int64_t s1[3] = {2, 3, 16}, s2[3] = {2, 3, 8}, s3[3] = {1, 3, 16}, s4[3] = {2, 3, 200};
  kiln_tensor *q = up(KILN_F32, 3, s1, z), *k8 = up(KILN_F32, 3, s2, z),
              *qb = up(KILN_F32, 3, s3, z);
  kiln_tensor *big = up(KILN_F32, 3, s4, z), *o = NULL;
  KEXPECT(kiln_attention(ctx, q, k8, q, NULL, 0, 0, &o, NULL), KILN_ERR_SHAPE);
  KEXPECT(kiln_attention(ctx, q, qb, qb, NULL, 0, 0, &o, NULL), KILN_ERR_SHAPE);
  KEXPECT(kiln_attention(ctx, big, big, big, NULL, 0, 0, &o, NULL), KILN_ERR_UNSUPPORTED);
  KEXPECT(kiln_attention(ctx, q, q, q, NULL, 0, NAN, &o, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_attention(ctx, q, q, q, q, 0, 0, &o, NULL), KILN_ERR_SHAPE);
  KEXPECT(kiln_attention(ctx, q, q, q, NULL, 0, 0, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_attention_backward(ctx, q, q, q, q, NULL, 0, 0, q, NULL, &o, NULL, NULL),
          KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_attention_backward(ctx, q, q, q, q, NULL, 0, 0, q, q, &o, NULL, NULL),
          KILN_ERR_SHAPE);
  ck_assert(o == NULL);
  /* Integer inputs; an f16 call's lse is f32 (an f16 one is refused by the backward). */
  kiln_tensor *qi = NULL, *qh = up(KILN_F16, 3, s1, z), *lh = NULL, *oh = NULL;
  int64_t s5[2] = {2, 3};
  KOK(kiln_tensor_create(ctx, KILN_I32, 3, s1, &qi));
  KEXPECT(kiln_attention(ctx, qi, qi, qi, NULL, 0, 0, &o, NULL), KILN_ERR_DTYPE);
  KOK(kiln_attention(ctx, qh, qh, qh, NULL, 0, 0, &oh, NULL));
  lh = up(KILN_F16, 2, s5, z);
  KEXPECT(kiln_attention_backward(ctx, qh, qh, qh, qh, NULL, 0, 0, oh, lh, &o, NULL, NULL),
          KILN_ERR_DTYPE);
  ck_assert(o == NULL);
  kiln_tensor_release(qi), kiln_tensor_release(qh), kiln_tensor_release(lh);
  kiln_tensor_release(oh);
  kiln_tensor_release(q), kiln_tensor_release(k8), kiln_tensor_release(qb);
  kiln_tensor_release(big);
}
END_TEST

static Suite *
nn_attention_suite(void)
{
  Suite *s = suite_create("nn_attention");
  TCase *tc = tcase_create("nn_attention");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, attention_against_composition);
  tcase_add_test(tc, attention_bad_input);
  tcase_add_test(tc, attention_hidden_rows);
  tcase_add_test(tc, attention_every_tile);
  /* Not in the small mode: oclgrind's 32 KiB run table 2 as table 1, which the rest covers. */
  if (!harness_small())
    tcase_add_test(tc, attention_finite_differences);
  suite_add_tcase(s, tc);
  /* A case of its own, so that a GPU run can take the backward tables alone
   * (CK_RUN_CASE=nn_attention_bwd, bench/h200/attn.sh). */
  if (!harness_small()) {
    TCase *tb = tcase_create("nn_attention_bwd");
    tcase_set_timeout(tb, 600);
    tcase_add_test(tb, attention_every_backward);
    suite_add_tcase(s, tb);
  }
  return s;
}

int
main(void)
{
  /* No disk cache (unless asked for), as test_nn_conv: the harness points it at a directory it
   * deletes at the end, and on PoCL storing a program compiles a second, generic work-group
   * function of every kernel of it, most of this suite's compile time. */
  setenv("KILN_CACHE", "off", 0);
  return harness_main(nn_attention_suite(), 1);
}
