#!/bin/bash
# Issue 18, session 22: where complex QR's time goes on the H200 (cltrace of linalg.cqr c128
# 2048 and 4096 and c64 4096, one call each after a warm-up), and the c128 Cholesky's.
# NAMES=cqr2 bash bench/h200/round.sh; results under $OUT/r/cqr2/.
source bench/h200/common.sh cqr2
trace_at c128-2048 c128 2^22 1 --filter linalg.cqr
trace_at c128-4096 c128 2^24 1 --filter linalg.cqr
trace_at c64-4096 c64 2^24 1 --filter linalg.cqr
trace_at chol-c128-4096 c128 2^24 2 --filter linalg.ccholesky
trace_at chol-c64-4096 c64 2^24 2 --filter linalg.ccholesky
