/*
 * nn training family: embedding backward and embedding_bag (lib/ops/nn_embed.c,
 * docs/nn.md "Embeddings").
 *
 * Build options: common.cl's (-DT=..., -DKILN_DT_...=1); f32 and f64. Index tensors are i32 or
 * i64 (is64), passed as `global const int *` and read through IDX.
 *
 * Deterministic gradients: the (row, token) pairs are sorted (sort_pairs.clh's bitonic_step,
 * as the index family's scatter-add), then each output element sums its run of tokens in
 * token order; no atomics, so the sums are bitwise reproducible.
 *
 * Kernels (offsets in elements):
 *   emb_check(idx, ioff, is64, n, V, flag)   flag a token outside [-V, V)
 *   bag_check(offs, ooff, is64, B, ntok, flag)  flag offsets[0] != 0, decreasing, > ntok
 *   emb_keys(idx, ioff, is64, n, npad, V, keys, vals)
 *     keys[t] = idx[t] (negative counts from V), vals[t] = t; padding (ULONG_MAX, ULONG_MAX)
 *   emb_accum(keys, vals, n, src, soff, rowmap, scale, out, ooff, V, E, pad)   flat over V E
 *     out[v, e] = sum over sorted tokens t with key v of scale[t] src[rowmap[t], e] (rowmap
 *     NULL: t; scale NULL: 1); 0 for row pad (pad < V) and rows no token hits
 *   bag_tokens(offs, ooff, is64, B, T, psw, pswoff, mean, rowmap, scale)   flat over T
 *     rowmap[t] = the bag of token t, scale[t] = psw[t] (or 1) / (mean ? bag length : 1)
 *   bag_fwd(w, woff, idx, ioff, offs, ooff, is64, B, T, E, psw, pswoff, mean, out, ooff2)
 *     flat over B E: out[b, e] = sum over the bag's tokens of psw[t] w[idx[t], e]
 *     (mean: divided by the bag length; an empty bag gives 0)
 */
#include "common.cl"
#include "sort_pairs.clh"

#define IDX(p, off, i) (is64 ? (long)((global const long *)(p))[(off) + (i)] : (long)(p)[(off) + (i)])

inline void
flag_bad(global uint *flag, ulong pos)
{
  atomic_or(&flag[0], 1u);
  atomic_min(&flag[1], pos < 0xffffffffUL ? (uint)pos : 0xffffffffu);
}

kernel void
emb_check(global const int *idx, ulong ioff, uint is64, ulong n, long V, global uint *flag)
{
  for (ulong t = get_global_id(0); t < n; t += get_global_size(0)) {
    long v = IDX(idx, ioff, t);
    if (v < -V || v >= V)
      flag_bad(flag, t);
  }
}

kernel void
bag_check(global const int *offs, ulong ooff, uint is64, ulong B, ulong ntok, global uint *flag)
{
  for (ulong b = get_global_id(0); b < B; b += get_global_size(0)) {
    long o = IDX(offs, ooff, b);
    long prev = b ? IDX(offs, ooff, b - 1) : 0;
    if ((b == 0 && o != 0) || o < prev || o > (long)ntok)
      flag_bad(flag, b);
  }
}

kernel void
emb_keys(global const int *idx, ulong ioff, uint is64, ulong n, ulong npad, long V,
         global ulong *keys, ulong koff, global ulong *vals, ulong voff)
{
  for (ulong t = get_global_id(0); t < npad; t += get_global_size(0)) {
    ulong key = ULONG_MAX, val = ULONG_MAX;
    if (t < n) {
      long v = IDX(idx, ioff, t);
      key = (ulong)(v < 0 ? v + V : v);
      val = t;
    }
    keys[koff + t] = key;
    vals[voff + t] = val;
  }
}

/* First position in sorted keys[0..n) whose key is >= v. */
inline ulong
lower_bound(global const ulong *keys, ulong n, ulong v)
{
  ulong lo = 0, hi = n;
  while (lo < hi) {
    ulong mid = lo + (hi - lo) / 2;
    if (keys[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

kernel void
emb_accum(global const ulong *keys, ulong koff, global const ulong *vals, ulong voff, ulong n,
          global const ST *src, ulong soff, global const ulong *rowmap, global const T *scale,
          global ST *out, ulong ooff, ulong V, ulong E, ulong pad)
{
  keys += koff;
  vals += voff;
  for (ulong i = get_global_id(0); i < V * E; i += get_global_size(0)) {
    ulong v = i / E, e = i % E;
    T acc = (T)0;
    if (v != pad) {
      ulong lo = lower_bound(keys, n, v), hi = lower_bound(keys, n, v + 1);
      for (ulong k = lo; k < hi; k++) {
        ulong t = vals[k];
        ulong r = rowmap ? rowmap[t] : t;
        T x = KILN_LOAD(src, soff + r * E + e);
        acc += scale ? scale[t] * x : x;
      }
    }
    KILN_STORE(out, ooff + i, acc);
  }
}

/* The end of bag b: the next offset, or T for the last bag. */
#define BAG_END(b) ((b) + 1 < B ? (ulong)IDX(offs, ooff, (b) + 1) : ntok)

kernel void
bag_tokens(global const int *offs, ulong ooff, uint is64, ulong B, ulong ntok,
           global const ST *psw, ulong pswoff, uint mean, global ulong *rowmap,
           global T *scale)
{
  for (ulong t = get_global_id(0); t < ntok; t += get_global_size(0)) {
    /* The last bag whose offset is <= t (offsets are validated: non-decreasing from 0). */
    ulong lo = 0, hi = B;
    while (hi - lo > 1) {
      ulong mid = lo + (hi - lo) / 2;
      if ((ulong)IDX(offs, ooff, mid) <= t)
        lo = mid;
      else
        hi = mid;
    }
    ulong len = BAG_END(lo) - (ulong)IDX(offs, ooff, lo);
    rowmap[t] = lo;
    T w = psw ? KILN_LOAD(psw, pswoff + t) : (T)1;
    scale[t] = mean ? w / (T)len : w;
  }
}

kernel void
bag_fwd(global const ST *w, ulong woff, global const int *idx, ulong ioff, global const int *offs,
        ulong ooff, uint is64, ulong B, ulong ntok, ulong E, long V, global const ST *psw,
        ulong pswoff, uint mean, global ST *out, ulong ooff2)
{
  for (ulong i = get_global_id(0); i < B * E; i += get_global_size(0)) {
    ulong b = i / E, e = i % E;
    ulong s = (ulong)IDX(offs, ooff, b), end = BAG_END(b);
    T acc = (T)0;
    for (ulong t = s; t < end; t++) {
      long v = IDX(idx, ioff, t);
      if (v < 0)
        v += V;
      T x = KILN_LOAD(w, woff + (ulong)v * E + e);
      acc += psw ? KILN_LOAD(psw, pswoff + t) * x : x;
    }
    if (mean && end > s)
      acc /= (T)(end - s);
    KILN_STORE(out, ooff2 + i, acc);
  }
}
