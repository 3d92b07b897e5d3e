#!/usr/bin/env bash
# Installs the Debian packages kiln needs to build, test and run on PoCL (CPU OpenCL).
# Idempotent: does nothing when everything is present.
#   --bench   also the peers and plotting tools of the performance report
#             (NumPy with OpenBLAS, PyOpenCL, matplotlib)
set -euo pipefail
pkgs=(meson ninja-build pkg-config gcc make python3 ocl-icd-opencl-dev opencl-headers
      pocl-opencl-icd clinfo check libxxhash-dev libsodium-dev libclblast-dev libclfft-dev libvkfft-dev
      liblapacke-dev oclgrind)
if [ "${1:-}" = "--bench" ]; then
  pkgs+=(python3-numpy python3-pyopencl python3-matplotlib libopenblas0-pthread)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
