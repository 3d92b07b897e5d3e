#!/usr/bin/env python3
"""pocl_issue21_table.py DIR: the markdown table of bench/pocl_issue21.sh's results in DIR.

DIR holds one file per round and kind: untuned-R.json (`kiln bench`, KILN_TUNE=off),
tuned-R.json (`kiln bench` with the fresh tuning file), numpy-R.json and pyopencl-R.json
(bench/peers_numpy.py). Per case, dtype and size: the median over the rounds of each round's
median time, the ratios NumPy time / kiln time and PyOpenCL time / kiln time (above 1 kiln is
faster), kiln's GB/s with the defaults as a share of `copy.kiln_copy`'s GB/s at the same dtype and size
in the same rounds (the issue's "% of copy"), and the defaults' time over the tuned time (above 1 the tuning file
helped). Cases without a NumPy or PyOpenCL row show '-'.
"""
import glob
import json
import os
import statistics
import sys


def load(pattern):
    """{(case, dtype, n): [rows of every round]}"""
    out = {}
    for p in sorted(glob.glob(os.path.join(sys.argv[1], pattern))):
        try:
            j = json.load(open(p))
        except Exception:
            continue
        for r in j.get('results', []):
            if r.get('device_ms'):
                out.setdefault((r['case'], r['dtype'], r['n']), []).append(r)
    return out


def med(rows, field='device_ms'):
    vals = [r[field] for r in rows or [] if isinstance(r.get(field), (int, float)) and r[field] > 0]
    return statistics.median(vals) if vals else None


def pow2(n):
    k = n.bit_length() - 1
    return f'2^{k}' if n == 1 << k else str(n)


def fmt(x):
    return '-' if x is None else f'{x:.3g}'


def ratio(a, b):
    return f'{a / b:.2f}x' if a and b else '-'


un, tu = load('untuned-*.json'), load('tuned-*.json')
npy, pcl = load('numpy-*.json'), load('pyopencl-*.json')
rounds = len(glob.glob(os.path.join(sys.argv[1], 'untuned-*.json')))
print(f'{rounds} rounds; medians of the rounds\' medians; ratios: peer time / kiln time '
      '(above 1 kiln is faster)')
print()
print('| case | dtype | n | defaults ms | tuned ms | NumPy ms | PyOpenCL ms | NumPy / defaults '
      '| NumPy / tuned | PyOpenCL / defaults | defaults GB/s (% of kiln_copy) | defaults / tuned |')
print('|---|---|---|---|---|---|---|---|---|---|---|---|')
for key in sorted(un):
    case, dt, n = key
    d, t = med(un[key]), med(tu.get(key))
    p, c = med(npy.get(key)), med(pcl.get(key))
    gb, cg = med(un[key], 'gbps'), med(un.get(('copy.kiln_copy', dt, n)), 'gbps')
    share = f'{gb:.3g} ({100 * gb / cg:.0f}%)' if gb and cg else (f'{gb:.3g}' if gb else '-')
    print(f'| {case} | {dt} | {pow2(n)} | {fmt(d)} | {fmt(t)} | {fmt(p)} | {fmt(c)} | '
          f'{ratio(p, d)} | {ratio(p, t)} | {ratio(c, d)} | {share} | '
          f'{f"{d / t:.2f}" if d and t else "-"} |')
