/*
 * linalg family (lib/ops/linalg.c): LU with partial pivoting, Cholesky, triangular solve and
 * multiply, and the small helpers around them, for f32, f64, c64 and c128 (common.cl's -DT=...;
 * complex T is float2/double2 and the arithmetic goes through the LA_* macros below, which
 * are the plain operators for real T).
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
 *   lu_panel(a, aoff, lda, m, ncols, j0, piv, poff, info, ioff, rv, ri, srow, s0, sw)
 *     one work-group: unblocked LU of columns j0 .. j0+ncols-1, rows j0 .. m-1, in global
 *     memory; row swaps cover columns s0 .. s0+sw-1 (containing the leaf; laswp applies
 *     them elsewhere). srow: 2 sw T of local memory (the pivot row and the row it replaces).
 *   laswp(a, aoff, astride, lda, ncols, piv, pstride, k1, k2, reverse, s0, sw, sj, sp, pos,
 *         src, cnt, tile)
 *     groups of LASWP_CW columns (dimension 1 the batch): the interchanges k1 .. k2-1
 *     (at most LASWP_K) of piv to ncols columns, forward (reverse 0) or backward; columns
 *     from s0 on lie sw further right (one launch for the columns left and right of a panel).
 *   chol_small(a, aoff, astride, n, rs, cs, info, ioff, j0, s)
 *     one work-group per n x n matrix (n <= 64): A = L L^T in local memory, lower triangle
 *     in the (rs, cs) view, the other triangle zeroed. Also the
 *     diagonal blocks of the blocked Cholesky (batch 1, j0 the block's first row: info
 *     counts from there, and the kernel does nothing once info is set).
 *   chol_inv(a, aoff, astride, n, rs, cs, info, ioff, j0, x, xoff, xstride, upper, col, row)
 *     one work-group of 64 (n <= 32) or 256 lanes (n <= 64) per block: chol_small's
 *     factorization, and L^-1 (X^T when upper) into x, contiguous n x n; col and row: 128 T
 *     of local memory each.
 *   chol_panel(a, aoff, rs, cs, nb, j0, info, ioff)
 *     one work-group: unblocked Cholesky of the diagonal block at (j0, j0) of size nb, in
 *     place; does nothing once info is set.
 *   tri_zero(a, aoff, n, rs, cs)   global (n, n): zero elements j > i of the view
 *   trsm_cols(a, aoff, astride, ars, acs, n, lower, unit, b, boff, bstride, brs, bcs, nrhs,
 *             alpha, conja)
 *     global (nrhs, batch): solves M x = alpha b for each right-hand side (one per
 *     work-item), M the n x n triangle (lower or upper, unit diagonal or not) in the view,
 *     its elements conjugated when conja (complex conjugate transposes).
 *   trmm_cols(same arguments)  b = alpha M b, in place.
 *   tri_inv(a, aoff, astride, ars, acs, n, upper, unit, x, xoff, xstride, N, s, t)
 *     one work-group of at least N lanes per matrix (n <= N <= 64, N a power of two from 8):
 *     X (n x n, contiguous, zeros in the other triangle) = M^-1, M the triangle of the view;
 *     s: N * (N | 1) T and t: N * N / 4 T of local memory.
 *   gemm_acc(m, n, k, alpha, a, aoff, ars, acs, b, boff, brs, bcs, c, coff, crs, ccs, tri)
 *     global (n, m): C += alpha A B over the views; tri & 3: 1 only j <= i, 2 only j >= i;
 *     tri & 4 conjugates A's elements, tri & 8 B's (complex dtypes).
 *   gemm_tile(m, n, k, alpha, a, aoff, ars, acs, b, boff, brs, bcs, overwrite, c, coff, crs,
 *             ccs, tri, az, bz, cz)
 *     work-groups of 16 x 16 over 64 x 64 tiles of C, dimension 2 a batch (element strides
 *     az, bz, cz): C = alpha A B (overwrite 1) or C += alpha A B; tri as gemm_acc.
 *   cplx_expand(b, boff, brs, bcs, k, n, cj, e)   complex only: the real form of a product's
 *     B (2k x 2n, see its comment), for complex GEMMs on the real large kernel.
 *   lu_det(lu, off, stride, n, piv, pstride, mode, sign, val)
 *     global (batch): mode 0 sign = det; mode 1 sign (complex: det / |det|) and val = log|det|
 *     (val is RT: real for complex dtypes).
 *   piv_perm(piv, pstride, k, perm, m)  global (batch): perm = pivots as a permutation.
 *   lu_unpack(lu, off, stride, m, n, k, perm, P, L, U)  global (max(m, n), m, batch).
 *   eye(x, off, stride, n)  global (n * n, batch): identity matrices.
 *   norm1(a, aoff, astride, n, out, sh)  one work-group per matrix: max column sum of |a|
 *     (out RT).
 *
 * No tunables are compiled in: the block size and the small-matrix bound are host choices.
 */
#include "common.cl"

#define IDX(off, rs, cs, i, j) ((off) + (ulong)(i) * (rs) + (ulong)(j) * (cs))

#include "linalg_arith.clh"


/* Tree reduction of (rv, ri) over the group (lsz a power of two): the largest |value|, lowest
 * row on ties (a total order, so any tree gives the same result). By fours (a step by two
 * first where log2(lsz) is odd): lu_panel_grid's two trees a column took 1.7 of its 5.5 us on
 * the H200 by twos. Ends with a barrier; the winner is ri[0]. */
inline void argmax_tree(local RT *rv, local int *ri, uint lid, uint lsz)
{
  for (uint n = lsz; n > 1;) {
    const uint s = (31 - clz(n)) & 1u ? n >> 1 : n >> 2;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < s) {
      RT bv = rv[lid];
      int bi = ri[lid];
      for (uint t = lid + s; t < n; t += s) {
        const RT v2 = rv[t];
        const int i2 = ri[t];
        if (v2 > bv || (v2 == bv && i2 < bi)) {
          bv = v2;
          bi = i2;
        }
      }
      rv[lid] = bv;
      ri[lid] = bi;
    }
    n = s;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}

kernel void lu_small(global T *a, ulong aoff, ulong astride, uint m, uint n, global int *piv,
                     ulong poff, ulong pstride, global int *info, ulong ioff, local T *s,
                     local RT *rv, local int *ri)
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
    RT best = (RT)-1;
    int bi = (int)j;
    for (uint i = j + lid; i < m; i += lsz) {
      RT v = LA_ABS1(s[i * ld + j]);
      if (v > best) {
        best = v;
        bi = (int)i;
      }
    }
    rv[lid] = best;
    ri[lid] = bi;
    argmax_tree(rv, ri, lid, lsz);
    int p = LA_ISNAN(s[j * ld + j]) ? (int)j : ri[0];
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
    if (LA_ISZERO(d) && zero == 0)
      zero = (int)j + 1;
    if (!LA_ISZERO(d))
      for (uint i = j + 1 + lid; i < m; i += lsz)
        s[i * ld + j] = LA_DIV(s[i * ld + j], d);
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint w = n - j - 1, h = m - j - 1;
    for (uint e = lid; e < w * h; e += lsz) {
      uint i = j + 1 + e / w, c = j + 1 + e % w;
      s[i * ld + c] = s[i * ld + c] - LA_MUL(s[i * ld + j], s[j * ld + c]);
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint e = lid; e < m * n; e += lsz)
    A[e] = s[(e / n) * ld + e % n];
  if (lid == 0)
    info[ioff + b] = zero;
}

/*
 * Columns per chunk of lu_panel's row update: a chunk of the row is loaded into registers
 * (independent loads, all in flight at once) before any of it is stored, instead of one
 * load-store round trip per column that the compiler cannot reorder (the stores might alias
 * the pivot row in global memory).
 */
#define LU_CHUNK 8

kernel void lu_panel(global T *a, ulong aoff, ulong lda, uint m, uint ncols, uint j0,
                     global int *piv, ulong poff, global int *info, ulong ioff, local RT *rv,
                     local int *ri, local T *srow, uint s0, uint sw)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  /* Each lane owns the rows j0 + lid + k lsz for the whole kernel and is the only one that
   * reads or writes them in global memory; the pivot row and the row it replaces pass through
   * local memory. So only local barriers are needed: with a global fence per column the
   * kernel took about 26 us a column on the H200 whatever the rows. */
  /* the interchanges cover columns s0 .. s0+sw-1 (the whole top-level panel: the recursion
   * then needs no laswp inside it); prow is the pivot row's leaf columns */
  local T *orow = srow + sw, *prow = srow + (j0 - s0);
  local int diag_nan;
  global T *A = a + aoff;
  /* Lane 0 alone reads and writes the first zero pivot's index (the others never store it). */
  int zero = j0 == 0 || lid != 0 ? 0 : info[ioff];
  /* the first column's candidates; the next ones come out of each column's update */
  RT best = (RT)-1;
  int bi = (int)j0;
  for (uint i = j0 + lid; i < m; i += lsz) {
    const T x = A[i * lda + j0];
    const RT v = LA_ABS1(x);
    if (i == j0)
      diag_nan = LA_ISNAN(x);
    if (v > best) {
      best = v;
      bi = (int)i;
    }
  }
  for (uint jj = 0; jj < ncols; jj++) {
    const uint j = j0 + jj;
    rv[lid] = best;
    ri[lid] = bi;
    argmax_tree(rv, ri, lid, lsz);
    /* LAPACK's idamax: the first largest |x|; a NaN below the diagonal is never chosen, a NaN
     * on the diagonal stays the pivot. */
    const int p = diag_nan ? (int)j : ri[0];
    /* the owners of rows p and j put them in local memory, then write each other's */
    if ((uint)(p - (int)j0) % lsz == lid)
      for (uint c = 0; c < sw; c++)
        srow[c] = A[(ulong)p * lda + s0 + c];
    if (p != (int)j && jj % lsz == lid)
      for (uint c = 0; c < sw; c++)
        orow[c] = A[j * lda + s0 + c];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (p != (int)j) {
      if (jj % lsz == lid)
        for (uint c = 0; c < sw; c++)
          A[j * lda + s0 + c] = srow[c];
      if ((uint)(p - (int)j0) % lsz == lid)
        for (uint c = 0; c < sw; c++)
          A[(ulong)p * lda + s0 + c] = orow[c];
    }
    if (lid == 0)
      piv[poff + j] = p + 1;
    const T d = prow[jj];
    if (LA_ISZERO(d) && zero == 0)
      zero = (int)j + 1;
    best = (RT)-1;
    bi = (int)j + 1;
    /* this lane's rows below j (the first of them: j + 1 + ((lid - jj - 1) mod lsz)) */
    const uint first = j + 1 + (lid + lsz - (jj + 1) % lsz) % lsz;
    for (uint i = first; i < m; i += lsz) {
      global T *row = A + i * lda + j0;
      T l = row[jj];
      if (!LA_ISZERO(d)) {
        l = LA_DIV(l, d);
        row[jj] = l;
      }
      for (uint c0 = jj + 1; c0 < ncols; c0 += LU_CHUNK) {
        T r[LU_CHUNK];
#pragma unroll
        for (uint t = 0; t < LU_CHUNK; t++)
          if (c0 + t < ncols)
            r[t] = row[c0 + t];
#pragma unroll
        for (uint t = 0; t < LU_CHUNK; t++)
          if (c0 + t < ncols) {
            r[t] = r[t] - LA_MUL(l, prow[c0 + t]);
            row[c0 + t] = r[t];
          }
        if (c0 == jj + 1) { /* the next column's candidate */
          const RT v = LA_ABS1(r[0]);
          if (i == j + 1)
            diag_nan = LA_ISNAN(r[0]);
          if (v > best) {
            best = v;
            bi = (int)i;
          }
        }
      }
    }
  }
  if (lid == 0)
    info[ioff] = zero;
}

/*
 * lu_panel_grid: the LU panel spread over G work-groups that exchange through global memory
 * once per column. Position t = i - j0 of the panel's rows belongs to lane t / G of
 * work-group t % G (cyclic, so the groups stay balanced as rows retire), which keeps the
 * row's LUG_W leading panel columns in registers for the whole kernel: per column only the
 * candidates, the pivot row and the diagonal row cross the device, where lu_panel's one
 * work-group streams the panel through its compute unit once per column (26 us a column at
 * 4096 rows on the H200).
 *
 * Every group must be resident at once (the host launches at most one group per compute
 * unit; GPUs only). The exchange, double-buffered by column parity because a group may
 * publish column jj + 1 while a slower one still reads column jj (it cannot get further:
 * that needs the slower group's column jj + 1):
 *   slot [parity][G] (ulong2): each group's candidate, |value| bits and (stamp << 32 | its
 *        position), stamp = sbase + jj + 1 (sbase: the columns of the earlier launches on the
 *        same buffer, zeroed before the first); one 16-byte store, which NVIDIA GPUs perform
 *        untorn (CUB's scan tile states rely on the same), so a reader that sees the stamp
 *        sees the candidate. Readers poll the slots: that is the grid barrier, and its data.
 *   x    [parity][G + 1][LUG_W] (T): the candidates' rows, then the diagonal row, stored
 *        (plain stores) before the slot (a global fence between).
 * Cross-group reads are volatile (NVIDIA serves plain loads from a compute unit's L1, which
 * another unit's stores do not update). Columns of the interchanges outside the kernel's own
 * (s0 .. s0+sw-1 minus j0 .. j0+ncols-1) are swapped in global memory by group 0, each column
 * always by the same lane, so no other lane or group touches them inside the kernel.
 * Complex dtypes hold LUG_W = 32 columns (the host's leaf width for them).
 */
/* M(0) .. M(LUG_W - 1): the row is LUG_W scalars r0 .., every access at a constant index.
 * NVIDIA's compiler kept a private array T r[64] (and r[32]) in off-chip memory even with every
 * loop over it unrolled (CL_KERNEL_PRIVATE_MEM_SIZE 608 bytes; the panel then cost 9 us a
 * column). Complex rows are 32 wide (two registers an element, as 64 real ones). */
#define LUG_REP32(M)                                                                             \
  M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15) \
  M(16) M(17) M(18) M(19) M(20) M(21) M(22) M(23) M(24) M(25) M(26) M(27) M(28) M(29) M(30) M(31)
#define LUG_REP2_32(M) \
  M(0, 1) M(1, 2) M(2, 3) M(3, 4) M(4, 5) M(5, 6) M(6, 7) M(7, 8) M(8, 9) M(9, 10) M(10, 11) \
  M(11, 12) M(12, 13) M(13, 14) M(14, 15) M(15, 16) M(16, 17) M(17, 18) M(18, 19) M(19, 20) \
  M(20, 21) M(21, 22) M(22, 23) M(23, 24) M(24, 25) M(25, 26) M(26, 27) M(27, 28) M(28, 29) \
  M(29, 30) M(30, 31)
#if KILN_IS_COMPLEX
#define LUG_W 32
#define LUG_REP LUG_REP32
#define LUG_REP2 LUG_REP2_32
#else
#define LUG_W 64
/* the 64-wide rows: the 32-wide lists and their second halves (M(c, c + 1): the update of
 * the columns after c, by fallthrough) */
#define LUG_REP(M)                                                                               \
  LUG_REP32(M)                                                                                   \
  M(32) M(33) M(34) M(35) M(36) M(37) M(38) M(39) M(40) M(41) M(42) M(43) M(44) M(45) M(46) M(47) \
  M(48) M(49) M(50) M(51) M(52) M(53) M(54) M(55) M(56) M(57) M(58) M(59) M(60) M(61) M(62) M(63)
#define LUG_REP2(M) \
  LUG_REP2_32(M) \
  M(31, 32) M(32, 33) M(33, 34) M(34, 35) M(35, 36) M(36, 37) M(37, 38) \
  M(38, 39) M(39, 40) M(40, 41) M(41, 42) M(42, 43) M(43, 44) M(44, 45) M(45, 46) M(46, 47) \
  M(47, 48) M(48, 49) M(49, 50) M(50, 51) M(51, 52) M(52, 53) M(53, 54) M(54, 55) M(55, 56) \
  M(56, 57) M(57, 58) M(58, 59) M(59, 60) M(60, 61) M(61, 62) M(62, 63)
#endif
kernel void lu_panel_grid(global T *a, ulong aoff, ulong lda, uint m, uint ncols, uint j0,
                          global int *piv, ulong poff, global int *info, ulong ioff, uint s0,
                          uint sw, volatile global ulong2 *slot, uint sbase, volatile global T *x,
                          local RT *rv, local int *ri, local T *wrow, local T *drow)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const uint g = get_group_id(0), G = get_num_groups(0);
  const uint rows = m - j0, me = g + G * lid; /* my position */
  const int own = me < rows;
  global T *A = a + aoff;
  global T *myrow = A + (ulong)(j0 + me) * lda + j0;
#define LUG_LOAD(c) T r##c = own && c < ncols ? myrow[c] : (T)0;
  LUG_REP(LUG_LOAD)
  int zero = j0 == 0 || lid != 0 || g != 0 ? 0 : info[ioff];
  for (uint jj = 0; jj < ncols; jj++) {
    const uint par = jj & 1u, stamp = sbase + jj + 1;
    volatile global T *xr = x + (ulong)par * (G + 1) * LUG_W;
    /* plain stores for the rows (the fence before the slot's store publishes them): volatile
     * ones are issued one at a time */
    global T *xw = (global T *)xr;
    volatile global ulong2 *sl = slot + par * G;
    /* a switch on the uniform column, not 64 selects (LU of 4096 f32 on the H200: 29.6 ->
     * 27.2 ms, f64 32.4 -> 31.9) */
    T xj = (T)0;
    switch (jj) {
#define LUG_CASE(c)                                                                              \
  case c:                                                                                        \
    xj = r##c;                                                                                   \
    break;
      LUG_REP(LUG_CASE)
    }
    /* LAPACK's idamax (izamax: |re| + |im|): the first largest; NaN is never a candidate (a
     * NaN on the diagonal stays the pivot below, as in lu_panel) */
    const RT v = LA_ABS1(xj);
    const int cand = own && me >= jj && !isnan(v);
    rv[lid] = cand ? v : (RT)-1;
    ri[lid] = cand ? (int)me : INT_MAX;
    argmax_tree(rv, ri, lid, lsz);
    const int wbest = ri[0];
    const RT wv = rv[0];
#define LUG_PUT(c) xw[base + c] = r##c;
    if (own && (int)me == wbest) {
      const ulong base = (ulong)g * LUG_W;
      LUG_REP(LUG_PUT)
    }
    if (own && me == jj) {
      const ulong base = (ulong)G * LUG_W;
      LUG_REP(LUG_PUT)
    }
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0)
      sl[g] = (ulong2)(LA_BITS(wv), (ulong)stamp << 32 | (uint)wbest);
    /* PoCL 3.1 skipped that store when the polling loop below shared its region */
    barrier(CLK_LOCAL_MEM_FENCE);
    /* wait for every group's candidate of this column; keep the best */
    RT bv = (RT)-1;
    int bi = INT_MAX, bg = 0;
    for (uint h = lid; h < G; h += lsz) {
      ulong2 e;
      do
        e = sl[h];
      while ((uint)(e.y >> 32) != stamp);
      const int i2 = (int)(uint)e.y;
      const RT v2 = LA_VAL(e.x);
      if (i2 != INT_MAX && (v2 > bv || (v2 == bv && i2 < bi))) {
        bv = v2;
        bi = i2;
        bg = (int)h;
      }
    }
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    rv[lid] = bv;
    ri[lid] = bi;
    argmax_tree(rv, ri, lid, lsz);
    /* the winning group is the one whose candidate has the winning position (one lane) */
    if (bi == ri[0] && bi != INT_MAX)
      rv[0] = (RT)bg;
    barrier(CLK_LOCAL_MEM_FENCE);
    const int best = ri[0];
    const uint wg = best == INT_MAX ? G : (uint)rv[0];
    /* the diagonal row and the winner's row (the same when the diagonal wins), every load
     * issued before any is stored */
    for (uint c = lid; c < LUG_W; c += 2 * lsz) {
      const uint c2 = c + lsz;
      const T d0 = xr[(ulong)G * LUG_W + c], w0 = xr[(ulong)wg * LUG_W + c];
      const T d1 = c2 < LUG_W ? xr[(ulong)G * LUG_W + c2] : (T)0;
      const T w1 = c2 < LUG_W ? xr[(ulong)wg * LUG_W + c2] : (T)0;
      drow[c] = d0;
      wrow[c] = w0;
      if (c2 < LUG_W) {
        drow[c2] = d1;
        wrow[c2] = w1;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint p = LA_ISNAN(drow[jj]) || best == INT_MAX ? jj : (uint)best;
    local const T *prow = p == jj ? drow : wrow;
    if (g == 0) {
      if (lid == 0) {
        piv[poff + j0 + jj] = (int)(j0 + p) + 1;
        if (LA_ISZERO(prow[jj]) && zero == 0)
          zero = (int)(j0 + jj) + 1;
      }
      if (p != jj)
        for (uint c = lid; c < sw; c += lsz) {
          const uint col = s0 + c;
          if (col >= j0 && col < j0 + ncols)
            continue;
          global T *rj = A + (ulong)(j0 + jj) * lda + col, *rp = A + (ulong)(j0 + p) * lda + col;
          const T t = *rj;
          *rj = *rp;
          *rp = t;
        }
    }
    if (own) {
#define LUG_TAKE(c) r##c = src[c];
      if (me == jj) {
        local const T *src = prow;
        LUG_REP(LUG_TAKE)
      } else {
        if (me == p) {
          local const T *src = drow;
          LUG_REP(LUG_TAKE)
        }
        if (me > jj) {
          const T d = prow[jj];
          T l = (T)0;
          switch (jj) {
#define LUG_SETL(c)                                                                              \
  case c:                                                                                        \
    l = r##c;                                                                                    \
    break;
            LUG_REP(LUG_SETL)
          }
          if (!LA_ISZERO(d))
            l = LA_DIV(l, d);
          /* the multiplier into column jj, then columns jj + 1 .. 63 from a jump into
           * straight-line code: the form with a select per column (every column tested
           * against jj) took 2.7 of the 5.5 us a column on the H200 */
          switch (jj) {
#define LUG_SETJ(c)                                                                              \
  case c:                                                                                        \
    r##c = l;                                                                                    \
    break;
            LUG_REP(LUG_SETJ)
          }
          switch (jj) {
#define LUG_FALL(c, d1)                                                                          \
  case c:                                                                                        \
    r##d1 -= LA_MUL(l, prow[d1]);
            LUG_REP2(LUG_FALL)
          default:
            break;
          }
        }
      }
    }
  }
#define LUG_STORE(c)                                                                             \
  if (c < ncols)                                                                                 \
    myrow[c] = r##c;
  if (own) {
    LUG_REP(LUG_STORE)
  }
  if (g == 0 && lid == 0)
    info[ioff] = zero;
}

/*
 * laswp: at most LASWP_K interchanges in one launch, as one permutation of the rows they touch
 * (at most 2 LASWP_K): the final source of each touched row is found by tracing it back through
 * the swaps, then every column moves its touched rows at once (through local memory: the
 * sources are the same rows as the destinations). Swapping in sequence costs a dependent
 * global load and store per interchange (34 us for 64 of them on the H200, 2.5 ms for a
 * solve's 4096). Work-groups of LASWP_CW columns x (local size / LASWP_CW) row lanes,
 * dimension 1 the batch. sj, sp: LASWP_K int; pos, src: 2 LASWP_K int; cnt: 1 int; tile:
 * 2 LASWP_K LASWP_CW T.
 */
#define LASWP_K 64
#define LASWP_CW 16
kernel void laswp(global T *a, ulong aoff, ulong astride, ulong lda, uint ncols, global int *piv,
                  ulong poff, ulong pstride, uint k1, uint k2, uint reverse, uint s0, uint sw,
                  local int *sj, local int *sp, local int *pos, local int *src,
                  volatile local int *cnt, local T *tile)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const ulong b = get_global_id(1);
  const uint nk = k2 - k1;
  global const int *P = piv + poff + b * pstride;
  /* swap s (in the order applied) exchanges rows sj[s] and sp[s] */
  for (uint t = lid; t < nk; t += lsz) {
    const uint j = reverse ? k2 - 1 - t : k1 + t;
    sj[t] = (int)j;
    sp[t] = P[j] - 1;
    pos[t] = (int)j;
  }
  if (lid == 0)
    *cnt = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  /* the touched rows: every sj, and each sp that is no sj and not an earlier sp */
  for (uint t = lid; t < nk; t += lsz) {
    const int p = sp[t];
    int fresh = 1;
    for (uint u = 0; u < nk; u++)
      fresh &= sj[u] != p && (u >= t || sp[u] != p);
    if (fresh)
      pos[nk + (uint)atomic_inc(cnt)] = p;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint tot = nk + (uint)*cnt;
  for (uint u = lid; u < tot; u += lsz) {
    int q = pos[u];
    for (uint s = nk; s-- > 0;)
      q = q == sj[s] ? sp[s] : q == sp[s] ? sj[s] : q;
    src[u] = q;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint x = lid % LASWP_CW, y0 = lid / LASWP_CW, ys = lsz / LASWP_CW;
  const ulong c = get_group_id(0) * LASWP_CW + x;
  const int live = c < ncols;
  global T *A = a + aoff + b * astride + c + (c >= s0 ? sw : 0);
  for (uint u = y0; u < tot; u += ys)
    if (live)
      tile[u * LASWP_CW + x] = A[(ulong)src[u] * lda];
  /* the rows read are the rows written, by other lanes of the column */
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  for (uint u = y0; u < tot; u += ys)
    if (live)
      A[(ulong)pos[u] * lda] = tile[u * LASWP_CW + x];
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
    RT d = LA_RE(s[j * ld + j]);
    if (!(d > (RT)0)) { /* also NaN */
      bad = (int)(j0 + j) + 1;
      break;
    }
    d = sqrt(d);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0)
      s[j * ld + j] = LA_REAL(d);
    for (uint i = j + 1 + lid; i < n; i += lsz)
      s[i * ld + j] = s[i * ld + j] / d;
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint w = n - j - 1;
    for (uint e = lid; e < w * w; e += lsz) {
      uint i = j + 1 + e / w, c = j + 1 + e % w;
      if (c <= i)
        s[i * ld + c] = s[i * ld + c] - LA_MUL(s[i * ld + j], LA_CONJ(s[c * ld + j]));
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

/*
 * chol_inv: one work-group of G x G lanes (G = 8 or 16, from the local size) per
 * n x n block (n <= G * CHOL_R): A = L L^H in the (rs, cs) view as chol_small does, and
 * X = L^-1 into x (contiguous n x n, zeros above the diagonal; transposed, X^T, when upper: the
 * inverse of the upper factor U = L^T as tri_inv gives it). Lane (ty, tx) keeps rows
 * ty + G a and columns tx + G b of both A and X in registers. Step j publishes column j
 * of A and row j of X through local memory, alternating two buffers so that one barrier a step
 * suffices, and every lane then applies the same rank-1 update to A (the factorization) and to
 * X (forward substitution of L X = I, which needs the same column of L). chol_small (three
 * barriers and an integer division a step) and a separate tri_inv took 64 and 49 us for a 64 x
 * 64 block on the H200.
 */
#define CHOL_R 4
/* zeros a 4 x 4 private array (chol_inv's sub, the tiles' acc) */
#define GT_ZERO(acc)              \
  for (uint zr = 0; zr < 4; zr++)   \
    for (uint zq = 0; zq < 4; zq++) \
      acc[zr][zq] = (T)0;
/* The 4 x 4 elements of A and X per lane are named scalars, not arrays: selecting a column by
 * comparing the loop index with j let NVIDIA's compiler index the arrays dynamically, which
 * put both in off-chip memory (PTX .local; 104 us a 64 x 64 block on the H200). Which of them
 * step j reads or sets is a switch on the group-uniform j / G. */
#define CI_P(M) M(0) M(1) M(2) M(3)
#define CI_PQ(M)                                                                            \
  M(0, 0) M(0, 1) M(0, 2) M(0, 3) M(1, 0) M(1, 1) M(1, 2) M(1, 3) M(2, 0) M(2, 1) M(2, 2) \
  M(2, 3) M(3, 0) M(3, 1) M(3, 2) M(3, 3)
#define CI_DECL(p, q) T a##p##q, x##p##q;
#define CI_LOAD(p, q)                                               \
  {                                                                 \
    const uint i = ty + G * p, c = tx + G * q;                      \
    a##p##q = i < n && c <= i ? a[IDX(base, rs, cs, i, c)] - sub[p][q] : (T)0; \
    x##p##q = i == c ? KILN_ONE : (T)0;                             \
  }
/* publish column j of A (its owners: tx == j % G) and row j of X (ty == j % G) */
#define CI_WCOL(q)                                                                   \
  case q:                                                                            \
    cj[ty] = a0##q, cj[ty + G] = a1##q, cj[ty + 2 * G] = a2##q, cj[ty + 3 * G] = a3##q; \
    break;
#define CI_WROW(p)                                                                   \
  case p:                                                                            \
    rj[tx] = x##p##0, rj[tx + G] = x##p##1, rj[tx + 2 * G] = x##p##2,                \
    rj[tx + 3 * G] = x##p##3;                                                        \
    break;
/* Every entry of both buffers is written each step (rows past n hold zeros that stay zeros),
 * so within the blocks a step updates, the rows and columns it must not touch are scaled by 0
 * instead of branched around; the other triangle of A's diagonal blocks collects finite
 * values nobody reads (written back as 0). Which blocks a step updates is known from the
 * group-uniform jq = j / G alone: A's (p, q) for jq <= q <= p (columns right of j), X's for
 * q <= jq <= p (X = L^-1 is lower and its row j has entries up to column j only). One switch
 * on jq takes them as straight-line code: 14, 12, 9 and 5 of the 32 block updates a step
 * where every block took one before. */
#define CI_LI(p) const T li##p = cj[ty + G * p] * (ty + G * p > j ? rd : (RT)0);
#define CI_LC(q) const T lc##q = LA_CONJ(cj[tx + G * q] * (tx + G * q > j ? rd : (RT)0));
#define CI_XR(q) const T xr##q = rj[tx + G * q] * (tx + G * q <= j ? rd : (RT)0);
#define CI_UA(p, q) a##p##q -= LA_MUL(li##p, lc##q);
#define CI_UX(p, q) x##p##q -= LA_MUL(li##p, xr##q);
/* column j of L (the update left it unchanged: lc is 0 there), row j of X = L^-1 */
#define CI_SETA(p, q) a##p##q = ty + G * p == j ? LA_REAL(sd) : ty + G * p > j ? li##p : a##p##q;
#define CI_SETX(p, q) x##p##q = xr##q;
#define CI_STEP(k, LI, LC, XR, UA, UX, SETA, SETX) \
  case k: {                                        \
    LI LC XR UA UX if (tx == jl) { SETA }          \
    if (ty == jl) { SETX }                         \
  } break;
#define CI_STORE(p, q)                                                                 \
  {                                                                                    \
    const uint i = ty + G * p, c = tx + G * q;                                         \
    if (i < n && c < n) {                                                              \
      a[IDX(base, rs, cs, i, c)] = c <= i ? a##p##q : (T)0;                            \
      x[xb + (upper ? (ulong)c * n + i : (ulong)i * n + c)] = c <= i ? x##p##q : (T)0; \
    }                                                                                  \
  }
/* The block at base of A, less sub (lane's rows ty + G p, columns tx + G q, as chol_col's
 * tiles), and its X at xb by the group's lanes lid (G = 2^gs lanes a side); info[ib] as
 * chol_inv's. Always inlined: its callers keep the block in registers. */
inline __attribute__((always_inline)) void
chol_inv_blk(global T *a, ulong base, uint n, ulong rs, ulong cs, global int *info, ulong ib,
             uint j0, global T *x, ulong xb, uint upper, local T *col, local T *row, uint lid,
             uint gs, T (*sub)[4])
{
  const uint G = 1u << gs, tx = lid & (G - 1), ty = lid >> gs;
  if (j0 != 0 && info[ib] != 0)
    return; /* a diagonal block of the blocked path after a failed one */
  CI_PQ(CI_DECL)
  CI_PQ(CI_LOAD)
  int bad = 0;
  for (uint j = 0; j < n; j++) {
    local T *cj = col + (j & 1) * (CHOL_R * 16), *rj = row + (j & 1) * (CHOL_R * 16);
    const uint jq = j >> gs, jl = j & (G - 1);
    if (tx == jl)
      switch (jq) { CI_P(CI_WCOL) }
    if (ty == jl)
      switch (jq) { CI_P(CI_WROW) }
    barrier(CLK_LOCAL_MEM_FENCE);
    const RT d = LA_RE(cj[j]);
    if (!(d > (RT)0)) { /* also NaN; every lane reads the same d */
      bad = (int)(j0 + j) + 1;
      break;
    }
    /* one reciprocal square root in the step's dependent chain, not sqrt and a division */
    const RT rd = rsqrt(d), sd = d * rd;
    switch (jq) {
      CI_STEP(0, CI_LI(0) CI_LI(1) CI_LI(2) CI_LI(3), CI_LC(0) CI_LC(1) CI_LC(2) CI_LC(3),
              CI_XR(0),
              CI_UA(0, 0) CI_UA(1, 0) CI_UA(1, 1) CI_UA(2, 0) CI_UA(2, 1) CI_UA(2, 2)
                  CI_UA(3, 0) CI_UA(3, 1) CI_UA(3, 2) CI_UA(3, 3),
              CI_UX(0, 0) CI_UX(1, 0) CI_UX(2, 0) CI_UX(3, 0),
              CI_SETA(0, 0) CI_SETA(1, 0) CI_SETA(2, 0) CI_SETA(3, 0), CI_SETX(0, 0))
      CI_STEP(1, CI_LI(1) CI_LI(2) CI_LI(3), CI_LC(1) CI_LC(2) CI_LC(3), CI_XR(0) CI_XR(1),
              CI_UA(1, 1) CI_UA(2, 1) CI_UA(2, 2) CI_UA(3, 1) CI_UA(3, 2) CI_UA(3, 3),
              CI_UX(1, 0) CI_UX(1, 1) CI_UX(2, 0) CI_UX(2, 1) CI_UX(3, 0) CI_UX(3, 1),
              CI_SETA(1, 1) CI_SETA(2, 1) CI_SETA(3, 1), CI_SETX(1, 0) CI_SETX(1, 1))
      CI_STEP(2, CI_LI(2) CI_LI(3), CI_LC(2) CI_LC(3), CI_XR(0) CI_XR(1) CI_XR(2),
              CI_UA(2, 2) CI_UA(3, 2) CI_UA(3, 3),
              CI_UX(2, 0) CI_UX(2, 1) CI_UX(2, 2) CI_UX(3, 0) CI_UX(3, 1) CI_UX(3, 2),
              CI_SETA(2, 2) CI_SETA(3, 2), CI_SETX(2, 0) CI_SETX(2, 1) CI_SETX(2, 2))
      CI_STEP(3, CI_LI(3), CI_LC(3), CI_XR(0) CI_XR(1) CI_XR(2) CI_XR(3), CI_UA(3, 3),
              CI_UX(3, 0) CI_UX(3, 1) CI_UX(3, 2) CI_UX(3, 3), CI_SETA(3, 3),
              CI_SETX(3, 0) CI_SETX(3, 1) CI_SETX(3, 2) CI_SETX(3, 3))
    }
  }
  CI_PQ(CI_STORE)
  barrier(CLK_GLOBAL_MEM_FENCE); /* every lane has read info (the check above) */
  if (lid == 0)
    info[ib] = bad;
}

kernel void chol_inv(global T *a, ulong aoff, ulong astride, uint n, ulong rs, ulong cs,
                     global int *info, ulong ioff, uint j0, global T *x, ulong xoff,
                     ulong xstride, uint upper, local T *col, local T *row)
{
  const ulong b = get_group_id(0);
  T z[4][4];
  GT_ZERO(z)
  chol_inv_blk(a, aoff + b * astride, n, rs, cs, info, ioff + b, j0, x, xoff + b * xstride, upper,
               col, row, get_local_id(0), get_local_size(0) >= 256 ? 4u : 3u, z);
}
#undef CI_P
#undef CI_PQ
#undef CI_DECL
#undef CI_LOAD
#undef CI_WCOL
#undef CI_WROW
#undef CI_LI
#undef CI_LC
#undef CI_XR
#undef CI_UA
#undef CI_UX
#undef CI_SETA
#undef CI_SETX
#undef CI_STEP
#undef CI_STORE

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
    RT d = LA_RE(a[IDX(base, rs, cs, j, j)]);
    if (!(d > (RT)0)) {
      bad = (int)(j0 + j) + 1;
      break;
    }
    d = sqrt(d);
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    if (lid == 0)
      a[IDX(base, rs, cs, j, j)] = LA_REAL(d);
    for (uint i = j + 1 + lid; i < nb; i += lsz)
      a[IDX(base, rs, cs, i, j)] = a[IDX(base, rs, cs, i, j)] / d;
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    const uint w = nb - j - 1;
    for (uint e = lid; e < w * w; e += lsz) {
      uint i = j + 1 + e / w, c = j + 1 + e % w;
      if (c <= i)
        a[IDX(base, rs, cs, i, c)] =
            a[IDX(base, rs, cs, i, c)] -
            LA_MUL(a[IDX(base, rs, cs, i, j)], LA_CONJ(a[IDX(base, rs, cs, c, j)]));
    }
  }
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  if (lid == 0)
    info[ioff] = bad;
}

/* Zeros the upper triangle of the lower view (rs, cs): dimension 0 runs along the view's
 * stride-1 index, so that neighbouring lanes store neighbouring elements. */
kernel void tri_zero(global T *a, ulong aoff, uint n, ulong rs, ulong cs)
{
  const uint x = (uint)get_global_id(0), y = (uint)get_global_id(1);
  const uint i = cs == 1 ? y : x, j = cs == 1 ? x : y;
  if (x < n && y < n && j > i)
    a[IDX(aoff, rs, cs, i, j)] = (T)0;
}

/*
 * tri_inv: one work-group per matrix of the batch: X = M^-1 for the n x n triangle M of the
 * view (n <= N, N a power of two from 8 to 64, padded with the identity), in local memory, in
 * place, as a lower triangle (an upper one is read transposed and X transposed back). Leaves
 * of 8 rows first, all at once (forward substitution, one row a step), then blocks of 16, 32,
 * 64 joined as inv([A 0; C B]) = [inv(A) 0; -inv(B) C inv(A) inv(B)]: 8 + 2 log2(N / 8) steps
 * instead of one per column (LAPACK's trti2 form took about 45 us a 64 x 64 block on the H200,
 * 64 dependent steps, on the LU's critical path). s: N (N | 1) T; t: N^2 / 4 T. Needs N lanes
 * or more.
 */
kernel void tri_inv(global const T *a, ulong aoff, ulong astride, ulong ars, ulong acs, uint n,
                    uint upper, uint unit, global T *x, ulong xoff, ulong xstride, uint N,
                    local T *s, local T *t)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const ulong b = get_group_id(0), ab = aoff + b * astride, xb = xoff + b * xstride;
  const uint ld = N | 1u;
  for (uint e = lid; e < N * N; e += lsz) {
    const uint i = e / N, j = e % N;
    T v = i == j ? KILN_ONE : (T)0;
    if (i < n && j < i)
      v = upper ? a[IDX(ab, ars, acs, j, i)] : a[IDX(ab, ars, acs, i, j)];
    else if (i < n && i == j && !unit)
      v = a[IDX(ab, ars, acs, i, i)];
    s[i * ld + j] = v;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  /* leaves: step r computes row r of every 8 x 8 diagonal block (lane: block lid / 8, column
   * lid % 8); the rows above are already the inverse's, row r itself still L's */
  for (uint r = 0; r < 8; r++) {
    const uint o = lid / 8 * 8, c = lid % 8, i = o + r, j = o + c;
    const int act = lid < N && c <= r;
    T v = (T)0;
    if (act) {
      const T dinv = LA_DIV(KILN_ONE, s[i * ld + i]);
      T acc = (T)0;
      for (uint k = j; k < i; k++)
        acc += LA_MUL(s[i * ld + k], s[k * ld + j]);
      v = c == r ? dinv : -LA_MUL(dinv, acc);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (act)
      s[i * ld + j] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  /* joins of two h x h inverses (every pair at once): t = C inv(A), then C = -inv(B) t */
  for (uint h = 8; h < N; h *= 2) {
    const uint hh = h * h, cnt = N * h / 2;
    for (uint e = lid; e < cnt; e += lsz) {
      const uint o = e / hh * 2 * h, bb = e % hh / h, aa = e % h;
      T acc = (T)0;
      for (uint k = aa; k < h; k++)
        acc += LA_MUL(s[(o + h + bb) * ld + o + k], s[(o + k) * ld + o + aa]);
      t[e] = acc;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint e = lid; e < cnt; e += lsz) {
      const uint q = e / hh, o = q * 2 * h, bb = e % hh / h, aa = e % h;
      T acc = (T)0;
      for (uint k = 0; k <= bb; k++)
        acc += LA_MUL(s[(o + h + bb) * ld + o + h + k], t[q * hh + k * h + aa]);
      s[(o + h + bb) * ld + o + aa] = -acc;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (uint e = lid; e < n * n; e += lsz) {
    const uint i = e / n, j = e % n;
    x[xb + e] = upper ? (i > j ? (T)0 : s[j * ld + i]) : (j > i ? (T)0 : s[i * ld + j]);
  }
}

kernel void trsm_cols(global const T *a, ulong aoff, ulong astride, ulong ars, ulong acs, uint n,
                      uint lower, uint unit, global T *b, ulong boff, ulong bstride, ulong brs,
                      ulong bcs, uint nrhs, T alpha, uint conja)
{
  const ulong c = get_global_id(0), bi = get_global_id(1);
  if (c >= nrhs)
    return;
  const ulong ab = aoff + bi * astride, bb = boff + bi * bstride + c * bcs;
  for (uint t = 0; t < n; t++) {
    const uint i = lower ? t : n - 1 - t;
    T s = LA_MUL(alpha, b[bb + i * brs]);
    if (lower)
      for (uint j = 0; j < i; j++)
        s -= LA_MUL(LA_CJ(a[IDX(ab, ars, acs, i, j)], conja), b[bb + j * brs]);
    else
      for (uint j = i + 1; j < n; j++)
        s -= LA_MUL(LA_CJ(a[IDX(ab, ars, acs, i, j)], conja), b[bb + j * brs]);
    if (!unit)
      s = LA_DIV(s, LA_CJ(a[IDX(ab, ars, acs, i, i)], conja));
    b[bb + i * brs] = s;
  }
}

kernel void trmm_cols(global const T *a, ulong aoff, ulong astride, ulong ars, ulong acs, uint n,
                      uint lower, uint unit, global T *b, ulong boff, ulong bstride, ulong brs,
                      ulong bcs, uint nrhs, T alpha, uint conja)
{
  const ulong c = get_global_id(0), bi = get_global_id(1);
  if (c >= nrhs)
    return;
  const ulong ab = aoff + bi * astride, bb = boff + bi * bstride + c * bcs;
  /* Lower: row i reads x[j <= i], so rows go bottom-up; upper top-down. */
  for (uint t = 0; t < n; t++) {
    const uint i = lower ? n - 1 - t : t;
    T s = unit ? b[bb + i * brs]
               : LA_MUL(LA_CJ(a[IDX(ab, ars, acs, i, i)], conja), b[bb + i * brs]);
    if (lower)
      for (uint j = 0; j < i; j++)
        s += LA_MUL(LA_CJ(a[IDX(ab, ars, acs, i, j)], conja), b[bb + j * brs]);
    else
      for (uint j = i + 1; j < n; j++)
        s += LA_MUL(LA_CJ(a[IDX(ab, ars, acs, i, j)], conja), b[bb + j * brs]);
    b[bb + i * brs] = LA_MUL(alpha, s);
  }
}

kernel void gemm_acc(uint m, uint n, uint k, T alpha, global const T *a, ulong aoff, ulong ars,
                     ulong acs, global const T *b, ulong boff, ulong brs, ulong bcs, global T *c,
                     ulong coff, ulong crs, ulong ccs, uint tri)
{
  const uint j = (uint)get_global_id(0), i = (uint)get_global_id(1), tp = tri & 3u;
  if (i >= m || j >= n || (tp == 1 && j > i) || (tp == 2 && j < i))
    return;
  T s = (T)0;
  for (uint p = 0; p < k; p++)
    s += LA_MUL(LA_CJ(a[IDX(aoff, ars, acs, i, p)], tri & 4u),
                LA_CJ(b[IDX(boff, brs, bcs, p, j)], tri & 8u));
  c[IDX(coff, crs, ccs, i, j)] += LA_MUL(alpha, s);
}

/*
 * gemm_tile: 64 x 64 tiles of C per 16 x 16 work-group, each lane 4 x 4 results (rows ty + 16 r,
 * columns tx + 16 q), k in steps of 16 through local memory; the loads follow whichever stride
 * of A and B is 1 so that neighbouring lanes read neighbouring elements. No padding and no
 * copies: the views are read where they lie, which CLBlast's large-matrix GEMM cannot do (it
 * copies every view with an offset or a leading dimension into padded temporaries, C in and
 * out). tri as gemm_acc; tiles wholly outside the triangle return at once. The host always
 * launches 16 x 16 groups; no reqd_work_group_size: with it PoCL 5 failed an assertion
 * (pocl_release_dlhandle_cache) on cold runs of the suite.
 */
#define GT_M 64
#define GT_K 16

/* gt_acc (gemm_tile's) and gt_acc_v (chol_col's: volatile loads, the next step's issued early) */
#define GTV
#define GTN(f) f
#define GTP 0
#include "linalg_gtacc.clh"
#undef GTV
#undef GTN
#undef GTP
#define GTV volatile
#define GTN(f) f##_v
#define GTP 1
#include "linalg_gtacc.clh"
#undef GTV
#undef GTN
#undef GTP

kernel void
gemm_tile(uint m, uint n, uint k, T alpha, global const T *a, ulong aoff, ulong ars, ulong acs,
          global const T *b, ulong boff, ulong brs, ulong bcs, uint overwrite, global T *c,
          ulong coff, ulong crs, ulong ccs, uint tri, ulong az, ulong bz, ulong cz)
{
  local T As[GT_K][GT_M + 1];
  local T Bs[GT_K][GT_M + 1];
  const uint tx = get_local_id(0), ty = get_local_id(1);
  const ulong z = get_group_id(2);
  aoff += z * az;
  boff += z * bz;
  coff += z * cz;
  const uint i0 = get_group_id(1) * GT_M, j0 = get_group_id(0) * GT_M, tp = tri & 3u;
  if (i0 >= m || j0 >= n || (tp == 1 && j0 > i0 + GT_M - 1) || (tp == 2 && i0 > j0 + GT_M - 1))
    return;
  T acc[4][4];
  GT_ZERO(acc)
  gt_acc(a, aoff, ars, acs, tri & 4u, b, boff, brs, bcs, tri & 8u, m, n, k, i0, j0, As, Bs, acc);
#pragma unroll
  for (uint r = 0; r < 4; r++)
#pragma unroll
    for (uint q = 0; q < 4; q++) {
      const uint i = i0 + ty + 16 * r, j = j0 + tx + 16 * q;
      if (i < m && j < n && !(tp == 1 && j > i) && !(tp == 2 && j < i)) {
        const ulong x = coff + (ulong)i * crs + (ulong)j * ccs;
        c[x] = overwrite ? LA_MUL(alpha, acc[r][q]) : c[x] + LA_MUL(alpha, acc[r][q]);
      }
    }
}

/*
 * chol_col: what follows chol_inv at step j0 of the blocked Cholesky (jb <= 64 columns, in the
 * lower view (rs, cs) as chol_inv's), in one launch where it took a copy and two GEMMs:
 *   1. the block column L21 = A21 X^H (rows r = j0 + jb .. n; X = L11^-1 from chol_inv, stored
 *      as x with upper transposed), in place, 64 rows a work-group;
 *   2. the panel's later columns [r, pe): A(i, c) -= L21(i, :) L21(c, :)^H, for c up to the end
 *      of row i's 64-row tile (the rest is the other triangle).
 * Row tile t's L21 is computed once, by work-group (t, 0), which then also updates its rows'
 * first 64 later columns; groups (t, u) for 1 <= u <= t update column tile u of row tile t.
 * Both need the L21 of row tiles t and u, which their phase-1 groups publish by storing the
 * launch's stamp in sync[2 + t]. Groups take their roles from a ticket (sync[0], counted across
 * the launches of one call from tbase) in the order they start, phase-1 groups first, so a
 * group only waits for groups that started before it and wait for nothing before publishing:
 * it needs a started work-group to keep running (GPUs) or to run to completion (CPUs), not all
 * of them resident at once. Replaces a copy of A21 (the GEMM cannot overwrite what it reads
 * across work-groups) and two launches per step; on the H200 their gaps were most of a step.
 * Phase-1 groups also zero the other triangle in the step's rows, from column r on.
 * Within a panel (pe > r), group (0, 0), whose update finishes the next diagonal block, then
 * factors and inverts it as chol_inv would (X into x2off, info[ioff]) while the other groups
 * still update: the next step's chol_inv launch, and its wait for this whole launch, are gone.
 */
kernel void chol_col(global T *a, ulong aoff, ulong rs, ulong cs, uint n, uint j0, uint jb,
                     uint pe, global T *x, ulong xoff, ulong x2off, uint upper, global int *info,
                     ulong ioff, volatile global uint *sync, ulong soff, uint tbase, uint stamp)
{
  local T As[GT_K][GT_M + 1];
  local T Bs[GT_K][GT_M + 1];
  local T ccol[2 * CHOL_R * 16], crow[2 * CHOL_R * 16];
  local uint tk;
  sync += soff;
  const uint tx = get_local_id(0), ty = get_local_id(1), lid = ty * 16 + tx;
  if (lid == 0)
    tk = atomic_inc(sync) - tbase;
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint r = j0 + jb, m = n - r, nt = (m + GT_M - 1) / GT_M;
  const uint nu = pe > r ? (pe - r + GT_M - 1) / GT_M : 0;
  const ulong lb = aoff + r * rs + j0 * cs; /* L21's (0, 0) */
  uint t = tk, u = 0;
  T acc[4][4];
  if (t < nt) {
    GT_ZERO(acc)
    gt_acc_v(a, lb, rs, cs, 0, x, xoff, upper ? jb : 1, upper ? 1 : jb, 1, m, jb, jb, t * GT_M, 0,
             As, Bs, acc);
    /* the tile's rows are stored where the group read them: gt_acc's barriers fence local
     * memory only */
    barrier(CLK_GLOBAL_MEM_FENCE);
#pragma unroll
    for (uint r2 = 0; r2 < 4; r2++)
#pragma unroll
      for (uint q = 0; q < 4; q++) {
        const uint i = t * GT_M + ty + 16 * r2, j = tx + 16 * q;
        if (i < m && j < jb)
          a[lb + i * rs + j * cs] = acc[r2][q];
      }
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (lid == 0) {
      mem_fence(CLK_GLOBAL_MEM_FENCE);
      sync[2 + t] = stamp;
    }
    /* the other triangle of the step's rows, columns r + 64 t on: nothing writes there after
     * this step (the later updates are all below), so the result needs no tri_zero pass */
    for (uint e = lid; e < jb * GT_M; e += 256) {
      const uint i = cs == 1 ? e / GT_M : e % jb, c = t * GT_M + (cs == 1 ? e % GT_M : e / jb);
      if (c < m)
        a[aoff + (j0 + i) * rs + (r + c) * cs] = (T)0;
    }
    if (nu == 0)
      return;
  } else {
    /* (t, u) with 1 <= u < nu and u <= t, u-major (the host launches exactly these) */
    uint e = t - nt;
    for (u = 1; e >= nt - u; u++)
      e -= nt - u;
    t = u + e;
  }
  if (lid == 0) {
    while (sync[2 + t] != stamp || sync[2 + u] != stamp)
      ;
    mem_fence(CLK_GLOBAL_MEM_FENCE);
  }
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  GT_ZERO(acc)
  /* B(p, c) = conj(L21(c, p)): L21^H read along its rows */
  gt_acc_v(a, lb, rs, cs, 0, a, lb, cs, rs, 1, m, pe - r, jb, t * GT_M, u * GT_M, As, Bs, acc);
  /* tile (0, 0)'s rows of the next diagonal block go to chol_inv_blk in registers */
  const uint dn = t == 0 ? min(pe - r, (uint)GT_M) : 0;
#pragma unroll
  for (uint r2 = 0; r2 < 4; r2++)
#pragma unroll
    for (uint q = 0; q < 4; q++) {
      const uint i = t * GT_M + ty + 16 * r2, c = u * GT_M + tx + 16 * q;
      if (i < m && c < pe - r && i >= dn) {
        const ulong o = aoff + (r + i) * rs + (r + c) * cs;
        a[o] -= acc[r2][q];
      }
    }
  if (t == 0)
    chol_inv_blk(a, aoff + r * rs + r * cs, dn, rs, cs, info, ioff, r, x, x2off, upper, ccol,
                 crow, lid, 4u, acc);
}
#undef GT_ZERO

#if KILN_IS_COMPLEX
/*
 * cplx_expand: the real form of a complex product's B, so that a complex GEMM runs on the real
 * large kernel: E (2k x 2n RT, row-major) holds for each B(p, j) = br + i bi the block
 * [[br, bi], [-bi, br]] at rows 2p, 2p + 1 and columns 2j, 2j + 1; then the real view of A
 * (m x 2k, each row's re and im interleaved) times E is the real view of A B. cj & 8 takes
 * conj(B). Global (contiguous index, the other): dimension 0 runs along whichever of B's
 * strides is 1.
 */
kernel void cplx_expand(global const T *b, ulong boff, ulong brs, ulong bcs, uint k, uint n,
                        uint cj, global RT *e)
{
  const int pfast = brs == 1 && bcs != 1;
  const uint g0 = (uint)get_global_id(0), g1 = (uint)get_global_id(1);
  const uint p = pfast ? g0 : g1, j = pfast ? g1 : g0;
  if (p >= k || j >= n)
    return;
  const T v = b[boff + (ulong)p * brs + (ulong)j * bcs];
  const RT br = v.x, bi = cj & 8u ? -v.y : v.y;
  global RT *r0 = e + 2 * (ulong)p * (2 * (ulong)n) + 2 * (ulong)j;
  r0[0] = br;
  r0[1] = bi;
  r0[2 * (ulong)n] = -bi;
  r0[2 * (ulong)n + 1] = br;
}
#endif

kernel void lu_det(global const T *lu, ulong off, ulong stride, uint n, global const int *piv,
                   ulong poff, ulong pstride, uint mode, global T *sign, ulong soff,
                   global RT *val, ulong voff, ulong nbatch)
{
  const ulong b = get_global_id(0);
  if (b >= nbatch)
    return;
  global const T *A = lu + off + b * stride;
  global const int *P = piv + poff + b * pstride;
  T sg = KILN_ONE, prod = KILN_ONE;
  RT acc = (RT)0;
  for (uint j = 0; j < n; j++) {
    T u = A[(ulong)j * n + j];
    if (P[j] != (int)j + 1)
      sg = -sg;
    if (mode) {
#if KILN_IS_COMPLEX
      /* torch's complex sign: the product of u / |u|, 0 once a u is 0 */
      const RT au = LA_ABS(u);
      sg = au == (RT)0 ? KILN_ZERO : LA_MUL(sg, u / au);
      acc += log(au);
#else
      sg = u > (T)0 ? sg : u < (T)0 ? -sg : u == (T)0 ? (T)0 : u;
      acc += log(fabs(u));
#endif
    } else {
      prod = LA_MUL(prod, u);
    }
  }
  /* det (mode 0) goes to sign, which the host points at the result */
  if (mode) {
    sign[soff + b] = sg;
    val[voff + b] = acc;
  } else {
    sign[soff + b] = LA_MUL(sg, prod);
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
        r > c ? A[(ulong)r * n + c] : r == c ? KILN_ONE : KILN_ZERO;
  if (r < k && c < n)
    U[uoff + b * k * n + (ulong)r * n + c] = c >= r ? A[(ulong)r * n + c] : KILN_ZERO;
  if (c < m && r < m)
    P[poff + b * m * m + (ulong)r * m + c] =
        perm[qoff + b * m + c] == (int)r ? KILN_ONE : KILN_ZERO;
}

kernel void eye(global T *x, ulong off, ulong stride, uint n)
{
  const ulong e = get_global_id(0), b = get_global_id(1);
  if (e >= (ulong)n * n)
    return;
  x[off + b * stride + e] = e / n == e % n ? KILN_ONE : KILN_ZERO;
}

kernel void norm1(global const T *a, ulong aoff, ulong astride, uint n, global RT *out,
                  ulong ooff, local RT *sh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const ulong b = get_group_id(0);
  global const T *A = a + aoff + b * astride;
  RT best = (RT)0;
  for (uint j = lid; j < n; j += lsz) {
    RT s = (RT)0;
    for (uint i = 0; i < n; i++)
      s += LA_ABS(A[(ulong)i * n + j]);
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
