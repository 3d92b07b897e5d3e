/*
 * Scan suite: kiln_scan, kiln_scan_indexed and kiln_diff against a host reference.
 *
 * Coverage: every op of KILN_SCAN_OPS for every dtype it accepts, inclusive and
 * exclusive, along every axis of 1-, 2- and 3-D tensors (lengths 1, primes,
 * non-multiples of the work-group size); NaN and +-inf under both NaN policies
 * with an all-NaN line; cummin/cummax indices with ties; long lines (tiled
 * work-group scans split across groups) up to 2^24 + 3 elements; every strategy
 * at work-group sizes 64, 128, 256 and the device maximum with the split forced
 * on and off (this suite links the library internals for kiln__scan_tuned); the
 * single-pass look-back scan forced on for every op and dtype (complex too), and under
 * adversarial scheduling (one-item groups: thousands of tiles waiting on each other on GPUs);
 * in-place scans; diff of orders 0..len+; bad input. Every bool output holds only 0 and 1
 * (hd_expect_bool01), and exclusive cummin/cummax of bool start from true/false.
 * f16 and bf16 run in ops_dtypes; tuner_values runs every candidate value of every scan
 * tuner parameter once for f16 cumsum; complex tests c64/c128 cumsum, cumprod and diff.
 *
 * Reference: long double (exact for every input dtype), sequential, with the
 * documented semantics; integer cumsum/cumprod wrap in 64 bits like the library.
 *
 * Tolerances. cumsum and cumprod of floats are tested on data whose every
 * partial result is exactly representable (multiples of 1/8 of small
 * magnitude for sums; +-1, +-2, +-1/2 for products), so they must be exact,
 * whatever order the device combines in; test_random_sums then checks
 * rounding on general data against the sequential bound
 *     |got_i - want_i| <= (i + 1) eps sum_{j<=i} |x_j|,
 * which holds for any combining order. logcumsumexp:
 *     |got_i - want_i| <= 4 eps (1 + |want_i|) min(i + 1, 256),
 * (each combine adds a few eps of the running value; the device's dependency
 * chain is at most items_per_thread + log2(work-group) + tiles + chunks, under
 * 256 for the defaults and every configuration used here). cummin, cummax,
 * indices, integer scans and diff: exact. NaN matches only NaN. f16/bf16: exact data
 * must give the reference rounded once; otherwise the f32 bound plus half an ulp of the
 * result, plus half an ulp of sum |x_j| where a line may be split into chunks.
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

enum gen {
  GEN_DYADIC,  /* floats k/8, |k| <= 16; i32 in [-1000, 1000]; i64 around +-2^40; u8; bool */
  GEN_PM,      /* floats +-1, and +-2 or +-1/2 with probability 1/100 (products); ints too */
  GEN_TIES,    /* values 0..3 */
  GEN_SPECIAL, /* GEN_DYADIC with 10% NaN, 3% +inf, 3% -inf */
  GEN_NANROW,  /* GEN_SPECIAL and elements [n/3, n/2) NaN */
  GEN_RANDOM,  /* floats uniform in [-2, 2), not exactly summable */
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

/* v rounded to the 16-bit dtype dt (the host conversions: one rounding, to nearest even). */
static long double
round_half(kiln_dtype dt, long double v)
{
  return dt == KILN_F16 ? kiln_f16_to_f32(kiln_f16_from_f64((double)v))
                        : kiln_bf16_to_f32(kiln_bf16_from_f64((double)v));
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

static void
host_make(struct hd_host *h, kiln_dtype dt, uint64_t n, enum gen g, uint64_t seed)
{
  hd_host_alloc(h, dt, n);
  rng_state = seed * 2654435761u + 0x9e3779b97f4a7c15ull;
  int is_float = is_fl(dt);
  for (uint64_t i = 0; i < n; i++) {
    long double v;
    if (dt == KILN_BOOL) {
      v = (long double)(rnd() & 1); /* a bool holds 0 or 1, whatever the generator */
    } else if (g == GEN_TIES) {
      v = (long double)(rnd() % 4);
    } else if (g == GEN_PM) {
      uint64_t r = rnd();
      v = (r & 1) ? 1 : -1;
      if (is_float && r % 100 == 2)
        v *= (r & 4) ? 2 : 0.5;
      else if (!is_float && r % 100 == 2)
        v *= 3;
    } else if (g == GEN_RANDOM && is_float) {
      v = (long double)(rnd() >> 11) * 0x1.0p-53L * 4 - 2;
    } else if (is_float && (dt == KILN_F16 || dt == KILN_BF16)) {
      /* Non-negative, so running sums grow past the 11 (8) significant bits of f16 (bf16)
       * and every stored result is rounded; the f32 sums stay exact. */
      v = (long double)(rnd() % 17) / 8;
    } else if (is_float) {
      v = (long double)((int64_t)(rnd() % 33) - 16) / 8;
    } else if (dt == KILN_I32) {
      v = (long double)((int64_t)(rnd() % 2001) - 1000);
    } else if (dt == KILN_I64) {
      v = (long double)((int64_t)(rnd() >> 23) * ((rnd() & 1) ? 1 : -1));
    } else if (dt == KILN_U8) {
      v = (long double)(rnd() % 256);
    } else {
      v = (long double)(rnd() & 1);
    }
    if (is_float && (g == GEN_SPECIAL || g == GEN_NANROW)) {
      uint64_t r = rnd() % 100;
      if (r < 10)
        v = NAN;
      else if (r < 13)
        v = INFINITY;
      else if (r < 16)
        v = -INFINITY;
      if (g == GEN_NANROW && i >= n / 3 && i < n / 2)
        v = NAN;
    }
    hd_host_set(h, i, v);
  }
}

static int
isnan_(long double v)
{
  return v != v;
}

static int
matches(long double got, long double want, long double tol)
{
  if (isnan_(want))
    return isnan_(got);
  if (isinf(want))
    return got == want;
  return fabsl(got - want) <= tol;
}

static long double
logaddexp_ld(long double a, long double b)
{
  if (isnan_(a) || isnan_(b))
    return NAN;
  if (a == -INFINITY)
    return b;
  if (b == -INFINITY)
    return a;
  if (a == b)
    return a + logl(2);
  long double m = a > b ? a : b;
  return m + log1pl(expl(-fabsl(a - b)));
}

/* The empty value of cummin/cummax for dtype dt: NaN, else the dtype's smallest/largest. */
static long double
cum_empty(kiln_dtype dt, int is_max)
{
  switch (dt) {
  case KILN_F32:
  case KILN_F64:
  case KILN_F16:
  case KILN_BF16:
    return NAN;
  case KILN_I32:
    return is_max ? INT32_MIN : INT32_MAX;
  case KILN_I64:
    return is_max ? (long double)INT64_MIN : (long double)INT64_MAX;
  case KILN_BOOL:
    return is_max ? 0 : 1;
  default:
    return is_max ? 0 : 255;
  }
}

/*
 * Scans one line a[0..n) into want[] (values) and wi[] (cummin/cummax indices),
 * sumabs[] (prefix sums of |x| for the tolerance).
 */
static void
ref_line(kiln_scan_op op, const kiln_scan_options *o, kiln_dtype dt, const long double *a,
         uint64_t n, long double *want, int64_t *wi, long double *sumabs)
{
  int omit = o->nan_policy == KILN_NAN_OMIT, is_float = is_fl(dt);
  int is_max = op == KILN_SCAN_CUMMAX;
  long double acc = op == KILN_SCAN_CUMPROD ? 1 : op == KILN_SCAN_LOGCUMSUMEXP ? -INFINITY : 0;
  uint64_t iacc = op == KILN_SCAN_CUMPROD ? 1 : 0;
  long double cv = cum_empty(dt, is_max), sa = 0;
  int64_t ci = -1;
  for (uint64_t j = 0; j < n; j++) {
    long double x = a[j];
    int skip = omit && isnan_(x);
    long double before = acc, cvb = cv;
    uint64_t ibefore = iacc;
    int64_t cib = ci;
    if (!skip) {
      sa += fabsl(x);
      switch (op) {
      case KILN_SCAN_CUMSUM:
        acc += x;
        iacc += (uint64_t)(int64_t)x;
        break;
      case KILN_SCAN_CUMPROD:
        acc *= x;
        iacc *= (uint64_t)(int64_t)x;
        break;
      case KILN_SCAN_LOGCUMSUMEXP:
        acc = logaddexp_ld(acc, x);
        break;
      default:
        if (ci < 0) {
          cv = x;
          ci = (int64_t)j;
        } else if (isnan_(cv)) {
          /* the first NaN stays */
        } else if (isnan_(x) || (is_max ? x > cv : x < cv)) {
          cv = x;
          ci = (int64_t)j;
        }
        break;
      }
    }
    int excl = o->exclusive;
    sumabs[j] = sa;
    if (op == KILN_SCAN_CUMMIN || op == KILN_SCAN_CUMMAX) {
      want[j] = excl ? cvb : cv;
      wi[j] = excl ? cib : ci;
    } else if (!is_float && op != KILN_SCAN_LOGCUMSUMEXP) {
      want[j] = (long double)(int64_t)(excl ? ibefore : iacc);
      wi[j] = (int64_t)(excl ? ibefore : iacc);
    } else {
      want[j] = excl ? before : acc;
    }
  }
}

struct scase {
  kiln_scan_op op;
  kiln_dtype dt;
  size_t ndim;
  int64_t shape[KILN_MAX_DIMS];
  int64_t axis;
  kiln_scan_options opts;
  enum gen gen;
  int indexed;     /* kiln_scan_indexed */
  int want_values; /* with kiln_scan_indexed: ask for values too */
  int in_place;    /* kiln_scan with *out == x */
};

static void
describe(const struct scase *c, char *buf, size_t len)
{
  size_t u = (size_t)snprintf(buf, len, "%s%s %s shape [", kiln_scan_op_name(c->op),
                              c->indexed ? "(indexed)" : "", kiln_dtype_name(c->dt));
  for (size_t d = 0; d < c->ndim && u < len; d++)
    u += (size_t)snprintf(buf + u, len - u, d ? ",%lld" : "%lld", (long long)c->shape[d]);
  if (u < len)
    snprintf(buf + u, len - u, "] axis %lld %s nan %s gen %d", (long long)c->axis,
             c->opts.exclusive ? "exclusive" : "inclusive",
             c->opts.nan_policy == KILN_NAN_OMIT ? "omit" : "propagate", (int)c->gen);
}

static void
run_case(const struct scase *c, const kiln__launch_params *lp, uint64_t seed)
{
  kiln_context *ctx = harness_ctx();
  char what[400];
  describe(c, what, sizeof what);
  uint64_t n = 1;
  for (size_t d = 0; d < c->ndim; d++)
    n *= (uint64_t)c->shape[d];
  if (!harness_fits(n))
    return;
  struct hd_host h;
  host_make(&h, c->dt, n, c->gen, seed);
  kiln_tensor *x = NULL, *y = NULL, *yi = NULL;
  KOK(kiln_tensor_from_host(ctx, c->dt, c->ndim, c->shape, h.raw, &x));
  kiln_status s;
  if (c->indexed) {
    s = kiln__scan_indexed_tuned(ctx, c->op, x, c->axis, &c->opts, lp, c->want_values ? &y : NULL,
                                 &yi);
  } else {
    if (c->in_place)
      y = x;
    s = kiln__scan_tuned(ctx, c->op, x, c->axis, &c->opts, lp, &y);
  }
  ck_assert_msg(s == KILN_OK, "%s: %s: %s", what, kiln_status_name(s), kiln_last_error());
  size_t ax = (size_t)(c->axis < 0 ? c->axis + (int64_t)c->ndim : c->axis);
  uint64_t outer = 1, len = (uint64_t)c->shape[ax], inner = 1;
  for (size_t d = 0; d < ax; d++)
    outer *= (uint64_t)c->shape[d];
  for (size_t d = ax + 1; d < c->ndim; d++)
    inner *= (uint64_t)c->shape[d];
  kiln_dtype rdt = c->dt;
  if (!c->indexed)
    KOK(kiln_scan_result_dtype(ctx, c->op, c->dt, &rdt));
  void *got = NULL, *goti = NULL;
  if (y) {
    ck_assert_int_eq(kiln_tensor_dtype(y), rdt);
    ck_assert_uint_eq(kiln_tensor_numel(y), n);
    got = malloc(n * 8 + 8);
    KOK(kiln_tensor_download(y, got, kiln_tensor_nbytes(y)));
    hd_expect_bool01(rdt, got, n, what);
  }
  if (yi) {
    ck_assert_int_eq(kiln_tensor_dtype(yi), KILN_I64);
    goti = malloc(n * 8 + 8);
    KOK(kiln_tensor_download(yi, goti, kiln_tensor_nbytes(yi)));
  }
  long double *line = malloc((len + 1) * sizeof *line), *want = malloc((len + 1) * sizeof *want);
  long double *sa = malloc((len + 1) * sizeof *sa);
  int64_t *wi = malloc((len + 1) * sizeof *wi);
  int is_float = is_fl(rdt);
  /* Whether a line may be split into chunks (then a fixup pass re-reads stored results). */
  kiln__launch_params dlp;
  kiln__launch_params_default(ctx, KILN__LAUNCH_SCAN, &dlp);
  int split = len >= (lp ? lp->two_pass_min : dlp.two_pass_min);
  long double eps = c->dt == KILN_F32 || is_half(c->dt) ? FLT_EPSILON : DBL_EPSILON;
  for (uint64_t o = 0; o < outer; o++) {
    for (uint64_t i = 0; i < inner; i++) {
      for (uint64_t j = 0; j < len; j++)
        line[j] = h.v[(o * len + j) * inner + i];
      ref_line(c->op, &c->opts, c->dt, line, len, want, wi, sa);
      for (uint64_t j = 0; j < len; j++) {
        uint64_t k = (o * len + j) * inner + i;
        if (got) {
          long double g = hd_elem(rdt, got, k);
          long double w = want[j], tol = 0;
          if (is_float) {
            if (!is_half(rdt))
              w = rdt == KILN_F32 ? (long double)(float)w : (long double)(double)w;
            if (c->op == KILN_SCAN_LOGCUMSUMEXP)
              tol = 4 * eps * (1 + fabsl(w)) * (long double)(j + 1 < 256 ? j + 1 : 256);
            else if (c->gen == GEN_RANDOM)
              tol = (long double)(j + 1) * eps * sa[j];
            /* f16/bf16: exact data (f32 sums exact) must give the reference rounded once;
             * otherwise the f32 bound plus that rounding. Lines split into chunks round
             * each chunk's running value too before the fixup adds its prefix: one more
             * half ulp, of at most sum |x_j|. */
            if (is_half(rdt) && c->op != KILN_SCAN_CUMMIN && c->op != KILN_SCAN_CUMMAX &&
                isfinite(w)) {
              if (tol == 0 && !split)
                w = round_half(rdt, w);
              else
                tol += half_ulp(rdt, w) + (split ? half_ulp(rdt, sa[j]) : 0);
            }
          }
          int cum_arg = c->op == KILN_SCAN_CUMMIN || c->op == KILN_SCAN_CUMMAX;
          EXPECT(is_float ? matches(g, w, tol) : (int64_t)g == (cum_arg ? (int64_t)w : wi[j]),
                 "%s: out[%llu] (line %llu,%llu pos %llu) = %.17Lg, expected %.17Lg", what,
                 (unsigned long long)k, (unsigned long long)o, (unsigned long long)i,
                 (unsigned long long)j, g, w);
        }
        if (goti) {
          int64_t gi = ((const int64_t *)goti)[k];
          EXPECT(gi == wi[j], "%s: index[%llu] (pos %llu) = %lld, expected %lld", what,
                 (unsigned long long)k, (unsigned long long)j, (long long)gi, (long long)wi[j]);
        }
      }
    }
  }
  free(line);
  free(want);
  free(sa);
  free(wi);
  free(got);
  free(goti);
  if (y != x)
    kiln_tensor_release(y);
  kiln_tensor_release(yi);
  kiln_tensor_release(x);
  hd_host_free(&h);
}

static struct scase
mk(kiln_scan_op op, kiln_dtype dt, size_t ndim, const int64_t *shape, int64_t axis)
{
  struct scase c;
  memset(&c, 0, sizeof c);
  c.op = op;
  c.dt = dt;
  c.ndim = ndim;
  memcpy(c.shape, shape, ndim * sizeof *shape);
  c.axis = axis;
  c.gen = op == KILN_SCAN_CUMPROD ? GEN_PM : GEN_DYADIC;
  return c;
}

static const kiln_dtype all_dtypes[] = {KILN_F32, KILN_F64,  KILN_I32, KILN_I64,
                                        KILN_U8,  KILN_BOOL, KILN_F16, KILN_BF16};
#define NDTYPES (sizeof all_dtypes / sizeof all_dtypes[0])

/* Every op and dtype, inclusive and exclusive, along every axis. */
START_TEST(test_ops_dtypes)
{
  kiln_dtype dt = all_dtypes[_i];
  if (dt == KILN_F64 && !harness_has_fp64())
    return;
  static const int64_t lens[] = {1, 7, 1000};
  const int64_t m[2] = {13, 37}, t3[3] = {3, 5, 7};
  for (int op = 0; op < KILN_SCAN_OP_COUNT; op++) {
    if (!kiln_scan_op_supports((kiln_scan_op)op, dt))
      continue;
    for (int excl = 0; excl < 2; excl++) {
      if (harness_small() && excl != op % 2) /* the small mode: one form per op, alternating */
        continue;
      for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        struct scase c = mk((kiln_scan_op)op, dt, 1, &lens[li], 0);
        c.opts.exclusive = excl;
        run_case(&c, NULL, (uint64_t)op * 10 + li);
      }
      for (int64_t ax = -1; ax < 2; ax++) {
        struct scase c = mk((kiln_scan_op)op, dt, 2, m, ax);
        c.opts.exclusive = excl;
        run_case(&c, NULL, (uint64_t)op * 10 + (uint64_t)(ax + 5));
      }
      for (int64_t ax = 0; ax < 3; ax++) {
        struct scase c = mk((kiln_scan_op)op, dt, 3, t3, ax);
        c.opts.exclusive = excl;
        c.indexed = op == KILN_SCAN_CUMMIN || op == KILN_SCAN_CUMMAX;
        c.want_values = (int)ax != 1;
        run_case(&c, NULL, (uint64_t)op * 10 + (uint64_t)ax);
      }
    }
  }
}
END_TEST

/* NaN and +-inf under both policies (all-NaN lines included), values and indices. */
START_TEST(test_nan_policies)
{
  kiln_dtype dt = _i ? KILN_F64 : KILN_F32;
  if (dt == KILN_F64 && !harness_has_fp64())
    return;
  const int64_t shape[2] = {6, 9};
  for (int op = 0; op < KILN_SCAN_OP_COUNT; op++)
    for (int pol = 0; pol < 2; pol++)
      for (int excl = 0; excl < 2; excl++)
        for (int64_t ax = 0; ax < 2; ax++)
          for (int g = harness_small(); g < 2; g++) { /* small mode: GEN_NANROW only */
            struct scase c = mk((kiln_scan_op)op, dt, 2, shape, ax);
            c.gen = g ? GEN_NANROW : GEN_SPECIAL;
            c.opts.nan_policy = pol ? KILN_NAN_OMIT : KILN_NAN_PROPAGATE;
            c.opts.exclusive = excl;
            run_case(&c, NULL, (uint64_t)(op * 16 + pol * 8 + excl * 4 + ax * 2 + g));
            if (op == KILN_SCAN_CUMMIN || op == KILN_SCAN_CUMMAX) {
              c.indexed = 1;
              c.want_values = 1;
              run_case(&c, NULL, (uint64_t)(op * 16 + pol * 8 + excl * 4 + ax * 2 + g));
            }
          }
}
END_TEST

/* cummin/cummax indices: first occurrence on ties, -1 before anything was scanned. */
START_TEST(test_indexed_ties)
{
  static const kiln_dtype dts[] = {KILN_F32, KILN_I32, KILN_U8, KILN_BOOL};
  const int64_t v[1] = {1000}, m[2] = {harness_size(37, 7), 129};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
    for (int op = KILN_SCAN_CUMMIN; op <= KILN_SCAN_CUMMAX; op++)
      for (int excl = 0; excl < 2; excl++) {
        struct scase c = mk((kiln_scan_op)op, dts[d], 1, v, 0);
        c.gen = GEN_TIES;
        c.indexed = 1;
        c.want_values = excl;
        c.opts.exclusive = excl;
        run_case(&c, NULL, d * 4 + (uint64_t)op);
        for (int64_t ax = 0; ax < 2; ax++) {
          struct scase mm = mk((kiln_scan_op)op, dts[d], 2, m, ax);
          mm.gen = GEN_TIES;
          mm.indexed = 1;
          mm.want_values = 1;
          mm.opts.exclusive = excl;
          run_case(&mm, NULL, d * 4 + (uint64_t)op + (uint64_t)ax);
        }
      }
}
END_TEST

/*
 * Exclusive cummin/cummax of bool (issue 14): the empty prefix is bool's true/false, not
 * u8's 255/0; NumPy's np.minimum.accumulate of [1, 1, 0] shifted in from the identity.
 */
START_TEST(test_bool_exclusive)
{
  kiln_context *ctx = harness_ctx();
  const uint8_t in[3] = {1, 0, 1};
  const uint8_t want_min[3] = {1, 1, 0}, want_max[3] = {0, 1, 1};
  const int64_t want_imin[3] = {-1, 0, 1}, want_imax[3] = {-1, 0, 0};
  int64_t n = 3;
  kiln_tensor *x = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_BOOL, 1, &n, in, &x));
  kiln_scan_options o = {0};
  o.exclusive = 1;
  for (int op = KILN_SCAN_CUMMIN; op <= KILN_SCAN_CUMMAX; op++) {
    int is_min = op == KILN_SCAN_CUMMIN;
    kiln_tensor *y = NULL, *v = NULL, *yi = NULL;
    uint8_t got[3], gotv[3];
    int64_t goti[3];
    KOK(kiln_scan(ctx, (kiln_scan_op)op, x, 0, &o, &y));
    KOK(kiln_tensor_download(y, got, sizeof got));
    KOK(kiln_scan_indexed(ctx, (kiln_scan_op)op, x, 0, &o, &v, &yi));
    KOK(kiln_tensor_download(v, gotv, sizeof gotv));
    KOK(kiln_tensor_download(yi, goti, sizeof goti));
    for (int j = 0; j < 3; j++) {
      uint8_t w = is_min ? want_min[j] : want_max[j];
      int64_t wi = is_min ? want_imin[j] : want_imax[j];
      ck_assert_msg(got[j] == w && gotv[j] == w && goti[j] == wi,
                    "exclusive %s of bool [1,0,1]: out[%d] = %u (indexed %u, index %lld), "
                    "expected %u (index %lld)",
                    kiln_scan_op_name((kiln_scan_op)op), j, got[j], gotv[j], (long long)goti[j], w,
                    (long long)wi);
    }
    kiln_tensor_release(y);
    kiln_tensor_release(v);
    kiln_tensor_release(yi);
  }
  kiln_tensor_release(x);
}
END_TEST

/* Long lines: tiled work-group scans split across groups; one 2^24 + 3 element cumsum. */
START_TEST(test_long)
{
  const int64_t n1[1] = {harness_size(100003, 1301)}, big[1] = {(1 << 24) + 3};
  const int64_t tall[2] = {harness_size(4099, 401), 3};
  static const kiln_scan_op ops[] = {KILN_SCAN_CUMSUM, KILN_SCAN_CUMMAX, KILN_SCAN_LOGCUMSUMEXP,
                                     KILN_SCAN_CUMPROD};
  for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
    for (int excl = 0; excl < 2; excl++) {
      struct scase c = mk(ops[oi], KILN_F32, 1, n1, 0);
      c.opts.exclusive = excl;
      c.indexed = ops[oi] == KILN_SCAN_CUMMAX;
      c.want_values = 1;
      run_case(&c, NULL, oi * 2 + (uint64_t)excl);
      struct scase t = mk(ops[oi], KILN_F32, 2, tall, 0);
      t.opts.exclusive = excl;
      run_case(&t, NULL, oi * 2 + (uint64_t)excl + 7);
    }
  }
  struct scase ci = mk(KILN_SCAN_CUMSUM, KILN_I32, 1, n1, 0);
  run_case(&ci, NULL, 3);
  struct scase cl = mk(KILN_SCAN_CUMSUM, KILN_I64, 1, n1, 0);
  cl.opts.exclusive = 1;
  run_case(&cl, NULL, 4);
  struct scase cb = mk(KILN_SCAN_CUMSUM, KILN_F32, 1, big, 0);
  run_case(&cb, NULL, 5);
}
END_TEST

static void complex_scan(kiln_dtype dt, kiln_scan_op op, size_t ndim, const int64_t *shape,
                         int64_t axis, int excl, int nan, uint64_t seed,
                         const kiln__launch_params *lp);

/* One op of test_single_pass (below) under lp. */
static void
single_pass_op(kiln_dtype dt, kiln_scan_op op, const kiln__launch_params *lp, const int64_t *lens,
               size_t nlens, const int64_t *rows, const int64_t *cols)
{
  if (!kiln_scan_op_supports(op, dt))
    return;
  int cummax_dt = dt == KILN_F32 || dt == KILN_I64 || dt == KILN_U8;
  if (op != KILN_SCAN_CUMSUM && dt != KILN_F32 && dt != KILN_C64 && dt != KILN_C128 &&
      !(op == KILN_SCAN_CUMMAX && cummax_dt))
    return;
  for (int excl = 0; excl < 2; excl++) {
    if (dt == KILN_C64 || dt == KILN_C128) {
      for (size_t li = 0; li < nlens; li++)
        complex_scan(dt, op, 1, &lens[li], 0, excl, 0, li, lp);
      complex_scan(dt, op, 2, rows, 1, excl, excl * 2, 30, lp);
      continue;
    }
    for (size_t li = 0; li < nlens; li++) {
      struct scase c = mk(op, dt, 1, &lens[li], 0);
      c.opts.exclusive = excl;
      c.indexed = (op == KILN_SCAN_CUMMIN || op == KILN_SCAN_CUMMAX) && li % 2;
      c.want_values = excl;
      run_case(&c, lp, (uint64_t)op * 10 + li);
    }
    struct scase r = mk(op, dt, 2, rows, 1);
    r.opts.exclusive = excl;
    if (is_fl(dt) && excl) {
      r.gen = GEN_NANROW;
      r.opts.nan_policy = KILN_NAN_OMIT;
    }
    run_case(&r, lp, (uint64_t)op * 10 + 7);
    /* The small mode: column scans once (single_pass 1), their kernel is the same for all. */
    if (dt == KILN_F32 && !(harness_small() && lp->single_pass != 1)) {
      struct scase c = mk(op, dt, 2, cols, 0);
      c.opts.exclusive = excl;
      run_case(&c, lp, (uint64_t)op * 10 + 8);
    }
  }
}

/*
 * The single-pass scans (NAME_lookback, single_pass 1, and NAME_chain, 2), forced on
 * whatever the device's default, inclusive
 * and exclusive, NaN omitted, on lines of 1, 2, primes, 2^k - 1 and 2^k + 1 elements, one
 * line (the whole tensor) and several (rows), in 4-item groups (tiles of 4 E elements, so
 * the longer lines take dozens of tiles): cumsum of every dtype (staged outputs; every
 * state type: f32, f64, i64 sums of the integers, f32 of f16/bf16, complex), cummax (stored
 * directly; (value, index) pairs of 1-, 4- and 8-byte values) of u8, f32 and i64, complex
 * cumprod, and every op of f32 (each (op, dtype) is a kernel build: seconds on PoCL), each
 * with single_pass 1, 2 and 3 (the tile prefixes computed beforehand; CPU devices: 2 and 3
 * for f32, f64, i32, f16 and c64 only). Column scans keep the line kernel whatever
 * single_pass says.
 */
START_TEST(test_single_pass)
{
  kiln_context *ctx = harness_ctx();
  kiln_dtype dt = _i < (int)NDTYPES ? all_dtypes[_i] : _i == (int)NDTYPES ? KILN_C64 : KILN_C128;
  if ((dt == KILN_F64 || dt == KILN_C128) && !harness_has_fp64())
    return;
  kiln__launch_params lp;
  kiln__launch_params_default(ctx, KILN__LAUNCH_SCAN, &lp);
  lp.two_pass_min = 1;
  lp.wg_size = 4;
  static const int64_t lens[] = {1, 2, 1009, 4097};
  const int64_t rows[2] = {3, 1023}, cols[2] = {257, 3};
  /* The small mode: 1009 already takes dozens of tiles and 7 chunks (4097 on PoCL only). */
  size_t nlens = sizeof lens / sizeof lens[0] - (harness_small() ? 1 : 0);
  /* single_pass 1 (tiles) and 2 (chunks of 3 tiles of f32, 5 of f64: 40 elements per item
   * rounded up to whole tiles; the 4097-element line is 22 f32 chunks, its last tile short). */
  /* CPU devices (a work-group function build per kernel, slow for these barrier loops) and
   * the simulator (small mode) run NAME_chain and the tile prefixes for one dtype of each
   * state kind: f32 (every op), f64, i32 (i64 sums), f16 (f32 states of halves) and c64. */
  kiln_device_info info;
  KOK(kiln_context_device_info(ctx, &info));
  int chain = (info.is_gpu && !harness_small()) || dt == KILN_F32 || dt == KILN_F64 ||
              dt == KILN_I32 || dt == KILN_F16 || dt == KILN_C64;
  for (int sp = 1; sp <= 3; sp++) {
    if (sp > 1 && !chain)
      continue;
    lp.single_pass = (uint32_t)sp;
    lp.items_per_thread = sp == 2 ? 40 : 4;
    for (int op = 0; op < KILN_SCAN_OP_COUNT; op++)
      single_pass_op(dt, (kiln_scan_op)op, &lp, lens, nlens, rows, cols);
  }
}
END_TEST

/*
 * Adversarial scheduling for the look-back, over tiles (single_pass 1) and over chunks of
 * one tile taken by as many groups as compute units (single_pass 2), and the same tiles
 * with their prefixes computed beforehand (single_pass 3: on GPUs 65537 tile folds in five
 * blocks of NAME_tileblk, on CPU devices 313 in 20, whose folds NAME_tilepre scans in two
 * blocks there): groups of 1, 2 and 3
 * items (tiles of E to 3 E elements, most waiting on predecessors still running), 32, 256
 * and the device's largest (CPU devices: 1, 3 and 32, chunks in groups of 3);
 * one long line and many lines of several tiles. f32 and f64 cumsum, cummax with indices,
 * logcumsumexp. GPUs take 2^20 + 3 elements (65537 tiles of one item) and 37 lines of
 * 12289; CPU devices a few dozen tiles per line, since there a waiting group spins on a
 * core that the group it waits for may need (slow where cores are oversubscribed, as on a
 * CI machine running several suites; correct all the same).
 */
START_TEST(test_single_pass_stress)
{
  kiln_context *ctx = harness_ctx();
  kiln_device_info info;
  KOK(kiln_context_device_info(ctx, &info));
  uint32_t wgs[] = {1, 3, 32, 2, 256, (uint32_t)info.max_work_group_size};
  int gpu = info.is_gpu && !harness_small();
  const int64_t line[1] = {gpu ? (1 << 20) + 3 : 1031};
  const int64_t many[2] = {gpu ? 37 : 5, gpu ? 12289 : 257};
  for (size_t w = 0; w < sizeof wgs / sizeof wgs[0]; w++) {
    /* CPU devices: PoCL compiles a kernel once more for each new local size. */
    if (wgs[w] > info.max_work_group_size || (!gpu && w > 2))
      continue;
    kiln__launch_params lp;
    kiln__launch_params_default(ctx, KILN__LAUNCH_SCAN, &lp);
    lp.two_pass_min = 1;
    lp.wg_size = wgs[w];
    /* k 0-3: tiles (single_pass 1); 4-7: chunks of one tile (items_per_thread 1), one
     * group per compute unit, so groups loop over many chunks holding their next id;
     * 8-11: tiles with their prefixes given (single_pass 3). */
    for (int k = 0; k < 12; k++) {
      /* CPU devices: each (kernel, local size) is a work-group function build of its own. */
      if (!gpu && ((w > 0 && k % 2) || (k >= 4 && k < 8 && w != 1) || (k >= 8 && w != 0)))
        continue;
      lp.single_pass = (uint32_t)(k / 4 + 1);
      lp.items_per_thread = 1;
      lp.groups_per_cu = k / 4 == 1 ? 1 : 8;
      kiln_dtype dt = k % 4 == 1 && harness_has_fp64() ? KILN_F64 : KILN_F32;
      kiln_scan_op op = k % 4 == 2   ? KILN_SCAN_CUMMAX
                        : k % 4 == 3 ? KILN_SCAN_LOGCUMSUMEXP
                                     : KILN_SCAN_CUMSUM;
      /* single_pass 3 on CPU devices: 313 tiles of one item, 20 blocks of NAME_tileblk (16
       * tiles each, groups of 1) and NAME_tilepre's two blocks of their folds. */
      const int64_t line3[1] = {5003};
      struct scase c = mk(op, dt, 1, !gpu && k >= 8 ? line3 : line, 0);
      c.opts.exclusive = (int)(w + (size_t)k) % 2;
      c.indexed = op == KILN_SCAN_CUMMAX;
      c.want_values = 1;
      c.gen = op == KILN_SCAN_CUMMAX ? GEN_TIES : GEN_DYADIC;
      run_case(&c, &lp, w * 10 + (uint64_t)k);
      if (k % 2 == 0) {
        struct scase m = mk(op, dt, 2, many, 1);
        m.gen = c.gen;
        run_case(&m, &lp, w * 10 + (uint64_t)k + 5);
      }
    }
  }
}
END_TEST

/* Every strategy at work-group sizes 64, 128, 256 and the device maximum, split forced on
 * (at every size) and off (at 64 and the maximum). */
START_TEST(test_tunables)
{
  kiln_context *ctx = harness_ctx();
  kiln_device_info info;
  KOK(kiln_context_device_info(ctx, &info));
  uint32_t wgs[4] = {64, 128, 256, (uint32_t)info.max_work_group_size};
  const int64_t v[1] = {1000}, m1[2] = {harness_size(37, 7), 129};
  const int64_t m2[2] = {3, harness_size(3001, 401)};
  static const kiln_scan_op ops[] = {KILN_SCAN_CUMSUM, KILN_SCAN_CUMMAX, KILN_SCAN_LOGCUMSUMEXP};
  for (size_t w = 0; w < 4; w++) {
    /* The small mode: work-groups of 64, the most groups for its small inputs. */
    if (wgs[w] > info.max_work_group_size || (harness_small() && w != 0))
      continue;
    for (int mode = 0; mode < 3; mode++) {
      /* The unsplit line kernel (mode 0) at the smallest and the largest groups only: each
       * (kernel, local size) is a work-group function build on PoCL. */
      if (mode == 0 && (w == 1 || w == 2))
        continue;
      kiln__launch_params lp;
      kiln__launch_params_default(ctx, KILN__LAUNCH_SCAN, &lp);
      lp.wg_size = wgs[w];
      lp.two_pass_min = mode == 0 ? UINT64_MAX : 1;
      lp.items_per_thread = mode == 2 ? 3 : 1;
      lp.groups_per_cu = mode == 2 ? 3 : 8;
      lp.cols_per_item = mode == 0 ? 16 : mode == 1 ? 1 : 5;
      for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
        for (int excl = 0; excl < 2; excl++) {
          struct scase c = mk(ops[oi], KILN_F32, 1, v, 0);
          c.opts.exclusive = excl;
          c.indexed = ops[oi] == KILN_SCAN_CUMMAX;
          c.want_values = excl;
          c.gen = ops[oi] == KILN_SCAN_CUMMAX ? GEN_TIES : GEN_DYADIC;
          run_case(&c, &lp, w * 100 + (uint64_t)mode * 10 + oi);
          for (int64_t ax = 0; ax < 2; ax++) {
            /* The device maximum (4096 on PoCL, where a column fixup runs a whole group per
             * column and chunk: seconds a case) takes m1 inclusive and m2 exclusive. */
            /* The small mode likewise: inclusive on m1, exclusive on m2, both along each axis. */
            if ((w != 3 && !harness_small()) || !excl) {
              struct scase a = mk(ops[oi], KILN_F32, 2, m1, ax);
              a.opts.exclusive = excl;
              a.gen = c.gen;
              run_case(&a, &lp, w * 100 + (uint64_t)mode * 10 + oi + 1);
            }
            if ((w != 3 && !harness_small()) || excl) {
              struct scase b = mk(ops[oi], KILN_F32, 2, m2, ax);
              b.opts.exclusive = excl;
              b.indexed = c.indexed;
              b.want_values = 1;
              run_case(&b, &lp, w * 100 + (uint64_t)mode * 10 + oi + 2);
            }
          }
        }
      }
      /* bool: the empty prefix of an exclusive cummin is true, in every chunk and fixup. */
      for (int op = KILN_SCAN_CUMMIN; op <= KILN_SCAN_CUMMAX; op++) {
        struct scase c = mk((kiln_scan_op)op, KILN_BOOL, 1, v, 0);
        c.opts.exclusive = 1;
        run_case(&c, &lp, w * 100 + (uint64_t)mode * 10 + 7);
        c.indexed = c.want_values = 1;
        run_case(&c, &lp, w * 100 + (uint64_t)mode * 10 + 8);
        for (int64_t ax = 0; ax < 2; ax++) {
          /* The device maximum: columns of cummin, rows of cummax (as above). */
          if (w == 3 && ax != op - KILN_SCAN_CUMMIN)
            continue;
          struct scase b = mk((kiln_scan_op)op, KILN_BOOL, 2, m2, ax);
          b.opts.exclusive = 1;
          run_case(&b, &lp, w * 100 + (uint64_t)mode * 10 + 9);
        }
      }
    }
  }
}
END_TEST

/* Rounding on general data: within the sequential-sum bound, for the default strategies. */
START_TEST(test_random_sums)
{
  const int64_t v[1] = {harness_size(50021, 1009)}, m[2] = {harness_size(3001, 151), 7};
  for (int d = 0; d < (harness_has_fp64() ? 2 : 1); d++) {
    kiln_dtype dt = d ? KILN_F64 : KILN_F32;
    struct scase c = mk(KILN_SCAN_CUMSUM, dt, 1, v, 0);
    c.gen = GEN_RANDOM;
    run_case(&c, NULL, 1);
    struct scase c2 = mk(KILN_SCAN_CUMSUM, dt, 2, m, 0);
    c2.gen = GEN_RANDOM;
    run_case(&c2, NULL, 2);
  }
}
END_TEST

/* In place (*out == x), empty tensors, and the output convention with a given tensor. */
START_TEST(test_in_place_and_empty)
{
  kiln_context *ctx = harness_ctx();
  const int64_t m[2] = {17, 33};
  for (int op = 0; op < KILN_SCAN_OP_COUNT; op++) {
    struct scase c = mk((kiln_scan_op)op, KILN_F32, 2, m, 1);
    c.in_place = 1;
    run_case(&c, NULL, (uint64_t)op);
  }
  const int64_t e[2] = {0, 5};
  kiln_tensor *x = NULL, *y = NULL, *yi = NULL;
  KOK(kiln_tensor_create(ctx, KILN_I32, 2, e, &x));
  KOK(kiln_scan(ctx, KILN_SCAN_CUMSUM, x, 1, NULL, &y));
  ck_assert_int_eq(kiln_tensor_dtype(y), KILN_I64);
  ck_assert_uint_eq(kiln_tensor_numel(y), 0);
  KOK(kiln_scan_indexed(ctx, KILN_SCAN_CUMMAX, x, 0, NULL, NULL, &yi));
  ck_assert_uint_eq(kiln_tensor_numel(yi), 0);
  kiln_tensor_release(y);
  kiln_tensor_release(yi);
  kiln_tensor_release(x);
  /* A given output of the right shape and dtype is written. */
  int32_t h[6] = {1, 2, 3, 4, 5, 6};
  int64_t n = 6, want[6] = {1, 3, 6, 10, 15, 21}, got[6];
  x = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_I32, 1, &n, h, &x));
  KOK(kiln_tensor_create(ctx, KILN_I64, 1, &n, &y));
  kiln_tensor *y0 = y;
  KOK(kiln_scan(ctx, KILN_SCAN_CUMSUM, x, 0, NULL, &y));
  ck_assert_ptr_eq(y, y0);
  KOK(kiln_tensor_download(y, got, sizeof got));
  ck_assert_mem_eq(got, want, sizeof want);
  kiln_tensor_release(y);
  kiln_tensor_release(x);
}
END_TEST

START_TEST(test_bad_inputs)
{
  kiln_context *ctx = harness_ctx();
  const int64_t shape[2] = {4, 5};
  kiln_tensor *x = NULL, *xi = NULL, *dead = NULL, *y = NULL, *yi = NULL, *z0 = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, shape, &x));
  KOK(kiln_tensor_zeros(ctx, KILN_I32, 2, shape, &xi));
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, shape, &dead));
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 0, NULL, &z0));
  KOK(kiln_tensor_release(dead));
  KEXPECT(kiln_scan(ctx, KILN_SCAN_CUMSUM, x, 2, NULL, &y), KILN_ERR_SHAPE);
  KEXPECT(kiln_scan(ctx, KILN_SCAN_CUMSUM, x, -3, NULL, &y), KILN_ERR_SHAPE);
  KEXPECT(kiln_scan(ctx, KILN_SCAN_CUMSUM, z0, 0, NULL, &y), KILN_ERR_SHAPE);
  KEXPECT(kiln_scan(NULL, KILN_SCAN_CUMSUM, x, 0, NULL, &y), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_scan(ctx, KILN_SCAN_CUMSUM, NULL, 0, NULL, &y), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_scan(ctx, KILN_SCAN_CUMSUM, dead, 0, NULL, &y), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_scan(ctx, KILN_SCAN_CUMSUM, x, 0, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_scan(ctx, KILN_SCAN_OP_COUNT, x, 0, NULL, &y), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_scan(ctx, KILN_SCAN_LOGCUMSUMEXP, xi, 0, NULL, &y), KILN_ERR_DTYPE);
  kiln_scan_options o = {0};
  o.nan_policy = (kiln_nan_policy)3;
  KEXPECT(kiln_scan(ctx, KILN_SCAN_CUMSUM, x, 0, &o, &y), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_scan_indexed(ctx, KILN_SCAN_CUMSUM, x, 0, NULL, NULL, &yi),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_scan_indexed(ctx, KILN_SCAN_CUMMAX, x, 0, NULL, NULL, NULL),
          KILN_ERR_INVALID_ARGUMENT);
  /* cumsum of i32 is i64: an i32 output is the wrong dtype; a wrong shape is refused. */
  KEXPECT(kiln_scan(ctx, KILN_SCAN_CUMSUM, xi, 0, NULL, &xi), KILN_ERR_DTYPE);
  kiln_tensor *wrong = NULL;
  KOK(kiln_tensor_create(ctx, KILN_F32, 1, shape, &wrong));
  KEXPECT(kiln_scan(ctx, KILN_SCAN_CUMMAX, x, 0, NULL, &wrong), KILN_ERR_SHAPE);
  /* A rejected values output releases the indices kiln made. */
  KEXPECT(kiln_scan_indexed(ctx, KILN_SCAN_CUMMAX, x, 0, NULL, &wrong, &yi), KILN_ERR_SHAPE);
  ck_assert_ptr_null(yi);
  ck_assert_ptr_null(y);
  kiln_dtype rd;
  KOK(kiln_scan_result_dtype(ctx, KILN_SCAN_CUMPROD, KILN_BOOL, &rd));
  ck_assert_int_eq(rd, KILN_I64);
  KOK(kiln_scan_result_dtype(ctx, KILN_SCAN_CUMMIN, KILN_U8, &rd));
  ck_assert_int_eq(rd, KILN_U8);
  KEXPECT(kiln_scan_result_dtype(ctx, KILN_SCAN_LOGCUMSUMEXP, KILN_I64, &rd), KILN_ERR_DTYPE);
  ck_assert_str_eq(kiln_scan_op_name(KILN_SCAN_LOGCUMSUMEXP), "logcumsumexp");
  /* diff */
  KEXPECT(kiln_diff(ctx, x, 0, -1, &y), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_diff(ctx, x, 5, 1, &y), KILN_ERR_SHAPE);
  KEXPECT(kiln_diff(ctx, dead, 0, 1, &y), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_diff(ctx, x, 0, 1, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_diff(ctx, x, 0, 1, &wrong), KILN_ERR_SHAPE);
  kiln__launch_params lp;
  kiln__launch_params_default(ctx, KILN__LAUNCH_SCAN, &lp);
  lp.items_per_thread = 0;
  KEXPECT(kiln__scan_tuned(ctx, KILN_SCAN_CUMSUM, x, 0, NULL, &lp, &y), KILN_ERR_INVALID_ARGUMENT);
  kiln_tensor_release(wrong);
  kiln_tensor_release(x);
  kiln_tensor_release(xi);
  kiln_tensor_release(z0);
}
END_TEST

/* diff of every dtype, orders 0..len+2, along every axis, against repeated host differences. */
START_TEST(test_diff)
{
  kiln_context *ctx = harness_ctx();
  const int64_t shape[3] = {4, 6, 5};
  for (size_t d = 0; d < NDTYPES; d++) {
    kiln_dtype dt = all_dtypes[d];
    if (dt == KILN_F64 && !harness_has_fp64())
      continue;
    struct hd_host h;
    host_make(&h, dt, 120, GEN_DYADIC, d);
    if (dt == KILN_I32) { /* wrap-around: INT_MIN - 1 */
      hd_host_set(&h, 0, INT32_MIN);
      hd_host_set(&h, 5, 1);
    }
    kiln_tensor *x = NULL;
    KOK(kiln_tensor_from_host(ctx, dt, 3, shape, h.raw, &x));
    for (int64_t ax = -1; ax < 3; ax++) {
      size_t a = (size_t)(ax < 0 ? ax + 3 : ax);
      for (int64_t order = 0; order <= shape[a] + 2; order++) {
        kiln_tensor *y = NULL;
        KOK(kiln_diff(ctx, x, ax, order, &y));
        int64_t len = shape[a] - (order < shape[a] ? order : shape[a]);
        for (size_t k = 0; k < 3; k++)
          ck_assert_int_eq(kiln_tensor_dim(y, k), k == a ? len : shape[k]);
        ck_assert_int_eq(kiln_tensor_dtype(y), dt);
        unsigned char *got = malloc(120 * 8);
        KOK(kiln_tensor_download(y, got, kiln_tensor_nbytes(y)));
        hd_expect_bool01(dt, got, kiln_tensor_numel(y), "diff");
        /* Host: repeated first differences in the dtype's arithmetic. */
        uint64_t outer = 1, inner = 1, L = (uint64_t)shape[a];
        for (size_t k = 0; k < a; k++)
          outer *= (uint64_t)shape[k];
        for (size_t k = a + 1; k < 3; k++)
          inner *= (uint64_t)shape[k];
        for (uint64_t o = 0; o < outer; o++)
          for (uint64_t i = 0; i < inner; i++) {
            long double w[8];
            for (uint64_t j = 0; j < L; j++)
              w[j] = h.v[(o * L + j) * inner + i];
            for (int64_t p = 0; p < order && p < (int64_t)L; p++)
              for (uint64_t j = 0; j + 1 + (uint64_t)p < L; j++) {
                long double dv = w[j + 1] - w[j];
                if (dt == KILN_BOOL)
                  dv = w[j + 1] != w[j];
                else if (dt == KILN_U8)
                  dv = (long double)(uint8_t)(int)dv;
                else if (dt == KILN_I32)
                  dv = (long double)(int32_t)(uint32_t)(int64_t)dv;
                else if (dt == KILN_F32)
                  dv = (float)dv;
                w[j] = dv;
              }
            for (int64_t j = 0; j < len; j++) {
              uint64_t k = (o * (uint64_t)len + (uint64_t)j) * inner + i;
              long double g = hd_elem(dt, got, k);
              EXPECT(g == w[j], "diff %s axis %lld order %lld: out[%llu] = %Lg, expected %Lg",
                     kiln_dtype_name(dt), (long long)ax, (long long)order, (unsigned long long)k, g,
                     w[j]);
            }
          }
        free(got);
        kiln_tensor_release(y);
      }
    }
    kiln_tensor_release(x);
    hd_host_free(&h);
  }
  /* Empty input along the axis, and a long axis (one launch per order). */
  const int64_t e[2] = {3, 0};
  kiln_tensor *x = NULL, *y = NULL;
  KOK(kiln_tensor_create(ctx, KILN_F32, 2, e, &x));
  KOK(kiln_diff(ctx, x, 1, 2, &y));
  ck_assert_int_eq(kiln_tensor_dim(y, 1), 0);
  kiln_tensor_release(y);
  kiln_tensor_release(x);
}
END_TEST

/*
 * Aliasing: outputs one element before or after x (scan, indexed scan,
 * diff including its n = 0 copy) give the values of a separate output;
 * indexed outputs overlapping each other are refused with every byte left alone.
 */
START_TEST(test_overlap)
{
  kiln_context *ctx = harness_ctx();
  enum { N = 3001 };
  const int64_t n = N;
  float *hx = malloc(N * sizeof *hx);
  for (int i = 0; i < N; i++)
    hx[i] = (float)((i * 5) % 17) - 8.0f; /* small integers: prefix sums are exact */
  for (int out_first = 1; out_first >= 0; out_first--) {
    const char *where = out_first ? "before" : "after";
    kiln_tensor *x, *y;
    harness_overlap_pair(KILN_F32, 1, &n, hx, KILN_F32, 1, &n, 4, out_first, &x, &y, NULL);
    KOK(kiln_scan(ctx, KILN_SCAN_CUMSUM, x, 0, NULL, &y));
    float *got = harness_download(y), acc = 0;
    for (int i = 0; i < N; i++) {
      acc += hx[i];
      ck_assert_msg(got[i] == acc, "cumsum, output %s x: [%d] = %g, expected %g", where, i,
                    (double)got[i], (double)acc);
    }
    free(got);
    kiln_tensor_release(x);
    kiln_tensor_release(y);

    harness_overlap_pair(KILN_F32, 1, &n, hx, KILN_I64, 1, &n, 8, out_first, &x, &y, NULL);
    KOK(kiln_scan_indexed(ctx, KILN_SCAN_CUMMAX, x, 0, NULL, NULL, &y));
    int64_t *gi = harness_download(y), best = 0;
    for (int i = 0; i < N; i++) {
      if (hx[i] > hx[best])
        best = i;
      ck_assert_msg(gi[i] == best, "cummax indices, output %s x: [%d] = %lld, expected %lld", where,
                    i, (long long)gi[i], (long long)best);
    }
    free(gi);
    kiln_tensor_release(x);
    kiln_tensor_release(y);

    for (int64_t order = 0; order < 3; order++) {
      const int64_t dn = N - order;
      harness_overlap_pair(KILN_F32, 1, &n, hx, KILN_F32, 1, &dn, 4, out_first, &x, &y, NULL);
      KOK(kiln_diff(ctx, x, 0, order, &y));
      got = harness_download(y);
      for (int i = 0; i < dn; i++) {
        float want = order == 0   ? hx[i]
                     : order == 1 ? hx[i + 1] - hx[i]
                                  : (hx[i + 2] - hx[i + 1]) - (hx[i + 1] - hx[i]);
        ck_assert_msg(got[i] == want, "diff n=%lld, output %s x: [%d] = %g, expected %g",
                      (long long)order, where, i, (double)got[i], (double)want);
      }
      free(got);
      kiln_tensor_release(x);
      kiln_tensor_release(y);
    }

    kiln_tensor *xs = NULL, *vals, *idx, *all;
    KOK(kiln_tensor_from_host(ctx, KILN_F32, 1, &n, hx, &xs));
    harness_overlap_pair(KILN_F32, 1, &n, hx, KILN_I64, 1, &n, 8, out_first, &vals, &idx, &all);
    KEXPECT_REFUSED_UNTOUCHED(all,
                              kiln_scan_indexed(ctx, KILN_SCAN_CUMMAX, xs, 0, NULL, &vals, &idx));
    kiln_tensor_release(vals);
    kiln_tensor_release(idx);
    kiln_tensor_release(all);
    kiln_tensor_release(xs);
  }
  free(hx);
}
END_TEST

/*
 * Complex cumsum and cumprod (c64, c128), inclusive and exclusive, on data whose partial
 * results are exact in every order (parts k/8 for sums; 1, -1, i, -i and rarely 2 or 1/2
 * for products), so results must be exact: lines of 1, 7, 257 and 100003 elements (tiled,
 * split into chunks), both axes of a [13, 37] matrix; NaN (in either part) under both
 * policies; diff of complex; the ops without complex support.
 */
static void
complex_scan(kiln_dtype dt, kiln_scan_op op, size_t ndim, const int64_t *shape, int64_t axis,
             int excl, int nan, uint64_t seed, const kiln__launch_params *lp)
{
  kiln_context *ctx = harness_ctx();
  int c64 = dt == KILN_C64;
  uint64_t n = 1;
  for (size_t d = 0; d < ndim; d++)
    n *= (uint64_t)shape[d];
  rng_state = seed * 2654435761u + 0x9e3779b97f4a7c15ull;
  long double *re = malloc((n + 1) * sizeof *re), *im = malloc((n + 1) * sizeof *im);
  void *raw = malloc((n + 1) * 16 + 16), *got = malloc((n + 1) * 16 + 16);
  ck_assert(re && im && raw && got);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = rnd();
    long double a, b;
    if (op == KILN_SCAN_CUMPROD) {
      static const long double units[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
      long double s = r % 100 == 7 ? ((r & 256) ? 2 : 0.5) : 1;
      a = units[(r >> 3) & 3][0] * s;
      b = units[(r >> 3) & 3][1] * s;
    } else {
      a = (long double)((int64_t)(r % 33) - 16) / 8;
      b = (long double)((int64_t)((r >> 8) % 33) - 16) / 8;
    }
    if (nan && r % 17 == 3)
      *((r & 64) ? &a : &b) = NAN;
    re[i] = a;
    im[i] = b;
    if (c64) {
      ((float *)raw)[2 * i] = (float)a;
      ((float *)raw)[2 * i + 1] = (float)b;
    } else {
      ((double *)raw)[2 * i] = (double)a;
      ((double *)raw)[2 * i + 1] = (double)b;
    }
  }
  kiln_tensor *x = NULL, *y = NULL;
  KOK(kiln_tensor_from_host(ctx, dt, ndim, shape, raw, &x));
  kiln_scan_options o;
  memset(&o, 0, sizeof o);
  o.exclusive = excl;
  o.nan_policy = nan > 1 ? KILN_NAN_OMIT : KILN_NAN_PROPAGATE;
  char what[160];
  snprintf(what, sizeof what, "%s %s n %llu axis %lld excl %d nan %d", kiln_scan_op_name(op),
           kiln_dtype_name(dt), (unsigned long long)n, (long long)axis, excl, nan);
  kiln_status s = kiln__scan_tuned(ctx, op, x, axis, &o, lp, &y);
  ck_assert_msg(s == KILN_OK, "%s: %s", what, kiln_last_error());
  ck_assert_int_eq(kiln_tensor_dtype(y), dt);
  KOK(kiln_tensor_download(y, got, kiln_tensor_nbytes(y)));
  uint64_t outer = 1, len = (uint64_t)shape[axis], inner = 1;
  for (int64_t d = 0; d < axis; d++)
    outer *= (uint64_t)shape[d];
  for (size_t d = (size_t)axis + 1; d < ndim; d++)
    inner *= (uint64_t)shape[d];
  for (uint64_t oo = 0; oo < outer; oo++) {
    for (uint64_t ii = 0; ii < inner; ii++) {
      long double ar = op == KILN_SCAN_CUMPROD ? 1 : 0, ai = 0;
      for (uint64_t j = 0; j < len; j++) {
        uint64_t k = (oo * len + j) * inner + ii;
        long double br = ar, bi = ai, a = re[k], b = im[k];
        if (!(o.nan_policy == KILN_NAN_OMIT && (isnan_(a) || isnan_(b)))) {
          if (op == KILN_SCAN_CUMSUM) {
            ar += a;
            ai += b;
          } else {
            long double tr = ar * a - ai * b;
            ai = ar * b + ai * a;
            ar = tr;
          }
        }
        long double wr = excl ? br : ar, wi = excl ? bi : ai;
        long double gr = c64 ? ((float *)got)[2 * k] : ((double *)got)[2 * k];
        long double gi = c64 ? ((float *)got)[2 * k + 1] : ((double *)got)[2 * k + 1];
        if (isnan_(wr) || isnan_(wi)) /* a NaN part: the product's other part may be NaN too */
          EXPECT(isnan_(gr) || isnan_(gi), "%s: out[%llu] = (%Lg, %Lg), expected NaN", what,
                 (unsigned long long)k, gr, gi);
        else
          EXPECT(gr == wr && gi == wi,
                 "%s: out[%llu] = (%.17Lg, %.17Lg), expected (%.17Lg, %.17Lg)", what,
                 (unsigned long long)k, gr, gi, wr, wi);
      }
    }
  }
  free(re);
  free(im);
  free(raw);
  free(got);
  kiln_tensor_release(y);
  kiln_tensor_release(x);
}

START_TEST(test_complex)
{
  kiln_dtype dt = _i ? KILN_C128 : KILN_C64;
  if (dt == KILN_C128 && !harness_has_fp64())
    return;
  static const int64_t lens[] = {1, 7, 257, 100003};
  const int64_t m[2] = {13, 37};
  for (int op = KILN_SCAN_CUMSUM; op <= KILN_SCAN_CUMPROD; op++) {
    for (int excl = 0; excl < 2; excl++) {
      for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
        if (!(harness_small() && lens[li] > 1000))
          complex_scan(dt, (kiln_scan_op)op, 1, &lens[li], 0, excl, 0, li, NULL);
      for (int64_t ax = 0; ax < 2; ax++)
        complex_scan(dt, (kiln_scan_op)op, 2, m, ax, excl, 0, 10 + (uint64_t)ax, NULL);
    }
    for (int nan = 1; nan < 3; nan++)
      complex_scan(dt, (kiln_scan_op)op, 2, m, 1, 0, nan, 20, NULL);
  }
  kiln_context *ctx = harness_ctx();
  kiln_tensor *x = NULL, *y = NULL;
  /* diff: y[j] = x[j + 1] - x[j] per part. */
  float fx[8] = {1, 2, 4, -1, 0.5f, 0.5f, -3, 8};
  const int64_t four = 4;
  if (dt == KILN_C64) {
    float fy[6];
    KOK(kiln_tensor_from_host(ctx, dt, 1, &four, fx, &x));
    KOK(kiln_diff(ctx, x, 0, 1, &y));
    KOK(kiln_tensor_download(y, fy, sizeof fy));
    const float want[6] = {3, -3, -3.5f, 1.5f, -3.5f, 7.5f};
    for (int i = 0; i < 6; i++)
      ck_assert_msg(fy[i] == want[i], "diff c64 [%d] = %g, expected %g", i, fy[i], want[i]);
    kiln_tensor_release(y);
    y = NULL;
    kiln_tensor_release(x);
  }
  KOK(kiln_tensor_zeros(ctx, dt, 1, &four, &x));
  for (int op = 0; op < KILN_SCAN_OP_COUNT; op++) {
    int ok = op == KILN_SCAN_CUMSUM || op == KILN_SCAN_CUMPROD;
    ck_assert_int_eq(kiln_scan_op_supports((kiln_scan_op)op, dt), ok);
    if (!ok) {
      ck_assert_int_eq(kiln_scan(ctx, (kiln_scan_op)op, x, 0, NULL, &y), KILN_ERR_DTYPE);
      ck_assert_ptr_null(y);
    }
  }
  kiln_tensor_release(x);
}
END_TEST

/*
 * Every value `kiln tune` can give each parameter of the scan family (the candidate lists
 * of kiln__scan_tune), one at a time on the defaults, for f16 cumsum (the op the tuner
 * times): lines of 2000 (tiled from the smallest split threshold on), and for columns per
 * item (read by column layouts only) columns of a [300, 67] matrix.
 */
START_TEST(test_tuner_values)
{
  kiln_context *ctx = harness_ctx();
  const struct kiln__tune_family *f = &kiln__scan_tune;
  const int64_t rows[2] = {harness_size(7, 3), 2000}, cols[2] = {harness_size(300, 40), 67};
  for (size_t p = 0; p < f->nparams; p++) {
    const struct kiln__tune_param *tp = &f->params[p];
    int col = tp->layouts != 0 && !(tp->layouts & (1u << KILN__LAYOUT_ROW));
    for (size_t v = 0; v < tp->nfull; v++) {
      kiln__launch_params lp;
      kiln__launch_params_default(ctx, KILN__LAUNCH_SCAN, &lp);
      uint64_t val = tp->full[v];
      memcpy((char *)&lp + tp->offset, &val, tp->size); /* little-endian: the low bytes */
      /* The strategy matters only for lines that are tiled. */
      if (strcmp(tp->name, "single_pass") == 0)
        lp.two_pass_min = 1024;
      struct scase c = col ? mk(KILN_SCAN_CUMSUM, KILN_F16, 2, cols, 0)
                           : mk(KILN_SCAN_CUMSUM, KILN_F16, 2, rows, 1);
      run_case(&c, &lp, p * 16 + v);
    }
  }
}
END_TEST

static Suite *
scan_suite(void)
{
  Suite *s = suite_create("scan");
  struct {
    const char *name;
    const TTest *test;
    int loops;
  } groups[] = {
      {"ops_dtypes", test_ops_dtypes, (int)NDTYPES},
      {"nan_policies", test_nan_policies, 2},
      {"indexed_ties", test_indexed_ties, 0},
      {"bool_exclusive", test_bool_exclusive, 0},
      {"long", test_long, 0},
      {"tunables", test_tunables, 0},
      {"single_pass", test_single_pass, (int)NDTYPES + 2},
      {"single_pass_stress", test_single_pass_stress, 0},
      {"random_sums", test_random_sums, 0},
      {"in_place_and_empty", test_in_place_and_empty, 0},
      {"bad_inputs", test_bad_inputs, 0},
      {"diff", test_diff, 0},
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
  return harness_main(scan_suite(), 1);
}
