#!/bin/bash
# Run on the GPU machine from the checkout root (docs/performance.md, "New families on the H200"):
#   run with carry [.device, build-gpu/lib, build-gpu/tools, ...]: bash bench/h200/<this script>
# Results land under $OUT/r and are packed into $OUT/r.tgz after each stage.
# Issue 21 measurement: kiln bench untuned vs fresh tune, PyTorch in the same run.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc; mkdir -p /tmp/kc
$K info > $R/info.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >> $R/info.txt 2>&1
S=2^22,2^26
t0=$(date +%s)
for f in copy. unary. binary. cast. where. reduce. scan. layout. index. random. nn. stats. fft. blas.; do
  KILN_TUNE=off timeout 60 $K bench --no-startup --json --dtype f32,f64 --sizes $S --filter $f > $R/untuned-$f.json 2>>$R/err.txt
done
echo "untuned $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r.tgz -C $OUT r
timeout 150 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes $S --out $R/torch.json > $R/torch.log 2>&1
echo "torch $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r.tgz -C $OUT r
for fam in elementwise reduce scan; do
  timeout 70 $K tune --family $fam --dtype f32,f64 --sizes $S --json > $R/tune-$fam.json 2>>$R/err.txt
done
echo "tune $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r.tgz -C $OUT r
cp -r /tmp/kc/tuning $R/ 2>/dev/null
for f in copy. unary. binary. cast. where. reduce. scan.; do
  KILN_TUNE=cached timeout 60 $K bench --no-startup --json --dtype f32,f64 --sizes $S --filter $f > $R/tuned-$f.json 2>>$R/err.txt
done
echo "tuned $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r.tgz -C $OUT r
tar czf $OUT/r.tgz -C $OUT r
