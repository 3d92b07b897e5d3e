/*
 * BLAS suite: GEMM, matmul, GEMV, SYRK, dot, axpy and scal against a host
 * reference in double precision, on both routes (kiln's own kernel and
 * CLBlast, forced with KILN_OPT_GEMM_SMALL_MNK) and without CLBlast
 * (KILN_DEBUG_NO_CLBLAST), plus bad input.
 *
 * CLBlast compiles each routine and precision once per process (seconds each
 * on PoCL, see docs/blas_fft.md); the first test pays for all of them through
 * kiln_blas_warm() and reports the time.
 */
#include <math.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "ops/blas_route.h"
#include "ops/tuned.h"

static const kiln_dtype float_dtypes[] = {KILN_F32, KILN_F64};

/* Routes forced through the context option. */
enum route { ROUTE_KILN, ROUTE_CLBLAST };
static const char *const route_name[] = {"kiln kernel", "CLBlast"};

/*
 * Routes a test runs. The small mode (harness.h) runs without CLBlast (the oclgrind suite
 * sets KILN_DEBUG_NO_CLBLAST), where both routes are kiln's kernel: one is enough.
 */
#define NROUTES (harness_small() ? 1 : 2)

static void
set_route(kiln_context *ctx, enum route r)
{
  KOK(kiln_context_set_option(ctx, KILN_OPT_GEMM_SMALL_MNK, r == ROUTE_KILN ? INT64_MAX : 0));
}

static int
skip_dtype(kiln_dtype dt)
{
  return dt == KILN_F64 && !harness_has_fp64();
}

static double
now_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Deterministic values in [-1, 1). */
static void
fill_random(double *v, size_t n, uint32_t seed)
{
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    v[i] = (double)(x >> 8) / 8388608.0 - 1.0;
  }
}

static int64_t
numel(size_t ndim, const int64_t *shape)
{
  int64_t n = 1;
  for (size_t i = 0; i < ndim; i++)
    n *= shape[i];
  return n;
}

/* Uploads doubles as dt (values rounded to f32 in place, so the reference sees what the device
 * sees). */
static kiln_tensor *
upload(kiln_dtype dt, size_t ndim, const int64_t *shape, double *v)
{
  int64_t n = numel(ndim, shape);
  kiln_tensor *t = NULL;
  if (dt == KILN_F32) {
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    for (int64_t i = 0; i < n; i++) {
      f[i] = (float)v[i];
      v[i] = f[i];
    }
    KOK(kiln_tensor_from_host(harness_ctx(), dt, ndim, shape, f, &t));
    free(f);
  } else {
    KOK(kiln_tensor_from_host(harness_ctx(), dt, ndim, shape, v, &t));
  }
  return t;
}

static double *
download(const kiln_tensor *t)
{
  uint64_t n = kiln_tensor_numel(t);
  double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  if (kiln_tensor_dtype(t) == KILN_F32) {
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    KOK(kiln_tensor_download(t, f, n * sizeof *f));
    for (uint64_t i = 0; i < n; i++)
      v[i] = f[i];
    free(f);
  } else {
    KOK(kiln_tensor_download(t, v, n * sizeof *v));
  }
  return v;
}

static double
eps_of(kiln_dtype dt)
{
  return dt == KILN_F32 ? 1.2e-7 : 2.3e-16;
}

/*
 * Host GEMM on one matrix: C = alpha op(A) op(B) + beta C (beta == 0 never
 * reads C), and per element the magnitude sum that bounds rounding error.
 */
static void
ref_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a,
         const double *b, double beta, double *c, double *mag)
{
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double acc = 0, am = 0;
      for (int64_t p = 0; p < k; p++) {
        double x = ta ? a[p * m + i] : a[i * k + p];
        double y = tb ? b[j * k + p] : b[p * n + j];
        acc += x * y;
        am += fabs(x * y);
      }
      double old = beta != 0 ? c[i * n + j] : 0;
      c[i * n + j] = alpha * acc + (beta != 0 ? beta * old : 0);
      mag[i * n + j] = fabs(alpha) * am + fabs(beta * old);
    }
}

/* Compares n values: |got - want| <= tol_scale * eps * (mag + tiny). */
static void
expect_close(const char *what, const double *got, const double *want, const double *mag, size_t n,
             kiln_dtype dt, double tol_scale)
{
  double eps = eps_of(dt);
  for (size_t i = 0; i < n; i++) {
    double bound = tol_scale * eps * (mag[i] + 1e-30) + 1e-300;
    ck_assert_msg(!isnan(got[i]), "%s: element %zu is NaN (want %g)", what, i, want[i]);
    ck_assert_msg(fabs(got[i] - want[i]) <= bound,
                  "%s: element %zu is %.17g, want %.17g (bound %g)", what, i, got[i], want[i],
                  bound);
  }
}

/*
 * One kiln_gemm against the reference. Shapes carry the batch dimensions;
 * the reference walks the broadcast batch. beta_nan fills a given C with NaN
 * when beta == 0 to check it never propagates.
 */
struct gemm_case {
  size_t nda, ndb;
  int64_t as[5], bs[5];
  int ta, tb;
  double alpha, beta;
  int give_c; /* pass an existing C (beta then matters) */
};

static void
run_gemm_case(kiln_dtype dt, enum route r, const struct gemm_case *gc)
{
  kiln_context *ctx = harness_ctx();
  set_route(ctx, r);
  int64_t ar = gc->as[gc->nda - 2], ac = gc->as[gc->nda - 1];
  int64_t br = gc->bs[gc->ndb - 2], bc = gc->bs[gc->ndb - 1];
  int64_t m = gc->ta ? ac : ar, k = gc->ta ? ar : ac, n = gc->tb ? br : bc;
  /* Broadcast batch shape, right-aligned. */
  size_t nba = gc->nda - 2, nbb = gc->ndb - 2, nbc = nba > nbb ? nba : nbb;
  int64_t cs[7];
  for (size_t i = 0; i < nbc; i++) {
    int64_t da = i + nba >= nbc ? gc->as[i + nba - nbc] : 1;
    int64_t db = i + nbb >= nbc ? gc->bs[i + nbb - nbc] : 1;
    cs[i] = da == 1 ? db : da;
  }
  cs[nbc] = m;
  cs[nbc + 1] = n;
  int64_t batch = numel(nbc, cs);
  int64_t na = numel(gc->nda, gc->as), nb = numel(gc->ndb, gc->bs), nc = batch * m * n;
  double *a = malloc((size_t)(na + 1) * sizeof *a), *b = malloc((size_t)(nb + 1) * sizeof *b);
  double *c = malloc((size_t)(nc + 1) * sizeof *c), *mag = malloc((size_t)(nc + 1) * sizeof *mag);
  fill_random(a, (size_t)na, 1);
  fill_random(b, (size_t)nb, 2);
  fill_random(c, (size_t)nc, 3);
  if (gc->beta == 0)
    for (int64_t i = 0; i < nc; i++)
      c[i] = NAN;
  kiln_tensor *ta = upload(dt, gc->nda, gc->as, a), *tb = upload(dt, gc->ndb, gc->bs, b);
  kiln_tensor *tc = gc->give_c ? upload(dt, nbc + 2, cs, c) : NULL;
  KOK(kiln_gemm(ctx, gc->ta ? KILN_TRANS : KILN_NO_TRANS, gc->tb ? KILN_TRANS : KILN_NO_TRANS,
                gc->alpha, ta, tb, gc->beta, &tc));
  ck_assert_uint_eq(kiln_tensor_ndim(tc), nbc + 2);
  for (size_t i = 0; i < nbc + 2; i++)
    ck_assert_int_eq(kiln_tensor_dim(tc, i), cs[i]);
  double *got = download(tc);
  /* Reference, batch by batch with broadcast indices. */
  double beta = gc->give_c ? gc->beta : 0.0;
  for (int64_t bi = 0; bi < batch; bi++) {
    int64_t rem = bi, aoff = 0, boff = 0, astr = ar * ac, bstr = br * bc;
    for (size_t d = nbc; d-- > 0;) {
      int64_t idx = rem % cs[d];
      rem /= cs[d];
      if (d + nba >= nbc) {
        int64_t dim = gc->as[d + nba - nbc];
        aoff += (dim == 1 ? 0 : idx) * astr;
        astr *= dim;
      }
      if (d + nbb >= nbc) {
        int64_t dim = gc->bs[d + nbb - nbc];
        boff += (dim == 1 ? 0 : idx) * bstr;
        bstr *= dim;
      }
    }
    ref_gemm(gc->ta, gc->tb, m, n, k, gc->alpha, a + aoff, b + boff, beta, c + bi * m * n,
             mag + bi * m * n);
  }
  char what[160];
  snprintf(what, sizeof what, "gemm %s %s ta=%d tb=%d m=%lld n=%lld k=%lld batch=%lld a=%g b=%g",
           kiln_dtype_name(dt), route_name[r], gc->ta, gc->tb, (long long)m, (long long)n,
           (long long)k, (long long)batch, gc->alpha, beta);
  expect_close(what, got, c, mag, (size_t)nc, dt, 4.0 * (double)(k + 2));
  free(got);
  free(a);
  free(b);
  free(c);
  free(mag);
  kiln_tensor_release(ta);
  kiln_tensor_release(tb);
  kiln_tensor_release(tc);
}

START_TEST(blas_warm_first_call_cost)
{
  /* First thing in the process: this is where CLBlast compiles (reported, not judged). */
  double t0 = now_s();
  KOK(kiln_blas_warm(harness_ctx(), KILN_BLAS_WARM_USED));
  fprintf(stderr, "kiln_blas_warm(USED): %.2f s (CLBlast %s)\n", now_s() - t0,
          kiln_blas_has_clblast() ? "present" : "absent");
  KEXPECT(kiln_blas_warm(harness_ctx(), (kiln_blas_warm_scope)7), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_blas_warm(NULL, KILN_BLAS_WARM_USED), KILN_ERR_INVALID_HANDLE);
}
END_TEST

/* All transposes, odd sizes and alpha/beta edge values, both routes, f32 and f64. */
START_TEST(gemm_transposes_sizes_scalars)
{
  static const int64_t dims[][3] = {{1, 1, 1}, {3, 17, 5}, {17, 3, 1}, {17, 17, 17}, {1, 3, 17}};
  static const double ab[][2] = {{1, 0}, {-1, 1}, {0.5, -1}, {0, 2}, {2, 0}};
  for (size_t d = 0; d < 2; d++) {
    kiln_dtype dt = float_dtypes[d];
    if (skip_dtype(dt))
      continue;
    for (int r = 0; r < NROUTES; r++)
      for (int t = 0; t < 4; t++)
        for (size_t s = 0; s < sizeof dims / sizeof dims[0]; s++) {
          int ta = t & 1, tb = t >> 1;
          int64_t m = dims[s][0], n = dims[s][1], k = dims[s][2];
          const double *sc = ab[(s + (size_t)t) % 5];
          struct gemm_case gc = {
              2, 2, {ta ? k : m, ta ? m : k}, {tb ? n : k, tb ? k : n}, ta, tb, sc[0], sc[1], 1};
          run_gemm_case(dt, (enum route)r, &gc);
        }
  }
}
END_TEST

/* beta == 0 must not read C: NaN there stays out of the result (both routes, both precisions). */
START_TEST(gemm_beta_zero_ignores_nan)
{
  for (size_t d = 0; d < 2; d++) {
    kiln_dtype dt = float_dtypes[d];
    if (skip_dtype(dt))
      continue;
    for (int r = 0; r < NROUTES; r++) {
      struct gemm_case gc = {2, 2, {33, 20}, {20, 70}, 0, 0, 1.5, 0.0, 1};
      run_gemm_case(dt, (enum route)r, &gc);
      struct gemm_case g2 = {2, 2, {33, 20}, {20, 70}, 0, 0, 0.0, 0.0, 1};
      run_gemm_case(dt, (enum route)r, &g2);
    }
  }
}
END_TEST

/*
 * A size-640 product, through CLBlast's large-matrix path (the indirect kernel, from 384^3
 * on), with NaN in C and beta == 0, with CLBlast's own temporaries (KILN_DEBUG_GEMM_TEMP=0)
 * and with the context's kept buffer (the default), B transposed too; odd sizes ask for the
 * padded temporaries. 1000 took 4x the time (most of it the host reference) for nothing more.
 */
START_TEST(gemm_large_1000)
{
  if (!harness_fits(640 * 641))
    return;
  for (int temp = 0; temp < 2; temp++) {
    setenv("KILN_DEBUG_GEMM_TEMP", temp ? "1" : "0", 1);
    /* a is [k, m] (transposed), b [k, n] or with temp [n, k] */
    struct gemm_case gc = {2,   2,   {640, 641}, {temp ? 639 : 640, temp ? 640 : 639}, 1, temp,
                           1.0, 0.0, 1};
    run_gemm_case(KILN_F32, ROUTE_CLBLAST, &gc);
    if (harness_has_fp64()) {
      struct gemm_case g2 = {2, 2, {1000, 17}, {1000, 3}, 1, 0, -1.0, 1.0, 1};
      run_gemm_case(KILN_F64, ROUTE_CLBLAST, &g2);
    }
  }
  unsetenv("KILN_DEBUG_GEMM_TEMP");
}
END_TEST

/* Batches: contiguous (one strided call), a repeated operand, and broadcasts needing a loop. */
START_TEST(gemm_batches_and_broadcast)
{
  static const struct gemm_case cases[] = {
      {4, 4, {2, 3, 17, 5}, {2, 3, 5, 4}, 0, 0, 1.0, 0.0, 0},
      {3, 2, {4, 3, 5}, {6, 5}, 0, 1, 1.0, 0.0, 0},  /* b repeated (stride 0); tb: b is [n, k] */
      {2, 3, {5, 3}, {4, 5, 6}, 1, 0, -1.0, 0.0, 0}, /* a repeated; ta: a is [k, m] */
      {4, 3, {3, 1, 4, 5}, {2, 5, 6}, 0, 0, 0.5, 0.0, 0}, /* broadcast both ways */
      {4, 4, {2, 1, 3, 5}, {1, 3, 2, 3}, 1, 1, 1.0, 1.0, 1},
      {3, 3, {1, 3, 3}, {5, 3, 3}, 0, 0, 1.0, 0.0, 0},
  };
  for (size_t d = 0; d < 2; d++) {
    kiln_dtype dt = float_dtypes[d];
    if (skip_dtype(dt))
      continue;
    for (int r = 0; r < NROUTES; r++)
      for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_gemm_case(dt, (enum route)r, &cases[i]);
  }
}
END_TEST

/* Zero-size dimensions: no work, k == 0 gives beta * C. */
START_TEST(gemm_empty_dims)
{
  kiln_context *ctx = harness_ctx();
  for (int r = 0; r < NROUTES; r++) {
    set_route(ctx, (enum route)r);
    int64_t a0[2] = {3, 0}, b0[2] = {0, 4}, c0[2] = {3, 4};
    kiln_tensor *a = NULL, *b = NULL, *c = NULL;
    KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, a0, &a));
    KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, b0, &b));
    KOK(kiln_tensor_full(ctx, KILN_F32, 2, c0, kiln_scalar_f64(2.0), &c));
    KOK(kiln_gemm(ctx, KILN_NO_TRANS, KILN_NO_TRANS, 1.0, a, b, 3.0, &c));
    float got[12];
    KOK(kiln_tensor_download(c, got, sizeof got));
    for (int i = 0; i < 12; i++)
      ck_assert_float_eq(got[i], 6.0f);
    kiln_tensor *fresh = NULL;
    KOK(kiln_gemm(ctx, KILN_NO_TRANS, KILN_NO_TRANS, 1.0, a, b, 0.0, &fresh));
    KOK(kiln_tensor_download(fresh, got, sizeof got));
    for (int i = 0; i < 12; i++)
      ck_assert_float_eq(got[i], 0.0f);
    kiln_tensor_release(fresh);
    fresh = NULL;
    /* m == 0: an empty result, nothing to do. */
    int64_t e[3] = {2, 0, 3}, f[2] = {3, 5};
    kiln_tensor *ea = NULL, *fb = NULL;
    KOK(kiln_tensor_zeros(ctx, KILN_F32, 3, e, &ea));
    KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, f, &fb));
    KOK(kiln_gemm(ctx, KILN_NO_TRANS, KILN_NO_TRANS, 1.0, ea, fb, 0.0, &fresh));
    ck_assert_uint_eq(kiln_tensor_numel(fresh), 0);
    ck_assert_int_eq(kiln_tensor_dim(fresh, 2), 5);
    kiln_tensor_release(fresh);
    kiln_tensor_release(ea);
    kiln_tensor_release(fb);
    kiln_tensor_release(a);
    kiln_tensor_release(b);
    kiln_tensor_release(c);
  }
}
END_TEST

START_TEST(gemm_bad_input)
{
  kiln_context *ctx = harness_ctx();
  int64_t s34[2] = {3, 4}, s54[2] = {5, 4}, s4[1] = {4}, s245[3] = {2, 4, 5}, s345[3] = {3, 4, 5};
  kiln_tensor *a = NULL, *b = NULL, *v = NULL, *b2 = NULL, *b3 = NULL, *i32 = NULL, *out = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, s34, &a));
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, s54, &b));
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 1, s4, &v));
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 3, s245, &b2));
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 3, s345, &b3));
  KOK(kiln_tensor_zeros(ctx, KILN_I32, 2, s34, &i32));
  /* Inner dimensions 4 and 5. */
  KEXPECT(kiln_gemm(ctx, KILN_NO_TRANS, KILN_NO_TRANS, 1, a, b, 0, &out), KILN_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "kiln_gemm"));
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "inner dimensions differ"));
  ck_assert_ptr_null(out);
  /* Fewer than 2 dimensions. */
  KEXPECT(kiln_gemm(ctx, KILN_NO_TRANS, KILN_NO_TRANS, 1, v, b, 0, &out), KILN_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "at least 2 dimensions"));
  /* Batch dimensions 2 and 3 do not broadcast. */
  kiln_tensor *a2 = NULL;
  int64_t s234[3] = {2, 3, 4};
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 3, s234, &a2));
  KEXPECT(kiln_gemm(ctx, KILN_NO_TRANS, KILN_NO_TRANS, 1, a2, b3, 0, &out), KILN_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "do not broadcast"));
  /* A given output of the wrong shape. */
  kiln_tensor *wrong = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, s34, &wrong));
  KEXPECT(kiln_gemm(ctx, KILN_NO_TRANS, KILN_TRANS, 1, a, b, 0, &wrong), KILN_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "output shape"));
  /* Dtypes. */
  KEXPECT(kiln_gemm(ctx, KILN_NO_TRANS, KILN_NO_TRANS, 1, i32, i32, 0, &out), KILN_ERR_DTYPE);
  KEXPECT(kiln_gemm(ctx, KILN_NO_TRANS, KILN_TRANS, 1, a, i32, 0, &out), KILN_ERR_DTYPE);
  /* Flags, handles, NULL out. */
  KEXPECT(kiln_gemm(ctx, (kiln_trans)5, KILN_NO_TRANS, 1, a, b, 0, &out),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_gemm(ctx, KILN_NO_TRANS, KILN_TRANS, 1, a, b, 0, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_gemm(ctx, KILN_NO_TRANS, KILN_TRANS, 1, NULL, b, 0, &out), KILN_ERR_INVALID_HANDLE);
  /* The output may not be an input. */
  kiln_tensor *sq = NULL;
  int64_t s33[2] = {3, 3};
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, s33, &sq));
  kiln_tensor *alias = sq;
  KEXPECT(kiln_gemm(ctx, KILN_NO_TRANS, KILN_NO_TRANS, 1, sq, sq, 0, &alias),
          KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_eq(alias, sq);
  /* matmul: 0-d input, mismatched vectors. */
  kiln_tensor *scalar = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 0, NULL, &scalar));
  KEXPECT(kiln_matmul(ctx, scalar, a, &out), KILN_ERR_SHAPE);
  KEXPECT(kiln_matmul(ctx, a, b, &out), KILN_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "kiln_matmul"));
  KEXPECT(kiln_matmul(ctx, v, b, &out), KILN_ERR_SHAPE); /* [4] @ [5,4] */
  ck_assert_ptr_null(out);
  kiln_tensor *bad[] = {a, b, v, b2, b3, i32, a2, wrong, sq, scalar};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    kiln_tensor_release(bad[i]);
}
END_TEST

/* matmul: NumPy's 1-D rules and batch broadcasting, checked through the same reference. */
START_TEST(matmul_numpy_rules)
{
  kiln_context *ctx = harness_ctx();
  struct mm {
    size_t nda, ndb;
    int64_t as[4], bs[4];
    size_t ndr;
    int64_t rs[4];
  } cases[] = {
      {1, 1, {7}, {7}, 0, {0}},
      {1, 2, {5}, {5, 3}, 1, {3}},
      {2, 1, {4, 5}, {5}, 1, {4}},
      {1, 3, {5}, {2, 5, 3}, 2, {2, 3}},
      {3, 1, {2, 4, 5}, {5}, 2, {2, 4}},
      {4, 2, {2, 1, 3, 5}, {5, 2}, 4, {2, 1, 3, 2}},
      {3, 4, {3, 2, 5}, {4, 1, 5, 2}, 4, {4, 3, 2, 2}},
  };
  for (size_t d = 0; d < 2; d++) {
    kiln_dtype dt = float_dtypes[d];
    if (skip_dtype(dt))
      continue;
    for (int r = 0; r < NROUTES; r++) {
      set_route(ctx, (enum route)r);
      for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct mm *c = &cases[i];
        int64_t na = numel(c->nda, c->as), nb = numel(c->ndb, c->bs);
        double *a = malloc((size_t)na * sizeof *a), *b = malloc((size_t)nb * sizeof *b);
        fill_random(a, (size_t)na, 11);
        fill_random(b, (size_t)nb, 12);
        kiln_tensor *ta = upload(dt, c->nda, c->as, a), *tb = upload(dt, c->ndb, c->bs, b);
        kiln_tensor *out = NULL;
        KOK(kiln_matmul(ctx, ta, tb, &out));
        ck_assert_uint_eq(kiln_tensor_ndim(out), c->ndr);
        for (size_t k = 0; k < c->ndr; k++)
          ck_assert_int_eq(kiln_tensor_dim(out, k), c->rs[k]);
        /* The same product through kiln_gemm on explicit [.., 1, k] / [.., k, 1] views. */
        int64_t as2[5], bs2[5];
        size_t nda2 = c->nda, ndb2 = c->ndb;
        memcpy(as2, c->as, sizeof c->as);
        memcpy(bs2, c->bs, sizeof c->bs);
        if (c->nda == 1) {
          as2[1] = as2[0];
          as2[0] = 1;
          nda2 = 2;
        }
        if (c->ndb == 1) {
          bs2[1] = 1;
          ndb2 = 2;
        }
        struct gemm_case gc = {nda2, ndb2, {0}, {0}, 0, 0, 1.0, 0.0, 0};
        memcpy(gc.as, as2, sizeof gc.as);
        memcpy(gc.bs, bs2, sizeof gc.bs);
        run_gemm_case(dt, (enum route)r, &gc);
        /* And against a host product directly. */
        double *got = download(out);
        int64_t nr = numel(c->ndr, c->rs);
        int64_t m = nda2 >= 2 ? as2[nda2 - 2] : 1, k = as2[nda2 - 1], n = bs2[ndb2 - 1];
        int64_t batch = nr / (m * n);
        double *want = malloc((size_t)nr * sizeof *want), *mag = malloc((size_t)nr * sizeof *mag);
        for (int64_t bi = 0; bi < batch; bi++) {
          /* Right-aligned broadcast of the batch dims (at most 2 here). */
          int64_t ab = na / (m * k), bb = nb / (k * n);
          int64_t ai = 0, bj = 0;
          if (c->nda == 4 && c->ndb == 2)
            ai = bi;
          else if (c->nda == 3 && c->ndb == 4)
            ai = bi % 3, bj = bi / 3;
          else {
            ai = ab > 1 ? bi : 0;
            bj = bb > 1 ? bi : 0;
          }
          ref_gemm(0, 0, m, n, k, 1.0, a + ai * m * k, b + bj * k * n, 0.0, want + bi * m * n,
                   mag + bi * m * n);
        }
        expect_close("matmul", got, want, mag, (size_t)nr, dt, 4.0 * (double)(k + 2));
        free(got);
        free(want);
        free(mag);
        free(a);
        free(b);
        kiln_tensor_release(ta);
        kiln_tensor_release(tb);
        kiln_tensor_release(out);
      }
    }
  }
}
END_TEST

START_TEST(gemv_both_transposes)
{
  kiln_context *ctx = harness_ctx();
  static const int64_t dims[][2] = {{1, 1}, {3, 17}, {17, 3}, {1000, 17}};
  for (size_t d = 0; d < 2; d++) {
    kiln_dtype dt = float_dtypes[d];
    if (skip_dtype(dt))
      continue;
    for (int r = 0; r < NROUTES; r++) {
      set_route(ctx, (enum route)r);
      for (int t = 0; t < 2; t++)
        for (size_t s = 0; s < sizeof dims / sizeof dims[0]; s++)
          for (int give = 0; give < 2; give++) {
            if (harness_small() && s == 3)
              continue; /* the simulator's time: 17 already crosses gemm_small's 16-wide tiles */
            int64_t rows = dims[s][0], cols = dims[s][1];
            int64_t xl = t ? rows : cols, yl = t ? cols : rows;
            double alpha = give ? -0.5 : 1.0, beta = give ? (s % 2 ? 0.0 : 2.0) : 0.0;
            double *a = malloc((size_t)(rows * cols) * sizeof *a), *x = malloc((size_t)xl * 8);
            double *y = malloc((size_t)yl * 8), *mag = malloc((size_t)yl * 8);
            fill_random(a, (size_t)(rows * cols), 21);
            fill_random(x, (size_t)xl, 22);
            fill_random(y, (size_t)yl, 23);
            if (give && beta == 0)
              for (int64_t i = 0; i < yl; i++)
                y[i] = NAN;
            int64_t as[2] = {rows, cols};
            kiln_tensor *ta = upload(dt, 2, as, a), *tx = upload(dt, 1, &xl, x);
            kiln_tensor *ty = give ? upload(dt, 1, &yl, y) : NULL;
            KOK(kiln_gemv(ctx, t ? KILN_TRANS : KILN_NO_TRANS, alpha, ta, tx, beta, &ty));
            ck_assert_int_eq(kiln_tensor_dim(ty, 0), yl);
            double *got = download(ty);
            /* op(A) x as a GEMM with n = 1: op(A) is yl x xl. */
            ref_gemm(t, 0, yl, 1, xl, alpha, a, x, give ? beta : 0.0, y, mag);
            char what[96];
            snprintf(what, sizeof what, "gemv %s %s t=%d %lldx%lld", kiln_dtype_name(dt),
                     route_name[r], t, (long long)rows, (long long)cols);
            expect_close(what, got, y, mag, (size_t)yl, dt, 4.0 * (double)(xl + 2));
            free(got);
            free(a);
            free(x);
            free(y);
            free(mag);
            kiln_tensor_release(ta);
            kiln_tensor_release(tx);
            kiln_tensor_release(ty);
          }
    }
  }
  /* Bad shapes. */
  int64_t s34[2] = {3, 4}, s3[1] = {3};
  kiln_tensor *a = NULL, *x = NULL, *out = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, s34, &a));
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 1, s3, &x));
  KEXPECT(kiln_gemv(ctx, KILN_NO_TRANS, 1, a, x, 0, &out), KILN_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "kiln_gemv"));
  KOK(kiln_gemv(ctx, KILN_TRANS, 1, a, x, 0, &out));
  KEXPECT(kiln_gemv(ctx, KILN_NO_TRANS, 1, x, x, 0, &out), KILN_ERR_SHAPE);
  kiln_tensor *wrong = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 1, s3, &wrong));
  KEXPECT(kiln_gemv(ctx, KILN_TRANS, 1, a, x, 0, &wrong), KILN_ERR_SHAPE);
  kiln_tensor_release(a);
  kiln_tensor_release(x);
  kiln_tensor_release(out);
  kiln_tensor_release(wrong);
}
END_TEST

/* SYRK: both triangles, both transposes, fill or not, batches, beta edge values, both routes. */
START_TEST(syrk_triangles)
{
  kiln_context *ctx = harness_ctx();
  static const int64_t dims[][3] = {{1, 1, 1}, {3, 17, 1}, {17, 3, 2}, {17, 17, 1}};
  for (size_t d = 0; d < 2; d++) {
    kiln_dtype dt = float_dtypes[d];
    if (skip_dtype(dt))
      continue;
    for (int r = 0; r < NROUTES; r++) {
      set_route(ctx, (enum route)r);
      for (int v = 0; v < 16; v++) {
        int upper = v & 1, t = (v >> 1) & 1, fill = (v >> 2) & 1, give = (v >> 3) & 1;
        const int64_t *dm = dims[(size_t)v % 4];
        int64_t n = dm[0], k = dm[1], batch = dm[2];
        double alpha = give ? 1.5 : 1.0, beta = give ? (v % 3 ? -1.0 : 0.0) : 0.0;
        int64_t as[3] = {batch, t ? k : n, t ? n : k}, cs[3] = {batch, n, n};
        int64_t na = batch * n * k, nc = batch * n * n;
        double *a = malloc((size_t)na * 8), *c = malloc((size_t)nc * 8),
               *c0 = malloc((size_t)nc * 8);
        double *mag = malloc((size_t)nc * 8);
        fill_random(a, (size_t)na, 31);
        fill_random(c, (size_t)nc, 32);
        for (int64_t i = 0; i < nc; i++)
          if (give && beta == 0)
            c[i] = NAN;
        memcpy(c0, c, (size_t)nc * 8);
        kiln_tensor *ta = upload(dt, 3, as, a);
        kiln_tensor *tc = give ? upload(dt, 3, cs, c) : NULL;
        memcpy(c0, c, (size_t)nc * 8); /* rounded copy */
        KOK(kiln_syrk(ctx, upper ? KILN_UPPER : KILN_LOWER, t ? KILN_TRANS : KILN_NO_TRANS, alpha,
                      ta, beta, &tc, fill));
        double *got = download(tc);
        for (int64_t b = 0; b < batch; b++) {
          double *cb = c + b * n * n, *mb = mag + b * n * n;
          ref_gemm(t, !t, n, n, k, alpha, a + b * n * k, a + b * n * k, give ? beta : 0.0, cb, mb);
          for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
              int inside = upper ? j >= i : j <= i;
              if (inside)
                continue;
              if (fill) {
                cb[i * n + j] = cb[j * n + i];
                mb[i * n + j] = mb[j * n + i];
              } else {
                /* Untouched: a given C keeps its value, a fresh one is zero. */
                cb[i * n + j] = give ? c0[b * n * n + i * n + j] : 0.0;
                mb[i * n + j] = 0;
              }
            }
        }
        char what[128];
        snprintf(what, sizeof what, "syrk %s %s upper=%d t=%d fill=%d give=%d n=%lld k=%lld",
                 kiln_dtype_name(dt), route_name[r], upper, t, fill, give, (long long)n,
                 (long long)k);
        for (int64_t i = 0; i < nc; i++) {
          if (isnan(c[i])) {
            ck_assert_msg(isnan(got[i]), "%s: element %lld should be kept NaN", what, (long long)i);
            got[i] = c[i] = 0;
          }
        }
        expect_close(what, got, c, mag, (size_t)nc, dt, 4.0 * (double)(k + 2));
        free(got);
        free(a);
        free(c);
        free(c0);
        free(mag);
        kiln_tensor_release(ta);
        kiln_tensor_release(tc);
      }
    }
  }
  int64_t s34[2] = {3, 4}, s4[1] = {4};
  kiln_tensor *a = NULL, *v = NULL, *out = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, s34, &a));
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 1, s4, &v));
  KEXPECT(kiln_syrk(ctx, KILN_UPPER, KILN_NO_TRANS, 1, v, 0, &out, 0), KILN_ERR_SHAPE);
  kiln_tensor *wrong = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, s34, &wrong));
  KEXPECT(kiln_syrk(ctx, KILN_UPPER, KILN_NO_TRANS, 1, a, 0, &wrong, 0), KILN_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "kiln_syrk"));
  KEXPECT(kiln_syrk(ctx, (kiln_uplo)9, KILN_NO_TRANS, 1, a, 0, &out, 0), KILN_ERR_INVALID_ARGUMENT);
  kiln_tensor_release(a);
  kiln_tensor_release(v);
  kiln_tensor_release(wrong);
}
END_TEST

/* Small C, long k: the CLBlast route sums k-chunks (blas.c, syrk_split_k); chunk counts that
 * divide k and ones that leave a remainder, both transposes. */
START_TEST(syrk_split_k)
{
  /* The split is on the CLBlast route only, which the simulator runs without (oclgrind suite);
   * kiln's kernel takes the shortest long k (n 3, k 2048) only: 40 x 40 x 70001 on it, and
   * its host reference, were most of this test's time. */
  if (harness_small())
    return;
  kiln_context *ctx = harness_ctx();
  /* k 70001 reaches the 64-chunk cap at any n <= 256; n 5, not 40: CLBlast's batched GEMM took
   * 50 s of PoCL time there. */
  static const int64_t dims[][2] = {{7, 3001}, {5, 70001}, {3, 2048}};
  for (size_t d = 0; d < 2; d++) {
    kiln_dtype dt = float_dtypes[d];
    if (skip_dtype(dt))
      continue;
    for (int r = 0; r < NROUTES; r++) {
      set_route(ctx, (enum route)r);
      for (size_t v = r == ROUTE_KILN ? 4 : 0; v < 6; v++) {
        int t = (int)(v & 1);
        int64_t n = dims[v / 2][0], k = dims[v / 2][1];
        int64_t as[2] = {t ? k : n, t ? n : k}, na = n * k, nc = n * n;
        double *a = malloc((size_t)na * 8), *c = calloc((size_t)nc, 8),
               *mag = malloc((size_t)nc * 8);
        fill_random(a, (size_t)na, 41 + (unsigned)v);
        kiln_tensor *ta = upload(dt, 2, as, a), *tc = NULL;
        KOK(kiln_syrk(ctx, KILN_LOWER, t ? KILN_TRANS : KILN_NO_TRANS, 0.5, ta, 0.0, &tc, 1));
        double *got = download(tc);
        ref_gemm(t, !t, n, n, k, 0.5, a, a, 0.0, c, mag);
        char what[128];
        snprintf(what, sizeof what, "syrk split-k %s %s t=%d n=%lld k=%lld", kiln_dtype_name(dt),
                 route_name[r], t, (long long)n, (long long)k);
        expect_close(what, got, c, mag, (size_t)nc, dt, 4.0 * (double)(k + 2));
        free(got);
        free(a);
        free(c);
        free(mag);
        kiln_tensor_release(ta);
        kiln_tensor_release(tc);
      }
    }
  }
}
END_TEST

/* dot, axpy and scal on ctx: lengths 0, 1, 17, 1000. */
static void
check_level1(kiln_context *ctx, const char *label)
{
  static const int64_t lens[] = {0, 1, 17, 1000};
  for (size_t d = 0; d < 2; d++) {
    kiln_dtype dt = float_dtypes[d];
    if (skip_dtype(dt))
      continue;
    for (size_t l = 0; l < 4; l++) {
      int64_t n = lens[l];
      size_t sz = (size_t)(n ? n : 1) * 8;
      double *x = malloc(sz), *y = malloc(sz);
      fill_random(x, (size_t)n, 41);
      fill_random(y, (size_t)n, 42);
      float *fx = malloc(sz), *fy = malloc(sz);
      kiln_tensor *tx = NULL, *ty = NULL, *dot = NULL;
      if (dt == KILN_F32) {
        for (int64_t i = 0; i < n; i++) {
          fx[i] = (float)x[i], fy[i] = (float)y[i];
          x[i] = fx[i], y[i] = fy[i];
        }
        KOK(kiln_tensor_from_host(ctx, dt, 1, &n, fx, &tx));
        KOK(kiln_tensor_from_host(ctx, dt, 1, &n, fy, &ty));
      } else {
        KOK(kiln_tensor_from_host(ctx, dt, 1, &n, x, &tx));
        KOK(kiln_tensor_from_host(ctx, dt, 1, &n, y, &ty));
      }
      KOK(kiln_dot(ctx, tx, ty, &dot));
      ck_assert_uint_eq(kiln_tensor_ndim(dot), 0);
      double want = 0, mag = 0, got;
      for (int64_t i = 0; i < n; i++)
        want += x[i] * y[i], mag += fabs(x[i] * y[i]);
      if (dt == KILN_F32) {
        float g;
        KOK(kiln_tensor_download(dot, &g, sizeof g));
        got = g;
      } else {
        KOK(kiln_tensor_download(dot, &got, sizeof got));
      }
      char what[96];
      snprintf(what, sizeof what, "%s dot %s n=%lld", label, kiln_dtype_name(dt), (long long)n);
      expect_close(what, &got, &want, &mag, 1, dt, 4.0 * (double)(n + 2));
      /* y += -2 x, then y *= 0.5 */
      KOK(kiln_axpy(ctx, -2.0, tx, ty));
      KOK(kiln_scal(ctx, 0.5, ty));
      for (int64_t i = 0; i < n; i++)
        y[i] = (y[i] - 2.0 * x[i]) * 0.5;
      kiln_tensor *copy = ty;
      double *gy = n ? download(copy) : NULL;
      double *m2 = malloc(sz);
      for (int64_t i = 0; i < n; i++)
        m2[i] = fabs(y[i]) + fabs(x[i]) + 1;
      snprintf(what, sizeof what, "%s axpy+scal %s n=%lld", label, kiln_dtype_name(dt),
               (long long)n);
      if (n)
        expect_close(what, gy, y, m2, (size_t)n, dt, 8.0);
      free(gy);
      free(m2);
      free(x);
      free(y);
      free(fx);
      free(fy);
      kiln_tensor_release(tx);
      kiln_tensor_release(ty);
      kiln_tensor_release(dot);
    }
  }
  /* scal by 0 keeps NaN (BLAS multiplies). */
  float nanv[2] = {NAN, 1.0f};
  int64_t two = 2;
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 1, &two, nanv, &t));
  KOK(kiln_scal(ctx, 0.0, t));
  KOK(kiln_tensor_download(t, nanv, sizeof nanv));
  ck_assert(isnan(nanv[0]));
  ck_assert_float_eq(nanv[1], 0.0f);
  kiln_tensor_release(t);
}

START_TEST(level1_dot_axpy_scal)
{
  check_level1(harness_ctx(), "clblast");
  kiln_context *ctx = harness_ctx();
  int64_t s3[1] = {3}, s4[1] = {4}, s22[2] = {2, 2};
  kiln_tensor *a = NULL, *b = NULL, *m = NULL, *out = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 1, s3, &a));
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 1, s4, &b));
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, s22, &m));
  KEXPECT(kiln_dot(ctx, a, b, &out), KILN_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "kiln_dot"));
  KEXPECT(kiln_dot(ctx, m, m, &out), KILN_ERR_SHAPE);
  KEXPECT(kiln_axpy(ctx, 1.0, a, b), KILN_ERR_SHAPE);
  kiln_tensor *i32 = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_I32, 1, s3, &i32));
  KEXPECT(kiln_scal(ctx, 2.0, i32), KILN_ERR_DTYPE);
  KEXPECT(kiln_axpy(ctx, 2.0, a, i32), KILN_ERR_DTYPE);
  kiln_tensor_release(a);
  kiln_tensor_release(b);
  kiln_tensor_release(m);
  kiln_tensor_release(i32);
}
END_TEST

/* ---- f16, bf16, c64, c128 ---- */

static int
is_cplx(kiln_dtype dt)
{
  return dt == KILN_C64 || dt == KILN_C128;
}

/* Doubles per element: 2 for complex (re, im interleaved). */
static size_t
parts(kiln_dtype dt)
{
  return is_cplx(dt) ? 2 : 1;
}

/*
 * Uploads n elements of v (parts(dt) doubles each) as dt, rounding v in place to what the
 * device holds.
 */
static kiln_tensor *
upload_any(kiln_dtype dt, size_t ndim, const int64_t *shape, double *v)
{
  size_t n = (size_t)numel(ndim, shape) * parts(dt);
  kiln_tensor *t = NULL;
  if (dt == KILN_F64 || dt == KILN_C128) {
    KOK(kiln_tensor_from_host(harness_ctx(), dt, ndim, shape, v, &t));
  } else if (dt == KILN_F32 || dt == KILN_C64) {
    float *f = malloc((n ? n : 1) * sizeof *f);
    for (size_t i = 0; i < n; i++)
      v[i] = f[i] = (float)v[i];
    KOK(kiln_tensor_from_host(harness_ctx(), dt, ndim, shape, f, &t));
    free(f);
  } else {
    uint16_t *h = malloc((n ? n : 1) * sizeof *h);
    for (size_t i = 0; i < n; i++) {
      h[i] = dt == KILN_F16 ? kiln_f16_from_f64(v[i]) : kiln_bf16_from_f64(v[i]);
      v[i] = dt == KILN_F16 ? kiln_f16_to_f32(h[i]) : kiln_bf16_to_f32(h[i]);
    }
    KOK(kiln_tensor_from_host(harness_ctx(), dt, ndim, shape, h, &t));
    free(h);
  }
  return t;
}

static double *
download_any(const kiln_tensor *t)
{
  kiln_dtype dt = kiln_tensor_dtype(t);
  size_t n = (size_t)kiln_tensor_numel(t) * parts(dt);
  double *v = malloc((n ? n : 1) * sizeof *v);
  if (dt == KILN_F64 || dt == KILN_C128) {
    KOK(kiln_tensor_download(t, v, n * sizeof *v));
  } else if (dt == KILN_F32 || dt == KILN_C64) {
    float *f = malloc((n ? n : 1) * sizeof *f);
    KOK(kiln_tensor_download(t, f, n * sizeof *f));
    for (size_t i = 0; i < n; i++)
      v[i] = f[i];
    free(f);
  } else {
    uint16_t *h = malloc((n ? n : 1) * sizeof *h);
    KOK(kiln_tensor_download(t, h, n * sizeof *h));
    for (size_t i = 0; i < n; i++)
      v[i] = dt == KILN_F16 ? kiln_f16_to_f32(h[i]) : kiln_bf16_to_f32(h[i]);
    free(h);
  }
  return v;
}

/* The spacing of dt's values at |x| (f16 and bf16: subnormals down to their smallest). */
static double
ulp_at(kiln_dtype dt, double x)
{
  int e;
  frexp(fabs(x), &e); /* |x| in [2^(e-1), 2^e) */
  if (dt == KILN_F16)
    return ldexp(1.0, (e - 1 < -14 ? -14 : e - 1) - 10);
  if (dt == KILN_BF16)
    return ldexp(1.0, (e - 1 < -126 ? -126 : e - 1) - 7);
  return 0;
}

/*
 * Host GEMM in double on one matrix with complex support: op codes 0 (as
 * stored), 1 (transposed), 2 (conjugate-transposed); values hold parts(dt)
 * doubles per element. mag[i] bounds the rounding error's scale:
 * |alpha| sum |a||b| + |beta||c|.
 */
static void
ref_zgemm(int cplx, int ta, int tb, int64_t m, int64_t n, int64_t k, const double alpha[2],
          const double *a, const double *b, const double beta[2], double *c, double *mag)
{
  int w = cplx ? 2 : 1;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double sr = 0, si = 0, am = 0;
      for (int64_t p = 0; p < k; p++) {
        const double *x = a + w * (ta ? p * m + i : i * k + p);
        const double *y = b + w * (tb ? j * k + p : p * n + j);
        double xr = x[0], xi = cplx ? x[1] : 0, yr = y[0], yi = cplx ? y[1] : 0;
        if (ta == 2)
          xi = -xi;
        if (tb == 2)
          yi = -yi;
        sr += xr * yr - xi * yi;
        si += xr * yi + xi * yr;
        am += hypot(xr, xi) * hypot(yr, yi);
      }
      double *cc = c + w * (i * n + j);
      int zero_beta = beta[0] == 0 && beta[1] == 0;
      double cr = zero_beta ? 0 : cc[0], ci = zero_beta || !cplx ? 0 : cc[1];
      double rr = alpha[0] * sr - alpha[1] * si, ri = alpha[0] * si + alpha[1] * sr;
      if (!zero_beta) {
        rr += beta[0] * cr - beta[1] * ci;
        ri += beta[0] * ci + beta[1] * cr;
      }
      cc[0] = rr;
      if (cplx)
        cc[1] = ri;
      mag[i * n + j] = hypot(alpha[0], alpha[1]) * am + hypot(beta[0], beta[1]) * hypot(cr, ci);
    }
}

/*
 * One 2-D GEMM of in-dtype dt into out-dtype odt (a given C when give_c)
 * against ref_zgemm. Error bound: (k + 2) * 4 * eps(compute) * mag, plus one
 * ulp of a 16-bit output.
 */
/* When >= 0, run_any_gemm profiles the call and expects this many kernels (CLBlast calls count
 * as one): 2 for a complex GEMM realified into cgemm_b2 + one real GEMM, 1 for CGEMM/ZGEMM. */
static int want_kernels = -1;

static void
run_any_gemm(kiln_dtype dt, kiln_dtype odt, int ta, int tb, int64_t m, int64_t n, int64_t k,
             const double alpha[2], const double beta[2], int give_c)
{
  kiln_context *ctx = harness_ctx();
  int cplx = is_cplx(dt);
  size_t w = parts(dt);
  int64_t as[2] = {ta ? k : m, ta ? m : k}, bs[2] = {tb ? n : k, tb ? k : n}, cs[2] = {m, n};
  size_t na = (size_t)(m * k) * w, nb = (size_t)(k * n) * w, nc = (size_t)(m * n) * w;
  double *a = malloc((na + 1) * sizeof *a), *b = malloc((nb + 1) * sizeof *b);
  double *c = malloc((nc + 1) * sizeof *c), *mag = malloc((size_t)(m * n + 1) * sizeof *mag);
  fill_random(a, na, 11);
  fill_random(b, nb, 12);
  fill_random(c, nc, 13);
  if (beta[0] == 0 && beta[1] == 0)
    for (size_t i = 0; i < nc; i++)
      c[i] = NAN;
  kiln_tensor *at = upload_any(dt, 2, as, a), *bt = upload_any(dt, 2, bs, b);
  kiln_tensor *ct = give_c ? upload_any(odt, 2, cs, c) : NULL;
  static const kiln_trans flag[3] = {KILN_NO_TRANS, KILN_TRANS, KILN_CONJ_TRANS};
  if (want_kernels >= 0)
    KOK(kiln_profile_begin(ctx));
  if (cplx) {
    KOK(kiln_gemm_complex(ctx, flag[ta], flag[tb], (kiln_complex128){alpha[0], alpha[1]}, at, bt,
                          (kiln_complex128){beta[0], beta[1]}, &ct));
  } else {
    KOK(kiln_gemm(ctx, flag[ta], flag[tb], alpha[0], at, bt, beta[0], &ct));
  }
  if (want_kernels >= 0) {
    kiln_profile p;
    KOK(kiln_profile_end(ctx, &p));
    ck_assert_msg(p.kernels == (uint64_t)want_kernels, "gemm %s ta=%d tb=%d: %llu kernels, want %d",
                  kiln_dtype_name(dt), ta, tb, (unsigned long long)p.kernels, want_kernels);
  }
  ck_assert_int_eq(kiln_tensor_dtype(ct), odt);
  ck_assert_int_eq(kiln_tensor_dim(ct, 0), m);
  ck_assert_int_eq(kiln_tensor_dim(ct, 1), n);
  double *got = download_any(ct);
  double nobeta[2] = {0, 0};
  /* Real dtypes read conjugate-transpose as transpose. */
  ref_zgemm(cplx, cplx ? ta : ta != 0, cplx ? tb : tb != 0, m, n, k, alpha, a, b,
            give_c ? beta : nobeta, c, mag);
  double eps = dt == KILN_F64 || dt == KILN_C128 ? 2.3e-16 : 1.2e-7;
  for (int64_t i = 0; i < m * n; i++) {
    double bound = 4.0 * (double)(k + 2) * eps * mag[i] + 1e-300;
    for (size_t q = 0; q < w; q++) {
      double want = c[(size_t)i * w + q], g = got[(size_t)i * w + q];
      double bq = bound + ulp_at(odt, want);
      ck_assert_msg(!isnan(g) && fabs(g - want) <= bq,
                    "gemm %s->%s ta=%d tb=%d m=%lld n=%lld k=%lld: element %lld.%zu is %.9g, want "
                    "%.9g (bound %g)",
                    kiln_dtype_name(dt), kiln_dtype_name(odt), ta, tb, (long long)m, (long long)n,
                    (long long)k, (long long)i, q, g, want, bq);
    }
  }
  free(got);
  free(a);
  free(b);
  free(c);
  free(mag);
  kiln_tensor_release(at);
  kiln_tensor_release(bt);
  kiln_tensor_release(ct);
}

/*
 * f16/bf16 in, f32 sums, f16/bf16 or f32 out: every transpose on gemm_small
 * (small) and gemm_tiled (m*n*k above 32^3, edges off the 128 block and
 * the 16-deep k step), sizes 0, 1 and primes.
 */
START_TEST(gemm_half_dtypes)
{
  /* 33x35x29 is the gemm_tiled case small enough for the oclgrind suite (harness_fits). */
  static const int64_t dims[][3] = {{1, 1, 1},     {3, 17, 5},    {0, 3, 4},
                                    {4, 0, 3},     {5, 3, 0},     {33, 35, 29},
                                    {131, 67, 61}, {150, 150, 3}, {67, 257, 129}};
  static const double one[2] = {1, 0}, ab[2] = {-0.5, 0}, b2[2] = {2, 0}, zero[2] = {0, 0};
  static const kiln_dtype halves[] = {KILN_F16, KILN_BF16};
  for (size_t h = 0; h < 2; h++)
    for (size_t s = 0; s < sizeof dims / sizeof dims[0]; s++)
      for (int t = 0; t < 4; t++) {
        int64_t m = dims[s][0], n = dims[s][1], k = dims[s][2];
        if ((s == 8 && t != 0) ||
            !harness_fits((uint64_t)(m > n ? m : n) * (uint64_t)(k > 1 ? k : 1)))
          continue; /* one large case: PoCL time */
        if (harness_small() && (t == 1 || t == 2 || (h == 1 && t == 3)))
          continue; /* the simulator's time: t 0 and 3 load both operands both ways (f16) */
        kiln_dtype odt = (t + (int)s) % 3 == 0 ? KILN_F32 : halves[h];
        const double *al = t == 1 ? ab : one, *be = t == 2 ? b2 : zero;
        /* t == 3 uses the conjugate flag (the transpose for reals). */
        run_any_gemm(halves[h], odt, t & 1 ? 1 : 0, t == 3 ? 2 : t >> 1, m, n, k, al, be,
                     odt == KILN_F32 || t == 2);
      }
  /* matmul of f16 with an f32 output and with an allocated one. */
  kiln_context *ctx = harness_ctx();
  int64_t as[3] = {2, 3, 5}, bs[2] = {5, 4}, cs[3] = {2, 3, 4};
  double a[30], b[20];
  fill_random(a, 30, 5);
  fill_random(b, 20, 6);
  kiln_tensor *at = upload_any(KILN_F16, 3, as, a), *bt = upload_any(KILN_F16, 2, bs, b);
  kiln_tensor *c32 = NULL, *c16 = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 3, cs, &c32));
  KOK(kiln_matmul(ctx, at, bt, &c32));
  KOK(kiln_matmul(ctx, at, bt, &c16));
  ck_assert_int_eq(kiln_tensor_dtype(c16), KILN_F16);
  double *g32 = download_any(c32), *g16 = download_any(c16);
  for (int bi = 0; bi < 2; bi++)
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 4; j++) {
        double want = 0, mag = 0;
        for (int p = 0; p < 5; p++) {
          want += a[bi * 15 + i * 5 + p] * b[p * 4 + j];
          mag += fabs(a[bi * 15 + i * 5 + p] * b[p * 4 + j]);
        }
        size_t o = (size_t)(bi * 12 + i * 4 + j);
        ck_assert_double_le(fabs(g32[o] - want), 28 * 1.2e-7 * mag + 1e-300);
        ck_assert_double_le(fabs(g16[o] - want), 28 * 1.2e-7 * mag + ulp_at(KILN_F16, want));
      }
  free(g32);
  free(g16);
  /* An f16 product into a bf16 or i32 output: refused. */
  kiln_tensor *wrong = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_BF16, 3, cs, &wrong));
  KEXPECT(kiln_matmul(ctx, at, bt, &wrong), KILN_ERR_DTYPE);
  kiln_tensor *b32 = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, bs, &b32));
  KEXPECT(kiln_matmul(ctx, at, b32, &c16), KILN_ERR_DTYPE);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "cast one with kiln_cast"));
  kiln_tensor *bad[] = {at, bt, c32, c16, wrong, b32};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    kiln_tensor_release(bad[i]);
}
END_TEST

/*
 * Batched c64 matmul on CLBlast: [2, m, k] x B with B [k, n] (one B2 for the batch) or
 * [2, k, n] (one per matrix), against ref_zgemm per matrix.
 */
static void
check_complex_matmul_batches(int64_t m, int64_t n, int64_t k)
{
  kiln_context *ctx = harness_ctx();
  static const double one[2] = {1, 0}, zero[2] = {0, 0};
  for (int bcast = 0; bcast < 2; bcast++) {
    int64_t as[3] = {2, m, k}, bs[3] = {2, k, n};
    size_t na = (size_t)(2 * m * k) * 2, nb = (size_t)(2 * k * n) * 2, mn = (size_t)(m * n);
    double *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b);
    double *c = malloc(mn * 2 * sizeof *c), *mag = malloc(mn * sizeof *mag);
    fill_random(a, na, 21);
    fill_random(b, nb, 22);
    kiln_tensor *at = upload_any(KILN_C64, 3, as, a);
    kiln_tensor *bt = bcast ? upload_any(KILN_C64, 2, bs + 1, b) : upload_any(KILN_C64, 3, bs, b);
    kiln_tensor *ct = NULL;
    KOK(kiln_matmul(ctx, at, bt, &ct));
    double *got = download_any(ct);
    for (int64_t bi = 0; bi < 2; bi++) {
      ref_zgemm(1, 0, 0, m, n, k, one, a + bi * m * k * 2, b + (bcast ? 0 : bi * k * n * 2), zero,
                c, mag);
      for (size_t i = 0; i < mn * 2; i++) {
        double g = got[(size_t)bi * mn * 2 + i];
        ck_assert_msg(fabs(g - c[i]) <= 4.0 * (double)(k + 2) * 1.2e-7 * mag[i / 2],
                      "c64 matmul bcast=%d: matrix %lld element %zu is %.9g, want %.9g", bcast,
                      (long long)bi, i, g, c[i]);
      }
    }
    free(a);
    free(b);
    free(c);
    free(mag);
    free(got);
    kiln_tensor_release(at);
    kiln_tensor_release(bt);
    kiln_tensor_release(ct);
  }
}

/*
 * c64/c128 GEMM with complex scalars, all nine transpose/conjugate pairs, both routes; on
 * CLBlast, op(A) = A with a real beta runs as one real GEMM (cgemm_b2, docs/blas_fft.md),
 * the rest on CGEMM/ZGEMM: both checked by their kernel counts at a size off every tile.
 */
START_TEST(gemm_complex_dtypes)
{
  static const kiln_dtype cd[] = {KILN_C64, KILN_C128};
  static const int64_t dims[][3] = {{1, 1, 1}, {3, 17, 5}, {0, 2, 3}, {2, 3, 0}, {33, 20, 41}};
  static const double al[2] = {0.75, -0.5}, be[2] = {0.25, 1.5}, zero[2] = {0, 0};
  for (size_t d = 0; d < 2; d++) {
    if (cd[d] == KILN_C128 && (!harness_has_fp64() || harness_small()))
      continue;
    for (int r = 0; r < NROUTES; r++) {
      set_route(harness_ctx(), (enum route)r);
      for (size_t s = 0; s < sizeof dims / sizeof dims[0]; s++)
        for (int t = 0; t < 9; t++) {
          if (s != 1 && t % 4 != 0)
            continue; /* every pair on one odd shape; the others on N/N, T/C, C/... */
          run_any_gemm(cd[d], cd[d], t % 3, t / 3, dims[s][0], dims[s][1], dims[s][2], al,
                       t % 2 ? be : zero, (s + (size_t)t) % 2);
        }
    }
  }
  if (kiln_blas_has_clblast() && !harness_small()) {
    static const double bre[2] = {-0.5, 0};
    set_route(harness_ctx(), ROUTE_CLBLAST);
    for (size_t d = 0; d < 2; d++) {
      if (cd[d] == KILN_C128 && !harness_has_fp64())
        continue;
      want_kernels = 2;
      for (int tb = 0; tb < 3; tb++)
        for (int bz = 0; bz < 2; bz++)
          run_any_gemm(cd[d], cd[d], 0, tb, 67, 129, 45, al, bz ? zero : bre, !bz || tb == 1);
      want_kernels = 1;
      run_any_gemm(cd[d], cd[d], 1, 0, 67, 129, 45, al, bre, 1);
      run_any_gemm(cd[d], cd[d], 0, 2, 67, 129, 45, al, be, 1);
      want_kernels = -1;
    }
    check_complex_matmul_batches(67, 129, 45);
  }
  set_route(harness_ctx(), ROUTE_KILN);
  kiln_context *ctx = harness_ctx();
  kiln_tensor *c = NULL, *f = NULL, *out = NULL;
  int64_t s22[2] = {2, 2};
  KOK(kiln_tensor_zeros(ctx, KILN_C64, 2, s22, &c));
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, s22, &f));
  kiln_complex128 one = {1, 0};
  KEXPECT(kiln_gemm_complex(ctx, KILN_NO_TRANS, KILN_NO_TRANS, one, f, f, one, &out),
          KILN_ERR_DTYPE);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "kiln_gemm_complex"));
  KEXPECT(kiln_gemm_complex(ctx, KILN_NO_TRANS, KILN_NO_TRANS, one, c, f, one, &out),
          KILN_ERR_DTYPE);
  KEXPECT(kiln_gemm(ctx, KILN_NO_TRANS, (kiln_trans)3, 1, c, c, 0, &out),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_syrk(ctx, KILN_UPPER, KILN_CONJ_TRANS, 1, c, 0, &out, 0), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "Hermitian"));
  ck_assert_ptr_null(out);
  kiln_tensor_release(c);
  kiln_tensor_release(f);
}
END_TEST

/*
 * GEMV (conjugate transpose included), SYRK, dot, axpy and scal on c64 and
 * f16 (kiln's kernels; c64 GEMV/SYRK also through CLBlast).
 */
START_TEST(level2_level1_new_dtypes)
{
  kiln_context *ctx = harness_ctx();
  static const kiln_dtype dts[] = {KILN_C64, KILN_F16, KILN_BF16};
  for (size_t d = 0; d < (harness_small() ? 2u : 3u); d++) {
    kiln_dtype dt = dts[d];
    int cplx = is_cplx(dt);
    size_t w = parts(dt);
    for (int r = 0; r < (cplx ? NROUTES : 1); r++) {
      set_route(ctx, (enum route)r);
      const int64_t m = 37, n = 29;
      int64_t as[2] = {m, n};
      double a[2 * 37 * 29], x[2 * 37], c[2 * 29 * 29], mag[29 * 29];
      fill_random(a, (size_t)(m * n) * w, 21);
      fill_random(x, (size_t)m * w, 22);
      kiln_tensor *at = upload_any(dt, 2, as, a), *xt = upload_any(dt, 1, &as[0], x);
      /* y = op(A) x with op the conjugate transpose: [n], over m. */
      kiln_tensor *y = NULL;
      KOK(kiln_gemv(ctx, KILN_CONJ_TRANS, 1.0, at, xt, 0.0, &y));
      double *got = download_any(y);
      double one[2] = {1, 0}, z[2] = {0, 0};
      ref_zgemm(cplx, cplx ? 2 : 1, 0, n, 1, m, one, a, x, z, c, mag);
      double eps = 1.2e-7;
      for (int64_t i = 0; i < n * (int64_t)w; i++)
        ck_assert_msg(fabs(got[i] - c[i]) <=
                          4.0 * (m + 2) * eps * mag[i / (int64_t)w] + ulp_at(dt, c[i]),
                      "gemv %s conj-trans element %lld: %g, want %g", kiln_dtype_name(dt),
                      (long long)i, got[i], c[i]);
      free(got);
      /* SYRK, transposed: C = A^T A (n x n), upper triangle, mirrored. */
      kiln_tensor *ct = NULL;
      KOK(kiln_syrk(ctx, KILN_UPPER, KILN_TRANS, 1.0, at, 0.0, &ct, 1));
      got = download_any(ct);
      ref_zgemm(cplx, 1, 0, n, n, m, one, a, a, z, c, mag);
      for (int64_t i = 0; i < n * n * (int64_t)w; i++)
        ck_assert_msg(
            fabs(got[i] - c[i]) <= 4.0 * (m + 2) * eps * mag[i / (int64_t)w] + ulp_at(dt, c[i]),
            "syrk %s element %lld: %g, want %g", kiln_dtype_name(dt), (long long)i, got[i], c[i]);
      free(got);
      kiln_tensor_release(ct);
      kiln_tensor_release(y);
      kiln_tensor_release(at);
      /* dot (unconjugated), axpy, scal over 0, 1 and 37 elements. */
      static const int64_t lens[] = {0, 1, 37};
      for (size_t li = 0; li < 3; li++) {
        int64_t len = lens[li];
        double u[2 * 37], v[2 * 37];
        fill_random(u, (size_t)len * w, 31);
        fill_random(v, (size_t)len * w, 32);
        kiln_tensor *ut = upload_any(dt, 1, &len, u), *vt = upload_any(dt, 1, &len, v);
        kiln_tensor *dot = NULL;
        KOK(kiln_dot(ctx, ut, vt, &dot));
        ck_assert_int_eq(kiln_tensor_dtype(dot), dt);
        double *dg = download_any(dot), dr[2], dm;
        ref_zgemm(cplx, 0, 0, 1, 1, len, one, u, v, z, dr, &dm);
        for (size_t q = 0; q < w; q++)
          ck_assert_msg(fabs(dg[q] - dr[q]) <= 4.0 * (len + 2) * eps * dm + ulp_at(dt, dr[q]),
                        "dot %s len %lld part %zu: %g, want %g", kiln_dtype_name(dt),
                        (long long)len, q, dg[q], dr[q]);
        free(dg);
        KOK(kiln_axpy(ctx, -0.5, ut, vt));
        KOK(kiln_scal(ctx, 3.0, vt));
        double *vg = download_any(vt);
        for (size_t i = 0; i < (size_t)len * w; i++) {
          double want = 3.0 * (v[i] - 0.5 * u[i]);
          /* Two roundings to the storage type (after axpy, after scal). */
          ck_assert_msg(
              fabs(vg[i] - want) <= 4e-7 * 3 * (fabs(v[i]) + fabs(u[i])) + 4 * ulp_at(dt, want),
              "axpy/scal %s element %zu: %g, want %g", kiln_dtype_name(dt), i, vg[i], want);
        }
        free(vg);
        kiln_tensor_release(ut);
        kiln_tensor_release(vt);
        kiln_tensor_release(dot);
      }
      kiln_tensor_release(xt);
    }
  }
  set_route(ctx, ROUTE_KILN);
}
END_TEST

/* The same routines in a context that behaves like a build without CLBlast. */
START_TEST(without_clblast)
{
  setenv("KILN_DEBUG_NO_CLBLAST", "1", 1);
  kiln_context *ctx = NULL;
  KOK(kiln_context_create(NULL, &ctx));
  unsetenv("KILN_DEBUG_NO_CLBLAST");
  check_level1(ctx, "no-clblast");
  /* A GEMM larger than the small threshold still runs (on kiln's kernel). */
  int64_t s[2] = {70, 70};
  double *a = malloc(70 * 70 * 8), *c = malloc(70 * 70 * 8), *mag = malloc(70 * 70 * 8);
  fill_random(a, 70 * 70, 51);
  double *ad = malloc(70 * 70 * 8);
  memcpy(ad, a, 70 * 70 * 8);
  kiln_tensor *ta = NULL, *tc = NULL;
  float af[70 * 70];
  for (int i = 0; i < 70 * 70; i++)
    af[i] = (float)a[i], a[i] = af[i];
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 2, s, af, &ta));
  KOK(kiln_context_set_option(ctx, KILN_OPT_GEMM_SMALL_MNK, 0));
  KOK(kiln_gemm(ctx, KILN_NO_TRANS, KILN_TRANS, 1.0, ta, ta, 0.0, &tc));
  float cf[70 * 70];
  KOK(kiln_tensor_download(tc, cf, sizeof cf));
  double got[70 * 70];
  for (int i = 0; i < 70 * 70; i++)
    got[i] = cf[i];
  ref_gemm(0, 1, 70, 70, 70, 1.0, a, a, 0.0, c, mag);
  expect_close("no-clblast gemm", got, c, mag, 70 * 70, KILN_F32, 4.0 * 72);
  kiln_tensor_release(ta);
  kiln_tensor_release(tc);
  free(a);
  free(ad);
  free(c);
  free(mag);
  KOK(kiln_blas_warm(ctx, KILN_BLAS_WARM_USED));
  KOK(kiln_context_release(ctx));
}
END_TEST

/* Profiling counts one CLBlast call as one kernel with a device time. */
START_TEST(profiling_sees_clblast)
{
  if (!kiln_blas_has_clblast())
    return;
  kiln_context *ctx = harness_ctx();
  set_route(ctx, ROUTE_CLBLAST);
  int64_t s[2] = {64, 64};
  kiln_tensor *a = NULL, *c = NULL;
  KOK(kiln_tensor_full(ctx, KILN_F32, 2, s, kiln_scalar_f64(1.0), &a));
  KOK(kiln_profile_begin(ctx));
  KOK(kiln_gemm(ctx, KILN_NO_TRANS, KILN_NO_TRANS, 1.0, a, a, 0.0, &c));
  kiln_profile p;
  KOK(kiln_profile_end(ctx, &p));
  ck_assert_uint_eq(p.kernels, 1);
  ck_assert_uint_gt(p.device_ns, 0);
  float v[64 * 64];
  KOK(kiln_tensor_download(c, v, sizeof v));
  ck_assert_float_eq(v[0], 64.0f);
  kiln_tensor_release(a);
  kiln_tensor_release(c);
}
END_TEST

/* Tensors that start inside a buffer: CLBlast and kiln's kernel both take element offsets. */
START_TEST(gemm_offset_tensors)
{
  kiln_context *ctx = harness_ctx();
  cl_context clc;
  cl_command_queue q;
  KOK(kiln_context_cl_objects(ctx, &clc, NULL, &q));
  const int64_t m = 37, k = 29, n = 41;
  size_t na = (size_t)(m * k), nb = (size_t)(k * n), nc = (size_t)(m * n);
  size_t total = na + nb + nc + 3 + 5 + 7 + 9; /* gaps before, between and after the tensors */
  cl_int err;
  cl_mem big = clCreateBuffer(clc, CL_MEM_READ_WRITE, total * sizeof(float), NULL, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  float *host = malloc(total * sizeof *host);
  for (size_t i = 0; i < total; i++)
    host[i] = -7.0f; /* guard value around the tensors */
  double *a = malloc(na * 8), *b = malloc(nb * 8), *c = malloc(nc * 8), *mag = malloc(nc * 8);
  fill_random(a, na, 61);
  fill_random(b, nb, 62);
  size_t aoff = 3, boff = aoff + na + 5, coff = boff + nb + 7;
  for (size_t i = 0; i < na; i++)
    host[aoff + i] = (float)a[i], a[i] = host[aoff + i];
  for (size_t i = 0; i < nb; i++)
    host[boff + i] = (float)b[i], b[i] = host[boff + i];
  ck_assert_int_eq(
      clEnqueueWriteBuffer(q, big, CL_TRUE, 0, total * sizeof *host, host, 0, NULL, NULL),
      CL_SUCCESS);
  int64_t as[2] = {m, k}, bs[2] = {k, n}, cs[2] = {m, n};
  kiln_tensor *ta = NULL, *tb = NULL, *tc = NULL;
  KOK(kiln_tensor_wrap(ctx, big, aoff * sizeof(float), KILN_F32, 2, as, &ta));
  KOK(kiln_tensor_wrap(ctx, big, boff * sizeof(float), KILN_F32, 2, bs, &tb));
  KOK(kiln_tensor_wrap(ctx, big, coff * sizeof(float), KILN_F32, 2, cs, &tc));
  ref_gemm(0, 0, m, n, k, 1.0, a, b, 0.0, c, mag);
  for (int r = 0; r < NROUTES; r++) {
    set_route(ctx, (enum route)r);
    KOK(kiln_gemm(ctx, KILN_NO_TRANS, KILN_NO_TRANS, 1.0, ta, tb, 0.0, &tc));
    double *got = download(tc);
    expect_close(route_name[r], got, c, mag, nc, KILN_F32, 4.0 * (double)(k + 2));
    free(got);
  }
  /* Nothing outside the output moved. */
  float *after = malloc(total * sizeof *after);
  KOK(kiln_context_finish(ctx));
  ck_assert_int_eq(
      clEnqueueReadBuffer(q, big, CL_TRUE, 0, total * sizeof *after, after, 0, NULL, NULL),
      CL_SUCCESS);
  ck_assert_int_eq(memcmp(after, host, coff * sizeof *after), 0);
  ck_assert_float_eq(after[total - 1], -7.0f);
  free(after);
  free(host);
  free(a);
  free(b);
  free(c);
  free(mag);
  kiln_tensor_release(ta);
  kiln_tensor_release(tb);
  kiln_tensor_release(tc);
  clReleaseMemObject(big);
}
END_TEST

/*
 * kiln's large-product kernel (cl_kernels/gemm_large.cl), forced with the gemm tuner family's
 * route 3 over the option's CLBlast route: every transpose, edges of its 128-wide tiles (1, odd,
 * one past a tile, k not a multiple of the k-step), alpha/beta, NaN in C with beta == 0, a
 * broadcast batch, for the default parameter sets (the first two specs) and for each kind of
 * parameter KILN_DEBUG_GEMM_LARGE can change (vector width 1, single buffer, no padding, small
 * and non-square tiles, a k-step of 16). A malformed spec fails the call: proof that the route
 * was taken.
 */
START_TEST(gemm_large_kernel)
{
  /* "tm=8": the default set as large products get it (a set variable skips the 4x4 choice for
   * grids of fewer tiles than compute units); "": what these shapes get by default (4x4). */
  /* "mma=1/2 pad=8": f64 on the tensor cores, only where the device has them (NVIDIA, compute
   * capability 8.0 / 9.0 on); elsewhere the call refuses it, which this test checks. */
  static const char *const specs[] = {"tm=8",
                                      "",
                                      "mma=1 pad=8",
                                      "mma=2 pad=8",
                                      "mma=3 pad=8",
                                      "vw=1 db=0 pad=0",
                                      "tm=4 tn=4 wx=8 wy=8 bk=16",
                                      "tm=8 tn=4 wx=32 wy=8 vw=4 pad=0"};
  static const int64_t dims[][3] = {{1, 1, 1},      {3, 17, 5},     {129, 130, 17},
                                    {128, 128, 16}, {37, 200, 131}, {260, 7, 9}};
  /* The small mode (oclgrind): one tile, three k-steps. */
  static const int64_t dims_small[][3] = {{1, 1, 1}, {37, 40, 19}};
  static const double ab[][2] = {{1, 0}, {-1, 1}, {0.5, -1}, {2, 0}, {1, 0.25}};
  kiln_context *ctx = harness_ctx();
  const int small = harness_small();
  /* KILN_TEST_LARGE_SPECS=n: the first n sets only (bench/h200/gemm.sh: the defaults, 2). */
  const char *ns = getenv("KILN_TEST_LARGE_SPECS");
  size_t nspecs = small ? 1 : sizeof specs / sizeof specs[0];
  if (ns && atoi(ns) > 0 && (size_t)atoi(ns) < nspecs)
    nspecs = (size_t)atoi(ns);
  const size_t ndims = small ? 2 : sizeof dims / sizeof dims[0];
  for (size_t d = 0; d < 2; d++) {
    kiln_dtype dt = float_dtypes[d];
    if (skip_dtype(dt))
      continue;
    KOK(kiln_tune_override(ctx, "gemm", dt, NULL, "route=3"));
    for (size_t sp = 0; sp < nspecs; sp++) {
      setenv("KILN_DEBUG_GEMM_LARGE", specs[sp], 1);
      if (strstr(specs[sp], "mma=")) {
        int64_t sq1[2] = {8, 8};
        kiln_tensor *y = NULL, *cy = NULL;
        KOK(kiln_tensor_zeros(ctx, dt, 2, sq1, &y));
        kiln_status ms = kiln_gemm(ctx, KILN_NO_TRANS, KILN_NO_TRANS, 1.0, y, y, 0.0, &cy);
        kiln_tensor_release(y);
        kiln_tensor_release(cy);
        if (ms != KILN_OK) {
          ck_assert_int_eq(ms, KILN_ERR_INVALID_ARGUMENT);
          ck_assert_ptr_nonnull(strstr(kiln_last_error(), "mma="));
          continue;
        }
      }
      for (int t = 0; t < 4; t++)
        for (size_t s = 0; s < ndims; s++) {
          if (small && (t == 1 || t == 2))
            continue; /* the simulator's time: t 0 and 3 load both operands both ways */
          int ta = t & 1, tb = t >> 1;
          const int64_t *dm = small ? dims_small[s] : dims[s];
          int64_t m = dm[0], n = dm[1], k = dm[2];
          const double *sc = ab[(s + (size_t)t + sp) % 5];
          struct gemm_case gc = {
              2, 2, {ta ? k : m, ta ? m : k}, {tb ? n : k, tb ? k : n}, ta, tb, sc[0], sc[1], 1};
          run_gemm_case(dt, ROUTE_CLBLAST, &gc);
        }
      /* A batch of 3 against one B, and one A against a batch (broadcast), C made fresh. */
      struct gemm_case gb = {3, 2, {3, 33, 20}, {70, 20}, 0, 1, 1.5, 0.0, 0};
      run_gemm_case(dt, ROUTE_CLBLAST, &gb);
      struct gemm_case gc2 = {2, 3, {40, 19}, {2, 19, 9}, 0, 0, -1.0, 0.0, 1};
      run_gemm_case(dt, ROUTE_CLBLAST, &gc2);
    }
    setenv("KILN_DEBUG_GEMM_LARGE", "tm=8 vw=3", 1);
    int64_t sq[2] = {40, 40};
    kiln_tensor *x = NULL, *c = NULL;
    KOK(kiln_tensor_zeros(ctx, dt, 2, sq, &x));
    KEXPECT(kiln_gemm(ctx, KILN_NO_TRANS, KILN_NO_TRANS, 1.0, x, x, 0.0, &c),
            KILN_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "KILN_DEBUG_GEMM_LARGE"));
    setenv("KILN_DEBUG_GEMM_LARGE", "bk=3", 1);
    KEXPECT(kiln_gemm(ctx, KILN_NO_TRANS, KILN_NO_TRANS, 1.0, x, x, 0.0, &c),
            KILN_ERR_INVALID_ARGUMENT);
    unsetenv("KILN_DEBUG_GEMM_LARGE");
    KOK(kiln_tune_override(ctx, "gemm", dt, NULL, NULL));
    kiln_tensor_release(x);
    kiln_tensor_release(c);
  }
}
END_TEST

/*
 * The large route's CPU kernel (cl_kernels/gemm_cpu.cl, the default on CPU devices, forced
 * with the test hook on any device): op(B) as stored (its broadcast form) and transposed (its
 * dot form), op(A) both ways, sizes on and off its blocks (6 x 64 and 4 x 6 for f32, 6 x 32
 * for f64), k of 1, below a vector, not a multiple of one and long, alpha/beta, NaN in C with
 * beta == 0, broadcast batches. A transposed B with 32 rows and 512 columns of C or more (or
 * with A transposed too) runs packed as stored (gemm_cpu_pack_bt) on the broadcast form, one
 * B or a batch of them, edges of its 8 x 64 blocks included. The kernel must have run once
 * per case. All of it with the blocks of each vector width (64, 32 and 16 bytes: 6 x 16 and
 * 3 x 4 of 8-wide f32 vectors, and so on; cpu_blocks in lib/ops/blas_route.c).
 */
START_TEST(gemm_cpu_kernel)
{
  static const int64_t dims[][3] = {{1, 1, 1},    {11, 13, 7},    {12, 64, 16},
                                    {13, 33, 17}, {37, 65, 33},   {25, 97, 1},
                                    {65, 7, 129}, {100, 70, 300}, {40, 523, 33}};
  static const double ab[][2] = {{1, 0}, {-1, 1}, {0.5, -1}, {2, 0}, {1, 0.25}};
  kiln_context *ctx = harness_ctx();
  const size_t ndims = harness_small() ? 3 : sizeof dims / sizeof dims[0];
  kiln__blas_test_large_form(2);
  /* the blocks of 64-, 32- and 16-byte vectors (AVX-512, AVX2, SSE), whatever the device */
  static const unsigned widths[3] = {16, 8, 4};
  for (size_t wd = 0; wd < (harness_small() ? 1 : 3) * 2; wd++) {
    size_t d = wd % 2;
    kiln__blas_test_cpu_width(widths[wd / 2]);
    kiln_dtype dt = float_dtypes[d];
    /* the hook's width in force: 64, 32 or 16 bytes of f32, and of f64 */
    ck_assert_uint_eq(kiln__gemm_cpu_shape(ctx, dt)[0], widths[wd / 2] / (d ? 2u : 1u));
    if (skip_dtype(dt))
      continue;
    KOK(kiln_tune_override(ctx, "gemm", dt, NULL, "route=3"));
    uint64_t calls = kiln__blas_test_cpu_calls(), want = 0;
    for (int t = 0; t < 4; t++)
      for (size_t s = 0; s < ndims; s++) {
        int ta = t & 1, tb = t >> 1;
        const int64_t *dm = dims[s];
        int64_t m = dm[0], n = dm[1], k = dm[2];
        const double *sc = ab[(s + (size_t)t) % 5];
        struct gemm_case gc = {
            2, 2, {ta ? k : m, ta ? m : k}, {tb ? n : k, tb ? k : n}, ta, tb, sc[0], sc[1], 1};
        run_gemm_case(dt, ROUTE_CLBLAST, &gc);
        want++;
      }
    /* A batch of 3 against one transposed B (packed once), one A against a batch of B, as
     * stored and transposed (packed per matrix), a batch of 2 below the packing's rows (the
     * dot form), C made fresh. */
    struct gemm_case gb = {3, 2, {3, 33, 20}, {70, 20}, 0, 1, 1.5, 0.0, 0};
    run_gemm_case(dt, ROUTE_CLBLAST, &gb);
    struct gemm_case gc2 = {2, 3, {40, 19}, {2, 19, 9}, 0, 0, -1.0, 0.0, 1};
    run_gemm_case(dt, ROUTE_CLBLAST, &gc2);
    struct gemm_case gc3 = {2, 3, {40, 19}, {2, 9, 19}, 0, 1, 0.5, 0.0, 1};
    run_gemm_case(dt, ROUTE_CLBLAST, &gc3);
    struct gemm_case gc4 = {3, 3, {2, 5, 19}, {2, 9, 19}, 0, 1, 2.0, 0.0, 1};
    run_gemm_case(dt, ROUTE_CLBLAST, &gc4);
    struct gemm_case gc5 = {2, 3, {40, 19}, {2, 530, 19}, 0, 1, 1.0, 0.5, 1};
    run_gemm_case(dt, ROUTE_CLBLAST, &gc5);
    want += 5;
    ck_assert_uint_eq(kiln__blas_test_cpu_calls() - calls, want);
    KOK(kiln_tune_override(ctx, "gemm", dt, NULL, NULL));
  }
  kiln__blas_test_cpu_width(0);
  kiln__blas_test_large_form(0);
}
END_TEST

/* The routing option and its bounds. */
START_TEST(small_threshold_option)
{
  kiln_context *ctx = NULL;
  KOK(kiln_context_create(NULL, &ctx));
  int64_t v = 0, lo, hi;
  KOK(kiln_context_get_option(ctx, KILN_OPT_GEMM_SMALL_MNK, &v));
  ck_assert_int_eq(v, 32 * 32 * 32);
  KOK(kiln_option_bounds(KILN_OPT_GEMM_SMALL_MNK, &lo, &hi));
  ck_assert_int_eq(lo, 0);
  KEXPECT(kiln_context_set_option(ctx, KILN_OPT_GEMM_SMALL_MNK, -1), KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_context_set_option(ctx, KILN_OPT_GEMM_SMALL_MNK, 5));
  KOK(kiln_context_get_option(ctx, KILN_OPT_GEMM_SMALL_MNK, &v));
  ck_assert_int_eq(v, 5);
  KOK(kiln_context_release(ctx));
}
END_TEST

/*
 * Aliasing: GEMM, GEMV and dot refuse an output one element before or after
 * an input, leaving every byte alone; axpy computes y = (1 + alpha) x when y
 * is x's very bytes (another handle too) and refuses a partial overlap.
 */
START_TEST(overlapping_outputs)
{
  kiln_context *ctx = harness_ctx();
  enum { M = 9, K = 7, N = 11 };
  const int64_t as[2] = {M, K}, bs[2] = {K, N}, cs[2] = {M, N}, ks = K, ms = M, n1 = M * K;
  float ha[M * K], hb[K * N], hk[K];
  for (int i = 0; i < M * K; i++)
    ha[i] = (float)(i % 5) - 2.0f;
  for (int i = 0; i < K * N; i++)
    hb[i] = (float)(i % 3) - 1.0f;
  for (int i = 0; i < K; i++)
    hk[i] = (float)i;
  kiln_tensor *b = NULL, *v = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 2, bs, hb, &b));
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 1, &ks, hk, &v));
  for (int out_first = 1; out_first >= 0; out_first--) {
    kiln_tensor *a, *c, *all;
    harness_overlap_pair(KILN_F32, 2, as, ha, KILN_F32, 2, cs, 4, out_first, &a, &c, &all);
    KEXPECT_REFUSED_UNTOUCHED(all,
                              kiln_gemm(ctx, KILN_NO_TRANS, KILN_NO_TRANS, 1.0, a, b, 0.0, &c));
    kiln_tensor_release(a);
    kiln_tensor_release(c);
    kiln_tensor_release(all);

    harness_overlap_pair(KILN_F32, 2, as, ha, KILN_F32, 1, &ms, 4, out_first, &a, &c, &all);
    KEXPECT_REFUSED_UNTOUCHED(all, kiln_gemv(ctx, KILN_NO_TRANS, 1.0, a, v, 0.0, &c));
    kiln_tensor_release(a);
    kiln_tensor_release(c);
    kiln_tensor_release(all);

    kiln_tensor *x, *y;
    harness_overlap_pair(KILN_F32, 1, &n1, ha, KILN_F32, 1, &n1, 4, out_first, &x, &y, &all);
    KEXPECT_REFUSED_UNTOUCHED(all, kiln_axpy(ctx, 2.0, x, y));
    kiln_tensor_release(x);
    kiln_tensor_release(y);
    kiln_tensor_release(all);
  }
  /* y over exactly x's bytes, as x itself and through another handle. */
  kiln_tensor *x, *y;
  harness_overlap_pair(KILN_F32, 1, &n1, ha, KILN_F32, 1, &n1, 0, 1, &x, &y, NULL);
  KOK(kiln_axpy(ctx, 2.0, x, x));
  KOK(kiln_axpy(ctx, 0.5, x, y));
  float *got = harness_download(y);
  for (int i = 0; i < n1; i++)
    ck_assert_msg(got[i] == ha[i] * 4.5f, "axpy onto x's own bytes: [%d] = %g, expected %g", i,
                  (double)got[i], (double)(ha[i] * 4.5f));
  free(got);
  kiln_tensor_release(x);
  kiln_tensor_release(y);
  kiln_tensor_release(b);
  kiln_tensor_release(v);
}
END_TEST

static Suite *
blas_suite(void)
{
  Suite *s = suite_create("blas");
  TCase *tc = tcase_create("blas");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, blas_warm_first_call_cost);
  tcase_add_test(tc, gemm_transposes_sizes_scalars);
  tcase_add_test(tc, gemm_beta_zero_ignores_nan);
  tcase_add_test(tc, gemm_large_1000);
  tcase_add_test(tc, gemm_batches_and_broadcast);
  tcase_add_test(tc, gemm_empty_dims);
  tcase_add_test(tc, gemm_offset_tensors);
  tcase_add_test(tc, gemm_bad_input);
  tcase_add_test(tc, matmul_numpy_rules);
  tcase_add_test(tc, gemv_both_transposes);
  tcase_add_test(tc, syrk_triangles);
  tcase_add_test(tc, syrk_split_k);
  tcase_add_test(tc, level1_dot_axpy_scal);
  tcase_add_test(tc, overlapping_outputs);
  tcase_add_test(tc, without_clblast);
  tcase_add_test(tc, profiling_sees_clblast);
  tcase_add_test(tc, small_threshold_option);
  suite_add_tcase(s, tc);
  /* Its own case, so CK_RUN_CASE=dtypes runs it alone. */
  TCase *td = tcase_create("dtypes");
  tcase_set_timeout(td, 600);
  tcase_add_test(td, gemm_half_dtypes);
  tcase_add_test(td, gemm_complex_dtypes);
  tcase_add_test(td, level2_level1_new_dtypes);
  suite_add_tcase(s, td);
  /* Its own case, so CK_RUN_CASE=large runs it alone (bench/h200/gemm.sh on the GPU). */
  TCase *tl = tcase_create("large");
  tcase_set_timeout(tl, 600);
  tcase_add_test(tl, gemm_large_kernel);
  suite_add_tcase(s, tl);
  TCase *tg = tcase_create("cpu");
  tcase_set_timeout(tg, 600);
  tcase_add_test(tg, gemm_cpu_kernel);
  suite_add_tcase(s, tg);
  return s;
}

int
main(void)
{
  return harness_main(blas_suite(), 1);
}
