#!/bin/bash
# Issue 18: the LU panel over many work-groups (lu_panel_grid, the linalg family's pwg) on the
# H200. Run from the checkout root with build-gpu/ present. Times LU, solve and inverse (f64,
# 1024 and 4096) with pwg=1024 (every compute unit) against pwg=1 (lu_panel, the
# default until measured) and pwg=32/64, f32 beside, one traced LU (bench/cltrace.c), PyTorch for the
# same cases, then test_linalg's grid case. Results under $OUT/r/lugrid/.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/lugrid; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-lu; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
F=linalg.lu,linalg.solve,linalg.inv
# b NAME TIMEOUT kiln-bench-options...
b() { local n=$1 to=$2; shift 2
  timeout -k 1 $to $K bench --no-startup --json --reps 3 "$@" > $R/bench-$n.json 2>> $R/err.txt
  echo "$n rc=$?" >> $R/runs.txt; el $n; }
b grid 40 --dtype f64 --sizes 2^20,2^24 --filter $F --tune "linalg:pwg=1024"
b pwg1 25 --dtype f64 --sizes 2^20,2^24 --filter $F --tune "linalg:pwg=1"
b pwg32 20 --dtype f64 --sizes 2^24 --filter linalg.lu --tune "linalg:pwg=32"
b pwg64 20 --dtype f64 --sizes 2^24 --filter linalg.lu --tune "linalg:pwg=64"
b ahead 20 --dtype f64 --sizes 2^24 --filter linalg.lu --tune "linalg:pwg=1024 ahead=2"
b f32 30 --dtype f32 --sizes 2^24 --filter $F --tune "linalg:pwg=1024"
CLTRACE_OUT=$R/trace-lu.txt LD_PRELOAD=$PWD/build-gpu/bench/libcltrace.so timeout -k 1 20 \
  $K bench --no-startup --json --reps 2 --dtype f64 --sizes 2^24 --filter linalg.lu \
  --tune "linalg:pwg=1024" \
  > $R/bench-trace.json 2>> $R/err.txt; el trace
timeout 60 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^20,2^24 \
  --filter $F > $R/torch.json 2>> $R/err.txt; el torch
CK_FORK=no KILN_LOG=error CK_RUN_CASE=grid timeout 60 build-gpu/tests/test_linalg \
  > $R/test-grid.txt 2>&1; echo "test grid rc=$?" >> $R/runs.txt; el test
