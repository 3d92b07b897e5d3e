#!/bin/bash
# linalg on the H200 (docs/linalg.md, "Measuring"): run from the checkout root with build-gpu/
# (a release build) present. Tests, then `kiln bench` per panel route and block size next to
# PyTorch, the DGEMM rate of the same run, and eigh/svd. Results under $OUT/r/linalg/.
#
# Routes (the linalg tuner family, kiln bench --tune 'linalg:route=R nb=NB'): route=1 kiln's
# device panel kernels (the default on GPUs since the first H200 run), route=2 the hybrid host
# panel (LAPACKE). The host LAPACK is whatever
# liblapack.so.3 the loader finds (Debian's reference LAPACK from .device/). If
# .device/ holds libopenblas0-pthread_*.deb (Debian bookworm, `apt-get download
# libopenblas0-pthread`), the script also times the host route with OpenBLAS's LAPACK.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/linalg; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc; mkdir -p /tmp/kc
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
# ok: whether a step still fits in the script's 100 s (skipped steps are listed in times.txt)
ok() { [ $(( $(date +%s)-t0 )) -le $1 ] || { echo "skipped $2" >> $R/times.txt; return 1; }; }
{ nproc; lscpu | grep -E "Model name|^CPU\(s\)"; ldd $K | grep -E "lapack|blas"; } > $R/host.txt 2>&1
CASES=linalg.lu,linalg.cholesky,linalg.solve,linalg.inv,linalg.qr
for t in linalg linalg_spectral; do
  CK_FORK=no KILN_LOG=error timeout 25 build-gpu/tests/test_$t > $R/test-$t.txt 2>&1
  echo "test_$t rc=$?" >> $R/tests.txt
done
el tests
# b NAME TIMEOUT DTYPES SIZES FILTER [kiln bench options...]: the timeout shrinks to what is
# left of 98 s (kiln bench writes its JSON at the end: a run cut short leaves nothing)
b() { local n=$1 to=$2 d=$3 s=$4 f=$5; shift 5
  local left=$(( 98 - ($(date +%s) - t0) )); [ $to -gt $left ] && to=$left
  [ $to -ge 3 ] || { echo "skipped $n" >> $R/times.txt; return; }
  timeout $to $K bench --no-startup --json --reps 2 --dtype $d --sizes $s --filter $f "$@" \
    > $R/bench-$n.json 2>> $R/err.txt; echo "$n rc=$?" >> $R/runs.txt; el $n; }
b default 20 f32,f64 2^20,2^24 $CASES
for nb in 32 16; do b host-nb$nb 12 f64 2^20,2^24 $CASES --tune "linalg:route=2 nb=$nb"; done
b dgemm 6 f64 2^24 blas.gemm
ok 70 torch && timeout 15 python3 bench/peers_torch.py --no-startup --reps 5 --dtype f32,f64 \
  --sizes 2^20,2^24 --filter $CASES,blas.gemm --out $R/torch.json >> $R/torch.log 2>&1
el torch
b spectral 8 f64 2^20 linalg.eigh,linalg.svd
ok 88 torch-spectral && timeout 5 python3 bench/peers_torch.py --no-startup --reps 3 --dtype f64 \
  --sizes 2^20 --filter linalg.eigh,linalg.svd --out $R/torch-spectral.json >> $R/torch.log 2>&1
el spectral
ob=/tmp/opencl/usr/lib/x86_64-linux-gnu/openblas-pthread
if [ -d $ob ]; then
  LD_LIBRARY_PATH=$ob:$LD_LIBRARY_PATH b openblas-spectral 8 f64 2^20 linalg.eigh,linalg.svd
  LD_LIBRARY_PATH=$ob:$LD_LIBRARY_PATH b openblas-nb32 10 f64 2^20,2^24 $CASES --tune 'linalg:route=2 nb=32' 
fi
b host-nb64 10 f64 2^20,2^24 $CASES --tune "linalg:route=2 nb=64"
tar czf $OUT/r-linalg.tgz -C $OUT r/linalg
