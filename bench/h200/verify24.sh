#!/bin/bash
# Session 24's closing check on the H200 (one short call): the new 8-byte elementwise default
# timed with KILN_TUNE=off (f64 broadcasts, a + b, exp and copy), while test_elementwise's
# flat_shapes (every shape the tuner or the defaults pick, the new default included) and
# test_tuner's choices run beside it. NAMES=verify24 bash bench/h200/round.sh; results under
# $OUT/r/verify24/.
source bench/h200/common.sh verify24
CK_RUN_CASE=flat_shapes tests ${TT:-130} elementwise &
CK_RUN_CASE=choices tests ${TT:-130} tuner &
KILN_TUNE=off b default 60 --dtype f64 --sizes 2^22,2^26 \
  --filter binary.add_row_bcast,binary.add_col_bcast,binary.add,unary.exp,copy.kiln_copy
wait
