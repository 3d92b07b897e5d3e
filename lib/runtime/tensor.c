#include <stdlib.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "runtime/runtime.h"

kiln_status
kiln__tensor_check(const char *op, const kiln_tensor *t, const kiln_context *ctx)
{
  KILN_RETURN_IF(!t, KILN_ERR_INVALID_HANDLE, op, "tensor is NULL");
  KILN_RETURN_IF(t->magic != KILN__TENSOR_MAGIC, KILN_ERR_INVALID_HANDLE, op,
                 "tensor %p is released or not a kiln tensor", (const void *)t);
  KILN_RETURN_IF(t->ctx->released, KILN_ERR_INVALID_HANDLE, op,
                 "tensor %p belongs to a released context", (const void *)t);
  KILN_RETURN_IF(ctx && t->ctx != ctx, KILN_ERR_CONTEXT_MISMATCH, op,
                 "tensor %p belongs to another context", (const void *)t);
  return KILN_OK;
}

static kiln_status
check_dtype(const char *op, const kiln_context *ctx, kiln_dtype dtype)
{
  KILN_RETURN_IF(!kiln__dtype_valid(dtype), KILN_ERR_INVALID_ARGUMENT, op, "invalid dtype %d",
                 (int)dtype);
  KILN_RETURN_IF((dtype == KILN_F64 || dtype == KILN_C128) && !ctx->info.has_fp64,
                 KILN_ERR_UNSUPPORTED, op, "%s needs fp64 support, which device \"%s\" lacks",
                 kiln_dtype_name(dtype), ctx->info.name);
  return KILN_OK;
}

kiln_status
kiln__tensor_new_locked(const char *op, kiln_context *ctx, kiln_dtype dtype,
                        const kiln__shape *shape, kiln_tensor **out)
{
  KILN__ASSERT_LOCKED(ctx);
  uint64_t numel, nbytes;
  kiln__shape s;
  KILN_TRY(kiln__shape_make(op, shape->ndim, shape->dims, kiln_dtype_size(dtype), &s, &numel,
                            &nbytes));
  kiln_tensor *t = calloc(1, sizeof *t);
  KILN_RETURN_IF(!t, KILN_ERR_HOST_MEMORY, op, "cannot allocate a tensor");
  if (nbytes) {
    kiln_status st = kiln__pool_alloc(ctx, nbytes, &t->mem, &t->capacity);
    if (st != KILN_OK) {
      free(t);
      return st;
    }
  }
  t->magic = KILN__TENSOR_MAGIC;
  t->ctx = ctx;
  t->dtype = dtype;
  t->shape = s;
  t->numel = numel;
  t->nbytes = nbytes;
  ctx->refs++;
  *out = t;
  return KILN_OK;
}

/* Validates the common create arguments and makes the tensor under the context lock. */
static kiln_status
create(const char *op, kiln_context *ctx, kiln_dtype dtype, size_t ndim, const int64_t *shape,
       kiln_tensor **out)
{
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  *out = NULL;
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(check_dtype(op, ctx, dtype));
  kiln__shape s;
  KILN_TRY(kiln__shape_make(op, ndim, shape, kiln_dtype_size(dtype), &s, NULL, NULL));
  kiln__ctx_lock(ctx);
  kiln_status st = kiln__tensor_new_locked(op, ctx, dtype, &s, out);
  kiln__ctx_unlock(ctx);
  return st;
}

kiln_status
kiln_tensor_create(kiln_context *ctx, kiln_dtype dtype, size_t ndim, const int64_t *shape,
                   kiln_tensor **out)
{
  return create("kiln_tensor_create", ctx, dtype, ndim, shape, out);
}

static kiln_status
fill(const char *op, kiln_tensor *t, const void *pattern)
{
  if (!t->nbytes)
    return KILN_OK;
  kiln_context *ctx = t->ctx;
  kiln__ctx_lock(ctx);
  cl_int err = clEnqueueFillBuffer(ctx->queue, t->mem, pattern, kiln_dtype_size(t->dtype),
                                   t->offset, t->nbytes, 0, NULL, NULL);
  kiln__ctx_unlock(ctx);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "clEnqueueFillBuffer");
}

kiln_status
kiln_tensor_full(kiln_context *ctx, kiln_dtype dtype, size_t ndim, const int64_t *shape,
                 kiln_scalar value, kiln_tensor **out)
{
  static const char op[] = "kiln_tensor_full";
  KILN_TRY(create(op, ctx, dtype, ndim, shape, out));
  unsigned char pattern[sizeof(kiln_complex128)];
  kiln__scalar_to_bytes(value, dtype, pattern);
  kiln_status s = fill(op, *out, pattern);
  if (s != KILN_OK) {
    kiln_tensor_release(*out);
    *out = NULL;
  }
  return s;
}

kiln_status
kiln_tensor_zeros(kiln_context *ctx, kiln_dtype dtype, size_t ndim, const int64_t *shape,
                  kiln_tensor **out)
{
  return kiln_tensor_full(ctx, dtype, ndim, shape, kiln_scalar_i64(0), out);
}

static kiln_status
check_host_copy(const char *op, const kiln_tensor *t, const void *host, size_t bytes)
{
  KILN_TRY(kiln__tensor_check(op, t, NULL));
  KILN_RETURN_IF(bytes != t->nbytes, KILN_ERR_INVALID_ARGUMENT, op,
                 "byte count %zu does not match the tensor's %llu bytes", bytes,
                 (unsigned long long)t->nbytes);
  KILN_RETURN_IF(!host && bytes, KILN_ERR_INVALID_ARGUMENT, op, "host pointer is NULL");
  return KILN_OK;
}

kiln_status
kiln_tensor_upload(kiln_tensor *t, const void *host, size_t bytes)
{
  static const char op[] = "kiln_tensor_upload";
  KILN_TRY(check_host_copy(op, t, host, bytes));
  if (!bytes)
    return KILN_OK;
  kiln_context *ctx = t->ctx;
  kiln__ctx_lock(ctx);
  cl_int err =
      clEnqueueWriteBuffer(ctx->queue, t->mem, CL_TRUE, t->offset, bytes, host, 0, NULL, NULL);
  kiln__ctx_unlock(ctx);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "clEnqueueWriteBuffer");
}

kiln_status
kiln_tensor_download(const kiln_tensor *t, void *host, size_t bytes)
{
  static const char op[] = "kiln_tensor_download";
  KILN_TRY(check_host_copy(op, t, host, bytes));
  if (!bytes)
    return KILN_OK;
  kiln_context *ctx = t->ctx;
  /* The blocking read is issued under the lock (queue order), but the wait is not held there. */
  cl_event ev = NULL;
  kiln__ctx_lock(ctx);
  cl_int err =
      clEnqueueReadBuffer(ctx->queue, t->mem, CL_FALSE, t->offset, bytes, host, 0, NULL, &ev);
  if (err == CL_SUCCESS)
    err = clFlush(ctx->queue);
  kiln__ctx_unlock(ctx);
  if (err != CL_SUCCESS) {
    if (ev)
      clReleaseEvent(ev);
    return kiln__fail_cl(op, err, "clEnqueueReadBuffer");
  }
  err = clWaitForEvents(1, &ev);
  clReleaseEvent(ev);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "clWaitForEvents (read-back)");
}

kiln_status
kiln_tensor_from_host(kiln_context *ctx, kiln_dtype dtype, size_t ndim, const int64_t *shape,
                      const void *host, kiln_tensor **out)
{
  static const char op[] = "kiln_tensor_from_host";
  KILN_TRY(create(op, ctx, dtype, ndim, shape, out));
  kiln_tensor *t = *out;
  kiln_status s = KILN_OK;
  if (!host && t->nbytes)
    s = kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "host pointer is NULL");
  else
    s = kiln_tensor_upload(t, host, t->nbytes);
  if (s != KILN_OK) {
    kiln_tensor_release(t);
    *out = NULL;
  }
  return s;
}

kiln_status
kiln_tensor_wrap(kiln_context *ctx, cl_mem mem, size_t offset_bytes, kiln_dtype dtype, size_t ndim,
                 const int64_t *shape, kiln_tensor **out)
{
  static const char op[] = "kiln_tensor_wrap";
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  *out = NULL;
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!mem, KILN_ERR_INVALID_ARGUMENT, op, "cl_mem is NULL");
  KILN_TRY(check_dtype(op, ctx, dtype));
  kiln__shape s;
  uint64_t numel, nbytes;
  KILN_TRY(kiln__shape_make(op, ndim, shape, kiln_dtype_size(dtype), &s, &numel, &nbytes));
  KILN_RETURN_IF(offset_bytes % kiln_dtype_size(dtype), KILN_ERR_INVALID_ARGUMENT, op,
                 "offset %zu is not a multiple of the %s element size", offset_bytes,
                 kiln_dtype_name(dtype));
  size_t size = 0;
  cl_context mctx = NULL;
  cl_int err = clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, NULL);
  if (err == CL_SUCCESS)
    err = clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof mctx, &mctx, NULL);
  if (err != CL_SUCCESS)
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, err, "cl_mem is not a valid buffer (%s)",
                      kiln__cl_error_name(err));
  KILN_RETURN_IF(mctx != ctx->cl, KILN_ERR_CONTEXT_MISMATCH, op,
                 "buffer belongs to another cl_context");
  KILN_RETURN_IF(offset_bytes > size || nbytes > size - offset_bytes, KILN_ERR_OVERFLOW, op,
                 "%llu bytes at offset %zu do not fit in a buffer of %zu bytes",
                 (unsigned long long)nbytes, offset_bytes, size);
  kiln_tensor *t = calloc(1, sizeof *t);
  KILN_RETURN_IF(!t, KILN_ERR_HOST_MEMORY, op, "cannot allocate a tensor");
  clRetainMemObject(mem);
  t->magic = KILN__TENSOR_MAGIC;
  t->ctx = ctx;
  t->mem = mem;
  t->offset = offset_bytes;
  t->wrapped = 1;
  t->dtype = dtype;
  t->shape = s;
  t->numel = numel;
  t->nbytes = nbytes;
  kiln__ctx_lock(ctx);
  ctx->refs++;
  kiln__ctx_unlock(ctx);
  *out = t;
  return KILN_OK;
}

kiln_status
kiln_tensor_release(kiln_tensor *t)
{
  if (!t)
    return KILN_OK;
  KILN_RETURN_IF(t->magic != KILN__TENSOR_MAGIC, KILN_ERR_INVALID_HANDLE, "kiln_tensor_release",
                 "tensor %p is already released or not a kiln tensor", (void *)t);
  kiln_context *ctx = t->ctx;
  kiln__ctx_lock(ctx);
  t->magic = KILN__DEAD_MAGIC;
  if (t->mem) {
    if (t->wrapped) {
      clReleaseMemObject(t->mem);
    } else if (t->shared && --*t->shared > 0) {
      /* another view still uses the pooled buffer */
    } else {
      free(t->shared);
      kiln__pool_free(ctx, t->mem, t->capacity);
    }
  }
  kiln__ctx_unlock(ctx);
  kiln__ctx_unref(ctx);
  kiln__quarantine(t);
  return KILN_OK;
}

kiln_status
kiln__tensor_view(const char *op, kiln_tensor *src, uint64_t offset_bytes,
                  const kiln__shape *shape, kiln_tensor **out)
{
  return kiln__tensor_view_as(op, src, offset_bytes, src->dtype, shape, out);
}

kiln_status
kiln__tensor_view_as(const char *op, kiln_tensor *src, uint64_t offset_bytes, kiln_dtype dtype,
                     const kiln__shape *shape, kiln_tensor **out)
{
  uint64_t numel, nbytes;
  kiln__shape s;
  KILN_TRY(
      kiln__shape_make(op, shape->ndim, shape->dims, kiln_dtype_size(dtype), &s, &numel, &nbytes));
  KILN_RETURN_IF(nbytes && (offset_bytes > src->nbytes || nbytes > src->nbytes - offset_bytes),
                 KILN_ERR_INTERNAL, op, "view of %llu bytes at %llu exceeds its base (%llu bytes)",
                 (unsigned long long)nbytes, (unsigned long long)offset_bytes,
                 (unsigned long long)src->nbytes);
  kiln_tensor *t = calloc(1, sizeof *t);
  KILN_RETURN_IF(!t, KILN_ERR_HOST_MEMORY, op, "cannot allocate a tensor");
  kiln_context *ctx = src->ctx;
  kiln__ctx_lock(ctx);
  if (nbytes) {
    /* An empty view owns nothing; a non-empty one shares src's buffer. */
    if (src->wrapped) {
      clRetainMemObject(src->mem);
    } else {
      if (!src->shared) {
        src->shared = malloc(sizeof *src->shared);
        if (!src->shared) {
          kiln__ctx_unlock(ctx);
          free(t);
          return kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "cannot allocate a view counter");
        }
        *src->shared = 1;
      }
      ++*src->shared;
      t->shared = src->shared;
    }
    t->mem = src->mem;
    t->offset = src->offset + offset_bytes;
    t->capacity = src->capacity;
    t->wrapped = src->wrapped;
  }
  t->magic = KILN__TENSOR_MAGIC;
  t->ctx = ctx;
  t->dtype = dtype;
  t->shape = s;
  t->numel = numel;
  t->nbytes = nbytes;
  ctx->refs++;
  kiln__ctx_unlock(ctx);
  *out = t;
  return KILN_OK;
}

kiln_status
kiln_tensor_cl_mem(const kiln_tensor *t, cl_mem *mem, size_t *offset_bytes)
{
  static const char op[] = "kiln_tensor_cl_mem";
  KILN_TRY(kiln__tensor_check(op, t, NULL));
  KILN_RETURN_IF(!mem, KILN_ERR_INVALID_ARGUMENT, op, "mem is NULL");
  *mem = t->mem;
  if (offset_bytes)
    *offset_bytes = (size_t)t->offset;
  return KILN_OK;
}

static int
valid(const kiln_tensor *t)
{
  return t && t->magic == KILN__TENSOR_MAGIC;
}

kiln_dtype
kiln_tensor_dtype(const kiln_tensor *t)
{
  return valid(t) ? t->dtype : KILN_DTYPE_COUNT;
}

size_t
kiln_tensor_ndim(const kiln_tensor *t)
{
  return valid(t) ? t->shape.ndim : 0;
}

int64_t
kiln_tensor_dim(const kiln_tensor *t, size_t i)
{
  return valid(t) && i < t->shape.ndim ? t->shape.dims[i] : -1;
}

uint64_t
kiln_tensor_numel(const kiln_tensor *t)
{
  return valid(t) ? t->numel : 0;
}

uint64_t
kiln_tensor_nbytes(const kiln_tensor *t)
{
  return valid(t) ? t->nbytes : 0;
}

kiln_context *
kiln_tensor_context(const kiln_tensor *t)
{
  return valid(t) ? t->ctx : NULL;
}

kiln_status
kiln__output_prepare(const char *op, kiln_context *ctx, kiln_dtype dtype, const kiln__shape *shape,
                     kiln_tensor **out, int *made)
{
  *made = 0;
  if (*out) {
    kiln_tensor *o = *out;
    KILN_TRY(kiln__tensor_check(op, o, ctx));
    KILN_RETURN_IF(o->dtype != dtype, KILN_ERR_DTYPE, op, "output is %s, the result is %s",
                   kiln_dtype_name(o->dtype), kiln_dtype_name(dtype));
    if (!kiln__shape_equal(&o->shape, shape)) {
      char a[160], b[160];
      return kiln__fail(KILN_ERR_SHAPE, op, 0, "output shape %s differs from the result shape %s",
                        kiln__shape_format(&o->shape, a, sizeof a),
                        kiln__shape_format(shape, b, sizeof b));
    }
    return KILN_OK;
  }
  KILN_TRY(check_dtype(op, ctx, dtype));
  kiln__ctx_lock(ctx);
  kiln_status s = kiln__tensor_new_locked(op, ctx, dtype, shape, out);
  kiln__ctx_unlock(ctx);
  if (s == KILN_OK)
    *made = 1;
  return s;
}

void
kiln__output_discard(kiln_tensor **out, int made)
{
  if (made) {
    kiln_tensor_release(*out);
    *out = NULL;
  }
}
