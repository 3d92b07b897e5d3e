#!/bin/bash
# Run on the GPU machine from the checkout root, build-gpu/ present (docs/blas_fft.md, "The large
# GEMM kernel"; docs/tuning.md, "gemm"):  bash bench/h200/gemm.sh
# One variant round for GEMM, most important first, each stage under `timeout`, no new stage
# started past BUDGET seconds (default 55; the whole script stays within 60):
#   1. the defaults: kiln's large kernel (blas.gemm_large, its default sets) and CLBlast
#      (blas.gemm_clblast), f64 and f32 at 2048^3, 4096^3, 8192^3 (--sizes 2^22,2^24,2^26);
#   2. large-kernel variants through KILN_DEBUG_GEMM_LARGE (one kiln bench process each: one
#      NVIDIA compile, about 1-2 s), f64 first, then f32;
#   3. SGEMM's per-call overheads: CLBlast's f32 GEMM under the cltrace shim (bench/cltrace.c:
#      its pad/transpose kernels and buffer calls), and CLBlast with every size on XgemmDirect
#      (KILN_DEBUG_CLBLAST=GemmRoutine:XGEMM_MIN_INDIRECT_SIZE=8193: no copies at all);
#   4. test_blas case large on the GPU (the default sets against the host reference; second);
#   5. PyTorch's GEMM (cuBLAS, TF32 off) when time is left.
# Results: $OUT/r/gemm/ (<label>.json per process, summary.txt: TFLOP/s per size and label,
# times.txt, err-*.txt). Locally (PoCL, build-gpu a link to build): DRY=1 lists the stages;
# SIZES=2^15 BUDGET=900 TMO=60 runs them small.
[ -f .device/setup.sh ] && source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/gemm; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-gemm; mkdir -p $KILN_CACHE_DIR
BUDGET=${BUDGET:-55}
SZ=${SIZES:-2^22,2^24,2^26}
SZBIG=${SIZES:-2^24,2^26}
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
left() { echo $(( BUDGET - ($(date +%s) - t0) )); }

summary() {
python3 - "$R" > $R/summary.txt 2>&1 <<'EOF'
import json, glob, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    name = os.path.basename(f)[:-5]
    try:
        d = json.load(open(f))
    except Exception as e:
        print("%-28s %s" % (name, e)); continue
    rows = {}
    for r in d.get("results", []):
        v = r.get("gflops") or (2.0 * r["n"] ** 1.5 / (r["device_ms"] * 1e6) if r.get("device_ms") else 0)
        rows.setdefault((r.get("case", "torch"), r["dtype"]), []).append(
            "%d:%.2fT/%.3fms" % (round(r["n"] ** 0.5), v / 1e3, r.get("device_ms", r.get("ms", 0))))
    why = "; ".join(x.get("reason", "") for x in d.get("skipped", []))
    for (c, dt), v in sorted(rows.items()):
        print("%-28s %-18s %s %s %s" % (name, c, dt, " ".join(v), why))
    if not rows:
        err = os.path.join(sys.argv[1], "err-" + name + ".txt")
        print("%-28s none %s" % (name, open(err).read().strip()[-300:] if os.path.exists(err) else why))
EOF
}

# bench LABEL TIMEOUT DTYPES SIZES FILTER [ENV=VALUE...]: one kiln bench process
bench() {
  local l=$1 to=${TMO:-$2} d=$3 s=$4 f=$5; shift 5
  local lf=$(left); [ $to -gt $lf ] && to=$lf
  [ $to -ge 3 ] || { echo "$l skipped (budget)" >> $R/times.txt; return; }
  echo "$l: $* $d $s $f" >> $R/labels.txt
  [ -n "$DRY" ] && return
  env "$@" timeout -k 1 $to $K bench --no-startup --json --filter $f --sizes $s --dtype $d --reps 3 \
    > $R/$l.json 2>> $R/err-$l.txt
  echo "$l rc=$?" >> $R/rc.txt; el $l
}

bench defaults 16 f64,f32 $SZ blas.gemm_large,blas.gemm_clblast
summary
# the large kernel's default sets against the host reference on the GPU (every transpose, edges)
lf=$(left)
if [ -z "$DRY" ] && [ $lf -ge 4 ]; then
  CK_FORK=no CK_RUN_CASE=large KILN_TEST_LARGE_SPECS=2 KILN_LOG=error timeout -k 1 15 \
    build-gpu/tests/test_blas > $R/test-blas-large.txt 2>&1
  echo "test_blas large rc=$?" >> $R/rc.txt; el test
fi
# f64 variants of the default set (tm=8 tn=8 wx=16 wy=16 bk=8 vw=2 db=1 pad=2)
i=0
for v in "wx=8" "tm=4 tn=4" "vw=4 pad=4" "bk=16 db=0" "tm=4 wy=32" "pad=0"; do
  i=$((i+1)); bench d$i-${v// /_} 8 f64 $SZBIG blas.gemm_large KILN_DEBUG_GEMM_LARGE="$v"
done
summary
# SGEMM's per-call overheads: XgemmDirect for every size, CLBlast with a kept temporary, and
# the default CLBlast call traced
bench sdirect 6 f32 ${SIZES:-2^22,2^24} blas.gemm_clblast KILN_DEBUG_CLBLAST="GemmRoutine:XGEMM_MIN_INDIRECT_SIZE=8193"
bench stemp 6 f32 ${SIZES:-2^22,2^24} blas.gemm_clblast KILN_DEBUG_GEMM_TEMP=1
if [ -f build-gpu/bench/libcltrace.so ]; then
  bench strace 6 f32 ${SIZES:-2^22,2^24} blas.gemm_clblast CLTRACE_OUT=$R/trace-sgemm.txt \
    CLTRACE_CSV=$R/trace-sgemm.csv LD_PRELOAD=$PWD/build-gpu/bench/libcltrace.so
fi
summary
# f32 variants of the default set (tm=8 tn=8 wx=16 wy=16 bk=8 vw=4 db=1 pad=4)
i=0
for v in "bk=16" "wx=8" "vw=2 pad=2"; do
  i=$((i+1)); bench s$i-${v// /_} 8 f32 $SZ blas.gemm_large KILN_DEBUG_GEMM_LARGE="$v"
done
summary
# XgemmDirect with 64x64 tiles of 16x16 items (CLBlast's NVIDIA default is smaller)
bench sdirect64 6 f32 ${SIZES:-2^22,2^24} blas.gemm_clblast KILN_DEBUG_CLBLAST="GemmRoutine:XGEMM_MIN_INDIRECT_SIZE=8193;XgemmDirect:WGD=64,MDIMCD=16,NDIMCD=16,MDIMAD=16,NDIMBD=16,KWID=2,VWMD=2,VWND=2,PADA=1,PADB=1"
# the f64 variants the budget left out above
i=6
for v in "vw=1 pad=1" "db=0"; do
  i=$((i+1)); bench d$i-${v// /_} 8 f64 $SZBIG blas.gemm_large KILN_DEBUG_GEMM_LARGE="$v"
done
lf=$(left)
if [ -z "$DRY" ] && [ $lf -ge 8 ]; then
  timeout -k 1 $lf python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes $SZ \
    --filter blas.gemm --out $R/torch.json > $R/torch.log 2>&1
  el torch
fi
summary
