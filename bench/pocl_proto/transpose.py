#!/usr/bin/env python3
"""Prototypes of the CPU transpose (permute_blocked, cl_kernels/layout.cl) on PoCL through
PyOpenCL: N x N f32 or f64 (argv[1], default 4096; argv[2] f64), blocks of A x B elements per work-item, tiles
taken along a or down b, plain or non-temporal stores, next to a plain copy; ms, medians and
minima of 7 rounds, and whether the result is the transpose.
    /usr/bin/python3 bench/pocl_proto/transpose.py 4096
    /usr/bin/python3 bench/pocl_proto/transpose.py 4096 f64
lib/ops/layout.c (blocked_run, blocked_nt) quotes it."""
import pyopencl as cl, numpy as np, sys, itertools
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
src = r"""
#define MT float
#define MT8 float8
#define PERM_COL(j) ((MT8)(r0.s##j, r1.s##j, r2.s##j, r3.s##j, r4.s##j, r5.s##j, r6.s##j, r7.s##j))
#if NT
#define ST8(v, q) __builtin_nontemporal_store((v), (global MT8 *)(q))
#else
#define ST8(v, q) vstore8((v), 0, (q))
#endif
kernel void tr(global const MT *s, global MT *d, ulong ea, ulong eb, long sb, long da)
{
  ulong a0 = get_global_id(AD) * BTA, b0 = get_global_id(1 - AD) * BTB;
  if (a0 >= ea || b0 >= eb) return;
  ulong a1 = min(a0 + BTA, ea), b1 = min(b0 + BTB, eb);
#if AINNER
  for (ulong b = b0; b < b1; b += 8)
    for (ulong a = a0; a < a1; a += 8) {
#else
  for (ulong a = a0; a < a1; a += 8)
    for (ulong b = b0; b < b1; b += 8) {
#endif
      global const MT *p = s + (long)a + (long)b * sb;
      MT8 r0 = vload8(0, p), r1 = vload8(0, p + sb), r2 = vload8(0, p + 2 * sb);
      MT8 r3 = vload8(0, p + 3 * sb), r4 = vload8(0, p + 4 * sb), r5 = vload8(0, p + 5 * sb);
      MT8 r6 = vload8(0, p + 6 * sb), r7 = vload8(0, p + 7 * sb);
      global MT *q = d + (long)b + (long)a * da;
      ST8(PERM_COL(0), q); ST8(PERM_COL(1), q + da); ST8(PERM_COL(2), q + 2 * da); ST8(PERM_COL(3), q + 3 * da);
      ST8(PERM_COL(4), q + 4 * da); ST8(PERM_COL(5), q + 5 * da); ST8(PERM_COL(6), q + 6 * da); ST8(PERM_COL(7), q + 7 * da);
    }
}
kernel void cp(global const float8 *s, global float8 *d) { size_t i = get_global_id(0); d[i] = s[i]; }
"""
N = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
assert N % 512 == 0, 'N a multiple of 512: the prototypes have no edges'
F64 = len(sys.argv) > 2 and sys.argv[2] == 'f64'
if F64:  # the same kernels on doubles
    src = src.replace('float', 'double')
x = np.random.default_rng(1).random((N, N), dtype=np.float64 if F64 else np.float32)
mf = cl.mem_flags
xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
yb = cl.Buffer(ctx, mf.READ_WRITE, x.nbytes)
cpp = cl.Program(ctx, src.replace('#define MT8 %s' % ('double8' if F64 else 'float8'), '#define MT8 %s\n' % ('double8' if F64 else 'float8') + '#define NT 0\n#define AD 0\n#define BTA 8\n#define BTB 8\n#define AINNER 1')).build()
variants = []
for bta, btb, ainner, nt, ad, loc in [(32,32,1,0,0,8),(32,128,0,0,0,8),(32,256,0,0,0,8),(32,512,0,0,0,8),(16,256,0,0,0,8),(64,256,0,0,0,8),(32,256,0,1,0,8),(32,128,0,1,0,8),(32,256,0,0,1,8),(8,512,0,0,0,8),(16,512,0,1,0,8)]:
    opts = ['-DBTA=%d' % bta, '-DBTB=%d' % btb, '-DAINNER=%d' % ainner, '-DNT=%d' % nt, '-DAD=%d' % ad]
    variants.append(('A%d_B%d_ain%d_nt%d_ad%d_l%d' % (bta, btb, ainner, nt, ad, loc), cl.Program(ctx, src).build(options=opts), bta, btb, ad, loc))
ts = {v[0]: [] for v in variants}; ts['copy'] = []
for r in range(7):
    ev = cpp.cp(q, (N * N // 8,), None, xb, yb); ev.wait(); ts['copy'].append((ev.profile.end - ev.profile.start) * 1e-6)
    for name, prg, bta, btb, ad, loc in variants:
        ga, gb = (N + bta - 1) // bta, (N + btb - 1) // btb
        gs = (ga, gb) if ad == 0 else (gb, ga)
        ls = (loc, 1) if gs[0] % loc == 0 else None
        ev = prg.tr(q, gs, ls, xb, yb, np.uint64(N), np.uint64(N), np.int64(N), np.int64(N)); ev.wait()
        ts[name].append((ev.profile.end - ev.profile.start) * 1e-6)
    if r == 0:
        pass
y = np.empty_like(x); 
for name, prg, bta, btb, ad, loc in variants:
    gs = ((N + bta - 1) // bta, (N + btb - 1) // btb) if ad == 0 else ((N + btb - 1) // btb, (N + bta - 1) // bta)
    prg.tr(q, gs, None, xb, yb, np.uint64(N), np.uint64(N), np.int64(N), np.int64(N)).wait()
    cl.enqueue_copy(q, y, yb); ok = np.array_equal(y, x.T)
    print('%-28s median %.3f min %.3f ok=%s' % (name, np.median(ts[name]), min(ts[name]), ok))
print('copy median %.3f min %.3f' % (np.median(ts['copy']), min(ts['copy'])))
