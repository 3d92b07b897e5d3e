/*
 * Where kiln's on-disk caches live. One small function on purpose: the
 * kernel-cache work resolves the same directory with its own policy (modes,
 * ownership checks), and this one is swapped for it when the two meet.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "runtime/runtime.h"

/* secure_getenv: environment ignored in setuid programs (glibc; _GNU_SOURCE is set project-wide).
 */
static const char *
env(const char *name)
{
  const char *v = secure_getenv(name);
  return v && *v ? v : NULL;
}

int
kiln__cache_dir(char *buf, size_t len)
{
  const char *mode = env("KILN_CACHE");
  if (mode && strcasecmp(mode, "off") == 0)
    return -1;
  const char *dir = env("KILN_CACHE_DIR");
  int n;
  if (dir)
    n = snprintf(buf, len, "%s", dir);
  else if ((dir = env("XDG_CACHE_HOME")) && dir[0] == '/')
    n = snprintf(buf, len, "%s/kiln", dir);
  else if ((dir = env("HOME")))
    n = snprintf(buf, len, "%s/.cache/kiln", dir);
  else
    return -1;
  return n > 0 && (size_t)n < len ? 0 : -1;
}

int
kiln__mkdir_p(const char *path)
{
  char tmp[4096];
  size_t len = strlen(path);
  if (len == 0 || len >= sizeof tmp)
    return -1;
  memcpy(tmp, path, len + 1);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = 0;
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
      return -1;
    *p = '/';
  }
  if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
    return -1;
  struct stat st;
  return stat(tmp, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}
