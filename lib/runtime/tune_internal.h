/*
 * Private to the autotuner's files (lib/runtime/tuner.c: the tuned families,
 * per-context state and lookups; tune_search.c: problems, timing and the
 * search; tune_api.c: the public kiln_tune_* API and test hooks).
 */
#ifndef KILN_RUNTIME_TUNE_INTERNAL_H
#define KILN_RUNTIME_TUNE_INTERNAL_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "runtime/family.h"
#include "runtime/tune_file.h"
#include "runtime/tuner.h"

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

typedef struct {
  alignas(8) unsigned char b[KILN__TUNE_PARAMS_MAX];
} pbuf;

#define N_(a) (sizeof(a) / sizeof((a)[0]))

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

struct tune_opts {
  int quick, reps, store;
  kiln_tune_progress_fn fn;
  void *user;
  size_t key_index, key_count;
  int stop;
};

struct rec {
  uint32_t key;
  int source; /* kiln_tune_source */
  uint32_t mask;
  uint64_t val[KILN__TF_MAX_PARAMS];
};

/* Lookups that tuning itself makes on this thread: candidates are forced, nothing recurses. */
struct forced {
  const kiln_context *ctx;
  int fam; /* -1: nothing forced */
  pbuf params;
  int tuning;
};
extern _Thread_local struct forced kiln__tn_tl;

/* The sabotage test hook (kiln__tune_test_sabotage). */
struct sabotage_hook {
  int active, fam, param, corrupt;
  int transient_left; /* corrupt 3: failing runs left */
  uint64_t value;
};
extern struct sabotage_hook kiln__tn_sabotage;

/* Candidate evaluations since the process started (kiln__tune_test_evaluations). */
extern atomic_uint_fast64_t kiln__tn_evaluations;

/* The tuned families (tuner.c) and the layouts' names in bucket text. */
extern const struct kiln__tune_family *kiln__tn_tuned[KILN__FAMILY_SLOTS];
extern const char *const kiln__tn_layout_names[KILN__LAYOUT_N];

int kiln__tn_nfam(void);

const struct kiln__tune_family * kiln__tn_fam_at(int i);

int kiln__tn_param_value_ok(const struct kiln__tune_param *p, uint64_t v);

int kiln__tn_fam_index(const struct kiln__tune_family *f);

/* Whether f has a choice to make on ctx (online tuning and kiln_tune_run skip it otherwise). */
int kiln__tn_family_available(const struct kiln__tune_family *f, const kiln_context *ctx);

/* Smallest bucket exponent of a layout: rows and columns need at least 2 x 2 elements. */
int kiln__tn_layout_min_k(enum kiln__tune_layout l);

uint64_t kiln__tn_pget(const struct kiln__tune_param *p, const void *s);

void kiln__tn_pset(const struct kiln__tune_param *p, void *s, uint64_t v);

int kiln__tn_find_family(const char *name);

int kiln__tn_find_param(const struct kiln__tune_family *f, const char *name);

int kiln__tn_log2_floor(uint64_t v);

/* "<layout>.2^<k>" into layout and k; 0, or -1 when malformed or not one of f's layouts. */
int kiln__tn_parse_bucket(const struct kiln__tune_family *f, const char *s, int *layout, int *k);

void kiln__tn_bucket_text(int layout, int k, char *buf, size_t len);

/* "name=value ..." of every parameter of f in params. */
void kiln__tn_params_text(const struct kiln__tune_family *f, const void *params, char *buf, size_t len);

uint32_t kiln__tn_pack_key(int fam, kiln_dtype dtype, int layout, int k);

void kiln__tn_set_identity(struct kiln__tuner *t, const char *device, const char *driver);

/* The key of a file entry, or -1 (unknown family, dtype, bucket; bad parameters). */
int kiln__tn_entry_key(const struct kiln__tf_entry *e, uint32_t *key, uint32_t *mask, uint64_t *val);

/* Adds or replaces the record of key (t->lock held). */
void kiln__tn_rec_put(struct kiln__tuner *t, uint32_t key, int source, uint32_t mask, const uint64_t *val);

void kiln__tn_ensure_loaded(kiln_context *ctx, struct kiln__tuner *t);

int kiln__tn_profiling(kiln_context *ctx);

/*
 * Takes the context for the tuning of one key: ctx->lock (recursive) stays
 * held until kiln__tn_tune_release(), so other threads' ops on the context wait
 * instead of landing in the candidates' profiling windows, and no second
 * tuning on another thread can begin or end a profile in the middle of this
 * one's. Returns 0 (lock not held) when the caller profiles the context:
 * tuning would reset the recording.
 */
int kiln__tn_tune_hold(kiln_context *ctx);

void kiln__tn_tune_release(kiln_context *ctx);

/*
 * The parameters of a key: defaults, then stored (unless mode OFF), then
 * overrides. *online_wanted (online_wanted may be NULL: never): mode ONLINE,
 * nothing stored or overridden, and a problem large enough to be worth it.
 */
int kiln__tn_resolve(kiln_context *ctx, int fam, kiln_dtype dtype, int layout, int k, void *params, int *online_wanted);

/* Tunes one key (see kiln_tune_run). res is filled whatever happens. */
kiln_status kiln__tn_tune_key(kiln_context *ctx, int fam, kiln_dtype dtype, int layout, int k, struct tune_opts *o, kiln_tune_result *res);

#endif
