#!/bin/bash
# Session 27, issue 18: the LU in two levels (KILN_DEBUG_LU_NB2=256 and 512) against one level
# (0), real, LU and solve at 2048 and 4096, PyTorch in the same run (s25b.sh's core, trimmed to
# fit one call beside the test suites, whose test_linalg runs lu_two_levels).
# NAMES="tests s27a" LIMIT=280 bash bench/h200/round.sh; results under $OUT/r/s27a/.
source bench/h200/common.sh s27a
F=linalg.lu,linalg.solve
for v in 256 0 512; do
  KILN_DEBUG_LU_NB2=$v b nb2-$v 60 --reps 3 --dtype f32,f64 --sizes 2^22,2^24 --filter $F
done
timeout 60 python3 bench/peers_torch.py --no-startup --reps 3 --dtype f32,f64 \
  --sizes 2^22,2^24 --filter $F --out $R/torch.json > $R/torch.log 2>&1
el torch
