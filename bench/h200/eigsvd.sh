#!/bin/bash
# eigh and svd on the H200 (docs/linalg.md, "Measuring eigh and svd"): run from the checkout
# root with build-gpu/ (a release build) present, under `timeout 45`. Most important first:
# the spectral suite (the blocked reductions' kernels), then kiln bench for linalg.eigh and
# linalg.svd in f64 at 1024 and 4096 with the host LAPACK the loader finds, PyTorch at 1024,
# OpenBLAS's LAPACK (if unpacked under /tmp/opencl) against the reference one, f32.
# KILN_LOG=debug adds the phase lines (reduction, host stage, back-transformation) to
# $R/phases-NAME.txt, also for runs the timeout cuts short. Results under $OUT/r/eigsvd/.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/eigsvd; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc; mkdir -p /tmp/kc
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
{ nproc; lscpu | grep -E "Model name|^CPU\(s\)"; ldd $K | grep -E "lapack|blas"; } > $R/host.txt 2>&1
ob=/tmp/opencl/usr/lib/x86_64-linux-gnu/openblas-pthread
CK_FORK=no KILN_LOG=error timeout 12 build-gpu/tests/test_linalg_spectral > $R/test-linalg_spectral.txt 2>&1
echo "test_linalg_spectral rc=$?" >> $R/tests.txt
el tests
# b NAME TIMEOUT DTYPE SIZES FILTER REPS [env...]: the timeout shrinks to what is left of
# 40 s; X holds extra kiln bench options (--tune ...)
b() { local n=$1 to=$2 d=$3 s=$4 f=$5 r=$6; shift 6
  local left=$(( 40 - ($(date +%s) - t0) )); [ $to -gt $left ] && to=$left
  [ $to -ge 2 ] || { echo "skipped $n" >> $R/times.txt; return; }
  env "$@" KILN_LOG=debug timeout $to $K bench --no-startup --json --reps $r --dtype $d \
    --sizes $s --filter $f $X > $R/bench-$n.json 2> $R/phases-$n.txt
  echo "$n rc=$?" >> $R/runs.txt; el $n; }
ES=linalg.eigh,linalg.svd
b 1k 7 f64 2^20 $ES 2
b eigh-4k 5 f64 2^24 linalg.eigh 1
left=$(( 40 - ($(date +%s) - t0) )); [ $left -gt 8 ] && left=8
[ $left -ge 3 ] && timeout $left python3 bench/peers_torch.py --no-startup --reps 3 --dtype f64 \
  --sizes 2^20 --filter $ES --out $R/torch.json >> $R/torch.log 2>&1
el torch
b svd-4k 6 f64 2^24 linalg.svd 1
# the other host LAPACK: OpenBLAS when the default is the reference one, and back
if [ -d $ob ] && ! ldd $K | grep -q openblas; then
  b ob-1k 5 f64 2^20 $ES 1 LD_LIBRARY_PATH=$ob:$LD_LIBRARY_PATH
fi
b f32-1k 4 f32 2^20 $ES 1
tar czf $OUT/r-eigsvd.tgz -C $OUT r/eigsvd
