#!/bin/bash
# Issue 21, core families on the H200 (scans over whole tensors and rows, copy, scalar
# multiply, casts, random normals): the new tests, then `kiln bench` with the built-in
# defaults (KILN_TUNE=off) and launch variants through --override, PyTorch beside them.
# Run from the checkout root with build-gpu/ (a release build) present:
#   bash bench/h200/core.sh        (results under $OUT/r/core/, packed into $OUT/r.tgz)
# bench-<tag>.json is one `kiln bench` run; variants.txt says which --override each used.
# At most about 60 s: every step gets what is left of 58 s, and is skipped below 3 s.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/core; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-core KILN_TUNE=off; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s)
el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r.tgz -C $OUT r; }
left() { echo $(( ${1:-58} - ($(date +%s) - t0) )); }
$K info > $R/info.txt 2>&1

# Tests, in parallel (each its own kernel cache), 12 s at most: the look-back cases of the
# scan suite (every tile size the defaults and the tuner pick, adversarial schedules) and
# the random suite.
tst() {
  (KILN_CACHE_DIR=/tmp/kc-t-$1 CK_FORK=no KILN_LOG=error CK_RUN_CASE=$3 timeout 12 \
     build-gpu/tests/test_$2 > $R/test-$1.txt 2>&1; echo "test_$2 $3 rc=$?" >> $R/tests.txt) &
}
tst lb scan lb_tiles
tst sp scan single_pass_stress
tst rng random ""
wait
el tests

F=scan.cumsum_all,scan.cumsum_rows,copy.,binary.mul_scalar,cast.,random.normal
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
# 2^10: the fixed cost of one command (kiln's device time against PyTorch's), next to 2^22
# and 2^26.
b defaults $F f32,f64 2^10,2^22,2^26
el defaults
# PyTorch for the same cases, at most 12 s (its start-up is most of it).
timeout 12 python3 bench/peers_torch.py --no-startup --dtype f32,f64 \
  --sizes 2^10,2^22,2^26 --filter $F --out $R/torch.json > $R/torch.log 2>&1
el torch
# Whole-tensor scans: bytes per item of the single pass (the default is 128 for whole
# tensors, 64 for rows), the direct path (16-byte vector loads and stores, no stage) and
# the group size that bounds the tiles. f32 and f64 at 2^26.
S=scan.cumsum_all
b sc-lb64 $S f32,f64 2^26 "scan:lb_bytes=64"
b sc-direct $S f32,f64 2^26 "scan:lb_direct=1"
b sc-lb256 $S f32,f64 2^26 "scan:lb_bytes=256"
b sc-direct-lb256 $S f32,f64 2^26 "scan:lb_direct=1 lb_bytes=256"
b sc-direct-wg512 $S f32,f64 2^26 "scan:lb_direct=1 wg_size=512"
b sc-rows-direct scan.cumsum_rows f32,f64 2^26 "scan:lb_direct=1"
el scan
# Copies and normals (f32 at 2^26: the goals' case), as long as time is left.
b copy-wg1024 copy. f32 2^26 "copy:wg_size=1024"
b rng-wg512 random.normal f32 2^26 "random:wg_size=512"
b copy-i8 copy. f32 2^26 "copy:items_per_thread=8"
el core
tar czf $OUT/r.tgz -C $OUT r
