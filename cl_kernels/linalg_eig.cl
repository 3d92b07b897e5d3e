/*
 * linalg_spectral family, eigh part (lib/ops/linalg_eig.c): the blocked Householder reduction
 * of a full symmetric matrix to tridiagonal form (LAPACK dsytrd with dlatrd, lower), f32 and
 * f64 (common.cl's -DT=...). No tunables compiled in: the block size nb is an argument.
 *
 * A is n x n, row-major, full (both triangles), at element offset aoff. A panel of columns
 * j0 .. j0+jb-1 keeps its reflectors V and the dlatrd vectors W in vw (n rows, row stride
 * 3 nb, rows absolute): columns [0, nb) V, [nb, 2 nb) W, [2 nb, 3 nb) V again, so that one
 * GEMM of [V W] with [W V]^T makes the trailing update A -= V W^T + W V^T. Column c of the
 * matrix is read as row c (A symmetric; the panel's rows are updated, not its columns), and
 * its reflector goes below the subdiagonal of column c (the QR layout the
 * back-transformation applies).
 *
 * Per column c (index i in the panel, len = n - c - 1):
 *   tr_col(a, aoff, n, c, i, vw, vwoff, nb, wraw, dotp, ndot, tau, toff, upd, sh)
 *     global (n - c): finishes w of column c-1 (w += alpha v, alpha = -tau/2 (w . v) from
 *     the partial dot products dotp[0 .. ndot)) into W's column i-1 for rows c .. n-1, and
 *     when upd, updates row c: A[c][c..] -= V W[c]^T + W V[c]^T over the panel's first i
 *     columns. sh: 2 nb T.
 *   tr_symv(a, aoff, n, c, i, vw, vwoff, nb, q, part, nchunk, sh)   len + nchunk groups:
 *     group g < len: q[g] = A[c+1+g][c+2 ..] . x[1 ..], x = A[c][c+1 ..] (the column before
 *     its reflector is formed: v = (1, scal x[1 ..]) once the norm is known); group len + k:
 *     over its chunk of x[1 ..], the largest |x|, the sum of squares scaled by it, and
 *     V^T x, W^T x over the first i columns, into part[k * (2 + 2 nb) ..]. sh: lsz T.
 *   tr_fin(a, aoff, n, c, i, vw, vwoff, nb, q, part, nchunk, tau, toff, d, doff, e, eoff,
 *     wraw, dotp, sh)   global (len): every group combines the partials into the reflector
 *     (dlarfg: beta, tau, scal) and y = V^T v, x = W^T v, then per row r = c+1+t: v_t into
 *     V's column i (and below A[c+1][c], the reflector's home), w_t = tau (A22 v - V x -
 *     W y)_t into wraw, the group's part of w . v into dotp; d[c], e[c], tau[c].
 *     sh: 2 nb + lsz T.
 */
#include "common.cl"
#include "linalg_house.clh"

kernel void tr_col(global T *a, ulong aoff, uint n, uint c, uint i, global T *vw, ulong vwoff,
                   uint nb, global const T *wraw, ulong wroff, global const T *dotp,
                   ulong dpoff, uint ndot, global const T *tau, ulong toff, uint upd, local T *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const uint r = c + (uint)get_global_id(0);
  const ulong ld3 = 3 * (ulong)nb;
  global T *V = vw + vwoff;
  T s = (T)0;
  for (uint k = 0; k < ndot; k++)
    s += dotp[dpoff + k];
  const T alpha = (T)-0.5 * tau[toff + c - 1] * s;
  const uint ip = i - 1;
  for (uint l = lid; l < i; l += lsz) {
    const T vc = V[(ulong)c * ld3 + l];
    sh[l] = vc;
    sh[nb + l] = l == ip ? wraw[wroff + c] + alpha * vc : V[(ulong)c * ld3 + nb + l];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (r >= n)
    return;
  global T *Vr = V + (ulong)r * ld3;
  const T wf = wraw[wroff + r] + alpha * Vr[ip];
  if (upd) {
    T acc = (T)0;
    for (uint l = 0; l < ip; l++)
      acc += Vr[l] * sh[nb + l] + Vr[nb + l] * sh[l];
    acc += Vr[ip] * sh[nb + ip] + wf * sh[ip];
    a[aoff + (ulong)c * n + r] -= acc;
  }
  Vr[nb + ip] = wf;
}

kernel void tr_symv(global const T *a, ulong aoff, uint n, uint c, uint i, global const T *vw,
                    ulong vwoff, uint nb, global T *q, ulong qoff, global T *part, ulong poff,
                    uint nchunk, local T *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0), g = (uint)get_group_id(0);
  const uint len = n - c - 1;
  global const T *x = a + aoff + (ulong)c * n + c + 1;
  if (g < len) {
    global const T *row = a + aoff + (ulong)(c + 1 + g) * n + c + 1;
    T s = (T)0;
    for (uint t = 1 + lid; t < len; t += lsz)
      s += row[t] * x[t];
    s = group_sum(sh, s, lid, lsz);
    if (lid == 0)
      q[qoff + g] = s;
    return;
  }
  const uint k = g - len, cs = (len - 1 + nchunk - 1) / nchunk;
  const uint t0 = min(len, 1 + k * cs), t1 = min(len, t0 + cs);
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
    T s = (T)0;
    for (uint t = t0; t < t1; t++)
      s += V[(ulong)(c + 1 + t) * ld3 + col] * x[t];
    P[2 + col] = s;
  }
}

kernel void tr_fin(global T *a, ulong aoff, uint n, uint c, uint i, global T *vw, ulong vwoff,
                   uint nb, global const T *q, ulong qoff, global const T *part, ulong poff,
                   uint nchunk, global T *tau, ulong toff, global T *d, ulong doff, global T *e,
                   ulong eoff, global T *wraw, ulong wroff, global T *dotp, ulong dpoff,
                   local T *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const uint t = (uint)get_global_id(0), len = n - c - 1;
  const ulong ld3 = 3 * (ulong)nb, stride = 2 + 2 * (ulong)nb;
  global T *A = a + aoff;
  global T *V = vw + vwoff;
  global const T *P = part + poff;
  global const T *x = A + (ulong)c * n + c + 1;
  /* dlarfg from the chunks' scaled sums of squares (LAPACK dlassq's combination) */
  T mxa = (T)0;
  for (uint k = 0; k < nchunk; k++)
    mxa = fmax(mxa, P[k * stride]);
  T ss = (T)0;
  if (mxa > (T)0)
    for (uint k = 0; k < nchunk; k++) {
      const T f = P[k * stride] / mxa;
      ss += P[k * stride + 1] * f * f;
    }
  const T alpha0 = x[0];
  T tj = (T)0, beta = alpha0, scal = (T)1;
  if (mxa > (T)0) {
    const T xnorm = mxa * sqrt(ss);
    beta = -copysign(hypot(alpha0, xnorm), alpha0);
    scal = (T)1 / (alpha0 - beta);
    tj = (beta - alpha0) / beta;
  }
  /* y = V^T v into sh[0 .. i), x = W^T v into sh[nb .. nb + i): row c+1 holds v's 1 */
  for (uint el = lid; el < 2 * i; el += lsz) {
    const uint col = el < i ? el : nb + el - i;
    T s = (T)0;
    for (uint k = 0; k < nchunk; k++)
      s += P[k * stride + 2 + col];
    sh[col] = V[(ulong)(c + 1) * ld3 + col] + scal * s;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  T prod = (T)0;
  if (t < len) {
    const uint r = c + 1 + t;
    global T *Vr = V + (ulong)r * ld3;
    const T vt = t == 0 ? (T)1 : scal * x[t];
    T corr = (T)0;
    for (uint l = 0; l < i; l++)
      corr += Vr[l] * sh[nb + l] + Vr[nb + l] * sh[l];
    const T w = tj * (A[(ulong)r * n + c + 1] + scal * q[qoff + t] - corr);
    wraw[wroff + r] = w;
    Vr[i] = vt;
    Vr[2 * nb + i] = vt;
    if (t > 0)
      A[(ulong)r * n + c] = vt;
    prod = w * vt;
  }
  prod = group_sum(sh + 2 * nb, prod, lid, lsz);
  if (lid == 0)
    dotp[dpoff + get_group_id(0)] = prod;
  if (t == 0) {
    tau[toff + c] = tj;
    e[eoff + c] = beta;
    d[doff + c] = A[(ulong)c * n + c];
  }
}
