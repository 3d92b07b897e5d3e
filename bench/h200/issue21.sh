#!/bin/bash
# Issue 21's table on the H200 (docs/performance.md): `kiln bench` with the built-in defaults
# (KILN_TUNE=off, what a new user gets), PyTorch for the same cases, a fresh `kiln tune` of the
# families those cases use into an empty cache directory, and `kiln bench` again with that
# tuning file. Run from the checkout root with build-gpu/ present:  bash bench/h200/issue21.sh
# Results under $OUT/r (packed into $OUT/r.tgz after each stage).
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/issue21; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-issue21; rm -rf $KILN_CACHE_DIR; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r.tgz -C $OUT r; }
F=${F:-scan.,binary.add_row_bcast,binary.add_col_bcast,binary.mul_scalar,random.normal,cast.to_i32,copy.kiln_copy,fft.c2c}
S=2^22,2^26
$K info > $R/info.txt 2>&1
KILN_TUNE=off timeout 120 $K bench --no-startup --json --dtype f32,f64 --sizes $S --filter "$F" > $R/untuned.json 2> $R/err.txt
KILN_TUNE=off timeout 60 $K bench --no-startup --json --dtype f32,f64 --sizes 2^22,2^24,2^26 --filter blas.gemm > $R/untuned-gemm.json 2>> $R/err.txt
el untuned
timeout 120 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes $S --filter "$F" --out $R/torch.json > $R/torch.log 2>&1
timeout 40 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^22,2^24,2^26 --filter blas.gemm --out $R/torch-gemm.json >> $R/torch.log 2>&1
el torch
for fam in elementwise scan copy cast random; do
  timeout ${TF:-40} $K tune --family $fam --dtype f32,f64 --sizes $S --reps 3 --json > $R/tune-$fam.json 2>> $R/err.txt
  el tune-$fam
done
timeout ${TG:-90} $K tune --family gemm --dtype f32,f64 --sizes 2^33,2^36,2^39 --reps 3 --json > $R/tune-gemm.json 2>> $R/err.txt; el tune-gemm
timeout 40 $K tune --family fft --dtype f32,f64 --sizes 2^22,2^26 --reps 3 --json > $R/tune-fft.json 2>> $R/err.txt; el tune-fft
cp -r $KILN_CACHE_DIR/tuning $R/ 2>/dev/null
timeout 120 $K bench --no-startup --json --dtype f32,f64 --sizes $S --filter "$F" > $R/tuned.json 2>> $R/err.txt
timeout 60 $K bench --no-startup --json --dtype f32,f64 --sizes 2^22,2^24,2^26 --filter blas.gemm > $R/tuned-gemm.json 2>> $R/err.txt
el tuned
