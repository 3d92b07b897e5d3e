#!/usr/bin/env bash
# Measures the autotuner on this machine for docs/tuning.md:
#   MACHINE=pocl bench/run-tune.sh [BUILD_DIR] [SIZES]
# 1. `kiln tune --json` per family (full candidate sets, f32) into
#    docs/perf-data/$MACHINE-tune-<family>.json, in a private cache directory so that
#    earlier results and recorded failures play no part; the tuning file it wrote is kept
#    as docs/perf-data/$MACHINE-tuning-file.txt;
# 2. `kiln bench --json` on the elementwise, reduce and scan cases at the two largest sizes,
#    with that tuning file (KILN_TUNE=cached) and without it (KILN_TUNE=off), three
#    alternating rounds, the best per case, into docs/perf-data/$MACHINE-bench-{tuned,untuned}.json;
# 3. bench/tune_report.py: docs/tuning-data.md and docs/img/$MACHINE-tune-*.png.
# Environment: FAMILIES (default: elementwise reduce scan fft gemm; fft and gemm need
# both back ends), ROUNDS (bench rounds of step 2, default 3; 0 skips step 2), REPORT=0
# skips step 3 (machines without matplotlib: run bench/tune_report.py where it is).
# On the H200 (docs/tuning.md has the device command):
#   MACHINE=h200 ROUNDS=1 REPORT=0 bench/run-tune.sh build-gpu 2^20,2^24,2^26
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
sizes=${2:-2^12,2^16,2^20,2^22,2^24}
machine=${MACHINE:-pocl}
mkdir -p docs/perf-data
export KILN_CACHE_DIR
KILN_CACHE_DIR=$(mktemp -d /tmp/kiln-tune-XXXXXX)
trap 'rm -rf "$KILN_CACHE_DIR"' EXIT
for family in ${FAMILIES:-elementwise reduce scan fft gemm}; do
  # A family this build cannot tune (one FFT library, no CLBlast) exits 1: skipped.
  "$build/tools/kiln" tune --family "$family" --sizes "$sizes" --json \
    > "docs/perf-data/$machine-tune-$family.json" || rm -f "docs/perf-data/$machine-tune-$family.json"
done
cp "$KILN_CACHE_DIR"/tuning/*.txt "docs/perf-data/$machine-tuning-file.txt"
big=$(echo "$sizes" | tr ',' '\n' | tail -2 | paste -sd,)
# Three alternating rounds without and with the file; per case the best round counts, since
# on a shared host other processes only ever slow a run down.
rounds=$(mktemp -d /tmp/kiln-tune-bench-XXXXXX)
for round in $(seq 1 "${ROUNDS:-3}"); do
  for mode in off cached; do
    for filter in unary.neg binary.add reduce. scan.; do
      KILN_TUNE=$mode "$build/tools/kiln" bench --filter "$filter" --dtype f32 --sizes "$big" \
        --no-startup --json > "$rounds/$mode-$round-${filter%.}.json"
    done
  done
done
for mode in off cached; do
  [ "${ROUNDS:-3}" -gt 0 ] || break
  out=$([ "$mode" = off ] && echo untuned || echo tuned)
  /usr/bin/python3 - "$rounds" "$mode" > "docs/perf-data/$machine-bench-$out.json" <<'PY'
import glob, json, sys
best, doc = {}, None
for path in sorted(glob.glob(f"{sys.argv[1]}/{sys.argv[2]}-*.json")):
    with open(path) as f:
        d = json.load(f)
    doc = doc or d
    for r in d["results"]:
        k = (r["case"], r["dtype"], r["n"])
        if k not in best or r["gbps"] > best[k]["gbps"]:
            best[k] = r
doc["results"] = sorted(best.values(), key=lambda r: (r["case"], r["n"]))
doc["rounds"] = len(glob.glob(f"{sys.argv[1]}/{sys.argv[2]}-*.json")) // 4
json.dump(doc, sys.stdout, indent=1)
PY
done
rm -rf "$rounds"
[ "${REPORT:-1}" = 0 ] && exit 0
/usr/bin/python3 bench/tune_report.py
echo "wrote docs/tuning-data.md and docs/img/$machine-tune-*.png"
