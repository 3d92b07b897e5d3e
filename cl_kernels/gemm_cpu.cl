/*
 * kiln's GEMM for CPU devices (lib/ops/blas.c, route KILN__GEMM_ROUTE_LARGE on a device that
 * is not a GPU). gemm_large.cl stages tiles in local memory for a GPU's work-groups; PoCL runs
 * a group's work-items one after another and keeps local memory in ordinary memory, so there
 * each work-item instead holds a whole block of C in vector registers and reads A and B where
 * they lie. On PoCL here (2 cores with AVX-512) f32 1024^3 runs at about 440 GFLOP/s and f64
 * at 210, where CLBlast's kernels reach 20-40 (docs/blas_fft.md, "The CPU GEMM kernel").
 *
 * Build options (set by lib/ops/blas_route.c, blas_build_options, from its cpu_blocks table):
 *   -DGC_VW=<v>               vector width (16 for f32, 8 for f64: 64 bytes)
 *   -DGC_MR=<r> -DGC_NR=<c>   op(B) not transposed: the block of C per work-item, r rows by c
 *                             columns, c a multiple of GC_VW
 *   -DGC_DM=<r> -DGC_DN=<c>   op(B) transposed: the block of the dot form
 *
 *   gemm_cpu(m, n, k, alpha, beta, a, aoff, lda, abatch, ta, b, boff, ldb, bbatch, tb,
 *            c, coff, ldc, cbatch, tri)
 *     gemm_large's arguments and result (row-major C = alpha op(A) op(B) + beta C per matrix
 *     of a batch, beta == 0 never reads C, k > 0, tri as there), except that ta and tb are not
 *     both set (the host packs B^T as stored first, gemm_cpu_pack_bt below).
 *     tb == 0: each p adds A's column p (GC_MR values, each broadcast) times B's row p (GC_NR
 *       contiguous values, GC_NR / GC_VW vectors) into GC_MR x GC_NR / GC_VW vector
 *       accumulators. Launch: global (ceil(m / GC_MR), ceil(n / GC_NR), batch).
 *     tb == 1: op(B)'s columns are rows of B, contiguous along k as A's rows are: each
 *       accumulator is a GC_VW-wide partial dot product of a row of A and a row of B, summed
 *       across its lanes at the end (the k % GC_VW last terms added one by one). Launch:
 *       global (ceil(m / GC_DM), ceil(n / GC_DN), batch).
 *     Any local size; groups along m share their columns of op(B), which then stay in the
 *     core's cache (PoCL, f32 2016^3: 110 GFLOP/s with groups of 8 along m, 56 along n,
 *     bench/pocl_proto/gemm_group_order.py 2016).
 *     Rows of A past m and columns of B past n are read as row m - 1 and column n - 1 (in
 *     bounds), and their results are not stored.
 */
#include "common.cl"
#include "tile8.clh"

#if defined(KILN_DT_F32) || defined(KILN_DT_F64)

#define GC_CAT_(a, b) a##b
#define GC_CAT(a, b) GC_CAT_(a, b)
#define GC_VT GC_CAT(T, GC_VW)
#define GC_LOAD GC_CAT(vload, GC_VW)
#define GC_STORE GC_CAT(vstore, GC_VW)
#define GC_NV (GC_NR / GC_VW)
#define T8 GC_CAT(T, 8)
#define GC_PUT8(v, q) vstore8((v), 0, (q))
/* Every loop over the block fully unrolled, so that the accumulators live in registers:
 * without it PoCL kept them in a private array in memory (12 x 32 blocks, f32 1536^3: 150
 * GFLOP/s, 407 unrolled; f64 61 and 158; bench/pocl_proto/gemm_cpu_blocks.py 1536 f32
 * --no-unroll 12x32 and without --no-unroll). */
#ifndef GC_UNROLL /* bench/pocl_proto/gemm_cpu_blocks.py --no-unroll defines it empty */
#define GC_UNROLL _Pragma("unroll")
#endif

/* Whether C's element (row, col) is written under tri's triangle (gemm_large.cl's rule). */
inline int
gc_keep(ulong row, ulong col, uint tp, uint cp)
{
  return !(tp == 1u && (col >> cp) > row) && !(tp == 2u && (col >> cp) < row);
}

/* Whether a block of C, rows [i0, i0 + r) and columns [j0, j0 + c), lies wholly on the side
 * of the triangle that is not written. */
inline int
gc_skip(ulong i0, ulong j0, ulong r, ulong c, uint tp, uint cp)
{
  return (tp == 1u && (j0 >> cp) > i0 + r - 1) || (tp == 2u && ((j0 + c - 1) >> cp) < i0);
}

/* C[row, col] = alpha v + beta C[row, col]; beta == 0 does not read C. */
inline void
gc_put(global T *cb, ulong ldc, ulong row, ulong col, T v, T alpha, T beta)
{
  global T *q = cb + row * ldc + col;
  T w = alpha * v;
  if (beta != (T)0)
    w += beta * *q;
  *q = w;
}

kernel void
gemm_cpu(ulong m, ulong n, ulong k, T alpha, T beta, global const T *a, ulong aoff, ulong lda,
         ulong abatch, uint ta, global const T *b, ulong boff, ulong ldb, ulong bbatch, uint tb,
         global T *c, ulong coff, ulong ldc, ulong cbatch, uint tri)
{
  const uint tp = tri & 3u, cp = tri >> 2 & 1u;
  const ulong z = get_global_id(2);
  global const T *ab = a + aoff + z * abatch;
  global const T *bb = b + boff + z * bbatch;
  global T *cb = c + coff + z * cbatch;
  if (!tb) {
    const ulong i0 = get_global_id(0) * GC_MR, j0 = get_global_id(1) * GC_NR;
    if (i0 >= m || j0 >= n || gc_skip(i0, j0, GC_MR, GC_NR, tp, cp))
      return;
    /* element (i, p) of op(A) is ab[ao[i - i0] + p * as] */
    ulong ao[GC_MR];
    GC_UNROLL
    for (uint r = 0; r < GC_MR; r++) {
      const ulong i = min(i0 + r, m - 1);
      ao[r] = ta ? i : i * lda;
    }
    const ulong as = ta ? lda : 1;
    const int full = j0 + GC_NR <= n;
    GC_VT acc[GC_MR][GC_NV];
    GC_UNROLL
    for (uint r = 0; r < GC_MR; r++)
      GC_UNROLL
      for (uint v = 0; v < GC_NV; v++)
        acc[r][v] = (GC_VT)0;
    for (ulong p = 0; p < k; p++) {
      global const T *br = bb + p * ldb + j0;
      GC_VT bv[GC_NV];
      if (full) {
        GC_UNROLL
        for (uint v = 0; v < GC_NV; v++)
          bv[v] = GC_LOAD(v, br);
      } else {
        T e[GC_NR];
        for (uint j = 0; j < GC_NR; j++)
          e[j] = br[min((ulong)j, n - 1 - j0)];
        GC_UNROLL
        for (uint v = 0; v < GC_NV; v++)
          bv[v] = GC_LOAD(v, e);
      }
      GC_UNROLL
      for (uint r = 0; r < GC_MR; r++) {
        const GC_VT av = (GC_VT)(ab[ao[r] + p * as]);
        GC_UNROLL
        for (uint v = 0; v < GC_NV; v++)
          acc[r][v] = fma(av, bv[v], acc[r][v]);
      }
    }
    GC_UNROLL
    for (uint r = 0; r < GC_MR; r++) {
      const ulong row = i0 + r;
      if (row >= m)
        break;
      global T *cr = cb + row * ldc + j0;
      if (full && tp == 0u) {
        GC_UNROLL
        for (uint v = 0; v < GC_NV; v++) {
          GC_VT w = alpha * acc[r][v];
          if (beta != (T)0)
            w += beta * GC_LOAD(v, cr);
          GC_STORE(w, v, cr);
        }
        continue;
      }
      T e[GC_NR];
      GC_UNROLL
      for (uint v = 0; v < GC_NV; v++)
        GC_STORE(acc[r][v], v, e);
      for (uint j = 0; j < GC_NR && j0 + j < n; j++)
        if (gc_keep(row, j0 + j, tp, cp))
          gc_put(cb, ldc, row, j0 + j, e[j], alpha, beta);
    }
    return;
  }
  if (ta)
    return; /* not launched: the host runs op(A)^T op(B)^T elsewhere */
  const ulong i0 = get_global_id(0) * GC_DM, j0 = get_global_id(1) * GC_DN;
  if (i0 >= m || j0 >= n || gc_skip(i0, j0, GC_DM, GC_DN, tp, cp))
    return;
  global const T *ar[GC_DM];
  global const T *brow[GC_DN];
  GC_UNROLL
  for (uint r = 0; r < GC_DM; r++)
    ar[r] = ab + min(i0 + r, m - 1) * lda;
  GC_UNROLL
  for (uint s = 0; s < GC_DN; s++)
    brow[s] = bb + min(j0 + s, n - 1) * ldb;
  GC_VT acc[GC_DM][GC_DN];
  GC_UNROLL
  for (uint r = 0; r < GC_DM; r++)
    GC_UNROLL
    for (uint s = 0; s < GC_DN; s++)
      acc[r][s] = (GC_VT)0;
  ulong p = 0;
  for (; p + GC_VW <= k; p += GC_VW) {
    GC_VT av[GC_DM], bv[GC_DN];
    GC_UNROLL
    for (uint r = 0; r < GC_DM; r++)
      av[r] = GC_LOAD(0, ar[r] + p);
    GC_UNROLL
    for (uint s = 0; s < GC_DN; s++)
      bv[s] = GC_LOAD(0, brow[s] + p);
    GC_UNROLL
    for (uint r = 0; r < GC_DM; r++)
      GC_UNROLL
      for (uint s = 0; s < GC_DN; s++)
        acc[r][s] = fma(av[r], bv[s], acc[r][s]);
  }
  GC_UNROLL
  for (uint r = 0; r < GC_DM; r++) {
    const ulong row = i0 + r;
    if (row >= m)
      break;
    GC_UNROLL
    for (uint s = 0; s < GC_DN; s++) {
      if (j0 + s >= n)
        break;
      T e[GC_VW], sum = (T)0;
      GC_STORE(acc[r][s], 0, e);
      for (uint l = 0; l < GC_VW; l++)
        sum += e[l];
      for (ulong q = p; q < k; q++)
        sum = fma(ar[r][q], brow[s][q], sum);
      if (gc_keep(row, j0 + s, tp, cp))
        gc_put(cb, ldc, row, j0 + s, sum, alpha, beta);
    }
  }
}

/*
 * gemm_cpu_pack_bt(b, boff, ldb, bbatch, k, n, out, ooff): out[ooff + (z k + p) n + j] =
 * b[boff + z bbatch + j ldb + p] for p < k, j < n: op(B) = B^T written as stored, k x n
 * row-major per matrix, so that a transposed B runs on the broadcast form. One work-item per
 * 8 x 64 block (8 rows of B, 64 along k), moved as 8 x 8 register transposes (elements past
 * the edges one by one).
 * Launch: global (ceil(n / 8), ceil(k / 64), batch).
 */
kernel void
gemm_cpu_pack_bt(global const T *b, ulong boff, ulong ldb, ulong bbatch, ulong k, ulong n,
                 global T *out, ulong ooff)
{
  const ulong j0 = get_global_id(0) * 8, p0 = get_global_id(1) * 64, z = get_global_id(2);
  if (j0 >= n || p0 >= k)
    return;
  global const T *bz = b + boff + z * bbatch;
  global T *oz = out + ooff + z * k * n;
  const ulong p1 = min(p0 + 64, k);
  for (ulong p = p0; p < p1; p += 8) {
    if (j0 + 8 <= n && p + 8 <= p1) {
      TILE8_LOAD(T8, r, bz + j0 * ldb + p, ldb);
      TILE8_STORE(T8, r, oz + p * n + j0, n, GC_PUT8);
      continue;
    }
    for (ulong pp = p; pp < min(p + 8, p1); pp++)
      for (ulong j = j0; j < min(j0 + 8, n); j++)
        oz[pp * n + j] = bz[j * ldb + pp];
  }
}

#endif /* KILN_DT_F32 || KILN_DT_F64 */
