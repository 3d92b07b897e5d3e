/*
 * Creation kernels: every element of the output is written.
 *
 * Build options: see common.cl (-DT=..., -DKILN_DT_...=1); -DKILN_FP64=1
 * when the device has doubles (then CT, the type arange and linspace compute
 * in, is double; otherwise float).
 * f16/bf16 results are computed in CT and rounded once (from double through
 * float rounded to odd, which then rounds to nearest even exactly as a
 * direct rounding would); complex ones from real arguments get imaginary
 * part 0.
 * Kernels (offsets in elements; grid-stride loops, so any global size works):
 *   arange_float(out, off, n, start, step)  out[i] = (T)(start + i * step) in CT
 *   arange_int(out, off, n, start, step)    out[i] = start + i * step, 64-bit wrapping
 *                                           (not built for complex dtypes)
 *   linspace_values(out, off, n, start, step, last, set_last)
 *                                           as arange_float; the element n-1 is `last` when set_last
 *   logspace_values(out, off, n, start, step, last, set_last, base)
 *                                           pow(base, linspace value)
 *   linspace_complex(out, off, n, start, step, last, set_last)
 *                                           as linspace_values on both parts (CT2 arguments;
 *                                           complex dtypes only)
 *   eye_values(out, off, n, cols, k)        1 where column - row == k, else 0
 *   tri_values(out, off, n, cols, k)        1 where column - row <= k, else 0
 *   axis_bcast(v, voff, out, off, n, len, inner)
 *                                           out[i] = v[(i / inner) % len] (meshgrid; moves
 *                                           MT, so the host runs it from kiln__ops_move_dtype's
 *                                           program)
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
#define CT2 KILN_CAT(CT, 2)

#if KILN_IS_HALF && defined(KILN_FP64)
/* d rounded to float towards zero, with the lowest bit set when inexact ("round to odd"):
 * rounding that to the 8 or 11 bits of bf16 or f16 gives the correctly rounded result. */
inline float
f64_to_f32_odd(double d)
{
  float f = convert_float_rtz(d);
  return (double)f != d && !isnan(d) ? as_float(as_uint(f) | 1u) : f;
}
#define STORE_CT(p, i, v) KILN_STORE(p, i, f64_to_f32_odd(v))
#elif KILN_IS_COMPLEX
#define STORE_CT(p, i, v) ((p)[i] = (T)((RT)(v), (RT)0))
#else
#define STORE_CT(p, i, v) KILN_STORE(p, i, (T)(v))
#endif

kernel void
arange_float(global ST *out, ulong off, ulong n, CT start, CT step)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    STORE_CT(out, off + i, start + (CT)i * step);
}

#if !KILN_IS_COMPLEX /* integer dtypes only; a cast to a vector type would fill both parts */
kernel void
arange_int(global T *out, ulong off, ulong n, long start, long step)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    out[off + i] = (T)((ulong)start + i * (ulong)step);
}
#endif

kernel void
linspace_values(global ST *out, ulong off, ulong n, CT start, CT step, CT last, uint set_last)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    STORE_CT(out, off + i, set_last && i == n - 1 ? last : start + (CT)i * step);
}

kernel void
logspace_values(global ST *out, ulong off, ulong n, CT start, CT step, CT last, uint set_last,
                CT base)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    CT e = set_last && i == n - 1 ? last : start + (CT)i * step;
    STORE_CT(out, off + i, pow(base, e));
  }
}

#if KILN_IS_COMPLEX
kernel void
linspace_complex(global T *out, ulong off, ulong n, CT2 start, CT2 step, CT2 last, uint set_last)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    CT2 v = set_last && i == n - 1 ? last : start + (CT2)((CT)i) * step;
    out[off + i] = KILN_CAT(convert_, T)(v);
  }
}
#endif

kernel void
eye_values(global ST *out, ulong off, ulong n, ulong cols, long k)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    long d = (long)(i % cols) - (long)(i / cols);
    KILN_STORE(out, off + i, d == k ? KILN_ONE : KILN_ZERO);
  }
}

kernel void
tri_values(global ST *out, ulong off, ulong n, ulong cols, long k)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    long d = (long)(i % cols) - (long)(i / cols);
    KILN_STORE(out, off + i, d <= k ? KILN_ONE : KILN_ZERO);
  }
}

kernel void
axis_bcast(global const MT *v, ulong voff, global MT *out, ulong off, ulong n, ulong len,
           ulong inner)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    out[off + i] = v[voff + (i / inner) % len];
}
