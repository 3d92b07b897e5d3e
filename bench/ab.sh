#!/bin/sh
# A/B timing of two kiln builds on one device, alternating so that a change in the machine's
# load hits both: bench/ab.sh OLD_BUILD NEW_BUILD FILTER DTYPES SIZES [ROUNDS]
#   e.g. bench/ab.sh /work/main-old/build build unary.exp f64 2^20,2^24 4
# Each round runs `kiln bench --no-startup --reps 9` with OLD_BUILD's tool, then NEW_BUILD's,
# each with a kernel cache of its own; bench/ab_table.py then prints every round's median
# and the ratio of the fastest rounds (old / new: above 1 the new build is faster). On a
# loaded CPU device the rounds' medians can differ by 2x, and the fastest round is the
# steadiest figure.
set -eu
old=$1 new=$2 filter=$3 dtypes=$4 sizes=$5 rounds=${6:-3}
for r in $(seq "$rounds"); do
  for side in old new; do
    if [ "$side" = old ]; then b=$old; else b=$new; fi
    echo "== $side"
    KILN_CACHE_DIR="${TMPDIR:-/tmp}/kiln-ab-$side-$(id -u)" "$b/tools/kiln" bench --no-startup \
      --reps 9 --dtype "$dtypes" --sizes "$sizes" --filter "$filter" | grep -E '^[a-z_]+\.'
  done
done
