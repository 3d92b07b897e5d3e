#!/bin/bash
# Issue 18: qr_panel_grid with its group sums read four at a time and row j read by one row set
# (into local memory) instead of every lane: QR f64 2048/4096, f32 4096, a trace at 4096 f64,
# PyTorch's QR, then test_linalg_spectral (QR_TESTS: other suites). Run from the checkout root
# with build-gpu/ present: NAMES=qr4 bash bench/h200/round.sh. Results under $OUT/r/qr4/ (under
# the calling script's name when another script sources this one, as qr5.sh does).
source bench/h200/common.sh "$(basename "$0" .sh)"
b def 40 --dtype f64 --sizes 2^22,2^24 --filter linalg.qr
b f32 40 --dtype f32 --sizes 2^22,2^24 --filter linalg.qr
trace qr --filter linalg.qr
timeout 60 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^22,2^24 \
  --filter linalg.qr > $R/torch.txt 2>> $R/err.txt; el torch
tests 150 ${QR_TESTS:-linalg_spectral}
