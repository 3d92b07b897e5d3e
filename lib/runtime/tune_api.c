/* The public autotuner API (include/kiln/tune.h) and the test hooks of runtime/tuner.h. */
#include "runtime/tune_internal.h"

#include <limits.h>
#include <math.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "core/file.h"
#include "core/log.h"
#include "kiln/profile.h"
#include "runtime/disk_cache.h"
#include "runtime/family.h"
#include "runtime/tune_file.h"

/* Tuning rounds of the coordinate search (it stops early when a round changes nothing). */
/* A candidate must beat the defaults by 5% to replace them: medians on a shared or
 * throttling device move by a few percent between runs, and flipping parameters on noise
 * would make results unstable from one tuning to the next. */
/* Largest bucket exponent; larger problems share the last bucket. */
/* Online tuning skips smaller problems: launch overhead dominates them, so any
 * parameters do, and each new work-group size would cost a compile on PoCL. */

/* ---------------------------------------------------------------- public API */

static char family_param_names[KILN__FAMILY_SLOTS][160];
static char family_list[160]; /* "elementwise, reduce, ..." for messages */
static pthread_once_t family_names_once = PTHREAD_ONCE_INIT;

/* The parameter lists are made from the table, so they cannot drift from it. */
static void
init_family_names(void)
{
  size_t lused = 0;
  for (int i = 0; i < kiln__tn_nfam() && lused < sizeof family_list; i++) {
    int w = snprintf(family_list + lused, sizeof family_list - lused, "%s%s", i ? ", " : "",
                     kiln__tn_fam_at(i)->name);
    lused += w > 0 ? (size_t)w : 0;
  }
  for (int i = 0; i < kiln__tn_nfam(); i++) {
    size_t used = 0;
    for (size_t p = 0; p < kiln__tn_fam_at(i)->nparams && used < sizeof family_param_names[i];
         p++) {
      int w = snprintf(family_param_names[i] + used, sizeof family_param_names[i] - used, "%s%s",
                       p ? " " : "", kiln__tn_fam_at(i)->params[p].name);
      used += w > 0 ? (size_t)w : 0;
    }
  }
}

kiln_status
kiln_tune_family_get(size_t index, kiln_tune_family_desc *out)
{
  static const char op[] = "kiln_tune_family_get";
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_RETURN_IF(index >= (size_t)kiln__tn_nfam(), KILN_ERR_NOT_FOUND, op,
                 "no family %zu (there are %d)", index, kiln__tn_nfam());
  pthread_once(&family_names_once, init_family_names);
  const struct kiln__tune_family *f = kiln__tn_fam_at(index);
  out->name = f->name;
  out->description = f->description;
  out->params = family_param_names[index];
  out->layouts = f->layout_names;
  return KILN_OK;
}

static kiln_status
family_arg(const char *op, const char *family, int *fam)
{
  KILN_RETURN_IF(!family, KILN_ERR_INVALID_ARGUMENT, op, "family is NULL");
  *fam = kiln__tn_find_family(family);
  KILN_RETURN_IF(*fam < 0, KILN_ERR_NOT_FOUND, op, "no tuned family \"%s\" (%s)", family,
                 (pthread_once(&family_names_once, init_family_names), family_list));
  return KILN_OK;
}

kiln_status
kiln_tune_family_supports(const char *family, kiln_dtype dtype, int *supported)
{
  static const char op[] = "kiln_tune_family_supports";
  int fam = -1;
  KILN_TRY(family_arg(op, family, &fam));
  KILN_RETURN_IF(!supported, KILN_ERR_INVALID_ARGUMENT, op, "supported is NULL");
  KILN_RETURN_IF(!kiln__dtype_valid(dtype), KILN_ERR_INVALID_ARGUMENT, op, "invalid dtype %d",
                 (int)dtype);
  *supported = kiln__tn_fam_at(fam)->dtype_ok(dtype) != 0;
  return KILN_OK;
}

static kiln_status
dtype_arg(const char *op, kiln_context *ctx, int fam, kiln_dtype dtype)
{
  KILN_RETURN_IF(!kiln__dtype_valid(dtype) || !kiln__tn_fam_at(fam)->dtype_ok(dtype) ||
                     !kiln__device_has_dtype(&ctx->info, dtype),
                 KILN_ERR_INVALID_ARGUMENT, op, "%s is not tuned for dtype %d on this device",
                 kiln__tn_fam_at(fam)->name, (int)dtype);
  return KILN_OK;
}

kiln_status
kiln_tune_bucket_name(const char *family, const char *layout, uint64_t elements, char *buf,
                      size_t len)
{
  static const char op[] = "kiln_tune_bucket_name";
  int fam = -1;
  KILN_TRY(family_arg(op, family, &fam));
  KILN_RETURN_IF(!layout || !buf || !elements, KILN_ERR_INVALID_ARGUMENT, op,
                 "NULL layout or buf, or 0 elements");
  int l = -1;
  for (int i = 0; i < KILN__LAYOUT_N; i++)
    if (strcmp(layout, kiln__tn_layout_names[i]) == 0 &&
        (kiln__tn_fam_at(fam)->layouts & (1u << i)))
      l = i;
  KILN_RETURN_IF(l < 0, KILN_ERR_NOT_FOUND, op, "%s has no layout \"%s\" (it has: %s)", family,
                 layout, kiln__tn_fam_at(fam)->layout_names);
  int k = kiln__tn_log2_floor(elements);
  KILN_RETURN_IF(k < kiln__tn_layout_min_k((enum kiln__tune_layout)l), KILN_ERR_INVALID_ARGUMENT,
                 op, "a %s problem has at least 4 elements", layout);
  char b[32];
  kiln__tn_bucket_text(l, k > MAX_LOG2 ? MAX_LOG2 : k, b, sizeof b);
  KILN_RETURN_IF(strlen(b) + 1 > len, KILN_ERR_INVALID_ARGUMENT, op,
                 "buffer of %zu bytes too small", len);
  memcpy(buf, b, strlen(b) + 1);
  return KILN_OK;
}

kiln_status
kiln_tune_params_get(kiln_context *ctx, const char *family, kiln_dtype dtype, const char *bucket,
                     char *buf, size_t len, kiln_tune_source *source)
{
  static const char op[] = "kiln_tune_params_get";
  KILN_TRY(kiln__ctx_check(op, ctx));
  int fam = -1, layout, k;
  KILN_TRY(family_arg(op, family, &fam));
  KILN_TRY(dtype_arg(op, ctx, fam, dtype));
  KILN_RETURN_IF(
      !buf || !bucket || kiln__tn_parse_bucket(kiln__tn_fam_at(fam), bucket, &layout, &k) != 0,
      KILN_ERR_INVALID_ARGUMENT, op, "bucket \"%s\" is not <layout>.2^<k> with a layout of %s (%s)",
      bucket ? bucket : "(null)", family, kiln__tn_fam_at(fam)->layout_names);
  pbuf p;
  /* A query: never starts online tuning, and leaves the key untried for it. */
  int src = kiln__tn_resolve(ctx, fam, dtype, layout, k, p.b, NULL);
  char text[256];
  kiln__tn_params_text(kiln__tn_fam_at(fam), p.b, text, sizeof text);
  KILN_RETURN_IF(strlen(text) + 1 > len, KILN_ERR_INVALID_ARGUMENT, op,
                 "buffer of %zu bytes too small (need %zu)", len, strlen(text) + 1);
  memcpy(buf, text, strlen(text) + 1);
  if (source)
    *source = (kiln_tune_source)src;
  return KILN_OK;
}

/* Parses "name=value ..." for f into mask and val; records a message naming the problem. */
static kiln_status
parse_params(const char *op, const struct kiln__tune_family *f, const char *text, uint32_t *mask,
             uint64_t *val)
{
  *mask = 0;
  const char *s = text;
  while (*s) {
    while (*s == ' ' || *s == '\t')
      s++;
    if (!*s)
      break;
    const char *end = s;
    while (*end && *end != ' ' && *end != '\t')
      end++;
    const char *eq = memchr(s, '=', (size_t)(end - s));
    KILN_RETURN_IF(!eq, KILN_ERR_INVALID_ARGUMENT, op, "\"%.*s\" is not name=value", (int)(end - s),
                   s);
    char name[KILN__TF_NAME_LEN];
    KILN_RETURN_IF((size_t)(eq - s) >= sizeof name, KILN_ERR_INVALID_ARGUMENT, op,
                   "parameter name \"%.*s\" too long", (int)(eq - s), s);
    memcpy(name, s, (size_t)(eq - s));
    name[eq - s] = 0;
    int p = kiln__tn_find_param(f, name);
    KILN_RETURN_IF(p < 0, KILN_ERR_INVALID_ARGUMENT, op, "%s has no parameter \"%s\" (it has: %s)",
                   f->name, name,
                   (pthread_once(&family_names_once, init_family_names),
                    family_param_names[kiln__tn_fam_index(f)]));
    KILN_RETURN_IF(*mask & (1u << p), KILN_ERR_INVALID_ARGUMENT, op, "%s given twice", name);
    uint64_t v = 0;
    const char *d = eq + 1;
    int digits = d < end, fits = 1;
    for (; d < end && digits; d++) {
      digits = *d >= '0' && *d <= '9';
      if (digits && fits && v > (UINT64_MAX - (uint64_t)(*d - '0')) / 10)
        fits = 0;
      if (digits && fits)
        v = v * 10 + (uint64_t)(*d - '0');
    }
    KILN_RETURN_IF(!digits, KILN_ERR_INVALID_ARGUMENT, op,
                   "%s=%.*s is not a whole number (%s takes %llu to %llu)", name,
                   (int)(end - eq - 1), eq + 1, name, (unsigned long long)f->params[p].min,
                   (unsigned long long)f->params[p].max);
    KILN_RETURN_IF(!fits || !kiln__tn_param_value_ok(&f->params[p], v), KILN_ERR_INVALID_ARGUMENT,
                   op,
                   "%s=%.*s is outside [%llu, %llu]%s", name, (int)(end - eq - 1), eq + 1,
                   (unsigned long long)f->params[p].min, (unsigned long long)f->params[p].max,
                   f->params[p].pow2 ? " or not a power of two" : "");
    *mask |= 1u << p;
    val[p] = v;
    s = end;
  }
  return KILN_OK;
}

kiln_status
kiln_tune_override(kiln_context *ctx, const char *family, kiln_dtype dtype, const char *bucket,
                   const char *params)
{
  static const char op[] = "kiln_tune_override";
  KILN_TRY(kiln__ctx_check(op, ctx));
  int fam = -1, layout = -1, k = -1;
  KILN_TRY(family_arg(op, family, &fam));
  KILN_TRY(dtype_arg(op, ctx, fam, dtype));
  KILN_RETURN_IF(bucket && kiln__tn_parse_bucket(kiln__tn_fam_at(fam), bucket, &layout, &k) != 0,
                 KILN_ERR_INVALID_ARGUMENT, op,
                 "bucket \"%s\" is not <layout>.2^<k> with a layout of %s (%s)", bucket, family,
                 kiln__tn_fam_at(fam)->layout_names);
  struct ovr o = {fam, dtype, layout, k, 0, {0}};
  if (params)
    KILN_TRY(parse_params(op, kiln__tn_fam_at(fam), params, &o.mask, o.val));
  struct kiln__tuner *t = ctx->tuner;
  KILN_RETURN_IF(!t, KILN_ERR_HOST_MEMORY, op, "the context has no tuner state");
  kiln_status s = KILN_OK;
  pthread_mutex_lock(&t->lock);
  size_t i = 0;
  while (i < t->novrs && !(t->ovrs[i].fam == fam && t->ovrs[i].dtype == dtype &&
                           t->ovrs[i].layout == layout && t->ovrs[i].k == k))
    i++;
  if (!o.mask) {
    if (i < t->novrs)
      t->ovrs[i] = t->ovrs[--t->novrs];
  } else {
    if (i == t->novrs && t->novrs == t->capovrs) {
      size_t ncap = t->capovrs ? t->capovrs * 2 : 8;
      struct ovr *n = realloc(t->ovrs, ncap * sizeof *n);
      if (n) {
        t->ovrs = n;
        t->capovrs = ncap;
      }
    }
    if (i < t->capovrs) {
      t->ovrs[i] = o;
      if (i == t->novrs)
        t->novrs++;
    } else {
      s = KILN_ERR_HOST_MEMORY;
    }
  }
  pthread_mutex_unlock(&t->lock);
  KILN_RETURN_IF(s != KILN_OK, s, op, "no memory for the override");
  return KILN_OK;
}

kiln_status
kiln_tune_run(kiln_context *ctx, const kiln_tune_request *req, kiln_tune_progress_fn fn, void *user)
{
  static const char op[] = "kiln_tune_run";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!req, KILN_ERR_INVALID_ARGUMENT, op, "req is NULL");
  KILN_RETURN_IF(!ctx->queue_profiling, KILN_ERR_UNSUPPORTED, op,
                 "the context's command queue was created without CL_QUEUE_PROFILING_ENABLE");
  KILN_RETURN_IF(req->reps < 0 || req->reps > 1000, KILN_ERR_INVALID_ARGUMENT, op,
                 "reps must be 1 to 1000 (or 0 for 5), got %d", req->reps);
  KILN_RETURN_IF(kiln__tn_profiling(ctx), KILN_ERR_INVALID_ARGUMENT, op,
                 "the context is being profiled (kiln_profile_begin); tuning would reset it");
  KILN_RETURN_IF(kiln__tn_tl.tuning, KILN_ERR_INVALID_ARGUMENT, op, "called from inside tuning");
  int only = -1;
  if (req->family) {
    KILN_TRY(family_arg(op, req->family, &only));
    KILN_RETURN_IF(!kiln__tn_family_available(kiln__tn_fam_at(only), ctx), KILN_ERR_UNSUPPORTED, op,
                   "%s has nothing to choose here: it needs %s", kiln__tn_fam_at(only)->name,
                   kiln__tn_fam_at(only)->needs);
  }
  kiln_dtype f32 = KILN_F32;
  const kiln_dtype *dts = req->dtypes ? req->dtypes : &f32;
  size_t ndt = req->dtypes ? req->ndtypes : 1;
  for (size_t i = 0; i < ndt; i++)
    KILN_RETURN_IF(!kiln__dtype_valid(dts[i]), KILN_ERR_INVALID_ARGUMENT, op, "invalid dtype %d",
                   (int)dts[i]);
  static const uint64_t default_sizes[] = {1u << 12, 1u << 16, 1u << 20, 1u << 24};
  if (req->sizes)
    for (size_t i = 0; i < req->nsizes; i++)
      KILN_RETURN_IF(!req->sizes[i], KILN_ERR_INVALID_ARGUMENT, op, "size %zu is 0", i);
  size_t max_sizes = req->sizes ? req->nsizes : N_(default_sizes);
  for (int fam = 0; fam < kiln__tn_nfam() && !req->sizes; fam++)
    if (kiln__tn_fam_at(fam)->nsizes > max_sizes)
      max_sizes = kiln__tn_fam_at(fam)->nsizes;
  unsigned want_layouts = ~0u;
  if (req->layouts) {
    want_layouts = 0;
    const char *s = req->layouts;
    while (*s) {
      while (*s == ' ' || *s == ',')
        s++;
      size_t n = strcspn(s, " ,");
      if (!n)
        break;
      int l = -1;
      for (int i = 0; i < KILN__LAYOUT_N; i++)
        if (strlen(kiln__tn_layout_names[i]) == n && strncmp(s, kiln__tn_layout_names[i], n) == 0)
          l = i;
      KILN_RETURN_IF(l < 0, KILN_ERR_NOT_FOUND, op,
                     "no layout \"%.*s\" (flat, full, row, col, points, mnk)", (int)n, s);
      want_layouts |= 1u << l;
      s += n;
    }
  }

  /* The keys, in family, dtype, size, layout order, without repeats. */
  uint32_t *keys =
      calloc((size_t)kiln__tn_nfam() * ndt * max_sizes * KILN__LAYOUT_N + 1, sizeof *keys);
  KILN_RETURN_IF(!keys, KILN_ERR_HOST_MEMORY, op, "out of memory");
  size_t nkeys = 0;
  for (int fam = 0; fam < kiln__tn_nfam(); fam++) {
    const char *part_of = kiln__tn_fam_at(fam)->part_of;
    int wanted =
        only < 0 || fam == only || (part_of && strcmp(part_of, kiln__tn_fam_at(only)->name) == 0);
    if (!wanted || !kiln__tn_family_available(kiln__tn_fam_at(fam), ctx))
      continue;
    const uint64_t *sizes = req->sizes                    ? req->sizes
                            : kiln__tn_fam_at(fam)->sizes ? kiln__tn_fam_at(fam)->sizes
                                                          : default_sizes;
    size_t nsizes = req->sizes                    ? req->nsizes
                    : kiln__tn_fam_at(fam)->sizes ? kiln__tn_fam_at(fam)->nsizes
                                                  : N_(default_sizes);
    for (size_t d = 0; d < ndt; d++) {
      if (!kiln__tn_fam_at(fam)->dtype_ok(dts[d]) || !kiln__device_has_dtype(&ctx->info, dts[d]))
        continue;
      for (size_t si = 0; si < nsizes; si++) {
        int k = kiln__tn_log2_floor(sizes[si]);
        for (int l = 0; l < KILN__LAYOUT_N; l++) {
          if (!(kiln__tn_fam_at(fam)->layouts & want_layouts & (1u << l)) ||
              k < kiln__tn_layout_min_k((enum kiln__tune_layout)l) || k > MAX_LOG2)
            continue;
          uint32_t key = kiln__tn_pack_key(fam, dts[d], l, k);
          size_t j = 0;
          while (j < nkeys && keys[j] != key)
            j++;
          if (j == nkeys)
            keys[nkeys++] = key;
        }
      }
    }
  }
  if (ctx->tuner)
    kiln__tn_ensure_loaded(ctx, ctx->tuner);
  kiln__error_saved saved;
  kiln__error_save(&saved);
  struct tune_opts o = {
      req->quick != 0, req->reps ? req->reps : 5, !req->no_store, fn, user, 0, nkeys, 0};
  kiln_status first_store_failure = KILN_OK;
  char store_msg[2048] = "";
  int profiled = 0;
  for (size_t i = 0; i < nkeys && !o.stop; i++) {
    o.key_index = i;
    kiln_tune_result res;
    /* Each key holds the context while it is tuned; other threads' ops run between keys. */
    if (!kiln__tn_tune_hold(ctx)) {
      profiled = 1;
      break;
    }
    kiln_status s =
        kiln__tn_tune_key(ctx, (int)(keys[i] >> 24), (kiln_dtype)((keys[i] >> 16) & 0xff),
                          (int)((keys[i] >> 8) & 0xff), (int)(keys[i] & 0xff), &o, &res);
    kiln__tn_tune_release(ctx);
    if (s == KILN_ERR_IO && first_store_failure == KILN_OK) {
      first_store_failure = s;
      snprintf(store_msg, sizeof store_msg, "%s", kiln_last_error());
    }
  }
  free(keys);
  kiln__error_restore(&saved);
  if (profiled)
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                      "another thread started profiling the context (kiln_profile_begin); "
                      "tuning stopped before the next key");
  if (first_store_failure != KILN_OK)
    return kiln__fail(first_store_failure, op, 0, "%s", store_msg);
  return KILN_OK;
}

/* The stored tables ctx uses: its exact file, then the other driver's keys it lacks. */
static kiln_status
effective_table(kiln_context *ctx, struct kiln__tf_table *out, char *exact_path, char *other_path,
                size_t len)
{
  struct kiln__tuner *t = ctx->tuner;
  kiln__tf_init(out);
  exact_path[0] = other_path[0] = 0;
  if (!t)
    return KILN_OK;
  atomic_store(&t->loaded, 0); /* see files written by other processes since */
  kiln__tn_ensure_loaded(ctx, t);
  char dir[4096], exact[256], other[256];
  pthread_mutex_lock(&t->lock);
  snprintf(dir, sizeof dir, "%s", t->dir);
  snprintf(exact, sizeof exact, "%s", t->exact_name);
  snprintf(other, sizeof other, "%s", t->other_name);
  snprintf(out->device, sizeof out->device, "%s", t->dev_raw);
  snprintf(out->driver, sizeof out->driver, "%s", t->drv_raw);
  pthread_mutex_unlock(&t->lock);
  if (!dir[0])
    return KILN_OK;
  const char *why = "";
  char tdir[4200];
  if (kiln__tf_dir(dir, 0, tdir, sizeof tdir, &why) != 0)
    return KILN_OK;
  snprintf(exact_path, len, "%s/%s", tdir, exact);
  if (other[0])
    snprintf(other_path, len, "%s/%s", tdir, other);
  struct kiln__tf_table tab;
  for (int pass = 0; pass < 2; pass++) {
    const char *p = pass ? other_path : exact_path;
    if (!p[0] || kiln__tf_read(p, &tab, &why) != 0)
      continue;
    for (size_t i = 0; i < tab.n; i++) {
      int have = 0;
      for (size_t j = 0; pass && j < out->n && !have; j++)
        have = kiln__tf_same_key(&out->e[j], &tab.e[i]);
      /* Another driver's failures say nothing about this one. */
      if (!have && !(pass && tab.e[i].failed[0]) && kiln__tf_put(out, &tab.e[i]) != 0) {
        kiln__tf_free(&tab);
        kiln__tf_free(out);
        return kiln__fail(KILN_ERR_HOST_MEMORY, "kiln_tune", 0, "out of memory");
      }
    }
    kiln__tf_free(&tab);
  }
  return KILN_OK;
}

kiln_status
kiln_tune_list(kiln_context *ctx, kiln_tune_entry_fn fn, void *user)
{
  static const char op[] = "kiln_tune_list";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!fn, KILN_ERR_INVALID_ARGUMENT, op, "fn is NULL");
  struct kiln__tf_table tab;
  char exact[4600], other[4600];
  KILN_TRY(effective_table(ctx, &tab, exact, other, sizeof exact));
  struct kiln__tuner *t = ctx->tuner;
  char odev[96] = "", odrv[96] = "";
  if (other[0] && t) {
    const char *b = strrchr(other, '/') + 1, *sep = strstr(b, "--");
    snprintf(odev, sizeof odev, "%.*s", (int)(sep - b), b);
    snprintf(odrv, sizeof odrv, "%.*s", (int)(strlen(sep + 2) - 4), sep + 2);
  }
  /* Entries from the other driver's file are those its exact file lacks. */
  struct kiln__tf_table ex;
  const char *why = "";
  int have_exact = exact[0] && kiln__tf_read(exact, &ex, &why) == 0;
  for (size_t i = 0; i < tab.n; i++) {
    int from_exact = 0;
    for (size_t j = 0; have_exact && j < ex.n && !from_exact; j++)
      from_exact = kiln__tf_same_key(&ex.e[j], &tab.e[i]);
    char params[1024];
    kiln__tf_format_params(&tab.e[i], params, sizeof params);
    kiln_tune_entry e = {from_exact ? exact : other,
                         from_exact ? t->dev : odev,
                         from_exact ? t->drv : odrv,
                         tab.e[i].family,
                         tab.e[i].dtype,
                         tab.e[i].bucket,
                         params,
                         tab.e[i].time_ns,
                         tab.e[i].default_ns,
                         tab.e[i].failed};
    if (fn(&e, user))
      break;
  }
  if (have_exact)
    kiln__tf_free(&ex);
  kiln__tf_free(&tab);
  return KILN_OK;
}

kiln_status
kiln_tune_export(kiln_context *ctx, const char *path)
{
  static const char op[] = "kiln_tune_export";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!path, KILN_ERR_INVALID_ARGUMENT, op, "path is NULL");
  /* The file is replaced by a rename: a device, FIFO or directory at path is refused, as
   * kiln_tune_import refuses one; a link to a file stays a link. */
  char target[PATH_MAX];
  const char *why = "";
  const char *dest = kiln__replace_target(path, target, sizeof target, &why);
  KILN_RETURN_IF(!dest, KILN_ERR_IO, op,
                 "%s: %s; the tuning file is written next to it and renamed into place", path,
                 why);
  path = dest;
  struct kiln__tf_table tab;
  char exact[4600], other[4600];
  KILN_TRY(effective_table(ctx, &tab, exact, other, sizeof exact));
  int err = kiln__tf_write(path, &tab);
  kiln__tf_free(&tab);
  KILN_RETURN_IF(err, KILN_ERR_IO, op, "cannot write %s: %s", path, strerror(err));
  return KILN_OK;
}

kiln_status
kiln_tune_import(kiln_context *ctx, const char *path, unsigned flags, size_t *imported)
{
  static const char op[] = "kiln_tune_import";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!path, KILN_ERR_INVALID_ARGUMENT, op, "path is NULL");
  KILN_RETURN_IF(flags & ~KILN_TUNE_IMPORT_ANY_DEVICE, KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown flags 0x%x", flags & ~KILN_TUNE_IMPORT_ANY_DEVICE);
  struct kiln__tuner *t = ctx->tuner;
  KILN_RETURN_IF(!t, KILN_ERR_HOST_MEMORY, op, "the context has no tuner state");
  if (imported)
    *imported = 0;
  struct kiln__tf_table in;
  const char *why = "";
  int r = kiln__tf_read_named(path, &in, &why);
  KILN_RETURN_IF(r == 1, KILN_ERR_IO, op, "%s does not exist", path);
  if (r < 0 && strstr(why, "version 1"))
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "%s: %s", path, why);
  KILN_RETURN_IF(r < 0, KILN_ERR_IO, op, "%s: %s", path, why);
  char dev[96];
  kiln__tf_normalize(in.device, 1, dev, sizeof dev);
  if (!(flags & KILN_TUNE_IMPORT_ANY_DEVICE) && strcmp(dev, t->dev) != 0) {
    kiln__tf_free(&in);
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                      "%s is for device \"%s\", this context's is \"%s\" (pass "
                      "KILN_TUNE_IMPORT_ANY_DEVICE to take it anyway)",
                      path, dev, t->dev);
  }
  kiln__tn_ensure_loaded(ctx, t);
  struct kiln__tf_table up;
  kiln__tf_init(&up);
  snprintf(up.device, sizeof up.device, "%s", t->dev_raw);
  snprintf(up.driver, sizeof up.driver, "%s", t->drv_raw);
  size_t taken = 0, bad = 0;
  kiln_status s = KILN_OK;
  pthread_mutex_lock(&t->lock);
  for (size_t i = 0; i < in.n && s == KILN_OK; i++) {
    uint32_t key, mask;
    uint64_t val[KILN__TF_MAX_PARAMS] = {0};
    if (kiln__tn_entry_key(&in.e[i], &key, &mask, val) != 0) {
      bad++;
      continue;
    }
    if (kiln__tf_put(&up, &in.e[i]) != 0) {
      s = KILN_ERR_HOST_MEMORY;
      break;
    }
    if (in.e[i].failed[0])
      kiln__tf_put(&t->fails, &in.e[i]);
    else
      kiln__tn_rec_put(t, key, KILN_TUNE_SOURCE_STORED, mask, val);
    taken++;
  }
  char dir[4096], name[256];
  snprintf(dir, sizeof dir, "%s", t->dir);
  snprintf(name, sizeof name, "%s", t->exact_name);
  pthread_mutex_unlock(&t->lock);
  kiln__tf_free(&in);
  if (s != KILN_OK) {
    kiln__tf_free(&up);
    return kiln__fail(s, op, 0, "out of memory");
  }
  if (bad)
    kiln__log(KILN__LOG_INFO,
              "%s: %zu entries with unknown families, dtypes, buckets or "
              "parameters skipped",
              path, bad);
  if (imported)
    *imported = taken;
  char tdir[4200], fpath[4600];
  int err = 0;
  if (!dir[0]) {
    why = "no cache directory";
    err = -1;
  } else if (kiln__tf_dir(dir, 1, tdir, sizeof tdir, &why) != 0) {
    err = -1;
  } else {
    snprintf(fpath, sizeof fpath, "%s/%s", tdir, name);
    err = up.n ? kiln__tf_merge(fpath, &up) : 0;
    why = err ? strerror(err) : "";
  }
  kiln__tf_free(&up);
  KILN_RETURN_IF(err, KILN_ERR_IO, op, "imported entries are used but not stored: %s", why);
  return KILN_OK;
}

/* ---------------------------------------------------------------- test hooks */

void
kiln__tune_set_identity(kiln_context *ctx, const char *device, const char *driver)
{
  struct kiln__tuner *t = ctx->tuner;
  if (!t)
    return;
  pthread_mutex_lock(&t->lock);
  kiln__tn_set_identity(t, device ? device : ctx->info.name,
                        driver ? driver : ctx->info.driver_version);
  t->ntried = 0;
  pthread_mutex_unlock(&t->lock);
  atomic_store(&t->loaded, 0);
}

void
kiln__tune_test_sabotage(const char *family, const char *param, uint64_t value, int corrupt)
{
  memset(&kiln__tn_sabotage, 0, sizeof kiln__tn_sabotage);
  int fam = kiln__tn_find_family(family);
  if (fam < 0)
    return;
  int p = kiln__tn_find_param(kiln__tn_fam_at(fam), param);
  if (p < 0)
    return;
  kiln__tn_sabotage.fam = fam;
  kiln__tn_sabotage.param = p;
  kiln__tn_sabotage.value = value;
  kiln__tn_sabotage.corrupt = corrupt;
  kiln__tn_sabotage.transient_left = corrupt == 3;
  kiln__tn_sabotage.active = 1;
}

uint64_t
kiln__tune_test_evaluations(void)
{
  return atomic_load(&kiln__tn_evaluations);
}
