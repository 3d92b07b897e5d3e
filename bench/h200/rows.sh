#!/bin/bash
# Issue 17, the nn family's row kernels and activations on the H200 (docs/nn.md, "Launch knobs").
# Run from the checkout root with build-gpu/ (a release build) present: bash bench/h200/rows.sh
# Writes under $OUT/r/rows/: the nn and nn_train suites' output, `kiln bench --json` for the
# defaults and for each KILN_DEBUG_NN variant (bench-<label>.json), the row kernels' private
# memory and ptxas reports (verbose*.txt), times.txt. PyTorch's figures (torch.json) came from
# round 1: python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^26 --filter ...
# At most 60 s in all (later steps get what is left; bench/h200/rows_report.py tabulates).
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/rows; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-rows; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
$K info > $R/info.txt 2>&1
ROWS=nn.softmax,nn.log_softmax,nn.layer_norm,nn.rms_norm,nn.cross_entropy
ACTS=nn.gelu,nn.gelu_tanh,nn.silu
# Seconds left of the script's 60 (each step's timeout is cut to them; none: skipped).
cap() { local l=$(( 60 - ($(date +%s) - t0) )); echo $(( $1 < l ? $1 : l )); }
# b TIMEOUT LABEL FILTER DTYPES [SIZES]; KILN_DEBUG_NN from the caller.
b() {
  local t=$(cap $1); [ $t -gt 2 ] || { echo "$2 skipped" >> $R/runs.txt; return; }
  echo "== $2 KILN_DEBUG_NN=$KILN_DEBUG_NN" >> $R/err.txt
  timeout $t $K bench --no-startup --json --dtype $4 --sizes ${5:-2^26} --filter $3 \
    > $R/bench-$2.json 2>>$R/err.txt
  echo "$2 rc=$? $(( $(date +%s)-t0 ))s" >> $R/runs.txt
}
# Round 2 (round 1: bench-rows-row_items=0/4 and torch.json; the register caches' kernels
# allowed only 256 items, so registers are the suspect): the default (16 per lane) with and
# without NVIDIA's register cap, ptxas' register counts, the activations' variants, f64,
# then the suites with the time left.
KILN_CACHE_DIR=/tmp/kc-rows-v KILN_LOG=warn KILN_DEBUG_NN=verbose=1 \
  timeout $(cap 4) $K bench --no-startup --dtype f32 --sizes 2^16 --filter nn.softmax,nn.layer_norm \
  > /dev/null 2> $R/verbose.txt
KILN_CACHE_DIR=/tmp/kc-rows-v2 KILN_LOG=warn KILN_DEBUG_NN=verbose=1,maxreg=64 \
  timeout $(cap 4) $K bench --no-startup --dtype f32 --sizes 2^16 --filter nn.softmax,nn.layer_norm \
  > /dev/null 2> $R/verbose-maxreg64.txt
el verbose
RF=nn.softmax,nn.layer_norm,nn.cross_entropy
b 4 rows-default $RF f32
for v in maxreg=64 maxreg=48 maxreg=96 row_items=8,maxreg=64 row_items=4,maxreg=64; do
  KILN_DEBUG_NN=$v b 3 "rows-${v//,/-}" $RF f32
done
el rows
b 4 act-default $ACTS f32
for v in fast=1 act_vec=4 act_vec=4,fast=1; do
  KILN_DEBUG_NN=$v b 3 "act-${v//,/-}" $ACTS f32
done
el act
b 5 default64 nn.gelu,nn.softmax,nn.layer_norm f64
KILN_DEBUG_NN=maxreg=64 b 4 rows64-maxreg=64 nn.softmax,nn.layer_norm f64
b 3 rows-more nn.log_softmax,nn.rms_norm f32
el f64
tt=$(cap 20); [ $tt -gt 2 ] && CK_FORK=no KILN_LOG=error timeout $tt build-gpu/tests/test_nn > $R/test-nn.txt 2>&1
echo "test_nn rc=$?" >> $R/tests.txt
tt=$(cap 10); [ $tt -gt 2 ] && CK_FORK=no KILN_LOG=error timeout $tt build-gpu/tests/test_nn_train > $R/test-nn_train.txt 2>&1
echo "test_nn_train rc=$?" >> $R/tests.txt
el tests
