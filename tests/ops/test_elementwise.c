/*
 * Elementwise suite: every row of the op table (include/kiln/op_table.h)
 * against a host reference, for every dtype the row accepts, at sizes 0, 1,
 * 7, 1023 and 1<<20, with broadcasting, scalar operands and in-place output;
 * where, clamp, cast (all dtype pairs) and copy; bad input; empty tensors. Every bool
 * result holds only the bytes 0 and 1 (hd_expect_bool01 in download()), also from u8
 * inputs holding every byte value and from bool tensors combined with scalars like 7.
 *
 * The op lists, accepted dtypes and result dtypes are generated from the
 * X-macro table, so a new row is tested automatically; its host reference
 * lives in unary_ref()/binary_ref() (switches over the op enum without a
 * default: a row without a reference warns at compile time and fails here).
 *
 * Inputs are deterministic pseudo-random values in each op's domain, and for
 * the 1023- and 1<<20-element cases the first elements are special values:
 * NaN, +-inf, +-0, halves (round/floor), INT_MIN/INT_MAX/0/-1 and friends
 * for integers, shift counts around the bit width.
 *
 * Tolerances. The reference is computed in double from the exact input
 * values (exact integer arithmetic for integer dtypes) and then rounded to
 * the result dtype; a result matches when
 *     |got - want| <= rel * |want| + abs,
 * NaN matches only NaN and an infinity only the same infinity.
 *   integers, bool, and the float ops that IEEE makes exact (abs, neg, sign,
 *   square, relu, floor, ceil, round, trunc, add, sub, mul, max, min, fmod,
 *   remainder, f64 div, comparisons, casts, where, clamp): exact; for those
 *   the sign of a zero result is checked too where IEEE defines it.
 *   f32: rel 1e-5 (~84 ulp; OpenCL 1.2 allows 2.5-16 ulp for these builtins)
 *        plus abs 1e-6; div rel 1e-6 (2.5 ulp bound); pow, erfc, tgamma,
 *        lgamma rel 5e-5 (16 ulp or unspecified); lgamma abs 5e-5 because it
 *        crosses zero (at 1, 2, -2.457..., where only an absolute bound is
 *        meaningful).
 *   f64: rel 1e-12 plus abs 1e-15; tgamma and lgamma rel 1e-10, lgamma abs 1e-12.
 *   f16, bf16 (computed in f32, references rounded once from double): the
 *        exact ops above exact (f32 holds 2p + 2 bits of their significand, so
 *        rounding f32's correctly rounded result again is the single rounding);
 *        div, sqrt, reciprocal 1 ulp of the storage type (OpenCL lets the f32
 *        ops err by 2.5-3 ulp, so a result next to a tie may round the other
 *        way); every other op the f32 tolerance plus 1 ulp. An ulp past the
 *        largest finite value is the infinity. half_edges checks overflow,
 *        ties, subnormals and NaN with hand-written results. Their casts are
 *        cast.cl's (not tested here), so where conditions are bool/u8 for them.
 *
 * KILN_EW_VERBOSE=1 prints the largest relative and absolute errors of every float case.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "harness.h"
#include "ew_ref.h"
#include "hostdata.h"

/* ------------------------------------------------------------------ */
/* The op table, decoded independently of the library                 */
/* ------------------------------------------------------------------ */

#define DTB(d) (1u << (unsigned)(d))
#define CLS_FLOAT (DTB(KILN_F32) | DTB(KILN_F64) | DTB(KILN_F16) | DTB(KILN_BF16))
#define CLS_INTNB (DTB(KILN_I32) | DTB(KILN_I64) | DTB(KILN_U8))
#define CLS_INT (CLS_INTNB | DTB(KILN_BOOL))
#define CLS_NUM (CLS_FLOAT | CLS_INTNB)
#define CLS_ALL (CLS_NUM | DTB(KILN_BOOL))
#define RES_SAME 0
#define RES_BOOL 1

struct op_info {
  const char *name;
  unsigned dtypes; /* DTB mask */
  int res_bool;
};

static const struct op_info unary_info[KILN_UNARY_OP_COUNT] = {
#define X(E, n, cls, res, expr) [KILN_OP_##E] = {#n, CLS_##cls, RES_##res},
    KILN_UNARY_OPS(X)
#undef X
};

static const struct op_info binary_info[KILN_BINARY_OP_COUNT] = {
#define X(E, n, cls, res, expr) [KILN_OP_##E] = {#n, CLS_##cls, RES_##res},
    KILN_BINARY_OPS(X)
#undef X
};

/* The dtypes of the casts, copies and where conditions; ew_dtypes adds the 16-bit floats
 * (their casts belong to cast.cl). */
static const kiln_dtype all_dtypes[] = {KILN_F32, KILN_F64, KILN_I32, KILN_I64, KILN_U8, KILN_BOOL};
#define NDTYPES (sizeof all_dtypes / sizeof all_dtypes[0])
/* The dtypes of unary, binary, where values and clamp. */
static const kiln_dtype ew_dtypes[] = {KILN_F32, KILN_F64,  KILN_I32, KILN_I64,
                                       KILN_U8,  KILN_BOOL, KILN_F16, KILN_BF16};
#define NEW_DTYPES (sizeof ew_dtypes / sizeof ew_dtypes[0])

static int verbose;

/* ------------------------------------------------------------------ */
/* Host helpers: dtypes, shapes, random numbers                       */
/* ------------------------------------------------------------------ */


static const char *
fmt_elem(kiln_dtype dt, const void *p, size_t i, char *buf, size_t len)
{
  if (is_half(dt))
    snprintf(buf, len, "%.6g (0x%04x)", getf(dt, p, i), half_bits(p, i));
  else if (is_float(dt))
    snprintf(buf, len, dt == KILN_F32 ? "%.9g" : "%.17g", getf(dt, p, i));
  else
    snprintf(buf, len, "%lld", (long long)geti(dt, p, i));
  return buf;
}

typedef struct shape_t {
  size_t nd;
  int64_t d[KILN_MAX_DIMS];
} shape_t;

static size_t
shape_numel(const shape_t *s)
{
  size_t n = 1;
  for (size_t i = 0; i < s->nd; i++)
    n *= (size_t)s->d[i];
  return n;
}

static const char *
shape_str(const shape_t *s, char *buf, size_t len)
{
  size_t used = (size_t)snprintf(buf, len, "[");
  for (size_t i = 0; i < s->nd && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, i ? ",%lld" : "%lld", (long long)s->d[i]);
  if (used < len)
    snprintf(buf + used, len - used, "]");
  return buf;
}

static int
shape_eq(const shape_t *a, const shape_t *b)
{
  if (a->nd != b->nd)
    return 0;
  for (size_t i = 0; i < a->nd; i++)
    if (a->d[i] != b->d[i])
      return 0;
  return 1;
}

/* NumPy broadcast of a and b; 0 if they do not broadcast. */
static int
host_broadcast(const shape_t *a, const shape_t *b, shape_t *out)
{
  memset(out, 0, sizeof *out);
  out->nd = a->nd > b->nd ? a->nd : b->nd;
  for (size_t i = 0; i < out->nd; i++) {
    int64_t da = i < a->nd ? a->d[a->nd - 1 - i] : 1;
    int64_t db = i < b->nd ? b->d[b->nd - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      return 0;
    out->d[out->nd - 1 - i] = da == 1 ? db : da;
  }
  return 1;
}

/* For every element of out, the index of the element of in (broadcast to out) it reads. */
static size_t *
bcast_map(const shape_t *in, const shape_t *out)
{
  size_t n = shape_numel(out);
  size_t *map = malloc((n ? n : 1) * sizeof *map);
  ck_assert_ptr_nonnull(map);
  int64_t stride[KILN_MAX_DIMS];
  int64_t s = 1;
  for (size_t k = in->nd; k-- > 0;) {
    stride[k] = in->d[k] == 1 ? 0 : s;
    s *= in->d[k];
  }
  for (size_t i = 0; i < n; i++) {
    size_t rem = i, off = 0;
    for (size_t k = out->nd; k-- > 0;) {
      size_t c = rem % (size_t)out->d[k];
      rem /= (size_t)out->d[k];
      size_t lead = out->nd - in->nd;
      if (k >= lead)
        off += c * (size_t)stride[k - lead];
    }
    map[i] = off;
  }
  return map;
}

/* splitmix64: small, fast and deterministic. */
typedef struct rng_t {
  uint64_t s;
} rng_t;

static uint64_t
rnext(rng_t *r)
{
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static rng_t
rseed(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
  rng_t r = {a * 0x100000001B3ull ^ (b << 16) ^ (c << 32) ^ (d << 48) ^ 0x5DEECE66Dull};
  rnext(&r);
  return r;
}

static double
runif(rng_t *r, double lo, double hi)
{
  return lo + (hi - lo) * ((double)(rnext(r) >> 11) * 0x1.0p-53);
}

/* Log-uniform in [lo, hi], lo > 0. */
static double
rlogu(rng_t *r, double lo, double hi)
{
  return exp(runif(r, log(lo), log(hi)));
}

/*
 * A random integer of dtype dt: a quarter anywhere in the dtype's range, the
 * rest in [-small, small] (u8: [0, small]); for i64 some near +-2^53, where
 * a double would lose the low bits.
 */
static int64_t
rint_dt(rng_t *r, kiln_dtype dt, int64_t small)
{
  uint64_t u = rnext(r);
  uint64_t v = rnext(r);
  switch (dt) {
  case KILN_BOOL:
    return (int64_t)(u & 1);
  case KILN_U8:
    return (u & 4) ? (int64_t)(v & 0xff) : (int64_t)(v % (uint64_t)(small + 1));
  case KILN_I32:
    if ((u & 3) == 0)
      return (int32_t)(uint32_t)v;
    return (int64_t)(v % (uint64_t)(2 * small + 1)) - small;
  default:
    if ((u & 7) == 0)
      return (int64_t)v;
    if ((u & 7) == 1)
      return ((u & 8) ? 1 : -1) * ((INT64_C(1) << 53) + (int64_t)(v % 1000));
    return (int64_t)(v % (uint64_t)(2 * small + 1)) - small;
  }
}

static void *
xmalloc(size_t n)
{
  void *p = malloc(n ? n : 1);
  ck_assert_ptr_nonnull(p);
  return p;
}

/* ------------------------------------------------------------------ */
/* Comparison                                                          */
/* ------------------------------------------------------------------ */


/* The inputs behind each output element, for failure messages. */
typedef struct inputs_t {
  int n;
  const char *name[3];
  kiln_dtype dt[3];
  const void *buf[3];
  const size_t *map[3]; /* output index -> input index; NULL: the same index */
  int scalar[3];        /* buf holds one element used everywhere */
} inputs_t;

static size_t
in_index(const inputs_t *in, int k, size_t i)
{
  return in->scalar[k] ? 0 : in->map[k] ? in->map[k][i] : i;
}

/*
 * Compares n result elements of dtype dt with the reference; fails naming
 * label (op, dtype, shape), the first mismatching index, its inputs and values.
 */
static void
check_result(const char *label, kiln_dtype dt, const void *got, const void *want, size_t n,
             tol_t t, const inputs_t *in)
{
  size_t bad = 0, first = 0;
  double worst = 0, worst_abs = 0;
  for (size_t i = 0; i < n; i++) {
    if (!elem_matches(dt, got, want, i, t)) {
      if (!bad++)
        first = i;
    } else if (verbose && is_float(dt)) {
      double g = getf(dt, got, i), w = getf(dt, want, i);
      if (isfinite(w)) {
        double e = fabs(g - w);
        worst_abs = e > worst_abs ? e : worst_abs;
        if (w != 0)
          worst = e / fabs(w) > worst ? e / fabs(w) : worst;
      }
    }
  }
  if (verbose && is_float(dt))
    fprintf(stderr, "%-44s max rel err %.3g, max abs err %.3g\n", label, worst, worst_abs);
  if (!bad)
    return;
  char ins[512] = "";
  size_t used = 0;
  for (int k = 0; in && k < in->n && used < sizeof ins; k++) {
    char v[64];
    size_t j = in_index(in, k, first);
    used += (size_t)snprintf(ins + used, sizeof ins - used, "%s%s[%zu]=%s", k ? ", " : "",
                             in->name[k], j, fmt_elem(in->dt[k], in->buf[k], j, v, sizeof v));
  }
  char g[64], w[64];
  ck_abort_msg("%s: %zu of %zu elements differ; first at [%zu]: %s -> got %s, want %s "
               "(dtype %s, tol rel %g abs %g%s)",
               label, bad, n, first, ins, fmt_elem(dt, got, first, g, sizeof g),
               fmt_elem(dt, want, first, w, sizeof w), kiln_dtype_name(dt), t.rel, t.abs,
               t.zsign && is_float(dt) ? ", zero sign checked" : "");
}

/* Downloads t into a fresh host buffer, checking dtype and shape first. */
static void *
download(const char *label, const kiln_tensor *t, kiln_dtype dt, const shape_t *s)
{
  ck_assert_msg(kiln_tensor_dtype(t) == dt, "%s: result dtype %s, want %s", label,
                kiln_dtype_name(kiln_tensor_dtype(t)), kiln_dtype_name(dt));
  ck_assert_msg(kiln_tensor_ndim(t) == s->nd, "%s: result ndim %zu, want %zu", label,
                kiln_tensor_ndim(t), s->nd);
  for (size_t k = 0; k < s->nd; k++)
    ck_assert_msg(kiln_tensor_dim(t, k) == s->d[k], "%s: result dim %zu is %lld, want %lld",
                  label, k, (long long)kiln_tensor_dim(t, k), (long long)s->d[k]);
  size_t n = shape_numel(s);
  ck_assert_uint_eq(kiln_tensor_numel(t), n);
  size_t bytes = n * kiln_dtype_size(dt);
  void *buf = xmalloc(bytes);
  KOK(kiln_tensor_download(t, buf, bytes));
  hd_expect_bool01(dt, buf, n, label);
  return buf;
}

static kiln_tensor *
upload(kiln_dtype dt, const shape_t *s, const void *host)
{
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_from_host(harness_ctx(), dt, s->nd, s->d, host, &t));
  return t;
}

/* A tensor of shape s filled with a recognisable non-result pattern, as a given output. */
static kiln_tensor *
garbage_tensor(kiln_dtype dt, const shape_t *s)
{
  size_t bytes = shape_numel(s) * kiln_dtype_size(dt);
  unsigned char *h = xmalloc(bytes);
  memset(h, dt == KILN_BOOL ? 0x01 : 0x5a, bytes);
  kiln_tensor *t = upload(dt, s, h);
  free(h);
  return t;
}

/* ------------------------------------------------------------------ */
/* Host references                                                     */
/* ------------------------------------------------------------------ */


/* A kiln_scalar converted to dtype (the kiln_cast rules), into element 0 of out. */
static void
scalar_value(kiln_scalar s, kiln_dtype dt, void *out)
{
  cast_value(!s.is_integer, s.f, s.i, dt, out, 0);
}

static const char *
scalar_str(kiln_scalar s, char *buf, size_t len)
{
  if (s.is_integer)
    snprintf(buf, len, "i64 %lld", (long long)s.i);
  else
    snprintf(buf, len, "f64 %.17g", s.f);
  return buf;
}

/* ------------------------------------------------------------------ */
/* Tolerances                                                          */
/* ------------------------------------------------------------------ */


/* ------------------------------------------------------------------ */
/* Inputs                                                              */
/* ------------------------------------------------------------------ */

/*
 * Sizes of the generated cases; the large one is 2^18 + 3, past every work-group and vector
 * multiple, and small enough that the host references of every op and dtype stay cheap.
 * The small mode (harness_small) runs the first
 * n_sizes - 1 and 257 in place of 1023: a tail of every vector width, short
 * enough for a simulator.
 */
static shape_t sizes[] = {
    {1, {0}}, {1, {1}}, {1, {7}}, {1, {1023}}, {1, {(1 << 18) + 3}},
};
#define NSIZES (sizeof sizes / sizeof sizes[0])
#define MID_SIZE 3 /* the size of the scalar and in-place cases */
static size_t n_sizes = NSIZES;
/* Arrays at least this long (sizes[MID_SIZE]) start with the special values. */
#define SPECIALS_MIN shape_numel(&sizes[MID_SIZE])

static const double float_specials[] = {
    NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, -3.5, 1.0,
    -1.0, 2.0, -2.0, 3.0, 0.1, -0.1, 1e-3, 100.0, -100.0, 0.49999997, -1e-30,
};
#define N_FLOAT_SPECIALS (sizeof float_specials / sizeof float_specials[0])

/* Edge values of integer dtypes (the first 8 also serve as binary operands). */
static int64_t
int_special(kiln_dtype dt, size_t k)
{
  const int64_t mn = int_min(dt), mx = int_max(dt);
  if (dt == KILN_BOOL)
    return (int64_t)(k & 1);
  if (dt == KILN_U8) {
    static const int64_t u8v[] = {0, 255, 1, 2, 127, 128, 7, 254, 3, 16};
    return u8v[k % 10];
  }
  const int64_t vals[] = {mn, mx, 0, -1, 1, 2, -2, 7, mn + 1, mx - 1, -7, 3,
                          dt == KILN_I64 ? (INT64_C(1) << 53) + 1 : 65537,
                          dt == KILN_I64 ? -((INT64_C(1) << 53) + 1) : -65537};
  return vals[k % (sizeof vals / sizeof vals[0])];
}
#define N_INT_SPECIALS 14

/* A random input in the op's domain (floats). */
static double
unary_draw(kiln_unary_op op, rng_t *r)
{
  switch (op) {
  case KILN_OP_SQRT:
  case KILN_OP_RSQRT:
  case KILN_OP_LOG:
  case KILN_OP_LOG2:
  case KILN_OP_LOG10:
    return rlogu(r, 1e-4, 1e4);
  case KILN_OP_LOG1P:
    return runif(r, -0.999, 20);
  case KILN_OP_EXP:
  case KILN_OP_EXPM1:
    return runif(r, -20, 20);
  case KILN_OP_EXP2:
    return runif(r, -30, 30);
  case KILN_OP_SINH:
  case KILN_OP_COSH:
    return runif(r, -15, 15);
  case KILN_OP_ASIN:
  case KILN_OP_ACOS:
    return runif(r, -1, 1);
  case KILN_OP_ATANH:
    return runif(r, -0.999, 0.999);
  case KILN_OP_ACOSH:
    return rlogu(r, 1, 100);
  case KILN_OP_TGAMMA:
    return runif(r, 0.05, 15);
  case KILN_OP_LGAMMA:
    return runif(r, 0.05, 20);
  case KILN_OP_ERF:
  case KILN_OP_ERFC:
    return runif(r, -5, 6);
  case KILN_OP_SIGMOID:
  case KILN_OP_GELU:
  case KILN_OP_GELU_TANH:
  case KILN_OP_SILU:
  case KILN_OP_SOFTPLUS:
    return runif(r, -20, 20);
  default:
    return runif(r, -10, 10);
  }
}

/* n inputs of dtype dt for a unary op; arrays of SPECIALS_MIN or more start with special values. */
static void *
unary_inputs(kiln_unary_op op, kiln_dtype dt, size_t n, rng_t *r)
{
  void *h = xmalloc(n * kiln_dtype_size(dt));
  size_t k = 0;
  if (n >= SPECIALS_MIN) {
    if (is_float(dt))
      for (; k < N_FLOAT_SPECIALS; k++)
        putf(dt, h, k, float_specials[k]);
    else
      for (; k < N_INT_SPECIALS; k++)
        puti(dt, h, k, int_special(dt, k));
  }
  for (; k < n; k++) {
    if (is_float(dt))
      putf(dt, h, k, unary_draw(op, r));
    else
      puti(dt, h, k, rint_dt(r, dt, 100));
  }
  return h;
}

/* Operand `which` (0 = a, 1 = b) of a binary op: a random value in the op's domain. */
static void
binary_draw(kiln_binary_op op, kiln_dtype dt, int which, rng_t *r, void *h, size_t k)
{
  if (is_float(dt)) {
    double v;
    switch (op) {
    case KILN_OP_POW:
      v = which == 0 ? rlogu(r, 1e-2, 10) : runif(r, -5, 5);
      break;
    case KILN_OP_FMOD:
    case KILN_OP_REMAINDER:
      v = which == 0 ? runif(r, -100, 100) : runif(r, -10, 10);
      break;
    case KILN_OP_MAX:
    case KILN_OP_MIN:
    case KILN_OP_EQ:
    case KILN_OP_NE:
    case KILN_OP_LT:
    case KILN_OP_LE:
    case KILN_OP_GT:
    case KILN_OP_GE:
    case KILN_OP_LOGICAL_AND:
    case KILN_OP_LOGICAL_OR:
    case KILN_OP_LOGICAL_XOR:
      /* few distinct values, so that ties and zeros are common */
      v = (double)(rnext(r) % 7) - 3.0 + ((rnext(r) & 3) == 0 ? 0.5 : 0.0);
      break;
    default:
      v = runif(r, -10, 10);
      break;
    }
    putf(dt, h, k, v);
    return;
  }
  if ((op == KILN_OP_SHL || op == KILN_OP_SHR) && which == 1) {
    puti(dt, h, k, (int64_t)(rnext(r) % (uint64_t)(bits_of(dt) + 7)) - (is_signed(dt) ? 3 : 0));
    return;
  }
  puti(dt, h, k, rint_dt(r, dt, 20));
}

/* Special operand pairs written at the front of same-shape inputs. */
static const double float_pair_vals[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0, 2.5};
#define N_FPV (sizeof float_pair_vals / sizeof float_pair_vals[0])
static const double float_pair_extra[][2] = {
    {-2, 3},    {-2, -2},   {-3, 0.5},   {7, 2},      {-7, 2},     {7, -2},
    {-7, -2},   {5.5, 2.5}, {-5.5, 2.5}, {5.5, -2.5}, {-5.5, -2.5}, {6, 3},
    {-6, 3},    {1e-3, 0},  {-1e-3, 0},  {0.5, 1e30}, {2, 1e30},   {-8, 1.0 / 3},
};
#define N_FPE (sizeof float_pair_extra / sizeof float_pair_extra[0])

static size_t
binary_specials(kiln_binary_op op, kiln_dtype dt, void *a, void *b)
{
  size_t k = 0;
  if (is_float(dt)) {
    for (size_t i = 0; i < N_FPV; i++)
      for (size_t j = 0; j < N_FPV; j++, k++) {
        putf(dt, a, k, float_pair_vals[i]);
        putf(dt, b, k, float_pair_vals[j]);
      }
    for (size_t i = 0; i < N_FPE; i++, k++) {
      putf(dt, a, k, float_pair_extra[i][0]);
      putf(dt, b, k, float_pair_extra[i][1]);
    }
    return k;
  }
  const int shift = op == KILN_OP_SHL || op == KILN_OP_SHR;
  const int64_t w = bits_of(dt);
  const int64_t counts[8] = {-1, 0, 1, 3, w - 1, w, w + 1, 200};
  size_t m = dt == KILN_BOOL ? 2 : 8;
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < m; j++, k++) {
      puti(dt, a, k, int_special(dt, i));
      puti(dt, b, k, shift && dt != KILN_BOOL ? (dt == KILN_U8 && counts[j] < 0 ? 2 : counts[j])
                                              : int_special(dt, j));
    }
  return k;
}

/* ------------------------------------------------------------------ */
/* Unary cases                                                         */
/* ------------------------------------------------------------------ */

struct ucase {
  kiln_unary_op op;
  kiln_dtype dt;
  size_t size;
};
static struct ucase *ucases;
static size_t n_ucases;

static void
unary_label(const struct ucase *c, const shape_t *s, const char *what, char *buf, size_t len)
{
  char sh[64];
  snprintf(buf, len, "unary %s %s %s%s", kiln_unary_op_name(c->op), kiln_dtype_name(c->dt),
           shape_str(s, sh, sizeof sh), what);
}

/* The reference for every element of in (n elements of dt) into want (result dtype rdt). */
static void
unary_reference(kiln_unary_op op, kiln_dtype dt, kiln_dtype rdt, const void *in, void *want,
                size_t n)
{
  for (size_t k = 0; k < n; k++) {
    rv_t r = {0, 0};
    double x = is_float(dt) ? getf(dt, in, k) : 0;
    int64_t v = is_float(dt) ? 0 : geti(dt, in, k);
    if (!unary_ref(op, dt, x, v, &r))
      ck_abort_msg("unary %s: no host reference in unary_ref() (add one for the new op-table row)",
                   kiln_unary_op_name(op));
    if (is_float(rdt))
      putf(rdt, want, k, r.f);
    else
      puti(rdt, want, k, r.i);
  }
}

START_TEST(unary_case)
{
  const struct ucase *c = &ucases[_i];
  if (c->dt == KILN_F64 && !harness_has_fp64())
    return;
  kiln_context *ctx = harness_ctx();
  const shape_t *s = &sizes[c->size];
  const size_t n = shape_numel(s);
  const kiln_dtype rdt = unary_info[c->op].res_bool ? KILN_BOOL : c->dt;
  rng_t r = rseed(1, (uint64_t)c->op, (uint64_t)c->dt, c->size);
  void *in = unary_inputs(c->op, c->dt, n, &r);
  void *want = xmalloc(n * kiln_dtype_size(rdt));
  unary_reference(c->op, c->dt, rdt, in, want, n);
  tol_t tol = unary_tol(c->op, c->dt);
  inputs_t ins = {1, {"x"}, {c->dt}, {in}, {NULL}, {0}};
  char label[320];

  kiln_tensor *x = upload(c->dt, s, in);
  kiln_tensor *y = NULL;
  unary_label(c, s, "", label, sizeof label);
  KOK(kiln_unary(ctx, c->op, x, &y));
  void *got = download(label, y, rdt, s);
  check_result(label, rdt, got, want, n, tol, &ins);
  free(got);
  KOK(kiln_tensor_release(y));

  if (n == 7) {
    /* A given output tensor is written, not replaced. */
    kiln_tensor *o = garbage_tensor(rdt, s);
    kiln_tensor *given = o;
    unary_label(c, s, " (given out)", label, sizeof label);
    KOK(kiln_unary(ctx, c->op, x, &o));
    ck_assert_ptr_eq(o, given);
    got = download(label, o, rdt, s);
    check_result(label, rdt, got, want, n, tol, &ins);
    free(got);
    KOK(kiln_tensor_release(o));
    /* In place, where the result has the input's dtype. */
    if (rdt == c->dt) {
      kiln_tensor *io = x;
      unary_label(c, s, " (in place)", label, sizeof label);
      KOK(kiln_unary(ctx, c->op, x, &io));
      ck_assert_ptr_eq(io, x);
      got = download(label, x, rdt, s);
      check_result(label, rdt, got, want, n, tol, &ins);
      free(got);
    }
  }
  KOK(kiln_tensor_release(x));
  free(in);
  free(want);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Binary cases                                                        */
/* ------------------------------------------------------------------ */

enum bkind { B_SAME, B_BCAST, B_SCALAR, B_INPLACE };

static const struct {
  shape_t a, b;
} bpairs[] = {
    {{3, {3, 1, 5}}, {2, {4, 1}}}, {{2, {4, 1}}, {3, {3, 1, 5}}}, {{1, {1}}, {2, {6, 7}}},
    {{2, {6, 7}}, {1, {1}}},       {{3, {2, 3, 4}}, {2, {3, 1}}}, {{0, {0}}, {2, {2, 3}}},
    {{2, {5, 1}}, {3, {2, 1, 9}}},
};
#define NBPAIRS (sizeof bpairs / sizeof bpairs[0])

/*
 * Whether case k of n variants of one (op, dtype) is generated: always, and in the small mode
 * only the variant rot % n, so that the variants rotate over the ops and dtypes.
 */
static int
variant_runs(size_t k, size_t n, size_t rot)
{
  return !harness_small() || k == rot % n;
}

/*
 * As variant_runs for cases of dtype dt. f16 and bf16 take the small mode's rotation in
 * every mode (their largest size is always generated): their kernels are the f32 ones behind
 * other loads and stores, and across the ops the rotation still visits every size, pair and
 * scalar side, at a third of the cost.
 */
static int
dtype_variant_runs(kiln_dtype dt, size_t k, size_t n, size_t rot)
{
  return is_half(dt) ? k == rot % n : variant_runs(k, n, rot);
}

/* Binary cases of one (op, dtype) at least: sizes, broadcast pairs, scalar sides (build_cases). */
static size_t
binary_variants(kiln_dtype dt)
{
  return harness_small() || is_half(dt) ? 4 : n_sizes + NBPAIRS + 2;
}

struct bcase {
  kiln_binary_op op;
  kiln_dtype dt;
  enum bkind kind;
  size_t p; /* size index, pair index, or scalar_first */
};
static struct bcase *bcases;
static size_t n_bcases;

/* The scalar operand used for (dtype, scalar_first): exercises the kiln_cast conversion rules. */
static kiln_scalar
test_scalar(kiln_dtype dt, int scalar_first)
{
  switch (dt) {
  case KILN_F32: /* 2^24 + 1 rounds to even: 2^24 */
    return scalar_first ? kiln_scalar_i64(16777217) : kiln_scalar_f64(2.5);
  case KILN_F64: /* 2^53 + 1 rounds to 2^53 */
    return scalar_first ? kiln_scalar_i64((INT64_C(1) << 53) + 1) : kiln_scalar_f64(-0.75);
  case KILN_I32: /* 5.9 truncates to 5; 2^32 - 7 wraps to -7 */
    return scalar_first ? kiln_scalar_i64((INT64_C(1) << 32) - 7) : kiln_scalar_f64(5.9);
  case KILN_I64: /* beyond 2^53: must stay exact */
    return scalar_first ? kiln_scalar_i64(-((INT64_C(1) << 53) + 3))
                        : kiln_scalar_i64((INT64_C(1) << 53) + 1);
  case KILN_U8: /* 258 wraps to 2 */
    return scalar_first ? kiln_scalar_i64(258) : kiln_scalar_f64(3.7);
  case KILN_F16: /* 2049 ties to 2048; 0.1 rounds to 0.0999755859375 */
    return scalar_first ? kiln_scalar_i64(2049) : kiln_scalar_f64(0.1);
  case KILN_BF16: /* 257 ties to 256; -0.3 rounds to -0.30078125 */
    return scalar_first ? kiln_scalar_i64(257) : kiln_scalar_f64(-0.3);
  default: /* NaN is nonzero, so true */
    return scalar_first ? kiln_scalar_f64(NAN) : kiln_scalar_i64(0);
  }
}

/* Reference of a binary op over out (shape so) with a and b read through their maps (NULL: same index). */
static void
binary_reference(kiln_binary_op op, kiln_dtype dt, kiln_dtype rdt, const void *a, const size_t *ma,
                 int a_scalar, const void *b, const size_t *mb, int b_scalar, void *want, size_t n)
{
  const int fl = is_float(dt);
  for (size_t k = 0; k < n; k++) {
    size_t ia = a_scalar ? 0 : ma ? ma[k] : k;
    size_t ib = b_scalar ? 0 : mb ? mb[k] : k;
    rv_t r = {0, 0};
    int ok = fl ? binary_ref(op, dt, getf(dt, a, ia), getf(dt, b, ib), 0, 0, &r)
                : binary_ref(op, dt, 0, 0, geti(dt, a, ia), geti(dt, b, ib), &r);
    if (!ok)
      ck_abort_msg("binary %s: no host reference in binary_ref() (add one for the new op-table row)",
                   kiln_binary_op_name(op));
    if (is_float(rdt))
      putf(rdt, want, k, r.f);
    else
      puti(rdt, want, k, r.i);
  }
}

static void
binary_inputs(kiln_binary_op op, kiln_dtype dt, void *a, size_t na, void *b, size_t nb,
              int specials, rng_t *r)
{
  size_t k0 = specials ? binary_specials(op, dt, a, b) : 0;
  for (size_t k = k0; k < na; k++)
    binary_draw(op, dt, 0, r, a, k);
  for (size_t k = k0; k < nb; k++)
    binary_draw(op, dt, 1, r, b, k);
}

START_TEST(binary_case)
{
  const struct bcase *c = &bcases[_i];
  if (c->dt == KILN_F64 && !harness_has_fp64())
    return;
  kiln_context *ctx = harness_ctx();
  const kiln_dtype dt = c->dt;
  const kiln_dtype rdt = binary_info[c->op].res_bool ? KILN_BOOL : dt;
  const size_t esz = kiln_dtype_size(dt);
  const char *name = kiln_binary_op_name(c->op);
  tol_t tol = binary_tol(c->op, dt);
  rng_t r = rseed(2, (uint64_t)c->op, (uint64_t)dt, (uint64_t)c->kind * 16 + c->p);
  char label[320], sa[64], sb[64], sv[64];

  if (c->kind == B_SCALAR) {
    /* op(x, s) or op(s, x) with s converted to x's dtype. */
    const int sf = (int)c->p;
    const shape_t *s = &sizes[MID_SIZE];
    size_t n = shape_numel(s);
    void *xa = xmalloc(n * esz), *xb = xmalloc(n * esz);
    binary_inputs(c->op, dt, xa, n, xb, n, 1, &r);
    void *xs = sf ? xb : xa; /* the tensor operand */
    kiln_scalar sc = test_scalar(dt, sf);
    unsigned char sval[8];
    scalar_value(sc, dt, sval);
    void *want = xmalloc(n * kiln_dtype_size(rdt));
    binary_reference(c->op, dt, rdt, sf ? (void *)sval : xs, NULL, sf, sf ? xs : (void *)sval, NULL,
                     !sf, want, n);
    snprintf(label, sizeof label, "binary_scalar %s %s %s scalar %s %s", name,
             kiln_dtype_name(dt), shape_str(s, sa, sizeof sa), sf ? "first" : "second",
             scalar_str(sc, sv, sizeof sv));
    inputs_t ins = {2, {"a", "b"}, {dt, dt}, {sf ? (void *)sval : xs, sf ? xs : (void *)sval},
                    {NULL, NULL}, {sf, !sf}};
    kiln_tensor *x = upload(dt, s, xs), *y = NULL;
    KOK(kiln_binary_scalar(ctx, c->op, x, sc, sf, &y));
    void *got = download(label, y, rdt, s);
    check_result(label, rdt, got, want, n, tol, &ins);
    free(got);
    KOK(kiln_tensor_release(y));
    KOK(kiln_tensor_release(x));
    free(xa);
    free(xb);
    free(want);
    return;
  }

  shape_t shp_a, shp_b, so;
  if (c->kind == B_BCAST) {
    shp_a = bpairs[c->p].a;
    shp_b = bpairs[c->p].b;
  } else {
    shp_a = shp_b = sizes[c->kind == B_INPLACE ? MID_SIZE : c->p];
  }
  ck_assert(host_broadcast(&shp_a, &shp_b, &so));
  size_t na = shape_numel(&shp_a), nb = shape_numel(&shp_b), n = shape_numel(&so);
  void *a = xmalloc(na * esz), *b = xmalloc(nb * esz);
  binary_inputs(c->op, dt, a, na, b, nb, c->kind != B_BCAST && n >= SPECIALS_MIN, &r);
  size_t *ma = shape_eq(&shp_a, &so) ? NULL : bcast_map(&shp_a, &so);
  size_t *mb = shape_eq(&shp_b, &so) ? NULL : bcast_map(&shp_b, &so);
  void *want = xmalloc(n * kiln_dtype_size(rdt));
  binary_reference(c->op, dt, rdt, a, ma, 0, b, mb, 0, want, n);
  inputs_t ins = {2, {"a", "b"}, {dt, dt}, {a, b}, {ma, mb}, {0, 0}};
  snprintf(label, sizeof label, "binary %s %s %s %s%s", name, kiln_dtype_name(dt),
           shape_str(&shp_a, sa, sizeof sa), shape_str(&shp_b, sb, sizeof sb),
           c->kind == B_INPLACE ? " (in place, out == a)" : "");

  kiln_tensor *ta = upload(dt, &shp_a, a), *tb = upload(dt, &shp_b, b), *y = NULL;
  if (c->kind == B_INPLACE) {
    y = ta;
    KOK(kiln_binary(ctx, c->op, ta, tb, &y));
    ck_assert_ptr_eq(y, ta);
    void *got = download(label, ta, rdt, &so);
    check_result(label, rdt, got, want, n, tol, &ins);
    free(got);
    /* The scalar form in place as well: b = op(b, s). */
    kiln_scalar sc = test_scalar(dt, 0);
    unsigned char sval[8];
    scalar_value(sc, dt, sval);
    binary_reference(c->op, dt, rdt, b, NULL, 0, sval, NULL, 1, want, n);
    ins = (inputs_t){2, {"a", "b"}, {dt, dt}, {b, sval}, {NULL, NULL}, {0, 1}};
    snprintf(label, sizeof label, "binary_scalar %s %s %s (in place) scalar %s", name,
             kiln_dtype_name(dt), shape_str(&so, sa, sizeof sa), scalar_str(sc, sv, sizeof sv));
    y = tb;
    KOK(kiln_binary_scalar(ctx, c->op, tb, sc, 0, &y));
    ck_assert_ptr_eq(y, tb);
    got = download(label, tb, rdt, &so);
    check_result(label, rdt, got, want, n, tol, &ins);
    free(got);
  } else {
    KOK(kiln_binary(ctx, c->op, ta, tb, &y));
    void *got = download(label, y, rdt, &so);
    check_result(label, rdt, got, want, n, tol, &ins);
    free(got);
    KOK(kiln_tensor_release(y));
  }
  KOK(kiln_tensor_release(ta));
  KOK(kiln_tensor_release(tb));
  free(a);
  free(b);
  free(ma);
  free(mb);
  free(want);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The table itself                                                    */
/* ------------------------------------------------------------------ */

START_TEST(op_table_matches_library)
{
  for (int op = 0; op < KILN_UNARY_OP_COUNT; op++) {
    ck_assert_str_eq(kiln_unary_op_name((kiln_unary_op)op), unary_info[op].name);
    ck_assert_msg(unary_info[op].dtypes != 0, "unary %s accepts no dtype", unary_info[op].name);
    for (size_t d = 0; d < NEW_DTYPES; d++) {
      kiln_dtype dt = ew_dtypes[d];
      ck_assert_msg(!kiln_unary_op_supports((kiln_unary_op)op, dt) ==
                        !(unary_info[op].dtypes & DTB(dt)),
                    "kiln_unary_op_supports(%s, %s) disagrees with the op table",
                    unary_info[op].name, kiln_dtype_name(dt));
      rv_t r;
      ck_assert_msg(unary_ref((kiln_unary_op)op, dt, 1.0, 1, &r), "unary %s has no host reference",
                    unary_info[op].name);
    }
    ck_assert(!kiln_unary_op_supports((kiln_unary_op)op, KILN_DTYPE_COUNT));
    ck_assert(!kiln_unary_op_supports((kiln_unary_op)op, (kiln_dtype)-1));
  }
  for (int op = 0; op < KILN_BINARY_OP_COUNT; op++) {
    ck_assert_str_eq(kiln_binary_op_name((kiln_binary_op)op), binary_info[op].name);
    ck_assert_msg(binary_info[op].dtypes != 0, "binary %s accepts no dtype", binary_info[op].name);
    for (size_t d = 0; d < NEW_DTYPES; d++) {
      kiln_dtype dt = ew_dtypes[d];
      ck_assert_msg(!kiln_binary_op_supports((kiln_binary_op)op, dt) ==
                        !(binary_info[op].dtypes & DTB(dt)),
                    "kiln_binary_op_supports(%s, %s) disagrees with the op table",
                    binary_info[op].name, kiln_dtype_name(dt));
      rv_t r;
      ck_assert_msg(binary_ref((kiln_binary_op)op, dt, 1.0, 1.0, 1, 1, &r),
                    "binary %s has no host reference", binary_info[op].name);
    }
  }
  ck_assert_str_eq(kiln_unary_op_name(KILN_UNARY_OP_COUNT), "?");
  ck_assert_str_eq(kiln_unary_op_name((kiln_unary_op)-1), "?");
  ck_assert_str_eq(kiln_binary_op_name(KILN_BINARY_OP_COUNT), "?");
  ck_assert(!kiln_unary_op_supports(KILN_UNARY_OP_COUNT, KILN_F32));
  ck_assert(!kiln_binary_op_supports(KILN_BINARY_OP_COUNT, KILN_F32));
  ck_assert(!kiln_binary_op_supports((kiln_binary_op)-1, KILN_F32));

  /* Every (op, dtype) the table accepts is among the generated cases, at every size. */
  for (int op = 0; op < KILN_UNARY_OP_COUNT; op++)
    for (size_t d = 0; d < NEW_DTYPES; d++) {
      if (!(unary_info[op].dtypes & DTB(ew_dtypes[d])))
        continue;
      size_t found = 0;
      for (size_t i = 0; i < n_ucases; i++)
        found += ucases[i].op == (kiln_unary_op)op && ucases[i].dt == ew_dtypes[d];
      ck_assert_uint_eq(found, harness_small() || is_half(ew_dtypes[d]) ? 2 : n_sizes);
    }
  for (int op = 0; op < KILN_BINARY_OP_COUNT; op++)
    for (size_t d = 0; d < NEW_DTYPES; d++) {
      if (!(binary_info[op].dtypes & DTB(ew_dtypes[d])))
        continue;
      size_t found = 0;
      for (size_t i = 0; i < n_bcases; i++)
        found += bcases[i].op == (kiln_binary_op)op && bcases[i].dt == ew_dtypes[d];
      ck_assert_uint_ge(found, binary_variants(ew_dtypes[d]));
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* where                                                               */
/* ------------------------------------------------------------------ */

/* A condition value of dtype dt: zeros, plain nonzeros and, for floats, NaN/-0/inf/tiny. */
static void
cond_value(kiln_dtype dt, rng_t *r, void *h, size_t k)
{
  static const double fv[] = {0.0, -0.0, NAN, INFINITY, -INFINITY, 1e-30, -2.5, 1.0, 0.0, 0.0};
  static const int64_t iv[] = {0, 1, -1, 2, 255, 0, 0, 7, INT32_MIN, 256};
  uint64_t u = rnext(r) % 10;
  if (is_float(dt))
    putf(dt, h, k, fv[u]);
  else if (dt == KILN_BOOL)
    puti(dt, h, k, (int64_t)(u & 1));
  else
    puti(dt, h, k, iv[u]); /* 256 and INT32_MIN wrap to 0 in u8 */
}

static void
value_fill(kiln_dtype dt, rng_t *r, void *h, size_t n)
{
  for (size_t k = 0; k < n; k++) {
    if (is_float(dt))
      putf(dt, h, k, (rnext(r) & 15) == 0 ? NAN : runif(r, -100, 100));
    else
      puti(dt, h, k, rint_dt(r, dt, 100));
  }
}

static const struct {
  shape_t c, a, b;
} wshapes[] = {
    {{3, {3, 1, 5}}, {2, {4, 1}}, {1, {1}}},
    {{1, {1023}}, {1, {1023}}, {1, {1023}}},
    {{1, {1}}, {2, {2, 3}}, {2, {2, 3}}},
    {{2, {2, 1}}, {0, {0}}, {3, {4, 1, 6}}},
    {{1, {1 << 20}}, {1, {1 << 20}}, {1, {1}}},
};
#define NWSHAPES (sizeof wshapes / sizeof wshapes[0])

struct wcase {
  kiln_dtype vdt, cdt;
};
static struct wcase wcases[NEW_DTYPES * NDTYPES];
static size_t n_wcases;

START_TEST(where_case)
{
  const struct wcase *c = &wcases[_i];
  if ((c->vdt == KILN_F64 || c->cdt == KILN_F64) && !harness_has_fp64())
    return;
  kiln_context *ctx = harness_ctx();
  rng_t r = rseed(3, (uint64_t)c->vdt, (uint64_t)c->cdt, 0);
  const size_t vs = kiln_dtype_size(c->vdt), cs = kiln_dtype_size(c->cdt);
  for (size_t w = 0; w < NWSHAPES; w++) {
    const shape_t *sc = &wshapes[w].c, *sa = &wshapes[w].a, *sb = &wshapes[w].b;
    shape_t ab, so;
    ck_assert(host_broadcast(sa, sb, &ab) && host_broadcast(sc, &ab, &so));
    size_t nc = shape_numel(sc), na = shape_numel(sa), nb = shape_numel(sb), n = shape_numel(&so);
    if (!harness_fits(n))
      continue;
    void *hc = xmalloc(nc * cs), *ha = xmalloc(na * vs), *hb = xmalloc(nb * vs);
    for (size_t k = 0; k < nc; k++)
      cond_value(c->cdt, &r, hc, k);
    value_fill(c->vdt, &r, ha, na);
    value_fill(c->vdt, &r, hb, nb);
    size_t *mc = bcast_map(sc, &so), *ma = bcast_map(sa, &so), *mb = bcast_map(sb, &so);
    void *want = xmalloc(n * vs);
    for (size_t k = 0; k < n; k++) {
      int t = is_float(c->cdt) ? getf(c->cdt, hc, mc[k]) != 0 : geti(c->cdt, hc, mc[k]) != 0;
      memcpy((char *)want + k * vs, t ? (char *)ha + ma[k] * vs : (char *)hb + mb[k] * vs, vs);
    }
    char label[320], s1[64], s2[64], s3[64];
    snprintf(label, sizeof label, "where cond %s %s, a %s b %s %s", kiln_dtype_name(c->cdt),
             shape_str(sc, s1, sizeof s1), kiln_dtype_name(c->vdt), shape_str(sa, s2, sizeof s2),
             shape_str(sb, s3, sizeof s3));
    inputs_t ins = {3, {"cond", "a", "b"}, {c->cdt, c->vdt, c->vdt}, {hc, ha, hb}, {mc, ma, mb},
                    {0, 0, 0}};
    kiln_tensor *tc = upload(c->cdt, sc, hc), *ta = upload(c->vdt, sa, ha),
                *tb = upload(c->vdt, sb, hb), *y = NULL;
    KOK(kiln_where(ctx, tc, ta, tb, &y));
    void *got = download(label, y, c->vdt, &so);
    check_result(label, c->vdt, got, want, n, EXACT, &ins);
    free(got);
    if (w == 1) {
      /* In place into a: a = where(cond, a, b). */
      kiln_tensor *io = ta;
      KOK(kiln_where(ctx, tc, ta, tb, &io));
      ck_assert_ptr_eq(io, ta);
      got = download(label, ta, c->vdt, &so);
      check_result(label, c->vdt, got, want, n, EXACT, &ins);
      free(got);
    }
    KOK(kiln_tensor_release(y));
    KOK(kiln_tensor_release(tc));
    KOK(kiln_tensor_release(ta));
    KOK(kiln_tensor_release(tb));
    free(hc);
    free(ha);
    free(hb);
    free(mc);
    free(ma);
    free(mb);
    free(want);
  }
}
END_TEST

/* ------------------------------------------------------------------ */
/* clamp                                                               */
/* ------------------------------------------------------------------ */

struct ccase {
  kiln_dtype dt;
  size_t size;
};
static struct ccase ccases[NEW_DTYPES * NSIZES];
static size_t n_ccases;

START_TEST(clamp_case)
{
  const struct ccase *c = &ccases[_i];
  if (c->dt == KILN_F64 && !harness_has_fp64())
    return;
  kiln_context *ctx = harness_ctx();
  const kiln_dtype dt = c->dt;
  const shape_t *s = &sizes[c->size];
  const size_t n = shape_numel(s), esz = kiln_dtype_size(dt);
  rng_t r = rseed(4, (uint64_t)dt, c->size, 0);
  void *h = xmalloc(n * esz);
  size_t k = 0;
  if (n >= SPECIALS_MIN) {
    if (is_float(dt))
      for (; k < N_FLOAT_SPECIALS; k++)
        putf(dt, h, k, float_specials[k]);
    else
      for (; k < N_INT_SPECIALS; k++)
        puti(dt, h, k, int_special(dt, k));
  }
  for (; k < n; k++) {
    if (is_float(dt))
      putf(dt, h, k, runif(&r, -10, 10));
    else
      puti(dt, h, k, rint_dt(&r, dt, 10));
  }
  /* lo/hi pairs: floats into integer dtypes truncate and saturate, integers wrap (u8: -3 is 253). */
  const kiln_scalar bounds[][2] = {
      {kiln_scalar_f64(-2.5), kiln_scalar_f64(3.5)},
      {kiln_scalar_i64(-3), kiln_scalar_i64(4)},
      {kiln_scalar_f64(5), kiln_scalar_f64(-5)}, /* lo > hi: hi everywhere */
      {kiln_scalar_i64(1), kiln_scalar_i64(1)},
      {kiln_scalar_f64(-INFINITY), kiln_scalar_f64(INFINITY)},
      {kiln_scalar_i64(INT64_MIN), kiln_scalar_i64(INT64_MAX)},
  };
  void *want = xmalloc(n * esz);
  kiln_tensor *x = upload(dt, s, h);
  for (size_t bi = 0; bi < sizeof bounds / sizeof bounds[0]; bi++) {
    unsigned char lo[8], hi[8];
    scalar_value(bounds[bi][0], dt, lo);
    scalar_value(bounds[bi][1], dt, hi);
    for (size_t i = 0; i < n; i++) {
      if (is_float(dt)) {
        /* NumPy clip: minimum(maximum(x, lo), hi), NaN propagating */
        double v = fmin_nan(fmax_nan(getf(dt, h, i), getf(dt, lo, 0)), getf(dt, hi, 0));
        putf(dt, want, i, v);
      } else {
        int64_t v = geti(dt, h, i), l = geti(dt, lo, 0), u = geti(dt, hi, 0);
        v = v > l ? v : l;
        puti(dt, want, i, v < u ? v : u);
      }
    }
    char label[320], sh[64], l1[64], l2[64];
    snprintf(label, sizeof label, "clamp %s %s lo %s hi %s", kiln_dtype_name(dt),
             shape_str(s, sh, sizeof sh), scalar_str(bounds[bi][0], l1, sizeof l1),
             scalar_str(bounds[bi][1], l2, sizeof l2));
    inputs_t ins = {1, {"x"}, {dt}, {h}, {NULL}, {0}};
    kiln_tensor *y = NULL;
    KOK(kiln_clamp(ctx, x, bounds[bi][0], bounds[bi][1], &y));
    void *got = download(label, y, dt, s);
    check_result(label, dt, got, want, n, EXACT_NOSIGN, &ins);
    free(got);
    KOK(kiln_tensor_release(y));
    if (bi == 0 && n == 7) {
      /* In place, on a copy of x. */
      kiln_tensor *copy = upload(dt, s, h), *io = copy;
      KOK(kiln_clamp(ctx, copy, bounds[bi][0], bounds[bi][1], &io));
      ck_assert_ptr_eq(io, copy);
      got = download(label, copy, dt, s);
      check_result(label, dt, got, want, n, EXACT_NOSIGN, &ins);
      free(got);
      KOK(kiln_tensor_release(copy));
    }
  }
  KOK(kiln_tensor_release(x));
  free(h);
  free(want);
}
END_TEST

/* ------------------------------------------------------------------ */
/* cast and copy                                                       */
/* ------------------------------------------------------------------ */

static const double cast_float_edges[] = {
    NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -1.9, 1.9, 127.5, 255.5, 255.9,
    256.0, 300.0, -1.0, -300.0, 2147483647.0, 2147483648.0, 2147483520.0, -2147483648.0,
    -2147483904.0, -2147483649.0, 4294967296.0, 4294967301.0, 9007199254740993.0 /* 2^53+1 -> 2^53 */,
    9223372036854775808.0, 9223372036854774784.0, -9223372036854775808.0, -9.3e18, 1e20, -1e20,
    3.4e38, 1e300, -1e300, 1e-40, 1e-310, 1.0 + 0x1p-24 /* f32 tie: to 1 */,
    1.0 + 3 * 0x1p-24 /* f32 tie: to 1 + 2^-22 */, 0.1, 16777217.0, 16777219.0, -0.99, 0.99,
};
#define N_CAST_FLOAT_EDGES (sizeof cast_float_edges / sizeof cast_float_edges[0])

static const int64_t cast_int_edges[] = {
    0, 1, -1, 2, 127, 128, 255, 256, 257, -255, -256, 16777217, 16777219, 2147483647,
    (int64_t)INT32_MIN, (INT64_C(1) << 32) + 5, -(INT64_C(1) << 32) - 5,
    (INT64_C(1) << 53) + 1, (INT64_C(1) << 53) + 3, INT64_MAX, INT64_MIN, INT64_MAX - 1,
    (INT64_C(1) << 40) + 0x80, -(INT64_C(1) << 31) - 1, 0x7fffff80ll, 0x7fffffc0ll,
};
#define N_CAST_INT_EDGES (sizeof cast_int_edges / sizeof cast_int_edges[0])

struct castcase {
  kiln_dtype from, to;
  size_t size;
};
static struct castcase castcases[NDTYPES * NDTYPES * NSIZES];
static size_t n_castcases;

START_TEST(cast_case)
{
  const struct castcase *c = &castcases[_i];
  if ((c->from == KILN_F64 || c->to == KILN_F64) && !harness_has_fp64())
    return;
  kiln_context *ctx = harness_ctx();
  const shape_t *s = &sizes[c->size];
  const size_t n = shape_numel(s);
  rng_t r = rseed(5, (uint64_t)c->from, (uint64_t)c->to, c->size);
  void *h = xmalloc(n * kiln_dtype_size(c->from));
  size_t k = 0;
  if (n >= SPECIALS_MIN) {
    if (is_float(c->from))
      for (; k < N_CAST_FLOAT_EDGES; k++)
        putf(c->from, h, k, cast_float_edges[k]);
    else
      for (; k < N_CAST_INT_EDGES; k++)
        puti(c->from, h, k, c->from == KILN_BOOL ? (int64_t)(k & 1) : cast_int_edges[k]);
  }
  for (; k < n; k++) {
    uint64_t u = rnext(&r);
    if (is_float(c->from))
      putf(c->from, h, k, (u & 3) == 0 ? runif(&r, -1e10, 1e10) : runif(&r, -300, 300));
    else
      puti(c->from, h, k, c->from == KILN_BOOL ? (int64_t)(u & 1) : (int64_t)rnext(&r));
  }
  void *want = xmalloc(n * kiln_dtype_size(c->to));
  for (size_t i = 0; i < n; i++)
    cast_elem(c->from, h, i, c->to, want, i);
  char label[320], sh[64];
  snprintf(label, sizeof label, "cast %s -> %s %s", kiln_dtype_name(c->from),
           kiln_dtype_name(c->to), shape_str(s, sh, sizeof sh));
  inputs_t ins = {1, {"x"}, {c->from}, {h}, {NULL}, {0}};
  kiln_tensor *x = upload(c->from, s, h), *y = NULL;
  KOK(kiln_cast(ctx, x, c->to, &y));
  void *got = download(label, y, c->to, s);
  check_result(label, c->to, got, want, n, EXACT, &ins);
  free(got);
  if (n == 7) {
    kiln_tensor *o = garbage_tensor(c->to, s), *given = o;
    KOK(kiln_cast(ctx, x, c->to, &o));
    ck_assert_ptr_eq(o, given);
    got = download(label, o, c->to, s);
    check_result(label, c->to, got, want, n, EXACT, &ins);
    free(got);
    KOK(kiln_tensor_release(o));
  }
  KOK(kiln_tensor_release(y));
  KOK(kiln_tensor_release(x));
  free(h);
  free(want);
}
END_TEST

START_TEST(copy_all_dtypes)
{
  kiln_context *ctx = harness_ctx();
  for (size_t d = 0; d < NDTYPES; d++) {
    kiln_dtype dt = all_dtypes[d];
    if (dt == KILN_F64 && !harness_has_fp64())
      continue;
    for (size_t si = 0; si < n_sizes; si++) {
      const shape_t *s = &sizes[si];
      size_t bytes = shape_numel(s) * kiln_dtype_size(dt);
      rng_t r = rseed(6, (uint64_t)dt, si, 0);
      unsigned char *h = xmalloc(bytes);
      for (size_t i = 0; i < bytes; i++)
        h[i] = dt == KILN_BOOL ? (unsigned char)(rnext(&r) & 1) : (unsigned char)rnext(&r);
      kiln_tensor *src = upload(dt, s, h), *dst = garbage_tensor(dt, s);
      KOK(kiln_copy(ctx, src, dst));
      KOK(kiln_copy(ctx, src, src)); /* onto itself: a no-op */
      char label[320], sh[64];
      snprintf(label, sizeof label, "copy %s %s", kiln_dtype_name(dt), shape_str(s, sh, sizeof sh));
      void *got = download(label, dst, dt, s);
      ck_assert_msg(bytes == 0 || memcmp(got, h, bytes) == 0, "%s: contents differ", label);
      free(got);
      got = download(label, src, dt, s);
      ck_assert_msg(bytes == 0 || memcmp(got, h, bytes) == 0, "%s: source changed", label);
      free(got);
      KOK(kiln_tensor_release(src));
      KOK(kiln_tensor_release(dst));
      free(h);
    }
  }
}
END_TEST

/* ------------------------------------------------------------------ */
/* Tensors at non-zero offsets of a caller's buffer                    */
/* ------------------------------------------------------------------ */

START_TEST(wrapped_offsets)
{
  kiln_context *ctx = harness_ctx();
  cl_context clc;
  KOK(kiln_context_cl_objects(ctx, &clc, NULL, NULL));
  cl_int err;
  cl_mem mem = clCreateBuffer(clc, CL_MEM_READ_WRITE, 1 << 16, NULL, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  const shape_t s45 = {2, {4, 5}}, s5 = {1, {5}};
  float ha[20], hb[5], want[20];
  int32_t hi[20], wi[20];
  for (int i = 0; i < 20; i++) {
    ha[i] = (float)i * 0.5f - 3.0f;
    hi[i] = i * 7 - 50;
  }
  for (int i = 0; i < 5; i++)
    hb[i] = (float)i - 2.0f;
  kiln_tensor *a, *b, *y, *yi, *ai;
  KOK(kiln_tensor_wrap(ctx, mem, 12, KILN_F32, 2, s45.d, &a));
  KOK(kiln_tensor_wrap(ctx, mem, 1000, KILN_F32, 1, s5.d, &b));
  KOK(kiln_tensor_wrap(ctx, mem, 2004, KILN_F32, 2, s45.d, &y));
  KOK(kiln_tensor_wrap(ctx, mem, 4000, KILN_I32, 2, s45.d, &ai));
  KOK(kiln_tensor_wrap(ctx, mem, 6004, KILN_I32, 2, s45.d, &yi));
  KOK(kiln_tensor_upload(a, ha, sizeof ha));
  KOK(kiln_tensor_upload(b, hb, sizeof hb));
  KOK(kiln_tensor_upload(ai, hi, sizeof hi));
  float got[20];
  int32_t goti[20];

  KOK(kiln_binary(ctx, KILN_OP_MUL, a, b, &y));
  KOK(kiln_tensor_download(y, got, sizeof got));
  for (int i = 0; i < 20; i++)
    want[i] = ha[i] * hb[i % 5];
  ck_assert_mem_eq(got, want, sizeof got);

  KOK(kiln_unary(ctx, KILN_OP_NEG, a, &y));
  KOK(kiln_tensor_download(y, got, sizeof got));
  for (int i = 0; i < 20; i++)
    want[i] = -ha[i];
  ck_assert_mem_eq(got, want, sizeof got);

  KOK(kiln_binary_scalar(ctx, KILN_OP_SUB, a, kiln_scalar_f64(1.0), 1, &y));
  KOK(kiln_tensor_download(y, got, sizeof got));
  for (int i = 0; i < 20; i++)
    want[i] = 1.0f - ha[i];
  ck_assert_mem_eq(got, want, sizeof got);

  KOK(kiln_clamp(ctx, a, kiln_scalar_f64(-1), kiln_scalar_f64(2), &y));
  KOK(kiln_tensor_download(y, got, sizeof got));
  for (int i = 0; i < 20; i++)
    want[i] = ha[i] < -1 ? -1.0f : ha[i] > 2 ? 2.0f : ha[i];
  ck_assert_mem_eq(got, want, sizeof got);

  KOK(kiln_cast(ctx, a, KILN_I32, &yi));
  KOK(kiln_tensor_download(yi, goti, sizeof goti));
  for (int i = 0; i < 20; i++)
    wi[i] = (int32_t)ha[i];
  ck_assert_mem_eq(goti, wi, sizeof goti);

  KOK(kiln_where(ctx, b, a, b, &y)); /* cond f32 broadcast from an offset; hb[2] is 0 */
  KOK(kiln_tensor_download(y, got, sizeof got));
  for (int i = 0; i < 20; i++)
    want[i] = hb[i % 5] != 0 ? ha[i] : hb[i % 5];
  ck_assert_mem_eq(got, want, sizeof got);

  KOK(kiln_binary_scalar(ctx, KILN_OP_SHR, ai, kiln_scalar_i64(2), 0, &yi));
  KOK(kiln_tensor_download(yi, goti, sizeof goti));
  for (int i = 0; i < 20; i++)
    wi[i] = (int32_t)ishr(KILN_I32, hi[i], 2);
  ck_assert_mem_eq(goti, wi, sizeof goti);

  KOK(kiln_copy(ctx, a, y));
  KOK(kiln_tensor_download(y, got, sizeof got));
  ck_assert_mem_eq(got, ha, sizeof got);

  /* Neighbours were left alone: a is intact after all of this. */
  KOK(kiln_tensor_download(a, got, sizeof got));
  ck_assert_mem_eq(got, ha, sizeof got);

  KOK(kiln_tensor_release(a));
  KOK(kiln_tensor_release(b));
  KOK(kiln_tensor_release(y));
  KOK(kiln_tensor_release(ai));
  KOK(kiln_tensor_release(yi));
  clReleaseMemObject(mem);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Empty tensors and 0-d tensors                                       */
/* ------------------------------------------------------------------ */

static void
expect_shape(const kiln_tensor *t, kiln_dtype dt, const shape_t *s, const char *what)
{
  ck_assert_msg(kiln_tensor_dtype(t) == dt, "%s: dtype %s, want %s", what,
                kiln_dtype_name(kiln_tensor_dtype(t)), kiln_dtype_name(dt));
  ck_assert_msg(kiln_tensor_ndim(t) == s->nd, "%s: ndim %zu, want %zu", what, kiln_tensor_ndim(t),
                s->nd);
  for (size_t k = 0; k < s->nd; k++)
    ck_assert_msg(kiln_tensor_dim(t, k) == s->d[k], "%s: dim %zu is %lld, want %lld", what, k,
                  (long long)kiln_tensor_dim(t, k), (long long)s->d[k]);
  ck_assert_uint_eq(kiln_tensor_numel(t), shape_numel(s));
}

/* Asserts the bool tensor y (of shape s) holds want[], then releases it. */
static void
expect_truth(const char *label, kiln_tensor *y, const uint8_t *want, const shape_t *s)
{
  uint8_t *got = download(label, y, KILN_BOOL, s);
  for (size_t i = 0; i < shape_numel(s); i++)
    ck_assert_msg(got[i] == want[i], "%s: element %zu is %u, expected %u", label, i, got[i],
                  want[i]);
  free(got);
  kiln_tensor_release(y);
}

/*
 * The bool invariant from inputs that are not 0/1: a u8 tensor holding every byte value
 * through each op that reads it as a truth value and writes bool (cast, the logical ops,
 * comparisons with 0, isnan/isfinite, where's condition), and bool tensors with scalars such as 7
 * and 0.5 (which become true) through max, min, the bitwise ops and where. Each result must be the
 * truth value as a 0 or 1 byte.
 */
START_TEST(bool_from_bytes)
{
  kiln_context *ctx = harness_ctx();
  const shape_t s = {1, {256}};
  uint8_t bytes[256], bits[256], w[256];
  for (int i = 0; i < 256; i++) {
    bytes[i] = (uint8_t)i;
    bits[i] = (uint8_t)((i * 7 + i / 3) & 1);
  }
  kiln_tensor *u = upload(KILN_U8, &s, bytes), *b = upload(KILN_BOOL, &s, bits), *nb = NULL;
  KOK(kiln_unary(ctx, KILN_OP_LOGICAL_NOT, b, &nb));
/* One op into y, checked against expr of uv (the u8 byte's truth) and bv (the bool). */
#define CHECK_BOOL(label, call, expr)       \
  do {                                      \
    kiln_tensor *y = NULL;                  \
    KOK(call);                              \
    for (int i = 0; i < 256; i++) {         \
      int uv = bytes[i] != 0, bv = bits[i]; \
      w[i] = (uint8_t)(expr);               \
      (void)uv;                             \
      (void)bv;                             \
    }                                       \
    expect_truth(label, y, w, &s);          \
  } while (0)
  CHECK_BOOL("cast u8 to bool", kiln_cast(ctx, u, KILN_BOOL, &y), uv);
  CHECK_BOOL("logical_not u8", kiln_unary(ctx, KILN_OP_LOGICAL_NOT, u, &y), !uv);
  CHECK_BOOL("logical_and u8 u8", kiln_binary(ctx, KILN_OP_LOGICAL_AND, u, u, &y), uv);
  CHECK_BOOL("logical_or u8 0",
             kiln_binary_scalar(ctx, KILN_OP_LOGICAL_OR, u, kiln_scalar_i64(0), 1, &y), uv);
  CHECK_BOOL("logical_xor u8 1",
             kiln_binary_scalar(ctx, KILN_OP_LOGICAL_XOR, u, kiln_scalar_i64(1), 0, &y), !uv);
  CHECK_BOOL("ne u8 0", kiln_binary_scalar(ctx, KILN_OP_NE, u, kiln_scalar_i64(0), 0, &y), uv);
  CHECK_BOOL("isfinite u8", kiln_unary(ctx, KILN_OP_ISFINITE, u, &y), 1);
  CHECK_BOOL("isnan u8", kiln_unary(ctx, KILN_OP_ISNAN, u, &y), 0);
  CHECK_BOOL("max bool 7", kiln_binary_scalar(ctx, KILN_OP_MAX, b, kiln_scalar_i64(7), 0, &y), 1);
  CHECK_BOOL("min 0.5 bool", kiln_binary_scalar(ctx, KILN_OP_MIN, b, kiln_scalar_f64(0.5), 1, &y),
             bv);
  CHECK_BOOL("bitwise_and bool 6",
             kiln_binary_scalar(ctx, KILN_OP_BITWISE_AND, b, kiln_scalar_i64(6), 0, &y), bv);
  CHECK_BOOL("bitwise_xor bool 255",
             kiln_binary_scalar(ctx, KILN_OP_BITWISE_XOR, b, kiln_scalar_i64(255), 0, &y), !bv);
  CHECK_BOOL("bitwise_not bool", kiln_unary(ctx, KILN_OP_BITWISE_NOT, b, &y), !bv);
  CHECK_BOOL("eq bool 2", kiln_binary_scalar(ctx, KILN_OP_EQ, b, kiln_scalar_i64(2), 0, &y), bv);
  CHECK_BOOL("where(u8, bool, !bool)", kiln_where(ctx, u, b, nb, &y), uv ? bv : !bv);
#undef CHECK_BOOL
  kiln_tensor_release(nb);
  kiln_tensor_release(u);
  kiln_tensor_release(b);
}
END_TEST

START_TEST(zero_size_tensors)
{
  kiln_context *ctx = harness_ctx();
  const shape_t empties[] = {{2, {0, 5}}, {3, {3, 0, 2}}, {1, {0}}};
  for (size_t d = 0; d < NEW_DTYPES; d++) {
    kiln_dtype dt = ew_dtypes[d];
    if (dt == KILN_F64 && !harness_has_fp64())
      continue;
    for (size_t e = 0; e < sizeof empties / sizeof empties[0]; e++) {
      const shape_t *s = &empties[e];
      char what[128], sh[64];
      kiln_tensor *x = NULL, *y = NULL;
      KOK(kiln_tensor_create(ctx, dt, s->nd, s->d, &x));
      for (int op = 0; op < KILN_UNARY_OP_COUNT; op++) {
        if (!kiln_unary_op_supports((kiln_unary_op)op, dt))
          continue;
        snprintf(what, sizeof what, "unary %s %s %s", unary_info[op].name, kiln_dtype_name(dt),
                 shape_str(s, sh, sizeof sh));
        y = NULL;
        KOK(kiln_unary(ctx, (kiln_unary_op)op, x, &y));
        expect_shape(y, unary_info[op].res_bool ? KILN_BOOL : dt, s, what);
        KOK(kiln_tensor_release(y));
      }
      for (int op = 0; op < KILN_BINARY_OP_COUNT; op++) {
        if (!kiln_binary_op_supports((kiln_binary_op)op, dt))
          continue;
        kiln_dtype rdt = binary_info[op].res_bool ? KILN_BOOL : dt;
        snprintf(what, sizeof what, "binary %s %s %s", binary_info[op].name, kiln_dtype_name(dt),
                 shape_str(s, sh, sizeof sh));
        y = NULL;
        KOK(kiln_binary(ctx, (kiln_binary_op)op, x, x, &y));
        expect_shape(y, rdt, s, what);
        KOK(kiln_tensor_release(y));
        y = NULL;
        KOK(kiln_binary_scalar(ctx, (kiln_binary_op)op, x, kiln_scalar_i64(1), 1, &y));
        expect_shape(y, rdt, s, what);
        KOK(kiln_tensor_release(y));
      }
      /* Broadcasting against a 1 or a matching trailing dimension keeps the zero. */
      shape_t ones = {s->nd, {0}};
      for (size_t k = 0; k < s->nd; k++)
        ones.d[k] = 1;
      const shape_t trail = {1, {s->d[s->nd - 1]}};
      const shape_t *others[] = {&ones, &trail};
      for (size_t o = 0; o < 2; o++) {
        kiln_tensor *t1 = NULL;
        KOK(kiln_tensor_zeros(ctx, dt, others[o]->nd, others[o]->d, &t1));
        snprintf(what, sizeof what, "broadcast %s %s", kiln_dtype_name(dt), shape_str(s, sh, sizeof sh));
        y = NULL;
        KOK(kiln_binary(ctx, KILN_OP_MAX, t1, x, &y));
        expect_shape(y, dt, s, what);
        KOK(kiln_tensor_release(y));
        /* A 16-bit float condition would go through kiln_cast: theirs is bool. */
        kiln_tensor *c1 = t1;
        if (is_half(dt))
          KOK(kiln_tensor_zeros(ctx, KILN_BOOL, others[o]->nd, others[o]->d, &c1));
        y = NULL;
        KOK(kiln_where(ctx, c1, x, t1, &y));
        expect_shape(y, dt, s, what);
        KOK(kiln_tensor_release(y));
        if (c1 != t1)
          KOK(kiln_tensor_release(c1));
        y = NULL;
        if (!is_half(dt)) {
          KOK(kiln_where(ctx, x, t1, t1, &y));
          expect_shape(y, dt, s, what);
          KOK(kiln_tensor_release(y));
        }
        KOK(kiln_tensor_release(t1));
      }
      if (dt != KILN_BOOL) {
        y = NULL;
        KOK(kiln_clamp(ctx, x, kiln_scalar_i64(0), kiln_scalar_i64(1), &y));
        expect_shape(y, dt, s, "clamp");
        KOK(kiln_tensor_release(y));
      }
      for (size_t d2 = 0; d2 < NDTYPES && !is_half(dt); d2++) {
        if (all_dtypes[d2] == KILN_F64 && !harness_has_fp64())
          continue;
        y = NULL;
        KOK(kiln_cast(ctx, x, all_dtypes[d2], &y));
        expect_shape(y, all_dtypes[d2], s, "cast");
        KOK(kiln_tensor_release(y));
      }
      KOK(kiln_tensor_create(ctx, dt, s->nd, s->d, &y));
      KOK(kiln_copy(ctx, x, y));
      KOK(kiln_tensor_release(y));
      KOK(kiln_tensor_release(x));
    }
  }
}
END_TEST

START_TEST(zero_dim_tensors)
{
  kiln_context *ctx = harness_ctx();
  const shape_t s0 = {0, {0}};
  float v = -2.25f, got = 0;
  kiln_tensor *x = upload(KILN_F32, &s0, &v), *y = NULL;
  KOK(kiln_unary(ctx, KILN_OP_ABS, x, &y));
  expect_shape(y, KILN_F32, &s0, "abs of a 0-d tensor");
  KOK(kiln_tensor_download(y, &got, sizeof got));
  ck_assert(got == 2.25f);
  KOK(kiln_tensor_release(y));
  y = NULL;
  KOK(kiln_binary(ctx, KILN_OP_MUL, x, x, &y));
  expect_shape(y, KILN_F32, &s0, "0-d * 0-d");
  KOK(kiln_tensor_download(y, &got, sizeof got));
  ck_assert(got == 5.0625f);
  KOK(kiln_tensor_release(y));
  y = NULL;
  uint8_t t = 1;
  kiln_tensor *c = upload(KILN_BOOL, &s0, &t);
  KOK(kiln_where(ctx, c, x, x, &y));
  expect_shape(y, KILN_F32, &s0, "where of 0-d tensors");
  KOK(kiln_tensor_release(y));
  KOK(kiln_tensor_release(c));
  KOK(kiln_tensor_release(x));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Bad input                                                           */
/* ------------------------------------------------------------------ */

/* KEXPECT on a fresh error record, so a message left by an earlier failure does not count. */
#define EXPECT_ERR(call, status) \
  do {                           \
    kiln_clear_error();          \
    KEXPECT(call, status);       \
  } while (0)

#define EXPECT_MSG_HAS(text)                                                                  \
  ck_assert_msg(strstr(kiln_last_error(), (text)) != NULL, "message \"%s\" lacks \"%s\"", \
                kiln_last_error(), (text))

static kiln_tensor *
make(kiln_context *ctx, kiln_dtype dt, size_t nd, int64_t d0, int64_t d1)
{
  int64_t d[2] = {d0, d1};
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_zeros(ctx, dt, nd, d, &t));
  return t;
}

START_TEST(bad_handles)
{
  kiln_context *ctx = harness_ctx();
  kiln_tensor *x = make(ctx, KILN_F32, 2, 3, 4), *out = NULL;
  kiln_scalar one = kiln_scalar_f64(1);

  /* NULL context */
  EXPECT_ERR(kiln_unary(NULL, KILN_OP_EXP, x, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_binary(NULL, KILN_OP_ADD, x, x, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_binary_scalar(NULL, KILN_OP_ADD, x, one, 0, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_where(NULL, x, x, x, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_clamp(NULL, x, one, one, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_cast(NULL, x, KILN_I32, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_copy(NULL, x, x), KILN_ERR_INVALID_HANDLE);
  ck_assert_ptr_null(out);

  /* NULL tensors */
  EXPECT_ERR(kiln_unary(ctx, KILN_OP_EXP, NULL, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_binary(ctx, KILN_OP_ADD, NULL, x, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_binary(ctx, KILN_OP_ADD, x, NULL, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_binary_scalar(ctx, KILN_OP_ADD, NULL, one, 1, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_where(ctx, NULL, x, x, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_where(ctx, x, NULL, x, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_where(ctx, x, x, NULL, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_clamp(ctx, NULL, one, one, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_cast(ctx, NULL, KILN_I32, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_copy(ctx, NULL, x), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_copy(ctx, x, NULL), KILN_ERR_INVALID_HANDLE);
  ck_assert_ptr_null(out);

  /* NULL out */
  EXPECT_ERR(kiln_unary(ctx, KILN_OP_EXP, x, NULL), KILN_ERR_INVALID_ARGUMENT);
  EXPECT_ERR(kiln_binary(ctx, KILN_OP_ADD, x, x, NULL), KILN_ERR_INVALID_ARGUMENT);
  EXPECT_ERR(kiln_binary_scalar(ctx, KILN_OP_ADD, x, one, 0, NULL), KILN_ERR_INVALID_ARGUMENT);
  EXPECT_ERR(kiln_where(ctx, x, x, x, NULL), KILN_ERR_INVALID_ARGUMENT);
  EXPECT_ERR(kiln_clamp(ctx, x, one, one, NULL), KILN_ERR_INVALID_ARGUMENT);
  EXPECT_ERR(kiln_cast(ctx, x, KILN_I32, NULL), KILN_ERR_INVALID_ARGUMENT);

  /* Released tensors, as input and as given output */
  kiln_tensor *dead = make(ctx, KILN_F32, 2, 3, 4);
  KOK(kiln_tensor_release(dead));
  EXPECT_ERR(kiln_unary(ctx, KILN_OP_ABS, dead, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_binary(ctx, KILN_OP_ADD, x, dead, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_binary_scalar(ctx, KILN_OP_ADD, dead, one, 0, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_where(ctx, dead, x, x, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_clamp(ctx, dead, one, one, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_cast(ctx, dead, KILN_I32, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_copy(ctx, dead, x), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_copy(ctx, x, dead), KILN_ERR_INVALID_HANDLE);
  ck_assert_ptr_null(out);
  EXPECT_ERR(kiln_tensor_release(dead), KILN_ERR_INVALID_HANDLE); /* twice */
  kiln_tensor *dead_out = dead;
  EXPECT_ERR(kiln_unary(ctx, KILN_OP_ABS, x, &dead_out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_binary(ctx, KILN_OP_ADD, x, x, &dead_out), KILN_ERR_INVALID_HANDLE);
  ck_assert_ptr_eq(dead_out, dead);

  /* A released context, and a tensor whose context was released */
  kiln_context *c3 = NULL;
  KOK(kiln_context_create(NULL, &c3));
  kiln_tensor *orphan = make(c3, KILN_F32, 2, 3, 4);
  KOK(kiln_context_release(c3));
  EXPECT_ERR(kiln_unary(c3, KILN_OP_ABS, orphan, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_unary(ctx, KILN_OP_ABS, orphan, &out), KILN_ERR_INVALID_HANDLE);
  EXPECT_ERR(kiln_binary(ctx, KILN_OP_ADD, x, orphan, &out), KILN_ERR_INVALID_HANDLE);
  ck_assert_ptr_null(out);
  KOK(kiln_tensor_release(orphan));

  KOK(kiln_tensor_release(x));
}
END_TEST

START_TEST(bad_ops_and_dtypes)
{
  kiln_context *ctx = harness_ctx();
  kiln_tensor *f = make(ctx, KILN_F32, 2, 3, 4), *i = make(ctx, KILN_I32, 2, 3, 4);
  kiln_tensor *bl = make(ctx, KILN_BOOL, 2, 3, 4), *out = NULL;
  kiln_scalar one = kiln_scalar_i64(1);

  /* Ops outside the enum */
  EXPECT_ERR(kiln_unary(ctx, KILN_UNARY_OP_COUNT, f, &out), KILN_ERR_INVALID_ARGUMENT);
  EXPECT_ERR(kiln_unary(ctx, (kiln_unary_op)-1, f, &out), KILN_ERR_INVALID_ARGUMENT);
  EXPECT_ERR(kiln_binary(ctx, KILN_BINARY_OP_COUNT, f, f, &out), KILN_ERR_INVALID_ARGUMENT);
  EXPECT_ERR(kiln_binary(ctx, (kiln_binary_op)1000, f, f, &out), KILN_ERR_INVALID_ARGUMENT);
  EXPECT_ERR(kiln_binary_scalar(ctx, KILN_BINARY_OP_COUNT, f, one, 0, &out),
             KILN_ERR_INVALID_ARGUMENT);
  EXPECT_ERR(kiln_cast(ctx, f, KILN_DTYPE_COUNT, &out), KILN_ERR_INVALID_ARGUMENT);
  EXPECT_ERR(kiln_cast(ctx, f, (kiln_dtype)-1, &out), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(out);

  /* dtypes an op does not accept: every unsupported (op, dtype) pair of the real table
   * (complex has its own table and its refusals are tested in test_complex.c) */
  static const kiln_dtype bad_dtypes[] = {KILN_F32,  KILN_F64, KILN_I32,  KILN_I64,
                                          KILN_U8,   KILN_BOOL, KILN_F16, KILN_BF16};
  for (size_t d = 0; d < sizeof bad_dtypes / sizeof bad_dtypes[0]; d++) {
    kiln_dtype dt = bad_dtypes[d];
    if (dt == KILN_F64 && !harness_has_fp64())
      continue;
    kiln_tensor *t = make(ctx, dt, 1, 4, 0);
    for (int op = 0; op < KILN_UNARY_OP_COUNT; op++) {
      if (unary_info[op].dtypes & DTB(dt))
        continue;
      EXPECT_ERR(kiln_unary(ctx, (kiln_unary_op)op, t, &out), KILN_ERR_DTYPE);
      EXPECT_MSG_HAS(unary_info[op].name);
      EXPECT_MSG_HAS(kiln_dtype_name(dt));
    }
    for (int op = 0; op < KILN_BINARY_OP_COUNT; op++) {
      if (binary_info[op].dtypes & DTB(dt))
        continue;
      EXPECT_ERR(kiln_binary(ctx, (kiln_binary_op)op, t, t, &out), KILN_ERR_DTYPE);
      EXPECT_MSG_HAS(binary_info[op].name);
      EXPECT_MSG_HAS(kiln_dtype_name(dt));
      EXPECT_ERR(kiln_binary_scalar(ctx, (kiln_binary_op)op, t, one, 1, &out), KILN_ERR_DTYPE);
    }
    KOK(kiln_tensor_release(t));
  }
  EXPECT_ERR(kiln_unary(ctx, KILN_OP_EXP, i, &out), KILN_ERR_DTYPE);
  EXPECT_ERR(kiln_binary(ctx, KILN_OP_BITWISE_AND, f, f, &out), KILN_ERR_DTYPE);
  EXPECT_ERR(kiln_clamp(ctx, bl, one, one, &out), KILN_ERR_DTYPE);
  ck_assert_ptr_null(out);

  /* Mixed dtypes */
  EXPECT_ERR(kiln_binary(ctx, KILN_OP_ADD, f, i, &out), KILN_ERR_DTYPE);
  EXPECT_MSG_HAS("f32");
  EXPECT_MSG_HAS("i32");
  EXPECT_ERR(kiln_binary(ctx, KILN_OP_EQ, bl, i, &out), KILN_ERR_DTYPE);
  EXPECT_ERR(kiln_where(ctx, bl, f, i, &out), KILN_ERR_DTYPE);
  EXPECT_ERR(kiln_copy(ctx, f, i), KILN_ERR_DTYPE);
  ck_assert_ptr_null(out);

  KOK(kiln_tensor_release(f));
  KOK(kiln_tensor_release(i));
  KOK(kiln_tensor_release(bl));
}
END_TEST

START_TEST(bad_shapes_and_outputs)
{
  kiln_context *ctx = harness_ctx();
  kiln_tensor *a = make(ctx, KILN_F32, 2, 3, 4), *b = make(ctx, KILN_F32, 1, 5, 0);
  kiln_tensor *z = make(ctx, KILN_F32, 1, 0, 0), *out = NULL;

  /* Not broadcastable: the message names both shapes */
  EXPECT_ERR(kiln_binary(ctx, KILN_OP_ADD, a, b, &out), KILN_ERR_SHAPE);
  EXPECT_MSG_HAS("[3,4]");
  EXPECT_MSG_HAS("[5]");
  EXPECT_ERR(kiln_binary(ctx, KILN_OP_LT, b, a, &out), KILN_ERR_SHAPE);
  EXPECT_MSG_HAS("[3,4]");
  EXPECT_MSG_HAS("[5]");
  EXPECT_ERR(kiln_where(ctx, b, a, a, &out), KILN_ERR_SHAPE);
  EXPECT_ERR(kiln_where(ctx, a, a, b, &out), KILN_ERR_SHAPE);
  EXPECT_ERR(kiln_binary(ctx, KILN_OP_ADD, z, b, &out), KILN_ERR_SHAPE); /* 0 vs 5 */
  ck_assert_ptr_null(out);

  /* A given output of the wrong shape or dtype is refused and left as it was */
  kiln_tensor *o43 = make(ctx, KILN_F32, 2, 4, 3), *oi = make(ctx, KILN_I32, 2, 3, 4);
  EXPECT_ERR(kiln_copy(ctx, a, o43), KILN_ERR_SHAPE);
  EXPECT_MSG_HAS("[3,4]");
  EXPECT_MSG_HAS("[4,3]");
  kiln_tensor *ob = make(ctx, KILN_BOOL, 2, 3, 4), *o = o43;
  EXPECT_ERR(kiln_unary(ctx, KILN_OP_EXP, a, &o), KILN_ERR_SHAPE);
  EXPECT_ERR(kiln_binary(ctx, KILN_OP_ADD, a, a, &o), KILN_ERR_SHAPE);
  EXPECT_ERR(kiln_binary_scalar(ctx, KILN_OP_ADD, a, kiln_scalar_f64(1), 1, &o), KILN_ERR_SHAPE);
  EXPECT_ERR(kiln_where(ctx, a, a, a, &o), KILN_ERR_SHAPE);
  EXPECT_ERR(kiln_clamp(ctx, a, kiln_scalar_f64(0), kiln_scalar_f64(1), &o), KILN_ERR_SHAPE);
  EXPECT_ERR(kiln_cast(ctx, a, KILN_F32, &o), KILN_ERR_SHAPE);
  ck_assert_ptr_eq(o, o43);
  o = oi;
  EXPECT_ERR(kiln_unary(ctx, KILN_OP_EXP, a, &o), KILN_ERR_DTYPE);
  EXPECT_ERR(kiln_binary(ctx, KILN_OP_ADD, a, a, &o), KILN_ERR_DTYPE);
  EXPECT_ERR(kiln_binary(ctx, KILN_OP_EQ, a, a, &o), KILN_ERR_DTYPE); /* needs bool */
  EXPECT_ERR(kiln_where(ctx, a, a, a, &o), KILN_ERR_DTYPE);
  EXPECT_ERR(kiln_clamp(ctx, a, kiln_scalar_f64(0), kiln_scalar_f64(1), &o), KILN_ERR_DTYPE);
  EXPECT_ERR(kiln_cast(ctx, a, KILN_I64, &o), KILN_ERR_DTYPE);
  ck_assert_ptr_eq(o, oi);
  o = a; /* in place is only allowed when the result has the input's dtype */
  EXPECT_ERR(kiln_unary(ctx, KILN_OP_ISNAN, a, &o), KILN_ERR_DTYPE);
  EXPECT_ERR(kiln_binary(ctx, KILN_OP_GT, a, a, &o), KILN_ERR_DTYPE);
  o = ob;
  KOK(kiln_binary(ctx, KILN_OP_GT, a, a, &o)); /* the right one is accepted */
  ck_assert_ptr_eq(o, ob);

  /* Tensors of another context, as output and as input */
  kiln_context *c2 = NULL;
  KOK(kiln_context_create(NULL, &c2));
  kiln_tensor *foreign = make(c2, KILN_F32, 2, 3, 4), *fo = foreign;
  EXPECT_ERR(kiln_unary(ctx, KILN_OP_EXP, a, &fo), KILN_ERR_CONTEXT_MISMATCH);
  EXPECT_ERR(kiln_binary(ctx, KILN_OP_ADD, a, a, &fo), KILN_ERR_CONTEXT_MISMATCH);
  EXPECT_ERR(kiln_binary_scalar(ctx, KILN_OP_ADD, a, kiln_scalar_f64(1), 0, &fo),
             KILN_ERR_CONTEXT_MISMATCH);
  EXPECT_ERR(kiln_where(ctx, a, a, a, &fo), KILN_ERR_CONTEXT_MISMATCH);
  EXPECT_ERR(kiln_clamp(ctx, a, kiln_scalar_f64(0), kiln_scalar_f64(1), &fo),
             KILN_ERR_CONTEXT_MISMATCH);
  EXPECT_ERR(kiln_cast(ctx, a, KILN_F32, &fo), KILN_ERR_CONTEXT_MISMATCH);
  EXPECT_ERR(kiln_copy(ctx, a, foreign), KILN_ERR_CONTEXT_MISMATCH);
  ck_assert_ptr_eq(fo, foreign);
  EXPECT_ERR(kiln_binary(ctx, KILN_OP_ADD, a, foreign, &out), KILN_ERR_CONTEXT_MISMATCH);
  EXPECT_ERR(kiln_unary(c2, KILN_OP_EXP, a, &out), KILN_ERR_CONTEXT_MISMATCH);
  EXPECT_ERR(kiln_where(ctx, foreign, a, a, &out), KILN_ERR_CONTEXT_MISMATCH);
  ck_assert_ptr_null(out);
  KOK(kiln_tensor_release(foreign));
  KOK(kiln_context_release(c2));

  KOK(kiln_tensor_release(a));
  KOK(kiln_tensor_release(b));
  KOK(kiln_tensor_release(z));
  KOK(kiln_tensor_release(o43));
  KOK(kiln_tensor_release(oi));
  KOK(kiln_tensor_release(ob));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Flat launch shapes: every vector width and item count the tuner picks */
/* ------------------------------------------------------------------ */

/*
 * The shapes each dtype runs. The tuner's candidates for the elementwise family
 * (lib/ops/elementwise.c) are 1, 2, 4 and 8 for both items_per_thread and vec_width; every
 * program variant is a build of the whole elementwise program, so instead of the cross
 * product each dtype takes four shapes that between them hold every value of both, its
 * CPU default (the program the other cases use: no build of its own) and its GPU default
 * (ew_default_shape: 2 items of 4-wide vectors for 4-byte types and f16, 2 of 8 for bf16,
 * 2 of 2 for 8-byte types, 4 scalars for complex ones; CPU devices: one 4-wide vector for
 * 8-byte types), with widths 2, 4 and 8 beside item counts above 1. Width 1 with
 * one item (bf16's vec_width 1) comes from the misaligned offsets, which run where they
 * fall back to a program that exists anyway: width 1 shapes, and one item (the plain
 * program the broadcast and offset cases build). f16 and bf16 vectors move through
 * vloada_halfN / ushortN, so they take every width too; the item loop is the same code for
 * every dtype.
 */
static const kiln_dtype flat_dtypes[] = {KILN_F32, KILN_I64,  KILN_U8,
                                         KILN_F16, KILN_BF16, KILN_F64};
#define NFLAT_DTYPES (sizeof flat_dtypes / sizeof flat_dtypes[0])
#define NFLAT_SHAPES 4
static const uint32_t flat_shapes[NFLAT_DTYPES][NFLAT_SHAPES][2] = {
    {{1, 8}, {2, 4}, {4, 2}, {8, 1}}, /* f32 */
    {{1, 4}, {4, 1}, {2, 2}, {8, 8}}, /* i64 */
    {{1, 8}, {4, 1}, {2, 4}, {8, 2}}, /* u8 */
    {{1, 8}, {2, 4}, {4, 2}, {8, 1}}, /* f16 */
    {{1, 8}, {2, 8}, {4, 2}, {8, 4}}, /* bf16 */
    {{1, 4}, {4, 1}, {2, 2}, {8, 8}}, /* f64 */
};

/*
 * Whether shape s of dtype d runs: always, and in the small mode two shapes of each dtype,
 * which between them still hold every value of both parameters.
 */
static int
flat_shape_runs(size_t d, size_t s)
{
  return !harness_small() || s == d % NFLAT_SHAPES || s == (d + 2) % NFLAT_SHAPES;
}

/* Host value of element i: small integers, exact in every dtype and for +, *, -. */
static int64_t
flat_value(kiln_dtype dt, uint64_t i, int which)
{
  int64_t v = (int64_t)((i * 2654435761u + (uint64_t)which * 97u) % 23u);
  return dt == KILN_U8 ? v : v - 11;
}

static void
flat_fill(kiln_dtype dt, void *p, uint64_t n, int which)
{
  for (uint64_t i = 0; i < n; i++) {
    int64_t v = flat_value(dt, i, which);
    if (dt == KILN_F32)
      ((float *)p)[i] = (float)v;
    else if (dt == KILN_F64)
      ((double *)p)[i] = (double)v;
    else if (is_half(dt))
      putf(dt, p, i, (double)v);
    else if (dt == KILN_I64)
      ((int64_t *)p)[i] = v;
    else
      ((uint8_t *)p)[i] = (uint8_t)v;
  }
}

/* Checks n elements of dtype dt (or bool) at got against want(i). */
#define FLAT_CHECK(what, dt, got, n, want_expr)                                            \
  for (uint64_t i = 0; i < (n); i++) {                                                     \
    int64_t want_ = (want_expr), got_ = (int64_t)getf((dt), (got), i);                     \
    if ((dt) == KILN_U8 || (dt) == KILN_BOOL)                                              \
      want_ &= 0xff;                                                                       \
    ck_assert_msg(got_ == want_, "%s, items %u vec %u, %s n=%llu offset %llu: [%llu] = %lld, want %lld", \
                  what, items, vec, kiln_dtype_name(dt), (unsigned long long)(n),          \
                  (unsigned long long)off, (unsigned long long)i, (long long)got_,         \
                  (long long)want_);                                                       \
  }

START_TEST(flat_shape_case)
{
  const size_t d = (size_t)_i / NFLAT_SHAPES, shape_i = (size_t)_i % NFLAT_SHAPES;
  const uint32_t items = flat_shapes[d][shape_i][0], vec = flat_shapes[d][shape_i][1];
  const kiln_dtype dt = flat_dtypes[d];
  if (!flat_shape_runs(d, shape_i) || (dt == KILN_F64 && !harness_has_fp64()))
    return;
  /* Misaligned views (width 1) only where that program is built anyway (see flat_shapes). */
  const int misaligned = items == 1 || vec == 1;
  kiln_context *ctx = harness_ctx();
  char params[64];
  /* the simulator: 16-lane groups, so that 1000 elements span several groups at every shape */
  snprintf(params, sizeof params, "%sitems_per_thread=%u vec_width=%u",
           harness_small() ? "wg_size=16 " : "", items, vec);
  KOK(kiln_tune_override(ctx, "elementwise", dt, NULL, params));
  char got_params[256];
  kiln_tune_source src;
  KOK(kiln_tune_params_get(ctx, "elementwise", dt, "flat.2^10", got_params, sizeof got_params,
                           &src));
  ck_assert_int_eq(src, KILN_TUNE_SOURCE_OVERRIDE);
  ck_assert_ptr_nonnull(strstr(got_params, params));

  cl_context clc;
  KOK(kiln_context_cl_objects(ctx, &clc, NULL, NULL));
  /* Sizes around the vector and item multiples, a prime, and more than one round of groups. */
  static const uint64_t flat_sizes[] = {1, 3, 7, 8, 61, 1000, 4099, 65537};
  size_t esz = kiln_dtype_size(dt);
  uint64_t nmax = 65537;
  /* Element offsets: aligned to every width, aligned to vec only, and misaligned (width 1). */
  const uint64_t offsets[] = {0, vec, 1};
  void *ha = malloc(nmax * esz), *hb = malloc(nmax * esz), *got = malloc(nmax * esz);
  uint8_t *hc = malloc(nmax);
  ck_assert(ha && hb && got && hc);
  cl_int err;
  cl_mem mem =
      clCreateBuffer(clc, CL_MEM_READ_WRITE, 4 * ((nmax + 31) & ~(uint64_t)15) * esz, NULL, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  for (size_t si = 0; si < sizeof flat_sizes / sizeof flat_sizes[0]; si++) {
    for (size_t oi = 0; oi < 3; oi++) {
      uint64_t n = flat_sizes[si], off = offsets[oi];
      if ((si >= 6 && oi == 1) /* large sizes: aligned and misaligned only */ ||
          (oi == 2 && !misaligned) || (oi == 1 && vec == 1) /* offset 1: oi 2 */ ||
          !harness_fits(n) || (harness_small() && n > 1000) /* the simulator: up to 1000 */)
        continue;
      int64_t shape[1] = {(int64_t)n};
      /* Regions of the buffer for a, b, cond, y, each starting at a multiple of 16
       * elements, so that the offsets above decide every operand's alignment. */
      size_t stride = ((nmax + 31) & ~(uint64_t)15) * esz;
      kiln_tensor *a, *b, *c, *y, *yb = NULL, *tmp = NULL;
      KOK(kiln_tensor_wrap(ctx, mem, off * esz, dt, 1, shape, &a));
      KOK(kiln_tensor_wrap(ctx, mem, stride + off * esz, dt, 1, shape, &b));
      KOK(kiln_tensor_wrap(ctx, mem, 2 * stride + off, KILN_BOOL, 1, shape, &c));
      KOK(kiln_tensor_wrap(ctx, mem, 3 * stride + off * esz, dt, 1, shape, &y));
      flat_fill(dt, ha, n, 0);
      flat_fill(dt, hb, n, 1);
      for (uint64_t i = 0; i < n; i++)
        hc[i] = (uint8_t)(flat_value(dt, i, 2) & 1);
      KOK(kiln_tensor_upload(a, ha, n * esz));
      KOK(kiln_tensor_upload(b, hb, n * esz));
      KOK(kiln_tensor_upload(c, hc, n));

      KOK(kiln_binary(ctx, KILN_OP_ADD, a, b, &y));
      KOK(kiln_tensor_download(y, got, n * esz));
      FLAT_CHECK("add", dt, got, n, flat_value(dt, i, 0) + flat_value(dt, i, 1));

      KOK(kiln_binary_scalar(ctx, KILN_OP_SUB, a, kiln_scalar_i64(5), 1, &y));
      KOK(kiln_tensor_download(y, got, n * esz));
      FLAT_CHECK("5 - a", dt, got, n, 5 - flat_value(dt, i, 0));

      KOK(kiln_binary_scalar(ctx, KILN_OP_MUL, b, kiln_scalar_i64(3), 0, &y));
      KOK(kiln_tensor_download(y, got, n * esz));
      FLAT_CHECK("b * 3", dt, got, n, flat_value(dt, i, 1) * 3);

      KOK(kiln_binary(ctx, KILN_OP_LT, a, b, &yb));
      KOK(kiln_tensor_download(yb, got, n));
      hd_expect_bool01(KILN_BOOL, got, n, "a < b");
      FLAT_CHECK("a < b", KILN_BOOL, got, n, flat_value(dt, i, 0) < flat_value(dt, i, 1));

      KOK(kiln_unary(ctx, KILN_OP_NEG, a, &y));
      KOK(kiln_tensor_download(y, got, n * esz));
      FLAT_CHECK("-a", dt, got, n, -flat_value(dt, i, 0));

      KOK(kiln_clamp(ctx, b, kiln_scalar_i64(2), kiln_scalar_i64(9), &y));
      KOK(kiln_tensor_download(y, got, n * esz));
      FLAT_CHECK("clamp(b, 2, 9)", dt, got, n,
                 flat_value(dt, i, 1) < 2 ? 2 : flat_value(dt, i, 1) > 9 ? 9 : flat_value(dt, i, 1));

      KOK(kiln_where(ctx, c, a, b, &y));
      KOK(kiln_tensor_download(y, got, n * esz));
      FLAT_CHECK("where(c, a, b)", dt, got, n, hc[i] ? flat_value(dt, i, 0) : flat_value(dt, i, 1));

      /* Broadcasts run in the same program with its items per work-item: a [rows, w] view
       * of a plus b's first w elements as a row, and minus b's first rows as a column; w = 61
       * takes the element path, w = 64 (a multiple of every width) the vector path of
       * binary ops (flag 16) where the width is above 1. */
      for (int64_t w = 61; w <= 64 && (uint64_t)w <= n; w += 3) {
        int64_t rows = (int64_t)(n / (uint64_t)w), s2[2] = {rows, w}, srow[1] = {w},
                scol[2] = {rows, 1};
        uint64_t n2 = (uint64_t)rows * (uint64_t)w, uw = (uint64_t)w;
        kiln_tensor *a2, *brow, *bcol, *y2 = NULL, *y2b = NULL;
        KOK(kiln_tensor_wrap(ctx, mem, off * esz, dt, 2, s2, &a2));
        KOK(kiln_tensor_wrap(ctx, mem, stride + off * esz, dt, 1, srow, &brow));
        KOK(kiln_tensor_wrap(ctx, mem, stride + off * esz, dt, 2, scol, &bcol));
        KOK(kiln_binary(ctx, KILN_OP_ADD, a2, brow, &y2));
        KOK(kiln_tensor_download(y2, got, n2 * esz));
        FLAT_CHECK("a[rows,w] + b[w]", dt, got, n2,
                   flat_value(dt, i, 0) + flat_value(dt, i % uw, 1));
        KOK(kiln_binary(ctx, KILN_OP_SUB, a2, bcol, &y2));
        KOK(kiln_tensor_download(y2, got, n2 * esz));
        FLAT_CHECK("a[rows,w] - b[rows,1]", dt, got, n2,
                   flat_value(dt, i, 0) - flat_value(dt, i / uw, 1));
        KOK(kiln_binary(ctx, KILN_OP_LT, a2, brow, &y2b));
        KOK(kiln_tensor_download(y2b, got, n2));
        FLAT_CHECK("a[rows,w] < b[w]", KILN_BOOL, got, n2,
                   flat_value(dt, i, 0) < flat_value(dt, i % uw, 1));
        KOK(kiln_tensor_release(y2b));
        KOK(kiln_tensor_release(y2));
        KOK(kiln_tensor_release(bcol));
        KOK(kiln_tensor_release(brow));
        KOK(kiln_tensor_release(a2));
      }

      /* In place: each item's loads come before its stores. */
      KOK(kiln_binary(ctx, KILN_OP_ADD, a, b, &a));
      KOK(kiln_tensor_download(a, got, n * esz));
      FLAT_CHECK("a += b", dt, got, n, flat_value(dt, i, 0) + flat_value(dt, i, 1));

      /* A fresh output (pool-allocated, offset 0) from a possibly misaligned input. */
      KOK(kiln_unary(ctx, KILN_OP_NEG, b, &tmp));
      KOK(kiln_tensor_download(tmp, got, n * esz));
      FLAT_CHECK("-b (new output)", dt, got, n, -flat_value(dt, i, 1));

      KOK(kiln_tensor_release(tmp));
      KOK(kiln_tensor_release(yb));
      KOK(kiln_tensor_release(a));
      KOK(kiln_tensor_release(b));
      KOK(kiln_tensor_release(c));
      KOK(kiln_tensor_release(y));
    }
  }
  clReleaseMemObject(mem);
  free(ha);
  free(hb);
  free(hc);
  free(got);
  KOK(kiln_tune_override(ctx, "elementwise", dt, NULL, NULL));
}
END_TEST

/*
 * Copies of 16 MiB and more store whole 64-byte vectors non-temporally on CPU devices
 * (KILN_NT_STORE, copy_nt_store in lib/ops/elementwise.c): kiln_copy of 2^22 + 5 f32 and
 * 2^21 + 3 f64 (a tail after the last vector) and of a view at an offset of 4 elements
 * (narrower vectors: plain stores), against the host. GPUs run the plain stores here.
 */
START_TEST(nt_store_copies)
{
  kiln_dtype dt = _i ? KILN_F64 : KILN_F32;
  if (dt == KILN_F64 && !harness_has_fp64())
    return;
  int64_t n = _i ? ((int64_t)1 << 21) + 3 : ((int64_t)1 << 22) + 5, m = n - 4;
  if (!harness_fits((uint64_t)n))
    return;
  size_t esz = kiln_dtype_size(dt);
  kiln_context *ctx = harness_ctx();
  void *ha = malloc((size_t)n * esz), *got = malloc((size_t)n * esz);
  ck_assert(ha && got);
  for (int64_t i = 0; i < n; i++)
    putf(dt, ha, (size_t)i, (double)(i % 1001) - 500.0);
  kiln_tensor *a, *y, *av, *yv;
  KOK(kiln_tensor_from_host(ctx, dt, 1, &n, ha, &a));
  KOK(kiln_tensor_create(ctx, dt, 1, &n, &y));
  KOK(kiln_copy(ctx, a, y));
  KOK(kiln_tensor_download(y, got, (size_t)n * esz));
  ck_assert_msg(memcmp(got, ha, (size_t)n * esz) == 0, "copy of %lld %s", (long long)n,
                kiln_dtype_name(dt));
  /* a[4:] into y[:n - 4]: offsets of 4 elements narrow the vectors to 4 elements. */
  cl_mem am, ym;
  size_t aoff, yoff;
  KOK(kiln_tensor_cl_mem(a, &am, &aoff));
  KOK(kiln_tensor_cl_mem(y, &ym, &yoff));
  KOK(kiln_tensor_wrap(ctx, am, aoff + 4 * esz, dt, 1, &m, &av));
  KOK(kiln_tensor_wrap(ctx, ym, yoff, dt, 1, &m, &yv));
  KOK(kiln_copy(ctx, av, yv));
  KOK(kiln_tensor_download(yv, got, (size_t)m * esz));
  ck_assert_msg(memcmp(got, (char *)ha + 4 * esz, (size_t)m * esz) == 0,
                "copy of a view at 4 elements, %lld %s", (long long)m, kiln_dtype_name(dt));
  KOK(kiln_tensor_release(yv));
  KOK(kiln_tensor_release(av));
  KOK(kiln_tensor_release(y));
  KOK(kiln_tensor_release(a));
  free(ha);
  free(got);
}
END_TEST

/* ------------------------------------------------------------------ */
/* f16 and bf16 edges: overflow, ties, subnormals, NaN                 */
/* ------------------------------------------------------------------ */

/*
 * Results written out by hand rather than by the reference code: every row
 * is one binary op on two values (already representable) and the exact
 * value the 16-bit result must hold. Subnormal bf16 results need the
 * device's f32 denormals (CL_FP_DENORM); rows marked so are skipped without.
 */
static const struct {
  kiln_dtype dt;
  kiln_binary_op op;
  double a, b, want;
  int bf16_subnormal;
} half_edges[] = {
    {KILN_F16, KILN_OP_ADD, 65504, 16, INFINITY, 0}, /* 65520 ties to even: overflow */
    {KILN_F16, KILN_OP_ADD, 65504, 8, 65504, 0},
    {KILN_F16, KILN_OP_SUB, -65504, 32, -INFINITY, 0},
    {KILN_F16, KILN_OP_MUL, 300, 300, INFINITY, 0},
    {KILN_F16, KILN_OP_MUL, -300, 300, -INFINITY, 0},
    {KILN_F16, KILN_OP_ADD, 1, 0x1p-11, 1, 0},              /* tie to even: down */
    {KILN_F16, KILN_OP_ADD, 1, 3 * 0x1p-11, 1 + 0x1p-9, 0}, /* tie to even: up */
    {KILN_F16, KILN_OP_DIV, 1, 3, 0.333251953125, 0},
    {KILN_F16, KILN_OP_MUL, 0x1p-14, 0x1p-5, 0x1p-19, 0}, /* subnormal, exact */
    {KILN_F16, KILN_OP_MUL, 0x1p-24, 0.5, 0, 0},          /* tie to even: zero */
    {KILN_F16, KILN_OP_MUL, 0x1p-24, 1.5, 0x1p-23, 0},    /* tie to even: up */
    {KILN_F16, KILN_OP_MUL, -0x1p-24, 0.25, -0.0, 0},     /* underflow keeps the sign */
    {KILN_F16, KILN_OP_ADD, NAN, 1, NAN, 0},
    {KILN_F16, KILN_OP_MUL, INFINITY, 0, NAN, 0},
    {KILN_F16, KILN_OP_MAX, NAN, 1, NAN, 0},
    {KILN_F16, KILN_OP_POW, 2, 16, INFINITY, 0},
    {KILN_BF16, KILN_OP_MUL, 0x1.1p127, 4, INFINITY, 0},
    {KILN_BF16, KILN_OP_ADD, 1, 0x1p-8, 1, 0},              /* tie to even: down */
    {KILN_BF16, KILN_OP_ADD, 1, 3 * 0x1p-8, 1 + 0x1p-6, 0}, /* tie to even: up */
    {KILN_BF16, KILN_OP_DIV, 1, 3, 0.333984375, 0},
    {KILN_BF16, KILN_OP_MUL, 0x1p-126, 0x1p-3, 0x1p-129, 1}, /* subnormal */
    {KILN_BF16, KILN_OP_SUB, -0x1p-126, 0x1p-126, -0x1p-125, 0},
    {KILN_BF16, KILN_OP_ADD, NAN, 1, NAN, 0},
    {KILN_BF16, KILN_OP_MIN, 1, NAN, NAN, 0},
    {KILN_BF16, KILN_OP_MUL, -INFINITY, 2, -INFINITY, 0},
};
#define N_HALF_EDGES (sizeof half_edges / sizeof half_edges[0])

/* v rounded once to dt (f16 or bf16), and back. */
static uint16_t
half_from(kiln_dtype dt, double v)
{
  return dt == KILN_F16 ? kiln_f16_from_f64(v) : kiln_bf16_from_f64(v);
}

static double
half_to(kiln_dtype dt, uint16_t h)
{
  return dt == KILN_F16 ? kiln_f16_to_f32(h) : kiln_bf16_to_f32(h);
}

/* Elements of the half_edges tensors: whole vectors of every width, and a tail. */
#define HALF_EDGE_N 67

/* A tensor of HALF_EDGE_N elements of dtype dt, each holding v. */
static kiln_tensor *
half_scalar_tensor(kiln_dtype dt, double v)
{
  uint16_t h[HALF_EDGE_N];
  for (int i = 0; i < HALF_EDGE_N; i++)
    h[i] = half_from(dt, v);
  const shape_t s = {1, {HALF_EDGE_N}};
  return upload(dt, &s, h);
}

/* Every element of y (HALF_EDGE_N of dtype dt) is want (NaN: any NaN); else fails naming what. */
static void
half_expect_all(kiln_dtype dt, const kiln_tensor *y, double want, const char *what, double a,
                double b)
{
  uint16_t got[HALF_EDGE_N], w = half_from(dt, want);
  KOK(kiln_tensor_download(y, got, sizeof got));
  for (int i = 0; i < HALF_EDGE_N; i++) {
    double g = half_to(dt, got[i]);
    ck_assert_msg(isnan(want) ? isnan(g) : got[i] == w,
                  "%s %s(%g, %g) [%d]: got %g (0x%04x), want %g (0x%04x)", kiln_dtype_name(dt),
                  what, a, b, i, g, got[i], want, w);
  }
}

START_TEST(half_edge_values)
{
  kiln_context *ctx = harness_ctx();
  cl_context clc;
  cl_device_id dev;
  KOK(kiln_context_cl_objects(ctx, &clc, &dev, NULL));
  cl_device_fp_config fp = 0;
  ck_assert_int_eq(clGetDeviceInfo(dev, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL),
                   CL_SUCCESS);
  for (size_t k = 0; k < N_HALF_EDGES; k++) {
    kiln_dtype dt = half_edges[k].dt;
    if (half_edges[k].bf16_subnormal && !(fp & CL_FP_DENORM))
      continue;
    kiln_tensor *a = half_scalar_tensor(dt, half_edges[k].a);
    kiln_tensor *b = half_scalar_tensor(dt, half_edges[k].b), *y = NULL;
    const char *name = kiln_binary_op_name(half_edges[k].op);
    KOK(kiln_binary(ctx, half_edges[k].op, a, b, &y));
    half_expect_all(dt, y, half_edges[k].want, name, half_edges[k].a, half_edges[k].b);
    /* The scalar form rounds the scalar to dt first; these values are exact in it. */
    KOK(kiln_binary_scalar(ctx, half_edges[k].op, a, kiln_scalar_f64(half_edges[k].b), 0, &y));
    half_expect_all(dt, y, half_edges[k].want, "scalar", half_edges[k].a, half_edges[k].b);
    KOK(kiln_tensor_release(a));
    KOK(kiln_tensor_release(b));
    KOK(kiln_tensor_release(y));
  }
  /* f16 exp overflows to inf; where moves any bit pattern (NaN payloads, -0) unchanged. */
  for (int h = 0; h < 2; h++) {
    kiln_dtype dt = h ? KILN_BF16 : KILN_F16;
    const int64_t n = 4;
    const uint16_t pa[4] = {0x7e01, 0x8000, 0xfc00, 0x0001},
                   pb[4] = {0x7fc1, 0x0000, 0x7c00, 0xffff};
    const uint8_t pc[4] = {1, 1, 0, 0};
    kiln_tensor *a = NULL, *b = NULL, *c = NULL, *y = NULL;
    KOK(kiln_tensor_from_host(ctx, dt, 1, &n, pa, &a));
    KOK(kiln_tensor_from_host(ctx, dt, 1, &n, pb, &b));
    KOK(kiln_tensor_from_host(ctx, KILN_BOOL, 1, &n, pc, &c));
    KOK(kiln_where(ctx, c, a, b, &y));
    uint16_t got[4];
    KOK(kiln_tensor_download(y, got, sizeof got));
    for (int i = 0; i < 4; i++)
      ck_assert_msg(got[i] == (pc[i] ? pa[i] : pb[i]), "%s where [%d]: 0x%04x, want 0x%04x",
                    kiln_dtype_name(dt), i, got[i], pc[i] ? pa[i] : pb[i]);
    KOK(kiln_tensor_release(y));
    y = NULL;
    kiln_tensor *x = half_scalar_tensor(dt, 12.0);
    KOK(kiln_unary(ctx, KILN_OP_EXP, x, &y));
    half_expect_all(dt, y, dt == KILN_F16 ? INFINITY : 162816 /* e^12 = 162754.8 */, "exp", 12, 0);
    KOK(kiln_tensor_release(x));
    KOK(kiln_tensor_release(y));
    KOK(kiln_tensor_release(a));
    KOK(kiln_tensor_release(b));
    KOK(kiln_tensor_release(c));
  }
}
END_TEST

/*
 * A broadcast whose inner dimension exceeds the launch grid's cap (2^24
 * work-items along it): the kernels take their grid-stride loops instead of
 * one element per work-item.
 */
START_TEST(bcast_beyond_grid)
{
  kiln_context *ctx = harness_ctx();
  const int64_t inner = ((int64_t)1 << 24) + 3, sa[2] = {2, inner}, sb[1] = {inner};
  size_t n = (size_t)(2 * inner);
  if (!harness_fits(n))
    return;
  float *ha = malloc(n * sizeof *ha), *hb = malloc((size_t)inner * sizeof *hb);
  float *got = malloc(n * sizeof *got);
  uint8_t *hc = malloc((size_t)inner);
  ck_assert(ha && hb && got && hc);
  for (size_t i = 0; i < n; i++)
    ha[i] = (float)(i % 1000) - 500.0f;
  for (int64_t i = 0; i < inner; i++) {
    hb[i] = (float)(i % 77);
    hc[i] = (uint8_t)(i % 3 == 0);
  }
  kiln_tensor *a, *b, *c, *y = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 2, sa, ha, &a));
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 1, sb, hb, &b));
  KOK(kiln_tensor_from_host(ctx, KILN_BOOL, 1, sb, hc, &c));
  KOK(kiln_binary(ctx, KILN_OP_ADD, a, b, &y));
  KOK(kiln_tensor_download(y, got, n * sizeof *got));
  for (size_t i = 0; i < n; i++)
    if (got[i] != ha[i] + hb[i % (size_t)inner])
      ck_abort_msg("a + b beyond the grid: [%zu] = %g, want %g", i, got[i], ha[i] + hb[i % (size_t)inner]);
  KOK(kiln_where(ctx, c, a, b, &y));
  KOK(kiln_tensor_download(y, got, n * sizeof *got));
  for (size_t i = 0; i < n; i++) {
    size_t j = i % (size_t)inner;
    float want = hc[j] ? ha[i] : hb[j];
    if (got[i] != want)
      ck_abort_msg("where beyond the grid: [%zu] = %g, want %g", i, got[i], want);
  }
  KOK(kiln_tensor_release(a));
  KOK(kiln_tensor_release(b));
  KOK(kiln_tensor_release(c));
  KOK(kiln_tensor_release(y));
  free(ha);
  free(hb);
  free(hc);
  free(got);
}
END_TEST

/* Overrides outside what the kernels compile are refused with a message naming the value. */
START_TEST(flat_shape_bad_overrides)
{
  kiln_context *ctx = harness_ctx();
  static const char *const bad[] = {"vec_width=3", "vec_width=0", "vec_width=32",
                                    "items_per_thread=0", "items_per_thread=17"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    KEXPECT(kiln_tune_override(ctx, "elementwise", KILN_F32, NULL, bad[i]),
            KILN_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), strchr(bad[i], '=') + 1));
  }
}
END_TEST

/* ------------------------------------------------------------------ */
/* Suite                                                               */
/* ------------------------------------------------------------------ */

static void
build_cases(void)
{
  if (harness_small()) {
    sizes[MID_SIZE] = (shape_t){1, {257}};
    n_sizes = MID_SIZE + 1;
  }
  ucases = malloc(KILN_UNARY_OP_COUNT * NEW_DTYPES * NSIZES * sizeof *ucases);
  bcases = malloc(KILN_BINARY_OP_COUNT * NEW_DTYPES * (NSIZES + NBPAIRS + 3) * sizeof *bcases);
  if (!ucases || !bcases)
    abort();
  for (int op = 0; op < KILN_UNARY_OP_COUNT; op++)
    for (size_t d = 0; d < NEW_DTYPES; d++)
      if (kiln_unary_op_supports((kiln_unary_op)op, ew_dtypes[d]))
        for (size_t s = 0; s < n_sizes; s++)
          if (s == n_sizes - 1 || dtype_variant_runs(ew_dtypes[d], s, n_sizes - 1, (size_t)op + d))
            ucases[n_ucases++] = (struct ucase){(kiln_unary_op)op, ew_dtypes[d], s};
  for (int op = 0; op < KILN_BINARY_OP_COUNT; op++)
    for (size_t d = 0; d < NEW_DTYPES; d++) {
      kiln_dtype dt = ew_dtypes[d];
      if (!kiln_binary_op_supports((kiln_binary_op)op, dt))
        continue;
      /* The small mode (and f16, bf16): the largest size, one smaller size, one broadcast
       * pair, one side. */
      const size_t rot = (size_t)op + d;
      for (size_t s = 0; s < n_sizes; s++)
        if (s == n_sizes - 1 || dtype_variant_runs(dt, s, n_sizes - 1, rot))
          bcases[n_bcases++] = (struct bcase){(kiln_binary_op)op, dt, B_SAME, s};
      for (size_t p = 0; p < NBPAIRS; p++)
        if (dtype_variant_runs(dt, p, NBPAIRS, rot))
          bcases[n_bcases++] = (struct bcase){(kiln_binary_op)op, dt, B_BCAST, p};
      for (size_t sf = 0; sf < 2; sf++)
        if (dtype_variant_runs(dt, sf, 2, rot))
          bcases[n_bcases++] = (struct bcase){(kiln_binary_op)op, dt, B_SCALAR, sf};
      if (!binary_info[op].res_bool || dt == KILN_BOOL)
        bcases[n_bcases++] = (struct bcase){(kiln_binary_op)op, dt, B_INPLACE, 0};
    }
  /* The small mode: bool conditions and one other condition dtype per value dtype. */
  for (size_t v = 0; v < NEW_DTYPES; v++)
    for (size_t c = 0; c < NDTYPES; c++)
      if (all_dtypes[c] == KILN_BOOL || dtype_variant_runs(ew_dtypes[v], c, NDTYPES, v))
        wcases[n_wcases++] = (struct wcase){ew_dtypes[v], all_dtypes[c]};
  for (size_t d = 0; d < NEW_DTYPES; d++)
    if (ew_dtypes[d] != KILN_BOOL)
      for (size_t s = 0; s < n_sizes; s++)
        ccases[n_ccases++] = (struct ccase){ew_dtypes[d], s};
  for (size_t f = 0; f < NDTYPES; f++)
    for (size_t t = 0; t < NDTYPES; t++)
      for (size_t s = 0; s < n_sizes; s++)
        if (s == n_sizes - 1 || variant_runs(s, n_sizes - 1, f + t))
          castcases[n_castcases++] = (struct castcase){all_dtypes[f], all_dtypes[t], s};
}

/* ------------------------------------------------------------------ */
/* Aliasing: outputs one element before and after their input          */
/* ------------------------------------------------------------------ */

enum { OV_N = 1031 };

/* Checks got[i] == want[i] for OV_N floats; what and out_first name the case. */
static void
ov_expect(const float *got, const float *want, const char *what, int out_first)
{
  for (int i = 0; i < OV_N; i++)
    ck_assert_msg(got[i] == want[i], "%s, output %s the input: [%d] = %g, expected %g", what,
                  out_first ? "before" : "after", i, (double)got[i], (double)want[i]);
}

START_TEST(overlap_outputs)
{
  kiln_context *ctx = harness_ctx();
  const int64_t n = OV_N;
  float *hx = malloc(OV_N * sizeof *hx), *hb = malloc(OV_N * sizeof *hb);
  float *want = malloc(OV_N * sizeof *want), *got;
  int32_t *hi = malloc(OV_N * sizeof *hi);
  uint8_t *hc = malloc(OV_N);
  for (int i = 0; i < OV_N; i++) {
    hx[i] = (float)(i % 97) * 0.25f - 7.0f;
    hb[i] = (float)(i % 13) - 6.0f;
    hi[i] = i * 3 - 1500;
    hc[i] = (uint8_t)(i % 3 == 0);
  }
  kiln_tensor *b = NULL, *c = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 1, &n, hb, &b));
  KOK(kiln_tensor_from_host(ctx, KILN_BOOL, 1, &n, hc, &c));
  for (int out_first = 1; out_first >= 0; out_first--) {
    kiln_tensor *x, *y;
    /* unary */
    harness_overlap_pair(KILN_F32, 1, &n, hx, KILN_F32, 1, &n, 4, out_first, &x, &y, NULL);
    KOK(kiln_unary(ctx, KILN_OP_NEG, x, &y));
    for (int i = 0; i < OV_N; i++)
      want[i] = -hx[i];
    got = harness_download(y);
    ov_expect(got, want, "kiln_unary(neg)", out_first);
    free(got);
    kiln_tensor_release(x);
    kiln_tensor_release(y);
    /* binary, the overlapping operand on either side */
    for (int side = 0; side < 2; side++) {
      harness_overlap_pair(KILN_F32, 1, &n, hx, KILN_F32, 1, &n, 4, out_first, &x, &y, NULL);
      KOK(kiln_binary(ctx, KILN_OP_SUB, side ? b : x, side ? x : b, &y));
      for (int i = 0; i < OV_N; i++)
        want[i] = side ? hb[i] - hx[i] : hx[i] - hb[i];
      got = harness_download(y);
      ov_expect(got, want, "kiln_binary(sub)", out_first);
      free(got);
      kiln_tensor_release(x);
      kiln_tensor_release(y);
    }
    /* scalar form */
    harness_overlap_pair(KILN_F32, 1, &n, hx, KILN_F32, 1, &n, 4, out_first, &x, &y, NULL);
    KOK(kiln_binary_scalar(ctx, KILN_OP_MUL, x, kiln_scalar_f64(2.0), 0, &y));
    for (int i = 0; i < OV_N; i++)
      want[i] = hx[i] * 2.0f;
    got = harness_download(y);
    ov_expect(got, want, "kiln_binary_scalar(mul)", out_first);
    free(got);
    kiln_tensor_release(x);
    kiln_tensor_release(y);
    /* clamp */
    harness_overlap_pair(KILN_F32, 1, &n, hx, KILN_F32, 1, &n, 4, out_first, &x, &y, NULL);
    KOK(kiln_clamp(ctx, x, kiln_scalar_f64(-3.0), kiln_scalar_f64(5.0), &y));
    for (int i = 0; i < OV_N; i++)
      want[i] = hx[i] < -3.0f ? -3.0f : hx[i] > 5.0f ? 5.0f : hx[i];
    got = harness_download(y);
    ov_expect(got, want, "kiln_clamp", out_first);
    free(got);
    kiln_tensor_release(x);
    kiln_tensor_release(y);
    /* where, the overlapping operand as a value */
    harness_overlap_pair(KILN_F32, 1, &n, hx, KILN_F32, 1, &n, 4, out_first, &x, &y, NULL);
    KOK(kiln_where(ctx, c, x, b, &y));
    for (int i = 0; i < OV_N; i++)
      want[i] = hc[i] ? hx[i] : hb[i];
    got = harness_download(y);
    ov_expect(got, want, "kiln_where", out_first);
    free(got);
    kiln_tensor_release(x);
    kiln_tensor_release(y);
    /* cast i32 -> f32, one element (4 bytes) apart */
    harness_overlap_pair(KILN_I32, 1, &n, hi, KILN_F32, 1, &n, 4, out_first, &x, &y, NULL);
    KOK(kiln_cast(ctx, x, KILN_F32, &y));
    for (int i = 0; i < OV_N; i++)
      want[i] = (float)hi[i];
    got = harness_download(y);
    ov_expect(got, want, "kiln_cast(i32 -> f32)", out_first);
    free(got);
    kiln_tensor_release(x);
    kiln_tensor_release(y);
    /* kiln_copy between two wraps of overlapping bytes */
    harness_overlap_pair(KILN_F32, 1, &n, hx, KILN_F32, 1, &n, 4, out_first, &x, &y, NULL);
    KOK(kiln_copy(ctx, x, y));
    got = harness_download(y);
    ov_expect(got, hx, "kiln_copy", out_first);
    free(got);
    kiln_tensor_release(x);
    kiln_tensor_release(y);
  }
  kiln_tensor_release(b);
  kiln_tensor_release(c);
  free(hx);
  free(hb);
  free(want);
  free(hi);
  free(hc);
}
END_TEST

/* A sub-buffer and its parent are one set of bytes: overlap through them is seen too. */
START_TEST(subbuffer_overlap)
{
  kiln_context *ctx = harness_ctx();
  cl_context clc;
  cl_device_id dev;
  KOK(kiln_context_cl_objects(ctx, &clc, &dev, NULL));
  cl_uint align_bits = 0;
  ck_assert_int_eq(
      clGetDeviceInfo(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL),
      CL_SUCCESS);
  size_t origin = align_bits / 8 ? align_bits / 8 : 4;
  const int64_t n = OV_N;
  float hx[OV_N], want[OV_N];
  for (int i = 0; i < OV_N; i++) {
    hx[i] = (float)(i % 29) - 14.0f;
    want[i] = -hx[i];
  }
  cl_int err;
  cl_mem parent = clCreateBuffer(clc, CL_MEM_READ_WRITE, origin + (OV_N + 1) * 4, NULL, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  cl_buffer_region region = {origin, (OV_N + 1) * 4};
  cl_mem sub =
      clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  for (int out_first = 1; out_first >= 0; out_first--) {
    /* x in the sub-buffer, y in the parent one element before or after it */
    kiln_tensor *x, *y;
    KOK(kiln_tensor_wrap(ctx, sub, out_first ? 4 : 0, KILN_F32, 1, &n, &x));
    KOK(kiln_tensor_wrap(ctx, parent, out_first ? origin : origin + 4, KILN_F32, 1, &n, &y));
    KOK(kiln_tensor_upload(x, hx, sizeof hx));
    KOK(kiln_unary(ctx, KILN_OP_NEG, x, &y));
    float *got = harness_download(y);
    ov_expect(got, want, "kiln_unary(neg) across a sub-buffer", out_first);
    free(got);
    kiln_tensor_release(x);
    kiln_tensor_release(y);
  }
  clReleaseMemObject(sub);
  clReleaseMemObject(parent);
}
END_TEST

/* Exact aliasing (the same bytes through another handle) is written in place and copies nothing. */
START_TEST(exact_alias)
{
  kiln_context *ctx = harness_ctx();
  const int64_t n = OV_N;
  float hx[OV_N], want[OV_N];
  for (int i = 0; i < OV_N; i++)
    hx[i] = (float)(i % 31) - 15.0f;
  kiln_tensor *x, *y, *v = NULL;
  harness_overlap_pair(KILN_F32, 1, &n, hx, KILN_F32, 1, &n, 0, 1, &x, &y, NULL);
  KOK(kiln_unary(ctx, KILN_OP_ABS, x, &y));
  KOK(kiln_binary(ctx, KILN_OP_ADD, x, y, &y));
  KOK(kiln_binary(ctx, KILN_OP_ADD, x, x, &x));
  for (int i = 0; i < OV_N; i++)
    want[i] = fabsf(hx[i]) * 4.0f;
  float *got = harness_download(y);
  ov_expect(got, want, "abs then two doublings in place", 1);
  free(got);
  /* A copy into its own reshape view (same bytes, another handle) and into itself. */
  KOK(kiln_reshape(ctx, x, 1, &n, &v));
  KOK(kiln_copy(ctx, x, v));
  KOK(kiln_copy(ctx, y, x));
  KOK(kiln_copy(ctx, x, x));
  got = harness_download(v);
  ov_expect(got, want, "kiln_copy onto the same bytes", 1);
  free(got);
  kiln_tensor_release(v);
  kiln_tensor_release(x);
  kiln_tensor_release(y);
}
END_TEST

/*
 * exp of doubles at its range's edges and across it (kiln's own exp on CPU devices,
 * KILN_EXP64; the builtin on GPUs): the last finite result and the first inf, subnormal
 * results down to the smallest and the first 0, NaN and the infinities, and 4099 values
 * spread over [-750, 750] (n not a multiple of the vector width: the tail loop too).
 * Relative 1e-15 of the host's exp (4.5 ulp: OpenCL allows 3 for the builtin; kiln's own is
 * within 0.64), or 2 subnormal steps where the result is subnormal.
 */
START_TEST(exp_f64_range)
{
  if (!harness_has_fp64())
    return;
  kiln_context *ctx = harness_ctx();
  static const double edges[] = {709.782712893384,
                                 709.7827128933841,
                                 710.0,
                                 1000.0,
                                 -708.3964185322641,
                                 -708.4,
                                 -740.0,
                                 -744.44,
                                 -745.1332191019411,
                                 -745.1332191019412,
                                 -746.0,
                                 -1e4,
                                 1e-320,
                                 -1e-320,
                                 0.0,
                                 -0.0,
                                 NAN,
                                 INFINITY,
                                 -INFINITY};
  const size_t ne = sizeof edges / sizeof edges[0], n = ne + 4099;
  double *x = malloc(n * sizeof *x), *got = malloc(n * sizeof *got);
  ck_assert_ptr_nonnull(x);
  ck_assert_ptr_nonnull(got);
  for (size_t i = 0; i < n; i++)
    x[i] = i < ne ? edges[i] : -750.0 + 1500.0 * (double)(i - ne) / 4098.0;
  const int64_t shape = (int64_t)n;
  kiln_tensor *tx = NULL, *ty = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_F64, 1, &shape, x, &tx));
  KOK(kiln_unary(ctx, KILN_OP_EXP, tx, &ty));
  KOK(kiln_tensor_download(ty, got, n * sizeof *got));
  for (size_t i = 0; i < n; i++) {
    const double want = exp(x[i]);
    const int ok = isnan(want)   ? isnan(got[i])
                   : isinf(want) ? got[i] == want
                                 : fabs(got[i] - want) <= 1e-15 * fabs(want) + 1e-323;
    ck_assert_msg(ok, "exp(%.17g) = %.17g, want %.17g", x[i], got[i], want);
  }
  KOK(kiln_tensor_release(tx));
  KOK(kiln_tensor_release(ty));
  free(x);
  free(got);
}
END_TEST

/*
 * A flat kernel's tail (the fewer than vec_width elements after its last whole vector) is
 * one work-item per element without a loop (FLAT_TAIL, cl_kernels/ew_loops.clh), so the
 * launch needs at least that many work-items even when a group has one: one-item groups of
 * 16-wide vectors and casts, at sizes whose tails are 1 to 15 elements long.
 */
START_TEST(flat_tail_one_item_groups)
{
  kiln_context *ctx = harness_ctx();
  static const int64_t tail_sizes[] = {1, 7, 15, 17, 31, 47};
  KOK(kiln_tune_override(ctx, "elementwise", KILN_F32, NULL,
                         "wg_size=1 items_per_thread=1 vec_width=16"));
  KOK(kiln_tune_override(ctx, "cast", KILN_F32, NULL, "wg_size=1 items_per_thread=1 lanes=16"));
  KOK(kiln_tune_override(ctx, "copy", KILN_F32, NULL,
                         "kernel=1 wg_size=1 items_per_thread=1 vec_width=16"));
  for (size_t si = 0; si < sizeof tail_sizes / sizeof tail_sizes[0]; si++) {
    const int64_t n = tail_sizes[si];
    float a[47], b[47], got[47];
    int32_t goti[47];
    for (int64_t i = 0; i < n; i++) {
      a[i] = (float)(i * 3 - 20);
      b[i] = (float)(i % 5);
    }
    kiln_tensor *ta = NULL, *tb = NULL, *tneg = NULL, *tadd = NULL, *tcl = NULL, *tc = NULL,
                *tcp = NULL;
    KOK(kiln_tensor_from_host(ctx, KILN_F32, 1, &n, a, &ta));
    KOK(kiln_tensor_from_host(ctx, KILN_F32, 1, &n, b, &tb));
    KOK(kiln_unary(ctx, KILN_OP_NEG, ta, &tneg));
    KOK(kiln_binary(ctx, KILN_OP_ADD, ta, tb, &tadd));
    KOK(kiln_clamp(ctx, ta, kiln_scalar_f64(-5.0), kiln_scalar_f64(5.0), &tcl));
    KOK(kiln_cast(ctx, ta, KILN_I32, &tc));
    KOK(kiln_tensor_empty_like(ta, &tcp));
    KOK(kiln_copy(ctx, ta, tcp));
    KOK(kiln_tensor_download(tneg, got, (size_t)n * sizeof *got));
    for (int64_t i = 0; i < n; i++)
      ck_assert_msg(got[i] == -a[i], "neg n=%lld [%lld] = %g", (long long)n, (long long)i, got[i]);
    KOK(kiln_tensor_download(tadd, got, (size_t)n * sizeof *got));
    for (int64_t i = 0; i < n; i++)
      ck_assert_msg(got[i] == a[i] + b[i], "add n=%lld [%lld] = %g", (long long)n, (long long)i,
                    got[i]);
    KOK(kiln_tensor_download(tcl, got, (size_t)n * sizeof *got));
    for (int64_t i = 0; i < n; i++)
      ck_assert_msg(got[i] == fminf(fmaxf(a[i], -5.0f), 5.0f), "clamp n=%lld [%lld] = %g",
                    (long long)n, (long long)i, got[i]);
    KOK(kiln_tensor_download(tc, goti, (size_t)n * sizeof *goti));
    for (int64_t i = 0; i < n; i++)
      ck_assert_msg(goti[i] == (int32_t)a[i], "cast n=%lld [%lld] = %d", (long long)n, (long long)i,
                    goti[i]);
    KOK(kiln_tensor_download(tcp, got, (size_t)n * sizeof *got));
    for (int64_t i = 0; i < n; i++)
      ck_assert_msg(got[i] == a[i], "copy n=%lld [%lld] = %g", (long long)n, (long long)i, got[i]);
    kiln_tensor *all[] = {ta, tb, tneg, tadd, tcl, tc, tcp};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
      KOK(kiln_tensor_release(all[k]));
  }
  KOK(kiln_tune_override(ctx, "elementwise", KILN_F32, NULL, NULL));
  KOK(kiln_tune_override(ctx, "cast", KILN_F32, NULL, NULL));
  KOK(kiln_tune_override(ctx, "copy", KILN_F32, NULL, NULL));
}
END_TEST

static Suite *
elementwise_suite(void)
{
  build_cases();
  Suite *s = suite_create("elementwise");
  struct {
    const char *name;
    const TTest *test;
    size_t n; /* 0: a plain test */
  } groups[] = {
      {"table", op_table_matches_library, 0},
      {"unary", unary_case, n_ucases},
      {"binary", binary_case, n_bcases},
      {"where", where_case, n_wcases},
      {"clamp", clamp_case, n_ccases},
      {"cast", cast_case, n_castcases},
      {"copy", copy_all_dtypes, 0},
      {"offsets", wrapped_offsets, 0},
      {"empty", zero_size_tensors, 0},
      {"zero_dim", zero_dim_tensors, 0},
      {"bad_handles", bad_handles, 0},
      {"bad_ops_dtypes", bad_ops_and_dtypes, 0},
      {"bad_shapes_outputs", bad_shapes_and_outputs, 0},
      {"flat_shapes", flat_shape_case, NFLAT_SHAPES * NFLAT_DTYPES},
      {"flat_shape_bad_overrides", flat_shape_bad_overrides, 0},
      {"bcast_beyond_grid", bcast_beyond_grid, 0},
      {"nt_store_copies", nt_store_copies, 2},
      {"half_edges", half_edge_values, 0},
      {"bool_from_bytes", bool_from_bytes, 0},
      {"overlap_outputs", overlap_outputs, 0},
      {"exact_alias", exact_alias, 0},
      {"subbuffer_overlap", subbuffer_overlap, 0},
      {"exp_f64_range", exp_f64_range, 0},
      {"flat_tail_one_item_groups", flat_tail_one_item_groups, 0},
  };
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
    TCase *tc = tcase_create(groups[g].name);
    tcase_set_timeout(tc, 600);
    if (groups[g].n)
      tcase_add_loop_test(tc, groups[g].test, 0, (int)groups[g].n);
    else
      tcase_add_test(tc, groups[g].test);
    suite_add_tcase(s, tc);
  }
  return s;
}

int
main(void)
{
  verbose = getenv("KILN_EW_VERBOSE") && *getenv("KILN_EW_VERBOSE") && *getenv("KILN_EW_VERBOSE") != '0';
  return harness_main(elementwise_suite(), 1);
}
