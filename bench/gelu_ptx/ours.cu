/* kiln's f64 gelu (cl_kernels/nn_act.cl, a_phi and a_gauss) as CUDA, with CUDA's exp: bench/gelu_ptx/count.sh counts its f64 PTX. */
__device__ __forceinline__ double a_gauss(double x) {
  double xs = fmin(fabs(x), 40.0), hh = xs * xs, hl = fma(xs, xs, -hh);
  return exp(-0.5 * hh) * (1.0 - 0.5 * hl);
}
__device__ __forceinline__ double a_phi(double x) {
  double z = fmin(fabs(x), 40.0) * 0.70710678118654752440;
  double zp = z + 4.0, zc = 1.0 + 2.0 * z, d = zp * zc, r = (double)(1.0f / (float)d);
  double e = fma(-d, r, 1.0);
  r = fma(r, fma(e, e, e), r);
  double t = (z - 4.0) * zc * r;
  double p = 9.655408225482863e-10;
  p = fma(p, t, 1.5712153638319064e-09); p = fma(p, t, -1.2544825403855518e-08);
  p = fma(p, t, -1.6357383982124768e-08); p = fma(p, t, 1.0683442926744586e-07);
  p = fma(p, t, 7.111912428010423e-08); p = fma(p, t, -8.218020654813044e-07);
  p = fma(p, t, 2.980596055322769e-07); p = fma(p, t, 5.707239573693257e-06);
  p = fma(p, t, -1.1225140354449658e-05); p = fma(p, t, -2.439811794207995e-05);
  p = fma(p, t, 0.0001506231178516207); p = fma(p, t, -0.00019925700412184815);
  p = fma(p, t, -0.0007577737141838885); p = fma(p, t, 0.005031970032548695);
  p = fma(p, t, -0.01619773397992426); p = fma(p, t, 0.0371675155318432);
  p = fma(p, t, -0.06633036582050367); p = fma(p, t, 0.09373283499865172);
  p = fma(p, t, -0.10103906603585294); p = fma(p, t, 0.0680970542546862);
  p = fma(p, t, 0.015379652102610162); p = fma(p, t, -0.1396211168405625);
  p = fma(p, t, 1.2329951186255526);
  double h = 0.5 * a_gauss(x) * p * (zp * r);
  return x < 0.0 ? h : 1.0 - h;
}
extern "C" __global__ void gelu(const double *x, double *y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) { double v = x[i]; y[i] = v * a_phi(v); }
}
