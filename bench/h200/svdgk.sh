#!/bin/bash
# Issue 18, session 15: svd at 1024 and 4096 (f64; f32 at 4096) with the bidiagonal stage on
# MRRR of the Golub-Kahan matrix (KILN_DEBUG_LINALG_HOST=gkmrrr, one dstemr call per host
# thread) against the default (threaded dbdsvdx with the reference LAPACK), with the phase
# lines and gk_mrrr's half-norm deviation (KILN_LOG=debug). Run from the checkout root with
# build-gpu/ present: NAMES=svdgk bash bench/h200/round.sh. Results under $OUT/r/svdgk/.
source bench/h200/common.sh svdgk
s() { local n=$1 h=$2; shift 2
  KILN_DEBUG_LINALG_HOST=$h KILN_LOG=debug timeout 60 $K bench --no-startup --json --reps 2 \
    --filter linalg.svd "$@" > $R/bench-$n.json 2> $R/phases-$n.txt; el $n; }
s gk-4k gkmrrr --dtype f64 --sizes 2^24
s gk-1k gkmrrr --dtype f64 --sizes 2^20
s def-1k "" --dtype f64 --sizes 2^20
s gk-4k-f32 gkmrrr --dtype f32 --sizes 2^24
s gk8-4k gkmrrr,threads=8 --dtype f64 --sizes 2^24
