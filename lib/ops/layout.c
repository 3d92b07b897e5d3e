/*
 * Layout family: reshape (a view), transpose/permute, flip, roll, concat,
 * stack, split, slice and slice assignment, tile, repeat, pad, tril/triu,
 * diag, kron, broadcast_to.
 *
 * Almost everything is one "remap": an iteration space with, per dimension,
 * a destination stride, a source stride and a coordinate map (affine, mod,
 * div, roll, pad). remap_run() simplifies the plan (drops unit dimensions,
 * merges adjacent affine ones) and then picks the cheapest executor: a
 * buffer copy when both sides are contiguous; the local-memory tiled kernel
 * when one axis is contiguous in the source and another in the destination
 * (transposes, NCHW -> NHWC, axis reversals); the 32-bit affine kernel when
 * offsets are small; else the generic remap kernel. See cl_kernels/layout.cl.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "kiln/layout.h"
#include "ops/families.h"
#include "ops/ops_common.h"

enum remap_mode {
  RM_AFFINE = 0,
  RM_MOD,
  RM_DIV,
  RM_ROLL,
  RM_PADC,
  RM_EDGE,
  RM_REFLECT,
  RM_SYMM,
};

/* Mirrors kiln_remap in cl_kernels/layout.cl. */
struct remap_plan {
  uint64_t extent[KILN_MAX_DIMS];
  int64_t sstride[KILN_MAX_DIMS];
  int64_t dstride[KILN_MAX_DIMS];
  int64_t p0[KILN_MAX_DIMS];
  int64_t p1[KILN_MAX_DIMS];
  uint32_t mode[KILN_MAX_DIMS];
};
_Static_assert(sizeof(struct remap_plan) == 352, "remap_plan must match kiln_remap in layout.cl");

/* Mirrors kiln_kron in cl_kernels/layout.cl. */
struct kron_plan {
  uint64_t oshape[KILN_MAX_DIMS];
  uint64_t bshape[KILN_MAX_DIMS];
  uint64_t astride[KILN_MAX_DIMS];
  uint64_t bstride[KILN_MAX_DIMS];
};

struct remap {
  size_t ndim;
  struct remap_plan p;
  int64_t soff, doff; /* element offsets added to the tensors' own */
};

static void
remap_init(struct remap *r, size_t ndim)
{
  memset(r, 0, sizeof *r);
  r->ndim = ndim;
}

/* Dimension k: extent e, source stride ss, destination stride ds, affine map. */
static void
remap_dim(struct remap *r, size_t k, int64_t e, int64_t ss, int64_t ds)
{
  r->p.extent[k] = (uint64_t)e;
  r->p.sstride[k] = ss;
  r->p.dstride[k] = ds;
  r->p.mode[k] = RM_AFFINE;
}

static void
remap_map(struct remap *r, size_t k, enum remap_mode mode, int64_t p0, int64_t p1)
{
  r->p.mode[k] = (uint32_t)mode;
  r->p.p0[k] = p0;
  r->p.p1[k] = p1;
}

static uint64_t
remap_numel(const struct remap *r)
{
  uint64_t n = 1;
  for (size_t k = 0; k < r->ndim; k++)
    n *= r->p.extent[k];
  return n;
}

/* Drops unit affine dimensions and merges neighbours that stay linear on both sides. */
static void
remap_simplify(struct remap *r)
{
  struct remap q;
  remap_init(&q, 0);
  q.soff = r->soff;
  q.doff = r->doff;
  for (size_t k = 0; k < r->ndim; k++) {
    int affine = r->p.mode[k] == RM_AFFINE;
    if (affine && r->p.extent[k] == 1)
      continue;
    size_t m = q.ndim;
    if (affine && m > 0 && q.p.mode[m - 1] == RM_AFFINE &&
        q.p.sstride[m - 1] == r->p.sstride[k] * (int64_t)r->p.extent[k] &&
        q.p.dstride[m - 1] == r->p.dstride[k] * (int64_t)r->p.extent[k]) {
      q.p.extent[m - 1] *= r->p.extent[k];
      q.p.sstride[m - 1] = r->p.sstride[k];
      q.p.dstride[m - 1] = r->p.dstride[k];
      continue;
    }
    q.p.extent[m] = r->p.extent[k];
    q.p.sstride[m] = r->p.sstride[k];
    q.p.dstride[m] = r->p.dstride[k];
    q.p.p0[m] = r->p.p0[k];
    q.p.p1[m] = r->p.p1[k];
    q.p.mode[m] = r->p.mode[k];
    q.ndim++;
  }
  *r = q;
}

static kiln_status
get_kernel(const char *op, kiln_context *ctx, kiln_dtype dtype, const char *name, cl_kernel *k)
{
  return kiln__ops_kernel(op, ctx, "layout", dtype, name, k);
}

/* Mirrors kiln_batch in cl_kernels/layout.cl. */
struct tile_batch {
  uint64_t extent[KILN_MAX_DIMS];
  int64_t sstride[KILN_MAX_DIMS];
  int64_t dstride[KILN_MAX_DIMS];
};

static int
plan_affine(const struct remap *r)
{
  for (size_t k = 0; k < r->ndim; k++)
    if (r->p.mode[k] != RM_AFFINE)
      return 0;
  return 1;
}

/*
 * The b extent of permute_blocked's blocks: runs of 1 KiB of every destination row (on
 * PoCL, f32 4096 x 4096: 3.5 ms against 6.2 with 32 x 32 blocks,
 * bench/pocl_proto/transpose.py 4096), halved down to 32
 * elements while that leaves fewer than four blocks a compute unit.
 */
static uint64_t
blocked_run(const kiln_context *ctx, kiln_dtype dtype, uint64_t ea, uint64_t eb, uint64_t batch)
{
  uint64_t btb = 1024 / kiln_dtype_size(dtype), cu = ctx->info.compute_units;
  uint64_t ablocks = (ea + 31) / 32;
  while (btb > 32 && ablocks * ((eb + btb - 1) / btb) * batch < 4 * (cu ? cu : 1))
    btb /= 2;
  return btb < 32 ? 32 : btb;
}

/*
 * Whether permute_blocked_nt stores the n-element output: KILN__NT_STORE_MIN_BYTES and more
 * (as kiln_copy), elements of 4 or 8 bytes
 * (8 of them fill 32 or 64 bytes), and every 8-element destination line aligned to its
 * size, which a non-temporal vector store requires. PoCL, 4096 x 4096 f64: 6.7 against
 * 8.9 ms with plain stores (bench/pocl_proto/transpose.py 4096 f64).
 */
static int
blocked_nt(kiln_dtype dtype, const struct remap *r, uint64_t doff, uint64_t n)
{
  size_t esz = kiln_dtype_size(dtype);
  if ((esz != 4 && esz != 8) || n * esz < KILN__NT_STORE_MIN_BYTES || doff % 8 != 0)
    return 0;
  for (size_t k = 0; k + 1 < r->ndim; k++) /* every axis but b, whose stride is 1 */
    if (r->p.dstride[k] % 8 != 0)
      return 0;
  return 1;
}

/*
 * Through tiles when some axis a is contiguous in the source while the
 * innermost axis b is contiguous in the destination, both long enough to
 * fill a tile reasonably (>= 8): then plain element mapping would read or
 * write with a stride. GPUs stage 32x32 tiles in local memory
 * (permute_tiled); CPU devices move 32 x blocked_run blocks per work-item as
 * 8x8 register transposes (permute_blocked: PoCL runs a group's work-items one
 * after another, so local memory and barriers only cost there; measured on
 * PoCL under load, 2048x2048 f32: 3.3x the tiled kernel's speed with 32x32 blocks).
 * Enqueues one of them and sets *done.
 */
static kiln_status
try_tiled(const char *op, kiln_context *ctx, kiln_dtype dtype, const kiln_tensor *src,
          kiln_tensor *dst, const struct remap *r, int *done)
{
  *done = 0;
  if (r->ndim < 2 || !plan_affine(r))
    return KILN_OK;
  size_t b = r->ndim - 1, a = SIZE_MAX;
  for (size_t k = 0; k < b; k++)
    if (r->p.sstride[k] == 1)
      a = k;
  if (a == SIZE_MAX || r->p.dstride[b] != 1 || r->p.extent[a] < 8 || r->p.extent[b] < 8)
    return KILN_OK;
  struct tile_batch bp;
  memset(&bp, 0, sizeof bp);
  uint32_t nb = 0;
  uint64_t batch = 1;
  for (size_t k = 0; k < b; k++) {
    if (k == a)
      continue;
    bp.extent[nb] = r->p.extent[k];
    bp.sstride[nb] = r->p.sstride[k];
    bp.dstride[nb] = r->p.dstride[k];
    batch *= r->p.extent[k];
    nb++;
  }
  cl_kernel k;
  int cpu = !ctx->info.is_gpu;
  uint64_t ea = r->p.extent[a], eb = r->p.extent[b];
  uint64_t btb = cpu ? blocked_run(ctx, dtype, ea, eb, batch) : 32;
  uint64_t doff = kiln__ops_elem_offset(dst) + (uint64_t)r->doff;
  const char *kname = "permute_tiled";
  if (cpu)
    kname = blocked_nt(dtype, r, doff, ea * eb * batch) ? "permute_blocked_nt" : "permute_blocked";
  KILN_TRY(get_kernel(op, ctx, dtype, kname, &k));
  size_t maxwg = 0;
  if (!cpu && (clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof maxwg,
                                        &maxwg, NULL) != CL_SUCCESS ||
               maxwg < 256))
    return KILN_OK; /* the generic kernel does it */
  kiln__args ar = kiln__args_begin(op, k);
  kiln__args_mem(&ar, src->mem);
  kiln__args_u64(&ar, kiln__ops_elem_offset(src) + (uint64_t)r->soff);
  kiln__args_mem(&ar, dst->mem);
  kiln__args_u64(&ar, doff);
  kiln__args_u64(&ar, ea);
  kiln__args_u64(&ar, eb);
  kiln__args_i64(&ar, r->p.sstride[b]);
  kiln__args_i64(&ar, r->p.dstride[a]);
  kiln__args_u64(&ar, batch);
  kiln__args_u32(&ar, nb);
  kiln__args_raw(&ar, sizeof bp, &bp);
  if (cpu)
    kiln__args_u64(&ar, btb);
  KILN_TRY(ar.status);
  uint64_t g2 = batch < 65535 ? batch : 65535;
  if (kiln__launch_max_groups && g2 > kiln__launch_max_groups)
    g2 = kiln__launch_max_groups; /* test hook: make the batch loop run */
  if (cpu) {
    /* One 32 x btb block per work-item in groups of 8 along a (one local shape: a PoCL
     * compile each); blocks past the edge return at once. */
    size_t local[3] = {8, 1, 1};
    size_t global[3] = {(size_t)((ea + 255) / 256 * 8), (size_t)((eb + btb - 1) / btb), (size_t)g2};
    KILN_TRY(kiln__enqueue_kernel(op, ctx, k, 3, global, local));
  } else {
    size_t local[3] = {32, 8, 1};
    size_t global[3] = {(size_t)((ea + 31) / 32 * 32), (size_t)((eb + 31) / 32 * 8), (size_t)g2};
    KILN_TRY(kiln__enqueue_kernel(op, ctx, k, 3, global, local));
  }
  *done = 1;
  return KILN_OK;
}

/*
 * CPU devices, an affine plan whose innermost dimension is contiguous on both sides
 * (permute (0, 2, 1, 3), slices): remap_runs, each work-item copying `per` consecutive runs
 * of e0 elements, about 4096 elements in all, or fewer runs where that leaves fewer than
 * 16 work-items a compute unit. PoCL, [1024, 64, 32, 32] f32 permuted (0, 2, 1, 3): 111 ms
 * with one work-item a run dividing its coordinates (remap_affine32), 18.4 with this
 * (bench/bench_layout --only permute; 84% of an 8192 x 8192 copy's time).
 */
static kiln_status
remap_runs(const char *op, kiln_context *ctx, kiln_dtype dtype, const kiln_tensor *src,
           kiln_tensor *dst, const struct remap *r, uint64_t rows, uint64_t e0)
{
  cl_kernel k;
  KILN_TRY(get_kernel(op, ctx, dtype, "remap_runs", &k));
  uint64_t per = e0 >= 4096 ? 1 : 4096 / e0, cu = ctx->info.compute_units;
  while (per > 1 && (rows + per - 1) / per < 16 * (cu ? cu : 1))
    per /= 2;
  kiln__args a = kiln__args_begin(op, k);
  kiln__args_mem(&a, src->mem);
  kiln__args_u64(&a, kiln__ops_elem_offset(src) + (uint64_t)r->soff);
  kiln__args_mem(&a, dst->mem);
  kiln__args_u64(&a, kiln__ops_elem_offset(dst) + (uint64_t)r->doff);
  kiln__args_u64(&a, rows);
  kiln__args_u64(&a, per);
  kiln__args_u32(&a, (uint32_t)r->ndim);
  kiln__args_raw(&a, sizeof r->p, &r->p);
  KILN_TRY(a.status);
  return kiln__launch_1d(op, ctx, k, (rows + per - 1) / per, 0);
}

/* Nonzero when every source and destination offset of the affine plan r fits 31 bits. */
static int
plan_fits_32(const struct remap *r, uint64_t n)
{
  if (n >= ((uint64_t)1 << 31) || r->soff < 0 || r->doff < 0)
    return 0;
  uint64_t smax = 0, dmax = 0;
  for (size_t k = 0; k < r->ndim; k++) {
    uint64_t e = r->p.extent[k] - 1;
    uint64_t ss = (uint64_t)(r->p.sstride[k] < 0 ? -r->p.sstride[k] : r->p.sstride[k]);
    uint64_t ds = (uint64_t)(r->p.dstride[k] < 0 ? -r->p.dstride[k] : r->p.dstride[k]);
    if (ss > ((uint64_t)1 << 31) || ds > ((uint64_t)1 << 31) || e > ((uint64_t)1 << 31))
      return 0;
    smax += e * ss;
    dmax += e * ds;
  }
  /* Relative offsets within the kernel stay below 2^31 in magnitude. */
  return smax < ((uint64_t)1 << 31) && dmax < ((uint64_t)1 << 31);
}

/*
 * Runs a remap from src to dst (ctx->lock held). fill is the constant-pad
 * value in dst's dtype (may be NULL when no dimension pads with a constant).
 */
static kiln_status
remap_run(const char *op, kiln_context *ctx, const kiln_tensor *src, kiln_tensor *dst,
          struct remap *r, const void *fill)
{
  KILN__ASSERT_LOCKED(ctx);
  uint64_t n = remap_numel(r);
  if (n == 0)
    return KILN_OK;
  /* Every kernel here but kron only moves elements: one program per element size. */
  kiln_dtype dtype = kiln__ops_move_dtype(dst->dtype);
  size_t esz = kiln_dtype_size(dtype);
  remap_simplify(r);
  if (r->ndim == 0 ||
      (r->ndim == 1 && r->p.mode[0] == RM_AFFINE && r->p.sstride[0] == 1 && r->p.dstride[0] == 1)) {
    cl_int err =
        clEnqueueCopyBuffer(ctx->queue, src->mem, dst->mem, src->offset + (uint64_t)r->soff * esz,
                            dst->offset + (uint64_t)r->doff * esz, n * esz, 0, NULL, NULL);
    return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "clEnqueueCopyBuffer");
  }
  int done;
  KILN_TRY(try_tiled(op, ctx, dtype, src, dst, r, &done));
  if (done)
    return KILN_OK;
  uint64_t e0 = r->p.extent[r->ndim - 1], e1 = r->ndim >= 2 ? r->p.extent[r->ndim - 2] : 1;
  if (!ctx->info.is_gpu && plan_affine(r) && r->p.sstride[r->ndim - 1] == 1 &&
      r->p.dstride[r->ndim - 1] == 1)
    return remap_runs(op, ctx, dtype, src, dst, r, n / e0, e0);
  int fast = plan_affine(r) && plan_fits_32(r, n);
  cl_kernel k;
  KILN_TRY(get_kernel(op, ctx, dtype, fast ? "remap_affine32" : "remap", &k));
  unsigned char zero[sizeof(kiln_complex128)] = {0};
  kiln__args a = kiln__args_begin(op, k);
  kiln__args_mem(&a, src->mem);
  kiln__args_u64(&a, kiln__ops_elem_offset(src) + (uint64_t)r->soff);
  kiln__args_mem(&a, dst->mem);
  kiln__args_u64(&a, kiln__ops_elem_offset(dst) + (uint64_t)r->doff);
  uint64_t rows = n / e0 / e1;
  kiln__args_u64(&a, rows);
  kiln__args_u32(&a, (uint32_t)r->ndim);
  kiln__args_raw(&a, sizeof r->p, &r->p);
  if (!fast)
    kiln__args_raw(&a, esz, fill ? fill : zero);
  KILN_TRY(a.status);
  return kiln__launch_3d(op, ctx, k, e0, e1, rows);
}

static kiln_status
check_common(const char *op, kiln_context *ctx, const kiln_tensor *x, const void *out)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  return kiln__tensor_check(op, x, ctx);
}

static int64_t
shape_numel(const kiln__shape *s)
{
  int64_t n = 1;
  for (size_t i = 0; i < s->ndim; i++)
    n *= s->dims[i];
  return n;
}

/* Makes a checked result shape from dims (sizes may overflow: kiln__shape_make says so). */
static kiln_status
make_shape(const char *op, size_t ndim, const int64_t *dims, kiln_dtype dtype, kiln__shape *out)
{
  /* dims may point into *out, which kiln__shape_make clears first. */
  int64_t copy[KILN_MAX_DIMS] = {0};
  if (dims && ndim <= KILN_MAX_DIMS)
    memcpy(copy, dims, ndim * sizeof *copy);
  return kiln__shape_make(op, ndim, dims ? copy : NULL, kiln_dtype_size(dtype), out, NULL, NULL);
}

/* ---- reshape ---- */

kiln_status
kiln_reshape(kiln_context *ctx, const kiln_tensor *x, size_t ndim, const int64_t *shape,
             kiln_tensor **out)
{
  static const char op[] = "kiln_reshape";
  KILN_TRY(check_common(op, ctx, x, out));
  KILN_RETURN_IF(ndim > KILN_MAX_DIMS, KILN_ERR_INVALID_ARGUMENT, op,
                 "ndim %zu exceeds the maximum of %d", ndim, KILN_MAX_DIMS);
  KILN_RETURN_IF(ndim && !shape, KILN_ERR_INVALID_ARGUMENT, op, "shape is NULL with ndim %zu",
                 ndim);
  int64_t dims[KILN_MAX_DIMS];
  size_t infer = SIZE_MAX;
  uint64_t known = 1;
  int known_zero = 0;
  for (size_t i = 0; i < ndim; i++) {
    dims[i] = shape[i];
    if (shape[i] == -1) {
      KILN_RETURN_IF(infer != SIZE_MAX, KILN_ERR_SHAPE, op, "more than one dimension is -1");
      infer = i;
      continue;
    }
    KILN_RETURN_IF(shape[i] < 0, KILN_ERR_SHAPE, op, "dimension %zu is negative (%lld)", i,
                   (long long)shape[i]);
    if (shape[i] == 0)
      known_zero = 1;
    else if (known <= (uint64_t)INT64_MAX / (uint64_t)shape[i])
      known *= (uint64_t)shape[i];
    else
      known = UINT64_MAX;
  }
  char a[160], b[160];
  if (infer != SIZE_MAX) {
    KILN_RETURN_IF(known_zero, KILN_ERR_SHAPE, op,
                   "cannot infer the -1 dimension when another dimension is 0");
    KILN_RETURN_IF(x->numel % known != 0, KILN_ERR_SHAPE, op,
                   "cannot reshape %s (%llu elements) with a -1 over %llu",
                   kiln__shape_format(&x->shape, a, sizeof a), (unsigned long long)x->numel,
                   (unsigned long long)known);
    dims[infer] = (int64_t)(x->numel / known);
  }
  kiln__shape s;
  uint64_t numel;
  KILN_TRY(kiln__shape_make(op, ndim, dims, kiln_dtype_size(x->dtype), &s, &numel, NULL));
  if (numel != x->numel)
    return kiln__fail(KILN_ERR_SHAPE, op, 0, "cannot reshape %s (%llu elements) to %s",
                      kiln__shape_format(&x->shape, a, sizeof a), (unsigned long long)x->numel,
                      kiln__shape_format(&s, b, sizeof b));
  if (!*out)
    return kiln__tensor_view(op, (kiln_tensor *)x, 0, &s, out);
  int made;
  KILN_TRY(kiln__output_prepare(op, ctx, x->dtype, &s, out, &made));
  kiln__ctx_lock(ctx);
  kiln_status st = kiln__ops_copy(op, ctx, x, *out);
  kiln__ctx_unlock(ctx);
  return st;
}

/* ---- permute, transpose, flip, roll, broadcast_to, tile, repeat, pad: one source, one remap ----
 */

/* Runs r from x into the output of shape oshape, with the aliasing and output conventions. */
static kiln_status
remap_op(const char *op, kiln_context *ctx, const kiln_tensor *x, const kiln__shape *oshape,
         struct remap *r, const void *fill, kiln_tensor **out)
{
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, oshape, out, &x, 1, 0, &t));
  kiln__ctx_lock(ctx);
  kiln_status s = remap_run(op, ctx, x, t.dst, r, fill);
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_permute(kiln_context *ctx, const kiln_tensor *x, const int64_t *perm, size_t nperm,
             kiln_tensor **out)
{
  static const char op[] = "kiln_permute";
  KILN_TRY(check_common(op, ctx, x, out));
  size_t nd = x->shape.ndim;
  KILN_RETURN_IF(nperm != nd, KILN_ERR_INVALID_ARGUMENT, op,
                 "perm has %zu entries for a tensor of %zu dimensions", nperm, nd);
  KILN_RETURN_IF(nd && !perm, KILN_ERR_INVALID_ARGUMENT, op, "perm is NULL");
  size_t p[KILN_MAX_DIMS];
  int seen[KILN_MAX_DIMS] = {0};
  for (size_t i = 0; i < nd; i++) {
    KILN_TRY(kiln__ops_axis(op, perm[i], nd, &p[i]));
    KILN_RETURN_IF(seen[p[i]], KILN_ERR_INVALID_ARGUMENT, op, "axis %zu appears twice in perm",
                   p[i]);
    seen[p[i]] = 1;
  }
  int64_t xs[KILN_MAX_DIMS], os[KILN_MAX_DIMS];
  kiln__shape oshape = x->shape;
  for (size_t i = 0; i < nd; i++)
    oshape.dims[i] = x->shape.dims[p[i]];
  kiln__ops_strides(&x->shape, xs);
  kiln__ops_strides(&oshape, os);
  struct remap r;
  remap_init(&r, nd);
  for (size_t i = 0; i < nd; i++)
    remap_dim(&r, i, oshape.dims[i], xs[p[i]], os[i]);
  return remap_op(op, ctx, x, &oshape, &r, NULL, out);
}

kiln_status
kiln_transpose(kiln_context *ctx, const kiln_tensor *x, kiln_tensor **out)
{
  static const char op[] = "kiln_transpose";
  KILN_TRY(check_common(op, ctx, x, out));
  size_t nd = x->shape.ndim;
  KILN_RETURN_IF(nd < 2, KILN_ERR_SHAPE, op,
                 "needs at least 2 dimensions, x has %zu (use kiln_reshape for vectors)", nd);
  int64_t perm[KILN_MAX_DIMS];
  for (size_t i = 0; i < nd; i++)
    perm[i] = (int64_t)i;
  perm[nd - 2] = (int64_t)nd - 1;
  perm[nd - 1] = (int64_t)nd - 2;
  return kiln_permute(ctx, x, perm, nd, out);
}

kiln_status
kiln_flip(kiln_context *ctx, const kiln_tensor *x, const int64_t *axes, size_t naxes,
          kiln_tensor **out)
{
  static const char op[] = "kiln_flip";
  KILN_TRY(check_common(op, ctx, x, out));
  size_t nd = x->shape.ndim;
  int flip[KILN_MAX_DIMS] = {0};
  if (!axes && naxes == 0) {
    for (size_t i = 0; i < nd; i++)
      flip[i] = 1;
  } else {
    KILN_RETURN_IF(!axes, KILN_ERR_INVALID_ARGUMENT, op, "axes is NULL with naxes %zu", naxes);
    for (size_t i = 0; i < naxes; i++) {
      size_t a;
      KILN_TRY(kiln__ops_axis(op, axes[i], nd, &a));
      KILN_RETURN_IF(flip[a], KILN_ERR_INVALID_ARGUMENT, op, "axis %zu appears twice", a);
      flip[a] = 1;
    }
  }
  int64_t xs[KILN_MAX_DIMS];
  kiln__ops_strides(&x->shape, xs);
  struct remap r;
  remap_init(&r, nd);
  for (size_t i = 0; i < nd; i++) {
    int64_t e = x->shape.dims[i];
    remap_dim(&r, i, e, flip[i] ? -xs[i] : xs[i], xs[i]);
    if (flip[i] && e > 0)
      r.soff += (e - 1) * xs[i];
  }
  return remap_op(op, ctx, x, &x->shape, &r, NULL, out);
}

kiln_status
kiln_roll(kiln_context *ctx, const kiln_tensor *x, const int64_t *shifts, const int64_t *axes,
          size_t n, kiln_tensor **out)
{
  static const char op[] = "kiln_roll";
  KILN_TRY(check_common(op, ctx, x, out));
  KILN_RETURN_IF(!shifts, KILN_ERR_INVALID_ARGUMENT, op, "shifts is NULL");
  size_t nd = x->shape.ndim;
  struct remap r;
  if (!axes) {
    KILN_RETURN_IF(n != 1, KILN_ERR_INVALID_ARGUMENT, op,
                   "a flattened roll (axes NULL) takes exactly one shift, got %zu", n);
    int64_t len = (int64_t)x->numel;
    remap_init(&r, 1);
    remap_dim(&r, 0, len, 1, 1);
    if (len > 0) {
      int64_t sh = shifts[0] % len;
      sh = sh < 0 ? sh + len : sh;
      remap_map(&r, 0, RM_ROLL, (len - sh) % len, len);
    }
    return remap_op(op, ctx, x, &x->shape, &r, NULL, out);
  }
  int64_t total[KILN_MAX_DIMS] = {0};
  for (size_t i = 0; i < n; i++) {
    size_t a;
    KILN_TRY(kiln__ops_axis(op, axes[i], nd, &a));
    int64_t len = x->shape.dims[a];
    if (len > 0)
      total[a] = (total[a] + shifts[i] % len) % len; /* |values| < len: no overflow */
  }
  int64_t xs[KILN_MAX_DIMS];
  kiln__ops_strides(&x->shape, xs);
  remap_init(&r, nd);
  for (size_t i = 0; i < nd; i++) {
    int64_t len = x->shape.dims[i];
    remap_dim(&r, i, len, xs[i], xs[i]);
    int64_t sh = total[i] < 0 ? total[i] + len : total[i];
    if (len > 0 && sh != 0)
      remap_map(&r, i, RM_ROLL, len - sh, len);
  }
  return remap_op(op, ctx, x, &x->shape, &r, NULL, out);
}

kiln_status
kiln_broadcast_to(kiln_context *ctx, const kiln_tensor *x, size_t ndim, const int64_t *shape,
                  kiln_tensor **out)
{
  static const char op[] = "kiln_broadcast_to";
  KILN_TRY(check_common(op, ctx, x, out));
  kiln__shape target, joint;
  KILN_TRY(make_shape(op, ndim, shape, x->dtype, &target));
  char a[160], b[160];
  if (kiln__shape_broadcast(op, &x->shape, &target, &joint) != KILN_OK ||
      !kiln__shape_equal(&joint, &target))
    return kiln__fail(KILN_ERR_SHAPE, op, 0, "%s does not broadcast to %s",
                      kiln__shape_format(&x->shape, a, sizeof a),
                      kiln__shape_format(&target, b, sizeof b));
  int64_t bs[KILN_MAX_DIMS], os[KILN_MAX_DIMS];
  kiln__shape_broadcast_strides(&x->shape, &target, bs);
  kiln__ops_strides(&target, os);
  struct remap r;
  remap_init(&r, ndim);
  for (size_t i = 0; i < ndim; i++)
    remap_dim(&r, i, target.dims[i], bs[i], os[i]);
  return remap_op(op, ctx, x, &target, &r, NULL, out);
}

kiln_status
kiln_tile(kiln_context *ctx, const kiln_tensor *x, const int64_t *reps, size_t nreps,
          kiln_tensor **out)
{
  static const char op[] = "kiln_tile";
  KILN_TRY(check_common(op, ctx, x, out));
  KILN_RETURN_IF(nreps && !reps, KILN_ERR_INVALID_ARGUMENT, op, "reps is NULL with nreps %zu",
                 nreps);
  size_t xd = x->shape.ndim;
  size_t nd = nreps > xd ? nreps : xd;
  KILN_RETURN_IF(nd > KILN_MAX_DIMS, KILN_ERR_INVALID_ARGUMENT, op,
                 "%zu repetitions exceed the maximum rank %d", nreps, KILN_MAX_DIMS);
  int64_t in[KILN_MAX_DIMS], rp[KILN_MAX_DIMS], od[KILN_MAX_DIMS];
  for (size_t i = 0; i < nd; i++) {
    in[i] = i + xd >= nd ? x->shape.dims[i + xd - nd] : 1;
    rp[i] = i + nreps >= nd ? reps[i + nreps - nd] : 1;
    KILN_RETURN_IF(rp[i] < 0, KILN_ERR_INVALID_ARGUMENT, op, "repetition %lld is negative",
                   (long long)rp[i]);
    KILN_RETURN_IF(in[i] && rp[i] > INT64_MAX / in[i], KILN_ERR_OVERFLOW, op,
                   "tiled axis length overflows");
    od[i] = in[i] * rp[i];
  }
  kiln__shape oshape, ishape;
  KILN_TRY(make_shape(op, nd, od, x->dtype, &oshape));
  KILN_TRY(make_shape(op, nd, in, x->dtype, &ishape));
  int64_t xs[KILN_MAX_DIMS], os[KILN_MAX_DIMS];
  kiln__ops_strides(&ishape, xs);
  kiln__ops_strides(&oshape, os);
  struct remap r;
  remap_init(&r, nd);
  for (size_t i = 0; i < nd; i++) {
    remap_dim(&r, i, od[i], xs[i], os[i]);
    if (rp[i] != 1 && in[i] > 0)
      remap_map(&r, i, RM_MOD, 0, in[i]);
  }
  return remap_op(op, ctx, x, &oshape, &r, NULL, out);
}

kiln_status
kiln_repeat(kiln_context *ctx, const kiln_tensor *x, int64_t repeats, int64_t axis,
            kiln_tensor **out)
{
  static const char op[] = "kiln_repeat";
  KILN_TRY(check_common(op, ctx, x, out));
  size_t ax;
  KILN_TRY(kiln__ops_axis(op, axis, x->shape.ndim, &ax));
  KILN_RETURN_IF(repeats < 0, KILN_ERR_INVALID_ARGUMENT, op, "repeats %lld is negative",
                 (long long)repeats);
  int64_t len = x->shape.dims[ax];
  KILN_RETURN_IF(len && repeats > INT64_MAX / len, KILN_ERR_OVERFLOW, op,
                 "repeated axis length overflows");
  kiln__shape oshape = x->shape;
  oshape.dims[ax] = len * repeats;
  KILN_TRY(make_shape(op, oshape.ndim, oshape.dims, x->dtype, &oshape));
  int64_t xs[KILN_MAX_DIMS], os[KILN_MAX_DIMS];
  kiln__ops_strides(&x->shape, xs);
  kiln__ops_strides(&oshape, os);
  struct remap r;
  remap_init(&r, oshape.ndim);
  for (size_t i = 0; i < oshape.ndim; i++)
    remap_dim(&r, i, oshape.dims[i], xs[i], os[i]);
  if (repeats > 1)
    remap_map(&r, ax, RM_DIV, repeats, len);
  return remap_op(op, ctx, x, &oshape, &r, NULL, out);
}

kiln_status
kiln_pad(kiln_context *ctx, const kiln_tensor *x, const int64_t *before, const int64_t *after,
         kiln_pad_mode mode, kiln_scalar value, kiln_tensor **out)
{
  static const char op[] = "kiln_pad";
  KILN_TRY(check_common(op, ctx, x, out));
  size_t nd = x->shape.ndim;
  KILN_RETURN_IF(nd && (!before || !after), KILN_ERR_INVALID_ARGUMENT, op,
                 "before or after is NULL");
  KILN_RETURN_IF((unsigned)mode > KILN_PAD_SYMMETRIC, KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown pad mode %d", (int)mode);
  static const enum remap_mode modes[] = {RM_PADC, RM_EDGE, RM_REFLECT, RM_SYMM};
  static const char *const names[] = {"constant", "edge", "reflect", "symmetric"};
  kiln__shape oshape = x->shape;
  for (size_t i = 0; i < nd; i++) {
    KILN_RETURN_IF(before[i] < 0 || after[i] < 0, KILN_ERR_INVALID_ARGUMENT, op,
                   "pad widths of axis %zu are negative (%lld, %lld)", i, (long long)before[i],
                   (long long)after[i]);
    int64_t len = x->shape.dims[i];
    KILN_RETURN_IF(before[i] > INT64_MAX - len || after[i] > INT64_MAX - len - before[i],
                   KILN_ERR_OVERFLOW, op, "padded length of axis %zu overflows", i);
    KILN_RETURN_IF(len == 0 && (before[i] || after[i]) && mode != KILN_PAD_CONSTANT, KILN_ERR_SHAPE,
                   op, "%s padding cannot extend the empty axis %zu", names[mode], i);
    oshape.dims[i] = len + before[i] + after[i];
  }
  KILN_TRY(make_shape(op, nd, oshape.dims, x->dtype, &oshape));
  int64_t xs[KILN_MAX_DIMS], os[KILN_MAX_DIMS];
  kiln__ops_strides(&x->shape, xs);
  kiln__ops_strides(&oshape, os);
  struct remap r;
  remap_init(&r, nd);
  for (size_t i = 0; i < nd; i++) {
    remap_dim(&r, i, oshape.dims[i], xs[i], os[i]);
    if (before[i] || after[i])
      remap_map(&r, i, modes[mode], before[i], x->shape.dims[i]);
  }
  unsigned char fill[sizeof(kiln_complex128)];
  kiln__scalar_to_bytes(value, x->dtype, fill);
  return remap_op(op, ctx, x, &oshape, &r, fill, out);
}

/* ---- slices ---- */

/* Python slice.indices(): first index, count and step of range rg over an axis of length n. */
static kiln_status
range_resolve(const char *op, size_t axis, kiln_range rg, int64_t n, int64_t *first, int64_t *count)
{
  KILN_RETURN_IF(rg.step == 0, KILN_ERR_INVALID_ARGUMENT, op, "slice step of axis %zu is 0", axis);
  KILN_RETURN_IF(rg.step == INT64_MIN, KILN_ERR_INVALID_ARGUMENT, op,
                 "slice step of axis %zu is out of range", axis);
  int64_t start, stop;
  if (rg.step > 0) {
    start = rg.start == KILN_SLICE_OMIT ? 0 : rg.start;
    stop = rg.stop == KILN_SLICE_OMIT ? n : rg.stop;
    if (start < 0)
      start = start + n < 0 ? 0 : start + n;
    else if (start > n)
      start = n;
    if (stop < 0)
      stop = stop + n < 0 ? 0 : stop + n;
    else if (stop > n)
      stop = n;
    *count = stop > start ? (stop - start - 1) / rg.step + 1 : 0;
  } else {
    start = rg.start == KILN_SLICE_OMIT ? n - 1 : rg.start;
    stop = rg.stop == KILN_SLICE_OMIT ? -1 : rg.stop;
    if (rg.start != KILN_SLICE_OMIT) {
      if (start < 0)
        start = start + n < 0 ? -1 : start + n;
      else if (start >= n)
        start = n - 1;
    }
    if (rg.stop != KILN_SLICE_OMIT) {
      if (stop < 0)
        stop = stop + n < 0 ? -1 : stop + n;
      else if (stop >= n)
        stop = n - 1;
    }
    /* -(step) may not overflow: step > INT64_MIN was checked. */
    *count = start > stop ? (start - stop - 1) / -rg.step + 1 : 0;
  }
  *first = start;
  return KILN_OK;
}

/* Shape of x[ranges] and the remap side (offset, strides) that walks it in x. */
static kiln_status
slice_plan(const char *op, const kiln_tensor *x, const kiln_range *ranges, size_t nranges,
           kiln__shape *sshape, int64_t *off, int64_t strides[KILN_MAX_DIMS])
{
  size_t nd = x->shape.ndim;
  KILN_RETURN_IF(nranges > nd, KILN_ERR_INVALID_ARGUMENT, op,
                 "%zu ranges for a tensor of %zu dimensions", nranges, nd);
  KILN_RETURN_IF(nranges && !ranges, KILN_ERR_INVALID_ARGUMENT, op,
                 "ranges is NULL with nranges %zu", nranges);
  int64_t xs[KILN_MAX_DIMS];
  kiln__ops_strides(&x->shape, xs);
  *sshape = x->shape;
  *off = 0;
  for (size_t i = 0; i < nd; i++) {
    kiln_range rg = i < nranges ? ranges[i] : kiln_range_all();
    int64_t first = 0, count = 0;
    KILN_TRY(range_resolve(op, i, rg, x->shape.dims[i], &first, &count));
    sshape->dims[i] = count;
    /* With count > 1, |step| * (count - 1) < n, so the product fits. */
    strides[i] = count > 1 ? rg.step * xs[i] : xs[i];
    if (count > 0)
      *off += first * xs[i];
  }
  return KILN_OK;
}

kiln_status
kiln_slice(kiln_context *ctx, const kiln_tensor *x, const kiln_range *ranges, size_t nranges,
           kiln_tensor **out)
{
  static const char op[] = "kiln_slice";
  KILN_TRY(check_common(op, ctx, x, out));
  kiln__shape sshape;
  int64_t off, ss[KILN_MAX_DIMS], os[KILN_MAX_DIMS];
  KILN_TRY(slice_plan(op, x, ranges, nranges, &sshape, &off, ss));
  kiln__ops_strides(&sshape, os);
  struct remap r;
  remap_init(&r, sshape.ndim);
  for (size_t i = 0; i < sshape.ndim; i++)
    remap_dim(&r, i, sshape.dims[i], ss[i], os[i]);
  r.soff = shape_numel(&sshape) ? off : 0;
  return remap_op(op, ctx, x, &sshape, &r, NULL, out);
}

kiln_status
kiln_slice_assign(kiln_context *ctx, kiln_tensor *x, const kiln_range *ranges, size_t nranges,
                  const kiln_tensor *values)
{
  static const char op[] = "kiln_slice_assign";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_TRY(kiln__tensor_check(op, values, ctx));
  KILN_RETURN_IF(values->dtype != x->dtype, KILN_ERR_DTYPE, op, "values are %s, the target is %s",
                 kiln_dtype_name(values->dtype), kiln_dtype_name(x->dtype));
  kiln__shape sshape, joint;
  int64_t off, ds[KILN_MAX_DIMS], vs[KILN_MAX_DIMS];
  KILN_TRY(slice_plan(op, x, ranges, nranges, &sshape, &off, ds));
  char a[160], b[160];
  if (values->shape.ndim > sshape.ndim ||
      kiln__shape_broadcast(op, &values->shape, &sshape, &joint) != KILN_OK ||
      !kiln__shape_equal(&joint, &sshape))
    return kiln__fail(KILN_ERR_SHAPE, op, 0, "values of shape %s do not broadcast to the slice %s",
                      kiln__shape_format(&values->shape, a, sizeof a),
                      kiln__shape_format(&sshape, b, sizeof b));
  if (!shape_numel(&sshape))
    return KILN_OK;
  kiln__shape_broadcast_strides(&values->shape, &sshape, vs);
  struct remap r;
  remap_init(&r, sshape.ndim);
  for (size_t i = 0; i < sshape.ndim; i++)
    remap_dim(&r, i, sshape.dims[i], vs[i], ds[i]);
  r.doff = off;
  kiln__ctx_lock(ctx);
  kiln_tensor *tmp = NULL;
  const kiln_tensor *src = values;
  kiln_status s = KILN_OK;
  if (kiln__ops_alias(x, values)) {
    /* Overlapping read and write: snapshot values first. */
    s = kiln__tensor_new_locked(op, ctx, values->dtype, &values->shape, &tmp);
    if (s == KILN_OK)
      s = kiln__ops_copy(op, ctx, values, tmp);
    src = tmp;
  }
  if (s == KILN_OK)
    s = remap_run(op, ctx, src, x, &r, NULL);
  kiln_tensor_release(tmp);
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---- concat, stack, split ---- */

static kiln_status
check_inputs(const char *op, kiln_context *ctx, const kiln_tensor *const *inputs, size_t n)
{
  KILN_RETURN_IF(!inputs, KILN_ERR_INVALID_ARGUMENT, op, "inputs is NULL");
  KILN_RETURN_IF(n == 0, KILN_ERR_INVALID_ARGUMENT, op, "needs at least one input");
  for (size_t i = 0; i < n; i++) {
    KILN_TRY(kiln__tensor_check(op, inputs[i], ctx));
    KILN_RETURN_IF(inputs[i]->dtype != inputs[0]->dtype, KILN_ERR_DTYPE, op,
                   "input %zu is %s, input 0 is %s", i, kiln_dtype_name(inputs[i]->dtype),
                   kiln_dtype_name(inputs[0]->dtype));
  }
  return KILN_OK;
}

/*
 * Copies each input, viewed with shape vshape[i] (its own shape, or with a
 * unit axis inserted for stack), into the output at consecutive positions
 * along axis.
 */
static kiln_status
join(const char *op, kiln_context *ctx, const kiln_tensor *const *inputs, size_t n,
     const kiln__shape *vshapes, size_t axis, const kiln__shape *oshape, kiln_tensor **out)
{
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, inputs[0]->dtype, oshape, out, inputs, n, 0, &t));
  int64_t os[KILN_MAX_DIMS];
  kiln__ops_strides(oshape, os);
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  int64_t pos = 0;
  for (size_t i = 0; i < n && s == KILN_OK; i++) {
    const kiln__shape *vs = &vshapes[i];
    int64_t xs[KILN_MAX_DIMS];
    kiln__ops_strides(vs, xs);
    struct remap r;
    remap_init(&r, vs->ndim);
    for (size_t d = 0; d < vs->ndim; d++)
      remap_dim(&r, d, vs->dims[d], xs[d], os[d]);
    r.doff = pos * os[axis];
    pos += vs->dims[axis];
    s = remap_run(op, ctx, inputs[i], t.dst, &r, NULL);
  }
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_concat(kiln_context *ctx, const kiln_tensor *const *inputs, size_t n, int64_t axis,
            kiln_tensor **out)
{
  static const char op[] = "kiln_concat";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(check_inputs(op, ctx, inputs, n));
  const kiln_tensor *x0 = inputs[0];
  KILN_RETURN_IF(x0->shape.ndim == 0, KILN_ERR_SHAPE, op,
                 "0-d tensors cannot be concatenated (use kiln_stack)");
  size_t ax;
  KILN_TRY(kiln__ops_axis(op, axis, x0->shape.ndim, &ax));
  kiln__shape oshape = x0->shape;
  kiln__shape *vshapes = calloc(n, sizeof *vshapes);
  KILN_RETURN_IF(!vshapes, KILN_ERR_HOST_MEMORY, op, "cannot allocate %zu shapes", n);
  int64_t total = 0;
  for (size_t i = 0; i < n; i++) {
    const kiln__shape *si = &inputs[i]->shape;
    int ok = si->ndim == x0->shape.ndim;
    for (size_t d = 0; ok && d < si->ndim; d++)
      ok = d == ax || si->dims[d] == x0->shape.dims[d];
    if (!ok) {
      char a[160], b[160];
      free(vshapes);
      return kiln__fail(
          KILN_ERR_SHAPE, op, 0, "input %zu has shape %s, which does not match %s outside axis %zu",
          i, kiln__shape_format(si, a, sizeof a), kiln__shape_format(&x0->shape, b, sizeof b), ax);
    }
    if (si->dims[ax] > INT64_MAX - total) {
      free(vshapes);
      return kiln__fail(KILN_ERR_OVERFLOW, op, 0, "joined axis length overflows");
    }
    total += si->dims[ax];
    vshapes[i] = *si;
  }
  oshape.dims[ax] = total;
  kiln_status s = make_shape(op, oshape.ndim, oshape.dims, x0->dtype, &oshape);
  if (s == KILN_OK)
    s = join(op, ctx, inputs, n, vshapes, ax, &oshape, out);
  free(vshapes);
  return s;
}

kiln_status
kiln_stack(kiln_context *ctx, const kiln_tensor *const *inputs, size_t n, int64_t axis,
           kiln_tensor **out)
{
  static const char op[] = "kiln_stack";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(check_inputs(op, ctx, inputs, n));
  const kiln_tensor *x0 = inputs[0];
  size_t nd = x0->shape.ndim;
  KILN_RETURN_IF(nd + 1 > KILN_MAX_DIMS, KILN_ERR_INVALID_ARGUMENT, op,
                 "stacking rank-%zu tensors exceeds the maximum rank %d", nd, KILN_MAX_DIMS);
  size_t ax;
  KILN_TRY(kiln__ops_axis(op, axis, nd + 1, &ax));
  for (size_t i = 1; i < n; i++) {
    if (!kiln__shape_equal(&inputs[i]->shape, &x0->shape)) {
      char a[160], b[160];
      return kiln__fail(KILN_ERR_SHAPE, op, 0, "input %zu has shape %s, input 0 has %s", i,
                        kiln__shape_format(&inputs[i]->shape, a, sizeof a),
                        kiln__shape_format(&x0->shape, b, sizeof b));
    }
  }
  kiln__shape vshape = x0->shape;
  vshape.ndim = nd + 1;
  for (size_t d = nd + 1; d-- > 0;)
    vshape.dims[d] = d > ax ? x0->shape.dims[d - 1] : d == ax ? 1 : x0->shape.dims[d];
  KILN_RETURN_IF((uint64_t)n > (uint64_t)INT64_MAX, KILN_ERR_OVERFLOW, op, "too many inputs");
  kiln__shape oshape = vshape;
  oshape.dims[ax] = (int64_t)n;
  KILN_TRY(make_shape(op, oshape.ndim, oshape.dims, x0->dtype, &oshape));
  kiln__shape *vshapes = calloc(n, sizeof *vshapes);
  KILN_RETURN_IF(!vshapes, KILN_ERR_HOST_MEMORY, op, "cannot allocate %zu shapes", n);
  for (size_t i = 0; i < n; i++)
    vshapes[i] = vshape;
  kiln_status s = join(op, ctx, inputs, n, vshapes, ax, &oshape, out);
  free(vshapes);
  return s;
}

kiln_status
kiln_split(kiln_context *ctx, const kiln_tensor *x, int64_t axis, const int64_t *sizes, size_t n,
           kiln_tensor **outs)
{
  static const char op[] = "kiln_split";
  KILN_TRY(check_common(op, ctx, x, outs));
  KILN_RETURN_IF(!sizes || n == 0, KILN_ERR_INVALID_ARGUMENT, op,
                 "needs at least one piece size (sizes %s, n %zu)", sizes ? "given" : "NULL", n);
  size_t ax;
  KILN_TRY(kiln__ops_axis(op, axis, x->shape.ndim, &ax));
  int64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    KILN_RETURN_IF(sizes[i] < 0 || sizes[i] > x->shape.dims[ax] - sum, KILN_ERR_SHAPE, op,
                   "piece sizes do not add up to the axis length %lld (piece %zu is %lld)",
                   (long long)x->shape.dims[ax], i, (long long)sizes[i]);
    sum += sizes[i];
  }
  KILN_RETURN_IF(sum != x->shape.dims[ax], KILN_ERR_SHAPE, op,
                 "piece sizes add up to %lld, the axis has %lld", (long long)sum,
                 (long long)x->shape.dims[ax]);
  int64_t xs[KILN_MAX_DIMS];
  kiln__ops_strides(&x->shape, xs);
  int64_t pos = 0;
  size_t i;
  kiln_status s = KILN_OK;
  /* Pieces written one after another must not land on each other. */
  for (i = 0; i < n; i++)
    if (outs[i])
      KILN_TRY(kiln__tensor_check(op, outs[i], ctx));
  KILN_TRY(kiln__ops_outputs_disjoint(op, outs, NULL, n));
  int *made = calloc(n, sizeof *made);
  KILN_RETURN_IF(!made, KILN_ERR_HOST_MEMORY, op, "cannot allocate %zu flags", n);
  for (i = 0; i < n && s == KILN_OK; i++) {
    kiln__shape ps = x->shape;
    ps.dims[ax] = sizes[i];
    int64_t os[KILN_MAX_DIMS];
    kiln__ops_strides(&ps, os);
    struct remap r;
    remap_init(&r, ps.ndim);
    for (size_t d = 0; d < ps.ndim; d++)
      remap_dim(&r, d, ps.dims[d], xs[d], os[d]);
    r.soff = pos * xs[ax];
    pos += sizes[i];
    kiln__out_target t;
    s = kiln__ops_out_begin(op, ctx, x->dtype, &ps, &outs[i], &x, 1, 0, &t);
    if (s != KILN_OK)
      break;
    made[i] = t.made;
    t.made = 0; /* unwound below for every piece at once */
    kiln__ctx_lock(ctx);
    s = remap_run(op, ctx, x, t.dst, &r, NULL);
    s = kiln__ops_out_finish(op, ctx, &t, s);
    kiln__ctx_unlock(ctx);
  }
  if (s != KILN_OK)
    for (size_t j = 0; j < n; j++)
      kiln__output_discard(&outs[j], made[j]);
  free(made);
  return s;
}

/* ---- tril/triu, diag, kron ---- */

static kiln_status
tri(const char *op, kiln_context *ctx, const kiln_tensor *x, int64_t k, uint32_t upper,
    kiln_tensor **out)
{
  KILN_TRY(check_common(op, ctx, x, out));
  size_t nd = x->shape.ndim;
  KILN_RETURN_IF(nd < 2, KILN_ERR_SHAPE, op, "needs at least 2 dimensions, x has %zu", nd);
  /* Elementwise: safe in place over exactly x's bytes. */
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, &x->shape, out, &x, 1, 1, &t));
  kiln__ctx_lock(ctx);
  cl_kernel kern;
  kiln_status s = get_kernel(op, ctx, kiln__ops_move_dtype(x->dtype), "tri_mask", &kern);
  if (s == KILN_OK && x->numel) {
    kiln__args a = kiln__args_begin(op, kern);
    kiln__args_tensor(&a, x);
    kiln__args_tensor(&a, t.dst);
    kiln__args_u64(&a, x->numel);
    kiln__args_u64(&a, (uint64_t)x->shape.dims[nd - 2]);
    kiln__args_u64(&a, (uint64_t)x->shape.dims[nd - 1]);
    kiln__args_i64(&a, k);
    kiln__args_u32(&a, upper);
    s = a.status;
    if (s == KILN_OK)
      s = kiln__launch_1d(op, ctx, kern, x->numel, 0);
  }
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_tril(kiln_context *ctx, const kiln_tensor *x, int64_t k, kiln_tensor **out)
{
  return tri("kiln_tril", ctx, x, k, 0, out);
}

kiln_status
kiln_triu(kiln_context *ctx, const kiln_tensor *x, int64_t k, kiln_tensor **out)
{
  return tri("kiln_triu", ctx, x, k, 1, out);
}

kiln_status
kiln_diag(kiln_context *ctx, const kiln_tensor *x, int64_t k, kiln_tensor **out)
{
  static const char op[] = "kiln_diag";
  KILN_TRY(check_common(op, ctx, x, out));
  size_t nd = x->shape.ndim;
  KILN_RETURN_IF(nd != 1 && nd != 2, KILN_ERR_SHAPE, op,
                 "needs a 1-D or 2-D tensor, x has %zu dimensions", nd);
  KILN_RETURN_IF(k == INT64_MIN, KILN_ERR_INVALID_ARGUMENT, op, "diagonal offset out of range");
  int64_t ak = k < 0 ? -k : k;
  if (nd == 2) {
    int64_t rows = x->shape.dims[0], cols = x->shape.dims[1];
    int64_t len =
        k >= 0 ? (cols - k < rows ? cols - k : rows) : (rows + k < cols ? rows + k : cols);
    if (k >= 0 && k > cols)
      len = 0;
    if (k < 0 && ak > rows)
      len = 0;
    if (len < 0)
      len = 0;
    kiln__shape oshape;
    KILN_TRY(make_shape(op, 1, &len, x->dtype, &oshape));
    struct remap r;
    remap_init(&r, 1);
    remap_dim(&r, 0, len, cols + 1, 1);
    r.soff = len ? (k >= 0 ? k : ak * cols) : 0;
    return remap_op(op, ctx, x, &oshape, &r, NULL, out);
  }
  int64_t n = x->shape.dims[0];
  KILN_RETURN_IF(ak > INT64_MAX - n, KILN_ERR_OVERFLOW, op, "matrix size overflows");
  int64_t m = n + ak;
  int64_t dims[2] = {m, m};
  kiln__shape oshape;
  KILN_TRY(make_shape(op, 2, dims, x->dtype, &oshape));
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, &oshape, out, &x, 1, 0, &t));
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  if (t.dst->nbytes) {
    /* Every element is written: zeros first, then the diagonal. */
    unsigned char zero[sizeof(kiln_complex128)] = {0};
    cl_int err = clEnqueueFillBuffer(ctx->queue, t.dst->mem, zero, kiln_dtype_size(x->dtype),
                                     t.dst->offset, t.dst->nbytes, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      s = kiln__fail_cl(op, err, "clEnqueueFillBuffer");
  }
  if (s == KILN_OK) {
    struct remap r;
    remap_init(&r, 1);
    remap_dim(&r, 0, n, 1, m + 1);
    r.doff = k >= 0 ? k : ak * m;
    s = remap_run(op, ctx, x, t.dst, &r, NULL);
  }
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_kron(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b, kiln_tensor **out)
{
  static const char op[] = "kiln_kron";
  KILN_TRY(check_common(op, ctx, a, out));
  KILN_TRY(kiln__tensor_check(op, b, ctx));
  KILN_RETURN_IF(a->dtype != b->dtype, KILN_ERR_DTYPE, op, "inputs are %s and %s",
                 kiln_dtype_name(a->dtype), kiln_dtype_name(b->dtype));
  size_t nd = a->shape.ndim > b->shape.ndim ? a->shape.ndim : b->shape.ndim;
  int64_t ad[KILN_MAX_DIMS], bd[KILN_MAX_DIMS], od[KILN_MAX_DIMS];
  for (size_t i = 0; i < nd; i++) {
    ad[i] = i + a->shape.ndim >= nd ? a->shape.dims[i + a->shape.ndim - nd] : 1;
    bd[i] = i + b->shape.ndim >= nd ? b->shape.dims[i + b->shape.ndim - nd] : 1;
    KILN_RETURN_IF(ad[i] && bd[i] > INT64_MAX / ad[i], KILN_ERR_OVERFLOW, op,
                   "result axis %zu overflows", i);
    od[i] = ad[i] * bd[i];
  }
  kiln__shape oshape, as, bs;
  KILN_TRY(make_shape(op, nd, od, a->dtype, &oshape));
  KILN_TRY(make_shape(op, nd, ad, a->dtype, &as));
  KILN_TRY(make_shape(op, nd, bd, a->dtype, &bs));
  int64_t ast[KILN_MAX_DIMS], bst[KILN_MAX_DIMS];
  kiln__ops_strides(&as, ast);
  kiln__ops_strides(&bs, bst);
  struct kron_plan p;
  memset(&p, 0, sizeof p);
  for (size_t i = 0; i < nd; i++) {
    p.oshape[i] = (uint64_t)od[i];
    p.bshape[i] = (uint64_t)(bd[i] ? bd[i] : 1);
    p.astride[i] = (uint64_t)ast[i];
    p.bstride[i] = (uint64_t)bst[i];
  }
  const kiln_tensor *ins[2] = {a, b};
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, a->dtype, &oshape, out, ins, 2, 0, &t));
  uint64_t n = t.dst->numel;
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  if (n) {
    cl_kernel k;
    s = get_kernel(op, ctx, a->dtype, "kron", &k);
    if (s == KILN_OK) {
      kiln__args ar = kiln__args_begin(op, k);
      kiln__args_tensor(&ar, a);
      kiln__args_tensor(&ar, b);
      kiln__args_tensor(&ar, t.dst);
      kiln__args_u64(&ar, n);
      kiln__args_u32(&ar, (uint32_t)nd);
      kiln__args_raw(&ar, sizeof p, &p);
      s = ar.status;
    }
    if (s == KILN_OK)
      s = kiln__launch_1d(op, ctx, k, n, 0);
  }
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

static const struct kiln__source layout_sources[] = {{"layout", KILN__DT_EVERY}, {NULL, 0}};

const struct kiln__family kiln__layout_family = {.name = "layout", .sources = layout_sources};
