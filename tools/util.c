#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/commands.h"

int
tool_wants_help(int argc, char **argv, const char *usage)
{
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(usage, stdout);
      return 1;
    }
  }
  return 0;
}

double
tool_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int
tool_usage_error(const char *cmd, const char *fmt, ...)
{
  fprintf(stderr, "kiln %s: ", cmd);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n(see 'kiln %s --help')\n", cmd);
  return 2;
}

int
tool_opt_value(const char *cmd, int argc, char **argv, int *i, const char *name, const char **value)
{
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0 || (a[n] != 0 && a[n] != '='))
    return 0;
  if (a[n] == '=') {
    *value = a + n + 1;
  } else if (*i + 1 < argc && strncmp(argv[*i + 1], "--", 2) == 0) {
    /* `--device --dir D` left out the value: --dir is the next option, not a device name */
    tool_usage_error(cmd, "%s needs a value before %s (%s=VALUE takes one that starts with --)",
                     name, argv[*i + 1], name);
    return -1;
  } else if (*i + 1 < argc) {
    *value = argv[++*i];
  } else {
    tool_usage_error(cmd, "%s needs a value", name);
    return -1;
  }
  /* An empty filter would silently match everything (or nothing): refuse it. */
  if (!**value) {
    tool_usage_error(cmd, "%s needs a value, not an empty string", name);
    return -1;
  }
  return 1;
}

/* Decimal digits into *v, refusing anything above limit. The end, or NULL. */
static const char *
digits(const char *s, uint64_t limit, uint64_t *v)
{
  if (!isdigit((unsigned char)*s))
    return NULL;
  *v = 0;
  for (; isdigit((unsigned char)*s); s++) {
    *v = *v * 10 + (uint64_t)(*s - '0');
    if (*v > limit)
      return NULL;
  }
  return s;
}

int
tool_parse_count(const char *s, int64_t min, int64_t max, int64_t *out)
{
  uint64_t v;
  if (strncmp(s, "2^", 2) == 0) {
    const char *end = digits(s + 2, 62, &v);
    if (!end || *end)
      return -1;
    v = (uint64_t)1 << v;
  } else {
    /* N[.F][k|M]: whole, then up to 9 fraction digits as a fraction of 10^9 (1.5k = 1536). */
    uint64_t whole, frac = 0, scale = 1000000000, mul = 1;
    const char *p = digits(s, (uint64_t)1 << 62, &whole);
    if (!p)
      return -1;
    if (*p == '.') {
      p++;
      if (!isdigit((unsigned char)*p))
        return -1;
      for (; isdigit((unsigned char)*p); p++)
        if (scale > 1) {
          scale /= 10;
          frac += (uint64_t)(*p - '0') * scale;
        } else if (*p != '0') {
          return -1; /* no count has a tenth of a nano-element */
        }
    }
    if (*p == 'k' || *p == 'K')
      mul = 1024, p++;
    else if (*p == 'm' || *p == 'M')
      mul = 1024 * 1024, p++;
    if (*p || whole > ((uint64_t)1 << 62) / mul || (frac * mul) % 1000000000 != 0)
      return -1; /* trailing junk, too large, or not a whole number of elements */
    v = whole * mul + frac * mul / 1000000000;
  }
  if (v < (uint64_t)min || v > (uint64_t)max)
    return -1;
  *out = (int64_t)v;
  return 0;
}

int
tool_parse_int(const char *s, long min, long max, long *out)
{
  uint64_t v;
  const char *end = digits(s, (uint64_t)max, &v);
  if (!end || *end || (int64_t)v < min)
    return -1;
  *out = (long)v;
  return 0;
}

int
tool_parse_list(const char *cmd, const char *flag, const char *list, int cap, tool_item_fn fn,
                void *arg)
{
  int n = 0;
  for (const char *s = list;; n++) {
    size_t len = strcspn(s, ",");
    if (len == 0) {
      tool_usage_error(cmd, "%s: empty item in '%s' (a comma-separated list without empty items)",
                       flag, list);
      return -1;
    }
    if (n == cap) {
      tool_usage_error(cmd, "%s: at most %d items", flag, cap);
      return -1;
    }
    char item[256];
    snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), s);
    if (len >= sizeof item || fn(item, n, arg) != 0) {
      if (len >= sizeof item)
        tool_usage_error(cmd, "%s: item '%s...' is too long", flag, item);
      return -1;
    }
    s += len;
    if (!*s)
      return n + 1;
    s++; /* the comma: an item must follow */
  }
}

struct counts_arg {
  const char *cmd, *flag;
  int64_t *out;
};

static int
count_item(const char *item, int i, void *arg)
{
  struct counts_arg *a = arg;
  if (tool_parse_count(item, 1, TOOL_MAX_COUNT, &a->out[i]) == 0)
    return 0;
  tool_usage_error(a->cmd, "%s: bad size '%s' (N, Nk, NM or 2^N: a whole count from 1 to 2^40)",
                   a->flag, item);
  return -1;
}

int
tool_parse_counts(const char *cmd, const char *flag, const char *list, int64_t *out, int cap)
{
  struct counts_arg a = {cmd, flag, out};
  return tool_parse_list(cmd, flag, list, cap, count_item, &a);
}

struct dtypes_arg {
  const char *cmd, *flag;
  kiln_dtype *out;
};

static int
dtype_item(const char *item, int i, void *arg)
{
  struct dtypes_arg *a = arg;
  if (kiln_dtype_from_name(item, &a->out[i]) == KILN_OK)
    return 0;
  char names[128] = "";
  size_t used = 0;
  for (int d = 0; d < KILN_DTYPE_COUNT; d++) {
    int w = snprintf(names + used, sizeof names - used, "%s%s", d ? ", " : "",
                     kiln_dtype_name((kiln_dtype)d));
    used += w > 0 && (size_t)w < sizeof names - used ? (size_t)w : 0;
  }
  tool_usage_error(a->cmd, "%s: bad dtype '%s' (%s)", a->flag, item, names);
  return -1;
}

int
tool_parse_dtypes(const char *cmd, const char *flag, const char *list, kiln_dtype *out, int cap)
{
  struct dtypes_arg a = {cmd, flag, out};
  return tool_parse_list(cmd, flag, list, cap, dtype_item, &a);
}
