#!/usr/bin/env python3
"""cl_kernels/gemm_cpu.cl itself under PyOpenCL on PoCL, over block shapes: C = A B (op(B) as
stored, the broadcast form) or C = A B^T (--dot, the dot form) of N x N matrices, best of 3
launches, GFLOP/s and the relative error against NumPy.
    /usr/bin/python3 bench/pocl_proto/gemm_cpu_blocks.py 1024 f32 6x64 12x32 8x32
    /usr/bin/python3 bench/pocl_proto/gemm_cpu_blocks.py 1536 f32 --dot 4x6 6x4 4x4
    /usr/bin/python3 bench/pocl_proto/gemm_cpu_blocks.py 1536 f32 --no-unroll 12x32
    /usr/bin/python3 bench/pocl_proto/gemm_cpu_blocks.py 1024 f32 --vw=8 6x16 6x32
Blocks are RxC: rows and columns of the broadcast form (C a multiple of the vector width, 16
for f32 and 8 for f64 unless --vw=W gives another), or of the dot form with --dot. --no-unroll drops the kernel's
#pragma unroll. The figures in lib/ops/blas_route.c (cpu_blocks) and docs/blas_fft.md come
from this script."""
import os
import sys

import numpy as np
import pyopencl as cl

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
args = [a for a in sys.argv[1:] if not a.startswith('--')]
N, dt, blocks = int(args[0]), args[1], args[2:]
dot, unroll = '--dot' in sys.argv, '--no-unroll' not in sys.argv
T, npdt, vw = ('float', np.float32, 16) if dt == 'f32' else ('double', np.float64, 8)
vw = next((int(a[5:]) for a in sys.argv if a.startswith('--vw=')), vw)
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
src = open(os.path.join(ROOT, 'cl_kernels', 'gemm_cpu.cl')).read()
rng = np.random.default_rng(1)
A, B = rng.random((N, N)).astype(npdt), rng.random((N, N)).astype(npdt)
mf = cl.mem_flags
ab = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=A)
bb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=B)
cb = cl.Buffer(ctx, mf.READ_WRITE, A.nbytes)
want = A @ (B.T if dot else B)
U, S = np.uint64, npdt
for blk in blocks:
    r, c = (int(x) for x in blk.split('x'))
    opts = ['-I', os.path.join(ROOT, 'cl_kernels'), '-DT=%s' % T, '-DKILN_FP64=1',
            '-DKILN_DT_%s=1' % dt.upper(), '-DGC_VW=%d' % vw,
            '-DGC_MR=%d' % (6 if dot else r), '-DGC_NR=%d' % (2 * vw if dot else c),
            '-DGC_DM=%d' % (r if dot else 4), '-DGC_DN=%d' % (c if dot else 6)]
    if not unroll:
        opts.append('-DGC_UNROLL=')
    p = cl.Program(ctx, src).build(options=opts)
    gs = (((N + r - 1) // r + 7) // 8 * 8, (N + c - 1) // c, 1)
    ts = []
    for _ in range(3):
        ev = p.gemm_cpu(q, gs, (8, 1, 1), U(N), U(N), U(N), S(1), S(0), ab, U(0), U(N), U(0),
                        np.uint32(0), bb, U(0), U(N), U(0), np.uint32(dot), cb, U(0), U(N),
                        U(0), np.uint32(0))
        ev.wait()
        ts.append((ev.profile.end - ev.profile.start) * 1e-9)
    got = np.empty_like(A)
    cl.enqueue_copy(q, got, cb)
    t = min(ts)
    print('%s N %d %s %s%s: %.1f GFLOP/s, error %.1e' % (
        dt, N, 'dot' if dot else 'broadcast', blk, '' if unroll else ' (no unroll)',
        2 * N ** 3 / t * 1e-9, np.abs(got - want).max() / np.abs(want).max()))
