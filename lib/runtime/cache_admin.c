/* The maintenance API: entries listed, read, written and removed; verify, prune, clear. */
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

/* ---------------------------------------------------------------- public: entries */

/* An entry descriptor with its strings, built from a file. */
struct desc {
  kiln_cache_entry e;
  char path[4200];
  char problem[128];
  char *strings; /* NUL-terminated copies of the header strings */
};

static const char *const empty = "";

static void
desc_init(struct desc *d, const char *vdir, const char *key, const struct stat *st)
{
  memset(&d->e, 0, sizeof d->e);
  d->strings = NULL;
  memcpy(d->e.key, key, 32);
  d->e.key[32] = 0;
  snprintf(d->path, sizeof d->path, "%s/%.2s/%.30s.kbin", vdir, key, key + 2);
  d->e.path = d->path;
  d->problem[0] = 0;
  d->e.problem = d->problem;
  d->e.platform_name = d->e.platform_version = d->e.device_name = d->e.device_version =
      d->e.driver_version = d->e.kiln_version = d->e.options = d->e.source_name = d->e.label =
          empty;
  if (st) {
    d->e.file_bytes = (uint64_t)st->st_size;
    d->e.last_used = (int64_t)st->st_mtim.tv_sec;
  }
}

static void
desc_fill(struct desc *d, const struct kiln__dc_header *h)
{
  size_t total = 0;
  for (int i = 0; i < KILN__DC_NSTR; i++)
    total += h->len[i] + 1;
  d->strings = malloc(total);
  const char **dst[KILN__DC_NSTR] = {
      &d->e.platform_name,  &d->e.platform_version, &d->e.device_name, &d->e.device_version,
      &d->e.driver_version, &d->e.kiln_version,     &d->e.options,     &d->e.source_name,
  };
  char *p = d->strings;
  for (int i = 0; i < KILN__DC_NSTR && p; i++) {
    memcpy(p, h->str[i], h->len[i]);
    p[h->len[i]] = 0;
    *dst[i] = p;
    p += h->len[i] + 1;
  }
  if (d->strings && strncmp(d->e.source_name, "text:", 5) == 0)
    d->e.label = d->e.source_name + 5;
  d->e.format_version = h->format;
  d->e.vendor_id = h->vendor_id;
  d->e.address_bits = h->address_bits;
  d->e.payload_bytes = h->payload_size;
  d->e.created = h->created;
  kiln__dc_to_hex(h->source_hash, 16, d->e.source_hash);
}

/* Reads and judges the entry file sub/name (through sfd); fills d. Returns 0 or -1 when out of memory. */
static int
desc_load(struct desc *d, int sfd, const char *name, uint32_t format, const uint8_t *mac_key,
          int verify)
{
  int fd = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    d->e.state = KILN_CACHE_ENTRY_UNREADABLE;
    snprintf(d->problem, sizeof d->problem, "%s",
             fd < 0 ? (errno == ELOOP ? "symbolic link" : strerror(errno)) : "not a regular file");
    if (fd >= 0)
      close(fd);
    return 0;
  }
  d->e.file_bytes = (uint64_t)st.st_size;
  d->e.last_used = (int64_t)st.st_mtim.tv_sec;
  uint64_t size = (uint64_t)st.st_size;
  /* Listing reads headers only (entries are often megabytes); verifying reads everything. */
  int whole = verify && size <= KILN__DC_MAX_HEADER + KILN__DC_MAX_PAYLOAD + KILN__DC_TRAILER;
  size_t want = whole ? (size_t)size : (size_t)(size < 4096 ? size : 4096);
  uint8_t *buf = malloc(want ? want : 1);
  if (!buf) {
    close(fd);
    return -1;
  }
  int r = kiln__dc_read_exact(fd, buf, want);
  if (r == 0 && !whole && want >= 16) {
    uint32_t hs = kiln__dc_get_u32(buf + 12);
    if (hs > want && hs <= KILN__DC_MAX_HEADER && hs <= size) {
      uint8_t *nb = realloc(buf, hs);
      if (!nb) {
        free(buf);
        close(fd);
        return -1;
      }
      buf = nb;
      r = kiln__dc_read_exact(fd, buf + want, hs - want);
      want = hs;
    }
  }
  close(fd);
  if (r != 0) {
    d->e.state = r == -2 ? KILN_CACHE_ENTRY_CORRUPT : KILN_CACHE_ENTRY_UNREADABLE;
    snprintf(d->problem, sizeof d->problem, "%s", r == -2 ? "truncated while reading" : strerror(errno));
    free(buf);
    return 0;
  }
  struct kiln__dc_header h;
  const char *why = "";
  int full = whole;
  if (kiln__dc_parse(buf, want, size, full, format, mac_key, &h, &why) != 0) {
    d->e.state = KILN_CACHE_ENTRY_CORRUPT;
    snprintf(d->problem, sizeof d->problem, "%s", why);
  } else {
    char hex[33];
    kiln__dc_to_hex(h.key, 16, hex);
    if (memcmp(hex, d->e.key, 32) != 0) {
      d->e.state = KILN_CACHE_ENTRY_CORRUPT;
      snprintf(d->problem, sizeof d->problem, "key in the header does not match the file name");
    } else {
      desc_fill(d, &h);
      if (!d->strings) {
        free(buf);
        return -1;
      }
      d->e.checksum_verified = full;
    }
  }
  free(buf);
  return 0;
}

struct foreach_arg {
  kiln_cache *c;
  unsigned flags;
  kiln_cache_entry_fn fn;
  void *user;
  const char *prefix; /* only keys starting with it */
  size_t matches;
  int oom;
};

static int
foreach_cb(int sfd, const char *sub, const char *name, const struct stat *st, enum walk_kind kind,
           void *arg)
{
  struct foreach_arg *a = arg;
  if (kind != W_ENTRY)
    return 0;
  char key[33];
  memcpy(key, sub, 2);
  memcpy(key + 2, name, 30);
  key[32] = 0;
  if (a->prefix && strncmp(key, a->prefix, strlen(a->prefix)) != 0)
    return 0;
  a->matches++;
  if (!a->fn)
    return 0;
  struct desc *d = malloc(sizeof *d);
  if (!d) {
    a->oom = 1;
    return 1;
  }
  desc_init(d, a->c->vdir, key, st);
  if (desc_load(d, sfd, name, a->c->format, kiln__dc_mac_key(a->c),
                (a->flags & KILN_CACHE_VERIFY) != 0) != 0) {
    free(d);
    a->oom = 1;
    return 1;
  }
  int stop = a->fn(&d->e, a->user);
  free(d->strings);
  free(d);
  return stop;
}

static kiln_status
walk_entries(kiln_cache *c, const char *op, struct foreach_arg *a)
{
  int vfd = kiln__dc_open_vdir(c);
  if (vfd < 0) {
    if (errno == ENOENT)
      return KILN_OK; /* nothing stored for this format yet */
    return kiln__fail(KILN_ERR_IO, op, errno, "cannot open %s: %s", c->vdir, strerror(errno));
  }
  int w = kiln__dc_walk_vdir(vfd, foreach_cb, a);
  int e = errno;
  close(vfd);
  if (a->oom)
    return kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "out of memory while reading entries");
  if (w != 0)
    return kiln__fail(KILN_ERR_IO, op, e, "cannot read %s: %s", c->vdir, strerror(e));
  return KILN_OK;
}

kiln_status
kiln_cache_foreach_entry(kiln_cache *cache, unsigned flags, kiln_cache_entry_fn fn, void *user)
{
  static const char op[] = "kiln_cache_foreach_entry";
  KILN_RETURN_IF(!cache, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(!fn, KILN_ERR_INVALID_ARGUMENT, op, "fn is NULL");
  KILN_RETURN_IF(flags & ~(unsigned)KILN_CACHE_VERIFY, KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown flags 0x%x", flags);
  struct foreach_arg a = {.c = cache, .flags = flags, .fn = fn, .user = user};
  return walk_entries(cache, op, &a);
}

int
kiln_cache_entry_matches_device(const kiln_cache_entry *e, const kiln_device_info *d)
{
  if (!e || !d || e->state != KILN_CACHE_ENTRY_OK)
    return 0;
  return e->vendor_id == d->vendor_id && e->address_bits == d->address_bits &&
         strcmp(e->platform_name, d->platform_name) == 0 &&
         strcmp(e->platform_version, d->platform_version) == 0 &&
         strcmp(e->device_name, d->name) == 0 && strcmp(e->device_version, d->device_version) == 0 &&
         strcmp(e->driver_version, d->driver_version) == 0;
}

static int
valid_key(const char *key)
{
  return key && strlen(key) == 32 && kiln__dc_is_hex_n(key, 32);
}

kiln_status
kiln_cache_entry_find(kiln_cache *cache, const char *prefix, kiln_cache_entry_fn fn, void *user)
{
  static const char op[] = "kiln_cache_entry_find";
  KILN_RETURN_IF(!cache, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(!prefix || !fn, KILN_ERR_INVALID_ARGUMENT, op, "NULL %s", prefix ? "fn" : "prefix");
  size_t n = strlen(prefix);
  char low[33];
  KILN_RETURN_IF(n == 0 || n > 32, KILN_ERR_INVALID_ARGUMENT, op,
                 "key prefix must have 1 to 32 hex digits (got %zu)", n);
  for (size_t i = 0; i <= n; i++)
    low[i] = (char)tolower((unsigned char)prefix[i]);
  KILN_RETURN_IF(!kiln__dc_is_hex_n(low, n), KILN_ERR_INVALID_ARGUMENT, op, "key prefix \"%s\" is not hex",
                 prefix);
  struct foreach_arg a = {.c = cache, .prefix = low};
  KILN_TRY(walk_entries(cache, op, &a));
  if (a.matches == 0)
    return kiln__fail(KILN_ERR_NOT_FOUND, op, 0, "no entry key starts with %s", low);
  if (a.matches > 1)
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                      "%zu entries have keys starting with %s; give more digits", a.matches, low);
  struct foreach_arg b = {.c = cache, .flags = KILN_CACHE_VERIFY, .fn = fn, .user = user,
                          .prefix = low};
  return walk_entries(cache, op, &b);
}

kiln_status
kiln_cache_entry_remove(kiln_cache *cache, const char *key)
{
  static const char op[] = "kiln_cache_entry_remove";
  KILN_RETURN_IF(!cache, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(!valid_key(key), KILN_ERR_INVALID_ARGUMENT, op,
                 "key must be 32 lowercase hex digits");
  KILN_TRY(kiln__dc_need_writable(cache, op));
  int vfd = kiln__dc_open_vdir(cache);
  if (vfd < 0)
    return kiln__fail(errno == ENOENT ? KILN_ERR_NOT_FOUND : KILN_ERR_IO, op, errno,
                      "no entry %s (%s)", key, strerror(errno));
  char sub[3], name[ENTRY_NAME_LEN + 1];
  kiln__dc_entry_path_parts(key, sub, name);
  int sfd = kiln__dc_open_trusted_dir(vfd, sub);
  struct stat st;
  kiln_status s = KILN_OK;
  if (sfd < 0 || fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    s = kiln__fail(KILN_ERR_NOT_FOUND, op, ENOENT, "no entry %s", key);
  } else if (S_ISDIR(st.st_mode) ? unlinkat(sfd, name, AT_REMOVEDIR) != 0
                                 : S_ISREG(st.st_mode) ? unlinkat(sfd, name, 0) != 0
                                                       : (errno = EPERM, 1)) {
    s = kiln__fail(KILN_ERR_IO, op, errno, "cannot remove entry %s: %s", key, strerror(errno));
  } else if (S_ISREG(st.st_mode)) {
    struct store_delta d = {-1, -(int64_t)st.st_size};
    kiln__dc_stats_update(cache, kiln__dc_apply_delta, &d);
  }
  if (sfd >= 0)
    close(sfd);
  close(vfd);
  return s;
}

kiln_status
kiln_cache_entry_read(kiln_cache *cache, const char *key, void **data, size_t *size)
{
  static const char op[] = "kiln_cache_entry_read";
  KILN_RETURN_IF(!cache, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(!data || !size, KILN_ERR_INVALID_ARGUMENT, op, "NULL %s", data ? "size" : "data");
  KILN_RETURN_IF(!valid_key(key), KILN_ERR_INVALID_ARGUMENT, op,
                 "key must be 32 lowercase hex digits");
  *data = NULL;
  *size = 0;
  KILN_TRY(kiln__dc_need_key(cache, op));
  int vfd = kiln__dc_open_vdir(cache);
  if (vfd < 0)
    return kiln__fail(errno == ENOENT ? KILN_ERR_NOT_FOUND : KILN_ERR_IO, op, errno,
                      "no entry %s (%s)", key, strerror(errno));
  uint8_t *buf;
  size_t len;
  int absent;
  const char *why = "";
  int fd = kiln__dc_read_entry(vfd, key, &buf, &len, &absent, &why);
  close(vfd);
  if (fd < 0)
    return kiln__fail(absent ? KILN_ERR_NOT_FOUND : KILN_ERR_IO, op, absent ? ENOENT : EIO,
                      "entry %s: %s", key, absent ? "not found" : why);
  close(fd);
  struct kiln__dc_header h;
  char hex[33];
  if (kiln__dc_parse(buf, len, len, 1, cache->format, kiln__dc_mac_key(cache), &h, &why) != 0 ||
      (kiln__dc_to_hex(h.key, 16, hex), strcmp(hex, key) != 0)) {
    free(buf);
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "entry %s is corrupt: %s", key,
                      strcmp(why, "") ? why : "key does not match the file name");
  }
  *data = buf;
  *size = len;
  return KILN_OK;
}

kiln_status
kiln_cache_entry_write_keyed(kiln_cache *cache, const void *data, size_t size,
                             const uint8_t *mac_key, char *key_out)
{
  static const char op[] = "kiln_cache_entry_write";
  KILN_RETURN_IF(!cache, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(!data, KILN_ERR_INVALID_ARGUMENT, op, "data is NULL");
  KILN_TRY(kiln__dc_need_writable(cache, op));
  KILN_TRY(kiln__dc_need_key(cache, op));
  struct kiln__dc_header h;
  const char *why = "";
  if (kiln__dc_parse(data, size, size, 1, cache->format, mac_key ? mac_key : cache->mac_key, &h,
                     &why) != 0)
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "not a valid cache entry: %s", why);
  char hex[33];
  kiln__dc_to_hex(h.key, 16, hex);
  const uint8_t *bytes = data;
  uint8_t *resealed = NULL;
  if (mac_key && sodium_memcmp(mac_key, cache->mac_key, KILN__DC_KEY_BYTES) != 0) {
    /* Authenticated under the sender's key; from now on this directory's key vouches for it. */
    resealed = malloc(size);
    KILN_RETURN_IF(!resealed, KILN_ERR_HOST_MEMORY, op, "cannot allocate %zu bytes", size);
    memcpy(resealed, data, size);
    kiln__dc_mac_seal(resealed, size, cache->mac_key);
    bytes = resealed;
  }
  int rc = kiln__dc_store_bytes(cache, hex, bytes, size);
  int e = errno;
  free(resealed);
  if (rc != 0)
    return kiln__fail(KILN_ERR_IO, op, e, "cannot store entry %s in %s: %s", hex, cache->vdir,
                      strerror(e));
  if (key_out)
    memcpy(key_out, hex, 33);
  return KILN_OK;
}

kiln_status
kiln_cache_entry_write(kiln_cache *cache, const void *data, size_t size, char *key_out)
{
  return kiln_cache_entry_write_keyed(cache, data, size, NULL, key_out);
}

kiln_status
kiln_cache_key_path(kiln_cache *cache, char *buf, size_t len)
{
  static const char op[] = "kiln_cache_key_path";
  KILN_RETURN_IF(!cache, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(!buf, KILN_ERR_INVALID_ARGUMENT, op, "buf is NULL");
  int n = snprintf(buf, len, "%s/" KEY_FILE, cache->dir ? cache->dir : "");
  KILN_RETURN_IF(!cache->dir, KILN_ERR_NOT_FOUND, op, "the cache has no directory");
  KILN_RETURN_IF(n < 0 || (size_t)n >= len, KILN_ERR_INVALID_ARGUMENT, op,
                 "buffer of %zu bytes too small (need %d)", len, n + 1);
  KILN_RETURN_IF(!cache->have_key, KILN_ERR_NOT_FOUND, op, "%s", cache->key_problem);
  return KILN_OK;
}

kiln_status
kiln_cache_key_read(const char *path, uint8_t key[KILN_CACHE_KEY_BYTES])
{
  static const char op[] = "kiln_cache_key_read";
  KILN_RETURN_IF(!path || !key, KILN_ERR_INVALID_ARGUMENT, op, "NULL %s", path ? "key" : "path");
  /* O_NONBLOCK: a FIFO given as the key file must not hang the caller before fstat refuses it. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return kiln__fail(errno == ENOENT ? KILN_ERR_NOT_FOUND : KILN_ERR_IO, op, errno,
                      "cannot open key file %s: %s", path, strerror(errno));
  struct stat st;
  kiln_status s = KILN_OK;
  if (fstat(fd, &st) != 0)
    s = kiln__fail(KILN_ERR_IO, op, errno, "key file %s: %s", path, strerror(errno));
  else if (!S_ISREG(st.st_mode))
    s = kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "key file %s is not a regular file", path);
  else if (st.st_size != KILN_CACHE_KEY_BYTES)
    s = kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                   "key file %s has %lld bytes; a kiln cache key has %d", path,
                   (long long)st.st_size, KILN_CACHE_KEY_BYTES);
  else if (kiln__dc_read_exact(fd, key, KILN_CACHE_KEY_BYTES) != 0)
    s = kiln__fail(KILN_ERR_IO, op, errno, "cannot read key file %s", path);
  close(fd);
  return s;
}

/* ---------------------------------------------------------------- public: verify, prune, clear */

struct verify_arg {
  kiln_cache_verify_result *res;
  int fix;
  int vfd;
};

static int
verify_cb(const kiln_cache_entry *e, void *user)
{
  struct verify_arg *a = user;
  a->res->checked++;
  if (e->state == KILN_CACHE_ENTRY_OK)
    return 0;
  a->res->bad++;
  kiln__log(KILN__LOG_DEBUG, "kernel cache: %s: %s", e->path, e->problem);
  if (a->fix) {
    char sub[3], name[ENTRY_NAME_LEN + 1];
    kiln__dc_entry_path_parts(e->key, sub, name);
    int sfd = kiln__dc_open_trusted_dir(a->vfd, sub);
    struct stat st;
    if (sfd >= 0 && fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        (S_ISREG(st.st_mode) ? unlinkat(sfd, name, 0)
                             : S_ISDIR(st.st_mode) ? unlinkat(sfd, name, AT_REMOVEDIR) : -1) == 0)
      a->res->removed++;
    if (sfd >= 0)
      close(sfd);
  }
  return 0;
}

kiln_status
kiln_cache_verify(kiln_cache *cache, int fix, kiln_cache_verify_result *out)
{
  static const char op[] = "kiln_cache_verify";
  KILN_RETURN_IF(!cache, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  if (fix)
    KILN_TRY(kiln__dc_need_writable(cache, op));
  KILN_TRY(kiln__dc_need_key(cache, op));
  memset(out, 0, sizeof *out);
  struct verify_arg va = {.res = out, .fix = fix, .vfd = -1};
  if (fix && (va.vfd = kiln__dc_open_vdir(cache)) < 0 && errno != ENOENT)
    return kiln__fail(KILN_ERR_IO, op, errno, "cannot open %s: %s", cache->vdir, strerror(errno));
  struct foreach_arg a = {.c = cache, .flags = KILN_CACHE_VERIFY, .fn = verify_cb, .user = &va};
  kiln_status s = walk_entries(cache, op, &a);
  if (va.vfd >= 0)
    close(va.vfd);
  if (s == KILN_OK && out->removed)
    s = kiln_cache_recount(cache, NULL);
  return s;
}

/* An entry-like descriptor for a file of another format version (no header parsing). */
static int
report_plain(kiln_cache_entry_fn fn, void *user, const char *dir, const char *sub,
             const char *name, const struct stat *st)
{
  if (!fn)
    return 0;
  struct desc *d = malloc(sizeof *d);
  if (!d)
    return 0;
  char key[33];
  memcpy(key, sub, 2);
  memcpy(key + 2, name, 30);
  desc_init(d, dir, key, st);
  snprintf(d->path, sizeof d->path, "%s/%s/%s", dir, sub, name);
  int r = fn(&d->e, user);
  free(d);
  return r;
}

struct prune_arg {
  kiln_cache *c;
  const kiln_cache_prune_options *o;
  kiln_cache_prune_result *res;
  const char *dir;
  struct recs keep;   /* entries not selected yet (size criterion decides later) */
  int all;            /* remove every recognised entry (old formats) */
  int oom;
};

static int
prune_cb(int sfd, const char *sub, const char *name, const struct stat *st, enum walk_kind kind,
         void *arg)
{
  struct prune_arg *a = arg;
  const kiln_cache_prune_options *o = a->o;
  if (kind == W_TEMP) {
    if ((o->temp_files || a->all) && kiln__dc_temp_is_stale(st)) {
      report_plain(o->on_remove, o->on_remove_user, a->dir, sub, name, st);
      if (o->dry_run || unlinkat(sfd, name, 0) == 0)
        a->res->temp_files++;
    }
    return 0;
  }
  if (!S_ISREG(st->st_mode))
    return 0;
  int go = a->all || (o->older_than_s > 0 && time(NULL) - st->st_mtim.tv_sec > o->older_than_s);
  if (!go && o->select && !a->all) {
    struct desc *d = malloc(sizeof *d);
    char key[33];
    memcpy(key, sub, 2);
    memcpy(key + 2, name, 30);
    key[32] = 0;
    if (!d) {
      a->oom = 1;
      return 1;
    }
    desc_init(d, a->dir, key, st);
    if (desc_load(d, sfd, name, a->c->format, NULL, 0) != 0) {
      free(d);
      a->oom = 1;
      return 1;
    }
    go = o->select(&d->e, o->select_user) != 0;
    if (go && o->on_remove)
      o->on_remove(&d->e, o->on_remove_user);
    free(d->strings);
    free(d);
    if (go) {
      if (o->dry_run || unlinkat(sfd, name, 0) == 0) {
        a->res->entries++;
        a->res->bytes += (uint64_t)st->st_size;
      }
      return 0;
    }
  }
  if (go) {
    report_plain(o->on_remove, o->on_remove_user, a->dir, sub, name, st);
    if (o->dry_run || unlinkat(sfd, name, 0) == 0) {
      a->res->entries++;
      a->res->bytes += (uint64_t)st->st_size;
    }
    return 0;
  }
  if (kiln__dc_recs_push(&a->keep, sub, name, st) != 0) {
    a->oom = 1;
    return 1;
  }
  return 0;
}

/* Removes kiln's files under an old format directory, then the emptied directories. */
static void
prune_old_format(kiln_cache *c, int topfd, const char *vname, struct prune_arg *a)
{
  int vfd = openat(topfd, vname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (vfd < 0)
    return;
  char *dir = kiln__dc_join(c->dir, vname);
  struct prune_arg old = *a;
  old.dir = dir ? dir : c->dir;
  old.all = 1;
  old.keep = (struct recs){0};
  kiln__dc_walk_vdir(vfd, prune_cb, &old);
  free(old.keep.v);
  free(dir);
  if (!a->o->dry_run) {
    static const char *const files[] = {"stats", "stats.lock"};
    for (size_t i = 0; i < 2; i++)
      unlinkat(vfd, files[i], 0);
    for (int n = 0; n < 256; n++) {
      char sub[3];
      snprintf(sub, sizeof sub, "%02x", n);
      unlinkat(vfd, sub, AT_REMOVEDIR);
    }
    unlinkat(topfd, vname, AT_REMOVEDIR);
  }
  close(vfd);
}

kiln_status
kiln_cache_prune(kiln_cache *cache, const kiln_cache_prune_options *opts,
                 kiln_cache_prune_result *out)
{
  static const char op[] = "kiln_cache_prune";
  KILN_RETURN_IF(!cache, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(!opts, KILN_ERR_INVALID_ARGUMENT, op, "opts is NULL");
  KILN_RETURN_IF(opts->older_than_s < 0, KILN_ERR_INVALID_ARGUMENT, op,
                 "older_than_s is negative (%lld)", (long long)opts->older_than_s);
  if (!opts->dry_run)
    KILN_TRY(kiln__dc_need_writable(cache, op));
  kiln_cache_prune_result res = {0};
  struct prune_arg a = {.c = cache, .o = opts, .res = &res, .dir = cache->vdir};

  if (opts->old_formats) {
    int topfd = open(cache->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = topfd >= 0 ? fdopendir(dup(topfd)) : NULL;
    struct dirent *de;
    while (d && (de = readdir(d))) {
      uint32_t v = kiln__dc_version_dir_number(de->d_name);
      if (v && v < cache->format)
        prune_old_format(cache, topfd, de->d_name, &a);
    }
    if (d)
      closedir(d);
    if (topfd >= 0)
      close(topfd);
  }

  int vfd = kiln__dc_open_vdir(cache);
  if (vfd < 0) {
    if (out)
      *out = res;
    return errno == ENOENT ? KILN_OK
                           : kiln__fail(KILN_ERR_IO, op, errno, "cannot open %s: %s", cache->vdir,
                                        strerror(errno));
  }
  int lk = opts->dry_run ? -1 : kiln__dc_lock_stats(vfd);
  kiln__dc_walk_vdir(vfd, prune_cb, &a);
  uint64_t target = opts->max_bytes == KILN_CACHE_KEEP_CAP ? cache->max_bytes : opts->max_bytes;
  if (!a.oom && target && a.keep.total > target) {
    qsort(a.keep.v, a.keep.n, sizeof *a.keep.v, kiln__dc_rec_older);
    uint64_t total = a.keep.total;
    for (size_t i = 0; i < a.keep.n && total > target; i++) {
      struct rec *r = &a.keep.v[i];
      char sub[3], name[ENTRY_NAME_LEN + 1];
      kiln__dc_entry_path_parts(r->key, sub, name);
      struct stat st = {0};
      st.st_size = (off_t)r->size;
      st.st_mtim.tv_sec = (time_t)(r->mtime_ns / 1000000000);
      report_plain(opts->on_remove, opts->on_remove_user, cache->vdir, sub, name, &st);
      if (opts->dry_run || kiln__dc_unlink_entry(vfd, r->key) == 0) {
        total -= r->size;
        res.entries++;
        res.bytes += r->size;
      }
    }
  }
  kiln_status s = a.oom ? kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "out of memory") : KILN_OK;
  if (lk >= 0) {
    close(lk);
    if (s == KILN_OK)
      s = kiln_cache_recount(cache, NULL);
  }
  free(a.keep.v);
  close(vfd);
  if (out)
    *out = res;
  return s;
}

/* Removes recognised files of one format directory; counts them; notes the first failure. */
static void
clear_vdir(int vfd, uint64_t *removed, int *err, char *failed, size_t failed_len, const char *vpath)
{
  DIR *d = fdopendir(dup(vfd));
  if (!d)
    return;
  struct dirent *de;
  while ((de = readdir(d))) {
    const char *n = de->d_name;
    if (kiln__dc_is_sub_name(n)) {
      int sfd = openat(vfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      DIR *sd = sfd >= 0 ? fdopendir(sfd) : NULL;
      struct dirent *fe;
      while (sd && (fe = readdir(sd))) {
        if (!kiln__dc_is_entry_name(fe->d_name) && !kiln__dc_is_temp_name(fe->d_name))
          continue;
        struct stat st;
        if (fstatat(sfd, fe->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
          continue;
        if (unlinkat(sfd, fe->d_name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) == 0) {
          (*removed)++;
        } else if (!*err) {
          *err = errno;
          snprintf(failed, failed_len, "%s/%s/%s", vpath, n, fe->d_name);
        }
      }
      if (sd)
        closedir(sd);
      else if (sfd >= 0)
        close(sfd);
      unlinkat(vfd, n, AT_REMOVEDIR);
    } else if (strcmp(n, "stats") == 0 || strcmp(n, "stats.lock") == 0 ||
               kiln__dc_is_stats_temp_name(n)) {
      struct stat st;
      if (fstatat(vfd, n, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
        if (unlinkat(vfd, n, 0) == 0) {
          (*removed)++;
        } else if (!*err) {
          *err = errno;
          snprintf(failed, failed_len, "%s/%s", vpath, n);
        }
      }
    }
  }
  closedir(d);
}

/* CACHEDIR.TAG goes only if it is the one kiln wrote (a user's own tag is not ours). */
static int
remove_own_tag(int topfd)
{
  int fd = openat(topfd, "CACHEDIR.TAG", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return -1;
  char buf[512];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return -1;
  buf[n] = 0;
  if (strncmp(buf, "Signature: 8a477f597d28d172789f06886806bc55", 43) != 0 ||
      !strstr(buf, "created by kiln"))
    return -1;
  return unlinkat(topfd, "CACHEDIR.TAG", 0);
}

kiln_status
kiln_cache_clear(kiln_cache *cache, uint64_t *removed)
{
  static const char op[] = "kiln_cache_clear";
  KILN_TRY(kiln__dc_need_writable(cache, op));
  uint64_t n = 0;
  int err = 0;
  char failed[4300] = "";
  int topfd = open(cache->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (topfd < 0)
    return kiln__fail(KILN_ERR_IO, op, errno, "cannot open %s: %s", cache->dir, strerror(errno));
  DIR *d = fdopendir(dup(topfd));
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (!kiln__dc_version_dir_number(de->d_name))
      continue;
    int vfd = openat(topfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (vfd < 0)
      continue;
    char *vpath = kiln__dc_join(cache->dir, de->d_name);
    clear_vdir(vfd, &n, &err, failed, sizeof failed, vpath ? vpath : cache->dir);
    free(vpath);
    close(vfd);
    /* The current format's directory stays, so open handles keep a valid place to store. */
    if (kiln__dc_version_dir_number(de->d_name) != cache->format)
      unlinkat(topfd, de->d_name, AT_REMOVEDIR);
  }
  if (d)
    closedir(d);
  if (remove_own_tag(topfd) == 0)
    n++;
  close(topfd);
  if (removed)
    *removed = n;
  pthread_mutex_lock(&cache->lock);
  memset(&cache->unsaved, 0, sizeof cache->unsaved);
  pthread_mutex_unlock(&cache->lock);
  if (err)
    return kiln__fail(KILN_ERR_IO, op, err, "cannot remove %s: %s", failed, strerror(err));
  return KILN_OK;
}
