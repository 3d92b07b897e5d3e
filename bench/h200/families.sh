#!/bin/bash
# Run on the GPU machine from the checkout root (docs/performance.md, "New families on the H200"):
#   run with carry [.device, build-gpu/lib, build-gpu/tools, ...]: bash bench/h200/<this script>
# Results land under $OUT/r and are packed into $OUT/r.tgz after each stage.
# New families on the H200: their tests, kiln bench rows and PyTorch peers in one run.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc; mkdir -p /tmp/kc
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r.tgz -C $OUT r; }
$K info > $R/info.txt 2>&1
b() { timeout $1 $K bench --no-startup --json --dtype ${D:-f32,f64} --sizes $2 --filter $3 > $R/bench-$3$SUF.json 2>>$R/err.txt; }
p() { timeout $1 python3 bench/peers_torch.py --no-startup --dtype ${D:-f32,f64} --sizes $2 --filter $3 --out $R/torch-$3$SUF.json >> $R/torch.log 2>&1; }
if [ "$PART" = A ]; then
for t in sort linalg_spectral nn_conv nn_train expr; do
  CK_FORK=no KILN_LOG=error timeout ${TT:-45} build-gpu/tests/test_$t > $R/test-$t.txt 2>&1; echo "test_$t rc=$?" >> $R/tests.txt
done
el tests
b 90 2^22,2^26 sort.; p 60 2^22,2^26 sort.
D=i32 SUF=-i32 b 30 2^22,2^26 sort.; D=i32 SUF=-i32 p 30 2^22,2^26 sort.
el sort
fi
if [ "$PART" = B ]; then
CK_FORK=no KILN_LOG=error timeout 40 build-gpu/tests/test_linalg_spectral > $R/test-linalg_spectral.txt 2>&1; echo "test_linalg_spectral rc=$?" >> $R/tests.txt
for c in nn.conv2d nn.max_pool2d nn.adam nn.dropout nn.batch_norm nn.attention expr. stats.cov user.; do b 40 2^22,2^26 $c; p 30 2^22,2^26 $c; done
el nn
ls build-gpu/bench/ > $R/benchbins.txt 2>&1
for i in 1 2; do timeout 20 build-gpu/bench/expr_first_result >> $R/expr_first.txt 2>&1; done
for c in linalg.lu linalg.cholesky linalg.solve linalg.inv linalg.qr; do b 40 2^20,2^24 $c; p 30 2^20,2^24 $c; done
for c in linalg.eigh linalg.svd; do b 60 2^20 $c; p 30 2^20 $c; done
el linalg
fi
