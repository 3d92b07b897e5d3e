#!/usr/bin/env python3
"""Turns the measurements in docs/perf-data/ into docs/performance-data.md and PNG plots.

Inputs (any subset; each machine is a prefix such as `pocl` or `h200`):
  docs/perf-data/<machine>-bench.json   `kiln bench --json` output
  docs/perf-data/<machine>-peers.json   bench/peers.py --out output
  docs/perf-data/<machine>-torch.json   bench/peers_torch.py --out output (PyTorch, same GPU)
Outputs:
  docs/performance-data.md              every table, generated (do not edit by hand)
  docs/img/<machine>-<family>-<dtype>.png
                                        GB/s against size per case, with the copy line
  docs/img/<machine>-torch-<family>-<dtype>.png
                                        kiln and PyTorch against size, and their ratio

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


def pyplot():
    """matplotlib.pyplot with the file-only back end, or None without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def matplotlib_ticker():
    import matplotlib.ticker
    return matplotlib.ticker


def plots(machine, doc, imgdir):
    plt = pyplot()
    if plt is None:
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

# kiln cases whose PyTorch peer is measured under another name: every GEMM route against
# cuBLAS, every FFT back end against cuFFT.
TORCH_PEER_OF = {"blas.gemm_clblast": "blas.gemm", "blas.gemm_kiln": "blas.gemm",
                 "fft.c2c_clfft": "fft.c2c", "fft.c2c_vkfft": "fft.c2c"}


def torch_pairs(kdoc, tdoc):
    """(kiln row, PyTorch row) for every kiln result that has a PyTorch peer, in kiln's order."""
    peer = {(r["case"], r["dtype"], r["n"]): r for r in tdoc["results"]}
    out = []
    for r in kdoc["results"]:
        t = peer.get((TORCH_PEER_OF.get(r["case"], r["case"]), r["dtype"], r["n"]))
        if t is not None:
            out.append((r, t))
    return out


def speed_ratio(k_ms, t_ms):
    """kiln's speed over PyTorch's for the same work: PyTorch's time / kiln's time."""
    return t_ms / k_ms if k_ms and t_ms and k_ms > 0 and t_ms > 0 else None


def throughput(r):
    """(value, unit): GB/s where kiln counts bytes, else GFLOP/s (GEMM)."""
    if r.get("gbps") is not None:
        return r["gbps"], "GB/s"
    if r.get("gflops") is not None:
        return r["gflops"], "GFLOP/s"
    return None, ""


def torch_tables(machine, kdoc, tdoc):
    dev, kdev = tdoc["device"], kdoc["device"]
    settings = tdoc.get("settings", {})
    out = [f"## {machine}: kiln next to PyTorch on the same GPU", "",
           f"PyTorch {tdoc['torch_version']} (CUDA {tdoc.get('cuda_version')}) on {dev['name']}"
           + (f", driver {dev['driver']}" if dev.get("driver") else "")
           + f"; kiln through {kdev['platform']} on {kdev['name']}, driver {kdev['driver']}. "
           "Both sides time the same cases with the same shapes, and count bytes and flops the "
           "same way (tools/bench_cases.c; bench/peers_torch.py). kiln's device time is the "
           "median of OpenCL profiling events; PyTorch's is the median of CUDA events, "
           f"{settings.get('timing', 'CUDA events')}. Wall times are the host clock around one "
           "call and its wait. **kiln / PyTorch** is kiln's speed over PyTorch's for the same "
           "work (PyTorch's time / kiln's time): above 1 kiln is faster. GEMM on the PyTorch "
           "side is cuBLAS with TF32 off "
           f"(float32 matmul precision: {settings.get('float32_matmul_precision')}); every kiln "
           "GEMM route is compared with it, and every kiln FFT back end with cuFFT. "
           "`copy.kiln_copy` is a buffer copy without kernel events in kiln, so its kiln "
           "device time is the wall time.", ""]
    if dev.get("name") != kdev.get("name"):
        out += [f"**Warning:** the two files name different devices ({kdev.get('name')} and "
                f"{dev.get('name')}).", ""]
    pairs = torch_pairs(kdoc, tdoc)
    num = lambda v, f: "n/a" if v is None else format(v, f)
    pct = lambda v: "n/a" if v is None else f"{100 * v:.0f}%"

    # Summary: the largest size of each case, f32 and f64 side by side.
    dtypes = sorted({k["dtype"] for k, _ in pairs})
    largest = {}
    for k, t in pairs:
        key = (k["case"], k["dtype"])
        if key not in largest or k["n"] > largest[key][0]["n"]:
            largest[key] = (k, t)
    cases = list(dict.fromkeys(k["case"] for k, _ in pairs))
    if cases:
        out += ["Largest size of each case (kiln, PyTorch, kiln / PyTorch; device times):", "",
                "| case | n | " + " | ".join(dtypes) + " |",
                "|---|---|" + "---|" * len(dtypes)]
        for c in cases:
            cells, n = [], None
            for d in dtypes:
                p = largest.get((c, d))
                if not p:
                    cells.append("n/a")
                    continue
                k, t = p
                n = k["n"]
                kv, unit = throughput(k)
                tv, _ = throughput(t)
                ratio = speed_ratio(k["device_ms"], t["device_ms"])
                cells.append(f"{num(kv, '.0f')} / {num(tv, '.0f')} {unit} = "
                             f"**{num(ratio, '.2f')}**")
            out.append(f"| {c} | {size_label(n)} | " + " | ".join(cells) + " |")
        out.append("")

    out += ["| case | PyTorch op | dtype | n | kiln ms | PyTorch ms | unit | kiln | PyTorch | "
            "kiln / PyTorch | kiln % of copy | PyTorch % of copy | kiln wall ms | "
            "PyTorch wall ms | kiln / PyTorch (wall) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for k, t in pairs:
        kv, unit = throughput(k)
        tv, _ = throughput(t)
        out.append(
            f"| {k['case']} | `{t.get('op', t['case'])}` | {k['dtype']} | {size_label(k['n'])} | "
            f"{k['device_ms']:.4f} | {t['device_ms']:.4f} | {unit} | {num(kv, '.2f')} | "
            f"{num(tv, '.2f')} | {num(speed_ratio(k['device_ms'], t['device_ms']), '.2f')} | "
            f"{pct(k.get('ratio_to_copy'))} | {pct(t.get('ratio_to_copy'))} | "
            f"{k['wall_ms']:.4f} | {t['wall_ms']:.4f} | "
            f"{num(speed_ratio(k['wall_ms'], t['wall_ms']), '.2f')} |")

    # The two copy references: what each platform's plain copy reaches at the same sizes.
    kcopy, tcopy = {}, {}
    for r in kdoc["results"]:
        if r.get("copy_gbps"):
            kcopy[(r["dtype"], r["n"])] = r["copy_gbps"]
    for r in tdoc["results"]:
        if r.get("copy_gbps"):
            tcopy[(r["dtype"], r["n"])] = r["copy_gbps"]
    both = sorted(set(kcopy) & set(tcopy))
    if both:
        out += ["", "Copy bandwidth on each side (read + write): kiln's reference is the best of "
                "ten plain OpenCL copy kernels, PyTorch's is `out.copy_(x)`.", "",
                "| dtype | n | OpenCL copy kernel GB/s | PyTorch copy GB/s | OpenCL / PyTorch |",
                "|---|---|---|---|---|"]
        for d, n in both:
            out.append(f"| {d} | {size_label(n)} | {kcopy[(d, n)]:.2f} | {tcopy[(d, n)]:.2f} | "
                       f"{kcopy[(d, n)] / tcopy[(d, n)]:.2f} |")
    kd, td = kdoc.get("dispatch_us_per_op"), tdoc.get("dispatch_us_per_op")
    if kd is not None and td is not None and kd > 0 and td > 0:
        out += ["", f"Dispatch overhead (chain of tiny adds, wall clock): kiln {kd:.2f} us per op, "
                f"PyTorch {td:.2f} us per op; kiln / PyTorch (speed) {td / kd:.2f}."]
    fr = tdoc.get("first_result_ms")
    if fr:
        out += ["", "PyTorch's time to first result of a new process (one exp and one cast, "
                "median of 5; kiln's is in the `kiln bench` section above):", "",
                "| what | ms |", "|---|---|"]
        out += [f"| {k} | {v:.1f} |" for k, v in fr.items()]
    if tdoc.get("skipped"):
        out += ["", "PyTorch points that failed: " + "; ".join(
            f"{s['case']} {s['dtype']} n={size_label(s['n'])} ({s['error']})"
            for s in tdoc["skipped"]) + "."]
    return out


def torch_plots(machine, kdoc, tdoc, imgdir):
    """Per family and dtype: kiln (solid) and PyTorch (dashed) against size, and the ratio."""
    plt = pyplot()
    if plt is None:
        return []
    groups = collections.defaultdict(list)
    for k, t in torch_pairs(kdoc, tdoc):
        groups[(k["case"].split(".")[0], k["dtype"])].append((k, t))
    written = []
    for (fam, dtype), pairs in sorted(groups.items()):
        flops = all(k.get("gbps") is None for k, _ in pairs)
        key = "gflops" if flops else "gbps"
        fig, (ax, rx) = plt.subplots(2, 1, figsize=(7, 6.4), sharex=True,
                                     gridspec_kw={"height_ratios": [3, 2]})
        kcases = list(dict.fromkeys(k["case"] for k, _ in pairs))
        colors = {c: f"C{i % 10}" for i, c in enumerate(kcases)}
        torch_drawn = set()
        for c in kcases:
            pts = sorted((k["n"], k, t) for k, t in pairs if k["case"] == c)
            kp = [(n, k[key]) for n, k, _ in pts if k.get(key) is not None]
            if kp:
                ax.plot([p[0] for p in kp], [p[1] for p in kp], marker="o", color=colors[c],
                        label=f"kiln {c}")
            tcase = TORCH_PEER_OF.get(c, c)
            tp = [(n, t[key]) for n, _, t in pts if t.get(key) is not None]
            if tp and tcase not in torch_drawn:
                torch_drawn.add(tcase)
                ax.plot([p[0] for p in tp], [p[1] for p in tp], marker="x", linestyle="--",
                        color=colors[c], label=f"PyTorch {tcase}")
            rp = [(n, speed_ratio(k["device_ms"], t["device_ms"])) for n, k, t in pts]
            rp = [p for p in rp if p[1] is not None]
            if rp:
                rx.plot([p[0] for p in rp], [p[1] for p in rp], marker="o", color=colors[c],
                        label=c)
        rx.axhline(1.0, color="k", linewidth=0.8)
        rx.set_yscale("log")
        rx.yaxis.set_major_locator(matplotlib_ticker().FixedLocator(
            [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100]))
        rx.yaxis.set_major_formatter(matplotlib_ticker().FormatStrFormatter("%g"))
        rx.yaxis.set_minor_formatter(matplotlib_ticker().NullFormatter())
        lo, hi = rx.get_ylim()
        rx.set_ylim(min(lo, 0.8), max(hi, 1.25))
        ax.set_xscale("log", base=2)
        ax.set_ylabel("GFLOP/s" if flops else "GB/s (read + write)")
        ax.set_title(f"{machine} {kdoc['device']['name'][:40]}: {fam} {dtype}, kiln and PyTorch")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        rx.set_xlabel("elements" if fam != "fft" else "complex points")
        rx.set_ylabel("kiln / PyTorch (speed)")
        rx.grid(True, alpha=0.3, which="both")
        fig.tight_layout()
        name = f"{machine}-torch-{fam}-{dtype}.png"
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
        torch_path = os.path.join(args.data, f"{machine}-torch.json")
        if os.path.exists(torch_path):
            tdoc = load(torch_path)
            lines += torch_tables(machine, doc, tdoc) + [""]
            for img in torch_plots(machine, doc, tdoc, imgdir):
                lines += [f"![{img}](img/{img})", ""]
    with open(os.path.join(args.docs, "performance-data.md"), "w") as f:
        f.write("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
