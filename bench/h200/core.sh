#!/bin/bash
# Issue 21, core families (random normal, copy, casts, scalar and broadcast elementwise): the
# tests, then launch variants the defaults could take, timed with `kiln bench` next to
# PyTorch in the same run, to pick the built-in defaults (docs/tuning.md: the families
# elementwise, cast, copy and random; docs/cli.md: `kiln bench --override`).
# Run on the GPU machine from the checkout root, with build-gpu/ (a release build) present:
#   bash bench/h200/core.sh        (results under $OUT/r/core/, packed into $OUT/r.tgz)
# Every `kiln bench` run uses KILN_TUNE=off (built-in defaults) plus the --override it names;
# its file name says which: bench-<tag>.json. At most ~100 s in all: each step is skipped
# once 95 s have passed.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/core; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-core; mkdir -p $KILN_CACHE_DIR
export KILN_TUNE=off
t0=$(date +%s)
el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r.tgz -C $OUT r; }
left() { [ $(( $(date +%s)-t0 )) -lt ${2:-95} ]; }
$K info > $R/info.txt 2>&1

# Tests, in parallel (each its own cache dir), before any timing.
for t in random cast elementwise complex index layout; do
  (KILN_CACHE_DIR=/tmp/kc-test-$t CK_FORK=no KILN_LOG=error timeout 60 build-gpu/tests/test_$t \
     > $R/test-$t.txt 2>&1; echo "test_$t rc=$?" >> $R/tests.txt) &
done
wait
el tests

S=2^22,2^26
# b TAG FILTER DTYPES [OVERRIDE...]
b() {
  local tag=$1 filter=$2 dt=$3; shift 3
  local ov=(); for o in "$@"; do ov+=(--override "$o"); done
  left && timeout 20 $K bench --no-startup --json --dtype $dt --sizes $S --filter "$filter" \
    "${ov[@]}" > $R/bench-$tag.json 2>>$R/err.txt
}
# Defaults of every case this script is about, then PyTorch for the same cases.
b defaults copy.,random.,binary.,cast.,unary.neg,index.gather_rows f32,f64
left && timeout 25 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes $S \
  --filter copy.,random.,binary.,cast.,unary.neg,index.gather_rows --out $R/torch.json >> $R/torch.log 2>&1
el defaults

# Variants, most telling first (the time guard cuts the tail). The first run (2026-12-02,
# /work/gpu-results/core) picked the defaults these are measured against: f32 flat launches
# 2 items of 4-wide vectors (broadcasts then take aligned 4-wide steps), normals 4 blocks
# per work-item, copies through the kernel.
E=binary.,unary.neg
b ew-i4v1 $E f32 "elementwise:items_per_thread=4 vec_width=1"
b rng-wg128 random. f32,f64 "random:wg_size=128"
b rng-b8 random. f32,f64 "random:blocks_per_item=8"
b copy-i2 copy. f32,f64 "copy:items_per_thread=2"
el round1
b ew-i1v4 $E f32 "elementwise:items_per_thread=1 vec_width=4"
b rng-wg512 random. f32,f64 "random:wg_size=512"
b rng-b1 random. f32,f64 "random:blocks_per_item=1"
b copy-buffer copy. f32,f64 "copy:kernel=0"
el round2
b ew-i2v2 $E f32 "elementwise:items_per_thread=2 vec_width=2"
b rng-b2-v2 random. f32,f64 "random:blocks_per_item=2 vec_width=2"
b copy-v1 copy. f32,f64 "copy:vec_width=1"
b cast-i2 cast. f32,f64 "cast:items_per_thread=2"
b ew-i4v4 $E f32 "elementwise:items_per_thread=4 vec_width=4"
el round3
tar czf $OUT/r.tgz -C $OUT r
