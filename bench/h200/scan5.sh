#!/bin/bash
# Whole-tensor scans, single_pass 3 with NAME_tilepre's 16-byte accesses: the single-pass tests
# on the GPU, single_pass 1 against 3 from 2^20 to 2^26 elements (where the default switches),
# cltrace's per-kernel times at 2^26, PyTorch's torch.cumsum on the same sizes.
# NAMES=scan5 bash bench/h200/round.sh; results under $OUT/r/scan5/.
source bench/h200/common.sh scan5
export KILN_TUNE=off
A=scan.cumsum_all
S=2^20,2^21,2^22,2^23,2^24,2^25,2^26
b warm 40 --dtype f32,f64 --sizes 2^16 --filter $A --override "scan:single_pass=3"
CK_RUN_CASE=single_pass_stress KILN_TEST_KEEP_CACHE_ENV=1 tests 20 scan
b sp1 25 --dtype f32,f64 --sizes $S --filter $A --override "scan:single_pass=1"
b sp3 25 --dtype f32,f64 --sizes $S --filter $A --override "scan:single_pass=3"
for dt in f32 f64; do
  trace_at sp3-$dt $dt 2^26 5 --filter $A --override "scan:single_pass=3"
done
timeout 25 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes $S --filter $A \
  > $R/torch.txt 2> $R/torch.err
el torch
