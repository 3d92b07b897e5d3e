/*
 * VkFFT back end (Debian's header-only vkFFT.h 1.2.26, OpenCL back end).
 *
 * This is the only file that includes vkFFT.h: 33k lines of static inline
 * code that do not build clean under kiln's warning set, so the include is
 * wrapped in a diagnostic push/pop that silences them for the header only.
 *
 * Compiled binaries. VkFFT can hand out its compiled kernels
 * (saveApplicationToString) and build from them later
 * (loadApplicationFromString); kiln keeps them in the context's kernel
 * cache (lib/runtime/disk_cache.h) as entries of source name "vkfft", keyed
 * by the plan and the cache's device identity.
 * VkFFT 1.2.26 copies each OpenCL binary as a C string (sprintf "%s" on
 * save, size-2 bytes plus a NUL on load). NVIDIA's binaries are PTX text
 * and survive; PoCL's contain NUL bytes, get cut at the first one, and a
 * reload hands PoCL a truncated binary: VKFFT_ERROR_FAILED_TO_CREATE_PROGRAM,
 * after PoCL read past the end of VkFFT's copy (AddressSanitizer:
 * heap-buffer-overflow in pocl_driver_supports_binary). So:
 *  - the store is used by default on NVIDIA only (saving costs PoCL an extra
 *    compile anyway); KILN_VKFFT_BINARY_CACHE=on|off overrides the default;
 *  - whatever the platform, a blob whose records do not parse back the way
 *    VkFFT reads them (kiln__vkfft_blob_intact) is never stored or handed back
 *    to VkFFT: it is counted as unusable and the plan is built from source.
 * A stored blob VkFFT still refuses is counted, removed and rebuilt.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * VkFFT sizes its kernels from the device's local memory and work-group
 * limits. PoCL's CPU device reports 1 MiB of local memory and 4096
 * work-items, so VkFFT builds single-pass kernels of 4096 work-items whose
 * private arrays PoCL keeps on its worker threads' stacks: with the usual
 * 8 MiB stacks, a 2^17-point transform crashed the process (SIGSEGV in
 * PoCL's work-group function; it ran with `ulimit -s 65536`). So, in this
 * file only, VkFFT's device queries go through capped_device_info(),
 * which on CPU devices reports GPU-like limits (CPU_LOCAL_MEM,
 * CPU_WORK_GROUP) and passes everything else through.
 */
#include <CL/cl.h>
static cl_int capped_device_info(cl_device_id device, cl_device_info param, size_t size,
                                 void *value, size_t *size_ret);
#define clGetDeviceInfo capped_device_info

#define VKFFT_BACKEND 3
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wall"
#pragma GCC diagnostic ignored "-Wextra"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <vkFFT.h>
#pragma GCC diagnostic pop
#undef clGetDeviceInfo

/*
 * Device limits VkFFT is shown on CPU devices: PoCL
 * reports 1 MiB of local memory and 4096-item work-groups, for which VkFFT
 * generates kernels that overflow PoCL's 8 MiB worker stacks. Measured on
 * PoCL here, see docs/blas_fft.md.
 */
#define KILN__VKFFT_CPU_LOCAL_MEM (64 * 1024)
#define KILN__VKFFT_CPU_WORK_GROUP 256

static cl_int
capped_device_info(cl_device_id device, cl_device_info param, size_t size, void *value,
                   size_t *size_ret)
{
  cl_int err = clGetDeviceInfo(device, param, size, value, size_ret);
  cl_device_type type = 0;
  if (err != CL_SUCCESS || !value ||
      clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof type, &type, NULL) != CL_SUCCESS ||
      !(type & CL_DEVICE_TYPE_CPU))
    return err;
  if (param == CL_DEVICE_LOCAL_MEM_SIZE && size >= sizeof(cl_ulong)) {
    cl_ulong *v = value;
    if (*v > KILN__VKFFT_CPU_LOCAL_MEM)
      *v = KILN__VKFFT_CPU_LOCAL_MEM;
  } else if (param == CL_DEVICE_MAX_WORK_GROUP_SIZE && size >= sizeof(size_t)) {
    size_t *v = value;
    if (*v > KILN__VKFFT_CPU_WORK_GROUP)
      *v = KILN__VKFFT_CPU_WORK_GROUP;
  } else if (param == CL_DEVICE_MAX_WORK_ITEM_SIZES) {
    size_t *v = value;
    for (size_t i = 0; i < size / sizeof *v; i++)
      if (v[i] > KILN__VKFFT_CPU_WORK_GROUP)
        v[i] = KILN__VKFFT_CPU_WORK_GROUP;
  }
  return err;
}

#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "kiln_config.h"
#include "backends/fft_backend.h"
#include "backends/vkfft_blob.h"
#include "runtime/build.h"
#include "runtime/disk_cache.h"

struct vk_plan {
  VkFFTApplication app;
  /* VkFFT keeps pointers to these for the application's lifetime. */
  cl_platform_id platform;
  cl_device_id device;
  cl_context context;
  cl_command_queue queue;
  uint64_t buffer_size, input_size;
  kiln_fft_kind kind;
  int inplace;
  int identity; /* every axis has size 1: the transform is a copy */
};

/* Names of the VkFFTResult values worth naming; others print their number. */
static const char *
result_name(VkFFTResult r)
{
  switch (r) {
  case VKFFT_SUCCESS:
    return "VKFFT_SUCCESS";
  case VKFFT_ERROR_MALLOC_FAILED:
    return "VKFFT_ERROR_MALLOC_FAILED";
  case VKFFT_ERROR_INSUFFICIENT_CODE_BUFFER:
    return "VKFFT_ERROR_INSUFFICIENT_CODE_BUFFER";
  case VKFFT_ERROR_PLAN_NOT_INITIALIZED:
    return "VKFFT_ERROR_PLAN_NOT_INITIALIZED";
  case VKFFT_ERROR_UNSUPPORTED_RADIX:
    return "VKFFT_ERROR_UNSUPPORTED_RADIX";
  case VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH:
    return "VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH";
  case VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH_R2C:
    return "VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH_R2C";
  case VKFFT_ERROR_FAILED_TO_ALLOCATE:
    return "VKFFT_ERROR_FAILED_TO_ALLOCATE";
  case VKFFT_ERROR_FAILED_TO_COMPILE_PROGRAM:
    return "VKFFT_ERROR_FAILED_TO_COMPILE_PROGRAM";
  case VKFFT_ERROR_FAILED_TO_CREATE_PROGRAM:
    return "VKFFT_ERROR_FAILED_TO_CREATE_PROGRAM";
  case VKFFT_ERROR_FAILED_TO_LAUNCH_KERNEL:
    return "VKFFT_ERROR_FAILED_TO_LAUNCH_KERNEL";
  case VKFFT_ERROR_FAILED_TO_SET_KERNEL_ARG:
    return "VKFFT_ERROR_FAILED_TO_SET_KERNEL_ARG";
  default:
    return "VkFFTResult";
  }
}

/* Allocation failures are memory errors; compile failures build errors; the rest PROVIDER. */
static kiln_status
status_of(VkFFTResult r)
{
  switch (r) {
  case VKFFT_SUCCESS:
    return KILN_OK;
  case VKFFT_ERROR_MALLOC_FAILED:
    return KILN_ERR_HOST_MEMORY;
  case VKFFT_ERROR_FAILED_TO_ALLOCATE:
    return KILN_ERR_DEVICE_MEMORY;
  case VKFFT_ERROR_FAILED_TO_COMPILE_PROGRAM:
    return KILN_ERR_BUILD;
  case VKFFT_ERROR_UNSUPPORTED_RADIX:
  case VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH:
  case VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH_R2C:
    return KILN_ERR_UNSUPPORTED;
  default:
    return KILN_ERR_PROVIDER;
  }
}

static kiln_status
check(const char *op, const char *call, VkFFTResult r)
{
  if (r == VKFFT_SUCCESS)
    return KILN_OK;
  return kiln__fail(status_of(r), op, (int32_t)r, "VkFFT %s failed: %s (%d)", call, result_name(r),
                    (int)r);
}

static int
vkfft_binaries_reloadable(const kiln_context *ctx)
{
  return strstr(ctx->info.platform_name, "NVIDIA") != NULL;
}

/*
 * KILN_DEBUG_VKFFT="name=value,..." sets VkFFT's performance fields by name, so that
 * configurations can be timed against each other on a device (`kiln bench --filter fft.`)
 * without a rebuild. The string is part of the binary cache's key (cache_text): a binary
 * built under one configuration is never handed to a plan made under another.
 */
#define VK_TUNABLES(X)                                                                           \
  X(coalescedMemory)                                                                             \
  X(aimThreads)                                                                                  \
  X(numSharedBanks)                                                                              \
  X(registerBoost)                                                                               \
  X(registerBoost4Step)                                                                          \
  X(swapTo3Stage4Step)                                                                           \
  X(performBandwidthBoost)

static const char *
vk_overrides(void)
{
  const char *v = kiln__env(KILN__ENV_DEBUG_VKFFT);
  return v ? v : "";
}

static void
apply_overrides(VkFFTConfiguration *cfg)
{
  const char *s = vk_overrides();
  while (*s) {
    size_t len = strcspn(s, ",");
    const char *eq = memchr(s, '=', len);
    if (eq) {
      size_t nlen = (size_t)(eq - s);
      uint64_t value = strtoull(eq + 1, NULL, 10);
      int known = 0;
#define SET(f)                                                                                   \
  if (nlen == sizeof #f - 1 && !memcmp(s, #f, nlen)) {                                           \
    cfg->f = value;                                                                              \
    known = 1;                                                                                   \
  }
      VK_TUNABLES(SET)
#undef SET
      if (!known)
        kiln__log(KILN__LOG_WARN, "KILN_DEBUG_VKFFT: unknown field '%.*s' ignored", (int)nlen, s);
    }
    s += len + (s[len] == ',');
  }
}

/*
 * VkFFT's own default for NVIDIA is 32-byte coalescing. On an H200 64 bytes measured faster
 * for the multi-pass transforms (2^26 points c2c: f64 2.68 -> 2.36 ms, cuFFT 2.33; f32 1.06
 * -> 0.98 ms; `bench/h200/fft.sh`, docs/performance.md) and within 3% either way at 2^22, so
 * kiln asks for 64 on NVIDIA devices from 2^24 points per transform. 0 leaves VkFFT's choice.
 */
static uint64_t
vk_coalesced(cl_device_id dev, const struct kiln__fft_key *k)
{
  cl_uint vendor = 0;
  if (clGetDeviceInfo(dev, CL_DEVICE_VENDOR_ID, sizeof vendor, &vendor, NULL) != CL_SUCCESS)
    return 0;
  uint64_t points = 1;
  for (unsigned i = 0; i < k->rank; i++)
    points *= (uint64_t)k->sizes[i];
  return vendor == 0x10DE && points >= ((uint64_t)1 << 24) ? 64 : 0;
}

/*
 * The "source text" of a plan's binaries in the kernel cache: everything
 * that shapes VkFFT's generated code. The device, driver and kiln version
 * are the cache identity's part of the key (kiln__dc_req_init).
 */
static void
cache_text(cl_device_id dev, const struct kiln__fft_key *k, char *buf, size_t len)
{
  snprintf(buf, len,
           "VkFFT %d OpenCL application string, kiln layout %u: kind=%d rank=%u "
           "sizes=%lld,%lld,%lld batch=%lld prec=%s inplace=%d cpu_limits=%u/%u coalesced=%llu "
           "overrides=%.200s",
           VkFFTGetVersion(), KILN__VKFFT_LAYOUT, (int)k->kind, k->rank, (long long)k->sizes[0],
           (long long)k->sizes[1], (long long)k->sizes[2], (long long)k->batch,
           kiln_dtype_name(k->precision), k->inplace, (unsigned)KILN__VKFFT_CPU_LOCAL_MEM,
           (unsigned)KILN__VKFFT_CPU_WORK_GROUP, (unsigned long long)vk_coalesced(dev, k),
           vk_overrides());
}

/*
 * Prepares the kernel-cache request for a plan's binaries (ctx->lock held).
 * 0 when the cache cannot hold them (mode off, or a device identity the
 * cache refuses). The request borrows text and ctx's device strings.
 */
static int
cache_request(kiln_context *ctx, const char *text, struct kiln__dc_req *req)
{
  struct kiln__dc_ident id;
  const char *why = NULL;
  if (kiln__dc_mode(ctx->cache) == KILN_CACHE_OFF || !kiln__cache_identity(&ctx->info, &id, &why))
    return 0;
  kiln__dc_req_init(req, &id, "vkfft", text, strlen(text), "");
  return 1;
}

/* ---- plans ---- */

/*
 * The axes VkFFT sees, fastest first. VkFFT has no radix for a size-1 axis;
 * such an axis is an identity that does not change the packed layout, so it
 * is dropped (the last axis of a real transform stays: it sets the layout).
 * Returns the count (0: every axis is 1, a plain copy).
 */
static uint32_t
vk_axes(const struct kiln__fft_key *k, uint64_t size[3])
{
  uint32_t n = 0;
  for (uint32_t i = 0; i < k->rank; i++) {
    uint64_t len = (uint64_t)k->sizes[k->rank - 1 - i];
    if (len > 1 || (i == 0 && k->kind != KILN_FFT_C2C))
      size[n++] = len;
  }
  return n;
}

static int
vkfft_supports(const struct kiln__fft_key *key, char *why, size_t len)
{
  if (key->kind != KILN_FFT_C2C && key->sizes[key->rank - 1] == 1) {
    snprintf(why, len, "VkFFT 1.2.26 cannot do a real transform whose last size is 1");
    return 0;
  }
  return 1;
}

static void
configure(struct vk_plan *p, const struct kiln__fft_key *k, VkFFTConfiguration *cfg)
{
  memset(cfg, 0, sizeof *cfg);
  cfg->coalescedMemory = vk_coalesced(p->device, k);
  apply_overrides(cfg);
  cfg->FFTdim = vk_axes(k, cfg->size);
  cfg->numberBatches = (uint64_t)k->batch;
  cfg->platform = &p->platform;
  cfg->device = &p->device;
  cfg->context = &p->context;
  cfg->commandQueue = &p->queue;
  cfg->doublePrecision = k->precision == KILN_F64;
  size_t esz = kiln_dtype_size(k->precision);
  p->buffer_size = kiln__fft_complex_count(k) * 2 * esz * (uint64_t)k->batch;
  cfg->bufferSize = &p->buffer_size;
  if (k->kind != KILN_FFT_C2C) {
    cfg->performR2C = 1;
    cfg->makeForwardPlanOnly = k->kind == KILN_FFT_R2C;
    cfg->makeInversePlanOnly = k->kind == KILN_FFT_C2R;
  }
  if (k->inplace)
    return;
  /*
   * Out of place: VkFFT reads "inputBuffer" and computes in "buffer". For
   * C2C and R2C the input is inputBuffer and the output buffer; for C2R the
   * complex input is buffer (VkFFT's work area: kiln passes a scratch copy)
   * and the real result returns to inputBuffer.
   */
  cfg->isInputFormatted = 1;
  if (k->kind == KILN_FFT_C2C) {
    p->input_size = p->buffer_size;
  } else {
    p->input_size = kiln__fft_real_count(k) * esz * (uint64_t)k->batch;
    uint64_t s = 1;
    for (uint32_t i = 0; i < cfg->FFTdim; i++) {
      s *= cfg->size[i];
      cfg->inputBufferStride[i] = s;
    }
    cfg->inverseReturnToInputBuffer = k->kind == KILN_FFT_C2R;
  }
  cfg->inputBufferSize = &p->input_size;
}

static kiln_status
vkfft_create(const char *op, kiln_context *ctx, const struct kiln__fft_key *key,
                   int binary_cache, struct kiln__fft_counters *counters, void **plan)
{
  struct vk_plan *p = calloc(1, sizeof *p);
  KILN_RETURN_IF(!p, KILN_ERR_HOST_MEMORY, op, "cannot allocate a VkFFT plan");
  p->platform = ctx->platform;
  p->device = ctx->device;
  p->context = ctx->cl;
  p->queue = ctx->queue;
  p->kind = key->kind;
  p->inplace = key->inplace;
  VkFFTConfiguration cfg;
  uint64_t axes[3];
  if (vk_axes(key, axes) == 0) {
    p->identity = 1;
    p->buffer_size =
        kiln__fft_complex_count(key) * 2 * kiln_dtype_size(key->precision) * (uint64_t)key->batch;
    *plan = p;
    return KILN_OK;
  }
  /*
   * Binaries go through the context's kernel cache (entries with source name
   * "vkfft"): its modes, size cap, statistics and `kiln cache` tools apply.
   * ctx->lock is held only around cache calls; VkFFT compiles outside it.
   */
  char text[512];
  cache_text(p->device, key, text, sizeof text);
  struct kiln__dc_req req;
  int cacheable = 0;
  VkFFTResult r = VKFFT_ERROR_PLAN_NOT_INITIALIZED;
  if (binary_cache) {
    void *buf = NULL;
    const void *payload = NULL;
    size_t len = 0;
    kiln__ctx_lock(ctx);
    cacheable = cache_request(ctx, text, &req);
    enum kiln__dc_found found =
        cacheable ? kiln__dc_lookup(ctx->cache, &req, KILN__DC_DEFER_HIT, &buf, &payload, &len)
                  : KILN__DC_MISS;
    kiln__ctx_unlock(ctx);
    if (found == KILN__DC_HIT && !kiln__vkfft_blob_intact(payload, len)) {
      /* Stored by a build without the check, or damaged in a way the checksum missed. */
      if (counters)
        counters->binary_unusable++;
      found = KILN__DC_BAD;
      kiln__ctx_lock(ctx);
      kiln__dc_note_rejected(ctx->cache);
      kiln__ctx_unlock(ctx);
    }
    if (found == KILN__DC_HIT) {
      size_t entry_bytes =
          (size_t)((const uint8_t *)payload - (const uint8_t *)buf) + len + KILN__DC_TRAILER;
      /* VkFFT reads records by their sizes; a NUL after the copy keeps it inside. */
      char *blob = malloc(len + 1);
      if (blob) {
        memcpy(blob, payload, len);
        blob[len] = 0;
        configure(p, key, &cfg);
        cfg.loadApplicationFromString = 1;
        cfg.loadApplicationString = blob;
        r = initializeVkFFT(&p->app, cfg);
        free(blob);
      }
      kiln__ctx_lock(ctx);
      if (r == VKFFT_SUCCESS) {
        kiln__dc_note_hit(ctx->cache, entry_bytes);
        if (counters)
          counters->binary_hits++;
      } else {
        kiln__dc_note_rejected(ctx->cache);
        if (counters)
          counters->binary_rejects++;
      }
      kiln__ctx_unlock(ctx);
      if (r != VKFFT_SUCCESS) {
        kiln__log(KILN__LOG_WARN, "%s: VkFFT refused cached binaries (%s, %d); rebuilding", op,
                  result_name(r), (int)r);
        memset(&p->app, 0, sizeof p->app);
      }
    }
    free(buf);
  }
  if (r != VKFFT_SUCCESS) {
    configure(p, key, &cfg);
    cfg.saveApplicationToString = cacheable ? 1 : 0;
    r = initializeVkFFT(&p->app, cfg);
    if (r == VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH_R2C) {
      free(p);
      return kiln__fail(KILN_ERR_UNSUPPORTED, op, (int32_t)r,
                        "VkFFT does a real transform of odd last size only in one pass that fits "
                        "the device's local memory, which size %lld exceeds "
                        "(VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH_R2C)",
                        (long long)key->sizes[key->rank - 1]);
    }
    if (r == VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH) {
      /* The bound depends on the device's local memory, so only VkFFT's planner can tell. */
      char sizes[80] = "";
      for (uint32_t i = 0, n = 0; i < key->rank && n < sizeof sizes; i++)
        n += (uint32_t)snprintf(sizes + n, sizeof sizes - n, i ? "x%lld" : "%lld",
                                (long long)key->sizes[i]);
      free(p);
      return kiln__fail(KILN_ERR_UNSUPPORTED, op, (int32_t)r,
                        "VkFFT splits each axis into at most 3 passes that fit the device's local "
                        "memory, which sizes %s exceed (VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH)",
                        sizes);
    }
    if (r != VKFFT_SUCCESS) {
      free(p);
      return check(op, "initializeVkFFT", r);
    }
    const char *blob = p->app.saveApplicationString;
    uint64_t size = p->app.applicationStringSize;
    uint64_t bad = 0;
    if (cacheable && blob && size && !kiln__vkfft_blob_check(blob, size, &bad)) {
      /* The bytes where the walk failed tell a cut binary from a record format change. */
      char near[25];
      size_t m = 0;
      for (uint64_t i = bad; i < size && m + 1 < sizeof near; i++)
        near[m++] = blob[i] >= 32 && blob[i] < 127 ? blob[i] : '.';
      near[m] = 0;
      kiln__log(KILN__LOG_INFO,
                "%s: VkFFT's binaries for this device do not survive its string copies "
                "(record at byte %llu of %llu: \"%s\"); not cached",
                op, (unsigned long long)bad, (unsigned long long)size, near);
      if (counters)
        counters->binary_unusable++;
    } else if (cacheable && blob && size) {
      /* Stores in mode ON only; a read-only or degraded cache keeps nothing, silently. */
      kiln__ctx_lock(ctx);
      int stored = kiln__dc_store(ctx->cache, &req, blob, (size_t)size) == 0;
      kiln__ctx_unlock(ctx);
      if (stored && counters)
        counters->binary_stores++;
    }
  }
  *plan = p;
  return KILN_OK;
}

static kiln_status
vkfft_execute(const char *op, kiln_context *ctx, void *plan, int inverse, cl_mem in,
                    cl_mem out)
{
  struct vk_plan *p = plan;
  if (p->identity) {
    if (p->inplace || !p->buffer_size)
      return KILN_OK;
    cl_int err =
        clEnqueueCopyBuffer(ctx->queue, in, out, 0, 0, (size_t)p->buffer_size, 0, NULL, NULL);
    return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "clEnqueueCopyBuffer");
  }
  VkFFTLaunchParams lp;
  memset(&lp, 0, sizeof lp);
  cl_command_queue q = ctx->queue;
  lp.commandQueue = &q;
  if (p->inplace) {
    lp.buffer = &in;
  } else if (p->kind == KILN_FFT_C2R) {
    lp.buffer = &in;
    lp.inputBuffer = &out;
  } else {
    lp.inputBuffer = &in;
    lp.buffer = &out;
  }
  cl_event begin;
  KILN_TRY(kiln__provider_span_begin(op, ctx, &begin));
  kiln_status s = check(op, "VkFFTAppend", VkFFTAppend(&p->app, inverse ? 1 : -1, &lp));
  kiln_status e = kiln__provider_span_end(op, ctx, begin);
  return s != KILN_OK ? s : e;
}

static void
vkfft_destroy(void *plan)
{
  struct vk_plan *p = plan;
  if (!p)
    return;
  if (!p->identity)
    deleteVkFFT(&p->app);
  free(p);
}

const struct kiln__fft_backend_ops kiln__vkfft_ops = {
    .supports = vkfft_supports,
    .create = vkfft_create,
    .execute = vkfft_execute,
    .destroy = vkfft_destroy,
    .binaries_reloadable = vkfft_binaries_reloadable,
};
