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
 * Sums over the group of three values per lane (every lane gets them); sh: 3 lsz T, of
 * which only sh[0 .. 3) are read after the last barrier (tr_fin reuses the rest at once).
 * lsz >= 4.
 */
inline void group_sum3(local T *sh, T *a, T *b, T *c, uint lid, uint lsz)
{
  barrier(CLK_LOCAL_MEM_FENCE);
  sh[lid] = *a;
  sh[lsz + lid] = *b;
  sh[2 * lsz + lid] = *c;
  for (uint off = lsz >> 1; off > 0; off >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < off) {
      sh[lid] += sh[lid + off];
      sh[lsz + lid] += sh[lsz + lid + off];
      sh[2 * lsz + lid] += sh[2 * lsz + lid + off];
    }
  }
  if (lid == 0) {
    sh[1] = sh[lsz];
    sh[2] = sh[2 * lsz];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  *a = sh[0];
  *b = sh[1];
  *c = sh[2];
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
      T s = (T)0;
      for (uint k = 0; k < nchunk; k++)
        s += P[k * stride + 2 + col];
      sh[col] = base[col] + scal * s;
    }
  } else {
    const uint el = lid % w, sl = lid / w;
    barrier(CLK_LOCAL_MEM_FENCE); /* tmp may still hold a caller's group sum being read */
    if (sl < ns) {
      const uint col = el < n1 ? el : off2 + el - n1;
      T s = (T)0;
      for (uint k = sl; k < nchunk; k += ns)
        s += P[k * stride + 2 + col];
      tmp[sl * w + el] = s;
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

/* The side of tr_symv's tiles and the lanes of its groups. */
#define SY_TS 32

/*
 * Tile groups of tr_symv for nblk block rows, kt tiles a group, in chunk-major order: chunk ch
 * (tiles b + ch kt ..) exists for the strips b < nblk - ch kt. A loop of nblk / kt steps
 * without divisions (16 by the built-in kt), where one step a strip cost every group of a
 * 4096 matrix 128 integer divisions.
 */
inline uint sy_groups(uint nblk, uint kt)
{
  uint gsum = 0;
  for (uint ch = 0; ch * kt < nblk; ch++)
    gsum += nblk - ch * kt;
  return gsum;
}

/* Rows of the slot array wp: block rows of the longest column (len = n - 1). */
inline uint sy_slots(uint n) { return (n - 1 + SY_TS - 1) / SY_TS; }

kernel void tr_symv(global const T *a, ulong aoff, uint n, uint c, uint i, global const T *vw,
                    ulong vwoff, uint nb, global T *wp, ulong wpoff, global T *aa, ulong aaoff,
                    global T *part, ulong poff, uint nchunk, uint kt, local T *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const uint len = n - c - 1, nblk = (len + SY_TS - 1) / SY_TS;
  global const T *A = a + aoff;
  global const T *x = A + (ulong)c * n + c + 1;
  /* group -> (chunk ch, strip b = rem), sy_groups' order */
  uint ch = 0, rem = (uint)get_group_id(0);
  for (; ch * kt < nblk && rem >= nblk - ch * kt; ch++)
    rem -= nblk - ch * kt;
  if (ch * kt < nblk) {
    const uint b = rem, r0 = b * SY_TS, bj0 = b + ch * kt, bj1 = min(nblk, bj0 + kt);
    local T *xr = sh, *red = sh + SY_TS;
    {
      const uint rr = r0 + lid;
      xr[lid] = rr > 0 && rr < len ? x[rr] : (T)0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    T acc[SY_TS];
#pragma unroll
    for (uint r = 0; r < SY_TS; r++)
      acc[r] = (T)0;
    T qacc = (T)0, dcol = (T)0;
    global T *W = wp + wpoff;
    for (uint bj = bj0; bj < bj1; bj++) {
      const uint col = bj * SY_TS + lid;
      const int cv = col < len;
      const T xc = cv && col > 0 ? x[col] : (T)0;
      global const T *Bc = A + (ulong)(c + 1 + r0) * n + c + 1 + (cv ? col : 0);
      T colp = (T)0;
      if (bj == b) {
        /* the diagonal tile: its upper part only (the lower one is not kept current), the
         * diagonal in the row sums alone; rows past len only here (the last strip) */
#pragma unroll
        for (uint r = 0; r < SY_TS; r++) {
          const T v = lid >= r && r0 + r < len && cv ? Bc[(ulong)r * n] : (T)0;
          acc[r] += v * xc;
          colp += (lid > r ? v : (T)0) * xr[r];
        }
        dcol = colp;
      } else {
#pragma unroll
        for (uint r = 0; r < SY_TS; r++) {
          const T v = Bc[(ulong)r * n];
          acc[r] += (cv ? v : (T)0) * xc;
          colp += (cv ? v : (T)0) * xr[r];
        }
        if (cv)
          W[(ulong)b * n + col] = colp;
      }
      qacc += colp * xc;
    }
    /* row r's sum is spread over the lanes (one column each): transposed through local memory */
#pragma unroll
    for (uint r = 0; r < SY_TS; r++)
      red[r * (SY_TS + 1) + lid] = acc[r];
    barrier(CLK_LOCAL_MEM_FENCE);
    T rs = (T)0;
    for (uint l = 0; l < SY_TS; l++)
      rs += red[lid * (SY_TS + 1) + l];
    if (r0 + lid < len)
      W[(ulong)bj0 * n + r0 + lid] = rs + dcol;
    qacc += rs * xr[lid];
    qacc = group_sum(red, qacc, lid, lsz);
    if (lid == 0)
      W[(ulong)sy_slots(n) * n + get_group_id(0)] = qacc;
  } else {
    const uint k = rem, cs = (len - 1 + nchunk - 1) / nchunk;
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

/*
 * Row t's q (A22[t][1 ..] . x[1 ..]) from tr_symv's slots: those of the strips above its block
 * b (their tiles' column sums) and of its own strip's chunks (row sums); this lane's share,
 * every lpr-th slot from sub.
 */
inline T sy_row(global const T *W, uint n, uint t, uint nblk, uint kt, uint sub, uint lpr)
{
  const uint b = t / SY_TS, m = (nblk - b + kt - 1) / kt;
  T s = (T)0;
  for (uint q = sub; q < b + m; q += lpr) {
    const uint k = q < b ? q : b + (q - b) * kt;
    s += W[(ulong)k * n + t];
  }
  return s;
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
  global const T *W = wp + wpoff;
  global T *V = vw + vwoff;
  global const T *P = part + poff;
  global const T *x = A + (ulong)c * n + c + 1;
  /* dlarfg from the chunks' partials; then y = V^T v into sh[0 .. i), x = W^T v into
   * sh[nb .. nb + i) (row c+1 holds v's 1). tmp: the 3 lsz T after sh's 2 nb. */
  local T *tmp = sh + 2 * nb;
  T beta, scal;
  const T tj = house_parts(P, stride, nchunk, x[0], &beta, &scal, tmp, lid, lsz);
  parts_cols(P, stride, nchunk, i, nb, i, V + (ulong)(c + 1) * ld3, scal, sh, tmp, lid, lsz);
  /* v^T A22 v = p_0 + scal sum_{t>0} x_t p_t, p_t = aa_t + scal q_t, where sum_{t>0} x_t q_t
   * is the sum of tr_symv's groups' quadratic forms; with it, in one three-way tree,
   * xy = (V^T v) . (W^T v) and row c+1's correction corr1 (a term per lane
   * l < i, where one lane's chain of i global loads was) */
  global const T *V1 = V + (ulong)(c + 1) * ld3;
  T s1 = (T)0, xy = (T)0, corr1 = (T)0;
  for (uint u = 1 + lid; u < len; u += lsz)
    s1 += x[u] * aa[aaoff + u];
  T quad = (T)0;
  global const T *Q = W + (ulong)sy_slots(n) * n;
  for (uint u = lid, ng = sy_groups(nblk, kt); u < ng; u += lsz)
    quad += Q[u];
  s1 += scal * quad;
  for (uint l = lid; l < i; l += lsz) {
    xy += sh[l] * sh[nb + l];
    corr1 += V1[l] * sh[nb + l] + V1[nb + l] * sh[l];
  }
  group_sum3(tmp, &s1, &xy, &corr1, lid, lsz);
  const T p0 = aa[aaoff] + scal * sy_row(W, n, 0, nblk, kt, 0, 1);
  const T wv = tj * (p0 + scal * s1 - (T)2 * xy);
  const T alpha = (T)-0.5 * tj * wv;
  /* w of row c+1 (v = 1 there), which row c+1's update needs in every group */
  const T wf1 = tj * (p0 - corr1) + alpha;
  const uint r = c + 1 + min(t, len - 1);
  global T *Vr = V + (ulong)r * ld3;
  T corr = (T)0, acc = (T)0, qt = t < len ? sy_row(W, n, t, nblk, kt, sub, lpr) : (T)0;
  for (uint l = sub; l < i && t < len; l += lpr) {
    const T vl = Vr[l], wl = Vr[nb + l];
    corr += vl * sh[nb + l] + wl * sh[l];
    acc += vl * V1[nb + l] + wl * V1[l];
  }
  /* the row's lpr partial sums, through local memory after the 2 nb + lsz used above */
  local T *red = sh + 2 * nb + lsz;
  red[lid] = corr;
  red[lsz + lid] = acc;
  red[2 * lsz + lid] = qt;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (sub == 0 && t < len) {
    for (uint k = 1; k < lpr; k++) {
      corr += red[lid + k];
      acc += red[lsz + lid + k];
      qt += red[2 * lsz + lid + k];
    }
    const T vt = t == 0 ? (T)1 : scal * x[t];
    const T wf = tj * (aa[aaoff + t] + scal * qt - corr) + alpha * vt;
    if (upd) /* column i: V[c+1][i] = 1 */
      A[(ulong)(c + 1) * n + r] -= acc + vt * wf1 + wf;
    Vr[i] = vt;
    Vr[nb + i] = wf;
    Vr[2 * nb + i] = vt;
    if (t > 0)
      A[(ulong)r * n + c] = vt;
  }
  if (t == 0 && sub == 0) {
    tau[toff + c] = tj;
    e[eoff + c] = beta;
    d[doff + c] = A[(ulong)c * n + c];
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
