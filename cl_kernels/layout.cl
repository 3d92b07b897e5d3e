/*
 * Layout kernels: data movement between tensors of one dtype.
 *
 * Build options: see common.cl (-DT=..., -DKILN_DT_...=1). Every kernel but
 * kron only moves elements, typed MT (common.cl), so one program serves all
 * dtypes of a size: the host runs f16 data through the bf16 program and c64
 * through the i64 one (kiln__ops_move_dtype).
 * Kernels (offsets are in elements; every 1-D kernel loops grid-stride):
 *   remap(src, soff, dst, doff, rows, ndim, plan, fill)
 *     The workhorse behind permute, flip, roll, concat, stack, split, slice,
 *     slice assignment, tile, repeat, pad, diag and broadcast_to. Walks an
 *     iteration space of ndim >= 1 dimensions (plan.extent), launched 3-D:
 *     grid dimensions 0 and 1 over the two innermost ones, 2 over the rows
 *     (the product of the others). For
 *     coordinate c along dimension k the destination moves by
 *     c * plan.dstride[k] and the source by ic * plan.sstride[k], where ic is
 *     c mapped by plan.mode[k] (see REMAP_* below). Elements whose source
 *     coordinate falls outside a constant pad get `fill`.
 *   remap_affine32(src, soff, dst, doff, rows, ndim, plan)
 *     remap for plans without coordinate maps whose offsets fit 32 bits.
 *   permute_tiled(src, soff, dst, doff, ea, eb, sb, da, batch, nb, bp)
 *     Any permutation-like copy in which axis a is contiguous in src and
 *     axis b (!= a) contiguous in dst (2-D transpose, NCHW -> NHWC, axis
 *     reversals): 32x32 tiles of the (a, b) plane go through local memory
 *     padded to 33 columns against bank conflicts, so both the reads and
 *     the writes are contiguous runs. Work-groups of 32x8
 *     (reqd_work_group_size); grid dimension 0 over a tiles, 1 over b
 *     tiles, 2 over the batch (the other nb axes, strides in bp).
 *   tri_mask(src, soff, dst, doff, n, rows, cols, k, upper)
 *     tril (upper = 0: keep j - i <= k) or triu (upper = 1: keep j - i >= k)
 *     on every rows x cols page; other elements become 0.
 *   kron(a, aoff, b, boff, out, ooff, n, ndim, plan)
 *     N-D Kronecker product: out[c] = a[c / bshape] * b[c % bshape]; f16/bf16
 *     multiply in f32 (exact) and round once, complex multiplies complex.
 *   permute_blocked(..., btb), permute_blocked_nt: permute_tiled's work for CPU
 *     devices (32 x btb blocks, one per work-item, moved as 8x8 register
 *     transposes; _nt with non-temporal stores).
 * Tunables: none (the GPU tile is fixed at 32x32 with 32x8 work-items; the CPU
 * block is 32 elements of a by 1 KiB of b, fewer where that leaves too few blocks).
 */
#include "common.cl"
#include "tile8.clh"

/* Source coordinate maps of the remap kernel; mirror enum remap_mode in lib/ops/layout.c. */
#define REMAP_AFFINE 0u  /* ic = c (offsets and signed strides are folded in on the host) */
#define REMAP_MOD 1u     /* ic = c mod p1 (tile) */
#define REMAP_DIV 2u     /* ic = c / p0 (repeat) */
#define REMAP_ROLL 3u    /* ic = (c + p0) mod p1, with 0 <= p0 < p1 (roll) */
#define REMAP_PADC 4u    /* ic = c - p0; outside [0, p1) reads the fill value (constant pad) */
#define REMAP_EDGE 5u    /* ic = clamp(c - p0, 0, p1 - 1) (edge pad) */
#define REMAP_REFLECT 6u /* c - p0 reflected about the ends, edges not repeated (reflect pad) */
#define REMAP_SYMM 7u    /* c - p0 reflected about the ends, edges repeated (symmetric pad) */

/* Mirrors struct remap_plan in lib/ops/layout.c (352 bytes). */
typedef struct {
  ulong extent[8];
  long sstride[8];
  long dstride[8];
  long p0[8];
  long p1[8];
  uint mode[8];
} kiln_remap;

/* x modulo m into [0, m). */
inline long
floor_mod(long x, long m)
{
  long r = x % m;
  return r < 0 ? r + m : r;
}

inline long
remap_coord(uint mode, long c, long p0, long p1, int *outside)
{
  long x;
  switch (mode) {
  case REMAP_MOD:
    return c % p1;
  case REMAP_DIV:
    return c / p0;
  case REMAP_ROLL:
    x = c + p0;
    return x >= p1 ? x - p1 : x;
  case REMAP_PADC:
    x = c - p0;
    if (x < 0 || x >= p1)
      *outside = 1;
    return x;
  case REMAP_EDGE:
    x = c - p0;
    return x < 0 ? 0 : x >= p1 ? p1 - 1 : x;
  case REMAP_REFLECT:
    if (p1 == 1)
      return 0;
    x = floor_mod(c - p0, 2 * (p1 - 1));
    return x < p1 ? x : 2 * (p1 - 1) - x;
  case REMAP_SYMM:
    x = floor_mod(c - p0, 2 * p1);
    return x < p1 ? x : 2 * p1 - 1 - x;
  default:
    return c;
  }
}

kernel void
remap(global const MT *src, ulong soff, global MT *dst, ulong doff, ulong rows, uint ndim,
      kiln_remap plan, MT fill)
{
  /*
   * Grid dimension 0 walks the innermost plan dimension, 1 the next one (or
   * a single item when ndim is 1), 2 the rows: the product of the others,
   * whose coordinates alone need divisions.
   */
  uint d0 = ndim - 1, d1 = ndim >= 2 ? ndim - 2 : ndim - 1;
  ulong e0 = plan.extent[d0], e1 = ndim >= 2 ? plan.extent[d1] : 1;
  for (ulong row = get_global_id(2); row < rows; row += get_global_size(2)) {
    ulong rem = row;
    long s = 0, d = 0;
    int outside = 0;
    for (uint k = ndim >= 2 ? d1 : d0; k-- > 0;) {
      ulong e = plan.extent[k];
      long c = (long)(rem % e);
      rem /= e;
      d += c * plan.dstride[k];
      s += remap_coord(plan.mode[k], c, plan.p0[k], plan.p1[k], &outside) * plan.sstride[k];
    }
    for (ulong c1 = get_global_id(1); c1 < e1; c1 += get_global_size(1)) {
      long s1 = s, dd1 = d;
      int out1 = outside;
      if (ndim >= 2) {
        s1 += remap_coord(plan.mode[d1], (long)c1, plan.p0[d1], plan.p1[d1], &out1) *
              plan.sstride[d1];
        dd1 += (long)c1 * plan.dstride[d1];
      }
      for (ulong c0 = get_global_id(0); c0 < e0; c0 += get_global_size(0)) {
        int out0 = out1;
        long sc = remap_coord(plan.mode[d0], (long)c0, plan.p0[d0], plan.p1[d0], &out0);
        /* Unsigned sums wrap exactly like the signed offsets they stand for. */
        ulong di = doff + (ulong)(dd1 + (long)c0 * plan.dstride[d0]);
        dst[di] = out0 ? fill : src[soff + (ulong)(s1 + sc * plan.sstride[d0])];
      }
    }
  }
}

/*
 * The common case of remap without a coordinate map and with every offset
 * below 2^31: 32-bit index arithmetic, which GPUs do several times faster
 * than 64-bit division. Same launch as remap.
 */
kernel void
remap_affine32(global const MT *src, ulong soff, global MT *dst, ulong doff, ulong rows,
               uint ndim, kiln_remap plan)
{
  uint d0 = ndim - 1, d1 = ndim >= 2 ? ndim - 2 : ndim - 1;
  uint e0 = (uint)plan.extent[d0], e1 = ndim >= 2 ? (uint)plan.extent[d1] : 1u;
  int ss0 = (int)plan.sstride[d0], ds0 = (int)plan.dstride[d0];
  int ss1 = ndim >= 2 ? (int)plan.sstride[d1] : 0, ds1 = ndim >= 2 ? (int)plan.dstride[d1] : 0;
  uint nrows = (uint)rows;
  for (uint row = (uint)get_global_id(2); row < nrows; row += (uint)get_global_size(2)) {
    uint rem = row;
    int s = 0, d = 0;
    for (uint k = ndim >= 2 ? d1 : d0; k-- > 0;) {
      uint e = (uint)plan.extent[k];
      int c = (int)(rem % e);
      rem /= e;
      s += c * (int)plan.sstride[k];
      d += c * (int)plan.dstride[k];
    }
    for (uint c1 = (uint)get_global_id(1); c1 < e1; c1 += (uint)get_global_size(1)) {
      int s1 = s + (int)c1 * ss1, dd1 = d + (int)c1 * ds1;
      for (uint c0 = (uint)get_global_id(0); c0 < e0; c0 += (uint)get_global_size(0))
        dst[doff + (ulong)(long)(dd1 + (int)c0 * ds0)] = src[soff + (ulong)(long)(s1 + (int)c0 * ss0)];
    }
  }
}

/*
 * remap_affine's work for CPU devices when the innermost plan dimension is contiguous on
 * both sides (permute (0, 2, 1, 3), slices of rows): work-item i copies runs
 * [i per, (i + 1) per) of the rows (the other dimensions), each run of extent[ndim - 1]
 * elements as 8-element vectors, and steps its coordinates from run to run instead of
 * dividing (they are divided once, for its first run). A grid-stride loop takes the
 * work-items past the grid.
 */
kernel void
remap_runs(global const MT *src, ulong soff, global MT *dst, ulong doff, ulong rows, ulong per,
           uint ndim, kiln_remap plan)
{
  const uint d0 = ndim - 1;
  const ulong e0 = plan.extent[d0];
  for (ulong r0 = get_global_id(0) * per; r0 < rows; r0 += get_global_size(0) * per) {
    ulong c[8], rem = r0;
    long s = 0, d = 0;
    for (uint k = d0; k-- > 0;) {
      c[k] = rem % plan.extent[k];
      rem /= plan.extent[k];
      s += (long)c[k] * plan.sstride[k];
      d += (long)c[k] * plan.dstride[k];
    }
    const ulong r1 = min(r0 + per, rows);
    for (ulong r = r0; r < r1; r++) {
      global const MT *sp = src + soff + s;
      global MT *dp = dst + doff + d;
      ulong j = 0;
#if !defined(KILN_DT_C128)
      for (; j + 8 <= e0; j += 8)
        vstore8(vload8(0, sp + j), 0, dp + j);
#endif
      for (; j < e0; j++)
        dp[j] = sp[j];
      for (uint k = d0; k-- > 0;) {
        s += plan.sstride[k];
        d += plan.dstride[k];
        if (++c[k] < plan.extent[k])
          break;
        s -= (long)plan.extent[k] * plan.sstride[k];
        d -= (long)plan.extent[k] * plan.dstride[k];
        c[k] = 0;
      }
    }
  }
}

#define TILE 32
#define TILE_ROWS 8

/* Batch axes of permute_tiled; mirrors struct tile_batch in lib/ops/layout.c. */
typedef struct {
  ulong extent[8];
  long sstride[8];
  long dstride[8];
} kiln_batch;

kernel __attribute__((reqd_work_group_size(TILE, TILE_ROWS, 1))) void
permute_tiled(global const MT *src, ulong soff, global MT *dst, ulong doff, ulong ea, ulong eb,
              long sb, long da, ulong batch, uint nb, kiln_batch bp)
{
  local MT tile[TILE][TILE + 1];
  ulong tx = get_local_id(0), ty = get_local_id(1);
  ulong a0 = get_group_id(0) * TILE, b0 = get_group_id(1) * TILE;
  for (ulong bi = get_global_id(2); bi < batch; bi += get_global_size(2)) {
    ulong rem = bi;
    long so = 0, dd = 0;
    if (nb == 1) { /* the common batched transpose: no division */
      so = (long)bi * bp.sstride[0];
      dd = (long)bi * bp.dstride[0];
    } else {
      for (uint k = nb; k-- > 0;) {
        ulong c = rem % bp.extent[k];
        rem /= bp.extent[k];
        so += (long)c * bp.sstride[k];
        dd += (long)c * bp.dstride[k];
      }
    }
    /* Read along a (contiguous in src), write along b (contiguous in dst). */
    for (ulong k = 0; k < TILE; k += TILE_ROWS) {
      ulong a = a0 + tx, b = b0 + ty + k;
      if (a < ea && b < eb)
        tile[ty + k][tx] = src[soff + (ulong)(so + (long)a + (long)b * sb)];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (ulong k = 0; k < TILE; k += TILE_ROWS) {
      ulong b = b0 + tx, a = a0 + ty + k;
      if (a < ea && b < eb)
        dst[doff + (ulong)(dd + (long)b + (long)a * da)] = tile[tx][ty + k];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

/*
 * permute_tiled for CPU devices (same arguments and batch plan, and btb): one
 * work-item moves a 32 x btb block of the (a, b) plane, 8 x 8 at a time:
 * eight 8-element source lines loaded as vectors, transposed in registers,
 * stored as eight destination lines (elements of 16 bytes, and tiles cut by
 * the edges, move one by one). Within a block the 8 x 8 tiles go down b
 * first, so each of the 32 destination rows receives one contiguous run of
 * btb elements (the host passes 1 KiB of them) while the 32-element source
 * strip stays in cache. PoCL runs a work-group's items one after another and
 * does not vectorise this across them, so local-memory tiles and barriers
 * only add work there. permute_blocked_nt stores the destination lines
 * non-temporally (large outputs; the host checks that every line is aligned
 * to its vector size). Grid: dimension 0 over 32-element a blocks, 1 over b
 * blocks, 2 over the batch; any local size. Measured on PoCL (2 cores, f32
 * 4096 x 4096): 6.2 ms with 32 x 32 blocks of tiles along a, 3.5 ms with
 * this order and 1 KiB runs, 61% of a copy's time.
 */
#define BT 32
#if defined(KILN_DT_C128)
#define PERM_VEC 0
#else
#define PERM_VEC 1
#define MT8 KILN_CAT(MT, 8)
#endif
#define PERM_PUT(v, q) vstore8((v), 0, (q))
#if defined(__clang__)
#define PERM_PUT_NT(v, q) __builtin_nontemporal_store((v), (global MT8 *)(q))
#else
#define PERM_PUT_NT(v, q) PERM_PUT(v, q)
#endif

#define PERMUTE_BLOCKED(name, PUT)                                                          \
  kernel void name(global const MT *src, ulong soff, global MT *dst, ulong doff, ulong ea,   \
                   ulong eb, long sb, long da, ulong batch, uint nb, kiln_batch bp, ulong btb) \
  {                                                                                         \
    ulong a0 = get_global_id(0) * BT, b0 = get_global_id(1) * btb;                         \
    if (a0 >= ea || b0 >= eb)                                                               \
      return;                                                                               \
    ulong a1 = min(a0 + BT, ea), b1 = min(b0 + btb, eb);                                    \
    for (ulong bi = get_global_id(2); bi < batch; bi += get_global_size(2)) {               \
      ulong rem = bi;                                                                       \
      long so = 0, dd = 0;                                                                  \
      for (uint k = nb; k-- > 0;) {                                                         \
        ulong c = rem % bp.extent[k];                                                       \
        rem /= bp.extent[k];                                                                \
        so += (long)c * bp.sstride[k];                                                      \
        dd += (long)c * bp.dstride[k];                                                      \
      }                                                                                     \
      global const MT *s = src + soff + so;                                                 \
      global MT *d = dst + doff + dd;                                                       \
      for (ulong a = a0; a < a1; a += 8) {                                                  \
        for (ulong b = b0; b < b1; b += 8) {                                                \
          PERM_TILE(PUT)                                                                    \
          for (ulong aa = a; aa < min(a + 8, a1); aa++)                                     \
            for (ulong bb = b; bb < min(b + 8, b1); bb++)                                   \
              d[(long)bb + (long)aa * da] = s[(long)aa + (long)bb * sb];                    \
        }                                                                                   \
      }                                                                                     \
    }                                                                                       \
  }
#if PERM_VEC
/* A whole 8 x 8 tile through registers, then on to the next tile. */
#define PERM_TILE(PUT)                                                                      \
  if (a + 8 <= a1 && b + 8 <= b1) {                                                         \
    TILE8_LOAD(MT8, r, s + (long)a + (long)b * sb, sb);                                     \
    TILE8_STORE(MT8, r, d + (long)b + (long)a * da, da, PUT);                               \
    continue;                                                                               \
  }
PERMUTE_BLOCKED(permute_blocked, PERM_PUT)
PERMUTE_BLOCKED(permute_blocked_nt, PERM_PUT_NT)
#else
#define PERM_TILE(PUT)
PERMUTE_BLOCKED(permute_blocked, PERM_PUT)
#endif

kernel void
tri_mask(global const MT *src, ulong soff, global MT *dst, ulong doff, ulong n, ulong rows,
         ulong cols, long k, uint upper)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    long j = (long)(i % cols);
    long r = (long)((i / cols) % rows);
    long diff = j - r;
    int keep = upper ? diff >= k : diff <= k;
    dst[doff + i] = keep ? src[soff + i] : (MT)0; /* all bits 0: +0 of every dtype */
  }
}

/* Mirrors struct kron_plan in lib/ops/layout.c. */
typedef struct {
  ulong oshape[8];
  ulong bshape[8];
  ulong astride[8];
  ulong bstride[8];
} kiln_kron;

/* The complex product rounds each of its four products and two sums once: no fma. */
#pragma OPENCL FP_CONTRACT OFF

#if KILN_IS_COMPLEX
#define KRON_MUL(p, q) ((T)((p).x * (q).x - (p).y * (q).y, (p).x * (q).y + (p).y * (q).x))
#else
/* UT makes integer products wrap; for bool (0/1) the product is the logical and. */
#define KRON_MUL(p, q) ((T)((UT)(p) * (UT)(q)))
#endif

kernel void
kron(global const ST *a, ulong aoff, global const ST *b, ulong boff, global ST *out, ulong ooff,
     ulong n, uint ndim, kiln_kron plan)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    ulong rem = i, ai = 0, bi = 0;
    for (uint k = ndim; k-- > 0;) {
      ulong c = rem % plan.oshape[k];
      rem /= plan.oshape[k];
      ai += (c / plan.bshape[k]) * plan.astride[k];
      bi += (c % plan.bshape[k]) * plan.bstride[k];
    }
    T va = KILN_LOAD(a, aoff + ai), vb = KILN_LOAD(b, boff + bi);
    KILN_STORE(out, ooff + i, KRON_MUL(va, vb));
  }
}
