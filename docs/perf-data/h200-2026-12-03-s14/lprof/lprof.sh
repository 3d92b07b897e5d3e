#!/bin/bash
# LU 4096 f64 with parts of lu_panel_grid switched off (results wrong on purpose; timing only).
# Needs lprof.patch applied to a06919b (it adds KILN_XDEFS, -D flags for the linalg program):
#   git checkout a06919b && git apply docs/perf-data/h200-2026-12-03-s14/lprof/lprof.patch
#   cp docs/perf-data/h200-2026-12-03-s14/lprof/lprof.sh bench/h200/ && build build-gpu
#   NAMES=lprof bash bench/h200/round.sh
source .device/setup.sh >/dev/null 2>&1
K=build-gpu/tools/kiln
R=$OUT/r/lprof; mkdir -p $R
t0=$(date +%s); el() { echo "$1 $(( $(date +%s)-t0 ))s" >> $R/times.txt; }
b() { local n=$1 to=$2; shift 2
  KILN_CACHE_DIR=/tmp/kc-$n timeout -k 1 $to $K bench --no-startup --json --reps 5 "$@" > $R/bench-$n.json 2>> $R/err.txt
  echo "$n rc=$?" >> $R/runs.txt; el $n; }
b base 30 --dtype f64 --sizes 2^24 --filter linalg.lu
KILN_XDEFS="-DLUG_NOPOLL" b nopoll 30 --dtype f64 --sizes 2^24 --filter linalg.lu
KILN_XDEFS="-DLUG_NOTREE" b notree 30 --dtype f64 --sizes 2^24 --filter linalg.lu
KILN_XDEFS="-DLUG_NOUPD" b noupd 30 --dtype f64 --sizes 2^24 --filter linalg.lu
KILN_XDEFS="-DLUG_NOPOLL -DLUG_NOTREE -DLUG_NOUPD" b none 30 --dtype f64 --sizes 2^24 --filter linalg.lu
