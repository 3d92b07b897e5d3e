/*
 * nn suite: softmax, log_softmax, layer_norm, rms_norm, the activations and the losses,
 * forward and backward, against host references in double precision.
 *
 * Coverage: f32 and f64 (f64 with fp64); batch 1, odd and prime row lengths, short rows
 * (several per work-group), rows longer than a work-group, softmax along a middle and the
 * first axis, empty batches, rows holding -inf, a row of only -inf (NaN, as PyTorch) and
 * NaN; every backward pass against its analytic host gradient on a larger shape, and by
 * central finite differences of the device's own forward (f64, h = 1e-6) on small random
 * shapes; cross_entropy with indices, label smoothing, probabilities and ignore_index on
 * some and on every row; reductions none, mean and sum; in-place calls; bad input.
 *
 * Tolerances: |got - want| <= tol (1 + |want|) with tol 3e-5 for f32 (row sums of a few
 * thousand terms and the f32 exp/erfc/tanh of OpenCL, a few ulp each) and 1e-11 for f64;
 * finite differences agree within 1e-6 (1 + |g|) (truncation h^2, rounding 1e-16 / h).
 * NaN matches only NaN, infinities only the same infinity.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "expect_close.h"
#include "harness.h"
#include "hostdata.h"
#include "ops/ops_common.h"
#include "ops/tuned.h"

static const kiln_dtype dtypes[] = {KILN_F32, KILN_F64, KILN_F16, KILN_BF16};

/* The small mode (oclgrind) runs every other case of a list, and always its last. */
#define SMALL_SKIP(i, n) (harness_small() && (i) % 2 == 1 && (i) + 1 < (n))
/* and the dtypes other than f32 on the last case only (their loads and stores: the kernels
 * index memory as for f32). */
#define SMALL_DT_SKIP(dt, i, n) (harness_small() && (dt) != KILN_F32 && (i) + 1 < (n))
/* Loops dt over f32, f64, f16 and bf16 (f64 only with fp64); no break inside. */
#define FOR_DTYPES(dt)                                                                      \
  for (size_t dt##_i = 0; dt##_i < sizeof dtypes / sizeof dtypes[0]; dt##_i++)              \
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

static kiln_tensor *
up(kiln_dtype dt, size_t nd, const int64_t *shape, const double *v)
{
  uint64_t n = numel(nd, shape);
  void *h = malloc((n ? n : 1) * 8);
  for (uint64_t i = 0; i < n; i++)
    hd_setf(dt, h, i, v[i]);
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_from_host(harness_ctx(), dt, nd, shape, h, &t));
  free(h);
  return t;
}

static kiln_tensor *
up_i64(size_t nd, const int64_t *shape, const int64_t *v)
{
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_from_host(harness_ctx(), KILN_I64, nd, shape, v, &t));
  return t;
}

/* The tensor's values as doubles (malloc'd, at least one). */
static double *
down(const kiln_tensor *t)
{
  uint64_t n = kiln_tensor_numel(t);
  void *h = malloc(n * 8 + 8);
  KOK(kiln_tensor_download(t, h, kiln_tensor_nbytes(t)));
  double *d = malloc(n * sizeof *d + 8);
  for (uint64_t i = 0; i < n; i++)
    d[i] = hd_getf(kiln_tensor_dtype(t), h, i);
  free(h);
  return d;
}

/* x rounded to dt (the reference sees what the device sees). */
static void
round_to(kiln_dtype dt, double *x, size_t n)
{
  if (dt == KILN_F64)
    return;
  double tmp[1];
  for (size_t i = 0; i < n; i++) {
    hd_setf(dt, tmp, 0, x[i]);
    x[i] = hd_getf(dt, tmp, 0);
  }
}

static double
tol_of(kiln_dtype dt)
{
  /* f16 and bf16 are computed in f32 and rounded once on the way out: a few units of their
   * last place (2^-11 and 2^-8 relative). */
  return dt == KILN_F32 ? 3e-5 : dt == KILN_F16 ? 2e-3 : dt == KILN_BF16 ? 1.6e-2 : 1e-11;
}

/* Downloads t and compares it with want. */
static void
expect_tensor(const kiln_tensor *t, const double *want, double tol, const char *what)
{
  double *got = down(t);
  expect_close(got, want, kiln_tensor_numel(t), tol, what);
  free(got);
}

/* A tensor of shape over t's buffer from t's element k on (kiln_tensor_wrap): an offset that is
 * not a multiple of 4 keeps the kernels' 4-vector paths away. */
static kiln_tensor *
view_at(const kiln_tensor *t, int64_t k, size_t nd, const int64_t *shape)
{
  cl_mem m = NULL;
  size_t off = 0;
  KOK(kiln_tensor_cl_mem(t, &m, &off));
  kiln_dtype dt = kiln_tensor_dtype(t);
  kiln_tensor *v = NULL;
  KOK(kiln_tensor_wrap(harness_ctx(), m, off + (size_t)k * kiln_dtype_size(dt), dt, nd, shape, &v));
  return v;
}

/* ------------------------------------------------------------------ host references */

/* Softmax (or log_softmax) of rows of len along stride inner. */
static void
ref_softmax(const double *x, double *y, uint64_t outer, uint64_t len, uint64_t inner, int logm)
{
  for (uint64_t o = 0; o < outer; o++)
    for (uint64_t i = 0; i < inner; i++) {
      const double *xr = x + o * len * inner + i;
      double *yr = y + o * len * inner + i;
      double m = -INFINITY, s = 0;
      int nan = 0;
      for (uint64_t j = 0; j < len; j++) {
        nan |= isnan(xr[j * inner]);
        if (xr[j * inner] > m)
          m = xr[j * inner];
      }
      for (uint64_t j = 0; j < len; j++)
        s += exp(xr[j * inner] - m);
      for (uint64_t j = 0; j < len; j++) {
        double v = logm ? xr[j * inner] - m - log(s) : exp(xr[j * inner] - m) / s;
        yr[j * inner] = nan || m == -INFINITY || m == INFINITY ? NAN : v;
      }
    }
}

static void
ref_softmax_bwd(const double *g, const double *y, double *dx, uint64_t outer, uint64_t len,
                uint64_t inner, int logm)
{
  for (uint64_t o = 0; o < outer; o++)
    for (uint64_t i = 0; i < inner; i++) {
      uint64_t b = o * len * inner + i;
      double a = 0;
      for (uint64_t j = 0; j < len; j++)
        a += logm ? g[b + j * inner] : g[b + j * inner] * y[b + j * inner];
      for (uint64_t j = 0; j < len; j++) {
        uint64_t k = b + j * inner;
        dx[k] = logm ? g[k] - exp(y[k]) * a : y[k] * (g[k] - a);
      }
    }
}

/* Layer norm (rms = 0) or rms norm of rows x rows of len; w, b may be NULL. */
static void
ref_norm(const double *x, const double *w, const double *b, double eps, int rms, uint64_t rows,
         uint64_t len, double *y, double *mean, double *rstd)
{
  for (uint64_t r = 0; r < rows; r++) {
    const double *xr = x + r * len;
    double mu = 0, v = 0;
    if (!rms) {
      for (uint64_t j = 0; j < len; j++)
        mu += xr[j];
      mu /= (double)len;
    }
    for (uint64_t j = 0; j < len; j++)
      v += (xr[j] - mu) * (xr[j] - mu);
    double rs = 1 / sqrt(v / (double)len + eps);
    mean[r] = mu;
    rstd[r] = rs;
    for (uint64_t j = 0; j < len; j++)
      y[r * len + j] = (xr[j] - mu) * rs * (w ? w[j] : 1) + (b ? b[j] : 0);
  }
}

static void
ref_norm_bwd(const double *g, const double *x, const double *mean, const double *rstd,
             const double *w, int rms, uint64_t rows, uint64_t len, double *dx, double *dw,
             double *db)
{
  for (uint64_t j = 0; j < len; j++)
    dw[j] = db[j] = 0;
  for (uint64_t r = 0; r < rows; r++) {
    double a = 0, c = 0, mu = rms ? 0 : mean[r], rs = rstd[r];
    for (uint64_t j = 0; j < len; j++) {
      uint64_t k = r * len + j;
      double gw = g[k] * (w ? w[j] : 1), xh = (x[k] - mu) * rs;
      a += gw;
      c += gw * xh;
      dw[j] += g[k] * xh;
      db[j] += g[k];
    }
    a = rms ? 0 : a / (double)len;
    c /= (double)len;
    for (uint64_t j = 0; j < len; j++) {
      uint64_t k = r * len + j;
      double gw = g[k] * (w ? w[j] : 1), xh = (x[k] - mu) * rs;
      dx[k] = rs * (gw - a - xh * c);
    }
  }
}

static double
sigm(double x)
{
  return 1 / (1 + exp(-x));
}

static double
softplus1(double x)
{
  return fmax(x, 0) + log1p(exp(-fabs(x)));
}

#define SELU_A 1.6732632423543772848170429916717
#define SELU_S 1.0507009873554804934193349852946

/* f(x) of an activation, and its derivative f'(x). */
static double
act_f(kiln_activation a, double x, double p0, double p1)
{
  const double k = sqrt(2 / M_PI);
  switch (a) {
  case KILN_ACT_RELU:
    return x < 0 ? 0 : x;
  case KILN_ACT_LEAKY_RELU:
    return x > 0 ? x : x * p0;
  case KILN_ACT_ELU:
    return x > 0 ? x : p0 * expm1(x);
  case KILN_ACT_SELU:
    return SELU_S * (x > 0 ? x : SELU_A * expm1(x));
  case KILN_ACT_CELU:
    return x > 0 ? x : p0 * expm1(x / p0);
  case KILN_ACT_GELU:
    return 0.5 * x * erfc(-x / sqrt(2));
  case KILN_ACT_GELU_TANH:
    return 0.5 * x * (1 + tanh(k * (x + 0.044715 * x * x * x)));
  case KILN_ACT_SILU:
    return x * sigm(x);
  case KILN_ACT_MISH:
    return x * tanh(softplus1(x));
  case KILN_ACT_SIGMOID:
    return sigm(x);
  case KILN_ACT_TANH:
    return tanh(x);
  case KILN_ACT_SOFTPLUS:
    return x * p0 > p1 ? x : softplus1(x * p0) / p0;
  case KILN_ACT_HARDSIGMOID:
    return fmin(fmax(x / 6 + 0.5, 0), 1);
  case KILN_ACT_HARDSWISH:
    return x * fmin(fmax(x + 3, 0), 6) / 6;
  case KILN_ACT_HARDTANH:
    return x < p0 ? p0 : x > p1 ? p1 : x;
  case KILN_ACTIVATION_COUNT:
    break;
  }
  return NAN;
}

static double
act_d(kiln_activation a, double x, double p0, double p1)
{
  const double k = sqrt(2 / M_PI);
  switch (a) {
  case KILN_ACT_RELU:
    return x > 0 ? 1 : 0;
  case KILN_ACT_LEAKY_RELU:
    return x > 0 ? 1 : p0;
  case KILN_ACT_ELU:
    return x > 0 ? 1 : p0 * exp(x);
  case KILN_ACT_SELU:
    return x > 0 ? SELU_S : SELU_S * SELU_A * exp(x);
  case KILN_ACT_CELU:
    return x > 0 ? 1 : exp(x / p0);
  case KILN_ACT_GELU:
    return 0.5 * erfc(-x / sqrt(2)) + x * exp(-0.5 * x * x) / sqrt(2 * M_PI);
  case KILN_ACT_GELU_TANH: {
    double t = tanh(k * (x + 0.044715 * x * x * x));
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x);
  }
  case KILN_ACT_SILU:
    return sigm(x) * (1 + x * (1 - sigm(x)));
  case KILN_ACT_MISH: {
    double t = tanh(softplus1(x));
    return t + x * sigm(x) * (1 - t * t);
  }
  case KILN_ACT_SIGMOID:
    return sigm(x) * (1 - sigm(x));
  case KILN_ACT_TANH:
    return 1 - tanh(x) * tanh(x);
  case KILN_ACT_SOFTPLUS:
    return x * p0 > p1 ? 1 : sigm(x * p0);
  case KILN_ACT_HARDSIGMOID:
    return x > -3 && x < 3 ? 1.0 / 6 : 0;
  case KILN_ACT_HARDSWISH:
    return x < -3 ? 0 : x <= 3 ? x / 3 + 0.5 : 1;
  case KILN_ACT_HARDTANH:
    return x <= p0 || x >= p1 ? 0 : 1;
  case KILN_ACTIVATION_COUNT:
    break;
  }
  return NAN;
}

/* Scalars every activation test uses (non-default, to see them applied). */
static void
act_params(kiln_activation a, double *p0, double *p1)
{
  *p0 = 0;
  *p1 = 0;
  switch (a) {
  case KILN_ACT_LEAKY_RELU:
    *p0 = 0.07;
    break;
  case KILN_ACT_ELU:
    *p0 = 1.3;
    break;
  case KILN_ACT_CELU:
    *p0 = 0.8;
    break;
  case KILN_ACT_SOFTPLUS:
    *p0 = 1.5, *p1 = 2.5;
    break;
  case KILN_ACT_HARDTANH:
    *p0 = -0.75, *p1 = 1.25;
    break;
  default:
    break;
  }
}

/* Pointwise loss l(x, y) (w: pos_weight element) and dl/dx. */
static double
loss_f(kiln_loss_op op, double x, double y, double w, double p)
{
  double d = x - y, a = fabs(d);
  switch (op) {
  case KILN_LOSS_MSE:
    return d * d;
  case KILN_LOSS_L1:
    return a;
  case KILN_LOSS_SMOOTH_L1:
    return a < p ? 0.5 * d * d / p : a - 0.5 * p;
  case KILN_LOSS_HUBER:
    return a < p ? 0.5 * d * d : p * (a - 0.5 * p);
  case KILN_LOSS_BCE:
    return -(y * fmax(log(x), -100) + (1 - y) * fmax(log(1 - x), -100));
  case KILN_LOSS_BCE_WITH_LOGITS:
    return (1 - y) * x + (1 + (w - 1) * y) * (log1p(exp(-fabs(x))) + fmax(-x, 0));
  case KILN_LOSS_KL_DIV:
    return (y == 0 ? 0 : y * log(y)) - y * x;
  case KILN_LOSS_KL_DIV_LOG_TARGET:
    return exp(y) * (y - x);
  case KILN_LOSS_OP_COUNT:
    break;
  }
  return NAN;
}

static double
loss_d(kiln_loss_op op, double x, double y, double w, double p)
{
  double d = x - y, s = d > 0 ? 1 : d < 0 ? -1 : 0;
  switch (op) {
  case KILN_LOSS_MSE:
    return 2 * d;
  case KILN_LOSS_L1:
    return s;
  case KILN_LOSS_SMOOTH_L1:
    return fabs(d) < p ? d / p : s;
  case KILN_LOSS_HUBER:
    return fabs(d) < p ? d : p * s;
  case KILN_LOSS_BCE:
    return d / fmax((1 - x) * x, 1e-12);
  case KILN_LOSS_BCE_WITH_LOGITS:
    return sigm(x) * (w * y + 1 - y) - w * y;
  case KILN_LOSS_KL_DIV:
    return -y;
  case KILN_LOSS_KL_DIV_LOG_TARGET:
    return -exp(y);
  case KILN_LOSS_OP_COUNT:
    break;
  }
  return NAN;
}

/* Inputs and targets in each loss's domain. */
static void
loss_data(kiln_loss_op op, double *x, double *y, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    switch (op) {
    case KILN_LOSS_BCE:
      x[i] = urand(0.05, 0.95), y[i] = urand(0, 1);
      break;
    case KILN_LOSS_BCE_WITH_LOGITS:
      x[i] = urand(-4, 4), y[i] = urand(0, 1);
      break;
    case KILN_LOSS_KL_DIV:
      x[i] = urand(-3, 0), y[i] = i % 7 == 3 ? 0 : urand(0, 1);
      break;
    case KILN_LOSS_KL_DIV_LOG_TARGET:
      x[i] = urand(-3, 0), y[i] = urand(-3, 0);
      break;
    default:
      x[i] = urand(-2, 2), y[i] = urand(-2, 2);
      break;
    }
  }
}

static double
loss_param(kiln_loss_op op)
{
  return op == KILN_LOSS_SMOOTH_L1 ? 0.7 : op == KILN_LOSS_HUBER ? 1.3 : 0;
}

/* Cross entropy of rows of C logits: indices t (NULL: probabilities p), smoothing e.
 * Writes the per-row losses, the row weights (0 ignored) and, when dz, d(sum of g_r loss_r). */
static void
ref_ce(const double *z, const int64_t *t, const double *p, uint64_t rows, uint64_t C,
       int64_t ignore, double e, double *loss, double *wgt, const double *g, double *dz)
{
  for (uint64_t r = 0; r < rows; r++) {
    const double *zr = z + r * C;
    double m = -INFINITY, s = 0, qs = 0, lossr = 0;
    for (uint64_t j = 0; j < C; j++)
      m = fmax(m, zr[j]);
    for (uint64_t j = 0; j < C; j++)
      s += exp(zr[j] - m);
    double lse = m + log(s);
    wgt[r] = 1;
    int ign = !p && t[r] == ignore;
    for (uint64_t j = 0; j < C; j++) {
      double q = p ? (1 - e) * p[r * C + j] + e / (double)C
                   : ((int64_t)j == t[r] ? 1 - e : 0) + e / (double)C;
      qs += q;
      lossr += q * (lse - zr[j]);
    }
    if (ign) {
      lossr = 0;
      wgt[r] = 0;
    }
    loss[r] = lossr;
    if (dz)
      for (uint64_t j = 0; j < C; j++) {
        double q = p ? (1 - e) * p[r * C + j] + e / (double)C
                     : ((int64_t)j == t[r] ? 1 - e : 0) + e / (double)C;
        dz[r * C + j] = ign ? 0 : g[r] * (exp(zr[j] - lse) * qs - q);
      }
  }
}

/* ------------------------------------------------------------------ finite differences */

/* The device forward of one op as a function of its input: sum_i r_i f(x)_i. */
typedef double (*fd_fn)(void *arg, kiln_dtype dt, const double *x);

/* Central differences of f at x (n values) against the analytic gradient. */
static void
fd_check(fd_fn f, void *arg, double *x, size_t n, const double *analytic, const char *what)
{
  const double h = 1e-6;
  for (size_t i = 0; i < n; i++) {
    double x0 = x[i];
    x[i] = x0 + h;
    double fp = f(arg, KILN_F64, x);
    x[i] = x0 - h;
    double fm = f(arg, KILN_F64, x);
    x[i] = x0;
    double fd = (fp - fm) / (2 * h);
    EXPECT(fabs(fd - analytic[i]) <= 1e-6 * (1 + fabs(analytic[i])),
           "%s: d/dx[%zu] by differences %.12g, backward gave %.12g", what, i, fd, analytic[i]);
  }
}

static double
dot(const double *a, const double *b, size_t n)
{
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += a[i] * b[i];
  return s;
}

/* ------------------------------------------------------------------ softmax */

struct sm_case {
  size_t nd;
  int64_t shape[3];
  int64_t axis;
};

static void
softmax_case(kiln_dtype dt, const struct sm_case *c, int logm)
{
  kiln_context *ctx = harness_ctx();
  uint64_t n = numel(c->nd, c->shape);
  size_t ax = (size_t)(c->axis < 0 ? c->axis + (int64_t)c->nd : c->axis);
  uint64_t outer = 1, inner = 1, len = (uint64_t)c->shape[ax];
  for (size_t i = 0; i < ax; i++)
    outer *= (uint64_t)c->shape[i];
  for (size_t i = ax + 1; i < c->nd; i++)
    inner *= (uint64_t)c->shape[i];
  double *x = rand_vec(n, -6, 6), *g = rand_vec(n, -1, 1);
  round_to(dt, x, n);
  round_to(dt, g, n);
  double *y = malloc((n + 1) * sizeof *y), *dx = malloc((n + 1) * sizeof *dx);
  ref_softmax(x, y, outer, len, inner, logm);
  kiln_tensor *tx = up(dt, c->nd, c->shape, x), *ty = NULL, *tg = up(dt, c->nd, c->shape, g),
              *tdx = NULL;
  char what[96];
  snprintf(what, sizeof what, "%s %s shape [%lld,%lld,%lld] axis %lld", kiln_dtype_name(dt),
           logm ? "log_softmax" : "softmax", (long long)c->shape[0],
           (long long)(c->nd > 1 ? c->shape[1] : 0), (long long)(c->nd > 2 ? c->shape[2] : 0),
           (long long)c->axis);
  KOK((logm ? kiln_log_softmax : kiln_softmax)(ctx, tx, c->axis, &ty));
  expect_tensor(ty, y, tol_of(dt), what);
  /* The backward pass from the device's output, against the reference from the same y. */
  double *yd = down(ty);
  ref_softmax_bwd(g, yd, dx, outer, len, inner, logm);
  KOK((logm ? kiln_log_softmax_backward : kiln_softmax_backward)(ctx, tg, ty, c->axis, &tdx));
  expect_tensor(tdx, dx, tol_of(dt) * 4, what);
  /* In place: over x, and the gradient over grad. */
  KOK((logm ? kiln_log_softmax : kiln_softmax)(ctx, tx, c->axis, &tx));
  expect_tensor(tx, y, tol_of(dt), what);
  KOK((logm ? kiln_log_softmax_backward : kiln_softmax_backward)(ctx, tg, ty, c->axis, &tg));
  expect_tensor(tg, dx, tol_of(dt) * 4, what);
  free(yd);
  free(x);
  free(g);
  free(y);
  free(dx);
  kiln_tensor_release(tx);
  kiln_tensor_release(ty);
  kiln_tensor_release(tg);
  kiln_tensor_release(tdx);
}

START_TEST(softmax_shapes)
{
  const struct sm_case cases[] = {
      {1, {1}, 0},       {1, {7}, -1},
      {2, {1, 1}, 1},    {2, {3, 5}, 1},
      {2, {64, 33}, -1}, {2, {5, 2}, 1},
      {2, {0, 5}, 1},    {2, {4, 0}, 1},
      {3, {2, 3, 4}, 1}, {3, {3, 5, 7}, 0},
      {2, {9, 257}, 1},  {2, {7, 1000}, 1},
      {2, {40, 130}, 0}, {2, {harness_size(61, 3), harness_size(3001, 301)}, 1},
  };
  FOR_DTYPES(dt)
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (!SMALL_SKIP(i, sizeof cases / sizeof cases[0]) &&
        !SMALL_DT_SKIP(dt, i, sizeof cases / sizeof cases[0]))
      for (int logm = 0; logm < 2; logm++)
        softmax_case(dt, &cases[i], logm);
}
END_TEST

static void
softmax_special_rows_check(void)
{
  kiln_context *ctx = harness_ctx();
  const double I = INFINITY;
  /* Rows: some -inf, all -inf, a NaN, +inf, one -inf then finite (the online rescale). */
  enum { R = 6, C = 5 };
  const double x[R * C] = {-I, 0, -I, 1, 2, -I, -I, -I, -I, -I, 0, NAN, 1, 2, 3,
                           0,  I, 1,  2, 3, -I, 4,  -I, 3,  -I, 1, 2,   3, 4, 5};
  int64_t shape[2] = {R, C};
  FOR_DTYPES(dt)
  for (int logm = 0; logm < 2; logm++) {
    double want[R * C];
    ref_softmax(x, want, R, C, 1, logm);
    ck_assert(isnan(want[5]) && isnan(want[10]) && isnan(want[15]));
    kiln_tensor *tx = up(dt, 2, shape, x), *ty = NULL;
    KOK((logm ? kiln_log_softmax : kiln_softmax)(ctx, tx, 1, &ty));
    expect_tensor(ty, want, tol_of(dt), logm ? "log_softmax special rows" : "softmax special rows");
    kiln_tensor_release(tx);
    kiln_tensor_release(ty);
  }
}

START_TEST(softmax_special_rows)
{
  softmax_special_rows_check();
}
END_TEST

struct sm_fd {
  int logm;
  const double *r;
  int64_t shape[2];
};

static double
sm_eval(void *arg, kiln_dtype dt, const double *x)
{
  struct sm_fd *a = arg;
  kiln_tensor *tx = up(dt, 2, a->shape, x), *ty = NULL;
  KOK((a->logm ? kiln_log_softmax : kiln_softmax)(harness_ctx(), tx, -1, &ty));
  double *y = down(ty), v = dot(y, a->r, (size_t)numel(2, a->shape));
  free(y);
  kiln_tensor_release(tx);
  kiln_tensor_release(ty);
  return v;
}

START_TEST(softmax_finite_differences)
{
  if (!harness_has_fp64())
    return;
  kiln_context *ctx = harness_ctx();
  for (int logm = 0; logm < 2; logm++) {
    struct sm_fd a = {logm, NULL, {3, 7}};
    size_t n = 21;
    double *x = rand_vec(n, -2, 2), *r = rand_vec(n, -1, 1);
    a.r = r;
    kiln_tensor *tx = up(KILN_F64, 2, a.shape, x), *ty = NULL, *tr = up(KILN_F64, 2, a.shape, r),
                *tdx = NULL;
    KOK((logm ? kiln_log_softmax : kiln_softmax)(ctx, tx, -1, &ty));
    KOK((logm ? kiln_log_softmax_backward : kiln_softmax_backward)(ctx, tr, ty, -1, &tdx));
    double *dx = down(tdx);
    fd_check(sm_eval, &a, x, n, dx, logm ? "log_softmax backward" : "softmax backward");
    free(dx);
    free(x);
    free(r);
    kiln_tensor_release(tx);
    kiln_tensor_release(ty);
    kiln_tensor_release(tr);
    kiln_tensor_release(tdx);
  }
}
END_TEST

/* ------------------------------------------------------------------ layer_norm, rms_norm */

static void
norm_case(kiln_dtype dt, int rms, size_t nd, const int64_t *shape, int64_t axis, int with_w,
          int with_b)
{
  kiln_context *ctx = harness_ctx();
  size_t ax = (size_t)(axis < 0 ? axis + (int64_t)nd : axis);
  uint64_t rows = numel(ax, shape), len = numel(nd - ax, shape + ax), n = rows * len;
  double eps = 1e-5;
  double *x = rand_vec(n, -3, 5), *w = rand_vec(len, 0.5, 1.5), *b = rand_vec(len, -1, 1),
         *g = rand_vec(n, -1, 1);
  round_to(dt, x, n);
  round_to(dt, w, len);
  round_to(dt, b, len);
  round_to(dt, g, n);
  double *y = malloc((n + 1) * 8), *mean = malloc((rows + 1) * 8), *rstd = malloc((rows + 1) * 8);
  double *dx = malloc((n + 1) * 8), *dw = malloc((len + 1) * 8), *db = malloc((len + 1) * 8);
  ref_norm(x, with_w ? w : NULL, with_b && !rms ? b : NULL, eps, rms, rows, len, y, mean, rstd);
  kiln_tensor *tx = up(dt, nd, shape, x),
              *tw = with_w ? up(dt, 1, (int64_t[]){(int64_t)len}, w) : NULL;
  kiln_tensor *tb = with_b ? up(dt, 1, (int64_t[]){(int64_t)len}, b) : NULL;
  kiln_tensor *tg = up(dt, nd, shape, g), *ty = NULL, *tm = NULL, *tr = NULL;
  char what[96];
  snprintf(what, sizeof what, "%s %s rows %llu len %llu w %d b %d", kiln_dtype_name(dt),
           rms ? "rms_norm" : "layer_norm", (unsigned long long)rows, (unsigned long long)len,
           with_w, with_b);
  if (rms)
    KOK(kiln_rms_norm(ctx, tx, axis, tw, eps, &ty, &tr));
  else
    KOK(kiln_layer_norm(ctx, tx, axis, tw, tb, eps, &ty, &tm, &tr));
  expect_tensor(ty, y, tol_of(dt), what);
  if (!rms)
    expect_tensor(tm, mean, tol_of(dt), what);
  expect_tensor(tr, rstd, tol_of(dt), what);
  double *md = rms ? NULL : down(tm), *rd = down(tr);
  ref_norm_bwd(g, x, rms ? mean : md, rd, with_w ? w : NULL, rms, rows, len, dx, dw, db);
  kiln_tensor *tdx = NULL, *tdw = NULL, *tdb = NULL;
  if (rms)
    KOK(kiln_rms_norm_backward(ctx, tg, tx, tr, tw, axis, &tdx, &tdw));
  else
    KOK(kiln_layer_norm_backward(ctx, tg, tx, tm, tr, tw, axis, &tdx, &tdw, &tdb));
  expect_tensor(tdx, dx, tol_of(dt) * 4, what);
  /* Column sums over many rows: f32 error grows with the rows. */
  double ctol = tol_of(dt) * (dt != KILN_F64 ? 1 + (double)rows / 64 : 1);
  expect_tensor(tdw, dw, ctol, what);
  if (!rms)
    expect_tensor(tdb, db, ctol, what);
  /* In place: the output over x. */
  if (rms)
    KOK(kiln_rms_norm(ctx, tx, axis, tw, eps, &tx, NULL));
  else
    KOK(kiln_layer_norm(ctx, tx, axis, tw, tb, eps, &tx, NULL, NULL));
  expect_tensor(tx, y, tol_of(dt), what);
  free(md);
  free(rd);
  free(x), free(w), free(b), free(g), free(y), free(mean), free(rstd), free(dx), free(dw), free(db);
  kiln_tensor_release(tx), kiln_tensor_release(tw), kiln_tensor_release(tb);
  kiln_tensor_release(tg), kiln_tensor_release(ty), kiln_tensor_release(tm);
  kiln_tensor_release(tr), kiln_tensor_release(tdx), kiln_tensor_release(tdw);
  kiln_tensor_release(tdb);
}

START_TEST(norm_shapes)
{
  const struct {
    size_t nd;
    int64_t shape[3];
    int64_t axis;
  } cases[] = {
      {1, {1}, 0},
      {2, {1, 7}, 1},
      {2, {5, 3}, -1},
      {3, {2, 3, 5}, 1},
      {2, {33, 64}, 1},
      {2, {0, 8}, 1},
      {2, {3, 1000}, 1},
      {2, {17, 257}, -1},
      {2, {harness_size(130, 4), harness_size(2053, 300)}, 1},
  };
  FOR_DTYPES(dt)
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (!SMALL_SKIP(i, sizeof cases / sizeof cases[0]) &&
        !SMALL_DT_SKIP(dt, i, sizeof cases / sizeof cases[0]))
      for (int rms = 0; rms < 2; rms++)
        for (int wb = rms; wb < 3; wb++) /* rms_norm has no bias */
          /* the simulator: the other dtypes' loads and stores with every operand given */
          if (!harness_small() || dt == KILN_F32 || wb == (rms ? 2 : 0))
            norm_case(dt, rms, cases[i].nd, cases[i].shape, cases[i].axis, wb != 1, wb == 0);
}
END_TEST

struct norm_fd {
  int rms, which; /* which: 0 x, 1 weight, 2 bias */
  const double *x, *w, *b, *r;
  int64_t shape[2];
};

static double
norm_eval(void *arg, kiln_dtype dt, const double *v)
{
  struct norm_fd *a = arg;
  int64_t len = a->shape[1];
  kiln_tensor *tx = up(dt, 2, a->shape, a->which == 0 ? v : a->x);
  kiln_tensor *tw = up(dt, 1, &len, a->which == 1 ? v : a->w);
  kiln_tensor *tb = up(dt, 1, &len, a->which == 2 ? v : a->b), *ty = NULL;
  if (a->rms)
    KOK(kiln_rms_norm(harness_ctx(), tx, 1, tw, 1e-5, &ty, NULL));
  else
    KOK(kiln_layer_norm(harness_ctx(), tx, 1, tw, tb, 1e-5, &ty, NULL, NULL));
  double *y = down(ty), s = dot(y, a->r, (size_t)numel(2, a->shape));
  free(y);
  kiln_tensor_release(tx), kiln_tensor_release(tw), kiln_tensor_release(tb);
  kiln_tensor_release(ty);
  return s;
}

START_TEST(norm_finite_differences)
{
  if (!harness_has_fp64())
    return;
  kiln_context *ctx = harness_ctx();
  for (int rms = 0; rms < 2; rms++) {
    struct norm_fd a = {rms, 0, NULL, NULL, NULL, NULL, {3, 6}};
    int64_t len = 6;
    double *x = rand_vec(18, -2, 2), *w = rand_vec(6, 0.5, 1.5), *b = rand_vec(6, -1, 1),
           *r = rand_vec(18, -1, 1);
    a.x = x, a.w = w, a.b = b, a.r = r;
    kiln_tensor *tx = up(KILN_F64, 2, a.shape, x), *tw = up(KILN_F64, 1, &len, w);
    kiln_tensor *tb = up(KILN_F64, 1, &len, b), *tr = up(KILN_F64, 2, a.shape, r);
    kiln_tensor *ty = NULL, *tm = NULL, *ts = NULL, *tdx = NULL, *tdw = NULL, *tdb = NULL;
    if (rms) {
      KOK(kiln_rms_norm(ctx, tx, 1, tw, 1e-5, &ty, &ts));
      KOK(kiln_rms_norm_backward(ctx, tr, tx, ts, tw, 1, &tdx, &tdw));
    } else {
      KOK(kiln_layer_norm(ctx, tx, 1, tw, tb, 1e-5, &ty, &tm, &ts));
      KOK(kiln_layer_norm_backward(ctx, tr, tx, tm, ts, tw, 1, &tdx, &tdw, &tdb));
    }
    double *dx = down(tdx), *dw = down(tdw);
    double *xc = malloc(18 * 8), *wc = malloc(6 * 8), *bc = malloc(6 * 8);
    memcpy(xc, x, 18 * 8), memcpy(wc, w, 6 * 8), memcpy(bc, b, 6 * 8);
    a.which = 0;
    fd_check(norm_eval, &a, xc, 18, dx, rms ? "rms_norm dx" : "layer_norm dx");
    a.which = 1;
    fd_check(norm_eval, &a, wc, 6, dw, rms ? "rms_norm dweight" : "layer_norm dweight");
    if (!rms) {
      double *db = down(tdb);
      a.which = 2;
      fd_check(norm_eval, &a, bc, 6, db, "layer_norm dbias");
      free(db);
    }
    free(dx), free(dw), free(xc), free(wc), free(bc), free(x), free(w), free(b), free(r);
    kiln_tensor_release(tx), kiln_tensor_release(tw), kiln_tensor_release(tb);
    kiln_tensor_release(tr), kiln_tensor_release(ty), kiln_tensor_release(tm);
    kiln_tensor_release(ts), kiln_tensor_release(tdx), kiln_tensor_release(tdw);
    kiln_tensor_release(tdb);
  }
}
END_TEST

/* ------------------------------------------------------------------ activations */

/* Activation a forward, backward and in place over n values in [lo, hi). */
static void
act_case(kiln_dtype dt, kiln_activation a, int64_t n, double lo, double hi)
{
  kiln_context *ctx = harness_ctx();
  double p0, p1;
  act_params(a, &p0, &p1);
  double *x = rand_vec((size_t)n, lo, hi), *g = rand_vec((size_t)n, -1, 1);
  round_to(dt, x, (size_t)n);
  round_to(dt, g, (size_t)n);
  double *y = malloc((size_t)n * 8 + 8), *dx = malloc((size_t)n * 8 + 8);
  for (int64_t i = 0; i < n; i++) {
    y[i] = act_f(a, x[i], p0, p1);
    dx[i] = g[i] * act_d(a, x[i], p0, p1);
  }
  char what[96];
  snprintf(what, sizeof what, "%s %s n %lld", kiln_dtype_name(dt), kiln_activation_name(a),
           (long long)n);
  kiln_tensor *tx = up(dt, 1, &n, x), *tg = up(dt, 1, &n, g), *ty = NULL, *tdx = NULL;
  KOK(kiln_activation_forward(ctx, a, tx, p0, p1, &ty));
  expect_tensor(ty, y, tol_of(dt), what);
  KOK(kiln_activation_backward(ctx, a, tg, kiln_activation_backward_uses_output(a) ? ty : tx, p0,
                               p1, &tdx));
  /* From the output, f' is recomputed from a rounded y: a looser bound in f32. */
  expect_tensor(tdx, dx, tol_of(dt) * (dt != KILN_F64 ? 10 : 1), what);
  /* In place. */
  KOK(kiln_activation_forward(ctx, a, tx, p0, p1, &tx));
  expect_tensor(tx, y, tol_of(dt), what);
  free(x), free(g), free(y), free(dx);
  kiln_tensor_release(tx), kiln_tensor_release(tg), kiln_tensor_release(ty);
  kiln_tensor_release(tdx);
}

START_TEST(activations_against_reference)
{
  const int64_t sizes[] = {0, 1, 7, 1031, harness_size(100003, 1200)};
  FOR_DTYPES(dt)
  for (int ai = 0; ai < KILN_ACTIVATION_COUNT; ai++) {
    kiln_activation a = (kiln_activation)ai;
    ck_assert(kiln_activation_supports(a, dt));
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
      if (!SMALL_SKIP(si, sizeof sizes / sizeof sizes[0]) &&
          !SMALL_DT_SKIP(dt, si, sizeof sizes / sizeof sizes[0]))
        act_case(dt, a, sizes[si], -5, 5);
  }
}
END_TEST

struct act_fd {
  kiln_activation a;
  double p0, p1;
  const double *r;
  int64_t n;
};

static double
act_eval(void *arg, kiln_dtype dt, const double *x)
{
  struct act_fd *a = arg;
  kiln_tensor *tx = up(dt, 1, &a->n, x), *ty = NULL;
  KOK(kiln_activation_forward(harness_ctx(), a->a, tx, a->p0, a->p1, &ty));
  double *y = down(ty), s = dot(y, a->r, (size_t)a->n);
  free(y);
  kiln_tensor_release(tx), kiln_tensor_release(ty);
  return s;
}

START_TEST(activations_finite_differences)
{
  if (!harness_has_fp64())
    return;
  kiln_context *ctx = harness_ctx();
  for (int ai = 0; ai < KILN_ACTIVATION_COUNT; ai++) {
    struct act_fd a = {(kiln_activation)ai, 0, 0, NULL, 9};
    act_params(a.a, &a.p0, &a.p1);
    double *x = rand_vec(9, -4, 4), *r = rand_vec(9, -1, 1);
    a.r = r;
    kiln_tensor *tx = up(KILN_F64, 1, &a.n, x), *tr = up(KILN_F64, 1, &a.n, r), *ty = NULL,
                *tdx = NULL;
    KOK(kiln_activation_forward(ctx, a.a, tx, a.p0, a.p1, &ty));
    KOK(kiln_activation_backward(ctx, a.a, tr, kiln_activation_backward_uses_output(a.a) ? ty : tx,
                                 a.p0, a.p1, &tdx));
    double *dx = down(tdx);
    fd_check(act_eval, &a, x, 9, dx, kiln_activation_name(a.a));
    free(dx), free(x), free(r);
    kiln_tensor_release(tx), kiln_tensor_release(tr), kiln_tensor_release(ty);
    kiln_tensor_release(tdx);
  }
}
END_TEST

/* ------------------------------------------------------------------ class losses */

static double
fold(const double *v, const double *wgt, uint64_t n, kiln_reduction red, int by_weight)
{
  double s = 0, c = 0;
  for (uint64_t i = 0; i < n; i++) {
    s += v[i];
    c += wgt[i];
  }
  if (red == KILN_REDUCTION_SUM)
    return s;
  return by_weight ? s / c : s / (double)n;
}

/* cross_entropy (nll = 0) or nll forward and backward for every reduction. mode: 0 indices,
 * 1 indices with smoothing, 2 probabilities, 3 every row ignored. */
static void
class_case(kiln_dtype dt, int nll, int mode, uint64_t rows, uint64_t C)
{
  kiln_context *ctx = harness_ctx();
  uint64_t n = rows * C;
  const int64_t ignore = -100;
  double e = mode == 1 ? 0.15 : mode == 2 ? 0.05 : 0;
  double *z = rand_vec(n, -4, 4), *p = rand_vec(n, 0, 1);
  if (nll)
    for (uint64_t r = 0; r < rows; r++) { /* log-probabilities */
      double m = -INFINITY, s = 0;
      for (uint64_t j = 0; j < C; j++)
        m = fmax(m, z[r * C + j]);
      for (uint64_t j = 0; j < C; j++)
        s += exp(z[r * C + j] - m);
      for (uint64_t j = 0; j < C; j++)
        z[r * C + j] -= m + log(s);
    }
  for (uint64_t r = 0; r < rows; r++) { /* rows of p sum to 1 */
    double s = 0;
    for (uint64_t j = 0; j < C; j++)
      s += p[r * C + j];
    for (uint64_t j = 0; j < C; j++)
      p[r * C + j] /= s;
  }
  round_to(dt, z, n);
  round_to(dt, p, n);
  int64_t *t = malloc((rows + 1) * 8);
  for (uint64_t r = 0; r < rows; r++)
    t[r] = mode == 3 || r % 5 == 2 ? ignore : (int64_t)(urand(0, (double)C));
  double *loss = malloc((rows + 1) * 8), *wgt = malloc((rows + 1) * 8), *gr = rand_vec(rows, -1, 1),
         *dz = malloc((n + 1) * 8), *ones = malloc((rows + 1) * 8);
  round_to(dt, gr, rows);
  int probs = mode == 2 && !nll;
  if (nll) {
    for (uint64_t r = 0; r < rows; r++) {
      wgt[r] = t[r] != ignore;
      loss[r] = wgt[r] ? -z[r * C + (uint64_t)t[r]] : 0;
    }
  } else {
    ref_ce(z, t, probs ? p : NULL, rows, C, ignore, e, loss, wgt, gr, dz);
  }
  int64_t zs[2] = {(int64_t)rows, (int64_t)C}, rs = (int64_t)rows;
  kiln_tensor *tz = up(dt, 2, zs, z), *tt = probs ? up(dt, 2, zs, p) : up_i64(1, &rs, t);
  char what[128];
  snprintf(what, sizeof what, "%s %s mode %d rows %llu C %llu", kiln_dtype_name(dt),
           nll ? "nll" : "cross_entropy", mode, (unsigned long long)rows, (unsigned long long)C);
  for (int ri = 0; ri < 3; ri++) {
    kiln_reduction red = (kiln_reduction)ri;
    kiln_tensor *tl = NULL, *tgo = NULL, *tdz = NULL;
    if (nll)
      KOK(kiln_nll_loss(ctx, tz, tt, ignore, red, &tl));
    else
      KOK(kiln_cross_entropy(ctx, tz, tt, ignore, e, red, &tl));
    double scale = 1;
    if (red == KILN_REDUCTION_NONE) {
      expect_tensor(tl, loss, tol_of(dt) * 4, what);
      tgo = up(dt, 1, &rs, gr);
    } else {
      double want = fold(loss, wgt, rows, red, !probs);
      ck_assert_int_eq((int)kiln_tensor_ndim(tl), 0);
      expect_tensor(tl, &want, tol_of(dt) * 8, what);
      double g0 = 0.75;
      tgo = up(dt, 0, NULL, &g0);
      double c = 0;
      for (uint64_t r = 0; r < rows; r++)
        c += wgt[r];
      scale = red == KILN_REDUCTION_SUM ? g0 : probs ? g0 / (double)rows : g0 / c;
    }
    /* The reference gradient for grad_out = gr (none) or the scaled constant. */
    for (uint64_t r = 0; r < rows; r++)
      ones[r] = red == KILN_REDUCTION_NONE ? gr[r] : scale;
    if (nll) {
      for (uint64_t i = 0; i < n; i++)
        dz[i] = 0;
      for (uint64_t r = 0; r < rows; r++)
        if (t[r] != ignore)
          dz[r * C + (uint64_t)t[r]] = -ones[r];
    } else {
      ref_ce(z, t, probs ? p : NULL, rows, C, ignore, e, loss, wgt, ones, dz);
    }
    if (nll)
      KOK(kiln_nll_loss_backward(ctx, tgo, tz, tt, ignore, red, &tdz));
    else
      KOK(kiln_cross_entropy_backward(ctx, tgo, tz, tt, ignore, e, red, &tdz));
    expect_tensor(tdz, dz, tol_of(dt) * 4, what);
    if (!nll && red == KILN_REDUCTION_NONE) {
      /* In place: into copies of the logits and (probabilities) of the target. */
      kiln_tensor *cz = up(dt, 2, zs, z), *ct = probs ? up(dt, 2, zs, p) : NULL;
      kiln_tensor *into = probs ? ct : cz;
      KOK(kiln_cross_entropy_backward(ctx, tgo, cz, probs ? ct : tt, ignore, e, red, &into));
      expect_tensor(into, dz, tol_of(dt) * 4, what);
      kiln_tensor_release(cz), kiln_tensor_release(ct);
    }
    kiln_tensor_release(tl), kiln_tensor_release(tgo), kiln_tensor_release(tdz);
  }
  free(z), free(p), free(t), free(loss), free(wgt), free(gr), free(dz), free(ones);
  kiln_tensor_release(tz), kiln_tensor_release(tt);
}

START_TEST(class_losses)
{
  const uint64_t shapes[][2] = {
      {1, 1}, {1, 5},   {6, 3},    {37, 10},
      {0, 7}, {9, 300}, {3, 1001}, {harness_size(515, 5), harness_size(777, 40)}};
  FOR_DTYPES(dt)
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    if (!SMALL_SKIP(i, sizeof shapes / sizeof shapes[0]) &&
        !SMALL_DT_SKIP(dt, i, sizeof shapes / sizeof shapes[0]))
      for (int mode = 0; mode < 4; mode++) {
        class_case(dt, 0, mode, shapes[i][0], shapes[i][1]);
        if (mode != 2)
          class_case(dt, 1, mode, shapes[i][0], shapes[i][1]);
      }
}
END_TEST

START_TEST(cross_entropy_every_row_ignored_and_empty)
{
  kiln_context *ctx = harness_ctx();
  int64_t zs[2] = {4, 3}, rs = 4, t[4] = {7, 7, 7, 7};
  double z[12] = {0};
  FOR_DTYPES(dt)
  {
    kiln_tensor *tz = up(dt, 2, zs, z), *tt = up_i64(1, &rs, t), *mean = NULL, *sum = NULL;
    KOK(kiln_cross_entropy(ctx, tz, tt, 7, 0.1, KILN_REDUCTION_MEAN, &mean));
    KOK(kiln_cross_entropy(ctx, tz, tt, 7, 0.1, KILN_REDUCTION_SUM, &sum));
    double *m = down(mean), *s = down(sum);
    ck_assert_msg(isnan(m[0]), "mean over no row is %g, expected NaN", m[0]);
    ck_assert_msg(s[0] == 0, "sum over no row is %g", s[0]);
    free(m), free(s);
    kiln_tensor_release(tz), kiln_tensor_release(tt), kiln_tensor_release(mean);
    kiln_tensor_release(sum);
    /* An out-of-range index gives NaN for its row only. */
    int64_t bad[4] = {0, 3, 1, -1};
    tz = up(dt, 2, zs, z), tt = up_i64(1, &rs, bad);
    kiln_tensor *none = NULL;
    KOK(kiln_cross_entropy(ctx, tz, tt, -100, 0, KILN_REDUCTION_NONE, &none));
    double *v = down(none);
    ck_assert(!isnan(v[0]) && isnan(v[1]) && !isnan(v[2]) && isnan(v[3]));
    free(v);
    kiln_tensor_release(tz), kiln_tensor_release(tt), kiln_tensor_release(none);
  }
}
END_TEST

struct ce_fd {
  int nll, probs;
  double e;
  const int64_t *t;
  const double *p;
  int64_t shape[2];
};

static double
ce_eval(void *arg, kiln_dtype dt, const double *z)
{
  struct ce_fd *a = arg;
  kiln_tensor *tz = up(dt, 2, a->shape, z), *tl = NULL;
  kiln_tensor *tt = a->probs ? up(dt, 2, a->shape, a->p) : up_i64(1, a->shape, a->t);
  if (a->nll)
    KOK(kiln_nll_loss(harness_ctx(), tz, tt, 1, KILN_REDUCTION_MEAN, &tl));
  else
    KOK(kiln_cross_entropy(harness_ctx(), tz, tt, 1, a->e, KILN_REDUCTION_MEAN, &tl));
  double *l = down(tl), v = l[0];
  free(l);
  kiln_tensor_release(tz), kiln_tensor_release(tt), kiln_tensor_release(tl);
  return v;
}

START_TEST(class_losses_finite_differences)
{
  if (!harness_has_fp64())
    return;
  kiln_context *ctx = harness_ctx();
  const int64_t t[4] = {0, 1, 3, 2}; /* ignore_index 1: row 1 ignored */
  for (int k = 0; k < 4; k++) {
    struct ce_fd a = {k == 3, k == 2, k == 1 ? 0.2 : k == 2 ? 0.1 : 0, t, NULL, {4, 5}};
    double *z = rand_vec(20, -2, 2), *p = rand_vec(20, 0, 1);
    a.p = p;
    kiln_tensor *tz = up(KILN_F64, 2, a.shape, z), *tdz = NULL;
    kiln_tensor *tt = a.probs ? up(KILN_F64, 2, a.shape, p) : up_i64(1, a.shape, t);
    double one = 1;
    kiln_tensor *tg = up(KILN_F64, 0, NULL, &one);
    if (a.nll)
      KOK(kiln_nll_loss_backward(ctx, tg, tz, tt, 1, KILN_REDUCTION_MEAN, &tdz));
    else
      KOK(kiln_cross_entropy_backward(ctx, tg, tz, tt, 1, a.e, KILN_REDUCTION_MEAN, &tdz));
    double *dz = down(tdz);
    fd_check(ce_eval, &a, z, 20, dz,
             a.nll     ? "nll"
             : a.probs ? "cross_entropy probabilities"
                       : "cross_entropy");
    free(dz), free(z), free(p);
    kiln_tensor_release(tz), kiln_tensor_release(tt), kiln_tensor_release(tg);
    kiln_tensor_release(tdz);
  }
}
END_TEST

/* ------------------------------------------------------------------ pointwise losses */

/* Pointwise loss op over shape (pos_weight with with_pw), every reduction, and backward. */
static void
point_loss_case(kiln_dtype dt, kiln_loss_op op, const int64_t *shape, int with_pw)
{
  kiln_context *ctx = harness_ctx();
  uint64_t n = numel(2, shape), last = (uint64_t)shape[1];
  double prm = loss_param(op);
  double *x = malloc(n * 8 + 8), *y = malloc(n * 8 + 8), *w = rand_vec(last, 0.5, 3);
  loss_data(op, x, y, n);
  round_to(dt, x, n), round_to(dt, y, n), round_to(dt, w, last);
  double *l = malloc(n * 8 + 8), *ones = malloc(n * 8 + 8), *g = rand_vec(n, -1, 1);
  round_to(dt, g, n);
  for (uint64_t i = 0; i < n; i++) {
    l[i] = loss_f(op, x[i], y[i], with_pw ? w[i % last] : 1, prm);
    ones[i] = 1;
  }
  char what[96];
  snprintf(what, sizeof what, "%s %s n %llu pos_weight %d", kiln_dtype_name(dt),
           kiln_loss_op_name(op), (unsigned long long)n, with_pw);
  int64_t ls = (int64_t)last;
  kiln_tensor *tx = up(dt, 2, shape, x), *ty = up(dt, 2, shape, y);
  kiln_tensor *tw = with_pw ? up(dt, 1, &ls, w) : NULL;
  /* the simulator: no sum, which runs mean's kernels (only the scale passed differs) */
  for (int ri = 0; ri < (harness_small() ? 2 : 3); ri++) {
    kiln_reduction red = (kiln_reduction)ri;
    kiln_tensor *tl = NULL, *tgo = NULL, *tdx = NULL;
    KOK(kiln_loss(ctx, op, tx, ty, tw, prm, red, &tl));
    double gs = 1;
    if (red == KILN_REDUCTION_NONE) {
      expect_tensor(tl, l, tol_of(dt), what);
      tgo = up(dt, 2, shape, g);
    } else {
      double want = fold(l, ones, n, red, 0);
      if (dt == KILN_F16 && fabs(want) > 65504) {
        /* Past f16's range: the f32 sum rounds to inf on the way out, as in PyTorch. */
        double *got = down(tl);
        EXPECT(isinf(got[0]), "%s: f16 sum %g is not inf", what, got[0]);
        free(got);
      } else {
        expect_tensor(tl, &want, tol_of(dt) * 8, what);
      }
      double g0 = -1.25;
      tgo = up(dt, 0, NULL, &g0);
      gs = red == KILN_REDUCTION_SUM ? g0 : g0 / (double)n;
    }
    double *dx = malloc(n * 8 + 8);
    for (uint64_t i = 0; i < n; i++)
      dx[i] = (red == KILN_REDUCTION_NONE ? g[i] : gs) *
              loss_d(op, x[i], y[i], with_pw ? w[i % last] : 1, prm);
    KOK(kiln_loss_backward(ctx, op, tgo, tx, ty, tw, prm, red, &tdx));
    expect_tensor(tdx, dx, tol_of(dt) * 4, what);
    free(dx);
    kiln_tensor_release(tl), kiln_tensor_release(tgo), kiln_tensor_release(tdx);
  }
  free(x), free(y), free(w), free(l), free(ones), free(g);
  kiln_tensor_release(tx), kiln_tensor_release(ty), kiln_tensor_release(tw);
}

START_TEST(point_losses)
{
  const int64_t shapes[][2] = {{0, 3}, {1, 1}, {3, 7}, {harness_size(301, 9), 333}};
  const size_t ns = sizeof shapes / sizeof shapes[0];
  FOR_DTYPES(dt)
  {
    if (harness_small() && dt == KILN_BF16) /* the simulator: f16's 2-byte loads and stores */
      continue;
    for (int li = 0; li < KILN_LOSS_OP_COUNT; li++)
      for (size_t si = 0; si < ns; si++)
        for (int with_pw = 0; with_pw < (li == KILN_LOSS_BCE_WITH_LOGITS ? 2 : 1) &&
                              !SMALL_SKIP(si, ns) && !SMALL_DT_SKIP(dt, si, ns);
             with_pw++)
          point_loss_case(dt, (kiln_loss_op)li, shapes[si], with_pw);
  }
}
END_TEST

struct loss_fd {
  kiln_loss_op op;
  const double *y, *w;
  int64_t shape[2];
};

static double
loss_eval(void *arg, kiln_dtype dt, const double *x)
{
  struct loss_fd *a = arg;
  int64_t last = a->shape[1];
  kiln_tensor *tx = up(dt, 2, a->shape, x), *ty = up(dt, 2, a->shape, a->y), *tl = NULL;
  kiln_tensor *tw = a->w ? up(dt, 1, &last, a->w) : NULL;
  KOK(kiln_loss(harness_ctx(), a->op, tx, ty, tw, loss_param(a->op), KILN_REDUCTION_MEAN, &tl));
  double *l = down(tl), v = l[0];
  free(l);
  kiln_tensor_release(tx), kiln_tensor_release(ty), kiln_tensor_release(tw);
  kiln_tensor_release(tl);
  return v;
}

START_TEST(point_losses_finite_differences)
{
  if (!harness_has_fp64())
    return;
  kiln_context *ctx = harness_ctx();
  for (int li = 0; li < KILN_LOSS_OP_COUNT; li++) {
    struct loss_fd a = {(kiln_loss_op)li, NULL, NULL, {2, 5}};
    double x[10], y[10], *w = rand_vec(5, 0.5, 3);
    loss_data(a.op, x, y, 10);
    a.y = y;
    a.w = a.op == KILN_LOSS_BCE_WITH_LOGITS ? w : NULL;
    int64_t last = 5;
    kiln_tensor *tx = up(KILN_F64, 2, a.shape, x), *ty = up(KILN_F64, 2, a.shape, y);
    kiln_tensor *tw = a.w ? up(KILN_F64, 1, &last, w) : NULL, *tdx = NULL;
    double one = 1;
    kiln_tensor *tg = up(KILN_F64, 0, NULL, &one);
    KOK(kiln_loss_backward(ctx, a.op, tg, tx, ty, tw, loss_param(a.op), KILN_REDUCTION_MEAN, &tdx));
    double *dx = down(tdx);
    fd_check(loss_eval, &a, x, 10, dx, kiln_loss_op_name(a.op));
    free(dx), free(w);
    kiln_tensor_release(tx), kiln_tensor_release(ty), kiln_tensor_release(tw);
    kiln_tensor_release(tg), kiln_tensor_release(tdx);
  }
}
END_TEST

/* ------------------------------------------------------------------ bad input */

START_TEST(bad_input)
{
  kiln_context *ctx = harness_ctx();
  int64_t s23[2] = {2, 3}, s2 = 2, s3 = 3;
  double v[6] = {0, 1, 2, 3, 4, 5};
  kiln_tensor *x = up(KILN_F32, 2, s23, v), *x2 = up(KILN_F32, 1, &s3, v), *o = NULL;
  kiln_tensor *xi = NULL, *t = NULL, *tbad = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_I32, 2, s23, &xi));
  KOK(kiln_tensor_zeros(ctx, KILN_I64, 1, &s2, &t));
  KOK(kiln_tensor_zeros(ctx, KILN_I64, 1, &s3, &tbad));
  KEXPECT(kiln_softmax(ctx, xi, 1, &o), KILN_ERR_DTYPE);
  KEXPECT(kiln_softmax(ctx, x, 2, &o), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_softmax(ctx, x, 1, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_softmax(ctx, NULL, 1, &o), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_softmax_backward(ctx, x2, x, 1, &o), KILN_ERR_SHAPE);
  KEXPECT(kiln_layer_norm(ctx, x, 1, x, NULL, 1e-5, &o, NULL, NULL), KILN_ERR_SHAPE);
  KEXPECT(kiln_layer_norm(ctx, x, 1, NULL, NULL, -1, &o, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_layer_norm_backward(ctx, x, x, NULL, x2, NULL, 1, &o, NULL, NULL),
          KILN_ERR_INVALID_HANDLE);
  /* Two outputs over one tensor. */
  kiln_tensor *m = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 1, &s2, &m));
  kiln_tensor *m2 = m;
  KEXPECT(kiln_layer_norm(ctx, x, 1, NULL, NULL, 1e-5, &o, &m, &m2), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_activation_forward(ctx, KILN_ACTIVATION_COUNT, x, 0, 0, &o),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_activation_forward(ctx, KILN_ACT_GELU, xi, 0, 0, &o), KILN_ERR_DTYPE);
  KEXPECT(kiln_activation_backward(ctx, KILN_ACT_GELU, x2, x, 0, 0, &o), KILN_ERR_SHAPE);
  KEXPECT(kiln_cross_entropy(ctx, x, tbad, -100, 0, KILN_REDUCTION_MEAN, &o), KILN_ERR_SHAPE);
  KEXPECT(kiln_cross_entropy(ctx, x, t, -100, 1.5, KILN_REDUCTION_MEAN, &o),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_cross_entropy(ctx, x, t, -100, 0, (kiln_reduction)7, &o), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_cross_entropy(ctx, x, xi, -100, 0, KILN_REDUCTION_MEAN, &o), KILN_ERR_DTYPE);
  KEXPECT(kiln_nll_loss(ctx, x, x, -100, KILN_REDUCTION_MEAN, &o), KILN_ERR_DTYPE);
  KEXPECT(kiln_cross_entropy_backward(ctx, x, x, t, -100, 0, KILN_REDUCTION_MEAN, &o),
          KILN_ERR_SHAPE);
  KEXPECT(kiln_loss(ctx, KILN_LOSS_MSE, x, x2, NULL, 0, KILN_REDUCTION_MEAN, &o), KILN_ERR_SHAPE);
  KEXPECT(kiln_loss(ctx, KILN_LOSS_MSE, x, x, x2, 0, KILN_REDUCTION_MEAN, &o),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_loss(ctx, KILN_LOSS_BCE_WITH_LOGITS, x, x, m, 0, KILN_REDUCTION_MEAN, &o),
          KILN_ERR_SHAPE);
  KEXPECT(kiln_loss(ctx, KILN_LOSS_HUBER, x, x, NULL, 0, KILN_REDUCTION_MEAN, &o),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_loss(ctx, KILN_LOSS_OP_COUNT, x, x, NULL, 0, KILN_REDUCTION_MEAN, &o),
          KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(o);
  ck_assert_str_eq(kiln_activation_name(KILN_ACT_GELU_TANH), "gelu_tanh");
  ck_assert_str_eq(kiln_loss_op_name(KILN_LOSS_SMOOTH_L1), "smooth_l1");
  ck_assert_int_eq(kiln_activation_backward_uses_output(KILN_ACT_SIGMOID), 1);
  ck_assert_int_eq(kiln_activation_backward_uses_output(KILN_ACT_GELU), 0);
  ck_assert(!kiln_nn_supports(KILN_I32) && kiln_nn_supports(KILN_F32));
  kiln_tensor_release(x), kiln_tensor_release(x2), kiln_tensor_release(xi);
  kiln_tensor_release(t), kiln_tensor_release(tbad), kiln_tensor_release(m);
}
END_TEST

/* ------------------------------------------------------------------ launch knobs */

/*
 * Every value of the row kernels' knobs (ops/tuned.h's kiln__nn_test_knobs): elements kept
 * in registers per lane (0: streamed, 4, 8, 16), and every least local size 1 to 1024, some with
 * the local size pinned small (kiln__launch_local_override) so that rows outgrow the
 * registers and their tails are streamed. Each runs softmax and log_softmax forward and
 * backward (rows longer than a group, rows of 1, short rows, an empty batch, a middle axis,
 * rows of -inf and NaN), layer_norm and rms_norm forward and backward, and cross_entropy with
 * indices, probabilities and every row ignored; every dtype once per items value (each pair
 * is a program to compile), f32 for the other local sizes.
 */
/*
 * Rows of a multiple of 4 at an offset that is not (a view one element in): element by element
 * instead of as 4-vectors; softmax, log_softmax, layer_norm and cross_entropy forward and
 * backward must give what the same rows give from an aligned copy.
 */
static void
misaligned_rows_check(void)
{
  kiln_context *ctx = harness_ctx();
  const int64_t shape[2] = {3, 36}, flat = 3 * 36 + 1, bshape[1] = {3};
  double *h = rand_vec((size_t)flat, -3, 3), *gh = rand_vec((size_t)flat, -1, 1);
  round_to(KILN_F32, h, (size_t)flat), round_to(KILN_F32, gh, (size_t)flat);
  kiln_tensor *base = up(KILN_F32, 1, &flat, h), *gbase = up(KILN_F32, 1, &flat, gh);
  kiln_tensor *xv = view_at(base, 1, 2, shape), *gv = view_at(gbase, 1, 2, shape);
  kiln_tensor *xa = up(KILN_F32, 2, shape, h + 1), *ga = up(KILN_F32, 2, shape, gh + 1);
  int64_t tv[3] = {5, 0, 35};
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_I64, 1, bshape, tv, &t));
  const int64_t one = 1;
  const double gone = 0.5;
  kiln_tensor *gout = up(KILN_F32, 0, &one, &gone);
  for (int op = 0; op < 4; op++) {
    kiln_tensor *r[2][2] = {{NULL, NULL}, {NULL, NULL}};
    for (int al = 0; al < 2; al++) {
      kiln_tensor *x = al ? xa : xv, *g = al ? ga : gv;
      if (op == 0) {
        KOK(kiln_softmax(ctx, x, -1, &r[al][0]));
        KOK(kiln_softmax_backward(ctx, g, r[al][0], -1, &r[al][1]));
      } else if (op == 1) {
        KOK(kiln_log_softmax(ctx, x, -1, &r[al][0]));
        KOK(kiln_log_softmax_backward(ctx, g, r[al][0], -1, &r[al][1]));
      } else if (op == 2) {
        kiln_tensor *mu = NULL, *rs = NULL;
        KOK(kiln_layer_norm(ctx, x, 1, NULL, NULL, 1e-5, &r[al][0], &mu, &rs));
        KOK(kiln_layer_norm_backward(ctx, g, x, mu, rs, NULL, 1, &r[al][1], NULL, NULL));
        kiln_tensor_release(mu), kiln_tensor_release(rs);
      } else {
        KOK(kiln_cross_entropy(ctx, x, t, -100, 0.1, KILN_REDUCTION_NONE, &r[al][0]));
        KOK(kiln_cross_entropy_backward(ctx, gout, x, t, -100, 0.1, KILN_REDUCTION_MEAN,
                                        &r[al][1]));
      }
    }
    for (int k = 0; k < 2; k++) {
      double *want = down(r[1][k]);
      /* The lanes sum in another order: a few f32 roundings apart. */
      expect_tensor(r[0][k], want, 1e-5, "misaligned rows");
      free(want);
      kiln_tensor_release(r[0][k]), kiln_tensor_release(r[1][k]);
    }
  }
  kiln_tensor_release(gout);
  free(h), free(gh);
  kiln_tensor_release(base), kiln_tensor_release(gbase), kiln_tensor_release(xv);
  kiln_tensor_release(gv), kiln_tensor_release(xa), kiln_tensor_release(ga), kiln_tensor_release(t);
}

START_TEST(row_knobs)
{
  /* {items, wg, local, cases, row_local, cpu}: cases 2 runs the full lists on f32 and the short
   * ones on f64, f16 and bf16 (0, streamed, 16, the GPU forms' register cache, the local cache
   * of 32 KiB, and the CPU forms (row_cpu, the CPU devices' default), on every dtype); 1 the
   * full lists on f32 (4 and 8, knobs only, and local caches of 1 and 3 KiB, which hold only
   * the first chunks of the longer rows and stream the rest); 0 the short lists on f32 (the
   * other least local sizes, some with the local size pinned small so that rows outgrow the
   * registers or the cache). */
  const struct {
    int32_t items, wg;
    size_t local;
    int cases;
    int32_t row_local, cpu;
  } knobs[] = {
      {0, 1, 0, 2, 0, 0},     {4, 16, 0, 1, 0, 0},   {4, 2, 32, 0, 0, 0},   {8, 2, 0, 1, 0, 0},
      {8, 64, 0, 0, 0, 0},    {16, 256, 0, 2, 0, 0}, {16, 4, 64, 0, 0, 0},  {16, 8, 0, 0, 0, 0},
      {16, 32, 0, 0, 0, 0},   {16, 128, 0, 0, 0, 0}, {4, 512, 0, 0, 0, 0},  {8, 1024, 0, 0, 0, 0},
      {0, 256, 0, 2, 32, 0},  {0, 16, 0, 1, 1, 0},   {0, 64, 0, 1, 3, 0},   {0, 4, 32, 0, 2, 0},
      {0, 1024, 0, 0, 48, 0}, {0, 128, 0, 0, 64, 0}, {16, 256, 0, 2, 0, 1}, {0, 1, 0, 1, 0, 1},
  };
  /* Odd lengths move elements one by one, multiples of 4 as 4-vectors (kiln__nn_row_vec);
   * 2052 outgrows the pinned local sizes' registers with either. The short lists are the
   * first entries of each. */
  const struct sm_case sm[] = {{2, {3, 1001}, 1}, {2, {7, 36}, -1},  {3, {2, 40, 3}, 1},
                               {2, {2, 2052}, 1}, {2, {5, 1}, 1},    {2, {6, 7}, -1},
                               {2, {0, 9}, 1},    {2, {2, 2053}, 1}, {2, {4, 1000}, 1}};
  const int64_t nm[][2] = {{3, 1001}, {2, 2052}, {4, 1}, {5, 33}, {0, 8}, {2, 2053}, {4, 1000}};
  const uint64_t ce[][2] = {{3, 1001}, {5, 36}, {4, 1}, {6, 17}, {0, 5}, {4, 1000}, {2, 2052}};
  const size_t nsm = sizeof sm / sizeof sm[0], nnm = sizeof nm / sizeof nm[0];
  const size_t nce = sizeof ce / sizeof ce[0];
  for (size_t ki = 0; ki < sizeof knobs / sizeof knobs[0]; ki++) {
    /* the simulator (small mode): every other entry, and none of 512 or 1024 lanes a row (its
     * cost grows with the lanes that wait at each barrier; 256 and below index the same way),
     * nor a cache of 64 KiB (its 32 KiB of local memory cap 32 and 64 alike), nor 16 items
     * unpinned (their program runs pinned, whole rows in registers run with 8 items) */
    if (SMALL_SKIP(ki, sizeof knobs / sizeof knobs[0]) ||
        (harness_small() && (knobs[ki].wg >= 512 || knobs[ki].row_local > 32 ||
                             (knobs[ki].items == 16 && !knobs[ki].local))))
      continue;
    kiln__nn_test_knobs.row_items = knobs[ki].items;
    kiln__nn_test_knobs.row_wg = knobs[ki].wg;
    /* NVIDIA's register cap (a build option elsewhere ignored) on the 4- and 8-item entries. */
    kiln__nn_test_knobs.maxreg = knobs[ki].cases == 1 ? 64 : -1;
    kiln__nn_test_knobs.row_local = knobs[ki].row_local;
    kiln__nn_test_knobs.row_cpu = knobs[ki].cpu;
    /* The norm backward's column sums: one chunk of every row (2^0 items) and chunks of a few
     * rows (2^10) beside the default's chunks of one row. */
    kiln__nn_test_knobs.col_items = knobs[ki].cases == 1 ? (ki % 2 ? 0 : 10) : -1;
    kiln__launch_local_override = knobs[ki].local;
    FOR_DTYPES(dt)
    {
      /* the simulator: f32 and the short lists (the other dtypes' rows index memory as f32's
       * at the same knobs, and run at the default knobs in the other tests) */
      if (dt != KILN_F32 && (knobs[ki].cases < 2 || harness_small()))
        continue;
      int full = dt == KILN_F32 && knobs[ki].cases > 0 && !harness_small();
      for (size_t i = 0; i < (full ? nsm : 4); i++)
        for (int logm = 0; logm < 2; logm++)
          softmax_case(dt, &sm[i], logm);
      for (size_t i = 0; i < (full ? nnm : 2); i++)
        for (int rms = 0; rms < 2; rms++)
          norm_case(dt, rms, 2, nm[i], 1, 1, !rms);
      for (size_t i = 0; i < (full ? nce : 2); i++)
        for (int mode = 0; mode < 4; mode++)
          if (mode != 1)
            class_case(dt, 0, mode, ce[i][0], ce[i][1]);
    }
    if (knobs[ki].cases) {
      softmax_special_rows_check();
      misaligned_rows_check();
    }
  }
  kiln__nn_test_knobs.row_items = kiln__nn_test_knobs.row_wg = kiln__nn_test_knobs.maxreg = -1;
  kiln__nn_test_knobs.row_local = kiln__nn_test_knobs.col_items = -1;
  kiln__nn_test_knobs.row_cpu = -1;
  kiln__launch_local_override = 0;
}
END_TEST

/*
 * Every value of the flat kernels' knobs: 1, 2, 4 and 8 elements per work-item, OpenCL's
 * and kiln's erfc (f64 on one combination), the native exp and reciprocal (f32, f16, bf16), on
 * the gelu forms (over the tails too: -12 to
 * 8), silu, relu and the mse loss, forward and backward; sizes 0, 1, primes and a non-multiple of
 * any group.
 */
/* gelu forward and backward over views one element in (no 4-vectors; any offset on the vector
 * math), forward also in place, against the reference. */
static void
misaligned_act_check(kiln_dtype dt)
{
  kiln_context *ctx = harness_ctx();
  const int64_t flat = 1032, n = 1031;
  double *x = rand_vec((size_t)flat, -5, 5), *g = rand_vec((size_t)flat, -1, 1);
  round_to(dt, x, (size_t)flat), round_to(dt, g, (size_t)flat);
  double *y = malloc((size_t)n * 8), *dx = malloc((size_t)n * 8);
  for (int64_t i = 0; i < n; i++) {
    y[i] = act_f(KILN_ACT_GELU, x[i + 1], 0, 0);
    dx[i] = g[i + 1] * act_d(KILN_ACT_GELU, x[i + 1], 0, 0);
  }
  kiln_tensor *bx = up(dt, 1, &flat, x), *bg = up(dt, 1, &flat, g);
  kiln_tensor *tx = view_at(bx, 1, 1, &n), *tg = view_at(bg, 1, 1, &n), *ty = NULL, *tdx = NULL;
  KOK(kiln_activation_forward(ctx, KILN_ACT_GELU, tx, 0, 0, &ty));
  KOK(kiln_activation_backward(ctx, KILN_ACT_GELU, tg, tx, 0, 0, &tdx));
  expect_tensor(ty, y, tol_of(dt), "gelu, misaligned");
  expect_tensor(tdx, dx, tol_of(dt), "gelu backward, misaligned");
  /* In place: the stores land one element off too (PoCL's 8- and 16-wide vstore_half faulted
   * there). */
  KOK(kiln_activation_forward(ctx, KILN_ACT_GELU, tx, 0, 0, &tx));
  expect_tensor(tx, y, tol_of(dt), "gelu in place, misaligned");
  free(x), free(g), free(y), free(dx);
  kiln_tensor_release(bx), kiln_tensor_release(bg), kiln_tensor_release(tx);
  kiln_tensor_release(tg), kiln_tensor_release(ty), kiln_tensor_release(tdx);
}

START_TEST(act_knobs)
{
  /* {act_items, erf, fast, act_vec, dtypes (1: f32, 2: + f64, 3: + f16, bf16, 4: f64 only)}:
   * every value of each knob, fast (native exp and reciprocal) and 4-vectors on every dtype
   * they change, vector math (act_vec 8 and 16: CPU devices' defaults are 8 for f64 and 16
   * for the others) with OpenCL's erfc and with several vectors per item, each entry a program
   * per dtype (gelu_tail_relative reuses them). */
  const int32_t knobs[][5] = {{2, 0, 0, 4, 1}, {4, 1, 0, 4, 2},  {8, 1, 1, 4, 3},
                              {8, 0, 0, 1, 4}, {2, 1, 1, 16, 3}, {1, 0, 0, 8, 2}};
  const kiln_activation acts[] = {KILN_ACT_GELU, KILN_ACT_GELU_TANH, KILN_ACT_SILU, KILN_ACT_RELU};
  const int64_t sizes[] = {0, 1, 7, 1031, harness_size(20011, 600)};
  const int64_t ls[][2] = {{0, 3}, {3, 7}, {harness_size(61, 9), 333}};
  for (size_t ki = 0; ki < sizeof knobs / sizeof knobs[0]; ki++) {
    kiln__nn_test_knobs.act_items = knobs[ki][0];
    kiln__nn_test_knobs.erf = knobs[ki][1];
    kiln__nn_test_knobs.fast = knobs[ki][2];
    kiln__nn_test_knobs.act_vec = knobs[ki][3];
    FOR_DTYPES(dt)
    {
      int set = knobs[ki][4];
      int want = dt == KILN_F32 ? set != 4 : dt == KILN_F64 ? set == 2 || set == 4 : set == 3;
      if (!want || (harness_small() && dt == KILN_BF16)) /* the simulator: f16's 2-byte ones */
        continue;
      for (size_t ai = 0; ai < sizeof acts / sizeof acts[0]; ai++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
          if (!SMALL_SKIP(si, sizeof sizes / sizeof sizes[0]) &&
              !SMALL_DT_SKIP(dt, si, sizeof sizes / sizeof sizes[0]))
            act_case(dt, acts[ai], sizes[si], acts[ai] == KILN_ACT_GELU ? -12 : -5,
                     acts[ai] == KILN_ACT_GELU ? 8 : 5);
      for (size_t si = 0; si < sizeof ls / sizeof ls[0]; si++)
        point_loss_case(dt, KILN_LOSS_MSE, ls[si], 0);
      misaligned_act_check(dt);
    }
  }
  kiln__nn_test_knobs.act_items = kiln__nn_test_knobs.erf = kiln__nn_test_knobs.fast = -1;
  kiln__nn_test_knobs.act_vec = -1;
}
END_TEST

/*
 * Special values through every activation, forward and backward, on the device's default
 * knobs (CPU devices: vector math; GPUs: 4-vectors) and on scalars (act_vec 1): both give the
 * same NaNs, the same infinities and values within the dtype's tolerance. The values are laid
 * out three times, rotated, over 37 elements, so that each lands both in whole vectors and in
 * the scalar tail.
 */
START_TEST(act_special_values)
{
  kiln_context *ctx = harness_ctx();
  static const double sv[] = {INFINITY, -INFINITY, NAN,  0.0,   -0.0,   1e300, -1e300, 3e38,
                              -3e38,    700,       -700, 50,    -50,    20,    -20,    6,
                              -6,       3,         -3,   1e-30, -1e-30, 0.5};
  enum { NS = sizeof sv / sizeof sv[0], N = 37 };
  int64_t n = N;
  double x[N], g[N];
  for (int i = 0; i < N; i++) {
    x[i] = sv[(i + 5 * (i / NS)) % NS];
    g[i] = i % 3 ? 1.5 : -0.75;
  }
  FOR_DTYPES(dt)
  {
    if (harness_small() && dt != KILN_F32)
      continue;
    double xd[N];
    memcpy(xd, x, sizeof xd);
    round_to(dt, xd, N);
    kiln_tensor *tx = up(dt, 1, &n, xd), *tg = up(dt, 1, &n, g);
    for (int ai = 0; ai < KILN_ACTIVATION_COUNT; ai++) {
      kiln_activation a = (kiln_activation)ai;
      double p0, p1, *y[2], *dx[2];
      act_params(a, &p0, &p1);
      for (int scalar = 0; scalar < 2; scalar++) {
        kiln__nn_test_knobs.act_vec = scalar ? 1 : -1;
        kiln_tensor *ty = NULL, *tdx = NULL;
        KOK(kiln_activation_forward(ctx, a, tx, p0, p1, &ty));
        KOK(kiln_activation_backward(ctx, a, tg, kiln_activation_backward_uses_output(a) ? ty : tx,
                                     p0, p1, &tdx));
        y[scalar] = down(ty), dx[scalar] = down(tdx);
        kiln_tensor_release(ty), kiln_tensor_release(tdx);
      }
      char what[96];
      snprintf(what, sizeof what, "%s %s special values, vectors against scalars",
               kiln_dtype_name(dt), kiln_activation_name(a));
      expect_close(y[0], y[1], N, tol_of(dt), what);
      expect_close(dx[0], dx[1], N, tol_of(dt) * (dt != KILN_F64 ? 10 : 1), what);
      free(y[0]), free(y[1]), free(dx[0]), free(dx[1]);
    }
    kiln_tensor_release(tx), kiln_tensor_release(tg);
  }
  kiln__nn_test_knobs.act_vec = -1;
}
END_TEST

/*
 * kiln's erfc (the default) keeps gelu's relative accuracy in the lower tail, where x Phi(x)
 * is tiny, and gelu's derivative likewise (relative to its two terms): in f32 within 2e-5 of
 * the reference down to x = -12 (Phi about 2e-33); in f64 within 1e-14 (kiln's) or 1e-12
 * (OpenCL's erfc, whose argument x / sqrt 2 is rounded) from -37.5 (Phi about 5e-309) to 9.
 * The reference is in long double, so its own rounding of x / sqrt 2 stays below 1e-16.
 */
START_TEST(gelu_tail_relative)
{
  kiln_context *ctx = harness_ctx();
  enum { N = 241 };
  double x[N], y[N], d[N], terms[N], ones[N];
  for (int f64 = 0; f64 < 1 + harness_has_fp64(); f64++) {
    kiln_dtype dt = f64 ? KILN_F64 : KILN_F32;
    double lo = f64 ? -37.5 : -12.0, step = f64 ? 46.5 / (N - 1) : 0.05;
    for (int i = 0; i < N; i++) {
      x[i] = f64 ? lo + step * i : (double)(float)(lo + step * i);
      long double xl = x[i], phi = 0.5L * erfcl(-xl / sqrtl(2.0L));
      long double g = 0.39894228040143267793994605993438L * expl(-0.5L * xl * xl);
      y[i] = (double)(xl * phi);
      d[i] = (double)(phi + xl * g);
      /* gelu' = Phi(x) + x phi(x) cancels near its zero (x = -0.75): relative to the terms. */
      terms[i] = (double)(phi + fabsl(xl) * g);
      ones[i] = 1;
    }
    int64_t n = N;
    /* erf 0 and 1; in f32 also kiln's erfc with the native exp and reciprocal (fast). */
    for (int mode = 0; mode < (f64 ? 2 : 3); mode++) {
      int erf = mode > 0;
      double tol = !f64 ? 2e-5 : erf ? 1e-14 : 1e-12;
      kiln__nn_test_knobs.erf = erf;
      kiln__nn_test_knobs.fast = mode == 2;
      /* act_knobs' programs (OpenCL's erfc: {2, 4} in f32, {8, 1} in f64; fast {8, 4}), or
       * the default. */
      kiln__nn_test_knobs.act_items = mode == 1 ? -1 : mode == 2 || f64 ? 8 : 2;
      kiln__nn_test_knobs.act_vec = mode == 1 ? -1 : f64 ? 1 : 4;
      kiln_tensor *tx = up(dt, 1, &n, x), *tg = up(dt, 1, &n, ones), *ty = NULL, *tdx = NULL;
      KOK(kiln_activation_forward(ctx, KILN_ACT_GELU, tx, 0, 0, &ty));
      KOK(kiln_activation_backward(ctx, KILN_ACT_GELU, tg, tx, 0, 0, &tdx));
      double *yd = down(ty), *dd = down(tdx);
      for (int i = 0; i < N; i++) {
        EXPECT(fabs(yd[i] - y[i]) <= tol * fabs(y[i]) + 1e-320,
               "%s erf %d: gelu(%.17g) = %.17g, expected %.17g", kiln_dtype_name(dt), erf, x[i],
               yd[i], y[i]);
        EXPECT(fabs(dd[i] - d[i]) <= tol * terms[i] + 1e-320,
               "%s erf %d: gelu'(%.17g) = %.17g, expected %.17g", kiln_dtype_name(dt), erf, x[i],
               dd[i], d[i]);
      }
      free(yd), free(dd);
      kiln_tensor_release(tx), kiln_tensor_release(ty), kiln_tensor_release(tg);
      kiln_tensor_release(tdx);
    }
  }
  kiln__nn_test_knobs.erf = kiln__nn_test_knobs.fast = -1;
  kiln__nn_test_knobs.act_items = kiln__nn_test_knobs.act_vec = -1;
}
END_TEST

static Suite *
nn_suite(void)
{
  Suite *s = suite_create("nn");
  TCase *tc = tcase_create("nn");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, softmax_shapes);
  tcase_add_test(tc, softmax_special_rows);
  tcase_add_test(tc, norm_shapes);
  tcase_add_test(tc, activations_against_reference);
  tcase_add_test(tc, class_losses);
  tcase_add_test(tc, cross_entropy_every_row_ignored_and_empty);
  tcase_add_test(tc, point_losses);
  tcase_add_test(tc, bad_input);
  tcase_add_test(tc, act_knobs);
  tcase_add_test(tc, act_special_values);
  tcase_add_test(tc, gelu_tail_relative);
  if (!harness_small()) {
    tcase_add_test(tc, softmax_finite_differences);
    tcase_add_test(tc, norm_finite_differences);
    tcase_add_test(tc, activations_finite_differences);
    tcase_add_test(tc, class_losses_finite_differences);
    tcase_add_test(tc, point_losses_finite_differences);
  }
  suite_add_tcase(s, tc);
  /* A case of its own: CK_RUN_CASE=row_knobs runs the row kernels' knobs alone. */
  TCase *rk = tcase_create("row_knobs");
  tcase_set_timeout(rk, 600);
  tcase_add_test(rk, row_knobs);
  suite_add_tcase(s, rk);
  return s;
}

int
main(void)
{
  return harness_main(nn_suite(), 1);
}
