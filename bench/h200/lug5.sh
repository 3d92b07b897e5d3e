#!/bin/bash
# Issue 18, session 14: LU, solve and inverse with laswp's permutation launches, the blocked
# tri_inv, the panel's switch, and the two-level solves on the large GEMM kernel (against
# gemm=2, which keeps them one level on gemm_tile); f64 1024/4096, f32 4096, a trace of the
# inverse, DGEMM 4096, PyTorch for the same cases, then test_linalg and test_linalg_complex.
# Run from the checkout root with build-gpu/ present: NAMES=lug5 bash bench/h200/round.sh.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/lug5; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-lug5; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
F=linalg.lu,linalg.solve,linalg.inv,linalg.cholesky
b() { local n=$1 to=$2; shift 2
  timeout -k 1 $to $K bench --no-startup --json --reps 5 "$@" > $R/bench-$n.json 2>> $R/err.txt
  echo "$n rc=$?" >> $R/runs.txt; el $n; }
b def 40 --dtype f64 --sizes 2^20,2^24 --filter $F
b def-f32 30 --dtype f32 --sizes 2^24 --filter $F
b g2 30 --dtype f64 --sizes 2^24 --filter linalg.solve,linalg.inv --tune "linalg:gemm=2"
b gemm 20 --dtype f64 --sizes 2^24 --filter blas.gemm
CLTRACE_OUT=$R/trace-inv.txt LD_PRELOAD=$PWD/build-gpu/bench/libcltrace.so timeout -k 1 30 \
  $K bench --no-startup --json --reps 2 --dtype f64 --sizes 2^24 --filter linalg.inv \
  > $R/bench-trace-inv.json 2>> $R/err.txt; el trace-inv
timeout 90 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^20,2^24 \
  --filter $F > $R/torch.json 2>> $R/err.txt; el torch
for t in linalg linalg_complex; do
  CK_FORK=no KILN_LOG=error timeout 100 build-gpu/tests/test_$t \
    > $R/test-$t.txt 2>&1; echo "test $t rc=$?" >> $R/runs.txt; el test-$t
done
