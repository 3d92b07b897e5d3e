#!/usr/bin/env bash
# Quick start: installs what is missing (Debian packages), builds kiln into ./build and runs
# `kiln demo` on the default OpenCL device (PoCL's CPU device when there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build --buildtype=debugoptimized
meson compile -C build
build/tools/kiln info
echo
build/tools/kiln demo
