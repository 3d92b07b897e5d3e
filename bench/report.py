#!/usr/bin/env python3
"""Turns the measurements in docs/perf-data/ into docs/performance-data.md and PNG plots.

Inputs (any subset; each machine is a prefix such as `pocl` or `h200`):
  docs/perf-data/<machine>-bench.json   `kiln bench --json` output
  docs/perf-data/<machine>-peers.json   bench/peers.py --out output
Outputs:
  docs/performance-data.md              every table, generated (do not edit by hand)
  docs/img/<machine>-<family>.png       GB/s against size per case, with the copy line

Usage: bench/report.py [--data docs/perf-data] [--docs docs]
"""
import argparse
import collections
import glob
import json
import os
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def size_label(n):
    e = n.bit_length() - 1
    return f"2^{e}" if n == 1 << e else str(n)


def bench_tables(machine, doc):
    out = [f"## {machine}: `kiln bench` on {doc['device']['name']}",
           "", f"Platform {doc['device']['platform']}, driver {doc['device']['driver']}, "
           f"kiln {doc['kiln_version']}. Device time is the median of OpenCL profiling events; "
           "GB/s counts bytes read plus written; ratio is to the best plain copy kernel at the "
           "same size on the same device in the same run.", "",
           "| case | dtype | n | device ms | wall ms | spread | GB/s | GFLOP/s | copy GB/s | ratio |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    num = lambda v, f: "n/a" if v is None else format(v, f)
    for r in doc["results"]:
        ratio = r.get("ratio_to_copy")
        out.append(f"| {r['case']} | {r['dtype']} | {size_label(r['n'])} | {r['device_ms']:.4f} | "
                   f"{r['wall_ms']:.4f} | {r['spread_pct']:.1f}% | {num(r.get('gbps'), '.2f')} | "
                   f"{num(r.get('gflops'), '.1f')} | {num(r.get('copy_gbps'), '.2f')} | "
                   f"{'n/a' if not ratio or r.get('gbps') is None else format(100 * ratio, '.0f') + '%'} |")
    if "dispatch_us_per_op" in doc:
        out += ["", f"Dispatch overhead: {doc['dispatch_us_per_op']:.2f} us per op (chain of tiny "
                "adds, wall clock)."]
    fr = doc.get("first_result_ms")
    if fr:
        out += ["", "Time to first result of a new process (one exp and one cast, median of 5):", "",
                "| caches | ms |", "|---|---|"]
        out += [f"| {k} | {v:.1f} |" for k, v in fr.items()]
    return out


def peers_tables(machine, doc):
    out = [f"## {machine}: kiln next to peers", ""]
    st = doc.get("stream_omp")
    if st:
        out.append(f"Host STREAM (OpenMP, {st['threads']} threads, n={st['n']}): " +
                   ", ".join(f"{k} {v:.1f} GB/s" for k, v in st["gbps"].items()) + ".")
        out.append("")
    out += ["| case | n | kiln GB/s | PyOpenCL GB/s | NumPy GB/s | kiln / PyOpenCL | kiln / NumPy |",
            "|---|---|---|---|---|---|---|"]
    f = lambda v: "n/a" if v is None else f"{v:.2f}"
    ratio = lambda a, b: "n/a" if not a or not b else f"{a / b:.2f}"
    for r in doc["rows"]:
        k, p, n = r.get("kiln_gbps"), r.get("pyopencl_gbps"), r.get("numpy_gbps")
        out.append(f"| {r['case']} | {size_label(r['n'])} | {f(k)} | {f(p)} | {f(n)} | "
                   f"{ratio(k, p)} | {ratio(k, n)} |")
    return out


def plots(machine, doc, imgdir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    by_family = collections.defaultdict(lambda: collections.defaultdict(list))
    copy = collections.defaultdict(dict)
    for r in doc["results"]:
        if r.get("gbps") is None:
            continue
        fam = r["case"].split(".")[0]
        by_family[(fam, r["dtype"])][r["case"]].append((r["n"], r["gbps"]))
        copy[r["dtype"]][r["n"]] = r["copy_gbps"]
    written = []
    for (fam, dtype), cases in sorted(by_family.items()):
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for case, pts in sorted(cases.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=case)
        cp = sorted(copy[dtype].items())
        ax.plot([p[0] for p in cp], [p[1] for p in cp], "k--", label="best plain copy kernel")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("elements")
        ax.set_ylabel("GB/s (read + write)")
        ax.set_title(f"{machine} {doc['device']['name'][:40]}: {fam} {dtype}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        name = f"{machine}-{fam}-{dtype}.png"
        fig.savefig(os.path.join(imgdir, name), dpi=90)
        plt.close(fig)
        written.append(name)
    return written


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="docs/perf-data")
    ap.add_argument("--docs", default="docs")
    args = ap.parse_args()
    imgdir = os.path.join(args.docs, "img")
    os.makedirs(imgdir, exist_ok=True)
    lines = ["# Performance data (generated)", "",
             "Generated by `bench/report.py` from the JSON files in `docs/perf-data/`; "
             "`docs/performance.md` explains the figures and how to reproduce them.", ""]
    for path in sorted(glob.glob(os.path.join(args.data, "*-bench.json"))):
        machine = os.path.basename(path)[:-len("-bench.json")]
        doc = load(path)
        lines += bench_tables(machine, doc) + [""]
        for img in plots(machine, doc, imgdir):
            lines += [f"![{img}](img/{img})", ""]
        peers = os.path.join(args.data, f"{machine}-peers.json")
        if os.path.exists(peers):
            lines += peers_tables(machine, load(peers)) + [""]
    with open(os.path.join(args.docs, "performance-data.md"), "w") as f:
        f.write("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
