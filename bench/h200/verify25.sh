#!/bin/bash
# test_elementwise's flat_shapes on the GPU with the time NVIDIA's compiler needs for its
# programs (session 25's H100 call cut it at 240 s; session 24 at 280 s): every shape the
# tuner or the defaults pick, session 24's 8-byte default among them. Its own device call:
# NAMES=verify25 LIMIT=580 bash bench/h200/round.sh; results under $OUT/r/verify25/.
source bench/h200/common.sh verify25
CK_RUN_CASE=flat_shapes tests ${TT:-570} elementwise
