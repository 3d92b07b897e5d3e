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
 * Constraints: WY*TM*BK and WX*TN*BK multiples of WX*WY (every work-item loads the same count).
 *
 *   gemm_large(m, n, k, alpha, beta, a, aoff, lda, abatch, ta, b, boff, ldb, bbatch, tb,
 *              c, coff, ldc, cbatch)
 *     Row-major C = alpha op(A) op(B) + beta C per matrix of a batch, the arguments as
 *     gemm_small's (gemm_small.cl) without tri and cf32; beta == 0 never reads C. k > 0.
 *     Launch: global (ceil(n/(WX*TN))*WX, ceil(m/(WY*TM))*WY, batch), local (WX, WY, 1).
 *
 * Work-item (tx, ty) owns rows (s*WY + ty)*VW + v (s < TM/VW, v < VW) and the columns built
 * the same way from tx: each of its local reads is one VW-wide vector, a warp's lanes with equal
 * ty read the same A words (a broadcast) and neighbouring B vectors.
 */
#include "common.cl"

#if defined(KILN_DT_F32) || defined(KILN_DT_F64)

#define MT (GL_WY * GL_TM)
#define NT (GL_WX * GL_TN)
#define NL (GL_WX * GL_WY)
#define LDA_ (MT + GL_PAD)
#define LDB_ (NT + GL_PAD)
#define LA (MT * GL_BK / NL)
#define LB (NT * GL_BK / NL)
#define NBUF (GL_DB ? 2 : 1)

#define GL_CAT_(a, b) a##b
#define GL_CAT(a, b) GL_CAT_(a, b)
#if GL_VW == 1
#define VT T
#define VGET(dst, src) (*(dst) = (src))
#else
#define VT GL_CAT(T, GL_VW)
#define VGET(dst, src) GL_CAT(vstore, GL_VW)((src), 0, (dst))
#endif

/* Element (i, p) of the op(A) tile and (p, j) of the op(B) tile that load r of work-item lid
 * covers: along the stored matrix's contiguous axis, so that neighbouring lanes read
 * neighbouring addresses. */
#define A_I(e) (ta ? (e) % MT : (e) / GL_BK)
#define A_P(e) (ta ? (e) / MT : (e) % GL_BK)
#define B_J(e) (tb ? (e) / GL_BK : (e) % NT)
#define B_P(e) (tb ? (e) % GL_BK : (e) / NT)

kernel void
gemm_large(ulong m, ulong n, ulong k, T alpha, T beta,
           global const T *a, ulong aoff, ulong lda, ulong abatch, uint ta,
           global const T *b, ulong boff, ulong ldb, ulong bbatch, uint tb,
           global T *c, ulong coff, ulong ldc, ulong cbatch)
{
  local VT as_[NBUF * GL_BK * LDA_ / GL_VW];
  local VT bs_[NBUF * GL_BK * LDB_ / GL_VW];
  local T *as = (local T *)as_;
  local T *bs = (local T *)bs_;
  const uint tx = get_local_id(0), ty = get_local_id(1), lid = ty * GL_WX + tx;
  const ulong row0 = get_group_id(1) * (ulong)MT, col0 = get_group_id(0) * (ulong)NT;
  const ulong z = get_group_id(2);
  global const T *ab = a + aoff + z * abatch;
  global const T *bb = b + boff + z * bbatch;

  /* Per load: its offset at k-step 0 and whether its row of op(A) (column of op(B)) exists. */
  ulong ao[LA], bo[LB];
  uint aok[LA], bok[LB];
  for (uint r = 0; r < LA; r++) {
    const uint e = lid + r * NL, i = A_I(e), p = A_P(e);
    aok[r] = row0 + i < m;
    ao[r] = ta ? p * lda + row0 + i : (row0 + i) * lda + p;
  }
  for (uint r = 0; r < LB; r++) {
    const uint e = lid + r * NL, j = B_J(e), p = B_P(e);
    bok[r] = col0 + j < n;
    bo[r] = tb ? (col0 + j) * ldb + p : p * ldb + col0 + j;
  }
  const ulong astep = ta ? GL_BK * lda : GL_BK, bstep = tb ? GL_BK : GL_BK * ldb;

  T ra[LA], rb[LB];
  T acc[GL_TM][GL_TN];
  for (uint i = 0; i < GL_TM; i++)
    for (uint j = 0; j < GL_TN; j++)
      acc[i][j] = (T)0;

  /* Reads step k0's elements into ra/rb (zero past the edges). */
#define GL_FETCH(k0, akoff, bkoff)                                                    \
  do {                                                                                \
    for (uint r = 0; r < LA; r++) {                                                   \
      const uint e = lid + r * NL;                                                    \
      ra[r] = aok[r] && (k0) + A_P(e) < k ? ab[ao[r] + (akoff)] : (T)0;               \
    }                                                                                 \
    for (uint r = 0; r < LB; r++) {                                                   \
      const uint e = lid + r * NL;                                                    \
      rb[r] = bok[r] && (k0) + B_P(e) < k ? bb[bo[r] + (bkoff)] : (T)0;               \
    }                                                                                 \
  } while (0)
  /* Stores ra/rb into local buffer buf, k-major. */
#define GL_STASH(buf)                                                                 \
  do {                                                                                \
    for (uint r = 0; r < LA; r++) {                                                   \
      const uint e = lid + r * NL;                                                    \
      as[(buf) * GL_BK * LDA_ + A_P(e) * LDA_ + A_I(e)] = ra[r];                      \
    }                                                                                 \
    for (uint r = 0; r < LB; r++) {                                                   \
      const uint e = lid + r * NL;                                                    \
      bs[(buf) * GL_BK * LDB_ + B_P(e) * LDB_ + B_J(e)] = rb[r];                      \
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
    local const VT *at = (local const VT *)(as + cur * GL_BK * LDA_);
    local const VT *bt = (local const VT *)(bs + cur * GL_BK * LDB_);
    for (uint p = 0; p < GL_BK; p++) {
      T av[GL_TM], bv[GL_TN];
      for (uint s = 0; s < GL_TM / GL_VW; s++)
        VGET(av + s * GL_VW, at[p * (LDA_ / GL_VW) + s * GL_WY + ty]);
      for (uint s = 0; s < GL_TN / GL_VW; s++)
        VGET(bv + s * GL_VW, bt[p * (LDB_ / GL_VW) + s * GL_WX + tx]);
      for (uint i = 0; i < GL_TM; i++)
        for (uint j = 0; j < GL_TN; j++)
          acc[i][j] = fma(av[i], bv[j], acc[i][j]);
    }
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
  for (uint i = 0; i < GL_TM; i++) {
    const ulong row = row0 + ((i / GL_VW) * GL_WY + ty) * GL_VW + i % GL_VW;
    if (row >= m)
      continue;
    for (uint j = 0; j < GL_TN; j++) {
      const ulong col = col0 + ((j / GL_VW) * GL_WX + tx) * GL_VW + j % GL_VW;
      if (col < n) {
        T v = alpha * acc[i][j];
        if (beta != (T)0)
          v += beta * cb[row * ldc + col];
        cb[row * ldc + col] = v;
      }
    }
  }
}

#endif /* KILN_DT_F32 || KILN_DT_F64 */
