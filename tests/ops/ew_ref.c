/* Host references of the elementwise op table (ew_ref.h), moved here from test_elementwise.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ew_ref.h"

#define RES_SAME 0
#define RES_BOOL 1
static const int ew_unary_res_bool[KILN_UNARY_OP_COUNT] = {
#define X(E, n, cls, res, expr) [KILN_OP_##E] = RES_##res,
    KILN_UNARY_OPS(X)
#undef X
};
static const int ew_binary_res_bool[KILN_BINARY_OP_COUNT] = {
#define X(E, n, cls, res, expr) [KILN_OP_##E] = RES_##res,
    KILN_BINARY_OPS(X)
#undef X
};

int
is_half(kiln_dtype dt)
{
  return dt == KILN_F16 || dt == KILN_BF16;
}

/* Every real floating dtype, the 16-bit ones included. */
int
is_float(kiln_dtype dt)
{
  return dt == KILN_F32 || dt == KILN_F64 || is_half(dt);
}

/* The bits of element i of a 16-bit float buffer. */
uint16_t
half_bits(const void *p, size_t i)
{
  return ((const uint16_t *)p)[i];
}

/* Position of a 16-bit float pattern on the number line, in steps (ulps); +-0 are 0. */
int
half_ord(uint16_t h)
{
  return (h & 0x8000) ? -(int)(h & 0x7fff) : (int)(h & 0x7fff);
}

/* One ulp of dtype dt (f16 or bf16) at |w|: the spacing of its binade, subnormals included. */
double
half_ulp(kiln_dtype dt, double w)
{
  int e;
  frexp(w, &e); /* |w| in [2^(e-1), 2^e) */
  int emin = dt == KILN_F16 ? -14 : -126, mant = dt == KILN_F16 ? 10 : 7;
  e = e - 1 < emin ? emin : e - 1;
  return ldexp(1.0, e - mant);
}

int
is_signed(kiln_dtype dt)
{
  return dt == KILN_I32 || dt == KILN_I64;
}

int
bits_of(kiln_dtype dt)
{
  return (int)kiln_dtype_size(dt) * 8;
}

int64_t
int_min(kiln_dtype dt)
{
  return dt == KILN_I32 ? INT32_MIN : dt == KILN_I64 ? INT64_MIN : 0;
}

int64_t
int_max(kiln_dtype dt)
{
  return dt == KILN_I32 ? INT32_MAX : dt == KILN_I64 ? INT64_MAX : dt == KILN_U8 ? 255 : 1;
}

/* Element i of a host buffer of dtype dt, as a double (floats; exact for f32/f64). */
double
getf(kiln_dtype dt, const void *p, size_t i)
{
  switch (dt) {
  case KILN_F32:
    return ((const float *)p)[i];
  case KILN_F64:
    return ((const double *)p)[i];
  case KILN_F16:
    return kiln_f16_to_f32(half_bits(p, i));
  case KILN_BF16:
    return kiln_bf16_to_f32(half_bits(p, i));
  case KILN_I32:
    return ((const int32_t *)p)[i];
  case KILN_I64:
    return (double)((const int64_t *)p)[i];
  default:
    return ((const uint8_t *)p)[i];
  }
}

/* Element i of an integer/bool host buffer. */
int64_t
geti(kiln_dtype dt, const void *p, size_t i)
{
  switch (dt) {
  case KILN_I32:
    return ((const int32_t *)p)[i];
  case KILN_I64:
    return ((const int64_t *)p)[i];
  case KILN_U8:
  case KILN_BOOL:
    return ((const uint8_t *)p)[i];
  default:
    return 0;
  }
}

/* Stores v into a float buffer (rounding once to nearest even for f32, f16 and bf16). */
void
putf(kiln_dtype dt, void *p, size_t i, double v)
{
  if (dt == KILN_F32)
    ((float *)p)[i] = (float)v;
  else if (dt == KILN_F16)
    ((uint16_t *)p)[i] = kiln_f16_from_f64(v);
  else if (dt == KILN_BF16)
    ((uint16_t *)p)[i] = kiln_bf16_from_f64(v);
  else
    ((double *)p)[i] = v;
}

/* Stores v into an integer/bool buffer, keeping the low bits (two's complement wrap). */
void
puti(kiln_dtype dt, void *p, size_t i, int64_t v)
{
  switch (dt) {
  case KILN_I32:
    ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v;
    break;
  case KILN_I64:
    ((int64_t *)p)[i] = v;
    break;
  default:
    ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v;
    break;
  }
}

/* v wrapped to dtype dt (two's complement), as an int64. */
int64_t
wrap(kiln_dtype dt, uint64_t v)
{
  switch (dt) {
  case KILN_I32:
    return (int32_t)(uint32_t)v;
  case KILN_U8:
  case KILN_BOOL:
    return (uint8_t)v;
  default:
    return (int64_t)v;
  }
}

const tol_t EXACT = {0, 0, 1, 0};
const tol_t EXACT_NOSIGN = {0, 0, 0, 0};

int
elem_matches(kiln_dtype dt, const void *got, const void *want, size_t i, tol_t t)
{
  if (!is_float(dt))
    return geti(dt, got, i) == geti(dt, want, i);
  double g = getf(dt, got, i), w = getf(dt, want, i);
  if (isnan(w) || isnan(g))
    return isnan(w) && isnan(g);
  if (is_half(dt)) {
    if (w == 0 && g == 0)
      return !t.zsign || signbit(g) == signbit(w);
    if (abs(half_ord(half_bits(got, i)) - half_ord(half_bits(want, i))) <= t.ulps)
      return 1; /* one ulp past the largest finite value is the infinity */
    if (isinf(w) || isinf(g))
      return 0;
    return fabs(g - w) <= t.abs + t.rel * fabs(w) + t.ulps * half_ulp(dt, w);
  }
  if (isinf(w) || isinf(g))
    return g == w;
  if (w == 0 && g == 0)
    return !t.zsign || signbit(g) == signbit(w);
  return fabs(g - w) <= t.abs + t.rel * fabs(w);
}

int64_t
ineg(kiln_dtype dt, int64_t v)
{
  return wrap(dt, 0 - (uint64_t)v);
}

double
sign_f(double x)
{
  return x > 0 ? 1.0 : x < 0 ? -1.0 : x; /* keeps NaN and the sign of zero */
}

double
sigmoid_f(double x)
{
  return 1.0 / (1.0 + exp(-x));
}

/*
 * Host reference of a unary op on one input: x (float dtypes) or v (integer
 * dtypes, exact). Sets r->f for float results, r->i for integer and bool
 * results. Returns 0 when there is no reference for op.
 */
int
unary_ref(kiln_unary_op op, kiln_dtype dt, double x, int64_t v, rv_t *r)
{
  const int fl = is_float(dt);
  switch (op) {
  case KILN_OP_ABS:
    r->f = fabs(x);
    r->i = v < 0 ? ineg(dt, v) : v; /* abs(INT_MIN) wraps to INT_MIN */
    return 1;
  case KILN_OP_NEG:
    r->f = -x;
    r->i = ineg(dt, v);
    return 1;
  case KILN_OP_SIGN:
    r->f = sign_f(x);
    r->i = (v > 0) - (v < 0);
    return 1;
  case KILN_OP_SQUARE:
    r->f = x * x;
    r->i = wrap(dt, (uint64_t)v * (uint64_t)v);
    return 1;
  case KILN_OP_RELU:
    r->f = x < 0 ? 0.0 : x;
    r->i = v < 0 ? 0 : v;
    return 1;
  case KILN_OP_SQRT:
    r->f = sqrt(x);
    return 1;
  case KILN_OP_RSQRT:
    r->f = 1.0 / sqrt(x);
    return 1;
  case KILN_OP_RECIPROCAL:
    r->f = 1.0 / x;
    return 1;
  case KILN_OP_EXP:
    r->f = exp(x);
    return 1;
  case KILN_OP_EXP2:
    r->f = exp2(x);
    return 1;
  case KILN_OP_EXPM1:
    r->f = expm1(x);
    return 1;
  case KILN_OP_LOG:
    r->f = log(x);
    return 1;
  case KILN_OP_LOG2:
    r->f = log2(x);
    return 1;
  case KILN_OP_LOG10:
    r->f = log10(x);
    return 1;
  case KILN_OP_LOG1P:
    r->f = log1p(x);
    return 1;
  case KILN_OP_SIN:
    r->f = sin(x);
    return 1;
  case KILN_OP_COS:
    r->f = cos(x);
    return 1;
  case KILN_OP_TAN:
    r->f = tan(x);
    return 1;
  case KILN_OP_ASIN:
    r->f = asin(x);
    return 1;
  case KILN_OP_ACOS:
    r->f = acos(x);
    return 1;
  case KILN_OP_ATAN:
    r->f = atan(x);
    return 1;
  case KILN_OP_SINH:
    r->f = sinh(x);
    return 1;
  case KILN_OP_COSH:
    r->f = cosh(x);
    return 1;
  case KILN_OP_TANH:
    r->f = tanh(x);
    return 1;
  case KILN_OP_ASINH:
    r->f = asinh(x);
    return 1;
  case KILN_OP_ACOSH:
    r->f = acosh(x);
    return 1;
  case KILN_OP_ATANH:
    r->f = atanh(x);
    return 1;
  case KILN_OP_FLOOR:
    r->f = floor(x);
    return 1;
  case KILN_OP_CEIL:
    r->f = ceil(x);
    return 1;
  case KILN_OP_ROUND:
    r->f = nearbyint(x); /* half to even in the default rounding mode */
    return 1;
  case KILN_OP_TRUNC:
    r->f = trunc(x);
    return 1;
  case KILN_OP_ERF:
    r->f = erf(x);
    return 1;
  case KILN_OP_ERFC:
    r->f = erfc(x);
    return 1;
  case KILN_OP_LGAMMA:
    r->f = lgamma(x);
    return 1;
  case KILN_OP_TGAMMA:
    r->f = tgamma(x);
    return 1;
  case KILN_OP_SIGMOID:
    r->f = sigmoid_f(x);
    return 1;
  case KILN_OP_GELU:
    /* 0.5 x (1 + erf(x/sqrt 2)), written without the cancellation for negative x */
    r->f = 0.5 * x * erfc(-x * 0.70710678118654752440);
    return 1;
  case KILN_OP_GELU_TANH: {
    /* 0.5 x (1 + tanh(u)) == x * sigmoid(2u) */
    double u = 0.79788456080286535588 * (x + 0.044715 * x * x * x);
    r->f = x / (1.0 + exp(-2.0 * u));
    return 1;
  }
  case KILN_OP_SILU:
    r->f = x / (1.0 + exp(-x));
    return 1;
  case KILN_OP_SOFTPLUS:
    r->f = x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
    return 1;
  case KILN_OP_ISNAN:
    r->i = fl && isnan(x);
    return 1;
  case KILN_OP_ISINF:
    r->i = fl && isinf(x);
    return 1;
  case KILN_OP_ISFINITE:
    r->i = !fl || isfinite(x);
    return 1;
  case KILN_OP_LOGICAL_NOT:
    r->i = fl ? x == 0 : v == 0;
    return 1;
  case KILN_OP_BITWISE_NOT:
    r->i = dt == KILN_BOOL ? v == 0 : wrap(dt, ~(uint64_t)v);
    return 1;
  case KILN_OP_CONJ:
  case KILN_OP_REAL:
    r->f = x;
    r->i = v;
    return 1;
  case KILN_OP_IMAG:
    r->f = 0.0;
    r->i = 0;
    return 1;
  case KILN_OP_ANGLE:
    r->f = atan2(0.0, x);
    return 1;
  case KILN_UNARY_OP_COUNT:
    break;
  }
  return 0;
}

/* Integer helpers with the documented semantics; a and b are values of dtype dt. */
int64_t
idiv(kiln_dtype dt, int64_t a, int64_t b)
{
  if (b == 0)
    return 0;
  if (b == -1)
    return ineg(dt, a); /* INT_MIN / -1 wraps to INT_MIN */
  return a / b;
}

int64_t
ifmod(int64_t a, int64_t b)
{
  if (b == 0 || b == -1)
    return 0;
  return a % b; /* C: sign of the dividend */
}

int64_t
iremainder(int64_t a, int64_t b)
{
  int64_t r = ifmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0)))
    r += b; /* Python %: sign of the divisor */
  return r;
}

int64_t
ishl(kiln_dtype dt, int64_t a, int64_t b)
{
  if (b < 0 || b >= bits_of(dt))
    return 0;
  return wrap(dt, (uint64_t)a << b);
}

int64_t
ishr(kiln_dtype dt, int64_t a, int64_t b)
{
  if (b < 0 || b >= bits_of(dt))
    return a < 0 ? -1 : 0;
  return a >= 0 ? a >> b : ~(~a >> b); /* arithmetic shift, spelled portably */
}

/* NumPy remainder for floats: fmod, moved to the divisor's sign; zero takes the divisor's sign. */
double
fremainder(double a, double b)
{
  double m = fmod(a, b);
  if (m != 0) {
    if ((b < 0) != (m < 0))
      m += b;
  } else {
    m = copysign(0.0, b);
  }
  return m;
}

/* NumPy maximum/minimum: NaN in either operand gives NaN. */
double
fmax_nan(double a, double b)
{
  return isnan(a) ? a : isnan(b) ? b : a > b ? a : b;
}

double
fmin_nan(double a, double b)
{
  return isnan(a) ? a : isnan(b) ? b : a < b ? a : b;
}

/*
 * Host reference of a binary op: (a, b) for float dtypes, (ai, bi) exact for
 * integer dtypes. Sets r->f for float results, r->i otherwise. Returns 0 when
 * there is no reference for op.
 */
int
binary_ref(kiln_binary_op op, kiln_dtype dt, double a, double b, int64_t ai, int64_t bi, rv_t *r)
{
  const int fl = is_float(dt);
  switch (op) {
  case KILN_OP_ADD:
    r->f = a + b;
    r->i = wrap(dt, (uint64_t)ai + (uint64_t)bi);
    return 1;
  case KILN_OP_SUB:
    r->f = a - b;
    r->i = wrap(dt, (uint64_t)ai - (uint64_t)bi);
    return 1;
  case KILN_OP_MUL:
    r->f = a * b;
    r->i = wrap(dt, (uint64_t)ai * (uint64_t)bi);
    return 1;
  case KILN_OP_DIV:
    r->f = a / b;
    r->i = fl ? 0 : idiv(dt, ai, bi);
    return 1;
  case KILN_OP_POW:
    r->f = pow(a, b);
    return 1;
  case KILN_OP_MAX:
    r->f = fmax_nan(a, b);
    r->i = ai > bi ? ai : bi;
    return 1;
  case KILN_OP_MIN:
    r->f = fmin_nan(a, b);
    r->i = ai < bi ? ai : bi;
    return 1;
  case KILN_OP_HYPOT:
    r->f = hypot(a, b);
    return 1;
  case KILN_OP_ATAN2:
    r->f = atan2(a, b);
    return 1;
  case KILN_OP_FMOD:
    r->f = fmod(a, b);
    r->i = fl ? 0 : ifmod(ai, bi);
    return 1;
  case KILN_OP_REMAINDER:
    r->f = fremainder(a, b);
    r->i = fl ? 0 : iremainder(ai, bi);
    return 1;
  case KILN_OP_EQ:
    r->i = fl ? a == b : ai == bi;
    return 1;
  case KILN_OP_NE:
    r->i = fl ? a != b : ai != bi;
    return 1;
  case KILN_OP_LT:
    r->i = fl ? a < b : ai < bi;
    return 1;
  case KILN_OP_LE:
    r->i = fl ? a <= b : ai <= bi;
    return 1;
  case KILN_OP_GT:
    r->i = fl ? a > b : ai > bi;
    return 1;
  case KILN_OP_GE:
    r->i = fl ? a >= b : ai >= bi;
    return 1;
  case KILN_OP_LOGICAL_AND: /* NaN is nonzero, hence true */
    r->i = fl ? (a != 0 && b != 0) : (ai != 0 && bi != 0);
    return 1;
  case KILN_OP_LOGICAL_OR:
    r->i = fl ? (a != 0 || b != 0) : (ai != 0 || bi != 0);
    return 1;
  case KILN_OP_LOGICAL_XOR:
    r->i = fl ? ((a != 0) != (b != 0)) : ((ai != 0) != (bi != 0));
    return 1;
  case KILN_OP_BITWISE_AND:
    r->i = wrap(dt, (uint64_t)ai & (uint64_t)bi);
    return 1;
  case KILN_OP_BITWISE_OR:
    r->i = wrap(dt, (uint64_t)ai | (uint64_t)bi);
    return 1;
  case KILN_OP_BITWISE_XOR:
    r->i = wrap(dt, (uint64_t)ai ^ (uint64_t)bi);
    return 1;
  case KILN_OP_SHL:
    r->i = ishl(dt, ai, bi);
    return 1;
  case KILN_OP_SHR:
    r->i = ishr(dt, ai, bi);
    return 1;
  case KILN_BINARY_OP_COUNT:
    break;
  }
  return 0;
}

/*
 * kiln_cast() rules for one value (a float f when from_float, else an integer
 * i) into element k of a buffer of dtype to: float to integer truncates and
 * saturates, NaN to 0; integer to integer wraps; to bool is != 0 (NaN is
 * true); to float rounds to nearest even (the C conversions do).
 */
void
cast_value(int from_float, double f, int64_t i, kiln_dtype to, void *out, size_t k)
{
  if (to == KILN_BOOL) {
    puti(to, out, k, from_float ? f != 0 : i != 0);
    return;
  }
  if (is_float(to)) {
    if (from_float)
      putf(to, out, k, f);
    else if (to == KILN_F32)
      ((float *)out)[k] = (float)i;
    else
      putf(to, out, k, (double)i); /* f16, bf16: through double, as kiln__scalar_to_bytes */
    return;
  }
  if (!from_float) {
    puti(to, out, k, i);
    return;
  }
  int64_t v;
  double t = trunc(f);
  if (isnan(f))
    v = 0;
  else if (to == KILN_I64)
    v = t >= 9223372036854775808.0 ? INT64_MAX : t < -9223372036854775808.0 ? INT64_MIN : (int64_t)t;
  else
    v = t > (double)int_max(to) ? int_max(to) : t < (double)int_min(to) ? int_min(to) : (int64_t)t;
  puti(to, out, k, v);
}

void
cast_elem(kiln_dtype from, const void *in, size_t j, kiln_dtype to, void *out, size_t k)
{
  if (is_float(from))
    cast_value(1, getf(from, in, j), 0, to, out, k);
  else
    cast_value(0, 0, geti(from, in, j), to, out, k);
}

tol_t
unary_tol(kiln_unary_op op, kiln_dtype dt)
{
  if (!is_float(dt) || ew_unary_res_bool[op])
    return EXACT;
  const int f32 = dt == KILN_F32, half = is_half(dt);
  switch (op) {
  case KILN_OP_ABS:
  case KILN_OP_NEG:
  case KILN_OP_SIGN:
  case KILN_OP_SQUARE:
  case KILN_OP_FLOOR:
  case KILN_OP_CEIL:
  case KILN_OP_ROUND:
  case KILN_OP_TRUNC:
    return EXACT;
  case KILN_OP_RELU:
    return EXACT_NOSIGN; /* relu(-0) may be either zero */
  case KILN_OP_SQRT:
  case KILN_OP_RECIPROCAL:
    /* f16/bf16: a correctly rounded f32 result rounded again equals the reference's single
     * rounding (24 >= 2p + 2 bits); OpenCL allows these f32 ops 2.5-3 ulp: 1 ulp. */
    if (half)
      return (tol_t){0, 0, 1, 1};
    break;
  default:
    break;
  }
  /* f16/bf16 compute in f32: the f32 op's error plus one rounding to the storage type. */
  switch (op) {
  case KILN_OP_TGAMMA:
  case KILN_OP_ERFC:
    return f32 || half ? (tol_t){5e-5, 1e-6, 0, half} : (tol_t){1e-10, 1e-15, 0, 0};
  case KILN_OP_LGAMMA:
    return f32 || half ? (tol_t){5e-5, 5e-5, 0, half} : (tol_t){1e-10, 1e-12, 0, 0};
  default:
    return f32 || half ? (tol_t){1e-5, 1e-6, 0, half} : (tol_t){1e-12, 1e-15, 0, 0};
  }
}

tol_t
binary_tol(kiln_binary_op op, kiln_dtype dt)
{
  if (!is_float(dt) || ew_binary_res_bool[op])
    return EXACT;
  const int f32 = dt == KILN_F32 || is_half(dt); /* f16, bf16: the f32 op's error too */
  switch (op) {
  case KILN_OP_ADD:
  case KILN_OP_SUB:
  case KILN_OP_MUL:
  case KILN_OP_FMOD:
  case KILN_OP_REMAINDER:
    return EXACT;
  case KILN_OP_MAX:
  case KILN_OP_MIN:
    return EXACT_NOSIGN; /* max(-0, 0) may be either zero */
  case KILN_OP_DIV:
    /* f16/bf16: see unary_tol's sqrt */
    return is_half(dt) ? (tol_t){0, 0, 1, 1} : f32 ? (tol_t){1e-6, 0, 1, 0} : EXACT;
  case KILN_OP_POW:
    return f32 ? (tol_t){5e-5, 1e-6, 0, is_half(dt)} : (tol_t){1e-12, 1e-15, 0, 0};
  default:
    return f32 ? (tol_t){1e-5, 1e-6, 0, is_half(dt)} : (tol_t){1e-12, 1e-15, 0, 0};
  }
}
