/*
 * The error figures of kiln's own math functions, from host replicas of their operation
 * sequences (each an fma where the kernel has one): cc -O2 bench/fits/check_math.c -lm &&
 * ./a.out. Prints:
 *   - random.cl's f32 -2 ln(k 2^-24) (det_m2log_f32) over every k, relative to double log;
 *   - random.cl's sin and cos of 2 pi k 2^-24 over every k, and of 2 pi K 2^-53 for 2e7
 *     random K, absolute (DET_SINCOS);
 *   - exp64.clh's kiln_exp64 for 5e7 random x in [-750, 712], ulps of normal results against
 *     long double, and its value at the edges beside glibc's;
 *   - nn_act.cl's f64 gelu (kiln's erfc form) with OpenCL's exp replaced by glibc's and by
 *     kiln_exp64_neg, relative to a long double reference from -37.5 to 9.
 * docs/layout.md and docs/nn.md quote these. The random.cl replicas are test_random's
 * (tests/ops/det_math.h), which the suite holds to the kernels bit for bit; the exp and gelu
 * ones here follow exp64.clh and nn_act.cl.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../tests/ops/det_math.h" /* random.cl's replicas, test_random's too */

static double exp_reduced(double x, double *kd)
{
  static const double c[] = {2.5000036652530476e-08, 2.763026313862644e-07, 2.755758653005099e-06,
                             2.480149306065045e-05,  0.00019841269506317533, 0.0013888888943663614,
                             0.008333333333494623,   0.041666666666530044,  0.16666666666666413,
                             0.5000000000000011,     1.0,                   1.0};
  const double k = (x * 1.4426950408889634074 + 0x1.8p52) - 0x1.8p52;
  const double r = (x - k * 6.93147180369123816490e-01) - k * 1.90821492927058770002e-10;
  double p = c[0];
  for (int i = 1; i < 12; i++)
    p = fma(p, r, c[i]);
  *kd = k;
  return p;
}
static double kexp(double x)
{
  const double xc = x < -746.0 ? -746.0 : x > 710.0 ? 710.0 : x;
  double kd, p = exp_reduced(xc, &kd);
  const double k1 = ((kd * 0.5 - 0.25) + 0x1.8p52) - 0x1.8p52, k2 = kd - k1;
  const double y = p * as_d(as_ul(k1 + (1023.0 + 0x1p52)) << 52) * as_d(as_ul(k2 + (1023.0 + 0x1p52)) << 52);
  return x != x ? x : y;
}
static double kexp_neg(double y)
{
  double kd, p = exp_reduced(y, &kd);
  double e = as_d(as_ul(p) + (as_ul(kd + 0x1.8p52) << 52));
  return y < -708.0 ? 0.0 : e;
}

static int kiln_exp_in_gelu;
static double gauss(double x)
{
  double xs = fmin(fabs(x), 40.0), hh = xs * xs, hl = fma(xs, xs, -hh);
  return (kiln_exp_in_gelu ? kexp_neg(-0.5 * hh) : exp(-0.5 * hh)) * (1.0 - 0.5 * hl);
}
static double phi(double x)
{
  static const double P[] = {
      9.655408225482863e-10,  1.5712153638319064e-09, -1.2544825403855518e-08, -1.6357383982124768e-08,
      1.0683442926744586e-07, 7.111912428010423e-08,  -8.218020654813044e-07,  2.980596055322769e-07,
      5.707239573693257e-06,  -1.1225140354449658e-05, -2.439811794207995e-05, 0.0001506231178516207,
      -0.00019925700412184815, -0.0007577737141838885, 0.005031970032548695,  -0.01619773397992426,
      0.0371675155318432,     -0.06633036582050367,   0.09373283499865172,    -0.10103906603585294,
      0.0680970542546862,     0.015379652102610162,   -0.1396211168405625,    1.2329951186255526};
  double z = fmin(fabs(x), 40.0) * 0.70710678118654752440;
  double zp = z + 4.0, zc = 1.0 + 2.0 * z, d = zp * zc, r = (double)(1.0f / (float)d);
  double e = fma(-d, r, 1.0);
  r = fma(r, fma(e, e, e), r);
  double t = (z - 4.0) * zc * r, p = P[0];
  for (int i = 1; i < 24; i++)
    p = fma(p, t, P[i]);
  double h = 0.5 * gauss(x) * p * (zp * r);
  return x < 0.0 ? h : 1.0 - h;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

int main(void)
{
  double lmax = 0, sf = 0;
  for (uint32_t k = 1; k <= (1u << 24); k++) {
    double t = -2 * log((double)k * 0x1p-24);
    if (t > 0 && fabs(det_m2log_f32(k) - t) / t > lmax)
      lmax = fabs(det_m2log_f32(k) - t) / t;
    float s, c;
    double a = 2 * M_PI * (double)(k - 1) * 0x1p-24;
    det_sincos_f32(k - 1, &s, &c);
    sf = fmax(sf, fmax(fabs(s - sin(a)), fabs(c - cos(a))));
  }
  double sd = 0;
  for (long i = 0; i < 20000000; i++) {
    uint64_t k = next() >> 11;
    double s, c;
    det_sincos_f64(k, &s, &c);
    long double a = 6.28318530717958647692528676655900577L * (long double)k / 9007199254740992.0L;
    sd = fmax(sd, fmax(fabs(s - (double)sinl(a)), fabs(c - (double)cosl(a))));
  }
  printf("f32 -2 ln u: max rel %.3g; sin/cos f32 max abs %.3g, f64 %.3g\n", lmax, sf, sd);
  long double ulp = 0;
  for (long i = 0; i < 50000000; i++) {
    double x = -750.0 + 1462.0 * (double)(next() >> 11) * 0x1p-53;
    long double t = expl((long double)x);
    if (t < 0x1p-1022L || t > 0x1.fffffffffffffp1023L)
      continue;
    long double u = fabsl((kexp(x) - t) / t) * 0x1p52L;
    if (u > ulp)
      ulp = u;
  }
  printf("kiln_exp64: max %.3Lg ulp (normal results)\n", ulp);
  static const double edge[] = {-INFINITY, INFINITY, NAN, 0.0, -0.0, 709.78, 709.79, -708.4,
                                -740, -745.1, -745.2};
  for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
    printf("  exp(%g): kiln %.17g glibc %.17g\n", edge[i], kexp(edge[i]), exp(edge[i]));
  for (kiln_exp_in_gelu = 0; kiln_exp_in_gelu < 2; kiln_exp_in_gelu++) {
    long double me = 0;
    for (int i = 0; i <= 2000000; i++) {
      double x = -37.5 + 46.5 * i / 2000000.0;
      long double X = x, G = X * 0.5L * erfcl(-X / sqrtl(2.0L));
      if (G != 0 && fabsl((x * phi(x) - G) / G) > me)
        me = fabsl((x * phi(x) - G) / G);
    }
    printf("gelu f64 (%s exp): max rel %.3Lg over [-37.5, 9]\n",
           kiln_exp_in_gelu ? "kiln_exp64_neg" : "glibc", me);
  }
  return 0;
}
