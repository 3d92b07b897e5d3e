#!/usr/bin/env python3
"""Prototypes of the CPU gather along the last axis (gather_axis_rows, cl_kernels/index.cl) on
PoCL through PyOpenCL, [4096, 1024] f32: a plain gather, with the out-of-range check, with a
private minimum of the bad positions (not vectorised) and with a count of them; ms.
    /usr/bin/python3 bench/pocl_proto/gather.py"""
import pyopencl as cl, numpy as np, sys
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
base = r"""
kernel void k(global const float *restrict x, global const int *restrict idx, global float *restrict out, ulong rows, ulong inner, long len, global uint *flag)
{
  for (ulong r = get_global_id(0); r < rows; r += get_global_size(0)) {
    global const float *xr = x + r * inner;
    global const int *ip = idx + r * inner;
    global float *o = out + r * inner;
    BODY
  }
}
"""
bodies = {
 'plain': "for (ulong j = 0; j < inner; j++) o[j] = xr[ip[j]];",
 'clamp': "for (ulong j = 0; j < inner; j++) { long v = ip[j]; v = v < 0 ? v + len : v; int ok = v >= 0 && v < len; float val = xr[ok ? v : 0]; o[j] = ok ? val : 0.0f; }",
 'bad': "ulong bad = ULONG_MAX; for (ulong j = 0; j < inner; j++) { long v = ip[j]; v = v < 0 ? v + len : v; int ok = v >= 0 && v < len; float val = xr[ok ? v : 0]; o[j] = ok ? val : 0.0f; bad = ok ? bad : min(bad, j); } if (bad != ULONG_MAX) atomic_or(flag, 1u);",
 'badint': "int nbad = 0; for (ulong j = 0; j < inner; j++) { int v = ip[j]; v = v < 0 ? v + (int)len : v; int ok = v >= 0 && v < (int)len; float val = xr[ok ? v : 0]; o[j] = ok ? val : 0.0f; nbad += !ok; } if (nbad) atomic_or(flag, 1u);",
 'int32': "for (uint j = 0; j < (uint)inner; j++) { int v = ip[j]; v = v < 0 ? v + (int)len : v; uint ok = (uint)v < (uint)len; float val = xr[ok ? v : 0]; o[j] = ok ? val : 0.0f; }",
}
rows, inner = 4096, 1024
rng = np.random.default_rng(1)
x = rng.random((rows, inner), dtype=np.float32)
ix = rng.integers(0, inner, (rows, inner)).astype(np.int32)
mf = cl.mem_flags
xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
ib = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=ix)
ob = cl.Buffer(ctx, mf.READ_WRITE, x.nbytes)
fb = cl.Buffer(ctx, mf.READ_WRITE, 16)
prgs = {k: cl.Program(ctx, base.replace('BODY', b)).build() for k, b in bodies.items()}
ts = {k: [] for k in bodies}
for r in range(7):
    for k, p in prgs.items():
        ev = p.k(q, (rows,), (64,), xb, ib, ob, np.uint64(rows), np.uint64(inner), np.int64(inner), fb); ev.wait()
        ts[k].append((ev.profile.end - ev.profile.start) * 1e-6)
want = np.take_along_axis(x, ix, 1)
for k, p in prgs.items():
    p.k(q, (rows,), (64,), xb, ib, ob, np.uint64(rows), np.uint64(inner), np.int64(inner), fb).wait()
    got = np.empty_like(x); cl.enqueue_copy(q, got, ob)
    print('%-8s median %.3f min %.3f ok=%s' % (k, np.median(ts[k]), min(ts[k]), np.array_equal(got, want)))
