/*
 * kiln's own GEMM: the small-problem kernel (problems too small to pay
 * CLBlast's launch overhead, and the whole GEMM/GEMV/SYRK family when kiln is
 * built without CLBlast), and the tiled kernel that runs every large f16/bf16
 * product (CLBlast's half routines accumulate in half; kiln's accumulate in f32).
 *
 * Build options: see common.cl (-DT=float|double|float2|double2, one -DKILN_DT_<x>=1;
 * f16/bf16 compute in float and are stored as ST), plus
 *   -DKILN_GEMM_TILE=<n>  gemm_small's tile edge; the launch uses an n x n work-group,
 *                         so n*n must not exceed the device's work-group limit.
 *                         Tunable (the host picks 16, or 8 on small devices).
 *   -DKILN_GEMM_TWG=<w>   gemm_tiled's work-group edge (w x w work-items, default 16)
 *   -DKILN_GEMM_TRB=<r>   gemm_tiled's register block: each work-item computes r x r
 *                         elements of C, so a work-group covers (w*r) x (w*r) (default 8)
 * Kernels (dtypes f32, f64, f16, bf16, c64, c128 unless noted):
 *   gemm_small(m, n, k, alpha, beta,
 *              a, aoff, lda, abatch, ta,
 *              b, boff, ldb, bbatch, tb,
 *              c, coff, ldc, cbatch, tri, cf32)
 *     Row-major C[i][j] = alpha * sum_p op(A)[i][p] op(B)[p][j] + beta * C[i][j] for
 *     every matrix of a batch. op(A)[i][p] is A[i*lda + p] (ta == 0), A[p*lda + i]
 *     (ta == 1) or conj(A[p*lda + i]) (ta == 2, complex only; real types treat 2 as
 *     1); likewise B. Offsets, leading dimensions and batch strides are in elements
 *     (of C's own type for c); a batch stride of 0 repeats the operand. alpha and
 *     beta are T (float for f16/bf16). beta == 0 never reads C (a NaN there does
 *     not propagate, as BLAS requires).
 *     tri: 0 writes every element, 1 only j >= i (upper), 2 only j <= i (lower).
 *     cf32: f16/bf16 only, C is f32 instead of ST (ignored for other dtypes).
 *     Sums accumulate in T: f32 for f16/bf16.
 *     Launch: global (ceil(n/TILE)*TILE, ceil(m/TILE)*TILE, batch), local
 *     (TILE, TILE, 1): dimension 0 runs over columns so that neighbouring
 *     work-items touch neighbouring addresses of C and of row-major B.
 *   gemm_tiled(same arguments without tri), f16/bf16 only
 *     The same product: (w*r) x (w*r) blocks of C per work-group, K in steps of
 *     16, operands converted to f32 in local memory with 4-wide loads
 *     (vload_half4 / ushort4) along whichever axis is contiguous, r x r f32
 *     accumulators per work-item. Any m, n, k (edges are masked).
 *     Launch: global (ceil(n/(w*r))*w, ceil(m/(w*r))*w, batch), local (w, w, 1).
 *   cgemm_b2(k, n, alpha, b, boff, ldb, bbatch, tb, b2, b2off), c64/c128 only
 *     The B operand of a complex GEMM computed as one real GEMM (lib/ops/blas.c):
 *     with v = alpha * op(B)[p][q] (op(B) is k x n, read as gemm_small reads it),
 *     b2 holds per batch matrix 2k x n complex elements (a real 2k x 2n matrix)
 *     b2[2p][q] = (Re v, Im v), b2[2p+1][q] = (-Im v, Re v), batch matrix i at
 *     b2 + b2off + i*2*k*n. Then [Re a, Im a] . [row 2p; row 2p+1] = a * v as a
 *     real pair. Launch: global (>= n, >= k, batch), any local size.
 *   sym_fill(n, c, coff, ldc, cbatch, tri)
 *     Mirrors the triangle named by tri (1 upper, 2 lower) of each n x n matrix
 *     into the other one. Launch: global (>= n, >= n, batch), any local size.
 * Level-1 kernels, used when CLBlast is absent (or disabled with
 * KILN_DEBUG_NO_CLBLAST), and for f16/bf16/c64/c128; 1-D, grid-stride, any
 * global size unless noted (alpha is T):
 *   blas_axpy(n, alpha, x, xoff, y, yoff)   y[i] += alpha * x[i]
 *   blas_scal(n, alpha, x, xoff)            x[i] *= alpha
 *   blas_dot(n, x, xoff, y, yoff, out, outoff)
 *     out[0] = sum x[i] y[i] (complex: unconjugated). Launch: exactly one
 *     work-group whose size is a power of two no larger than KILN_DOT_WG (a -D
 *     option, default 256).
 */
#include "common.cl"

/* `kiln cache warm` builds the source for every dtype of its mask; only floats get kernels. */
#if KILN_IS_FLOAT || KILN_IS_COMPLEX

#ifndef KILN_GEMM_TILE
#define KILN_GEMM_TILE 16
#endif
#define TILE KILN_GEMM_TILE

#if KILN_IS_COMPLEX
#define MUL(a, b) ((T)((a).x * (b).x - (a).y * (b).y, (a).x * (b).y + (a).y * (b).x))
#define NONZERO(v) ((v).x != (RT)0 || (v).y != (RT)0)
#else
#define MUL(a, b) ((a) * (b))
#define NONZERO(v) ((v) != (T)0)
#endif

/* C's element i as T: f16/bf16 products may write f32 (cf32). */
#if KILN_IS_HALF
#define C_LOAD(c, i, cf32) ((cf32) ? ((global float *)(c))[i] : KILN_LOAD(c, i))
#define C_STORE(c, i, v, cf32)          \
  do {                                  \
    if (cf32)                           \
      ((global float *)(c))[i] = (v);   \
    else                                \
      KILN_STORE(c, i, v);              \
  } while (0)
#else
#define C_LOAD(c, i, cf32) ((c)[i])
#define C_STORE(c, i, v, cf32) ((c)[i] = (v))
#endif

/* c[i] = alpha * acc + beta * c[i]; beta == 0 never reads c. */
inline void
store_c(global ST *c, ulong i, T acc, T alpha, T beta, uint cf32)
{
  T r = MUL(alpha, acc);
  if (NONZERO(beta))
    r += MUL(beta, C_LOAD(c, i, cf32));
  C_STORE(c, i, r, cf32);
}

inline T
load_op(global const ST *x, ulong row, ulong col, ulong rows, ulong cols, ulong ld, uint trans)
{
  /* (row, col) index op(X), which is rows x cols; the stored X is its transpose when trans. */
  if (row >= rows || col >= cols)
    return (T)0;
  T v = trans ? KILN_LOAD(x, col * ld + row) : KILN_LOAD(x, row * ld + col);
#if KILN_IS_COMPLEX
  if (trans == 2)
    v.y = -v.y;
#endif
  return v;
}

kernel void
gemm_small(ulong m, ulong n, ulong k, T alpha, T beta,
           global const ST *a, ulong aoff, ulong lda, ulong abatch, uint ta,
           global const ST *b, ulong boff, ulong ldb, ulong bbatch, uint tb,
           global ST *c, ulong coff, ulong ldc, ulong cbatch, uint tri, uint cf32)
{
  local T as[TILE][TILE];
  local T bs[TILE][TILE + 1];
  const ulong lx = get_local_id(0), ly = get_local_id(1);
  const ulong col = get_group_id(0) * TILE + lx;
  const ulong row = get_group_id(1) * TILE + ly;
  const ulong batch = get_global_id(2);
  global const ST *ab = a + aoff + batch * abatch;
  global const ST *bb = b + boff + batch * bbatch;

  T acc = (T)0;
  for (ulong p0 = 0; p0 < k; p0 += TILE) {
    /* Work-item (lx, ly) loads op(A)[row][p0+lx] and op(B)[p0+ly][col]. */
    as[ly][lx] = load_op(ab, row, p0 + lx, m, k, lda, ta);
    bs[ly][lx] = load_op(bb, p0 + ly, col, k, n, ldb, tb);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int p = 0; p < TILE; p++)
      acc += MUL(as[ly][p], bs[p][lx]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row >= m || col >= n)
    return;
  if ((tri == 1 && col < row) || (tri == 2 && col > row))
    return;
  store_c(c, coff + batch * cbatch + row * ldc + col, acc, alpha, beta, cf32);
}

#if KILN_IS_HALF

#ifndef KILN_GEMM_TWG
#define KILN_GEMM_TWG 16
#endif
#ifndef KILN_GEMM_TRB
#define KILN_GEMM_TRB 8
#endif
#define TW KILN_GEMM_TWG
#define RB KILN_GEMM_TRB
#define BX (TW * RB) /* block edge along m and n */
#define BK 16        /* block depth along k */

/* Four consecutive elements from p + i as float4: 2-byte alignment is all they need. */
#if defined(KILN_DT_F16)
#define LOAD4(p, i) vload_half4(0, (p) + (i))
#else
#define LOAD4(p, i) as_float4(convert_uint4(vload4(0, (p) + (i))) << 16)
#endif

/*
 * Fills tile[p][i] (BK x BX floats) with element (x0 + i, p0 + p) of an operand
 * that is xlen x klen: x[(x0+i)*ld + p0+p] when along_k (k is the contiguous
 * axis), else x[(p0+p)*ld + x0+i]. Out of range is 0. Work-items take 4-wide
 * chunks along the contiguous axis; a chunk crossing an edge loads one by one.
 */
inline void
load_tile(local float *tile, global const ST *x, ulong ld, uint along_k, ulong x0, ulong p0,
          ulong xlen, ulong klen, uint t)
{
  for (uint ch = t; ch < BK * BX / 4; ch += TW * TW) {
    uint i, p;
    ulong gi, gp, cont, clen, base;
    if (along_k) {
      i = ch / (BK / 4);
      p = ch % (BK / 4) * 4;
    } else {
      p = ch / (BX / 4);
      i = ch % (BX / 4) * 4;
    }
    gi = x0 + i;
    gp = p0 + p;
    /* base: the chunk's first element; cont/clen: its position on and the length of the
     * contiguous axis, other: the other axis. */
    ulong other, olen;
    if (along_k) {
      base = gi * ld + gp;
      cont = gp;
      clen = klen;
      other = gi;
      olen = xlen;
    } else {
      base = gp * ld + gi;
      cont = gi;
      clen = xlen;
      other = gp;
      olen = klen;
    }
    float4 v = (float4)0.0f;
    if (other < olen) {
      if (cont + 4 <= clen) {
        v = LOAD4(x, base);
      } else {
        float e[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (uint q = 0; q < 4; q++)
          if (cont + q < clen)
            e[q] = KILN_LOAD(x, base + q);
        v = (float4)(e[0], e[1], e[2], e[3]);
      }
    }
    if (along_k) {
      tile[(p + 0) * BX + i] = v.x;
      tile[(p + 1) * BX + i] = v.y;
      tile[(p + 2) * BX + i] = v.z;
      tile[(p + 3) * BX + i] = v.w;
    } else {
      vstore4(v, 0, tile + p * BX + i);
    }
  }
}

kernel __attribute__((reqd_work_group_size(TW, TW, 1))) void
gemm_tiled(ulong m, ulong n, ulong k, float alpha, float beta,
           global const ST *a, ulong aoff, ulong lda, ulong abatch, uint ta,
           global const ST *b, ulong boff, ulong ldb, ulong bbatch, uint tb,
           global ST *c, ulong coff, ulong ldc, ulong cbatch, uint cf32)
{
  local float as[BK * BX]; /* as[p][i] = op(A)[row0 + i][p0 + p] */
  local float bs[BK * BX]; /* bs[p][j] = op(B)[p0 + p][col0 + j] */
  const uint tx = get_local_id(0), ty = get_local_id(1), t = ty * TW + tx;
  const ulong col0 = get_group_id(0) * BX, row0 = get_group_id(1) * BX;
  const ulong batch = get_global_id(2);
  global const ST *ab = a + aoff + batch * abatch;
  global const ST *bb = b + boff + batch * bbatch;

  /* Work-item (tx, ty) owns rows ty + TW*i and columns tx + TW*j of the block: neighbours
   * read neighbouring local words and write neighbouring columns of C. */
  float acc[RB][RB];
  for (int i = 0; i < RB; i++)
    for (int j = 0; j < RB; j++)
      acc[i][j] = 0.0f;
  for (ulong p0 = 0; p0 < k; p0 += BK) {
    load_tile(as, ab, lda, !ta, row0, p0, m, k, t);
    load_tile(bs, bb, ldb, tb, col0, p0, n, k, t);
    barrier(CLK_LOCAL_MEM_FENCE);
    /* No #pragma unroll: constant trip counts unroll anyway on GPUs, and the hint made PoCL's
     * work-group loops 3x slower (2.5 -> 0.85 GFLOP/s at 1024^3). */
    for (int p = 0; p < BK; p++) {
      float av[RB], bv[RB];
      for (int i = 0; i < RB; i++)
        av[i] = as[p * BX + ty + TW * i];
      for (int j = 0; j < RB; j++)
        bv[j] = bs[p * BX + tx + TW * j];
      for (int i = 0; i < RB; i++)
        for (int j = 0; j < RB; j++)
          acc[i][j] = fma(av[i], bv[j], acc[i][j]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int i = 0; i < RB; i++) {
    ulong row = row0 + ty + TW * i;
    if (row >= m)
      break;
    for (int j = 0; j < RB; j++) {
      ulong col = col0 + tx + TW * j;
      if (col < n)
        store_c(c, coff + batch * cbatch + row * ldc + col, acc[i][j], alpha, beta, cf32);
    }
  }
}

#endif /* KILN_IS_HALF */

kernel void
sym_fill(ulong n, global ST *c, ulong coff, ulong ldc, ulong cbatch, uint tri)
{
  const ulong col = get_global_id(0), row = get_global_id(1);
  if (row >= n || col >= n)
    return;
  global ST *cb = c + coff + get_global_id(2) * cbatch;
  /* Write the element outside the computed triangle from its mirror inside it (f16 and bf16
   * round-trip exactly through float). */
  if ((tri == 1 && row > col) || (tri == 2 && row < col))
    KILN_STORE(cb, row * ldc + col, KILN_LOAD(cb, col * ldc + row));
}

#if KILN_IS_COMPLEX
kernel void
cgemm_b2(ulong k, ulong n, T alpha, global const ST *b, ulong boff, ulong ldb, ulong bbatch,
         uint tb, global ST *b2, ulong b2off)
{
  const ulong q = get_global_id(0), p = get_global_id(1), batch = get_global_id(2);
  if (q >= n || p >= k)
    return;
  T v = MUL(alpha, load_op(b + boff + batch * bbatch, p, q, k, n, ldb, tb));
  global ST *o = b2 + b2off + batch * 2 * k * n + 2 * p * n + q;
  o[0] = v;
  o[n] = (T)(-v.y, v.x);
}
#endif

kernel void
blas_axpy(ulong n, T alpha, global const ST *x, ulong xoff, global ST *y, ulong yoff)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    KILN_STORE(y, yoff + i, KILN_LOAD(y, yoff + i) + MUL(alpha, KILN_LOAD(x, xoff + i)));
}

kernel void
blas_scal(ulong n, T alpha, global ST *x, ulong xoff)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    KILN_STORE(x, xoff + i, MUL(alpha, KILN_LOAD(x, xoff + i)));
}

#ifndef KILN_DOT_WG
#define KILN_DOT_WG 256
#endif

kernel void
blas_dot(ulong n, global const ST *x, ulong xoff, global const ST *y, ulong yoff, global ST *out,
         ulong outoff)
{
  local T part[KILN_DOT_WG];
  const size_t l = get_local_id(0), ls = get_local_size(0);
  T acc = (T)0;
  for (ulong i = l; i < n; i += ls)
    acc += MUL(KILN_LOAD(x, xoff + i), KILN_LOAD(y, yoff + i));
  part[l] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t s = ls / 2; s > 0; s /= 2) {
    if (l < s)
      part[l] += part[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0)
    KILN_STORE(out, outoff, part[0]);
}

#endif /* KILN_IS_FLOAT || KILN_IS_COMPLEX */
