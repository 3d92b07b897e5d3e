#!/bin/bash
# Issue 18, session 15: Cholesky with look-ahead over two levels (each next 256-column panel of
# chol_inv steps factored on the second queue while the SYRK of the panel before runs) against
# the rule (two levels, one queue) and one-level look-ahead; then eigh and svd at 4096 with
# their phase lines, and PyTorch for the same cases. Run from the checkout root with build-gpu/
# present: NAMES=chahead bash bench/h200/round.sh. Results under $OUT/r/chahead/.
source bench/h200/common.sh chahead
F=linalg.cholesky
b def 30 --dtype f64,f32 --sizes 2^20,2^24 --filter $F
b ah64 20 --dtype f64 --sizes 2^20,2^24 --filter $F --tune "linalg:ahead=2 nb=64"
for nb in 128 256 512; do
  b ah$nb-g3 20 --dtype f64 --sizes 2^20,2^24 --filter $F --tune "linalg:ahead=2 nb=$nb gemm=3"
done
b ah256-g2 20 --dtype f64 --sizes 2^24 --filter $F --tune "linalg:ahead=2 nb=256 gemm=2"
b ah256-f32 20 --dtype f32 --sizes 2^24 --filter $F --tune "linalg:ahead=2 nb=256 gemm=3"
trace def --filter $F
trace ah256 --filter $F --tune "linalg:ahead=2 nb=256 gemm=3"
timeout 60 python3 bench/peers_torch.py --no-startup --dtype f64 --sizes 2^20,2^24 \
  --filter $F > $R/torch.json 2>> $R/err.txt; el torch
# eigh and svd at 4096 with their phases (KILN_LOG=debug waits for the queue after each)
for c in eigh svd; do
  KILN_LOG=debug timeout 90 $K bench --no-startup --json --reps 2 --dtype f64 --sizes 2^24 \
    --filter linalg.$c > $R/bench-$c-4k.json 2> $R/phases-$c-4k.txt; el $c-4k
done
timeout 60 python3 bench/peers_torch.py --no-startup --reps 3 --dtype f64 --sizes 2^24 \
  --filter linalg.eigh,linalg.svd > $R/torch-eigsvd.json 2>> $R/err.txt; el torch-eigsvd
tests 200 linalg
