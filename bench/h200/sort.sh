#!/bin/bash
# The sort family on the H200 (issue 19, docs/sort.md "Measuring on a GPU"): its test suite,
# then kiln bench rows of each radix variant (KILN_SORT_RADIX) next to PyTorch. Run from the
# checkout root with build-gpu/ (a release build) present; results under $OUT/r/sort/ (packed
# into $OUT/r.tgz after each stage). At most 100 s in all: every step runs under `timeout`,
# capped by what is left of the 100 s.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/sort; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-sort; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s)
el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r.tgz -C $OUT r; }
# cap SECONDS: SECONDS, or what is left of the 100 s budget (less 3 s for packing)
cap() { local left=$(( 97 - ($(date +%s) - t0) )); [ $left -lt $1 ] && echo $left || echo $1; }
# b SECONDS SIZES FILTER TAG [DTYPES]: kiln bench of the cases matching FILTER
b() { local t=$(cap $1); [ $t -le 0 ] && { echo "bench $3 $4 skipped" >> $R/runs.txt; return; }
  timeout $t $K bench --no-startup --json --reps ${REPS:-10} --dtype ${5:-f32,i32,f64} --sizes $2 --filter $3 > $R/bench-$3-$4.json 2>>$R/err.txt
  echo "bench $3 $4 rc=$?" >> $R/runs.txt; }
p() { local t=$(cap $1); [ $t -le 0 ] && return
  timeout $t python3 bench/peers_torch.py --no-startup --dtype ${4:-f32,i32,f64} --sizes $2 --filter $3 --out $R/torch-$3.json >> $R/torch.log 2>&1
  echo "torch $3 rc=$?" >> $R/runs.txt; }
$K info > $R/info.txt 2>&1
CK_FORK=no KILN_LOG=error timeout 30 build-gpu/tests/test_sort > $R/test-sort.txt 2>&1; echo "test_sort rc=$?" >> $R/tests.txt
el tests
# Every case with the defaults (onesweep: 8 keys per work-item with payloads, 16 without,
# for 32-bit keys; 8 for 64-bit).
b 28 2^22,2^26 sort. default
el default
# The radix variants: onesweep with the other tile sizes on sort (keys alone: 8), argsort and
# the row sorts (payloads: 16), and the classic count/scan/scatter passes.
KILN_SORT_RADIX=onesweep:8 b 6 2^26 sort.sort os8 f32,i32
KILN_SORT_RADIX=onesweep:16 b 8 2^26 sort.argsort os16 f32,i32
KILN_SORT_RADIX=onesweep:16 b 8 2^26 sort.sort_rows os16 f32,i32
KILN_SORT_RADIX=onesweep:4 b 6 2^26 sort.argsort os4 f32
KILN_SORT_RADIX=classic b 8 2^22,2^26 sort.sort classic f32,i32
el variants
p 25 2^22,2^26 sort.
el torch
