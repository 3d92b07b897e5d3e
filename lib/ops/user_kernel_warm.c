/*
 * kiln_user_kernel_warm_file: compiles the user kernels and fused
 * expressions a file lists (`kiln cache warm --from FILE`), so that their
 * programs are in the disk cache before the first process needs them.
 *
 *   # comment (also ;)
 *   [kernel NAME]
 *   kind = raw | elementwise | reduction | scan     (default raw)
 *   KEY = VALUE
 *   KEY <<TAG          a value of several lines, up to a line that is TAG
 *   ...
 *   TAG
 *   [expr NAME]
 *   text = EXPRESSION
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/file.h"
#include "kiln/kernel.h"
#include "runtime/program_text.h"
#include "runtime/runtime.h"

#define WF_MAX_BYTES (16u << 20)
#define WF_MAX_KEYS 16

struct wf_item {
  int expr; /* [expr NAME] */
  char *name;
  unsigned line;
  size_t nkeys;
  char *key[WF_MAX_KEYS];
  char *value[WF_MAX_KEYS];
  unsigned key_line[WF_MAX_KEYS];
};

struct wf {
  const char *path;
  struct wf_item *items;
  size_t n, cap;
};

static void
wf_free(struct wf *f)
{
  for (size_t i = 0; i < f->n; i++) {
    free(f->items[i].name);
    for (size_t k = 0; k < f->items[i].nkeys; k++) {
      free(f->items[i].key[k]);
      free(f->items[i].value[k]);
    }
  }
  free(f->items);
}

static char *
dup_range(const char *a, const char *b)
{
  while (a < b && (*a == ' ' || *a == '\t'))
    a++;
  while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\r'))
    b--;
  char *s = malloc((size_t)(b - a) + 1);
  if (s) {
    memcpy(s, a, (size_t)(b - a));
    s[b - a] = 0;
  }
  return s;
}

#define WF_FAIL(f, line, ...)                                                                   \
  kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "%s:%u: %s", (f)->path, (line),                 \
             wf_msg(__VA_ARGS__))

static const char *
wf_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static const char *
wf_msg(const char *fmt, ...)
{
  static _Thread_local char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

/* Parses text (NUL-terminated) into f. */
static kiln_status
wf_parse(const char *op, struct wf *f, char *text)
{
  unsigned lineno = 0;
  char *p = text;
  while (*p) {
    char *eol = strchr(p, '\n');
    char *next = eol ? eol + 1 : p + strlen(p);
    char *end = eol ? eol : next;
    lineno++;
    char *s = p;
    while (s < end && (*s == ' ' || *s == '\t'))
      s++;
    if (s == end || *s == '#' || *s == ';' || (*s == '\r' && s + 1 == end)) {
      p = next;
      continue;
    }
    if (*s == '[') {
      char *close = memchr(s, ']', (size_t)(end - s));
      if (!close)
        return WF_FAIL(f, lineno, "a section header without ']'");
      char *inner = dup_range(s + 1, close);
      KILN_RETURN_IF(!inner, KILN_ERR_HOST_MEMORY, op, "out of memory");
      int expr = strncmp(inner, "expr", 4) == 0 && (!inner[4] || inner[4] == ' ');
      int kern = strncmp(inner, "kernel", 6) == 0 && (!inner[6] || inner[6] == ' ');
      if (!expr && !kern) {
        free(inner);
        return WF_FAIL(f, lineno, "a section must be [kernel NAME] or [expr NAME]");
      }
      char *name = dup_range(inner + (expr ? 4 : 6), inner + strlen(inner));
      free(inner);
      KILN_RETURN_IF(!name, KILN_ERR_HOST_MEMORY, op, "out of memory");
      if (!*name) {
        free(name);
        return WF_FAIL(f, lineno, "a section without a name");
      }
      if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        struct wf_item *n = realloc(f->items, cap * sizeof *n);
        if (!n) {
          free(name);
          return kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "out of memory");
        }
        f->items = n;
        f->cap = cap;
      }
      struct wf_item *it = &f->items[f->n++];
      memset(it, 0, sizeof *it);
      it->expr = expr;
      it->name = name;
      it->line = lineno;
      p = next;
      continue;
    }
    if (!f->n)
      return WF_FAIL(f, lineno, "a key before the first section");
    struct wf_item *it = &f->items[f->n - 1];
    char *eq = memchr(s, '=', (size_t)(end - s));
    char *hd = strstr(s, "<<");
    if (hd && hd >= end)
      hd = NULL;
    if (hd && eq && eq < hd)
      hd = NULL;
    if (!eq && !hd)
      return WF_FAIL(f, lineno, "expected KEY = VALUE or KEY <<TAG");
    KILN_RETURN_IF(it->nkeys == WF_MAX_KEYS, KILN_ERR_INVALID_ARGUMENT, op,
                   "%s:%u: more than %d keys in one section", f->path, lineno, WF_MAX_KEYS);
    char *key = dup_range(s, hd ? hd : eq);
    char *value = NULL;
    unsigned key_line = lineno;
    if (hd) {
      char *tag = dup_range(hd + 2, end);
      if (!tag || !*tag) {
        free(key);
        free(tag);
        return WF_FAIL(f, lineno, "<< needs a closing tag, e.g. <<END");
      }
      /* The value: the following lines, up to one that is exactly the tag. */
      char *vstart = next, *q = next;
      char *vend = NULL;
      while (*q) {
        char *qe = strchr(q, '\n');
        char *qn = qe ? qe + 1 : q + strlen(q);
        char *qend = qe ? qe : qn;
        lineno++;
        char *t = dup_range(q, qend);
        int is_tag = t && strcmp(t, tag) == 0;
        free(t);
        if (is_tag) {
          vend = q;
          next = qn;
          break;
        }
        q = qn;
      }
      if (!vend) {
        kiln_status st = WF_FAIL(f, key_line, "no line \"%.60s\" ends this value", tag);
        free(key);
        free(tag);
        return st;
      }
      free(tag);
      value = malloc((size_t)(vend - vstart) + 1);
      if (value) {
        memcpy(value, vstart, (size_t)(vend - vstart));
        value[vend - vstart] = 0;
      }
    } else {
      value = dup_range(eq + 1, end);
    }
    if (!key || !value) {
      free(key);
      free(value);
      return kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "out of memory");
    }
    for (size_t k = 0; k < it->nkeys; k++)
      if (strcmp(it->key[k], key) == 0) {
        free(key);
        free(value);
        return WF_FAIL(f, key_line, "key \"%s\" given twice in [%s]", it->key[k], it->name);
      }
    it->key[it->nkeys] = key;
    it->value[it->nkeys] = value;
    it->key_line[it->nkeys++] = key_line;
    p = next;
  }
  return KILN_OK;
}

static const char *
wf_get(const struct wf_item *it, const char *key)
{
  for (size_t k = 0; k < it->nkeys; k++)
    if (strcmp(it->key[k], key) == 0)
      return it->value[k];
  return NULL;
}

/* Every key of it must be one of allowed (NULL-terminated). */
static kiln_status
wf_check_keys(const char *op, const struct wf *f, const struct wf_item *it,
              const char *const *allowed)
{
  for (size_t k = 0; k < it->nkeys; k++) {
    int ok = 0;
    for (size_t a = 0; allowed[a]; a++)
      ok |= strcmp(it->key[k], allowed[a]) == 0;
    if (!ok)
      return WF_FAIL(f, it->key_line[k], "key \"%s\" is not one of [%s]'s", it->key[k], it->name);
  }
  return KILN_OK;
}

/* Builds one kernel section. A failure to compile is the item's; bad keys are the file's. */
static kiln_status
wf_kernel(const char *op, kiln_context *ctx, const struct wf *f, const struct wf_item *it,
          int *file_error)
{
  const char *kind = wf_get(it, "kind");
  if (!kind)
    kind = "raw";
  static const char *const raw_keys[] = {"kind", "source", "kernel", "options", NULL};
  static const char *const ew_keys[] = {"kind", "arguments", "operation", "preamble", "options",
                                        NULL};
  static const char *const red_keys[] = {"kind",      "dtype",    "neutral", "reduce", "map",
                                         "arguments", "preamble", "options", NULL};
  static const char *const scan_keys[] = {"kind",      "dtype",    "neutral", "scan",
                                          "input",     "output",   "exclusive", "arguments",
                                          "preamble",  "options",  NULL};
  const char *const *keys = strcmp(kind, "raw") == 0           ? raw_keys
                            : strcmp(kind, "elementwise") == 0 ? ew_keys
                            : strcmp(kind, "reduction") == 0   ? red_keys
                            : strcmp(kind, "scan") == 0        ? scan_keys
                                                               : NULL;
  *file_error = 1;
  if (!keys)
    return WF_FAIL(f, it->line, "[%s]: kind \"%s\" is not raw, elementwise, reduction or scan",
                   it->name, kind);
  KILN_TRY(wf_check_keys(op, f, it, keys));
  kiln_dtype dt = KILN_F32;
  const char *dts = wf_get(it, "dtype");
  if (keys == red_keys || keys == scan_keys) {
    if (!dts || kiln_dtype_from_name(dts, &dt) != KILN_OK)
      return WF_FAIL(f, it->line, "[%s]: dtype \"%s\" is not a dtype name (f32, f64, i32, ...)",
                     it->name, dts ? dts : "");
  }
  int exclusive = 0;
  const char *ex = wf_get(it, "exclusive");
  if (ex) {
    if (strcmp(ex, "0") != 0 && strcmp(ex, "1") != 0)
      return WF_FAIL(f, it->line, "[%s]: exclusive must be 0 or 1", it->name);
    exclusive = ex[0] == '1';
  }
  *file_error = 0;
  kiln_user_kernel *k = NULL;
  const char *opts = wf_get(it, "options");
  kiln_status s;
  if (keys == raw_keys) {
    const char *kn = wf_get(it, "kernel");
    s = kiln_raw_kernel_create(ctx, it->name, wf_get(it, "source"), kn ? kn : it->name, opts, &k);
  } else if (keys == ew_keys) {
    s = kiln_elementwise_kernel_create(ctx, it->name, wf_get(it, "arguments"),
                                       wf_get(it, "operation"), wf_get(it, "preamble"), opts, &k);
  } else if (keys == red_keys) {
    s = kiln_reduction_kernel_create(ctx, it->name, dt, wf_get(it, "neutral"),
                                     wf_get(it, "reduce"), wf_get(it, "map"),
                                     wf_get(it, "arguments"), wf_get(it, "preamble"), opts, &k);
  } else {
    s = kiln_scan_kernel_create(ctx, it->name, dt, wf_get(it, "neutral"), wf_get(it, "scan"),
                                wf_get(it, "input"), wf_get(it, "output"), exclusive,
                                wf_get(it, "arguments"), wf_get(it, "preamble"), opts, &k);
  }
  kiln_user_kernel_release(k);
  return s;
}

kiln_status
kiln_user_kernel_warm_file(kiln_context *ctx, const char *path, kiln_cache_warm_fn progress,
                           void *user, kiln_cache_warm_result *out)
{
  static const char op[] = "kiln_user_kernel_warm_file";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!path, KILN_ERR_INVALID_ARGUMENT, op, "path is NULL");
  kiln_cache_warm_result res;
  memset(&res, 0, sizeof res);
  if (out)
    *out = res;
  /* a FIFO or device in the file's place must not hang the caller (kiln cache warm --from) */
  const char *why = "";
  int fd = kiln__open_regular(path, O_RDONLY, 0, NULL, &why);
  if (fd < 0)
    return kiln__fail(KILN_ERR_IO, op, errno, "cannot open %s: %s (%s)", path, why,
                      strerror(errno));
  FILE *fp = fdopen(fd, "rb");
  if (!fp) {
    int e = errno;
    close(fd);
    return kiln__fail(KILN_ERR_IO, op, e, "cannot open %s: %s", path, strerror(e));
  }
  char *text = malloc(WF_MAX_BYTES + 1);
  size_t len = text ? fread(text, 1, WF_MAX_BYTES + 1, fp) : 0;
  int rerr = ferror(fp);
  fclose(fp);
  if (!text)
    return kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "out of memory");
  if (rerr || len > WF_MAX_BYTES) {
    free(text);
    return kiln__fail(rerr ? KILN_ERR_IO : KILN_ERR_INVALID_ARGUMENT, op, 0, "%s: %s", path,
                      rerr ? "read error" : "larger than 16 MiB");
  }
  text[len] = 0;
  if (memchr(text, 0, len)) {
    free(text);
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "%s: contains a NUL byte", path);
  }
  struct wf f = {path, NULL, 0, 0};
  kiln_status s = wf_parse(op, &f, text);
  free(text);
  if (s != KILN_OK) {
    wf_free(&f);
    return s;
  }
  res.variants = f.n;
  kiln_status first = KILN_OK;
  char first_msg[600] = "";
  for (size_t i = 0; i < f.n; i++) {
    const struct wf_item *it = &f.items[i];
    kiln_cache_stats before, after;
    kiln_context_cache_stats(ctx, &before);
    int file_error = 0;
    if (it->expr) {
      static const char *const expr_keys[] = {"text", NULL};
      s = wf_check_keys(op, &f, it, expr_keys);
      const char *t = wf_get(it, "text");
      if (s == KILN_OK && !t)
        s = WF_FAIL(&f, it->line, "[expr %s] has no text", it->name);
      file_error = s != KILN_OK;
      if (s == KILN_OK)
        s = kiln__warm_expr_hook
                ? kiln__warm_expr_hook(ctx, it->name, t)
                : kiln__fail(KILN_ERR_UNSUPPORTED, op, 0,
                             "[expr %s]: this kiln has no fused expressions", it->name);
    } else {
      s = wf_kernel(op, ctx, &f, it, &file_error);
    }
    if (file_error || s == KILN_ERR_HOST_MEMORY || s == KILN_ERR_DEVICE_MEMORY ||
        s == KILN_ERR_INVALID_HANDLE) {
      wf_free(&f);
      if (out)
        *out = res;
      return s;
    }
    kiln_context_cache_stats(ctx, &after);
    res.done++;
    if (s == KILN_OK) {
      uint64_t hits = after.session.hits - before.session.hits;
      uint64_t stores = after.session.stores - before.session.stores;
      res.cached += hits > 0 && stores == 0;
      res.built += hits == 0;
      res.stored += stores > 0;
    } else {
      res.failed++;
      if (first == KILN_OK) {
        first = s;
        snprintf(first_msg, sizeof first_msg, "[%s %s] (line %u): %s", it->expr ? "expr" : "kernel",
                 it->name, it->line, kiln_last_error());
      }
    }
    char label[256];
    snprintf(label, sizeof label, "text:%s", it->name);
    if (progress && progress(res.done, res.variants, label, "", s, user))
      break;
  }
  wf_free(&f);
  if (out)
    *out = res;
  if (first != KILN_OK)
    return kiln__fail(first, op, 0, "%zu of %zu items failed, first %s", res.failed, res.done,
                      first_msg);
  return KILN_OK;
}
