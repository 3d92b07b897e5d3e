#!/usr/bin/env bash
# Issue 21's table on a CPU device (PoCL), docs/performance.md: `kiln bench` with the built-in
# defaults (KILN_TUNE=off), a fresh `kiln tune` of the families those cases use into an empty
# cache directory, `kiln bench` again with that tuning file, and NumPy (host) and PyOpenCL (the
# same PoCL device) for the same cases (bench/peers_numpy.py). On a shared machine the three
# kinds of run are interleaved, ROUNDS times, and the table takes the median of the rounds:
#   bash bench/pocl_issue21.sh [BUILD_DIR] [OUT_DIR]
#   /usr/bin/python3 bench/pocl_issue21_table.py OUT_DIR
# Environment: SIZES (default 2^22,2^24), FFT_SIZES (2^20,2^22: an FFT of 2^24 points takes
# seconds per call on two cores), ROUNDS (3), DTYPES (f32,f64), F (the case filter),
# TUNE_REPS (3), TUNING_FILE and RETUNE (below).
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
R=${2:-docs/perf-data/pocl-issue21}
K=$build/tools/kiln
PY=/usr/bin/python3
S=${SIZES:-2^22,2^24}
FS=${FFT_SIZES:-2^20,2^22}
D=${DTYPES:-f32,f64}
F=${F:-copy.kiln_copy,unary.,binary.,cast.,reduce.,scan.,sort.,layout.,index.,random.}
mkdir -p "$R"
export KILN_CACHE_DIR
KILN_CACHE_DIR=$(mktemp -d /tmp/kiln-pocl-issue21-XXXXXX)
export POCL_CACHE_DIR=${POCL_CACHE_DIR:-$KILN_CACHE_DIR/pocl}
trap 'rm -rf "$KILN_CACHE_DIR"' EXIT
t0=$(date +%s)
el() { echo "$1 $(($(date +%s) - t0))s load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$R/times.txt"; }
: > "$R/times.txt"
"$K" info > "$R/info.txt" 2>&1
git rev-parse HEAD > "$R/commit.txt" 2>/dev/null
# The fresh tuning: every family the cases use, at the bench's sizes, into the empty cache dir
# (TUNING_FILE=path: that file instead, e.g. an earlier run's tuning-file.txt: the tuning
# alone took 40 minutes here under load).
mkdir -p "$KILN_CACHE_DIR/tuning"
[ -n "${TUNING_FILE:-}" ] && cp "$TUNING_FILE" "$KILN_CACHE_DIR/tuning/$(basename "$(
  sed -n 's/^device //p' "$TUNING_FILE" | tr 'A-Z' 'a-z' | sed 's/^pthread-//; s/^cpu-//;
  s/[^a-z0-9.]\+/-/g')--$(sed -n 's/^driver //p' "$TUNING_FILE" | tr 'A-Z' 'a-z' |
  sed 's/[^a-z0-9.]\+/-/g').txt")"
# RETUNE: families tuned anyway (their keys replace the file's: a change to their defaults
# makes the file's entries, which store the old defaults where those won, stale).
for fam in ${TUNING_FILE:+${RETUNE:-} none} elementwise cast copy random reduce scan; do
  [ "$fam" = none ] && break
  "$K" tune --family $fam --dtype "$D" --sizes "$S" --reps "${TUNE_REPS:-3}" --json \
    > "$R/tune-$fam.json" 2>> "$R/err.txt"
  el "tune-$fam"
done
if [ -z "${TUNING_FILE:-}" ]; then
  "$K" tune --family fft --dtype "$D" --sizes "$FS" --reps "${TUNE_REPS:-3}" --json \
    > "$R/tune-fft.json" 2>> "$R/err.txt"
  el tune-fft
fi
cp "$KILN_CACHE_DIR"/tuning/*.txt "$R/tuning-file.txt" 2>/dev/null
bench() {  # bench MODE OUT: the cases, then fft.c2c at its own sizes, as one JSON document
  KILN_TUNE=$1 "$K" bench --no-startup --json --dtype "$D" --sizes "$S" --filter "$F" \
    > "$2.main" 2>> "$R/err.txt"
  KILN_TUNE=$1 "$K" bench --no-startup --json --dtype "$D" --sizes "$FS" --filter fft.c2c \
    > "$2.fft" 2>> "$R/err.txt"
  $PY - "$2" <<'EOF'
import json, sys
a, b = (json.load(open(sys.argv[1] + s)) for s in ('.main', '.fft'))
a['results'] += [r for r in b['results'] if r['case'] == 'fft.c2c']
json.dump(a, open(sys.argv[1], 'w'), indent=1)
EOF
  rm -f "$2.main" "$2.fft"
}
# The order alternates between rounds: the first kiln run of a round measured up to 2x
# slower than the second with the same parameters (the copy at 2^24 in the first run here).
for round in $(seq 1 "${ROUNDS:-3}"); do
  modes="off cached"
  [ $((round % 2)) = 0 ] && modes="cached off"
  for mode in $modes; do
    kind=$([ $mode = off ] && echo untuned || echo tuned)
    bench $mode "$R/$kind-$round.json"; el "$kind-$round"
  done
  $PY bench/peers_numpy.py --sizes "$S" --dtype "$D" --filter "$F" \
    --numpy-out "$R/numpy-$round.json" --pyopencl-out "$R/pyopencl-$round.json" 2>> "$R/err.txt"
  $PY bench/peers_numpy.py --sizes "$FS" --dtype "$D" --filter fft.c2c \
    --numpy-out "$R/numpy-fft-$round.json" 2>> "$R/err.txt"
  el "peers-$round"
done
$PY bench/pocl_issue21_table.py "$R" > "$R/table.md"
cat "$R/table.md"
