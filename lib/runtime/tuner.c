/*
 * The autotuner (see tuner.h and include/kiln/tune.h): the family table,
 * lookups for the ops, tuning, and the per-context state.
 */
#include "runtime/tuner.h"

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
#include "core/log.h"
#include "kiln/profile.h"
#include "runtime/disk_cache.h"
#include "runtime/family.h"
#include "runtime/tune_file.h"

/* Tuning rounds of the coordinate search (it stops early when a round changes nothing). */
#define ROUNDS 2
/* A candidate must beat the defaults by 5% to replace them: medians on a shared or
 * throttling device move by a few percent between runs, and flipping parameters on noise
 * would make results unstable from one tuning to the next. */
#define WIN_MARGIN 0.95
/* Largest bucket exponent; larger problems share the last bucket. */
#define MAX_LOG2 62
/* Online tuning skips smaller problems: launch overhead dominates them, so any
 * parameters do, and each new work-group size would cost a compile on PoCL. */
#define ONLINE_MIN_LOG2 10

/* ---------------------------------------------------------------- the family table */

typedef struct {
  alignas(8) unsigned char b[KILN__TUNE_PARAMS_MAX];
} pbuf;

#define N_(a) (sizeof(a) / sizeof((a)[0]))

/* The tuned families: those of kiln__families with a tune description, in table order. */
static const struct kiln__tune_family *tuned[KILN__FAMILY_SLOTS];
static int ntuned;
static pthread_once_t tuned_once = PTHREAD_ONCE_INIT;

static void
tuned_collect(void)
{
  for (size_t i = 0; kiln__families[i] && ntuned < KILN__FAMILY_SLOTS; i++)
    if (kiln__families[i]->tune)
      tuned[ntuned++] = kiln__families[i]->tune;
}

static int
nfam(void)
{
  pthread_once(&tuned_once, tuned_collect);
  return ntuned;
}

static const struct kiln__tune_family *
fam_at(int i)
{
  pthread_once(&tuned_once, tuned_collect);
  return tuned[i];
}

static int
param_value_ok(const struct kiln__tune_param *p, uint64_t v)
{
  return v >= p->min && v <= p->max && (!p->pow2 || (v & (v - 1)) == 0);
}

static int
fam_index(const struct kiln__tune_family *f)
{
  for (int i = 0; i < nfam(); i++)
    if (tuned[i] == f)
      return i;
  return -1;
}

static const char *const layout_names[KILN__LAYOUT_N] = {"flat", "full",   "row",
                                                         "col",  "points", "mnk"};

/* Whether f has a choice to make on ctx (online tuning and kiln_tune_run skip it otherwise). */
static int
family_available(const struct kiln__tune_family *f, const kiln_context *ctx)
{
  return !f->available || f->available(ctx);
}

/* Smallest bucket exponent of a layout: rows and columns need at least 2 x 2 elements. */
static int
layout_min_k(enum kiln__tune_layout l)
{
  return l == KILN__LAYOUT_ROW || l == KILN__LAYOUT_COL ? 2 : 0;
}

static uint64_t
pget(const struct kiln__tune_param *p, const void *s)
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

static void
pset(const struct kiln__tune_param *p, void *s, uint64_t v)
{
  if (p->size == 8) {
    memcpy((char *)s + p->offset, &v, 8);
  } else {
    uint32_t w = (uint32_t)v;
    memcpy((char *)s + p->offset, &w, 4);
  }
}

static int
find_family(const char *name)
{
  for (int i = 0; i < nfam(); i++)
    if (name && strcmp(fam_at(i)->name, name) == 0)
      return i;
  return -1;
}

static int
find_param(const struct kiln__tune_family *f, const char *name)
{
  for (size_t i = 0; i < f->nparams; i++)
    if (strcmp(f->params[i].name, name) == 0)
      return (int)i;
  return -1;
}

static int
log2_floor(uint64_t v)
{
  int k = 0;
  while (v > 1) {
    v >>= 1;
    k++;
  }
  return k;
}

/* "<layout>.2^<k>" into layout and k; 0, or -1 when malformed or not one of f's layouts. */
static int
parse_bucket(const struct kiln__tune_family *f, const char *s, int *layout, int *k)
{
  const char *dot = s ? strchr(s, '.') : NULL;
  if (!dot || strncmp(dot + 1, "2^", 2) != 0)
    return -1;
  int l = -1;
  for (int i = 0; i < KILN__LAYOUT_N; i++)
    if ((size_t)(dot - s) == strlen(layout_names[i]) && strncmp(s, layout_names[i], (size_t)(dot - s)) == 0)
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
  if (v > MAX_LOG2 || v < layout_min_k((enum kiln__tune_layout)l))
    return -1;
  *layout = l;
  *k = v;
  return 0;
}

static void
bucket_text(int layout, int k, char *buf, size_t len)
{
  snprintf(buf, len, "%s.2^%d", layout_names[layout], k);
}

/* "name=value ..." of every parameter of f in params. */
static void
params_text(const struct kiln__tune_family *f, const void *params, char *buf, size_t len)
{
  size_t used = 0;
  buf[0] = 0;
  for (size_t i = 0; i < f->nparams && used < len; i++) {
    int w = snprintf(buf + used, len - used, "%s%s=%llu", i ? " " : "", f->params[i].name,
                     (unsigned long long)pget(&f->params[i], params));
    if (w < 0)
      break;
    used += (size_t)w;
  }
}

/* ---------------------------------------------------------------- per-context state */

struct rec {
  uint32_t key;
  int source; /* kiln_tune_source */
  uint32_t mask;
  uint64_t val[KILN__TF_MAX_PARAMS];
};

struct ovr {
  int fam;
  kiln_dtype dtype;
  int layout, k; /* -1: every bucket */
  uint32_t mask;
  uint64_t val[KILN__TF_MAX_PARAMS];
};

struct kiln__tuner {
  pthread_mutex_t lock; /* guards everything but the atomics; never held while taking ctx->lock */
  atomic_int mode;
  atomic_int loaded; /* tables read for the current directory and identity */
  char dir[4096];    /* cache directory the tables came from; "" when none */
  char dev_raw[KILN__TF_IDENT_LEN], drv_raw[KILN__TF_IDENT_LEN]; /* as the driver names them */
  char dev[96], drv[96]; /* normalised */
  char exact_name[256], other_name[256];
  struct rec *recs;
  size_t nrecs, caprecs;
  struct kiln__tf_table fails; /* failed candidates: the exact file's and this context's */
  struct ovr *ovrs;
  size_t novrs, capovrs;
  uint32_t *tried; /* keys online tuning has tried (or is trying) in this context */
  size_t ntried, captried;
};

static uint32_t
pack_key(int fam, kiln_dtype dtype, int layout, int k)
{
  return ((uint32_t)fam << 24) | ((uint32_t)dtype << 16) | ((uint32_t)layout << 8) | (uint32_t)k;
}

/* Lookups that tuning itself makes on this thread: candidates are forced, nothing recurses. */
static _Thread_local struct {
  const kiln_context *ctx;
  int fam; /* -1: nothing forced */
  pbuf params;
  int tuning;
} tl = {NULL, -1, {{0}}, 0};

static struct {
  int active, fam, param, corrupt;
  int transient_left; /* corrupt 3: failing runs left */
  uint64_t value;
} sabotage;

static atomic_uint_fast64_t evaluations;

static int
mode_from_env(void)
{
  const char *v = secure_getenv("KILN_TUNE");
  if (!v || !*v)
    return KILN_TUNE_CACHED;
  static const char *const names[] = {"off", "cached", "online"};
  for (int i = 0; i < 3; i++)
    if (strcasecmp(v, names[i]) == 0)
      return i;
  kiln__log(KILN__LOG_WARN, "KILN_TUNE=%s is not off, cached or online; using cached", v);
  return KILN_TUNE_CACHED;
}

static void
set_identity(struct kiln__tuner *t, const char *device, const char *driver)
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
  set_identity(t, ctx->info.name, ctx->info.driver_version);
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
    int p = find_param(f, e->pname[i]);
    if (p < 0 || !param_value_ok(&f->params[p], e->pval[i]))
      return -1;
    *mask |= 1u << p;
    val[p] = e->pval[i];
  }
  return 0;
}

/* The key of a file entry, or -1 (unknown family, dtype, bucket; bad parameters). */
static int
entry_key(const struct kiln__tf_entry *e, uint32_t *key, uint32_t *mask, uint64_t *val)
{
  int fam = find_family(e->family);
  kiln_dtype dt;
  int layout, k;
  if (fam < 0 || kiln_dtype_from_name(e->dtype, &dt) != KILN_OK ||
      !fam_at(fam)->dtype_ok(dt) || parse_bucket(fam_at(fam), e->bucket, &layout, &k) != 0 ||
      entry_values(fam_at(fam), e, mask, val) != 0)
    return -1;
  *key = pack_key(fam, dt, layout, k);
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
static void
rec_put(struct kiln__tuner *t, uint32_t key, int source, uint32_t mask, const uint64_t *val)
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
    if (entry_key(e, &key, &mask, val) != 0) {
      bad++;
      continue;
    }
    if (e->failed[0]) {
      if (source == KILN_TUNE_SOURCE_STORED)
        kiln__tf_put(&t->fails, e);
    } else if (source == KILN_TUNE_SOURCE_STORED || !rec_find(t, key)) {
      rec_put(t, key, source, mask, val);
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
  pthread_mutex_lock(&ctx->lock);
  const char *d = ctx->cache ? kiln__dc_dir(ctx->cache) : NULL;
  if (!d || snprintf(out, len, "%s", d) >= (int)len)
    out[0] = 0;
  pthread_mutex_unlock(&ctx->lock);
}

/* Reads the exact and other-driver files for dir (t->lock held). */
static void
load_tables(struct kiln__tuner *t, const char *dir)
{
  size_t keep = 0;
  for (size_t i = 0; i < t->nrecs; i++)
    if (t->recs[i].source != KILN_TUNE_SOURCE_STORED &&
        t->recs[i].source != KILN_TUNE_SOURCE_OTHER_DRIVER)
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

static void
ensure_loaded(kiln_context *ctx, struct kiln__tuner *t)
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
      pset(&f->params[i], params, r->val[i]);
  return r->source;
}

/* Applies overrides: every-bucket ones, then the bucket's own. Nonzero if any (t->lock held). */
static int
apply_ovr(struct kiln__tuner *t, int fam, kiln_dtype dtype, int layout, int k, void *params)
{
  const struct kiln__tune_family *f = fam_at(fam);
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
          pset(&f->params[p], params, o->val[p]);
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

static int
profiling(kiln_context *ctx)
{
  pthread_mutex_lock(&ctx->lock);
  int p = ctx->prof.active;
  pthread_mutex_unlock(&ctx->lock);
  return p;
}

/*
 * Takes the context for the tuning of one key: ctx->lock (recursive) stays
 * held until tune_release(), so other threads' ops on the context wait
 * instead of landing in the candidates' profiling windows, and no second
 * tuning on another thread can begin or end a profile in the middle of this
 * one's. Returns 0 (lock not held) when the caller profiles the context:
 * tuning would reset the recording.
 */
static int
tune_hold(kiln_context *ctx)
{
  pthread_mutex_lock(&ctx->lock);
  if (!ctx->prof.active)
    return 1;
  pthread_mutex_unlock(&ctx->lock);
  return 0;
}

static void
tune_release(kiln_context *ctx)
{
  pthread_mutex_unlock(&ctx->lock);
}

/*
 * The parameters of a key: defaults, then stored (unless mode OFF), then
 * overrides. *online_wanted (online_wanted may be NULL: never): mode ONLINE,
 * nothing stored or overridden, and a problem large enough to be worth it.
 */
static int
resolve(kiln_context *ctx, int fam, kiln_dtype dtype, int layout, int k, void *params,
        int *online_wanted)
{
  const struct kiln__tune_family *f = fam_at(fam);
  f->defaults(ctx, dtype, layout, params);
  if (online_wanted)
    *online_wanted = 0;
  struct kiln__tuner *t = ctx->tuner;
  if (!t)
    return KILN_TUNE_SOURCE_DEFAULT;
  int mode = atomic_load(&t->mode);
  if (mode != KILN_TUNE_OFF)
    ensure_loaded(ctx, t);
  uint32_t key = pack_key(fam, dtype, layout, k);
  pthread_mutex_lock(&t->lock);
  int src = mode != KILN_TUNE_OFF ? apply_rec(t, key, f, params) : -1;
  if (src < 0)
    src = KILN_TUNE_SOURCE_DEFAULT;
  if (apply_ovr(t, fam, dtype, layout, k, params))
    src = KILN_TUNE_SOURCE_OVERRIDE;
  if (online_wanted && mode == KILN_TUNE_ONLINE && src == KILN_TUNE_SOURCE_DEFAULT &&
      k >= ONLINE_MIN_LOG2 && family_available(f, ctx) && !tried_has(t, key)) {
    *online_wanted = 1;
    tried_add(t, key); /* no retry, and no second thread tuning the same key */
  }
  pthread_mutex_unlock(&t->lock);
  return src;
}

struct tune_opts {
  int quick, reps, store;
  kiln_tune_progress_fn fn;
  void *user;
  size_t key_index, key_count;
  int stop;
};

static kiln_status tune_key(kiln_context *ctx, int fam, kiln_dtype dtype, int layout, int k,
                            struct tune_opts *o, kiln_tune_result *res);

void
kiln__tune_lookup(kiln_context *ctx, const struct kiln__tune_family *family, kiln_dtype dtype,
                  enum kiln__tune_layout layout, uint64_t elements, void *params)
{
  int fam = fam_index(family);
  if (fam < 0) { /* a family outside kiln__families: nothing stored, nothing to tune */
    family->defaults(ctx, dtype, (int)layout, params);
    return;
  }
  if (tl.fam == fam && tl.ctx == ctx) {
    memcpy(params, tl.params.b, fam_at(fam)->params_size);
    return;
  }
  int k = log2_floor(elements);
  if (k > MAX_LOG2)
    k = MAX_LOG2;
  int online;
  resolve(ctx, fam, dtype, layout, k, params, &online);
  if (!online)
    return;
  if (tl.tuning || !tune_hold(ctx)) {
    /* Not now: tuning would reset the caller's profile or recurse. A later call retries. */
    pthread_mutex_lock(&ctx->tuner->lock);
    uint32_t key = pack_key(fam, dtype, layout, k);
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
  kiln_status s = tune_key(ctx, fam, dtype, layout, k, &o, &res);
  tune_release(ctx);
  kiln__log(s == KILN_OK ? KILN__LOG_INFO : KILN__LOG_WARN,
            "online tuning of %s %s %s: %s (defaults %llu ns, tuned %llu ns: %s)",
            fam_at(fam)->name, kiln_dtype_name(dtype), res.bucket,
            s == KILN_OK ? "done" : kiln_last_error(), (unsigned long long)res.default_ns,
            (unsigned long long)res.tuned_ns, res.tuned_params);
  kiln__error_restore(&saved);
  resolve(ctx, fam, dtype, layout, k, params, &online);
}

/* ---------------------------------------------------------------- tuning */

/*
 * The device tensor comes first: it checks the shape's byte count for overflow and against the
 * device's largest allocation before a host buffer of that size is made.
 */
kiln_status
kiln__tune_input(kiln_context *ctx, kiln_dtype dt, size_t ndim, const int64_t *shape,
                 uint32_t seed, kiln_tensor **out)
{
  kiln_status s = kiln_tensor_create(ctx, dt, ndim, shape, out);
  if (s != KILN_OK)
    return s;
  uint64_t n = kiln_tensor_numel(*out), bytes = kiln_tensor_nbytes(*out);
  unsigned char *h = bytes < SIZE_MAX ? malloc((size_t)bytes + 1) : NULL;
  if (!h) {
    kiln_tensor_release(*out);
    *out = NULL;
    return kiln__fail(KILN_ERR_HOST_MEMORY, "kiln_tune_run", 0, "no memory for %llu inputs",
                      (unsigned long long)n);
  }
  uint32_t x = seed;
  for (uint64_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    int32_t m = (int32_t)((x >> 8) % 64u) - 32;
    if (m >= 0)
      m++; /* [-32, -1] and [1, 32] */
    switch (dt) {
    case KILN_F32: ((float *)h)[i] = (float)m / 16.0f; break;
    case KILN_F64: ((double *)h)[i] = (double)m / 16.0; break;
    case KILN_I32: ((int32_t *)h)[i] = (int32_t)((x >> 4) % 2001u) - 1000; break;
    case KILN_I64: ((int64_t *)h)[i] = (int64_t)((x >> 4) % 2001u) - 1000; break;
    case KILN_U8: h[i] = (unsigned char)(x >> 24); break;
    default: h[i] = (unsigned char)(x >> 31); break;
    }
  }
  s = kiln_tensor_upload(*out, h, (size_t)bytes);
  free(h);
  if (s != KILN_OK) {
    kiln_tensor_release(*out);
    *out = NULL;
  }
  return s;
}

double
kiln__tune_in_out_bytes(const struct kiln__tune_problem *pb)
{
  return (double)pb->n * (double)kiln_dtype_size(pb->dtype) +
         (double)kiln_tensor_nbytes(pb->out);
}

static void
problem_free(struct kiln__tune_problem *pb)
{
  kiln_tensor_release(pb->in[0]);
  kiln_tensor_release(pb->in[1]);
  kiln_tensor_release(pb->out);
  memset(pb->in, 0, sizeof pb->in);
  pb->out = NULL;
}

/* The representative problem of a bucket: 2^k elements, rows and columns as square as can be. */
static kiln_status
problem_make(kiln_context *ctx, int fam, kiln_dtype dtype, int layout, int k, struct kiln__tune_problem *pb)
{
  memset(pb, 0, sizeof *pb);
  pb->ctx = ctx;
  pb->fam = fam;
  pb->f = fam_at(fam);
  pb->dtype = dtype;
  pb->layout = (enum kiln__tune_layout)layout;
  pb->k = k;
  pb->n = (uint64_t)1 << k;
  int64_t lines = (int64_t)1 << (k / 2), len = (int64_t)1 << (k - k / 2);
  switch (layout) {
  case KILN__LAYOUT_ROW:
    pb->ndim = 2, pb->shape[0] = lines, pb->shape[1] = len, pb->axis = 1;
    break;
  case KILN__LAYOUT_COL:
    pb->ndim = 2, pb->shape[0] = len, pb->shape[1] = lines, pb->axis = 0;
    break;
  default:
    pb->ndim = 1, pb->shape[0] = (int64_t)pb->n, pb->axis = 0;
    break;
  }
  kiln_status s = KILN_OK;
  if (pb->f->setup)
    s = pb->f->setup(pb);
  for (int i = 0; i < pb->f->ninputs && s == KILN_OK && !pb->f->setup; i++)
    s = kiln__tune_input(ctx, dtype, pb->ndim, pb->shape, 12345u + 7919u * (uint32_t)i,
                         &pb->in[i]);
  if (s != KILN_OK)
    problem_free(pb);
  return s;
}

/*
 * Float sums are compared with |a - b| <= 8 eps max(|a|, |b|, 1). The inputs
 * (multiples of 1/16, random signs) keep every partial sum of a realistic
 * line exactly representable, so summation orders agree exactly and the
 * tolerance only absorbs rare roundings; one dropped or repeated element
 * (at least 1/16) exceeds it while |sum| < 2^16 (f32).
 */
static int
outputs_match(kiln_dtype dt, int float_sum, const void *a, const void *b, size_t bytes)
{
  if (!float_sum || (dt != KILN_F32 && dt != KILN_F64))
    return memcmp(a, b, bytes) == 0;
  size_t n = bytes / kiln_dtype_size(dt);
  double eps = dt == KILN_F32 ? 1.1920928955078125e-07 : 2.220446049250313e-16;
  for (size_t i = 0; i < n; i++) {
    double x = dt == KILN_F32 ? ((const float *)a)[i] : ((const double *)a)[i];
    double y = dt == KILN_F32 ? ((const float *)b)[i] : ((const double *)b)[i];
    double m = fmax(fmax(fabs(x), fabs(y)), 1.0);
    if (!(fabs(x - y) <= 8 * eps * m)) /* NaN fails too */
      return 0;
  }
  return 1;
}

static int
outputs_agree(const struct kiln__tune_problem *pb, const void *ref, const void *got, size_t bytes)
{
  if (pb->f->match)
    return pb->f->match(pb, ref, got, bytes);
  return outputs_match(kiln_tensor_dtype(pb->out), pb->f->float_sum, ref, got, bytes);
}

/*
 * The sabotage hook's wrong result: wrong by every family's measure, also by
 * tolerances relative to the whole output (fft_match), which a flipped low
 * bit of one float would pass.
 */
static void
corrupt_output(kiln_dtype dt, void *buf, size_t bytes)
{
  if (dt != KILN_F32 && dt != KILN_F64) {
    ((unsigned char *)buf)[0] ^= 0x5a;
    return;
  }
  size_t n = bytes / kiln_dtype_size(dt);
  double l1 = 0;
  for (size_t i = 0; i < n; i++)
    l1 += fabs(dt == KILN_F32 ? (double)((const float *)buf)[i] : ((const double *)buf)[i]);
  if (dt == KILN_F32)
    ((float *)buf)[0] += (float)(1.0 + l1);
  else
    ((double *)buf)[0] += 1.0 + l1;
}

static int
sabotaged(int fam, const void *params)
{
  return sabotage.active && sabotage.fam == fam &&
         pget(&fam_at(fam)->params[sabotage.param], params) == sabotage.value;
}

/* The failure the sabotage hook makes params' run have (corrupt 2 and 3), else KILN_OK. */
static kiln_status
sabotage_failure(const struct problem *pb, const void *params)
{
  if (!sabotaged(pb->fam, params))
    return KILN_OK;
  if (sabotage.corrupt == 2)
    return kiln__fail(KILN_ERR_UNSUPPORTED, "kiln_tune_run", 0, "sabotaged candidate");
  if (sabotage.corrupt == 3 && sabotage.transient_left > 0) {
    sabotage.transient_left--;
    return kiln__fail(KILN_ERR_DEVICE_MEMORY, "kiln_tune_run", 0,
                      "sabotaged candidate (a passing failure)");
  }
  return KILN_OK;
}

static int
cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

struct eval {
  pbuf params;
  uint64_t median_ns;
  char failed[KILN__TF_REASON_LEN]; /* "" when it ran and was right */
};

static const char *
failure_reason(kiln_status s)
{
  switch (s) {
  case KILN_ERR_BUILD:
    return "build";
  case KILN_ERR_DEVICE_MEMORY:
  case KILN_ERR_HOST_MEMORY:
    return "memory";
  case KILN_ERR_UNSUPPORTED:
    return "unsupported"; /* e.g. a back end that cannot do the problem */
  default:
    return "launch";
  }
}

/*
 * Wall time of one call, waited for: a choice between libraries is about
 * what a call costs its caller, and for small problems that is mostly host
 * work (CLBlast's per-call work, a library's enqueue path), which device time
 * leaves out. On PoCL here device time put CLBlast's SGEMM well ahead of
 * kiln's kernel from 2^10 to 2^14 (2.5-7 us against 4-16 us), while a call
 * costs 15-55 us of wall time on either route.
 */
static kiln_status
time_call(struct kiln__tune_problem *pb, const void *params, uint64_t *ns)
{
  kiln_status s = kiln_context_finish(pb->ctx); /* earlier work is not this call's */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (s == KILN_OK)
    s = pb->f->run(pb, params);
  if (s == KILN_OK)
    s = kiln_context_finish(pb->ctx);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  int64_t d = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
  if (s == KILN_OK)
    *ns = d > 0 ? (uint64_t)d : 1;
  return s;
}

/* Device time of one run of params on pb (the caller forces params for lookups). */
static kiln_status
time_once(struct kiln__tune_problem *pb, const void *params, uint64_t *ns)
{
  if (pb->f->wall_clock)
    return time_call(pb, params, ns);
  kiln_profile p;
  kiln_status s = kiln_profile_begin(pb->ctx);
  if (s == KILN_OK)
    s = pb->f->run(pb, params);
  if (s == KILN_OK)
    s = kiln_profile_end(pb->ctx, &p);
  else
    kiln_profile_end(pb->ctx, &p); /* stops the recording; the run's status is what counts */
  if (s == KILN_OK)
    *ns = p.device_ns ? p.device_ns : 1;
  return s;
}

static void
force(struct kiln__tune_problem *pb, const void *params)
{
  tl.ctx = pb->ctx;
  tl.fam = pb->fam;
  memcpy(tl.params.b, params, pb->f->params_size);
}

static void
unforce(void)
{
  tl.fam = -1;
  tl.ctx = NULL;
}

/*
 * Runs params on pb: once to build and check the output against ref (NULL:
 * this is the reference, kept in *got), once more to warm up, then reps
 * timed runs; fills e. Returns KILN_OK, or the failure status (e->failed set).
 */
static kiln_status
evaluate(struct kiln__tune_problem *pb, const void *params, const void *ref, void **got, size_t *got_bytes,
         int reps, struct eval *e)
{
  kiln_context *ctx = pb->ctx;
  const struct kiln__tune_family *f = pb->f;
  memcpy(e->params.b, params, f->params_size);
  e->median_ns = 0;
  e->failed[0] = 0;
  /* Elementwise ops take their local size from a lookup: force it on this thread. */
  force(pb, params);
  kiln_status s = ref ? sabotage_failure(pb, params) : KILN_OK;
  if (s == KILN_OK)
    s = f->run(pb, params);
  if (s == KILN_OK)
    s = kiln_context_finish(ctx);
  void *buf = NULL;
  size_t bytes = pb->out ? (size_t)kiln_tensor_nbytes(pb->out) : 0;
  if (s == KILN_OK) {
    buf = malloc(bytes + 1);
    s = buf ? kiln_tensor_download(pb->out, buf, bytes) : KILN_ERR_HOST_MEMORY;
  }
  if (s != KILN_OK) {
    snprintf(e->failed, sizeof e->failed, "%s", failure_reason(s));
  } else {
    if (ref && sabotage.corrupt == 1 && sabotaged(pb->fam, params) && bytes)
      corrupt_output(kiln_tensor_dtype(pb->out), buf, bytes);
    if (ref && (bytes != *got_bytes || !outputs_agree(pb, ref, buf, bytes))) {
      snprintf(e->failed, sizeof e->failed, "wrong");
      s = KILN_ERR_INTERNAL;
    }
  }
  if (s == KILN_OK)
    s = f->run(pb, params); /* warm-up: caches, PoCL's per-local-size code */
  uint64_t *t = s == KILN_OK ? calloc((size_t)reps, sizeof *t) : NULL;
  if (s == KILN_OK && !t)
    s = KILN_ERR_HOST_MEMORY;
  for (int r = 0; r < reps && s == KILN_OK; r++)
    s = time_once(pb, params, &t[r]);
  if (s != KILN_OK && !e->failed[0])
    snprintf(e->failed, sizeof e->failed, "%s", failure_reason(s));
  if (s == KILN_OK) {
    qsort(t, (size_t)reps, sizeof *t, cmp_u64);
    e->median_ns = t[reps / 2] ? t[reps / 2] : 1;
    if (ref && sabotaged(pb->fam, params))
      e->median_ns = 1;
  }
  free(t);
  unforce();
  if (!ref && s == KILN_OK) {
    *got = buf;
    *got_bytes = bytes;
  } else {
    free(buf);
  }
  return s;
}

/*
 * evaluate(), run a second time when it fails: only a failure that repeats
 * counts (and is recorded, in the context and in the tuning file). The
 * context is held for the tuning (tune_hold), so the second run has it to
 * itself; a failure that other contexts or processes on the device caused
 * (device memory they held, say) must not keep a candidate out for good.
 */
static kiln_status
evaluate_confirmed(struct problem *pb, const void *params, const void *ref, void **got,
                   size_t *got_bytes, int reps, struct eval *e)
{
  kiln_status s = evaluate(pb, params, ref, got, got_bytes, reps, e);
  if (s != KILN_OK)
    s = evaluate(pb, params, ref, got, got_bytes, reps, e);
  return s;
}

/* A failure record for a candidate (an entry of the tuning file). */
static void
failure_entry(int fam, kiln_dtype dtype, const char *bucket, const struct eval *ev,
              struct kiln__tf_entry *e)
{
  const struct kiln__tune_family *f = fam_at(fam);
  memset(e, 0, sizeof *e);
  snprintf(e->family, sizeof e->family, "%s", f->name);
  snprintf(e->dtype, sizeof e->dtype, "%s", kiln_dtype_name(dtype));
  snprintf(e->bucket, sizeof e->bucket, "%s", bucket);
  for (size_t i = 0; i < f->nparams && i < KILN__TF_MAX_PARAMS; i++) {
    snprintf(e->pname[i], sizeof e->pname[i], "%s", f->params[i].name);
    e->pval[i] = pget(&f->params[i], ev->params.b);
  }
  e->nparams = (uint32_t)f->nparams;
  snprintf(e->failed, sizeof e->failed, "%s", ev->failed);
}

/* Nonzero when the context recorded params as failed for this key (t->lock taken). */
static int
failed_before(struct kiln__tuner *t, int fam, kiln_dtype dtype, const char *bucket,
              const void *params)
{
  if (!t)
    return 0;
  struct eval ev;
  memcpy(ev.params.b, params, fam_at(fam)->params_size);
  snprintf(ev.failed, sizeof ev.failed, "x");
  struct kiln__tf_entry e;
  failure_entry(fam, dtype, bucket, &ev, &e);
  int hit = 0;
  pthread_mutex_lock(&t->lock);
  for (size_t i = 0; i < t->fails.n && !hit; i++)
    hit = kiln__tf_same_key(&t->fails.e[i], &e);
  pthread_mutex_unlock(&t->lock);
  return hit;
}

/*
 * The largest work-group size the timed op's kernels of this dtype accept on
 * the device (those the defaults' run created), and what their local memory
 * leaves (ctx->lock taken). Larger candidates would only be clamped at launch
 * and time the same configuration again.
 */
static uint64_t
local_limit(kiln_context *ctx, const struct kiln__tune_family *f, kiln_dtype dtype)
{
  uint64_t lim = ctx->info.max_work_group_size ? ctx->info.max_work_group_size : 1024;
  if (!f->source)
    return lim; /* no kernels of kiln's: nothing bounds a work-group size parameter */
  char opts[192];
  kiln__dtype_options(dtype, opts, sizeof opts);
  size_t ol = strlen(opts);
  cl_ulong kmem_max = 0;
  pthread_mutex_lock(&ctx->lock);
  for (size_t i = 0; i < ctx->nprograms; i++) {
    const struct kiln__program *p = &ctx->programs[i];
    if (strcmp(p->source, f->source) != 0 || strncmp(p->options, opts, ol) != 0 ||
        (p->options[ol] != 0 && p->options[ol] != ' '))
      continue;
    for (size_t j = 0; j < p->nkernels; j++) {
      if (strncmp(p->kernels[j].name, f->kernel_prefix, strlen(f->kernel_prefix)) != 0)
        continue;
      size_t kwg = 0;
      cl_ulong kmem = 0;
      if (clGetKernelWorkGroupInfo(p->kernels[j].kernel, ctx->device, CL_KERNEL_WORK_GROUP_SIZE,
                                   sizeof kwg, &kwg, NULL) == CL_SUCCESS &&
          kwg && kwg < lim)
        lim = kwg;
      if (clGetKernelWorkGroupInfo(p->kernels[j].kernel, ctx->device, CL_KERNEL_LOCAL_MEM_SIZE,
                                   sizeof kmem, &kmem, NULL) == CL_SUCCESS &&
          kmem > kmem_max)
        kmem_max = kmem;
    }
  }
  pthread_mutex_unlock(&ctx->lock);
  if (f->local_bytes_per_item) {
    uint64_t avail =
        ctx->info.local_mem_bytes > kmem_max ? ctx->info.local_mem_bytes - kmem_max : 0;
    uint64_t by_mem = avail / f->local_bytes_per_item;
    if (by_mem < lim)
      lim = by_mem ? by_mem : 1;
  }
  return lim;
}

static int
notify(struct tune_opts *o, kiln_tune_event ev, size_t idx, size_t limit, const char *params,
       uint64_t ns, const char *failed, const kiln_tune_result *res)
{
  if (!o->fn)
    return 0;
  kiln_tune_progress p = {ev, o->key_index, o->key_count, idx, limit, params, ns, failed, res};
  if (o->fn(&p, o->user))
    o->stop = 1;
  return o->stop;
}

/* Stores a key's winner and the new failure records: in the context, then in the file. */
static kiln_status
store_key(kiln_context *ctx, int fam, kiln_dtype dtype, int layout, int k, const void *best,
          uint64_t tuned_ns, uint64_t default_ns, const struct kiln__tf_table *newfails)
{
  static const char op[] = "kiln_tune_run";
  struct kiln__tuner *t = ctx->tuner;
  if (!t)
    return kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "the context has no tuner state");
  const struct kiln__tune_family *f = fam_at(fam);
  uint64_t val[KILN__TF_MAX_PARAMS] = {0};
  for (size_t i = 0; i < f->nparams; i++)
    val[i] = pget(&f->params[i], best);
  struct kiln__tf_table up;
  kiln__tf_init(&up);
  snprintf(up.device, sizeof up.device, "%s", t->dev_raw);
  snprintf(up.driver, sizeof up.driver, "%s", t->drv_raw);
  struct kiln__tf_entry e;
  struct eval ev;
  memcpy(ev.params.b, best, f->params_size);
  ev.failed[0] = 0;
  char bucket[32];
  bucket_text(layout, k, bucket, sizeof bucket);
  failure_entry(fam, dtype, bucket, &ev, &e);
  e.time_ns = tuned_ns;
  e.default_ns = default_ns;
  kiln_status s = kiln__tf_put(&up, &e) == 0 ? KILN_OK : KILN_ERR_HOST_MEMORY;
  for (size_t i = 0; i < newfails->n && s == KILN_OK; i++)
    if (kiln__tf_put(&up, &newfails->e[i]) != 0)
      s = KILN_ERR_HOST_MEMORY;
  char dir[4096];
  pthread_mutex_lock(&t->lock);
  rec_put(t, pack_key(fam, dtype, layout, k), KILN_TUNE_SOURCE_STORED,
          (1u << f->nparams) - 1u, val);
  for (size_t i = 0; i < newfails->n; i++)
    kiln__tf_put(&t->fails, &newfails->e[i]);
  snprintf(dir, sizeof dir, "%s", t->dir);
  char name[256];
  snprintf(name, sizeof name, "%s", t->exact_name);
  pthread_mutex_unlock(&t->lock);
  if (s != KILN_OK) {
    kiln__tf_free(&up);
    return kiln__fail(s, op, 0, "no memory to store the results");
  }
  char tdir[4200], path[4600];
  const char *why = "";
  if (!dir[0]) {
    kiln__tf_free(&up);
    return kiln__fail(KILN_ERR_IO, op, 0,
                      "no cache directory to store tuning results in (kept for this context)");
  }
  if (kiln__tf_dir(dir, 1, tdir, sizeof tdir, &why) != 0) {
    kiln__tf_free(&up);
    return kiln__fail(KILN_ERR_IO, op, 0, "%s/tuning: %s", dir, why);
  }
  snprintf(path, sizeof path, "%s/%s", tdir, name);
  int err = kiln__tf_merge(path, &up);
  kiln__tf_free(&up);
  if (err)
    return kiln__fail(KILN_ERR_IO, op, err, "cannot write %s: %s", path, strerror(err));
  return KILN_OK;
}

static int
eval_same(const struct kiln__tune_family *f, const void *a, const void *b)
{
  for (size_t i = 0; i < f->nparams; i++)
    if (pget(&f->params[i], a) != pget(&f->params[i], b))
      return 0;
  return 1;
}

/* Tunes one key (see kiln_tune_run). res is filled whatever happens. */
static kiln_status
tune_key(kiln_context *ctx, int fam, kiln_dtype dtype, int layout, int k, struct tune_opts *o,
         kiln_tune_result *res)
{
  const struct kiln__tune_family *f = fam_at(fam);
  memset(res, 0, sizeof *res);
  res->family = f->name;
  res->layout = layout_names[layout];
  res->dtype = dtype;
  bucket_text(layout, k, res->bucket, sizeof res->bucket);
  res->elements = (uint64_t)1 << k;
  pbuf def;
  f->defaults(ctx, dtype, layout, def.b);
  params_text(f, def.b, res->default_params, sizeof res->default_params);
  snprintf(res->tuned_params, sizeof res->tuned_params, "%s", res->default_params);

  size_t limit_count = 1;
  for (size_t i = 0; i < f->nparams; i++)
    if (!f->params[i].layouts || (f->params[i].layouts & (1u << layout)))
      limit_count += ROUNDS * (o->quick ? f->params[i].nquick : f->params[i].nfull);

  tl.tuning++;
  struct kiln__tune_problem pb;
  kiln_status s = problem_make(ctx, fam, dtype, layout, k, &pb);
  if (pb.desc[0])
    snprintf(res->shape, sizeof res->shape, "%s", pb.desc);
  else if (pb.ndim == 2)
    snprintf(res->shape, sizeof res->shape, "[%lld,%lld] axis %lld", (long long)pb.shape[0],
             (long long)pb.shape[1], (long long)pb.axis);
  else
    snprintf(res->shape, sizeof res->shape, "[%lld]", (long long)pb.shape[0]);
  notify(o, KILN_TUNE_EVENT_KEY_START, 0, limit_count, NULL, 0, "", res);

  void *ref = NULL;
  size_t ref_bytes = 0;
  struct eval *memo = calloc(limit_count, sizeof *memo);
  size_t nmemo = 0;
  struct kiln__tf_table newfails;
  kiln__tf_init(&newfails);
  if (s == KILN_OK && !memo)
    s = kiln__fail(KILN_ERR_HOST_MEMORY, "kiln_tune_run", 0, "out of memory");
  if (s == KILN_OK) {
    s = evaluate_confirmed(&pb, def.b, NULL, &ref, &ref_bytes, o->reps, &memo[0]);
    if (s != KILN_OK)
      s = kiln__fail(s, "kiln_tune_run", 0, "%s %s %s: the defaults failed (%s)", f->name,
                     kiln_dtype_name(dtype), res->bucket, memo[0].failed);
  }
  if (s == KILN_OK) {
    nmemo = 1;
    res->bytes = f->bytes(&pb);
    res->default_ns = res->tuned_ns = memo[0].median_ns;
    res->candidates = 1;
    notify(o, KILN_TUNE_EVENT_CANDIDATE, 1, limit_count, res->default_params, memo[0].median_ns,
           "", res);
  }
  uint64_t lim = s == KILN_OK ? local_limit(ctx, f, dtype) : 0;
  pbuf best = def;
  uint64_t best_ns = s == KILN_OK ? memo[0].median_ns : 0;
  for (int round = 0; round < ROUNDS && s == KILN_OK && !o->stop; round++) {
    int changed = 0;
    for (size_t pi = 0; pi < f->nparams && !o->stop; pi++) {
      const struct kiln__tune_param *p = &f->params[pi];
      if (p->layouts && !(p->layouts & (1u << layout)))
        continue; /* it changes nothing here: the defaults' value stays */
      const uint64_t *vals = o->quick ? p->quick : p->full;
      size_t nv = o->quick ? p->nquick : p->nfull;
      pbuf pick = best;
      uint64_t pick_ns = best_ns;
      for (size_t vi = 0; vi < nv && !o->stop; vi++) {
        if (p->local_size && vals[vi] > lim)
          continue;
        pbuf c = best;
        pset(p, c.b, vals[vi]);
        if (eval_same(f, c.b, best.b) || (f->same_run && f->same_run(&pb, c.b, def.b)))
          continue; /* nothing new to time */
        struct eval *ev = NULL;
        for (size_t m = 0; m < nmemo && !ev; m++)
          if (eval_same(f, memo[m].params.b, c.b))
            ev = &memo[m];
        if (!ev && nmemo < limit_count) {
          ev = &memo[nmemo++];
          char ptext[256];
          params_text(f, c.b, ptext, sizeof ptext);
          res->candidates++;
          if (failed_before(ctx->tuner, fam, dtype, res->bucket, c.b)) {
            memcpy(ev->params.b, c.b, f->params_size);
            ev->median_ns = 0;
            snprintf(ev->failed, sizeof ev->failed, "skipped");
            res->skipped++;
          } else {
            atomic_fetch_add(&evaluations, 1);
            if (evaluate_confirmed(&pb, c.b, ref, NULL, &ref_bytes, o->reps, ev) != KILN_OK) {
              res->failed++;
              struct kiln__tf_entry fe;
              failure_entry(fam, dtype, res->bucket, ev, &fe);
              kiln__tf_put(&newfails, &fe);
            }
          }
          notify(o, KILN_TUNE_EVENT_CANDIDATE, res->candidates, limit_count, ptext,
                 ev->median_ns, ev->failed, res);
        }
        if (ev && !ev->failed[0] && ev->median_ns < pick_ns) {
          pick = ev->params;
          pick_ns = ev->median_ns;
        }
      }
      if (!eval_same(f, pick.b, best.b)) {
        best = pick;
        best_ns = pick_ns;
        changed = 1;
      }
    }
    if (!changed)
      break;
  }
  if (s == KILN_OK && !eval_same(f, best.b, def.b) && !o->stop) {
    /*
     * The defaults were timed first and the winner minutes later: on a shared or throttling
     * device that alone can fake a speedup. Both are timed again, alternating, and these
     * medians decide and are reported.
     */
    uint64_t *td = calloc((size_t)o->reps, sizeof *td), *tb = calloc((size_t)o->reps, sizeof *tb);
    kiln_status cs = td && tb ? KILN_OK : KILN_ERR_HOST_MEMORY;
    for (int r = 0; r < o->reps && cs == KILN_OK; r++) {
      force(&pb, def.b);
      cs = time_once(&pb, def.b, &td[r]);
      force(&pb, best.b);
      if (cs == KILN_OK)
        cs = time_once(&pb, best.b, &tb[r]);
    }
    unforce();
    if (cs == KILN_OK && !sabotaged(fam, best.b)) {
      qsort(td, (size_t)o->reps, sizeof *td, cmp_u64);
      qsort(tb, (size_t)o->reps, sizeof *tb, cmp_u64);
      res->default_ns = td[o->reps / 2];
      best_ns = tb[o->reps / 2];
    }
    free(td);
    free(tb);
  }
  if (s == KILN_OK) {
    /* Noise must not replace the defaults: a winner has to be clearly faster. */
    if ((double)best_ns > (double)res->default_ns * WIN_MARGIN) {
      best = def;
      best_ns = res->default_ns;
    }
    res->tuned_ns = best_ns;
    params_text(f, best.b, res->tuned_params, sizeof res->tuned_params);
    if (o->store && !o->stop)
      s = store_key(ctx, fam, dtype, layout, k, best.b, best_ns, res->default_ns, &newfails);
    else if (o->store && newfails.n && ctx->tuner) {
      /* Stopped early: keep the failures so they are not retried, but no winner. */
      pthread_mutex_lock(&ctx->tuner->lock);
      for (size_t i = 0; i < newfails.n; i++)
        kiln__tf_put(&ctx->tuner->fails, &newfails.e[i]);
      pthread_mutex_unlock(&ctx->tuner->lock);
    }
  }
  res->status = s;
  notify(o, KILN_TUNE_EVENT_KEY_DONE, res->candidates, limit_count, NULL, 0, "", res);
  kiln__tf_free(&newfails);
  free(memo);
  free(ref);
  problem_free(&pb);
  tl.tuning--;
  return s;
}

/* ---------------------------------------------------------------- public API */

static char family_param_names[KILN__FAMILY_SLOTS][160];
static char family_list[160]; /* "elementwise, reduce, ..." for messages */
static pthread_once_t family_names_once = PTHREAD_ONCE_INIT;

/* The parameter lists are made from the table, so they cannot drift from it. */
static void
init_family_names(void)
{
  size_t lused = 0;
  for (int i = 0; i < nfam() && lused < sizeof family_list; i++) {
    int w = snprintf(family_list + lused, sizeof family_list - lused, "%s%s", i ? ", " : "",
                     fam_at(i)->name);
    lused += w > 0 ? (size_t)w : 0;
  }
  for (int i = 0; i < nfam(); i++) {
    size_t used = 0;
    for (size_t p = 0; p < fam_at(i)->nparams && used < sizeof family_param_names[i]; p++) {
      int w = snprintf(family_param_names[i] + used, sizeof family_param_names[i] - used, "%s%s",
                       p ? " " : "", fam_at(i)->params[p].name);
      used += w > 0 ? (size_t)w : 0;
    }
  }
}

kiln_status
kiln_tune_family_get(size_t index, kiln_tune_family_desc *out)
{
  static const char op[] = "kiln_tune_family_get";
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_RETURN_IF(index >= (size_t)nfam(), KILN_ERR_NOT_FOUND, op, "no family %zu (there are %d)",
                 index, nfam());
  pthread_once(&family_names_once, init_family_names);
  const struct kiln__tune_family *f = fam_at(index);
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
  *fam = find_family(family);
  KILN_RETURN_IF(*fam < 0, KILN_ERR_NOT_FOUND, op, "no tuned family \"%s\" (%s)", family,
                 (pthread_once(&family_names_once, init_family_names), family_list));
  return KILN_OK;
}

static kiln_status
dtype_arg(const char *op, kiln_context *ctx, int fam, kiln_dtype dtype)
{
  KILN_RETURN_IF(!kiln__dtype_valid(dtype) || !fam_at(fam)->dtype_ok(dtype) ||
                     !kiln__device_has_dtype(&ctx->info, dtype),
                 KILN_ERR_INVALID_ARGUMENT, op, "%s is not tuned for dtype %d on this device",
                 fam_at(fam)->name, (int)dtype);
  return KILN_OK;
}

kiln_status
kiln_tune_bucket_name(const char *family, const char *layout, uint64_t elements, char *buf,
                      size_t len)
{
  static const char op[] = "kiln_tune_bucket_name";
  int fam;
  KILN_TRY(family_arg(op, family, &fam));
  KILN_RETURN_IF(!layout || !buf || !elements, KILN_ERR_INVALID_ARGUMENT, op,
                 "NULL layout or buf, or 0 elements");
  int l = -1;
  for (int i = 0; i < KILN__LAYOUT_N; i++)
    if (strcmp(layout, layout_names[i]) == 0 && (fam_at(fam)->layouts & (1u << i)))
      l = i;
  KILN_RETURN_IF(l < 0, KILN_ERR_NOT_FOUND, op, "%s has no layout \"%s\" (it has: %s)", family,
                 layout, fam_at(fam)->layout_names);
  int k = log2_floor(elements);
  KILN_RETURN_IF(k < layout_min_k((enum kiln__tune_layout)l), KILN_ERR_INVALID_ARGUMENT, op,
                 "a %s problem has at least 4 elements", layout);
  char b[32];
  bucket_text(l, k > MAX_LOG2 ? MAX_LOG2 : k, b, sizeof b);
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
  int fam, layout, k;
  KILN_TRY(family_arg(op, family, &fam));
  KILN_TRY(dtype_arg(op, ctx, fam, dtype));
  KILN_RETURN_IF(!buf || !bucket || parse_bucket(fam_at(fam), bucket, &layout, &k) != 0,
                 KILN_ERR_INVALID_ARGUMENT, op,
                 "bucket \"%s\" is not <layout>.2^<k> with a layout of %s (%s)",
                 bucket ? bucket : "(null)", family, fam_at(fam)->layout_names);
  pbuf p;
  /* A query: never starts online tuning, and leaves the key untried for it. */
  int src = resolve(ctx, fam, dtype, layout, k, p.b, NULL);
  char text[256];
  params_text(fam_at(fam), p.b, text, sizeof text);
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
    KILN_RETURN_IF(!eq, KILN_ERR_INVALID_ARGUMENT, op, "\"%.*s\" is not name=value",
                   (int)(end - s), s);
    char name[KILN__TF_NAME_LEN];
    KILN_RETURN_IF((size_t)(eq - s) >= sizeof name, KILN_ERR_INVALID_ARGUMENT, op,
                   "parameter name \"%.*s\" too long", (int)(eq - s), s);
    memcpy(name, s, (size_t)(eq - s));
    name[eq - s] = 0;
    int p = find_param(f, name);
    KILN_RETURN_IF(p < 0, KILN_ERR_INVALID_ARGUMENT, op, "%s has no parameter \"%s\" (it has: %s)",
                   f->name, name, (pthread_once(&family_names_once, init_family_names),
                                   family_param_names[fam_index(f)]));
    KILN_RETURN_IF(*mask & (1u << p), KILN_ERR_INVALID_ARGUMENT, op, "%s given twice", name);
    uint64_t v = 0;
    const char *d = eq + 1;
    int ok = d < end;
    for (; d < end && ok; d++) {
      ok = *d >= '0' && *d <= '9' && v <= (UINT64_MAX - (uint64_t)(*d - '0')) / 10;
      if (ok)
        v = v * 10 + (uint64_t)(*d - '0');
    }
    KILN_RETURN_IF(!ok || !param_value_ok(&f->params[p], v), KILN_ERR_INVALID_ARGUMENT, op,
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
  int fam, layout = -1, k = -1;
  KILN_TRY(family_arg(op, family, &fam));
  KILN_TRY(dtype_arg(op, ctx, fam, dtype));
  KILN_RETURN_IF(bucket && parse_bucket(fam_at(fam), bucket, &layout, &k) != 0,
                 KILN_ERR_INVALID_ARGUMENT, op,
                 "bucket \"%s\" is not <layout>.2^<k> with a layout of %s (%s)", bucket, family,
                 fam_at(fam)->layout_names);
  struct ovr o = {fam, dtype, layout, k, 0, {0}};
  if (params)
    KILN_TRY(parse_params(op, fam_at(fam), params, &o.mask, o.val));
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
kiln_tune_run(kiln_context *ctx, const kiln_tune_request *req, kiln_tune_progress_fn fn,
              void *user)
{
  static const char op[] = "kiln_tune_run";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!req, KILN_ERR_INVALID_ARGUMENT, op, "req is NULL");
  KILN_RETURN_IF(!ctx->queue_profiling, KILN_ERR_UNSUPPORTED, op,
                 "the context's command queue was created without CL_QUEUE_PROFILING_ENABLE");
  KILN_RETURN_IF(req->reps < 0 || req->reps > 1000, KILN_ERR_INVALID_ARGUMENT, op,
                 "reps must be 1 to 1000 (or 0 for 5), got %d", req->reps);
  KILN_RETURN_IF(profiling(ctx), KILN_ERR_INVALID_ARGUMENT, op,
                 "the context is being profiled (kiln_profile_begin); tuning would reset it");
  KILN_RETURN_IF(tl.tuning, KILN_ERR_INVALID_ARGUMENT, op, "called from inside tuning");
  int only = -1;
  if (req->family) {
    KILN_TRY(family_arg(op, req->family, &only));
    KILN_RETURN_IF(!family_available(fam_at(only), ctx), KILN_ERR_UNSUPPORTED, op,
                   "%s has nothing to choose here: it needs %s", fam_at(only)->name,
                   fam_at(only)->needs);
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
  for (int fam = 0; fam < nfam() && !req->sizes; fam++)
    if (fam_at(fam)->nsizes > max_sizes)
      max_sizes = fam_at(fam)->nsizes;
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
        if (strlen(layout_names[i]) == n && strncmp(s, layout_names[i], n) == 0)
          l = i;
      KILN_RETURN_IF(l < 0, KILN_ERR_NOT_FOUND, op,
                     "no layout \"%.*s\" (flat, full, row, col, points, mnk)", (int)n, s);
      want_layouts |= 1u << l;
      s += n;
    }
  }

  /* The keys, in family, dtype, size, layout order, without repeats. */
  uint32_t *keys =
      calloc((size_t)nfam() * ndt * max_sizes * KILN__LAYOUT_N + 1, sizeof *keys);
  KILN_RETURN_IF(!keys, KILN_ERR_HOST_MEMORY, op, "out of memory");
  size_t nkeys = 0;
  for (int fam = 0; fam < nfam(); fam++) {
    if ((only >= 0 && fam != only) || !family_available(fam_at(fam), ctx))
      continue;
    const uint64_t *sizes = req->sizes            ? req->sizes
                            : fam_at(fam)->sizes ? fam_at(fam)->sizes
                                                  : default_sizes;
    size_t nsizes = req->sizes            ? req->nsizes
                    : fam_at(fam)->sizes ? fam_at(fam)->nsizes
                                          : N_(default_sizes);
    for (size_t d = 0; d < ndt; d++) {
      if (!fam_at(fam)->dtype_ok(dts[d]) || !kiln__device_has_dtype(&ctx->info, dts[d]))
        continue;
      for (size_t si = 0; si < nsizes; si++) {
        int k = log2_floor(sizes[si]);
        for (int l = 0; l < KILN__LAYOUT_N; l++) {
          if (!(fam_at(fam)->layouts & want_layouts & (1u << l)) ||
              k < layout_min_k((enum kiln__tune_layout)l) || k > MAX_LOG2)
            continue;
          uint32_t key = pack_key(fam, dts[d], l, k);
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
    ensure_loaded(ctx, ctx->tuner);
  kiln__error_saved saved;
  kiln__error_save(&saved);
  struct tune_opts o = {req->quick != 0, req->reps ? req->reps : 5, !req->no_store, fn, user,
                        0, nkeys, 0};
  kiln_status first_store_failure = KILN_OK;
  char store_msg[2048] = "";
  int profiled = 0;
  for (size_t i = 0; i < nkeys && !o.stop; i++) {
    o.key_index = i;
    kiln_tune_result res;
    /* Each key holds the context while it is tuned; other threads' ops run between keys. */
    if (!tune_hold(ctx)) {
      profiled = 1;
      break;
    }
    kiln_status s = tune_key(ctx, (int)(keys[i] >> 24), (kiln_dtype)((keys[i] >> 16) & 0xff),
                             (int)((keys[i] >> 8) & 0xff), (int)(keys[i] & 0xff), &o, &res);
    tune_release(ctx);
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
  ensure_loaded(ctx, t);
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
  ensure_loaded(ctx, t);
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
    if (entry_key(&in.e[i], &key, &mask, val) != 0) {
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
      rec_put(t, key, KILN_TUNE_SOURCE_STORED, mask, val);
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
    kiln__log(KILN__LOG_INFO, "%s: %zu entries with unknown families, dtypes, buckets or "
                              "parameters skipped", path, bad);
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
  set_identity(t, device ? device : ctx->info.name, driver ? driver : ctx->info.driver_version);
  t->ntried = 0;
  pthread_mutex_unlock(&t->lock);
  atomic_store(&t->loaded, 0);
}

void
kiln__tune_test_sabotage(const char *family, const char *param, uint64_t value, int corrupt)
{
  memset(&sabotage, 0, sizeof sabotage);
  int fam = find_family(family);
  if (fam < 0)
    return;
  int p = find_param(fam_at(fam), param);
  if (p < 0)
    return;
  sabotage.fam = fam;
  sabotage.param = p;
  sabotage.value = value;
  sabotage.corrupt = corrupt;
  sabotage.transient_left = corrupt == 3;
  sabotage.active = 1;
}

uint64_t
kiln__tune_test_evaluations(void)
{
  return atomic_load(&evaluations);
}
