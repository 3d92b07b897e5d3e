#!/bin/bash
# Run on the GPU machine from the checkout root (docs/performance.md, "New families on the H200"):
#   run with carry [.device, build-gpu/lib, build-gpu/tools, ...]: bash bench/h200/<this script>
# Results land under $OUT/r and are packed into $OUT/r.tgz after each stage.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc; mkdir -p /tmp/kc
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r.tgz -C $OUT r; }
CK_FORK=no KILN_LOG=error timeout 60 build-gpu/tests/test_linalg_spectral > $R/test-linalg_spectral.txt 2>&1; echo "test_linalg_spectral rc=$?" >> $R/tests.txt
el test
timeout 150 $K bench --no-startup --json --dtype f32 --sizes 2^22,2^26 --filter expr. > $R/bench-expr.json 2>>$R/err.txt; echo "bench rc=$?" >> $R/times.txt
el expr
timeout 60 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^22,2^26 --filter expr. --out $R/torch-expr.json >> $R/torch.log 2>&1
el torch
timeout 100 $K bench --no-startup --json --dtype f64 --sizes 2^22,2^26 --filter expr.sum8 > $R/bench-expr64.json 2>>$R/err.txt
el expr64
