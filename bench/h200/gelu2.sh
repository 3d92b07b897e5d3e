#!/bin/bash
# Issue 17: gelu f64 (and its backward) over 2^26 elements on the H200 under the nn family's
# launch knobs (KILN_DEBUG_NN: elements per work-item, 4-vectors, NVIDIA's register cap), to
# see whether the f64 form is bound by its arithmetic or by how the kernel is laid out.
# NAMES=gelu2 bash bench/h200/round.sh; results under $OUT/r/gelu2/ (bench-<knobs>.json).
source bench/h200/common.sh gelu2
for v in default act_items=1 act_items=2 act_items=8 act_vec=4 act_vec=4,act_items=1 \
  maxreg=64 maxreg=128; do
  if [ $v = default ]; then unset KILN_DEBUG_NN; else export KILN_DEBUG_NN=$v; fi
  b ${v//[=,]/-} 25 --dtype f64 --sizes 2^26 --filter nn.gelu,nn.gelu_bwd
done
unset KILN_DEBUG_NN
b copy 15 --dtype f64 --sizes 2^26 --filter copy.kiln_copy
