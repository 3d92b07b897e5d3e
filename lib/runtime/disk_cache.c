/*
 * The kernel cache's file layer (see disk_cache.h for the layout and format,
 * docs/cache.md for the behaviour). No OpenCL calls here.
 *
 * Concurrency model, after ccache: readers take no lock and trust nothing
 * they read (whole-file MAC, byte-for-byte identity compare); writers
 * publish by rename() of a uniquely named temp file in the target
 * directory, so a reader sees the old file or the new one, never a mix, and
 * a writer killed at any point leaves at most a temp file that cleanup
 * reclaims. The only lock, stats.lock, serialises updates of the small stats
 * file and eviction; it is taken when storing (after a compile, so its cost
 * is noise) and when a handle closes, never on a hit.
 *
 * There is no fsync/fdatasync before the rename: a power loss can leave a
 * renamed entry with missing data, which the MAC turns into a miss and a
 * rebuild, so durability would buy nothing but latency (Mesa and ccache
 * decide the same).
 *
 * Trust: on a CPU device a binary is host code, so an entry is handed to
 * the driver only when its MAC verifies under the directory's secret key
 * (DIR/key). The key hash and file names are computed from public inputs and
 * prove nothing against someone who can write an entry or an archive; the
 * MAC does, as long as the key file stays private.
 *
 * Paths below the cache directory are opened relative to directory file
 * descriptors with O_NOFOLLOW, so a symbolic link planted inside the cache
 * is never followed; the cache directory itself may be a link (users
 * relocate ~/.cache that way).
 */
#include "runtime/cache_internal.h"


#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/log.h"
#include "kiln_config.h"

#include <sodium.h>

#if KILN_HAVE_XXHASH
#include <xxhash.h>
#endif

/* ---------------------------------------------------------------- the handle */

void
kiln__dc_counters_add(kiln_cache_counters *dst, const kiln_cache_counters *src)
{
  uint64_t *d = (uint64_t *)dst;
  const uint64_t *s = (const uint64_t *)src;
  for (size_t i = 0; i < NCOUNTERS; i++)
    d[i] += s[i];
}

/* Adds n to the counter at byte offset off of both the session and the unsaved set. */
void
kiln__dc_count(kiln_cache *c, size_t off, uint64_t n)
{
  if (!c)
    return;
  pthread_mutex_lock(&c->lock);
  *(uint64_t *)((char *)&c->session + off) += n;
  *(uint64_t *)((char *)&c->unsaved + off) += n;
  pthread_mutex_unlock(&c->lock);
}

/* ---------------------------------------------------------------- the MAC key */

static kiln_cache *
cache_alloc(const char *req_dir, kiln_cache_mode mode, uint64_t max_bytes)
{
  kiln_cache *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  if (req_dir && !(c->req_dir = strdup(req_dir))) {
    free(c);
    return NULL;
  }
  pthread_mutex_init(&c->lock, NULL);
  c->requested = c->mode = mode;
  c->max_bytes = max_bytes;
  c->format = kiln__dc_format();
  return c;
}

static void
cache_free(kiln_cache *c)
{
  sodium_memzero(c->mac_key, sizeof c->mac_key);
  pthread_mutex_destroy(&c->lock);
  free(c->dir);
  free(c->vdir);
  free(c->req_dir);
  free(c);
}

static int
set_dirs(kiln_cache *c, const char **why)
{
  c->dir = kiln__dc_resolve_dir(c->req_dir, why);
  if (!c->dir)
    return -1;
  char v[16];
  snprintf(v, sizeof v, "v%" PRIu32, c->format);
  c->vdir = kiln__dc_join(c->dir, v);
  if (!c->vdir) {
    *why = "out of memory";
    return -1;
  }
  return 0;
}

kiln_cache *
kiln__dc_open_degrading(const char *dir, kiln_cache_mode mode, uint64_t max_bytes)
{
  kiln_cache *c = cache_alloc(dir, mode, max_bytes);
  if (!c)
    return NULL;
#if !KILN_HAVE_XXHASH
  if (mode != KILN_CACHE_OFF) {
    snprintf(c->reason, sizeof c->reason, "kiln was built without xxHash");
    c->mode = KILN_CACHE_OFF;
    kiln__dc_warn_once("", P_NO_XXHASH, "kiln was built without xxHash; running without a disk cache");
  }
  return c;
#endif
  const char *why = "out of memory";
  if (set_dirs(c, &why) != 0) {
    if (mode != KILN_CACHE_OFF) {
      snprintf(c->reason, sizeof c->reason, "%s", why);
      c->mode = KILN_CACHE_OFF;
      kiln__dc_warn_once("", P_NO_HOME, "%s; running without a disk cache", why);
    }
    return c;
  }
  if (mode != KILN_CACHE_OFF)
    kiln__dc_prepare(c, 0, "kiln cache");
  return c;
}

kiln_cache *
kiln__dc_reopen(kiln_cache *old, const char *dir, int keep_dir, kiln_cache_mode mode)
{
  kiln_cache *c = kiln__dc_open_degrading(keep_dir ? old->req_dir : dir, mode, old->max_bytes);
  if (!c)
    return NULL;
  pthread_mutex_lock(&old->lock);
  c->session = old->session;
  pthread_mutex_unlock(&old->lock);
  c->store_policy = old->store_policy;
  kiln_cache_close(old);
  return c;
}

kiln_cache_mode
kiln__dc_mode(const kiln_cache *c)
{
  return c ? c->mode : KILN_CACHE_OFF;
}

kiln_cache_mode
kiln__dc_requested_mode(const kiln_cache *c)
{
  return c ? c->requested : KILN_CACHE_OFF;
}

kiln_cache_store_policy
kiln__dc_store_policy(const kiln_cache *c)
{
  return c ? c->store_policy : KILN_CACHE_STORE_AUTO;
}

void
kiln__dc_set_store_policy(kiln_cache *c, kiln_cache_store_policy policy)
{
  if (c)
    c->store_policy = policy;
}

uint64_t
kiln__dc_max_bytes(const kiln_cache *c)
{
  return c ? c->max_bytes : 0;
}

const char *
kiln__dc_requested_dir(const kiln_cache *c)
{
  return c ? c->req_dir : NULL;
}

const char *
kiln__dc_dir(const kiln_cache *c)
{
  return c ? c->dir : NULL;
}

kiln_status
kiln_cache_open(const char *dir, kiln_cache_mode mode, kiln_cache **out)
{
  static const char op[] = "kiln_cache_open";
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  *out = NULL;
  KILN_RETURN_IF(mode != KILN_CACHE_ON && mode != KILN_CACHE_READONLY, KILN_ERR_INVALID_ARGUMENT,
                 op, "mode must be KILN_CACHE_ON or KILN_CACHE_READONLY (got %d)", (int)mode);
#if !KILN_HAVE_XXHASH
  (void)dir;
  return kiln__fail(KILN_ERR_UNSUPPORTED, op, 0, "kiln was built without xxHash: no disk cache");
#else
  kiln_cache *c = cache_alloc(dir, mode, kiln__dc_env_max_bytes());
  KILN_RETURN_IF(!c, KILN_ERR_HOST_MEMORY, op, "cannot allocate a cache handle");
  const char *why = "out of memory";
  if (set_dirs(c, &why) != 0) {
    cache_free(c);
    return kiln__fail(strcmp(why, "out of memory") ? KILN_ERR_NOT_FOUND : KILN_ERR_HOST_MEMORY, op,
                      0, "%s", why);
  }
  kiln_status s = kiln__dc_prepare(c, 1, op);
  if (s != KILN_OK) {
    cache_free(c);
    return s;
  }
  *out = c;
  return KILN_OK;
#endif
}

kiln_status
kiln_cache_set_max_bytes(kiln_cache *cache, uint64_t max_bytes)
{
  static const char op[] = "kiln_cache_set_max_bytes";
  KILN_RETURN_IF(!cache, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(max_bytes > (uint64_t)INT64_MAX, KILN_ERR_INVALID_ARGUMENT, op,
                 "cap of %" PRIu64 " bytes is above the largest (2^63 - 1)", max_bytes);
  cache->max_bytes = max_bytes;
  return KILN_OK;
}

/* ---------------------------------------------------------------- walking the entries */

int
kiln__dc_recs_push(struct recs *r, const char *sub, const char *name, const struct stat *st)
{
  if (r->n == r->cap) {
    size_t ncap = r->cap ? r->cap * 2 : 256;
    struct rec *nv = realloc(r->v, ncap * sizeof *nv);
    if (!nv)
      return -1;
    r->v = nv;
    r->cap = ncap;
  }
  struct rec *e = &r->v[r->n++];
  memcpy(e->key, sub, 2);
  memcpy(e->key + 2, name, 30);
  e->key[32] = 0;
  e->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
  e->size = (uint64_t)st->st_size;
  r->total += e->size;
  return 0;
}

/* Visits every file kiln recognises in vdir's subdirectories. -1 with errno if vdir is unreadable. */
int
kiln__dc_walk_vdir(int vfd, walk_fn fn, void *arg)
{
  int dfd = dup(vfd);
  if (dfd < 0)
    return -1;
  DIR *d = fdopendir(dfd);
  if (!d) {
    close(dfd);
    return -1;
  }
  rewinddir(d);
  struct dirent *de;
  int stop = 0;
  while (!stop && (de = readdir(d))) {
    if (!kiln__dc_is_sub_name(de->d_name))
      continue;
    int sfd = kiln__dc_open_trusted_dir(vfd, de->d_name);
    if (sfd < 0)
      continue;
    DIR *sd = fdopendir(sfd);
    if (!sd) {
      close(sfd);
      continue;
    }
    struct dirent *fe;
    while (!stop && (fe = readdir(sd))) {
      enum walk_kind kind;
      if (kiln__dc_is_entry_name(fe->d_name))
        kind = W_ENTRY;
      else if (kiln__dc_is_temp_name(fe->d_name))
        kind = W_TEMP;
      else
        continue;
      struct stat st;
      if (fstatat(sfd, fe->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        continue;
      stop = fn(sfd, de->d_name, fe->d_name, &st, kind, arg);
    }
    closedir(sd);
  }
  closedir(d);
  return 0;
}

int
kiln__dc_temp_is_stale(const struct stat *st)
{
  return S_ISREG(st->st_mode) && time(NULL) - st->st_mtim.tv_sec > TEMP_MAX_AGE_S;
}

int
kiln__dc_collect_cb(int sfd, const char *sub, const char *name, const struct stat *st, enum walk_kind kind,
           void *arg)
{
  struct collect_arg *a = arg;
  if (kind == W_TEMP) {
    if (a->remove_stale_temps && kiln__dc_temp_is_stale(st) && unlinkat(sfd, name, 0) == 0)
      a->temps_removed++;
    return 0;
  }
  if (!S_ISREG(st->st_mode))
    return 0;
  if (kiln__dc_recs_push(a->recs, sub, name, st) != 0) {
    a->oom = 1;
    return 1;
  }
  return 0;
}

int
kiln__dc_rec_older(const void *pa, const void *pb)
{
  const struct rec *a = pa, *b = pb;
  if (a->mtime_ns != b->mtime_ns)
    return a->mtime_ns < b->mtime_ns ? -1 : 1;
  return strcmp(a->key, b->key);
}

/* Removes the entry file of key if it still is a regular file; returns 0 when it went. */
int
kiln__dc_unlink_entry(int vfd, const char *key)
{
  char sub[3] = {key[0], key[1], 0};
  char name[ENTRY_NAME_LEN + 1];
  snprintf(name, sizeof name, "%.30s.kbin", key + 2);
  int sfd = kiln__dc_open_trusted_dir(vfd, sub);
  if (sfd < 0)
    return -1;
  struct stat st;
  int r = -1;
  if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
    r = unlinkat(sfd, name, 0);
  else
    errno = ENOENT;
  int e = errno;
  close(sfd);
  errno = e;
  return r;
}

void
kiln__dc_set_exact(struct stats_file *sf, void *arg)
{
  struct exact_arg *a = arg;
  sf->entries = a->entries;
  sf->bytes = a->bytes;
  sf->k.evictions += a->evictions;
}

/*
 * With stats.lock held: walks the entries, removes stale temp files and,
 * when over the cap, the least recently used entries down to 90% of it
 * (the slack keeps a full cache from walking on every store), never the
 * entry just written. Writes the exact count and size it found.
 */
static void
evict_locked(kiln_cache *c, int vfd, const char *keep_key)
{
  struct recs r = {0};
  struct collect_arg a = {.recs = &r, .remove_stale_temps = 1};
  if (kiln__dc_walk_vdir(vfd, kiln__dc_collect_cb, &a) != 0 || a.oom) {
    free(r.v);
    return;
  }
  struct exact_arg ex = {.entries = r.n, .bytes = r.total};
  if (c->max_bytes && r.total > c->max_bytes) {
    qsort(r.v, r.n, sizeof *r.v, kiln__dc_rec_older);
    uint64_t target = c->max_bytes - c->max_bytes / 10;
    for (size_t i = 0; i < r.n && ex.bytes > target; i++) {
      if (keep_key && strcmp(r.v[i].key, keep_key) == 0)
        continue;
      if (kiln__dc_unlink_entry(vfd, r.v[i].key) == 0) {
        ex.entries--;
        ex.bytes -= r.v[i].size;
        ex.evictions++;
      }
    }
  }
  free(r.v);
  pthread_mutex_lock(&c->lock);
  c->session.evictions += ex.evictions;
  pthread_mutex_unlock(&c->lock);
  kiln__dc_stats_update_locked(c, vfd, kiln__dc_set_exact, &ex);
}

/* ---------------------------------------------------------------- lookup */

void
kiln__dc_entry_path_parts(const char *key_hex, char sub[3], char name[ENTRY_NAME_LEN + 1])
{
  sub[0] = key_hex[0];
  sub[1] = key_hex[1];
  sub[2] = 0;
  snprintf(name, ENTRY_NAME_LEN + 1, "%.30s.kbin", key_hex + 2);
}

/*
 * Opens and reads an entry file without following links or blocking on
 * FIFOs. Returns the fd (caller closes) with *buf and *len the whole file, or
 * -1 with *why (ENOENT-type absence sets *absent).
 */
int
kiln__dc_read_entry(int vfd, const char *key_hex, uint8_t **buf, size_t *len, int *absent, const char **why)
{
  char sub[3], name[ENTRY_NAME_LEN + 1];
  kiln__dc_entry_path_parts(key_hex, sub, name);
  *absent = 0;
  *buf = NULL;
  int sfd = kiln__dc_open_trusted_dir(vfd, sub);
  if (sfd < 0) {
    *absent = errno == ENOENT;
    *why = errno == EPERM ? "its subdirectory is not trusted (not ours, or writable by others)"
                          : "subdirectory cannot be opened";
    return -1;
  }
  int fd = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  int e = errno;
  close(sfd);
  if (fd < 0) {
    *absent = e == ENOENT;
    *why = e == ELOOP ? "a symbolic link in place of the entry" : "cannot be opened";
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    *why = "not a regular file";
    close(fd);
    return -1;
  }
  if ((uint64_t)st.st_size < KILN__DC_FIXED + KILN__DC_TRAILER ||
      (uint64_t)st.st_size > KILN__DC_MAX_HEADER + KILN__DC_MAX_PAYLOAD + KILN__DC_TRAILER) {
    *why = "file size out of range";
    close(fd);
    return -1;
  }
  size_t n = (size_t)st.st_size;
  uint8_t *b = malloc(n + 1);
  if (!b) {
    *why = "out of memory";
    close(fd);
    return -1;
  }
  /* One byte more than fstat said: a file that grows meanwhile is caught, not silently cut. */
  int r = kiln__dc_read_exact(fd, b, n);
  uint8_t extra;
  if (r != 0 || read(fd, &extra, 1) != 0) {
    *why = r == -2 ? "truncated while reading" : r ? "read error" : "grew while reading";
    free(b);
    close(fd);
    return -1;
  }
  *buf = b;
  *len = n;
  return fd;
}

enum kiln__dc_found
kiln__dc_lookup(kiln_cache *c, const struct kiln__dc_req *r, unsigned flags, void **bufp,
                const void **payload, size_t *payload_len)
{
  *bufp = NULL;
  *payload = NULL;
  *payload_len = 0;
  if (!c || c->mode == KILN_CACHE_OFF)
    return KILN__DC_MISS;
  int counted = !(flags & KILN__DC_NOCOUNT);
  int vfd = kiln__dc_open_vdir(c);
  if (vfd < 0) {
    if (counted)
      COUNT(c, misses, 1);
    return KILN__DC_MISS;
  }
  uint8_t *buf;
  size_t len;
  int absent;
  const char *why = "";
  int fd = kiln__dc_read_entry(vfd, r->key_hex, &buf, &len, &absent, &why);
  close(vfd);
  enum kiln__dc_found res;
  struct kiln__dc_header h;
  if (fd < 0) {
    res = absent ? KILN__DC_MISS : KILN__DC_BAD;
  } else if (kiln__dc_parse(buf, len, len, 1, r->format, kiln__dc_mac_key(c), &h, &why) != 0) {
    res = KILN__DC_BAD;
  } else if (!kiln__dc_header_matches(&h, r)) {
    why = "identity differs from the request";
    res = KILN__DC_BAD;
  } else {
    res = KILN__DC_HIT;
  }
  if (res == KILN__DC_HIT) {
    /* mtime is the LRU clock: atime is unreliable under noatime/relatime. */
    if (c->mode == KILN_CACHE_ON && futimens(fd, NULL) != 0)
      kiln__log(KILN__LOG_DEBUG, "kernel cache: cannot touch entry %s: %s", r->key_hex,
                strerror(errno));
    *bufp = buf;
    *payload = h.payload;
    *payload_len = (size_t)h.payload_size;
    if (counted && !(flags & KILN__DC_DEFER_HIT))
      kiln__dc_note_hit(c, len);
  } else {
    free(buf);
    if (res == KILN__DC_BAD)
      kiln__log(KILN__LOG_DEBUG, "kernel cache: entry %s refused: %s", r->key_hex, why);
    if (counted) {
      COUNT(c, misses, 1);
      if (res == KILN__DC_BAD)
        COUNT(c, corrupt, 1);
    }
  }
  if (fd >= 0)
    close(fd);
  return res;
}

void
kiln__dc_note_hit(kiln_cache *c, size_t entry_bytes)
{
  COUNT(c, hits, 1);
  COUNT(c, bytes_read, entry_bytes);
}

void
kiln__dc_note_rejected(kiln_cache *c)
{
  COUNT(c, misses, 1);
  COUNT(c, rejected, 1);
}

void
kiln__dc_note_uncached(kiln_cache *c)
{
  COUNT(c, uncached, 1);
}

void
kiln__dc_note_store_failure(kiln_cache *c)
{
  COUNT(c, store_failures, 1);
}

/* ---------------------------------------------------------------- publishing */

void
kiln__dc_apply_delta(struct stats_file *sf, void *arg)
{
  const struct store_delta *d = arg;
  sf->entries = (uint64_t)((int64_t)sf->entries + d->entries < 0 ? 0 : (int64_t)sf->entries + d->entries);
  sf->bytes = (uint64_t)((int64_t)sf->bytes + d->bytes < 0 ? 0 : (int64_t)sf->bytes + d->bytes);
}

/*
 * Writes bytes as the entry for key_hex: unique temp file, write, close,
 * rename over the final name. Returns 0, or an errno value (temp removed).
 * *old_size receives the size of a replaced regular file, or -1.
 */
static int
publish(int vfd, const char *key_hex, const uint8_t *bytes, size_t len, int64_t *old_size)
{
  char sub[3], name[ENTRY_NAME_LEN + 1], tmp[TEMP_NAME_LEN + 1];
  kiln__dc_entry_path_parts(key_hex, sub, name);
  *old_size = -1;
  if (mkdirat(vfd, sub, 0700) != 0 && errno != EEXIST)
    return errno;
  int sfd = kiln__dc_open_trusted_dir(vfd, sub);
  if (sfd < 0)
    return errno;
  int fd = -1, e = 0;
  for (int tries = 0; fd < 0 && tries < 32; tries++) {
    memcpy(tmp, name, ENTRY_NAME_LEN);
    memcpy(tmp + ENTRY_NAME_LEN, ".tmp.", 5);
    kiln__dc_random_suffix(tmp + ENTRY_NAME_LEN + 5);
    tmp[TEMP_NAME_LEN] = 0;
    fd = openat(sfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0) {
    e = errno;
    close(sfd);
    return e;
  }
  kiln__dc_fault_point("before-write");
  size_t half = len / 2;
  if (kiln__dc_write_all(fd, bytes, half) != 0)
    e = errno;
  if (!e)
    kiln__dc_fault_point("mid-write");
  if (!e && kiln__dc_write_all(fd, bytes + half, len - half) != 0)
    e = errno;
  /* close() can be where NFS reports a failed write. */
  if (close(fd) != 0 && !e)
    e = errno;
  if (!e)
    kiln__dc_fault_point("before-rename");
  struct stat st;
  if (!e && fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISREG(st.st_mode))
      *old_size = st.st_size;
    else if (S_ISDIR(st.st_mode) && unlinkat(sfd, name, AT_REMOVEDIR) != 0)
      e = errno; /* a non-empty directory is not ours to delete */
  }
  if (!e && renameat(sfd, tmp, sfd, name) != 0)
    e = errno;
  if (e)
    unlinkat(sfd, tmp, 0);
  close(sfd);
  if (!e)
    kiln__dc_fault_point("after-rename");
  return e;
}

/* Publishes serialised bytes, updates the tracked size and enforces the cap. */
int
kiln__dc_store_bytes(kiln_cache *c, const char *key_hex, const uint8_t *bytes, size_t len)
{
  if (c->max_bytes && len > c->max_bytes) {
    kiln__log(KILN__LOG_DEBUG, "kernel cache: entry %s (%zu bytes) exceeds the cap; not stored",
              key_hex, len);
    COUNT(c, store_failures, 1);
    errno = EFBIG;
    return -1;
  }
  int vfd = kiln__dc_open_vdir(c);
  if (vfd < 0) {
    /* The format directory vanished (cleared by hand): recreate it once. */
    if ((mkdir(c->vdir, 0700) != 0 && errno != EEXIST) || (vfd = kiln__dc_open_vdir(c)) < 0) {
      COUNT(c, store_failures, 1);
      return -1;
    }
  }
  int64_t old;
  int e = publish(vfd, key_hex, bytes, len, &old);
  if (e) {
    close(vfd);
    COUNT(c, store_failures, 1);
    if (e == ENOTEMPTY || e == EEXIST || e == EISDIR)
      kiln__log(KILN__LOG_DEBUG, "kernel cache: a directory occupies entry %s; not stored",
                key_hex);
    else
      kiln__dc_warn_once(c->dir, P_WRITE, "cannot write to cache directory %s (%s); entries are not stored",
                c->dir, strerror(e));
    errno = e;
    return -1;
  }
  COUNT(c, stores, 1);
  COUNT(c, bytes_written, len);
  struct store_delta d = {old < 0 ? 1 : 0, (int64_t)len - (old < 0 ? 0 : old)};
  int lk = kiln__dc_lock_stats(vfd);
  if (lk >= 0) {
    struct stats_file sf;
    /* Without a stats file the tracked size is unknown: recount (evict_locked does) instead of guessing. */
    if (!kiln__dc_stats_read(vfd, &sf))
      evict_locked(c, vfd, key_hex);
    else if (kiln__dc_stats_update_locked(c, vfd, kiln__dc_apply_delta, &d) == 0 && kiln__dc_stats_read(vfd, &sf) &&
             c->max_bytes && sf.bytes > c->max_bytes)
      evict_locked(c, vfd, key_hex);
    close(lk);
  }
  close(vfd);
  return 0;
}

int
kiln__dc_store(kiln_cache *c, const struct kiln__dc_req *r, const void *payload, size_t len)
{
  if (!c || c->mode != KILN_CACHE_ON)
    return -1;
  uint8_t *bytes;
  size_t n = kiln__dc_serialize(r, payload, len, (int64_t)time(NULL), kiln__dc_mac_key(c), &bytes);
  if (!n) {
    COUNT(c, store_failures, 1);
    return -1;
  }
  int rc = kiln__dc_store_bytes(c, r->key_hex, bytes, n);
  free(bytes);
  return rc;
}

kiln_status
kiln_cache_close(kiln_cache *cache)
{
  if (!cache)
    return KILN_OK;
  kiln_cache_counters zero = {0};
  if (cache->mode == KILN_CACHE_ON && memcmp(&cache->unsaved, &zero, sizeof zero) != 0)
    kiln__dc_stats_update(cache, NULL, NULL);
  cache_free(cache);
  return KILN_OK;
}
