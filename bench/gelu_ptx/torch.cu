/* PyTorch's f64 gelu, x / 2 (1 + erf(x / sqrt 2)), as CUDA: bench/gelu_ptx/count.sh counts its f64 PTX. */
extern "C" __global__ void gelu(const double *x, double *y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) { double v = x[i]; y[i] = v * 0.5 * (1.0 + erf(v * 0.70710678118654752440)); }
}
