#!/bin/bash
# Whole-tensor scans, single_pass 3 with NAME_tileblk (the blocks of a line's tile folds
# scanned in parallel, then the blocks' folds): the GPU stress test (five blocks of 65537
# one-item tiles) and the single-pass case, `kiln bench` from 2^20 to 2^26 forcing
# single_pass 3, cltrace's per-kernel times at 2^26. Compare with scan5's run (look-back,
# PyTorch). NAMES=scan6 bash bench/h200/round.sh; results under $OUT/r/scan6/.
source bench/h200/common.sh scan6
export KILN_TUNE=off
A=scan.cumsum_all
S=2^20,2^21,2^22,2^23,2^24,2^25,2^26
b warm 40 --dtype f32,f64 --sizes 2^16 --filter $A --override "scan:single_pass=3"
for c in single_pass_stress single_pass; do
  KILN_TEST_KEEP_CACHE_ENV=1 CK_RUN_CASE=$c CK_FORK=no KILN_LOG=error timeout 30 \
    build-gpu/tests/test_scan > $R/test-$c.txt 2>&1
  echo "test $c rc=$?" >> $R/runs.txt; el test-$c
done
b sp3 25 --dtype f32,f64 --sizes $S --filter $A --override "scan:single_pass=3"
for dt in f32 f64; do
  trace_at sp3-$dt $dt 2^26 5 --filter $A --override "scan:single_pass=3"
done
