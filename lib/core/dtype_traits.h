/* Internal dtype helpers shared by the runtime and the op families. */
#ifndef KILN_CORE_DTYPE_TRAITS_H
#define KILN_CORE_DTYPE_TRAITS_H

#include "kiln/dtype.h"

#define KILN__DT_BIT(d) (1u << (unsigned)(d))

#define KILN__DT_FLOATS (KILN__DT_BIT(KILN_F32) | KILN__DT_BIT(KILN_F64))
#define KILN__DT_INTS (KILN__DT_BIT(KILN_I32) | KILN__DT_BIT(KILN_I64) | KILN__DT_BIT(KILN_U8))
#define KILN__DT_HALVES (KILN__DT_BIT(KILN_F16) | KILN__DT_BIT(KILN_BF16))
#define KILN__DT_COMPLEX (KILN__DT_BIT(KILN_C64) | KILN__DT_BIT(KILN_C128))
/* The six dtypes every family supports; the 16-bit floats and complex are opt-in per family
 * (struct kiln__family.dtypes). */
#define KILN__DT_CLASSIC (KILN__DT_FLOATS | KILN__DT_INTS | KILN__DT_BIT(KILN_BOOL))
#define KILN__DT_EVERY (KILN__DT_CLASSIC | KILN__DT_HALVES | KILN__DT_COMPLEX)

/*
 * The dtype classes the op tables name (include/kiln/op_table.h,
 * reduce_table.h): X(NAME, mask of dtypes, text for messages). One row each;
 * the enum, the masks and the texts come from here. Complex dtypes are in no
 * class: their ops are listed apart. A family accepts a dtype of a row's class
 * only when its kernel source builds that dtype too (struct kiln__source).
 */
#define KILN__DTYPE_CLASSES(X)                                                                  \
  X(ALL, KILN__DT_CLASSIC | KILN__DT_HALVES, "any real dtype")                                \
  X(NUM, KILN__DT_FLOATS | KILN__DT_HALVES | KILN__DT_INTS, "f16, bf16, f32, f64, i32, i64, u8") \
  X(FLOAT, KILN__DT_FLOATS | KILN__DT_HALVES, "f16, bf16, f32, f64")                          \
  X(INT, KILN__DT_INTS | KILN__DT_BIT(KILN_BOOL), "i32, i64, u8, bool")                      \
  X(INTNB, KILN__DT_INTS, "i32, i64, u8")

enum kiln__dtype_class {
#define X(name, mask, text) KILN__CLASS_##name,
  KILN__DTYPE_CLASSES(X)
#undef X
};

int kiln__dtype_valid(kiln_dtype dtype);
/* OpenCL C type a buffer of dtype holds (half, ushort for bf16, float2 for c64 ...). */
const char *kiln__dtype_cl_name(kiln_dtype dtype);
/* OpenCL C type kernels compute in: float for f16 and bf16, else the storage type. */
const char *kiln__dtype_cl_compute_name(kiln_dtype dtype);
unsigned kiln__dtype_class_mask(enum kiln__dtype_class cls);
/* The class's dtypes as text ("f32, f64"), for messages. */
const char *kiln__dtype_class_text(enum kiln__dtype_class cls);

/* Writes s converted to dtype (kiln_cast() rules) into out (dtype-size bytes). */
void kiln__scalar_to_bytes(kiln_scalar s, kiln_dtype dtype, void *out);

/* f32 or f64 (the 16-bit floats are kiln__dtype_is_half). */
static inline int
kiln__dtype_is_float(kiln_dtype d)
{
  return d == KILN_F32 || d == KILN_F64;
}

static inline int
kiln__dtype_is_half(kiln_dtype d)
{
  return d == KILN_F16 || d == KILN_BF16;
}

static inline int
kiln__dtype_is_complex(kiln_dtype d)
{
  return d == KILN_C64 || d == KILN_C128;
}

/* Any real floating-point dtype: f16, bf16, f32, f64. */
static inline int
kiln__dtype_is_floating(kiln_dtype d)
{
  return kiln__dtype_is_float(d) || kiln__dtype_is_half(d);
}

/* The real dtype of a complex one's parts (c64: f32, c128: f64); other dtypes unchanged. */
static inline kiln_dtype
kiln__dtype_real_part(kiln_dtype d)
{
  return d == KILN_C64 ? KILN_F32 : d == KILN_C128 ? KILN_F64 : d;
}

#endif
