/*
 * The autotuner's files under DIR/tuning, for `kiln cache stats` and `kiln
 * cache list --tuning`, through the inspection calls of include/kiln/tune.h
 * (no OpenCL; unusable files and malformed lines are skipped and counted).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tools/cache_cli.h"
#include "tools/units.h"

/* Whether DIR/tuning exists (as anything: the library judges what it is). */
static int
tuning_present(const struct cache_cli *c)
{
  char path[4200];
  struct stat st;
  snprintf(path, sizeof path, "%s/tuning", c->dir);
  return c->exists && lstat(path, &st) == 0;
}

int
tuning_summary(const struct cache_cli *c, struct tuning_summary *out)
{
  memset(out, 0, sizeof *out);
  out->present = tuning_present(c);
  if (!out->present)
    return EXIT_OK;
  kiln_tune_dir_stats st;
  if (kiln_tune_dir_stats_get(c->dir, &st) != KILN_OK) {
    snprintf(out->error, sizeof out->error, "%s", kiln_last_error());
    return cli_fail_kiln(c);
  }
  out->files = st.files;
  out->bytes = st.bytes;
  out->results = st.results;
  out->failures = st.failures;
  out->unusable = st.unusable;
  out->bad_lines = st.bad_lines;
  return EXIT_OK;
}

/* Tuning entries copied out of the listing callback. */
struct tune_row {
  char *path, *device, *driver, *family, *dtype, *bucket, *params, *failed;
  uint64_t time_ns, default_ns;
};

struct tune_rows {
  struct tune_row *v;
  size_t n, cap;
  const char *device; /* filter: substring of the device, any case; NULL for all */
  int oom;
};

static int
add_row(const kiln_tune_entry *e, void *user)
{
  struct tune_rows *t = user;
  if (t->device && !contains_nocase(e->device, t->device))
    return 0;
  if (t->n == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 32;
    struct tune_row *v = realloc(t->v, cap * sizeof *v);
    if (!v) {
      t->oom = 1;
      return 1;
    }
    t->v = v;
    t->cap = cap;
  }
  struct tune_row *r = &t->v[t->n++];
  r->path = strdup(e->path);
  r->device = strdup(e->device);
  r->driver = strdup(e->driver);
  r->family = strdup(e->family);
  r->dtype = strdup(e->dtype);
  r->bucket = strdup(e->bucket);
  r->params = strdup(e->params);
  r->failed = strdup(e->failed);
  r->time_ns = e->time_ns;
  r->default_ns = e->default_ns;
  if (!r->path || !r->device || !r->driver || !r->family || !r->dtype || !r->bucket ||
      !r->params || !r->failed) {
    t->oom = 1;
    return 1;
  }
  return 0;
}

static void
free_rows(struct tune_rows *t)
{
  for (size_t i = 0; i < t->n; i++) {
    struct tune_row *r = &t->v[i];
    free(r->path);
    free(r->device);
    free(r->driver);
    free(r->family);
    free(r->dtype);
    free(r->bucket);
    free(r->params);
    free(r->failed);
  }
  free(t->v);
}

/* "850 ns", "12.3 us", "1.25 ms", "2.50 s". */
static const char *
fmt_ns(uint64_t ns, char *buf, size_t len)
{
  if (ns < 1000)
    snprintf(buf, len, "%llu ns", (unsigned long long)ns);
  else if (ns < 1000000)
    snprintf(buf, len, "%.1f us", (double)ns / 1e3);
  else if (ns < 1000000000)
    snprintf(buf, len, "%.2f ms", (double)ns / 1e6);
  else
    snprintf(buf, len, "%.2f s", (double)ns / 1e9);
  return buf;
}

int
tuning_list(const struct cache_cli *c, const char *device, struct json *j)
{
  struct tune_rows t = {.device = device};
  int present = tuning_present(c);
  int rc = EXIT_OK;
  if (present) {
    kiln_status s = kiln_tune_dir_list(c->dir, add_row, &t);
    if (t.oom)
      rc = cli_fail(c, "out of memory");
    else if (s != KILN_OK)
      rc = cli_fail_kiln(c);
  }
  char path[4200];
  snprintf(path, sizeof path, "%s/tuning", c->dir);
  if (rc) {
    free_rows(&t);
    return rc;
  }
  if (j) {
    json_object_begin(j, "tuning");
    json_string(j, "dir", path);
    json_bool(j, "present", present);
    json_u64(j, "count", t.n);
    json_array_begin(j, "entries");
    for (size_t i = 0; i < t.n; i++) {
      const struct tune_row *r = &t.v[i];
      json_object_begin(j, NULL);
      json_string(j, "path", r->path);
      json_string(j, "device", r->device);
      json_string(j, "driver", r->driver);
      json_string(j, "family", r->family);
      json_string(j, "dtype", r->dtype);
      json_string(j, "bucket", r->bucket);
      json_string(j, "params", r->params);
      json_u64(j, "time_ns", r->time_ns);
      json_u64(j, "default_ns", r->default_ns);
      json_string(j, "failed", r->failed);
      json_object_end(j);
    }
    json_array_end(j);
    json_object_end(j);
  } else if (!t.n) {
    printf("no tuning entries%s in %s%s\n", device ? " match" : "", path,
           present ? "" : " (it does not exist)");
  } else {
    struct table tb;
    const char *hdr[] = {"DEVICE", "DRIVER",  "FAMILY",  "DTYPE", "BUCKET",
                         "TUNED",  "DEFAULT", "SPEEDUP", "PARAMETERS"};
    table_init(&tb, 9, 1u << 5 | 1u << 6 | 1u << 7, hdr);
    size_t results = 0;
    for (size_t i = 0; i < t.n; i++) {
      const struct tune_row *r = &t.v[i];
      char tuned[32] = "-", def[32] = "-", speed[64];
      if (r->failed[0]) {
        snprintf(speed, sizeof speed, "failed: %s", r->failed);
      } else {
        results++;
        fmt_ns(r->time_ns, tuned, sizeof tuned);
        fmt_ns(r->default_ns, def, sizeof def);
        if (r->time_ns)
          snprintf(speed, sizeof speed, "%.2fx", (double)r->default_ns / (double)r->time_ns);
        else
          snprintf(speed, sizeof speed, "-");
      }
      const char *row[] = {r->device, r->driver, r->family, r->dtype, r->bucket,
                           tuned,     def,       speed,     r->params};
      table_row(&tb, row);
    }
    table_print(&tb, stdout, 0);
    table_free(&tb);
    printf("%zu tuned key%s, %zu failed candidate%s in %s\n", results, results == 1 ? "" : "s",
           t.n - results, t.n - results == 1 ? "" : "s", path);
  }
  free_rows(&t);
  return EXIT_OK;
}
