#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"
#include "core/log.h"
#include "runtime/build.h"
#include "runtime/family.h"
#include "runtime/runtime.h"
#include "runtime/tuner.h"
#include "kiln_config.h"

/*
 * Released handles go through a bounded FIFO before their memory is freed,
 * so that a caller's use-after-release is caught by the magic check instead
 * of reading freed memory.
 */
#define QUARANTINE_SLOTS 4096
static void *quarantine_ring[QUARANTINE_SLOTS];
static size_t quarantine_next;
static pthread_mutex_t quarantine_lock = PTHREAD_MUTEX_INITIALIZER;

void
kiln__quarantine(void *p)
{
  pthread_mutex_lock(&quarantine_lock);
  void *old = quarantine_ring[quarantine_next];
  quarantine_ring[quarantine_next] = p;
  quarantine_next = (quarantine_next + 1) % QUARANTINE_SLOTS;
  pthread_mutex_unlock(&quarantine_lock);
  free(old);
}

kiln_status
kiln__ctx_check(const char *op, const kiln_context *ctx)
{
  KILN_RETURN_IF(!ctx, KILN_ERR_INVALID_HANDLE, op, "context is NULL");
  KILN_RETURN_IF(ctx->magic != KILN__CTX_MAGIC || ctx->released, KILN_ERR_INVALID_HANDLE, op,
                 "context %p is released or not a kiln context", (const void *)ctx);
  return KILN_OK;
}

static size_t
default_wg_size(const kiln_device_info *info)
{
  size_t wg = 256;
  while (wg > info->max_work_group_size && wg > 1)
    wg /= 2;
  return wg;
}

static uint64_t
default_pool_limit(const kiln_device_info *info)
{
  uint64_t lim = info->global_mem_bytes / 4;
  return lim > (2ull << 30) ? (2ull << 30) : lim;
}

static void
context_free_cl(kiln_context *ctx)
{
  kiln__platform_lock();
  if (ctx->queue)
    clReleaseCommandQueue(ctx->queue);
  if (ctx->cl)
    clReleaseContext(ctx->cl);
  kiln__platform_unlock();
  ctx->queue = NULL;
  ctx->cl = NULL;
}

/* Finishes a context whose cl objects are set: info, lock, pool, family state. Takes ownership
 * of ctx (freed with its cl objects on failure). */
static kiln_status
context_init(const char *op, kiln_context *ctx, kiln_context **out)
{
  cl_command_queue_properties qprops = 0;
  kiln__platform_lock();
  kiln__device_query(ctx->platform, ctx->device, &ctx->info);
  if (clGetCommandQueueInfo(ctx->queue, CL_QUEUE_PROPERTIES, sizeof qprops, &qprops, NULL) ==
      CL_SUCCESS)
    ctx->queue_profiling = (qprops & CL_QUEUE_PROFILING_ENABLE) != 0;
  kiln__platform_unlock();
  ctx->wg_size = default_wg_size(&ctx->info);
  ctx->pool.limit = default_pool_limit(&ctx->info);
  ctx->pool.stats.limit_bytes = ctx->pool.limit;
  kiln_status s = kiln__family_states_create(op, ctx);
  if (s != KILN_OK) {
    context_free_cl(ctx);
    free(ctx);
    return s;
  }
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&ctx->lock, &attr);
  pthread_mutexattr_destroy(&attr);
  ctx->refs = 1;
  kiln__ctx_cache_open(ctx);
  kiln__tuner_create(ctx);
  ctx->magic = KILN__CTX_MAGIC;
  kiln__log(KILN__LOG_INFO, "%s: using %s (%s, driver %s)", op, ctx->info.name,
            ctx->info.platform_name, ctx->info.driver_version);
  *out = ctx;
  return KILN_OK;
}

kiln_status
kiln_context_create(const char *selector, kiln_context **out)
{
  static const char op[] = "kiln_context_create";
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  *out = NULL;
  kiln_context *ctx = calloc(1, sizeof *ctx);
  KILN_RETURN_IF(!ctx, KILN_ERR_HOST_MEMORY, op, "cannot allocate a context");
  kiln__platform_lock();
  kiln_status s = kiln__device_select(op, selector, &ctx->platform, &ctx->device);
  cl_int err = CL_SUCCESS;
  if (s == KILN_OK) {
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)ctx->platform, 0};
    ctx->cl = clCreateContext(props, 1, &ctx->device, NULL, NULL, &err);
    if (!ctx->cl)
      s = kiln__fail_cl(op, err, "clCreateContext");
  }
  /* Profiling is on so that the tuner and benchmarks can time kernels on the same queue. */
  if (s == KILN_OK) {
    ctx->queue = clCreateCommandQueue(ctx->cl, ctx->device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (!ctx->queue)
      s = kiln__fail_cl(op, err, "clCreateCommandQueue");
  }
  kiln__platform_unlock();
  if (s == KILN_OK)
    return context_init(op, ctx, out);
  context_free_cl(ctx);
  free(ctx);
  return s;
}

/* Checks the caller's cl objects of kiln_context_create_from_cl (platform lock held). */
static kiln_status
check_cl_objects(const char *op, cl_context cl_ctx, cl_device_id device, cl_command_queue queue,
                 cl_platform_id *platform)
{
  cl_int err = clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof *platform, platform, NULL);
  if (err != CL_SUCCESS)
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, err, "device is not a valid cl_device_id (%s)",
                      kiln__cl_error_name(err));
  cl_uint ndev = 0;
  err = clGetContextInfo(cl_ctx, CL_CONTEXT_NUM_DEVICES, sizeof ndev, &ndev, NULL);
  if (err != CL_SUCCESS)
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, err, "cl_context is not valid (%s)",
                      kiln__cl_error_name(err));
  cl_device_id devs[64];
  int found = 0;
  if (ndev <= 64 && clGetContextInfo(cl_ctx, CL_CONTEXT_DEVICES, sizeof devs, devs, NULL) ==
                        CL_SUCCESS)
    for (cl_uint i = 0; i < ndev; i++)
      found |= devs[i] == device;
  KILN_RETURN_IF(!found, KILN_ERR_CONTEXT_MISMATCH, op, "device is not part of the cl_context");
  if (!queue)
    return KILN_OK;
  cl_context qctx = NULL;
  cl_device_id qdev = NULL;
  cl_command_queue_properties qprops = 0;
  err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL);
  if (err == CL_SUCCESS)
    err = clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof qdev, &qdev, NULL);
  if (err == CL_SUCCESS)
    err = clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof qprops, &qprops, NULL);
  if (err != CL_SUCCESS)
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, err, "queue is not valid (%s)",
                      kiln__cl_error_name(err));
  KILN_RETURN_IF(qctx != cl_ctx || qdev != device, KILN_ERR_CONTEXT_MISMATCH, op,
                 "queue belongs to another context or device");
  KILN_RETURN_IF(qprops & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, KILN_ERR_INVALID_ARGUMENT, op,
                 "queue is out-of-order; kiln needs an in-order queue");
  return KILN_OK;
}

kiln_status
kiln_context_create_from_cl(cl_context cl_ctx, cl_device_id device, cl_command_queue queue,
                            kiln_context **out)
{
  static const char op[] = "kiln_context_create_from_cl";
  KILN_RETURN_IF(!out || !cl_ctx || !device, KILN_ERR_INVALID_ARGUMENT, op,
                 "NULL %s", !out ? "out" : !cl_ctx ? "cl_context" : "cl_device_id");
  *out = NULL;
  kiln_context *ctx = calloc(1, sizeof *ctx);
  KILN_RETURN_IF(!ctx, KILN_ERR_HOST_MEMORY, op, "cannot allocate a context");
  kiln__platform_lock();
  kiln_status s = check_cl_objects(op, cl_ctx, device, queue, &ctx->platform);
  if (s == KILN_OK) {
    ctx->device = device;
    ctx->cl = cl_ctx;
    clRetainContext(cl_ctx);
    if (queue) {
      ctx->queue = queue;
      clRetainCommandQueue(queue);
    } else {
      cl_int err;
      ctx->queue = clCreateCommandQueue(cl_ctx, device, CL_QUEUE_PROFILING_ENABLE, &err);
      if (!ctx->queue)
        s = kiln__fail_cl(op, err, "clCreateCommandQueue");
    }
  }
  kiln__platform_unlock();
  if (s == KILN_OK)
    return context_init(op, ctx, out);
  context_free_cl(ctx);
  free(ctx);
  return s;
}

/* ---- the context lock, with its holder recorded in debug builds ---- */

#ifndef NDEBUG
static _Thread_local char lock_token; /* its address names the calling thread */
#endif

void
kiln__ctx_lock(kiln_context *ctx)
{
  pthread_mutex_lock(&ctx->lock);
#ifndef NDEBUG
  if (ctx->lock_depth++ == 0)
    atomic_store_explicit(&ctx->lock_owner, &lock_token, memory_order_relaxed);
#endif
}

void
kiln__ctx_unlock(kiln_context *ctx)
{
#ifndef NDEBUG
  assert(kiln__ctx_lock_held(ctx) == 1 && ctx->lock_depth > 0);
  if (--ctx->lock_depth == 0)
    atomic_store_explicit(&ctx->lock_owner, NULL, memory_order_relaxed);
#endif
  pthread_mutex_unlock(&ctx->lock);
}

/*
 * Only this thread ever stores its own token, and it clears it before it
 * lets the lock go, so a relaxed load that sees it proves the lock is held.
 */
int
kiln__ctx_lock_held(const kiln_context *ctx)
{
#ifdef NDEBUG
  (void)ctx;
  return -1;
#else
  return atomic_load_explicit(&ctx->lock_owner, memory_order_relaxed) == &lock_token;
#endif
}

void
kiln__ctx_unref(kiln_context *ctx)
{
  kiln__ctx_lock(ctx);
  int64_t left = --ctx->refs;
  kiln__ctx_unlock(ctx);
  if (left > 0)
    return;
  pthread_mutex_destroy(&ctx->lock);
  ctx->magic = KILN__DEAD_MAGIC;
  kiln__quarantine(ctx);
}

kiln_status
kiln_context_release(kiln_context *ctx)
{
  static const char op[] = "kiln_context_release";
  if (!ctx)
    return KILN_OK;
  KILN_TRY(kiln__ctx_check(op, ctx));
  kiln__ctx_lock(ctx);
  ctx->released = 1;
  clFinish(ctx->queue);
  /* Family state (FFT plans) holds cl objects of this context: it goes first. */
  kiln__family_states_destroy_locked(ctx);
  kiln__profile_destroy_locked(ctx);
  kiln__programs_destroy_locked(ctx);
  kiln__ctx_cache_close(ctx);
  kiln__tuner_destroy(ctx);
  kiln__pool_destroy_locked(ctx);
  /* Live tensors keep their own cl_mem references, so the context's can go now. */
  context_free_cl(ctx);
  kiln__ctx_unlock(ctx);
  kiln__ctx_unref(ctx);
  return KILN_OK;
}

kiln_status
kiln_context_finish(kiln_context *ctx)
{
  static const char op[] = "kiln_context_finish";
  KILN_TRY(kiln__ctx_check(op, ctx));
  cl_int err = clFinish(ctx->queue);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "clFinish");
}

kiln_status
kiln_context_device_info(const kiln_context *ctx, kiln_device_info *out)
{
  static const char op[] = "kiln_context_device_info";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  *out = ctx->info;
  return KILN_OK;
}

kiln_status
kiln_context_cl_objects(const kiln_context *ctx, cl_context *cl_ctx, cl_device_id *device,
                        cl_command_queue *queue)
{
  KILN_TRY(kiln__ctx_check("kiln_context_cl_objects", ctx));
  if (cl_ctx)
    *cl_ctx = ctx->cl;
  if (device)
    *device = ctx->device;
  if (queue)
    *queue = ctx->queue;
  return KILN_OK;
}

kiln_status
kiln_option_bounds(kiln_option option, int64_t *lower, int64_t *upper)
{
  static const char op[] = "kiln_option_bounds";
  KILN_RETURN_IF(!lower || !upper, KILN_ERR_INVALID_ARGUMENT, op, "NULL bounds");
  switch (option) {
  case KILN_OPT_POOL_LIMIT_BYTES:
  case KILN_OPT_CACHE_MAX_BYTES:
    *lower = 0;
    *upper = INT64_MAX;
    return KILN_OK;
  case KILN_OPT_CACHE_MODE:
    *lower = KILN_CACHE_OFF;
    *upper = KILN_CACHE_ON;
    return KILN_OK;
  case KILN_OPT_CACHE_STORE:
    *lower = KILN_CACHE_STORE_AUTO;
    *upper = KILN_CACHE_STORE_ALWAYS;
    return KILN_OK;
  case KILN_OPT_TUNE_MODE:
    *lower = KILN_TUNE_OFF;
    *upper = KILN_TUNE_ONLINE;
    return KILN_OK;
  default:
    break;
  }
  const struct kiln__family_option *row;
  KILN_RETURN_IF(!kiln__family_of_option(option, &row), KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown option %d", (int)option);
  *lower = row->lower;
  *upper = row->upper;
  return KILN_OK;
}

kiln_status
kiln_context_set_option(kiln_context *ctx, kiln_option option, int64_t value)
{
  static const char op[] = "kiln_context_set_option";
  KILN_TRY(kiln__ctx_check(op, ctx));
  int64_t lo, hi;
  KILN_TRY(kiln_option_bounds(option, &lo, &hi));
  KILN_RETURN_IF(value < lo || value > hi, KILN_ERR_INVALID_ARGUMENT, op,
                 "value %lld outside [%lld, %lld]", (long long)value, (long long)lo, (long long)hi);
  kiln_status s = KILN_OK;
  kiln__ctx_lock(ctx);
  switch (option) {
  case KILN_OPT_POOL_LIMIT_BYTES:
    ctx->pool.limit = (uint64_t)value;
    ctx->pool.stats.limit_bytes = (uint64_t)value;
    kiln__pool_trim_locked(ctx, (uint64_t)value);
    break;
  case KILN_OPT_CACHE_MODE:
  case KILN_OPT_CACHE_MAX_BYTES:
  case KILN_OPT_CACHE_STORE:
    s = kiln__ctx_cache_set_option(ctx, option, value);
    break;
  case KILN_OPT_TUNE_MODE:
    kiln__tuner_set_mode(ctx, value);
    break;
  default: {
    /* kiln_option_bounds found the owner */
    const struct kiln__family *f = kiln__family_of_option(option, NULL);
    f->option_set(ctx, kiln__family_state(ctx, f), option, value);
    break;
  }
  }
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_context_get_option(const kiln_context *ctx, kiln_option option, int64_t *value)
{
  static const char op[] = "kiln_context_get_option";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!value, KILN_ERR_INVALID_ARGUMENT, op, "value is NULL");
  switch (option) {
  case KILN_OPT_POOL_LIMIT_BYTES:
    *value = (int64_t)ctx->pool.limit;
    return KILN_OK;
  case KILN_OPT_CACHE_MODE:
  case KILN_OPT_CACHE_MAX_BYTES:
  case KILN_OPT_CACHE_STORE:
    return kiln__ctx_cache_get_option(ctx, option, value);
  case KILN_OPT_TUNE_MODE:
    *value = kiln__tuner_mode(ctx);
    return KILN_OK;
  default:
    break;
  }
  const struct kiln__family *f = kiln__family_of_option(option, NULL);
  KILN_RETURN_IF(!f, KILN_ERR_INVALID_ARGUMENT, op, "unknown option %d", (int)option);
  kiln_context *c = (kiln_context *)ctx; /* the lock is not part of the logical state */
  kiln__ctx_lock(c);
  *value = f->option_get(ctx, kiln__family_state(ctx, f), option);
  kiln__ctx_unlock(c);
  return KILN_OK;
}
