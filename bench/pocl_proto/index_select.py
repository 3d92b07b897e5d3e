#!/usr/bin/env python3
"""Prototypes of the CPU index_select over rows (index_select_rows / index_select_lines,
cl_kernels/index.cl) on PoCL through PyOpenCL: 2^N/64 random rows of a [2^N/64, 64] f32 table
(kiln bench's index.gather_rows). cur: the element loop (one work-item per row); vec16: vload16 /
vstore16; vec16nt: float16 loads and stores; vnt / vnt64: float16 lines with non-temporal
stores, groups of 8 / 64; curnt: the element loop with non-temporal stores; chunk: one
work-item per element; copy: clEnqueueCopyBuffer of the table. ms, min and median of 7.
    /usr/bin/python3 bench/pocl_proto/index_select.py 2**24"""
import pyopencl as cl, numpy as np, sys
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
src = r"""
inline long li(global const long *p, ulong i){return p[i];}
kernel void cur(global const float *x, global const long *idx, global float *out, ulong nidx, long len, ulong inner)
{
  for (ulong r = get_global_id(0); r < nidx; r += get_global_size(0)) {
    long v = idx[r]; if (v < 0) v += len;
    global float *dst = out + r * inner;
    if (v < 0 || v >= len) { for (ulong k = 0; k < inner; k++) dst[k] = 0; }
    else { global const float *row = x + (ulong)v * inner; for (ulong k = 0; k < inner; k++) dst[k] = row[k]; }
  }
}
kernel void vec16(global const float *x, global const long *idx, global float *out, ulong nidx, long len, ulong inner)
{
  ulong r = get_global_id(0);
  if (r >= nidx) return;
  long v = idx[r]; if (v < 0) v += len;
  global float *dst = out + r * inner;
  int ok = v >= 0 && v < len;
  global const float *row = x + (ulong)(ok ? v : 0) * inner;
  ulong k = 0;
  for (; k + 16 <= inner; k += 16) { float16 t = vload16(0, row + k); vstore16(ok ? t : (float16)0, 0, dst + k); }
  for (; k < inner; k++) dst[k] = ok ? row[k] : 0;
}
kernel void vec16nt(global const float *x, global const long *idx, global float *out, ulong nidx, long len, ulong inner)
{
  ulong r = get_global_id(0);
  if (r >= nidx) return;
  long v = idx[r]; if (v < 0) v += len;
  int ok = v >= 0 && v < len;
  global const float16 *row = (global const float16 *)(x + (ulong)(ok ? v : 0) * inner);
  global float16 *dst = (global float16 *)(out + r * inner);
  for (ulong k = 0; k < inner / 16; k++) { float16 t = row[k]; dst[k] = ok ? t : (float16)0; }
}
kernel void vnt(global const float *x, global const long *idx, global float *out, ulong nidx, long len, ulong inner)
{
  ulong r = get_global_id(0);
  if (r >= nidx) return;
  long v = idx[r]; if (v < 0) v += len;
  int ok = v >= 0 && v < len;
  global const float16 *row = (global const float16 *)(x + (ulong)(ok ? v : 0) * inner);
  global float16 *dst = (global float16 *)(out + r * inner);
  for (ulong k = 0; k < inner / 16; k++) { float16 t = row[k]; __builtin_nontemporal_store(ok ? t : (float16)0, dst + k); }
}
kernel void curnt(global const float *x, global const long *idx, global float *out, ulong nidx, long len, ulong inner)
{
  for (ulong r = get_global_id(0); r < nidx; r += get_global_size(0)) {
    long v = idx[r]; if (v < 0) v += len;
    global float *dst = out + r * inner;
    int ok = v >= 0 && v < len;
    global const float *row = x + (ulong)(ok ? v : 0) * inner;
    for (ulong k = 0; k < inner; k++) __builtin_nontemporal_store(ok ? row[k] : 0.0f, dst + k);
  }
}
kernel void chunk(global const float *x, global const long *idx, global float *out, ulong nidx, long len, ulong inner)
{
  ulong c = get_global_id(0), r = get_global_id(1);
  long v = idx[r]; if (v < 0) v += len;
  int ok = v >= 0 && v < len;
  float t = x[(ulong)(ok ? v : 0) * inner + c];
  out[r * inner + c] = ok ? t : 0;
}
"""
prg = cl.Program(ctx, src).build()
n = int(eval(sys.argv[1])) if len(sys.argv) > 1 else 1 << 24
inner = 64; rows = n // inner
rng = np.random.default_rng(1)
x = rng.random((rows, inner), dtype=np.float32)
ix = rng.integers(0, rows, rows).astype(np.int64)
mf = cl.mem_flags
xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
ib = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=ix)
ob = cl.Buffer(ctx, mf.READ_WRITE, x.nbytes)
cb = cl.Buffer(ctx, mf.READ_WRITE, x.nbytes)
want = x[ix]
runs = {
 'cur': lambda: prg.cur(q, (rows,), (64,), xb, ib, ob, np.uint64(rows), np.int64(rows), np.uint64(inner)),
 'cur8': lambda: prg.cur(q, (rows,), (8,), xb, ib, ob, np.uint64(rows), np.int64(rows), np.uint64(inner)),
 'vec16': lambda: prg.vec16(q, (rows,), (8,), xb, ib, ob, np.uint64(rows), np.int64(rows), np.uint64(inner)),
 'vec16nt': lambda: prg.vec16nt(q, (rows,), (8,), xb, ib, ob, np.uint64(rows), np.int64(rows), np.uint64(inner)),
 'vnt': lambda: prg.vnt(q, (rows,), (8,), xb, ib, ob, np.uint64(rows), np.int64(rows), np.uint64(inner)),
 'vnt64': lambda: prg.vnt(q, (rows,), (64,), xb, ib, ob, np.uint64(rows), np.int64(rows), np.uint64(inner)),
 'curnt': lambda: prg.curnt(q, (rows,), (64,), xb, ib, ob, np.uint64(rows), np.int64(rows), np.uint64(inner)),
 'chunk': lambda: prg.chunk(q, (inner, rows), (64, 1), xb, ib, ob, np.uint64(rows), np.int64(rows), np.uint64(inner)),
 'copy': lambda: cl.enqueue_copy(q, cb, xb),
}
ts = {k: [] for k in runs}
for r in range(7):
    for k, f in runs.items():
        ev = f(); ev.wait(); ts[k].append((ev.profile.end - ev.profile.start) * 1e-6)
for k, f in runs.items():
    if k != 'copy':
        f().wait(); got = np.empty_like(x); cl.enqueue_copy(q, got, ob); ok = np.array_equal(got, want)
    else: ok = True
    print('%-8s min %.3f med %.3f ok=%s' % (k, min(ts[k]), np.median(ts[k]), ok))
