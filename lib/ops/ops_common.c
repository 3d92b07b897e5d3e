/* Helpers shared by the op families (see ops_common.h). */
#include "ops/ops_common.h"

#include <stdio.h>
#include <string.h>

kiln_status
kiln__ops_kernel(const char *op, kiln_context *ctx, const char *source, kiln_dtype dtype,
                 const char *name, cl_kernel *k)
{
  return kiln__ops_kernel_variant(op, ctx, source, dtype, NULL, name, k);
}

kiln_status
kiln__ops_kernel_variant(const char *op, kiln_context *ctx, const char *source, kiln_dtype dtype,
                         const kiln__program_variant *v, const char *name, cl_kernel *k)
{
  KILN__ASSERT_LOCKED(ctx);
  char options[192];
  KILN_RETURN_IF(!kiln__program_options(&ctx->info, source, dtype, v, options, sizeof options),
                 KILN_ERR_DTYPE, op, "dtype %s is not supported by the %s.cl kernels",
                 kiln_dtype_name(dtype), source);
  return kiln__kernel_get(op, ctx, source, options, name, k);
}

kiln_dtype
kiln__ops_move_dtype(kiln_dtype dtype)
{
  return dtype == KILN_F16 ? KILN_BF16 : dtype == KILN_C64 ? KILN_I64 : dtype;
}

kiln_status
kiln__ops_axis(const char *op, int64_t axis, size_t ndim, size_t *out)
{
  int64_t n = (int64_t)ndim;
  KILN_RETURN_IF(axis < -n || axis >= n, KILN_ERR_INVALID_ARGUMENT, op,
                 "axis %lld is out of range for a tensor of %zu dimensions", (long long)axis, ndim);
  *out = (size_t)(axis < 0 ? axis + n : axis);
  return KILN_OK;
}

void
kiln__ops_strides(const kiln__shape *s, int64_t strides[KILN_MAX_DIMS])
{
  int64_t st = 1;
  for (size_t i = KILN_MAX_DIMS; i-- > 0;) {
    if (i >= s->ndim) {
      strides[i] = 0;
      continue;
    }
    strides[i] = st;
    st *= s->dims[i] ? s->dims[i] : 1;
  }
}

uint64_t
kiln__ops_elem_offset(const kiln_tensor *t)
{
  return t ? t->offset / kiln_dtype_size(t->dtype) : 0;
}

kiln_status
kiln__ops_tmp_alloc(kiln_context *ctx, uint64_t bytes, kiln__ops_tmp *t)
{
  return kiln__pool_alloc(ctx, bytes ? bytes : 1, &t->mem, &t->cap);
}

void
kiln__ops_tmp_free(kiln_context *ctx, kiln__ops_tmp *t)
{
  if (t->mem)
    kiln__pool_free(ctx, t->mem, t->cap);
  t->mem = NULL;
}

/*
 * The buffer whose bytes t addresses and t's first byte in it. kiln's pool
 * never makes sub-buffers, so only a wrapped cl_mem can be one; OpenCL has
 * no sub-buffers of sub-buffers, so one level resolves it.
 */
static cl_mem
byte_base(const kiln_tensor *t, uint64_t *first)
{
  *first = t->offset;
  if (!t->wrapped)
    return t->mem;
  cl_mem parent = NULL;
  size_t origin = 0;
  if (clGetMemObjectInfo(t->mem, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL) !=
          CL_SUCCESS ||
      !parent ||
      clGetMemObjectInfo(t->mem, CL_MEM_OFFSET, sizeof origin, &origin, NULL) != CL_SUCCESS)
    return t->mem;
  *first += origin;
  return parent;
}

kiln__overlap
kiln__ops_overlap(const kiln_tensor *a, const kiln_tensor *b)
{
  if (!a || !b || !a->mem || !b->mem || !a->nbytes || !b->nbytes)
    return KILN__OVERLAP_NONE;
  uint64_t fa, fb;
  if (byte_base(a, &fa) != byte_base(b, &fb))
    return KILN__OVERLAP_NONE;
  if (fa >= fb + b->nbytes || fb >= fa + a->nbytes)
    return KILN__OVERLAP_NONE;
  return fa == fb && a->nbytes == b->nbytes ? KILN__OVERLAP_SAME : KILN__OVERLAP_PARTIAL;
}

int
kiln__ops_alias(const kiln_tensor *a, const kiln_tensor *b)
{
  return kiln__ops_overlap(a, b) != KILN__OVERLAP_NONE;
}

kiln_status
kiln__ops_outputs_disjoint(const char *op, kiln_tensor *const *outs, const char *const *names,
                           size_t n)
{
  for (size_t i = 0; i < n; i++) {
    for (size_t j = i + 1; j < n; j++) {
      if (!kiln__ops_alias(outs[i], outs[j]))
        continue;
      if (names)
        return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                          "outputs %s and %s overlap; each result needs its own bytes", names[i],
                          names[j]);
      return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                        "outputs %zu and %zu overlap; each result needs its own bytes", i, j);
    }
  }
  return KILN_OK;
}

kiln_status
kiln__ops_out_begin(const char *op, kiln_context *ctx, kiln_dtype dtype, const kiln__shape *shape,
                    kiln_tensor **out, const kiln_tensor *const *inputs, size_t ninputs,
                    int inplace, kiln__out_target *t)
{
  memset(t, 0, sizeof *t);
  t->out = out;
  KILN_TRY(kiln__output_prepare(op, ctx, dtype, shape, out, &t->made));
  t->dst = *out;
  int alias = 0;
  for (size_t i = 0; i < ninputs && !t->made; i++) {
    kiln__overlap o = kiln__ops_overlap(*out, inputs[i]);
    alias |= o == KILN__OVERLAP_PARTIAL || (o == KILN__OVERLAP_SAME && !inplace);
  }
  if (alias) {
    kiln__ctx_lock(ctx);
    kiln_status s = kiln__tensor_new_locked(op, ctx, dtype, shape, &t->scratch);
    kiln__ctx_unlock(ctx);
    if (s != KILN_OK) {
      kiln__output_discard(out, t->made);
      return s;
    }
    t->dst = t->scratch;
  }
  return KILN_OK;
}

static kiln_status
copy_bytes(const char *op, kiln_context *ctx, cl_mem src, uint64_t src_off, cl_mem dst,
           uint64_t dst_off, uint64_t bytes)
{
  cl_int err = clEnqueueCopyBuffer(ctx->queue, src, dst, src_off, dst_off, bytes, 0, NULL, NULL);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "clEnqueueCopyBuffer");
}

kiln_status
kiln__ops_copy(const char *op, kiln_context *ctx, const kiln_tensor *src, kiln_tensor *dst)
{
  KILN__ASSERT_LOCKED(ctx);
  kiln__overlap o = kiln__ops_overlap(src, dst);
  if (!src->nbytes || o == KILN__OVERLAP_SAME)
    return KILN_OK;
  if (o == KILN__OVERLAP_NONE)
    return copy_bytes(op, ctx, src->mem, src->offset, dst->mem, dst->offset, src->nbytes);
  kiln__ops_tmp tmp = {NULL, 0};
  KILN_TRY(kiln__ops_tmp_alloc(ctx, src->nbytes, &tmp));
  kiln_status s = copy_bytes(op, ctx, src->mem, src->offset, tmp.mem, 0, src->nbytes);
  if (s == KILN_OK)
    s = copy_bytes(op, ctx, tmp.mem, 0, dst->mem, dst->offset, src->nbytes);
  kiln__ops_tmp_free(ctx, &tmp);
  return s;
}

kiln_status
kiln__ops_out_finish(const char *op, kiln_context *ctx, kiln__out_target *t, kiln_status s)
{
  KILN__ASSERT_LOCKED(ctx);
  if (s == KILN_OK && t->scratch)
    s = kiln__ops_copy(op, ctx, t->scratch, *t->out);
  kiln_tensor_release(t->scratch);
  t->scratch = NULL;
  if (s != KILN_OK)
    kiln__output_discard(t->out, t->made);
  return s;
}

kiln_status
kiln__ops_scratch(const char *op, kiln_context *ctx, kiln_dtype dtype, uint64_t n,
                  kiln_tensor **out)
{
  KILN__ASSERT_LOCKED(ctx);
  kiln__shape s;
  memset(&s, 0, sizeof s);
  s.ndim = 1;
  s.dims[0] = (int64_t)(n ? n : 1);
  return kiln__tensor_new_locked(op, ctx, dtype, &s, out);
}

kiln_status
kiln__ops_flag_new(const char *op, kiln_context *ctx, kiln_tensor **flag)
{
  KILN__ASSERT_LOCKED(ctx);
  static const cl_uint init[4] = {0u, 0xffffffffu, 0u, 0u};
  KILN_TRY(kiln__ops_scratch(op, ctx, KILN_I32, 4, flag));
  /* init is static, so a non-blocking write may read it later. */
  cl_int err = clEnqueueWriteBuffer(ctx->queue, (*flag)->mem, CL_FALSE, (*flag)->offset,
                                    sizeof init, init, 0, NULL, NULL);
  if (err != CL_SUCCESS) {
    kiln_tensor_release(*flag);
    *flag = NULL;
    return kiln__fail_cl(op, err, "clEnqueueWriteBuffer (error flag)");
  }
  return KILN_OK;
}

kiln_status
kiln__ops_read(const char *op, kiln_context *ctx, const kiln_tensor *t, uint64_t offset_bytes,
               void *host, size_t bytes)
{
  KILN__ASSERT_LOCKED(ctx);
  cl_event ev = NULL;
  cl_int err = clEnqueueReadBuffer(ctx->queue, t->mem, CL_FALSE, t->offset + offset_bytes, bytes,
                                   host, 0, NULL, &ev);
  if (err == CL_SUCCESS)
    err = clFlush(ctx->queue);
  if (err != CL_SUCCESS) {
    if (ev)
      clReleaseEvent(ev);
    return kiln__fail_cl(op, err, "clEnqueueReadBuffer");
  }
  /* Other threads may enqueue while this one waits; our read is already in queue order. */
  kiln__ctx_unlock(ctx);
  err = clWaitForEvents(1, &ev);
  kiln__ctx_lock(ctx);
  clReleaseEvent(ev);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "clWaitForEvents (read-back)");
}

kiln_status
kiln__ops_flag_read(const char *op, kiln_context *ctx, kiln_tensor *flag, uint32_t out[4])
{
  cl_uint v[4];
  KILN_TRY(kiln__ops_read(op, ctx, flag, 0, v, sizeof v));
  for (int i = 0; i < 4; i++)
    out[i] = v[i];
  return KILN_OK;
}

uint64_t
kiln__ops_pow2(uint64_t n)
{
  uint64_t p = 1;
  while (p < n)
    p <<= 1;
  return p;
}

kiln_status
kiln__ops_sort_pairs(const char *op, kiln_context *ctx, const char *source, kiln_dtype dtype,
                     kiln_tensor *keys, kiln_tensor *vals, uint64_t n)
{
  KILN__ASSERT_LOCKED(ctx);
  if (n < 2)
    return KILN_OK;
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel(op, ctx, source, dtype, "bitonic_step", &k));
  for (uint64_t size = 2; size <= n; size <<= 1) {
    for (uint64_t stride = size / 2; stride > 0; stride >>= 1) {
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, keys);
      kiln__args_tensor(&a, vals);
      kiln__args_u64(&a, n);
      kiln__args_u64(&a, stride);
      kiln__args_u64(&a, size);
      KILN_TRY(a.status);
      /* One work-item per compare-exchange pair. */
      KILN_TRY(kiln__launch_1d(op, ctx, k, n / 2, 0));
    }
  }
  return KILN_OK;
}

kiln_status
kiln__ops_outs_check(const char *op, kiln_context *ctx, kiln_tensor **const *outs,
                     const char *const *names, size_t n)
{
  kiln_tensor *given[4] = {NULL, NULL, NULL, NULL};
  for (size_t i = 0; i < n && i < 4; i++)
    if (outs[i] && *outs[i]) {
      KILN_TRY(kiln__tensor_check(op, *outs[i], ctx));
      given[i] = *outs[i];
    }
  return kiln__ops_outputs_disjoint(op, given, names, n < 4 ? n : 4);
}

kiln_status
kiln__ops_outs_begin(const char *op, kiln_context *ctx, const kiln_dtype *dtypes,
                     const kiln__shape *const *shapes, kiln_tensor **const *outs,
                     const kiln_tensor *const *ins, size_t nins, size_t n, int inplace_first,
                     kiln__out_target *t)
{
  for (size_t i = 0; i < n; i++) {
    memset(&t[i], 0, sizeof t[i]);
    if (!outs[i])
      continue;
    kiln_status s = kiln__ops_out_begin(op, ctx, dtypes[i], shapes[i], outs[i], ins, nins,
                                        inplace_first && i == 0, &t[i]);
    if (s != KILN_OK) {
      kiln__ctx_lock(ctx);
      for (size_t j = 0; j < i; j++)
        if (outs[j])
          kiln__ops_out_finish(op, ctx, &t[j], s);
      kiln__ctx_unlock(ctx);
      return s;
    }
  }
  return KILN_OK;
}

kiln_status
kiln__ops_outs_finish(const char *op, kiln_context *ctx, kiln_tensor **const *outs, size_t n,
                      kiln__out_target *t, kiln_status s)
{
  for (size_t i = 0; i < n; i++)
    if (outs[i])
      s = kiln__ops_out_finish(op, ctx, &t[i], s);
  return s;
}
