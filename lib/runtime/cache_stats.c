/* The cache's counters: the statistics file under stats.lock and kiln_cache_stats_*. */
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

/* ---------------------------------------------------------------- statistics file */

static const struct {
  const char *name;
  size_t off;
} stat_fields[] = {
#define F(n, label, is_bytes) {#n, offsetof(struct stats_file, k.n)},
    KILN_CACHE_COUNTERS(F)
#undef F
    {"entries", offsetof(struct stats_file, entries)},
    {"bytes", offsetof(struct stats_file, bytes)},
    {"zeroed_at", offsetof(struct stats_file, zeroed_at)},
};

/*
 * A missing or unreadable stats file reads as zeros (counters are advisory,
 * entries are not); returns whether it was there.
 */
int
kiln__dc_stats_read(int vfd, struct stats_file *sf)
{
  memset(sf, 0, sizeof *sf);
  int fd = openat(vfd, "stats", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return 0;
  char buf[8192];
  size_t n = 0;
  for (;;) {
    ssize_t r = read(fd, buf + n, sizeof buf - 1 - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    n += (size_t)r;
    if (n == sizeof buf - 1)
      break;
  }
  close(fd);
  buf[n] = 0;
  size_t extra_len = 0;
  for (char *line = buf, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next)
      *next++ = 0;
    if (line[0] == '#' || !line[0])
      continue;
    char name[64];
    unsigned long long v;
    if (sscanf(line, "%63s %llu", name, &v) != 2)
      continue;
    size_t i;
    for (i = 0; i < sizeof stat_fields / sizeof stat_fields[0]; i++) {
      if (strcmp(name, stat_fields[i].name) == 0) {
        memcpy((char *)sf + stat_fields[i].off, &(uint64_t){v}, sizeof(uint64_t));
        break;
      }
    }
    size_t ll = strlen(line);
    if (i == sizeof stat_fields / sizeof stat_fields[0] && extra_len + ll + 2 < sizeof sf->extra) {
      memcpy(sf->extra + extra_len, line, ll);
      sf->extra[extra_len + ll] = '\n';
      extra_len += ll + 1;
      sf->extra[extra_len] = 0;
    }
  }
  return 1;
}

static int
stats_write(int vfd, const struct stats_file *sf)
{
  char buf[8192];
  int n = snprintf(buf, sizeof buf, "# kiln kernel cache statistics (format 1)\n");
  for (size_t i = 0; i < sizeof stat_fields / sizeof stat_fields[0]; i++) {
    uint64_t v;
    memcpy(&v, (const char *)sf + stat_fields[i].off, sizeof v);
    n += snprintf(buf + n, sizeof buf - (size_t)n, "%s %" PRIu64 "\n", stat_fields[i].name, v);
  }
  n += snprintf(buf + n, sizeof buf - (size_t)n, "%s", sf->extra);
  char tmp[32] = "stats.tmp.";
  int fd = -1;
  for (int tries = 0; fd < 0 && tries < 16; tries++) {
    kiln__dc_random_suffix(tmp + 10);
    tmp[16] = 0;
    fd = openat(vfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST)
      return -1;
  }
  if (fd < 0)
    return -1;
  int bad = kiln__dc_write_all(fd, (const uint8_t *)buf, (size_t)n) != 0;
  bad |= close(fd) != 0;
  if (bad || renameat(vfd, tmp, vfd, "stats") != 0) {
    unlinkat(vfd, tmp, 0);
    return -1;
  }
  return 0;
}

/* Takes stats.lock, waiting at most LOCK_WAIT_MS: a stopped process must not stall builds. */
int
kiln__dc_lock_stats(int vfd)
{
  int fd = openat(vfd, "stats.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return -1;
  for (int waited = 0;; waited++) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
      return fd;
    if ((errno != EWOULDBLOCK && errno != EINTR) || waited >= LOCK_WAIT_MS)
      break;
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  close(fd);
  return -1;
}

int
kiln__dc_stats_update_locked(kiln_cache *c, int vfd, stats_edit_fn fn, void *arg)
{
  struct stats_file sf;
  kiln__dc_stats_read(vfd, &sf);
  pthread_mutex_lock(&c->lock);
  kiln_cache_counters pending = c->unsaved;
  memset(&c->unsaved, 0, sizeof c->unsaved);
  pthread_mutex_unlock(&c->lock);
  kiln__dc_counters_add(&sf.k, &pending);
  if (fn)
    fn(&sf, arg);
  if (stats_write(vfd, &sf) != 0) {
    pthread_mutex_lock(&c->lock);
    kiln__dc_counters_add(&c->unsaved, &pending);
    pthread_mutex_unlock(&c->lock);
    return -1;
  }
  return 0;
}

int
kiln__dc_stats_update(kiln_cache *c, stats_edit_fn fn, void *arg)
{
  if (c->mode != KILN_CACHE_ON || !c->vdir)
    return -1;
  int vfd = kiln__dc_open_vdir(c);
  if (vfd < 0)
    return -1;
  int lk = kiln__dc_lock_stats(vfd);
  int r = -1;
  if (lk >= 0) {
    r = kiln__dc_stats_update_locked(c, vfd, fn, arg);
    close(lk);
  }
  close(vfd);
  return r;
}

/* ---------------------------------------------------------------- public: stats */

static void
fill_stats(kiln_cache *c, kiln_cache_stats *out)
{
  memset(out, 0, sizeof *out);
  out->requested_mode = c->requested;
  out->mode = c->mode;
  snprintf(out->reason, sizeof out->reason, "%s", c->reason);
  snprintf(out->dir, sizeof out->dir, "%s", c->dir ? c->dir : "");
  out->max_bytes = c->max_bytes;
  struct stats_file sf;
  memset(&sf, 0, sizeof sf);
  int vfd = c->vdir && c->mode != KILN_CACHE_OFF ? kiln__dc_open_vdir(c) : -1;
  if (vfd >= 0) {
    kiln__dc_stats_read(vfd, &sf);
    close(vfd);
  }
  out->entries = sf.entries;
  out->bytes = sf.bytes;
  out->zeroed_at = sf.zeroed_at;
  pthread_mutex_lock(&c->lock);
  out->session = c->session;
  out->persistent = sf.k;
  kiln__dc_counters_add(&out->persistent, &c->unsaved);
  pthread_mutex_unlock(&c->lock);
}

kiln_status
kiln_cache_stats_get(kiln_cache *cache, kiln_cache_stats *out)
{
  static const char op[] = "kiln_cache_stats_get";
  KILN_RETURN_IF(!cache, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  fill_stats(cache, out);
  return KILN_OK;
}

kiln_status
kiln__dc_need_writable(const kiln_cache *c, const char *op)
{
  KILN_RETURN_IF(!c, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(c->mode != KILN_CACHE_ON, KILN_ERR_UNSUPPORTED, op,
                 "cache %s is open read-only", c->dir ? c->dir : "(none)");
  return KILN_OK;
}

/* A handle with a usable key, or the error that says why there is none. */
kiln_status
kiln__dc_need_key(const kiln_cache *c, const char *op)
{
  KILN_RETURN_IF(!c->have_key, KILN_ERR_UNSUPPORTED, op, "%s: entries cannot be authenticated",
                 c->key_problem);
  return KILN_OK;
}

static void
zero_counters(struct stats_file *sf, void *arg)
{
  (void)arg;
  memset(&sf->k, 0, sizeof sf->k);
  sf->zeroed_at = (int64_t)time(NULL);
}

kiln_status
kiln_cache_stats_zero(kiln_cache *cache)
{
  static const char op[] = "kiln_cache_stats_zero";
  KILN_TRY(kiln__dc_need_writable(cache, op));
  if (kiln__dc_stats_update(cache, zero_counters, NULL) != 0)
    return kiln__fail(KILN_ERR_IO, op, errno, "cannot update %s/stats: %s", cache->vdir,
                      strerror(errno));
  pthread_mutex_lock(&cache->lock);
  memset(&cache->session, 0, sizeof cache->session);
  memset(&cache->unsaved, 0, sizeof cache->unsaved);
  pthread_mutex_unlock(&cache->lock);
  return KILN_OK;
}

kiln_status
kiln_cache_recount(kiln_cache *cache, kiln_cache_stats *out)
{
  static const char op[] = "kiln_cache_recount";
  KILN_TRY(kiln__dc_need_writable(cache, op));
  int vfd = kiln__dc_open_vdir(cache);
  if (vfd < 0)
    return kiln__fail(KILN_ERR_IO, op, errno, "cannot open %s: %s", cache->vdir, strerror(errno));
  int lk = kiln__dc_lock_stats(vfd);
  if (lk < 0) {
    int e = errno;
    close(vfd);
    return kiln__fail(KILN_ERR_IO, op, e, "cannot lock %s/stats.lock: %s", cache->vdir,
                      strerror(e));
  }
  struct recs r = {0};
  struct collect_arg a = {.recs = &r};
  int w = kiln__dc_walk_vdir(vfd, kiln__dc_collect_cb, &a);
  struct exact_arg ex = {.entries = r.n, .bytes = r.total};
  free(r.v);
  kiln_status s = KILN_OK;
  if (w != 0 || a.oom)
    s = kiln__fail(a.oom ? KILN_ERR_HOST_MEMORY : KILN_ERR_IO, op, errno, "cannot walk %s",
                   cache->vdir);
  else if (kiln__dc_stats_update_locked(cache, vfd, kiln__dc_set_exact, &ex) != 0)
    s = kiln__fail(KILN_ERR_IO, op, errno, "cannot write %s/stats: %s", cache->vdir,
                   strerror(errno));
  close(lk);
  close(vfd);
  if (s == KILN_OK && out)
    fill_stats(cache, out);
  return s;
}
