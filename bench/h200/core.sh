#!/bin/bash
# Issue 21, core families (random normal, copy, casts, scalar and broadcast elementwise): the
# tests, then every launch variant the defaults could take, timed with `kiln bench` next to
# PyTorch in the same run, to pick the built-in defaults (docs/tuning.md, "Elementwise, casts,
# copies and random normals").
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
for t in random cast elementwise complex; do
  (KILN_CACHE_DIR=/tmp/kc-test-$t CK_FORK=no KILN_LOG=error timeout 45 build-gpu/tests/test_$t \
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
b defaults copy.,random.,binary.,cast.,unary.neg f32,f64
left && timeout 25 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes $S \
  --filter copy.,random.,binary.,cast.,unary.neg --out $R/torch.json >> $R/torch.log 2>&1
el defaults

# Variants, most telling first (the time guard cuts the tail):
# random.normal: blocks per work-item, lanes, local size; kiln_copy: the buffer copy against
# the kernel's shapes; flat elementwise (f32 mul_scalar, neg, add; the broadcasts take the
# flat launch's items per work-item); casts: elements per work-item.
E=binary.,unary.neg
b rng-b2 random. f32,f64 "random:blocks_per_item=2"
b copy-buffer copy. f32,f64 "copy:kernel=0"
b ew-i2v4 $E f32 "elementwise:items_per_thread=2 vec_width=4"
b cast-i8 cast. f32,f64 "cast:items_per_thread=8"
el round1
b rng-b4 random. f32,f64 "random:blocks_per_item=4"
b copy-i2 copy. f32,f64 "copy:items_per_thread=2"
b ew-i4v4 $E f32 "elementwise:items_per_thread=4 vec_width=4"
b cast-i1 cast. f32,f64 "cast:items_per_thread=1"
el round2
b copy-i8 copy. f32,f64 "copy:items_per_thread=8"
b ew-i1v4 $E f32 "elementwise:items_per_thread=1 vec_width=4"
b rng-v2 random. f32,f64 "random:vec_width=2"
b ew-i8v1 $E f32 "elementwise:items_per_thread=8 vec_width=1"
b copy-v1 copy. f32,f64 "copy:vec_width=1"
b rng-wg128 random. f32,f64 "random:wg_size=128"
b cast-i2 cast. f32,f64 "cast:items_per_thread=2"
b ew-i4v2 $E f32 "elementwise:items_per_thread=4 vec_width=2"
b rng-wg512-b2 random. f32,f64 "random:wg_size=512 blocks_per_item=2"
b copy-i2-wg512 copy. f32,f64 "copy:items_per_thread=2 wg_size=512"
el round3
tar czf $OUT/r.tgz -C $OUT r
