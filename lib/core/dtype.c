#include <math.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/error.h"

size_t
kiln_dtype_size(kiln_dtype dtype)
{
  switch (dtype) {
#define X(name, ctype, cltype, size, text) \
  case KILN_##name:                        \
    return size;
    KILN_DTYPE_MAP(X)
#undef X
  case KILN_DTYPE_COUNT:
    break;
  }
  return 0;
}

const char *
kiln_dtype_name(kiln_dtype dtype)
{
  switch (dtype) {
#define X(name, ctype, cltype, size, text) \
  case KILN_##name:                        \
    return text;
    KILN_DTYPE_MAP(X)
#undef X
  case KILN_DTYPE_COUNT:
    break;
  }
  return "?";
}

const char *
kiln__dtype_cl_name(kiln_dtype dtype)
{
  switch (dtype) {
#define X(name, ctype, cltype, size, text) \
  case KILN_##name:                        \
    return #cltype;
    KILN_DTYPE_MAP(X)
#undef X
  case KILN_DTYPE_COUNT:
    break;
  }
  return "?";
}

const char *
kiln__dtype_cl_compute_name(kiln_dtype dtype)
{
  /* The 16-bit floats are storage only: kernels compute on them as float. */
  return dtype == KILN_F16 || dtype == KILN_BF16 ? "float" : kiln__dtype_cl_name(dtype);
}

kiln_status
kiln_dtype_from_name(const char *name, kiln_dtype *out)
{
  KILN_RETURN_IF(!name || !out, KILN_ERR_INVALID_ARGUMENT, "kiln_dtype_from_name",
                 "NULL argument");
  for (int d = 0; d < KILN_DTYPE_COUNT; d++) {
    if (strcmp(name, kiln_dtype_name((kiln_dtype)d)) == 0) {
      *out = (kiln_dtype)d;
      return KILN_OK;
    }
  }
  return kiln__fail(KILN_ERR_INVALID_ARGUMENT, "kiln_dtype_from_name",
                    0, "unknown dtype '%s' (expected f32, f64, i32, i64, u8, bool, f16, bf16, c64 or c128)", name);
}

/* Promotion ranks: the kind (bool < integer < floating < complex), then the width within it. */
enum { KIND_BOOL, KIND_INT, KIND_FLOAT, KIND_COMPLEX };

static int
promote_kind(kiln_dtype d)
{
  return d == KILN_BOOL               ? KIND_BOOL
         : kiln__dtype_is_complex(d)  ? KIND_COMPLEX
         : kiln__dtype_is_floating(d) ? KIND_FLOAT
                                      : KIND_INT;
}

/* Bytes of precision a floating or complex dtype carries per part (f16 and bf16: 2). */
static size_t
part_size(kiln_dtype d)
{
  return kiln_dtype_size(kiln__dtype_real_part(d));
}

kiln_status
kiln_dtype_promote(kiln_dtype a, kiln_dtype b, kiln_dtype *out)
{
  static const char op[] = "kiln_dtype_promote";
  KILN_RETURN_IF(!kiln__dtype_valid(a) || !kiln__dtype_valid(b), KILN_ERR_INVALID_ARGUMENT, op,
                 "invalid dtype %d", (int)(kiln__dtype_valid(a) ? b : a));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  if (promote_kind(a) < promote_kind(b) ||
      (promote_kind(a) == promote_kind(b) && kiln_dtype_size(a) < kiln_dtype_size(b))) {
    kiln_dtype t = a;
    a = b;
    b = t;
  }
  /* a now has the higher kind, or the same kind and at least b's size. */
  kiln_dtype r = a;
  if ((a == KILN_F16 && b == KILN_BF16) || (a == KILN_BF16 && b == KILN_F16))
    r = KILN_F32; /* neither holds the other: f16 lacks bf16's range, bf16 f16's precision */
  else if (a == KILN_C64 && promote_kind(b) == KIND_FLOAT && part_size(b) > 4)
    r = KILN_C128;
  *out = r;
  return KILN_OK;
}

int
kiln__dtype_valid(kiln_dtype dtype)
{
  return (int)dtype >= 0 && dtype < KILN_DTYPE_COUNT;
}

unsigned
kiln__dtype_class_mask(enum kiln__dtype_class cls)
{
  static const unsigned masks[] = {
#define X(name, mask, text) mask,
      KILN__DTYPE_CLASSES(X)
#undef X
  };
  return (unsigned)cls < sizeof masks / sizeof masks[0] ? masks[cls] : 0;
}

const char *
kiln__dtype_class_text(enum kiln__dtype_class cls)
{
  static const char *const texts[] = {
#define X(name, mask, text) text,
      KILN__DTYPE_CLASSES(X)
#undef X
  };
  return (unsigned)cls < sizeof texts / sizeof texts[0] ? texts[cls] : "?";
}

/*
 * i as a double rounded to odd: exact below 2^53, else truncated with the lowest bit set
 * when bits were dropped. Rounding that once more to a format of at most 51 bits (f16,
 * bf16) gives the correctly rounded value: (double)i would round to nearest first, and
 * 2^60 + 2^52 + 1 would become the bf16 tie 2^60 + 2^52, then round to even (2^60).
 */
static double
int_to_double_odd(int64_t i)
{
  uint64_t u = i < 0 ? 0 - (uint64_t)i : (uint64_t)i;
  int shift = 0;
  while ((u >> shift) >= (UINT64_C(1) << 53))
    shift++;
  uint64_t kept = u >> shift;
  if (shift && (u & ((UINT64_C(1) << shift) - 1)))
    kept |= 1;
  double d = ldexp((double)kept, shift);
  return i < 0 ? -d : d;
}

void
kiln__scalar_to_bytes(kiln_scalar s, kiln_dtype dtype, void *out)
{
  /* Same rules as kiln_cast(): float to int saturates (NaN to 0), int to int wraps; to a
   * 16-bit float with one rounding; to complex with a zero imaginary part. */
  switch (dtype) {
  case KILN_F16:
  case KILN_BF16: {
    double d = s.is_integer ? int_to_double_odd(s.i) : s.f;
    uint16_t h = dtype == KILN_F16 ? kiln_f16_from_f64(d) : kiln_bf16_from_f64(d);
    memcpy(out, &h, 2);
    return;
  }
  case KILN_C64: {
    kiln_complex64 c = {s.is_integer ? (float)s.i : (float)s.f, 0.0f};
    memcpy(out, &c, sizeof c);
    return;
  }
  case KILN_C128: {
    kiln_complex128 c = {s.is_integer ? (double)s.i : s.f, 0.0};
    memcpy(out, &c, sizeof c);
    return;
  }
  case KILN_F32: {
    float v = s.is_integer ? (float)s.i : (float)s.f;
    memcpy(out, &v, 4);
    return;
  }
  case KILN_F64: {
    double v = s.is_integer ? (double)s.i : s.f;
    memcpy(out, &v, 8);
    return;
  }
  default:
    break;
  }
  int64_t v;
  if (s.is_integer) {
    v = s.i;
  } else if (dtype == KILN_BOOL) {
    v = s.f != 0.0; /* NaN is nonzero: true, as kiln_cast() gives */
  } else if (s.f != s.f) {
    v = 0;
  } else {
    double lo = dtype == KILN_I32 ? -2147483648.0 : dtype == KILN_U8 ? 0.0 : -9223372036854775808.0;
    double hi = dtype == KILN_I32 ? 2147483647.0 : dtype == KILN_U8 ? 255.0 : 9223372036854775807.0;
    double t = s.f < lo ? lo : s.f > hi ? hi : s.f;
    v = t >= 9223372036854775807.0 ? INT64_MAX : (int64_t)t;
  }
  switch (dtype) {
  case KILN_I32: {
    int32_t w = (int32_t)(uint32_t)(uint64_t)v;
    memcpy(out, &w, 4);
    return;
  }
  case KILN_I64:
    memcpy(out, &v, 8);
    return;
  case KILN_U8: {
    uint8_t w = (uint8_t)(uint64_t)v;
    memcpy(out, &w, 1);
    return;
  }
  case KILN_BOOL: {
    uint8_t w = v != 0;
    memcpy(out, &w, 1);
    return;
  }
  default:
    return;
  }
}
