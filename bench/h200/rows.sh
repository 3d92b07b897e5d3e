#!/bin/bash
# Issue 17, the nn family's row kernels and activations on the H200 (docs/nn.md, "Launch knobs").
# Run from the checkout root with build-gpu/ (a release build) present: bash bench/h200/rows.sh
# Writes under $OUT/r/rows/: the nn and nn_train suites' output, `kiln bench --json` for the
# defaults and for each KILN_DEBUG_NN variant (bench-<label>.json), the row kernels' private
# memory and ptxas reports (verbose*.txt), times.txt. PyTorch's figures (torch.json) came from
# round 1: python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^26 --filter ...
# At most 45 s in all (later steps get what is left; bench/h200/rows_report.py tabulates).
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/rows; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-rows; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
$K info > $R/info.txt 2>&1
ROWS=nn.softmax,nn.log_softmax,nn.layer_norm,nn.rms_norm,nn.cross_entropy
ACTS=nn.gelu,nn.gelu_tanh,nn.silu
# Seconds left of the script's 44 (each step's timeout is cut to them; none: skipped).
cap() { local l=$(( 44 - ($(date +%s) - t0) )); echo $(( $1 < l ? $1 : l )); }
# b TIMEOUT LABEL FILTER DTYPES [SIZES]; KILN_DEBUG_NN from the caller.
b() {
  local t=$(cap $1); [ $t -gt 2 ] || { echo "$2 skipped" >> $R/runs.txt; return; }
  echo "== $2 KILN_DEBUG_NN=$KILN_DEBUG_NN" >> $R/err.txt
  timeout $t $K bench --no-startup --json --dtype $4 --sizes ${5:-2^26} --filter $3 \
    > $R/bench-$2.json 2>>$R/err.txt
  echo "$2 rc=$? $(( $(date +%s)-t0 ))s" >> $R/runs.txt
}
# The closing run (under 45 s; most important first). Round 1 (docs/nn.md): streamed rows
# 0.280 ms softmax, 4 per lane 0.387 (kernels capped at 256 items by their registers). First
# the row kernels: the default (streamed) against 16 per lane with and without NVIDIA's
# register cap; then gelu f64 (kiln's erfc, the default, against OpenCL's), the activations'
# variants, the caches' register counts, f64 rows, the suites with the time left.
RF=nn.softmax,nn.layer_norm,nn.cross_entropy
b 4 rows-default $RF f32
for v in row_items=16 row_items=16,maxreg=64 row_items=8,maxreg=64; do
  KILN_DEBUG_NN=$v b 3 "rows-${v//,/-}" $RF f32
done
el rows
b 3 gelu64-default nn.gelu f64
KILN_DEBUG_NN=erf=0 b 3 gelu64-erf=0 nn.gelu f64
b 3 act-default $ACTS f32
for v in act_vec=4,fast=1 fast=1; do
  KILN_DEBUG_NN=$v b 3 "act-${v//,/-}" $ACTS f32
done
el act
KILN_CACHE_DIR=/tmp/kc-rows-v KILN_LOG=warn KILN_DEBUG_NN=verbose=1,row_items=16 \
  timeout $(cap 3) $K bench --no-startup --dtype f32 --sizes 2^16 --filter nn.softmax \
  > /dev/null 2> $R/verbose.txt
KILN_CACHE_DIR=/tmp/kc-rows-v2 KILN_LOG=warn KILN_DEBUG_NN=verbose=1,row_items=16,maxreg=64 \
  timeout $(cap 3) $K bench --no-startup --dtype f32 --sizes 2^16 --filter nn.softmax \
  > /dev/null 2> $R/verbose-maxreg64.txt
el verbose
b 3 rows64-default nn.softmax,nn.layer_norm f64
KILN_DEBUG_NN=row_items=16,maxreg=64 b 3 rows64-row_items=16-maxreg=64 nn.softmax,nn.layer_norm f64
el f64
tt=$(cap 20); [ $tt -gt 2 ] && CK_FORK=no KILN_LOG=error timeout $tt build-gpu/tests/test_nn > $R/test-nn.txt 2>&1
echo "test_nn rc=$?" >> $R/tests.txt
tt=$(cap 10); [ $tt -gt 2 ] && CK_FORK=no KILN_LOG=error timeout $tt build-gpu/tests/test_nn_train > $R/test-nn_train.txt 2>&1
echo "test_nn_train rc=$?" >> $R/tests.txt
el tests
