#!/bin/bash
# Issue 18: Cholesky on the H200 after chol_small's trailing update lost its per-element
# division (cl_kernels/linalg.cl). Run from the checkout root with build-gpu/ present
# (round.sh copies build-gpu-t/'s test binaries in): Cholesky, solve-free, f64 and f32 at 1024
# and 4096, one traced Cholesky (bench/cltrace.c), PyTorch for the same cases, then
# test_linalg and test_linalg_complex on the GPU. Results under $OUT/r/chol/.
source .device/setup.sh >/dev/null 2>&1
d=/tmp/opencl/usr/lib/x86_64-linux-gnu # Debian's BLAS/LAPACK alternatives (dpkg -x skips them)
ln -sf $d/blas/libblas.so.3 $d/libblas.so.3; ln -sf $d/lapack/liblapack.so.3 $d/liblapack.so.3
K=build-gpu/tools/kiln
R=$OUT/r/chol; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-chol; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
timeout -k 1 60 $K bench --no-startup --json --reps 3 --dtype f64,f32 --sizes 2^20,2^24 \
  --filter linalg.cholesky,linalg.ccholesky > $R/bench.json 2>> $R/err.txt; el bench
CLTRACE_OUT=$R/trace-chol.txt LD_PRELOAD=$PWD/build-gpu/bench/libcltrace.so timeout -k 1 30 \
  $K bench --no-startup --json --reps 2 --dtype f64 --sizes 2^24 --filter linalg.cholesky \
  > $R/bench-trace.json 2>> $R/err.txt; el trace
timeout 60 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^20,2^24 \
  --filter linalg.cholesky > $R/torch.json 2>> $R/err.txt; el torch
for t in linalg linalg_complex; do
  CK_FORK=no KILN_LOG=error timeout 120 build-gpu/tests/test_$t > $R/test-$t.txt 2>&1
  echo "test $t rc=$?" >> $R/runs.txt; el test-$t
done
