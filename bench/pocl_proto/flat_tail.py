#!/usr/bin/env python3
"""The flat elementwise kernels' tail as a loop or as an `if` (cl_kernels/ew_loops.clh,
FLAT_TAIL), on PoCL through PyOpenCL: kiln's f64 exp over 2^N doubles (argv[1], default 20),
4- and 8-wide, main loop and tail each a loop or an `if`, 15 alternating rounds (medians and
minima, ms); then f32 a + b, 8-wide, tail loop or `if` (41 rounds).
    /usr/bin/python3 bench/pocl_proto/flat_tail.py 20
docs/performance.md, "Flat kernels without a tail loop on PoCL"."""
import os
import sys

import numpy as np
import pyopencl as cl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kexp import k_exp64_source  # noqa: E402

ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
common = k_exp64_source()


def time_variants(srcs, variants, rounds, n, args, fmt):
    """Each variant's kernel k over n elements (W a work-item, groups of 256), the variants
    alternating for `rounds` rounds; prints each one's median and minimum, ms."""
    ts = {v: [] for v, _ in variants}
    for _ in range(rounds):
        for v, W in variants:
            g = (n // W + 255) // 256 * 256
            ev = srcs[v].k(q, (g,), (256,), *args)
            ev.wait()
            ts[v].append((ev.profile.end - ev.profile.start) * 1e-6)
    for v, _ in variants:
        print(v, ('median %s min %s' % (fmt, fmt)) % (np.median(ts[v]), min(ts[v])))

body = r"""
#define W %(W)d
kernel void k(global const double *xs, ulong xoff, global double *ys, ulong yoff, ulong n)
{
  global const double *xp = xs + xoff; global double *yp = ys + yoff;
  ulong nv_ = n / W, lsz_ = get_local_size(0), blk_ = lsz_;
  %(LOOP)s
  {
    double%(W)d xv = vload%(W)d(v0_, xp); double%(W)d yv;
    %(LANES)s
    vstore%(W)d(yv, v0_, yp);
  }
  %(TAIL)s
  { yp[i] = k_exp64(xp[i]); }
}
"""
loops = {'for': "for (ulong v0_ = get_group_id(0) * blk_ + get_local_id(0); v0_ < nv_; v0_ += get_num_groups(0) * blk_)",
         'if': "ulong v0_ = get_group_id(0) * blk_ + get_local_id(0); if (v0_ < nv_)"}
tails = {'for': "for (ulong i = nv_ * W + get_global_id(0); i < n; i += get_global_size(0))",
         'if': "ulong i = nv_ * W + get_global_id(0); if (i < n)"}
lanes = {'arr': "for (uint l = 0; l < W; l++) { union { double%(W)d v; double s[W]; } a, b; a.v = xv; b.s[l] = 0; } yv = xv;",}
variants = []
srcs = {}
for W in (4, 8):
    for lp in ('for', 'if'):
        for tl in ('for', 'if'):
            name = 'W%d_%s_%s' % (W, lp, tl)
            lanes_code = "union { double%d v; double s[%d]; } a, b; a.v = xv; for (uint l = 0; l < W; l++) b.s[l] = k_exp64(a.s[l]); yv = b.v;" % (W, W)
            srcs[name] = cl.Program(ctx, common + body % {'W': W, 'LOOP': loops[lp], 'TAIL': tails[tl], 'LANES': lanes_code}).build()
            variants.append((name, W))
n = 1 << (int(sys.argv[1]) if len(sys.argv) > 1 else 20)
x = np.random.default_rng(1).uniform(-700, 700, n)
mf = cl.mem_flags
xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
yb = cl.Buffer(ctx, mf.READ_WRITE, x.nbytes)
time_variants(srcs, variants, 15, n, (xb, np.uint64(0), yb, np.uint64(0), np.uint64(n)), '%.3f')

# f32 a + b, 8-wide, the tail a loop or an if
body_add = r"""
#define W %(W)d
kernel void k(global const float *as, ulong aoff, global const float *bs, ulong boff, global float *cs, ulong coff, ulong n)
{
  global const float *ap = as + aoff, *bp = bs + boff; global float *cp = cs + coff;
  ulong nv_ = n / W, lsz_ = get_local_size(0), blk_ = lsz_;
  for (ulong v0_ = get_group_id(0) * blk_ + get_local_id(0); v0_ < nv_; v0_ += get_num_groups(0) * blk_)
  {
    float%(W)d av = vload%(W)d(v0_, ap), bv = vload%(W)d(v0_, bp);
    vstore%(W)d(av + bv, v0_, cp);
  }
  %(TAIL)s
  { cp[i] = ap[i] + bp[i]; }
}
"""
tails = {'for': "for (ulong i = nv_ * W + get_global_id(0); i < n; i += get_global_size(0))",
         'if': "ulong i = nv_ * W + get_global_id(0); if (W > 1 && i < n)"}
variants = []; srcs = {}
for W in (8,):
    for tl in ('for', 'if'):
        name = 'W%d_%s' % (W, tl)
        srcs[name] = cl.Program(ctx, body_add % {'W': W, 'TAIL': tails[tl]}).build()
        variants.append((name, W))
n = 1 << (int(sys.argv[1]) if len(sys.argv) > 1 else 20)
x = np.random.default_rng(1).uniform(-700, 700, n).astype(np.float32)
mf = cl.mem_flags
xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
yb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
zb = cl.Buffer(ctx, mf.READ_WRITE, x.nbytes)
time_variants(srcs, variants, 41, n,
              (xb, np.uint64(0), yb, np.uint64(0), zb, np.uint64(0), np.uint64(n)), '%.4f')
