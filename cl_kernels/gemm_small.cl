/*
 * kiln's own GEMM for problems too small to pay CLBlast's launch overhead
 * (and the whole GEMM/GEMV/SYRK family when kiln is built without CLBlast).
 *
 * Build options: see common.cl (-DT=float|double, -DKILN_DT_F32/F64=1), plus
 *   -DKILN_GEMM_TILE=<n>  tile edge; the launch uses an n x n work-group, so
 *                         n*n must not exceed the device's work-group limit.
 *                         Tunable (the host picks 16, or 8 on small devices).
 * Kernels:
 *   gemm_small(m, n, k, alpha, beta,
 *              a, aoff, lda, abatch, ta,
 *              b, boff, ldb, bbatch, tb,
 *              c, coff, ldc, cbatch, tri)
 *     Row-major C[i][j] = alpha * sum_p op(A)[i][p] op(B)[p][j] + beta * C[i][j] for
 *     every matrix of a batch. op(A)[i][p] is A[i*lda + p] (ta == 0) or
 *     A[p*lda + i] (ta != 0); likewise B. Offsets, leading dimensions and batch
 *     strides are in elements; a batch stride of 0 repeats the operand.
 *     beta == 0 never reads C (a NaN there does not propagate, as BLAS requires).
 *     tri: 0 writes every element, 1 only j >= i (upper), 2 only j <= i (lower).
 *     Launch: global (ceil(n/TILE)*TILE, ceil(m/TILE)*TILE, batch), local
 *     (TILE, TILE, 1): dimension 0 runs over columns so that neighbouring
 *     work-items touch neighbouring addresses of C and of row-major B.
 *   sym_fill(n, c, coff, ldc, cbatch, tri)
 *     Mirrors the triangle named by tri (1 upper, 2 lower) of each n x n matrix
 *     into the other one. Launch: global (>= n, >= n, batch), any local size.
 * Level-1 kernels, used when CLBlast is absent (or disabled with
 * KILN_DEBUG_NO_CLBLAST); 1-D, grid-stride, any global size unless noted:
 *   blas_axpy(n, alpha, x, xoff, y, yoff)   y[i] += alpha * x[i]
 *   blas_scal(n, alpha, x, xoff)            x[i] *= alpha
 *   blas_dot(n, x, xoff, y, yoff, out, outoff)
 *     out[0] = sum x[i] y[i]. Launch: exactly one work-group whose size is a
 *     power of two no larger than KILN_DOT_WG (a -D option, default 256).
 */
#include "common.cl"

/* `kiln cache warm` builds every source for every dtype: only f32/f64 get kernels. */
#if KILN_IS_FLOAT

#ifndef KILN_GEMM_TILE
#define KILN_GEMM_TILE 16
#endif
#define TILE KILN_GEMM_TILE

inline T
load_op(global const T *x, ulong row, ulong col, ulong rows, ulong cols, ulong ld, uint trans)
{
  /* (row, col) index op(X), which is rows x cols; the stored X is its transpose when trans. */
  if (row >= rows || col >= cols)
    return (T)0;
  return trans ? x[col * ld + row] : x[row * ld + col];
}

kernel void
gemm_small(ulong m, ulong n, ulong k, T alpha, T beta,
           global const T *a, ulong aoff, ulong lda, ulong abatch, uint ta,
           global const T *b, ulong boff, ulong ldb, ulong bbatch, uint tb,
           global T *c, ulong coff, ulong ldc, ulong cbatch, uint tri)
{
  local T as[TILE][TILE];
  local T bs[TILE][TILE + 1];
  const ulong lx = get_local_id(0), ly = get_local_id(1);
  const ulong col = get_group_id(0) * TILE + lx;
  const ulong row = get_group_id(1) * TILE + ly;
  const ulong batch = get_global_id(2);
  global const T *ab = a + aoff + batch * abatch;
  global const T *bb = b + boff + batch * bbatch;
  global T *cb = c + coff + batch * cbatch;

  T acc = (T)0;
  for (ulong p0 = 0; p0 < k; p0 += TILE) {
    /* Work-item (lx, ly) loads op(A)[row][p0+lx] and op(B)[p0+ly][col]. */
    as[ly][lx] = load_op(ab, row, p0 + lx, m, k, lda, ta);
    bs[ly][lx] = load_op(bb, p0 + ly, col, k, n, ldb, tb);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int p = 0; p < TILE; p++)
      acc += as[ly][p] * bs[p][lx];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row >= m || col >= n)
    return;
  if ((tri == 1 && col < row) || (tri == 2 && col > row))
    return;
  global T *dst = cb + row * ldc + col;
  T r = alpha * acc;
  if (beta != (T)0)
    r += beta * *dst;
  *dst = r;
}

kernel void
sym_fill(ulong n, global T *c, ulong coff, ulong ldc, ulong cbatch, uint tri)
{
  const ulong col = get_global_id(0), row = get_global_id(1);
  if (row >= n || col >= n)
    return;
  global T *cb = c + coff + get_global_id(2) * cbatch;
  /* Write the element outside the computed triangle from its mirror inside it. */
  if ((tri == 1 && row > col) || (tri == 2 && row < col))
    cb[row * ldc + col] = cb[col * ldc + row];
}

kernel void
blas_axpy(ulong n, T alpha, global const T *x, ulong xoff, global T *y, ulong yoff)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    y[yoff + i] += alpha * x[xoff + i];
}

kernel void
blas_scal(ulong n, T alpha, global T *x, ulong xoff)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    x[xoff + i] *= alpha;
}

#ifndef KILN_DOT_WG
#define KILN_DOT_WG 256
#endif

kernel void
blas_dot(ulong n, global const T *x, ulong xoff, global const T *y, ulong yoff, global T *out,
         ulong outoff)
{
  local T part[KILN_DOT_WG];
  const size_t l = get_local_id(0), ls = get_local_size(0);
  T acc = (T)0;
  for (ulong i = l; i < n; i += ls)
    acc += x[xoff + i] * y[yoff + i];
  part[l] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t s = ls / 2; s > 0; s /= 2) {
    if (l < s)
      part[l] += part[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0)
    out[outoff] = part[0];
}

#endif /* KILN_IS_FLOAT */
