/*
 * nn training family: scaled dot-product attention, flash style (lib/ops/nn_attention.c,
 * docs/nn.md "Attention"), and rotary position embedding.
 *
 * Build options: common.cl's (-DT=..., -DKILN_DT_...=1); f32 and f64.
 *
 * Layout: q [BH, Sq, D], k [BH, Sk, D], v [BH, Sk, Dv], out [BH, Sq, Dv], lse [BH, Sq],
 * D, Dv <= ATT_DMAX; mask (flags ATT_MASK) additive [Sq, Sk] at mask + bh * mstride.
 * flags ATT_CAUSAL: key j is visible to query i only when j <= i (top-left aligned, as
 * PyTorch's is_causal).
 *
 * Forward (att_fwd): one work-group of 2 ATT_BQ items per (bh, tile of ATT_BQ queries), two
 * items per query row, each keeping its half of the row's scaled q and of the output
 * accumulator in registers (the Q tile stays on chip for the whole kernel); K and V tiles of
 * ATT_BK keys stream through local memory and are read as broadcast 4-vectors; each row's
 * running maximum m and sum l are updated once per key tile (online softmax): no Sq x Sk
 * temporary. out = acc / l, lse = m + log(l) (a row with every key masked gives NaN and -inf).
 *
 * Backward (FlashAttention-2: recompute p = exp(s - lse) from the saved lse):
 *   att_bwd_pre: delta[i] = sum_d dout[i, d] out[i, d]            flat over BH Sq rows
 *   att_bwd_dkdv: one item per key row (ATT_BB of them per group), looping over query tiles:
 *     dv_j += p_ij dout_i, dk_j += p_ij (dout_i . v_j - delta_i) scale q_i
 *   att_bwd_dq: one item per query row, looping over key tiles:
 *     dq_i += p_ij (dout_i . v_j - delta_i) scale k_j
 * No atomics: each output row is owned by one work-item.
 *
 * Kernels:
 *   att_fwd(q, qoff, k, koff, v, voff, mask, moff, o, ooff, lse, loff, BH, Sq, Sk, D, Dv,
 *           mstride, scale, flags)
 *   att_bwd_pre(dout, doff, o, ooff, delta, rows, Dv)
 *   att_bwd_dkdv(q, qoff, k, koff, v, voff, mask, moff, dout, doff, lse, loff, delta, dk,
 *                dkoff, dv, dvoff, BH, Sq, Sk, D, Dv, mstride, scale, flags)
 *   att_bwd_dq(q, qoff, k, koff, v, voff, mask, moff, dout, doff, lse, loff, delta, dq, dqoff,
 *              BH, Sq, Sk, D, Dv, mstride, scale, flags)
 *   rope(x, xoff, cosv, coff, sinv, soff, y, yoff, rows, S, D, R, flags)
 *     rotary embedding of x [rows = B S, D] (position = row % S) with cos/sin tables [S, R/2]
 *     over the first R features; flags ROPE_HALF: pairs (d, d + R/2), else (2d, 2d + 1);
 *     ROPE_INV: rotate by -theta (the backward pass). Features beyond R are copied.
 */
#include "common.cl"

#define ATT_DMAX 128
/* Tiles sized so that each kernel's local arrays fit in 32 KiB (OpenCL's minimum for GPUs,
 * and oclgrind's default) at ATT_DMAX = 128. */
#if defined(KILN_DT_F64)
#define ATT_BQ 16
#define ATT_BK 12
#define ATT_BB 7
#else
#define ATT_BQ 32
#define ATT_BK 24
#define ATT_BB 15
#endif

#define ATT_CAUSAL 1u
#define ATT_MASK 2u

#define ROPE_HALF 1u
#define ROPE_INV 2u

/* The score of query i against key j: s (already scaled), -inf where masked out. */
#define ATT_SCORE(s, i, j)                                                                  \
  do {                                                                                      \
    if ((j) >= Sk || ((flags & ATT_CAUSAL) && (j) > (i)))                                   \
      s = -INFINITY;                                                                        \
    else if (flags & ATT_MASK)                                                              \
      s += KILN_LOAD(mb, (i) * Sk + (j));                                                   \
  } while (0)

/*
 * Forward. Two work-items per query row (h = 0, 1), each holding in registers its half of the
 * row's scaled q and of the output accumulator: item h owns the 4-element chunks 8i + 4h
 * (i < ATT_DMAX / 8), so any D splits evenly. K and V tiles of ATT_BK keys live in local memory
 * with rows zero-padded to a multiple of 4 (DP, DVP), read as broadcast 4-vectors; the two
 * halves of each score meet through local memory (sp). Both items of a row then run the same
 * online-softmax update on identical values.
 */
#define T4 KILN_CAT(T, 4)
#define KILN_CAT(a, b) KILN_CAT_(a, b)
#define KILN_CAT_(a, b) a##b
#define ATT_NCH (ATT_DMAX / 8)

kernel __attribute__((reqd_work_group_size(2 * ATT_BQ, 1, 1))) void
att_fwd(global const ST *q, ulong qoff, global const ST *k, ulong koff, global const ST *v,
        ulong voff, global const ST *mask, ulong moff, global ST *o, ulong ooff, global ST *lse,
        ulong loff, ulong BH, ulong Sq, ulong Sk, ulong D, ulong Dv, ulong mstride, T scale,
        uint flags)
{
  local T ks[ATT_BK * ATT_DMAX];
  local T vs[ATT_BK * ATT_DMAX];
  local T sp[2 * ATT_BQ * ATT_BK];
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const uint row = lid >> 1, h = lid & 1u;
  const ulong nqt = (Sq + ATT_BQ - 1) / ATT_BQ, g = get_group_id(0);
  const ulong bh = g / nqt, q0 = (g % nqt) * ATT_BQ, i = q0 + row;
  const int live = i < Sq;
  const ulong DP = (D + 3) & ~(ulong)3, DVP = (Dv + 3) & ~(ulong)3;
  global const ST *kb = k + koff + bh * Sk * D;
  global const ST *vb = v + voff + bh * Sk * Dv;
  global const ST *mb = mask + moff + bh * mstride;
  T4 qr[ATT_NCH], acc[ATT_NCH];
  for (int c = 0; c < ATT_NCH; c++) {
    T e4[4];
    for (int u = 0; u < 4; u++) {
      ulong d = 8 * c + 4 * h + u;
      e4[u] = live && d < D ? KILN_LOAD(q, qoff + (bh * Sq + i) * D + d) * scale : (T)0;
    }
    qr[c] = (T4)(e4[0], e4[1], e4[2], e4[3]);
    acc[c] = (T4)((T)0);
  }
  T m = -INFINITY, l = (T)0;
  ulong kend = Sk;
  if ((flags & ATT_CAUSAL) && q0 + ATT_BQ < kend)
    kend = q0 + ATT_BQ;
  for (ulong k0 = 0; k0 < kend; k0 += ATT_BK) {
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint r = 0; r < ATT_BK; r++) {
      const int rl = k0 + r < Sk;
      for (ulong d = lid; d < DP; d += lsz)
        ks[r * DP + d] = rl && d < D ? KILN_LOAD(kb, (k0 + r) * D + d) : (T)0;
      for (ulong d = lid; d < DVP; d += lsz)
        vs[r * DVP + d] = rl && d < Dv ? KILN_LOAD(vb, (k0 + r) * Dv + d) : (T)0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int j = 0; j < ATT_BK; j++) {
      T4 a4 = (T4)((T)0);
      for (int c = 0; c < ATT_NCH; c++)
        if (8 * c + 4 * h < D)
          a4 += qr[c] * vload4(0, ks + j * DP + 8 * c + 4 * h);
      sp[(2 * row + h) * ATT_BK + j] = a4.x + a4.y + a4.z + a4.w;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    T s[ATT_BK];
    T tmax = -INFINITY;
    for (int j = 0; j < ATT_BK; j++) {
      T a = sp[2 * row * ATT_BK + j] + sp[(2 * row + 1) * ATT_BK + j];
      if (live)
        ATT_SCORE(a, i, k0 + j);
      s[j] = a;
      tmax = fmax(tmax, a);
    }
    T mnew = fmax(m, tmax);
    if (live && mnew > -INFINITY) {
      T cf = exp(m - mnew);
      l *= cf;
      for (int j = 0; j < ATT_BK; j++) {
        s[j] = exp(s[j] - mnew);
        l += s[j];
      }
      for (int c = 0; c < ATT_NCH; c++)
        if (8 * c + 4 * h < Dv) {
          T4 a4 = acc[c] * cf;
          for (int j = 0; j < ATT_BK; j++)
            a4 += s[j] * vload4(0, vs + j * DVP + 8 * c + 4 * h);
          acc[c] = a4;
        }
      m = mnew;
    }
  }
  if (live) {
    global ST *ob = o + ooff + (bh * Sq + i) * Dv;
    T inv = (T)1 / l;
    for (int c = 0; c < ATT_NCH; c++) {
      T4 a4 = acc[c] * inv;
      T e4[4] = {a4.x, a4.y, a4.z, a4.w};
      for (int u = 0; u < 4; u++) {
        ulong d = 8 * c + 4 * h + u;
        if (d < Dv)
          KILN_STORE(ob, d, e4[u]);
      }
    }
    if (h == 0)
      KILN_STORE(lse, loff + bh * Sq + i, m + log(l));
  }
}

kernel void
att_bwd_pre(global const ST *dout, ulong doff, global const ST *o, ulong ooff, global T *delta,
            ulong rows, ulong Dv)
{
  for (ulong r = get_global_id(0); r < rows; r += get_global_size(0)) {
    T a = (T)0;
    for (ulong d = 0; d < Dv; d++)
      a += KILN_LOAD(dout, doff + r * Dv + d) * KILN_LOAD(o, ooff + r * Dv + d);
    delta[r] = a;
  }
}

kernel __attribute__((reqd_work_group_size(ATT_BB, 1, 1))) void
att_bwd_dkdv(global const ST *q, ulong qoff, global const ST *k, ulong koff, global const ST *v,
             ulong voff, global const ST *mask, ulong moff, global const ST *dout, ulong doff,
             global const ST *lse, ulong loff, global const T *delta, global ST *dk, ulong dkoff,
             global ST *dv, ulong dvoff, ulong BH, ulong Sq, ulong Sk, ulong D, ulong Dv,
             ulong mstride, T scale, uint flags)
{
  local T ks[ATT_BB * (ATT_DMAX + 1)];
  local T vs[ATT_BB * (ATT_DMAX + 1)];
  local T qs[ATT_BB * ATT_DMAX];
  local T dos[ATT_BB * ATT_DMAX];
  local T ls[ATT_BB], dl[ATT_BB];
  const uint lid = get_local_id(0);
  const ulong nkt = (Sk + ATT_BB - 1) / ATT_BB, g = get_group_id(0);
  const ulong bh = g / nkt, k0 = (g % nkt) * ATT_BB, j = k0 + lid;
  const int live = j < Sk;
  const ulong KS = D + 1, VS = Dv + 1;
  global const ST *qb = q + qoff + bh * Sq * D;
  global const ST *kb = k + koff + bh * Sk * D;
  global const ST *vb = v + voff + bh * Sk * Dv;
  global const ST *db = dout + doff + bh * Sq * Dv;
  global const ST *mb = mask + moff + bh * mstride;
  for (ulong e = lid; e < ATT_BB * D; e += ATT_BB)
    ks[(e / D) * KS + e % D] = k0 + e / D < Sk ? KILN_LOAD(kb, k0 * D + e) : (T)0;
  for (ulong e = lid; e < ATT_BB * Dv; e += ATT_BB)
    vs[(e / Dv) * VS + e % Dv] = k0 + e / Dv < Sk ? KILN_LOAD(vb, k0 * Dv + e) : (T)0;
  T adk[ATT_DMAX], adv[ATT_DMAX];
  for (int d = 0; d < ATT_DMAX; d++)
    adk[d] = adv[d] = (T)0;
  /* Causal: queries before the tile's first key see none of its keys. */
  ulong qstart = (flags & ATT_CAUSAL) ? k0 - k0 % ATT_BB : 0;
  for (ulong i0 = qstart; i0 < Sq; i0 += ATT_BB) {
    barrier(CLK_LOCAL_MEM_FENCE);
    for (ulong e = lid; e < ATT_BB * D; e += ATT_BB)
      qs[e] = i0 + e / D < Sq ? KILN_LOAD(qb, i0 * D + e) : (T)0;
    for (ulong e = lid; e < ATT_BB * Dv; e += ATT_BB)
      dos[e] = i0 + e / Dv < Sq ? KILN_LOAD(db, i0 * Dv + e) : (T)0;
    if (i0 + lid < Sq) {
      ls[lid] = KILN_LOAD(lse, loff + bh * Sq + i0 + lid);
      dl[lid] = delta[bh * Sq + i0 + lid];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* No `continue` around the barriers: PoCL 3.1 miscompiled that shape (nn_norm.cl). */
    for (int r = 0; live && r < ATT_BB; r++) {
      ulong i = i0 + r;
      if (i >= Sq)
        break;
      T s = (T)0;
      for (ulong d = 0; d < D; d++)
        s += qs[r * D + d] * ks[lid * KS + d];
      s *= scale;
      ATT_SCORE(s, i, j);
      if (s == -INFINITY)
        continue;
      T p = exp(s - ls[r]);
      T dp = (T)0;
      for (ulong d = 0; d < Dv; d++)
        dp += dos[r * Dv + d] * vs[lid * VS + d];
      T ds = p * (dp - dl[r]) * scale;
      for (int d = 0; d < ATT_DMAX; d++) {
        if (d < Dv)
          adv[d] += p * dos[r * Dv + d];
        if (d < D)
          adk[d] += ds * qs[r * D + d];
      }
    }
  }
  if (live) {
    for (int d = 0; d < ATT_DMAX; d++) {
      if (d < D)
        KILN_STORE(dk, dkoff + (bh * Sk + j) * D + d, adk[d]);
      if (d < Dv)
        KILN_STORE(dv, dvoff + (bh * Sk + j) * Dv + d, adv[d]);
    }
  }
}

kernel __attribute__((reqd_work_group_size(ATT_BB, 1, 1))) void
att_bwd_dq(global const ST *q, ulong qoff, global const ST *k, ulong koff, global const ST *v,
           ulong voff, global const ST *mask, ulong moff, global const ST *dout, ulong doff,
           global const ST *lse, ulong loff, global const T *delta, global ST *dq, ulong dqoff,
           ulong BH, ulong Sq, ulong Sk, ulong D, ulong Dv, ulong mstride, T scale, uint flags)
{
  local T qs[ATT_BB * (ATT_DMAX + 1)];
  local T dos[ATT_BB * (ATT_DMAX + 1)];
  local T ks[ATT_BB * ATT_DMAX];
  local T vs[ATT_BB * ATT_DMAX];
  const uint lid = get_local_id(0);
  const ulong nqt = (Sq + ATT_BB - 1) / ATT_BB, g = get_group_id(0);
  const ulong bh = g / nqt, q0 = (g % nqt) * ATT_BB, i = q0 + lid;
  const int live = i < Sq;
  const ulong QS = D + 1, OS = Dv + 1;
  global const ST *qb = q + qoff + bh * Sq * D;
  global const ST *kb = k + koff + bh * Sk * D;
  global const ST *vb = v + voff + bh * Sk * Dv;
  global const ST *db = dout + doff + bh * Sq * Dv;
  global const ST *mb = mask + moff + bh * mstride;
  for (ulong e = lid; e < ATT_BB * D; e += ATT_BB)
    qs[(e / D) * QS + e % D] = q0 + e / D < Sq ? KILN_LOAD(qb, q0 * D + e) : (T)0;
  for (ulong e = lid; e < ATT_BB * Dv; e += ATT_BB)
    dos[(e / Dv) * OS + e % Dv] = q0 + e / Dv < Sq ? KILN_LOAD(db, q0 * Dv + e) : (T)0;
  const T li = live ? KILN_LOAD(lse, loff + bh * Sq + i) : (T)0;
  const T di = live ? delta[bh * Sq + i] : (T)0;
  T adq[ATT_DMAX];
  for (int d = 0; d < ATT_DMAX; d++)
    adq[d] = (T)0;
  ulong kend = Sk;
  if ((flags & ATT_CAUSAL) && q0 + ATT_BB < kend)
    kend = q0 + ATT_BB;
  for (ulong k0 = 0; k0 < kend; k0 += ATT_BB) {
    barrier(CLK_LOCAL_MEM_FENCE);
    for (ulong e = lid; e < ATT_BB * D; e += ATT_BB)
      ks[e] = k0 + e / D < Sk ? KILN_LOAD(kb, k0 * D + e) : (T)0;
    for (ulong e = lid; e < ATT_BB * Dv; e += ATT_BB)
      vs[e] = k0 + e / Dv < Sk ? KILN_LOAD(vb, k0 * Dv + e) : (T)0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int c = 0; live && c < ATT_BB; c++) {
      ulong j = k0 + c;
      T s = (T)0;
      for (ulong d = 0; d < D; d++)
        s += qs[lid * QS + d] * ks[c * D + d];
      s *= scale;
      ATT_SCORE(s, i, j);
      if (s == -INFINITY)
        continue;
      T p = exp(s - li);
      T dp = (T)0;
      for (ulong d = 0; d < Dv; d++)
        dp += dos[lid * OS + d] * vs[c * Dv + d];
      T ds = p * (dp - di) * scale;
      for (int d = 0; d < ATT_DMAX; d++)
        if (d < D)
          adq[d] += ds * ks[c * D + d];
    }
  }
  if (live)
    for (int d = 0; d < ATT_DMAX; d++)
      if (d < D)
        KILN_STORE(dq, dqoff + (bh * Sq + i) * D + d, adq[d]);
}

kernel void
rope(global const ST *x, ulong xoff, global const ST *cosv, ulong coff, global const ST *sinv,
     ulong soff, global ST *y, ulong yoff, ulong rows, ulong S, ulong D, ulong R, uint flags)
{
  const ulong hr = R / 2, per = hr + (D - R);
  for (ulong t = get_global_id(0); t < rows * per; t += get_global_size(0)) {
    ulong r = t / per, u = t % per, base = r * D;
    if (u >= hr) {
      ulong d = R + (u - hr);
      KILN_STORE(y, yoff + base + d, KILN_LOAD(x, xoff + base + d));
      continue;
    }
    ulong pos = r % S;
    T c = KILN_LOAD(cosv, coff + pos * hr + u), s = KILN_LOAD(sinv, soff + pos * hr + u);
    if (flags & ROPE_INV)
      s = -s;
    ulong a = (flags & ROPE_HALF) ? u : 2 * u, b = (flags & ROPE_HALF) ? u + hr : 2 * u + 1;
    T xa = KILN_LOAD(x, xoff + base + a), xb = KILN_LOAD(x, xoff + base + b);
    KILN_STORE(y, yoff + base + a, xa * c - xb * s);
    KILN_STORE(y, yoff + base + b, xb * c + xa * s);
  }
}
