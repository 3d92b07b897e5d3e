/*
 * kiln's GEMM for large f32/f64 products on GPUs (lib/ops/blas.c, route
 * KILN__GEMM_ROUTE_LARGE): CLBlast's Xgemm stops near 20 TFLOP/s f64 on an H200 whatever its
 * parameters (docs/tuning.md, "xgemm"), and it copies operands into padded, transposed
 * temporaries first. This kernel reads the operands where they lie, in any transpose.
 *
 * Build options (besides common.cl's -DT and -DKILN_DT_F32/F64; every one is set by the host,
 * lib/ops/blas_route.c, which checks the constraints below):
 *   -DGL_TM=<r> -DGL_TN=<c>  results per work-item along m and along n (multiples of GL_VW)
 *   -DGL_WX=<x> -DGL_WY=<y>  the work-group: x work-items along n (dimension 0), y along m
 *   -DGL_BK=<k>              the k-step: a (WY*TM) x BK tile of op(A) and a BK x (WX*TN) tile of
 *                            op(B) per step, in local memory, stored k-major
 *   -DGL_VW=<v>              vector width of the local-memory reads (1, 2 or 4)
 *   -DGL_DB=<0|1>            two local buffers: the next step's tiles are read from global
 *                            memory into registers before the current step's arithmetic and
 *                            stored after it, one barrier per step
 *   -DGL_PAD=<p>             extra elements per local row, a multiple of GL_VW (spreads the
 *                            transposing stores of a k-contiguous operand over the banks)
 *   -DGL_UNROLL=<0|1>        GPUs: #pragma unroll on the k-step's loops (on PoCL the hint
 *                            slowed gemm_small.cl's work-group loops threefold) and
 *                            reqd_work_group_size (the register budget of exactly WX*WY work-items;
 *                            PoCL 5 failed an assertion with it, linalg.cl's gemm_tile says)
 *   -DGL_MMA=<0..3>          f64 on NVIDIA GPUs of compute capability 8.0 on: the k-step's
 *                            products on the FP64 tensor cores (PTX mma.sync m8n8k4, or of
 *                            compute capability 9.0 with 2 m16n8k4 and with 3 m16n8k8, as inline
 *                            assembly: NVIDIA's OpenCL compiler takes CUDA's asm statements)
 *                            instead of FMAs; needs TM = TN = 8, WX = WY = 16, BK a multiple of
 *                            4 (8 for m16n8k8). The 8 warps of a group split its 128x128 tile 2 x 4,
 *                            64x32 results each, as 8 x 4 blocks of 8x8; the operands still pass
 *                            through the same local tiles.
 * Constraints: WY*TM*BK and WX*TN*BK multiples of WX*WY (every work-item loads the same count).
 *
 *   gemm_large(m, n, k, alpha, beta, a, aoff, lda, abatch, ta, b, boff, ldb, bbatch, tb,
 *              c, coff, ldc, cbatch, tri)
 *     Row-major C = alpha op(A) op(B) + beta C per matrix of a batch, the arguments as
 *     gemm_small's (gemm_small.cl) without cf32; beta == 0 never reads C. k > 0. tri 1 writes
 *     only j <= i of C, 2 only j >= i, and groups whose tile lies wholly on the other side
 *     return at once (the linalg family's SYRK-shaped trailing updates); with tri & 4 the
 *     triangle takes column j as complex column j / 2 (C the real view of a complex matrix).
 *     Launch: global (ceil(n/(WX*TN))*WX, ceil(m/(WY*TM))*WY, batch), local (WX, WY, 1).
 *
 * Work-item (tx, ty) owns rows (s*WY + ty)*VW + v (s < TM/VW, v < VW) and the columns built
 * the same way from tx: each of its local reads is one VW-wide vector, a warp's lanes with equal
 * ty read the same A words (a broadcast) and neighbouring B vectors.
 */
#include "common.cl"

#if defined(KILN_DT_F32) || defined(KILN_DT_F64)

#define GL_MT (GL_WY * GL_TM)
#define GL_NT (GL_WX * GL_TN)
#define GL_NL (GL_WX * GL_WY)
#define GL_LDA (GL_MT + GL_PAD)
#define GL_LDB (GL_NT + GL_PAD)
#define GL_LA (GL_MT * GL_BK / GL_NL)
#define GL_LB (GL_NT * GL_BK / GL_NL)
#define GL_NBUF (GL_DB ? 2 : 1)

#define GL_CAT_(a, b) a##b
#define GL_CAT(a, b) GL_CAT_(a, b)
#if GL_VW == 1
#define GL_VT T
#define GL_VGET(dst, src) (*(dst) = (src))
#else
#define GL_VT GL_CAT(T, GL_VW)
#define GL_VGET(dst, src) GL_CAT(vstore, GL_VW)((src), 0, (dst))
#endif

/* Element (i, p) of the op(A) tile and (p, j) of the op(B) tile that load r of work-item lid
 * covers: along the stored matrix's contiguous axis, so that neighbouring lanes read
 * neighbouring addresses. */
#define A_I(e) (ta ? (e) % GL_MT : (e) / GL_BK)
#define A_P(e) (ta ? (e) / GL_MT : (e) % GL_BK)
#define B_J(e) (tb ? (e) / GL_BK : (e) % GL_NT)
#define B_P(e) (tb ? (e) % GL_BK : (e) / GL_NT)

/* A function-like macro: scripts/embed_cl.py finds kernels written `kernel ATTR(...) void`. */
#if GL_UNROLL
#define GL_WG(x, y) __attribute__((reqd_work_group_size(x, y, 1)))
#else
#define GL_WG(x, y)
#endif

kernel GL_WG(GL_WX, GL_WY) void
gemm_large(ulong m, ulong n, ulong k, T alpha, T beta,
           global const T *a, ulong aoff, ulong lda, ulong abatch, uint ta,
           global const T *b, ulong boff, ulong ldb, ulong bbatch, uint tb,
           global T *c, ulong coff, ulong ldc, ulong cbatch, uint tri)
{
  local GL_VT as_[GL_NBUF * GL_BK * GL_LDA / GL_VW];
  local GL_VT bs_[GL_NBUF * GL_BK * GL_LDB / GL_VW];
  local T *as = (local T *)as_;
  local T *bs = (local T *)bs_;
  const uint tx = get_local_id(0), ty = get_local_id(1), lid = ty * GL_WX + tx;
#if GL_MMA
  /* Warps are consecutive local ids (dimension 0 fastest): warp w takes rows 64 (w % 2) and
   * columns 32 (w / 2) of the tile. */
  const uint lane = lid & 31u, wm0 = (lid >> 5 & 1u) * 64u, wn0 = (lid >> 6) * 32u;
#endif
  const ulong row0 = get_group_id(1) * (ulong)GL_MT, col0 = get_group_id(0) * (ulong)GL_NT;
  const ulong z = get_group_id(2);
  /* tri & 4: C's columns are (re, im) pairs of complex columns (the linalg family's complex
   * products on this kernel), so the triangle compares col >> 1 with the row */
  const uint tp = tri & 3u, cp = tri >> 2 & 1u;
  if ((tp == 1u && (col0 >> cp) >= row0 + GL_MT) ||
      (tp == 2u && ((col0 + GL_NT - 1) >> cp) < row0))
    return; /* the whole group: no barrier is left waiting */
  global const T *ab = a + aoff + z * abatch;
  global const T *bb = b + boff + z * bbatch;

  /* Per load: its offset at k-step 0 and whether its row of op(A) (column of op(B)) exists. */
  ulong ao[GL_LA], bo[GL_LB];
  uint aok[GL_LA], bok[GL_LB];
  for (uint r = 0; r < GL_LA; r++) {
    const uint e = lid + r * GL_NL, i = A_I(e), p = A_P(e);
    aok[r] = row0 + i < m;
    ao[r] = ta ? p * lda + row0 + i : (row0 + i) * lda + p;
  }
  for (uint r = 0; r < GL_LB; r++) {
    const uint e = lid + r * GL_NL, j = B_J(e), p = B_P(e);
    bok[r] = col0 + j < n;
    bo[r] = tb ? (col0 + j) * ldb + p : p * ldb + col0 + j;
  }
  const ulong astep = ta ? GL_BK * lda : GL_BK, bstep = tb ? GL_BK : GL_BK * ldb;

  T ra[GL_LA], rb[GL_LB];
  T acc[GL_TM][GL_TN];
  for (uint i = 0; i < GL_TM; i++)
    for (uint j = 0; j < GL_TN; j++)
      acc[i][j] = (T)0;

  /* Reads step k0's elements into ra/rb (zero past the edges). */
#define GL_FETCH(k0, akoff, bkoff)                                                    \
  do {                                                                                \
    for (uint r = 0; r < GL_LA; r++) {                                                   \
      const uint e = lid + r * GL_NL;                                                    \
      ra[r] = aok[r] && (k0) + A_P(e) < k ? ab[ao[r] + (akoff)] : (T)0;               \
    }                                                                                 \
    for (uint r = 0; r < GL_LB; r++) {                                                   \
      const uint e = lid + r * GL_NL;                                                    \
      rb[r] = bok[r] && (k0) + B_P(e) < k ? bb[bo[r] + (bkoff)] : (T)0;               \
    }                                                                                 \
  } while (0)
  /* Stores ra/rb into local buffer buf, k-major. */
#define GL_STASH(buf)                                                                 \
  do {                                                                                \
    for (uint r = 0; r < GL_LA; r++) {                                                   \
      const uint e = lid + r * GL_NL;                                                    \
      as[(buf) * GL_BK * GL_LDA + A_P(e) * GL_LDA + A_I(e)] = ra[r];                      \
    }                                                                                 \
    for (uint r = 0; r < GL_LB; r++) {                                                   \
      const uint e = lid + r * GL_NL;                                                    \
      bs[(buf) * GL_BK * GL_LDB + B_P(e) * GL_LDB + B_J(e)] = rb[r];                      \
    }                                                                                 \
  } while (0)

  ulong akoff = 0, bkoff = 0;
  GL_FETCH(0, 0, 0);
  GL_STASH(0);
  barrier(CLK_LOCAL_MEM_FENCE);
  uint cur = 0;
  for (ulong k0 = 0; k0 < k; k0 += GL_BK) {
    const int more = k0 + GL_BK < k;
    akoff += astep;
    bkoff += bstep;
#if GL_DB
    if (more)
      GL_FETCH(k0 + GL_BK, akoff, bkoff);
#endif
    local const GL_VT *at = (local const GL_VT *)(as + cur * GL_BK * GL_LDA);
    local const GL_VT *bt = (local const GL_VT *)(bs + cur * GL_BK * GL_LDB);
#if GL_MMA
    /* m8n8k4 fragments (PTX ISA): lane l holds A[l/4][l%4] and B[l%4][l/4] of the 8x4 and 4x8
     * blocks, and C[l/4][2(l%4)] and C[l/4][2(l%4)+1] of the 8x8 block. */
    local const T *ast = as + cur * GL_BK * GL_LDA + wm0 + (lane >> 2);
    local const T *bst = bs + cur * GL_BK * GL_LDB + wn0 + (lane >> 2);
#if GL_MMA == 3
    /* m16n8k8 (compute capability 9.0): lane l holds A[l/4 + 8i][l%4 + 4j] (a0 i=j=0, a1 i=1,
     * a2 j=1, a3 both) and B[l%4 + 4j][l/4] (b0, b1); C as m16n8k4. */
#pragma unroll
    for (uint kk = 0; kk < GL_BK / 4; kk += 2) {
      const uint kr = kk * 4 + (lane & 3);
      T af[8], ag[8], bf[4], bg[4];
#pragma unroll
      for (uint mb = 0; mb < 8; mb++) {
        af[mb] = ast[kr * GL_LDA + mb * 8];
        ag[mb] = ast[(kr + 4) * GL_LDA + mb * 8];
      }
#pragma unroll
      for (uint nb = 0; nb < 4; nb++) {
        bf[nb] = bst[kr * GL_LDB + nb * 8];
        bg[nb] = bst[(kr + 4) * GL_LDB + nb * 8];
      }
#pragma unroll
      for (uint mb = 0; mb < 8; mb += 2)
#pragma unroll
        for (uint nb = 0; nb < 4; nb++)
          asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
              "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
              : "+d"(acc[mb][2 * nb]), "+d"(acc[mb][2 * nb + 1]), "+d"(acc[mb + 1][2 * nb]),
                "+d"(acc[mb + 1][2 * nb + 1])
              : "d"(af[mb]), "d"(af[mb + 1]), "d"(ag[mb]), "d"(ag[mb + 1]), "d"(bf[nb]),
                "d"(bg[nb]));
    }
#else
#pragma unroll
    for (uint kk = 0; kk < GL_BK / 4; kk++) {
      const uint kr = kk * 4 + (lane & 3);
      T af[8], bf[4];
#pragma unroll
      for (uint mb = 0; mb < 8; mb++)
        af[mb] = ast[kr * GL_LDA + mb * 8];
#pragma unroll
      for (uint nb = 0; nb < 4; nb++)
        bf[nb] = bst[kr * GL_LDB + nb * 8];
#if GL_MMA == 1
#pragma unroll
      for (uint mb = 0; mb < 8; mb++)
#pragma unroll
        for (uint nb = 0; nb < 4; nb++)
          asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
              : "+d"(acc[mb][2 * nb]), "+d"(acc[mb][2 * nb + 1])
              : "d"(af[mb]), "d"(bf[nb]));
#else
      /* m16n8k4 (compute capability 9.0): the 8x8 blocks mb and mb + 1 as one 16-row block. */
#pragma unroll
      for (uint mb = 0; mb < 8; mb += 2)
#pragma unroll
        for (uint nb = 0; nb < 4; nb++)
          asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, "
              "{%6}, {%0, %1, %2, %3};"
              : "+d"(acc[mb][2 * nb]), "+d"(acc[mb][2 * nb + 1]), "+d"(acc[mb + 1][2 * nb]),
                "+d"(acc[mb + 1][2 * nb + 1])
              : "d"(af[mb]), "d"(af[mb + 1]), "d"(bf[nb]));
#endif
    }
#endif
#else
#if GL_UNROLL
#pragma unroll
#endif
    for (uint p = 0; p < GL_BK; p++) {
      T av[GL_TM], bv[GL_TN];
#if GL_UNROLL
#pragma unroll
#endif
      for (uint s = 0; s < GL_TM / GL_VW; s++)
        GL_VGET(av + s * GL_VW, at[p * (GL_LDA / GL_VW) + s * GL_WY + ty]);
#if GL_UNROLL
#pragma unroll
#endif
      for (uint s = 0; s < GL_TN / GL_VW; s++)
        GL_VGET(bv + s * GL_VW, bt[p * (GL_LDB / GL_VW) + s * GL_WX + tx]);
#if GL_UNROLL
#pragma unroll
#endif
      for (uint i = 0; i < GL_TM; i++)
#if GL_UNROLL
#pragma unroll
#endif
        for (uint j = 0; j < GL_TN; j++)
          acc[i][j] = fma(av[i], bv[j], acc[i][j]);
    }
#endif
#if GL_DB
    if (more)
      GL_STASH(cur ^ 1u);
    barrier(CLK_LOCAL_MEM_FENCE);
    cur ^= 1u;
#else
    barrier(CLK_LOCAL_MEM_FENCE);
    if (more) {
      GL_FETCH(k0 + GL_BK, akoff, bkoff);
      GL_STASH(0);
      barrier(CLK_LOCAL_MEM_FENCE);
    }
#endif
  }

  global T *cb = c + coff + z * cbatch;
#if GL_MMA
#pragma unroll
  for (uint mb = 0; mb < 8; mb++) {
    const ulong row = row0 + wm0 + mb * 8 + (lane >> 2);
#pragma unroll
    for (uint j = 0; j < 8; j++) {
      const ulong col = col0 + wn0 + (j / 2) * 8 + (lane & 3) * 2 + j % 2;
      if (row < m && col < n && !(tp == 1u && (col >> cp) > row) &&
          !(tp == 2u && (col >> cp) < row)) {
        T v = alpha * acc[mb][j];
        if (beta != (T)0)
          v += beta * cb[row * ldc + col];
        cb[row * ldc + col] = v;
      }
    }
  }
#else
  for (uint i = 0; i < GL_TM; i++) {
    const ulong row = row0 + ((i / GL_VW) * GL_WY + ty) * GL_VW + i % GL_VW;
    if (row >= m)
      continue;
    for (uint j = 0; j < GL_TN; j++) {
      const ulong col = col0 + ((j / GL_VW) * GL_WX + tx) * GL_VW + j % GL_VW;
      if (col < n && !(tp == 1u && (col >> cp) > row) && !(tp == 2u && (col >> cp) < row)) {
        T v = alpha * acc[i][j];
        if (beta != (T)0)
          v += beta * cb[row * ldc + col];
        cb[row * ldc + col] = v;
      }
    }
  }
#endif
}

#endif /* KILN_DT_F32 || KILN_DT_F64 */
