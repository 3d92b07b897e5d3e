#!/bin/bash
# The sort family on the H200 (issue 19, docs/sort.md "Measuring"): its test suite, then kiln
# bench rows of each radix variant (KILN_SORT_RADIX) next to PyTorch. Run from the checkout
# root with build-gpu/ (a release build) present; results under $OUT/r/sort/ (packed into
# $OUT/r.tgz after each stage). About 100 s in all (every step under `timeout`).
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/sort; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-sort; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r.tgz -C $OUT r; }
# b SECONDS SIZES FILTER TAG [DTYPES]: kiln bench of the cases matching FILTER into bench-FILTER-TAG.json
b() { timeout $1 $K bench --no-startup --json --reps ${REPS:-10} --dtype ${5:-f32,i32,f64} --sizes $2 --filter $3 > $R/bench-$3-$4.json 2>>$R/err.txt; echo "bench $3 $4 rc=$?" >> $R/runs.txt; }
p() { timeout $1 python3 bench/peers_torch.py --no-startup --dtype ${4:-f32,i32,f64} --sizes $2 --filter $3 --out $R/torch-$3.json >> $R/torch.log 2>&1; echo "torch $3 rc=$?" >> $R/runs.txt; }
$K info > $R/info.txt 2>&1
CK_FORK=no KILN_LOG=error timeout 40 build-gpu/tests/test_sort > $R/test-sort.txt 2>&1; echo "test_sort rc=$?" >> $R/tests.txt
el tests
# The radix variants on sort and argsort: the default (onesweep, 16 keys per work-item for
# 32-bit keys, 8 for 64-bit), onesweep with 8 and 4, and the classic count/scan/scatter passes.
b 14 2^22,2^26 sort.sort default
b 12 2^22,2^26 sort.argsort default
KILN_SORT_RADIX=onesweep:8 b 10 2^22,2^26 sort.sort os8 f32,i32
KILN_SORT_RADIX=onesweep:4 b 10 2^22,2^26 sort.sort os4 f32,i32
KILN_SORT_RADIX=classic b 10 2^22,2^26 sort.sort classic f32,i32
el variants
b 25 2^22,2^26 sort. all
el cases
p 22 2^22,2^26 sort.
el torch
