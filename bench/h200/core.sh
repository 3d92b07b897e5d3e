#!/bin/bash
# Issue 21, core families on the H200 (scans over whole tensors and rows, copy, scalar
# multiply, casts, random normals): the new look-back tests, then `kiln bench` with the
# built-in defaults (KILN_TUNE=off) and launch variants through --override.
# Run from the checkout root with build-gpu/ (a release build) present:
#   bash bench/h200/core.sh        (results under $OUT/r/core/, packed into $OUT/r.tgz)
# bench-<tag>.json is one `kiln bench` run; variants.txt says which --override each used.
# PyTorch for these cases (bench/peers_torch.py --filter
# scan.cumsum_all,scan.cumsum_rows,copy.,binary.mul_scalar,cast.,random.normal --sizes
# 2^10,2^22,2^26 --dtype f32,f64) ran in the first run of 2026-12-02 (/work/gpu-results/core/
# torch.json); RUN_TORCH=1 runs it again at the end.
# Every step shares one kernel cache: the tests compile the scan programs the variants use
# (NVIDIA compiles take seconds each; the first run lost its variants to them). At most about
# 60 s: each step gets what is left of 58 s and is skipped below 3 s.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/core; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-core KILN_TUNE=off; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s)
el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r.tgz -C $OUT r; }
left() { echo $(( ${1:-58} - ($(date +%s) - t0) )); }
$K info > $R/info.txt 2>&1

# t TAG CASE LIMIT: one case of the scan suite in its small mode (3-item groups, short
# lines: every lb_bytes value with and without the direct path, the epochs' wrap, 1-item
# groups), one after another so that each program is compiled once.
t() {
  local l=$(left 30); [ $l -gt $3 ] && l=$3
  [ $l -lt 3 ] && { echo "$1 skipped (time)" >> $R/tests.txt; return; }
  KILN_TEST_KEEP_CACHE_ENV=1 KILN_TEST_SMALL=1 CK_FORK=no KILN_LOG=error CK_RUN_CASE=$2 \
    timeout $l \
    build-gpu/tests/test_scan > $R/test-$1.txt 2>&1
  echo "test_scan $2 rc=$?" >> $R/tests.txt
}
t lb lb_tiles 25
t ep lb_epochs 8
t sp single_pass_stress 8
el tests

# b TAG FILTER DTYPES SIZES [OVERRIDE...]: one `kiln bench` run, at most 10 s.
b() {
  local tag=$1 f=$2 dt=$3 sz=$4; shift 4
  local ov=() l; for o in "$@"; do ov+=(--override "$o"); done
  l=$(left); [ $l -lt 3 ] && { echo "$tag skipped (time)" >> $R/variants.txt; return; }
  [ $l -gt 10 ] && l=10
  timeout $l $K bench --no-startup --json --dtype $dt --sizes $sz --filter "$f" "${ov[@]}" \
    > $R/bench-$tag.json 2>>$R/err.txt
  echo "$tag rc=$? filter=$f sizes=$sz $*" >> $R/variants.txt
}
# Scans: the defaults (whole tensors 128 bytes per item, rows 64), then the direct path
# (16-byte vector loads and stores, no stage: a run-time flag, same program), its group
# size, and the other per-item sizes (programs the tests compiled).
b sc-defaults scan.cumsum_all,scan.cumsum_rows f32,f64 2^10,2^22,2^26
S=scan.cumsum_all
b sc-direct $S f32,f64 2^22,2^26 "scan:lb_direct=1"
b sc-lb64 $S f32,f64 2^26 "scan:lb_bytes=64"
b sc-lb256 $S f32,f64 2^26 "scan:lb_bytes=256"
b sc-direct-lb256 $S f32,f64 2^26 "scan:lb_direct=1 lb_bytes=256"
b sc-direct-lb64 $S f32,f64 2^26 "scan:lb_direct=1 lb_bytes=64"
b sc-direct-wg512 $S f32,f64 2^26 "scan:lb_direct=1 wg_size=512"
b sc-direct-wg128 $S f32,f64 2^26 "scan:lb_direct=1 wg_size=128"
b sc-rows-direct scan.cumsum_rows f32,f64 2^26 "scan:lb_direct=1"
el scan
# The other core cases at their defaults (2^10: the fixed cost of one command), then the
# copy through clEnqueueCopyBuffer.
b core-defaults copy.,binary.mul_scalar,cast.,random.normal f32 2^10,2^26
b copy-buf copy. f32 2^26 "copy:kernel=0"
el core
if [ "$RUN_TORCH" = 1 ]; then
  timeout 15 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^10,2^22,2^26 \
    --filter scan.cumsum_all,scan.cumsum_rows,copy.,binary.mul_scalar,cast.,random.normal \
    --out $R/torch.json > $R/torch.log 2>&1
  el torch
fi
tar czf $OUT/r.tgz -C $OUT r
