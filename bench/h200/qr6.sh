#!/bin/bash
# Issue 18, session 17: qr4.sh's QR timings and test_linalg_spectral after qr_panel_grid lost
# its per-row branches (update, products, column copy). Run from the checkout root with
# build-gpu/ present: NAMES=qr6 bash bench/h200/round.sh. Results under $OUT/r/qr6/.
source bench/h200/qr4.sh
# the grid panel's shape again, now that a lane's rows cost less
KILN_DEBUG_QR_GRID=local=256 b l256 30 --dtype f64 --sizes 2^24 --filter linalg.qr
KILN_DEBUG_QR_GRID=rows=12 b r12 30 --dtype f64 --sizes 2^24 --filter linalg.qr
