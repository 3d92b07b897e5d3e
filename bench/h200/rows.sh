#!/bin/bash
# Issue 17, the nn family's row kernels and activations on the H200 (docs/nn.md, "Launch knobs").
# Run from the checkout root with build-gpu/ (a release build) present: bash bench/h200/rows.sh
# Writes under $OUT/r/rows/: `kiln bench --json` for the defaults and for each KILN_DEBUG_NN
# variant (bench-<label>.json), the nn suite's output, runs.txt (each step's exit status and
# time). At most 60 s in all: later steps get what is left. Tabulate with
# python3 bench/h200/rows_report.py DIR [a torch.json of bench/peers_torch.py].
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/rows; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-rows; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s)
$K info > $R/info.txt 2>&1
# Seconds left of the script's 60 (each step's timeout is cut to them; under 3: skipped).
cap() { local l=$(( 60 - ($(date +%s) - t0) )); echo $(( $1 < l ? $1 : l )); }
# b TIMEOUT LABEL FILTER DTYPES; KILN_DEBUG_NN from the caller.
b() {
  local t=$(cap $1); [ $t -gt 2 ] || { echo "$2 skipped" >> $R/runs.txt; return; }
  echo "== $2 KILN_DEBUG_NN=$KILN_DEBUG_NN" >> $R/err.txt
  timeout $t $K bench --no-startup --json --dtype $4 --sizes 2^26 --filter $3 \
    > $R/bench-$2.json 2>>$R/err.txt
  echo "$2 rc=$? $(( $(date +%s)-t0 ))s" >> $R/runs.txt
}
# Round 2 (round 1's results: docs/nn.md; its PyTorch figures stand, so PyTorch is not run
# again: rows_report.py DIR ROUND1/torch.json). Most important first (what the time does not
# reach is skipped and noted in runs.txt): the new defaults (the local cache of 32 KiB; w and
# b now loaded four chunks at a time), layer_norm backward's column sums over 2^18 and 2^19
# work-items (the default 2^17), f64 with the default and streamed, gelu f64 with kiln's
# erfc (the default) and OpenCL's, the activations (items as 4-vectors too), the suite.
RF=nn.softmax,nn.log_softmax,nn.layer_norm,nn.rms_norm,nn.cross_entropy,nn.softmax_bwd,nn.ce_bwd,nn.layer_norm_bwd
RD=nn.softmax,nn.layer_norm,nn.cross_entropy,nn.softmax_bwd
ACTS=nn.gelu,nn.gelu_tanh,nn.silu,nn.relu,nn.gelu_bwd
b 8 rows-default $RF f32
for v in col_items=18 col_items=19; do
  KILN_DEBUG_NN=$v b 4 "lnb-$v" nn.layer_norm_bwd f32
done
b 10 rows64-default $RD f64
KILN_DEBUG_NN=row_local=0 b 7 rows64-row_local=0 $RD f64
b 6 gelu64-default nn.gelu f64
KILN_DEBUG_NN=erf=0 b 6 gelu64-erf=0 nn.gelu f64
b 6 act-default $ACTS f32
KILN_DEBUG_NN=act_vec=4 b 6 act-act_vec=4 $ACTS f32
tt=$(cap 20); [ $tt -gt 2 ] && CK_FORK=no KILN_LOG=error timeout $tt build-gpu/tests/test_nn > $R/test-nn.txt 2>&1
echo "test_nn rc=$? $(( $(date +%s)-t0 ))s" >> $R/runs.txt
