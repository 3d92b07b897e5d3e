/*
 * Reduction suite: kiln_reduce and kiln_argreduce against a host reference.
 *
 * Coverage: every op of KILN_REDUCE_OPS for every dtype it accepts; sizes 1,
 * primes, non-multiples of the work-group size, 2^24 + 3 elements; every
 * subset of the axes of a {3,5,7,4} tensor (sum, max, argmax, mean, var,
 * median), with and without keepdims and with negative axes; NaN and +-inf
 * under both NaN policies, including all-NaN slices (nan_slices: every op and norm
 * order along each axis of a 4-D tensor whose NaN planes leave whole slices NaN, at
 * every value of every tunable); argmin/argmax ties;
 * empty reductions; ddof, every norm order, overflow-safe norms and
 * logsumexp; the three median tiers; f64 accumulation and a device without
 * fp64 (KILN_DEBUG_NO_FP64); bad input. The rows, columns, two-pass and
 * permute strategies are all reached, and test_tunables runs them at
 * work-group sizes 64, 128, 256 and the device maximum with the two-pass
 * split forced on and off, each of the three lane orders (blocked,
 * interleaved 4-vectors, interleaved scalars) and 16, 1 and 5 columns per
 * work-item; vector_lanes runs the 4-vector paths for every dtype on views
 * 0-3 elements into their buffer (this suite links the library internals
 * for kiln__reduce_tuned). Every bool result holds only 0 and 1 (hd_expect_bool01).
 * f16 and bf16 run in ops_dtypes (and f16 in vector_lanes); tuner_values runs every
 * candidate value of every reduce tuner parameter once for bf16 sum; complex tests c64
 * and c128 (sum, mean, prod, every norm order, refused ops) against its own reference.
 *
 * Reference: computed in long double (exact for every input dtype: 64-bit
 * mantissa on x86-64) from the exact input values: straight sums, two-pass
 * variance, sqrt of the sum of squares, sorting for the median; integer sums
 * and products wrap in 64 bits like the library's.
 *
 * Tolerances (eps = the epsilon of the accumulation type: FLT_EPSILON for
 * f32, DBL_EPSILON for f64 and for integer inputs with f64 results; S = sum
 * of |x_i|, n = elements reduced, L = 1 + log2(n)):
 *   sum, mean, norm L1       8 eps S (mean: / n): docs/reductions.md derives the bound
 *   prod                     (n + 4) eps |want|
 *   var, std                 8 L eps (|want| + mean^2) (Welford + pairwise merge)
 *   norm L2 / p              8 L eps |want|
 *   logsumexp                8 L eps (1 + |want|)
 *   everything else          exact: min, max, argmin, argmax, any, all,
 *                            count_nonzero, norm L0/Linf/-inf, integer
 *                            sum/prod, median (whose
 *                            midpoint the reference rounds like the device)
 *   f32 with accumulate_f64  sum/mean: FLT_EPSILON |want| + 8 DBL_EPSILON S
 *   f16, bf16                the f32 bound (eps = FLT_EPSILON: they accumulate in f32)
 *                            plus half an ulp of the storage type, against the
 *                            unrounded reference; exact ops against the reference
 *                            rounded with the host conversions
 * NaN matches only NaN and an infinity only the same infinity.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "hostdata.h"
#include "ops/launch_params.h"
#include "ops/tuned.h"
#include "runtime/tuner.h"

/*
 * ck_assert_msg records a checkpoint even when it passes (a write and flush per call
 * with CK_FORK=no); element-wise comparisons of millions of values use this instead.
 */
#define EXPECT(cond, ...)        \
  do {                           \
    if (!(cond))                 \
      ck_abort_msg(__VA_ARGS__); \
  } while (0)

/* ------------------------------------------------------------------ */
/* Host data                                                           */
/* ------------------------------------------------------------------ */

enum gen {
  GEN_UNIFORM, /* floats in [-2, 2); i32 in [-1000, 1000]; i64 around +-2^40; u8; bool */
  GEN_SPECIAL, /* GEN_UNIFORM with about 10% NaN, 3% +inf, 3% -inf (floats) */
  GEN_NAN,     /* GEN_UNIFORM with about 10% NaN, no infinities (floats) */
  GEN_TIES,    /* values 0..3 only: many ties */
  GEN_NEAR1,   /* floats in [0.9, 1.1) (products) */
  GEN_NANROW,  /* GEN_SPECIAL, and elements [n/3, n/2) all NaN (a whole row of a {6, k} matrix) */
};

static uint64_t rng_state;

/* A float dtype (f16 and bf16 included: they compute in f32). */
static int
is_fl(kiln_dtype dt)
{
  return dt == KILN_F32 || dt == KILN_F64 || dt == KILN_F16 || dt == KILN_BF16;
}

static int
is_half(kiln_dtype dt)
{
  return dt == KILN_F16 || dt == KILN_BF16;
}

/* v rounded to dtype dt (the host conversions: one rounding, to nearest even). */
static long double
round_to(kiln_dtype dt, long double v)
{
  switch (dt) {
  case KILN_F16:
    return kiln_f16_to_f32(kiln_f16_from_f64((double)v));
  case KILN_BF16:
    return kiln_bf16_to_f32(kiln_bf16_from_f64((double)v));
  case KILN_F32:
    return (float)v;
  default:
    return (double)v;
  }
}

/* Half an ulp of the 16-bit dtype dt at |v| (at least half its smallest subnormal step). */
static long double
half_ulp(kiln_dtype dt, long double v)
{
  long double a = fabsl(v);
  return dt == KILN_F16 ? fmaxl(a * 0x1p-11L, 0x1p-25L) : fmaxl(a * 0x1p-8L, 0x1p-134L);
}

static uint64_t
rnd(void)
{
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static double
unif(void)
{
  return (double)(rnd() >> 11) * 0x1.0p-53;
}

static void
host_make(struct hd_host *h, kiln_dtype dt, uint64_t n, enum gen g, uint64_t seed)
{
  hd_host_alloc(h, dt, n);
  rng_state = seed * 2654435761u + 0x9e3779b97f4a7c15ull;
  int is_float = is_fl(dt);
  for (uint64_t i = 0; i < n; i++) {
    long double v;
    if (dt == KILN_BOOL)
      v = (long double)(rnd() & 1); /* a bool holds 0 or 1, whatever the generator */
    else if (g == GEN_TIES)
      v = (long double)(rnd() % 4);
    else if (g == GEN_NEAR1)
      v = 0.9 + 0.2 * unif();
    else if (is_float)
      v = unif() * 4.0 - 2.0;
    else if (dt == KILN_I32)
      v = (long double)((int64_t)(rnd() % 2001) - 1000);
    else if (dt == KILN_I64)
      v = (long double)((int64_t)(rnd() >> 23) * ((rnd() & 1) ? 1 : -1));
    else if (dt == KILN_U8)
      v = (long double)(rnd() % 256);
    else
      v = (long double)(rnd() & 1);
    if (is_float && (g == GEN_SPECIAL || g == GEN_NAN || g == GEN_NANROW)) {
      uint64_t r = rnd() % 100;
      if (r < 10)
        v = NAN;
      else if (g != GEN_NAN && r < 13)
        v = INFINITY;
      else if (g != GEN_NAN && r < 16)
        v = -INFINITY;
      if (g == GEN_NANROW && i >= n / 3 && i < n / 2)
        v = NAN;
    }
    hd_host_set(h, i, v);
  }
}

/* ------------------------------------------------------------------ */
/* Reference                                                           */
/* ------------------------------------------------------------------ */

struct ref {
  long double v; /* value result */
  int64_t i;     /* integer results: wrapped sums/products, counts, indices */
  long double sumabs, mean2, n;
};

static int
isnanl_(long double v)
{
  return v != v;
}

static int
cmp_ld(const void *a, const void *b)
{
  long double x = *(const long double *)a, y = *(const long double *)b;
  return x < y ? -1 : x > y ? 1 : 0;
}

/* The device's midpoint of two middle values, in the result's precision. */
static long double
midpoint_as(kiln_dtype res, long double a, long double b)
{
  if (res == KILN_F32 || is_half(res)) { /* f16/bf16: the midpoint in f32, then rounded */
    float fa = (float)a, fb = (float)b, s = fa + fb;
    return isfinite(s) || !isfinite(fa) || !isfinite(fb) ? s * 0.5f : fa * 0.5f + fb * 0.5f;
  }
  double da = (double)a, db = (double)b, s = da + db;
  return isfinite(s) || !isfinite(da) || !isfinite(db) ? s * 0.5 : da * 0.5 + db * 0.5;
}

/* op over a[0..n) (in reduced-index order), NumPy semantics as documented in reduce.h. */
static struct ref
ref_op(kiln_reduce_op op, const kiln_reduce_options *o, kiln_dtype dt, kiln_dtype res,
       const long double *a, uint64_t n)
{
  struct ref r = {0, 0, 0, 0, 0};
  int omit = o->nan_policy == KILN_NAN_OMIT;
  int is_float = is_fl(dt);
  long double *f = malloc((n + 1) * sizeof *f);
  int64_t *fi = malloc((n + 1) * sizeof *fi);
  uint64_t m = 0;
  int anynan = 0;
  int64_t firstnan = -1;
  for (uint64_t j = 0; j < n; j++) {
    if (isnanl_(a[j])) {
      if (firstnan < 0)
        firstnan = (int64_t)j;
      anynan = 1;
      if (omit)
        continue;
    }
    f[m] = a[j];
    fi[m] = (int64_t)j;
    m++;
  }
  for (uint64_t j = 0; j < m; j++)
    r.sumabs += fabsl(f[j]);
  r.n = (long double)m;
  int prop_nan = anynan && !omit;
  switch (op) {
  case KILN_REDUCE_SUM:
  case KILN_REDUCE_PROD: {
    int sum = op == KILN_REDUCE_SUM;
    if (is_float) {
      long double acc = sum ? 0 : 1;
      for (uint64_t j = 0; j < m; j++)
        acc = sum ? acc + f[j] : acc * f[j];
      r.v = acc;
    } else {
      uint64_t acc = sum ? 0 : 1;
      for (uint64_t j = 0; j < m; j++)
        acc = sum ? acc + (uint64_t)(int64_t)f[j] : acc * (uint64_t)(int64_t)f[j];
      r.i = (int64_t)acc;
      r.v = (long double)r.i;
    }
    break;
  }
  case KILN_REDUCE_MEAN:
  case KILN_REDUCE_VAR:
  case KILN_REDUCE_STD: {
    long double s = 0;
    for (uint64_t j = 0; j < m; j++)
      s += f[j];
    long double mean = s / (long double)m;
    r.mean2 = mean * mean;
    if (op == KILN_REDUCE_MEAN) {
      r.v = mean;
      break;
    }
    long double q = 0;
    for (uint64_t j = 0; j < m; j++)
      q += (f[j] - mean) * (f[j] - mean);
    long double den = (long double)m - (long double)o->ddof;
    r.v = q / (den > 0 ? den : 0);
    if (op == KILN_REDUCE_STD)
      r.v = sqrtl(r.v);
    break;
  }
  case KILN_REDUCE_MIN:
  case KILN_REDUCE_MAX:
  case KILN_REDUCE_ARGMIN:
  case KILN_REDUCE_ARGMAX: {
    int is_max = op == KILN_REDUCE_MAX || op == KILN_REDUCE_ARGMAX;
    if (prop_nan) {
      r.v = NAN;
      r.i = firstnan;
    } else if (m == 0) {
      r.v = NAN;
      r.i = -1;
    } else {
      uint64_t best = 0;
      for (uint64_t j = 1; j < m; j++)
        if (is_max ? f[j] > f[best] : f[j] < f[best])
          best = j;
      r.v = f[best];
      r.i = fi[best];
    }
    if (op == KILN_REDUCE_MIN || op == KILN_REDUCE_MAX)
      r.i = isnanl_(r.v) ? 0 : (int64_t)r.v;
    break;
  }
  case KILN_REDUCE_ANY:
  case KILN_REDUCE_ALL:
  case KILN_REDUCE_COUNT_NONZERO: {
    int64_t nz = 0;
    for (uint64_t j = 0; j < m; j++)
      nz += f[j] != 0;
    r.i = op == KILN_REDUCE_ANY ? nz > 0 : op == KILN_REDUCE_ALL ? nz == (int64_t)m : nz;
    r.v = (long double)r.i;
    break;
  }
  case KILN_REDUCE_NORM: {
    long double acc = 0;
    switch (o->norm_ord) {
    case KILN_NORM_L2:
    case KILN_NORM_P: {
      long double p = o->norm_ord == KILN_NORM_L2 ? 2 : o->norm_p;
      for (uint64_t j = 0; j < m; j++)
        acc += powl(fabsl(f[j]), p);
      r.v = powl(acc, 1 / p);
      break;
    }
    case KILN_NORM_L1:
      for (uint64_t j = 0; j < m; j++)
        acc += fabsl(f[j]);
      r.v = acc;
      break;
    case KILN_NORM_L0:
      for (uint64_t j = 0; j < m; j++)
        acc += f[j] != 0;
      r.v = acc;
      break;
    case KILN_NORM_LINF:
    case KILN_NORM_NEG_INF: {
      int mx = o->norm_ord == KILN_NORM_LINF;
      acc = mx ? 0 : INFINITY;
      for (uint64_t j = 0; j < m; j++)
        acc = mx ? fmaxl(acc, fabsl(f[j])) : fminl(acc, fabsl(f[j]));
      r.v = acc; /* nothing left after omitting NaN: the empty value, 0 or +inf */
      break;
    }
    }
    if (prop_nan && o->norm_ord != KILN_NORM_L0)
      r.v = NAN;
    break;
  }
  case KILN_REDUCE_LOGSUMEXP: {
    long double mx = -INFINITY;
    for (uint64_t j = 0; j < m; j++)
      mx = fmaxl(mx, f[j]);
    if (prop_nan)
      r.v = NAN;
    else if (m == 0 || mx == -INFINITY)
      r.v = -INFINITY;
    else if (mx == INFINITY)
      r.v = INFINITY;
    else {
      long double s = 0;
      for (uint64_t j = 0; j < m; j++)
        s += expl(f[j] - mx);
      r.v = mx + logl(s);
    }
    break;
  }
  case KILN_REDUCE_MEDIAN:
    if (prop_nan || m == 0) {
      r.v = NAN;
    } else {
      qsort(f, m, sizeof *f, cmp_ld);
      r.v = midpoint_as(res, f[(m - 1) / 2], f[m / 2]);
    }
    break;
  case KILN_REDUCE_OP_COUNT:
    break;
  }
  free(f);
  free(fi);
  return r;
}

static long double
tolerance(kiln_reduce_op op, const kiln_reduce_options *o, kiln_dtype dt, const struct ref *r)
{
  int is_float = is_fl(dt);
  long double eps = dt == KILN_F32 || is_half(dt) ? FLT_EPSILON : DBL_EPSILON;
  long double L = 1 + log2l(r->n + 1);
  if (dt == KILN_F32 && o->accumulate_f64 && (op == KILN_REDUCE_SUM || op == KILN_REDUCE_MEAN))
    return FLT_EPSILON * fabsl(r->v) +
           8 * DBL_EPSILON * r->sumabs / (op == KILN_REDUCE_MEAN ? r->n : 1);
  switch (op) {
  case KILN_REDUCE_SUM:
    return is_float ? 8 * eps * r->sumabs : 0;
  case KILN_REDUCE_MEAN:
    return 8 * eps * r->sumabs / (r->n > 0 ? r->n : 1);
  case KILN_REDUCE_PROD:
    return is_float ? (r->n + 4) * eps * fabsl(r->v) : 0;
  case KILN_REDUCE_VAR:
  case KILN_REDUCE_STD:
    return 8 * L * eps * (fabsl(r->v) + r->mean2);
  case KILN_REDUCE_NORM:
    if (o->norm_ord == KILN_NORM_L1)
      return 8 * eps * r->sumabs;
    if (o->norm_ord == KILN_NORM_L2 || o->norm_ord == KILN_NORM_P)
      return 8 * L * eps * fabsl(r->v);
    return 0;
  case KILN_REDUCE_LOGSUMEXP:
    return 8 * L * eps * (1 + fabsl(r->v));
  default:
    return 0;
  }
}

static int
matches(long double got, long double want, long double tol)
{
  if (isnanl_(want))
    return isnanl_(got);
  if (isinf(want))
    return got == want;
  return fabsl(got - want) <= tol;
}

/* ------------------------------------------------------------------ */
/* One case: run on the device, compare every output element          */
/* ------------------------------------------------------------------ */

struct rcase {
  kiln_reduce_op op;
  kiln_dtype dt;
  size_t ndim;
  int64_t shape[KILN_MAX_DIMS];
  int all_axes; /* axes NULL, naxes 0 */
  size_t naxes;
  int64_t axes[KILN_MAX_DIMS];
  int keepdims;
  kiln_reduce_options opts;
  enum gen gen;
  int arg_values; /* kiln_argreduce with values */
  uint64_t lead;  /* the tensor starts this many elements into its buffer (poisoned before) */
  int nan_planes; /* also NaN wherever coordinate d is d + 1: all-NaN slices along every axis */
};

static char *
describe(const struct rcase *c, char *buf, size_t len)
{
  size_t u = (size_t)snprintf(buf, len, "%s %s shape [", kiln_reduce_op_name(c->op),
                              kiln_dtype_name(c->dt));
  for (size_t d = 0; d < c->ndim && u < len; d++)
    u += (size_t)snprintf(buf + u, len - u, d ? ",%lld" : "%lld", (long long)c->shape[d]);
  if (u < len)
    u += (size_t)snprintf(buf + u, len - u, "] axes ");
  if (c->all_axes && u < len)
    u += (size_t)snprintf(buf + u, len - u, "all");
  for (size_t d = 0; !c->all_axes && d < c->naxes && u < len; d++)
    u += (size_t)snprintf(buf + u, len - u, d ? ",%lld" : "(%lld", (long long)c->axes[d]);
  if (!c->all_axes && u < len)
    u += (size_t)snprintf(buf + u, len - u, c->naxes ? ")" : "()");
  if (u < len)
    snprintf(buf + u, len - u, " keepdims %d nan %s ddof %g ord %d gen %d%s", c->keepdims,
             c->opts.nan_policy == KILN_NAN_OMIT ? "omit" : "propagate", c->opts.ddof,
             (int)c->opts.norm_ord, (int)c->gen, c->nan_planes ? " nan planes" : "");
  return buf;
}

static void
run_case(const struct rcase *c, const kiln__launch_params *lp, uint64_t seed)
{
  kiln_context *ctx = harness_ctx();
  char what[512];
  describe(c, what, sizeof what);
  uint64_t n = 1;
  for (size_t d = 0; d < c->ndim; d++)
    n *= (uint64_t)c->shape[d];
  if (!harness_fits(n))
    return;
  struct hd_host h;
  host_make(&h, c->dt, n, c->gen, seed);
  for (uint64_t i = 0; c->nan_planes && i < n; i++) {
    uint64_t t = i;
    for (size_t d = c->ndim; d-- > 0; t /= (uint64_t)c->shape[d]) {
      if (t % (uint64_t)c->shape[d] == (d + 1) % (uint64_t)c->shape[d]) {
        hd_host_set(&h, i, NAN);
        break;
      }
    }
  }
  kiln_tensor *x = NULL, *y = NULL, *vals = NULL, *whole = NULL;
  if (c->lead) {
    /* A view at an element offset: the leading bytes are 0x7f, a huge float or integer,
     * so a kernel that reads before the view's first element fails the comparison. */
    size_t es = kiln_dtype_size(c->dt);
    int64_t total = (int64_t)(n + c->lead);
    unsigned char *raw = malloc((size_t)total * es);
    ck_assert_ptr_nonnull(raw);
    memset(raw, c->dt == KILN_BOOL ? 1 : 0x7f, c->lead * es);
    memcpy(raw + c->lead * es, h.raw, n * es);
    KOK(kiln_tensor_from_host(ctx, c->dt, 1, &total, raw, &whole));
    free(raw);
    cl_mem mem;
    size_t off;
    KOK(kiln_tensor_cl_mem(whole, &mem, &off));
    KOK(kiln_tensor_wrap(ctx, mem, off + c->lead * es, c->dt, c->ndim, c->shape, &x));
  } else {
    KOK(kiln_tensor_from_host(ctx, c->dt, c->ndim, c->shape, h.raw, &x));
  }
  const int64_t *axes = c->all_axes ? NULL : c->axes;
  size_t naxes = c->all_axes ? 0 : c->naxes;
  kiln_status s;
  int is_arg = c->op == KILN_REDUCE_ARGMIN || c->op == KILN_REDUCE_ARGMAX;
  if (c->arg_values)
    s = kiln__argreduce_tuned(ctx, c->op, x, axes, naxes, c->keepdims, &c->opts, lp, &vals, &y);
  else
    s = kiln__reduce_tuned(ctx, c->op, x, axes, naxes, c->keepdims, &c->opts, lp, &y);
  ck_assert_msg(s == KILN_OK, "%s: %s: %s", what, kiln_status_name(s), kiln_last_error());

  /* Expected shape and the reduced/kept dims. */
  unsigned mask = 0;
  for (size_t d = 0; d < c->ndim; d++)
    if (c->all_axes)
      mask |= 1u << d;
  for (size_t i = 0; !c->all_axes && i < c->naxes; i++)
    mask |= 1u << (size_t)(c->axes[i] < 0 ? c->axes[i] + (int64_t)c->ndim : c->axes[i]);
  size_t kept[KILN_MAX_DIMS], redd[KILN_MAX_DIMS], nk = 0, nr = 0, eo = 0;
  int64_t strides[KILN_MAX_DIMS];
  int64_t st = 1;
  for (size_t d = c->ndim; d-- > 0;) {
    strides[d] = st;
    st *= c->shape[d];
  }
  uint64_t nout = 1, nred = 1;
  for (size_t d = 0; d < c->ndim; d++) {
    if (mask & (1u << d)) {
      redd[nr++] = d;
      nred *= (uint64_t)c->shape[d];
      if (c->keepdims) {
        ck_assert_msg(kiln_tensor_dim(y, eo) == 1, "%s: keepdims dim %zu", what, eo);
        eo++;
      }
    } else {
      kept[nk++] = d;
      nout *= (uint64_t)c->shape[d];
      ck_assert_msg(kiln_tensor_dim(y, eo) == c->shape[d], "%s: dim %zu is %lld", what, eo,
                    (long long)kiln_tensor_dim(y, eo));
      eo++;
    }
  }
  ck_assert_msg(kiln_tensor_ndim(y) == eo, "%s: result has %zu dims, expected %zu", what,
                kiln_tensor_ndim(y), eo);
  kiln_dtype rdt = kiln_tensor_dtype(y), want_dt;
  KOK(kiln_reduce_result_dtype(ctx, c->op, c->dt, &want_dt));
  ck_assert_msg(rdt == want_dt, "%s: result dtype %s", what, kiln_dtype_name(rdt));

  void *got = malloc(nout * 8 + 8), *gotv = malloc(nout * 8 + 8);
  KOK(kiln_tensor_download(y, got, kiln_tensor_nbytes(y)));
  hd_expect_bool01(rdt, got, nout, what);
  if (vals) {
    ck_assert_int_eq(kiln_tensor_dtype(vals), c->dt);
    KOK(kiln_tensor_download(vals, gotv, kiln_tensor_nbytes(vals)));
    hd_expect_bool01(c->dt, gotv, nout, what);
  }
  long double *buf = malloc((nred + 1) * sizeof *buf);
  int is_float_res = is_fl(rdt);
  for (uint64_t o = 0; o < nout; o++) {
    int64_t base = 0;
    uint64_t t = o;
    for (size_t k = nk; k-- > 0;) {
      base += (int64_t)(t % (uint64_t)c->shape[kept[k]]) * strides[kept[k]];
      t /= (uint64_t)c->shape[kept[k]];
    }
    for (uint64_t rr = 0; rr < nred; rr++) {
      int64_t off = base;
      uint64_t u = rr;
      for (size_t k = nr; k-- > 0;) {
        off += (int64_t)(u % (uint64_t)c->shape[redd[k]]) * strides[redd[k]];
        u /= (uint64_t)c->shape[redd[k]];
      }
      buf[rr] = h.v[off];
    }
    struct ref r = ref_op(c->op, &c->opts, c->dt, rdt, buf, nred);
    long double g = hd_elem(rdt, got, o);
    if (is_arg) {
      EXPECT((int64_t)g == r.i, "%s: out[%llu] index %lld, expected %lld", what,
             (unsigned long long)o, (long long)g, (long long)r.i);
      if (vals) {
        long double gv = hd_elem(c->dt, gotv, o);
        EXPECT(matches(gv, r.v, 0), "%s: out[%llu] value %Lg, expected %Lg", what,
               (unsigned long long)o, gv, r.v);
      }
    } else if (!is_float_res) {
      EXPECT((int64_t)g == r.i, "%s: out[%llu] = %lld, expected %lld", what, (unsigned long long)o,
             (long long)g, (long long)r.i);
    } else {
      /* The reference rounded to the result dtype, then compared within tolerance. f16/bf16
       * results of inexact ops: the unrounded reference, within the f32 bound plus half an
       * ulp of the storage type (the one rounding of the result). */
      long double want = round_to(rdt, r.v);
      long double tol = tolerance(c->op, &c->opts, c->dt, &r);
      if (is_half(rdt) && tol > 0 && isfinite(want)) {
        want = r.v;
        tol += half_ulp(rdt, r.v);
      }
      EXPECT(matches(g, want, tol), "%s: out[%llu] = %.17Lg, expected %.17Lg (tol %.3Lg)", what,
             (unsigned long long)o, g, want, tol);
    }
  }
  free(buf);
  free(got);
  free(gotv);
  kiln_tensor_release(vals);
  kiln_tensor_release(y);
  kiln_tensor_release(x);
  kiln_tensor_release(whole);
  hd_host_free(&h);
}

/* Shorthand constructors. */
static struct rcase
mk(kiln_reduce_op op, kiln_dtype dt, size_t ndim, const int64_t *shape)
{
  struct rcase c;
  memset(&c, 0, sizeof c);
  c.op = op;
  c.dt = dt;
  c.ndim = ndim;
  memcpy(c.shape, shape, ndim * sizeof *shape);
  c.all_axes = 1;
  c.gen = op == KILN_REDUCE_PROD && is_fl(dt) ? GEN_NEAR1 : GEN_UNIFORM;
  return c;
}

static struct rcase
with_axes(struct rcase c, size_t naxes, const int64_t *axes)
{
  c.all_axes = 0;
  c.naxes = naxes;
  if (naxes)
    memcpy(c.axes, axes, naxes * sizeof *axes);
  return c;
}

static const kiln_dtype all_dtypes[] = {KILN_F32, KILN_F64,  KILN_I32, KILN_I64,
                                        KILN_U8,  KILN_BOOL, KILN_F16, KILN_BF16};
#define NDTYPES (sizeof all_dtypes / sizeof all_dtypes[0])

/* ------------------------------------------------------------------ */
/* Tests                                                               */
/* ------------------------------------------------------------------ */

/* Every op, every accepted dtype: full reductions of several lengths and both axes of a matrix. */
START_TEST(test_ops_dtypes)
{
  kiln_dtype dt = all_dtypes[_i];
  if (dt == KILN_F64 && !harness_has_fp64())
    return;
  static const int64_t lens[] = {1, 7, 257, 1000, 65537};
  for (int op = 0; op < KILN_REDUCE_OP_COUNT; op++) {
    if (!kiln_reduce_op_supports((kiln_reduce_op)op, dt))
      continue;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
      /* The two-pass length only for the float types: the integer kernels share the code. */
      if (lens[li] > 1000 && !is_fl(dt))
        continue;
      struct rcase c = mk((kiln_reduce_op)op, dt, 1, &lens[li]);
      run_case(&c, NULL, (uint64_t)op * 31 + li);
    }
    const int64_t shape[2] = {13, 37};
    for (int64_t ax = 0; ax < 2; ax++) {
      struct rcase c = with_axes(mk((kiln_reduce_op)op, dt, 2, shape), 1, &ax);
      c.keepdims = (int)ax;
      run_case(&c, NULL, (uint64_t)op * 7 + (uint64_t)ax);
    }
  }
}
END_TEST

/* Every subset of the axes of a {3,5,7,4} tensor, keepdims both ways, negative axes too. */
START_TEST(test_axes_4d)
{
  static const int64_t shape[4] = {3, 5, 7, 4};
  static const kiln_reduce_op ops[] = {KILN_REDUCE_SUM,  KILN_REDUCE_MAX, KILN_REDUCE_ARGMAX,
                                       KILN_REDUCE_MEAN, KILN_REDUCE_VAR, KILN_REDUCE_MEDIAN};
  for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
    for (unsigned m = 0; m < 16; m++) {
      for (int keep = 0; keep < 2; keep++) {
        if (harness_small() && keep != (int)(m & 1)) /* the small mode: one form per subset */
          continue;
        int64_t axes[4];
        size_t na = 0;
        for (int d = 0; d < 4; d++)
          if (m & (1u << d))
            axes[na++] = (m + (unsigned)keep) % 2 ? d - 4 : d; /* alternate negative forms */
        struct rcase c = with_axes(mk(ops[oi], KILN_F32, 4, shape), na, axes);
        c.keepdims = keep;
        run_case(&c, NULL, m * 3u + oi);
      }
    }
    struct rcase all = mk(ops[oi], KILN_F32, 4, shape);
    run_case(&all, NULL, 99);
    /* Axes in descending order name the same set. */
    static const int64_t rev[2] = {2, 0};
    struct rcase r = with_axes(mk(ops[oi], KILN_F32, 4, shape), 2, rev);
    run_case(&r, NULL, 98);
  }
}
END_TEST

/* NaN and +-inf under both policies, with an all-NaN row, for every float op. */
START_TEST(test_nan_policies)
{
  kiln_dtype dt = _i ? KILN_F64 : KILN_F32;
  if (dt == KILN_F64 && !harness_has_fp64())
    return;
  static const int64_t shape[2] = {6, 9};
  static const kiln_norm_ord ords[] = {KILN_NORM_L2,      KILN_NORM_L1, KILN_NORM_LINF,
                                       KILN_NORM_NEG_INF, KILN_NORM_L0, KILN_NORM_P};
  for (int op = 0; op < KILN_REDUCE_OP_COUNT; op++) {
    size_t nord = op == KILN_REDUCE_NORM ? sizeof ords / sizeof ords[0] : 1;
    for (size_t oi = 0; oi < nord; oi++) {
      for (int pol = 0; pol < 2; pol++) {
        for (int ax = -1; ax < 2; ax++) {
          for (int g = 0; g < 2; g++) {
            struct rcase c = mk((kiln_reduce_op)op, dt, 2, shape);
            if (ax >= 0) {
              int64_t a = ax;
              c = with_axes(c, 1, &a);
            }
            c.gen = g ? GEN_NANROW : GEN_NAN;
            c.opts.nan_policy = pol ? KILN_NAN_OMIT : KILN_NAN_PROPAGATE;
            c.opts.norm_ord = ords[oi];
            c.opts.norm_p = 3;
            c.opts.ddof = 1;
            run_case(&c, NULL, (uint64_t)(op * 100 + ax * 10 + g));
            if (harness_small()) /* GEN_NAN and GEN_NANROW, which holds +-inf as well */
              continue;
            /* With infinities as well (GEN_NANROW also holds +-inf). */
            c.gen = g ? GEN_NANROW : GEN_SPECIAL;
            run_case(&c, NULL, (uint64_t)(op * 100 + ax * 10 + g + 5));
          }
        }
      }
    }
  }
}
END_TEST

/* Ties: the first occurrence wins, on every strategy (rows, lanes, columns, two-pass). */
START_TEST(test_argmax_ties)
{
  static const kiln_dtype dts[] = {KILN_F32, KILN_I32, KILN_U8, KILN_BOOL};
  kiln_device_info info;
  KOK(kiln_context_device_info(harness_ctx(), &info));
  kiln__launch_params split;
  kiln__launch_params_default(harness_ctx(), KILN__LAUNCH_REDUCE, &split);
  split.two_pass_min = 1;
  split.items_per_thread = 3;
  const int64_t len[1] = {1000}, mat[2] = {harness_size(37, 7), 129};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
    for (int op = KILN_REDUCE_ARGMIN; op <= KILN_REDUCE_ARGMAX; op++) {
      for (int forced = 0; forced < 2; forced++) {
        const kiln__launch_params *lp = forced ? &split : NULL;
        struct rcase c = mk((kiln_reduce_op)op, dts[d], 1, len);
        c.gen = GEN_TIES;
        run_case(&c, lp, d * 10 + (uint64_t)op);
        c.arg_values = 1;
        run_case(&c, lp, d * 10 + (uint64_t)op + 1);
        for (int64_t ax = 0; ax < 2; ax++) {
          struct rcase m = with_axes(mk((kiln_reduce_op)op, dts[d], 2, mat), 1, &ax);
          m.gen = GEN_TIES;
          m.arg_values = (int)ax;
          run_case(&m, lp, d * 10 + (uint64_t)op + 2 + (uint64_t)ax);
        }
      }
    }
  }
  /* All equal: index 0 everywhere, also after a split across groups. */
  float ones[4099];
  for (int i = 0; i < 4099; i++)
    ones[i] = 1.0f;
  int64_t n = harness_size(4099, 1027);
  kiln_tensor *x = NULL, *idx = NULL;
  KOK(kiln_tensor_from_host(harness_ctx(), KILN_F32, 1, &n, ones, &x));
  KOK(kiln__argreduce_tuned(harness_ctx(), KILN_REDUCE_ARGMAX, x, NULL, 0, 0, NULL, &split, NULL,
                            &idx));
  int64_t got = -5;
  KOK(kiln_tensor_download(idx, &got, 8));
  ck_assert_int_eq(got, 0);
  kiln_tensor_release(idx);
  kiln_tensor_release(x);
}
END_TEST

/* Empty reductions: NumPy's values, and KILN_ERR_SHAPE for ops without one. */
START_TEST(test_empty)
{
  kiln_context *ctx = harness_ctx();
  const int64_t s0[1] = {0}, s30[2] = {3, 0}, s04[2] = {0, 4};
  kiln_tensor *e0 = NULL, *e30 = NULL, *e04 = NULL;
  KOK(kiln_tensor_create(ctx, KILN_F32, 1, s0, &e0));
  KOK(kiln_tensor_create(ctx, KILN_F32, 2, s30, &e30));
  KOK(kiln_tensor_create(ctx, KILN_F32, 2, s04, &e04));
  struct {
    kiln_reduce_op op;
    double want;
  } vals[] = {{KILN_REDUCE_SUM, 0},     {KILN_REDUCE_PROD, 1},
              {KILN_REDUCE_MEAN, NAN},  {KILN_REDUCE_VAR, NAN},
              {KILN_REDUCE_STD, NAN},   {KILN_REDUCE_ANY, 0},
              {KILN_REDUCE_ALL, 1},     {KILN_REDUCE_COUNT_NONZERO, 0},
              {KILN_REDUCE_NORM, 0},    {KILN_REDUCE_LOGSUMEXP, -INFINITY},
              {KILN_REDUCE_MEDIAN, NAN}};
  for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
    /* All axes of [0]: a 0-d result. */
    kiln_tensor *y = NULL;
    KOK(kiln_reduce(ctx, vals[i].op, e0, NULL, 0, 0, NULL, &y));
    ck_assert_uint_eq(kiln_tensor_ndim(y), 0);
    unsigned char b[8];
    KOK(kiln_tensor_download(y, b, kiln_tensor_nbytes(y)));
    long double g = hd_elem(kiln_tensor_dtype(y), b, 0);
    ck_assert_msg(matches(g, vals[i].want, 0), "%s of nothing: %Lg",
                  kiln_reduce_op_name(vals[i].op), g);
    kiln_tensor_release(y);
    /* Axis 1 of [3,0]: three empty slices. */
    y = NULL;
    int64_t ax = 1;
    KOK(kiln_reduce(ctx, vals[i].op, e30, &ax, 1, 1, NULL, &y));
    ck_assert_int_eq(kiln_tensor_dim(y, 0), 3);
    ck_assert_int_eq(kiln_tensor_dim(y, 1), 1);
    unsigned char b3[24];
    KOK(kiln_tensor_download(y, b3, kiln_tensor_nbytes(y)));
    for (int k = 0; k < 3; k++)
      ck_assert(matches(hd_elem(kiln_tensor_dtype(y), b3, (uint64_t)k), vals[i].want, 0));
    kiln_tensor_release(y);
  }
  /* Norm -inf of nothing is +inf (the empty min). */
  kiln_reduce_options o = {0};
  o.norm_ord = KILN_NORM_NEG_INF;
  kiln_tensor *y = NULL;
  KOK(kiln_reduce(ctx, KILN_REDUCE_NORM, e0, NULL, 0, 0, &o, &y));
  float f;
  KOK(kiln_tensor_download(y, &f, 4));
  ck_assert(isinf(f) && f > 0);
  kiln_tensor_release(y);
  /* No value for min/max/argmin/argmax of nothing, also when the result would be empty. */
  static const kiln_reduce_op none[] = {KILN_REDUCE_MIN, KILN_REDUCE_MAX, KILN_REDUCE_ARGMIN,
                                        KILN_REDUCE_ARGMAX};
  for (size_t i = 0; i < 4; i++) {
    y = NULL;
    KEXPECT(kiln_reduce(ctx, none[i], e0, NULL, 0, 0, NULL, &y), KILN_ERR_SHAPE);
    ck_assert_ptr_null(y);
    int64_t ax = 1;
    KEXPECT(kiln_reduce(ctx, none[i], e30, &ax, 1, 0, NULL, &y), KILN_ERR_SHAPE);
    ax = 0;
    KEXPECT(kiln_reduce(ctx, none[i], e04, &ax, 1, 0, NULL, &y), KILN_ERR_SHAPE);
    /* Reducing the non-empty axis of [0,4] is fine: zero results. */
    ax = 1;
    KOK(kiln_reduce(ctx, none[i], e04, &ax, 1, 0, NULL, &y));
    ck_assert_int_eq(kiln_tensor_dim(y, 0), 0);
    kiln_tensor_release(y);
    y = NULL;
  }
  /* Reduce over no axis (non-NULL axes, naxes 0): elementwise. */
  struct rcase c = with_axes(mk(KILN_REDUCE_SUM, KILN_I32, 2, (int64_t[]){3, 4}), 0, NULL);
  run_case(&c, NULL, 1);
  c.op = KILN_REDUCE_VAR;
  run_case(&c, NULL, 2);
  c.op = KILN_REDUCE_ARGMAX;
  run_case(&c, NULL, 3);
  /* A 0-d input. */
  struct rcase z = mk(KILN_REDUCE_MEAN, KILN_F32, 0, NULL);
  run_case(&z, NULL, 4);
  kiln_tensor_release(e0);
  kiln_tensor_release(e30);
  kiln_tensor_release(e04);
}
END_TEST

START_TEST(test_bad_inputs)
{
  kiln_context *ctx = harness_ctx();
  const int64_t shape[4] = {3, 5, 7, 4};
  kiln_tensor *x = NULL, *xi = NULL, *y = NULL, *dead = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 4, shape, &x));
  KOK(kiln_tensor_zeros(ctx, KILN_I32, 4, shape, &xi));
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 1, shape, &dead));
  KOK(kiln_tensor_release(dead));
  int64_t ax_bad[1] = {4}, ax_neg[1] = {-5}, ax_dup[2] = {1, 1}, ax_dup2[2] = {-1, 3};
  KEXPECT(kiln_reduce(ctx, KILN_REDUCE_SUM, x, ax_bad, 1, 0, NULL, &y), KILN_ERR_SHAPE);
  KEXPECT(kiln_reduce(ctx, KILN_REDUCE_SUM, x, ax_neg, 1, 0, NULL, &y), KILN_ERR_SHAPE);
  KEXPECT(kiln_reduce(ctx, KILN_REDUCE_SUM, x, ax_dup, 2, 0, NULL, &y), KILN_ERR_SHAPE);
  KEXPECT(kiln_reduce(ctx, KILN_REDUCE_MAX, x, ax_dup2, 2, 0, NULL, &y), KILN_ERR_SHAPE);
  ck_assert_msg(strstr(kiln_last_error(), "twice") != NULL, "%s", kiln_last_error());
  KEXPECT(kiln_reduce(ctx, KILN_REDUCE_SUM, x, NULL, 2, 0, NULL, &y), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_reduce(NULL, KILN_REDUCE_SUM, x, NULL, 0, 0, NULL, &y), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_reduce(ctx, KILN_REDUCE_SUM, NULL, NULL, 0, 0, NULL, &y), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_reduce(ctx, KILN_REDUCE_SUM, dead, NULL, 0, 0, NULL, &y), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_reduce(ctx, KILN_REDUCE_SUM, x, NULL, 0, 0, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_reduce(ctx, KILN_REDUCE_OP_COUNT, x, NULL, 0, 0, NULL, &y),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_reduce(ctx, (kiln_reduce_op)-1, x, NULL, 0, 0, NULL, &y), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_reduce(ctx, KILN_REDUCE_NORM, xi, NULL, 0, 0, NULL, &y), KILN_ERR_DTYPE);
  KEXPECT(kiln_reduce(ctx, KILN_REDUCE_LOGSUMEXP, xi, NULL, 0, 0, NULL, &y), KILN_ERR_DTYPE);
  kiln_reduce_options o = {0};
  o.ddof = -1;
  KEXPECT(kiln_reduce(ctx, KILN_REDUCE_VAR, x, NULL, 0, 0, &o, &y), KILN_ERR_INVALID_ARGUMENT);
  o.ddof = 0;
  o.nan_policy = (kiln_nan_policy)7;
  KEXPECT(kiln_reduce(ctx, KILN_REDUCE_SUM, x, NULL, 0, 0, &o, &y), KILN_ERR_INVALID_ARGUMENT);
  o.nan_policy = KILN_NAN_PROPAGATE;
  o.norm_ord = KILN_NORM_P;
  o.norm_p = 0;
  KEXPECT(kiln_reduce(ctx, KILN_REDUCE_NORM, x, NULL, 0, 0, &o, &y), KILN_ERR_INVALID_ARGUMENT);
  o.norm_p = INFINITY;
  KEXPECT(kiln_reduce(ctx, KILN_REDUCE_NORM, x, NULL, 0, 0, &o, &y), KILN_ERR_INVALID_ARGUMENT);
  o.norm_ord = (kiln_norm_ord)99;
  KEXPECT(kiln_reduce(ctx, KILN_REDUCE_NORM, x, NULL, 0, 0, &o, &y), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(y);
  /* kiln_argreduce: only argmin/argmax, indices required. */
  KEXPECT(kiln_argreduce(ctx, KILN_REDUCE_SUM, x, NULL, 0, 0, NULL, NULL, &y),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_argreduce(ctx, KILN_REDUCE_ARGMAX, x, NULL, 0, 0, NULL, NULL, NULL),
          KILN_ERR_INVALID_ARGUMENT);
  /* A given output of the wrong shape or dtype. */
  kiln_tensor *o_bad = NULL, *o_f32 = NULL;
  const int64_t s35[2] = {3, 5}, s57[2] = {5, 7};
  int64_t ax23[2] = {2, 3};
  KOK(kiln_tensor_create(ctx, KILN_F32, 2, s57, &o_bad));
  KEXPECT(kiln_reduce(ctx, KILN_REDUCE_SUM, x, ax23, 2, 0, NULL, &o_bad), KILN_ERR_SHAPE);
  KOK(kiln_tensor_create(ctx, KILN_F32, 2, s35, &o_f32));
  KEXPECT(kiln_reduce(ctx, KILN_REDUCE_SUM, xi, ax23, 2, 0, NULL, &o_f32), KILN_ERR_DTYPE);
  KEXPECT(kiln_reduce(ctx, KILN_REDUCE_SUM, x, ax23, 2, 1, NULL, &o_f32), KILN_ERR_SHAPE);
  KEXPECT(kiln_argreduce(ctx, KILN_REDUCE_ARGMAX, x, ax23, 2, 0, NULL, NULL, &o_f32),
          KILN_ERR_DTYPE);
  /* A result kiln allocated is released when the second output is rejected. */
  kiln_tensor *vals_bad = o_bad, *idx = NULL;
  KEXPECT(kiln_argreduce(ctx, KILN_REDUCE_ARGMAX, x, ax23, 2, 0, NULL, &vals_bad, &idx),
          KILN_ERR_SHAPE);
  ck_assert_ptr_null(idx);
  /* Another context's tensor. */
  kiln_context *other = NULL;
  KOK(kiln_context_create(NULL, &other));
  KEXPECT(kiln_reduce(other, KILN_REDUCE_SUM, x, NULL, 0, 0, NULL, &y), KILN_ERR_CONTEXT_MISMATCH);
  KOK(kiln_context_release(other));
  /* Result dtype queries. */
  kiln_dtype rd;
  KOK(kiln_reduce_result_dtype(ctx, KILN_REDUCE_SUM, KILN_I32, &rd));
  ck_assert_int_eq(rd, KILN_I64);
  KOK(kiln_reduce_result_dtype(ctx, KILN_REDUCE_SUM, KILN_BOOL, &rd));
  ck_assert_int_eq(rd, KILN_I64);
  KOK(kiln_reduce_result_dtype(ctx, KILN_REDUCE_MEAN, KILN_U8, &rd));
  ck_assert_int_eq(rd, harness_has_fp64() ? KILN_F64 : KILN_F32);
  KOK(kiln_reduce_result_dtype(ctx, KILN_REDUCE_ANY, KILN_F32, &rd));
  ck_assert_int_eq(rd, KILN_BOOL);
  KEXPECT(kiln_reduce_result_dtype(ctx, KILN_REDUCE_NORM, KILN_I32, &rd), KILN_ERR_DTYPE);
  KEXPECT(kiln_reduce_result_dtype(ctx, KILN_REDUCE_SUM, KILN_I32, NULL),
          KILN_ERR_INVALID_ARGUMENT);
  ck_assert_str_eq(kiln_reduce_op_name(KILN_REDUCE_COUNT_NONZERO), "count_nonzero");
  ck_assert_str_eq(kiln_reduce_op_name(KILN_REDUCE_OP_COUNT), "?");
  ck_assert(!kiln_reduce_op_supports(KILN_REDUCE_LOGSUMEXP, KILN_BOOL));
  ck_assert(kiln_reduce_op_supports(KILN_REDUCE_MEDIAN, KILN_U8));
  /* Bad launch parameters through the internal entry point. */
  kiln__launch_params lp;
  kiln__launch_params_default(ctx, KILN__LAUNCH_REDUCE, &lp);
  lp.wg_size = 0;
  KEXPECT(kiln__reduce_tuned(ctx, KILN_REDUCE_SUM, x, NULL, 0, 0, NULL, &lp, &y),
          KILN_ERR_INVALID_ARGUMENT);
  kiln_tensor_release(o_bad);
  kiln_tensor_release(o_f32);
  kiln_tensor_release(x);
  kiln_tensor_release(xi);
}
END_TEST

/* A given output is written in place, and kiln_argreduce fills given values and indices. */
START_TEST(test_given_outputs)
{
  kiln_context *ctx = harness_ctx();
  const int64_t shape[2] = {4, 6};
  float h[24];
  for (int i = 0; i < 24; i++)
    h[i] = (float)((i * 7) % 11) - 5.0f;
  kiln_tensor *x = NULL, *y = NULL, *v = NULL, *ix = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 2, shape, h, &x));
  KOK(kiln_tensor_full(ctx, KILN_F32, 1, shape, kiln_scalar_f64(99), &y));
  KOK(kiln_tensor_create(ctx, KILN_F32, 1, shape, &v));
  KOK(kiln_tensor_create(ctx, KILN_I64, 1, shape, &ix));
  kiln_tensor *y0 = y, *v0 = v, *ix0 = ix;
  int64_t ax = 1;
  KOK(kiln_reduce(ctx, KILN_REDUCE_SUM, x, &ax, 1, 0, NULL, &y));
  KOK(kiln_argreduce(ctx, KILN_REDUCE_ARGMIN, x, &ax, 1, 0, NULL, &v, &ix));
  ck_assert_ptr_eq(y, y0);
  ck_assert_ptr_eq(v, v0);
  ck_assert_ptr_eq(ix, ix0);
  float s[4], mv[4];
  int64_t mi[4];
  KOK(kiln_tensor_download(y, s, sizeof s));
  KOK(kiln_tensor_download(v, mv, sizeof mv));
  KOK(kiln_tensor_download(ix, mi, sizeof mi));
  for (int r = 0; r < 4; r++) {
    float want = 0, best = h[r * 6];
    int64_t bi = 0;
    for (int c = 0; c < 6; c++) {
      want += h[r * 6 + c];
      if (h[r * 6 + c] < best) {
        best = h[r * 6 + c];
        bi = c;
      }
    }
    ck_assert_float_eq(s[r], want);
    ck_assert_float_eq(mv[r], best);
    ck_assert_int_eq(mi[r], bi);
  }
  kiln_tensor_release(x);
  kiln_tensor_release(y);
  kiln_tensor_release(v);
  kiln_tensor_release(ix);
}
END_TEST

/* ddof, std, the norm orders, overflow-safe norms and logsumexp, large and tiny magnitudes. */
START_TEST(test_numerics)
{
  kiln_context *ctx = harness_ctx();
  /* var/std with ddof 0, 1, n-1, n and above (inf or NaN, as NumPy). */
  const int64_t n17[1] = {17}, mat[2] = {9, 31};
  static const double ddofs[] = {0, 1, 16, 17, 20};
  for (size_t i = 0; i < sizeof ddofs / sizeof ddofs[0]; i++) {
    for (int op = KILN_REDUCE_VAR; op <= KILN_REDUCE_STD; op++) {
      struct rcase c = mk((kiln_reduce_op)op, KILN_F32, 1, n17);
      c.opts.ddof = ddofs[i];
      run_case(&c, NULL, i);
      c.dt = KILN_I64;
      run_case(&c, NULL, i + 1);
    }
  }
  /* Every norm order, rows and columns. */
  static const kiln_norm_ord ords[] = {KILN_NORM_L2,      KILN_NORM_L1, KILN_NORM_LINF,
                                       KILN_NORM_NEG_INF, KILN_NORM_L0, KILN_NORM_P};
  static const double ps[] = {3, 0.5, 1.5};
  for (size_t oi = 0; oi < sizeof ords / sizeof ords[0]; oi++) {
    for (size_t pi = 0; pi < (ords[oi] == KILN_NORM_P ? 3u : 1u); pi++) {
      for (int64_t ax = 0; ax < 2; ax++) {
        struct rcase c = with_axes(mk(KILN_REDUCE_NORM, KILN_F32, 2, mat), 1, &ax);
        c.opts.norm_ord = ords[oi];
        c.opts.norm_p = ps[pi];
        run_case(&c, NULL, oi * 10 + pi);
      }
    }
  }
  /* L2 of values whose squares overflow or underflow f32, and logsumexp of values whose exp does.
   */
  static const float scales[] = {1e30f, 1e-30f, 3e38f};
  for (size_t si = 0; si < 3; si++) {
    float h[100];
    double ss = 0;
    for (int i = 0; i < 100; i++) {
      h[i] = scales[si] * (float)(0.5 + (i % 10) / 20.0);
      ss += ((double)h[i] / scales[si]) * ((double)h[i] / scales[si]);
    }
    int64_t n = 100;
    kiln_tensor *x = NULL, *y = NULL;
    KOK(kiln_tensor_from_host(ctx, KILN_F32, 1, &n, h, &x));
    KOK(kiln_reduce(ctx, KILN_REDUCE_NORM, x, NULL, 0, 0, NULL, &y));
    float got;
    KOK(kiln_tensor_download(y, &got, 4));
    double want = (double)scales[si] * sqrt(ss);
    if (want > FLT_MAX)
      ck_assert_msg(isinf(got), "norm %g: got %g", want, got);
    else
      ck_assert_msg(fabs(got - want) <= 1e-5 * want, "norm %g: got %.9g", want, (double)got);
    kiln_tensor_release(y);
    y = NULL;
    kiln_tensor_release(x);
  }
  float big[3] = {1000.0f, 1000.0f, 999.0f};
  int64_t n3 = 3;
  kiln_tensor *x = NULL, *y = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 1, &n3, big, &x));
  KOK(kiln_reduce(ctx, KILN_REDUCE_LOGSUMEXP, x, NULL, 0, 0, NULL, &y));
  float got;
  KOK(kiln_tensor_download(y, &got, 4));
  double want = 1000.0 + log(2.0 + exp(-1.0));
  ck_assert_msg(fabs(got - want) < 1e-4, "logsumexp %.7g vs %.7g", (double)got, want);
  kiln_tensor_release(y);
  kiln_tensor_release(x);
  /* Extremes of logsumexp: all -inf gives -inf, a +inf gives +inf. */
  float ninf[2] = {-INFINITY, -INFINITY}, pinf[3] = {1, INFINITY, -INFINITY};
  int64_t n2 = 2;
  y = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 1, &n2, ninf, &x));
  KOK(kiln_reduce(ctx, KILN_REDUCE_LOGSUMEXP, x, NULL, 0, 0, NULL, &y));
  KOK(kiln_tensor_download(y, &got, 4));
  ck_assert(isinf(got) && got < 0);
  kiln_tensor_release(y);
  kiln_tensor_release(x);
  y = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 1, &n3, pinf, &x));
  KOK(kiln_reduce(ctx, KILN_REDUCE_LOGSUMEXP, x, NULL, 0, 0, NULL, &y));
  KOK(kiln_tensor_download(y, &got, 4));
  ck_assert(isinf(got) && got > 0);
  kiln_tensor_release(y);
  kiln_tensor_release(x);
  /* Variance of values with a large common offset: the naive formula would lose every digit. */
  float off[64];
  for (int i = 0; i < 64; i++)
    off[i] = 10000.0f + (float)(i % 2); /* var = 0.25 (ddof 0) */
  int64_t n64 = 64;
  y = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 1, &n64, off, &x));
  KOK(kiln_reduce(ctx, KILN_REDUCE_VAR, x, NULL, 0, 0, NULL, &y));
  KOK(kiln_tensor_download(y, &got, 4));
  ck_assert_msg(fabs(got - 0.25) < 1e-5, "var with offset: %.9g", (double)got);
  kiln_tensor_release(y);
  kiln_tensor_release(x);
}
END_TEST

/* The three median tiers, odd and even lengths, NaN, integers, and the permuted layouts. */
START_TEST(test_median)
{
  static const int64_t lens[] = {1, 2, 7, 32, 33, 100, 1024, 4096, 4097, 10001};
  static const kiln_dtype dts[] = {KILN_F32, KILN_F64, KILN_I32, KILN_I64, KILN_U8};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
    if (dts[d] == KILN_F64 && !harness_has_fp64())
      continue;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
      const int64_t shape[2] = {3, lens[li]};
      int64_t ax = 1;
      struct rcase c = with_axes(mk(KILN_REDUCE_MEDIAN, dts[d], 2, shape), 1, &ax);
      run_case(&c, NULL, d * 100 + li);
      if (dts[d] == KILN_F32 || dts[d] == KILN_F64) {
        c.gen = GEN_NAN;
        run_case(&c, NULL, d * 100 + li + 50);
        c.opts.nan_policy = KILN_NAN_OMIT;
        run_case(&c, NULL, d * 100 + li + 51);
        c.gen = GEN_TIES;
        run_case(&c, NULL, d * 100 + li + 52);
      }
    }
    /* Columns (a permute into rows first) and a full median split across work-groups. */
    const int64_t mat[2] = {301, 5};
    int64_t ax0 = 0;
    struct rcase c = with_axes(mk(KILN_REDUCE_MEDIAN, dts[d], 2, mat), 1, &ax0);
    run_case(&c, NULL, d);
    const int64_t big[1] = {200003};
    struct rcase full = mk(KILN_REDUCE_MEDIAN, dts[d], 1, big);
    run_case(&full, NULL, d + 1);
  }
  /* Integer medians average the middle pair in f64: large i64 values. */
  const int64_t two[1] = {2};
  int64_t hv[2] = {INT64_MAX, INT64_MAX - 2};
  kiln_tensor *x = NULL, *y = NULL;
  KOK(kiln_tensor_from_host(harness_ctx(), KILN_I64, 1, two, hv, &x));
  KOK(kiln_reduce(harness_ctx(), KILN_REDUCE_MEDIAN, x, NULL, 0, 0, NULL, &y));
  if (harness_has_fp64()) {
    double got;
    KOK(kiln_tensor_download(y, &got, 8));
    ck_assert(got == (double)INT64_MAX);
  }
  kiln_tensor_release(y);
  kiln_tensor_release(x);
}
END_TEST

/*
 * Launch parameters that between them take every value the tuner searches (lib/runtime/
 * tuner.c) of the choices that select different code: each lane order and 1, 4, 16, 64
 * and 256 columns per item (16 and 256 are the vector-state column kernels on CPU devices,
 * 64 the tile path's cap; 5 is a ragged extra), with the two-pass split off and forced on
 * (two_pass_min 1) at 1, 3, 4, 16 or 64 items per thread. The first three are
 * test_tunables' shapes:
 *   0 one pass, blocked lanes, 16 columns per item in 16-row tiles (CPU shape);
 *   1 split, interleaved 4-vectors, 1 column per item (GPU shape);
 *   2 split, 3 items per thread, interleaved scalars, 5 columns per item.
 * Columns per item and lane order are build options, so each distinct pair is a program
 * build per dtype: the others pair them as programs other tests build anyway do (4 columns
 * with 4-vector lanes: the GPU default and vector_lanes' program; 256 with blocked lanes: a
 * program the CPU defaults pick), not as new ones.
 */
static const struct lp_mode {
  int split;
  uint32_t ipt, gpc, blocked, cols;
} lp_modes[] = {
    {0, 1, 8, 1, 16}, {1, 1, 8, 2, 1},    {1, 3, 3, 0, 5},     {0, 64, 4, 2, 4},
    {1, 4, 2, 1, 64}, {0, 16, 1, 1, 256}, {1, 16, 16, 1, 256},
};
#define NLP_MODES (sizeof lp_modes / sizeof lp_modes[0])

/* The device's reduction defaults with lp_modes[mode] and work-group size wg. */
static kiln__launch_params
lp_for_mode(kiln_context *ctx, size_t mode, uint32_t wg)
{
  const struct lp_mode *m = &lp_modes[mode];
  kiln__launch_params lp;
  kiln__launch_params_default(ctx, KILN__LAUNCH_REDUCE, &lp);
  lp.wg_size = wg;
  lp.two_pass_min = m->split ? 1 : UINT64_MAX;
  lp.items_per_thread = m->ipt;
  lp.groups_per_cu = m->gpc;
  lp.blocked = m->blocked;
  lp.cols_per_item = m->cols;
  return lp;
}

/*
 * Every strategy at work-group sizes 64, 128, 256 and the device maximum, in the first
 * three lp_modes (the two-pass split forced on and off, each lane order).
 */
START_TEST(test_tunables)
{
  kiln_context *ctx = harness_ctx();
  kiln_device_info info;
  KOK(kiln_context_device_info(ctx, &info));
  uint32_t wgs[4] = {64, 128, 256, (uint32_t)info.max_work_group_size};
  /* Compensated sums, first-occurrence indices, Welford merges: the three kinds of state. */
  static const kiln_reduce_op ops[] = {KILN_REDUCE_SUM, KILN_REDUCE_ARGMAX, KILN_REDUCE_VAR};
  const int64_t v1[1] = {1000}, m1[2] = {harness_size(37, 7), 129};
  const int64_t m2[2] = {harness_size(5, 2), harness_size(3001, 701)};
  for (size_t w = 0; w < 4; w++) {
    /* The small mode: work-groups of 64, the most groups for its small inputs. */
    if (wgs[w] > info.max_work_group_size || (harness_small() && w != 0))
      continue;
    for (size_t mode = 0; mode < 3; mode++) {
      kiln__launch_params lp = lp_for_mode(ctx, mode, wgs[w]);
      /* The GPU shape also shares rows between lanes on CPU devices (one item per row
       * there otherwise). */
      kiln__reduce_test_gpu_rows = mode == 1;
      for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
        struct rcase c = mk(ops[oi], KILN_F32, 1, v1);
        c.gen = ops[oi] == KILN_REDUCE_ARGMAX ? GEN_TIES : GEN_UNIFORM;
        run_case(&c, &lp, w * 100 + (uint64_t)mode * 10 + oi);
        for (int64_t ax = 0; ax < 2; ax++) {
          struct rcase a = with_axes(mk(ops[oi], KILN_F32, 2, m1), 1, &ax);
          a.gen = c.gen;
          run_case(&a, &lp, w * 100 + (uint64_t)mode * 10 + oi + 1);
          struct rcase b = with_axes(mk(ops[oi], KILN_F32, 2, m2), 1, &ax);
          run_case(&b, &lp, w * 100 + (uint64_t)mode * 10 + oi + 2);
        }
      }
    }
  }
  kiln__reduce_test_gpu_rows = 0;
}
END_TEST

/*
 * All-NaN and partly NaN slices (issue 14: norm Linf/-inf of an all-NaN slice under omit
 * gave NaN, not 0/+inf): every op and every norm order over each axis of a [17, 2, 17, 19]
 * tensor (rows for the last axis, 16-row blocks and a tail; columns for the others, a
 * 16-column vector and an edge), over axes 0 and 2 (the permute) and over all of it (one
 * row); NaN on the planes where coordinate d is d + 1, so every layout has all-NaN slices
 * next to slices with one NaN or a few (GEN_SPECIAL adds 10% NaN and +-inf). Both NaN
 * policies at the tuned defaults, then omit in the lp_modes entries (f32: each op in every
 * other one, f64: each op in one of them), each at one of the tuner's work-group sizes (a
 * mode of 256 columns per item runs only the ops that have vector-state column kernels: for
 * the others it builds the same 64-column program).
 */
START_TEST(test_nan_slices)
{
  kiln_dtype dt = _i ? KILN_F64 : KILN_F32;
  if (dt == KILN_F64 && !harness_has_fp64())
    return;
  kiln_context *ctx = harness_ctx();
  kiln_device_info info;
  KOK(kiln_context_device_info(ctx, &info));
  static const uint32_t wgs[NLP_MODES] = {256, 64, 512, 1024, 256, 128, 32};
  static const int64_t shape[4] = {17, 2, 17, 19};
  static const kiln_norm_ord ords[] = {KILN_NORM_L2,      KILN_NORM_L1, KILN_NORM_LINF,
                                       KILN_NORM_NEG_INF, KILN_NORM_L0, KILN_NORM_P};
  /* Axis sets: one axis each, axes 0 and 2, all (nset 0). */
  static const int64_t sets[6][2] = {{0}, {1}, {2}, {3}, {0, 2}, {0}};
  static const size_t nset[6] = {1, 1, 1, 1, 2, 0};
  for (size_t mode = 0; mode <= NLP_MODES; mode++) {
    kiln__launch_params lp;
    if (mode) {
      uint32_t wg = wgs[mode - 1];
      lp = lp_for_mode(ctx, mode - 1,
                       wg < info.max_work_group_size ? wg : (uint32_t)info.max_work_group_size);
    }
    for (int op = 0; op < KILN_REDUCE_OP_COUNT; op++) {
      size_t nord = op == KILN_REDUCE_NORM ? sizeof ords / sizeof ords[0] : 1;
      for (size_t oi = 0; oi < nord; oi++) {
        int colsv = op == KILN_REDUCE_SUM || op == KILN_REDUCE_MEAN || op == KILN_REDUCE_MAX ||
                    op == KILN_REDUCE_MIN ||
                    (op == KILN_REDUCE_NORM && ords[oi] != KILN_NORM_L2 && ords[oi] != KILN_NORM_P);
        if (mode && lp.cols_per_item > KILN__TILE_COLS_MAX && !colsv)
          continue;
        /* f64 takes every op at the defaults and each op (norm order) in one of the modes,
         * rotating: every mode is a program of its own per dtype, whose kernels are the
         * same templates for both float types; f32 takes every op in every other mode,
         * alternating between ops, so that each mode runs half the ops in f32. */
        if (mode && dt == KILN_F64 && ((size_t)op + oi) % NLP_MODES != mode - 1)
          continue;
        if (mode && dt == KILN_F32 && ((size_t)op + oi + mode) % 2)
          continue;
        for (int pol = mode ? 1 : 0; pol < 2; pol++)
          for (size_t si = 0; si < 6; si++) {
            struct rcase c = mk((kiln_reduce_op)op, dt, 4, shape);
            if (nset[si])
              c = with_axes(c, nset[si], sets[si]);
            c.gen = GEN_SPECIAL;
            c.nan_planes = 1;
            c.opts.nan_policy = pol ? KILN_NAN_OMIT : KILN_NAN_PROPAGATE;
            c.opts.norm_ord = ords[oi];
            c.opts.norm_p = 3;
            c.opts.ddof = 1;
            c.arg_values = op == KILN_REDUCE_ARGMIN || op == KILN_REDUCE_ARGMAX;
            run_case(&c, mode ? &lp : NULL, (uint64_t)(op * 1000 + (int)oi * 100 + pol * 10) + si);
          }
      }
    }
  }
}
END_TEST

/*
 * op over one axis (all axes when axis < 0) of a view starting lead elements into its
 * buffer; argmin/argmax get ties, so that first positions are checked.
 */
static struct rcase
lead_case(kiln_reduce_op op, kiln_dtype dt, size_t ndim, const int64_t *shape, int64_t axis,
          uint64_t lead)
{
  struct rcase c = mk(op, dt, ndim, shape);
  if (axis >= 0)
    c = with_axes(c, 1, &axis);
  if (op == KILN_REDUCE_ARGMIN || op == KILN_REDUCE_ARGMAX)
    c.gen = GEN_TIES;
  c.lead = lead;
  return c;
}

/*
 * Columns of [67, 72] (and [67, 70], never 4-aligned) under lp with 4, 16 and 256 columns
 * per item: the tile path's 4-vector loads where the item's columns start 4-aligned; vector
 * states (sum, mean, max, min on CPU devices) in blocks of 16 rows, a 3-row tail and an
 * 8-column edge (72 = 4 * 16 + 8), and for floats with NaN and infinities under both NaN
 * policies. 256 is skipped where it would only repeat the tile path at its limit of 64.
 * The column kernels do not read the lane order: 16 and 256 columns take the device's
 * default one and the column defaults' work-group size, whose programs and work-group
 * functions the defaults build anyway (on CPU devices they pick 16, 64 and 256 columns per
 * item by shape), 4 columns lp's.
 */
static void
vector_cols(kiln_reduce_op op, kiln_dtype dt, const kiln__launch_params *lp, uint64_t lead,
            const kiln_device_info *info, uint64_t seed)
{
  /* The small mode's 19 rows still hold a block of 16 and a 3-row tail. */
  const int64_t rows = harness_size(67, 19), mc[2] = {rows, 72}, mc70[2] = {rows, 70};
  int is_float = is_fl(dt);
  int vec_state = op == KILN_REDUCE_SUM || op == KILN_REDUCE_MEAN || op == KILN_REDUCE_MAX ||
                  op == KILN_REDUCE_MIN;
  for (uint32_t cols = 4; cols <= 256; cols *= cols == 16 ? 16 : 4) {
    if (cols == 256 && (!vec_state || info->is_gpu))
      continue;
    kiln__launch_params lc = *lp;
    lc.cols_per_item = cols;
    if (cols >= 16) {
      kiln__launch_params cd;
      kiln__launch_params_default(harness_ctx(), KILN__LAUNCH_REDUCE, &cd);
      kiln__launch_params_columns(harness_ctx(), &cd);
      lc.blocked = cd.blocked;
      lc.wg_size = cd.wg_size;
    }
    struct rcase b = lead_case(op, dt, 2, mc, 0, lead);
    run_case(&b, &lc, seed + cols);
    if (cols == 4) {
      struct rcase u = lead_case(op, dt, 2, mc70, 0, lead);
      run_case(&u, &lc, seed);
    }
    for (int pol = 0; vec_state && is_float && cols >= 16 && pol < 2; pol++) {
      struct rcase n = b;
      n.gen = GEN_SPECIAL;
      n.opts.nan_policy = pol ? KILN_NAN_OMIT : KILN_NAN_PROPAGATE;
      run_case(&n, &lc, seed + 1 + (uint64_t)pol);
    }
  }
}

/*
 * Lane order 2 (4-vectors from the first 4-aligned element, 16-element blocks, loads of
 * one or two blocks in flight) for every dtype: views starting 0-3 elements into their
 * buffer, rows whose starts fall on every alignment, rows long enough for whole blocks,
 * leftover vectors and a scalar tail, one pass or (every other dtype) split into chunks at
 * odd offsets; and the column kernels' vector paths (vector_cols) on aligned and misaligned
 * views.
 */
START_TEST(test_vector_lanes)
{
  kiln_dtype dt = all_dtypes[_i];
  if (dt == KILN_F64 && !harness_has_fp64())
    return;
  kiln_context *ctx = harness_ctx();
  kiln_device_info info;
  KOK(kiln_context_device_info(ctx, &info));
  static const kiln_reduce_op ops[] = {
      KILN_REDUCE_SUM,    KILN_REDUCE_MEAN,     KILN_REDUCE_MAX,           KILN_REDUCE_MIN,
      KILN_REDUCE_ARGMIN, KILN_REDUCE_ARGMAX,   KILN_REDUCE_COUNT_NONZERO, KILN_REDUCE_ALL,
      KILN_REDUCE_VAR,    KILN_REDUCE_LOGSUMEXP};
  const int64_t v1[1] = {harness_size(4099, 1027)}, m1[2] = {harness_size(7, 2), 517};
  const int64_t m2[2] = {3, harness_size(2053, 261)};
  /* One of the two per dtype, alternating (every dtype's split kernels run in ops_dtypes
   * and nan_slices; the lane order reads the same way in both passes). */
  for (int split = _i % 2; split < _i % 2 + 1; split++) {
    kiln__launch_params lp;
    kiln__launch_params_default(ctx, KILN__LAUNCH_REDUCE, &lp);
    lp.blocked = 2;
    /* The rows kernels do not read the columns per item: 4 puts them in the program of
     * vector_cols' 4-column cases (the GPU default), not in one of their own. */
    lp.cols_per_item = 4;
    lp.wg_size = 64;
    lp.items_per_thread = split ? 37 : 64;
    lp.two_pass_min = split ? 1 : UINT64_MAX;
    for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
      if (!kiln_reduce_op_supports(ops[oi], dt))
        continue;
      /* The small mode: an aligned view and one 3 elements in. */
      for (uint64_t lead = 0; lead < 4; lead += harness_small() ? 3 : 1) {
        uint64_t seed = (uint64_t)split * 1000 + oi * 10 + lead;
        struct rcase c = lead_case(ops[oi], dt, 1, v1, -1, lead);
        run_case(&c, &lp, seed);
        struct rcase a = lead_case(ops[oi], dt, 2, lead & 1 ? m1 : m2, 1, lead);
        run_case(&a, &lp, seed + 5);
        if (lead < 2)
          vector_cols(ops[oi], dt, &lp, lead, &info, seed + 7);
      }
    }
  }
}
END_TEST

/*
 * Launch shapes whose private memory, a whole work-group's on one PoCL worker thread's stack,
 * overflowed its 8 MiB (SIGSEGV in the kernel): columns of [300, 700] f64 at 256 columns per
 * item, prod (the tile path at 64 columns: a 64 x 16 tile and 64 states per item) in groups of
 * 1024 and sum (the vector-state path, NAME_colsv) in groups of 4096; each in one pass and
 * split into chunks (the second pass too). The work-group size is clamped, the results exact.
 */
START_TEST(test_private_stack)
{
  kiln_context *ctx = harness_ctx();
  kiln_dtype dt = harness_has_fp64() ? KILN_F64 : KILN_F32;
  static const struct {
    kiln_reduce_op op;
    uint32_t wg;
  } shapes[] = {{KILN_REDUCE_PROD, 1024}, {KILN_REDUCE_SUM, 4096}};
  const int64_t shape[2] = {300, 700}, ax = 0;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int split = 0; split < 2; split++) {
      kiln__launch_params lp;
      kiln__launch_params_default(ctx, KILN__LAUNCH_REDUCE, &lp);
      lp.wg_size = shapes[i].wg;
      lp.cols_per_item = KILN__COLS_MAX;
      lp.two_pass_min = split ? 1 : UINT64_MAX;
      struct rcase c = with_axes(mk(shapes[i].op, dt, 2, shape), 1, &ax);
      run_case(&c, &lp, i * 10 + (uint64_t)split);
    }
}
END_TEST

/* 2^24 + 3 elements: sum (against a long double sum), mean, max, argmax, f64 accumulation. */
START_TEST(test_large)
{
  kiln_context *ctx = harness_ctx();
  int64_t n = (1 << 24) + 3;
  if (!harness_fits((uint64_t)n))
    return;
  float *h = malloc((size_t)n * sizeof *h);
  ck_assert_ptr_nonnull(h);
  rng_state = 12345;
  long double sum = 0, sumabs = 0;
  float mx = -INFINITY;
  int64_t amx = 0;
  for (int64_t i = 0; i < n; i++) {
    /* Positive offset: the sum grows to ~1.7e7, where f32 ulps are 2. */
    h[i] = (float)(unif() + 0.5);
    sum += h[i];
    sumabs += fabsl((long double)h[i]);
    if (h[i] > mx) {
      mx = h[i];
      amx = i;
    }
  }
  kiln_tensor *x = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 1, &n, h, &x));
  for (int wide = 0; wide < (harness_has_fp64() ? 2 : 1); wide++) {
    kiln_reduce_options o = {0};
    o.accumulate_f64 = wide;
    kiln_tensor *y = NULL;
    float got;
    KOK(kiln_reduce(ctx, KILN_REDUCE_SUM, x, NULL, 0, 0, &o, &y));
    KOK(kiln_tensor_download(y, &got, 4));
    long double tol =
        wide ? FLT_EPSILON * sum + 8 * DBL_EPSILON * sumabs : 8 * FLT_EPSILON * sumabs;
    ck_assert_msg(fabsl(got - sum) <= tol, "sum %.10g vs %.10Lg (tol %.3Lg, wide %d)", (double)got,
                  sum, tol, wide);
    kiln_tensor_release(y);
    y = NULL;
    KOK(kiln_reduce(ctx, KILN_REDUCE_MEAN, x, NULL, 0, 0, &o, &y));
    KOK(kiln_tensor_download(y, &got, 4));
    ck_assert_msg(fabsl(got - sum / n) <= tol / n, "mean %.10g vs %.10Lg", (double)got, sum / n);
    kiln_tensor_release(y);
  }
  kiln_tensor *y = NULL, *v = NULL;
  KOK(kiln_argreduce(ctx, KILN_REDUCE_ARGMAX, x, NULL, 0, 0, NULL, &v, &y));
  int64_t gi;
  float gv;
  KOK(kiln_tensor_download(y, &gi, 8));
  KOK(kiln_tensor_download(v, &gv, 4));
  ck_assert_int_eq(gi, amx);
  ck_assert_float_eq(gv, mx);
  kiln_tensor_release(y);
  kiln_tensor_release(v);
  y = NULL;
  KOK(kiln_reduce(ctx, KILN_REDUCE_MAX, x, NULL, 0, 0, NULL, &y));
  KOK(kiln_tensor_download(y, &gv, 4));
  ck_assert_float_eq(gv, mx);
  kiln_tensor_release(y);
  kiln_tensor_release(x);
  free(h);
}
END_TEST

/* A device without fp64 (simulated): integer means are f32, f64 accumulation is refused. */
START_TEST(test_no_fp64)
{
  setenv("KILN_DEBUG_NO_FP64", "1", 1);
  kiln_context *ctx = NULL;
  kiln_status s = kiln_context_create(NULL, &ctx);
  unsetenv("KILN_DEBUG_NO_FP64");
  KOK(s);
  kiln_dtype rd;
  KOK(kiln_reduce_result_dtype(ctx, KILN_REDUCE_MEAN, KILN_I32, &rd));
  ck_assert_int_eq(rd, KILN_F32);
  int32_t h[5] = {1, 2, 3, 4, 6};
  int64_t n = 5;
  kiln_tensor *x = NULL, *y = NULL, *xf = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_I32, 1, &n, h, &x));
  KOK(kiln_reduce(ctx, KILN_REDUCE_MEAN, x, NULL, 0, 0, NULL, &y));
  ck_assert_int_eq(kiln_tensor_dtype(y), KILN_F32);
  float got;
  KOK(kiln_tensor_download(y, &got, 4));
  ck_assert_float_eq(got, 3.2f);
  kiln_tensor_release(y);
  y = NULL;
  KOK(kiln_reduce(ctx, KILN_REDUCE_STD, x, NULL, 0, 0, NULL, &y));
  KOK(kiln_tensor_download(y, &got, 4));
  ck_assert_msg(fabsf(got - 1.7204651f) < 1e-6f, "std %g", (double)got);
  kiln_tensor_release(y);
  y = NULL;
  float hf[2] = {1, 2};
  int64_t n2 = 2;
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 1, &n2, hf, &xf));
  kiln_reduce_options o = {0};
  o.accumulate_f64 = 1;
  KEXPECT(kiln_reduce(ctx, KILN_REDUCE_SUM, xf, NULL, 0, 0, &o, &y), KILN_ERR_UNSUPPORTED);
  kiln_tensor_release(xf);
  kiln_tensor_release(x);
  KOK(kiln_context_release(ctx));
}
END_TEST

START_TEST(test_provider_slots)
{
  const kiln_provider *p = NULL;
  KOK(kiln_get_provider(KILN_PROVIDER_ABI, &p));
  ck_assert(p->struct_size >= sizeof(kiln_provider));
  ck_assert(p->reduce == kiln_reduce);
  ck_assert(p->argreduce == kiln_argreduce);
  ck_assert(p->scan == kiln_scan);
  ck_assert(p->scan_indexed == kiln_scan_indexed);
  ck_assert(p->diff == kiln_diff);
}
END_TEST

/*
 * Aliasing: an output one element before or after its input is computed
 * through a temporary (correct values); outputs overlapping each other are
 * refused with every byte left alone.
 */
START_TEST(test_overlap)
{
  kiln_context *ctx = harness_ctx();
  enum { R = 67, C = 45 };
  const int64_t xs[2] = {R, C};
  float *hx = malloc(R * C * sizeof *hx);
  for (int i = 0; i < R * C; i++)
    hx[i] = (float)((i * 7) % 23) - 11.0f; /* small integers: every order sums exactly */
  for (int out_first = 1; out_first >= 0; out_first--) {
    for (int ax = 0; ax < 2; ax++) {
      const int64_t axis = ax, on = xs[1 - ax];
      kiln_tensor *x, *y;
      harness_overlap_pair(KILN_F32, 2, xs, hx, KILN_F32, 1, &on, 4, out_first, &x, &y, NULL);
      KOK(kiln_reduce(ctx, KILN_REDUCE_SUM, x, &axis, 1, 0, NULL, &y));
      float *got = harness_download(y);
      for (int64_t o = 0; o < on; o++) {
        float want = 0;
        for (int64_t k = 0; k < xs[ax]; k++)
          want += ax ? hx[o * C + k] : hx[k * C + o];
        ck_assert_msg(got[o] == want, "sum over axis %d, output %s x: [%lld] = %g, expected %g", ax,
                      out_first ? "before" : "after", (long long)o, (double)got[o], (double)want);
      }
      free(got);
      kiln_tensor_release(x);
      kiln_tensor_release(y);
    }
    /* argmax indices over x's bytes (8-byte elements one f32 apart is still an overlap). */
    kiln_tensor *x, *idx;
    const int64_t rn = R;
    const int64_t axis = 1;
    harness_overlap_pair(KILN_F32, 2, xs, hx, KILN_I64, 1, &rn, 8, out_first, &x, &idx, NULL);
    KOK(kiln_argreduce(ctx, KILN_REDUCE_ARGMAX, x, &axis, 1, 0, NULL, NULL, &idx));
    int64_t *gi = harness_download(idx);
    for (int r = 0; r < R; r++) {
      int64_t best = 0;
      for (int k = 1; k < C; k++)
        if (hx[r * C + k] > hx[r * C + best])
          best = k;
      ck_assert_msg(gi[r] == best, "argmax row %d: %lld, expected %lld", r, (long long)gi[r],
                    (long long)best);
    }
    free(gi);
    kiln_tensor_release(x);
    kiln_tensor_release(idx);
  }
  /* values and indices over shared bytes: refused, nothing written. */
  kiln_tensor *x = NULL, *vals, *idx, *all;
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 2, xs, hx, &x));
  const int64_t rn = R, axis = 1;
  for (int out_first = 1; out_first >= 0; out_first--) {
    harness_overlap_pair(KILN_F32, 1, &rn, hx, KILN_I64, 1, &rn, 8, out_first, &vals, &idx, &all);
    KEXPECT_REFUSED_UNTOUCHED(
        all, kiln_argreduce(ctx, KILN_REDUCE_ARGMAX, x, &axis, 1, 0, NULL, &vals, &idx));
    kiln_tensor_release(vals);
    kiln_tensor_release(idx);
    kiln_tensor_release(all);
  }
  kiln_tensor_release(x);
  free(hx);
}
END_TEST

/*
 * Complex tensors (c64, c128): sum, mean, prod and every norm order against a long double
 * reference, full reductions of 0, 1, 7 (prime), 257 and 100003 elements (non-multiples of
 * every work-group size; the last splits into chunks), rows and columns of a [13, 37]
 * matrix, sum under both NaN policies (an element is NaN when either part is), norms of
 * values near 1e30 (|z|^2 would overflow f32) and the ops without complex support.
 * Tolerances (eps of the part type, S = sum of |re| + |im|, n elements): sum, mean: 8 eps S
 * (/ n) per part; prod: 4 (n + 4) eps |want| per part; L1: 10 eps S; L2, p: 8 (1 + log2 n)
 * eps |want|; Linf, -inf: 2 eps |want| (hypot); L0 exact.
 */
static void
complex_case(kiln_dtype dt, kiln_reduce_op op, kiln_norm_ord ord, size_t ndim, const int64_t *shape,
             int64_t axis, int nan_omit, double scale, uint64_t seed)
{
  kiln_context *ctx = harness_ctx();
  int c64 = dt == KILN_C64;
  uint64_t n = 1;
  for (size_t d = 0; d < ndim; d++)
    n *= (uint64_t)shape[d];
  rng_state = seed * 2654435761u + 0x9e3779b97f4a7c15ull;
  long double *re = malloc((n + 1) * sizeof *re), *im = malloc((n + 1) * sizeof *im);
  void *raw = malloc((n + 1) * 16);
  ck_assert(re && im && raw);
  for (uint64_t i = 0; i < n; i++) {
    double a = op == KILN_REDUCE_PROD ? 0.9 + 0.2 * unif() : (unif() * 4 - 2) * scale;
    double b = op == KILN_REDUCE_PROD ? 0.2 * unif() - 0.1 : (unif() * 4 - 2) * scale;
    if (nan_omit >= 0 && rnd() % 10 == 0)
      *(rnd() & 1 ? &a : &b) = NAN;
    if (c64) {
      ((float *)raw)[2 * i] = (float)a;
      ((float *)raw)[2 * i + 1] = (float)b;
      re[i] = (float)a;
      im[i] = (float)b;
    } else {
      ((double *)raw)[2 * i] = a;
      ((double *)raw)[2 * i + 1] = b;
      re[i] = a;
      im[i] = b;
    }
  }
  kiln_tensor *x = NULL, *y = NULL;
  KOK(kiln_tensor_from_host(ctx, dt, ndim, shape, raw, &x));
  kiln_reduce_options o;
  memset(&o, 0, sizeof o);
  o.norm_ord = ord;
  o.norm_p = 3;
  o.nan_policy = nan_omit > 0 ? KILN_NAN_OMIT : KILN_NAN_PROPAGATE;
  kiln_status s = kiln_reduce(ctx, op, x, axis < 0 ? NULL : &axis, axis < 0 ? 0 : 1, 0, &o, &y);
  char what[160];
  snprintf(what, sizeof what, "%s %s ord %d n %llu axis %lld omit %d scale %g",
           kiln_reduce_op_name(op), kiln_dtype_name(dt), (int)ord, (unsigned long long)n,
           (long long)axis, nan_omit, scale);
  ck_assert_msg(s == KILN_OK, "%s: %s", what, kiln_last_error());
  kiln_dtype want_dt = op == KILN_REDUCE_NORM ? (c64 ? KILN_F32 : KILN_F64) : dt;
  ck_assert_msg(kiln_tensor_dtype(y) == want_dt, "%s: result dtype %s", what,
                kiln_dtype_name(kiln_tensor_dtype(y)));
  /* (outer, red, inner) of the reduction. */
  uint64_t outer = 1, red = n, inner = 1;
  if (axis >= 0) {
    red = (uint64_t)shape[axis];
    for (int64_t d = 0; d < axis; d++)
      outer *= (uint64_t)shape[d];
    for (size_t d = (size_t)axis + 1; d < ndim; d++)
      inner *= (uint64_t)shape[d];
  }
  size_t nout = (size_t)(outer * inner);
  unsigned char *got = malloc(nout * 16 + 16);
  KOK(kiln_tensor_download(y, got, kiln_tensor_nbytes(y)));
  long double eps = c64 ? FLT_EPSILON : DBL_EPSILON;
  for (uint64_t oo = 0; oo < outer; oo++) {
    for (uint64_t ii = 0; ii < inner; ii++) {
      long double sr = 0, si = 0, S = 0, pr = 1, pi = 0, l1 = 0, l2s = 0, l3s = 0, mx = 0;
      long double mn = INFINITY, nz = 0, m = 0, big = 0;
      int nan = 0;
      for (uint64_t j = 0; j < red; j++) {
        uint64_t k = (oo * red + j) * inner + ii;
        long double a = re[k], b = im[k];
        if (isnanl_(a) || isnanl_(b)) {
          nan = 1;
          if (o.nan_policy == KILN_NAN_OMIT)
            continue;
        }
        long double ab = hypotl(a, b);
        big = fmaxl(big, ab);
        sr += a;
        si += b;
        S += fabsl(a) + fabsl(b);
        long double t = pr * a - pi * b;
        pi = pr * b + pi * a;
        pr = t;
        l1 += ab;
        mx = fmaxl(mx, ab);
        mn = fminl(mn, ab);
        nz += ab != 0;
        m++;
      }
      for (uint64_t j = 0; j < red && big > 0; j++) { /* scaled, so no overflow in the reference */
        uint64_t k = (oo * red + j) * inner + ii;
        if (!(isnanl_(re[k]) || isnanl_(im[k]))) {
          long double q = hypotl(re[k], im[k]) / big;
          l2s += q * q;
          l3s += q * q * q;
        }
      }
      int prop = nan && o.nan_policy != KILN_NAN_OMIT;
      long double wr, wi = 0, tol, L = 1 + log2l(m + 1);
      switch (op) {
      case KILN_REDUCE_SUM:
        wr = sr, wi = si, tol = 8 * eps * S;
        break;
      case KILN_REDUCE_MEAN:
        wr = sr / m, wi = si / m, tol = 8 * eps * S / (m > 0 ? m : 1);
        break;
      case KILN_REDUCE_PROD:
        wr = pr, wi = pi, tol = 4 * (m + 4) * eps * hypotl(pr, pi);
        break;
      default:
        switch (ord) {
        case KILN_NORM_L1:
          wr = l1, tol = 10 * eps * S;
          break;
        case KILN_NORM_L2:
          wr = big * sqrtl(l2s), tol = 8 * L * eps * wr;
          break;
        case KILN_NORM_P:
          wr = big * cbrtl(l3s), tol = 8 * L * eps * wr;
          break;
        case KILN_NORM_LINF:
          wr = mx, tol = 2 * eps * wr;
          break;
        case KILN_NORM_NEG_INF:
          wr = mn, tol = 2 * eps * wr;
          break;
        default:
          wr = nz, tol = 0;
          break;
        }
        if (prop && ord != KILN_NORM_L0)
          wr = NAN;
        break;
      }
      if (prop && op != KILN_REDUCE_NORM)
        wr = wi = NAN;
      size_t oi = (size_t)(oo * inner + ii);
      long double gr, gi = 0;
      if (want_dt == KILN_C64) {
        gr = ((float *)got)[2 * oi], gi = ((float *)got)[2 * oi + 1];
      } else if (want_dt == KILN_C128) {
        gr = ((double *)got)[2 * oi], gi = ((double *)got)[2 * oi + 1];
      } else {
        gr = want_dt == KILN_F32 ? ((float *)got)[oi] : ((double *)got)[oi];
      }
      if (prop && op != KILN_REDUCE_NORM) /* NumPy: NaN in one part makes the result NaN */
        EXPECT(isnanl_(gr) || isnanl_(gi), "%s: out[%zu] = (%Lg, %Lg), expected NaN", what, oi, gr,
               gi);
      else
        EXPECT(matches(gr, wr, tol) && matches(gi, wi, tol),
               "%s: out[%zu] = (%.17Lg, %.17Lg), expected (%.17Lg, %.17Lg) (tol %.3Lg)", what, oi,
               gr, gi, wr, wi, tol);
    }
  }
  free(got);
  free(re);
  free(im);
  free(raw);
  kiln_tensor_release(y);
  kiln_tensor_release(x);
}

START_TEST(test_complex)
{
  kiln_dtype dt = _i ? KILN_C128 : KILN_C64;
  if (dt == KILN_C128 && !harness_has_fp64())
    return;
  static const int64_t lens[] = {0, 1, 7, 257, 100003};
  static const kiln_norm_ord ords[] = {KILN_NORM_L1, KILN_NORM_L2,      KILN_NORM_LINF,
                                       KILN_NORM_L0, KILN_NORM_NEG_INF, KILN_NORM_P};
  static const kiln_reduce_op ops[] = {KILN_REDUCE_SUM, KILN_REDUCE_MEAN, KILN_REDUCE_PROD,
                                       KILN_REDUCE_NORM};
  const int64_t mat[2] = {13, 37};
  for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
    size_t nord = ops[oi] == KILN_REDUCE_NORM ? sizeof ords / sizeof ords[0] : 1;
    for (size_t r = 0; r < nord; r++) {
      for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        if (lens[li] > 1000 && (ops[oi] == KILN_REDUCE_PROD || harness_small()))
          continue;
        complex_case(dt, ops[oi], ords[r], 1, &lens[li], -1, -1, 1, li);
      }
      for (int64_t ax = 0; ax < 2; ax++)
        complex_case(dt, ops[oi], ords[r], 2, mat, ax, -1, 1, 10 + (uint64_t)ax);
    }
  }
  const int64_t n257 = 257;
  for (int omit = 0; omit < 2; omit++) {
    complex_case(dt, KILN_REDUCE_SUM, KILN_NORM_L2, 1, &n257, -1, omit, 1, 20);
    complex_case(dt, KILN_REDUCE_MEAN, KILN_NORM_L2, 2, mat, 1, omit, 1, 21);
  }
  /* |z| of 1e30 + 1e30i squares to 2e60: past f32's range, inside its range as hypot. */
  for (size_t r = 0; r < 3; r++)
    complex_case(dt, KILN_REDUCE_NORM, ords[r], 1, &n257, -1, -1, dt == KILN_C64 ? 1e30 : 1e300,
                 30);
  /* No order: min, max, argmin, argmax, median (and the other real-only ops) reject it. */
  kiln_context *ctx = harness_ctx();
  kiln_tensor *x = NULL, *y = NULL;
  KOK(kiln_tensor_zeros(ctx, dt, 1, &n257, &x));
  for (int op = 0; op < KILN_REDUCE_OP_COUNT; op++) {
    int ok = op == KILN_REDUCE_SUM || op == KILN_REDUCE_MEAN || op == KILN_REDUCE_PROD ||
             op == KILN_REDUCE_NORM;
    ck_assert_int_eq(kiln_reduce_op_supports((kiln_reduce_op)op, dt), ok);
    if (!ok) {
      ck_assert_int_eq(kiln_reduce(ctx, (kiln_reduce_op)op, x, NULL, 0, 0, NULL, &y),
                       KILN_ERR_DTYPE);
      ck_assert_ptr_null(y);
    }
  }
  kiln_tensor_release(x);
}
END_TEST

/*
 * Every value `kiln tune` can give each parameter of the reduce family (the candidate
 * lists of kiln__reduce_tune), one at a time on the defaults, for bf16 sum (the op the
 * tuner times): rows of 2000 (past the smallest split threshold), and for the parameters
 * that only column layouts read (columns per item) columns of a [300, 67] matrix.
 */
START_TEST(test_tuner_values)
{
  kiln_context *ctx = harness_ctx();
  const struct kiln__tune_family *f = &kiln__reduce_tune;
  const int64_t rows[2] = {harness_size(7, 3), 2000}, cols[2] = {harness_size(300, 40), 67};
  const int64_t ax0 = 0, ax1 = 1;
  for (size_t p = 0; p < f->nparams; p++) {
    const struct kiln__tune_param *tp = &f->params[p];
    int col = tp->layouts != 0 && !(tp->layouts & (1u << KILN__LAYOUT_ROW));
    for (size_t v = 0; v < tp->nfull; v++) {
      kiln__launch_params lp;
      kiln__launch_params_default(ctx, KILN__LAUNCH_REDUCE, &lp);
      if (col)
        kiln__launch_params_columns(ctx, &lp);
      uint64_t val = tp->full[v];
      memcpy((char *)&lp + tp->offset, &val, tp->size); /* little-endian: the low bytes */
      struct rcase c = col ? with_axes(mk(KILN_REDUCE_SUM, KILN_BF16, 2, cols), 1, &ax0)
                           : with_axes(mk(KILN_REDUCE_SUM, KILN_BF16, 2, rows), 1, &ax1);
      run_case(&c, &lp, p * 16 + v);
    }
  }
}
END_TEST

static Suite *
reduce_suite(void)
{
  Suite *s = suite_create("reduce");
  struct {
    const char *name;
    const TTest *test;
    int loops;
  } groups[] = {
      {"ops_dtypes", test_ops_dtypes, (int)NDTYPES},
      {"axes_4d", test_axes_4d, 0},
      {"nan_policies", test_nan_policies, 2},
      {"nan_slices", test_nan_slices, 2},
      {"argmax_ties", test_argmax_ties, 0},
      {"empty", test_empty, 0},
      {"bad_inputs", test_bad_inputs, 0},
      {"given_outputs", test_given_outputs, 0},
      {"numerics", test_numerics, 0},
      {"median", test_median, 0},
      {"tunables", test_tunables, 0},
      /* bf16 (the last dtype) reads its 4-vectors in tuner_values: one 16-bit type here. */
      {"vector_lanes", test_vector_lanes, (int)NDTYPES - 1},
      {"private_stack", test_private_stack, 0},
      {"large", test_large, 0},
      {"no_fp64", test_no_fp64, 0},
      {"provider", test_provider_slots, 0},
      {"overlap", test_overlap, 0},
      {"complex", test_complex, 2},
      {"tuner_values", test_tuner_values, 0},
  };
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
    TCase *tc = tcase_create(groups[g].name);
    tcase_set_timeout(tc, 300);
    if (groups[g].loops)
      tcase_add_loop_test(tc, groups[g].test, 0, groups[g].loops);
    else
      tcase_add_test(tc, groups[g].test);
    suite_add_tcase(s, tc);
  }
  return s;
}

int
main(void)
{
  return harness_main(reduce_suite(), 1);
}
