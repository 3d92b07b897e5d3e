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
