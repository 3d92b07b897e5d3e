#!/usr/bin/env python3
"""The CPU GEMM's work-group order on PoCL through PyOpenCL: a 12 x 32 block per work-item of
C = A B (N x N f32, argv[1]), groups of 8 along n or along m (those share B's columns).
    /usr/bin/python3 bench/pocl_proto/gemm_group_order.py 2016
cl_kernels/gemm_cpu.cl and docs/blas_fft.md quote it (before the loops were unrolled)."""
import pyopencl as cl, numpy as np, sys
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
src = r"""
#define KCAT(a,b) KCAT_(a,b)
#define KCAT_(a,b) a##b
#define V KCAT(float, VW)
#define VL(p) KCAT(vload, VW)(0, p)
#define VS(v, p) KCAT(vstore, VW)(v, 0, p)
#define NV (NR / VW)
kernel void g(global const float *restrict A, global const float *restrict B, global float *restrict C, uint M, uint N, uint K)
{
#if MDIM0
  const uint i0 = get_global_id(0) * MR, j0 = get_global_id(1) * NR;
#else
  const uint i0 = get_global_id(1) * MR, j0 = get_global_id(0) * NR;
#endif
  if (i0 >= M || j0 >= N) return;
  V c[MR][NV];
  for (int r = 0; r < MR; r++) for (int v = 0; v < NV; v++) c[r][v] = (V)0;
  global const float *a = A + (ulong)i0 * K;
  global const float *b = B + j0;
  for (uint k = 0; k < K; k++) {
    V bv[NV];
    for (int v = 0; v < NV; v++) bv[v] = VL(b + (ulong)k * N + v * VW);
    for (int r = 0; r < MR; r++) {
      float av = a[(ulong)r * K + k];
      for (int v = 0; v < NV; v++) c[r][v] = fma((V)av, bv[v], c[r][v]);
    }
  }
  for (int r = 0; r < MR; r++) for (int v = 0; v < NV; v++) VS(c[r][v], C + (ulong)(i0 + r) * N + j0 + v * VW);
}
"""
N = int(sys.argv[1])
assert N % 96 == 0, 'N a multiple of 96: the prototype has no edges'
rng = np.random.default_rng(1)
A = rng.random((N, N), dtype=np.float32); B = rng.random((N, N), dtype=np.float32)
mf = cl.mem_flags
ab = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=A)
bb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=B)
cb = cl.Buffer(ctx, mf.READ_WRITE, A.nbytes)
want = A @ B
MR, NR, VW = 12, 32, 16
for mdim0 in (0, 1):
  for loc in (8,):
    p = cl.Program(ctx, src).build(options=['-DMR=%d' % MR, '-DNR=%d' % NR, '-DVW=%d' % VW, '-DMDIM0=%d' % mdim0])
    gm, gn = (N + MR - 1) // MR, N // NR
    gs = ((gm + loc - 1) // loc * loc, gn) if mdim0 else (gn, (gm + loc - 1) // loc * loc)
    ls = (loc, 1) if mdim0 else (1, loc)
    if not mdim0:
        gs = ((gn + loc - 1)//loc*loc, gm); ls = (loc, 1)
    ts = []
    for r in range(3):
        ev = p.g(q, gs, ls, ab, bb, cb, np.uint32(N), np.uint32(N), np.uint32(N)); ev.wait()
        ts.append((ev.profile.end - ev.profile.start) * 1e-9)
    got = np.empty_like(A); cl.enqueue_copy(q, got, cb)
    t = min(ts)
    print('mdim0 %d loc %d: %.1f ms  %.1f GFLOP/s  err %.2e' % (mdim0, loc, t * 1e3, 2 * N**3 / t * 1e-9, np.abs(got - want).max() / np.abs(want).max()))
