#!/bin/bash
# Session 25, first H200 call: random normals (f32 -2 ln u without a division, sines from the
# nearest quarter turn) and f64 gelu (kiln's own exp) against the tree before them, alternating
# builds (build-gpu-old/: lib and tools of 001130d; build-gpu/: this tree), with KILN_TUNE=off,
# PyTorch in the same run; then session 24's verify24 checks and the changed suites.
# NAMES=s25a LIMIT=560 bash bench/h200/round.sh; results under $OUT/r/s25a/.
source bench/h200/common.sh s25a
F=random.normal,nn.gelu,nn.gelu_bwd,copy.kiln_copy
for round in 1 2; do
  for side in old new; do
    k=build-gpu/tools/kiln; [ $side = old ] && k=build-gpu-old/tools/kiln
    KILN_TUNE=off KILN_CACHE_DIR=/tmp/kc-s25a-$side timeout -k 1 90 $k bench --no-startup --json \
      --reps 9 --dtype f32,f64 --sizes 2^22,2^26 --filter $F > $R/bench-$side-$round.json 2>> $R/err.txt
    echo "$side $round rc=$?" >> $R/runs.txt; el $side-$round
  done
done
timeout 90 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^22,2^26 \
  --filter random.normal,nn.gelu,copy.kiln_copy --out $R/torch.json > /dev/null 2>> $R/err.txt
el torch
KILN_TUNE=off b bcast64 60 --dtype f64 --sizes 2^22,2^26 \
  --filter binary.add_row_bcast,binary.add_col_bcast,binary.add,unary.exp,copy.kiln_copy
for t in random nn elementwise tuner; do
  case $t in nn) c=nn ;; elementwise) c=flat_shapes ;; tuner) c=choices ;; *) c= ;; esac
  (env ${c:+CK_RUN_CASE=$c} KILN_CACHE_DIR=/tmp/kc-t-$t CK_FORK=no KILN_LOG=error timeout ${TT:-240} \
     build-gpu/tests/test_$t > $R/test-$t.txt 2>&1
   echo "test_$t rc=$?" >> $R/runs.txt) &
done
wait; el tests
