/*
 * linalg_spectral suite: QR, lstsq, eigh, eig, svd, pinv, matrix_rank, matrix_norm, cond.
 *
 * Checks are backward errors computed on the host in double from the device's results, with
 * eps = FLT_EPSILON or DBL_EPSILON, norms Frobenius, and BOUND = 10 unless noted:
 *   QR     ||A - Q R|| / (||A|| max(m, n) eps) <= BOUND, ||Q^T Q - I|| / (m eps) <= BOUND,
 *          R exactly zero below its diagonal
 *   lstsq  ||A^T (A x - b)|| / (||A|| (||A|| ||x|| + ||b||) max(m, n) eps) <= BOUND (normal
 *          equations); minimum norm: ||N^T x|| / (||x|| max(m, n) eps) <= 100 for a basis N
 *          of A's null space; residuals = ||A x - b||^2 within 1e3 eps relative
 *   eigh   ||A V - V diag(w)|| / (||A|| n eps) <= BOUND, ||V^T V - I|| / (n eps) <= BOUND,
 *          w ascending; known eigenvalues (repeated ones) within 10 n eps ||A||
 *   eig    ||A V - V diag(w)|| (complex) / (||A|| n eps) <= 100, ||v_i|| = 1
 *   svd    ||A - U S V^T|| / (||A|| max(m, n) eps) <= BOUND, U, V orthonormal columns as
 *          Q above, S descending and >= 0; known singular values within 10 max(m, n) eps s_max
 *   pinv   ||A X A - A|| / (||A|| max eps) and ||X A X - X|| / (||X|| max eps) <= 100 of
 *          well-conditioned matrices
 *   norms  against host references (1, inf, fro) and known singular values (2, -2, nuc)
 * Sizes: 0x0, 1x1, primes, tall, wide, the block size +-1 with the block forced to 4 and 16,
 * both GEMM routes (CLBlast in f64, kiln's kernel in f32); rank-deficient, repeated
 * eigenvalues, complex pairs; batched QR, eigh and svd equal to unbatched bitwise; bad
 * input. Without LAPACKE the host ops must return KILN_ERR_UNSUPPORTED.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kiln_config.h"
#include "ops/linalg_internal.h"
#include "ops/linalg_spectral_internal.h"

#define EXPECT(cond, ...)        \
  do {                           \
    if (!(cond))                 \
      ck_abort_msg(__VA_ARGS__); \
  } while (0)

#define BOUND 10.0

static const kiln_dtype dtypes[] = {KILN_F32, KILN_F64};
static int hook_nb = -1, hook_leaf = -1;

/* f32 on kiln's GEMM kernel, f64 through CLBlast (PoCL compiles each CLBlast routine once). */
static int
route_for(kiln_dtype dt)
{
  kiln__linalg_spectral_test_set(hook_nb, dt == KILN_F32 ? 1 : -1, hook_leaf);
  /* f64 takes CLBlast for every GEMM (the small ones are kiln's, as f32 runs) */
  kiln__linalg_test_own_gemm_max(dt == KILN_F64 ? 0 : -1);
  return 1;
}

/* The small mode (oclgrind) runs f64 alone where the device has it: the kernels index memory
 * the same way for both dtypes, and each dtype's programs and launches cost minutes there. */
#define FOR_DTYPES(dt)                                                                      \
  for (size_t dt##_i = harness_small() && harness_has_fp64(); dt##_i < 2; dt##_i++)         \
    for (int dt##_k = dtypes[dt##_i] != KILN_F64 || harness_has_fp64(); dt##_k; dt##_k = 0) \
      for (kiln_dtype dt = dtypes[dt##_i]; dt##_k && route_for(dt); dt##_k = 0)

static uint64_t rng = 88172645463325252ull;

static double
urand(double lo, double hi)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

static double
eps_of(kiln_dtype dt)
{
  return dt == KILN_F32 ? FLT_EPSILON : DBL_EPSILON;
}

static double *
rand_mat(size_t n)
{
  double *v = malloc((n ? n : 1) * sizeof *v);
  for (size_t i = 0; i < n; i++)
    v[i] = urand(-1, 1);
  return v;
}

static kiln_tensor *
up(kiln_dtype dt, size_t nd, const int64_t *shape, double *v)
{
  uint64_t n = 1;
  for (size_t i = 0; i < nd; i++)
    n *= (uint64_t)shape[i];
  void *h = malloc((n ? n : 1) * 8);
  for (uint64_t i = 0; i < n; i++) {
    if (dt == KILN_F32) {
      ((float *)h)[i] = (float)v[i];
      v[i] = (double)(float)v[i];
    } else {
      ((double *)h)[i] = v[i];
    }
  }
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_from_host(harness_ctx(), dt, nd, shape, h, &t));
  free(h);
  return t;
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

static double
fro(const double *a, size_t n)
{
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += a[i] * a[i];
  return sqrt(s);
}

/* c = op(a) (m x k) op(b) (k x n); ta: a is stored k x m. */
static void
matmul_t(const double *a, int ta, const double *b, int tb, double *c, size_t m, size_t k, size_t n)
{
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      double s = 0;
      for (size_t p = 0; p < k; p++)
        s += (ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
      c[i * n + j] = s;
    }
}

/* ||Q^T Q - I|| of the c orthonormal columns of the m x c matrix q. */
static double
orth_err(const double *q, size_t m, size_t c)
{
  double r = 0;
  for (size_t i = 0; i < c; i++)
    for (size_t j = 0; j < c; j++) {
      double s = 0;
      for (size_t p = 0; p < m; p++)
        s += q[p * c + i] * q[p * c + j];
      s -= i == j;
      r += s * s;
    }
  return sqrt(r);
}

/* An n x n random orthogonal matrix (product of three Householder reflectors on I). */
static double *
rand_orth(size_t n)
{
  double *q = calloc(n * n + 1, sizeof *q), *v = malloc((n + 1) * sizeof *v);
  for (size_t i = 0; i < n; i++)
    q[i * n + i] = 1;
  for (int r = 0; r < 3 && n > 1; r++) {
    double nv = 0;
    for (size_t i = 0; i < n; i++) {
      v[i] = urand(-1, 1);
      nv += v[i] * v[i];
    }
    for (size_t j = 0; j < n; j++) { /* q = (I - 2 v v^T / v^T v) q */
      double s = 0;
      for (size_t i = 0; i < n; i++)
        s += v[i] * q[i * n + j];
      for (size_t i = 0; i < n; i++)
        q[i * n + j] -= 2 * s / nv * v[i];
    }
  }
  free(v);
  return q;
}

/* A = U diag(s) V^T, m x n with U, V random orthogonal; s has min(m, n) entries. */
static double *
with_svals(size_t m, size_t n, const double *s)
{
  double *u = rand_orth(m), *vv = rand_orth(n), *a = calloc(m * n + 1, sizeof *a);
  size_t k = m < n ? m : n;
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      double t = 0;
      for (size_t l = 0; l < k; l++)
        t += u[i * m + l] * s[l] * vv[j * n + l];
      a[i * n + j] = t;
    }
  free(u);
  free(vv);
  return a;
}

/* ---------------------------------------------------------------- QR */

static void
qr_case(kiln_dtype dt, uint64_t batch, size_t m, size_t n, const double *given)
{
  int64_t shape[3];
  size_t nd = 0;
  if (batch != 1)
    shape[nd++] = (int64_t)batch;
  shape[nd++] = (int64_t)m;
  shape[nd++] = (int64_t)n;
  size_t mn = m * n, k = m < n ? m : n;
  if (!harness_fits(batch * mn))
    return;
  double *a = rand_mat(batch * mn);
  if (given)
    memcpy(a, given, batch * mn * sizeof *a);
  kiln_tensor *ta = up(dt, nd, shape, a);
  double eps = eps_of(dt), mx = (double)(m > n ? m : n);
  for (int mode = 0; mode < 3; mode++) {
    kiln_tensor *q = NULL, *r = NULL;
    KOK(kiln_linalg_qr(harness_ctx(), ta, (kiln_qr_mode)mode, mode == 2 ? NULL : &q, &r));
    size_t qc = mode == 1 ? m : k, rr = mode == 1 ? m : k;
    ck_assert_int_eq(kiln_tensor_dim(r, nd - 2), (int64_t)rr);
    ck_assert_int_eq(kiln_tensor_dim(r, nd - 1), (int64_t)n);
    double *hr = down(r), *hq = mode == 2 ? NULL : down(q);
    for (uint64_t b = 0; b < batch; b++) {
      const double *R = hr + b * rr * n, *A = a + b * mn;
      for (size_t i = 0; i < rr; i++)
        for (size_t j = 0; j < n && j < i; j++)
          EXPECT(R[i * n + j] == 0, "R[%zu][%zu] = %g below the diagonal", i, j, R[i * n + j]);
      if (mode == 2)
        continue;
      const double *Q = hq + b * m * qc;
      ck_assert_int_eq(kiln_tensor_dim(q, nd - 1), (int64_t)qc);
      double *qrm = calloc(mn + 1, sizeof *qrm);
      matmul_t(Q, 0, R, 0, qrm, m, qc, n);
      for (size_t i = 0; i < mn; i++)
        qrm[i] -= A[i];
      double na = fro(A, mn), e = na == 0 ? fro(qrm, mn) : fro(qrm, mn) / (na * mx * eps);
      double oe = m ? orth_err(Q, m, qc) / ((double)m * eps) : 0;
      EXPECT(e <= BOUND, "%s QR %zux%zu mode %d batch %llu: ||A - QR|| error %g",
             kiln_dtype_name(dt), m, n, mode, (unsigned long long)b, e);
      EXPECT(oe <= BOUND, "%s QR %zux%zu mode %d: ||Q^T Q - I|| error %g", kiln_dtype_name(dt), m,
             n, mode, oe);
      free(qrm);
    }
    free(hr);
    free(hq);
    kiln_tensor_release(q);
    kiln_tensor_release(r);
  }
  free(a);
  kiln_tensor_release(ta);
}

static void
qr_sizes(kiln_dtype dt)
{
  static const size_t sh[][2] = {{0, 0},   {1, 1},   {0, 3},   {3, 0},   {1, 5},
                                 {5, 1},   {2, 2},   {5, 3},   {3, 5},   {7, 7},
                                 {17, 13}, {13, 17}, {31, 31}, {70, 33}, {33, 70}};
  /* the small mode (oclgrind) stops at 7 x 7 */
  size_t nsh = harness_small() ? 10 : sizeof sh / sizeof sh[0];
  for (size_t i = 0; i < nsh; i++)
    qr_case(dt, 1, sh[i][0], sh[i][1], NULL);
  qr_case(dt, 3, 6, 4, NULL);
  qr_case(dt, 0, 4, 4, NULL);
  /* rank-deficient: rank 2 of 9 x 6, and a zero column */
  double *b = rand_mat(9 * 2), *c = rand_mat(2 * 6), *a = malloc(9 * 6 * sizeof *a);
  matmul_t(b, 0, c, 0, a, 9, 2, 6);
  qr_case(dt, 1, 9, 6, a);
  for (size_t i = 0; i < 9; i++)
    a[i * 6 + 1] = 0;
  qr_case(dt, 1, 9, 6, a);
  memset(a, 0, 9 * 6 * sizeof *a);
  qr_case(dt, 1, 9, 6, a);
  free(a);
  free(b);
  free(c);
}

START_TEST(qr_backward_error)
{
  FOR_DTYPES(dt)
  {
    qr_sizes(dt);
  }
}
END_TEST

/*
 * Several blocks: the block forced to 4 and 16, matrices around the block sizes; with 16 the
 * panels also split recursively down to leaves of 3 columns (the GPU route).
 */
START_TEST(qr_blocked)
{
  static const int nbs[] = {4, 16};
  kiln__linalg_test_route(KILN__LINALG_ROUTE_DEVICE); /* the device panel's recursion */
  for (size_t i = 0; i < (harness_small() ? 1u : 2u); i++) {
    hook_nb = nbs[i];
    hook_leaf = i == 1 ? 3 : -1;
    FOR_DTYPES(dt)
    {
      size_t nb = (size_t)nbs[i];
      qr_case(dt, 1, nb - 1, nb - 1, NULL);
      qr_case(dt, 1, nb, nb, NULL);
      qr_case(dt, 1, nb + 1, nb + 1, NULL);
      qr_case(dt, 1, 3 * nb + 2, 2 * nb + 1, NULL);
      qr_case(dt, 1, 2 * nb + 1, 3 * nb + 2, NULL);
      if (harness_fits(97 * 61))
        qr_case(dt, 2, 97, 61, NULL);
    }
  }
  hook_nb = -1;
  hook_leaf = -1;
}
END_TEST

/* QR of 3 m x n matrices (m >= n) at once equals that of each alone, bitwise. */
static void
qr_bitwise(kiln_dtype dt, size_t m, size_t n)
{
  {
    size_t mn = m * n, nn = n * n;
    int64_t s3[3] = {3, (int64_t)m, (int64_t)n}, s2[2] = {(int64_t)m, (int64_t)n};
    double *a = rand_mat(3 * mn);
    kiln_tensor *ta = up(dt, 3, s3, a), *q = NULL, *r = NULL;
    KOK(kiln_linalg_qr(harness_ctx(), ta, KILN_QR_REDUCED, &q, &r));
    double *hq = down(q), *hr = down(r);
    for (int b = 0; b < 3; b++) {
      kiln_tensor *t1 = up(dt, 2, s2, a + b * mn), *q1 = NULL, *r1 = NULL;
      KOK(kiln_linalg_qr(harness_ctx(), t1, KILN_QR_REDUCED, &q1, &r1));
      double *h1 = down(q1), *h2 = down(r1);
      EXPECT(memcmp(h1, hq + b * mn, mn * sizeof *h1) == 0, "%zux%zu: batched Q %d differs", m, n,
             b);
      EXPECT(memcmp(h2, hr + b * nn, nn * sizeof *h2) == 0, "%zux%zu: batched R %d differs", m, n,
             b);
      free(h1);
      free(h2);
      kiln_tensor_release(t1);
      kiln_tensor_release(q1);
      kiln_tensor_release(r1);
    }
    free(a);
    free(hq);
    free(hr);
    kiln_tensor_release(ta);
    kiln_tensor_release(q);
    kiln_tensor_release(r);
  }
}

static void lstsq_case(kiln_dtype dt, size_t m, size_t n, size_t k, size_t rank);

/*
 * Two-level QR (outer blocks of four panels: each panel updates only its outer block, whose
 * assembled T then updates the columns right of it and forms Q): square, tall, wide, the last
 * outer block cut short, batched equal to unbatched bitwise, and lstsq (Q^T B one block at a
 * time from the two-level factors). The GEMM routes of route_for (kiln's kernels for f32,
 * CLBlast for f64).
 */
START_TEST(qr_two_level)
{
  kiln__linalg_test_route(KILN__LINALG_ROUTE_DEVICE);
  int small = harness_small();
  hook_nb = small ? 4 : 16;
  kiln__linalg_spectral_test_nb2(4 * hook_nb);
  FOR_DTYPES(dt)
  {
    if (small) {
      qr_case(dt, 1, 21, 19, NULL);
      continue;
    }
    qr_case(dt, 1, 70, 70, NULL);
    qr_case(dt, 1, 150, 70, NULL);
    qr_case(dt, 1, 70, 150, NULL);
    qr_case(dt, 2, 97, 61, NULL);
    qr_bitwise(dt, 130, 70);
    lstsq_case(dt, 150, 70, 3, 70);
  }
  kiln__linalg_spectral_test_nb2(-1);
  kiln__linalg_test_route(-1);
  hook_nb = -1;
}
END_TEST

START_TEST(qr_batched_bitwise)
{
  FOR_DTYPES(dt)
  {
    qr_bitwise(dt, 11, 7);
  }
}
END_TEST

/*
 * Both panel routes (kiln's qr_panel, the host's dgeqrf + dlarft: kiln__linalg_test_route)
 * with every block size the linalg tuner family can pick (16 .. 256) and 8.
 */
START_TEST(qr_routes)
{
  static const int nbs[] = {8, 16, 32, 64, 128, 256};
  static const size_t sh[][2] = {{1, 1}, {7, 7}, {65, 65}, {130, 70}, {70, 130}};
  for (int route = KILN__LINALG_ROUTE_DEVICE; route <= KILN__LINALG_ROUTE_HOST; route++)
    for (size_t ib = 0; ib < sizeof nbs / sizeof nbs[0]; ib++) {
      if (harness_small() && (nbs[ib] > 16 || route == KILN__LINALG_ROUTE_DEVICE))
        continue;
      kiln__linalg_test_route(route);
      hook_nb = nbs[ib];
      FOR_DTYPES(dt)
      {
        for (size_t i = nbs[ib] <= 32 ? 0 : 3; i < sizeof sh / sizeof sh[0]; i++)
          if (harness_fits(sh[i][0] * sh[i][1]))
            qr_case(dt, 1, sh[i][0], sh[i][1], NULL);
        if (nbs[ib] == 16 && harness_fits(3 * 65 * 40))
          qr_bitwise(dt, 65, 40);
      }
    }
  kiln__linalg_test_route(-1);
  hook_nb = -1;
}
END_TEST

/*
 * Column-wise backward error of the reduced QR of the m x n matrix a (m >= n):
 * ||a_j - (Q R)_j|| / (||a_j|| m eps) for every column. Householder QR is column-wise
 * backward stable, so columns scaled far apart (and far from 1) must each meet the bound:
 * that checks the panels' scaling, where the norm and the products would overflow or
 * underflow unscaled.
 */
static void
qr_colwise(kiln_dtype dt, size_t m, size_t n, const double *given)
{
  int64_t shape[2] = {(int64_t)m, (int64_t)n};
  double *a = malloc(m * n * sizeof *a);
  memcpy(a, given, m * n * sizeof *a);
  kiln_tensor *ta = up(dt, 2, shape, a), *q = NULL, *r = NULL;
  KOK(kiln_linalg_qr(harness_ctx(), ta, KILN_QR_REDUCED, &q, &r));
  double *hq = down(q), *hr = down(r), *qr = calloc(m * n + 1, sizeof *qr);
  matmul_t(hq, 0, hr, 0, qr, m, n, n);
  for (size_t j = 0; j < n; j++) {
    double na = 0, ne = 0;
    for (size_t i = 0; i < m; i++) {
      na += (a[i * n + j] / a[j]) * (a[i * n + j] / a[j]); /* scaled: a[j] is column j's size */
      double d = (qr[i * n + j] - a[i * n + j]) / a[j];
      ne += d * d;
    }
    double e = sqrt(ne) / (sqrt(na) * (double)m * eps_of(dt));
    EXPECT(e <= BOUND, "%s QR %zux%zu column %zu (scale %g): ||a_j - (QR)_j|| error %g",
           kiln_dtype_name(dt), m, n, j, a[j], e);
  }
  EXPECT(orth_err(hq, m, n) / ((double)m * eps_of(dt)) <= BOUND, "%s QR %zux%zu scaled: Q",
         kiln_dtype_name(dt), m, n);
  free(a);
  free(hq);
  free(hr);
  free(qr);
  kiln_tensor_release(ta);
  kiln_tensor_release(q);
  kiln_tensor_release(r);
}

/* m x n, column j scaled by 2^e_j with e_j from lo to hi; row 0 holds the scales (so that
 * qr_colwise finds them), the rest random. */
static double *
graded(size_t m, size_t n, int lo, int hi)
{
  double *a = rand_mat(m * n);
  for (size_t j = 0; j < n; j++) {
    double s = ldexp(1.0, n > 1 ? lo + (int)((long)(hi - lo) * (long)j / (long)(n - 1)) : lo);
    a[j] = s;
    for (size_t i = 1; i < m; i++)
      a[i * n + j] *= s;
  }
  return a;
}

/*
 * qr_panel_grid (the linalg family's pwg > 1: one work-group on CPUs, up to pwg compute units
 * on GPUs): the small shapes, rank-deficient and zero columns, panels of the default block,
 * of 64 columns (the kernel's widest) and halves of 100 (the recursion's leaves), more rows
 * than one launch holds (those panels on qr_panel), lstsq, and graded and huge or tiny
 * columns, whose norms and products the kernel scales.
 */
START_TEST(qr_grid_panel)
{
  /* its groups exchange through global memory across work-items by design, which the
   * simulator's race detector reports (as lu_panel_grid's) */
  if (harness_small())
    return;
  kiln__linalg_test_pwg(2);
  kiln__linalg_test_route(KILN__LINALG_ROUTE_DEVICE);
  FOR_DTYPES(dt)
  {
    qr_case(dt, 1, 97, 61, NULL);
    qr_case(dt, 1, 61, 97, NULL);
    qr_case(dt, 1, 300, 20, NULL); /* 300 rows: more than a CPU launch holds */
    qr_case(dt, 2, 40, 40, NULL);
    lstsq_case(dt, 41, 17, 2, 17);
    int f64 = dt == KILN_F64;
    /* column scales 2^-60 .. 2^60 (f32) or 2^-900 .. 2^900, and all columns huge or tiny */
    double *g = graded(90, 24, f64 ? -900 : -60, f64 ? 900 : 60);
    qr_colwise(dt, 90, 24, g);
    free(g);
    g = graded(70, 8, f64 ? 600 : 70, f64 ? 600 : 70);
    qr_colwise(dt, 70, 8, g);
    free(g);
    g = graded(70, 8, f64 ? -600 : -70, f64 ? -600 : -70);
    qr_colwise(dt, 70, 8, g);
    free(g);
  }
  /* T left to qr_larft (where a device's local memory is short), and few rows per lane (more
   * groups on a GPU); the work-group size stays, as PoCL compiles the kernel again for each */
  setenv("KILN_DEBUG_QR_GRID", "t=0", 1);
  FOR_DTYPES(dt)
  {
    qr_sizes(dt);
    qr_case(dt, 1, 70, 33, NULL);
  }
  setenv("KILN_DEBUG_QR_GRID", "rows=1", 1);
  FOR_DTYPES(dt)
  {
    qr_case(dt, 2, 40, 25, NULL);
  }
  unsetenv("KILN_DEBUG_QR_GRID");
  hook_nb = 64;
  FOR_DTYPES(dt)
  {
    qr_case(dt, 1, 100, 100, NULL);
    qr_case(dt, 1, 130, 70, NULL);
  }
  hook_nb = 100;
  hook_leaf = 3;
  FOR_DTYPES(dt)
  {
    qr_case(dt, 1, 120, 110, NULL);
  }
  kiln__linalg_test_pwg(-1);
}
END_TEST

/* ---------------------------------------------------------------- lstsq */

/* ||A^T (A x - b)|| scaled (normal equations) for each column. */
static double
normal_eq_err(const double *A, const double *x, const double *b, size_t m, size_t n, size_t k,
              double eps)
{
  double *r = malloc((m * k + 1) * sizeof *r), *g = malloc((n * k + 1) * sizeof *g);
  matmul_t(A, 0, x, 0, r, m, n, k);
  for (size_t i = 0; i < m * k; i++)
    r[i] -= b[i];
  matmul_t(A, 1, r, 0, g, n, m, k);
  double na = fro(A, m * n), e = fro(g, n * k) / (na * (na * fro(x, n * k) + fro(b, m * k)) *
                                                  (double)(m > n ? m : n) * eps);
  free(r);
  free(g);
  return e;
}

static void
lstsq_case(kiln_dtype dt, size_t m, size_t n, size_t k, size_t rank)
{
  int64_t as[2] = {(int64_t)m, (int64_t)n}, bs[2] = {(int64_t)m, (int64_t)k};
  double *a, *nullb = NULL; /* n x (n - rank) basis of the null space */
  size_t nnull = 0;
  if (rank < (m < n ? m : n) || m < n) {
    /* A = B [I G] (rank r): null space spanned by the columns of [-G; I] */
    size_t r = rank;
    double *bb = rand_mat(m * r), *g = rand_mat(r * (n - r)), *c = calloc(r * n + 1, sizeof *c);
    for (size_t i = 0; i < r; i++) {
      c[i * n + i] = 1;
      for (size_t j = r; j < n; j++)
        c[i * n + j] = g[i * (n - r) + j - r];
    }
    a = malloc((m * n + 1) * sizeof *a);
    matmul_t(bb, 0, c, 0, a, m, r, n);
    nnull = n - r;
    nullb = calloc(n * nnull + 1, sizeof *nullb);
    for (size_t j = 0; j < nnull; j++) {
      for (size_t i = 0; i < r; i++)
        nullb[i * nnull + j] = -g[i * (n - r) + j];
      nullb[(r + j) * nnull + j] = 1;
    }
    free(bb);
    free(g);
    free(c);
  } else {
    a = rand_mat(m * n);
  }
  double *b = rand_mat(m * k);
  kiln_tensor *ta = up(dt, 2, as, a), *tb = up(dt, 2, bs, b), *x = NULL, *res = NULL, *rk = NULL,
              *sv = NULL;
  /* the f32 matrix of rank r is not exactly of rank r: the cutoff must see it as such */
  double rcond = dt == KILN_F32 ? 1e-5 : -1;
  /* without LAPACKE only the QR route runs, and singular values are refused */
  KOK(kiln_linalg_lstsq(harness_ctx(), ta, tb, rcond, &x, &res, &rk,
                        KILN_HAVE_LAPACKE ? &sv : NULL));
  double *hx = down(x), eps = eps_of(dt);
  int64_t hr = -1;
  KOK(kiln_tensor_download(rk, &hr, sizeof hr));
  ck_assert_int_eq(hr, (int64_t)rank);
  double e = normal_eq_err(a, hx, b, m, n, k, eps);
  EXPECT(e <= (nnull ? 1e3 : BOUND), "%s lstsq %zux%zu rank %zu: normal equations error %g",
         kiln_dtype_name(dt), m, n, rank, e);
  if (nnull) {
    double *p = malloc((nnull * k + 1) * sizeof *p);
    matmul_t(nullb, 1, hx, 0, p, nnull, n, k);
    double pe = fro(p, nnull * k) /
                (fro(nullb, n * nnull) * fro(hx, n * k) * (double)(m > n ? m : n) * eps);
    EXPECT(pe <= 100, "%s lstsq %zux%zu rank %zu: x not minimum-norm (%g)", kiln_dtype_name(dt), m,
           n, rank, pe);
    free(p);
  }
  if (m > n && rank == n) {
    ck_assert_int_eq(kiln_tensor_numel(res), (int64_t)k);
    double *hres = down(res), *r = malloc((m * k + 1) * sizeof *r);
    matmul_t(a, 0, hx, 0, r, m, n, k);
    for (size_t c = 0; c < k; c++) {
      double s = 0;
      for (size_t i = 0; i < m; i++)
        s += (r[i * k + c] - b[i * k + c]) * (r[i * k + c] - b[i * k + c]);
      EXPECT(fabs(hres[c] - s) <= 1e3 * eps * (s + fro(b, m * k)), "residual %zu: %g vs %g", c,
             hres[c], s);
    }
    free(hres);
    free(r);
  } else {
    ck_assert_int_eq(kiln_tensor_numel(res), 0);
  }
  if (sv) {
    double *hs = down(sv);
    for (size_t i = 1; i < (m < n ? m : n); i++)
      EXPECT(hs[i] <= hs[i - 1], "singular values not descending");
    free(hs);
  }
  free(hx);
  free(a);
  free(b);
  free(nullb);
  kiln_tensor_release(ta);
  kiln_tensor_release(tb);
  kiln_tensor_release(x);
  kiln_tensor_release(res);
  kiln_tensor_release(rk);
  kiln_tensor_release(sv);
}

START_TEST(lstsq)
{
  if (!KILN_HAVE_LAPACKE) {
    FOR_DTYPES(dt)
    {
      lstsq_case(dt, 20, 5, 3, 5);
      lstsq_case(dt, 41, 17, 1, 17);
      int64_t s35[2] = {3, 5};
      double v[15] = {0};
      kiln_tensor *t = up(dt, 2, s35, v), *x = NULL;
      KEXPECT(kiln_linalg_lstsq(harness_ctx(), t, t, -1, &x, NULL, NULL, NULL),
              KILN_ERR_UNSUPPORTED);
      ck_assert_ptr_null(x);
      kiln_tensor_release(t);
    }
    return;
  }
  FOR_DTYPES(dt)
  {
    lstsq_case(dt, 1, 1, 1, 1);
    lstsq_case(dt, 7, 7, 2, 7);
    lstsq_case(dt, 20, 5, 3, 5); /* tall full rank: QR route */
    lstsq_case(dt, 41, 17, 1, 17);
    lstsq_case(dt, 20, 6, 2, 3); /* tall rank-deficient: SVD route */
    lstsq_case(dt, 5, 11, 2, 5); /* wide: minimum norm */
    lstsq_case(dt, 6, 11, 1, 4); /* wide rank-deficient */
  }
}
END_TEST

/* ---------------------------------------------------------------- eigh */

/* ||V^T V - I|| bound of eigh (MRRR's vectors are less orthogonal than dstedc's). */
static double orth_bound = BOUND;

/* Checks w, V of the symmetric n x n a. */
static void
eigh_check(kiln_dtype dt, const double *a, const double *w, const double *v, size_t n,
           const double *known)
{
  double eps = eps_of(dt), na = fro(a, n * n);
  for (size_t i = 1; i < n; i++)
    EXPECT(w[i] >= w[i - 1], "eigenvalues not ascending at %zu", i);
  if (known)
    for (size_t i = 0; i < n; i++)
      EXPECT(fabs(w[i] - known[i]) <= 10 * (double)n * eps * na, "w[%zu] %g, expected %g", i, w[i],
             known[i]);
  if (!v)
    return;
  double *av = malloc((n * n + 1) * sizeof *av);
  matmul_t(a, 0, v, 0, av, n, n, n);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++)
      av[i * n + j] -= v[i * n + j] * w[j];
  double e = na == 0 ? fro(av, n * n) : fro(av, n * n) / (na * (double)n * eps);
  double oe = n ? orth_err(v, n, n) / ((double)n * eps) : 0;
  EXPECT(e <= BOUND, "%s eigh n %zu: ||A V - V W|| error %g", kiln_dtype_name(dt), n, e);
  EXPECT(oe <= orth_bound, "%s eigh n %zu: ||V^T V - I|| error %g", kiln_dtype_name(dt), n, oe);
  free(av);
}

/* eigh_case checks only the lower triangle's call with vectors (the blocked-reduction sweeps) */
static int eigh_quick;

static void
eigh_case(kiln_dtype dt, uint64_t batch, size_t n, const double *given, const double *known)
{
  size_t nn = n * n;
  if (!harness_fits(batch * nn))
    return;
  double *a = malloc((batch * nn + 1) * sizeof *a);
  for (uint64_t b = 0; b < batch; b++)
    for (size_t i = 0; i < n; i++)
      for (size_t j = 0; j <= i; j++)
        a[b * nn + i * n + j] = a[b * nn + j * n + i] = given ? given[i * n + j] : urand(-1, 1);
  int64_t shape[3];
  size_t nd = 0;
  if (batch != 1)
    shape[nd++] = (int64_t)batch;
  shape[nd++] = (int64_t)n;
  shape[nd++] = (int64_t)n;
  for (int uplo = eigh_quick; uplo < 2; uplo++) {
    /* the triangle not named holds NaN: never read */
    double *g = malloc((batch * nn + 1) * sizeof *g);
    memcpy(g, a, batch * nn * sizeof *g);
    for (uint64_t b = 0; b < batch; b++)
      for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
          if (uplo == 0 ? j < i : j > i)
            g[b * nn + i * n + j] = NAN;
    kiln_tensor *ta = up(dt, nd, shape, g), *w = NULL, *v = NULL, *w2 = NULL;
    for (size_t i = 0; i < batch * nn; i++) /* the reference sees the rounded values */
      if (!isnan(g[i]))
        a[i] = g[i];
    for (uint64_t b = 0; b < batch; b++)
      for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
          a[b * nn + i * n + j] = a[b * nn + j * n + i] =
              uplo == 0 ? a[b * nn + j * n + i] : a[b * nn + i * n + j];
    kiln_uplo u = uplo == 0 ? KILN_UPPER : KILN_LOWER;
    KOK(kiln_linalg_eigh(harness_ctx(), ta, u, &w, &v));
    if (!eigh_quick)
      KOK(kiln_linalg_eigh(harness_ctx(), ta, u, &w2, NULL));
    double *hw = down(w), *hv = down(v), *hw2 = down(eigh_quick ? w : w2);
    for (uint64_t b = 0; b < batch; b++) {
      eigh_check(dt, a + b * nn, hw + b * n, hv + b * nn, n, known);
      eigh_check(dt, a + b * nn, hw2 + b * n, NULL, n, NULL);
      for (size_t i = 0; i < n; i++)
        EXPECT(fabs(hw[b * n + i] - hw2[b * n + i]) <=
                   10 * (double)n * eps_of(dt) * (fro(a + b * nn, nn) + 1),
               "values-only eigenvalue %zu differs: %g vs %g", i, hw2[b * n + i], hw[b * n + i]);
    }
    free(g);
    free(hw);
    free(hv);
    free(hw2);
    kiln_tensor_release(ta);
    kiln_tensor_release(w);
    kiln_tensor_release(v);
    kiln_tensor_release(w2);
  }
  free(a);
}

START_TEST(eigh)
{
  if (!KILN_HAVE_LAPACKE)
    return;
  static const size_t ns[] = {0, 1, 2, 3, 5, 17, 33};
  FOR_DTYPES(dt)
  {
    for (size_t i = 0; i < (harness_small() ? 5u : sizeof ns / sizeof ns[0]); i++)
      eigh_case(dt, 1, ns[i], NULL, NULL);
    if (harness_fits(70 * 70))
      eigh_case(dt, 1, 70, NULL, NULL);
    if (harness_fits(160 * 160))
      eigh_case(dt, 1, 160, NULL, NULL);
    eigh_quick = harness_small(); /* the simulator: each matrix launches as an unbatched one */
    eigh_case(dt, 3, 6, NULL, NULL);
    eigh_quick = 0;
    /* repeated eigenvalues: Q diag(1, 1, 1, 2, 2, 5, -3, -3) Q^T */
    static const double lam[8] = {1, 1, 1, 2, 2, 5, -3, -3};
    static const double sorted[8] = {-3, -3, 1, 1, 1, 2, 2, 5};
    double *q = rand_orth(8), a[64];
    for (size_t i = 0; i < 8; i++)
      for (size_t j = 0; j < 8; j++) {
        double s = 0;
        for (size_t l = 0; l < 8; l++)
          s += q[i * 8 + l] * lam[l] * q[j * 8 + l];
        a[i * 8 + j] = s;
      }
    eigh_case(dt, 1, 8, a, sorted);
    /* diagonal and identity: reflectors with tau = 0 */
    double id[25] = {0};
    for (size_t i = 0; i < 5; i++)
      id[i * 5 + i] = 1;
    static const double ones[5] = {1, 1, 1, 1, 1};
    eigh_case(dt, 1, 5, id, ones);
    /* MRRR (the vectors of large orders) at small ones: LAPACK's test threshold 50, which
     * eigh's check enforces (dstemr alone exceeded it on a random 33 x 33 matrix here, 52.8,
     * and on the H200's host on the repeated eigenvalues above, 86 and 175: bench/h200/tdev.sh's
     * check step) */
    orth_bound = 50;
    kiln__linalg_spectral_test_mrrr(0);
    for (size_t i = 0; i < (harness_small() ? 0u : 5u); i++)
      eigh_case(dt, 1, ns[i], NULL, NULL);
    if (harness_fits(160 * 160))
      eigh_case(dt, 1, 160, NULL, NULL);
    /* then split over host threads (index ranges cut at the widest relative gaps): host
     * routines, to which the simulator adds nothing */
    if (!harness_small()) {
      eigh_case(dt, 1, 8, a, sorted);
      kiln__linalg_spectral_test_mrrr_threads(3);
      eigh_case(dt, 1, 8, a, sorted);
      eigh_case(dt, 1, 33, NULL, NULL);
    }
    kiln__linalg_spectral_test_mrrr_threads(3);
    if (harness_fits(160 * 160))
      eigh_case(dt, 1, 160, NULL, NULL);
    /* matrices whose tridiagonal splits: a diagonal one and a block-diagonal one (with
     * larrv below, dlarre's blocks come one after the other and are sorted afterwards) */
    static const double dv[12] = {3, -1, 2, 0.5, 7, -4, 2, 1, 0, -2, 5, 6};
    static const double dvs[12] = {-4, -2, -1, 0, 0.5, 1, 2, 2, 3, 5, 6, 7};
    double dg[144] = {0}, bd[21 * 21] = {0};
    for (size_t i = 0; i < 12; i++)
      dg[i * 12 + i] = dv[i];
    if (!harness_small()) /* host routines: the simulator adds nothing */
      eigh_case(dt, 1, 12, dg, dvs);
    static const size_t blk[4] = {0, 7, 12, 21}; /* blocks 7, 5, 9, shifted apart by 0.3 */
    for (size_t k = 0; k < 3; k++)
      for (size_t i = blk[k]; i < blk[k + 1]; i++)
        for (size_t j = blk[k]; j < blk[k + 1]; j++)
          bd[i * 21 + j] = cos((double)((i + 1) * (j + 1))) + (i == j ? 0.3 * (double)k : 0.0);
    if (!harness_small()) {
      eigh_case(dt, 1, 21, bd, NULL);
      /* dlarre once and dlarrv per thread (KILN_DEBUG_LINALG_HOST=larrv) */
      setenv("KILN_DEBUG_LINALG_HOST", "larrv", 1);
      eigh_case(dt, 1, 8, a, sorted);
      eigh_case(dt, 1, 33, NULL, NULL);
      eigh_case(dt, 1, 21, bd, NULL);
    }
    /* the reductions' launch shapes as KILN_DEBUG_LINALG_HOST sets them for timing: 3 chunks
     * of the partial sums, 32-lane sums, 16-lane fin groups (2 rows of 8 lanes) */
    setenv("KILN_DEBUG_LINALG_HOST", "nchunk=3,lsym=32,lfin=16", 1);
    eigh_quick = harness_small(); /* the simulator: the shapes are sytrd's, alike in every call */
    eigh_case(dt, 1, 33, NULL, NULL);
    eigh_quick = 0;
    unsetenv("KILN_DEBUG_LINALG_HOST");
    kiln__linalg_spectral_test_mrrr_threads(-1);
    kiln__linalg_spectral_test_mrrr(-1);
    orth_bound = BOUND;
    free(q);
  }
}
END_TEST

/* Q diag(lam) Q^T (n x n, Q random orthogonal). */
static double *
sym_with(size_t n, const double *lam)
{
  double *q = rand_orth(n), *a = malloc((n * n + 1) * sizeof *a);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      double t = 0;
      for (size_t l = 0; l < n; l++)
        t += q[i * n + l] * lam[l] * q[j * n + l];
      a[i * n + j] = t;
    }
  free(q);
  return a;
}

static int
cmp_double(const void *x, const void *y)
{
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/*
 * The blocked tridiagonal reduction (dlatrd panels and the trailing GEMM) at every block size
 * the tuner can pick (16 .. 256), the defaults among them (64 GPUs, 16 CPUs, 32 the host
 * route), and 4 and 8: n < nb, n = nb + 1 (one column past a panel, the last trailing
 * matrix 1 x 1), several panels with n not a multiple of nb; repeated eigenvalues and a graded
 * matrix (entries from 1 down to 2^-40, 2^-20 in f32) across panels.
 */
START_TEST(eigh_blocked)
{
  if (!KILN_HAVE_LAPACKE)
    return;
  static const int nbs[] = {4, 8, 16, 32, 64, 128, 256};
  FOR_DTYPES(dt)
  {
    for (size_t k = 0; k < sizeof nbs / sizeof nbs[0]; k++) {
      size_t nb = (size_t)nbs[k];
      if (harness_small() && nb != 4) /* the simulator: one block size, two panels and more */
        continue;
      hook_nb = nbs[k];
      route_for(dt);
      /* the simulator too: the other calls differ in sym_fill or in no back-transformation */
      eigh_quick = nb > 16 || harness_small();
      if (!harness_small())
        eigh_case(dt, 1, nb - 1, NULL, NULL);
      eigh_case(dt, 1, nb + 1, NULL, NULL);
      if (nb <= 16)
        eigh_case(dt, 1, 3 * nb + 5, NULL, NULL);
      if (nb == 8 || nb == 32) {
        /* repeated eigenvalues over several panels: 1 (n/2 times), 2, -3 */
        size_t n = nb == 8 ? 3 * nb + 2 : nb + 1;
        double *lam = malloc(n * sizeof *lam);
        for (size_t i = 0; i < n; i++)
          lam[i] = i < n / 2 ? 1 : i % 2 ? 2 : -3;
        double *a = sym_with(n, lam);
        qsort(lam, n, sizeof *lam, cmp_double);
        eigh_case(dt, 1, n, a, lam);
        free(a);
        free(lam);
        /* graded */
        a = rand_mat(n * n);
        double g = pow(2.0, (dt == KILN_F32 ? -20.0 : -40.0) / (double)(2 * n));
        for (size_t i = 0; i < n; i++)
          for (size_t j = 0; j <= i; j++)
            a[i * n + j] = a[j * n + i] = a[i * n + j] * pow(g, (double)(i + j));
        eigh_case(dt, 1, n, a, NULL);
        free(a);
      }
      eigh_quick = 0;
    }
  }
  hook_nb = -1;
}
END_TEST

/* ---------------------------------------------------------------- eig */

static void
eig_case(kiln_dtype dt, size_t n, const double *given)
{
  int64_t s2[2] = {(int64_t)n, (int64_t)n};
  double *a = rand_mat(n * n);
  if (given)
    memcpy(a, given, n * n * sizeof *a);
  kiln_tensor *ta = up(dt, 2, s2, a), *wr = NULL, *wi = NULL, *vr = NULL, *vi = NULL, *w2r = NULL,
              *w2i = NULL;
  KOK(kiln_linalg_eig(harness_ctx(), ta, &wr, &wi, &vr, &vi));
  KOK(kiln_linalg_eig(harness_ctx(), ta, &w2r, &w2i, NULL, NULL));
  double *hwr = down(wr), *hwi = down(wi), *hvr = down(vr), *hvi = down(vi), *h2r = down(w2r),
         *h2i = down(w2i);
  double eps = eps_of(dt), na = fro(a, n * n), r = 0;
  for (size_t j = 0; j < n; j++) {
    double nv = 0;
    for (size_t i = 0; i < n; i++) {
      /* (A v - w v)_i, complex */
      double re = 0, im = 0;
      for (size_t l = 0; l < n; l++) {
        re += a[i * n + l] * hvr[l * n + j];
        im += a[i * n + l] * hvi[l * n + j];
      }
      re -= hwr[j] * hvr[i * n + j] - hwi[j] * hvi[i * n + j];
      im -= hwr[j] * hvi[i * n + j] + hwi[j] * hvr[i * n + j];
      r += re * re + im * im;
      nv += hvr[i * n + j] * hvr[i * n + j] + hvi[i * n + j] * hvi[i * n + j];
    }
    EXPECT(fabs(sqrt(nv) - 1) <= 100 * (double)n * eps, "eigenvector %zu has norm %g", j, sqrt(nv));
    EXPECT(fabs(h2r[j] - hwr[j]) <= 100 * (double)n * eps * (na + 1) &&
               fabs(h2i[j] - hwi[j]) <= 100 * (double)n * eps * (na + 1),
           "values-only eigenvalue %zu differs", j);
  }
  double e = na == 0 ? sqrt(r) : sqrt(r) / (na * (double)n * eps);
  EXPECT(e <= 100, "%s eig n %zu: ||A V - V W|| error %g", kiln_dtype_name(dt), n, e);
  /* The complex form carries the same numbers, bit for bit. */
  kiln_tensor *cw = NULL, *cv = NULL, *rw = NULL, *rv = NULL;
  KOK(kiln_linalg_eig_complex(harness_ctx(), ta, &cw, &cv));
  kiln_dtype cdt = dt == KILN_F32 ? KILN_C64 : KILN_C128;
  EXPECT(kiln_tensor_dtype(cw) == cdt && kiln_tensor_dtype(cv) == cdt, "eig_complex gives %s",
         kiln_dtype_name(kiln_tensor_dtype(cw)));
  KOK(kiln_view_as_real(harness_ctx(), cw, &rw));
  KOK(kiln_view_as_real(harness_ctx(), cv, &rv));
  double *hcw = down(rw), *hcv = down(rv);
  for (size_t j = 0; j < n; j++)
    EXPECT(hcw[2 * j] == hwr[j] && hcw[2 * j + 1] == hwi[j], "eig_complex value %zu differs", j);
  for (size_t i = 0; i < n * n; i++)
    EXPECT(hcv[2 * i] == hvr[i] && hcv[2 * i + 1] == hvi[i], "eig_complex vector element %zu", i);
  /* values only, into a given tensor */
  kiln_tensor *cw2 = NULL;
  KOK(kiln_tensor_create(harness_ctx(), cdt, 1, (int64_t[]){(int64_t)n}, &cw2));
  kiln_tensor *cw2in = cw2;
  KOK(kiln_linalg_eig_complex(harness_ctx(), ta, &cw2, NULL));
  EXPECT(cw2 == cw2in, "a given w was replaced");
  free(hcw);
  free(hcv);
  kiln_tensor *call[5] = {cw, cv, rw, rv, cw2};
  for (int i = 0; i < 5; i++)
    kiln_tensor_release(call[i]);
  free(a);
  free(hwr);
  free(hwi);
  free(hvr);
  free(hvi);
  free(h2r);
  free(h2i);
  kiln_tensor *all[7] = {ta, wr, wi, vr, vi, w2r, w2i};
  for (int i = 0; i < 7; i++)
    kiln_tensor_release(all[i]);
}

START_TEST(eig)
{
  if (!KILN_HAVE_LAPACKE)
    return;
  FOR_DTYPES(dt)
  {
    static const size_t ns[] = {0, 1, 2, 7, 16};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
      eig_case(dt, ns[i], NULL);
    /* a rotation: eigenvalues cos t +- i sin t */
    double rot[4] = {0.6, -0.8, 0.8, 0.6};
    eig_case(dt, 2, rot);
    int64_t s2[2] = {2, 2};
    kiln_tensor *t = up(dt, 2, s2, rot), *wr = NULL, *wi = NULL;
    KOK(kiln_linalg_eig(harness_ctx(), t, &wr, &wi, NULL, NULL));
    double *hr = down(wr), *hi = down(wi);
    EXPECT(fabs(hr[0] - 0.6) < 1e-5 && fabs(hi[0] - 0.8) < 1e-5 && fabs(hi[1] + 0.8) < 1e-5,
           "rotation eigenvalues %g%+gi, %g%+gi", hr[0], hi[0], hr[1], hi[1]);
    free(hr);
    free(hi);
    kiln_tensor_release(t);
    kiln_tensor_release(wr);
    kiln_tensor_release(wi);
  }
}
END_TEST

/* ---------------------------------------------------------------- svd */

/* svd_case checks only the reduced call with vectors (the blocked-reduction sweeps) */
static int svd_quick;

static void
svd_case(kiln_dtype dt, uint64_t batch, size_t m, size_t n, const double *given,
         const double *known)
{
  int64_t shape[3];
  size_t nd = 0, mn = m * n, k = m < n ? m : n;
  if (batch != 1)
    shape[nd++] = (int64_t)batch;
  shape[nd++] = (int64_t)m;
  shape[nd++] = (int64_t)n;
  double *a = rand_mat(batch * mn);
  if (given)
    memcpy(a, given, mn * sizeof *a);
  kiln_tensor *ta = up(dt, nd, shape, a);
  double eps = eps_of(dt), mx = (double)(m > n ? m : n);
  for (int full = 0; full < 2 - svd_quick; full++) {
    kiln_tensor *u = NULL, *s = NULL, *vt = NULL, *s2 = NULL;
    KOK(kiln_linalg_svd(harness_ctx(), ta, full, &u, &s, &vt));
    if (!svd_quick)
      KOK(kiln_linalg_svd(harness_ctx(), ta, full, NULL, &s2, NULL));
    size_t uc = full ? m : k, vr = full ? n : k;
    double *hu = down(u), *hs = down(s), *hv = down(vt), *hs2 = down(svd_quick ? s : s2);
    for (uint64_t b = 0; b < batch; b++) {
      const double *A = a + b * mn, *U = hu + b * m * uc, *S = hs + b * k, *V = hv + b * vr * n;
      double na = fro(A, mn), *r = calloc(mn + 1, sizeof *r);
      for (size_t i = 0; i < k; i++) {
        EXPECT(S[i] >= 0 && (i == 0 || S[i] <= S[i - 1]), "s not descending and >= 0 at %zu", i);
        EXPECT(fabs(S[i] - hs2[b * k + i]) <= 10 * mx * eps * (S[0] + 1),
               "values-only s[%zu] differs", i);
        if (known)
          EXPECT(fabs(S[i] - known[i]) <= 10 * mx * eps * known[0], "s[%zu] %g, expected %g", i,
                 S[i], known[i]);
      }
      for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
          double t = 0;
          for (size_t l = 0; l < k; l++)
            t += U[i * uc + l] * S[l] * V[l * n + j];
          r[i * n + j] = A[i * n + j] - t;
        }
      double e = na == 0 ? fro(r, mn) : fro(r, mn) / (na * mx * eps);
      EXPECT(e <= BOUND, "%s svd %zux%zu full %d: ||A - U S V^T|| error %g", kiln_dtype_name(dt), m,
             n, full, e);
      double ue = m ? orth_err(U, m, uc) / ((double)m * eps) : 0;
      EXPECT(ue <= orth_bound, "%s svd %zux%zu: U not orthonormal (%g)", kiln_dtype_name(dt), m, n,
             ue);
      /* V^T's rows orthonormal: V (n x vr) columns */
      double *vv = malloc((n * vr + 1) * sizeof *vv);
      for (size_t i = 0; i < vr; i++)
        for (size_t j = 0; j < n; j++)
          vv[j * vr + i] = V[i * n + j];
      double ve = n ? orth_err(vv, n, vr) / ((double)n * eps) : 0;
      EXPECT(ve <= orth_bound, "%s svd %zux%zu: V not orthonormal (%g)", kiln_dtype_name(dt), m, n,
             ve);
      free(vv);
      free(r);
    }
    free(hu);
    free(hs);
    free(hv);
    free(hs2);
    kiln_tensor_release(u);
    kiln_tensor_release(s);
    kiln_tensor_release(vt);
    kiln_tensor_release(s2);
  }
  free(a);
  kiln_tensor_release(ta);
}

START_TEST(svd)
{
  if (!KILN_HAVE_LAPACKE)
    return;
  FOR_DTYPES(dt)
  {
    static const size_t sh[][2] = {{0, 0}, {3, 0}, {1, 1}, {13, 5}, {5, 13}, {0, 3}, {7, 7}};
    /* the small mode (oclgrind) keeps the first five and the special matrices below */
    size_t nsh = harness_small() ? 5 : sizeof sh / sizeof sh[0];
    for (size_t i = 0; i < nsh; i++)
      svd_case(dt, 1, sh[i][0], sh[i][1], NULL, NULL);
    if (!harness_small())
      svd_case(dt, 2, 4, 3, NULL, NULL);
    static const double sv[4] = {5, 2, 2, 0.5}; /* repeated singular values */
    double *a = with_svals(6, 4, sv);
    svd_case(dt, 1, 6, 4, a, sv);
    free(a);
    /* rank-deficient (zero singular values), the zero matrix, the identity */
    static const double sv0[5] = {3, 1, 0, 0, 0};
    a = with_svals(5, 8, sv0);
    svd_case(dt, 1, 5, 8, a, sv0);
    free(a);
    double z[30] = {0};
    static const double zs[5] = {0};
    if (!harness_small())
      svd_case(dt, 1, 6, 5, z, zs);
    for (size_t i = 0; i < 5; i++)
      z[i * 5 + i] = 1;
    static const double ones[5] = {1, 1, 1, 1, 1};
    svd_case(dt, 1, 6, 5, z, ones);
    if (!harness_small()) { /* several QR blocks: too slow for the simulator */
      svd_case(dt, 1, 45, 31, NULL, NULL);
      svd_case(dt, 1, 31, 45, NULL, NULL);
    }
    /* dbdsvdx split over host threads (index ranges cut at the widest relative gaps) */
    kiln__linalg_spectral_test_mrrr_threads(3);
    if (!harness_small()) { /* host routines: the simulator adds nothing */
      a = with_svals(6, 4, sv);
      svd_case(dt, 1, 6, 4, a, sv);
      free(a);
      svd_case(dt, 1, 45, 31, NULL, NULL);
    }
    svd_case(dt, 1, 7, 7, NULL, NULL);
    /* MRRR on the Golub-Kahan matrix (the default from order 512) at small orders: LAPACK's
     * MRRR test threshold 50 for U and V; zero singular values decline to dbdsqr */
    orth_bound = 50;
    kiln__linalg_spectral_test_mrrr(0);
    if (!harness_small()) { /* host routines: the simulator adds nothing */
      for (size_t i = 2; i < nsh; i++)
        svd_case(dt, 1, sh[i][0], sh[i][1], NULL, NULL);
      a = with_svals(6, 4, sv);
      svd_case(dt, 1, 6, 4, a, sv);
      free(a);
      a = with_svals(5, 8, sv0);
      svd_case(dt, 1, 5, 8, a, sv0);
      free(a);
      svd_case(dt, 1, 6, 5, z, ones);
      svd_case(dt, 1, 45, 31, NULL, NULL);
      svd_case(dt, 1, 31, 45, NULL, NULL);
      kiln__linalg_spectral_test_mrrr_threads(-1);
      svd_case(dt, 1, 45, 31, NULL, NULL);
      svd_case(dt, 2, 4, 3, NULL, NULL);
      /* graded singular values, 1 down to 1e-4 and 1e-6: the halves' norms decide whether
       * the Golub-Kahan vectors are kept (1e-4: norms^2 off 1/2 by about 2 in 2n eps units,
       * within the bound) or declined (1e-6: about 200), which takes dbdsvdx (one thread at
       * this order). Not 1e-8 and beyond: dbdsvdx's U came out at 23080 n eps for 1e-8 on the
       * H200 host's reference LAPACK (docs/linalg.md, known limits). */
      for (int g = 4; g <= 6; g += 2) {
        double gs[40];
        for (size_t i = 0; i < 40; i++)
          gs[i] = pow(10.0, -g * (double)i / 39);
        a = with_svals(48, 40, gs);
        svd_case(dt, 1, 48, 40, a, gs);
        free(a);
      }
    }
    kiln__linalg_spectral_test_mrrr_threads(-1);
    kiln__linalg_spectral_test_mrrr(-1);
    orth_bound = BOUND;
    /* the reductions' launch shapes as KILN_DEBUG_LINALG_HOST sets them for timing */
    setenv("KILN_DEBUG_LINALG_HOST", "nchunk=3,lsym=32,lfin=16", 1);
    svd_quick = harness_small(); /* the simulator: the shapes are gebrd's, alike in every call */
    svd_case(dt, 1, 21, 17, NULL, NULL);
    svd_quick = 0;
    unsetenv("KILN_DEBUG_LINALG_HOST");
  }
}
END_TEST

/*
 * The blocked bidiagonalisation (dlabrd panels and the trailing GEMM) at every block size the
 * tuner can pick (16 .. 256), the defaults among them, and 4 and 8: square, tall and wide
 * with N < nb, N = nb + 1 and several panels; repeated singular values across panels.
 */
START_TEST(svd_blocked)
{
  if (!KILN_HAVE_LAPACKE)
    return;
  static const int nbs[] = {4, 8, 16, 32, 64, 128, 256};
  FOR_DTYPES(dt)
  {
    for (size_t k = 0; k < sizeof nbs / sizeof nbs[0]; k++) {
      size_t nb = (size_t)nbs[k];
      if (harness_small() && nb != 4) /* the simulator: one block size, two panels and more */
        continue;
      /* 128 on f32, 256 on f64: the same kernel templates; both dtypes at 4 .. 64 (the defaults) */
      if (nb >= 128 && (dt == KILN_F32) != (nb == 128))
        continue;
      hook_nb = nbs[k];
      route_for(dt);
      svd_quick = nb > 16;
      svd_case(dt, 1, nb + 1, nb + 1, NULL, NULL);
      /* tall with N < nb (one partial panel) up to 32: past that a larger matrix, same path */
      if (!harness_small() && nb <= 32)
        svd_case(dt, 1, nb + 7, nb - 1, NULL, NULL);
      if (nb <= 16 && !harness_small()) {
        svd_case(dt, 1, 3 * nb + 5, 2 * nb + 3, NULL, NULL);
        svd_case(dt, 1, 2 * nb + 3, 3 * nb + 5, NULL, NULL);
      }
      if (nb == 8) {
        double sv[26];
        for (size_t i = 0; i < 26; i++)
          sv[i] = i < 10 ? 3 : i < 20 ? 1 : 0.25;
        double *a = with_svals(30, 26, sv);
        svd_case(dt, 1, 30, 26, a, sv);
        kiln__linalg_spectral_test_mrrr_threads(4);
        svd_case(dt, 1, 30, 26, a, sv);
        kiln__linalg_spectral_test_mrrr_threads(-1);
        free(a);
      }
      svd_quick = 0;
    }
  }
  hook_nb = -1;
}
END_TEST

/* Batched eigh and svd equal the unbatched calls bitwise (the same launches per matrix). */
/*
 * V^T C split into row chunks summed by a GEMV (GPUs with CLBlast split by default; forced
 * here): QR on both routes, eigh and svd (their back-transformations apply blocks too).
 */
START_TEST(split_products)
{
  static const size_t sh[][2] = {{65, 65}, {130, 70}, {70, 130}};
  kiln__linalg_spectral_test_split(3);
  hook_nb = 16;
  for (int route = KILN__LINALG_ROUTE_DEVICE; route <= KILN__LINALG_ROUTE_HOST; route++) {
    kiln__linalg_test_route(route);
    FOR_DTYPES(dt)
    {
      for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++)
        if (harness_fits(sh[i][0] * sh[i][1]))
          qr_case(dt, 1, sh[i][0], sh[i][1], NULL);
      if (route == KILN__LINALG_ROUTE_HOST && harness_fits(45 * 45)) {
        eigh_case(dt, 1, 40, NULL, NULL);
        svd_case(dt, 1, 45, 31, NULL, NULL);
      }
    }
  }
  kiln__linalg_spectral_test_split(-1);
  kiln__linalg_test_route(-1);
  hook_nb = -1;
}
END_TEST

START_TEST(eigh_svd_batched_bitwise)
{
  if (!KILN_HAVE_LAPACKE)
    return;
  FOR_DTYPES(dt)
  {
    /* the simulator: two matrices, each with its own launches as any batch's */
    const int nmat = harness_small() ? 2 : 3;
    int64_t s3[3] = {nmat, 9, 9}, s2[2] = {9, 9};
    double *a = rand_mat(3 * 81);
    for (int b = 0; b < 3; b++) /* symmetric, for eigh */
      for (int i = 0; i < 9; i++)
        for (int j = 0; j < i; j++)
          a[b * 81 + i * 9 + j] = a[b * 81 + j * 9 + i];
    kiln_tensor *ta = up(dt, 3, s3, a), *w = NULL, *v = NULL, *u = NULL, *s = NULL, *vt = NULL;
    KOK(kiln_linalg_eigh(harness_ctx(), ta, KILN_LOWER, &w, &v));
    KOK(kiln_linalg_svd(harness_ctx(), ta, 0, &u, &s, &vt));
    kiln_tensor *all[5] = {w, v, u, s, vt};
    double *h[5];
    for (int i = 0; i < 5; i++)
      h[i] = down(all[i]);
    static const size_t per[5] = {9, 81, 81, 9, 81};
    for (int b = 0; b < nmat; b++) {
      kiln_tensor *t1 = up(dt, 2, s2, a + b * 81), *o[5] = {NULL};
      KOK(kiln_linalg_eigh(harness_ctx(), t1, KILN_LOWER, &o[0], &o[1]));
      KOK(kiln_linalg_svd(harness_ctx(), t1, 0, &o[2], &o[3], &o[4]));
      for (int i = 0; i < 5; i++) {
        double *h1 = down(o[i]);
        EXPECT(memcmp(h1, h[i] + b * per[i], per[i] * sizeof *h1) == 0,
               "%s batched result %d of matrix %d differs", kiln_dtype_name(dt), i, b);
        free(h1);
        kiln_tensor_release(o[i]);
      }
      kiln_tensor_release(t1);
    }
    for (int i = 0; i < 5; i++) {
      free(h[i]);
      kiln_tensor_release(all[i]);
    }
    free(a);
    kiln_tensor_release(ta);
  }
}
END_TEST

/* ---------------------------------------------------------------- on top */

/* Largest absolute column sum of the n x n a. */
static double
norm_ref1(const double *a, size_t n)
{
  double best = 0;
  for (size_t j = 0; j < n; j++) {
    double s = 0;
    for (size_t i = 0; i < n; i++)
      s += fabs(a[i * n + j]);
    best = fmax(best, s);
  }
  return best;
}

START_TEST(pinv_rank_norms)
{
  if (!KILN_HAVE_LAPACKE)
    return;
  kiln_context *ctx = harness_ctx();
  FOR_DTYPES(dt)
  {
    double eps = eps_of(dt);
    /* pinv of a well-conditioned 7 x 4 and its Moore-Penrose conditions */
    static const double sv[4] = {4, 3, 2, 1};
    double *a = with_svals(7, 4, sv);
    int64_t s74[2] = {7, 4};
    kiln_tensor *ta = up(dt, 2, s74, a), *p = NULL, *out = NULL;
    KOK(kiln_linalg_pinv(ctx, ta, -1, &p));
    ck_assert_int_eq(kiln_tensor_dim(p, 0), 4);
    ck_assert_int_eq(kiln_tensor_dim(p, 1), 7);
    double *x = down(p), t1[28], t2[49], t3[28], t4[16];
    matmul_t(a, 0, x, 0, t2, 7, 4, 7);  /* A X */
    matmul_t(t2, 0, a, 0, t1, 7, 7, 4); /* A X A */
    for (size_t i = 0; i < 28; i++)
      t1[i] -= a[i];
    EXPECT(fro(t1, 28) / (fro(a, 28) * 7 * eps) <= 100, "||A X A - A|| %g", fro(t1, 28));
    matmul_t(x, 0, a, 0, t4, 4, 7, 4);  /* X A */
    matmul_t(t4, 0, x, 0, t3, 4, 4, 7); /* X A X */
    for (size_t i = 0; i < 28; i++)
      t3[i] -= x[i];
    EXPECT(fro(t3, 28) / (fro(x, 28) * 7 * eps) <= 100, "||X A X - X|| %g", fro(t3, 28));
    free(x);
    /* norms against the known singular values and host sums */
    struct {
      kiln_mnorm ord;
      double want;
    } cases[8] = {{KILN_MNORM_2, 4}, {KILN_MNORM_NEG2, 1}, {KILN_MNORM_NUC, 10}};
    double c1 = 0, cm1 = INFINITY, ri = 0, rmi = INFINITY;
    for (size_t j = 0; j < 4; j++) {
      double s = 0;
      for (size_t i = 0; i < 7; i++)
        s += fabs(a[i * 4 + j]);
      c1 = fmax(c1, s);
      cm1 = fmin(cm1, s);
    }
    for (size_t i = 0; i < 7; i++) {
      double s = 0;
      for (size_t j = 0; j < 4; j++)
        s += fabs(a[i * 4 + j]);
      ri = fmax(ri, s);
      rmi = fmin(rmi, s);
    }
    cases[3].ord = KILN_MNORM_FRO;
    cases[3].want = sqrt(30.0);
    cases[4].ord = KILN_MNORM_1;
    cases[4].want = c1;
    cases[5].ord = KILN_MNORM_NEG1;
    cases[5].want = cm1;
    cases[6].ord = KILN_MNORM_INF;
    cases[6].want = ri;
    cases[7].ord = KILN_MNORM_NEG_INF;
    cases[7].want = rmi;
    for (int i = 0; i < 8; i++) {
      KOK(kiln_linalg_matrix_norm(ctx, ta, cases[i].ord, &out));
      double *h = down(out);
      EXPECT(fabs(h[0] - cases[i].want) <= 100 * eps * cases[i].want, "norm %d: %g, expected %g",
             (int)cases[i].ord, h[0], cases[i].want);
      free(h);
      kiln_tensor_release(out);
      out = NULL;
    }
    KOK(kiln_linalg_cond(ctx, ta, KILN_MNORM_2, &out));
    double *h = down(out);
    EXPECT(fabs(h[0] - 4) <= 100 * eps * 4, "cond 2 is %g, expected 4", h[0]);
    free(h);
    kiln_tensor_release(out);
    out = NULL;
    KEXPECT(kiln_linalg_cond(ctx, ta, KILN_MNORM_1, &out), KILN_ERR_SHAPE);
    /* cond in the 1-norm of a square matrix: ||A||_1 ||A^-1||_1 with the host's inverse */
    static const double sq[9] = {4, 1, 0, 1, 3, 1, 0, 1, 2};
    static const double sqinv[9] = {5.0 / 18, -1.0 / 9, 1.0 / 18, -1.0 / 9, 4.0 / 9,
                                    -2.0 / 9, 1.0 / 18, -2.0 / 9, 11.0 / 18};
    double sqv[9];
    memcpy(sqv, sq, sizeof sqv);
    int64_t s33[2] = {3, 3};
    kiln_tensor *ts = up(dt, 2, s33, sqv);
    KOK(kiln_linalg_cond(ctx, ts, KILN_MNORM_1, &out));
    h = down(out);
    double want = 5.0 * norm_ref1(sqinv, 3);
    EXPECT(fabs(h[0] - want) <= 1e3 * eps * want, "cond 1 is %g, expected %g", h[0], want);
    free(h);
    kiln_tensor_release(out);
    out = NULL;
    /* singular: Inf */
    static const double sing[9] = {1, 2, 3, 2, 4, 6, 1, 1, 1};
    memcpy(sqv, sing, sizeof sqv);
    kiln_tensor *tsing = up(dt, 2, s33, sqv);
    KOK(kiln_linalg_cond(ctx, tsing, KILN_MNORM_INF, &out));
    h = down(out);
    EXPECT(isinf(h[0]) || h[0] > 1e6, "cond of a singular matrix is %g", h[0]);
    free(h);
    kiln_tensor_release(out);
    out = NULL;
    /* rank: 2 of the singular 3 x 3, 4 of the 7 x 4; a tolerance above s = 2 gives 2 */
    int64_t r = -1;
    KOK(kiln_linalg_matrix_rank(ctx, tsing, -1, &out));
    KOK(kiln_tensor_download(out, &r, sizeof r));
    ck_assert_int_eq(r, 2);
    kiln_tensor_release(out);
    out = NULL;
    KOK(kiln_linalg_matrix_rank(ctx, ta, -1, &out));
    KOK(kiln_tensor_download(out, &r, sizeof r));
    ck_assert_int_eq(r, 4);
    kiln_tensor_release(out);
    out = NULL;
    KOK(kiln_linalg_matrix_rank(ctx, ta, 2.5, &out));
    KOK(kiln_tensor_download(out, &r, sizeof r));
    ck_assert_int_eq(r, 2);
    kiln_tensor_release(out);
    free(a);
    kiln_tensor_release(ta);
    kiln_tensor_release(p);
    kiln_tensor_release(ts);
    kiln_tensor_release(tsing);
  }
}
END_TEST

/* Norms that need no LAPACK, and without LAPACKE the others refuse. */
START_TEST(norms_direct_and_unsupported)
{
  kiln_context *ctx = harness_ctx();
  int64_t s23[2] = {2, 3}, s0[2] = {0, 0};
  double v[6] = {1, -2, 3, -4, 5, -6}, z[1] = {0};
  kiln_tensor *t = up(KILN_F32, 2, s23, v), *e = up(KILN_F32, 2, s0, z), *out = NULL;
  KOK(kiln_linalg_matrix_norm(ctx, t, KILN_MNORM_INF, &out));
  double *h = down(out);
  ck_assert(fabs(h[0] - 15) < 1e-5);
  free(h);
  kiln_tensor_release(out);
  out = NULL;
  KOK(kiln_linalg_matrix_norm(ctx, e, KILN_MNORM_FRO, &out));
  h = down(out);
  ck_assert(h[0] == 0);
  free(h);
  kiln_tensor_release(out);
  out = NULL;
  if (!KILN_HAVE_LAPACKE) {
    kiln_tensor *o2 = NULL, *o3 = NULL;
    KEXPECT(kiln_linalg_svd(ctx, t, 0, &out, &o2, &o3), KILN_ERR_UNSUPPORTED);
    KEXPECT(kiln_linalg_eigh(ctx, e, KILN_LOWER, &out, NULL), KILN_ERR_UNSUPPORTED);
    KEXPECT(kiln_linalg_matrix_norm(ctx, t, KILN_MNORM_2, &out), KILN_ERR_UNSUPPORTED);
    KEXPECT(kiln_linalg_pinv(ctx, t, -1, &out), KILN_ERR_UNSUPPORTED);
    ck_assert_ptr_null(out);
  }
  kiln_tensor_release(t);
  kiln_tensor_release(e);
}
END_TEST

START_TEST(bad_input)
{
  kiln_context *ctx = harness_ctx();
  int64_t s23[2] = {2, 3}, s33[2] = {3, 3}, s3[1] = {3}, s43[2] = {4, 3};
  double v[12] = {1, 2, 3, 4, 5, 6, 7, 8, 10, 1, 1, 1};
  kiln_tensor *rect = up(KILN_F32, 2, s23, v), *sq = up(KILN_F32, 2, s33, v),
              *vec = up(KILN_F32, 1, s3, v), *b43 = up(KILN_F32, 2, s43, v), *out = NULL,
              *o2 = NULL, *o3 = NULL, *o4 = NULL, *ints = NULL;
  int32_t iv[9] = {0};
  KOK(kiln_tensor_from_host(ctx, KILN_I32, 2, s33, iv, &ints));
  KEXPECT(kiln_linalg_qr(ctx, vec, KILN_QR_REDUCED, &out, &o2), KILN_ERR_SHAPE);
  KEXPECT(kiln_linalg_qr(ctx, ints, KILN_QR_REDUCED, &out, &o2), KILN_ERR_DTYPE);
  KEXPECT(kiln_linalg_qr(ctx, sq, (kiln_qr_mode)9, &out, &o2), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_linalg_qr(ctx, sq, KILN_QR_REDUCED, NULL, &o2), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_linalg_qr(ctx, NULL, KILN_QR_REDUCED, &out, &o2), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_linalg_qr(ctx, sq, KILN_QR_REDUCED, &rect, &o2), KILN_ERR_SHAPE);
  KEXPECT(kiln_linalg_eigh(ctx, rect, KILN_LOWER, &out, NULL), KILN_ERR_SHAPE);
  KEXPECT(kiln_linalg_eigh(ctx, sq, (kiln_uplo)5, &out, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_linalg_eig(ctx, rect, &out, &o2, NULL, NULL), KILN_ERR_SHAPE);
  KEXPECT(kiln_linalg_eig(ctx, sq, &out, &o2, &o3, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_linalg_eig_complex(ctx, rect, &out, NULL), KILN_ERR_SHAPE);
  KEXPECT(kiln_linalg_eig_complex(ctx, ints, &out, NULL), KILN_ERR_DTYPE);
  KEXPECT(kiln_linalg_eig_complex(ctx, sq, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_linalg_eig_complex(ctx, sq, &vec, NULL), KILN_ERR_DTYPE);
  KEXPECT(kiln_linalg_svd(ctx, sq, 0, &out, &o2, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_linalg_svd(ctx, ints, 0, NULL, &o2, NULL), KILN_ERR_DTYPE);
  KEXPECT(kiln_linalg_lstsq(ctx, sq, b43, -1, &out, NULL, NULL, NULL), KILN_ERR_SHAPE);
  KEXPECT(kiln_linalg_lstsq(ctx, sq, vec, -1, &out, NULL, NULL, NULL), KILN_ERR_SHAPE);
  KEXPECT(kiln_linalg_lstsq(ctx, sq, sq, -1, &out, &sq, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_linalg_lstsq(ctx, sq, sq, NAN, &out, NULL, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_linalg_matrix_norm(ctx, sq, (kiln_mnorm)42, &out), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_linalg_cond(ctx, rect, KILN_MNORM_FRO, &out), KILN_ERR_SHAPE);
  KEXPECT(kiln_linalg_pinv(ctx, sq, NAN, &out), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_linalg_matrix_rank(ctx, vec, -1, &out), KILN_ERR_SHAPE);
  if (harness_has_fp64()) {
    kiln_tensor *d = up(KILN_F64, 2, s33, v);
    KEXPECT(kiln_linalg_lstsq(ctx, sq, d, -1, &out, NULL, NULL, NULL), KILN_ERR_DTYPE);
    kiln_tensor_release(d);
  }
  /* a result over its input */
  kiln_tensor *sqc = sq;
  KEXPECT(kiln_linalg_qr(ctx, sq, KILN_QR_R, NULL, &sqc), KILN_ERR_INVALID_ARGUMENT);
  /* NaN and Inf entries in eigh and svd: refused by LAPACKE at the host stage, named in the
   * message (not "did not converge"); out stays NULL */
  if (KILN_HAVE_LAPACKE) {
    double nv[9] = {1, 2, 3, 2, NAN, 4, 3, 4, 5}, iv2[9] = {1, 2, 3, 2, INFINITY, 4, 3, 4, 5};
    for (int k = 0; k < 2; k++) {
      kiln_tensor *bad = up(KILN_F32, 2, s33, k ? iv2 : nv);
      KEXPECT(kiln_linalg_eigh(ctx, bad, KILN_LOWER, &out, &o2), KILN_ERR_INVALID_ARGUMENT);
      ck_assert_msg(strstr(kiln_last_error(), "NaN or Inf") != NULL, "%s", kiln_last_error());
      KEXPECT(kiln_linalg_eigh(ctx, bad, KILN_LOWER, &out, NULL), KILN_ERR_INVALID_ARGUMENT);
      KEXPECT(kiln_linalg_svd(ctx, bad, 0, &out, &o2, &o3), KILN_ERR_INVALID_ARGUMENT);
      kiln_tensor_release(bad);
    }
  }
  ck_assert_ptr_null(out);
  ck_assert_ptr_null(o2);
  ck_assert_ptr_null(o3);
  ck_assert_ptr_null(o4);
  kiln_tensor_release(rect);
  kiln_tensor_release(sq);
  kiln_tensor_release(vec);
  kiln_tensor_release(b43);
  kiln_tensor_release(ints);
}
END_TEST

static void
reset_hooks(void)
{
  hook_nb = -1;
  hook_leaf = -1;
  orth_bound = BOUND;
  kiln__linalg_spectral_test_set(-1, -1, -1);
  kiln__linalg_spectral_test_mrrr(-1);
  kiln__linalg_spectral_test_mrrr_threads(-1);
  kiln__linalg_spectral_test_tdev(-1, -1, 0.0);
  kiln__linalg_spectral_test_eigh_check(-1);
  kiln__linalg_spectral_test_tr_panel(-1);
  kiln__linalg_test_route(-1);
  kiln__linalg_spectral_test_split(-1);
  kiln__linalg_spectral_test_nb2(-1);
  kiln__linalg_test_own_gemm_max(-1);
  kiln__linalg_test_pwg(-1);
  /* under the simulator (small mode) kiln's one-output-per-lane GEMM (the CLBlast route, which
   * KILN_DEBUG_NO_CLBLAST sends there): gemm_tile's 256-lane tiles cost 0.7-1 s a call
   * in oclgrind whatever the size (test_linalg's tile_gemm checks them there) */
  kiln__linalg_test_gemm(harness_small() ? KILN__LINALG_GEMM_CLBLAST : -1);
}

/*
 * eigh's tridiagonal stage on the device (bisection, a representation per group, twisted
 * factorizations; lib/ops/linalg_tridiag.c), forced at every order through the hook: random
 * matrices of orders 2 .. 301, batched, repeated eigenvalues and the identity (their close
 * eigenvalues on the host's dstemr, or the whole matrix when too many), a diagonal matrix
 * (T splits everywhere), a block-diagonal one, groups of 4, the mixed route (every gap below
 * half the mean on the host), and the checks' rejection (the host route after the device's).
 */
/*
 * eigh_case on the device tridiagonal stage, and that stage's own count of the matrices whose
 * vectors it gave: all of them when taken (each call with vectors), none otherwise (the host
 * route took them), so that a device route that always handed back would fail here.
 */
static void
tdev_case(kiln_dtype dt, uint64_t batch, size_t n, const double *given, const double *known,
          int taken)
{
  unsigned before = kiln__linalg_spectral_test_tdev_accepted();
  eigh_case(dt, batch, n, given, known);
  unsigned got = kiln__linalg_spectral_test_tdev_accepted() - before;
  unsigned want =
      taken && harness_fits(batch * n * n) ? (unsigned)batch * (eigh_quick ? 1u : 2u) : 0u;
  EXPECT(got == want, "%s eigh n %zu: the device stage gave %u matrices' vectors, expected %u",
         kiln_dtype_name(dt), n, got, want);
}

START_TEST(eigh_device)
{
  if (!KILN_HAVE_LAPACKE || !harness_has_fp64())
    return;
  /* the simulator (small mode) keeps what runs every kernel: 2, 5 and 17, a batch, groups of
   * 4 and the mixed route (36 s of oclgrind with the rest) */
  int small = harness_small();
  static const size_t ns[] = {2, 5, 17, 3, 33, 70};
  FOR_DTYPES(dt)
  {
    kiln__linalg_spectral_test_tdev(1, -1, 0.0);
    for (size_t i = 0; i < (small ? 3u : sizeof ns / sizeof ns[0]); i++)
      tdev_case(dt, 1, ns[i], NULL, NULL, 1);
    /* several groups (their seams, each group's Cholesky QR): the lower triangle only, at 301
     * in f64 (a second of the reduction per call on PoCL) */
    eigh_quick = 1;
    if (!small)
      tdev_case(dt, 1, dt == KILN_F64 ? 301 : 160, NULL, NULL, 1);
    eigh_quick = small;
    tdev_case(dt, small ? 2 : 3, small ? 6 : 12, NULL, NULL, 1);
    static const double lam[8] = {1, 1, 1, 2, 2, 5, -3, -3};
    static const double sorted[8] = {-3, -3, 1, 1, 1, 2, 2, 5};
    double *a = sym_with(8, lam);
    tdev_case(dt, 1, 8, a, sorted, 0); /* 7 of 8 too close: the host route */
    free(a);
    if (!small) { /* these run the same kernels as above */
      double id[25] = {0}, dg[144] = {0};
      for (size_t i = 0; i < 5; i++)
        id[i * 5 + i] = 1;
      static const double ones[5] = {1, 1, 1, 1, 1};
      tdev_case(dt, 1, 5, id, ones, 0);
      static const double dv[12] = {3, -1, 2, 0.5, 7, -4, 2.5, 1, 0, -2, 5, 6};
      static const double dvs[12] = {-4, -2, -1, 0, 0.5, 1, 2, 2.5, 3, 5, 6, 7};
      for (size_t i = 0; i < 12; i++)
        dg[i * 12 + i] = dv[i];
      tdev_case(dt, 1, 12, dg, dvs, 1);
      double bd[21 * 21] = {0};
      static const size_t blk[4] = {0, 7, 12, 21};
      for (size_t k = 0; k < 3; k++)
        for (size_t i = blk[k]; i < blk[k + 1]; i++)
          for (size_t j = blk[k]; j < blk[k + 1]; j++)
            bd[i * 21 + j] = cos((double)((i + 1) * (j + 1))) + (i == j ? 0.3 * (double)k : 0.0);
      tdev_case(dt, 1, 21, bd, NULL, 1);
    }
    kiln__linalg_spectral_test_tdev(1, 4, 0.0);
    tdev_case(dt, 1, small ? 17 : 33, NULL, NULL, 1);
    kiln__linalg_spectral_test_tdev(1, -1, 0.2);
    tdev_case(dt, 1, small ? 17 : 70, NULL, NULL, 1);
    if (!small) {
      kiln__linalg_spectral_test_tdev(1, -1, -1.0);
      tdev_case(dt, 1, 17, NULL, NULL, 0);
    }
    eigh_quick = 0;
    kiln__linalg_spectral_test_tdev(-1, -1, 0.0);
  }
}
END_TEST

/*
 * svd's host routines on graded singular values (1 down to 1e-3 .. 1e-5, several random U and
 * V; the Golub-Kahan MRRR forced at this order): neither the Golub-Kahan route's acceptance
 * (the halves' norms) nor dbdsvdx, which takes the matrices it declines, bounds U's and V's
 * orthogonality there (U reached 55, 393 and 65 n eps on such matrices). The device check of
 * Ub^T Ub and Vb^T Vb redoes those by the next routine, so every one meets LAPACK's MRRR
 * threshold (50).
 */
START_TEST(svd_checked)
{
  if (!KILN_HAVE_LAPACKE || harness_small())
    return;
  FOR_DTYPES(dt)
  {
    orth_bound = 50;
    kiln__linalg_spectral_test_mrrr(0);
    double gs[40];
    for (int r = 0; r < 15; r++) {
      for (size_t i = 0; i < 40; i++)
        gs[i] = pow(10.0, -(3.0 + (r % 5) * 0.5) * (double)i / 39);
      double *a = with_svals(48, 40, gs);
      svd_case(dt, 1, 48, 40, a, gs);
      free(a);
    }
    kiln__linalg_spectral_test_mrrr(-1);
    orth_bound = BOUND;
  }
}
END_TEST

/*
 * eigh's reduction with tr_symv's tiles taken 1, 2, 3 and 8 to a work-group (the built-in rule
 * picks 1 to 4 by order; 3 leaves short chunks at the strips' ends, 8 one chunk a strip here),
 * the trailing updates on the upper triangle (rtri, the GPU default) and on all of it (rfull):
 * 129 has 4 block rows of 32 (chunks of 3 leave one of 1), 34 a last block row of one row.
 */
START_TEST(eigh_reduction_tiles)
{
  if (!KILN_HAVE_LAPACKE)
    return;
  int small = harness_small();
  /* the simulator: chunks of two tiles at 38 (the other cases there run one tile a group) */
  static const char *const ks[] = {"symk=3,rtri", "symk=1,rfull", "symk=2", "symk=8,lfin=16,rtri"};
  FOR_DTYPES(dt)
  {
    eigh_quick = 1;
    for (size_t k = 0; k < (small ? 1u : 4u); k++) {
      setenv("KILN_DEBUG_LINALG_HOST", ks[k], 1);
      eigh_case(dt, 1, small ? 38 : 129, NULL, NULL);
      if (!small)
        eigh_case(dt, 2, 34, NULL, NULL);
    }
    unsetenv("KILN_DEBUG_LINALG_HOST");
    eigh_quick = 0;
  }
}
END_TEST

/*
 * eigh's orthogonality check of the host's Z, with its bound made tiny so that every host-route
 * matrix with vectors is redone (MRRR, then dstedc, then dsteqr): the results still meet the
 * usual bounds, and the hook's count shows the redo ran (without the check, nothing would).
 */
START_TEST(eigh_checked)
{
  if (!KILN_HAVE_LAPACKE)
    return;
  int small = harness_small();
  FOR_DTYPES(dt)
  {
    kiln__linalg_spectral_test_eigh_check(1e-3);
    for (int mrrr = 0; mrrr < 2; mrrr++) {
      kiln__linalg_spectral_test_mrrr(mrrr ? 0 : -1);
      unsigned before = kiln__linalg_spectral_test_eigh_redone();
      eigh_quick = 1;
      eigh_case(dt, 1, small ? 9 : 33, NULL, NULL);
      eigh_case(dt, 3, small ? 5 : 12, NULL, NULL); /* a batch: the check's batched GEMM */
      eigh_quick = 0;
      unsigned got = kiln__linalg_spectral_test_eigh_redone() - before;
      /* MRRR's matrices twice (dstedc, dsteqr), dstedc's once; each call's vectors */
      unsigned want = (mrrr ? 2u : 1u) * 4u;
      ck_assert_msg(got == want, "%s: eigh's check redid %u matrices, not %u", kiln_dtype_name(dt),
                    got, want);
    }
    kiln__linalg_spectral_test_mrrr(-1);
    kiln__linalg_spectral_test_eigh_check(-1);
  }
}
END_TEST

/*
 * eigh's reduction by the persistent panel kernel (tr_panel: one work-group on CPU devices, one
 * per compute unit on GPUs, which then meet at its grid barriers): orders 1 to 3, of one panel
 * and of several, tiles a task chosen by the kernel (several at 300 with one group) and fixed at 3 and
 * 1, both trailing updates, a batch, tiny and huge entries; the launch count shows the kernel
 * ran.
 */
START_TEST(eigh_panel_kernel)
{
  if (!KILN_HAVE_LAPACKE)
    return;
  int small = harness_small();
  static const char *const ks[] = {"", "symk=3,rtri", "symk=1,rfull"};
  kiln__linalg_spectral_test_tr_panel(1);
  FOR_DTYPES(dt)
  {
    eigh_quick = 1;
    unsigned before = kiln__linalg_spectral_test_tr_panel_launches();
    for (size_t k = 0; k < (small ? 1u : 3u); k++) {
      if (*ks[k])
        setenv("KILN_DEBUG_LINALG_HOST", ks[k], 1);
      else
        unsetenv("KILN_DEBUG_LINALG_HOST");
      eigh_case(dt, 1, small ? 38 : 129, NULL, NULL);
      if (!small) {
        eigh_case(dt, 2, 34, NULL, NULL);
        for (size_t n = 1; n <= 3; n++) /* panels of one column and none */
          eigh_case(dt, 1, n, NULL, NULL);
      }
    }
    if (!small)
      eigh_case(dt, 1, 300, NULL, NULL);
    unsetenv("KILN_DEBUG_LINALG_HOST");
    /* columns whose largest entry lies outside the range of tr_panel's unscaled sum of
     * squares (its scaled second pass) */
    const double scales[] = {dt == KILN_F32 ? 1e-10 : 1e-70, dt == KILN_F32 ? 1e10 : 1e70};
    const size_t ns = small ? 9 : 40;
    double *g = malloc(ns * ns * sizeof *g);
    for (size_t k = 0; k < 2; k++) {
      for (size_t e = 0; e < ns * ns; e++)
        g[e] = scales[k] * urand(-1, 1);
      eigh_case(dt, 1, ns, g, NULL);
    }
    free(g);
    eigh_quick = 0;
    ck_assert_msg(kiln__linalg_spectral_test_tr_panel_launches() > before,
                  "%s: eigh never launched tr_panel", kiln_dtype_name(dt));
  }
  kiln__linalg_spectral_test_tr_panel(-1);
}
END_TEST

/*
 * svd's bidiagonal SVD on the device (eigh's tridiagonal stage on the 2n Golub-Kahan matrix,
 * forced on any device by the stage's hook): random tall, wide and square matrices, repeated
 * singular values, and the cases it declines (zero singular values: the host routines) meet
 * the usual bounds; the count shows the device route served some.
 */
START_TEST(svd_gk_device)
{
  if (!KILN_HAVE_LAPACKE)
    return;
  int small = harness_small();
  kiln__linalg_spectral_test_tdev(1, -1, 0.0);
  FOR_DTYPES(dt)
  {
    unsigned before = kiln__linalg_spectral_test_gk_device();
    static const size_t sh[][2] = {{9, 6}, {6, 9}, {40, 33}, {70, 70}};
    for (size_t i = 0; i < (small ? 2u : 4u); i++)
      svd_case(dt, 1, sh[i][0], sh[i][1], NULL, NULL);
    static const double sv[4] = {5, 2, 2, 0.5}; /* repeated singular values */
    double *a = with_svals(6, 4, sv);
    svd_case(dt, 1, 6, 4, a, sv);
    free(a);
    static const double sv0[5] = {3, 1, 0, 0, 0}; /* declined: zero singular values */
    a = with_svals(5, 8, sv0);
    svd_case(dt, 1, 5, 8, a, sv0);
    free(a);
    if (!small)
      svd_case(dt, 2, 30, 20, NULL, NULL);
    ck_assert_msg(kiln__linalg_spectral_test_gk_device() > before,
                  "%s: svd never took the device's Golub-Kahan stage", kiln_dtype_name(dt));
  }
  kiln__linalg_spectral_test_tdev(-1, -1, 0.0);
}
END_TEST

/* A tcase of s with the suite's timeout and hooks' reset, in the order of the calls. */
static TCase *
spectral_case(Suite *s, const char *name)
{
  TCase *tc = tcase_create(name);
  tcase_set_timeout(tc, 300);
  tcase_add_checked_fixture(tc, reset_hooks, NULL);
  suite_add_tcase(s, tc);
  return tc;
}

static Suite *
spectral_suite(void)
{
  Suite *s = suite_create("linalg_spectral");
  TCase *tc = spectral_case(s, "all");
  tcase_add_test(tc, qr_backward_error);
  tcase_add_test(tc, qr_blocked);
  tcase_add_test(tc, qr_batched_bitwise);
  tcase_add_test(tc, qr_routes);
  tcase_add_test(tc, qr_two_level);
  tcase_add_test(tc, split_products);
  tcase_add_test(tc, lstsq);
  tcase_add_test(tc, eigh);
  tcase_add_test(tc, eigh_blocked);
  tcase_add_test(tc, eig);
  tcase_add_test(tc, svd);
  tcase_add_test(tc, svd_blocked);
  tcase_add_test(tc, eigh_svd_batched_bitwise);
  tcase_add_test(tc, pinv_rank_norms);
  tcase_add_test(tc, norms_direct_and_unsupported);
  tcase_add_test(tc, bad_input);
  /* a case of its own, so that a GPU run can take it alone (CK_RUN_CASE=grid) */
  tcase_add_test(spectral_case(s, "grid"), qr_grid_panel);
  /* the later cases last, so that the shared random sequence of the cases above stays as it
   * was */
  TCase *tdev = spectral_case(s, "tdev");
  tcase_add_test(tdev, eigh_device);
  tcase_add_test(tdev, svd_checked);
  TCase *tiles = spectral_case(s, "tiles");
  tcase_add_test(tiles, eigh_reduction_tiles);
  tcase_add_test(tiles, eigh_checked);
  tcase_add_test(spectral_case(s, "panel"), eigh_panel_kernel);
  tcase_add_test(spectral_case(s, "gkdev"), svd_gk_device);
  return s;
}

int
main(void)
{
  return harness_main(spectral_suite(), 1);
}
