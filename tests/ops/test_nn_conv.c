/*
 * nn_conv suite: max, average and adaptive average pooling and convolution (forward,
 * backward-data, backward-weight, bias gradient, transposed), against host references in
 * double precision.
 *
 * Coverage: f32, f64 (with fp64), f16 and bf16 (against the reference computed from the
 * rounded inputs); 1-D, 2-D and 3-D; extra leading batch axes for
 * pooling; stride, padding, dilation, ceil_mode edge windows (a last window hanging over the
 * padding, and the one PyTorch drops because it would start in the right padding),
 * count_include_pad; convolution with groups (depthwise too), stride 2, dilation 2, padding,
 * 1x1 kernels, odd and prime sizes, batch 1 and 0, on every route (direct, im2col + GEMM,
 * convgemm, implicit GEMM with each of its tiles) forced through the `conv` tuner family and
 * on the default; transposed convolution with
 * output_padding; backward passes against the analytic host gradients and by central finite
 * differences of the device's own forward (f64, h = 1e-6) on small random shapes; bad input.
 *
 * Tolerances: |got - want| <= tol (1 + |want|), tol 2e-5 for f32 (sums of up to a few
 * thousand products of values in [-1, 1]), 2e-3 for f16, 1.6e-2 for bf16 and 1e-11 for f64;
 * finite differences within 1e-6 (1 + |g|). Max pooling indices compare exactly.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kiln.h"
#include "nn_hostdata.h"
#include "ops/tuned.h"

static const kiln_dtype dtypes[] = {KILN_F32, KILN_F64, KILN_F16, KILN_BF16};

#define FOR_DTYPES(dt)                                                                      \
  for (size_t dt##_i = 0; dt##_i < 4; dt##_i++)                                             \
    for (int dt##_k = dtypes[dt##_i] != KILN_F64 || harness_has_fp64(); dt##_k; dt##_k = 0) \
      for (kiln_dtype dt = dtypes[dt##_i]; dt##_k; dt##_k = 0)

/* Case i of n is left out of the small mode (oclgrind): every other one, and f16/bf16 past
 * the first (their arithmetic is f32's; only the loads and stores differ). */
static int
small_skip(kiln_dtype dt, size_t i, size_t n)
{
  return harness_small() && ((i % 2 == 1 && i + 1 < n) || (NN_HALF(dt) && i > 0));
}

/* n values in [-1, 1) rounded to dt (the reference sees what the device sees). */
static double *
rand_in(kiln_dtype dt, uint64_t n)
{
  double *v = rand_vec(n, -1, 1);
  round_to(dt, v, n);
  return v;
}

static int64_t *
down_i64(const kiln_tensor *t)
{
  int64_t *h = malloc(kiln_tensor_nbytes(t) + 8);
  KOK(kiln_tensor_download(t, h, kiln_tensor_nbytes(t)));
  return h;
}

/* f16 and bf16 are computed in f32 and rounded once on the way out: a few units of their last
 * place (2^-11 and 2^-8 relative), as tests/ops/test_nn.c. */
static double
tol_of(kiln_dtype dt)
{
  return dt == KILN_F32 ? 2e-5 : dt == KILN_F16 ? 2e-3 : dt == KILN_BF16 ? 1.6e-2 : 1e-11;
}

/* ------------------------------------------------------------------------ pooling */

/* One pooling case: leading shape, spatial sizes and the window. */
typedef struct {
  size_t nlead;
  int64_t lead[3];
  int64_t nd;
  int64_t in[3], k[3], s[3], p[3], d[3];
  int ceil_mode, include_pad;
} pool_case;

/* Sizes of an axis: output count and PyTorch's window rule, computed independently here. */
static int64_t
pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int ceil_mode)
{
  double v = (double)(in + 2 * p - d * (k - 1) - 1) / (double)s;
  int64_t o = (int64_t)(ceil_mode ? ceil(v) : floor(v)) + 1;
  if (ceil_mode && (o - 1) * s >= in + p)
    o--;
  return o;
}

typedef struct {
  uint64_t planes, ivol, ovol;
  int64_t in[3], out[3], k[3], s[3], p[3], d[3]; /* padded to three axes */
  size_t ndim;
  int64_t xshape[6], yshape[6];
} pool_dims;

static void
pool_dims_of(const pool_case *c, pool_dims *g)
{
  memset(g, 0, sizeof *g);
  g->planes = numel(c->nlead, c->lead);
  for (int i = 0; i < 3; i++)
    g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
  g->ndim = c->nlead + (size_t)c->nd;
  for (size_t i = 0; i < c->nlead; i++)
    g->xshape[i] = g->yshape[i] = c->lead[i];
  for (int64_t i = 0; i < c->nd; i++) {
    int j = 3 - (int)c->nd + (int)i;
    int64_t s = c->s[i] ? c->s[i] : c->k[i], d = c->d[i] ? c->d[i] : 1;
    g->in[j] = c->in[i];
    g->k[j] = c->k[i];
    g->s[j] = s;
    g->p[j] = c->p[i];
    g->d[j] = d;
    g->out[j] = pool_out(c->in[i], c->k[i], s, c->p[i], d, c->ceil_mode);
    g->xshape[c->nlead + (size_t)i] = c->in[i];
    g->yshape[c->nlead + (size_t)i] = g->out[j];
  }
  g->ivol = (uint64_t)(g->in[0] * g->in[1] * g->in[2]);
  g->ovol = (uint64_t)(g->out[0] * g->out[1] * g->out[2]);
}

static kiln_pool_desc
desc_of(const pool_case *c)
{
  kiln_pool_desc d;
  memset(&d, 0, sizeof d);
  d.nd = c->nd;
  for (int i = 0; i < 3; i++) {
    d.kernel[i] = c->k[i];
    d.stride[i] = c->s[i];
    d.padding[i] = c->p[i];
    d.dilation[i] = c->d[i];
  }
  d.ceil_mode = c->ceil_mode;
  d.count_include_pad = c->include_pad;
  return d;
}

/*
 * Host pooling, PyTorch's definitions: mode 1 max (y, ix), 0 average (y), 2 the average's
 * gradient (x is then the output gradient, spread into y of the input's size, zeroed first).
 */
static void
pool_ref(const pool_dims *g, int mode, int include_pad, const double *x, double *y, int64_t *ix)
{
  int max = mode == 1;
  if (mode == 2)
    memset(y, 0, g->planes * g->ivol * sizeof *y);
  for (uint64_t pl = 0; pl < g->planes; pl++)
    for (int64_t oz = 0; oz < g->out[0]; oz++)
      for (int64_t oy = 0; oy < g->out[1]; oy++)
        for (int64_t ox = 0; ox < g->out[2]; ox++) {
          int64_t o[3] = {oz, oy, ox};
          uint64_t yi = pl * g->ovol + (uint64_t)((oz * g->out[1] + oy) * g->out[2] + ox);
          double best = -INFINITY, sum = 0;
          int64_t bi = -1, cnt = 0, padded = 1;
          for (int a = 0; a < 3; a++) {
            int64_t st = o[a] * g->s[a] - g->p[a];
            int64_t en = st + g->k[a] < g->in[a] + g->p[a] ? st + g->k[a] : g->in[a] + g->p[a];
            padded *= en - st;
          }
          for (int64_t a = 0; a < g->k[0]; a++)
            for (int64_t b = 0; b < g->k[1]; b++)
              for (int64_t c = 0; c < g->k[2]; c++) {
                int64_t q[3] = {oz * g->s[0] - g->p[0] + a * g->d[0],
                                oy * g->s[1] - g->p[1] + b * g->d[1],
                                ox * g->s[2] - g->p[2] + c * g->d[2]};
                int in = 1;
                for (int t = 0; t < 3; t++)
                  in &= q[t] >= 0 && q[t] < g->in[t];
                if (!in)
                  continue;
                int64_t flat = (q[0] * g->in[1] + q[1]) * g->in[2] + q[2];
                cnt++;
                if (mode == 2)
                  continue;
                double v = x[pl * g->ivol + (uint64_t)flat];
                if (bi < 0 || v > best || isnan(v)) {
                  best = v;
                  bi = flat;
                }
                sum += v;
              }
          if (mode == 2) {
            /* Second pass now that the divisor is known. */
            double share = x[yi] / (double)(include_pad ? padded : cnt);
            for (int64_t a = 0; a < g->k[0]; a++)
              for (int64_t b = 0; b < g->k[1]; b++)
                for (int64_t c = 0; c < g->k[2]; c++) {
                  int64_t q[3] = {oz * g->s[0] - g->p[0] + a, oy * g->s[1] - g->p[1] + b,
                                  ox * g->s[2] - g->p[2] + c};
                  if (q[0] >= 0 && q[0] < g->in[0] && q[1] >= 0 && q[1] < g->in[1] && q[2] >= 0 &&
                      q[2] < g->in[2])
                    y[pl * g->ivol + (uint64_t)((q[0] * g->in[1] + q[1]) * g->in[2] + q[2])] +=
                        share;
                }
          } else if (max) {
            y[yi] = best;
            ix[yi] = bi;
          } else {
            y[yi] = sum / (double)(include_pad ? padded : cnt);
          }
        }
}

static void
run_pool_case(const pool_case *c, kiln_dtype dt)
{
  kiln_context *ctx = harness_ctx();
  pool_dims g;
  pool_dims_of(c, &g);
  kiln_pool_desc desc = desc_of(c);
  uint64_t nx = g.planes * g.ivol, ny = g.planes * g.ovol;
  double *x = rand_in(dt, nx), *gy = rand_in(dt, ny);
  /* Ties in max pooling: a few repeated values, so "first index" is exercised. */
  for (uint64_t i = 1; i < nx; i += 7)
    x[i] = x[i - 1];
  double *want = malloc((ny + 1) * sizeof *want), *wgx = calloc(nx + 1, sizeof *wgx);
  int64_t *wix = malloc((ny + 1) * sizeof *wix);
  kiln_tensor *tx = up(dt, g.ndim, g.xshape, x), *tg = up(dt, g.ndim, g.yshape, gy);
  char what[160];
  for (int max = 0; max < 2; max++) {
    if (!max && (c->d[0] > 1 || c->d[1] > 1 || c->d[2] > 1))
      continue;
    snprintf(what, sizeof what, "%s nd %lld in %lldx%lldx%lld k %lld s %lld p %lld ceil %d %s",
             max ? "max" : "avg", (long long)c->nd, (long long)g.in[0], (long long)g.in[1],
             (long long)g.in[2], (long long)c->k[0], (long long)c->s[0], (long long)c->p[0],
             c->ceil_mode, kiln_dtype_name(dt));
    pool_ref(&g, max, c->include_pad, x, want, wix);
    kiln_tensor *ty = NULL, *ti = NULL, *tgx = NULL;
    if (max)
      KOK(kiln_max_pool(ctx, tx, &desc, &ty, &ti));
    else
      KOK(kiln_avg_pool(ctx, tx, &desc, &ty));
    ck_assert_uint_eq(kiln_tensor_ndim(ty), g.ndim);
    for (size_t i = 0; i < g.ndim; i++)
      ck_assert_int_eq(kiln_tensor_dim(ty, i), g.yshape[i]);
    double *got = down(ty);
    expect_close(got, want, ny, tol_of(dt), what);
    /* The host gradient: scatter through the reference's windows. */
    memset(wgx, 0, (nx + 1) * sizeof *wgx);
    if (max) {
      int64_t *gi = down_i64(ti);
      for (uint64_t i = 0; i < ny; i++)
        EXPECT(gi[i] == wix[i], "%s: index %llu is %lld, expected %lld", what,
               (unsigned long long)i, (long long)gi[i], (long long)wix[i]);
      for (uint64_t i = 0; i < ny; i++)
        if (wix[i] >= 0)
          wgx[(i / g.ovol) * g.ivol + (uint64_t)wix[i]] += gy[i];
      free(gi);
      KOK(kiln_max_pool_backward(ctx, tg, ti, tx, &desc, &tgx));
    } else {
      pool_ref(&g, 2, c->include_pad, gy, wgx, NULL);
      KOK(kiln_avg_pool_backward(ctx, tg, tx, &desc, &tgx));
    }
    double *ggx = down(tgx);
    snprintf(what + strlen(what), sizeof what - strlen(what), " backward");
    expect_close(ggx, wgx, nx, tol_of(dt), what);
    free(ggx);
    free(got);
    kiln_tensor_release(ty);
    kiln_tensor_release(ti);
    kiln_tensor_release(tgx);
  }
  kiln_tensor_release(tx);
  kiln_tensor_release(tg);
  free(x), free(gy), free(want), free(wgx), free(wix);
}

static const pool_case pool_cases[] = {
    /* 2-D 2x2 stride 2, the benchmark's shape in small. */
    {2, {2, 3}, 2, {8, 8}, {2, 2}, {0, 0}, {0, 0}, {0, 0}, 0, 0},
    /* odd sizes, 3x3 stride 2 pad 1, ceil mode: an edge window hanging over the padding. */
    {2, {1, 2}, 2, {7, 9}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, 1, 0},
    {2, {1, 2}, 2, {7, 9}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, 1, 1},
    /* ceil mode where the last window would start in the right padding: dropped. */
    {1, {3}, 2, {5, 6}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, 1, 1},
    /* 1-D, stride 3 over a prime length, ceil mode, count_include_pad. */
    {2, {2, 3}, 1, {13}, {4}, {3}, {2}, {0}, 1, 1},
    {2, {2, 3}, 1, {13}, {4}, {3}, {2}, {0}, 0, 0},
    /* dilation (max only), non-square windows and strides. */
    {1, {4}, 2, {11, 10}, {3, 2}, {1, 2}, {2, 1}, {2, 3}, 0, 0},
    {1, {2}, 2, {12, 11}, {3, 3}, {2, 1}, {1, 1}, {2, 1}, 1, 0},
    /* kernel 1, stride 1; a plane of one element. */
    {2, {1, 1}, 2, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 0, 0},
    /* three leading axes; 3-D. */
    {3, {2, 1, 3}, 2, {6, 5}, {2, 3}, {2, 2}, {1, 1}, {0, 0}, 0, 1},
    {2, {1, 2}, 3, {5, 6, 7}, {2, 3, 2}, {2, 2, 3}, {1, 1, 0}, {0, 0, 0}, 1, 0},
    /* larger: more planes than a work-group. */
    {2, {4, 16}, 2, {17, 19}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, 0, 0},
    /* Tiling windows (pool_tiled): odd sizes whose last row and column are dropped, 3x3,
     * non-square, 1-D, and many planes of 28x28 (outputs not a multiple of the group). */
    {2, {2, 3}, 2, {7, 9}, {2, 2}, {2, 2}, {0, 0}, {0, 0}, 0, 0},
    {1, {5}, 2, {9, 13}, {3, 3}, {3, 3}, {0, 0}, {0, 0}, 0, 1},
    {1, {3}, 2, {8, 9}, {2, 3}, {2, 3}, {0, 0}, {0, 0}, 1, 0},
    {2, {2, 3}, 1, {11}, {2}, {2}, {0}, {0}, 0, 0},
    {2, {3, 37}, 2, {28, 28}, {2, 2}, {2, 2}, {0, 0}, {0, 0}, 0, 0},
    /* 2x2 rows of 18 outputs over an odd width (CPU devices' pool_tiled_rows: whole vectors
     * of 8 or 4 outputs, then the rest one by one). */
    {2, {2, 3}, 2, {6, 37}, {2, 2}, {2, 2}, {0, 0}, {0, 0}, 0, 0},
    /* 2-D max pooling with stride 2 along x on rows of 23 and 22 outputs (CPU devices'
     * pool_max_s2_rows: vectors inside the row, the edges one by one), ceil mode, 2x2 padded */
    {2, {1, 3}, 2, {9, 45}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, 0, 0},
    {1, {2}, 2, {8, 44}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, 1, 0},
    {1, {2}, 2, {5, 40}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, 0, 0},
};

START_TEST(pool_shapes)
{
  size_t n = sizeof pool_cases / sizeof pool_cases[0];
  /* CPU devices: the row forms (the default), then the GPUs' pool_fwd and pool_tiled. */
  for (int gpu = 0; gpu < 2; gpu++) {
    kiln__nn_test_gpu_pool = gpu;
    FOR_DTYPES(dt)
    {
      for (size_t i = 0; i < n; i++)
        if (!small_skip(dt, i, n))
          run_pool_case(&pool_cases[i], dt);
    }
  }
  kiln__nn_test_gpu_pool = 0;
}
END_TEST

/* 2x2 max windows over rows of 36 with NaNs (one alone, two in one window: the last wins),
 * ties and -inf, against pool_tiled's rule on the host; both forms on CPU devices. */
START_TEST(pool_tiled_nan_rows)
{
  kiln_context *ctx = harness_ctx();
  enum { W = 36, H = 4 };
  double xv[H * W];
  for (int i = 0; i < H * W; i++)
    xv[i] = (double)((i * 7) % 11) - 5;
  xv[3] = NAN, xv[W + 8] = NAN, xv[20] = NAN, xv[W + 21] = NAN, xv[2 * W + 30] = -INFINITY;
  xv[2 * W + 31] = -INFINITY, xv[3 * W + 30] = -INFINITY, xv[3 * W + 31] = -INFINITY;
  const pool_case c = {1, {1}, 2, {H, W}, {2, 2}, {0, 0}, {0, 0}, {0, 0}, 0, 0};
  pool_dims g;
  pool_dims_of(&c, &g);
  kiln_pool_desc d = desc_of(&c);
  double want[H / 2 * W / 2];
  int64_t wix[H / 2 * W / 2];
  pool_ref(&g, 1, 0, xv, want, wix);
  FOR_DTYPES(dt)
  for (int gpu = 0; gpu < 2; gpu++) {
    kiln__nn_test_gpu_pool = gpu;
    kiln_tensor *x = up(dt, g.ndim, g.xshape, xv), *y = NULL, *ix = NULL;
    KOK(kiln_max_pool(ctx, x, &d, &y, &ix));
    double *got = down(y);
    int64_t *gi = down_i64(ix);
    for (int i = 0; i < H / 2 * W / 2; i++) {
      EXPECT(gi[i] == wix[i], "%s gpu form %d: index %d is %lld, expected %lld",
             kiln_dtype_name(dt), gpu, i, (long long)gi[i], (long long)wix[i]);
      EXPECT(isnan(want[i]) ? isnan(got[i]) : got[i] == want[i],
             "%s gpu form %d: out %d is %g, expected %g", kiln_dtype_name(dt), gpu, i, got[i],
             want[i]);
    }
    free(got), free(gi);
    kiln_tensor_release(y), kiln_tensor_release(ix), kiln_tensor_release(x);
  }
  kiln__nn_test_gpu_pool = 0;
}
END_TEST

START_TEST(pool_nan_and_empty)
{
  kiln_context *ctx = harness_ctx();
  /* NaN wins its window (as PyTorch); the other window's maximum is its first element. */
  double xv[8] = {1, NAN, 3, 2, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  int64_t xs[3] = {1, 2, 4};
  kiln_tensor *x = up(KILN_F32, 3, xs, xv), *y = NULL, *ix = NULL;
  kiln_pool_desc d;
  memset(&d, 0, sizeof d);
  d.nd = 2;
  d.kernel[0] = d.kernel[1] = 2;
  KOK(kiln_max_pool(ctx, x, &d, &y, &ix));
  double *got = down(y);
  int64_t *gi = down_i64(ix);
  ck_assert(isnan(got[0]));
  ck_assert_int_eq(gi[0], 1);
  ck_assert(got[1] == 3);
  ck_assert_int_eq(gi[1], 2);
  free(got), free(gi);
  kiln_tensor_release(y), kiln_tensor_release(ix), kiln_tensor_release(x);
  /* Empty batch: an empty result, and an empty gradient. */
  int64_t es[4] = {0, 3, 4, 4};
  kiln_tensor *e = NULL, *ey = NULL, *eg = NULL, *ei = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 4, es, &e));
  d.stride[0] = d.stride[1] = 2;
  KOK(kiln_max_pool(ctx, e, &d, &ey, &ei));
  ck_assert_int_eq(kiln_tensor_dim(ey, 0), 0);
  ck_assert_int_eq(kiln_tensor_dim(ey, 2), 2);
  KOK(kiln_max_pool_backward(ctx, ey, ei, e, &d, &eg));
  ck_assert_uint_eq(kiln_tensor_numel(eg), 0);
  kiln_tensor_release(ey), kiln_tensor_release(eg), kiln_tensor_release(ei);
  ey = eg = NULL;
  KOK(kiln_avg_pool(ctx, e, &d, &ey));
  KOK(kiln_avg_pool_backward(ctx, ey, e, &d, &eg));
  kiln_tensor_release(ey), kiln_tensor_release(eg);
  ey = eg = NULL;
  int64_t os[2] = {3, 2};
  KOK(kiln_adaptive_avg_pool(ctx, e, 2, os, &ey));
  ck_assert_int_eq(kiln_tensor_dim(ey, 2), 3);
  KOK(kiln_adaptive_avg_pool_backward(ctx, ey, e, 2, &eg));
  kiln_tensor_release(ey), kiln_tensor_release(eg), kiln_tensor_release(e);
}
END_TEST

/* Host adaptive average pooling. */
static void
adaptive_ref(uint64_t planes, const int64_t in[3], const int64_t out[3], const double *x, double *y)
{
  uint64_t ivol = (uint64_t)(in[0] * in[1] * in[2]), ovol = (uint64_t)(out[0] * out[1] * out[2]);
  for (uint64_t pl = 0; pl < planes; pl++)
    for (int64_t a = 0; a < out[0]; a++)
      for (int64_t b = 0; b < out[1]; b++)
        for (int64_t c = 0; c < out[2]; c++) {
          int64_t lo[3], hi[3], o[3] = {a, b, c};
          for (int t = 0; t < 3; t++) {
            lo[t] = (int64_t)floor((double)(o[t] * in[t]) / (double)out[t]);
            hi[t] = (int64_t)ceil((double)((o[t] + 1) * in[t]) / (double)out[t]);
          }
          double s = 0;
          for (int64_t z = lo[0]; z < hi[0]; z++)
            for (int64_t yy = lo[1]; yy < hi[1]; yy++)
              for (int64_t xx = lo[2]; xx < hi[2]; xx++)
                s += x[pl * ivol + (uint64_t)((z * in[1] + yy) * in[2] + xx)];
          y[pl * ovol + (uint64_t)((a * out[1] + b) * out[2] + c)] =
              s / (double)((hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]));
        }
}

START_TEST(adaptive_shapes)
{
  kiln_context *ctx = harness_ctx();
  /* nd, planes (as [a, b]), in, out */
  static const struct {
    int64_t nd, lead[2], in[3], out[3];
  } cases[] = {
      {2, {2, 3}, {7, 9}, {3, 4}},    {2, {1, 2}, {8, 8}, {1, 1}},
      {2, {1, 3}, {5, 5}, {7, 6}},    {1, {3, 2}, {13}, {5}},
      {1, {1, 1}, {4}, {4}},          {3, {1, 2}, {5, 4, 6}, {2, 3, 4}},
      {2, {4, 17}, {14, 14}, {3, 3}},
  };
  size_t n = sizeof cases / sizeof cases[0];
  FOR_DTYPES(dt)
  {
    for (size_t ci = 0; ci < n; ci++) {
      if (small_skip(dt, ci, n))
        continue;
      int64_t nd = cases[ci].nd, in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, xs[5], ys[5];
      xs[0] = ys[0] = cases[ci].lead[0];
      xs[1] = ys[1] = cases[ci].lead[1];
      for (int64_t i = 0; i < nd; i++) {
        in[3 - nd + i] = xs[2 + i] = cases[ci].in[i];
        out[3 - nd + i] = ys[2 + i] = cases[ci].out[i];
      }
      uint64_t planes = (uint64_t)(xs[0] * xs[1]), ivol = (uint64_t)(in[0] * in[1] * in[2]),
               ovol = (uint64_t)(out[0] * out[1] * out[2]);
      double *x = rand_in(dt, planes * ivol), *g = rand_in(dt, planes * ovol);
      double *want = malloc(planes * ovol * sizeof *want), *wg = calloc(planes * ivol, 8);
      adaptive_ref(planes, in, out, x, want);
      /* The gradient is the transpose of the (linear) pooling: one unit vector per input of
       * the first plane, then the same weights for every plane. */
      double *unit = calloc(ivol, sizeof *unit), *col = malloc(ovol * sizeof *col);
      for (uint64_t j = 0; j < ivol; j++) {
        unit[j] = 1;
        adaptive_ref(1, in, out, unit, col);
        for (uint64_t pl = 0; pl < planes; pl++) {
          double acc = 0;
          for (uint64_t i = 0; i < ovol; i++)
            acc += col[i] * g[pl * ovol + i];
          wg[pl * ivol + j] = acc;
        }
        unit[j] = 0;
      }
      kiln_tensor *tx = up(dt, (size_t)(2 + nd), xs, x), *tg = up(dt, (size_t)(2 + nd), ys, g);
      kiln_tensor *ty = NULL, *tgx = NULL;
      KOK(kiln_adaptive_avg_pool(ctx, tx, nd, cases[ci].out, &ty));
      KOK(kiln_adaptive_avg_pool_backward(ctx, tg, tx, nd, &tgx));
      double *gy = down(ty), *ggx = down(tgx);
      expect_close(gy, want, planes * ovol, tol_of(dt), "adaptive_avg_pool");
      expect_close(ggx, wg, planes * ivol, tol_of(dt), "adaptive_avg_pool_backward");
      free(x), free(g), free(want), free(wg), free(unit), free(col), free(gy), free(ggx);
      kiln_tensor_release(tx), kiln_tensor_release(tg), kiln_tensor_release(ty);
      kiln_tensor_release(tgx);
    }
  }
}
END_TEST

START_TEST(pool_bad_input)
{
  kiln_context *ctx = harness_ctx();
  int64_t xs[4] = {1, 2, 6, 6};
  kiln_tensor *x = NULL, *xi = NULL, *o = NULL, *ix = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 4, xs, &x));
  KOK(kiln_tensor_zeros(ctx, KILN_I32, 4, xs, &xi));
  kiln_pool_desc d;
  memset(&d, 0, sizeof d);
  d.nd = 2;
  d.kernel[0] = d.kernel[1] = 3;
  d.padding[0] = 2; /* more than half the kernel */
  KEXPECT(kiln_max_pool(ctx, x, &d, &o, &ix), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "padding"));
  KEXPECT(kiln_avg_pool(ctx, x, &d, &o), KILN_ERR_INVALID_ARGUMENT);
  d.padding[0] = 1;
  d.dilation[0] = 2; /* average pooling has none */
  KEXPECT(kiln_avg_pool(ctx, x, &d, &o), KILN_ERR_INVALID_ARGUMENT);
  d.dilation[0] = 0;
  d.kernel[1] = 0;
  KEXPECT(kiln_max_pool(ctx, x, &d, &o, NULL), KILN_ERR_INVALID_ARGUMENT);
  d.kernel[1] = 8; /* larger than the input */
  KEXPECT(kiln_max_pool(ctx, x, &d, &o, NULL), KILN_ERR_SHAPE);
  d.kernel[1] = 3;
  d.nd = 0;
  KEXPECT(kiln_max_pool(ctx, x, &d, &o, NULL), KILN_ERR_INVALID_ARGUMENT);
  d.nd = 5;
  KEXPECT(kiln_max_pool(ctx, x, &d, &o, NULL), KILN_ERR_INVALID_ARGUMENT);
  d.nd = 2;
  KEXPECT(kiln_max_pool(ctx, xi, &d, &o, NULL), KILN_ERR_DTYPE);
  KEXPECT(kiln_max_pool(ctx, x, NULL, &o, NULL), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_max_pool(ctx, x, &d, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  /* Backward with a gradient of the wrong shape, indices of the wrong dtype. */
  KEXPECT(kiln_max_pool_backward(ctx, x, x, x, &d, &o), KILN_ERR_SHAPE);
  kiln_tensor *y = NULL;
  KOK(kiln_max_pool(ctx, x, &d, &y, &ix));
  KEXPECT(kiln_max_pool_backward(ctx, y, y, x, &d, &o), KILN_ERR_DTYPE);
  KEXPECT(kiln_max_pool_backward(ctx, y, NULL, x, &d, &o), KILN_ERR_INVALID_HANDLE);
  int64_t bad[2] = {0, 2};
  KEXPECT(kiln_adaptive_avg_pool(ctx, x, 2, bad, &o), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_adaptive_avg_pool(ctx, x, 2, NULL, &o), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_adaptive_avg_pool_backward(ctx, y, x, 4, &o), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(o);
  kiln_tensor_release(x), kiln_tensor_release(xi), kiln_tensor_release(y);
  kiln_tensor_release(ix);
}
END_TEST

/* ------------------------------------------------------------------------ convolution */

typedef struct {
  int64_t nd, N, Cin, Cout, G;
  int64_t in[3], k[3], s[3], p[3], d[3];
  int bias;
} conv_case;

typedef struct {
  int64_t N, Cin, Cout, G, cig, cog;
  int64_t in[3], out[3], k[3], s[3], p[3], d[3];
  int64_t xs[5], ws[5], ys[5];
  uint64_t nx, nw, ny, ivol, ovol, kvol;
  size_t ndim;
} conv_dims;

static void
conv_dims_of(const conv_case *c, conv_dims *g)
{
  memset(g, 0, sizeof *g);
  g->N = c->N;
  g->Cin = c->Cin;
  g->Cout = c->Cout;
  g->G = c->G;
  g->cig = c->Cin / c->G;
  g->cog = c->Cout / c->G;
  for (int i = 0; i < 3; i++)
    g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
  g->ndim = (size_t)c->nd + 2;
  g->xs[0] = g->ys[0] = c->N;
  g->xs[1] = c->Cin;
  g->ys[1] = g->ws[0] = c->Cout;
  g->ws[1] = g->cig;
  for (int64_t i = 0; i < c->nd; i++) {
    int j = 3 - (int)c->nd + (int)i;
    g->in[j] = c->in[i];
    g->k[j] = c->k[i];
    g->s[j] = c->s[i];
    g->p[j] = c->p[i];
    g->d[j] = c->d[i];
    g->out[j] = (c->in[i] + 2 * c->p[i] - c->d[i] * (c->k[i] - 1) - 1) / c->s[i] + 1;
    g->xs[2 + i] = c->in[i];
    g->ws[2 + i] = c->k[i];
    g->ys[2 + i] = g->out[j];
  }
  g->ivol = (uint64_t)(g->in[0] * g->in[1] * g->in[2]);
  g->ovol = (uint64_t)(g->out[0] * g->out[1] * g->out[2]);
  g->kvol = (uint64_t)(g->k[0] * g->k[1] * g->k[2]);
  g->nx = (uint64_t)(g->N * g->Cin) * g->ivol;
  g->ny = (uint64_t)(g->N * g->Cout) * g->ovol;
  g->nw = (uint64_t)(g->Cout * g->cig) * g->kvol;
}

static kiln_conv_desc
cdesc_of(const conv_case *c)
{
  kiln_conv_desc d;
  memset(&d, 0, sizeof d);
  d.nd = c->nd;
  for (int i = 0; i < 3; i++) {
    d.stride[i] = c->s[i];
    d.padding[i] = c->p[i];
    d.dilation[i] = c->d[i];
  }
  d.groups = c->G;
  return d;
}

/*
 * The one loop nest of the host reference: every (n, co, output, ci, tap) with an input
 * position inside x, handed to f. y = conv(x, w); dx, dw follow from the same terms.
 */
typedef void (*conv_term)(void *u, uint64_t xi, uint64_t wi, uint64_t yi);

static void
conv_terms(const conv_dims *g, conv_term f, void *u)
{
  for (int64_t n = 0; n < g->N; n++)
    for (int64_t co = 0; co < g->Cout; co++) {
      int64_t grp = co / g->cog;
      for (int64_t oz = 0; oz < g->out[0]; oz++)
        for (int64_t oy = 0; oy < g->out[1]; oy++)
          for (int64_t ox = 0; ox < g->out[2]; ox++) {
            uint64_t yi = ((uint64_t)(n * g->Cout + co)) * g->ovol +
                          (uint64_t)((oz * g->out[1] + oy) * g->out[2] + ox);
            for (int64_t cl = 0; cl < g->cig; cl++)
              for (int64_t a = 0; a < g->k[0]; a++)
                for (int64_t b = 0; b < g->k[1]; b++)
                  for (int64_t c = 0; c < g->k[2]; c++) {
                    int64_t z = oz * g->s[0] - g->p[0] + a * g->d[0];
                    int64_t yy = oy * g->s[1] - g->p[1] + b * g->d[1];
                    int64_t xx = ox * g->s[2] - g->p[2] + c * g->d[2];
                    if (z < 0 || z >= g->in[0] || yy < 0 || yy >= g->in[1] || xx < 0 ||
                        xx >= g->in[2])
                      continue;
                    uint64_t xi = ((uint64_t)(n * g->Cin + grp * g->cig + cl)) * g->ivol +
                                  (uint64_t)((z * g->in[1] + yy) * g->in[2] + xx);
                    uint64_t wi = ((uint64_t)(co * g->cig + cl)) * g->kvol +
                                  (uint64_t)((a * g->k[1] + b) * g->k[2] + c);
                    f(u, xi, wi, yi);
                  }
          }
    }
}

typedef struct {
  const double *x, *w, *gy;
  double *y, *dx, *dw;
} conv_ref;

static void
term_all(void *u, uint64_t xi, uint64_t wi, uint64_t yi)
{
  conv_ref *r = u;
  r->y[yi] += r->x[xi] * r->w[wi];
  r->dx[xi] += r->gy[yi] * r->w[wi];
  r->dw[wi] += r->gy[yi] * r->x[xi];
}

/* Sets the conv route for dt: 0 the default (the tuner's choice), 1 direct, 2 im2col + GEMM,
 * 3 CLBlast's convgemm (forward of ungrouped 1-D and 2-D; the others run as 2), 4 kiln's
 * implicit GEMM (forward; the backward passes run as 2). */
static void
set_route(kiln_dtype dt, int route)
{
  char p[32];
  snprintf(p, sizeof p, "route=%d", route);
  KOK(kiln_tune_override(harness_ctx(), "conv", dt, NULL, route ? p : NULL));
}

/* Route 4 with one of its tiles (1-4, lib/ops/nn_conv.c; 0 the default). */
static void
set_tile(kiln_dtype dt, int tile)
{
  char p[32];
  snprintf(p, sizeof p, "route=4 tile=%d", tile);
  KOK(kiln_tune_override(harness_ctx(), "conv", dt, NULL, p));
}

/*
 * on 1: the im2col route's GEMMs on kiln's gemm_batched, as without CLBlast
 * (KILN_DEBUG_NO_CLBLAST, unless the environment sets it already); on 0: back to CLBlast.
 */
static void
own_gemm(int on)
{
  static int set;
  if (on && !set && !getenv("KILN_DEBUG_NO_CLBLAST")) {
    setenv("KILN_DEBUG_NO_CLBLAST", "1", 1);
    set = 1;
  } else if (!on && set) {
    unsetenv("KILN_DEBUG_NO_CLBLAST");
    set = 0;
  }
}

/* route -1 - t: route 4 with tile t. f64 takes kiln's GEMM (own_gemm): CLBlast's calls are
 * f32's, and its f64 programs cost seconds of compile each on PoCL. */
static void
run_conv_case(const conv_case *c, kiln_dtype dt, int route)
{
  own_gemm(dt == KILN_F64);
  kiln_context *ctx = harness_ctx();
  conv_dims g;
  conv_dims_of(c, &g);
  kiln_conv_desc desc = cdesc_of(c);
  double *x = rand_in(dt, g.nx), *w = rand_in(dt, g.nw), *b = rand_in(dt, (uint64_t)g.Cout);
  double *gy = rand_in(dt, g.ny);
  conv_ref r = {x, w, gy, calloc(g.ny + 1, 8), calloc(g.nx + 1, 8), calloc(g.nw + 1, 8)};
  conv_terms(&g, term_all, &r);
  double *db = calloc((size_t)g.Cout + 1, 8);
  for (uint64_t i = 0; i < g.ny; i++) {
    if (c->bias)
      r.y[i] += b[(i / g.ovol) % (uint64_t)g.Cout];
    db[(i / g.ovol) % (uint64_t)g.Cout] += gy[i];
  }
  int64_t bs = g.Cout;
  kiln_tensor *tx = up(dt, g.ndim, g.xs, x), *tw = up(dt, g.ndim, g.ws, w);
  kiln_tensor *tb = up(dt, 1, &bs, b), *tg = up(dt, g.ndim, g.ys, gy);
  kiln_tensor *ty = NULL, *tdx = NULL, *tdw = NULL, *tdb = NULL, *tt = NULL;
  if (route >= 0)
    set_route(dt, route);
  else
    set_tile(dt, -1 - route);
  KOK(kiln_conv(ctx, tx, tw, c->bias ? tb : NULL, &desc, &ty));
  KOK(kiln_conv_backward(ctx, tg, tx, tw, &desc, &tdx, &tdw, &tdb));
  /* The transposed convolution of gy with w is the backward-data pass (plus bias of C_in). */
  kiln_tensor *tbi = NULL;
  int64_t bis = g.Cin;
  double *bi = rand_in(dt, (uint64_t)g.Cin);
  tbi = up(dt, 1, &bis, bi);
  /* output_padding recovers the input size the forward's floor division lost. */
  kiln_conv_desc tdesc = desc;
  for (int64_t i = 0; i < c->nd; i++)
    tdesc.output_padding[i] = (c->in[i] + 2 * c->p[i] - c->d[i] * (c->k[i] - 1) - 1) % c->s[i];
  KOK(kiln_conv_transpose(ctx, tg, tw, c->bias ? tbi : NULL, &tdesc, &tt));
  for (size_t i = 0; i < g.ndim; i++)
    ck_assert_int_eq(kiln_tensor_dim(tt, i), g.xs[i]);
  set_route(dt, 0);
  char what[200];
  snprintf(what, sizeof what,
           "conv nd %lld N %lld Cin %lld Cout %lld G %lld in %lldx%lldx%lld k %lldx%lldx%lld s "
           "%lld p %lld d %lld route %d %s",
           (long long)c->nd, (long long)c->N, (long long)c->Cin, (long long)c->Cout,
           (long long)c->G, (long long)g.in[0], (long long)g.in[1], (long long)g.in[2],
           (long long)g.k[0], (long long)g.k[1], (long long)g.k[2], (long long)c->s[0],
           (long long)c->p[0], (long long)c->d[0], route, kiln_dtype_name(dt));
  for (size_t i = 0; i < g.ndim; i++)
    ck_assert_int_eq(kiln_tensor_dim(ty, i), g.ys[i]);
  /* Sums of cig * kvol (forward), cog * kvol (data) or N * ovol (weight) products. */
  double tol = tol_of(dt) * (dt == KILN_F32 ? 1 + sqrt((double)(g.N * g.ovol)) / 8 : 1);
  double *gyv = down(ty), *gdx = down(tdx), *gdw = down(tdw), *gdb = down(tdb), *gt = down(tt);
  expect_close(gyv, r.y, g.ny, tol, what);
  expect_close(gdx, r.dx, g.nx, tol, "grad_x");
  expect_close(gdw, r.dw, g.nw, tol, "grad_weight");
  expect_close(gdb, db, (uint64_t)g.Cout, tol, "grad_bias");
  if (c->bias)
    for (uint64_t i = 0; i < g.nx; i++)
      r.dx[i] += bi[(i / g.ivol) % (uint64_t)g.Cin];
  strcat(what, " transpose");
  expect_close(gt, r.dx, g.nx, tol, what);
  free(gyv), free(gdx), free(gdw), free(gdb), free(gt), free(bi);
  free(x), free(w), free(b), free(gy), free(r.y), free(r.dx), free(r.dw), free(db);
  kiln_tensor *ts[] = {tx, tw, tb, tg, ty, tdx, tdw, tdb, tt, tbi};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
    kiln_tensor_release(ts[i]);
  own_gemm(0);
}

/* nd, N, Cin, Cout, G, in, k, s, p, d, bias */
static const conv_case conv_cases[] = {
    {2, 2, 3, 4, 1, {7, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 1, 4, 6, 2, {9, 8}, {3, 2}, {2, 2}, {1, 0}, {1, 1}, 1},   /* groups, stride 2 */
    {2, 2, 3, 5, 1, {11, 10}, {3, 3}, {1, 2}, {2, 1}, {2, 2}, 0}, /* dilation 2 */
    {2, 3, 6, 6, 6, {8, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},   /* depthwise */
    {2, 2, 8, 5, 1, {5, 5}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 1},   /* 1x1 */
    {2, 0, 3, 4, 1, {6, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},   /* empty batch */
    {1, 3, 4, 4, 2, {13}, {5}, {2}, {2}, {1}, 1},                 /* 1-D */
    {1, 1, 2, 3, 1, {17}, {3}, {3}, {0}, {3}, 0},                 /* 1-D, stride 3 dil 3 */
    {3, 1, 2, 4, 2, {5, 6, 4}, {3, 2, 3}, {1, 2, 1}, {1, 0, 1}, {1, 1, 1}, 1}, /* 3-D */
    {2, 4, 16, 32, 1, {13, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},            /* GEMM-sized */
    {2, 2, 6, 140, 2, {9, 10}, {2, 3}, {1, 1}, {0, 1}, {1, 1}, 1}, /* 70 rows per group */
    {2, 1, 1, 1, 1, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 1},    /* one element */
    /* 1-D lines longer than col2im_lines' chunk of 64 positions, stride 1 and 2 */
    {1, 2, 3, 4, 1, {150}, {5}, {1}, {2}, {2}, 1},
    {1, 1, 2, 2, 1, {131}, {3}, {2}, {1}, {1}, 0},
};

START_TEST(conv_shapes)
{
  size_t n = sizeof conv_cases / sizeof conv_cases[0];
  FOR_DTYPES(dt)
  {
    for (size_t i = 0; i < n; i++) {
      if (small_skip(dt, i, n))
        continue;
      /* The small mode (oclgrind, no CLBlast) runs the routes that differ there, the
       * implicit GEMM (256-item groups, slow to simulate) on the first case only. f64 skips
       * the rule (route 4, which it runs) and convgemm (CLBlast's own kernel, the f32 wrapper's
       * twin): each CLBlast program costs seconds of compile on PoCL. f16 and bf16 run
       * routes 1 and 4 (routes 2 and 3 become 4 for them, checked on the first case with
       * the rule). */
      conv_dims g;
      conv_dims_of(&conv_cases[i], &g);
      if (!harness_fits(g.ny))
        continue;
      static const int all[] = {0, 1, 2, 3, 4}, small[] = {1, 2, 4}, halves[] = {1, 4, 0, 2, 3};
      const int *routes = NN_HALF(dt) ? halves : harness_small() || dt == KILN_F64 ? small : all;
      size_t nr = harness_small()  ? (i == 0 ? 3u : 2u)
                  : NN_HALF(dt)    ? (i == 0 ? 5u : 2u)
                  : dt == KILN_F64 ? 3u
                                   : 5u;
      for (size_t r = 0; r < nr; r++) {
        run_conv_case(&conv_cases[i], dt, routes[r]);
        /* CPU devices' im2col_lines and col2im_lines on route 2 (their default there), and
         * on every other case the GPUs' one-element forms too. */
        if (routes[r] == 2 && i % 2) {
          kiln__nn_test_gpu_im2col = 1;
          run_conv_case(&conv_cases[i], dt, 2);
          kiln__nn_test_gpu_im2col = 0;
        }
      }
    }
  }
}
END_TEST

/* Every tile of route 4 (the tuner may pick any): tile edges in rows (70 rows
 * per group: two 64-row tiles, one 128-row tile), columns that straddle samples, strides,
 * dilation, groups, 3-D, and a batch whose columns span many tiles. */
START_TEST(conv_tiles)
{
  static const size_t f32_cases[] = {1, 2, 8, 9, 10}, f64_cases[] = {1, 10};
  conv_case big = {2, 5, 12, 20, 1, {15, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 1};
  /* Each (tile, dtype) is a program of its own to build on PoCL, so every tile runs in one
   * dtype: f32 the tiles its GPU defaults use (1, 2, 4), f64 its default (3); a tile's code is
   * the same for both (-DT). */
  static const int f32_tiles[] = {1, 2, 4};
  for (size_t t = 0; t < sizeof f32_tiles / sizeof f32_tiles[0]; t++) {
    for (size_t i = 0; i < sizeof f32_cases / sizeof f32_cases[0]; i++)
      run_conv_case(&conv_cases[f32_cases[i]], KILN_F32, -1 - f32_tiles[t]);
    run_conv_case(&big, KILN_F32, -1 - f32_tiles[t]);
  }
  if (harness_has_fp64()) {
    for (size_t i = 0; i < sizeof f64_cases / sizeof f64_cases[0]; i++)
      run_conv_case(&conv_cases[f64_cases[i]], KILN_F64, -1 - 3);
    run_conv_case(&big, KILN_F64, -1 - 3);
  }
  /* f16 and bf16 (their own loads and stores): the 8 x 8 tiles, one each. Tile 1 runs in
   * conv_shapes (every pass on CPUs; forward and backward-data on GPUs, whose defaults run the
   * weight gradient on tiles 2 and 4 there); tile 2 differs from tile 1 only in its width,
   * which f32 covers. Each (tile, dtype) is a program of its own to build. */
  static const struct {
    kiln_dtype dt;
    int tile;
  } halves[] = {{KILN_F16, 3}, {KILN_BF16, 4}};
  for (size_t t = 0; t < sizeof halves / sizeof halves[0]; t++) {
    for (size_t i = 0; i < sizeof f64_cases / sizeof f64_cases[0]; i++)
      run_conv_case(&conv_cases[f64_cases[i]], halves[t].dt, -1 - halves[t].tile);
    run_conv_case(&big, halves[t].dt, -1 - halves[t].tile);
  }
}
END_TEST

/* Batch 16 on every route, with the whole batch in one im2col chunk, then with chunks of 3
 * samples (the last one short), then with a limit below one sample's columns (the GEMM route
 * falls back to the direct kernels). */
START_TEST(conv_batch)
{
  conv_case c = {2, 16, 8, 8, 2, {12, 12}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 1};
  uint64_t keep = kiln__conv_col_bytes;
  /* One sample's columns: 4 channels x 9 taps x 144 positions x 4 bytes; its gradient rows
   * (the backward-weight temporary) add 4 x 144 x 4. */
  uint64_t cols = 4 * 9 * 144 * 4, grads = 4 * 144 * 4;
  const uint64_t limits[3] = {keep, 3 * (cols + grads), cols - 1};
  for (int li = 0; li < 3; li++) {
    kiln__conv_col_bytes = limits[li];
    for (int route = 1; route <= 4; route++)
      run_conv_case(&c, KILN_F32, route);
  }
  kiln__conv_col_bytes = keep;
}
END_TEST

/* L = sum(y * r): dL/dx, dL/dw, dL/db by central differences of the device's forward. */
START_TEST(conv_finite_differences)
{
  if (!harness_has_fp64())
    return;
  kiln_context *ctx = harness_ctx();
  static const conv_case cases[] = {
      {2, 2, 4, 4, 2, {5, 6}, {3, 2}, {2, 1}, {1, 1}, {1, 2}, 1},
      {1, 2, 3, 2, 1, {9}, {3}, {2}, {1}, {2}, 1},
  };
  const double h = 1e-6;
  own_gemm(1); /* f64, as in run_conv_case */
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
    for (int route = 1; route <= 4; route++) {
      if (route == 3)
        continue; /* convgemm is checked in f32 (conv_shapes): saves a CLBlast build */
      const conv_case *c = &cases[ci];
      conv_dims g;
      conv_dims_of(c, &g);
      kiln_conv_desc desc = cdesc_of(c);
      double *x = rand_in(KILN_F64, g.nx), *w = rand_in(KILN_F64, g.nw);
      double *b = rand_in(KILN_F64, (uint64_t)g.Cout), *rr = rand_in(KILN_F64, g.ny);
      int64_t bs = g.Cout;
      kiln_tensor *tr = up(KILN_F64, g.ndim, g.ys, rr), *dx = NULL, *dw = NULL, *db = NULL;
      kiln_tensor *tx = up(KILN_F64, g.ndim, g.xs, x), *tw = up(KILN_F64, g.ndim, g.ws, w);
      kiln_tensor *tb = up(KILN_F64, 1, &bs, b);
      set_route(KILN_F64, route);
      KOK(kiln_conv_backward(ctx, tr, tx, tw, &desc, &dx, &dw, &db));
      double *gdx = down(dx), *gdw = down(dw), *gdb = down(db);
      double *vals[3] = {x, w, b}, *grads[3] = {gdx, gdw, gdb};
      uint64_t counts[3] = {g.nx, g.nw, (uint64_t)g.Cout};
      for (int which = 0; which < 3; which++)
        for (uint64_t i = 0; i < counts[which]; i += 1 + counts[which] / 12) {
          double keep = vals[which][i], lv[2];
          for (int side = 0; side < 2; side++) {
            vals[which][i] = keep + (side ? -h : h);
            kiln_tensor *px = up(KILN_F64, g.ndim, g.xs, x), *pw = up(KILN_F64, g.ndim, g.ws, w);
            kiln_tensor *pb = up(KILN_F64, 1, &bs, b), *py = NULL;
            KOK(kiln_conv(ctx, px, pw, pb, &desc, &py));
            double *yv = down(py);
            lv[side] = 0;
            for (uint64_t j = 0; j < g.ny; j++)
              lv[side] += yv[j] * rr[j];
            free(yv);
            kiln_tensor_release(px), kiln_tensor_release(pw), kiln_tensor_release(pb);
            kiln_tensor_release(py);
          }
          vals[which][i] = keep;
          double fd = (lv[0] - lv[1]) / (2 * h);
          EXPECT(fabs(fd - grads[which][i]) <= 1e-6 * (1 + fabs(fd)),
                 "case %zu route %d operand %d element %llu: %.12g by differences, %.12g", ci,
                 route, which, (unsigned long long)i, fd, grads[which][i]);
        }
      set_route(KILN_F64, 0);
      free(x), free(w), free(b), free(rr), free(gdx), free(gdw), free(gdb);
      kiln_tensor_release(tr), kiln_tensor_release(dx), kiln_tensor_release(dw);
      kiln_tensor_release(db), kiln_tensor_release(tx), kiln_tensor_release(tw);
      kiln_tensor_release(tb);
    }
  own_gemm(0);
}
END_TEST

/* Max and average pooling gradients by central differences (f64, windows without ties). */
START_TEST(pool_finite_differences)
{
  if (!harness_has_fp64())
    return;
  kiln_context *ctx = harness_ctx();
  pool_case c = {2, {1, 2}, 2, {7, 6}, {3, 2}, {2, 2}, {1, 1}, {1, 1}, 1, 0};
  pool_dims g;
  pool_dims_of(&c, &g);
  kiln_pool_desc d = desc_of(&c);
  uint64_t nx = g.planes * g.ivol, ny = g.planes * g.ovol;
  double *x = rand_in(KILN_F64, nx), *rr = rand_in(KILN_F64, ny);
  kiln_tensor *tx = up(KILN_F64, g.ndim, g.xshape, x), *tr = up(KILN_F64, g.ndim, g.yshape, rr);
  const double h = 1e-6;
  for (int max = 0; max < 2; max++) {
    kiln_tensor *y = NULL, *ix = NULL, *gx = NULL;
    if (max) {
      KOK(kiln_max_pool(ctx, tx, &d, &y, &ix));
      KOK(kiln_max_pool_backward(ctx, tr, ix, tx, &d, &gx));
    } else {
      KOK(kiln_avg_pool(ctx, tx, &d, &y));
      KOK(kiln_avg_pool_backward(ctx, tr, tx, &d, &gx));
    }
    double *gg = down(gx);
    for (uint64_t i = 0; i < nx; i++) {
      double keep = x[i], lv[2];
      for (int side = 0; side < 2; side++) {
        x[i] = keep + (side ? -h : h);
        kiln_tensor *px = up(KILN_F64, g.ndim, g.xshape, x), *py = NULL;
        if (max)
          KOK(kiln_max_pool(ctx, px, &d, &py, NULL));
        else
          KOK(kiln_avg_pool(ctx, px, &d, &py));
        double *yv = down(py);
        lv[side] = 0;
        for (uint64_t j = 0; j < ny; j++)
          lv[side] += yv[j] * rr[j];
        free(yv);
        kiln_tensor_release(px), kiln_tensor_release(py);
      }
      x[i] = keep;
      double fd = (lv[0] - lv[1]) / (2 * h);
      EXPECT(fabs(fd - gg[i]) <= 1e-6 * (1 + fabs(fd)), "%s pool element %llu: %.12g, %.12g",
             max ? "max" : "avg", (unsigned long long)i, fd, gg[i]);
    }
    free(gg);
    kiln_tensor_release(y), kiln_tensor_release(ix), kiln_tensor_release(gx);
  }
  free(x), free(rr);
  kiln_tensor_release(tx), kiln_tensor_release(tr);
}
END_TEST

START_TEST(conv_bad_input)
{
  kiln_context *ctx = harness_ctx();
  int64_t xs[4] = {2, 4, 6, 6}, ws[4] = {6, 2, 3, 3}, w3[3] = {6, 2, 3}, bs = 5;
  kiln_tensor *x = NULL, *w = NULL, *wbad = NULL, *b = NULL, *xi = NULL, *o = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 4, xs, &x));
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 4, ws, &w));
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 3, w3, &wbad));
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 1, &bs, &b));
  KOK(kiln_tensor_zeros(ctx, KILN_I32, 4, xs, &xi));
  kiln_conv_desc d;
  memset(&d, 0, sizeof d);
  d.nd = 2;
  d.groups = 2;
  KEXPECT(kiln_conv(ctx, x, w, b, &d, &o), KILN_ERR_SHAPE); /* bias of 5 for 6 channels */
  KEXPECT(kiln_conv(ctx, x, wbad, NULL, &d, &o), KILN_ERR_SHAPE);
  d.groups = 1; /* weight expects 2 input channels */
  KEXPECT(kiln_conv(ctx, x, w, NULL, &d, &o), KILN_ERR_SHAPE);
  d.groups = 4; /* 6 output channels not divisible */
  KEXPECT(kiln_conv(ctx, x, w, NULL, &d, &o), KILN_ERR_SHAPE);
  d.groups = -1;
  KEXPECT(kiln_conv(ctx, x, w, NULL, &d, &o), KILN_ERR_INVALID_ARGUMENT);
  d.groups = 2;
  d.stride[0] = -2;
  KEXPECT(kiln_conv(ctx, x, w, NULL, &d, &o), KILN_ERR_INVALID_ARGUMENT);
  d.stride[0] = 1;
  d.dilation[1] = 4; /* the dilated kernel (9) is wider than the input (6) */
  KEXPECT(kiln_conv(ctx, x, w, NULL, &d, &o), KILN_ERR_SHAPE);
  d.dilation[1] = 1;
  d.output_padding[0] = 1;
  KEXPECT(kiln_conv(ctx, x, w, NULL, &d, &o), KILN_ERR_INVALID_ARGUMENT);
  d.output_padding[0] = 0;
  d.nd = 3;
  KEXPECT(kiln_conv(ctx, x, w, NULL, &d, &o), KILN_ERR_SHAPE);
  d.nd = 2;
  KEXPECT(kiln_conv(ctx, xi, w, NULL, &d, &o), KILN_ERR_DTYPE);
  KEXPECT(kiln_conv(ctx, x, NULL, NULL, &d, &o), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_conv(ctx, x, w, NULL, NULL, &o), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_conv(ctx, x, w, NULL, &d, NULL), KILN_ERR_INVALID_ARGUMENT);
  /* The transposed convolution: its input has C_out of the weight (6) channels. */
  KEXPECT(kiln_conv_transpose(ctx, x, w, NULL, &d, &o), KILN_ERR_SHAPE);
  /* Backward: a gradient of the input's shape; two outputs over one tensor. */
  KEXPECT(kiln_conv_backward(ctx, x, x, w, &d, &o, NULL, NULL), KILN_ERR_SHAPE);
  kiln_tensor *y = NULL;
  KOK(kiln_conv(ctx, x, w, NULL, &d, &y));
  kiln_tensor *same = x, *same2 = x;
  KEXPECT(kiln_conv_backward(ctx, y, x, w, &d, &same, &same2, NULL), KILN_ERR_INVALID_ARGUMENT);
  /* A route the tuner family does not have. */
  KEXPECT(kiln_tune_override(ctx, "conv", KILN_F32, NULL, "route=5"), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tune_override(ctx, "conv", KILN_F32, NULL, "route=4 tile=5"),
          KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(o);
  kiln_tensor *ts[] = {x, w, wbad, b, xi, y};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
    kiln_tensor_release(ts[i]);
}
END_TEST

/* More rows than one grid dimension takes on some drivers (65535 groups): the kernels loop. */
START_TEST(many_rows)
{
  kiln_context *ctx = harness_ctx();
  /* Pooling of 70000 planes of 4. */
  int64_t ps[2] = {70000, 4};
  uint64_t np = 70000 * 4;
  double *xv = rand_in(KILN_F32, np);
  kiln_tensor *x = up(KILN_F32, 2, ps, xv), *y = NULL, *ix = NULL, *gx = NULL;
  kiln_pool_desc pd = {.nd = 1, .kernel = {2}};
  KOK(kiln_max_pool(ctx, x, &pd, &y, &ix));
  KOK(kiln_max_pool_backward(ctx, y, ix, x, &pd, &gx));
  double *yv = down(y), *gv = down(gx);
  for (uint64_t i = 0; i < np / 2; i++) {
    double a = xv[2 * i], b = xv[2 * i + 1], m = b > a ? b : a;
    EXPECT(yv[i] == m, "max_pool plane %llu: %g, expected %g", (unsigned long long)(i / 2), yv[i],
           m);
    EXPECT(gv[2 * i] == (b > a ? 0 : m) && gv[2 * i + 1] == (b > a ? m : 0),
           "max_pool_backward pair %llu", (unsigned long long)i);
  }
  free(xv), free(yv), free(gv);
  kiln_tensor_release(x), kiln_tensor_release(y), kiln_tensor_release(ix);
  kiln_tensor_release(gx);
  /* A depthwise 1-D convolution of 66000 samples: N * C_out = N * groups = 132000. */
  conv_case c = {1, 66000, 2, 2, 2, {3}, {2}, {1}, {0}, {1}, 1};
  conv_dims g;
  conv_dims_of(&c, &g);
  kiln_conv_desc desc = cdesc_of(&c);
  double *xx = rand_in(KILN_F32, g.nx), *w = rand_in(KILN_F32, g.nw), *b = rand_in(KILN_F32, 2);
  double *gy = rand_in(KILN_F32, g.ny);
  conv_ref r = {xx, w, gy, calloc(g.ny, 8), calloc(g.nx, 8), calloc(g.nw, 8)};
  conv_terms(&g, term_all, &r);
  for (uint64_t i = 0; i < g.ny; i++)
    r.y[i] += b[(i / g.ovol) % 2];
  int64_t bs = 2;
  kiln_tensor *tx = up(KILN_F32, g.ndim, g.xs, xx), *tw = up(KILN_F32, g.ndim, g.ws, w);
  kiln_tensor *tb = up(KILN_F32, 1, &bs, b), *tg = up(KILN_F32, g.ndim, g.ys, gy);
  static const int routes[] = {1, 2, 4};
  kiln_device_info info;
  KOK(kiln_context_device_info(ctx, &info));
  for (size_t ri = 0; ri < 3; ri++) {
    kiln_tensor *ty = NULL, *tt = NULL;
    set_route(KILN_F32, routes[ri]);
    /* CPU devices: kiln's GEMM for route 2 (CLBlast pads each of the 66000 1 x 2 x 2 products
     * to its tiles: most of this test's time on PoCL; the grid limits are GPUs'). */
    own_gemm(!info.is_gpu);
    KOK(kiln_conv(ctx, tx, tw, tb, &desc, &ty));
    KOK(kiln_conv_transpose(ctx, tg, tw, NULL, &desc, &tt)); /* the backward-data pass */
    double *got = down(ty), *gt = down(tt);
    expect_close(got, r.y, g.ny, tol_of(KILN_F32), "conv of 66000 samples");
    expect_close(gt, r.dx, g.nx, tol_of(KILN_F32), "conv_transpose of 66000 samples");
    free(got), free(gt);
    kiln_tensor_release(ty), kiln_tensor_release(tt);
  }
  own_gemm(0);
  set_route(KILN_F32, 0);
  free(xx), free(w), free(b), free(gy), free(r.y), free(r.dx), free(r.dw);
  kiln_tensor_release(tx), kiln_tensor_release(tw), kiln_tensor_release(tb);
  kiln_tensor_release(tg);
}
END_TEST

static int
keep_result(const kiln_tune_progress *p, void *user)
{
  if (p->event == KILN_TUNE_EVENT_KEY_DONE)
    *(kiln_tune_result *)user = *p->result;
  return 0;
}

/* The conv tuner family times both routes on its own problem; both give the same result. */
START_TEST(conv_tune_family)
{
  kiln_context *ctx = harness_ctx();
  kiln_tune_request req;
  memset(&req, 0, sizeof req);
  req.family = "conv";
  uint64_t n = (uint64_t)1 << 16;
  req.sizes = &n;
  req.nsizes = 1;
  req.reps = 1;
  req.quick = 1;
  req.no_store = 1;
  kiln_tune_result r;
  memset(&r, 0, sizeof r);
  r.status = KILN_ERR_INTERNAL;
  KOK(kiln_tune_run(ctx, &req, keep_result, &r));
  ck_assert_int_eq(r.status, KILN_OK);
  ck_assert_uint_eq(r.failed, 0);
  ck_assert_uint_ge(r.candidates, 2);
  char buf[128];
  KOK(kiln_tune_params_get(ctx, "conv", KILN_F32, "mnk.2^16", buf, sizeof buf, NULL));
  ck_assert_ptr_nonnull(strstr(buf, "route="));
}
END_TEST

static Suite *
nn_conv_suite(void)
{
  Suite *s = suite_create("nn_conv");
  TCase *tc = tcase_create("nn_conv");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, pool_shapes);
  tcase_add_test(tc, pool_tiled_nan_rows);
  tcase_add_test(tc, pool_nan_and_empty);
  tcase_add_test(tc, adaptive_shapes);
  tcase_add_test(tc, pool_bad_input);
  tcase_add_test(tc, conv_shapes);
  tcase_add_test(tc, conv_bad_input);
  if (!harness_small()) {
    tcase_add_test(tc, conv_batch);
    tcase_add_test(tc, conv_tiles);
    tcase_add_test(tc, conv_finite_differences);
    tcase_add_test(tc, pool_finite_differences);
    tcase_add_test(tc, conv_tune_family);
    tcase_add_test(tc, many_rows);
  }
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  return harness_main(nn_conv_suite(), 1);
}
