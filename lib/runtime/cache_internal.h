/*
 * Private to the disk cache's files (lib/runtime/disk_cache.c, cache_entry.c,
 * cache_dir.c, cache_stats.c, cache_admin.c): the handle, the shared limits and
 * helpers. The rest of the runtime uses runtime/disk_cache.h.
 */
#ifndef KILN_RUNTIME_CACHE_INTERNAL_H
#define KILN_RUNTIME_CACHE_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "runtime/disk_cache.h"

#define TEMP_MAX_AGE_S 3600
#define LOCK_WAIT_MS 2000
#define ENTRY_NAME_LEN 35 /* 30 hex + ".kbin" */
#define TEMP_NAME_LEN 46  /* entry name + ".tmp." + 6 */

enum problem {
  P_NO_HOME = 1,
  P_NOT_DIR,
  P_CREATE,
  P_OWNER,
  P_PERMS,
  P_READONLY,
  P_MISSING,
  P_WRITE,
  P_ENV_MODE,
  P_ENV_SIZE,
  P_ENV_STORE,
  P_NO_XXHASH,
  P_KEY,
};

struct kiln_cache {
  char *dir;     /* absolute top directory; NULL when none could be resolved */
  char *vdir;    /* dir/v<format> */
  char *req_dir; /* as requested; NULL: default resolution */
  uint32_t format;
  kiln_cache_mode requested;
  kiln_cache_mode mode;
  kiln_cache_store_policy store_policy; /* used by lib/runtime/build.c, kept across reopens */
  uint64_t max_bytes;
  char reason[256];
  int have_key;                        /* mac_key holds the directory's key */
  uint8_t mac_key[KILN__DC_KEY_BYTES]; /* DIR/key: what entries are authenticated with */
  char key_problem[512];               /* why have_key is 0 */
  pthread_mutex_t lock; /* guards the counters: contexts may be used from several threads */
  kiln_cache_counters session;
  kiln_cache_counters unsaved;
};

#define NCOUNTERS (sizeof(kiln_cache_counters) / sizeof(uint64_t))

#define COUNT(c, field, n) kiln__dc_count((c), offsetof(kiln_cache_counters, field), (n))

#define KEY_FILE "key"

struct stats_file {
  kiln_cache_counters k;
  uint64_t entries;
  uint64_t bytes;
  int64_t zeroed_at;
  char extra[2048]; /* lines of newer kiln versions, kept verbatim */
};

/* Merges the unsaved counters into the file and applies fn, under the lock. */
typedef void (*stats_edit_fn)(struct stats_file *sf, void *arg);

struct rec {
  char key[33];
  int64_t mtime_ns;
  uint64_t size;
};

struct recs {
  struct rec *v;
  size_t n, cap;
  uint64_t total;
};

enum walk_kind { W_ENTRY, W_TEMP };

/* Called with the subdirectory's fd, its name, the file name and lstat data; nonzero stops. */
typedef int (*walk_fn)(int sfd, const char *sub, const char *name, const struct stat *st,
                       enum walk_kind kind, void *arg);

struct collect_arg {
  struct recs *recs;
  int remove_stale_temps;
  uint64_t temps_removed;
  int oom;
};

struct exact_arg {
  uint64_t entries, bytes;
  uint64_t evictions;
};

struct store_delta {
  int64_t entries;
  int64_t bytes;
};

/*
 * Test hook: KILN_TEST_CACHE_KILL_AT=before-write|mid-write|before-rename|
 * after-rename makes a writer die by SIGKILL there, so tests can check that
 * no kill point leaves a visible partial entry. secure_getenv keeps it away
 * from setuid programs.
 */
void kiln__dc_fault_point(const char *where);

/*
 * Opens a directory below dfd (no link followed) and checks it like the
 * cache directory: anyone who could write into it could plant entries or
 * swap them under a reader. -1 with errno (EPERM: not trusted).
 */
int kiln__dc_open_trusted_dir(int dfd, const char *name);

/*
 * prepare_dirs, then the MAC key: made when the cache may write, else only
 * read. A context's cache without a key is off (nothing it reads could be
 * trusted, nothing it writes could be); a handle from kiln_cache_open keeps
 * working for what needs no key and reports key_problem where one is needed.
 */
kiln_status kiln__dc_prepare(kiln_cache *c, int strict, const char *op);

/*
 * Opens and reads an entry file without following links or blocking on
 * FIFOs. Returns the fd (caller closes) with *buf and *len the whole file, or
 * -1 with *why (ENOENT-type absence sets *absent).
 */
int kiln__dc_read_entry(int vfd, const char *key_hex, uint8_t **buf, size_t *len, int *absent, const char **why);

/*
 * A missing or unreadable stats file reads as zeros (counters are advisory,
 * entries are not); returns whether it was there.
 */
int kiln__dc_stats_read(int vfd, struct stats_file *sf);

/* "v<N>" with N a decimal without leading zeros; returns N or 0. */
uint32_t kiln__dc_version_dir_number(const char *n);

/* A handle with a usable key, or the error that says why there is none. */
kiln_status kiln__dc_need_key(const kiln_cache *c, const char *op);

/* Adds n to the counter at byte offset off of both the session and the unsaved set. */
void kiln__dc_count(kiln_cache *c, size_t off, uint64_t n);

/* Byte-for-byte identity compare of a parsed header against a request. */
int kiln__dc_header_matches(const struct kiln__dc_header *h, const struct kiln__dc_req *r);

/* Names kiln creates, recognised exactly so that nothing else is ever deleted. */
int kiln__dc_is_sub_name(const char *n);

/* One warning per (directory, problem) per process: a program making many contexts says it once. */
void KILN_PRINTF(3, 4) kiln__dc_warn_once(const char *dir, enum problem p, const char *fmt, ...);

/* Publishes serialised bytes, updates the tracked size and enforces the cap. */
int kiln__dc_store_bytes(kiln_cache *c, const char *key_hex, const uint8_t *bytes, size_t len);

/* Reads exactly n bytes; -1 with errno, or -2 when the file ended early. */
int kiln__dc_read_exact(int fd, uint8_t *p, size_t n);

/* Removes the entry file of key if it still is a regular file; returns 0 when it went. */
int kiln__dc_unlink_entry(int vfd, const char *key);

/* Resolves the cache directory (malloc'd) or NULL with *why set. */
char * kiln__dc_resolve_dir(const char *explicit_dir, const char **why);

/* Takes stats.lock, waiting at most LOCK_WAIT_MS: a stopped process must not stall builds. */
int kiln__dc_lock_stats(int vfd);

/* Visits every file kiln recognises in vdir's subdirectories. -1 with errno if vdir is unreadable. */
int kiln__dc_walk_vdir(int vfd, walk_fn fn, void *arg);

char * kiln__dc_join(const char *a, const char *b);

int kiln__dc_is_hex_n(const char *s, size_t n);

int kiln__dc_is_entry_name(const char *n);

int kiln__dc_is_temp_name(const char *n);

int kiln__dc_is_stats_temp_name(const char *n);

int kiln__dc_write_all(int fd, const uint8_t *p, size_t n);

int kiln__dc_open_vdir(const kiln_cache *c);

int kiln__dc_recs_push(struct recs *r, const char *sub, const char *name, const struct stat *st);

int kiln__dc_temp_is_stale(const struct stat *st);

int kiln__dc_collect_cb(int sfd, const char *sub, const char *name, const struct stat *st, enum walk_kind kind, void *arg);

int kiln__dc_rec_older(const void *pa, const void *pb);

int kiln__dc_stats_update_locked(kiln_cache *c, int vfd, stats_edit_fn fn, void *arg);

int kiln__dc_stats_update(kiln_cache *c, stats_edit_fn fn, void *arg);

kiln_status kiln__dc_need_writable(const kiln_cache *c, const char *op);

uint32_t kiln__dc_get_u32(const uint8_t *p);

void kiln__dc_to_hex(const uint8_t *bytes, size_t n, char *out);

void kiln__dc_random_suffix(char *out6);

void kiln__dc_counters_add(kiln_cache_counters *dst, const kiln_cache_counters *src);

void kiln__dc_set_exact(struct stats_file *sf, void *arg);

void kiln__dc_entry_path_parts(const char *key_hex, char sub[3], char name[ENTRY_NAME_LEN + 1]);

void kiln__dc_apply_delta(struct stats_file *sf, void *arg);

#endif
