/*
 * sort family, onesweep radix sort (source "sort_onesweep"; lib/ops/sort.c, docs/sort.md):
 * the stable LSD radix sort of (key, payload) pairs with one histogram pass up front and
 * then one pass per 8-bit digit that ranks its tile in local memory, finds the tile's place
 * through decoupled look-back and scatters (Adinets and Merrill, "Onesweep", 2022).
 * Built for dtypes i32 and i64, whose programs sort the keys of every dtype of their key width
 * (K = uint, ulong; the keys already order-preserving unsigned numbers, sort.cl's
 * sort_keys), and f32 and f64 (whose programs also read the values themselves). Payloads are
 * uint: flat positions or f32 bits.
 *
 * src: where the first pass and the histogram find the keys: 0 in keys (and the payloads in
 * vals); else key_of(x[i]) ^ (desc flip) of the program's dtype with, as payload, 1 the
 * position i, 2 the f32 value's bits (os_hist then sets special[0] when x holds -0.0 or a
 * NaN), 3 none. Later passes read keys and vals.
 *
 * Build options (lib/ops/sort.c, os_build_options): OS_IPT, keys per work-item (1 to 16);
 * the work-group is OS_L = 256 work-items, a tile OS_T = OS_L * OS_IPT pairs.
 *
 * mode: bit 0 sorts by the payload's row (payload / len) instead of the key (the row passes
 * of many-row sorts), bit 1 means no payloads (vals and ovals unused).
 *   os_hist(keys, koff, vals, voff, n, kpasses, rpasses, len, ghist, x, xoff, src, desc,
 *           special)  grid-stride: ghist
 *     [p * 256 + d] += the pairs whose digit of pass p is d (key passes first, 8 bits each,
 *     then the row passes); ghist zeroed before.
 *   os_hist_scan(ghist, np)  one work-item per pass: ghist rows exclusively scanned, and
 *     ghist[OS_CONST + p] set where every pair has the same digit in pass p (os_pass then
 *     only copies: a digit all keys share, as the top digits of small integers).
 *   os_pass(keys, koff, vals, voff, n, shift, mode, len, ghist, pass, look, okeys, okoff,
 *           ovals, ovoff, special, x, xoff, src, desc)  one work-group per tile,
 *     ceil(n / OS_T) of them, 256 work-items each:
 *     look[0] hands out the tiles in the order the groups start (so a group only ever waits
 *     for groups that started before it: no deadlock whatever the scheduler runs), look[32 +
 *     tile * 256 + d] is the tile's status word for digit d (0 none yet, FLAG_A | the tile's
 *     count, FLAG_P | the inclusive prefix over tiles 0..tile); look zeroed before each pass.
 *     ghist: the scanned histograms, row `pass` this pass's. Counts must stay below 2^30.
 *     special: NULL, or a flag whose 0 says the payloads are not needed (f32 values without
 *     -0.0 and NaNs: sort.cl's raw_values rebuilds them from the keys), so they stay unmoved.
 *
 * Ranking: the tile's pairs, in input order across work-items (work-item t holds pairs
 * t * OS_IPT .. t * OS_IPT + OS_IPT - 1), are sorted stably by the low and then the high half
 * of the digit, each a counting sort with per-(digit, work-item) counters in local memory
 * and a scan; the sorted tile is then written out in runs of equal digits (coalesced).
 */
#include "common.cl"
#include "sort_key.clh"

#define K_ONES K_MAX

#ifndef OS_IPT
#define OS_IPT 8
#endif
#define OS_L 256
#define OS_T (OS_L * OS_IPT)
#if OS_IPT < 1 || OS_IPT > 16
#error "OS_IPT must be 1 to 16"
#endif
/* One spare word every 32 (keys) and every 16 (counters) spreads the strided accesses over
 * the banks. */
#define OS_PAD(i) ((i) + ((i) >> 5))
#define OS_CPAD(i) ((i) + ((i) >> 4))
#define FLAG_A 0x40000000u
#define FLAG_P 0x80000000u
#define VAL_MASK 0x3fffffffu
#define NO_PAY 0xffffffffu

/* The 8-bit digit at shift of a pair (32-bit division: n < 2^30 here). The tile's padding (payload NO_PAY, key all ones) has
 * digit 255 in both modes, so it sorts after every real pair. */
inline uint
dig8(K kv, uint v, uint shift, uint mode, ulong len)
{
  if (mode & 1u)
    return v == NO_PAY ? 255u : (v / (uint)len >> shift) & 255u;
  return (uint)(kv >> shift) & 255u;
}

/* Key and payload of element i of x (src 1 to 3). */
inline K
src_key(global const ST *x, ulong i, K flip)
{
  return key_of(KILN_LOAD(x, i)) ^ flip;
}

inline uint
src_pay(global const ST *x, ulong xoff, ulong i, uint src)
{
#if defined(KILN_DT_F32)
  if (src == 2u)
    return as_uint(x[xoff + i]);
#endif
  return src == 1u ? (uint)i : 0u;
}

kernel void
os_hist(global const K *keys, ulong koff, global const uint *vals, ulong voff, ulong n,
        uint kpasses, uint rpasses, ulong len, global uint *ghist, global const ST *x, ulong xoff,
        uint src, uint desc, global uint *special)
{
  /* Copies of the histograms, work-item t counting into copy t % nc: keys sharing a digit
   * (the top digits of floats of one range, small integers) would otherwise serialise on
   * one counter. */
  local uint lh[8192];
  const uint lid = get_local_id(0), lsz = get_local_size(0), np = kpasses + rpasses;
  const uint nc = 8192u / (np * 256u), c0 = (lid % nc) * np * 256u;
  const K flip = desc ? (K)K_FLIP : (K)0;
  uint spec = 0;
  for (uint i = lid; i < nc * np * 256u; i += lsz)
    lh[i] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    K kv = src ? src_key(x, xoff + i, flip) : keys[koff + i];
    for (uint p = 0; p < kpasses; p++)
      atomic_inc(&lh[c0 + p * 256u + ((uint)(kv >> (8u * p)) & 255u)]);
    if (rpasses) {
      uint r = (src ? (uint)i : vals[voff + i]) / (uint)len;
      for (uint p = 0; p < rpasses; p++)
        atomic_inc(&lh[c0 + (kpasses + p) * 256u + ((r >> (8u * p)) & 255u)]);
    }
#if defined(KILN_DT_F32)
    if (src == 2u) {
      /* -0.0 and NaNs: the only values key_of does not map one to one. */
      uint u = as_uint(x[xoff + i]);
      spec |= u == 0x80000000u || (u & 0x7fffffffu) > 0x7f800000u;
    }
#endif
  }
  if (spec)
    atomic_or(special, 1u);
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint i = lid; i < np * 256u; i += lsz) {
    uint c = 0;
    for (uint q = 0; q < nc; q++)
      c += lh[q * np * 256u + i];
    if (c)
      atomic_add(&ghist[i], c);
  }
}

/* ghist[OS_CONST + p]: pass p's digit is the same for every pair (the pass only copies). */
#define OS_CONST (12u * 256u)

kernel void
os_hist_scan(global uint *ghist, uint np)
{
  for (uint p = get_global_id(0); p < np; p += get_global_size(0)) {
    uint run = 0, most = 0;
    for (uint d = 0; d < 256u; d++) {
      uint c = ghist[p * 256u + d];
      ghist[p * 256u + d] = run;
      run += c;
      most = c > most ? c : most;
    }
    ghist[OS_CONST + p] = most == run;
  }
}

/*
 * pos[i] = the place in the tile of this work-item's pair i after a stable counting sort by
 * the 4-bit digit (dg[i] >> sub) & 15; cnt holds 16 x OS_L counters (digit-major), psum
 * OS_L and ptot 16 words. Every work-item calls it; it ends after a barrier.
 */
inline void
rank4(const uint *dg, uint sub, uint *pos, local uint *cnt, local uint *psum, local uint *ptot)
{
  const uint t = get_local_id(0);
  for (uint d = 0; d < 16u; d++)
    cnt[OS_CPAD(d * OS_L + t)] = 0;
#pragma unroll
  for (uint i = 0; i < OS_IPT; i++) {
    uint e = OS_CPAD(((dg[i] >> sub) & 15u) * OS_L + t);
    uint c = cnt[e];
    pos[i] = c;
    cnt[e] = c + 1u;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  /* Work-item t rakes counters 16t .. 16t + 15 (digit t / 16, work-items 16(t % 16) ..). */
  uint sum = 0;
  for (uint j = 0; j < 16u; j++)
    sum += cnt[OS_CPAD(16u * t + j)];
  psum[t] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (t < 16u) {
    uint run = 0;
    for (uint j = 0; j < 16u; j++) {
      uint c = psum[16u * t + j];
      psum[16u * t + j] = run;
      run += c;
    }
    ptot[t] = run;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (t == 0) {
    uint run = 0;
    for (uint j = 0; j < 16u; j++) {
      uint c = ptot[j];
      ptot[j] = run;
      run += c;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  uint run = psum[t] + ptot[t >> 4];
  for (uint j = 0; j < 16u; j++) {
    uint e = OS_CPAD(16u * t + j);
    uint c = cnt[e];
    cnt[e] = run;
    run += c;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
  for (uint i = 0; i < OS_IPT; i++)
    pos[i] += cnt[OS_CPAD(((dg[i] >> sub) & 15u) * OS_L + t)];
  barrier(CLK_LOCAL_MEM_FENCE);
}

kernel __attribute__((reqd_work_group_size(OS_L, 1, 1))) void
os_pass(global const K *keys, ulong koff, global const uint *vals, ulong voff, ulong n,
        uint shift, uint mode, ulong len, global const uint *ghist, uint pass, global uint *look,
        global K *okeys, ulong okoff, global uint *ovals, ulong ovoff, global const uint *special,
        global const ST *x, ulong xoff, uint src, uint desc)
{
  local K lk[OS_PAD(OS_T)];
  local uint cnt[OS_CPAD(16 * OS_L)];
  local uint dstart[256], dend[256], dbase[256], psum[OS_L], ptot[16];
  local uint s_tile;
  local uint *lv = (local uint *)lk;
  const uint t = get_local_id(0);
  const uint pay = !(mode & 2u) && (!special || special[0]);
  keys += koff;
  vals += voff;
  okeys += okoff;
  ovals += ovoff;
  if (ghist[OS_CONST + pass]) {
    /* Every pair has the same digit: the stable order is the input order. */
    const ulong m = n * (1u + pay);
    for (ulong i = get_global_id(0); i < m; i += get_global_size(0)) {
      if (i < n)
        okeys[i] = src ? src_key(x, xoff + i, desc ? (K)K_FLIP : (K)0) : keys[i];
      else
        ovals[i - n] = src ? src_pay(x, xoff, i - n, src) : vals[i - n];
    }
    return;
  }
  if (t == 0)
    s_tile = atomic_inc(look);
  dstart[t] = 0;
  dend[t] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint b = s_tile;
  global uint *status = look + 32;
  const ulong base = (ulong)b * OS_T;
  const uint valid = n - base < (ulong)OS_T ? (uint)(n - base) : (uint)OS_T;
  K k[OS_IPT];
  uint v[OS_IPT], dg[OS_IPT], pos[OS_IPT], sd[OS_IPT];

  /* Coalesced loads, then each work-item takes its consecutive pairs. */
  const K flip = desc ? (K)K_FLIP : (K)0;
#pragma unroll
  for (uint i = 0; i < OS_IPT; i++) {
    uint j = i * OS_L + t;
    lk[OS_PAD(j)] = j >= valid ? (K)K_ONES : src ? src_key(x, xoff + base + j, flip) : keys[base + j];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
  for (uint i = 0; i < OS_IPT; i++)
    k[i] = lk[OS_PAD(t * OS_IPT + i)];
  barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
  for (uint i = 0; i < OS_IPT; i++) {
    uint j = i * OS_L + t;
    if (pay)
      lv[OS_PAD(j)] = j >= valid ? NO_PAY : src ? src_pay(x, xoff, base + j, src) : vals[base + j];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
  for (uint i = 0; i < OS_IPT; i++) {
    v[i] = pay ? lv[OS_PAD(t * OS_IPT + i)] : (t * OS_IPT + i < valid ? 0u : NO_PAY);
    dg[i] = dig8(k[i], v[i], shift, mode, len);
  }

  /* The low half of the digit. */
  rank4(dg, 0, pos, cnt, psum, ptot);
#pragma unroll
  for (uint i = 0; i < OS_IPT; i++)
    lk[OS_PAD(pos[i])] = k[i];
  barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
  for (uint i = 0; i < OS_IPT; i++)
    k[i] = lk[OS_PAD(t * OS_IPT + i)];
  barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
  for (uint i = 0; i < OS_IPT; i++)
    lv[OS_PAD(pos[i])] = v[i];
  barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
  for (uint i = 0; i < OS_IPT; i++) {
    v[i] = lv[OS_PAD(t * OS_IPT + i)];
    dg[i] = dig8(k[i], v[i], shift, mode, len);
  }

  /* The high half: the tile is then sorted by the digit; cnt keeps each place's digit. */
  rank4(dg, 4, pos, cnt, psum, ptot);
#pragma unroll
  for (uint i = 0; i < OS_IPT; i++) {
    lk[OS_PAD(pos[i])] = k[i];
    cnt[pos[i]] = dg[i];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
  for (uint i = 0; i < OS_IPT; i++) {
    uint j = i * OS_L + t, d = cnt[j];
    sd[i] = d;
    if (j == 0 || cnt[j - 1] != d)
      dstart[d] = j;
    if (j == OS_T - 1 || cnt[j + 1] != d)
      dend[d] = j + 1;
  }
  barrier(CLK_LOCAL_MEM_FENCE);

  /* Decoupled look-back, one work-item per digit: publish the tile's count, add the counts
   * of earlier tiles back to the first one that has published its inclusive prefix. */
  {
    const uint d = t;
    uint c = dend[d] - dstart[d] - (d == 255u ? (uint)OS_T - valid : 0u);
    uint excl = 0;
    if (b == 0) {
      atomic_xchg(&status[d], c | FLAG_P);
    } else {
      atomic_xchg(&status[(ulong)b * 256u + d], c | FLAG_A);
      volatile global uint *vs = (volatile global uint *)status;
      ulong j = b - 1;
      for (;;) {
        uint s = vs[j * 256u + d];
        if (s & FLAG_P) {
          excl += s & VAL_MASK;
          break;
        }
        if (s & FLAG_A) {
          excl += s & VAL_MASK;
          j--;
        }
      }
      atomic_xchg(&status[(ulong)b * 256u + d], (excl + c) | FLAG_P);
    }
    dbase[d] = ghist[pass * 256u + d] + excl - dstart[d];
  }
  barrier(CLK_LOCAL_MEM_FENCE);

#pragma unroll
  for (uint i = 0; i < OS_IPT; i++) {
    uint j = i * OS_L + t;
    if (j < valid)
      okeys[dbase[sd[i]] + j] = lk[OS_PAD(j)];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
  for (uint i = 0; i < OS_IPT; i++)
    if (pay)
      lv[OS_PAD(pos[i])] = v[i];
  barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
  for (uint i = 0; i < OS_IPT; i++) {
    uint j = i * OS_L + t;
    if (pay && j < valid)
      ovals[dbase[sd[i]] + j] = lv[OS_PAD(j)];
  }
}
