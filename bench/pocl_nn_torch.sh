#!/usr/bin/env bash
# The nn cases on a CPU device (PoCL) next to PyTorch on the same CPU, alternating ROUNDS times
# (docs/nn.md, "CPU devices"):
#   TORCH_PY=/path/to/python-with-torch bash bench/pocl_nn_torch.sh [BUILD_DIR] [OUT_DIR]
#   /usr/bin/python3 bench/pocl_nn_table.py OUT_DIR
# TORCH_PY: a Python whose torch imports (PyTorch's wheel in a venv made with
# `/usr/bin/python3 -m venv --system-site-packages DIR`, so that NumPy comes from Debian);
# bench/peers_torch.py --device cpu times it with its default thread count (the cores).
# Environment: SIZES (2^18,2^22), DTYPES (f32,f64), F (nn.), ROUNDS (2).
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
R=${2:-docs/perf-data/pocl-nn-torch}
PY=${TORCH_PY:?set TORCH_PY to a python with torch}
mkdir -p "$R"
export KILN_LOG=error KILN_TUNE=off
git rev-parse HEAD > "$R/commit.txt" 2>/dev/null
for r in $(seq "${ROUNDS:-2}"); do
  "$build/tools/kiln" bench --no-startup --json --dtype "${DTYPES:-f32,f64}" \
    --sizes "${SIZES:-2^18,2^22}" --filter "${F:-nn.}" > "$R/kiln-$r-nn.json" 2>> "$R/err.txt"
  "$PY" bench/peers_torch.py --device cpu --no-startup --sizes "${SIZES:-2^18,2^22}" \
    --dtype "${DTYPES:-f32,f64}" --filter "${F:-nn.}" --out "$R/torch-$r-nn.json" \
    > /dev/null 2>> "$R/err.txt"
done
