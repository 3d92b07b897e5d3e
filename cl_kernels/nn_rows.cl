/*
 * nn family, row kernels: softmax and log_softmax with their backward passes, layer_norm and
 * rms_norm with theirs, cross_entropy and nll, and the small reductions the losses finish with.
 *
 * Build options: common.cl's (-DT=..., -DKILN_DT_...=1); tensors are `global ST *` moved
 * through KILN_LOAD/KILN_STORE, arithmetic and scratch buffers (`global T *`) in T.
 *
 * Row geometry (every row kernel): rows rows of len elements; element j of row r is at
 * (r / inner) * len * inner + r % inner + j * inner (inner = 1: contiguous rows; softmax
 * along a non-last axis has inner > 1). A work-group of a power-of-two local size holds
 * local_size / lpr rows, lpr lanes (a power of two <= the local size) per row: the host
 * picks lpr = local size for long rows (one group per row), fewer for short rows, 1 when
 * inner > 1 (adjacent work-items then read adjacent columns). Groups loop over blocks of
 * rows, so any number of groups works. Local scratch: local_size T per `local T *` argument.
 *
 * Tunable KILN_NN_ROW_ITEMS (R: 0, 4, 8 or 16; lib/ops/nn.c picks it and the local size,
 * kiln__nn_knobs_get): each lane keeps R elements of its row in
 * registers, one vector VT of R components loaded before any arithmetic, so that a row is read
 * from global memory once and every lane has R elements in flight instead of one (the
 * streaming form was latency-bound at 0.7x PyTorch on the H200). Elements past R lpr (rows
 * longer than the host sized the group for) are streamed, read again by every pass. R = 0
 * keeps chunks of each row in local memory instead (the local cache, below; the GPUs'
 * default), or streams everything when the host gives it no chunks. Every row kernel takes
 * two last arguments for that cache, (uint nchv, local T4 *lc), not listed below. The lanes-per-row argument lprv carries lpr in its low 31 bits and, in
 * bit 31, whether the cached elements move as 4-vectors (kiln__nn_row_vec: contiguous rows
 * of a multiple of 4 elements, every operand 4-aligned).
 *
 * Kernels (offsets in elements):
 *   softmax_fwd(x, xoff, y, yoff, rows, len, inner, lpr, logmode, lm, ls)
 *   softmax_bwd(g, goff, y, yoff, dx, dxoff, rows, len, inner, lpr, logmode, la)
 *   norm_fwd(x, xoff, w, woff, b, boff, y, yoff, mean, moff, rstd, roff, rows, len, eps,
 *            lpr, flags, l1, l2, l3)            flags: NORM_* below
 *   norm_bwd(g, goff, x, xoff, w, woff, mean, moff, rstd, roff, dx, dxoff, rows, len, lpr,
 *            flags, la, lb)
 *   norm_cols(g, goff, x, xoff, mean, moff, rstd, roff, part, rows, len, nchunk, flags)
 *     1-D over len * nchunk items (lib/ops/nn.c sizes nchunk from the knob col_items):
 *     column sums of g * xhat and g over chunks of rows, into
 *     part[p * len + j] and part[(nchunk + p) * len + j].
 *   norm_cols_finish(part, nchunk, len, dw, dwoff, db, dboff, flags)   1-D over len
 *   ce_fwd(z, zoff, ti, tioff, tp, tpoff, out, outoff, lr, lv, rows, C, lpr, ignore, eps,
 *          flags, lm, ls, la, lb)
 *     flags 1: probabilities tp (else class indices ti); 2: write T values lr[r] and the
 *     row's weight lv[r] (1, or 0 when ignored) for a reduction, else out[r].
 *   ce_bwd(gout, goff, z, zoff, ti, tioff, tp, tpoff, dz, dzoff, denom, rows, C, lpr,
 *          ignore, eps, scale, flags, lm, ls, lb)
 *     flags 1 as ce_fwd; 4: g = gout[r] (reduction none), else gout[0]; 8: divide g by
 *     denom[0]. g is multiplied by scale.
 *   nll_fwd(x, xoff, ti, tioff, out, outoff, lr, lv, rows, C, ignore, flags)  1-D over rows
 *   nll_bwd(gout, goff, ti, tioff, dx, dxoff, denom, rows, C, ignore, scale, flags)
 *     1-D over rows * C; flags 4 and 8 as ce_bwd.
 *   nn_count(ti, tioff, rows, ignore, out, sh)     one work-group: out[0] = rows not ignored
 *   nn_finish(a, b, n, out, outoff, scale, flags, sa, sb)
 *     one work-group: out[0] = sum(a) * scale, or with flags 1 sum(a) / sum(b).
 */
#include "common.cl"

#define NORM_W 1u     /* weight present */
#define NORM_B 2u     /* bias present */
#define NORM_RMS 4u   /* rms_norm: no mean */
#define NORM_MEAN 8u  /* write the row means */
#define NORM_RSTD 16u /* write the row rstd */
#define NORM_DW 32u   /* norm_cols: weight gradient wanted */
#define NORM_DB 64u   /* norm_cols: bias gradient wanted */

#define ROWS_BEGIN                                                                       \
  const uint lid = get_local_id(0), lsz = get_local_size(0);                             \
  const uint lpr = lprv & 0x7fffffffu, vec = lprv >> 31, nch = RN ? 0u : nchv;           \
  const uint lane = lid & (lpr - 1u), seg0 = lid - lane;                                 \
  const ulong rpg = lsz / lpr, nblk = (rows + rpg - 1) / rpg;                            \
  for (ulong blk = get_group_id(0); blk < nblk; blk += get_num_groups(0)) {              \
    const ulong r = blk * rpg + lid / lpr;                                               \
    const int live = r < rows;                                                           \
    const ulong base = inner == 1 ? r * len : (r / inner) * len * inner + r % inner;
/* Every lane is done with the local scratch before the next block refills it. */
#define ROWS_END                                                                         \
  barrier(CLK_LOCAL_MEM_FENCE);                                                       \
  }

#ifndef KILN_NN_ROW_ITEMS
#define KILN_NN_ROW_ITEMS 0
#endif
/* KILN_NN_ROW_CPU: softmax_fwd/bwd, norm_fwd/bwd and ce_fwd/bwd in their CPU forms
 * (nn_rows_cpu.clh, one work-item per row), the others as they are. */
#ifndef KILN_NN_ROW_CPU
#define KILN_NN_ROW_CPU 0
#endif
/* RN: elements per lane kept in registers (0, 4, 8 or 16), one OpenCL vector VT of RN
 * components, so that no array (which NVIDIA's compiler may place in off-chip local memory when
 * a loop over it stays rolled) and no unrolling is involved: every operation on the cache is a
 * vector expression or a constant swizzle. */
#define RN KILN_NN_ROW_ITEMS
#define VCAT_(a, b) a##b
#define VCAT(a, b) VCAT_(a, b)
#define T4 VCAT(T, 4)
#if RN
#define VT VCAT(T, RN)
#if defined(KILN_DT_F64)
#define IVT VCAT(long, RN) /* the mask type select() wants beside VT */
#define IS long
#else
#define IVT VCAT(int, RN)
#define IS int
#endif
#if RN == 16
#define RIDX ((IVT)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
#elif RN == 8
#define RIDX ((IVT)(0, 1, 2, 3, 4, 5, 6, 7))
#elif RN == 4
#define RIDX ((IVT)(0, 1, 2, 3))
#else
#error "KILN_NN_ROW_ITEMS must be 0, 4, 8 or 16"
#endif
#endif /* RN */

/*
 * Where a lane's cached components sit in its row. vec (rows of a multiple of 4 contiguous
 * elements, every operand 4-aligned: the host's check): chunks of 4, component 4c + i at
 * element 4 (c lpr + lane) + i, moved as 4-vectors (a warp reads 512 contiguous bytes per
 * load). Otherwise component n at element lane + n lpr, moved one by one (each load still
 * contiguous across the lanes). Either way the lane's valid components form a prefix.
 */
inline T4 ld4(global const ST *p, ulong base, ulong inner, ulong len, uint lane, uint lpr,
              uint vec, uint c, T fill)
{
  if (vec) {
    ulong j = ((ulong)c * lpr + lane) * 4;
    if (j >= len)
      return (T4)fill;
#if defined(KILN_DT_F16)
    return vload_half4(0, p + base + j);
#elif defined(KILN_DT_BF16)
    return as_float4(convert_uint4(vload4(0, p + base + j)) << 16);
#else
    return *(global const T4 *)(p + base + j);
#endif
  }
  ulong j = lane + (ulong)(4 * c) * lpr;
  T4 r;
  r.s0 = j < len ? KILN_LOAD(p, base + j * inner) : fill;
  j += lpr;
  r.s1 = j < len ? KILN_LOAD(p, base + j * inner) : fill;
  j += lpr;
  r.s2 = j < len ? KILN_LOAD(p, base + j * inner) : fill;
  j += lpr;
  r.s3 = j < len ? KILN_LOAD(p, base + j * inner) : fill;
  return r;
}

inline void st4(global ST *p, ulong base, ulong inner, ulong len, uint lane, uint lpr, uint vec,
                uint c, T4 v)
{
  if (vec) {
    ulong j = ((ulong)c * lpr + lane) * 4;
    if (j >= len)
      return;
#if defined(KILN_DT_F16)
    vstore_half4_rte(v, 0, p + base + j);
#elif defined(KILN_DT_BF16)
    vstore4((ushort4)(kiln_f32_to_bf16(v.s0), kiln_f32_to_bf16(v.s1), kiln_f32_to_bf16(v.s2),
                      kiln_f32_to_bf16(v.s3)),
            0, p + base + j);
#else
    *(global T4 *)(p + base + j) = v;
#endif
    return;
  }
  ulong j = lane + (ulong)(4 * c) * lpr;
  if (j < len)
    KILN_STORE(p, base + j * inner, v.s0);
  j += lpr;
  if (j < len)
    KILN_STORE(p, base + j * inner, v.s1);
  j += lpr;
  if (j < len)
    KILN_STORE(p, base + j * inner, v.s2);
  j += lpr;
  if (j < len)
    KILN_STORE(p, base + j * inner, v.s3);
}

/* exp of every component, as scalar calls: a vector math builtin may be a library call whose
 * vector arguments cost registers (the cached kernels were limited to 256 work-items on the
 * H200). */
inline T4 exp4(T4 v) { return (T4)(exp(v.x), exp(v.y), exp(v.z), exp(v.w)); }
inline T hsum4(T4 b) { return (b.s0 + b.s1) + (b.s2 + b.s3); }
inline T hmax4(T4 b) { return fmax(fmax(b.s0, b.s1), fmax(b.s2, b.s3)); }

/* 1 for the components of chunk c (ld4's layout) that hold row elements, else 0. */
inline T4 ok4(ulong len, uint lane, uint lpr, uint vec, uint c)
{
  if (vec)
    return (T4)(((ulong)c * lpr + lane) * 4 < len ? (T)1 : (T)0);
  ulong j = lane + (ulong)(4 * c) * lpr;
  return (T4)(j < len ? (T)1 : (T)0, j + lpr < len ? (T)1 : (T)0,
              j + 2 * (ulong)lpr < len ? (T)1 : (T)0, j + 3 * (ulong)lpr < len ? (T)1 : (T)0);
}

/* 1 for the component of chunk c that holds element t, else 0. */
inline T4 hit4(ulong t, uint lane, uint lpr, uint vec, uint c)
{
  ulong j = vec ? ((ulong)c * lpr + lane) * 4 : lane + (ulong)(4 * c) * lpr;
  ulong d = vec ? 1 : lpr;
  return (T4)(t == j ? (T)1 : (T)0, t == j + d ? (T)1 : (T)0, t == j + 2 * d ? (T)1 : (T)0,
              t == j + 3 * d ? (T)1 : (T)0);
}

#if RN
/* This lane's cached components of row p (fill past the row's end; len 0: all fill). */
inline VT row_load(global const ST *p, ulong base, ulong inner, ulong len, uint lane, uint lpr,
                   uint vec, T fill)
{
  VT v;
#if RN == 4
  v = ld4(p, base, inner, len, lane, lpr, vec, 0, fill);
#else
  v.s0123 = ld4(p, base, inner, len, lane, lpr, vec, 0, fill);
  v.s4567 = ld4(p, base, inner, len, lane, lpr, vec, 1, fill);
#if RN == 16
  v.s89ab = ld4(p, base, inner, len, lane, lpr, vec, 2, fill);
  v.scdef = ld4(p, base, inner, len, lane, lpr, vec, 3, fill);
#endif
#endif
  return v;
}

inline void row_store(global ST *p, ulong base, ulong inner, ulong len, uint lane, uint lpr,
                      uint vec, VT v)
{
#if RN == 4
  st4(p, base, inner, len, lane, lpr, vec, 0, v);
#else
  st4(p, base, inner, len, lane, lpr, vec, 0, v.s0123);
  st4(p, base, inner, len, lane, lpr, vec, 1, v.s4567);
#if RN == 16
  st4(p, base, inner, len, lane, lpr, vec, 2, v.s89ab);
  st4(p, base, inner, len, lane, lpr, vec, 3, v.scdef);
#endif
#endif
}

/* The row position of each cached component (as IS: rows that fit are far below 2^31). */
inline IVT row_pos(uint lane, uint lpr, uint vec)
{
  if (vec)
    return ((RIDX >> 2) * (IS)lpr + (IS)lane) * 4 + (RIDX & 3);
  return (IS)lane + RIDX * (IS)lpr;
}

/* Mask of the components that hold row elements. */
inline IVT row_valid(ulong len, uint lane, uint lpr, uint vec)
{
  return row_pos(lane, lpr, vec) < (IVT)(IS)min(len, (ulong)RN * lpr);
}

inline T row_hsum(VT v)
{
#if RN == 16
  VCAT(T, 8) a = v.lo + v.hi;
  T4 b = a.lo + a.hi;
#elif RN == 8
  T4 b = v.lo + v.hi;
#else
  T4 b = v;
#endif
  return (b.s0 + b.s1) + (b.s2 + b.s3);
}

inline VT row_exp(VT v)
{
#if RN == 16
  return (VT)(exp4(v.s0123), exp4(v.s4567), exp4(v.s89ab), exp4(v.scdef));
#elif RN == 8
  return (VT)(exp4(v.lo), exp4(v.hi));
#else
  return exp4(v);
#endif
}

/* The largest component, NaN skipped (fmax). */
inline T row_hmax(VT v)
{
#if RN == 16
  VCAT(T, 8) a = fmax(v.lo, v.hi);
  T4 b = fmax(a.lo, a.hi);
#elif RN == 8
  T4 b = fmax(v.lo, v.hi);
#else
  T4 b = v;
#endif
  return fmax(fmax(b.s0, b.s1), fmax(b.s2, b.s3));
}
#define ROW_LOAD(p, fill) row_load(p, base, inner, live ? len : 0, lane, lpr, vec, fill)
#define ROW_STORE(p, v) row_store(p, base, inner, len, lane, lpr, vec, v)
#else
/*
 * RN 0: the local cache. The first nch chunks of 4 elements of each lane (ld4's layout) are
 * held in local memory, chunk c of buffer k of this lane at lc[(k nch + c) lsz + lid], so that
 * each element is read from global memory once, and every lane's loads go out before any
 * arithmetic waits on them (streaming a row was latency-bound at 0.7x PyTorch on the H200).
 * The host sizes nch (0: stream everything) from the knob row_local (kiln__nn_row_cache); the
 * elements past the cached chunks are streamed, read again by every pass.
 */
#define LC(k, c) lc[((k) * nch + (c)) * lsz + lid]
/* Four loads before their four stores: a loop that stored each load before issuing the next
 * would wait out the memory latency once per chunk. */
inline void lc_fill(local T4 *d, uint nch, uint lsz, global const ST *p, ulong base, ulong inner,
                    ulong len, uint lane, uint lpr, uint vec, T fill)
{
  uint c = 0;
  for (; c + 4 <= nch; c += 4) {
    T4 a = ld4(p, base, inner, len, lane, lpr, vec, c, fill);
    T4 b = ld4(p, base, inner, len, lane, lpr, vec, c + 1, fill);
    T4 e = ld4(p, base, inner, len, lane, lpr, vec, c + 2, fill);
    T4 f = ld4(p, base, inner, len, lane, lpr, vec, c + 3, fill);
    d[c * lsz] = a;
    d[(c + 1) * lsz] = b;
    d[(c + 2) * lsz] = e;
    d[(c + 3) * lsz] = f;
  }
  for (; c < nch; c++)
    d[c * lsz] = ld4(p, base, inner, len, lane, lpr, vec, c, fill);
}
/* Chunks c to c + 3 of the row parameter p (w or b: offset 0, contiguous), fill for those at or
 * past nch or when p is absent (on 0): a loop over chunks that loaded each just before its use
 * would wait out the latency once per chunk. */
inline void ld4x4(global const ST *p, uint on, ulong len, uint lane, uint lpr, uint vec, uint c,
                  uint nch, T fill, T4 *a, T4 *b, T4 *e, T4 *f)
{
  *a = on ? ld4(p, 0, 1, len, lane, lpr, vec, c, fill) : (T4)fill;
  *b = on && c + 1 < nch ? ld4(p, 0, 1, len, lane, lpr, vec, c + 1, fill) : (T4)fill;
  *e = on && c + 2 < nch ? ld4(p, 0, 1, len, lane, lpr, vec, c + 2, fill) : (T4)fill;
  *f = on && c + 3 < nch ? ld4(p, 0, 1, len, lane, lpr, vec, c + 3, fill) : (T4)fill;
}
#define LC_LOAD(k, p, fill)                                                              \
  lc_fill(&LC(k, 0), nch, lsz, p, base, inner, live ? len : 0, lane, lpr, vec, fill)
#define LC_EACH(c) for (uint c = 0; c < nch; c++)
#define LC_STORE(p, c, v) st4(p, base, inner, len, lane, lpr, vec, c, v)
#endif /* RN */

/* Every element j of this lane's row past the cached ones. */
#define TAIL_EACH(j)                                                                     \
  if (live)                                                                              \
    for (ulong j = lane + (ulong)(RN + 4 * nch) * lpr; j < len; j += lpr)

/* A tree over the lanes of each row's segment: SEG_TREE_BEGIN { combine lid and lid + off }
 * SEG_TREE_END, after which index seg0 holds the row's result. */
#define SEG_TREE_BEGIN                                                                   \
  for (uint off = lpr >> 1; off > 0; off >>= 1) {                                        \
    barrier(CLK_LOCAL_MEM_FENCE);                                                     \
    if (lane < off)
#define SEG_TREE_END                                                                     \
  }                                                                                      \
  barrier(CLK_LOCAL_MEM_FENCE);

/*
 * Online log-sum-exp state (m, s): s = sum exp(x - m). -inf elements add nothing (so a row
 * of only -inf keeps m = -inf, s = 0); a NaN makes s NaN, which every output then carries.
 */
inline void lse_add(T *m, T *s, T x)
{
  if (x > *m) {
    *s = *s * exp(*m - x) + (T)1;
    *m = x;
  } else {
    *s += x == -INFINITY ? (T)0 : exp(x - *m);
  }
}
/* With m2 = -inf, s2 is 0 or NaN: adding it keeps the NaN. */
inline void lse_merge(T *m, T *s, T m2, T s2)
{
  if (m2 > *m) {
    *s = *s * exp(*m - m2) + s2;
    *m = m2;
  } else {
    *s += m2 == -INFINITY ? s2 : s2 * exp(m2 - *m);
  }
}

/* Row (m, s) from each lane's (m, s), stored into lm, ls here, and two plain sums over the
 * segment already stored in la, lb; results at index seg0. */
#define SEG_LSE(m, s, la, lb)                                                            \
  lm[lid] = (m);                                                                         \
  ls[lid] = (s);                                                                         \
  SEG_TREE_BEGIN                                                                         \
  {                                                                                      \
    T m_ = lm[lid];                                                                      \
    T s_ = ls[lid];                                                                      \
    lse_merge(&m_, &s_, lm[lid + off], ls[lid + off]);                                   \
    lm[lid] = m_;                                                                        \
    ls[lid] = s_;                                                                        \
    if (la)                                                                              \
      la[lid] += la[lid + off];                                                          \
    if (lb)                                                                              \
      lb[lid] += lb[lid + off];                                                          \
  }                                                                                      \
  SEG_TREE_END

/* The row's (m, s) after SEG_LSE. exp(inf - inf) would make only the +inf elements NaN;
 * PyTorch's whole row is NaN. */
#define SEG_LSE_READ(m, s)                                                               \
  do {                                                                                   \
    m = lm[seg0];                                                                        \
    s = ls[seg0];                                                                        \
    if (m == INFINITY)                                                                   \
      s = NAN;                                                                           \
  } while (0)

#if !KILN_NN_ROW_CPU
kernel void
softmax_fwd(global const ST *x, ulong xoff, global ST *y, ulong yoff, ulong rows, ulong len,
            ulong inner, uint lprv, uint logmode, local T *lm, local T *ls, uint nchv,
            local T4 *lc)
{
  x += xoff;
  y += yoff;
  local T *none = 0;
  ROWS_BEGIN
  T m = -INFINITY, s = (T)0;
#if RN
  /* The cached part's (m0, s0) with one exp per element (NaN is skipped by the max and
   * reaches s0 through its exp; -inf and the fill past the row give 0); v keeps x for
   * log_softmax, else exp(x - m0). */
  VT v = ROW_LOAD(x, -INFINITY);
  m = row_hmax(v);
  const T m0 = m;
  {
    VT e = select(row_exp(v - m0), (VT)0, v == (VT)(-INFINITY));
    s = row_hsum(e);
    if (!logmode)
      v = e;
  }
#else
  /* As the register cache: the cached part's (m0, s0) with one exp per element; the cache
   * keeps x for log_softmax, else exp(x - m0). */
  LC_LOAD(0, x, -INFINITY);
  LC_EACH(c) m = fmax(m, hmax4(LC(0, c)));
  const T m0 = m;
  LC_EACH(c)
  {
    T4 v = LC(0, c), e = select(exp4(v - m0), (T4)0, v == (T4)(-INFINITY));
    s += hsum4(e);
    if (!logmode)
      LC(0, c) = e;
  }
#endif
  TAIL_EACH(j) lse_add(&m, &s, KILN_LOAD(x, base + j * inner));
  SEG_LSE(m, s, none, none)
  SEG_LSE_READ(m, s);
  if (logmode) {
    T sub = m + log(s);
#if RN
    if (live)
      ROW_STORE(y, v - sub);
#else
    if (live)
      LC_EACH(c) LC_STORE(y, c, LC(0, c) - sub);
#endif
    TAIL_EACH(j) KILN_STORE(y, base + j * inner, KILN_LOAD(x, base + j * inner) - sub);
  } else {
    T inv = (T)1 / s;
#if RN
    /* m0 = m = -inf (a row of only -inf) makes the scale NaN, as the streamed form's
     * exp(-inf + inf) makes every element NaN. */
    if (live)
      ROW_STORE(y, v * (exp(m0 - m) * inv));
#else
    T sc = exp(m0 - m) * inv;
    if (live)
      LC_EACH(c) LC_STORE(y, c, LC(0, c) * sc);
#endif
    TAIL_EACH(j) KILN_STORE(y, base + j * inner, exp(KILN_LOAD(x, base + j * inner) - m) * inv);
  }
  ROWS_END
}

#define SEG_SUM2(la, lb)                                                                 \
  SEG_TREE_BEGIN                                                                         \
  {                                                                                      \
    la[lid] += la[lid + off];                                                            \
    if (lb)                                                                              \
      lb[lid] += lb[lid + off];                                                          \
  }                                                                                      \
  SEG_TREE_END

kernel void
softmax_bwd(global const ST *g, ulong goff, global const ST *y, ulong yoff, global ST *dx,
            ulong dxoff, ulong rows, ulong len, ulong inner, uint lprv, uint logmode,
            local T *la, uint nchv, local T4 *lc)
{
  g += goff;
  y += yoff;
  dx += dxoff;
  local T *none = 0;
  ROWS_BEGIN
  T a = (T)0;
#if RN
  VT gc = ROW_LOAD(g, 0), yc = ROW_LOAD(y, 0);
  a = row_hsum(logmode ? gc : gc * yc);
#else
  LC_LOAD(0, g, 0);
  LC_LOAD(1, y, 0);
  LC_EACH(c) a += hsum4(logmode ? LC(0, c) : LC(0, c) * LC(1, c));
#endif
  TAIL_EACH(j)
  {
    T gv = KILN_LOAD(g, base + j * inner);
    a += logmode ? gv : gv * KILN_LOAD(y, base + j * inner);
  }
  la[lid] = a;
  SEG_SUM2(la, none)
  a = la[seg0];
#if RN
  if (live) {
    if (logmode)
      ROW_STORE(dx, gc - row_exp(yc) * a);
    else
      ROW_STORE(dx, yc * (gc - a));
  }
#else
  if (live)
    LC_EACH(c)
    {
      T4 gc = LC(0, c), yc = LC(1, c);
      LC_STORE(dx, c, logmode ? gc - exp4(yc) * a : yc * (gc - a));
    }
#endif
  TAIL_EACH(j)
  {
    ulong i = base + j * inner;
    T gv = KILN_LOAD(g, i), yv = KILN_LOAD(y, i);
    KILN_STORE(dx, i, logmode ? gv - exp(yv) * a : yv * (gv - a));
  }
  ROWS_END
}

/* Welford state (count, mean, M2) merged by Chan's formula. */
inline void welford_merge(T *n, T *mu, T *m2, T nb, T mub, T m2b)
{
  T nn = *n + nb;
  if (nb == (T)0)
    return;
  T d = mub - *mu, f = nb / nn;
  *mu += d * f;
  *m2 += m2b + d * d * *n * f;
  *n = nn;
}

kernel void
norm_fwd(global const ST *x, ulong xoff, global const ST *w, ulong woff, global const ST *b,
         ulong boff, global ST *y, ulong yoff, global ST *mean, ulong moff, global ST *rstd,
         ulong roff, ulong rows, ulong len, T eps, uint lprv, uint flags, local T *l1,
         local T *l2, local T *l3, uint nchv, local T4 *lc)
{
  x += xoff;
  w += woff;
  b += boff;
  y += yoff;
  mean += moff;
  rstd += roff;
  const ulong inner = 1;
  const int rms = (flags & NORM_RMS) != 0;
  ROWS_BEGIN
  T cnt = (T)0, mu = (T)0, m2 = (T)0;
#if RN
  VT xc = ROW_LOAD(x, 0);
#else
  LC_LOAD(0, x, 0);
#endif
  if (rms) {
#if RN
    m2 = row_hsum(xc * xc);
#else
    LC_EACH(c) m2 += hsum4(LC(0, c) * LC(0, c));
#endif
    TAIL_EACH(j)
    {
      T v = KILN_LOAD(x, base + j);
      m2 += v * v;
    }
  } else {
    /* The cached part in two passes (exact mean, then squares about it), the rest by
     * Welford's update. */
#if RN
    IVT ok = row_valid(live ? len : 0, lane, lpr, vec);
    cnt = row_hsum(select((VT)0, (VT)1, ok));
    mu = cnt > (T)0 ? row_hsum(xc) / cnt : (T)0;
    VT d = select((VT)0, xc - mu, ok);
    m2 = row_hsum(d * d);
#else
    T sum = (T)0;
    LC_EACH(c)
    {
      cnt += hsum4(ok4(live ? len : 0, lane, lpr, vec, c));
      sum += hsum4(LC(0, c));
    }
    mu = cnt > (T)0 ? sum / cnt : (T)0;
    LC_EACH(c)
    {
      T4 d = (LC(0, c) - mu) * ok4(live ? len : 0, lane, lpr, vec, c);
      m2 += hsum4(d * d);
    }
#endif
    TAIL_EACH(j)
    {
      T v = KILN_LOAD(x, base + j);
      cnt += (T)1;
      T d = v - mu;
      mu += d / cnt;
      m2 += d * (v - mu);
    }
  }
  l1[lid] = cnt;
  l2[lid] = mu;
  l3[lid] = m2;
  if (rms) {
    SEG_TREE_BEGIN { l3[lid] += l3[lid + off]; }
    SEG_TREE_END
  } else {
    SEG_TREE_BEGIN
    {
      T n_ = l1[lid], mu_ = l2[lid], m2_ = l3[lid];
      welford_merge(&n_, &mu_, &m2_, l1[lid + off], l2[lid + off], l3[lid + off]);
      l1[lid] = n_;
      l2[lid] = mu_;
      l3[lid] = m2_;
    }
    SEG_TREE_END
  }
  mu = rms ? (T)0 : l2[seg0];
  T rs = rsqrt(l3[seg0] / (T)len + eps);
  if (live) {
    if (lane == 0 && (flags & NORM_MEAN))
      KILN_STORE(mean, r, mu);
    if (lane == 0 && (flags & NORM_RSTD))
      KILN_STORE(rstd, r, rs);
  }
#if RN
  if (live) {
    VT v = (xc - mu) * rs;
    if (flags & NORM_W)
      v *= row_load(w, 0, 1, len, lane, lpr, vec, 0);
    if (flags & NORM_B)
      v += row_load(b, 0, 1, len, lane, lpr, vec, 0);
    ROW_STORE(y, v);
  }
#else
  if (live)
    for (uint c = 0; c < nch; c += 4) {
      T4 w0, w1, w2, w3, b0, b1, b2, b3;
      ld4x4(w, flags & NORM_W, len, lane, lpr, vec, c, nch, 1, &w0, &w1, &w2, &w3);
      ld4x4(b, flags & NORM_B, len, lane, lpr, vec, c, nch, 0, &b0, &b1, &b2, &b3);
      LC_STORE(y, c, (LC(0, c) - mu) * rs * w0 + b0);
      if (c + 1 < nch)
        LC_STORE(y, c + 1, (LC(0, c + 1) - mu) * rs * w1 + b1);
      if (c + 2 < nch)
        LC_STORE(y, c + 2, (LC(0, c + 2) - mu) * rs * w2 + b2);
      if (c + 3 < nch)
        LC_STORE(y, c + 3, (LC(0, c + 3) - mu) * rs * w3 + b3);
    }
#endif
  TAIL_EACH(j)
  {
    T v = (KILN_LOAD(x, base + j) - mu) * rs;
    if (flags & NORM_W)
      v *= KILN_LOAD(w, j);
    if (flags & NORM_B)
      v += KILN_LOAD(b, j);
    KILN_STORE(y, base + j, v);
  }
  ROWS_END
}

kernel void
norm_bwd(global const ST *g, ulong goff, global const ST *x, ulong xoff, global const ST *w,
         ulong woff, global const ST *mean, ulong moff, global const ST *rstd, ulong roff,
         global ST *dx, ulong dxoff, ulong rows, ulong len, uint lprv, uint flags, local T *la,
         local T *lb, uint nchv, local T4 *lc)
{
  g += goff;
  x += xoff;
  w += woff;
  mean += moff;
  rstd += roff;
  dx += dxoff;
  const ulong inner = 1;
  const int rms = (flags & NORM_RMS) != 0;
  ROWS_BEGIN
#if RN
  VT gc = ROW_LOAD(g, 0), xc = ROW_LOAD(x, 0);
#endif
  T mu = (T)0, rs = (T)0, a = (T)0, c = (T)0;
  if (live) {
    mu = rms ? (T)0 : KILN_LOAD(mean, r);
    rs = KILN_LOAD(rstd, r);
  }
  /* gc becomes g w, xc becomes xhat. */
#if RN
  if (flags & NORM_W)
    gc *= row_load(w, 0, 1, live ? len : 0, lane, lpr, vec, 0);
  xc = (xc - mu) * rs;
  a = row_hsum(gc);
  c = row_hsum(gc * xc);
#else
  LC_LOAD(0, g, 0);
  LC_LOAD(1, x, 0);
  /* Buffer 0 becomes g w, buffer 1 xhat. */
#define NORM_BWD_CHUNK(k, wk)                                                            \
  if ((k) < nch) {                                                                       \
    T4 gw = LC(0, k) * (wk), xh = (LC(1, k) - mu) * rs;                                  \
    LC(0, k) = gw;                                                                       \
    LC(1, k) = xh;                                                                       \
    a += hsum4(gw);                                                                      \
    c += hsum4(gw * xh);                                                                 \
  }
  for (uint k = 0; k < nch; k += 4) {
    T4 w0, w1, w2, w3;
    ld4x4(w, flags & NORM_W, live ? len : 0, lane, lpr, vec, k, nch, 1, &w0, &w1, &w2, &w3);
    NORM_BWD_CHUNK(k, w0)
    NORM_BWD_CHUNK(k + 1, w1)
    NORM_BWD_CHUNK(k + 2, w2)
    NORM_BWD_CHUNK(k + 3, w3)
  }
#endif
  TAIL_EACH(j)
  {
    T gw = KILN_LOAD(g, base + j);
    if (flags & NORM_W)
      gw *= KILN_LOAD(w, j);
    a += gw;
    c += gw * (KILN_LOAD(x, base + j) - mu) * rs;
  }
  la[lid] = a;
  lb[lid] = c;
  SEG_SUM2(la, lb)
  T inv = (T)1 / (T)len;
  a = rms ? (T)0 : la[seg0] * inv;
  c = lb[seg0] * inv;
#if RN
  if (live)
    ROW_STORE(dx, rs * (gc - a - xc * c));
#else
  if (live)
    LC_EACH(k) LC_STORE(dx, k, rs * (LC(0, k) - a - LC(1, k) * c));
#endif
  TAIL_EACH(j)
  {
    T gw = KILN_LOAD(g, base + j);
    if (flags & NORM_W)
      gw *= KILN_LOAD(w, j);
    T xh = (KILN_LOAD(x, base + j) - mu) * rs;
    KILN_STORE(dx, base + j, rs * (gw - a - xh * c));
  }
  ROWS_END
}

kernel void
norm_cols(global const ST *g, ulong goff, global const ST *x, ulong xoff, global const ST *mean,
          ulong moff, global const ST *rstd, ulong roff, global T *part, ulong rows, ulong len,
          ulong nchunk, uint flags)
{
  g += goff;
  x += xoff;
  mean += moff;
  rstd += roff;
  const ulong per = (rows + nchunk - 1) / nchunk;
  for (ulong i = get_global_id(0); i < len * nchunk; i += get_global_size(0)) {
    ulong j = i % len, p = i / len;
    ulong r0 = p * per, r1 = min(r0 + per, rows);
    T sw = (T)0, sb = (T)0;
    /* Four rows' loads before their arithmetic, so that each item has them in flight. */
#define COLS_ROW(r, gv, xh)                                                              \
  const T gv = KILN_LOAD(g, (r) * len + j);                                              \
  const T xh = (KILN_LOAD(x, (r) * len + j) -                                            \
                ((flags & NORM_RMS) ? (T)0 : KILN_LOAD(mean, r))) *                       \
               KILN_LOAD(rstd, r);
    ulong r = r0;
    for (; r + 4 <= r1; r += 4) {
      COLS_ROW(r, g0, h0)
      COLS_ROW(r + 1, g1, h1)
      COLS_ROW(r + 2, g2, h2)
      COLS_ROW(r + 3, g3, h3)
      sw += (g0 * h0 + g1 * h1) + (g2 * h2 + g3 * h3);
      sb += (g0 + g1) + (g2 + g3);
    }
    for (; r < r1; r++) {
      COLS_ROW(r, g0, h0)
      sw += g0 * h0;
      sb += g0;
    }
    part[p * len + j] = sw;
    part[(nchunk + p) * len + j] = sb;
  }
}

#endif /* !KILN_NN_ROW_CPU */

kernel void
norm_cols_finish(global const T *part, ulong nchunk, ulong len, global ST *dw, ulong dwoff,
                 global ST *db, ulong dboff, uint flags)
{
  dw += dwoff;
  db += dboff;
  for (ulong j = get_global_id(0); j < len; j += get_global_size(0)) {
    T sw = (T)0, sb = (T)0;
    for (ulong p = 0; p < nchunk; p++) {
      sw += part[p * len + j];
      sb += part[(nchunk + p) * len + j];
    }
    if (flags & NORM_DW)
      KILN_STORE(dw, j, sw);
    if (flags & NORM_DB)
      KILN_STORE(db, j, sb);
  }
}

/* Row r's loss: with flags bit 2 (reduced later) into lr with its weight in lv, else into out. */
#define CLASS_LOSS_OUT(r, loss, wgt)                                                     \
  do {                                                                                   \
    if (flags & 2u) {                                                                    \
      lr[r] = loss;                                                                      \
      lv[r] = wgt;                                                                       \
    } else {                                                                             \
      KILN_STORE(out, r, loss);                                                          \
    }                                                                                    \
  } while (0)

/* The smoothed target weight of class j: (1 - eps) [j == t] + eps / C. */
#define CE_Q(j, t) (((j) == (ulong)(t) ? (T)1 - eps : (T)0) + eps / (T)len)

#if KILN_NN_ROW_CPU
#include "nn_rows_cpu.clh"
#else
kernel void
ce_fwd(global const ST *z, ulong zoff, global const long *ti, ulong tioff, global const ST *tp,
       ulong tpoff, global ST *out, ulong outoff, global T *lr, global T *lv, ulong rows,
       ulong len, uint lprv, long ignore, T eps, uint flags, local T *lm, local T *ls,
       local T *la, local T *lb, uint nchv, local T4 *lc)
{
  z += zoff;
  ti += tioff;
  tp += tpoff;
  out += outoff;
  const ulong inner = 1;
  const int probs = flags & 1u;
  ROWS_BEGIN
  T m = -INFINITY, s = (T)0, a = (T)0, c = (T)0;
#if RN
  {
    VT zc = ROW_LOAD(z, -INFINITY);
    IVT ok = row_valid(live ? len : 0, lane, lpr, vec);
    m = row_hmax(zc);
    s = row_hsum(select(row_exp(zc - m), (VT)0, zc == (VT)(-INFINITY)));
    if (probs) {
      VT q = select((VT)0, ((T)1 - eps) * ROW_LOAD(tp, 0) + eps / (T)len, ok);
      a = row_hsum(select((VT)0, q * zc, ok));
      c = row_hsum(q);
    } else {
      a = row_hsum(select((VT)0, zc, ok));
    }
  }
#else
  /* Nothing is written per element: the cache only lets every load go out first. */
  LC_LOAD(0, z, -INFINITY);
  LC_EACH(k) m = fmax(m, hmax4(LC(0, k)));
  LC_EACH(k)
  {
    T4 zc = LC(0, k);
    s += hsum4(select(exp4(zc - m), (T4)0, zc == (T4)(-INFINITY)));
    T4 ok = ok4(live ? len : 0, lane, lpr, vec, k);
    if (probs) {
      T4 q = (((T)1 - eps) * ld4(tp, base, 1, live ? len : 0, lane, lpr, vec, k, 0) +
              eps / (T)len) *
             ok;
      a += hsum4(select((T4)0, q * zc, ok != (T4)0));
      c += hsum4(q);
    } else {
      a += hsum4(select((T4)0, zc, ok != (T4)0));
    }
  }
#endif
  TAIL_EACH(j)
  {
    T v = KILN_LOAD(z, base + j);
    lse_add(&m, &s, v);
    if (probs) {
      T q = ((T)1 - eps) * KILN_LOAD(tp, base + j) + eps / (T)len;
      a += q * v;
      c += q;
    } else {
      a += v;
    }
  }
  la[lid] = a;
  lb[lid] = c;
  SEG_LSE(m, s, la, lb)
  if (live && lane == 0) {
    SEG_LSE_READ(m, s);
    T lse = m + log(s), loss, wgt = (T)1;
    if (probs) {
      loss = lse * lb[seg0] - la[seg0];
    } else {
      long t = ti[r];
      if (t == ignore) {
        loss = (T)0;
        wgt = (T)0;
      } else if (t < 0 || t >= (long)len) {
        loss = NAN;
      } else {
        loss = lse - ((T)1 - eps) * KILN_LOAD(z, base + (ulong)t) - eps / (T)len * la[seg0];
      }
    }
    CLASS_LOSS_OUT(r, loss, wgt);
  }
  ROWS_END
}

kernel void
ce_bwd(global const ST *gout, ulong goff, global const ST *z, ulong zoff, global const long *ti,
       ulong tioff, global const ST *tp, ulong tpoff, global ST *dz, ulong dzoff,
       global const T *denom, ulong rows, ulong len, uint lprv, long ignore, T eps, T scale,
       uint flags, local T *lm, local T *ls, local T *lb, uint nchv, local T4 *lc)
{
  gout += goff;
  z += zoff;
  ti += tioff;
  tp += tpoff;
  dz += dzoff;
  const ulong inner = 1;
  const int probs = flags & 1u;
  local T *none = 0;
  T gall = (flags & 4u) ? (T)0 : KILN_LOAD(gout, 0) * scale;
  if (flags & 8u)
    gall /= denom[0];
  ROWS_BEGIN
  T m = -INFINITY, s = (T)0, c = (T)0;
#if RN
  /* zc becomes exp(z - m0), as in softmax_fwd; pc the smoothed target (0 past the row). */
  VT zc = ROW_LOAD(z, -INFINITY), pc = (VT)0;
  m = row_hmax(zc);
  const T m0 = m;
  zc = select(row_exp(zc - m0), (VT)0, zc == (VT)(-INFINITY));
  s = row_hsum(zc);
  if (probs) {
    pc = select((VT)0, ((T)1 - eps) * ROW_LOAD(tp, 0) + eps / (T)len,
                row_valid(live ? len : 0, lane, lpr, vec));
    c = row_hsum(pc);
  }
#else
  /* Buffer 0 becomes exp(z - m0), buffer 1 (probabilities only) the smoothed target. */
  LC_LOAD(0, z, -INFINITY);
  LC_EACH(k) m = fmax(m, hmax4(LC(0, k)));
  const T m0 = m;
  LC_EACH(k)
  {
    T4 zc = LC(0, k);
    zc = select(exp4(zc - m0), (T4)0, zc == (T4)(-INFINITY));
    LC(0, k) = zc;
    s += hsum4(zc);
    if (probs) {
      T4 q = (((T)1 - eps) * ld4(tp, base, 1, live ? len : 0, lane, lpr, vec, k, 0) +
              eps / (T)len) *
             ok4(live ? len : 0, lane, lpr, vec, k);
      LC(1, k) = q;
      c += hsum4(q);
    }
  }
#endif
  TAIL_EACH(j)
  {
    lse_add(&m, &s, KILN_LOAD(z, base + j));
    if (probs)
      c += ((T)1 - eps) * KILN_LOAD(tp, base + j) + eps / (T)len;
  }
  lb[lid] = c;
  SEG_LSE(m, s, none, lb)
  SEG_LSE_READ(m, s);
  if (live) {
    T gr = (flags & 4u) ? KILN_LOAD(gout, r) * scale : gall;
    T inv = (T)1 / s;
    T sc = exp(m0 - m) * inv;
    if (probs) {
      T qs = lb[seg0];
#if RN
      ROW_STORE(dz, gr * (zc * sc * qs - pc));
#else
      LC_EACH(k) LC_STORE(dz, k, gr * (LC(0, k) * sc * qs - LC(1, k)));
#endif
      TAIL_EACH(j)
      {
        T q = ((T)1 - eps) * KILN_LOAD(tp, base + j) + eps / (T)len;
        KILN_STORE(dz, base + j, gr * (exp(KILN_LOAD(z, base + j) - m) * inv * qs - q));
      }
    } else {
      long t = ti[r];
      if (t == ignore) {
#if RN
        ROW_STORE(dz, (VT)0);
#else
        LC_EACH(k) LC_STORE(dz, k, (T4)0);
#endif
        TAIL_EACH(j) KILN_STORE(dz, base + j, (T)0);
      } else {
        T bad = (t < 0 || t >= (long)len) ? (T)NAN : (T)0;
#if RN
        VT q = select((VT)0, (VT)((T)1 - eps), row_pos(lane, lpr, vec) == (IVT)(IS)t);
        ROW_STORE(dz, gr * (zc * sc - (q + eps / (T)len)) + bad);
#else
        LC_EACH(k)
        LC_STORE(dz, k,
                 gr * (LC(0, k) * sc - (hit4((ulong)t, lane, lpr, vec, k) * ((T)1 - eps) +
                                        eps / (T)len)) +
                     bad);
#endif
        TAIL_EACH(j)
        KILN_STORE(dz, base + j, gr * (exp(KILN_LOAD(z, base + j) - m) * inv - CE_Q(j, t)) + bad);
      }
    }
  }
  ROWS_END
}
#endif /* KILN_NN_ROW_CPU */

kernel void
nll_fwd(global const ST *x, ulong xoff, global const long *ti, ulong tioff, global ST *out,
        ulong outoff, global T *lr, global T *lv, ulong rows, ulong len, long ignore,
        uint flags)
{
  x += xoff;
  ti += tioff;
  out += outoff;
  for (ulong r = get_global_id(0); r < rows; r += get_global_size(0)) {
    long t = ti[r];
    T loss = (T)0, wgt = (T)1;
    if (t == ignore)
      wgt = (T)0;
    else if (t < 0 || t >= (long)len)
      loss = NAN;
    else
      loss = -KILN_LOAD(x, r * len + (ulong)t);
    CLASS_LOSS_OUT(r, loss, wgt);
  }
}

kernel void
nll_bwd(global const ST *gout, ulong goff, global const long *ti, ulong tioff, global ST *dx,
        ulong dxoff, global const T *denom, ulong rows, ulong len, long ignore, T scale,
        uint flags)
{
  gout += goff;
  ti += tioff;
  dx += dxoff;
  T gall = (flags & 4u) ? (T)0 : KILN_LOAD(gout, 0) * scale;
  if (flags & 8u)
    gall /= denom[0];
  for (ulong i = get_global_id(0); i < rows * len; i += get_global_size(0)) {
    ulong r = i / len, j = i % len;
    long t = ti[r];
    T v = (T)0;
    if (t != ignore) {
      if (t < 0 || t >= (long)len)
        v = NAN;
      else if (j == (ulong)t)
        v = -((flags & 4u) ? KILN_LOAD(gout, r) * scale : gall);
    }
    KILN_STORE(dx, i, v);
  }
}

/* Tree sum of every work-item's (a, b) in one work-group (power-of-two local size). */
inline void group_sum2(local T *sa, local T *sb)
{
  uint lid = get_local_id(0);
  for (uint off = get_local_size(0) >> 1; off > 0; off >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < off) {
      sa[lid] += sa[lid + off];
      sb[lid] += sb[lid + off];
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}

kernel void
nn_count(global const long *ti, ulong tioff, ulong rows, long ignore, global T *out,
         local T *sa, local T *sb)
{
  ti += tioff;
  uint lid = get_local_id(0);
  T c = (T)0;
  for (ulong r = lid; r < rows; r += get_local_size(0))
    c += ti[r] != ignore ? (T)1 : (T)0;
  sa[lid] = c;
  sb[lid] = (T)0;
  group_sum2(sa, sb);
  if (lid == 0)
    out[0] = sa[0];
}

kernel void
nn_finish(global const T *a, global const T *b, ulong n, global ST *out, ulong outoff, T scale,
          uint flags, local T *sa, local T *sb)
{
  uint lid = get_local_id(0);
  T x = (T)0, y = (T)0;
  for (ulong i = lid; i < n; i += get_local_size(0)) {
    x += a[i];
    if (flags & 1u)
      y += b[i];
  }
  sa[lid] = x;
  sb[lid] = y;
  group_sum2(sa, sb);
  if (lid == 0)
    KILN_STORE(out, outoff, (flags & 1u) ? sa[0] / sb[0] : sa[0] * scale);
}
