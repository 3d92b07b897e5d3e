/*
 * Elementwise kernels: one kernel per row of include/kiln/op_table.h that
 * accepts T, plus where and clamp.
 *
 * Build options: see common.cl (-DT=..., -DKILN_DT_...=1).
 * f16 and bf16 (KILN_IS_HALF): buffers hold ST (half / ushort), the kernels
 * load into float, compute in float with the same expressions and store
 * rounded to nearest even; scalar arguments (ascal, bscal, lo, hi) are float.
 * where moves the 16-bit patterns untouched.
 * Kernels:
 *   unary_<name>(x, xoff, y, yoff, n)
 *   binary_<name>(a, aoff, a_scalar, b, boff, b_scalar, c, coff, n, ndim, bcast, flags)
 *     flags: 1 = a is the scalar, 2 = b is the scalar, 4 = broadcast (use bcast
 *     strides: operand 0 = a, 1 = b; launched 2-D, dimension 0 over the innermost
 *     merged dimension, 1 over rows); otherwise 1-D over n contiguous elements.
 *     8 = the broadcast grid covers every element; 16 (with 8) = its items take
 *     KILN_EW_VEC consecutive elements each (BINARY_VELEM).
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
 * f16 vectors move through vloada_halfN / vstorea_halfN_rte, bf16 ones as
 * ushortN with a vector conversion.
 * The host launches ceil(n / (VEC * ITEMS)) items rounded up to whole groups,
 * passes VEC > 1 only when every vector-accessed operand's offset is a
 * multiple of VEC (buffers themselves are aligned far beyond a vector), and
 * the tail loop takes the last n % VEC elements.
 */
#include "common.cl"
#include "kiln/op_table.h"
#include "ew_loops.clh"

/* ---- helpers named in the op table ---- */
#if KILN_EXP64 && defined(KILN_DT_F64)
/* e^x for doubles on CPU devices (KILN_EXP64, set by the elementwise family's build options
 * there): kiln_exp64 (exp64.clh). k_exp is it there (the op table's exp, and sigmoid,
 * gelu_tanh and softplus below), else the builtin. */
#include "exp64.clh"
#define k_exp kiln_exp64
#else
#define k_exp exp
#endif
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
inline T k_sigmoid(T x) { return (T)1 / ((T)1 + k_exp(-x)); }
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
  return x / ((T)1 + k_exp((T)-2 * u));
}
/* log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|). */
inline T k_softplus(T x) { return fmax(x, (T)0) + log1p(k_exp(-fabs(x))); }
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

/*
 * Vector v of a global ST buffer as a vector of T (VLOAD_T) and back
 * (VSTORE_T, rounding to nearest even for the 16-bit floats). The offsets the
 * host passes keep every vector aligned to its size, so the aligned forms of
 * the half built-ins apply.
 */
#if defined(KILN_DT_F16) && KILN_EW_VEC > 1
#define VLOAD_T(p, v) KILN_CAT(vloada_half, KILN_EW_VEC)((v), (p))
#define VSTORE_T(p, v, x) KILN_CAT(KILN_CAT(vstorea_half, KILN_EW_VEC), _rte)((x), (v), (p))
#elif defined(KILN_DT_F16)
#define VLOAD_T(p, v) vload_half((v), (p))
#define VSTORE_T(p, v, x) vstore_half_rte((x), (v), (p))
#elif defined(KILN_DT_BF16)
/* kiln_bf16_to_f32 / kiln_f32_to_bf16 of common.cl, a vector at a time. */
#define VEC_AS(t, x) KILN_CAT(as_, VEC_OF(t))(x)
#define VLOAD_T(p, v) VEC_AS(float, KILN_CAT(convert_, VEC_OF(uint))(VAT_CONST(ushort, p, v)) << 16)
#if KILN_EW_VEC > 1
KILN_BF16_FROM_FLOATV(KILN_EW_VEC)
#else
KILN_BF16_FROM_FLOATV()
#endif
#define VSTORE_T(p, v, x) (VAT(ushort, p, v) = kiln_bf16_from_floatv(x))
#else
#define VLOAD_T(p, v) VAT_CONST(T, p, v)
#define VSTORE_T(p, v, x) (VAT(T, p, v) = (x))
#endif

/* Storage of an op-table result: SAME is ST (through the conversions), BOOL is uchar. */
#define KILN_RES_ST_SAME ST
#define KILN_RES_ST_BOOL uchar
#define VSTORE_RES_SAME(p, v, x) VSTORE_T(p, v, x)
#define VSTORE_RES_BOOL(p, v, x) (VAT(uchar, p, v) = (x))
#define STORE_RES_SAME(p, i, x) KILN_STORE(p, i, x)
#define STORE_RES_BOOL(p, i, x) ((p)[i] = (x))

/* where moves elements without computing: the 16-bit floats as their bit patterns. */
#if KILN_IS_HALF
#define WT ushort
#else
#define WT T
#endif

/* ---- one kernel per op-table row ----
 * Names are pasted before any expansion: the OpenCL headers may define
 * builtins such as cos or max as macros. */
#define UNARY_BODY(kname, res, expr)                                                      \
  kernel void kname(global const ST *xs, ulong xoff, global KILN_RES_ST_##res *ys,       \
                    ulong yoff, ulong n)                                                 \
  {                                                                                      \
    global const ST *xp = xs + xoff;                                                     \
    global KILN_RES_ST_##res *yp = ys + yoff;                                            \
    FLAT_VECTORS(n)                                                                      \
    {                                                                                    \
      LANES(T) xv[KILN_EW_ITEMS];                                                        \
      FLAT_EACH(e) xv[e].v = VLOAD_T(xp, FLAT_SLOT(e));                                  \
      FLAT_EACH(e)                                                                       \
      {                                                                                  \
        LANES(KILN_RES_##res) yv;                                                        \
        FLAT_LANES(l)                                                                    \
        {                                                                                \
          T x = xv[e].s[l];                                                              \
          yv.s[l] = (KILN_RES_##res)(expr);                                              \
        }                                                                                \
        VSTORE_RES_##res(yp, FLAT_SLOT(e), yv.v);                                        \
      }                                                                                  \
    }                                                                                    \
    FLAT_TAIL(i, n)                                                                      \
    {                                                                                    \
      T x = KILN_LOAD(xp, i);                                                            \
      STORE_RES_##res(yp, i, (KILN_RES_##res)(expr));                                    \
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
    T a = KILN_LOAD(as, aoff + oa + j * sa);                                             \
    T b = KILN_LOAD(bs, boff + ob + j * sb);                                             \
    STORE_RES_##res(cs, coff + r * inner + j, (KILN_RES_##res)(expr));                   \
  }

/*
 * KILN_EW_VEC consecutive elements of a broadcast row at once (flag 16: the
 * host checked that the inner length is a multiple of the width, each
 * operand's inner stride is 0 or 1 and every tensor offset a multiple of the
 * width, so every vector below is aligned to its size: an operand read
 * along the row has outer strides that are multiples of the row length):
 * vector loads, or one element repeated, then a vector store. CPU devices
 * get their SIMD from these vectors (PoCL does not vectorise the broadcast
 * kernels across work-items), GPUs 16-byte accesses; not for f16 and bf16,
 * whose vectors convert.
 */
#if KILN_EW_VEC > 1 && !KILN_IS_HALF
#define VLOADU(p) (*(global const VEC_OF(T) *)(p))
#define VSTOREU(res, x, p) (*(global VEC_OF(KILN_RES_##res) *)(p) = (x))
#define BINARY_VELEM(res, expr)                                                           \
  {                                                                                      \
    ulong oa, ob;                                                                        \
    BCAST_ROW_OFFSET(r, ndim, bc, 0, oa);                                                \
    BCAST_ROW_OFFSET(r, ndim, bc, 1, ob);                                                \
    LANES(T) av, bv;                                                                     \
    LANES(KILN_RES_##res) cv;                                                            \
    if (sa)                                                                              \
      av.v = VLOADU(as + aoff + oa + j);                                                 \
    else                                                                                 \
      av.v = (VEC_OF(T))(as[aoff + oa]);                                                 \
    if (sb)                                                                              \
      bv.v = VLOADU(bs + boff + ob + j);                                                 \
    else                                                                                 \
      bv.v = (VEC_OF(T))(bs[boff + ob]);                                                 \
    FLAT_LANES(l)                                                                        \
    {                                                                                    \
      T a = av.s[l];                                                                     \
      T b = bv.s[l];                                                                     \
      cv.s[l] = (KILN_RES_##res)(expr);                                                  \
    }                                                                                    \
    VSTOREU(res, cv.v, cs + coff + r * inner + j);                                          \
  }
#define BINARY_BCAST(res, expr)                                                           \
  if ((flags & 24u) == 24u)                                                              \
    BCAST_EACH_VEC(BINARY_VELEM, res, expr)                                              \
  else                                                                                   \
    BCAST_EACH(BINARY_ELEM, res, expr)
#else
#define BINARY_BCAST(res, expr) BCAST_EACH(BINARY_ELEM, res, expr)
#endif

#define BINARY_BODY(kname, res, expr)                                                    \
  kernel void kname(global const ST *as, ulong aoff, T ascal, global const ST *bs,       \
                    ulong boff, T bscal, global KILN_RES_ST_##res *cs, ulong coff,       \
                    ulong n,                                                             \
                    uint ndim, kiln_bcast bc, uint flags)                                 \
  {                                                                                      \
    if (!(flags & 4u)) {                                                                 \
      global const ST *ap = as + aoff, *bp = bs + boff;                                  \
      global KILN_RES_ST_##res *cp = cs + coff;                                          \
      FLAT_VECTORS(n)                                                                    \
      {                                                                                  \
        LANES(T) av[KILN_EW_ITEMS], bv[KILN_EW_ITEMS];                                   \
        FLAT_EACH(e)                                                                     \
        {                                                                                \
          if (!(flags & 1u))                                                             \
            av[e].v = VLOAD_T(ap, FLAT_SLOT(e));                                         \
          if (!(flags & 2u))                                                             \
            bv[e].v = VLOAD_T(bp, FLAT_SLOT(e));                                         \
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
          VSTORE_RES_##res(cp, FLAT_SLOT(e), cv.v);                                      \
        }                                                                                \
      }                                                                                  \
      FLAT_TAIL(i, n)                                                                    \
      {                                                                                  \
        T a = (flags & 1u) ? ascal : KILN_LOAD(ap, i);                                   \
        T b = (flags & 2u) ? bscal : KILN_LOAD(bp, i);                                   \
        STORE_RES_##res(cp, i, (KILN_RES_##res)(expr));                                  \
      }                                                                                  \
      return;                                                                            \
    }                                                                                    \
    ulong inner = bc.shape[ndim - 1], sa = bc.stride[0][ndim - 1];                       \
    ulong sb = bc.stride[1][ndim - 1];                                                   \
    BINARY_BCAST(res, expr)                                                              \
  }
#define BINARY_ROW(E, name, cls, res, expr) KILN_GEN_IF(cls, BINARY_BODY, binary_##name, res, expr)
KILN_BINARY_OPS(BINARY_ROW)


kernel void
where_values(global const uchar *conds, ulong condoff, global const WT *as, ulong aoff,
             global const WT *bs, ulong boff, global WT *out, ulong outoff, ulong n, uint ndim,
             kiln_bcast bc, uint flags)
{
  if (!(flags & 4u)) {
    global const uchar *cp = conds + condoff;
    global const WT *ap = as + aoff, *bp = bs + boff;
    global WT *op = out + outoff;
    FLAT_VECTORS(n)
    {
      LANES(uchar) cv[KILN_EW_ITEMS];
      LANES(WT) av[KILN_EW_ITEMS], bv[KILN_EW_ITEMS];
      FLAT_EACH(e)
      {
        cv[e].v = VAT_CONST(uchar, cp, FLAT_SLOT(e));
        av[e].v = VAT_CONST(WT, ap, FLAT_SLOT(e));
        bv[e].v = VAT_CONST(WT, bp, FLAT_SLOT(e));
      }
      FLAT_EACH(e)
      {
        LANES(WT) ov;
        FLAT_LANES(l) ov.s[l] = cv[e].s[l] ? av[e].s[l] : bv[e].s[l];
        VAT(WT, op, FLAT_SLOT(e)) = ov.v;
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
clamp_values(global const ST *xs, ulong xoff, global ST *ys, ulong yoff, ulong n, T lo, T hi)
{
  global const ST *xp = xs + xoff;
  global ST *yp = ys + yoff;
  FLAT_VECTORS(n)
  {
    LANES(T) xv[KILN_EW_ITEMS];
    FLAT_EACH(e) xv[e].v = VLOAD_T(xp, FLAT_SLOT(e));
    FLAT_EACH(e)
    {
      LANES(T) yv;
      FLAT_LANES(l) yv.s[l] = k_clamp(xv[e].s[l], lo, hi);
      VSTORE_T(yp, FLAT_SLOT(e), yv.v);
    }
  }
  FLAT_TAIL(i, n) KILN_STORE(yp, i, k_clamp(KILN_LOAD(xp, i), lo, hi));
}
