#!/bin/bash
# Issue 21, core families on the H200: the single-pass scan's new code checked on the GPU,
# then `kiln bench` of the scans with the built-in defaults (KILN_TUNE=off) and the
# variants that could replace them (--override), then the other core cases.
# Run from the checkout root with build-gpu/ (a release build) present:
#   bash bench/h200/core.sh        (results under $OUT/r/core/, packed into $OUT/r.tgz)
# bench-<tag>.json is one `kiln bench` run; variants.txt says which --override each used.
# PyTorch for these cases (bench/peers_torch.py --filter
# scan.cumsum_all,scan.cumsum_rows,copy.,binary.mul_scalar,cast.,random.normal --sizes
# 2^10,2^22,2^26 --dtype f32,f64) ran in the first run of 2026-12-02 (/work/gpu-results/core/
# torch.json; scan.cumsum_all f32 0.211 ms, f64 0.387 ms at 2^26); RUN_TORCH=1 runs it
# again at the end.
# Every step shares one kernel cache, in an order that compiles each scan program once
# (NVIDIA compiles take seconds: the first run lost its variants to them). Written for
# `timeout 45`: each step gets what is left of 43 s and is skipped below 3 s.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/core; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-core KILN_TUNE=off; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s)
el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r.tgz -C $OUT r; }
left() { echo $(( ${1:-43} - ($(date +%s) - t0) )); }
$K info > $R/info.txt 2>&1

# t TAG CASE LIMIT: one case of the scan suite in its small mode (3-item groups, short
# lines), into the shared kernel cache.
t() {
  local l=$(left); [ $l -gt $3 ] && l=$3
  [ $l -lt 3 ] && { echo "$1 skipped (time)" >> $R/tests.txt; return; }
  KILN_TEST_KEEP_CACHE_ENV=1 KILN_TEST_SMALL=1 CK_FORK=no KILN_LOG=error CK_RUN_CASE=$2 \
    timeout $l build-gpu/tests/test_scan > $R/test-$1.txt 2>&1
  echo "test_scan $2 rc=$?" >> $R/tests.txt
}
# b TAG FILTER DTYPES SIZES LIMIT [OVERRIDE...]: one `kiln bench` run.
b() {
  local tag=$1 f=$2 dt=$3 sz=$4 lim=$5; shift 5
  local ov=() l; for o in "$@"; do ov+=(--override "$o"); done
  l=$(left); [ $l -gt $lim ] && l=$lim
  [ $l -lt 3 ] && { echo "$tag skipped (time)" >> $R/variants.txt; return; }
  timeout $l $K bench --no-startup --json --dtype $dt --sizes $sz --filter "$f" "${ov[@]}" \
    > $R/bench-$tag.json 2>>$R/err.txt
  echo "$tag rc=$? filter=$f sizes=$sz $*" >> $R/variants.txt
}

# 1. The scan suite's look-back cases in small mode (CPU shapes: short NVIDIA compiles).
t lb single_pass 12
el tests
# 2. Scans at the defaults: whole tensors and rows (64 bytes per item), then wider groups.
b sc-defaults scan.cumsum_all,scan.cumsum_rows f32,f64 2^22,2^26 16
b sc-wg512 scan.cumsum_all f32,f64 2^26 5 "scan:wg_size=512"
el scan
# 5. The other core cases at their defaults (2^10: the fixed cost of one command).
b core-defaults copy.,binary.mul_scalar,cast.,random.normal f32 2^10,2^26 10
el core
if [ "$RUN_TORCH" = 1 ]; then
  timeout 15 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^10,2^22,2^26 \
    --filter scan.cumsum_all,scan.cumsum_rows,copy.,binary.mul_scalar,cast.,random.normal \
    --out $R/torch.json > $R/torch.log 2>&1
  el torch
fi
tar czf $OUT/r.tgz -C $OUT r
