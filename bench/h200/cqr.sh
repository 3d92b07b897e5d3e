#!/bin/bash
# Issue 18, session 22: complex QR with qr_panel_grid on the H200. Run from the checkout root
# with build-gpu/ (a release build) and build-gpu-t/test_linalg_complex,
# test_linalg_spectral present: NAMES=cqr bash bench/h200/round.sh. kiln bench of linalg.cqr
# (c64, c128, 1024 to 4096) with the defaults, real QR f64 4096 beside it, PyTorch for the
# same, then the complex grid case and the real one, the linalg_complex suite, and a cltrace
# of one c128 4096 QR. Results under $OUT/r/cqr/.
source bench/h200/common.sh cqr
b default 90 --reps 3 --dtype c64,c128 --sizes 2^20,2^22,2^24 --filter linalg.cqr
b real 40 --reps 3 --dtype f64 --sizes 2^24 --filter linalg.qr
timeout 90 python3 bench/peers_torch.py --no-startup --reps 3 --dtype c64,c128,f64 \
  --sizes 2^20,2^22,2^24 --filter linalg.cqr,linalg.qr --out $R/torch.json > $R/torch.log 2>&1
el torch
CK_RUN_CASE=qrgrid tests 120 linalg_complex
mv $R/test-linalg_complex.txt $R/test-linalg_complex-qrgrid.txt
CK_RUN_CASE=grid tests 120 linalg_spectral
tests 200 linalg_complex
trace_at c128-4096 c128 2^24 1 --filter linalg.cqr
