/*
 * Indexing kernels: gathers, scatters, masks, stream compaction and index
 * arithmetic.
 *
 * Build options: see common.cl (-DT=..., -DKILN_DT_...=1). T is the value
 * dtype; index tensors may be int or long, chosen at run time by `is64`.
 * Kernels that only move values type them MT (common.cl), and the host runs
 * them, and the dtype-free ones, from one program per element size
 * (kiln__ops_move_dtype: f16 data through the bf16 program, c64 through
 * i64); scatter_add, flags_nonzero and one_hot compute on T, from the
 * dtype's own program (f16/bf16 through f32, complex as complex).
 * Kernels (offsets in elements; 1-D grid-stride loops unless noted):
 *   gather_axis(x, xoff, idx, ioff, is64, out, ooff, n, ndim, axis, len, plan, flag)
 *     out[c] = x[c with axis coordinate idx[c]] over the index shape (torch.gather)
 *   gather_axis_rows(same arguments)   the CPU form: one item per row of the last axis
 *   index_select(x, xoff, idx, ioff, is64, out, ooff, outer, nidx, len, inner, flag)
 *     out[o, j, k] = x[o, idx[j], k] (numpy.take along an axis; embedding);
 *     3-D: grid dimension 0 over k, 1 over j, 2 over o
 *   index_select_rows(same arguments)   the CPU form: 1-D, one item per (o, j) row
 *   index_select_lines[_nt](same arguments, x, out, offsets and inner in 64-byte lines)
 *     the CPU form for rows of whole 64-byte lines (_nt: non-temporal stores)
 *   scatter_keys(idx, ioff, is64, m, npad, ndim, axis, len, plan, keys, vals, flag)
 *     for each index element e < m: keys[e] = target element, vals[e] = e;
 *     (ULONG_MAX, ULONG_MAX) for e in [m, npad) and for bad indices
 *   scatter_assign(keys, koff, vals, voff, m, src, soff, ndim, plan, out, ooff)
 *   scatter_add(keys, koff, vals, voff, m, src, soff, ndim, plan, out, ooff)
 *     after sorting the pairs: the first item of each run of equal keys
 *     stores the run's last value (assign) or folds its run in index order
 *     into out[key] (add: in T, so f16/bf16 sum in f32 and round once)
 *   masked_fill(x, xoff, mask, moff, out, ooff, n, ndim, bcast, flat, value)
 *   flags_nonzero(x, xoff, n, f, foff)        f[i] = x[i] != 0 (complex: either part)
 *   flags_mask(mask, moff, n, ndim, bcast, flat, f, foff)
 *   scan_tiles(data, doff, n, per, sums, soff, scratch)
 *     exclusive scan of ulongs within tiles of local_size * per elements;
 *     tile totals to sums. Needs one work-group per tile (global =
 *     tiles * local size) and local scratch of local_size ulongs.
 *   scan_add(data, doff, n, tile, sums, soff)  data[i] += sums[i / tile]
 *   compact_positions(offs, ooff, n, total, out, outoff)   out[offs[i]] = i where selected
 *   compact_values(offs, ooff, n, total, x, xoff, out, outoff)  out[offs[i]] = x[i]
 *   one_hot(idx, ioff, is64, out, ooff, n, classes, flag)
 *   sub2ind(subs, soff, is64, out, ooff, count, nd, dims, flag)
 *   ind2sub(idx, ioff, is64, out, ooff, count, nd, dims, total, flag)
 *   bitonic_step (sort_pairs.clh)
 * The error flag is four uints: [0] |= 1 on a bad index, [1] = min over bad
 * positions (saturated at 2^32-1). No kernel reads or writes out of bounds
 * for a bad index: it writes 0 (gathers) or drops the element (scatters).
 * Tunables: the scan's local size (any power of two the kernel allows).
 */
#include "common.cl"
#include "sort_pairs.clh"

/* An index element: long or int storage, chosen per call. */
inline long
load_index(global const void *p, ulong i, uint is64)
{
  return is64 ? ((global const long *)p)[i] : (long)((global const int *)p)[i];
}

inline void
flag_bad(global uint *flag, ulong pos)
{
  atomic_or(&flag[0], 1u);
  atomic_min(&flag[1], pos < 0xffffffffUL ? (uint)pos : 0xffffffffu);
}

/* Shape of an index tensor and the strides of the tensor it addresses; mirrors struct iplan. */
typedef struct {
  ulong shape[8];
  ulong stride[8];
} kiln_iplan;

/* Element offset (through plan.stride) of the element at flat position i of plan.shape, skipping axis. */
inline ulong
plan_offset(ulong i, uint ndim, uint axis, const kiln_iplan *plan, ulong *axis_coord)
{
  ulong off = 0;
  for (uint d = ndim; d-- > 0;) {
    ulong c = i % plan->shape[d];
    i /= plan->shape[d];
    if (d == axis)
      *axis_coord = c;
    else
      off += c * plan->stride[d];
  }
  return off;
}

#if defined(KILN_DT_BOOL)
#define KADD(a, b) ((T)((a) | (b)))
#else
#define KADD(a, b) ((T)((UT)(a) + (UT)(b))) /* complex: adds both parts */
#endif

kernel void
gather_axis(global const MT *x, ulong xoff, global const void *idx, ulong ioff, uint is64,
            global MT *out, ulong ooff, ulong n, uint ndim, uint axis, long len, kiln_iplan plan,
            global uint *flag)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    ulong ac = 0;
    ulong base = plan_offset(i, ndim, axis, &plan, &ac);
    long v = load_index(idx, ioff + i, is64);
    if (v < 0)
      v += len;
    if (v < 0 || v >= len) {
      flag_bad(flag, i);
      out[ooff + i] = (MT)0;
    } else {
      out[ooff + i] = x[xoff + base + (ulong)v * plan.stride[axis]];
    }
  }
}

/*
 * gather_axis for CPU devices: one work-item per row of the index tensor's last dimension.
 * The row's offset is divided out once; along the row the source moves by the last
 * dimension's stride (none when that is the gathered axis) and the index picks the rest.
 * Every load is made (an out-of-range index reads the row's first element and stores 0)
 * and bad indices are only counted, so that the compiler vectorises the loop as a gather;
 * a row with a bad index is then walked again for its first position. PoCL, [4096, 1024]
 * f32 gathered along axis 1 (bench/bench_layout --only gather): 8.6 ms with one work-item
 * an element (gather_axis), 2.3 with this (61% of an 8192 x 8192 copy's time); a private
 * minimum of the bad positions instead of the count was not vectorised, 2-3x slower
 * (bench/pocl_proto/gather.py).
 */
#define GATHER_ROW(IT)                                                                    \
  do {                                                                                    \
    global const IT *ip = (global const IT *)idx + ioff + r * inner;                      \
    uint nbad = 0;                                                                        \
    for (ulong j = 0; j < inner; j++) {                                                   \
      long v = (long)ip[j];                                                               \
      v = v < 0 ? v + len : v;                                                            \
      const int ok = v >= 0 && v < len;                                                   \
      const MT val = xr[(long)j * sl + (ok ? v : 0) * sa];                                \
      o[j] = ok ? val : (MT)0;                                                            \
      nbad += !ok;                                                                        \
    }                                                                                     \
    for (ulong j = 0; nbad && j < inner; j++) {                                           \
      const long v = (long)ip[j];                                                         \
      if (v < -len || v >= len) {                                                         \
        flag_bad(flag, r * inner + j);                                                    \
        break;                                                                            \
      }                                                                                   \
    }                                                                                     \
  } while (0)

kernel void
gather_axis_rows(global const MT *restrict x, ulong xoff, global const void *restrict idx,
                 ulong ioff, uint is64, global MT *restrict out, ulong ooff, ulong n, uint ndim,
                 uint axis, long len, kiln_iplan plan, global uint *flag)
{
  const uint dl = ndim - 1;
  const ulong inner = plan.shape[dl], rows = n / inner;
  const long sl = axis == dl ? 0 : (long)plan.stride[dl], sa = (long)plan.stride[axis];
  for (ulong r = get_global_id(0); r < rows; r += get_global_size(0)) {
    ulong ac = 0;
    global const MT *xr = x + xoff + plan_offset(r * inner, ndim, axis, &plan, &ac);
    global MT *o = out + ooff + r * inner;
    if (is64)
      GATHER_ROW(long);
    else
      GATHER_ROW(int);
  }
}

kernel void
index_select(global const MT *x, ulong xoff, global const void *idx, ulong ioff, uint is64,
             global MT *out, ulong ooff, ulong outer, ulong nidx, long len, ulong inner,
             global uint *flag)
{
  /* Grid dimension 2 walks o, 1 walks j, 0 walks k: no divisions. */
  for (ulong o = get_global_id(2); o < outer; o += get_global_size(2)) {
    for (ulong j = get_global_id(1); j < nidx; j += get_global_size(1)) {
      long v = load_index(idx, ioff + j, is64);
      if (v < 0)
        v += len;
      int bad = v < 0 || v >= len;
      if (bad && get_global_id(0) == 0)
        flag_bad(flag, j);
      global const MT *row = x + xoff + (o * (ulong)len + (ulong)(bad ? 0 : v)) * inner;
      global MT *dst = out + ooff + (o * nidx + j) * inner;
      /* Two plain loops, not a select per element: a CPU device's compiler vectorises them
       * (the host launches one item per row there, so k runs over consecutive elements). */
      if (bad)
        for (ulong k = get_global_id(0); k < inner; k += get_global_size(0))
          dst[k] = (MT)0;
      else
        for (ulong k = get_global_id(0); k < inner; k += get_global_size(0))
          dst[k] = row[k];
    }
  }
}

/* index_select for CPU devices: one work-item per gathered row (o, j), a plain loop over
 * the row's inner elements. PoCL vectorises that loop and runs the work-group's items as a
 * simple loop; the 3-D form above, with its k loop strided by get_global_size(0), ran 20-40x
 * slower there (rows of 64 f32, measured with PoCL 3.1). Same arguments as index_select. */
kernel void
index_select_rows(global const MT *x, ulong xoff, global const void *idx, ulong ioff, uint is64,
                  global MT *out, ulong ooff, ulong outer, ulong nidx, long len, ulong inner,
                  global uint *flag)
{
  for (ulong r = get_global_id(0); r < outer * nidx; r += get_global_size(0)) {
    /* A 64-bit division per row cost PoCL 1.3 of 5 ms for 2^18 rows of 64 f32 (kiln_nt_div
     * against kiln_nt in bench/pocl_proto/index_select.py): none where there is one outer
     * slice (index_select along axis 0, embedding). */
    ulong o = outer > 1 ? r / nidx : 0, j = r - o * nidx;
    long v = load_index(idx, ioff + j, is64);
    if (v < 0)
      v += len;
    global MT *dst = out + ooff + r * inner;
    if (v < 0 || v >= len) {
      if (o == 0)
        flag_bad(flag, j);
      for (ulong k = 0; k < inner; k++)
        dst[k] = (MT)0;
    } else {
      global const MT *row = x + xoff + (o * (ulong)len + (ulong)v) * inner;
      for (ulong k = 0; k < inner; k++)
        dst[k] = row[k];
    }
  }
}

/*
 * index_select_rows over rows of whole 64-byte lines (the host checked that the row length
 * and both offsets, here in lines, are whole lines): each work-item copies its row a line at
 * a time, as one 64-byte vector. The _nt form stores them non-temporally (outputs that would
 * not stay in cache). PoCL, 2^18 random rows of 64 f32 (`bench/pocl_proto/index_select.py
 * 2**24`, fastest of 7): 3.7-3.8 ms as lines (plain or non-temporal), 4.6 for the element
 * loop above, where a plain buffer copy of the table takes 3.0.
 */
#define SELECT_LINES(name, PUT)                                                            \
  kernel void name(global const uint16 *x, ulong xoff, global const void *idx, ulong ioff,  \
                   uint is64, global uint16 *out, ulong ooff, ulong outer, ulong nidx,      \
                   long len, ulong inner, global uint *flag)                                \
  {                                                                                        \
    for (ulong r = get_global_id(0); r < outer * nidx; r += get_global_size(0)) {          \
      ulong o = outer > 1 ? r / nidx : 0, j = r - o * nidx; /* as index_select_rows */   \
      long v = load_index(idx, ioff + j, is64);                                            \
      if (v < 0)                                                                           \
        v += len;                                                                          \
      global uint16 *dst = out + ooff + r * inner;                                         \
      if (v < 0 || v >= len) {                                                             \
        if (o == 0)                                                                        \
          flag_bad(flag, j);                                                               \
        for (ulong k = 0; k < inner; k++)                                                  \
          PUT(dst + k, (uint16)0);                                                         \
      } else {                                                                             \
        global const uint16 *row = x + xoff + (o * (ulong)len + (ulong)v) * inner;         \
        for (ulong k = 0; k < inner; k++)                                                  \
          PUT(dst + k, row[k]);                                                            \
      }                                                                                    \
    }                                                                                      \
  }
#define LINE_PUT(p, x) (*(p) = (x))
#if defined(__clang__)
#define LINE_PUT_NT(p, x) __builtin_nontemporal_store((x), (p))
#else
#define LINE_PUT_NT(p, x) LINE_PUT(p, x)
#endif
SELECT_LINES(index_select_lines, LINE_PUT)
SELECT_LINES(index_select_lines_nt, LINE_PUT_NT)

kernel void
scatter_keys(global const void *idx, ulong ioff, uint is64, ulong m, ulong npad, uint ndim,
             uint axis, long len, kiln_iplan plan, global ulong *keys, ulong koff,
             global ulong *vals, ulong voff, global uint *flag)
{
  for (ulong e = get_global_id(0); e < npad; e += get_global_size(0)) {
    ulong key = ULONG_MAX, val = ULONG_MAX;
    if (e < m) {
      ulong ac = 0;
      ulong base = plan_offset(e, ndim, axis, &plan, &ac);
      long v = load_index(idx, ioff + e, is64);
      if (v < 0)
        v += len;
      if (v < 0 || v >= len) {
        flag_bad(flag, e);
      } else {
        key = base + (ulong)v * plan.stride[axis];
        val = e;
      }
    }
    keys[koff + e] = key;
    vals[voff + e] = val;
  }
}

/* Nonzero when sorted pair i starts a run of equal keys (the padding keys never do). */
inline int
run_start(global const ulong *keys, ulong koff, ulong i)
{
  ulong key = keys[koff + i];
  return key != ULONG_MAX && (i == 0 || keys[koff + i - 1] != key);
}

kernel void
scatter_assign(global const ulong *keys, ulong koff, global const ulong *vals, ulong voff, ulong m,
               global const MT *src, ulong soff, uint ndim, kiln_iplan plan, global MT *out,
               ulong ooff)
{
  for (ulong i = get_global_id(0); i < m; i += get_global_size(0)) {
    if (!run_start(keys, koff, i))
      continue;
    ulong key = keys[koff + i], last = i, ac = 0;
    while (last + 1 < m && keys[koff + last + 1] == key)
      last++;
    out[ooff + key] = src[soff + plan_offset(vals[voff + last], ndim, ndim, &plan, &ac)];
  }
}

kernel void
scatter_add(global const ulong *keys, ulong koff, global const ulong *vals, ulong voff, ulong m,
            global const ST *src, ulong soff, uint ndim, kiln_iplan plan, global ST *out,
            ulong ooff)
{
  for (ulong i = get_global_id(0); i < m; i += get_global_size(0)) {
    if (!run_start(keys, koff, i))
      continue;
    ulong key = keys[koff + i], ac = 0;
    T acc = KILN_LOAD(out, ooff + key);
    for (ulong j = i; j < m && keys[koff + j] == key; j++)
      acc = KADD(acc, KILN_LOAD(src, soff + plan_offset(vals[voff + j], ndim, ndim, &plan, &ac)));
    KILN_STORE(out, ooff + key, acc);
  }
}

/* Element offsets of operands for flat output index i under broadcasting (as in elementwise.cl). */
inline void
bcast_index2(ulong i, uint ndim, const kiln_bcast *bc, ulong *o0, ulong *o1)
{
  ulong a = 0, b = 0;
  for (uint d = ndim; d-- > 0;) {
    ulong c = i % bc->shape[d];
    i /= bc->shape[d];
    a += c * bc->stride[0][d];
    b += c * bc->stride[1][d];
  }
  *o0 = a;
  *o1 = b;
}

kernel void
masked_fill(global const MT *x, ulong xoff, global const uchar *mask, ulong moff, global MT *out,
            ulong ooff, ulong n, uint ndim, kiln_bcast bc, uint flat, MT value)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    ulong xi = i, mi = i;
    if (!flat)
      bcast_index2(i, ndim, &bc, &xi, &mi);
    out[ooff + i] = mask[moff + mi] ? value : x[xoff + xi];
  }
}

#if KILN_IS_COMPLEX
#define NONZERO(v) any((v) != KILN_ZERO)
#else
#define NONZERO(v) ((v) != KILN_ZERO)
#endif

kernel void
flags_nonzero(global const ST *x, ulong xoff, ulong n, global ulong *f, ulong foff)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    f[foff + i] = NONZERO(KILN_LOAD(x, xoff + i)) ? 1 : 0;
}

kernel void
flags_mask(global const uchar *mask, ulong moff, ulong n, uint ndim, kiln_bcast bc, uint flat,
           global ulong *f, ulong foff)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    ulong xi = i, mi = i;
    if (!flat)
      bcast_index2(i, ndim, &bc, &xi, &mi);
    f[foff + i] = mask[moff + mi] != 0 ? 1 : 0;
  }
}

kernel void
scan_tiles(global ulong *data, ulong doff, ulong n, uint per, global ulong *sums, ulong soff,
           local ulong *scratch)
{
  uint l = get_local_id(0), L = get_local_size(0);
  ulong g = get_group_id(0);
  ulong base = (g * L + l) * per;
  ulong s = 0;
  for (uint t = 0; t < per; t++)
    if (base + t < n)
      s += data[doff + base + t];
  scratch[l] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  /* Hillis-Steele inclusive scan of the per-item sums. */
  for (uint step = 1; step < L; step <<= 1) {
    ulong v = l >= step ? scratch[l - step] : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    scratch[l] += v;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  ulong run = scratch[l] - s;
  if (l == L - 1)
    sums[soff + g] = scratch[l];
  for (uint t = 0; t < per; t++) {
    ulong i = base + t;
    if (i < n) {
      ulong v = data[doff + i];
      data[doff + i] = run;
      run += v;
    }
  }
}

kernel void
scan_add(global ulong *data, ulong doff, ulong n, ulong tile, global const ulong *sums, ulong soff)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    data[doff + i] += sums[soff + i / tile];
}

/* After an exclusive scan of 0/1 flags: element i was selected when the next offset is larger. */
inline int
selected(global const ulong *offs, ulong ooff, ulong i, ulong n, ulong total)
{
  ulong next = i + 1 < n ? offs[ooff + i + 1] : total;
  return next != offs[ooff + i];
}

kernel void
compact_positions(global const ulong *offs, ulong ooff, ulong n, ulong total, global long *out,
                  ulong outoff)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    if (selected(offs, ooff, i, n, total))
      out[outoff + offs[ooff + i]] = (long)i;
}

kernel void
compact_values(global const ulong *offs, ulong ooff, ulong n, ulong total, global const MT *x,
               ulong xoff, global MT *out, ulong outoff)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    if (selected(offs, ooff, i, n, total))
      out[outoff + offs[ooff + i]] = x[xoff + i];
}

kernel void
one_hot(global const void *idx, ulong ioff, uint is64, global ST *out, ulong ooff, ulong n,
        ulong classes, global uint *flag)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    ulong p = i / classes, c = i % classes;
    long v = load_index(idx, ioff + p, is64);
    if (v < 0 || (ulong)v >= classes) {
      if (c == 0)
        flag_bad(flag, p);
      KILN_STORE(out, ooff + i, KILN_ZERO);
    } else {
      KILN_STORE(out, ooff + i, (ulong)v == c ? KILN_ONE : KILN_ZERO);
    }
  }
}

/* Row-major dims of sub2ind/ind2sub; mirrors struct dims8 in lib/ops/index.c. */
typedef struct {
  ulong d[8];
} kiln_dims;

kernel void
sub2ind(global const void *subs, ulong soff, uint is64, global long *out, ulong ooff, ulong count,
        uint nd, kiln_dims dims, global uint *flag)
{
  for (ulong p = get_global_id(0); p < count; p += get_global_size(0)) {
    ulong acc = 0;
    int bad = 0;
    for (uint d = 0; d < nd; d++) {
      long s = load_index(subs, soff + p * nd + d, is64);
      if (s < 0 || (ulong)s >= dims.d[d])
        bad = 1;
      acc = acc * dims.d[d] + (ulong)s;
    }
    if (bad)
      flag_bad(flag, p);
    out[ooff + p] = bad ? 0 : (long)acc;
  }
}

kernel void
ind2sub(global const void *idx, ulong ioff, uint is64, global long *out, ulong ooff, ulong count,
        uint nd, kiln_dims dims, ulong total, global uint *flag)
{
  for (ulong p = get_global_id(0); p < count; p += get_global_size(0)) {
    long v = load_index(idx, ioff + p, is64);
    int bad = v < 0 || (ulong)v >= total;
    if (bad)
      flag_bad(flag, p);
    ulong r = bad ? 0 : (ulong)v;
    for (uint d = nd; d-- > 0;) {
      out[ooff + p * nd + d] = (long)(r % dims.d[d]);
      r /= dims.d[d];
    }
  }
}
