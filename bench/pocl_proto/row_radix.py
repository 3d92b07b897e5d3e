#!/usr/bin/env python3
"""The CPU row sort (lib/ops/sort.c, rows_serial: sort.cl's sort_keys, then sort_radix.cl's
rows_serial) under PyOpenCL on PoCL, [4096, 1024] random f32 rows sorted with their positions,
4 passes of 8 bits; ms, min and median of 5 alternating runs, each result checked against NumPy:
  keys+rows   as kiln runs it: the keys and positions of every element (one work-item each),
              then one work-item per row, each pass counting its digit in a sweep of its own
  keys+hist1  the same, with the four digits' counts in one sweep of the row
  fused       one kernel: the first pass takes the keys from the data, the others as rows
    /usr/bin/python3 bench/pocl_proto/row_radix.py"""
import numpy as np
import pyopencl as cl

ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
src = r"""
inline uint key_of(float f)
{
  if (isnan(f)) return UINT_MAX;
  uint u = f == 0 ? 0u : as_uint(f);
  return (u >> 31) ? ~u : (u | 0x80000000u);
}
kernel void keys(global const float *x, global uint *k, global uint *v, ulong n)
{
  ulong p = get_global_id(0);
  if (p < n) { k[p] = key_of(x[p]); v[p] = (uint)p; }
}
inline void starts(uint *cnt)
{
  uint run = 0;
  for (uint b = 0; b < 256u; b++) { uint c = cnt[b]; cnt[b] = run; run += c; }
}
inline void pass(global const uint *ka, global const uint *va, global uint *kb, global uint *vb,
                 ulong len, uint shift, uint *cnt)
{
  for (uint b = 0; b < 256u; b++) cnt[b] = 0;
  for (ulong j = 0; j < len; j++) cnt[(ka[j] >> shift) & 255u]++;
  starts(cnt);
  for (ulong j = 0; j < len; j++) { uint p = cnt[(ka[j] >> shift) & 255u]++; kb[p] = ka[j]; vb[p] = va[j]; }
}
#define SWAP global uint *t_ = ka; ka = kb; kb = t_; t_ = va; va = vb; vb = t_;
kernel void rows(global uint *keys, global uint *vals, global uint *tkeys, global uint *tvals, ulong len)
{
  uint cnt[256];
  ulong r = get_global_id(0);
  global uint *ka = keys + r * len, *kb = tkeys + r * len, *va = vals + r * len, *vb = tvals + r * len;
  for (uint shift = 0; shift < 32; shift += 8) { pass(ka, va, kb, vb, len, shift, cnt); SWAP }
}
kernel void hist1(global uint *keys, global uint *vals, global uint *tkeys, global uint *tvals, ulong len)
{
  uint cnt[4][256];
  ulong r = get_global_id(0);
  global uint *ka = keys + r * len, *kb = tkeys + r * len, *va = vals + r * len, *vb = tvals + r * len;
  for (uint p = 0; p < 4; p++) for (uint b = 0; b < 256u; b++) cnt[p][b] = 0;
  for (ulong j = 0; j < len; j++) { uint k = ka[j]; for (uint p = 0; p < 4; p++) cnt[p][(k >> (8 * p)) & 255u]++; }
  for (uint p = 0; p < 4; p++) starts(cnt[p]);
  for (uint p = 0; p < 4; p++) {
    for (ulong j = 0; j < len; j++) { uint k = ka[j]; uint d = cnt[p][(k >> (8 * p)) & 255u]++; kb[d] = k; vb[d] = va[j]; }
    SWAP
  }
}
kernel void fused(global const float *x, global uint *keys, global uint *vals, global uint *tkeys,
                  global uint *tvals, ulong len)
{
  uint cnt[256];
  ulong r = get_global_id(0);
  global const float *xr = x + r * len;
  /* the first pass into the temporaries, so that the fourth ends in keys/vals */
  global uint *ka = tkeys + r * len, *kb = keys + r * len, *va = tvals + r * len, *vb = vals + r * len;
  for (uint b = 0; b < 256u; b++) cnt[b] = 0;
  for (ulong j = 0; j < len; j++) cnt[key_of(xr[j]) & 255u]++;
  starts(cnt);
  for (ulong j = 0; j < len; j++) { uint k = key_of(xr[j]); uint p = cnt[k & 255u]++; ka[p] = k; va[p] = (uint)(r * len + j); }
  for (uint shift = 8; shift < 32; shift += 8) { pass(ka, va, kb, vb, len, shift, cnt); SWAP }
}
"""
prg = cl.Program(ctx, src).build()
rows, L = 4096, 1024
n = rows * L
x = np.random.default_rng(1).standard_normal((rows, L)).astype(np.float32)
mf = cl.mem_flags
xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
kb, vb, tk, tv = (cl.Buffer(ctx, mf.READ_WRITE, x.nbytes) for _ in range(4))
U = np.uint64


def two(second):
    def run():
        e1 = prg.keys(q, (n,), (256,), xb, kb, vb, U(n))
        e2 = getattr(prg, second)(q, (rows,), (1,), kb, vb, tk, tv, U(L))
        e2.wait()
        return (e2.profile.end - e1.profile.start) * 1e-6
    return run


def fused():
    e = prg.fused(q, (rows,), (1,), xb, kb, vb, tk, tv, U(L))
    e.wait()
    return (e.profile.end - e.profile.start) * 1e-6


runs = {'keys+rows': two('rows'), 'keys+hist1': two('hist1'), 'fused': fused}
want = np.sort(x, axis=1)
ts = {k: [] for k in runs}
for _ in range(5):
    for name, f in runs.items():
        ts[name].append(f())
        pos = np.empty((rows, L), np.uint32)
        cl.enqueue_copy(q, pos, vb)
        got = x.reshape(-1)[pos.astype(np.int64)]
        if not np.array_equal(got, want):
            print(name, 'WRONG')
for name in ts:
    print('%-11s min %.2f med %.2f' % (name, min(ts[name]), np.median(ts[name])))
