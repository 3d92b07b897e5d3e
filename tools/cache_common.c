/* Helpers shared by the kiln cache subcommands: options, messages, entry lists, JSON, tables. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/cache_cli.h"
#include "tools/commands.h"

void
cli_init(struct cache_cli *c, const char *name, const char *usage)
{
  memset(c, 0, sizeof *c);
  c->name = name;
  c->usage = usage;
}

int
cli_usage_error(const struct cache_cli *c, const char *fmt, ...)
{
  fprintf(stderr, "kiln cache %s: ", c->name);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n(see 'kiln cache %s --help')\n", c->name);
  return EXIT_USAGE;
}

int
cli_fail(const struct cache_cli *c, const char *fmt, ...)
{
  fprintf(stderr, "kiln cache %s: ", c->name);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return EXIT_PROBLEM;
}

int
cli_fail_kiln(const struct cache_cli *c)
{
  return cli_fail(c, "%s", kiln_last_error());
}

int
cli_opt_value(const struct cache_cli *c, int argc, char **argv, int *i, const char *name,
              const char **value)
{
  /* tool_opt_value's usage errors read "kiln cache NAME: ..." as cli_usage_error's. */
  char cmd[64];
  snprintf(cmd, sizeof cmd, "cache %s", c->name);
  return tool_opt_value(cmd, argc, argv, i, name, value);
}

int
cli_common_opt(struct cache_cli *c, int argc, char **argv, int *i)
{
  if (strcmp(argv[*i], "--json") == 0) {
    c->json = 1;
    return 1;
  }
  const char *v;
  int r = cli_opt_value(c, argc, argv, i, "--dir", &v);
  if (r == 1)
    c->dir_arg = v;
  return r;
}

int
cli_unexpected(const struct cache_cli *c, const char *arg)
{
  if (arg[0] == '-' && arg[1])
    return cli_usage_error(c, "unknown option '%s'", arg);
  return cli_usage_error(c, "unexpected argument '%s'", arg);
}

int
cli_resolve_dir(struct cache_cli *c)
{
  if (c->dir_arg) {
    if (c->dir_arg[0] == '/') {
      snprintf(c->dir, sizeof c->dir, "%s", c->dir_arg);
    } else {
      char cwd[2048];
      if (!getcwd(cwd, sizeof cwd))
        return cli_fail(c, "cannot make %s absolute: %s", c->dir_arg, strerror(errno));
      snprintf(c->dir, sizeof c->dir, "%s/%s", cwd, c->dir_arg);
    }
  } else if (kiln_cache_default_dir(c->dir, sizeof c->dir) != KILN_OK) {
    return cli_fail(c, "no default cache directory: %s (use --dir)", kiln_last_error());
  }
  struct stat st;
  if (stat(c->dir, &st) == 0) {
    c->exists = 1;
    if (!S_ISDIR(st.st_mode))
      return cli_fail(c, "%s is not a directory", c->dir);
  } else if (errno == ENOENT) {
    c->exists = 0;
  } else {
    return cli_fail(c, "%s: %s", c->dir, strerror(errno));
  }
  return EXIT_OK;
}

int
cli_open(const struct cache_cli *c, kiln_cache_mode mode, kiln_cache **out)
{
  if (kiln_cache_open(c->dir, mode, out) != KILN_OK)
    return cli_fail_kiln(c);
  return EXIT_OK;
}

/* ---------------------------------------------------------------- entry lists */

static char *
dup_or_empty(const char *s, int *oom)
{
  char *d = strdup(s ? s : "");
  if (!d)
    *oom = 1;
  return d;
}

int
entry_list_add(const kiln_cache_entry *e, void *user)
{
  struct entry_list *l = user;
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    kiln_cache_entry *v = realloc(l->v, cap * sizeof *v);
    if (!v) {
      l->oom = 1;
      return 1;
    }
    l->v = v;
    l->cap = cap;
  }
  kiln_cache_entry *d = &l->v[l->n];
  *d = *e;
  int oom = 0;
  d->path = dup_or_empty(e->path, &oom);
  d->problem = dup_or_empty(e->problem, &oom);
  d->platform_name = dup_or_empty(e->platform_name, &oom);
  d->platform_version = dup_or_empty(e->platform_version, &oom);
  d->device_name = dup_or_empty(e->device_name, &oom);
  d->device_version = dup_or_empty(e->device_version, &oom);
  d->driver_version = dup_or_empty(e->driver_version, &oom);
  d->kiln_version = dup_or_empty(e->kiln_version, &oom);
  d->options = dup_or_empty(e->options, &oom);
  d->source_name = dup_or_empty(e->source_name, &oom);
  d->label = dup_or_empty(e->label, &oom);
  l->n++; /* counted even when a copy failed, so entry_list_free frees what was copied */
  if (oom) {
    l->oom = 1;
    return 1;
  }
  return 0;
}

void
entry_free_strings(kiln_cache_entry *e)
{
  free((char *)e->path);
  free((char *)e->problem);
  free((char *)e->platform_name);
  free((char *)e->platform_version);
  free((char *)e->device_name);
  free((char *)e->device_version);
  free((char *)e->driver_version);
  free((char *)e->kiln_version);
  free((char *)e->options);
  free((char *)e->source_name);
  free((char *)e->label);
}

void
entry_list_free(struct entry_list *l)
{
  for (size_t i = 0; i < l->n; i++)
    entry_free_strings(&l->v[i]);
  free(l->v);
  memset(l, 0, sizeof *l);
}

int
entry_cmp_key(const void *a, const void *b)
{
  return strcmp(((const kiln_cache_entry *)a)->key, ((const kiln_cache_entry *)b)->key);
}

const kiln_cache_entry *
entry_list_find(const struct entry_list *l, const char *key)
{
  kiln_cache_entry probe;
  memset(&probe, 0, sizeof probe);
  snprintf(probe.key, sizeof probe.key, "%s", key);
  if (!l->n)
    return NULL;
  return bsearch(&probe, l->v, l->n, sizeof *l->v, entry_cmp_key);
}

int
cli_collect(const struct cache_cli *c, kiln_cache *cache, unsigned flags, struct entry_list *out)
{
  memset(out, 0, sizeof *out);
  kiln_status s = kiln_cache_foreach_entry(cache, flags, entry_list_add, out);
  if (out->oom) {
    entry_list_free(out);
    return cli_fail(c, "out of memory while listing entries");
  }
  if (s != KILN_OK) {
    entry_list_free(out);
    return cli_fail_kiln(c);
  }
  if (out->n)
    qsort(out->v, out->n, sizeof *out->v, entry_cmp_key);
  return EXIT_OK;
}

const char *
entry_state_name(kiln_cache_entry_state s)
{
  switch (s) {
  case KILN_CACHE_ENTRY_OK:
    return "ok";
  case KILN_CACHE_ENTRY_CORRUPT:
    return "corrupt";
  case KILN_CACHE_ENTRY_UNREADABLE:
    return "unreadable";
  }
  return "unknown";
}

void
json_entry(struct json *j, const char *key, const kiln_cache_entry *e)
{
  json_object_begin(j, key);
  json_string(j, "key", e->key);
  json_string(j, "path", e->path);
  json_string(j, "state", entry_state_name(e->state));
  json_string(j, "problem", e->problem);
  json_bool(j, "checksum_verified", e->checksum_verified);
  json_string(j, "source", e->source_name);
  json_string(j, "label", e->label);
  json_string(j, "options", e->options);
  json_string(j, "platform", e->platform_name);
  json_string(j, "platform_version", e->platform_version);
  json_string(j, "device", e->device_name);
  json_string(j, "device_version", e->device_version);
  json_string(j, "driver", e->driver_version);
  json_u64(j, "vendor_id", e->vendor_id);
  json_u64(j, "address_bits", e->address_bits);
  json_string(j, "kiln_version", e->kiln_version);
  json_u64(j, "format_version", e->format_version);
  json_string(j, "source_hash", e->source_hash);
  json_u64(j, "payload_bytes", e->payload_bytes);
  json_u64(j, "bytes", e->file_bytes);
  json_i64(j, "created", e->created);
  json_i64(j, "last_used", e->last_used);
  json_object_end(j);
}

int
contains_nocase(const char *h, const char *n)
{
  size_t nl = strlen(n);
  if (!nl)
    return 1;
  for (; *h; h++) {
    size_t k = 0;
    while (k < nl && h[k] && tolower((unsigned char)h[k]) == tolower((unsigned char)n[k]))
      k++;
    if (k == nl)
      return 1;
  }
  return 0;
}

/* ---------------------------------------------------------------- devices */

int
cli_devices(const struct cache_cli *c, kiln_device_info **infos, size_t *n)
{
  *infos = NULL;
  *n = 0;
  size_t count = 0;
  if (kiln_device_list(NULL, 0, &count, NULL) != KILN_OK)
    return cli_fail_kiln(c);
  if (!count)
    return EXIT_OK;
  kiln_device_info *v = calloc(count, sizeof *v);
  if (!v)
    return cli_fail(c, "out of memory");
  if (kiln_device_list(v, count, &count, NULL) != KILN_OK) {
    free(v);
    return cli_fail_kiln(c);
  }
  *infos = v;
  *n = count;
  return EXIT_OK;
}

int
entry_device_match(const kiln_cache_entry *e, const kiln_device_info *infos, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (kiln_cache_entry_matches_device(e, &infos[i]))
      return (int)i;
  return -1;
}

/* ---------------------------------------------------------------- tables */

void
table_init(struct table *t, int ncols, unsigned right_align, const char *const *header)
{
  memset(t, 0, sizeof *t);
  t->ncols = ncols;
  t->right_align = right_align;
  table_row(t, header);
}

/* Bytes that must not reach a terminal raw: C0 controls, DEL, and the C1 controls' UTF-8 lead. */
static size_t
escaped_len(const unsigned char *p)
{
  if (*p < 0x20 || *p == 0x7f)
    return 1;
  if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
    return 2;
  return 0;
}

static size_t
escape_into(const char *s, char *out)
{
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    size_t k = escaped_len(p);
    if (!k) {
      if (*p == '\\' && out)
        out[n] = '\\', out[n + 1] = '\\';
      else if (out)
        out[n] = (char)*p;
      n += *p == '\\' ? 2 : 1;
      p++;
      continue;
    }
    for (size_t i = 0; i < k; i++, p++) {
      if (out)
        snprintf(out + n, 5, "\\x%02x", *p);
      n += 4;
    }
  }
  if (out)
    out[n] = 0;
  return n;
}

char *
text_escape(const char *s)
{
  char *out = malloc(escape_into(s, NULL) + 1);
  if (out)
    escape_into(s, out);
  return out;
}

void
text_put(FILE *f, const char *s)
{
  char *e = text_escape(s);
  fputs(e ? e : "?", f);
  free(e);
}

void
table_row(struct table *t, const char *const *cells)
{
  if (t->nrows == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 16;
    char **v = realloc(t->cells, cap * (size_t)t->ncols * sizeof *v);
    if (!v)
      return; /* out of memory: the row is dropped */
    t->cells = v;
    t->cap = cap;
  }
  for (int i = 0; i < t->ncols; i++)
    t->cells[t->nrows * (size_t)t->ncols + (size_t)i] = text_escape(cells[i] ? cells[i] : "");
  t->nrows++;
}

void
table_print(const struct table *t, FILE *f, int indent)
{
  size_t width[16] = {0};
  int nc = t->ncols < 16 ? t->ncols : 16;
  for (size_t r = 0; r < t->nrows; r++)
    for (int i = 0; i < nc; i++) {
      const char *s = t->cells[r * (size_t)t->ncols + (size_t)i];
      size_t w = s ? strlen(s) : 0;
      if (w > width[i])
        width[i] = w;
    }
  for (size_t r = 0; r < t->nrows; r++) {
    fprintf(f, "%*s", indent, "");
    for (int i = 0; i < nc; i++) {
      const char *s = t->cells[r * (size_t)t->ncols + (size_t)i];
      s = s ? s : "";
      int last = i == nc - 1;
      if (t->right_align & (1u << i))
        fprintf(f, "%*s", (int)width[i], s);
      else if (last)
        fputs(s, f);
      else
        fprintf(f, "%-*s", (int)width[i], s);
      if (!last)
        fputs("  ", f);
    }
    fputc('\n', f);
  }
}

void
table_free(struct table *t)
{
  for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
    free(t->cells[i]);
  free(t->cells);
  memset(t, 0, sizeof *t);
}
