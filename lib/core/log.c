#include "core/env.h"
#include "core/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* -2: not read yet. Read lazily so that library load does no work. */
static atomic_int threshold = -2;

/* The host's handler and its argument, replaced together. */
static pthread_mutex_t handler_lock = PTHREAD_MUTEX_INITIALIZER;
static kiln_log_fn handler;
static void *handler_user;

/* The level KILN_LOG names; *bad set when it names none (warn then, as other variables). */
static int
level_from_env(int *bad)
{
  const char *v = kiln__env(KILN__ENV_LOG);
  *bad = 0;
  if (!v || !*v)
    return KILN__LOG_WARN;
  static const char *names[] = {"error", "warn", "info", "debug"};
  for (int i = 0; i < 4; i++)
    if (strcasecmp(v, names[i]) == 0)
      return i;
  if (strcasecmp(v, "off") == 0 || strcasecmp(v, "none") == 0)
    return -1;
  *bad = 1;
  return KILN__LOG_WARN;
}

static int
current_threshold(void)
{
  int t = atomic_load(&threshold);
  if (t == -2) {
    int bad;
    t = level_from_env(&bad);
    int expected = -2;
    /* A level set by the API meanwhile wins over the environment. */
    if (!atomic_compare_exchange_strong(&threshold, &expected, t))
      t = expected;
    else if (bad) /* once: the threshold is set now, so this does not come back here */
      kiln__log(KILN__LOG_WARN, "KILN_LOG=\"%s\" is not error, warn, info, debug or off; using warn",
                kiln__env(KILN__ENV_LOG));
  }
  return t;
}

void
kiln__log_set_level(int level)
{
  atomic_store(&threshold, level < -1 ? -2 : level);
}

void
kiln__log(enum kiln__log_level level, const char *fmt, ...)
{
  if ((int)level > current_threshold())
    return;
  static const char *tags[] = {"error", "warning", "info", "debug"};
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&handler_lock);
  kiln_log_fn fn = handler;
  void *user = handler_user;
  pthread_mutex_unlock(&handler_lock);
  if (fn)
    fn((kiln_log_level)level, buf, user);
  else
    fprintf(stderr, "kiln %s: %s\n", tags[level], buf);
}

void
kiln__log_set_handler(kiln_log_fn fn, void *user)
{
  pthread_mutex_lock(&handler_lock);
  handler = fn;
  handler_user = fn ? user : NULL;
  pthread_mutex_unlock(&handler_lock);
}

int
kiln__log_level(void)
{
  return current_threshold();
}
