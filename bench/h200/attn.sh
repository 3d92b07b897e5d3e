#!/bin/bash
# Run on the GPU machine from the checkout root, with build-gpu/ (a release build) present:
#   bash bench/h200/attn.sh          (results under $OUT/r/attn, packed into $OUT/r-attn.tgz)
# Issue 17, attention, at the reference shape (batch 8, 16 heads, 4096 tokens, head 128:
# kiln bench size 2^26), f32, most important first, within 58 s (steps are skipped when the
# time left is short; times.txt says what ran):
#   1. the programs compiled in parallel (a tiny call each), into one kiln cache;
#   2. the forward tiles, two passes in alternating processes, 3 repetitions each: the rule
#      (tile 8 in this commit; no override), $TILES (`--override attention:tile=N`); causal
#      in the first pass;
#   3. the backward tables under the cltrace shim (bench/cltrace.c: device ms per kernel, so
#      att_bwd_pre, att_bwd_dkdv and att_bwd_dq apart): the rule, then $BWDS
#      (`--override attention:bwd=N`);
#   4. test_nn_attention's backward case (the rule and $BWDS against the analytic gradients,
#      KILN_TEST_ATT_BWD) with the same kiln cache (KILN_TEST_KEEP_CACHE_ENV);
#   5. PyTorch's forward, causal and backward rows, if time is left (last session: 23.5, 12.1
#      and 73.2 ms).
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
SHIM=$PWD/build-gpu/bench/libcltrace.so
R=$OUT/r/attn; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-attn; mkdir -p $KILN_CACHE_DIR
TILES=${TILES:-6 11}
BWDS=${BWDS:-7 10 9 12 8 11 4}
t0=$(date +%s)
el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r-attn.tgz -C $OUT r/attn; }
left() { echo $(( 58 - ($(date +%s) - t0) )); }
# b NAME TIMEOUT [kiln bench options]: one kiln bench process, skipped when time is short
b() { local n=$1 to=$2; shift 2
  local l=$(left); [ $to -gt $l ] && to=$l
  [ $to -ge 2 ] || { echo "skipped $n" >> $R/times.txt; return; }
  timeout -k 1 $to $K bench --no-startup --json "$@" > $R/bench-$n.json 2>> $R/err.txt
  echo "$n rc=$?" >> $R/runs.txt; }
# tr NAME TIMEOUT [kiln bench options]: the same under cltrace
tr() { local n=$1 to=$2; shift 2
  local l=$(left); [ $to -gt $l ] && to=$l
  [ $to -ge 2 ] || { echo "skipped $n" >> $R/times.txt; return; }
  CLTRACE_OUT=$R/trace-$n.txt LD_PRELOAD=$SHIM timeout -k 1 $to \
    $K bench --no-startup --json "$@" > $R/bench-$n.json 2>> $R/err.txt
  echo "$n rc=$?" >> $R/runs.txt; }
$K info > $R/info.txt 2>&1
w=()
warm() { timeout 20 $K bench --no-startup --json --sizes 2^14 --reps 1 "$@" > /dev/null 2>>$R/err.txt & w+=($!); }
warm --dtype f32 --filter nn.attn_backward
warm --dtype f64 --filter nn.attn_backward
warm --dtype f64 --filter nn.attn_backward --override attention:bwd=1
for t in $TILES; do warm --dtype f32 --filter nn.attention --override attention:tile=$t; done
for x in $BWDS; do warm --dtype f32 --filter nn.attn_backward --override attention:bwd=$x; done
wait "${w[@]}"
el warm
F="--dtype f32 --sizes 2^26 --reps 3"
for p in 1 2; do
  c=nn.attention; [ $p = 1 ] && c=$c,nn.attention_causal
  b fwd-rule-p$p 5 $F --filter $c
  for t in $TILES; do
    b fwd-tile$t-p$p 4 $F --filter $c --override attention:tile=$t
  done
  el fwd-p$p
done
tr bwd-rule 4 --dtype f32 --sizes 2^26 --reps 2 --filter nn.attn_backward
for x in $BWDS; do
  tr bwd-$x 4 --dtype f32 --sizes 2^26 --reps 2 --filter nn.attn_backward \
    --override attention:bwd=$x
done
el bwd
l=$(left)
if [ $l -ge 3 ]; then
  KILN_TEST_ATT_BWD="0 $BWDS" CK_RUN_CASE=nn_attention_bwd KILN_TEST_KEEP_CACHE_ENV=1 KILN_CACHE=on \
    CK_FORK=no KILN_LOG=error \
    timeout -k 1 $(( l > 12 ? 12 : l )) build-gpu/tests/test_nn_attention > $R/test-nn_attention-bwd.txt 2>&1
  echo "test_nn_attention (nn_attention_bwd) rc=$?" >> $R/tests.txt
fi
el tests
l=$(left)
if [ $l -ge 4 ]; then
  timeout -k 1 $l python3 bench/peers_torch.py --no-startup --dtype f32 --sizes 2^26 \
    --filter nn.attention,nn.attention_causal,nn.attn_backward --out $R/torch.json >> $R/torch.log 2>&1
fi
el torch
tar czf $OUT/r-attn.tgz -C $OUT r/attn
