/*
 * Elementwise kernels: one kernel per row of include/kiln/op_table.h that
 * accepts T, plus where and clamp.
 *
 * Build options: see common.cl (-DT=..., -DKILN_DT_...=1).
 * Kernels:
 *   unary_<name>(x, xoff, y, yoff, n)
 *   binary_<name>(a, aoff, a_scalar, b, boff, b_scalar, c, coff, n, ndim, bcast, flags)
 *     flags: 1 = a is the scalar, 2 = b is the scalar, 4 = broadcast (use bcast
 *     strides: operand 0 = a, 1 = b); otherwise all tensors are contiguous and
 *     have n elements.
 *   where_values(cond, condoff, a, aoff, b, boff, out, outoff, n, ndim, bcast, flags)
 *   clamp_values(x, xoff, y, yoff, n, lo, hi)
 * Offsets are in elements. Every kernel loops grid-stride, so any global size works.
 */
#include "common.cl"
#include "kiln/op_table.h"

/* ---- helpers named in the op table ---- */
#if KILN_IS_FLOAT
#define k_add(a, b) ((a) + (b))
#define k_sub(a, b) ((a) - (b))
#define k_mul(a, b) ((a) * (b))
#define k_neg(x) (-(x))
#define k_abs(x) fabs(x)
#define k_div(a, b) ((a) / (b))
#define k_fmod(a, b) fmod(a, b)
#define k_isnan(x) isnan(x)
#define k_isinf(x) isinf(x)
#define k_isfinite(x) isfinite(x)
#define k_bitwise_not(x) (x)
inline T k_sign(T x) { return x > (T)0 ? (T)1 : x < (T)0 ? (T)-1 : x; }
inline T k_sigmoid(T x) { return (T)1 / ((T)1 + exp(-x)); }
inline T k_gelu(T x) { return (T)0.5 * x * ((T)1 + erf(x * (T)0.70710678118654752440)); }
inline T k_gelu_tanh(T x)
{
  return (T)0.5 * x * ((T)1 + tanh((T)0.79788456080286535588 * (x + (T)0.044715 * x * x * x)));
}
/* log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|). */
inline T k_softplus(T x) { return fmax(x, (T)0) + log1p(exp(-fabs(x))); }
/* NumPy remainder: the result takes the divisor's sign. */
inline T k_remainder(T a, T b)
{
  T r = fmod(a, b);
  if (r != (T)0) {
    if ((r < (T)0) != (b < (T)0))
      r += b;
  } else {
    r = copysign((T)0, b);
  }
  return r;
}
#else
#define k_add(a, b) ((T)((UT)(a) + (UT)(b)))
#define k_sub(a, b) ((T)((UT)(a) - (UT)(b)))
#define k_mul(a, b) ((T)((UT)(a) * (UT)(b)))
#define k_neg(x) ((T)((UT)0 - (UT)(x)))
#define k_isnan(x) 0
#define k_isinf(x) 0
#define k_isfinite(x) 1
#if defined(KILN_DT_BOOL)
#define k_bitwise_not(x) ((T)((x) == (T)0))
#else
#define k_bitwise_not(x) ((T)~(x))
#endif
inline T k_abs(T x) { return KILN_SIGNED && x < (T)0 ? k_neg(x) : x; }
inline T k_sign(T x) { return (T)((x > (T)0) - (KILN_SIGNED && x < (T)0)); }
inline T k_div(T a, T b)
{
  if (b == (T)0)
    return (T)0;
  if (KILN_SIGNED && b == (T)-1)
    return k_neg(a); /* INT_MIN / -1 wraps instead of trapping */
  return a / b;
}
inline T k_fmod(T a, T b)
{
  if (b == (T)0 || (KILN_SIGNED && b == (T)-1))
    return (T)0;
  return a % b;
}
inline T k_remainder(T a, T b)
{
  T r = k_fmod(a, b);
  if (KILN_SIGNED && r != (T)0 && ((r < (T)0) != (b < (T)0)))
    r += b;
  return r;
}
inline T k_shl(T a, T b)
{
  if ((KILN_SIGNED && b < (T)0) || b >= (T)KILN_BITS)
    return (T)0;
  return (T)((UT)a << (UT)b);
}
inline T k_shr(T a, T b)
{
  if ((KILN_SIGNED && b < (T)0) || b >= (T)KILN_BITS)
    return KILN_SIGNED && a < (T)0 ? (T)-1 : (T)0;
  return a >> b;
}
#endif

#define k_relu(x) ((x) < (T)0 ? (T)0 : (x))
/* NaN-propagating max/min (NumPy maximum/minimum), plain compare for integers. */
#define k_max(a, b) (((a) > (b) || (a) != (a)) ? (a) : (b))
#define k_min(a, b) (((a) < (b) || (a) != (a)) ? (a) : (b))

/* ---- one kernel per op-table row ----
 * Names are pasted before any expansion: the OpenCL headers may define
 * builtins such as cos or max as macros. */
#define UNARY_BODY(kname, res, expr)                                                      \
  kernel void kname(global const T *xs, ulong xoff, global KILN_RES_##res *ys,    \
                           ulong yoff, ulong n)                                          \
  {                                                                                      \
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {                   \
      T x = xs[xoff + i];                                                                \
      ys[yoff + i] = (KILN_RES_##res)(expr);                                             \
    }                                                                                    \
  }
#define UNARY_ROW(E, name, cls, res, expr) KILN_GEN_IF(cls, UNARY_BODY, unary_##name, res, expr)
KILN_UNARY_OPS(UNARY_ROW)

/* Element offsets of operands for flat output index i under broadcasting. */
inline void
bcast_index(ulong i, uint ndim, const kiln_bcast *bc, uint nops, ulong *off)
{
  for (uint k = 0; k < nops; k++)
    off[k] = 0;
  for (uint d = ndim; d-- > 0;) {
    ulong c = i % bc->shape[d];
    i /= bc->shape[d];
    for (uint k = 0; k < nops; k++)
      off[k] += c * bc->stride[k][d];
  }
}

#define BINARY_BODY(kname, res, expr)                                                     \
  kernel void kname(global const T *as, ulong aoff, T ascal, global const T *bs,  \
                            ulong boff, T bscal, global KILN_RES_##res *cs, ulong coff,   \
                            ulong n, uint ndim, kiln_bcast bc, uint flags)                \
  {                                                                                      \
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {                   \
      ulong ia = i, ib = i;                                                              \
      if (flags & 4u) {                                                                  \
        ulong off[2];                                                                    \
        bcast_index(i, ndim, &bc, 2, off);                                               \
        ia = off[0];                                                                     \
        ib = off[1];                                                                     \
      }                                                                                  \
      T a = (flags & 1u) ? ascal : as[aoff + ia];                                        \
      T b = (flags & 2u) ? bscal : bs[boff + ib];                                        \
      cs[coff + i] = (KILN_RES_##res)(expr);                                             \
    }                                                                                    \
  }
#define BINARY_ROW(E, name, cls, res, expr) KILN_GEN_IF(cls, BINARY_BODY, binary_##name, res, expr)
KILN_BINARY_OPS(BINARY_ROW)

kernel void
where_values(global const uchar *conds, ulong condoff, global const T *as, ulong aoff,
             global const T *bs, ulong boff, global T *out, ulong outoff, ulong n, uint ndim,
             kiln_bcast bc, uint flags)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    ulong off[3] = {i, i, i};
    if (flags & 4u)
      bcast_index(i, ndim, &bc, 3, off);
    out[outoff + i] = conds[condoff + off[0]] ? as[aoff + off[1]] : bs[boff + off[2]];
  }
}

/* min(max(x, lo), hi) written with compares so NaN in x passes through. */
kernel void
clamp_values(global const T *xs, ulong xoff, global T *ys, ulong yoff, ulong n, T lo, T hi)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    T x = xs[xoff + i];
    x = x < lo ? lo : x;
    ys[yoff + i] = x > hi ? hi : x;
  }
}
