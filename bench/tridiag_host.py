#!/usr/bin/env python3
"""Where the host's MRRR spends an index range's time (docs/linalg.md, "The tridiagonal stage
on the device"): times LAPACKE_dstemr for eigenpairs IL..IU of a random symmetric tridiagonal
of order N against LAPACKE_dstebz's bisection for the same eigenvalues, and dstemr over all
of them, one host thread each, through the system's liblapacke.

    python3 bench/tridiag_host.py [N] [IL] [IU]      (default 4096 1 256)

The tridiagonal is that of a GOE matrix after Householder reduction (Dumitriu and Edelman:
d_i ~ N(0, 2), e_i ~ chi with n - i degrees of freedom), the kind eigh's reduction gives for
random dense matrices. Medians of three runs, milliseconds.
"""
import ctypes
import statistics
import sys
import time

import numpy as np

lib = ctypes.CDLL("liblapacke.so.3")
COL_MAJOR = 102
P = ctypes.POINTER
dbl = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
i32 = np.ctypeslib.ndpointer(dtype=np.int32, flags="C_CONTIGUOUS")
lib.LAPACKE_dstemr.argtypes = [ctypes.c_int, ctypes.c_char, ctypes.c_char, ctypes.c_int, dbl, dbl,
                               ctypes.c_double, ctypes.c_double, ctypes.c_int, ctypes.c_int,
                               P(ctypes.c_int), dbl, dbl, ctypes.c_int, ctypes.c_int, i32,
                               P(ctypes.c_int)]
lib.LAPACKE_dstebz.argtypes = [ctypes.c_char, ctypes.c_char, ctypes.c_int, ctypes.c_double,
                               ctypes.c_double, ctypes.c_int, ctypes.c_int, ctypes.c_double, dbl,
                               dbl, P(ctypes.c_int), P(ctypes.c_int), dbl, i32, i32]


def stemr(d, e, il, iu):
    n, m = len(d), iu - il + 1
    dc, ec = d.copy(), np.append(e, 0.0)
    w, z = np.zeros(n), np.zeros(n * m)
    supp = np.zeros(2 * m, dtype=np.int32)
    found, tryrac = ctypes.c_int(0), ctypes.c_int(1)
    rng = b"A" if (il, iu) == (1, n) else b"I"
    info = lib.LAPACKE_dstemr(COL_MAJOR, b"V", rng, n, dc, ec, 0.0, 0.0, il, iu,
                              ctypes.byref(found), w, z, n, m, supp, ctypes.byref(tryrac))
    assert info == 0 and found.value == m, (info, found.value)


def stebz(d, e, il, iu):
    n = len(d)
    w = np.zeros(n)
    iblock, isplit = np.zeros(n, dtype=np.int32), np.zeros(n, dtype=np.int32)
    m, nsplit = ctypes.c_int(0), ctypes.c_int(0)
    info = lib.LAPACKE_dstebz(b"I", b"E", n, 0.0, 0.0, il, iu, 0.0, d, e.copy(),
                              ctypes.byref(m), ctypes.byref(nsplit), w, iblock, isplit)
    assert info == 0 and m.value == iu - il + 1, (info, m.value)


def ms(f, *args):
    t = []
    for _ in range(3):
        t0 = time.perf_counter()
        f(*args)
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
    il = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    iu = int(sys.argv[3]) if len(sys.argv) > 3 else 256
    rng = np.random.default_rng(1)
    d = rng.standard_normal(n) * np.sqrt(2.0)
    e = np.sqrt(rng.chisquare(np.arange(n - 1, 0, -1)))
    print(f"order {n}, eigenpairs {il}..{iu}: dstemr {ms(stemr, d, e, il, iu):.1f} ms, "
          f"dstebz (values only) {ms(stebz, d, e, il, iu):.1f} ms; "
          f"dstemr of all {n}: {ms(stemr, d, e, 1, n):.1f} ms")


if __name__ == "__main__":
    main()
