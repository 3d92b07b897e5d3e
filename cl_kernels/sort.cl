/*
 * sort family, typed kernels (source "sort"; lib/ops/sort.c, docs/sort.md): sort keys,
 * gathers, the work-group-local sort of short rows, unique, searchsorted, membership and
 * compaction. The radix passes and the scan are in sort_radix.cl.
 *
 * Build options: common.cl's (-DT=..., -DKILN_DT_<dtype>=1). Every real dtype: bool, u8,
 * i32, i64, f16, bf16, f32, f64. Offsets are in elements.
 *
 * Keys (K: ulong for i64 and f64, else uint) are order-preserving unsigned numbers: integers
 * with the sign bit flipped, floats with the bit-flip trick. Every NaN becomes the largest
 * key and -0.0 the key of +0.0, so NaNs sort last (ascending) and the zeros compare equal;
 * values always come from x through the payload, so -0.0 keeps its sign and NaN its bits.
 * desc flips every key bit (a stable descending sort: NaN first).
 *
 * Rows: element j of row r of x at (r / inner) * len * inner + r % inner + j * inner (the
 * sorted axis has len elements; inner is the product of the dimensions after it).
 *   sort_keys(x, xoff, rows, len, inner, desc, keys, koff, vals, voff)  1-D over rows * len:
 *     keys[p] = key(row p / len, element p % len), vals[p] = p (vals may be NULL).
 *   sort_keys_raw(x, xoff, n, desc, keys, koff, vals, voff, special), raw_values(vals, voff,
 *     n, out, ooff, keys, koff, desc, special)  f32, f16, bf16 only: values-only sorts of one
 *     row carry the values' own bits as the payloads (stable, so equal keys such as -0.0 and
 *     +0.0 or NaNs keep their order and bits) and write them back in order, with no gather
 *     through positions. f32 with special (else NULL): sort_keys_raw sets special[0] when x
 *     holds -0.0 or a NaN; without them the keys alone give the values back (the onesweep
 *     passes then skip the payloads) and raw_values rebuilds them from the keys.
 *   uniq_chunk_count, uniq_chunk_emit  integers only: unique of n sorted keys (no payloads)
 *     in two passes over the keys (below).
 *   keys_values(keys, koff, n, desc, out, ooff)  integers only: out[i] = the value of key i
 *     (values-only sorts of integers, whose equal values cannot be told apart, sort keys
 *     without positions).
 *   sort_col_keys(x, xoff, ncols, col, desc, first, n, keys, koff, vals, voff)  1-D over n
 *     (rows of a 2-D x): keys[i] = key(x[vals[i]][col]); first sets vals[i] = i before.
 *   sort_gather(x, xoff, rows, len, inner, vals, voff, vlen, ostart, olen, out, ooff, idx,
 *               ioff, want)  1-D over rows * olen: places ostart .. ostart + olen - 1 of each
 *     sorted row (payloads r * len + j in rows of vlen: the radix passes' or the selection's)
 *     into out / idx (want: bit 0 values, bit 1 i64 indices) of rows of olen elements.
 *   sort_local(x, xoff, rows, len, inner, desc, ostart, olen, out, ooff, idx, ioff, want,
 *              lk, lv, np)  one work-group per row: the row's (key, position) pairs sorted
 *     in local memory (SORT_PAIRS_LOCAL, np a power of two >= len), then placed as
 *     sort_gather places them.
 *   rows_gather(x, xoff, nrows, ncols, vals, voff, out, ooff, idx, ioff, want)  1-D over
 *     nrows * ncols: out row i = x row vals[i] (idx[i] = vals[i]).
 * Unique (sorted keys and payloads; ncols = 1, or the columns of rows):
 *   uniq_flags(keys, koff, n, flags)                       flags[i]: i starts a run of keys
 *   uniq_rows_flags(x, xoff, ncols, vals, voff, n, flags)  the same comparing rows' keys
 *   uniq_emit(x, xoff, ncols, vals, voff, n, flags, pos, out, ooff, first, foff, starts,
 *             inverse, ivoff, want)  1-D over n: pos is the exclusive scan of flags; run g
 *     writes its value (x row vals[i] of its first i), first[g] = vals[i] (i64),
 *     starts[g] = i (uint), inverse[vals[i]] = g (i64); want bits 0 out, 1 first, 2 inverse.
 *   uniq_counts(starts, nu, n, counts, coff)  counts[g] = starts[g + 1] - starts[g] (i64)
 * Searching:
 *   ss_search(seq, soff, n, sorter, sroff, has_sorter, batched, v, voff, m, total, right,
 *             out, ooff)  1-D over total queries: the insertion point of v[q] in row q / m
 *     of seq (row 0 unless batched), through sorter (i64) if has_sorter; right: after the
 *     equal keys.
 *   ss_search_cached(seq, soff, n, v, voff, total, right, out, ooff, spl, ns)  the same for a
 *     1-D seq without sorter, the first probes in ns splitters held in local memory.
 *   member_search(skeys, skoff, svals, svoff, ns, a, aoff, na, tf, tfoff, loc, loff, hit,
 *                 keep, want)  1-D over na: binary search of key(a[i]) in the sorted keys of
 *     s; NaN matches nothing; tf (bool) and loc (i64: svals at the first equal key, -1 when
 *     none) per want bits 0 and 1; bit 2: hit[i] = (found == keep) as uint.
 *   compact(x, xoff, n, flags, pos, out, ooff, i1, i1off, o1, o1off, want)  1-D over n:
 *     out[pos[i]] = x[i] and (want bit 1) o1[pos[i]] = i1[i] (i64) where flags[i].
 *   take_i64(src, soff, at, atoff, n, dst, doff)  dst[i] = src[at[i]] (i64 arrays)
 *   iota(vals, voff, n)  vals[i] = i (uint)
 */
#include "common.cl"
#include "sort_chunks.clh"
#include "sort_pairs.clh"

#include "sort_key.clh"

SORT_PAIRS_LOCAL(local_pairs_sort, K)

inline int
is_nan_of(T v)
{
#if KILN_IS_FLOAT
  return isnan(v);
#else
  return 0;
#endif
}

/* Moves one element as MT (f16 has no arithmetic type without cl_khr_fp16; every bit kept). */
#define MOVE(dst, di, src, si) (((global MT *)(dst))[di] = ((global const MT *)(src))[si])

inline ulong
phys(ulong r, ulong j, ulong len, ulong inner)
{
  return (r / inner) * len * inner + r % inner + j * inner;
}

kernel void
sort_keys(global const ST *x, ulong xoff, ulong rows, ulong len, ulong inner, uint desc,
          global K *keys, ulong koff, global uint *vals, ulong voff)
{
  const K flip = desc ? (K)K_FLIP : (K)0;
  const ulong n = rows * len;
  for (ulong p = get_global_id(0); p < n; p += get_global_size(0)) {
    /* inner == 1: the logical position is the physical one (no 64-bit divisions). */
    ulong at = p;
    if (inner != 1) {
      ulong r = p / len;
      at = phys(r, p - r * len, len, inner);
    }
    keys[koff + p] = key_of(KILN_LOAD(x, xoff + at)) ^ flip;
    if (vals)
      vals[voff + p] = (uint)p;
  }
}

kernel void
sort_col_keys(global const ST *x, ulong xoff, ulong ncols, ulong col, uint desc, uint first,
              ulong n, global K *keys, ulong koff, global uint *vals, ulong voff)
{
  const K flip = desc ? (K)K_FLIP : (K)0;
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    uint v = first ? (uint)i : vals[voff + i];
    if (first)
      vals[voff + i] = v;
    keys[koff + i] = key_of(KILN_LOAD(x, xoff + (ulong)v * ncols + col)) ^ flip;
  }
}

kernel void
sort_gather(global const ST *x, ulong xoff, ulong rows, ulong len, ulong inner,
            global const uint *vals, ulong voff, ulong vlen, ulong ostart, ulong olen,
            global ST *out, ulong ooff, global long *idx, ulong ioff, uint want)
{
  const ulong n = rows * olen;
  if (inner == 1 && olen == len && vlen == len) {
    /* Whole contiguous rows: payloads are physical positions. */
    for (ulong q = get_global_id(0); q < n; q += get_global_size(0)) {
      ulong src = vals[voff + q];
      if (want & 1u)
        MOVE(out, ooff + q, x, xoff + src);
      if (want & 2u)
        idx[ioff + q] = (long)(rows == 1 ? src : src % len);
    }
    return;
  }
  for (ulong q = get_global_id(0); q < n; q += get_global_size(0)) {
    ulong r = q / olen, jj = q - r * olen;
    ulong src = (ulong)vals[voff + r * vlen + ostart + jj] - r * len;
    ulong o = phys(r, jj, olen, inner);
    if (want & 1u)
      MOVE(out, ooff + o, x, xoff + phys(r, src, len, inner));
    if (want & 2u)
      idx[ioff + o] = (long)src;
  }
}

kernel void
sort_local(global const ST *x, ulong xoff, ulong rows, ulong len, ulong inner, uint desc,
           ulong ostart, ulong olen, global ST *out, ulong ooff, global long *idx, ulong ioff,
           uint want, local K *lk, local uint *lv, ulong np)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const K flip = desc ? (K)K_FLIP : (K)0;
  for (ulong r = get_group_id(0); r < rows; r += get_num_groups(0)) {
    for (ulong j = lid; j < np; j += lsz) {
      lk[j] = j < len ? key_of(KILN_LOAD(x, xoff + phys(r, j, len, inner))) ^ flip : (K)K_MAX;
      lv[j] = (uint)j;
    }
    local_pairs_sort(lk, lv, (uint)np);
    for (ulong jj = lid; jj < olen; jj += lsz) {
      ulong src = lv[ostart + jj];
      ulong o = phys(r, jj, olen, inner);
      if (want & 1u)
        MOVE(out, ooff + o, x, xoff + phys(r, src, len, inner));
      if (want & 2u)
        idx[ioff + o] = (long)src;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

kernel void
rows_gather(global const ST *x, ulong xoff, ulong nrows, ulong ncols, global const uint *vals,
            ulong voff, global ST *out, ulong ooff, global long *idx, ulong ioff, uint want)
{
  const ulong n = nrows * ncols;
  for (ulong q = get_global_id(0); q < n; q += get_global_size(0)) {
    ulong i = q / ncols, c = q - i * ncols;
    ulong src = vals[voff + i];
    if (want & 1u)
      MOVE(out, ooff + q, x, xoff + src * ncols + c);
    if ((want & 2u) && c == 0)
      idx[ioff + i] = (long)src;
  }
}

/* ---------------------------------------------------------------- selection (topk) */

/*
 * Radix selection of the k smallest (key, position) pairs of each row, reading x directly
 * (no key array): the need-th smallest key T of each row, 8 bits a pass from the top
 * (mode 0), then, only in rows where fewer than all keys equal to T are wanted, the
 * need-th smallest position among them, 8 bits a pass (mode 1). Then exactly k pairs per
 * row are collected (any order; the caller sorts them by key, then position).
 *   tk_hist(x, xoff, rows, len, inner, desc, nchunk, prefix, pmask, shift, ppre, ppmask,
 *           mode, tie, hist, lh)  one work-group per (row, chunk): hist[r * 256 + d] += the
 *     chunk's keys under the prefix decided so far with digit d (mode 1: keys equal to
 *     prefix[r] whose position matches ppre[r] under ppmask, by their position's digit;
 *     rows with tie[r] == 0 count nothing).
 *   tk_pick(hist, rows, need, prefix, ppre, tie, shift, mode, last)  1-D over rows: the digit
 *     whose counts cover need joins prefix (mode 1: ppre); need becomes the rank within it;
 *     hist zeroed. The last key pass sets tie[r] = need < the count of keys equal to T.
 *   tk_collect(x, xoff, rows, len, inner, desc, prefix, ppre, tie, k, rowcnt, ckeys, cvals)
 *     1-D over rows * len: keys below T, and keys equal to T (at positions up to ppre[r]
 *     where tie[r]), go to slots rowcnt[r]++ of row r: ckeys / cvals[r * k + slot] = the
 *     key and the flat position r * len + j.
 */
/* Copies of the selection's local histograms (lh holds 256 * TK_COPIES uints). */
#define TK_COPIES 8u

kernel void
tk_hist(global const ST *x, ulong xoff, ulong rows, ulong len, ulong inner, uint desc,
        ulong nchunk, global const K *prefix, K pmask, uint shift, global const uint *ppre,
        uint ppmask, uint mode, global const uint *tie, global uint *hist, local uint *lh)
{
  const K flip = desc ? (K)K_FLIP : (K)0;
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const ulong chunk = (len + nchunk - 1) / nchunk;
  for (ulong gi = get_group_id(0); gi < rows * nchunk; gi += get_num_groups(0)) {
    const ulong r = gi / nchunk, c = gi - r * nchunk;
    /* TK_COPIES copies of the histogram (work-item t counts into copy t % TK_COPIES): keys
     * sharing a digit would otherwise serialise on one counter. */
    for (uint b = lid; b < 256u * TK_COPIES; b += lsz)
      lh[b] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    const K pre = prefix[r];
    const uint pp = ppre[r], skip = mode && !tie[r], c0 = (lid % TK_COPIES) * 256u;
    ulong lo = c * chunk, hi = lo + chunk;
    if (hi > len || skip)
      hi = skip ? lo : len;
    for (ulong j = lo + lid; j < hi; j += lsz) {
      ulong at = inner == 1 ? r * len + j : phys(r, j, len, inner);
      K kv = key_of(KILN_LOAD(x, xoff + at)) ^ flip;
      uint d;
      if (mode) {
        if (kv != pre || ((uint)j & ppmask) != pp)
          continue;
        d = ((uint)j >> shift) & 255u;
      } else {
        if ((kv & pmask) != pre)
          continue;
        d = (uint)(kv >> shift) & 255u;
      }
      /* One work-item per group (CPUs): a plain increment, no atomic. */
      if (lsz == 1)
        lh[d]++;
      else
        atomic_inc(&lh[c0 + d]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint b = lid; b < 256u; b += lsz) {
      uint c = 0;
      for (uint q = 0; q < TK_COPIES; q++)
        c += lh[q * 256u + b];
      if (c)
        atomic_add(&hist[r * 256u + b], c);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

kernel void
tk_pick(global uint *hist, ulong rows, global uint *need, global K *prefix, global uint *ppre,
        global uint *tie, uint shift, uint mode, uint last)
{
  for (ulong r = get_global_id(0); r < rows; r += get_global_size(0)) {
    global uint *h = hist + r * 256u;
    if (mode && !tie[r])
      continue;
    uint want = need[r], cum = 0, b = 0;
    for (; b < 255u && cum + h[b] < want; b++)
      cum += h[b];
    need[r] = want - cum;
    if (mode) {
      ppre[r] |= b << shift;
    } else {
      prefix[r] |= (K)b << shift;
      if (last)
        tie[r] = want - cum < h[b];
    }
    for (uint i = 0; i < 256u; i++)
      h[i] = 0;
  }
}

kernel void
tk_collect(global const ST *x, ulong xoff, ulong rows, ulong len, ulong inner, uint desc,
           global const K *prefix, global const uint *ppre, global const uint *tie, ulong k,
           global uint *rowcnt, global K *ckeys, global uint *cvals)
{
  const K flip = desc ? (K)K_FLIP : (K)0;
  const ulong n = rows * len;
  for (ulong p = get_global_id(0); p < n; p += get_global_size(0)) {
    ulong r = rows == 1 ? 0 : p / len, j = p - r * len;
    ulong at = inner == 1 ? p : phys(r, j, len, inner);
    K kv = key_of(KILN_LOAD(x, xoff + at)) ^ flip, t = prefix[r];
    if (kv < t || (kv == t && (!tie[r] || (uint)j <= ppre[r]))) {
      uint slot = atomic_inc(&rowcnt[r]);
      ckeys[r * k + slot] = kv;
      cvals[r * k + slot] = (uint)p;
    }
  }
}

/*
 * tk_rows_local(x, xoff, rows, len, inner, desc, k, ostart, olen, out, ooff, idx, ioff, want,
 *               lk, lv, kp, kbits)  one work-group per row: the selection of tk_hist,
 *   tk_pick and tk_collect within the group (the row re-read, from the caches, each pass;
 *   the histogram in local memory), then the row's k pairs sorted in local memory (kp a
 *   power of two >= k) and positions [ostart, ostart + olen) placed as sort_gather does.
 *   kbits: the key bits (8 or the key's width).
 */
kernel void
tk_rows_local(global const ST *x, ulong xoff, ulong rows, ulong len, ulong inner, uint desc,
              ulong k, ulong ostart, ulong olen, global ST *out, ulong ooff, global long *idx,
              ulong ioff, uint want, local K *lk, local uint *lv, ulong kp, uint kbits)
{
  local uint lh[256 * TK_COPIES];
  local K s_pre;
  local uint s_need, s_tie, s_ppre, s_cnt;
  const uint lid = get_local_id(0), lsz = get_local_size(0), kw = 8u * (uint)sizeof(K);
  const K flip = desc ? (K)K_FLIP : (K)0;
  uint pbits = 0;
  while (((ulong)1 << pbits) < len)
    pbits++;
  const uint ppass = (pbits + 7u) / 8u, kpass = kbits / 8u;
  for (ulong r = get_group_id(0); r < rows; r += get_num_groups(0)) {
    if (lid == 0) {
      s_pre = 0;
      s_need = (uint)k;
      s_tie = 0;
      s_ppre = 0;
      s_cnt = 0;
    }
    for (uint p = 0; p < kpass + ppass; p++) {
      const uint mode = p >= kpass;
      const uint shift = mode ? 8u * (ppass - 1u - (p - kpass)) : kbits - 8u * (p + 1u);
      for (uint b = lid; b < 256u * TK_COPIES; b += lsz)
        lh[b] = 0;
      barrier(CLK_LOCAL_MEM_FENCE);
      const K pre = s_pre;
      const uint c0 = (lid % TK_COPIES) * 256u;
      const uint pp = s_ppre, tie = s_tie;
      const K pmask = shift + 8u >= kw ? (K)0 : ~(((K)1 << (shift + 8u)) - (K)1);
      const uint ppmask = shift + 8u >= 32u ? 0u : ~((1u << (shift + 8u)) - 1u);
      for (ulong j = lid; j < len && (!mode || tie); j += lsz) {
        K kv = key_of(KILN_LOAD(x, xoff + phys(r, j, len, inner))) ^ flip;
        if (mode ? (kv == pre && ((uint)j & ppmask) == pp) : (kv & pmask) == pre)
          atomic_inc(&lh[c0 + (mode ? ((uint)j >> shift) & 255u : (uint)(kv >> shift) & 255u)]);
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      for (uint b = lid; b < 256u; b += lsz)
        for (uint q = 1; q < TK_COPIES; q++)
          lh[b] += lh[q * 256u + b];
      barrier(CLK_LOCAL_MEM_FENCE);
      if (lid == 0 && (!mode || tie)) {
        uint wnt = s_need, cum = 0, b = 0;
        for (; b < 255u && cum + lh[b] < wnt; b++)
          cum += lh[b];
        s_need = wnt - cum;
        if (mode) {
          s_ppre |= b << shift;
        } else {
          s_pre |= (K)b << shift;
          if (p + 1u == kpass)
            s_tie = wnt - cum < lh[b];
        }
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    const K t = s_pre;
    const uint tie = s_tie, pp = s_ppre;
    for (ulong j = lid; j < len; j += lsz) {
      K kv = key_of(KILN_LOAD(x, xoff + phys(r, j, len, inner))) ^ flip;
      if (kv < t || (kv == t && (!tie || (uint)j <= pp))) {
        uint slot = atomic_inc(&s_cnt);
        lk[slot] = kv;
        lv[slot] = (uint)j;
      }
    }
    for (ulong j = k + lid; j < kp; j += lsz) {
      lk[j] = (K)K_MAX;
      lv[j] = UINT_MAX;
    }
    local_pairs_sort(lk, lv, (uint)kp);
    for (ulong jj = lid; jj < olen; jj += lsz) {
      ulong src = lv[ostart + jj];
      ulong o = phys(r, jj, olen, inner);
      if (want & 1u)
        MOVE(out, ooff + o, x, xoff + phys(r, src, len, inner));
      if (want & 2u)
        idx[ioff + o] = (long)src;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

/* ---------------------------------------------------------------- unique */

kernel void
uniq_flags(global const K *keys, ulong koff, ulong n, global uint *flags)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    flags[i] = i == 0 || keys[koff + i] != keys[koff + i - 1];
}

kernel void
uniq_rows_flags(global const ST *x, ulong xoff, ulong ncols, global const uint *vals, ulong voff,
                ulong n, global uint *flags)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    uint f = i == 0;
    if (!f) {
      ulong a = (ulong)vals[voff + i] * ncols, b = (ulong)vals[voff + i - 1] * ncols;
      for (ulong c = 0; c < ncols && !f; c++)
        f = key_of(KILN_LOAD(x, xoff + a + c)) != key_of(KILN_LOAD(x, xoff + b + c));
    }
    flags[i] = f;
  }
}

kernel void
uniq_emit(global const ST *x, ulong xoff, ulong ncols, global const uint *vals, ulong voff,
          ulong n, global const uint *flags, global const uint *pos, global ST *out, ulong ooff,
          global long *first, ulong foff, global uint *starts, global long *inverse, ulong ivoff,
          uint want)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    ulong g = (ulong)pos[i] + flags[i] - 1;
    ulong v = vals[voff + i];
    if (flags[i]) {
      starts[g] = (uint)i;
      if (want & 1u)
        for (ulong c = 0; c < ncols; c++)
          MOVE(out, ooff + g * ncols + c, x, xoff + v * ncols + c);
      if (want & 2u)
        first[foff + g] = (long)v;
    }
    if (want & 4u)
      inverse[ivoff + v] = (long)g;
  }
}

kernel void
uniq_counts(global const uint *starts, ulong nu, ulong n, global long *counts, ulong coff)
{
  for (ulong g = get_global_id(0); g < nu; g += get_global_size(0))
    counts[coff + g] = (long)((g + 1 < nu ? (ulong)starts[g + 1] : n) - starts[g]);
}

/* ---------------------------------------------------------------- searching */

kernel void
ss_search(global const ST *seq, ulong soff, ulong n, global const long *sorter, ulong sroff,
          uint has_sorter, uint batched, global const ST *v, ulong voff, ulong m, ulong total,
          uint right, global long *out, ulong ooff)
{
  for (ulong q = get_global_id(0); q < total; q += get_global_size(0)) {
    const ulong base = batched ? (q / m) * n : 0;
    const K kv = key_of(KILN_LOAD(v, voff + q));
    ulong lo = 0, hi = n;
    while (lo < hi) {
      ulong mid = lo + (hi - lo) / 2;
      ulong at = has_sorter ? base + (ulong)sorter[sroff + base + mid] : base + mid;
      K km = key_of(KILN_LOAD(seq, soff + at));
      if (right ? km <= kv : km < kv)
        lo = mid + 1;
      else
        hi = mid;
    }
    out[ooff + q] = (long)lo;
  }
}

/*
 * ss_search_cached(seq, soff, n, v, voff, total, right, out, ooff, spl, ns)  ss_search of a
 * 1-D seq without sorter, grid-stride over the queries: each work-group first loads ns
 * splitters (the keys at i * n / ns) into local memory, finds a query's pair of splitters
 * there and searches only between them in global memory (half the global probes).
 */
kernel void
ss_search_cached(global const ST *seq, ulong soff, ulong n, global const ST *v, ulong voff,
                 ulong total, uint right, global long *out, ulong ooff, local K *spl, uint ns)
{
  for (uint i = get_local_id(0); i < ns; i += get_local_size(0))
    spl[i] = key_of(KILN_LOAD(seq, soff + (ulong)i * n / ns));
  barrier(CLK_LOCAL_MEM_FENCE);
  for (ulong q = get_global_id(0); q < total; q += get_global_size(0)) {
    const K kv = key_of(KILN_LOAD(v, voff + q));
    /* c: the splitters below kv (left) or not above it (right). */
    uint clo = 0, chi = ns;
    while (clo < chi) {
      uint mid = (clo + chi) >> 1;
      K km = spl[mid];
      if (right ? km <= kv : km < kv)
        clo = mid + 1;
      else
        chi = mid;
    }
    ulong lo = clo ? (ulong)(clo - 1) * n / ns + 1 : 0, hi = clo < ns ? (ulong)clo * n / ns : n;
    while (lo < hi) {
      ulong mid = lo + (hi - lo) / 2;
      K km = key_of(KILN_LOAD(seq, soff + mid));
      if (right ? km <= kv : km < kv)
        lo = mid + 1;
      else
        hi = mid;
    }
    out[ooff + q] = (long)lo;
  }
}

kernel void
member_search(global const K *skeys, ulong skoff, global const uint *svals, ulong svoff, ulong ns,
              global const ST *a, ulong aoff, ulong na, global uchar *tf, ulong tfoff,
              global long *loc, ulong loff, global uint *hit, uint keep, uint want)
{
  for (ulong i = get_global_id(0); i < na; i += get_global_size(0)) {
    T av = KILN_LOAD(a, aoff + i);
    const K kv = key_of(av);
    ulong lo = 0, hi = ns;
    while (lo < hi) {
      ulong mid = lo + (hi - lo) / 2;
      if (skeys[skoff + mid] < kv)
        lo = mid + 1;
      else
        hi = mid;
    }
    int found = !is_nan_of(av) && lo < ns && skeys[skoff + lo] == kv;
    if (want & 1u)
      tf[tfoff + i] = (uchar)found;
    if (want & 2u)
      loc[loff + i] = found ? (long)svals[svoff + lo] : -1L;
    if (want & 4u)
      hit[i] = (uint)(found == (int)keep);
  }
}

kernel void
compact(global const ST *x, ulong xoff, ulong n, global const uint *flags, global const uint *pos,
        global ST *out, ulong ooff, global const long *i1, ulong i1off, global long *o1,
        ulong o1off, uint want)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    if (!flags[i])
      continue;
    ulong p = pos[i];
    if (want & 1u)
      MOVE(out, ooff + p, x, xoff + i);
    if (want & 2u)
      o1[o1off + p] = i1[i1off + i];
  }
}

kernel void
take_i64(global const long *src, ulong soff, global const long *at, ulong atoff, ulong n,
         global long *dst, ulong doff)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    dst[doff + i] = src[soff + (ulong)at[atoff + i]];
}

kernel void
iota(global uint *vals, ulong voff, ulong n)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    vals[voff + i] = (uint)i;
}

#if !KILN_IS_FLOAT
inline T
value_of_key(K kv)
{
#if defined(KILN_DT_I64)
  return (T)(kv ^ 0x8000000000000000UL);
#elif defined(KILN_DT_I32)
  return (T)(kv ^ 0x80000000u);
#else
  return (T)kv;
#endif
}

/*
 * Unique of sorted integer keys without flag or position arrays: the flag of key i (it
 * starts a run) is recomputed from keys[i - 1] wherever it is needed.
 *   uniq_chunk_count(keys, koff, n, chunk, sums, tmp)  one work-group per chunk of n:
 *     sums[g] = the runs starting in chunk g.
 *   uniq_chunk_emit(keys, koff, n, chunk, sums, tmp, out, ooff, starts)  with sums
 *     exclusively scanned: run g (numbered from sums[chunk]) writes its value to out[g] and
 *     its first place to starts[g]. Work-item t of L takes the consecutive part t of its chunk.
 */
inline uint
run_start(global const K *keys, ulong i)
{
  return i == 0 || keys[i] != keys[i - 1];
}

kernel void
uniq_chunk_count(global const K *keys, ulong koff, ulong n, ulong chunk, global uint *sums,
                 local uint *tmp)
{
  const ulong g = get_group_id(0);
  const uint t = get_local_id(0), L = get_local_size(0);
  keys += koff;
  ulong lo = g * chunk, hi = lo + chunk;
  if (hi > n)
    hi = n;
  uint c = 0;
  for (ulong i = lo + t; i < hi; i += L)
    c += run_start(keys, i);
  uint total = group_total(tmp, c);
  if (t == 0)
    sums[g] = total;
}

kernel void
uniq_chunk_emit(global const K *keys, ulong koff, ulong n, ulong chunk, global const uint *sums,
                local uint *tmp, global T *out, ulong ooff, global uint *starts)
{
  const ulong g = get_group_id(0);
  keys += koff;
  ulong lo, hi;
  chunk_part(g, chunk, n, &lo, &hi);
  uint c = 0;
  for (ulong i = lo; i < hi; i++)
    c += run_start(keys, i);
  uint run = group_scan_excl(tmp, c, sums + g);
  for (ulong i = lo; i < hi; i++) {
    if (run_start(keys, i)) {
      out[ooff + run] = value_of_key(keys[i]);
      starts[run] = (uint)i;
      run++;
    }
  }
}

kernel void
keys_values(global const K *keys, ulong koff, ulong n, uint desc, global T *out, ulong ooff)
{
  const K flip = desc ? (K)K_FLIP : (K)0;
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    out[ooff + i] = value_of_key(keys[koff + i] ^ flip);
  }
}
#endif

#if defined(KILN_DT_F32) || KILN_IS_HALF
kernel void
sort_keys_raw(global const ST *x, ulong xoff, ulong n, uint desc, global K *keys, ulong koff,
              global uint *vals, ulong voff, global uint *special)
{
  const K flip = desc ? (K)K_FLIP : (K)0;
  for (ulong p = get_global_id(0); p < n; p += get_global_size(0)) {
    keys[koff + p] = key_of(KILN_LOAD(x, xoff + p)) ^ flip;
#if defined(KILN_DT_F32)
    uint u = as_uint(x[xoff + p]);
    vals[voff + p] = u;
    /* -0.0 and NaNs: the only values key_of does not map one to one. */
    if (special && (u == 0x80000000u || (u & 0x7fffffffu) > 0x7f800000u))
      atomic_or(special, 1u);
#else
    vals[voff + p] = (uint)((global const MT *)x)[xoff + p];
#endif
  }
}

kernel void
raw_values(global const uint *vals, ulong voff, ulong n, global ST *out, ulong ooff,
           global const K *keys, ulong koff, uint desc, global const uint *special)
{
#if defined(KILN_DT_F32)
  /* Without -0.0 and NaNs the keys give the values back (the passes may then have left the
   * payloads unmoved). */
  if (special && !special[0]) {
    const K flip = desc ? (K)K_FLIP : (K)0;
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
      uint k = keys[koff + i] ^ flip;
      out[ooff + i] = as_float((k >> 31) ? k ^ 0x80000000u : ~k);
    }
    return;
  }
#endif
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
#if defined(KILN_DT_F32)
    out[ooff + i] = as_float(vals[voff + i]);
#else
    ((global MT *)out)[ooff + i] = (MT)vals[voff + i];
#endif
}
#endif
