#include "tools/units.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

const char *
units_size(uint64_t bytes, char *buf, size_t len)
{
  static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) {
    snprintf(buf, len, "%" PRIu64 " B", bytes);
    return buf;
  }
  double v = (double)bytes / 1024.0;
  int u = 0;
  /* Switch unit before rounding would print "1024.0". */
  while (v >= 1023.95 && u < 4) {
    v /= 1024.0;
    u++;
  }
  snprintf(buf, len, "%.1f %s", v, unit[u]);
  return buf;
}

const char *
units_age(int64_t t, int64_t now, char *buf, size_t len)
{
  int64_t d = now - t;
  if (d < -60) {
    snprintf(buf, len, "in the future");
    return buf;
  }
  if (d < 10) {
    snprintf(buf, len, "just now");
    return buf;
  }
  static const struct {
    int64_t below; /* use this unit while d is below this many seconds */
    int64_t secs;
    const char *name;
  } ladder[] = {
      {60, 1, "second"},
      {3600, 60, "minute"},
      {2 * 86400, 3600, "hour"},
      {14 * 86400, 86400, "day"},
      {60 * 86400, 7 * 86400, "week"},
      {730 * 86400, 30 * 86400, "month"},
      {INT64_MAX, 365 * 86400, "year"},
  };
  size_t i = 0;
  while (d >= ladder[i].below)
    i++;
  int64_t n = d / ladder[i].secs;
  snprintf(buf, len, "%" PRId64 " %s%s ago", n, ladder[i].name, n == 1 ? "" : "s");
  return buf;
}

const char *
units_date(int64_t t, char *buf, size_t len)
{
  time_t tt = (time_t)t;
  struct tm tm;
  if (t == 0 || !localtime_r(&tt, &tm) || strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm) == 0)
    snprintf(buf, len, "-");
  return buf;
}

int
units_parse_size(const char *s, uint64_t *out)
{
  if (!s || !isdigit((unsigned char)*s))
    return -1;
  uint64_t whole = 0;
  while (isdigit((unsigned char)*s)) {
    unsigned dig = (unsigned)(*s++ - '0');
    if (whole > (UINT64_MAX - dig) / 10)
      return -1;
    whole = whole * 10 + dig;
  }
  /* Up to 9 fraction digits, as a fraction of 10^9. */
  uint64_t frac = 0, scale = 1000000000;
  if (*s == '.') {
    s++;
    if (!isdigit((unsigned char)*s))
      return -1;
    for (; isdigit((unsigned char)*s); s++) {
      if (scale > 1) {
        scale /= 10;
        frac += (uint64_t)(*s - '0') * scale;
      }
    }
  }
  uint64_t mul = 1;
  const char *units = "KMGT";
  const char *u = *s ? strchr(units, toupper((unsigned char)*s)) : NULL;
  if (u) {
    for (const char *p = units; p <= u; p++)
      mul *= 1024;
    s++;
    if ((s[0] == 'i' || s[0] == 'I') && (s[1] == 'B' || s[1] == 'b'))
      s += 2;
    else if (s[0] == 'B' || s[0] == 'b')
      s++;
  } else if (*s == 'B' || *s == 'b') {
    s++;
  }
  if (*s)
    return -1;
  if (whole > UINT64_MAX / mul)
    return -1;
  uint64_t v = whole * mul;
  /* The fraction is below one unit (at most 2^40 bytes): a double holds it exactly enough. */
  uint64_t fpart = mul > 1 ? (uint64_t)((double)frac / 1e9 * (double)mul) : 0;
  if (v > UINT64_MAX - fpart)
    return -1;
  *out = v + fpart;
  return 0;
}

int
units_parse_age(const char *s, int64_t *seconds)
{
  if (!s || !*s)
    return -1;
  const int64_t limit = (int64_t)100 * 366 * 86400;
  int64_t total = 0;
  while (*s) {
    if (!isdigit((unsigned char)*s))
      return -1;
    int64_t n = 0;
    while (isdigit((unsigned char)*s)) {
      n = n * 10 + (*s++ - '0');
      if (n > limit)
        return -1;
    }
    int64_t unit;
    switch (*s) {
    case 's':
      unit = 1;
      break;
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    case 'w':
      unit = 7 * 86400;
      break;
    default:
      return -1;
    }
    s++;
    if (n > (limit - total) / unit)
      return -1;
    total += n * unit;
  }
  *seconds = total;
  return 0;
}
