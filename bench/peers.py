#!/usr/bin/env python3
"""Peers in the same run: kiln next to NumPy (host), PyOpenCL on the same OpenCL device,
and a C/OpenMP STREAM loop (the host memory-bandwidth limit), for the same ops and sizes.

Usage: bench/peers.py --build BUILD_DIR [--sizes 2^10,2^14,...] [--dtype f32] [--out FILE.json]
                      [--filter copy.,random.] [--linalg-sizes '']

Run with Debian's python3 (/usr/bin/python3), which has python3-numpy and python3-pyopencl
(`scripts/install-deps.sh --bench` installs them). Prints a markdown table of GB/s and ratios
and writes everything it measured to --out. All timings are medians.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

try:
    import pyopencl as cl
    import pyopencl.array as cla
    import pyopencl.elementwise as clelem
    import pyopencl.reduction as clred
except ImportError:  # the table then simply has no PyOpenCL column
    cl = None

# (case name as in `kiln bench`, bytes moved per element in units of the element size, or
# bytes(n, esz) as tools/bench_sort.c counts them)
CASES = [
    ("copy.kiln_copy", 2), ("unary.neg", 2), ("unary.exp", 2), ("binary.add", 3),
    ("binary.add_row_bcast", 2), ("binary.add_col_bcast", 2), ("binary.mul_scalar", 2),
    ("reduce.sum_all", 1),
    ("sort.sort", 2), ("sort.argsort", lambda n, esz: n * (esz + 8)), ("sort.sort_rows", 2),
    ("sort.topk", 1), ("sort.topk_rows", 1), ("sort.searchsorted", lambda n, esz: n * (esz + 8)),
    ("scan.cumsum_rows", 2), ("scan.cumsum_cols", 2), ("scan.cumsum_all", 2),
    ("cast.to_i32", lambda n, esz: n * (esz + 4)), ("layout.transpose", 2), ("random.normal", 1),
]


def topk(a, k, axis=-1):
    """The k largest along axis, sorted largest first (torch.topk), by argpartition."""
    part = np.take_along_axis(a, np.argpartition(a, -k, axis=axis)[..., -k:], axis)
    return -np.sort(-part, axis=axis)


# Dense linear algebra next to NumPy/LAPACK on the host, timed (ms): n is the element count of
# the square matrix as in `kiln bench` (--linalg-sizes 2^20 is 1024 x 1024).
LINALG_CASES = ["linalg.lu", "linalg.cholesky", "linalg.solve", "linalg.inv", "linalg.qr",
                "linalg.eigh", "linalg.svd"]


def numpy_linalg_case(case, n, dtype):
    d = max(int(n ** 0.5), 1)
    while (d + 1) * (d + 1) <= n:
        d += 1
    while d * d > n:
        d -= 1
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (d, d)).astype(dtype)
    sym = ((a + a.T) * 0.5).astype(dtype)
    spd = (sym + (2.0 * d + 1.0) * np.eye(d)).astype(dtype)
    b = rng.uniform(-1, 1, (d, 16)).astype(dtype)
    return {
        # NumPy has no LU factor of its own: solve with one right-hand side is getrf + getrs
        "linalg.lu": lambda: np.linalg.solve(a, b[:, :1]),
        "linalg.cholesky": lambda: np.linalg.cholesky(spd),
        "linalg.solve": lambda: np.linalg.solve(a, b),
        "linalg.inv": lambda: np.linalg.inv(a),
        "linalg.qr": lambda: np.linalg.qr(a),
        "linalg.eigh": lambda: np.linalg.eigh(sym),
        "linalg.svd": lambda: np.linalg.svd(a, full_matrices=False),
    }[case]


def parse_size(s):
    if s.startswith("2^"):
        return 1 << int(s[2:])
    return int(s)


def median_time(fn, reps=9, min_time=0.2):
    fn()  # warm-up (and PyOpenCL's kernel build)
    times = []
    start = time.perf_counter()
    while len(times) < reps or (time.perf_counter() - start < min_time and len(times) < 200):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def numpy_cases(n, dtype):
    rng = np.random.default_rng(1)
    a = rng.uniform(-2, 2, n).astype(dtype)
    b = rng.uniform(-2, 2, n).astype(dtype)
    out = np.empty_like(a)
    cols = min(n, 1024)
    a2 = a.reshape(n // cols, cols)
    row = b[:cols].copy()
    col = b[:n // cols].copy().reshape(n // cols, 1)
    out2 = out.reshape(n // cols, cols)
    len8 = min(n, 8192)
    a8 = a.reshape(n // len8, len8)
    s16 = a[:max(n // 16, 1)].copy()
    out_i32 = np.empty(n, np.int32)
    d = 1
    while (d * 2) * (d * 2) <= n:
        d *= 2
    at = a.reshape(d, n // d)
    outt = np.empty((n // d, d), dtype)
    gen = np.random.default_rng(2)
    return {
        "copy.kiln_copy": lambda: np.copyto(out, a),
        "unary.neg": lambda: np.negative(a, out=out),
        "unary.exp": lambda: np.exp(a, out=out),
        "binary.add": lambda: np.add(a, b, out=out),
        "binary.add_row_bcast": lambda: np.add(a2, row, out=out2),
        "binary.add_col_bcast": lambda: np.add(a2, col, out=out2),
        "binary.mul_scalar": lambda: np.multiply(a, dtype(3), out=out),
        "reduce.sum_all": lambda: a.sum(),
        # sort family (tools/bench_sort.c): rows of 8192, k = 100 and 16, queries into n / 16
        "sort.sort": lambda: np.sort(a),
        "sort.argsort": lambda: np.argsort(a, kind="stable"),
        "sort.sort_rows": lambda: np.sort(a8, axis=-1),
        "sort.topk": lambda: topk(a, min(n, 100)),
        "sort.topk_rows": lambda: topk(a8, min(a8.shape[1], 16)),
        "sort.searchsorted": lambda: np.searchsorted(np.sort(s16), b),
        # scans as tools/bench_cases.c shapes them: [n/1024, 1024] along axis 1, [1024,
        # n/1024] along axis 0, and all of n
        "scan.cumsum_rows": lambda: np.cumsum(a2, axis=1, out=out2),
        "scan.cumsum_cols": lambda: np.cumsum(a.reshape(cols, n // cols), axis=0,
                                              out=out.reshape(cols, n // cols)),
        "scan.cumsum_all": lambda: np.cumsum(a, out=out),
        # kiln bench's shapes: to_i32 (truncating), a d x n/d transpose, normals from NumPy's
        # default generator (single-threaded, its ziggurat)
        "cast.to_i32": lambda: np.copyto(out_i32, a, casting="unsafe"),
        "layout.transpose": lambda: np.copyto(outt, at.T),
        "random.normal": lambda: gen.standard_normal(out=out, dtype=dtype),
    }


def pyopencl_setup():
    if cl is None:
        return None, None
    sel = os.environ.get("KILN_DEVICE", "")
    devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    dev = None
    for d in devices:
        if sel and sel.lower() in d.name.lower():
            dev = d
    if dev is None:
        gpus = [d for d in devices if d.type & cl.device_type.GPU]
        dev = (gpus or devices)[0]
    ctx = cl.Context([dev])
    return ctx, cl.CommandQueue(ctx)


def pyopencl_cases(ctx, queue, n, dtype):
    ctype = "float" if dtype == np.float32 else "double"
    rng = np.random.default_rng(1)
    a = cla.to_device(queue, rng.uniform(-2, 2, n).astype(dtype))
    b = cla.to_device(queue, rng.uniform(-2, 2, n).astype(dtype))
    out = cla.empty_like(a)
    cols = min(n, 1024)
    row = cla.to_device(queue, rng.uniform(-2, 2, cols).astype(dtype))
    neg = clelem.ElementwiseKernel(ctx, f"{ctype} *x, {ctype} *y", "y[i] = -x[i]")
    exp = clelem.ElementwiseKernel(ctx, f"{ctype} *x, {ctype} *y", "y[i] = exp(x[i])")
    add = clelem.ElementwiseKernel(ctx, f"{ctype} *x, {ctype} *z, {ctype} *y", "y[i] = x[i] + z[i]")
    addr = clelem.ElementwiseKernel(ctx, f"{ctype} *x, {ctype} *r, {ctype} *y, long c",
                                    "y[i] = x[i] + r[i % c]")
    mul = clelem.ElementwiseKernel(ctx, f"{ctype} *x, {ctype} *y", "y[i] = 3 * x[i]")

    def sync(f):
        def run():
            f()
            queue.finish()
        return run

    return {
        "copy.kiln_copy": sync(lambda: cl.enqueue_copy(queue, out.data, a.data)),
        "unary.neg": sync(lambda: neg(a, out)),
        "unary.exp": sync(lambda: exp(a, out)),
        "binary.add": sync(lambda: add(a, b, out)),
        "binary.add_row_bcast": sync(lambda: addr(a, row, out, np.int64(cols))),
        "binary.mul_scalar": sync(lambda: mul(a, out)),
        "reduce.sum_all": sync(lambda: cla.sum(a, queue=queue).get()),
    }


def kiln_results(build, sizes, dtype, cases):
    cmd = [os.path.join(build, "tools", "kiln"), "bench", "--json", "--no-startup",
           "--dtype", dtype, "--sizes", ",".join(str(s) for s in sizes),
           "--filter", ",".join(c for c, _ in cases)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    return doc, {(r["case"], r["n"]): r for r in doc["results"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--sizes", default="2^10,2^14,2^18,2^22,2^26")
    ap.add_argument("--dtype", default="f32", choices=["f32", "f64"])
    ap.add_argument("--out", default=None)
    ap.add_argument("--linalg-sizes", default="2^16,2^20",
                    help="element counts of the square matrices of the linalg table ('' skips it)")
    ap.add_argument("--filter", default=None,
                    help="only cases whose name contains one of these (comma-separated)")
    args = ap.parse_args()
    cases = [c for c in CASES
             if not args.filter or any(f in c[0] for f in args.filter.split(","))]
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    dtype = np.float32 if args.dtype == "f32" else np.float64
    esz = np.dtype(dtype).itemsize

    kdoc, kres = kiln_results(args.build, sizes, args.dtype, cases)
    ctx, queue = pyopencl_setup()
    stream = None
    stream_exe = os.path.join(args.build, "bench", "stream_omp")
    if os.path.exists(stream_exe):
        out = subprocess.run([stream_exe, str(max(sizes))], check=True, capture_output=True,
                             text=True).stdout
        stream = json.loads(out)

    rows = []
    for case, mult in cases:
        for n in sizes:
            row = {"case": case, "n": n, "dtype": args.dtype}
            nbytes = mult(n, esz) if callable(mult) else mult * n * esz
            r = kres.get((case, n))
            if r:
                row["kiln_gbps"] = r["gbps"]
                row["kiln_copy_gbps"] = r["copy_gbps"]
            row["numpy_gbps"] = nbytes / median_time(numpy_cases(n, dtype)[case]) * 1e-9
            pcases = pyopencl_cases(ctx, queue, n, dtype) if ctx is not None else {}
            if case in pcases:
                row["pyopencl_gbps"] = nbytes / median_time(pcases[case]) * 1e-9
            rows.append(row)

    la_rows = []
    la_sizes = [parse_size(s) for s in args.linalg_sizes.split(",") if s]
    if la_sizes:
        cmd = [os.path.join(args.build, "tools", "kiln"), "bench", "--json", "--no-startup",
               "--dtype", args.dtype, "--filter", "linalg.",
               "--sizes", ",".join(str(s) for s in la_sizes)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        lres = {(r["case"], r["n"]): r for r in json.loads(out)["results"]}
        for case in LINALG_CASES:
            for n in la_sizes:
                r = lres.get((case, n))
                row = {"case": case, "n": n, "dtype": args.dtype,
                       "kiln_ms": r.get("wall_ms") if r else None,
                       "numpy_ms": median_time(numpy_linalg_case(case, n, dtype), reps=3,
                                               min_time=0) * 1e3}
                la_rows.append(row)

    doc = {"device": kdoc["device"], "kiln_version": kdoc["kiln_version"],
           "pyopencl_device": queue.device.name if queue else None, "stream_omp": stream,
           "rows": rows, "linalg_rows": la_rows}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)

    print(f"device: {doc['device']['name']} ({doc['device']['platform']}); dtype {args.dtype}; "
          "GB/s counts bytes read + written; medians")
    if stream:
        print(f"host STREAM (OpenMP, {stream['threads']} threads, n={stream['n']}): " +
              ", ".join(f"{k} {v:.1f} GB/s" for k, v in stream["gbps"].items()))
    print()
    print("| case | n | kiln GB/s | copy GB/s (same device) | PyOpenCL GB/s | NumPy GB/s |"
          " kiln / PyOpenCL | kiln / NumPy |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        k = r.get("kiln_gbps")
        p = r.get("pyopencl_gbps")
        npy = r["numpy_gbps"]
        fmt = lambda v: f"{v:.2f}" if v is not None else "n/a"
        ratio = lambda a, b: f"{a / b:.2f}" if a and b else "n/a"
        print(f"| {r['case']} | {r['n']} | {fmt(k)} | {fmt(r.get('kiln_copy_gbps'))} | {fmt(p)} | "
              f"{npy:.2f} | {ratio(k, p)} | {ratio(k, npy)} |")
    if la_rows:
        print()
        print("| case | n | kiln ms (wall) | NumPy ms | NumPy / kiln |")
        print("|---|---|---|---|---|")
        for r in la_rows:
            k, npy = r["kiln_ms"], r["numpy_ms"]
            ks = f"{k:.3f}" if k is not None else "n/a"
            rs = f"{npy / k:.2f}" if k else "n/a"
            print(f"| {r['case']} | {r['n']} | {ks} | {npy:.3f} | {rs} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
