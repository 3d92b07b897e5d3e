/* Where the cache lives and whether to trust it: settings from the environment, directory
 * resolution, trust checks, the MAC key file, preparing the directories. */
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

#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "kiln_config.h"

#include <sodium.h>

#if KILN_HAVE_XXHASH
#include <xxhash.h>
#endif

/* ---------------------------------------------------------------- warnings */

static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t warned[256];
static size_t nwarned;
static uint64_t nwarnings;

static uint64_t
fnv1a(const char *s, uint64_t h)
{
  for (; s && *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* One warning per (directory, problem) per process: a program making many contexts says it once. */
void KILN_PRINTF(3, 4)
kiln__dc_warn_once(const char *dir, enum problem p, const char *fmt, ...)
{
  uint64_t id = fnv1a(dir, 1469598103934665603ull ^ (uint64_t)p);
  pthread_mutex_lock(&warn_lock);
  size_t known = nwarned < sizeof warned / sizeof warned[0] ? nwarned : sizeof warned / sizeof warned[0];
  for (size_t i = 0; i < known; i++) {
    if (warned[i] == id) {
      pthread_mutex_unlock(&warn_lock);
      return;
    }
  }
  /* Past 256 distinct problems the oldest are forgotten and may be warned about again. */
  warned[nwarned++ % (sizeof warned / sizeof warned[0])] = id;
  nwarnings++;
  pthread_mutex_unlock(&warn_lock);
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kiln__log(KILN__LOG_WARN, "kernel cache: %s", msg);
}

uint64_t
kiln__dc_warnings(void)
{
  pthread_mutex_lock(&warn_lock);
  uint64_t n = nwarnings;
  pthread_mutex_unlock(&warn_lock);
  return n;
}

/* ---------------------------------------------------------------- settings */

int
kiln__dc_parse_size(const char *s, uint64_t *out)
{
  if (!s)
    return -1;
  while (isspace((unsigned char)*s))
    s++;
  if (!isdigit((unsigned char)*s))
    return -1;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno)
    return -1;
  unsigned shift = 0;
  switch (tolower((unsigned char)*end)) {
  case 'k': shift = 10; end++; break;
  case 'm': shift = 20; end++; break;
  case 'g': shift = 30; end++; break;
  case 't': shift = 40; end++; break;
  default: break;
  }
  if (shift && tolower((unsigned char)*end) == 'i' && tolower((unsigned char)end[1]) == 'b')
    end += 2;
  else if (tolower((unsigned char)*end) == 'b')
    end++;
  while (isspace((unsigned char)*end))
    end++;
  /* Caps travel as int64_t options (KILN_OPT_CACHE_MAX_BYTES): larger ones read back negative. */
  if (*end || v > ((uint64_t)INT64_MAX >> shift))
    return -1;
  *out = (uint64_t)v << shift;
  return 0;
}

kiln_cache_mode
kiln__dc_env_mode(void)
{
  const char *v = kiln__env(KILN__ENV_CACHE);
  if (!v || !*v)
    return KILN_CACHE_ON;
  static const struct {
    const char *name;
    kiln_cache_mode mode;
  } names[] = {{"on", KILN_CACHE_ON},         {"1", KILN_CACHE_ON},
               {"yes", KILN_CACHE_ON},        {"readonly", KILN_CACHE_READONLY},
               {"read-only", KILN_CACHE_READONLY}, {"ro", KILN_CACHE_READONLY},
               {"off", KILN_CACHE_OFF},       {"0", KILN_CACHE_OFF},
               {"no", KILN_CACHE_OFF}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcasecmp(v, names[i].name) == 0)
      return names[i].mode;
  kiln__dc_warn_once(v, P_ENV_MODE, "KILN_CACHE=\"%s\" is not on, readonly or off; using on", v);
  return KILN_CACHE_ON;
}

kiln_cache_store_policy
kiln__dc_env_store_policy(void)
{
  const char *v = kiln__env(KILN__ENV_CACHE_STORE);
  if (!v || !*v || strcasecmp(v, "auto") == 0)
    return KILN_CACHE_STORE_AUTO;
  if (strcasecmp(v, "always") == 0)
    return KILN_CACHE_STORE_ALWAYS;
  kiln__dc_warn_once(v, P_ENV_STORE, "KILN_CACHE_STORE=\"%s\" is not auto or always; using auto", v);
  return KILN_CACHE_STORE_AUTO;
}

uint64_t
kiln__dc_env_max_bytes(void)
{
  const char *v = kiln__env(KILN__ENV_CACHE_MAX_SIZE);
  uint64_t n;
  if (!v || !*v)
    return KILN__DC_DEFAULT_MAX_BYTES;
  if (kiln__dc_parse_size(v, &n) == 0)
    return n;
  kiln__dc_warn_once(v, P_ENV_SIZE,
            "KILN_CACHE_MAX_SIZE=\"%s\" is not a size such as 512M or 2G below 8E; using 1G", v);
  return KILN__DC_DEFAULT_MAX_BYTES;
}

/* ---------------------------------------------------------------- directory resolution */

char *
kiln__dc_join(const char *a, const char *b)
{
  size_t na = strlen(a), nb = strlen(b);
  while (na > 1 && a[na - 1] == '/')
    na--;
  char *p = malloc(na + 1 + nb + 1);
  if (!p)
    return NULL;
  memcpy(p, a, na);
  p[na] = '/';
  memcpy(p + na + 1, b, nb + 1);
  return p;
}

static char *
passwd_home(void)
{
  long hint = sysconf(_SC_GETPW_R_SIZE_MAX);
  size_t size = hint > 0 ? (size_t)hint : 1024;
  for (;;) {
    char *buf = malloc(size);
    if (!buf)
      return NULL;
    struct passwd pw, *res = NULL;
    int e = getpwuid_r(getuid(), &pw, buf, size, &res);
    if (e == ERANGE && size < (1u << 20)) {
      free(buf);
      size *= 2;
      continue;
    }
    char *home = (e == 0 && res && res->pw_dir && res->pw_dir[0] == '/') ? strdup(res->pw_dir) : NULL;
    free(buf);
    return home;
  }
}

/* Resolves the cache directory (malloc'd) or NULL with *why set. */
char *
kiln__dc_resolve_dir(const char *explicit_dir, const char **why)
{
  const char *e = explicit_dir && *explicit_dir ? explicit_dir : kiln__env(KILN__ENV_CACHE_DIR);
  if (e && *e) {
    if (e[0] == '/')
      return strdup(e);
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) {
      *why = "cannot make the relative cache directory absolute (getcwd failed)";
      return NULL;
    }
    return kiln__dc_join(cwd, e);
  }
  /* The XDG base directory spec says relative values are to be ignored. */
  const char *x = kiln__env(KILN__ENV_XDG_CACHE_HOME);
  if (x && x[0] == '/')
    return kiln__dc_join(x, "kiln");
  const char *h = kiln__env(KILN__ENV_HOME);
  char *home = h && h[0] == '/' ? strdup(h) : passwd_home();
  if (!home) {
    *why = "no cache directory: KILN_CACHE_DIR, XDG_CACHE_HOME and HOME are unset and the "
           "password database has no home directory";
    return NULL;
  }
  char *r = kiln__dc_join(home, ".cache/kiln");
  free(home);
  return r;
}

kiln_status
kiln_cache_default_dir(char *buf, size_t len)
{
  static const char op[] = "kiln_cache_default_dir";
  KILN_RETURN_IF(!buf, KILN_ERR_INVALID_ARGUMENT, op, "buf is NULL");
  const char *why = "out of memory";
  char *d = kiln__dc_resolve_dir(NULL, &why);
  if (!d)
    return kiln__fail(KILN_ERR_NOT_FOUND, op, 0, "%s", why);
  size_t n = strlen(d);
  if (n + 1 > len) {
    free(d);
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "buffer of %zu bytes too small (need %zu)",
                      len, n + 1);
  }
  memcpy(buf, d, n + 1);
  free(d);
  return KILN_OK;
}

/* mkdir -p with mode 0700 for every directory it creates. 0, or an errno value. */
static int
mkdir_p(const char *path)
{
  char *p = strdup(path);
  if (!p)
    return ENOMEM;
  int err = 0;
  for (char *s = p + 1;; s++) {
    if (*s == '/' || *s == 0) {
      char saved = *s;
      *s = 0;
      if (mkdir(p, 0700) != 0 && errno != EEXIST) {
        err = errno;
        *s = saved;
        break;
      }
      *s = saved;
      if (!saved)
        break;
    }
  }
  free(p);
  return err;
}

static void
degrade(kiln_cache *c, kiln_cache_mode to, enum problem p, const char *fmt, ...) KILN_PRINTF(4, 5);

static void
degrade(kiln_cache *c, kiln_cache_mode to, enum problem p, const char *fmt, ...)
{
  if (to >= c->mode)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->reason, sizeof c->reason, fmt, ap);
  va_end(ap);
  c->mode = to;
  kiln__dc_warn_once(c->dir, p, "%s; running %s", c->reason,
            to == KILN_CACHE_OFF ? "without a disk cache" : "with a read-only disk cache");
}

/* A directory kiln may trust: a real directory, ours, not writable by group or others. */
static int
check_trust(const struct stat *st, const char *path, char *why, size_t whylen, enum problem *p)
{
  if (!S_ISDIR(st->st_mode)) {
    snprintf(why, whylen, "%s is not a directory", path);
    *p = P_NOT_DIR;
    return -1;
  }
  if (st->st_uid != geteuid()) {
    snprintf(why, whylen, "%s is owned by uid %u, not by this user (uid %u)", path,
             (unsigned)st->st_uid, (unsigned)geteuid());
    *p = P_OWNER;
    return -1;
  }
  if (st->st_mode & (S_IWGRP | S_IWOTH)) {
    snprintf(why, whylen, "%s is writable by group or others (mode %03o; fix with chmod go-w)",
             path, (unsigned)(st->st_mode & 0777));
    *p = P_PERMS;
    return -1;
  }
  return 0;
}

/*
 * Opens a directory below dfd (no link followed) and checks it like the
 * cache directory: anyone who could write into it could plant entries or
 * swap them under a reader. -1 with errno (EPERM: not trusted).
 */
int
kiln__dc_open_trusted_dir(int dfd, const char *name)
{
  int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return -1;
  struct stat st;
  char why[256];
  enum problem p;
  int bad = fstat(fd, &st) != 0;
  if (bad)
    snprintf(why, sizeof why, "%s: %s", name, strerror(errno));
  else
    bad = check_trust(&st, name, why, sizeof why, &p) != 0;
  if (bad) {
    kiln__log(KILN__LOG_DEBUG, "kernel cache: %s; its entries are not used", why);
    close(fd);
    errno = EPERM;
    return -1;
  }
  return fd;
}

int
kiln__dc_open_vdir(const kiln_cache *c)
{
  return kiln__dc_open_trusted_dir(AT_FDCWD, c->vdir);
}

/*
 * Reads DIR/key through topfd. Refused (as if absent) unless it is a regular
 * file of exactly the key's size, owned by this user, with no group or other
 * permission bits: a key that others could read or replace would
 * authenticate their entries. (kiln makes it 0600; 0400 after a chmod -R
 * a-w of a cache made read-only on purpose is as private.) 0, or
 * -1 with errno (ENOENT: there is none) and *why.
 */
static int
key_read_at(int topfd, uint8_t key[KILN__DC_KEY_BYTES], char *why, size_t whylen)
{
  int fd = openat(topfd, KEY_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    snprintf(why, whylen, "%s", e == ELOOP ? "is a symbolic link" : strerror(e));
    errno = e == ELOOP ? EPERM : e;
    return -1;
  }
  struct stat st;
  int e = EPERM;
  if (fstat(fd, &st) != 0)
    snprintf(why, whylen, "%s", strerror(e = errno));
  else if (!S_ISREG(st.st_mode))
    snprintf(why, whylen, "is not a regular file");
  else if (st.st_uid != geteuid())
    snprintf(why, whylen, "is owned by uid %u, not by this user (uid %u)", (unsigned)st.st_uid,
             (unsigned)geteuid());
  else if (st.st_mode & 077)
    snprintf(why, whylen, "is accessible by group or others (mode %04o; it must be 0600)",
             (unsigned)(st.st_mode & 07777));
  else if (st.st_size != KILN__DC_KEY_BYTES)
    snprintf(why, whylen, "has %lld bytes, not %u", (long long)st.st_size, KILN__DC_KEY_BYTES);
  else if (kiln__dc_read_exact(fd, key, KILN__DC_KEY_BYTES) != 0)
    snprintf(why, whylen, "cannot be read"), e = EIO;
  else
    e = 0;
  close(fd);
  errno = e;
  return e ? -1 : 0;
}

/*
 * Makes DIR/key when there is none. The key is written to a private temp
 * file and link()ed into place, which never replaces an existing file, so
 * processes racing here all end up reading the one key that won.
 */
static int
key_create_at(int topfd)
{
  uint8_t key[KILN__DC_KEY_BYTES];
  size_t got = 0;
  while (got < sizeof key) {
    ssize_t n = getrandom(key + got, sizeof key - got, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return -1;
    got += (size_t)n;
  }
  char tmp[32] = KEY_FILE ".tmp.";
  size_t base = strlen(tmp);
  int fd = -1;
  for (int tries = 0; fd < 0 && tries < 16; tries++) {
    kiln__dc_random_suffix(tmp + base);
    tmp[base + 6] = 0;
    fd = openat(topfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0)
    return -1;
  /* The umask may have taken more than group and other bits. */
  int e = fchmod(fd, 0600) != 0 || kiln__dc_write_all(fd, key, sizeof key) != 0 ? errno : 0;
  if (close(fd) != 0 && !e)
    e = errno;
  if (!e && linkat(topfd, tmp, topfd, KEY_FILE, 0) != 0 && errno != EEXIST)
    e = errno;
  unlinkat(topfd, tmp, 0);
  sodium_memzero(key, sizeof key);
  errno = e;
  return e ? -1 : 0;
}

/* Loads (and with create, makes) the directory's key; sets have_key or key_problem. */
static void
key_load(kiln_cache *c, int create)
{
  c->have_key = 0;
  char why[256] = "";
  int topfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (topfd < 0) {
    snprintf(c->key_problem, sizeof c->key_problem, "%s: %s", c->dir, strerror(errno));
    return;
  }
  int r = key_read_at(topfd, c->mac_key, why, sizeof why);
  if (r != 0 && errno == ENOENT && create) {
    if (key_create_at(topfd) != 0)
      snprintf(why, sizeof why, "cannot be created (%s)", strerror(errno));
    else
      r = key_read_at(topfd, c->mac_key, why, sizeof why);
  }
  close(topfd);
  if (r == 0)
    c->have_key = 1;
  else
    snprintf(c->key_problem, sizeof c->key_problem, "key file %s/" KEY_FILE " %s", c->dir,
             strcmp(why, strerror(ENOENT)) == 0 ? "does not exist" : why);
}

const uint8_t *
kiln__dc_mac_key(const kiln_cache *c)
{
  return c && c->have_key ? c->mac_key : NULL;
}

/*
 * Makes the directory usable for c->requested: creates it when allowed,
 * checks trust and writability. In strict mode (kiln_cache_open) a problem
 * is an error with the message recorded; otherwise it degrades c->mode.
 */
static kiln_status
prepare_dirs(kiln_cache *c, int strict, const char *op)
{
  char why[1024];
  enum problem p = P_NOT_DIR;
  int create = c->requested == KILN_CACHE_ON;
  if (create) {
    int e = mkdir_p(c->dir);
    if (e && e != EEXIST && e != ENOTDIR) {
      if (strict)
        return kiln__fail(KILN_ERR_IO, op, e, "cannot create cache directory %s: %s", c->dir,
                          strerror(e));
      struct stat st;
      if (stat(c->dir, &st) != 0) {
        degrade(c, KILN_CACHE_OFF, P_CREATE, "cannot create cache directory %s (%s)", c->dir,
                strerror(e));
        return KILN_OK;
      }
    }
  }
  struct stat st;
  if (stat(c->dir, &st) != 0) {
    int e = errno;
    if (strict)
      return kiln__fail(e == ENOENT ? KILN_ERR_NOT_FOUND : KILN_ERR_IO, op, e,
                        "cache directory %s: %s", c->dir, strerror(e));
    degrade(c, KILN_CACHE_OFF, e == ENOENT ? P_MISSING : P_NOT_DIR, "cache directory %s: %s",
            c->dir, strerror(e));
    return KILN_OK;
  }
  if (check_trust(&st, c->dir, why, sizeof why, &p) != 0) {
    if (strict)
      return kiln__fail(KILN_ERR_IO, op, p == P_NOT_DIR ? ENOTDIR : EPERM, "%s", why);
    degrade(c, KILN_CACHE_OFF, p, "%s", why);
    return KILN_OK;
  }
  struct stat vst;
  int e = lstat(c->vdir, &vst) == 0 ? 0 : errno;
  /* Processes starting together race to create it: EEXIST means another one won. */
  if (e == ENOENT && create) {
    e = mkdir(c->vdir, 0700) == 0 || errno == EEXIST ? 0 : errno;
    if (!e && lstat(c->vdir, &vst) != 0)
      e = errno;
  }
  if (e == ENOENT || e == EACCES || e == EROFS || e == EPERM) {
    /* Nothing stored yet for this format, and no way to create it: nothing to read either. */
    if (strict && create)
      return kiln__fail(KILN_ERR_IO, op, e, "cannot create %s: %s", c->vdir, strerror(e));
    if (!strict)
      degrade(c, KILN_CACHE_READONLY, P_READONLY, "cache directory %s is not writable", c->dir);
    return KILN_OK;
  }
  if (e) {
    if (strict)
      return kiln__fail(KILN_ERR_IO, op, e, "%s: %s", c->vdir, strerror(e));
    degrade(c, KILN_CACHE_OFF, P_NOT_DIR, "%s: %s", c->vdir, strerror(e));
    return KILN_OK;
  }
  if (S_ISLNK(vst.st_mode) || check_trust(&vst, c->vdir, why, sizeof why, &p) != 0) {
    if (S_ISLNK(vst.st_mode))
      snprintf(why, sizeof why, "%s is a symbolic link", c->vdir);
    if (strict)
      return kiln__fail(KILN_ERR_IO, op, EPERM, "%s", why);
    degrade(c, KILN_CACHE_OFF, p, "%s", why);
    return KILN_OK;
  }
  if (c->mode == KILN_CACHE_ON && faccessat(AT_FDCWD, c->vdir, W_OK | X_OK, AT_EACCESS) != 0) {
    if (strict)
      return kiln__fail(KILN_ERR_IO, op, errno, "cache directory %s is not writable: %s", c->vdir,
                        strerror(errno));
    degrade(c, KILN_CACHE_READONLY, P_READONLY, "cache directory %s is not writable", c->dir);
    return KILN_OK;
  }
  if (c->mode == KILN_CACHE_ON) {
    /* https://bford.info/cachedir/: backup tools skip directories holding this file. */
    char *tag = kiln__dc_join(c->dir, "CACHEDIR.TAG");
    int fd = tag ? open(tag, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644) : -1;
    if (fd >= 0) {
      static const char text[] = "Signature: 8a477f597d28d172789f06886806bc55\n"
                                 "# This file is a cache directory tag created by kiln.\n"
                                 "# For information about cache directory tags, see "
                                 "https://bford.info/cachedir/\n";
      if (kiln__dc_write_all(fd, (const uint8_t *)text, sizeof text - 1) != 0)
        kiln__log(KILN__LOG_DEBUG, "cannot write %s: %s", tag, strerror(errno));
      close(fd);
    }
    free(tag);
  }
  return KILN_OK;
}

/*
 * prepare_dirs, then the MAC key: made when the cache may write, else only
 * read. A context's cache without a key is off (nothing it reads could be
 * trusted, nothing it writes could be); a handle from kiln_cache_open keeps
 * working for what needs no key and reports key_problem where one is needed.
 */
kiln_status
kiln__dc_prepare(kiln_cache *c, int strict, const char *op)
{
  KILN_TRY(prepare_dirs(c, strict, op));
  if (c->mode == KILN_CACHE_OFF)
    return KILN_OK;
  key_load(c, c->mode == KILN_CACHE_ON);
  if (!c->have_key && !strict)
    degrade(c, KILN_CACHE_OFF, P_KEY, "%s", c->key_problem);
  return KILN_OK;
}
