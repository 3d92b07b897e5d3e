#!/bin/bash
# Issue 17, session 17: the f32 activations' launch knobs (elements per work-item, 4-vectors,
# native exp and reciprocal) next to the copy and PyTorch in the same run. Run from the
# checkout root with build-gpu/ present: NAMES=act bash bench/h200/round.sh.
source bench/h200/common.sh act
F="--dtype f32 --sizes 2^22,2^26 --filter nn.gelu,nn.gelu_tanh,nn.silu,nn.relu,nn.gelu_bwd,copy.kiln_copy"
b default 30 $F
for k in act_vec=4,act_items=1 act_vec=4,act_items=2 act_vec=4,act_items=4 act_items=4 fast=1 \
         fast=1,act_vec=4,act_items=2; do
  KILN_DEBUG_NN=$k b $(echo $k | tr ',=' '--') 30 $F
done
timeout 60 python3 bench/peers_torch.py --no-startup --dtype f32 --sizes 2^22,2^26 \
  --filter nn.gelu,nn.gelu_tanh,nn.silu,nn.relu,nn.gelu_bwd,copy.kiln_copy > $R/torch.txt 2>> $R/err.txt; el torch
