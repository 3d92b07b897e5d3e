/*
 * FFT family: plan handles over a bounded per-context cache of compiled
 * back-end plans (clFFT or VkFFT), tensor validation, staging of tensors
 * that start inside a buffer, and NumPy-style normalisation.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backends/fft_backend.h"
#include "core/dtype_traits.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "kiln/fft.h"
#include "kiln_config.h"
#include "ops/families.h"
#include "ops/ops_common.h"
#include "ops/tunables.h"
#include "ops/tuned.h"
#include "runtime/runtime.h"
#include "runtime/tuner.h"

#define PLAN_MAGIC 0x6b666674u /* "kfft" */

/* One compiled plan. Handles point here; an entry outlives its context's cache while held. */
struct entry {
  struct kiln__fft_key key;
  void *impl;        /* back-end plan; NULL once the context is gone */
  int64_t users;     /* live handles */
  uint64_t last_use; /* cache clock, for LRU */
  int orphan;        /* context released while handles held it */
};

/* The family's per-context state (kiln__family_state); guarded by ctx->lock. */
struct fft_state {
  int backend; /* KILN_OPT_FFT_BACKEND (a kiln_fft_backend value) */
  struct entry **entries;
  size_t n, cap;
  uint64_t clock;
  kiln_fft_stats stats;
  struct kiln__fft_counters counters;
  int vkfft_binaries; /* store/reload VkFFT binaries on this context */
};

struct kiln_fft_plan {
  uint32_t magic;
  kiln_context *ctx;
  struct entry *entry;
  int complex_io; /* created with c64/c128: complex outputs kiln allocates are complex tensors */
};

const char *
kiln_fft_backend_name(kiln_fft_backend b)
{
  switch (b) {
  case KILN_FFT_BACKEND_AUTO:
    return "auto";
  case KILN_FFT_BACKEND_CLFFT:
    return "clfft";
  case KILN_FFT_BACKEND_VKFFT:
    return "vkfft";
  }
  return "?";
}

static const struct kiln__fft_backend_ops *backend_ops(kiln_fft_backend b);

int
kiln_fft_backend_available(kiln_fft_backend b)
{
  if (b == KILN_FFT_BACKEND_AUTO)
    return backend_ops(KILN_FFT_BACKEND_CLFFT) || backend_ops(KILN_FFT_BACKEND_VKFFT);
  return backend_ops(b) != NULL;
}

/* ---- back-end dispatch ---- */

/* The back ends by kiln_fft_backend; NULL where this libkiln was built without one. */
static const struct kiln__fft_backend_ops *const backends[] = {
    [KILN_FFT_BACKEND_AUTO] = NULL,
    [KILN_FFT_BACKEND_CLFFT] = KILN__CLFFT_OPS,
    [KILN_FFT_BACKEND_VKFFT] = KILN__VKFFT_OPS,
};

static const struct kiln__fft_backend_ops *
backend_ops(kiln_fft_backend b)
{
  return (unsigned)b < sizeof backends / sizeof backends[0] ? backends[b] : NULL;
}

static void
impl_destroy(kiln_fft_backend b, void *impl)
{
  if (backend_ops(b))
    backend_ops(b)->destroy(impl);
}

static kiln_status
impl_create(const char *op, kiln_context *ctx, const struct kiln__fft_key *key,
            struct kiln__fft_counters *counters, int vkfft_binaries, void **impl)
{
  const struct kiln__fft_backend_ops *be = backend_ops(key->backend);
  KILN_RETURN_IF(!be, KILN_ERR_UNSUPPORTED, op, "this libkiln was built without %s",
                 kiln_fft_backend_name(key->backend));
  return be->create(op, ctx, key, vkfft_binaries, counters, impl);
}

static kiln_status
impl_execute(const char *op, kiln_context *ctx, const struct entry *e, int inverse, cl_mem in,
             cl_mem out)
{
  const struct kiln__fft_backend_ops *be = backend_ops(e->key.backend);
  KILN_RETURN_IF(!be, KILN_ERR_INTERNAL, op, "plan for a back end missing from this build");
  return be->execute(op, ctx, e->impl, inverse, in, out);
}

/* Whether b can do key (a back end missing from the build cannot), else why. */
static int
backend_supports(kiln_fft_backend b, const struct kiln__fft_key *key, char *why, size_t len)
{
  const struct kiln__fft_backend_ops *be = backend_ops(b);
  if (!be) {
    snprintf(why, len, "this libkiln was built without %s", kiln_fft_backend_name(b));
    return 0;
  }
  return be->supports(key, why, len);
}

kiln_fft_backend
kiln__fft_default_backend(const kiln_context *ctx, kiln_dtype precision, int log2n)
{
  static const int f32[2] = {KILN__FFT_CPU_CLFFT_F32_LOG2}, f64[2] = {KILN__FFT_CPU_CLFFT_F64_LOG2};
  const int *r = precision == KILN_F64 ? f64 : f32;
  kiln_fft_backend b = !ctx->info.is_gpu && log2n >= r[0] && log2n <= r[1]
                           ? KILN_FFT_BACKEND_CLFFT
                           : KILN_FFT_BACKEND_VKFFT;
  if (!kiln_fft_backend_available(b))
    b = b == KILN_FFT_BACKEND_VKFFT ? KILN_FFT_BACKEND_CLFFT : KILN_FFT_BACKEND_VKFFT;
  return b;
}

/*
 * AUTO's choice when both back ends can do the key: the autotuner's for the
 * key's precision and size bucket (an override, a stored result, online
 * tuning in mode ONLINE), else kiln__fft_default_backend. Called before
 * ctx->lock is taken: online tuning runs transforms.
 */
static kiln_fft_backend
tuned_backend(kiln_context *ctx, const struct kiln__fft_key *key)
{
  uint32_t backend;
  kiln__tune_lookup(ctx, &kiln__fft_tune, key->precision, KILN__LAYOUT_POINTS,
                    kiln__fft_real_count(key), &backend);
  return (kiln_fft_backend)backend;
}

/*
 * Sets key->backend. *alt is the other back end when auto chose between two
 * that both pass their checks here (some limits only show when a back end
 * plans: VkFFT's passes), else KILN_FFT_BACKEND_AUTO.
 */
static kiln_status
resolve_backend(const char *op, kiln_context *ctx, kiln_fft_backend asked,
                struct kiln__fft_key *key, kiln_fft_backend *alt)
{
  kiln_fft_backend b = asked;
  if (b == KILN_FFT_BACKEND_AUTO) {
    kiln__ctx_lock(ctx);
    b = (kiln_fft_backend)((struct fft_state *)kiln__family_state(ctx, &kiln__fft_family))->backend;
    kiln__ctx_unlock(ctx);
  }
  char why_cl[256] = "", why_vk[256] = "";
  int clfft_ok = backend_supports(KILN_FFT_BACKEND_CLFFT, key, why_cl, sizeof why_cl);
  int vkfft_ok = backend_supports(KILN_FFT_BACKEND_VKFFT, key, why_vk, sizeof why_vk);
  *alt = KILN_FFT_BACKEND_AUTO;
  if (b == KILN_FFT_BACKEND_AUTO) {
    /* Only a real choice asks the tuner: a stored choice must never pick a back end that
     * cannot run the plan, and a forced one needs no tuning. */
    if (clfft_ok && vkfft_ok) {
      b = tuned_backend(ctx, key);
      *alt = b == KILN_FFT_BACKEND_CLFFT ? KILN_FFT_BACKEND_VKFFT : KILN_FFT_BACKEND_CLFFT;
    } else if (clfft_ok || vkfft_ok)
      b = clfft_ok ? KILN_FFT_BACKEND_CLFFT : KILN_FFT_BACKEND_VKFFT;
    else
      b = kiln__fft_default_backend(ctx, key->precision, 0); /* fails below, naming why */
  }
  KILN_RETURN_IF(!kiln_fft_backend_available(b), KILN_ERR_UNSUPPORTED, op,
                 "this libkiln was built without %s", kiln_fft_backend_name(b));
  KILN_RETURN_IF(b == KILN_FFT_BACKEND_CLFFT && !clfft_ok, KILN_ERR_UNSUPPORTED, op, "%s", why_cl);
  KILN_RETURN_IF(b == KILN_FFT_BACKEND_VKFFT && !vkfft_ok, KILN_ERR_UNSUPPORTED, op, "%s", why_vk);
  key->backend = b;
  return KILN_OK;
}

/* ---- the per-context cache ---- */

static void
entry_drop_impl(struct entry *e)
{
  if (e->impl)
    impl_destroy(e->key.backend, e->impl);
  e->impl = NULL;
}

/* Context release (ctx->lock held): every compiled plan goes before the cl objects do. */
static void
state_destroy(kiln_context *ctx, void *data)
{
  KILN__ASSERT_LOCKED(ctx);
  (void)ctx;
  struct fft_state *st = data;
  for (size_t i = 0; i < st->n; i++) {
    struct entry *e = st->entries[i];
    entry_drop_impl(e);
    if (e->users > 0)
      e->orphan = 1; /* freed by the last kiln_fft_plan_release */
    else
      free(e);
  }
  free(st->entries);
  free(st);
}

/* KILN_FFT_BACKEND: auto, clfft or vkfft; anything else warns and means auto. */
static int
env_backend(void)
{
  const char *v = kiln__env(KILN__ENV_FFT_BACKEND);
  if (!v || !*v)
    return KILN_FFT_BACKEND_AUTO;
  for (int b = KILN_FFT_BACKEND_AUTO; b <= KILN_FFT_BACKEND_VKFFT; b++)
    if (strcasecmp(v, kiln_fft_backend_name((kiln_fft_backend)b)) == 0)
      return b;
  kiln__log(KILN__LOG_WARN, "KILN_FFT_BACKEND=\"%s\" is not auto, clfft or vkfft; using auto", v);
  return KILN_FFT_BACKEND_AUTO;
}

static kiln_status
state_create(kiln_context *ctx, void **out)
{
  struct fft_state *st = calloc(1, sizeof *st);
  KILN_RETURN_IF(!st, KILN_ERR_HOST_MEMORY, "kiln_context_create",
                 "cannot allocate the FFT plan cache");
  st->backend = env_backend();
  /* KILN_VKFFT_BINARY_CACHE = on | off | auto (default: by platform), read once per context. */
  const char *env = kiln__env(KILN__ENV_VKFFT_BINARY_CACHE);
  const struct kiln__fft_backend_ops *vk = backend_ops(KILN_FFT_BACKEND_VKFFT);
  int reload = vk && vk->binaries_reloadable && vk->binaries_reloadable(ctx);
  if (env && strcasecmp(env, "on") == 0)
    reload = 1;
  else if (env && strcasecmp(env, "off") == 0)
    reload = 0;
  st->vkfft_binaries = reload;
  *out = st;
  return KILN_OK;
}

/* The family's state (ctx->lock held). */
static kiln_status
state_get(const char *op, kiln_context *ctx, struct fft_state **out)
{
  KILN__ASSERT_LOCKED(ctx);
  (void)op;
  *out = kiln__family_state(ctx, &kiln__fft_family);
  return KILN_OK;
}

static int
key_equal(const struct kiln__fft_key *a, const struct kiln__fft_key *b)
{
  if (a->kind != b->kind || a->rank != b->rank || a->batch != b->batch ||
      a->precision != b->precision || a->inplace != b->inplace || a->backend != b->backend)
    return 0;
  for (uint32_t i = 0; i < a->rank; i++)
    if (a->sizes[i] != b->sizes[i])
      return 0;
  return 1;
}

static struct entry *
cache_find(struct fft_state *st, const struct kiln__fft_key *key)
{
  for (size_t i = 0; i < st->n; i++)
    if (key_equal(&st->entries[i]->key, key))
      return st->entries[i];
  return NULL;
}

/* Drops least recently used idle entries until at most the capacity remain. */
static void
cache_evict(struct fft_state *st)
{
  while (st->n > KILN__FFT_PLAN_CACHE_CAPACITY) {
    size_t victim = st->n;
    for (size_t i = 0; i < st->n; i++)
      if (st->entries[i]->users == 0 &&
          (victim == st->n || st->entries[i]->last_use < st->entries[victim]->last_use))
        victim = i;
    if (victim == st->n)
      return; /* everything is in use */
    struct entry *e = st->entries[victim];
    entry_drop_impl(e);
    free(e);
    st->entries[victim] = st->entries[--st->n];
    st->stats.plan_evictions++;
  }
}

/*
 * A new handle's hold on an entry (ctx->lock held, in the same critical
 * section that found or inserted it, so no other thread can evict it first).
 */
static void
take(kiln_context *ctx, struct fft_state *st, struct entry *e)
{
  KILN__ASSERT_LOCKED(ctx);
  e->users++;
  e->last_use = ++st->clock;
  ctx->refs++;
  cache_evict(st);
}

/*
 * The cached compiled plan for key, compiled and inserted on a miss, with a
 * new hold taken on it (*out).
 */
static kiln_status
plan_get(const char *op, kiln_context *ctx, const struct kiln__fft_key *key, struct entry **out)
{
  kiln__ctx_lock(ctx);
  struct fft_state *st = NULL;
  kiln_status s = state_get(op, ctx, &st);
  struct entry *e = s == KILN_OK ? cache_find(st, key) : NULL;
  if (e) {
    st->stats.plan_hits++;
    take(ctx, st, e);
  }
  int vkb = s == KILN_OK ? st->vkfft_binaries : 0;
  kiln__ctx_unlock(ctx);
  if (s != KILN_OK || e) {
    *out = e;
    return s;
  }
  /* Compile outside the context lock: other work on the context goes on meanwhile. */
  struct kiln__fft_counters counters = {0, 0, 0, 0};
  void *impl = NULL;
  s = impl_create(op, ctx, key, &counters, vkb, &impl);
  kiln__ctx_lock(ctx);
  st->counters.binary_hits += counters.binary_hits;
  st->counters.binary_stores += counters.binary_stores;
  st->counters.binary_rejects += counters.binary_rejects;
  st->counters.binary_unusable += counters.binary_unusable;
  if (s == KILN_OK) {
    e = cache_find(st, key);
    if (e) {
      /* Another thread made the same plan meanwhile: use that one. */
      st->stats.plan_hits++;
    } else {
      st->stats.plan_misses++;
      struct entry *ne = calloc(1, sizeof *ne);
      if (ne && st->n == st->cap) {
        size_t ncap = st->cap ? st->cap * 2 : 8;
        struct entry **grown = realloc(st->entries, ncap * sizeof *grown);
        if (grown) {
          st->entries = grown;
          st->cap = ncap;
        }
      }
      if (!ne || st->n == st->cap) {
        free(ne);
        s = kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "cannot grow the FFT plan cache");
      } else {
        ne->key = *key;
        ne->impl = impl;
        impl = NULL;
        st->entries[st->n++] = ne;
        e = ne;
      }
    }
    if (e)
      take(ctx, st, e);
  }
  kiln__ctx_unlock(ctx);
  if (impl)
    impl_destroy(key->backend, impl);
  *out = e;
  return s;
}

/* ---- plan API ---- */

kiln_status
kiln_fft_plan_create(kiln_context *ctx, kiln_fft_kind kind, size_t rank, const int64_t *sizes,
                     int64_t batch, kiln_dtype precision, int inplace, kiln_fft_backend backend,
                     kiln_fft_plan **out)
{
  static const char op[] = "kiln_fft_plan_create";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  *out = NULL;
  KILN_RETURN_IF(kind != KILN_FFT_C2C && kind != KILN_FFT_R2C && kind != KILN_FFT_C2R,
                 KILN_ERR_INVALID_ARGUMENT, op, "kind %d is not C2C, R2C or C2R", (int)kind);
  KILN_RETURN_IF(rank < 1 || rank > 3, KILN_ERR_INVALID_ARGUMENT, op, "rank %zu is outside 1-3",
                 rank);
  KILN_RETURN_IF(!sizes, KILN_ERR_INVALID_ARGUMENT, op, "sizes is NULL");
  KILN_RETURN_IF(backend != KILN_FFT_BACKEND_AUTO && backend != KILN_FFT_BACKEND_CLFFT &&
                     backend != KILN_FFT_BACKEND_VKFFT,
                 KILN_ERR_INVALID_ARGUMENT, op, "backend %d is not a kiln_fft_backend",
                 (int)backend);
  /* VkFFT 1.2's half mode writes GLSL's f16vec2 into its OpenCL kernels and needs
   * cl_khr_fp16 besides; clFFT has no half precision; no library has bf16. */
  KILN_RETURN_IF(kiln__dtype_is_half(precision), KILN_ERR_UNSUPPORTED, op,
                 "precision is %s; FFTs run on f32/c64 and f64/c128 (neither clFFT nor VkFFT's "
                 "OpenCL back end has a 16-bit mode; cast to f32 first)",
                 kiln_dtype_name(precision));
  int complex_io = kiln__dtype_is_complex(precision);
  if (complex_io)
    precision = kiln__dtype_real_part(precision);
  KILN_RETURN_IF(precision != KILN_F32 && precision != KILN_F64, KILN_ERR_DTYPE, op,
                 "precision is %s; FFTs run on f32, f64, c64 or c128", kiln_dtype_name(precision));
  KILN_RETURN_IF(precision == KILN_F64 && !ctx->info.has_fp64, KILN_ERR_UNSUPPORTED, op,
                 "f64 needs fp64 support, which device \"%s\" lacks", ctx->info.name);
  KILN_RETURN_IF(batch < 1, KILN_ERR_INVALID_ARGUMENT, op, "batch %lld is below 1",
                 (long long)batch);
  struct kiln__fft_key key;
  memset(&key, 0, sizeof key);
  key.kind = kind;
  key.rank = (uint32_t)rank;
  key.batch = batch;
  key.precision = precision;
  key.inplace = inplace != 0;
  /* Element counts (real side, padded or not, times batch, times 2 for complex) must fit. */
  uint64_t total = 2 * (uint64_t)batch;
  for (size_t i = 0; i < rank; i++) {
    KILN_RETURN_IF(sizes[i] < 1, KILN_ERR_INVALID_ARGUMENT, op, "size %zu is %lld (must be >= 1)",
                   i, (long long)sizes[i]);
    key.sizes[i] = sizes[i];
    KILN_RETURN_IF(__builtin_mul_overflow(total, (uint64_t)sizes[i] + 2, &total) ||
                       total > (uint64_t)INT64_MAX / 8,
                   KILN_ERR_OVERFLOW, op, "the transform's element count overflows");
  }
  /*
   * Every tensor a plan reads or writes is one buffer, and the complex side
   * is the largest. A plan no tensor could feed is refused here, the same
   * way for both back ends (clFFT used to accept 2^40 points, VkFFT refused).
   */
  uint64_t bytes = kiln__fft_complex_count(&key) * 2 * kiln_dtype_size(precision) * (uint64_t)batch;
  KILN_RETURN_IF(bytes > ctx->info.max_alloc_bytes, KILN_ERR_OVERFLOW, op,
                 "the plan's complex data takes %llu bytes, over the device's largest allocation "
                 "(%llu bytes)",
                 (unsigned long long)bytes, (unsigned long long)ctx->info.max_alloc_bytes);
  kiln_fft_backend alt;
  KILN_TRY(resolve_backend(op, ctx, backend, &key, &alt));

  kiln_fft_plan *h = calloc(1, sizeof *h);
  KILN_RETURN_IF(!h, KILN_ERR_HOST_MEMORY, op, "cannot allocate a plan handle");
  struct entry *e = NULL;
  kiln_status s = plan_get(op, ctx, &key, &e);
  if (s == KILN_ERR_UNSUPPORTED && alt != KILN_FFT_BACKEND_AUTO) {
    /* Auto's choice found a limit only its planner knows: the other back end passed its checks. */
    kiln__log(KILN__LOG_INFO, "%s: auto takes %s: %s", op, kiln_fft_backend_name(alt),
              kiln_last_error());
    key.backend = alt;
    s = plan_get(op, ctx, &key, &e);
  }
  if (s != KILN_OK) {
    free(h);
    return s;
  }
  h->magic = PLAN_MAGIC;
  h->ctx = ctx;
  h->entry = e;
  h->complex_io = complex_io;
  *out = h;
  return KILN_OK;
}

static kiln_status
plan_check(const char *op, const kiln_fft_plan *plan)
{
  KILN_RETURN_IF(!plan, KILN_ERR_INVALID_HANDLE, op, "plan is NULL");
  KILN_RETURN_IF(plan->magic != PLAN_MAGIC, KILN_ERR_INVALID_HANDLE, op,
                 "plan %p is released or not a kiln FFT plan", (const void *)plan);
  return KILN_OK;
}

kiln_status
kiln_fft_plan_release(kiln_fft_plan *plan)
{
  static const char op[] = "kiln_fft_plan_release";
  if (!plan)
    return KILN_OK;
  KILN_TRY(plan_check(op, plan));
  kiln_context *ctx = plan->ctx;
  struct entry *e = plan->entry;
  kiln__ctx_lock(ctx);
  plan->magic = KILN__DEAD_MAGIC;
  int free_entry = --e->users == 0 && e->orphan;
  struct fft_state *st = kiln__family_state(ctx, &kiln__fft_family);
  if (st && !e->orphan)
    cache_evict(st);
  kiln__ctx_unlock(ctx);
  if (free_entry)
    free(e);
  kiln__ctx_unref(ctx);
  kiln__quarantine(plan);
  return KILN_OK;
}

kiln_status
kiln_fft_plan_backend(const kiln_fft_plan *plan, kiln_fft_backend *out)
{
  static const char op[] = "kiln_fft_plan_backend";
  KILN_TRY(plan_check(op, plan));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  *out = plan->entry->key.backend;
  return KILN_OK;
}

kiln_status
kiln_fft_stats_get(kiln_context *ctx, kiln_fft_stats *out)
{
  static const char op[] = "kiln_fft_stats_get";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  memset(out, 0, sizeof *out);
  kiln__ctx_lock(ctx);
  struct fft_state *st = kiln__family_state(ctx, &kiln__fft_family);
  if (st) {
    *out = st->stats;
    out->plans_cached = st->n;
    out->vkfft_binary_hits = st->counters.binary_hits;
    out->vkfft_binary_stores = st->counters.binary_stores;
    out->vkfft_binary_rejects = st->counters.binary_rejects;
    out->vkfft_binary_unusable = st->counters.binary_unusable;
  }
  kiln__ctx_unlock(ctx);
  return KILN_OK;
}

/* ---- execution ---- */

/* The tensor shapes a plan reads and writes (batch dims collapsed into one leading dim). */
struct side {
  uint64_t inner_numel; /* elements after the batch dims */
  size_t ninner;        /* trailing dims that describe one transform */
  int64_t inner[4];
  int complex; /* inner ends in the (re, im) pair: a complex tensor may drop that 2 */
};

static void
side_shape(const struct kiln__fft_key *k, int complex_side, struct side *s)
{
  s->ninner = 0;
  for (uint32_t i = 0; i + 1 < k->rank; i++)
    s->inner[s->ninner++] = k->sizes[i];
  int64_t last = k->sizes[k->rank - 1];
  if (k->kind == KILN_FFT_C2C || !complex_side) {
    s->inner[s->ninner++] = last;
    if (k->kind == KILN_FFT_C2C)
      s->inner[s->ninner++] = 2;
  } else {
    s->inner[s->ninner++] = last / 2 + 1;
    s->inner[s->ninner++] = 2;
  }
  s->complex = k->kind == KILN_FFT_C2C || complex_side;
  s->inner_numel = 1;
  for (size_t i = 0; i < s->ninner; i++)
    s->inner_numel *= (uint64_t)s->inner[i];
}

/* "[...,4,9,2]" for messages. */
static const char *
side_text(const struct side *s, char *buf, size_t len)
{
  int n = snprintf(buf, len, "[batch...");
  for (size_t i = 0; i < s->ninner && n > 0 && (size_t)n < len; i++)
    n += snprintf(buf + n, len - (size_t)n, ",%lld", (long long)s->inner[i]);
  if (n > 0 && (size_t)n < len)
    snprintf(buf + n, len - (size_t)n, "]");
  return buf;
}

/*
 * Checks t's dtype and that t ends in the side's dims and its leading dims
 * multiply to batch. A complex side takes a precision tensor ending in 2 or
 * a complex tensor (c64 for f32) without that 2.
 */
static kiln_status
check_side(const char *op, const kiln_tensor *t, const struct side *s, kiln_dtype precision,
           int64_t batch, const char *name)
{
  char want[160], got[160];
  int cplx = s->complex && kiln__dtype_is_complex(t->dtype) &&
             kiln__dtype_real_part(t->dtype) == precision;
  KILN_RETURN_IF(t->dtype != precision && !cplx, KILN_ERR_DTYPE, op,
                 "%s is %s but the plan is %s%s%s", name, kiln_dtype_name(t->dtype),
                 kiln_dtype_name(precision), s->complex ? " (or complex " : "",
                 s->complex ? (precision == KILN_F32 ? "c64)" : "c128)") : "");
  size_t ninner = s->ninner - (size_t)cplx;
  int ok = t->shape.ndim >= ninner;
  uint64_t lead = 1;
  if (ok) {
    size_t off = t->shape.ndim - ninner;
    for (size_t i = 0; i < ninner; i++)
      ok = ok && t->shape.dims[off + i] == s->inner[i];
    for (size_t i = 0; i < off; i++)
      lead *= (uint64_t)t->shape.dims[i];
    ok = ok && lead == (uint64_t)batch;
  }
  if (!ok)
    return kiln__fail(KILN_ERR_SHAPE, op, 0,
                      "%s has shape %s; the plan needs %s%s with leading dimensions multiplying "
                      "to the batch %lld",
                      name, kiln__shape_format(&t->shape, got, sizeof got),
                      side_text(s, want, sizeof want),
                      cplx ? " without the last 2 (a complex tensor)" : "", (long long)batch);
  return KILN_OK;
}

/* Scale factor of a (direction, norm) pair; 1 means no pass. */
static double
norm_factor(kiln_fft_direction dir, kiln_fft_norm norm, double n)
{
  switch (norm) {
  case KILN_FFT_NORM_BACKWARD:
    return dir == KILN_FFT_INVERSE ? 1.0 / n : 1.0;
  case KILN_FFT_NORM_ORTHO:
    return 1.0 / sqrt(n);
  case KILN_FFT_NORM_FORWARD:
    return dir == KILN_FFT_FORWARD ? 1.0 / n : 1.0;
  case KILN_FFT_NORM_NONE:
    return 1.0;
  }
  return 1.0;
}

/* Scales t's reals (dt: the plan's precision; t may be complex, two reals an element). */
static kiln_status
scale(const char *op, kiln_context *ctx, kiln_dtype dt, kiln_tensor *t, double f)
{
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel(op, ctx, "fft", dt, "fft_scale", &k));
  uint64_t size = kiln_dtype_size(dt), n = t->nbytes / size;
  kiln__args args = kiln__args_begin(op, k);
  kiln__args_mem(&args, t->mem);
  kiln__args_u64(&args, t->offset / size);
  kiln__args_u64(&args, n);
  kiln__args_float(&args, dt, f);
  return kiln__args_launch_1d(&args, ctx, n, 0);
}

/*
 * Makes a C2R plan's complex input in mem (zero-offset, ctx->lock held) a
 * valid half spectrum, as numpy.fft.irfftn reads it: the imaginary parts a
 * real result cannot have are dropped. Both back ends need this: clFFT
 * ignored them only for batch 1 and VkFFT only for odd batch counts.
 */
static kiln_status
c2r_hermitian(const char *op, kiln_context *ctx, const struct kiln__fft_key *key, cl_mem mem)
{
  KILN__ASSERT_LOCKED(ctx);
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel(op, ctx, "fft", key->precision, "fft_c2r_hermitian", &k));
  cl_ulong outer[2] = {1, 1};
  for (uint32_t i = 0; i + 1 < key->rank; i++)
    outer[i + 3 - key->rank] = (cl_ulong)key->sizes[i];
  int64_t last = key->sizes[key->rank - 1];
  cl_ulong batch = (cl_ulong)key->batch, h = (cl_ulong)(last / 2 + 1);
  cl_uint ncols = last % 2 == 0 ? 2 : 1;
  kiln__args args = kiln__args_begin(op, k);
  kiln__args_mem(&args, mem);
  kiln__args_u64(&args, batch);
  kiln__args_u64(&args, outer[0]);
  kiln__args_u64(&args, outer[1]);
  kiln__args_u64(&args, h);
  kiln__args_u32(&args, ncols);
  return kiln__args_launch_1d(&args, ctx, batch * outer[0] * outer[1] * ncols, 0);
}

/* A zero-offset buffer holding t's bytes (ctx->lock held): t's own, or a pooled copy. */
struct staged {
  cl_mem mem;
  uint64_t capacity; /* nonzero: a pooled scratch buffer to free */
};

static kiln_status
stage(const char *op, kiln_context *ctx, const kiln_tensor *t, int copy_in, int force,
      struct staged *out)
{
  KILN__ASSERT_LOCKED(ctx);
  out->mem = t->mem;
  out->capacity = 0;
  if (t->offset == 0 && !force)
    return KILN_OK;
  KILN_TRY(kiln__pool_alloc(ctx, t->nbytes, &out->mem, &out->capacity));
  if (!copy_in)
    return KILN_OK;
  cl_int err =
      clEnqueueCopyBuffer(ctx->queue, t->mem, out->mem, t->offset, 0, t->nbytes, 0, NULL, NULL);
  if (err != CL_SUCCESS) {
    kiln__pool_free(ctx, out->mem, out->capacity);
    out->capacity = 0;
    return kiln__fail_cl(op, err, "clEnqueueCopyBuffer (staging)");
  }
  return KILN_OK;
}

static void
unstage(kiln_context *ctx, struct staged *s)
{
  if (s->capacity)
    kiln__pool_free(ctx, s->mem, s->capacity);
  s->capacity = 0;
}

kiln_status
kiln_fft_execute(kiln_fft_plan *plan, kiln_fft_direction direction, kiln_fft_norm norm,
                 kiln_tensor *in, kiln_tensor **out)
{
  static const char op[] = "kiln_fft_execute";
  KILN_TRY(plan_check(op, plan));
  kiln_context *ctx = plan->ctx;
  KILN_TRY(kiln__ctx_check(op, ctx));
  const struct kiln__fft_key *k = &plan->entry->key;
  KILN_RETURN_IF(direction != KILN_FFT_FORWARD && direction != KILN_FFT_INVERSE,
                 KILN_ERR_INVALID_ARGUMENT, op, "direction %d is not forward (-1) or inverse (1)",
                 (int)direction);
  KILN_RETURN_IF(k->kind == KILN_FFT_R2C && direction != KILN_FFT_FORWARD,
                 KILN_ERR_INVALID_ARGUMENT, op, "an R2C plan runs forward only");
  KILN_RETURN_IF(k->kind == KILN_FFT_C2R && direction != KILN_FFT_INVERSE,
                 KILN_ERR_INVALID_ARGUMENT, op, "a C2R plan runs inverse only");
  KILN_RETURN_IF((unsigned)norm > KILN_FFT_NORM_NONE, KILN_ERR_INVALID_ARGUMENT, op,
                 "norm %d is not a kiln_fft_norm", (int)norm);
  KILN_TRY(kiln__tensor_check(op, in, ctx));
  struct side sin, sout;
  /* In place, R2C/C2R data lives in the complex shape (padded real rows). */
  side_shape(k, k->kind != KILN_FFT_R2C || k->inplace, &sin);
  side_shape(k, k->kind != KILN_FFT_C2R || k->inplace, &sout);
  KILN_TRY(check_side(op, in, &sin, k->precision, k->batch, "input"));

  kiln_tensor *target;
  int made = 0;
  if (k->inplace) {
    KILN_RETURN_IF(out && *out && *out != in, KILN_ERR_INVALID_ARGUMENT, op,
                   "an in-place plan writes its input; out must be NULL or point to NULL or to the "
                   "input");
    target = in;
  } else {
    KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL for an out-of-place plan");
    if (*out) {
      KILN_TRY(kiln__tensor_check(op, *out, ctx));
      KILN_TRY(check_side(op, *out, &sout, k->precision, k->batch, "output"));
      /* Back ends read the input in several passes: refused, not staged (docs/ops.md). */
      KILN_RETURN_IF(kiln__ops_alias(*out, in), KILN_ERR_INVALID_ARGUMENT, op,
                     "the output overlaps the input; use an in-place plan");
    } else {
      /* The input's batch dims, then the output side's dims; a complex tensor when the plan
       * was made for one or the input is one. */
      int in_cplx = kiln__dtype_is_complex(in->dtype);
      int out_cplx = sout.complex && (plan->complex_io || in_cplx);
      kiln__shape os;
      memset(&os, 0, sizeof os);
      size_t lead = in->shape.ndim - (sin.ninner - (size_t)in_cplx);
      for (size_t i = 0; i < lead; i++)
        os.dims[os.ndim++] = in->shape.dims[i];
      for (size_t i = 0; i < sout.ninner - (size_t)out_cplx; i++)
        os.dims[os.ndim++] = sout.inner[i];
      kiln_dtype odt = out_cplx ? (k->precision == KILN_F32 ? KILN_C64 : KILN_C128) : k->precision;
      KILN_TRY(kiln__output_prepare(op, ctx, odt, &os, out, &made));
    }
    target = *out;
  }

  double f = norm_factor(direction, norm, (double)kiln__fft_real_count(k));
  struct staged si = {NULL, 0}, so = {NULL, 0};
  kiln__ctx_lock(ctx);
  kiln_status s = plan->entry->impl ? KILN_OK
                                    : kiln__fail(KILN_ERR_INVALID_HANDLE, op, 0,
                                                 "the plan's context is released");
  /*
   * Back ends take zero-offset buffers. Out-of-place C2R also gets a copy of
   * its input: both libraries use the complex buffer as work space there,
   * and kiln cleans the spectrum in it (in place, the input is overwritten
   * by the result anyway).
   */
  int c2r = k->kind == KILN_FFT_C2R;
  if (s == KILN_OK)
    s = stage(op, ctx, in, 1, c2r && !k->inplace, &si);
  if (s == KILN_OK && c2r)
    s = c2r_hermitian(op, ctx, k, si.mem);
  if (s == KILN_OK)
    s = k->inplace ? (so = si, KILN_OK) : stage(op, ctx, target, 0, 0, &so);
  if (s == KILN_OK)
    s = impl_execute(op, ctx, plan->entry, direction == KILN_FFT_INVERSE, si.mem, so.mem);
  if (s == KILN_OK && so.mem != target->mem) {
    cl_int err = clEnqueueCopyBuffer(ctx->queue, so.mem, target->mem, 0, target->offset,
                                     target->nbytes, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      s = kiln__fail_cl(op, err, "clEnqueueCopyBuffer (unstaging)");
  }
  if (s == KILN_OK && f != 1.0)
    s = scale(op, ctx, k->precision, target, f);
  if (!k->inplace)
    unstage(ctx, &so);
  unstage(ctx, &si);
  kiln__ctx_unlock(ctx);
  if (s != KILN_OK && made)
    kiln__output_discard(out, made);
  return s;
}

kiln_status
kiln__fft_c2c_forward(kiln_context *ctx, kiln_tensor *x, kiln_fft_backend backend,
                      kiln_tensor **out)
{
  static const char op[] = "kiln_fft_execute";
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_RETURN_IF(x->shape.ndim != 2 || x->shape.dims[1] != 2 || x->shape.dims[0] < 1,
                 KILN_ERR_SHAPE, op, "the c2c problem is [n, 2]");
  KILN_RETURN_IF(backend == KILN_FFT_BACKEND_AUTO, KILN_ERR_INVALID_ARGUMENT, op,
                 "a back end must be given");
  int64_t n = x->shape.dims[0];
  kiln_fft_plan *plan = NULL;
  /* After the first call a cache hit: no compile is timed. */
  KILN_TRY(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &n, 1, x->dtype, 0, backend, &plan));
  kiln_status s = kiln_fft_execute(plan, KILN_FFT_FORWARD, KILN_FFT_NORM_NONE, x, out);
  kiln_fft_plan_release(plan);
  return s;
}

static void
fft_option_set(kiln_context *ctx, void *state, kiln_option option, int64_t value)
{
  struct fft_state *st = state;
  if (option == KILN_OPT_FFT_BACKEND)
    st->backend = (int)value;
  else
    st->vkfft_binaries = (int)value;
}

static int64_t
fft_option_get(const kiln_context *ctx, const void *state, kiln_option option)
{
  const struct fft_state *st = state;
  return option == KILN_OPT_FFT_BACKEND ? st->backend : st->vkfft_binaries;
}

static const struct kiln__source fft_sources[] = {{"fft", KILN__DT_CLASSIC}, {NULL, 0}};

static const struct kiln__family_option fft_options[] = {
    {KILN_OPT_FFT_BACKEND, KILN_FFT_BACKEND_AUTO, KILN_FFT_BACKEND_VKFFT},
    {KILN_OPT_VKFFT_BINARY_CACHE, 0, 1},
};

const struct kiln__family kiln__fft_family = {
    .name = "fft",
    .sources = fft_sources,
    .tune = &kiln__fft_tune,
    .state_create = state_create,
    .state_destroy = state_destroy,
    .options = fft_options,
    .noptions = sizeof fft_options / sizeof fft_options[0],
    .option_set = fft_option_set,
    .option_get = fft_option_get,
};
