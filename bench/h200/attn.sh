#!/bin/bash
# Run on the GPU machine from the checkout root, with build-gpu/ (a release build) present:
#   bash bench/h200/attn.sh          (results under $OUT/r/attn, packed into $OUT/r-attn.tgz)
# Issue 17, attention, at the reference shape (batch 8, 16 heads, 4096 tokens, head 128:
# kiln bench size 2^26):
#   - test_nn_attention in the background from the start (its own program cache),
#   - every program timed below compiled first, in parallel (a tiny call each),
#   - each forward tile of $TILES with `kiln bench --override attention:tile=N` (forward and
#     causal, f32),
#   - each backward table of $BWDS with `--override attention:bwd=N` (f32; f64 tables 1, 3),
#   - the built-in defaults (KILN_TUNE=off): forward and causal in f64, f16 and bf16,
#   - PyTorch's scaled_dot_product_attention and its backward on the same shapes (f32).
# About 45 s in all (each step under `timeout`).
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/attn; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-attn; mkdir -p $KILN_CACHE_DIR
TILES=${TILES:-2 6 7 8 9 10 11}
BWDS=${BWDS:-1 2 3}
F=nn.attention,nn.attention_causal
t0=$(date +%s)
el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r-attn.tgz -C $OUT r/attn; }
$K info > $R/info.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >> $R/info.txt 2>&1
(KILN_CACHE_DIR=/tmp/kc-attn-t CK_FORK=no KILN_LOG=error timeout 50 nice \
   build-gpu/tests/test_nn_attention > $R/test-nn_attention.txt 2>&1
 echo "test_nn_attention rc=$?" >> $R/tests.txt) &
tp=$!
w=()
warm() { timeout 25 $K bench --no-startup --json --sizes 2^14 --reps 1 "$@" > /dev/null 2>>$R/err.txt & w+=($!); }
for t in $TILES; do warm --dtype f32 --filter nn.attention --override attention:tile=$t; done
for b in $BWDS; do warm --dtype f32 --filter nn.attn_backward --override attention:bwd=$b; done
warm --dtype f64 --filter nn.attn_backward
warm --dtype f64 --filter nn.attn_backward --override attention:bwd=3
warm --dtype f16 --filter nn.attn_backward
warm --dtype bf16 --filter nn.attn_backward
wait "${w[@]}"
el warm
for t in $TILES; do
  timeout 8 $K bench --no-startup --json --dtype f32 --sizes 2^26 --reps 3 --filter $F \
    --override attention:tile=$t > $R/bench-f32-tile$t.json 2>>$R/err.txt
done
el tiles
for b in $BWDS; do
  timeout 8 $K bench --no-startup --json --dtype f32 --sizes 2^26 --reps 2 \
    --filter nn.attn_backward --override attention:bwd=$b > $R/bench-f32-bwd$b.json 2>>$R/err.txt
done
el backward
for b in 1 3; do
  timeout 8 $K bench --no-startup --json --dtype f64 --sizes 2^26 --reps 1 \
    --filter nn.attn_backward --override attention:bwd=$b > $R/bench-f64-bwd$b.json 2>>$R/err.txt
done
for d in f64 f16 bf16; do
  KILN_TUNE=off timeout 8 $K bench --no-startup --json --dtype $d --sizes 2^26 --reps 2 \
    --filter $F > $R/bench-$d-rule.json 2>>$R/err.txt
done
el defaults
timeout 15 python3 bench/peers_torch.py --no-startup --dtype f32 --sizes 2^26 --reps 3 \
  --filter $F,nn.attn_backward --out $R/torch-f32.json >> $R/torch.log 2>&1
el torch
wait $tp
el tests
tar czf $OUT/r-attn.tgz -C $OUT r/attn
