#!/bin/bash
# Run on the GPU machine from the checkout root, build-gpu/ (a release build) present:
#   bash bench/h200/conv.sh
# Convolution (issue 17): the nn_conv suite, every route and implicit-GEMM tile of the conv
# tuner family on the reference layer and two deeper ResNet-like layers (bench/conv_routes.c,
# forward, backward-data, backward-weight, f32 and f64), then kiln bench's nn.conv2d and
# nn.conv2d_bwd rows (built-in defaults) next to PyTorch in the same run. Results under
# $OUT/r/conv/ (docs/nn_conv.md, "Measured"); about 100 s.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/conv; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-conv; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
$K info > $R/info.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >> $R/info.txt 2>&1
CK_FORK=no KILN_LOG=error timeout 30 build-gpu/tests/test_nn_conv > $R/test-nn_conv.txt 2>&1
echo "test_nn_conv rc=$?" >> $R/tests.txt
el tests
# bench/conv_routes from the build, else compiled here against build-gpu/lib.
CR=build-gpu/bench/conv_routes
if [ ! -x $CR ]; then
  cc -O2 -o /tmp/conv_routes bench/conv_routes.c -Iinclude -Ibuild-gpu -Lbuild-gpu/lib -lkiln -lm \
    -Wl,-rpath,$PWD/build-gpu/lib > $R/cc.txt 2>&1 && CR=/tmp/conv_routes
fi
# The reference layer: x [64, 64, 56, 56] * w [64, 64, 3, 3], padding 1.
timeout 18 $CR --reps 7 --dtype f32 > $R/routes-64x64x56-f32.json 2> $R/routes-err.txt
timeout 10 $CR --reps 5 --dtype f64 > $R/routes-64x64x56-f64.json 2>> $R/routes-err.txt
el routes64
# Deeper layers (128 channels at 28x28, 256 at 14x14, batch 64): the 128-row tile's case.
timeout 6 $CR --reps 5 --dtype f32 --c 128 --k 128 --hw 28 > $R/routes-128x28.json 2>> $R/routes-err.txt
timeout 5 $CR --reps 5 --dtype f32 --c 256 --k 256 --hw 14 > $R/routes-256x14.json 2>> $R/routes-err.txt
el routes-deep
timeout 13 $K bench --no-startup --json --dtype f32,f64 --sizes 2^22,2^26 --filter nn.conv2d > $R/bench-nn.conv2d.json 2>> $R/err.txt
el bench
timeout 18 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^22,2^26 --filter nn.conv2d --out $R/torch-nn.conv2d.json >> $R/torch.log 2>&1
el torch
