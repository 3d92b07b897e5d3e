#!/bin/bash
# Issue 21, session 17: kiln_copy with its new GPU default (one 16-byte vector per work-item)
# and the casts with one or four steps per work-item, PyTorch in the same run. Run from the
# checkout root with build-gpu/ present: NAMES=copycast bash bench/h200/round.sh.
source bench/h200/common.sh copycast
S="--dtype f32,f64 --sizes 2^22,2^26 --filter copy.kiln_copy,cast.to_i32"
b default 40 $S
b cast-i1 30 $S --tune "cast:items_per_thread=1"
b copy-i4 30 $S --tune "copy:items_per_thread=4"
timeout 60 python3 bench/peers_torch.py --no-startup $S > $R/torch.txt 2>> $R/err.txt; el torch
