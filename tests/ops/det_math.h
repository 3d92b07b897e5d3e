/*
 * Host replicas of random.cl's deterministic math (the f32 -2 ln u, sqrt, and sines and cosines
 * of both precisions, the f64 logarithm), operation for operation: test_random's stream
 * reference and bench/fits/check_math.c's error figures take them from here.
 */
#ifndef KILN_TESTS_DET_MATH_H
#define KILN_TESTS_DET_MATH_H
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float
as_f(uint32_t u)
{
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline uint32_t
as_u(float f)
{
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static inline double
as_d(uint64_t u)
{
  double d;
  memcpy(&d, &u, 8);
  return d;
}

static inline uint64_t
as_ul(double d)
{
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}

/* -2 ln(k 2^-24): random.cl's det_m2log_f32, step for step. */
static inline float
det_m2log_f32(uint32_t k)
{
  static const float q[] = {2.4999996e-01f, 8.333488e-02f,  3.1252194e-02f, 1.2476294e-02f,
                            5.178284e-03f,  2.3309346e-03f, 1.1177751e-03f, 3.4120394e-04f};
  float x = (float)k;
  int32_t e = (int32_t)(as_u(x) - 0x3f3504f3u) >> 23;
  float m = as_f(as_u(x) - ((uint32_t)e << 23));
  float g = fmaf(m, -2.0f, 2.0f);
  float p = q[7];
  for (int i = 6; i >= 0; i--)
    p = fmaf(p, g, q[i]);
  float r = fmaf(g * g, p, g);
  float ef = as_f((uint32_t)(e + (0x4b400000 - 24))) - 12582912.0f;
  return fmaf(ef, -1.3862915f, fmaf(ef, -2.8572135e-06f, r));
}

static inline float
det_sqrt_f32(float x)
{
  if (x == 0.0f)
    return 0.0f;
  float y = as_f(0x5f3759dfu - (as_u(x) >> 1));
  float hx = 0.5f * x;
  y = y * fmaf(-hx, y * y, 1.5f);
  y = y * fmaf(-hx, y * y, 1.5f);
  y = y * fmaf(-hx, y * y, 1.5f);
  return x * y;
}

static inline float
sin_poly_f32(float t)
{
  float t2 = t * t;
  float p = 2.75573188e-06f;
  p = fmaf(p, t2, -0.000198412701f);
  p = fmaf(p, t2, 0.00833333377f);
  p = fmaf(p, t2, -0.166666672f);
  return fmaf(t, t2 * p, t);
}

static inline float
cos_poly_f32(float t)
{
  float t2 = t * t;
  float p = -2.755732e-07f;
  p = fmaf(p, t2, 2.48015876e-05f);
  p = fmaf(p, t2, -0.00138888892f);
  p = fmaf(p, t2, 0.0416666679f);
  p = fmaf(p, t2, -0.5f);
  return fmaf(t2, p, 1.0f);
}

/* random.cl's DET_SINCOS: the nearest quarter turn q, the rest t in [-pi/4, pi/4]. */
static inline void
det_sincos_f32(uint32_t k, float *s, float *c)
{
  uint32_t h = k + (1u << 21), q = (h >> 22) & 3;
  float t = (float)((int32_t)(h & 0x3fffffu) - (1 << 21)) * 0x1.921fb6p-22f;
  float sp = sin_poly_f32(t), cp = cos_poly_f32(t);
  *s = q == 0 ? sp : q == 1 ? cp : q == 2 ? -sp : -cp;
  *c = q == 0 ? cp : q == 1 ? -sp : q == 2 ? -cp : sp;
}

static inline double
det_log_f64(uint64_t k)
{
  double x = (double)k;
  uint64_t bits = as_ul(x);
  int e = (int)(bits >> 52) - 1023;
  double m = as_d((bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
  if (m > 1.4142135623730951) {
    m = m * 0.5;
    e += 1;
  }
  double s = (m - 1.0) / (m + 1.0);
  double s2 = s * s;
  static const double c[] = {0.043478260869565216, 0.047619047619047616, 0.05263157894736842,
                             0.058823529411764705, 0.06666666666666667,  0.07692307692307693,
                             0.09090909090909091,  0.1111111111111111,   0.14285714285714285,
                             0.2,                  0.3333333333333333,   1.0};
  double p = c[0];
  for (int i = 1; i < 12; i++)
    p = fma(p, s2, c[i]);
  double lnm = (2.0 * s) * p;
  double ef = (double)(e - 53);
  return fma(ef, 6.93147180369123816490e-01, fma(ef, 1.90821492927058770002e-10, lnm));
}

static inline double
sin_poly_f64(double t)
{
  static const double c[] = {-8.22063524662433e-18,  2.8114572543455206e-15, -7.647163731819816e-13,
                             1.6059043836821613e-10, -2.505210838544172e-08, 2.7557319223985893e-06,
                             -0.0001984126984126984, 0.008333333333333333,   -0.16666666666666666};
  double t2 = t * t, p = c[0];
  for (int i = 1; i < 9; i++)
    p = fma(p, t2, c[i]);
  return fma(t, t2 * p, t);
}

static inline double
cos_poly_f64(double t)
{
  static const double c[] = {4.110317623312165e-19,  -1.5619206968586225e-16, 4.779477332387385e-14,
                             -1.1470745597729725e-11, 2.08767569878681e-09,   -2.755731922398589e-07,
                             2.48015873015873e-05,    -0.001388888888888889,  0.041666666666666664,
                             -0.5};
  double t2 = t * t, p = c[0];
  for (int i = 1; i < 10; i++)
    p = fma(p, t2, c[i]);
  return fma(t2, p, 1.0);
}

static inline void
det_sincos_f64(uint64_t k, double *s, double *c)
{
  uint64_t h = k + (1ull << 50), q = (h >> 51) & 3;
  double t = (double)((int64_t)(h & 0x7ffffffffffffull) - (1ll << 50)) * 0x1.921fb54442d18p-51;
  double sp = sin_poly_f64(t), cp = cos_poly_f64(t);
  *s = q == 0 ? sp : q == 1 ? cp : q == 2 ? -sp : -cp;
  *c = q == 0 ? cp : q == 1 ? -sp : q == 2 ? -cp : sp;
}

#endif
