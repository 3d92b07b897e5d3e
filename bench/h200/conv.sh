#!/bin/bash
# Run on the GPU machine from the checkout root, build-gpu/ (a release build) present:
#   bash bench/h200/conv.sh
# Convolution and pooling (issue 17): the nn_conv suite; kiln bench's nn.conv2d, nn.conv2d_bwd
# and nn.max_pool2d rows at 2^26 (batch 64 of 64 x 56 x 56, 3x3, padding 1) in f32, f64, f16 and
# bf16 with the built-in defaults, then f32 variants of the conv tuner family through
# --override; PyTorch (cuDNN) on the same rows; route 4's tiles per pass (forward,
# backward-data, backward-weight: bench/conv_routes.c) in f32, f16 and bf16. Results under
# $OUT/r/conv/ (docs/nn_conv.md, "Measured"); under 60 s.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/conv; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-conv; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
$K info > $R/info.txt 2>&1
CK_FORK=no KILN_LOG=error timeout 25 build-gpu/tests/test_nn_conv > $R/test-nn_conv.txt 2>&1
echo "test_nn_conv rc=$?" >> $R/tests.txt
el tests
B="--no-startup --json --sizes 2^26"
timeout 12 $K bench $B --dtype f32,f64,f16,bf16 --filter nn.conv2d,nn.max_pool2d > $R/bench.json 2>> $R/err.txt
el bench
# f32 variants: route 4's tiles forced for every pass (the defaults mix tiles 1 and 2).
for v in "route=4 tile=1" "route=4 tile=2" "route=4 tile=4"; do
  timeout 5 $K bench $B --dtype f32 --filter nn.conv2d --override "conv:$v" > "$R/bench-f32-${v// /_}.json" 2>> $R/err.txt
done
el variants
timeout 14 python3 bench/peers_torch.py --no-startup --dtype f32,f64,f16,bf16 --sizes 2^26 --filter nn.conv2d,nn.max_pool2d --out $R/torch.json >> $R/torch.log 2>&1
el torch
# Every tile per pass on the reference layer (medians of 5; f16/bf16: route 4 only).
CR=build-gpu/bench/conv_routes
ONLY="default;route=4 tile=1;route=4 tile=2;route=4 tile=3;route=4 tile=4"
for dt in f32 f16 bf16; do
  timeout 5 $CR --reps 5 --dtype $dt --only "$ONLY" > $R/routes-$dt.json 2>> $R/routes-err.txt
done
el routes
