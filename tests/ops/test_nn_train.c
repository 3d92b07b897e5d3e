/*
 * nn_train suite: optimizer steps (SGD, Adam, AdamW) and gradient-norm clipping over lists
 * of tensors, against host references in double precision over several steps.
 *
 * Coverage: f32 and f64 (f64 with fp64), f16 and bf16 (all but RoPE; state in the parameters'
 * dtype, the reference rounding it after every step as the device stores it); lists longer than one
 * launch's 8 slots, tensors of 0, 1, prime and larger sizes; every option (momentum, dampening,
 * nesterov, weight decay, maximize, amsgrad, decoupled decay); bad input.
 *
 * Tolerances: |got - want| <= tol (1 + |want|), tol 2e-5 for f32 (a few steps of a few
 * roundings each, and Adam's division by a small denominator) and 1e-12 for f64.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kiln.h"
#include "kiln/nn_attention.h"
#include "nn_hostdata.h"
#include "ops/nn_train.h"
#include "ops/ops_common.h"

static const kiln_dtype dtypes[] = {KILN_F32, KILN_F64, KILN_F16, KILN_BF16};

/* The small mode (oclgrind) runs every other case of a list, and always its last. */
#define SMALL_SKIP(i, n) (harness_small() && (i) % 2 == 1 && (i) + 1 < (n))

/* FOR_DTYPES: f32, f64 (with fp64), f16 and bf16 (the small mode, oclgrind, the first two: the
 * half types run the same texts). */
#define FOR_DTYPES(dt) FOR_DTYPES_N(dt, harness_small() ? 2 : 4)
#define FOR_DTYPES_N(dt, nd)                                                                \
  for (size_t dt##_i = 0; dt##_i < (nd); dt##_i++)                                          \
    for (int dt##_k = dtypes[dt##_i] != KILN_F64 || harness_has_fp64(); dt##_k; dt##_k = 0) \
      for (kiln_dtype dt = dtypes[dt##_i]; dt##_k; dt##_k = 0)

/* Tolerance by dtype: f32's, f64's, or the half types' (state and results rounded to 2^-11 and
 * 2^-8 relative at every step; a few units of that). */
static double
dtol(kiln_dtype dt, double f32, double f64)
{
  return dt == KILN_F16 ? 4e-3 : dt == KILN_BF16 ? 3e-2 : dt == KILN_F32 ? f32 : f64;
}

static kiln_tensor *
up1(kiln_dtype dt, int64_t n, const double *v)
{
  return up(dt, 1, &n, v);
}

/* ------------------------------------------------------------------ optimizers */

/* Sizes of the parameter list: more than one launch's 8 slots, empty and odd tensors. */
static const int64_t opt_sizes_full[] = {7, 0, 1, 4099, 257, 31, 2, 1000, 13, 3};
#define NOPT (sizeof opt_sizes_full / sizeof opt_sizes_full[0])
#define OPT_STEPS (harness_small() ? 2 : 4)
/* The small mode (oclgrind) caps the sizes at 300. */
#define opt_sizes (harness_small() ? opt_sizes_small : opt_sizes_full)
static const int64_t opt_sizes_small[] = {7, 0, 1, 299, 257, 31, 2, 100, 13, 3};

typedef struct {
  kiln_tensor *t[NOPT];
  double *h[NOPT];
} tlist;

static void
tlist_make(tlist *l, kiln_dtype dt, double lo, double hi)
{
  for (size_t i = 0; i < NOPT; i++) {
    l->h[i] = rand_vec((size_t)opt_sizes[i], lo, hi);
    round_to(dt, l->h[i], (size_t)opt_sizes[i]);
    l->t[i] = up1(dt, opt_sizes[i], l->h[i]);
  }
}

static void
tlist_free(tlist *l)
{
  for (size_t i = 0; i < NOPT; i++) {
    kiln_tensor_release(l->t[i]);
    free(l->h[i]);
  }
}

static void
tlist_expect(const tlist *l, double tol, const char *what)
{
  for (size_t i = 0; i < NOPT; i++)
    expect_tensor(l->t[i], l->h[i], tol, what);
}

static double
opt_tol(kiln_dtype dt)
{
  return dtol(dt, 2e-5, 1e-12);
}

static void
ref_sgd(double *p, const double *g, double *buf, size_t n, const kiln_sgd_options *o, int64_t step)
{
  for (size_t i = 0; i < n; i++) {
    double d = o->maximize ? -g[i] : g[i];
    d += o->weight_decay * p[i];
    if (o->momentum > 0) {
      buf[i] = step == 1 ? d : o->momentum * buf[i] + (1 - o->dampening) * d;
      d = o->nesterov ? d + o->momentum * buf[i] : buf[i];
    }
    p[i] -= o->lr * d;
  }
}

START_TEST(sgd_against_reference)
{
  /* CPU devices: the vector form (the default), the one-element form, and the vector form
   * with runs of 3 adjacent vectors per work-item (ragged last runs; the default runs follow
   * the size and are 1 at these sizes). */
  for (int form = 0; form < 3; form++) {
    kiln__nnt_optim_form = form == 1 ? 1 : 0;
    kiln__nnt_optim_run = form == 2 ? 3 : 0;
    static const kiln_sgd_options cases[] = {
        {0.1, 0, 0, 0, 0, 0},      {0.05, 0.9, 0, 0, 0, 0},   {0.05, 0.9, 0.25, 0.01, 0, 0},
        {0.02, 0.8, 0, 0.1, 1, 0}, {0.03, 0.5, 0.1, 0, 0, 1},
    };
    FOR_DTYPES(dt)
    {
      for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (SMALL_SKIP(c, sizeof cases / sizeof cases[0]))
          continue;
        const kiln_sgd_options *o = &cases[c];
        tlist p, b;
        tlist_make(&p, dt, -2, 2);
        tlist_make(&b, dt, -1, 1); /* garbage before step 1: must be ignored */
        for (int64_t step = 1; step <= OPT_STEPS; step++) {
          tlist g;
          tlist_make(&g, dt, -1, 1);
          KOK(kiln_sgd_step(harness_ctx(), NOPT, p.t, (const kiln_tensor *const *)g.t, b.t, o,
                            step));
          /* The state is stored in the parameters' dtype after every step (PyTorch's). */
          for (size_t i = 0; i < NOPT; i++) {
            ref_sgd(p.h[i], g.h[i], b.h[i], (size_t)opt_sizes[i], o, step);
            round_to(dt, p.h[i], (size_t)opt_sizes[i]), round_to(dt, b.h[i], (size_t)opt_sizes[i]);
          }
          tlist_free(&g);
        }
        tlist_expect(&p, opt_tol(dt), "sgd params");
        if (o->momentum > 0)
          tlist_expect(&b, opt_tol(dt), "sgd momentum");
        tlist_free(&p);
        tlist_free(&b);
      }
    }
  }
  kiln__nnt_optim_form = 0;
  kiln__nnt_optim_run = 0;
}
END_TEST

static void
ref_adam(double *p, const double *g, double *m, double *v, double *vm, size_t n,
         const kiln_adam_options *o, int64_t step)
{
  double bc1 = 1 - pow(o->beta1, (double)step), bc2 = 1 - pow(o->beta2, (double)step);
  for (size_t i = 0; i < n; i++) {
    double gi = o->maximize ? -g[i] : g[i];
    if (o->decoupled)
      p[i] *= 1 - o->lr * o->weight_decay;
    else
      gi += o->weight_decay * p[i];
    m[i] = o->beta1 * m[i] + (1 - o->beta1) * gi;
    v[i] = o->beta2 * v[i] + (1 - o->beta2) * gi * gi;
    double vv = v[i];
    if (o->amsgrad) {
      vm[i] = fmax(vm[i], v[i]);
      vv = vm[i];
    }
    p[i] -= o->lr / bc1 * m[i] / (sqrt(vv) / sqrt(bc2) + o->eps);
  }
}

START_TEST(adam_against_reference)
{
  /* Every form of the kernel: one element, four (GPUs) and one vector of 16 (8 in f64: CPUs)
   * per work-item, the last also in runs of 3 adjacent vectors per work-item. */
  static const int forms[] = {1, 4, 16, 16}, runs[] = {0, 0, 0, 3};
  for (size_t fi = 0; fi < sizeof forms / sizeof forms[0]; fi++) {
    kiln__nnt_optim_form = forms[fi];
    kiln__nnt_optim_run = runs[fi];
    static const kiln_adam_options cases[] = {
        {1e-3, 0.9, 0.999, 1e-8, 0, 0, 0, 0},  {1e-2, 0.9, 0.99, 1e-6, 0.01, 0, 0, 0},
        {1e-2, 0.8, 0.95, 1e-8, 0.1, 0, 1, 0}, {5e-3, 0.9, 0.999, 1e-8, 0, 1, 0, 0},
        {5e-3, 0.5, 0.9, 1e-4, 0.05, 1, 1, 1},
    };
    FOR_DTYPES(dt)
    {
      for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (SMALL_SKIP(c, sizeof cases / sizeof cases[0]))
          continue;
        const kiln_adam_options *o = &cases[c];
        tlist p, m, v, vm;
        tlist_make(&p, dt, -2, 2);
        tlist_make(&m, dt, 0, 0);
        tlist_make(&v, dt, 0, 0);
        tlist_make(&vm, dt, 0, 0);
        for (int64_t step = 1; step <= OPT_STEPS; step++) {
          tlist g;
          /* Gradients whose size changes a lot between steps, so amsgrad's maximum matters. */
          tlist_make(&g, dt, step % 2 ? -1 : -0.05, step % 2 ? 1 : 0.05);
          KOK(kiln_adam_step(harness_ctx(), NOPT, p.t, (const kiln_tensor *const *)g.t, m.t, v.t,
                             vm.t, o, step));
          for (size_t i = 0; i < NOPT; i++) {
            size_t ni = (size_t)opt_sizes[i];
            ref_adam(p.h[i], g.h[i], m.h[i], v.h[i], vm.h[i], ni, o, step);
            round_to(dt, p.h[i], ni), round_to(dt, m.h[i], ni), round_to(dt, v.h[i], ni);
            round_to(dt, vm.h[i], ni);
          }
          tlist_free(&g);
        }
        tlist_expect(&p, opt_tol(dt), "adam params");
        tlist_expect(&m, opt_tol(dt), "adam exp_avg");
        tlist_expect(&v, opt_tol(dt), "adam exp_avg_sq");
        if (o->amsgrad)
          tlist_expect(&vm, opt_tol(dt), "adam max_exp_avg_sq");
        tlist_free(&p);
        tlist_free(&m);
        tlist_free(&v);
        tlist_free(&vm);
      }
    }
  }
  kiln__nnt_optim_form = 0;
  kiln__nnt_optim_run = 0;
}
END_TEST

START_TEST(clip_grad_norm_against_reference)
{
  FOR_DTYPES(dt)
  {
    /* max_norm below the norm (scaled), above it (unchanged), and 0 (zeroed). */
    static const double max_norms[] = {1.5, 1e6, 0};
    for (size_t c = 0; c < 3; c++) {
      tlist g;
      tlist_make(&g, dt, -1, 1);
      double ss = 0;
      for (size_t i = 0; i < NOPT; i++)
        for (int64_t j = 0; j < opt_sizes[i]; j++)
          ss += g.h[i][j] * g.h[i][j];
      double norm = sqrt(ss), coef = max_norms[c] / (norm + 1e-6);
      if (coef > 1)
        coef = 1;
      kiln_tensor *nt = NULL;
      double nh = -1;
      KOK(kiln_clip_grad_norm(harness_ctx(), NOPT, g.t, max_norms[c], &nt, &nh));
      double tol = dtol(dt, 1e-5, 1e-12);
      EXPECT(close_to(nh, norm, tol), "norm %.17g, expected %.17g", nh, norm);
      expect_tensor(nt, &norm, tol, "norm tensor");
      ck_assert_int_eq(kiln_tensor_ndim(nt), 0);
      for (size_t i = 0; i < NOPT; i++)
        for (int64_t j = 0; j < opt_sizes[i]; j++)
          g.h[i][j] *= coef;
      tlist_expect(&g, tol, "clipped grads");
      kiln_tensor_release(nt);
      tlist_free(&g);
    }
    /* A NaN gradient makes the norm NaN and every gradient NaN (PyTorch's clamp keeps NaN). */
    double hv[3] = {1, NAN, 2};
    kiln_tensor *a = up1(dt, 3, hv), *b = up1(dt, 3, hv);
    kiln_tensor *l[2] = {a, b};
    double nh = 0;
    KOK(kiln_clip_grad_norm(harness_ctx(), 2, l, 1.0, NULL, &nh));
    ck_assert(isnan(nh));
    double *got = down(a);
    ck_assert(isnan(got[0]) && isnan(got[2]));
    free(got);
    kiln_tensor_release(a), kiln_tensor_release(b);
  }
  double nh = -1;
  KOK(kiln_clip_grad_norm(harness_ctx(), 0, NULL, 1.0, NULL, &nh));
  ck_assert(nh == 0);
}
END_TEST

START_TEST(optim_bad_input)
{
  kiln_context *ctx = harness_ctx();
  double hv[4] = {1, 2, 3, 4};
  kiln_tensor *p = up1(KILN_F32, 4, hv), *g = up1(KILN_F32, 4, hv), *g3 = up1(KILN_F32, 3, hv);
  kiln_tensor *m = up1(KILN_F32, 4, hv), *v = up1(KILN_F32, 4, hv);
  int64_t four = 4;
  kiln_tensor *gi = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_I32, 1, &four, &gi));
  kiln_sgd_options so = {0.1, 0.9, 0, 0, 0, 0};
  kiln_adam_options ao = {1e-3, 0.9, 0.999, 1e-8, 0, 0, 0, 0};
  const kiln_tensor *gs[1] = {g};
  KEXPECT(kiln_sgd_step(ctx, 1, &p, gs, NULL, &so, 1), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_sgd_step(ctx, 1, &p, gs, &m, &so, 0), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_sgd_step(ctx, 1, &p, gs, &m, NULL, 1), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_sgd_step(ctx, 1, &p, gs, &p, &so, 1), KILN_ERR_INVALID_ARGUMENT);
  const kiln_tensor *g3s[1] = {g3}, *gis[1] = {gi};
  KEXPECT(kiln_sgd_step(ctx, 1, &p, g3s, &m, &so, 1), KILN_ERR_SHAPE);
  KEXPECT(kiln_sgd_step(ctx, 1, &p, gis, &m, &so, 1), KILN_ERR_DTYPE);
  kiln_sgd_options nes = {0.1, 0, 0, 0, 1, 0};
  KEXPECT(kiln_sgd_step(ctx, 1, &p, gs, &m, &nes, 1), KILN_ERR_INVALID_ARGUMENT);
  kiln_sgd_options neglr = {-0.1, 0, 0, 0, 0, 0};
  KEXPECT(kiln_sgd_step(ctx, 1, &p, gs, NULL, &neglr, 1), KILN_ERR_INVALID_ARGUMENT);
  kiln_tensor *pp[2] = {p, p};
  const kiln_tensor *gg[2] = {g, g};
  KEXPECT(kiln_sgd_step(ctx, 2, pp, gg, NULL, &neglr, 1), KILN_ERR_INVALID_ARGUMENT);
  so.momentum = 0;
  KEXPECT(kiln_sgd_step(ctx, 2, pp, gg, NULL, &so, 1), KILN_ERR_INVALID_ARGUMENT);
  kiln_adam_options badb = ao;
  badb.beta1 = 1;
  KEXPECT(kiln_adam_step(ctx, 1, &p, gs, &m, &v, NULL, &badb, 1), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_adam_step(ctx, 1, &p, gs, &m, &m, NULL, &ao, 1), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_adam_step(ctx, 1, &p, gs, NULL, &v, NULL, &ao, 1), KILN_ERR_INVALID_ARGUMENT);
  ao.amsgrad = 1;
  KEXPECT(kiln_adam_step(ctx, 1, &p, gs, &m, &v, NULL, &ao, 1), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_clip_grad_norm(ctx, 1, &p, -1, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_clip_grad_norm(ctx, 1, &gi, 1, NULL, NULL), KILN_ERR_DTYPE);
  KEXPECT(kiln_clip_grad_norm(NULL, 1, &p, 1, NULL, NULL), KILN_ERR_INVALID_HANDLE);
  /* Nothing was written by the refused calls. */
  expect_tensor(p, hv, 0, "untouched param");
  kiln_tensor_release(p), kiln_tensor_release(g), kiln_tensor_release(g3);
  kiln_tensor_release(m), kiln_tensor_release(v), kiln_tensor_release(gi);
}
END_TEST

/* ------------------------------------------------------------------ dropout */

static uint8_t *
down_bool(const kiln_tensor *t)
{
  uint64_t n = kiln_tensor_numel(t);
  uint8_t *h = malloc(n + 1);
  KOK(kiln_tensor_download(t, h, n));
  return h;
}

START_TEST(dropout_against_reference)
{
  kiln_context *ctx = harness_ctx();
  static const int64_t sizes[] = {0, 5, 1001, 1, 4099};
  static const double ps[] = {0.3, 1, 0, 0.9};
  /* The small mode (oclgrind) takes the first three sizes and the first two p. */
  size_t nsizes = harness_small() ? 3 : 5, nps = harness_small() ? 2 : 4;
  FOR_DTYPES(dt)
  {
    for (size_t si = 0; si < nsizes; si++)
      for (size_t pi = 0; pi < nps; pi++) {
        int64_t n = sizes[si];
        double p = ps[pi], scale = p < 1 ? 1 / (1 - p) : 0;
        KOK(kiln_rng_seed(ctx, 1234 + si));
        kiln_rng_state before, used, after;
        KOK(kiln_rng_state_get(ctx, &before));
        double *xh = rand_vec((size_t)n, -3, 3);
        round_to(dt, xh, (size_t)n);
        kiln_tensor *x = up1(dt, n, xh), *y = NULL, *mask = NULL;
        KOK(kiln_dropout(ctx, x, p, &y, &mask, &used));
        KOK(kiln_rng_state_get(ctx, &after));
        ck_assert(used.seed == before.seed && used.counter == before.counter);
        ck_assert(after.counter == before.counter + (uint64_t)(n + 3) / 4);
        /* The mask is the complement of kiln_random_bernoulli's draw from the same state. */
        kiln_tensor *bern = NULL;
        KOK(kiln_tensor_create(ctx, KILN_BOOL, 1, &n, &bern));
        KOK(kiln_rng_state_set(ctx, &used));
        KOK(kiln_random_bernoulli(ctx, bern, p));
        uint8_t *mh = down_bool(mask), *bh = down_bool(bern);
        double *want = malloc(((size_t)n + 1) * sizeof *want);
        for (int64_t i = 0; i < n; i++) {
          EXPECT(mh[i] == !bh[i], "n %lld p %g: mask[%lld] = %d, bernoulli %d", (long long)n, p,
                 (long long)i, mh[i], bh[i]);
          want[i] = mh[i] ? xh[i] * scale : 0;
        }
        round_to(dt, want, (size_t)n);
        expect_tensor(y, want, dtol(dt, 3e-7, 1e-15), "dropout out");
        /* Backward through the mask, and by replaying the state (no mask). */
        double *gh = rand_vec((size_t)n, -1, 1);
        round_to(dt, gh, (size_t)n);
        kiln_tensor *g = up1(dt, n, gh), *d1 = NULL, *d2 = NULL;
        KOK(kiln_dropout_backward(ctx, g, mask, NULL, p, &d1));
        KOK(kiln_dropout_backward(ctx, g, NULL, &used, p, &d2));
        for (int64_t i = 0; i < n; i++)
          want[i] = mh[i] ? gh[i] * scale : 0;
        expect_tensor(d1, want, dtol(dt, 3e-7, 1e-15), "dropout backward (mask)");
        expect_tensor(d2, want, dtol(dt, 3e-7, 1e-15), "dropout backward (replay)");
        /* In place over x. */
        KOK(kiln_rng_state_set(ctx, &used));
        KOK(kiln_dropout(ctx, x, p, &x, NULL, NULL));
        double *yh = down(y);
        expect_tensor(x, yh, 0, "dropout in place");
        free(yh);
        free(xh), free(gh), free(want), free(mh), free(bh);
        kiln_tensor_release(x), kiln_tensor_release(y), kiln_tensor_release(mask);
        kiln_tensor_release(bern), kiln_tensor_release(g), kiln_tensor_release(d1);
        kiln_tensor_release(d2);
      }
  }
}
END_TEST

START_TEST(dropout_launch_shapes_and_rate)
{
  kiln_context *ctx = harness_ctx();
  int64_t n = harness_size(200003, 1003);
  double p = 0.3;
  double *xh = rand_vec((size_t)n, 0.5, 1);
  kiln_tensor *x = up1(KILN_F32, n, xh);
  kiln_rng_state st = {77, 5};
  uint8_t *ref = NULL;
  static const size_t locals[] = {0, 1, 7, 64};
  for (size_t l = 0; l < sizeof locals / sizeof locals[0]; l++) {
    kiln__launch_local_override = locals[l];
    kiln__launch_max_groups = l % 2 ? 3 : 0;
    KOK(kiln_rng_state_set(ctx, &st));
    kiln_tensor *y = NULL, *mask = NULL, *d = NULL;
    KOK(kiln_dropout(ctx, x, p, &y, &mask, NULL));
    uint8_t *mh = down_bool(mask);
    /* Replaying under another launch shape gives the same mask. */
    KOK(kiln_dropout_backward(ctx, x, NULL, &st, p, &d));
    double *dh = down(d), *yh = down(y);
    for (int64_t i = 0; i < n; i++)
      EXPECT(dh[i] == yh[i], "local %zu: replay differs at %lld", locals[l], (long long)i);
    if (!ref) {
      ref = mh;
      uint64_t kept = 0;
      for (int64_t i = 0; i < n; i++)
        kept += ref[i];
      /* The kept count is binomial(n, 1 - p): within 6 standard deviations. */
      double mean = (double)n * (1 - p), sd = sqrt((double)n * p * (1 - p));
      EXPECT(fabs((double)kept - mean) <= 6 * sd, "kept %llu of %lld, expected %g +- %g",
             (unsigned long long)kept, (long long)n, mean, sd);
    } else {
      EXPECT(memcmp(ref, mh, (size_t)n) == 0, "mask differs with local size %zu", locals[l]);
      free(mh);
    }
    free(dh), free(yh);
    kiln_tensor_release(y), kiln_tensor_release(mask), kiln_tensor_release(d);
  }
  kiln__launch_local_override = 0;
  kiln__launch_max_groups = 0;
  /* Bad input. */
  kiln_tensor *y = NULL;
  KEXPECT(kiln_dropout(ctx, x, 1.5, &y, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_dropout(ctx, x, NAN, &y, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_dropout(ctx, x, 0.5, NULL, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_dropout_backward(ctx, x, NULL, NULL, 0.5, &y), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_dropout_backward(ctx, x, x, NULL, 0.5, &y), KILN_ERR_DTYPE);
  kiln_tensor *xi = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_I32, 1, &n, &xi));
  KEXPECT(kiln_dropout(ctx, xi, 0.5, &y, NULL, NULL), KILN_ERR_DTYPE);
  ck_assert(y == NULL);
  kiln_tensor_release(xi);
  free(ref), free(xh);
  kiln_tensor_release(x);
}
END_TEST

/* ------------------------------------------------------------------ group_norm, batch_norm */

/* Per-element statistics index and channel of [N, C, S] under G groups (bn: per channel). */
static void
ref_nc_norm(const double *x, const double *w, const double *b, uint64_t N, uint64_t C, uint64_t S,
            uint64_t G, int bn, double eps, double *y, double *mean, double *rstd)
{
  uint64_t ns = bn ? C : N * G, cpg = bn ? 1 : C / G;
  for (uint64_t k = 0; k < ns; k++) {
    double a = 0, cnt = 0;
    for (uint64_t n = 0; n < N; n++)
      for (uint64_t c = 0; c < C; c++) {
        if (bn ? c != k : n * G + c / cpg != k)
          continue;
        for (uint64_t s = 0; s < S; s++, cnt++)
          a += x[(n * C + c) * S + s];
      }
    double mu = a / cnt, v = 0;
    for (uint64_t n = 0; n < N; n++)
      for (uint64_t c = 0; c < C; c++) {
        if (bn ? c != k : n * G + c / cpg != k)
          continue;
        for (uint64_t s = 0; s < S; s++) {
          double d = x[(n * C + c) * S + s] - mu;
          v += d * d;
        }
      }
    mean[k] = mu;
    rstd[k] = 1 / sqrt(v / cnt + eps);
  }
  for (uint64_t n = 0; n < N; n++)
    for (uint64_t c = 0; c < C; c++)
      for (uint64_t s = 0; s < S; s++) {
        uint64_t e = (n * C + c) * S + s, k = bn ? c : n * G + c / cpg;
        y[e] = (x[e] - mean[k]) * rstd[k] * (w ? w[c] : 1) + (b ? b[c] : 0);
      }
}

/* Analytic gradients of ref_nc_norm (training statistics). */
static void
ref_nc_norm_bwd(const double *g, const double *x, const double *w, uint64_t N, uint64_t C,
                uint64_t S, uint64_t G, int bn, const double *mean, const double *rstd, double *dx,
                double *dw, double *db)
{
  uint64_t ns = bn ? C : N * G, cpg = bn ? 1 : C / G;
  for (uint64_t c = 0; c < C; c++)
    dw[c] = db[c] = 0;
  for (uint64_t k = 0; k < ns; k++) {
    double a = 0, bsum = 0, cnt = 0;
    for (int pass = 0; pass < 2; pass++)
      for (uint64_t n = 0; n < N; n++)
        for (uint64_t c = 0; c < C; c++) {
          if (bn ? c != k : n * G + c / cpg != k)
            continue;
          for (uint64_t s = 0; s < S; s++) {
            uint64_t e = (n * C + c) * S + s;
            double gw = g[e] * (w ? w[c] : 1), xh = (x[e] - mean[k]) * rstd[k];
            if (pass == 0) {
              a += gw, bsum += gw * xh, cnt++;
              dw[c] += g[e] * xh;
              db[c] += g[e];
            } else {
              dx[e] = rstd[k] * (gw - a / cnt - xh * bsum / cnt);
            }
          }
        }
  }
}

typedef struct {
  int64_t N, C, S, G;
} nc_case;

static const nc_case nc_cases[] = {
    {2, 6, 5, 3},    {1, 4, 1, 1}, {3, 5, 7, 5},  {4, 8, 300, 2},
    {2, 3, 1031, 1}, {0, 4, 3, 2}, {7, 12, 1, 4},
};

static kiln_tensor *
up_nc(kiln_dtype dt, const nc_case *c, const double *v)
{
  int64_t shape[3] = {c->N, c->C, c->S};
  return up(dt, c->S == 1 ? 2 : 3, shape, v);
}

START_TEST(group_and_batch_norm_against_reference)
{
  kiln_context *ctx = harness_ctx();
  /* The per-channel reductions split into chunks (the GPU path) on even passes, one group
   * per channel on odd ones; the normalization in the GPUs' form (norm_apply) on odd passes,
   * else in the device's (CPU devices: norm_apply_lines). */
  for (int split = 0; split < (harness_small() ? 1 : 2); split++)
    FOR_DTYPES(dt)
    {
      kiln__nnt_chan_groups = split ? 1 : 4096;
      kiln__nnt_norm_gpu = split;
      double tol = dtol(dt, 5e-5, 1e-11);
      for (size_t ci = 0; ci < sizeof nc_cases / sizeof nc_cases[0]; ci++)
        for (int bn = 0; bn < 2 && !(harness_small() && (ci == 3 || ci == 4 || ci == 2)); bn++)
          for (int aff = 0; aff < 2; aff++) {
            const nc_case *c = &nc_cases[ci];
            if (bn && c->N * c->S == 0)
              continue;
            uint64_t n = (uint64_t)(c->N * c->C * c->S), C = (uint64_t)c->C;
            uint64_t ns = bn ? C : (uint64_t)(c->N * c->G);
            double *xh = rand_vec(n, -2, 5), *gh = rand_vec(n, -1, 1);
            double *wh = rand_vec(C, 0.5, 1.5), *bh = rand_vec(C, -1, 1);
            round_to(dt, xh, n), round_to(dt, gh, n), round_to(dt, wh, C), round_to(dt, bh, C);
            double *y = malloc((n + 1) * 8), *mu = malloc((ns + 1) * 8), *rs = malloc((ns + 1) * 8);
            double *dx = malloc((n + 1) * 8), *dw = malloc((C + 1) * 8), *db = malloc((C + 1) * 8);
            const double *w = aff ? wh : NULL, *b = aff ? bh : NULL;
            ref_nc_norm(xh, w, b, (uint64_t)c->N, C, (uint64_t)c->S, (uint64_t)c->G, bn, 1e-5, y,
                        mu, rs);
            ref_nc_norm_bwd(gh, xh, w, (uint64_t)c->N, C, (uint64_t)c->S, (uint64_t)c->G, bn, mu,
                            rs, dx, dw, db);
            kiln_tensor *x = up_nc(dt, c, xh), *g = up_nc(dt, c, gh);
            kiln_tensor *wt = aff ? up1(dt, c->C, wh) : NULL, *bt = aff ? up1(dt, c->C, bh) : NULL;
            kiln_tensor *yt = NULL, *mt = NULL, *rt = NULL, *dxt = NULL, *dwt = NULL, *dbt = NULL;
            kiln_tensor *rm = NULL, *rv = NULL;
            double *rmh = rand_vec(C, -1, 1), *rvh = rand_vec(C, 0.5, 2);
            round_to(dt, rmh, C), round_to(dt, rvh, C);
            if (bn) {
              rm = up1(dt, c->C, rmh), rv = up1(dt, c->C, rvh);
              KOK(kiln_batch_norm(ctx, x, wt, bt, rm, rv, 1, 0.1, 1e-5, &yt, &mt, &rt));
              KOK(kiln_batch_norm_backward(ctx, g, x, wt, mt, rt, 1, &dxt, &dwt, &dbt));
            } else {
              KOK(kiln_group_norm(ctx, x, c->G, wt, bt, 1e-5, &yt, &mt, &rt));
              KOK(kiln_group_norm_backward(ctx, g, x, mt, rt, wt, c->G, &dxt, &dwt, &dbt));
            }
            char what[96];
            snprintf(what, sizeof what, "%s case %zu %s%s", kiln_dtype_name(dt), ci,
                     bn ? "batch_norm" : "group_norm", aff ? " affine" : "");
            expect_tensor(yt, y, tol, what);
            expect_tensor(mt, mu, tol, what);
            expect_tensor(rt, rs, tol, what);
            if (dt == KILN_F16 || dt == KILN_BF16) {
              /* The backward pass reads the saved statistics, rounded to the half type: with a
               * large rstd (a group of nearly equal values) the mean's rounding alone moves xhat
               * by far more than the output's. The reference takes the same rounded values. */
              double *mud = down(mt), *rsd = down(rt);
              ref_nc_norm_bwd(gh, xh, w, (uint64_t)c->N, C, (uint64_t)c->S, (uint64_t)c->G, bn, mud,
                              rsd, dx, dw, db);
              free(mud), free(rsd);
            }
            expect_tensor(dxt, dx, 4 * tol, what);
            expect_tensor(dwt, dw, 4 * tol, what);
            expect_tensor(dbt, db, 4 * tol, what);
            if (bn) {
              /* Running statistics: unbiased variance, momentum 0.1. */
              double M = (double)(c->N * c->S);
              for (uint64_t k = 0; k < C; k++) {
                double var = 1 / (rs[k] * rs[k]) - 1e-5;
                rmh[k] = 0.9 * rmh[k] + 0.1 * mu[k];
                rvh[k] = 0.9 * rvh[k] + 0.1 * var * M / (M - 1);
              }
              expect_tensor(rm, rmh, tol, "running_mean");
              expect_tensor(rv, rvh, dtol(dt, 1e-4, 1e-9), "running_var");
              /* Evaluation uses the running statistics; its backward treats them as constants. */
              kiln_tensor *ye = NULL, *me = NULL, *re = NULL, *dxe = NULL;
              double *rmd = down(rm), *rvd = down(rv);
              KOK(kiln_batch_norm(ctx, x, wt, bt, rm, rv, 0, 0.1, 1e-5, &ye, &me, &re));
              KOK(kiln_batch_norm_backward(ctx, g, x, wt, me, re, 0, &dxe, NULL, NULL));
              for (uint64_t e = 0; e < n; e++) {
                uint64_t ch = (e / (uint64_t)c->S) % C;
                double r = 1 / sqrt(rvd[ch] + 1e-5);
                y[e] = (xh[e] - rmd[ch]) * r * (w ? w[ch] : 1) + (b ? b[ch] : 0);
                dx[e] = gh[e] * r * (w ? w[ch] : 1);
              }
              expect_tensor(ye, y, tol, "eval out");
              expect_tensor(dxe, dx, tol, "eval grad_x");
              expect_tensor(rm, rmd, 0, "eval leaves running_mean");
              free(rmd), free(rvd);
              kiln_tensor_release(ye), kiln_tensor_release(me), kiln_tensor_release(re);
              kiln_tensor_release(dxe);
            } else if (n) {
              /* In place, and without the optional outputs. */
              kiln_tensor *x2 = up_nc(dt, c, xh);
              KOK(kiln_group_norm(ctx, x2, c->G, wt, bt, 1e-5, &x2, NULL, NULL));
              expect_tensor(x2, y, tol, "group_norm in place");
              kiln_tensor_release(x2);
            }
            free(xh), free(gh), free(wh), free(bh), free(y), free(mu), free(rs);
            free(dx), free(dw), free(db), free(rmh), free(rvh);
            kiln_tensor_release(x), kiln_tensor_release(g), kiln_tensor_release(wt);
            kiln_tensor_release(bt), kiln_tensor_release(yt), kiln_tensor_release(mt);
            kiln_tensor_release(rt), kiln_tensor_release(dxt), kiln_tensor_release(dwt);
            kiln_tensor_release(dbt), kiln_tensor_release(rm), kiln_tensor_release(rv);
          }
    }
  kiln__nnt_chan_groups = 0;
  kiln__nnt_norm_gpu = 0;
}
END_TEST

/*
 * batch_norm's one-read statistics sum about a shift: channels with a mean of 1e4 and a
 * spread of 1 keep their f32 variance (sums of x and x^2 would lose it all), with one group
 * per channel and with chunks; a NaN in a channel gives that channel NaN statistics.
 */
/*
 * Groups of close values whose mean the 16-bit types cannot hold: 2, 2 + d, 2 + d with d the
 * type's spacing at 2 (f16's for the wider types; mean 2 + 2d/3). group_norm and batch_norm
 * normalize with the float statistics (the outputs hold them rounded: normalizing with those put x
 * - mean off by d/3, half the result's size); every dtype, against the reference from the rounded
 * inputs.
 */
START_TEST(norm_close_values)
{
  kiln_context *ctx = harness_ctx();
  FOR_DTYPES(dt)
  {
    double d = dt == KILN_BF16 ? 0x1p-6 : 0x1p-9;
    const nc_case c = {2, 3, 1, 1};
    double xh[6] = {2, 2 + d, 2 + d, 2 + d, 2, 2 + d}, y[6], mu[2], rs[2];
    for (int bn = 0; bn < 2; bn++) {
      const nc_case cb = {3, 2, 1, 1}; /* batch_norm: channels of three values */
      const nc_case *cc = bn ? &cb : &c;
      double xb[6] = {2, 2 + d, 2, 2 + d, 2 + d, 2 + d};
      const double *xv = bn ? xb : xh;
      ref_nc_norm(xv, NULL, NULL, (uint64_t)cc->N, (uint64_t)cc->C, 1, 1, bn, 1e-5, y, mu, rs);
      kiln_tensor *x = up_nc(dt, cc, xv), *yt = NULL;
      if (bn)
        KOK(kiln_batch_norm(ctx, x, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5, &yt, NULL, NULL));
      else
        KOK(kiln_group_norm(ctx, x, 1, NULL, NULL, 1e-5, &yt, NULL, NULL));
      char what[64];
      snprintf(what, sizeof what, "%s %s of close values", kiln_dtype_name(dt),
               bn ? "batch_norm" : "group_norm");
      expect_tensor(yt, y, dtol(dt, 5e-5, 1e-9), what);
      kiln_tensor_release(x), kiln_tensor_release(yt);
    }
  }
}
END_TEST

START_TEST(batch_norm_large_mean)
{
  kiln_context *ctx = harness_ctx();
  const nc_case c = {3, 4, 1031, 1};
  uint64_t n = (uint64_t)(c.N * c.C * c.S), C = (uint64_t)c.C;
  double *xh = rand_vec(n, -1, 1);
  for (uint64_t i = 0; i < n; i++)
    xh[i] += 1e4;
  round_to(KILN_F32, xh, n);
  double *y = malloc((n + 1) * 8), *mu = malloc((C + 1) * 8), *rs = malloc((C + 1) * 8);
  ref_nc_norm(xh, NULL, NULL, (uint64_t)c.N, C, (uint64_t)c.S, 1, 1, 1e-5, y, mu, rs);
  for (int split = 0; split < 2; split++) {
    kiln__nnt_chan_groups = split ? 1 : 4096;
    kiln_tensor *x = up_nc(KILN_F32, &c, xh), *yt = NULL, *mt = NULL, *rt = NULL;
    KOK(kiln_batch_norm(ctx, x, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5, &yt, &mt, &rt));
    double *mg = down(mt), *rg = down(rt);
    for (uint64_t k = 0; k < C; k++) {
      EXPECT(fabs(mg[k] - mu[k]) <= 1e-6 * mu[k], "channel %llu: mean %.9g, expected %.9g",
             (unsigned long long)k, mg[k], mu[k]);
      EXPECT(fabs(rg[k] - rs[k]) <= 1e-3 * rs[k], "channel %llu: rstd %.9g, expected %.9g",
             (unsigned long long)k, rg[k], rs[k]);
    }
    free(mg), free(rg);
    kiln_tensor_release(yt), kiln_tensor_release(mt), kiln_tensor_release(rt);
    /* A NaN in channel 1. */
    xh[(uint64_t)c.S + 5] = NAN;
    kiln_tensor_release(x);
    x = up_nc(KILN_F32, &c, xh);
    mt = rt = yt = NULL;
    KOK(kiln_batch_norm(ctx, x, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5, &yt, &mt, &rt));
    mg = down(mt), rg = down(rt);
    EXPECT(isnan(mg[1]) && isnan(rg[1]), "a NaN in channel 1 gave mean %g, rstd %g", mg[1], rg[1]);
    EXPECT(!isnan(mg[0]) && !isnan(rg[2]), "a NaN in channel 1 reached channels 0 or 2");
    xh[(uint64_t)c.S + 5] = 1e4;
    free(mg), free(rg);
    kiln_tensor_release(x), kiln_tensor_release(yt), kiln_tensor_release(mt);
    kiln_tensor_release(rt);
  }
  kiln__nnt_chan_groups = 0;
  free(xh), free(y), free(mu), free(rs);
}
END_TEST

/* sum(u * norm(x)) for a fixed u: the scalar whose gradient the finite differences check. */
static double
nc_objective(kiln_tensor *x, kiln_tensor *w, kiln_tensor *b, const double *u, const nc_case *c,
             int bn)
{
  kiln_tensor *y = NULL;
  if (bn)
    KOK(kiln_batch_norm(harness_ctx(), x, w, b, NULL, NULL, 1, 0.1, 1e-5, &y, NULL, NULL));
  else
    KOK(kiln_group_norm(harness_ctx(), x, c->G, w, b, 1e-5, &y, NULL, NULL));
  double *yh = down(y), a = 0;
  for (uint64_t i = 0; i < kiln_tensor_numel(y); i++)
    a += u[i] * yh[i];
  free(yh);
  kiln_tensor_release(y);
  return a;
}

/* Central differences of the device's own f64 forward against its backward. */
START_TEST(group_and_batch_norm_finite_differences)
{
  if (!harness_has_fp64())
    return;
  kiln_context *ctx = harness_ctx();
  static const nc_case small[] = {{2, 4, 3, 2}, {3, 3, 2, 3}};
  const double h = 1e-6;
  for (size_t ci = 0; ci < 2; ci++)
    for (int bn = 0; bn < 2; bn++) {
      const nc_case *c = &small[ci];
      uint64_t n = (uint64_t)(c->N * c->C * c->S), C = (uint64_t)c->C;
      double *xh = rand_vec(n, -2, 2), *u = rand_vec(n, -1, 1);
      double *wh = rand_vec(C, 0.5, 1.5), *bh = rand_vec(C, -1, 1);
      kiln_tensor *g = up_nc(KILN_F64, c, u), *w = up1(KILN_F64, c->C, wh),
                  *b = up1(KILN_F64, c->C, bh), *x = up_nc(KILN_F64, c, xh);
      kiln_tensor *y = NULL, *m = NULL, *r = NULL, *dx = NULL, *dw = NULL, *db = NULL;
      if (bn) {
        KOK(kiln_batch_norm(ctx, x, w, b, NULL, NULL, 1, 0.1, 1e-5, &y, &m, &r));
        KOK(kiln_batch_norm_backward(ctx, g, x, w, m, r, 1, &dx, &dw, &db));
      } else {
        KOK(kiln_group_norm(ctx, x, c->G, w, b, 1e-5, &y, &m, &r));
        KOK(kiln_group_norm_backward(ctx, g, x, m, r, w, c->G, &dx, &dw, &db));
      }
      double *dxh = down(dx), *dwh = down(dw), *dbh = down(db);
      for (int which = 0; which < 3; which++) {
        double *v = which == 0 ? xh : which == 1 ? wh : bh;
        const double *an = which == 0 ? dxh : which == 1 ? dwh : dbh;
        uint64_t cnt = which == 0 ? n : C;
        for (uint64_t i = 0; i < cnt; i++) {
          double f[2];
          for (int sgn = 0; sgn < 2; sgn++) {
            double keep = v[i];
            v[i] = keep + (sgn ? -h : h);
            kiln_tensor *xx = up_nc(KILN_F64, c, xh), *ww = up1(KILN_F64, c->C, wh),
                        *bb = up1(KILN_F64, c->C, bh);
            f[sgn] = nc_objective(xx, ww, bb, u, c, bn);
            kiln_tensor_release(xx), kiln_tensor_release(ww), kiln_tensor_release(bb);
            v[i] = keep;
          }
          double fd = (f[0] - f[1]) / (2 * h);
          EXPECT(fabs(fd - an[i]) <= 1e-6 * (1 + fabs(an[i])),
                 "%s %s case %zu: d/d%s[%llu] fd %.12g analytic %.12g", bn ? "batch" : "group",
                 "norm", ci,
                 which == 0   ? "x"
                 : which == 1 ? "w"
                              : "b",
                 (unsigned long long)i, fd, an[i]);
        }
      }
      free(xh), free(u), free(wh), free(bh), free(dxh), free(dwh), free(dbh);
      kiln_tensor_release(g), kiln_tensor_release(w), kiln_tensor_release(b);
      kiln_tensor_release(x), kiln_tensor_release(y), kiln_tensor_release(m);
      kiln_tensor_release(r), kiln_tensor_release(dx), kiln_tensor_release(dw);
      kiln_tensor_release(db);
    }
}
END_TEST

START_TEST(norm_bad_input)
{
  kiln_context *ctx = harness_ctx();
  double v[24] = {0};
  int64_t s3[3] = {2, 6, 2}, s1[1] = {24};
  kiln_tensor *x = up(KILN_F32, 3, s3, v), *x1 = up(KILN_F32, 1, s1, v);
  kiln_tensor *w5 = up1(KILN_F32, 5, v), *w6 = up1(KILN_F32, 6, v), *y = NULL;
  KEXPECT(kiln_group_norm(ctx, x, 4, NULL, NULL, 1e-5, &y, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_group_norm(ctx, x, 0, NULL, NULL, 1e-5, &y, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_group_norm(ctx, x, 3, w5, NULL, 1e-5, &y, NULL, NULL), KILN_ERR_SHAPE);
  KEXPECT(kiln_group_norm(ctx, x, 3, w6, NULL, -1, &y, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_group_norm(ctx, x1, 1, NULL, NULL, 1e-5, &y, NULL, NULL), KILN_ERR_SHAPE);
  KEXPECT(kiln_batch_norm(ctx, x, NULL, NULL, NULL, NULL, 0, 0.1, 1e-5, &y, NULL, NULL),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_batch_norm(ctx, x, NULL, NULL, w6, NULL, 1, 0.1, 1e-5, &y, NULL, NULL),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_batch_norm(ctx, x, NULL, NULL, w6, w6, 1, 0.1, 1e-5, &y, NULL, NULL),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_batch_norm(ctx, x, NULL, NULL, NULL, NULL, 1, 2, 1e-5, &y, NULL, NULL),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_batch_norm(ctx, x, w5, NULL, NULL, NULL, 1, 0.1, 1e-5, &y, NULL, NULL),
          KILN_ERR_SHAPE);
  KEXPECT(kiln_batch_norm_backward(ctx, x, x, NULL, NULL, w6, 1, &y, NULL, NULL),
          KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_batch_norm_backward(ctx, x, x, NULL, w5, w6, 1, &y, NULL, NULL), KILN_ERR_SHAPE);
  KEXPECT(kiln_group_norm_backward(ctx, x1, x, w6, w6, NULL, 3, &y, NULL, NULL), KILN_ERR_SHAPE);
  ck_assert(y == NULL);
  kiln_tensor_release(x), kiln_tensor_release(x1), kiln_tensor_release(w5);
  kiln_tensor_release(w6);
}
END_TEST

/* ------------------------------------------------------------------ RoPE */

START_TEST(rope_against_reference)
{
  kiln_context *ctx = harness_ctx();
  /* [B, S, D] with R features rotated. */
  static const int64_t cases[][4] = {{2, 7, 16, 16}, {1, 1, 2, 2}, {3, 33, 64, 32}, {2, 5, 10, 6}};
  FOR_DTYPES(dt)
  {
    for (size_t ci = 0; ci < 4; ci++)
      for (int layout = 0; layout < 2; layout++) {
        int64_t B = cases[ci][0], S = cases[ci][1], D = cases[ci][2], R = cases[ci][3];
        uint64_t n = (uint64_t)(B * S * D), nt = (uint64_t)(S * R / 2);
        double *xh = rand_vec(n, -1, 1), *c = malloc((nt + 1) * 8), *sn = malloc((nt + 1) * 8);
        for (int64_t s = 0; s < S; s++)
          for (int64_t i = 0; i < R / 2; i++) {
            double th = (double)s * pow(10000.0, -2.0 * (double)i / (double)R);
            c[s * R / 2 + i] = cos(th);
            sn[s * R / 2 + i] = sin(th);
          }
        round_to(dt, xh, n), round_to(dt, c, nt), round_to(dt, sn, nt);
        double *y = malloc((n + 1) * 8), *yb = malloc((n + 1) * 8);
        for (int64_t r = 0; r < B * S; r++) {
          int64_t s = r % S;
          for (int64_t d = R; d < D; d++)
            y[r * D + d] = yb[r * D + d] = xh[r * D + d];
          for (int64_t i = 0; i < R / 2; i++) {
            int64_t a = layout ? i : 2 * i, b = layout ? i + R / 2 : 2 * i + 1;
            double cc = c[s * R / 2 + i], ss = sn[s * R / 2 + i];
            double xa = xh[r * D + a], xb = xh[r * D + b];
            y[r * D + a] = xa * cc - xb * ss;
            y[r * D + b] = xb * cc + xa * ss;
            yb[r * D + a] = xa * cc + xb * ss;
            yb[r * D + b] = xb * cc - xa * ss;
          }
        }
        int64_t xs[3] = {B, S, D}, ts[2] = {S, R / 2};
        kiln_tensor *x = up(dt, 3, xs, xh), *ct = up(dt, 2, ts, c), *st = up(dt, 2, ts, sn);
        kiln_tensor *yt = NULL, *ybt = NULL;
        kiln_rope_layout lay = layout ? KILN_ROPE_HALF : KILN_ROPE_INTERLEAVED;
        KOK(kiln_rope(ctx, x, ct, st, lay, &yt));
        KOK(kiln_rope_backward(ctx, x, ct, st, lay, &ybt));
        /* Halves: computed in f32 from the rounded inputs, rounded once on the way out. */
        double tol = dt == KILN_F16 ? 1e-3 : dt == KILN_BF16 ? 8e-3 : dt == KILN_F32 ? 1e-6 : 1e-14;
        expect_tensor(yt, y, tol, "rope");
        expect_tensor(ybt, yb, tol, "rope backward");
        /* In place. */
        KOK(kiln_rope(ctx, x, ct, st, lay, &x));
        expect_tensor(x, y, tol, "rope in place");
        free(xh), free(c), free(sn), free(y), free(yb);
        kiln_tensor_release(x), kiln_tensor_release(ct), kiln_tensor_release(st);
        kiln_tensor_release(yt), kiln_tensor_release(ybt);
      }
  }
  double z[64] = {0};
  int64_t xs[3] = {1, 4, 8}, bad[2] = {4, 5}, ok[2] = {4, 4};
  kiln_tensor *x = up(KILN_F32, 3, xs, z), *tb = up(KILN_F32, 2, bad, z),
              *to = up(KILN_F32, 2, ok, z);
  kiln_tensor *y = NULL;
  KEXPECT(kiln_rope(ctx, x, tb, tb, KILN_ROPE_HALF, &y), KILN_ERR_SHAPE);
  KEXPECT(kiln_rope(ctx, x, to, to, (kiln_rope_layout)7, &y), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_rope(ctx, x, to, NULL, KILN_ROPE_HALF, &y), KILN_ERR_INVALID_HANDLE);
  ck_assert(y == NULL);
  kiln_tensor_release(x), kiln_tensor_release(tb), kiln_tensor_release(to);
}
END_TEST

/* ------------------------------------------------------------------ embeddings */

static kiln_tensor *
up_idx(kiln_dtype it, int64_t n, const int64_t *v)
{
  void *h = malloc((size_t)(n ? n : 1) * 8);
  for (int64_t i = 0; i < n; i++) {
    if (it == KILN_I32)
      ((int32_t *)h)[i] = (int32_t)v[i];
    else
      ((int64_t *)h)[i] = v[i];
  }
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_from_host(harness_ctx(), it, 1, &n, h, &t));
  free(h);
  return t;
}

START_TEST(embedding_backward_against_reference)
{
  kiln_context *ctx = harness_ctx();
  /* (tokens, rows, E, padding_idx) */
  static const int64_t cases[][4] = {
      {1, 1, 1, -1}, {37, 11, 5, 3}, {0, 4, 3, -1}, {300, 17, 33, 0}, {1000, 7, 2, -1}};
  FOR_DTYPES(dt)
  {
    for (size_t ci = 0; ci < 5; ci++) {
      /* The small mode (oclgrind): the three smallest cases. */
      if (harness_small() && ci > 2)
        continue;
      int64_t T = cases[ci][0], V = cases[ci][1], E = cases[ci][2], pad = cases[ci][3];
      kiln_dtype it = ci % 2 ? KILN_I32 : KILN_I64;
      int64_t *idx = malloc((size_t)(T + 1) * 8);
      for (int64_t t = 0; t < T; t++)
        idx[t] = (int64_t)urand(0, (double)V) - (t % 5 == 4 ? V : 0); /* some negative */
      double *gh = rand_vec((size_t)(T * E), -1, 1);
      round_to(dt, gh, (size_t)(T * E));
      double *want = calloc((size_t)(V * E + 1), 8);
      for (int64_t t = 0; t < T; t++) {
        int64_t v = idx[t] < 0 ? idx[t] + V : idx[t];
        if (v == pad)
          continue;
        for (int64_t e = 0; e < E; e++)
          want[v * E + e] += gh[t * E + e];
      }
      int64_t gs[2] = {T, E};
      kiln_tensor *g = up(dt, 2, gs, gh), *ti = up_idx(it, T, idx), *gw = NULL, *gw2 = NULL;
      KOK(kiln_embedding_backward(ctx, g, ti, V, pad, &gw));
      expect_tensor(gw, want, dtol(dt, 1e-5, 1e-13), "embedding grad_weight");
      /* Deterministic: a second call gives the same bits. */
      KOK(kiln_embedding_backward(ctx, g, ti, V, pad, &gw2));
      double *a = down(gw), *b = down(gw2);
      ck_assert(memcmp(a, b, (size_t)(V * E) * 8) == 0);
      free(a), free(b);
      /* embedding_bag over the same tokens: bags of varied sizes, some empty. */
      int64_t nb = T / 3 + 1, *offs = malloc((size_t)nb * 8);
      for (int64_t bi = 0; bi < nb; bi++)
        offs[bi] = bi == 0 ? 0 : offs[bi - 1] + (bi % 4 == 1 ? 0 : (bi % 3) + 1);
      for (int64_t bi = 0; bi < nb; bi++)
        if (offs[bi] > T)
          offs[bi] = T;
      double *wh = rand_vec((size_t)(V * E), -1, 1), *ph = rand_vec((size_t)T, 0, 2);
      round_to(dt, wh, (size_t)(V * E)), round_to(dt, ph, (size_t)T);
      int64_t ws[2] = {V, E};
      kiln_tensor *w = up(dt, 2, ws, wh), *to = up_idx(it, nb, offs), *psw = up1(dt, T, ph);
      for (int mode = 0; mode < 2; mode++)
        for (int usep = 0; usep < 2 - mode; usep++) {
          double *bo = calloc((size_t)(nb * E + 1), 8), *bw = calloc((size_t)(V * E + 1), 8);
          double *bg = rand_vec((size_t)(nb * E), -1, 1);
          round_to(dt, bg, (size_t)(nb * E));
          for (int64_t bi = 0; bi < nb; bi++) {
            int64_t s0 = offs[bi], s1 = bi + 1 < nb ? offs[bi + 1] : T;
            for (int64_t t = s0; t < s1; t++) {
              int64_t v = idx[t] < 0 ? idx[t] + V : idx[t];
              double f = (usep ? ph[t] : 1) / (mode ? (double)(s1 - s0) : 1);
              for (int64_t e = 0; e < E; e++) {
                bo[bi * E + e] += f * wh[v * E + e];
                bw[v * E + e] += f * bg[bi * E + e];
              }
            }
          }
          int64_t bs[2] = {nb, E};
          kiln_tensor *bgt = up(dt, 2, bs, bg), *bot = NULL, *bwt = NULL;
          KOK(kiln_embedding_bag(ctx, w, ti, to, mode ? KILN_BAG_MEAN : KILN_BAG_SUM,
                                 usep ? psw : NULL, &bot));
          KOK(kiln_embedding_bag_backward(ctx, bgt, ti, to, mode ? KILN_BAG_MEAN : KILN_BAG_SUM,
                                          usep ? psw : NULL, V, &bwt));
          expect_tensor(bot, bo, dtol(dt, 1e-5, 1e-13), "embedding_bag");
          expect_tensor(bwt, bw, dtol(dt, 1e-5, 1e-13), "embedding_bag backward");
          free(bo), free(bw), free(bg);
          kiln_tensor_release(bgt), kiln_tensor_release(bot), kiln_tensor_release(bwt);
        }
      free(idx), free(gh), free(want), free(offs), free(wh), free(ph);
      kiln_tensor_release(g), kiln_tensor_release(ti), kiln_tensor_release(gw);
      kiln_tensor_release(gw2), kiln_tensor_release(w), kiln_tensor_release(to);
      kiln_tensor_release(psw);
    }
  }
  /* Bad input: an index out of range, bad offsets, mismatched shapes. */
  int64_t bad[3] = {0, 5, 1}, offs_bad[2] = {1, 2}, offs_dec[3] = {0, 2, 1};
  double gz[25] = {0}; /* w [5, 5] reads 25 */
  int64_t gs[2] = {3, 5}, ws[2] = {5, 5};
  kiln_tensor *ti = up_idx(KILN_I64, 3, bad), *g = up(KILN_F32, 2, gs, gz),
              *w = up(KILN_F32, 2, ws, gz);
  kiln_tensor *ob = up_idx(KILN_I64, 2, offs_bad), *od = up_idx(KILN_I64, 3, offs_dec), *y = NULL;
  KEXPECT(kiln_embedding_backward(ctx, g, ti, 5, -1, &y), KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_embedding_backward(ctx, g, ti, 6, -1, &y));
  kiln_tensor_release(y);
  y = NULL;
  KEXPECT(kiln_embedding_backward(ctx, g, ti, -1, -1, &y), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_embedding_backward(ctx, w, ti, 6, -1, &y), KILN_ERR_SHAPE);
  KEXPECT(kiln_embedding_bag(ctx, w, ti, ob, KILN_BAG_SUM, NULL, &y), KILN_ERR_INVALID_ARGUMENT);
  kiln_tensor *ti2 = up_idx(KILN_I64, 3, offs_dec);
  KEXPECT(kiln_embedding_bag(ctx, w, ti2, od, KILN_BAG_SUM, NULL, &y), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_embedding_bag(ctx, w, ti2, ob, KILN_BAG_MEAN, w, &y), KILN_ERR_INVALID_ARGUMENT);
  kiln_tensor *oi32 = up_idx(KILN_I32, 2, offs_bad);
  KEXPECT(kiln_embedding_bag(ctx, w, ti2, oi32, KILN_BAG_SUM, NULL, &y), KILN_ERR_DTYPE);
  ck_assert(y == NULL);
  kiln_tensor_release(ti), kiln_tensor_release(g), kiln_tensor_release(w);
  kiln_tensor_release(ob), kiln_tensor_release(od), kiln_tensor_release(ti2);
  kiln_tensor_release(oi32);
}
END_TEST

START_TEST(provider_slots)
{
  const kiln_provider *p = NULL;
  KOK(kiln_get_provider(KILN_PROVIDER_ABI, &p));
  ck_assert(p->adam_step == kiln_adam_step);
  ck_assert(p->dropout == kiln_dropout);
  ck_assert(p->attention_backward == kiln_attention_backward);
  ck_assert(p->embedding_bag_backward == kiln_embedding_bag_backward);
}
END_TEST

/* ------------------------------------------------------------------ class weights */

/* Host reference of the weighted losses: per-row values, the row weights and the gradient
 * of sum_r u_r loss_r (u: grad_out per row) with respect to x. */
static void
ref_wloss(int nll, const double *x, const int64_t *ti, const double *tp, const double *w,
          uint64_t rows, uint64_t C, int64_t ignore, double e, double *loss, double *lw,
          const double *u, double *dx)
{
  for (uint64_t r = 0; r < rows; r++) {
    const double *xr = x + r * C;
    double m = -INFINITY, se = 0, A = 0, B = 0;
    for (uint64_t k = 0; k < C; k++)
      m = fmax(m, xr[k]);
    for (uint64_t k = 0; k < C; k++)
      se += exp(xr[k] - m);
    double lse = m + log(se);
    int ign = !tp && ti[r] == ignore;
    double *a = malloc(C * sizeof *a);
    for (uint64_t k = 0; k < C; k++) {
      double wk = w ? w[k] : 1;
      a[k] = ign  ? 0
             : tp ? wk * ((1 - e) * tp[r * C + k] + e / (double)C)
                  : e / (double)C * wk + ((int64_t)k == ti[r] ? (1 - e) * wk : 0);
      A += a[k];
      B += a[k] * xr[k];
    }
    loss[r] = ign ? 0 : nll ? -B : A * lse - B;
    lw[r] = tp ? 1 : ign ? 0 : (w ? w[ti[r]] : 1);
    for (uint64_t k = 0; k < C; k++)
      dx[r * C + k] = ign ? 0 : u[r] * (nll ? -a[k] : exp(xr[k] - lse) * A - a[k]);
    free(a);
  }
}

START_TEST(weighted_losses_against_reference)
{
  kiln_context *ctx = harness_ctx();
  static const int64_t shapes[][3] = {{2, 5, 7}, {3, 1, 1}, {2, 3, 300}, {1, 4, 2}};
  FOR_DTYPES(dt)
  {
    double tol = dtol(dt, 5e-5, 1e-11);
    for (size_t si = 0; si < 4; si++)
      for (int nll = 0; nll < 2; nll++)
        for (int probs = 0; probs < 2 - nll; probs++)
          for (int red = 0; red < 3; red++) {
            /* The small mode (oclgrind): every other shape, the mean reduction only. */
            if (SMALL_SKIP(si, 4) || (harness_small() && red != 1))
              continue;
            int64_t nd = shapes[si][0] == 3 ? 3 : 2;
            int64_t xs[3] = {shapes[si][1], shapes[si][2], 0};
            uint64_t rows = (uint64_t)shapes[si][1], C = (uint64_t)shapes[si][2];
            if (nd == 3) {
              xs[0] = 1, xs[1] = shapes[si][1], xs[2] = shapes[si][2];
            }
            double e = nll ? 0 : 0.2 * (double)(red % 2);
            double *xh = rand_vec(rows * C, -3, 3), *wh = rand_vec(C, 0.2, 2);
            double *tp = rand_vec(rows * C, 0, 1), *u = rand_vec(rows, -1, 1);
            int64_t *ti = malloc((rows + 1) * 8);
            for (uint64_t r = 0; r < rows; r++)
              ti[r] = r % 3 == 1 ? -100 : (int64_t)urand(0, (double)C);
            round_to(dt, xh, rows * C), round_to(dt, wh, C), round_to(dt, tp, rows * C);
            round_to(dt, u, rows);
            double *loss = malloc(rows * 8), *lw = malloc(rows * 8), *dx = malloc(rows * C * 8);
            double sl = 0, sw = 0;
            ref_wloss(nll, xh, ti, probs ? tp : NULL, wh, rows, C, -100, e, loss, lw, u, dx);
            for (uint64_t r = 0; r < rows; r++)
              sl += loss[r], sw += lw[r];
            kiln_reduction rd = red == 0   ? KILN_REDUCTION_NONE
                                : red == 1 ? KILN_REDUCTION_MEAN
                                           : KILN_REDUCTION_SUM;
            kiln_tensor *x = up(dt, (size_t)nd, xs, xh), *w = up1(dt, (int64_t)C, wh);
            kiln_tensor *tgt = probs ? up(dt, (size_t)nd, xs, tp) : NULL;
            if (!probs) {
              int64_t bs[2] = {xs[0], xs[1]};
              KOK(kiln_tensor_from_host(ctx, KILN_I64, (size_t)nd - 1, bs, ti, &tgt));
            }
            kiln_tensor *out = NULL, *g = NULL, *d = NULL;
            if (nll)
              KOK(kiln_nll_loss_weighted(ctx, x, tgt, w, -100, rd, &out));
            else
              KOK(kiln_cross_entropy_weighted(ctx, x, tgt, w, -100, e, rd, &out));
            double want = red == 1 ? sl / sw : sl;
            if (red == 0)
              expect_tensor(out, loss, tol, "weighted loss (none)");
            else
              expect_tensor(out, &want, tol, "weighted loss (reduced)");
            /* Backward: none takes u per row; mean and sum take u[0] (scaled). */
            double *dwant = malloc(rows * C * 8);
            if (red == 0) {
              int64_t bs[2] = {xs[0], xs[1]};
              kiln_tensor *gt = up(dt, (size_t)nd - 1, bs, u);
              g = gt;
              memcpy(dwant, dx, rows * C * 8);
            } else {
              double *u0 = malloc(rows * 8);
              for (uint64_t r = 0; r < rows; r++)
                u0[r] = u[0] / (red == 1 ? sw : 1);
              ref_wloss(nll, xh, ti, probs ? tp : NULL, wh, rows, C, -100, e, loss, lw, u0, dwant);
              free(u0);
              g = up(dt, 0, NULL, u);
            }
            if (nll)
              KOK(kiln_nll_loss_weighted_backward(ctx, g, x, tgt, w, -100, rd, &d));
            else
              KOK(kiln_cross_entropy_weighted_backward(ctx, g, x, tgt, w, -100, e, rd, &d));
            expect_tensor(d, dwant, tol, "weighted loss gradient");
            /* No weight: the unweighted kiln_cross_entropy / kiln_nll_loss. */
            kiln_tensor *o1 = NULL, *o2 = NULL;
            if (nll) {
              KOK(kiln_nll_loss_weighted(ctx, x, tgt, NULL, -100, rd, &o1));
              KOK(kiln_nll_loss(ctx, x, tgt, -100, rd, &o2));
            } else {
              KOK(kiln_cross_entropy_weighted(ctx, x, tgt, NULL, -100, e, rd, &o1));
              KOK(kiln_cross_entropy(ctx, x, tgt, -100, e, rd, &o2));
            }
            double *a1 = down(o1);
            expect_tensor(o2, a1, tol, "unweighted agrees with kiln_cross_entropy / nll");
            free(a1);
            free(xh), free(wh), free(tp), free(u), free(ti), free(loss), free(lw), free(dx);
            free(dwant);
            kiln_tensor_release(x), kiln_tensor_release(w), kiln_tensor_release(tgt);
            kiln_tensor_release(out), kiln_tensor_release(g), kiln_tensor_release(d);
            kiln_tensor_release(o1), kiln_tensor_release(o2);
          }
  }
  /* Every row ignored: the mean is 0/0 = NaN (PyTorch); bad weight shape. */
  double xv[6] = {1, 2, 3, 4, 5, 6};
  int64_t xs[2] = {2, 3}, two = 2, ti[2] = {-100, -100};
  kiln_tensor *x = up(KILN_F32, 2, xs, xv), *w2 = up1(KILN_F32, 2, xv), *t = NULL, *o = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_I64, 1, &two, ti, &t));
  KOK(kiln_cross_entropy_weighted(ctx, x, t, NULL, -100, 0, KILN_REDUCTION_MEAN, &o));
  double *ov = down(o);
  ck_assert(isnan(ov[0]));
  free(ov);
  kiln_tensor_release(o);
  o = NULL;
  KEXPECT(kiln_cross_entropy_weighted(ctx, x, t, w2, -100, 0, KILN_REDUCTION_MEAN, &o),
          KILN_ERR_SHAPE);
  KEXPECT(kiln_nll_loss_weighted(ctx, x, x, NULL, -100, KILN_REDUCTION_MEAN, &o), KILN_ERR_DTYPE);
  KEXPECT(kiln_cross_entropy_weighted(ctx, x, t, NULL, -100, 2, KILN_REDUCTION_MEAN, &o),
          KILN_ERR_INVALID_ARGUMENT);
  ck_assert(o == NULL);
  kiln_tensor_release(x), kiln_tensor_release(w2), kiln_tensor_release(t);
}
END_TEST

/* Central differences of the f64 weighted losses (reduction none, objective sum u loss). */
START_TEST(weighted_losses_finite_differences)
{
  if (!harness_has_fp64())
    return;
  kiln_context *ctx = harness_ctx();
  const uint64_t rows = 4, C = 5;
  const double h = 1e-6;
  for (int nll = 0; nll < 2; nll++)
    for (int probs = 0; probs < 2 - nll; probs++) {
      double *xh = rand_vec(rows * C, -2, 2), *wh = rand_vec(C, 0.2, 2);
      double *tp = rand_vec(rows * C, 0, 1), *u = rand_vec(rows, -1, 1);
      int64_t ti[4] = {1, -100, 4, 0}, xs[2] = {4, 5}, bs[1] = {4};
      double e = nll ? 0 : 0.15;
      kiln_tensor *w = up1(KILN_F64, (int64_t)C, wh), *g = up(KILN_F64, 1, bs, u), *tgt = NULL;
      if (probs)
        tgt = up(KILN_F64, 2, xs, tp);
      else
        KOK(kiln_tensor_from_host(ctx, KILN_I64, 1, bs, ti, &tgt));
      kiln_tensor *x = up(KILN_F64, 2, xs, xh), *d = NULL;
      if (nll)
        KOK(kiln_nll_loss_weighted_backward(ctx, g, x, tgt, w, -100, KILN_REDUCTION_NONE, &d));
      else
        KOK(kiln_cross_entropy_weighted_backward(ctx, g, x, tgt, w, -100, e, KILN_REDUCTION_NONE,
                                                 &d));
      double *an = down(d);
      for (uint64_t i = 0; i < rows * C; i++) {
        double f[2];
        for (int sg = 0; sg < 2; sg++) {
          double keep = xh[i];
          xh[i] = keep + (sg ? -h : h);
          kiln_tensor *xx = up(KILN_F64, 2, xs, xh), *o = NULL;
          if (nll)
            KOK(kiln_nll_loss_weighted(ctx, xx, tgt, w, -100, KILN_REDUCTION_NONE, &o));
          else
            KOK(kiln_cross_entropy_weighted(ctx, xx, tgt, w, -100, e, KILN_REDUCTION_NONE, &o));
          double *oh = down(o);
          f[sg] = 0;
          for (uint64_t r = 0; r < rows; r++)
            f[sg] += u[r] * oh[r];
          free(oh);
          kiln_tensor_release(xx), kiln_tensor_release(o);
          xh[i] = keep;
        }
        double fd = (f[0] - f[1]) / (2 * h);
        EXPECT(fabs(fd - an[i]) <= 1e-6 * (1 + fabs(an[i])),
               "%s: d/dx[%llu] fd %.12g analytic %.12g",
               nll     ? "nll"
               : probs ? "ce probs"
                       : "ce",
               (unsigned long long)i, fd, an[i]);
      }
      free(xh), free(wh), free(tp), free(u), free(an);
      kiln_tensor_release(w), kiln_tensor_release(g), kiln_tensor_release(tgt);
      kiln_tensor_release(x), kiln_tensor_release(d);
    }
}
END_TEST

static Suite *
nn_train_suite(void)
{
  Suite *s = suite_create("nn_train");
  TCase *tc = tcase_create("nn_train");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, sgd_against_reference);
  tcase_add_test(tc, adam_against_reference);
  tcase_add_test(tc, clip_grad_norm_against_reference);
  tcase_add_test(tc, optim_bad_input);
  tcase_add_test(tc, dropout_against_reference);
  tcase_add_test(tc, dropout_launch_shapes_and_rate);
  tcase_add_test(tc, group_and_batch_norm_against_reference);
  tcase_add_test(tc, batch_norm_large_mean);
  tcase_add_test(tc, norm_close_values);
  tcase_add_test(tc, norm_bad_input);
  tcase_add_test(tc, rope_against_reference);
  tcase_add_test(tc, embedding_backward_against_reference);
  tcase_add_test(tc, provider_slots);
  tcase_add_test(tc, weighted_losses_against_reference);
  if (!harness_small()) {
    tcase_add_test(tc, group_and_batch_norm_finite_differences);
    tcase_add_test(tc, weighted_losses_finite_differences);
  }
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  return harness_main(nn_train_suite(), 1);
}
