#!/bin/sh
# clFFT against VkFFT on one device (docs/blas_fft.md, the CPU devices' rule in
# lib/ops/tunables.h): ROUNDS alternating runs of `kiln bench --filter fft.c2c_clfft,fft.c2c_vkfft`
# and a table of the fastest run per cell, ms, with VkFFT's time over clFFT's.
#   bench/pocl_fft_backends.sh [BUILD_DIR] [ROUNDS] [SIZES]
# (defaults: build, 3, 2^10,2^12,2^14,2^16,2^17,2^18,2^19,2^20,2^21,2^22,2^23,2^24)
set -eu
build=${1:-build}
rounds=${2:-3}
sizes=${3:-2^10,2^12,2^14,2^16,2^17,2^18,2^19,2^20,2^21,2^22,2^23,2^24}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for r in $(seq "$rounds"); do
  KILN_CACHE_DIR="${TMPDIR:-/tmp}/kiln-fft-backends-$(id -u)" "$build/tools/kiln" bench \
    --no-startup --reps 7 --dtype f32,f64 --sizes "$sizes" \
    --filter fft.c2c_clfft,fft.c2c_vkfft | grep -E '^fft\.' >> "$out"
done
python3 - "$out" <<'PY'
import collections, sys
best = collections.defaultdict(lambda: float('inf'))
for line in open(sys.argv[1]):
    case, dt, n, ms = line.split()[:4]
    best[(dt, n, case)] = min(best[(dt, n, case)], float(ms))
print('| points | f32 clFFT | f32 VkFFT | f32 VkFFT / clFFT | f64 clFFT | f64 VkFFT | f64 VkFFT / clFFT |')
print('|---|---|---|---|---|---|---|')
for n in sorted({k[1] for k in best}, key=lambda s: int(s.split('^')[1])):
    cells = []
    for dt in ('f32', 'f64'):
        c, v = best[(dt, n, 'fft.c2c_clfft')], best[(dt, n, 'fft.c2c_vkfft')]
        cells += ['%.4g' % c, '%.4g' % v, '%.2f' % (v / c)]
    print('| %s | %s |' % (n, ' | '.join(cells)))
PY
