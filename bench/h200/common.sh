#!/bin/bash
# Sourced by the bench/h200 scripts: `source bench/h200/common.sh NAME` sets K (the kiln tool),
# R ($OUT/r/NAME, the results) and a kiln cache directory of its own, and defines
#   el NAME                     the seconds since the start into $R/times.txt
#   b NAME TIMEOUT ARGS...      kiln bench --no-startup --json --reps 5 ARGS > $R/bench-NAME.json
#   trace NAME ARGS...           kiln bench under cltrace (--reps 2, f64, 2^24) into $R/trace-NAME.txt
#   trace_at NAME DTYPE SIZE REPS ARGS...  the same at another dtype, size and repetitions
#   tests TIMEOUT SUITE...      build-gpu/tests/test_SUITE > $R/test-SUITE.txt
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/$1; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-$1; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s)
el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
b() { local n=$1 to=$2; shift 2
  timeout -k 1 $to $K bench --no-startup --json --reps 5 "$@" > $R/bench-$n.json 2>> $R/err.txt
  echo "$n rc=$?" >> $R/runs.txt; el $n; }
trace() { local n=$1; shift; trace_at $n f64 2^24 2 "$@"; }
trace_at() { local n=$1 dt=$2 sz=$3 reps=$4; shift 4
  CLTRACE_OUT=$R/trace-$n.txt LD_PRELOAD=$PWD/build-gpu/bench/libcltrace.so timeout -k 1 30 \
    $K bench --no-startup --json --reps $reps --dtype $dt --sizes $sz "$@" \
    > $R/bench-trace-$n.json 2>> $R/err.txt; el trace-$n; }
tests() { local to=$1 t; shift
  for t in "$@"; do
    CK_FORK=no KILN_LOG=error timeout $to build-gpu/tests/test_$t > $R/test-$t.txt 2>&1
    echo "test $t rc=$?" >> $R/runs.txt; el test-$t
  done; }
