#!/bin/bash
# Issue 17, the nn family's row kernels and activations on the H200 (docs/nn.md, "Launch knobs").
# Run from the checkout root with build-gpu/ (a release build) present: bash bench/h200/rows.sh
# Writes under $OUT/r/rows/: the nn, nn_train and nn_conv suites' output, `kiln bench --json` for the defaults and for
# each KILN_DEBUG_NN variant (bench-<label>.json), PyTorch's figures (torch.json), times.txt.
# At most 100 s in all (later steps get what is left; bench/h200/rows_report.py tabulates).
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/rows; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-rows; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
$K info > $R/info.txt 2>&1
ROWS=nn.softmax,nn.log_softmax,nn.layer_norm,nn.rms_norm,nn.cross_entropy,nn.ce_bwd
ACTS=nn.gelu,nn.silu,nn.relu
TRAIN=nn.batch_norm,nn.max_pool2d
# Seconds left of the script's 100 (each step's timeout is cut to them; none: skipped).
cap() { local l=$(( 100 - ($(date +%s) - t0) )); echo $(( $1 < l ? $1 : l )); }
# b TIMEOUT LABEL FILTER DTYPES [SIZES]; KILN_DEBUG_NN from the caller.
b() {
  local t=$(cap $1); [ $t -gt 2 ] || { echo "$2 skipped" >> $R/runs.txt; return; }
  echo "== $2 KILN_DEBUG_NN=$KILN_DEBUG_NN" >> $R/err.txt
  timeout $t $K bench --no-startup --json --dtype $4 --sizes ${5:-2^26} --filter $3 \
    > $R/bench-$2.json 2>>$R/err.txt
  echo "$2 rc=$? $(( $(date +%s)-t0 ))s" >> $R/runs.txt
}
# The nn suite first (it compiles every knob's variant): correctness on NVIDIA.
CK_FORK=no KILN_LOG=error timeout 40 build-gpu/tests/test_nn > $R/test-nn.txt 2>&1
echo "test_nn rc=$?" >> $R/tests.txt
el test_nn
# Defaults, every row and activation case, batch_norm and max_pool2d, next to PyTorch and
# kiln's copy.
b 25 default $ROWS,$ACTS,$TRAIN,copy.kiln_copy f32,f64 2^26
timeout $(cap 30) python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^26 \
  --filter $ROWS,$ACTS,$TRAIN,copy.kiln_copy --out $R/torch.json >> $R/torch.log 2>&1
echo "torch rc=$?" >> $R/runs.txt
el default
# Row kernels: elements kept in registers per lane and the least local size.
for v in row_items=16 row_items=4 row_items=32 row_items=16,row_wg=512; do
  KILN_DEBUG_NN=$v b 8 "rows-${v//,/-}" nn.softmax,nn.layer_norm,nn.cross_entropy,nn.ce_bwd f32
done
KILN_DEBUG_NN=row_items=16 b 8 rows64-row_items=16 nn.softmax,nn.layer_norm f64
el rows
# Activations: OpenCL's erfc against kiln's, elements per work-item.
for v in erf=0 act_items=4; do
  KILN_DEBUG_NN=$v b 6 "act-${v//,/-}" nn.gelu,nn.silu f32
done
KILN_DEBUG_NN=act_items=8 b 6 act64-act_items=8 nn.gelu,nn.relu f64
el act
# batch_norm's and max_pool2d's suites with the time left.
for t in nn_train nn_conv; do
  tt=$(cap 30); [ $tt -gt 2 ] || { echo "test_$t skipped" >> $R/tests.txt; continue; }
  CK_FORK=no KILN_LOG=error timeout $tt build-gpu/tests/test_$t > $R/test-$t.txt 2>&1
  echo "test_$t rc=$?" >> $R/tests.txt
done
el tests
