#!/bin/bash
# Session 17, second QR panel run (see qprof.sh for the patch and how to run): the update and
# products without per-row branches (QRG_UPD3), with and without the publish barrier, and the
# tests of the candidate.
source bench/h200/common.sh qprof2
Q="--dtype f64 --sizes 2^20,2^24 --filter linalg.qr"
export KILN_XDEFS_SRC=linalg_qr
b base 40 $Q
for v in UPD3 "UPD3 -DQRG_NOB3" "UPD3 -DQRG_NOPOLL" UPD2; do
  KILN_XDEFS="-DQRG_$v" b "$(echo $v | tr -d ' -' | tr 'A-Z' 'a-z')" 40 $Q
done
KILN_XDEFS="-DQRG_UPD3" KILN_DEBUG_QR_GRID=rows=8 b upd3r8 30 $Q
KILN_XDEFS="-DQRG_UPD3 -DQRG_NOB3" b cand32 30 --dtype f32 --sizes 2^24 --filter linalg.qr
b base32 30 --dtype f32 --sizes 2^24 --filter linalg.qr
KILN_XDEFS="-DQRG_UPD3 -DQRG_NOB3" CK_RUN_CASE=grid tests 120 linalg_spectral
mv $R/test-linalg_spectral.txt $R/test-grid-cand.txt
KILN_XDEFS="-DQRG_UPD3 -DQRG_NOB3" CK_RUN_CASE=all tests 200 linalg_spectral
