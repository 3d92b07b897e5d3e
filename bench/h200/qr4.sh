#!/bin/bash
# Issue 18: qr_panel_grid with its group sums read four at a time and row j read by one row set
# (into local memory) instead of every lane: QR f64 2048/4096, f32 4096, a trace at 4096 f64,
# PyTorch's QR, then test_linalg_spectral. Run from the checkout root with build-gpu/ present:
# NAMES=qr4 bash bench/h200/round.sh. Results under $OUT/r/qr4/.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/qr4; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-qr4; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
b() { local n=$1 to=$2; shift 2
  timeout -k 1 $to $K bench --no-startup --json --reps 5 "$@" > $R/bench-$n.json 2>> $R/err.txt
  echo "$n rc=$?" >> $R/runs.txt; el $n; }
b def 40 --dtype f64 --sizes 2^22,2^24 --filter linalg.qr
b f32 40 --dtype f32 --sizes 2^22,2^24 --filter linalg.qr
CLTRACE_OUT=$R/trace-qr.txt LD_PRELOAD=$PWD/build-gpu/bench/libcltrace.so timeout -k 1 30 \
  $K bench --no-startup --json --reps 2 --dtype f64 --sizes 2^24 --filter linalg.qr \
  > $R/bench-trace-qr.json 2>> $R/err.txt; el trace
timeout 60 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^22,2^24 \
  --filter linalg.qr > $R/torch.txt 2>> $R/err.txt; el torch
CK_FORK=no KILN_LOG=error timeout 150 build-gpu/tests/test_linalg_spectral \
  > $R/test-linalg_spectral.txt 2>&1; echo "test linalg_spectral rc=$?" >> $R/runs.txt; el test
