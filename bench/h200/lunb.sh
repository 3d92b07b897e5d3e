#!/bin/bash
# Issue 18: LU, solve and inverse (f64 4096 and 1024) over the linalg family's block size
# (nb 64, 128, 256) and update GEMM (gemm=2 gemm_tile, gemm=3 products of 256 and more on the
# large kernel), traces of LU and inverse at the defaults and at nb=256 gemm=3, then
# test_linalg_spectral and test_linalg. Run from the checkout root with build-gpu/ present:
# NAMES=lunb bash bench/h200/round.sh. Results under $OUT/r/lunb/.
source bench/h200/common.sh lunb
F=linalg.lu,linalg.solve,linalg.inv
b default 40 --dtype f64 --sizes 2^20,2^24 --filter $F
for nb in 128 256; do for g in 2 3; do
  b nb$nb-g$g 40 --dtype f64 --sizes 2^20,2^24 --filter $F --tune "linalg:nb=$nb gemm=$g"
done; done
b nb64-g3 30 --dtype f64 --sizes 2^24 --filter $F --tune "linalg:nb=64 gemm=3"
trace inv --filter linalg.inv
trace lu256 --filter linalg.lu --tune "linalg:nb=256 gemm=3"
trace inv256 --filter linalg.inv --tune "linalg:nb=256 gemm=3"
tests 150 linalg_spectral linalg
