#!/bin/bash
# Issue 18: the linalg updates on kiln's large GEMM kernel (the linalg family's gemm=3, FP64
# tensor cores) against gemm_tile (gemm=2), with chol_inv for Cholesky's diagonal blocks, on the
# H200. Run from the checkout root with build-gpu/ present: NAMES=lalarge bash
# bench/h200/round.sh. Times LU, Cholesky, solve, inverse and QR (f64 1024 and 4096; f32 4096)
# both ways, look-ahead with the large kernel, traces of Cholesky and QR, PyTorch for the same
# cases and DGEMM 4096 (the rate reference), then test_linalg and test_linalg_spectral,
# and keeps the linalg programs' PTX (ptx.tgz). Results under $OUT/r/lalarge/.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/lalarge; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-lal; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
F=linalg.lu,linalg.cholesky,linalg.solve,linalg.inv,linalg.qr
# b NAME TIMEOUT kiln-bench-options...
b() { local n=$1 to=$2; shift 2
  timeout -k 1 $to $K bench --no-startup --json --reps 5 "$@" > $R/bench-$n.json 2>> $R/err.txt
  echo "$n rc=$?" >> $R/runs.txt; el $n; }
b tile 60 --dtype f64 --sizes 2^20,2^24 --filter $F --tune "linalg:gemm=2"
b large 60 --dtype f64 --sizes 2^20,2^24 --filter $F --tune "linalg:gemm=3"
b large-ahead 30 --dtype f64 --sizes 2^24 --filter linalg.lu,linalg.cholesky --tune "linalg:gemm=3 ahead=2"
b f32-tile 40 --dtype f32 --sizes 2^24 --filter $F --tune "linalg:gemm=2"
b f32-large 40 --dtype f32 --sizes 2^24 --filter $F --tune "linalg:gemm=3"
b gemm 20 --dtype f64 --sizes 2^24 --filter blas.gemm
tr() { local n=$1; shift
  CLTRACE_OUT=$R/trace-$n.txt LD_PRELOAD=$PWD/build-gpu/bench/libcltrace.so timeout -k 1 30 \
    $K bench --no-startup --json --reps 2 --dtype f64 --sizes 2^24 "$@" \
    > $R/bench-trace-$n.json 2>> $R/err.txt; el trace-$n; }
tr chol --filter linalg.cholesky --tune "linalg:gemm=3"
tr chol-tile --filter linalg.cholesky --tune "linalg:gemm=2"
tr qr --filter linalg.qr --tune "linalg:gemm=3"
tr lu --filter linalg.lu --tune "linalg:gemm=3"
timeout 90 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^20,2^24 \
  --filter $F > $R/torch.json 2>> $R/err.txt; el torch
for t in linalg linalg_spectral; do
  CK_FORK=no KILN_LOG=error timeout 150 build-gpu/tests/test_$t \
    > $R/test-$t.txt 2>&1; echo "test $t rc=$?" >> $R/runs.txt; el test-$t
done
# the linalg programs as NVIDIA's compiler left them (PTX in kiln's cache entries)
mkdir -p $R/ptx; for f in $(grep -rl "chol_inv" $KILN_CACHE_DIR | head -4); do cp "$f" $R/ptx/; done
tar czf $R/ptx.tgz -C $R ptx && rm -rf $R/ptx
