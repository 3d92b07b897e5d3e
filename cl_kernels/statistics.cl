/*
 * stats family (source "statistics"): histograms, bincount, quantiles, covariance
 * (lib/ops/stats.c, docs/stats.md).
 *
 * Build options: common.cl's (-DT=float or double, -DKILN_DT_F32/F64=1, -DKILN_FP64=1 when
 * the device has doubles). T is the value type: the input's dtype for histograms, quantiles
 * and cov, the weights' dtype for bincount (f32 without weights). Offsets are in elements.
 *
 * Histograms (one set of kernels for every kind; `mode` picks how a bin is found):
 *   HIST_UNIFORM  1-D, nb0 equal bins over [lo0, hi0] (NumPy's arithmetic and edge fix-up)
 *   HIST_EDGES    1-D, explicit edges e[0..nb0] (binary search on the device)
 *   HIST_2D       2-D, bins nb0 x nb1 over [lo0, hi0] x [lo1, hi1], bin = b0 * nb1 + b1
 *   HIST_BINCOUNT bin = the integer value of x
 * x (and y) are read by xcode: 0 i32, 1 i64, 2 u8/bool (converted to T for the other modes),
 * 3 T itself.
 * Values outside the range and NaN fall in no bin; the last bin is closed on the right.
 *   hist_local(x, xoff, xcode, y, yoff, e, eoff, w, woff, flags, mode, lo0, hi0, lo1, hi1,
 *              nb0, nb1, start, n, pc, pw, lbuf)
 *     every work-group counts its grid-stride share of elements [start, start + n) into a
 *     private histogram in local memory (local atomics: atomic_inc, or a compare-exchange
 *     add of T with weights), then writes it to pc[group * nbins + b] (uint counts) or
 *     pw[...] (T sums).
 *   hist_global(same, minus lbuf)  the same with global atomics straight into pc / pw
 *     (one partial histogram): for more bins than local memory holds.
 *   hist_merge(pc, pw, flags, ngroups, nbins, oc, ocoff, ow, owoff)  1-D over nbins:
 *     out[b] (+)= the sum of the groups' partials in group order (i64 counts or T sums);
 *     flags HIST_ACCUMULATE adds to out (chunks of more than 2^31 elements).
 *   minmax_f(x, xoff, n, part, scratch)       per work-group min and max of x, NaN skipped
 *   minmax_i(x, xoff, xcode, n, part, scratch) the same of integers read by xcode (i64)
 * Weighted kernels of f64 need cl_khr_int64_base_atomics (the host checks first).
 *
 * Quantiles (rows of len elements; element j of row r at (r / inner) * len * inner +
 * r % inner + j * inner). Values are sorted as order-preserving unsigned keys (tkey: the
 * float bit flip, every NaN one key above +inf); q are QT (double with fp64, else float).
 *   quant_local(x, xoff, rows, len, inner, q, nq, method, omit, out, ooff, keys, np)
 *     one work-group per row: the row's keys in local memory (np = a power of two >= len),
 *     bitonic sort, then every q of the row: out[qi * rows + r].
 *   quant_pack(x, xoff, rows, len, inner, np, keys, koff, vals, voff)  1-D over np:
 *     (row, key) pairs for kiln__ops_sort_pairs (sort_pairs.clh's bitonic_step), padded.
 *   quant_pick(vals, voff, rows, len, q, nq, method, omit, out, ooff) 1-D over nq * rows:
 *     the quantiles from the sorted keys (row r at vals[r * len]).
 *   quant_select(x, xoff, rows, len, inner, q, nq, method, omit, out, ooff, s, soff)
 *     1-D over rows, one work-item per row (CPUs): quickselect of the needed ranks in a
 *     copy of the row's keys at s[r * len].
 *   quant_rs_nan, quant_rs_init, quant_rs_hist, quant_rs_pick, quant_rs_final: the radix
 *     selection of the needed ranks (the global path for few q; see their section).
 *
 * Covariance (variables x observations; x(i, j) at i * vs + j * os):
 *   cov_wsum(f, foff, a, aoff, nobs, ddof, flags, params, flag, s1, s2)  one work-group:
 *     params[0] = v1 = sum w (w = f * a, each optional), params[1] = the divisor
 *     (v1 - ddof, or v1 - ddof * sum(w a) / v1 with aweights; 0 when <= 0); bad weights
 *     (negative, non-finite, non-integer fweights) and v1 == 0 set the flag.
 *   cov_mean(x, xoff, nvars, nobs, vs, os, f, foff, a, aoff, flags, nchunk, part, s)
 *     one work-group per (variable, chunk of observations): part[i * nchunk + c] = the
 *     chunk's sum of w_j x(i, j).
 *   cov_mean_fin(part, nvars, nchunk, params, means)  1-D over nvars: means[i] = sum / v1
 *   cov_center(x, xoff, nvars, nobs, by_rows, f, foff, a, aoff, flags, means, A, aout)
 *     1-D over nvars * nobs in memory order: A(i, j) = (x(i, j) - mean_i) * sqrt(w_j)
 *     (A has x's layout; by_rows: x is [nvars, nobs], else [nobs, nvars]).
 *   cov_finish(c, coff, d, n, params, corr)  1-D over n * n: c /= divisor, or the
 *     correlation c_ij / sqrt(d_i d_j) clipped to [-1, 1] (d: the diagonal, copied by
 *     cov_diag(c, coff, n, d) first).
 */
#include "common.cl"

/* NumPy computes edges and indices with separate multiplies and adds; a fused a * b + c would
 * move an edge by an ulp and put a value lying on it in the neighbouring bin. */
#pragma OPENCL FP_CONTRACT OFF

#include "sort_pairs.clh"

#ifdef KILN_FP64
typedef double QT;
#else
typedef float QT;
#endif

/* ---------------------------------------------------------------- histograms */

#define HIST_UNIFORM 0u
#define HIST_EDGES 1u
#define HIST_2D 2u
#define HIST_BINCOUNT 3u

#define HIST_W 1u          /* weights present */
#define HIST_ACCUMULATE 2u /* hist_merge adds to out */

#if defined(KILN_DT_F64) && defined(cl_khr_int64_base_atomics)
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#define HIST_WATOM 1
#elif defined(KILN_DT_F32)
#define HIST_WATOM 1
#else
#define HIST_WATOM 0
#endif

/* p[0] += v as a compare-exchange loop on the bits (OpenCL 1.2 has no float atomics); the
 * loop compares bits, so NaN sums end too. The first guess is 0 (no plain read: it would race
 * with the other work-items' exchanges). */
#if defined(KILN_DT_F64) && HIST_WATOM
#define ATOMIC_ADD_T(AS, p, v)                                                   \
  do {                                                                           \
    volatile AS ulong *u_ = (volatile AS ulong *)(p);                            \
    ulong old_ = 0, prev_;                                                       \
    do {                                                                         \
      prev_ = old_;                                                              \
      old_ = atom_cmpxchg(u_, prev_, as_ulong(as_double(prev_) + (v)));          \
    } while (old_ != prev_);                                                     \
  } while (0)
#elif HIST_WATOM
#define ATOMIC_ADD_T(AS, p, v)                                                   \
  do {                                                                           \
    volatile AS uint *u_ = (volatile AS uint *)(p);                              \
    uint old_ = 0, prev_;                                                        \
    do {                                                                         \
      prev_ = old_;                                                              \
      old_ = atomic_cmpxchg(u_, prev_, as_uint(as_float(prev_) + (v)));          \
    } while (old_ != prev_);                                                     \
  } while (0)
#else
#define ATOMIC_ADD_T(AS, p, v) ((void)(p), (void)(v))
#endif

/* Bin of v among nb equal bins over [lo, hi], or -1: NumPy's index (v - lo) / (hi - lo) * nb
 * corrected by one against the edges lo + i * ((hi - lo) / nb) (the last edge is hi). */
inline long
bin_uniform(T v, T lo, T hi, ulong nb)
{
  if (!(v >= lo && v <= hi))
    return -1;
  T width = hi - lo;
  long i = (long)((v - lo) / width * (T)nb);
  if (i >= (long)nb)
    i = (long)nb - 1;
  T step = width / (T)nb;
  T ei = (T)i * step + lo;
  T ei1 = i + 1 == (long)nb ? hi : (T)(i + 1) * step + lo;
  if (v < ei)
    i--;
  else if (v >= ei1 && i != (long)nb - 1)
    i++;
  return i;
}

/* Bin of v among edges e[0..nb]: the last i <= nb - 1 with e[i] <= v; -1 outside [e0, enb]. */
inline long
bin_edges(T v, global const T *e, ulong nb)
{
  if (!(v >= e[0] && v <= e[nb]))
    return -1;
  ulong lo = 0, hi = nb - 1;
  while (lo < hi) {
    ulong mid = (lo + hi + 1) / 2;
    if (e[mid] <= v)
      lo = mid;
    else
      hi = mid - 1;
  }
  return (long)lo;
}

inline long
load_int(global const uchar *x, ulong i, uint code)
{
  if (code == 0u)
    return (long)((global const int *)x)[i];
  if (code == 1u)
    return ((global const long *)x)[i];
  return (long)x[i];
}

#define HIST_ARGS                                                                         \
  global const uchar *x, ulong xoff, uint xcode, global const uchar *y, ulong yoff,       \
      global const T *e, ulong eoff, global const T *w, ulong woff, uint flags, uint mode, \
      T lo0, T hi0, T lo1, T hi1, ulong nb0, ulong nb1, ulong start, ulong n

#define XCODE_T 3u

inline T
load_value(global const uchar *x, ulong i, uint code)
{
  return code == XCODE_T ? ((global const T *)x)[i] : (T)load_int(x, i, code);
}

inline long
hist_bin(global const uchar *x, ulong xoff, uint xcode, global const uchar *y, ulong yoff,
         global const T *e, ulong eoff, uint mode, T lo0, T hi0, T lo1, T hi1, ulong nb0,
         ulong nb1, ulong i)
{
  if (mode == HIST_BINCOUNT) {
    long v = load_int(x, xoff + i, xcode);
    return v >= 0 && (ulong)v < nb0 ? v : -1;
  }
  T v = load_value(x, xoff + i, xcode);
  if (mode == HIST_UNIFORM)
    return bin_uniform(v, lo0, hi0, nb0);
  if (mode == HIST_EDGES)
    return bin_edges(v, e + eoff, nb0);
  long b0 = bin_uniform(v, lo0, hi0, nb0);
  long b1 = bin_uniform(load_value(y, yoff + i, xcode), lo1, hi1, nb1);
  return b0 < 0 || b1 < 0 ? -1 : b0 * (long)nb1 + b1;
}

#define HIST_BIN(i) hist_bin(x, xoff, xcode, y, yoff, e, eoff, mode, lo0, hi0, lo1, hi1, nb0, nb1, i)

kernel void
hist_local(HIST_ARGS, global uint *pc, global T *pw, local uint *lbuf)
{
  const ulong nbins = mode == HIST_2D ? nb0 * nb1 : nb0;
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const int weighted = (flags & HIST_W) != 0;
  local T *lw = (local T *)lbuf;
  for (ulong b = lid; b < nbins; b += lsz) {
    if (weighted)
      lw[b] = (T)0;
    else
      lbuf[b] = 0u;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (ulong i = start + get_global_id(0); i < start + n; i += get_global_size(0)) {
    long b = HIST_BIN(i);
    if (b < 0)
      continue;
    if (weighted)
      ATOMIC_ADD_T(local, &lw[b], w[woff + i]);
    else
      atomic_inc(&lbuf[b]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const ulong g = get_group_id(0);
  for (ulong b = lid; b < nbins; b += lsz) {
    if (weighted)
      pw[g * nbins + b] = lw[b];
    else
      pc[g * nbins + b] = lbuf[b];
  }
}

kernel void
hist_global(HIST_ARGS, global uint *pc, global T *pw)
{
  const int weighted = (flags & HIST_W) != 0;
  for (ulong i = start + get_global_id(0); i < start + n; i += get_global_size(0)) {
    long b = HIST_BIN(i);
    if (b < 0)
      continue;
    if (weighted)
      ATOMIC_ADD_T(global, &pw[b], w[woff + i]);
    else
      atomic_inc(&pc[b]);
  }
}

kernel void
hist_merge(global const uint *pc, global const T *pw, uint flags, ulong ngroups, ulong nbins,
           global long *oc, ulong ocoff, global T *ow, ulong owoff)
{
  for (ulong b = get_global_id(0); b < nbins; b += get_global_size(0)) {
    if (flags & HIST_W) {
      T s = (T)0;
      for (ulong g = 0; g < ngroups; g++)
        s += pw[g * nbins + b];
      ow[owoff + b] = (flags & HIST_ACCUMULATE ? ow[owoff + b] : (T)0) + s;
    } else {
      ulong s = 0;
      for (ulong g = 0; g < ngroups; g++)
        s += pc[g * nbins + b];
      oc[ocoff + b] = (flags & HIST_ACCUMULATE ? oc[ocoff + b] : 0) + (long)s;
    }
  }
}

/* The work-group's min and max of every item's (mn, mx), a tree in scratch (2 lsz elements of
 * TY; lid and lsz the item's local id and the group's size), into part[2 group] and
 * part[2 group + 1]. The float and integer kernels share it: min and max are the same
 * builtins' overloads for both. */
#define MINMAX_GROUP(TY, mn, mx, scratch, part)                        \
  do {                                                                 \
    local TY *smn = (scratch), *smx = (scratch) + lsz;                 \
    smn[lid] = (mn);                                                   \
    smx[lid] = (mx);                                                   \
    for (uint s = lsz / 2; s > 0; s /= 2) {                            \
      barrier(CLK_LOCAL_MEM_FENCE);                                    \
      if (lid < s) {                                                   \
        smn[lid] = min(smn[lid], smn[lid + s]);                        \
        smx[lid] = max(smx[lid], smx[lid + s]);                        \
      }                                                                \
    }                                                                  \
    if (lid == 0) {                                                    \
      (part)[2 * get_group_id(0)] = smn[0];                            \
      (part)[2 * get_group_id(0) + 1] = smx[0];                        \
    }                                                                  \
  } while (0)

kernel void
minmax_f(global const T *x, ulong xoff, ulong n, global T *part, local T *scratch)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  T mn = (T)INFINITY, mx = (T)-INFINITY;
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    T v = x[xoff + i];
    if (v < mn)
      mn = v;
    if (v > mx)
      mx = v;
  }
  MINMAX_GROUP(T, mn, mx, scratch, part);
}

kernel void
minmax_i(global const uchar *x, ulong xoff, uint xcode, ulong n, global long *part,
         local long *scratch)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  long mn = LONG_MAX, mx = LONG_MIN;
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    long v = load_int(x, xoff + i, xcode);
    mn = min(mn, v);
    mx = max(mx, v);
  }
  MINMAX_GROUP(long, mn, mx, scratch, part);
}

/* ---------------------------------------------------------------- quantiles */

#define QUANT_LINEAR 0u
#define QUANT_LOWER 1u
#define QUANT_HIGHER 2u
#define QUANT_NEAREST 3u
#define QUANT_MIDPOINT 4u

#if defined(KILN_DT_F64)
#define KEY_INF 0xfff0000000000000UL
#define KEY_NAN 0xffffffffffffffffUL
inline ulong
tkey(T v)
{
  ulong u = as_ulong(v);
  return isnan(v) ? KEY_NAN : (u >> 63) ? ~u : (u | 0x8000000000000000UL);
}
inline T
tval(ulong k)
{
  return as_double((k >> 63) ? (k & 0x7fffffffffffffffUL) : ~k);
}
#else
#define KEY_INF 0xff800000UL
#define KEY_NAN 0xffffffffUL
inline ulong
tkey(T v)
{
  uint u = as_uint(v);
  return isnan(v) ? KEY_NAN : (ulong)((u >> 31) ? ~u : (u | 0x80000000u));
}
inline T
tval(ulong k)
{
  uint u = (uint)k;
  return as_float((u >> 31) ? (u & 0x7fffffffu) : ~u);
}
#endif

/* NumPy's _lerp: a + (b - a) t, from b's side for t >= 1/2; equal ends give that value (so two
 * equal infinities give the infinity, not NaN). */
inline T
qlerp(T a, T b, T t)
{
  if (a == b)
    return a;
  T d = b - a;
  return t >= (T)0.5 ? b - d * ((T)1 - t) : a + d * t;
}

/* The order statistics a quantile interpolates: ranks i0 <= i1 among nv > 0 sorted non-NaN
 * values and the weight g of the upper one (NumPy's virtual index q (nv - 1), in QT). */
inline void
qplan(ulong nv, QT q, uint method, ulong *i0, ulong *i1, T *g)
{
  const QT pos = q * (QT)(nv - 1);
  const QT fl = floor(pos);
  *g = (T)0;
  switch (method) {
  case QUANT_LOWER:
    *i0 = *i1 = (ulong)fl;
    break;
  case QUANT_HIGHER:
    *i0 = *i1 = (ulong)ceil(pos);
    break;
  case QUANT_NEAREST:
    *i0 = *i1 = (ulong)rint(pos);
    break;
  case QUANT_MIDPOINT:
    *i0 = (ulong)fl;
    *i1 = (ulong)ceil(pos);
    *g = (T)0.5;
    break;
  default:
    *i0 = (ulong)fl;
    *i1 = *i0 + 1;
    *g = (T)(pos - fl);
    break;
  }
  if (*i0 > nv - 1)
    *i0 = nv - 1;
  if (*i1 > nv - 1)
    *i1 = nv - 1;
}

/* Keys of the local sort: 32 bits suffice for f32 (half the local memory, twice the rows). */
#if defined(KILN_DT_F64)
typedef ulong LKT;
#define LKT_MAX ULONG_MAX
#else
typedef uint LKT;
#define LKT_MAX UINT_MAX
#endif

#define QP_NAME qpick_local
#define QP_AS local
#define QP_KT LKT
#include "stats_qpick.clh"
#define QP_NAME qpick_global
#define QP_AS global
#define QP_KT ulong
#include "stats_qpick.clh"

kernel void
quant_local(global const T *x, ulong xoff, ulong rows, ulong len, ulong inner, global const QT *q,
            ulong nq, uint method, uint omit, global T *out, ulong ooff, local LKT *keys,
            ulong np)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  for (ulong r = get_group_id(0); r < rows; r += get_num_groups(0)) {
    const ulong base = xoff + (r / inner) * len * inner + r % inner;
    for (ulong j = lid; j < np; j += lsz)
      keys[j] = j < len ? (LKT)tkey(x[base + j * inner]) : LKT_MAX;
    /* np <= the local limit: 32-bit indices. */
    const uint n2 = (uint)np;
    for (uint size = 2; size <= n2; size <<= 1) {
      for (uint jj = size / 2; jj > 0; jj >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint p = lid; p < n2 / 2; p += lsz) {
          uint i = ((p & ~(jj - 1)) << 1) | (p & (jj - 1)), l = i + jj;
          LKT ki = keys[i], kl = keys[l];
          if ((ki > kl) == ((i & size) == 0)) {
            keys[i] = kl;
            keys[l] = ki;
          }
        }
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (ulong qi = lid; qi < nq; qi += lsz)
      out[ooff + qi * rows + r] = qpick_local(keys, len, q[qi], method, omit);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

kernel void
quant_pack(global const T *x, ulong xoff, ulong rows, ulong len, ulong inner, ulong np,
           global ulong *keys, ulong koff, global ulong *vals, ulong voff)
{
  const ulong total = rows * len;
  for (ulong i = get_global_id(0); i < np; i += get_global_size(0)) {
    if (i < total) {
      ulong r = i / len, j = i % len;
      keys[koff + i] = r;
      vals[voff + i] = tkey(x[xoff + (r / inner) * len * inner + r % inner + j * inner]);
    } else {
      keys[koff + i] = ULONG_MAX;
      vals[voff + i] = ULONG_MAX;
    }
  }
}

/*
 * Rank k of a[0..n) (keys), moving a into a[0..k) <= a[k] <= a(k..n): quickselect with a
 * median-of-three pivot and Hoare's partition (equal keys split evenly), expected O(n).
 */
inline ulong
select_rank(global ulong *a, long n, long k)
{
  long lo = 0, hi = n - 1;
  while (hi > lo) {
    long mid = lo + (hi - lo) / 2;
    ulong t;
    if (a[mid] < a[lo]) {
      t = a[mid], a[mid] = a[lo], a[lo] = t;
    }
    if (a[hi] < a[lo]) {
      t = a[hi], a[hi] = a[lo], a[lo] = t;
    }
    if (a[hi] < a[mid]) {
      t = a[hi], a[hi] = a[mid], a[mid] = t;
    }
    const ulong pivot = a[mid];
    long i = lo, j = hi;
    while (i <= j) {
      while (a[i] < pivot)
        i++;
      while (a[j] > pivot)
        j--;
      if (i <= j) {
        t = a[i], a[i] = a[j], a[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j)
      hi = j;
    else if (k >= i)
      lo = i;
    else
      break;
  }
  return a[k];
}

/* One work-item per slice (CPUs): the slice's keys copied to s[r * len], the NaN keys
 * counted, then per q a quickselect of rank i0 and, for i1 = i0 + 1, the least key above it. */
kernel void
quant_select(global const T *x, ulong xoff, ulong rows, ulong len, ulong inner,
             global const QT *q, ulong nq, uint method, uint omit, global T *out, ulong ooff,
             global ulong *s, ulong soff)
{
  for (ulong r = get_global_id(0); r < rows; r += get_global_size(0)) {
    const ulong base = xoff + (r / inner) * len * inner + r % inner;
    global ulong *a = s + soff + r * len;
    ulong nv = 0;
    for (ulong j = 0; j < len; j++) {
      ulong k = tkey(x[base + j * inner]);
      a[j] = k;
      nv += k <= KEY_INF;
    }
    for (ulong qi = 0; qi < nq; qi++) {
      T res = (T)NAN;
      if (nv > 0 && (omit || nv == len)) {
        ulong i0, i1;
        T g;
        qplan(nv, q[qi], method, &i0, &i1, &g);
        const T lo = tval(select_rank(a, (long)len, (long)i0));
        res = lo;
        if (i1 != i0) { /* i1 == i0 + 1: the least key after rank i0 */
          ulong m = a[i1];
          for (ulong j = i1 + 1; j < len; j++)
            m = min(m, a[j]);
          res = qlerp(lo, tval(m), g);
        }
      }
      out[ooff + qi * rows + r] = res;
    }
  }
}

kernel void
quant_pick(global const ulong *vals, ulong voff, ulong rows, ulong len, global const QT *q,
           ulong nq, uint method, uint omit, global T *out, ulong ooff)
{
  for (ulong i = get_global_id(0); i < nq * rows; i += get_global_size(0)) {
    ulong qi = i / rows, r = i % rows;
    out[ooff + i] = qpick_global(vals + voff + r * len, len, q[qi], method, omit);
  }
}

/*
 * Radix selection (the GPU global path for few q): every (row, slot) selects one rank, slot
 * 2 qi the lower order statistic of q[qi] and 2 qi + 1 the upper one, 8 key bits per pass
 * from the top. sel[(r * nt + t) * 2] holds the key prefix found so far, [.. + 1] the rank
 * left within it (RS_NONE: the slot's value is NaN, nothing to select).
 *   quant_rs_nan(x, xoff, rows, len, inner, nnan)        1-D over rows * len: NaN per row
 *   quant_rs_init(rows, len, q, nq, method, omit, nnan, sel)  1-D over rows * nq
 *   quant_rs_hist(x, xoff, rows, len, inner, nchunk, nt, sel, shift, hist, lh)
 *     one work-group per (row, chunk of len / nchunk): local counts of the 8-bit digit at
 *     shift of the keys matching each slot's prefix, to hist[((r * nchunk + c) * nt + t) *
 *     256 + digit].
 *   quant_rs_pick(rows, nchunk, nt, hist, sel, shift)    1-D over rows * nt
 *   quant_rs_final(rows, len, q, nq, method, omit, nnan, sel, out, ooff)  1-D over nq * rows
 */
#define RS_NONE 0xffffffffffffffffUL

kernel void
quant_rs_nan(global const T *x, ulong xoff, ulong rows, ulong len, ulong inner, global uint *nnan)
{
  for (ulong i = get_global_id(0); i < rows * len; i += get_global_size(0)) {
    ulong r = i / len, j = i % len;
    if (isnan(x[xoff + (r / inner) * len * inner + r % inner + j * inner]))
      atomic_inc(&nnan[r]);
  }
}

kernel void
quant_rs_init(ulong rows, ulong len, global const QT *q, ulong nq, uint method, uint omit,
              global const uint *nnan, global ulong *sel)
{
  for (ulong i = get_global_id(0); i < rows * nq; i += get_global_size(0)) {
    ulong r = i / nq, qi = i % nq, nv = len - nnan[r];
    global ulong *s = sel + (r * 2 * nq + 2 * qi) * 2;
    if (nv == 0 || (!omit && nv < len)) {
      s[1] = s[3] = RS_NONE;
    } else {
      ulong i0, i1;
      T g;
      qplan(nv, q[qi], method, &i0, &i1, &g);
      s[1] = i0;
      s[3] = i1;
    }
    s[0] = s[2] = 0;
  }
}

kernel void
quant_rs_hist(global const T *x, ulong xoff, ulong rows, ulong len, ulong inner, ulong nchunk,
              ulong nt, global const ulong *sel, uint shift, global uint *hist, local uint *lh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const ulong himask = shift + 8 >= 64 ? 0 : ~0UL << (shift + 8);
  const ulong csize = (len + nchunk - 1) / nchunk;
  for (ulong g = get_group_id(0); g < rows * nchunk; g += get_num_groups(0)) {
    const ulong r = g / nchunk, c = g % nchunk;
    for (ulong b = lid; b < nt * 256; b += lsz)
      lh[b] = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    const ulong j0 = c * csize, j1 = min(len, j0 + csize);
    const ulong base = xoff + (r / inner) * len * inner + r % inner;
    global const ulong *s = sel + r * nt * 2;
    for (ulong j = j0 + lid; j < j1; j += lsz) {
      const ulong key = tkey(x[base + j * inner]);
      const uint digit = (uint)(key >> shift) & 255u;
      for (ulong t = 0; t < nt; t++)
        if (s[2 * t + 1] != RS_NONE && ((key ^ s[2 * t]) & himask) == 0)
          atomic_inc(&lh[t * 256 + digit]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (ulong b = lid; b < nt * 256; b += lsz)
      hist[g * nt * 256 + b] = lh[b];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

kernel void
quant_rs_pick(ulong rows, ulong nchunk, ulong nt, global const uint *hist, global ulong *sel,
              uint shift)
{
  for (ulong i = get_global_id(0); i < rows * nt; i += get_global_size(0)) {
    const ulong r = i / nt, t = i % nt;
    global ulong *s = sel + i * 2;
    if (s[1] == RS_NONE)
      continue;
    ulong below = 0;
    for (uint d = 0; d < 256; d++) {
      ulong cnt = 0;
      for (ulong c = 0; c < nchunk; c++)
        cnt += hist[((r * nchunk + c) * nt + t) * 256 + d];
      if (s[1] < below + cnt) {
        s[0] |= (ulong)d << shift;
        s[1] -= below;
        break;
      }
      below += cnt;
    }
  }
}

kernel void
quant_rs_final(ulong rows, ulong len, global const QT *q, ulong nq, uint method, uint omit,
               global const uint *nnan, global const ulong *sel, global T *out, ulong ooff)
{
  for (ulong i = get_global_id(0); i < nq * rows; i += get_global_size(0)) {
    const ulong qi = i / rows, r = i % rows, nv = len - nnan[r];
    global const ulong *s = sel + (r * 2 * nq + 2 * qi) * 2;
    T res = (T)NAN;
    if (s[1] != RS_NONE) {
      ulong i0, i1;
      T g;
      qplan(nv, q[qi], method, &i0, &i1, &g);
      const T a = tval(s[0]);
      res = i0 == i1 ? a : qlerp(a, tval(s[2]), g);
    }
    out[ooff + i] = res;
  }
}

/* ---------------------------------------------------------------- covariance */

#define COV_F 1u /* fweights present */
#define COV_A 2u /* aweights present */

inline T
cov_weight(global const T *f, ulong foff, global const T *a, ulong aoff, uint flags, ulong j)
{
  T wj = (T)1;
  if (flags & COV_F)
    wj = f[foff + j];
  if (flags & COV_A)
    wj *= a[aoff + j];
  return wj;
}

kernel void
cov_wsum(global const T *f, ulong foff, global const T *a, ulong aoff, ulong nobs, long ddof,
         uint flags, global T *params, global uint *flag, local T *s1, local T *s2)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  T v1 = (T)0, v2 = (T)0;
  uint bad = 0u;
  for (ulong j = lid; j < nobs; j += lsz) {
    if (flags & COV_F) {
      T fj = f[foff + j];
      if (!(fj >= (T)0) || isinf(fj) || fj != floor(fj))
        bad = 1u;
    }
    if (flags & COV_A) {
      T aj = a[aoff + j];
      if (!(aj >= (T)0) || isinf(aj))
        bad = 1u;
    }
    T wj = cov_weight(f, foff, a, aoff, flags, j);
    v1 += wj;
    if (flags & COV_A)
      v2 += wj * a[aoff + j];
  }
  if (bad)
    atomic_or(&flag[0], 1u);
  s1[lid] = v1;
  s2[lid] = v2;
  for (uint s = lsz / 2; s > 0; s /= 2) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < s) {
      s1[lid] += s1[lid + s];
      s2[lid] += s2[lid + s];
    }
  }
  if (lid == 0) {
    T sum = s1[0];
    if ((flags & (COV_F | COV_A)) && nobs > 0 && sum == (T)0)
      atomic_or(&flag[0], 2u);
    T fact = (flags & COV_A) ? sum - (T)ddof * s2[0] / sum : sum - (T)ddof;
    params[0] = sum;
    params[1] = fact > (T)0 ? fact : (T)0;
  }
}

kernel void
cov_mean(global const T *x, ulong xoff, ulong nvars, ulong nobs, ulong vs, ulong os,
         global const T *f, ulong foff, global const T *a, ulong aoff, uint flags, ulong nchunk,
         global T *part, local T *s)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const ulong csize = (nobs + nchunk - 1) / nchunk;
  for (ulong g = get_group_id(0); g < nvars * nchunk; g += get_num_groups(0)) {
    const ulong i = g / nchunk, j0 = (g % nchunk) * csize, j1 = min(nobs, j0 + csize);
    T acc = (T)0;
    for (ulong j = j0 + lid; j < j1; j += lsz)
      acc += cov_weight(f, foff, a, aoff, flags, j) * x[xoff + i * vs + j * os];
    s[lid] = acc;
    for (uint h = lsz / 2; h > 0; h /= 2) {
      barrier(CLK_LOCAL_MEM_FENCE);
      if (lid < h)
        s[lid] += s[lid + h];
    }
    if (lid == 0)
      part[g] = s[0];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

kernel void
cov_mean_fin(global const T *part, ulong nvars, ulong nchunk, global const T *params,
             global T *means)
{
  for (ulong i = get_global_id(0); i < nvars; i += get_global_size(0)) {
    T acc = (T)0;
    for (ulong c = 0; c < nchunk; c++)
      acc += part[i * nchunk + c];
    means[i] = acc / params[0];
  }
}

kernel void
cov_center(global const T *x, ulong xoff, ulong nvars, ulong nobs, uint by_rows,
           global const T *f, ulong foff, global const T *a, ulong aoff, uint flags,
           global const T *means, global T *A, ulong aout)
{
  for (ulong e = get_global_id(0); e < nvars * nobs; e += get_global_size(0)) {
    const ulong i = by_rows ? e / nobs : e % nvars, j = by_rows ? e % nobs : e / nvars;
    A[aout + e] = (x[xoff + e] - means[i]) * sqrt(cov_weight(f, foff, a, aoff, flags, j));
  }
}

kernel void
cov_diag(global const T *c, ulong coff, ulong n, global T *d)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    d[i] = c[coff + i * n + i];
}

kernel void
cov_finish(global T *c, ulong coff, global const T *d, ulong n, global const T *params, uint corr)
{
  const T fact = params[1];
  for (ulong i = get_global_id(0); i < n * n; i += get_global_size(0)) {
    T v = c[coff + i] / fact;
    if (corr && n == 1) {
      v = v / v; /* NumPy: c / c for a single variable (1, or NaN) */
    } else if (corr) {
      ulong r = i / n, col = i % n;
      v = v / sqrt(d[r] / fact) / sqrt(d[col] / fact);
      v = v > (T)1 ? (T)1 : v < (T)-1 ? (T)-1 : v;
    }
    c[coff + i] = v;
  }
}
