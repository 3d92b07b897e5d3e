/* The tuning file layer: format, parser, writer, merge, directory (see tune_file.h). */
#include "runtime/tune_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/file.h"
#include "core/log.h"

void (*kiln__tf_test_mid_write)(void);

void
kiln__tf_init(struct kiln__tf_table *t)
{
  memset(t, 0, sizeof *t);
}

void
kiln__tf_free(struct kiln__tf_table *t)
{
  free(t->e);
  kiln__tf_init(t);
}

/* ---------------------------------------------------------------- tokens */

enum tok_kind { TOK_NAME, TOK_DTYPE, TOK_BUCKET, TOK_REASON };

static int
tok_char_ok(enum tok_kind k, char c)
{
  int lower = c >= 'a' && c <= 'z', digit = c >= '0' && c <= '9';
  switch (k) {
  case TOK_NAME:
    return lower || digit || c == '_';
  case TOK_DTYPE:
    return lower || digit;
  case TOK_BUCKET:
    return lower || digit || c == '_' || c == '.' || c == '^';
  case TOK_REASON:
    return lower || c == '_';
  }
  return 0;
}

static size_t
tok_max(enum tok_kind k)
{
  return k == TOK_DTYPE ? KILN__TF_DTYPE_LEN - 1
                        : k == TOK_REASON ? KILN__TF_REASON_LEN - 1 : KILN__TF_NAME_LEN - 1;
}

/* Copies token [s, s + n) into out when it is a well-formed token of kind k. */
static int
tok_take(enum tok_kind k, const char *s, size_t n, char *out)
{
  if (n == 0 || n > tok_max(k))
    return -1;
  for (size_t i = 0; i < n; i++)
    if (!tok_char_ok(k, s[i]))
      return -1;
  memcpy(out, s, n);
  out[n] = 0;
  return 0;
}

static int
tok_valid(enum tok_kind k, const char *s)
{
  size_t n = strnlen(s, tok_max(k) + 1);
  if (n == 0 || n > tok_max(k))
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!tok_char_ok(k, s[i]))
      return 0;
  return 1;
}

/* Decimal u64 without sign or leading junk; -1 on anything else or overflow. */
static int
parse_u64(const char *s, size_t n, uint64_t *out)
{
  if (n == 0 || n > 20)
    return -1;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    uint64_t d = (uint64_t)(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10)
      return -1;
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}

static int
is_reserved(const char *name)
{
  return strcmp(name, "time_ns") == 0 || strcmp(name, "default_ns") == 0 ||
         strcmp(name, "failed") == 0;
}

int
kiln__tf_entry_valid(const struct kiln__tf_entry *e)
{
  if (!tok_valid(TOK_NAME, e->family) || !tok_valid(TOK_DTYPE, e->dtype) ||
      !tok_valid(TOK_BUCKET, e->bucket) || e->nparams < 1 || e->nparams > KILN__TF_MAX_PARAMS)
    return 0;
  if (e->failed[0] && !tok_valid(TOK_REASON, e->failed))
    return 0;
  for (uint32_t i = 0; i < e->nparams; i++) {
    if (!tok_valid(TOK_NAME, e->pname[i]) || is_reserved(e->pname[i]))
      return 0;
    for (uint32_t j = 0; j < i; j++)
      if (strcmp(e->pname[i], e->pname[j]) == 0)
        return 0;
  }
  return 1;
}

/* ---------------------------------------------------------------- table */

static int
same_params(const struct kiln__tf_entry *a, const struct kiln__tf_entry *b)
{
  if (a->nparams != b->nparams)
    return 0;
  for (uint32_t i = 0; i < a->nparams; i++) {
    uint64_t v;
    if (!kiln__tf_param(b, a->pname[i], &v) || v != a->pval[i])
      return 0;
  }
  return 1;
}

int
kiln__tf_same_key(const struct kiln__tf_entry *a, const struct kiln__tf_entry *b)
{
  if (strcmp(a->family, b->family) != 0 || strcmp(a->dtype, b->dtype) != 0 ||
      strcmp(a->bucket, b->bucket) != 0 || (a->failed[0] != 0) != (b->failed[0] != 0))
    return 0;
  /* A failure record is about one candidate; the result of a key is unique. */
  return a->failed[0] ? same_params(a, b) : 1;
}

int
kiln__tf_param(const struct kiln__tf_entry *e, const char *name, uint64_t *value)
{
  for (uint32_t i = 0; i < e->nparams && i < KILN__TF_MAX_PARAMS; i++) {
    if (strcmp(e->pname[i], name) == 0) {
      *value = e->pval[i];
      return 1;
    }
  }
  return 0;
}

int
kiln__tf_put(struct kiln__tf_table *t, const struct kiln__tf_entry *e)
{
  for (size_t i = 0; i < t->n; i++) {
    if (kiln__tf_same_key(&t->e[i], e)) {
      t->e[i] = *e;
      return 0;
    }
  }
  if (t->n >= KILN__TF_MAX_ENTRIES)
    return KILN__TF_NOMEM;
  if (t->n == t->cap) {
    size_t ncap = t->cap ? t->cap * 2 : 16;
    struct kiln__tf_entry *n = realloc(t->e, ncap * sizeof *n);
    if (!n)
      return KILN__TF_NOMEM;
    t->e = n;
    t->cap = ncap;
  }
  t->e[t->n++] = *e;
  return 0;
}

/* ---------------------------------------------------------------- parser */

struct span {
  const char *p;
  size_t n;
};

/* Splits a line at blanks into at most max tokens; returns the count, or -1 for too many. */
static int
split(const char *s, size_t n, struct span *tok, int max)
{
  int k = 0;
  size_t i = 0;
  while (i < n) {
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
      i++;
    if (i == n)
      break;
    size_t start = i;
    while (i < n && s[i] != ' ' && s[i] != '\t')
      i++;
    if (k == max)
      return -1;
    tok[k].p = s + start;
    tok[k].n = i - start;
    k++;
  }
  return k;
}

/* One "v1 ..." line into e; 0 or -1 (malformed). */
static int
parse_entry(const struct span *tok, int ntok, struct kiln__tf_entry *e)
{
  memset(e, 0, sizeof *e);
  if (ntok < 5 || tok_take(TOK_NAME, tok[1].p, tok[1].n, e->family) ||
      tok_take(TOK_DTYPE, tok[2].p, tok[2].n, e->dtype) ||
      tok_take(TOK_BUCKET, tok[3].p, tok[3].n, e->bucket))
    return -1;
  int have_time = 0, have_default = 0;
  for (int i = 4; i < ntok; i++) {
    const char *eq = memchr(tok[i].p, '=', tok[i].n);
    if (!eq)
      return -1;
    size_t kn = (size_t)(eq - tok[i].p), vn = tok[i].n - kn - 1;
    char key[KILN__TF_NAME_LEN];
    if (tok_take(TOK_NAME, tok[i].p, kn, key))
      return -1;
    if (strcmp(key, "failed") == 0) {
      if (e->failed[0] || tok_take(TOK_REASON, eq + 1, vn, e->failed))
        return -1;
      continue;
    }
    uint64_t v;
    if (parse_u64(eq + 1, vn, &v))
      return -1;
    if (strcmp(key, "time_ns") == 0) {
      if (have_time++)
        return -1;
      e->time_ns = v;
    } else if (strcmp(key, "default_ns") == 0) {
      if (have_default++)
        return -1;
      e->default_ns = v;
    } else {
      if (e->nparams == KILN__TF_MAX_PARAMS)
        return -1;
      for (uint32_t j = 0; j < e->nparams; j++)
        if (strcmp(e->pname[j], key) == 0)
          return -1;
      memcpy(e->pname[e->nparams], key, strlen(key) + 1); /* the rest stays zero */
      e->pval[e->nparams++] = v;
    }
  }
  if (e->nparams < 1)
    return -1;
  /* A result needs both times; a failure record has none. */
  if (e->failed[0] ? (have_time || have_default) : !(have_time && have_default))
    return -1;
  return 0;
}

/* Header text after "device "/"driver ": printable ASCII, truncated to fit. */
static void
take_text(const char *s, size_t n, char *out, size_t cap)
{
  size_t k = 0;
  for (size_t i = 0; i < n && k + 1 < cap; i++)
    out[k++] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
  out[k] = 0;
}

int
kiln__tf_parse(const char *buf, size_t len, struct kiln__tf_table *t)
{
  int header = 0;
  size_t pos = 0, lineno = 0;
  t->skipped = 0;
  while (pos < len) {
    const char *nl = memchr(buf + pos, '\n', len - pos);
    size_t end = nl ? (size_t)(nl - buf) : len;
    const char *s = buf + pos;
    size_t n = end - pos;
    pos = nl ? end + 1 : len;
    lineno++;
    if (n && s[n - 1] == '\r')
      n--;
    size_t lead = 0;
    while (lead < n && (s[lead] == ' ' || s[lead] == '\t'))
      lead++;
    if (lead == n || s[lead] == '#')
      continue;
    if (n > KILN__TF_MAX_LINE || memchr(s, 0, n)) {
      if (!header)
        return KILN__TF_BAD_HEADER;
      t->skipped++;
      kiln__log(KILN__LOG_DEBUG, "tuning file line %zu: too long or holds a NUL; skipped", lineno);
      continue;
    }
    struct span tok[4 + KILN__TF_MAX_PARAMS + 3];
    int ntok = split(s, n, tok, (int)(sizeof tok / sizeof tok[0]));
    if (!header) {
      /* The version is checked before anything else is trusted. */
      if (ntok != 2 || tok[0].n != 11 || memcmp(tok[0].p, "kiln-tuning", 11) != 0 ||
          tok[1].n != 2 || memcmp(tok[1].p, "v1", 2) != 0)
        return KILN__TF_BAD_HEADER;
      header = 1;
      continue;
    }
    if (ntok >= 1 && tok[0].n == 6 &&
        (memcmp(tok[0].p, "device", 6) == 0 || memcmp(tok[0].p, "driver", 6) == 0)) {
      const char *rest = tok[0].p + 6;
      size_t rn = n - (size_t)(rest - s);
      while (rn && (*rest == ' ' || *rest == '\t'))
        rest++, rn--;
      if (tok[0].p[1] == 'e')
        take_text(rest, rn, t->device, sizeof t->device);
      else
        take_text(rest, rn, t->driver, sizeof t->driver);
      continue;
    }
    struct kiln__tf_entry e;
    if (ntok < 0 || tok[0].n != 2 || memcmp(tok[0].p, "v1", 2) != 0 ||
        parse_entry(tok, ntok, &e) != 0) {
      t->skipped++;
      kiln__log(KILN__LOG_DEBUG, "tuning file line %zu is malformed; skipped", lineno);
      continue;
    }
    if (kiln__tf_put(t, &e) != 0)
      return KILN__TF_NOMEM;
  }
  return header ? KILN__TF_OK : KILN__TF_BAD_HEADER;
}

/* ---------------------------------------------------------------- writer */

int
kiln__tf_format_params(const struct kiln__tf_entry *e, char *buf, size_t len)
{
  int total = 0;
  if (len)
    buf[0] = 0;
  for (uint32_t i = 0; i < e->nparams; i++) {
    size_t used = (size_t)total < len ? (size_t)total : len;
    int w = snprintf(buf + used, len - used, "%s%s=%llu", i ? " " : "", e->pname[i],
                     (unsigned long long)e->pval[i]);
    if (w < 0)
      return -1;
    total += w;
  }
  return total;
}

static int
entry_cmp(const void *pa, const void *pb)
{
  const struct kiln__tf_entry *a = pa, *b = pb;
  int c = strcmp(a->family, b->family);
  if (!c)
    c = strcmp(a->dtype, b->dtype);
  if (!c)
    c = strcmp(a->bucket, b->bucket);
  if (!c)
    c = (a->failed[0] != 0) - (b->failed[0] != 0);
  return c;
}

/* Header text is written back on one line: no newlines, printable only. */
static void
clean_text(const char *in, char *out, size_t cap)
{
  take_text(in, strnlen(in, cap - 1), out, cap);
}

char *
kiln__tf_format(const struct kiln__tf_table *t, size_t *len)
{
  struct kiln__tf_entry *sorted = NULL;
  if (t->n) {
    sorted = malloc(t->n * sizeof *sorted);
    if (!sorted)
      return NULL;
    memcpy(sorted, t->e, t->n * sizeof *sorted);
    qsort(sorted, t->n, sizeof *sorted, entry_cmp);
  }
  size_t cap = 512 + t->n * (KILN__TF_MAX_LINE + 1);
  char *out = malloc(cap);
  if (!out) {
    free(sorted);
    return NULL;
  }
  char dev[KILN__TF_IDENT_LEN], drv[KILN__TF_IDENT_LEN];
  clean_text(t->device, dev, sizeof dev);
  clean_text(t->driver, drv, sizeof drv);
  size_t used = (size_t)snprintf(out, cap,
                                 "kiln-tuning v1\ndevice %s\ndriver %s\n"
                                 "# Written by kiln's autotuner; docs/tuning.md describes it.\n",
                                 dev, drv);
  for (size_t i = 0; i < t->n; i++) {
    const struct kiln__tf_entry *e = &sorted[i];
    if (!kiln__tf_entry_valid(e))
      continue;
    char params[KILN__TF_MAX_LINE];
    kiln__tf_format_params(e, params, sizeof params);
    int w;
    if (e->failed[0])
      w = snprintf(out + used, cap - used, "v1 %s %s %s %s failed=%s\n", e->family, e->dtype,
                   e->bucket, params, e->failed);
    else
      w = snprintf(out + used, cap - used, "v1 %s %s %s %s time_ns=%llu default_ns=%llu\n",
                   e->family, e->dtype, e->bucket, params, (unsigned long long)e->time_ns,
                   (unsigned long long)e->default_ns);
    if (w > 0 && (size_t)w < cap - used)
      used += (size_t)w;
  }
  free(sorted);
  *len = used;
  return out;
}

/* ---------------------------------------------------------------- names */

void
kiln__tf_normalize(const char *in, int is_device, char *out, size_t len)
{
  if (!len)
    return;
  const char *s = in ? in : "";
  if (is_device) {
    /* PoCL names its CPU device "pthread-<cpu>" or "cpu-<cpu>" depending on version. */
    static const char *const prefixes[] = {"pthread-", "cpu-"};
    for (size_t i = 0; i < 2; i++)
      if (strncmp(s, prefixes[i], strlen(prefixes[i])) == 0)
        s += strlen(prefixes[i]);
  }
  size_t cap = len - 1 < 80 ? len - 1 : 80, k = 0;
  int dash = 0;
  for (; *s && k < cap; s++) {
    char c = *s;
    if (c >= 'A' && c <= 'Z')
      c = (char)(c - 'A' + 'a');
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.') {
      if (dash && k > 0 && k + 1 < cap)
        out[k++] = '-';
      dash = 0;
      out[k++] = c;
    } else {
      dash = 1;
    }
  }
  out[k] = 0;
  if (!k)
    snprintf(out, len, "unknown");
}

int
kiln__tf_file_name(const char *device_norm, const char *driver_norm, char *out, size_t len)
{
  int w = snprintf(out, len, "%s--%s.txt", device_norm, driver_norm);
  return w > 0 && (size_t)w < len ? 0 : -1;
}

/* ---------------------------------------------------------------- files */

static int
mkdir_p(const char *path)
{
  char p[4096];
  if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p)
    return ENAMETOOLONG;
  for (char *s = p + 1;; s++) {
    if (*s == '/' || *s == 0) {
      char saved = *s;
      *s = 0;
      if (mkdir(p, 0700) != 0 && errno != EEXIST)
        return errno;
      *s = saved;
      if (!saved)
        break;
    }
  }
  return 0;
}

int
kiln__tf_dir(const char *cache_dir, int create, char *out, size_t len, const char **why)
{
  if (!cache_dir || cache_dir[0] != '/') {
    *why = "the cache directory is not an absolute path";
    return -1;
  }
  int w = snprintf(out, len, "%s/tuning", cache_dir);
  if (w < 0 || (size_t)w >= len) {
    *why = "the tuning directory path is too long";
    return -1;
  }
  if (create && mkdir_p(out) != 0) {
    *why = "cannot create the tuning directory";
    return -1;
  }
  struct stat st;
  if (lstat(out, &st) != 0) {
    if (errno == ENOENT && !create)
      return 1;
    *why = "cannot stat the tuning directory";
    return -1;
  }
  /* Parameters read from here steer kernel launches: trust it as the kernel cache trusts DIR. */
  if (!S_ISDIR(st.st_mode)) {
    *why = "the tuning directory is not a directory";
    return -1;
  }
  if (st.st_uid != geteuid()) {
    *why = "the tuning directory belongs to another user";
    return -1;
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    *why = "the tuning directory is writable by group or others";
    return -1;
  }
  return 0;
}

/* Reads a whole regular file of at most KILN__TF_MAX_FILE bytes. 0, 1 (absent), -1. */
static int
read_small(const char *path, int oflags, char **buf, size_t *len, const char **why)
{
  struct stat st;
  int fd = kiln__open_regular(path, O_RDONLY | oflags, 0, &st, why);
  if (fd < 0)
    return errno == ENOENT ? 1 : -1;
  if (st.st_size > (off_t)KILN__TF_MAX_FILE) {
    close(fd);
    *why = "the tuning file is larger than 1 MiB";
    return -1;
  }
  char *b = malloc((size_t)st.st_size + 1);
  if (!b) {
    close(fd);
    *why = "out of memory";
    return -1;
  }
  size_t got = 0;
  while (got < (size_t)st.st_size) {
    ssize_t r = read(fd, b + got, (size_t)st.st_size - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  close(fd);
  *buf = b;
  *len = got; /* a file that shrank under us is parsed as far as it goes */
  return 0;
}

static int
read_table(const char *path, int oflags, struct kiln__tf_table *t, const char **why)
{
  kiln__tf_init(t);
  char *buf = NULL;
  size_t len = 0;
  int r = read_small(path, oflags, &buf, &len, why);
  if (r != 0)
    return r;
  int p = kiln__tf_parse(buf, len, t);
  free(buf);
  if (p != KILN__TF_OK) {
    kiln__tf_free(t);
    *why = p == KILN__TF_NOMEM ? "out of memory"
                               : "not a kiln tuning file of version 1 (wrong or missing header)";
    return -1;
  }
  return 0;
}

int
kiln__tf_read(const char *path, struct kiln__tf_table *t, const char **why)
{
  return read_table(path, O_NOFOLLOW, t, why);
}

int
kiln__tf_read_named(const char *path, struct kiln__tf_table *t, const char **why)
{
  return read_table(path, 0, t, why);
}

static int
write_all(int fd, const char *p, size_t n)
{
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int
kiln__tf_write(const char *path, const struct kiln__tf_table *t)
{
  size_t len;
  char *text = kiln__tf_format(t, &len);
  if (!text)
    return ENOMEM;
  char tmp[4200];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp) {
    free(text);
    return ENAMETOOLONG;
  }
  int fd = mkstemp(tmp);
  if (fd < 0) {
    int e = errno;
    free(text);
    return e;
  }
  fchmod(fd, 0600);
  int e = 0;
  size_t half = len / 2;
  if (write_all(fd, text, half) != 0)
    e = errno ? errno : EIO;
  if (!e && kiln__tf_test_mid_write)
    kiln__tf_test_mid_write();
  if (!e && write_all(fd, text + half, len - half) != 0)
    e = errno ? errno : EIO;
  /* Results cost minutes of tuning: make the data durable before the name points at it. */
  if (!e && fsync(fd) != 0)
    e = errno;
  if (close(fd) != 0 && !e)
    e = errno;
  if (!e && rename(tmp, path) != 0)
    e = errno;
  if (e)
    unlink(tmp);
  free(text);
  return e;
}

/* Removes temp files of the directory of path older than an hour (crashed writers). */
static void
remove_stale_temps(const char *path)
{
  char dir[4096];
  const char *slash = strrchr(path, '/');
  if (!slash || (size_t)(slash - path) >= sizeof dir)
    return;
  memcpy(dir, path, (size_t)(slash - path));
  dir[slash - path] = 0;
  DIR *d = opendir(dir);
  if (!d)
    return;
  time_t now = time(NULL);
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!strstr(de->d_name, ".txt.tmp."))
      continue;
    struct stat st;
    if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        now - st.st_mtime > 3600)
      unlinkat(dirfd(d), de->d_name, 0);
  }
  closedir(d);
}

/* Nonzero when path starts (after blank and comment lines) with a header of another version. */
static int
other_version(const char *path)
{
  char buf[512];
  int fd = kiln__open_regular(path, O_RDONLY | O_NOFOLLOW, 0, NULL, NULL);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  buf[n > 0 ? n : 0] = 0;
  const char *s = buf;
  while (*s) {
    s += strspn(s, " \t\r\n");
    if (*s != '#')
      break;
    s += strcspn(s, "\n");
  }
  if (strncmp(s, "kiln-tuning", 11) != 0 || (s[11] != ' ' && s[11] != '\t'))
    return 0;
  s += 11 + strspn(s + 11, " \t");
  return !(s[0] == 'v' && s[1] == '1' && (s[2] == 0 || strchr(" \t\r\n", s[2])));
}

int
kiln__tf_merge(const char *path, const struct kiln__tf_table *updates)
{
  char lockpath[4200];
  if (snprintf(lockpath, sizeof lockpath, "%s.lock", path) >= (int)sizeof lockpath)
    return ENAMETOOLONG;
  int lfd = kiln__open_regular(lockpath, O_RDWR | O_CREAT | O_NOFOLLOW, 0600, NULL, NULL);
  /*
   * Without the lock (read-only lock file, NFS without flock) the merge still
   * runs: the rename stays atomic, and a concurrent writer can then lose
   * only the other's new keys, never corrupt the file.
   */
  if (lfd >= 0) {
    while (flock(lfd, LOCK_EX) != 0 && errno == EINTR)
      ;
  }
  struct kiln__tf_table cur;
  const char *why = NULL;
  int e = 0;
  if (kiln__tf_read(path, &cur, &why) < 0) {
    /* A newer kiln's file is left alone; a damaged one is replaced. */
    if (other_version(path))
      e = ENOTSUP;
    else
      kiln__log(KILN__LOG_INFO, "tuning file %s: %s; rewriting it", path, why);
  }
  for (size_t i = 0; i < updates->n && !e; i++)
    if (kiln__tf_put(&cur, &updates->e[i]) != 0)
      e = ENOMEM;
  if (updates->device[0])
    memcpy(cur.device, updates->device, sizeof cur.device);
  if (updates->driver[0])
    memcpy(cur.driver, updates->driver, sizeof cur.driver);
  if (!e)
    e = kiln__tf_write(path, &cur);
  kiln__tf_free(&cur);
  remove_stale_temps(path);
  if (lfd >= 0)
    close(lfd); /* releases the lock */
  return e;
}

int
kiln__tf_find_other_driver(const char *tdir, const char *device_norm, const char *exclude_name,
                           char *out, size_t len)
{
  DIR *d = opendir(tdir);
  if (!d)
    return 1;
  size_t dn = strlen(device_norm);
  time_t best = 0;
  int found = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    const char *n = de->d_name;
    size_t nl = strlen(n);
    if (nl < dn + 6 || strncmp(n, device_norm, dn) != 0 || strncmp(n + dn, "--", 2) != 0 ||
        strcmp(n + nl - 4, ".txt") != 0 || strcmp(n, exclude_name) == 0)
      continue;
    /* "<device>--<driver>.txt": the driver part must not hold "--" (it cannot when we wrote it). */
    if (strstr(n + dn + 2, "--"))
      continue;
    struct stat st;
    if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (!found || st.st_mtime > best) {
      if (snprintf(out, len, "%s", n) >= (int)len)
        continue;
      best = st.st_mtime;
      found = 1;
    }
  }
  closedir(d);
  return found ? 0 : 1;
}
