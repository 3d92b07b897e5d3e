#!/bin/bash
# Run on the GPU machine from the checkout root, with build-gpu/ (a release build) present:
#   bash bench/h200/attn.sh          (results under $OUT/r/attn, packed into $OUT/r-attn.tgz)
# Issue 17, attention, at the reference shape (batch 8, 16 heads, 4096 tokens, head 128:
# kiln bench size 2^26), most important first, within 58 s (steps are skipped when the time
# left is short; times.txt says what ran):
#   1. the programs compiled in parallel (a tiny call each), into one kiln cache;
#   2. the defaults (KILN_TUNE=off; the rule: forward tile 6, backward table 6), f32, twice in
#      separate processes, 3 repetitions each: forward and causal, then the backward under the
#      cltrace shim (bench/cltrace.c: device ms per kernel);
#   3. the backward tables $BWDS (`--override attention:bwd=N`; 7 is 6 with one dQ pass, 5 and
#      4 the other fused ones, again beside 6 in one run),
#      traced, and table 2 (the deterministic seven-product one) without the shim;
#   4. bf16 forward, causal and backward with the rule (the fused table in a half dtype);
#   5. test_nn_attention's backward case (the rule, $BWDS and 2 against the analytic
#      gradients, KILN_TEST_ATT_BWD; f16 and bf16 with the rule, table 6) with the same kiln cache
#      (KILN_TEST_KEEP_CACHE_ENV);
#   6. PyTorch's forward, causal and backward rows (first run of this session: 23.4, 12.1,
#      72.8 ms), then f64 with the rule, if time is left.
# The first run of this session (docs/nn.md; this script's previous version in git) timed
# the forward tiles 6, 8, 11 in two passes and backward tables 2 and the fused ones (4-6 now).
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
SHIM=$PWD/build-gpu/bench/libcltrace.so
R=$OUT/r/attn; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-attn; mkdir -p $KILN_CACHE_DIR
BWDS=${BWDS:-7 5 4}
t0=$(date +%s)
el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r-attn.tgz -C $OUT r/attn; }
left() { echo $(( 58 - ($(date +%s) - t0) )); }
# b NAME TIMEOUT [kiln bench options]: one kiln bench process, skipped when time is short
b() { local n=$1 to=$2; shift 2
  local l=$(left); [ $to -gt $l ] && to=$l
  [ $to -ge 2 ] || { echo "skipped $n" >> $R/times.txt; return; }
  KILN_TUNE=off timeout -k 1 $to $K bench --no-startup --json "$@" > $R/bench-$n.json 2>> $R/err.txt
  echo "$n rc=$?" >> $R/runs.txt; }
# tr NAME TIMEOUT [kiln bench options]: the same under cltrace
tr() { local n=$1 to=$2; shift 2
  local l=$(left); [ $to -gt $l ] && to=$l
  [ $to -ge 2 ] || { echo "skipped $n" >> $R/times.txt; return; }
  KILN_TUNE=off CLTRACE_OUT=$R/trace-$n.txt LD_PRELOAD=$SHIM timeout -k 1 $to \
    $K bench --no-startup --json "$@" > $R/bench-$n.json 2>> $R/err.txt
  echo "$n rc=$?" >> $R/runs.txt; }
$K info > $R/info.txt 2>&1
w=()
warm() { timeout 20 $K bench --no-startup --json --sizes 2^14 --reps 1 "$@" > /dev/null 2>>$R/err.txt & w+=($!); }
warm --dtype f32 --filter nn.attn_backward
warm --dtype bf16 --filter nn.attn_backward
warm --dtype f16 --filter nn.attn_backward
warm --dtype f64 --filter nn.attn_backward
warm --dtype f64 --filter nn.attn_backward --override attention:bwd=1
for x in $BWDS 2; do warm --dtype f32 --filter nn.attn_backward --override attention:bwd=$x; done
wait "${w[@]}"
el warm
B="--dtype f32 --sizes 2^26 --filter nn.attn_backward"
for p in 1 2; do
  b fwd-rule-p$p 5 --dtype f32 --sizes 2^26 --reps 3 --filter nn.attention,nn.attention_causal
  tr bwd-rule-p$p 5 $B --reps 3
  el rule-p$p
done
for x in $BWDS; do tr bwd-$x 4 $B --reps 2 --override attention:bwd=$x; done
b bwd-2 4 $B --reps 2 --override attention:bwd=2
el bwd
b bf16-rule 6 --dtype bf16 --sizes 2^26 --reps 2 --filter nn.attention,nn.attention_causal,nn.attn_backward
el bf16
l=$(left)
if [ $l -ge 3 ]; then
  KILN_TEST_ATT_BWD="0 $BWDS 2" CK_RUN_CASE=nn_attention_bwd KILN_TEST_KEEP_CACHE_ENV=1 \
    KILN_CACHE=on CK_FORK=no KILN_LOG=error timeout -k 1 $(( l > 10 ? 10 : l )) \
    build-gpu/tests/test_nn_attention > $R/test-nn_attention-bwd.txt 2>&1
  echo "test_nn_attention (nn_attention_bwd) rc=$?" >> $R/tests.txt
fi
el tests
l=$(left)
if [ $l -ge 6 ]; then
  timeout -k 1 $(( l - 4 )) python3 bench/peers_torch.py --no-startup --dtype f32 --sizes 2^26 \
    --filter nn.attention,nn.attention_causal,nn.attn_backward --out $R/torch.json >> $R/torch.log 2>&1
fi
el torch
b f64-rule 5 --dtype f64 --sizes 2^26 --reps 1 --filter nn.attention,nn.attn_backward
el f64
tar czf $OUT/r-attn.tgz -C $OUT r/attn
