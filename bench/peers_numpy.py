#!/usr/bin/env python3
"""NumPy (host) and PyOpenCL (the same OpenCL device) timed for `kiln bench` cases, written as
`kiln bench --json` documents so that a table generator can put them next to kiln's rows.

Usage: bench/peers_numpy.py --sizes 2^22,2^24 --dtype f32,f64 [--filter copy.,scan.]
                            --numpy-out FILE.json [--pyopencl-out FILE.json]

Run with Debian's python3 (/usr/bin/python3: python3-numpy, python3-pyopencl). The shapes are
kiln bench's (tools/bench_cases.c, bench/peers.py); `device_ms` is the median wall time of one
call (NumPy has no device; PyOpenCL's calls end with queue.finish()). Used by
bench/pocl_issue21.sh; bench/peers.py prints the older GB/s table.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (the case definitions and the timing loop)

DTYPES = {"f32": np.float32, "f64": np.float64}


def xorshift_rows(rows):
    """index.gather_rows' indices: tools/bench_cases.c's xorshift64 sequence modulo rows."""
    x = 88172645463325252
    out = np.empty(rows, np.int64)
    mask = (1 << 64) - 1
    for i in range(rows):
        x ^= (x << 13) & mask
        x ^= x >> 7
        x ^= (x << 17) & mask
        out[i] = x % rows
    return out


def extra_numpy_cases(n, dtype):
    """Cases bench/peers.py does not have, in kiln bench's shapes."""
    rng = np.random.default_rng(1)
    a = rng.uniform(-2, 2, n).astype(dtype)
    b = rng.uniform(-2, 2, n).astype(dtype)
    out = np.empty_like(a)
    mask = rng.uniform(0, 1, n) < 0.5
    inner = min(n, 1024)
    rows_out = np.empty(n // inner, dtype)
    cols_out = np.empty(n // inner, dtype)
    gcols = min(n, 64)
    table = a.reshape(n // gcols, gcols)
    idx = xorshift_rows(n // gcols)
    gout = np.empty_like(table)
    cdt = np.complex64 if dtype == np.float32 else np.complex128
    z = (a[:n].astype(np.float64) + 1j * b[:n]).astype(cdt)
    return {
        "binary.mul": lambda: np.multiply(a, b, out=out),
        # np.where has no out=: it allocates its result, as users call it
        "binary.where": lambda: np.where(mask, a, b),
        "reduce.sum_rows": lambda: a.reshape(n // inner, inner).sum(axis=1, out=rows_out),
        "reduce.sum_cols": lambda: a.reshape(inner, n // inner).sum(axis=0, out=cols_out),
        "index.gather_rows": lambda: np.take(table, idx, axis=0, out=gout),
        # pocketfft computes in double whatever the input precision (NumPy 1.x)
        "fft.c2c": lambda: np.fft.fft(z),
    }


def extra_pyopencl_cases(ctx, queue, n, dtype):
    import pyopencl.array as cla
    import pyopencl.elementwise as clelem
    import pyopencl.scan as clscan
    ctype = "float" if dtype == np.float32 else "double"
    rng = np.random.default_rng(1)
    a = cla.to_device(queue, rng.uniform(-2, 2, n).astype(dtype))
    b = cla.to_device(queue, rng.uniform(-2, 2, n).astype(dtype))
    out = cla.empty_like(a)
    mul = clelem.ElementwiseKernel(ctx, f"{ctype} *x, {ctype} *z, {ctype} *y", "y[i] = x[i] * z[i]")
    out_i32 = cla.empty(queue, n, np.int32)
    cast = clelem.ElementwiseKernel(ctx, f"{ctype} *x, int *y", "y[i] = (int)x[i]")
    scan = clscan.InclusiveScanKernel(ctx, dtype, "a + b", neutral="0")

    def sync(f):
        def run():
            f()
            queue.finish()
        return run
    return {
        "binary.mul": sync(lambda: mul(a, b, out)),
        "cast.to_i32": sync(lambda: cast(a, out_i32)),
        # pyopencl.scan's inclusive scan, the flat case only
        "scan.cumsum_all": sync(lambda: scan(a, out)),
    }


def doc_for(device, rows):
    return {"device": device, "results": rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="2^22")
    ap.add_argument("--dtype", default="f32,f64")
    ap.add_argument("--filter", default=None)
    ap.add_argument("--numpy-out", required=True)
    ap.add_argument("--pyopencl-out", default=None)
    ap.add_argument("--reps", type=int, default=9)
    args = ap.parse_args()
    sizes = [peers.parse_size(s) for s in args.sizes.split(",")]
    dtypes = args.dtype.split(",")
    want = (lambda c: True) if not args.filter else \
        (lambda c: any(f in c for f in args.filter.split(",")))

    ctx = queue = None
    if args.pyopencl_out:
        ctx, queue = peers.pyopencl_setup()
    np_rows, cl_rows = [], []
    for dname in dtypes:
        dtype = DTYPES[dname]
        for n in sizes:
            cases = dict(peers.numpy_cases(n, dtype))
            cases.update(extra_numpy_cases(n, dtype))
            for case in sorted(cases):
                if want(case):
                    t = peers.median_time(cases[case], reps=args.reps)
                    np_rows.append({"case": case, "dtype": dname, "n": n, "device_ms": t * 1e3,
                                    "wall_ms": t * 1e3})
            if ctx is None:
                continue
            pc = dict(peers.pyopencl_cases(ctx, queue, n, dtype))
            pc.update(extra_pyopencl_cases(ctx, queue, n, dtype))
            for case in sorted(pc):
                if want(case):
                    t = peers.median_time(pc[case], reps=args.reps)
                    cl_rows.append({"case": case, "dtype": dname, "n": n, "device_ms": t * 1e3,
                                    "wall_ms": t * 1e3})
            del pc
    with open(args.numpy_out, "w") as f:
        json.dump(doc_for({"name": "numpy " + np.__version__ + " (host, one thread)"}, np_rows), f,
                  indent=1)
    if args.pyopencl_out:
        with open(args.pyopencl_out, "w") as f:
            name = queue.device.name if queue else None
            json.dump(doc_for({"name": name}, cl_rows), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
