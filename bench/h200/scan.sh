#!/bin/bash
# Scans on the H200 (issue 21): the scan suite, PyTorch's torch.cumsum, then `kiln bench` of
# scan.cumsum_rows ([n/1024, 1024], axis 1), scan.cumsum_cols ([1024, n/1024], axis 0) and
# scan.cumsum_all (1-D), f32 and f64 at 2^22 and 2^26, with the built-in defaults
# (KILN_TUNE=off) and with variants of the scan tuner's parameters (kiln bench --tune).
# Run from the checkout root with build-gpu/ (a release build) present; results under
# $OUT/r/scan/ (and $OUT/r.tgz). Stops starting variants at 95 s: at most about 100 s.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/scan; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-scan KILN_TUNE=off; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r.tgz -C $OUT r; }
$K info > $R/info.txt 2>&1
CK_FORK=no KILN_LOG=error timeout 25 build-gpu/tests/test_scan > $R/test-scan.txt 2>&1
echo "test_scan rc=$?" >> $R/tests.txt
el tests
timeout 20 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^22,2^26 \
  --filter scan.cumsum --out $R/torch.json > $R/torch.log 2>&1
el torch
# b NAME FILTER [PARAMS]: one kiln bench run of the cases matching FILTER with scan
# parameters PARAMS, cut short so that the script ends by 100 s.
b() {
  local left=$(( 95 - ($(date +%s) - t0) )) lim=${T:-5} tune=()
  [ $left -lt 2 ] && { echo "$1 skipped (time)" >> $R/variants.txt; return; }
  [ $lim -gt $left ] && lim=$left
  [ -n "$3" ] && tune=(--tune "scan:$3")
  timeout $lim $K bench --no-startup --json --dtype f32,f64 --sizes 2^22,2^26 --filter $2 \
    "${tune[@]}" > $R/bench-$1.json 2>>$R/err.txt
  echo "$1 rc=$? filter=$2 params=$3" >> $R/variants.txt
}
T=14 b default scan.cumsum
b sp0 scan.cumsum "single_pass=0"
for w in 128 512 1024; do b wg$w scan.cumsum "wg_size=$w"; done
for c in 1 4; do for w in 64 128; do b cols$c-wg$w scan.cumsum_cols "cols_per_item=$c wg_size=$w"; done; done
b cols1 scan.cumsum_cols "cols_per_item=1"
b cols16 scan.cumsum_cols "cols_per_item=16"
b cols4-tpm1024 scan.cumsum_cols "two_pass_min=1024"
el kiln
