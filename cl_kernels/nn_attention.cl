/*
 * nn training family: scaled dot-product attention, flash style (lib/ops/nn_attention.c,
 * docs/nn.md "Attention"), and rotary position embedding.
 *
 * Build options: common.cl's (-DT=..., -DKILN_DT_...=1); f32, f64, f16 and bf16 (T float).
 * The forward tile (lib/ops/nn_attention.c chooses it: the `attention` tuner family): -DATT_BQ
 * (queries per work-group), -DATT_BK (keys per tile), -DATT_TM, -DATT_TN (the register tile of
 * scores per work-item, multiples of 4), -DATT_DC (features per Q/K staging chunk), -DATT_VK
 * (keys per V staging chunk), -DATT_DH (head dimension the accumulators cover: 32, 64 or 128,
 * at least D and Dv), -DATT_PF (1: each staging step's global loads are issued one step ahead,
 * into registers, so that they fly while the previous chunk is multiplied), -DATT_RA (1: the
 * row reductions share the staging space, two more barriers per key tile; for tiles whose
 * local memory would not fit otherwise), -DATT_BWD=N (the backward kernels and rope too, with
 * the backward tiles N, below), -DATT_NF (1: without att_fwd, for the programs of backward
 * tables other than the rule's, which only the backward pass uses), -DATT_G (GPUs: the kernels
 * declare their work-group size).
 * Options left out are 0 (absent). att_fwd runs on (BQ/TM) (BK/TN) work-items.
 *
 * Layout: q [BH, Sq, D], k [BH, Sk, D], v [BH, Sk, Dv], out [BH, Sq, Dv], lse [BH, Sq] (in T:
 * f32 for f16 and bf16, whose q, k, v, out, mask and gradients are stored in 2 bytes),
 * D, Dv <= ATT_DH; mask (flags ATT_MASK) additive [Sq, Sk] at mask + bh * mstride.
 * flags ATT_CAUSAL: key j is visible to query i only when j <= i (top-left aligned, as
 * PyTorch's is_causal).
 *
 * Forward (att_fwd): below, at the kernel.
 *
 * Backward (FlashAttention-2: recompute p = exp(s - lse) from the saved lse), register-blocked
 * as the forward (tiles at the kernels):
 *   att_bwd_pre: delta[i] = sum_d dout[i, d] out[i, d]            32 items per row
 *   att_bwd_dkdv: a work-group per ABK_KV keys, looping over query tiles:
 *     dv_j += p_ij dout_i, dk_j += p_ij (dout_i . v_j - delta_i) scale q_i
 *   att_bwd_dq: a work-group per ABQ_Q queries, looping over key tiles:
 *     dq_i += p_ij (dout_i . v_j - delta_i) scale k_j
 * No atomics: each output element is owned by one work-item (deterministic).
 *
 * Kernels:
 *   att_fwd(q, qoff, k, koff, v, voff, mask, moff, o, ooff, lse, loff, BH, Sq, Sk, D, Dv,
 *           mstride, scale, flags)
 *   att_bwd_pre(dout, doff, o, ooff, delta, rows, Dv)
 *   att_bwd_dkdv(q, qoff, k, koff, v, voff, mask, moff, dout, doff, lse, loff, delta, dk,
 *                dkoff, dv, dvoff, dqacc, BH, Sq, Sk, D, Dv, mstride, scale, flags)
 *   att_bwd_dq_store(acc, dq, dqoff, n)              (table 7: dQ from dqacc)
 *   att_bwd_dq(q, qoff, k, koff, v, voff, mask, moff, dout, doff, lse, loff, delta, dq, dqoff,
 *              BH, Sq, Sk, D, Dv, mstride, scale, flags)
 *   att_rows_cpu(s, mask, moff, mstride, lse, loff, b0, m, Sq, Sk, flags, zb)
 *     CPU devices' forward (lib/ops/nn_attention.c, att_forward_gemm): the scaled scores s of
 *     m heads from b0 (m Sq rows of Sk, from a GEMM) become the probabilities in place: the
 *     mask added, causal keys hidden, lse[loff + b0 Sq + row] written; 1-D over the rows.
 *     Only a row's visible keys are read; hidden ones get 0 up to the end of the row's block
 *     of zb queries (ZEND), past which nothing is read or written.
 *   att_bwd_rows_cpu(s, dp, mask, moff, mstride, lse, loff, delta, b0, m, Sq, Sk, scale,
 *                    flags, zb)
 *     CPU devices' backward: from the scaled scores s and dp = dout v^T of m heads (GEMMs),
 *     s becomes p = exp(s + mask - lse) (0 for hidden keys, up to ZEND) and dp becomes
 *     ds = scale p (dp - delta); 1-D over the m Sq rows.
 *   rope(x, xoff, cosv, coff, sinv, soff, y, yoff, rows, S, D, R, flags)
 *     rotary embedding of x [rows = B S, D] (position = row % S) with cos/sin tables [S, R/2]
 *     over the first R features; flags ROPE_HALF: pairs (d, d + R/2), else (2d, 2d + 1);
 *     ROPE_INV: rotate by -theta (the backward pass). Features beyond R are copied.
 */
#include "common.cl"


#define ATT_CAUSAL 1u
#define ATT_MASK 2u
#define ATT_VEC 4u /* att_fwd: q, k, v 16-byte aligned, D and Dv multiples of 4 */
#define ATT_DQF 8u /* att_bwd_dkdv with AKV_DQ: add dQ to dqacc */

#define ROPE_HALF 1u
#define ROPE_INV 2u

/* The end of row i's zeros past its visible keys: its block of zb rows' last key (the
 * products over keys run per block: lib/ops/nn_attention.c, att_cpu_qblock). */
#define ZEND(i) min(Sk, ((i) / zb + 1) * zb)

/* att_rows_cpu: a row of scores in 64-byte vectors, then element by element. */
#define AR_W KILN_VW64
#define AR_V KILN_CAT(T, AR_W)
#define ar_hmax KILN_CAT(kiln_hmax, AR_W)
#define ar_hsum KILN_CAT(kiln_hsum, AR_W)
kernel void
att_bwd_rows_cpu(global T *s, global T *dp, global const ST *mask, ulong moff, ulong mstride,
                 global const T *lse, ulong loff, global const T *delta, ulong b0, ulong m,
                 ulong Sq, ulong Sk, T scale, uint flags, ulong zb)
{
  for (ulong r = get_global_id(0); r < m * Sq; r += get_global_size(0)) {
    const ulong i = r % Sq;
    global T *sr = s + r * Sk, *dr = dp + r * Sk;
    global const ST *mr = mask + moff + (b0 + r / Sq) * mstride + i * Sk;
    const ulong kend = (flags & ATT_CAUSAL) ? min(Sk, i + 1) : Sk;
    const T l = lse[loff + b0 * Sq + r], dl = delta[b0 * Sq + r];
    ulong j = 0;
    for (; j + AR_W <= kend; j += AR_W) {
      AR_V v = KILN_CAT(vload, AR_W)(0, sr + j);
      if (flags & ATT_MASK)
        v += KILN_VLOAD_ST(AR_W, mr + j);
      const AR_V p = select(exp(v - l), (AR_V)0, v == (AR_V)(-INFINITY));
      KILN_CAT(vstore, AR_W)(p, 0, sr + j);
      KILN_CAT(vstore, AR_W)(scale * p * (KILN_CAT(vload, AR_W)(0, dr + j) - dl), 0, dr + j);
    }
    for (; j < kend; j++) {
      const T v = sr[j] + ((flags & ATT_MASK) ? KILN_LOAD(mr, j) : (T)0);
      const T p = v == -INFINITY ? (T)0 : exp(v - l);
      sr[j] = p;
      dr[j] = scale * p * (dr[j] - dl);
    }
    for (j = kend; j < ZEND(i); j++)
      sr[j] = dr[j] = (T)0;
  }
}

kernel void
att_rows_cpu(global T *s, global const ST *mask, ulong moff, ulong mstride, global T *lse,
             ulong loff, ulong b0, ulong m, ulong Sq, ulong Sk, uint flags, ulong zb)
{
  for (ulong r = get_global_id(0); r < m * Sq; r += get_global_size(0)) {
    const ulong i = r % Sq;
    global T *sr = s + r * Sk;
    global const ST *mr = mask + moff + (b0 + r / Sq) * mstride + i * Sk;
    /* causal: keys past i are hidden (probability 0) */
    const ulong kend = (flags & ATT_CAUSAL) ? min(Sk, i + 1) : Sk;
    AR_V mv = (AR_V)(-INFINITY);
    T mx = -INFINITY;
    ulong j = 0;
    for (; j + AR_W <= kend; j += AR_W) {
      AR_V v = KILN_CAT(vload, AR_W)(0, sr + j);
      if (flags & ATT_MASK) {
        v += KILN_VLOAD_ST(AR_W, mr + j);
        KILN_CAT(vstore, AR_W)(v, 0, sr + j);
      }
      mv = fmax(mv, v);
    }
    for (; j < kend; j++) {
      T v = sr[j] + ((flags & ATT_MASK) ? KILN_LOAD(mr, j) : (T)0);
      sr[j] = v;
      mx = fmax(mx, v);
    }
    mx = fmax(mx, ar_hmax(mv));
    /* -inf scores add 0 (a row of only -inf keeps sum 0: NaN probabilities, lse -inf, as
     * PyTorch); a NaN makes the sum NaN */
    AR_V sv = (AR_V)0;
    T sum = (T)0;
    for (j = 0; j + AR_W <= kend; j += AR_W) {
      AR_V v = KILN_CAT(vload, AR_W)(0, sr + j);
      AR_V e = select(exp(v - mx), (AR_V)0, v == (AR_V)(-INFINITY));
      KILN_CAT(vstore, AR_W)(e, 0, sr + j);
      sv += e;
    }
    for (; j < kend; j++) {
      T v = sr[j], e = v == -INFINITY ? (T)0 : exp(v - mx);
      sr[j] = e;
      sum += e;
    }
    sum += ar_hsum(sv);
    lse[loff + b0 * Sq + r] = mx + log(sum);
    const T inv = (T)1 / sum;
    for (j = 0; j + AR_W <= kend; j += AR_W)
      KILN_CAT(vstore, AR_W)(KILN_CAT(vload, AR_W)(0, sr + j) * inv, 0, sr + j);
    for (; j < kend; j++)
      sr[j] *= inv;
    for (j = kend; j < ZEND(i); j++)
      sr[j] = (T)0;
  }
}


/*
 * Forward, register-blocked like a GEMM. A work-group owns ATT_BQ queries of one (batch, head);
 * work-item (tr, tc) of its (BQ/TM) x (BK/TN) grid owns TM query rows (the same rows in both
 * products, so each item keeps its rows' running max m and partial sum in registers):
 *   S = Q K^T: a TM x TN register tile per key tile of ATT_BK keys, Q and K staged through
 *     local memory transposed ([d][row], [d][key]) in chunks of ATT_DC features, read as
 *     4-vectors (16-byte local loads, consecutive items on consecutive vectors);
 *   online softmax (in base 2, below): each row's tile max meets across the BK/TN items
 *     sharing it in local memory (red, read back as 4-vectors); p = exp2(s - m) goes to local
 *     memory as P [key][row];
 *   O += P V: the same TM rows x ON = DH/(BK/TN) head features, V staged in chunks of ATT_VK
 *     keys in the Q/K staging space.
 * An item's rows are a*4*NTR + 4*tr + u (a < TM/4, u < 4) and its keys and features
 * b*4*NTC + 4*tc + u, so the items of a warp read consecutive 4-vectors (no bank conflicts).
 * The partial row sums (over an item's own keys, rescaled with the shared max) are added
 * across the row's items once at the end. Causal: key tiles past the group's last query
 * are not visited; tiles wholly visible (no mask) skip the per-score checks. A row with every
 * key hidden keeps m = -inf: p and the rescale factor use 0 in place of m (no inf - inf), so
 * l = 0, out = 0/0 = NaN and lse = -inf.
 */
#define T4 KILN_CAT(T, 4)
#define KILN_CAT(a, b) KILN_CAT_(a, b)
#define KILN_CAT_(a, b) a##b

#ifndef ATT_BQ
#error "nn_attention.cl: the tile options (-DATT_BQ=... -DATT_DH=...) are missing"
#endif
#ifndef ATT_PF
#define ATT_PF 0
#endif
#ifndef ATT_RA
#define ATT_RA 0
#endif
#ifndef ATT_NF
#define ATT_NF 0
#endif
/* reqd_work_group_size on GPUs only: NVIDIA's compiler sizes the register budget by it (a
 * kernel without it may run 1024 items: 64 registers each). PoCL goes without: the programs
 * kiln's background cache store builds again in the same process make PoCL 3.1 compile the
 * declared size's work-group function a second time, and its dlhandle cache then releases
 * an in-flight launch against that copy (an assertion failure, pocl_release_dlhandle_cache). */
#ifdef ATT_G
#define ATT_WG(n) __attribute__((reqd_work_group_size(n, 1, 1)))
#else
#define ATT_WG(n)
#endif
#define ATT_NTR (ATT_BQ / ATT_TM)
#define ATT_NTC (ATT_BK / ATT_TN)
#define ATT_NT (ATT_NTR * ATT_NTC)
#define ATT_ON (ATT_DH / ATT_NTC)
#define ATT_QS (ATT_BQ + 4) /* row stride of Q [d][row] and P [key][row] (floats) */
#define ATT_KS (ATT_BK + 4) /* row stride of K [d][key] */
#define ATT_VS ATT_DH       /* row stride of V [key][d] */
#define ATT_QK_N (ATT_DC * (ATT_QS + ATT_KS))
/* The row reductions: slot (i NTR + tr) of item (tr, tc)'s row i holds the NTC partial values
 * at red[slot RS + tc], read back as NTC/4 4-vectors. RS/4 odd: the 8 row groups of a warp
 * read 8 different bank quads; their scalar stores hit 32 banks. */
#define ATT_RS ((ATT_NTC / 4) % 2 ? ATT_NTC : ATT_NTC + 4)
#define ATT_RED_N (ATT_BQ * ATT_RS)
#define ATT_STAGE_N0 (ATT_QK_N > ATT_VK * ATT_VS ? ATT_QK_N : ATT_VK * ATT_VS)
#if ATT_RA && ATT_RED_N > ATT_STAGE_N0
#define ATT_STAGE_N ATT_RED_N
#else
#define ATT_STAGE_N ATT_STAGE_N0
#endif
#if ATT_TM % 4 || ATT_TN % 4 || ATT_ON % 4 || ATT_BK % ATT_VK || ATT_DC % 4 ||                \
    (ATT_NTR > 8 && ATT_NTR % 8) || ATT_BQ % 16 || ATT_BK % 16 || ATT_NTC % 4
#error "nn_attention.cl: unsupported tile shape"
#endif
/* Softmax in base 2: Q is staged times scale log2(e), the mask added times log2(e), so the
 * exponentials are exp2 (one hardware instruction in f32 on GPUs) and lse = (m + log2 l) ln 2. */
#define ATT_LOG2E 1.4426950408889634074
#define ATT_LN2 0.69314718055994530942
#if defined(KILN_DT_F64)
#define ATT_EXP2(x) exp2(x)
#else
#define ATT_EXP2(x) native_exp2(x)
#endif
/* Items of a warp: 8 row groups (or all of them) x the rest in key groups. */
#define ATT_W (ATT_NTR < 8 ? ATT_NTR : 8)

#define ATT_UNPACK(dst, i, v)                                                                 \
  do {                                                                                      \
    (dst)[(i)] = (v).x;                                                                     \
    (dst)[(i) + 1] = (v).y;                                                                 \
    (dst)[(i) + 2] = (v).z;                                                                 \
    (dst)[(i) + 3] = (v).w;                                                                 \
  } while (0)

/* Features [d, d + 4) of a row of D (zeros past D): one 4-vector load when vec (the row
 * 16-byte aligned, D a multiple of 4), else element by element. */
#if defined(KILN_DT_F16)
#define ATT_VLOAD4(p) vload_half4(0, (p))
#elif defined(KILN_DT_BF16)
#define ATT_VLOAD4(p) att_bf16x4(*(global const ushort4 *)(p))
static float4
att_bf16x4(ushort4 h)
{
  return as_float4(convert_uint4(h) << 16);
}
#else
#define ATT_VLOAD4(p) (*(global const T4 *)(p))
#endif

static T4
att_load4(global const ST *row, ulong d, ulong D, uint vec)
{
  if (vec)
    return d < D ? ATT_VLOAD4(row + d) : (T4)((T)0);
  return (T4)(d < D ? KILN_LOAD(row, d) : (T)0, d + 1 < D ? KILN_LOAD(row, d + 1) : (T)0,
              d + 2 < D ? KILN_LOAD(row, d + 2) : (T)0, d + 3 < D ? KILN_LOAD(row, d + 3) : (T)0);
}

/*
 * Stages rows [r0, r0 + n) (those below `valid`) x features [d0, d0 + dc) of x (rows of D)
 * times mult into dst[dd * stride + r], zeros elsewhere, with nt work-items: a warp's items
 * on 16 rows x 2 vectors of 4 features, so that the transposed stores hit 32 different banks
 * (strides are 4 mod 32: vector j's rows sit 16 j banks apart).
 */
static void
att_stage_t(local T *dst, uint stride, uint n, global const ST *x, ulong r0, ulong valid, ulong D,
            ulong d0, T mult, uint lid, uint dc, uint nt, uint vec)
{
  for (uint e = lid; e < n * (dc / 4); e += nt) {
    uint r = e % 16 + 16 * (e / (16 * (dc / 4))), j = (e / 16) % (dc / 4);
    ulong row = r0 + r;
    T4 v4 = row < valid ? att_load4(x + row * D, d0 + 4 * j, D, vec) * mult : (T4)((T)0);
    local T *o = dst + 4 * j * stride + r;
    o[0] = v4.x;
    o[stride] = v4.y;
    o[2 * stride] = v4.z;
    o[3 * stride] = v4.w;
  }
}

/* Stages rows [r0, r0 + n) of x (rows of Dx <= ATT_DH) as they are: dst[c ATT_DH + d], zeros
 * past `valid` and Dx. */
static void
att_stage_rows(local T4 *dst4, uint n, global const ST *x, ulong r0, ulong valid, ulong Dx,
               uint lid, uint nt, uint vec)
{
  for (uint e = lid; e < n * (ATT_DH / 4); e += nt) {
    ulong row = r0 + e / (ATT_DH / 4);
    dst4[e] = row < valid ? att_load4(x + row * Dx, 4 * (e % (ATT_DH / 4)), Dx, vec)
                          : (T4)((T)0);
  }
}

/* att_stage_t in two halves, for staging through registers: the e-th of n dc/4 4-vectors of
 * the transposed chunk (the same order), and its store. */
static T4
att_chunk_load(uint e, global const ST *x, ulong r0, ulong valid, ulong D, ulong d0, T mult,
               uint dc, uint vec)
{
  uint r = e % 16 + 16 * (e / (16 * (dc / 4))), j = (e / 16) % (dc / 4);
  ulong row = r0 + r;
  return row < valid ? att_load4(x + row * D, d0 + 4 * j, D, vec) * mult : (T4)((T)0);
}

static void
att_chunk_store(local T *dst, uint stride, uint e, uint dc, T4 v4)
{
  uint r = e % 16 + 16 * (e / (16 * (dc / 4))), j = (e / 16) % (dc / 4);
  local T *o = dst + 4 * j * stride + r;
  o[0] = v4.x;
  o[stride] = v4.y;
  o[2 * stride] = v4.z;
  o[3 * stride] = v4.w;
}

/* The forward's staging steps through the registers pf: a Q/K chunk (d0) of key tile k0, or a
 * V chunk (keys k0 + c0 ...). Item lid owns 4-vectors lid + i ATT_NT. */
#define ATT_NQ4 (ATT_BQ * ATT_DC / 4)
#define ATT_NK4 (ATT_BK * ATT_DC / 4)
#define ATT_NV4 (ATT_VK * ATT_DH / 4)
#define ATT_NPF_QK ((ATT_NQ4 + ATT_NK4 + ATT_NT - 1) / ATT_NT)
#define ATT_NPF_V ((ATT_NV4 + ATT_NT - 1) / ATT_NT)
#define ATT_NPF (ATT_NPF_QK > ATT_NPF_V ? ATT_NPF_QK : ATT_NPF_V)

static void
att_fwd_load_qk(T4 *pf, uint lid, global const ST *qb, ulong q0, ulong Sq, global const ST *kb,
                ulong k0, ulong Sk, ulong D, ulong d0, T scale, uint vec)
{
  for (int i = 0; i < ATT_NPF_QK; i++) {
    uint e = lid + i * ATT_NT;
    pf[i] = e < ATT_NQ4 ? att_chunk_load(e, qb, q0, Sq, D, d0, scale, ATT_DC, vec)
            : e < ATT_NQ4 + ATT_NK4
                ? att_chunk_load(e - ATT_NQ4, kb, k0, Sk, D, d0, (T)1, ATT_DC, vec)
                : (T4)((T)0);
  }
}

static void
att_fwd_store_qk(local T *stage, const T4 *pf, uint lid)
{
  for (int i = 0; i < ATT_NPF_QK; i++) {
    uint e = lid + i * ATT_NT;
    if (e < ATT_NQ4)
      att_chunk_store(stage, ATT_QS, e, ATT_DC, pf[i]);
    else if (e < ATT_NQ4 + ATT_NK4)
      att_chunk_store(stage + ATT_DC * ATT_QS, ATT_KS, e - ATT_NQ4, ATT_DC, pf[i]);
  }
}

static void
att_fwd_load_v(T4 *pf, uint lid, global const ST *vb, ulong k0, ulong Sk, ulong Dv, uint vec)
{
  for (int i = 0; i < ATT_NPF_V; i++) {
    uint e = lid + i * ATT_NT;
    ulong key = k0 + e / (ATT_DH / 4);
    pf[i] = e < ATT_NV4 && key < Sk ? att_load4(vb + key * Dv, 4 * (e % (ATT_DH / 4)), Dv, vec)
                                    : (T4)((T)0);
  }
}

static void
att_fwd_store_v(local T4 *stage4, const T4 *pf, uint lid)
{
  for (int i = 0; i < ATT_NPF_V; i++) {
    uint e = lid + i * ATT_NT;
    if (e < ATT_NV4)
      stage4[e] = pf[i];
  }
}

#if !ATT_NF
kernel ATT_WG(ATT_NT) void
att_fwd(global const ST *q, ulong qoff, global const ST *k, ulong koff, global const ST *v,
        ulong voff, global const ST *mask, ulong moff, global ST *o, ulong ooff, global T *lse,
        ulong loff, ulong BH, ulong Sq, ulong Sk, ulong D, ulong Dv, ulong mstride, T scale,
        uint flags)
{
  local T4 stage4[ATT_STAGE_N / 4];
  local T4 ps4[ATT_BK * ATT_QS / 4];
#if ATT_RA
  local T4 *red4 = stage4;
#else
  local T4 red4[ATT_RED_N / 4];
#endif
  local T *stage = (local T *)stage4, *red = (local T *)red4;
  const uint lid = get_local_id(0);
  const uint tr = lid % ATT_W + ATT_W * (lid / (ATT_W * ATT_NTC));
  const uint tc = (lid / ATT_W) % ATT_NTC;
  const ulong nqt = (Sq + ATT_BQ - 1) / ATT_BQ, g = get_group_id(0);
  /* Causal: the last query tiles (the most keys) first, so that the light ones fill the
   * last wave instead of the heavy ones. */
  const ulong bh = g / nqt, qt = (flags & ATT_CAUSAL) ? nqt - 1 - g % nqt : g % nqt;
  const ulong q0 = qt * ATT_BQ;
  global const ST *qb = q + qoff + bh * Sq * D;
  global const ST *kb = k + koff + bh * Sk * D;
  global const ST *vb = v + voff + bh * Sk * Dv;
  global const ST *mb = mask + moff + bh * mstride;
  const T qscale = scale * (T)ATT_LOG2E;
  T acc[ATT_TM][ATT_ON], m[ATT_TM], lp[ATT_TM];
  for (int i = 0; i < ATT_TM; i++) {
    m[i] = -INFINITY;
    lp[i] = (T)0;
    for (int e = 0; e < ATT_ON; e++)
      acc[i][e] = (T)0;
  }
  ulong kend = Sk;
  if ((flags & ATT_CAUSAL) && q0 + ATT_BQ < kend)
    kend = q0 + ATT_BQ;
  const uint vec = flags & ATT_VEC;
  T4 pf[ATT_NPF];
#if ATT_PF
  if (kend > 0)
    att_fwd_load_qk(pf, lid, qb, q0, Sq, kb, 0, Sk, D, 0, qscale, vec);
#endif
  for (ulong k0 = 0; k0 < kend; k0 += ATT_BK) {
    T s[ATT_TM][ATT_TN];
    for (int i = 0; i < ATT_TM; i++)
      for (int j = 0; j < ATT_TN; j++)
        s[i][j] = (T)0;
    for (ulong d0 = 0; d0 < D; d0 += ATT_DC) {
      barrier(CLK_LOCAL_MEM_FENCE);
#if !ATT_PF
      att_fwd_load_qk(pf, lid, qb, q0, Sq, kb, k0, Sk, D, d0, qscale, vec);
#endif
      att_fwd_store_qk(stage, pf, lid);
      barrier(CLK_LOCAL_MEM_FENCE);
#if ATT_PF
      /* The next step's loads fly while this chunk is multiplied: the next chunk, or this
       * tile's first V chunk. */
      if (d0 + ATT_DC < D)
        att_fwd_load_qk(pf, lid, qb, q0, Sq, kb, k0, Sk, D, d0 + ATT_DC, qscale, vec);
      else
        att_fwd_load_v(pf, lid, vb, k0, Sk, Dv, vec);
#endif
      for (int dd = 0; dd < ATT_DC; dd++) {
        T qv[ATT_TM], kv[ATT_TN];
        for (int a = 0; a < ATT_TM / 4; a++) {
          T4 t = stage4[dd * (ATT_QS / 4) + a * ATT_NTR + tr];
          ATT_UNPACK(qv, 4 * a, t);
        }
        for (int b = 0; b < ATT_TN / 4; b++) {
          T4 t = stage4[ATT_DC * ATT_QS / 4 + dd * (ATT_KS / 4) + b * ATT_NTC + tc];
          ATT_UNPACK(kv, 4 * b, t);
        }
        for (int i = 0; i < ATT_TM; i++)
          for (int j = 0; j < ATT_TN; j++)
            s[i][j] += qv[i] * kv[j];
      }
    }
    /* Hide what the row may not see (nothing in a tile of keys all below Sk and the group's
     * first query, without a mask); the row maxima of this tile meet in red. */
    if ((flags & ATT_MASK) || k0 + ATT_BK > Sk || ((flags & ATT_CAUSAL) && k0 + ATT_BK > q0 + 1)) {
      for (int i = 0; i < ATT_TM; i++) {
        ulong row = q0 + (i / 4) * 4 * ATT_NTR + 4 * tr + i % 4;
        for (int j = 0; j < ATT_TN; j++) {
          ulong col = k0 + (j / 4) * 4 * ATT_NTC + 4 * tc + j % 4;
          if (col >= Sk || ((flags & ATT_CAUSAL) && col > row))
            s[i][j] = -INFINITY;
          else if ((flags & ATT_MASK) && row < Sq)
            s[i][j] += KILN_LOAD(mb, row * Sk + col) * (T)ATT_LOG2E;
        }
      }
    }
#if ATT_RA
    barrier(CLK_LOCAL_MEM_FENCE); /* red is the staging space the last chunk was read from */
#endif
    for (int i = 0; i < ATT_TM; i++) {
      T mx = s[i][0];
      for (int j = 1; j < ATT_TN; j++)
        mx = fmax(mx, s[i][j]);
      red[(i * ATT_NTR + tr) * ATT_RS + tc] = mx;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = 0; i < ATT_TM; i++) {
      T4 m4 = red4[(i * ATT_NTR + tr) * (ATT_RS / 4)];
      for (int t = 1; t < ATT_NTC / 4; t++)
        m4 = fmax(m4, red4[(i * ATT_NTR + tr) * (ATT_RS / 4) + t]);
      T mt = fmax(fmax(m[i], fmax(m4.x, m4.y)), fmax(m4.z, m4.w));
      T msafe = mt == -INFINITY ? (T)0 : mt;
      T cf = ATT_EXP2(m[i] - msafe);
      m[i] = mt;
      lp[i] *= cf;
      for (int e = 0; e < ATT_ON; e++)
        acc[i][e] *= cf;
      for (int j = 0; j < ATT_TN; j++) {
        T p = ATT_EXP2(s[i][j] - msafe);
        lp[i] += p;
        s[i][j] = p;
      }
    }
    for (int j = 0; j < ATT_TN; j++) {
      uint col = (j / 4) * 4 * ATT_NTC + 4 * tc + j % 4;
      for (int a = 0; a < ATT_TM / 4; a++)
        ps4[col * (ATT_QS / 4) + a * ATT_NTR + tr] =
            (T4)(s[4 * a][j], s[4 * a + 1][j], s[4 * a + 2][j], s[4 * a + 3][j]);
    }
    /* O += P V over chunks of ATT_VK keys (the staging space is free since the barrier, and
     * with ATT_RA once every item has read its maxima). */
    for (uint c0 = 0; c0 < ATT_BK && k0 + c0 < Sk; c0 += ATT_VK) {
      if (c0 || ATT_RA)
        barrier(CLK_LOCAL_MEM_FENCE);
#if !ATT_PF
      att_fwd_load_v(pf, lid, vb, k0 + c0, Sk, Dv, vec);
#endif
      att_fwd_store_v(stage4, pf, lid);
      barrier(CLK_LOCAL_MEM_FENCE);
#if ATT_PF
      /* The next V chunk, or the next key tile's first Q/K chunk. */
      if (c0 + ATT_VK < ATT_BK && k0 + c0 + ATT_VK < Sk)
        att_fwd_load_v(pf, lid, vb, k0 + c0 + ATT_VK, Sk, Dv, vec);
      else if (k0 + ATT_BK < kend)
        att_fwd_load_qk(pf, lid, qb, q0, Sq, kb, k0 + ATT_BK, Sk, D, 0, qscale, vec);
#endif
      for (int c = 0; c < ATT_VK; c++) {
        T pv[ATT_TM], vv[ATT_ON];
        for (int a = 0; a < ATT_TM / 4; a++) {
          T4 t = ps4[(c0 + c) * (ATT_QS / 4) + a * ATT_NTR + tr];
          ATT_UNPACK(pv, 4 * a, t);
        }
        for (int b = 0; b < ATT_ON / 4; b++) {
          T4 t = stage4[c * (ATT_VS / 4) + b * ATT_NTC + tc];
          ATT_UNPACK(vv, 4 * b, t);
        }
        for (int i = 0; i < ATT_TM; i++)
          for (int e = 0; e < ATT_ON; e++)
            acc[i][e] += pv[i] * vv[e];
      }
    }
  }
  /* The row sums meet in red (all of a row's items applied the same rescale factors). */
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int i = 0; i < ATT_TM; i++)
    red[(i * ATT_NTR + tr) * ATT_RS + tc] = lp[i];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int i = 0; i < ATT_TM; i++) {
    ulong row = q0 + (i / 4) * 4 * ATT_NTR + 4 * tr + i % 4;
    if (row >= Sq)
      continue;
    T4 l4 = red4[(i * ATT_NTR + tr) * (ATT_RS / 4)];
    for (int t = 1; t < ATT_NTC / 4; t++)
      l4 += red4[(i * ATT_NTR + tr) * (ATT_RS / 4) + t];
    T l = (l4.x + l4.y) + (l4.z + l4.w);
    T inv = (T)1 / l;
    global ST *ob = o + ooff + (bh * Sq + row) * Dv;
    for (int e = 0; e < ATT_ON; e++) {
      ulong d = (e / 4) * 4 * ATT_NTC + 4 * tc + e % 4;
      if (d < Dv)
        KILN_STORE(ob, d, l > (T)0 ? acc[i][e] * inv : (T)NAN);
    }
    if (tc == 0)
      lse[loff + bh * Sq + row] = (m[i] + log2(l)) * (T)ATT_LN2;
  }
}
#endif

/* The backward kernels and rope: only in the program of the rule's tile at head 128 (the one
 * they run from, -DATT_BWD=N); the other forward variants build att_fwd alone. */
#ifdef ATT_BWD

/* delta: ATT_PRE_RW rows per work-group of 256, 32 items along each row (coalesced loads),
 * their partial sums added in local memory. */
#define ATT_PRE_RW 8
kernel ATT_WG(256) void
att_bwd_pre(global const ST *dout, ulong doff, global const ST *o, ulong ooff, global T *delta,
            ulong rows, ulong Dv)
{
  local T part[256];
  const uint lid = get_local_id(0), lane = lid % 32;
  const ulong r = get_group_id(0) * ATT_PRE_RW + lid / 32;
  T a = (T)0;
  if (r < rows)
    for (ulong d = lane; d < Dv; d += 32)
      a += KILN_LOAD(dout, doff + r * Dv + d) * KILN_LOAD(o, ooff + r * Dv + d);
  part[lid] = a;
  for (uint h = 16; h > 0; h /= 2) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lane < h)
      part[lid] += part[lid + h];
  }
  if (lane == 0 && r < rows)
    delta[r] = part[lid];
}

/*
 * Backward tiles, -DATT_BWD (lib/ops/nn_attention.c, att_bwd_tables and att_bwd_effective; the
 * programs carry the rule's forward variant, ATT_DH 128 on every device): register tiles of
 * AKV_TM keys x AKV_TN queries (att_bwd_dkdv) and AQ_TM queries x AQ_TN keys (att_bwd_dq),
 * staging chunks of *_DC features (transposed) and *_VK rows (as they are); chunks as large as
 * the local memory allows (each chunk costs two barriers and a wait for its loads).
 *   att_bwd_dkdv: ABK_KV keys per work-group, query tiles of ABQ_KV;
 *   att_bwd_dq:   ABQ_Q queries per work-group, key tiles of ABK_Q.
 * ATT_BWD 1: 4 x 4 register tiles, local arrays within 32 KiB (OpenCL's minimum for GPUs, and
 * oclgrind's default);
 * ATT_BWD 2 (f32 and halves): 256 items, twice the keys (dK, dV) or queries (dQ) per
 * work-group, so each staged Q/dO row (K/V row) serves twice the products; 43 and 38 KiB;
 * ATT_BWD 3: table 1's tiles with chunks twice as large (half the barriers), 45 and 35 KiB
 * (f64 37 and 28 KiB);
 * ATT_BWD 4-7 (f32 and halves; AKV_DQ): att_bwd_dkdv computes dQ as well (FlashAttention-2's
 * five products instead of seven): with flags ATT_DQF, after each query tile's dK and dV, its
 * dQ contribution dS K over the group's keys (warp w owns AQF_R queries, lane l features
 * 4l..4l+3, K rows staged 2 AKV_VK at a time), moved through local memory so that consecutive
 * items add consecutive elements, added to the f32 accumulator dqacc [BH, Sq, D] (zeroed by
 * the host) with atomic adds: NVIDIA's red.global.add.f32 (inline PTX, where
 * cl_nv_pragma_unroll says the compiler is NVIDIA's), else a compare-and-swap loop. The order
 * of the adds varies, so dQ is not bit-reproducible run to run (dK and dV are); att_bwd_dq_store
 * writes it out in q's dtype. Their global loads go one staging step ahead into registers
 * (AKV_PF, as att_fwd's ATT_PF), so that they fly while the previous chunk is multiplied.
 * 64 keys x 64 queries per work-group and tile, 16-feature chunks, 8 rows:
 *   4: 4 x 4 (256 items, table 2's att_bwd_dkdv);
 *   5: 4 keys x 8 queries (128 items, 16 features of dK and dV each);
 *   6: 8 keys x 4 queries (128 items, 8 features each: 8 local loads per 128 products in
 *      the dV and dK products);
 *   7: 6 with the dQ of a query tile in one pass (AQF_R 16 queries per row group; 4-6 take
 *      passes of 8 queries per row group, re-staging K for each).
 * att_bwd_dq is left out of their programs. f64 builds table 1 for anything but 3 (the host
 * never asks for the others in f64).
 */
#if ATT_BWD >= 4 && !defined(KILN_DT_F64)
#define AKV_DQ 1
#define AKV_PF 1
#else
#define AKV_DQ 0
#define AKV_PF 0
#endif
#if defined(KILN_DT_F64) && ATT_BWD == 3
#define ABK_KV 32
#define ABQ_KV 32
#define AKV_DC 32
#define AKV_VK 8
#define ABQ_Q 32
#define ABK_Q 32
#define AQ_DC 32
#define AQ_VK 16
#elif defined(KILN_DT_F64)
#define ABK_KV 32
#define ABQ_KV 32
#define AKV_DC 16
#define AKV_VK 4
#define ABQ_Q 32
#define ABK_Q 32
#define AQ_DC 16
#define AQ_VK 16
#elif ATT_BWD == 3
#define ABK_KV 32
#define ABQ_KV 64
#define AKV_DC 64
#define AKV_VK 16
#define ABQ_Q 64
#define ABK_Q 32
#define AQ_DC 64
#define AQ_VK 32
#elif ATT_BWD >= 2
#define ABK_KV 64
#define ABQ_KV 64
#define AKV_DC 16
#define AKV_VK 8
#define ABQ_Q 128
#define ABK_Q 32
#define AQ_DC 32
#define AQ_VK 32
#if ATT_BWD == 5
#define AKV_TN 8
#elif ATT_BWD >= 6
#define AKV_TM 8
#endif
#if ATT_BWD == 7
#define AQF_R 16
#endif
#else
#define ABK_KV 32
#define ABQ_KV 64
#define AKV_DC 32
#define AKV_VK 8
#define ABQ_Q 64
#define ABK_Q 32
#define AQ_DC 32
#define AQ_VK 32
#endif
#ifndef AKV_TM
#define AKV_TM 4
#endif
#ifndef AKV_TN
#define AKV_TN 4
#endif
#ifndef AQ_TM
#define AQ_TM 4
#endif
#ifndef AQ_TN
#define AQ_TN 4
#endif

#define AKV_NTR (ABK_KV / AKV_TM)
#define AKV_NTC (ABQ_KV / AKV_TN)
#define AKV_NT (AKV_NTR * AKV_NTC)
#define AKV_W (AKV_NTR < 8 ? AKV_NTR : 8)
#define AKV_ON (ATT_DH / AKV_NTC)
#define AKV_KS (ABK_KV + 4)
#define AKV_QS (ABQ_KV + 4)
#define AKV_A (AKV_DC * (AKV_KS + AKV_QS))
#define AKV_D (AKV_VK * 2 * ATT_DH)
#define AKV_STAGE (AKV_A > AKV_D ? AKV_A : AKV_D)

#define AQ_NTR (ABQ_Q / AQ_TM)
#define AQ_NTC (ABK_Q / AQ_TN)
#define AQ_NT (AQ_NTR * AQ_NTC)
#define AQ_W (AQ_NTR < 8 ? AQ_NTR : 8)
#define AQ_ON (ATT_DH / AQ_NTC)
#define AQ_QS (ABQ_Q + 4)
#define AQ_KS (ABK_Q + 4)
#define AQ_A (AQ_DC * (AQ_QS + AQ_KS))
#define AQ_D (AQ_VK * ATT_DH)
#define AQ_STAGE (AQ_A > AQ_D ? AQ_A : AQ_D)

/* The backward kernels need 4 features per item: programs of a narrow forward variant (whose
 * ATT_DH is below that) leave them out; the backward always runs the default variant
 * (ATT_DH 128). */
#if AKV_ON >= 4 && AQ_ON >= 4

#if AKV_DQ
/* dQ through dqacc: items per query row (a lane per 4 features), row groups, queries per row
 * group and pass, passes over the query tile (the accumulators stay at AQF_R 4-vectors), K
 * rows per staging chunk. */
#define AQF_L (ATT_DH / 4)
#define AQF_W (AKV_NT / AQF_L)
#ifndef AQF_R
#define AQF_R 8
#endif
#define AQF_P (ABQ_KV / (AQF_W * AQF_R))
#define AQF_VK (2 * AKV_VK)
#if AKV_NT % AQF_L || AQF_P * AQF_W * AQF_R != ABQ_KV || ABK_KV % AQF_VK || AQF_VK % 4 ||    \
    (AQF_P > 1 && AQF_W * AQF_R * ATT_DH > ABQ_KV * AKV_KS) || 2 * AKV_KS < ATT_DH ||            \
    AKV_STAGE < AQF_VK * ATT_DH
#error "nn_attention.cl: unsupported fused dQ tile"
#endif

static void
att_red_add(global float *p, float v)
{
#ifdef cl_nv_pragma_unroll
  asm volatile("red.global.add.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
#else
  volatile global uint *u = (volatile global uint *)p;
  uint old = *u, seen;
  while ((seen = atomic_cmpxchg(u, old, as_uint(as_float(old) + v))) != old)
    old = seen;
#endif
}

/* One query tile's dQ = scale dS K over the group's keys, added to dq [Sq, D] (this (batch,
 * head)'s rows). pds4 holds P^T, then dS [query][key] (row stride AKV_KS) from
 * ABQ_KV AKV_KS / 4 on; each pass's dQ rows go through the P^T half (both halves when one
 * pass covers the tile). Every item calls it (barriers inside). */
static void
att_bwd_dq_add(global float *dq, local T4 *pds4, local T4 *stage4, global const ST *kb, ulong k0,
               ulong Sk, ulong i0, ulong Sq, ulong D, T scale, uint lid, uint vec)
{
  local const T4 *ds4 = pds4 + ABQ_KV * AKV_KS / 4;
  local const T *dql = (local const T *)pds4;
  const uint fl = lid % AQF_L;
  for (uint p = 0; p < AQF_P; p++) {
    const uint q0 = p * AQF_W * AQF_R, qw = (lid / AQF_L) * AQF_R;
    T4 acc[AQF_R];
    for (int r = 0; r < AQF_R; r++)
      acc[r] = (T4)((T)0);
    for (uint c0 = 0; c0 < ABK_KV && k0 + c0 < Sk; c0 += AQF_VK) {
      barrier(CLK_LOCAL_MEM_FENCE);
      att_stage_rows(stage4, AQF_VK, kb, k0 + c0, Sk, D, lid, AKV_NT, vec);
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int c = 0; c < AQF_VK; c += 4) {
        T4 k4[4];
        for (int u = 0; u < 4; u++)
          k4[u] = stage4[(c + u) * AQF_L + fl];
        for (int r = 0; r < AQF_R; r++) {
          T4 d4 = ds4[(q0 + qw + r) * (AKV_KS / 4) + (c0 + c) / 4];
          acc[r] += d4.x * k4[0] + d4.y * k4[1] + d4.z * k4[2] + d4.w * k4[3];
        }
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int r = 0; r < AQF_R; r++)
      pds4[(qw + r) * AQF_L + fl] = acc[r];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint e = lid; e < AQF_W * AQF_R * ATT_DH; e += AKV_NT) {
      ulong row = i0 + q0 + e / ATT_DH, d = e % ATT_DH;
      if (row < Sq && d < D)
        att_red_add(dq + row * D + d, dql[e] * scale);
    }
  }
}

/* dQ from the f32 accumulator to q's dtype. */
kernel void
att_bwd_dq_store(global const T *acc, global ST *dq, ulong dqoff, ulong n)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    KILN_STORE(dq, dqoff + i, acc[i]);
}
#endif

#if AKV_PF
/* att_bwd_dkdv's staging steps through the registers pf: kind 0 a K/Q chunk (features x..),
 * 1 a V/dO chunk, 2 rows x.. of dO and Q as they are (att_stage_t's and att_stage_rows'
 * layouts); item lid owns 4-vectors lid + i AKV_NT. */
#define AKV_NK4 (ABK_KV * (AKV_DC / 4))
#define AKV_NC4 (AKV_NK4 + ABQ_KV * (AKV_DC / 4))
#define AKV_NRR4 (AKV_VK * (ATT_DH / 4))
#define AKV_NPF (((AKV_NC4 > 2 * AKV_NRR4 ? AKV_NC4 : 2 * AKV_NRR4) + AKV_NT - 1) / AKV_NT)

static void
akv_load(T4 *pf, uint kind, ulong i0, ulong x, uint lid, global const ST *qb,
         global const ST *kb, global const ST *vb, global const ST *db, ulong k0, ulong Sq,
         ulong Sk, ulong D, ulong Dv, T qscale, uint vec)
{
  for (int i = 0; i < AKV_NPF; i++) {
    uint e = lid + i * AKV_NT;
    T4 v4 = (T4)((T)0);
    if (kind < 2) {
      ulong Dx = kind ? Dv : D;
      if (e < AKV_NK4)
        v4 = att_chunk_load(e, kind ? vb : kb, k0, Sk, Dx, x, (T)1, AKV_DC, vec);
      else if (e < AKV_NC4)
        v4 = att_chunk_load(e - AKV_NK4, kind ? db : qb, i0, Sq, Dx, x, kind ? (T)1 : qscale,
                            AKV_DC, vec);
    } else if (e < 2 * AKV_NRR4) {
      uint j = e < AKV_NRR4 ? e : e - AKV_NRR4;
      ulong Dx = e < AKV_NRR4 ? Dv : D, row = i0 + x + j / (ATT_DH / 4);
      if (row < Sq)
        v4 = att_load4((e < AKV_NRR4 ? db : qb) + row * Dx, 4 * (j % (ATT_DH / 4)), Dx, vec);
    }
    pf[i] = v4;
  }
}

static void
akv_store(local T4 *stage4, const T4 *pf, uint kind, uint lid)
{
  local T *stage = (local T *)stage4;
  for (int i = 0; i < AKV_NPF; i++) {
    uint e = lid + i * AKV_NT;
    if (kind < 2) {
      if (e < AKV_NK4)
        att_chunk_store(stage, AKV_KS, e, AKV_DC, pf[i]);
      else if (e < AKV_NC4)
        att_chunk_store(stage + AKV_DC * AKV_KS, AKV_QS, e - AKV_NK4, AKV_DC, pf[i]);
    } else if (e < 2 * AKV_NRR4) {
      stage4[e] = pf[i];
    }
  }
}
#define AKV_LOAD(kind, i0, x)                                                                 \
  akv_load(pf, kind, i0, x, lid, qb, kb, vb, db, k0, Sq, Sk, D, Dv, qscale, vec)
#endif

/*
 * dK and dV: work-item (tr, tc) holds AKV_TM keys x AKV_TN queries of S^T = K Q^T and of
 * dP^T = V dO^T (both from transposed chunks), turns them into P^T = exp(s - lse) and
 * dS^T = P^T (dP^T - delta), which go to local memory as [query][key]; then its keys' rows of
 * dV += P^T dO and dK += dS^T Q over ATT_DH / (ABQ_KV / AKV_TN) features (dO and Q rows staged
 * as they are). Hidden pairs (past Sq or Sk, causal, -inf in the mask) give p = 0.
 */
kernel ATT_WG(AKV_NT) void
att_bwd_dkdv(global const ST *q, ulong qoff, global const ST *k, ulong koff, global const ST *v,
             ulong voff, global const ST *mask, ulong moff, global const ST *dout, ulong doff,
             global const T *lse, ulong loff, global const T *delta, global ST *dk, ulong dkoff,
             global ST *dv, ulong dvoff, global T *dqacc, ulong BH, ulong Sq, ulong Sk, ulong D,
             ulong Dv, ulong mstride, T scale, uint flags)
{
  local T4 stage4[AKV_STAGE / 4];
  /* P^T and dS^T; with AKV_DQ, then the query tile's dQ [ABQ_KV][ATT_DH]. */
  local T4 pds4[2 * ABQ_KV * AKV_KS / 4];
  local T4 *ps4 = pds4, *ds4 = pds4 + ABQ_KV * AKV_KS / 4;
  local T lse_s[ABQ_KV], del_s[ABQ_KV];
  local T *stage = (local T *)stage4;
  const uint lid = get_local_id(0), vec = flags & ATT_VEC;
  const uint tr = lid % AKV_W + AKV_W * (lid / (AKV_W * AKV_NTC));
  const uint tc = (lid / AKV_W) % AKV_NTC;
  const ulong nkt = (Sk + ABK_KV - 1) / ABK_KV, g = get_group_id(0);
  const ulong bh = g / nkt, k0 = (g % nkt) * ABK_KV;
  global const ST *qb = q + qoff + bh * Sq * D;
  global const ST *kb = k + koff + bh * Sk * D;
  global const ST *vb = v + voff + bh * Sk * Dv;
  global const ST *db = dout + doff + bh * Sq * Dv;
  global const ST *mb = mask + moff + bh * mstride;
  /* Scores in base 2, as att_fwd's: Q staged times scale log2(e), lse and mask times log2(e). */
  const T qscale = scale * (T)ATT_LOG2E;
  T adk[AKV_TM][AKV_ON], adv[AKV_TM][AKV_ON];
  uint keys[AKV_TM];
  for (int i = 0; i < AKV_TM; i++) {
    keys[i] = (i / 4) * 4 * AKV_NTR + 4 * tr + i % 4;
    for (int e = 0; e < AKV_ON; e++)
      adk[i][e] = adv[i][e] = (T)0;
  }
  /* Causal: queries before the first key see none of the group's keys. */
  ulong istart = (flags & ATT_CAUSAL) ? k0 - k0 % ABQ_KV : 0;
#if AKV_PF
  T4 pf[AKV_NPF];
  if (istart < Sq)
    AKV_LOAD(0, istart, 0);
#endif
  for (ulong i0 = istart; i0 < Sq; i0 += ABQ_KV) {
    for (uint e = lid; e < ABQ_KV; e += AKV_NT) {
      lse_s[e] = i0 + e < Sq ? lse[loff + bh * Sq + i0 + e] * (T)ATT_LOG2E : (T)0;
      del_s[e] = i0 + e < Sq ? delta[bh * Sq + i0 + e] : (T)0;
    }
    T st[AKV_TM][AKV_TN], dpt[AKV_TM][AKV_TN];
    for (int i = 0; i < AKV_TM; i++)
      for (int j = 0; j < AKV_TN; j++)
        st[i][j] = dpt[i][j] = (T)0;
    for (ulong d0 = 0; d0 < D; d0 += AKV_DC) {
      barrier(CLK_LOCAL_MEM_FENCE);
#if AKV_PF
      akv_store(stage4, pf, 0, lid);
      barrier(CLK_LOCAL_MEM_FENCE);
      if (d0 + AKV_DC < D)
        AKV_LOAD(0, i0, d0 + AKV_DC);
      else
        AKV_LOAD(1, i0, 0);
#else
      att_stage_t(stage, AKV_KS, ABK_KV, kb, k0, Sk, D, d0, (T)1, lid, AKV_DC, AKV_NT, vec);
      att_stage_t(stage + AKV_DC * AKV_KS, AKV_QS, ABQ_KV, qb, i0, Sq, D, d0, qscale, lid, AKV_DC,
                  AKV_NT, vec);
      barrier(CLK_LOCAL_MEM_FENCE);
#endif
      for (int dd = 0; dd < AKV_DC; dd++) {
        T kv[AKV_TM], qv[AKV_TN];
        for (int a = 0; a < AKV_TM / 4; a++) {
          T4 t = stage4[dd * (AKV_KS / 4) + a * AKV_NTR + tr];
          ATT_UNPACK(kv, 4 * a, t);
        }
        for (int b = 0; b < AKV_TN / 4; b++) {
          T4 t = stage4[AKV_DC * AKV_KS / 4 + dd * (AKV_QS / 4) + b * AKV_NTC + tc];
          ATT_UNPACK(qv, 4 * b, t);
        }
        for (int i = 0; i < AKV_TM; i++)
          for (int j = 0; j < AKV_TN; j++)
            st[i][j] += kv[i] * qv[j];
      }
    }
    for (ulong d0 = 0; d0 < Dv; d0 += AKV_DC) {
      barrier(CLK_LOCAL_MEM_FENCE);
#if AKV_PF
      akv_store(stage4, pf, 1, lid);
      barrier(CLK_LOCAL_MEM_FENCE);
      if (d0 + AKV_DC < Dv)
        AKV_LOAD(1, i0, d0 + AKV_DC);
      else
        AKV_LOAD(2, i0, 0);
#else
      att_stage_t(stage, AKV_KS, ABK_KV, vb, k0, Sk, Dv, d0, (T)1, lid, AKV_DC, AKV_NT, vec);
      att_stage_t(stage + AKV_DC * AKV_KS, AKV_QS, ABQ_KV, db, i0, Sq, Dv, d0, (T)1, lid, AKV_DC,
                  AKV_NT, vec);
      barrier(CLK_LOCAL_MEM_FENCE);
#endif
      for (int dd = 0; dd < AKV_DC; dd++) {
        T vv[AKV_TM], ov[AKV_TN];
        for (int a = 0; a < AKV_TM / 4; a++) {
          T4 t = stage4[dd * (AKV_KS / 4) + a * AKV_NTR + tr];
          ATT_UNPACK(vv, 4 * a, t);
        }
        for (int b = 0; b < AKV_TN / 4; b++) {
          T4 t = stage4[AKV_DC * AKV_KS / 4 + dd * (AKV_QS / 4) + b * AKV_NTC + tc];
          ATT_UNPACK(ov, 4 * b, t);
        }
        for (int i = 0; i < AKV_TM; i++)
          for (int j = 0; j < AKV_TN; j++)
            dpt[i][j] += vv[i] * ov[j];
      }
    }
    for (int j = 0; j < AKV_TN; j++) {
      uint qc = (j / 4) * 4 * AKV_NTC + 4 * tc + j % 4;
      ulong qi = i0 + qc;
      for (int i = 0; i < AKV_TM; i++) {
        ulong key = k0 + keys[i];
        T x = st[i][j];
        int hidden = key >= Sk || qi >= Sq || ((flags & ATT_CAUSAL) && key > qi);
        if (!hidden && (flags & ATT_MASK))
          x += KILN_LOAD(mb, qi * Sk + key) * (T)ATT_LOG2E;
        T p = hidden || x == -INFINITY ? (T)0 : ATT_EXP2(x - lse_s[qc]);
        st[i][j] = p;
        dpt[i][j] = p * (dpt[i][j] - del_s[qc]);
      }
      for (int a = 0; a < AKV_TM / 4; a++) {
        uint at = qc * (AKV_KS / 4) + a * AKV_NTR + tr;
        ps4[at] = (T4)(st[4 * a][j], st[4 * a + 1][j], st[4 * a + 2][j], st[4 * a + 3][j]);
        ds4[at] = (T4)(dpt[4 * a][j], dpt[4 * a + 1][j], dpt[4 * a + 2][j], dpt[4 * a + 3][j]);
      }
    }
    for (uint c0 = 0; c0 < ABQ_KV && i0 + c0 < Sq; c0 += AKV_VK) {
      barrier(CLK_LOCAL_MEM_FENCE);
#if AKV_PF
      akv_store(stage4, pf, 2, lid);
      barrier(CLK_LOCAL_MEM_FENCE);
      /* The next rows, or the next query tile's first K/Q chunk. */
      if (c0 + AKV_VK < ABQ_KV && i0 + c0 + AKV_VK < Sq)
        AKV_LOAD(2, i0, c0 + AKV_VK);
      else if (i0 + ABQ_KV < Sq)
        AKV_LOAD(0, i0 + ABQ_KV, 0);
#else
      att_stage_rows(stage4, AKV_VK, db, i0 + c0, Sq, Dv, lid, AKV_NT, vec);
      att_stage_rows(stage4 + AKV_VK * ATT_DH / 4, AKV_VK, qb, i0 + c0, Sq, D, lid, AKV_NT, vec);
      barrier(CLK_LOCAL_MEM_FENCE);
#endif
      for (int c = 0; c < AKV_VK; c++) {
        T pv[AKV_TM], dsv[AKV_TM], ov[AKV_ON], qv[AKV_ON];
        for (int a = 0; a < AKV_TM / 4; a++) {
          uint at = (c0 + c) * (AKV_KS / 4) + a * AKV_NTR + tr;
          T4 t = ps4[at], u = ds4[at];
          ATT_UNPACK(pv, 4 * a, t);
          ATT_UNPACK(dsv, 4 * a, u);
        }
        for (int b = 0; b < AKV_ON / 4; b++) {
          T4 t = stage4[c * (ATT_DH / 4) + b * AKV_NTC + tc];
          T4 u = stage4[(AKV_VK + c) * (ATT_DH / 4) + b * AKV_NTC + tc];
          ATT_UNPACK(ov, 4 * b, t);
          ATT_UNPACK(qv, 4 * b, u);
        }
        for (int i = 0; i < AKV_TM; i++)
          for (int e = 0; e < AKV_ON; e++) {
            adv[i][e] += pv[i] * ov[e];
            adk[i][e] += dsv[i] * qv[e];
          }
      }
    }
#if AKV_DQ
    if (flags & ATT_DQF)
      att_bwd_dq_add(dqacc + bh * Sq * D, pds4, stage4, kb, k0, Sk, i0, Sq, D, scale, lid, vec);
#endif
  }
  for (int i = 0; i < AKV_TM; i++) {
    ulong key = k0 + keys[i];
    if (key >= Sk)
      continue;
    for (int e = 0; e < AKV_ON; e++) {
      ulong d = (e / 4) * 4 * AKV_NTC + 4 * tc + e % 4;
      if (d < D)
        KILN_STORE(dk, dkoff + (bh * Sk + key) * D + d, adk[i][e] * scale);
      if (d < Dv)
        KILN_STORE(dv, dvoff + (bh * Sk + key) * Dv + d, adv[i][e]);
    }
  }
}

/* The fused tables (AKV_DQ) have no use for att_bwd_dq. */
#if !AKV_DQ
/*
 * dQ: work-item (tr, tc) holds AQ_TM queries x AQ_TN keys of S = Q K^T and dP = dO V^T,
 * turns them into dS = P (dP - delta) (P from the saved lse), which goes to local memory as
 * [key][query]; then its rows of dQ += dS K over ATT_DH / (ABK_Q / AQ_TN) features.
 */
kernel ATT_WG(AQ_NT) void
att_bwd_dq(global const ST *q, ulong qoff, global const ST *k, ulong koff, global const ST *v,
           ulong voff, global const ST *mask, ulong moff, global const ST *dout, ulong doff,
           global const T *lse, ulong loff, global const T *delta, global ST *dq, ulong dqoff,
           ulong BH, ulong Sq, ulong Sk, ulong D, ulong Dv, ulong mstride, T scale, uint flags)
{
  local T4 stage4[AQ_STAGE / 4];
  local T4 ds4[ABK_Q * AQ_QS / 4];
  local T *stage = (local T *)stage4;
  const uint lid = get_local_id(0), vec = flags & ATT_VEC;
  const uint tr = lid % AQ_W + AQ_W * (lid / (AQ_W * AQ_NTC));
  const uint tc = (lid / AQ_W) % AQ_NTC;
  const ulong nqt = (Sq + ABQ_Q - 1) / ABQ_Q, g = get_group_id(0);
  /* Causal: the heavy (last) query tiles first, as att_fwd. */
  const ulong bh = g / nqt, qt = (flags & ATT_CAUSAL) ? nqt - 1 - g % nqt : g % nqt;
  const ulong q0 = qt * ABQ_Q;
  global const ST *qb = q + qoff + bh * Sq * D;
  global const ST *kb = k + koff + bh * Sk * D;
  global const ST *vb = v + voff + bh * Sk * Dv;
  global const ST *db = dout + doff + bh * Sq * Dv;
  global const ST *mb = mask + moff + bh * mstride;
  const T qscale = scale * (T)ATT_LOG2E;
  T adq[AQ_TM][AQ_ON], li[AQ_TM], di[AQ_TM];
  uint rows[AQ_TM];
  for (int i = 0; i < AQ_TM; i++) {
    rows[i] = (i / 4) * 4 * AQ_NTR + 4 * tr + i % 4;
    ulong row = q0 + rows[i];
    li[i] = row < Sq ? lse[loff + bh * Sq + row] * (T)ATT_LOG2E : (T)0;
    di[i] = row < Sq ? delta[bh * Sq + row] : (T)0;
    for (int e = 0; e < AQ_ON; e++)
      adq[i][e] = (T)0;
  }
  ulong kend = Sk;
  if ((flags & ATT_CAUSAL) && q0 + ABQ_Q < kend)
    kend = q0 + ABQ_Q;
  for (ulong k0 = 0; k0 < kend; k0 += ABK_Q) {
    T s[AQ_TM][AQ_TN], dp[AQ_TM][AQ_TN];
    for (int i = 0; i < AQ_TM; i++)
      for (int j = 0; j < AQ_TN; j++)
        s[i][j] = dp[i][j] = (T)0;
    for (ulong d0 = 0; d0 < D; d0 += AQ_DC) {
      barrier(CLK_LOCAL_MEM_FENCE);
      att_stage_t(stage, AQ_QS, ABQ_Q, qb, q0, Sq, D, d0, qscale, lid, AQ_DC, AQ_NT, vec);
      att_stage_t(stage + AQ_DC * AQ_QS, AQ_KS, ABK_Q, kb, k0, Sk, D, d0, (T)1, lid, AQ_DC,
                  AQ_NT, vec);
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int dd = 0; dd < AQ_DC; dd++) {
        T qv[AQ_TM], kv[AQ_TN];
        for (int a = 0; a < AQ_TM / 4; a++) {
          T4 t = stage4[dd * (AQ_QS / 4) + a * AQ_NTR + tr];
          ATT_UNPACK(qv, 4 * a, t);
        }
        for (int b = 0; b < AQ_TN / 4; b++) {
          T4 t = stage4[AQ_DC * AQ_QS / 4 + dd * (AQ_KS / 4) + b * AQ_NTC + tc];
          ATT_UNPACK(kv, 4 * b, t);
        }
        for (int i = 0; i < AQ_TM; i++)
          for (int j = 0; j < AQ_TN; j++)
            s[i][j] += qv[i] * kv[j];
      }
    }
    for (ulong d0 = 0; d0 < Dv; d0 += AQ_DC) {
      barrier(CLK_LOCAL_MEM_FENCE);
      att_stage_t(stage, AQ_QS, ABQ_Q, db, q0, Sq, Dv, d0, (T)1, lid, AQ_DC, AQ_NT, vec);
      att_stage_t(stage + AQ_DC * AQ_QS, AQ_KS, ABK_Q, vb, k0, Sk, Dv, d0, (T)1, lid, AQ_DC,
                  AQ_NT, vec);
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int dd = 0; dd < AQ_DC; dd++) {
        T ov[AQ_TM], vv[AQ_TN];
        for (int a = 0; a < AQ_TM / 4; a++) {
          T4 t = stage4[dd * (AQ_QS / 4) + a * AQ_NTR + tr];
          ATT_UNPACK(ov, 4 * a, t);
        }
        for (int b = 0; b < AQ_TN / 4; b++) {
          T4 t = stage4[AQ_DC * AQ_QS / 4 + dd * (AQ_KS / 4) + b * AQ_NTC + tc];
          ATT_UNPACK(vv, 4 * b, t);
        }
        for (int i = 0; i < AQ_TM; i++)
          for (int j = 0; j < AQ_TN; j++)
            dp[i][j] += ov[i] * vv[j];
      }
    }
    for (int j = 0; j < AQ_TN; j++) {
      uint kc = (j / 4) * 4 * AQ_NTC + 4 * tc + j % 4;
      ulong key = k0 + kc;
      for (int i = 0; i < AQ_TM; i++) {
        ulong row = q0 + rows[i];
        T x = s[i][j];
        int hidden = key >= Sk || row >= Sq || ((flags & ATT_CAUSAL) && key > row);
        if (!hidden && (flags & ATT_MASK))
          x += KILN_LOAD(mb, row * Sk + key) * (T)ATT_LOG2E;
        T p = hidden || x == -INFINITY ? (T)0 : ATT_EXP2(x - li[i]);
        s[i][j] = p * (dp[i][j] - di[i]);
      }
      for (int a = 0; a < AQ_TM / 4; a++)
        ds4[kc * (AQ_QS / 4) + a * AQ_NTR + tr] =
            (T4)(s[4 * a][j], s[4 * a + 1][j], s[4 * a + 2][j], s[4 * a + 3][j]);
    }
    for (uint c0 = 0; c0 < ABK_Q && k0 + c0 < Sk; c0 += AQ_VK) {
      barrier(CLK_LOCAL_MEM_FENCE);
      att_stage_rows(stage4, AQ_VK, kb, k0 + c0, Sk, D, lid, AQ_NT, vec);
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int c = 0; c < AQ_VK; c++) {
        T dsv[AQ_TM], kv[AQ_ON];
        for (int a = 0; a < AQ_TM / 4; a++) {
          T4 t = ds4[(c0 + c) * (AQ_QS / 4) + a * AQ_NTR + tr];
          ATT_UNPACK(dsv, 4 * a, t);
        }
        for (int b = 0; b < AQ_ON / 4; b++) {
          T4 t = stage4[c * (ATT_DH / 4) + b * AQ_NTC + tc];
          ATT_UNPACK(kv, 4 * b, t);
        }
        for (int i = 0; i < AQ_TM; i++)
          for (int e = 0; e < AQ_ON; e++)
            adq[i][e] += dsv[i] * kv[e];
      }
    }
  }
  for (int i = 0; i < AQ_TM; i++) {
    ulong row = q0 + rows[i];
    if (row >= Sq)
      continue;
    for (int e = 0; e < AQ_ON; e++) {
      ulong d = (e / 4) * 4 * AQ_NTC + 4 * tc + e % 4;
      if (d < D)
        KILN_STORE(dq, dqoff + (bh * Sq + row) * D + d, adq[i][e] * scale);
    }
  }
}

#endif

#endif

#if !ATT_NF
kernel void
rope(global const ST *x, ulong xoff, global const ST *cosv, ulong coff, global const ST *sinv,
     ulong soff, global ST *y, ulong yoff, ulong rows, ulong S, ulong D, ulong R, uint flags)
{
  const ulong hr = R / 2, per = hr + (D - R);
  for (ulong t = get_global_id(0); t < rows * per; t += get_global_size(0)) {
    ulong r = t / per, u = t % per, base = r * D;
    if (u >= hr) {
      ulong d = R + (u - hr);
      KILN_STORE(y, yoff + base + d, KILN_LOAD(x, xoff + base + d));
      continue;
    }
    ulong pos = r % S;
    T c = KILN_LOAD(cosv, coff + pos * hr + u), s = KILN_LOAD(sinv, soff + pos * hr + u);
    if (flags & ROPE_INV)
      s = -s;
    ulong a = (flags & ROPE_HALF) ? u : 2 * u, b = (flags & ROPE_HALF) ? u + hr : 2 * u + 1;
    T xa = KILN_LOAD(x, xoff + base + a), xb = KILN_LOAD(x, xoff + base + b);
    KILN_STORE(y, yoff + base + a, xa * c - xb * s);
    KILN_STORE(y, yoff + base + b, xb * c + xa * s);
  }
}

#endif

#endif
