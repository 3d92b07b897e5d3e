#include "core/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* -2: not read yet. Read lazily so that library load does no work. */
static atomic_int threshold = -2;

static int
level_from_env(void)
{
  const char *v = getenv("KILN_LOG");
  if (!v || !*v)
    return KILN__LOG_WARN;
  static const char *names[] = {"error", "warn", "info", "debug"};
  for (int i = 0; i < 4; i++)
    if (strcasecmp(v, names[i]) == 0)
      return i;
  if (strcasecmp(v, "off") == 0 || strcasecmp(v, "none") == 0)
    return -1;
  return KILN__LOG_WARN;
}

void
kiln__log_set_level(int level)
{
  atomic_store(&threshold, level < -1 ? -2 : level);
}

void
kiln__log(enum kiln__log_level level, const char *fmt, ...)
{
  int t = atomic_load(&threshold);
  if (t == -2) {
    t = level_from_env();
    atomic_store(&threshold, t);
  }
  if ((int)level > t)
    return;
  static const char *tags[] = {"error", "warning", "info", "debug"};
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "kiln %s: %s\n", tags[level], buf);
}
