#!/bin/bash
# Run on the GPU machine from the checkout root (docs/expr.md, "Performance"):
#   run with carry [.device, build-gpu/lib, build-gpu/tools, build-gpu/tests, build-gpu/bench]:
#   bash bench/h200/expr.sh
# Fused expressions and user kernels on the H200: their tests, the expr.* and user.* rows of
# kiln bench, PyTorch eager and torch.compile on the same cases, and the time to first result
# of a new expression. Results land under $OUT/r/expr and are packed into $OUT/r.tgz after each
# stage. Each stage has its own timeout and none starts after 90 s, so the whole stays under
# 100 s; torch.compile runs one case per call, so that what compiled in time is kept.
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/expr; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-expr; rm -rf /tmp/kc-expr; mkdir -p /tmp/kc-expr
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; tar czf $OUT/r.tgz -C $OUT r; }
go() { [ $(( $(date +%s)-t0 )) -lt 90 ] || { echo "skipped $* (time)" >> $R/times.txt; return 1; }; }
for t in expr:20 user_kernel:10; do
  go test_${t%:*} && CK_FORK=no KILN_LOG=error timeout ${t#*:} build-gpu/tests/test_${t%:*} > $R/test-${t%:*}.txt 2>&1
  echo "test_${t%:*} rc=$?" >> $R/tests.txt
done
el tests
b() { go bench $2 && timeout $1 $K bench --no-startup --json --dtype f32,f64 --sizes 2^22,2^26 --filter $2 > $R/bench-$2json 2>>$R/err.txt; echo "bench $2 rc=$?" >> $R/times.txt; }
b 15 expr.; b 10 user.
el kiln
p() { go torch $2 && timeout $1 python3 bench/peers_torch.py --no-startup --dtype ${D:-f32,f64} --sizes ${S:-2^22,2^26} --filter $2 $3 --out $R/torch-$2$3.json >> $R/torch.log 2>&1; echo "torch $2 $3 rc=$?" >> $R/times.txt; }
p 12 expr.; p 10 user.
el torch
# torch.compile at 2^26, f32 (says so in torch.log and compile_error if it cannot run)
S=2^26 D=f32 p 18 expr.demo_chain --compile; S=2^26 D=f32 p 15 expr.sum8 --compile
S=2^26 D=f32 p 12 user.axpy --compile
el compile
for i in 1 2; do go first && timeout 5 build-gpu/bench/expr_first_result >> $R/expr_first.txt 2>&1; done
el first
