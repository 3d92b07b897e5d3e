#!/bin/bash
# Issue 18: the QR panel over many work-groups (qr_panel_grid, the linalg family's pwg) on the
# H200. Run from the checkout root with build-gpu/ present (round.sh copies build-gpu-t/'s test
# binaries in). test_linalg_spectral's grid case first (the kernel's groups exchanging through
# global memory are checked only on a GPU), then QR at 1024 and 4096 (f64, f32) with the
# default (pwg 1024: the grid panel) against pwg=1 (qr_panel and its 8-column recursion; PWG1=0
# leaves it out), the grid's shapes in VARIANTS ("name:KILN_DEBUG_QR_GRID value" ..., f64
# 4096), one traced QR (bench/cltrace.c), PyTorch for the same cases (TORCH=0 leaves it out),
# then the whole linalg_spectral suite. Results under $OUT/r/qrgrid/.
VARIANTS=${VARIANTS-"l256r16:local=256,rows=16 not:t=0"}
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/qrgrid; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-qr; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
CK_FORK=no KILN_LOG=error CK_RUN_CASE=grid timeout 90 build-gpu/tests/test_linalg_spectral \
  > $R/test-grid.txt 2>&1; echo "test grid rc=$?" >> $R/runs.txt; el test-grid
# b NAME TIMEOUT kiln-bench-options...
b() { local n=$1 to=$2; shift 2
  timeout -k 1 $to $K bench --no-startup --json --reps 3 "$@" > $R/bench-$n.json 2>> $R/err.txt
  echo "$n rc=$?" >> $R/runs.txt; el $n; }
b grid 60 --dtype f64,f32 --sizes 2^20,2^24 --filter linalg.qr
[ "${PWG1-1}" = 0 ] || b pwg1 40 --dtype f64 --sizes 2^20,2^24 --filter linalg.qr --tune "linalg:pwg=1"
for v in $VARIANTS; do
  KILN_DEBUG_QR_GRID=${v#*:} b ${v%%:*} 25 --dtype f64 --sizes 2^24 --filter linalg.qr
done
CLTRACE_OUT=$R/trace-qr.txt LD_PRELOAD=$PWD/build-gpu/bench/libcltrace.so timeout -k 1 30 \
  $K bench --no-startup --json --reps 2 --dtype f64 --sizes 2^24 --filter linalg.qr \
  > $R/bench-trace.json 2>> $R/err.txt; el trace
[ "${TORCH-1}" = 0 ] || timeout 60 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^20,2^24 \
  --filter linalg.qr > $R/torch.json 2>> $R/err.txt; el torch
CK_FORK=no KILN_LOG=error timeout 150 build-gpu/tests/test_linalg_spectral \
  > $R/test-all.txt 2>&1; echo "test all rc=$?" >> $R/runs.txt; el test-all
