#!/bin/bash
# Session 17: qr_panel_grid's parts timed by switches (results wrong on purpose), candidate
# forms, gelu f64 variants. Needs qprof.patch on f3d757d (KILN_XDEFS: -D flags for the program
# named by KILN_XDEFS_SRC, and the variants' #ifdefs):
#   git checkout f3d757d && git apply docs/perf-data/h200-2026-12-03-s17/qprof.patch
#   cp docs/perf-data/h200-2026-12-03-s17/qprof*.sh bench/h200/   (then build build-gpu)
#   NAMES=qprof bash bench/h200/round.sh; NAMES=qprof2 bash bench/h200/round.sh
source bench/h200/common.sh qprof
Q="--dtype f64 --sizes 2^24 --filter linalg.qr"
export KILN_XDEFS_SRC=linalg_qr
b base 30 $Q
for v in NOPOLL NODOT NOUPD NOSCAL NOB3 UPD2 "UPD2 -DQRG_NOB3" "NOPOLL -DQRG_NODOT -DQRG_NOUPD -DQRG_NOSCAL"; do
  KILN_XDEFS="-DQRG_$v" b "$(echo $v | tr -d ' -' | tr 'A-Z' 'a-z')" 30 $Q
done
KILN_DEBUG_QR_GRID=local=256 b l256 30 $Q
KILN_DEBUG_QR_GRID=rows=12 b r12 30 $Q
KILN_XDEFS="-DQRG_UPD2 -DQRG_NOB3" b cand32 30 --dtype f32 --sizes 2^24 --filter linalg.qr
b base32 30 --dtype f32 --sizes 2^24 --filter linalg.qr
KILN_XDEFS="-DQRG_UPD2 -DQRG_NOB3" CK_RUN_CASE=grid tests 120 linalg_spectral
mv $R/test-linalg_spectral.txt $R/test-grid-cand.txt
KILN_XDEFS="-DQRG_UPD2 -DQRG_NOB3" CK_RUN_CASE=all tests 200 linalg_spectral
export KILN_XDEFS_SRC=nn_act
G="--dtype f64 --sizes 2^26 --filter nn.gelu,copy.kiln_copy"
b gbase 30 $G
KILN_XDEFS="-DGELU_ESTRIN" b gestrin 30 $G
KILN_XDEFS="-DGELU_NOEXP" b gnoexp 30 $G
