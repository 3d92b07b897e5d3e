/*
 * kiln cache: inspect and manage the disk kernel cache (include/kiln/cache.h).
 * This file dispatches the subcommands and holds stats, list and show;
 * tools/cache_maint.c has verify, prune, clear and warm, tools/cache_archive.c
 * export and import. docs/cli.md is the reference.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/cache_cli.h"
#include "tools/commands.h"
#include "tools/units.h"

static const struct {
  const char *name;
  const char *help;
  int (*run)(int argc, char **argv);
} subcommands[] = {
    {"stats", "entries, size, cap, per-device breakdown, persistent counters, tuning results",
     cache_stats},
    {"list", "one row per entry; filter by device, source, age; sort by size or age", cache_list},
    {"show", "everything about one entry (a unique key prefix is enough)", cache_show},
    {"verify", "check every entry's header and MAC; --fix removes bad ones", cache_verify},
    {"prune", "remove entries by size, age or staleness, and stale temp files", cache_prune},
    {"clear", "remove everything kiln owns in the cache directory", cache_clear},
    {"warm", "build and store every built-in kernel variant for a device", cache_warm},
    {"export", "write entries to one archive file", cache_export},
    {"import", "add the entries of an archive that match a device present here", cache_import},
};

static void
usage(FILE *f)
{
  fprintf(f, "usage: kiln cache <command> [options]\n\n"
             "Inspects and manages kiln's disk kernel cache (docs/cache.md, docs/cli.md).\n\n"
             "commands:\n");
  for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
    fprintf(f, "  %-8s %s\n", subcommands[i].name, subcommands[i].help);
  fprintf(f, "\nEvery command takes --dir DIR (default: the directory the library uses: "
             "KILN_CACHE_DIR,\n$XDG_CACHE_HOME/kiln or ~/.cache/kiln) and --json (one JSON "
             "document on stdout).\n'kiln cache <command> --help' describes a command. Exit "
             "status: 0 ok, 1 problems found\nor a failure, 2 usage error.\n");
}

int
cmd_cache(int argc, char **argv)
{
  if (argc < 2) {
    usage(stderr);
    return EXIT_USAGE;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return EXIT_OK;
  }
  for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
    if (strcmp(argv[1], subcommands[i].name) == 0)
      return subcommands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "kiln cache: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return EXIT_USAGE;
}

/* ================================================================ stats */

static const char stats_usage[] =
    "usage: kiln cache stats [--dir DIR] [--json] [--zero] [--recount]\n\n"
    "Shows the number of entries and their size against the size cap (KILN_CACHE_MAX_SIZE,\n"
    "default 1 GiB), entries per device and driver, entries of old cache formats and stale\n"
    "temporary files, the persistent counters (hits, misses, stores, evictions, corrupt, ...)\n"
    "summed over every process since they were last zeroed, and the autotuner's results.\n\n"
    "options:\n"
    "  --dir DIR    the cache directory (default: the one the library uses)\n"
    "  --json       one JSON document on stdout\n"
    "  --zero       reset the persistent counters first (entries are kept)\n"
    "  --recount    recompute the tracked entry count and size from the files first\n";

struct device_group {
  const char *platform, *platform_version, *device, *driver; /* borrowed from the entry list */
  uint64_t entries, bytes;
};

int
cache_stats(int argc, char **argv)
{
  struct cache_cli c;
  cli_init(&c, "stats", stats_usage);
  if (tool_wants_help(argc, argv, stats_usage))
    return EXIT_OK;
  int zero = 0, recount = 0;
  for (int i = 1; i < argc; i++) {
    int r = cli_common_opt(&c, argc, argv, &i);
    if (r < 0)
      return EXIT_USAGE;
    if (r)
      continue;
    if (strcmp(argv[i], "--zero") == 0)
      zero = 1;
    else if (strcmp(argv[i], "--recount") == 0)
      recount = 1;
    else
      return cli_unexpected(&c, argv[i]);
  }
  int rc = cli_resolve_dir(&c);
  if (rc)
    return rc;

  kiln_cache_stats st;
  memset(&st, 0, sizeof st);
  struct entry_list l = {0};
  kiln_cache_prune_result old = {0};
  kiln_cache *cache = NULL;
  char key_file[4200] = "", key_problem[1024] = "";
  snprintf(key_file, sizeof key_file, "%s/key", c.dir);
  if (!c.exists)
    snprintf(key_problem, sizeof key_problem, "made when the directory is first written");
  if (c.exists) {
    if ((rc = cli_open(&c, zero || recount ? KILN_CACHE_ON : KILN_CACHE_READONLY, &cache)))
      return rc;
    if (zero && kiln_cache_stats_zero(cache) != KILN_OK)
      rc = cli_fail_kiln(&c);
    if (!rc && recount && kiln_cache_recount(cache, NULL) != KILN_OK)
      rc = cli_fail_kiln(&c);
    if (!rc)
      kiln_cache_stats_get(cache, &st);
    /* The key's path, for copying it to a machine that imports this cache's archives. */
    if (!rc && kiln_cache_key_path(cache, key_file, sizeof key_file) != KILN_OK)
      snprintf(key_problem, sizeof key_problem, "%s", kiln_last_error());
    if (!rc)
      rc = cli_collect(&c, cache, 0, &l);
    /* A dry run that only looks at old formats and temp files counts what --stale would take. */
    kiln_cache_prune_options po;
    memset(&po, 0, sizeof po);
    po.old_formats = 1;
    po.temp_files = 1;
    po.dry_run = 1;
    if (!rc && kiln_cache_prune(cache, &po, &old) != KILN_OK)
      rc = cli_fail_kiln(&c);
    kiln_cache_close(cache);
    if (rc) {
      entry_list_free(&l);
      return rc;
    }
  } else {
    /* The cap a handle would get (the library takes no fractions); nothing is created. */
    const char *env = getenv("KILN_CACHE_MAX_SIZE");
    uint64_t cap = (uint64_t)1 << 30;
    if (env && *env && (strchr(env, '.') || units_parse_size(env, &cap) != 0))
      cap = (uint64_t)1 << 30;
    st.max_bytes = cap;
  }

  uint64_t bytes = 0, corrupt = 0;
  struct device_group *g = calloc(l.n + 1, sizeof *g);
  size_t ng = 0;
  if (!g) {
    entry_list_free(&l);
    return cli_fail(&c, "out of memory");
  }
  for (size_t i = 0; i < l.n; i++) {
    const kiln_cache_entry *e = &l.v[i];
    bytes += e->file_bytes;
    if (e->state != KILN_CACHE_ENTRY_OK) {
      corrupt++;
      continue;
    }
    size_t k = 0;
    while (k < ng && !(strcmp(g[k].device, e->device_name) == 0 &&
                       strcmp(g[k].driver, e->driver_version) == 0 &&
                       strcmp(g[k].platform, e->platform_name) == 0 &&
                       strcmp(g[k].platform_version, e->platform_version) == 0))
      k++;
    if (k == ng) {
      g[ng] = (struct device_group){
          e->platform_name, e->platform_version, e->device_name, e->driver_version, 0, 0};
      ng++;
    }
    g[k].entries++;
    g[k].bytes += e->file_bytes;
  }
  /* A tuning directory kiln cannot read is reported, but the rest of the figures still are. */
  struct tuning_summary tun;
  int tuning_rc = tuning_summary(&c, &tun);
  const kiln_cache_counters *k = &st.persistent;
  const struct {
    const char *name, *label;
    uint64_t v;
    int is_bytes;
  } counters[] = {
#define COUNTER(field, label, is_bytes) {#field, label, k->field, is_bytes},
      KILN_CACHE_COUNTERS(COUNTER)
#undef COUNTER
  };
  const size_t ncounters = sizeof counters / sizeof counters[0];

  if (c.json) {
    struct json j;
    json_init(&j, stdout);
    json_object_begin(&j, NULL);
    json_string(&j, "dir", c.dir);
    json_bool(&j, "exists", c.exists);
    json_string(&j, "key_file", key_file);
    json_string(&j, "key_problem", key_problem);
    json_u64(&j, "entries", l.n);
    json_u64(&j, "bytes", bytes);
    json_u64(&j, "corrupt_entries", corrupt);
    json_u64(&j, "max_bytes", st.max_bytes);
    json_u64(&j, "tracked_entries", st.entries);
    json_u64(&j, "tracked_bytes", st.bytes);
    json_u64(&j, "old_format_entries", old.entries);
    json_u64(&j, "old_format_bytes", old.bytes);
    json_u64(&j, "stale_temp_files", old.temp_files);
    json_i64(&j, "zeroed_at", st.zeroed_at);
    json_object_begin(&j, "counters");
    for (size_t i = 0; i < ncounters; i++)
      json_u64(&j, counters[i].name, counters[i].v);
    json_object_end(&j);
    json_array_begin(&j, "devices");
    for (size_t i = 0; i < ng; i++) {
      json_object_begin(&j, NULL);
      json_string(&j, "platform", g[i].platform);
      json_string(&j, "platform_version", g[i].platform_version);
      json_string(&j, "device", g[i].device);
      json_string(&j, "driver", g[i].driver);
      json_u64(&j, "entries", g[i].entries);
      json_u64(&j, "bytes", g[i].bytes);
      json_object_end(&j);
    }
    json_array_end(&j);
    json_object_begin(&j, "tuning");
    char tdir[4200];
    snprintf(tdir, sizeof tdir, "%s/tuning", c.dir);
    json_string(&j, "dir", tdir);
    json_bool(&j, "present", tun.present);
    json_u64(&j, "files", tun.files);
    json_u64(&j, "bytes", tun.bytes);
    json_u64(&j, "results", tun.results);
    json_u64(&j, "failures", tun.failures);
    json_u64(&j, "unusable_files", tun.unusable);
    json_u64(&j, "bad_lines", tun.bad_lines);
    json_string(&j, "error", tun.error);
    json_object_end(&j);
    json_object_end(&j);
    if (json_end(&j) != 0)
      rc = cli_fail(&c, "cannot write the JSON output");
  } else {
    char a[64], b[64], d[64];
    int64_t now = (int64_t)time(NULL);
    printf("%-20s %s%s\n", "cache directory", c.dir,
           c.exists ? "" : " (does not exist: nothing cached yet)");
    printf("%-20s %s%s%s%s\n", "key file", key_file, *key_problem ? " (" : "", key_problem,
           *key_problem ? ")" : "");
    printf("%-20s %zu", "entries", l.n);
    if (corrupt)
      printf(" (%llu corrupt or unreadable: kiln cache verify)", (unsigned long long)corrupt);
    printf("\n");
    if (st.max_bytes)
      printf("%-20s %s of %s cap (%.1f%%)\n", "size", units_size(bytes, a, sizeof a),
             units_size(st.max_bytes, b, sizeof b), 100.0 * (double)bytes / (double)st.max_bytes);
    else
      printf("%-20s %s (no cap)\n", "size", units_size(bytes, a, sizeof a));
    if (c.exists && (st.entries != l.n || st.bytes != bytes))
      printf("%-20s %llu entries, %s (differs from the files: kiln cache stats --recount)\n",
             "tracked by kiln", (unsigned long long)st.entries, units_size(st.bytes, a, sizeof a));
    if (old.entries)
      printf("%-20s %llu entries, %s (kiln cache prune --stale)\n", "old cache formats",
             (unsigned long long)old.entries, units_size(old.bytes, a, sizeof a));
    if (old.temp_files)
      printf("%-20s %llu (kiln cache prune)\n", "stale temp files",
             (unsigned long long)old.temp_files);
    if (st.zeroed_at)
      printf("%-20s %s (%s)\n", "counters since", units_date(st.zeroed_at, a, sizeof a),
             units_age(st.zeroed_at, now, b, sizeof b));
    else
      printf("%-20s %s\n", "counters since", "the cache was created (never zeroed)");
    uint64_t lookups = k->hits + k->misses;
    for (size_t i = 0; i < ncounters; i++) {
      if (counters[i].is_bytes)
        printf("  %-18s %s\n", counters[i].label, units_size(counters[i].v, a, sizeof a));
      else if (i == 0 && lookups)
        printf("  %-18s %llu (%.1f%% of %llu lookups)\n", counters[i].label,
               (unsigned long long)counters[i].v, 100.0 * (double)k->hits / (double)lookups,
               (unsigned long long)lookups);
      else
        printf("  %-18s %llu\n", counters[i].label, (unsigned long long)counters[i].v);
    }
    if (ng) {
      printf("\nentries by device and driver:\n");
      struct table t;
      const char *hdr[] = {"DEVICE", "DRIVER", "PLATFORM", "ENTRIES", "SIZE"};
      table_init(&t, 5, 1u << 3 | 1u << 4, hdr);
      for (size_t i = 0; i < ng; i++) {
        snprintf(d, sizeof d, "%llu", (unsigned long long)g[i].entries);
        const char *row[] = {g[i].device, g[i].driver, g[i].platform, d,
                             units_size(g[i].bytes, a, sizeof a)};
        table_row(&t, row);
      }
      table_print(&t, stdout, 2);
      table_free(&t);
    }
    printf("\n%-20s ", "tuning");
    if (tun.error[0]) {
      printf("%s/tuning cannot be read (see the message on stderr)\n", c.dir);
    } else if (tun.present) {
      printf("%llu tuned key%s, %llu failed candidate%s, %llu file%s (%s) in %s/tuning\n",
             (unsigned long long)tun.results, tun.results == 1 ? "" : "s",
             (unsigned long long)tun.failures, tun.failures == 1 ? "" : "s",
             (unsigned long long)tun.files, tun.files == 1 ? "" : "s",
             units_size(tun.bytes, a, sizeof a), c.dir);
      if (tun.unusable || tun.bad_lines)
        printf("%-20s %llu unusable file%s and %llu malformed line%s skipped\n", "",
               (unsigned long long)tun.unusable, tun.unusable == 1 ? "" : "s",
               (unsigned long long)tun.bad_lines, tun.bad_lines == 1 ? "" : "s");
    } else {
      printf("none (%s/tuning does not exist)\n", c.dir);
    }
  }
  free(g);
  entry_list_free(&l);
  return rc ? rc : tuning_rc;
}

/* ================================================================ list */

static const char list_usage[] =
    "usage: kiln cache list [--dir DIR] [--json] [--device SUBSTR] [--source NAME]\n"
    "                       [--older-than AGE] [--sort key|size|age] [--tuning]\n\n"
    "One row per entry: key (first 12 hex digits; --json gives all 32), kernel source, device,\n"
    "driver, size, when it was created and last used (written or hit), and build options.\n"
    "Corrupt or unreadable entries are listed with their problem.\n\n"
    "options:\n"
    "  --dir DIR          the cache directory (default: the one the library uses)\n"
    "  --json             one JSON document on stdout\n"
    "  --device SUBSTR    only entries whose device name contains SUBSTR (any case)\n"
    "  --source NAME      only entries of this kernel source (cast, elementwise, reduce, ...;\n"
    "                     `text` for every user kernel and fused expression, whose source\n"
    "                     is text:LABEL)\n"
    "  --older-than AGE   only entries last used more than AGE ago (e.g. 7d, 12h, 30m, 1d12h)\n"
    "  --sort ORDER       key (default), size (largest first) or age (least recently used\n"
    "                     first, the order in which the size cap evicts)\n"
    "  --tuning           list the autotuner's stored results (DIR/tuning) instead of kernel\n"
    "                     entries: device, driver, family, dtype, size bucket, tuned and default\n"
    "                     times, parameters; takes --device (a substring of the tuning file's\n"
    "                     device name)\n";

enum sort_order { SORT_KEY, SORT_SIZE, SORT_AGE };

static int
cmp_size(const void *pa, const void *pb)
{
  const kiln_cache_entry *a = pa, *b = pb;
  if (a->file_bytes != b->file_bytes)
    return a->file_bytes > b->file_bytes ? -1 : 1;
  return strcmp(a->key, b->key);
}

static int
cmp_age(const void *pa, const void *pb)
{
  const kiln_cache_entry *a = pa, *b = pb;
  if (a->last_used != b->last_used)
    return a->last_used < b->last_used ? -1 : 1;
  return strcmp(a->key, b->key);
}

int
cache_list(int argc, char **argv)
{
  struct cache_cli c;
  cli_init(&c, "list", list_usage);
  if (tool_wants_help(argc, argv, list_usage))
    return EXIT_OK;
  const char *device = NULL, *source = NULL, *v;
  int64_t older = 0;
  enum sort_order sort = SORT_KEY;
  int tuning = 0;
  for (int i = 1; i < argc; i++) {
    int r = cli_common_opt(&c, argc, argv, &i);
    if (r == 0 && (r = cli_opt_value(&c, argc, argv, &i, "--device", &v)) == 1)
      device = v;
    else if (r == 0 && (r = cli_opt_value(&c, argc, argv, &i, "--source", &v)) == 1)
      source = v;
    else if (r == 0 && (r = cli_opt_value(&c, argc, argv, &i, "--older-than", &v)) == 1) {
      if (units_parse_age(v, &older) != 0 || older <= 0)
        return cli_usage_error(&c, "--older-than: bad age '%s' (%s)", v, AGE_RANGE);
    } else if (r == 0 && (r = cli_opt_value(&c, argc, argv, &i, "--sort", &v)) == 1) {
      if (strcmp(v, "key") == 0)
        sort = SORT_KEY;
      else if (strcmp(v, "size") == 0)
        sort = SORT_SIZE;
      else if (strcmp(v, "age") == 0)
        sort = SORT_AGE;
      else
        return cli_usage_error(&c, "bad sort order '%s' (key, size or age)", v);
    } else if (r == 0 && strcmp(argv[i], "--tuning") == 0) {
      tuning = 1;
      r = 1;
    }
    if (r < 0)
      return EXIT_USAGE;
    if (r == 0)
      return cli_unexpected(&c, argv[i]);
  }
  if (tuning && (source || older || sort != SORT_KEY))
    return cli_usage_error(&c, "--tuning takes --device, but no other filter or sort order");
  int rc = cli_resolve_dir(&c);
  if (rc)
    return rc;
  if (tuning) {
    if (!c.json)
      return tuning_list(&c, device, NULL);
    struct json j;
    json_init(&j, stdout);
    json_object_begin(&j, NULL);
    json_string(&j, "dir", c.dir);
    rc = tuning_list(&c, device, &j);
    json_object_end(&j);
    if (json_end(&j) != 0 && !rc)
      rc = cli_fail(&c, "cannot write the JSON output");
    return rc;
  }

  struct entry_list l = {0};
  if (c.exists) {
    kiln_cache *cache;
    if ((rc = cli_open(&c, KILN_CACHE_READONLY, &cache)))
      return rc;
    rc = cli_collect(&c, cache, 0, &l);
    kiln_cache_close(cache);
    if (rc)
      return rc;
  }
  int64_t now = (int64_t)time(NULL);
  /* Filter in place: entries that fail a filter are freed and the rest moved down. */
  size_t kept = 0;
  for (size_t i = 0; i < l.n; i++) {
    kiln_cache_entry *e = &l.v[i];
    int keep = (!device || contains_nocase(e->device_name, device)) &&
               (!source || strcmp(e->source_name, source) == 0 ||
                (strcmp(source, "text") == 0 && e->label[0])) &&
               (!older || now - e->last_used > older);
    if (keep) {
      l.v[kept++] = *e;
    } else {
      entry_free_strings(e);
    }
  }
  l.n = kept;
  if (sort == SORT_SIZE)
    qsort(l.v, l.n, sizeof *l.v, cmp_size);
  else if (sort == SORT_AGE)
    qsort(l.v, l.n, sizeof *l.v, cmp_age);
  uint64_t total = 0;
  for (size_t i = 0; i < l.n; i++)
    total += l.v[i].file_bytes;

  if (c.json) {
    struct json j;
    json_init(&j, stdout);
    json_object_begin(&j, NULL);
    json_string(&j, "dir", c.dir);
    json_bool(&j, "exists", c.exists);
    json_u64(&j, "count", l.n);
    json_u64(&j, "bytes", total);
    json_array_begin(&j, "entries");
    for (size_t i = 0; i < l.n; i++)
      json_entry(&j, NULL, &l.v[i]);
    json_array_end(&j);
    json_object_end(&j);
    if (json_end(&j) != 0)
      rc = cli_fail(&c, "cannot write the JSON output");
  } else if (l.n) {
    struct table t;
    const char *hdr[] = {"KEY",  "SOURCE",  "DEVICE",    "DRIVER",
                         "SIZE", "CREATED", "LAST USED", "OPTIONS"};
    table_init(&t, 8, 1u << 4, hdr);
    for (size_t i = 0; i < l.n; i++) {
      const kiln_cache_entry *e = &l.v[i];
      char key[13], size[32], created[48], used[48];
      snprintf(key, sizeof key, "%.12s", e->key);
      units_size(e->file_bytes, size, sizeof size);
      units_age(e->last_used, now, used, sizeof used);
      if (e->state == KILN_CACHE_ENTRY_OK) {
        units_age(e->created, now, created, sizeof created);
        /* A one-kernel program (PoCL, docs/cache.md) shows as source/kernel. */
        char shown[160];
        const char *only = strstr(e->options, "-DKILN_ONLY_IS_");
        if (only) {
          only += strlen("-DKILN_ONLY_IS_");
          snprintf(shown, sizeof shown, "%s/%.*s", e->source_name, (int)strcspn(only, "= "),
                   only);
        } else {
          snprintf(shown, sizeof shown, "%s", e->source_name);
        }
        const char *row[] = {key,  shown,   e->device_name, e->driver_version,
                             size, created, used,           e->options};
        table_row(&t, row);
      } else {
        char problem[300];
        snprintf(problem, sizeof problem, "%s: %s", entry_state_name(e->state), e->problem);
        const char *row[] = {key, "?", "?", "?", size, "?", used, problem};
        table_row(&t, row);
      }
    }
    table_print(&t, stdout, 0);
    table_free(&t);
    char a[32];
    printf("%zu entr%s, %s\n", l.n, l.n == 1 ? "y" : "ies", units_size(total, a, sizeof a));
  } else {
    printf("no entries%s in %s\n", device || source || older ? " match" : "", c.dir);
  }
  entry_list_free(&l);
  return rc;
}

/* ================================================================ show */

static const char show_usage[] =
    "usage: kiln cache show KEY [--dir DIR] [--json]\n\n"
    "Shows every header field of one entry, reads the whole file to check its MAC, and\n"
    "says whether it was built for a device present now. KEY may be any unique prefix of the\n"
    "32 hex digits; an ambiguous prefix lists the candidates (exit status 2).\n"
    "Exit status 1 if the entry is corrupt or unreadable, or no entry matches.\n\n"
    "options:\n"
    "  --dir DIR    the cache directory (default: the one the library uses)\n"
    "  --json       one JSON document on stdout\n";

/* One "label  value" line of show, the value escaped (it comes from the entry's header). */
static void
show_line(const char *label, const char *value)
{
  printf("%-18s ", label);
  text_put(stdout, value);
  putchar('\n');
}

int
cache_show(int argc, char **argv)
{
  struct cache_cli c;
  cli_init(&c, "show", show_usage);
  if (tool_wants_help(argc, argv, show_usage))
    return EXIT_OK;
  const char *prefix = NULL;
  for (int i = 1; i < argc; i++) {
    int r = cli_common_opt(&c, argc, argv, &i);
    if (r < 0)
      return EXIT_USAGE;
    if (r)
      continue;
    if (argv[i][0] == '-' || prefix)
      return cli_unexpected(&c, argv[i]);
    prefix = argv[i];
  }
  if (!prefix)
    return cli_usage_error(&c, "which entry? give a key or a unique prefix of one");
  size_t plen = strlen(prefix);
  char low[33];
  if (plen == 0 || plen > 32)
    return cli_usage_error(&c, "a key has 1 to 32 hex digits ('%s' has %zu characters)", prefix,
                           plen);
  for (size_t i = 0; i <= plen; i++) {
    if (i < plen && !isxdigit((unsigned char)prefix[i]))
      return cli_usage_error(&c, "'%s' is not a hex key prefix", prefix);
    low[i] = (char)tolower((unsigned char)prefix[i]);
  }
  int rc = cli_resolve_dir(&c);
  if (rc)
    return rc;
  if (!c.exists)
    return cli_fail(&c, "no entry %s: %s does not exist", low, c.dir);
  kiln_cache *cache;
  if ((rc = cli_open(&c, KILN_CACHE_READONLY, &cache)))
    return rc;
  /* Header-only listing first, to name the candidates of an ambiguous prefix. */
  struct entry_list l = {0};
  if ((rc = cli_collect(&c, cache, 0, &l))) {
    kiln_cache_close(cache);
    return rc;
  }
  size_t matches = 0, first = 0;
  for (size_t i = 0; i < l.n; i++)
    if (strncmp(l.v[i].key, low, plen) == 0 && matches++ == 0)
      first = i;
  if (matches != 1) {
    if (matches == 0) {
      rc = cli_fail(&c, "no entry key starts with %s in %s", low, c.dir);
    } else {
      fprintf(stderr,
              "kiln cache show: %zu entries have keys starting with %s; give more digits:\n",
              matches, low);
      for (size_t i = first; i < l.n; i++)
        if (strncmp(l.v[i].key, low, plen) == 0) {
          fprintf(stderr, "  %s  ", l.v[i].key);
          text_put(stderr, l.v[i].state == KILN_CACHE_ENTRY_OK ? l.v[i].source_name
                                                               : entry_state_name(l.v[i].state));
          fputs("  ", stderr);
          text_put(stderr, l.v[i].options);
          fputc('\n', stderr);
        }
      rc = EXIT_USAGE;
    }
    entry_list_free(&l);
    kiln_cache_close(cache);
    return rc;
  }
  entry_list_free(&l);
  /* Read the whole file this time: the MAC is part of what show reports. */
  struct entry_list one = {0};
  kiln_status s = kiln_cache_entry_find(cache, low, entry_list_add, &one);
  kiln_cache_close(cache);
  if (one.oom || s != KILN_OK || one.n != 1) {
    rc = one.oom ? cli_fail(&c, "out of memory") : cli_fail_kiln(&c);
    entry_list_free(&one);
    return rc;
  }
  const kiln_cache_entry *e = &one.v[0];
  kiln_device_info *devs = NULL;
  size_t ndev = 0;
  int dev_known = e->state != KILN_CACHE_ENTRY_OK || cli_devices(&c, &devs, &ndev) == EXIT_OK;
  int match = dev_known ? entry_device_match(e, devs, ndev) : -1;

  if (c.json) {
    struct json j;
    json_init(&j, stdout);
    json_object_begin(&j, NULL);
    json_string(&j, "dir", c.dir);
    json_entry(&j, "entry", e);
    if (!dev_known)
      json_null(&j, "matches_device");
    else
      json_bool(&j, "matches_device", match >= 0);
    if (match >= 0) {
      char sel[32];
      snprintf(sel, sizeof sel, "%u:%u", devs[match].platform_index, devs[match].device_index);
      json_string(&j, "device_index", sel);
    } else {
      json_null(&j, "device_index");
    }
    json_u64(&j, "devices_present", ndev);
    json_object_end(&j);
    if (json_end(&j) != 0)
      rc = cli_fail(&c, "cannot write the JSON output");
  } else {
    char a[64], b[64];
    int64_t now = (int64_t)time(NULL);
    printf("%-18s %s\n", "key", e->key);
    printf("%-18s %s\n", "path", e->path);
    if (e->state == KILN_CACHE_ENTRY_OK)
      printf("%-18s ok: header sound, MAC verified over %llu bytes\n", "state",
             (unsigned long long)e->file_bytes);
    else
      printf("%-18s %s: %s\n", "state", entry_state_name(e->state), e->problem);
    printf("%-18s %s (%llu bytes)\n", "file size", units_size(e->file_bytes, a, sizeof a),
           (unsigned long long)e->file_bytes);
    printf("%-18s %s (%s)\n", "last used", units_date(e->last_used, a, sizeof a),
           units_age(e->last_used, now, b, sizeof b));
    if (e->state == KILN_CACHE_ENTRY_OK) {
      printf("%-18s %s (%s)\n", "created", units_date(e->created, a, sizeof a),
             units_age(e->created, now, b, sizeof b));
      printf("%-18s %u\n", "format version", e->format_version);
      show_line("source", e->source_name);
      if (e->label[0])
        show_line("label", e->label);
      printf("%-18s %s\n", "source hash", e->source_hash);
      show_line("build options", e->options);
      show_line("platform", e->platform_name);
      show_line("platform version", e->platform_version);
      show_line("device", e->device_name);
      show_line("device version", e->device_version);
      show_line("driver version", e->driver_version);
      printf("%-18s 0x%x\n", "vendor id", e->vendor_id);
      printf("%-18s %u\n", "address bits", e->address_bits);
      show_line("written by kiln", e->kiln_version);
      printf("%-18s %s (%llu bytes)\n", "binary size", units_size(e->payload_bytes, a, sizeof a),
             (unsigned long long)e->payload_bytes);
      if (!dev_known)
        printf("%-18s unknown (the devices could not be listed)\n", "device match");
      else if (match >= 0)
        printf("%-18s yes: device %u:%u (%s)\n", "device match", devs[match].platform_index,
               devs[match].device_index, devs[match].name);
      else if (ndev == 0)
        printf("%-18s no: no OpenCL device is present\n", "device match");
      else
        printf("%-18s no: none of the %zu devices present has this identity (stale)\n",
               "device match", ndev);
    }
  }
  if (!rc && e->state != KILN_CACHE_ENTRY_OK)
    rc = EXIT_PROBLEM;
  free(devs);
  entry_list_free(&one);
  return rc;
}
