#!/usr/bin/env bash
# Measures the autotuner on this machine for docs/tuning.md:
#   MACHINE=pocl bench/run-tune.sh [BUILD_DIR] [SIZES]
# 1. `kiln tune --json` per family (full candidate sets, f32) into
#    docs/perf-data/$MACHINE-tune-<family>.json, in a private cache directory so that
#    earlier results and recorded failures play no part; the tuning file it wrote is kept
#    as docs/perf-data/$MACHINE-tuning-file.txt;
# 2. `kiln bench --json` on the elementwise, reduce and scan cases at the two largest sizes,
#    with that tuning file (KILN_TUNE=cached) and without it (KILN_TUNE=off), into
#    docs/perf-data/$MACHINE-bench-{tuned,untuned}.json;
# 3. bench/tune_report.py: docs/tuning-data.md and docs/img/$MACHINE-tune-*.png.
# On the H200: MACHINE=h200 bench/run-tune.sh build 2^12,2^16,2^20,2^22,2^24,2^26
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
sizes=${2:-2^12,2^16,2^20,2^22,2^24}
machine=${MACHINE:-pocl}
mkdir -p docs/perf-data
export KILN_CACHE_DIR
KILN_CACHE_DIR=$(mktemp -d /tmp/kiln-tune-XXXXXX)
trap 'rm -rf "$KILN_CACHE_DIR"' EXIT
for family in elementwise reduce scan; do
  "$build/tools/kiln" tune --family "$family" --sizes "$sizes" --json \
    > "docs/perf-data/$machine-tune-$family.json"
done
cp "$KILN_CACHE_DIR"/tuning/*.txt "docs/perf-data/$machine-tuning-file.txt"
big=$(echo "$sizes" | tr ',' '\n' | tail -2 | paste -sd,)
for mode in off cached; do
  out=$([ "$mode" = off ] && echo untuned || echo tuned)
  for filter in unary.neg binary.add reduce. scan.; do
    KILN_TUNE=$mode "$build/tools/kiln" bench --filter "$filter" --dtype f32 --sizes "$big" \
      --no-startup --json
  done | /usr/bin/python3 -c '
import json, sys
docs = []
dec = json.JSONDecoder()
text = sys.stdin.read()
i = 0
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    d, i = dec.raw_decode(text, i)
    docs.append(d)
merged = docs[0]
for d in docs[1:]:
    merged["results"] += d["results"]
json.dump(merged, sys.stdout, indent=1)
' > "docs/perf-data/$machine-bench-$out.json"
done
/usr/bin/python3 bench/tune_report.py
echo "wrote docs/tuning-data.md and docs/img/$machine-tune-*.png"
