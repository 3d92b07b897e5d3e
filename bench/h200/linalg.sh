#!/bin/bash
# linalg on the H200 (docs/linalg.md, "Where the time goes: cltrace"): run from the checkout
# root with build-gpu/ (a release build) present. Each factorization at 4096 f64 under the
# cltrace shim (bench/cltrace.c: per kernel name calls, device ms, device idle ms
# before it, enqueue and blocking host ms), one process per case so that each table holds one
# op; then test_linalg, the variants, inverse and kiln's DGEMM rate (PyTorch and the 1024 rows are in the
# first run of 2026-12-02: docs/linalg.md). Later steps are skipped when time runs out.
# Results under $OUT/r/linalg/. At most 43 s (the closing run gives each script 45).
#
# Variants: VARIANTS="name:family:p=v+p=v ..." (+ for the space) adds traced runs of LU and
# Cholesky with `kiln bench --tune`, as long as time is left (default: look-ahead on, ahead=2;
# e.g. leaf32:linalg:route=1+leaf=32, nb128:linalg:route=1+nb=128).
VARIANTS=${VARIANTS-"ahead:linalg:route=1+ahead=2"}
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
SHIM=$PWD/build-gpu/bench/libcltrace.so
R=$OUT/r/linalg; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc; mkdir -p /tmp/kc
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
# left: seconds left of the script's 43 (it runs under timeout 45)
left() { echo $(( 43 - ($(date +%s) - t0) )); }
# tr NAME TIMEOUT [kiln bench options...]: one traced kiln bench process
tr() { local n=$1 to=$2; shift 2
  local l=$(left); [ $to -gt $l ] && to=$l
  [ $to -ge 3 ] || { echo "skipped $n" >> $R/times.txt; return; }
  CLTRACE_OUT=$R/trace-$n.txt CLTRACE_CSV=$R/trace-$n.csv LD_PRELOAD=$SHIM timeout -k 1 $to \
    $K bench --no-startup --json --reps 2 "$@" > $R/bench-$n.json 2>> $R/err.txt
  echo "$n rc=$?" >> $R/runs.txt; el $n; }
tr lu 5 --dtype f64 --sizes 2^24 --filter linalg.lu
tr cholesky 5 --dtype f64 --sizes 2^24 --filter linalg.cholesky
tr qr 6 --dtype f64 --sizes 2^24 --filter linalg.qr
tr solve 5 --dtype f64 --sizes 2^24 --filter linalg.solve
# the suite on the GPU: the panel kernels, tri_inv, gemm_tile and the look-ahead
CK_FORK=no KILN_LOG=error timeout 10 build-gpu/tests/test_linalg > $R/test-linalg.txt 2>&1
echo "test_linalg rc=$?" >> $R/tests.txt
el tests
for v in $VARIANTS; do
  t=${v#*:}; t=${t//+/ }
  tr ${v%%:*} 6 --dtype f64 --sizes 2^24 --filter linalg.lu,linalg.cholesky --tune "$t"
done
tr inv 5 --dtype f64 --sizes 2^24 --filter linalg.inv
tr dgemm 4 --dtype f64 --sizes 2^24 --filter blas.gemm
tar czf $OUT/r-linalg.tgz -C $OUT r/linalg
