/*
 * Element types.
 */
#ifndef KILN_DTYPE_H
#define KILN_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/export.h"
#include "kiln/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A c64 element: two f32, real part first (the layout of C99 float _Complex). */
typedef struct kiln_complex64 {
  float re, im;
} kiln_complex64;

/** A c128 element: two f64, real part first (the layout of C99 double _Complex). */
typedef struct kiln_complex128 {
  double re, im;
} kiln_complex128;

/*
 * X(NAME, C type, OpenCL C storage type, size, short name).
 * BOOL is stored as one byte holding 0 or 1; kiln ops only ever write 0 or 1.
 * F16 is IEEE binary16 and BF16 bfloat16 (the top half of an f32), both held
 * in a uint16_t on the host: convert with kiln_f16_from_f32() and friends.
 * Kernels compute on them in f32 and store with round-to-nearest-even.
 * C64/C128 are complex numbers, real part first.
 */
#define KILN_DTYPE_MAP(X)                        \
  X(F32, float, float, 4, "f32")                 \
  X(F64, double, double, 8, "f64")               \
  X(I32, int32_t, int, 4, "i32")                 \
  X(I64, int64_t, long, 8, "i64")                \
  X(U8, uint8_t, uchar, 1, "u8")                 \
  X(BOOL, uint8_t, uchar, 1, "bool")             \
  X(F16, uint16_t, half, 2, "f16")               \
  X(BF16, uint16_t, ushort, 2, "bf16")           \
  X(C64, kiln_complex64, float2, 8, "c64")       \
  X(C128, kiln_complex128, double2, 16, "c128")

/** Element type of a tensor. */
typedef enum kiln_dtype {
#define KILN_X_(name, ctype, cltype, size, text) KILN_##name,
  KILN_DTYPE_MAP(KILN_X_)
#undef KILN_X_
  KILN_DTYPE_COUNT
} kiln_dtype;

/** Size in bytes of one element; 0 for values outside the enum. */
KILN_API size_t kiln_dtype_size(kiln_dtype dtype);

/** Short name ("f32", "i64", "bool" ...); "?" for values outside the enum. */
KILN_API const char *kiln_dtype_name(kiln_dtype dtype);

/**
 * Parses a short name as printed by kiln_dtype_name().
 * @return KILN_OK, or KILN_ERR_INVALID_ARGUMENT for NULL or an unknown name.
 */
KILN_API kiln_status kiln_dtype_from_name(const char *name, kiln_dtype *out);

/**
 * The dtype a binary operation on dtypes a and b computes in (NumPy/PyTorch type
 * promotion; the full table is in docs/ops.md, "Type promotion"). Symmetric.
 * Kinds rank bool < integer < floating < complex, and the result is of the
 * higher kind:
 * - bool with x: x. Integers: the wider one (u8 with i32: i32; i32 with i64: i64).
 * - integer with a floating or complex dtype: that dtype (i64 + f16 = f16,
 *   i32 + c64 = c64), as PyTorch; NumPy widens i32/i64 + f16/f32 to f64 and
 *   i32/i64 + c64 to c128.
 * - floating: the wider; f16 with bf16: f32 (neither holds the other).
 * - real with complex: the complex dtype wide enough for both (f64 + c64 = c128).
 * kiln_binary() still requires equal dtypes: cast the operands to the result
 * of this function with kiln_cast() first. A c128 or f64 result may still be
 * unsupported by a device without fp64.
 * @return KILN_OK; KILN_ERR_INVALID_ARGUMENT for a dtype outside the enum or a NULL out
 *         (*out is left alone then).
 */
KILN_API kiln_status kiln_dtype_promote(kiln_dtype a, kiln_dtype b, kiln_dtype *out);

/**
 * f32 to f16 (IEEE binary16), rounding to nearest even: overflow gives
 * infinity, results below the smallest normal become subnormals, NaN stays
 * NaN (sign and the top payload bits kept, made quiet).
 */
KILN_API uint16_t kiln_f16_from_f32(float value);

/** f64 to f16 with one rounding (no double rounding through f32); as kiln_f16_from_f32(). */
KILN_API uint16_t kiln_f16_from_f64(double value);

/** f16 to f32: exact for every value, subnormals and NaN payloads included. */
KILN_API float kiln_f16_to_f32(uint16_t bits);

/** f32 to bf16, rounding to nearest even; overflow gives infinity, NaN stays NaN. */
KILN_API uint16_t kiln_bf16_from_f32(float value);

/** f64 to bf16 with one rounding; as kiln_bf16_from_f32(). */
KILN_API uint16_t kiln_bf16_from_f64(double value);

/** bf16 to f32: exact for every value. */
KILN_API float kiln_bf16_to_f32(uint16_t bits);

/**
 * A scalar operand or fill value, tagged with how it was given. Integers are
 * kept exactly (i64 values beyond 2^53 survive); conversion to the tensor's
 * dtype follows kiln_cast() rules. Build with kiln_scalar_f64/i64.
 */
typedef struct kiln_scalar {
  int is_integer; /**< nonzero: use i, else f */
  double f;
  int64_t i;
} kiln_scalar;

/** A floating-point scalar. */
static inline kiln_scalar
kiln_scalar_f64(double v)
{
  kiln_scalar s = {0, v, 0};
  return s;
}

/** An integer scalar (kept exact for i64 tensors). */
static inline kiln_scalar
kiln_scalar_i64(int64_t v)
{
  kiln_scalar s = {1, 0.0, v};
  return s;
}

#ifdef __cplusplus
}
#endif
#endif
