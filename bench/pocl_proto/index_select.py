#!/usr/bin/env python3
"""Prototypes of the CPU index_select over rows (cl_kernels/index.cl: index_select_rows and
index_select_lines[_nt]) on PoCL through PyOpenCL: 2^N/64 random rows of a [2^N/64, 64] f32
table (kiln bench's index.gather_rows). ms, min and median of 7 alternating runs:
  elem / elem_nt    the element loop, one work-item per row (plain / non-temporal stores)
  lines / lines_nt  64-byte lines as float16 (plain / non-temporal stores; groups of 64)
  vload16           lines through vload16 / vstore16
  kiln_nt           index.cl's index_select_lines_nt itself
  kiln_nt_div       the same with the row's 64-bit division by the index length that it
                    skips when there is one outer slice
  copy              clEnqueueCopyBuffer of the table
    /usr/bin/python3 bench/pocl_proto/index_select.py 2**24"""
import os
import re
import sys

import numpy as np
import pyopencl as cl

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
proto = r"""
#define PUT(p, x) (*(p) = (x))
#define PUT_NT(p, x) __builtin_nontemporal_store((x), (p))
/* One work-item per gathered row r: BODY copies x's row (row, ok: whether the index was in
 * range; a bad one reads row 0 and stores zeros) to out's row r. */
#define ROWS(name, BODY)                                                                   \
kernel void name(global const float *x, global const long *idx, global float *out,        \
                 ulong nidx, long len, ulong inner)                                       \
{                                                                                          \
  ulong r = get_global_id(0);                                                              \
  if (r >= nidx) return;                                                                   \
  long v = idx[r]; if (v < 0) v += len;                                                    \
  int ok = v >= 0 && v < len;                                                              \
  global const float *row = x + (ulong)(ok ? v : 0) * inner;                               \
  BODY                                                                                     \
}
#define ELEM(name, P) ROWS(name,                                                           \
  for (ulong k = 0; k < inner; k++) P(out + r * inner + k, ok ? row[k] : 0.0f);)
#define LINES(name, P) ROWS(name,                                                          \
  global const float16 *rv = (global const float16 *)row;                                  \
  global float16 *dst = (global float16 *)(out + r * inner);                               \
  for (ulong k = 0; k < inner / 16; k++) P(dst + k, ok ? rv[k] : (float16)0);)
ELEM(elem, PUT)
ELEM(elem_nt, PUT_NT)
LINES(lines, PUT)
LINES(lines_nt, PUT_NT)
ROWS(vload16_lines,
  for (ulong k = 0; k + 16 <= inner; k += 16)
    vstore16(ok ? vload16(0, row + k) : (float16)0, 0, out + r * inner + k);)
"""
# index.cl's line kernels, with the helpers they call
index_cl = open(os.path.join(ROOT, 'cl_kernels', 'index.cl')).read()
lines_src = re.search(r'#define SELECT_LINES.*?SELECT_LINES\(index_select_lines_nt, LINE_PUT_NT\)',
                      index_cl, re.S).group(0)
helpers = r"""
inline long load_index(global const void *p, ulong i, uint is64)
{ return is64 ? ((global const long *)p)[i] : (long)((global const int *)p)[i]; }
inline void flag_bad(global uint *flag, ulong pos) { atomic_or(flag, 1u); }
"""
div = 'ulong o = outer > 1 ? r / nidx : 0,'
assert div in lines_src
prg = cl.Program(ctx, proto).build()
kiln = cl.Program(ctx, helpers + lines_src).build()
kiln_div = cl.Program(ctx, helpers + lines_src.replace(div, 'ulong o = r / nidx,')).build()

n = int(eval(sys.argv[1])) if len(sys.argv) > 1 else 1 << 24
inner = 64
rows = n // inner
rng = np.random.default_rng(1)
x = rng.random((rows, inner), dtype=np.float32)
ix = rng.integers(0, rows, rows).astype(np.int64)
mf = cl.mem_flags
xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
ib = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=ix)
ob = cl.Buffer(ctx, mf.READ_WRITE, x.nbytes)
cb = cl.Buffer(ctx, mf.READ_WRITE, x.nbytes)
fb = cl.Buffer(ctx, mf.READ_WRITE, 16)
U, I = np.uint64, np.int64


def proto_run(name):
    return lambda: getattr(prg, name)(q, (rows,), (64,), xb, ib, ob, U(rows), I(rows), U(inner))


def kiln_run(p):
    # (x, xoff, idx, ioff, is64, out, ooff, outer, nidx, len, inner in lines, flag)
    return lambda: p.index_select_lines_nt(q, (rows,), (64,), xb, U(0), ib, U(0), np.uint32(1),
                                           ob, U(0), U(1), U(rows), I(rows), U(inner // 16), fb)


runs = {k: proto_run(k) for k in ('elem', 'elem_nt', 'lines', 'lines_nt')}
runs['vload16'] = proto_run('vload16_lines')
runs['kiln_nt'] = kiln_run(kiln)
runs['kiln_nt_div'] = kiln_run(kiln_div)
runs['copy'] = lambda: cl.enqueue_copy(q, cb, xb)
want = x[ix]
ts = {k: [] for k in runs}
for _ in range(7):
    for k, f in runs.items():
        ev = f()
        ev.wait()
        ts[k].append((ev.profile.end - ev.profile.start) * 1e-6)
for k, f in runs.items():
    ok = True
    if k != 'copy':
        f().wait()
        got = np.empty_like(x)
        cl.enqueue_copy(q, got, ob)
        ok = np.array_equal(got, want)
    print('%-12s min %.3f med %.3f ok=%s' % (k, min(ts[k]), np.median(ts[k]), ok))
