#!/bin/bash
# Issue 18, session 20: complex LU, solve and inverse with lu_panel_grid (32-column complex
# rows) on the H200. Run from the checkout root with build-gpu/ (a release build) and
# build-gpu-t/test_linalg_complex present: NAMES=clu bash bench/h200/round.sh. kiln bench of
# linalg.clu, csolve and cinv (c64, c128, 2048 and 4096) with the defaults and with the panel
# on one work-group (--tune linalg:pwg=1, as before), PyTorch for the same, then the
# linalg_complex suite. Results under $OUT/r/clu/.
source bench/h200/common.sh clu
F=linalg.clu,linalg.csolve,linalg.cinv
b default 60 --reps 3 --dtype c64,c128 --sizes 2^22,2^24 --filter $F
b pwg1 60 --reps 3 --dtype f64,c128 --sizes 2^24 --filter linalg.clu --tune "linalg:pwg=1"
timeout 60 python3 bench/peers_torch.py --no-startup --reps 3 --dtype c64,c128 \
  --sizes 2^22,2^24 --filter $F --out $R/torch.json > $R/torch.log 2>&1; el torch
tests 200 linalg_complex
