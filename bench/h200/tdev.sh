#!/bin/bash
# Issue 18, sessions 18-20: eigh with its tridiagonal stage on the device (lib/ops/linalg_tridiag.c)
# on the H200. One run: NAMES=tdev RUN=<results dir> STEPS="<steps>" bash bench/h200/round.sh
# (results in $OUT/r/$RUN; docs/perf-data/h200-2026-12-03-s18/README.md gives each run's steps).
# Steps, in the order given:
#   dev    kiln bench eigh f64/f32 at 1024 and 4096 (or SIZES; reps 3), phases from KILN_LOG=debug
#   host   the same f64 on the host MRRR route (KILN_DEBUG_LINALG_HOST=notdev, reps 2)
#   trace  eigh f64 4096 (or TRACE_SIZE) under cltrace (per-kernel device time)
#   svd    svd f64 at 1024 and 4096 with phases and the U/V check's norms
#   torch  PyTorch's eigh at the same sizes and dtypes
#   tests  test_linalg_spectral's cases CASES (default panel, tiles, tdev and all)
#   nb     eigh f64 4096 with the linalg family's nb at 64, 128 and 32
#   check  test_linalg_spectral's all case with KILN_LOG=debug: every line of eigh's and svd's
#          checks of the host's vectors (||Z^T Z - I||, ||U^T U - I||), in call order
#   ptx    the cached programs with tr_panel (NVIDIA's PTX; ptxas -v gives registers, spills)
#   var    eigh at 1024 and 4096 (DTYPES, default f64) with phases under each
#          KILN_DEBUG_LINALG_HOST value of VARS (space-separated; session 19: rtri, symk=N;
#          session 20: notpanel, lpan=N, gpan=N)
source bench/h200/common.sh "${RUN:-tdev}"
E=linalg.eigh
for step in ${STEPS:-dev host trace torch tests}; do
  case $step in
  dev)
    KILN_LOG=debug timeout 60 $K bench --no-startup --json --reps 3 --dtype f64,f32 \
      --sizes ${SIZES:-2^20,2^24} --filter $E > $R/bench-dev.json 2> $R/phases-dev.txt ;;
  host)
    KILN_DEBUG_LINALG_HOST=notdev KILN_LOG=debug timeout 30 $K bench --no-startup --json \
      --reps 2 --dtype f64 --sizes 2^20,2^24 --filter $E > $R/bench-host.json \
      2> $R/phases-host.txt ;;
  trace)
    trace_at dev f64 ${TRACE_SIZE:-2^24} 2 --filter $E ;;
  svd)
    KILN_LOG=debug timeout 40 $K bench --no-startup --json --reps 2 --dtype f64 \
      --sizes 2^20,2^24 --filter linalg.svd > $R/bench-svd.json 2> $R/phases-svd.txt ;;
  torch)
    timeout 40 python3 bench/peers_torch.py --no-startup --reps 3 --dtype f64,f32 \
      --sizes 2^20,2^24 --filter $E --out $R/torch.json > $R/torch.log 2>&1 ;;
  tests)
    for c in ${CASES:-panel tiles tdev all}; do
      CK_RUN_CASE=$c CK_FORK=no KILN_LOG=error timeout 150 build-gpu/tests/test_linalg_spectral \
        > $R/test-$c.txt 2>&1
      echo "$c rc=$?" >> $R/runs.txt
    done ;;
  nb)
    for nb in 64 128 32; do
      KILN_LOG=debug timeout 40 $K bench --no-startup --json --reps 3 --dtype f64 \
        --sizes 2^24 --filter $E --tune "linalg:nb=$nb" > $R/bench-nb$nb.json \
        2> $R/phases-nb$nb.txt
    done ;;
  check)
    CK_RUN_CASE=all CK_FORK=no KILN_LOG=debug timeout 150 build-gpu/tests/test_linalg_spectral \
      2>&1 | grep -E "vectors of matrix|Checks|:F:" > $R/check-all.txt ;;
  ptx)
    mkdir -p $R/ptx; for f in $(grep -rl "tr_panel" $KILN_CACHE_DIR | head -4); do cp "$f" $R/ptx/; done
    tar czf $R/ptx.tgz -C $R ptx && rm -rf $R/ptx ;;
  var)
    for v in $VARS; do
      KILN_DEBUG_LINALG_HOST=$v KILN_LOG=debug timeout 40 $K bench --no-startup --json --reps 3 \
        --dtype ${DTYPES:-f64} --sizes ${SIZES:-2^20,2^24} --filter $E > $R/bench-$v.json 2> $R/phases-$v.txt
    done ;;
  esac
  el $step
done
