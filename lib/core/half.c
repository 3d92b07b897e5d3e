/*
 * Host conversions between f32/f64 and the two 16-bit float formats.
 *
 * One rounding routine serves both formats and both source widths: it takes
 * the value as a double (exact for every f32) and rounds it once, so an f64
 * never goes through f32 on its way (that double rounding gets ties wrong).
 * It relies on rint() rounding to nearest even, the C default mode.
 */
#include <math.h>
#include <string.h>

#include "kiln/dtype.h"

/* A binary float of 1 sign bit, ebits exponent bits and mbits stored mantissa bits. */
static uint16_t
round_small(double x, int ebits, int mbits, uint16_t nan_payload)
{
  const int bias = (1 << (ebits - 1)) - 1, emin = 1 - bias;
  const uint16_t sign = signbit(x) ? 0x8000u : 0u;
  const uint16_t exp_all = (uint16_t)(((1u << ebits) - 1u) << mbits);
  if (isnan(x))
    return (uint16_t)(sign | exp_all | (1u << (mbits - 1)) | nan_payload);
  double a = fabs(x);
  if (isinf(a))
    return (uint16_t)(sign | exp_all);
  if (a < ldexp(1.0, emin)) {
    /* Subnormal range: a multiple of 2^(emin - mbits). Rounding up to 2^mbits lands on
     * the smallest normal, whose encoding is exactly that integer. */
    return (uint16_t)(sign | (uint16_t)rint(ldexp(a, mbits - emin)));
  }
  int e2;
  (void)frexp(a, &e2);
  int e = e2 - 1; /* a in [2^e, 2^(e+1)) */
  double q = rint(ldexp(a, mbits - e)); /* in [2^mbits, 2^(mbits+1)] */
  if (q >= ldexp(1.0, mbits + 1)) {
    q = ldexp(q, -1);
    e++;
  }
  if (e > bias)
    return (uint16_t)(sign | exp_all);
  return (uint16_t)(sign | (uint16_t)((unsigned)(e + bias) << mbits) |
                    (uint16_t)((unsigned)q - (1u << mbits)));
}

/* The top payload bits of an f32 NaN that fit in a format with mbits mantissa bits. */
static uint16_t
f32_nan_payload(float v, int mbits)
{
  uint32_t u;
  memcpy(&u, &v, 4);
  return (uint16_t)((u & 0x7fffffu) >> (23 - mbits));
}

uint16_t
kiln_f16_from_f32(float value)
{
  return round_small(value, 5, 10, isnan(value) ? f32_nan_payload(value, 10) : 0);
}

uint16_t
kiln_f16_from_f64(double value)
{
  return round_small(value, 5, 10, 0);
}

float
kiln_f16_to_f32(uint16_t bits)
{
  uint32_t sign = (uint32_t)(bits & 0x8000u) << 16, e = (bits >> 10) & 0x1fu, m = bits & 0x3ffu;
  if (e == 0) {
    float v = ldexpf((float)m, -24); /* zero and subnormals, exact */
    return sign ? -v : v;
  }
  uint32_t u = e == 31 ? sign | 0x7f800000u | (m << 13) : sign | ((e + 112u) << 23) | (m << 13);
  float f;
  memcpy(&f, &u, 4);
  return f;
}

uint16_t
kiln_bf16_from_f32(float value)
{
  return round_small(value, 8, 7, isnan(value) ? f32_nan_payload(value, 7) : 0);
}

uint16_t
kiln_bf16_from_f64(double value)
{
  return round_small(value, 8, 7, 0);
}

float
kiln_bf16_to_f32(uint16_t bits)
{
  uint32_t u = (uint32_t)bits << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
