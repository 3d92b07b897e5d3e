/*
 * nn training family: scaled dot-product attention, flash style (lib/ops/nn_attention.c,
 * docs/nn.md "Attention"), and rotary position embedding.
 *
 * Build options: common.cl's (-DT=..., -DKILN_DT_...=1); f32 and f64. The forward tile
 * (lib/ops/nn_attention.c chooses it: the `attention` tuner family): -DATT_BQ (queries per
 * work-group), -DATT_BK (keys per tile), -DATT_TM, -DATT_TN (the register tile of scores per
 * work-item, multiples of 4), -DATT_DC (features per Q/K staging chunk), -DATT_VK (keys per V
 * staging chunk), -DATT_DH (head dimension the accumulators cover: 32, 64 or 128, at least
 * D and Dv). att_fwd runs on (BQ/TM) (BK/TN) work-items.
 *
 * Layout: q [BH, Sq, D], k [BH, Sk, D], v [BH, Sk, Dv], out [BH, Sq, Dv], lse [BH, Sq],
 * D, Dv <= ATT_DH; mask (flags ATT_MASK) additive [Sq, Sk] at mask + bh * mstride.
 * flags ATT_CAUSAL: key j is visible to query i only when j <= i (top-left aligned, as
 * PyTorch's is_causal).
 *
 * Forward (att_fwd): below, at the kernel.
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
/* Backward tiles sized so that each kernel's local arrays fit in 32 KiB (OpenCL's minimum for
 * GPUs, and oclgrind's default) at ATT_DMAX = 128. */
#if defined(KILN_DT_F64)
#define ATT_BB 7
#else
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
 * Forward, register-blocked like a GEMM. A work-group owns ATT_BQ queries of one (batch, head);
 * work-item (tr, tc) of its (BQ/TM) x (BK/TN) grid owns TM query rows (the same rows in both
 * products, so each item keeps its rows' running max m and partial sum in registers):
 *   S = Q K^T: a TM x TN register tile per key tile of ATT_BK keys, Q and K staged through
 *     local memory transposed ([d][row], [d][key]) in chunks of ATT_DC features, read as
 *     4-vectors (16-byte local loads, consecutive items on consecutive vectors);
 *   online softmax: each row's tile max meets across the BK/TN items sharing it in local
 *     memory (red); p = exp(s - m) goes to local memory as P [key][row];
 *   O += P V: the same TM rows x ON = DH/(BK/TN) head features, V staged in chunks of ATT_VK
 *     keys in the Q/K staging space.
 * An item's rows are a*4*NTR + 4*tr + u (a < TM/4, u < 4) and its keys and features
 * b*4*NTC + 4*tc + u, so the items of a warp read consecutive 4-vectors (no bank conflicts).
 * The partial row sums (over an item's own keys, rescaled with the shared max) are added
 * across the row's items once at the end. Causal: key tiles past the group's last query
 * are not visited. A row with every key hidden keeps m = -inf: p and the rescale factor use
 * 0 in place of m (no inf - inf), so l = 0, out = 0/0 = NaN and lse = -inf.
 */
#define T4 KILN_CAT(T, 4)
#define KILN_CAT(a, b) KILN_CAT_(a, b)
#define KILN_CAT_(a, b) a##b

#ifndef ATT_BQ
#error "nn_attention.cl: the tile options (-DATT_BQ=... -DATT_DH=...) are missing"
#endif
#define ATT_NTR (ATT_BQ / ATT_TM)
#define ATT_NTC (ATT_BK / ATT_TN)
#define ATT_NT (ATT_NTR * ATT_NTC)
#define ATT_ON (ATT_DH / ATT_NTC)
#define ATT_QS (ATT_BQ + 4) /* row stride of Q [d][row] and P [key][row] (floats) */
#define ATT_KS (ATT_BK + 4) /* row stride of K [d][key] */
#define ATT_VS ATT_DH       /* row stride of V [key][d] */
#define ATT_QK_N (ATT_DC * (ATT_QS + ATT_KS))
#define ATT_STAGE_N (ATT_QK_N > ATT_VK * ATT_VS ? ATT_QK_N : ATT_VK * ATT_VS)
#if ATT_TM % 4 || ATT_TN % 4 || ATT_ON % 4 || ATT_BK % ATT_VK || ATT_DC % 4 ||                \
    (ATT_NTR > 8 && ATT_NTR % 8)
#error "nn_attention.cl: unsupported tile shape"
#endif
/* Loops over a chunk and over a register tile: rolled on CPUs (-DATT_ROLLED: PoCL takes
 * seconds to compile the unrolled body), left to the compiler elsewhere. */
#if defined(ATT_ROLLED)
#define ATT_OUTER_LOOP _Pragma("unroll 1")
#else
#define ATT_OUTER_LOOP
#endif
/* Items of a warp: 8 row groups (or all of them) x the rest in key groups. */
#define ATT_W (ATT_NTR < 8 ? ATT_NTR : 8)

#define ATT_UNPACK(dst, i, v)                                                                 \
  do {                                                                                      \
    (dst)[(i)] = (v).x;                                                                     \
    (dst)[(i) + 1] = (v).y;                                                                 \
    (dst)[(i) + 2] = (v).z;                                                                 \
    (dst)[(i) + 3] = (v).w;                                                                 \
  } while (0)

kernel __attribute__((reqd_work_group_size(ATT_NT, 1, 1))) void
att_fwd(global const ST *q, ulong qoff, global const ST *k, ulong koff, global const ST *v,
        ulong voff, global const ST *mask, ulong moff, global ST *o, ulong ooff, global ST *lse,
        ulong loff, ulong BH, ulong Sq, ulong Sk, ulong D, ulong Dv, ulong mstride, T scale,
        uint flags)
{
  local T4 stage4[ATT_STAGE_N / 4];
  local T4 ps4[ATT_BK * ATT_QS / 4];
  local T red[ATT_NTC * ATT_BQ];
  local T *stage = (local T *)stage4, *ps = (local T *)ps4;
  const uint lid = get_local_id(0);
  const uint tr = lid % ATT_W + ATT_W * (lid / (ATT_W * ATT_NTC));
  const uint tc = (lid / ATT_W) % ATT_NTC;
  const ulong nqt = (Sq + ATT_BQ - 1) / ATT_BQ, g = get_group_id(0);
  const ulong bh = g / nqt, q0 = (g % nqt) * ATT_BQ;
  global const ST *qb = q + qoff + bh * Sq * D;
  global const ST *kb = k + koff + bh * Sk * D;
  global const ST *vb = v + voff + bh * Sk * Dv;
  global const ST *mb = mask + moff + bh * mstride;
  T acc[ATT_TM][ATT_ON], m[ATT_TM], lp[ATT_TM];
  uint rows[ATT_TM];
  ATT_OUTER_LOOP
  for (int i = 0; i < ATT_TM; i++) {
    rows[i] = (i / 4) * 4 * ATT_NTR + 4 * tr + i % 4;
    m[i] = -INFINITY;
    lp[i] = (T)0;
    ATT_OUTER_LOOP
    for (int e = 0; e < ATT_ON; e++)
      acc[i][e] = (T)0;
  }
  ulong kend = Sk;
  if ((flags & ATT_CAUSAL) && q0 + ATT_BQ < kend)
    kend = q0 + ATT_BQ;
  for (ulong k0 = 0; k0 < kend; k0 += ATT_BK) {
    T s[ATT_TM][ATT_TN];
    ATT_OUTER_LOOP
    for (int i = 0; i < ATT_TM; i++)
      ATT_OUTER_LOOP
      for (int j = 0; j < ATT_TN; j++)
        s[i][j] = (T)0;
    for (ulong d0 = 0; d0 < D; d0 += ATT_DC) {
      barrier(CLK_LOCAL_MEM_FENCE);
      for (uint e = lid; e < ATT_BQ * ATT_DC; e += ATT_NT) {
        uint r = e / ATT_DC, dd = e % ATT_DC;
        stage[dd * ATT_QS + r] =
            q0 + r < Sq && d0 + dd < D ? KILN_LOAD(qb, (q0 + r) * D + d0 + dd) * scale : (T)0;
      }
      for (uint e = lid; e < ATT_BK * ATT_DC; e += ATT_NT) {
        uint c = e / ATT_DC, dd = e % ATT_DC;
        stage[ATT_DC * ATT_QS + dd * ATT_KS + c] =
            k0 + c < Sk && d0 + dd < D ? KILN_LOAD(kb, (k0 + c) * D + d0 + dd) : (T)0;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      ATT_OUTER_LOOP
      for (int dd = 0; dd < ATT_DC; dd++) {
        T qv[ATT_TM], kv[ATT_TN];
        ATT_OUTER_LOOP
        for (int a = 0; a < ATT_TM / 4; a++) {
          T4 t = stage4[dd * (ATT_QS / 4) + a * ATT_NTR + tr];
          ATT_UNPACK(qv, 4 * a, t);
        }
        ATT_OUTER_LOOP
        for (int b = 0; b < ATT_TN / 4; b++) {
          T4 t = stage4[ATT_DC * ATT_QS / 4 + dd * (ATT_KS / 4) + b * ATT_NTC + tc];
          ATT_UNPACK(kv, 4 * b, t);
        }
        ATT_OUTER_LOOP
        for (int i = 0; i < ATT_TM; i++)
          ATT_OUTER_LOOP
          for (int j = 0; j < ATT_TN; j++)
            s[i][j] += qv[i] * kv[j];
      }
    }
    /* Hide what the row may not see; the row maxima of this tile meet in red. */
    ATT_OUTER_LOOP
    for (int i = 0; i < ATT_TM; i++) {
      ulong row = q0 + rows[i];
      T mx = -INFINITY;
      ATT_OUTER_LOOP
      for (int j = 0; j < ATT_TN; j++) {
        ulong col = k0 + (j / 4) * 4 * ATT_NTC + 4 * tc + j % 4;
        T x = s[i][j];
        if (col >= Sk || ((flags & ATT_CAUSAL) && col > row))
          x = -INFINITY;
        else if ((flags & ATT_MASK) && row < Sq)
          x += KILN_LOAD(mb, row * Sk + col);
        s[i][j] = x;
        mx = fmax(mx, x);
      }
      red[tc * ATT_BQ + rows[i]] = mx;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    ATT_OUTER_LOOP
    for (int i = 0; i < ATT_TM; i++) {
      T mt = m[i];
      ATT_OUTER_LOOP
      for (int t = 0; t < ATT_NTC; t++)
        mt = fmax(mt, red[t * ATT_BQ + rows[i]]);
      T msafe = mt == -INFINITY ? (T)0 : mt;
      T cf = exp(m[i] - msafe);
      m[i] = mt;
      lp[i] *= cf;
      ATT_OUTER_LOOP
      for (int e = 0; e < ATT_ON; e++)
        acc[i][e] *= cf;
      ATT_OUTER_LOOP
      for (int j = 0; j < ATT_TN; j++) {
        T p = exp(s[i][j] - msafe);
        lp[i] += p;
        s[i][j] = p;
      }
    }
    ATT_OUTER_LOOP
    for (int j = 0; j < ATT_TN; j++) {
      uint col = (j / 4) * 4 * ATT_NTC + 4 * tc + j % 4;
      ATT_OUTER_LOOP
      for (int a = 0; a < ATT_TM / 4; a++)
        ps4[col * (ATT_QS / 4) + a * ATT_NTR + tr] =
            (T4)(s[4 * a][j], s[4 * a + 1][j], s[4 * a + 2][j], s[4 * a + 3][j]);
    }
    /* O += P V over chunks of ATT_VK keys (the staging space is free since the barrier). */
    for (uint c0 = 0; c0 < ATT_BK && k0 + c0 < Sk; c0 += ATT_VK) {
      if (c0)
        barrier(CLK_LOCAL_MEM_FENCE);
      for (uint e = lid; e < ATT_VK * ATT_DH; e += ATT_NT) {
        uint c = e / ATT_DH, d = e % ATT_DH;
        stage[c * ATT_VS + d] =
            k0 + c0 + c < Sk && d < Dv ? KILN_LOAD(vb, (k0 + c0 + c) * Dv + d) : (T)0;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      ATT_OUTER_LOOP
      for (int c = 0; c < ATT_VK; c++) {
        T pv[ATT_TM], vv[ATT_ON];
        ATT_OUTER_LOOP
        for (int a = 0; a < ATT_TM / 4; a++) {
          T4 t = ps4[(c0 + c) * (ATT_QS / 4) + a * ATT_NTR + tr];
          ATT_UNPACK(pv, 4 * a, t);
        }
        ATT_OUTER_LOOP
        for (int b = 0; b < ATT_ON / 4; b++) {
          T4 t = stage4[c * (ATT_VS / 4) + b * ATT_NTC + tc];
          ATT_UNPACK(vv, 4 * b, t);
        }
        ATT_OUTER_LOOP
        for (int i = 0; i < ATT_TM; i++)
          ATT_OUTER_LOOP
          for (int e = 0; e < ATT_ON; e++)
            acc[i][e] += pv[i] * vv[e];
      }
    }
  }
  /* The row sums meet in red (all of a row's items applied the same rescale factors). */
  barrier(CLK_LOCAL_MEM_FENCE);
  ATT_OUTER_LOOP
  for (int i = 0; i < ATT_TM; i++)
    red[tc * ATT_BQ + rows[i]] = lp[i];
  barrier(CLK_LOCAL_MEM_FENCE);
  ATT_OUTER_LOOP
  for (int i = 0; i < ATT_TM; i++) {
    ulong row = q0 + rows[i];
    if (row >= Sq)
      continue;
    T l = (T)0;
    ATT_OUTER_LOOP
    for (int t = 0; t < ATT_NTC; t++)
      l += red[t * ATT_BQ + rows[i]];
    T inv = (T)1 / l;
    global ST *ob = o + ooff + (bh * Sq + row) * Dv;
    ATT_OUTER_LOOP
    for (int e = 0; e < ATT_ON; e++) {
      ulong d = (e / 4) * 4 * ATT_NTC + 4 * tc + e % 4;
      if (d < Dv)
        KILN_STORE(ob, d, l > (T)0 ? acc[i][e] * inv : (T)NAN);
    }
    if (tc == 0)
      KILN_STORE(lse, loff + bh * Sq + row, m[i] + log(l));
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
