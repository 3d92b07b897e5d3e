/*
 * Complex suite: every op of KILN_COMPLEX_UNARY_OPS / KILN_COMPLEX_BINARY_OPS
 * for c64 and c128 (c128 skipped without fp64) against host references in
 * long double (<complex.h>), at sizes 0, 1, 13, 1000 (not a multiple of the
 * work-group size) and 1 << 17; scalar operands and broadcasting; C99 Annex G
 * special values of exp, log, sqrt and division; quotients, magnitudes and
 * roots of huge and tiny numbers; kiln_complex, the two views, where; bad
 * input.
 *
 * The op list and result kinds below are written out independently of the
 * library's table (op_table_agrees checks the two agree).
 *
 * Tolerances, in units of the part type's epsilon, relative to |want| (the
 * modulus: componentwise bounds mean nothing for a part that cancels) plus
 * four of the smallest subnormals: add, sub, neg, conj, real, imag and the
 * predicates exact; mul, square, abs 4; div, reciprocal, angle 8; exp, log,
 * sqrt 32; the trigonometric and hyperbolic functions 64; pow 256 (an error
 * of exp's argument b log a scales by it).
 */
#include <complex.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "harness.h"

typedef long double complex lc;

#define N_(a) (sizeof(a) / sizeof((a)[0]))
#define INF INFINITY

static const kiln_dtype cdts[2] = {KILN_C64, KILN_C128};

/* Loops dt over c64 and c128 (the latter only with fp64). */
#define FOR_CDT(dt)                                                                          \
  for (size_t dt##_i = 0; dt##_i < 2; dt##_i++)                                              \
    for (kiln_dtype dt = cdts[dt##_i]; dt##_i < 2 && (dt == KILN_C64 || harness_has_fp64()); \
         dt##_i = 2)

static long double
eps_of(kiln_dtype dt)
{
  return dt == KILN_C64 ? FLT_EPSILON : DBL_EPSILON;
}

static long double
tiny_of(kiln_dtype dt)
{
  return 4.0L * (dt == KILN_C64 ? FLT_TRUE_MIN : DBL_TRUE_MIN);
}

static kiln_dtype
part_dtype(kiln_dtype dt)
{
  return dt == KILN_C64 ? KILN_F32 : KILN_F64;
}

/* Element i of a host buffer of complex dtype dt. */
static lc
cget(kiln_dtype dt, const void *p, size_t i)
{
  if (dt == KILN_C64)
    return CMPLXL(((const float *)p)[2 * i], ((const float *)p)[2 * i + 1]);
  return CMPLXL(((const double *)p)[2 * i], ((const double *)p)[2 * i + 1]);
}

/* Stores v rounded to dt's parts. */
static void
cset(kiln_dtype dt, void *p, size_t i, lc v)
{
  if (dt == KILN_C64) {
    ((float *)p)[2 * i] = (float)creall(v);
    ((float *)p)[2 * i + 1] = (float)cimagl(v);
  } else {
    ((double *)p)[2 * i] = (double)creall(v);
    ((double *)p)[2 * i + 1] = (double)cimagl(v);
  }
}

/* v rounded to dt's parts. */
static lc
round_to(kiln_dtype dt, lc v)
{
  unsigned char b[16];
  cset(dt, b, 0, v);
  return cget(dt, b, 0);
}

static long double
rget(kiln_dtype part, const void *p, size_t i)
{
  return part == KILN_F32 ? ((const float *)p)[i] : ((const double *)p)[i];
}

static uint64_t rng_state;

static double
urand(void)
{
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* Input domains: small (|parts| <= 3), wide (magnitudes 2^-30..2^30, zeros, equal parts), pow base.
 */
enum domain { D_SMALL, D_WIDE, D_BASE };

static lc
sample(enum domain d, size_t i)
{
  double re = 6 * urand() - 3, im = 6 * urand() - 3;
  if (d == D_WIDE) {
    re *= ldexp(1, (int)(60 * urand()) - 30);
    im *= ldexp(1, (int)(60 * urand()) - 30);
    if (i % 11 == 3)
      re = 0;
    if (i % 13 == 5)
      im = 0;
    if (i % 17 == 7)
      im = re;
  } else if (d == D_BASE) {
    double r = 0.25 + 3.75 * urand(), t = 6.2 * urand() - 3.1;
    re = r * cos(t);
    im = r * sin(t);
  }
  return CMPLXL(re, im);
}

/* ------------------------------------------------------------------ the op list */

enum res { R_SAME, R_REAL, R_BOOL };

static lc
ref_neg(lc z)
{
  return -z;
}
static lc
ref_conj(lc z)
{
  return conjl(z);
}
static lc
ref_real(lc z)
{
  return creall(z);
}
static lc
ref_imag(lc z)
{
  return cimagl(z);
}
static lc
ref_abs(lc z)
{
  return hypotl(creall(z), cimagl(z));
}
static lc
ref_angle(lc z)
{
  return atan2l(cimagl(z), creall(z));
}
static lc
ref_square(lc z)
{
  return z * z;
}
static lc
ref_recip(lc z)
{
  return 1.0L / z;
}
static lc
ref_isnan(lc z)
{
  return isnan(creall(z)) || isnan(cimagl(z));
}
static lc
ref_isinf(lc z)
{
  return isinf(creall(z)) || isinf(cimagl(z));
}
static lc
ref_isfinite(lc z)
{
  return isfinite(creall(z)) && isfinite(cimagl(z));
}

struct uop {
  kiln_unary_op op;
  enum res res;
  lc (*ref)(lc);
  double tol; /* in eps; 0: exact */
  enum domain dom;
};

static const struct uop uops[] = {
    {KILN_OP_NEG, R_SAME, ref_neg, 0, D_WIDE},
    {KILN_OP_CONJ, R_SAME, ref_conj, 0, D_WIDE},
    {KILN_OP_REAL, R_REAL, ref_real, 0, D_WIDE},
    {KILN_OP_IMAG, R_REAL, ref_imag, 0, D_WIDE},
    {KILN_OP_ABS, R_REAL, ref_abs, 4, D_WIDE},
    {KILN_OP_ANGLE, R_REAL, ref_angle, 8, D_WIDE},
    {KILN_OP_SQUARE, R_SAME, ref_square, 4, D_WIDE},
    {KILN_OP_RECIPROCAL, R_SAME, ref_recip, 8, D_WIDE},
    {KILN_OP_EXP, R_SAME, cexpl, 32, D_SMALL},
    {KILN_OP_LOG, R_SAME, clogl, 32, D_WIDE},
    {KILN_OP_SQRT, R_SAME, csqrtl, 32, D_WIDE},
    {KILN_OP_SIN, R_SAME, csinl, 64, D_SMALL},
    {KILN_OP_COS, R_SAME, ccosl, 64, D_SMALL},
    {KILN_OP_TAN, R_SAME, ctanl, 64, D_SMALL},
    {KILN_OP_SINH, R_SAME, csinhl, 64, D_SMALL},
    {KILN_OP_COSH, R_SAME, ccoshl, 64, D_SMALL},
    {KILN_OP_TANH, R_SAME, ctanhl, 64, D_SMALL},
    {KILN_OP_ISNAN, R_BOOL, ref_isnan, 0, D_WIDE},
    {KILN_OP_ISINF, R_BOOL, ref_isinf, 0, D_WIDE},
    {KILN_OP_ISFINITE, R_BOOL, ref_isfinite, 0, D_WIDE},
};

enum bkind { B_ADD, B_SUB, B_MUL, B_DIV, B_POW, B_EQ, B_NE };

struct bop {
  kiln_binary_op op;
  enum bkind kind;
  double tol;
  enum domain dom;
};

static const struct bop bops[] = {
    {KILN_OP_ADD, B_ADD, 0, D_WIDE},   {KILN_OP_SUB, B_SUB, 0, D_WIDE},
    {KILN_OP_MUL, B_MUL, 4, D_WIDE},   {KILN_OP_DIV, B_DIV, 8, D_WIDE},
    {KILN_OP_POW, B_POW, 256, D_BASE}, {KILN_OP_EQ, B_EQ, 0, D_WIDE},
    {KILN_OP_NE, B_NE, 0, D_WIDE},
};

/* NumPy's complex power: integer exponents below 100 by repeated multiplication. */
static lc
ref_pow(lc a, lc b)
{
  if (creall(b) == 0 && cimagl(b) == 0)
    return 1;
  long double n = creall(b);
  if (cimagl(b) == 0 && n == rintl(n) && fabsl(n) < 100) {
    lc r = 1, p = a;
    for (long m = labs((long)n); m; m >>= 1) {
      if (m & 1)
        r *= p;
      p *= p;
    }
    return n < 0 ? 1.0L / r : r;
  }
  return cexpl(b * clogl(a));
}

/* The reference of a binary op on values already of dtype dt (add, sub exact in the part type). */
static lc
bref(enum bkind k, kiln_dtype dt, lc a, lc b)
{
  switch (k) {
  case B_ADD:
  case B_SUB: {
    long double s = k == B_ADD ? 1 : -1;
    if (dt == KILN_C64)
      return CMPLXL((float)creall(a) + (float)(s * creall(b)),
                    (float)cimagl(a) + (float)(s * cimagl(b)));
    return CMPLXL((double)creall(a) + (double)(s * creall(b)),
                  (double)cimagl(a) + (double)(s * cimagl(b)));
  }
  case B_MUL:
    return a * b;
  case B_DIV: /* the textbook quotient: long double has the range for any c128 parts */
  {
    long double c = creall(b), d = cimagl(b), den = c * c + d * d;
    return CMPLXL((creall(a) * c + cimagl(a) * d) / den, (cimagl(a) * c - creall(a) * d) / den);
  }
  case B_POW:
    return ref_pow(a, b);
  case B_EQ:
    return creall(a) == creall(b) && cimagl(a) == cimagl(b);
  case B_NE:
    return creall(a) != creall(b) || cimagl(a) != cimagl(b);
  }
  return 0;
}

/* ------------------------------------------------------------------ checks */

/* Nonzero when got matches want within tol eps of |want| (exact when tol is 0). */
static int
matches(kiln_dtype dt, lc got, lc want, double tol)
{
  long double wr = creall(want), wi = cimagl(want);
  if (!isfinite(wr) || !isfinite(wi) || tol == 0) {
    lc w = round_to(dt, want);
    long double p[2] = {creall(got), cimagl(got)}, q[2] = {creall(w), cimagl(w)};
    for (int k = 0; k < 2; k++) {
      if (isnan(q[k]) ? !isnan(p[k]) : p[k] != q[k])
        return 0;
    }
    return 1;
  }
  long double err = cabsl(got - want);
  return err <= (long double)tol * eps_of(dt) * cabsl(want) + tiny_of(dt);
}

static void
expect_match(const char *what, kiln_dtype dt, size_t i, lc in_a, lc in_b, lc got, lc want,
             double tol)
{
  ck_assert_msg(matches(dt, got, want, tol),
                "%s %s [%zu]: inputs (%.17Lg, %.17Lg) (%.17Lg, %.17Lg): got (%.17Lg, %.17Lg), "
                "want (%.17Lg, %.17Lg)",
                what, kiln_dtype_name(dt), i, creall(in_a), cimagl(in_a), creall(in_b),
                cimagl(in_b), creall(got), cimagl(got), creall(want), cimagl(want));
}

/* Element i of a result of kind res (complex, part type or bool) as a complex number. */
static lc
res_get(enum res res, kiln_dtype dt, const void *p, size_t i)
{
  if (res == R_BOOL)
    return ((const unsigned char *)p)[i];
  if (res == R_REAL)
    return rget(part_dtype(dt), p, i);
  return cget(dt, p, i);
}

static kiln_tensor *
upload(kiln_dtype dt, size_t nd, const int64_t *shape, const void *host)
{
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_from_host(harness_ctx(), dt, nd, shape, host, &t));
  return t;
}

static void *
download(const kiln_tensor *t)
{
  return harness_download(t);
}

static const int64_t sizes[] = {0, 1, 13, 1000, 1 << 17};

/* ------------------------------------------------------------------ tests */

START_TEST(op_table_agrees)
{
  FOR_CDT(dt)
  {
    for (int op = 0; op < KILN_UNARY_OP_COUNT; op++) {
      int listed = 0;
      for (size_t k = 0; k < N_(uops); k++)
        listed |= uops[k].op == (kiln_unary_op)op;
      ck_assert_msg(!kiln_unary_op_supports((kiln_unary_op)op, dt) == !listed,
                    "kiln_unary_op_supports(%s, %s) disagrees with the suite's list",
                    kiln_unary_op_name((kiln_unary_op)op), kiln_dtype_name(dt));
    }
    for (int op = 0; op < KILN_BINARY_OP_COUNT; op++) {
      int listed = 0;
      for (size_t k = 0; k < N_(bops); k++)
        listed |= bops[k].op == (kiln_binary_op)op;
      ck_assert_msg(!kiln_binary_op_supports((kiln_binary_op)op, dt) == !listed,
                    "kiln_binary_op_supports(%s, %s) disagrees with the suite's list",
                    kiln_binary_op_name((kiln_binary_op)op), kiln_dtype_name(dt));
    }
  }
  /* The real dtypes' versions of the complex-only ops. */
  ck_assert(kiln_unary_op_supports(KILN_OP_CONJ, KILN_I32));
  ck_assert(kiln_unary_op_supports(KILN_OP_ANGLE, KILN_F32));
  ck_assert(!kiln_unary_op_supports(KILN_OP_ANGLE, KILN_I32));
}
END_TEST

START_TEST(unary_ops_all_sizes)
{
  kiln_context *ctx = harness_ctx();
  FOR_CDT(dt)
  {
    for (size_t s = 0; s < N_(sizes); s++) {
      int64_t n = sizes[s];
      if (!harness_fits((uint64_t)n))
        continue;
      for (size_t k = 0; k < N_(uops); k++) {
        const struct uop *u = &uops[k];
        rng_state = 0x9e3779b97f4a7c15ull + k * 7919 + (uint64_t)n;
        void *host = malloc(16 * (size_t)n + 16);
        for (int64_t i = 0; i < n; i++)
          cset(dt, host, (size_t)i, sample(u->dom, (size_t)i));
        /* Non-finite values for the predicates (and everything else, in the first elements). */
        if (n >= 8 && u->res == R_BOOL) {
          cset(dt, host, 1, CMPLXL(NAN, 1));
          cset(dt, host, 2, CMPLXL(1, -INF));
          cset(dt, host, 3, CMPLXL(INF, NAN));
        }
        kiln_tensor *x = upload(dt, 1, &n, host), *y = NULL;
        KOK(kiln_unary(ctx, u->op, x, &y));
        kiln_dtype want_dt = u->res == R_BOOL ? KILN_BOOL : u->res == R_REAL ? part_dtype(dt) : dt;
        ck_assert_int_eq(kiln_tensor_dtype(y), want_dt);
        ck_assert_int_eq(kiln_tensor_numel(y), n);
        void *got = download(y);
        for (int64_t i = 0; i < n; i++) {
          lc z = cget(dt, host, (size_t)i);
          expect_match(kiln_unary_op_name(u->op), dt, (size_t)i, z, 0,
                       res_get(u->res, dt, got, (size_t)i), u->ref(z), u->tol);
        }
        free(got);
        free(host);
        kiln_tensor_release(x);
        kiln_tensor_release(y);
      }
    }
  }
}
END_TEST

START_TEST(binary_ops_all_sizes)
{
  kiln_context *ctx = harness_ctx();
  FOR_CDT(dt)
  {
    for (size_t s = 0; s < N_(sizes); s++) {
      int64_t n = sizes[s];
      if (!harness_fits((uint64_t)n))
        continue;
      for (size_t k = 0; k < N_(bops); k++) {
        const struct bop *b = &bops[k];
        rng_state = 0x2545f4914f6cdd1dull + k * 104729 + (uint64_t)n;
        void *ha = malloc(16 * (size_t)n + 16), *hb = malloc(16 * (size_t)n + 16);
        for (int64_t i = 0; i < n; i++) {
          lc a = sample(b->dom, (size_t)i), bb = sample(b->dom, (size_t)i);
          if (b->kind == B_POW) /* exponents: integers, reals, complex */
            bb = i % 3 == 0   ? (lc)(double)((int)(urand() * 9) - 4)
                 : i % 3 == 1 ? (lc)(4 * urand() - 2)
                              : CMPLXL(2 * urand() - 1, 2 * urand() - 1);
          if ((b->kind == B_EQ || b->kind == B_NE) && i % 3 != 2)
            bb = i % 3 ? CMPLXL(creall(a), cimagl(bb)) : a;
          cset(dt, ha, (size_t)i, a);
          cset(dt, hb, (size_t)i, bb);
        }
        kiln_tensor *a = upload(dt, 1, &n, ha), *bt = upload(dt, 1, &n, hb), *c = NULL;
        KOK(kiln_binary(ctx, b->op, a, bt, &c));
        enum res res = b->kind >= B_EQ ? R_BOOL : R_SAME;
        void *got = download(c);
        for (int64_t i = 0; i < n; i++) {
          lc x = cget(dt, ha, (size_t)i), y = cget(dt, hb, (size_t)i);
          expect_match(kiln_binary_op_name(b->op), dt, (size_t)i, x, y,
                       res_get(res, dt, got, (size_t)i), bref(b->kind, dt, x, y), b->tol);
        }
        free(got);
        free(ha);
        free(hb);
        kiln_tensor_release(a);
        kiln_tensor_release(bt);
        kiln_tensor_release(c);
      }
    }
  }
}
END_TEST

/* Scalar operands on either side (a real scalar: imaginary part 0) and broadcasting. */
START_TEST(scalars_and_broadcasting)
{
  kiln_context *ctx = harness_ctx();
  FOR_CDT(dt)
  {
    int64_t sa[3] = {3, 1, 5}, sb[2] = {4, 1};
    rng_state = 12345;
    unsigned char ha[15 * 16], hb[4 * 16];
    for (size_t i = 0; i < 15; i++)
      cset(dt, ha, i, sample(D_WIDE, i));
    for (size_t i = 0; i < 4; i++)
      cset(dt, hb, i, sample(D_WIDE, i + 1));
    kiln_tensor *a = upload(dt, 3, sa, ha), *b = upload(dt, 2, sb, hb);
    for (size_t k = 0; k < N_(bops); k++) {
      kiln_tensor *c = NULL;
      KOK(kiln_binary(ctx, bops[k].op, a, b, &c));
      ck_assert_int_eq(kiln_tensor_ndim(c), 3);
      ck_assert_int_eq(kiln_tensor_dim(c, 1), 4);
      enum res res = bops[k].kind >= B_EQ ? R_BOOL : R_SAME;
      void *got = download(c);
      for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < 4; j++)
          for (size_t l = 0; l < 5; l++) {
            lc x = cget(dt, ha, i * 5 + l), y = cget(dt, hb, j);
            size_t o = (i * 4 + j) * 5 + l;
            lc want = bops[k].kind == B_POW ? 0 : bref(bops[k].kind, dt, x, y);
            if (bops[k].kind != B_POW) /* wide-domain bases overflow; pow has its own cases */
              expect_match("broadcast", dt, o, x, y, res_get(res, dt, got, o), want, bops[k].tol);
          }
      free(got);
      kiln_tensor_release(c);
    }
    /* Scalars: x op 2.5 and 2.5 op x, and x ** 2 (the integer-power path) and x ** 0.5. */
    static const double svals[] = {2.5, -3.0, 2.0, 0.5};
    for (size_t k = 0; k < N_(bops); k++)
      for (size_t v = 0; v < N_(svals); v++)
        for (int first = 0; first < 2; first++) {
          if (bops[k].kind == B_POW && first)
            continue;
          kiln_tensor *c = NULL;
          KOK(kiln_binary_scalar(ctx, bops[k].op, a, kiln_scalar_f64(svals[v]), first, &c));
          enum res res = bops[k].kind >= B_EQ ? R_BOOL : R_SAME;
          void *got = download(c);
          for (size_t i = 0; i < 15; i++) {
            lc x = cget(dt, ha, i), s = svals[v];
            lc want = first ? bref(bops[k].kind, dt, s, x) : bref(bops[k].kind, dt, x, s);
            expect_match("scalar", dt, i, first ? s : x, first ? x : s, res_get(res, dt, got, i),
                         want, bops[k].tol);
          }
          free(got);
          kiln_tensor_release(c);
        }
    /* An integer scalar equal to an element: eq finds it. */
    kiln_tensor *e = NULL;
    int64_t one = 1;
    unsigned char h1[16];
    cset(dt, h1, 0, 7);
    kiln_tensor *seven = upload(dt, 1, &one, h1);
    KOK(kiln_binary_scalar(ctx, KILN_OP_EQ, seven, kiln_scalar_i64(7), 0, &e));
    unsigned char *eb = download(e);
    ck_assert_int_eq(eb[0], 1);
    free(eb);
    kiln_tensor_release(e);
    kiln_tensor_release(seven);
    /* In place: a = a * b broadcast is refused (shape), a = -a works. */
    kiln_tensor *aa = a;
    KOK(kiln_unary(ctx, KILN_OP_NEG, a, &aa));
    unsigned char *na = download(a);
    for (size_t i = 0; i < 15; i++)
      ck_assert(matches(dt, cget(dt, na, i), -cget(dt, ha, i), 0));
    free(na);
    kiln_tensor *ab = a;
    KEXPECT(kiln_unary(ctx, KILN_OP_ABS, a, &ab), KILN_ERR_DTYPE);
    kiln_tensor_release(a);
    kiln_tensor_release(b);
  }
}
END_TEST

/* C99 Annex G special values. keep: bit 1 = real part's sign unspecified, 2 = imaginary part's. */
struct special {
  double in_re, in_im, re, im;
  int any_sign;
};

#define PI 3.14159265358979323846
static const struct special exp_table[] = {
    {+0.0, +0.0, 1, +0.0, 0},  {-0.0, +0.0, 1, +0.0, 0},  {+0.0, -0.0, 1, -0.0, 0},
    {1, INF, NAN, NAN, 0},     {1, NAN, NAN, NAN, 0},     {INF, +0.0, INF, +0.0, 0},
    {INF, -0.0, INF, -0.0, 0}, {-INF, 1, +0.0, +0.0, 0},  {-INF, 2, -0.0, +0.0, 0},
    {INF, 1, INF, INF, 0},     {INF, 2, -INF, INF, 0},    {-INF, INF, 0, 0, 3},
    {INF, INF, INF, NAN, 1},   {-INF, NAN, 0, 0, 3},      {INF, NAN, INF, NAN, 1},
    {NAN, +0.0, NAN, +0.0, 0}, {NAN, -0.0, NAN, -0.0, 0}, {NAN, 1, NAN, NAN, 0},
    {NAN, NAN, NAN, NAN, 0},
};
static const struct special log_table[] = {
    {-0.0, +0.0, -INF, PI, 0},   {+0.0, +0.0, -INF, +0.0, 0}, {-0.0, -0.0, -INF, -PI, 0},
    {+0.0, -0.0, -INF, -0.0, 0}, {1, INF, INF, PI / 2, 0},    {-1, -INF, INF, -PI / 2, 0},
    {1, NAN, NAN, NAN, 0},       {-INF, 1, INF, PI, 0},       {INF, 1, INF, +0.0, 0},
    {-INF, -1, INF, -PI, 0},     {INF, -1, INF, -0.0, 0},     {-INF, INF, INF, 3 * PI / 4, 0},
    {INF, INF, INF, PI / 4, 0},  {INF, NAN, INF, NAN, 0},     {-INF, NAN, INF, NAN, 0},
    {NAN, 1, NAN, NAN, 0},       {NAN, INF, INF, NAN, 0},     {NAN, NAN, NAN, NAN, 0},
    {1, +0.0, +0.0, +0.0, 0},    {1, -0.0, +0.0, -0.0, 0},    {-1, +0.0, +0.0, PI, 0},
    {-1, -0.0, +0.0, -PI, 0},
};
static const struct special sqrt_table[] = {
    {+0.0, +0.0, +0.0, +0.0, 0},
    {-0.0, +0.0, +0.0, +0.0, 0},
    {+0.0, -0.0, +0.0, -0.0, 0},
    {-0.0, -0.0, +0.0, -0.0, 0},
    {1, INF, INF, INF, 0},
    {NAN, INF, INF, INF, 0},
    {-INF, INF, INF, INF, 0},
    {1, -INF, INF, -INF, 0},
    {1, NAN, NAN, NAN, 0},
    {-INF, 1, +0.0, INF, 0},
    {-INF, -1, +0.0, -INF, 0},
    {INF, 1, INF, +0.0, 0},
    {INF, -1, INF, -0.0, 0},
    {-INF, NAN, NAN, INF, 2},
    {INF, NAN, INF, NAN, 0},
    {NAN, 1, NAN, NAN, 0},
    {NAN, NAN, NAN, NAN, 0},
    {-4, +0.0, +0.0, 2, 0},
    {-4, -0.0, +0.0, -2, 0},
    {4, -0.0, 2, -0.0, 0},
    {3, 4, 2, 1, 0},
    {-3, 4, 1, 2, 0},
    {-3, -4, 1, -2, 0},
    {0, 2, 1, 1, 0},
};
/* Division: a / b given as (in_re, in_im) pairs of rows; want as the second row's re/im. */
static const struct special div_table[] = {
    /* numerator row, then denominator row with the quotient */
    {1, 1, 0, 0, 0},      {0, 0, INF, INF, 0},    /* nonzero / 0: infinities */
    {1, 0, 0, 0, 0},      {0, 0, INF, NAN, 0},    /* NumPy's (inf, nan) */
    {-2, 0, 0, 0, 0},     {-0.0, 0, INF, NAN, 0}, /* sign from copysign(inf, -0) * -2 */
    {0, 0, 0, 0, 0},      {0, 0, NAN, NAN, 0},     {INF, 0, 0, 0, 0},
    {1, 1, INF, -INF, 0}, {INF, INF, 0, 0, 0},     {1, 0, INF, INF, 0}, /* recovered from NaN/NaN */
    {1, 1, 0, 0, 0},      {INF, INF, 0, 0, 0}, /* finite / infinite: zero */
    {5, -3, 0, 0, 0},     {INF, 0, +0.0, -0.0, 0}, {NAN, 0, 0, 0, 0},
    {1, 1, NAN, NAN, 0},  {1, 1, 0, 0, 0},         {NAN, 1, NAN, NAN, 0},
};

static int
special_ok(kiln_dtype dt, lc got, const struct special *s)
{
  long double g[2] = {creall(got), cimagl(got)};
  double w[2] = {s->re, s->im};
  for (int k = 0; k < 2; k++) {
    if (isnan(w[k])) {
      if (!isnan(g[k]))
        return 0;
    } else if (isinf(w[k]) || w[k] == 0) {
      long double gv = (s->any_sign >> k) & 1 ? fabsl(g[k]) : g[k];
      double wv = (s->any_sign >> k) & 1 ? fabs(w[k]) : w[k];
      if (gv != wv || (w[k] == 0 && !((s->any_sign >> k) & 1) && !signbit(gv) != !signbit(wv)))
        return 0;
    } else if (fabsl(g[k] - w[k]) > 16 * eps_of(dt) * fabs(w[k])) {
      return 0;
    }
  }
  return 1;
}

static void
run_special(kiln_unary_op op, const struct special *t, size_t n)
{
  kiln_context *ctx = harness_ctx();
  FOR_CDT(dt)
  {
    unsigned char host[64 * 16];
    for (size_t i = 0; i < n; i++)
      cset(dt, host, i, CMPLXL(t[i].in_re, t[i].in_im));
    int64_t len = (int64_t)n;
    kiln_tensor *x = upload(dt, 1, &len, host), *y = NULL;
    KOK(kiln_unary(ctx, op, x, &y));
    void *got = download(y);
    for (size_t i = 0; i < n; i++) {
      lc g = cget(dt, got, i);
      ck_assert_msg(special_ok(dt, g, &t[i]), "%s %s(%g, %g): got (%Lg, %Lg), want (%g, %g)",
                    kiln_dtype_name(dt), kiln_unary_op_name(op), t[i].in_re, t[i].in_im, creall(g),
                    cimagl(g), t[i].re, t[i].im);
    }
    free(got);
    kiln_tensor_release(x);
    kiln_tensor_release(y);
  }
}

START_TEST(annex_g_exp)
{
  run_special(KILN_OP_EXP, exp_table, N_(exp_table));
}
END_TEST
START_TEST(annex_g_log)
{
  run_special(KILN_OP_LOG, log_table, N_(log_table));
}
END_TEST
START_TEST(annex_g_sqrt)
{
  run_special(KILN_OP_SQRT, sqrt_table, N_(sqrt_table));
}
END_TEST

START_TEST(division_special_values)
{
  kiln_context *ctx = harness_ctx();
  FOR_CDT(dt)
  {
    size_t n = N_(div_table) / 2;
    unsigned char ha[16 * 16], hb[16 * 16];
    for (size_t i = 0; i < n; i++) {
      cset(dt, ha, i, CMPLXL(div_table[2 * i].in_re, div_table[2 * i].in_im));
      cset(dt, hb, i, CMPLXL(div_table[2 * i + 1].in_re, div_table[2 * i + 1].in_im));
    }
    int64_t len = (int64_t)n;
    kiln_tensor *a = upload(dt, 1, &len, ha), *b = upload(dt, 1, &len, hb), *c = NULL;
    KOK(kiln_binary(ctx, KILN_OP_DIV, a, b, &c));
    void *got = download(c);
    for (size_t i = 0; i < n; i++) {
      lc g = cget(dt, got, i);
      const struct special *w = &div_table[2 * i + 1];
      ck_assert_msg(special_ok(dt, g, w), "%s (%g, %g) / (%g, %g): got (%Lg, %Lg), want (%g, %g)",
                    kiln_dtype_name(dt), div_table[2 * i].in_re, div_table[2 * i].in_im, w->in_re,
                    w->in_im, creall(g), cimagl(g), w->re, w->im);
    }
    free(got);
    kiln_tensor_release(a);
    kiln_tensor_release(b);
    kiln_tensor_release(c);
  }
}
END_TEST

/* Operands near the ends of the range, where textbook formulas overflow or underflow. */
struct extreme {
  int is_div; /* 1: a / b; 0: unary op on a */
  kiln_unary_op op;
  long double ar, ai, br, bi;
};

static const struct extreme ext64[] = {
    {1, 0, 1e38L, 1e38L, 1e38L, 1e38L},
    {1, 0, 1e-38L, 1e-38L, 1e-38L, 1e-38L},
    {1, 0, 3e38L, 3e38L, 3e38L, -3e38L},
    {1, 0, 1e30L, 1e-30L, 1, 0},
    {1, 0, 3e-30L, 4e-30L, 2e-40L, 1e-40L},
    {1, 0, 1e-44L, 3e-44L, 1e-30L, 0},
    {1, 0, 1, 2, 1e-38L, 3e-39L},
    {1, 0, 2e38L, -1e38L, 3, 1},
    {0, KILN_OP_RECIPROCAL, 1e-38L, 1e-38L, 0, 0},
    {0, KILN_OP_RECIPROCAL, 3e38L, -1e38L, 0, 0},
    {0, KILN_OP_ABS, 2e38L, 2e38L, 0, 0},
    {0, KILN_OP_ABS, 1e-40L, 1e-40L, 0, 0},
    {0, KILN_OP_SQRT, 3e38L, 3e38L, 0, 0},
    {0, KILN_OP_SQRT, -3e38L, 1e-30L, 0, 0},
    {0, KILN_OP_SQRT, 1e-42L, 1e-42L, 0, 0},
    {0, KILN_OP_LOG, 3e38L, 3e38L, 0, 0},
    {0, KILN_OP_LOG, 1e-42L, 1e-42L, 0, 0},
    {0, KILN_OP_LOG, 1, 1e-20L, 0, 0},
    {0, KILN_OP_EXP, 88.9L, 0.785L, 0, 0},
    {0, KILN_OP_EXP, -100, 1, 0, 0},
    {0, KILN_OP_COSH, 89.5L, 0.785L, 0, 0},
    {0, KILN_OP_TANH, 30, 1, 0, 0},
};
static const struct extreme ext128[] = {
    {1, 0, 1e300L, 1e300L, 1e300L, 1e300L},
    {1, 0, 1e-300L, 1e-300L, 1e-300L, 1e-300L},
    {1, 0, 1e308L, 1e308L, 1e308L, -1e308L},
    {1, 0, 1e300L, 1e-300L, 1, 0},
    {1, 0, 3e-300L, 4e-300L, 2e-320L, 1e-320L},
    {1, 0, 1e-320L, 3e-320L, 1e-300L, 0},
    {1, 0, 1, 2, 1e-308L, 3e-309L},
    {1, 0, 1e-300L, 0, 1e10L, 1e10L},
    {1, 0, 1.7e308L, -1e308L, 3, 1},
    {1, 0, 1e-10L, 1e-10L, 1e-310L, 2e-310L},
    {0, KILN_OP_RECIPROCAL, 1e-300L, 1e-300L, 0, 0},
    {0, KILN_OP_RECIPROCAL, 1e308L, -1e308L, 0, 0},
    {0, KILN_OP_ABS, 1e300L, 1e300L, 0, 0},
    {0, KILN_OP_ABS, 1e308L, 1e308L, 0, 0},
    {0, KILN_OP_ABS, 1e-310L, 1e-310L, 0, 0},
    {0, KILN_OP_SQRT, 1e308L, 1e308L, 0, 0},
    {0, KILN_OP_SQRT, -1e308L, 1e-300L, 0, 0},
    {0, KILN_OP_SQRT, 1e-320L, 1e-320L, 0, 0},
    {0, KILN_OP_LOG, 1e308L, 1e308L, 0, 0},
    {0, KILN_OP_LOG, 1e-320L, 1e-320L, 0, 0},
    {0, KILN_OP_LOG, 1, 1e-200L, 0, 0},
    {0, KILN_OP_EXP, 710, 0.785L, 0, 0},
    {0, KILN_OP_EXP, -800, 1, 0, 0},
    {0, KILN_OP_COSH, 710.5L, 0.785L, 0, 0},
    {0, KILN_OP_SINH, -710.5L, 0.785L, 0, 0},
    {0, KILN_OP_TANH, 30, 1, 0, 0},
};

START_TEST(huge_and_tiny)
{
  kiln_context *ctx = harness_ctx();
  FOR_CDT(dt)
  {
    const struct extreme *t = dt == KILN_C64 ? ext64 : ext128;
    size_t n = dt == KILN_C64 ? N_(ext64) : N_(ext128);
    for (size_t i = 0; i < n; i++) {
      unsigned char ha[16], hb[16];
      cset(dt, ha, 0, CMPLXL(t[i].ar, t[i].ai));
      cset(dt, hb, 0, CMPLXL(t[i].br, t[i].bi));
      lc a = cget(dt, ha, 0), b = cget(dt, hb, 0);
      int64_t one = 1;
      kiln_tensor *x = upload(dt, 1, &one, ha), *y = upload(dt, 1, &one, hb), *c = NULL;
      lc want;
      double tol;
      enum res res = R_SAME;
      const char *what;
      if (t[i].is_div) {
        KOK(kiln_binary(ctx, KILN_OP_DIV, x, y, &c));
        want = bref(B_DIV, dt, a, b);
        tol = 8;
        what = "div";
      } else {
        KOK(kiln_unary(ctx, t[i].op, x, &c));
        size_t k = 0;
        while (uops[k].op != t[i].op)
          k++;
        want = uops[k].ref(a);
        tol = uops[k].tol;
        res = uops[k].res;
        what = kiln_unary_op_name(t[i].op);
      }
      lc wr = round_to(res == R_REAL ? dt : dt, want);
      ck_assert_msg(isfinite(creall(wr)) && isfinite(cimagl(wr)), "case %zu is not finite", i);
      void *got = download(c);
      expect_match(what, dt, i, a, b, res_get(res, dt, got, 0), want, tol);
      lc g = res_get(res, dt, got, 0);
      ck_assert_msg(isfinite(creall(g)) && isfinite(cimagl(g)), "%s case %zu overflowed", what, i);
      free(got);
      kiln_tensor_release(x);
      kiln_tensor_release(y);
      kiln_tensor_release(c);
    }
  }
}
END_TEST

START_TEST(build_view_round_trip)
{
  kiln_context *ctx = harness_ctx();
  FOR_CDT(dt)
  {
    kiln_dtype pt = part_dtype(dt);
    size_t ps = kiln_dtype_size(pt);
    double re[12], im[3];
    unsigned char hre[12 * 8], him[3 * 8];
    for (int i = 0; i < 12; i++) {
      re[i] = i * 1.5 - 4;
      memcpy(hre + i * ps, pt == KILN_F32 ? (void *)&(float){(float)re[i]} : (void *)&re[i], ps);
    }
    for (int i = 0; i < 3; i++) {
      im[i] = 0.25 - i;
      memcpy(him + i * ps, pt == KILN_F32 ? (void *)&(float){(float)im[i]} : (void *)&im[i], ps);
    }
    int64_t s_re[2] = {4, 3}, s_im[1] = {3};
    kiln_tensor *tre = upload(pt, 2, s_re, hre), *tim = upload(pt, 1, s_im, him), *c = NULL;
    KOK(kiln_complex(ctx, tre, tim, &c));
    ck_assert_int_eq(kiln_tensor_dtype(c), dt);
    ck_assert_int_eq(kiln_tensor_ndim(c), 2);
    void *hc = download(c);
    for (size_t i = 0; i < 12; i++)
      ck_assert(matches(dt, cget(dt, hc, i), CMPLXL(re[i], im[i % 3]), 0));

    /* view_as_real: a view, no copy; writes through it show in c. */
    kiln_tensor *v = NULL;
    KOK(kiln_view_as_real(ctx, c, &v));
    ck_assert_int_eq(kiln_tensor_dtype(v), pt);
    ck_assert_int_eq(kiln_tensor_ndim(v), 3);
    ck_assert_int_eq(kiln_tensor_dim(v, 2), 2);
    void *hv = download(v);
    ck_assert_mem_eq(hv, hc, 12 * 2 * ps);
    free(hv);
    kiln_tensor *vv = v;
    KOK(kiln_binary_scalar(ctx, KILN_OP_MUL, v, kiln_scalar_f64(2), 0, &vv));
    void *hc2 = download(c);
    for (size_t i = 0; i < 12; i++)
      ck_assert(matches(dt, cget(dt, hc2, i), 2 * CMPLXL(re[i], im[i % 3]), 0));
    free(hc2);

    /* ... and back: a complex view of the real view. */
    kiln_tensor *c2 = NULL;
    KOK(kiln_view_as_complex(ctx, v, &c2));
    ck_assert_int_eq(kiln_tensor_dtype(c2), dt);
    ck_assert_int_eq(kiln_tensor_ndim(c2), 2);
    ck_assert_int_eq(kiln_tensor_dim(c2, 1), 3);
    kiln_tensor *c2n = c2;
    KOK(kiln_unary(ctx, KILN_OP_CONJ, c2, &c2n));
    void *hc3 = download(c);
    for (size_t i = 0; i < 12; i++)
      ck_assert(matches(dt, cget(dt, hc3, i), 2 * conjl(CMPLXL(re[i], im[i % 3])), 0));
    free(hc3);

    /* A given *out receives a copy, not a view. */
    int64_t s_v[3] = {4, 3, 2};
    kiln_tensor *copy = NULL;
    KOK(kiln_tensor_zeros(ctx, pt, 3, s_v, &copy));
    KOK(kiln_view_as_real(ctx, c, &copy));
    kiln_tensor *cc = c;
    KOK(kiln_unary(ctx, KILN_OP_NEG, c, &cc));
    void *hcopy = download(copy), *hneg = download(v);
    ck_assert(memcmp(hcopy, hneg, 12 * 2 * ps) != 0);
    free(hcopy);
    free(hneg);

    /* Odd element offsets are refused; even ones view. */
    cl_mem mem;
    size_t off;
    KOK(kiln_tensor_cl_mem(v, &mem, &off));
    int64_t s_w[2] = {2, 2};
    kiln_tensor *w_odd = NULL, *w_even = NULL, *cw = NULL;
    KOK(kiln_tensor_wrap(ctx, mem, off + ps, pt, 2, s_w, &w_odd));
    KEXPECT(kiln_view_as_complex(ctx, w_odd, &cw), KILN_ERR_INVALID_ARGUMENT);
    KOK(kiln_tensor_wrap(ctx, mem, off + 2 * ps, pt, 2, s_w, &w_even));
    KOK(kiln_view_as_complex(ctx, w_even, &cw));
    void *hw = download(cw), *hall = download(c);
    ck_assert_mem_eq(hw, (char *)hall + 2 * ps, 2 * 2 * ps);
    free(hw);
    free(hall);

    /* Empty tensors. */
    int64_t zero = 0;
    kiln_tensor *e1 = upload(pt, 1, &zero, NULL), *e2 = upload(pt, 1, &zero, NULL), *ec = NULL,
                *er = NULL;
    KOK(kiln_complex(ctx, e1, e2, &ec));
    ck_assert_int_eq(kiln_tensor_numel(ec), 0);
    KOK(kiln_view_as_real(ctx, ec, &er));
    ck_assert_int_eq(kiln_tensor_dim(er, 1), 2);

    /* Errors. */
    kiln_tensor *bad = NULL;
    KEXPECT(kiln_view_as_real(ctx, tre, &bad), KILN_ERR_DTYPE);
    KEXPECT(kiln_view_as_complex(ctx, c, &bad), KILN_ERR_DTYPE);
    KEXPECT(kiln_view_as_complex(ctx, tre, &bad), KILN_ERR_SHAPE);
    KEXPECT(kiln_view_as_complex(ctx, tim, &bad), KILN_ERR_SHAPE);
    KEXPECT(kiln_view_as_real(ctx, c, NULL), KILN_ERR_INVALID_ARGUMENT);
    KEXPECT(kiln_view_as_real(NULL, c, &bad), KILN_ERR_INVALID_HANDLE);
    KEXPECT(kiln_complex(ctx, tre, c, &bad), KILN_ERR_DTYPE);
    KEXPECT(kiln_complex(ctx, c, c, &bad), KILN_ERR_DTYPE);
    int64_t s5 = 5;
    kiln_tensor *five = upload(pt, 1, &s5, hre);
    KEXPECT(kiln_complex(ctx, tim, five, &bad), KILN_ERR_SHAPE);
    int64_t s8[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    kiln_tensor *c8 = NULL;
    KOK(kiln_reshape(ctx, c, 8, (int64_t[8]){1, 1, 1, 1, 1, 1, 4, 3}, &c8));
    (void)s8;
    KEXPECT(kiln_view_as_real(ctx, c8, &bad), KILN_ERR_SHAPE);
    ck_assert_ptr_null(bad);

    kiln_tensor *all[] = {tre, tim, c, v, c2, copy, w_odd, w_even, cw, e1, e2, ec, er, five, c8};
    for (size_t i = 0; i < N_(all); i++)
      kiln_tensor_release(all[i]);
    free(hc);
  }
}
END_TEST

START_TEST(where_complex)
{
  kiln_context *ctx = harness_ctx();
  FOR_CDT(dt)
  {
    int64_t sc[2] = {5, 1}, sa[2] = {1, 4}, sb[2] = {5, 4};
    unsigned char cond[5] = {1, 0, 0, 1, 1}, ha[4 * 16], hb[20 * 16];
    for (size_t i = 0; i < 4; i++)
      cset(dt, ha, i, CMPLXL(i, -(double)i));
    for (size_t i = 0; i < 20; i++)
      cset(dt, hb, i, CMPLXL(100 + i, 0.5));
    kiln_tensor *c = upload(KILN_BOOL, 2, sc, cond), *a = upload(dt, 2, sa, ha),
                *b = upload(dt, 2, sb, hb), *o = NULL;
    KOK(kiln_where(ctx, c, a, b, &o));
    void *got = download(o);
    for (size_t i = 0; i < 5; i++)
      for (size_t j = 0; j < 4; j++)
        ck_assert(matches(dt, cget(dt, got, i * 4 + j),
                          cond[i] ? cget(dt, ha, j) : cget(dt, hb, i * 4 + j), 0));
    free(got);
    /* Flat (no broadcast) where too. */
    kiln_tensor *c2 = NULL, *o2 = NULL;
    KOK(kiln_binary(ctx, KILN_OP_EQ, b, b, &c2));
    KOK(kiln_where(ctx, c2, b, o, &o2));
    void *g2 = download(o2);
    ck_assert(memcmp(g2, hb, 20 * kiln_dtype_size(dt)) == 0);
    free(g2);
    kiln_tensor *all[] = {c, a, b, o, c2, o2};
    for (size_t i = 0; i < N_(all); i++)
      kiln_tensor_release(all[i]);
  }
}
END_TEST

START_TEST(unsupported_and_bad_input)
{
  kiln_context *ctx = harness_ctx();
  FOR_CDT(dt)
  {
    int64_t n = 3;
    unsigned char h[3 * 16] = {0};
    kiln_tensor *x = upload(dt, 1, &n, h), *out = NULL;
    static const kiln_unary_op no_unary[] = {KILN_OP_FLOOR, KILN_OP_RELU, KILN_OP_SIGN,
                                             KILN_OP_LOG1P, KILN_OP_LOGICAL_NOT};
    for (size_t k = 0; k < N_(no_unary); k++) {
      KEXPECT(kiln_unary(ctx, no_unary[k], x, &out), KILN_ERR_DTYPE);
      ck_assert_msg(strstr(kiln_last_error(), kiln_unary_op_name(no_unary[k])) &&
                        strstr(kiln_last_error(), "complex dtypes accept"),
                    "message: %s", kiln_last_error());
    }
    static const kiln_binary_op no_binary[] = {KILN_OP_MAX, KILN_OP_LT, KILN_OP_FMOD, KILN_OP_ATAN2,
                                               KILN_OP_LOGICAL_AND};
    for (size_t k = 0; k < N_(no_binary); k++) {
      KEXPECT(kiln_binary(ctx, no_binary[k], x, x, &out), KILN_ERR_DTYPE);
      KEXPECT(kiln_binary_scalar(ctx, no_binary[k], x, kiln_scalar_f64(1), 0, &out),
              KILN_ERR_DTYPE);
    }
    ck_assert_ptr_null(out);
    kiln_tensor *r = NULL;
    KOK(kiln_unary(ctx, KILN_OP_REAL, x, &r));
    KEXPECT(kiln_binary(ctx, KILN_OP_ADD, x, r, &out), KILN_ERR_DTYPE);
    KEXPECT(kiln_clamp(ctx, x, kiln_scalar_f64(0), kiln_scalar_f64(1), &out), KILN_ERR_DTYPE);
    KEXPECT(kiln_unary(ctx, (kiln_unary_op)999, x, &out), KILN_ERR_INVALID_ARGUMENT);
    kiln_tensor_release(x);
    kiln_tensor_release(r);
  }
  if (harness_has_fp64()) {
    int64_t n = 2;
    unsigned char h[2 * 16] = {0};
    kiln_tensor *a = upload(KILN_C64, 1, &n, h), *b = upload(KILN_C128, 1, &n, h), *out = NULL;
    KEXPECT(kiln_binary(ctx, KILN_OP_MUL, a, b, &out), KILN_ERR_DTYPE);
    kiln_tensor_release(a);
    kiln_tensor_release(b);
  }
}
END_TEST

START_TEST(real_dtypes_complex_ops)
{
  /* conj, real, imag, angle on real tensors (the elementwise suite tests every size). */
  kiln_context *ctx = harness_ctx();
  float h[4] = {-2.0f, -0.0f, 0.0f, 3.0f};
  int64_t n = 4;
  kiln_tensor *x = upload(KILN_F32, 1, &n, h), *a = NULL, *im = NULL;
  KOK(kiln_unary(ctx, KILN_OP_ANGLE, x, &a));
  KOK(kiln_unary(ctx, KILN_OP_IMAG, x, &im));
  float *ga = download(a), *gi = download(im);
  ck_assert_float_eq_tol(ga[0], (float)PI, 1e-6f);
  ck_assert_float_eq_tol(ga[1], (float)PI, 1e-6f);
  ck_assert(ga[2] == 0 && ga[3] == 0);
  for (int i = 0; i < 4; i++)
    ck_assert(gi[i] == 0);
  free(ga);
  free(gi);
  kiln_tensor_release(x);
  kiln_tensor_release(a);
  kiln_tensor_release(im);
}
END_TEST

START_TEST(provider_slots)
{
  const kiln_provider *p = NULL;
  KOK(kiln_get_provider(KILN_PROVIDER_ABI, &p));
  ck_assert(p->complex_from_parts == kiln_complex);
  ck_assert(p->view_as_real == kiln_view_as_real);
  ck_assert(p->view_as_complex == kiln_view_as_complex);
}
END_TEST

static Suite *
complex_suite(void)
{
  Suite *s = suite_create("complex");
  TCase *tc = tcase_create("complex");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, op_table_agrees);
  tcase_add_test(tc, unary_ops_all_sizes);
  tcase_add_test(tc, binary_ops_all_sizes);
  tcase_add_test(tc, scalars_and_broadcasting);
  tcase_add_test(tc, annex_g_exp);
  tcase_add_test(tc, annex_g_log);
  tcase_add_test(tc, annex_g_sqrt);
  tcase_add_test(tc, division_special_values);
  tcase_add_test(tc, huge_and_tiny);
  tcase_add_test(tc, build_view_round_trip);
  tcase_add_test(tc, where_complex);
  tcase_add_test(tc, unsupported_and_bad_input);
  tcase_add_test(tc, real_dtypes_complex_ops);
  tcase_add_test(tc, provider_slots);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  return harness_main(complex_suite(), 1);
}
