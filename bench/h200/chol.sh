#!/bin/bash
# Issue 18: Cholesky with chol_inv (the diagonal block factored and inverted in one launch) on
# the H200. Run from the checkout root with build-gpu/ present: NAMES=chol bash
# bench/h200/round.sh. Times cholesky (f64 1024 and 4096, f32 4096) on gemm_tile (gemm=2) and
# with the large GEMM kernel for the big updates (gemm=3), traces both (bench/cltrace.c), keeps
# the linalg programs' PTX, then runs test_linalg and test_linalg_complex. PyTorch's figures for
# the same cases come from bench/h200/lalarge.sh's run. Results under $OUT/r/chol/.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/chol; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-chol; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
F=linalg.cholesky
# b NAME TIMEOUT kiln-bench-options...
b() { local n=$1 to=$2; shift 2
  timeout -k 1 $to $K bench --no-startup --json --reps 5 "$@" > $R/bench-$n.json 2>> $R/err.txt
  echo "$n rc=$?" >> $R/runs.txt; el $n; }
b tile 30 --dtype f64,f32 --sizes 2^20,2^24 --filter $F --tune "linalg:gemm=2"
b large 30 --dtype f64,f32 --sizes 2^20,2^24 --filter $F --tune "linalg:gemm=3"
tr() { local n=$1; shift
  CLTRACE_OUT=$R/trace-$n.txt LD_PRELOAD=$PWD/build-gpu/bench/libcltrace.so timeout -k 1 30 \
    $K bench --no-startup --json --reps 2 --dtype f64 --sizes 2^24 --filter $F "$@" \
    > $R/bench-trace-$n.json 2>> $R/err.txt; el trace-$n; }
tr tile --tune "linalg:gemm=2"
tr large --tune "linalg:gemm=3"
mkdir -p $R/ptx; for f in $(grep -rl "chol_inv" $KILN_CACHE_DIR | head -4); do cp "$f" $R/ptx/; done
tar czf $R/ptx.tgz -C $R ptx && rm -rf $R/ptx
for t in linalg linalg_complex; do
  CK_FORK=no KILN_LOG=error timeout 150 build-gpu/tests/test_$t \
    > $R/test-$t.txt 2>&1; echo "test $t rc=$?" >> $R/runs.txt; el test-$t
done
