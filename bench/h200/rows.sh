#!/bin/bash
# Issue 17, the nn family's row kernels and activations on the H200 (docs/nn.md, "Launch knobs").
# Run from the checkout root with build-gpu/ (a release build) present: bash bench/h200/rows.sh
# Writes under $OUT/r/rows/: the nn and nn_train suites' output, `kiln bench --json` for the
# defaults and for each KILN_DEBUG_NN variant (bench-<label>.json), PyTorch's figures
# (torch.json), the row kernels' private memory and ptxas reports (verbose.txt), times.txt.
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
# Correctness on NVIDIA: every row-cache variant in every dtype (row_knobs), the rest.
CK_FORK=no KILN_LOG=error timeout 14 build-gpu/tests/test_nn > $R/test-nn.txt 2>&1
echo "test_nn rc=$?" >> $R/tests.txt
CK_FORK=no KILN_LOG=error timeout 5 build-gpu/tests/test_nn_train > $R/test-nn_train.txt 2>&1
echo "test_nn_train rc=$?" >> $R/tests.txt
el tests
# Registers or off-chip memory: the row kernels' private bytes and ptxas' report, fresh builds.
KILN_CACHE_DIR=/tmp/kc-rows-v KILN_LOG=warn KILN_DEBUG_NN=verbose=1,row_items=16 \
  timeout $(cap 4) $K bench --no-startup --dtype f32 --sizes 2^16 --filter nn.softmax,nn.layer_norm \
  > /dev/null 2> $R/verbose.txt
el verbose
# Defaults (the row kernels' register caches chosen per length), next to PyTorch and a copy;
# f64 for gelu (kiln's f64 erfc) and two row kernels.
b 9 default $ROWS,$ACTS,copy.kiln_copy f32
b 5 default64 nn.gelu,nn.softmax,nn.layer_norm,copy.kiln_copy f64
timeout $(cap 9) python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^26 \
  --filter $ROWS,$ACTS,copy.kiln_copy --out $R/torch.json >> $R/torch.log 2>&1
echo "torch rc=$?" >> $R/runs.txt
el default
# Row kernels: elements per lane in registers (4: 1024 lanes per row of 4096, 8: 512; the
# default 16: 256; 0 streams each row twice, the former default).
for v in row_items=0 row_items=4 row_items=8; do
  KILN_DEBUG_NN=$v b 3 "rows-${v//,/-}" nn.softmax,nn.layer_norm,nn.cross_entropy f32
done
el rows
# Activations: native exp and reciprocal, 4-vectors per item (with 8 items: 32 elements).
for v in fast=1 act_vec=4 act_vec=4,fast=1; do
  KILN_DEBUG_NN=$v b 3 "act-${v//,/-}" $ACTS f32
done
el act
