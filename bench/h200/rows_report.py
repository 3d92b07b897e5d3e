#!/usr/bin/env python3
"""Tables from bench/h200/rows.sh's results: python3 bench/h200/rows_report.py DIR [TORCH]

DIR holds bench-<label>.json (kiln bench --json) and torch.json (bench/peers_torch.py), or
TORCH names another run's torch.json.
Prints, per case and dtype, kiln's device ms and % of copy for each label, PyTorch's ms and
the ratio PyTorch time / kiln time."""
import glob
import json
import os
import sys


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    torch = {}
    tp = sys.argv[2] if len(sys.argv) > 2 else os.path.join(d, "torch.json")
    if os.path.exists(tp):
        for r in json.load(open(tp)).get("results", []):
            torch[(r["case"], r["dtype"], r["n"])] = r["device_ms"]
    runs = {}
    for p in sorted(glob.glob(os.path.join(d, "bench-*.json"))):
        label = os.path.basename(p)[6:-5]
        try:
            runs[label] = json.load(open(p)).get("results", [])
        except (ValueError, OSError) as e:
            print("%s: %s" % (label, e))
    keys = []
    for res in runs.values():
        for r in res:
            k = (r["case"], r["dtype"], r["n"])
            if k not in keys:
                keys.append(k)
    print("| case | dtype | n | variant | kiln ms | % copy | PyTorch ms | PyTorch / kiln |")
    print("|---|---|---|---|---|---|---|---|")
    for k in sorted(keys):
        for label, res in runs.items():
            for r in res:
                if (r["case"], r["dtype"], r["n"]) != k:
                    continue
                t = torch.get(k)
                ratio = "%.2fx" % (t / r["device_ms"]) if t else "-"
                pct = "%.0f%%" % (100 * r["ratio_to_copy"]) if r.get("ratio_to_copy") else "-"
                print("| %s | %s | 2^%d | %s | %.4g | %s | %s | %s |" % (
                    k[0], k[1], k[2].bit_length() - 1, label, r["device_ms"], pct,
                    "%.4g" % t if t else "-", ratio))


if __name__ == "__main__":
    main()
