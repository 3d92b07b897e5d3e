#!/bin/bash
# Issue 18, session 14's last LU change: lu_panel_grid's update by a jump into straight-line
# code and its trees by fours. LU, solve, inverse (f64 1024/4096, f32 4096), a trace of LU at
# 4096 f64, then test_linalg and test_linalg_complex. Run from the checkout root with
# build-gpu/ present: NAMES=lufin bash bench/h200/round.sh. Results under $OUT/r/lufin/.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/lufin; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-lufin; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
F=linalg.lu,linalg.solve,linalg.inv
b() { local n=$1 to=$2; shift 2
  timeout -k 1 $to $K bench --no-startup --json --reps 5 "$@" > $R/bench-$n.json 2>> $R/err.txt
  echo "$n rc=$?" >> $R/runs.txt; el $n; }
b def 40 --dtype f64 --sizes 2^20,2^24 --filter $F
b f32 30 --dtype f32 --sizes 2^24 --filter $F
CLTRACE_OUT=$R/trace-lu.txt LD_PRELOAD=$PWD/build-gpu/bench/libcltrace.so timeout -k 1 30 \
  $K bench --no-startup --json --reps 2 --dtype f64 --sizes 2^24 --filter linalg.lu \
  > $R/bench-trace-lu.json 2>> $R/err.txt; el trace
for t in linalg linalg_complex; do
  CK_FORK=no KILN_LOG=error timeout 100 build-gpu/tests/test_$t \
    > $R/test-$t.txt 2>&1; echo "test $t rc=$?" >> $R/runs.txt; el test-$t
done
