/*
 * nn training family: embedding backward and embedding_bag forward/backward
 * (cl_kernels/nn_embed.cl): validated indices, then a device sort of (row, token) pairs and
 * per-row sums in token order.
 */
#include <stdio.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "core/shape.h"
#include "kiln/nn.h"
#include "ops/nn_train.h"
#include "runtime/runtime.h"

static kiln_status
check_index(const char *op, kiln_context *ctx, const kiln_tensor *t, const char *what)
{
  KILN_RETURN_IF(!t, KILN_ERR_INVALID_HANDLE, op, "%s is NULL", what);
  KILN_TRY(kiln__tensor_check(op, t, ctx));
  KILN_RETURN_IF(t->dtype != KILN_I32 && t->dtype != KILN_I64, KILN_ERR_DTYPE, op,
                 "%s is %s, expected i32 or i64", what, kiln_dtype_name(t->dtype));
  return KILN_OK;
}

/* Runs a checking kernel (args begun by the caller, the flag appended here) over n items and
 * turns a raised flag into KILN_ERR_INVALID_ARGUMENT; ctx->lock held. */
static kiln_status
checked(const char *op, kiln_context *ctx, kiln__args *a, uint64_t n, const char *what)
{
  if (!n)
    return KILN_OK;
  kiln_tensor *flag = NULL;
  kiln_status s = kiln__ops_flag_new(op, ctx, &flag);
  uint32_t f[4] = {0, 0, 0, 0};
  if (s == KILN_OK) {
    kiln__args_mem(a, flag->mem);
    s = kiln__args_launch_1d(a, ctx, n, 0);
  }
  if (s == KILN_OK)
    s = kiln__ops_flag_read(op, ctx, flag, f);
  kiln_tensor_release(flag);
  if (s == KILN_OK && f[0])
    s = kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "%s at position %u is out of range", what,
                   f[1]);
  return s;
}

static kiln_status
check_indices_locked(const char *op, kiln_context *ctx, const kiln_tensor *idx, int64_t V,
                     kiln_dtype dt)
{
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__NNT_EMBED, dt, "emb_check", &k));
  kiln__args a = kiln__args_begin(op, k);
  kiln__args_tensor(&a, idx);
  kiln__args_u32(&a, idx->dtype == KILN_I64);
  kiln__args_u64(&a, idx->numel);
  kiln__args_i64(&a, V);
  char what[64];
  snprintf(what, sizeof what, "an index (of %lld rows)", (long long)V);
  return checked(op, ctx, &a, idx->numel, what);
}

static kiln_status
check_offsets_locked(const char *op, kiln_context *ctx, const kiln_tensor *offs, uint64_t ntok,
                     kiln_dtype dt)
{
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__NNT_EMBED, dt, "bag_check", &k));
  kiln__args a = kiln__args_begin(op, k);
  kiln__args_tensor(&a, offs);
  kiln__args_u32(&a, offs->dtype == KILN_I64);
  kiln__args_u64(&a, offs->numel);
  kiln__args_u64(&a, ntok);
  return checked(op, ctx, &a, offs->numel,
                 "an offset (offsets[0] must be 0, non-decreasing, <= the token count)");
}

/*
 * grad_weight [V, E] = per-row sums over the tokens of idx of src rows (rowmap: the src row of
 * each token, NULL: the token itself; scale: per-token factors, NULL: 1); ctx->lock held.
 */
static kiln_status
sorted_accum(const char *op, kiln_context *ctx, const kiln_tensor *idx, const kiln_tensor *src,
             cl_mem rowmap, cl_mem scale, kiln_tensor *out, uint64_t V, uint64_t E, uint64_t pad,
             kiln_dtype dt)
{
  uint64_t n = idx->numel, npad = kiln__ops_pow2(n);
  kiln_tensor *keys = NULL, *vals = NULL;
  kiln_status s = KILN_OK;
  if (n) {
    s = kiln__ops_scratch(op, ctx, KILN_I64, npad, &keys);
    if (s == KILN_OK)
      s = kiln__ops_scratch(op, ctx, KILN_I64, npad, &vals);
    cl_kernel k;
    if (s == KILN_OK)
      s = kiln__ops_kernel(op, ctx, KILN__NNT_EMBED, dt, "emb_keys", &k);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, idx);
      kiln__args_u32(&a, idx->dtype == KILN_I64);
      kiln__args_u64(&a, n);
      kiln__args_u64(&a, npad);
      kiln__args_i64(&a, (int64_t)V);
      kiln__args_tensor(&a, keys);
      kiln__args_tensor(&a, vals);
      s = kiln__args_launch_1d(&a, ctx, npad, 0);
    }
    if (s == KILN_OK)
      s = kiln__ops_sort_pairs(op, ctx, KILN__NNT_EMBED, dt, keys, vals, npad);
  }
  cl_kernel k;
  if (s == KILN_OK && V && E)
    s = kiln__ops_kernel(op, ctx, KILN__NNT_EMBED, dt, "emb_accum", &k);
  if (s == KILN_OK && V && E) {
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, keys);
    kiln__args_tensor(&a, vals);
    kiln__args_u64(&a, n);
    kiln__args_tensor(&a, src);
    kiln__args_mem(&a, rowmap);
    kiln__args_mem(&a, scale);
    kiln__args_tensor(&a, out);
    kiln__args_u64(&a, V);
    kiln__args_u64(&a, E);
    kiln__args_u64(&a, pad);
    s = kiln__args_launch_1d(&a, ctx, V * E, 0);
  }
  kiln_tensor_release(keys);
  kiln_tensor_release(vals);
  return s;
}

static kiln_status
check_num_weights(const char *op, int64_t V)
{
  KILN_RETURN_IF(V < 0, KILN_ERR_INVALID_ARGUMENT, op, "num_weights %lld is negative",
                 (long long)V);
  return KILN_OK;
}

kiln_status
kiln_embedding_backward(kiln_context *ctx, const kiln_tensor *grad, const kiln_tensor *indices,
                        int64_t num_weights, int64_t padding_idx, kiln_tensor **grad_weight)
{
  static const char op[] = "kiln_embedding_backward";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!grad_weight, KILN_ERR_INVALID_ARGUMENT, op, "grad_weight is NULL");
  KILN_TRY(kiln__nnt_check_real(op, ctx, grad, "grad"));
  KILN_TRY(check_index(op, ctx, indices, "indices"));
  KILN_TRY(check_num_weights(op, num_weights));
  char a1[128], a2[128];
  int ok = grad->shape.ndim == indices->shape.ndim + 1;
  for (size_t i = 0; ok && i < indices->shape.ndim; i++)
    ok = grad->shape.dims[i] == indices->shape.dims[i];
  KILN_RETURN_IF(!ok, KILN_ERR_SHAPE, op, "grad has shape %s; indices %s need indices.shape + [E]",
                 kiln__shape_format(&grad->shape, a1, sizeof a1),
                 kiln__shape_format(&indices->shape, a2, sizeof a2));
  uint64_t E = (uint64_t)grad->shape.dims[grad->shape.ndim - 1], V = (uint64_t)num_weights;
  kiln__shape ws = {0};
  ws.ndim = 2;
  ws.dims[0] = num_weights;
  ws.dims[1] = (int64_t)E;
  const kiln_tensor *ins[2] = {grad, indices};
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, grad->dtype, &ws, grad_weight, ins, 2, 0, &t));
  kiln__ctx_lock(ctx);
  kiln_status s = check_indices_locked(op, ctx, indices, num_weights, grad->dtype);
  uint64_t pad = padding_idx >= 0 && padding_idx < num_weights ? (uint64_t)padding_idx : UINT64_MAX;
  if (s == KILN_OK)
    s = sorted_accum(op, ctx, indices, grad, NULL, NULL, t.dst, V, E, pad, grad->dtype);
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/* The checks both embedding_bag directions share. */
static kiln_status
bag_checks(const char *op, kiln_context *ctx, const kiln_tensor *fl, const kiln_tensor *indices,
           const kiln_tensor *offsets, kiln_bag_mode mode, const kiln_tensor *psw)
{
  KILN_TRY(kiln__nnt_check_real(op, ctx, fl, "weight"));
  KILN_TRY(check_index(op, ctx, indices, "indices"));
  KILN_TRY(check_index(op, ctx, offsets, "offsets"));
  KILN_RETURN_IF(mode != KILN_BAG_SUM && mode != KILN_BAG_MEAN, KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown mode %d", (int)mode);
  KILN_RETURN_IF(indices->dtype != offsets->dtype, KILN_ERR_DTYPE, op,
                 "indices (%s) and offsets (%s) must share one dtype",
                 kiln_dtype_name(indices->dtype), kiln_dtype_name(offsets->dtype));
  KILN_RETURN_IF(indices->shape.ndim != 1 || offsets->shape.ndim != 1, KILN_ERR_SHAPE, op,
                 "indices and offsets must be 1-D");
  KILN_RETURN_IF(fl->shape.ndim != 2, KILN_ERR_SHAPE, op, "expected a 2-D tensor [rows, E]");
  if (psw) {
    KILN_RETURN_IF(mode != KILN_BAG_SUM, KILN_ERR_INVALID_ARGUMENT, op,
                   "per_sample_weights needs KILN_BAG_SUM (as PyTorch)");
    KILN_TRY(kiln__tensor_check(op, psw, ctx));
    KILN_RETURN_IF(psw->dtype != fl->dtype, KILN_ERR_DTYPE, op,
                   "per_sample_weights is %s, expected %s", kiln_dtype_name(psw->dtype),
                   kiln_dtype_name(fl->dtype));
    KILN_RETURN_IF(psw->numel != indices->numel || psw->shape.ndim != 1, KILN_ERR_SHAPE, op,
                   "per_sample_weights must be 1-D of the %llu tokens",
                   (unsigned long long)indices->numel);
  }
  return KILN_OK;
}

kiln_status
kiln_embedding_bag(kiln_context *ctx, const kiln_tensor *weight, const kiln_tensor *indices,
                   const kiln_tensor *offsets, kiln_bag_mode mode,
                   const kiln_tensor *per_sample_weights, kiln_tensor **out)
{
  static const char op[] = "kiln_embedding_bag";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(bag_checks(op, ctx, weight, indices, offsets, mode, per_sample_weights));
  uint64_t B = offsets->numel, E = (uint64_t)weight->shape.dims[1], T = indices->numel;
  kiln__shape os = {0};
  os.ndim = 2;
  os.dims[0] = (int64_t)B;
  os.dims[1] = (int64_t)E;
  const kiln_tensor *ins[4] = {weight, indices, offsets, per_sample_weights};
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, weight->dtype, &os, out, ins, 4, 0, &t));
  kiln__ctx_lock(ctx);
  kiln_dtype dt = weight->dtype;
  kiln_status s = check_indices_locked(op, ctx, indices, weight->shape.dims[0], dt);
  if (s == KILN_OK)
    s = check_offsets_locked(op, ctx, offsets, T, dt);
  if (s == KILN_OK && B && E) {
    cl_kernel k;
    s = kiln__ops_kernel(op, ctx, KILN__NNT_EMBED, dt, "bag_fwd", &k);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, weight);
      kiln__args_tensor(&a, indices);
      kiln__args_tensor(&a, offsets);
      /* One is64 flag serves both index tensors: they must agree. */
      kiln__args_u32(&a, indices->dtype == KILN_I64);
      kiln__args_u64(&a, B);
      kiln__args_u64(&a, T);
      kiln__args_u64(&a, E);
      kiln__args_i64(&a, weight->shape.dims[0]);
      kiln__args_tensor(&a, per_sample_weights);
      kiln__args_u32(&a, mode == KILN_BAG_MEAN);
      kiln__args_tensor(&a, t.dst);
      s = kiln__args_launch_1d(&a, ctx, B * E, 0);
    }
  }
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_embedding_bag_backward(kiln_context *ctx, const kiln_tensor *grad,
                            const kiln_tensor *indices, const kiln_tensor *offsets,
                            kiln_bag_mode mode, const kiln_tensor *per_sample_weights,
                            int64_t num_weights, kiln_tensor **grad_weight)
{
  static const char op[] = "kiln_embedding_bag_backward";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!grad_weight, KILN_ERR_INVALID_ARGUMENT, op, "grad_weight is NULL");
  KILN_TRY(bag_checks(op, ctx, grad, indices, offsets, mode, per_sample_weights));
  KILN_TRY(check_num_weights(op, num_weights));
  uint64_t B = offsets->numel, E = (uint64_t)grad->shape.dims[1], T = indices->numel;
  KILN_RETURN_IF((uint64_t)grad->shape.dims[0] != B, KILN_ERR_SHAPE, op,
                 "grad has %lld rows, expected one per bag (%llu)", (long long)grad->shape.dims[0],
                 (unsigned long long)B);
  KILN_RETURN_IF(T && !B, KILN_ERR_SHAPE, op, "tokens without bags (offsets is empty)");
  kiln__shape ws = {0};
  ws.ndim = 2;
  ws.dims[0] = num_weights;
  ws.dims[1] = (int64_t)E;
  const kiln_tensor *ins[4] = {grad, indices, offsets, per_sample_weights};
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, grad->dtype, &ws, grad_weight, ins, 4, 0, &t));
  kiln__ctx_lock(ctx);
  kiln_dtype dt = grad->dtype;
  kiln_status s = check_indices_locked(op, ctx, indices, num_weights, dt);
  if (s == KILN_OK)
    s = check_offsets_locked(op, ctx, offsets, T, dt);
  kiln__ops_tmp rowmap = {0}, scale = {0};
  if (s == KILN_OK && T) {
    s = kiln__ops_tmp_alloc(ctx, T * 8, &rowmap);
    if (s == KILN_OK)
      s = kiln__ops_tmp_alloc(ctx, T * kiln_dtype_size(kiln__nnt_cdt(dt)), &scale);
    cl_kernel k;
    if (s == KILN_OK)
      s = kiln__ops_kernel(op, ctx, KILN__NNT_EMBED, dt, "bag_tokens", &k);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, offsets);
      kiln__args_u32(&a, offsets->dtype == KILN_I64);
      kiln__args_u64(&a, B);
      kiln__args_u64(&a, T);
      kiln__args_tensor(&a, per_sample_weights);
      kiln__args_u32(&a, mode == KILN_BAG_MEAN);
      kiln__args_mem(&a, rowmap.mem);
      kiln__args_mem(&a, scale.mem);
      s = kiln__args_launch_1d(&a, ctx, T, 0);
    }
  }
  if (s == KILN_OK)
    s = sorted_accum(op, ctx, indices, grad, rowmap.mem, scale.mem, t.dst, (uint64_t)num_weights,
                     E, UINT64_MAX, dt);
  if (rowmap.mem)
    kiln__ops_tmp_free(ctx, &rowmap);
  if (scale.mem)
    kiln__ops_tmp_free(ctx, &scale);
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}
