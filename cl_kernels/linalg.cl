/*
 * linalg family (lib/ops/linalg.c): LU with partial pivoting, Cholesky, triangular solve and
 * multiply, and the small helpers around them, for f32 and f64 (common.cl's -DT=...).
 *
 * Matrices are addressed by an element offset and, where a kernel accepts transposed or
 * "upper as lower" views, by a row stride rs and a column stride cs: element (i, j) is
 * p[off + i * rs + j * cs]. Batched kernels take the batch index from the group id (one
 * work-group per matrix) or from get_global_id(1), and a per-matrix stride. info[] holds one
 * int per matrix: 0, or the 1-based index of the first exactly zero LU pivot / the order of
 * the first leading minor that is not positive definite (LAPACK's info).
 *
 * Kernels:
 *   lu_small(a, aoff, astride, m, n, piv, pstride, info, s, rv, ri)
 *     one work-group per m x n matrix (m, n <= 64): LU with partial pivoting in local
 *     memory s (m * (n | 1) T), in place; piv 1-based (LAPACK, torch). rv/ri: local_size
 *     T and int for the pivot search.
 *   lu_panel(a, aoff, lda, m, ncols, j0, piv, poff, info, ioff, rv, ri)
 *     one work-group: unblocked LU of columns j0 .. j0+ncols-1, rows j0 .. m-1, in global
 *     memory; row swaps stay inside the panel (laswp applies them elsewhere).
 *   laswp(a, aoff, astride, lda, ncols, piv, pstride, k1, k2, reverse)
 *     global (columns, batch): the interchanges k1 .. k2-1 of piv to ncols columns,
 *     forward (reverse 0) or backward.
 *   chol_small(a, aoff, astride, n, rs, cs, info, ioff, j0, s)
 *     one work-group per n x n matrix (n <= 64): A = L L^T in local memory, lower triangle
 *     in the (rs, cs) view, the other triangle zeroed. Also the
 *     diagonal blocks of the blocked Cholesky (batch 1, j0 the block's first row: info
 *     counts from there, and the kernel does nothing once info is set).
 *   chol_panel(a, aoff, rs, cs, nb, j0, info, ioff)
 *     one work-group: unblocked Cholesky of the diagonal block at (j0, j0) of size nb, in
 *     place; does nothing once info is set.
 *   tri_zero(a, aoff, astride, n, rs, cs)   global (n*n, batch): zero elements j > i
 *   trsm_cols(a, aoff, astride, ars, acs, n, lower, unit, b, boff, bstride, brs, bcs, nrhs,
 *             alpha)
 *     global (nrhs, batch): solves M x = alpha b for each right-hand side (one per
 *     work-item), M the n x n triangle (lower or upper, unit diagonal or not) in the view.
 *   trmm_cols(same arguments)  b = alpha M b, in place.
 *   gemm_acc(m, n, k, alpha, a, aoff, ars, acs, b, boff, brs, bcs, c, coff, crs, ccs, tri)
 *     global (n, m): C += alpha A B over the views; tri 1 only j <= i, 2 only j >= i.
 *   lu_det(lu, off, stride, n, piv, pstride, mode, sign, val)
 *     global (batch): mode 0 val = det; mode 1 sign and val = log|det|.
 *   piv_perm(piv, pstride, k, perm, m)  global (batch): perm = pivots as a permutation.
 *   lu_unpack(lu, off, stride, m, n, k, perm, P, L, U)  global (max(m, n), m, batch).
 *   eye(x, off, stride, n)  global (n * n, batch): identity matrices.
 *   norm1(a, aoff, astride, n, out, sh)  one work-group per matrix: max column |sum|.
 *
 * No tunables are compiled in: the block size and the small-matrix bound are host choices.
 */
#include "common.cl"

#define IDX(off, rs, cs, i, j) ((off) + (ulong)(i) * (rs) + (ulong)(j) * (cs))

/* Tree reduction of (rv, ri) over the group: the largest |value|, lowest row on ties.
 * Ends with a barrier; the winner is ri[0]. */
inline void argmax_tree(local T *rv, local int *ri, uint lid, uint lsz)
{
  for (uint off = lsz >> 1; off > 0; off >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < off) {
      T v2 = rv[lid + off];
      int i2 = ri[lid + off];
      if (v2 > rv[lid] || (v2 == rv[lid] && i2 < ri[lid])) {
        rv[lid] = v2;
        ri[lid] = i2;
      }
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}

kernel void lu_small(global T *a, ulong aoff, ulong astride, uint m, uint n, global int *piv,
                     ulong poff, ulong pstride, global int *info, ulong ioff, local T *s,
                     local T *rv, local int *ri)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const ulong b = get_group_id(0);
  global T *A = a + aoff + b * astride;
  const uint ld = n | 1u; /* an odd row stride spreads a column over the local banks */
  for (uint e = lid; e < m * n; e += lsz)
    s[(e / n) * ld + e % n] = A[e];
  const uint k = min(m, n);
  int zero = 0;
  for (uint j = 0; j < k; j++) {
    barrier(CLK_LOCAL_MEM_FENCE);
    /* LAPACK's idamax: the first largest |x|; a NaN below the diagonal is never chosen. */
    T best = (T)-1;
    int bi = (int)j;
    for (uint i = j + lid; i < m; i += lsz) {
      T v = fabs(s[i * ld + j]);
      if (v > best) {
        best = v;
        bi = (int)i;
      }
    }
    rv[lid] = best;
    ri[lid] = bi;
    argmax_tree(rv, ri, lid, lsz);
    int p = isnan(s[j * ld + j]) ? (int)j : ri[0];
    barrier(CLK_LOCAL_MEM_FENCE); /* everyone has read row j before it moves */
    if (p != (int)j)
      for (uint c = lid; c < n; c += lsz) {
        T t = s[j * ld + c];
        s[j * ld + c] = s[p * ld + c];
        s[p * ld + c] = t;
      }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0)
      piv[poff + b * pstride + j] = p + 1;
    const T d = s[j * ld + j];
    if (d == (T)0 && zero == 0)
      zero = (int)j + 1;
    if (d != (T)0)
      for (uint i = j + 1 + lid; i < m; i += lsz)
        s[i * ld + j] = s[i * ld + j] / d;
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint w = n - j - 1, h = m - j - 1;
    for (uint e = lid; e < w * h; e += lsz) {
      uint i = j + 1 + e / w, c = j + 1 + e % w;
      s[i * ld + c] = s[i * ld + c] - s[i * ld + j] * s[j * ld + c];
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint e = lid; e < m * n; e += lsz)
    A[e] = s[(e / n) * ld + e % n];
  if (lid == 0)
    info[ioff + b] = zero;
}

kernel void lu_panel(global T *a, ulong aoff, ulong lda, uint m, uint ncols, uint j0,
                     global int *piv, ulong poff, global int *info, ulong ioff, local T *rv,
                     local int *ri)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  global T *A = a + aoff;
  int zero = j0 == 0 ? 0 : info[ioff];
  for (uint jj = 0; jj < ncols; jj++) {
    const uint j = j0 + jj;
    T best = (T)-1;
    int bi = (int)j;
    for (uint i = j + lid; i < m; i += lsz) {
      T v = fabs(A[i * lda + j]);
      if (v > best) {
        best = v;
        bi = (int)i;
      }
    }
    rv[lid] = best;
    ri[lid] = bi;
    argmax_tree(rv, ri, lid, lsz);
    int p = isnan(A[j * lda + j]) ? (int)j : ri[0];
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    if (p != (int)j)
      for (uint c = j0 + lid; c < j0 + ncols; c += lsz) {
        T t = A[j * lda + c];
        A[j * lda + c] = A[(ulong)p * lda + c];
        A[(ulong)p * lda + c] = t;
      }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    if (lid == 0)
      piv[poff + j] = p + 1;
    const T d = A[j * lda + j];
    if (d == (T)0 && zero == 0)
      zero = (int)j + 1;
    for (uint i = j + 1 + lid; i < m; i += lsz) {
      T l = A[i * lda + j];
      if (d != (T)0) {
        l = l / d;
        A[i * lda + j] = l;
      }
      for (uint c = j + 1; c < j0 + ncols; c++)
        A[i * lda + c] = A[i * lda + c] - l * A[j * lda + c];
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0)
    info[ioff] = zero;
}

kernel void laswp(global T *a, ulong aoff, ulong astride, ulong lda, uint ncols, global int *piv,
                  ulong poff, ulong pstride, uint k1, uint k2, uint reverse)
{
  const ulong c = get_global_id(0), b = get_global_id(1);
  if (c >= ncols)
    return;
  global T *A = a + aoff + b * astride + c;
  global int *P = piv + poff + b * pstride;
  for (uint t = 0; t < k2 - k1; t++) {
    uint j = reverse ? k2 - 1 - t : k1 + t;
    uint p = (uint)(P[j] - 1);
    if (p != j) {
      T x = A[j * lda];
      A[j * lda] = A[p * lda];
      A[p * lda] = x;
    }
  }
}

kernel void chol_small(global T *a, ulong aoff, ulong astride, uint n, ulong rs, ulong cs,
                       global int *info, ulong ioff, uint j0, local T *s)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const ulong b = get_group_id(0);
  if (j0 != 0 && info[ioff + b] != 0)
    return; /* a diagonal block of the blocked path after a failed one */
  const ulong base = aoff + b * astride;
  const uint ld = n | 1u;
  for (uint e = lid; e < n * n; e += lsz) {
    uint i = e / n, j = e % n;
    s[i * ld + j] = j <= i ? a[IDX(base, rs, cs, i, j)] : (T)0;
  }
  int bad = 0;
  for (uint j = 0; j < n; j++) {
    barrier(CLK_LOCAL_MEM_FENCE);
    T d = s[j * ld + j];
    if (!(d > (T)0)) { /* also NaN */
      bad = (int)(j0 + j) + 1;
      break;
    }
    d = sqrt(d);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0)
      s[j * ld + j] = d;
    for (uint i = j + 1 + lid; i < n; i += lsz)
      s[i * ld + j] = s[i * ld + j] / d;
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint w = n - j - 1;
    for (uint e = lid; e < w * w; e += lsz) {
      uint i = j + 1 + e / w, c = j + 1 + e % w;
      if (c <= i)
        s[i * ld + c] = s[i * ld + c] - s[i * ld + j] * s[c * ld + j];
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint e = lid; e < n * n; e += lsz) {
    uint i = e / n, j = e % n;
    a[IDX(base, rs, cs, i, j)] = j <= i ? s[i * ld + j] : (T)0;
  }
  if (lid == 0)
    info[ioff + b] = bad;
}

kernel void chol_panel(global T *a, ulong aoff, ulong rs, ulong cs, uint nb, uint j0,
                       global int *info, ulong ioff)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  if (j0 != 0 && info[ioff] != 0)
    return; /* an earlier block failed: the rest is garbage nobody reads */
  const ulong base = aoff + (ulong)j0 * rs + (ulong)j0 * cs;
  int bad = 0;
  for (uint j = 0; j < nb; j++) {
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    T d = a[IDX(base, rs, cs, j, j)];
    if (!(d > (T)0)) {
      bad = (int)(j0 + j) + 1;
      break;
    }
    d = sqrt(d);
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    if (lid == 0)
      a[IDX(base, rs, cs, j, j)] = d;
    for (uint i = j + 1 + lid; i < nb; i += lsz)
      a[IDX(base, rs, cs, i, j)] = a[IDX(base, rs, cs, i, j)] / d;
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    const uint w = nb - j - 1;
    for (uint e = lid; e < w * w; e += lsz) {
      uint i = j + 1 + e / w, c = j + 1 + e % w;
      if (c <= i)
        a[IDX(base, rs, cs, i, c)] =
            a[IDX(base, rs, cs, i, c)] - a[IDX(base, rs, cs, i, j)] * a[IDX(base, rs, cs, c, j)];
    }
  }
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  if (lid == 0)
    info[ioff] = bad;
}

kernel void tri_zero(global T *a, ulong aoff, ulong astride, uint n, ulong rs, ulong cs)
{
  const ulong e = get_global_id(0), b = get_global_id(1);
  if (e >= (ulong)n * n)
    return;
  const uint i = (uint)(e / n), j = (uint)(e % n);
  if (j > i)
    a[IDX(aoff + b * astride, rs, cs, i, j)] = (T)0;
}

kernel void trsm_cols(global const T *a, ulong aoff, ulong astride, ulong ars, ulong acs, uint n,
                      uint lower, uint unit, global T *b, ulong boff, ulong bstride, ulong brs,
                      ulong bcs, uint nrhs, T alpha)
{
  const ulong c = get_global_id(0), bi = get_global_id(1);
  if (c >= nrhs)
    return;
  const ulong ab = aoff + bi * astride, bb = boff + bi * bstride + c * bcs;
  for (uint t = 0; t < n; t++) {
    const uint i = lower ? t : n - 1 - t;
    T s = alpha * b[bb + i * brs];
    if (lower)
      for (uint j = 0; j < i; j++)
        s -= a[IDX(ab, ars, acs, i, j)] * b[bb + j * brs];
    else
      for (uint j = i + 1; j < n; j++)
        s -= a[IDX(ab, ars, acs, i, j)] * b[bb + j * brs];
    if (!unit)
      s = s / a[IDX(ab, ars, acs, i, i)];
    b[bb + i * brs] = s;
  }
}

kernel void trmm_cols(global const T *a, ulong aoff, ulong astride, ulong ars, ulong acs, uint n,
                      uint lower, uint unit, global T *b, ulong boff, ulong bstride, ulong brs,
                      ulong bcs, uint nrhs, T alpha)
{
  const ulong c = get_global_id(0), bi = get_global_id(1);
  if (c >= nrhs)
    return;
  const ulong ab = aoff + bi * astride, bb = boff + bi * bstride + c * bcs;
  /* Lower: row i reads x[j <= i], so rows go bottom-up; upper top-down. */
  for (uint t = 0; t < n; t++) {
    const uint i = lower ? n - 1 - t : t;
    T s = unit ? b[bb + i * brs] : a[IDX(ab, ars, acs, i, i)] * b[bb + i * brs];
    if (lower)
      for (uint j = 0; j < i; j++)
        s += a[IDX(ab, ars, acs, i, j)] * b[bb + j * brs];
    else
      for (uint j = i + 1; j < n; j++)
        s += a[IDX(ab, ars, acs, i, j)] * b[bb + j * brs];
    b[bb + i * brs] = alpha * s;
  }
}

kernel void gemm_acc(uint m, uint n, uint k, T alpha, global const T *a, ulong aoff, ulong ars,
                     ulong acs, global const T *b, ulong boff, ulong brs, ulong bcs, global T *c,
                     ulong coff, ulong crs, ulong ccs, uint tri)
{
  const uint j = (uint)get_global_id(0), i = (uint)get_global_id(1);
  if (i >= m || j >= n || (tri == 1 && j > i) || (tri == 2 && j < i))
    return;
  T s = (T)0;
  for (uint p = 0; p < k; p++)
    s += a[IDX(aoff, ars, acs, i, p)] * b[IDX(boff, brs, bcs, p, j)];
  c[IDX(coff, crs, ccs, i, j)] += alpha * s;
}

kernel void lu_det(global const T *lu, ulong off, ulong stride, uint n, global const int *piv,
                   ulong poff, ulong pstride, uint mode, global T *sign, ulong soff,
                   global T *val, ulong voff, ulong nbatch)
{
  const ulong b = get_global_id(0);
  if (b >= nbatch)
    return;
  global const T *A = lu + off + b * stride;
  global const int *P = piv + poff + b * pstride;
  T sg = (T)1, acc = mode ? (T)0 : (T)1;
  for (uint j = 0; j < n; j++) {
    T u = A[(ulong)j * n + j];
    if (P[j] != (int)j + 1)
      sg = -sg;
    if (mode) {
      sg = u > (T)0 ? sg : u < (T)0 ? -sg : u == (T)0 ? (T)0 : u;
      acc += log(fabs(u));
    } else {
      acc *= u;
    }
  }
  if (mode) {
    sign[soff + b] = sg;
    val[voff + b] = acc;
  } else {
    val[voff + b] = sg * acc;
  }
}

kernel void piv_perm(global const int *piv, ulong poff, ulong pstride, uint k, global int *perm,
                     ulong qoff, uint m, ulong nbatch)
{
  const ulong b = get_global_id(0);
  if (b >= nbatch)
    return;
  global int *q = perm + qoff + b * m;
  for (uint i = 0; i < m; i++)
    q[i] = (int)i;
  for (uint j = 0; j < k; j++) {
    int p = piv[poff + b * pstride + j] - 1, t = q[j];
    q[j] = q[p];
    q[p] = t;
  }
}

kernel void lu_unpack(global const T *lu, ulong off, ulong stride, uint m, uint n, uint k,
                      global const int *perm, ulong qoff, global T *P, ulong poff, global T *L,
                      ulong loff,
                      global T *U, ulong uoff)
{
  const uint c = (uint)get_global_id(0), r = (uint)get_global_id(1);
  const ulong b = get_global_id(2);
  global const T *A = lu + off + b * stride;
  if (c < k && r < m)
    L[loff + b * m * k + (ulong)r * k + c] =
        r > c ? A[(ulong)r * n + c] : r == c ? (T)1 : (T)0;
  if (r < k && c < n)
    U[uoff + b * k * n + (ulong)r * n + c] = c >= r ? A[(ulong)r * n + c] : (T)0;
  if (c < m && r < m)
    P[poff + b * m * m + (ulong)r * m + c] = perm[qoff + b * m + c] == (int)r ? (T)1 : (T)0;
}

kernel void eye(global T *x, ulong off, ulong stride, uint n)
{
  const ulong e = get_global_id(0), b = get_global_id(1);
  if (e >= (ulong)n * n)
    return;
  x[off + b * stride + e] = e / n == e % n ? (T)1 : (T)0;
}

kernel void norm1(global const T *a, ulong aoff, ulong astride, uint n, global T *out,
                  ulong ooff, local T *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const ulong b = get_group_id(0);
  global const T *A = a + aoff + b * astride;
  T best = (T)0;
  for (uint j = lid; j < n; j += lsz) {
    T s = (T)0;
    for (uint i = 0; i < n; i++)
      s += fabs(A[(ulong)i * n + j]);
    best = isnan(s) || s > best ? s : best;
  }
  sh[lid] = best;
  for (uint off = lsz >> 1; off > 0; off >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < off && (isnan(sh[lid + off]) || sh[lid + off] > sh[lid]))
      sh[lid] = sh[lid + off];
  }
  if (lid == 0)
    out[ooff + b] = sh[0];
}
