/*
 * Index family: gather, index_select (and embedding), scatter (assign/add,
 * deterministic by sorting), masked_fill, masked_select and nonzero (stream
 * compaction: flags, exclusive scan, scatter to the scanned offsets),
 * sub2ind/ind2sub and one_hot. Indices are validated on the device through
 * an error flag read back once per call. See cl_kernels/index.cl.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "kiln/index.h"
#include "ops/families.h"
#include "ops/index_internal.h"
#include "ops/ops_common.h"

int kiln__index_force_layout = 0;
_Atomic unsigned kiln__index_lines_calls[2];

/* Mirrors kiln_iplan in cl_kernels/index.cl. */
struct iplan {
  uint64_t shape[KILN_MAX_DIMS];
  uint64_t stride[KILN_MAX_DIMS];
};

/* Mirrors kiln_dims in cl_kernels/index.cl. */
struct dims8 {
  uint64_t d[KILN_MAX_DIMS];
};

static kiln_status
get_kernel(const char *op, kiln_context *ctx, kiln_dtype dtype, const char *name, cl_kernel *k)
{
  return kiln__ops_kernel(op, ctx, "index", dtype, name, k);
}

/*
 * Kernel `name` for dtype as a sticky argument builder: a failed lookup is its first failure.
 * Kernels that only move values (or touch none) pass kiln__ops_move_dtype(dtype), so that
 * equal-sized dtypes share their program.
 */
static kiln__args
kernel_args(const char *op, kiln_context *ctx, kiln_dtype dtype, const char *name)
{
  cl_kernel k = NULL;
  kiln_status s = get_kernel(op, ctx, dtype, name, &k);
  kiln__args a = kiln__args_begin(op, k);
  a.status = s;
  return a;
}

static kiln_status
check_index_tensor(const char *op, kiln_context *ctx, const kiln_tensor *idx, const char *what)
{
  KILN_TRY(kiln__tensor_check(op, idx, ctx));
  KILN_RETURN_IF(idx->dtype != KILN_I32 && idx->dtype != KILN_I64, KILN_ERR_DTYPE, op,
                 "%s must be i32 or i64, not %s", what, kiln_dtype_name(idx->dtype));
  return KILN_OK;
}

static uint32_t
is64(const kiln_tensor *idx)
{
  return idx->dtype == KILN_I64;
}

/* The iteration shape of plan, with the strides of a contiguous tensor of shape `strided`. */
static void
plan_fill(struct iplan *p, const kiln__shape *iter, const kiln__shape *strided)
{
  memset(p, 0, sizeof *p);
  int64_t st[KILN_MAX_DIMS];
  kiln__ops_strides(strided, st);
  for (size_t d = 0; d < iter->ndim; d++) {
    p->shape[d] = (uint64_t)iter->dims[d];
    p->stride[d] = (uint64_t)st[d];
  }
}

/* Index element pos of idx, read back (error path only). */
static int64_t
index_value(const char *op, kiln_context *ctx, const kiln_tensor *idx, uint64_t pos)
{
  int64_t v = 0;
  if (pos >= idx->numel)
    return 0;
  if (idx->dtype == KILN_I64) {
    kiln__ops_read(op, ctx, idx, pos * 8, &v, 8);
  } else {
    int32_t w = 0;
    kiln__ops_read(op, ctx, idx, pos * 4, &w, 4);
    v = w;
  }
  return v;
}

/*
 * What a checked launch validates: a raised flag names position p, whose
 * index is element p of index (valid range [lo, hi) of `what`) or, with
 * what NULL, the row of per subscripts from element p * per (sub2ind).
 */
struct check {
  const kiln_tensor *index;
  int64_t lo, hi;
  const char *what;
  size_t per;
};

/*
 * Reads the error flag (ctx->lock held); on a bad index fails with a message
 * naming the first bad position and its value(s).
 */
static kiln_status
flag_verdict(const char *op, kiln_context *ctx, kiln_tensor *flag, const struct check *c)
{
  uint32_t f[4];
  KILN_TRY(kiln__ops_flag_read(op, ctx, flag, f));
  if (!f[0])
    return KILN_OK;
  if (!c->what) {
    char text[256];
    size_t used = 0;
    for (size_t d = 0; d < c->per && f[1] != 0xffffffffu; d++) {
      int64_t v = index_value(op, ctx, c->index, (uint64_t)f[1] * c->per + d);
      used +=
          (size_t)snprintf(text + used, sizeof text - used, "%s%lld", d ? "," : "", (long long)v);
      if (used >= sizeof text)
        break;
    }
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                      "subscripts (%s) of row %u are out of range for the dims",
                      f[1] == 0xffffffffu ? "?" : text, f[1]);
  }
  if (f[1] == 0xffffffffu)
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                      "an index beyond position 4294967294 is out of range [%lld, %lld) for %s",
                      (long long)c->lo, (long long)c->hi, c->what);
  int64_t v = index_value(op, ctx, c->index, f[1]);
  return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                    "index %lld at position %u is out of range [%lld, %lld) for %s", (long long)v,
                    f[1], (long long)c->lo, (long long)c->hi, c->what);
}

/*
 * The launch every index kernel shares (ctx->lock held): the arguments a
 * (their first failure, a failed kernel lookup included, is returned), then a
 * grid of n items (grid3 NULL) or grid3[0] x grid3[1] x grid3[2]. A checked
 * launch (c non-NULL) appends a fresh error flag as the kernel's last
 * argument and turns a raised flag into the message of flag_verdict.
 */
static kiln_status
launch(kiln__args *a, kiln_context *ctx, uint64_t n, const uint64_t *grid3, const struct check *c)
{
  const char *op = a->op;
  kiln_tensor *flag = NULL;
  kiln_status s = a->status;
  if (s == KILN_OK && c) {
    s = kiln__ops_flag_new(op, ctx, &flag);
    if (s == KILN_OK) {
      kiln__args_mem(a, flag->mem);
      s = a->status;
    }
  }
  if (s == KILN_OK)
    s = grid3 ? kiln__launch_3d(op, ctx, a->k, grid3[0], grid3[1], grid3[2])
              : kiln__launch_1d(op, ctx, a->k, n, 0);
  if (s == KILN_OK && c)
    s = flag_verdict(op, ctx, flag, c);
  kiln_tensor_release(flag);
  return s;
}

/* The output target of an op, then ctx->lock (kiln__ops_out_begin's arguments). */
static kiln_status
out_begin(const char *op, kiln_context *ctx, kiln_dtype dtype, const kiln__shape *shape,
          kiln_tensor **out, const kiln_tensor *const *ins, size_t nins, int inplace,
          kiln__out_target *t)
{
  KILN_TRY(kiln__ops_out_begin(op, ctx, dtype, shape, out, ins, nins, inplace, t));
  kiln__ctx_lock(ctx);
  return KILN_OK;
}

/* Completes or unwinds the target with status s and drops ctx->lock; the final status. */
static kiln_status
out_end(const char *op, kiln_context *ctx, kiln__out_target *t, kiln_status s)
{
  s = kiln__ops_out_finish(op, ctx, t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---- gather, index_select, embedding ---- */

kiln_status
kiln_gather(kiln_context *ctx, const kiln_tensor *x, int64_t axis, const kiln_tensor *index,
            kiln_tensor **out)
{
  static const char op[] = "kiln_gather";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_TRY(check_index_tensor(op, ctx, index, "index"));
  size_t nd = x->shape.ndim, ax;
  KILN_RETURN_IF(nd == 0, KILN_ERR_SHAPE, op, "x must have at least one dimension");
  KILN_TRY(kiln__ops_axis(op, axis, nd, &ax));
  char a[160], b[160];
  int ok = index->shape.ndim == nd;
  for (size_t d = 0; ok && d < nd; d++)
    ok = d == ax || index->shape.dims[d] <= x->shape.dims[d];
  if (!ok)
    return kiln__fail(KILN_ERR_SHAPE, op, 0,
                      "index of shape %s does not fit x of shape %s outside axis %zu",
                      kiln__shape_format(&index->shape, a, sizeof a),
                      kiln__shape_format(&x->shape, b, sizeof b), ax);
  const kiln_tensor *ins[2] = {x, index};
  kiln__out_target t;
  KILN_TRY(out_begin(op, ctx, x->dtype, &index->shape, out, ins, 2, 0, &t));
  uint64_t n = index->numel;
  int64_t len = x->shape.dims[ax];
  struct iplan p;
  plan_fill(&p, &index->shape, &x->shape);
  kiln_status s = KILN_OK;
  if (n) {
    /* CPUs: one work-item per row of index's last axis, a plain loop (gather_axis_rows). */
    int gpu = kiln__index_force_layout ? kiln__index_force_layout == 1 : ctx->info.is_gpu;
    uint64_t inner = (uint64_t)index->shape.dims[nd - 1];
    kiln__args ar = kernel_args(op, ctx, kiln__ops_move_dtype(x->dtype),
                                gpu ? "gather_axis" : "gather_axis_rows");
    kiln__args_tensor(&ar, x);
    kiln__args_tensor(&ar, index);
    kiln__args_u32(&ar, is64(index));
    kiln__args_tensor(&ar, t.dst);
    kiln__args_u64(&ar, n);
    kiln__args_u32(&ar, (uint32_t)nd);
    kiln__args_u32(&ar, (uint32_t)ax);
    kiln__args_i64(&ar, len);
    kiln__args_raw(&ar, sizeof p, &p);
    struct check c = {index, -len, len, "the gathered axis", 1};
    s = launch(&ar, ctx, gpu ? n : n / inner, NULL, &c);
  }
  return out_end(op, ctx, &t, s);
}

/* numpy.take along ax, shared by index_select and embedding (arguments checked). */
static kiln_status
take(const char *op, kiln_context *ctx, const kiln_tensor *x, size_t ax, const kiln_tensor *index,
     kiln_tensor **out)
{
  size_t nd = x->shape.ndim;
  KILN_RETURN_IF(nd - 1 + index->shape.ndim > KILN_MAX_DIMS, KILN_ERR_INVALID_ARGUMENT, op,
                 "the result would have %zu dimensions (at most %d)", nd - 1 + index->shape.ndim,
                 KILN_MAX_DIMS);
  int64_t dims[KILN_MAX_DIMS];
  size_t r = 0;
  uint64_t inner = 1;
  for (size_t d = 0; d < ax; d++)
    dims[r++] = x->shape.dims[d];
  for (size_t d = 0; d < index->shape.ndim; d++)
    dims[r++] = index->shape.dims[d];
  for (size_t d = ax + 1; d < nd; d++) {
    dims[r++] = x->shape.dims[d];
    inner *= (uint64_t)x->shape.dims[d];
  }
  kiln__shape oshape;
  KILN_TRY(kiln__shape_make(op, r, dims, kiln_dtype_size(x->dtype), &oshape, NULL, NULL));
  const kiln_tensor *ins[2] = {x, index};
  kiln__out_target t;
  KILN_TRY(out_begin(op, ctx, x->dtype, &oshape, out, ins, 2, 0, &t));
  uint64_t n = t.dst->numel;
  int64_t len = x->shape.dims[ax];
  kiln_status s = KILN_OK;
  if (n) {
    /* GPUs: work-items along the row, so that a warp's accesses are contiguous (3-D grid);
     * CPUs: one work-item per gathered row over a plain loop, which PoCL vectorises
     * (index_select_rows; the 3-D form measured 20-40x slower there). */
    int gpu = kiln__index_force_layout ? kiln__index_force_layout == 1 : ctx->info.is_gpu;
    uint64_t grid[3] = {inner, index->numel, n / inner / index->numel};
    /* CPU devices: rows of whole 64-byte lines at line-aligned offsets move as lines */
    size_t esz = kiln_dtype_size(x->dtype);
    uint64_t xoff = kiln__ops_elem_offset(x), ooff = kiln__ops_elem_offset(t.dst), unit = 1;
    const char *kname = gpu ? "index_select" : "index_select_rows";
    if (!gpu && (inner * esz) % 64 == 0 && (xoff * esz) % 64 == 0 && (ooff * esz) % 64 == 0) {
      unit = 64 / esz;
      int nt = n * esz >= KILN__NT_STORE_MIN_BYTES;
      kname = nt ? "index_select_lines_nt" : "index_select_lines";
      atomic_fetch_add(&kiln__index_lines_calls[nt], 1);
    }
    kiln__args ar = kernel_args(op, ctx, kiln__ops_move_dtype(x->dtype), kname);
    kiln__args_mem(&ar, x->mem);
    kiln__args_u64(&ar, xoff / unit);
    kiln__args_tensor(&ar, index);
    kiln__args_u32(&ar, is64(index));
    kiln__args_mem(&ar, t.dst->mem);
    kiln__args_u64(&ar, ooff / unit);
    kiln__args_u64(&ar, grid[2]);
    kiln__args_u64(&ar, index->numel);
    kiln__args_i64(&ar, len);
    kiln__args_u64(&ar, inner / unit);
    struct check c = {index, -len, len, "the selected axis", 1};
    s = launch(&ar, ctx, gpu ? n : n / inner, gpu ? grid : NULL, &c);
  }
  return out_end(op, ctx, &t, s);
}

kiln_status
kiln_index_select(kiln_context *ctx, const kiln_tensor *x, int64_t axis, const kiln_tensor *index,
                  kiln_tensor **out)
{
  static const char op[] = "kiln_index_select";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_TRY(check_index_tensor(op, ctx, index, "index"));
  KILN_RETURN_IF(x->shape.ndim == 0, KILN_ERR_SHAPE, op, "x must have at least one dimension");
  size_t ax;
  KILN_TRY(kiln__ops_axis(op, axis, x->shape.ndim, &ax));
  return take(op, ctx, x, ax, index, out);
}

kiln_status
kiln_embedding(kiln_context *ctx, const kiln_tensor *weight, const kiln_tensor *indices,
               kiln_tensor **out)
{
  static const char op[] = "kiln_embedding";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(kiln__tensor_check(op, weight, ctx));
  KILN_TRY(check_index_tensor(op, ctx, indices, "indices"));
  KILN_RETURN_IF(weight->shape.ndim != 2, KILN_ERR_SHAPE, op,
                 "weight must be 2-D [rows, dim], it has %zu dimensions", weight->shape.ndim);
  return take(op, ctx, weight, 0, indices, out);
}

/* ---- scatter ---- */

/* A private copy of t (ctx->lock held). */
static kiln_status
snapshot(const char *op, kiln_context *ctx, const kiln_tensor *t, kiln_tensor **copy)
{
  KILN_TRY(kiln__tensor_new_locked(op, ctx, t->dtype, &t->shape, copy));
  kiln_status s = kiln__ops_copy(op, ctx, t, *copy);
  if (s != KILN_OK) {
    kiln_tensor_release(*copy);
    *copy = NULL;
  }
  return s;
}

/* The scatter proper, with inputs that do not overlap the output (ctx->lock held). */
static kiln_status
scatter_run(const char *op, kiln_context *ctx, const kiln_tensor *x, size_t ax,
            const kiln_tensor *index, const kiln_tensor *src, kiln_scatter_mode mode,
            kiln_tensor *dst)
{
  uint64_t m = index->numel;
  int64_t len = x->shape.dims[ax];
  size_t nd = x->shape.ndim;
  kiln_tensor *keys = NULL, *vals = NULL;
  kiln_status s = KILN_OK;
  kiln_dtype mdt = kiln__ops_move_dtype(x->dtype);
  uint64_t npad = kiln__ops_pow2(m);
  if (m) {
    struct iplan p;
    plan_fill(&p, &index->shape, &x->shape);
    s = kiln__ops_scratch(op, ctx, KILN_I64, npad, &keys);
    if (s == KILN_OK)
      s = kiln__ops_scratch(op, ctx, KILN_I64, npad, &vals);
    if (s == KILN_OK) {
      kiln__args ar = kernel_args(op, ctx, mdt, "scatter_keys");
      kiln__args_tensor(&ar, index);
      kiln__args_u32(&ar, is64(index));
      kiln__args_u64(&ar, m);
      kiln__args_u64(&ar, npad);
      kiln__args_u32(&ar, (uint32_t)nd);
      kiln__args_u32(&ar, (uint32_t)ax);
      kiln__args_i64(&ar, len);
      kiln__args_raw(&ar, sizeof p, &p);
      kiln__args_tensor(&ar, keys);
      kiln__args_tensor(&ar, vals);
      /* Validates before the target is touched. */
      struct check c = {index, -len, len, "the scattered axis", 1};
      s = launch(&ar, ctx, npad, NULL, &c);
    }
  }
  if (s == KILN_OK)
    s = kiln__ops_copy(op, ctx, x, dst);
  if (s == KILN_OK && m) {
    s = kiln__ops_sort_pairs(op, ctx, "index", mdt, keys, vals, npad);
    struct iplan p;
    plan_fill(&p, &index->shape, &src->shape);
    if (s == KILN_OK) {
      /* Adding computes on the values: their own dtype's program. */
      int add = mode == KILN_SCATTER_ADD;
      kiln__args ar = add ? kernel_args(op, ctx, x->dtype, "scatter_add")
                          : kernel_args(op, ctx, mdt, "scatter_assign");
      kiln__args_tensor(&ar, keys);
      kiln__args_tensor(&ar, vals);
      kiln__args_u64(&ar, m);
      kiln__args_tensor(&ar, src);
      kiln__args_u32(&ar, (uint32_t)nd);
      kiln__args_raw(&ar, sizeof p, &p);
      kiln__args_tensor(&ar, dst);
      s = launch(&ar, ctx, m, NULL, NULL);
    }
  }
  kiln_tensor_release(vals);
  kiln_tensor_release(keys);
  return s;
}

kiln_status
kiln_scatter(kiln_context *ctx, const kiln_tensor *x, int64_t axis, const kiln_tensor *index,
             const kiln_tensor *src, kiln_scatter_mode mode, kiln_tensor **out)
{
  static const char op[] = "kiln_scatter";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_TRY(check_index_tensor(op, ctx, index, "index"));
  KILN_TRY(kiln__tensor_check(op, src, ctx));
  KILN_RETURN_IF((unsigned)mode > KILN_SCATTER_ADD, KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown scatter mode %d", (int)mode);
  KILN_RETURN_IF(src->dtype != x->dtype, KILN_ERR_DTYPE, op, "src is %s, x is %s",
                 kiln_dtype_name(src->dtype), kiln_dtype_name(x->dtype));
  size_t nd = x->shape.ndim, ax;
  KILN_RETURN_IF(nd == 0, KILN_ERR_SHAPE, op, "x must have at least one dimension");
  KILN_TRY(kiln__ops_axis(op, axis, nd, &ax));
  int ok = index->shape.ndim == nd && src->shape.ndim == nd;
  for (size_t d = 0; ok && d < nd; d++)
    ok = index->shape.dims[d] <= src->shape.dims[d] &&
         (d == ax || index->shape.dims[d] <= x->shape.dims[d]);
  if (!ok) {
    char a[160], b[160], c[160];
    return kiln__fail(KILN_ERR_SHAPE, op, 0,
                      "index %s must not exceed src %s, nor x %s outside axis %zu",
                      kiln__shape_format(&index->shape, a, sizeof a),
                      kiln__shape_format(&src->shape, b, sizeof b),
                      kiln__shape_format(&x->shape, c, sizeof c), ax);
  }
  int made;
  KILN_TRY(kiln__output_prepare(op, ctx, x->dtype, &x->shape, out, &made));
  kiln_tensor *dst = *out;
  kiln__ctx_lock(ctx);
  kiln_tensor *ix = NULL, *sx = NULL, *xx = NULL;
  kiln_status s = KILN_OK;
  /* Inputs overlapping the output are read from private copies. */
  if (kiln__ops_alias(dst, index))
    s = snapshot(op, ctx, index, &ix);
  if (s == KILN_OK && kiln__ops_alias(dst, src))
    s = snapshot(op, ctx, src, &sx);
  if (s == KILN_OK && kiln__ops_overlap(dst, x) == KILN__OVERLAP_PARTIAL)
    s = snapshot(op, ctx, x, &xx);
  if (s == KILN_OK)
    s = scatter_run(op, ctx, xx ? xx : x, ax, ix ? ix : index, sx ? sx : src, mode, dst);
  kiln_tensor_release(ix);
  kiln_tensor_release(sx);
  kiln_tensor_release(xx);
  kiln__ctx_unlock(ctx);
  if (s != KILN_OK)
    kiln__output_discard(out, made);
  return s;
}

/* ---- masks ---- */

static kiln_status
check_mask(const char *op, kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *mask)
{
  KILN_TRY(kiln__tensor_check(op, mask, ctx));
  KILN_RETURN_IF(mask->dtype != KILN_BOOL && mask->dtype != KILN_U8, KILN_ERR_DTYPE, op,
                 "mask must be bool or u8, not %s", kiln_dtype_name(mask->dtype));
  kiln__shape joint;
  char a[160], b[160];
  if (kiln__shape_broadcast(op, &x->shape, &mask->shape, &joint) != KILN_OK ||
      !kiln__shape_equal(&joint, &x->shape))
    return kiln__fail(KILN_ERR_SHAPE, op, 0, "mask of shape %s does not broadcast to x's %s",
                      kiln__shape_format(&mask->shape, a, sizeof a),
                      kiln__shape_format(&x->shape, b, sizeof b));
  return KILN_OK;
}

kiln_status
kiln_masked_fill(kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *mask,
                 kiln_scalar value, kiln_tensor **out)
{
  static const char op[] = "kiln_masked_fill";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_TRY(check_mask(op, ctx, x, mask));
  /* Elementwise, so writing over x's (or mask's) own bytes is safe; any other overlap goes
   * through a temporary. */
  const kiln_tensor *ins[2] = {mask, x};
  kiln__out_target t;
  KILN_TRY(out_begin(op, ctx, x->dtype, &x->shape, out, ins, 2, 1, &t));
  const kiln__shape *ops[2] = {&x->shape, &mask->shape};
  kiln__bcast plan;
  int flat;
  uint32_t ndim = kiln__bcast_plan(&x->shape, ops, 2, &plan, &flat);
  unsigned char v[sizeof(kiln_complex128)];
  kiln__scalar_to_bytes(value, x->dtype, v);
  uint64_t n = x->numel;
  kiln_status s = KILN_OK;
  if (n) {
    kiln__args ar = kernel_args(op, ctx, kiln__ops_move_dtype(x->dtype), "masked_fill");
    kiln__args_tensor(&ar, x);
    kiln__args_tensor(&ar, mask);
    kiln__args_tensor(&ar, t.dst);
    kiln__args_u64(&ar, n);
    kiln__args_u32(&ar, ndim);
    kiln__args_raw(&ar, sizeof plan, &plan);
    kiln__args_u32(&ar, (uint32_t)flat);
    kiln__args_raw(&ar, kiln_dtype_size(x->dtype), v);
    s = launch(&ar, ctx, n, NULL, NULL);
  }
  return out_end(op, ctx, &t, s);
}

/*
 * Exclusive scan, in place, of n >= 1 ulongs in data (ctx->lock held);
 * *total receives their sum (the one read-back). Tiles of local * 8
 * elements are scanned in local memory, the tile sums recursively.
 */
static kiln_status
scan_exclusive(const char *op, kiln_context *ctx, kiln_dtype dtype, kiln_tensor *data, uint64_t n,
               uint64_t *total)
{
  cl_kernel kt, ka;
  KILN_TRY(get_kernel(op, ctx, dtype, "scan_tiles", &kt));
  KILN_TRY(get_kernel(op, ctx, dtype, "scan_add", &ka));
  size_t local = kiln__launch_pow2_local(ctx, kt);
  const uint32_t per = 8;
  uint64_t tile = (uint64_t)local * per;
  uint64_t groups = (n + tile - 1) / tile;
  kiln_tensor *sums = NULL;
  KILN_TRY(kiln__ops_scratch(op, ctx, KILN_I64, groups, &sums));
  kiln__args ar = kiln__args_begin(op, kt);
  kiln__args_tensor(&ar, data);
  kiln__args_u64(&ar, n);
  kiln__args_u32(&ar, per);
  kiln__args_tensor(&ar, sums);
  kiln__args_local(&ar, local * sizeof(cl_ulong));
  kiln_status s = ar.status;
  size_t global = (size_t)(groups * local);
  if (s == KILN_OK)
    s = kiln__enqueue_kernel(op, ctx, kt, 1, &global, &local);
  if (s == KILN_OK && groups > 1) {
    s = scan_exclusive(op, ctx, dtype, sums, groups, total);
    if (s == KILN_OK) {
      ar = kiln__args_begin(op, ka);
      kiln__args_tensor(&ar, data);
      kiln__args_u64(&ar, n);
      kiln__args_u64(&ar, tile);
      kiln__args_tensor(&ar, sums);
      s = launch(&ar, ctx, n, NULL, NULL);
    }
  } else if (s == KILN_OK) {
    cl_ulong t = 0;
    s = kiln__ops_read(op, ctx, sums, 0, &t, sizeof t);
    *total = t;
  }
  kiln_tensor_release(sums);
  return s;
}

/*
 * Stream compaction of x's elements selected by flags_kernel (flags_nonzero
 * or flags_mask): positions (i64) when positions != 0, else values. Makes *out.
 */
static kiln_status
compact(const char *op, kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *mask,
        int positions, kiln_tensor **out, uint64_t *count)
{
  uint64_t n = x->numel, total = 0;
  kiln_dtype odt = positions ? KILN_I64 : x->dtype, mdt = kiln__ops_move_dtype(x->dtype);
  kiln__shape s1;
  memset(&s1, 0, sizeof s1);
  s1.ndim = 1;
  kiln__ctx_lock(ctx);
  kiln_tensor *offs = NULL;
  kiln_status s = KILN_OK;
  if (n) {
    s = kiln__ops_scratch(op, ctx, KILN_I64, n, &offs);
    if (s == KILN_OK) {
      /* Only the nonzero test reads values: the others run from the size's program. */
      kiln__args ar = mask ? kernel_args(op, ctx, mdt, "flags_mask")
                           : kernel_args(op, ctx, x->dtype, "flags_nonzero");
      if (mask) {
        const kiln__shape *ops[2] = {&x->shape, &mask->shape};
        kiln__bcast plan;
        int flat;
        uint32_t ndim = kiln__bcast_plan(&x->shape, ops, 2, &plan, &flat);
        kiln__args_tensor(&ar, mask);
        kiln__args_u64(&ar, n);
        kiln__args_u32(&ar, ndim);
        kiln__args_raw(&ar, sizeof plan, &plan);
        kiln__args_u32(&ar, (uint32_t)flat);
      } else {
        kiln__args_tensor(&ar, x);
        kiln__args_u64(&ar, n);
      }
      kiln__args_tensor(&ar, offs);
      s = launch(&ar, ctx, n, NULL, NULL);
    }
    if (s == KILN_OK)
      s = scan_exclusive(op, ctx, mdt, offs, n, &total);
  }
  s1.dims[0] = (int64_t)total;
  if (s == KILN_OK)
    s = kiln__tensor_new_locked(op, ctx, odt, &s1, out);
  if (s == KILN_OK && total) {
    kiln__args ar = kernel_args(op, ctx, mdt, positions ? "compact_positions" : "compact_values");
    kiln__args_tensor(&ar, offs);
    kiln__args_u64(&ar, n);
    kiln__args_u64(&ar, total);
    if (!positions)
      kiln__args_tensor(&ar, x);
    kiln__args_tensor(&ar, *out);
    s = launch(&ar, ctx, n, NULL, NULL);
    if (s != KILN_OK) {
      kiln_tensor_release(*out);
      *out = NULL;
    }
  }
  kiln_tensor_release(offs);
  kiln__ctx_unlock(ctx);
  if (s == KILN_OK && count)
    *count = total;
  return s;
}

kiln_status
kiln_masked_select(kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *mask,
                   kiln_tensor **out, uint64_t *count)
{
  static const char op[] = "kiln_masked_select";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_RETURN_IF(*out, KILN_ERR_INVALID_ARGUMENT, op,
                 "*out must be NULL: the result size depends on the data");
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_TRY(check_mask(op, ctx, x, mask));
  return compact(op, ctx, x, mask, 0, out, count);
}

kiln_status
kiln_nonzero(kiln_context *ctx, const kiln_tensor *x, kiln_tensor **out, uint64_t *count)
{
  static const char op[] = "kiln_nonzero";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_RETURN_IF(*out, KILN_ERR_INVALID_ARGUMENT, op,
                 "*out must be NULL: the result size depends on the data");
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  return compact(op, ctx, x, NULL, 1, out, count);
}

/* ---- sub2ind, ind2sub, one_hot ---- */

static kiln_status
check_dims(const char *op, const int64_t *dims, size_t ndims, struct dims8 *d, uint64_t *total)
{
  KILN_RETURN_IF(!dims, KILN_ERR_INVALID_ARGUMENT, op, "dims is NULL");
  KILN_RETURN_IF(ndims == 0 || ndims > KILN_MAX_DIMS, KILN_ERR_INVALID_ARGUMENT, op,
                 "needs 1 to %d dims, got %zu", KILN_MAX_DIMS, ndims);
  memset(d, 0, sizeof *d);
  uint64_t t = 1;
  int zero = 0;
  for (size_t i = 0; i < ndims; i++) {
    KILN_RETURN_IF(dims[i] < 0, KILN_ERR_INVALID_ARGUMENT, op, "dims[%zu] is negative (%lld)", i,
                   (long long)dims[i]);
    d->d[i] = (uint64_t)dims[i];
    if (dims[i] == 0)
      zero = 1;
    else if (t > (uint64_t)INT64_MAX / (uint64_t)dims[i])
      return kiln__fail(KILN_ERR_OVERFLOW, op, 0, "the product of dims overflows");
    else
      t *= (uint64_t)dims[i];
  }
  *total = zero ? 0 : t;
  return KILN_OK;
}

/* Runs an index-arithmetic kernel into a made/given i64 output; shared by sub2ind and ind2sub. */
static kiln_status
index_math(const char *op, kiln_context *ctx, const kiln_tensor *in, const kiln__shape *oshape,
           const char *kname, uint64_t count, size_t ndims, const struct dims8 *dims,
           uint64_t total, kiln_tensor **out)
{
  const kiln_tensor *ins[1] = {in};
  kiln__out_target t;
  KILN_TRY(out_begin(op, ctx, KILN_I64, oshape, out, ins, 1, 0, &t));
  kiln_status s = KILN_OK;
  int is_ind2sub = strcmp(kname, "ind2sub") == 0;
  if (count && is_ind2sub && total == 0) {
    /* Nothing is in range, and the kernel would divide by a zero dimension. */
    s = kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                   "index %lld at position 0 is out of range [0, 0) for dims with a zero",
                   (long long)index_value(op, ctx, in, 0));
  } else if (count) {
    kiln__args ar = kernel_args(op, ctx, KILN_I64, kname);
    kiln__args_tensor(&ar, in);
    kiln__args_u32(&ar, is64(in));
    kiln__args_tensor(&ar, t.dst);
    kiln__args_u64(&ar, count);
    kiln__args_u32(&ar, (uint32_t)ndims);
    kiln__args_raw(&ar, sizeof *dims, dims);
    if (is_ind2sub)
      kiln__args_u64(&ar, total);
    struct check c = {in, 0, (int64_t)total, is_ind2sub ? "the dims' element count" : NULL, ndims};
    s = launch(&ar, ctx, count, NULL, &c);
  }
  return out_end(op, ctx, &t, s);
}

kiln_status
kiln_sub2ind(kiln_context *ctx, const int64_t *dims, size_t ndims, const kiln_tensor *subs,
             kiln_tensor **out)
{
  static const char op[] = "kiln_sub2ind";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  struct dims8 d;
  uint64_t total;
  KILN_TRY(check_dims(op, dims, ndims, &d, &total));
  KILN_TRY(check_index_tensor(op, ctx, subs, "subs"));
  size_t sn = subs->shape.ndim;
  KILN_RETURN_IF(sn == 0 || subs->shape.dims[sn - 1] != (int64_t)ndims, KILN_ERR_SHAPE, op,
                 "subs must have shape [..., %zu]", ndims);
  kiln__shape oshape = subs->shape;
  oshape.ndim = sn - 1;
  oshape.dims[sn - 1] = 0;
  uint64_t count = subs->numel / ndims;
  return index_math(op, ctx, subs, &oshape, "sub2ind", count, ndims, &d, total, out);
}

kiln_status
kiln_ind2sub(kiln_context *ctx, const int64_t *dims, size_t ndims, const kiln_tensor *index,
             kiln_tensor **out)
{
  static const char op[] = "kiln_ind2sub";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  struct dims8 d;
  uint64_t total;
  KILN_TRY(check_dims(op, dims, ndims, &d, &total));
  KILN_TRY(check_index_tensor(op, ctx, index, "index"));
  size_t in = index->shape.ndim;
  KILN_RETURN_IF(in + 1 > KILN_MAX_DIMS, KILN_ERR_INVALID_ARGUMENT, op,
                 "index has %zu dimensions; the result needs one more (at most %d)", in,
                 KILN_MAX_DIMS);
  int64_t odims[KILN_MAX_DIMS];
  memcpy(odims, index->shape.dims, in * sizeof *odims);
  odims[in] = (int64_t)ndims;
  kiln__shape oshape;
  KILN_TRY(kiln__shape_make(op, in + 1, odims, 8, &oshape, NULL, NULL));
  return index_math(op, ctx, index, &oshape, "ind2sub", index->numel, ndims, &d, total, out);
}

kiln_status
kiln_one_hot(kiln_context *ctx, const kiln_tensor *indices, int64_t num_classes, kiln_dtype dtype,
             kiln_tensor **out)
{
  static const char op[] = "kiln_one_hot";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(check_index_tensor(op, ctx, indices, "indices"));
  KILN_RETURN_IF(!kiln__dtype_valid(dtype), KILN_ERR_INVALID_ARGUMENT, op, "invalid dtype %d",
                 (int)dtype);
  KILN_RETURN_IF(num_classes < 1, KILN_ERR_INVALID_ARGUMENT, op,
                 "num_classes must be >= 1 (got %lld)", (long long)num_classes);
  size_t in = indices->shape.ndim;
  KILN_RETURN_IF(in + 1 > KILN_MAX_DIMS, KILN_ERR_INVALID_ARGUMENT, op,
                 "indices have %zu dimensions; the result needs one more (at most %d)", in,
                 KILN_MAX_DIMS);
  int64_t dims[KILN_MAX_DIMS];
  memcpy(dims, indices->shape.dims, in * sizeof *dims);
  dims[in] = num_classes;
  kiln__shape oshape;
  KILN_TRY(kiln__shape_make(op, in + 1, dims, kiln_dtype_size(dtype), &oshape, NULL, NULL));
  const kiln_tensor *ins[1] = {indices};
  kiln__out_target t;
  KILN_TRY(out_begin(op, ctx, dtype, &oshape, out, ins, 1, 0, &t));
  uint64_t n = t.dst->numel;
  kiln_status s = KILN_OK;
  if (n) {
    kiln__args ar = kernel_args(op, ctx, dtype, "one_hot");
    kiln__args_tensor(&ar, indices);
    kiln__args_u32(&ar, is64(indices));
    kiln__args_tensor(&ar, t.dst);
    kiln__args_u64(&ar, n);
    kiln__args_u64(&ar, (uint64_t)num_classes);
    struct check c = {indices, 0, num_classes, "num_classes", 1};
    s = launch(&ar, ctx, n, NULL, &c);
  }
  return out_end(op, ctx, &t, s);
}

static const struct kiln__source index_sources[] = {{"index", KILN__DT_EVERY}, {NULL, 0}};

const struct kiln__family kiln__index_family = {.name = "index", .sources = index_sources};
