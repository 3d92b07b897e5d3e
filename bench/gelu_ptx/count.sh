#!/bin/bash
# The f64 operations of gelu per element, kiln's form against PyTorch's, from nvcc's PTX for
# sm_90 (no GPU needed): bash bench/gelu_ptx/count.sh [NVCC]. docs/nn.md quotes the counts.
# kiln's form is taken from cl_kernels/nn_act.cl itself (its f64 a_gauss and a_phi, the T of
# their signatures as double) and compiled with CUDA's exp; torch.cu is PyTorch's formula.
nvcc=${1:-/usr/local/cuda/bin/nvcc}
d=$(dirname "$0")
ours=/tmp/gelu_ours.cu
{
  awk '
    /^#if defined\(KILN_DT_F64\)/ { g = 1 }
    /^#elif KILN_NN_ERF && defined\(KILN_DT_F64\)/ { p = 1 }
    (g || p) && /^inline T a_(gauss|phi)\(T x\)$/ { on = 1 }
    on { print }
    on && /^}/ { on = 0; g = 0; p = 0 }
  ' "$d/../../cl_kernels/nn_act.cl" |
    sed 's/^inline T \(a_[a-z]*\)(T x)$/__device__ __forceinline__ double \1(double x)/'
  echo 'extern "C" __global__ void gelu(const double *x, double *y, long n) {'
  echo '  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;'
  echo '  if (i < n) { double v = x[i]; y[i] = v * a_phi(v); }'
  echo '}'
} > $ours
grep -q 'double a_gauss' $ours && grep -q 'double a_phi' $ours ||
  { echo "count.sh: a_gauss or a_phi (f64) not found in cl_kernels/nn_act.cl" >&2; exit 1; }
for f in $ours "$d/torch.cu"; do
  n=$(basename "$f" .cu)
  "$nvcc" -arch=sm_90 -O3 -ptx "$f" -o "/tmp/$n.ptx" || exit 1
  p=/tmp/$n.ptx
  echo "$n: fma.f64 $(grep -c 'fma.rn.f64' $p), mul.f64 $(grep -c 'mul.f64\|mul.rn.f64' $p)," \
    "add/sub.f64 $(grep -cE '(add|sub)(.rn)?.f64' $p), branches $(grep -c '@%p.*bra' $p)"
done
