/*
 * The elementwise op table: the single source of truth for the op enums,
 * their names, which dtypes each op accepts, the dtype of its result and
 * the OpenCL C expression kiln compiles for it (cl_kernels/elementwise.cl
 * includes this file and stamps one kernel per row).
 *
 * Columns: X(ENUM, name, dtypes, result, OpenCL expression)
 *   dtypes: ALL   = every real dtype (f16 bf16 f32 f64 i32 i64 u8 bool)
 *           NUM   = f16 bf16 f32 f64 i32 i64 u8
 *           FLOAT = f16 bf16 f32 f64
 *           INT   = i32 i64 u8 bool
 *           INTNB = i32 i64 u8
 *   result: SAME (the input dtype) or BOOL
 *
 * Semantics worth knowing (docs/ops.md has all of them):
 * - NaN propagates through every float op that returns a float, max/min
 *   included (NumPy maximum), except where C99 Annex F / OpenCL define a
 *   number: pow(1, NaN) = pow(NaN, 0) = 1, hypot(+-inf, NaN) = +inf.
 *   Comparisons with NaN are false (ne: true); NaN is nonzero, so the
 *   logical ops and casts to bool treat it as true.
 * - round is round-half-to-even (NumPy), not OpenCL's round-half-away.
 * - Integer arithmetic wraps (two's complement). Integer division truncates
 *   toward zero; x/0, fmod(x,0), remainder(x,0) are 0; INT_MIN/-1 wraps to
 *   INT_MIN. remainder takes the sign of the divisor (Python %), fmod that of
 *   the dividend (C). Shift counts >= the bit width (or negative) give 0 for
 *   shl and for shr of non-negative values, -1 for shr of negative values.
 * - abs(INT_MIN) is INT_MIN; sign gives -1, 0, 1 (NaN stays NaN).
 * - conj, real, imag and angle exist for complex numbers; on real dtypes they
 *   are NumPy's: conj(x) = real(x) = x, imag(x) = 0, angle(x) = atan2(0, x)
 *   (0 for x >= +0, pi for x <= -0, NaN for NaN).
 *
 * Complex dtypes (c64, c128) are in none of the classes above: the ops they
 * accept are the rows of KILN_COMPLEX_UNARY_OPS / KILN_COMPLEX_BINARY_OPS
 * below, which cl_kernels/complex.cl stamps and lib/ops/elementwise_complex.c
 * reads (kiln_*_op_supports answers from them).
 */
#ifndef KILN_OP_TABLE_H
#define KILN_OP_TABLE_H

#define KILN_UNARY_OPS(X)                                    \
  X(ABS, abs, NUM, SAME, k_abs(x))                           \
  X(NEG, neg, NUM, SAME, k_neg(x))                           \
  X(SIGN, sign, NUM, SAME, k_sign(x))                        \
  X(SQUARE, square, NUM, SAME, k_mul(x, x))                  \
  X(RELU, relu, NUM, SAME, k_relu(x))                        \
  X(SQRT, sqrt, FLOAT, SAME, sqrt(x))                        \
  X(RSQRT, rsqrt, FLOAT, SAME, ((T)1 / sqrt(x)))             \
  X(RECIPROCAL, reciprocal, FLOAT, SAME, ((T)1 / x))         \
  X(EXP, exp, FLOAT, SAME, k_exp(x))                         \
  X(EXP2, exp2, FLOAT, SAME, exp2(x))                        \
  X(EXPM1, expm1, FLOAT, SAME, expm1(x))                     \
  X(LOG, log, FLOAT, SAME, log(x))                           \
  X(LOG2, log2, FLOAT, SAME, log2(x))                        \
  X(LOG10, log10, FLOAT, SAME, log10(x))                     \
  X(LOG1P, log1p, FLOAT, SAME, log1p(x))                     \
  X(SIN, sin, FLOAT, SAME, sin(x))                           \
  X(COS, cos, FLOAT, SAME, cos(x))                           \
  X(TAN, tan, FLOAT, SAME, tan(x))                           \
  X(ASIN, asin, FLOAT, SAME, asin(x))                        \
  X(ACOS, acos, FLOAT, SAME, acos(x))                        \
  X(ATAN, atan, FLOAT, SAME, atan(x))                        \
  X(SINH, sinh, FLOAT, SAME, sinh(x))                        \
  X(COSH, cosh, FLOAT, SAME, cosh(x))                        \
  X(TANH, tanh, FLOAT, SAME, tanh(x))                        \
  X(ASINH, asinh, FLOAT, SAME, asinh(x))                     \
  X(ACOSH, acosh, FLOAT, SAME, acosh(x))                     \
  X(ATANH, atanh, FLOAT, SAME, atanh(x))                     \
  X(FLOOR, floor, FLOAT, SAME, floor(x))                     \
  X(CEIL, ceil, FLOAT, SAME, ceil(x))                        \
  X(ROUND, round, FLOAT, SAME, rint(x))                      \
  X(TRUNC, trunc, FLOAT, SAME, trunc(x))                     \
  X(ERF, erf, FLOAT, SAME, erf(x))                           \
  X(ERFC, erfc, FLOAT, SAME, erfc(x))                        \
  X(LGAMMA, lgamma, FLOAT, SAME, lgamma(x))                  \
  X(TGAMMA, tgamma, FLOAT, SAME, tgamma(x))                  \
  X(SIGMOID, sigmoid, FLOAT, SAME, k_sigmoid(x))             \
  X(GELU, gelu, FLOAT, SAME, k_gelu(x))                      \
  X(GELU_TANH, gelu_tanh, FLOAT, SAME, k_gelu_tanh(x))       \
  X(SILU, silu, FLOAT, SAME, (x * k_sigmoid(x)))             \
  X(SOFTPLUS, softplus, FLOAT, SAME, k_softplus(x))          \
  X(ISNAN, isnan, ALL, BOOL, k_isnan(x))                     \
  X(ISINF, isinf, ALL, BOOL, k_isinf(x))                     \
  X(ISFINITE, isfinite, ALL, BOOL, k_isfinite(x))            \
  X(LOGICAL_NOT, logical_not, ALL, BOOL, (x == (T)0))        \
  X(BITWISE_NOT, bitwise_not, INT, SAME, k_bitwise_not(x))                \
  X(CONJ, conj, NUM, SAME, (x))                                           \
  X(REAL, real, NUM, SAME, (x))                                           \
  X(IMAG, imag, NUM, SAME, ((T)0))                                        \
  X(ANGLE, angle, FLOAT, SAME, atan2((T)0, x))

#define KILN_BINARY_OPS(X)                                   \
  X(ADD, add, NUM, SAME, k_add(a, b))                        \
  X(SUB, sub, NUM, SAME, k_sub(a, b))                        \
  X(MUL, mul, NUM, SAME, k_mul(a, b))                        \
  X(DIV, div, NUM, SAME, k_div(a, b))                        \
  X(POW, pow, FLOAT, SAME, pow(a, b))                        \
  X(MAX, max, ALL, SAME, k_max(a, b))                        \
  X(MIN, min, ALL, SAME, k_min(a, b))                        \
  X(HYPOT, hypot, FLOAT, SAME, hypot(a, b))                  \
  X(ATAN2, atan2, FLOAT, SAME, atan2(a, b))                  \
  X(FMOD, fmod, NUM, SAME, k_fmod(a, b))                     \
  X(REMAINDER, remainder, NUM, SAME, k_remainder(a, b))      \
  X(EQ, eq, ALL, BOOL, (a == b))                             \
  X(NE, ne, ALL, BOOL, (a != b))                             \
  X(LT, lt, ALL, BOOL, (a < b))                              \
  X(LE, le, ALL, BOOL, (a <= b))                             \
  X(GT, gt, ALL, BOOL, (a > b))                              \
  X(GE, ge, ALL, BOOL, (a >= b))                             \
  X(LOGICAL_AND, logical_and, ALL, BOOL, (a != (T)0 && b != (T)0)) \
  X(LOGICAL_OR, logical_or, ALL, BOOL, (a != (T)0 || b != (T)0))   \
  X(LOGICAL_XOR, logical_xor, ALL, BOOL, ((a != (T)0) != (b != (T)0))) \
  X(BITWISE_AND, bitwise_and, INT, SAME, (a & b))            \
  X(BITWISE_OR, bitwise_or, INT, SAME, (a | b))              \
  X(BITWISE_XOR, bitwise_xor, INT, SAME, (a ^ b))            \
  X(SHL, shl, INTNB, SAME, k_shl(a, b))                      \
  X(SHR, shr, INTNB, SAME, k_shr(a, b))


/*
 * Complex ops: X(ENUM, result, OpenCL expression), ENUM a kiln_unary_op or
 * kiln_binary_op (without KILN_OP_). result: SAME (the complex dtype), REAL
 * (its part type: c64 -> f32, c128 -> f64) or BOOL. The expressions use the
 * helpers of cl_kernels/complex.cl on x (unary) or a, b (binary) of type T,
 * float2 or double2 (.x real part, .y imaginary part). docs/ops.md "Complex
 * numbers" gives the branch cuts and special values.
 */
#define KILN_COMPLEX_UNARY_OPS(X)       \
  X(NEG, SAME, (-x))                    \
  X(CONJ, SAME, ((T)(x.x, -x.y)))       \
  X(REAL, REAL, (x.x))                  \
  X(IMAG, REAL, (x.y))                  \
  X(ABS, REAL, hypot(x.x, x.y))         \
  X(ANGLE, REAL, atan2(x.y, x.x))       \
  X(SQUARE, SAME, c_mul(x, x))          \
  X(RECIPROCAL, SAME, c_recip(x))       \
  X(EXP, SAME, c_exp(x))                \
  X(LOG, SAME, c_log(x))                \
  X(SQRT, SAME, c_sqrt(x))              \
  X(SIN, SAME, c_sin(x))                \
  X(COS, SAME, c_cos(x))                \
  X(TAN, SAME, c_tan(x))                \
  X(SINH, SAME, c_sinh(x))              \
  X(COSH, SAME, c_cosh(x))              \
  X(TANH, SAME, c_tanh(x))              \
  X(ISNAN, BOOL, (isnan(x.x) || isnan(x.y)))   \
  X(ISINF, BOOL, (isinf(x.x) || isinf(x.y)))   \
  X(ISFINITE, BOOL, (isfinite(x.x) && isfinite(x.y)))

#define KILN_COMPLEX_BINARY_OPS(X)      \
  X(ADD, SAME, (a + b))                 \
  X(SUB, SAME, (a - b))                 \
  X(MUL, SAME, c_mul(a, b))             \
  X(DIV, SAME, c_div(a, b))             \
  X(POW, SAME, c_pow(a, b))             \
  X(EQ, BOOL, (a.x == b.x && a.y == b.y)) \
  X(NE, BOOL, (a.x != b.x || a.y != b.y))

#endif
