#!/bin/bash
# Complex linear algebra on the H200 (issue 18, branch cplx), second round: kiln's c128 LU at
# 4096 with the linalg family's variants (look-ahead, CLBlast's GEMM), c128 inverse next to
# PyTorch (cuSOLVER/MAGMA), then the linalg_complex suite. Run from the checkout root with
# build-gpu/ (a release build) present:
#   bash bench/h200/cplx.sh        results under $OUT/r/cplx/
# The first round (LU, solve, Cholesky at 4096, QR at 1024 against PyTorch) is in
# /work/gpu-results/cplx of 2026-12-02. Complex dtypes take the tuner entries of their part
# type, so a variant names f64 next to c128 (kiln bench sets --tune per dtype of the run).
# Rows first (NVIDIA compiles the c128 linalg program on its first use), the suite last with
# the time left (about 60 s in all).
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/cplx; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc; mkdir -p /tmp/kc
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
b() { timeout $1 $K bench --no-startup --json --reps ${REPS:-3} --dtype $D --sizes $2 --filter $3 $X > $R/bench-$3-$D$SUF.json 2>>$R/err.txt; echo "bench $3 $D $SUF rc=$?" >> $R/rc.txt; }
p() { timeout $1 python3 bench/peers_torch.py --no-startup --reps 3 --dtype $D --sizes $2 --filter $3 --out $R/torch-cplx.json >> $R/torch.log 2>&1; echo "torch $3 $D rc=$?" >> $R/rc.txt; }
$K info > $R/info.txt 2>&1
D=c128 b 7 2^24 linalg.clu
el clu
D=f64,c128 SUF=-ahead X="--tune linalg:ahead=2" b 4 2^24 linalg.clu
el ahead
D=f64,c128 SUF=-clblast X="--tune linalg:gemm=1" b 6 2^24 linalg.clu
el clblast
D=c128 b 5 2^24 linalg.cinv
el cinv
D=c128 p 8 2^24 linalg.cinv
el torch
# KILN_TEST_KEEP_CACHE_ENV: the suite reuses the rows' compiled programs in /tmp/kc
KILN_TEST_KEEP_CACHE_ENV=1 CK_FORK=no KILN_LOG=error timeout 22 build-gpu/tests/test_linalg_complex > $R/test-linalg_complex.txt 2>&1; echo "test_linalg_complex rc=$?" >> $R/rc.txt
el tests
