#!/bin/bash
# eigh and svd on the H200 (docs/linalg.md, "Measuring eigh and svd"): run from the checkout
# root with build-gpu/ (a release build) present. The spectral suite, then kiln bench for
# linalg.eigh and linalg.svd (f64 at 1024 and 4096, f32 at 1024) with the host LAPACK the
# loader finds (Debian's reference LAPACK) and with OpenBLAS's (if unpacked under
# /tmp/opencl), one phase-timed call of each (KILN_LOG=debug: reduction, host stage,
# back-transformation), and PyTorch. Results under $OUT/r/eigsvd/. At most about 60 s.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/eigsvd; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc; mkdir -p /tmp/kc
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
{ nproc; lscpu | grep -E "Model name|^CPU\(s\)"; ldd $K | grep -E "lapack|blas"; } > $R/host.txt 2>&1
ob=/tmp/opencl/usr/lib/x86_64-linux-gnu/openblas-pthread
CK_FORK=no KILN_LOG=error timeout 15 build-gpu/tests/test_linalg_spectral > $R/test-linalg_spectral.txt 2>&1
echo "test_linalg_spectral rc=$?" >> $R/tests.txt
el tests
# b NAME TIMEOUT DTYPE SIZES FILTER REPS [env...]: the timeout shrinks to what is left of
# 57 s; KILN_LOG=debug adds the phase lines (reduction, host stage, back-transformation: one
# clFinish each) to $R/phases-NAME.txt; X holds extra kiln bench options (--tune ...)
b() { local n=$1 to=$2 d=$3 s=$4 f=$5 r=$6; shift 6
  local left=$(( 57 - ($(date +%s) - t0) )); [ $to -gt $left ] && to=$left
  [ $to -ge 2 ] || { echo "skipped $n" >> $R/times.txt; return; }
  env "$@" KILN_LOG=debug timeout $to $K bench --no-startup --json --reps $r --dtype $d \
    --sizes $s --filter $f $X > $R/bench-$n.json 2> $R/phases-$n.txt
  echo "$n rc=$?" >> $R/runs.txt; el $n; }
OB="LD_LIBRARY_PATH=$ob:$LD_LIBRARY_PATH"
ES=linalg.eigh,linalg.svd
# defaults: eigh's tridiagonal vectors by MRRR on every host thread (dstemr split by index
# ranges), svd's by dbdsdc with OpenBLAS, dbdsvdx split over the host threads otherwise
[ -d $ob ] && b ob-1k 8 f64 2^20 $ES 2 $OB
b ref-1k 8 f64 2^20 $ES 2
timeout 12 python3 bench/peers_torch.py --no-startup --reps 3 --dtype f64 --sizes 2^20 \
  --filter $ES --out $R/torch.json >> $R/torch.log 2>&1
el torch
[ -d $ob ] && b ob-eigh-4k 6 f64 2^24 linalg.eigh 1 $OB
[ -d $ob ] && b ob-svd-4k 12 f64 2^24 linalg.svd 1 $OB
b ref-eigh-4k 5 f64 2^24 linalg.eigh 1
# the host routines against each other (KILN_DEBUG_LINALG_HOST)
if [ -d $ob ]; then
  b ob-stedc-1k 4 f64 2^20 linalg.eigh 2 $OB KILN_DEBUG_LINALG_HOST=stedc
  b ob-bdsvdx-1k 4 f64 2^20 linalg.svd 2 $OB KILN_DEBUG_LINALG_HOST=bdsvdx
  b ob-bdsvdx-4k 10 f64 2^24 linalg.svd 1 $OB KILN_DEBUG_LINALG_HOST=bdsvdx
fi
X="--tune linalg:nb=32" b nb32-1k 4 f64 2^20 $ES 2 $OB
b ref-f32-1k 4 f32 2^20 $ES 2 $OB
# per kernel: the cltrace shim of the merged tree (bench/cltrace.c), if built
SHIM=$PWD/build-gpu/bench/libcltrace.so
if [ -f $SHIM ]; then
  b trace-1k 6 f64 2^20 $ES 1 $OB LD_PRELOAD=$SHIM CLTRACE_OUT=$R/trace-1k.txt \
    CLTRACE_CSV=$R/trace-1k.csv
fi
tar czf $OUT/r-eigsvd.tgz -C $OUT r/eigsvd
