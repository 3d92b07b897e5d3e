#!/bin/bash
# The closing measurement of a session on the H200 (docs/performance.md): STAGE=A runs the test
# binaries of the families changed (in parallel, NVIDIA's compiler being the bottleneck) and
# `kiln bench` with built-in defaults (KILN_TUNE=off) for them; STAGE=B the PyTorch peers of the
# same cases and the i32 sort rows. Run from the checkout root with build-gpu/ present:
#   STAGE=A bash bench/h200/final.sh; STAGE=B bash bench/h200/final.sh
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-final; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r.tgz -C $OUT r; }
F=${F:-nn.,scan.,sort.,expr.,user.,copy.kiln_copy,fft.c2c}
S=2^22,2^26
if [ "$STAGE" = A ]; then
  $K info > $R/info.txt 2>&1
  for t in nn nn_train nn_attention nn_conv scan sort expr user_kernel elementwise random linalg linalg_spectral fft; do
    (KILN_CACHE_DIR=/tmp/kc-t-$t CK_FORK=no KILN_LOG=error timeout ${TT:-130} build-gpu/tests/test_$t \
       > $R/test-$t.txt 2>&1; echo "test_$t rc=$?" >> $R/tests.txt) &
  done
  wait; el tests
  KILN_TUNE=off timeout ${TB:-300} $K bench --no-startup --json --dtype f32,f64 --sizes $S --filter "$F" \
    > $R/kiln.json 2> $R/kiln-err.txt; el bench
fi
if [ "$STAGE" = B ]; then
  timeout ${TP:-200} python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes $S --filter "$F" \
    --out $R/torch.json > $R/torch.log 2>&1; el torch
  KILN_TUNE=off timeout 40 $K bench --no-startup --json --dtype i32 --sizes $S --filter sort. > $R/kiln-i32.json 2>> $R/kiln-err.txt
  timeout 30 python3 bench/peers_torch.py --no-startup --dtype i32 --sizes $S --filter sort. --out $R/torch-i32.json >> $R/torch.log 2>&1
  el i32
fi
