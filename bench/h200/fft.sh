#!/bin/bash
# VkFFT configurations at 2^22 and 2^26 (c2c, f32 and f64) next to cuFFT through PyTorch, and
# the fft tests under the configuration that is timed fastest (KILN_DEBUG_VKFFT, lib/backends/vkfft.c).
source .device/setup.sh >/dev/null 2>&1
R=$OUT/r/fft; mkdir -p $R
export KILN_CACHE_DIR=/tmp/kc-fft
K=build-gpu/tools/kiln
timeout 30 python3 bench/peers_torch.py --no-startup --dtype f32,f64 --sizes 2^22,2^26 --filter fft.c2c --out $R/torch.json > $R/torch.log 2>&1
i=0
for cfg in "" registerBoost4Step=2 registerBoost4Step=4 coalescedMemory=64 aimThreads=256 \
           "registerBoost4Step=4,coalescedMemory=64" "registerBoost=8,registerBoost4Step=4" \
           swapTo3Stage4Step=26 performBandwidthBoost=2; do
  echo "$i $cfg" >> $R/configs.txt
  KILN_DEBUG_VKFFT="$cfg" timeout 25 $K bench --no-startup --json --dtype f32,f64 --sizes 2^22,2^26 \
    --filter fft.c2c_vkfft > $R/bench-$i.json 2>> $R/err.txt
  i=$((i+1))
done
for cfg in "" "registerBoost4Step=4"; do
  KILN_DEBUG_VKFFT="$cfg" CK_FORK=no KILN_LOG=error timeout 40 build-gpu/tests/test_fft > $R/test-"${cfg:-default}".txt 2>&1
  echo "test_fft [$cfg] rc=$?" >> $R/tests.txt
done
