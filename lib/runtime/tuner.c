/*
 * The autotuner (see tuner.h and include/kiln/tune.h): the family table,
 * lookups for the ops, tuning, and the per-context state.
 */
#include "runtime/tune_internal.h"


#include <math.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/env.h"
#include "kiln_config.h"
#include "core/dtype_traits.h"
#include "core/error.h"
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

/* ---------------------------------------------------------------- the family table */

/* The tuned families: those of kiln__families with a tune description, in table order. */
const struct kiln__tune_family *kiln__tn_tuned[KILN__FAMILY_SLOTS];

static int ntuned;

static pthread_once_t tuned_once = PTHREAD_ONCE_INIT;

static void
tuned_collect(void)
{
  for (size_t i = 0; kiln__families[i] && ntuned < KILN__FAMILY_SLOTS; i++)
    if (kiln__families[i]->tune)
      kiln__tn_tuned[ntuned++] = kiln__families[i]->tune;
}

int
kiln__tn_nfam(void)
{
  pthread_once(&tuned_once, tuned_collect);
  return ntuned;
}

const struct kiln__tune_family *
kiln__tn_fam_at(int i)
{
  pthread_once(&tuned_once, tuned_collect);
  return kiln__tn_tuned[i];
}

int
kiln__tn_param_value_ok(const struct kiln__tune_param *p, uint64_t v)
{
  return v >= p->min && v <= p->max && (!p->pow2 || (v & (v - 1)) == 0);
}

int
kiln__tn_fam_index(const struct kiln__tune_family *f)
{
  for (int i = 0; i < kiln__tn_nfam(); i++)
    if (kiln__tn_tuned[i] == f)
      return i;
  return -1;
}

const char *const kiln__tn_layout_names[KILN__LAYOUT_N] = {"flat", "full",   "row",
                                                         "col",  "points", "mnk"};

/* Whether f has a choice to make on ctx (online tuning and kiln_tune_run skip it otherwise). */
int
kiln__tn_family_available(const struct kiln__tune_family *f, const kiln_context *ctx)
{
  return !f->available || f->available(ctx);
}

/* Smallest bucket exponent of a layout: rows and columns need at least 2 x 2 elements. */
int
kiln__tn_layout_min_k(enum kiln__tune_layout l)
{
  return l == KILN__LAYOUT_ROW || l == KILN__LAYOUT_COL ? 2 : 0;
}

uint64_t
kiln__tn_pget(const struct kiln__tune_param *p, const void *s)
{
  if (p->size == 8) {
    uint64_t v;
    memcpy(&v, (const char *)s + p->offset, 8);
    return v;
  }
  uint32_t v;
  memcpy(&v, (const char *)s + p->offset, 4);
  return v;
}

void
kiln__tn_pset(const struct kiln__tune_param *p, void *s, uint64_t v)
{
  if (p->size == 8) {
    memcpy((char *)s + p->offset, &v, 8);
  } else {
    uint32_t w = (uint32_t)v;
    memcpy((char *)s + p->offset, &w, 4);
  }
}

int
kiln__tn_find_family(const char *name)
{
  for (int i = 0; i < kiln__tn_nfam(); i++)
    if (name && strcmp(kiln__tn_fam_at(i)->name, name) == 0)
      return i;
  return -1;
}

int
kiln__tn_find_param(const struct kiln__tune_family *f, const char *name)
{
  for (size_t i = 0; i < f->nparams; i++)
    if (strcmp(f->params[i].name, name) == 0)
      return (int)i;
  return -1;
}

int
kiln__tn_log2_floor(uint64_t v)
{
  int k = 0;
  while (v > 1) {
    v >>= 1;
    k++;
  }
  return k;
}

/* "<layout>.2^<k>" into layout and k; 0, or -1 when malformed or not one of f's layouts. */
int
kiln__tn_parse_bucket(const struct kiln__tune_family *f, const char *s, int *layout, int *k)
{
  const char *dot = s ? strchr(s, '.') : NULL;
  if (!dot || strncmp(dot + 1, "2^", 2) != 0)
    return -1;
  int l = -1;
  for (int i = 0; i < KILN__LAYOUT_N; i++)
    if ((size_t)(dot - s) == strlen(kiln__tn_layout_names[i]) && strncmp(s, kiln__tn_layout_names[i], (size_t)(dot - s)) == 0)
      l = i;
  if (l < 0 || !(f->layouts & (1u << l)))
    return -1;
  const char *d = dot + 3;
  if (!*d || strlen(d) > 2)
    return -1;
  int v = 0;
  for (; *d; d++) {
    if (*d < '0' || *d > '9')
      return -1;
    v = v * 10 + (*d - '0');
  }
  if (v > MAX_LOG2 || v < kiln__tn_layout_min_k((enum kiln__tune_layout)l))
    return -1;
  *layout = l;
  *k = v;
  return 0;
}

void
kiln__tn_bucket_text(int layout, int k, char *buf, size_t len)
{
  snprintf(buf, len, "%s.2^%d", kiln__tn_layout_names[layout], k);
}

/* "name=value ..." of every parameter of f in params. */
void
kiln__tn_params_text(const struct kiln__tune_family *f, const void *params, char *buf, size_t len)
{
  size_t used = 0;
  buf[0] = 0;
  for (size_t i = 0; i < f->nparams && used < len; i++) {
    int w = snprintf(buf + used, len - used, "%s%s=%llu", i ? " " : "", f->params[i].name,
                     (unsigned long long)kiln__tn_pget(&f->params[i], params));
    if (w < 0)
      break;
    used += (size_t)w;
  }
}

/* ---------------------------------------------------------------- per-context state */

uint32_t
kiln__tn_pack_key(int fam, kiln_dtype dtype, int layout, int k)
{
  return ((uint32_t)fam << 24) | ((uint32_t)dtype << 16) | ((uint32_t)layout << 8) | (uint32_t)k;
}

/* Lookups that tuning itself makes on this thread: candidates are forced, nothing recurses. */
_Thread_local struct forced kiln__tn_tl = {NULL, -1, {{0}}, 0};

struct sabotage_hook kiln__tn_sabotage;

atomic_uint_fast64_t kiln__tn_evaluations;

static int
mode_from_env(void)
{
  const char *v = kiln__env(KILN__ENV_TUNE);
  if (!v || !*v)
    return KILN_TUNE_CACHED;
  static const char *const names[] = {"off", "cached", "online"};
  for (int i = 0; i < 3; i++)
    if (strcasecmp(v, names[i]) == 0)
      return i;
  kiln__log(KILN__LOG_WARN, "KILN_TUNE=%s is not off, cached or online; using cached", v);
  return KILN_TUNE_CACHED;
}

void
kiln__tn_set_identity(struct kiln__tuner *t, const char *device, const char *driver)
{
  snprintf(t->dev_raw, sizeof t->dev_raw, "%s", device);
  snprintf(t->drv_raw, sizeof t->drv_raw, "%s", driver);
  kiln__tf_normalize(device, 1, t->dev, sizeof t->dev);
  kiln__tf_normalize(driver, 0, t->drv, sizeof t->drv);
  kiln__tf_file_name(t->dev, t->drv, t->exact_name, sizeof t->exact_name);
}

void
kiln__tuner_create(kiln_context *ctx)
{
  struct kiln__tuner *t = calloc(1, sizeof *t);
  if (!t) {
    kiln__log(KILN__LOG_WARN, "out of memory for the tuner state; using built-in defaults");
    return;
  }
  pthread_mutex_init(&t->lock, NULL);
  atomic_init(&t->mode, mode_from_env());
  atomic_init(&t->loaded, 0);
  kiln__tf_init(&t->fails);
  kiln__tn_set_identity(t, ctx->info.name, ctx->info.driver_version);
  ctx->tuner = t;
}

void
kiln__tuner_destroy(kiln_context *ctx)
{
  struct kiln__tuner *t = ctx->tuner;
  if (!t)
    return;
  pthread_mutex_destroy(&t->lock);
  free(t->recs);
  kiln__tf_free(&t->fails);
  free(t->ovrs);
  free(t->tried);
  free(t);
  ctx->tuner = NULL;
}

int64_t
kiln__tuner_mode(const kiln_context *ctx)
{
  return ctx->tuner ? atomic_load(&ctx->tuner->mode) : KILN_TUNE_OFF;
}

void
kiln__tuner_set_mode(kiln_context *ctx, int64_t mode)
{
  if (ctx->tuner)
    atomic_store(&ctx->tuner->mode, (int)mode);
}

void
kiln__tuner_dir_changed(kiln_context *ctx)
{
  if (ctx->tuner)
    atomic_store(&ctx->tuner->loaded, 0);
}

/* Converts a file entry for f into parameter values; 0, or -1 (names or ranges wrong). */
static int
entry_values(const struct kiln__tune_family *f, const struct kiln__tf_entry *e, uint32_t *mask,
             uint64_t *val)
{
  *mask = 0;
  for (uint32_t i = 0; i < e->nparams; i++) {
    int p = kiln__tn_find_param(f, e->pname[i]);
    if (p < 0 || !kiln__tn_param_value_ok(&f->params[p], e->pval[i]))
      return -1;
    *mask |= 1u << p;
    val[p] = e->pval[i];
  }
  return 0;
}

/* The key of a file entry, or -1 (unknown family, dtype, bucket; bad parameters). */
int
kiln__tn_entry_key(const struct kiln__tf_entry *e, uint32_t *key, uint32_t *mask, uint64_t *val)
{
  int fam = kiln__tn_find_family(e->family);
  kiln_dtype dt;
  int layout, k;
  if (fam < 0 || kiln_dtype_from_name(e->dtype, &dt) != KILN_OK ||
      !kiln__tn_fam_at(fam)->dtype_ok(dt) || kiln__tn_parse_bucket(kiln__tn_fam_at(fam), e->bucket, &layout, &k) != 0 ||
      entry_values(kiln__tn_fam_at(fam), e, mask, val) != 0)
    return -1;
  *key = kiln__tn_pack_key(fam, dt, layout, k);
  return 0;
}

static struct rec *
rec_find(struct kiln__tuner *t, uint32_t key)
{
  for (size_t i = 0; i < t->nrecs; i++)
    if (t->recs[i].key == key)
      return &t->recs[i];
  return NULL;
}

/* Adds or replaces the record of key (t->lock held). */
void
kiln__tn_rec_put(struct kiln__tuner *t, uint32_t key, int source, uint32_t mask, const uint64_t *val)
{
  struct rec *r = rec_find(t, key);
  if (!r) {
    if (t->nrecs == t->caprecs) {
      size_t ncap = t->caprecs ? t->caprecs * 2 : 32;
      struct rec *n = realloc(t->recs, ncap * sizeof *n);
      if (!n)
        return; /* the key keeps its defaults */
      t->recs = n;
      t->caprecs = ncap;
    }
    r = &t->recs[t->nrecs++];
  }
  r->key = key;
  r->source = source;
  r->mask = mask;
  memcpy(r->val, val, sizeof r->val);
}

/* Takes the usable entries of a table as records of source (t->lock held). */
static void
take_table(struct kiln__tuner *t, const struct kiln__tf_table *tab, int source, const char *path)
{
  size_t bad = 0;
  for (size_t i = 0; i < tab->n; i++) {
    const struct kiln__tf_entry *e = &tab->e[i];
    uint32_t key, mask;
    uint64_t val[KILN__TF_MAX_PARAMS] = {0};
    if (kiln__tn_entry_key(e, &key, &mask, val) != 0) {
      bad++;
      continue;
    }
    if (e->failed[0]) {
      if (source == KILN_TUNE_SOURCE_STORED)
        kiln__tf_put(&t->fails, e);
    } else if (source == KILN_TUNE_SOURCE_STORED || !rec_find(t, key)) {
      kiln__tn_rec_put(t, key, source, mask, val);
    }
  }
  if (bad || tab->skipped)
    kiln__log(KILN__LOG_DEBUG, "tuning file %s: %zu malformed lines and %zu unusable entries skipped",
              path, tab->skipped, bad);
}

/* The context's cache directory (takes ctx->lock briefly); "" when there is none. */
static void
cache_dir_of(kiln_context *ctx, char *out, size_t len)
{
  kiln__ctx_lock(ctx);
  const char *d = ctx->cache ? kiln__dc_dir(ctx->cache) : NULL;
  if (!d || snprintf(out, len, "%s", d) >= (int)len)
    out[0] = 0;
  kiln__ctx_unlock(ctx);
}

/*
 * The tuning file installed with kiln for this device (data/tuning/<device>.txt, matched by
 * the normalised device name whatever its driver line says): it fills only keys the local
 * files leave open, so a result tuned here always wins (t->lock held).
 */
static void
load_packaged(struct kiln__tuner *t)
{
  const char *dir = kiln__env(KILN__ENV_TEST_TUNING_DATA);
  if (!dir)
    dir = KILN_TUNING_DATA_DIR;
  if (!dir[0])
    return;
  char path[4400];
  if (snprintf(path, sizeof path, "%s/%s.txt", dir, t->dev) >= (int)sizeof path)
    return;
  struct kiln__tf_table tab;
  const char *why = "";
  int got = kiln__tf_read(path, &tab, &why);
  if (got == 0) {
    take_table(t, &tab, KILN_TUNE_SOURCE_PACKAGED, path);
    kiln__tf_free(&tab);
  } else if (got < 0) {
    kiln__log(KILN__LOG_WARN, "packaged tuning file %s: %s; ignored", path, why);
  }
}

static void load_local(struct kiln__tuner *t, const char *dir);

/* Reads the exact, other-driver and packaged files for dir (t->lock held). */
static void
load_tables(struct kiln__tuner *t, const char *dir)
{
  load_local(t, dir);
  load_packaged(t);
}

static void
load_local(struct kiln__tuner *t, const char *dir)
{
  size_t keep = 0;
  for (size_t i = 0; i < t->nrecs; i++)
    if (t->recs[i].source != KILN_TUNE_SOURCE_STORED &&
        t->recs[i].source != KILN_TUNE_SOURCE_OTHER_DRIVER &&
        t->recs[i].source != KILN_TUNE_SOURCE_PACKAGED)
      t->recs[keep++] = t->recs[i];
  t->nrecs = keep;
  kiln__tf_free(&t->fails);
  t->other_name[0] = 0;
  snprintf(t->dir, sizeof t->dir, "%s", dir);
  if (!dir[0])
    return;
  char tdir[4200], path[4600];
  const char *why = "";
  int r = kiln__tf_dir(dir, 0, tdir, sizeof tdir, &why);
  if (r < 0)
    kiln__log(KILN__LOG_WARN, "%s/tuning: %s; tuning files ignored", dir, why);
  if (r != 0)
    return;
  struct kiln__tf_table tab;
  snprintf(path, sizeof path, "%s/%s", tdir, t->exact_name);
  int got = kiln__tf_read(path, &tab, &why);
  if (got == 0) {
    take_table(t, &tab, KILN_TUNE_SOURCE_STORED, path);
    kiln__tf_free(&tab);
  } else if (got < 0) {
    kiln__log(KILN__LOG_WARN, "tuning file %s: %s; ignored", path, why);
  }
  char other[256];
  if (kiln__tf_find_other_driver(tdir, t->dev, t->exact_name, other, sizeof other) == 0) {
    snprintf(path, sizeof path, "%s/%s", tdir, other);
    if (kiln__tf_read(path, &tab, &why) == 0) {
      size_t before = t->nrecs;
      take_table(t, &tab, KILN_TUNE_SOURCE_OTHER_DRIVER, path);
      kiln__tf_free(&tab);
      snprintf(t->other_name, sizeof t->other_name, "%s", other);
      if (t->nrecs > before)
        kiln__log(KILN__LOG_INFO,
                  "tuning: using results of %s for keys not tuned with driver %s (%s)", other,
                  t->drv_raw, t->exact_name);
    }
  }
}

void
kiln__tn_ensure_loaded(kiln_context *ctx, struct kiln__tuner *t)
{
  if (atomic_load(&t->loaded))
    return;
  char dir[4096];
  cache_dir_of(ctx, dir, sizeof dir);
  pthread_mutex_lock(&t->lock);
  if (!atomic_load(&t->loaded)) {
    load_tables(t, dir);
    atomic_store(&t->loaded, 1);
  }
  pthread_mutex_unlock(&t->lock);
}

/* Applies the stored record of key to params; returns its source, or -1 (t->lock held). */
static int
apply_rec(struct kiln__tuner *t, uint32_t key, const struct kiln__tune_family *f, void *params)
{
  struct rec *r = rec_find(t, key);
  if (!r)
    return -1;
  for (size_t i = 0; i < f->nparams; i++)
    if (r->mask & (1u << i))
      kiln__tn_pset(&f->params[i], params, r->val[i]);
  return r->source;
}

/* Applies overrides: every-bucket ones, then the bucket's own. Nonzero if any (t->lock held). */
static int
apply_ovr(struct kiln__tuner *t, int fam, kiln_dtype dtype, int layout, int k, void *params)
{
  const struct kiln__tune_family *f = kiln__tn_fam_at(fam);
  int any = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < t->novrs; i++) {
      const struct ovr *o = &t->ovrs[i];
      int all = o->layout < 0;
      if (o->fam != fam || o->dtype != dtype || all != (pass == 0) ||
          (!all && (o->layout != layout || o->k != k)))
        continue;
      for (size_t p = 0; p < f->nparams; p++)
        if (o->mask & (1u << p))
          kiln__tn_pset(&f->params[p], params, o->val[p]);
      any = 1;
    }
  }
  return any;
}

static int
tried_has(struct kiln__tuner *t, uint32_t key)
{
  for (size_t i = 0; i < t->ntried; i++)
    if (t->tried[i] == key)
      return 1;
  return 0;
}

static void
tried_add(struct kiln__tuner *t, uint32_t key)
{
  if (t->ntried == t->captried) {
    size_t ncap = t->captried ? t->captried * 2 : 16;
    uint32_t *n = realloc(t->tried, ncap * sizeof *n);
    if (!n)
      return;
    t->tried = n;
    t->captried = ncap;
  }
  t->tried[t->ntried++] = key;
}

int
kiln__tn_profiling(kiln_context *ctx)
{
  kiln__ctx_lock(ctx);
  int p = ctx->prof.active;
  kiln__ctx_unlock(ctx);
  return p;
}

/*
 * Takes the context for the tuning of one key: ctx->lock (recursive) stays
 * held until kiln__tn_tune_release(), so other threads' ops on the context wait
 * instead of landing in the candidates' profiling windows, and no second
 * tuning on another thread can begin or end a profile in the middle of this
 * one's. Returns 0 (lock not held) when the caller profiles the context:
 * tuning would reset the recording.
 */
int
kiln__tn_tune_hold(kiln_context *ctx)
{
  kiln__ctx_lock(ctx);
  if (!ctx->prof.active)
    return 1;
  kiln__ctx_unlock(ctx);
  return 0;
}

void
kiln__tn_tune_release(kiln_context *ctx)
{
  kiln__ctx_unlock(ctx);
}

/*
 * The parameters of a key: defaults, then stored (unless mode OFF), then
 * overrides. *online_wanted (online_wanted may be NULL: never): mode ONLINE,
 * nothing stored or overridden, and a problem large enough to be worth it.
 */
int
kiln__tn_resolve(kiln_context *ctx, int fam, kiln_dtype dtype, int layout, int k, void *params,
        int *online_wanted)
{
  const struct kiln__tune_family *f = kiln__tn_fam_at(fam);
  f->defaults(ctx, dtype, layout, k, params);
  if (online_wanted)
    *online_wanted = 0;
  struct kiln__tuner *t = ctx->tuner;
  if (!t)
    return KILN_TUNE_SOURCE_DEFAULT;
  int mode = atomic_load(&t->mode);
  if (mode != KILN_TUNE_OFF)
    kiln__tn_ensure_loaded(ctx, t);
  uint32_t key = kiln__tn_pack_key(fam, dtype, layout, k);
  pthread_mutex_lock(&t->lock);
  int src = mode != KILN_TUNE_OFF ? apply_rec(t, key, f, params) : -1;
  if (src < 0)
    src = KILN_TUNE_SOURCE_DEFAULT;
  if (apply_ovr(t, fam, dtype, layout, k, params))
    src = KILN_TUNE_SOURCE_OVERRIDE;
  if (online_wanted && mode == KILN_TUNE_ONLINE && src == KILN_TUNE_SOURCE_DEFAULT &&
      k >= ONLINE_MIN_LOG2 && kiln__tn_family_available(f, ctx) && !tried_has(t, key)) {
    *online_wanted = 1;
    tried_add(t, key); /* no retry, and no second thread tuning the same key */
  }
  pthread_mutex_unlock(&t->lock);
  return src;
}

void
kiln__tune_lookup(kiln_context *ctx, const struct kiln__tune_family *family, kiln_dtype dtype,
                  enum kiln__tune_layout layout, uint64_t elements, void *params)
{
  int fam = kiln__tn_fam_index(family);
  if (fam < 0) { /* a family outside kiln__families: nothing stored, nothing to tune */
    family->defaults(ctx, dtype, (int)layout, kiln__tn_log2_floor(elements), params);
    return;
  }
  if (kiln__tn_tl.fam == fam && kiln__tn_tl.ctx == ctx) {
    memcpy(params, kiln__tn_tl.params.b, kiln__tn_fam_at(fam)->params_size);
    return;
  }
  int k = kiln__tn_log2_floor(elements);
  if (k > MAX_LOG2)
    k = MAX_LOG2;
  int online;
  kiln__tn_resolve(ctx, fam, dtype, layout, k, params, &online);
  if (!online)
    return;
  if (kiln__tn_tl.tuning || !kiln__tn_tune_hold(ctx)) {
    /* Not now: tuning would reset the caller's profile or recurse. A later call retries. */
    pthread_mutex_lock(&ctx->tuner->lock);
    uint32_t key = kiln__tn_pack_key(fam, dtype, layout, k);
    for (size_t i = 0; i < ctx->tuner->ntried; i++)
      if (ctx->tuner->tried[i] == key)
        ctx->tuner->tried[i] = ctx->tuner->tried[--ctx->tuner->ntried];
    pthread_mutex_unlock(&ctx->tuner->lock);
    return;
  }
  /* The caller's op must not see our candidates' failures in its error record. */
  kiln__error_saved saved;
  kiln__error_save(&saved);
  struct tune_opts o = {1, 3, 1, NULL, NULL, 0, 1, 0};
  kiln_tune_result res;
  kiln_status s = kiln__tn_tune_key(ctx, fam, dtype, layout, k, &o, &res);
  kiln__tn_tune_release(ctx);
  kiln__log(s == KILN_OK ? KILN__LOG_INFO : KILN__LOG_WARN,
            "online tuning of %s %s %s: %s (defaults %llu ns, tuned %llu ns: %s)",
            kiln__tn_fam_at(fam)->name, kiln_dtype_name(dtype), res.bucket,
            s == KILN_OK ? "done" : kiln_last_error(), (unsigned long long)res.default_ns,
            (unsigned long long)res.tuned_ns, res.tuned_params);
  kiln__error_restore(&saved);
  kiln__tn_resolve(ctx, fam, dtype, layout, k, params, &online);
}
