#!/bin/bash
# Issue 18, session 15: qr4.sh's QR timings after the part sums' vector of ones became the
# context's (no fill per vt_c call, two a panel before), then test_linalg_spectral,
# test_linalg_complex and test_nn (gelu's f64 Phi). Run from the checkout root with build-gpu/
# present: NAMES=qr5 bash bench/h200/round.sh. Results under $OUT/r/qr5/.
QR_TESTS="linalg_spectral linalg_complex nn" source bench/h200/qr4.sh
