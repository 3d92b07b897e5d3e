#!/bin/bash
# Issue 18, session 18, second run: the device tridiagonal stage with multisection (8 lanes per
# eigenvalue) in td_bisect and td_refine and operands loaded ahead in every chain; eigh at 1024
# and 4096 (phases), the trace at 4096, and the suite's tdev case. NAMES=tdev2 bash bench/h200/round.sh
source bench/h200/common.sh tdev2
E=linalg.eigh
KILN_LOG=debug timeout 60 $K bench --no-startup --json --reps 3 --dtype f64,f32 \
  --sizes 2^20,2^24 --filter $E > $R/bench-dev.json 2> $R/phases-dev.txt; el dev
CLTRACE_OUT=$R/trace-dev.txt LD_PRELOAD=$PWD/build-gpu/bench/libcltrace.so timeout -k 1 30 \
  $K bench --no-startup --json --reps 2 --dtype f64 --sizes 2^24 --filter $E \
  > $R/bench-trace-dev.json 2>> $R/err.txt; el trace
CK_RUN_CASE=tdev CK_FORK=no KILN_LOG=error timeout 60 build-gpu/tests/test_linalg_spectral \
  > $R/test-tdev.txt 2>&1; echo "tdev rc=$?" >> $R/runs.txt; el test-tdev
