#!/bin/bash
# Run on the GPU machine from the checkout root, build-gpu/ (a release build) present:
#   bash bench/h200/conv.sh
# Convolution and pooling (issue 17), the closing run of 2026-12-02, most important first
# (under 45 s; each stage writes its own file, so a timeout keeps what ran before it):
#  1. route 4 per pass on the reference layer (batch 64 of 64 x 56 x 56, 3x3, padding 1:
#     bench/conv_routes.c; forward, backward-data, backward-weight) in f32 with the defaults
#     (tile 1, the weight gradient tile 2) and tiles 1 and 4, each checked against route 2
#     (rel_err): the rewritten weight gradient (loads along K) has not run on the H200 yet;
#  2. kiln bench's nn.conv2d, nn.conv2d_bwd and nn.max_pool2d rows at 2^26 with the built-in
#     defaults, one file per dtype: f32, f16, bf16, f64 (PyTorch's rows for the same cases are
#     in docs/nn_conv.md, from the first run);
#  3. the nn_conv suite in its small mode (KILN_TEST_SMALL=1: fewer cases and programs; the
#     full suite ran past 25 s on the H200, NVIDIA building every (dtype, tile) program).
# Results under $OUT/r/conv/ (docs/nn_conv.md, "Measured").
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/conv; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-conv; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
git log --oneline -1 > $R/commit.txt 2>&1
timeout 9 build-gpu/bench/conv_routes --reps 5 --dtype f32 --only "default;route=4 tile=1;route=4 tile=4" > $R/routes-f32.json 2>> $R/routes-err.txt
el routes
for dt in f32 f16 bf16 f64; do
  timeout 5 $K bench --no-startup --json --sizes 2^26 --dtype $dt --filter nn.conv2d,nn.max_pool2d > $R/bench-$dt.json 2>> $R/err.txt
  el bench-$dt
done
KILN_TEST_SMALL=1 CK_FORK=no KILN_LOG=error timeout 14 build-gpu/tests/test_nn_conv > $R/test-nn_conv-small.txt 2>&1
echo "test_nn_conv (small) rc=$?" >> $R/tests.txt
el tests
$K info > $R/info.txt 2>&1
