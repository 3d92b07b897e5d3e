#!/bin/bash
# Issue 18, session 15: svd with the built-in host routine (MRRR on the Golub-Kahan matrix from
# order 512) at 1024 and 4096, f64 and f32, with the phase lines, then test_linalg_spectral.
# Run from the checkout root with build-gpu/ present: NAMES=svdfin bash bench/h200/round.sh.
source bench/h200/common.sh svdfin
KILN_LOG=debug timeout 90 $K bench --no-startup --json --reps 3 --dtype f64,f32 \
  --sizes 2^20,2^24 --filter linalg.svd > $R/bench-def.json 2> $R/phases-def.txt; el def
tests 150 linalg_spectral
