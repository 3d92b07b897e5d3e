/*
 * clFFT back end. clFFT keeps library state between clfftSetup() and
 * clfftTeardown() and its plan baking is not thread-safe (clFFT#250), so
 * every clFFT call here runs under one process-wide mutex; setup happens
 * with the first plan and teardown after the last plan is destroyed, so no
 * plan ever outlives the library state it was made in.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <clFFT.h>

#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "backends/fft_backend.h"
#include "runtime/disk_cache.h"

static pthread_mutex_t clfft_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t clfft_plans; /* live plans; setup done while > 0 */

struct clfft_plan {
  clfftPlanHandle handle;
  int inplace;
};

/* Every clfftStatus clFFT 2.12 defines beyond the OpenCL codes, named. */
static const char *
status_name(clfftStatus s)
{
  switch (s) {
  case CLFFT_BUGCHECK:
    return "CLFFT_BUGCHECK";
  case CLFFT_NOTIMPLEMENTED:
    return "CLFFT_NOTIMPLEMENTED";
  case CLFFT_TRANSPOSED_NOTIMPLEMENTED:
    return "CLFFT_TRANSPOSED_NOTIMPLEMENTED";
  case CLFFT_FILE_NOT_FOUND:
    return "CLFFT_FILE_NOT_FOUND";
  case CLFFT_FILE_CREATE_FAILURE:
    return "CLFFT_FILE_CREATE_FAILURE";
  case CLFFT_VERSION_MISMATCH:
    return "CLFFT_VERSION_MISMATCH";
  case CLFFT_INVALID_PLAN:
    return "CLFFT_INVALID_PLAN";
  case CLFFT_DEVICE_NO_DOUBLE:
    return "CLFFT_DEVICE_NO_DOUBLE";
  case CLFFT_DEVICE_MISMATCH:
    return "CLFFT_DEVICE_MISMATCH";
  case CLFFT_ENDSTATUS:
    break;
  default:
    /* The rest of clfftStatus are the OpenCL error codes under other names. */
    return kiln__cl_error_name((int32_t)s);
  }
  return "unknown clfftStatus";
}

/*
 * kiln status of a clfftStatus: OpenCL codes map as OpenCL errors do
 * (memory, build), clFFT's own codes to PROVIDER, except a missing feature.
 */
static kiln_status
status_of(clfftStatus s)
{
  switch (s) {
  case CLFFT_SUCCESS:
    return KILN_OK;
  case CLFFT_NOTIMPLEMENTED:
  case CLFFT_TRANSPOSED_NOTIMPLEMENTED:
  case CLFFT_DEVICE_NO_DOUBLE:
    return KILN_ERR_UNSUPPORTED;
  case CLFFT_BUGCHECK:
  case CLFFT_FILE_NOT_FOUND:
  case CLFFT_FILE_CREATE_FAILURE:
  case CLFFT_VERSION_MISMATCH:
  case CLFFT_INVALID_PLAN:
  case CLFFT_DEVICE_MISMATCH:
  case CLFFT_ENDSTATUS:
    return KILN_ERR_PROVIDER;
  default:
    break;
  }
  kiln_status k = kiln__status_from_cl((int32_t)s);
  return k == KILN_ERR_OPENCL ? KILN_ERR_PROVIDER : k;
}

static kiln_status
check(const char *op, const char *call, clfftStatus s)
{
  if (s == CLFFT_SUCCESS)
    return KILN_OK;
  return kiln__fail(status_of(s), op, (int32_t)s, "clFFT %s failed: %s (%d)", call, status_name(s),
                    (int)s);
}

static int
clfft_supports(const struct kiln__fft_key *key, char *why, size_t len)
{
  static const int64_t radices[] = {2, 3, 5, 7, 11, 13};
  /* clfftBakePlan's bounds for real transforms (CLFFT_NOTIMPLEMENTED beyond them). */
  int real_log2 = key->precision == KILN_F64 ? 22 : 24;
  for (uint32_t i = 0; i < key->rank; i++) {
    int64_t n = key->sizes[i];
    if (key->kind != KILN_FFT_C2C && n > (int64_t)1 << real_log2) {
      snprintf(why, len,
               "clFFT's real transforms take sizes up to 2^%d in %s; size %lld is larger "
               "(VkFFT has no such bound)",
               real_log2, kiln_dtype_name(key->precision), (long long)n);
      return 0;
    }
    for (size_t r = 0; r < sizeof radices / sizeof radices[0]; r++)
      while (n % radices[r] == 0)
        n /= radices[r];
    if (n != 1) {
      snprintf(why, len,
               "clFFT handles sizes whose prime factors are 2, 3, 5, 7, 11 and 13; "
               "size %lld has the factor %lld (VkFFT does any size)",
               (long long)key->sizes[i], (long long)n);
      return 0;
    }
  }
  return 1;
}

/*
 * Points clFFT's binary cache into kiln's cache directory (the directory of
 * the context that sets clFFT up, when its kernel cache is on) unless the
 * user set CLFFT_CACHE_PATH: clFFT reads the variable in clfftSetup(), once
 * per setup, for the whole process. clFFT has no read-only mode, so a
 * read-only or off kernel cache leaves clFFT uncached. cache_dir may be NULL.
 */
static void
set_cache_path(const char *cache_dir)
{
  const char *user = kiln__env(KILN__ENV_CLFFT_CACHE_PATH);
  if ((user && *user) || !cache_dir)
    return;
  char dir[4096];
  int n = snprintf(dir, sizeof dir, "%s/clfft", cache_dir);
  if (n <= 0 || (size_t)n >= sizeof dir)
    return;
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
    kiln__log(KILN__LOG_WARN, "clFFT binary cache: cannot create %s (%s); clFFT compiles uncached",
              dir, strerror(errno));
    return;
  }
  setenv("CLFFT_CACHE_PATH", dir, 0);
  kiln__log(KILN__LOG_DEBUG, "clFFT binary cache in %s", dir);
}

/* Takes a reference on clFFT's library state (clfft_lock held). */
static kiln_status
setup_locked(const char *op, const char *cache_dir)
{
  if (clfft_plans++ > 0)
    return KILN_OK;
  set_cache_path(cache_dir);
  /*
   * What clfftInitSetupData() does, spelled out: the header defines it plain
   * `__inline`, which in C99 emits no out-of-line copy, so an unoptimised
   * build that does not inline it fails to link.
   */
  clfftSetupData sd;
  memset(&sd, 0, sizeof sd);
  sd.major = clfftVersionMajor;
  sd.minor = clfftVersionMinor;
  sd.patch = clfftVersionPatch;
  clfftStatus s = clfftSetup(&sd);
  if (s != CLFFT_SUCCESS)
    clfft_plans--;
  return check(op, "clfftSetup", s);
}

/* Drops the reference; the last one tears clFFT down (clfft_lock held). */
static void
teardown_locked(void)
{
  if (--clfft_plans == 0)
    clfftTeardown();
}

/* clFFT's strides and distance for one side, in that side's elements, fastest axis first. */
static void
layout(const struct kiln__fft_key *k, int complex_side, size_t strides[3], size_t *dist)
{
  uint32_t r = k->rank;
  size_t len[3] = {1, 1, 1};
  for (uint32_t i = 0; i < r; i++)
    len[i] = (size_t)k->sizes[r - 1 - i];
  if (k->kind != KILN_FFT_C2C) {
    size_t h = len[0] / 2 + 1;
    /* Complex side: H along the fast axis; real side in place: padded to 2H reals. */
    if (complex_side)
      len[0] = h;
    else if (k->inplace)
      len[0] = 2 * h;
  }
  size_t s = 1;
  for (uint32_t i = 0; i < r; i++) {
    strides[i] = s;
    s *= len[i];
  }
  *dist = s;
}

static kiln_status
clfft_create(const char *op, kiln_context *ctx, const struct kiln__fft_key *key,
             int binary_cache, struct kiln__fft_counters *counters, void **plan)
{
  struct clfft_plan *p = calloc(1, sizeof *p);
  KILN_RETURN_IF(!p, KILN_ERR_HOST_MEMORY, op, "cannot allocate a clFFT plan");
  p->inplace = key->inplace;
  size_t lengths[3];
  for (uint32_t i = 0; i < key->rank; i++)
    lengths[i] = (size_t)key->sizes[key->rank - 1 - i];
  clfftLayout il = CLFFT_COMPLEX_INTERLEAVED, ol = CLFFT_COMPLEX_INTERLEAVED;
  if (key->kind == KILN_FFT_R2C)
    il = CLFFT_REAL, ol = CLFFT_HERMITIAN_INTERLEAVED;
  else if (key->kind == KILN_FFT_C2R)
    il = CLFFT_HERMITIAN_INTERLEAVED, ol = CLFFT_REAL;
  size_t istr[3], ostr[3], idist, odist;
  layout(key, key->kind != KILN_FFT_R2C, istr, &idist);
  layout(key, key->kind != KILN_FFT_C2R, ostr, &odist);
  clfftDim dim = key->rank == 1 ? CLFFT_1D : key->rank == 2 ? CLFFT_2D : CLFFT_3D;

  /* The cache directory, copied under ctx->lock before clfft_lock (the lock order is ctx, clFFT).
   */
  char cache_dir[4096];
  int have_dir = 0;
  kiln__ctx_lock(ctx);
  const char *d = kiln__dc_dir(ctx->cache);
  if (d && kiln__dc_mode(ctx->cache) == KILN_CACHE_ON && strlen(d) < sizeof cache_dir) {
    strcpy(cache_dir, d);
    have_dir = 1;
  }
  kiln__ctx_unlock(ctx);

  pthread_mutex_lock(&clfft_lock);
  kiln_status s = setup_locked(op, have_dir ? cache_dir : NULL);
  if (s != KILN_OK) {
    pthread_mutex_unlock(&clfft_lock);
    free(p);
    return s;
  }
  int created = 0;
  s = check(op, "clfftCreateDefaultPlan",
            clfftCreateDefaultPlan(&p->handle, ctx->cl, dim, lengths));
  created = s == KILN_OK;
  if (s == KILN_OK)
    s = check(
        op, "clfftSetPlanPrecision",
        clfftSetPlanPrecision(p->handle, key->precision == KILN_F64 ? CLFFT_DOUBLE : CLFFT_SINGLE));
  if (s == KILN_OK)
    s = check(op, "clfftSetLayout", clfftSetLayout(p->handle, il, ol));
  if (s == KILN_OK)
    s = check(op, "clfftSetResultLocation",
              clfftSetResultLocation(p->handle, key->inplace ? CLFFT_INPLACE : CLFFT_OUTOFPLACE));
  if (s == KILN_OK)
    s = check(op, "clfftSetPlanBatchSize", clfftSetPlanBatchSize(p->handle, (size_t)key->batch));
  if (s == KILN_OK)
    s = check(op, "clfftSetPlanInStride", clfftSetPlanInStride(p->handle, dim, istr));
  if (s == KILN_OK)
    s = check(op, "clfftSetPlanOutStride", clfftSetPlanOutStride(p->handle, dim, ostr));
  if (s == KILN_OK)
    s = check(op, "clfftSetPlanDistance", clfftSetPlanDistance(p->handle, idist, odist));
  /* clFFT scales inverse transforms by 1/N by default; kiln applies its own normalisation. */
  if (s == KILN_OK)
    s = check(op, "clfftSetPlanScale", clfftSetPlanScale(p->handle, CLFFT_FORWARD, 1.0f));
  if (s == KILN_OK)
    s = check(op, "clfftSetPlanScale", clfftSetPlanScale(p->handle, CLFFT_BACKWARD, 1.0f));
  if (s == KILN_OK)
    s = check(op, "clfftBakePlan", clfftBakePlan(p->handle, 1, &ctx->queue, NULL, NULL));
  if (s != KILN_OK) {
    if (created)
      clfftDestroyPlan(&p->handle);
    teardown_locked();
    pthread_mutex_unlock(&clfft_lock);
    free(p);
    return s;
  }
  pthread_mutex_unlock(&clfft_lock);
  *plan = p;
  return KILN_OK;
}

static kiln_status
clfft_execute(const char *op, kiln_context *ctx, void *plan, int inverse, cl_mem in,
                    cl_mem out)
{
  struct clfft_plan *p = plan;
  cl_event begin;
  KILN_TRY(kiln__provider_span_begin(op, ctx, &begin));
  pthread_mutex_lock(&clfft_lock);
  clfftStatus st =
      clfftEnqueueTransform(p->handle, inverse ? CLFFT_BACKWARD : CLFFT_FORWARD, 1, &ctx->queue, 0,
                            NULL, NULL, &in, p->inplace ? NULL : &out, NULL);
  pthread_mutex_unlock(&clfft_lock);
  kiln_status s = check(op, "clfftEnqueueTransform", st);
  kiln_status e = kiln__provider_span_end(op, ctx, begin);
  return s != KILN_OK ? s : e;
}

static void
clfft_destroy(void *plan)
{
  struct clfft_plan *p = plan;
  if (!p)
    return;
  pthread_mutex_lock(&clfft_lock);
  clfftDestroyPlan(&p->handle);
  teardown_locked();
  pthread_mutex_unlock(&clfft_lock);
  free(p);
}

/* clFFT keeps no binaries of kiln's: its own cache (CLFFT_CACHE_PATH) serves that. */
const struct kiln__fft_backend_ops kiln__clfft_ops = {
    .supports = clfft_supports,
    .create = clfft_create,
    .execute = clfft_execute,
    .destroy = clfft_destroy,
};
