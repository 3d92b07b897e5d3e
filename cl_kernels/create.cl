/*
 * Creation kernels: every element of the output is written.
 *
 * Build options: see common.cl (-DT=..., -DKILN_DT_...=1); -DKILN_FP64=1
 * when the device has doubles (then CT, the type arange and linspace compute
 * in, is double; otherwise float).
 * Kernels (offsets in elements; grid-stride loops, so any global size works):
 *   arange_float(out, off, n, start, step)  out[i] = (T)(start + i * step) in CT
 *   arange_int(out, off, n, start, step)    out[i] = start + i * step, 64-bit wrapping
 *   linspace_values(out, off, n, start, step, last, set_last)
 *                                           as arange_float; the element n-1 is `last` when set_last
 *   logspace_values(out, off, n, start, step, last, set_last, base)
 *                                           pow(base, linspace value)
 *   eye_values(out, off, n, cols, k)        1 where column - row == k, else 0
 *   tri_values(out, off, n, cols, k)        1 where column - row <= k, else 0
 *   axis_bcast(v, voff, out, off, n, len, inner)
 *                                           out[i] = v[(i / inner) % len] (meshgrid)
 * Tunables: none.
 */
#include "common.cl"

/* start + i * step rounds twice on every device: no contraction into fma. */
#pragma OPENCL FP_CONTRACT OFF

#ifdef KILN_FP64
#define CT double
#else
#define CT float
#endif

kernel void
arange_float(global T *out, ulong off, ulong n, CT start, CT step)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    out[off + i] = (T)(start + (CT)i * step);
}

kernel void
arange_int(global T *out, ulong off, ulong n, long start, long step)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    out[off + i] = (T)((ulong)start + i * (ulong)step);
}

kernel void
linspace_values(global T *out, ulong off, ulong n, CT start, CT step, CT last, uint set_last)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    out[off + i] = (T)(set_last && i == n - 1 ? last : start + (CT)i * step);
}

kernel void
logspace_values(global T *out, ulong off, ulong n, CT start, CT step, CT last, uint set_last,
                CT base)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    CT e = set_last && i == n - 1 ? last : start + (CT)i * step;
    out[off + i] = (T)pow(base, e);
  }
}

kernel void
eye_values(global T *out, ulong off, ulong n, ulong cols, long k)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    long d = (long)(i % cols) - (long)(i / cols);
    out[off + i] = d == k ? (T)1 : (T)0;
  }
}

kernel void
tri_values(global T *out, ulong off, ulong n, ulong cols, long k)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    long d = (long)(i % cols) - (long)(i / cols);
    out[off + i] = d <= k ? (T)1 : (T)0;
  }
}

kernel void
axis_bcast(global const T *v, ulong voff, global T *out, ulong off, ulong n, ulong len,
           ulong inner)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    out[off + i] = v[voff + (i / inner) % len];
}
