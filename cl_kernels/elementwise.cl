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
 *
 * Flat (non-broadcast) launches have two compile-time tunables, both 1 by
 * default: KILN_EW_VEC, elements moved as one vector access, and
 * KILN_EW_ITEMS, vectors per work-item, spaced one work-group apart so that a
 * group's accesses stay contiguous. Loads of all of an item's vectors are
 * issued before any store. GPUs whose cost per work-item, not memory, limits
 * 4-byte types want more items; PoCL wants wide vectors (defaults and
 * measurements: kiln__ew_default_shape, docs/tuning.md).
 * The host launches ceil(n / (VEC * ITEMS)) items rounded up to whole groups,
 * passes VEC > 1 only when every vector-accessed operand's offset is a
 * multiple of VEC (buffers themselves are aligned far beyond a vector), and
 * the tail loop takes the last n % VEC elements.
 */
#include "common.cl"
#include "kiln/op_table.h"
#include "ew_loops.clh"

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

#if KILN_EW_VEC > 1
#define VEC_OF(t) KILN_CAT(t, KILN_EW_VEC)
#else
#define VEC_OF(t) t
#endif
/* One vector of t and its lanes. */
#define LANES(t) union { VEC_OF(t) v; t s[KILN_EW_VEC]; }
#define VAT(t, p, v) (((global VEC_OF(t) *)(p))[v])
#define VAT_CONST(t, p, v) (((global const VEC_OF(t) *)(p))[v])

/* ---- one kernel per op-table row ----
 * Names are pasted before any expansion: the OpenCL headers may define
 * builtins such as cos or max as macros. */
#define UNARY_BODY(kname, res, expr)                                                      \
  kernel void kname(global const T *xs, ulong xoff, global KILN_RES_##res *ys,           \
                    ulong yoff, ulong n)                                                 \
  {                                                                                      \
    global const T *xp = xs + xoff;                                                      \
    global KILN_RES_##res *yp = ys + yoff;                                               \
    FLAT_VECTORS(n)                                                                      \
    {                                                                                    \
      LANES(T) xv[KILN_EW_ITEMS];                                                        \
      FLAT_EACH(e) xv[e].v = VAT_CONST(T, xp, FLAT_SLOT(e));                             \
      FLAT_EACH(e)                                                                       \
      {                                                                                  \
        LANES(KILN_RES_##res) yv;                                                        \
        FLAT_LANES(l)                                                                    \
        {                                                                                \
          T x = xv[e].s[l];                                                              \
          yv.s[l] = (KILN_RES_##res)(expr);                                              \
        }                                                                                \
        VAT(KILN_RES_##res, yp, FLAT_SLOT(e)) = yv.v;                                    \
      }                                                                                  \
    }                                                                                    \
    FLAT_TAIL(i, n)                                                                      \
    {                                                                                    \
      T x = xp[i];                                                                       \
      yp[i] = (KILN_RES_##res)(expr);                                                    \
    }                                                                                    \
  }
#define UNARY_ROW(E, name, cls, res, expr) KILN_GEN_IF(cls, UNARY_BODY, unary_##name, res, expr)
KILN_UNARY_OPS(UNARY_ROW)

/* One element of a broadcast binary op (see BINARY_BODY). */
#define BINARY_ELEM(res, expr)                                                            \
  {                                                                                      \
    ulong oa, ob;                                                                        \
    BCAST_ROW_OFFSET(r, ndim, bc, 0, oa);                                                \
    BCAST_ROW_OFFSET(r, ndim, bc, 1, ob);                                                \
    T a = as[aoff + oa + j * sa];                                                        \
    T b = bs[boff + ob + j * sb];                                                        \
    cs[coff + r * inner + j] = (KILN_RES_##res)(expr);                                   \
  }

#define BINARY_BODY(kname, res, expr)                                                    \
  kernel void kname(global const T *as, ulong aoff, T ascal, global const T *bs,         \
                    ulong boff, T bscal, global KILN_RES_##res *cs, ulong coff, ulong n, \
                    uint ndim, kiln_bcast bc, uint flags)                                 \
  {                                                                                      \
    if (!(flags & 4u)) {                                                                 \
      global const T *ap = as + aoff, *bp = bs + boff;                                   \
      global KILN_RES_##res *cp = cs + coff;                                             \
      FLAT_VECTORS(n)                                                                    \
      {                                                                                  \
        LANES(T) av[KILN_EW_ITEMS], bv[KILN_EW_ITEMS];                                   \
        FLAT_EACH(e)                                                                     \
        {                                                                                \
          if (!(flags & 1u))                                                             \
            av[e].v = VAT_CONST(T, ap, FLAT_SLOT(e));                                    \
          if (!(flags & 2u))                                                             \
            bv[e].v = VAT_CONST(T, bp, FLAT_SLOT(e));                                    \
        }                                                                                \
        FLAT_EACH(e)                                                                     \
        {                                                                                \
          LANES(KILN_RES_##res) cv;                                                      \
          FLAT_LANES(l)                                                                  \
          {                                                                              \
            T a = (flags & 1u) ? ascal : av[e].s[l];                                     \
            T b = (flags & 2u) ? bscal : bv[e].s[l];                                     \
            cv.s[l] = (KILN_RES_##res)(expr);                                            \
          }                                                                              \
          VAT(KILN_RES_##res, cp, FLAT_SLOT(e)) = cv.v;                                  \
        }                                                                                \
      }                                                                                  \
      FLAT_TAIL(i, n)                                                                    \
      {                                                                                  \
        T a = (flags & 1u) ? ascal : ap[i];                                              \
        T b = (flags & 2u) ? bscal : bp[i];                                              \
        cp[i] = (KILN_RES_##res)(expr);                                                  \
      }                                                                                  \
      return;                                                                            \
    }                                                                                    \
    ulong inner = bc.shape[ndim - 1], sa = bc.stride[0][ndim - 1];                       \
    ulong sb = bc.stride[1][ndim - 1];                                                   \
    BCAST_EACH(BINARY_ELEM, res, expr)                                                   \
  }
#define BINARY_ROW(E, name, cls, res, expr) KILN_GEN_IF(cls, BINARY_BODY, binary_##name, res, expr)
KILN_BINARY_OPS(BINARY_ROW)

/* One element of a broadcast where (the arguments are unused). */
#define WHERE_ELEM(u1, u2)                                                                \
  {                                                                                      \
    ulong oc, oa, ob;                                                                    \
    BCAST_ROW_OFFSET(r, ndim, bc, 0, oc);                                                \
    BCAST_ROW_OFFSET(r, ndim, bc, 1, oa);                                                \
    BCAST_ROW_OFFSET(r, ndim, bc, 2, ob);                                                \
    out[outoff + r * inner + j] =                                                        \
        conds[condoff + oc + j * sc] ? as[aoff + oa + j * sa] : bs[boff + ob + j * sb];  \
  }

kernel void
where_values(global const uchar *conds, ulong condoff, global const T *as, ulong aoff,
             global const T *bs, ulong boff, global T *out, ulong outoff, ulong n, uint ndim,
             kiln_bcast bc, uint flags)
{
  if (!(flags & 4u)) {
    global const uchar *cp = conds + condoff;
    global const T *ap = as + aoff, *bp = bs + boff;
    global T *op = out + outoff;
    FLAT_VECTORS(n)
    {
      LANES(uchar) cv[KILN_EW_ITEMS];
      LANES(T) av[KILN_EW_ITEMS], bv[KILN_EW_ITEMS];
      FLAT_EACH(e)
      {
        cv[e].v = VAT_CONST(uchar, cp, FLAT_SLOT(e));
        av[e].v = VAT_CONST(T, ap, FLAT_SLOT(e));
        bv[e].v = VAT_CONST(T, bp, FLAT_SLOT(e));
      }
      FLAT_EACH(e)
      {
        LANES(T) ov;
        FLAT_LANES(l) ov.s[l] = cv[e].s[l] ? av[e].s[l] : bv[e].s[l];
        VAT(T, op, FLAT_SLOT(e)) = ov.v;
      }
    }
    FLAT_TAIL(i, n) op[i] = cp[i] ? ap[i] : bp[i];
    return;
  }
  ulong inner = bc.shape[ndim - 1];
  ulong sc = bc.stride[0][ndim - 1], sa = bc.stride[1][ndim - 1], sb = bc.stride[2][ndim - 1];
  BCAST_EACH(WHERE_ELEM, _, _)
}

/* min(max(x, lo), hi) written with compares so NaN in x passes through. */
inline T k_clamp(T x, T lo, T hi)
{
  x = x < lo ? lo : x;
  return x > hi ? hi : x;
}

kernel void
clamp_values(global const T *xs, ulong xoff, global T *ys, ulong yoff, ulong n, T lo, T hi)
{
  global const T *xp = xs + xoff;
  global T *yp = ys + yoff;
  FLAT_VECTORS(n)
  {
    LANES(T) xv[KILN_EW_ITEMS];
    FLAT_EACH(e) xv[e].v = VAT_CONST(T, xp, FLAT_SLOT(e));
    FLAT_EACH(e)
    {
      LANES(T) yv;
      FLAT_LANES(l) yv.s[l] = k_clamp(xv[e].s[l], lo, hi);
      VAT(T, yp, FLAT_SLOT(e)) = yv.v;
    }
  }
  FLAT_TAIL(i, n) yp[i] = k_clamp(xp[i], lo, hi);
}
