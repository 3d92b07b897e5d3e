/*
 * Inspection of a cache directory's tuning files without a device: the calls
 * `kiln cache stats` and `kiln cache list --tuning` use (include/kiln/tune.h).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "kiln/cache.h"
#include "kiln/tune.h"
#include "runtime/tune_file.h"

typedef int (*file_fn)(const char *path, const char *name, const struct stat *st, void *arg);

/* Calls fn for every "*--*.txt" regular file of DIR/tuning, in name order. */
static kiln_status
walk(const char *op, const char *cache_dir, file_fn fn, void *arg)
{
  char dirbuf[4096], tdir[4200];
  if (!cache_dir) {
    KILN_TRY(kiln_cache_default_dir(dirbuf, sizeof dirbuf));
    cache_dir = dirbuf;
  }
  const char *why = "";
  int r = kiln__tf_dir(cache_dir, 0, tdir, sizeof tdir, &why);
  if (r == 1)
    return KILN_OK;
  KILN_RETURN_IF(r < 0, KILN_ERR_IO, op, "%s/tuning: %s", cache_dir, why);
  struct dirent **names = NULL;
  int n = scandir(tdir, &names, NULL, alphasort);
  KILN_RETURN_IF(n < 0, KILN_ERR_IO, op, "cannot list %s", tdir);
  int stop = 0;
  for (int i = 0; i < n; i++) {
    const char *nm = names[i]->d_name;
    size_t len = strlen(nm);
    char path[4600];
    struct stat st;
    if (!stop && len > 4 && strcmp(nm + len - 4, ".txt") == 0 && strstr(nm, "--") &&
        snprintf(path, sizeof path, "%s/%s", tdir, nm) < (int)sizeof path &&
        lstat(path, &st) == 0 && S_ISREG(st.st_mode))
      stop = fn(path, nm, &st, arg);
    free(names[i]);
  }
  free(names);
  return KILN_OK;
}

struct list_arg {
  kiln_tune_entry_fn fn;
  void *user;
};

static int
list_file(const char *path, const char *name, const struct stat *st, void *arg)
{
  (void)st;
  struct list_arg *a = arg;
  char device[256], driver[256];
  const char *sep = strstr(name, "--");
  snprintf(device, sizeof device, "%.*s", (int)(sep - name), name);
  snprintf(driver, sizeof driver, "%.*s", (int)(strlen(sep + 2) - 4), sep + 2);
  struct kiln__tf_table t;
  const char *why = NULL;
  if (kiln__tf_read(path, &t, &why) != 0)
    return 0;
  int stop = 0;
  for (size_t i = 0; i < t.n && !stop; i++) {
    const struct kiln__tf_entry *e = &t.e[i];
    char params[1024];
    kiln__tf_format_params(e, params, sizeof params);
    kiln_tune_entry out = {path,      device,    driver,     e->family,     e->dtype, e->bucket,
                           params,    e->time_ns, e->default_ns, e->failed};
    stop = a->fn(&out, a->user);
  }
  kiln__tf_free(&t);
  return stop;
}

kiln_status
kiln_tune_dir_list(const char *cache_dir, kiln_tune_entry_fn fn, void *user)
{
  static const char op[] = "kiln_tune_dir_list";
  KILN_RETURN_IF(!fn, KILN_ERR_INVALID_ARGUMENT, op, "fn is NULL");
  struct list_arg a = {fn, user};
  return walk(op, cache_dir, list_file, &a);
}

static int
stat_file(const char *path, const char *name, const struct stat *st, void *arg)
{
  (void)name;
  kiln_tune_dir_stats *s = arg;
  s->files++;
  s->bytes += (uint64_t)st->st_size;
  struct kiln__tf_table t;
  const char *why = NULL;
  if (kiln__tf_read(path, &t, &why) != 0) {
    s->unusable++;
    return 0;
  }
  for (size_t i = 0; i < t.n; i++) {
    if (t.e[i].failed[0])
      s->failures++;
    else
      s->results++;
  }
  s->bad_lines += t.skipped;
  kiln__tf_free(&t);
  return 0;
}

kiln_status
kiln_tune_dir_stats_get(const char *cache_dir, kiln_tune_dir_stats *out)
{
  static const char op[] = "kiln_tune_dir_stats_get";
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  memset(out, 0, sizeof *out);
  return walk(op, cache_dir, stat_file, out);
}
