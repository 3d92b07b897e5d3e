/*
 * nn training family: dropout (from the context's Philox stream), group_norm and batch_norm
 * forward and backward (lib/ops/nn_norm.c, docs/nn.md).
 *
 * Build options: common.cl's (-DT=..., -DKILN_DT_...=1); f32 and f64. Offsets in elements.
 *
 * Layout of the norms: x is [N, C, S] (S the product of the trailing axes, 1 for [N, C]);
 * element e = (n C + c) S + s. group_norm's groups of cpg = C / G channels are contiguous
 * rows of len = cpg S elements, statistics index n G + c / cpg; batch_norm's statistics are
 * per channel over M = N S elements.
 *
 * Kernels:
 *   dropout(x, xoff, y, yoff, min, minoff, mout, moutoff, n, base, k0, k1, threshold, scale,
 *           flags)
 *     y[e] = keep ? x[e] scale : 0. keep = mask_in[e] (flags DROP_MASK_IN) or word (e % 4) of
 *     Philox block base + e / 4 under key (k0, k1) >= threshold (the complement of
 *     kiln_random_bernoulli's draw); DROP_MASK_OUT writes keep as a bool. One work-item per
 *     block of four elements, grid-stride: any work-group size gives the same bits.
 *   gn_stats(x, xoff, mean, moff, rstd, roff, rows, len, eps, ls)   one work-group per row
 *   chan_stats(x, xoff, part, N, C, S, nchunk, ln, lm, lq)
 *                                     one work-group per (channel, chunk of its N S elements):
 *     the chunk's count, mean and sum of squared deviations (CP_STAT) in one read
 *   chan_part(x, xoff, g, goff, mean, moff, rstd, roff, part, N, C, S, G, cpg, nchunk, mode,
 *             flags, ls)              the same work-groups: the gradient sums (CP_GRAD)
 *   chan_fin(part, nchunk, C, M, mode, flags, mean, moff, rstd, roff, rm, rmoff, rv, rvoff, eps,
 *            momentum, sums, dw, dwoff, db, dboff)   flat over C: batch_norm's mean and rstd
 *     and the running statistics (CP_STAT; BN_RUNNING, unbiased variance); or the gradient
 *     sums (CP_GRAD)
 *   bn_eval_stats(mean, moff, rstd, roff, rm, rmoff, rv, rvoff, C, eps)   flat over C:
 *     mean = rm, rstd = 1 / sqrt(rv + eps)
 *   norm_apply(x, xoff, mean, moff, rstd, roff, w, woff, b, boff, y, yoff, N, C, S, G, cpg,
 *              flags)    3-D over (S / APPLY_ITEMS, C, N): y = (x - mean) rstd w + b (NN_BN:
 *                        per channel)
 *   chan_stats_lines(the same arguments as chan_stats)   its CPU form, 1-D over C N planes
 *   norm_apply_lines(the same arguments, nch)   its CPU form, 1-D over N C nch chunks of planes
 *   stats_store(s, soff, out, ooff, n)   flat: out = s in the storage type
 * The forward statistics (gn_stats, chan_fin's CP_STAT, bn_eval_stats, norm_apply) are T
 * buffers: the 16-bit types normalize with their float values, not with the rounded ones
 * their outputs hold (a group of close values would have lost percents to the mean's rounding).
 * The backward kernels read the saved statistics as given (ST).
 *     (CP_GRAD): sums[c] = sum g, sums[C + c] = sum g xhat over n, s; dw, db the same
 *   bn_dx(g, goff, x, xoff, mean, moff, rstd, roff, w, woff, sums, dx, dxoff, N, C, S,
 *         flags)          3-D over (S, C, N): training dx = w rstd (g - sum g / M - xhat sum(g xhat) / M);
 *                         BN_EVAL: dx = g w rstd
 *   gn_dx(g, goff, x, xoff, mean, moff, rstd, roff, w, woff, dx, dxoff, rows, len, S, C, G,
 *         cpg, la, lb)                                             one work-group per row
 */
#include "common.cl"
#include "philox.clh"


#define DROP_MASK_IN 1u
#define DROP_MASK_OUT 2u

#define NN_W 1u
#define NN_B 2u
#define NN_BN 4u
#define BN_RUNNING 8u
#define BN_EVAL 16u

kernel void
dropout(global const ST *x, ulong xoff, global ST *y, ulong yoff, global const uchar *min,
        ulong minoff, global uchar *mout, ulong moutoff, ulong n, ulong base, uint k0, uint k1,
        ulong threshold, T scale, uint flags)
{
  ulong nb = (n + 3) / 4;
  for (ulong j = get_global_id(0); j < nb; j += get_global_size(0)) {
    uint w[4] = {0u, 0u, 0u, 0u};
    if (!(flags & DROP_MASK_IN))
      block_words(base + j, 0u, k0, k1, w);
#if !KILN_IS_HALF
    /* A whole block: one 4-vector load and store (vloadn needs only the element's
     * alignment), so a warp's accesses stay contiguous. */
    if (4 * j + 4 <= n) {
      int4 keep;
      if (flags & DROP_MASK_IN) {
        uchar4 mk = vload4(0, min + minoff + 4 * j);
        keep = (int4)(mk.x != 0, mk.y != 0, mk.z != 0, mk.w != 0);
      } else {
        keep = (int4)((ulong)w[0] >= threshold, (ulong)w[1] >= threshold,
                      (ulong)w[2] >= threshold, (ulong)w[3] >= threshold);
      }
      KILN_CAT(T, 4) xv = vload4(0, x + xoff + 4 * j) * scale;
      KILN_CAT(T, 4) yv = (KILN_CAT(T, 4))(keep.x ? xv.x : (T)0, keep.y ? xv.y : (T)0,
                                          keep.z ? xv.z : (T)0, keep.w ? xv.w : (T)0);
      vstore4(yv, 0, y + yoff + 4 * j);
      if (flags & DROP_MASK_OUT)
        vstore4(convert_uchar4(keep), 0, mout + moutoff + 4 * j);
      continue;
    }
#endif
    for (uint t = 0; t < 4; t++) {
      ulong e = 4 * j + t;
      if (e >= n)
        break;
      int keep = (flags & DROP_MASK_IN) ? min[minoff + e] != 0 : (ulong)w[t] >= threshold;
      KILN_STORE(y, yoff + e, keep ? KILN_LOAD(x, xoff + e) * scale : (T)0);
      if (flags & DROP_MASK_OUT)
        mout[moutoff + e] = (uchar)keep;
    }
  }
}

/* Elements per work-item of norm_apply (lib/ops/nn_norm.c sizes its grid by it). */
#define APPLY_ITEMS 4

/* The statistics index of element (n, c). */
#define STAT_INDEX(n, c) ((flags & NN_BN) ? (c) : (n) * G + (c) / cpg)

/* The (n, c) pairs of a 3-D launch over (S, C, N): dimension 0 walks s inside the body. */
#define FOR_NCS(n, c)                                                                     \
  for (ulong n = get_global_id(2); n < N; n += get_global_size(2))                        \
    for (ulong c = get_global_id(1); c < C; c += get_global_size(1))

/* Sum of ls[0..lsz) into every item's return (lsz a power of two); every item must call it. */
inline T
group_sum(local T *ls, T v)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  barrier(CLK_LOCAL_MEM_FENCE);
  ls[lid] = v;
  for (uint off = lsz >> 1; off > 0; off >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < off)
      ls[lid] += ls[lid + off];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  return ls[0];
}

/* Two passes (the mean, then the centred squares), the row served from cache the second
 * time: no cancellation for rows with a large mean. */
kernel void
gn_stats(global const ST *x, ulong xoff, global T *mean, ulong moff, global T *rstd, ulong roff,
         ulong rows, ulong len, T eps, local T *ls)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  for (ulong r = get_group_id(0); r < rows; r += get_num_groups(0)) {
    global const ST *xr = x + xoff + r * len;
    T a = (T)0;
    for (ulong j = lid; j < len; j += lsz)
      a += KILN_LOAD(xr, j);
    T mu = group_sum(ls, a) / (T)len;
    a = (T)0;
    for (ulong j = lid; j < len; j += lsz) {
      T d = KILN_LOAD(xr, j) - mu;
      a += d * d;
    }
    T var = group_sum(ls, a) / (T)len;
    if (lid == 0) {
      mean[moff + r] = mu;
      rstd[roff + r] = (T)1 / sqrt(var + eps);
    }
  }
}

/*
 * Per-channel reductions split over chunks of the channel's M = N S elements, so that a few
 * channels still fill the device: work-group w reduces chunk w % nchunk of channel w / nchunk.
 * CP_STAT (chan_stats): part[3 w .. 3 w + 2] = count, mean, sum of squared deviations;
 * CP_GRAD (chan_part): part[2 w], part[2 w + 1] = sum g, sum g xhat (statistics at
 * STAT_INDEX). chan_fin then merges each channel's chunks in order (deterministic, no
 * atomics).
 */
#define CP_GRAD 2u
#define CP_STAT 3u

/* Loads in flight per work-item in the chunk loops: a single one left them latency-bound. */
#define CHAN_UNROLL 8

/* Chan's merge of (count, mean, M2) b into a. */
inline void
chan_merge(T *n, T *mu, T *m2, T nb, T mub, T m2b)
{
  T nn = *n + nb;
  if (nb == (T)0)
    return;
  T d = mub - *mu, f = nb / nn;
  *mu += d * f;
  *m2 += m2b + d * d * *n * f;
  *n = nn;
}

/*
 * One read of x: each work-item sums x - K and (x - K)^2 about K, the first element it reads
 * (close to the mean for any data, so the squares do not cancel), and turns them into its
 * (count, mean, M2); the group merges those by Chan's formula.
 */
kernel void
chan_stats(global const ST *x, ulong xoff, global T *part, ulong N, ulong C, ulong S,
           ulong nchunk, local T *ln, local T *lm, local T *lq)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const ulong M = N * S;
  for (ulong w = get_group_id(0); w < C * nchunk; w += get_num_groups(0)) {
    const ulong c = w / nchunk, ch = w % nchunk;
    const ulong k0 = M * ch / nchunk, k1 = M * (ch + 1) / nchunk;
    T cnt = (T)0, s1 = (T)0, s2 = (T)0, K = (T)0;
    ulong n = (k0 + lid) / S, sp = (k0 + lid) % S;
    if (k0 + lid < k1)
      K = KILN_LOAD(x, xoff + (n * C + c) * S + sp);
    for (ulong k = k0 + lid; k < k1; k += (ulong)CHAN_UNROLL * lsz) {
      T v[CHAN_UNROLL];
      for (uint u = 0; u < CHAN_UNROLL; u++) {
        if (k + (ulong)u * lsz < k1)
          v[u] = KILN_LOAD(x, xoff + (n * C + c) * S + sp);
        sp += lsz;
        if (sp >= S) {
          n += sp / S;
          sp %= S;
        }
      }
      for (uint u = 0; u < CHAN_UNROLL; u++)
        if (k + (ulong)u * lsz < k1) {
          T d = v[u] - K;
          cnt += (T)1;
          s1 += d;
          s2 += d * d;
        }
    }
    T mu = (T)0, m2 = (T)0;
    if (cnt > (T)0) {
      mu = K + s1 / cnt;
      m2 = s2 - s1 * s1 / cnt;
      /* Rounding may leave a tiny negative; NaN stays NaN. */
      if (m2 < (T)0)
        m2 = (T)0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    ln[lid] = cnt;
    lm[lid] = mu;
    lq[lid] = m2;
    for (uint off = lsz >> 1; off > 0; off >>= 1) {
      barrier(CLK_LOCAL_MEM_FENCE);
      if (lid < off) {
        T a = ln[lid], b = lm[lid], q = lq[lid];
        chan_merge(&a, &b, &q, ln[lid + off], lm[lid + off], lq[lid + off]);
        ln[lid] = a;
        lm[lid] = b;
        lq[lid] = q;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
      part[3 * w] = ln[0];
      part[3 * w + 1] = lm[0];
      part[3 * w + 2] = lq[0];
    }
  }
}

kernel void
chan_part(global const ST *x, ulong xoff, global const ST *g, ulong goff, global const ST *mean,
          ulong moff, global const ST *rstd, ulong roff, global T *part, ulong N, ulong C,
          ulong S, ulong G, ulong cpg, ulong nchunk, uint mode, uint flags, local T *ls)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const ulong M = N * S;
  for (ulong w = get_group_id(0); w < C * nchunk; w += get_num_groups(0)) {
    const ulong c = w / nchunk, ch = w % nchunk;
    const ulong k0 = M * ch / nchunk, k1 = M * (ch + 1) / nchunk;
    T a = (T)0, b = (T)0;
    /* (n, s) of element k, advanced without a division per element. */
    ulong n = (k0 + lid) / S, sp = (k0 + lid) % S;
    for (ulong k = k0 + lid; k < k1; k += lsz) {
      ulong e = (n * C + c) * S + sp;
      T xv = KILN_LOAD(x, xoff + e);
      ulong si = STAT_INDEX(n, c);
      T gv = KILN_LOAD(g, goff + e);
      a += gv;
      b += gv * (xv - KILN_LOAD(mean, moff + si)) * KILN_LOAD(rstd, roff + si);
      sp += lsz;
      if (sp >= S) {
        n += sp / S;
        sp %= S;
      }
    }
    a = group_sum(ls, a);
    b = group_sum(ls, b);
    if (lid == 0) {
      part[2 * w] = a;
      part[2 * w + 1] = b;
    }
  }
}

/*
 * Flat over the C channels, merging each channel's nchunk partials in order. CP_STAT: mean,
 * rstd and (BN_RUNNING) the running statistics; CP_GRAD: sums (2C values) and the parameter
 * gradients dw, db where non-NULL.
 */
kernel void
chan_fin(global const T *part, ulong nchunk, ulong C, ulong M, uint mode, uint flags,
         global T *mean, ulong moff, global T *rstd, ulong roff, global ST *rm, ulong rmoff,
         global ST *rv, ulong rvoff, T eps, T momentum, global T *sums, global ST *dw,
         ulong dwoff, global ST *db, ulong dboff)
{
  for (ulong c = get_global_id(0); c < C; c += get_global_size(0)) {
    if (mode == CP_STAT) {
      T cnt = (T)0, mu = (T)0, a = (T)0;
      for (ulong ch = 0; ch < nchunk; ch++) {
        global const T *q = part + 3 * (c * nchunk + ch);
        chan_merge(&cnt, &mu, &a, q[0], q[1], q[2]);
      }
      mean[moff + c] = mu;
      rstd[roff + c] = (T)1 / sqrt(a / (T)M + eps);
      if (flags & BN_RUNNING) {
        /* PyTorch's running variance is the unbiased one (M - 1; M = 1 gives inf / NaN as
         * there). */
        T uv = a / (T)(M - 1);
        KILN_STORE(rm, rmoff + c, ((T)1 - momentum) * KILN_LOAD(rm, rmoff + c) + momentum * mu);
        KILN_STORE(rv, rvoff + c, ((T)1 - momentum) * KILN_LOAD(rv, rvoff + c) + momentum * uv);
      }
    } else {
      T a = (T)0, b = (T)0;
      for (ulong ch = 0; ch < nchunk; ch++) {
        a += part[2 * (c * nchunk + ch)];
        b += part[2 * (c * nchunk + ch) + 1];
      }
      if (sums) {
        sums[c] = a;
        sums[C + c] = b;
      }
      if (dw)
        KILN_STORE(dw, dwoff + c, b);
      if (db)
        KILN_STORE(db, dboff + c, a);
    }
  }
}

kernel void
bn_eval_stats(global T *mean, ulong moff, global T *rstd, ulong roff, global const ST *rm,
              ulong rmoff, global const ST *rv, ulong rvoff, ulong C, T eps)
{
  for (ulong c = get_global_id(0); c < C; c += get_global_size(0)) {
    mean[moff + c] = KILN_LOAD(rm, rmoff + c);
    rstd[roff + c] = (T)1 / sqrt(KILN_LOAD(rv, rvoff + c) + eps);
  }
}

/* The statistics' outputs of the 16-bit types, from their compute-type values. */
kernel void
stats_store(global const T *s, ulong soff, global ST *out, ulong ooff, ulong n)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    KILN_STORE(out, ooff + i, s[soff + i]);
}


/* y = (x - mean) k + o for channel c: k = rstd w[c], o = b[c] (w, b absent: 1, 0). */
inline void
norm_affine(T rs, global const ST *w, ulong woff, global const ST *b, ulong boff, ulong c,
            uint flags, T *k, T *o)
{
  *k = (flags & NN_W) ? rs * KILN_LOAD(w, woff + c) : rs;
  *o = (flags & NN_B) ? KILN_LOAD(b, boff + c) : (T)0;
}

kernel void
norm_apply(global const ST *x, ulong xoff, global const T *mean, ulong moff,
           global const T *rstd, ulong roff, global const ST *w, ulong woff, global const ST *b,
           ulong boff, global ST *y, ulong yoff, ulong N, ulong C, ulong S, ulong G, ulong cpg,
           uint flags)
{
  FOR_NCS(n, c)
  {
    const ulong si = STAT_INDEX(n, c), base = (n * C + c) * S;
    const T mu = mean[moff + si];
    T k, o;
    norm_affine(rstd[roff + si], w, woff, b, boff, c, flags, &k, &o);
    /* APPLY_ITEMS elements per work-item, a grid apart, all loaded first: one load in flight
     * per item left the pass latency-bound (the host sizes dimension 0 for S / APPLY_ITEMS). */
    const ulong gs = get_global_size(0);
    for (ulong s0 = get_global_id(0); s0 < S; s0 += APPLY_ITEMS * gs) {
      T v[APPLY_ITEMS];
      for (uint u = 0; u < APPLY_ITEMS; u++)
        if (s0 + u * gs < S)
          v[u] = KILN_LOAD(x, xoff + base + s0 + u * gs);
      for (uint u = 0; u < APPLY_ITEMS; u++)
        if (s0 + u * gs < S)
          KILN_STORE(y, yoff + base + s0 + u * gs, (v[u] - mu) * k + o);
    }
  }
}

/* The CPU forms' vectors: NV elements, 64 bytes. */
#define NV KILN_VW64
#if defined(KILN_DT_BF16)
KILN_BF16_FROM_FLOATV(NV)
#endif
#define VCAT_NV(t) KILN_CAT(t, NV)
#define nv_hsum KILN_CAT(kiln_hsum, NV)

/*
 * chan_stats' CPU form (same arguments; the host passes nchunk = N): chunk n of channel c is
 * the plane (n, c), a work-item's S contiguous elements summed in 64-byte vectors about its
 * first element K (the GPU form's shifted sums), into the same partial states.
 */
kernel void
chan_stats_lines(global const ST *x, ulong xoff, global T *part, ulong N, ulong C, ulong S,
                 ulong nchunk, local T *ln, local T *lm, local T *lq)
{
  for (ulong w = get_global_id(0); w < C * N; w += get_global_size(0)) {
    const ulong c = w / N, n = w % N;
    global const ST *xp = x + xoff + (n * C + c) * S;
    const T K = S ? KILN_LOAD(xp, 0) : (T)0;
    VCAT_NV(T) s1v = (VCAT_NV(T))0, s2v = (VCAT_NV(T))0;
    T s1 = (T)0, s2 = (T)0;
    ulong s = 0;
    for (; s + NV <= S; s += NV) {
      VCAT_NV(T) d = KILN_VLOAD_ST(NV, xp + s) - K;
      s1v += d;
      s2v += d * d;
    }
    for (; s < S; s++) {
      T d = KILN_LOAD(xp, s) - K;
      s1 += d;
      s2 += d * d;
    }
    s1 += nv_hsum(s1v);
    s2 += nv_hsum(s2v);
    T cnt = (T)S, mu = (T)0, m2 = (T)0;
    if (S) {
      mu = K + s1 / cnt;
      m2 = s2 - s1 * s1 / cnt;
      /* Rounding may leave a tiny negative; NaN stays NaN. */
      if (m2 < (T)0)
        m2 = (T)0;
    }
    global T *q = part + 3 * (c * nchunk + n);
    q[0] = cnt;
    q[1] = mu;
    q[2] = m2;
  }
}

/*
 * norm_apply's CPU form (same arguments, then nch): a work-item per chunk of a plane (nch
 * chunks of each of the N C planes of S elements), whole vectors of NV elements (64 bytes)
 * along it. 1-D over N C nch.
 */
kernel void
norm_apply_lines(global const ST *x, ulong xoff, global const T *mean, ulong moff,
                 global const T *rstd, ulong roff, global const ST *w, ulong woff,
                 global const ST *b, ulong boff, global ST *y, ulong yoff, ulong N, ulong C,
                 ulong S, ulong G, ulong cpg, uint flags, ulong nch)
{
  const ulong clen = ((S + nch - 1) / nch + NV - 1) / NV * NV;
  for (ulong u = get_global_id(0); u < N * C * nch; u += get_global_size(0)) {
    const ulong pl = u / nch, n = pl / C, c = pl % C, s0 = u % nch * clen;
    const ulong s1 = min(S, s0 + clen), si = STAT_INDEX(n, c);
    const T mu = mean[moff + si];
    T k, o;
    norm_affine(rstd[roff + si], w, woff, b, boff, c, flags, &k, &o);
    global const ST *xp = x + xoff + pl * S;
    global ST *yp = y + yoff + pl * S;
    ulong s = s0;
    for (; s + NV <= s1; s += NV)
      KILN_VSTORE_ST(NV, (KILN_VLOAD_ST(NV, xp + s) - mu) * k + o, yp + s);
    for (; s < s1; s++)
      KILN_STORE(yp, s, (KILN_LOAD(xp, s) - mu) * k + o);
  }
}

kernel void
bn_dx(global const ST *g, ulong goff, global const ST *x, ulong xoff, global const ST *mean,
      ulong moff, global const ST *rstd, ulong roff, global const ST *w, ulong woff,
      global const T *sums, global ST *dx, ulong dxoff, ulong N, ulong C, ulong S, uint flags)
{
  const T M = (T)(N * S);
  FOR_NCS(n, c)
  {
    const ulong base = (n * C + c) * S;
    const T rs = KILN_LOAD(rstd, roff + c), mu = KILN_LOAD(mean, moff + c);
    const T k = (flags & NN_W) ? KILN_LOAD(w, woff + c) * rs : rs;
    const T sg = (flags & BN_EVAL) ? (T)0 : sums[c] / M;
    const T sgx = (flags & BN_EVAL) ? (T)0 : sums[C + c] / M;
    for (ulong s = get_global_id(0); s < S; s += get_global_size(0)) {
      T gv = KILN_LOAD(g, goff + base + s);
      if (!(flags & BN_EVAL))
        gv = gv - sg - (KILN_LOAD(x, xoff + base + s) - mu) * rs * sgx;
      KILN_STORE(dx, dxoff + base + s, k * gv);
    }
  }
}

kernel void
gn_dx(global const ST *g, ulong goff, global const ST *x, ulong xoff, global const ST *mean,
      ulong moff, global const ST *rstd, ulong roff, global const ST *w, ulong woff,
      global ST *dx, ulong dxoff, ulong rows, ulong len, ulong S, ulong C, ulong G, ulong cpg,
      uint flags, local T *ls)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  for (ulong r = get_group_id(0); r < rows; r += get_num_groups(0)) {
    const ulong c0 = (r % G) * cpg, base = r * len;
    const T mu = KILN_LOAD(mean, moff + r), rs = KILN_LOAD(rstd, roff + r);
    T a = (T)0, b = (T)0;
    for (ulong j = lid; j < len; j += lsz) {
      T gw = KILN_LOAD(g, goff + base + j);
      if (flags & NN_W)
        gw *= KILN_LOAD(w, woff + c0 + j / S);
      a += gw;
      b += gw * (KILN_LOAD(x, xoff + base + j) - mu) * rs;
    }
    a = group_sum(ls, a) / (T)len;
    b = group_sum(ls, b) / (T)len;
    for (ulong j = lid; j < len; j += lsz) {
      T gw = KILN_LOAD(g, goff + base + j);
      if (flags & NN_W)
        gw *= KILN_LOAD(w, woff + c0 + j / S);
      T xh = (KILN_LOAD(x, xoff + base + j) - mu) * rs;
      KILN_STORE(dx, dxoff + base + j, rs * (gw - a - xh * b));
    }
  }
}
