#!/bin/bash
# Session 25, issue 18 (written then; no GPU was lent to run it): LU, solve and inverse in two
# levels (KILN_DEBUG_LU_NB2=256 and 512; the rule, KILN__LINALG_LU_NB2_GPU, stays off until
# this has run) against one level (0), real and complex, PyTorch in the same
# run, a trace of LU f64 4096 in two levels, then test_linalg's lu2 and grid cases.
# NAMES=s25b LIMIT=560 bash bench/h200/round.sh; results under $OUT/r/s25b/.
source bench/h200/common.sh s25b
F=linalg.lu,linalg.solve,linalg.inv
CF=linalg.clu,linalg.csolve,linalg.cinv
for v in 256 0 512; do
  KILN_DEBUG_LU_NB2=$v b nb2-$v 120 --reps 3 --dtype f32,f64 --sizes 2^20,2^22,2^24 --filter $F
done
for v in 256 0; do
  KILN_DEBUG_LU_NB2=$v b c-nb2-$v 120 --reps 3 --dtype c64,c128 --sizes 2^22,2^24 --filter $CF
done
timeout 120 python3 bench/peers_torch.py --no-startup --reps 3 --dtype f32,f64 \
  --sizes 2^20,2^22,2^24 --filter $F --out $R/torch.json > $R/torch.log 2>&1
timeout 90 python3 bench/peers_torch.py --no-startup --reps 3 --dtype c64,c128 \
  --sizes 2^22,2^24 --filter $CF --out $R/torch-c.json > $R/torch-c.log 2>&1
el torch
KILN_DEBUG_LU_NB2=256 trace_at lu-256 f64 2^24 2 --filter linalg.lu
for c in lu2 grid; do
  (CK_RUN_CASE=$c KILN_CACHE_DIR=/tmp/kc-t-$c CK_FORK=no KILN_LOG=error timeout 200 \
     build-gpu/tests/test_linalg > $R/test-linalg-$c.txt 2>&1
   echo "test_linalg $c rc=$?" >> $R/runs.txt) &
done
wait; el tests
