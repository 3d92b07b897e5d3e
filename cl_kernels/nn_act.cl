/*
 * nn family, flat kernels: activations and pointwise losses, one forward and one backward
 * kernel per row of include/kiln/nn_table.h.
 *
 * Build options: common.cl's (-DT=..., -DKILN_DT_...=1); tensors are `global ST *` moved
 * through KILN_LOAD/KILN_STORE, arithmetic in T. Tunables (lib/ops/nn.c, kiln__nn_knobs_get:
 * device defaults, KILN_DEBUG_NN and the tests' hook): KILN_NN_ITEMS (elements per work-item,
 * a work-group apart so a group's accesses stay contiguous; 1, 2, 4 or 8: 4 on GPUs, 1 on
 * CPUs); KILN_NN_ERF (1: gelu's erfc is kiln's own f32 one below for f32 and the half types,
 * kiln's own f64 one for f64, 0: OpenCL's erfc); KILN_EXP64 (f64 on CPU devices: kiln's own
 * exp, exp64.clh).
 * Kernels (offsets in elements, n elements, grid-stride loops: any global size works):
 *   act_fwd_<name>(x, xoff, y, yoff, n, p0, p1)
 *   act_bwd_<name>(g, goff, v, voff, dx, dxoff, n, p0, p1)
 *   loss_<name>(x, xoff, y, yoff, w, woff, wlen, out, outoff, part, n, p0, flags)
 *     flags 1: reduce (each work-group writes its sum to part[group], a T buffer; out unused;
 *     needs a power-of-two local size), else out[i] = loss; 2: w (pos_weight, element
 *     i % wlen) present, else w = 1.
 *   lossb_<name>(gout, goff, x, xoff, y, yoff, w, woff, wlen, dx, dxoff, n, p0, scale, flags)
 *     dx[i] = g * scale * d loss / d x, g = gout[i] with flags 4, else gout[0]; 2 as above.
 */
#include "common.cl"
#include "kiln/nn_table.h"

#ifndef KILN_NN_ITEMS
#define KILN_NN_ITEMS 1
#endif

#define SELU_ALPHA ((T)1.6732632423543772848170429916717)
#define SELU_SCALE ((T)1.0507009873554804934193349852946)
#define INV_SQRT2 ((T)0.70710678118654752440)
#define INV_SQRT2PI ((T)0.39894228040143267794)

/* KILN_NN_FAST (f32 and the half types): the exps and reciprocals of sigmoid, silu, gelu_tanh
 * and kiln's f32 erfc take native_exp and native_recip (on NVIDIA one special-function
 * instruction each, where OpenCL's exp and division take several: these activations are near
 * the instruction budget of a copy's bandwidth). */
#ifndef KILN_NN_FAST
#define KILN_NN_FAST 0
#endif
/* KILN_EXP64 (f64 on CPU devices, as in the elementwise family): every f64 exp below is
 * kiln's branch-free one (exp64.clh), which PoCL vectorizes where its builtin runs element by
 * element. */
#if KILN_EXP64 && defined(KILN_DT_F64)
#include "exp64.clh"
#endif
#if KILN_NN_FAST && !defined(KILN_DT_F64)
#define A_EXP(x) native_exp(x)
#define A_RCP(x) native_recip(x)
#elif KILN_EXP64 && defined(KILN_DT_F64)
#define A_EXP(x) kiln_exp64(x)
#define A_RCP(x) ((T)1 / (x))
#else
#define A_EXP(x) exp(x)
#define A_RCP(x) ((T)1 / (x))
#endif
/* e^y for y <= 0 (gelu's Gaussian): kiln_exp64_neg where KILN_EXP64 is set (on PoCL f64 gelu
 * ran 1.3x-1.4x and gelu_bwd 1.6x faster than with OpenCL's exp; on an H100 a form of it was
 * 1-2% slower, so GPUs keep OpenCL's: docs/nn.md) */
#if KILN_EXP64 && defined(KILN_DT_F64)
#define A_EXP_NEG(y) kiln_exp64_neg(y)
#else
#define A_EXP_NEG(y) exp(y)
#endif

/* 1 / (1 + e^-x), without overflow warnings mattering: exp(-x) = inf gives 0. */
inline T a_sigmoid(T x) { return A_RCP((T)1 + A_EXP(-x)); }
/* log(1 + e^x) without overflow. */
inline T a_softplus(T x) { return fmax(x, (T)0) + log1p(A_EXP(-fabs(x))); }
#ifndef KILN_NN_ERF
#define KILN_NN_ERF 1
#endif
#if defined(KILN_DT_F64)
/* e^(-x^2 / 2) with x^2 split exactly by an fma (hh + hl): the rounding of x^2 alone would
 * cost up to 1e-13 of the result in gelu's tails. |x| is capped at 40 so that inf and NaN
 * give 0 rather than NaN from inf - inf (the result is 0 from |x| = 38.6 on, from 37.63 with
 * kiln_exp64_neg). */
inline T a_gauss(T x)
{
  double xs = fmin(fabs(x), 40.0), hh = xs * xs, hl = fma(xs, xs, -hh);
  return A_EXP_NEG(-0.5 * hh) * (1.0 - 0.5 * hl);
}
#else
inline T a_gauss(T x) { return exp((T)-0.5 * x * x); }
#endif
#if KILN_NN_ERF && (defined(KILN_DT_F32) || KILN_IS_HALF)
/*
 * erfc(z) for z >= 0 in float: Numerical Recipes' erfcc, t exp(-z^2 + P(t)) with
 * t = 1 / (1 + z / 2), a Chebyshev fit whose fractional error is below 1.2e-7 for every
 * z >= 0. Evaluated in float its relative error stays near 1e-6 (the rounding of z^2 - P
 * inside the exp) down to the subnormals, at one exp and one division. With OpenCL's erfc
 * (KILN_NN_ERF=0), gelu over 2^26 floats took 2.3x the time of a copy on the H200.
 * z = inf gives 0, NaN gives NaN.
 */
inline float a_erfc_pos(float z)
{
  float t = A_RCP(1.0f + 0.5f * z);
  float p = 0.17087277f;
  p = fma(p, t, -0.82215223f);
  p = fma(p, t, 1.48851587f);
  p = fma(p, t, -1.13520398f);
  p = fma(p, t, 0.27886807f);
  p = fma(p, t, -0.18628806f);
  p = fma(p, t, 0.09678418f);
  p = fma(p, t, 0.37409196f);
  p = fma(p, t, 1.00002368f);
  p = fma(p, t, -1.26551223f);
  return t * A_EXP(p - z * z);
}
/* The standard normal CDF P(N(0, 1) <= x) = erfc(-x / sqrt 2) / 2, the small side computed
 * directly, so that the lower tail keeps its relative accuracy. */
inline T a_phi(T x)
{
  T h = (T)0.5 * a_erfc_pos(fabs(x) * INV_SQRT2);
  return x < (T)0 ? h : (T)1 - h;
}
#elif KILN_NN_ERF && defined(KILN_DT_F64)
/*
 * The standard normal CDF in double from erfc(z), z = |x| / sqrt 2, in Shepherd and
 * Laframboise's form (Math. Comp. 36, 1981; CUDA's erfc takes it too): (1 + 2z) e^(z^2)
 * erfc(z) is smooth in t = (z - 4) / (z + 4) over all z >= 0, here a polynomial of degree 23
 * (Chebyshev interpolation at 24 nodes, computed with mpmath; relative error 3e-16 evaluated in
 * double). No branch (a warp's elements take one path), one exp, one reciprocal; e^(-z^2) is
 * a_gauss(x). OpenCL's f64 erfc made gelu 2.3x slower than PyTorch on the H200. z is capped
 * (at 40 / sqrt 2, where a_gauss is 0) so that inf and NaN stay finite in t: NaN gives NaN
 * through x itself.
 */
inline T a_phi(T x)
{
  double z = fmin(fabs(x), 40.0) * 0.70710678118654752440;
  /* One reciprocal for both quotients: r = 1 / d, d = (z + 4)(1 + 2z) in [4, 1900], from
   * float's (within 2.5 ulp, OpenCL's bound) and one third-order Newton step, r0 (1 + e +
   * e^2) with e = 1 - d r0: relative error e^3 < 1e-20, then the rounding. The f64 division
   * it replaces is a longer sequence on GPUs (a reciprocal, its refinement and a check for
   * the slow path). */
  double zp = z + 4.0, zc = 1.0 + 2.0 * z, d = zp * zc, r = (double)(1.0f / (float)d);
  double e = fma(-d, r, 1.0);
  r = fma(r, fma(e, e, e), r);
  double t = (z - 4.0) * zc * r;
  double p = 9.655408225482863e-10;
  p = fma(p, t, 1.5712153638319064e-09);
  p = fma(p, t, -1.2544825403855518e-08);
  p = fma(p, t, -1.6357383982124768e-08);
  p = fma(p, t, 1.0683442926744586e-07);
  p = fma(p, t, 7.111912428010423e-08);
  p = fma(p, t, -8.218020654813044e-07);
  p = fma(p, t, 2.980596055322769e-07);
  p = fma(p, t, 5.707239573693257e-06);
  p = fma(p, t, -1.1225140354449658e-05);
  p = fma(p, t, -2.439811794207995e-05);
  p = fma(p, t, 0.0001506231178516207);
  p = fma(p, t, -0.00019925700412184815);
  p = fma(p, t, -0.0007577737141838885);
  p = fma(p, t, 0.005031970032548695);
  p = fma(p, t, -0.01619773397992426);
  p = fma(p, t, 0.0371675155318432);
  p = fma(p, t, -0.06633036582050367);
  p = fma(p, t, 0.09373283499865172);
  p = fma(p, t, -0.10103906603585294);
  p = fma(p, t, 0.0680970542546862);
  p = fma(p, t, 0.015379652102610162);
  p = fma(p, t, -0.1396211168405625);
  p = fma(p, t, 1.2329951186255526);
  double h = 0.5 * a_gauss(x) * p * (zp * r);
  return x < 0.0 ? h : 1.0 - h;
}
#else
/* erfc rather than 1 + erf: no cancellation in the lower tail (elementwise.cl's k_gelu). */
inline T a_phi(T x) { return (T)0.5 * erfc(-x * INV_SQRT2); }
#endif
/* 0.5 x (1 + erf(x / sqrt 2)) = x Phi(x). */
inline T a_gelu(T x) { return x * a_phi(x); }
inline T a_gelu_d(T x) { return a_phi(x) + x * INV_SQRT2PI * a_gauss(x); }
#define GELU_K ((T)0.79788456080286535588) /* sqrt(2 / pi) */
#define GELU_C ((T)0.044715)
inline T a_gelu_tanh(T x)
{
  T u = GELU_K * (x + GELU_C * x * x * x);
  return x * A_RCP((T)1 + A_EXP((T)-2 * u));
}
inline T a_gelu_tanh_d(T x)
{
  T u = GELU_K * (x + GELU_C * x * x * x);
  T t = tanh(u);
  return (T)0.5 * ((T)1 + t) + (T)0.5 * x * ((T)1 - t * t) * GELU_K * ((T)1 + (T)3 * GELU_C * x * x);
}
inline T a_silu_d(T x)
{
  T s = a_sigmoid(x);
  return s * ((T)1 + x * ((T)1 - s));
}
inline T a_mish_d(T x)
{
  T t = tanh(a_softplus(x));
  return t + x * a_sigmoid(x) * ((T)1 - t * t);
}

/* Losses. */
inline T l_sign(T d) { return d > (T)0 ? (T)1 : d < (T)0 ? (T)-1 : d; }
inline T l_smooth_l1(T d, T beta)
{
  T a = fabs(d);
  return a < beta ? (T)0.5 * d * d / beta : a - (T)0.5 * beta;
}
inline T l_smooth_l1_d(T d, T beta) { return fabs(d) < beta ? d / beta : l_sign(d); }
inline T l_huber(T d, T delta)
{
  T a = fabs(d);
  return a < delta ? (T)0.5 * d * d : delta * (a - (T)0.5 * delta);
}
inline T l_huber_d(T d, T delta) { return fabs(d) < delta ? d : delta * l_sign(d); }
/* PyTorch clamps each log at -100, so that x = 0 or 1 give a finite loss. */
inline T l_bce(T x, T y)
{
  return -(y * fmax(log(x), (T)-100) + ((T)1 - y) * fmax(log((T)1 - x), (T)-100));
}

/*
 * The flat loop: FLAT_BEGIN(n) visits this work-item's KILN_NN_ITEMS elements FLAT_I(e),
 * one work-group apart (FLAT_EACH(e) skips those past n), then the next block.
 */
#define FLAT_BEGIN(n)                                                                    \
  const ulong lsz_ = get_local_size(0), blk_ = lsz_ * KILN_NN_ITEMS;                     \
  for (ulong i0_ = get_group_id(0) * blk_ + get_local_id(0); i0_ < (n);                 \
       i0_ += get_num_groups(0) * blk_)
#define FLAT_I(e) (i0_ + (ulong)(e) * lsz_)
#define FLAT_EACH(e, n)                                                                  \
  for (uint e = 0; e < KILN_NN_ITEMS; e++)                                               \
    if (FLAT_I(e) < (n))

/* Declares T av[], bv[] and loads this work-item's elements of ap and bp into them, all loads
 * before any use. */
#define FLAT_LOAD2(av, ap, bv, bp, n)                                                    \
  T av[KILN_NN_ITEMS], bv[KILN_NN_ITEMS];                                                \
  FLAT_EACH(e, n)                                                                        \
  {                                                                                      \
    av[e] = KILN_LOAD(ap, FLAT_I(e));                                                    \
    bv[e] = KILN_LOAD(bp, FLAT_I(e));                                                    \
  }

/*
 * KILN_NN_VEC 4 (activations only): each work-item's items are 4-vectors of consecutive
 * elements (one 16-byte access in f32 instead of four, one index computation per four), when
 * every operand's offset is a multiple of 4 (checked here: the buffers themselves are
 * aligned far beyond); the last n % 4 elements, and any unaligned call, take the scalar
 * loop.
 */
#ifndef KILN_NN_VEC
#define KILN_NN_VEC 1
#endif
#define T4 KILN_CAT(T, 4)
#if defined(KILN_DT_F16)
#define LOAD4(p, i) vload_half4(0, (p) + (i))
#define STORE4(p, i, v) vstore_half4_rte(v, 0, (p) + (i))
#elif defined(KILN_DT_BF16)
#define LOAD4(p, i) as_float4(convert_uint4(vload4(0, (p) + (i))) << 16)
#define STORE4(p, i, v)                                                                  \
  vstore4((ushort4)(kiln_f32_to_bf16((v).x), kiln_f32_to_bf16((v).y),                    \
                    kiln_f32_to_bf16((v).z), kiln_f32_to_bf16((v).w)),                   \
          0, (p) + (i))
#else
#define LOAD4(p, i) (*(global const T4 *)((p) + (i)))
#define STORE4(p, i, v) (*(global T4 *)((p) + (i)) = (v))
#endif
/* r.c = expr with the scalar names bound to component c of their vectors. */
#define VEC_FWD1(r, xv, c, expr)                                                         \
  {                                                                                      \
    T x = (xv).c;                                                                        \
    (r).c = (T)(expr);                                                                   \
  }
#define VEC_BWD1(r, gv, vv, c, expr)                                                     \
  {                                                                                      \
    T g = (gv).c, v = (vv).c;                                                            \
    (r).c = (T)(expr);                                                                   \
  }
/* The vector loop of a flat kernel over the n / 4 whole vectors (a work-item's KILN_NN_ITEMS
 * vectors a work-group apart), then the scalar tail from nv = 4 (n / 4) on. */
#define VEC_BEGIN(n)                                                                     \
  const ulong n4_ = (n) / 4;                                                             \
  for (ulong q0_ = get_group_id(0) * (lsz_ * KILN_NN_ITEMS) + get_local_id(0); q0_ < n4_;  \
       q0_ += get_num_groups(0) * (lsz_ * KILN_NN_ITEMS))
#define VEC_EACH(e) for (uint e = 0; e < KILN_NN_ITEMS; e++) if (q0_ + (ulong)(e) * lsz_ < n4_)
#define VEC_I(e) (4 * (q0_ + (ulong)(e) * lsz_))

/* Names are pasted before any expansion: builtins such as tanh may be macros. */
#define ACT_KERNELS(E, name, vcol, fwd, bwd)                                             \
  kernel void act_fwd_##name(global const ST *xs, ulong xoff, global ST *ys, ulong yoff, \
                             ulong n, T p0, T p1)                                        \
  {                                                                                      \
    global const ST *xp = xs + xoff;                                                     \
    global ST *yp = ys + yoff;                                                           \
    ulong nv_ = 0;                                                                       \
    if (KILN_NN_VEC == 4 && ((xoff | yoff) & 3) == 0) {                                  \
      const ulong lsz_ = get_local_size(0);                                              \
      VEC_BEGIN(n)                                                                       \
      {                                                                                  \
        T4 xv[KILN_NN_ITEMS];                                                            \
        VEC_EACH(e) xv[e] = LOAD4(xp, VEC_I(e));                                         \
        VEC_EACH(e)                                                                      \
        {                                                                                \
          T4 r;                                                                          \
          VEC_FWD1(r, xv[e], x, fwd) VEC_FWD1(r, xv[e], y, fwd)                          \
          VEC_FWD1(r, xv[e], z, fwd) VEC_FWD1(r, xv[e], w, fwd)                          \
          STORE4(yp, VEC_I(e), r);                                                       \
        }                                                                                \
      }                                                                                  \
      nv_ = 4 * n4_;                                                                     \
    }                                                                                    \
    xp += nv_;                                                                           \
    yp += nv_;                                                                           \
    const ulong nt_ = n - nv_;                                                           \
    FLAT_BEGIN(nt_)                                                                      \
    {                                                                                    \
      T xv[KILN_NN_ITEMS];                                                               \
      FLAT_EACH(e, nt_) xv[e] = KILN_LOAD(xp, FLAT_I(e));                                \
      FLAT_EACH(e, nt_)                                                                  \
      {                                                                                  \
        T x = xv[e];                                                                     \
        KILN_STORE(yp, FLAT_I(e), (T)(fwd));                                             \
      }                                                                                  \
    }                                                                                    \
  }                                                                                      \
  kernel void act_bwd_##name(global const ST *gs, ulong goff, global const ST *vs,       \
                             ulong voff, global ST *dxs, ulong dxoff, ulong n, T p0, T p1) \
  {                                                                                      \
    global const ST *gp = gs + goff;                                                     \
    global const ST *vp = vs + voff;                                                     \
    global ST *dxp = dxs + dxoff;                                                        \
    ulong nv_ = 0;                                                                       \
    if (KILN_NN_VEC == 4 && ((goff | voff | dxoff) & 3) == 0) {                          \
      const ulong lsz_ = get_local_size(0);                                              \
      VEC_BEGIN(n)                                                                       \
      {                                                                                  \
        T4 gv[KILN_NN_ITEMS], vv[KILN_NN_ITEMS];                                         \
        VEC_EACH(e)                                                                      \
        {                                                                                \
          gv[e] = LOAD4(gp, VEC_I(e));                                                   \
          vv[e] = LOAD4(vp, VEC_I(e));                                                   \
        }                                                                                \
        VEC_EACH(e)                                                                      \
        {                                                                                \
          T4 r;                                                                          \
          VEC_BWD1(r, gv[e], vv[e], x, bwd) VEC_BWD1(r, gv[e], vv[e], y, bwd)            \
          VEC_BWD1(r, gv[e], vv[e], z, bwd) VEC_BWD1(r, gv[e], vv[e], w, bwd)            \
          STORE4(dxp, VEC_I(e), r);                                                      \
        }                                                                                \
      }                                                                                  \
      nv_ = 4 * n4_;                                                                     \
    }                                                                                    \
    gp += nv_;                                                                           \
    vp += nv_;                                                                           \
    dxp += nv_;                                                                          \
    const ulong nt_ = n - nv_;                                                           \
    FLAT_BEGIN(nt_)                                                                      \
    {                                                                                    \
      FLAT_LOAD2(gv, gp, vv, vp, nt_)                                                    \
      FLAT_EACH(e, nt_)                                                                  \
      {                                                                                  \
        T g = gv[e], v = vv[e];                                                          \
        KILN_STORE(dxp, FLAT_I(e), (T)(bwd));                                            \
      }                                                                                  \
    }                                                                                    \
  }
KILN_ACTIVATIONS(ACT_KERNELS)

/* Sum of every work-item's v into part[group] (power-of-two local size). */
inline void group_sum_store(T v, local T *sh, global T *part)
{
  uint lid = get_local_id(0), lsz = get_local_size(0);
  sh[lid] = v;
  for (uint off = lsz >> 1; off > 0; off >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < off)
      sh[lid] += sh[lid + off];
  }
  if (lid == 0)
    part[get_group_id(0)] = sh[0];
}

/* x, y and the weight w (1 without one, flags bit 2) of element e in the loss kernels. */
#define LOSS_XYW(e)                                                                      \
  T x = xv[e], y = yv[e];                                                                \
  T w = (flags & 2u) ? KILN_LOAD(wp, FLAT_I(e) % wlen) : (T)1;

#define LOSS_KERNELS(E, name, fwd, bwd)                                                  \
  kernel void loss_##name(global const ST *xs, ulong xoff, global const ST *ys,          \
                          ulong yoff, global const ST *ws, ulong woff, ulong wlen,       \
                          global ST *outs, ulong outoff, global T *part, ulong n, T p0,  \
                          uint flags, local T *sh)                                       \
  {                                                                                      \
    global const ST *xp = xs + xoff;                                                     \
    global const ST *yp = ys + yoff;                                                     \
    global const ST *wp = ws + woff;                                                     \
    global ST *op = outs + outoff;                                                       \
    T acc = (T)0;                                                                        \
    FLAT_BEGIN(n)                                                                        \
    {                                                                                    \
      FLAT_LOAD2(xv, xp, yv, yp, n)                                                      \
      FLAT_EACH(e, n)                                                                    \
      {                                                                                  \
        LOSS_XYW(e)                                                                      \
        T l = (fwd);                                                                     \
        if (flags & 1u)                                                                  \
          acc += l;                                                                      \
        else                                                                             \
          KILN_STORE(op, FLAT_I(e), l);                                                  \
      }                                                                                  \
    }                                                                                    \
    if (flags & 1u)                                                                      \
      group_sum_store(acc, sh, part);                                                    \
  }                                                                                      \
  kernel void lossb_##name(global const ST *gos, ulong gooff, global const ST *xs,       \
                           ulong xoff, global const ST *ys, ulong yoff,                  \
                           global const ST *ws, ulong woff, ulong wlen, global ST *dxs,  \
                           ulong dxoff, ulong n, T p0, T scale, uint flags)              \
  {                                                                                      \
    global const ST *gop = gos + gooff;                                                  \
    global const ST *xp = xs + xoff;                                                     \
    global const ST *yp = ys + yoff;                                                     \
    global const ST *wp = ws + woff;                                                     \
    global ST *dxp = dxs + dxoff;                                                        \
    T g0 = (flags & 4u) ? (T)0 : KILN_LOAD(gop, 0) * scale;                              \
    FLAT_BEGIN(n)                                                                        \
    {                                                                                    \
      FLAT_LOAD2(xv, xp, yv, yp, n)                                                      \
      FLAT_EACH(e, n)                                                                    \
      {                                                                                  \
        LOSS_XYW(e)                                                                      \
        T g = (flags & 4u) ? KILN_LOAD(gop, FLAT_I(e)) * scale : g0;                     \
        KILN_STORE(dxp, FLAT_I(e), g * (T)(bwd));                                        \
      }                                                                                  \
    }                                                                                    \
  }
KILN_POINT_LOSSES(LOSS_KERNELS)
