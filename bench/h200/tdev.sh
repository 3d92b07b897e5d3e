#!/bin/bash
# Issue 18, session 18: eigh with its tridiagonal stage on the device (lib/ops/linalg_tridiag.c)
# at 1024 and 4096, f64 and f32, against the host MRRR route in the same run
# (KILN_DEBUG_LINALG_HOST=notdev) and PyTorch; phase lines (KILN_LOG=debug) give each stage's
# time and the device stage's checks; then the suite's tdev case (every order forced onto the
# device) and the rest of test_linalg_spectral. NAMES=tdev bash bench/h200/round.sh
source bench/h200/common.sh tdev
E=linalg.eigh
KILN_LOG=debug timeout 60 $K bench --no-startup --json --reps 3 --dtype f64,f32 \
  --sizes 2^20,2^24 --filter $E > $R/bench-dev.json 2> $R/phases-dev.txt; el dev
KILN_DEBUG_LINALG_HOST=notdev KILN_LOG=debug timeout 30 $K bench --no-startup --json --reps 2 \
  --dtype f64 --sizes 2^20,2^24 --filter $E > $R/bench-host.json 2> $R/phases-host.txt; el host
CLTRACE_OUT=$R/trace-dev.txt LD_PRELOAD=$PWD/build-gpu/bench/libcltrace.so timeout -k 1 30 \
  $K bench --no-startup --json --reps 2 --dtype f64 --sizes 2^24 --filter $E \
  > $R/bench-trace-dev.json 2>> $R/err.txt; el trace
timeout 40 python3 bench/peers_torch.py --no-startup --reps 3 --dtype f64,f32 \
  --sizes 2^20,2^24 --filter $E --out $R/torch.json > $R/torch.log 2>&1; el torch
CK_RUN_CASE=tdev CK_FORK=no KILN_LOG=error timeout 60 build-gpu/tests/test_linalg_spectral \
  > $R/test-tdev.txt 2>&1; echo "tdev rc=$?" >> $R/runs.txt; el test-tdev
CK_RUN_CASE=all CK_FORK=no KILN_LOG=error timeout 150 build-gpu/tests/test_linalg_spectral \
  > $R/test-all.txt 2>&1; echo "all rc=$?" >> $R/runs.txt; el test-all
