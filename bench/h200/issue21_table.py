#!/usr/bin/env python3
"""issue21_table.py DIR: the markdown table of bench/h200/issue21.sh's results in DIR
(untuned*.json, tuned*.json, torch*.json): per case, dtype and size the kiln times with the
built-in defaults and with the fresh tuning file, PyTorch's, and both ratios (PyTorch time /
kiln time: above 1 kiln is faster). GEMM rows give TFLOP/s as well."""
import glob, json, os, sys

def load(pattern):
    out = {}
    for p in sorted(glob.glob(os.path.join(sys.argv[1], pattern))):
        try:
            j = json.load(open(p))
        except Exception:
            continue
        for r in j.get('results', []):
            if r.get('device_ms'):
                out[(r['case'], r['dtype'], r['n'])] = r
    return out

un, tu, pt = load('untuned*.json'), load('tuned*.json'), load('torch*.json')
def pow2(n):
    k = n.bit_length() - 1
    return f'2^{k}' if n == 1 << k else str(n)
def fmt(x):
    return '-' if x is None else f'{x:.3g}'
print('| case | dtype | n | defaults ms | tuned ms | PyTorch ms | ratio defaults | ratio tuned | defaults time / tuned time |')
print('|---|---|---|---|---|---|---|---|---|')
for key in sorted(un, key=lambda k: (k[0], k[1], k[2])):
    case, dt, n = key
    d = un[key]['device_ms']
    t = tu.get(key, {}).get('device_ms')
    p = pt.get(key, {}).get('device_ms')
    rd = f'{p / d:.2f}x' if p else '-'
    rt = f'{p / t:.2f}x' if p and t else '-'
    dt_ratio = f'{d / t:.2f}' if t else '-'
    label = case
    if case.startswith('blas.gemm'):
        side = round(n ** 0.5)
        label = f'{case} {side}^3 ({2 * side ** 3 / d / 1e9:.1f} TFLOP/s)'
    print(f'| {label} | {dt} | {pow2(n)} | {fmt(d)} | {fmt(t)} | {fmt(p)} | {rd} | {rt} | {dt_ratio} |')
