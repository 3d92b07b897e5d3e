/* Unit suite: status map, dtypes, shape arithmetic, broadcasting, scalar conversion. No device. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "core/shape.h"
#include "harness.h"
#include "kiln_cl_sources.h"
#include "runtime/build.h"
#include "runtime/family.h"

START_TEST(status_names_are_unique_and_complete)
{
  static const kiln_status all[] = {
#define X(name, value, text) KILN_##name,
      KILN_STATUS_MAP(X)
#undef X
  };
  size_t n = sizeof all / sizeof all[0];
  for (size_t i = 0; i < n; i++) {
    ck_assert_int_eq((int)all[i], (int)i); /* dense and stable numbering */
    ck_assert_ptr_nonnull(strstr(kiln_status_name(all[i]), "KILN_"));
    ck_assert_str_ne(kiln_status_string(all[i]), "unknown status");
    for (size_t j = 0; j < i; j++)
      ck_assert_str_ne(kiln_status_name(all[i]), kiln_status_name(all[j]));
  }
  ck_assert_str_eq(kiln_status_name(KILN_OK), "KILN_OK");
  ck_assert_str_eq(kiln_status_name(KILN_ERR_SHAPE), "KILN_ERR_SHAPE");
  ck_assert_str_eq(kiln_status_name((kiln_status)9999), "KILN_UNKNOWN");
  ck_assert_str_eq(kiln_status_string((kiln_status)-3), "unknown status");
}
END_TEST

START_TEST(error_record_keeps_op_message_and_raw_code)
{
  kiln_clear_error();
  ck_assert_str_eq(kiln_last_error(), "");
  ck_assert_int_eq(kiln_last_error_status(), KILN_OK);
  kiln_status s = kiln__fail(KILN_ERR_SHAPE, "kiln_binary(add)", 0, "shapes %s and %s", "[3,4]",
                             "[5]");
  ck_assert_int_eq(s, KILN_ERR_SHAPE);
  ck_assert_str_eq(kiln_last_error(), "kiln_binary(add): shapes [3,4] and [5]");
  ck_assert_str_eq(kiln_last_error_op(), "kiln_binary(add)");
  ck_assert_int_eq(kiln_last_error_status(), KILN_ERR_SHAPE);
  s = kiln__fail_cl("kiln_tensor_create", -4, "clCreateBuffer");
  ck_assert_int_eq(s, KILN_ERR_DEVICE_MEMORY);
  ck_assert_int_eq(kiln_last_error_code(), -4);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "CL_MEM_OBJECT_ALLOCATION_FAILURE"));
  ck_assert_int_eq(kiln__status_from_cl(-11), KILN_ERR_BUILD);
  ck_assert_int_eq(kiln__status_from_cl(-6), KILN_ERR_HOST_MEMORY);
  ck_assert_int_eq(kiln__status_from_cl(-5), KILN_ERR_DEVICE_MEMORY);
  ck_assert_int_eq(kiln__status_from_cl(-38), KILN_ERR_OPENCL);
  ck_assert_str_eq(kiln__cl_error_name(-9999), "CL_UNKNOWN_ERROR");
  /* A very long message is truncated, not overflowed. */
  char big[5000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  kiln__fail(KILN_ERR_INTERNAL, "op", 0, "%s", big);
  ck_assert_uint_lt(strlen(kiln_last_error()), 2048);
  kiln_clear_error();
  ck_assert_str_eq(kiln_last_error(), "");
}
END_TEST

START_TEST(dtype_traits)
{
  ck_assert_uint_eq(kiln_dtype_size(KILN_F32), 4);
  ck_assert_uint_eq(kiln_dtype_size(KILN_F64), 8);
  ck_assert_uint_eq(kiln_dtype_size(KILN_I32), 4);
  ck_assert_uint_eq(kiln_dtype_size(KILN_I64), 8);
  ck_assert_uint_eq(kiln_dtype_size(KILN_U8), 1);
  ck_assert_uint_eq(kiln_dtype_size(KILN_BOOL), 1);
  ck_assert_uint_eq(kiln_dtype_size(KILN_DTYPE_COUNT), 0);
  ck_assert_uint_eq(kiln_dtype_size((kiln_dtype)-1), 0);
  ck_assert_str_eq(kiln_dtype_name((kiln_dtype)77), "?");
  for (int d = 0; d < KILN_DTYPE_COUNT; d++) {
    kiln_dtype back;
    KOK(kiln_dtype_from_name(kiln_dtype_name((kiln_dtype)d), &back));
    ck_assert_int_eq(back, d);
  }
  kiln_dtype x;
  KEXPECT(kiln_dtype_from_name("float128", &x), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_dtype_from_name(NULL, &x), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_str_eq(kiln__dtype_cl_name(KILN_I64), "long");
  ck_assert_str_eq(kiln__dtype_cl_name(KILN_BOOL), "uchar");
  ck_assert(kiln__dtype_class_mask(KILN__CLASS_FLOAT) & KILN__DT_BIT(KILN_F64));
  ck_assert(!(kiln__dtype_class_mask(KILN__CLASS_NUM) & KILN__DT_BIT(KILN_BOOL)));
  ck_assert(kiln__dtype_class_mask(KILN__CLASS_INT) & KILN__DT_BIT(KILN_BOOL));
  ck_assert(!(kiln__dtype_class_mask(KILN__CLASS_INTNB) & KILN__DT_BIT(KILN_BOOL)));
  ck_assert_uint_eq(kiln_dtype_size(KILN_F16), 2);
  ck_assert_uint_eq(kiln_dtype_size(KILN_BF16), 2);
  ck_assert_uint_eq(kiln_dtype_size(KILN_C64), sizeof(kiln_complex64));
  ck_assert_uint_eq(kiln_dtype_size(KILN_C128), sizeof(kiln_complex128));
  ck_assert_str_eq(kiln__dtype_cl_compute_name(KILN_BF16), "float");
  ck_assert_str_eq(kiln__dtype_cl_name(KILN_BF16), "ushort");
  ck_assert_str_eq(kiln__dtype_cl_compute_name(KILN_C128), "double2");
}
END_TEST

/* The value of f16 bits h, computed from the definition of binary16. */
static double
f16_reference(uint16_t h)
{
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return h & 0x8000 ? -v : v;
}

static double
bf16_reference(uint16_t h)
{
  int e = (h >> 7) & 255, m = h & 127;
  double v = e == 0 ? ldexp(m, -133) : e == 255 ? (m ? NAN : INFINITY) : ldexp(128 + m, e - 134);
  return h & 0x8000 ? -v : v;
}

/*
 * Every bit pattern of one 16-bit format: decodes to its value, encodes back to itself, and
 * the midpoint to the next pattern up rounds to the even one of the two from f32 and from f64,
 * while the points just inside it round to the nearer one. f64 inputs just past a midpoint
 * that f32 cannot tell from the midpoint show that f64 is rounded once, not through f32.
 */
static void
check_half_format(double (*ref)(uint16_t), float (*to32)(uint16_t), uint16_t (*from32)(float),
                  uint16_t (*from64)(double), uint16_t max_finite)
{
  for (uint32_t h = 0; h < 65536; h++) {
    double v = ref((uint16_t)h);
    float f = to32((uint16_t)h);
    if (isnan(v)) {
      ck_assert_msg(isnan(f), "pattern 0x%04x", h);
      ck_assert(isnan(to32(from32(f))) && isnan(to32(from64(f))));
      ck_assert_int_eq(signbit(to32(from32(f))) != 0, (h & 0x8000) != 0);
      continue;
    }
    ck_assert_msg(f == v && (signbit(f) != 0) == ((h & 0x8000) != 0), "pattern 0x%04x", h);
    ck_assert_uint_eq(from32(f), h);
    ck_assert_uint_eq(from64(v), h);
    uint16_t mag = h & 0x7fff;
    if (mag >= max_finite)
      continue;
    uint16_t up = (uint16_t)(h + 1);
    double mid = (v + ref(up)) / 2; /* exact in f32 and f64 */
    uint16_t even = (h & 1) ? up : (uint16_t)h;
    ck_assert_msg(from32((float)mid) == even, "tie above 0x%04x", h);
    ck_assert_msg(from64(mid) == even, "tie above 0x%04x (f64)", h);
    float below = nextafterf((float)mid, (float)v), above = nextafterf((float)mid, (float)ref(up));
    ck_assert_uint_eq(from32(below), h);
    ck_assert_uint_eq(from32(above), up);
    double just_above = mid + (ref(up) - v) * 0x1p-40;
    ck_assert_uint_eq(from64(just_above), up);
    ck_assert_uint_eq(from64(mid - (ref(up) - v) * 0x1p-40), h);
  }
}

START_TEST(half_conversions_every_pattern)
{
  check_half_format(f16_reference, kiln_f16_to_f32, kiln_f16_from_f32, kiln_f16_from_f64, 0x7bff);
  check_half_format(bf16_reference, kiln_bf16_to_f32, kiln_bf16_from_f32, kiln_bf16_from_f64,
                    0x7f7f);
  /* Overflow: past the midpoint between the largest finite value and the next power of two. */
  ck_assert_uint_eq(kiln_f16_from_f32(65519.99f), 0x7bff);
  ck_assert_uint_eq(kiln_f16_from_f32(65520.0f), 0x7c00);
  ck_assert_uint_eq(kiln_f16_from_f32(-1e9f), 0xfc00);
  ck_assert_uint_eq(kiln_f16_from_f64(1e300), 0x7c00);
  ck_assert_uint_eq(kiln_bf16_from_f32(3.4e38f), 0x7f80);
  ck_assert_uint_eq(kiln_bf16_from_f64(-1e300), 0xff80);
  ck_assert_uint_eq(kiln_f16_from_f32(-0.0f), 0x8000);
  /* Below half the smallest subnormal: zero; above it: the smallest subnormal. */
  ck_assert_uint_eq(kiln_f16_from_f32(0x1p-25f), 0x0000);
  ck_assert_uint_eq(kiln_f16_from_f32(0x1.01p-25f), 0x0001);
  ck_assert_uint_eq(kiln_f16_from_f64(-0x1p-40), 0x8000);
  /* NaN payload class: quiet, top payload bits kept. */
  uint32_t nan_bits = 0x7fa00000u; /* a signalling NaN with payload 0x200000 */
  float snan;
  memcpy(&snan, &nan_bits, 4);
  ck_assert_uint_eq(kiln_f16_from_f32(snan), 0x7e00 | (0x200000u >> 13));
  ck_assert_uint_eq(kiln_bf16_from_f32(snan), 0x7fe0);
}
END_TEST

START_TEST(shape_make_counts_and_rejects)
{
  kiln__shape s;
  uint64_t n, b;
  int64_t d3[] = {2, 3, 4};
  KOK(kiln__shape_make("t", 3, d3, 8, &s, &n, &b));
  ck_assert_uint_eq(n, 24);
  ck_assert_uint_eq(b, 192);
  KOK(kiln__shape_make("t", 0, NULL, 4, &s, &n, &b));
  ck_assert_uint_eq(n, 1); /* 0-d tensor holds one element */
  int64_t zero[] = {5, 0, 7};
  KOK(kiln__shape_make("t", 3, zero, 4, &s, &n, &b));
  ck_assert_uint_eq(n, 0);
  ck_assert_uint_eq(b, 0);
  /* A zero dimension makes any product empty, even one that would overflow. */
  int64_t zbig[] = {INT64_MAX, 0, INT64_MAX};
  KOK(kiln__shape_make("t", 3, zbig, 8, &s, &n, &b));
  ck_assert_uint_eq(n, 0);
  int64_t neg[] = {3, -1};
  KEXPECT(kiln__shape_make("t", 2, neg, 4, &s, &n, &b), KILN_ERR_SHAPE);
  int64_t big[] = {1ll << 32, 1ll << 32};
  KEXPECT(kiln__shape_make("t", 2, big, 4, &s, &n, &b), KILN_ERR_OVERFLOW);
  int64_t bytes_big[] = {1ll << 61};
  KEXPECT(kiln__shape_make("t", 1, bytes_big, 8, &s, &n, &b), KILN_ERR_OVERFLOW);
  int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  KEXPECT(kiln__shape_make("t", 9, nine, 4, &s, &n, &b), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln__shape_make("t", 2, NULL, 4, &s, &n, &b), KILN_ERR_INVALID_ARGUMENT);
  int64_t eight[8] = {2, 2, 2, 2, 2, 2, 2, 2};
  KOK(kiln__shape_make("t", 8, eight, 1, &s, &n, &b));
  ck_assert_uint_eq(n, 256);
}
END_TEST

static kiln__shape
mk(size_t nd, const int64_t *d)
{
  kiln__shape s;
  ck_assert_int_eq(kiln__shape_make("t", nd, d, 1, &s, NULL, NULL), KILN_OK);
  return s;
}

START_TEST(broadcast_rules)
{
  char buf[64];
  kiln__shape out;
  int64_t a1[] = {3, 1, 5}, b1[] = {4, 1};
  kiln__shape a = mk(3, a1), b = mk(2, b1);
  KOK(kiln__shape_broadcast("t", &a, &b, &out));
  ck_assert_str_eq(kiln__shape_format(&out, buf, sizeof buf), "[3,4,5]");
  int64_t a2[] = {3, 4}, b2[] = {5};
  a = mk(2, a2);
  b = mk(1, b2);
  KEXPECT(kiln__shape_broadcast("kiln_binary(add)", &a, &b, &out), KILN_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "[3,4]"));
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "[5]"));
  /* Zero broadcasts against 1 and against 0, never against another size. */
  int64_t z[] = {0}, one[] = {1}, two[] = {2};
  a = mk(1, z);
  b = mk(1, one);
  KOK(kiln__shape_broadcast("t", &a, &b, &out));
  ck_assert_int_eq(out.dims[0], 0);
  b = mk(1, two);
  KEXPECT(kiln__shape_broadcast("t", &a, &b, &out), KILN_ERR_SHAPE);
  /* 0-d against anything gives the other shape. */
  a = mk(0, NULL);
  b = mk(3, a1);
  KOK(kiln__shape_broadcast("t", &a, &b, &out));
  ck_assert_str_eq(kiln__shape_format(&out, buf, sizeof buf), "[3,1,5]");
}
END_TEST

START_TEST(broadcast_plan_merges_dimensions)
{
  kiln__bcast plan;
  int flat;
  int64_t o[] = {3, 4, 5}, a1[] = {3, 4, 5}, b1[] = {4, 5};
  kiln__shape out = mk(3, o), a = mk(3, a1), b = mk(2, b1);
  const kiln__shape *ops[2] = {&a, &b};
  uint32_t nd = kiln__bcast_plan(&out, ops, 2, &plan, &flat);
  /* a is linear over all dims, b repeats every 20: two merged dims [3, 20]. */
  ck_assert_uint_eq(nd, 2);
  ck_assert(!flat);
  ck_assert_uint_eq(plan.shape[0], 3);
  ck_assert_uint_eq(plan.shape[1], 20);
  ck_assert_uint_eq(plan.stride[0][0], 20);
  ck_assert_uint_eq(plan.stride[0][1], 1);
  ck_assert_uint_eq(plan.stride[1][0], 0);
  ck_assert_uint_eq(plan.stride[1][1], 1);
  /* Same shapes with size-1 dims collapse to one flat run. */
  int64_t s1[] = {1, 6, 1, 7};
  out = mk(4, s1);
  a = mk(4, s1);
  b = mk(4, s1);
  nd = kiln__bcast_plan(&out, ops, 2, &plan, &flat);
  ck_assert_uint_eq(nd, 1);
  ck_assert(flat);
  ck_assert_uint_eq(plan.shape[0], 42);
  /* Column broadcast {3,1} against {3,4}. */
  int64_t c3[] = {3, 1}, r34[] = {3, 4};
  out = mk(2, r34);
  a = mk(2, r34);
  b = mk(2, c3);
  nd = kiln__bcast_plan(&out, ops, 2, &plan, &flat);
  ck_assert_uint_eq(nd, 2);
  ck_assert_uint_eq(plan.stride[1][0], 1);
  ck_assert_uint_eq(plan.stride[1][1], 0);
}
END_TEST

START_TEST(scalar_conversion_follows_cast_rules)
{
  unsigned char buf[8];
  int32_t i32;
  int64_t i64;
  uint8_t u8;
  float f;
  kiln__scalar_to_bytes(kiln_scalar_f64(3.9), KILN_I32, buf);
  memcpy(&i32, buf, 4);
  ck_assert_int_eq(i32, 3);
  kiln__scalar_to_bytes(kiln_scalar_f64(-3.9), KILN_I32, buf);
  memcpy(&i32, buf, 4);
  ck_assert_int_eq(i32, -3);
  kiln__scalar_to_bytes(kiln_scalar_f64(1e20), KILN_I32, buf);
  memcpy(&i32, buf, 4);
  ck_assert_int_eq(i32, INT32_MAX);
  kiln__scalar_to_bytes(kiln_scalar_f64(NAN), KILN_I64, buf);
  memcpy(&i64, buf, 8);
  ck_assert_int_eq(i64, 0);
  kiln__scalar_to_bytes(kiln_scalar_f64(-1e300), KILN_I64, buf);
  memcpy(&i64, buf, 8);
  ck_assert_int_eq(i64, INT64_MIN);
  kiln__scalar_to_bytes(kiln_scalar_f64(1e300), KILN_I64, buf);
  memcpy(&i64, buf, 8);
  ck_assert_int_eq(i64, INT64_MAX);
  kiln__scalar_to_bytes(kiln_scalar_f64(300.0), KILN_U8, buf);
  memcpy(&u8, buf, 1);
  ck_assert_uint_eq(u8, 255);
  kiln__scalar_to_bytes(kiln_scalar_i64(300), KILN_U8, buf);
  memcpy(&u8, buf, 1);
  ck_assert_uint_eq(u8, 44); /* integers wrap */
  kiln__scalar_to_bytes(kiln_scalar_i64((1ll << 53) + 1), KILN_I64, buf);
  memcpy(&i64, buf, 8);
  ck_assert_int_eq(i64, (1ll << 53) + 1); /* exact beyond double precision */
  kiln__scalar_to_bytes(kiln_scalar_f64(0.25), KILN_BOOL, buf);
  ck_assert_uint_eq(buf[0], 1);
  kiln__scalar_to_bytes(kiln_scalar_i64(256), KILN_BOOL, buf);
  ck_assert_uint_eq(buf[0], 1);
  kiln__scalar_to_bytes(kiln_scalar_i64(7), KILN_F32, buf);
  memcpy(&f, buf, 4);
  ck_assert(f == 7.0f);
}
END_TEST

/* The 16-bit float and complex targets: one rounding from the f64 or i64 value, imag = +0. */
START_TEST(scalar_conversion_half_and_complex)
{
  unsigned char buf[16]; /* c128 is 16 bytes */
  uint16_t h;
#define HALF_OF(sc, dt) (kiln__scalar_to_bytes((sc), (dt), buf), memcpy(&h, buf, 2), h)
  ck_assert_uint_eq(HALF_OF(kiln_scalar_f64(1.0), KILN_F16), 0x3c00);
  ck_assert_uint_eq(HALF_OF(kiln_scalar_f64(-2.0), KILN_BF16), 0xc000);
  ck_assert_uint_eq(HALF_OF(kiln_scalar_f64(65504.0), KILN_F16), 0x7bff);
  ck_assert_uint_eq(HALF_OF(kiln_scalar_f64(65520.0), KILN_F16), 0x7c00); /* tie to inf */
  ck_assert_uint_eq(HALF_OF(kiln_scalar_f64(-1e39), KILN_BF16), 0xff80);
  ck_assert_uint_eq(HALF_OF(kiln_scalar_f64(-1e-50), KILN_BF16), 0x8000);
  ck_assert_uint_eq(HALF_OF(kiln_scalar_f64(0x1p-24), KILN_F16), 0x0001); /* subnormal */
  ck_assert_uint_eq(HALF_OF(kiln_scalar_f64(-NAN), KILN_F16), 0xfe00);
  ck_assert_uint_eq(HALF_OF(kiln_scalar_f64(NAN), KILN_BF16), 0x7fc0);
  /* Just above a tie by less than an f32 can hold: through f32 it would round to even. */
  ck_assert_uint_eq(HALF_OF(kiln_scalar_f64(1.0 + 0x1p-11 + 0x1p-40), KILN_F16), 0x3c01);
  ck_assert_uint_eq(HALF_OF(kiln_scalar_f64(1.0 + 0x1p-8 + 0x1p-40), KILN_BF16), 0x3f81);
  /* Integers: ties to even, overflow to inf, and i64 beyond 2^53 rounded once. */
  ck_assert_uint_eq(HALF_OF(kiln_scalar_i64(2049), KILN_F16), 0x6800);
  ck_assert_uint_eq(HALF_OF(kiln_scalar_i64(2051), KILN_F16), 0x6802);
  ck_assert_uint_eq(HALF_OF(kiln_scalar_i64(-70000), KILN_F16), 0xfc00);
  ck_assert_uint_eq(HALF_OF(kiln_scalar_i64(257), KILN_BF16), 0x4380);
  int64_t big = (INT64_C(1) << 60) + (INT64_C(1) << 52) + 1; /* (double) gives the tie */
  ck_assert_uint_eq(HALF_OF(kiln_scalar_i64(big), KILN_BF16), kiln_bf16_from_f64(0x1p60 + 0x1p53));
  ck_assert_uint_eq(HALF_OF(kiln_scalar_i64(-big), KILN_BF16),
                    kiln_bf16_from_f64(-0x1p60 - 0x1p53));
  ck_assert_uint_eq(HALF_OF(kiln_scalar_i64(INT64_MIN), KILN_BF16), 0xdf00);
  ck_assert_uint_eq(HALF_OF(kiln_scalar_i64(INT64_MAX), KILN_BF16), 0x5f00);
#undef HALF_OF
  kiln_complex64 c;
  kiln__scalar_to_bytes(kiln_scalar_f64(0.1), KILN_C64, buf);
  memcpy(&c, buf, sizeof c);
  ck_assert(c.re == 0.1f && c.im == 0.0f && !signbit(c.im));
  kiln__scalar_to_bytes(kiln_scalar_i64(16777217), KILN_C64, buf);
  memcpy(&c, buf, sizeof c);
  ck_assert(c.re == 16777216.0f && c.im == 0.0f);
  kiln_complex128 z;
  kiln__scalar_to_bytes(kiln_scalar_f64(-0.0), KILN_C128, buf);
  memcpy(&z, buf, sizeof z);
  ck_assert(z.re == 0.0 && signbit(z.re) && z.im == 0.0 && !signbit(z.im));
  kiln__scalar_to_bytes(kiln_scalar_i64((INT64_C(1) << 53) + 1), KILN_C128, buf);
  memcpy(&z, buf, sizeof z);
  ck_assert(z.re == 0x1p53 && z.im == 0.0);
  kiln__scalar_to_bytes(kiln_scalar_f64(INFINITY), KILN_C128, buf);
  memcpy(&z, buf, sizeof z);
  ck_assert(isinf(z.re) && z.re > 0 && z.im == 0.0);
}
END_TEST

/* The full 10x10 table of docs/ops.md, "Type promotion", written out independently. */
START_TEST(dtype_promotion_table)
{
  /* one row per line, as the table in docs/ops.md */
  /* clang-format off */
  enum { F32 = KILN_F32, F64 = KILN_F64, I32 = KILN_I32, I64 = KILN_I64, U8 = KILN_U8,
         BL = KILN_BOOL, F16 = KILN_F16, BF = KILN_BF16, C64 = KILN_C64, C128 = KILN_C128 };
  static const int order[10] = {F32, F64, I32, I64, U8, BL, F16, BF, C64, C128};
  static const int table[10][10] = {
      /*         f32   f64   i32   i64   u8    bool  f16   bf16  c64   c128 */
      /* f32 */ {F32, F64, F32, F32, F32, F32, F32, F32, C64, C128},
      /* f64 */ {F64, F64, F64, F64, F64, F64, F64, F64, C128, C128},
      /* i32 */ {F32, F64, I32, I64, I32, I32, F16, BF, C64, C128},
      /* i64 */ {F32, F64, I64, I64, I64, I64, F16, BF, C64, C128},
      /* u8  */ {F32, F64, I32, I64, U8, U8, F16, BF, C64, C128},
      /* bool */ {F32, F64, I32, I64, U8, BL, F16, BF, C64, C128},
      /* f16 */ {F32, F64, F16, F16, F16, F16, F16, F32, C64, C128},
      /* bf16 */ {F32, F64, BF, BF, BF, BF, F32, BF, C64, C128},
      /* c64 */ {C64, C128, C64, C64, C64, C64, C64, C64, C64, C128},
      /* c128 */ {C128, C128, C128, C128, C128, C128, C128, C128, C128, C128},
  };
  /* clang-format on */
  ck_assert_int_eq(KILN_DTYPE_COUNT, 10);
  for (int i = 0; i < 10; i++)
    for (int j = 0; j < 10; j++) {
      kiln_dtype got = KILN_DTYPE_COUNT;
      KOK(kiln_dtype_promote((kiln_dtype)order[i], (kiln_dtype)order[j], &got));
      ck_assert_msg((int)got == table[i][j], "%s + %s: got %s, want %s",
                    kiln_dtype_name((kiln_dtype)order[i]), kiln_dtype_name((kiln_dtype)order[j]),
                    kiln_dtype_name(got), kiln_dtype_name((kiln_dtype)table[i][j]));
    }
  kiln_dtype kept = KILN_U8;
  KEXPECT(kiln_dtype_promote(KILN_DTYPE_COUNT, KILN_F32, &kept), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "kiln_dtype_promote"));
  KEXPECT(kiln_dtype_promote(KILN_F32, (kiln_dtype)-1, &kept), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(kept, KILN_U8);
  KEXPECT(kiln_dtype_promote(KILN_F32, KILN_I32, NULL), KILN_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(provider_abi_is_checked)
{
  const kiln_provider *p = (const kiln_provider *)1;
  KEXPECT(kiln_get_provider(KILN_PROVIDER_ABI + 1, &p), KILN_ERR_ABI);
  ck_assert_ptr_null(p);
  KEXPECT(kiln_get_provider(KILN_PROVIDER_ABI, NULL), KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_get_provider(KILN_PROVIDER_ABI, &p));
  ck_assert_uint_eq(p->abi_version, KILN_PROVIDER_ABI);
  ck_assert_uint_eq(p->struct_size, sizeof *p);
  ck_assert_str_eq(p->version, kiln_version());
  ck_assert(p->unary == kiln_unary);
  /* Every slot of this build is filled. */
  const void *const *slot = (const void *const *)&p->status_name;
  const void *const *end = (const void *const *)((const char *)p + sizeof *p);
  for (; slot < end; slot++)
    ck_assert_ptr_nonnull(*slot);
}
END_TEST

/* The runtime reaches kernels only through the family table: every embedded source has one
 * owner (or `kiln cache warm` would skip it), and every source a family names exists. */
/* A kernel lookup refuses a dtype its source does not build (kiln__ops_kernel_variant reads
 * this answer); the options are written either way, and an unknown source is not refused. */
START_TEST(program_options_report_source_dtypes)
{
  kiln_device_info info;
  memset(&info, 0, sizeof info);
  char opts[256];
  ck_assert_int_eq(kiln__program_options(&info, "nn_rows", KILN_F32, NULL, opts, sizeof opts), 1);
  ck_assert_int_eq(kiln__program_options(&info, "linalg", KILN_F16, NULL, opts, sizeof opts), 0);
  ck_assert_ptr_nonnull(strstr(opts, "-DKILN_DT_F16=1"));
  ck_assert_int_eq(kiln__program_options(&info, "elementwise", KILN_C64, NULL, opts, sizeof opts),
                   0);
  ck_assert_int_eq(kiln__program_options(&info, "cast", KILN_C128, NULL, opts, sizeof opts), 1);
  ck_assert_int_eq(kiln__program_options(&info, "no_such_source", KILN_F32, NULL, opts, sizeof opts),
                   1);
}
END_TEST

START_TEST(every_source_has_one_family)
{
  for (size_t i = 0; i < KILN__CL_SOURCE_COUNT; i++) {
    int owners = 0;
    for (size_t f = 0; kiln__families[f]; f++)
      for (const struct kiln__source *s = kiln__families[f]->sources; s && s->name; s++)
        owners += strcmp(s->name, kiln__cl_sources[i].name) == 0;
    ck_assert_msg(owners == 1, "source %s has %d owning families", kiln__cl_sources[i].name,
                  owners);
  }
  size_t nfam = 0;
  for (size_t f = 0; kiln__families[f]; f++, nfam++) {
    ck_assert_ptr_nonnull(kiln__families[f]->name);
    for (const struct kiln__source *s = kiln__families[f]->sources; s && s->name; s++) {
      ck_assert_msg(kiln__cl_source_find(s->name) != NULL, "%s names unknown source %s",
                    kiln__families[f]->name, s->name);
      ck_assert_msg(s->dtypes && !(s->dtypes & ~KILN__DT_EVERY), "%s.cl builds no dtype",
                    s->name);
    }
    for (size_t o = 0; o < kiln__families[f]->noptions; o++) {
      ck_assert(kiln__families[f]->option_set != NULL);
      ck_assert(kiln__families[f]->option_get != NULL);
    }
  }
  ck_assert_uint_le(nfam, KILN__FAMILY_SLOTS);
}
END_TEST

struct captured {
  int calls;
  kiln_log_level level;
  char text[128];
};

static void
capture(kiln_log_level level, const char *message, void *user)
{
  struct captured *c = user;
  c->calls++;
  c->level = level;
  snprintf(c->text, sizeof c->text, "%s", message);
}

/* A host application's handler receives kiln's messages at and above the level it sets. */
/* The debug record of ctx->lock's holder behind KILN__ASSERT_LOCKED (a bare struct: no device). */
static void *
lock_held_elsewhere(void *ctx)
{
  return (void *)(intptr_t)kiln__ctx_lock_held(ctx);
}

static void *
lock_in_thread(void *ctx)
{
  kiln__ctx_lock(ctx);
  intptr_t held = kiln__ctx_lock_held(ctx);
  kiln__ctx_unlock(ctx);
  return (void *)held;
}

static int
held_in_other_thread(kiln_context *c, void *(*fn)(void *))
{
  pthread_t th;
  void *r = NULL;
  ck_assert_int_eq(pthread_create(&th, NULL, fn, c), 0);
  pthread_join(th, &r);
  return (int)(intptr_t)r;
}

START_TEST(context_lock_ownership)
{
  static kiln_context c;
  memset(&c, 0, sizeof c);
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&c.lock, &attr);
  pthread_mutexattr_destroy(&attr);
#ifdef NDEBUG
  ck_assert_int_eq(kiln__ctx_lock_held(&c), -1); /* not tracked: the asserts are compiled out */
#else
  ck_assert_int_eq(kiln__ctx_lock_held(&c), 0);
  kiln__ctx_lock(&c);
  ck_assert_int_eq(kiln__ctx_lock_held(&c), 1);
  ck_assert_int_eq(held_in_other_thread(&c, lock_held_elsewhere), 0);
  kiln__ctx_lock(&c); /* recursive: still held after one unlock */
  ck_assert_int_eq(kiln__ctx_lock_held(&c), 1);
  kiln__ctx_unlock(&c);
  ck_assert_int_eq(kiln__ctx_lock_held(&c), 1);
  kiln__ctx_unlock(&c);
  ck_assert_int_eq(kiln__ctx_lock_held(&c), 0);
  /* Another thread's hold is its own: it sees 1, this thread 0 again after. */
  ck_assert_int_eq(held_in_other_thread(&c, lock_in_thread), 1);
  ck_assert_int_eq(kiln__ctx_lock_held(&c), 0);
  ck_assert_uint_eq(c.lock_depth, 0);
#endif
  pthread_mutex_destroy(&c.lock);
}
END_TEST

START_TEST(log_handler_and_level)
{
  kiln_log_level saved = kiln_log_get_level();
  struct captured c = {0};
  kiln_log_set_handler(capture, &c);
  ck_assert_int_eq(kiln_log_set_level(KILN_LOG_INFO), KILN_OK);
  ck_assert_int_eq(kiln_log_get_level(), KILN_LOG_INFO);
  kiln__log(KILN__LOG_WARN, "disk %s", "full");
  ck_assert_int_eq(c.calls, 1);
  ck_assert_int_eq(c.level, KILN_LOG_WARN);
  ck_assert_str_eq(c.text, "disk full");
  kiln__log(KILN__LOG_DEBUG, "dropped");
  ck_assert_int_eq(c.calls, 1);
  ck_assert_int_eq(kiln_log_set_level(KILN_LOG_OFF), KILN_OK);
  kiln__log(KILN__LOG_ERROR, "dropped too");
  ck_assert_int_eq(c.calls, 1);
  ck_assert_int_eq(kiln_log_set_level((kiln_log_level)7), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "kiln_log_set_level"));
  kiln_log_set_handler(NULL, NULL);
  kiln__log(KILN__LOG_ERROR, "to stderr, filtered");
  ck_assert_int_eq(c.calls, 1);
  ck_assert_int_eq(kiln_log_set_level(saved), KILN_OK);
}
END_TEST

/* KILN_LOG naming no level gives the default (warn) and says so once, as the other variables
 * do; a valid name is taken silently. */
START_TEST(log_level_from_env)
{
  kiln_log_level saved = kiln_log_get_level();
  struct captured c = {0};
  kiln_log_set_handler(capture, &c);
  setenv("KILN_LOG", "bogus", 1);
  kiln__log_set_level(-2); /* read the environment again */
  ck_assert_int_eq(kiln_log_get_level(), KILN_LOG_WARN);
  ck_assert_int_eq(c.calls, 1);
  ck_assert_int_eq(c.level, KILN_LOG_WARN);
  ck_assert_ptr_nonnull(strstr(c.text, "KILN_LOG=\"bogus\""));
  kiln__log(KILN__LOG_INFO, "dropped");
  ck_assert_int_eq(c.calls, 1);
  setenv("KILN_LOG", "DEBUG", 1);
  kiln__log_set_level(-2);
  ck_assert_int_eq(kiln_log_get_level(), KILN_LOG_DEBUG);
  ck_assert_int_eq(c.calls, 1);
  unsetenv("KILN_LOG");
  kiln_log_set_handler(NULL, NULL);
  ck_assert_int_eq(kiln_log_set_level(saved), KILN_OK);
}
END_TEST

/* Every KILN_ variable kiln reads is in the README's table (and so documented). */
START_TEST(env_vars_documented)
{
  FILE *f = fopen(KILN_TEST_SOURCE_ROOT "/README.md", "r");
  ck_assert_ptr_nonnull(f);
  static char text[1 << 17];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  for (int v = 0; v < KILN__ENV_COUNT; v++) {
    const char *name = kiln__env_name((enum kiln__env)v);
    if (strncmp(name, "KILN_", 5) != 0 || strncmp(name, "KILN_TEST_", 10) == 0)
      continue;
    char row[64];
    snprintf(row, sizeof row, "| `%s` |", name);
    ck_assert_msg(strstr(text, row) != NULL, "%s is not in README.md's table", name);
  }
}
END_TEST

START_TEST(op_names_round_trip)
{
  ck_assert_str_eq(kiln_unary_op_name(KILN_OP_EXP), "exp");
  ck_assert_str_eq(kiln_binary_op_name(KILN_OP_ADD), "add");
  ck_assert_str_eq(kiln_unary_op_name((kiln_unary_op)-1), "?");
  ck_assert_str_eq(kiln_binary_op_name(KILN_BINARY_OP_COUNT), "?");
  ck_assert(kiln_unary_op_supports(KILN_OP_EXP, KILN_F32));
  ck_assert(!kiln_unary_op_supports(KILN_OP_EXP, KILN_I32));
  ck_assert(kiln_binary_op_supports(KILN_OP_SHL, KILN_I64));
  ck_assert(!kiln_binary_op_supports(KILN_OP_SHL, KILN_BOOL));
  ck_assert(!kiln_binary_op_supports(KILN_OP_ADD, KILN_DTYPE_COUNT));
}
END_TEST

static Suite *
unit_suite(void)
{
  Suite *s = suite_create("unit");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, status_names_are_unique_and_complete);
  tcase_add_test(tc, error_record_keeps_op_message_and_raw_code);
  tcase_add_test(tc, dtype_traits);
  tcase_add_test(tc, half_conversions_every_pattern);
  tcase_add_test(tc, shape_make_counts_and_rejects);
  tcase_add_test(tc, broadcast_rules);
  tcase_add_test(tc, broadcast_plan_merges_dimensions);
  tcase_add_test(tc, scalar_conversion_follows_cast_rules);
  tcase_add_test(tc, scalar_conversion_half_and_complex);
  tcase_add_test(tc, dtype_promotion_table);
  tcase_add_test(tc, provider_abi_is_checked);
  tcase_add_test(tc, op_names_round_trip);
  tcase_add_test(tc, every_source_has_one_family);
  tcase_add_test(tc, program_options_report_source_dtypes);
  tcase_add_test(tc, log_handler_and_level);
  tcase_add_test(tc, env_vars_documented);
  tcase_add_test(tc, context_lock_ownership);
  tcase_add_test(tc, log_level_from_env);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  return harness_main(unit_suite(), 0);
}
