#!/bin/bash
# Issue 18: LU, solve and inverse (f64 4096 and 1024) over the linalg family's block size
# (nb 64, 128, 256) and update GEMM (gemm=2 gemm_tile, gemm=3 products of 256 and more on the
# large kernel), traces of LU and inverse at the defaults and at nb=256 gemm=3, then
# test_linalg_spectral and test_linalg. Run from the checkout root with build-gpu/ present:
# NAMES=lunb bash bench/h200/round.sh. Results under $OUT/r/lunb/.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/lunb; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-lunb; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
F=linalg.lu,linalg.solve,linalg.inv
b() { local n=$1 to=$2; shift 2
  timeout -k 1 $to $K bench --no-startup --json --reps 5 "$@" > $R/bench-$n.json 2>> $R/err.txt
  echo "$n rc=$?" >> $R/runs.txt; el $n; }
b default 40 --dtype f64 --sizes 2^20,2^24 --filter $F
for nb in 128 256; do for g in 2 3; do
  b nb$nb-g$g 40 --dtype f64 --sizes 2^20,2^24 --filter $F --tune "linalg:nb=$nb gemm=$g"
done; done
b nb64-g3 30 --dtype f64 --sizes 2^24 --filter $F --tune "linalg:nb=64 gemm=3"
tr() { local n=$1; shift
  CLTRACE_OUT=$R/trace-$n.txt LD_PRELOAD=$PWD/build-gpu/bench/libcltrace.so timeout -k 1 30 \
    $K bench --no-startup --json --reps 2 --dtype f64 --sizes 2^24 "$@" \
    > $R/bench-trace-$n.json 2>> $R/err.txt; el trace-$n; }
tr inv --filter linalg.inv
tr lu256 --filter linalg.lu --tune "linalg:nb=256 gemm=3"
tr inv256 --filter linalg.inv --tune "linalg:nb=256 gemm=3"
for t in linalg_spectral linalg; do
  CK_FORK=no KILN_LOG=error timeout 150 build-gpu/tests/test_$t \
    > $R/test-$t.txt 2>&1; echo "test $t rc=$?" >> $R/runs.txt; el test-$t
done
