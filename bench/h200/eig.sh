#!/bin/bash
# eigh and svd on the H200, where the time goes (docs/linalg.md, "Measuring eigh and svd"):
# run from the checkout root with build-gpu/ (a release build) present, at most 58 s. f64
# unless named. Each kiln run logs its phases (KILN_LOG=debug: reduction, host stage,
# back-transformation) to $R/phases-NAME.txt; the traced ones (bench/cltrace.c) also give a
# per-kernel table in $R/trace-NAME.txt. Order: what matters most first, PyTorch and the
# suite last (PyTorch's figures: eigh 11.0 / 109 ms, svd 90.7 / 1642 ms at 1024 / 4096; round 2
# times PyTorch's eigh at 4096 in the same run).
# Round 1 (variants then: dlarre/dlarrv against stemr, threads=1/4, bdsvdx, OpenBLAS's
# dbdsdc, nb 32/128, nchunk, lfin) is in docs/linalg.md. Round 2's variants through
# KILN_DEBUG_LINALG_HOST: rtile (the reductions' GEMM on gemm_tile against CLBlast), lsym=N,
# bdsvdx (the threaded dbdsvdx against MRRR on the Golub-Kahan matrix); --tune linalg:nb=32.
# Results under $OUT/r/eig/.
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
# round 2 (2026-12-02, third session): the defaults, then the variants of what changed
b eigh-1k 20 f64 2^20 $E 3 0
b eigh-4k 6 f64 2^24 $E 2 0
b svd-4k 9 f64 2^24 $S 1 0
b svd-1k 4 f64 2^20 $S 2 0
# the reductions' trailing GEMM on gemm_tile (default now CLBlast)
b eigh-4k-rtile 4 f64 2^24 $E 1 0 KILN_DEBUG_LINALG_HOST=rtile
b svd-4k-rtile 6 f64 2^24 $S 1 0 KILN_DEBUG_LINALG_HOST=rtile
# panel width 32 (default 64), symv lanes 256 / 64 (default 128)
X="--tune linalg:nb=32" b eigh-4k-nb32 4 f64 2^24 $E 1 0
X="--tune linalg:nb=32" b svd-4k-nb32 6 f64 2^24 $S 1 0
b eigh-4k-lsym256 4 f64 2^24 $E 1 0 KILN_DEBUG_LINALG_HOST=lsym=256
b eigh-4k-lsym64 4 f64 2^24 $E 1 0 KILN_DEBUG_LINALG_HOST=lsym=64
b svd-1k-bdsvdx 3 f64 2^20 $S 1 0 KILN_DEBUG_LINALG_HOST=bdsvdx
b svd-4k-tr 7 f64 2^24 $S 1 1
b f32-1k 4 f32 2^20 $E,$S 1 0
l=$(left); [ $l -gt 9 ] && l=9
[ $l -ge 4 ] && timeout $l python3 bench/peers_torch.py --no-startup --reps 1 --dtype f64 \
  --sizes 2^24 --filter $E --out $R/torch.json >> $R/torch.log 2>&1
el torch
l=$(left); [ $l -gt 8 ] && l=8
[ $l -ge 3 ] && CK_FORK=no KILN_LOG=error timeout $l build-gpu/tests/test_linalg_spectral \
  > $R/test-linalg_spectral.txt 2>&1
echo "test_linalg_spectral rc=$?" >> $R/tests.txt
el tests
tar czf $OUT/r-eig.tgz -C $OUT r/eig
