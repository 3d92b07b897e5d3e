#!/bin/bash
# Run on the GPU machine from the checkout root, build-gpu/ present (docs/blas_fft.md, "The large
# GEMM kernel"; docs/tuning.md, "gemm"):  bash bench/h200/gemm.sh
# Round 2 of 2026-12-02 (round 1, the large kernel's parameter sweep and SGEMM's overheads, is
# in git history, commit 7e39018, and its figures in docs/blas_fft.md). Most important first,
# each stage under `timeout`, no new stage started past BUDGET seconds (default 55):
#   1. the defaults as they are now: kiln's large kernel (blas.gemm_large: f64 from 2048^3 by
#      default) and CLBlast with the kept temporary (blas.gemm_clblast: f32), f64 and f32 at
#      2048^3, 4096^3, 8192^3 (--sizes 2^22,2^24,2^26);
#   2. the large kernel on the FP64 tensor cores (KILN_DEBUG_GEMM_LARGE="mma=1 ...": PTX mma.sync
#      m8n8k4 as inline assembly; mma=2: m16n8k4, mma=3: m16n8k8), KILN_LOG=warn so that a driver refusing it
#      says so (the kernel then falls back to FMAs);
#   3. test_blas case large on the GPU: the default sets and both mma forms against the host
#      reference (every transpose, tile edges, alpha/beta, batches);
#   4. more mma variants; mid sizes (512^3 to 1024^3) on every route; PyTorch (cuBLAS).
# Results: $OUT/r/gemm/ (<label>.json per process, summary.txt: TFLOP/s per size and label,
# times.txt, err-*.txt). Locally (PoCL, build-gpu a link to build): DRY=1 lists the stages;
# SIZES=2^15 BUDGET=900 TMO=60 runs them small (the mma rows fail there: no tensor cores).
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
bench m1-pad8 10 f64 $SZ blas.gemm_large KILN_LOG=warn KILN_DEBUG_GEMM_LARGE="mma=1 pad=8"
summary
lf=$(left)
if [ -z "$DRY" ] && [ $lf -ge 4 ]; then
  CK_FORK=no CK_RUN_CASE=large KILN_TEST_LARGE_SPECS=5 KILN_LOG=warn timeout -k 1 20 \
    build-gpu/tests/test_blas > $R/test-blas-large.txt 2>&1
  echo "test_blas large rc=$?" >> $R/rc.txt; el test
fi
bench m5-k16n8 10 f64 $SZ blas.gemm_large KILN_LOG=warn KILN_DEBUG_GEMM_LARGE="mma=2 pad=8"
bench m6-k8 10 f64 $SZ blas.gemm_large KILN_LOG=warn KILN_DEBUG_GEMM_LARGE="mma=3 pad=8"
summary
# mid sizes, every route (blas.gemm matches all four rows: the default, CLBlast, kiln's small
# and large kernels)
bench mid 14 f64,f32 ${SIZES:-2^16,2^18,2^20} blas.gemm
summary
bench m3-bk16 8 f64 $SZBIG blas.gemm_large KILN_LOG=warn KILN_DEBUG_GEMM_LARGE="mma=1 pad=8 bk=16 db=0"
summary
lf=$(left)
if [ -z "$DRY" ] && [ $lf -ge 8 ]; then
  timeout -k 1 $lf python3 bench/peers_torch.py --no-startup --dtype f32,f64 \
    --sizes ${SIZES:-2^16,2^18,2^20,2^22,2^24,2^26} --filter blas.gemm --out $R/torch.json \
    > $R/torch.log 2>&1
  el torch
fi
bench m2-pad2 8 f64 $SZBIG blas.gemm_large KILN_LOG=warn KILN_DEBUG_GEMM_LARGE="mma=1 pad=2"
bench m4-bk4 8 f64 $SZBIG blas.gemm_large KILN_LOG=warn KILN_DEBUG_GEMM_LARGE="mma=1 pad=8 bk=4"
summary
