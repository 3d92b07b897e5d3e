/*
 * Reduction kernels.
 *
 * Build options: those of common.cl (-DT=..., -DKILN_DT_<X>=1), plus
 *   -DKILN_FP64=1         the device has doubles: REAL results of integer inputs and the
 *                         kernels' float parameter are double (else float)
 *   -DKILN_REDUCE_WIDE=1  f32 inputs accumulate in double (needs KILN_FP64)
 *   -DKILN_COLS=n         columns per work-item in NAME_cols (default 1; a tunable)
 *   -DKILN_COLSV=1        also NAME_colsv for sum, mean, max, min when KILN_COLS is a
 *                         multiple of 16 (the host sets it on CPU devices)
 *   -DKILN_BLOCKED=b      the lane order of NAME_rows (default 1): a build option, so the
 *                         other orders' code drops out of the kernel, and with it their
 *                         registers (which limit how many work-items a GPU keeps resident)
 *
 * Every reduction NAME (sum prod mean var min max argmin argmax any all count, and for
 * float T also lse normp) comes as four kernels over the input viewed as (outer, red,
 * inner), the reduced elements of one output at stride `inner`:
 *   NAME_rows(x, xoff, out, ooff, vals, voff, part, rows, red, nchunk, clen, lanes, flags,
 *             prm, loc)
 *       inner == 1. `lanes` work-items (a power of two <= the work-group size) share a
 *       row, so a work-group holds local_size/lanes rows (one row when lanes is the group
 *       size, one row per item when lanes is 1); each row is cut into nchunk chunks of
 *       clen elements, one chunk per group. Each lane folds its share of the chunk, then
 *       a tree in local memory merges the lanes. blocked == 0: lane k takes elements k,
 *       k + lanes, ... (neighbouring work-items read neighbouring addresses: GPUs);
 *       blocked == 1: lane k takes one contiguous block (CPU devices such as PoCL run a
 *       group's work-items one after another, so this streams memory in order);
 *       blocked == 2: lane k takes 4-element vectors k, k + lanes, ... from the first
 *       4-aligned element on (aligned 16-byte loads of f32, each warp instruction reading
 *       consecutive vectors), four of them per 16-element block and compensated step, and
 *       two blocks' loads in flight (GPUs).
 *       nchunk == 1 writes the result, else the partial state part[row * nchunk + chunk].
 *   NAME_rows_p(part, out, ooff, vals, voff, rows, nchunk, lanes, flags, prm, loc)
 *       Second pass: merges the nchunk partial states of each row, same lane scheme.
 *   NAME_cols(x, xoff, out, ooff, vals, voff, part, outer, red, inner, nchunk, clen, flags,
 *             prm)
 *       inner > 1 (or any shape): one work-item per (outer, chunk, KILN_COLS adjacent
 *       inner positions) walks its chunk at stride inner; with KILN_COLS 1 neighbouring
 *       items read neighbouring addresses (GPUs), with 16 or more one item reads whole
 *       cache lines (CPUs); with KILN_COLS > 1 an item gathers 16 rows into a private tile
 *       so each column folds as one vector (by 4-vector loads when KILN_COLS is a multiple
 *       of 4 and the item's columns start at a 4-aligned buffer index in every row).
 *       nchunk > 1 writes part[(o * nchunk + chunk) * inner + i]. With KILN_COLSV, sum,
 *       mean, max and min also come as NAME_colsv (same arguments and partials; see there).
 *   NAME_cols_p(part, out, ooff, vals, voff, outer, nchunk, inner, flags, prm)
 *       Second pass of NAME_cols and NAME_colsv.
 * Other kernels: permute (copy into kept-then-reduced order), median_small, median_sort,
 * median_init, median_hist, median_pick, median_store (see the median section).
 *
 * flags: 1 omit NaN, 2 fold |x|, 4 fold (x != 0), 8 fold isnan(x), 16 store sqrt (std).
 * prm: ddof for var, the exponent p for normp.
 * vals: argmin/argmax also store the value there when non-NULL.
 * Tunables (set by the host, lib/runtime/launch_params.h): local size, lanes, nchunk/clen.
 * The kernels are correct for any local size, any power-of-two lanes <= local size and
 * any chunking; no float atomics are used, so results do not depend on timing.
 */
#include "common.cl"
#include "reduce_contract.clh"

#ifdef KILN_FP64
#define PT double
#else
#define PT float
#endif

/* FACC: what sums and means accumulate in; FOUT: the value type of mean/var/median results;
 * FSTORE: the element type of their output buffers (the storage type for f16/bf16). */
#if KILN_IS_FLOAT
#if defined(KILN_REDUCE_WIDE) && defined(KILN_FP64)
#define FACC double
#else
#define FACC T
#endif
#define FOUT T
#define FSTORE ST
#elif KILN_IS_COMPLEX
#define FACC T
#define FOUT T
#define FSTORE T
#else
#ifdef KILN_FP64
#define FACC double
#define FOUT double
#else
#define FACC float
#define FOUT float
#endif
#define FSTORE FOUT
#endif

/* KILN_CABS: norms of c64/c128. The build is the real dtype's (T float or double) and every
 * load reads one complex element (a pair of T) and gives its modulus, by hypot (no overflow
 * where |re|^2 + |im|^2 would); only the kernels norms use (sum, max, min, normp) are built. */
#ifdef KILN_CABS
#define KILN_CABS_BUILD 1
#else
#define KILN_CABS_BUILD 0
#endif
/* The 16-element block paths (vector loads and folds); complex T has no 16-vectors. */
#define KILN_BLOCKS (!KILN_IS_COMPLEX)
/* Every op (else: complex sum, prod, mean; KILN_CABS: the norms' ops). */
#define RED_ALL_OPS (!KILN_IS_COMPLEX && !KILN_CABS_BUILD)

/* The rows kernel's lane order (kiln__program_options_variant always sets it). */
#ifndef KILN_BLOCKED
#define KILN_BLOCKED 1
#endif

/* Adjacent columns one work-item of NAME_cols reduces (a build option: it sizes an array). */
#ifndef KILN_COLS
#define KILN_COLS 1
#endif

#define IS_NAN(v) ((v) != (v))
#if KILN_IS_COMPLEX
/* A complex element is NaN when either part is (NumPy's isnan). */
#define T_NAN(v) (IS_NAN((v).x) || IS_NAN((v).y))
#else
#define T_NAN(v) IS_NAN(v)
#endif
#define SKIP(v, f) (((f) & RED_F_OMIT) && T_NAN(v))

#if !KILN_IS_COMPLEX
#include "arg_pair.clh"
#endif

/* A compile-time error unless state type st fits what the host allocates per state. */
#if KILN_IS_COMPLEX
#define RED_STATE_LIMIT RED_STATE_BYTES_COMPLEX
#else
#define RED_STATE_LIMIT RED_STATE_BYTES
#endif
#define STATE_FITS(st) typedef char KILN_CAT(st, _fits)[sizeof(st) <= RED_STATE_LIMIT ? 1 : -1];

/* Element access (elem_access.clh); KILN_CABS builds read complex pairs and give |z|. */
#if KILN_CABS_BUILD
#define XT KILN_CAT(T, 2)
#define X4 XT
inline T ldx_cabs(global const XT *p, ulong i)
{
  XT z = p[i];
  return hypot(z.x, z.y);
}
inline KILN_CAT(T, 16) ld16_cabs(global const XT *p, ulong i)
{
  global const T *q = (global const T *)(p + 16 * i);
  KILN_CAT(T, 16) a = vload16(0, q), b = vload16(1, q);
  return hypot((KILN_CAT(T, 16))(a.even, b.even), (KILN_CAT(T, 16))(a.odd, b.odd));
}
inline KILN_CAT(T, 4) ld4_cabs(global const XT *p, ulong i)
{
  KILN_CAT(T, 8) w = vload8(i, (global const T *)p);
  return hypot(w.even, w.odd);
}
#define LDX(p, i) ldx_cabs((p), (i))
#define LD16(p, i) ld16_cabs((p), (i))
#define LD4(p, i) ld4_cabs((p), (i))
#endif
#include "elem_access.clh"

#if !KILN_IS_COMPLEX
inline T
xform(T v, uint f)
{
#if KILN_IS_FLOAT
  if (f & RED_F_ABS)
    v = fabs(v);
#endif
  if (f & RED_F_NZ)
    v = (T)(v != (T)0);
  if (f & RED_F_ISNAN)
    v = (T)IS_NAN(v);
  return v;
}
#endif

/* ---- compensated accumulation (Neumaier): c gathers what each addition rounds away ---- */
typedef struct {
  FACC s, c;
} kahan;

inline kahan
kahan_add(kahan a, FACC v)
{
  FACC t = a.s + v;
  a.c += fabs(a.s) >= fabs(v) ? (a.s - t) + v : (v - t) + a.s;
  a.s = t;
  return a;
}

inline kahan
kahan_merge(kahan a, kahan b)
{
  a = kahan_add(a, b.s);
  a.c += b.c;
  return a;
}

/* Once s is inf or NaN the correction is inf - inf garbage: s alone is the answer. */
inline FACC
kahan_value(kahan a)
{
  return isfinite(a.s) ? a.s + a.c : a.s;
}

inline kahan
kahan_zero(void)
{
  kahan k;
  k.s = 0;
  k.c = 0;
  return k;
}

/* ---- sum: floats compensated in FACC; integers wrap in 64 bits; complex: per part ---- */
#if KILN_IS_FLOAT
typedef kahan st_sum;
#define SUM_OUT ST
inline st_sum sum_init(uint f) { return kahan_zero(); }
inline st_sum sum_fold(st_sum a, T v, long j, uint f, PT prm)
{
  return SKIP(v, f) ? a : kahan_add(a, (FACC)xform(v, f));
}
inline st_sum sum_merge(st_sum a, st_sum b, uint f, PT prm) { return kahan_merge(a, b); }
inline void sum_store(st_sum a, global SUM_OUT *out, ulong o, global ST *vals, ulong vo, uint f,
                      PT prm)
{
  KILN_STORE(out, o, (T)kahan_value(a));
}
#elif KILN_IS_COMPLEX
/* The compensated steps work part by part on T (a 2-vector): the sums of the real and the
 * imaginary parts are independent. */
typedef kahan st_sum;
#define SUM_OUT T
inline st_sum sum_init(uint f) { return kahan_zero(); }
inline st_sum sum_fold(st_sum a, T v, long j, uint f, PT prm)
{
  return SKIP(v, f) ? a : kahan_add(a, v);
}
inline st_sum sum_merge(st_sum a, st_sum b, uint f, PT prm) { return kahan_merge(a, b); }
inline void sum_store(st_sum a, global SUM_OUT *out, ulong o, global ST *vals, ulong vo, uint f,
                      PT prm)
{
  out[o] = kahan_value(a);
}
#else
typedef long st_sum;
#define SUM_OUT long
inline st_sum sum_init(uint f) { return 0; }
inline st_sum sum_fold(st_sum a, T v, long j, uint f, PT prm)
{
  return (long)((ulong)a + (ulong)(long)xform(v, f));
}
inline st_sum sum_merge(st_sum a, st_sum b, uint f, PT prm) { return (long)((ulong)a + (ulong)b); }
inline void sum_store(st_sum a, global SUM_OUT *out, ulong o, global ST *vals, ulong vo, uint f,
                      PT prm)
{
  out[o] = a;
}
#endif

/* ---- prod ---- */
#if KILN_IS_FLOAT
typedef FACC st_prod;
#define PROD_OUT ST
#define PROD_V T
inline st_prod prod_init(uint f) { return (st_prod)1; }
inline st_prod prod_fold(st_prod a, T v, long j, uint f, PT prm)
{
  return SKIP(v, f) ? a : a * (FACC)v;
}
inline st_prod prod_merge(st_prod a, st_prod b, uint f, PT prm) { return a * b; }
#elif KILN_IS_COMPLEX
/* Complex products as NumPy forms them: (ac - bd, ad + bc), no rescaling. */
typedef T st_prod;
#define PROD_OUT T
#define PROD_V T
inline T cmul(T a, T b) { return (T)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
inline st_prod prod_init(uint f) { return (T)(1, 0); }
inline st_prod prod_fold(st_prod a, T v, long j, uint f, PT prm)
{
  return SKIP(v, f) ? a : cmul(a, v);
}
inline st_prod prod_merge(st_prod a, st_prod b, uint f, PT prm) { return cmul(a, b); }
#else
typedef long st_prod;
#define PROD_OUT long
#define PROD_V long
inline st_prod prod_init(uint f) { return (st_prod)1; }
inline st_prod prod_fold(st_prod a, T v, long j, uint f, PT prm)
{
  return (long)((ulong)a * (ulong)(long)v);
}
inline st_prod prod_merge(st_prod a, st_prod b, uint f, PT prm)
{
  return (long)((ulong)a * (ulong)b);
}
#endif
inline void prod_store(st_prod a, global PROD_OUT *out, ulong o, global ST *vals, ulong vo, uint f,
                       PT prm)
{
  KILN_STORE(out, o, (PROD_V)a);
}

/* ---- mean: compensated sum and count (the count excludes omitted NaN) ---- */
typedef struct {
  kahan k;
  long n;
} st_mean;
#define MEAN_OUT FSTORE
inline st_mean mean_init(uint f)
{
  st_mean m;
  m.k = kahan_zero();
  m.n = 0;
  return m;
}
inline st_mean mean_fold(st_mean a, T v, long j, uint f, PT prm)
{
  if (SKIP(v, f))
    return a;
  a.k = kahan_add(a.k, (FACC)v);
  a.n++;
  return a;
}
inline st_mean mean_merge(st_mean a, st_mean b, uint f, PT prm)
{
  a.k = kahan_merge(a.k, b.k);
  a.n += b.n;
  return a;
}
inline void mean_store(st_mean a, global MEAN_OUT *out, ulong o, global ST *vals, ulong vo, uint f,
                       PT prm)
{
  KILN_STORE(out, o, (FOUT)(kahan_value(a.k) / (FACC)a.n));
}

/* Complex tensors take sum, prod and mean only (docs/reductions.md says why). */
#if !KILN_IS_COMPLEX

/* ---- var/std: Welford per item, Chan et al.'s pairwise merge; never sum of squares ---- */
typedef struct {
  FACC mean, m2;
  long n;
} st_var;
#define VAR_OUT FSTORE
inline st_var var_init(uint f)
{
  st_var s;
  s.mean = 0;
  s.m2 = 0;
  s.n = 0;
  return s;
}
inline st_var var_fold(st_var a, T v, long j, uint f, PT prm)
{
  if (SKIP(v, f))
    return a;
  FACC x = (FACC)v;
  a.n++;
  FACC d = x - a.mean;
  a.mean += d / (FACC)a.n;
  a.m2 += d * (x - a.mean);
  return a;
}
inline st_var var_merge(st_var a, st_var b, uint f, PT prm)
{
  if (b.n == 0)
    return a;
  if (a.n == 0)
    return b;
  FACC na = (FACC)a.n, nb = (FACC)b.n, n = na + nb;
  FACC d = b.mean - a.mean;
  a.mean += d * (nb / n);
  a.m2 += b.m2 + d * d * (na * (nb / n));
  a.n += b.n;
  return a;
}
/* NumPy: m2 / max(n - ddof, 0), so n <= ddof gives inf (or NaN when m2 is 0). */
inline void var_store(st_var a, global VAR_OUT *out, ulong o, global ST *vals, ulong vo, uint f,
                      PT prm)
{
  FACC den = (FACC)a.n - (FACC)prm;
  FACC v = a.m2 / (den > (FACC)0 ? den : (FACC)0);
  KILN_STORE(out, o, (FOUT)((f & RED_F_STD) ? sqrt(v) : v));
}

/* ---- min / max: NaN wins under propagate; under omit NaN is the identity (fmin/fmax) ----
 * Folding |x| (norms Linf and -inf) starts from 0 and +inf instead, the identities of max
 * and min over |x| >= 0 under both policies: a slice that omitting NaN leaves empty then
 * gives the norm's empty value (0, +inf), where nanmax/nanmin of nothing give NaN. */
#if KILN_IS_FLOAT
#define MAX_ID(f) (((f) & RED_F_ABS) ? (T)0 : ((f) & RED_F_OMIT) ? (T)NAN : KILN_T_MIN)
#define MIN_ID(f) (((f) & (RED_F_OMIT | RED_F_ABS)) == RED_F_OMIT ? (T)NAN : KILN_T_MAX)
#else
#define MAX_ID(f) KILN_T_MIN
#define MIN_ID(f) KILN_T_MAX
#endif

#if KILN_IS_FLOAT
#define MINMAX_MERGE(a, b, f, CMP, FN)                                                       \
  (((f) & RED_F_OMIT) ? FN(a, b) : IS_NAN(a) ? (a) : IS_NAN(b) ? (b) : ((b)CMP(a)) ? (b) : (a))
#else
#define MINMAX_MERGE(a, b, f, CMP, FN) (((b)CMP(a)) ? (b) : (a))
#endif

typedef T st_max;
typedef T st_min;
#define MAX_OUT ST
#define MIN_OUT ST
inline st_max max_init(uint f) { return MAX_ID(f); }
inline st_min min_init(uint f) { return MIN_ID(f); }
inline st_max max_merge(st_max a, st_max b, uint f, PT prm) { return MINMAX_MERGE(a, b, f, >, fmax); }
inline st_min min_merge(st_min a, st_min b, uint f, PT prm) { return MINMAX_MERGE(a, b, f, <, fmin); }
inline st_max max_fold(st_max a, T v, long j, uint f, PT prm) { return max_merge(a, xform(v, f), f, prm); }
inline st_min min_fold(st_min a, T v, long j, uint f, PT prm) { return min_merge(a, xform(v, f), f, prm); }
inline void max_store(st_max a, global ST *out, ulong o, global ST *vals, ulong vo, uint f, PT prm)
{
  KILN_STORE(out, o, a);
}
inline void min_store(st_min a, global ST *out, ulong o, global ST *vals, ulong vo, uint f, PT prm)
{
  KILN_STORE(out, o, a);
}

/* ---- argmin / argmax: (value, index) pairs (arg_pair.clh) ---- */
typedef arg_pair st_arg;
typedef st_arg st_argmax;
typedef st_arg st_argmin;
#define ARGMAX_OUT long
#define ARGMIN_OUT long

inline st_arg
arg_empty(uint f)
{
  st_arg a;
#if KILN_IS_FLOAT
  a.v = (T)NAN;
#else
  a.v = (T)0;
#endif
  a.i = -1;
  return a;
}

inline st_arg
arg_fold(st_arg a, T v, long j, uint f, int is_max)
{
  if (SKIP(v, f))
    return a;
  st_arg b;
  b.v = xform(v, f);
  b.i = j;
  return arg_pair_merge(a, b, is_max);
}

inline void
arg_store(st_arg a, global long *out, ulong o, global ST *vals, ulong vo)
{
  out[o] = a.i;
  if (vals)
    KILN_STORE(vals, vo, a.v);
}

inline st_arg argmax_init(uint f) { return arg_empty(f); }
inline st_arg argmin_init(uint f) { return arg_empty(f); }
inline st_arg argmax_fold(st_arg a, T v, long j, uint f, PT prm) { return arg_fold(a, v, j, f, 1); }
inline st_arg argmin_fold(st_arg a, T v, long j, uint f, PT prm) { return arg_fold(a, v, j, f, 0); }
inline st_arg argmax_merge(st_arg a, st_arg b, uint f, PT prm) { return arg_pair_merge(a, b, 1); }
inline st_arg argmin_merge(st_arg a, st_arg b, uint f, PT prm) { return arg_pair_merge(a, b, 0); }
inline void argmax_store(st_arg a, global long *out, ulong o, global ST *vals, ulong vo, uint f,
                         PT prm)
{
  arg_store(a, out, o, vals, vo);
}
inline void argmin_store(st_arg a, global long *out, ulong o, global ST *vals, ulong vo, uint f,
                         PT prm)
{
  arg_store(a, out, o, vals, vo);
}

/* ---- any / all / count of nonzero elements (NaN is nonzero unless omitted) ---- */
typedef uchar st_any;
typedef uchar st_all;
typedef long st_count;
#define ANY_OUT uchar
#define ALL_OUT uchar
#define COUNT_OUT long
inline st_any any_init(uint f) { return 0; }
inline st_all all_init(uint f) { return 1; }
inline st_count count_init(uint f) { return 0; }
inline st_any any_fold(st_any a, T v, long j, uint f, PT prm)
{
  return SKIP(v, f) ? a : (uchar)(a | (xform(v, f) != (T)0));
}
inline st_all all_fold(st_all a, T v, long j, uint f, PT prm)
{
  return SKIP(v, f) ? a : (uchar)(a & (xform(v, f) != (T)0));
}
inline st_count count_fold(st_count a, T v, long j, uint f, PT prm)
{
  return SKIP(v, f) ? a : a + (xform(v, f) != (T)0);
}
inline st_any any_merge(st_any a, st_any b, uint f, PT prm) { return a | b; }
inline st_all all_merge(st_all a, st_all b, uint f, PT prm) { return a & b; }
inline st_count count_merge(st_count a, st_count b, uint f, PT prm) { return a + b; }
inline void any_store(st_any a, global uchar *out, ulong o, global ST *vals, ulong vo, uint f, PT prm)
{
  out[o] = a;
}
inline void all_store(st_all a, global uchar *out, ulong o, global ST *vals, ulong vo, uint f, PT prm)
{
  out[o] = a;
}
inline void count_store(st_count a, global long *out, ulong o, global ST *vals, ulong vo, uint f,
                        PT prm)
{
  out[o] = a;
}

#if KILN_IS_FLOAT
/* ---- logsumexp: running (max, sum of exp(x - max)), so no exp overflows ---- */
typedef struct {
  FACC m, s;
} st_lse;
#define LSE_OUT ST
inline st_lse lse_init(uint f)
{
  st_lse a;
  a.m = -INFINITY;
  a.s = 0;
  return a;
}
inline st_lse lse_merge(st_lse a, st_lse b, uint f, PT prm)
{
  if (IS_NAN(a.m) || IS_NAN(b.m)) {
    a.m = NAN;
    a.s = 1;
    return a;
  }
  if (b.m > a.m) {
    st_lse t = a;
    a = b;
    b = t;
  }
  if (b.s == (FACC)0)
    return a;
  if (a.m == -INFINITY) { /* both hold only -inf: exp(-inf) terms are all 0 */
    a.s += b.s;
    return a;
  }
  if (a.m == INFINITY) {
    a.s = 1;
    return a;
  }
  a.s += b.s * exp(b.m - a.m);
  return a;
}
inline st_lse lse_fold(st_lse a, T v, long j, uint f, PT prm)
{
  if (SKIP(v, f))
    return a;
  st_lse b;
  b.m = (FACC)v;
  b.s = 1;
  return lse_merge(a, b, f, prm);
}
inline void lse_store(st_lse a, global ST *out, ulong o, global ST *vals, ulong vo, uint f, PT prm)
{
  KILN_STORE(out, o, (T)(a.m + log(a.s)));
}

/*
 * ---- p-norm with scaling (LAPACK nrm2 style): sum (|x| / scale)^p with scale the
 * largest |x| so far, so neither overflow nor underflow happens before the final
 * scale * sum^(1/p) ----
 */
typedef struct {
  FACC scale, ssq;
} st_normp;
#define NORMP_OUT ST
inline st_normp normp_init(uint f)
{
  st_normp a;
  a.scale = 0;
  a.ssq = 0;
  return a;
}
inline st_normp normp_merge(st_normp a, st_normp b, uint f, PT prm)
{
  if (IS_NAN(a.scale) || IS_NAN(b.scale)) {
    a.scale = NAN;
    a.ssq = 1;
    return a;
  }
  if (b.scale > a.scale) {
    st_normp t = a;
    a = b;
    b = t;
  }
  if (b.scale == (FACC)0)
    return a;
  if (isinf(a.scale)) {
    a.ssq = 1;
    return a;
  }
  FACC r = b.scale / a.scale;
  a.ssq += b.ssq * (prm == (PT)2 ? r * r : pow(r, (FACC)prm));
  return a;
}
inline st_normp normp_fold(st_normp a, T v, long j, uint f, PT prm)
{
  if (SKIP(v, f))
    return a;
  st_normp b;
  b.scale = fabs((FACC)v);
  b.ssq = b.scale != (FACC)0 ? (FACC)1 : (FACC)0;
  return normp_merge(a, b, f, prm);
}
inline void normp_store(st_normp a, global ST *out, ulong o, global ST *vals, ulong vo, uint f,
                        PT prm)
{
  FACC r;
  if (a.scale == (FACC)0 || isinf(a.scale) || IS_NAN(a.scale))
    r = a.scale;
  else
    r = a.scale * (prm == (PT)2 ? sqrt(a.ssq) : pow(a.ssq, (FACC)1 / (FACC)prm));
  KILN_STORE(out, o, (T)r);
}
#endif

/*
 * ---- block folds: 16 contiguous elements at once (blocked lanes, i.e. CPU devices) ----
 * A work-item that owns a contiguous block loads 16 elements as one vector and reduces
 * them with a fixed pairwise tree (vector halves), then folds that one value into its
 * state. On PoCL this is ~15x faster than folding element by element (a scalar Neumaier
 * step per element is latency-bound, and PoCL does not vectorise loops across
 * work-items), and the sums get better, not worse: a 4-level tree per block, then the
 * compensated step. NAME_foldv(a, w, j, js, f, prm) folds the 16 lanes of w, four quarters
 * of four consecutive elements each, the quarters starting js apart: lane q holds the
 * element of index blk_pos(j, js, q) (js == 4: the contiguous block j..j+15; GPU lanes
 * build blocks from four coalesced 4-vectors, js == 4 * lanes). Positions grow with q, so
 * "the first lane" is "the smallest index" for argmin/argmax. Ops where a block shortcut
 * does not pay (logsumexp, p-norm) fold the 16 one by one.
 */
inline long
blk_pos(long j, long js, int q)
{
  return j + (q >> 2) * js + (q & 3);
}

#define H2(x, OP) OP((x).lo, (x).hi)
#define HTREE(w, OP) H2(H2(H2(H2(w, OP), OP), OP), OP)
#define ADD_(a, b) ((a) + (b))
#define MUL_(a, b) ((a) * (b))
/* Plain compare-and-select max/min (one instruction each); NaN is dealt with before. */
#define MAX_(a, b) ((a) > (b) ? (a) : (b))
#define MIN_(a, b) ((a) < (b) ? (a) : (b))
#define IMIN_(a, b) min(a, b)
#define FACC16 KILN_CAT(FACC, 16)
#define TO_FACC16(w) KILN_CAT(convert_, FACC16)(w)
/* Lanes set in a vector comparison result (-1 per true lane), as a count. */
#define COUNT16(mask) (-HTREE(convert_int16(mask), ADD_))

#define FOLDV_LOOP(NAME)                                                                       \
  inline st_##NAME NAME##_foldv(st_##NAME a, V16 w, long j, long js, uint f, PT prm)            \
  {                                                                                            \
    T t[16];                                                                                   \
    vstore16(w, 0, t);                                                                         \
    for (int q = 0; q < 16; q++)                                                               \
      a = NAME##_fold(a, t[q], blk_pos(j, js, q), f, prm);                                     \
    return a;                                                                                  \
  }

#if KILN_IS_FLOAT
/* The transformed block (|x|, x != 0, isnan(x)) with omitted NaN set to `fill`. */
inline V16
xform16(V16 raw, uint f, T fill)
{
  V16 w = raw;
  if (f & RED_F_ABS)
    w = fabs(w);
  if (f & RED_F_NZ)
    w = select((V16)0, (V16)1, w != (V16)0);
  if (f & RED_F_ISNAN)
    w = select((V16)0, (V16)1, isnan(raw));
  if (f & RED_F_OMIT)
    w = select(w, (V16)fill, isnan(raw));
  return w;
}

inline st_sum sum_foldv(st_sum a, V16 raw, long j, long js, uint f, PT prm)
{
  return kahan_add(a, (FACC)HTREE(TO_FACC16(xform16(raw, f, 0)), ADD_));
}
inline st_prod prod_foldv(st_prod a, V16 raw, long j, long js, uint f, PT prm)
{
  return a * HTREE(TO_FACC16(xform16(raw, f, 1)), MUL_);
}
inline st_mean mean_foldv(st_mean a, V16 raw, long j, long js, uint f, PT prm)
{
  a.k = kahan_add(a.k, HTREE(TO_FACC16(xform16(raw, f & RED_F_OMIT, 0)), ADD_));
  a.n += (f & RED_F_OMIT) ? 16 - COUNT16(isnan(raw)) : 16;
  return a;
}
#else
inline st_sum sum_foldv(st_sum a, V16 raw, long j, long js, uint f, PT prm)
{
  return (long)((ulong)a + HTREE(convert_ulong16(convert_long16(raw)), ADD_));
}
inline st_prod prod_foldv(st_prod a, V16 raw, long j, long js, uint f, PT prm)
{
  return (long)((ulong)a * HTREE(convert_ulong16(convert_long16(raw)), MUL_));
}
inline st_mean mean_foldv(st_mean a, V16 raw, long j, long js, uint f, PT prm)
{
  a.k = kahan_add(a.k, HTREE(TO_FACC16(raw), ADD_));
  a.n += 16;
  return a;
}
#endif

/* var: the block's own mean and M2 (two-pass over registers), then Chan's merge;
 * a block holding NaN or inf goes element by element (Welford's NaN/inf behaviour). */
inline st_var
var_fold_each(st_var a, V16 w, long j, long js, uint f, PT prm)
{
  T t[16];
  vstore16(w, 0, t);
  for (int q = 0; q < 16; q++)
    a = var_fold(a, t[q], blk_pos(j, js, q), f, prm);
  return a;
}

inline st_var
var_foldv(st_var a, V16 raw, long j, long js, uint f, PT prm)
{
#if KILN_IS_FLOAT
  if (any(!isfinite(raw)))
    return var_fold_each(a, raw, j, js, f, prm);
#endif
  FACC16 w = TO_FACC16(raw);
  st_var b;
  b.n = 16;
  b.mean = HTREE(w, ADD_) / (FACC)16;
  FACC16 d = w - (FACC16)b.mean;
  b.m2 = HTREE(d * d, ADD_);
  return var_merge(a, b, f, prm);
}

inline st_max max_foldv(st_max a, V16 raw, long j, long js, uint f, PT prm)
{
#if KILN_IS_FLOAT
  if (f & RED_F_ABS)
    raw = fabs(raw);
  if (any(isnan(raw))) /* propagate: the block's NaN wins; omit: fmax skips NaN */
    return (f & RED_F_OMIT) ? max_merge(a, HTREE(raw, fmax), f, prm) : (T)NAN;
#endif
  return max_merge(a, HTREE(raw, MAX_), f, prm);
}
inline st_min min_foldv(st_min a, V16 raw, long j, long js, uint f, PT prm)
{
#if KILN_IS_FLOAT
  if (f & RED_F_ABS)
    raw = fabs(raw);
  if (any(isnan(raw)))
    return (f & RED_F_OMIT) ? min_merge(a, HTREE(raw, fmin), f, prm) : (T)NAN;
#endif
  return min_merge(a, HTREE(raw, MIN_), f, prm);
}

/* argmin/argmax: the block's best value by a tree, then its first position. */
inline st_arg
arg_foldv(st_arg a, V16 raw, long j, long js, uint f, int is_max)
{
  T t[16];
  vstore16(raw, 0, t);
  st_arg b;
#if KILN_IS_FLOAT
  if (any(isnan(raw))) {
    if (!(f & RED_F_OMIT)) { /* the first NaN decides */
      int q = 0;
      while (!IS_NAN(t[q]))
        q++;
      b.v = t[q];
      b.i = blk_pos(j, js, q);
      return arg_pair_merge(a, b, is_max);
    }
    for (int q = 0; q < 16; q++) /* omit: fold the rest one by one */
      a = arg_fold(a, t[q], blk_pos(j, js, q), f, is_max);
    return a;
  }
#endif
  T best = is_max ? HTREE(raw, MAX_) : HTREE(raw, MIN_);
  /* First lane holding best, without a branch per lane: min over (lane if equal, else 16). */
  const int16 lane = (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  int q = HTREE(select((int16)16, lane, convert_int16(raw == (V16)best)), IMIN_);
  b.v = t[q]; /* the element itself: -0.0 and +0.0 compare equal */
  b.i = blk_pos(j, js, q);
  return arg_pair_merge(a, b, is_max);
}
inline st_arg argmax_foldv(st_arg a, V16 raw, long j, long js, uint f, PT prm)
{
  return arg_foldv(a, raw, j, js, f, 1);
}
inline st_arg argmin_foldv(st_arg a, V16 raw, long j, long js, uint f, PT prm)
{
  return arg_foldv(a, raw, j, js, f, 0);
}

/* any / all / count: the block's nonzero count (and, under omit, its non-NaN count). */
inline int
nonzero16(V16 raw, uint f, int *valid)
{
  *valid = 16;
#if KILN_IS_FLOAT
  V16 w = xform16(raw, f & ~RED_F_OMIT, 0);
  if (f & RED_F_OMIT) {
    *valid = 16 - COUNT16(isnan(raw));
    return COUNT16(w != (V16)0 && !isnan(raw));
  }
  return COUNT16(w != (V16)0);
#else
  return COUNT16(raw != (V16)0);
#endif
}
inline st_count count_foldv(st_count a, V16 raw, long j, long js, uint f, PT prm)
{
  int valid;
  return a + nonzero16(raw, f, &valid);
}
inline st_any any_foldv(st_any a, V16 raw, long j, long js, uint f, PT prm)
{
  int valid;
  return a | (nonzero16(raw, f, &valid) > 0);
}
inline st_all all_foldv(st_all a, V16 raw, long j, long js, uint f, PT prm)
{
  int valid;
  int nz = nonzero16(raw, f, &valid);
  return a & (nz == valid);
}

#if KILN_IS_FLOAT
FOLDV_LOOP(lse)
FOLDV_LOOP(normp)
#endif

#endif /* !KILN_IS_COMPLEX */

/* ---- the four kernels of one reduction (see the header comment) ---- */
/* Work-item g's share of a column launch (NAME_cols, NAME_colsv) of nblk column groups per
 * chunk: outer index o, chunk c, rows [beg, end), first column i0, cnt columns. */
typedef struct {
  ulong o, c, beg, end, i0;
  uint cnt;
} col_share;

inline col_share
col_share_of(ulong g, ulong nblk, ulong nchunk, ulong clen, ulong red, ulong inner)
{
  col_share sh;
  ulong t = g / nblk;
  sh.c = t % nchunk;
  sh.o = t / nchunk;
  sh.i0 = (g % nblk) * KILN_COLS;
  sh.beg = sh.c * clen;
  sh.end = min(sh.beg + clen, red);
  sh.cnt = (uint)min((ulong)KILN_COLS, inner - sh.i0);
  return sh;
}

/* A 16-element block from the 4-vectors u, u + L, u + 2L, u + 3L of xv. */
#define LOAD_BLK(xv, u, L)                                                                     \
  ((V16)(LD4(xv, u), LD4(xv, (u) + (L)), LD4(xv, (u) + 2 * (L)), LD4(xv, (u) + 3 * (L))))
/* Blocks whose loads a lane issues together in lane order 2: 128 bytes of f32, i32 or u8
 * (32 registers of data), 128 of f64/i64 with one (a second would double the registers). */
#if KILN_BITS == 64 || defined(KILN_DT_F64)
#define RBLK 1
#else
#define RBLK 2
#endif

/*
 * ---- NAME_colsv: the column kernel with one state vector per 16 adjacent columns ----
 * For sum, mean, max and min, and KILN_COLS a multiple of 16, on CPU devices (GPUs keep
 * NAME_cols, whose coalesced 4-column tiles they read at 86-94% of copy): a work-item
 * walks its rows reading KILN_COLS contiguous elements per row as 16-vectors and folds
 * each into a vector of 16 column states (Neumaier steps lane by lane), so a CPU streams
 * whole cache lines and its vector unit does the arithmetic; NAME_cols instead gathers
 * 16-row tiles and folds them column by column. Columns past the last whole vector (the
 * tensor's right edge) fold element by element. Same arguments, grid and partials as
 * NAME_cols (the host picks one; NAME_cols_p merges either's partials).
 */
#if defined(KILN_COLSV) && KILN_COLS % 16 == 0 && !KILN_IS_COMPLEX
/* Neumaier steps lane by lane: kahan_add on 16 states at once. */
typedef struct {
  FACC16 s, c;
} vkahan;
inline vkahan
vkahan_zero(void)
{
  vkahan a;
  a.s = (FACC16)0;
  a.c = (FACC16)0;
  return a;
}
inline vkahan
vkahan_add(vkahan a, FACC16 v)
{
  FACC16 t = a.s + v;
  a.c += select((v - t) + a.s, (a.s - t) + v, isgreaterequal(fabs(a.s), fabs(v)));
  a.s = t;
  return a;
}
/* Lane q of a into k[q]. */
inline void
vkahan_lanes(vkahan a, kahan *k)
{
  FACC s[16], c[16];
  vstore16(a.s, 0, s);
  vstore16(a.c, 0, c);
  for (int q = 0; q < 16; q++) {
    k[q].s = s[q];
    k[q].c = c[q];
  }
}

#if KILN_IS_FLOAT
typedef vkahan vst_sum;
inline vst_sum sum_vinit(uint f) { return vkahan_zero(); }
inline vst_sum sum_vfold(vst_sum a, V16 raw, uint f) { return vkahan_add(a, TO_FACC16(xform16(raw, f, 0))); }
inline void sum_vlanes(vst_sum a, st_sum *out) { vkahan_lanes(a, out); }
#define XF_MEAN(r) xform16(r, f & RED_F_OMIT, 0)
#else
typedef long16 vst_sum; /* integer sums wrap in 64 bits, like sum_fold */
inline vst_sum sum_vinit(uint f) { return (long16)0; }
inline vst_sum sum_vfold(vst_sum a, V16 raw, uint f)
{
  return as_long16(as_ulong16(a) + as_ulong16(convert_long16(raw)));
}
inline void sum_vlanes(vst_sum a, st_sum *out) { vstore16(a, 0, out); }
#define XF_MEAN(r) (r)
#endif

typedef struct {
  vkahan k;
  long16 n;
} vst_mean;
inline vst_mean mean_vinit(uint f)
{
  vst_mean a;
  a.k = vkahan_zero();
  a.n = (long16)0;
  return a;
}
/* Lanes that count: all, or under omit the non-NaN ones (isnan is -1 per NaN lane). */
#if KILN_IS_FLOAT
#define VCOUNT(raw, f) ((f) & RED_F_OMIT ? (long16)1 + convert_long16(isnan(raw)) : (long16)1)
#else
#define VCOUNT(raw, f) ((long16)1)
#endif
inline vst_mean mean_vfold(vst_mean a, V16 raw, uint f)
{
  a.k = vkahan_add(a.k, TO_FACC16(XF_MEAN(raw)));
  a.n += VCOUNT(raw, f);
  return a;
}
inline void mean_vlanes(vst_mean a, st_mean *out)
{
  kahan k[16];
  long n[16];
  vkahan_lanes(a.k, k);
  vstore16(a.n, 0, n);
  for (int q = 0; q < 16; q++) {
    out[q].k = k[q];
    out[q].n = n[q];
  }
}

/* max/min lane by lane as MINMAX_MERGE does it: under omit fmax/fmin skip NaN, else the
 * state's NaN stays, then the new NaN wins, then the larger (smaller) value. */
#if KILN_IS_FLOAT
#define VMINMAX(a, b, f, CMP, FN)                                                              \
  (((f) & RED_F_OMIT) ? FN(a, b)                                                                   \
                  : select(select(select(a, b, (b)CMP(a)), b, isnan(b)), a, isnan(a)))
#define VXFORM(raw, f) xform16(raw, (f) & ~RED_F_OMIT, 0)
#else
#define VMINMAX(a, b, f, CMP, FN) select(a, b, (b)CMP(a))
#define VXFORM(raw, f) (raw)
#endif
typedef V16 vst_max;
typedef V16 vst_min;
inline vst_max max_vinit(uint f) { return (V16)MAX_ID(f); }
inline vst_min min_vinit(uint f) { return (V16)MIN_ID(f); }
inline vst_max max_vfold(vst_max a, V16 raw, uint f) { return VMINMAX(a, VXFORM(raw, f), f, >, fmax); }
inline vst_min min_vfold(vst_min a, V16 raw, uint f) { return VMINMAX(a, VXFORM(raw, f), f, <, fmin); }
inline void max_vlanes(vst_max a, st_max *out) { vstore16(a, 0, out); }
inline void min_vlanes(vst_min a, st_min *out) { vstore16(a, 0, out); }

/*
 * NAME_vrows(a, p, inner, f): folds the 16-vectors at p, p + inner, ... p + (VROWS - 1)
 * inner (VROWS rows of the same 16 columns). Compensated states add the rows in order
 * first, one compensated step per block (at most 3 roundings in a block of 4: within the
 * tiles' bound, which allow a depth-4 tree); the others fold row by row. On PoCL the 16-row
 * pairwise trees this replaced were 1.5x-1.8x slower at 2^20-2^22 (docs/reductions.md).
 */
#define VROWS 4
#define VROWS_EACH(NAME)                                                                       \
  inline vst_##NAME NAME##_vrows(vst_##NAME a, global const XT *p, ulong inner, uint f)         \
  {                                                                                            \
    for (int q = 0; q < VROWS; q++)                                                            \
      a = NAME##_vfold(a, LD16(p + q * inner, 0), f);                                          \
    return a;                                                                                  \
  }
/* The VROWS rows at p, in order, as FACC16, each row through XF (a V16 -> V16 transform). */
#define VSEQ(w, p, inner, XF)                                                                  \
  FACC16 w = TO_FACC16(XF(LD16((p), 0)));                                                      \
  for (int q = 1; q < VROWS; q++)                                                              \
    w += TO_FACC16(XF(LD16((p) + q * (inner), 0)));

#if KILN_IS_FLOAT
#define XF_SUM(r) xform16(r, f, 0)
inline vst_sum sum_vrows(vst_sum a, global const XT *p, ulong inner, uint f)
{
  VSEQ(w, p, inner, XF_SUM)
  return vkahan_add(a, w);
}
#else
VROWS_EACH(sum)
#endif
inline vst_mean mean_vrows(vst_mean a, global const XT *p, ulong inner, uint f)
{
  VSEQ(w, p, inner, XF_MEAN)
  a.k = vkahan_add(a.k, w);
  for (int q = 0; q < VROWS; q++)
    a.n += VCOUNT(LD16(p + q * inner, 0), f);
  return a;
}
VROWS_EACH(max)
VROWS_EACH(min)

#endif

/* One set of kernels per op (reduce_kernels.clh, stamped once per op): every op for real
 * dtypes, sum, prod and mean for complex ones, and the norms' ops in KILN_CABS builds.
 * VSTATE_ROWS: the op's vector state, which the rows kernel folds blocks into (CPU builds). */
#if defined(KILN_COLSV) && KILN_COLS % 16 == 0 && !KILN_IS_COMPLEX
#define VROWS_OK 1
#else
#define VROWS_OK 0
#endif
#define FN(s) sum##s
#define STATE st_sum
#define OUT SUM_OUT
#if VROWS_OK
#define VSTATE_ROWS vst_sum
#endif
#include "reduce_kernels.clh"
#if !KILN_CABS_BUILD
#define FN(s) prod##s
#define STATE st_prod
#define OUT PROD_OUT
#include "reduce_kernels.clh"
#define FN(s) mean##s
#define STATE st_mean
#define OUT MEAN_OUT
#if VROWS_OK
#define VSTATE_ROWS vst_mean
#endif
#include "reduce_kernels.clh"
#endif
#if !KILN_IS_COMPLEX
#define FN(s) min##s
#define STATE st_min
#define OUT MIN_OUT
#if VROWS_OK
#define VSTATE_ROWS vst_min
#endif
#include "reduce_kernels.clh"
#define FN(s) max##s
#define STATE st_max
#define OUT MAX_OUT
#if VROWS_OK
#define VSTATE_ROWS vst_max
#endif
#include "reduce_kernels.clh"
#endif
#if RED_ALL_OPS
#define FN(s) var##s
#define STATE st_var
#define OUT VAR_OUT
#include "reduce_kernels.clh"
#define FN(s) argmin##s
#define STATE st_argmin
#define OUT ARGMIN_OUT
#include "reduce_kernels.clh"
#define FN(s) argmax##s
#define STATE st_argmax
#define OUT ARGMAX_OUT
#include "reduce_kernels.clh"
#define FN(s) any##s
#define STATE st_any
#define OUT ANY_OUT
#include "reduce_kernels.clh"
#define FN(s) all##s
#define STATE st_all
#define OUT ALL_OUT
#include "reduce_kernels.clh"
#define FN(s) count##s
#define STATE st_count
#define OUT COUNT_OUT
#include "reduce_kernels.clh"
#endif
#if KILN_IS_FLOAT && RED_ALL_OPS
#define FN(s) lse##s
#define STATE st_lse
#define OUT LSE_OUT
#include "reduce_kernels.clh"
#endif
#if KILN_IS_FLOAT
#define FN(s) normp##s
#define STATE st_normp
#define OUT NORMP_OUT
#include "reduce_kernels.clh"
#endif
#if defined(KILN_COLSV) && KILN_COLS % 16 == 0 && !KILN_IS_COMPLEX
#define FN(s) sum##s
#define STATE st_sum
#define VSTATE vst_sum
#define OUT SUM_OUT
#include "reduce_colsv.clh"
#define FN(s) max##s
#define STATE st_max
#define VSTATE vst_max
#define OUT MAX_OUT
#include "reduce_colsv.clh"
#define FN(s) min##s
#define STATE st_min
#define VSTATE vst_min
#define OUT MIN_OUT
#include "reduce_colsv.clh"
#if RED_ALL_OPS
#define FN(s) mean##s
#define STATE st_mean
#define VSTATE vst_mean
#define OUT MEAN_OUT
#include "reduce_colsv.clh"
#endif
#endif

/*
 * ---- permute: y (contiguous, shape p.shape) = x read at strides p.stride[0] ----
 * One work-item per run of RED_PERM_RUN elements along y's last dim: the index is decomposed
 * once per item (64-bit divisions per element would cost more than the copy on CPUs).
 */
/* Elements move as raw bits (16-bit floats as ushort: no half arithmetic, no conversion). */
#if KILN_IS_HALF
#define RAW ushort
#else
#define RAW XT
#endif
kernel void
permute(global const RAW *x, ulong xoff, global RAW *y, ulong n, uint ndim, kiln_bcast p)
{
  ulong last = p.shape[ndim - 1], nb = (last + RED_PERM_RUN - 1) / RED_PERM_RUN;
  ulong st = p.stride[0][ndim - 1];
  for (ulong g = get_global_id(0); g < (n / last) * nb; g += get_global_size(0)) {
    ulong row = g / nb, j0 = (g % nb) * RED_PERM_RUN, j1 = min(j0 + RED_PERM_RUN, last);
    ulong r = row, off = 0;
    for (uint d = ndim - 1; d-- > 0;) {
      off += (r % p.shape[d]) * p.stride[0][d];
      r /= p.shape[d];
    }
    for (ulong j = j0; j < j1; j++)
      y[row * last + j] = x[xoff + off + j * st];
  }
}

#if RED_ALL_OPS
/*
 * ---- median ----
 * Rows (inner == 1), three tiers by row length:
 *   median_small  red <= RED_MEDIAN_SMALL: one work-item per row, insertion sort in private
 *                 memory, O(red^2) per row.
 *   median_sort   red <= the host's limit (local memory): one work-group per row, bitonic
 *                 sort of the row's keys in local memory, O(P log^2 P) with P = red
 *                 rounded up to a power of two (passed as npow2).
 *   radix select  longer rows: the two middle ranks are found on an order-preserving
 *                 unsigned key (NaN keys above +inf), 8 bits per pass: median_hist counts
 *                 the keys that match the bits chosen so far into 256 bins per rank (local
 *                 atomics, per (row, chunk)), median_pick sums the chunks and picks the bin
 *                 holding each rank. KEY_BITS/8 passes, each one read of the rows:
 *                 O(red * KEY_BITS / 8) per row. median_init/median_store bracket them.
 */

/* f16 and bf16 are keyed as the floats they load into (the host runs 32-bit passes). */
#if defined(KILN_DT_F32) || KILN_IS_HALF
#define KEY_BITS 32
inline ulong mkey(T v)
{
  uint b = IS_NAN(v) ? 0x7fffffffu : as_uint(v);
  return (ulong)((b & 0x80000000u) ? ~b : (b | 0x80000000u));
}
inline T unkey(ulong k)
{
  uint b = (uint)k;
  return as_float((b & 0x80000000u) ? (b & 0x7fffffffu) : ~b);
}
#elif defined(KILN_DT_F64)
#define KEY_BITS 64
inline ulong mkey(T v)
{
  ulong b = IS_NAN(v) ? 0x7fffffffffffffffUL : as_ulong(v);
  return (b & 0x8000000000000000UL) ? ~b : (b | 0x8000000000000000UL);
}
inline T unkey(ulong k)
{
  return as_double((k & 0x8000000000000000UL) ? (k & 0x7fffffffffffffffUL) : ~k);
}
#elif defined(KILN_DT_I32)
#define KEY_BITS 32
inline ulong mkey(T v) { return (ulong)((uint)v ^ 0x80000000u); }
inline T unkey(ulong k) { return (T)((uint)k ^ 0x80000000u); }
#elif defined(KILN_DT_I64)
#define KEY_BITS 64
inline ulong mkey(T v) { return (ulong)v ^ 0x8000000000000000UL; }
inline T unkey(ulong k) { return (T)(k ^ 0x8000000000000000UL); }
#else
#define KEY_BITS 8
inline ulong mkey(T v) { return (ulong)v; }
inline T unkey(ulong k) { return (T)k; }
#endif

/* Midpoint of the two middle values; halves first where the sum would overflow. */
inline FOUT
midpoint(FOUT a, FOUT b)
{
  FOUT s = a + b;
  return isfinite(s) || !isfinite(a) || !isfinite(b) ? s * (FOUT)0.5 : a * (FOUT)0.5 + b * (FOUT)0.5;
}

kernel void
median_small(global const XT *x, ulong xoff, global FSTORE *out, ulong ooff, ulong rows, ulong red,
             uint flags)
{
  for (ulong r = get_global_id(0); r < rows; r += get_global_size(0)) {
    T buf[RED_MEDIAN_SMALL];
    uint n = 0;
    int nan = 0;
    for (ulong j = 0; j < red; j++) {
      T v = LDX(x, xoff + r * red + j);
      if (IS_NAN(v)) {
        nan = 1;
        continue;
      }
      uint k = n++;
      while (k > 0 && buf[k - 1] > v) { /* insertion sort as the row streams in */
        buf[k] = buf[k - 1];
        k--;
      }
      buf[k] = v;
    }
    FOUT res;
    if ((nan && !(flags & RED_F_OMIT)) || n == 0)
      res = (FOUT)NAN;
    else
      res = midpoint((FOUT)buf[(n - 1) / 2], (FOUT)buf[n / 2]);
    KILN_STORE(out, ooff + r, res);
  }
}

/* One work-group per row; keys holds npow2 ulongs. NaN is counted and padded away. */
kernel void
median_sort(global const XT *x, ulong xoff, global FSTORE *out, ulong ooff, ulong rows, ulong red,
            uint npow2, uint flags, local ulong *keys)
{
  local uint nn;
  uint lid = get_local_id(0), wg = get_local_size(0);
  ulong r = get_group_id(0);
  if (lid == 0)
    nn = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint j = lid; j < npow2; j += wg) {
    ulong k = ~0UL;
    if (j < red) {
      T v = LDX(x, xoff + r * red + j);
      if (IS_NAN(v))
        atomic_inc(&nn);
      else
        k = mkey(v);
    }
    keys[j] = k;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint size = 2; size <= npow2; size <<= 1) {
    for (uint stride = size >> 1; stride > 0; stride >>= 1) {
      for (uint t = lid; t < npow2 / 2; t += wg) {
        uint i = 2 * stride * (t / stride) + t % stride, j = i + stride;
        ulong a = keys[i], b = keys[j];
        if ((a > b) == ((i & size) == 0)) {
          keys[i] = b;
          keys[j] = a;
        }
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  }
  if (lid == 0) {
    long n = (long)red - (long)nn;
    FOUT res;
    if ((nn && !(flags & RED_F_OMIT)) || n <= 0)
      res = (FOUT)NAN;
    else
      res = midpoint((FOUT)unkey(keys[(n - 1) / 2]), (FOUT)unkey(keys[n / 2]));
    KILN_STORE(out, ooff + r, res);
  }
}


kernel void
median_init(global const long *nnan, global msel *sel, ulong rows, ulong red, uint flags)
{
  for (ulong r = get_global_id(0); r < rows; r += get_global_size(0)) {
    long nn = nnan ? nnan[r] : 0;
    msel s;
    s.n = (nn && !(flags & RED_F_OMIT)) ? -1 : (long)red - nn;
    s.key[0] = s.key[1] = 0;
    s.rank[0] = (s.n - 1) / 2;
    s.rank[1] = s.n / 2;
    s.pad = 0;
    sel[r] = s;
  }
}

/* One work-group per (row, chunk); RED_MEDIAN_HIST local counters (256 bins per rank). */
kernel void
median_hist(global const XT *x, ulong xoff, global const msel *sel, global uint *hist, ulong rows,
            ulong red, ulong nchunk, ulong clen, uint shift, uint blocked)
{
  local uint lh[RED_MEDIAN_HIST];
  uint lid = get_local_id(0), wg = get_local_size(0);
  ulong g = get_group_id(0), row = g / nchunk, c = g % nchunk;
  for (uint b = lid; b < RED_MEDIAN_HIST; b += wg)
    lh[b] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (row < rows && sel[row].n > 0) {
    ulong hm = shift + 8 >= 64 ? 0 : ~((1UL << (shift + 8)) - 1);
    ulong pa = sel[row].key[0] & hm, pb = sel[row].key[1] & hm;
    ulong beg = c * clen, end = min(beg + clen, red);
    /* Blocked: each work-item one contiguous block; else interleaved (see NAME_rows). */
    int blk = blocked == 1;
    ulong sub = blk ? (end - beg + wg - 1) / wg : 1, step = blk ? 1 : wg;
    ulong b = blk ? beg + lid * sub : beg + lid, e = blk ? min(b + sub, end) : end;
    for (ulong j = b; j < e; j += step) {
      ulong k = mkey(LDX(x, xoff + row * red + j));
      uint bin = (uint)(k >> shift) & 255u;
      if ((k & hm) == pa)
        atomic_inc(&lh[bin]);
      if ((k & hm) == pb)
        atomic_inc(&lh[256 + bin]);
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (row < rows)
    for (uint b = lid; b < RED_MEDIAN_HIST; b += wg)
      hist[g * RED_MEDIAN_HIST + b] = lh[b];
}

kernel void
median_pick(global const uint *hist, global msel *sel, ulong rows, ulong nchunk, uint shift)
{
  for (ulong r = get_global_id(0); r < rows; r += get_global_size(0)) {
    msel s = sel[r];
    if (s.n <= 0)
      continue;
    for (uint w = 0; w < 2; w++) {
      ulong cum = 0;
      for (uint bin = 0; bin < 256; bin++) {
        ulong cnt = 0;
        for (ulong c = 0; c < nchunk; c++)
          cnt += hist[(r * nchunk + c) * RED_MEDIAN_HIST + w * 256 + bin];
        if (cum + cnt > (ulong)s.rank[w]) {
          s.key[w] |= (ulong)bin << shift;
          s.rank[w] -= (long)cum;
          break;
        }
        cum += cnt;
      }
    }
    sel[r] = s;
  }
}

kernel void
median_store(global const msel *sel, global FSTORE *out, ulong ooff, ulong rows)
{
  for (ulong r = get_global_id(0); r < rows; r += get_global_size(0)) {
    msel s = sel[r];
    KILN_STORE(out, ooff + r,
               s.n <= 0 ? (FOUT)NAN : midpoint((FOUT)unkey(s.key[0]), (FOUT)unkey(s.key[1])));
  }
}
#endif /* RED_ALL_OPS */
