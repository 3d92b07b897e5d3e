/*
 * sort family, key-only kernels (source "sort_radix"; lib/ops/sort.c, docs/sort.md): the
 * passes of the stable LSD radix sort of (key, payload) pairs and an exclusive scan of uints.
 * Built for dtype i32 (K = uint keys: every dtype of 4 bytes or less) and i64 (K = ulong:
 * i64, f64); the keys are already order-preserving unsigned numbers (sort.cl's sort_keys).
 * Payloads are uint (flat positions: a sort holds fewer than 2^32 elements).
 *
 * A pass sorts by the digit of rbits bits (at most 11) at `shift` of the key (mode 0) or of the payload's row,
 * payload / len (mode 1: the row passes of many-row sorts, after the key passes); mode bit 2
 * (value 2) means no payloads at all (vals unused: values-only sorts of integers). Work-group g
 * owns the tile [g * tile, (g + 1) * tile) of the n pairs; work-item t of its L owns the
 * consecutive part [t * ipt, (t + 1) * ipt) of the tile (ipt = tile / L), so a tile's pairs
 * in (t, i) order are in input order and a serial walk per work-item keeps the scatter stable.
 * cnt (local, 2^rbits * L uints) is bucket-major: cnt[b * L + t].
 *   radix_count(keys, koff, vals, voff, n, tile, shift, rbits, mode, len, hist, cnt)
 *     hist[b * ngroups + g] = the tile's pairs of digit b.
 *   radix_scatter(keys, koff, vals, voff, n, tile, shift, rbits, mode, len, hist, okeys,
 *                 okoff, ovals, ovoff, cnt, special)
 *     with hist exclusively scanned (bucket-major, so hist[b * ngroups + g] is where the
 *     tile's first pair of digit b goes), moves every pair to its place; special: NULL, or a
 *     flag whose 0 says the payloads are not needed (sort.cl's raw_values), left unmoved.
 * Scan (in place, exclusive, of m uints; chunk per work-group):
 *   scan_reduce(a, m, chunk, sums, tmp)  sums[g] = the sum of chunk g
 *   scan_top(sums, nb, tmp)              one work-group: exclusive scan of the nb sums
 *   scan_down(a, m, chunk, sums, tmp)    chunk g scanned from sums[g]
 * radix_count1, radix_scatter1: the same for one work-item per group (CPUs), the counters
 * in private memory.
 * Tunables (host): L (the local size, 1 on CPUs: one serial walk per work-group), tile,
 * rbits (8 on every device; a test hook takes 1 to 11).
 */
#include "common.cl"
#include "sort_chunks.clh"

#if defined(KILN_DT_I64)
typedef ulong K;
#else
typedef uint K;
#endif

inline uint
digit_of(global const K *keys, global const uint *vals, ulong i, uint shift, uint mask, uint mode,
         ulong len)
{
  if (mode & 1u)
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
              global K *okeys, ulong okoff, global uint *ovals, ulong ovoff, local uint *cnt,
              global const uint *special)
{
  const uint pay = !(mode & 2u) && (!special || special[0]);
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
    if (pay)
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
  uint total = group_total(tmp, s);
  if (t == 0)
    sums[g] = total;
}

kernel void
scan_top(global uint *sums, ulong nb, local uint *tmp)
{
  /* One work-group: work-item t scans the consecutive part t of the sums (a single GPU
   * work-item walking thousands of dependent loads takes milliseconds). */
  ulong lo, hi;
  chunk_part(0, nb, nb, &lo, &hi);
  uint s = 0;
  for (ulong i = lo; i < hi; i++)
    s += sums[i];
  uint run = group_scan_excl(tmp, s, 0);
  for (ulong i = lo; i < hi; i++) {
    uint c = sums[i];
    sums[i] = run;
    run += c;
  }
}

kernel void
scan_down(global uint *a, ulong m, ulong chunk, global const uint *sums, local uint *tmp)
{
  const ulong g = get_group_id(0);
  ulong lo, hi;
  chunk_part(g, chunk, m, &lo, &hi);
  uint s = 0;
  for (ulong i = lo; i < hi; i++)
    s += a[i];
  uint run = group_scan_excl(tmp, s, sums + g);
  for (ulong i = lo; i < hi; i++) {
    uint c = a[i];
    a[i] = run;
    run += c;
  }
}

/* ---------------------------------------------------------------- selection (topk) */

/*
 * pairs_local(ckeys, cvals, rows, k, lk, lv, np)  one work-group per row: the row's k pairs
 * (the selection's candidates, sort.cl's tk_collect) sorted in local memory by key, then
 * payload (SORT_PAIRS_LOCAL, np a power of two >= k).
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
 * rows_serial(keys, koff, vals, voff, tkeys, tvals, rows, len, kbits, special)  one work-item
 * per row (CPUs with many long rows): a serial LSD radix sort of the row's pairs, 8 bits a
 * pass, ping-ponging with tkeys/tvals (rows x len); the row stays in the core's cache for all
 * its passes; rows of at most 32 take an insertion sort instead. The result is in keys/vals.
 * Stable: each pass walks the row in order. With special non-NULL and special[0] == 0 (f32
 * values without -0.0 and NaNs, whose keys give the values back) the payloads stay unmoved.
 */
kernel void
rows_serial(global K *keys, ulong koff, global uint *vals, ulong voff, global K *tkeys,
            global uint *tvals, ulong rows, ulong len, uint kbits, global const uint *special)
{
  uint cnt[256];
  const int pay = !special || special[0];
  for (ulong r = get_global_id(0); r < rows; r += get_global_size(0)) {
    global K *ka = keys + koff + r * len, *kb = tkeys + r * len;
    global uint *va = vals + voff + r * len, *vb = tvals + r * len;
    if (len <= 32) {
      /* Short rows: an insertion sort in place; moving only past strictly greater keys
       * keeps it stable. */
      for (ulong j = 1; j < len; j++) {
        K kv = ka[j];
        uint vv = pay ? va[j] : 0u;
        ulong i = j;
        for (; i > 0 && ka[i - 1] > kv; i--) {
          ka[i] = ka[i - 1];
          if (pay)
            va[i] = va[i - 1];
        }
        ka[i] = kv;
        if (pay)
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
      if (pay)
        for (ulong j = 0; j < len; j++) {
          uint p = cnt[(uint)(ka[j] >> shift) & 255u]++;
          kb[p] = ka[j];
          vb[p] = va[j];
        }
      else
        for (ulong j = 0; j < len; j++)
          kb[cnt[(uint)(ka[j] >> shift) & 255u]++] = ka[j];
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
        if (pay)
          vb[j] = va[j];
      }
    }
  }
}

/*
 * radix_count1, radix_scatter1: radix_count and radix_scatter for groups of one work-item
 * (CPUs), with the counters in private memory and no local-memory indexing: the same
 * arguments, minus cnt.
 */
kernel void
radix_count1(global const K *keys, ulong koff, global const uint *vals, ulong voff, ulong n,
             ulong tile, uint shift, uint rbits, uint mode, ulong len, global uint *hist)
{
  const ulong g = get_group_id(0), ng = get_num_groups(0);
  const uint nb = 1u << rbits, mask = nb - 1u;
  uint cnt[2048];
  for (uint b = 0; b < nb; b++)
    cnt[b] = 0;
  keys += koff;
  vals += voff;
  ulong lo = g * tile, hi = lo + tile;
  if (hi > n)
    hi = n;
  if (mode & 1u) {
    for (ulong i = lo; i < hi; i++)
      cnt[(uint)(((ulong)vals[i] / len) >> shift) & mask]++;
  } else {
    for (ulong i = lo; i < hi; i++)
      cnt[(uint)(keys[i] >> shift) & mask]++;
  }
  for (uint b = 0; b < nb; b++)
    hist[b * ng + g] = cnt[b];
}

kernel void
radix_scatter1(global const K *keys, ulong koff, global const uint *vals, ulong voff, ulong n,
               ulong tile, uint shift, uint rbits, uint mode, ulong len, global const uint *hist,
               global K *okeys, ulong okoff, global uint *ovals, ulong ovoff,
               global const uint *special)
{
  const uint pay = !(mode & 2u) && (!special || special[0]);
  const ulong g = get_group_id(0), ng = get_num_groups(0);
  const uint nb = 1u << rbits, mask = nb - 1u;
  uint cnt[2048];
  for (uint b = 0; b < nb; b++)
    cnt[b] = hist[b * ng + g];
  keys += koff;
  vals += voff;
  okeys += okoff;
  ovals += ovoff;
  ulong lo = g * tile, hi = lo + tile;
  if (hi > n)
    hi = n;
  for (ulong i = lo; i < hi; i++) {
    K kv = keys[i];
    uint v = pay ? vals[i] : 0u;
    uint d = (mode & 1u) ? (uint)(((ulong)v / len) >> shift) & mask : (uint)(kv >> shift) & mask;
    uint p = cnt[d]++;
    okeys[p] = kv;
    if (pay)
      ovals[p] = v;
  }
}
