#!/bin/bash
# Issue 18: Cholesky with chol_inv (the diagonal block factored and inverted in one launch) and
# its two-level form (panels of nb > 64 columns, one SYRK per panel) on the H200. Run from the
# checkout root with build-gpu/ present: NAMES=chol bash bench/h200/round.sh. Times cholesky
# (f64 1024 and 4096, f32 4096) with the defaults, with 128- to 512-column panels on gemm_tile
# (gemm=2) and on the large GEMM kernel (gemm=3), traces the default and 64-column steps
# (bench/cltrace.c), keeps the linalg programs' PTX, PyTorch for the same cases, then runs
# test_linalg and test_linalg_complex. Results under $OUT/r/chol/.
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
# SIZES (environment): the default run's and PyTorch's sizes
b default 30 --dtype f64,f32 --sizes ${SIZES-2^20,2^24} --filter $F
# NBS and GS (environment) narrow the panel widths and GEMMs timed
for nb in ${NBS-128 256 512}; do
  for g in ${GS-2 3}; do
    b nb$nb-g$g 20 --dtype f64 --sizes 2^20,2^24 --filter $F --tune "linalg:nb=$nb gemm=$g"
  done
done
# OTHER (environment): more linalg filters timed at 4096 f64 with the defaults, e.g. the ops
# that share gemm_tile
[ -n "$OTHER" ] && b other 60 --dtype f64 --sizes 2^24 --filter $OTHER
# CPLX (environment, any value): complex Cholesky (c64, c128) with the defaults, PyTorch's
# beside it (the linalg tuner family takes no --tune for complex dtypes)
if [ -n "$CPLX" ]; then
  b cplx 60 --dtype c64,c128 --sizes ${SIZES-2^20,2^24} --filter linalg.ccholesky
  timeout 60 python3 bench/peers_torch.py --no-startup --dtype c64,c128 --sizes \
    ${SIZES-2^20,2^24} --filter linalg.ccholesky > $R/torch-cplx.json 2>> $R/err.txt
  el torch-cplx
fi
tr() { local n=$1; shift
  CLTRACE_OUT=$R/trace-$n.txt LD_PRELOAD=$PWD/build-gpu/bench/libcltrace.so timeout -k 1 30 \
    $K bench --no-startup --json --reps 2 --dtype f64 --sizes 2^24 --filter $F "$@" \
    > $R/bench-trace-$n.json 2>> $R/err.txt; el trace-$n; }
tr default
# TRACES (environment): more traced variants as NAME=TUNE pairs, + for the spaces between the
# parameters, e.g. "nb512=linalg:nb=512+gemm=3"
for v in ${TRACES-nb64=linalg:nb=64}; do t=${v#*=}; tr ${v%%=*} --tune "${t//+/ }"; done
mkdir -p $R/ptx; for f in $(grep -rl "chol_inv" $KILN_CACHE_DIR | head -4); do cp "$f" $R/ptx/; done
tar czf $R/ptx.tgz -C $R ptx && rm -rf $R/ptx
timeout 60 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes ${SIZES-2^20,2^24} \
  --filter $F > $R/torch.json 2>> $R/err.txt; el torch
for t in linalg linalg_complex; do
  CK_FORK=no KILN_LOG=error timeout 150 build-gpu/tests/test_$t \
    > $R/test-$t.txt 2>&1; echo "test $t rc=$?" >> $R/runs.txt; el test-$t
done
