/*
 * nn family, flat kernels: activations and pointwise losses, one forward and one backward
 * kernel per row of include/kiln/nn_table.h.
 *
 * Build options: common.cl's (-DT=..., -DKILN_DT_...=1); tensors are `global ST *` moved
 * through KILN_LOAD/KILN_STORE, arithmetic in T. Tunables (lib/ops/nn.c, kiln__nn_knobs_get:
 * device defaults, KILN_DEBUG_NN and the tests' hook): KILN_NN_ITEMS (elements per work-item,
 * a work-group apart so a group's accesses stay contiguous; 1, 2, 4 or 8: 4 on GPUs, 1 on
 * CPUs); KILN_NN_ERF (1: gelu's erfc is kiln's own f32 one below for f32 and the half types,
 * kiln's own f64 one for f64, 0: OpenCL's erfc); KILN_NN_VEC (activations: 1, 4 on GPUs, 8
 * or 16 on CPUs with vector math, below); KILN_NN_FAST; KILN_EXP64 (f64 on CPU devices:
 * kiln's own exp, exp64.clh). The activations' helpers are in nn_act_math.clh.
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
#ifndef KILN_NN_VEC
#define KILN_NN_VEC 1
#endif
/* Vector math (KILN_NN_VEC 8 or 16, CPU devices): the activations compute on whole vectors of
 * KILN_NN_VEC elements through overloads of their helpers, which clang gives OpenCL C
 * (KILN_OV); PoCL then emits vector instructions where it ran the grid-stride loop of scalars
 * element by element. Other compilers take the scalar loop (the grid-stride loops cover any
 * launch). */
#if KILN_NN_VEC >= 8 && defined(__clang__)
#define NN_VMATH 1
#define KILN_OV __attribute__((overloadable))
#else
#define NN_VMATH 0
#define KILN_OV
#if KILN_NN_VEC >= 8
#undef KILN_NN_VEC
#define KILN_NN_VEC 1
#endif
#endif
#if KILN_EXP64 && defined(KILN_DT_F64)
#include "exp64.clh"
#if NN_VMATH
#define KILN_E64_N KILN_NN_VEC
#include "exp64.clh"
#undef KILN_E64_N
#endif
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

#ifndef KILN_NN_ERF
#define KILN_NN_ERF 1
#endif
#define GELU_K ((T)0.79788456080286535588) /* sqrt(2 / pi) */
#define GELU_C ((T)0.044715)
#define AT_SFX
#include "nn_act_math.clh"
#if NN_VMATH
#define AT_SFX KILN_NN_VEC
#include "nn_act_math.clh"
#endif

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
 * KILN_NN_VEC (activations only): each work-item's items are vectors of KILN_NN_VEC
 * consecutive elements, the last n % KILN_NN_VEC elements taking the scalar loop.
 *   4 (GPUs): one 16-byte access in f32 instead of four, one index computation per four; the
 *     expression runs component by component. Only where every operand's offset is a multiple
 *     of 4 (checked here: the buffers themselves are aligned far beyond); any other call takes
 *     the scalar loop.
 *   8, 16 (NN_VMATH, CPU devices): the expression runs on whole vectors (vloadN/vstoreN, any
 *     offset).
 */
#if NN_VMATH
#define NN_VW KILN_NN_VEC
#define VEC_OK(off) 1
#else
#define NN_VW 4 /* also where KILN_NN_VEC is 1: that vector branch is compiled, never taken */
#define VEC_OK(off) (((off) & 3) == 0)
#endif
#define TV KILN_CAT(T, NN_VW)
#if NN_VMATH || KILN_IS_HALF
#if defined(KILN_DT_BF16)
KILN_BF16_FROM_FLOATV(NN_VW)
#endif
#define LOADV(p, i) KILN_VLOAD_ST(NN_VW, (p) + (i))
#define STOREV(p, i, v) KILN_VSTORE_ST(NN_VW, v, (p) + (i))
#else
#define LOADV(p, i) (*(global const TV *)((p) + (i)))
#define STOREV(p, i, v) (*(global TV *)((p) + (i)) = (v))
#endif
#if NN_VMATH
/* r = expr over whole vectors: x (forward), g and v (backward) name vectors. */
#define VEC_FWD(r, xv, expr)                                                             \
  {                                                                                      \
    TV x = (xv);                                                                         \
    (r) = (expr);                                                                        \
  }
#define VEC_BWD(r, gv, vv, expr)                                                         \
  {                                                                                      \
    TV g = (gv), v = (vv);                                                               \
    (r) = (expr);                                                                        \
  }
#else
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
#define VEC_FWD(r, xv, expr)                                                             \
  VEC_FWD1(r, xv, x, expr) VEC_FWD1(r, xv, y, expr) VEC_FWD1(r, xv, z, expr)             \
  VEC_FWD1(r, xv, w, expr)
#define VEC_BWD(r, gv, vv, expr)                                                         \
  VEC_BWD1(r, gv, vv, x, expr) VEC_BWD1(r, gv, vv, y, expr) VEC_BWD1(r, gv, vv, z, expr)  \
  VEC_BWD1(r, gv, vv, w, expr)
#endif
/* The vector loop of a flat kernel over the n / NN_VW whole vectors (a work-item's
 * KILN_NN_ITEMS vectors a work-group apart), then the scalar tail from nv = NN_VW
 * (n / NN_VW) on. */
#define VEC_BEGIN(n)                                                                     \
  const ulong nvec_ = (n) / NN_VW;                                                 \
  for (ulong q0_ = get_group_id(0) * (lsz_ * KILN_NN_ITEMS) + get_local_id(0);           \
       q0_ < nvec_; q0_ += get_num_groups(0) * (lsz_ * KILN_NN_ITEMS))
#define VEC_EACH(e)                                                                      \
  for (uint e = 0; e < KILN_NN_ITEMS; e++)                                               \
    if (q0_ + (ulong)(e) * lsz_ < nvec_)
#define VEC_I(e) (NN_VW * (q0_ + (ulong)(e) * lsz_))

/* Names are pasted before any expansion: builtins such as tanh may be macros. */
#define ACT_KERNELS(E, name, vcol, fwd, bwd)                                             \
  kernel void act_fwd_##name(global const ST *xs, ulong xoff, global ST *ys, ulong yoff, \
                             ulong n, T p0, T p1)                                        \
  {                                                                                      \
    global const ST *xp = xs + xoff;                                                     \
    global ST *yp = ys + yoff;                                                           \
    ulong nv_ = 0;                                                                       \
    if (KILN_NN_VEC > 1 && VEC_OK(xoff | yoff)) {                                        \
      const ulong lsz_ = get_local_size(0);                                              \
      VEC_BEGIN(n)                                                                       \
      {                                                                                  \
        TV xv[KILN_NN_ITEMS];                                                            \
        VEC_EACH(e) xv[e] = LOADV(xp, VEC_I(e));                                         \
        VEC_EACH(e)                                                                      \
        {                                                                                \
          TV r;                                                                          \
          VEC_FWD(r, xv[e], fwd)                                                         \
          STOREV(yp, VEC_I(e), r);                                                       \
        }                                                                                \
      }                                                                                  \
      nv_ = NN_VW * nvec_;                                                           \
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
    if (KILN_NN_VEC > 1 && VEC_OK(goff | voff | dxoff)) {                                \
      const ulong lsz_ = get_local_size(0);                                              \
      VEC_BEGIN(n)                                                                       \
      {                                                                                  \
        TV gv[KILN_NN_ITEMS], vv[KILN_NN_ITEMS];                                         \
        VEC_EACH(e)                                                                      \
        {                                                                                \
          gv[e] = LOADV(gp, VEC_I(e));                                                   \
          vv[e] = LOADV(vp, VEC_I(e));                                                   \
        }                                                                                \
        VEC_EACH(e)                                                                      \
        {                                                                                \
          TV r;                                                                          \
          VEC_BWD(r, gv[e], vv[e], bwd)                                                  \
          STOREV(dxp, VEC_I(e), r);                                                      \
        }                                                                                \
      }                                                                                  \
      nv_ = NN_VW * nvec_;                                                           \
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


/*
 * The losses' vector loops (NN_VMATH, CPU devices; without a weight, flags bit 2, whose index
 * is per element): LOSS_VEC_FWD adds the expression over the n / NN_VW whole vectors into acc
 * (or stores it) and LOSS_VEC_BWD stores the gradient, a contiguous run of vectors per
 * work-item (KILN_RUN_LOOP); both set nv_, where the scalar loop starts. A reducing loss
 * launches few groups (nn_loss.c, loss_groups): one vector per work-item spent its time in the
 * groups' merge trees, and vectors a grid apart defeated the prefetchers.
 */
#if NN_VMATH
#define LOSS_VEC_FWD(fwd)                                                                \
  if (!(flags & 2u)) {                                                                   \
    TV av_ = (TV)0;                                                                      \
    KILN_RUN_LOOP(q, n / NN_VW)                                                          \
    {                                                                                    \
      TV x = LOADV(xp, NN_VW * q), y = LOADV(yp, NN_VW * q), w = (TV)1;                  \
      TV l = (fwd);                                                                      \
      if (flags & 1u)                                                                    \
        av_ += l;                                                                        \
      else                                                                               \
        STOREV(op, NN_VW * q, l);                                                        \
    }                                                                                    \
    acc = KILN_CAT(kiln_hsum, NN_VW)(av_);                                               \
    nv_ = NN_VW * (n / NN_VW);                                                           \
  }
#define LOSS_VEC_BWD(bwd)                                                                \
  if (!(flags & 2u)) {                                                                   \
    KILN_RUN_LOOP(q, n / NN_VW)                                                          \
    {                                                                                    \
      TV x = LOADV(xp, NN_VW * q), y = LOADV(yp, NN_VW * q), w = (TV)1;                  \
      TV g = (flags & 4u) ? LOADV(gop, NN_VW * q) * scale : (TV)g0;                      \
      STOREV(dxp, NN_VW * q, g * (bwd));                                                 \
    }                                                                                    \
    nv_ = NN_VW * (n / NN_VW);                                                           \
  }
#else
#define LOSS_VEC_FWD(fwd)
#define LOSS_VEC_BWD(bwd)
#endif

/* x, y and the weight w (1 without one, flags bit 2) of element e of the loss kernels'
 * scalar loop, element nv_ + FLAT_I(e) of the tensors (the vector loop took those before). */
#define LOSS_XYW_AT(e)                                                                   \
  T x = xv[e], y = yv[e];                                                                \
  T w = (flags & 2u) ? KILN_LOAD(wp, (nv_ + FLAT_I(e)) % wlen) : (T)1;

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
    ulong nv_ = 0;                                                                       \
    LOSS_VEC_FWD(fwd)                                                                    \
    xp += nv_;                                                                           \
    yp += nv_;                                                                           \
    op += nv_;                                                                           \
    n -= nv_;                                                                            \
    FLAT_BEGIN(n)                                                                        \
    {                                                                                    \
      FLAT_LOAD2(xv, xp, yv, yp, n)                                                      \
      FLAT_EACH(e, n)                                                                    \
      {                                                                                  \
        LOSS_XYW_AT(e)                                                                   \
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
    ulong nv_ = 0;                                                                       \
    LOSS_VEC_BWD(bwd)                                                                    \
    gop += nv_;                                                                          \
    xp += nv_;                                                                           \
    yp += nv_;                                                                           \
    dxp += nv_;                                                                          \
    n -= nv_;                                                                            \
    FLAT_BEGIN(n)                                                                        \
    {                                                                                    \
      FLAT_LOAD2(xv, xp, yv, yp, n)                                                      \
      FLAT_EACH(e, n)                                                                    \
      {                                                                                  \
        LOSS_XYW_AT(e)                                                                   \
        T g = (flags & 4u) ? KILN_LOAD(gop, FLAT_I(e)) * scale : g0;                     \
        KILN_STORE(dxp, FLAT_I(e), g * (T)(bwd));                                        \
      }                                                                                  \
    }                                                                                    \
  }
KILN_POINT_LOSSES(LOSS_KERNELS)
