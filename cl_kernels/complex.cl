/*
 * Complex elementwise kernels (c64, c128): one kernel per row of
 * KILN_COMPLEX_UNARY_OPS / KILN_COMPLEX_BINARY_OPS (include/kiln/op_table.h),
 * where, and make_complex (kiln_complex).
 *
 * Build options: -DT=float2 -DKILN_DT_C64=1 or -DT=double2 -DKILN_DT_C128=1
 * (common.cl: .x is the real part, .y the imaginary part, RT the part type).
 * Kernels (arguments as in elementwise.cl, offsets in elements of the
 * pointer's type):
 *   cunary_<ENUM>(x, xoff, y, yoff, n)      y is T, RT or uchar (the row's result)
 *   cbinary_<ENUM>(a, aoff, a_scalar, b, boff, b_scalar, c, coff, n, ndim, bcast, flags)
 *   make_complex(re, reoff, re_scalar, im, imoff, im_scalar, out, outoff, n, ndim, bcast, flags)
 *     re and im are RT; out is T
 *   where_values(cond, condoff, a, aoff, b, boff, out, outoff, n, ndim, bcast, flags)
 * flags as in elementwise.cl (1, 2: scalar operand; 4: broadcast, 2-D launch;
 * 8: the grid covers every element).
 * Tunable: KILN_EW_ITEMS (elements per work-item of flat launches, a
 * work-group apart). KILN_EW_VEC stays 1 (the host passes 1 too): one
 * element is already an 8- or 16-byte float2/double2 access, and add, sub
 * and mul take no branch, so they move memory as a copy of the same bytes
 * does.
 *
 * Special values follow C99 Annex G for division, exp, log and sqrt; the
 * trigonometric and hyperbolic functions use the textbook formulas (with
 * overflow-safe large arguments) and keep real inputs real.
 */
#include "common.cl"
#include "kiln/op_table.h"
#undef KILN_EW_VEC
#define KILN_EW_VEC 1
#include "ew_loops.clh"

#if !KILN_IS_COMPLEX
#error complex.cl builds only for c64 and c128
#endif

#if defined(KILN_DT_C128)
#define C_MAX DBL_MAX
/* Below this a quotient's numerator is scaled up so that no intermediate is subnormal. */
#define C_SMALL (DBL_MIN * 0x1p54)
#define C_SMALL_EXP 54
/* exp(x) overflows above ~709.78; beyond this exp and the hyperbolic functions go by halves. */
#define C_EXP_BIG 709.0
/* tanh(x) rounds to +-1 beyond this. */
#define C_TANH_BIG 22.0
#else
#define C_MAX FLT_MAX
#define C_SMALL (FLT_MIN * 0x1p25f)
#define C_SMALL_EXP 25
#define C_EXP_BIG 88.0f
#define C_TANH_BIG 9.0f
#endif

#define CPLX(re, im) ((T)((RT)(re), (RT)(im)))

/* The textbook product, as NumPy computes it: no branches, so it runs at memory speed. */
inline T c_mul(T a, T b) { return CPLX(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

/* Non-finite operands or a zero divisor: the plain quotient with C99 Annex G's recovery. */
inline T c_div_special(T a, T b)
{
  RT c = b.x, d = b.y, den = c * c + d * d;
  RT x = (a.x * c + a.y * d) / den, y = (a.y * c - a.x * d) / den;
  if (isnan(x) && isnan(y)) {
    if (den == (RT)0 && (!isnan(a.x) || !isnan(a.y))) {
      x = copysign((RT)INFINITY, c) * a.x;
      y = copysign((RT)INFINITY, c) * a.y;
    } else if ((isinf(a.x) || isinf(a.y)) && isfinite(c) && isfinite(d)) {
      RT p = copysign(isinf(a.x) ? (RT)1 : (RT)0, a.x);
      RT q = copysign(isinf(a.y) ? (RT)1 : (RT)0, a.y);
      x = (RT)INFINITY * (p * c + q * d);
      y = (RT)INFINITY * (q * c - p * d);
    } else if ((isinf(c) || isinf(d)) && isfinite(a.x) && isfinite(a.y)) {
      c = copysign(isinf(c) ? (RT)1 : (RT)0, c);
      d = copysign(isinf(d) ? (RT)1 : (RT)0, d);
      x = (RT)0 * (a.x * c + a.y * d);
      y = (RT)0 * (a.y * c - a.x * d);
    }
  }
  return CPLX(x, y);
}

/*
 * a / b by Smith's algorithm on a divisor scaled by a power of two to
 * [1, 2): |r| <= 1 and the denominator lies in [1, 4], so neither overflows
 * or underflows. A numerator near the overflow threshold is halved twice and
 * a tiny one scaled up (exactly), so that no intermediate overflows or goes
 * subnormal; only the final scaling can, when the quotient itself does.
 */
inline T c_div(T a, T b)
{
  RT m = fmax(fabs(b.x), fabs(b.y));
  if (!(m > (RT)0) || isinf(m) || !isfinite(a.x) || !isfinite(a.y))
    return c_div_special(a, b);
  int kb = ilogb(m);
  RT c = ldexp(b.x, -kb), d = ldexp(b.y, -kb);
  RT na = fmax(fabs(a.x), fabs(a.y));
  int s = na > C_MAX * (RT)0.25 ? -2 : na < C_SMALL ? C_SMALL_EXP : 0;
  RT p = ldexp(a.x, s), q = ldexp(a.y, s);
  RT x, y;
  if (fabs(c) >= fabs(d)) {
    RT r = d / c, den = c + d * r;
    x = (p + q * r) / den;
    y = (q - p * r) / den;
  } else {
    RT r = c / d, den = d + c * r;
    x = (p * r + q) / den;
    y = (q * r - p) / den;
  }
  return CPLX(ldexp(x, -kb - s), ldexp(y, -kb - s));
}

inline T c_recip(T x) { return c_div(CPLX(1, 0), x); }

inline T c_exp(T z)
{
  RT x = z.x, y = z.y;
  if (y == (RT)0) /* real input stays real: exp(NaN + i0) = NaN + i0 */
    return CPLX(exp(x), y);
  if (isinf(x) && !isfinite(y)) /* -inf: +-0 +- i0; +inf: +-inf + iNaN */
    return x < (RT)0 ? CPLX(0, 0) : CPLX(x, y - y);
  RT c = cos(y), s = sin(y);
  if (x > C_EXP_BIG) { /* exp(x) overflows where exp(x) cos(y) may not */
    RT e = exp(x * (RT)0.5);
    return CPLX((e * c) * e, (e * s) * e);
  }
  RT e = exp(x);
  return CPLX(e * c, e * s);
}

/*
 * log|z| + i arg z (branch cut along the negative real axis). Near |z| = 1,
 * log1p(|z|^2 - 1) / 2 keeps the real part's relative accuracy.
 */
inline T c_log(T z)
{
  RT ax = fabs(z.x), ay = fabs(z.y);
  RT mx = fmax(ax, ay), mn = fmin(ax, ay);
  RT re;
  if (isfinite(ax) && isfinite(ay) && mx >= (RT)0.5 && mx <= (RT)2) {
    re = (RT)0.5 * log1p((mx - (RT)1) * (mx + (RT)1) + mn * mn);
  } else if (isfinite(ax) && isfinite(ay) && mx > (RT)0) {
    /* |z| scaled by 2^-k: hypot neither overflows (|z| > max) nor goes subnormal */
    int k = ilogb(mx);
    re = log(hypot(ldexp(z.x, -k), ldexp(z.y, -k))) + (RT)k * (RT)0.69314718055994530942;
  } else {
    re = log(hypot(z.x, z.y)); /* zeros, infinities, NaN */
  }
  return CPLX(re, atan2(z.y, z.x));
}

/*
 * The principal square root (branch cut along the negative real axis, the
 * sign of a zero imaginary part picks the side), by Kahan's formula on z
 * scaled by an even power of two to near 1, so nothing overflows or
 * underflows.
 */
inline T c_sqrt(T z)
{
  RT x = z.x, y = z.y;
  if (isinf(y))
    return CPLX(INFINITY, y);
  if (isnan(x))
    return CPLX(x, x);
  if (isinf(x)) {
    if (x > (RT)0)
      return CPLX(x, isnan(y) ? y : copysign((RT)0, y));
    return CPLX(isnan(y) ? y : (RT)0, copysign((RT)INFINITY, y));
  }
  if (isnan(y))
    return CPLX(y, y);
  if (x == (RT)0 && y == (RT)0)
    return CPLX(0, y);
  int k = ilogb(fmax(fabs(x), fabs(y))) & ~1;
  RT xs = ldexp(x, -k), ys = ldexp(y, -k);
  RT t = sqrt((fabs(xs) + hypot(xs, ys)) * (RT)0.5);
  RT re = t, im = ys / (t * (RT)2);
  if (xs < (RT)0) {
    re = fabs(ys) / (t * (RT)2);
    im = copysign(t, ys);
  }
  return CPLX(ldexp(re, k / 2), ldexp(im, k / 2));
}

/*
 * sinh(z) = sinh x cos y + i cosh x sin y and cosh(z) = cosh x cos y + i
 * sinh x sin y. For |x| > C_EXP_BIG, sinh x ~ +-cosh x ~ e^|x| / 2, taken as
 * two halves so that a small cos or sin can still bring the product back.
 */
inline T c_sinh_cosh(T z, int want_cosh)
{
  RT x = z.x, y = z.y;
  if (y == (RT)0) /* real input stays real */
    return CPLX(want_cosh ? cosh(x) : sinh(x), want_cosh ? y * copysign((RT)1, x) : y);
  RT c = cos(y), s = sin(y);
  if (fabs(x) > C_EXP_BIG) {
    RT e = exp(fabs(x) * (RT)0.5), h = (RT)0.5 * e, sg = copysign((RT)1, x);
    RT hc = (h * c) * e, hs = (h * s) * e;
    return want_cosh ? CPLX(hc, sg * hs) : CPLX(sg * hc, hs);
  }
  RT sh = sinh(x), ch = cosh(x);
  return want_cosh ? CPLX(ch * c, sh * s) : CPLX(sh * c, ch * s);
}

inline T c_sinh(T z) { return c_sinh_cosh(z, 0); }
inline T c_cosh(T z) { return c_sinh_cosh(z, 1); }

/* Kahan's tanh: beta = 1 + tan^2 y, tanh z = (beta rho s + i t) / (1 + beta s^2). */
inline T c_tanh(T z)
{
  RT x = z.x, y = z.y;
  if (y == (RT)0)
    return CPLX(tanh(x), y);
  if (fabs(x) > C_TANH_BIG) {
    RT im = isfinite(y) ? (RT)4 * sin(y) * cos(y) * exp((RT)-2 * fabs(x)) : copysign((RT)0, y);
    return CPLX(copysign((RT)1, x), im);
  }
  RT t = tan(y), beta = (RT)1 + t * t, s = sinh(x), rho = sqrt((RT)1 + s * s);
  RT den = (RT)1 + beta * s * s;
  return CPLX(beta * rho * s / den, t / den);
}

/* sin z = -i sinh(iz), cos z = cosh(iz), tan z = -i tanh(iz); iz = -y + ix. */
inline T c_sin(T z)
{
  T w = c_sinh(CPLX(-z.y, z.x));
  return CPLX(w.y, -w.x);
}
inline T c_cos(T z) { return c_cosh(CPLX(-z.y, z.x)); }
inline T c_tan(T z)
{
  T w = c_tanh(CPLX(-z.y, z.x));
  return CPLX(w.y, -w.x);
}

/*
 * NumPy's complex power: a^0 = 1; 0^b = 0 for real b > 0, else NaN + iNaN;
 * integer exponents below 100 in magnitude by repeated squaring (exact
 * signs, no log); everything else exp(b log a).
 */
inline T c_pow(T a, T b)
{
  if (b.x == (RT)0 && b.y == (RT)0)
    return CPLX(1, 0);
  if (a.x == (RT)0 && a.y == (RT)0)
    return b.x > (RT)0 && b.y == (RT)0 ? CPLX(0, 0) : CPLX(NAN, NAN);
  if (b.y == (RT)0 && b.x == rint(b.x) && fabs(b.x) < (RT)100) {
    int n = (int)b.x, m = n < 0 ? -n : n;
    T r = CPLX(1, 0), p = a;
    for (; m; m >>= 1) {
      if (m & 1)
        r = c_mul(r, p);
      p = c_mul(p, p);
    }
    return n < 0 ? c_recip(r) : r;
  }
  return c_exp(c_mul(b, c_log(a)));
}

/* ---- kernels ---- */

#define C_RES_SAME T
#define C_RES_REAL RT
#define C_RES_BOOL uchar

#define CUNARY_BODY(kname, OT, expr)                                                          \
  kernel void kname(global const T *xs, ulong xoff, global OT *ys, ulong yoff, ulong n)      \
  {                                                                                          \
    global const T *xp = xs + xoff;                                                          \
    global OT *yp = ys + yoff;                                                               \
    FLAT_VECTORS(n)                                                                          \
    {                                                                                        \
      T xv[KILN_EW_ITEMS];                                                                   \
      FLAT_EACH(e) xv[e] = xp[FLAT_SLOT(e)];                                                 \
      FLAT_EACH(e)                                                                           \
      {                                                                                      \
        T x = xv[e];                                                                         \
        yp[FLAT_SLOT(e)] = (OT)(expr);                                                       \
      }                                                                                      \
    }                                                                                        \
  }
#define CUNARY_ROW(E, res, expr) CUNARY_BODY(cunary_##E, C_RES_##res, expr)
KILN_COMPLEX_UNARY_OPS(CUNARY_ROW)

/* One element of a broadcast binary op (see CBINARY_BODY); c_in_t is the kernel's input type. */
#define CBINARY_ELEM(OT, expr)                                                                \
  {                                                                                          \
    ulong oa, ob;                                                                            \
    BCAST_ROW_OFFSET(r, ndim, bc, 0, oa);                                                    \
    BCAST_ROW_OFFSET(r, ndim, bc, 1, ob);                                                    \
    c_in_t a = as[aoff + oa + j * sa];                                                       \
    c_in_t b = bs[boff + ob + j * sb];                                                       \
    cs[coff + r * inner + j] = (OT)(expr);                                                   \
  }

/* Binary kernels over inputs of type IT (T, or RT for make_complex) into OT. */
#define CBINARY_BODY(kname, IT, OT, expr)                                                     \
  kernel void kname(global const IT *as, ulong aoff, IT ascal, global const IT *bs,          \
                    ulong boff, IT bscal, global OT *cs, ulong coff, ulong n, uint ndim,      \
                    kiln_bcast bc, uint flags)                                               \
  {                                                                                          \
    typedef IT c_in_t;                                                                       \
    if (!(flags & 4u)) {                                                                     \
      global const IT *ap = as + aoff, *bp = bs + boff;                                      \
      global OT *cp = cs + coff;                                                             \
      FLAT_VECTORS(n)                                                                        \
      {                                                                                      \
        IT av[KILN_EW_ITEMS], bv[KILN_EW_ITEMS];                                             \
        FLAT_EACH(e)                                                                         \
        {                                                                                    \
          av[e] = (flags & 1u) ? ascal : ap[FLAT_SLOT(e)];                                   \
          bv[e] = (flags & 2u) ? bscal : bp[FLAT_SLOT(e)];                                   \
        }                                                                                    \
        FLAT_EACH(e)                                                                         \
        {                                                                                    \
          IT a = av[e], b = bv[e];                                                           \
          cp[FLAT_SLOT(e)] = (OT)(expr);                                                     \
        }                                                                                    \
      }                                                                                      \
      return;                                                                                \
    }                                                                                        \
    ulong inner = BC_LAST(bc.shape, ndim), sa = BC_LAST(bc.stride[0], ndim);                           \
    ulong sb = BC_LAST(bc.stride[1], ndim);                                                       \
    BCAST_EACH(CBINARY_ELEM, OT, expr)                                                       \
  }
#define CBINARY_ROW(E, res, expr) CBINARY_BODY(cbinary_##E, T, C_RES_##res, expr)
KILN_COMPLEX_BINARY_OPS(CBINARY_ROW)

/* kiln_complex: out = re + i im, broadcasting like a binary op. */
CBINARY_BODY(make_complex, RT, T, CPLX(a, b))


kernel void
where_values(global const uchar *conds, ulong condoff, global const T *as, ulong aoff,
             global const T *bs, ulong boff, global T *out, ulong outoff, ulong n, uint ndim,
             kiln_bcast bc, uint flags)
{
  if (!(flags & 4u)) {
    FLAT_VECTORS(n)
    {
      FLAT_EACH(e)
      {
        ulong i = FLAT_SLOT(e);
        out[outoff + i] = conds[condoff + i] ? as[aoff + i] : bs[boff + i];
      }
    }
    return;
  }
  ulong inner = BC_LAST(bc.shape, ndim);
  ulong sc = BC_LAST(bc.stride[0], ndim), sa = BC_LAST(bc.stride[1], ndim), sb = BC_LAST(bc.stride[2], ndim);
  BCAST_EACH(WHERE_ELEM, _, _)
}
