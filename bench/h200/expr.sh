#!/bin/bash
# Run on the GPU machine from the checkout root (docs/expr.md, "Performance"):
#   run with carry [.device, build-gpu/lib, build-gpu/tools, build-gpu/tests, build-gpu/bench]:
#   bash bench/h200/expr.sh
# Fused expressions and user kernels on the H200: their tests, the expr.* and user.* rows of
# kiln bench, PyTorch eager and torch.compile on the same cases, and the time to first result
# of a new expression. Results land under $OUT/r/expr and are packed into $OUT/r.tgz after each
# stage. About 60-90 s.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/expr; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-expr; rm -rf /tmp/kc-expr; mkdir -p /tmp/kc-expr
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r.tgz -C $OUT r; }
for t in expr:25 user_kernel:15; do
  CK_FORK=no KILN_LOG=error timeout ${t#*:} build-gpu/tests/test_${t%:*} > $R/test-${t%:*}.txt 2>&1
  echo "test_${t%:*} rc=$?" >> $R/tests.txt
done
el tests
b() { timeout $1 $K bench --no-startup --json --dtype f32,f64 --sizes 2^22,2^26 --filter $2 > $R/bench-$2json 2>>$R/err.txt; echo "bench $2 rc=$?" >> $R/times.txt; }
b 20 expr.; b 12 user.
el kiln
timeout 20 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^22,2^26 --filter expr. --out $R/torch-expr.json >> $R/torch.log 2>&1
timeout 12 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^22,2^26 --filter user. --out $R/torch-user.json >> $R/torch.log 2>&1
el torch
# torch.compile: one size, the compiles dominate; says so and measures nothing if it cannot run
timeout 35 python3 bench/peers_torch.py --no-startup --compile --dtype f32,f64 --sizes 2^26 --out $R/torch-compile.json >> $R/torch-compile.log 2>&1
echo "torch.compile rc=$?" >> $R/times.txt
el compile
for i in 1 2; do timeout 10 build-gpu/bench/expr_first_result >> $R/expr_first.txt 2>&1; done
el first
