/*
 * sort family, key-only kernels (source "sort_radix"; lib/ops/sort.c, docs/sort.md): the
 * passes of the stable LSD radix sort of (key, payload) pairs and an exclusive scan of uints.
 * Built for dtype i32 (K = uint keys: every dtype of 4 bytes or less) and i64 (K = ulong:
 * i64, f64); the keys are already order-preserving unsigned numbers (sort.cl's sort_keys).
 * Payloads are uint (flat positions: a sort holds fewer than 2^32 elements).
 *
 * A pass sorts by the digit of rbits bits (at most 11) at `shift` of the key (mode 0) or of the payload's row,
 * payload / len (mode 1: the row passes of many-row sorts, after the key passes). Work-group g
 * owns the tile [g * tile, (g + 1) * tile) of the n pairs; work-item t of its L owns the
 * consecutive part [t * ipt, (t + 1) * ipt) of the tile (ipt = tile / L), so a tile's pairs
 * in (t, i) order are in input order and a serial walk per work-item keeps the scatter stable.
 * cnt (local, 2^rbits * L uints) is bucket-major: cnt[b * L + t].
 *   radix_count(keys, koff, vals, voff, n, tile, shift, rbits, mode, len, hist, cnt)
 *     hist[b * ngroups + g] = the tile's pairs of digit b.
 *   radix_scatter(keys, koff, vals, voff, n, tile, shift, rbits, mode, len, hist, okeys,
 *                 okoff, ovals, ovoff, cnt)
 *     with hist exclusively scanned (bucket-major, so hist[b * ngroups + g] is where the
 *     tile's first pair of digit b goes), moves every pair to its place.
 * Scan (in place, exclusive, of m uints; chunk per work-group):
 *   scan_reduce(a, m, chunk, sums, tmp)  sums[g] = the sum of chunk g
 *   scan_top(sums, nb)                   one work-item: exclusive scan of the nb sums
 *   scan_down(a, m, chunk, sums, tmp)    chunk g scanned from sums[g]
 * Tunables (host): L (the local size, 1 on CPUs: one serial walk per work-group), tile,
 * rbits (8 on GPUs: 256 counters per work-item in local memory; 11 on CPUs: fewer passes).
 */
#include "common.cl"

#if defined(KILN_DT_I64)
typedef ulong K;
#else
typedef uint K;
#endif

#define RADIX_SEL 256u

inline uint
digit_of(global const K *keys, global const uint *vals, ulong i, uint shift, uint mask, uint mode,
         ulong len)
{
  if (mode)
    return (uint)(((ulong)vals[i] / len) >> shift) & mask;
  return (uint)(keys[i] >> shift) & mask;
}

/* Counts the digits of work-item t's part of tile g into cnt[b * L + t]. */
inline void
count_part(global const K *keys, global const uint *vals, ulong n, ulong tile, uint shift,
           uint rbits, uint mode, ulong len, local uint *cnt, ulong g)
{
  const uint t = get_local_id(0), L = get_local_size(0), nb = 1u << rbits, mask = nb - 1u;
  for (uint b = 0; b < nb; b++)
    cnt[b * L + t] = 0;
  const ulong ipt = tile / L;
  ulong lo = g * tile + t * ipt, hi = lo + ipt;
  if (hi > n)
    hi = n;
  for (ulong i = lo; i < hi; i++)
    cnt[digit_of(keys, vals, i, shift, mask, mode, len) * L + t]++;
}

kernel void
radix_count(global const K *keys, ulong koff, global const uint *vals, ulong voff, ulong n,
            ulong tile, uint shift, uint rbits, uint mode, ulong len, global uint *hist,
            local uint *cnt)
{
  const ulong g = get_group_id(0), ng = get_num_groups(0);
  const uint t = get_local_id(0), L = get_local_size(0), nb = 1u << rbits;
  count_part(keys + koff, vals + voff, n, tile, shift, rbits, mode, len, cnt, g);
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint b = t; b < nb; b += L) {
    uint s = 0;
    for (uint u = 0; u < L; u++)
      s += cnt[b * L + u];
    hist[b * ng + g] = s;
  }
}

kernel void
radix_scatter(global const K *keys, ulong koff, global const uint *vals, ulong voff, ulong n,
              ulong tile, uint shift, uint rbits, uint mode, ulong len, global const uint *hist,
              global K *okeys, ulong okoff, global uint *ovals, ulong ovoff, local uint *cnt)
{
  const ulong g = get_group_id(0), ng = get_num_groups(0);
  const uint t = get_local_id(0), L = get_local_size(0), nb = 1u << rbits, mask = nb - 1u;
  keys += koff;
  vals += voff;
  okeys += okoff;
  ovals += ovoff;
  count_part(keys, vals, n, tile, shift, rbits, mode, len, cnt, g);
  barrier(CLK_LOCAL_MEM_FENCE);
  /* Each work-item's first place per digit: the tile's base plus the earlier parts' counts. */
  for (uint b = t; b < nb; b += L) {
    uint run = hist[b * ng + g];
    for (uint u = 0; u < L; u++) {
      uint c = cnt[b * L + u];
      cnt[b * L + u] = run;
      run += c;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const ulong ipt = tile / L;
  ulong lo = g * tile + t * ipt, hi = lo + ipt;
  if (hi > n)
    hi = n;
  for (ulong i = lo; i < hi; i++) {
    uint d = digit_of(keys, vals, i, shift, mask, mode, len);
    uint p = cnt[d * L + t]++;
    okeys[p] = keys[i];
    ovals[p] = vals[i];
  }
}

/* ---------------------------------------------------------------- exclusive scan of uints */

kernel void
scan_reduce(global const uint *a, ulong m, ulong chunk, global uint *sums, local uint *tmp)
{
  const ulong g = get_group_id(0);
  const uint t = get_local_id(0), L = get_local_size(0);
  ulong lo = g * chunk, hi = lo + chunk;
  if (hi > m)
    hi = m;
  uint s = 0;
  for (ulong i = lo + t; i < hi; i += L)
    s += a[i];
  tmp[t] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (t == 0) {
    uint total = 0;
    for (uint u = 0; u < L; u++)
      total += tmp[u];
    sums[g] = total;
  }
}

kernel void
scan_top(global uint *sums, ulong nb)
{
  if (get_global_id(0) != 0)
    return;
  uint run = 0;
  for (ulong i = 0; i < nb; i++) {
    uint c = sums[i];
    sums[i] = run;
    run += c;
  }
}

kernel void
scan_down(global uint *a, ulong m, ulong chunk, global const uint *sums, local uint *tmp)
{
  const ulong g = get_group_id(0);
  const uint t = get_local_id(0), L = get_local_size(0);
  ulong base = g * chunk, end = base + chunk;
  if (end > m)
    end = m;
  /* Work-item t scans the consecutive part [lo, hi) of the chunk. */
  const ulong ipt = (chunk + L - 1) / L;
  ulong lo = base + t * ipt, hi = lo + ipt;
  if (lo > end)
    lo = end;
  if (hi > end)
    hi = end;
  uint s = 0;
  for (ulong i = lo; i < hi; i++)
    s += a[i];
  tmp[t] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (t == 0) {
    uint run = sums[g];
    for (uint u = 0; u < L; u++) {
      uint c = tmp[u];
      tmp[u] = run;
      run += c;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  uint run = tmp[t];
  for (ulong i = lo; i < hi; i++) {
    uint c = a[i];
    a[i] = run;
    run += c;
  }
}

/* ---------------------------------------------------------------- selection (topk) */

/*
 * Radix selection of the need-th smallest key of each row of rows x len keys (row r at
 * keys[r * len]), 8 bits a pass from the top: prefix[r] holds the bits decided so far (under
 * pmask), need[r] the rank (from 1) still wanted among the keys with that prefix.
 *   sel_hist(keys, koff, rows, len, nchunk, prefix, pmask, shift, hist, lh)  one work-group
 *     per (row, chunk): hist[r * 256 + digit] += the chunk's keys with the prefix.
 *   sel_pick(hist, rows, need, prefix, shift)  1-D over rows: the digit whose counts cover
 *     need, added to prefix; need becomes the rank within it; hist zeroed for the next pass.
 * Then the k smallest of each row, stable (keys below the k-th, then the first `need` equal
 * to it in position order), are packed into rows of k pairs and sorted:
 *   sel_flags(keys, koff, rows, len, prefix, lt, eq)  1-D over rows * len: lt = key < T,
 *     eq = key == T (T = prefix[r], the k-th key).
 *   sel_keep(rows, len, need, lt, eq, eqs, keep)  1-D: keep = lt || (eq && the element's
 *     rank among its row's equal keys, from eqs (the exclusive scan of eq), is below need).
 *   sel_pack(keys, koff, rows, len, k, keep, kps, ckeys, cvals)  1-D: kept pair p of row r
 *     to ckeys/cvals[r * k + (kps[p] - kps[r * len])], payload p (the flat position).
 *   pairs_local(ckeys, cvals, rows, k, lk, lv, np)  one work-group per row: the row's k
 *     pairs sorted in local memory by key, then payload (SORT_PAIRS_LOCAL).
 */
#include "sort_pairs.clh"

#if defined(KILN_DT_I64)
SORT_PAIRS_LOCAL(pairs_sort_local, ulong)
#define K_ALL ULONG_MAX
#else
SORT_PAIRS_LOCAL(pairs_sort_local, uint)
#define K_ALL UINT_MAX
#endif

kernel void
sel_hist(global const K *keys, ulong koff, ulong rows, ulong len, ulong nchunk,
         global const K *prefix, K pmask, uint shift, global uint *hist, local uint *lh)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const ulong chunk = (len + nchunk - 1) / nchunk;
  for (ulong gi = get_group_id(0); gi < rows * nchunk; gi += get_num_groups(0)) {
    const ulong r = gi / nchunk, c = gi - r * nchunk;
    for (uint b = lid; b < RADIX_SEL; b += lsz)
      lh[b] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    const K pre = prefix[r];
    ulong lo = c * chunk, hi = lo + chunk;
    if (hi > len)
      hi = len;
    global const K *row = keys + koff + r * len;
    for (ulong j = lo + lid; j < hi; j += lsz) {
      K kv = row[j];
      if ((kv & pmask) == pre) {
        /* One work-item per group (CPUs): a plain increment, no atomic. */
        uint d = (uint)(kv >> shift) & (RADIX_SEL - 1u);
        if (lsz == 1)
          lh[d]++;
        else
          atomic_inc(&lh[d]);
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint b = lid; b < RADIX_SEL; b += lsz)
      if (lh[b])
        atomic_add(&hist[r * RADIX_SEL + b], lh[b]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

kernel void
sel_pick(global uint *hist, ulong rows, global uint *need, global K *prefix, uint shift)
{
  for (ulong r = get_global_id(0); r < rows; r += get_global_size(0)) {
    global uint *h = hist + r * RADIX_SEL;
    uint want = need[r], cum = 0, b = 0;
    for (; b < RADIX_SEL - 1u && cum + h[b] < want; b++)
      cum += h[b];
    need[r] = want - cum;
    prefix[r] |= (K)b << shift;
    for (uint i = 0; i < RADIX_SEL; i++)
      h[i] = 0;
  }
}

kernel void
sel_flags(global const K *keys, ulong koff, ulong rows, ulong len, global const K *prefix,
          global uint *lt, global uint *eq)
{
  const ulong n = rows * len;
  for (ulong p = get_global_id(0); p < n; p += get_global_size(0)) {
    K kv = keys[koff + p], t = prefix[p / len];
    lt[p] = kv < t;
    eq[p] = kv == t;
  }
}

kernel void
sel_keep(ulong rows, ulong len, global const uint *need, global const uint *lt,
         global const uint *eq, global const uint *eqs, global uint *keep)
{
  const ulong n = rows * len;
  for (ulong p = get_global_id(0); p < n; p += get_global_size(0)) {
    ulong r = p / len;
    keep[p] = lt[p] || (eq[p] && eqs[p] - eqs[r * len] < need[r]);
  }
}

kernel void
sel_pack(global const K *keys, ulong koff, ulong rows, ulong len, ulong k,
         global const uint *keep, global const uint *kps, global K *ckeys, global uint *cvals)
{
  const ulong n = rows * len;
  for (ulong p = get_global_id(0); p < n; p += get_global_size(0)) {
    if (!keep[p])
      continue;
    ulong r = p / len, at = r * k + (kps[p] - kps[r * len]);
    ckeys[at] = keys[koff + p];
    cvals[at] = (uint)p;
  }
}

kernel void
pairs_local(global K *ckeys, global uint *cvals, ulong rows, ulong k, local K *lk,
            local uint *lv, ulong np)
{
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  for (ulong r = get_group_id(0); r < rows; r += get_num_groups(0)) {
    for (ulong j = lid; j < np; j += lsz) {
      lk[j] = j < k ? ckeys[r * k + j] : (K)K_ALL;
      lv[j] = j < k ? cvals[r * k + j] : UINT_MAX;
    }
    pairs_sort_local(lk, lv, (uint)np);
    for (ulong j = lid; j < k; j += lsz) {
      ckeys[r * k + j] = lk[j];
      cvals[r * k + j] = lv[j];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

/*
 * rows_serial(keys, koff, vals, voff, tkeys, tvals, rows, len, kbits)  one work-item per row
 * (CPUs with many long rows): a serial LSD radix sort of the row's pairs, 8 bits a pass,
 * ping-ponging with tkeys/tvals (rows x len); the row stays in the core's cache for all its
 * passes; rows of at most 32 take an insertion sort instead. The result is in keys/vals.
 * Stable: each pass walks the row in order.
 */
kernel void
rows_serial(global K *keys, ulong koff, global uint *vals, ulong voff, global K *tkeys,
            global uint *tvals, ulong rows, ulong len, uint kbits)
{
  uint cnt[256];
  for (ulong r = get_global_id(0); r < rows; r += get_global_size(0)) {
    global K *ka = keys + koff + r * len, *kb = tkeys + r * len;
    global uint *va = vals + voff + r * len, *vb = tvals + r * len;
    if (len <= 32) {
      /* Short rows: an insertion sort in place; moving only past strictly greater keys
       * keeps it stable. */
      for (ulong j = 1; j < len; j++) {
        K kv = ka[j];
        uint vv = va[j];
        ulong i = j;
        for (; i > 0 && ka[i - 1] > kv; i--) {
          ka[i] = ka[i - 1];
          va[i] = va[i - 1];
        }
        ka[i] = kv;
        va[i] = vv;
      }
      continue;
    }
    uint pass = 0;
    for (uint shift = 0; shift < kbits; shift += 8, pass++) {
      for (uint b = 0; b < 256u; b++)
        cnt[b] = 0;
      for (ulong j = 0; j < len; j++)
        cnt[(uint)(ka[j] >> shift) & 255u]++;
      uint run = 0;
      for (uint b = 0; b < 256u; b++) {
        uint c = cnt[b];
        cnt[b] = run;
        run += c;
      }
      for (ulong j = 0; j < len; j++) {
        uint p = cnt[(uint)(ka[j] >> shift) & 255u]++;
        kb[p] = ka[j];
        vb[p] = va[j];
      }
      global K *tk = ka;
      ka = kb;
      kb = tk;
      global uint *tv = va;
      va = vb;
      vb = tv;
    }
    if (pass & 1u) {
      /* An odd number of passes (bool, u8) left the row in the temporaries. */
      for (ulong j = 0; j < len; j++) {
        kb[j] = ka[j];
        vb[j] = va[j];
      }
    }
  }
}
