#!/bin/bash
# Issue 18, session 14's last LU change: lu_panel_grid's update by a jump into straight-line
# code and its trees by fours. LU, solve, inverse (f64 1024/4096, f32 4096), a trace of LU at
# 4096 f64, then test_linalg and test_linalg_complex. Run from the checkout root with
# build-gpu/ present: NAMES=lufin bash bench/h200/round.sh. Results under $OUT/r/lufin/.
source bench/h200/common.sh lufin
F=linalg.lu,linalg.solve,linalg.inv
b def 40 --dtype f64 --sizes 2^20,2^24 --filter $F
b f32 30 --dtype f32 --sizes 2^24 --filter $F
trace lu --filter linalg.lu
tests 100 linalg linalg_complex
