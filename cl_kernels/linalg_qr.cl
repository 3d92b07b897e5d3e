/*
 * linalg_spectral family (lib/ops/linalg_qr.c, lib/ops/linalg_eig.c): Householder QR panels,
 * the compact-WY pieces of the blocked QR, and the Householder reduction of a symmetric
 * matrix to tridiagonal form, for f32 and f64 (common.cl's -DT=...). No tunables compiled in.
 *
 * Matrices are row-major with a row stride ld and an element offset. Reflectors follow
 * LAPACK (dlarfg): H = I - tau v v^T, v[0] = 1 implicit, the rest stored below the diagonal
 * of the factored column; tau = 0 means H = I.
 *
 * Kernels (sh: local scratch of local_size T; one work-group kernels take any power-of-two
 * local size):
 *   qr_panel(a, aoff, lda, m, j0, jb, tau, toff, sh)   one work-group: unblocked Householder
 *     QR of columns j0 .. j0+jb-1, rows j0 .. m-1, in place; tau[j0 + c]. sh: 8 T per lane
 *     and jb T.
 *   qr_larft_l(same arguments, tl)   the same with T built in local memory tl (jb * jb T).
 *   qr_vcopy(a, aoff, lda, rows, jb, v, voff)   global (jb, rows): V (rows x jb, row stride
 *     jb) with the panel's reflectors, its unit diagonal and zeros above.
 *   qr_larft(g, goff, tau, toff, jb, t, tof)   one work-group: the upper triangular T of
 *     H_0 .. H_jb-1 = I - V T V^T (LAPACK dlarft, forward, columnwise) from G = V^T V.
 *   qr_triu(a, aoff, astride, m, n, r, roff, rstride, rows, nbatch)   global (n, rows *
 *     nbatch): R (rows x n) = the upper triangle of A's first rows (zero below, and past m).
 *   eye_rect(x, off, stride, rows, cols, nbatch)   global (cols, rows * nbatch): I.
 *   gemm_s(m, n, k, alpha, a, aoff, ars, acs, b, boff, brs, bcs, beta, c, coff, ldc)
 *     global (n, m): C = alpha A B + beta C over strided views (beta 0 ignores C); the GEMM
 *     when CLBlast is absent or disabled.
 *   sym_fill(a, aoff, n, upper)   global (n, n): copies the uplo triangle over the other.
 *   td_house(a, aoff, n, j, v, tau, d, e, sh)   one work-group: step j of the tridiagonal
 *     reduction: the reflector of A[j+1.., j] (read from row j, A symmetric), v (length
 *     n-j-1, v[0] = 1) into v and below A[j+1][j], d[j], e[j], tau[j]; j = n-2 also d[n-1];
 *     j >= n-1 only d[j].
 *   td_symv(a, aoff, n, j, v, tau, p, sh)   one work-group per row r of the trailing
 *     matrix A22 = A[j+1.., j+1..]: p[r] = tau (A22 v)[r].
 *   td_w(n, j, v, tau, p, sh)   one work-group: p = p - (tau / 2)(p . v) v (LAPACK sytd2's w).
 *   td_syr2(a, aoff, n, j, v, w)   global (len, len): A22 -= v w^T + w v^T.
 *   gb_house(x, xoff, len, v, voff, tau, toff, beta, boff, st, stoff, ststride, sh)   one
 *     work-group: the reflector of a contiguous vector, v explicit, v[1..] also to st.
 *   gb_rowdot(a, aoff, lda, len, v, voff, tau, toff, out, ooff, sh)   one work-group per
 *     row: out[r] = tau (a[r][0..len) . v).
 *   gb_rank1(a, aoff, lda, rows, cols, p, poff, q, qoff)   global (cols, rows): a -= p q^T.
 *   transpose_m(s, soff, rows, cols, d, doff)   global (cols, rows): d = s^T.
 */
#include "common.cl"

/* Sum over the group of each lane's x (ends with a barrier; every lane gets the sum). */
inline T group_sum(local T *sh, T x, uint lid, uint lsz)
{
  barrier(CLK_LOCAL_MEM_FENCE);
  sh[lid] = x;
  for (uint off = lsz >> 1; off > 0; off >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < off)
      sh[lid] += sh[lid + off];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  return sh[0];
}

inline T group_max(local T *sh, T x, uint lid, uint lsz)
{
  barrier(CLK_LOCAL_MEM_FENCE);
  sh[lid] = x;
  for (uint off = lsz >> 1; off > 0; off >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < off)
      sh[lid] = fmax(sh[lid], sh[lid + off]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  return sh[0];
}

/*
 * The reflector of x = (alpha, x[1..len-1]) at stride st (LAPACK dlarfg): x[1..] scaled to
 * v, returns tau and sets *beta. The norm is scaled by max|x| so that neither f32 squares
 * overflow nor tiny columns underflow to a zero norm.
 */
inline T house(global T *x, ulong st, uint len, T *beta, local T *sh, uint lid, uint lsz)
{
  const T alpha = x[0];
  T mx = (T)0;
  for (uint i = 1 + lid; i < len; i += lsz)
    mx = fmax(mx, fabs(x[(ulong)i * st]));
  mx = group_max(sh, mx, lid, lsz);
  T ss = (T)0;
  if (mx > (T)0)
    for (uint i = 1 + lid; i < len; i += lsz) {
      T y = x[(ulong)i * st] / mx;
      ss += y * y;
    }
  ss = group_sum(sh, ss, lid, lsz);
  if (mx == (T)0) {
    *beta = alpha;
    return (T)0;
  }
  const T xnorm = mx * sqrt(ss);
  const T b = -copysign(hypot(alpha, xnorm), alpha);
  const T scal = (T)1 / (alpha - b);
  for (uint i = 1 + lid; i < len; i += lsz)
    x[(ulong)i * st] *= scal;
  *beta = b;
  return (b - alpha) / b;
}

/* Columns whose reflector products qr_panel reduces together (its sh holds QR_CHUNK * lsz T). */
#define QR_CHUNK 8

kernel void qr_panel(global T *a, ulong aoff, ulong lda, uint m, uint j0, uint jb, global T *tau,
                     ulong toff, local T *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  global T *A = a + aoff;
  /* Each lane owns the rows lid + k lsz for the whole kernel and alone reads and writes them
   * in global memory; row j, which every lane needs, passes through local memory (prow). So
   * only local barriers: with global fences the kernel took about 29 us a column on the
   * H200. The arithmetic is house() and the loop it had here before, row by row the same. */
  local T *prow = sh + QR_CHUNK * lsz;
  for (uint j = j0; j < j0 + jb; j++) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (j % lsz == lid)
      for (uint c = j; c < j0 + jb; c++)
        prow[c - j0] = A[(ulong)j * lda + c];
    barrier(CLK_LOCAL_MEM_FENCE);
    const T alpha = prow[j - j0];
    const uint first = j + 1 + (lid + lsz - (j + 1) % lsz) % lsz;
    T mx = (T)0;
    for (uint i = first; i < m; i += lsz)
      mx = fmax(mx, fabs(A[(ulong)i * lda + j]));
    mx = group_max(sh, mx, lid, lsz);
    T ss = (T)0;
    if (mx > (T)0)
      for (uint i = first; i < m; i += lsz) {
        T y = A[(ulong)i * lda + j] / mx;
        ss += y * y;
      }
    ss = group_sum(sh, ss, lid, lsz);
    T beta = alpha, tj = (T)0;
    if (mx > (T)0) {
      const T xnorm = mx * sqrt(ss);
      const T b = -copysign(hypot(alpha, xnorm), alpha);
      const T scal = (T)1 / (alpha - b);
      for (uint i = first; i < m; i += lsz)
        A[(ulong)i * lda + j] *= scal;
      beta = b;
      tj = (b - alpha) / b;
    }
    /* The rest of the panel: a_c -= tau v (v . a_c), v[0] = 1 standing in for beta. The dot
     * products of QR_CHUNK columns share one pass over v and one reduction tree. */
    for (uint c0 = j + 1; c0 < j0 + jb; c0 += QR_CHUNK) {
      const uint nc = min((uint)QR_CHUNK, j0 + jb - c0);
      T s[QR_CHUNK];
#pragma unroll
      for (uint t = 0; t < QR_CHUNK; t++)
        s[t] = (T)0;
      for (uint i = first; i < m; i += lsz) {
        const T v = A[(ulong)i * lda + j];
#pragma unroll
        for (uint t = 0; t < QR_CHUNK; t++)
          if (t < nc)
            s[t] += v * A[(ulong)i * lda + c0 + t];
      }
      barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
      for (uint t = 0; t < QR_CHUNK; t++)
        sh[t * lsz + lid] = s[t];
      for (uint off = lsz >> 1; off > 0; off >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < off)
          for (uint t = 0; t < nc; t++)
            sh[t * lsz + lid] += sh[t * lsz + lid + off];
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      T w[QR_CHUNK];
#pragma unroll
      for (uint t = 0; t < QR_CHUNK; t++)
        w[t] = t < nc ? tj * (prow[c0 + t - j0] + sh[t * lsz]) : (T)0;
      for (uint i = first; i < m; i += lsz) {
        const T v = A[(ulong)i * lda + j];
#pragma unroll
        for (uint t = 0; t < QR_CHUNK; t++)
          if (t < nc)
            A[(ulong)i * lda + c0 + t] -= w[t] * v;
      }
      if (j % lsz == lid)
        for (uint t = 0; t < nc; t++)
          A[(ulong)j * lda + c0 + t] = prow[c0 + t - j0] - w[t];
    }
    if (j % lsz == lid)
      A[(ulong)j * lda + j] = beta;
    if (lid == 0)
      tau[toff + j] = tj;
  }
}

kernel void qr_vcopy(global const T *a, ulong aoff, ulong lda, uint rows, uint jb, global T *v,
                     ulong voff)
{
  const uint c = (uint)get_global_id(0), i = (uint)get_global_id(1);
  if (c >= jb || i >= rows)
    return;
  v[voff + (ulong)i * jb + c] = i > c ? a[aoff + (ulong)i * lda + c] : i == c ? (T)1 : (T)0;
}

/*
 * qr_larft with T in local memory (jb * jb T, jb <= 64 for f64): the steps exchange T's
 * columns through local barriers, where qr_larft's global fences cost tens of microseconds per
 * call on the H200.
 */
kernel void qr_larft_l(global const T *g, ulong goff, global const T *tau, ulong toff, uint jb,
                       global T *t, ulong tof, local T *tl)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  global const T *G = g + goff;
  for (uint i = 0; i < jb; i++) {
    const T ti = tau[toff + i];
    for (uint l = lid; l < jb; l += lsz) {
      if (l < i) {
        T s = (T)0;
        for (uint p = l; p < i; p++)
          s += tl[l * jb + p] * G[p * jb + i];
        tl[l * jb + i] = -ti * s;
      } else {
        tl[l * jb + i] = l == i ? ti : (T)0;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (uint e = lid; e < jb * jb; e += lsz)
    t[tof + e] = tl[e];
}

kernel void qr_larft(global const T *g, ulong goff, global const T *tau, ulong toff, uint jb,
                     global T *t, ulong tof)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  global T *Tm = t + tof;
  global const T *G = g + goff;
  for (uint i = 0; i < jb; i++) {
    const T ti = tau[toff + i];
    for (uint l = lid; l < jb; l += lsz) {
      if (l < i) {
        T s = (T)0;
        for (uint p = l; p < i; p++)
          s += Tm[l * jb + p] * G[p * jb + i];
        Tm[l * jb + i] = -ti * s;
      } else {
        Tm[l * jb + i] = l == i ? ti : (T)0;
      }
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}

kernel void qr_triu(global const T *a, ulong aoff, ulong astride, uint m, uint n, global T *r,
                    ulong roff, ulong rstride, uint rows, ulong nbatch)
{
  const uint j = (uint)get_global_id(0);
  const ulong g = get_global_id(1), b = g / rows;
  const uint i = (uint)(g % rows);
  if (j >= n || b >= nbatch)
    return;
  r[roff + b * rstride + (ulong)i * n + j] =
      (j >= i && i < m) ? a[aoff + b * astride + (ulong)i * n + j] : (T)0;
}

kernel void eye_rect(global T *x, ulong off, ulong stride, uint rows, uint cols, ulong nbatch)
{
  const uint j = (uint)get_global_id(0);
  const ulong g = get_global_id(1), b = g / rows;
  const uint i = (uint)(g % rows);
  if (j >= cols || b >= nbatch)
    return;
  x[off + b * stride + (ulong)i * cols + j] = i == j ? (T)1 : (T)0;
}

kernel void gemm_s(uint m, uint n, uint k, T alpha, global const T *a, ulong aoff, ulong ars,
                   ulong acs, global const T *b, ulong boff, ulong brs, ulong bcs, T beta,
                   global T *c, ulong coff, ulong ldc)
{
  const uint j = (uint)get_global_id(0), i = (uint)get_global_id(1);
  if (i >= m || j >= n)
    return;
  T s = (T)0;
  for (uint p = 0; p < k; p++)
    s += a[aoff + (ulong)i * ars + (ulong)p * acs] * b[boff + (ulong)p * brs + (ulong)j * bcs];
  global T *cp = c + coff + (ulong)i * ldc + j;
  *cp = beta == (T)0 ? alpha * s : alpha * s + beta * *cp;
}

kernel void sym_fill(global T *a, ulong aoff, uint n, uint upper)
{
  const uint j = (uint)get_global_id(0), i = (uint)get_global_id(1);
  if (i >= n || j >= n)
    return;
  /* Lane (i, j) of the unread triangle copies its mirror from the read one. */
  if (upper ? i > j : j > i)
    a[aoff + (ulong)i * n + j] = a[aoff + (ulong)j * n + i];
}

kernel void td_house(global T *a, ulong aoff, uint n, uint j, global T *v, ulong voff,
                     global T *tau, ulong toff, global T *d, ulong doff, global T *e, ulong eoff,
                     local T *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  global T *A = a + aoff;
  if (lid == 0)
    d[doff + j] = A[(ulong)j * n + j];
  if (j + 1 >= n)
    return;
  /* Row j right of the diagonal is column j below it (A symmetric); the row is contiguous. */
  global T *x = A + (ulong)j * n + j + 1;
  const uint len = n - j - 1;
  T beta;
  const T t = house(x, 1, len, &beta, sh, lid, lsz);
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (uint i = lid; i < len; i += lsz) {
    const T vi = i == 0 ? (T)1 : x[i];
    v[voff + i] = vi;
    if (i > 0)
      A[(ulong)(j + 1 + i) * n + j] = vi; /* kept for the back-transformation */
  }
  if (lid == 0) {
    tau[toff + j] = t;
    e[eoff + j] = beta;
    if (j + 2 == n)
      d[doff + j + 1] = A[(ulong)(j + 1) * n + j + 1];
  }
}

kernel void td_symv(global const T *a, ulong aoff, uint n, uint j, global const T *v, ulong voff,
                    global const T *tau, ulong toff, global T *p, ulong poff, local T *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0), r = (uint)get_group_id(0);
  const uint len = n - j - 1;
  global const T *row = a + aoff + (ulong)(j + 1 + r) * n + j + 1;
  T s = (T)0;
  for (uint c = lid; c < len; c += lsz)
    s += row[c] * v[voff + c];
  s = group_sum(sh, s, lid, lsz);
  if (lid == 0)
    p[poff + r] = tau[toff + j] * s;
}

kernel void td_w(uint n, uint j, global const T *v, ulong voff, global const T *tau, ulong toff,
                 global T *p, ulong poff, local T *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const uint len = n - j - 1;
  T s = (T)0;
  for (uint i = lid; i < len; i += lsz)
    s += p[poff + i] * v[voff + i];
  s = group_sum(sh, s, lid, lsz);
  const T k = (T)-0.5 * tau[toff + j] * s;
  for (uint i = lid; i < len; i += lsz)
    p[poff + i] += k * v[voff + i];
}

kernel void td_syr2(global T *a, ulong aoff, uint n, uint j, global const T *v, ulong voff,
                    global const T *w, ulong woff)
{
  const uint c = (uint)get_global_id(0), r = (uint)get_global_id(1), len = n - j - 1;
  if (r >= len || c >= len)
    return;
  a[aoff + (ulong)(j + 1 + r) * n + j + 1 + c] -=
      v[voff + r] * w[woff + c] + w[woff + r] * v[voff + c];
}

/*
 * Householder bidiagonalisation (lib/ops/linalg_eig.c, svd) keeps A (M x N, M >= N) and its
 * transpose At, so that every reflector is read from a contiguous row and every product
 * A^T v or A u is a row dot product.
 */

/* The reflector of the contiguous x[0 .. len-1]: v (explicit, v[0] = 1), tau, beta; v[1..]
 * also to st[i * ststride] (the reflector's home for the back-transformation). */
kernel void gb_house(global T *x, ulong xoff, uint len, global T *v, ulong voff, global T *tau,
                     ulong toff, global T *beta, ulong boff, global T *st, ulong stoff,
                     ulong ststride, local T *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  global T *xp = x + xoff;
  T b;
  const T t = house(xp, 1, len, &b, sh, lid, lsz);
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (uint i = lid; i < len; i += lsz) {
    const T vi = i == 0 ? (T)1 : xp[i];
    v[voff + i] = vi;
    if (i > 0)
      st[stoff + (ulong)i * ststride] = vi;
  }
  if (lid == 0) {
    tau[toff] = t;
    beta[boff] = b;
  }
}

/* One work-group per row r: out[r] = tau * (row r of a, len entries) . v. */
kernel void gb_rowdot(global const T *a, ulong aoff, ulong lda, uint len, global const T *v,
                      ulong voff, global const T *tau, ulong toff, global T *out, ulong ooff,
                      local T *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0), r = (uint)get_group_id(0);
  global const T *row = a + aoff + (ulong)r * lda;
  T s = (T)0;
  for (uint c = lid; c < len; c += lsz)
    s += row[c] * v[voff + c];
  s = group_sum(sh, s, lid, lsz);
  if (lid == 0)
    out[ooff + r] = tau[toff] * s;
}

/* global (cols, rows): a[r][c] -= p[r] q[c]. */
kernel void gb_rank1(global T *a, ulong aoff, ulong lda, uint rows, uint cols, global const T *p,
                     ulong poff, global const T *q, ulong qoff)
{
  const uint c = (uint)get_global_id(0), r = (uint)get_global_id(1);
  if (r >= rows || c >= cols)
    return;
  a[aoff + (ulong)r * lda + c] -= p[poff + r] * q[qoff + c];
}

/* global (cols, rows): d (cols x rows) = s (rows x cols)^T, both contiguous. */
kernel void transpose_m(global const T *s, ulong soff, uint rows, uint cols, global T *d,
                        ulong doff)
{
  const uint c = (uint)get_global_id(0), r = (uint)get_global_id(1);
  if (r >= rows || c >= cols)
    return;
  d[doff + (ulong)c * rows + r] = s[soff + (ulong)r * cols + c];
}
