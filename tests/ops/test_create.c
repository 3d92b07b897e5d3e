/*
 * Creation suite: ones and *_like, arange, linspace, logspace, eye, tri and
 * meshgrid against host references for every dtype they accept, with empty
 * and one-element results, outputs that are given pre-filled with junk (so
 * "every element written" is checked), and bad input with exact statuses.
 *
 * arange and linspace are exact: the device computes start + i * step in
 * double without contraction (create.cl sets FP_CONTRACT OFF) and rounds
 * once to the dtype, which the host reference repeats bit for bit. On a
 * device without fp64 (f32 computed in float) a 1e-6 relative tolerance
 * applies instead. logspace uses the device's pow: 1e-5 (f32) and 1e-12
 * (f64) relative.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hostdata.h"
#include "kiln/create.h"

static kiln_context *
ctx(void)
{
  return harness_ctx();
}

/* Compares a float result with a double reference: exact when exact != 0, else relative tol. */
static void
expect_close(kiln_dtype dt, const void *got, const double *want, uint64_t n, double tol,
             const char *what)
{
  for (uint64_t i = 0; i < n; i++) {
    double g = hd_getf(dt, got, i);
    double w = dt == KILN_F32 ? (double)(float)want[i] : want[i];
    if (tol == 0.0)
      ck_assert_msg(g == w, "%s (%s): element %llu is %.17g, expected %.17g", what,
                    kiln_dtype_name(dt), (unsigned long long)i, g, w);
    else
      ck_assert_msg(fabs(g - w) <= tol * fabs(w) + 1e-300,
                    "%s (%s): element %llu is %.17g, "
                    "expected %.17g",
                    what, kiln_dtype_name(dt), (unsigned long long)i, g, w);
  }
}

START_TEST(ones_and_like)
{
  int64_t shape[3] = {2, 3, 5};
  HD_FOR_DTYPES(dt)
  {
    kiln_tensor *t = NULL;
    KOK(kiln_tensor_ones(ctx(), dt, 3, shape, &t));
    hd_expect_shape(t, dt, 3, shape);
    void *g = hd_download(t);
    for (int i = 0; i < 30; i++)
      ck_assert(hd_getf(dt, g, (uint64_t)i) == 1.0);
    free(g);
    kiln_tensor *l = NULL;
    KOK(kiln_tensor_zeros_like(t, &l));
    hd_expect_shape(l, dt, 3, shape);
    g = hd_download(l);
    for (int i = 0; i < 30; i++)
      ck_assert(hd_getf(dt, g, (uint64_t)i) == 0.0);
    free(g);
    KOK(kiln_tensor_release(l));
    KOK(kiln_tensor_ones_like(t, &l));
    g = hd_download(l);
    for (int i = 0; i < 30; i++)
      ck_assert(hd_getf(dt, g, (uint64_t)i) == 1.0);
    free(g);
    KOK(kiln_tensor_release(l));
    KOK(kiln_tensor_empty_like(t, &l));
    hd_expect_shape(l, dt, 3, shape);
    KOK(kiln_tensor_release(l));
    KOK(kiln_tensor_full_like(t, kiln_scalar_f64(3.75), &l));
    g = hd_download(l);
    /* kiln_cast() rules: floats keep 3.75, integers truncate, bool is (v != 0). */
    double want = dt == KILN_BOOL ? 1.0 : (dt == KILN_F32 || dt == KILN_F64) ? 3.75 : 3.0;
    for (int i = 0; i < 30; i++)
      ck_assert_msg(hd_getf(dt, g, (uint64_t)i) == want, "full_like %s", kiln_dtype_name(dt));
    free(g);
    KOK(kiln_tensor_release(l));
    KOK(kiln_tensor_release(t));
  }
  /* Conversion rules of the fill value: integers wrap, floats saturate. */
  int64_t one[1] = {1};
  kiln_tensor *u = NULL, *l = NULL;
  KOK(kiln_tensor_zeros(ctx(), KILN_U8, 1, one, &u));
  uint8_t b = 0;
  KOK(kiln_tensor_full_like(u, kiln_scalar_i64(300), &l));
  KOK(kiln_tensor_download(l, &b, 1));
  ck_assert_uint_eq(b, 44);
  KOK(kiln_tensor_release(l));
  KOK(kiln_tensor_full_like(u, kiln_scalar_f64(300.0), &l));
  KOK(kiln_tensor_download(l, &b, 1));
  ck_assert_uint_eq(b, 255);
  KOK(kiln_tensor_release(l));
  /* bool holds 0 or 1 whatever the value: 256 (0 as u8), -1 and NaN are true, -0.0 false. */
  kiln_tensor *bt = NULL;
  KOK(kiln_tensor_zeros(ctx(), KILN_BOOL, 1, one, &bt));
  const kiln_scalar bv[5] = {kiln_scalar_i64(256), kiln_scalar_i64(-1), kiln_scalar_f64(NAN),
                             kiln_scalar_f64(-0.0), kiln_scalar_f64(0.25)};
  const uint8_t bwant[5] = {1, 1, 1, 0, 1};
  for (int i = 0; i < 5; i++) {
    KOK(kiln_tensor_full_like(bt, bv[i], &l));
    uint8_t *g = hd_download(l);
    ck_assert_msg(g[0] == bwant[i], "full_like bool value %d gives %u", i, g[0]);
    free(g);
    KOK(kiln_tensor_release(l));
  }
  KOK(kiln_tensor_release(bt));
  /* Empty shapes. */
  int64_t z[2] = {0, 4};
  kiln_tensor *e = NULL;
  KOK(kiln_tensor_ones(ctx(), KILN_F32, 2, z, &e));
  KOK(kiln_tensor_ones_like(e, &l));
  hd_expect_shape(l, KILN_F32, 2, z);
  KOK(kiln_tensor_release(l));
  KOK(kiln_tensor_release(e));
  /* Errors. */
  KEXPECT(kiln_tensor_zeros_like(u, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tensor_ones_like(NULL, &l), KILN_ERR_INVALID_HANDLE);
  ck_assert_ptr_null(l);
  KOK(kiln_tensor_release(u));
  KEXPECT(kiln_tensor_empty_like(u, &l), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_tensor_full_like(u, kiln_scalar_i64(1), &l), KILN_ERR_INVALID_HANDLE);
  int64_t neg[1] = {-1};
  KEXPECT(kiln_tensor_ones(ctx(), KILN_F32, 1, neg, &l), KILN_ERR_SHAPE);
  KEXPECT(kiln_tensor_ones(ctx(), (kiln_dtype)42, 1, one, &l), KILN_ERR_INVALID_ARGUMENT);
}
END_TEST

struct arange_case {
  kiln_scalar start, stop, step;
};

START_TEST(arange_float)
{
  const struct arange_case cases[] = {
      {kiln_scalar_f64(0), kiln_scalar_f64(10), kiln_scalar_f64(1)},
      {kiln_scalar_f64(1), kiln_scalar_f64(-2), kiln_scalar_f64(-0.25)},
      {kiln_scalar_f64(0.5), kiln_scalar_f64(0.5), kiln_scalar_f64(1)},
      {kiln_scalar_f64(0), kiln_scalar_f64(1), kiln_scalar_f64(0.1)},
      {kiln_scalar_i64(3), kiln_scalar_i64(1000), kiln_scalar_i64(7)},
      {kiln_scalar_f64(-1e6), kiln_scalar_f64(1e6), kiln_scalar_f64(3.3)},
      {kiln_scalar_f64(5), kiln_scalar_f64(0), kiln_scalar_f64(1)},
  };
  double tol = harness_has_fp64() ? 0.0 : 1e-6;
  for (int f = 0; f < 2; f++) {
    kiln_dtype dt = f ? KILN_F64 : KILN_F32;
    if (!hd_dtype_ok(dt))
      continue;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      double a = cases[c].start.is_integer ? (double)cases[c].start.i : cases[c].start.f;
      double b = cases[c].stop.is_integer ? (double)cases[c].stop.i : cases[c].stop.f;
      double d = cases[c].step.is_integer ? (double)cases[c].step.i : cases[c].step.f;
      double len = ceil((b - a) / d);
      int64_t n = len > 0 ? (int64_t)len : 0;
      if (!harness_fits((uint64_t)n))
        continue;
      double *want = malloc(((size_t)n + 1) * sizeof *want);
      for (int64_t i = 0; i < n; i++)
        want[i] = a + (double)i * d;
      kiln_tensor *t = NULL;
      KOK(kiln_arange(ctx(), cases[c].start, cases[c].stop, cases[c].step, dt, &t));
      hd_expect_shape(t, dt, 1, &n);
      void *g = hd_download(t);
      expect_close(dt, g, want, (uint64_t)n, dt == KILN_F64 ? tol / 1e6 : tol, "arange");
      free(g);
      free(want);
      KOK(kiln_tensor_release(t));
    }
  }
}
END_TEST

START_TEST(arange_integer)
{
  static const int64_t cases[][3] = {{-5, 17, 3},   {10, -10, -7}, {0, 0, 1},   {7, 3, 1},
                                     {250, 260, 3}, {0, 1, 5},     {-3, -4, -1}};
  HD_FOR_DTYPES(dt)
  {
    if (dt == KILN_BOOL || dt == KILN_F32 || dt == KILN_F64)
      continue;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      int64_t a = cases[c][0], b = cases[c][1], d = cases[c][2], n = 0;
      for (int64_t v = a; d > 0 ? v < b : v > b; v += d)
        n++;
      kiln_tensor *t = NULL;
      KOK(kiln_arange(ctx(), kiln_scalar_i64(a), kiln_scalar_f64((double)b), kiln_scalar_i64(d), dt,
                      &t));
      hd_expect_shape(t, dt, 1, &n);
      void *g = hd_download(t);
      unsigned char *want = calloc((size_t)n + 1, 8);
      for (int64_t i = 0; i < n; i++)
        hd_seti(dt, want, (uint64_t)i, a + i * d);
      hd_expect_equal(dt, g, want, (uint64_t)n, "arange integer");
      free(want);
      free(g);
      KOK(kiln_tensor_release(t));
    }
  }
  /* The whole int64 range, exactly. */
  kiln_tensor *t = NULL;
  KOK(kiln_arange(ctx(), kiln_scalar_i64(INT64_MIN), kiln_scalar_i64(INT64_MAX),
                  kiln_scalar_i64(INT64_MAX), KILN_I64, &t));
  int64_t three = 3, got[3];
  hd_expect_shape(t, KILN_I64, 1, &three);
  KOK(kiln_tensor_download(t, got, sizeof got));
  ck_assert(got[0] == INT64_MIN && got[1] == -1 && got[2] == INT64_MAX - 1);
  /* A given output of the right shape is written; a wrong one is refused. */
  kiln_tensor *given = t;
  KOK(kiln_arange(ctx(), kiln_scalar_i64(1), kiln_scalar_i64(4), kiln_scalar_i64(1), KILN_I64,
                  &given));
  KOK(kiln_tensor_download(t, got, sizeof got));
  ck_assert(got[0] == 1 && got[1] == 2 && got[2] == 3);
  KEXPECT(kiln_arange(ctx(), kiln_scalar_i64(1), kiln_scalar_i64(5), kiln_scalar_i64(1), KILN_I64,
                      &given),
          KILN_ERR_SHAPE);
  KEXPECT(kiln_arange(ctx(), kiln_scalar_i64(1), kiln_scalar_i64(4), kiln_scalar_i64(1), KILN_I32,
                      &given),
          KILN_ERR_DTYPE);
  KOK(kiln_tensor_release(t));
  t = NULL;
  KEXPECT(
      kiln_arange(ctx(), kiln_scalar_i64(0), kiln_scalar_i64(4), kiln_scalar_i64(0), KILN_I32, &t),
      KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(
      kiln_arange(ctx(), kiln_scalar_f64(0), kiln_scalar_f64(4), kiln_scalar_f64(0), KILN_F32, &t),
      KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_arange(ctx(), kiln_scalar_f64(0.5), kiln_scalar_i64(4), kiln_scalar_i64(1), KILN_I32,
                      &t),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_arange(ctx(), kiln_scalar_f64(NAN), kiln_scalar_f64(4), kiln_scalar_f64(1), KILN_F64,
                      &t),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(
      kiln_arange(ctx(), kiln_scalar_i64(0), kiln_scalar_i64(4), kiln_scalar_i64(1), KILN_BOOL, &t),
      KILN_ERR_DTYPE);
  KEXPECT(kiln_arange(ctx(), kiln_scalar_i64(0), kiln_scalar_i64(4), kiln_scalar_i64(1),
                      (kiln_dtype)-1, &t),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(
      kiln_arange(NULL, kiln_scalar_i64(0), kiln_scalar_i64(4), kiln_scalar_i64(1), KILN_I32, &t),
      KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_arange(ctx(), kiln_scalar_i64(0), kiln_scalar_i64(4), kiln_scalar_i64(1), KILN_I32,
                      NULL),
          KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(t);
}
END_TEST

START_TEST(linspace_logspace)
{
  struct {
    double a, b;
    int64_t n;
    int endpoint;
  } cases[] = {{0, 1, 5, 1},      {2, 3, 5, 0},      {-7.5, 3.25, 1, 1}, {1, 2, 0, 1},
               {1, 2, 1, 0},      {10, -10, 101, 1}, {0, 1, 1000, 1},    {3, 3, 4, 1},
               {-0.7, 0.3, 37, 1}}; /* the last: start + 36 * step != stop in double */
  double tol = harness_has_fp64() ? 0.0 : 1e-6;
  for (int f = 0; f < 2; f++) {
    kiln_dtype dt = f ? KILN_F64 : KILN_F32;
    if (!hd_dtype_ok(dt))
      continue;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      int64_t n = cases[c].n;
      if (!harness_fits((uint64_t)n))
        continue;
      int64_t div = cases[c].endpoint ? n - 1 : n;
      double step = div > 0 ? (cases[c].b - cases[c].a) / (double)div : 0.0;
      double *want = malloc(((size_t)n + 1) * sizeof *want);
      for (int64_t i = 0; i < n; i++)
        want[i] = cases[c].a + (double)i * step;
      if (cases[c].endpoint && n > 1)
        want[n - 1] = cases[c].b;
      kiln_tensor *t = NULL;
      KOK(kiln_linspace(ctx(), cases[c].a, cases[c].b, n, cases[c].endpoint, dt, &t));
      hd_expect_shape(t, dt, 1, &n);
      void *g = hd_download(t);
      expect_close(dt, g, want, (uint64_t)n, dt == KILN_F64 ? tol / 1e6 : tol, "linspace");
      if (cases[c].endpoint && n > 1)
        ck_assert(hd_getf(dt, g, (uint64_t)n - 1) ==
                  (dt == KILN_F32 ? (double)(float)cases[c].b : cases[c].b));
      free(g);
      KOK(kiln_tensor_release(t));
      /* logspace base 10 and base 2 on the same exponents */
      for (int bi = 0; bi < 2; bi++) {
        double base = bi ? 2.0 : 10.0;
        double *lw = malloc(((size_t)n + 1) * sizeof *lw);
        for (int64_t i = 0; i < n; i++)
          lw[i] = pow(base, want[i]);
        t = NULL;
        KOK(kiln_logspace(ctx(), cases[c].a, cases[c].b, n, cases[c].endpoint, base, dt, &t));
        g = hd_download(t);
        expect_close(dt, g, lw, (uint64_t)n, dt == KILN_F64 ? 1e-12 : 1e-5, "logspace");
        free(g);
        free(lw);
        KOK(kiln_tensor_release(t));
      }
      free(want);
    }
  }
  kiln_tensor *t = NULL;
  KEXPECT(kiln_linspace(ctx(), 0, 1, 5, 1, KILN_I32, &t), KILN_ERR_DTYPE);
  KEXPECT(kiln_linspace(ctx(), 0, 1, -1, 1, KILN_F32, &t), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_linspace(ctx(), 0, INFINITY, 3, 1, KILN_F32, &t), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_logspace(ctx(), 0, 1, 3, 1, -2.0, KILN_F32, &t), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_logspace(ctx(), 0, 1, 3, 1, 2.0, KILN_BOOL, &t), KILN_ERR_DTYPE);
  ck_assert_ptr_null(t);
}
END_TEST

/*
 * Lengths and steps: one that is not finite (the quotient overflows double)
 * is an argument error, a finite one too large for the result an overflow;
 * a range running away from stop is empty however large the quotient.
 */
START_TEST(length_limits)
{
  kiln_tensor *t = NULL;
  kiln_dtype dts[2] = {KILN_F64, KILN_F32};
  for (int f = harness_has_fp64() ? 0 : 1; f < 2; f++) {
    KEXPECT(kiln_arange(ctx(), kiln_scalar_f64(0), kiln_scalar_f64(1e300), kiln_scalar_f64(1e-300),
                        dts[f], &t),
            KILN_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "not finite"));
    KEXPECT(kiln_arange(ctx(), kiln_scalar_f64(-1e308), kiln_scalar_f64(1e308), kiln_scalar_f64(1),
                        dts[f], &t),
            KILN_ERR_INVALID_ARGUMENT);
    KEXPECT(kiln_arange(ctx(), kiln_scalar_f64(0), kiln_scalar_f64(1e19), kiln_scalar_f64(1),
                        dts[f], &t),
            KILN_ERR_OVERFLOW);
    /* Fits int64, not the bytes of one buffer. */
    KEXPECT(kiln_arange(ctx(), kiln_scalar_f64(0), kiln_scalar_f64(1e18), kiln_scalar_f64(1),
                        dts[f], &t),
            KILN_ERR_OVERFLOW);
    KEXPECT(kiln_arange(ctx(), kiln_scalar_f64(0), kiln_scalar_f64(4e18), kiln_scalar_f64(1),
                        dts[f], &t),
            KILN_ERR_OVERFLOW);
    ck_assert_ptr_null(t);
    int64_t zero = 0;
    KOK(kiln_arange(ctx(), kiln_scalar_f64(0), kiln_scalar_f64(-1e300), kiln_scalar_f64(1e-300),
                    dts[f], &t));
    hd_expect_shape(t, dts[f], 1, &zero);
    KOK(kiln_tensor_release(t));
    t = NULL;

    KEXPECT(kiln_linspace(ctx(), -1e308, 1e308, 3, 1, dts[f], &t), KILN_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "not finite"));
    KEXPECT(kiln_linspace(ctx(), -1e308, 1e308, 2, 0, dts[f], &t), KILN_ERR_INVALID_ARGUMENT);
    KEXPECT(kiln_logspace(ctx(), -1e308, 1e308, 3, 1, 10.0, dts[f], &t), KILN_ERR_INVALID_ARGUMENT);
    KEXPECT(kiln_linspace(ctx(), 0, 1, INT64_MAX, 1, dts[f], &t), KILN_ERR_OVERFLOW);
    KEXPECT(kiln_linspace(ctx(), 0, 1, (int64_t)1 << 40, 0, dts[f], &t), KILN_ERR_OVERFLOW);
    ck_assert_ptr_null(t);
    /* One element needs no step: start, even when stop - start overflows. */
    int64_t one = 1;
    KOK(kiln_linspace(ctx(), -1e308, 1e308, 1, 1, dts[f], &t));
    hd_expect_shape(t, dts[f], 1, &one);
    void *g = hd_download(t);
    ck_assert(hd_getf(dts[f], g, 0) == (dts[f] == KILN_F32 ? (double)(float)-1e308 : -1e308));
    free(g);
    KOK(kiln_tensor_release(t));
    t = NULL;
  }
  /* Integer lengths are finite: too long is an overflow. */
  KEXPECT(kiln_arange(ctx(), kiln_scalar_i64(INT64_MIN), kiln_scalar_i64(INT64_MAX),
                      kiln_scalar_i64(1), KILN_I64, &t),
          KILN_ERR_OVERFLOW);
  KEXPECT(kiln_arange(ctx(), kiln_scalar_i64(0), kiln_scalar_i64(INT64_MAX), kiln_scalar_i64(1),
                      KILN_I32, &t),
          KILN_ERR_OVERFLOW);
  ck_assert_ptr_null(t);
}
END_TEST

START_TEST(eye_and_tri)
{
  static const int64_t cases[][3] = {{3, 5, 0}, {4, 4, 1},  {5, 3, -2}, {0, 3, 0},
                                     {3, 0, 0}, {4, 4, 10}, {1, 1, 0},  {7, 2, -10}};
  HD_FOR_EVERY_DTYPE(dt)
  {
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      int64_t r = cases[c][0], cl = cases[c][1], k = cases[c][2];
      int64_t dims[2] = {r, cl};
      for (int which = 0; which < 2; which++) {
        /* A pre-filled output shows whether every element is written. */
        kiln_tensor *t = NULL;
        KOK(kiln_tensor_full(ctx(), dt, 2, dims, kiln_scalar_i64(7), &t));
        kiln_tensor *given = t;
        if (which)
          KOK(kiln_tri(ctx(), r, cl, k, dt, &t));
        else
          KOK(kiln_eye(ctx(), r, cl, k, dt, &t));
        ck_assert_ptr_eq(t, given);
        void *g = hd_download(t);
        size_t esz = kiln_dtype_size(dt);
        for (int64_t i = 0; i < r; i++)
          for (int64_t j = 0; j < cl; j++) {
            int one = which ? j - i <= k : j - i == k;
            unsigned char want[16]; /* 1 + 0i for complex */
            hd_setf(dt, want, 0, one ? 1.0 : 0.0);
            ck_assert_msg(memcmp((char *)g + (size_t)(i * cl + j) * esz, want, esz) == 0,
                          "%s %s (%lld,%lld,%lld) at [%lld,%lld]", which ? "tri" : "eye",
                          kiln_dtype_name(dt), (long long)r, (long long)cl, (long long)k,
                          (long long)i, (long long)j);
          }
        free(g);
        KOK(kiln_tensor_release(t));
      }
    }
  }
  /* The identity. */
  kiln_tensor *t = NULL;
  KOK(kiln_eye(ctx(), 3, 3, 0, KILN_F32, &t));
  float id[9];
  KOK(kiln_tensor_download(t, id, sizeof id));
  for (int i = 0; i < 9; i++)
    ck_assert(id[i] == (i % 4 == 0 ? 1.0f : 0.0f));
  KOK(kiln_tensor_release(t));
  t = NULL;
  KEXPECT(kiln_eye(ctx(), -1, 3, 0, KILN_F32, &t), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tri(ctx(), 3, -3, 0, KILN_F32, &t), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_eye(ctx(), 3, 3, 0, KILN_DTYPE_COUNT, &t), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tri(NULL, 3, 3, 0, KILN_F32, &t), KILN_ERR_INVALID_HANDLE);
  ck_assert_ptr_null(t);
}
END_TEST

/*
 * f16, bf16, c64, c128 at the sizes of CODING_STYLE.md: zeros, ones, full (one rounding of the
 * value), full_complex, arange and linspace (bit-exact: start + i * step in double, then one
 * rounding, which the host repeats with kiln_f16_from_f64 and friends), linspace_complex,
 * logspace (within 1 ulp of f16/bf16; the device's pow) and eye on a large matrix.
 */
static const kiln_dtype new_dts[4] = {KILN_F16, KILN_BF16, KILN_C64, KILN_C128};

/* Element i of a CT computation rounded to dt as the device does (CT: double with fp64). */
static void
set_ct(kiln_dtype dt, void *buf, uint64_t i, double v)
{
  if (!harness_has_fp64())
    v = (float)v;
  hd_setf(dt, buf, i, v);
}

START_TEST(new_dtypes_creation)
{
  static const int64_t sizes[] = {0, 1, 97, 1000, (1 << 16) + 3};
  int fp64 = harness_has_fp64();
  for (size_t di = 0; di < 4; di++) {
    kiln_dtype dt = new_dts[di];
    if (!hd_dtype_ok(dt))
      continue;
    size_t esz = kiln_dtype_size(dt);
    int cplx = dt == KILN_C64 || dt == KILN_C128;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
      int64_t n = sizes[si];
      void *want = calloc((size_t)n + 1, esz);
      kiln_tensor *t = NULL;
      /* zeros, ones, full: one rounding of the value (0.1 is inexact in every dtype). */
      const double fills[3] = {0.0, 1.0, 0.1};
      for (int f = 0; f < 3; f++) {
        if (f == 0)
          KOK(kiln_tensor_zeros(ctx(), dt, 1, &n, &t));
        else if (f == 1)
          KOK(kiln_tensor_ones(ctx(), dt, 1, &n, &t));
        else
          KOK(kiln_tensor_full(ctx(), dt, 1, &n, kiln_scalar_f64(fills[f]), &t));
        for (int64_t i = 0; i < n; i++)
          hd_setf(dt, want, (uint64_t)i, fills[f]);
        void *g = hd_download(t);
        hd_expect_equal(dt, g, want, (uint64_t)n, "zeros/ones/full");
        free(g);
        KOK(kiln_tensor_release(t));
      }
      /* arange(0.1, 0.1 + 0.37 n, 0.37), length n. */
      double a = 0.1, d = 0.37;
      t = NULL;
      KOK(kiln_arange(ctx(), kiln_scalar_f64(a), kiln_scalar_f64(a + d * ((double)n - 0.5)),
                      kiln_scalar_f64(d), dt, &t));
      hd_expect_shape(t, dt, 1, &n);
      for (int64_t i = 0; i < n; i++)
        set_ct(dt, want, (uint64_t)i,
               fp64 ? a + (double)i * d : (double)((float)a + (float)i * (float)d));
      void *g = hd_download(t);
      hd_expect_equal(dt, g, want, (uint64_t)n, "arange");
      free(g);
      KOK(kiln_tensor_release(t));
      /* linspace(-3.3, 7.1, n): the last element is exactly stop. */
      double lo = -3.3, hi = 7.1, step = n > 1 ? (hi - lo) / (double)(n - 1) : 0.0;
      t = NULL;
      KOK(kiln_linspace(ctx(), lo, hi, n, 1, dt, &t));
      for (int64_t i = 0; i < n; i++)
        set_ct(dt, want, (uint64_t)i,
               n > 1 && i == n - 1 ? hi
               : fp64              ? lo + (double)i * step
                                   : (double)((float)lo + (float)i * (float)step));
      g = hd_download(t);
      hd_expect_equal(dt, g, want, (uint64_t)n, "linspace");
      free(g);
      KOK(kiln_tensor_release(t));
      if (cplx && fp64) {
        /* Complex endpoints: both parts spaced, endpoint excluded. */
        kiln_complex128 s0 = {-1.25, 3.5}, s1 = {2.0, -0.3};
        double sr = n ? (s1.re - s0.re) / (double)n : 0, sim = n ? (s1.im - s0.im) / (double)n : 0;
        t = NULL;
        KOK(kiln_linspace_complex(ctx(), s0, s1, n, 0, dt, &t));
        for (int64_t i = 0; i < n; i++) {
          double re = s0.re + (double)i * sr, im = s0.im + (double)i * sim;
          if (dt == KILN_C64)
            ((kiln_complex64 *)want)[i] = (kiln_complex64){(float)re, (float)im};
          else
            ((kiln_complex128 *)want)[i] = (kiln_complex128){re, im};
        }
        g = hd_download(t);
        hd_expect_equal(dt, g, want, (uint64_t)n, "linspace_complex");
        free(g);
        KOK(kiln_tensor_release(t));
        /* full_complex */
        t = NULL;
        kiln_complex128 v = {0.1, -2.75};
        KOK(kiln_tensor_full_complex(ctx(), dt, 1, &n, v, &t));
        for (int64_t i = 0; i < n; i++) {
          if (dt == KILN_C64)
            ((kiln_complex64 *)want)[i] = (kiln_complex64){(float)v.re, (float)v.im};
          else
            ((kiln_complex128 *)want)[i] = v;
        }
        g = hd_download(t);
        hd_expect_equal(dt, g, want, (uint64_t)n, "full_complex");
        free(g);
        KOK(kiln_tensor_release(t));
      }
      free(want);
    }
    /* logspace: f16/bf16 within 1 ulp (the device's pow, then one rounding); complex: the
     * real value (relative 1e-5 / 1e-12), imaginary part exactly 0. */
    int64_t n = 50;
    kiln_tensor *t = NULL;
    KOK(kiln_logspace(ctx(), -2.0, 3.0, n, 1, 2.0, dt, &t));
    void *g = hd_download(t);
    for (int64_t i = 0; i < n; i++) {
      double e = i == n - 1 ? 3.0 : -2.0 + (double)i * (5.0 / 49.0), w = pow(2.0, e);
      if (cplx) {
        double re = hd_getf(dt, g, (uint64_t)i);
        double im = dt == KILN_C64 ? ((kiln_complex64 *)g)[i].im : ((kiln_complex128 *)g)[i].im;
        ck_assert_msg(fabs(re - w) <= (dt == KILN_C64 ? 1e-5 : 1e-12) * w && im == 0.0,
                      "logspace %s element %lld", kiln_dtype_name(dt), (long long)i);
      } else {
        unsigned char wb[2];
        hd_setf(dt, wb, 0, w);
        int diff = (int)((uint16_t *)g)[i] - (int)*(uint16_t *)wb;
        ck_assert_msg(diff >= -1 && diff <= 1, "logspace %s element %lld: %#x, want %#x",
                      kiln_dtype_name(dt), (long long)i, ((uint16_t *)g)[i], *(uint16_t *)wb);
      }
    }
    free(g);
    KOK(kiln_tensor_release(t));
    /* eye on a large matrix whose columns are no multiple of the work-group size. */
    t = NULL;
    KOK(kiln_eye(ctx(), 257, 1031, 3, dt, &t));
    g = hd_download(t);
    unsigned char one[16], zero[16];
    hd_setf(dt, one, 0, 1.0);
    hd_setf(dt, zero, 0, 0.0);
    for (int64_t i = 0; i < 257 * 1031; i++)
      ck_assert(memcmp((char *)g + (size_t)i * esz, i % 1031 - i / 1031 == 3 ? one : zero, esz) ==
                0);
    free(g);
    KOK(kiln_tensor_release(t));
  }
  /* full_complex and linspace_complex take complex dtypes only. */
  int64_t two = 2;
  kiln_tensor *t = NULL;
  kiln_complex128 v = {1, 2};
  KEXPECT(kiln_tensor_full_complex(ctx(), KILN_F32, 1, &two, v, &t), KILN_ERR_DTYPE);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "kiln_tensor_full_complex"));
  KEXPECT(kiln_tensor_full_complex(ctx(), KILN_C64, 1, &two, v, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_linspace_complex(ctx(), v, v, 3, 1, KILN_F64, &t), KILN_ERR_DTYPE);
  kiln_complex128 inf = {INFINITY, 0};
  KEXPECT(kiln_linspace_complex(ctx(), v, inf, 3, 1, KILN_C64, &t), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_linspace_complex(ctx(), v, v, -1, 1, KILN_C64, &t), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(
      kiln_arange(ctx(), kiln_scalar_i64(0), kiln_scalar_i64(3), kiln_scalar_i64(1), KILN_BOOL, &t),
      KILN_ERR_DTYPE);
  ck_assert_ptr_null(t);
}
END_TEST

START_TEST(meshgrid_xy_ij)
{
  HD_FOR_EVERY_DTYPE(dt)
  {
    int64_t lens[3] = {3, 4, 2};
    void *h[3];
    kiln_tensor *in[3];
    for (int i = 0; i < 3; i++)
      in[i] = hd_make(dt, 1, &lens[i], 40 + (uint64_t)i, &h[i]);
    for (size_t n = 1; n <= 3; n++) {
      for (int ij = 0; ij < 2; ij++) {
        kiln_tensor *outs[3] = {NULL, NULL, NULL};
        KOK(kiln_meshgrid(ctx(), (const kiln_tensor *const *)in, n,
                          ij ? KILN_MESHGRID_IJ : KILN_MESHGRID_XY, outs));
        int64_t shape[3];
        for (size_t d = 0; d < n; d++)
          shape[d] = lens[d];
        if (!ij && n >= 2) {
          shape[0] = lens[1];
          shape[1] = lens[0];
        }
        uint64_t total = hd_numel(n, shape);
        for (size_t k = 0; k < n; k++) {
          /* axis input k varies along */
          size_t ax = !ij && n >= 2 && k < 2 ? 1 - k : k;
          int64_t *src = calloc(total, sizeof *src), c[3];
          for (uint64_t i = 0; i < total; i++) {
            hd_unravel(i, n, shape, c);
            src[i] = c[ax];
          }
          hd_expect_shape(outs[k], dt, n, shape);
          void *g = hd_download(outs[k]);
          hd_expect_map(dt, g, h[k], src, total, NULL, ij ? "meshgrid ij" : "meshgrid xy");
          free(g);
          free(src);
          KOK(kiln_tensor_release(outs[k]));
        }
      }
    }
    for (int i = 0; i < 3; i++) {
      free(h[i]);
      KOK(kiln_tensor_release(in[i]));
    }
  }
  /* Empty axis, errors. */
  int64_t z = 0, three = 3, s22[2] = {2, 2};
  kiln_tensor *e = NULL, *v = hd_make(KILN_F32, 1, &three, 1, NULL), *m = NULL, *vi = NULL;
  KOK(kiln_tensor_create(ctx(), KILN_F32, 1, &z, &e));
  const kiln_tensor *ev[2] = {e, v};
  kiln_tensor *outs[2] = {NULL, NULL};
  KOK(kiln_meshgrid(ctx(), ev, 2, KILN_MESHGRID_XY, outs));
  ck_assert_uint_eq(kiln_tensor_numel(outs[0]), 0);
  KOK(kiln_tensor_release(outs[0]));
  KOK(kiln_tensor_release(outs[1]));
  outs[0] = outs[1] = NULL;
  KOK(kiln_tensor_zeros(ctx(), KILN_F32, 2, s22, &m));
  const kiln_tensor *vm[2] = {v, m};
  KEXPECT(kiln_meshgrid(ctx(), vm, 2, KILN_MESHGRID_IJ, outs), KILN_ERR_SHAPE);
  vi = hd_make(KILN_I32, 1, &three, 1, NULL);
  const kiln_tensor *vvi[2] = {v, vi};
  KEXPECT(kiln_meshgrid(ctx(), vvi, 2, KILN_MESHGRID_IJ, outs), KILN_ERR_DTYPE);
  KEXPECT(kiln_meshgrid(ctx(), vvi, 0, KILN_MESHGRID_IJ, outs), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_meshgrid(ctx(), vvi, 2, (kiln_meshgrid_indexing)5, outs), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_meshgrid(ctx(), vvi, 2, KILN_MESHGRID_IJ, NULL), KILN_ERR_INVALID_ARGUMENT);
  /* A bad given second output unwinds the first, which kiln made. */
  const kiln_tensor *vv[2] = {v, v};
  outs[1] = m;
  KEXPECT(kiln_meshgrid(ctx(), vv, 2, KILN_MESHGRID_IJ, outs), KILN_ERR_SHAPE);
  ck_assert_ptr_null(outs[0]);
  ck_assert_ptr_eq(outs[1], m);
  KOK(kiln_tensor_release(vi));
  KOK(kiln_tensor_release(m));
  KOK(kiln_tensor_release(v));
  KOK(kiln_tensor_release(e));
}
END_TEST

/*
 * Aliasing: a meshgrid output one element before or after an input holds
 * the values a separate output would; grids over shared bytes are refused
 * with every byte left alone.
 */
START_TEST(overlapping_outputs)
{
  kiln_context *ctx = harness_ctx();
  enum { A = 37, B = 29 };
  const int64_t na = A, nb = B, gs[2] = {A, B}, gn = A * B;
  int32_t ha[A], hb[B];
  for (int i = 0; i < A; i++)
    ha[i] = i * 2 + 1;
  for (int i = 0; i < B; i++)
    hb[i] = -i;
  kiln_tensor *bt = hd_upload(KILN_I32, 1, &nb, hb), *at = hd_upload(KILN_I32, 1, &na, ha);
  for (int out_first = 1; out_first >= 0; out_first--) {
    const char *where = out_first ? "before" : "after";
    /* Grid 0 (ij: varies along axis 0 with a) over a's bytes; grid 1 allocated. */
    kiln_tensor *a, *outs[2] = {NULL, NULL};
    harness_overlap_pair(KILN_I32, 1, &na, ha, KILN_I32, 2, gs, 4, out_first, &a, &outs[0], NULL);
    const kiln_tensor *ins[2] = {a, bt};
    KOK(kiln_meshgrid(ctx, ins, 2, KILN_MESHGRID_IJ, outs));
    int32_t *g0 = harness_download(outs[0]), *g1 = harness_download(outs[1]);
    for (int i = 0; i < A; i++)
      for (int j = 0; j < B; j++) {
        ck_assert_msg(g0[i * B + j] == ha[i], "meshgrid 0, output %s a: [%d,%d]", where, i, j);
        ck_assert_msg(g1[i * B + j] == hb[j], "meshgrid 1, output %s a: [%d,%d]", where, i, j);
      }
    free(g0);
    free(g1);
    kiln_tensor_release(a);
    kiln_tensor_release(outs[0]);
    kiln_tensor_release(outs[1]);

    kiln_tensor *all;
    void *zeros = calloc((size_t)gn, sizeof(int32_t));
    harness_overlap_pair(KILN_I32, 2, gs, zeros, KILN_I32, 2, gs, 4, out_first, &outs[0], &outs[1],
                         &all);
    free(zeros);
    const kiln_tensor *sep[2] = {at, bt};
    KEXPECT_REFUSED_UNTOUCHED(all, kiln_meshgrid(ctx, sep, 2, KILN_MESHGRID_IJ, outs));
    kiln_tensor_release(outs[0]);
    kiln_tensor_release(outs[1]);
    kiln_tensor_release(all);
  }
  kiln_tensor_release(at);
  kiln_tensor_release(bt);
}
END_TEST

static Suite *
create_suite(void)
{
  Suite *s = suite_create("create");
  TCase *tc = tcase_create("create");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, ones_and_like);
  tcase_add_test(tc, arange_float);
  tcase_add_test(tc, arange_integer);
  tcase_add_test(tc, linspace_logspace);
  tcase_add_test(tc, length_limits);
  tcase_add_test(tc, eye_and_tri);
  tcase_add_test(tc, meshgrid_xy_ij);
  tcase_add_test(tc, new_dtypes_creation);
  tcase_add_test(tc, overlapping_outputs);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  return harness_main(create_suite(), 1);
}
