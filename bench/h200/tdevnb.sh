#!/bin/bash
# Issue 18, session 18: eigh f64 at 4096 with the linalg family's nb at 32, 64 (the GPU
# default) and 128 (the reduction's panel and the back-transformation's blocks), phases
# from KILN_LOG=debug. NAMES=tdevnb bash bench/h200/round.sh
source bench/h200/common.sh tdevnb
for nb in 64 128 32; do
  KILN_LOG=debug timeout 40 $K bench --no-startup --json --reps 3 --dtype f64 --sizes 2^24 \
    --filter linalg.eigh --tune "linalg:nb=$nb" > $R/bench-nb$nb.json 2> $R/phases-nb$nb.txt
  el nb$nb
done
