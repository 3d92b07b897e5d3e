#!/bin/bash
# Issue 18, session 18, fifth run: as tdev4, with the check GEMM on the lower triangle only and
# td_refine's two bracket ends checked by two lanes at once: eigh at
# 1024 and 4096 f64/f32 with phases, PyTorch, the suite's tdev and all cases.
# NAMES=tdev5 bash bench/h200/round.sh
source bench/h200/common.sh tdev5
E=linalg.eigh
KILN_LOG=debug timeout 60 $K bench --no-startup --json --reps 3 --dtype f64,f32 \
  --sizes 2^20,2^24 --filter $E > $R/bench-dev.json 2> $R/phases-dev.txt; el dev
timeout 40 python3 bench/peers_torch.py --no-startup --reps 3 --dtype f64,f32 \
  --sizes 2^20,2^24 --filter $E --out $R/torch.json > $R/torch.log 2>&1; el torch
for c in tdev all; do
  CK_RUN_CASE=$c CK_FORK=no KILN_LOG=error timeout 150 build-gpu/tests/test_linalg_spectral \
    > $R/test-$c.txt 2>&1; echo "$c rc=$?" >> $R/runs.txt; el test-$c
done
