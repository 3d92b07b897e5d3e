#!/bin/bash
# The f64 operations of gelu per element, kiln's form against PyTorch's, from nvcc's PTX for
# sm_90 (no GPU needed): bash bench/gelu_ptx/count.sh [NVCC]. docs/nn.md quotes the counts.
nvcc=${1:-/usr/local/cuda/bin/nvcc}
d=$(dirname "$0")
for f in ours torch; do
  "$nvcc" -arch=sm_90 -O3 -ptx "$d/$f.cu" -o "/tmp/gelu_$f.ptx" || exit 1
  p=/tmp/gelu_$f.ptx
  echo "$f: fma.f64 $(grep -c 'fma.rn.f64' $p), mul.f64 $(grep -c 'mul.f64\|mul.rn.f64' $p)," \
    "add/sub.f64 $(grep -cE '(add|sub)(.rn)?.f64' $p), branches $(grep -c '@%p.*bra' $p)"
done
