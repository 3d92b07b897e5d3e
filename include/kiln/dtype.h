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

/*
 * X(NAME, C type, OpenCL C type, size, short name).
 * BOOL is stored as one byte holding 0 or 1; kiln ops only ever write 0 or 1.
 */
#define KILN_DTYPE_MAP(X)                 \
  X(F32, float, float, 4, "f32")          \
  X(F64, double, double, 8, "f64")        \
  X(I32, int32_t, int, 4, "i32")          \
  X(I64, int64_t, long, 8, "i64")         \
  X(U8, uint8_t, uchar, 1, "u8")          \
  X(BOOL, uint8_t, uchar, 1, "bool")

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
