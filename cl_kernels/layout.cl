/*
 * Layout kernels: data movement between tensors of one dtype.
 *
 * Build options: see common.cl (-DT=..., -DKILN_DT_...=1).
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
 *   transpose_tiled(src, soff, dst, doff, rows, cols, batch, sbatch, dbatch)
 *     dst[b] (cols x rows) = transpose of src[b] (rows x cols), both
 *     contiguous, b < batch at element strides sbatch/dbatch. 2-D grid of
 *     32x8 work-groups (reqd_work_group_size), one 32x32 tile per group
 *     through local memory padded to 33 columns against bank conflicts;
 *     dimension 2 of the grid walks the batch.
 *   tri_mask(src, soff, dst, doff, n, rows, cols, k, upper)
 *     tril (upper = 0: keep j - i <= k) or triu (upper = 1: keep j - i >= k)
 *     on every rows x cols page; other elements become 0.
 *   kron(a, aoff, b, boff, out, ooff, n, ndim, plan)
 *     N-D Kronecker product: out[c] = a[c / bshape] * b[c % bshape].
 * Tunables: none (the tile is fixed at 32x32 with 32x8 work-items).
 */
#include "common.cl"

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
remap(global const T *src, ulong soff, global T *dst, ulong doff, ulong rows, uint ndim,
      kiln_remap plan, T fill)
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

#define TILE 32
#define TILE_ROWS 8

kernel __attribute__((reqd_work_group_size(TILE, TILE_ROWS, 1))) void
transpose_tiled(global const T *src, ulong soff, global T *dst, ulong doff, ulong rows,
                ulong cols, ulong batch, ulong sbatch, ulong dbatch)
{
  local T tile[TILE][TILE + 1];
  ulong tx = get_local_id(0), ty = get_local_id(1);
  ulong c0 = get_group_id(0) * TILE, r0 = get_group_id(1) * TILE;
  for (ulong b = get_global_id(2); b < batch; b += get_global_size(2)) {
    global const T *s = src + soff + b * sbatch;
    global T *o = dst + doff + b * dbatch;
    for (ulong k = 0; k < TILE; k += TILE_ROWS) {
      ulong r = r0 + ty + k, c = c0 + tx;
      if (r < rows && c < cols)
        tile[ty + k][tx] = s[r * cols + c];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (ulong k = 0; k < TILE; k += TILE_ROWS) {
      ulong orow = c0 + ty + k, ocol = r0 + tx; /* output is cols x rows */
      if (orow < cols && ocol < rows)
        o[orow * rows + ocol] = tile[tx][ty + k];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

kernel void
tri_mask(global const T *src, ulong soff, global T *dst, ulong doff, ulong n, ulong rows,
         ulong cols, long k, uint upper)
{
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    long j = (long)(i % cols);
    long r = (long)((i / cols) % rows);
    long diff = j - r;
    int keep = upper ? diff >= k : diff <= k;
    dst[doff + i] = keep ? src[soff + i] : (T)0;
  }
}

/* Mirrors struct kron_plan in lib/ops/layout.c. */
typedef struct {
  ulong oshape[8];
  ulong bshape[8];
  ulong astride[8];
  ulong bstride[8];
} kiln_kron;

kernel void
kron(global const T *a, ulong aoff, global const T *b, ulong boff, global T *out, ulong ooff,
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
    /* UT makes integer products wrap; for bool (0/1) the product is the logical and. */
    out[ooff + i] = (T)((UT)a[aoff + ai] * (UT)b[boff + bi]);
  }
}
