#!/bin/bash
# Issue 21: DGEMM with the tensor-core form as the large kernel's f64 default (large_mma = 2,
# lib/ops/blas_route.c). Run from the checkout root with build-gpu/ present (round.sh copies
# build-gpu-t/'s test binaries in): the default routing and the large kernel, f64 and f32 at
# 2048^3, 4096^3, 8192^3, then test_blas on the GPU (its large case's default set included).
# Results under $OUT/r/gemm-default/.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/gemm-default; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-gd; mkdir -p $KILN_CACHE_DIR
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
KILN_LOG=warn timeout -k 1 60 $K bench --no-startup --json --reps 3 --dtype f64,f32 \
  --sizes 2^22,2^24,2^26 --filter blas.gemm,blas.gemm_large > $R/bench.json 2>> $R/err.txt
el bench
CK_FORK=no KILN_LOG=error timeout 150 build-gpu/tests/test_blas > $R/test-blas.txt 2>&1
echo "test_blas rc=$?" >> $R/runs.txt; el test
