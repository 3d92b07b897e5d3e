#!/bin/bash
# Complex linear algebra on the H200 (issue 18, branch cplx): kiln's c128 LU, solve (16
# right-hand sides) and Cholesky and c64 LU at 4096, c128 QR at 1024, next to PyTorch
# (cuSOLVER/MAGMA; its rows at 1024 and 4096), then the
# linalg_complex suite (10 s: on a cold NVIDIA cache it may not finish). Run from the checkout
# root with build-gpu/ (a release build) present:
#   bash bench/h200/cplx.sh        results under $OUT/r/cplx/
# Rows first (NVIDIA compiles the c128 and c64 linalg programs on their first use), the test
# binary last; each step has its own timeout, about 60 s in all.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/cplx; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc; mkdir -p /tmp/kc
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
b() { timeout $1 $K bench --no-startup --json --reps ${REPS:-3} --dtype $D --sizes $2 --filter $3 > $R/bench-$3-$D$SUF.json 2>>$R/err.txt; echo "bench $3 $D rc=$?" >> $R/rc.txt; }
p() { timeout $1 python3 bench/peers_torch.py --no-startup --reps 3 --dtype $D --sizes $2 --filter $3 --out $R/torch-cplx.json >> $R/torch.log 2>&1; echo "torch $3 $D rc=$?" >> $R/rc.txt; }
$K info > $R/info.txt 2>&1
D=c128 b 12 2^24 linalg.clu
el clu
D=c128 b 6 2^24 linalg.csolve
el csolve
D=c128 b 6 2^24 linalg.ccholesky
el ccholesky
D=c64 b 7 2^24 linalg.clu
el c64
D=c128 b 5 2^20 linalg.cqr
el cqr
# one PyTorch process for every peer row (its start-up and CUDA init cost seconds each)
D=c128,c64 p 14 2^20,2^24 linalg.clu,linalg.csolve,linalg.ccholesky,linalg.cqr
el torch
CK_FORK=no KILN_LOG=error timeout 8 build-gpu/tests/test_linalg_complex > $R/test-linalg_complex.txt 2>&1; echo "test_linalg_complex rc=$?" >> $R/rc.txt
el tests
