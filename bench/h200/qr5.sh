#!/bin/bash
# Issue 18, session 15: QR with the part sums' vector of ones kept by the context (no fill per
# vt_c call, two a panel before): QR f64 2048/4096, f32 4096, a trace at 4096 f64, PyTorch's QR,
# then test_linalg_spectral, test_linalg_complex and test_nn (gelu's f64 Phi). Run from the
# checkout root with build-gpu/ present: NAMES=qr5 bash bench/h200/round.sh. Results under
# $OUT/r/qr5/.
source bench/h200/common.sh qr5
b def 40 --dtype f64 --sizes 2^22,2^24 --filter linalg.qr
b f32 40 --dtype f32 --sizes 2^22,2^24 --filter linalg.qr
trace qr --filter linalg.qr
timeout 60 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^22,2^24 \
  --filter linalg.qr > $R/torch.txt 2>> $R/err.txt; el torch
tests 150 linalg_spectral linalg_complex nn
