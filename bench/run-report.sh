#!/usr/bin/env bash
# Regenerates the PoCL part of the performance report on this machine:
#   bench/run-report.sh [BUILD_DIR]
# runs `kiln bench --json`, the peers (bench/peers.py) and bench/report.py. The H200 JSON
# (kiln bench and bench/peers_torch.py, PyTorch on the same GPU) is produced on the GPU machine
# by the command in docs/performance.md and copied into docs/perf-data/h200-bench.json and
# docs/perf-data/h200-torch.json before running this script.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
machine=${MACHINE:-pocl}
mkdir -p docs/perf-data
"$build/tools/kiln" bench --json > "docs/perf-data/$machine-bench.json"
/usr/bin/python3 bench/peers.py --build "$build" --out "docs/perf-data/$machine-peers.json" >/dev/null
/usr/bin/python3 bench/report.py
echo "wrote docs/performance-data.md and docs/img/"
