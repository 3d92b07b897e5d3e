/*
 * linalg_spectral family (lib/ops/linalg_qr.c, lib/ops/linalg_eig.c): Householder QR panels,
 * the compact-WY pieces of the blocked QR, sym_fill and transpose_m for eigh and svd (their
 * reductions are in linalg_eig.cl), for f32 and f64 (common.cl's -DT=...), and c64/c128 (QR:
 * the arithmetic through linalg_arith.clh's LA_* macros). No tunables compiled in.
 *
 * Matrices are row-major with a row stride ld and an element offset. Reflectors follow
 * LAPACK (dlarfg, zlarfg): H = I - tau v v^H, v[0] = 1 implicit, the rest stored below the
 * diagonal of the factored column; tau = 0 means H = I; beta (the new diagonal) is real, and a
 * complex tau has 1 <= re(tau) <= 2, |tau - 1| <= 1. The panel applies H^H (conj(tau)) to the
 * columns right of each reflector, as zgeqr2.
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
 *   gemm_s(m, n, k, alpha, a, aoff, ars, acs, b, boff, brs, bcs, beta, c, coff, ldc, cj)
 *     global (n, m): C = alpha A B + beta C over strided views (beta 0 ignores C); the GEMM
 *     when CLBlast is absent or disabled; cj & 4 conjugates A's elements, cj & 8 B's.
 *   sym_fill(a, aoff, n, upper)   global (n, n): copies the uplo triangle over the other.
 *   transpose_m(s, soff, rows, cols, d, doff)   global (cols, rows): d = s^T.
 */
#include "common.cl"

#include "linalg_arith.clh"
#include "linalg_house.clh"

/* Whether column j needs a reflector: x below the diagonal is not zero, or (zlarfg) a complex
 * alpha, whose beta must become real. */
#if KILN_IS_COMPLEX
#define QR_REFLECT(mx, alpha) ((mx) > (RT)0 || (alpha).y != (RT)0)
#else
#define QR_REFLECT(mx, alpha) ((mx) > (T)0)
#endif

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
    RT mx = (RT)0;
    for (uint i = first; i < m; i += lsz)
      mx = fmax(mx, LA_ABS(A[(ulong)i * lda + j]));
    mx = group_rmax((local RT *)sh, mx, lid, lsz);
    RT ss = (RT)0;
    if (mx > (RT)0)
      for (uint i = first; i < m; i += lsz) {
        T y = A[(ulong)i * lda + j] / mx;
        ss += LA_ABS2(y);
      }
    ss = group_rsum((local RT *)sh, ss, lid, lsz);
    T beta = alpha, tj = (T)0;
    if (QR_REFLECT(mx, alpha)) {
      const RT xnorm = mx * sqrt(ss);
      const RT b = -copysign(hypot(LA_ABS(alpha), xnorm), LA_RE(alpha));
      const T scal = LA_DIV(KILN_ONE, alpha - LA_REAL(b));
      for (uint i = first; i < m; i += lsz)
        A[(ulong)i * lda + j] = LA_MUL(A[(ulong)i * lda + j], scal);
      beta = LA_REAL(b);
      tj = LA_DIV(LA_REAL(b) - alpha, LA_REAL(b));
    }
    /* The rest of the panel: a_c -= conj(tau) v (v^H a_c), v[0] = 1 standing in for beta. The
     * dot products of QR_CHUNK columns share one pass over v and one reduction tree. */
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
            s[t] += LA_MUL(LA_CONJ(v), A[(ulong)i * lda + c0 + t]);
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
        w[t] = t < nc ? LA_MUL(LA_CONJ(tj), prow[c0 + t - j0] + sh[t * lsz]) : (T)0;
      for (uint i = first; i < m; i += lsz) {
        const T v = A[(ulong)i * lda + j];
#pragma unroll
        for (uint t = 0; t < QR_CHUNK; t++)
          if (t < nc)
            A[(ulong)i * lda + c0 + t] -= LA_MUL(w[t], v);
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
  v[voff + (ulong)i * jb + c] = i > c ? a[aoff + (ulong)i * lda + c] : i == c ? KILN_ONE : (T)0;
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
          s += LA_MUL(tl[l * jb + p], G[p * jb + i]);
        tl[l * jb + i] = -LA_MUL(ti, s);
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
          s += LA_MUL(Tm[l * jb + p], G[p * jb + i]);
        Tm[l * jb + i] = -LA_MUL(ti, s);
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
  x[off + b * stride + (ulong)i * cols + j] = i == j ? KILN_ONE : (T)0;
}

kernel void gemm_s(uint m, uint n, uint k, T alpha, global const T *a, ulong aoff, ulong ars,
                   ulong acs, global const T *b, ulong boff, ulong brs, ulong bcs, T beta,
                   global T *c, ulong coff, ulong ldc, uint cj)
{
  const uint j = (uint)get_global_id(0), i = (uint)get_global_id(1);
  if (i >= m || j >= n)
    return;
  T s = (T)0;
  for (uint p = 0; p < k; p++)
    s += LA_MUL(LA_CJ(a[aoff + (ulong)i * ars + (ulong)p * acs], cj & 4u),
                LA_CJ(b[boff + (ulong)p * brs + (ulong)j * bcs], cj & 8u));
  global T *cp = c + coff + (ulong)i * ldc + j;
  *cp = LA_ISZERO(beta) ? LA_MUL(alpha, s) : LA_MUL(alpha, s) + LA_MUL(beta, *cp);
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

/* global (cols, rows): d (cols x rows) = s (rows x cols)^T, both contiguous. */
kernel void transpose_m(global const T *s, ulong soff, uint rows, uint cols, global T *d,
                        ulong doff)
{
  const uint c = (uint)get_global_id(0), r = (uint)get_global_id(1);
  if (r >= rows || c >= cols)
    return;
  d[doff + (ulong)c * rows + r] = s[soff + (ulong)r * cols + c];
}
