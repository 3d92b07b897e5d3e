#!/usr/bin/env python3
"""The table of bench/pocl_nn_torch.sh's rounds: medians of kiln's and PyTorch's device times
per (case, dtype, n) and their ratio (PyTorch time / kiln time: above 1 kiln is faster).
    /usr/bin/python3 bench/pocl_nn_table.py OUT_DIR [KILN_GLOB TORCH_GLOB]"""
import glob
import json
import statistics
import sys


def rows(path):
    doc = json.load(open(path))
    return {(r["case"], r["dtype"], r["n"]): r["device_ms"]
            for r in doc.get("results", []) if isinstance(r, dict) and r.get("device_ms")}


d = sys.argv[1]
kg = sys.argv[2] if len(sys.argv) > 2 else "kiln-*-nn.json"
tg = sys.argv[3] if len(sys.argv) > 3 else "torch-*-nn.json"
K = [rows(p) for p in sorted(glob.glob(f"{d}/{kg}"))]
T = [rows(p) for p in sorted(glob.glob(f"{d}/{tg}"))]
print("| case | dtype | n | kiln ms | PyTorch CPU ms | PyTorch / kiln |")
print("|---|---|---|---|---|---|")
for k in sorted(set().union(*K) & set().union(*T)):
    km = statistics.median([x[k] for x in K if k in x])
    tm = statistics.median([x[k] for x in T if k in x])
    print(f"| {k[0]} | {k[1]} | 2^{k[2].bit_length() - 1} | {km:.4g} | {tm:.4g} | {tm / km:.2f}x |")
