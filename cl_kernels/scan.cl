/*
 * Scan and difference kernels.
 *
 * Build options: those of common.cl (-DT=..., -DKILN_DT_<X>=1), and -DKILN_COLS=n, the
 * number of neighbouring lines (inner positions) one work-item of NAME_lines scans
 * (default 1, for GPUs; 16 or more on CPUs, so one item reads whole cache lines).
 *
 * One set of kernels per row of KILN_SCAN_OPS (include/kiln/reduce_table.h) that accepts
 * T, over the input viewed as (outer, len, inner) with the scanned axis in the middle:
 *   NAME_lines(x, xoff, y, yoff, yi, yioff, tot, outer, len, inner, nchunk, clen, flags)
 *       One work-item per (outer, chunk, KILN_COLS inner positions): scans its chunk of
 *       clen elements serially; neighbouring items take neighbouring inner positions, so
 *       reads are coalesced when inner > 1. The many-short-lines kernel.
 *   NAME_tiles(x, xoff, y, yoff, yi, yioff, tot, lines, len, nchunk, clen, ipt, flags, loc)
 *       inner == 1: one work-group per (line, chunk). The chunk is walked in tiles of
 *       local_size * ipt elements: each item folds ipt consecutive elements, the group
 *       scans the item totals in local memory (Hillis-Steele), then each item rescans its
 *       elements from its exclusive prefix and writes them; a carry links the tiles.
 *       The long-line kernel.
 *   NAME_totals(tot, outer, nchunk, inner, flags)
 *       With nchunk > 1 both kernels above leave each chunk's total in
 *       tot[(o * nchunk + chunk) * inner + i]; this turns them, per line, into exclusive
 *       prefixes (serially: nchunk is small, bounded by the host).
 *   NAME_fixup(y, yoff, yi, yioff, tot, outer, len, inner, nchunk, clen, flags)
 *       One work-group per (line, chunk 1..nchunk-1), each item a contiguous part of the
 *       chunk: combines the chunk's prefix into its outputs. (No per-element index
 *       division: 64-bit divisions cost more than the data on CPUs.)
 *   NAME_lookback(x, xoff, y, yoff, yi, yioff, desc, pre, lines, len, tpl, e, flags, loc,
 *                 stage, ctl)
 *       inner == 1, one pass: each line cut into tpl tiles of local_size * E elements (E
 *       from SCAN_LB_BYTES, scan_contract.clh); with tpl > 1 tiles take ids from a counter
 *       and find their prefix by decoupled look-back over the status words in desc (see
 *       scan_kernels.clh), or, pre not NULL, read it from pre[tile]. Reads x once and
 *       writes y once.
 *   NAME_tileagg(x, xoff, agg, lines, len, tpl, e, flags, loc)
 *   NAME_tileblk(agg, lines, tpl, e, flags, loc)
 *   NAME_tilepre(agg, aoff, lines, tpl, e, flags, loc)
 *   NAME_tilefix(agg, lines, tpl, e, flags)
 *       The passes before NAME_lookback with pre (single_pass = 3): every tile's fold into
 *       agg, then each line's folds into exclusive prefixes in place, block after block by
 *       NAME_tilepre, or, for lines of several blocks, each block alone by NAME_tileblk,
 *       the blocks' folds by NAME_tilepre, and NAME_tilefix combining the two.
 *   NAME_chain(x, xoff, y, yoff, yi, yioff, desc, lines, len, cpl, sub, e, flags, loc, stage, ctl)
 *       inner == 1, one launch: each line cut into cpl chunks of sub tiles of NAME_lookback's
 *       size; groups loop over chunk ids from the counter, fold a chunk into its aggregate,
 *       find its prefix by the same look-back (once per chunk), then scan it. Reads all of
 *       a chunk's tiles but the first twice (the second time mostly from the cache), writes
 *       y once.
 * diff1(x, xoff, y, yoff, outer, len, inner): first difference along the middle axis, one
 *       work-item per (outer, block of 256 outputs, inner).
 *
 * flags: 1 omit NaN (NaN elements are skipped), 2 exclusive scan.
 * yi: i64 indices of cummin/cummax (NULL when not wanted; the host always provides a
 * buffer when nchunk > 1, because the fixup needs them to tell an empty prefix from NaN).
 * Tunables (host side, lib/ops/launch_params.h): local size, ipt, nchunk/clen, and
 * single_pass (NAME_lookback, NAME_chain with chunks of ipt elements per item, or the tile
 * prefixes and NAME_lookback, instead of NAME_tiles and the chunk passes); every kernel is
 * correct for any of them.
 */
#include "common.cl"
#include "scan_contract.clh"

/* Adjacent lines one work-item of NAME_lines scans (a build option: it sizes an array). */
#ifndef KILN_COLS
#define KILN_COLS 1
#endif
/* Rows of its columns one work-item of NAME_lines loads at once on strided lines: 64 bytes
 * of each column (16 f32, 8 f64), at least 4. */
#define LN_ROWS (64 / sizeof(T) < 4 ? 4 : 64 / sizeof(T) > 16 ? 16 : 64 / sizeof(T))

#define IS_NAN(v) ((v) != (v))
#if KILN_IS_COMPLEX
/* A complex element is NaN when either part is (NumPy's isnan). */
#define T_NAN(v) (IS_NAN((v).x) || IS_NAN((v).y))
#else
#define T_NAN(v) IS_NAN(v)
#endif
#define SKIP(v, f) (((f) & SCAN_F_OMIT) && T_NAN(v))
/* The 16-element block paths (vector loads and scans); complex T has no 16-vectors. */
#define KILN_BLOCKS (!KILN_IS_COMPLEX)

/* A compile-time error unless state type st fits the host's SCAN_STATE_BYTES. */
#define STATE_FITS(st) typedef char KILN_CAT(st, _fits)[sizeof(st) <= SCAN_STATE_BYTES ? 1 : -1];

#include "elem_access.clh"
#if !KILN_IS_COMPLEX
#include "arg_pair.clh"
#endif

/* SOUT: the state of cumsum/cumprod (f16 and bf16 accumulate in float); SOUT_ST: the
 * element type of their output buffers. Complex products as NumPy forms them. */
#if KILN_IS_FLOAT
#define SOUT T
#define SOUT_ST ST
#define WRAP_ADD(a, b) ((a) + (b))
#define WRAP_MUL(a, b) ((a) * (b))
#define PROD_ID ((SOUT)1)
#elif KILN_IS_COMPLEX
#define SOUT T
#define SOUT_ST T
#define WRAP_ADD(a, b) ((a) + (b))
#define WRAP_MUL(a, b) cmul(a, b)
#define PROD_ID ((T)(1, 0))
inline T cmul(T a, T b) { return (T)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
#else
#define SOUT long
#define SOUT_ST long
#define WRAP_ADD(a, b) ((long)((ulong)(a) + (ulong)(b)))
#define WRAP_MUL(a, b) ((long)((ulong)(a) * (ulong)(b)))
#define PROD_ID ((SOUT)1)
#endif
#define SCAN_OUT_WIDE SOUT_ST
#define SCAN_OUT_SAME ST

/* ---- cumsum / cumprod: NaN omitted counts as the identity (nancumsum, nancumprod) ---- */
typedef SOUT st_cumsum;
typedef SOUT st_cumprod;
inline st_cumsum cumsum_empty(uint f) { return (SOUT)0; }
inline st_cumprod cumprod_empty(uint f) { return PROD_ID; }
inline st_cumsum cumsum_load(T v, long j, uint f) { return SKIP(v, f) ? (SOUT)0 : (SOUT)v; }
inline st_cumprod cumprod_load(T v, long j, uint f) { return SKIP(v, f) ? PROD_ID : (SOUT)v; }
inline st_cumsum cumsum_combine(st_cumsum a, st_cumsum b, uint f) { return WRAP_ADD(a, b); }
inline st_cumprod cumprod_combine(st_cumprod a, st_cumprod b, uint f) { return WRAP_MUL(a, b); }
inline st_cumsum cumsum_reload(SOUT v, long i) { return v; }
inline st_cumprod cumprod_reload(SOUT v, long i) { return v; }
inline void cumsum_store(st_cumsum a, global SOUT_ST *y, ulong k, global long *yi, ulong ki)
{
  KILN_STORE(y, k, a);
}
inline void cumprod_store(st_cumprod a, global SOUT_ST *y, ulong k, global long *yi, ulong ki)
{
  KILN_STORE(y, k, a);
}

#if !KILN_IS_COMPLEX

/* ---- cummin / cummax: (value, index of its first occurrence) pairs (arg_pair.clh) ---- */
typedef arg_pair st_cumarg;
typedef st_cumarg st_cummin;
typedef st_cumarg st_cummax;

/* The value an empty prefix shows (exclusive scans): NaN for floats, else the identity. */
#if KILN_IS_FLOAT
#define EMPTY_MAX ((T)NAN)
#define EMPTY_MIN ((T)NAN)
#else
#define EMPTY_MAX KILN_T_MIN
#define EMPTY_MIN KILN_T_MAX
#endif

inline st_cumarg
cumarg_make(T v, long i)
{
  st_cumarg a;
  a.v = v;
  a.i = i;
  return a;
}

inline st_cummax cummax_empty(uint f) { return cumarg_make(EMPTY_MAX, -1); }
inline st_cummin cummin_empty(uint f) { return cumarg_make(EMPTY_MIN, -1); }
inline st_cummax cummax_load(T v, long j, uint f) { return SKIP(v, f) ? cummax_empty(f) : cumarg_make(v, j); }
inline st_cummin cummin_load(T v, long j, uint f) { return SKIP(v, f) ? cummin_empty(f) : cumarg_make(v, j); }
inline st_cummax cummax_combine(st_cummax a, st_cummax b, uint f) { return arg_pair_merge(a, b, 1); }
inline st_cummin cummin_combine(st_cummin a, st_cummin b, uint f) { return arg_pair_merge(a, b, 0); }
inline st_cummax cummax_reload(T v, long i) { return cumarg_make(v, i); }
inline st_cummin cummin_reload(T v, long i) { return cumarg_make(v, i); }
inline void
cumarg_store(st_cumarg a, global ST *y, ulong k, global long *yi, ulong ki)
{
  if (y)
    KILN_STORE(y, k, a.v);
  if (yi)
    yi[ki] = a.i;
}
inline void cummax_store(st_cummax a, global ST *y, ulong k, global long *yi, ulong ki)
{
  cumarg_store(a, y, k, yi, ki);
}
inline void cummin_store(st_cummin a, global ST *y, ulong k, global long *yi, ulong ki)
{
  cumarg_store(a, y, k, yi, ki);
}

#if KILN_IS_FLOAT
/* ---- logcumsumexp: log(exp(a) + exp(b)) without overflow; NaN omitted counts as -inf ---- */
typedef T st_logcumsumexp;
inline T
logaddexp(T a, T b)
{
  if (IS_NAN(a) || IS_NAN(b))
    return (T)NAN;
  if (a == (T)-INFINITY)
    return b;
  if (b == (T)-INFINITY)
    return a;
  if (a == b) /* also +inf + +inf, where a - b would be NaN */
    return a + (T)M_LN2;
  return fmax(a, b) + log1p(exp(-fabs(a - b)));
}
inline st_logcumsumexp logcumsumexp_empty(uint f) { return (T)-INFINITY; }
inline st_logcumsumexp logcumsumexp_load(T v, long j, uint f) { return SKIP(v, f) ? (T)-INFINITY : v; }
inline st_logcumsumexp logcumsumexp_combine(T a, T b, uint f) { return logaddexp(a, b); }
inline st_logcumsumexp logcumsumexp_reload(T v, long i) { return v; }
inline void logcumsumexp_store(T a, global ST *y, ulong k, global long *yi, ulong ki)
{
  KILN_STORE(y, k, a);
}
#endif
#endif /* !KILN_IS_COMPLEX */

/* Writes the running state before (exclusive) or after (inclusive) folding v in. */
#define SCAN_STEP(NAME, acc, v, y, k, yi, ki, flags)                                            \
  do {                                                                                          \
    if ((flags) & SCAN_F_EXCL)                                                                 \
      KILN_CAT(NAME, _store)(acc, y, k, yi, ki);                                                \
    acc = KILN_CAT(NAME, _combine)(acc, v, flags);                                              \
    if (!((flags) & SCAN_F_EXCL))                                                              \
      KILN_CAT(NAME, _store)(acc, y, k, yi, ki);                                                \
  } while (0)


/*
 * ---- blocks of 16 (contiguous lines): the work of CPU devices ----
 * NAME_fold16(acc, w, j, f) folds 16 loaded elements (indices j..j+15) into acc;
 * NAME_scan16(run, w, j, f, y, k, yi, ki) scans them from run, writes y[k..k+15] (and
 * yi) and returns the new run. cumsum and cumprod do both with vector operations (a
 * 4-step Hillis-Steele prefix inside the vector, shuffles with identity fill), which on
 * PoCL is several times faster than a scalar loop; the other ops loop element by element.
 * Any order of combining gives the same integers and is within the documented bound for
 * floats (docs/reductions.md).
 */
#if KILN_BLOCKS
#define H2(x, OP) OP((x).lo, (x).hi)
#define HTREE(w, OP) H2(H2(H2(H2(w, OP), OP), OP), OP)
#define ADD_(a, b) ((a) + (b))
#define MUL_(a, b) ((a) * (b))
#define MASK1 (0, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30)
#define MASK2 (0, 0, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29)
#define MASK4 (0, 0, 0, 0, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27)
#define MASK8 (0, 0, 0, 0, 0, 0, 0, 0, 16, 17, 18, 19, 20, 21, 22, 23)
#if KILN_IS_FLOAT
/* Lanes in T; omitted NaN become the identity. */
#define A16 V16
#if defined(KILN_DT_F32) || KILN_IS_HALF
#define AMASK16 uint16
#else
#define AMASK16 ulong16
#endif
#define TO_A16(raw, f, id) (((f) & SCAN_F_OMIT) ? select(raw, (V16)(id), isnan(raw)) : (raw))
#define FROM_A(v) (v)
#define FROM_A16(v) (v)
#define TO_A(v) (v)
#else
/* Integers: lanes in ulong, so the wrap-around of 64-bit sums and products is defined. */
#define A16 ulong16
#define AMASK16 ulong16
#define TO_A16(raw, f, id) convert_ulong16(convert_long16(raw))
#define FROM_A(v) ((long)(v))
#define FROM_A16(v) as_long16(v)
#define TO_A(v) ((ulong)(v))
#endif
#define SHIFT16(w, id, m) shuffle2((A16)(id), w, (AMASK16)m)
/* 8-byte lanes (f64, and the integers' ulong lanes) scan as two 8-lane halves: a 16-lane
 * shuffle of 8-byte lanes spans two 512-bit registers. */
#if !(defined(KILN_DT_F32) || KILN_IS_HALF)
#define LANES8 1
#define A8 KILN_CAT(KILN_CAT(A16_BASE_, KILN_IS_FLOAT), 8)
#define A16_BASE_1 T
#define A16_BASE_0 ulong
#define M8_1 (ulong8)(0, 8, 9, 10, 11, 12, 13, 14)
#define M8_2 (ulong8)(0, 0, 8, 9, 10, 11, 12, 13)
#define M8_4 (ulong8)(0, 0, 0, 0, 8, 9, 10, 11)
#define SHIFT8(w, fill, m) shuffle2((A8)(fill), w, m)
#define SCAN8(v, OP, ID)                                                                       \
  do {                                                                                         \
    v = OP(v, SHIFT8(v, ID, M8_1));                                                            \
    v = OP(v, SHIFT8(v, ID, M8_2));                                                            \
    v = OP(v, SHIFT8(v, ID, M8_4));                                                            \
  } while (0)
#else
#define LANES8 0
#endif

/* w = inclusive prefix of w within the vector; out = w, or shifted by one (exclusive). */
#if LANES8
#define SCAN16_BODY(w, out, f, OP, ID)                                                         \
  do {                                                                                         \
    A8 lo = w.lo, hi = w.hi;                                                                   \
    SCAN8(lo, OP, ID);                                                                         \
    SCAN8(hi, OP, ID);                                                                         \
    hi = OP(hi, (A8)(lo.s7));                                                                  \
    w = (A16)(lo, hi);                                                                         \
    out = w;                                                                                   \
    if ((f) & SCAN_F_EXCL)                                                                     \
      out = (A16)(SHIFT8(lo, ID, M8_1), SHIFT8(hi, lo.s7, M8_1));                              \
  } while (0)
#else
#define SCAN16_BODY(w, out, f, OP, ID)                                                         \
  do {                                                                                         \
    w = OP(w, SHIFT16(w, ID, MASK1));                                                          \
    w = OP(w, SHIFT16(w, ID, MASK2));                                                          \
    w = OP(w, SHIFT16(w, ID, MASK4));                                                          \
    w = OP(w, SHIFT16(w, ID, MASK8));                                                          \
    out = ((f) & SCAN_F_EXCL) ? SHIFT16(w, ID, MASK1) : w;                                     \
  } while (0)
#endif

#define VEC_SCAN(NAME, OP, ID)                                                                 \
  inline SOUT NAME##_fold16(SOUT acc, V16 raw, long j, uint f)                                 \
  {                                                                                            \
    return FROM_A(OP(TO_A(acc), HTREE(TO_A16(raw, f, ID), OP)));                               \
  }                                                                                            \
  inline SOUT NAME##_scan16(SOUT run, V16 raw, long j, uint f, global SOUT_ST *y, ulong k,     \
                            global long *yi, ulong ki)                                         \
  {                                                                                            \
    A16 w = TO_A16(raw, f, ID), out;                                                           \
    SCAN16_BODY(w, out, f, OP, ID);                                                            \
    ST16(FROM_A16(OP((A16)TO_A(run), out)), y + k);                                            \
    return FROM_A(OP(TO_A(run), w.sf));                                                        \
  }
VEC_SCAN(cumsum, ADD_, 0)
VEC_SCAN(cumprod, MUL_, 1)

/* 16 neighbouring strided lines advanced by one row as one vector (NAME_lines at KILN_COLS a
 * multiple of 16, the CPU default): one 16-wide load, add and store per row, where the
 * element loop left PoCL at 1-3% of copy bandwidth. NAME_VCOLS marks the ops that have it. */
#define VEC_COLS(NAME, OP, ID)                                                                 \
  inline A16 NAME##_vstep(A16 acc, V16 raw, uint f, global SOUT_ST *y)                         \
  {                                                                                            \
    A16 n = OP(acc, TO_A16(raw, f, ID));                                                       \
    ST16(FROM_A16((f & SCAN_F_EXCL) ? acc : n), y);                                            \
    return n;                                                                                  \
  }
VEC_COLS(cumsum, ADD_, 0)
VEC_COLS(cumprod, MUL_, 1)
#define cumsum_VCOLS 1
#define cumprod_VCOLS 1

#define LOOP16(NAME)                                                                           \
  inline st_##NAME NAME##_fold16(st_##NAME acc, V16 raw, long j, uint f)                        \
  {                                                                                            \
    T t[16];                                                                                   \
    vstore16(raw, 0, t);                                                                       \
    for (int q = 0; q < 16; q++)                                                               \
      acc = NAME##_combine(acc, NAME##_load(t[q], j + q, f), f);                               \
    return acc;                                                                                \
  }                                                                                            \
  inline st_##NAME NAME##_scan16(st_##NAME run, V16 raw, long j, uint f, global SCAN_OUT_SAME *y, \
                                 ulong k, global long *yi, ulong ki)                           \
  {                                                                                            \
    T t[16];                                                                                   \
    vstore16(raw, 0, t);                                                                       \
    for (int q = 0; q < 16; q++) {                                                             \
      st_##NAME v = NAME##_load(t[q], j + q, f);                                               \
      SCAN_STEP(NAME, run, v, y, k + q, yi, ki + q, f);                                        \
    }                                                                                          \
    return run;                                                                                \
  }
LOOP16(cummin)
LOOP16(cummax)
#if KILN_IS_FLOAT
LOOP16(logcumsumexp)
#endif
#endif /* KILN_BLOCKS */


/*
 * One set of kernels per row of KILN_SCAN_OPS (include/kiln/reduce_table.h) whose dtype
 * class holds T: the row's name, its result kind (YT: SCAN_OUT_WIDE or SCAN_OUT_SAME) and
 * class, restated here because an #include cannot come out of a macro. The scan suite runs
 * every (row, dtype) the table accepts, so a missing or extra set here fails it.
 */
#if KILN_SUP_ALL || KILN_IS_COMPLEX /* complex: KILN_SCAN_COMPLEX_OPS */
#define NAME cumsum
#define YT SCAN_OUT_WIDE
#define STAGED 1
#include "scan_kernels.clh"
#define NAME cumprod
#define YT SCAN_OUT_WIDE
#define STAGED 1
#include "scan_kernels.clh"
#endif
#if KILN_SUP_ALL
#define NAME cummin
#define YT SCAN_OUT_SAME
#define STAGED 0
#include "scan_kernels.clh"
#define NAME cummax
#define YT SCAN_OUT_SAME
#define STAGED 0
#include "scan_kernels.clh"
#endif
#if KILN_SUP_FLOAT
#define NAME logcumsumexp
#define YT SCAN_OUT_SAME
#define STAGED 1
#include "scan_kernels.clh"
#endif

/* ---- diff: y = x[j + 1] - x[j] along the middle axis; integers wrap, bool is != ---- */
#if KILN_IS_FLOAT || KILN_IS_COMPLEX
#define DIFF(b, a) ((b) - (a))
#elif defined(KILN_DT_BOOL)
#define DIFF(b, a) ((T)((b) != (a)))
#else
#define DIFF(b, a) ((T)((UT)(b) - (UT)(a)))
#endif

kernel void
diff1(global const XT *x, ulong xoff, global ST *y, ulong yoff, ulong outer, ulong len, ulong inner)
{
  /* One work-item per (line, block of SCAN_DIFF_BLOCK outputs): index arithmetic once per item. */
  ulong m = len - 1, nb = (m + SCAN_DIFF_BLOCK - 1) / SCAN_DIFF_BLOCK;
  for (ulong g = get_global_id(0); g < outer * nb * inner; g += get_global_size(0)) {
    ulong i = g % inner, t = g / inner, jb = t % nb, o = t / nb;
    ulong j0 = jb * SCAN_DIFF_BLOCK, j1 = min(j0 + SCAN_DIFF_BLOCK, m);
    for (ulong j = j0; j < j1; j++) {
      ulong k = (o * len + j) * inner + i;
      KILN_STORE(y, yoff + (o * m + j) * inner + i, DIFF(LDX(x, xoff + k + inner), LDX(x, xoff + k)));
    }
  }
}
