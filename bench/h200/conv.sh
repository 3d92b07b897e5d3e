#!/bin/bash
# Run on the GPU machine from the checkout root, build-gpu/ (a release build) present:
#   bash bench/h200/conv.sh
# Convolution and pooling (issue 17), second run of 2026-12-02 (the first: PyTorch's rows
# are in docs/nn_conv.md, "Measured"): route 4 per pass on the reference layer (batch 64 of
# 64 x 56 x 56, 3x3, padding 1: bench/conv_routes.c, forward, backward-data, backward-weight)
# with the defaults (tile 1, the weight gradient tile 2) and tiles 1 and 4 in f32; kiln bench's nn.conv2d, nn.conv2d_bwd and nn.max_pool2d
# rows at 2^26 in f32 and f16 with the built-in defaults; then the nn_conv suite (its
# many NVIDIA builds last; it ran past 25 s in the first run). Results under $OUT/r/conv/
# (docs/nn_conv.md, "Measured"); under 60 s.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/conv; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-conv; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
$K info > $R/info.txt 2>&1
git log --oneline -1 > $R/commit.txt 2>&1
CR=build-gpu/bench/conv_routes
timeout 10 $CR --reps 5 --dtype f32 --only "default;route=4 tile=1;route=4 tile=4" > $R/routes-f32.json 2>> $R/routes-err.txt
el routes
timeout 8 $K bench --no-startup --json --sizes 2^26 --dtype f32,f16 --filter nn.conv2d,nn.max_pool2d > $R/bench.json 2>> $R/err.txt
el bench
CK_FORK=no KILN_LOG=error timeout 40 build-gpu/tests/test_nn_conv > $R/test-nn_conv.txt 2>&1
echo "test_nn_conv rc=$?" >> $R/tests.txt
el tests
