#include <stdlib.h>

#include "core/error.h"
#include "runtime/runtime.h"

/*
 * Sizes are rounded up to one of eight steps per power of two (at least 256
 * bytes), so a buffer freed by one tensor fits the next of similar size while
 * wasting at most 12.5%.
 */
static uint64_t
round_size(uint64_t bytes)
{
  if (bytes <= 256)
    return 256;
  uint64_t p = 1;
  while (p <= bytes / 2)
    p *= 2;
  uint64_t step = p / 8 < 256 ? 256 : p / 8;
  return (bytes + step - 1) / step * step;
}

kiln_status
kiln__pool_alloc(kiln_context *ctx, uint64_t bytes, cl_mem *mem, uint64_t *capacity)
{
  KILN__ASSERT_LOCKED(ctx);
  struct kiln__pool *pool = &ctx->pool;
  uint64_t size = round_size(bytes);
  /* Most recently freed first: its pages are the likeliest to be warm. */
  for (size_t i = pool->nfree; i-- > 0;) {
    if (pool->free[i].size == size) {
      *mem = pool->free[i].mem;
      *capacity = size;
      pool->free[i] = pool->free[--pool->nfree];
      pool->stats.hits++;
      pool->stats.bytes_cached -= size;
      pool->stats.buffers_cached--;
      pool->stats.bytes_in_use += size;
      return KILN_OK;
    }
  }
  if (size > ctx->info.max_alloc_bytes && bytes <= ctx->info.max_alloc_bytes)
    size = bytes; /* rounding must not push a legal allocation over the device limit */
  if (size > ctx->info.max_alloc_bytes)
    return kiln__fail(KILN_ERR_OVERFLOW, "kiln_tensor_create", 0,
                      "%llu bytes exceed the device's largest allocation (%llu bytes)",
                      (unsigned long long)bytes, (unsigned long long)ctx->info.max_alloc_bytes);
  cl_int err;
  cl_mem m = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, size, NULL, &err);
  if (!m && pool->nfree) {
    /* Idle buffers may be what stands in the way: drop them and try once more. */
    kiln__pool_trim_locked(ctx, 0);
    m = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, size, NULL, &err);
  }
  if (!m)
    return kiln__fail_cl("kiln_tensor_create", err, "clCreateBuffer");
  pool->stats.misses++;
  pool->stats.bytes_in_use += size;
  *mem = m;
  *capacity = size;
  return KILN_OK;
}

void
kiln__pool_free(kiln_context *ctx, cl_mem mem, uint64_t capacity)
{
  KILN__ASSERT_LOCKED(ctx);
  struct kiln__pool *pool = &ctx->pool;
  pool->stats.bytes_in_use -= capacity;
  if (ctx->released || capacity > pool->limit) {
    clReleaseMemObject(mem);
    return;
  }
  if (pool->nfree == pool->cap) {
    size_t ncap = pool->cap ? pool->cap * 2 : 32;
    struct kiln__pooled *n = realloc(pool->free, ncap * sizeof *n);
    if (!n) {
      clReleaseMemObject(mem);
      return;
    }
    pool->free = n;
    pool->cap = ncap;
  }
  pool->free[pool->nfree].mem = mem;
  pool->free[pool->nfree].size = capacity;
  pool->nfree++;
  pool->stats.bytes_cached += capacity;
  pool->stats.buffers_cached++;
  if (pool->stats.bytes_cached > pool->limit)
    kiln__pool_trim_locked(ctx, pool->limit);
}

void
kiln__pool_trim_locked(kiln_context *ctx, uint64_t keep_bytes)
{
  KILN__ASSERT_LOCKED(ctx);
  struct kiln__pool *pool = &ctx->pool;
  /* Oldest first: they are at the front. */
  size_t drop = 0;
  while (drop < pool->nfree && pool->stats.bytes_cached > keep_bytes) {
    clReleaseMemObject(pool->free[drop].mem);
    pool->stats.bytes_cached -= pool->free[drop].size;
    pool->stats.buffers_cached--;
    drop++;
  }
  for (size_t i = drop; i < pool->nfree; i++)
    pool->free[i - drop] = pool->free[i];
  pool->nfree -= drop;
}

void
kiln__pool_destroy_locked(kiln_context *ctx)
{
  KILN__ASSERT_LOCKED(ctx);
  kiln__pool_trim_locked(ctx, 0);
  free(ctx->pool.free);
  ctx->pool.free = NULL;
  ctx->pool.nfree = ctx->pool.cap = 0;
}

kiln_status
kiln_pool_stats_get(kiln_context *ctx, kiln_pool_stats *out)
{
  static const char op[] = "kiln_pool_stats_get";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  kiln__ctx_lock(ctx);
  *out = ctx->pool.stats;
  kiln__ctx_unlock(ctx);
  return KILN_OK;
}

kiln_status
kiln_pool_trim(kiln_context *ctx, uint64_t keep_bytes)
{
  KILN_TRY(kiln__ctx_check("kiln_pool_trim", ctx));
  kiln__ctx_lock(ctx);
  kiln__pool_trim_locked(ctx, keep_bytes);
  kiln__ctx_unlock(ctx);
  return KILN_OK;
}
