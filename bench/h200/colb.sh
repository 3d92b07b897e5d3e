#!/bin/bash
# Issue 21, session 22 (written then, not yet run: no GPU was lent): the column broadcast
# ([N/1024, 1024] + [N/1024, 1]) next to the row form and a plain add, kiln's defaults,
# PyTorch in the same run. NAMES=colb bash bench/h200/round.sh; results under $OUT/r/colb/.
source bench/h200/common.sh colb
S="--dtype f32,f64 --sizes 2^22,2^26"
F=binary.add_col_bcast,binary.add_row_bcast,binary.add,copy.kiln_copy
b default 60 $S --filter $F
timeout 60 python3 bench/peers_torch.py --no-startup $S --filter $F --out $R/torch.json \
  > $R/torch.log 2>&1
el torch
