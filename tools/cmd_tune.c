/*
 * kiln tune: runs the autotuner (kiln_tune_run) for the chosen families,
 * dtypes and sizes, shows progress, and reports default vs tuned time per key
 * next to the best plain copy kernel's bandwidth on the same device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/bench.h"
#include "tools/commands.h"
#include "tools/json.h"

static const char usage[] =
    "usage: kiln tune [options]\n\n"
    "Finds the fastest launch parameters of kiln's kernel families, the faster FFT back\n"
    "end and the faster GEMM route on this device and stores them in the device's\n"
    "tuning file under the cache directory, where every program using kiln on this\n"
    "device picks them up (docs/tuning.md). For each key (family, dtype, size bucket)\n"
    "it times the built-in defaults and the candidates (OpenCL profiling events; fft\n"
    "and gemm: wall time of a call; median of --reps runs), checks each candidate's\n"
    "output against the defaults' output, and keeps the fastest correct one.\n\n"
    "options:\n"
    "  --family F      elementwise, reduce, scan, fft (back end of auto FFT plans), gemm\n"
    "                  (kiln kernel or CLBlast; on GPUs also xgemm, CLBlast's GEMM kernel\n"
    "                  parameters), linalg (panel route and block size of LU, Cholesky,\n"
    "                  QR), conv (convolution route), attention (tile of the attention\n"
    "                  forward kernel), cast, copy (kiln_copy) or random (normal values)\n"
    "                  (default: all)\n"
    "  --dtype LIST    dtypes, comma separated: f32, f64, f16, bf16, c64, c128, i32, i64,\n"
    "                  u8, bool (default f32). A family without keys of a dtype skips it\n"
    "                  with a note (an error with --family naming that family); f64 and\n"
    "                  c128 are skipped without fp64\n"
    "  --sizes LIST    sizes, comma separated: element counts, for fft the points of one\n"
    "                  transform, for gemm m*n*k; k/M suffixes and 2^N accepted; each is\n"
    "                  tuned at 2^floor(log2) (default 2^12,2^16,2^20,2^24; fft every 2^k\n"
    "                  from 2^8 to 2^24; gemm every 2^k from 2^10 to 2^24)\n"
    "  --layout LIST   bucket layouts: flat (elementwise), full, row, col (reduce, scan),\n"
    "                  points (fft), mnk (gemm) (default: all)\n"
    "  --device SEL    device selector as KILN_DEVICE takes it (P:D or name substring)\n"
    "  --reps N        timed runs per candidate (default 5)\n"
    "  --quick         the small candidate set that online tuning (KILN_TUNE=online) uses\n"
    "  --dry-run       report only: store nothing\n"
    "  --no-copy       skip the plain-copy bandwidth reference\n"
    "  --json          one JSON document on stdout (every candidate included)\n"
    "  --list          print this device's stored tuning entries and exit\n\n"
    "Exit status: 0 every key tuned, 1 a key or the device failed, 2 usage error.\n";

#define MAX_SIZES 32
#define MAX_DTYPES KILN_DTYPE_COUNT

struct options {
  const char *family, *layouts, *device;
  uint64_t sizes[MAX_SIZES];
  int nsizes;
  kiln_dtype dtypes[MAX_DTYPES];
  int ndtypes;
  int reps, quick, dry_run, copy, json, list;
};

/* A --layout item: one of the layouts some family has (kiln_tune_family_get). */
static int
layout_item(const char *item, int i, void *arg)
{
  (void)i, (void)arg;
  char all[160] = "";
  size_t used = 0;
  kiln_tune_family_desc d;
  for (size_t f = 0; kiln_tune_family_get(f, &d) == KILN_OK; f++) {
    for (const char *l = d.layouts; *l;) {
      size_t n = strcspn(l, " ");
      if (n == strlen(item) && strncmp(l, item, n) == 0)
        return 0;
      char name[32];
      snprintf(name, sizeof name, "%.*s", (int)n, l);
      if (!strstr(all, name)) {
        int w = snprintf(all + used, sizeof all - used, "%s%s", used ? ", " : "", name);
        used += w > 0 && (size_t)w < sizeof all - used ? (size_t)w : 0;
      }
      l += n + strspn(l + n, " ");
    }
  }
  tool_usage_error("tune", "--layout: no layout '%s' (%s)", item, all);
  return -1;
}

/* With --family, every --layout item must be one of that family's layouts: otherwise the
   request selects no key and the run would tune nothing. Nonzero after a usage error. */
static int
family_lacks_layout(const char *family, const char *layouts)
{
  kiln_tune_family_desc d;
  for (size_t f = 0; kiln_tune_family_get(f, &d) == KILN_OK; f++) {
    if (strcmp(d.name, family) != 0)
      continue;
    for (const char *l = layouts; *l;) {
      size_t n = strcspn(l, ",");
      int found = 0;
      for (const char *h = d.layouts; *h && !found;) {
        size_t m = strcspn(h, " ");
        found = m == n && strncmp(h, l, n) == 0;
        h += m + strspn(h + m, " ");
      }
      if (!found) {
        tool_usage_error("tune", "--layout: %s has no layout '%.*s' (%s)", family, (int)n, l,
                         d.layouts);
        return 1;
      }
      l += n + (l[n] == ',');
    }
  }
  return 0;
}

static int
parse_options(int argc, char **argv, struct options *o)
{
  memset(o, 0, sizeof *o);
  o->copy = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    int r;
    if (strcmp(a, "--json") == 0) {
      o->json = 1;
    } else if (strcmp(a, "--quick") == 0) {
      o->quick = 1;
    } else if (strcmp(a, "--dry-run") == 0) {
      o->dry_run = 1;
    } else if (strcmp(a, "--no-copy") == 0) {
      o->copy = 0;
    } else if (strcmp(a, "--list") == 0) {
      o->list = 1;
    } else if ((r = tool_opt_value("tune", argc, argv, &i, "--family", &v)) != 0) {
      if (r < 0)
        return -1;
      o->family = v;
    } else if ((r = tool_opt_value("tune", argc, argv, &i, "--layout", &v)) != 0) {
      if (r < 0 || tool_parse_list("tune", "--layout", v, 16, layout_item, NULL) < 0)
        return -1;
      o->layouts = v;
    } else if ((r = tool_opt_value("tune", argc, argv, &i, "--device", &v)) != 0) {
      if (r < 0)
        return -1;
      o->device = v;
    } else if ((r = tool_opt_value("tune", argc, argv, &i, "--reps", &v)) != 0) {
      long reps;
      if (r < 0)
        return -1;
      if (tool_parse_int(v, 1, 1000, &reps) != 0) {
        tool_usage_error("tune", "--reps: bad count '%s' (a whole number from 1 to 1000)", v);
        return -1;
      }
      o->reps = (int)reps;
    } else if ((r = tool_opt_value("tune", argc, argv, &i, "--sizes", &v)) != 0) {
      int64_t counts[MAX_SIZES];
      if (r < 0 || (o->nsizes = tool_parse_counts("tune", "--sizes", v, counts, MAX_SIZES)) < 0)
        return -1;
      for (int k = 0; k < o->nsizes; k++)
        o->sizes[k] = (uint64_t)counts[k];
    } else if ((r = tool_opt_value("tune", argc, argv, &i, "--dtype", &v)) != 0) {
      if (r < 0 ||
          (o->ndtypes = tool_parse_dtypes("tune", "--dtype", v, o->dtypes, MAX_DTYPES)) < 0)
        return -1;
    } else {
      tool_usage_error("tune", "unexpected argument '%s'", a);
      return -1;
    }
  }
  if (o->family) {
    kiln_tune_family_desc d;
    int found = 0;
    char names[160] = "";
    size_t used = 0;
    for (size_t i = 0; kiln_tune_family_get(i, &d) == KILN_OK; i++) {
      found |= strcmp(d.name, o->family) == 0;
      int w = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", d.name);
      used += w > 0 && (size_t)w < sizeof names - used ? (size_t)w : 0;
    }
    if (!found) {
      tool_usage_error("tune", "--family: no family '%s' (%s)", o->family, names);
      return -1;
    }
  }
  if (o->family && o->layouts && family_lacks_layout(o->family, o->layouts))
    return -1;
  for (int d = 0; o->family && d < o->ndtypes; d++) {
    int ok = 0;
    if (kiln_tune_family_supports(o->family, o->dtypes[d], &ok) == KILN_OK && !ok) {
      tool_usage_error("tune", "--dtype: %s has no tuning keys of dtype %s", o->family,
                       kiln_dtype_name(o->dtypes[d]));
      return -1;
    }
  }
  return 0;
}

/* Notes for the (family, dtype) pairs a run without --family leaves out. */
static void
note_unsupported(const struct options *o)
{
  kiln_tune_family_desc d;
  for (size_t f = 0; !o->family && kiln_tune_family_get(f, &d) == KILN_OK; f++)
    for (int k = 0; k < o->ndtypes; k++) {
      int ok = 1;
      if (kiln_tune_family_supports(d.name, o->dtypes[k], &ok) == KILN_OK && !ok)
        fprintf(stderr, "kiln tune: note: skipped %s %s: the family has no keys of this dtype\n",
                d.name, kiln_dtype_name(o->dtypes[k]));
    }
}

/* One candidate as the progress callback saw it. */
struct cand {
  char params[256];
  uint64_t median_ns;
  char failed[16];
};

struct key_out {
  kiln_tune_result r;
  struct cand *c;
  size_t nc, capc;
  double copy_gbps;
};

struct run {
  const struct options *o;
  kiln_context *ctx;
  struct key_out *keys;
  size_t nkeys, capkeys;
  int tty;
  int width; /* of the last progress line, to clear it */
};

static void
clear_line(struct run *r)
{
  if (r->tty && r->width) {
    fprintf(stderr, "\r%*s\r", r->width, "");
    r->width = 0;
  }
}

static int
on_progress(const kiln_tune_progress *p, void *user)
{
  struct run *r = user;
  if (p->event == KILN_TUNE_EVENT_KEY_START) {
    if (r->nkeys == r->capkeys) {
      size_t ncap = r->capkeys ? r->capkeys * 2 : 16;
      struct key_out *n = realloc(r->keys, ncap * sizeof *n);
      if (!n)
        return 1;
      r->keys = n;
      r->capkeys = ncap;
    }
    memset(&r->keys[r->nkeys++], 0, sizeof r->keys[0]);
  }
  struct key_out *k = &r->keys[r->nkeys - 1];
  k->r = *p->result;
  if (p->event == KILN_TUNE_EVENT_CANDIDATE) {
    if (k->nc == k->capc) {
      size_t ncap = k->capc ? k->capc * 2 : 16;
      struct cand *n = realloc(k->c, ncap * sizeof *n);
      if (!n)
        return 1;
      k->c = n;
      k->capc = ncap;
    }
    struct cand *c = &k->c[k->nc++];
    snprintf(c->params, sizeof c->params, "%s", p->params ? p->params : "");
    c->median_ns = p->median_ns;
    snprintf(c->failed, sizeof c->failed, "%s", p->failed ? p->failed : "");
  }
  const kiln_tune_result *res = p->result;
  /*
   * The bandwidth reference right after the key, so that both see the same machine: on a
   * shared host the copy rate moves by 2x between minutes. Once per byte count is not enough
   * for that reason either.
   */
  if (p->event == KILN_TUNE_EVENT_KEY_DONE && r->o->copy && res->status == KILN_OK) {
    int width;
    uint64_t nbytes = res->elements * kiln_dtype_size(res->dtype);
    if (bench_copy_reference(r->ctx, nbytes, r->o->reps ? r->o->reps : 5, &k->copy_gbps,
                             &width) != KILN_OK)
      k->copy_gbps = -1;
  }
  if (r->tty) {
    /* Keys done plus the fraction of this key's candidate budget. */
    double frac = ((double)p->key_index +
                   (p->candidate_limit ? (double)p->candidate_index / (double)p->candidate_limit
                                       : 0.0)) /
                  (double)(p->key_count ? p->key_count : 1);
    if (p->event == KILN_TUNE_EVENT_KEY_DONE)
      frac = (double)(p->key_index + 1) / (double)(p->key_count ? p->key_count : 1);
    int w = 30, filled = (int)(frac * w + 0.5);
    if (filled > w)
      filled = w;
    char line[200];
    int n = snprintf(line, sizeof line, "\r[%.*s%*s] %3.0f%% key %zu/%zu %s %s %s, candidate %zu",
                     filled, "##############################", w - filled, "", frac * 100.0,
                     p->key_index + 1, p->key_count, res->family, kiln_dtype_name(res->dtype),
                     res->bucket, p->candidate_index);
    fprintf(stderr, "%s%*s", line, r->width > n ? r->width - n : 0, "");
    r->width = n;
    fflush(stderr);
  } else if (p->event == KILN_TUNE_EVENT_KEY_DONE) {
    if (res->status == KILN_OK)
      fprintf(stderr, "kiln tune: [%zu/%zu] %s %s %s: %.4f ms -> %.4f ms (%.2fx), %u candidates, "
                      "%u failed, %u skipped\n",
              p->key_index + 1, p->key_count, res->family, kiln_dtype_name(res->dtype),
              res->bucket, (double)res->default_ns * 1e-6, (double)res->tuned_ns * 1e-6,
              res->tuned_ns ? (double)res->default_ns / (double)res->tuned_ns : 0.0,
              res->candidates, res->failed, res->skipped);
    else
      fprintf(stderr, "kiln tune: [%zu/%zu] %s %s %s: failed: %s\n", p->key_index + 1,
              p->key_count, res->family, kiln_dtype_name(res->dtype), res->bucket,
              kiln_status_name(res->status));
  }
  return 0;
}

static void
json_str(const char *s)
{
  json_write_string(stdout, s);
}

static double
gbps(double bytes, uint64_t ns)
{
  return ns ? bytes / (double)ns : 0.0; /* bytes per ns = GB/s */
}

static void
print_json(const struct run *r, const kiln_device_info *info, int failures)
{
  const struct options *o = r->o;
  printf("{\n  \"kiln_version\": ");
  json_str(kiln_version());
  printf(",\n  \"device\": {\"name\": ");
  json_str(info->name);
  printf(", \"vendor\": ");
  json_str(info->vendor);
  printf(", \"platform\": ");
  json_str(info->platform_name);
  printf(", \"platform_version\": ");
  json_str(info->platform_version);
  printf(", \"device_version\": ");
  json_str(info->device_version);
  printf(", \"driver\": ");
  json_str(info->driver_version);
  printf(", \"is_gpu\": %s, \"compute_units\": %u, \"max_work_group_size\": %zu, "
         "\"local_mem_bytes\": %llu, \"global_mem_bytes\": %llu},\n",
         info->is_gpu ? "true" : "false", info->compute_units, info->max_work_group_size,
         (unsigned long long)info->local_mem_bytes, (unsigned long long)info->global_mem_bytes);
  printf("  \"settings\": {\"reps\": %d, \"quick\": %s, \"stored\": %s, \"copy_reference\": %s},\n",
         o->reps ? o->reps : 5, o->quick ? "true" : "false", o->dry_run ? "false" : "true",
         o->copy ? "true" : "false");
  printf("  \"failures\": %d,\n  \"results\": [\n", failures);
  for (size_t i = 0; i < r->nkeys; i++) {
    const struct key_out *k = &r->keys[i];
    const kiln_tune_result *x = &k->r;
    printf("    {\"family\": \"%s\", \"dtype\": \"%s\", \"bucket\": \"%s\", \"layout\": \"%s\", "
           "\"elements\": %llu, \"shape\": ",
           x->family, kiln_dtype_name(x->dtype), x->bucket, x->layout,
           (unsigned long long)x->elements);
    json_str(x->shape);
    printf(", \"status\": \"%s\", \"bytes\": %.0f, \"default_ns\": %llu, \"tuned_ns\": %llu, "
           "\"speedup\": %.4f, \"default_gbps\": %.3f, \"tuned_gbps\": %.3f, \"copy_gbps\": %.3f, "
           "\"tuned_to_copy\": %.4f, \"default_params\": ",
           kiln_status_name(x->status), x->bytes, (unsigned long long)x->default_ns,
           (unsigned long long)x->tuned_ns,
           x->tuned_ns ? (double)x->default_ns / (double)x->tuned_ns : 0.0,
           gbps(x->bytes, x->default_ns), gbps(x->bytes, x->tuned_ns), k->copy_gbps,
           k->copy_gbps > 0 ? gbps(x->bytes, x->tuned_ns) / k->copy_gbps : 0.0);
    json_str(x->default_params);
    printf(", \"tuned_params\": ");
    json_str(x->tuned_params);
    printf(", \"candidates\": %u, \"failed\": %u, \"skipped\": %u,\n     \"timings\": [",
           x->candidates, x->failed, x->skipped);
    for (size_t c = 0; c < k->nc; c++) {
      printf("%s{\"params\": ", c ? ", " : "");
      json_str(k->c[c].params);
      printf(", \"median_ns\": %llu, \"failed\": ", (unsigned long long)k->c[c].median_ns);
      json_str(k->c[c].failed);
      printf("}");
    }
    printf("]}%s\n", i + 1 < r->nkeys ? "," : "");
  }
  printf("  ]\n}\n");
}

static void
print_table(const struct run *r, const kiln_device_info *info)
{
  printf("kiln %s tune on %s (%s, driver %s)\n", kiln_version(), info->name, info->platform_name,
         info->driver_version);
  printf("device time: median of OpenCL profiling events (fft, gemm: wall time of a call);\n"
         "GB/s: bytes the op must move / time; copy: best plain copy kernel for the same bytes\n"
         "on the same device\n\n");
  printf("%-11s %-5s %-9s %-22s %10s %10s %7s %8s %8s %8s %6s  %s\n", "family", "dtype", "bucket",
         "shape", "default ms", "tuned ms", "speedup", "def GB/s", "tun GB/s", "copyGB/s",
         "/copy", "tuned parameters");
  for (size_t i = 0; i < r->nkeys; i++) {
    const struct key_out *k = &r->keys[i];
    const kiln_tune_result *x = &k->r;
    if (x->status != KILN_OK) {
      printf("%-11s %-5s %-9s %-22s failed: %s\n", x->family, kiln_dtype_name(x->dtype),
             x->bucket, x->shape, kiln_status_name(x->status));
      continue;
    }
    double tg = gbps(x->bytes, x->tuned_ns);
    printf("%-11s %-5s %-9s %-22s %10.4f %10.4f %6.2fx %8.2f %8.2f %8.2f %5.0f%%  %s\n", x->family,
           kiln_dtype_name(x->dtype), x->bucket, x->shape, (double)x->default_ns * 1e-6,
           (double)x->tuned_ns * 1e-6,
           x->tuned_ns ? (double)x->default_ns / (double)x->tuned_ns : 0.0,
           gbps(x->bytes, x->default_ns), tg, k->copy_gbps,
           k->copy_gbps > 0 ? 100.0 * tg / k->copy_gbps : 0.0,
           strcmp(x->tuned_params, x->default_params) == 0 ? "(defaults)" : x->tuned_params);
  }
}

static int
print_entry(const kiln_tune_entry *e, void *user)
{
  (void)user;
  if (e->failed[0])
    printf("%-11s %-5s %-9s failed=%-8s %s  [%s]\n", e->family, e->dtype, e->bucket, e->failed,
           e->params, e->driver);
  else
    printf("%-11s %-5s %-9s %8.4f ms (defaults %8.4f ms)  %s  [%s]\n", e->family, e->dtype,
           e->bucket, (double)e->time_ns * 1e-6, (double)e->default_ns * 1e-6, e->params,
           e->driver);
  return 0;
}

/* --list --json: each stored entry as an object of the "entries" array. */
static int
json_entry(const kiln_tune_entry *e, void *user)
{
  struct json *j = user;
  json_object_begin(j, NULL);
  json_string(j, "path", e->path);
  json_string(j, "device", e->device);
  json_string(j, "driver", e->driver);
  json_string(j, "family", e->family);
  json_string(j, "dtype", e->dtype);
  json_string(j, "bucket", e->bucket);
  json_string(j, "params", e->params);
  json_u64(j, "time_ns", e->time_ns);
  json_u64(j, "default_ns", e->default_ns);
  json_string(j, "failed", e->failed);
  json_object_end(j);
  return 0;
}

static int
list_entries(kiln_context *ctx, const kiln_device_info *info, int as_json)
{
  if (!as_json) {
    kiln_status s = kiln_tune_list(ctx, print_entry, NULL);
    if (s != KILN_OK)
      fprintf(stderr, "kiln tune: %s\n", kiln_last_error());
    return s == KILN_OK ? 0 : 1;
  }
  /* Built in memory first, so that a failure prints no half document. */
  char *doc = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&doc, &len);
  if (!mem) {
    fprintf(stderr, "kiln tune: out of memory\n");
    return 1;
  }
  struct json j;
  json_init(&j, mem);
  json_object_begin(&j, NULL);
  json_string(&j, "kiln_version", kiln_version());
  json_object_begin(&j, "device");
  json_string(&j, "name", info->name);
  json_string(&j, "platform", info->platform_name);
  json_string(&j, "driver", info->driver_version);
  json_object_end(&j);
  json_array_begin(&j, "entries");
  kiln_status s = kiln_tune_list(ctx, json_entry, &j);
  json_array_end(&j);
  json_object_end(&j);
  int bad = json_end(&j) != 0;
  bad |= fclose(mem) != 0;
  if (s != KILN_OK || bad) {
    fprintf(stderr, "kiln tune: %s\n", s != KILN_OK ? kiln_last_error() : "cannot write JSON");
    free(doc);
    return 1;
  }
  fwrite(doc, 1, len, stdout);
  free(doc);
  return fflush(stdout) == 0 ? 0 : 1;
}

int
cmd_tune(int argc, char **argv)
{
  if (tool_wants_help(argc, argv, usage))
    return 0;
  struct options o;
  if (parse_options(argc, argv, &o) != 0)
    return 2;
  kiln_context *ctx = NULL;
  kiln_status cs = kiln_context_create(o.device, &ctx);
  if (cs != KILN_OK) {
    fprintf(stderr, "kiln tune: %s\n", kiln_last_error());
    return cs == KILN_ERR_INVALID_ARGUMENT ? 2 : 1; /* a malformed --device or KILN_DEVICE */
  }
  kiln_device_info info;
  kiln_context_device_info(ctx, &info);
  if (o.list) {
    int rc = list_entries(ctx, &info, o.json);
    kiln_context_release(ctx);
    return rc;
  }
  note_unsupported(&o);
  kiln_tune_request req;
  memset(&req, 0, sizeof req);
  req.family = o.family;
  req.dtypes = o.ndtypes ? o.dtypes : NULL;
  req.ndtypes = (size_t)o.ndtypes;
  req.sizes = o.nsizes ? o.sizes : NULL;
  req.nsizes = (size_t)o.nsizes;
  req.layouts = o.layouts;
  req.reps = o.reps;
  req.quick = o.quick;
  req.no_store = o.dry_run;
  struct run r = {&o, ctx, NULL, 0, 0, isatty(2), 0};
  kiln_status s = kiln_tune_run(ctx, &req, on_progress, &r);
  clear_line(&r);
  int failures = 0;
  if (s != KILN_OK) {
    fprintf(stderr, "kiln tune: %s\n", kiln_last_error());
    failures++;
    if (s != KILN_ERR_IO) {
      kiln_context_release(ctx);
      free(r.keys);
      return s == KILN_ERR_NOT_FOUND ? 2 : 1;
    }
  }
  for (size_t i = 0; i < r.nkeys; i++)
    failures += r.keys[i].r.status != KILN_OK;
  if (s == KILN_OK && r.nkeys == 0) {
    /* f64 without fp64, say: an empty table with status 0 would read as success. */
    fprintf(stderr, "kiln tune: nothing to tune: no key of the requested families, dtypes, "
                    "sizes and layouts applies to this device\n");
    failures++;
  }
  if (o.json)
    print_json(&r, &info, failures);
  else
    print_table(&r, &info);
  for (size_t i = 0; i < r.nkeys; i++)
    free(r.keys[i].c);
  free(r.keys);
  kiln_context_release(ctx);
  return failures ? 1 : 0;
}
