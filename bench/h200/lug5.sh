#!/bin/bash
# Issue 18, session 14: LU, solve and inverse with laswp's permutation launches, the blocked
# tri_inv, the panel's switch, and the two-level solves on the large GEMM kernel (against
# gemm=2, which keeps them one level on gemm_tile); f64 1024/4096, f32 4096, a trace of the
# inverse, DGEMM 4096, PyTorch for the same cases, then test_linalg and test_linalg_complex.
# Run from the checkout root with build-gpu/ present: NAMES=lug5 bash bench/h200/round.sh.
source bench/h200/common.sh lug5
F=linalg.lu,linalg.solve,linalg.inv,linalg.cholesky
b def 40 --dtype f64 --sizes 2^20,2^24 --filter $F
b def-f32 30 --dtype f32 --sizes 2^24 --filter $F
b g2 30 --dtype f64 --sizes 2^24 --filter linalg.solve,linalg.inv --tune "linalg:gemm=2"
b gemm 20 --dtype f64 --sizes 2^24 --filter blas.gemm
trace inv --filter linalg.inv
timeout 90 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^20,2^24 \
  --filter $F > $R/torch.json 2>> $R/err.txt; el torch
tests 100 linalg linalg_complex
