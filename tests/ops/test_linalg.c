/*
 * linalg suite: LU (packed and unpacked), lu_solve, solve, inv, det, slogdet, rcond,
 * Cholesky, cholesky_solve, cholesky_inverse, trsm and trmm.
 *
 * Checks are backward errors, with eps = FLT_EPSILON or DBL_EPSILON (2^-23, 2^-52), norms
 * Frobenius, computed on the host in double from the device's results:
 *   LU        ||P A - L U|| / (||A|| max(m, n) eps)             <= 10, and |L| <= 1
 *   solve     ||A X - B|| / (||A|| ||X|| n eps)                  <= 10
 *   inv       ||A inv(A) - I|| / (||A|| ||inv(A)|| n eps)        <= 10
 *   Cholesky  ||A - L L^T|| / (||A|| n eps)                      <= 10
 *   trsm/trmm |got - want| <= 1e3 eps (1 + |want|) against a host reference (well-conditioned
 *             triangles: diagonal 2..3, off-diagonal entries / n)
 * Sizes: 0x0, 1x1, primes, rectangular LU (tall and wide), the small-kernel bound 64 and 65,
 * the blocked path at the block size and +-1 (and with the block forced to 16 and the small
 * path off, through the test hook), both routes (CLBlast and kiln's own kernels), Hilbert
 * matrices, singular and indefinite matrices, batches; batched results equal unbatched
 * ones bitwise; bad input. routes_and_blocks runs both panel routes (device kernels, host
 * LAPACKE: kiln__linalg_test_route) with every block size the linalg tuner family can pick.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kiln/linalg_spectral.h"
#include "ops/linalg_internal.h"
#include "ops/linalg_spectral_internal.h"
#include "ops/tuned.h"

#define EXPECT(cond, ...)        \
  do {                           \
    if (!(cond))                 \
      ck_abort_msg(__VA_ARGS__); \
  } while (0)

static const kiln_dtype dtypes[] = {KILN_F32, KILN_F64};
/*
 * Routes under test. CLBlast compiles each routine and precision on first use, which on
 * PoCL costs seconds; the suite runs CLBlast's GEMM, TRSM, SYRK and TRMM in f64 only and
 * f32 on kiln's own kernels (the CLBlast calls are the same code for both precisions).
 */
static int hook_nb = -1, hook_small = -1, hook_own = -1, hook_leaf = -1;
/* Panel route (enum kiln__linalg_route; -1 the tuner's choice: HOST where kiln has LAPACKE). */
static int hook_route = -1;

static void
set_hook(int nb, int small_max, int own, int leaf)
{
  hook_nb = nb;
  hook_small = small_max;
  hook_own = own;
  hook_leaf = leaf;
}

static int
route_for(kiln_dtype dt)
{
  kiln__linalg_test_set(hook_nb, hook_small, dt == KILN_F32 ? 1 : hook_own, hook_leaf);
  kiln__linalg_test_route(hook_route);
  /* f64 on CLBlast takes CLBlast for every GEMM (the small ones are kiln's, as f32 runs) */
  kiln__linalg_test_own_gemm_max(dt == KILN_F64 && hook_own <= 0 ? 0 : -1);
  return 1;
}

/*
 * The GEMM route a test starts on: the rule, but under the simulator (small mode) kiln's
 * one-output-per-lane kernel (the CLBlast route, which KILN_DEBUG_NO_CLBLAST sends there):
 * gemm_tile's 256-lane tiles cost 0.7-1 s a call in oclgrind whatever the size, most
 * of the simulator's time. tile_gemm and look_ahead take gemm_tile on purpose.
 */
static void
default_gemm(void)
{
  kiln__linalg_test_gemm(harness_small() ? KILN__LINALG_GEMM_CLBLAST : -1);
}

#define FOR_DTYPES(dt)                                                                      \
  for (size_t dt##_i = 0; dt##_i < 2; dt##_i++)                                             \
    for (int dt##_k = dtypes[dt##_i] != KILN_F64 || harness_has_fp64(); dt##_k; dt##_k = 0) \
      for (kiln_dtype dt = dtypes[dt##_i]; dt##_k && route_for(dt); dt##_k = 0)

/* One dtype, f32 (i 0) or f64 (i 1; f32 on devices without it), where a test rotates dtypes
 * over paths whose host logic is the same for both (each dtype's kernels are tested in full
 * elsewhere). */
#define FOR_DTYPE_AT(dt, i)                                                                  \
  for (int dt##_k = 1; dt##_k; dt##_k = 0)                                                   \
    for (kiln_dtype dt = dtypes[(i) && harness_has_fp64() ? 1 : 0]; dt##_k && route_for(dt); \
         dt##_k = 0)

#define BOUND 10.0

/*
 * Whether a test's costliest cases (gemm_tile, the blocked LU at the GPU block size) take
 * dtype dt under the simulator (small mode): f64 alone where the device has it (the kernels
 * index memory the same way for both, and a gemm_tile call costs 0.7-1 s in
 * oclgrind), every dtype otherwise.
 */
static int
small_dtype(kiln_dtype dt)
{
  return !harness_small() || dt == KILN_F64 || !harness_has_fp64();
}

static unsigned
block_size(void)
{
  kiln_device_info info;
  KOK(kiln_context_device_info(harness_ctx(), &info));
  return kiln__linalg_block(&info);
}

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
rand_mat(size_t n, double lo, double hi)
{
  double *v = malloc((n ? n : 1) * sizeof *v);
  for (size_t i = 0; i < n; i++)
    v[i] = urand(lo, hi);
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
      v[i] = (double)(float)v[i]; /* the reference sees what the device sees */
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

static int32_t *
down_i32(const kiln_tensor *t)
{
  int32_t *h = malloc(kiln_tensor_nbytes(t) + 4);
  KOK(kiln_tensor_download(t, h, kiln_tensor_nbytes(t)));
  return h;
}

static double
fro(const double *a, size_t n)
{
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += a[i] * a[i];
  return sqrt(s);
}

/* c = a (m x k) b (k x n) */
static void
matmul(const double *a, const double *b, double *c, size_t m, size_t k, size_t n)
{
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      double s = 0;
      for (size_t p = 0; p < k; p++)
        s += a[i * k + p] * b[p * n + j];
      c[i * n + j] = s;
    }
}

/* ||P A - L U|| / (||A|| max(m,n) eps) of one packed LU; also checks |L| <= 1. */
static double
lu_backward(const double *a, const double *lu, const int32_t *piv, size_t m, size_t n, double eps)
{
  size_t k = m < n ? m : n;
  double *pa = malloc((m * n + 1) * sizeof *pa);
  memcpy(pa, a, m * n * sizeof *pa);
  for (size_t j = 0; j < k; j++) {
    EXPECT(piv[j] >= (int32_t)j + 1 && piv[j] <= (int32_t)m, "pivot %zu is %d (m %zu)", j, piv[j],
           m);
    size_t p = (size_t)piv[j] - 1;
    for (size_t c = 0; c < n; c++) {
      double t = pa[j * n + c];
      pa[j * n + c] = pa[p * n + c];
      pa[p * n + c] = t;
    }
  }
  double r = 0, na = fro(a, m * n);
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      double s = 0;
      for (size_t p = 0; p <= (i < j ? i : j) && p < k; p++) {
        double l = p == i ? 1.0 : lu[i * n + p];
        if (p < i)
          EXPECT(fabs(l) <= 1.0, "|L[%zu][%zu]| = %g > 1", i, p, fabs(l));
        s += l * lu[p * n + j];
      }
      double d = pa[i * n + j] - s;
      r += d * d;
    }
  free(pa);
  size_t mx = m > n ? m : n;
  return na == 0 ? sqrt(r) : sqrt(r) / (na * (double)mx * eps);
}

/* One LU case: a [batch..., m, n] random (or given), checks every matrix. */
static void
lu_case(kiln_dtype dt, size_t nb, const int64_t *bd, size_t m, size_t n, const double *given)
{
  int64_t shape[4];
  size_t nd = 0;
  uint64_t batch = 1;
  for (size_t i = 0; i < nb; i++) {
    shape[nd++] = bd[i];
    batch *= (uint64_t)bd[i];
  }
  shape[nd++] = (int64_t)m;
  shape[nd++] = (int64_t)n;
  size_t mn = m * n, k = m < n ? m : n;
  if (!harness_fits(batch * mn))
    return;
  double *a = given ? malloc((batch * mn + 1) * 8) : rand_mat(batch * mn, -1, 1);
  if (given)
    memcpy(a, given, batch * mn * 8);
  kiln_tensor *ta = up(dt, nd, shape, a), *lu = NULL, *piv = NULL;
  KOK(kiln_linalg_lu_factor(harness_ctx(), ta, &lu, &piv));
  ck_assert_int_eq(kiln_tensor_dtype(piv), KILN_I32);
  ck_assert_int_eq(kiln_tensor_ndim(piv), nd - 1);
  double *h = down(lu);
  int32_t *p = down_i32(piv);
  for (uint64_t b = 0; b < batch; b++) {
    double e = lu_backward(a + b * mn, h + b * mn, p + b * k, m, n, eps_of(dt));
    EXPECT(e <= BOUND, "%s LU %zux%zu (batch %llu): backward error %g > %g", kiln_dtype_name(dt), m,
           n, (unsigned long long)b, e, BOUND);
  }
  free(a);
  free(h);
  free(p);
  kiln_tensor_release(ta);
  kiln_tensor_release(lu);
  kiln_tensor_release(piv);
}

static void
lu_sizes(kiln_dtype dt, unsigned nb)
{
  static const size_t sq[] = {0, 1, 2, 5, 13, 31, 32, 33, 64, 65};
  for (size_t i = 0; i < sizeof sq / sizeof sq[0]; i++)
    lu_case(dt, 0, NULL, sq[i], sq[i], NULL);
  size_t big[] = {nb - 1, nb, nb + 1, 2 * nb + 3, 97};
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
    if (harness_fits(big[i] * big[i]))
      lu_case(dt, 0, NULL, big[i], big[i], NULL);
  static const size_t rect[][2] = {{7, 3}, {3, 7}, {64, 1}, {1, 64}};
  for (size_t i = 0; i < sizeof rect / sizeof rect[0]; i++)
    lu_case(dt, 0, NULL, rect[i][0], rect[i][1], NULL);
  if (harness_fits(130 * 70)) {
    lu_case(dt, 0, NULL, 130, 70, NULL);
    lu_case(dt, 0, NULL, 70, 130, NULL);
  }
  int64_t bd[2] = {3, 2};
  lu_case(dt, 2, bd, 6, 6, NULL);
  lu_case(dt, 1, bd, 9, 4, NULL);
  int64_t zero = 0;
  lu_case(dt, 1, &zero, 4, 4, NULL);
}

START_TEST(lu_backward_error)
{
  FOR_DTYPES(dt)
  {
    lu_sizes(dt, block_size());
  }
}
END_TEST

/* The blocked path on small sizes: no small kernel, block 16, CLBlast and kiln's kernels. */
START_TEST(lu_blocked_paths)
{
  static const size_t sizes[][2] = {{15, 15}, {16, 16}, {17, 17}, {47, 47}, {40, 23}, {23, 40}};
  /* leaf -1: whole panels (the CPU default); 3: recursive panels down to 1-3 columns. The
   * small mode (oclgrind, no CLBlast: both routes are kiln's kernels) runs one route and
   * every other size. */
  hook_route = KILN__LINALG_ROUTE_DEVICE; /* the device panel's leaf widths */
  for (int own = harness_small(); own < 2; own++)
    for (int leaf = -1; leaf <= 3; leaf += 4) {
      set_hook(16, 0, own, leaf);
      FOR_DTYPES(dt)
      {
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i += harness_small() ? 2 : 1)
          lu_case(dt, 0, NULL, sizes[i][0], sizes[i][1], NULL);
        int64_t bd = 2;
        lu_case(dt, 1, &bd, 33, 33, NULL);
      }
    }
  /* the GPU defaults (block 64, leaf 16) on both routes (the small mode: one dtype) */
  for (int own = harness_small(); own < 2; own++) {
    set_hook(64, -1, own, 16);
    FOR_DTYPES(dt)
    {
      if (!small_dtype(dt))
        continue;
      lu_case(dt, 0, NULL, 97, 97, NULL);
      lu_case(dt, 0, NULL, 130, 70, NULL);
      /* more rows than lu_panel has lanes (256 on CPUs): each lane owns several rows */
      if (!harness_small())
        lu_case(dt, 0, NULL, 601, 37, NULL);
    }
  }
  set_hook(-1, -1, -1, -1);
  kiln__linalg_test_set(-1, -1, -1, -1);
}
END_TEST

static double *
hilbert(size_t n)
{
  double *h = malloc((n * n + 1) * sizeof *h);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++)
      h[i * n + j] = 1.0 / (double)(i + j + 1);
  return h;
}

START_TEST(lu_special)
{
  FOR_DTYPES(dt)
  {
    double *h = hilbert(10);
    lu_case(dt, 0, NULL, 10, 10, h);
    free(h);
    /* singular: zero column 2 -> LU still completes */
    double *s = rand_mat(36, -1, 1);
    for (int i = 0; i < 6; i++)
      s[i * 6 + 2] = 0;
    lu_case(dt, 0, NULL, 6, 6, s);
    free(s);
  }
}
END_TEST

/* The unpacked form: A = P L U with the right shapes. */
START_TEST(lu_unpacked)
{
  static const size_t sizes[][2] = {{5, 5}, {7, 3}, {3, 7}, {0, 3}, {70, 70}};
  /* the small mode (oclgrind) leaves out 70 x 70: lu_blocked_paths runs the blocked path */
  const size_t nsizes = sizeof sizes / sizeof sizes[0] - (harness_small() ? 1 : 0);
  FOR_DTYPES(dt)
  {
    for (size_t c = 0; c < nsizes; c++) {
      size_t m = sizes[c][0], n = sizes[c][1], k = m < n ? m : n;
      int64_t shape[3] = {2, (int64_t)m, (int64_t)n};
      double *a = rand_mat(2 * m * n, -1, 1);
      kiln_tensor *ta = up(dt, 3, shape, a), *P = NULL, *L = NULL, *U = NULL;
      KOK(kiln_linalg_lu(harness_ctx(), ta, &P, &L, &U));
      ck_assert_int_eq(kiln_tensor_dim(P, 2), (int64_t)m);
      ck_assert_int_eq(kiln_tensor_dim(L, 2), (int64_t)k);
      ck_assert_int_eq(kiln_tensor_dim(U, 1), (int64_t)k);
      double *hp = down(P), *hl = down(L), *hu = down(U);
      double *lu = malloc((m * n + 1) * 8), *plu = malloc((m * n + 1) * 8);
      for (size_t b = 0; b < 2; b++) {
        matmul(hl + b * m * k, hu + b * k * n, lu, m, k, n);
        matmul(hp + b * m * m, lu, plu, m, m, n);
        for (size_t i = 0; i < m * n; i++)
          plu[i] -= a[b * m * n + i];
        double e = fro(plu, m * n) /
                   ((fro(a + b * m * n, m * n) + 1e-300) * (double)(m > n ? m : n) * eps_of(dt));
        EXPECT(e <= BOUND, "%s lu %zux%zu: ||A - PLU|| error %g", kiln_dtype_name(dt), m, n, e);
        for (size_t i = 0; i < m; i++)
          for (size_t j = 0; j < k; j++)
            EXPECT(j > i || hl[b * m * k + i * k + j] == (i == j ? 1.0 : 0.0) || j < i,
                   "L is not unit lower");
      }
      free(hp);
      free(hl);
      free(hu);
      free(lu);
      free(plu);
      free(a);
      kiln_tensor_release(ta);
      kiln_tensor_release(P);
      kiln_tensor_release(L);
      kiln_tensor_release(U);
    }
  }
}
END_TEST

/* ||A X - B|| / (||A|| ||X|| n eps) per matrix. */
static double
solve_err(const double *a, const double *x, const double *b, size_t n, size_t k, double eps)
{
  double *r = malloc((n * k + 1) * 8);
  matmul(a, x, r, n, n, k);
  for (size_t i = 0; i < n * k; i++)
    r[i] -= b[i];
  double e = fro(r, n * k) / (fro(a, n * n) * fro(x, n * k) * (double)n * eps + 1e-300);
  free(r);
  return e;
}

static void
solve_case(kiln_dtype dt, size_t batch, size_t n, size_t k, int vec, const double *given)
{
  int64_t as[3] = {(int64_t)batch, (int64_t)n, (int64_t)n};
  int64_t bs[3] = {(int64_t)batch, (int64_t)n, (int64_t)k};
  if (!harness_fits(batch * n * (n + k)))
    return;
  double *a = rand_mat(batch * n * n, -1, 1), *b = rand_mat(batch * n * k, -1, 1);
  if (given)
    memcpy(a, given, n * n * 8);
  kiln_tensor *ta = up(dt, 3, as, a), *tb = up(dt, vec ? 2 : 3, bs, b), *x = NULL;
  KOK(kiln_linalg_solve(harness_ctx(), ta, tb, &x));
  ck_assert_int_eq(kiln_tensor_ndim(x), vec ? 2 : 3);
  double *hx = down(x);
  for (size_t i = 0; i < batch; i++) {
    double e = solve_err(a + i * n * n, hx + i * n * k, b + i * n * k, n, k, eps_of(dt));
    EXPECT(e <= BOUND, "%s solve n %zu k %zu: residual %g", kiln_dtype_name(dt), n, k, e);
  }
  /* lu_solve with both transposes from the same factor */
  kiln_tensor *lu = NULL, *piv = NULL, *x2 = NULL;
  if (!vec) {
    KOK(kiln_linalg_lu_factor(harness_ctx(), ta, &lu, &piv));
    for (int tr = 0; tr < 2; tr++) {
      KOK(kiln_linalg_lu_solve(harness_ctx(), lu, piv, tb, tr ? KILN_TRANS : KILN_NO_TRANS, &x2));
      double *h2 = down(x2), *at = malloc((n * n + 1) * 8);
      for (size_t i = 0; i < batch; i++) {
        for (size_t r = 0; r < n; r++)
          for (size_t c = 0; c < n; c++)
            at[r * n + c] = tr ? a[i * n * n + c * n + r] : a[i * n * n + r * n + c];
        double e = solve_err(at, h2 + i * n * k, b + i * n * k, n, k, eps_of(dt));
        EXPECT(e <= BOUND, "%s lu_solve trans %d n %zu: residual %g", kiln_dtype_name(dt), tr, n,
               e);
      }
      free(h2);
      free(at);
    }
  }
  free(a);
  free(b);
  free(hx);
  kiln_tensor_release(ta);
  kiln_tensor_release(tb);
  kiln_tensor_release(x);
  kiln_tensor_release(lu);
  kiln_tensor_release(piv);
  kiln_tensor_release(x2);
}

/*
 * lu_solve's row interchanges on their own: with the unit LU (L = U = I) the solution is B with
 * the pivots' swaps applied in order (NO_TRANS) or in reverse (TRANS). The pivots are arbitrary
 * (rows above the diagonal, the same row picked again and again), n spans several of laswp's
 * 64-interchange launches and k more and fewer columns than its work-groups.
 */
static void
pivot_case(kiln_dtype dt, size_t batch, size_t n, size_t k)
{
  int64_t as[3] = {(int64_t)batch, (int64_t)n, (int64_t)n},
          bs[3] = {(int64_t)batch, (int64_t)n, (int64_t)k}, ps[2] = {(int64_t)batch, (int64_t)n};
  double *eye = calloc(batch * n * n + 1, 8), *b = rand_mat(batch * n * k, -1, 1);
  int32_t *pv = malloc((batch * n + 1) * 4);
  for (size_t i = 0; i < batch; i++)
    for (size_t j = 0; j < n; j++) {
      eye[i * n * n + j * n + j] = 1;
      /* a third repeat row 3 or the last row, the rest anywhere */
      uint32_t r = (uint32_t)(urand(0, 3));
      pv[i * n + j] = (int32_t)(r == 0   ? (n > 3 ? 4 : 1)
                                : r == 1 ? n
                                         : 1 + (size_t)urand(0, (double)n - 0.5));
    }
  kiln_tensor *lu = up(dt, 3, as, eye), *tb = up(dt, 3, bs, b), *piv = NULL, *x = NULL;
  KOK(kiln_tensor_from_host(harness_ctx(), KILN_I32, 2, ps, pv, &piv));
  for (int tr = 0; tr < 2; tr++) {
    KOK(kiln_linalg_lu_solve(harness_ctx(), lu, piv, tb, tr ? KILN_TRANS : KILN_NO_TRANS, &x));
    double *hx = down(x), *want = malloc((batch * n * k + 1) * 8);
    memcpy(want, b, batch * n * k * 8);
    for (size_t i = 0; i < batch; i++)
      for (size_t t = 0; t < n; t++) {
        size_t j = tr ? n - 1 - t : t, q = (size_t)pv[i * n + j] - 1;
        for (size_t c = 0; c < k; c++) {
          double *w = want + i * n * k;
          double v = w[j * k + c];
          w[j * k + c] = w[q * k + c];
          w[q * k + c] = v;
        }
      }
    size_t bad = 0;
    for (size_t e = 0; e < batch * n * k; e++)
      bad += hx[e] != want[e];
    EXPECT(bad == 0,
           "%s lu_solve pivots only, trans %d, batch %zu n %zu k %zu: %zu elements moved wrong",
           kiln_dtype_name(dt), tr, batch, n, k, bad);
    free(hx);
    free(want);
    kiln_tensor_release(x);
    x = NULL;
  }
  free(eye);
  free(b);
  free(pv);
  kiln_tensor_release(lu);
  kiln_tensor_release(tb);
  kiln_tensor_release(piv);
}

START_TEST(solve_and_lu_solve)
{
  FOR_DTYPES(dt)
  {
    solve_case(dt, 1, 1, 1, 0, NULL);
    solve_case(dt, 3, 7, 2, 0, NULL);
    solve_case(dt, 2, 13, 1, 1, NULL);
    solve_case(dt, 1, 64, 65, 0, NULL);
    solve_case(dt, 1, 67, 3, 0, NULL);
    solve_case(dt, 1, 67, 1, 1, NULL);
    solve_case(dt, 2, 0, 3, 0, NULL);
    pivot_case(dt, 2, 150, 5);
    pivot_case(dt, 1, 67, 20);
    double *h = hilbert(8);
    solve_case(dt, 1, 8, 2, 0, h);
    free(h);
  }
}
END_TEST

static void
inv_case(kiln_dtype dt, size_t batch, size_t n)
{
  int64_t as[3] = {(int64_t)batch, (int64_t)n, (int64_t)n};
  if (!harness_fits(batch * n * n))
    return;
  double *a = rand_mat(batch * n * n, -1, 1);
  kiln_tensor *ta = up(dt, 3, as, a), *x = NULL;
  KOK(kiln_linalg_inv(harness_ctx(), ta, &x));
  double *hx = down(x), *r = malloc((n * n + 1) * 8);
  for (size_t i = 0; i < batch; i++) {
    matmul(a + i * n * n, hx + i * n * n, r, n, n, n);
    for (size_t j = 0; j < n; j++)
      r[j * n + j] -= 1.0;
    double e = fro(r, n * n) /
               (fro(a + i * n * n, n * n) * fro(hx + i * n * n, n * n) * (double)n * eps_of(dt));
    EXPECT(e <= BOUND, "%s inv n %zu: ||A inv(A) - I|| error %g", kiln_dtype_name(dt), n, e);
  }
  free(a);
  free(hx);
  free(r);
  kiln_tensor_release(ta);
  kiln_tensor_release(x);
}

START_TEST(inverse)
{
  FOR_DTYPES(dt)
  {
    inv_case(dt, 1, 1);
    inv_case(dt, 4, 9);
    inv_case(dt, 1, 64);
    inv_case(dt, 1, 71);
    inv_case(dt, 0, 3);
    /* in place */
    int64_t s2[2] = {2, 2};
    double v[4] = {4, 7, 2, 6};
    kiln_tensor *t = up(dt, 2, s2, v);
    KOK(kiln_linalg_inv(harness_ctx(), t, &t));
    double *h = down(t);
    EXPECT(fabs(h[0] - 0.6) < 1e-5 && fabs(h[1] + 0.7) < 1e-5 && fabs(h[2] + 0.2) < 1e-5 &&
               fabs(h[3] - 0.4) < 1e-5,
           "in-place inverse %g %g %g %g", h[0], h[1], h[2], h[3]);
    free(h);
    kiln_tensor_release(t);
  }
}
END_TEST

/* Host determinant by Gaussian elimination with partial pivoting in double. */
static double
host_det(const double *a0, size_t n)
{
  double *a = malloc((n * n + 1) * 8), d = 1;
  memcpy(a, a0, n * n * 8);
  for (size_t j = 0; j < n; j++) {
    size_t p = j;
    for (size_t i = j + 1; i < n; i++)
      if (fabs(a[i * n + j]) > fabs(a[p * n + j]))
        p = i;
    if (p != j) {
      d = -d;
      for (size_t c = 0; c < n; c++) {
        double t = a[j * n + c];
        a[j * n + c] = a[p * n + c];
        a[p * n + c] = t;
      }
    }
    d *= a[j * n + j];
    if (a[j * n + j] == 0)
      break;
    for (size_t i = j + 1; i < n; i++) {
      double l = a[i * n + j] / a[j * n + j];
      for (size_t c = j; c < n; c++)
        a[i * n + c] -= l * a[j * n + c];
    }
  }
  free(a);
  return d;
}

START_TEST(determinants)
{
  FOR_DTYPES(dt)
  {
    static const size_t ns[] = {0, 1, 4, 11, 66};
    for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
      size_t n = ns[c];
      if (!harness_fits(3 * n * n))
        continue;
      int64_t as[3] = {3, (int64_t)n, (int64_t)n};
      double *a = rand_mat(3 * n * n + 1, -1, 1);
      if (n >= 4) /* matrix 1 singular: two equal rows */
        memcpy(a + n * n + n, a + n * n, n * 8);
      kiln_tensor *ta = up(dt, 3, as, a), *det = NULL, *sg = NULL, *la = NULL;
      KOK(kiln_linalg_det(harness_ctx(), ta, &det));
      KOK(kiln_linalg_slogdet(harness_ctx(), ta, &sg, &la));
      ck_assert_int_eq(kiln_tensor_ndim(det), 1);
      double *hd = down(det), *hs = down(sg), *hl = down(la);
      for (size_t b = 0; b < 3; b++) {
        double want = host_det(a + b * n * n, n);
        double tol = 1e3 * eps_of(dt) * (double)(n + 1);
        if (n >= 4 && b == 1) {
          /* two equal rows: |det| is rounding noise, far below the det of a regular matrix */
          EXPECT(fabs(hd[b]) <= 1e-3 * fabs(hd[0]), "%s n %zu: singular det %g (regular %g)",
                 kiln_dtype_name(dt), n, hd[b], hd[0]);
          continue; /* rounding decides whether the pivot is exactly zero */
        }
        EXPECT(fabs(hd[b] - want) <= tol * fabs(want) + 1e-300, "%s det n %zu: %g, want %g",
               kiln_dtype_name(dt), n, hd[b], want);
        EXPECT(hs[b] == (want > 0 ? 1.0 : -1.0), "slogdet sign %g for det %g", hs[b], want);
        EXPECT(fabs(hl[b] - log(fabs(want))) <= tol * (1 + fabs(log(fabs(want)))),
               "logabsdet %g want %g", hl[b], log(fabs(want)));
      }
      free(a);
      free(hd);
      free(hs);
      free(hl);
      kiln_tensor_release(ta);
      kiln_tensor_release(det);
      kiln_tensor_release(sg);
      kiln_tensor_release(la);
    }
    /* exactly singular: det 0, sign 0, log -inf */
    int64_t s3[2] = {3, 3};
    double z[9] = {1, 2, 3, 2, 4, 6, 1, 0, 1};
    kiln_tensor *t = up(dt, 2, s3, z), *det = NULL, *sg = NULL, *la = NULL;
    KOK(kiln_linalg_det(harness_ctx(), t, &det));
    KOK(kiln_linalg_slogdet(harness_ctx(), t, &sg, &la));
    ck_assert_int_eq(kiln_tensor_ndim(det), 0);
    double *hd = down(det), *hs = down(sg), *hl = down(la);
    EXPECT(hd[0] == 0 && hs[0] == 0 && isinf(hl[0]) && hl[0] < 0, "singular: %g %g %g", hd[0],
           hs[0], hl[0]);
    free(hd);
    free(hs);
    free(hl);
    kiln_tensor_release(t);
    kiln_tensor_release(det);
    kiln_tensor_release(sg);
    kiln_tensor_release(la);
  }
}
END_TEST

/* Host inverse (Gauss-Jordan, partial pivoting) for rcond's reference. */
static void
host_inv(const double *a0, double *inv, size_t n)
{
  double *a = malloc((n * n + 1) * 8);
  memcpy(a, a0, n * n * 8);
  for (size_t i = 0; i < n * n; i++)
    inv[i] = i / n == i % n;
  for (size_t j = 0; j < n; j++) {
    size_t p = j;
    for (size_t i = j + 1; i < n; i++)
      if (fabs(a[i * n + j]) > fabs(a[p * n + j]))
        p = i;
    for (size_t c = 0; c < n; c++) {
      double t = a[j * n + c];
      a[j * n + c] = a[p * n + c];
      a[p * n + c] = t;
      t = inv[j * n + c];
      inv[j * n + c] = inv[p * n + c];
      inv[p * n + c] = t;
    }
    double d = a[j * n + j];
    for (size_t c = 0; c < n; c++) {
      a[j * n + c] /= d;
      inv[j * n + c] /= d;
    }
    for (size_t i = 0; i < n; i++)
      if (i != j) {
        double l = a[i * n + j];
        for (size_t c = 0; c < n; c++) {
          a[i * n + c] -= l * a[j * n + c];
          inv[i * n + c] -= l * inv[j * n + c];
        }
      }
  }
  free(a);
}

static double
norm1_host(const double *a, size_t n)
{
  double best = 0;
  for (size_t j = 0; j < n; j++) {
    double s = 0;
    for (size_t i = 0; i < n; i++)
      s += fabs(a[i * n + j]);
    best = s > best ? s : best;
  }
  return best;
}

START_TEST(condition_estimate)
{
  FOR_DTYPES(dt)
  {
    static const size_t ns[] = {1, 6, 30, 70};
    for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
      size_t n = ns[c];
      if (!harness_fits(3 * n * n))
        continue;
      int64_t as[3] = {2, (int64_t)n, (int64_t)n};
      double *a = rand_mat(2 * n * n, -1, 1);
      if (c == 1) { /* Hilbert in matrix 1: badly conditioned */
        double *h = hilbert(n);
        memcpy(a + n * n, h, n * n * 8);
        free(h);
      }
      kiln_tensor *ta = up(dt, 3, as, a), *r = NULL;
      KOK(kiln_linalg_rcond(harness_ctx(), ta, &r));
      double *hr = down(r), *inv = malloc((n * n + 1) * 8);
      for (size_t b = 0; b < 2; b++) {
        host_inv(a + b * n * n, inv, n);
        double want = 1.0 / (norm1_host(a + b * n * n, n) * norm1_host(inv, n));
        double slack = dt == KILN_F32 && c == 1 ? 1e3 : 1.0001; /* f32 Hilbert: rounding */
        EXPECT(hr[b] >= want / slack && hr[b] <= 10 * want * slack,
               "%s rcond n %zu: %g, exact %g (the estimate must lie in [exact, 10 exact])",
               kiln_dtype_name(dt), n, hr[b], want);
      }
      free(a);
      free(hr);
      free(inv);
      kiln_tensor_release(ta);
      kiln_tensor_release(r);
    }
    int64_t s3[2] = {3, 3};
    double z[9] = {1, 2, 3, 2, 4, 6, 1, 0, 1};
    kiln_tensor *t = up(dt, 2, s3, z), *r = NULL;
    KOK(kiln_linalg_rcond(harness_ctx(), t, &r));
    double *hr = down(r);
    EXPECT(hr[0] == 0, "singular rcond %g", hr[0]);
    free(hr);
    kiln_tensor_release(t);
    kiln_tensor_release(r);
  }
}
END_TEST

/* An SPD matrix: M M^T / n + I. */
static double *
spd(size_t n)
{
  double *m = rand_mat(n * n + 1, -1, 1), *a = malloc((n * n + 1) * 8);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      double s = 0;
      for (size_t p = 0; p < n; p++)
        s += m[i * n + p] * m[j * n + p];
      a[i * n + j] = s / (double)n + (i == j);
    }
  free(m);
  return a;
}

static void
chol_case(kiln_dtype dt, size_t batch, size_t n)
{
  int64_t as[3] = {(int64_t)batch, (int64_t)n, (int64_t)n};
  if (!harness_fits(batch * n * n))
    return;
  double *a = malloc((batch * n * n + 1) * 8);
  for (size_t b = 0; b < batch; b++) {
    double *s = spd(n);
    memcpy(a + b * n * n, s, n * n * 8);
    free(s);
  }
  kiln_tensor *ta = up(dt, 3, as, a);
  for (int upper = 0; upper < 2; upper++) {
    kiln_tensor *f = NULL, *x = NULL, *inv = NULL;
    KOK(kiln_linalg_cholesky(harness_ctx(), ta, upper ? KILN_UPPER : KILN_LOWER, &f));
    double *h = down(f), *l = malloc((n * n + 1) * 8), *r = malloc((n * n + 1) * 8);
    for (size_t b = 0; b < batch; b++) {
      const double *hb = h + b * n * n;
      for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
          double v = upper ? hb[j * n + i] : hb[i * n + j]; /* L = U^T */
          EXPECT(j <= i || v == 0, "%s cholesky %s: other triangle not zero at %zu,%zu",
                 kiln_dtype_name(dt), upper ? "upper" : "lower", i, j);
          l[i * n + j] = v;
        }
      for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
          double s = 0;
          for (size_t p = 0; p < n; p++)
            s += l[i * n + p] * l[j * n + p];
          r[i * n + j] = a[b * n * n + i * n + j] - s;
        }
      double e = n ? fro(r, n * n) / (fro(a + b * n * n, n * n) * (double)n * eps_of(dt)) : 0;
      EXPECT(e <= BOUND, "%s cholesky %s n %zu: ||A - L L^T|| error %g", kiln_dtype_name(dt),
             upper ? "upper" : "lower", n, e);
    }
    /* solve and inverse from the factor */
    KOK(kiln_linalg_cholesky_inverse(harness_ctx(), f, upper ? KILN_UPPER : KILN_LOWER, &inv));
    double *hi = down(inv);
    for (size_t b = 0; b < batch; b++) {
      matmul(a + b * n * n, hi + b * n * n, r, n, n, n);
      for (size_t j = 0; j < n; j++)
        r[j * n + j] -= 1.0;
      double e = n ? fro(r, n * n) / (fro(a + b * n * n, n * n) * fro(hi + b * n * n, n * n) *
                                      (double)n * eps_of(dt))
                   : 0;
      EXPECT(e <= BOUND, "%s cholesky_inverse n %zu: error %g", kiln_dtype_name(dt), n, e);
    }
    int64_t bs[3] = {(int64_t)batch, (int64_t)n, 3};
    double *bb = rand_mat(batch * n * 3, -1, 1);
    kiln_tensor *tb = up(dt, 3, bs, bb);
    KOK(kiln_linalg_cholesky_solve(harness_ctx(), f, upper ? KILN_UPPER : KILN_LOWER, tb, &x));
    double *hx = down(x);
    for (size_t b = 0; b < batch; b++) {
      double e = solve_err(a + b * n * n, hx + b * n * 3, bb + b * n * 3, n, 3, eps_of(dt));
      EXPECT(e <= BOUND, "%s cholesky_solve n %zu: residual %g", kiln_dtype_name(dt), n, e);
    }
    free(bb);
    free(hx);
    free(hi);
    free(h);
    free(l);
    free(r);
    kiln_tensor_release(tb);
    kiln_tensor_release(f);
    kiln_tensor_release(x);
    kiln_tensor_release(inv);
  }
  free(a);
  kiln_tensor_release(ta);
}

START_TEST(cholesky)
{
  FOR_DTYPES(dt)
  {
    unsigned nb = block_size();
    chol_case(dt, 1, 0);
    chol_case(dt, 1, 1);
    chol_case(dt, 3, 10);
    chol_case(dt, 1, 64);
    chol_case(dt, 1, 65);
    chol_case(dt, 1, 2 * nb + 1);
    chol_case(dt, 1, 3 * nb);
  }
  for (int route = KILN__LINALG_ROUTE_DEVICE; route <= KILN__LINALG_ROUTE_HOST; route++)
    for (int own = harness_small(); own < 2; own++) {
      hook_route = route;
      set_hook(16, 0, own, -1);
      FOR_DTYPES(dt)
      {
        chol_case(dt, 1, 15);
        chol_case(dt, 2, 33);
      }
    }
  hook_route = -1;
  set_hook(-1, -1, -1, -1);
  kiln__linalg_test_set(-1, -1, -1, -1);
}
END_TEST

/* Not positive definite: the status names the batch entry and the minor's order. */
START_TEST(cholesky_indefinite)
{
  static const size_t ns[] = {5, 70};
  for (int blocked = 0; blocked < 2; blocked++) {
    FOR_DTYPES(dt)
    {
      size_t n = ns[blocked];
      size_t bad = blocked ? 39 : 3; /* blocked: in the second block on CPUs (nb 32) */
      if (!harness_fits(2 * n * n))
        continue;
      int64_t as[3] = {2, (int64_t)n, (int64_t)n};
      double *a = calloc(2 * n * n, 8);
      for (size_t i = 0; i < n; i++) {
        a[i * n + i] = 1;
        a[n * n + i * n + i] = i == bad ? -1 : 1; /* matrix 1: minor of order bad + 1 */
      }
      kiln_tensor *t = up(dt, 3, as, a), *f = NULL;
      KEXPECT(kiln_linalg_cholesky(harness_ctx(), t, KILN_LOWER, &f),
              KILN_ERR_NOT_POSITIVE_DEFINITE);
      char want[32];
      snprintf(want, sizeof want, "order %zu", bad + 1);
      EXPECT(strstr(kiln_last_error(), "matrix 1") && strstr(kiln_last_error(), want),
             "message: %s", kiln_last_error());
      ck_assert_ptr_null(f);
      /* a NaN on the diagonal is not positive either */
      a[n * n + bad * n + bad] = 1;
      a[1 * n + 1] = NAN;
      kiln_tensor_release(t);
      t = up(dt, 3, as, a);
      KEXPECT(kiln_linalg_cholesky(harness_ctx(), t, KILN_UPPER, &f),
              KILN_ERR_NOT_POSITIVE_DEFINITE);
      EXPECT(strstr(kiln_last_error(), "matrix 0") && strstr(kiln_last_error(), "order 2"),
             "message: %s", kiln_last_error());
      free(a);
      kiln_tensor_release(t);
    }
  }
}
END_TEST

START_TEST(singular_solve_inv)
{
  static const size_t ns[] = {4, 80};
  for (size_t c = 0; c < 2; c++) {
    FOR_DTYPES(dt)
    {
      size_t n = ns[c];
      if (!harness_fits(3 * n * n))
        continue;
      int64_t as[2] = {(int64_t)n, (int64_t)n}, bs[1] = {(int64_t)n};
      double *a = rand_mat(n * n, 1, 2), *b = rand_mat(n, -1, 1);
      for (size_t i = 0; i < n; i++) /* column 2 zero: U[2][2] is exactly 0 */
        a[i * n + 2] = 0;
      kiln_tensor *ta = up(dt, 2, as, a), *tb = up(dt, 1, bs, b), *x = NULL;
      KEXPECT(kiln_linalg_solve(harness_ctx(), ta, tb, &x), KILN_ERR_SINGULAR);
      EXPECT(strstr(kiln_last_error(), "U[2][2]"), "message: %s", kiln_last_error());
      ck_assert_ptr_null(x);
      KEXPECT(kiln_linalg_inv(harness_ctx(), ta, &x), KILN_ERR_SINGULAR);
      ck_assert_ptr_null(x);
      free(a);
      free(b);
      kiln_tensor_release(ta);
      kiln_tensor_release(tb);
    }
  }
}
END_TEST

/* Host reference of trsm/trmm: op(A) from the uplo triangle (unit diagonal optional). */
static double
tri_at(const double *a, size_t n, int upper, int trans, int unit, size_t i, size_t j)
{
  size_t r = trans ? j : i, c = trans ? i : j;
  if (r == c)
    return unit ? 1.0 : a[r * n + c];
  if (upper ? c < r : c > r)
    return 0.0;
  return a[r * n + c];
}

static void
tri_case(kiln_dtype dt, size_t m, size_t n)
{
  for (int side = 0; side < 2; side++)
    for (int upper = 0; upper < 2; upper++)
      for (int trans = 0; trans < 2; trans++)
        for (int unit = 0; unit < 2; unit++) {
          size_t na = side ? n : m;
          int64_t as[2] = {(int64_t)na, (int64_t)na}, bs[2] = {(int64_t)m, (int64_t)n};
          double *a = rand_mat(na * na, -1.0 / (double)na, 1.0 / (double)na);
          for (size_t i = 0; i < na; i++)
            a[i * na + i] = urand(2, 3);
          /* alpha 1 on CLBlast takes kiln's GEMM-based solves (left: blocked; right: one
           * block up to 64), other alphas CLBlast's TRSM */
          double *b = rand_mat(m * n, -1, 1), alpha = (m + n) % 2 ? 1.5 : 1.0;
          kiln_tensor *ta = up(dt, 2, as, a), *tb = up(dt, 2, bs, b), *x = NULL, *y = NULL;
          kiln_uplo ul = upper ? KILN_UPPER : KILN_LOWER;
          KOK(kiln_trsm(harness_ctx(), side, ul, trans, unit, alpha, ta, tb, &x));
          KOK(kiln_trmm(harness_ctx(), side, ul, trans, unit, alpha, ta, tb, &y));
          double *hx = down(x), *hy = down(y);
          /* trmm: y = alpha op(A) b or alpha b op(A); trsm: op(A) x = alpha b (or x op(A)) */
          for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
              double sy = 0, sx = 0;
              for (size_t p = 0; p < na; p++) {
                if (side == 0) {
                  double t = tri_at(a, na, upper, trans, unit, i, p);
                  sy += t * b[p * n + j];
                  sx += t * hx[p * n + j];
                } else {
                  double t = tri_at(a, na, upper, trans, unit, p, j);
                  sy += b[i * n + p] * t;
                  sx += hx[i * n + p] * t;
                }
              }
              double tol = 1e3 * eps_of(dt);
              EXPECT(fabs(hy[i * n + j] - alpha * sy) <= tol * (1 + fabs(alpha * sy)),
                     "%s trmm side %d upper %d trans %d unit %d %zux%zu: %g want %g",
                     kiln_dtype_name(dt), side, upper, trans, unit, m, n, hy[i * n + j],
                     alpha * sy);
              EXPECT(fabs(sx - alpha * b[i * n + j]) <= tol * (1 + fabs(alpha * b[i * n + j])),
                     "%s trsm side %d upper %d trans %d unit %d %zux%zu: residual %g",
                     kiln_dtype_name(dt), side, upper, trans, unit, m, n,
                     sx - alpha * b[i * n + j]);
            }
          free(a);
          free(b);
          free(hx);
          free(hy);
          kiln_tensor_release(ta);
          kiln_tensor_release(tb);
          kiln_tensor_release(x);
          kiln_tensor_release(y);
        }
}

START_TEST(triangular)
{
  FOR_DTYPES(dt)
  {
    tri_case(dt, 5, 7);
    tri_case(dt, 1, 1);
    tri_case(dt, 0, 3);
    if (harness_fits(70 * 67))
      tri_case(dt, 70, 67);
    if (harness_fits(130 * 40) && !harness_small()) {
      tri_case(dt, 130, 40);
      tri_case(dt, 40, 130);
    }
  }
  /* batched, in place */
  int64_t as[3] = {2, 3, 3}, bs[3] = {2, 3, 1};
  double a[18] = {2, 0, 0, 1, 4, 0, 1, 1, 1, 1, 0, 0, 0, 2, 0, 0, 0, 4};
  double b[6] = {2, 6, 3, 1, 2, 4};
  kiln_tensor *ta = up(KILN_F32, 3, as, a), *tb = up(KILN_F32, 3, bs, b);
  KOK(kiln_trsm(harness_ctx(), KILN_LEFT, KILN_LOWER, KILN_NO_TRANS, KILN_NON_UNIT, 1.0, ta, tb,
                &tb));
  double *h = down(tb);
  static const double want[6] = {1, 1.25, 0.75, 1, 1, 1};
  for (int i = 0; i < 6; i++)
    EXPECT(fabs(h[i] - want[i]) < 1e-6, "batched trsm [%d] %g want %g", i, h[i], want[i]);
  free(h);
  kiln_tensor_release(ta);
  kiln_tensor_release(tb);
}
END_TEST

/* Batched results equal the unbatched ones bitwise (the small kernels take both). */
/* LU, inv, Cholesky and solve of nb matrices n x n at once equal those of each alone. */
static void
batched_case(kiln_dtype dt, size_t n, size_t nb)
{
  {
    {
      size_t ts = kiln_dtype_size(dt), mat = n * n * ts;
      if (!harness_fits(nb * n * n))
        return;
      int64_t as[3] = {(int64_t)nb, (int64_t)n, (int64_t)n}, one[2] = {(int64_t)n, (int64_t)n};
      double *a = malloc(nb * n * n * 8);
      for (size_t b = 0; b < nb; b++) {
        double *s = spd(n);
        memcpy(a + b * n * n, s, n * n * 8);
        free(s);
      }
      kiln_tensor *ta = up(dt, 3, as, a), *lu = NULL, *piv = NULL, *inv = NULL, *ch = NULL,
                  *x = NULL;
      KOK(kiln_linalg_lu_factor(harness_ctx(), ta, &lu, &piv));
      KOK(kiln_linalg_inv(harness_ctx(), ta, &inv));
      KOK(kiln_linalg_cholesky(harness_ctx(), ta, KILN_LOWER, &ch));
      KOK(kiln_linalg_solve(harness_ctx(), ta, ta, &x));
      void *blu = harness_download(lu), *binv = harness_download(inv), *bch = harness_download(ch),
           *bx = harness_download(x), *bp = harness_download(piv);
      for (size_t b = 0; b < nb; b += 2) {
        kiln_tensor *t1 = up(dt, 2, one, a + b * n * n), *l1 = NULL, *p1 = NULL, *i1 = NULL,
                    *c1 = NULL, *x1 = NULL;
        KOK(kiln_linalg_lu_factor(harness_ctx(), t1, &l1, &p1));
        KOK(kiln_linalg_inv(harness_ctx(), t1, &i1));
        KOK(kiln_linalg_cholesky(harness_ctx(), t1, KILN_LOWER, &c1));
        KOK(kiln_linalg_solve(harness_ctx(), t1, t1, &x1));
        void *u = harness_download(l1), *v = harness_download(i1), *w = harness_download(c1),
             *y = harness_download(x1), *q = harness_download(p1);
        EXPECT(memcmp(u, (char *)blu + b * mat, mat) == 0, "%s n %zu: batched LU differs",
               kiln_dtype_name(dt), n);
        EXPECT(memcmp(q, (char *)bp + b * n * 4, n * 4) == 0, "pivots differ");
        EXPECT(memcmp(v, (char *)binv + b * mat, mat) == 0, "%s n %zu: batched inv differs",
               kiln_dtype_name(dt), n);
        EXPECT(memcmp(w, (char *)bch + b * mat, mat) == 0, "%s n %zu: batched cholesky differs",
               kiln_dtype_name(dt), n);
        EXPECT(memcmp(y, (char *)bx + b * mat, mat) == 0, "%s n %zu: batched solve differs",
               kiln_dtype_name(dt), n);
        free(u);
        free(v);
        free(w);
        free(y);
        free(q);
        kiln_tensor_release(t1);
        kiln_tensor_release(l1);
        kiln_tensor_release(p1);
        kiln_tensor_release(i1);
        kiln_tensor_release(c1);
        kiln_tensor_release(x1);
      }
      free(blu);
      free(binv);
      free(bch);
      free(bx);
      free(bp);
      free(a);
      kiln_tensor_release(ta);
      kiln_tensor_release(lu);
      kiln_tensor_release(piv);
      kiln_tensor_release(inv);
      kiln_tensor_release(ch);
      kiln_tensor_release(x);
    }
  }
}

START_TEST(batched_bitwise)
{
  static const size_t ns[] = {13, 32, 64};
  FOR_DTYPES(dt)
  {
    for (size_t c = 0; c < 3; c++)
      batched_case(dt, ns[c], 5);
  }
}
END_TEST

/* A matrix with column col zero: solve and inv fail naming U[col][col]. */
static void
singular_case(kiln_dtype dt, size_t n, size_t col)
{
  if (!harness_fits(3 * n * n))
    return;
  int64_t as[2] = {(int64_t)n, (int64_t)n}, bs[1] = {(int64_t)n};
  double *a = rand_mat(n * n, 1, 2), *b = rand_mat(n, -1, 1);
  for (size_t i = 0; i < n; i++)
    a[i * n + col] = 0;
  kiln_tensor *ta = up(dt, 2, as, a), *tb = up(dt, 1, bs, b), *x = NULL, *lu = NULL, *piv = NULL;
  char want[64];
  snprintf(want, sizeof want, "U[%zu][%zu]", col, col);
  KEXPECT(kiln_linalg_solve(harness_ctx(), ta, tb, &x), KILN_ERR_SINGULAR);
  EXPECT(strstr(kiln_last_error(), want), "%s n %zu: message %s, want %s", kiln_dtype_name(dt), n,
         kiln_last_error(), want);
  ck_assert_ptr_null(x);
  KEXPECT(kiln_linalg_inv(harness_ctx(), ta, &x), KILN_ERR_SINGULAR);
  EXPECT(strstr(kiln_last_error(), want), "inv: message %s", kiln_last_error());
  ck_assert_ptr_null(x);
  /* lu_factor itself goes on past the zero pivot (LAPACK's info > 0) */
  KOK(kiln_linalg_lu_factor(harness_ctx(), ta, &lu, &piv));
  double *h = down(lu);
  int32_t *p = down_i32(piv);
  double e = lu_backward(a, h, p, n, n, eps_of(dt));
  EXPECT(e <= BOUND, "%s singular LU n %zu: backward error %g", kiln_dtype_name(dt), n, e);
  EXPECT(h[col * n + col] == 0, "U[%zu][%zu] = %g, not 0", col, col, h[col * n + col]);
  free(h);
  free(p);
  free(a);
  free(b);
  kiln_tensor_release(ta);
  kiln_tensor_release(tb);
  kiln_tensor_release(lu);
  kiln_tensor_release(piv);
}

/*
 * Both panel routes (kiln's device kernels, the host's LAPACKE) with every block size the
 * linalg tuner family can pick (16 .. 256) and 8, the small-matrix kernels off, on CLBlast
 * (f64) and kiln's own kernels: LU square, tall and wide, Cholesky (both triangles, with its
 * solve and inverse), singular matrices naming the pivot, batched equal to unbatched.
 */
START_TEST(routes_and_blocks)
{
  static const int nbs[] = {8, 16, 32, 64, 128, 256};
  static const size_t sq[] = {1, 7, 65, 130};
  for (int route = KILN__LINALG_ROUTE_DEVICE; route <= KILN__LINALG_ROUTE_HOST; route++)
    for (size_t ib = 0; ib < sizeof nbs / sizeof nbs[0]; ib++) {
      int nb = nbs[ib], small_nb = nb <= 32;
      if (harness_small() && (!small_nb || route == KILN__LINALG_ROUTE_DEVICE))
        continue;
      hook_route = route;
      for (int own = harness_small(); own < 2; own++) {
        set_hook(nb, 0, own, -1);
        FOR_DTYPES(dt)
        {
          if (own && dt == KILN_F32) /* f32 always runs kiln's kernels: done with own 0 */
            continue;
          /* CLBlast (f64, own 0) takes each block size on one panel route, alternating: its
           * updates are the same calls whichever route factors the panels. */
          if (!own && dt == KILN_F64 && (route - KILN__LINALG_ROUTE_DEVICE + (int)ib) % 2)
            continue;
          for (size_t i = small_nb ? 0 : 3; i < sizeof sq / sizeof sq[0]; i++) {
            lu_case(dt, 0, NULL, sq[i], sq[i], NULL);
            chol_case(dt, 1, sq[i]);
          }
          lu_case(dt, 0, NULL, 130, 70, NULL);
          lu_case(dt, 0, NULL, 70, 130, NULL);
          singular_case(dt, small_nb ? 65 : 130, small_nb ? 40 : 100);
          if (nb == 16)
            batched_case(dt, 65, 2);
        }
      }
    }
  /* the built-in split: GEMMs up to 2^12 multiply-adds on kiln's kernels, larger on CLBlast */
  if (harness_has_fp64() && !harness_small())
    for (int route = KILN__LINALG_ROUTE_DEVICE; route <= KILN__LINALG_ROUTE_HOST; route++) {
      hook_route = route;
      set_hook(16, 0, 0, -1);
      route_for(KILN_F64);
      kiln__linalg_test_own_gemm_max(1 << 12);
      lu_case(KILN_F64, 0, NULL, 130, 130, NULL);
      chol_case(KILN_F64, 1, 97);
      singular_case(KILN_F64, 65, 40);
    }
  kiln__linalg_test_own_gemm_max(-1);
  hook_route = -1;
  set_hook(-1, -1, -1, -1);
  kiln__linalg_test_set(-1, -1, -1, -1);
  kiln__linalg_test_route(-1);
}
END_TEST

/*
 * QR (reduced) of a random m x n matrix with every GEMM on gemm_tile: ||A - Q R|| and
 * ||Q^T Q - I|| within the bounds of tests/ops/test_linalg_spectral.c; parts > 0 forces the
 * split V^T C into that many row chunks (one batched gemm_tile and the sum).
 */
static void
qr_tile_case(kiln_dtype dt, size_t m, size_t n, int parts)
{
  size_t k = m < n ? m : n, mx = m > n ? m : n;
  int64_t as[2] = {(int64_t)m, (int64_t)n};
  double *a = rand_mat(m * n, -1, 1);
  kiln_tensor *ta = up(dt, 2, as, a), *q = NULL, *r = NULL;
  kiln__linalg_spectral_test_split(parts);
  KOK(kiln_linalg_qr(harness_ctx(), ta, KILN_QR_REDUCED, &q, &r));
  kiln__linalg_spectral_test_split(-1);
  double *hq = down(q), *hr = down(r), *qr = malloc((m * n + 1) * 8), *g = malloc((k * k + 1) * 8);
  matmul(hq, hr, qr, m, k, n);
  for (size_t i = 0; i < m * n; i++)
    qr[i] -= a[i];
  double e = fro(qr, m * n) / (fro(a, m * n) * (double)mx * eps_of(dt));
  EXPECT(e <= BOUND, "%s qr %zu x %zu (tile): ||A - QR|| error %g", kiln_dtype_name(dt), m, n, e);
  for (size_t i = 0; i < k; i++)
    for (size_t j = 0; j < k; j++) {
      double t = 0;
      for (size_t p = 0; p < m; p++)
        t += hq[p * k + i] * hq[p * k + j];
      g[i * k + j] = t - (i == j);
    }
  e = fro(g, k * k) / ((double)m * eps_of(dt));
  EXPECT(e <= BOUND, "%s qr %zu x %zu (tile): ||Q^T Q - I|| error %g", kiln_dtype_name(dt), m, n,
         e);
  free(a);
  free(hq);
  free(hr);
  free(qr);
  free(g);
  kiln_tensor_release(ta);
  kiln_tensor_release(q);
  kiln_tensor_release(r);
}

/*
 * Every update on kiln's gemm_tile (the linalg family's gemm=2) on both panel routes: sizes
 * around its 64 x 64 tiles and 16-deep k steps (block 16 and 64, tiles cut at the matrix
 * edge, the SYRK triangle across tiles), LU, Cholesky both triangles, solve, inverse and QR.
 */
START_TEST(tile_gemm)
{
  kiln__linalg_test_gemm(KILN__LINALG_GEMM_TILE);
  for (int route = KILN__LINALG_ROUTE_DEVICE; route <= KILN__LINALG_ROUTE_HOST; route++) {
    if (harness_small() && route == KILN__LINALG_ROUTE_HOST)
      continue;
    hook_route = route;
    for (int nb = 16; nb <= 64; nb *= 4) {
      set_hook(nb, 0, -1, nb == 16 ? 3 : -1);
      FOR_DTYPES(dt)
      {
        if (harness_small()) { /* the simulator: one small case of each op, one dtype */
          if (nb == 16 && small_dtype(dt)) {
            lu_case(dt, 0, NULL, 21, 18, NULL);
            chol_case(dt, 1, 20);
          }
          continue;
        }
        /* Each (dtype, block) on one panel route, alternating: the updates on gemm_tile are
         * the same calls whichever route factors the panels. */
        if (harness_has_fp64() &&
            (route - KILN__LINALG_ROUTE_DEVICE + (nb == 64) + (dt == KILN_F64)) % 2)
          continue;
        lu_case(dt, 0, NULL, 97, 97, NULL);
        lu_case(dt, 0, NULL, 150, 70, NULL);
        chol_case(dt, 1, 131);
        solve_case(dt, 1, 129, 5, 0, NULL);
        inv_case(dt, 1, 70);
      }
    }
  }
  /* QR on the device route, 16-column blocks with 3-column leaves, split and not */
  hook_route = KILN__LINALG_ROUTE_DEVICE;
  kiln__linalg_spectral_test_set(16, -1, 3);
  FOR_DTYPES(dt)
  {
    if (small_dtype(dt))
      qr_tile_case(dt, harness_small() ? 21 : 150, harness_small() ? 19 : 70, 0);
    if (!harness_small())
      qr_tile_case(dt, 70, 97, 3);
  }
  /* 128-column blocks: T too large for local memory (qr_larft in global memory) */
  kiln__linalg_spectral_test_set(128, -1, -1);
  FOR_DTYPES(dt)
  {
    if (!harness_small())
      qr_tile_case(dt, 200, 150, 0);
  }
  kiln__linalg_spectral_test_set(-1, -1, -1);
  default_gemm();
  hook_route = -1;
  set_hook(-1, -1, -1, -1);
  kiln__linalg_test_set(-1, -1, -1, -1);
  kiln__linalg_test_route(-1);
}
END_TEST

/* The blocked paths' cases of one dtype: LU square, tall and wide (the last panel narrower
 * than the block), Cholesky both triangles, solve, and inverse of inv_batch matrices. */
static void
blocked_ops(kiln_dtype dt, size_t inv_batch)
{
  lu_case(dt, 0, NULL, 97, 97, NULL);
  lu_case(dt, 0, NULL, 150, 70, NULL);
  lu_case(dt, 0, NULL, 70, 150, NULL);
  chol_case(dt, 1, 131);
  solve_case(dt, 1, 129, 5, 0, NULL);
  inv_case(dt, inv_batch, 70);
}

/*
 * The large updates on kiln's large GEMM kernel (the linalg family's gemm=3), here from 16 rows
 * and columns on (KILN__LINALG_LARGE_MIN is 256): its tiles cut at the matrix edge and across
 * the diagonal of the SYRK-shaped Cholesky update (tri 1 and 2: tiles wholly on the other side
 * skipped), plain and transposed views; LU square, tall and wide, Cholesky both triangles (also
 * with 128-column panels, chol_blocked's two levels), solve, inverse and QR on the device
 * route. The kernel must have run (its call counter moves).
 */
static void large_updates_cases(int form);

START_TEST(large_gemm_updates)
{
  /* Not under the simulator (small mode): there each large-kernel launch costs seconds, and
   * test_blas's gemm_large_kernel checks the kernel's memory accesses (the triangle only
   * skips groups and stores). */
  if (harness_small())
    return;
  kiln__linalg_test_gemm(KILN__LINALG_GEMM_LARGE);
  kiln__linalg_test_large_min(16);
  hook_route = KILN__LINALG_ROUTE_DEVICE;
  /* Both of the large route's kernels on every device: gemm_large.cl, then gemm_cpu.cl. */
  for (int form = 1; form <= 2; form++) {
    kiln__blas_test_large_form(form);
    large_updates_cases(form);
  }
  kiln__blas_test_large_form(0);
  hook_route = -1;
  kiln__linalg_test_large_min(-1);
  default_gemm();
  kiln__linalg_test_set(-1, -1, -1, -1);
  kiln__linalg_test_route(-1);
}
END_TEST

/* large_gemm_updates' cases, in the large route's kernel form (1 gemm_large.cl, 2 gemm_cpu.cl). */
static void
large_updates_cases(int form)
{
  uint64_t calls = kiln__blas_test_large_calls(), cpu = kiln__blas_test_cpu_calls();
  /* The routing of the updates to the large kernel is host logic, the same for f32 and f64
   * (test_blas's gemm_large_kernel checks the kernel in both): each case below takes one
   * dtype, the two alternating. */
  for (int nb = 16; nb <= 64; nb *= 4) {
    set_hook(nb, 0, -1, nb == 16 ? 3 : -1);
    FOR_DTYPE_AT(dt, nb == 64)
    {
      blocked_ops(dt, 1);
    }
  }
  /* Cholesky's two levels: 128-column panels of chol_inv blocks, a SYRK 128 deep per panel */
  set_hook(128, 0, -1, -1);
  FOR_DTYPE_AT(dt, 0)
  {
    chol_case(dt, 1, 300);
  }
  /* and with look-ahead: each next panel (its two 64-column steps) on the second queue while
   * the SYRK of the one before runs, the last one 44 columns */
  kiln__linalg_test_ahead(2);
  FOR_DTYPE_AT(dt, 1)
  {
    chol_case(dt, 1, 300);
  }
  kiln__linalg_test_ahead(-1);
  set_hook(-1, -1, -1, -1);
  /* the solves' two levels: outer blocks of 128 rows (two 64-row steps, the last block
   * partial), then the rows below updated 128 deep, both directions and transposes */
  kiln__linalg_test_solve_nb(128);
  FOR_DTYPE_AT(dt, 1)
  {
    inv_case(dt, 1, 300);
  }
  FOR_DTYPE_AT(dt, 0)
  {
    solve_case(dt, 1, 300, 130, 0, NULL);
  }
  kiln__linalg_test_solve_nb(-1);
  kiln__linalg_spectral_test_set(16, -1, 3);
  FOR_DTYPE_AT(dt, 0)
  {
    qr_tile_case(dt, 150, 70, 0);
  }
  /* QR in two levels: 64-column outer blocks of 16-column panels, their T assembled, the
   * outer products on the large kernel */
  kiln__linalg_spectral_test_nb2(64);
  FOR_DTYPE_AT(dt, 1)
  {
    qr_tile_case(dt, 150, 70, 3); /* V^T C in three row chunks, each on the large kernel */
  }
  FOR_DTYPE_AT(dt, 0)
  {
    qr_tile_case(dt, 70, 150, 0);
  }
  kiln__linalg_spectral_test_nb2(-1);
  kiln__linalg_spectral_test_set(-1, -1, -1);
  ck_assert_uint_gt(kiln__blas_test_large_calls(), calls);
  /* the CPU kernel ran exactly when it was asked for */
  ck_assert_int_eq(kiln__blas_test_cpu_calls() > cpu, form == 2);
}

/*
 * Look-ahead (the linalg family's ahead=2) on the device route: the next panel on the second
 * queue, on CLBlast and on gemm_tile, square, tall and wide LU (the last panel narrower than
 * the block), Cholesky both triangles, solve and inverse.
 */
START_TEST(look_ahead)
{
  kiln__linalg_test_ahead(2);
  hook_route = KILN__LINALG_ROUTE_DEVICE;
  for (int g = KILN__LINALG_GEMM_CLBLAST; g <= KILN__LINALG_GEMM_TILE; g++) {
    kiln__linalg_test_gemm(g);
    set_hook(16, 0, -1, g == KILN__LINALG_GEMM_TILE ? 3 : -1);
    FOR_DTYPES(dt)
    {
      if (g == KILN__LINALG_GEMM_CLBLAST && dt == KILN_F32) /* f32 runs kiln's kernels here */
        continue;
      if (harness_small()) { /* the simulator: one small case of each op, one dtype */
        if (small_dtype(dt)) {
          lu_case(dt, 0, NULL, 21, 18, NULL);
          chol_case(dt, 1, 20);
        }
        continue;
      }
      blocked_ops(dt, 2);
    }
  }
  default_gemm();
  kiln__linalg_test_ahead(-1);
  hook_route = -1;
  set_hook(-1, -1, -1, -1);
  kiln__linalg_test_set(-1, -1, -1, -1);
  kiln__linalg_test_route(-1);
}
END_TEST

/* LU of a square, a tall and a wide matrix, a batch of two b x b and a singular matrix. */
static void
lu_shapes(kiln_dtype dt, size_t b)
{
  lu_case(dt, 0, NULL, 97, 97, NULL);
  lu_case(dt, 0, NULL, 130, 70, NULL);
  lu_case(dt, 0, NULL, 70, 130, NULL);
  int64_t bd = 2;
  lu_case(dt, 1, &bd, b, b, NULL);
  singular_case(dt, 65, 40);
}

/*
 * lu_panel_grid (the linalg family's pwg > 1; on CPUs it runs as one work-group, on GPUs over
 * up to pwg compute units): square, tall, wide and batched LU, a zero pivot, a NaN pivot
 * candidate, panels wider than the kernel (the recursion swapping the columns outside its
 * leaf), more rows than its lanes (lu_panel for those panels), look-ahead, solve and inverse.
 */
START_TEST(lu_grid_panel)
{
  /* Its groups exchange through global memory across work-items by design (volatile loads
   * after a global fence and a local barrier), which the simulator's race detector reports. */
  if (harness_small())
    return;
  kiln__linalg_test_pwg(2);
  hook_route = KILN__LINALG_ROUTE_DEVICE;
  for (int own = harness_small(); own < 2; own++) {
    set_hook(16, 0, own, -1);
    FOR_DTYPES(dt)
    {
      if (own && dt == KILN_F32)
        continue;
      lu_shapes(dt, 33);
      /* row 1's NaN in column 0 is never the pivot (row 2's 7 is) */
      double a[9] = {1, 2, 3, NAN, 5, 6, 7, 8, 10};
      int64_t s3[2] = {3, 3};
      kiln_tensor *t = up(dt, 2, s3, a), *lu = NULL, *piv = NULL;
      KOK(kiln_linalg_lu_factor(harness_ctx(), t, &lu, &piv));
      int32_t *p = down_i32(piv);
      ck_assert_int_eq(p[0], 3);
      free(p);
      kiln_tensor_release(t);
      kiln_tensor_release(lu);
      kiln_tensor_release(piv);
      if (harness_small())
        continue;
      solve_case(dt, 1, 129, 5, 0, NULL);
      inv_case(dt, 2, 70);
    }
  }
  if (!harness_small()) {
    /* blocks of 100 and 160: the grid kernel's 64-column leaves inside a wider panel */
    for (int nb = 100; nb <= 160; nb += 60) {
      set_hook(nb, 0, -1, -1);
      FOR_DTYPES(dt)
      {
        lu_case(dt, 0, NULL, 150, 150, NULL);
        lu_case(dt, 0, NULL, 200, 170, NULL);
      }
    }
    /* 600 rows: more than one work-group's lanes, those panels on lu_panel */
    set_hook(32, 0, -1, -1);
    FOR_DTYPES(dt)
    {
      lu_case(dt, 0, NULL, 600, 40, NULL);
    }
    kiln__linalg_test_ahead(2);
    FOR_DTYPES(dt)
    {
      lu_case(dt, 0, NULL, 150, 97, NULL);
    }
  }
  kiln__linalg_test_ahead(-1);
  kiln__linalg_test_pwg(-1);
  hook_route = -1;
  set_hook(-1, -1, -1, -1);
  kiln__linalg_test_set(-1, -1, -1, -1);
  kiln__linalg_test_route(-1);
}
END_TEST

static int
tune_event(const kiln_tune_progress *p, void *user)
{
  kiln_tune_result *last = user;
  if (p->event == KILN_TUNE_EVENT_CANDIDATE)
    EXPECT(p->failed[0] == 0, "linalg candidate %s failed: %s", p->params, p->failed);
  if (p->event == KILN_TUNE_EVENT_KEY_DONE)
    *last = *p->result;
  return 0;
}

/* The linalg tuner family times LU of a 128 x 128 matrix on both routes, every candidate valid. */
START_TEST(tuner_family)
{
  if (harness_small())
    return;
  kiln_tune_family_desc d;
  int found = 0;
  for (size_t i = 0; kiln_tune_family_get(i, &d) == KILN_OK; i++)
    found |= strcmp(d.name, "linalg") == 0 && strcmp(d.params, "route nb gemm ahead leaf pwg") == 0;
  EXPECT(found, "no linalg tuner family with parameters route, nb, gemm, ahead, leaf, pwg");
  kiln_tune_request req;
  memset(&req, 0, sizeof req);
  uint64_t n = 1u << 14;
  kiln_dtype dt = KILN_F64;
  req.family = "linalg";
  req.dtypes = harness_has_fp64() ? &dt : NULL;
  req.ndtypes = harness_has_fp64() ? 1 : 0;
  req.sizes = &n;
  req.nsizes = 1;
  req.reps = 1;
  req.quick = 1;
  req.no_store = 1;
  kiln_tune_result last;
  memset(&last, 0, sizeof last);
  KOK(kiln_tune_run(harness_ctx(), &req, tune_event, &last));
  ck_assert_int_eq(last.status, KILN_OK);
  ck_assert_str_eq(last.bucket, "full.2^14");
  EXPECT(last.candidates >= 2, "%u candidates", last.candidates);
  ck_assert_uint_eq(last.failed, 0);
}
END_TEST

/*
 * CLBlast's indirect GEMM (the one large GEMMs take on GPUs) with kiln's temporary buffer,
 * forced for f64 on this device: both routes' LU, Cholesky and solves, on CLBlast's GEMM
 * (GPUs default to gemm_tile). Runs last: the override stays for the rest of the process.
 */
START_TEST(gemm_temp_buffer)
{
  if (!kiln_blas_has_clblast() || !harness_has_fp64() || harness_small())
    return;
  KOK(kiln__linalg_test_gemm_indirect(harness_ctx(), KILN_F64));
  kiln__linalg_test_gemm(KILN__LINALG_GEMM_CLBLAST);
  uint64_t before = kiln__linalg_test_temp_gemms();
  for (int route = KILN__LINALG_ROUTE_DEVICE; route <= KILN__LINALG_ROUTE_HOST; route++) {
    hook_route = route;
    set_hook(16, 0, 0, -1);
    route_for(KILN_F64);
    lu_case(KILN_F64, 0, NULL, 130, 130, NULL);
    lu_case(KILN_F64, 0, NULL, 70, 130, NULL);
    chol_case(KILN_F64, 1, 97);
    singular_case(KILN_F64, 65, 40);
  }
  EXPECT(kiln__linalg_test_temp_gemms() > before, "no GEMM used the temporary buffer");
  default_gemm();
  hook_route = -1;
  set_hook(-1, -1, -1, -1);
  kiln__linalg_test_set(-1, -1, -1, -1);
  kiln__linalg_test_route(-1);
}
END_TEST

START_TEST(bad_input)
{
  kiln_context *ctx = harness_ctx();
  int64_t s23[2] = {2, 3}, s33[2] = {3, 3}, s3[1] = {3}, s233[3] = {2, 3, 3}, s43[2] = {4, 3};
  double v[18] = {1, 2, 3, 4, 5, 6, 7, 8, 10, 1, 0, 0, 0, 1, 0, 0, 0, 1};
  kiln_tensor *rect = up(KILN_F32, 2, s23, v), *sq = up(KILN_F32, 2, s33, v),
              *vec = up(KILN_F32, 1, s3, v), *bat = up(KILN_F32, 3, s233, v),
              *b43 = up(KILN_F32, 2, s43, v), *out = NULL, *o2 = NULL, *ints = NULL;
  int32_t iv[9] = {0};
  KOK(kiln_tensor_from_host(ctx, KILN_I32, 2, s33, iv, &ints));
  KEXPECT(kiln_linalg_inv(ctx, rect, &out), KILN_ERR_SHAPE);
  KEXPECT(kiln_linalg_det(ctx, rect, &out), KILN_ERR_SHAPE);
  KEXPECT(kiln_linalg_cholesky(ctx, rect, KILN_LOWER, &out), KILN_ERR_SHAPE);
  KEXPECT(kiln_linalg_lu_factor(ctx, vec, &out, &o2), KILN_ERR_SHAPE);
  KEXPECT(kiln_linalg_inv(ctx, ints, &out), KILN_ERR_DTYPE);
  KEXPECT(kiln_linalg_solve(ctx, sq, b43, &out), KILN_ERR_SHAPE);
  KEXPECT(kiln_linalg_solve(ctx, bat, sq, &out), KILN_ERR_SHAPE);
  KEXPECT(kiln_linalg_solve(ctx, NULL, sq, &out), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_linalg_solve(ctx, sq, sq, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_linalg_cholesky(ctx, sq, (kiln_uplo)7, &out), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_trsm(ctx, (kiln_side)3, KILN_LOWER, KILN_NO_TRANS, KILN_UNIT, 1, sq, sq, &out),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_trsm(ctx, KILN_LEFT, KILN_LOWER, KILN_NO_TRANS, KILN_UNIT, 1, sq, b43, &out),
          KILN_ERR_SHAPE);
  KEXPECT(kiln_linalg_lu_solve(ctx, sq, sq, sq, KILN_NO_TRANS, &out), KILN_ERR_DTYPE);
  KEXPECT(kiln_linalg_slogdet(ctx, sq, &out, &out), KILN_ERR_INVALID_ARGUMENT);
  if (harness_has_fp64()) {
    kiln_tensor *d = up(KILN_F64, 2, s33, v);
    KEXPECT(kiln_linalg_solve(ctx, sq, d, &out), KILN_ERR_DTYPE);
    kiln_tensor_release(d);
  }
  /* more rows than 32-bit indexing takes (an empty tensor: no memory needed) */
  int64_t huge[2] = {(int64_t)1 << 31, 0};
  kiln_tensor *big = NULL;
  KOK(kiln_tensor_create(ctx, KILN_F32, 2, huge, &big));
  KEXPECT(kiln_linalg_lu_factor(ctx, big, &out, &o2), KILN_ERR_OVERFLOW);
  kiln_tensor_release(big);
  /* a given result of the wrong shape; pivots that overlap lu */
  KEXPECT(kiln_linalg_inv(ctx, sq, &rect), KILN_ERR_SHAPE);
  ck_assert_ptr_null(out);
  kiln_tensor_release(rect);
  kiln_tensor_release(sq);
  kiln_tensor_release(vec);
  kiln_tensor_release(bat);
  kiln_tensor_release(b43);
  kiln_tensor_release(ints);
}
END_TEST

/* NaN: never chosen as a pivot below the diagonal, propagated, not reported as singular. */
START_TEST(nan_and_in_place)
{
  kiln_context *ctx = harness_ctx();
  FOR_DTYPES(dt)
  {
    int64_t s3[2] = {3, 3}, v3[1] = {3};
    double a[9] = {1, 2, 3, 4, 5, 6, 7, 8, 10}, b[3] = {1, 1, 1};
    a[3] = NAN; /* row 1, column 0: |NaN| > x is false, so row 2 (7) is the first pivot */
    kiln_tensor *t = up(dt, 2, s3, a), *tb = up(dt, 1, v3, b), *lu = NULL, *piv = NULL, *x = NULL;
    KOK(kiln_linalg_lu_factor(ctx, t, &lu, &piv));
    int32_t *p = down_i32(piv);
    ck_assert_int_eq(p[0], 3);
    free(p);
    KOK(kiln_linalg_solve(ctx, t, tb, &x));
    double *hx = down(x);
    EXPECT(isnan(hx[0]) || isnan(hx[1]) || isnan(hx[2]), "NaN input gave a finite solution");
    free(hx);
    kiln_tensor_release(t);
    kiln_tensor_release(lu);
    kiln_tensor_release(piv);
    kiln_tensor_release(x);
    piv = NULL;
    /* in place: lu over a, x over b */
    double c[9] = {4, 3, 2, 2, 5, 1, 1, 2, 6};
    t = up(dt, 2, s3, c);
    kiln_tensor *a2 = up(dt, 2, s3, c), *ref = NULL;
    KOK(kiln_linalg_lu_factor(ctx, a2, &ref, &piv));
    piv = (kiln_tensor_release(piv), NULL);
    kiln_tensor *same = t;
    KOK(kiln_linalg_lu_factor(ctx, t, &same, &piv));
    ck_assert_ptr_eq(same, t);
    double *h1 = down(t), *h2 = down(ref);
    ck_assert_mem_eq(h1, h2, 9 * sizeof *h1);
    free(h1);
    free(h2);
    kiln_tensor *xb = tb;
    KOK(kiln_linalg_solve(ctx, a2, tb, &xb));
    hx = down(tb);
    double r0 = 4 * hx[0] + 3 * hx[1] + 2 * hx[2] - 1;
    EXPECT(fabs(r0) < 1e-5, "in-place solve residual %g", r0);
    free(hx);
    /* results over each other's bytes: refused */
    kiln_tensor *u = NULL;
    KEXPECT(kiln_linalg_lu(ctx, a2, &t, &t, &u), KILN_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(u);
    kiln_tensor_release(t);
    kiln_tensor_release(tb);
    kiln_tensor_release(a2);
    kiln_tensor_release(ref);
    kiln_tensor_release(piv);
  }
}
END_TEST

/* Every test starts on the defaults, also after a failed one left a hook set. */
static void
reset_hooks(void)
{
  set_hook(-1, -1, -1, -1);
  kiln__linalg_test_set(-1, -1, -1, -1);
  hook_route = -1;
  kiln__linalg_test_route(-1);
  kiln__linalg_test_own_gemm_max(-1);
  default_gemm();
  kiln__linalg_test_ahead(-1);
  kiln__linalg_test_pwg(-1);
  kiln__linalg_test_lu_nb2(-1);
  kiln__linalg_test_large_min(-1);
}

/*
 * Cholesky's two levels with chol_col on gemm_tile: panels of 128, 192, 256 and 768 columns (the
 * GPU rule's) and one panel of the whole matrix (the rule's up to 1024), so that a 64-column
 * step updates up to thirteen later column tiles of its panel, with groups waiting for the row
 * tiles other groups publish; orders of several row tiles, the last panel partial, a batch of
 * two, both triangles (chol_case). chol_col's groups for later column tiles past the first
 * must have run.
 */
START_TEST(cholesky_panels)
{
  unsigned before = kiln__linalg_test_chol_col_cross();
  kiln__linalg_test_gemm(KILN__LINALG_GEMM_TILE);
  hook_route = KILN__LINALG_ROUTE_DEVICE;
  if (harness_small()) {
    /* the simulator's sizes (HARNESS_SMALL_NUMEL) hold one 64-row tile: chol_col's first
     * phase after 16-column steps, its stores checked against the group's loads */
    set_hook(16, 0, -1, -1);
    FOR_DTYPES(dt)
    {
      if (small_dtype(dt))
        chol_case(dt, 1, 38);
    }
    hook_route = -1;
    set_hook(-1, -1, -1, -1);
    default_gemm();
    kiln__linalg_test_set(-1, -1, -1, -1);
    kiln__linalg_test_route(-1);
    return;
  }
  static const size_t ns[] = {300, 517};
  for (int nb = 128; nb <= 256; nb += 64) {
    set_hook(nb, 0, -1, -1);
    FOR_DTYPES(dt)
    {
      chol_case(dt, nb == 192 ? 2 : 1, ns[(nb / 64) % 2]);
    }
  }
  /* the GPU rule's 768-column panels (eleven later column tiles in a panel's first step; at
   * order 833 the 65 columns left join the panel: a remainder under half a panel does) and
   * its whole matrix as one panel up to 1024 */
  for (int nb = 768; nb <= 1024; nb += 256) {
    set_hook(nb, 0, -1, -1);
    FOR_DTYPE_AT(dt, nb == 768)
    {
      chol_case(dt, 1, nb == 768 ? 833 : 700);
    }
  }
  hook_route = -1;
  set_hook(-1, -1, -1, -1);
  default_gemm();
  kiln__linalg_test_set(-1, -1, -1, -1);
  kiln__linalg_test_route(-1);
  ck_assert_msg(kiln__linalg_test_chol_col_cross() > before,
                "chol_col never launched groups for a second later column tile");
}
END_TEST

/*
 * LU in two levels (the GPU rule's outer blocks, here forced on any device): outer blocks of 24
 * columns (three 8-column steps) and of 20 (two steps and a 4-column one), square, tall, wide,
 * batched and singular LU, solve and inverse, on each GEMM: CLBlast (or kiln's simple kernels
 * where the hooks ask for them: the steps' solves then on trsm_cols), gemm_tile, and the large
 * kernel from 16 rows and columns on (the outer updates there); then the grid panel's leaves
 * inside the outer blocks. Every factorization is checked by its backward error (lu_case).
 */
START_TEST(lu_two_levels)
{
  unsigned runs = kiln__linalg_test_lu2_runs();
  hook_route = KILN__LINALG_ROUTE_DEVICE;
  for (int g = KILN__LINALG_GEMM_CLBLAST; g <= KILN__LINALG_GEMM_LARGE; g++) {
    if (harness_small() && g != KILN__LINALG_GEMM_CLBLAST)
      continue;
    kiln__linalg_test_gemm(g);
    kiln__linalg_test_large_min(g == KILN__LINALG_GEMM_LARGE ? 16 : -1);
    for (int ob = 24; ob >= 20; ob -= 4) {
      /* the simulator: 21 x 18 and 18 x 21 in outer blocks of 12 (steps of 8 and 4, then 6) */
      kiln__linalg_test_lu_nb2(harness_small() ? 12 : ob);
      set_hook(8, 0, g == KILN__LINALG_GEMM_CLBLAST && ob == 20, -1);
      FOR_DTYPE_AT(dt, ob == 20)
      {
        if (harness_small()) {
          lu_case(dt, 0, NULL, 21, 18, NULL);
          lu_case(dt, 0, NULL, 18, 21, NULL);
          continue;
        }
        lu_shapes(dt, 45);
        solve_case(dt, 1, 129, 5, 0, NULL);
        inv_case(dt, 2, 70);
      }
    }
  }
  if (!harness_small()) {
    /* the grid panel (on CPUs one work-group) as the steps' kernel, 16-column steps */
    kiln__linalg_test_pwg(2);
    kiln__linalg_test_lu_nb2(48);
    set_hook(16, 0, -1, -1);
    FOR_DTYPES(dt)
    {
      lu_case(dt, 0, NULL, 150, 150, NULL);
      lu_case(dt, 0, NULL, 200, 110, NULL);
    }
  }
  ck_assert_uint_gt(kiln__linalg_test_lu2_runs(), runs);
  /* KILN_DEBUG_LU_NB2 turns it on where the hook is unset, and 0 off */
  reset_hooks();
  hook_route = KILN__LINALG_ROUTE_DEVICE;
  set_hook(8, 0, -1, -1);
  for (int on = 1; on >= 0; on--) {
    setenv("KILN_DEBUG_LU_NB2", on ? "16" : "0", 1);
    unsigned before = kiln__linalg_test_lu2_runs();
    FOR_DTYPE_AT(dt, 0)
    {
      lu_case(dt, 0, NULL, 21, 18, NULL);
    }
    ck_assert_uint_eq(kiln__linalg_test_lu2_runs(), before + (unsigned)on);
  }
  unsetenv("KILN_DEBUG_LU_NB2");
  reset_hooks();
}
END_TEST

static Suite *
linalg_suite(void)
{
  Suite *s = suite_create("linalg");
  TCase *tc = tcase_create("all");
  tcase_set_timeout(tc, 300);
  tcase_add_checked_fixture(tc, reset_hooks, NULL);
  tcase_add_test(tc, lu_backward_error);
  tcase_add_test(tc, lu_blocked_paths);
  tcase_add_test(tc, lu_special);
  tcase_add_test(tc, lu_unpacked);
  tcase_add_test(tc, solve_and_lu_solve);
  tcase_add_test(tc, inverse);
  tcase_add_test(tc, determinants);
  tcase_add_test(tc, condition_estimate);
  tcase_add_test(tc, cholesky);
  tcase_add_test(tc, cholesky_indefinite);
  tcase_add_test(tc, singular_solve_inv);
  tcase_add_test(tc, triangular);
  tcase_add_test(tc, batched_bitwise);
  tcase_add_test(tc, routes_and_blocks);
  tcase_add_test(tc, tile_gemm);
  tcase_add_test(tc, large_gemm_updates);
  tcase_add_test(tc, look_ahead);
  tcase_add_test(tc, tuner_family);
  tcase_add_test(tc, bad_input);
  tcase_add_test(tc, nan_and_in_place);
  tcase_add_test(tc, gemm_temp_buffer); /* last: its CLBlast override stays */
  suite_add_tcase(s, tc);
  /* a case of its own, so that a GPU run can take it alone (CK_RUN_CASE=grid) */
  TCase *grid = tcase_create("grid");
  tcase_set_timeout(grid, 300);
  tcase_add_checked_fixture(grid, reset_hooks, NULL);
  tcase_add_test(grid, lu_grid_panel);
  suite_add_tcase(s, grid);
  TCase *chol = tcase_create("chol");
  tcase_set_timeout(chol, 300);
  tcase_add_checked_fixture(chol, reset_hooks, NULL);
  tcase_add_test(chol, cholesky_panels);
  suite_add_tcase(s, chol);
  TCase *lu2 = tcase_create("lu2");
  tcase_set_timeout(lu2, 300);
  tcase_add_checked_fixture(lu2, reset_hooks, NULL);
  tcase_add_test(lu2, lu_two_levels);
  suite_add_tcase(s, lu2);
  return s;
}

int
main(void)
{
  return harness_main(linalg_suite(), 1);
}
