#!/bin/bash
# linalg on the H200 (docs/linalg.md, "Where the time goes: cltrace"): run from the checkout
# root with build-gpu/ (a release build) present. test_linalg, then each factorization at 4096
# f64 under the cltrace shim (bench/cltrace.c: per kernel name calls, device ms, device idle ms
# before it, enqueue and blocking host ms), one process per case so that each table holds one
# op; then the variants, kiln's DGEMM rate, the plain rows (f64 1024, f32 4096) and PyTorch
# (the first run of 2026-12-02 has them all; later steps are skipped when time runs out).
# Results under $OUT/r/linalg/. About 50 s.
#
# Variants: VARIANTS="name:family:p=v+p=v ..." (+ for the space) adds traced runs of LU, Cholesky, QR and solve
# with `kiln bench --tune`, as long as time is left (default: look-ahead on, ahead=2; leaf 32
# with and without it; look-ahead at nb 128).
VARIANTS=${VARIANTS-"ahead:linalg:route=1+ahead=2 leaf32:linalg:route=1+leaf=32 aleaf32:linalg:route=1+ahead=2+leaf=32 ahead128:linalg:route=1+ahead=2+nb=128"}
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
SHIM=$PWD/build-gpu/bench/libcltrace.so
R=$OUT/r/linalg; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc; mkdir -p /tmp/kc
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
# left N: seconds left of the script's 58
left() { echo $(( 58 - ($(date +%s) - t0) )); }
CK_FORK=no KILN_LOG=error timeout 15 build-gpu/tests/test_linalg > $R/test-linalg.txt 2>&1
echo "test_linalg rc=$?" >> $R/tests.txt
el tests
# tr NAME TIMEOUT [kiln bench options...]: one traced kiln bench process
tr() { local n=$1 to=$2; shift 2
  local l=$(left); [ $to -gt $l ] && to=$l
  [ $to -ge 3 ] || { echo "skipped $n" >> $R/times.txt; return; }
  CLTRACE_OUT=$R/trace-$n.txt CLTRACE_CSV=$R/trace-$n.csv LD_PRELOAD=$SHIM timeout -k 2 $to \
    $K bench --no-startup --json --reps 2 "$@" > $R/bench-$n.json 2>> $R/err.txt
  echo "$n rc=$?" >> $R/runs.txt; el $n; }
for c in lu cholesky qr solve inv; do
  tr $c 5 --dtype f64 --sizes 2^24 --filter linalg.$c
done
for v in $VARIANTS; do
  t=${v#*:}; t=${t//+/ }
  tr ${v%%:*} 6 --dtype f64 --sizes 2^24 --filter linalg.lu,linalg.cholesky,linalg.qr,linalg.solve \
    --tune "$t"
done
tr dgemm 4 --dtype f64 --sizes 2^24 --filter blas.gemm
tr rows-f64 5 --dtype f64 --sizes 2^20 --filter linalg.lu,linalg.cholesky,linalg.qr,linalg.solve,linalg.inv
tr rows-f32 5 --dtype f32 --sizes 2^24 --filter linalg.lu,linalg.cholesky,linalg.qr,linalg.solve,linalg.inv
l=$(left); [ $l -gt 10 ] && l=10
[ $l -ge 4 ] && timeout $l python3 bench/peers_torch.py --no-startup --reps 3 --dtype f64 \
  --sizes 2^24 --filter linalg.lu,linalg.cholesky,linalg.qr,linalg.solve,linalg.inv,blas.gemm \
  --out $R/torch.json >> $R/torch.log 2>&1
el torch
tar czf $OUT/r-linalg.tgz -C $OUT r/linalg
