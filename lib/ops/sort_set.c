/*
 * sort family: unique, unique_consecutive, searchsorted, isin and the set operations, built
 * on the radix sort of sort.c (kiln__sort_pairs_radix) and the kernels of cl_kernels/sort.cl.
 * Results whose size depends on the data read one count back per compaction.
 */
#include <stdlib.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "core/shape.h"
#include "kiln/sort.h"
#include "ops/ops_common.h"
#include "ops/sort_internal.h"
#include "runtime/runtime.h"

/* want bits of uniq_emit and member_search (cl_kernels/sort.cl). */
enum { EMIT_VALUES = 1, EMIT_FIRST = 2, EMIT_INVERSE = 4 };
enum { MEMBER_TF = 1, MEMBER_LOC = 2, MEMBER_HIT = 4 };

static kiln_status
check_created(const char *op, kiln_tensor **p, const char *what)
{
  KILN_RETURN_IF(p && *p, KILN_ERR_INVALID_ARGUMENT, op,
                 "*%s must be NULL: the result's size depends on the data", what);
  return KILN_OK;
}

static kiln_status
new_1d(const char *op, kiln_context *ctx, kiln_dtype dt, uint64_t n, kiln_tensor **out)
{
  kiln__shape sh = {.ndim = 1, .dims = {(int64_t)n}};
  return kiln__tensor_new_locked(op, ctx, dt, &sh, out);
}

static void
drop(kiln_tensor **t)
{
  if (t && *t) {
    kiln_tensor_release(*t);
    *t = NULL;
  }
}

/*
 * pos = the exclusive scan of the n flags (uint); *count = the number of set flags (reads
 * two uints back: waits for the queue). *pos is a new scratch tensor.
 */
static kiln_status
scan_count(const char *op, kiln_context *ctx, kiln_tensor *flags, uint64_t n, kiln_tensor **pos,
           uint64_t *count)
{
  *count = 0;
  KILN_TRY(kiln__ops_scratch(op, ctx, KILN_I32, n, pos));
  cl_int err = clEnqueueCopyBuffer(ctx->queue, flags->mem, (*pos)->mem, flags->offset,
                                   (*pos)->offset, n * 4, 0, NULL, NULL);
  kiln_status s = err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "clEnqueueCopyBuffer");
  if (s == KILN_OK)
    s = kiln__sort_scan(op, ctx, (*pos)->mem, n);
  uint32_t last[2] = {0, 0};
  if (s == KILN_OK)
    s = kiln__ops_read(op, ctx, *pos, (n - 1) * 4, &last[0], 4);
  if (s == KILN_OK)
    s = kiln__ops_read(op, ctx, flags, (n - 1) * 4, &last[1], 4);
  if (s == KILN_OK)
    *count = (uint64_t)last[0] + last[1];
  else
    drop(pos);
  return s;
}

/* uniq_counts: counts of the nu runs that start at starts, of n items in all. */
static kiln_status
launch_counts(const char *op, kiln_context *ctx, kiln_dtype dt, const kiln_tensor *starts,
              uint64_t nu, uint64_t n, kiln_tensor *counts)
{
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__SORT_SRC, dt, "uniq_counts", &k));
  kiln__args a = kiln__args_begin(op, k);
  kiln__args_mem(&a, starts->mem);
  kiln__args_u64(&a, nu);
  kiln__args_u64(&a, n);
  kiln__args_tensor(&a, counts);
  return kiln__args_launch_1d(&a, ctx, nu, 0);
}

/* The arguments uniq_chunk_count and uniq_chunk_emit start with: the n sorted keys, chunks of
 * chunk keys, their sums, local room for L counts. */
static void
args_chunks(kiln__args *a, const kiln_tensor *keys, uint64_t n, uint64_t chunk,
            const kiln_tensor *sums, size_t L)
{
  kiln__args_tensor(a, keys);
  kiln__args_u64(a, n);
  kiln__args_u64(a, chunk);
  kiln__args_mem(a, sums->mem);
  kiln__args_local(a, L * 4);
}

/*
 * The runs of equal keys of n sorted items (keys and payloads vals; rows of ncols columns
 * compared element by element when rows_mode) into new tensors: values ([u] or [u, ncols]),
 * first, inverse (shape ishape), counts; NULL pointers are skipped.
 */
static kiln_status
emit_runs(const char *op, kiln_context *ctx, const kiln_tensor *x, int rows_mode, uint64_t n,
          uint64_t ncols, kiln_tensor *keys, kiln_tensor *vals, const kiln__shape *ishape,
          kiln_tensor **values, kiln_tensor **first, kiln_tensor **inverse, kiln_tensor **counts)
{
  kiln_tensor *flags = NULL, *pos = NULL, *starts = NULL;
  uint64_t nu = 0;
  cl_kernel k;
  kiln_status s = KILN_OK;
  if (n) {
    s = kiln__ops_scratch(op, ctx, KILN_I32, n, &flags);
    if (s == KILN_OK)
      s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, x->dtype,
                           rows_mode ? "uniq_rows_flags" : "uniq_flags", &k);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, k);
      if (rows_mode) {
        kiln__args_tensor(&a, x);
        kiln__args_u64(&a, ncols);
        kiln__args_tensor(&a, vals);
      } else {
        kiln__args_tensor(&a, keys);
      }
      kiln__args_u64(&a, n);
      kiln__args_mem(&a, flags->mem);
      s = kiln__args_launch_1d(&a, ctx, n, 0);
    }
    if (s == KILN_OK)
      s = scan_count(op, ctx, flags, n, &pos, &nu);
  }
  kiln__shape vsh = {.ndim = rows_mode ? 2 : 1, .dims = {(int64_t)nu, (int64_t)ncols}};
  if (s == KILN_OK && values)
    s = kiln__tensor_new_locked(op, ctx, x->dtype, &vsh, values);
  if (s == KILN_OK && first)
    s = new_1d(op, ctx, KILN_I64, nu, first);
  if (s == KILN_OK && inverse)
    s = kiln__tensor_new_locked(op, ctx, KILN_I64, ishape, inverse);
  if (s == KILN_OK && counts)
    s = new_1d(op, ctx, KILN_I64, nu, counts);
  if (s == KILN_OK && n)
    s = kiln__ops_scratch(op, ctx, KILN_I32, nu, &starts);
  if (s == KILN_OK && n)
    s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, x->dtype, "uniq_emit", &k);
  if (s == KILN_OK && n) {
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, x);
    kiln__args_u64(&a, rows_mode ? ncols : 1);
    kiln__args_tensor(&a, vals);
    kiln__args_u64(&a, n);
    kiln__args_mem(&a, flags->mem);
    kiln__args_mem(&a, pos->mem);
    kiln__args_tensor(&a, values ? *values : NULL);
    kiln__args_tensor(&a, first ? *first : NULL);
    kiln__args_mem(&a, starts->mem);
    kiln__args_tensor(&a, inverse ? *inverse : NULL);
    kiln__args_u32(&a, (values && (!rows_mode || ncols) ? EMIT_VALUES : 0u) |
                           (first ? EMIT_FIRST : 0u) | (inverse ? EMIT_INVERSE : 0u));
    s = kiln__args_launch_1d(&a, ctx, n, 0);
  }
  if (s == KILN_OK && n && counts)
    s = launch_counts(op, ctx, x->dtype, starts, nu, n, *counts);
  kiln_tensor_release(flags);
  kiln_tensor_release(pos);
  kiln_tensor_release(starts);
  if (s != KILN_OK) {
    drop(values);
    drop(first);
    drop(inverse);
    drop(counts);
  }
  return s;
}

/*
 * Unique values (and counts) of integers from their sorted keys alone: no positions are
 * needed when neither first positions nor the inverse are asked for. The runs are counted
 * per chunk and written in a second pass over the keys (uniq_chunk_count, uniq_chunk_emit),
 * with no flag or position arrays (ctx->lock held).
 */
static kiln_status
unique_int_keys(const char *op, kiln_context *ctx, const kiln_tensor *x, kiln_tensor **values,
                kiln_tensor **counts)
{
  const uint64_t n = x->numel;
  kiln_tensor *keys = NULL, *starts = NULL, *sums = NULL;
  uint64_t nu = 0;
  cl_kernel kcnt, kemit, ktop;
  kiln_status s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, x->dtype, "uniq_chunk_count", &kcnt);
  if (s == KILN_OK)
    s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, x->dtype, "uniq_chunk_emit", &kemit);
  if (s == KILN_OK)
    s = kiln__ops_kernel(op, ctx, KILN__SORT_RADIX_SRC, KILN_I32, "scan_top", &ktop);
  size_t L = s == KILN_OK && ctx->info.is_gpu ? kiln__launch_pow2_local(ctx, kemit) : 1;
  if (L > 256)
    L = 256;
  if (kiln__sort_radix_local)
    L = kiln__sort_radix_local;
  const uint64_t chunk = kiln__sort_chunk(ctx, L, n);
  const uint64_t nb = (n + chunk - 1) / chunk;
  if (s == KILN_OK)
    s = kiln__sort_keys_only(op, ctx, x, n, 0, &keys);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, KILN_I32, nb + 1, &sums);
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, kcnt);
    args_chunks(&a, keys, n, chunk, sums, L);
    s = kiln__args_enqueue_1d(&a, ctx, (size_t)(nb * L), L);
  }
  if (s == KILN_OK) {
    /* sums[nb] = 0 before the scan, the total after it. */
    uint32_t zero = 0;
    cl_int err = clEnqueueFillBuffer(ctx->queue, sums->mem, &zero, 4, nb * 4, 4, 0, NULL, NULL);
    s = err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "clEnqueueFillBuffer");
  }
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, ktop);
    kiln__args_mem(&a, sums->mem);
    kiln__args_u64(&a, nb + 1);
    kiln__args_local(&a, L * 4);
    s = kiln__args_enqueue_1d(&a, ctx, L, L);
  }
  uint32_t total = 0;
  if (s == KILN_OK)
    s = kiln__ops_read(op, ctx, sums, nb * 4, &total, 4);
  nu = total;
  if (s == KILN_OK)
    s = new_1d(op, ctx, x->dtype, nu, values);
  if (s == KILN_OK && counts)
    s = new_1d(op, ctx, KILN_I64, nu, counts);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, KILN_I32, nu, &starts);
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, kemit);
    args_chunks(&a, keys, n, chunk, sums, L);
    kiln__args_tensor(&a, *values);
    kiln__args_mem(&a, starts->mem);
    s = kiln__args_enqueue_1d(&a, ctx, (size_t)(nb * L), L);
  }
  if (s == KILN_OK && counts)
    s = launch_counts(op, ctx, x->dtype, starts, nu, n, *counts);
  kiln_tensor_release(sums);
  kiln_tensor_release(keys);
  kiln_tensor_release(starts);
  if (s != KILN_OK) {
    drop(values);
    drop(counts);
  }
  return s;
}

/* Unique of x flattened (ctx->lock held); outputs as emit_runs. */
static kiln_status
unique_flat(const char *op, kiln_context *ctx, const kiln_tensor *x, kiln_tensor **values,
            kiln_tensor **first, kiln_tensor **inverse, kiln_tensor **counts)
{
  kiln_tensor *keys = NULL, *vals = NULL;
  kiln_status s = KILN_OK;
  if (x->numel && values && !first && !inverse &&
      ((KILN__DT_INTS | KILN__DT_BIT(KILN_BOOL)) & KILN__DT_BIT(x->dtype)))
    return unique_int_keys(op, ctx, x, values, counts);
  if (x->numel)
    s = kiln__sort_pairs_radix(op, ctx, x, 1, x->numel, 1, 0, &keys, &vals);
  if (s == KILN_OK)
    s = emit_runs(op, ctx, x, 0, x->numel, 1, keys, vals, &x->shape, values, first, inverse,
                  counts);
  kiln_tensor_release(keys);
  kiln_tensor_release(vals);
  return s;
}

/* Keys and identity payloads of x in its own order (no sort). */
static kiln_status
keys_in_order(const char *op, kiln_context *ctx, const kiln_tensor *x, kiln_tensor **keys,
              kiln_tensor **vals)
{
  *keys = *vals = NULL;
  cl_kernel k;
  kiln_status s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, x->dtype, "sort_keys", &k);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, kiln__sort_key64(x->dtype) ? KILN_I64 : KILN_I32, x->numel,
                          keys);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, KILN_I32, x->numel, vals);
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, x);
    kiln__args_u64(&a, 1);
    kiln__args_u64(&a, x->numel);
    kiln__args_u64(&a, 1);
    kiln__args_u32(&a, 0);
    kiln__args_tensor(&a, *keys);
    kiln__args_tensor(&a, *vals);
    s = kiln__args_launch_1d(&a, ctx, x->numel, 0);
  }
  if (s != KILN_OK) {
    drop(keys);
    drop(vals);
  }
  return s;
}

kiln_status
kiln_unique(kiln_context *ctx, const kiln_tensor *x, const int64_t *axis, kiln_tensor **values,
            kiln_tensor **first, kiln_tensor **inverse, kiln_tensor **counts)
{
  const char *op = "kiln_unique";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(kiln__sort_check_x(op, ctx, x, "x"));
  KILN_RETURN_IF(!values, KILN_ERR_INVALID_ARGUMENT, op, "values is NULL");
  KILN_TRY(check_created(op, values, "values"));
  KILN_TRY(check_created(op, first, "first"));
  KILN_TRY(check_created(op, inverse, "inverse"));
  KILN_TRY(check_created(op, counts, "counts"));
  if (axis) {
    KILN_RETURN_IF(x->shape.ndim != 2, KILN_ERR_SHAPE, op,
                   "unique along an axis takes a 2-D x, not %zu dimensions", x->shape.ndim);
    KILN_RETURN_IF(*axis != 0 && *axis != -2, KILN_ERR_INVALID_ARGUMENT, op,
                   "axis %lld: unique takes the rows (axis 0)", (long long)*axis);
  }
  kiln__ctx_lock(ctx);
  kiln_status s;
  if (!axis) {
    s = unique_flat(op, ctx, x, values, first, inverse, counts);
  } else {
    const uint64_t nrows = (uint64_t)x->shape.dims[0], ncols = (uint64_t)x->shape.dims[1];
    kiln_tensor *keys = NULL, *vals = NULL;
    s = KILN_OK;
    if (nrows)
      s = kiln__sort_rows_radix(op, ctx, x, nrows, ncols, NULL, 0, NULL, &keys, &vals);
    kiln__shape ish = {.ndim = 1, .dims = {(int64_t)nrows}};
    if (s == KILN_OK)
      s = emit_runs(op, ctx, x, 1, nrows, ncols, keys, vals, &ish, values, first, inverse, counts);
    kiln_tensor_release(keys);
    kiln_tensor_release(vals);
  }
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_unique_consecutive(kiln_context *ctx, const kiln_tensor *x, kiln_tensor **values,
                        kiln_tensor **inverse, kiln_tensor **counts)
{
  const char *op = "kiln_unique_consecutive";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(kiln__sort_check_x(op, ctx, x, "x"));
  KILN_RETURN_IF(!values, KILN_ERR_INVALID_ARGUMENT, op, "values is NULL");
  KILN_TRY(check_created(op, values, "values"));
  KILN_TRY(check_created(op, inverse, "inverse"));
  KILN_TRY(check_created(op, counts, "counts"));
  kiln__ctx_lock(ctx);
  kiln_tensor *keys = NULL, *vals = NULL;
  kiln_status s = KILN_OK;
  if (x->numel)
    s = keys_in_order(op, ctx, x, &keys, &vals);
  if (s == KILN_OK)
    s = emit_runs(op, ctx, x, 0, x->numel, 1, keys, vals, &x->shape, values, NULL, inverse, counts);
  kiln_tensor_release(keys);
  kiln_tensor_release(vals);
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---------------------------------------------------------------- searching */

kiln_status
kiln_searchsorted(kiln_context *ctx, const kiln_tensor *seq, const kiln_tensor *v, int right,
                  const kiln_tensor *sorter, kiln_tensor **out)
{
  const char *op = "kiln_searchsorted";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(kiln__sort_check_x(op, ctx, seq, "seq"));
  KILN_TRY(kiln__tensor_check(op, v, ctx));
  KILN_RETURN_IF(v->dtype != seq->dtype, KILN_ERR_DTYPE, op, "v is %s and seq %s",
                 kiln_dtype_name(v->dtype), kiln_dtype_name(seq->dtype));
  KILN_RETURN_IF(seq->shape.ndim == 0, KILN_ERR_SHAPE, op, "seq is 0-D");
  const size_t nd = seq->shape.ndim;
  const int batched = nd > 1;
  if (batched) {
    int same = v->shape.ndim == nd;
    for (size_t i = 0; same && i + 1 < nd; i++)
      same = v->shape.dims[i] == seq->shape.dims[i];
    KILN_RETURN_IF(!same, KILN_ERR_SHAPE, op,
                   "a %zu-D seq needs v of its leading dimensions (v has %zu dimensions)", nd,
                   v->shape.ndim);
  }
  if (sorter) {
    KILN_TRY(kiln__tensor_check(op, sorter, ctx));
    KILN_RETURN_IF(sorter->dtype != KILN_I64, KILN_ERR_DTYPE, op, "sorter is %s, expected i64",
                   kiln_dtype_name(sorter->dtype));
    KILN_RETURN_IF(!kiln__shape_equal(&sorter->shape, &seq->shape), KILN_ERR_SHAPE, op,
                   "sorter's shape is not seq's");
  }
  const uint64_t n = (uint64_t)seq->shape.dims[nd - 1];
  const uint64_t m = batched ? (uint64_t)v->shape.dims[nd - 1] : v->numel;
  kiln__out_target t;
  const kiln_tensor *ins[3] = {seq, v, sorter};
  KILN_TRY(kiln__ops_out_begin(op, ctx, KILN_I64, &v->shape, out, ins, 3, 0, &t));
  kiln__ctx_lock(ctx);
  cl_kernel k;
  /* One long seq, no sorter: the first probes in splitters held in local memory (GPUs, or
   * the test hook's count). */
  const uint64_t ksz = kiln__sort_key64(seq->dtype) ? 8 : 4;
  uint32_t ns = kiln__sort_ss_splitters ? kiln__sort_ss_splitters : ctx->info.is_gpu ? 2048 : 0;
  while (ns && ns * ksz * 2 > ctx->info.local_mem_bytes)
    ns /= 2;
  if (ns && !batched && !sorter && (kiln__sort_ss_splitters || n >= (uint64_t)ns * 16) &&
      v->numel) {
    kiln_status s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, seq->dtype, "ss_search_cached", &k);
    if (s == KILN_OK) {
      uint64_t cu = ctx->info.compute_units ? ctx->info.compute_units : 1;
      size_t L = kiln__launch_pow2_local(ctx, k);
      if (L > 256)
        L = 256;
      uint64_t groups = (v->numel + L - 1) / L, most = cu * 16;
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, seq);
      kiln__args_u64(&a, n);
      kiln__args_tensor(&a, v);
      kiln__args_u64(&a, v->numel);
      kiln__args_u32(&a, (uint32_t) !!right);
      kiln__args_tensor(&a, t.dst);
      kiln__args_local(&a, (size_t)(ns * ksz));
      kiln__args_u32(&a, ns);
      s = kiln__args_enqueue_1d(&a, ctx, (size_t)((groups < most ? groups : most) * L), L);
    }
    s = kiln__ops_out_finish(op, ctx, &t, s);
    kiln__ctx_unlock(ctx);
    return s;
  }
  kiln_status s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, seq->dtype, "ss_search", &k);
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, seq);
    kiln__args_u64(&a, n);
    kiln__args_tensor(&a, sorter);
    kiln__args_u32(&a, sorter != NULL);
    kiln__args_u32(&a, (uint32_t)batched);
    kiln__args_tensor(&a, v);
    kiln__args_u64(&a, m ? m : 1);
    kiln__args_u64(&a, v->numel);
    kiln__args_u32(&a, (uint32_t) !!right);
    kiln__args_tensor(&a, t.dst);
    s = kiln__args_launch_1d(&a, ctx, v->numel, 0);
  }
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/*
 * member_search of a's elements in the sorted keys (skeys, svals: ns pairs); tf, loc, hit
 * (uint scratch, hit == keep) as given (NULL skipped).
 */
static kiln_status
member(const char *op, kiln_context *ctx, kiln_tensor *skeys, kiln_tensor *svals, uint64_t ns,
       const kiln_tensor *a, kiln_tensor *tf, kiln_tensor *loc, kiln_tensor *hit, int keep)
{
  if (!a->numel)
    return KILN_OK;
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__SORT_SRC, a->dtype, "member_search", &k));
  kiln__args b = kiln__args_begin(op, k);
  kiln__args_tensor(&b, skeys);
  kiln__args_tensor(&b, svals);
  kiln__args_u64(&b, ns);
  kiln__args_tensor(&b, a);
  kiln__args_u64(&b, a->numel);
  kiln__args_tensor(&b, tf);
  kiln__args_tensor(&b, loc);
  kiln__args_mem(&b, hit ? hit->mem : NULL);
  kiln__args_u32(&b, (uint32_t) !!keep);
  kiln__args_u32(&b, (tf ? MEMBER_TF : 0u) | (loc ? MEMBER_LOC : 0u) | (hit ? MEMBER_HIT : 0u));
  return kiln__args_launch_1d(&b, ctx, a->numel, 0);
}

static kiln_status
check_pair(const char *op, kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(kiln__sort_check_x(op, ctx, a, "a"));
  KILN_TRY(kiln__sort_check_x(op, ctx, b, "b"));
  KILN_RETURN_IF(a->dtype != b->dtype, KILN_ERR_DTYPE, op, "a is %s and b %s",
                 kiln_dtype_name(a->dtype), kiln_dtype_name(b->dtype));
  KILN_RETURN_IF(a->numel + b->numel >= ((uint64_t)1 << 32), KILN_ERR_OVERFLOW, op,
                 "a and b have 2^32 or more elements together");
  return KILN_OK;
}

kiln_status
kiln_isin(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *s, kiln_tensor **tf,
          kiln_tensor **loc)
{
  const char *op = "kiln_isin";
  KILN_TRY(check_pair(op, ctx, a, s));
  KILN_RETURN_IF(!tf && !loc, KILN_ERR_INVALID_ARGUMENT, op, "tf and loc are both NULL");
  kiln_tensor *given[2] = {tf ? *tf : NULL, loc ? *loc : NULL};
  for (size_t i = 0; i < 2; i++)
    if (given[i])
      KILN_TRY(kiln__tensor_check(op, given[i], ctx));
  static const char *const names[2] = {"tf", "loc"};
  KILN_TRY(kiln__ops_outputs_disjoint(op, given, names, 2));
  const kiln_tensor *ins[2] = {a, s};
  kiln__out_target t[2];
  memset(t, 0, sizeof t);
  if (tf)
    KILN_TRY(kiln__ops_out_begin(op, ctx, KILN_BOOL, &a->shape, tf, ins, 2, 0, &t[0]));
  if (loc) {
    kiln_status st = kiln__ops_out_begin(op, ctx, KILN_I64, &a->shape, loc, ins, 2, 0, &t[1]);
    if (st != KILN_OK) {
      kiln__ctx_lock(ctx);
      if (tf)
        kiln__ops_out_finish(op, ctx, &t[0], st);
      kiln__ctx_unlock(ctx);
      return st;
    }
  }
  kiln__ctx_lock(ctx);
  kiln_tensor *keys = NULL, *vals = NULL;
  kiln_status st = KILN_OK;
  if (s->numel && a->numel)
    st = kiln__sort_pairs_radix(op, ctx, s, 1, s->numel, 1, 0, &keys, &vals);
  if (st == KILN_OK)
    st = member(op, ctx, keys, vals, keys ? s->numel : 0, a, tf ? t[0].dst : NULL,
                loc ? t[1].dst : NULL, NULL, 1);
  kiln_tensor_release(keys);
  kiln_tensor_release(vals);
  if (tf)
    st = kiln__ops_out_finish(op, ctx, &t[0], st);
  if (loc)
    st = kiln__ops_out_finish(op, ctx, &t[1], st);
  kiln__ctx_unlock(ctx);
  return st;
}

/* ---------------------------------------------------------------- set operations */

/* A new 1-D tensor holding a's elements then b's. */
static kiln_status
concat(const char *op, kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b,
       kiln_tensor **out)
{
  KILN_TRY(new_1d(op, ctx, a->dtype, a->numel + b->numel, out));
  const kiln_tensor *src[2] = {a, b};
  uint64_t at = 0;
  for (size_t i = 0; i < 2; i++) {
    if (!src[i]->nbytes)
      continue;
    cl_int err = clEnqueueCopyBuffer(ctx->queue, src[i]->mem, (*out)->mem, src[i]->offset,
                                     (*out)->offset + at, src[i]->nbytes, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
      drop(out);
      return kiln__fail_cl(op, err, "clEnqueueCopyBuffer");
    }
    at += src[i]->nbytes;
  }
  return KILN_OK;
}

/*
 * The elements of the sorted distinct u (first positions fu) that are (keep) or are not in
 * the sorted distinct w: *out (new, u's dtype), with *ou their first positions (ou may be
 * NULL) and *ow (NULL skips) the first positions fw of their matches in w.
 */
static kiln_status
filter_members(const char *op, kiln_context *ctx, const kiln_tensor *u, const kiln_tensor *fu,
               const kiln_tensor *w, const kiln_tensor *fw, int keep, kiln_tensor **out,
               kiln_tensor **ou, kiln_tensor **ow)
{
  kiln_tensor *wk = NULL, *wv = NULL, *hit = NULL, *loc = NULL, *pos = NULL, *locc = NULL;
  uint64_t cnt = 0;
  kiln_status s = KILN_OK;
  if (u->numel && w->numel)
    s = keys_in_order(op, ctx, w, &wk, &wv);
  if (s == KILN_OK && u->numel)
    s = kiln__ops_scratch(op, ctx, KILN_I32, u->numel, &hit);
  if (s == KILN_OK && u->numel && ow)
    s = kiln__ops_scratch(op, ctx, KILN_I64, u->numel, &loc);
  if (s == KILN_OK)
    s = member(op, ctx, wk, wv, wk ? w->numel : 0, u, NULL, loc, hit, keep);
  if (s == KILN_OK && u->numel)
    s = scan_count(op, ctx, hit, u->numel, &pos, &cnt);
  if (s == KILN_OK)
    s = new_1d(op, ctx, u->dtype, cnt, out);
  if (s == KILN_OK && ou)
    s = new_1d(op, ctx, KILN_I64, cnt, ou);
  if (s == KILN_OK && ow)
    s = new_1d(op, ctx, KILN_I64, cnt, ow);
  if (s == KILN_OK && ow && cnt)
    s = kiln__ops_scratch(op, ctx, KILN_I64, cnt, &locc);
  cl_kernel k;
  if (s == KILN_OK && cnt)
    s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, u->dtype, "compact", &k);
  for (int pass = 0; s == KILN_OK && cnt && pass < 2; pass++) {
    /* Pass 0: the values and their first positions; pass 1: the match positions in w. */
    if (pass == 1 && !ow)
      break;
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, u);
    kiln__args_u64(&a, u->numel);
    kiln__args_mem(&a, hit->mem);
    kiln__args_mem(&a, pos->mem);
    kiln__args_tensor(&a, *out);
    kiln__args_tensor(&a, pass ? loc : fu);
    kiln__args_tensor(&a, pass ? locc : ou ? *ou : NULL);
    kiln__args_u32(&a, pass ? 2u : 1u | (ou ? 2u : 0u));
    s = kiln__args_launch_1d(&a, ctx, u->numel, 0);
  }
  if (s == KILN_OK && ow && cnt)
    s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, u->dtype, "take_i64", &k);
  if (s == KILN_OK && ow && cnt) {
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, fw);
    kiln__args_tensor(&a, locc);
    kiln__args_u64(&a, cnt);
    kiln__args_tensor(&a, *ow);
    s = kiln__args_launch_1d(&a, ctx, cnt, 0);
  }
  kiln_tensor_release(wk);
  kiln_tensor_release(wv);
  kiln_tensor_release(hit);
  kiln_tensor_release(loc);
  kiln_tensor_release(pos);
  kiln_tensor_release(locc);
  if (s != KILN_OK) {
    drop(out);
    if (ou)
      drop(ou);
    if (ow)
      drop(ow);
  }
  return s;
}

kiln_status
kiln_union(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b, kiln_tensor **out)
{
  const char *op = "kiln_union";
  KILN_TRY(check_pair(op, ctx, a, b));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(check_created(op, out, "out"));
  kiln__ctx_lock(ctx);
  kiln_tensor *ab = NULL;
  kiln_status s = concat(op, ctx, a, b, &ab);
  if (s == KILN_OK)
    s = unique_flat(op, ctx, ab, out, NULL, NULL, NULL);
  kiln_tensor_release(ab);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_intersect(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b, kiln_tensor **out,
               kiln_tensor **ia, kiln_tensor **ib)
{
  const char *op = "kiln_intersect";
  KILN_TRY(check_pair(op, ctx, a, b));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(check_created(op, out, "out"));
  KILN_TRY(check_created(op, ia, "ia"));
  KILN_TRY(check_created(op, ib, "ib"));
  kiln__ctx_lock(ctx);
  kiln_tensor *ua = NULL, *fa = NULL, *ub = NULL, *fb = NULL;
  kiln_status s = unique_flat(op, ctx, a, &ua, &fa, NULL, NULL);
  if (s == KILN_OK)
    s = unique_flat(op, ctx, b, &ub, &fb, NULL, NULL);
  if (s == KILN_OK)
    s = filter_members(op, ctx, ua, fa, ub, fb, 1, out, ia, ib);
  kiln_tensor_release(ua);
  kiln_tensor_release(fa);
  kiln_tensor_release(ub);
  kiln_tensor_release(fb);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_setdiff(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b, kiln_tensor **out,
             kiln_tensor **ia)
{
  const char *op = "kiln_setdiff";
  KILN_TRY(check_pair(op, ctx, a, b));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(check_created(op, out, "out"));
  KILN_TRY(check_created(op, ia, "ia"));
  kiln__ctx_lock(ctx);
  kiln_tensor *ua = NULL, *fa = NULL, *ub = NULL;
  kiln_status s = unique_flat(op, ctx, a, &ua, &fa, NULL, NULL);
  if (s == KILN_OK)
    s = unique_flat(op, ctx, b, &ub, NULL, NULL, NULL);
  if (s == KILN_OK)
    s = filter_members(op, ctx, ua, fa, ub, NULL, 0, out, ia, NULL);
  kiln_tensor_release(ua);
  kiln_tensor_release(fa);
  kiln_tensor_release(ub);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_setxor(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b, kiln_tensor **out)
{
  const char *op = "kiln_setxor";
  KILN_TRY(check_pair(op, ctx, a, b));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(check_created(op, out, "out"));
  kiln__ctx_lock(ctx);
  kiln_tensor *ua = NULL, *ub = NULL, *da = NULL, *db = NULL, *ab = NULL;
  kiln_status s = unique_flat(op, ctx, a, &ua, NULL, NULL, NULL);
  if (s == KILN_OK)
    s = unique_flat(op, ctx, b, &ub, NULL, NULL, NULL);
  if (s == KILN_OK)
    s = filter_members(op, ctx, ua, NULL, ub, NULL, 0, &da, NULL, NULL);
  if (s == KILN_OK)
    s = filter_members(op, ctx, ub, NULL, ua, NULL, 0, &db, NULL, NULL);
  if (s == KILN_OK)
    s = concat(op, ctx, da, db, &ab);
  if (s == KILN_OK)
    s = new_1d(op, ctx, a->dtype, ab->numel, out);
  /* The two sides are disjoint (NaN, a member of nothing, may come from both, as NumPy). */
  if (s == KILN_OK)
    s = kiln__sort_values_flat(op, ctx, ab, *out);
  if (s != KILN_OK)
    drop(out);
  kiln_tensor_release(ua);
  kiln_tensor_release(ub);
  kiln_tensor_release(da);
  kiln_tensor_release(db);
  kiln_tensor_release(ab);
  kiln__ctx_unlock(ctx);
  return s;
}
