/*
 * nn_train suite: optimizer steps (SGD, Adam, AdamW) and gradient-norm clipping over lists
 * of tensors, against host references in double precision over several steps.
 *
 * Coverage: f32 and f64 (f64 with fp64); lists longer than one launch's 8 slots, tensors of
 * 0, 1, prime and larger sizes; every option (momentum, dampening, nesterov, weight decay,
 * maximize, amsgrad, decoupled decay); bad input.
 *
 * Tolerances: |got - want| <= tol (1 + |want|), tol 2e-5 for f32 (a few steps of a few
 * roundings each, and Adam's division by a small denominator) and 1e-12 for f64.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define EXPECT(cond, ...)        \
  do {                           \
    if (!(cond))                 \
      ck_abort_msg(__VA_ARGS__); \
  } while (0)

static const kiln_dtype dtypes[] = {KILN_F32, KILN_F64};

#define FOR_DTYPES(dt)                                                                      \
  for (size_t dt##_i = 0; dt##_i < 2; dt##_i++)                                             \
    for (int dt##_k = dtypes[dt##_i] != KILN_F64 || harness_has_fp64(); dt##_k; dt##_k = 0) \
      for (kiln_dtype dt = dtypes[dt##_i]; dt##_k; dt##_k = 0)

static uint64_t rng = 88172645463325252ull;

static double
urand(double lo, double hi)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

static double *
rand_vec(size_t n, double lo, double hi)
{
  double *v = malloc((n ? n : 1) * sizeof *v);
  for (size_t i = 0; i < n; i++)
    v[i] = urand(lo, hi);
  return v;
}

static uint64_t
numel(size_t nd, const int64_t *shape)
{
  uint64_t n = 1;
  for (size_t i = 0; i < nd; i++)
    n *= (uint64_t)shape[i];
  return n;
}

/* v rounded to dt in place (the reference sees what the device sees). */
static void
round_to(kiln_dtype dt, double *v, size_t n)
{
  if (dt == KILN_F32)
    for (size_t i = 0; i < n; i++)
      v[i] = (double)(float)v[i];
}

static kiln_tensor *
up(kiln_dtype dt, size_t nd, const int64_t *shape, const double *v)
{
  uint64_t n = numel(nd, shape);
  void *h = malloc((n ? n : 1) * 8);
  for (uint64_t i = 0; i < n; i++) {
    if (dt == KILN_F32)
      ((float *)h)[i] = (float)v[i];
    else
      ((double *)h)[i] = v[i];
  }
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_from_host(harness_ctx(), dt, nd, shape, h, &t));
  free(h);
  return t;
}

static kiln_tensor *
up1(kiln_dtype dt, int64_t n, const double *v)
{
  return up(dt, 1, &n, v);
}

static double *
down(const kiln_tensor *t)
{
  uint64_t n = kiln_tensor_numel(t);
  void *h = malloc(n * 8 + 8);
  KOK(kiln_tensor_download(t, h, kiln_tensor_nbytes(t)));
  double *d = malloc(n * sizeof *d + 8);
  for (uint64_t i = 0; i < n; i++)
    d[i] = kiln_tensor_dtype(t) == KILN_F32 ? (double)((float *)h)[i] : ((double *)h)[i];
  free(h);
  return d;
}

static int
close_to(double got, double want, double tol)
{
  if (isnan(want))
    return isnan(got);
  if (isinf(want))
    return got == want;
  return fabs(got - want) <= tol * (1 + fabs(want));
}

static void
expect_close(const double *got, const double *want, uint64_t n, double tol, const char *what)
{
  for (uint64_t i = 0; i < n; i++)
    EXPECT(close_to(got[i], want[i], tol), "%s: element %llu is %.17g, expected %.17g", what,
           (unsigned long long)i, got[i], want[i]);
}

static void
expect_tensor(const kiln_tensor *t, const double *want, double tol, const char *what)
{
  double *got = down(t);
  expect_close(got, want, kiln_tensor_numel(t), tol, what);
  free(got);
}

/* ------------------------------------------------------------------ optimizers */

/* Sizes of the parameter list: more than one launch's 8 slots, empty and odd tensors. */
static const int64_t opt_sizes[] = {7, 0, 1, 4099, 257, 31, 2, 1000, 13, 3};
#define NOPT (sizeof opt_sizes / sizeof opt_sizes[0])
#define OPT_STEPS 4

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
  return dt == KILN_F32 ? 2e-5 : 1e-12;
}

static void
ref_sgd(double *p, const double *g, double *buf, size_t n, const kiln_sgd_options *o,
        int64_t step)
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
  static const kiln_sgd_options cases[] = {
      {0.1, 0, 0, 0, 0, 0},     {0.05, 0.9, 0, 0, 0, 0},   {0.05, 0.9, 0.25, 0.01, 0, 0},
      {0.02, 0.8, 0, 0.1, 1, 0}, {0.03, 0.5, 0.1, 0, 0, 1},
  };
  FOR_DTYPES(dt)
  {
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      const kiln_sgd_options *o = &cases[c];
      tlist p, b;
      tlist_make(&p, dt, -2, 2);
      tlist_make(&b, dt, -1, 1); /* garbage before step 1: must be ignored */
      for (int64_t step = 1; step <= OPT_STEPS; step++) {
        tlist g;
        tlist_make(&g, dt, -1, 1);
        KOK(kiln_sgd_step(harness_ctx(), NOPT, p.t, (const kiln_tensor *const *)g.t, b.t, o,
                          step));
        for (size_t i = 0; i < NOPT; i++)
          ref_sgd(p.h[i], g.h[i], b.h[i], (size_t)opt_sizes[i], o, step);
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
  static const kiln_adam_options cases[] = {
      {1e-3, 0.9, 0.999, 1e-8, 0, 0, 0, 0},  {1e-2, 0.9, 0.99, 1e-6, 0.01, 0, 0, 0},
      {1e-2, 0.8, 0.95, 1e-8, 0.1, 0, 1, 0},  {5e-3, 0.9, 0.999, 1e-8, 0, 1, 0, 0},
      {5e-3, 0.5, 0.9, 1e-4, 0.05, 1, 1, 1},
  };
  FOR_DTYPES(dt)
  {
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
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
        for (size_t i = 0; i < NOPT; i++)
          ref_adam(p.h[i], g.h[i], m.h[i], v.h[i], vm.h[i], (size_t)opt_sizes[i], o, step);
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
      double tol = dt == KILN_F32 ? 1e-5 : 1e-12;
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
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  return harness_main(nn_train_suite(), 1);
}
