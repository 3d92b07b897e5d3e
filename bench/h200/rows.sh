#!/bin/bash
# Issue 17, the nn family's row kernels and activations on the H200 (docs/nn.md, "Launch knobs").
# Run from the checkout root with build-gpu/ (a release build) present: bash bench/h200/rows.sh
# Writes under $OUT/r/rows/: `kiln bench --json` for the defaults and for each KILN_DEBUG_NN
# variant (bench-<label>.json), PyTorch's figures for the same cases (torch.json), the nn
# suite's row-kernel output, runs.txt (each step's exit status and time). At most 60 s in all:
# later steps get what is left. Tabulate with python3 bench/h200/rows_report.py DIR.
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
# Most important first (what the time does not reach is skipped and noted in runs.txt). The
# row kernels (16384 x 4096): the default (streamed rows) against the local cache (row_local=
# KiB: each row read once into local memory) at 256, 1024 and 512 work-items, PyTorch, f64,
# gelu f64 with kiln's erfc (the default) and OpenCL's, the register caches (16 per lane, and
# with NVIDIA's register cap: programs of their own to compile), kiln's activations (items as
# 4-vectors too), the suite.
RF=nn.softmax,nn.log_softmax,nn.layer_norm,nn.rms_norm,nn.cross_entropy,nn.softmax_bwd,nn.ce_bwd,nn.layer_norm_bwd
R5=nn.softmax,nn.layer_norm,nn.cross_entropy,nn.softmax_bwd,nn.layer_norm_bwd
ACTS=nn.gelu,nn.gelu_tanh,nn.silu,nn.relu,nn.gelu_bwd
b 9 rows-default $RF f32
KILN_DEBUG_NN=row_local=32 b 8 rows-row_local=32 $RF f32
KILN_DEBUG_NN=row_local=32,row_wg=1024 b 6 rows-row_local=32-row_wg=1024 $R5 f32
t=$(cap 12); [ $t -gt 2 ] && timeout $t python3 bench/peers_torch.py --no-startup --dtype f32,f64 \
  --sizes 2^26 --filter $RF,$ACTS --out $R/torch.json > $R/torch.log 2>&1
echo "torch rc=$? $(( $(date +%s)-t0 ))s" >> $R/runs.txt
KILN_DEBUG_NN=row_local=32,row_wg=512 b 5 rows-row_local=32-row_wg=512 $R5 f32
RD=nn.softmax,nn.layer_norm,nn.cross_entropy
b 4 rows64-default $RD f64
KILN_DEBUG_NN=row_local=40 b 4 rows64-row_local=40 $RD f64
b 3 gelu64-default nn.gelu f64
KILN_DEBUG_NN=erf=0 b 3 gelu64-erf=0 nn.gelu f64
RS=nn.softmax,nn.layer_norm,nn.cross_entropy,nn.softmax_bwd
KILN_DEBUG_NN=row_items=16 b 7 rows-row_items=16 $RS f32
KILN_DEBUG_NN=row_items=16,maxreg=64 b 7 rows-row_items=16-maxreg=64 $RS f32
b 4 act-default $ACTS f32
KILN_DEBUG_NN=act_vec=4 b 4 act-act_vec=4 $ACTS f32
KILN_DEBUG_NN=row_items=8 b 6 rows-row_items=8 $RS f32
tt=$(cap 20); [ $tt -gt 2 ] && CK_FORK=no KILN_LOG=error timeout $tt build-gpu/tests/test_nn > $R/test-nn.txt 2>&1
echo "test_nn rc=$? $(( $(date +%s)-t0 ))s" >> $R/runs.txt
