#!/bin/bash
# The test suites SUITES (space-separated, default: those session 23 changed) on the H200, all
# at once (NVIDIA's compiler, on the CPU, is what they wait for), each with its own cache
# directory and under TT seconds. NAMES=tests SUITES="..." bash bench/h200/round.sh;
# results in $OUT/r/tests/ (test-SUITE.txt, and runs.txt with each exit status).
source bench/h200/common.sh tests
for t in ${SUITES:-elementwise layout index blas linalg linalg_complex linalg_spectral tuner scan nn fft}; do
  (KILN_CACHE_DIR=/tmp/kc-t-$t CK_FORK=no KILN_LOG=error timeout ${TT:-240} \
     build-gpu/tests/test_$t > $R/test-$t.txt 2>&1
   echo "test_$t rc=$?" >> $R/runs.txt) &
done
wait; el tests
