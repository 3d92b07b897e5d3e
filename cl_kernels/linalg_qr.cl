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
 *   qr_larft_l(same arguments, tl)   the same with T built in local memory, by leaves of 8
 *     columns and joins (tl: jb (jb + 1) + 8 ceil8(jb) + jb T).
 *   qr_panel_grid(a, aoff, lda, m, ncols, tau, toff, nk, sbase, x, with_t, t, tof, xs, rm,
 *     rv, rc, re, tg, ra)   the same over G work-groups of Q * 64 lanes, and optionally the
 *     block reflector's T (see its comment).
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

/*
 * qr_panel_grid: the Householder panel (up to QRG_W columns) spread over G work-groups that
 * exchange through global memory once per column, as lu_panel_grid (cl_kernels/linalg.cl)
 * does for LU; qr_panel's one work-group streams the panel once per column instead. Lane lid
 * of a group of Q * QRG_W lanes owns column c = lid % QRG_W of the rows at positions
 * g + G (q + Q k), q = lid / QRG_W, k < nk (<= QRG_R), in registers for the whole kernel
 * (cyclic, so every group keeps rows as they retire).
 *
 * One grid exchange per column j: the column's sum of squares and its products with every
 * other column come from one pass, before the reflector is known, as
 *   v^T a_c = a_jc + (x^T a_c) / (alpha - beta),  x = a_j below the diagonal,
 * where LAPACK (dlarfg, then dlarf) makes two. The products with the earlier columns c < j
 * (their reflectors v_c) give V^T v_j, from which group 0 builds the block reflector's T
 * (LAPACK dlarft, forward, columnwise) in local memory at the end (with_t).
 * Overflow and underflow are kept out by scaling: each group divides its x by 2^e_g, a power
 * of two at most 2 max |x| apart, and publishes e_g with its partial sums; the readers rescale
 * them to the largest exponent E by exact powers of two, so every quantity stays bounded as
 * in LAPACK's scaled order (|x| 2^-E <= 2, 2^E / |alpha - beta| <= 2).
 *
 * Exchange (double-buffered by column parity, as lu_panel_grid's: a group may publish column
 * j + 1 while a slower one still reads column j, and cannot get further):
 *   x    [parity][G + 1][QRG_W][QRG_NP] (ulong2): each group's partial sums (column j's
 *        entry: the sum of squares), then row j of the panel, stored by the group that holds
 *        it; a value takes QRG_NP entries (complex: one per part), each the part's bits and
 *        (stamp << 12 | e_g + 2048, 0 where x is zero in that group), stamp = sbase + j + 1,
 *        in one untorn 16-byte store (NVIDIA GPUs perform those whole; CUB's scan tile
 *        states rely on the same). Readers load an entry until
 *        it shows the column's stamp: no fence between the data and a flag. (A flag per
 *        group that one warp polled before the lanes read measured 2-3% slower on the H200.)
 * Cross-group reads are volatile (NVIDIA serves plain loads from a compute unit's L1, which
 * another unit's stores do not update). Every group must be resident at once (GPUs: at most
 * one group per compute unit; CPUs and the simulator run one group). Local memory: xs (x,
 * 2 Q QRG_R T: both parities, so that a column needs no barrier after its update), rm (Q T:
 * the row sets' max |x|), rv and rc (Q QRG_W T: partial sums, then totals), re (Q int:
 * exponents), tg (QRG_W (QRG_W + 1) / 2 T, with_t only), ra (QRG_W T: row j). The rows
 * past m are zero; tau[toff + j]; with_t: T (ncols x ncols, row-major, zero below the
 * diagonal) at t + tof.
 * Complex T (zgeqr2, zlarft): the products are x^H a_c, V^H v_j, the panel's update applies
 * H^H, and a complex alpha over a zero x still gets its reflector.
 */
#define QRG_W 64
#define QRG_R 16
#define QRG_NONE (-100000)
/* T's upper triangle in tg, packed by columns: (i, k), i <= k, at k (k + 1) / 2 + i */
#define QRG_TG(i, k) tg[(k) * ((k) + 1) / 2 + (i)]
#define QRG_REP(M)                                                                          \
  M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)
/* 2^k for |k| <= QRG_EMAX (clamped there: the terms scaled below 2^-QRG_EMAX are negligible
 * beside the largest), and the exponent of a positive v (denormals: -QRG_EMAX), by bits
 * rather than through ldexp and ilogb; in RT, the part type of complex T */
#if defined(KILN_DT_F64) || defined(KILN_DT_C128)
#define QRG_EMAX 1022
#define QRG_POW2(k) as_double((ulong)(clamp((k), -QRG_EMAX, QRG_EMAX) + 1023) << 52)
#define QRG_EXP(v) max((int)((as_ulong(v) >> 52) & 0x7ffu) - 1023, -QRG_EMAX)
#else
#define QRG_EMAX 126
#define QRG_POW2(k) as_float((uint)(clamp((k), -QRG_EMAX, QRG_EMAX) + 127) << 23)
#define QRG_EXP(v) max((int)((as_uint(v) >> 23) & 0xffu) - 127, -QRG_EMAX)
#endif
/* A value of the exchange takes QRG_NP stamped entries, one per real part (QRG_PART). The
 * scale of complex x is max(|re|, |im|), within sqrt 2 of |x|; products are conj(y) r. */
#if KILN_IS_COMPLEX
#define QRG_NP 2
#define QRG_PART(v, p) LA_BITS((p) ? (v).y : (v).x)
#define QRG_VALUE(e) ((T)(LA_VAL(e[0].x), LA_VAL(e[1].x)))
#define QRG_MAXABS(v) fmax(fabs((v).x), fabs((v).y))
#define QRG_CDOT(y, r, acc)                                                                   \
  {                                                                                           \
    acc.x = fma(y.x, r.x, fma(y.y, r.y, acc.x));                                              \
    acc.y = fma(y.x, r.y, fma(-y.y, r.x, acc.y));                                             \
  }
/* zlarfg: a complex alpha gets a reflector even where x is zero (beta must be real) */
#define QRG_REFL(E, alpha) ((E) != QRG_NONE || (alpha).y != (RT)0)
#else
#define QRG_NP 1
#define QRG_PART(v, p) LA_BITS(v)
#define QRG_VALUE(e) LA_VAL(e[0].x)
#define QRG_MAXABS(v) fabs(v)
#define QRG_CDOT(y, r, acc) acc = fma(y, r, acc);
#define QRG_REFL(E, alpha) ((E) != QRG_NONE)
#endif

kernel void qr_panel_grid(global T *a, ulong aoff, ulong lda, uint m, uint ncols, global T *tau,
                          ulong toff, uint nk, ulong sbase, volatile global ulong2 *x,
                          uint with_t, global T *t, ulong tof, local T *xs, local T *rm,
                          local T *rv, local T *rc, local int *re, local T *tg, local T *ra)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const uint g = get_group_id(0), G = get_num_groups(0);
  const uint c = lid % QRG_W, q = lid / QRG_W, Q = lsz / QRG_W;
  const int mine = c < ncols, want_t = with_t && g == 0;
  global T *A = a + aoff;
#define QRG_POS(k) (g + G * (q + Q * (uint)(k)))
#define QRG_LOAD(k)                                                                           \
  T r##k = mine && (k) < nk && QRG_POS(k) < m ? A[(ulong)QRG_POS(k) * lda + c] : (T)0;
  QRG_REP(QRG_LOAD)
  for (uint j = 0; j < ncols; j++) {
    const uint par = j & 1u;
    const ulong stamp = sbase + j + 1;
    local T *xsp = xs + par * Q * QRG_R;
    /* column j below the diagonal into local memory, and each row set's max |x| */
    if (c == j) {
      RT mx = (RT)0;
#define QRG_XS(k)                                                                             \
  {                                                                                           \
    const T v = QRG_POS(k) > j ? r##k : (T)0;                                                 \
    xsp[q + Q * (k)] = v;                                                                     \
    mx = fmax(mx, QRG_MAXABS(v));                                                             \
  }
      QRG_REP(QRG_XS)
      rm[q] = LA_REAL(mx);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    RT smax = (RT)0;
    for (uint h = 0; h < Q; h++)
      smax = fmax(smax, LA_RE(rm[h]));
    const int eg = smax > (RT)0 ? min(QRG_EXP(smax), QRG_EMAX) : QRG_NONE;
    const RT inv = smax > (RT)0 ? QRG_POW2(-eg) : (RT)0;
    /* products of the scaled x with this lane's rows of column c (every c: those of the
     * earlier columns are V^H v_j's); column j's own: the sum of squares */
    T d = (T)0;
    if (mine) {
      T d1 = (T)0, d2 = (T)0, d3 = (T)0;
#define QRG_DOT(k, acc)                                                                       \
  {                                                                                           \
    const T y = xsp[q + Q * (k)] * inv;                                                       \
    const T rr = c == j ? y : r##k;                                                           \
    QRG_CDOT(y, rr, acc)                                                                      \
  }
      QRG_DOT(0, d) QRG_DOT(1, d1) QRG_DOT(2, d2) QRG_DOT(3, d3)
      QRG_DOT(4, d) QRG_DOT(5, d1) QRG_DOT(6, d2) QRG_DOT(7, d3)
      QRG_DOT(8, d) QRG_DOT(9, d1) QRG_DOT(10, d2) QRG_DOT(11, d3)
      QRG_DOT(12, d) QRG_DOT(13, d1) QRG_DOT(14, d2) QRG_DOT(15, d3)
      d = (d + d1) + (d2 + d3);
    }
    rv[q * QRG_W + c] = d;
    barrier(CLK_LOCAL_MEM_FENCE);
    /* each entry carries its stamp (and the group's exponent): one untorn 16-byte store, so a
     * reader that sees the stamp sees the value, and no fence is needed */
    volatile global ulong2 *xe = x + (ulong)par * (G + 1) * QRG_W * QRG_NP;
    if (q == 0 && mine) {
      T s = (T)0;
      for (uint h = 0; h < Q; h++)
        s += rv[h * QRG_W + c];
      const ulong tag = stamp << 12 | (eg == QRG_NONE ? 0ul : (ulong)(eg + 2048));
      for (uint p = 0; p < QRG_NP; p++)
        xe[((ulong)g * QRG_W + c) * QRG_NP + p] = (ulong2)(QRG_PART(s, p), tag);
    }
    /* row j: position j = g + G (q + Q k) */
    const uint jg = j % G, js = j / G;
    if (g == jg && q == js % Q && mine) {
      const uint jk = js / Q;
      T v = (T)0;
#define QRG_PICK(k) v = (k) == jk ? r##k : v;
      QRG_REP(QRG_PICK)
      for (uint p = 0; p < QRG_NP; p++)
        xe[((ulong)G * QRG_W + c) * QRG_NP + p] = (ulong2)(QRG_PART(v, p), stamp << 12);
    }
    /* (the group's own entries are read below: a CPU runs its lanes one after another
     * between barriers) */
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    /* row j (a_jc) by the first row set only, into local memory (every lane of every group
     * polling the same entries queued on them in the L2); this lane's share of the groups
     * (h = q mod Q), four loads in flight before any is waited for: their partial sums
     * rescaled to the largest exponent as they come (squares by its square) */
    const ulong2 none = (ulong2)(0ul, stamp << 12);
#define QRG_AT(h, p) xe[((ulong)(h)*QRG_W + c) * QRG_NP + (p)]
    ulong2 ec[QRG_NP];
    for (uint p = 0; p < QRG_NP; p++)
      ec[p] = q == 0 && mine ? QRG_AT(G, p) : none;
    int eq = QRG_NONE;
    T tot = (T)0;
    const int sq = c == j ? 2 : 1;
#define QRG_WAIT(e, h)                                                                        \
  for (uint p = 0; p < QRG_NP; p++)                                                           \
    while (e[p].y >> 12 != stamp)                                                             \
      e[p] = QRG_AT(h, p);
#define QRG_ACC(e)                                                                            \
  {                                                                                           \
    const int eh = (int)(e[0].y & 0xfffu);                                                    \
    const T pv = QRG_VALUE(e);                                                                \
    if (eh != 0 && eh - 2048 > eq) {                                                          \
      tot = eq == QRG_NONE ? pv : tot * QRG_POW2(sq * (eq - (eh - 2048))) + pv;               \
      eq = eh - 2048;                                                                         \
    } else if (eh != 0) {                                                                     \
      tot += pv * QRG_POW2(sq * (eh - 2048 - eq));                                            \
    }                                                                                         \
  }
    if (mine)
      for (uint h = q; h < G; h += 4 * Q) {
        const uint h1 = h + Q, h2 = h + 2 * Q, h3 = h + 3 * Q;
        ulong2 e0[QRG_NP], e1[QRG_NP], e2[QRG_NP], e3[QRG_NP];
        for (uint p = 0; p < QRG_NP; p++) {
          e0[p] = QRG_AT(h, p);
          e1[p] = h1 < G ? QRG_AT(h1, p) : none;
          e2[p] = h2 < G ? QRG_AT(h2, p) : none;
          e3[p] = h3 < G ? QRG_AT(h3, p) : none;
        }
        QRG_WAIT(e0, h)
        QRG_WAIT(e1, h1)
        QRG_WAIT(e2, h2)
        QRG_WAIT(e3, h3)
        QRG_ACC(e0)
        QRG_ACC(e1)
        QRG_ACC(e2)
        QRG_ACC(e3)
      }
    if (q == 0 && mine) {
      QRG_WAIT(ec, G)
      ra[c] = QRG_VALUE(ec);
    }
    rc[q * QRG_W + c] = tot;
    if (c == 0)
      re[q] = eq;
    barrier(CLK_LOCAL_MEM_FENCE);
    const T alpha = ra[j], ajc = mine ? ra[c] : (T)0;
    int E = QRG_NONE;
    for (uint h = 0; h < Q; h++)
      E = max(E, re[h]);
    RT tq = (RT)0;
    T dc = (T)0;
    if (E != QRG_NONE)
      for (uint h = 0; h < Q; h++)
        if (re[h] != QRG_NONE) {
          tq += LA_RE(rc[h * QRG_W + j]) * QRG_POW2(2 * (re[h] - E));
          dc += rc[h * QRG_W + c] * QRG_POW2(sq * (re[h] - E));
        }
    /* dlarfg (zlarfg): beta = -sign(re alpha) ||(alpha, x)||, tau = (beta - alpha) / beta,
     * v = x / (alpha - beta) = x 2^-E ss */
    const int refl = QRG_REFL(E, alpha);
    T beta = alpha, tj = (T)0, ss = (T)0;
    RT invE = (RT)0;
    if (refl) {
      const RT xnorm = E != QRG_NONE ? sqrt(tq) * QRG_POW2(E) : (RT)0;
      beta = LA_REAL(-copysign(hypot(LA_ABS(alpha), xnorm), LA_RE(alpha)));
      tj = LA_DIV(beta - alpha, beta);
      if (E != QRG_NONE) {
        invE = QRG_POW2(-E);
        ss = LA_DIV(LA_REAL(QRG_POW2(E)), alpha - beta); /* |ss| <= 2 */
      }
    }
    /* rows below j: a_c -= v conj(tau) (v^H a_c) (c > j; v^H a_c = a_jc + conj(ss) dc), the
     * reflector (c = j); row j: a_jc -= conj(tau) (v^H a_c), beta. Every row of every lane the
     * same way, without a branch: y is zero above row j and past m (and past nk rows, whose
     * registers are zero and never stored). Branches per row kept each row's shared load and
     * update in turn; QR of 4096 f64 on the H200 took 60.9 ms with them, 44.5 without (here,
     * in the products and the column copy). */
    if (mine && c >= j) {
      const T w = c > j && refl ? LA_MUL(LA_CONJ(tj), ajc + LA_MUL(LA_CONJ(ss), dc)) : (T)0;
      const int isj = c == j;
#define QRG_UPD(k)                                                                            \
  {                                                                                           \
    const uint tp = QRG_POS(k);                                                               \
    const T y = LA_MUL(xsp[q + Q * (k)] * invE, ss);                                          \
    const T u = r##k - LA_MUL(y, w) - (tp == j ? w : (T)0);                                   \
    r##k = isj ? (tp > j ? y : tp == j ? beta : r##k) : u;                                    \
  }
      QRG_REP(QRG_UPD)
    }
    /* v_c^H v_j = conj(v_c[j]) + conj(x^H v_c 2^-E) ss for the earlier columns: T's column j */
    if (want_t && q == 0 && c <= j)
      QRG_TG(c, j) = c == j ? tj
                          : refl ? LA_CONJ(ajc) + LA_MUL(LA_CONJ(dc), ss)
                                 : LA_CONJ(ajc);
    if (g == 0 && lid == 0)
      tau[toff + j] = tj;
  }
  if (want_t) {
    /* dlarft: T(0:j, j) = -tau_j T(0:j, 0:j) (V^H v_j), in place over the Gram entries
     * (column j's are read before any lane writes it); each row's sum split over the Q row
     * sets' lanes, then added up through rv */
    for (uint j = 1; j < ncols; j++) {
      barrier(CLK_LOCAL_MEM_FENCE);
      T s = (T)0;
      if (c < j)
        for (uint p = c + q; p < j; p += Q)
          s += LA_MUL(QRG_TG(c, p), QRG_TG(p, j));
      rv[q * QRG_W + c] = s;
      barrier(CLK_LOCAL_MEM_FENCE);
      if (q == 0 && c < j) {
        T u = (T)0;
        for (uint h = 0; h < Q; h++)
          u += rv[h * QRG_W + c];
        QRG_TG(c, j) = -LA_MUL(QRG_TG(j, j), u);
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint e = lid; e < ncols * ncols; e += lsz) {
      const uint i = e / ncols, k = e % ncols;
      t[tof + e] = k >= i ? QRG_TG(i, k) : (T)0;
    }
  }
#define QRG_STORE(k)                                                                          \
  if (mine && (k) < nk && QRG_POS(k) < m)                                                     \
    A[(ulong)QRG_POS(k) * lda + c] = r##k;
  QRG_REP(QRG_STORE)
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
 * qr_larft with T in local memory (jb <= 64 for f64), in 8 + 2 log2(jb / 8) steps instead of
 * jb: the 8 x 8 diagonal blocks of T first, all at once (dlarft's recurrence within each),
 * then neighbouring blocks joined as T12 = -T1 G12 T2 (G12 = V1^H V2, a block of G). The
 * recurrence over all 64 columns took 64-100 us a call on the H200 (every step waits for the
 * one before; qr_larft's global fences cost tens of microseconds more).
 */
kernel void qr_larft_l(global const T *g, ulong goff, global const T *tau, ulong toff, uint jb,
                       global T *t, ulong tof, local T *tl)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  global const T *G = g + goff;
  /* tl: T at row stride ld (odd where jb is even: column walks without bank conflicts), its
   * lower triangle holding each join's X; then the leaves' 8 x 8 blocks of G, and tau */
  const uint ld = jb + 1, jb8 = (jb + 7) / 8 * 8;
  local T *lg = tl + jb * ld, *ts = lg + 8 * jb8;
  for (uint e = lid; e < jb * ld; e += lsz)
    tl[e] = (T)0;
  for (uint e = lid; e < 8 * jb8; e += lsz) { /* row `row` of its leaf's block */
    const uint row = e / 8, c = (row & ~7u) + e % 8;
    lg[e] = row < jb && c < jb ? G[(ulong)row * jb + c] : (T)0;
  }
  for (uint e = lid; e < jb; e += lsz)
    ts[e] = tau[toff + e];
  barrier(CLK_LOCAL_MEM_FENCE);
  /* leaves: column i of every 8 x 8 diagonal block at once (LAPACK's dlarft within it) */
  for (uint i = 0; i < 8; i++) {
    for (uint row = lid; row < jb8; row += lsz) {
      const uint o = row & ~7u, r = row % 8, ci = o + i;
      if (ci >= jb || row >= jb || r > i)
        continue;
      T s0 = (T)0;
      for (uint p = r; p < i; p++)
        s0 += LA_MUL(tl[row * ld + o + p], lg[(o + p) * 8 + i]);
      tl[row * ld + ci] = r == i ? ts[ci] : -LA_MUL(ts[ci], s0);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  /* joins of neighbouring blocks of h columns (every pair of a level at once):
   * T12 = -T1 (V1^H V2) T2, the middle factor a block of G; X = G12 T2 first, into the
   * lower triangle's mirror of T12's place (lane order: column c fastest) */
  for (uint h = 8; h < jb; h *= 2) {
    const uint pw = 2 * h, nel = (jb + pw - 1) / pw * h * h;
    for (uint e = lid; e < nel; e += lsz) {
      const uint c = e % h, r = e / h % h, o1 = e / (h * h) * pw, o2 = o1 + h;
      if (o2 + c >= jb)
        continue;
      T s0 = (T)0;
      for (uint k = 0; k <= c; k++)
        s0 += LA_MUL(G[(ulong)(o1 + r) * jb + o2 + k], tl[(o2 + k) * ld + o2 + c]);
      tl[(o2 + c) * ld + o1 + r] = s0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint e = lid; e < nel; e += lsz) {
      const uint c = e % h, r = e / h % h, o1 = e / (h * h) * pw, o2 = o1 + h;
      if (o2 + c >= jb)
        continue;
      T s0 = (T)0;
      for (uint k = r; k < h; k++)
        s0 += LA_MUL(tl[(o1 + r) * ld + o1 + k], tl[(o2 + c) * ld + o1 + k]);
      tl[(o1 + r) * ld + o2 + c] = -s0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (uint e = lid; e < jb * jb; e += lsz) {
    const uint l = e / jb, i = e % jb;
    t[tof + e] = l <= i ? tl[l * ld + i] : (T)0;
  }
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
