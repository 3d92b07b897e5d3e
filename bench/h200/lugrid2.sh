#!/bin/bash
# Issue 18, second run: LU, solve, inverse with lu_panel_grid as the default (f64, 1024 and
# 4096), then QR's update GEMM and block size (the regression from 300 to 394 ms at 4096:
# --tune "linalg:gemm=1" CLBlast, gemm=2 kiln's gemm_tile, nb) and Cholesky. Results under
# $OUT/r/lugrid2/ (bench-<label>.json, runs.txt). Under 40 s.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/lugrid2; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-lu2; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s)
b() { local n=$1 to=$2; shift 2
  timeout -k 1 $to $K bench --no-startup --json --reps 3 "$@" > $R/bench-$n.json 2>> $R/err.txt
  echo "$n rc=$? $(( $(date +%s)-t0 ))s" >> $R/runs.txt; }
b def 20 --dtype f64 --sizes 2^20,2^24 --filter linalg.lu,linalg.solve,linalg.inv,linalg.cholesky
b qr 8 --dtype f64 --sizes 2^24 --filter linalg.qr
b qr-clblast 8 --dtype f64 --sizes 2^24 --filter linalg.qr --tune "linalg:gemm=1"
b qr-nb32 8 --dtype f64 --sizes 2^24 --filter linalg.qr --tune "linalg:nb=32"
b qr-nb128 8 --dtype f64 --sizes 2^24 --filter linalg.qr --tune "linalg:nb=128"
# look-ahead with the panel on part of the device, so that the trailing update runs beside it
b ahead32 8 --dtype f64 --sizes 2^24 --filter linalg.lu --tune "linalg:pwg=32 ahead=2"
b ahead16 8 --dtype f64 --sizes 2^24 --filter linalg.lu --tune "linalg:pwg=16 ahead=2"
CK_FORK=no KILN_LOG=error CK_RUN_CASE=grid timeout 30 build-gpu/tests/test_linalg \
  > $R/test-grid.txt 2>&1; echo "test grid rc=$?" >> $R/runs.txt
