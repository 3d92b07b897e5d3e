#!/usr/bin/env python3
"""Tabulates bench/ab.sh's output: every round's device ms per case, old and new, and the
ratio of the fastest rounds (old / new: above 1 the new build is faster)."""
import collections
import sys

runs = collections.defaultdict(list)
side = None
for line in open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin:
    if line.startswith("=="):
        side = line.split()[1]
        continue
    f = line.split()
    if len(f) >= 4 and side:
        runs[(f[0], f[1], f[2], side)].append(float(f[3]))
print("| case | dtype | n | old ms (rounds) | new ms (rounds) | old / new, fastest rounds |")
print("|---|---|---|---|---|---|")
for key in sorted({k[:3] for k in runs}):
    old, new = runs.get(key + ("old",), []), runs.get(key + ("new",), [])
    if not old or not new:
        continue
    fmt = lambda xs: ", ".join("%.3g" % x for x in xs)
    print("| %s | %s | %s | %s | %s | %.2fx |" % (key + (fmt(old), fmt(new), min(old) / min(new))))
