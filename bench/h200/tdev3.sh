#!/bin/bash
# Issue 18, session 18, third run: eigh with the device tridiagonal stage (multisection, both
# candidate representations made at once, td_cholqr staging rows in local memory, the check GEMM
# on the large kernel,
# host ranges only below a relative gap of 1e-6, V = Q Z by the reflectors applied to Z in
# place instead of forming Q): eigh at 1024 and 4096 f64/f32 (phases), the trace at 4096,
# PyTorch in the same run, the suite's tdev and all cases; svd at 1024 and 4096 (f64) with the
# new device check of U and V. NAMES=tdev3 bash bench/h200/round.sh
source bench/h200/common.sh tdev3
E=linalg.eigh
KILN_LOG=debug timeout 60 $K bench --no-startup --json --reps 3 --dtype f64,f32 \
  --sizes 2^20,2^24 --filter $E > $R/bench-dev.json 2> $R/phases-dev.txt; el dev
CLTRACE_OUT=$R/trace-dev.txt LD_PRELOAD=$PWD/build-gpu/bench/libcltrace.so timeout -k 1 30 \
  $K bench --no-startup --json --reps 2 --dtype f64 --sizes 2^24 --filter $E \
  > $R/bench-trace-dev.json 2>> $R/err.txt; el trace
KILN_LOG=debug timeout 40 $K bench --no-startup --json --reps 2 --dtype f64 \
  --sizes 2^20,2^24 --filter linalg.svd > $R/bench-svd.json 2> $R/phases-svd.txt; el svd
timeout 40 python3 bench/peers_torch.py --no-startup --reps 3 --dtype f64,f32 \
  --sizes 2^20,2^24 --filter $E --out $R/torch.json > $R/torch.log 2>&1; el torch
for c in tdev all; do
  CK_RUN_CASE=$c CK_FORK=no KILN_LOG=error timeout 150 build-gpu/tests/test_linalg_spectral \
    > $R/test-$c.txt 2>&1; echo "$c rc=$?" >> $R/runs.txt; el test-$c
done
