#!/bin/bash
# Issue 18, session 22 (written then, not yet run: no GPU was lent): the complex linalg rows
# with their products on the real large GEMM kernel (cplx_expand, KILN_DEBUG_CPLX_LARGE=1) and
# without (the default), PyTorch in the same run, the complex suite's new cases, and cltraces
# of c128 QR and Cholesky at 4096. NAMES=cqr3 bash bench/h200/round.sh; results under $OUT/r/cqr3/.
source bench/h200/common.sh cqr3
F=linalg.cqr,linalg.ccholesky,linalg.clu,linalg.csolve,linalg.cinv
b default 150 --reps 3 --dtype c64,c128 --sizes 2^22,2^24 --filter $F
KILN_DEBUG_CPLX_LARGE=1 b large 150 --reps 3 --dtype c64,c128 --sizes 2^22,2^24 --filter $F
timeout 90 python3 bench/peers_torch.py --no-startup --reps 3 --dtype c64,c128 \
  --sizes 2^22,2^24 --filter $F --out $R/torch.json > $R/torch.log 2>&1
el torch
trace_at c128-qr c128 2^24 1 --filter linalg.cqr
trace_at c128-chol c128 2^24 2 --filter linalg.ccholesky
# The suite's cases (session 24 runs them in bench/h200/tests.sh instead: TESTS=0).
if [ "${TESTS:-1}" = 1 ]; then
  CK_RUN_CASE=cplxlarge tests 150 linalg_complex
  mv $R/test-linalg_complex.txt $R/test-linalg_complex-cplxlarge.txt
  CK_RUN_CASE=qrgrid tests 120 linalg_complex
  mv $R/test-linalg_complex.txt $R/test-linalg_complex-qrgrid.txt
  tests 200 linalg_complex
fi
