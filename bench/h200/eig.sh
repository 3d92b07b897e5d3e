#!/bin/bash
# eigh and svd on the H200, where the time goes (docs/linalg.md, "Measuring eigh and svd"):
# run from the checkout root with build-gpu/ (a release build) present, at most 58 s. f64
# unless named. Each kiln run logs its phases (KILN_LOG=debug: reduction, host stage,
# back-transformation) to $R/phases-NAME.txt; the traced ones (bench/cltrace.c) also give a
# per-kernel table in $R/trace-NAME.txt. Order: what matters most first, PyTorch and the
# suite last (PyTorch's known figures: eigh 11.6 / 109 ms, svd 91 / 1642 ms at 1024 / 4096).
# Variants: KILN_DEBUG_LINALG_HOST (eigh: stemr, one dstemr call per thread, against the
# default dlarre once and dlarrv per thread; threads=N; svd: bdsvdx, the threaded dbdsvdx,
# against the default MRRR on the Golub-Kahan matrix), OpenBLAS's LAPACK through
# LD_LIBRARY_PATH (svd: dbdsdc). Results under $OUT/r/eig/.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
SHIM=$PWD/build-gpu/bench/libcltrace.so
R=$OUT/r/eig; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc; mkdir -p /tmp/kc
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
left() { echo $(( 58 - ($(date +%s) - t0) )); }
{ nproc; cat /sys/fs/cgroup/cpu.max; lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|MHz"
  ldd $K | grep -E "lapack|blas"; } > $R/host.txt 2>&1
ob=/tmp/opencl/usr/lib/x86_64-linux-gnu/openblas-pthread
ls $ob >> $R/host.txt 2>&1
# b NAME TIMEOUT DTYPE SIZES FILTER REPS TRACE [env...]: one kiln bench process (TRACE 1: under
# cltrace); the timeout shrinks to what is left; X holds extra kiln bench options (--tune ...)
b() { local n=$1 to=$2 d=$3 s=$4 f=$5 r=$6 tr=$7; shift 7
  local l=$(left); [ $to -gt $l ] && to=$l
  [ $to -ge 2 ] || { echo "skipped $n" >> $R/times.txt; return; }
  local pre=""; [ $tr = 1 ] && pre="CLTRACE_OUT=$R/trace-$n.txt LD_PRELOAD=$SHIM"
  env $pre "$@" KILN_LOG=debug timeout -k 1 $to $K bench --no-startup --json --reps $r \
    --dtype $d --sizes $s --filter $f $X > $R/bench-$n.json 2> $R/phases-$n.txt
  echo "$n rc=$?" >> $R/runs.txt; el $n; }
E=linalg.eigh; S=linalg.svd
b eigh-1k 20 f64 2^20 $E 3 1
b eigh-4k 7 f64 2^24 $E 1 1
b svd-1k 4 f64 2^20 $S 2 1
b svd-4k 13 f64 2^24 $S 1 1
# host stage variants at 1024 (phases tell the host stage apart)
b eigh-1k-stemr 3 f64 2^20 $E 2 0 KILN_DEBUG_LINALG_HOST=stemr
b eigh-1k-t1 3 f64 2^20 $E 2 0 KILN_DEBUG_LINALG_HOST=threads=1
b eigh-1k-t4 3 f64 2^20 $E 2 0 KILN_DEBUG_LINALG_HOST=threads=4
b eigh-4k-stemr 5 f64 2^24 $E 1 0 KILN_DEBUG_LINALG_HOST=stemr
# the reduction's panel width (default 64)
X="--tune linalg:nb=32" b eigh-4k-nb32 4 f64 2^24 $E 1 0
X="--tune linalg:nb=128" b eigh-4k-nb128 4 f64 2^24 $E 1 0
b svd-1k-bdsvdx 4 f64 2^20 $S 1 0 KILN_DEBUG_LINALG_HOST=bdsvdx
b svd-1k-ob 4 f64 2^20 $S 1 0 KILN_DEBUG_LINALG_HOST=bdsdc LD_LIBRARY_PATH=$ob:$LD_LIBRARY_PATH
# the reductions' launch shapes (defaults nchunk 64, lsym 128, lfin 512)
b eigh-1k-nch16 3 f64 2^20 $E 2 0 KILN_DEBUG_LINALG_HOST=nchunk=16
b eigh-1k-lfin128 3 f64 2^20 $E 2 0 KILN_DEBUG_LINALG_HOST=lfin=128
b eigh-4k-nch128 4 f64 2^24 $E 1 0 KILN_DEBUG_LINALG_HOST=nchunk=128
b f32-1k 4 f32 2^20 $E,$S 1 0
l=$(left); [ $l -gt 9 ] && l=9
[ $l -ge 4 ] && timeout $l python3 bench/peers_torch.py --no-startup --reps 3 --dtype f64 \
  --sizes 2^20 --filter $E,$S --out $R/torch.json >> $R/torch.log 2>&1
el torch
l=$(left); [ $l -gt 8 ] && l=8
[ $l -ge 3 ] && CK_FORK=no KILN_LOG=error timeout $l build-gpu/tests/test_linalg_spectral \
  > $R/test-linalg_spectral.txt 2>&1
echo "test_linalg_spectral rc=$?" >> $R/tests.txt
el tests
tar czf $OUT/r-eig.tgz -C $OUT r/eig
