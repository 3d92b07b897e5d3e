#include "tools/json.h"

#include <inttypes.h>
#include <math.h>

void
json_init(struct json *j, FILE *f)
{
  j->f = f;
  j->depth = 0;
  j->count[0] = 0;
  j->bad = 0;
}

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0 if the bytes there are not one. */
static int
utf8_len(const unsigned char *s)
{
  unsigned char c = s[0];
  if (c < 0x80)
    return 1;
  int n;
  unsigned char lo = 0x80, hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf)
    n = 2;
  else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0)
      lo = 0xa0; /* no overlong forms */
    if (c == 0xed)
      hi = 0x9f; /* no surrogates */
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0)
      lo = 0x90;
    if (c == 0xf4)
      hi = 0x8f; /* nothing above U+10FFFF */
  } else {
    return 0;
  }
  if (s[1] < lo || s[1] > hi)
    return 0;
  for (int i = 2; i < n; i++)
    if (s[i] < 0x80 || s[i] > 0xbf)
      return 0;
  return n;
}

void
json_write_string(FILE *f, const char *str)
{
  const unsigned char *s = (const unsigned char *)str;
  fputc('"', f);
  while (*s) {
    unsigned char c = *s;
    if (c == '"' || c == '\\') {
      fputc('\\', f);
      fputc(c, f);
      s++;
    } else if (c < 0x20) {
      switch (c) {
      case '\n':
        fputs("\\n", f);
        break;
      case '\t':
        fputs("\\t", f);
        break;
      case '\r':
        fputs("\\r", f);
        break;
      case '\b':
        fputs("\\b", f);
        break;
      case '\f':
        fputs("\\f", f);
        break;
      default:
        fprintf(f, "\\u%04x", c);
        break;
      }
      s++;
    } else {
      int n = utf8_len(s);
      if (n == 0) {
        fputs("\\ufffd", f);
        s++;
      } else {
        fwrite(s, 1, (size_t)n, f);
        s += n;
      }
    }
  }
  fputc('"', f);
}

/* Comma, newline and indentation before a value, then its key when in an object. */
static int
prefix(struct json *j, const char *key)
{
  if (j->depth >= JSON_MAX_DEPTH) {
    j->bad = 1;
    return -1;
  }
  if (j->depth > 0) {
    fputs(j->count[j->depth] ? ",\n" : "\n", j->f);
    for (int i = 0; i < j->depth; i++)
      fputs("  ", j->f);
  } else if (j->count[0]) {
    j->bad = 1; /* a second top-level value */
  }
  j->count[j->depth]++;
  if (key) {
    json_write_string(j->f, key);
    fputs(": ", j->f);
  }
  return 0;
}

static void
begin(struct json *j, const char *key, char open)
{
  if (prefix(j, key) != 0)
    return;
  fputc(open, j->f);
  j->depth++;
  if (j->depth < JSON_MAX_DEPTH)
    j->count[j->depth] = 0;
  else
    j->bad = 1;
}

static void
end(struct json *j, char close)
{
  if (j->depth == 0) {
    j->bad = 1;
    return;
  }
  int had = j->depth < JSON_MAX_DEPTH ? j->count[j->depth] : 0;
  j->depth--;
  if (had) {
    fputc('\n', j->f);
    for (int i = 0; i < j->depth; i++)
      fputs("  ", j->f);
  }
  fputc(close, j->f);
}

void
json_object_begin(struct json *j, const char *key)
{
  begin(j, key, '{');
}

void
json_object_end(struct json *j)
{
  end(j, '}');
}

void
json_array_begin(struct json *j, const char *key)
{
  begin(j, key, '[');
}

void
json_array_end(struct json *j)
{
  end(j, ']');
}

void
json_string(struct json *j, const char *key, const char *value)
{
  if (prefix(j, key) != 0)
    return;
  if (value)
    json_write_string(j->f, value);
  else
    fputs("null", j->f);
}

void
json_u64(struct json *j, const char *key, uint64_t value)
{
  if (prefix(j, key) == 0)
    fprintf(j->f, "%" PRIu64, value);
}

void
json_i64(struct json *j, const char *key, int64_t value)
{
  if (prefix(j, key) == 0)
    fprintf(j->f, "%" PRId64, value);
}

void
json_double(struct json *j, const char *key, double value)
{
  if (prefix(j, key) != 0)
    return;
  if (isfinite(value))
    fprintf(j->f, "%.15g", value);
  else
    fputs("null", j->f);
}

void
json_bool(struct json *j, const char *key, int value)
{
  if (prefix(j, key) == 0)
    fputs(value ? "true" : "false", j->f);
}

void
json_null(struct json *j, const char *key)
{
  if (prefix(j, key) == 0)
    fputs("null", j->f);
}

int
json_end(struct json *j)
{
  fputc('\n', j->f);
  if (fflush(j->f) != 0 || ferror(j->f))
    return -1;
  return j->depth == 0 && !j->bad && j->count[0] == 1 ? 0 : -1;
}
