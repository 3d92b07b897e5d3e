/*
 * Random numbers from the counter-based Philox4x32-10 generator
 * (Salmon et al., SC'11; Random123's philox4x32 with 10 rounds).
 *
 * The stream (also in docs/layout.md, "Random numbers"): the 64-bit seed is
 * the key (k0 = low word, k1 = high word); block b, a 64-bit number, is the
 * counter (b_lo, b_hi, 0, 0) and yields four 32-bit words w0..w3. A call
 * reads blocks base, base+1, ... where base is the context's counter. Each
 * element depends only on (seed, base, its index): work-items own whole
 * blocks, so the work-group size and the launch geometry never matter.
 *
 * Results are bitwise identical on every conforming device: only integer
 * operations, IEEE add/subtract/multiply, explicit fma() (correctly rounded
 * by the OpenCL spec; no implicit contraction: see the pragma), exact
 * scalings by powers of two and comparisons are used. Normals do not call
 * the built-in log/sqrt/sin/cos, whose accuracy OpenCL leaves to the device:
 * det_* below evaluate them with fixed operation sequences (f64 also uses
 * division and sqrt, which OpenCL requires to be correctly rounded for
 * doubles).
 *
 * Build options: see common.cl (-DT=..., -DKILN_DT_...=1).
 * Kernels (offsets in elements; grid-stride loops over blocks or elements):
 *   philox_blocks(out, off, nblocks, k0, k1, c0, c1, c2, c3)
 *     raw words of blocks (c0,c1)+j as a 64-bit number, c2, c3 fixed (tests)
 *   random_bits(out, off, n, base, k0, k1)        i32: 4 per block, i64: 2 per block
 *   random_uniform(out, off, n, base, k0, k1, lo, hi, top)
 *                                    f32, f16, bf16: 4 per block; f64: 2
 *   random_normal(out, off, n, base, k0, k1, mean, std)
 *                                    f32, f16, bf16: 4 per block; f64, c64: 2; c128: 1
 *   random_integers(out, off, n, base, k0, k1, span, lo)  one block per element
 *   random_bernoulli(out, off, n, base, k0, k1, threshold) 4 per block, any dtype
 *   perm_keys(keys, koff, vals, voff, n, npad, base, k0, k1)  2 keys per block
 *   perm_write(vals, voff, n, out, ooff)          i32/i64 permutation from sorted values
 *   gather_rows(x, xoff, vals, voff, out, ooff, n, inner)  shuffle along axis 0
 *   bitonic_step (sort_pairs.clh)
 * f16 and bf16 compute exactly the f32 values (T is float, same operation
 * sequences) and store them rounded to nearest even; c64 and c128 take the
 * f32 and f64 normal pairs (z0, z1) as (real, imaginary).
 * Tunables (speed only: any value and any local size give the same bits):
 * KILN_RNG_BLOCKS, the counter blocks one work-item of random_normal turns
 * into values (default 1; lib/ops/random.c picks it per device, the tuner's
 * family "random" times 1, 2 and 4).
 */
#include "common.cl"
#include "philox.clh"
#include "sort_pairs.clh"

#pragma OPENCL FP_CONTRACT OFF

/* The f32 generators serve f16 and bf16 (computed in float) and c64 (pairs of them); the f64
 * ones serve c128. */
#if defined(KILN_DT_F32) || KILN_IS_HALF || defined(KILN_DT_C64)
#define RNG_F32 1
#elif defined(KILN_DT_F64) || defined(KILN_DT_C128)
#define RNG_F64 1
#endif

/* A whole block of four 16-bit floats as one vector store (vstore_half4 and vstore4 need only
 * the element's alignment), rounded to nearest even. */
#if defined(KILN_DT_F16)
#define STORE4_WHOLE(out, i, v0, v1, v2, v3) vstore_half4_rte((float4)(v0, v1, v2, v3), 0, (out) + (i))
#elif defined(KILN_DT_BF16)
#define STORE4_WHOLE(out, i, v0, v1, v2, v3)                                               \
  vstore4((ushort4)(kiln_f32_to_bf16(v0), kiln_f32_to_bf16(v1), kiln_f32_to_bf16(v2),       \
                    kiln_f32_to_bf16(v3)),                                                 \
          0, (out) + (i))
#else
#define STORE4_WHOLE(out, i, v0, v1, v2, v3)                                               \
  do {                                                                                     \
    (out)[(i)] = (v0);                                                                     \
    (out)[(i) + 1] = (v1);                                                                 \
    (out)[(i) + 2] = (v2);                                                                 \
    (out)[(i) + 3] = (v3);                                                                 \
  } while (0)
#endif

/*
 * Stores the values of one block at element e: straight-line stores for a
 * whole block, guarded ones for the tail. Scalars, not a private array:
 * PoCL 3.1 miscompiled the array form for work-groups of one item.
 */
#define STORE4(out, off, e, n, v0, v1, v2, v3)                                       \
  do {                                                                               \
    if ((e) + 4 <= (n)) {                                                            \
      STORE4_WHOLE(out, (off) + (e), v0, v1, v2, v3);                                \
    } else {                                                                         \
      if ((e) < (n))                                                                 \
        KILN_STORE(out, (off) + (e), v0);                                            \
      if ((e) + 1 < (n))                                                             \
        KILN_STORE(out, (off) + (e) + 1, v1);                                        \
      if ((e) + 2 < (n))                                                             \
        KILN_STORE(out, (off) + (e) + 2, v2);                                        \
    }                                                                                \
  } while (0)

#define STORE2(out, off, e, n, v0, v1)                                               \
  do {                                                                               \
    (out)[(off) + (e)] = (v0);                                                       \
    if ((e) + 1 < (n))                                                               \
      (out)[(off) + (e) + 1] = (v1);                                                 \
  } while (0)

#ifndef KILN_RNG_BLOCKS
#define KILN_RNG_BLOCKS 1
#endif

/*
 * BLOCK(j) for the blocks j < nb of this work-item: KILN_RNG_BLOCKS of them a
 * work-group apart (a group's stores stay contiguous, and a GPU keeps several
 * blocks' arithmetic in flight per item). The host launches
 * ceil(nb / KILN_RNG_BLOCKS) items rounded up to groups; where it capped the
 * grid, grid-stride loops take the rest. A grid that covers everything runs
 * no loop: PoCL vectorises a kernel across work-items only without one.
 */
#define RNG_EACH(nb, BLOCK)                                                                \
  do {                                                                                     \
    ulong lsz_ = get_local_size(0), blk_ = lsz_ * KILN_RNG_BLOCKS;                         \
    ulong j0_ = get_group_id(0) * blk_ + get_local_id(0);                                  \
    if (get_num_groups(0) * blk_ >= (nb)) {                                                \
      for (uint e_ = 0; e_ < KILN_RNG_BLOCKS; e_++)                                        \
        if (j0_ + (ulong)e_ * lsz_ < (nb))                                                 \
          BLOCK(j0_ + (ulong)e_ * lsz_);                                                   \
    } else {                                                                               \
      for (; j0_ < (nb); j0_ += get_num_groups(0) * blk_)                                  \
        for (uint e_ = 0; e_ < KILN_RNG_BLOCKS; e_++)                                      \
          if (j0_ + (ulong)e_ * lsz_ < (nb))                                               \
            BLOCK(j0_ + (ulong)e_ * lsz_);                                                 \
    }                                                                                      \
  } while (0)

kernel void
philox_blocks(global uint *out, ulong off, ulong nblocks, uint k0, uint k1, uint c0, uint c1,
              uint c2, uint c3)
{
  for (ulong j = get_global_id(0); j < nblocks; j += get_global_size(0)) {
    ulong b = (((ulong)c1 << 32) | c0) + j;
    uint w[4] = {(uint)b, (uint)(b >> 32), c2, c3};
    philox4x32_10(w, k0, k1);
    for (int t = 0; t < 4; t++)
      out[off + 4 * j + t] = w[t];
  }
}

#if defined(KILN_DT_I32) || defined(KILN_DT_I64)
kernel void
random_bits(global T *out, ulong off, ulong n, ulong base, uint k0, uint k1)
{
#if defined(KILN_DT_I64)
  ulong nb = (n + 1) / 2;
#else
  ulong nb = (n + 3) / 4;
#endif
  for (ulong j = get_global_id(0); j < nb; j += get_global_size(0)) {
    uint w[4];
    block_words(base + j, 0u, k0, k1, w);
#if defined(KILN_DT_I64)
    STORE2(out, off, j * 2, n, (T)(((ulong)w[1] << 32) | w[0]), (T)(((ulong)w[3] << 32) | w[2]));
#else
    STORE4(out, off, j * 4, n, (T)w[0], (T)w[1], (T)w[2], (T)w[3]);
#endif
  }
}

kernel void
perm_write(global const ulong *vals, ulong voff, ulong n, global T *out, ulong ooff)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    out[ooff + i] = (T)vals[voff + i];
}
#endif

/* ---- deterministic math for Box-Muller ---- */

/*
 * Every polynomial step is an explicit fma(), which OpenCL requires to be
 * correctly rounded (so the bits stay the same on every device) and which
 * GPUs and current CPUs execute as one instruction: half the arithmetic of
 * separate multiplies and adds, which bound the speed of the normals (they
 * are compute-bound on an H200 at ~200 instructions per block). There are
 * no data-dependent branches: a branch whose direction differs between the
 * work-items of a warp runs both sides.
 *
 * The functions work on KILN_RNG_VEC lanes at once (RV(float) is float, or
 * floatN for N consecutive counter blocks): CPU devices get their SIMD from
 * explicit vectors (PoCL does not vectorise this kernel across work-items:
 * measured there, 8 lanes ran 7x faster than scalars). Every lane computes
 * exactly the scalar operation sequence, so the width changes no bit.
 */
#ifndef KILN_RNG_VEC
#define KILN_RNG_VEC 1
#endif
#if KILN_RNG_VEC > 1
#define RV(t) KILN_CAT(t, KILN_RNG_VEC)
#define RSEL(a, b, c) select((a), (b), (c))
#define RCONV(t, x) KILN_CAT(convert_, RV(t))(x)
#define RAS(t, x) KILN_CAT(as_, RV(t))(x)
#else
#define RV(t) t
#define RSEL(a, b, c) ((c) ? (b) : (a))
#define RCONV(t, x) ((t)(x))
#define RAS(t, x) KILN_CAT(as_, t)(x)
#endif
/* Lane l holds counter block first + l. */
#if KILN_RNG_VEC == 1
#define RNG_LANES 0
#elif KILN_RNG_VEC == 2
#define RNG_LANES ((ulong2)(0, 1))
#elif KILN_RNG_VEC == 4
#define RNG_LANES ((ulong4)(0, 1, 2, 3))
#elif KILN_RNG_VEC == 8
#define RNG_LANES ((ulong8)(0, 1, 2, 3, 4, 5, 6, 7))
#elif KILN_RNG_VEC == 16
#define RNG_LANES ((ulong16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
#else
#error "KILN_RNG_VEC must be 1, 2, 4, 8 or 16"
#endif

/*
 * The words w0..w3 (RV(uint)) of the blocks first + lane: philox4x32_10 of
 * philox.clh lane by lane. One lane multiplies as one 64-bit product (the
 * faster form on PoCL, philox.clh), vectors take mul_hi (same bits).
 */
#if KILN_RNG_VEC > 1
#define RNG_MUL(m, x, lo, hi)                                                              \
  RV(uint) lo = (x) * (m), hi = mul_hi((x), (RV(uint))(m));
#else
#define RNG_MUL(m, x, lo, hi)                                                              \
  ulong p_##lo = (ulong)(m) * (x);                                                         \
  uint lo = (uint)p_##lo, hi = (uint)(p_##lo >> 32);
#endif
#define RNG_ROUND                                                                          \
  {                                                                                        \
    RNG_MUL(PHILOX_M0, w0, lo0_, hi0_)                                                     \
    RNG_MUL(PHILOX_M1, w2, lo1_, hi1_)                                                     \
    w0 = hi1_ ^ w1 ^ q0_;                                                                  \
    w1 = lo1_;                                                                             \
    w2 = hi0_ ^ w3 ^ q1_;                                                                  \
    w3 = lo0_;                                                                             \
  }
#define RNG_BUMP                                                                           \
  q0_ += PHILOX_W0;                                                                        \
  q1_ += PHILOX_W1;                                                                        \
  RNG_ROUND
#define RNG_WORDS(first, k0, k1, w0, w1, w2, w3)                                           \
  RV(uint) w0, w1, w2, w3;                                                                 \
  {                                                                                        \
    RV(ulong) b_ = (RV(ulong))(first) + RNG_LANES;                                         \
    w0 = RCONV(uint, b_);                                                                  \
    w1 = RCONV(uint, b_ >> 32);                                                            \
    w2 = (RV(uint))0u;                                                                     \
    w3 = (RV(uint))0u;                                                                     \
    uint q0_ = (k0), q1_ = (k1);                                                           \
    RNG_ROUND RNG_BUMP RNG_BUMP RNG_BUMP RNG_BUMP RNG_BUMP RNG_BUMP RNG_BUMP RNG_BUMP        \
        RNG_BUMP                                                                           \
  }

/*
 * sin and cos of 2 pi k 2^-BITS for k < 2^BITS: the nearest quarter turn q from the top bits of
 * k + 2^(BITS-3), the signed rest r (|r| <= 2^(BITS-3), an angle t in [-pi/4, pi/4]), then
 * both polynomials at t, swapped and negated by the quadrant: (sin, cos) of q pi/2 + t is
 * (S, C), (C, -S), (-S, -C), (-C, S) for q = 0..3. The swaps are selects and the negations
 * sign-bit xors (-x is the sign-bit flip in IEEE arithmetic): no branch. One body for both
 * precisions: FT the float type, UT its bits (also the type of k), S and IT the scalar
 * unsigned and signed bits types, TURN the float nearest 2 pi 2^-BITS.
 */
#define DET_SINCOS(NAME, FT, UT, S, IT, BITS, TURN, SUF)                                    \
  inline void NAME(UT k, FT *s, FT *c)                                                     \
  {                                                                                        \
    UT h = k + (UT)((S)1 << (BITS - 3));                                                   \
    UT q = (h >> (BITS - 2)) & (UT)3;                                                      \
    FT t = RCONV(SUF, RAS(IT, h & (UT)(((S)1 << (BITS - 2)) - 1)) - ((IT)1 << (BITS - 3))) * \
           (FT)(TURN);                                                                     \
    FT sp = sin_poly_##SUF(t), cp = cos_poly_##SUF(t);                                     \
    UT sgn = (UT)((S)1 << (sizeof(S) * 8 - 1));                                            \
    UT ss = RSEL((UT)0, sgn, (q & 2) != 0), cs = RSEL((UT)0, sgn, ((q ^ (q >> 1)) & 1) != 0); \
    *s = RAS(SUF, RAS(S, RSEL(sp, cp, (q & 1) != 0)) ^ ss);                                \
    *c = RAS(SUF, RAS(S, RSEL(cp, sp, (q & 1) != 0)) ^ cs);                                \
  }

#if RNG_F32
#define FV RV(float)
/*
 * -2 ln(k * 2^-24) for k in [1, 2^24], Box-Muller's radius squared. x = k = 2^e m with m in
 * [sqrt(2)/2, sqrt(2)) taken from the bits of x minus those of sqrt(2)/2 (no compare, no
 * select); ln m = f + f^2 P(f), f = m - 1, P of degree 7 (a weighted least-squares fit of
 * (ln(1 + f) - f) / f^2: no division). The factor -2 is folded into the constants: g = -2f
 * (exact, as m - 1 is) and the coefficients scaled by powers of two, which changes no
 * rounding, so the result is exactly -2 times the unscaled sequence's. e - 24 becomes a float
 * through the bits of 1.5 * 2^23 + (e - 24). Max relative error 9.5e-8 over every k
 * (bench/fits/fit_poly.py fits P, bench/fits/check_math.c measures the function).
 */
inline FV
det_m2log_f32(RV(uint) k)
{
  FV x = RCONV(float, k);
  RV(int) e = RAS(int, RAS(uint, x) - 0x3f3504f3u) >> 23;
  FV m = RAS(float, RAS(uint, x) - RAS(uint, e << 23));
  FV g = fma(m, (FV)-2.0f, (FV)2.0f);
  FV p = (FV)3.4120394e-04f;
  p = fma(p, g, (FV)1.1177751e-03f);
  p = fma(p, g, (FV)2.3309346e-03f);
  p = fma(p, g, (FV)5.178284e-03f);
  p = fma(p, g, (FV)1.2476294e-02f);
  p = fma(p, g, (FV)3.1252194e-02f);
  p = fma(p, g, (FV)8.333488e-02f);
  p = fma(p, g, (FV)2.4999996e-01f);
  FV r = fma(g * g, p, g);
  FV ef = RAS(float, RAS(uint, e + (0x4b400000 - 24))) - 12582912.0f;
  return fma(ef, (FV)-1.3862915f, fma(ef, (FV)-2.8572135e-06f, r));
}

/* sqrt(x) for x >= 0 by Newton on 1/sqrt from the classic bit-level start. */
inline FV
det_sqrt_f32(FV x)
{
  FV y = RAS(float, 0x5f3759dfu - (RAS(uint, x) >> 1));
  FV hx = 0.5f * x;
  y = y * fma(-hx, y * y, (FV)1.5f);
  y = y * fma(-hx, y * y, (FV)1.5f);
  y = y * fma(-hx, y * y, (FV)1.5f);
  return RSEL(x * y, (FV)0.0f, x == 0.0f);
}

inline FV
sin_poly_float(FV t)
{
  FV t2 = t * t;
  FV p = (FV)2.75573188e-06f;
  p = fma(p, t2, (FV)-0.000198412701f);
  p = fma(p, t2, (FV)0.00833333377f);
  p = fma(p, t2, (FV)-0.166666672f);
  return fma(t, t2 * p, t);
}

inline FV
cos_poly_float(FV t)
{
  FV t2 = t * t;
  FV p = (FV)-2.755732e-07f;
  p = fma(p, t2, (FV)2.48015876e-05f);
  p = fma(p, t2, (FV)-0.00138888892f);
  p = fma(p, t2, (FV)0.0416666679f);
  p = fma(p, t2, (FV)-0.5f);
  return fma(t2, p, (FV)1.0f);
}

/* sin and cos of 2 pi k 2^-24 for k < 2^24 (DET_SINCOS). */
DET_SINCOS(det_sincos_f32, FV, RV(uint), uint, int, 24, 0x1.921fb6p-22f, float)
#endif

/* 53 random bits from two words (each of type t). */
#define BITS53(t, hi, lo) ((KILN_CAT(convert_, t)((hi) >> 5) << 26) | KILN_CAT(convert_, t)((lo) >> 6))

#if RNG_F64
#define DV RV(double)
/* ln(K * 2^-53) for K in [1, 2^53]. */
inline DV
det_log_f64(RV(ulong) k)
{
  DV x = RCONV(double, k);
  RV(ulong) bits = RAS(ulong, x);
  RV(long) e = RAS(long, bits >> 52) - 1023;
  DV m = RAS(double, (bits & 0x000fffffffffffffUL) | 0x3ff0000000000000UL);
  e = RSEL(e, e + 1, m > 1.4142135623730951);
  m = RSEL(m, m * 0.5, m > 1.4142135623730951);
  DV s = (m - 1.0) / (m + 1.0);
  DV s2 = s * s;
  DV p = (DV)0.043478260869565216;
  p = fma(p, s2, (DV)0.047619047619047616);
  p = fma(p, s2, (DV)0.05263157894736842);
  p = fma(p, s2, (DV)0.058823529411764705);
  p = fma(p, s2, (DV)0.06666666666666667);
  p = fma(p, s2, (DV)0.07692307692307693);
  p = fma(p, s2, (DV)0.09090909090909091);
  p = fma(p, s2, (DV)0.1111111111111111);
  p = fma(p, s2, (DV)0.14285714285714285);
  p = fma(p, s2, (DV)0.2);
  p = fma(p, s2, (DV)0.3333333333333333);
  p = fma(p, s2, (DV)1.0);
  DV lnm = (2.0 * s) * p;
  DV ef = RCONV(double, e - 53);
  return fma(ef, (DV)6.93147180369123816490e-01, fma(ef, (DV)1.90821492927058770002e-10, lnm));
}

inline DV
sin_poly_double(DV t)
{
  DV t2 = t * t;
  DV p = (DV)-8.22063524662433e-18;
  p = fma(p, t2, (DV)2.8114572543455206e-15);
  p = fma(p, t2, (DV)-7.647163731819816e-13);
  p = fma(p, t2, (DV)1.6059043836821613e-10);
  p = fma(p, t2, (DV)-2.505210838544172e-08);
  p = fma(p, t2, (DV)2.7557319223985893e-06);
  p = fma(p, t2, (DV)-0.0001984126984126984);
  p = fma(p, t2, (DV)0.008333333333333333);
  p = fma(p, t2, (DV)-0.16666666666666666);
  return fma(t, t2 * p, t);
}

inline DV
cos_poly_double(DV t)
{
  DV t2 = t * t;
  DV p = (DV)4.110317623312165e-19;
  p = fma(p, t2, (DV)-1.5619206968586225e-16);
  p = fma(p, t2, (DV)4.779477332387385e-14);
  p = fma(p, t2, (DV)-1.1470745597729725e-11);
  p = fma(p, t2, (DV)2.08767569878681e-09);
  p = fma(p, t2, (DV)-2.755731922398589e-07);
  p = fma(p, t2, (DV)2.48015873015873e-05);
  p = fma(p, t2, (DV)-0.001388888888888889);
  p = fma(p, t2, (DV)0.041666666666666664);
  p = fma(p, t2, (DV)-0.5);
  return fma(t2, p, (DV)1.0);
}

/* sin and cos of 2 pi K 2^-53 for K < 2^53 (DET_SINCOS). */
DET_SINCOS(det_sincos_f64, DV, RV(ulong), ulong, long, 53, 0x1.921fb54442d18p-51, double)
#endif

#if KILN_IS_FLOAT
/*
 * lo + (hi - lo) * u in T, then at most top. For f32 and f64 top is the
 * largest value below hi (rounding can reach hi); for f16 and bf16 it is
 * the largest float that rounds to a storage value below hi, so that the
 * store's rounding cannot reach hi either (host: lib/ops/random.c).
 */
inline T
scale_uniform(T u, T lo, T hi, T top)
{
  T v = lo + (hi - lo) * u;
  return v > top ? top : v;
}

kernel void
random_uniform(global ST *out, ulong off, ulong n, ulong base, uint k0, uint k1, T lo, T hi,
               T top)
{
#if defined(KILN_DT_F64)
  ulong nb = (n + 1) / 2;
#else
  ulong nb = (n + 3) / 4;
#endif
  for (ulong j = get_global_id(0); j < nb; j += get_global_size(0)) {
    uint w[4];
    block_words(base + j, 0u, k0, k1, w);
#if defined(KILN_DT_F64)
    T u0 = (T)BITS53(ulong, w[0], w[1]) * 0x1p-53, u1 = (T)BITS53(ulong, w[2], w[3]) * 0x1p-53;
    STORE2(out, off, j * 2, n, scale_uniform(u0, lo, hi, top), scale_uniform(u1, lo, hi, top));
#else
    T u0 = (T)(w[0] >> 8) * 0x1p-24f, u1 = (T)(w[1] >> 8) * 0x1p-24f;
    T u2 = (T)(w[2] >> 8) * 0x1p-24f, u3 = (T)(w[3] >> 8) * 0x1p-24f;
    STORE4(out, off, j * 4, n, scale_uniform(u0, lo, hi, top), scale_uniform(u1, lo, hi, top),
           scale_uniform(u2, lo, hi, top), scale_uniform(u3, lo, hi, top));
#endif
  }
}
#endif

#if KILN_IS_FLOAT || KILN_IS_COMPLEX
/* The imaginary part has mean 0: mean is a real number (docs/layout.md, "Random numbers"). */
#if KILN_IS_COMPLEX
#define IM_MEAN(m) ((RT)0)
#else
#define IM_MEAN(m) (m)
#endif

/* mean + stddev * z, one rounding (fma is correctly rounded everywhere). */
#define SCALE(z, m) fma((RV(RT))stddev, (z), (RV(RT))(m))

/*
 * Stores the values of block j at element off + j * PER (PER values per
 * block): whole blocks as one aligned vector store where the offset keeps
 * vectors aligned (aligned != 0), an element-aligned one elsewhere, guarded
 * stores for the tail block.
 */
#if RNG_F64
#define NORMAL_PER ((ulong)(KILN_IS_COMPLEX ? 1 : 2))
inline void
normal_store(global ST *out, ulong off, ulong n, ulong j, double z0, double z1, int aligned)
{
#if KILN_IS_COMPLEX
  out[off + j] = (double2)(z0, z1);
#else
  if (2 * j + 2 <= n && aligned)
    ((global double2 *)(out + off))[j] = (double2)(z0, z1);
  else
    STORE2(out, off, 2 * j, n, z0, z1);
#endif
}
#else
#define NORMAL_PER ((ulong)(KILN_IS_COMPLEX ? 2 : 4))
inline void
normal_store(global ST *out, ulong off, ulong n, ulong j, float z0, float z1, float z2, float z3,
             int aligned)
{
  float4 v = (float4)(z0, z1, z2, z3);
#if KILN_IS_COMPLEX
  if (2 * j + 2 <= n && aligned)
    ((global float4 *)(out + off))[j] = v;
  else
    STORE2(out, off, j * 2, n, v.s01, v.s23);
#elif defined(KILN_DT_F16)
  if (4 * j + 4 <= n && aligned)
    vstorea_half4_rte(v, j, out + off);
  else
    STORE4(out, off, j * 4, n, z0, z1, z2, z3);
#elif defined(KILN_DT_BF16)
  if (4 * j + 4 <= n && aligned)
    ((global ushort4 *)(out + off))[j] = (ushort4)(kiln_f32_to_bf16(z0), kiln_f32_to_bf16(z1),
                                                   kiln_f32_to_bf16(z2), kiln_f32_to_bf16(z3));
  else
    STORE4(out, off, j * 4, n, z0, z1, z2, z3);
#else
  if (4 * j + 4 <= n && aligned)
    ((global float4 *)(out + off))[j] = v;
  else
    STORE4(out, off, j * 4, n, z0, z1, z2, z3);
#endif
}
#endif

/* A vector of the real type and its lanes. */
#define RLANES union { RV(RT) v; RT s[KILN_RNG_VEC]; }

/*
 * The normals of the KILN_RNG_VEC blocks first, first + 1, ... (those below
 * nb): computed as vectors, stored lane by lane.
 */
inline void
normal_blocks(global ST *out, ulong off, ulong n, ulong nb, ulong first, ulong base, uint k0,
              uint k1, RT mean, RT stddev, int aligned)
{
  RNG_WORDS(base + first, k0, k1, w0, w1, w2, w3)
#if RNG_F64
  RV(double) r = sqrt(-2.0 * det_log_f64(BITS53(RV(ulong), w0, w1) + 1));
  RV(double) s, c;
  det_sincos_f64(BITS53(RV(ulong), w2, w3), &s, &c);
  RLANES z0 = {SCALE(r * c, mean)}, z1 = {SCALE(r * s, IM_MEAN(mean))};
  for (uint l = 0; l < KILN_RNG_VEC; l++)
    if (first + l < nb)
      normal_store(out, off, n, first + l, z0.s[l], z1.s[l], aligned);
#else
  RV(float) r0 = det_sqrt_f32(det_m2log_f32((w0 >> 8) + 1u));
  RV(float) r1 = det_sqrt_f32(det_m2log_f32((w2 >> 8) + 1u));
  RV(float) s0, c0, s1, c1;
  det_sincos_f32(w1 >> 8, &s0, &c0);
  det_sincos_f32(w3 >> 8, &s1, &c1);
  RLANES z0 = {SCALE(r0 * c0, mean)}, z1 = {SCALE(r0 * s0, IM_MEAN(mean))};
  RLANES z2 = {SCALE(r1 * c1, mean)}, z3 = {SCALE(r1 * s1, IM_MEAN(mean))};
  for (uint l = 0; l < KILN_RNG_VEC; l++)
    if (first + l < nb)
      normal_store(out, off, n, first + l, z0.s[l], z1.s[l], z2.s[l], z3.s[l], aligned);
#endif
}

kernel void
random_normal(global ST *out, ulong off, ulong n, ulong base, uint k0, uint k1, RT mean,
              RT stddev)
{
  ulong nb = (n + NORMAL_PER - 1) / NORMAL_PER;
  ulong nv = (nb + KILN_RNG_VEC - 1) / KILN_RNG_VEC;
  int aligned = off % NORMAL_PER == 0;
#define NORMAL_BLOCKS(v)                                                                   \
  normal_blocks(out, off, n, nb, (v) * KILN_RNG_VEC, base, k0, k1, mean, stddev, aligned)
  RNG_EACH(nv, NORMAL_BLOCKS);
}
#endif

#if defined(KILN_DT_I32) || defined(KILN_DT_I64) || defined(KILN_DT_U8)
/*
 * lo + a uniform value in [0, span), span >= 1, by Lemire's multiply-and-
 * reject method: 32-bit words while span <= 2^32, 64-bit words (two per
 * draw) above. Element i owns block base + i; rejections move on to its
 * next words and then to blocks (base + i, round, ...), round = 1, 2, ...,
 * which no other call or element uses (their third counter word is 0).
 */
kernel void
random_integers(global T *out, ulong off, ulong n, ulong base, uint k0, uint k1, ulong span,
                long lo)
{
  int wide = span > 0x100000000UL;
  ulong threshold = (0 - span) % span; /* 2^64 mod span; 2^32 mod span below */
  if (!wide)
    threshold = (0x100000000UL - span) % span;
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    ulong value = 0;
    for (uint round = 0;; round++) {
      uint w[4];
      block_words(base + i, round, k0, k1, w);
      int done = 0;
      if (wide) {
        for (int t = 0; t < 2 && !done; t++) {
          ulong x = ((ulong)w[2 * t + 1] << 32) | w[2 * t];
          if (x * span >= threshold) {
            value = mul_hi(x, span);
            done = 1;
          }
        }
      } else {
        for (int t = 0; t < 4 && !done; t++) {
          ulong m = (ulong)w[t] * span;
          if ((m & 0xffffffffUL) >= threshold) {
            value = m >> 32;
            done = 1;
          }
        }
      }
      if (done)
        break;
    }
    out[off + i] = (T)((ulong)lo + value);
  }
}
#endif

/* One and zero of the dtype (complex: 1 + 0i; f16 and bf16 store the float). */
#if KILN_IS_COMPLEX
#define BERN_ONE ((T)((RT)1, (RT)0))
#else
#define BERN_ONE ((T)1)
#endif
#define BERN(w, threshold) ((ulong)(w) < (threshold) ? BERN_ONE : (T)0)

kernel void
random_bernoulli(global ST *out, ulong off, ulong n, ulong base, uint k0, uint k1,
                 ulong threshold)
{
  ulong nb = (n + 3) / 4;
  for (ulong j = get_global_id(0); j < nb; j += get_global_size(0)) {
    uint w[4];
    block_words(base + j, 0u, k0, k1, w);
    STORE4(out, off, j * 4, n, BERN(w[0], threshold), BERN(w[1], threshold),
           BERN(w[2], threshold), BERN(w[3], threshold));
  }
}

kernel void
perm_keys(global ulong *keys, ulong koff, global ulong *vals, ulong voff, ulong n, ulong npad,
          ulong base, uint k0, uint k1)
{
  for (ulong i = get_global_id(0); i < npad; i += get_global_size(0)) {
    ulong key = ULONG_MAX, val = ULONG_MAX;
    if (i < n) {
      uint w[4];
      block_words(base + i / 2, 0u, k0, k1, w);
      uint t = (uint)(i % 2);
      key = ((ulong)w[2 * t + 1] << 32) | w[2 * t];
      val = i;
    }
    keys[koff + i] = key;
    vals[voff + i] = val;
  }
}

/* Rows move as bits: f16 elements as ushort (half values cannot be loaded as such). */
#undef MT
#if defined(KILN_DT_F16)
#define MT ushort
#else
#define MT ST
#endif

kernel void
gather_rows(global const MT *x, ulong xoff, global const ulong *vals, ulong voff, global MT *out,
            ulong ooff, ulong n, ulong inner)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    out[ooff + i] = x[xoff + vals[voff + i / inner] * inner + i % inner];
}
