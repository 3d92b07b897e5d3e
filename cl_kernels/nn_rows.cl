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
 * Tunable KILN_NN_ROW_ITEMS (R: 0, 1, 2, 4, 8, 16 or 32; lib/ops/nn.c picks it and the local size,
 * kiln__nn_knobs_get): each lane keeps its first R elements of the row (j = lane + k lpr,
 * k < R) in private registers, loaded all at once before any arithmetic, so that a row is
 * read from global memory once and every lane has R loads in flight instead of one (the
 * streaming form was latency-bound at 0.7x PyTorch on the H200). Elements past R lpr (rows
 * longer than the host sized the group for) are streamed, read again by every pass. R = 0
 * streams everything. KILN_NN_UNROLL=1 (the host's choice on GPUs) unrolls the cache loops.
 *
 * Kernels (offsets in elements):
 *   softmax_fwd(x, xoff, y, yoff, rows, len, inner, lpr, logmode, lm, ls)
 *   softmax_bwd(g, goff, y, yoff, dx, dxoff, rows, len, inner, lpr, logmode, la)
 *   norm_fwd(x, xoff, w, woff, b, boff, y, yoff, mean, moff, rstd, roff, rows, len, eps,
 *            lpr, flags, l1, l2, l3)            flags: NORM_* below
 *   norm_bwd(g, goff, x, xoff, w, woff, mean, moff, rstd, roff, dx, dxoff, rows, len, lpr,
 *            flags, la, lb)
 *   norm_cols(g, goff, x, xoff, mean, moff, rstd, roff, part, rows, len, nchunk, flags)
 *     1-D over len * nchunk items: column sums of g * xhat and g over chunks of rows, into
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
  const uint lane = lid & (lpr - 1u), seg0 = lid - lane;                                 \
  const ulong rpg = lsz / lpr, nblk = (rows + rpg - 1) / rpg;                            \
  for (ulong blk = get_group_id(0); blk < nblk; blk += get_num_groups(0)) {              \
    const ulong r = blk * rpg + lid / lpr;                                               \
    const int live = r < rows;                                                           \
    const ulong base = (r / inner) * len * inner + r % inner;
/* Every lane is done with the local scratch before the next block refills it. */
#define ROWS_END                                                                         \
  barrier(CLK_LOCAL_MEM_FENCE);                                                       \
  }

#ifndef KILN_NN_ROW_ITEMS
#define KILN_NN_ROW_ITEMS 0
#endif
/* The size of the private row caches (OpenCL C has no empty arrays). */
#define ROW_CACHE_LEN (KILN_NN_ROW_ITEMS > 0 ? KILN_NN_ROW_ITEMS : 1)
/* Row position of this lane's cached element k. */
#define CACHE_J(k) (lane + (ulong)(k) * lpr)
/* Every cached element k of this lane's row that exists. With KILN_NN_UNROLL (GPUs) the
 * loops are unrolled, so that the caches stay in registers (an array indexed at run time
 * lives in memory; clang leaves loops of 16 and 32 rolled); CPUs keep them rolled, which
 * costs them nothing and compiles 5x faster at 32. */
#if KILN_NN_UNROLL
#define CACHE_UNROLL _Pragma("unroll")
#else
#define CACHE_UNROLL
#endif
#define CACHE_EACH(k)                                                                    \
  CACHE_UNROLL for (uint k = 0; k < KILN_NN_ROW_ITEMS; k++)                              \
    if (live && CACHE_J(k) < len)
/* Every element j of this lane's row past the cached ones. */
#define TAIL_EACH(j)                                                                     \
  if (live)                                                                              \
    for (ulong j = lane + (ulong)KILN_NN_ROW_ITEMS * lpr; j < len; j += lpr)
/* Declares T c[ROW_CACHE_LEN] and loads this lane's cached elements of p into it. */
#define CACHE_LOAD(c, p)                                                                 \
  T c[ROW_CACHE_LEN];                                                                    \
  CACHE_EACH(k_) c[k_] = KILN_LOAD(p, base + CACHE_J(k_) * inner);

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

kernel void
softmax_fwd(global const ST *x, ulong xoff, global ST *y, ulong yoff, ulong rows, ulong len,
            ulong inner, uint lpr, uint logmode, local T *lm, local T *ls)
{
  x += xoff;
  y += yoff;
  local T *none = 0;
  ROWS_BEGIN
  CACHE_LOAD(v, x)
  /* The cached part's (m0, s0) with one exp per element (NaN is skipped by the max and
   * reaches s0 through its exp); v keeps x for log_softmax, else exp(x - m0). */
  T m = -INFINITY, s = (T)0;
  CACHE_EACH(k) m = v[k] > m ? v[k] : m;
  const T m0 = m;
  CACHE_EACH(k)
  {
    T e = v[k] == -INFINITY ? (T)0 : exp(v[k] - m0);
    s += e;
    if (!logmode)
      v[k] = e;
  }
  TAIL_EACH(j) lse_add(&m, &s, KILN_LOAD(x, base + j * inner));
  SEG_LSE(m, s, none, none)
  SEG_LSE_READ(m, s);
  if (logmode) {
    T sub = m + log(s);
    CACHE_EACH(k) KILN_STORE(y, base + CACHE_J(k) * inner, v[k] - sub);
    TAIL_EACH(j) KILN_STORE(y, base + j * inner, KILN_LOAD(x, base + j * inner) - sub);
  } else {
    /* m0 = m = -inf (a row of only -inf) makes the scale NaN, as the streamed form's
     * exp(-inf + inf) makes every element NaN. */
    T inv = (T)1 / s, sc = exp(m0 - m) * inv;
    CACHE_EACH(k) KILN_STORE(y, base + CACHE_J(k) * inner, v[k] * sc);
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
            ulong dxoff, ulong rows, ulong len, ulong inner, uint lpr, uint logmode,
            local T *la)
{
  g += goff;
  y += yoff;
  dx += dxoff;
  local T *none = 0;
  ROWS_BEGIN
  CACHE_LOAD(gc, g)
  CACHE_LOAD(yc, y)
  T a = (T)0;
  CACHE_EACH(k) a += logmode ? gc[k] : gc[k] * yc[k];
  TAIL_EACH(j)
  {
    T gv = KILN_LOAD(g, base + j * inner);
    a += logmode ? gv : gv * KILN_LOAD(y, base + j * inner);
  }
  la[lid] = a;
  SEG_SUM2(la, none)
  a = la[seg0];
  CACHE_EACH(k)
  KILN_STORE(dx, base + CACHE_J(k) * inner, logmode ? gc[k] - exp(yc[k]) * a : yc[k] * (gc[k] - a));
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
         ulong roff, ulong rows, ulong len, T eps, uint lpr, uint flags, local T *l1,
         local T *l2, local T *l3)
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
  CACHE_LOAD(xc, x)
  T cnt = (T)0, mu = (T)0, m2 = (T)0;
  if (rms) {
    CACHE_EACH(k) m2 += xc[k] * xc[k];
    TAIL_EACH(j)
    {
      T v = KILN_LOAD(x, base + j);
      m2 += v * v;
    }
  } else {
    /* The cached part in two passes (exact mean, then squares about it), the rest by
     * Welford's update. */
    CACHE_EACH(k)
    {
      cnt += (T)1;
      mu += xc[k];
    }
    mu = cnt > (T)0 ? mu / cnt : (T)0;
    CACHE_EACH(k)
    {
      T d = xc[k] - mu;
      m2 += d * d;
    }
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
  CACHE_EACH(k)
  {
    ulong j = CACHE_J(k);
    T v = (xc[k] - mu) * rs;
    if (flags & NORM_W)
      v *= KILN_LOAD(w, j);
    if (flags & NORM_B)
      v += KILN_LOAD(b, j);
    KILN_STORE(y, base + j, v);
  }
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
         global ST *dx, ulong dxoff, ulong rows, ulong len, uint lpr, uint flags, local T *la,
         local T *lb)
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
  CACHE_LOAD(gc, g)
  CACHE_LOAD(xc, x)
  T mu = (T)0, rs = (T)0, a = (T)0, c = (T)0;
  if (live) {
    mu = rms ? (T)0 : KILN_LOAD(mean, r);
    rs = KILN_LOAD(rstd, r);
  }
  /* gc becomes g w, xc becomes xhat. */
  CACHE_EACH(k)
  {
    if (flags & NORM_W)
      gc[k] *= KILN_LOAD(w, CACHE_J(k));
    xc[k] = (xc[k] - mu) * rs;
    a += gc[k];
    c += gc[k] * xc[k];
  }
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
  CACHE_EACH(k) KILN_STORE(dx, base + CACHE_J(k), rs * (gc[k] - a - xc[k] * c));
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
    for (ulong r = r0; r < r1; r++) {
      T gv = KILN_LOAD(g, r * len + j);
      T mu = (flags & NORM_RMS) ? (T)0 : KILN_LOAD(mean, r);
      sw += gv * (KILN_LOAD(x, r * len + j) - mu) * KILN_LOAD(rstd, r);
      sb += gv;
    }
    part[p * len + j] = sw;
    part[(nchunk + p) * len + j] = sb;
  }
}

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

kernel void
ce_fwd(global const ST *z, ulong zoff, global const long *ti, ulong tioff, global const ST *tp,
       ulong tpoff, global ST *out, ulong outoff, global T *lr, global T *lv, ulong rows,
       ulong len, uint lpr, long ignore, T eps, uint flags, local T *lm, local T *ls,
       local T *la, local T *lb)
{
  z += zoff;
  ti += tioff;
  tp += tpoff;
  out += outoff;
  const ulong inner = 1;
  const int probs = flags & 1u;
  ROWS_BEGIN
  CACHE_LOAD(zc, z)
  T pc[ROW_CACHE_LEN];
  if (probs) {
    CACHE_EACH(k) pc[k] = KILN_LOAD(tp, base + CACHE_J(k));
  }
  T m = -INFINITY, s = (T)0, a = (T)0, c = (T)0;
  CACHE_EACH(k) m = zc[k] > m ? zc[k] : m;
  const T m0 = m;
  CACHE_EACH(k)
  {
    T v = zc[k];
    s += v == -INFINITY ? (T)0 : exp(v - m0);
    if (probs) {
      T q = ((T)1 - eps) * pc[k] + eps / (T)len;
      a += q * v;
      c += q;
    } else {
      a += v;
    }
  }
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
       global const T *denom, ulong rows, ulong len, uint lpr, long ignore, T eps, T scale,
       uint flags, local T *lm, local T *ls, local T *lb)
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
  CACHE_LOAD(zc, z)
  T pc[ROW_CACHE_LEN];
  if (probs) {
    CACHE_EACH(k) pc[k] = KILN_LOAD(tp, base + CACHE_J(k));
  }
  /* zc becomes exp(z - m0), as in softmax_fwd. */
  T m = -INFINITY, s = (T)0, c = (T)0;
  CACHE_EACH(k) m = zc[k] > m ? zc[k] : m;
  const T m0 = m;
  CACHE_EACH(k)
  {
    zc[k] = zc[k] == -INFINITY ? (T)0 : exp(zc[k] - m0);
    s += zc[k];
    if (probs) {
      pc[k] = ((T)1 - eps) * pc[k] + eps / (T)len;
      c += pc[k];
    }
  }
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
    T inv = (T)1 / s, sc = exp(m0 - m) * inv;
    if (probs) {
      T qs = lb[seg0];
      CACHE_EACH(k) KILN_STORE(dz, base + CACHE_J(k), gr * (zc[k] * sc * qs - pc[k]));
      TAIL_EACH(j)
      {
        T q = ((T)1 - eps) * KILN_LOAD(tp, base + j) + eps / (T)len;
        KILN_STORE(dz, base + j, gr * (exp(KILN_LOAD(z, base + j) - m) * inv * qs - q));
      }
    } else {
      long t = ti[r];
      if (t == ignore) {
        CACHE_EACH(k) KILN_STORE(dz, base + CACHE_J(k), (T)0);
        TAIL_EACH(j) KILN_STORE(dz, base + j, (T)0);
      } else {
        T bad = (t < 0 || t >= (long)len) ? (T)NAN : (T)0;
        CACHE_EACH(k)
        KILN_STORE(dz, base + CACHE_J(k), gr * (zc[k] * sc - CE_Q(CACHE_J(k), t)) + bad);
        TAIL_EACH(j)
        KILN_STORE(dz, base + j, gr * (exp(KILN_LOAD(z, base + j) - m) * inv - CE_Q(j, t)) + bad);
      }
    }
  }
  ROWS_END
}

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
