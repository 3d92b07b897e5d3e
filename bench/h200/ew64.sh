#!/bin/bash
# Issue 21, session 24: 8-byte elementwise shapes on the H200. The broadcast add of f64 ran at
# 82% of copy (f32 at 100%): with the GPU default for 8-byte types (4 scalar items per
# work-item) the broadcast launch has no vector path. Times binary.add, the row and column
# broadcasts, a * 3 and exp in f64 under the default and two vector shapes, and the fixed
# cost of one launch (copy and a * 3 of 16 to 2^22 f32 elements) next to PyTorch's.
# NAMES=ew64 bash bench/h200/round.sh; results under $OUT/r/ew64/.
source bench/h200/common.sh ew64
F=binary.add,binary.add_row_bcast,binary.add_col_bcast,binary.mul_scalar,unary.exp
S="--dtype f64 --sizes 2^22,2^26 --filter $F"
b default 60 $S
b i2v2 60 $S --tune 'elementwise:items_per_thread=2 vec_width=2'
b i4v2 60 $S --tune 'elementwise:items_per_thread=4 vec_width=2'
b i1v4 60 $S --tune 'elementwise:items_per_thread=1 vec_width=4'
b default2 60 $S
timeout 60 python3 bench/peers_torch.py --no-startup --reps 5 $S --out $R/torch.json > $R/torch.log 2>&1
el torch
L="--dtype f32 --sizes 16,2^16,2^20,2^22 --filter copy.kiln_copy,binary.mul_scalar"
b floor 60 $L
timeout 60 python3 bench/peers_torch.py --no-startup --reps 5 $L --out $R/torch-floor.json >> $R/torch.log 2>&1
el torch-floor
