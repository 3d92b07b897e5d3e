#!/usr/bin/env python3
"""Turns `kiln tune --json` outputs into the tables and plots of docs/tuning.md.

Inputs: docs/perf-data/<machine>-tune-<family>.json (any machines, any families), each the
stdout of `kiln tune --family <family> --json ...` on that machine, and optionally
docs/perf-data/<machine>-bench-{tuned,untuned}.json, `kiln bench --json` with and without
the tuning file (bench/run-tune.sh makes all of them).
Outputs:
  docs/tuning-data.md                    every table, generated (do not edit by hand)
  docs/img/<machine>-tune-<family>.png   GB/s against size: defaults, tuned, plain copy

Usage: bench/tune_report.py [--data docs/perf-data] [--docs docs]
"""
import argparse
import collections
import glob
import json
import os
import re
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def gbps(r, key):
    ns = r[key]
    return r["bytes"] / ns if ns else 0.0


def tables(machine, family, doc):
    d = doc["device"]
    out = [f"### {machine}: {family} on {d['name']}", "",
           f"Platform {d['platform']}, driver {d['driver']}, kiln {doc['kiln_version']}, "
           f"{doc['settings']['reps']} timed runs per candidate (median). GB/s counts the bytes "
           "the op must read and write; copy is the best plain copy kernel moving the same bytes "
           "on the same device in the same run.", "",
           "| dtype | bucket | shape | default ms | tuned ms | speedup | default GB/s | "
           "tuned GB/s | copy GB/s | tuned / copy | candidates (failed) | tuned parameters |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["results"]:
        if r["status"] != "KILN_OK":
            out.append(f"| {r['dtype']} | {r['bucket']} | {r['shape']} | failed: {r['status']} "
                       "| | | | | | | | |")
            continue
        same = r["tuned_params"] == r["default_params"]
        ratio = gbps(r, "tuned_ns") / r["copy_gbps"] if r["copy_gbps"] > 0 else 0
        out.append(
            f"| {r['dtype']} | {r['bucket']} | {r['shape']} | {r['default_ns'] / 1e6:.4f} | "
            f"{r['tuned_ns'] / 1e6:.4f} | {r['speedup']:.2f}x | {gbps(r, 'default_ns'):.2f} | "
            f"{gbps(r, 'tuned_ns'):.2f} | {r['copy_gbps']:.2f} | {100 * ratio:.0f}% | "
            f"{r['candidates']} ({r['failed']}) | "
            f"{'(defaults)' if same else '`' + r['tuned_params'] + '`'} |")
    defaults = sorted({r["default_params"] for r in doc["results"]})
    out += ["", "Defaults: " + "; ".join(f"`{p}`" for p in defaults) + "."]
    return out


def plot(machine, family, doc, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = collections.defaultdict(list)
    for r in doc["results"]:
        if r["status"] == "KILN_OK":
            series[(r["dtype"], r["layout"])].append(r)
    if not series:
        return False
    order = {"flat": 0, "full": 1, "row": 2, "col": 3}
    keys = sorted(series, key=lambda k: (k[0], order.get(k[1], 9)))
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 3.6), squeeze=False)
    for ax, key in zip(axes[0], keys):
        rs = sorted(series[key], key=lambda r: r["elements"])
        x = [r["elements"] for r in rs]
        ax.plot(x, [gbps(r, "default_ns") for r in rs], "o-", label="defaults")
        ax.plot(x, [gbps(r, "tuned_ns") for r in rs], "s-", label="tuned")
        ax.plot(x, [r["copy_gbps"] for r in rs], "k--", label="plain copy")
        ax.set_xscale("log", base=2)
        ax.set_title(f"{family} {key[0]} {key[1]}")
        ax.set_xlabel("elements")
        ax.set_ylabel("GB/s")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"{machine}: {doc['device']['name']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def bench_compare(machine, tuned, untuned):
    d = tuned["device"]
    out = [f"### {machine}: `kiln bench` with and without the tuning file", "",
           f"{d['name']}, driver {d['driver']}. Same cases, same process settings; untuned is "
           "`KILN_TUNE=off`, tuned is `KILN_TUNE=cached` with the file written above; per case the "
           f"best of {tuned.get('rounds', 1)} alternating runs of each. GB/s counts bytes read plus "
           "written (reductions: read); copy is the best plain copy kernel at the same size "
           "measured in the same run.", "",
           "| case | dtype | n | untuned GB/s | tuned GB/s | speedup | copy GB/s (tuned run) | "
           "tuned / copy |", "|---|---|---|---|---|---|---|---|"]
    base = {(r["case"], r["dtype"], r["n"]): r for r in untuned["results"]}
    for r in tuned["results"]:
        u = base.get((r["case"], r["dtype"], r["n"]))
        if not u:
            continue
        e = r["n"].bit_length() - 1
        n = f"2^{e}" if r["n"] == 1 << e else str(r["n"])
        sp = r["gbps"] / u["gbps"] if u["gbps"] else 0
        out.append(f"| {r['case']} | {r['dtype']} | {n} | {u['gbps']:.2f} | {r['gbps']:.2f} | "
                   f"{sp:.2f}x | {r['copy_gbps']:.2f} | {100 * r['ratio_to_copy']:.0f}% |")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="docs/perf-data")
    ap.add_argument("--docs", default="docs")
    a = ap.parse_args()
    files = sorted(glob.glob(os.path.join(a.data, "*-tune-*.json")))
    if not files:
        sys.exit(f"no *-tune-*.json in {a.data}")
    os.makedirs(os.path.join(a.docs, "img"), exist_ok=True)
    out = ["# Tuning measurements (generated)", "",
           "Generated by `bench/tune_report.py` from `docs/perf-data/*-tune-*.json`; "
           "docs/tuning.md explains the method and reads the numbers. Do not edit by hand.", ""]
    for path in files:
        m = re.match(r"(.+)-tune-(.+)\.json$", os.path.basename(path))
        machine, family = m.group(1), m.group(2)
        doc = load(path)
        out += tables(machine, family, doc)
        png = f"{machine}-tune-{family}.png"
        if plot(machine, family, doc, os.path.join(a.docs, "img", png)):
            out += ["", f"![{machine} {family}](img/{png})"]
        out.append("")
    for tuned_path in sorted(glob.glob(os.path.join(a.data, "*-bench-tuned.json"))):
        machine = os.path.basename(tuned_path)[:-len("-bench-tuned.json")]
        untuned_path = os.path.join(a.data, f"{machine}-bench-untuned.json")
        if os.path.exists(untuned_path):
            out += bench_compare(machine, load(tuned_path), load(untuned_path)) + [""]
    with open(os.path.join(a.docs, "tuning-data.md"), "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    main()
