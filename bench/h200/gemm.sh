#!/bin/bash
# Run on the GPU machine from the checkout root, build-gpu/ present (docs/tuning.md, "xgemm"):
#   bash bench/h200/gemm.sh
# Sweeps CLBlast's Xgemm parameters through KILN_DEBUG_XGEMM: one `kiln bench` process per
# candidate (one CLBlast build, about 1 s on NVIDIA, serves the three sizes; a candidate took
# 3 s in all on the H200), every candidate at 2048^3, 4096^3 and 8192^3, after the defaults
# (KILN_TUNE=off) and PyTorch. Stops starting candidates at BUDGET seconds
# (default 112) so that the whole script stays within 120 s. Results: $OUT/r/gemm/
# (sweep-<dtype>-<label>.json, candidates.txt: label and spec, summary.txt: TFLOP/s per size).
# O=... before run: CLBlast's own CLBLAST_BUILD_OPTIONS for that candidate (-D of its kernel's
# switches). Locally (PoCL): DRY=1 lists the candidates; ONLY=regex (on dtype-label) SIZES=2^12 runs a few.
[ -f .device/setup.sh ] && source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/gemm; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-gemm; mkdir -p $KILN_CACHE_DIR
BUDGET=${BUDGET:-112}
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
left() { echo $(( BUDGET - ($(date +%s) - t0) )); }

# The default sets (f64 set 11, f32 set 8) in full; a candidate is a base with some entries
# replaced, written out in full to candidates.txt.
B64="GEMMK=0 KREG=1 KWG=16 KWI=4 MDIMA=16 MDIMC=8 MWG=64 NDIMB=8 NDIMC=16 NWG=128 SA=1 SB=1 STRM=1 STRN=1 VWM=2 VWN=2"
B32="GEMMK=0 KREG=1 KWG=32 KWI=2 MDIMA=32 MDIMC=16 MWG=128 NDIMB=8 NDIMC=16 NWG=128 SA=1 SB=1 STRM=1 STRN=1 VWM=4 VWN=4"
full() {
  local s=" $1 "; shift
  for kv in "$@"; do s=$(echo "$s" | sed "s/ ${kv%%=*}=[0-9]* / $kv /"); done
  echo $s
}
K1="GEMMK=1 KWG=1 KWI=1 SA=0 SB=0 STRM=0 STRN=0"

[ -z "$DRY" ] && CK_FORK=no CK_RUN_CASE=xgemm KILN_LOG=error timeout 20 build-gpu/tests/test_tuner > $R/test-tuner-xgemm.txt 2>&1
echo "test_tuner xgemm rc=$?" >> $R/tests.txt
el test

run() { # dtype label spec...
  local d=$1 l=$2; shift 2
  [ -n "$ONLY" ] && ! [[ "$d-$l" =~ $ONLY ]] && return
  [ $(left) -lt 3 ] && { echo "$d $l skipped (budget)" >> $R/candidates.txt; return; }
  local spec=""; [ "$l" != base ] && spec=$(full "$S" "$@")
  echo "$d $l $spec${O:+ CLBLAST_BUILD_OPTIONS=$O}" >> $R/candidates.txt
  [ -n "$DRY" ] && return
  CLBLAST_BUILD_OPTIONS="$O" KILN_DEBUG_XGEMM="$spec" timeout ${TMO:-12} $K bench --no-startup --json --filter blas.gemm_clblast \
    --sizes ${SIZES:-2^22,2^24,2^26} --dtype $d --reps 5 > $R/sweep-$d-$l.json 2>>$R/err-$d-$l.txt
}
# Round 2 (round 1's 38 candidates: docs/tuning.md, "xgemm"): the defaults as a new user
# gets them, PyTorch, then the f32 candidates round 1 had no time for and f64 combinations
# around its winner (KWI 4, now set 11).
[ -z "$DRY" ] && KILN_TUNE=off timeout 25 $K bench --no-startup --json --filter blas.gemm_clblast \
  --sizes 2^22,2^24,2^26 --dtype f32,f64 --reps 5 > $R/defaults.json 2>>$R/err-defaults.txt
el defaults
[ -z "$DRY" ] && timeout 30 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^22,2^24,2^26 \
  --filter blas.gemm --out $R/torch-gemm.json > $R/torch.log 2>&1
el torch
S=$B32
run f32 t64x128 MWG=64 NWG=128 MDIMC=8 NDIMC=16 MDIMA=16 NDIMB=8
run f32 t64x128k16 MWG=64 NWG=128 MDIMC=8 NDIMC=16 MDIMA=16 NDIMB=8 KWG=16
run f32 t128x64 MWG=128 NWG=64 MDIMC=16 NDIMC=8 MDIMA=16 NDIMB=8
run f32 t64x64 MWG=64 NWG=64 MDIMC=8 NDIMC=8 MDIMA=8 NDIMB=8
run f32 kwi4 KWI=4
run f32 i16x8w128 MWG=128 NWG=128 MDIMC=8 NDIMC=16 MDIMA=16 NDIMB=8
run f32 i16x8sb0 MWG=256 NWG=128 SB=0
run f32 sb0 SB=0
run f32 sa0 SA=0
O=-DUSE_STAGGERED_INDICES=1 run f32 stagger MWG=128
run f32 t64x128kwi4 MWG=64 NWG=128 MDIMC=8 NDIMC=16 MDIMA=16 NDIMB=8 KWI=4
run f32 g1t128 $K1 MWG=128 NWG=128 MDIMC=16 NDIMC=16 MDIMA=16 NDIMB=16 KREG=4
el f32
S=$B64
run f64 kwi4vw1 VWM=1 VWN=1
run f64 kwi8vw1 KWI=8 VWM=1 VWN=1
run f64 t64x64kwi4 MWG=64 NWG=64 MDIMC=8 NDIMC=8 MDIMA=8 NDIMB=8
run f64 kwi4ma32 MDIMA=32 NDIMB=8
run f64 kwi4str0 STRM=0 STRN=0
el f64

# TFLOP/s per candidate and size, best first at 4096^3.
python3 - "$R" > $R/summary.txt 2>&1 <<'EOF'
import json, glob, os, sys
rows = []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "sweep-*.json"))) + \
        [os.path.join(sys.argv[1], "defaults.json")]:
    try:
        d = json.load(open(f))
    except Exception as e:
        rows.append((os.path.basename(f), {}, str(e))); continue
    t = {}
    for r in d.get("results", []):
        if r.get("gflops"):
            t.setdefault(r["dtype"], {})[round(r["n"] ** 0.5)] = r["gflops"] / 1e3
    if "defaults" in f:
        rows += [(dt + "-DEFAULTS", v, "") for dt, v in t.items()]
        continue
    t = next(iter(t.values()), {})
    why = "; ".join(x.get("reason", "") for x in d.get("skipped", []))
    err = f.replace("sweep-", "err-").replace(".json", ".txt")
    if not t and os.path.exists(err):
        why += open(err).read().strip()[-300:]
    rows.append((os.path.basename(f)[6:-5], t, why))
rows.sort(key=lambda r: (r[0][:3], -r[1].get(4096, 0)))
for name, t, err in rows:
    print("%-24s %s %s" % (name, " ".join("%d:%.2f" % (k, v) for k, v in sorted(t.items())), err))
EOF
el summary

