#!/bin/bash
# Issue 17: gelu (exact erf) forward and backward on the H200, f32 and f64 at 2^26, with kiln's
# own erfc (the default, KILN_DEBUG_NN=erf=1) and OpenCL's (erf=0), the copy beside them and
# PyTorch's F.gelu in the same run. Run from the checkout root with build-gpu/ present:
# NAMES=gelu bash bench/h200/round.sh. Results under $OUT/r/gelu/.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/gelu; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-gelu; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
F=nn.gelu,nn.gelu_bwd,nn.gelu_tanh,copy.kiln_copy
timeout -k 1 30 $K bench --no-startup --json --dtype f32,f64 --sizes 2^26 --filter $F \
  > $R/bench-default.json 2>> $R/err.txt; el default
KILN_DEBUG_NN=erf=0 timeout -k 1 30 $K bench --no-startup --json --dtype f32,f64 --sizes 2^26 \
  --filter nn.gelu,nn.gelu_bwd > $R/bench-erf0.json 2>> $R/err.txt; el erf0
timeout 60 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^26 \
  --filter $F > $R/torch.json 2>> $R/err.txt; el torch
