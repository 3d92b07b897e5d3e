/*
 * stats suite: histogram (range, default range, edges, 2-D), bincount, quantile/percentile
 * (every method, NaN propagation and omission), cov and corrcoef, against host references
 * written after NumPy's algorithms in C.
 *
 * Histogram references bin in the input's precision with NumPy's index arithmetic and
 * edge fix-up, so counts must match exactly; weighted sums match within the dtype's
 * rounding (atomics add in any order). Quantile references sort in double and interpolate
 * as NumPy's _lerp; the device interpolates in the input's dtype (tolerance 1e-6 for f32,
 * 1e-12 for f64). cov/corrcoef references are the textbook double sums (f32 tolerance 2e-5).
 *
 * Coverage: f32 and f64 (f64 with fp64); sizes 0, 1, primes, non-multiples of the
 * work-group size and a larger one (a few hundred thousand); both histogram paths (local
 * and global atomics) and the automatic choice past the local-memory limit; both quantile
 * paths (work-group sort, global pair sort) on the same data, rows longer than the local
 * limit, axes first/middle/last and whole-tensor, keepdims; values on edges, outside the
 * range, NaN, +-inf; all-equal data; weights; bad input.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expect_close.h"
#include "harness.h"
#include "nn_hostdata.h"
#include "ops/tuned.h"
#include "runtime/launch.h"

static const kiln_dtype dtypes[] = {KILN_F32, KILN_F64};
#define FOR_DTYPES(dt)                                                                      \
  for (size_t dt##_i = 0; dt##_i < 2; dt##_i++)                                             \
    for (int dt##_k = dtypes[dt##_i] != KILN_F64 || harness_has_fp64(); dt##_k; dt##_k = 0) \
      for (kiln_dtype dt = dtypes[dt##_i]; dt##_k; dt##_k = 0)

static kiln_tensor *
up1(kiln_dtype dt, uint64_t n, const double *v)
{
  int64_t shape[1] = {(int64_t)n};
  return up(dt, 1, shape, v);
}

/* ---------------------------------------------------------------- histogram references */

/* NumPy's uniform bin index, in float or double as the device computes it. */
#define REF_BIN(NAME, TY)                                            \
  static long NAME(double vd, double lod, double hid, uint64_t nb)   \
  {                                                                  \
    TY v = (TY)vd, lo = (TY)lod, hi = (TY)hid;                       \
    if (!(v >= lo && v <= hi))                                       \
      return -1;                                                     \
    TY width = hi - lo;                                              \
    long i = (long)((TY)((TY)(v - lo) / width) * (TY)nb);            \
    if (i >= (long)nb)                                               \
      i = (long)nb - 1;                                              \
    TY step = width / (TY)nb;                                        \
    TY ei = (TY)((TY)i * step) + lo;                                 \
    TY ei1 = i + 1 == (long)nb ? hi : (TY)((TY)(i + 1) * step) + lo; \
    if (v < ei)                                                      \
      i--;                                                           \
    else if (v >= ei1 && i != (long)nb - 1)                          \
      i++;                                                           \
    return i;                                                        \
  }
REF_BIN(ref_bin_f, float)
REF_BIN(ref_bin_d, double)

static long
ref_bin(kiln_dtype dt, double v, double lo, double hi, uint64_t nb)
{
  return dt == KILN_F32 ? ref_bin_f(v, lo, hi, nb) : ref_bin_d(v, lo, hi, nb);
}

/* Data in [-1, 2] with NaN, +-inf, exact edges of [lo, hi] with nb bins and both bounds. */
static double *
hist_data(kiln_dtype dt, uint64_t n, double lo, double hi, uint64_t nb)
{
  double *v = malloc((n ? n : 1) * sizeof *v);
  for (uint64_t i = 0; i < n; i++) {
    switch (i % 11) {
    case 3:
      v[i] = lo + (double)(i % (nb + 1)) * ((hi - lo) / (double)nb); /* on an edge */
      break;
    case 5:
      v[i] = i % 2 ? hi : lo;
      break;
    case 7:
      v[i] = i % 3 == 0 ? NAN : i % 3 == 1 ? INFINITY : -INFINITY;
      break;
    default:
      v[i] = urand(-1, 2);
    }
  }
  round_to(dt, v, n);
  return v;
}

static void
check_counts(const kiln_tensor *got_t, const double *want, uint64_t nb, const char *what)
{
  ck_assert_int_eq(kiln_tensor_dtype(got_t), KILN_I64);
  ck_assert_uint_eq(kiln_tensor_numel(got_t), nb);
  double *got = down(got_t);
  for (uint64_t b = 0; b < nb; b++)
    EXPECT(got[b] == want[b], "%s: bin %llu holds %.0f, expected %.0f", what, (unsigned long long)b,
           got[b], want[b]);
  free(got);
}

static const kiln_stats_path paths[] = {KILN_STATS_AUTO, KILN_STATS_LOCAL, KILN_STATS_GLOBAL};

START_TEST(test_histogram_range)
{
  kiln_context *ctx = harness_ctx();
  const uint64_t sizes[] = {0, 1, 7, 257, 1000, 10007, 300007};
  const uint64_t binss[] = {1, 10, 37};
  FOR_DTYPES(dt)
  {
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
      uint64_t n = sizes[si];
      if (!harness_fits(n) || (harness_small() && (n == 7 || n == 1000)))
        continue;
      for (size_t bi = 0; bi < 3; bi++) {
        uint64_t nb = binss[bi];
        if (harness_small() && nb == 10)
          continue;
        double range[2] = {-0.5, 1.5};
        double *v = hist_data(dt, n, range[0], range[1], nb);
        double *w = malloc((n ? n : 1) * sizeof *w);
        for (uint64_t i = 0; i < n; i++)
          w[i] = urand(0, 1);
        round_to(dt, w, n);
        double *want = calloc(nb, sizeof *want), *wantw = calloc(nb, sizeof *wantw);
        for (uint64_t i = 0; i < n; i++) {
          long b = ref_bin(dt, v[i], range[0], range[1], nb);
          if (b >= 0) {
            want[b] += 1;
            wantw[b] += w[i];
          }
        }
        kiln_tensor *x = up1(dt, n, v), *wt = up1(dt, n, w);
        for (size_t pi = 0; pi < 3; pi++) {
          kiln_histogram_options o = {.path = paths[pi]};
          kiln_tensor *h = NULL, *hw = NULL;
          double used[2];
          KOK(kiln_histogram(ctx, x, nb, range, NULL, &o, used, &h));
          ck_assert(used[0] == -0.5 && used[1] == 1.5);
          char what[96];
          snprintf(what, sizeof what, "histogram %s n %llu bins %llu path %d", kiln_dtype_name(dt),
                   (unsigned long long)n, (unsigned long long)nb, (int)paths[pi]);
          check_counts(h, want, nb, what);
          KOK(kiln_histogram(ctx, x, nb, range, wt, &o, NULL, &hw));
          ck_assert_int_eq(kiln_tensor_dtype(hw), dt);
          double *got = down(hw);
          expect_close(got, wantw, nb, dt == KILN_F32 ? 1e-5 : 1e-12, "weighted histogram");
          free(got);
          kiln_tensor_release(h);
          kiln_tensor_release(hw);
        }
        kiln_tensor_release(x);
        kiln_tensor_release(wt);
        free(v);
        free(w);
        free(want);
        free(wantw);
      }
    }
  }
}
END_TEST

/* Default range: min/max of the finite data; all-equal data widened by 0.5; no data (0, 1). */
START_TEST(test_histogram_default_range)
{
  kiln_context *ctx = harness_ctx();
  FOR_DTYPES(dt)
  {
    uint64_t n = 1009, nb = 13;
    double *v = malloc(n * sizeof *v);
    for (uint64_t i = 0; i < n; i++)
      v[i] = i == 17 ? NAN : urand(-3, 5);
    round_to(dt, v, n);
    double mn = INFINITY, mx = -INFINITY;
    for (uint64_t i = 0; i < n; i++)
      if (!isnan(v[i])) {
        mn = fmin(mn, v[i]);
        mx = fmax(mx, v[i]);
      }
    double want[13] = {0};
    for (uint64_t i = 0; i < n; i++) {
      long b = ref_bin(dt, v[i], mn, mx, nb);
      if (b >= 0)
        want[b]++;
    }
    kiln_tensor *x = up1(dt, n, v), *h = NULL;
    double used[2];
    KOK(kiln_histogram(ctx, x, nb, NULL, NULL, NULL, used, &h));
    ck_assert(used[0] == mn && used[1] == mx);
    check_counts(h, want, nb, "default range");
    double total = 0;
    for (uint64_t b = 0; b < nb; b++)
      total += want[b];
    ck_assert(total == (double)(n - 1)); /* every non-NaN element, min and max included */
    kiln_tensor_release(h);
    kiln_tensor_release(x);
    /* All equal: [v - 0.5, v + 0.5], the values in the middle bin (NumPy). */
    for (uint64_t i = 0; i < 50; i++)
      v[i] = 2.25;
    x = up1(dt, 50, v);
    h = NULL;
    KOK(kiln_histogram(ctx, x, 10, NULL, NULL, NULL, used, &h));
    ck_assert(used[0] == 1.75 && used[1] == 2.75);
    double eq[10] = {0, 0, 0, 0, 0, 50, 0, 0, 0, 0};
    check_counts(h, eq, 10, "all equal");
    kiln_tensor_release(h);
    /* An explicit range with lo == hi widens the same way. */
    double r[2] = {2.25, 2.25};
    h = NULL;
    KOK(kiln_histogram(ctx, x, 10, r, NULL, NULL, used, &h));
    check_counts(h, eq, 10, "lo == hi");
    kiln_tensor_release(h);
    kiln_tensor_release(x);
    /* Empty input: range (0, 1), zero counts. */
    x = up1(dt, 0, v);
    h = NULL;
    KOK(kiln_histogram(ctx, x, 4, NULL, NULL, NULL, used, &h));
    ck_assert(used[0] == 0 && used[1] == 1);
    double zeros[4] = {0};
    check_counts(h, zeros, 4, "empty");
    kiln_tensor_release(h);
    kiln_tensor_release(x);
    /* Infinite data with a default range: refused as NumPy does. */
    v[0] = INFINITY;
    x = up1(dt, 3, v);
    h = NULL;
    KEXPECT(kiln_histogram(ctx, x, 4, NULL, NULL, NULL, NULL, &h), KILN_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(h);
    kiln_tensor_release(x);
    free(v);
  }
}
END_TEST

/* More bins than a local histogram holds: the automatic choice takes global atomics. */
START_TEST(test_histogram_many_bins)
{
  kiln_context *ctx = harness_ctx();
  uint64_t n = harness_size(200003, 1000), nb = 20011;
  double range[2] = {0, 1};
  double *v = hist_data(KILN_F32, n, 0, 1, nb);
  double *want = calloc(nb, sizeof *want);
  for (uint64_t i = 0; i < n; i++) {
    long b = ref_bin(KILN_F32, v[i], 0, 1, nb);
    if (b >= 0)
      want[b]++;
  }
  kiln_tensor *x = up1(KILN_F32, n, v), *h = NULL;
  KOK(kiln_histogram(ctx, x, nb, range, NULL, NULL, NULL, &h));
  check_counts(h, want, nb, "many bins");
  kiln_histogram_options o = {.path = KILN_STATS_LOCAL};
  kiln_tensor *h2 = NULL;
  KEXPECT(kiln_histogram(ctx, x, nb, range, NULL, &o, NULL, &h2), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(h2);
  /* A given output is written (and fully: no stale counts). */
  o.path = KILN_STATS_GLOBAL;
  KOK(kiln_histogram(ctx, x, nb, range, NULL, &o, NULL, &h));
  check_counts(h, want, nb, "many bins, given out");
  kiln_tensor_release(h);
  kiln_tensor_release(x);
  free(v);
  free(want);
}
END_TEST

START_TEST(test_histogram_edges)
{
  kiln_context *ctx = harness_ctx();
  /* Uneven edges with a repeated one (an empty bin [1, 1)) and a closed last bin. */
  const double e[] = {-1, -0.25, 0, 1, 1, 1.5, 2};
  const uint64_t ne = 7, nb = 6;
  FOR_DTYPES(dt)
  {
    const uint64_t sizes[] = {0, 1, 29, 4099};
    for (size_t si = 0; si < 4; si++) {
      uint64_t n = sizes[si];
      if (!harness_fits(n))
        continue;
      double *v = malloc((n ? n : 1) * sizeof *v), *w = malloc((n ? n : 1) * sizeof *w);
      for (uint64_t i = 0; i < n; i++) {
        v[i] = i % 5 == 0 ? e[i % ne] : i % 13 == 1 ? NAN : i % 17 == 2 ? 3 : urand(-1.5, 2.5);
        w[i] = urand(-1, 1);
      }
      round_to(dt, v, n);
      round_to(dt, w, n);
      double want[6] = {0}, wantw[6] = {0};
      for (uint64_t i = 0; i < n; i++) {
        if (!(v[i] >= e[0] && v[i] <= e[ne - 1]))
          continue;
        uint64_t b = 0;
        for (uint64_t k = 0; k < nb; k++)
          if (e[k] <= v[i])
            b = k;
        want[b]++;
        wantw[b] += w[i];
      }
      kiln_tensor *x = up1(dt, n, v), *et = up1(dt, ne, e), *wt = up1(dt, n, w);
      for (size_t pi = 0; pi < 3; pi++) {
        kiln_histogram_options o = {.path = paths[pi]};
        kiln_tensor *h = NULL, *hw = NULL;
        KOK(kiln_histogram_edges(ctx, x, et, NULL, &o, &h));
        check_counts(h, want, nb, "edges");
        KOK(kiln_histogram_edges(ctx, x, et, wt, &o, &hw));
        double *got = down(hw);
        expect_close(got, wantw, nb, dt == KILN_F32 ? 1e-5 : 1e-12, "weighted edges");
        free(got);
        kiln_tensor_release(h);
        kiln_tensor_release(hw);
      }
      kiln_tensor_release(x);
      kiln_tensor_release(et);
      kiln_tensor_release(wt);
      free(v);
      free(w);
    }
    /* Decreasing or NaN edges, and too few, are refused. */
    double bad[3] = {0, 2, 1}, nanv[3] = {0, NAN, 1};
    kiln_tensor *x = up1(dt, 1, bad), *b1 = up1(dt, 3, bad), *b2 = up1(dt, 3, nanv),
                *b3 = up1(dt, 1, bad), *h = NULL;
    KEXPECT(kiln_histogram_edges(ctx, x, b1, NULL, NULL, &h), KILN_ERR_INVALID_ARGUMENT);
    KEXPECT(kiln_histogram_edges(ctx, x, b2, NULL, NULL, &h), KILN_ERR_INVALID_ARGUMENT);
    KEXPECT(kiln_histogram_edges(ctx, x, b3, NULL, NULL, &h), KILN_ERR_SHAPE);
    ck_assert_ptr_null(h);
    kiln_tensor_release(x);
    kiln_tensor_release(b1);
    kiln_tensor_release(b2);
    kiln_tensor_release(b3);
  }
}
END_TEST

START_TEST(test_histogram2d)
{
  kiln_context *ctx = harness_ctx();
  FOR_DTYPES(dt)
  {
    const uint64_t sizes[] = {0, 1, 211, 20011};
    for (size_t si = 0; si < 4; si++) {
      uint64_t n = sizes[si], nbx = 7, nby = 5;
      if (!harness_fits(n))
        continue;
      double *xv = hist_data(dt, n, 0, 1, nbx), *yv = hist_data(dt, n, -1, 1.5, nby);
      double *w = malloc((n ? n : 1) * sizeof *w);
      for (uint64_t i = 0; i < n; i++) {
        yv[i] = yv[(i * 7) % n]; /* decorrelate the special values */
        w[i] = urand(0, 2);
      }
      round_to(dt, w, n);
      for (int def = 0; def < 2; def++) {
        double range[4] = {0, 1, -1, 1.5};
        if (def) { /* default range: only finite data */
          for (uint64_t i = 0; i < n; i++) {
            if (!isfinite(xv[i]))
              xv[i] = 0.5;
            if (!isfinite(yv[i]))
              yv[i] = 0.25;
          }
          double mnx = INFINITY, mxx = -INFINITY, mny = INFINITY, mxy = -INFINITY;
          for (uint64_t i = 0; i < n; i++) {
            mnx = fmin(mnx, xv[i]);
            mxx = fmax(mxx, xv[i]);
            mny = fmin(mny, yv[i]);
            mxy = fmax(mxy, yv[i]);
          }
          if (n == 0) {
            mnx = mny = 0;
            mxx = mxy = 1;
          }
          if (mnx == mxx) {
            mnx -= 0.5;
            mxx += 0.5;
          }
          if (mny == mxy) {
            mny -= 0.5;
            mxy += 0.5;
          }
          range[0] = mnx;
          range[1] = mxx;
          range[2] = mny;
          range[3] = mxy;
        }
        double *want = calloc(nbx * nby, sizeof *want), *wantw = calloc(nbx * nby, sizeof *want);
        for (uint64_t i = 0; i < n; i++) {
          long bx = ref_bin(dt, xv[i], range[0], range[1], nbx);
          long by = ref_bin(dt, yv[i], range[2], range[3], nby);
          if (bx >= 0 && by >= 0) {
            want[bx * (long)nby + by]++;
            wantw[bx * (long)nby + by] += w[i];
          }
        }
        kiln_tensor *x = up1(dt, n, xv), *y = up1(dt, n, yv), *wt = up1(dt, n, w);
        for (size_t pi = 0; pi < 3; pi++) {
          kiln_histogram_options o = {.path = paths[pi]};
          kiln_tensor *h = NULL, *hw = NULL;
          double used[4];
          KOK(kiln_histogram2d(ctx, x, y, nbx, nby, def ? NULL : range, NULL, &o, used, &h));
          ck_assert_int_eq(kiln_tensor_ndim(h), 2);
          ck_assert_int_eq(kiln_tensor_dim(h, 0), (int64_t)nbx);
          for (int k = 0; k < 4; k++)
            EXPECT(used[k] == (double)(dt == KILN_F32 ? (double)(float)range[k] : range[k]),
                   "range_used[%d] %g, expected %g", k, used[k], range[k]);
          check_counts(h, want, nbx * nby, "histogram2d");
          KOK(kiln_histogram2d(ctx, x, y, nbx, nby, def ? NULL : range, wt, &o, NULL, &hw));
          double *got = down(hw);
          expect_close(got, wantw, nbx * nby, dt == KILN_F32 ? 1e-5 : 1e-12, "weighted 2d");
          free(got);
          kiln_tensor_release(h);
          kiln_tensor_release(hw);
        }
        kiln_tensor_release(x);
        kiln_tensor_release(y);
        kiln_tensor_release(wt);
        free(want);
        free(wantw);
      }
      free(xv);
      free(yv);
      free(w);
    }
  }
}
END_TEST

START_TEST(test_bincount)
{
  kiln_context *ctx = harness_ctx();
  const kiln_dtype xdts[] = {KILN_I32, KILN_I64, KILN_U8, KILN_BOOL};
  const uint64_t sizes[] = {0, 1, 97, 65537};
  for (size_t di = 0; di < 4; di++) {
    kiln_dtype xdt = xdts[di];
    for (size_t si = 0; si < 4; si++) {
      uint64_t n = sizes[si];
      if (!harness_fits(n))
        continue;
      int64_t top = xdt == KILN_BOOL ? 1 : xdt == KILN_U8 ? 255 : 3000;
      void *h = malloc((n ? n : 1) * 8);
      double *xv = malloc((n ? n : 1) * sizeof *xv), *w = malloc((n ? n : 1) * sizeof *w);
      for (uint64_t i = 0; i < n; i++) {
        int64_t v = (int64_t)urand(0, (double)top + 0.999);
        if (i % 7 == 0)
          v = 3 % (top + 1);
        xv[i] = (double)v;
        w[i] = urand(-1, 1);
        if (xdt == KILN_I32)
          ((int32_t *)h)[i] = (int32_t)v;
        else if (xdt == KILN_I64)
          ((int64_t *)h)[i] = v;
        else
          ((uint8_t *)h)[i] = (uint8_t)v;
      }
      int64_t shape[1] = {(int64_t)n};
      kiln_tensor *x = NULL;
      KOK(kiln_tensor_from_host(ctx, xdt, 1, shape, h, &x));
      const uint64_t minlens[] = {0, 10, 3500};
      for (size_t mi = 0; mi < 3; mi++) {
        if (harness_small() && mi == 2)
          continue;
        int64_t mx = -1;
        for (uint64_t i = 0; i < n; i++)
          mx = (int64_t)xv[i] > mx ? (int64_t)xv[i] : mx;
        uint64_t len = (uint64_t)(mx + 1) > minlens[mi] ? (uint64_t)(mx + 1) : minlens[mi];
        double *want = calloc(len + 1, sizeof *want);
        for (uint64_t i = 0; i < n; i++)
          want[(int64_t)xv[i]]++;
        kiln_histogram_options o = {.path = paths[(si + mi) % 3]};
        kiln_tensor *c = NULL;
        KOK(kiln_bincount(ctx, x, NULL, minlens[mi], &o, &c));
        check_counts(c, want, len, "bincount");
        kiln_tensor_release(c);
        free(want);
        FOR_DTYPES(wdt)
        {
          double *ww = malloc((n ? n : 1) * sizeof *ww), *wantw = calloc(len + 1, sizeof *wantw);
          double *absw = calloc(len + 1, sizeof *absw);
          memcpy(ww, w, n * sizeof *ww);
          round_to(wdt, ww, n);
          for (uint64_t i = 0; i < n; i++) {
            wantw[(int64_t)xv[i]] += ww[i];
            absw[(int64_t)xv[i]] += fabs(ww[i]);
          }
          kiln_tensor *wt = up1(wdt, n, ww), *cw = NULL;
          KOK(kiln_bincount(ctx, x, wt, minlens[mi], &o, &cw));
          ck_assert_int_eq(kiln_tensor_dtype(cw), wdt);
          ck_assert_uint_eq(kiln_tensor_numel(cw), len);
          double *got = down(cw);
          /* Sums of thousands of terms in any order: the error scales with sum |w|. */
          for (uint64_t b = 0; b < len; b++)
            EXPECT(fabs(got[b] - wantw[b]) <= (wdt == KILN_F32 ? 1e-5 : 1e-13) * (1 + absw[b]),
                   "weighted bincount bin %llu: %.17g, expected %.17g", (unsigned long long)b,
                   got[b], wantw[b]);
          free(absw);
          free(got);
          kiln_tensor_release(cw);
          kiln_tensor_release(wt);
          free(ww);
          free(wantw);
        }
      }
      kiln_tensor_release(x);
      free(h);
      free(xv);
      free(w);
    }
  }
  /* Negative values are refused; float input and a weights length mismatch too. */
  int32_t neg[3] = {1, -2, 3};
  int64_t shape[1] = {3};
  kiln_tensor *x = NULL, *c = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_I32, 1, shape, neg, &x));
  KEXPECT(kiln_bincount(ctx, x, NULL, 0, NULL, &c), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(c);
  double wv[2] = {1, 2};
  kiln_tensor *w2 = up1(KILN_F32, 2, wv);
  KEXPECT(kiln_bincount(ctx, x, w2, 0, NULL, &c), KILN_ERR_SHAPE);
  KEXPECT(kiln_bincount(ctx, w2, NULL, 0, NULL, &c), KILN_ERR_DTYPE);
  kiln_histogram_options bad = {.path = (kiln_stats_path)7};
  neg[1] = 2;
  KOK(kiln_tensor_upload(x, neg, sizeof neg));
  KEXPECT(kiln_bincount(ctx, x, NULL, 0, &bad, &c), KILN_ERR_INVALID_ARGUMENT);
  kiln_tensor_release(x);
  kiln_tensor_release(w2);
}
END_TEST

/* ---------------------------------------------------------------- quantile references */

static int
cmp_nan_last(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  if (isnan(x) || isnan(y))
    return isnan(x) - isnan(y);
  return (x > y) - (x < y);
}

static double
ref_lerp(double a, double b, double t)
{
  if (a == b)
    return a;
  double d = b - a;
  return t >= 0.5 ? b - d * (1 - t) : a + d * t;
}

/* NumPy's quantile of n values (sorted in place), as the header documents it. */
static double
ref_quantile(double *v, uint64_t n, double q, kiln_quantile_method m, int omit)
{
  qsort(v, n, sizeof *v, cmp_nan_last);
  uint64_t nv = 0;
  while (nv < n && !isnan(v[nv]))
    nv++;
  if (nv == 0 || (!omit && nv < n))
    return NAN;
  double pos = q * (double)(nv - 1), fl = floor(pos);
  uint64_t i0 = (uint64_t)fl, i1 = i0;
  double g = 0;
  switch (m) {
  case KILN_QUANTILE_LOWER:
    break;
  case KILN_QUANTILE_HIGHER:
    i0 = i1 = (uint64_t)ceil(pos);
    break;
  case KILN_QUANTILE_NEAREST:
    i0 = i1 = (uint64_t)nearbyint(pos);
    break;
  case KILN_QUANTILE_MIDPOINT:
    i1 = (uint64_t)ceil(pos);
    g = 0.5;
    break;
  default:
    i1 = i0 + 1;
    g = pos - fl;
  }
  i0 = i0 > nv - 1 ? nv - 1 : i0;
  i1 = i1 > nv - 1 ? nv - 1 : i1;
  return i0 == i1 ? v[i0] : ref_lerp(v[i0], v[i1], g);
}

/* Quantiles of x (shape nd) along axis (or all when axis < -nd) vs the reference. */
static void
check_quantile(kiln_dtype dt, size_t nd, const int64_t *shape, const double *xv, int has_axis,
               int64_t axis, const double *q, size_t nq, kiln_quantile_options o, double scale)
{
  kiln_context *ctx = harness_ctx();
  uint64_t n = 1;
  for (size_t i = 0; i < nd; i++)
    n *= (uint64_t)shape[i];
  size_t ax = has_axis ? (size_t)(axis < 0 ? axis + (int64_t)nd : axis) : 0;
  uint64_t len = has_axis ? (uint64_t)shape[ax] : n, inner = 1,
           rows = has_axis ? n / (len ? len : 1) : 1;
  if (has_axis) {
    for (size_t i = ax + 1; i < nd; i++)
      inner *= (uint64_t)shape[i];
    if (len == 0) {
      rows = 1;
      for (size_t i = 0; i < nd; i++)
        if (i != ax)
          rows *= (uint64_t)shape[i];
    }
  }
  kiln_tensor *x = up(dt, nd, shape, xv), *out = NULL;
  kiln_status s = scale == 1 ? kiln_quantile(ctx, x, q, nq, 1, has_axis ? &axis : NULL, &o, &out)
                             : kiln_percentile(ctx, x, q, nq, 1, has_axis ? &axis : NULL, &o, &out);
  ck_assert_msg(s == KILN_OK, "quantile: %s", kiln_last_error());
  ck_assert_uint_eq(kiln_tensor_numel(out), nq * rows);
  ck_assert_int_eq(kiln_tensor_dim(out, 0), (int64_t)nq);
  ck_assert_uint_eq(kiln_tensor_ndim(out), 1 + (o.keepdims ? nd : has_axis ? nd - 1 : 0));
  double *got = down(out), *row = malloc((len ? len : 1) * sizeof *row);
  for (uint64_t r = 0; r < rows; r++) {
    for (size_t qi = 0; qi < nq; qi++) {
      for (uint64_t j = 0; j < len; j++)
        row[j] = xv[(r / inner) * len * inner + r % inner + j * inner];
      double want = ref_quantile(row, len, q[qi] / scale, o.method, o.nan_policy == KILN_NAN_OMIT);
      EXPECT(close_to(got[qi * rows + r], want, dt == KILN_F32 ? 1e-6 : 1e-12),
             "quantile %s method %d path %d q %g row %llu of len %llu: %.17g, expected %.17g",
             kiln_dtype_name(dt), (int)o.method, (int)o.path, q[qi], (unsigned long long)r,
             (unsigned long long)len, got[qi * rows + r], want);
    }
  }
  free(got);
  free(row);
  kiln_tensor_release(out);
  kiln_tensor_release(x);
}

static double *
quant_data(kiln_dtype dt, uint64_t n, int nans, int dups)
{
  double *v = malloc((n ? n : 1) * sizeof *v);
  for (uint64_t i = 0; i < n; i++) {
    v[i] = dups ? floor(urand(-4, 4)) : urand(-10, 10);
    if (nans && i % 9 == 4)
      v[i] = NAN;
    if (i % 23 == 11)
      v[i] = i % 2 ? INFINITY : -INFINITY;
    if (i % 31 == 7)
      v[i] = -0.0;
  }
  round_to(dt, v, n);
  return v;
}

static const kiln_stats_path qpaths[] = {KILN_STATS_AUTO, KILN_STATS_LOCAL, KILN_STATS_GLOBAL,
                                         KILN_STATS_SERIAL};

static const double qs[] = {0, 1, 0.5, 0.25, 0.1, 0.9, 0.3333, 0.75, 0.999};

START_TEST(test_quantile_methods)
{
  const uint64_t lens[] = {0, 1, 2, 3, 7, 31, 256, 1021};
  FOR_DTYPES(dt)
  {
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
      uint64_t len = lens[li];
      if (harness_small() && (len == 3 || len > 64))
        continue;
      for (int nans = harness_small(); nans < 2; nans++) {
        double *v = quant_data(dt, 3 * len, nans, li % 2);
        int64_t shape[2] = {3, (int64_t)len};
        for (int m = 0; m <= KILN_QUANTILE_MIDPOINT; m++) {
          for (int omit = 0; omit < 2; omit++) {
            for (size_t pi = 0; pi < 4; pi++) {
              /* AUTO is LOCAL (GPUs) or SERIAL (CPUs) below kiln_quantile_local_max(): checked
               * once, on the longest rows; the small mode (oclgrind) runs the global sort on one
               * length. */
              if (pi == 0 && (harness_small() || len != 1021))
                continue;
              if (harness_small() && pi == 2 && len != 7)
                continue;
              kiln_quantile_options o = {.method = (kiln_quantile_method)m,
                                         .nan_policy = omit ? KILN_NAN_OMIT : KILN_NAN_PROPAGATE,
                                         .path = qpaths[pi]};
              check_quantile(dt, 2, shape, v, 1, -1, qs, sizeof qs / sizeof *qs, o, 1);
            }
          }
        }
        free(v);
      }
    }
  }
}
END_TEST

/* Axes first, middle and last of a 3-D tensor, the whole tensor, keepdims, percentiles, rows
 * longer than the local sort (the automatic choice takes the global sort). */
START_TEST(test_quantile_axes)
{
  kiln_context *ctx = harness_ctx();
  FOR_DTYPES(dt)
  {
    int64_t shape[3] = {5, 6, 7};
    double *v = quant_data(dt, 210, 1, 0);
    for (int64_t ax = -3; ax < 3; ax++) {
      kiln_quantile_options o = {.nan_policy = KILN_NAN_OMIT, .keepdims = ax % 2 == 0};
      for (size_t pi = 0; pi < 4; pi++) {
        if (harness_small() && (pi == 0 || pi == 2))
          continue;
        o.path = qpaths[pi];
        check_quantile(dt, 3, shape, v, 1, ax, qs, 4, o, 1);
      }
    }
    /* The global path sorts (bitonic pairs) instead of selecting (radix) for many q, and for
     * many rows times q (above 4096 selections): 21 q, and 9 q over 300 rows. */
    double many_q[21];
    for (int i = 0; i < 21; i++)
      many_q[i] = i / 20.0;
    kiln_quantile_options og21 = {.nan_policy = KILN_NAN_OMIT, .path = KILN_STATS_GLOBAL};
    if (!harness_small()) {
      check_quantile(dt, 3, shape, v, 1, 2, many_q, 21, og21, 1);
      int64_t s300[2] = {300, 7};
      double *v300 = quant_data(dt, 2100, 1, 1);
      og21.nan_policy = KILN_NAN_PROPAGATE;
      check_quantile(dt, 2, s300, v300, 1, 1, qs, 9, og21, 1);
      free(v300);
    }
    kiln_quantile_options o = {.nan_policy = KILN_NAN_OMIT, .method = KILN_QUANTILE_NEAREST};
    check_quantile(dt, 3, shape, v, 0, 0, qs, 9, o, 1);
    o.keepdims = 1;
    double pct[3] = {0, 50, 100};
    check_quantile(dt, 3, shape, v, 0, 0, pct, 3, o, 100);
    free(v);
    /* Longer than the local limit, whole tensor and along an axis. */
    uint64_t lmax = kiln_quantile_local_max(ctx, dt);
    ck_assert_uint_ge(lmax, 64);
    uint64_t n = harness_small() ? 300 : lmax + 37;
    v = quant_data(dt, 2 * n, 0, 1);
    int64_t s2[2] = {(int64_t)n, 2};
    for (size_t pi = 0; pi < 4; pi++) {
      if (pi == 1 || (harness_small() && pi != 3)) /* longer than the local sort holds */
        continue;
      kiln_quantile_options og = {.method = KILN_QUANTILE_LINEAR, .path = qpaths[pi]};
      check_quantile(dt, 2, s2, v, 1, 0, qs, 9, og, 1);
      check_quantile(dt, 2, s2, v, 0, 0, qs, 9, og, 1);
      og.method = KILN_QUANTILE_MIDPOINT;
      check_quantile(dt, 2, s2, v, 1, 0, qs, 9, og, 1);
    }
    kiln_quantile_options og = {0};
    if (!harness_small()) {
      og.path = KILN_STATS_LOCAL;
      kiln_tensor *x = up(dt, 2, s2, v), *out = NULL;
      int64_t a0 = 0;
      KEXPECT(kiln_quantile(ctx, x, qs, 1, 0, &a0, &og, &out), KILN_ERR_INVALID_ARGUMENT);
      kiln_tensor_release(x);
    }
    free(v);
  }
}
END_TEST

/* A scalar q drops the q dimension; nq = 0; a given out; bad arguments. */
START_TEST(test_quantile_shapes_and_errors)
{
  kiln_context *ctx = harness_ctx();
  double v[6] = {3, 1, 2, 6, 5, 4};
  int64_t shape[2] = {2, 3};
  kiln_tensor *x = up(KILN_F32, 2, shape, v), *out = NULL;
  double q = 0.5;
  int64_t ax = 1;
  KOK(kiln_quantile(ctx, x, &q, 1, 0, &ax, NULL, &out));
  ck_assert_uint_eq(kiln_tensor_ndim(out), 1);
  double *got = down(out);
  ck_assert(got[0] == 2 && got[1] == 5);
  free(got);
  KOK(kiln_quantile(ctx, x, &q, 1, 0, &ax, NULL, &out)); /* into the given tensor */
  kiln_tensor_release(out);
  out = NULL;
  KOK(kiln_quantile(ctx, x, NULL, 0, 1, &ax, NULL, &out));
  ck_assert_uint_eq(kiln_tensor_numel(out), 0);
  kiln_tensor_release(out);
  out = NULL;
  KOK(kiln_quantile(ctx, x, &q, 1, 0, NULL, NULL, &out));
  ck_assert_uint_eq(kiln_tensor_ndim(out), 0);
  got = down(out);
  ck_assert(got[0] == 3.5);
  free(got);
  kiln_tensor_release(out);
  out = NULL;
  double badq[2] = {0.5, 1.5}, nanq = NAN, p = 101;
  KEXPECT(kiln_quantile(ctx, x, badq, 2, 1, &ax, NULL, &out), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_quantile(ctx, x, &nanq, 1, 0, &ax, NULL, &out), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_percentile(ctx, x, &p, 1, 0, &ax, NULL, &out), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_quantile(ctx, x, badq, 2, 0, &ax, NULL, &out), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_quantile(ctx, x, NULL, 1, 1, &ax, NULL, &out), KILN_ERR_INVALID_ARGUMENT);
  int64_t bad_ax = 2;
  KEXPECT(kiln_quantile(ctx, x, &q, 1, 0, &bad_ax, NULL, &out), KILN_ERR_INVALID_ARGUMENT);
  kiln_quantile_options o = {.method = (kiln_quantile_method)9};
  KEXPECT(kiln_quantile(ctx, x, &q, 1, 0, &ax, &o, &out), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_quantile(ctx, x, &q, 1, 0, &ax, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_quantile(ctx, NULL, &q, 1, 0, &ax, NULL, &out), KILN_ERR_INVALID_HANDLE);
  ck_assert_ptr_null(out);
  int32_t iv[2] = {1, 2};
  int64_t s1[1] = {2};
  kiln_tensor *xi = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_I32, 1, s1, iv, &xi));
  KEXPECT(kiln_quantile(ctx, xi, &q, 1, 0, NULL, NULL, &out), KILN_ERR_DTYPE);
  /* A given out of the wrong shape. */
  kiln_tensor *wrong = up1(KILN_F32, 3, v);
  KEXPECT(kiln_quantile(ctx, x, &q, 1, 0, &ax, NULL, &wrong), KILN_ERR_SHAPE);
  kiln_tensor_release(wrong);
  kiln_tensor_release(xi);
  kiln_tensor_release(x);
}
END_TEST

/* ---------------------------------------------------------------- cov references */

/* numpy.cov of x (variables x observations after the rowvar transpose) in double. */
static void
ref_cov(const double *x, uint64_t nvars, uint64_t nobs, int rowvar, int64_t ddof, const double *f,
        const double *a, int corr, double *c)
{
#define X(i, j) (rowvar ? x[(i)*nobs + (j)] : x[(j)*nvars + (i)])
  double v1 = 0, v2 = 0;
  double *w = malloc((nobs ? nobs : 1) * sizeof *w), *mean = malloc(nvars * sizeof *mean);
  for (uint64_t j = 0; j < nobs; j++) {
    w[j] = (f ? f[j] : 1) * (a ? a[j] : 1);
    v1 += w[j];
    v2 += w[j] * (a ? a[j] : 0);
  }
  double fact = a ? v1 - (double)ddof * v2 / v1 : v1 - (double)ddof;
  if (fact <= 0)
    fact = 0;
  for (uint64_t i = 0; i < nvars; i++) {
    double s = 0;
    for (uint64_t j = 0; j < nobs; j++)
      s += w[j] * X(i, j);
    mean[i] = s / v1;
  }
  for (uint64_t i = 0; i < nvars; i++)
    for (uint64_t k = 0; k < nvars; k++) {
      double s = 0;
      for (uint64_t j = 0; j < nobs; j++)
        s += (X(i, j) - mean[i]) * w[j] * (X(k, j) - mean[k]);
      c[i * nvars + k] = s / fact;
    }
  if (corr) {
    double *d = malloc(nvars * sizeof *d);
    for (uint64_t i = 0; i < nvars; i++)
      d[i] = c[i * nvars + i];
    for (uint64_t i = 0; i < nvars; i++)
      for (uint64_t k = 0; k < nvars; k++) {
        double r = nvars == 1 ? c[0] / c[0] : c[i * nvars + k] / sqrt(d[i]) / sqrt(d[k]);
        if (nvars > 1)
          r = r > 1 ? 1 : r < -1 ? -1 : r;
        c[i * nvars + k] = r;
      }
    free(d);
  }
  free(w);
  free(mean);
#undef X
}

static void
check_cov(kiln_dtype dt, uint64_t nvars, uint64_t nobs, int rowvar, int one_d, int64_t ddof,
          int use_f, int use_a, int corr, int constant_var)
{
  kiln_context *ctx = harness_ctx();
  uint64_t n = nvars * nobs;
  double *x = malloc((n ? n : 1) * sizeof *x), *f = malloc((nobs + 1) * sizeof *f),
         *a = malloc((nobs + 1) * sizeof *a);
  for (uint64_t i = 0; i < n; i++)
    x[i] = urand(-2, 3);
  if (constant_var && nvars > 1)
    for (uint64_t j = 0; j < nobs; j++) {
      if (rowvar)
        x[1 * nobs + j] = 1.5;
      else
        x[j * nvars + 1] = 1.5;
    }
  for (uint64_t j = 0; j < nobs; j++) {
    f[j] = floor(urand(0, 4));
    a[j] = urand(0.1, 2);
  }
  if (use_f && nobs)
    f[0] = 1; /* never all zero */
  round_to(dt, x, n);
  round_to(dt, a, nobs);
  double *want = malloc((nvars * nvars + 1) * sizeof *want);
  ref_cov(x, nvars, nobs, one_d ? 1 : rowvar, ddof, use_f ? f : NULL, use_a ? a : NULL, corr, want);
  int64_t shape[2];
  size_t nd = one_d ? 1 : 2;
  if (one_d) {
    shape[0] = (int64_t)nobs;
  } else {
    shape[0] = (int64_t)(rowvar ? nvars : nobs);
    shape[1] = (int64_t)(rowvar ? nobs : nvars);
  }
  kiln_tensor *xt = up(dt, nd, shape, x), *ft = use_f ? up1(dt, nobs, f) : NULL,
              *at = use_a ? up1(dt, nobs, a) : NULL, *out = NULL;
  kiln_status s =
      corr ? kiln_corrcoef(ctx, xt, rowvar, &out) : kiln_cov(ctx, xt, rowvar, ddof, ft, at, &out);
  ck_assert_msg(s == KILN_OK, "cov: %s", kiln_last_error());
  ck_assert_uint_eq(kiln_tensor_ndim(out), nvars == 1 ? 0 : 2);
  ck_assert_uint_eq(kiln_tensor_numel(out), nvars * nvars);
  double *got = down(out);
  for (uint64_t i = 0; i < nvars * nvars; i++)
    EXPECT(close_to(got[i], want[i], dt == KILN_F32 ? 2e-5 : 1e-11),
           "%s %s %llux%llu rowvar %d ddof %lld f %d a %d: [%llu] %.17g, expected %.17g",
           corr ? "corrcoef" : "cov", kiln_dtype_name(dt), (unsigned long long)nvars,
           (unsigned long long)nobs, rowvar, (long long)ddof, use_f, use_a, (unsigned long long)i,
           got[i], want[i]);
  if (corr && nvars > 1)
    for (uint64_t i = 0; i < nvars * nvars; i++)
      EXPECT(isnan(got[i]) || fabs(got[i]) <= 1, "corrcoef outside [-1, 1]: %g", got[i]);
  free(got);
  kiln_tensor_release(out);
  kiln_tensor_release(xt);
  if (ft)
    kiln_tensor_release(ft);
  if (at)
    kiln_tensor_release(at);
  free(x);
  free(f);
  free(a);
}

START_TEST(test_cov)
{
  FOR_DTYPES(dt)
  {
    const uint64_t dims[][2] = {{3, 7}, {1, 5}, {4, 1}, {5, 2}, {2, 131}, {13, 29}, {6, 0}};
    for (size_t di = 0; di < sizeof dims / sizeof *dims; di++)
      for (int rowvar = 0; rowvar < 2; rowvar++)
        for (int64_t ddof = harness_small(); ddof < (harness_small() ? 2 : 3); ddof++)
          check_cov(dt, dims[di][0], dims[di][1], rowvar, 0, ddof, 0, 0, 0, 0);
    for (int fa = 1; fa < 4; fa++)
      for (int64_t ddof = 0; ddof < 2; ddof++) {
        check_cov(dt, 3, 17, 1, 0, ddof, fa & 1, fa & 2, 0, 0);
        check_cov(dt, 4, 11, 0, 0, ddof, fa & 1, fa & 2, 0, 0);
      }
    check_cov(dt, 1, 23, 1, 1, 1, 0, 0, 0, 0); /* 1-D: one variable, 0-d result */
    check_cov(dt, 1, 23, 0, 1, 1, 1, 1, 0, 0);
  }
}
END_TEST

START_TEST(test_corrcoef)
{
  FOR_DTYPES(dt)
  {
    const uint64_t dims[][2] = {{3, 7}, {5, 2}, {2, 131}, {13, 29}};
    for (size_t di = 0; di < 4; di++)
      for (int rowvar = 0; rowvar < 2; rowvar++) {
        check_cov(dt, dims[di][0], dims[di][1], rowvar, 0, 1, 0, 0, 1, 0);
        check_cov(dt, dims[di][0], dims[di][1], rowvar, 0, 1, 0, 0, 1, 1); /* constant var */
      }
    check_cov(dt, 1, 9, 1, 1, 1, 0, 0, 1, 0);
  }
}
END_TEST

START_TEST(test_cov_errors)
{
  kiln_context *ctx = harness_ctx();
  double v[12];
  for (int i = 0; i < 12; i++)
    v[i] = i * 0.5 - 1;
  int64_t s2[2] = {3, 4}, s3[3] = {2, 2, 3};
  kiln_tensor *x = up(KILN_F32, 2, s2, v), *x3 = up(KILN_F32, 3, s3, v), *out = NULL;
  KEXPECT(kiln_cov(ctx, x3, 1, 1, NULL, NULL, &out), KILN_ERR_SHAPE);
  double fw[4] = {1, 2, -1, 1}, fnon[4] = {1, 0.5, 1, 1}, zero[4] = {0, 0, 0, 0};
  kiln_tensor *fneg = up1(KILN_F32, 4, fw), *ffrac = up1(KILN_F32, 4, fnon),
              *fz = up1(KILN_F32, 4, zero), *short_w = up1(KILN_F32, 3, fw);
  KEXPECT(kiln_cov(ctx, x, 1, 1, fneg, NULL, &out), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_cov(ctx, x, 1, 1, ffrac, NULL, &out), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_cov(ctx, x, 1, 1, NULL, fneg, &out), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_cov(ctx, x, 1, 1, fz, NULL, &out), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_cov(ctx, x, 1, 1, short_w, NULL, &out), KILN_ERR_SHAPE);
  KEXPECT(kiln_cov(ctx, x, 0, 1, ffrac, NULL, &out), KILN_ERR_SHAPE); /* 3 observations */
  KEXPECT(kiln_corrcoef(ctx, x, 1, NULL), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(out);
  if (harness_has_fp64()) {
    kiln_tensor *w64 = up1(KILN_F64, 4, zero);
    KEXPECT(kiln_cov(ctx, x, 1, 1, w64, NULL, &out), KILN_ERR_DTYPE);
    kiln_tensor_release(w64);
  }
  /* ddof >= N: divisor 0, results inf or NaN as NumPy. */
  KOK(kiln_cov(ctx, x, 1, 4, NULL, NULL, &out));
  double *got = down(out);
  for (int i = 0; i < 9; i++)
    ck_assert(!isfinite(got[i]));
  free(got);
  kiln_tensor_release(out);
  /* No variables: an empty result. */
  int64_t s0[2] = {0, 5};
  kiln_tensor *x0 = up(KILN_F32, 2, s0, v);
  out = NULL;
  KOK(kiln_cov(ctx, x0, 1, 1, NULL, NULL, &out));
  ck_assert_uint_eq(kiln_tensor_numel(out), 0);
  kiln_tensor_release(out);
  kiln_tensor_release(x0);
  kiln_tensor_release(fneg);
  kiln_tensor_release(ffrac);
  kiln_tensor_release(fz);
  kiln_tensor_release(short_w);
  kiln_tensor_release(x3);
  kiln_tensor_release(x);
}
END_TEST

START_TEST(test_histogram_errors)
{
  kiln_context *ctx = harness_ctx();
  double v[4] = {0, 1, 2, 3};
  kiln_tensor *x = up1(KILN_F32, 4, v), *w3 = up1(KILN_F32, 3, v), *h = NULL;
  double r_bad[2] = {2, 1}, r_inf[2] = {0, INFINITY};
  KEXPECT(kiln_histogram(ctx, x, 0, NULL, NULL, NULL, NULL, &h), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_histogram(ctx, x, 4, r_bad, NULL, NULL, NULL, &h), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_histogram(ctx, x, 4, r_inf, NULL, NULL, NULL, &h), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_histogram(ctx, x, 4, NULL, w3, NULL, NULL, &h), KILN_ERR_SHAPE);
  kiln_histogram_options serial = {.path = KILN_STATS_SERIAL};
  KEXPECT(kiln_histogram(ctx, x, 4, NULL, NULL, &serial, NULL, &h), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_histogram(ctx, x, 4, NULL, NULL, NULL, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_histogram(ctx, NULL, 4, NULL, NULL, NULL, NULL, &h), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_histogram2d(ctx, x, w3, 2, 2, NULL, NULL, NULL, NULL, &h), KILN_ERR_SHAPE);
  KEXPECT(kiln_histogram2d(ctx, x, x, 0, 2, NULL, NULL, NULL, NULL, &h), KILN_ERR_INVALID_ARGUMENT);
  int32_t iv[4] = {0, 1, 2, 3};
  int64_t s1[1] = {4};
  kiln_tensor *xi = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_I32, 1, s1, iv, &xi));
  /* Integer x with edges of an integer dtype, and a complex x. */
  KEXPECT(kiln_histogram_edges(ctx, xi, xi, NULL, NULL, &h), KILN_ERR_DTYPE);
  kiln_tensor *xc = NULL;
  int64_t s2c[1] = {2};
  KOK(kiln_tensor_zeros(ctx, KILN_C64, 1, s2c, &xc));
  KEXPECT(kiln_histogram(ctx, xc, 4, NULL, NULL, NULL, NULL, &h), KILN_ERR_DTYPE);
  kiln_tensor_release(xc);
  ck_assert_ptr_null(h);
  /* A given output of the wrong dtype. */
  kiln_tensor *wrong = up1(KILN_F32, 4, v);
  KEXPECT(kiln_histogram(ctx, x, 4, NULL, NULL, NULL, NULL, &wrong), KILN_ERR_DTYPE);
  kiln_tensor_release(wrong);
  kiln_tensor_release(xi);
  kiln_tensor_release(x);
  kiln_tensor_release(w3);
}
END_TEST

/* The launch-shape hooks: tiny work-groups, few groups (grid-stride loops run many times)
 * and histogram passes of a few hundred elements (each merged into the result). */
START_TEST(test_launch_shapes)
{
  kiln_context *ctx = harness_ctx();
  size_t locals[2] = {1, 32};
  for (int li = 0; li < 2; li++) {
    kiln__launch_local_override = locals[li];
    kiln__launch_max_groups = 3;
    kiln__stats_hist_chunk = 333;
    FOR_DTYPES(dt)
    {
      uint64_t n = 2000, nb = 19;
      double range[2] = {-0.5, 1.5};
      double *v = hist_data(dt, n, range[0], range[1], nb);
      double want[19] = {0};
      for (uint64_t i = 0; i < n; i++) {
        long b = ref_bin(dt, v[i], range[0], range[1], nb);
        if (b >= 0)
          want[b]++;
      }
      kiln_tensor *x = up1(dt, n, v);
      for (size_t pi = 1; pi < 3; pi++) {
        kiln_histogram_options o = {.path = paths[pi]};
        kiln_tensor *h = NULL;
        KOK(kiln_histogram(ctx, x, nb, range, NULL, &o, NULL, &h));
        check_counts(h, want, nb, "histogram, small launches");
        kiln_tensor_release(h);
      }
      kiln_tensor_release(x);
      free(v);
      double *qv = quant_data(dt, 7 * 41, 1, 0);
      int64_t shape[2] = {7, 41};
      for (size_t pi = 1; pi < 4; pi++) {
        if (harness_small() && pi == 2) /* the global sort: in test_quantile_methods */
          continue;
        kiln_quantile_options o = {.nan_policy = KILN_NAN_OMIT, .path = qpaths[pi]};
        check_quantile(dt, 2, shape, qv, 1, 1, qs, 9, o, 1);
        check_quantile(dt, 2, shape, qv, 1, 0, qs, 9, o, 1);
      }
      free(qv);
      check_cov(dt, 5, 37, 1, 0, 1, 1, 1, 0, 0);
      check_cov(dt, 5, 37, 0, 0, 1, 0, 0, 1, 0);
    }
  }
  kiln__launch_local_override = 0;
  kiln__launch_max_groups = 0;
  kiln__stats_hist_chunk = (uint64_t)1 << 31;
}
END_TEST

/* Integer inputs: values converted to the value type (f64 with fp64, else f32; the weights'
 * or the edges' dtype when given), NumPy's default range of integers, edges and 2-D. */
START_TEST(test_histogram_ints)
{
  kiln_context *ctx = harness_ctx();
  const kiln_dtype xdts[] = {KILN_I32, KILN_I64, KILN_U8, KILN_BOOL};
  kiln_dtype vdt = harness_has_fp64() ? KILN_F64 : KILN_F32;
  for (size_t di = 0; di < 4; di++) {
    kiln_dtype xdt = xdts[di];
    uint64_t n = 1013;
    int64_t top = xdt == KILN_BOOL ? 1 : xdt == KILN_U8 ? 200 : 97;
    void *h = malloc(n * 8), *hy = malloc(n * 8);
    double *xv = malloc(n * sizeof *xv), *yv = malloc(n * sizeof *yv), *w = malloc(n * sizeof *w);
    for (uint64_t i = 0; i < n; i++) {
      int64_t v = (int64_t)urand(0, (double)top + 0.999),
              u = (int64_t)urand(0, (double)top + 0.999);
      if (xdt == KILN_I32 || xdt == KILN_I64) {
        v -= 40;
        u -= 10;
      }
      xv[i] = (double)v;
      yv[i] = (double)u;
      w[i] = (double)(float)urand(0, 1);
      if (xdt == KILN_I32) {
        ((int32_t *)h)[i] = (int32_t)v;
        ((int32_t *)hy)[i] = (int32_t)u;
      } else if (xdt == KILN_I64) {
        ((int64_t *)h)[i] = v;
        ((int64_t *)hy)[i] = u;
      } else {
        ((uint8_t *)h)[i] = (uint8_t)v;
        ((uint8_t *)hy)[i] = (uint8_t)u;
      }
    }
    int64_t shape[1] = {(int64_t)n};
    kiln_tensor *x = NULL, *y = NULL;
    KOK(kiln_tensor_from_host(ctx, xdt, 1, shape, h, &x));
    KOK(kiln_tensor_from_host(ctx, xdt, 1, shape, hy, &y));
    double mn = INFINITY, mx = -INFINITY, mny = INFINITY, mxy = -INFINITY;
    for (uint64_t i = 0; i < n; i++) {
      mn = fmin(mn, xv[i]);
      mx = fmax(mx, xv[i]);
      mny = fmin(mny, yv[i]);
      mxy = fmax(mxy, yv[i]);
    }
    /* Default range, counts in vdt; weights (f32) make f32 the value type. */
    uint64_t nb = 11;
    double want[11] = {0}, wantw[11] = {0}, used[4];
    for (uint64_t i = 0; i < n; i++) {
      long b = ref_bin(vdt, xv[i], mn, mx, nb);
      long bw = ref_bin(KILN_F32, xv[i], mn, mx, nb);
      ck_assert(b >= 0 && bw >= 0);
      want[b]++;
      wantw[bw] += w[i];
    }
    kiln_tensor *c = NULL, *cw = NULL, *wt = up1(KILN_F32, n, w);
    KOK(kiln_histogram(ctx, x, nb, NULL, NULL, NULL, used, &c));
    ck_assert(used[0] == mn && used[1] == mx);
    check_counts(c, want, nb, "integer histogram");
    KOK(kiln_histogram(ctx, x, nb, NULL, wt, NULL, NULL, &cw));
    ck_assert_int_eq(kiln_tensor_dtype(cw), KILN_F32);
    double *got = down(cw);
    expect_close(got, wantw, nb, 1e-5 * 100, "integer weighted histogram");
    free(got);
    kiln_tensor_release(c);
    kiln_tensor_release(cw);
    /* Edges of f32: half-integer and integer edges (values on them). */
    double e[5] = {-3, 0, 2.5, 50, 60};
    kiln_tensor *et = up1(KILN_F32, 5, e);
    double wante[4] = {0};
    for (uint64_t i = 0; i < n; i++) {
      if (!(xv[i] >= e[0] && xv[i] <= e[4]))
        continue;
      int b = 0;
      for (int k = 0; k < 4; k++)
        if (e[k] <= xv[i])
          b = k;
      wante[b]++;
    }
    c = NULL;
    KOK(kiln_histogram_edges(ctx, x, et, NULL, NULL, &c));
    check_counts(c, wante, 4, "integer edges");
    kiln_tensor_release(c);
    kiln_tensor_release(et);
    /* 2-D with a default range. */
    double want2[4 * 3] = {0};
    if (mn == mx) {
      mn -= 0.5;
      mx += 0.5;
    }
    if (mny == mxy) {
      mny -= 0.5;
      mxy += 0.5;
    }
    for (uint64_t i = 0; i < n; i++) {
      long bx = ref_bin(vdt, xv[i], mn, mx, 4), by = ref_bin(vdt, yv[i], mny, mxy, 3);
      want2[bx * 3 + by]++;
    }
    c = NULL;
    KOK(kiln_histogram2d(ctx, x, y, 4, 3, NULL, NULL, NULL, used, &c));
    check_counts(c, want2, 12, "integer 2-D");
    kiln_tensor_release(c);
    kiln_tensor_release(x);
    kiln_tensor_release(y);
    kiln_tensor_release(wt);
    free(h);
    free(hy);
    free(xv);
    free(yv);
    free(w);
  }
}
END_TEST

static Suite *
stats_suite(void)
{
  Suite *s = suite_create("stats");
  TCase *tc = tcase_create("stats");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_histogram_range);
  tcase_add_test(tc, test_histogram_default_range);
  tcase_add_test(tc, test_histogram_edges);
  tcase_add_test(tc, test_histogram2d);
  tcase_add_test(tc, test_bincount);
  tcase_add_test(tc, test_histogram_ints);
  tcase_add_test(tc, test_quantile_methods);
  tcase_add_test(tc, test_quantile_axes);
  tcase_add_test(tc, test_cov);
  tcase_add_test(tc, test_corrcoef);
  tcase_add_test(tc, test_launch_shapes);
  if (!harness_small()) {
    tcase_add_test(tc, test_histogram_many_bins);
    tcase_add_test(tc, test_quantile_shapes_and_errors);
    tcase_add_test(tc, test_cov_errors);
    tcase_add_test(tc, test_histogram_errors);
  }
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  return harness_main(stats_suite(), 1);
}
