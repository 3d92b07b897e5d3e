#!/usr/bin/env bash
# Regenerates the PoCL part of the performance report on this machine:
#   [SIZES=2^10,2^14,2^18,2^22] bench/run-report.sh [BUILD_DIR]
# (default sizes 2^10 to 2^22: on a CPU device the 2^26 points take hours, an 8192^3
# GEMM alone minutes per run) runs `kiln bench --json`, the peers (bench/peers.py) and
# bench/report.py. The H200 JSON
# (kiln bench and bench/peers_torch.py, PyTorch on the same GPU) is produced on the GPU machine
# by the command in docs/performance.md and copied into docs/perf-data/h200-bench.json and
# docs/perf-data/h200-torch.json before running this script.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
machine=${MACHINE:-pocl}
sizes=${SIZES:-2^10,2^14,2^18,2^22}
mkdir -p docs/perf-data
# Written beside, then moved: an interrupted run leaves the previous data in place.
"$build/tools/kiln" bench --sizes "$sizes" --json > "docs/perf-data/$machine-bench.json.tmp"
mv "docs/perf-data/$machine-bench.json.tmp" "docs/perf-data/$machine-bench.json"
/usr/bin/python3 bench/peers.py --build "$build" --sizes "$sizes" \
  --out "docs/perf-data/$machine-peers.json" >/dev/null
/usr/bin/python3 bench/report.py
echo "wrote docs/performance-data.md and docs/img/"
