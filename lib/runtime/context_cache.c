/* A context's disk cache: opening it from the environment, options, statistics, warm-up. */
#include <stdio.h>
#include <string.h>

#include "core/env.h"
#include "core/error.h"
#include "runtime/build.h"
#include "runtime/store_bg.h"
#include "runtime/family.h"
#include "runtime/tuner.h"

void
kiln__ctx_cache_open(kiln_context *ctx)
{
  ctx->cache = kiln__dc_open_degrading(NULL, kiln__dc_env_mode(), kiln__dc_env_max_bytes());
  kiln__dc_set_store_policy(ctx->cache, kiln__dc_env_store_policy());
  /* KILN_DEBUG_ONE_KERNEL: 0 never; otherwise on PoCL only. The one-kernel text selects its
   * kernel with variadic macros, which PoCL's clang takes and OpenCL C 1.2 compilers such as
   * NVIDIA's refuse, so no setting turns it on elsewhere. */
  const char *v = kiln__env(KILN__ENV_DEBUG_ONE_KERNEL);
  ctx->one_kernel = (!v || !*v || strcmp(v, "0") != 0) && kiln__is_pocl(&ctx->info);
  /* KILN_DEBUG_STORE_BG: the same, for storing binaries in the background. */
  v = kiln__env(KILN__ENV_DEBUG_STORE_BG);
  ctx->store_bg = v && *v ? strcmp(v, "0") != 0 : kiln__is_pocl(&ctx->info);
}

void
kiln__ctx_cache_close(kiln_context *ctx)
{
  kiln__storer_destroy(ctx);
  kiln_cache_close(ctx->cache);
  ctx->cache = NULL;
}

/* Reopens the cache with dir (keep_dir: the current one) and mode; never leaves it worse than NULL.
 */
static kiln_status
reopen(const char *op, kiln_context *ctx, const char *dir, int keep_dir, kiln_cache_mode mode)
{
  /* Queued stores hold the current cache handle: they finish before it is replaced. */
  kiln__storer_destroy(ctx);
  if (!ctx->cache) {
    ctx->cache = kiln__dc_open_degrading(keep_dir ? NULL : dir, mode, kiln__dc_env_max_bytes());
    kiln__dc_set_store_policy(ctx->cache, kiln__dc_env_store_policy());
  } else {
    kiln_cache *old = ctx->cache;
    ctx->cache = NULL;
    ctx->cache = kiln__dc_reopen(old, dir, keep_dir, mode);
  }
  KILN_RETURN_IF(!ctx->cache, KILN_ERR_HOST_MEMORY, op,
                 "cannot reopen the kernel cache; continuing without it");
  return KILN_OK;
}

kiln_status
kiln__ctx_cache_set_option(kiln_context *ctx, kiln_option option, int64_t value)
{
  static const char op[] = "kiln_context_set_option";
  if (option == KILN_OPT_CACHE_MODE)
    return reopen(op, ctx, NULL, 1, (kiln_cache_mode)value);
  if (option == KILN_OPT_CACHE_STORE)
    kiln__dc_set_store_policy(ctx->cache, (kiln_cache_store_policy)value);
  else if (ctx->cache)
    kiln_cache_set_max_bytes(ctx->cache, (uint64_t)value);
  return KILN_OK;
}

kiln_status
kiln__ctx_cache_get_option(const kiln_context *ctx, kiln_option option, int64_t *value)
{
  if (option == KILN_OPT_CACHE_MODE)
    *value = kiln__dc_mode(ctx->cache);
  else if (option == KILN_OPT_CACHE_STORE)
    *value = kiln__dc_store_policy(ctx->cache);
  else
    *value = (int64_t)kiln__dc_max_bytes(ctx->cache);
  return KILN_OK;
}

kiln_status
kiln_context_cache_stats(kiln_context *ctx, kiln_cache_stats *out)
{
  static const char op[] = "kiln_context_cache_stats";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  kiln__ctx_lock(ctx);
  /* Counts stores queued before this call (the storer never takes the context lock). */
  kiln__storer_drain(ctx);
  if (ctx->cache) {
    kiln_cache_stats_get(ctx->cache, out);
  } else {
    memset(out, 0, sizeof *out);
    snprintf(out->reason, sizeof out->reason, "the cache could not be opened (out of memory)");
  }
  struct kiln__dc_ident id;
  const char *why;
  /* The directory may be fine and the device still unfit: report what applies to this context. */
  if (out->mode != KILN_CACHE_OFF && !kiln__cache_identity(&ctx->info, &id, &why)) {
    out->mode = KILN_CACHE_OFF;
    snprintf(out->reason, sizeof out->reason, "%s", why);
  }
  kiln__ctx_unlock(ctx);
  return KILN_OK;
}

kiln_status
kiln_context_set_cache_dir(kiln_context *ctx, const char *dir)
{
  static const char op[] = "kiln_context_set_cache_dir";
  KILN_TRY(kiln__ctx_check(op, ctx));
  kiln__ctx_lock(ctx);
  kiln_cache_mode mode = ctx->cache ? kiln__dc_requested_mode(ctx->cache) : kiln__dc_env_mode();
  kiln_status s = reopen(op, ctx, dir, 0, mode);
  /* Tuning files live under the cache directory: follow it. */
  kiln__tuner_dir_changed(ctx);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_context_cache_warm(kiln_context *ctx, kiln_cache_warm_fn progress, void *user,
                        kiln_cache_warm_result *out)
{
  static const char op[] = "kiln_context_cache_warm";
  KILN_TRY(kiln__ctx_check(op, ctx));
  kiln_cache_warm_result res = {0};
  /* Every family's sources, sorted by name (the order progress reports them in). */
  const char *sources[64];
  unsigned source_dtypes[64];
  size_t nsources = 0;
  for (size_t f = 0; kiln__families[f]; f++)
    for (const struct kiln__source *src = kiln__families[f]->sources;
         src && src->name && nsources < 64; src++) {
      size_t j = nsources++;
      for (; j > 0 && strcmp(sources[j - 1], src->name) > 0; j--) {
        sources[j] = sources[j - 1];
        source_dtypes[j] = source_dtypes[j - 1];
      }
      sources[j] = src->name;
      source_dtypes[j] = src->dtypes;
    }
  for (size_t i = 0; i < nsources; i++)
    for (int d = 0; d < KILN_DTYPE_COUNT; d++)
      res.variants +=
          kiln__device_has_dtype(&ctx->info, (kiln_dtype)d) && (source_dtypes[i] & KILN__DT_BIT(d));
  kiln_status first_failure = KILN_OK;
  char failed_variant[256] = "";
  int stop = 0;
  for (size_t i = 0; i < nsources && !stop; i++) {
    const char *source = sources[i];
    for (int d = 0; d < KILN_DTYPE_COUNT && !stop; d++) {
      if (!kiln__device_has_dtype(&ctx->info, (kiln_dtype)d) ||
          !(source_dtypes[i] & KILN__DT_BIT(d)))
        continue;
      char options[192];
      const struct kiln__family *fam = kiln__family_of_source(source, NULL);
      const void *variant =
          fam && fam->default_variant ? fam->default_variant(ctx, source, (kiln_dtype)d) : NULL;
      kiln__program_options(&ctx->info, source, (kiln_dtype)d, variant, options, sizeof options);
      struct kiln__build_outcome oc;
      kiln__ctx_lock(ctx);
      kiln_status s = kiln__program_warm_locked(op, ctx, source, options, &oc);
      kiln__ctx_unlock(ctx);
      res.done++;
      if (s == KILN_OK) {
        res.cached += oc.from_cache;
        res.built += oc.compiled;
        res.stored += oc.stored;
      } else if (s == KILN_ERR_BUILD) {
        /* One variant that does not compile must not keep the others out of the cache. */
        if (first_failure == KILN_OK) {
          first_failure = s;
          snprintf(failed_variant, sizeof failed_variant, "%s with \"%s\"", source, options);
        }
        res.failed++;
      } else {
        if (out)
          *out = res;
        return s;
      }
      if (progress && progress(res.done, res.variants, source, options, s, user))
        stop = 1;
    }
  }
  if (out)
    *out = res;
  if (first_failure != KILN_OK)
    return kiln__fail(first_failure, op, 0, "%zu of %zu variants failed to build, first %s",
                      res.failed, res.done, failed_variant);
  return KILN_OK;
}
