/*
 * Elementwise kernels: one kernel per row of include/kiln/op_table.h that
 * accepts T, plus where and clamp.
 *
 * Build options: see common.cl (-DT=..., -DKILN_DT_...=1).
 * Kernels:
 *   unary_<name>(x, xoff, y, yoff, n)
 *   binary_<name>(a, aoff, a_scalar, b, boff, b_scalar, c, coff, n, ndim, bcast, flags)
 *     flags: 1 = a is the scalar, 2 = b is the scalar, 4 = broadcast (use bcast
 *     strides: operand 0 = a, 1 = b; launched 2-D, dimension 0 over the innermost
 *     merged dimension, 1 over rows); otherwise 1-D over n contiguous elements.
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
/*
 * GELU and its tanh approximation, rewritten without the cancellation of
 * 1 + erf(.) and 1 + tanh(.) near -1, which cost all relative accuracy for
 * negative x (and, with a tanh that stops 1 ulp short of -1, gave
 * gelu_tanh(-100) = -3e-6 and gelu_tanh(-inf) = -inf):
 *   0.5 x (1 + erf(x / sqrt 2))  == 0.5 x erfc(-x / sqrt 2)
 *   0.5 x (1 + tanh(u))          == x / (1 + e^(-2u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
 */
inline T k_gelu(T x) { return (T)0.5 * x * erfc(-x * (T)0.70710678118654752440); }
inline T k_gelu_tanh(T x)
{
  T u = (T)0.79788456080286535588 * (x + (T)0.044715 * x * x * x);
  return x / ((T)1 + exp((T)-2 * u));
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

/*
 * Broadcast launches are 2-D: dimension 0 walks the innermost merged
 * dimension (no division), dimension 1 the outer rows. A row's operand
 * offsets take one div/mod per dimension between the outermost and the
 * innermost: none at all for the common two-dimension case. Scalars, not
 * private arrays, so that PoCL can still vectorise across work-items.
 */
#define BCAST_ROW_OFFSET(r, ndim, bc, k, out)        \
  do {                                               \
    ulong rr_ = (r);                                 \
    out = 0;                                         \
    for (uint d_ = (ndim)-1; d_ > 1;) { /* ndim >= 1 */ \
      d_--;                                          \
      out += (rr_ % (bc).shape[d_]) * (bc).stride[k][d_]; \
      rr_ /= (bc).shape[d_];                         \
    }                                                \
    out += rr_ * (bc).stride[k][0];                  \
  } while (0)

#define BINARY_BODY(kname, res, expr)                                                    \
  kernel void kname(global const T *as, ulong aoff, T ascal, global const T *bs,         \
                    ulong boff, T bscal, global KILN_RES_##res *cs, ulong coff, ulong n, \
                    uint ndim, kiln_bcast bc, uint flags)                                 \
  {                                                                                      \
    if (!(flags & 4u)) {                                                                 \
      for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {                 \
        T a = (flags & 1u) ? ascal : as[aoff + i];                                       \
        T b = (flags & 2u) ? bscal : bs[boff + i];                                       \
        cs[coff + i] = (KILN_RES_##res)(expr);                                           \
      }                                                                                  \
      return;                                                                            \
    }                                                                                    \
    ulong inner = bc.shape[ndim - 1], sa = bc.stride[0][ndim - 1];                       \
    ulong sb = bc.stride[1][ndim - 1];                                                   \
    for (ulong r = get_global_id(1); r * inner < n; r += get_global_size(1)) {           \
      ulong oa, ob;                                                                      \
      BCAST_ROW_OFFSET(r, ndim, bc, 0, oa);                                              \
      BCAST_ROW_OFFSET(r, ndim, bc, 1, ob);                                              \
      for (ulong j = get_global_id(0); j < inner; j += get_global_size(0)) {             \
        T a = as[aoff + oa + j * sa];                                                    \
        T b = bs[boff + ob + j * sb];                                                    \
        cs[coff + r * inner + j] = (KILN_RES_##res)(expr);                               \
      }                                                                                  \
    }                                                                                    \
  }
#define BINARY_ROW(E, name, cls, res, expr) KILN_GEN_IF(cls, BINARY_BODY, binary_##name, res, expr)
KILN_BINARY_OPS(BINARY_ROW)

kernel void
where_values(global const uchar *conds, ulong condoff, global const T *as, ulong aoff,
             global const T *bs, ulong boff, global T *out, ulong outoff, ulong n, uint ndim,
             kiln_bcast bc, uint flags)
{
  if (!(flags & 4u)) {
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
      out[outoff + i] = conds[condoff + i] ? as[aoff + i] : bs[boff + i];
    return;
  }
  ulong inner = bc.shape[ndim - 1];
  ulong sc = bc.stride[0][ndim - 1], sa = bc.stride[1][ndim - 1], sb = bc.stride[2][ndim - 1];
  for (ulong r = get_global_id(1); r * inner < n; r += get_global_size(1)) {
    ulong oc, oa, ob;
    BCAST_ROW_OFFSET(r, ndim, bc, 0, oc);
    BCAST_ROW_OFFSET(r, ndim, bc, 1, oa);
    BCAST_ROW_OFFSET(r, ndim, bc, 2, ob);
    for (ulong j = get_global_id(0); j < inner; j += get_global_size(0))
      out[outoff + r * inner + j] =
          conds[condoff + oc + j * sc] ? as[aoff + oa + j * sa] : bs[boff + ob + j * sb];
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
