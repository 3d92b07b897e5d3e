#!/bin/bash
# Issue 18: QR (Q and R) in two levels (256-column outer blocks, their T assembled from the
# 64-column panels', the outer products on the large GEMM kernel, V^T C as one batched launch
# of row chunks there) against one level (--tune "linalg:gemm=2"); f64 and f32 at 2048 and
# 4096, a trace of the default at 4096 f64 (with its per-command CSV), then
# test_linalg_spectral and test_linalg. Run from the checkout root with build-gpu/ present:
# NAMES=qr3 bash bench/h200/round.sh. Results under $OUT/r/qr3/.
source bench/h200/common.sh qr3
b one 40 --dtype f64 --sizes 2^22,2^24 --filter linalg.qr --tune "linalg:gemm=2"
b nb256 40 --dtype f64 --sizes 2^22,2^24 --filter linalg.qr
b f32 40 --dtype f32 --sizes 2^22,2^24 --filter linalg.qr
b f32-one 40 --dtype f32 --sizes 2^22,2^24 --filter linalg.qr --tune "linalg:gemm=2"
# one call traced (--reps 1: two warm-ups and the call), every command in the CSV
CLTRACE_OUT=$R/trace-qr.txt CLTRACE_CSV=$R/trace-qr.csv LD_PRELOAD=$PWD/build-gpu/bench/libcltrace.so \
  timeout -k 1 30 $K bench --no-startup --json --reps 1 --dtype f64 --sizes 2^24 \
  --filter linalg.qr > $R/bench-trace-qr.json 2>> $R/err.txt; el trace
gzip $R/trace-qr.csv
tests 150 linalg_spectral linalg
