#!/bin/bash
# Scans on the H200 (issue 21): whole-tensor scan.cumsum_all against PyTorch (torch.cumsum,
# CUB's single-pass scan), with the row and column cases beside it so that a change of the
# whole-tensor path is seen not to slow them. Run from the checkout root with build-gpu/ (a
# release build) present:
#   bash bench/h200/scan.sh        (results under $OUT/r/scan/, packed into $OUT/r.tgz)
# bench-<tag>.json is one `kiln bench` run (KILN_TUNE=off: the built-in defaults, then
# variants set with --override scan:...); variants.txt says which override each used.
# Variants: single_pass 1 (NAME_lookback: one look-back per tile of 64 bytes per item) and 2
# (NAME_chain: one look-back per chunk of items_per_thread elements per item, the chunk's
# tiles after the first read twice), items_per_thread 16..128 (f32: chunks of 1..8 tiles of
# 16 elements per item; f64: 2..16 tiles of 8; the default is 32 f32, 16 f64) and
# groups_per_cu 2..8 (NAME_chain's groups loop over the chunks: 132 x that many groups; the
# default is 4). Every step shares one kernel cache (NVIDIA
# compiles take seconds); each gets what is left of 56 s and is skipped below 3 s.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/scan; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-scan KILN_TUNE=off; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s)
el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r.tgz -C $OUT r; }
left() { echo $(( ${1:-56} - ($(date +%s) - t0) )); }
$K info > $R/info.txt 2>&1

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
A=scan.cumsum_all
# 0. Compile the f32 and f64 scan programs into the shared cache (NVIDIA: seconds each; the
# first run of 2026-12-02 lost a 16 s step to them) at a small size.
b warm $A f32,f64 2^16 30
el warm
# 1. The look-back tests on the GPU (single_pass 1 and 2, adversarial groups of 1 to 1024
# items over 2^20 + 3 elements, f32 and f64), from the shared cache.
l=$(left); [ $l -gt 10 ] && l=10
[ $l -ge 3 ] && KILN_TEST_KEEP_CACHE_ENV=1 CK_FORK=no KILN_LOG=error \
  CK_RUN_CASE=single_pass_stress timeout $l build-gpu/tests/test_scan > $R/test-stress.txt 2>&1
echo "test_scan single_pass_stress rc=$?" >> $R/tests.txt
el tests
# 2. The defaults, all three scan cases.
b defaults scan.cumsum_all,scan.cumsum_rows,scan.cumsum_cols f32,f64 2^22,2^26 8
el defaults
# 3. PyTorch, same cases and sizes.
l=$(left); [ $l -gt 12 ] && l=12
[ $l -ge 3 ] && timeout $l python3 bench/peers_torch.py --no-startup --dtype f32,f64 \
  --sizes 2^22,2^26 --filter scan.cumsum_all,scan.cumsum_rows,scan.cumsum_cols \
  --out $R/torch.json > $R/torch.log 2>&1
el torch
# 4. The whole-tensor variants, the likeliest first.
b sp1 $A f32,f64 2^22,2^26 4 "scan:single_pass=1 items_per_thread=4 groups_per_cu=8"
for v in 16-4 64-4 128-4 32-8 32-2 64-8 16-8; do
  i=${v%-*} g=${v#*-}
  b c$i-g$g $A f32,f64 2^22,2^26 4 "scan:single_pass=2 items_per_thread=$i groups_per_cu=$g"
done
b c32-g4-w512 $A f32,f64 2^22,2^26 4 "scan:single_pass=2 items_per_thread=32 groups_per_cu=4 wg_size=512"
el variants
tar czf $OUT/r.tgz -C $OUT r
