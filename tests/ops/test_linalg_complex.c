/*
 * linalg_complex suite: the linear algebra family (kiln/linalg.h) on c64 and c128: LU (packed
 * and unpacked), lu_solve (A, A^T, A^H), solve, inv, det, slogdet, Cholesky (Hermitian, both
 * triangles) with cholesky_solve and cholesky_inverse, trsm and trmm with every flag.
 *
 * Checks are backward errors computed on the host in double complex from the device's results,
 * eps = FLT_EPSILON (c64) or DBL_EPSILON (c128), Frobenius norms, each <= BOUND:
 *   LU        ||P A - L U|| / (||A|| max(m, n) eps), and |l_ij| <= sqrt(2) (pivots chosen by
 *             |re| + |im|, LAPACK's izamax)
 *   solve     ||op(A) X - B|| / (||A|| ||X|| n eps)
 *   inv       ||A inv(A) - I|| / (||A|| ||inv(A)|| n eps)
 *   det       |det - det_host(LU)| / (|det_host| n eps), det_host the product of the device's
 *             U diagonal and the pivots' sign; against a host elimination within 1e3 n eps
 *   Cholesky  ||A - L L^H|| / (||A|| n eps), the other triangle exactly zero, a real diagonal
 *   trsm/trmm |got - want| <= 1e3 eps (1 + |want|) against a host reference
 * Sizes 0, 1, primes, the small-kernel bound 64 and 65, the blocked path (block forced to 16,
 * the small kernel off, recursive panel leaves), batches (bitwise equal to the unbatched
 * results), singular and indefinite input. Routes: c64 on kiln's own kernels, c128 on CLBlast
 * (as the linalg suite splits f32 and f64: CLBlast compiles each routine and precision on
 * first use, seconds on PoCL), and both on kiln's gemm_tile (the GPU default).
 */
#include <complex.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kiln/linalg.h"
#include "kiln/linalg_spectral.h"
#include "ops/linalg_internal.h"
#include "ops/linalg_spectral_internal.h"
#include "ops/tuned.h"

#define EXPECT(cond, ...)        \
  do {                           \
    if (!(cond))                 \
      ck_abort_msg(__VA_ARGS__); \
  } while (0)

typedef double complex cplx;

static const kiln_dtype dtypes[] = {KILN_C64, KILN_C128};
static int hook_nb = -1, hook_small = -1, hook_own = -1, hook_leaf = -1, hook_gemm = -1;

static int
route_for(kiln_dtype dt)
{
  kiln__linalg_test_set(hook_nb, hook_small, dt == KILN_C64 ? 1 : hook_own, hook_leaf);
  kiln__linalg_test_gemm(hook_gemm);
  kiln__linalg_test_own_gemm_max(dt == KILN_C128 && hook_own <= 0 ? 0 : -1);
  return 1;
}

#define FOR_DTYPES(dt)                                                                       \
  for (size_t dt##_i = 0; dt##_i < 2; dt##_i++)                                              \
    for (int dt##_k = dtypes[dt##_i] != KILN_C128 || harness_has_fp64(); dt##_k; dt##_k = 0) \
      for (kiln_dtype dt = dtypes[dt##_i]; dt##_k && route_for(dt); dt##_k = 0)

#define BOUND 20.0

static uint64_t rng = 0x9e3779b97f4a7c15ull;

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
  return dt == KILN_C64 ? FLT_EPSILON : DBL_EPSILON;
}

static cplx *
rand_c(size_t n)
{
  cplx *v = malloc((n ? n : 1) * sizeof *v);
  for (size_t i = 0; i < n; i++)
    v[i] = CMPLX(urand(-1, 1), urand(-1, 1));
  return v;
}

/* Uploads v as dt, rounding v to what the device sees. */
static kiln_tensor *
up(kiln_dtype dt, size_t nd, const int64_t *shape, cplx *v)
{
  uint64_t n = 1;
  for (size_t i = 0; i < nd; i++)
    n *= (uint64_t)shape[i];
  void *h = malloc((n ? n : 1) * 16);
  for (uint64_t i = 0; i < n; i++) {
    if (dt == KILN_C64) {
      float *f = (float *)h + 2 * i;
      f[0] = (float)creal(v[i]);
      f[1] = (float)cimag(v[i]);
      v[i] = CMPLX(f[0], f[1]);
    } else {
      double *d = (double *)h + 2 * i;
      d[0] = creal(v[i]);
      d[1] = cimag(v[i]);
    }
  }
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_from_host(harness_ctx(), dt, nd, shape, h, &t));
  free(h);
  return t;
}

/* A complex or real tensor as double complex values. */
static cplx *
down(const kiln_tensor *t)
{
  uint64_t n = kiln_tensor_numel(t);
  kiln_dtype dt = kiln_tensor_dtype(t);
  void *h = malloc(kiln_tensor_nbytes(t) + 16);
  KOK(kiln_tensor_download(t, h, kiln_tensor_nbytes(t)));
  cplx *d = malloc((n + 1) * sizeof *d);
  for (uint64_t i = 0; i < n; i++) {
    if (dt == KILN_C64)
      d[i] = CMPLX(((float *)h)[2 * i], ((float *)h)[2 * i + 1]);
    else if (dt == KILN_C128)
      d[i] = CMPLX(((double *)h)[2 * i], ((double *)h)[2 * i + 1]);
    else if (dt == KILN_F32)
      d[i] = ((float *)h)[i];
    else
      d[i] = ((double *)h)[i];
  }
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

static void *
raw(const kiln_tensor *t)
{
  void *h = malloc(kiln_tensor_nbytes(t) + 1);
  KOK(kiln_tensor_download(t, h, kiln_tensor_nbytes(t)));
  return h;
}

static double
fro(const cplx *a, size_t n)
{
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += creal(a[i] * conj(a[i]));
  return sqrt(s);
}

/* op(A)[i][j] of an n x n row-major A: t 0 A, 1 A^T, 2 A^H */
static cplx
opa(const cplx *a, size_t n, int t, size_t i, size_t j)
{
  return t == 0 ? a[i * n + j] : t == 1 ? a[j * n + i] : conj(a[j * n + i]);
}

static int
trans_code(kiln_trans t)
{
  return t == KILN_CONJ_TRANS ? 2 : t == KILN_TRANS;
}

/* A diagonally weighted random n x n matrix (condition number modest). */
static cplx *
well_cond(size_t n, size_t batch)
{
  cplx *a = rand_c(batch * n * n);
  for (size_t b = 0; b < batch; b++)
    for (size_t i = 0; i < n; i++)
      a[b * n * n + i * n + i] += CMPLX(2.0, 1.0);
  return a;
}

/* Hermitian positive definite: B B^H / n + I. */
static cplx *
hpd(size_t n, size_t batch)
{
  cplx *a = malloc((batch * n * n + 1) * sizeof *a), *bm = rand_c(n * n);
  for (size_t q = 0; q < batch; q++) {
    for (size_t i = 0; i < n * n; i++)
      bm[i] = CMPLX(urand(-1, 1), urand(-1, 1));
    for (size_t i = 0; i < n; i++)
      for (size_t j = 0; j < n; j++) {
        cplx s = 0;
        for (size_t p = 0; p < n; p++)
          s += bm[i * n + p] * conj(bm[j * n + p]);
        a[q * n * n + i * n + j] = s / (double)n + (i == j ? 1.0 : 0.0);
      }
    for (size_t i = 0; i < n; i++) /* exactly Hermitian, exactly real diagonal */
      a[q * n * n + i * n + i] = creal(a[q * n * n + i * n + i]);
  }
  free(bm);
  return a;
}

/* ---------------------------------------------------------------- LU */

static double
lu_backward(const cplx *a, const cplx *lu, const int32_t *piv, size_t m, size_t n, double eps)
{
  size_t k = m < n ? m : n;
  cplx *pa = malloc((m * n + 1) * sizeof *pa);
  memcpy(pa, a, m * n * sizeof *pa);
  for (size_t j = 0; j < k; j++) {
    EXPECT(piv[j] >= (int32_t)j + 1 && piv[j] <= (int32_t)m, "pivot %zu is %d (m %zu)", j, piv[j],
           m);
    size_t p = (size_t)piv[j] - 1;
    for (size_t c = 0; c < n; c++) {
      cplx t = pa[j * n + c];
      pa[j * n + c] = pa[p * n + c];
      pa[p * n + c] = t;
    }
  }
  double r = 0, na = fro(a, m * n);
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      cplx s = 0;
      for (size_t p = 0; p <= (i < j ? i : j) && p < k; p++) {
        cplx l = p == i ? 1.0 : lu[i * n + p];
        if (p < i)
          EXPECT(cabs(l) <= sqrt(2.0) * (1 + 4 * eps), "|L[%zu][%zu]| = %g > sqrt(2)", i, p,
                 cabs(l));
        s += l * lu[p * n + j];
      }
      cplx d = pa[i * n + j] - s;
      r += creal(d * conj(d));
    }
  free(pa);
  size_t mx = m > n ? m : n;
  return na == 0 ? sqrt(r) : sqrt(r) / (na * (double)mx * eps);
}

static void
lu_case(kiln_dtype dt, size_t nb, const int64_t *bd, size_t m, size_t n)
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
  cplx *a = rand_c(batch * mn);
  kiln_tensor *ta = up(dt, nd, shape, a), *lu = NULL, *piv = NULL;
  KOK(kiln_linalg_lu_factor(harness_ctx(), ta, &lu, &piv));
  ck_assert_int_eq(kiln_tensor_dtype(lu), dt);
  cplx *h = down(lu);
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

START_TEST(lu_factor)
{
  static const size_t sq[] = {0, 1, 2, 5, 13, 31, 64, 65, 97};
  static const size_t rect[][2] = {{7, 3}, {3, 7}, {64, 1}, {1, 64}, {130, 70}, {70, 130}};
  FOR_DTYPES(dt)
  {
    for (size_t i = 0; i < sizeof sq / sizeof sq[0]; i++)
      lu_case(dt, 0, NULL, sq[i], sq[i]);
    for (size_t i = 0; i < sizeof rect / sizeof rect[0]; i++)
      lu_case(dt, 0, NULL, rect[i][0], rect[i][1]);
    int64_t bd[2] = {3, 2}, zero = 0;
    lu_case(dt, 2, bd, 6, 6);
    lu_case(dt, 1, &zero, 4, 4);
  }
}
END_TEST

/* The blocked path on small sizes (block 16, small kernel off), whole and recursive panels,
 * then kiln's gemm_tile for every product (the GPU rule), then the GPU defaults (block 64,
 * 16-column leaves, gemm_tile) with look-ahead off and on. */
START_TEST(lu_blocked_paths)
{
  static const size_t sizes[][2] = {{17, 17}, {47, 47}, {40, 23}, {23, 40}};
  kiln__linalg_test_route(KILN__LINALG_ROUTE_DEVICE);
  for (int v = 0; v < 3; v++) {
    hook_nb = 16;
    hook_small = 0;
    hook_leaf = v == 1 ? 3 : -1;
    hook_gemm = v == 2 ? KILN__LINALG_GEMM_TILE : -1;
    FOR_DTYPES(dt)
    {
      for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i += harness_small() ? 2 : 1)
        lu_case(dt, 0, NULL, sizes[i][0], sizes[i][1]);
      int64_t bd = 2;
      lu_case(dt, 1, &bd, 33, 33);
    }
  }
  /* a multi-group panel asked for (the tuner's pwg): lu_panel_grid, its rows 32 complex
   * columns wide (panels of 16 in one launch, of 64 in two leaves of 32) */
  kiln__linalg_test_pwg(4);
  hook_small = 0;
  hook_leaf = -1;
  hook_gemm = -1;
  FOR_DTYPES(dt)
  {
    unsigned before = kiln__linalg_test_grid_launches();
    hook_nb = 16;
    lu_case(dt, 0, NULL, 40, 23);
    hook_nb = 64;
    lu_case(dt, 0, NULL, harness_small() ? 70 : 150, harness_small() ? 66 : 131);
    ck_assert_msg(kiln__linalg_test_grid_launches() > before, "%s: LU never launched lu_panel_grid",
                  kiln_dtype_name(dt));
  }
  kiln__linalg_test_pwg(-1);
  for (int ahead = 1; ahead <= 2; ahead++) {
    hook_nb = 64;
    hook_small = -1;
    hook_leaf = 16;
    hook_gemm = KILN__LINALG_GEMM_TILE;
    kiln__linalg_test_ahead(ahead);
    FOR_DTYPES(dt)
    {
      lu_case(dt, 0, NULL, 97, 97);
      lu_case(dt, 0, NULL, 130, 70);
    }
  }
}
END_TEST

START_TEST(lu_unpacked)
{
  kiln_context *ctx = harness_ctx();
  static const size_t sizes[][2] = {{1, 1}, {5, 5}, {7, 3}, {3, 7}, {70, 70}};
  FOR_DTYPES(dt)
  {
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
      size_t m = sizes[c][0], n = sizes[c][1], k = m < n ? m : n;
      int64_t sh[2] = {(int64_t)m, (int64_t)n};
      cplx *a = rand_c(m * n);
      kiln_tensor *ta = up(dt, 2, sh, a), *p = NULL, *l = NULL, *u = NULL;
      KOK(kiln_linalg_lu(ctx, ta, &p, &l, &u));
      ck_assert_int_eq(kiln_tensor_dtype(p), dt);
      cplx *hp = down(p), *hl = down(l), *hu = down(u);
      double r = 0;
      for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
          /* (P L U)[i][j], L unit lower, U upper, P a permutation of ones */
          cplx s = 0;
          for (size_t q = 0; q < m; q++) {
            if (hp[i * m + q] == 0)
              continue;
            EXPECT(hp[i * m + q] == 1, "P[%zu][%zu] is not 0 or 1", i, q);
            for (size_t t = 0; t < k; t++)
              s += hl[q * k + t] * hu[t * n + j];
          }
          cplx d = a[i * n + j] - s;
          r += creal(d * conj(d));
        }
      for (size_t i = 0; i < m; i++)
        for (size_t t = 0; t < k; t++)
          EXPECT(t < i || hl[i * k + t] == (t == i ? 1.0 : 0.0), "L[%zu][%zu] not unit lower", i,
                 t);
      for (size_t t = 0; t < k; t++)
        for (size_t j = 0; j < t; j++)
          EXPECT(hu[t * n + j] == 0, "U[%zu][%zu] not zero", t, j);
      double e = sqrt(r) / (fro(a, m * n) * (double)(m > n ? m : n) * eps_of(dt));
      EXPECT(e <= BOUND, "%s A = P L U %zux%zu: error %g", kiln_dtype_name(dt), m, n, e);
      free(a);
      free(hp);
      free(hl);
      free(hu);
      kiln_tensor_release(ta);
      kiln_tensor_release(p);
      kiln_tensor_release(l);
      kiln_tensor_release(u);
    }
  }
}
END_TEST

/* ||op(A) X - B|| / (||A|| ||X|| n eps) for n x k X */
static double
residual(const cplx *a, const cplx *x, const cplx *b, size_t n, size_t k, int t, double eps)
{
  double r = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < k; j++) {
      cplx s = 0;
      for (size_t p = 0; p < n; p++)
        s += opa(a, n, t, i, p) * x[p * k + j];
      cplx d = s - b[i * k + j];
      r += creal(d * conj(d));
    }
  double den = fro(a, n * n) * fro(x, n * k) * (double)n * eps;
  return den == 0 ? sqrt(r) : sqrt(r) / den;
}

START_TEST(solve_and_lu_solve)
{
  kiln_context *ctx = harness_ctx();
  static const size_t ns[] = {1, 3, 17, 64, 65, 97};
  static const kiln_trans ts[] = {KILN_NO_TRANS, KILN_TRANS, KILN_CONJ_TRANS};
  FOR_DTYPES(dt)
  {
    for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
      size_t n = ns[c], k = c % 2 ? 3 : 1;
      int64_t sa[2] = {(int64_t)n, (int64_t)n}, sb[2] = {(int64_t)n, (int64_t)k},
              sv[1] = {(int64_t)n};
      cplx *a = well_cond(n, 1), *b = rand_c(n * k);
      kiln_tensor *ta = up(dt, 2, sa, a), *tb = up(dt, 2, sb, b), *tv = up(dt, 1, sv, b), *x = NULL,
                  *xv = NULL, *lu = NULL, *piv = NULL;
      KOK(kiln_linalg_solve(ctx, ta, tb, &x));
      cplx *hx = down(x);
      double e = residual(a, hx, b, n, k, 0, eps_of(dt));
      EXPECT(e <= BOUND, "%s solve n %zu k %zu: residual %g", kiln_dtype_name(dt), n, k, e);
      free(hx);
      KOK(kiln_linalg_solve(ctx, ta, tv, &xv)); /* b a vector */
      ck_assert_int_eq(kiln_tensor_ndim(xv), 1);
      hx = down(xv);
      e = residual(a, hx, b, n, 1, 0, eps_of(dt));
      EXPECT(e <= BOUND, "%s solve (vector) n %zu: residual %g", kiln_dtype_name(dt), n, e);
      free(hx);
      KOK(kiln_linalg_lu_factor(ctx, ta, &lu, &piv));
      for (size_t t = 0; t < 3; t++) {
        kiln_tensor *y = NULL;
        KOK(kiln_linalg_lu_solve(ctx, lu, piv, tb, ts[t], &y));
        hx = down(y);
        e = residual(a, hx, b, n, k, trans_code(ts[t]), eps_of(dt));
        EXPECT(e <= BOUND, "%s lu_solve trans %d n %zu: residual %g", kiln_dtype_name(dt),
               (int)ts[t], n, e);
        free(hx);
        kiln_tensor_release(y);
      }
      free(a);
      free(b);
      kiln_tensor_release(ta);
      kiln_tensor_release(tb);
      kiln_tensor_release(tv);
      kiln_tensor_release(x);
      kiln_tensor_release(xv);
      kiln_tensor_release(lu);
      kiln_tensor_release(piv);
    }
  }
}
END_TEST

START_TEST(inverse)
{
  kiln_context *ctx = harness_ctx();
  static const size_t ns[] = {0, 1, 2, 13, 64, 65, 97};
  FOR_DTYPES(dt)
  {
    for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
      size_t n = ns[c];
      int64_t sa[2] = {(int64_t)n, (int64_t)n};
      cplx *a = well_cond(n, 1);
      kiln_tensor *ta = up(dt, 2, sa, a), *inv = NULL;
      KOK(kiln_linalg_inv(ctx, ta, &inv));
      cplx *hi = down(inv), *eye = calloc(n * n + 1, sizeof *eye);
      for (size_t i = 0; i < n; i++)
        eye[i * n + i] = 1;
      double r = 0;
      for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
          cplx s = 0;
          for (size_t p = 0; p < n; p++)
            s += a[i * n + p] * hi[p * n + j];
          cplx d = s - eye[i * n + j];
          r += creal(d * conj(d));
        }
      double den = fro(a, n * n) * fro(hi, n * n) * (double)n * eps_of(dt);
      double e = n ? sqrt(r) / den : 0;
      EXPECT(e <= BOUND, "%s inv n %zu: ||A inv(A) - I|| error %g", kiln_dtype_name(dt), n, e);
      free(a);
      free(hi);
      free(eye);
      kiln_tensor_release(ta);
      kiln_tensor_release(inv);
    }
  }
}
END_TEST

/* det of n x n a by the host's own elimination (partial pivoting by modulus). */
static cplx
host_det(const cplx *a0, size_t n)
{
  cplx *a = malloc((n * n + 1) * sizeof *a), det = 1;
  memcpy(a, a0, n * n * sizeof *a);
  for (size_t j = 0; j < n; j++) {
    size_t p = j;
    for (size_t i = j + 1; i < n; i++)
      if (cabs(a[i * n + j]) > cabs(a[p * n + j]))
        p = i;
    if (p != j) {
      det = -det;
      for (size_t c = 0; c < n; c++) {
        cplx t = a[j * n + c];
        a[j * n + c] = a[p * n + c];
        a[p * n + c] = t;
      }
    }
    det *= a[j * n + j];
    if (a[j * n + j] == 0)
      break;
    for (size_t i = j + 1; i < n; i++) {
      cplx l = a[i * n + j] / a[j * n + j];
      for (size_t c = j; c < n; c++)
        a[i * n + c] -= l * a[j * n + c];
    }
  }
  free(a);
  return det;
}

START_TEST(determinants)
{
  kiln_context *ctx = harness_ctx();
  static const size_t ns[] = {0, 1, 2, 5, 13, 31, 65};
  FOR_DTYPES(dt)
  {
    double eps = eps_of(dt);
    for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
      size_t n = ns[c];
      int64_t sa[3] = {2, (int64_t)n, (int64_t)n};
      /* entries of modulus about 1 (about 1/2 from n 32 on): |det| stays in c64's range */
      cplx *a = rand_c(2 * n * n);
      for (size_t i = 0; n >= 32 && i < 2 * n * n; i++)
        a[i] *= 0.5;
      kiln_tensor *ta = up(dt, 3, sa, a), *det = NULL, *sign = NULL, *lad = NULL, *lu = NULL,
                  *piv = NULL;
      KOK(kiln_linalg_det(ctx, ta, &det));
      KOK(kiln_linalg_slogdet(ctx, ta, &sign, &lad));
      KOK(kiln_linalg_lu_factor(ctx, ta, &lu, &piv));
      ck_assert_int_eq(kiln_tensor_dtype(det), dt);
      ck_assert_int_eq(kiln_tensor_dtype(sign), dt);
      ck_assert_int_eq(kiln_tensor_dtype(lad), dt == KILN_C64 ? KILN_F32 : KILN_F64);
      ck_assert_int_eq(kiln_tensor_ndim(det), 1);
      cplx *hd = down(det), *hs = down(sign), *hl = down(lad), *hlu = down(lu);
      int32_t *hp = down_i32(piv);
      for (size_t b = 0; b < 2; b++) {
        cplx ref = 1;
        for (size_t j = 0; j < n; j++) {
          ref *= hlu[b * n * n + j * n + j];
          if (hp[b * n + j] != (int32_t)j + 1)
            ref = -ref;
        }
        double e = cabs(hd[b] - ref) / (cabs(ref) * (double)(n + 1) * eps);
        EXPECT(e <= BOUND, "%s det n %zu: %g%+gi against the LU product %g%+gi (error %g)",
               kiln_dtype_name(dt), n, creal(hd[b]), cimag(hd[b]), creal(ref), cimag(ref), e);
        cplx hd2 = host_det(a + b * n * n, n);
        e = cabs(hd[b] - hd2) / (cabs(hd2) * (double)(n + 1) * eps);
        EXPECT(e <= 1e3, "%s det n %zu: %g%+gi against the host's %g%+gi (error %g)",
               kiln_dtype_name(dt), n, creal(hd[b]), cimag(hd[b]), creal(hd2), cimag(hd2), e);
        /* slogdet: a unit sign and sign exp(logabsdet) = det */
        EXPECT(fabs(cabs(hs[b]) - 1) <= 10 * (n + 1) * eps, "%s slogdet n %zu: |sign| = %g",
               kiln_dtype_name(dt), n, cabs(hs[b]));
        cplx back = hs[b] * exp(creal(hl[b]));
        e = cabs(back - ref) / (cabs(ref) * (double)(n + 1) * eps);
        EXPECT(e <= BOUND, "%s slogdet n %zu: sign exp(logabsdet) off by %g", kiln_dtype_name(dt),
               n, e);
      }
      free(a);
      free(hd);
      free(hs);
      free(hl);
      free(hlu);
      free(hp);
      kiln_tensor_release(ta);
      kiln_tensor_release(det);
      kiln_tensor_release(sign);
      kiln_tensor_release(lad);
      kiln_tensor_release(lu);
      kiln_tensor_release(piv);
    }
    /* singular: det 0, sign 0, logabsdet -Inf */
    int64_t s3[2] = {3, 3};
    cplx sing[9] = {1, I, 2, 2, 2 * I, 4, 0, 1, 1}; /* row 1 = 2 row 0 */
    kiln_tensor *ts = up(dt, 2, s3, sing), *det = NULL, *sign = NULL, *lad = NULL;
    KOK(kiln_linalg_det(ctx, ts, &det));
    KOK(kiln_linalg_slogdet(ctx, ts, &sign, &lad));
    cplx *hd = down(det), *hs = down(sign), *hl = down(lad);
    EXPECT(hd[0] == 0 && hs[0] == 0 && isinf(creal(hl[0])) && creal(hl[0]) < 0,
           "%s singular: det %g%+gi sign %g%+gi logabsdet %g", kiln_dtype_name(dt), creal(hd[0]),
           cimag(hd[0]), creal(hs[0]), cimag(hs[0]), creal(hl[0]));
    free(hd);
    free(hs);
    free(hl);
    kiln_tensor_release(ts);
    kiln_tensor_release(det);
    kiln_tensor_release(sign);
    kiln_tensor_release(lad);
  }
}
END_TEST

/* rcond: zlacn2's estimate within [exact, 10 exact] of 1 / (||A||_1 ||A^-1||_1). */
START_TEST(condition_estimate)
{
  kiln_context *ctx = harness_ctx();
  static const size_t ns[] = {0, 1, 2, 7, 31, 70};
  FOR_DTYPES(dt)
  {
    for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
      size_t n = ns[c], nb = c == 3 ? 2 : 1;
      int64_t sh[3] = {(int64_t)nb, (int64_t)n, (int64_t)n};
      cplx *a = rand_c(nb * n * n);
      for (size_t q = 0; c == 4 && q < nb; q++) /* graded rows: a larger condition number */
        for (size_t i = 0; i < n; i++)
          for (size_t j = 0; j < n; j++)
            a[q * n * n + i * n + j] *= pow(2.0, -(double)i / 3.0);
      kiln_tensor *ta = up(dt, 3, sh, a), *rc = NULL, *inv = NULL;
      KOK(kiln_linalg_rcond(ctx, ta, &rc));
      ck_assert_int_eq(kiln_tensor_dtype(rc), dt == KILN_C64 ? KILN_F32 : KILN_F64);
      cplx *hr = down(rc);
      if (n == 0) {
        EXPECT(isinf(creal(hr[0])), "%s rcond 0x0: %g", kiln_dtype_name(dt), creal(hr[0]));
      } else {
        KOK(kiln_linalg_inv(ctx, ta, &inv));
        cplx *hi = down(inv);
        for (size_t q = 0; q < nb; q++) {
          double n1 = 0, ni = 0;
          for (size_t j = 0; j < n; j++) {
            double s1 = 0, s2 = 0;
            for (size_t i = 0; i < n; i++) {
              s1 += cabs(a[q * n * n + i * n + j]);
              s2 += cabs(hi[q * n * n + i * n + j]);
            }
            n1 = fmax(n1, s1);
            ni = fmax(ni, s2);
          }
          double exact = 1.0 / (n1 * ni), got = creal(hr[q]);
          EXPECT(got >= exact * (1 - 1e-3) && got <= 10 * exact, "%s rcond n %zu: %g, exact %g",
                 kiln_dtype_name(dt), n, got, exact);
        }
        free(hi);
      }
      free(a);
      free(hr);
      kiln_tensor_release(ta);
      kiln_tensor_release(rc);
      kiln_tensor_release(inv);
    }
  }
}
END_TEST

/* ---------------------------------------------------------------- Cholesky */

static void
chol_case(kiln_dtype dt, size_t n, size_t batch, kiln_uplo uplo)
{
  kiln_context *ctx = harness_ctx();
  int64_t sh[3] = {(int64_t)batch, (int64_t)n, (int64_t)n}, sb[3] = {(int64_t)batch, (int64_t)n, 2};
  cplx *a = hpd(n, batch), *b = rand_c(batch * n * 2);
  kiln_tensor *ta = up(dt, 3, sh, a), *tb = up(dt, 3, sb, b), *f = NULL, *x = NULL, *inv = NULL;
  KOK(kiln_linalg_cholesky(ctx, ta, uplo, &f));
  KOK(kiln_linalg_cholesky_solve(ctx, f, uplo, tb, &x));
  KOK(kiln_linalg_cholesky_inverse(ctx, f, uplo, &inv));
  cplx *hf = down(f), *hx = down(x), *hi = down(inv);
  double eps = eps_of(dt);
  const char *nm = uplo == KILN_LOWER ? "lower" : "upper";
  for (size_t q = 0; q < batch; q++) {
    const cplx *A = a + q * n * n, *F = hf + q * n * n, *X = hx + q * n * 2, *B = b + q * n * 2,
               *V = hi + q * n * n;
    double r = 0;
    for (size_t i = 0; i < n; i++)
      for (size_t j = 0; j < n; j++) {
        /* lower: (L L^H)_ij = sum L_ip conj(L_jp); upper: (U^H U)_ij = sum conj(U_pi) U_pj */
        cplx s = 0;
        for (size_t p = 0; p < n; p++)
          s += uplo == KILN_LOWER ? F[i * n + p] * conj(F[j * n + p])
                                  : conj(F[p * n + i]) * F[p * n + j];
        cplx d = s - A[i * n + j];
        r += creal(d * conj(d));
        int outside = uplo == KILN_LOWER ? j > i : j < i;
        EXPECT(!outside || F[i * n + j] == 0, "%s cholesky %s n %zu: [%zu][%zu] not zero",
               kiln_dtype_name(dt), nm, n, i, j);
      }
    for (size_t i = 0; i < n; i++)
      EXPECT(cimag(F[i * n + i]) == 0 && creal(F[i * n + i]) > 0,
             "%s cholesky %s n %zu: diagonal %zu is %g%+gi", kiln_dtype_name(dt), nm, n, i,
             creal(F[i * n + i]), cimag(F[i * n + i]));
    double e = n ? sqrt(r) / (fro(A, n * n) * (double)n * eps) : 0;
    EXPECT(e <= BOUND, "%s cholesky %s n %zu: ||A - L L^H|| error %g", kiln_dtype_name(dt), nm, n,
           e);
    e = residual(A, X, B, n, 2, 0, eps);
    EXPECT(e <= BOUND, "%s cholesky_solve %s n %zu: residual %g", kiln_dtype_name(dt), nm, n, e);
    double ri = 0;
    for (size_t i = 0; i < n; i++)
      for (size_t j = 0; j < n; j++) {
        cplx s = 0;
        for (size_t p = 0; p < n; p++)
          s += A[i * n + p] * V[p * n + j];
        cplx d = s - (i == j ? 1.0 : 0.0);
        ri += creal(d * conj(d));
      }
    e = n ? sqrt(ri) / (fro(A, n * n) * fro(V, n * n) * (double)n * eps) : 0;
    EXPECT(e <= BOUND, "%s cholesky_inverse %s n %zu: ||A inv - I|| error %g", kiln_dtype_name(dt),
           nm, n, e);
  }
  free(a);
  free(b);
  free(hf);
  free(hx);
  free(hi);
  kiln_tensor_release(ta);
  kiln_tensor_release(tb);
  kiln_tensor_release(f);
  kiln_tensor_release(x);
  kiln_tensor_release(inv);
}

START_TEST(cholesky)
{
  static const size_t ns[] = {0, 1, 2, 7, 31, 64, 65, 97};
  FOR_DTYPES(dt)
  {
    for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++)
      for (int u = 0; u < 2; u++)
        chol_case(dt, ns[c], c == 3 ? 3 : 1, u ? KILN_UPPER : KILN_LOWER);
  }
  /* the device route's blocked path with block 16: look-ahead off and on, then gemm_tile */
  kiln__linalg_test_route(KILN__LINALG_ROUTE_DEVICE);
  for (int v = 0; v < 3; v++) {
    hook_nb = 16;
    hook_small = v == 0 ? 0 : -1;
    hook_gemm = v == 2 ? KILN__LINALG_GEMM_TILE : -1;
    kiln__linalg_test_ahead(v == 1 ? 2 : 1);
    FOR_DTYPES(dt)
    {
      chol_case(dt, 47, 1, KILN_LOWER);
      chol_case(dt, 47, 1, KILN_UPPER);
    }
  }
}
END_TEST

START_TEST(cholesky_indefinite)
{
  kiln_context *ctx = harness_ctx();
  FOR_DTYPES(dt)
  {
    for (int big = 0; big < 2; big++) {
      size_t n = big ? 70 : 6, bad = big ? 40 : 3;
      int64_t sh[2] = {(int64_t)n, (int64_t)n};
      cplx *a = hpd(n, 1);
      a[bad * n + bad] = -1.0; /* the leading minor of order bad + 1 is not positive definite */
      kiln_tensor *ta = up(dt, 2, sh, a), *f = NULL;
      for (int u = 0; u < 2; u++) {
        KEXPECT(kiln_linalg_cholesky(ctx, ta, u ? KILN_UPPER : KILN_LOWER, &f),
                KILN_ERR_NOT_POSITIVE_DEFINITE);
        ck_assert_ptr_null(f);
      }
      free(a);
      kiln_tensor_release(ta);
    }
  }
}
END_TEST

/* ---------------------------------------------------------------- trsm, trmm */

static void
tri_case(kiln_dtype dt, kiln_side side, kiln_uplo uplo, kiln_trans t, kiln_diag_kind diag, size_t m,
         size_t n, int solve)
{
  kiln_context *ctx = harness_ctx();
  size_t na = side == KILN_LEFT ? m : n;
  int64_t sa[2] = {(int64_t)na, (int64_t)na}, sb[2] = {(int64_t)m, (int64_t)n};
  cplx *a = rand_c(na * na), *b = rand_c(m * n);
  for (size_t i = 0; i < na; i++)
    for (size_t j = 0; j < na; j++)
      a[i * na + j] = i == j ? CMPLX(urand(2, 3), urand(-1, 1)) : a[i * na + j] / (double)na;
  kiln_tensor *ta = up(dt, 2, sa, a), *tb = up(dt, 2, sb, b), *x = NULL;
  double alpha = 0.75;
  /* M = op(A) with the triangle and diagonal applied */
  cplx *M = calloc(na * na + 1, sizeof *M);
  int tc = trans_code(t);
  for (size_t i = 0; i < na; i++)
    for (size_t j = 0; j < na; j++) {
      int in = uplo == KILN_LOWER ? j <= i : j >= i;
      cplx v = i == j && diag == KILN_UNIT ? 1.0 : in ? a[i * na + j] : 0.0;
      size_t ii = tc ? j : i, jj = tc ? i : j;
      M[ii * na + jj] = tc == 2 ? conj(v) : v;
    }
  if (solve)
    KOK(kiln_trsm(ctx, side, uplo, t, diag, alpha, ta, tb, &x));
  else
    KOK(kiln_trmm(ctx, side, uplo, t, diag, alpha, ta, tb, &x));
  cplx *hx = down(x);
  double eps = eps_of(dt), worst = 0;
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      /* trsm: check M X = alpha B (left) or X M = alpha B; trmm: X = alpha M B or alpha B M */
      cplx s = 0;
      for (size_t p = 0; p < na; p++)
        s += side == KILN_LEFT
                 ? (solve ? M[i * na + p] * hx[p * n + j] : M[i * na + p] * b[p * n + j])
                 : (solve ? hx[i * n + p] * M[p * na + j] : b[i * n + p] * M[p * na + j]);
      cplx want = solve ? alpha * b[i * n + j] : alpha * s, got = solve ? s : hx[i * n + j];
      double d = cabs(got - want) / (1 + cabs(want));
      worst = d > worst ? d : worst;
    }
  EXPECT(worst <= 1e3 * eps, "%s %s side %d uplo %d trans %d diag %d %zux%zu: error %g",
         kiln_dtype_name(dt), solve ? "trsm" : "trmm", (int)side, (int)uplo, (int)t, (int)diag, m,
         n, worst);
  free(a);
  free(b);
  free(M);
  free(hx);
  kiln_tensor_release(ta);
  kiln_tensor_release(tb);
  kiln_tensor_release(x);
}

START_TEST(triangular)
{
  static const kiln_trans ts[] = {KILN_NO_TRANS, KILN_TRANS, KILN_CONJ_TRANS};
  FOR_DTYPES(dt)
  {
    for (int solve = 0; solve < 2; solve++)
      for (int side = 0; side < 2; side++)
        for (int up_ = 0; up_ < 2; up_++)
          for (size_t t = 0; t < 3; t++)
            for (int diag = 0; diag < 2; diag++) {
              kiln_side sd = side ? KILN_RIGHT : KILN_LEFT;
              kiln_uplo ul = up_ ? KILN_UPPER : KILN_LOWER;
              kiln_diag_kind dg = diag ? KILN_UNIT : KILN_NON_UNIT;
              tri_case(dt, sd, ul, ts[t], dg, 5, 3, solve);
              /* beyond the small bound: the blocked GEMM solves and CLBlast */
              if (diag == 0 && !harness_small())
                tri_case(dt, sd, ul, ts[t], dg, side ? 9 : 70, side ? 70 : 9, solve);
            }
  }
}
END_TEST

/* ---------------------------------------------------------------- QR */

/*
 * QR of a batch of random m x n matrices, their column j scaled by colscale[j] (NULL: 1), with
 * upper set zero below the diagonal; checked by ||A - Q R|| (also column by column with
 * colscale: Householder QR's backward error is relative to each column), ||Q^H Q - I|| and R.
 */
static void
qr_case_x(kiln_dtype dt, size_t batch, size_t m, size_t n, kiln_qr_mode mode,
          const double *colscale, int upper)
{
  kiln_context *ctx = harness_ctx();
  size_t k = m < n ? m : n, qc = mode == KILN_QR_COMPLETE ? m : k, rr = qc;
  int64_t sh[3] = {(int64_t)batch, (int64_t)m, (int64_t)n};
  cplx *a = rand_c(batch * m * n);
  for (size_t e = 0; e < batch * m * n; e++) {
    size_t i = e / n % m, j = e % n;
    if (colscale)
      a[e] *= colscale[j];
    if (upper && i > j)
      a[e] = 0;
  }
  kiln_tensor *ta = up(dt, 3, sh, a), *q = NULL, *r = NULL;
  KOK(kiln_linalg_qr(ctx, ta, mode, mode == KILN_QR_R ? NULL : &q, &r));
  ck_assert_int_eq(kiln_tensor_dtype(r), dt);
  cplx *hr = down(r), *hq = q ? down(q) : NULL;
  double eps = eps_of(dt);
  size_t mx = m > n ? m : n;
  for (size_t b = 0; b < batch; b++) {
    const cplx *A = a + b * m * n, *R = hr + b * rr * n, *Q = hq ? hq + b * m * qc : NULL;
    for (size_t i = 0; i < rr; i++)
      for (size_t j = 0; j < n; j++)
        EXPECT(j >= i || R[i * n + j] == 0, "%s qr %zux%zu: R[%zu][%zu] not zero",
               kiln_dtype_name(dt), m, n, i, j);
    /* zgeqrf's beta is real: R's diagonal has no imaginary part */
    for (size_t i = 0; i < k; i++)
      EXPECT(cimag(R[i * n + i]) == 0, "%s qr %zux%zu: R[%zu][%zu] = %g%+gi", kiln_dtype_name(dt),
             m, n, i, i, creal(R[i * n + i]), cimag(R[i * n + i]));
    if (!Q)
      continue;
    double r1 = 0, r2 = 0;
    for (size_t j = 0; j < n; j++) {
      /* a scaled column's sums by its scale (a power of two), whose square may overflow */
      double rj = 0, aj = 0, u = colscale && colscale[j] != 0 ? 1 / colscale[j] : 1;
      for (size_t i = 0; i < m; i++) {
        cplx s = 0;
        for (size_t p = 0; p < rr; p++)
          s += Q[i * qc + p] * R[p * n + j];
        cplx d = (s - A[i * n + j]) * u, aa = A[i * n + j] * u;
        rj += creal(d * conj(d));
        aj += creal(aa * conj(aa));
      }
      r1 += rj;
      if (colscale)
        EXPECT(sqrt(rj) <= BOUND * (double)mx * eps * sqrt(aj),
               "%s qr %zux%zu: column %zu (scale %g) off by %g of its norm %g", kiln_dtype_name(dt),
               m, n, j, colscale[j], sqrt(rj), sqrt(aj));
    }
    if (colscale) /* checked column by column */
      r1 = 0;
    for (size_t i = 0; i < qc; i++)
      for (size_t j = 0; j < qc; j++) {
        cplx s = 0;
        for (size_t p = 0; p < m; p++)
          s += conj(Q[p * qc + i]) * Q[p * qc + j];
        cplx d = s - (i == j ? 1.0 : 0.0);
        r2 += creal(d * conj(d));
      }
    double na = fro(A, m * n);
    double e1 = na ? sqrt(r1) / (na * (double)mx * eps) : sqrt(r1);
    double e2 = qc ? sqrt(r2) / ((double)mx * eps) : 0;
    EXPECT(e1 <= BOUND, "%s qr mode %d %zux%zu: ||A - Q R|| error %g", kiln_dtype_name(dt),
           (int)mode, m, n, e1);
    EXPECT(e2 <= BOUND, "%s qr mode %d %zux%zu: ||Q^H Q - I|| error %g", kiln_dtype_name(dt),
           (int)mode, m, n, e2);
  }
  free(a);
  free(hr);
  free(hq);
  kiln_tensor_release(ta);
  kiln_tensor_release(q);
  kiln_tensor_release(r);
}

static void
qr_case(kiln_dtype dt, size_t batch, size_t m, size_t n, kiln_qr_mode mode)
{
  qr_case_x(dt, batch, m, n, mode, NULL, 0);
}

START_TEST(qr)
{
  static const size_t sizes[][2] = {{0, 0}, {1, 1}, {5, 5}, {7, 3}, {3, 7}, {97, 40}, {40, 97}};
  FOR_DTYPES(dt)
  {
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
      for (int mode = 0; mode < 3; mode++)
        qr_case(dt, i == 3 ? 2 : 1, sizes[i][0], sizes[i][1], (kiln_qr_mode)mode);
  }
  /* a complex diagonal entry with zeros below still gets a reflector (R's diagonal real) */
  FOR_DTYPES(dt)
  {
    int64_t s2[2] = {2, 2};
    cplx d[4] = {CMPLX(1, 2), 3, 0, CMPLX(0, -1)};
    kiln_tensor *t = up(dt, 2, s2, d), *q = NULL, *r = NULL;
    KOK(kiln_linalg_qr(harness_ctx(), t, KILN_QR_REDUCED, &q, &r));
    cplx *hr = down(r);
    EXPECT(cimag(hr[0]) == 0 && cimag(hr[3]) == 0 && fabs(fabs(creal(hr[0])) - sqrt(5.0)) < 1e-5,
           "%s qr of a triangular complex matrix: R diagonal %g%+gi, %g%+gi", kiln_dtype_name(dt),
           creal(hr[0]), cimag(hr[0]), creal(hr[3]), cimag(hr[3]));
    free(hr);
    kiln_tensor_release(t);
    kiln_tensor_release(q);
    kiln_tensor_release(r);
  }
  /* blocked: block 16 with 3-column leaves, the split V^H C on gemm_tile and CLBlast */
  for (int v = 0; v < 3; v++) {
    kiln__linalg_spectral_test_set(16, -1, 3);
    kiln__linalg_spectral_test_split(v == 0 ? -1 : 3);
    hook_gemm = v == 2 ? KILN__LINALG_GEMM_TILE : -1;
    FOR_DTYPES(dt)
    {
      kiln__linalg_spectral_test_set(16, dt == KILN_C64 ? 1 : -1, 3);
      qr_case(dt, 1, 97, 40, KILN_QR_REDUCED);
      qr_case(dt, 1, 40, 70, KILN_QR_COMPLETE);
    }
  }
  /* the GPU defaults: block 64, 8-column leaves, gemm_tile */
  kiln__linalg_spectral_test_set(64, -1, 8);
  kiln__linalg_spectral_test_split(-1);
  hook_gemm = KILN__LINALG_GEMM_TILE;
  FOR_DTYPES(dt)
  {
    qr_case(dt, 1, 130, 70, KILN_QR_REDUCED);
  }
  kiln__linalg_spectral_test_set(-1, -1, -1);
}
END_TEST

/* lstsq: tall full-rank (the QR route), wide and rank-deficient (zgelsd), batched. */
static void
lstsq_case(kiln_dtype dt, size_t batch, size_t m, size_t n, size_t k, int deficient)
{
  kiln_context *ctx = harness_ctx();
  int64_t sa[3] = {(int64_t)batch, (int64_t)m, (int64_t)n},
          sb[3] = {(int64_t)batch, (int64_t)m, (int64_t)k};
  cplx *a = rand_c(batch * m * n), *b = rand_c(batch * m * k);
  if (deficient) /* column 1 = column 0: rank n - 1 */
    for (size_t q = 0; q < batch; q++)
      for (size_t i = 0; i < m; i++)
        a[q * m * n + i * n + 1] = a[q * m * n + i * n];
  kiln_tensor *ta = up(dt, 3, sa, a), *tb = up(dt, 3, sb, b), *x = NULL, *res = NULL, *rank = NULL,
              *sv = NULL;
  KOK(kiln_linalg_lstsq(ctx, ta, tb, -1.0, &x, &res, &rank, &sv));
  kiln_dtype rdt = dt == KILN_C64 ? KILN_F32 : KILN_F64;
  ck_assert_int_eq(kiln_tensor_dtype(x), dt);
  ck_assert_int_eq(kiln_tensor_dtype(sv), rdt);
  ck_assert_int_eq(kiln_tensor_dtype(res), rdt);
  cplx *hx = down(x), *hs = down(sv), *hres = down(res);
  int64_t *hr = malloc(batch * 8 + 8);
  KOK(kiln_tensor_download(rank, hr, batch * 8));
  double eps = eps_of(dt);
  size_t kk = m < n ? m : n, want_rank = deficient ? n - 1 : kk;
  int full = m > n && !deficient;
  ck_assert_int_eq(kiln_tensor_numel(res), full ? batch * k : 0);
  for (size_t q = 0; q < batch; q++) {
    const cplx *A = a + q * m * n, *B = b + q * m * k, *X = hx + q * n * k;
    EXPECT(hr[q] == (int64_t)want_rank, "%s lstsq %zux%zu: rank %lld, want %zu",
           kiln_dtype_name(dt), m, n, (long long)hr[q], want_rank);
    /* the normal equations A^H (A X - B) = 0, and for full rows (wide) A X = B */
    double g = 0, r = 0, fa = fro(A, m * n), fx = fro(X, n * k), s2 = 0;
    for (size_t c = 0; c < k; c++) {
      cplx *rv = calloc(m + 1, sizeof *rv);
      double rc = 0;
      for (size_t i = 0; i < m; i++) {
        cplx t = -B[i * k + c];
        for (size_t p = 0; p < n; p++)
          t += A[i * n + p] * X[p * k + c];
        rv[i] = t;
        rc += creal(t * conj(t));
      }
      r += rc;
      if (full)
        EXPECT(fabs(creal(hres[q * k + c]) - rc) <= 1e3 * eps * (1 + rc),
               "%s lstsq %zux%zu: residual %g, want %g", kiln_dtype_name(dt), m, n,
               creal(hres[q * k + c]), rc);
      for (size_t p = 0; p < n; p++) {
        cplx t = 0;
        for (size_t i = 0; i < m; i++)
          t += conj(A[i * n + p]) * rv[i];
        g += creal(t * conj(t));
      }
      free(rv);
    }
    double e = sqrt(g) / (fa * fa * fx * (double)(m > n ? m : n) * eps);
    EXPECT(e <= 1e2, "%s lstsq %zux%zu: normal equations off by %g", kiln_dtype_name(dt), m, n, e);
    if (m <= n && !deficient)
      EXPECT(sqrt(r) / (fa * fx * (double)n * eps) <= 1e2, "%s lstsq %zux%zu: ||A X - B|| %g",
             kiln_dtype_name(dt), m, n, sqrt(r));
    /* singular values: descending, their squares sum to ||A||^2 */
    for (size_t i = 0; i < kk; i++) {
      s2 += creal(hs[q * kk + i]) * creal(hs[q * kk + i]);
      EXPECT(i == 0 || creal(hs[q * kk + i]) <= creal(hs[q * kk + i - 1]) * (1 + 10 * eps),
             "%s lstsq %zux%zu: singular values not descending", kiln_dtype_name(dt), m, n);
    }
    EXPECT(fabs(s2 - fa * fa) <= 1e3 * eps * fa * fa, "%s lstsq %zux%zu: sum s^2 %g, ||A||^2 %g",
           kiln_dtype_name(dt), m, n, s2, fa * fa);
  }
  free(a);
  free(b);
  free(hx);
  free(hs);
  free(hres);
  free(hr);
  kiln_tensor_release(ta);
  kiln_tensor_release(tb);
  kiln_tensor_release(x);
  kiln_tensor_release(res);
  kiln_tensor_release(rank);
  kiln_tensor_release(sv);
}

START_TEST(lstsq)
{
  FOR_DTYPES(dt)
  {
    lstsq_case(dt, 2, 9, 4, 2, 0);   /* tall: the QR route */
    lstsq_case(dt, 1, 40, 40, 3, 0); /* square, several blocks */
    lstsq_case(dt, 1, 70, 20, 1, 0);
    lstsq_case(dt, 1, 4, 9, 2, 0);  /* wide: zgelsd */
    lstsq_case(dt, 1, 12, 5, 2, 1); /* rank-deficient tall: zgelsd */
  }
}
END_TEST

/* eigh (Hermitian, lower and upper) and svd (reduced, full, values only) on the host's LAPACK. */
static void
eigh_case(kiln_dtype dt, size_t batch, size_t n, kiln_uplo uplo)
{
  kiln_context *ctx = harness_ctx();
  int64_t sh[3] = {(int64_t)batch, (int64_t)n, (int64_t)n};
  cplx *a = rand_c(batch * n * n);
  for (size_t q = 0; q < batch; q++) /* Hermitian: the mirror of the lower triangle */
    for (size_t i = 0; i < n; i++)
      for (size_t j = 0; j <= i; j++)
        a[q * n * n + j * n + i] =
            i == j ? creal(a[q * n * n + i * n + i]) : conj(a[q * n * n + i * n + j]);
  kiln_tensor *ta = up(dt, 3, sh, a), *w = NULL, *v = NULL, *w2 = NULL;
  KOK(kiln_linalg_eigh(ctx, ta, uplo, &w, &v));
  KOK(kiln_linalg_eigh(ctx, ta, uplo, &w2, NULL));
  ck_assert_int_eq(kiln_tensor_dtype(w), dt == KILN_C64 ? KILN_F32 : KILN_F64);
  ck_assert_int_eq(kiln_tensor_dtype(v), dt);
  cplx *hw = down(w), *hv = down(v), *hw2 = down(w2);
  double eps = eps_of(dt);
  for (size_t q = 0; q < batch; q++) {
    const cplx *A = a + q * n * n, *V = hv + q * n * n, *W = hw + q * n;
    double r = 0, o = 0, na = fro(A, n * n);
    for (size_t i = 0; i < n; i++) {
      EXPECT(i == 0 || creal(W[i]) >= creal(W[i - 1]), "%s eigh n %zu: values not ascending",
             kiln_dtype_name(dt), n);
      EXPECT(fabs(creal(W[i]) - creal(hw2[q * n + i])) <= 10 * n * eps * (1 + na),
             "%s eigh n %zu: values only differ", kiln_dtype_name(dt), n);
      for (size_t j = 0; j < n; j++) {
        cplx t = -W[j] * V[i * n + j], g = -(i == j ? 1.0 : 0.0);
        for (size_t p = 0; p < n; p++) {
          t += A[i * n + p] * V[p * n + j];
          g += conj(V[p * n + i]) * V[p * n + j];
        }
        r += creal(t * conj(t));
        o += creal(g * conj(g));
      }
    }
    EXPECT(!n || sqrt(r) / (na * n * eps) <= BOUND, "%s eigh n %zu: ||A V - V W|| error %g",
           kiln_dtype_name(dt), n, sqrt(r) / (na * n * eps));
    EXPECT(!n || sqrt(o) / (n * eps) <= BOUND, "%s eigh n %zu: ||V^H V - I|| error %g",
           kiln_dtype_name(dt), n, sqrt(o) / (n * eps));
  }
  free(a);
  free(hw);
  free(hv);
  free(hw2);
  kiln_tensor_release(ta);
  kiln_tensor_release(w);
  kiln_tensor_release(v);
  kiln_tensor_release(w2);
}

static void
svd_case(kiln_dtype dt, size_t batch, size_t m, size_t n, int full)
{
  kiln_context *ctx = harness_ctx();
  size_t k = m < n ? m : n, uc = full ? m : k, vr = full ? n : k;
  int64_t sh[3] = {(int64_t)batch, (int64_t)m, (int64_t)n};
  cplx *a = rand_c(batch * m * n);
  kiln_tensor *ta = up(dt, 3, sh, a), *u = NULL, *sv = NULL, *vt = NULL, *s2 = NULL;
  KOK(kiln_linalg_svd(ctx, ta, full, &u, &sv, &vt));
  KOK(kiln_linalg_svd(ctx, ta, full, NULL, &s2, NULL));
  ck_assert_int_eq(kiln_tensor_dtype(sv), dt == KILN_C64 ? KILN_F32 : KILN_F64);
  cplx *hu = down(u), *hs = down(sv), *hv = down(vt), *hs2 = down(s2);
  double eps = eps_of(dt), mx = (double)(m > n ? m : n);
  for (size_t q = 0; q < batch; q++) {
    const cplx *A = a + q * m * n, *U = hu + q * m * uc, *S = hs + q * k, *V = hv + q * vr * n;
    double r = 0, ou = 0, ov = 0, na = fro(A, m * n);
    for (size_t i = 0; i < k; i++) {
      EXPECT(creal(S[i]) >= 0 && (i == 0 || creal(S[i]) <= creal(S[i - 1])),
             "%s svd %zux%zu: values not descending", kiln_dtype_name(dt), m, n);
      EXPECT(fabs(creal(S[i]) - creal(hs2[q * k + i])) <= 10 * mx * eps * (1 + na),
             "%s svd %zux%zu: values only differ", kiln_dtype_name(dt), m, n);
    }
    for (size_t i = 0; i < m; i++)
      for (size_t j = 0; j < n; j++) {
        cplx t = -A[i * n + j];
        for (size_t p = 0; p < k; p++)
          t += U[i * uc + p] * S[p] * V[p * n + j];
        r += creal(t * conj(t));
      }
    for (size_t i = 0; i < uc; i++)
      for (size_t j = 0; j < uc; j++) {
        cplx g = -(i == j ? 1.0 : 0.0);
        for (size_t p = 0; p < m; p++)
          g += conj(U[p * uc + i]) * U[p * uc + j];
        ou += creal(g * conj(g));
      }
    for (size_t i = 0; i < vr; i++)
      for (size_t j = 0; j < vr; j++) {
        cplx g = -(i == j ? 1.0 : 0.0);
        for (size_t p = 0; p < n; p++)
          g += V[i * n + p] * conj(V[j * n + p]);
        ov += creal(g * conj(g));
      }
    EXPECT(!k || sqrt(r) / (na * mx * eps) <= BOUND, "%s svd %zux%zu: ||A - U S V^H|| error %g",
           kiln_dtype_name(dt), m, n, sqrt(r) / (na * mx * eps));
    EXPECT(sqrt(ou + ov) / (mx * eps) <= BOUND, "%s svd %zux%zu full %d: orthogonality error %g",
           kiln_dtype_name(dt), m, n, full, sqrt(ou + ov) / (mx * eps));
  }
  free(a);
  free(hu);
  free(hs);
  free(hv);
  free(hs2);
  kiln_tensor_release(ta);
  kiln_tensor_release(u);
  kiln_tensor_release(sv);
  kiln_tensor_release(vt);
  kiln_tensor_release(s2);
}

START_TEST(eigh_and_svd)
{
  static const size_t ns[] = {0, 1, 5, 33};
  static const size_t ms[][2] = {{0, 3}, {1, 1}, {5, 5}, {7, 3}, {3, 7}, {33, 20}};
  FOR_DTYPES(dt)
  {
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
      eigh_case(dt, i == 2 ? 2 : 1, ns[i], KILN_LOWER);
      eigh_case(dt, 1, ns[i], KILN_UPPER);
    }
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
      for (int full = 0; full < 2; full++)
        svd_case(dt, i == 2 ? 2 : 1, ms[i][0], ms[i][1], full);
  }
}
END_TEST

/* pinv (Penrose's conditions), matrix_rank, matrix_norm and cond against host references. */
START_TEST(pinv_rank_norms)
{
  kiln_context *ctx = harness_ctx();
  static const size_t ms[][2] = {{1, 1}, {6, 4}, {4, 6}, {9, 9}};
  FOR_DTYPES(dt)
  {
    double eps = eps_of(dt);
    for (size_t c = 0; c < sizeof ms / sizeof ms[0]; c++) {
      size_t m = ms[c][0], n = ms[c][1], k = m < n ? m : n;
      int64_t sh[2] = {(int64_t)m, (int64_t)n};
      cplx *a = rand_c(m * n);
      if (c == 3) /* rank 8: row 8 = row 0 + row 1 */
        for (size_t j = 0; j < n; j++)
          a[8 * n + j] = a[j] + a[n + j];
      kiln_tensor *ta = up(dt, 2, sh, a), *pi = NULL, *rk = NULL, *sv = NULL;
      KOK(kiln_linalg_pinv(ctx, ta, -1.0, &pi));
      KOK(kiln_linalg_matrix_rank(ctx, ta, -1.0, &rk));
      KOK(kiln_linalg_svd(ctx, ta, 0, NULL, &sv, NULL));
      ck_assert_int_eq(kiln_tensor_dtype(pi), dt);
      cplx *hp = down(pi), *hs = down(sv);
      int64_t r = -1;
      KOK(kiln_tensor_download(rk, &r, 8));
      ck_assert_int_eq(r, c == 3 ? 8 : (int64_t)k);
      /* A X A = A and X A X = X, X = pinv(A) */
      double e1 = 0, e2 = 0, na = fro(a, m * n), nx = fro(hp, n * m);
      for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
          cplx t = -a[i * n + j];
          for (size_t p1 = 0; p1 < n; p1++)
            for (size_t p2 = 0; p2 < m; p2++)
              t += a[i * n + p1] * hp[p1 * m + p2] * a[p2 * n + j];
          e1 += creal(t * conj(t));
        }
      for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < m; j++) {
          cplx t = -hp[i * m + j];
          for (size_t p1 = 0; p1 < m; p1++)
            for (size_t p2 = 0; p2 < n; p2++)
              t += hp[i * m + p1] * a[p1 * n + p2] * hp[p2 * m + j];
          e2 += creal(t * conj(t));
        }
      double cn = creal(hs[0]) / creal(hs[c == 3 ? 7 : k - 1]); /* of the nonzero values */
      EXPECT(sqrt(e1) <= 1e2 * cn * eps * na && sqrt(e2) <= 1e2 * cn * eps * nx,
             "%s pinv %zux%zu: Penrose errors %g %g", kiln_dtype_name(dt), m, n, sqrt(e1),
             sqrt(e2));
      /* norms: sums of moduli on the host, and the singular values */
      double want[8];
      want[KILN_MNORM_FRO] = na;
      double c1 = 0, cm = INFINITY, r1 = 0, rm = INFINITY, nuc = 0;
      for (size_t j = 0; j < n; j++) {
        double t = 0;
        for (size_t i = 0; i < m; i++)
          t += cabs(a[i * n + j]);
        c1 = fmax(c1, t);
        cm = fmin(cm, t);
      }
      for (size_t i = 0; i < m; i++) {
        double t = 0;
        for (size_t j = 0; j < n; j++)
          t += cabs(a[i * n + j]);
        r1 = fmax(r1, t);
        rm = fmin(rm, t);
      }
      for (size_t i = 0; i < k; i++)
        nuc += creal(hs[i]);
      want[KILN_MNORM_1] = c1;
      want[KILN_MNORM_NEG1] = cm;
      want[KILN_MNORM_INF] = r1;
      want[KILN_MNORM_NEG_INF] = rm;
      want[KILN_MNORM_NUC] = nuc;
      want[KILN_MNORM_2] = creal(hs[0]);
      want[KILN_MNORM_NEG2] = creal(hs[k - 1]);
      for (int ord = 0; ord < 8; ord++) {
        kiln_tensor *nr = NULL;
        KOK(kiln_linalg_matrix_norm(ctx, ta, (kiln_mnorm)ord, &nr));
        ck_assert_int_eq(kiln_tensor_dtype(nr), dt == KILN_C64 ? KILN_F32 : KILN_F64);
        cplx *hn = down(nr);
        EXPECT(fabs(creal(hn[0]) - want[ord]) <= 1e2 * eps * (1 + want[ord]),
               "%s matrix_norm %d %zux%zu: %g, want %g", kiln_dtype_name(dt), ord, m, n,
               creal(hn[0]), want[ord]);
        free(hn);
        kiln_tensor_release(nr);
      }
      /* cond: 2 from the singular values; 1 (square, full rank) from the device's inverse */
      kiln_tensor *cd = NULL;
      KOK(kiln_linalg_cond(ctx, ta, KILN_MNORM_2, &cd));
      cplx *hc = down(cd);
      double w2 = creal(hs[0]) / creal(hs[k - 1]);
      EXPECT(c == 3 ? creal(hc[0]) > 1e5 : fabs(creal(hc[0]) - w2) <= 1e3 * eps * w2,
             "%s cond 2 %zux%zu: %g, want %g", kiln_dtype_name(dt), m, n, creal(hc[0]), w2);
      free(hc);
      kiln_tensor_release(cd);
      cd = NULL;
      if (m == n && c != 3) {
        kiln_tensor *inv = NULL;
        KOK(kiln_linalg_inv(ctx, ta, &inv));
        cplx *hi = down(inv);
        double ci = 0;
        for (size_t j = 0; j < n; j++) {
          double t = 0;
          for (size_t i = 0; i < n; i++)
            t += cabs(hi[i * n + j]);
          ci = fmax(ci, t);
        }
        KOK(kiln_linalg_cond(ctx, ta, KILN_MNORM_1, &cd));
        hc = down(cd);
        EXPECT(fabs(creal(hc[0]) - c1 * ci) <= 1e3 * eps * c1 * ci,
               "%s cond 1 %zux%zu: %g, want %g", kiln_dtype_name(dt), m, n, creal(hc[0]), c1 * ci);
        free(hc);
        free(hi);
        kiln_tensor_release(cd);
        kiln_tensor_release(inv);
      }
      free(a);
      free(hp);
      free(hs);
      kiln_tensor_release(ta);
      kiln_tensor_release(pi);
      kiln_tensor_release(rk);
      kiln_tensor_release(sv);
    }
  }
}
END_TEST

/* ---------------------------------------------------------------- batches, errors */

/* A batch's results equal each matrix's own, bit for bit (small kernels and blocked path). */
START_TEST(batched_bitwise)
{
  kiln_context *ctx = harness_ctx();
  static const size_t ns[] = {7, 33, 70};
  FOR_DTYPES(dt)
  {
    for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
      size_t n = ns[c], nb = 3, nn = n * n;
      if (!harness_fits(nb * nn))
        continue;
      int64_t sb[3] = {(int64_t)nb, (int64_t)n, (int64_t)n}, s1[2] = {(int64_t)n, (int64_t)n};
      cplx *a = well_cond(n, nb), *h = hpd(n, nb);
      kiln_tensor *ta = up(dt, 3, sb, a), *th = up(dt, 3, sb, h), *lu = NULL, *piv = NULL,
                  *inv = NULL, *ch = NULL, *det = NULL;
      KOK(kiln_linalg_lu_factor(ctx, ta, &lu, &piv));
      KOK(kiln_linalg_inv(ctx, ta, &inv));
      KOK(kiln_linalg_cholesky(ctx, th, KILN_LOWER, &ch));
      KOK(kiln_linalg_det(ctx, ta, &det));
      char *blu = raw(lu), *binv = raw(inv), *bch = raw(ch), *bdet = raw(det);
      size_t es = kiln_tensor_nbytes(lu) / (nb * nn);
      for (size_t q = 0; q < nb; q++) {
        kiln_tensor *a1 = up(dt, 2, s1, a + q * nn), *h1 = up(dt, 2, s1, h + q * nn), *lu1 = NULL,
                    *piv1 = NULL, *inv1 = NULL, *ch1 = NULL, *det1 = NULL;
        KOK(kiln_linalg_lu_factor(ctx, a1, &lu1, &piv1));
        KOK(kiln_linalg_inv(ctx, a1, &inv1));
        KOK(kiln_linalg_cholesky(ctx, h1, KILN_LOWER, &ch1));
        KOK(kiln_linalg_det(ctx, a1, &det1));
        char *r1 = raw(lu1), *r2 = raw(inv1), *r3 = raw(ch1), *r4 = raw(det1);
        EXPECT(!memcmp(r1, blu + q * nn * es, nn * es), "%s n %zu: batched LU %zu differs",
               kiln_dtype_name(dt), n, q);
        EXPECT(!memcmp(r2, binv + q * nn * es, nn * es), "%s n %zu: batched inv %zu differs",
               kiln_dtype_name(dt), n, q);
        EXPECT(!memcmp(r3, bch + q * nn * es, nn * es), "%s n %zu: batched cholesky %zu differs",
               kiln_dtype_name(dt), n, q);
        EXPECT(!memcmp(r4, bdet + q * es, es), "%s n %zu: batched det %zu differs",
               kiln_dtype_name(dt), n, q);
        free(r1);
        free(r2);
        free(r3);
        free(r4);
        kiln_tensor_release(a1);
        kiln_tensor_release(h1);
        kiln_tensor_release(lu1);
        kiln_tensor_release(piv1);
        kiln_tensor_release(inv1);
        kiln_tensor_release(ch1);
        kiln_tensor_release(det1);
      }
      free(blu);
      free(binv);
      free(bch);
      free(bdet);
      free(a);
      free(h);
      kiln_tensor_release(ta);
      kiln_tensor_release(th);
      kiln_tensor_release(lu);
      kiln_tensor_release(piv);
      kiln_tensor_release(inv);
      kiln_tensor_release(ch);
      kiln_tensor_release(det);
    }
  }
}
END_TEST

START_TEST(singular_and_bad_input)
{
  kiln_context *ctx = harness_ctx();
  FOR_DTYPES(dt)
  {
    for (int big = 0; big < 2; big++) {
      size_t n = big ? 70 : 5, zc = big ? 41 : 2;
      int64_t sh[2] = {(int64_t)n, (int64_t)n};
      cplx *a = well_cond(n, 1);
      for (size_t i = 0; i < n; i++)
        a[i * n + zc] = 0; /* a zero column: U[zc][zc] is exactly zero */
      kiln_tensor *ta = up(dt, 2, sh, a), *x = NULL;
      KEXPECT(kiln_linalg_solve(ctx, ta, ta, &x), KILN_ERR_SINGULAR);
      ck_assert_int_eq(kiln_last_error_code(), (int64_t)zc + 1);
      KEXPECT(kiln_linalg_inv(ctx, ta, &x), KILN_ERR_SINGULAR);
      ck_assert_ptr_null(x);
      /* rcond of an exactly singular matrix: 0 */
      KOK(kiln_linalg_rcond(ctx, ta, &x));
      cplx *hr = down(x);
      EXPECT(creal(hr[0]) == 0, "%s rcond of a singular matrix: %g", kiln_dtype_name(dt),
             creal(hr[0]));
      free(hr);
      kiln_tensor_release(x);
      x = NULL;
      free(a);
      kiln_tensor_release(ta);
    }
    /* mixed dtypes */
    int64_t s3[2] = {3, 3};
    cplx v[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    kiln_tensor *tc = up(dt, 2, s3, v), *tr = NULL, *x = NULL;
    KOK(kiln_tensor_from_host(ctx, KILN_F32, 2, s3, (float[9]){1, 0, 0, 0, 1, 0, 0, 0, 1}, &tr));
    KEXPECT(kiln_linalg_solve(ctx, tc, tr, &x), KILN_ERR_DTYPE);
    KEXPECT(kiln_trsm(ctx, KILN_LEFT, KILN_LOWER, KILN_NO_TRANS, KILN_UNIT, 1, tc, tr, &x),
            KILN_ERR_DTYPE);
    kiln_tensor_release(tc);
    kiln_tensor_release(tr);
  }
}
END_TEST

static void
reset_hooks(void)
{
  hook_nb = hook_small = hook_own = hook_leaf = hook_gemm = -1;
  kiln__linalg_test_set(-1, -1, -1, -1);
  kiln__linalg_test_route(-1);
  kiln__linalg_test_own_gemm_max(-1);
  kiln__linalg_test_gemm(-1);
  kiln__linalg_test_ahead(-1);
  kiln__linalg_test_pwg(-1);
  kiln__linalg_test_large_min(-1);
  kiln__linalg_test_cplx_large_on(-1);
  kiln__linalg_spectral_test_nb2(-1);
  kiln__linalg_spectral_test_set(-1, -1, -1);
  kiln__linalg_spectral_test_split(-1);
}

/*
 * Hermitian Cholesky in panels of 64-column steps (the GPU rule's two levels): chol_col's
 * update of a panel's later columns takes L21 L21^H with the conjugate where it belongs,
 * lower and upper, 128- and 256-column panels over several row tiles; its groups for later
 * column tiles past the first must have run.
 */
START_TEST(cholesky_panels)
{
  if (harness_small()) /* the simulator's sizes hold one 64-row tile: test_linalg's chol */
    return;
  unsigned before = kiln__linalg_test_chol_col_cross();
  kiln__linalg_test_route(KILN__LINALG_ROUTE_DEVICE);
  hook_gemm = KILN__LINALG_GEMM_TILE;
  for (hook_nb = 128; hook_nb <= 256; hook_nb *= 2) {
    FOR_DTYPES(dt)
    {
      chol_case(dt, hook_nb == 128 ? 201 : 270, 1, KILN_LOWER);
      chol_case(dt, hook_nb == 128 ? 201 : 270, 1, KILN_UPPER);
    }
  }
  ck_assert_msg(kiln__linalg_test_chol_col_cross() > before,
                "chol_col never launched groups for a second later column tile");
}
END_TEST

/*
 * Complex QR on qr_panel_grid (the linalg family's pwg > 1; one work-group on CPUs): tall,
 * wide and batched shapes, more rows than one launch holds (qr_panel then), lstsq, columns
 * scaled from tiny to huge, zero and triangular columns (a complex diagonal over zeros still
 * gets its reflector), T left to qr_larft, one row per lane, panels of 64 columns and leaves.
 */
START_TEST(qr_grid_panel)
{
  /* its groups exchange through global memory across work-items by design, which the
   * simulator's race detector reports */
  if (harness_small())
    return;
  unsigned before = kiln__linalg_test_qr_grid_launches();
  kiln__linalg_test_pwg(2);
  kiln__linalg_test_route(KILN__LINALG_ROUTE_DEVICE);
  double sc[24];
  FOR_DTYPES(dt)
  {
    qr_case(dt, 1, 97, 61, KILN_QR_REDUCED);
    qr_case(dt, 1, 61, 97, KILN_QR_COMPLETE);
    qr_case(dt, 1, 300, 20, KILN_QR_REDUCED); /* more rows than a CPU launch holds */
    qr_case(dt, 2, 40, 40, KILN_QR_REDUCED);
    lstsq_case(dt, 1, 41, 17, 2, 0);
    /* column scales 2^-60 .. 2^60 (c64) or 2^-900 .. 2^900, a zero column, all huge */
    int hi = dt == KILN_C64 ? 60 : 900;
    for (int j = 0; j < 24; j++)
      sc[j] = j == 5 ? 0.0 : ldexp(1.0, -hi + 2 * hi * j / 23);
    qr_case_x(dt, 1, 90, 24, KILN_QR_REDUCED, sc, 0);
    for (int j = 0; j < 8; j++)
      sc[j] = ldexp(1.0, dt == KILN_C64 ? 70 : 600);
    qr_case_x(dt, 1, 70, 8, KILN_QR_REDUCED, sc, 0);
    for (int j = 0; j < 8; j++)
      sc[j] = ldexp(1.0, dt == KILN_C64 ? -70 : -600);
    qr_case_x(dt, 1, 70, 8, KILN_QR_REDUCED, sc, 0);
    qr_case_x(dt, 1, 30, 20, KILN_QR_COMPLETE, NULL, 1);
  }
  /* T left to qr_larft, and one row per lane (more groups on a GPU) */
  setenv("KILN_DEBUG_QR_GRID", "t=0", 1);
  FOR_DTYPES(dt)
  {
    qr_case(dt, 1, 70, 33, KILN_QR_REDUCED);
  }
  setenv("KILN_DEBUG_QR_GRID", "rows=1", 1);
  FOR_DTYPES(dt)
  {
    qr_case(dt, 2, 40, 25, KILN_QR_REDUCED);
  }
  unsetenv("KILN_DEBUG_QR_GRID");
  FOR_DTYPES(dt)
  {
    kiln__linalg_spectral_test_set(64, dt == KILN_C64 ? 1 : -1, -1);
    qr_case(dt, 1, 100, 100, KILN_QR_REDUCED);
    qr_case(dt, 1, 130, 70, KILN_QR_COMPLETE);
    kiln__linalg_spectral_test_set(100, dt == KILN_C64 ? 1 : -1, 3);
    qr_case(dt, 1, 120, 110, KILN_QR_REDUCED);
  }
  ck_assert_msg(kiln__linalg_test_qr_grid_launches() > before,
                "complex QR never launched qr_panel_grid");
}
END_TEST

/*
 * Complex products on the real large GEMM kernel (cplx_expand's real form of B, the real views
 * of A and C), from 16 rows and columns on: LU square and tall, Cholesky both triangles (the
 * update's triangle by complex columns) with one- and two-level panels, blocked triangular
 * solves with every transpose, QR. The route must have run (its counter moves), and fails the
 * backward-error checks when the real form is wrong.
 */
static void
large_complex_cases(void)
{
  unsigned before = kiln__linalg_test_cplx_large();
  kiln__linalg_test_cplx_large_on(1);
  kiln__linalg_test_large_min(16);
  kiln__linalg_test_route(KILN__LINALG_ROUTE_DEVICE);
  hook_gemm = KILN__LINALG_GEMM_LARGE;
  hook_small = 0;
  for (hook_nb = 16; hook_nb <= 64; hook_nb *= 4) {
    FOR_DTYPES(dt)
    {
      lu_case(dt, 0, NULL, 150, 131);
      lu_case(dt, 0, NULL, 131, 70);
      chol_case(dt, 150, 1, KILN_LOWER);
      chol_case(dt, 150, 1, KILN_UPPER);
    }
  }
  hook_nb = 128;
  FOR_DTYPES(dt)
  {
    chol_case(dt, 300, 1, KILN_LOWER);
  }
  hook_nb = 16;
  static const kiln_trans ts[3] = {KILN_NO_TRANS, KILN_TRANS, KILN_CONJ_TRANS};
  FOR_DTYPES(dt)
  {
    for (int t = 0; t < 3; t++)
      for (int up_ = 0; up_ < 2; up_++)
        tri_case(dt, KILN_LEFT, up_ ? KILN_UPPER : KILN_LOWER, ts[t], KILN_NON_UNIT, 70, 40, 1);
  }
  FOR_DTYPES(dt)
  {
    kiln__linalg_spectral_test_set(16, dt == KILN_C64 ? 1 : -1, 3);
    qr_case(dt, 1, 150, 70, KILN_QR_REDUCED);
    qr_case(dt, 1, 70, 150, KILN_QR_COMPLETE);
  }
  /* QR in two levels (the large kernel's bit enables them on GPUs): 64-column outer blocks
   * of 16-column panels */
  kiln__linalg_spectral_test_nb2(64);
  FOR_DTYPES(dt)
  {
    kiln__linalg_spectral_test_set(16, dt == KILN_C64 ? 1 : -1, 3);
    qr_case(dt, 1, 150, 70, KILN_QR_REDUCED);
    qr_case(dt, 1, 70, 150, KILN_QR_COMPLETE);
  }
  kiln__linalg_spectral_test_nb2(-1);
  kiln__linalg_test_large_min(-1);
  ck_assert_msg(kiln__linalg_test_cplx_large() > before,
                "no complex product ran on the real large kernel");
}

START_TEST(large_gemm_complex)
{
  if (harness_small()) /* each large-kernel launch takes seconds in the simulator */
    return;
  /* Both of the large route's kernels on every device: gemm_large.cl, then gemm_cpu.cl. */
  for (int form = 1; form <= 2; form++) {
    kiln__blas_test_large_form(form);
    uint64_t cpu = kiln__blas_test_cpu_calls();
    large_complex_cases();
    ck_assert_int_eq(kiln__blas_test_cpu_calls() > cpu, form == 2);
  }
  kiln__blas_test_large_form(0);
}
END_TEST

static void
single_case(Suite *s, const char *name, const TTest *test)
{
  TCase *tc = tcase_create(name);
  tcase_set_timeout(tc, 300);
  tcase_add_checked_fixture(tc, reset_hooks, NULL);
  tcase_add_test(tc, test);
  suite_add_tcase(s, tc);
}

static Suite *
linalg_complex_suite(void)
{
  Suite *s = suite_create("linalg_complex");
  TCase *tc = tcase_create("all");
  tcase_set_timeout(tc, 300);
  tcase_add_checked_fixture(tc, reset_hooks, NULL);
  tcase_add_test(tc, lu_factor);
  tcase_add_test(tc, lu_blocked_paths);
  tcase_add_test(tc, lu_unpacked);
  tcase_add_test(tc, solve_and_lu_solve);
  tcase_add_test(tc, inverse);
  tcase_add_test(tc, determinants);
  tcase_add_test(tc, condition_estimate);
  tcase_add_test(tc, cholesky);
  tcase_add_test(tc, cholesky_indefinite);
  tcase_add_test(tc, triangular);
  tcase_add_test(tc, qr);
  tcase_add_test(tc, lstsq);
  tcase_add_test(tc, eigh_and_svd);
  tcase_add_test(tc, pinv_rank_norms);
  tcase_add_test(tc, batched_bitwise);
  tcase_add_test(tc, singular_and_bad_input);
  suite_add_tcase(s, tc);
  /* one test each, in their order, so that a run can take one alone (CK_RUN_CASE) */
  single_case(s, "chol", cholesky_panels);
  single_case(s, "qrgrid", qr_grid_panel);
  single_case(s, "cplxlarge", large_gemm_complex);
  return s;
}

int
main(void)
{
  return harness_main(linalg_complex_suite(), 1);
}
