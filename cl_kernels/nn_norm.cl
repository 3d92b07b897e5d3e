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
 *   bn_stats(x, xoff, mean, moff, rstd, roff, rm, rmoff, rv, rvoff, N, C, S, eps, momentum,
 *            flags, ls)                                            one work-group per channel
 *     flags BN_RUNNING: update rm, rv (unbiased variance)
 *   bn_eval_stats(mean, moff, rstd, roff, rm, rmoff, rv, rvoff, C, eps)   flat over C:
 *     mean = rm, rstd = 1 / sqrt(rv + eps)
 *   norm_apply(x, xoff, mean, moff, rstd, roff, w, woff, b, boff, y, yoff, total, C, S, G,
 *              cpg, flags)        flat: y = (x - mean) rstd w + b   (flags NN_BN: per channel)
 *   chan_grad(g, goff, x, xoff, mean, moff, rstd, roff, sums, dw, dwoff, db, dboff, N, C, S,
 *             G, cpg, flags, la, lb)                               one work-group per channel
 *     sums[c] = sum g, sums[C + c] = sum g xhat over n, s; dw, db (when non-NULL) the same
 *   bn_dx(g, goff, x, xoff, mean, moff, rstd, roff, w, woff, sums, dx, dxoff, total, C, S,
 *         flags)          flat: training dx = w rstd (g - sum g / M - xhat sum(g xhat) / M);
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
gn_stats(global const ST *x, ulong xoff, global ST *mean, ulong moff, global ST *rstd, ulong roff,
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
      KILN_STORE(mean, moff + r, mu);
      KILN_STORE(rstd, roff + r, (T)1 / sqrt(var + eps));
    }
  }
}

kernel void
bn_stats(global const ST *x, ulong xoff, global ST *mean, ulong moff, global ST *rstd, ulong roff,
         global ST *rm, ulong rmoff, global ST *rv, ulong rvoff, ulong N, ulong C, ulong S,
         T eps, T momentum, uint flags, local T *ls)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const ulong M = N * S;
  for (ulong c = get_group_id(0); c < C; c += get_num_groups(0)) {
    T a = (T)0;
    for (ulong k = lid; k < M; k += lsz)
      a += KILN_LOAD(x, xoff + ((k / S) * C + c) * S + k % S);
    T mu = group_sum(ls, a) / (T)M;
    a = (T)0;
    for (ulong k = lid; k < M; k += lsz) {
      T d = KILN_LOAD(x, xoff + ((k / S) * C + c) * S + k % S) - mu;
      a += d * d;
    }
    T ss = group_sum(ls, a);
    if (lid == 0) {
      KILN_STORE(mean, moff + c, mu);
      KILN_STORE(rstd, roff + c, (T)1 / sqrt(ss / (T)M + eps));
      if (flags & BN_RUNNING) {
        /* PyTorch's running variance is the unbiased one (M - 1; M = 1 gives inf / NaN as
         * there). */
        T uv = ss / (T)(M - 1);
        KILN_STORE(rm, rmoff + c, ((T)1 - momentum) * KILN_LOAD(rm, rmoff + c) + momentum * mu);
        KILN_STORE(rv, rvoff + c, ((T)1 - momentum) * KILN_LOAD(rv, rvoff + c) + momentum * uv);
      }
    }
  }
}

/* Evaluation: the statistics are the running ones. Flat over the C channels. */
kernel void
bn_eval_stats(global ST *mean, ulong moff, global ST *rstd, ulong roff, global const ST *rm,
              ulong rmoff, global const ST *rv, ulong rvoff, ulong C, T eps)
{
  for (ulong c = get_global_id(0); c < C; c += get_global_size(0)) {
    KILN_STORE(mean, moff + c, KILN_LOAD(rm, rmoff + c));
    KILN_STORE(rstd, roff + c, (T)1 / sqrt(KILN_LOAD(rv, rvoff + c) + eps));
  }
}

/* The statistics index of element (n, c). */
#define STAT_INDEX(n, c) ((flags & NN_BN) ? (c) : (n) * G + (c) / cpg)

kernel void
norm_apply(global const ST *x, ulong xoff, global const ST *mean, ulong moff,
           global const ST *rstd, ulong roff, global const ST *w, ulong woff, global const ST *b,
           ulong boff, global ST *y, ulong yoff, ulong total, ulong C, ulong S, ulong G,
           ulong cpg, uint flags)
{
  for (ulong e = get_global_id(0); e < total; e += get_global_size(0)) {
    ulong nc = e / S, c = nc % C, n = nc / C;
    ulong si = STAT_INDEX(n, c);
    T v = (KILN_LOAD(x, xoff + e) - KILN_LOAD(mean, moff + si)) * KILN_LOAD(rstd, roff + si);
    if (flags & NN_W)
      v *= KILN_LOAD(w, woff + c);
    if (flags & NN_B)
      v += KILN_LOAD(b, boff + c);
    KILN_STORE(y, yoff + e, v);
  }
}

kernel void
chan_grad(global const ST *g, ulong goff, global const ST *x, ulong xoff, global const ST *mean,
          ulong moff, global const ST *rstd, ulong roff, global T *sums, global ST *dw,
          ulong dwoff, global ST *db, ulong dboff, ulong N, ulong C, ulong S, ulong G, ulong cpg,
          uint flags, local T *ls)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const ulong M = N * S;
  for (ulong c = get_group_id(0); c < C; c += get_num_groups(0)) {
    T a = (T)0, b = (T)0;
    for (ulong k = lid; k < M; k += lsz) {
      ulong n = k / S, si = STAT_INDEX(n, c), e = (n * C + c) * S + k % S;
      T gv = KILN_LOAD(g, goff + e);
      T xh = (KILN_LOAD(x, xoff + e) - KILN_LOAD(mean, moff + si)) * KILN_LOAD(rstd, roff + si);
      a += gv;
      b += gv * xh;
    }
    a = group_sum(ls, a);
    b = group_sum(ls, b);
    if (lid == 0) {
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
bn_dx(global const ST *g, ulong goff, global const ST *x, ulong xoff, global const ST *mean,
      ulong moff, global const ST *rstd, ulong roff, global const ST *w, ulong woff,
      global const T *sums, global ST *dx, ulong dxoff, ulong total, ulong C, ulong S, uint flags)
{
  const T M = (T)(total / C);
  for (ulong e = get_global_id(0); e < total; e += get_global_size(0)) {
    ulong c = (e / S) % C;
    T rs = KILN_LOAD(rstd, roff + c);
    T k = (flags & NN_W) ? KILN_LOAD(w, woff + c) * rs : rs;
    T gv = KILN_LOAD(g, goff + e);
    if (!(flags & BN_EVAL)) {
      T xh = (KILN_LOAD(x, xoff + e) - KILN_LOAD(mean, moff + c)) * rs;
      gv = gv - sums[c] / M - xh * sums[C + c] / M;
    }
    KILN_STORE(dx, dxoff + e, k * gv);
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
