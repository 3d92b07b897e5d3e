#!/bin/bash
# Run on the GPU machine from the checkout root, with build-gpu/ (a release build) present:
#   bash bench/h200/attn.sh          (results under $OUT/r/attn, packed into $OUT/r-attn.tgz)
# Issue 17, attention: at the reference shape (batch 8, 16 heads,
# 4096 tokens, head 128: kiln bench size 2^26, the tuner's bucket mnk.2^38)
#   - every forward tile timed by the `attention` tuner family (tune-*.json: each candidate),
#   - kiln bench of nn.attention and nn.attention_causal with the rule's tile (KILN_TUNE=off)
#     and with the tuned one (KILN_TUNE=cached after the tune), f32 and f64,
#   - PyTorch's scaled_dot_product_attention on the same shapes,
#   - the backward pass (nn.attn_backward) at 1024 tokens (2^24), kiln and PyTorch,
#   - last, the nn_train tests.
# About 100 s in all (each step under `timeout`).
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/attn; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-attn; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s)
el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r-attn.tgz -C $OUT r/attn; }
$K info > $R/info.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >> $R/info.txt 2>&1
b() { timeout $1 $K bench --no-startup --json --dtype $2 --sizes $3 --filter $4 > $R/bench-$4-$2$SUF.json 2>>$R/err.txt; }
p() { timeout $1 python3 bench/peers_torch.py --no-startup --dtype $2 --sizes $3 --filter $4 --out $R/torch-$4-$2.json >> $R/torch.log 2>&1; }
KILN_TUNE=off SUF=-rule b 10 f32 2^26 nn.attention
el rule-f32
timeout 15 $K tune --family attention --dtype f32 --sizes 2^38 --reps 2 --no-copy --json > $R/tune-f32.json 2>>$R/err.txt
el tune-f32
KILN_TUNE=cached SUF=-tuned b 8 f32 2^26 nn.attention
el tuned-f32
p 12 f32,f64 2^26 nn.attention
el torch
KILN_TUNE=off SUF=-rule b 8 f64 2^26 nn.attention
timeout 10 $K tune --family attention --dtype f64 --sizes 2^38 --reps 1 --no-copy --json > $R/tune-f64.json 2>>$R/err.txt
el tune-f64
SUF=-rule b 7 f32 2^24 nn.attn_backward
p 7 f32 2^24 nn.attn_backward
el backward
cp -r $KILN_CACHE_DIR/tuning $R/ 2>/dev/null
# Last: the tests (the tiles on this GPU's 32-, 64- and 128-wide head programs).
CK_FORK=no KILN_LOG=error timeout 25 build-gpu/tests/test_nn_train > $R/test-nn_train.txt 2>&1
echo "test_nn_train rc=$?" >> $R/tests.txt
el tests
tar czf $OUT/r-attn.tgz -C $OUT r/attn
