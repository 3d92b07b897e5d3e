#!/bin/bash
# Issues 21 and 17, session 17: fewer bytes per work-item for the copy and the flat
# elementwise launches (the f32 activations ran faster than kiln's copy with 16-32 bytes a
# work-item, bench/h200/act.sh), PyTorch in the same run, then test_nn on the H200 (the f32
# activations' new defaults). Run from the checkout root with build-gpu/ present:
# NAMES=flat bash bench/h200/round.sh.
source bench/h200/common.sh flat
S="--dtype f32,f64 --sizes 2^22,2^26"
b default 40 $S --filter copy.kiln_copy,binary.mul_scalar,unary.neg,binary.add
for i in 1 2; do
  b copy-i$i 30 $S --filter copy.kiln_copy --tune "copy:items_per_thread=$i"
done
b copy-i1-wg512 30 $S --filter copy.kiln_copy --tune "copy:items_per_thread=1 wg_size=512"
b ew-i1 30 $S --filter binary.mul_scalar,unary.neg,binary.add --tune "elementwise:items_per_thread=1"
timeout 60 python3 bench/peers_torch.py --no-startup $S \
  --filter copy.kiln_copy,binary.mul_scalar,unary.neg,binary.add > $R/torch.txt 2>> $R/err.txt; el torch
tests 200 nn
