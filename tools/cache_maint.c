/* kiln cache verify, prune, clear and warm (docs/cli.md). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/cache_cli.h"
#include "tools/commands.h"
#include "tools/units.h"

/* ================================================================ verify */

static const char verify_usage[] =
    "usage: kiln cache verify [--dir DIR] [--json] [--fix]\n\n"
    "Reads every entry whole and checks its header, sizes, key and MAC. Bad entries are\n"
    "listed with their problem; with --fix they are removed (the library rebuilds them on next\n"
    "use). Exit status 1 if bad entries were found and not removed.\n\n"
    "options:\n"
    "  --dir DIR    the cache directory (default: the one the library uses)\n"
    "  --json       one JSON document on stdout\n"
    "  --fix        remove the bad entries\n";

int
cache_verify(int argc, char **argv)
{
  struct cache_cli c;
  cli_init(&c, "verify", verify_usage);
  if (tool_wants_help(argc, argv, verify_usage))
    return EXIT_OK;
  int fix = 0;
  for (int i = 1; i < argc; i++) {
    int r = cli_common_opt(&c, argc, argv, &i);
    if (r < 0)
      return EXIT_USAGE;
    if (r)
      continue;
    if (strcmp(argv[i], "--fix") == 0)
      fix = 1;
    else
      return cli_unexpected(&c, argv[i]);
  }
  int rc = cli_resolve_dir(&c);
  if (rc)
    return rc;
  struct entry_list l = {0};
  kiln_cache_verify_result vr = {0};
  if (c.exists) {
    kiln_cache *cache;
    if ((rc = cli_open(&c, fix ? KILN_CACHE_ON : KILN_CACHE_READONLY, &cache)))
      return rc;
    rc = cli_collect(&c, cache, KILN_CACHE_VERIFY, &l);
    size_t bad = 0;
    for (size_t i = 0; i < l.n; i++)
      bad += l.v[i].state != KILN_CACHE_ENTRY_OK;
    vr.checked = l.n;
    vr.bad = bad;
    /* The library removes what it finds bad now (never anything it does not own). */
    if (!rc && fix && bad && kiln_cache_verify(cache, 1, &vr) != KILN_OK)
      rc = cli_fail_kiln(&c);
    kiln_cache_close(cache);
    if (rc) {
      entry_list_free(&l);
      return rc;
    }
  }
  uint64_t unfixed = vr.bad > vr.removed ? vr.bad - vr.removed : 0;
  if (c.json) {
    struct json j;
    json_init(&j, stdout);
    json_object_begin(&j, NULL);
    json_string(&j, "dir", c.dir);
    json_bool(&j, "fix", fix);
    json_u64(&j, "checked", l.n);
    json_u64(&j, "bad", vr.bad);
    json_u64(&j, "removed", vr.removed);
    json_array_begin(&j, "problems");
    for (size_t i = 0; i < l.n; i++) {
      const kiln_cache_entry *e = &l.v[i];
      if (e->state == KILN_CACHE_ENTRY_OK)
        continue;
      json_object_begin(&j, NULL);
      json_string(&j, "key", e->key);
      json_string(&j, "path", e->path);
      json_string(&j, "state", entry_state_name(e->state));
      json_string(&j, "problem", e->problem);
      json_u64(&j, "bytes", e->file_bytes);
      json_object_end(&j);
    }
    json_array_end(&j);
    json_object_end(&j);
    if (json_end(&j) != 0)
      rc = cli_fail(&c, "cannot write the JSON output");
  } else {
    for (size_t i = 0; i < l.n; i++) {
      const kiln_cache_entry *e = &l.v[i];
      if (e->state != KILN_CACHE_ENTRY_OK)
        printf("%-10s %s  %s\n           %s\n", entry_state_name(e->state), e->key, e->problem,
               e->path);
    }
    printf("checked %zu entr%s in %s: ", l.n, l.n == 1 ? "y" : "ies", c.dir);
    if (!vr.bad)
      printf("all sound\n");
    else if (fix)
      printf("%llu bad, %llu removed\n", (unsigned long long)vr.bad,
             (unsigned long long)vr.removed);
    else
      printf("%llu bad (kiln cache verify --fix removes them)\n", (unsigned long long)vr.bad);
  }
  entry_list_free(&l);
  if (!rc && unfixed)
    rc = EXIT_PROBLEM;
  return rc;
}

/* ================================================================ prune */

static const char prune_usage[] =
    "usage: kiln cache prune [--dir DIR] [--json] [--max-size SIZE] [--older-than AGE]\n"
    "                        [--stale] [--dry-run]\n\n"
    "Removes entries that any given criterion selects, and temporary files that interrupted\n"
    "writers left more than an hour ago. Without criteria, prunes to the size cap\n"
    "(KILN_CACHE_MAX_SIZE, default 1 GiB) as a store over the cap would.\n\n"
    "options:\n"
    "  --dir DIR          the cache directory (default: the one the library uses)\n"
    "  --json             one JSON document on stdout\n"
    "  --max-size SIZE    remove least recently used entries until the rest fit in SIZE\n"
    "                     (bytes, or with a K, M, G or T suffix: 512M, 1.5G)\n"
    "  --older-than AGE   remove entries last used more than AGE ago (7d, 12h, 30m, 1d12h)\n"
    "  --stale            remove entries built for a device or driver not present on this\n"
    "                     machine (lists the OpenCL devices), and entries of old cache formats\n"
    "  --dry-run          print what would be removed; remove nothing\n";

struct removal {
  char key[33];
  char *path;
  const char *reason; /* static */
  uint64_t bytes;
  int64_t last_used;
  const kiln_cache_entry *known; /* the current-format entry of this key, or NULL */
};

struct prune_state {
  const struct entry_list *entries; /* current-format entries before pruning */
  const kiln_device_info *devs;
  size_t ndev;
  int64_t older_than, now;
  struct removal *v;
  size_t n, cap;
  int oom;
};

static int
select_stale(const kiln_cache_entry *e, void *user)
{
  const struct prune_state *p = user;
  return e->state == KILN_CACHE_ENTRY_OK && entry_device_match(e, p->devs, p->ndev) < 0;
}

static int
record_removal(const kiln_cache_entry *e, void *user)
{
  struct prune_state *p = user;
  if (p->n == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 32;
    struct removal *v = realloc(p->v, cap * sizeof *v);
    if (!v) {
      p->oom = 1;
      return 0;
    }
    p->v = v;
    p->cap = cap;
  }
  struct removal *r = &p->v[p->n];
  memset(r, 0, sizeof *r);
  snprintf(r->key, sizeof r->key, "%s", e->key);
  r->path = strdup(e->path);
  if (!r->path) {
    p->oom = 1;
    return 0;
  }
  r->bytes = e->file_bytes;
  r->last_used = e->last_used;
  r->known = entry_list_find(p->entries, e->key);
  /* The library reports entries it selected through select_stale with their header fields. */
  if (strstr(e->path, ".kbin.tmp."))
    r->reason = "temp file";
  else if (e->format_version != 0)
    r->reason = "stale";
  else if (!r->known)
    r->reason = "old format";
  else if (p->older_than && p->now - e->last_used > p->older_than)
    r->reason = "age";
  else
    r->reason = "size";
  p->n++;
  return 0;
}

int
cache_prune(int argc, char **argv)
{
  struct cache_cli c;
  cli_init(&c, "prune", prune_usage);
  if (tool_wants_help(argc, argv, prune_usage))
    return EXIT_OK;
  uint64_t max_size = 0;
  int64_t older = 0;
  int stale = 0, dry = 0;
  const char *v;
  for (int i = 1; i < argc; i++) {
    int r = cli_common_opt(&c, argc, argv, &i);
    if (r == 0 && (r = cli_opt_value(&c, argc, argv, &i, "--max-size", &v)) == 1) {
      if (units_parse_size(v, &max_size) != 0)
        return cli_usage_error(&c, "--max-size: bad size '%s' (%s)", v, SIZE_RANGE);
      if (max_size == 0)
        return cli_usage_error(&c, "--max-size must be at least 1 byte (kiln cache clear "
                                   "removes every entry)");
    } else if (r == 0 && (r = cli_opt_value(&c, argc, argv, &i, "--older-than", &v)) == 1) {
      if (units_parse_age(v, &older) != 0 || older <= 0)
        return cli_usage_error(&c, "--older-than: bad age '%s' (%s)", v, AGE_RANGE);
    } else if (r == 0 && strcmp(argv[i], "--stale") == 0) {
      stale = r = 1;
    } else if (r == 0 && strcmp(argv[i], "--dry-run") == 0) {
      dry = r = 1;
    }
    if (r < 0)
      return EXIT_USAGE;
    if (r == 0)
      return cli_unexpected(&c, argv[i]);
  }
  int rc = cli_resolve_dir(&c);
  if (rc)
    return rc;
  struct entry_list l = {0};
  kiln_device_info *devs = NULL;
  size_t ndev = 0;
  struct prune_state ps = {.entries = &l, .older_than = older, .now = (int64_t)time(NULL)};
  kiln_cache_prune_result res = {0};
  uint64_t target = max_size; /* the size the entries must fit in; 0 for none */
  if (c.exists) {
    if (stale) {
      if ((rc = cli_devices(&c, &devs, &ndev)))
        return rc;
      /* Without any device every entry would count as stale: almost surely a broken
         OpenCL installation rather than a wish to empty the cache. */
      if (ndev == 0)
        return cli_fail(&c, "no OpenCL device is present, so every entry would count as "
                            "stale; refusing (kiln cache clear removes everything)");
    }
    kiln_cache *cache;
    if ((rc = cli_open(&c, dry ? KILN_CACHE_READONLY : KILN_CACHE_ON, &cache))) {
      free(devs);
      return rc;
    }
    rc = cli_collect(&c, cache, 0, &l);
    ps.devs = devs;
    ps.ndev = ndev;
    kiln_cache_prune_options po;
    memset(&po, 0, sizeof po);
    po.max_bytes = max_size;
    if (!max_size && !older && !stale) {
      kiln_cache_stats st;
      po.max_bytes = KILN_CACHE_KEEP_CAP;
      if (kiln_cache_stats_get(cache, &st) == KILN_OK)
        target = st.max_bytes;
    }
    po.older_than_s = older;
    po.old_formats = stale;
    po.temp_files = 1;
    po.select = stale ? select_stale : NULL;
    po.select_user = &ps;
    po.on_remove = record_removal;
    po.on_remove_user = &ps;
    po.dry_run = dry;
    if (!rc && kiln_cache_prune(cache, &po, &res) != KILN_OK)
      rc = cli_fail_kiln(&c);
    kiln_cache_close(cache);
    if (!rc && ps.oom)
      rc = cli_fail(&c, "out of memory while reporting");
  }
  if (!rc && c.json) {
    struct json j;
    json_init(&j, stdout);
    json_object_begin(&j, NULL);
    json_string(&j, "dir", c.dir);
    json_bool(&j, "dry_run", dry);
    json_u64(&j, "max_bytes", target);
    json_i64(&j, "older_than_s", older);
    json_bool(&j, "stale", stale);
    json_u64(&j, "entries", res.entries);
    json_u64(&j, "bytes", res.bytes);
    json_u64(&j, "temp_files", res.temp_files);
    json_array_begin(&j, "removed");
    for (size_t i = 0; i < ps.n; i++) {
      const struct removal *r = &ps.v[i];
      json_object_begin(&j, NULL);
      json_string(&j, "key", r->key);
      json_string(&j, "path", r->path);
      json_string(&j, "reason", r->reason);
      json_u64(&j, "bytes", r->bytes);
      json_i64(&j, "last_used", r->last_used);
      json_string(&j, "source", r->known ? r->known->source_name : "");
      json_string(&j, "device", r->known ? r->known->device_name : "");
      json_string(&j, "options", r->known ? r->known->options : "");
      json_object_end(&j);
    }
    json_array_end(&j);
    json_object_end(&j);
    if (json_end(&j) != 0)
      rc = cli_fail(&c, "cannot write the JSON output");
  } else if (!rc) {
    char a[32], b[48];
    if (ps.n) {
      printf("%s:\n", dry ? "would remove" : "removed");
      struct table t;
      const char *hdr[] = {"KEY", "SOURCE", "DEVICE", "SIZE", "LAST USED", "REASON"};
      table_init(&t, 6, 1u << 3, hdr);
      for (size_t i = 0; i < ps.n; i++) {
        const struct removal *r = &ps.v[i];
        char key[13];
        snprintf(key, sizeof key, "%.12s", r->key);
        const char *row[] = {key,
                             r->known ? r->known->source_name : "-",
                             r->known ? r->known->device_name : "-",
                             units_size(r->bytes, a, sizeof a),
                             units_age(r->last_used, ps.now, b, sizeof b),
                             r->reason};
        table_row(&t, row);
      }
      table_print(&t, stdout, 2);
      table_free(&t);
    }
    printf("%s %llu entr%s (%s) and %llu stale temp file%s from %s%s\n",
           dry ? "would remove" : "removed", (unsigned long long)res.entries,
           res.entries == 1 ? "y" : "ies", units_size(res.bytes, a, sizeof a),
           (unsigned long long)res.temp_files, res.temp_files == 1 ? "" : "s", c.dir,
           dry ? " (dry run: nothing was changed)" : "");
  }
  for (size_t i = 0; i < ps.n; i++)
    free(ps.v[i].path);
  free(ps.v);
  free(devs);
  entry_list_free(&l);
  return rc;
}

/* ================================================================ clear */

static const char clear_usage[] =
    "usage: kiln cache clear [--dir DIR] [--json]\n\n"
    "Removes everything kiln's kernel cache owns in the directory: entries and temporary\n"
    "files of every cache format, the statistics file (so the counters restart at zero),\n"
    "lock files, kiln's CACHEDIR.TAG and the emptied subdirectories. Files kiln does not\n"
    "recognise stay, and so do the directories that hold them; the tuning files under\n"
    "DIR/tuning stay too. The directory itself stays.\n\n"
    "options:\n"
    "  --dir DIR    the cache directory (default: the one the library uses)\n"
    "  --json       one JSON document on stdout\n";

int
cache_clear(int argc, char **argv)
{
  struct cache_cli c;
  cli_init(&c, "clear", clear_usage);
  if (tool_wants_help(argc, argv, clear_usage))
    return EXIT_OK;
  for (int i = 1; i < argc; i++) {
    int r = cli_common_opt(&c, argc, argv, &i);
    if (r < 0)
      return EXIT_USAGE;
    if (r == 0)
      return cli_unexpected(&c, argv[i]);
  }
  int rc = cli_resolve_dir(&c);
  if (rc)
    return rc;
  struct entry_list l = {0};
  uint64_t files = 0, bytes = 0;
  struct tuning_summary tun = {0};
  if (c.exists) {
    kiln_cache *cache;
    if ((rc = cli_open(&c, KILN_CACHE_ON, &cache)))
      return rc;
    rc = cli_collect(&c, cache, 0, &l);
    if (!rc && kiln_cache_clear(cache, &files) != KILN_OK)
      rc = cli_fail_kiln(&c);
    kiln_cache_close(cache);
  }
  /* A DIR/tuning that cannot be read is reported, but the clear itself is done. */
  int tuning_rc = rc ? EXIT_OK : tuning_summary(&c, &tun);
  for (size_t i = 0; i < l.n; i++)
    bytes += l.v[i].file_bytes;
  if (!rc && c.json) {
    struct json j;
    json_init(&j, stdout);
    json_object_begin(&j, NULL);
    json_string(&j, "dir", c.dir);
    json_u64(&j, "entries", l.n);
    json_u64(&j, "bytes", bytes);
    json_u64(&j, "files_removed", files);
    json_u64(&j, "tuning_files_kept", tun.files);
    json_object_end(&j);
    if (json_end(&j) != 0)
      rc = cli_fail(&c, "cannot write the JSON output");
  } else if (!rc) {
    char a[32];
    if (!c.exists)
      printf("nothing to clear: %s does not exist\n", c.dir);
    else
      printf("removed %zu entr%s (%s), %llu files in all, from %s\n", l.n, l.n == 1 ? "y" : "ies",
             units_size(bytes, a, sizeof a), (unsigned long long)files, c.dir);
    if (tun.files)
      printf("kept %llu tuning file%s in %s/tuning\n", (unsigned long long)tun.files,
             tun.files == 1 ? "" : "s", c.dir);
  }
  entry_list_free(&l);
  return rc ? rc : tuning_rc;
}

/* ================================================================ warm */

static const char warm_usage[] =
    "usage: kiln cache warm [--dir DIR] [--json] [--device SEL] [--limit N] [--blas]\n"
    "                       [--from FILE]\n\n"
    "Builds every built-in kernel variant (every kernel source for every dtype the device\n"
    "supports) for one device and stores it in the cache, whatever KILN_CACHE_STORE says.\n"
    "Variants already cached are only checked. Shows a progress bar on a terminal and one\n"
    "line per variant otherwise, then the count and the time. On PoCL each kernel is a program\n"
    "of its own (docs/cache.md), so each variant builds every kernel alone: a long time for\n"
    "every variant; --limit and --from warm less.\n"
    "Exit status 1 if a variant failed to build or the cache cannot be written.\n\n"
    "options:\n"
    "  --dir DIR      the cache directory (default: the one the library uses)\n"
    "  --json         one JSON document on stdout (progress lines go to stderr)\n"
    "  --device SEL   the device, as KILN_DEVICE takes it: P:D (see kiln info) or a\n"
    "                 substring of its name (default: KILN_DEVICE, else the first GPU, else\n"
    "                 the first CPU)\n"
    "  --limit N      stop after the first N variants\n"
    "  --blas         also run every CLBlast routine kiln uses once (kiln_blas_warm), so that\n"
    "                 the driver's own cache (PoCL's kernel cache, NVIDIA's compute cache)\n"
    "                 holds CLBlast's kernels; CLBlast keeps no disk cache of its own.\n"
    "                 About 100 s on PoCL with a cold driver cache (docs/blas_fft.md)\n"
    "  --from FILE    instead of the built-in variants, compile the user kernels and fused\n"
    "                 expressions FILE lists ([kernel NAME] and [expr NAME] sections;\n"
    "                 docs/cli.md, \"warm --from\"), e.g. while building a container image\n";

struct warm_progress {
  int bar;     /* a progress bar on stderr */
  FILE *lines; /* else one line per variant here */
  size_t limit;
  double t0;
};

static int
warm_cb(size_t done, size_t total, const char *source, const char *options, kiln_status status,
        void *user)
{
  struct warm_progress *p = user;
  size_t shown = p->limit && p->limit < total ? p->limit : total;
  /* kiln names the dtype of a variant in its options as -DKILN_DT_<NAME>=1. */
  char dtype[8] = "";
  const char *dt = strstr(options, "-DKILN_DT_");
  for (size_t i = 0; dt && i + 1 < sizeof dtype && dt[10 + i] && dt[10 + i] != '='; i++)
    dtype[i] = (char)tolower((unsigned char)dt[10 + i]), dtype[i + 1] = 0;
  if (p->bar) {
    char what[64];
    snprintf(what, sizeof what, "%s %s", source, dtype);
    const int w = 30;
    int filled = shown ? (int)(done * (size_t)w / shown) : w;
    if (filled > w)
      filled = w;
    fprintf(stderr, "\r[%.*s%*s] %zu/%zu %-18s %6.1f s", filled, "##############################",
            w - filled, "", done, shown, what, tool_now() - p->t0);
    fflush(stderr);
  } else {
    fprintf(p->lines, "[%zu/%zu] %s %s: %s\n", done, shown, source, options,
            status == KILN_OK ? "ok" : kiln_status_name(status));
    fflush(p->lines);
  }
  return p->limit && done >= p->limit;
}

int
cache_warm(int argc, char **argv)
{
  struct cache_cli c;
  cli_init(&c, "warm", warm_usage);
  if (tool_wants_help(argc, argv, warm_usage))
    return EXIT_OK;
  const char *device = NULL, *v;
  long limit = 0;
  int blas = 0;
  const char *from = NULL;
  for (int i = 1; i < argc; i++) {
    int r = cli_common_opt(&c, argc, argv, &i);
    if (r == 0 && strcmp(argv[i], "--blas") == 0) {
      blas = r = 1;
    } else if (r == 0 && (r = cli_opt_value(&c, argc, argv, &i, "--device", &v)) == 1) {
      device = v;
    } else if (r == 0 && (r = cli_opt_value(&c, argc, argv, &i, "--from", &v)) == 1) {
      from = v;
    } else if (r == 0 && (r = cli_opt_value(&c, argc, argv, &i, "--limit", &v)) == 1) {
      if (tool_parse_int(v, 1, 1000000, &limit) != 0)
        return cli_usage_error(&c, "--limit: bad count '%s' (a whole number from 1 to 1000000)", v);
    }
    if (r < 0)
      return EXIT_USAGE;
    if (r == 0)
      return cli_unexpected(&c, argv[i]);
  }
  int rc = cli_resolve_dir(&c);
  if (rc)
    return rc;
  kiln_context *ctx = NULL;
  kiln_status cs = kiln_context_create(device, &ctx);
  if (cs != KILN_OK) {
    cli_fail_kiln(&c);
    return cs == KILN_ERR_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_PROBLEM; /* a malformed --device */
  }
  kiln_cache_stats st;
  /* Warm stores on purpose: the cache must be on, in this directory. */
  if (kiln_context_set_cache_dir(ctx, c.dir) != KILN_OK ||
      kiln_context_set_option(ctx, KILN_OPT_CACHE_MODE, KILN_CACHE_ON) != KILN_OK ||
      kiln_context_cache_stats(ctx, &st) != KILN_OK) {
    rc = cli_fail_kiln(&c);
    kiln_context_release(ctx);
    return rc;
  }
  kiln_device_info info;
  kiln_context_device_info(ctx, &info);
  if (st.mode != KILN_CACHE_ON) {
    rc = cli_fail(&c, "cannot store in %s for %s: %s", c.dir, info.name,
                  st.reason[0] ? st.reason : "the cache is not writable");
    kiln_context_release(ctx);
    return rc;
  }
  struct warm_progress p = {.bar = isatty(2),
                            .lines = c.json ? stderr : stdout,
                            .limit = (size_t)limit,
                            .t0 = tool_now()};
  if (!c.json && !p.bar)
    printf("warming %s for %s (%s, driver %s)\n", c.dir, info.name, info.platform_name,
           info.driver_version);
  kiln_cache_warm_result res;
  memset(&res, 0, sizeof res);
  kiln_status s = from ? kiln_user_kernel_warm_file(ctx, from, warm_cb, &p, &res)
                       : kiln_context_cache_warm(ctx, warm_cb, &p, &res);
  double secs = tool_now() - p.t0;
  double blas_secs = -1;
  if (s == KILN_OK && blas) {
    double t0 = tool_now();
    s = kiln_blas_warm(ctx, KILN_BLAS_WARM_USED);
    blas_secs = tool_now() - t0;
  }
  if (p.bar) {
    fprintf(stderr, "\r%*s\r", 79, "");
    fflush(stderr);
  }
  if (s != KILN_OK)
    rc = cli_fail_kiln(&c);
  if (c.json) {
    struct json j;
    json_init(&j, stdout);
    json_object_begin(&j, NULL);
    json_string(&j, "dir", c.dir);
    json_string(&j, "device", info.name);
    char sel[32];
    snprintf(sel, sizeof sel, "%u:%u", info.platform_index, info.device_index);
    json_string(&j, "device_index", sel);
    json_string(&j, "platform", info.platform_name);
    json_string(&j, "driver", info.driver_version);
    json_u64(&j, "variants", res.variants);
    json_u64(&j, "done", res.done);
    json_u64(&j, "cached", res.cached);
    json_u64(&j, "built", res.built);
    json_u64(&j, "stored", res.stored);
    json_u64(&j, "failed", res.failed);
    json_double(&j, "seconds", secs);
    if (blas)
      json_double(&j, "blas_seconds", blas_secs);
    json_string(&j, "status", kiln_status_name(s));
    json_object_end(&j);
    if (json_end(&j) != 0 && !rc)
      rc = cli_fail(&c, "cannot write the JSON output");
  } else {
    printf("warmed %zu of %zu %s for %s in %.1f s: %zu already cached, %zu built, %zu "
           "stored, %zu failed\n",
           res.done, res.variants, from ? "items" : "variants", info.name, secs, res.cached, res.built, res.stored, res.failed);
    if (blas_secs >= 0)
      printf("ran CLBlast's routines once in %.1f s (kept by the driver's cache, not kiln's)\n",
             blas_secs);
  }
  kiln_context_release(ctx);
  return rc;
}
