#!/bin/bash
# Issue 18, closing H200 run of session 13: the linalg family with its built-in defaults (LU,
# Cholesky, solve, inverse, QR, batched LU; f64 at 1024 and 4096, f32 at 4096), kiln's DGEMM
# 4096 (the rate reference), PyTorch for the same cases, then test_linalg,
# test_linalg_complex and test_linalg_spectral. Run from the checkout root with build-gpu/
# present: NAMES=lafinal bash bench/h200/round.sh. Results under $OUT/r/lafinal/.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/lafinal; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-laf; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
F=linalg.lu,linalg.cholesky,linalg.solve,linalg.inv,linalg.qr,linalg.lu_batched
b() { local n=$1 to=$2; shift 2
  timeout -k 1 $to $K bench --no-startup --json --reps 5 "$@" > $R/bench-$n.json 2>> $R/err.txt
  echo "$n rc=$?" >> $R/runs.txt; el $n; }
b f64 60 --dtype f64 --sizes 2^20,2^24 --filter $F
b f32 40 --dtype f32 --sizes 2^24 --filter $F
b gemm 20 --dtype f64 --sizes 2^24 --filter blas.gemm
CLTRACE_OUT=$R/trace-qr.txt LD_PRELOAD=$PWD/build-gpu/bench/libcltrace.so timeout -k 1 30 \
  $K bench --no-startup --json --reps 2 --dtype f64 --sizes 2^24 --filter linalg.qr \
  > $R/bench-trace-qr.json 2>> $R/err.txt; el trace-qr
timeout 90 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^20,2^24 \
  --filter $F > $R/torch.json 2>> $R/err.txt; el torch
for t in linalg linalg_complex linalg_spectral; do
  CK_FORK=no KILN_LOG=error timeout 150 build-gpu/tests/test_$t \
    > $R/test-$t.txt 2>&1; echo "test $t rc=$?" >> $R/runs.txt; el test-$t
done
