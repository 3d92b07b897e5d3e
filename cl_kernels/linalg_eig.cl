/*
 * linalg_spectral family, eigh and svd parts (lib/ops/linalg_eig.c): the blocked Householder
 * reductions of a full symmetric matrix to tridiagonal form (LAPACK dsytrd with dlatrd,
 * lower) and of a general matrix to bidiagonal form (dgebrd with dlabrd), f32 and f64
 * (common.cl's -DT=...). No tunables compiled in: the block size nb is an argument.
 *
 * Tridiagonal: A is n x n, row-major, full (both triangles), at element offset aoff. A panel
 * of columns j0 .. j0+jb-1 keeps its reflectors V and the dlatrd vectors W in vw (n rows,
 * row stride 3 nb, rows absolute): columns [0, nb) V, [nb, 2 nb) W, [2 nb, 3 nb) V again, so
 * that one GEMM of [V W] with [W V]^T makes the trailing update A -= V W^T + W V^T. Column c
 * of the matrix is read as row c (A symmetric; the panel's rows are updated, not its
 * columns), and its reflector goes below the subdiagonal of column c (the QR layout the
 * back-transformation applies).
 *
 * Per column c (index i in the panel, len = n - c - 1), two launches:
 *   tr_symv(a, aoff, n, c, i, vw, vwoff, nb, wp, aa, part, nchunk, kt, sh)   32-lane groups
 *     (SY_TS), the tile groups first, then nchunk aux groups. The symmetric product
 *     q = A22[:, 1 ..] x[1 ..] (x = A[c][c+1 ..], the column before its reflector is formed:
 *     v = (1, scal x[1 ..]) once the norm is known; A22 = A[c+1 ..][c+1 ..]) reads A22's upper
 *     triangle once, in 32 x 32 tiles: block row (strip) b's tiles b .. nblk-1 in chunks of kt,
 *     one group a chunk. A group sums its tiles' rows (A22 x for its 32 rows, into slot
 *     bj0 of wp, bj0 its chunk's first tile) and each off-diagonal tile's columns (the lower
 *     triangle's part: A22^T x for the tile's columns, into slot b), and its share of
 *     x[1 ..]^T A22 x[1 ..] into wp[sy_slots(n) * n + group]; slots are rows of n elements,
 *     each written by one group (sy_row sums a row's). An aux group k: over its chunk of
 *     x[1 ..], the largest |x|, the sum of squares scaled by it, and V^T x, W^T x over the
 *     first i columns, into part[k * (2 + 2 nb) ..]; and A22's first column (row c+1 as it
 *     stands) into aa. sh: SY_TS (SY_TS + 2) T.
 *   tr_fin(a, aoff, n, c, i, vw, vwoff, nb, wp, aa, part, nchunk, kt, tau, toff, d, doff, e,
 *     eoff, upd, lpr, sh)   lpr lanes per row (a power of two dividing lsz): every group
 *     combines the partials into the reflector
 *     (dlarfg: beta, tau, scal), y = V^T v, x = W^T v, and w . v = tau (v^T A22 v - 2 x . y)
 *     (so that alpha = -tau/2 w . v needs no second pass), then per row r = c+1+t: v_t into
 *     V's column i (and below A[c+1][c], the reflector's home), w_t + alpha v_t into W's
 *     column i; with upd (column c+1 in the panel) row c+1's update
 *     A[c+1][c+1 ..] -= V W[c+1]^T + W V[c+1]^T over the first i + 1 columns; d[c], e[c],
 *     tau[c]. sh: 2 nb + 4 lsz T.
 *
 * On GPUs one launch per panel does both (tr_panel, below), its work-groups meeting at grid
 * barriers where the launches' boundaries were.
 *
 * Within a panel A22 is read as it stood at the panel's start (dlatrd's product), so only
 * the upper triangle and row c+1 (tr_fin's update) have to be current: the trailing GEMM may
 * leave the lower triangle behind.
 */
#include "common.cl"
#include "linalg_house.clh"

/*
 * sum_t B[t * ldb + col] x[t * xs] over the chunk [t0, t1) in four independent sums, so that
 * four rows' loads are in flight at once (one sum made a chain of dependent loads).
 */
inline T chunk_dot(global const T *B, ulong ldb, uint col, global const T *x, ulong xs, uint t0,
                   uint t1)
{
  T s0 = (T)0, s1 = (T)0, s2 = (T)0, s3 = (T)0;
  uint t = t0;
  for (; t + 3 < t1; t += 4) {
    s0 += B[(ulong)t * ldb + col] * x[(ulong)t * xs];
    s1 += B[(ulong)(t + 1) * ldb + col] * x[(ulong)(t + 1) * xs];
    s2 += B[(ulong)(t + 2) * ldb + col] * x[(ulong)(t + 2) * xs];
    s3 += B[(ulong)(t + 3) * ldb + col] * x[(ulong)(t + 3) * xs];
  }
  for (; t < t1; t++)
    s0 += B[(ulong)t * ldb + col] * x[(ulong)t * xs];
  return (s0 + s1) + (s2 + s3);
}

/*
 * Sums over the group of four values per lane (every lane gets them); sh: 4 lsz T, of which
 * only sh[0 .. 4) are read after the last barrier (tr_fin reuses the rest at once). lsz >= 4.
 */
inline void group_sum4(local T *sh, T *a, T *b, T *c, T *d, uint lid, uint lsz)
{
  barrier(CLK_LOCAL_MEM_FENCE);
  sh[lid] = *a;
  sh[lsz + lid] = *b;
  sh[2 * lsz + lid] = *c;
  sh[3 * lsz + lid] = *d;
  for (uint off = lsz >> 1; off > 0; off >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < off) {
      sh[lid] += sh[lid + off];
      sh[lsz + lid] += sh[lsz + lid + off];
      sh[2 * lsz + lid] += sh[2 * lsz + lid + off];
      sh[3 * lsz + lid] += sh[3 * lsz + lid + off];
    }
  }
  if (lid == 0) {
    sh[1] = sh[lsz];
    sh[2] = sh[2 * lsz];
    sh[3] = sh[3 * lsz];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  *a = sh[0];
  *b = sh[1];
  *c = sh[2];
  *d = sh[3];
}

/*
 * dlarfg's beta, tau (returned) and 1 / (alpha - beta) for x = (alpha0, x[1 ..]) from the
 * largest |x[1 ..]| (mxa) and the sum of the squares of x[1 ..] / mxa (ss).
 */
inline T house_finish(T mxa, T ss, T alpha0, T *beta, T *scal)
{
  *beta = alpha0;
  *scal = (T)1;
  if (mxa == (T)0)
    return (T)0;
  const T xnorm = mxa * sqrt(ss);
  const T b = -copysign(hypot(alpha0, xnorm), alpha0);
  *beta = b;
  *scal = (T)1 / (alpha0 - b);
  return (b - alpha0) / b;
}

/*
 * dlarfg's beta, tau (returned) and 1 / (alpha - beta) from nchunk (max |x|, sum (x / max)^2)
 * pairs at P[k * stride] (LAPACK dlassq's combination), combined by the group's lanes
 * together: a load each and local trees (every lane walking all the pairs made chains of
 * dependent global loads in every group, on every column). All lanes call it; tmp: lsz T.
 */
inline T house_parts(global const T *P, ulong stride, uint nchunk, T alpha0, T *beta, T *scal,
                     local T *tmp, uint lid, uint lsz)
{
  T m0 = (T)0;
  for (uint k = lid; k < nchunk; k += lsz)
    m0 = fmax(m0, P[k * stride]);
  const T mxa = group_max(tmp, m0, lid, lsz);
  T s0 = (T)0;
  if (mxa > (T)0)
    for (uint k = lid; k < nchunk; k += lsz) {
      const T f = P[k * stride] / mxa;
      s0 += P[k * stride + 1] * f * f;
    }
  const T ss = group_sum(tmp, s0, lid, lsz);
  return house_finish(mxa, ss, alpha0, beta, scal);
}

/* The side of tr_symv's tiles and the lanes of its groups. */
#define SY_TS 32

/*
 * Tile groups of tr_symv for nblk block rows, kt tiles a group, in chunk-major order: chunk ch
 * (tiles b + ch kt ..) exists for the strips b < nblk - ch kt, so m = ceil(nblk / kt) chunks
 * make m nblk - kt m (m - 1) / 2 groups (a closed form: the persistent kernel evaluates it for
 * several kt a column; one integer division a strip had cost every group of a 4096 matrix 128).
 */
inline uint sy_groups(uint nblk, uint kt)
{
  const uint m = (nblk + kt - 1) / kt;
  return m * nblk - kt * (m * (m - 1) / 2);
}

/* Rows of the slot array wp: block rows of the longest column (len = n - 1). */
inline uint sy_slots(uint n) { return (n - 1 + SY_TS - 1) / SY_TS; }

#define TRV
#define TRN(f) f
#define TRNP 1
#include "linalg_tr.clh"
#undef TRV
#undef TRN
#undef TRNP
#define TRV volatile
#define TRN(f) f##_v
#define TRNP 4
#include "linalg_tr.clh"
#undef TRV
#undef TRN
#undef TRNP

/* The per-column kernels' pieces (tr_panel has its own: tr_fin_panel). */

/* sum p[k] q[k] over k = k0, k0 + st, ... below k1, TR_FLIGHT loads of each in flight. */
inline T strided_dot(global const T *p, global const T *r, uint k0, uint k1, uint st)
{
  T s = (T)0;
  for (uint b = k0; b < k1; b += TR_FLIGHT * st) {
    T v[TR_FLIGHT], w[TR_FLIGHT];
#pragma unroll
    for (uint q = 0; q < TR_FLIGHT; q++) {
      const int in = b + q * st < k1;
      v[q] = in ? p[b + q * st] : (T)0;
      w[q] = in ? r[b + q * st] : (T)0;
    }
#pragma unroll
    for (uint q = 0; q < TR_FLIGHT; q++)
      s += v[q] * w[q];
  }
  return s;
}

/*
 * sh[col] = base[col] + scal sum_k P[k * stride + 2 + col] for the n1 columns from 0 and the
 * n2 from off2: up to 8 lanes per column sum slices of the chunks into tmp (lsz T), then one
 * lane per column the slices. All lanes call it; it ends with a barrier.
 */
inline void parts_cols(global const T *P, ulong stride, uint nchunk, uint n1, uint off2, uint n2,
                       global const T *base, T scal, local T *sh, local T *tmp, uint lid,
                       uint lsz)
{
  const uint w = n1 + n2, ns = w == 0 ? 0 : min(8u, lsz / w);
  if (ns == 0) {
    for (uint el = lid; el < w; el += lsz) {
      const uint col = el < n1 ? el : off2 + el - n1;
      sh[col] = base[col] + scal * strided_sum(P + 2 + col, stride, 0, nchunk, 1);
    }
  } else {
    const uint el = lid % w, sl = lid / w;
    barrier(CLK_LOCAL_MEM_FENCE); /* tmp may still hold a caller's group sum being read */
    if (sl < ns) {
      const uint col = el < n1 ? el : off2 + el - n1;
      tmp[sl * w + el] = strided_sum(P + 2 + col, stride, sl, nchunk, ns);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < w) {
      const uint col = lid < n1 ? lid : off2 + lid - n1;
      T s = (T)0;
      for (uint q = 0; q < ns; q++)
        s += tmp[q * w + lid];
      sh[col] = base[col] + scal * s;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}

/*
 * tr_fin's reductions after dlarfg (tj, scal): y = V^T v into sh[0 .. i), x = W^T v into
 * sh[nb .. nb + i) from the nchunk partials P, then w . v = tau (v^T A22 v - 2 x . y) and the
 * alpha = -tau/2 w . v that w needs, and row c+1's w (v = 1 there: *wf1). v^T A22 v =
 * p_0 + scal sum_{t>0} x_t p_t, p_t = aa_t + scal q_t, where sum_{t>0} x_t q_t is the sum of
 * the tile tasks' quadratic forms. V1: V's row c+1. tmp: 4 lsz T after sh's 2 nb. All lanes.
 */
inline void fin_tail(global const T *x, global const T *aa, global const T *W, global const T *P,
                     ulong stride, uint nchunk, global const T *V1, uint n, uint len, uint nblk,
                     uint kt, uint i, uint nb, T tj, T scal, local T *sh, local T *tmp, uint lid,
                     uint lsz, T *alpha, T *wf1)
{
  parts_cols(P, stride, nchunk, i, nb, i, V1, scal, sh, tmp, lid, lsz);
  /* in one four-way tree: the quadratic form, xy = (V^T v) . (W^T v), row c+1's correction
   * corr1 (a term per lane l < i, where one lane's chain of i global loads was) and q_0 (row
   * c+1's slots, likewise) */
  global const T *Q = W + (ulong)sy_slots(n) * n;
  T s1 = strided_dot(x, aa, 1 + lid, len, lsz) +
         scal * strided_sum(Q, 1, lid, sy_groups(nblk, kt), lsz);
  T xy = (T)0, corr1 = (T)0, q0 = sy_row(W, n, 0, nblk, kt, lid, lsz);
  for (uint l = lid; l < i; l += lsz) {
    xy += sh[l] * sh[nb + l];
    corr1 += V1[l] * sh[nb + l] + V1[nb + l] * sh[l];
  }
  group_sum4(tmp, &s1, &xy, &corr1, &q0, lid, lsz);
  const T p0 = aa[0] + scal * q0;
  const T wv = tj * (p0 + scal * s1 - (T)2 * xy);
  *alpha = (T)-0.5 * tj * wv;
  *wf1 = tj * (p0 - corr1) + *alpha;
}

/*
 * tr_fin's rows: row r = c+1+t (lpr lanes a row, sub the lane's share): this lane's sums over
 * the row's V and W columns and its slots of q_t, then fin_row_end. red: 3 lsz T (not sh's
 * first 2 nb).
 */
inline void fin_rows(global T *A, global const T *x, global const T *aa, global const T *W,
                     global T *V, uint n, uint c, uint i, uint nb, uint len, uint nblk, uint kt,
                     uint t, uint sub, uint lpr, uint upd, T tj, T beta, T scal, T alpha, T wf1,
                     global T *tau, global T *d, global T *e, local T *sh, local T *red, uint lid,
                     uint lsz)
{
  const ulong ld3 = 3 * (ulong)nb;
  const uint r = c + 1 + min(t, len - 1);
  global T *Vr = V + (ulong)r * ld3, *V1 = V + (ulong)(c + 1) * ld3;
  T corr = (T)0, acc = (T)0, qt = t < len ? sy_row(W, n, t, nblk, kt, sub, lpr) : (T)0;
  for (uint l0 = sub; l0 < i && t < len; l0 += 4 * lpr) {
    T vl[4], wl[4], v1[4], w1[4]; /* every load of four columns in flight */
#pragma unroll
    for (uint q = 0; q < 4; q++) {
      const uint l = min(l0 + q * lpr, i - 1);
      vl[q] = Vr[l], wl[q] = Vr[nb + l], v1[q] = V1[l], w1[q] = V1[nb + l];
    }
#pragma unroll
    for (uint q = 0; q < 4; q++) {
      const uint l = l0 + q * lpr;
      const T on = l < i ? (T)1 : (T)0;
      corr += on * (vl[q] * sh[nb + min(l, i - 1)] + wl[q] * sh[min(l, i - 1)]);
      acc += on * (vl[q] * w1[q] + wl[q] * v1[q]);
    }
  }
  const int first = sub == 0 && t < len;
  fin_row_end(corr, acc, qt, first ? x[t] : (T)0, first ? aa[t] : (T)0,
              first ? A[(ulong)(c + 1) * n + r] : (T)0, A, V, n, c, i, nb, len, t, sub, lpr, upd,
              tj, beta, scal, alpha, wf1, x, tau, d, e, red, lid, lsz);
}

kernel void tr_symv(global const T *a, ulong aoff, uint n, uint c, uint i, global const T *vw,
                    ulong vwoff, uint nb, global T *wp, ulong wpoff, global T *aa, ulong aaoff,
                    global T *part, ulong poff, uint nchunk, uint kt, local T *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const uint len = n - c - 1, nblk = (len + SY_TS - 1) / SY_TS, ng = sy_groups(nblk, kt);
  global const T *A = a + aoff;
  global const T *x = A + (ulong)c * n + c + 1;
  const uint grp = (uint)get_group_id(0);
  if (grp < ng) {
    sy_task(x + n, x, n, len, nblk, kt, ng, grp, 1, lid, wp + wpoff, sh, sh + SY_TS, 0, x, 0,
            nb, i, part, 0, aa);
  } else {
    const uint k = grp - ng, cs = (len - 1 + nchunk - 1) / nchunk;
    const uint t0 = min(len, 1 + k * cs), t1 = min(len, t0 + cs);
    /* A22's first column for tr_fin, as row c+1 holds it before tr_fin updates that row */
    for (uint t = (k == 0 ? 0 : t0) + lid; t < t1; t += lsz) /* chunk 0 from t = 0: t1 >= 1 */
      aa[aaoff + t] = x[(ulong)n + t];
    T mx = (T)0;
    for (uint t = t0 + lid; t < t1; t += lsz)
      mx = fmax(mx, fabs(x[t]));
    mx = group_max(sh, mx, lid, lsz);
    T ss = (T)0;
    if (mx > (T)0)
      for (uint t = t0 + lid; t < t1; t += lsz) {
        const T y = x[t] / mx;
        ss += y * y;
      }
    ss = group_sum(sh, ss, lid, lsz);
    global T *P = part + poff + (ulong)k * (2 + 2 * nb);
    if (lid == 0) {
      P[0] = mx;
      P[1] = ss;
    }
    const ulong ld3 = 3 * (ulong)nb;
    global const T *V = vw + vwoff;
    for (uint e = lid; e < 2 * i; e += lsz) {
      const uint col = e < i ? e : nb + e - i;
      P[2 + col] = chunk_dot(V + (ulong)(c + 1) * ld3, ld3, col, x, 1, t0, t1);
    }
  }
}

kernel void tr_fin(global T *a, ulong aoff, uint n, uint c, uint i, global T *vw, ulong vwoff,
                   uint nb, global const T *wp, ulong wpoff, global const T *aa, ulong aaoff,
                   global const T *part, ulong poff, uint nchunk, uint kt, global T *tau, ulong toff,
                   global T *d, ulong doff, global T *e, ulong eoff, uint upd, uint lpr,
                   local T *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  /* lpr lanes per row: each sums every lpr-th column of its row's V and W */
  const uint sub = lid % lpr, t = (uint)get_group_id(0) * (lsz / lpr) + lid / lpr;
  const uint len = n - c - 1, nblk = (len + SY_TS - 1) / SY_TS;
  const ulong ld3 = 3 * (ulong)nb, stride = 2 + 2 * (ulong)nb;
  global T *A = a + aoff;
  global T *V = vw + vwoff;
  global const T *x = A + (ulong)c * n + c + 1;
  /* dlarfg from the chunks' partials; y = V^T v, x = W^T v into sh (row c+1 holds v's 1).
   * tmp: the 4 lsz T after sh's 2 nb. */
  local T *tmp = sh + 2 * nb;
  T beta, scal, alpha, wf1;
  const T tj = house_parts(part + poff, stride, nchunk, x[0], &beta, &scal, tmp, lid, lsz);
  fin_tail(x, aa + aaoff, wp + wpoff, part + poff, stride, nchunk, V + (ulong)(c + 1) * ld3, n,
           len, nblk, kt, i, nb, tj, scal, sh, tmp, lid, lsz, &alpha, &wf1);
  fin_rows(A, x, aa + aaoff, wp + wpoff, V, n, c, i, nb, len, nblk, kt, t, sub, lpr, upd, tj,
           beta, scal, alpha, wf1, tau + toff, d + doff, e + eoff, sh, sh + 2 * nb + lsz, lid,
           lsz);
}

/*
 * The panel grid barrier: every group's stores before it reach every group's volatile loads
 * after it (CUDA's grid sync has this form: a group barrier, one lane's fence and counter,
 * a group barrier). *ctr counts the groups that arrived; target is the count at which all of
 * this barrier's have.
 */
inline void tr_grid_sync(volatile global uint *ctr, uint target, uint lid)
{
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  if (lid == 0) {
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    atomic_inc(ctr);
    while (*ctr < target)
      ;
    mem_fence(CLK_GLOBAL_MEM_FENCE);
  }
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
}

/*
 * The largest |x[1 ..]| for which tr_fin_panel sums the squares unscaled: no overflow for
 * 2^32 elements, no digits lost to underflow (the square's rounding stays far from the
 * subnormals); outside it, a second, scaled pass. Set where the suite can reach both sides
 * while the reduction's other sums (x^T A x: the cube of the scale) stay finite.
 */
#if defined(KILN_DT_F64)
#define TR_NRM_LO 1e-60
#define TR_NRM_HI 1e60
#else
#define TR_NRM_LO 1e-9f
#define TR_NRM_HI 1e9f
#endif

/*
 * tr_panel's second half of a column, per group. Its global reads are all known when it
 * starts (the first half's slots and partials, the current row, V and W), so they are issued
 * before any is used: one round trip of the device's memory for what a chain of dependent
 * loops took eight to ten (about 0.5 us each on the H200).
 *
 * A row's share (row t, lane sub of lpr): the slots of q_t, V's and W's first i columns of
 * row r = c+1+t and of row c+1 (four columns a lane: i <= 4 lpr), x_t, aa_t, A[c+1][r].
 */
typedef struct {
  T qt, xt, at, ar, vl[4], wl[4], v1[4], w1[4];
} tr_row;

inline void tr_row_load(tr_row *R, volatile global const T *x, volatile global const T *aa,
                        volatile global const T *W, volatile global const T *Vv,
                        global const T *A, uint n, uint c, uint i, uint nb, uint len, uint nblk,
                        uint kt, uint t, uint sub, uint lpr)
{
  const ulong ld3 = 3 * (ulong)nb;
  const int on = t < len; /* rows past the last read nothing: another lane writes there */
  const uint r = c + 1 + min(t, len - 1);
  volatile global const T *Vr = Vv + (ulong)r * ld3, *V1 = Vv + (ulong)(c + 1) * ld3;
#pragma unroll
  for (uint q = 0; q < 4; q++) {
    const uint l = sub + q * lpr;
    const int in = on && l < i;
    R->vl[q] = in ? Vr[l] : (T)0;
    R->wl[q] = in ? Vr[nb + l] : (T)0;
    R->v1[q] = in ? V1[l] : (T)0;
    R->w1[q] = in ? V1[nb + l] : (T)0;
  }
  /* the row's first lane alone, which alone stores A[c+1][r] (its other lanes would race with
   * that store: the group's barriers fence local memory only) */
  const int first = on && sub == 0;
  R->xt = first ? x[t] : (T)0;
  R->at = first ? aa[t] : (T)0;
  R->ar = first ? A[(ulong)(c + 1) * n + r] : (T)0;
  R->qt = on ? sy_row_v(W, n, t, nblk, kt, sub, lpr) : (T)0;
}

/* tr_fin's row work from the loaded share, as fin_rows; red: 3 lsz T, not sh's first 2 nb. */
inline void tr_row_finish(const tr_row *R, global T *A, global T *Vw, uint n, uint c, uint i,
                          uint nb, uint len, uint t, uint sub, uint lpr, uint upd, T tj, T beta,
                          T scal, T alpha, T wf1, volatile global const T *x, global T *tau,
                          global T *d, global T *e, local T *sh, local T *red, uint lid,
                          uint lsz)
{
  T corr = (T)0, acc = (T)0, qt = R->qt;
#pragma unroll
  for (uint q = 0; q < 4; q++) {
    const uint l = sub + q * lpr;
    if (l < i) {
      corr += R->vl[q] * sh[nb + l] + R->wl[q] * sh[l];
      acc += R->vl[q] * R->w1[q] + R->wl[q] * R->v1[q];
    }
  }
  fin_row_end_v(corr, acc, qt, R->xt, R->at, R->ar, A, Vw, n, c, i, nb, len, t, sub, lpr, upd,
                tj, beta, scal, alpha, wf1, x, tau, d, e, red, lid, lsz);
}

/*
 * The group's part: its lanes' shares of dlarfg's norm of x[1 ..] (largest |x| and sum of
 * squares, without a division: f64 divisions in a dependent chain cost about 2 us a column),
 * of x . aa, of the tile tasks' quadratic forms, of q_0 and of the strips' V^T x, W^T x
 * partials, in one pass (TR_FLIGHT of each in flight), then one tree for the first four; the
 * reflector; y = V^T v, x = W^T v into sh; then every lane forms x . y and row c+1's correction
 * from sh alone (i <= 31 terms: cheaper than a tree's barriers); then the rows, the group's
 * first block loaded before all of it. sh: 4 nb + 6 lsz T.
 */
inline void tr_fin_panel(global T *A, volatile global const T *x, volatile global const T *aa,
                         volatile global const T *W, volatile global const T *P, ulong stride,
                         global T *V, uint n, uint c, uint i, uint nb, uint len, uint nblk,
                         uint kt, uint lpr, uint upd, global T *tau, global T *d, global T *e,
                         local T *sh, uint lid, uint lsz, uint g, uint G)
{
  const uint rows = lsz / lpr, sub = lid % lpr;
  const ulong ld3 = 3 * (ulong)nb;
  volatile global const T *Vv = V, *V1 = Vv + (ulong)(c + 1) * ld3;
  volatile global const T *Q = W + (ulong)sy_slots(n) * n;
  tr_row R;
  tr_row_load(&R, x, aa, W, Vv, A, n, c, i, nb, len, nblk, kt, g * rows + lid / lpr, sub, lpr);
  const uint w = 2 * i, ns = w ? min(8u, lsz / w) : 0, el = w ? lid % w : 0;
  const uint sl = w ? lid / w : lsz, colp = el < i ? el : nb + el - i;
  const uint ng = sy_groups(nblk, kt), m0 = (nblk + kt - 1) / kt;
  const uint bcol = lid < i ? lid : nb + lid - i;
  const T base = lid < w ? V1[bcol] : (T)0, aa0 = aa[0], x0 = x[0];
  T mx = (T)0, sq = (T)0, dot = (T)0, quad = (T)0, q0 = (T)0, ps = (T)0;
  for (uint j = 0;; j += TR_FLIGHT) {
    const uint u0 = 1 + lid + j * lsz, g0 = lid + j * lsz, pj = sl + j * ns;
    if (u0 >= len && g0 >= ng && g0 >= m0 && (sl >= ns || pj >= nblk))
      break;
    T xv[TR_FLIGHT], av[TR_FLIGHT], qv[TR_FLIGHT], zv[TR_FLIGHT], pv[TR_FLIGHT];
#pragma unroll
    for (uint k = 0; k < TR_FLIGHT; k++) {
      const uint u = u0 + k * lsz, gq = g0 + k * lsz, pk = pj + k * ns;
      xv[k] = u < len ? x[u] : (T)0;
      av[k] = u < len ? aa[u] : (T)0;
      qv[k] = gq < ng ? Q[gq] : (T)0;
      zv[k] = gq < m0 ? W[(ulong)gq * kt * n] : (T)0;
      pv[k] = sl < ns && pk < nblk ? P[pk * stride + 2 + colp] : (T)0;
    }
#pragma unroll
    for (uint k = 0; k < TR_FLIGHT; k++) {
      mx = fmax(mx, fabs(xv[k]));
      sq += xv[k] * xv[k];
      dot += xv[k] * av[k];
      quad += qv[k];
      q0 += zv[k];
      ps += pv[k];
    }
  }
  local T *S = sh + 2 * nb, *slice = S + 5 * lsz, *bsh = S + 6 * lsz;
  barrier(CLK_LOCAL_MEM_FENCE);
  S[lid] = mx;
  S[lsz + lid] = sq;
  S[2 * lsz + lid] = dot;
  S[3 * lsz + lid] = quad;
  S[4 * lsz + lid] = q0;
  if (sl < ns)
    slice[sl * w + el] = ps;
  for (uint off = lsz >> 1; off > 0; off >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < off) {
      S[lid] = fmax(S[lid], S[lid + off]);
      S[lsz + lid] += S[lsz + lid + off];
      S[2 * lsz + lid] += S[2 * lsz + lid + off];
      S[3 * lsz + lid] += S[3 * lsz + lid + off];
      S[4 * lsz + lid] += S[4 * lsz + lid + off];
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const T mxa = S[0], sumsq = S[lsz], dotv = S[2 * lsz], quadv = S[3 * lsz], q0v = S[4 * lsz];
  T beta, scal, tj;
  if (mxa == (T)0 || (mxa >= TR_NRM_LO && mxa <= TR_NRM_HI && fabs(x0) <= TR_NRM_HI)) {
    /* dlarfg from the plain sums: beta = -sign(alpha) sqrt(alpha^2 + |x|^2), no hypot and no
     * scaling division on the column's chain */
    beta = x0;
    scal = (T)1;
    tj = (T)0;
    if (mxa > (T)0) {
      beta = -copysign(sqrt(x0 * x0 + sumsq), x0);
      scal = (T)1 / (x0 - beta);
      tj = (beta - x0) / beta;
    }
  } else {
    /* outside the range where the plain sum of squares can neither overflow nor lose digits
     * to underflow: again, scaled (dlassq's way) */
    T s0 = (T)0;
    for (uint u = 1 + lid; u < len; u += lsz) {
      const T f = x[u] / mxa;
      s0 += f * f;
    }
    tj = house_finish(mxa, group_sum(S, s0, lid, lsz), x0, &beta, &scal);
  }
  const T s1 = dotv + scal * quadv, p0 = aa0 + scal * q0v;
  if (lid < w) {
    T su = (T)0;
    for (uint q = 0; q < ns; q++)
      su += slice[q * w + lid];
    sh[bcol] = base + scal * su;
    bsh[bcol] = base;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  T xy = (T)0, corr1 = (T)0;
  for (uint l = 0; l < i; l++) {
    const T y = sh[l], z = sh[nb + l];
    xy += y * z;
    corr1 += bsh[l] * z + bsh[nb + l] * y;
  }
  const T wv = tj * (p0 + scal * s1 - (T)2 * xy);
  const T alpha = (T)-0.5 * tj * wv, wf1 = tj * (p0 - corr1) + alpha;
  local T *red = sh + 2 * nb + lsz;
  for (uint q = g;; q += G) {
    const uint t = q * rows + lid / lpr;
    tr_row_finish(&R, A, V, n, c, i, nb, len, t, sub, lpr, upd, tj, beta, scal, alpha, wf1, x,
                  tau, d, e, sh, red, lid, lsz);
    if ((q + G) * rows >= len)
      break;
    tr_row_load(&R, x, aa, W, Vv, A, n, c, i, nb, len, nblk, kt, (q + G) * rows + lid / lpr, sub,
                lpr);
  }
}

/* Tiles per task: the fewest that make at most `slots` tasks (one round of the launch's). */
inline uint tr_kt(uint nblk, uint slots)
{
  uint k = max(1u, nblk * (nblk + 1) / (2 * slots));
  while (k < nblk && sy_groups(nblk, k) > slots)
    k++;
  return k;
}

/*
 * tr_panel: the jb columns of the panel from j0 in one launch of G work-groups, which must
 * all be resident at once (one per compute unit, GPUs). Per column, tr_symv's tile tasks and
 * one task per strip (its share of V^T x and W^T x, and aa) on the groups' SY_TS-lane sets
 * (task k to set k / G of group k % G; tiles per task so that one round covers them); a grid
 * barrier; every group forms the reflector (the norm of x[1 ..] read directly, not from
 * partials) and tr_fin's reductions, then tr_fin's row blocks (block q to group q % G):
 * tr_fin_panel; a grid barrier before the next column, which reads the row and V's column this
 * one wrote. The per-column launches' host enqueues (about 6 us each with NVIDIA's driver) and
 * the gaps between them go away. sync: the barrier counter, at sbase when the launch starts.
 * symk > 0 fixes the tiles per task. sh: the larger of (lsz / SY_TS) (SY_TS + 8 (SY_TS + 1))
 * and 4 nb + 6 lsz T. nb <= 4 lpr, 2 nb <= lsz.
 */
kernel void tr_panel(global T *a, ulong aoff, uint n, uint j0, uint jb, global T *vw,
                     ulong vwoff, uint nb, global T *wp, ulong wpoff, global T *aa, ulong aaoff,
                     global T *part, ulong poff, uint symk, global T *tau, ulong toff,
                     global T *d, ulong doff, global T *e, ulong eoff, uint lpr,
                     volatile global uint *sync, uint sbase, local T *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const uint g = (uint)get_group_id(0), G = (uint)get_num_groups(0);
  const uint sets = lsz / SY_TS, set = lid / SY_TS, l = lid % SY_TS;
  const uint rows = lsz / lpr, sub = lid % lpr;
  const ulong ld3 = 3 * (ulong)nb, stride = 2 + 2 * (ulong)nb;
  global T *A = a + aoff;
  global T *V = vw + vwoff;
  global T *W = wp + wpoff;
  global T *AA = aa + aaoff;
  global T *P = part + poff;
  local T *xr = sh + set * (SY_TS + 8 * (SY_TS + 1));
  uint target = sbase;
  for (uint i = 0; i < jb; i++) {
    const uint c = j0 + i, len = n - c - 1, nblk = (len + SY_TS - 1) / SY_TS;
    /* the strips' tasks take nblk of the launch's G x sets lane sets */
    const uint kt = symk ? symk : tr_kt(nblk, max(G * sets, 2 * nblk) - nblk);
    const uint ng = sy_groups(nblk, kt);
    volatile global const T *x = A + (ulong)c * n + c + 1;
    for (uint r0 = 0; r0 < ng + nblk; r0 += G * sets) {
      const uint vg = r0 + set * G + g;
      sy_task_v(A + (ulong)(c + 1) * n + c + 1, x, n, len, nblk, kt, ng, vg, vg < ng + nblk, l,
                W, xr, xr + SY_TS, 1, V + (ulong)(c + 1) * ld3, ld3, nb, i, P, stride, AA);
    }
    tr_grid_sync(sync, target += G, lid);
    tr_fin_panel(A, x, AA, W, P, stride, V, n, c, i, nb, len, nblk, kt, lpr, i + 1 < jb,
                 tau + toff, d + doff, e + eoff, sh, lid, lsz, g, G);
    if (i + 1 < jb)
      tr_grid_sync(sync, target += G, lid);
  }
}
/*
 * The blocked bidiagonalisation of svd (LAPACK dgebrd with dlabrd, M >= N, upper): A is
 * M x N row-major (ld N). A panel of columns j0 .. j0+jb-1 keeps lf (M rows, row stride
 * 2 nb: [U X]) and rt (N rows, row stride 2 nb: [Y Vr^T]), rows absolute, so that the
 * trailing update A -= U Y^T + X Vr is one GEMM of lf with rt^T. The left reflectors go
 * below A's diagonal (the QR layout), the right ones below the diagonal of p's column c,
 * one row down (p N x N).
 *
 * Per column c (index i in the panel; R = M - c - 1 rows below, C = N - c - 1 columns right):
 *   bd_ysum   ntile * nchunk + nchunk groups: y partials over row chunks k of
 *     sum_r A[r][s] A[r][c] (r > c) for the columns s > c (tile of lsz columns each) into
 *     part[k * N + s]; the aux groups the norm partials of A[c+1.., c] and U^T, X^T of it
 *     over the first i columns, into aux[k * (2 + 2 nb) ..]. sh: lsz T.
 *   bd_yfin   global (max(R, C)): the left reflector (dlarfg of A[c.., c]: d[c], tauq[c];
 *     u below the diagonal and into U's column i), y_s = tauq (A^T u - Y U^T u - Vr^T X^T u)
 *     into Y's column i, and row c's update A[c][s] -= Y[s] U[c]^T + Vr^T[s] X[c]^T over the
 *     first i + 1 columns (U[c][i] = 1). lpr lanes per column. sh: 2 nb + 3 lsz T.
 *   bd_xsum   R + nchunk groups: q[t] = A[c+1+t][c+2 ..] . A[c][c+2 ..]; the aux groups the
 *     norm partials of A[c][c+2 ..] and Y^T, Vr of it (i + 1 and i columns). sh: lsz T.
 *   bd_xfin   global (max(R, C)): the right reflector (dlarfg of A[c][c+1 ..]: e[c], taup[c];
 *     v into Vr^T's column i and below p's diagonal), x_r = taup (A v - U Y^T v - X Vr v)
 *     into X's column i, and when upd (column c+1 in the panel) column c+1's update
 *     A[r][c+1] -= U[r] Y[c+1]^T + X[r] Vr^T[c+1]^T over the first i + 1 columns (Vr^T[c+1][i]
 *     = 1). lpr lanes per row. sh: 2 nb + 2 lsz T.
 */

/*
 * Over the chunk [t0, t1) of x (stride xs): (max |x|, sum (x / max)^2) into P[0], P[1], and
 * into P[2 + col] the sums of B[t * ldb + col] x[t] for cols [0, n1) and [off2, off2 + n2).
 */
inline void aux_parts(global const T *x, ulong xs, uint t0, uint t1, global const T *B, ulong ldb,
                      uint n1, uint off2, uint n2, global T *P, local T *sh, uint lid, uint lsz)
{
  T mx = (T)0;
  for (uint t = t0 + lid; t < t1; t += lsz)
    mx = fmax(mx, fabs(x[t * xs]));
  mx = group_max(sh, mx, lid, lsz);
  T ss = (T)0;
  if (mx > (T)0)
    for (uint t = t0 + lid; t < t1; t += lsz) {
      const T y = x[t * xs] / mx;
      ss += y * y;
    }
  ss = group_sum(sh, ss, lid, lsz);
  if (lid == 0) {
    P[0] = mx;
    P[1] = ss;
  }
  for (uint el = lid; el < n1 + n2; el += lsz) {
    const uint col = el < n1 ? el : off2 + el - n1;
    P[2 + col] = chunk_dot(B, ldb, col, x, xs, t0, t1);
  }
}

/*
 * aux_parts without work-group reductions: lane n1 + n2 keeps the chunk's (max |x|, scaled sum
 * of squares) in one pass (dlassq's update), the others the column sums. For kernels whose
 * other groups take no barrier (PoCL mishandles a kernel whose groups take barriers on one
 * branch and return early on the other).
 */
inline void aux_parts_nb(global const T *x, ulong xs, uint t0, uint t1, global const T *B,
                         ulong ldb, uint n1, uint off2, uint n2, global T *P, uint lid, uint lsz)
{
  for (uint el = lid; el <= n1 + n2; el += lsz) {
    if (el == n1 + n2) {
      T scale = (T)0, ssq = (T)1;
      for (uint t = t0; t < t1; t++) {
        const T v = fabs(x[t * xs]);
        if (v > scale) {
          const T f = scale / v;
          ssq = (T)1 + ssq * f * f;
          scale = v;
        } else if (v > (T)0) {
          const T f = v / scale;
          ssq += f * f;
        }
      }
      P[0] = scale;
      P[1] = scale > (T)0 ? ssq : (T)0;
      continue;
    }
    const uint col = el < n1 ? el : off2 + el - n1;
    P[2 + col] = chunk_dot(B, ldb, col, x, xs, t0, t1);
  }
}

kernel void bd_ysum(global const T *a, ulong aoff, uint M, uint N, uint c, uint i,
                    global const T *lf, ulong lfoff, uint nb, global T *part, ulong poff,
                    uint nchunk, uint ntile, local T *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0), g = (uint)get_group_id(0);
  const uint R = M - c - 1, cs = (R + nchunk - 1) / nchunk;
  global const T *A = a + aoff;
  if (g < ntile * nchunk) {
    const uint k = g / ntile, s = c + 1 + (g % ntile) * lsz + lid;
    const uint r0 = c + 1 + min(R, k * cs), r1 = c + 1 + min(R, (k + 1) * cs);
    if (s < N) /* column s against column c over the chunk's rows, four rows in flight */
      part[poff + (ulong)k * N + s] = chunk_dot(A + s, N, 0, A + c, N, r0, r1);
    return;
  }
  const uint k = g - ntile * nchunk;
  const uint t0 = min(R, k * cs), t1 = min(R, (k + 1) * cs);
  aux_parts_nb(A + (ulong)(c + 1) * N + c, N, t0, t1, lf + lfoff + (ulong)(c + 1) * 2 * nb,
               2 * (ulong)nb, i, nb, i,
               part + poff + (ulong)nchunk * N + (ulong)k * (2 + 2 * nb), lid, lsz);
}

kernel void bd_yfin(global T *a, ulong aoff, uint M, uint N, uint c, uint i, global T *lf,
                    ulong lfoff, global T *rt, ulong rtoff, uint nb, global const T *part,
                    ulong poff, uint nchunk, global T *d, ulong doff, global T *tauq, ulong tqoff,
                    uint lpr, local T *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const uint sub = lid % lpr, t = (uint)get_group_id(0) * (lsz / lpr) + lid / lpr;
  const uint R = M - c - 1, C = N - c - 1;
  const ulong ld2 = 2 * (ulong)nb, stride = 2 + 2 * (ulong)nb;
  global T *A = a + aoff;
  global T *Lf = lf + lfoff;
  global T *Rt = rt + rtoff;
  global const T *aux = part + poff + (ulong)nchunk * N;
  T beta, scal;
  const T tq =
      house_parts(aux, stride, nchunk, A[(ulong)c * N + c], &beta, &scal, sh + 2 * nb, lid, lsz);
  /* U^T u into sh[0 .. i), X^T u into sh[nb .. nb + i) (u[c] = 1) */
  parts_cols(aux, stride, nchunk, i, nb, i, Lf + (ulong)c * ld2, scal, sh, sh + 2 * nb, lid, lsz);
  /* column s: lpr lanes share the partial sums and the row's Y, Vr^T terms */
  const uint s_ = c + 1 + t;
  global T *Rs = Rt + (ulong)(t < C ? s_ : c + 1) * ld2;
  global const T *Lc = Lf + (ulong)c * ld2;
  T ps = (T)0, corr = (T)0, upd = (T)0;
  for (uint k = sub; k < nchunk && t < C; k += lpr)
    ps += part[poff + (ulong)k * N + s_];
  for (uint l = sub; l < i && t < C; l += lpr) {
    corr += Rs[l] * sh[l] + Rs[nb + l] * sh[nb + l];
    upd += Rs[l] * Lc[l] + Rs[nb + l] * Lc[nb + l];
  }
  local T *red = sh + 2 * nb;
  red[lid] = ps;
  red[lsz + lid] = corr;
  red[2 * lsz + lid] = upd;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (sub == 0 && t < C) {
    for (uint k = 1; k < lpr; k++) {
      ps += red[lid + k];
      corr += red[lsz + lid + k];
      upd += red[2 * lsz + lid + k];
    }
    global T *acs = A + (ulong)c * N + s_;
    const T y = tq * (*acs + scal * ps - corr);
    Rs[i] = y;
    *acs -= upd + y;
  }
  if (sub == 0 && t < R) {
    const uint r = c + 1 + t;
    const T u = scal * A[(ulong)r * N + c];
    A[(ulong)r * N + c] = u;
    Lf[(ulong)r * ld2 + i] = u;
  }
  if (t == 0 && sub == 0) {
    Lf[(ulong)c * ld2 + i] = (T)1;
    d[doff + c] = beta;
    tauq[tqoff + c] = tq;
  }
}

kernel void bd_xsum(global const T *a, ulong aoff, uint M, uint N, uint c, uint i,
                    global const T *rt, ulong rtoff, uint nb, global T *q, ulong qoff,
                    global T *part, ulong poff, uint nchunk, local T *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0), g = (uint)get_group_id(0);
  const uint R = M - c - 1, C = N - c - 1;
  global const T *A = a + aoff;
  global const T *x = A + (ulong)c * N + c + 1;
  if (g < R) {
    global const T *row = A + (ulong)(c + 1 + g) * N + c + 1;
    T s = (T)0;
    for (uint t = 1 + lid; t < C; t += lsz)
      s += row[t] * x[t];
    s = group_sum(sh, s, lid, lsz);
    if (lid == 0)
      q[qoff + g] = s;
    return;
  }
  const uint k = g - R, cs = (C - 1 + nchunk - 1) / nchunk;
  const uint t0 = min(C, 1 + k * cs), t1 = min(C, t0 + cs);
  aux_parts(x, 1, t0, t1, rt + rtoff + (ulong)(c + 1) * 2 * nb, 2 * (ulong)nb, i + 1, nb, i,
            part + poff + (ulong)k * (2 + 2 * nb), sh, lid, lsz);
}

kernel void bd_xfin(global T *a, ulong aoff, uint M, uint N, uint c, uint i, global T *lf,
                    ulong lfoff, global T *rt, ulong rtoff, uint nb, global const T *q, ulong qoff,
                    global const T *part, ulong poff, uint nchunk, global T *e, ulong eoff,
                    global T *taup, ulong tpoff, global T *p, ulong pofs, uint upd, uint lpr,
                    local T *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const uint sub = lid % lpr, t = (uint)get_group_id(0) * (lsz / lpr) + lid / lpr;
  const uint R = M - c - 1, C = N - c - 1;
  const ulong ld2 = 2 * (ulong)nb, stride = 2 + 2 * (ulong)nb;
  global T *A = a + aoff;
  global T *Lf = lf + lfoff;
  global T *Rt = rt + rtoff;
  global const T *aux = part + poff;
  T beta, scal;
  const T tp = house_parts(aux, stride, nchunk, A[(ulong)c * N + c + 1], &beta, &scal,
                           sh + 2 * nb, lid, lsz);
  /* Y^T v into sh[0 .. i], Vr v into sh[nb .. nb + i) (v[c+1] = 1) */
  parts_cols(aux, stride, nchunk, i + 1, nb, i, Rt + (ulong)(c + 1) * ld2, scal, sh, sh + 2 * nb,
             lid, lsz);
  /* row r: lpr lanes share the row's U, X terms */
  const uint r = c + 1 + t;
  global T *Lr = Lf + (ulong)(t < R ? r : c + 1) * ld2;
  global const T *Rc = Rt + (ulong)(c + 1) * ld2;
  T corr = (T)0, u = (T)0;
  for (uint l = sub; l < i && t < R; l += lpr) {
    corr += Lr[l] * sh[l] + Lr[nb + l] * sh[nb + l];
    u += Lr[l] * Rc[l] + Lr[nb + l] * Rc[nb + l];
  }
  local T *red = sh + 2 * nb;
  red[lid] = corr;
  red[lsz + lid] = u;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (sub == 0 && t < R) {
    for (uint k = 1; k < lpr; k++) {
      corr += red[lid + k];
      u += red[lsz + lid + k];
    }
    corr += Lr[i] * sh[i];
    global T *arc = A + (ulong)r * N + c + 1;
    const T xr = tp * (*arc + scal * q[qoff + t] - corr);
    Lr[nb + i] = xr;
    if (upd) /* column i: Vr^T[c+1][i] = 1 */
      *arc -= u + Lr[i] * Rc[i] + xr;
  }
  if (sub == 0 && t < C) {
    const uint s_ = c + 1 + t;
    const T v = t == 0 ? (T)1 : scal * A[(ulong)c * N + s_];
    Rt[(ulong)s_ * ld2 + nb + i] = v;
    if (t > 0)
      p[pofs + (ulong)s_ * N + c] = v;
  }
  if (t == 0 && sub == 0) {
    e[eoff + c] = beta;
    taup[tpoff + c] = tp;
  }
}

/* out[b n + j] = sum_i (g_b[i][j] - delta_ij)^2 over count n x n row-major matrices g_b, n^2
 * elements apart from element goff (one work-item per column: the checks of svd's U^T U and
 * V^T V and of eigh's host Z^T Z). */
kernel void orth_dev(global const T *g, ulong goff, uint n, uint count, global T *out)
{
  const ulong id = get_global_id(0);
  if (id >= (ulong)count * n)
    return;
  const uint j = (uint)(id % n);
  global const T *gb = g + goff + id / n * n * n;
  T s = (T)0;
  for (uint i = 0; i < n; i++) {
    T x = gb[(ulong)i * n + j] - (i == j ? (T)1 : (T)0);
    s += x * x;
  }
  out[id] = s;
}
