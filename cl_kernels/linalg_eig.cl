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
 *     first i + 1 columns (U[c][i] = 1). sh: 2 nb T.
 *   bd_xsum   R + nchunk groups: q[t] = A[c+1+t][c+2 ..] . A[c][c+2 ..]; the aux groups the
 *     norm partials of A[c][c+2 ..] and Y^T, Vr of it (i + 1 and i columns). sh: lsz T.
 *   bd_xfin   global (max(R, C)): the right reflector (dlarfg of A[c][c+1 ..]: e[c], taup[c];
 *     v into Vr^T's column i and below p's diagonal), x_r = taup (A v - U Y^T v - X Vr v)
 *     into X's column i, and when upd (column c+1 in the panel) column c+1's update
 *     A[r][c+1] -= U[r] Y[c+1]^T + X[r] Vr^T[c+1]^T over the first i + 1 columns (Vr^T[c+1][i]
 *     = 1). sh: 2 nb T.
 */

/* dlarfg's beta, tau and 1 / (alpha - beta) from nchunk (max |x|, sum (x / max)^2) pairs. */
inline T house_parts(global const T *P, ulong stride, uint nchunk, T alpha0, T *beta, T *scal)
{
  T mxa = (T)0;
  for (uint k = 0; k < nchunk; k++)
    mxa = fmax(mxa, P[k * stride]);
  *beta = alpha0;
  *scal = (T)1;
  if (mxa == (T)0)
    return (T)0;
  T ss = (T)0;
  for (uint k = 0; k < nchunk; k++) {
    const T f = P[k * stride] / mxa;
    ss += P[k * stride + 1] * f * f;
  }
  const T xnorm = mxa * sqrt(ss);
  const T b = -copysign(hypot(alpha0, xnorm), alpha0);
  *beta = b;
  *scal = (T)1 / (alpha0 - b);
  return (b - alpha0) / b;
}

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
    T s = (T)0;
    for (uint t = t0; t < t1; t++)
      s += B[t * ldb + col] * x[t * xs];
    P[2 + col] = s;
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
    T s = (T)0;
    for (uint t = t0; t < t1; t++)
      s += B[t * ldb + col] * x[t * xs];
    P[2 + col] = s;
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
    if (s < N) {
      T acc = (T)0;
      for (uint r = r0; r < r1; r++)
        acc += A[(ulong)r * N + s] * A[(ulong)r * N + c];
      part[poff + (ulong)k * N + s] = acc;
    }
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
                    local T *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0), t = (uint)get_global_id(0);
  const uint R = M - c - 1, C = N - c - 1;
  const ulong ld2 = 2 * (ulong)nb, stride = 2 + 2 * (ulong)nb;
  global T *A = a + aoff;
  global T *Lf = lf + lfoff;
  global T *Rt = rt + rtoff;
  global const T *aux = part + poff + (ulong)nchunk * N;
  T beta, scal;
  const T tq = house_parts(aux, stride, nchunk, A[(ulong)c * N + c], &beta, &scal);
  /* U^T u into sh[0 .. i), X^T u into sh[nb .. nb + i) (u[c] = 1) */
  for (uint el = lid; el < 2 * i; el += lsz) {
    const uint col = el < i ? el : nb + el - i;
    T s = (T)0;
    for (uint k = 0; k < nchunk; k++)
      s += aux[k * stride + 2 + col];
    sh[col] = Lf[(ulong)c * ld2 + col] + scal * s;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (t < C) {
    const uint s_ = c + 1 + t;
    T ps = (T)0;
    for (uint k = 0; k < nchunk; k++)
      ps += part[poff + (ulong)k * N + s_];
    global T *Rs = Rt + (ulong)s_ * ld2;
    global const T *Lc = Lf + (ulong)c * ld2;
    T corr = (T)0, upd = (T)0;
    for (uint l = 0; l < i; l++) {
      corr += Rs[l] * sh[l] + Rs[nb + l] * sh[nb + l];
      upd += Rs[l] * Lc[l] + Rs[nb + l] * Lc[nb + l];
    }
    global T *acs = A + (ulong)c * N + s_;
    const T y = tq * (*acs + scal * ps - corr);
    Rs[i] = y;
    *acs -= upd + y;
  }
  if (t < R) {
    const uint r = c + 1 + t;
    const T u = scal * A[(ulong)r * N + c];
    A[(ulong)r * N + c] = u;
    Lf[(ulong)r * ld2 + i] = u;
  }
  if (t == 0) {
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
                    global T *taup, ulong tpoff, global T *p, ulong pofs, uint upd, local T *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0), t = (uint)get_global_id(0);
  const uint R = M - c - 1, C = N - c - 1;
  const ulong ld2 = 2 * (ulong)nb, stride = 2 + 2 * (ulong)nb;
  global T *A = a + aoff;
  global T *Lf = lf + lfoff;
  global T *Rt = rt + rtoff;
  global const T *aux = part + poff;
  T beta, scal;
  const T tp = house_parts(aux, stride, nchunk, A[(ulong)c * N + c + 1], &beta, &scal);
  /* Y^T v into sh[0 .. i], Vr v into sh[nb .. nb + i) (v[c+1] = 1) */
  for (uint el = lid; el < 2 * i + 1; el += lsz) {
    const uint col = el <= i ? el : nb + el - i - 1;
    T s = (T)0;
    for (uint k = 0; k < nchunk; k++)
      s += aux[k * stride + 2 + col];
    sh[col] = Rt[(ulong)(c + 1) * ld2 + col] + scal * s;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (t < R) {
    const uint r = c + 1 + t;
    global T *Lr = Lf + (ulong)r * ld2;
    T corr = Lr[i] * sh[i];
    for (uint l = 0; l < i; l++)
      corr += Lr[l] * sh[l] + Lr[nb + l] * sh[nb + l];
    global T *arc = A + (ulong)r * N + c + 1;
    const T xr = tp * (*arc + scal * q[qoff + t] - corr);
    Lr[nb + i] = xr;
    if (upd) {
      global const T *Rc = Rt + (ulong)(c + 1) * ld2;
      T u = Lr[i] * Rc[i] + xr;
      for (uint l = 0; l < i; l++)
        u += Lr[l] * Rc[l] + Lr[nb + l] * Rc[nb + l];
      *arc -= u;
    }
  }
  if (t < C) {
    const uint s_ = c + 1 + t;
    const T v = t == 0 ? (T)1 : scal * A[(ulong)c * N + s_];
    Rt[(ulong)s_ * ld2 + nb + i] = v;
    if (t > 0)
      p[pofs + (ulong)s_ * N + c] = v;
  }
  if (t == 0) {
    e[eoff + c] = beta;
    taup[tpoff + c] = tp;
  }
}
