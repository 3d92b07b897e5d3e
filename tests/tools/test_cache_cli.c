/*
 * Tools suite: the `kiln cache` command (docs/cli.md), run as a separate
 * process (the built tool, from KILN_TEST_KILN) against caches this process
 * fills through the library.
 *
 * A master cache is filled once with kiln_context_cache_warm (the first
 * WARM_VARIANTS variants: cast for every dtype, then create); each test works
 * on a copy of it. Entries with identities no device has (a fake driver
 * version, a device name full of JSON-hostile bytes) are written with the
 * file layer (runtime/disk_cache.h) and published by kiln_cache_entry_write,
 * which checks them like any entry. JSON output is checked with Python's
 * json module (KILN_TEST_PYTHON). "No OpenCL platform" means the tool runs
 * with OCL_ICD_VENDORS pointed at an empty directory, and `kiln info`
 * confirms that it then finds no device.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "runtime/disk_cache.h"
#include "tool_run.h"

/* More variants than cast has dtypes (it builds every one), so the master holds two sources. */
#define WARM_VARIANTS (KILN_DTYPE_COUNT + 2)
/* The directory of the current cache format (DIR/v<KILN__DC_FORMAT>). */
#define VDIR "v2"
_Static_assert(KILN__DC_FORMAT == 2, "VDIR names the current format's directory");

static char *scratch; /* outputs of child processes, the empty vendor directory */
static char *master;  /* the cache filled once through the library */
static char novendors[4200];
static char python[4096]; /* the interpreter itself: a launcher script (pyenv) costs 0.2 s a call */

/* ------------------------------------------------------------ processes */

static void
spit(const char *path, const void *data, size_t len)
{
  FILE *f = fopen(path, "wb");
  ck_assert_msg(f != NULL, "cannot create %s", path);
  ck_assert_uint_eq(fwrite(data, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
}

/* The kiln tool with the given arguments (a NULL-terminated list), waited for. */
static void
kiln_v(struct run *r, const char *const *env, const char *const *args)
{
  run_kiln(r, scratch, env, 0, args);
}

#define KILN(r, env, ...) kiln_v((r), (env), (const char *const[]){__VA_ARGS__, NULL})

/* Fails with the command's output unless it exited with want. */
#define EXPECT_STATUS(r, want, what)                                                         \
  ck_assert_msg((r)->status == (want), "%s: exit %d, expected %d\nstdout:\n%s\nstderr:\n%s", \
                (what), (r)->status, (want), (r)->out, (r)->err)

/* Parses doc with Python's json module and prints expr (over d, the document); fails if the
   document does not parse. Returns the printed text without the final newline. */
static char *
jq(const char *doc, const char *expr)
{
  char in[4300];
  snprintf(in, sizeof in, "%s/json-in", scratch);
  spit(in, doc, strlen(doc));
  char script[2048];
  snprintf(script, sizeof script, "import json, sys\nd = json.load(sys.stdin)\nprint(%s)\n", expr);
  const char *argv[] = {python, "-c", script, NULL};
  struct run r;
  run_cmd(&r, scratch, NULL, in, NULL, 0, argv);
  ck_assert_msg(r.status == 0, "JSON check '%s' failed (%d): %s\ndocument:\n%s", expr, r.status,
                r.err, doc);
  char *s = strdup(r.out);
  size_t n = strlen(s);
  while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
    s[--n] = 0;
  run_free(&r);
  return s;
}

static long long
jq_int(const char *doc, const char *expr)
{
  char *s = jq(doc, expr);
  char *end;
  long long v = strtoll(s, &end, 10);
  ck_assert_msg(*s && !*end, "'%s' gave '%s', not an integer", expr, s);
  free(s);
  return v;
}

static void
jq_expect(const char *doc, const char *expr, const char *want)
{
  char *s = jq(doc, expr);
  ck_assert_msg(strcmp(s, want) == 0, "%s gave '%s', expected '%s'\ndocument:\n%s", expr, s, want,
                doc);
  free(s);
}

/* ------------------------------------------------------------ cache files */

struct kfile {
  char key[33];
  char path[4400];
  uint64_t size;
  int64_t mtime;
};

static int
cmp_kfile(const void *a, const void *b)
{
  return strcmp(((const struct kfile *)a)->key, ((const struct kfile *)b)->key);
}

/* The entry files (regular files named like entries) under dir/VDIR, sorted by key. */
static size_t
entry_files(const char *dir, struct kfile *out, size_t cap)
{
  char v1[4200];
  snprintf(v1, sizeof v1, "%s/" VDIR, dir);
  size_t n = 0;
  DIR *d = opendir(v1);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (strlen(de->d_name) != 2 || de->d_name[0] == '.')
      continue;
    char sub[4300];
    snprintf(sub, sizeof sub, "%s/%s", v1, de->d_name);
    struct stat sst;
    if (lstat(sub, &sst) != 0 || !S_ISDIR(sst.st_mode))
      continue; /* a link to a directory elsewhere holds no entries of this cache */
    DIR *sd = opendir(sub);
    struct dirent *fe;
    while (sd && (fe = readdir(sd))) {
      if (strlen(fe->d_name) != 35 || strcmp(fe->d_name + 30, ".kbin") != 0)
        continue;
      struct stat st;
      char path[4400];
      snprintf(path, sizeof path, "%s/%s", sub, fe->d_name);
      if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
        continue;
      ck_assert_uint_lt(n, cap);
      snprintf(out[n].key, sizeof out[n].key, "%s%.30s", de->d_name, fe->d_name);
      snprintf(out[n].path, sizeof out[n].path, "%s", path);
      out[n].size = (uint64_t)st.st_size;
      out[n].mtime = (int64_t)st.st_mtim.tv_sec;
      n++;
    }
    if (sd)
      closedir(sd);
  }
  if (d)
    closedir(d);
  qsort(out, n, sizeof *out, cmp_kfile);
  return n;
}

static void
set_mtime(const char *path, int64_t t)
{
  struct timespec ts[2] = {{(time_t)t, 0}, {(time_t)t, 0}};
  ck_assert_msg(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW) == 0, "utimensat %s: %s", path,
                strerror(errno));
}

/* Every file and directory under a tree with its type, size, mtime and a hash of its bytes. */
static char **snap_lines;
static size_t snap_n, snap_cap;
static size_t snap_root_len;

static int
snap_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)flag;
  (void)ftw;
  uint64_t h = 1469598103934665603ull;
  if (S_ISREG(st->st_mode)) {
    size_t len;
    char *data = slurp(path, &len);
    for (size_t i = 0; i < len; i++)
      h = (h ^ (unsigned char)data[i]) * 1099511628211ull;
    free(data);
  }
  char line[4600];
  snprintf(line, sizeof line, "%s mode=%o size=%lld mtime=%lld.%09ld hash=%016llx",
           path + snap_root_len, (unsigned)st->st_mode, (long long)st->st_size,
           (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec, (unsigned long long)h);
  if (snap_n == snap_cap)
    snap_lines =
        realloc(snap_lines, (snap_cap = snap_cap ? 2 * snap_cap : 64) * sizeof *snap_lines);
  snap_lines[snap_n++] = strdup(line);
  return 0;
}

static int
cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A listing of the tree, to compare before and after a command that must change nothing. */
static char *
snapshot(const char *dir)
{
  snap_n = 0;
  snap_root_len = strlen(dir);
  ck_assert_int_eq(nftw(dir, snap_one, 16, FTW_PHYS), 0);
  qsort(snap_lines, snap_n, sizeof *snap_lines, cmp_str);
  size_t total = 1;
  for (size_t i = 0; i < snap_n; i++)
    total += strlen(snap_lines[i]) + 1;
  char *s = malloc(total), *p = s;
  for (size_t i = 0; i < snap_n; i++) {
    p += sprintf(p, "%s\n", snap_lines[i]);
    free(snap_lines[i]);
  }
  *p = 0;
  return s;
}

/* A tuning file as the autotuner writes it (docs/tuning.md): two results, a failed candidate
   and a malformed line. */
#define TUNING_FILE                                                                            \
  "kiln-tuning v1\n"                                                                           \
  "device Some Device\n"                                                                       \
  "driver 3.1\n"                                                                               \
  "v1 elementwise f32 flat.2^20 wg_size=1024 time_ns=501234 default_ns=552345\n"               \
  "v1 reduce f32 row.2^20 wg_size=512 items_per_thread=16 two_pass_min=8192 groups_per_cu=4 "  \
  "blocked=1 cols_per_item=16 time_ns=144046 default_ns=284712\n"                              \
  "v1 reduce f32 row.2^20 wg_size=1024 items_per_thread=16 two_pass_min=8192 groups_per_cu=4 " \
  "blocked=1 cols_per_item=16 failed=wrong\n"                                                  \
  "this line is not an entry\n"

/* ------------------------------------------------------------ filling caches */

/* The kernel sources of the variants in the master cache (whatever order kiln warms in). */
static char master_src[WARM_VARIANTS][32];
static size_t master_nsrc;
static int recording;

static int
stop_after(size_t done, size_t total, const char *source, const char *options, kiln_status s,
           void *user)
{
  (void)total;
  (void)options;
  (void)s;
  size_t i = 0;
  while (recording && i < master_nsrc && strcmp(master_src[i], source) != 0)
    i++;
  if (recording && i == master_nsrc && i < WARM_VARIANTS)
    snprintf(master_src[master_nsrc++], sizeof master_src[0], "%s", source);
  return done >= *(const size_t *)user;
}

static int
cmp_src(const void *a, const void *b)
{
  return strcmp((const char *)a, (const char *)b);
}

/* Warms the first `limit` variants into dir through the library. */
static kiln_cache_warm_result
warm_into(const char *dir, size_t limit)
{
  kiln_context *ctx = NULL;
  KOK(kiln_context_create(NULL, &ctx));
  KOK(kiln_context_set_cache_dir(ctx, dir));
  kiln_cache_warm_result res;
  KOK(kiln_context_cache_warm(ctx, stop_after, &limit, &res));
  KOK(kiln_context_release(ctx));
  return res;
}

static const char *
get_master(void)
{
  if (!master) {
    master = harness_tempdir();
    recording = 1;
    kiln_cache_warm_result res = warm_into(master, WARM_VARIANTS);
    recording = 0;
    qsort(master_src, master_nsrc, sizeof master_src[0], cmp_src);
    ck_assert_uint_eq(res.done, WARM_VARIANTS);
    ck_assert_uint_eq(res.stored, WARM_VARIANTS);
  }
  return master;
}

/* A fresh copy of the master cache (mtimes kept). */
static char *
copy_master(void)
{
  const char *m = get_master();
  char *d = harness_tempdir();
  char cmd[8600];
  snprintf(cmd, sizeof cmd, "cp -a '%s/.' '%s/'", m, d);
  ck_assert_int_eq(system(cmd), 0);
  return d;
}

static kiln_device_info
first_device(void)
{
  kiln_device_info info;
  size_t n = 0;
  KOK(kiln_device_list(&info, 1, &n, NULL));
  ck_assert_uint_ge(n, 1);
  return info;
}

/* Publishes an entry built for the first device but with the given device name, driver
   version and build options (NULL: the real ones, and fixed options), through
   kiln_cache_entry_write. */
static void
write_fake_entry_opts(const char *dir, const char *device_name, const char *driver,
                      const char *options, int variant, char key[33])
{
  kiln_device_info d = first_device();
  struct kiln__dc_ident id = {d.platform_name,
                              d.platform_version,
                              device_name ? device_name : d.name,
                              d.device_version,
                              driver ? driver : d.driver_version,
                              d.vendor_id,
                              d.address_bits};
  char text[128];
  snprintf(text, sizeof text, "kernel void fake(global int *x) { x[0] = %d; }\n", variant);
  struct kiln__dc_req r;
  kiln__dc_req_init(&r, &id, "fake", text, strlen(text),
                    options ? options : "-cl-std=CL1.2 -DT=int");
  kiln_cache *c = NULL;
  KOK(kiln_cache_open(dir, KILN_CACHE_ON, &c));
  uint8_t *buf = NULL;
  size_t n = kiln__dc_serialize(&r, "not a device binary", 19, (int64_t)time(NULL),
                                kiln__dc_mac_key(c), &buf);
  ck_assert_uint_gt(n, 0);
  KOK(kiln_cache_entry_write(c, buf, n, key));
  KOK(kiln_cache_close(c));
  free(buf);
}

static void
write_fake_entry(const char *dir, const char *device_name, const char *driver, int variant,
                 char key[33])
{
  write_fake_entry_opts(dir, device_name, driver, NULL, variant, key);
}

/* DIR/key of a cache, from `kiln cache stats --json` (the way a user finds it). */
static char *
key_file_of(const char *dir)
{
  struct run r;
  KILN(&r, NULL, "cache", "stats", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "stats for the key file");
  jq_expect(r.out, "d['key_problem']", "");
  char *k = jq(r.out, "d['key_file']");
  run_free(&r);
  char want[4300];
  snprintf(want, sizeof want, "%s/key", dir);
  ck_assert_str_eq(k, want);
  return k;
}

static const char *const *
no_platform_env(void)
{
  static char var[4300];
  static const char *env[2];
  snprintf(var, sizeof var, "OCL_ICD_VENDORS=%s", novendors);
  env[0] = var;
  env[1] = NULL;
  return env;
}

/* ------------------------------------------------------------ tests */

START_TEST(list_show_stats_match_the_files)
{
  char *dir = copy_master();
  struct kfile f[64];
  size_t n = entry_files(dir, f, 64);
  ck_assert_uint_eq(n, WARM_VARIANTS);
  uint64_t total = 0;
  char keys[64 * 33 + 1] = "";
  for (size_t i = 0; i < n; i++) {
    total += f[i].size;
    strcat(keys, f[i].key);
    strcat(keys, i + 1 < n ? " " : "");
  }
  struct run r;

  KILN(&r, NULL, "cache", "list", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "list --json");
  ck_assert_int_eq(jq_int(r.out, "d['count']"), (long long)n);
  ck_assert_int_eq(jq_int(r.out, "d['bytes']"), (long long)total);
  jq_expect(r.out, "' '.join(sorted(e['key'] for e in d['entries']))", keys);
  char sources[WARM_VARIANTS * (sizeof master_src[0] + 4) + 2] = "[";
  for (size_t i = 0; i < master_nsrc; i++)
    snprintf(sources + strlen(sources), sizeof sources - strlen(sources), "%s'%s'", i ? ", " : "",
             master_src[i]);
  strcat(sources, "]");
  jq_expect(r.out, "sorted(set(e['source'] for e in d['entries']))", sources);
  jq_expect(r.out, "all(e['state'] == 'ok' for e in d['entries'])", "True");
  for (size_t i = 0; i < n; i++) {
    char expr[200], want[64];
    snprintf(expr, sizeof expr,
             "[(e['bytes'], e['last_used']) for e in d['entries'] if "
             "e['key'] == '%.32s'][0]",
             f[i].key);
    snprintf(want, sizeof want, "(%llu, %lld)", (unsigned long long)f[i].size,
             (long long)f[i].mtime);
    jq_expect(r.out, expr, want);
  }
  run_free(&r);

  /* Human output: a row per entry under its 12-digit key, and the total. */
  KILN(&r, NULL, "cache", "list", "--dir", dir);
  EXPECT_STATUS(&r, 0, "list");
  for (size_t i = 0; i < n; i++) {
    char k12[13];
    snprintf(k12, sizeof k12, "%.12s", f[i].key);
    ck_assert_msg(strstr(r.out, k12), "list lacks %s:\n%s", k12, r.out);
  }
  char line[64];
  snprintf(line, sizeof line, "%zu entries, ", n);
  ck_assert_msg(strstr(r.out, line) && strstr(r.out, "KiB"), "list summary:\n%s", r.out);
  run_free(&r);

  KILN(&r, NULL, "cache", "stats", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "stats --json");
  ck_assert_int_eq(jq_int(r.out, "d['entries']"), (long long)n);
  ck_assert_int_eq(jq_int(r.out, "d['bytes']"), (long long)total);
  ck_assert_int_eq(jq_int(r.out, "d['tracked_entries']"), (long long)n);
  ck_assert_int_eq(jq_int(r.out, "d['tracked_bytes']"), (long long)total);
  ck_assert_int_eq(jq_int(r.out, "d['corrupt_entries']"), 0);
  ck_assert_int_eq(jq_int(r.out, "d['counters']['stores']"), WARM_VARIANTS);
  ck_assert_int_eq(jq_int(r.out, "d['counters']['misses']"), WARM_VARIANTS);
  ck_assert_int_eq(jq_int(r.out, "d['counters']['hits']"), 0);
  ck_assert_int_eq(jq_int(r.out, "len(d['devices'])"), 1);
  ck_assert_int_eq(jq_int(r.out, "d['devices'][0]['entries']"), (long long)n);
  ck_assert_int_eq(jq_int(r.out, "d['devices'][0]['bytes']"), (long long)total);
  kiln_device_info dev = first_device();
  char *got = jq(r.out, "d['devices'][0]['device'] + '|' + d['devices'][0]['driver']");
  char want[600];
  snprintf(want, sizeof want, "%s|%s", dev.name, dev.driver_version);
  ck_assert_str_eq(got, want);
  free(got);
  ck_assert_int_eq(jq_int(r.out, "d['max_bytes']"), 1ll << 30);
  run_free(&r);

  /* The default directory is the library's (KILN_CACHE_DIR here), and the cap follows
     KILN_CACHE_MAX_SIZE. */
  char envdir[4300];
  snprintf(envdir, sizeof envdir, "KILN_CACHE_DIR=%s", dir);
  const char *env[] = {envdir, "KILN_CACHE_MAX_SIZE=3M", NULL};
  KILN(&r, env, "cache", "stats", "--json");
  EXPECT_STATUS(&r, 0, "stats without --dir");
  got = jq(r.out, "d['dir']");
  ck_assert_str_eq(got, dir);
  free(got);
  ck_assert_int_eq(jq_int(r.out, "d['entries']"), (long long)n);
  ck_assert_int_eq(jq_int(r.out, "d['max_bytes']"), 3ll << 20);
  run_free(&r);

  KILN(&r, NULL, "cache", "stats", "--dir", dir);
  EXPECT_STATUS(&r, 0, "stats");
  snprintf(line, sizeof line, "entries              %zu\n", n);
  ck_assert_msg(strstr(r.out, line), "stats lacks '%s':\n%s", line, r.out);
  ck_assert_msg(strstr(r.out, dev.name) && strstr(r.out, "stores") &&
                    strstr(r.out, "of 1.0 GiB cap"),
                "stats:\n%s", r.out);
  run_free(&r);

  /* show by a prefix: every header field, the MAC checked and the device match. */
  char prefix[9];
  snprintf(prefix, sizeof prefix, "%.8s", f[0].key);
  KILN(&r, NULL, "cache", "show", prefix, "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "show --json");
  jq_expect(r.out, "d['entry']['key']", f[0].key);
  ck_assert_int_eq(jq_int(r.out, "d['entry']['bytes']"), (long long)f[0].size);
  jq_expect(r.out, "d['entry']['state'], d['entry']['checksum_verified'], d['matches_device']",
            "ok True True");
  jq_expect(r.out, "d['entry']['payload_bytes'] < d['entry']['bytes']", "True");
  got = jq(r.out, "d['entry']['device'] + '|' + d['entry']['driver']");
  ck_assert_str_eq(got, want);
  free(got);
  run_free(&r);
  KILN(&r, NULL, "cache", "show", prefix, "--dir", dir);
  EXPECT_STATUS(&r, 0, "show");
  ck_assert_msg(strstr(r.out, f[0].key) && strstr(r.out, "MAC verified") &&
                    strstr(r.out, "device match       yes") && strstr(r.out, "build options"),
                "show:\n%s", r.out);
  run_free(&r);

  /* An ambiguous prefix: add entries until two keys share their first digit. */
  char seen[17] = "", fake[33], amb[2] = "";
  size_t nseen = 0;
  for (size_t i = 0; i < n; i++)
    if (!strchr(seen, f[i].key[0]))
      seen[nseen++] = f[i].key[0];
  for (int v = 0; !amb[0] && v < 200; v++) {
    write_fake_entry(dir, NULL, NULL, v, fake);
    if (strchr(seen, fake[0]))
      amb[0] = fake[0];
    else
      seen[nseen++] = fake[0];
  }
  ck_assert(amb[0]);
  KILN(&r, NULL, "cache", "show", amb, "--dir", dir);
  EXPECT_STATUS(&r, 2, "show with an ambiguous prefix");
  ck_assert_msg(strstr(r.err, "give more digits") && strstr(r.err, fake), "stderr:\n%s", r.err);
  ck_assert_str_eq(r.out, "");
  run_free(&r);
  KILN(&r, NULL, "cache", "show", "0123456789abcdef0123456789abcdef", "--dir", dir);
  if (strcmp(f[0].key, "0123456789abcdef0123456789abcdef") != 0)
    EXPECT_STATUS(&r, 1, "show of a key that is not there");
  run_free(&r);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(verify_finds_corruption_and_fix_lets_the_library_rebuild)
{
  char *dir = copy_master();
  struct kfile f[64];
  size_t n = entry_files(dir, f, 64);
  const struct kfile *bad = &f[n / 2];
  struct run r;
  KILN(&r, NULL, "cache", "verify", "--dir", dir);
  EXPECT_STATUS(&r, 0, "verify of a sound cache");
  ck_assert_msg(strstr(r.out, "all sound"), "%s", r.out);
  run_free(&r);

  /* Flip one byte in the middle of the binary: only the MAC can tell. */
  size_t len;
  char *data = slurp(bad->path, &len);
  data[len / 2] ^= 0x20;
  spit(bad->path, data, len);
  free(data);
  char *before = snapshot(dir);
  KILN(&r, NULL, "cache", "verify", "--dir", dir);
  EXPECT_STATUS(&r, 1, "verify with a corrupt entry");
  ck_assert_msg(strstr(r.out, bad->key) && strstr(r.out, "MAC mismatch") && strstr(r.out, "1 bad"),
                "%s", r.out);
  run_free(&r);
  KILN(&r, NULL, "cache", "verify", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 1, "verify --json with a corrupt entry");
  char want[100];
  snprintf(want, sizeof want, "%zu 1 0 %s corrupt", n, bad->key);
  jq_expect(r.out,
            "d['checked'], d['bad'], d['removed'], d['problems'][0]['key'], "
            "d['problems'][0]['state']",
            want);
  run_free(&r);
  char *after = snapshot(dir);
  ck_assert_str_eq(before, after); /* verify without --fix changes nothing */
  free(before);
  free(after);

  KILN(&r, NULL, "cache", "verify", "--fix", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "verify --fix");
  ck_assert_int_eq(jq_int(r.out, "d['removed']"), 1);
  run_free(&r);
  ck_assert_int_eq(access(bad->path, F_OK), -1);
  ck_assert_uint_eq(entry_files(dir, f + 32, 32), n - 1);
  KILN(&r, NULL, "cache", "verify", "--dir", dir);
  EXPECT_STATUS(&r, 0, "verify after --fix");
  run_free(&r);

  /* The library rebuilds the removed variant, under the same key, and only that one. */
  kiln_cache_warm_result res = warm_into(dir, WARM_VARIANTS);
  ck_assert_uint_eq(res.cached, WARM_VARIANTS - 1);
  ck_assert_uint_eq(res.built, 1);
  ck_assert_uint_eq(res.stored, 1);
  ck_assert_int_eq(access(bad->path, F_OK), 0);
  KILN(&r, NULL, "cache", "verify", "--dir", dir);
  EXPECT_STATUS(&r, 0, "verify after the rebuild");
  run_free(&r);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(prune_by_size_oldest_first_and_dry_run_changes_nothing)
{
  char *dir = copy_master();
  struct kfile f[64];
  size_t n = entry_files(dir, f, 64);
  int64_t now = (int64_t)time(NULL);
  uint64_t total = 0;
  /* Distinct ages: entry i was last used i+1 hours ago, so the last one is the oldest. */
  for (size_t i = 0; i < n; i++) {
    set_mtime(f[i].path, now - 3600 * (int64_t)(i + 1));
    total += f[i].size;
  }
  const struct kfile *o1 = &f[n - 1], *o2 = &f[n - 2];
  char cap[32];
  snprintf(cap, sizeof cap, "%llu", (unsigned long long)(total - o1->size - o2->size));
  struct run r;

  char *before = snapshot(dir);
  KILN(&r, NULL, "cache", "prune", "--max-size", cap, "--dry-run", "--dir", dir);
  EXPECT_STATUS(&r, 0, "prune --dry-run");
  char k12[13];
  snprintf(k12, sizeof k12, "%.12s", o1->key);
  ck_assert_msg(strstr(r.out, "would remove") && strstr(r.out, k12) &&
                    strstr(r.out, "would remove 2 entries"),
                "%s", r.out);
  run_free(&r);
  KILN(&r, NULL, "cache", "prune", "--max-size", cap, "--dry-run", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "prune --dry-run --json");
  jq_expect(r.out, "d['dry_run'], d['entries'], sorted(x['reason'] for x in d['removed'])",
            "True 2 ['size', 'size']");
  char want[100];
  int o1_first = strcmp(o1->key, o2->key) < 0;
  snprintf(want, sizeof want, "['%s', '%s']", o1_first ? o1->key : o2->key,
           o1_first ? o2->key : o1->key);
  jq_expect(r.out, "sorted(x['key'] for x in d['removed'])", want);
  run_free(&r);
  char *after = snapshot(dir);
  ck_assert_str_eq(before, after);
  free(before);
  free(after);

  /* A target above the total removes nothing; suffixes are powers of 1024, fractions count. */
  static const struct {
    const char *arg;
    long long bytes;
  } sizes[] = {
      {"1G", 1ll << 30}, {"1.5G", 3ll << 29},      {"512K", 512ll << 10}, {"3MiB", 3ll << 20},
      {"2kb", 2048},     {"100000000", 100000000}, {"0.5T", 1ll << 39},   {"7b", 7}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    KILN(&r, NULL, "cache", "prune", "--max-size", sizes[i].arg, "--dry-run", "--dir", dir,
         "--json");
    EXPECT_STATUS(&r, 0, sizes[i].arg);
    ck_assert_int_eq(jq_int(r.out, "d['max_bytes']"), sizes[i].bytes);
    /* Oldest first (the last entries here) until the rest fit. */
    long long rest = (long long)total, go = 0;
    for (size_t k = n; k-- > 0 && rest > sizes[i].bytes; go++)
      rest -= (long long)f[k].size;
    ck_assert_int_eq(jq_int(r.out, "d['entries']"), go);
    run_free(&r);
  }
  /* Without a criterion: down to the size cap. */
  const char *cap_env[] = {"KILN_CACHE_MAX_SIZE=1M", NULL};
  KILN(&r, cap_env, "cache", "prune", "--dry-run", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "prune to the cap");
  jq_expect(r.out, "d['max_bytes'], d['older_than_s'], d['stale']", "1048576 0 False");
  run_free(&r);

  KILN(&r, NULL, "cache", "prune", "--max-size", cap, "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "prune --max-size");
  ck_assert_int_eq(jq_int(r.out, "d['entries']"), 2);
  ck_assert_int_eq(jq_int(r.out, "d['bytes']"), (long long)(o1->size + o2->size));
  run_free(&r);
  struct kfile g[64];
  ck_assert_uint_eq(entry_files(dir, g, 64), n - 2);
  ck_assert_int_eq(access(o1->path, F_OK), -1);
  ck_assert_int_eq(access(o2->path, F_OK), -1);
  KILN(&r, NULL, "cache", "stats", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "stats after prune");
  ck_assert_int_eq(jq_int(r.out, "d['tracked_entries']"), (long long)n - 2);
  run_free(&r);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(prune_by_age_and_list_filters)
{
  char *dir = copy_master();
  struct kfile f[64];
  size_t n = entry_files(dir, f, 64);
  int64_t now = (int64_t)time(NULL);
  for (size_t i = 0; i < n; i++)
    set_mtime(f[i].path, now - (i < 2 ? 10 * 86400 : 3600 + (int64_t)i));
  struct run r;

  KILN(&r, NULL, "cache", "list", "--older-than", "7d", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "list --older-than");
  char want[100];
  snprintf(want, sizeof want, "%s %s", f[0].key, f[1].key);
  jq_expect(r.out, "' '.join(e['key'] for e in d['entries'])", want);
  run_free(&r);
  KILN(&r, NULL, "cache", "list", "--older-than", "1d12h", "--sort", "size", "--dir", dir);
  EXPECT_STATUS(&r, 0, "list --older-than 1d12h");
  ck_assert_msg(strstr(r.out, "10 days ago") && strstr(r.out, "2 entries"), "%s", r.out);
  run_free(&r);

  /* Filters and sort orders. */
  /* The master holds at least two sources (WARM_VARIANTS exceeds the dtype count). */
  ck_assert_uint_ge(master_nsrc, 2);
  char expr[200];
  snprintf(expr, sizeof expr,
           "0 < d['count'] < %zu and all(e['source'] == '%s' for e in d['entries'])", n,
           master_src[1]);
  KILN(&r, NULL, "cache", "list", "--source", master_src[1], "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "list --source");
  jq_expect(r.out, expr, "True");
  run_free(&r);
  kiln_device_info dev = first_device();
  char upper[300];
  snprintf(upper, sizeof upper, "%s", dev.name + strlen(dev.name) / 2);
  for (char *p = upper; *p; p++)
    *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
  KILN(&r, NULL, "cache", "list", "--device", upper, "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "list --device");
  ck_assert_int_eq(jq_int(r.out, "d['count']"), (long long)n);
  run_free(&r);
  KILN(&r, NULL, "cache", "list", "--device", "no such device", "--dir", dir);
  EXPECT_STATUS(&r, 0, "list --device matching nothing");
  ck_assert_msg(strstr(r.out, "no entries match"), "%s", r.out);
  run_free(&r);
  KILN(&r, NULL, "cache", "list", "--sort", "size", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "list --sort size");
  jq_expect(r.out, "all(a['bytes'] >= b['bytes'] for a, b in zip(d['entries'], d['entries'][1:]))",
            "True");
  run_free(&r);
  KILN(&r, NULL, "cache", "list", "--sort", "age", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "list --sort age");
  jq_expect(r.out,
            "all(a['last_used'] <= b['last_used'] for a, b in zip(d['entries'], d['entries'][1:]))",
            "True");
  run_free(&r);

  char *before = snapshot(dir);
  KILN(&r, NULL, "cache", "prune", "--older-than", "7d", "--dry-run", "--dir", dir);
  EXPECT_STATUS(&r, 0, "prune --older-than --dry-run");
  for (size_t i = 0; i < 2; i++) {
    char k12[13];
    snprintf(k12, sizeof k12, "%.12s", f[i].key);
    ck_assert_msg(strstr(r.out, k12), "dry run does not name %s:\n%s", k12, r.out);
  }
  ck_assert_msg(strstr(r.out, "would remove 2 entries") && strstr(r.out, "age"), "%s", r.out);
  run_free(&r);
  char *after = snapshot(dir);
  ck_assert_str_eq(before, after);
  free(before);
  free(after);

  KILN(&r, NULL, "cache", "prune", "--older-than", "7d", "--dir", dir);
  EXPECT_STATUS(&r, 0, "prune --older-than");
  ck_assert_msg(strstr(r.out, "removed 2 entries"), "%s", r.out);
  run_free(&r);
  struct kfile g[64];
  ck_assert_uint_eq(entry_files(dir, g, 64), n - 2);
  ck_assert_int_eq(access(f[0].path, F_OK), -1);
  ck_assert_int_eq(access(f[1].path, F_OK), -1);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(prune_stale_entries_and_temp_files)
{
  char *dir = copy_master();
  struct kfile f[64];
  size_t n = entry_files(dir, f, 64);
  char fake[33];
  write_fake_entry(dir, NULL, "0.0-fake-driver", 1, fake);
  /* A temp file an interrupted writer left two hours ago, and a fresh one (still being written). */
  char tmp_old[4400], tmp_new[4400];
  snprintf(tmp_old, sizeof tmp_old, "%s/" VDIR "/%.2s/%.30s.kbin.tmp.AbC123", dir, f[0].key,
           f[0].key + 2);
  snprintf(tmp_new, sizeof tmp_new, "%s/" VDIR "/%.2s/%.30s.kbin.tmp.XyZ789", dir, f[0].key,
           f[0].key + 2);
  spit(tmp_old, "partial", 7);
  spit(tmp_new, "partial", 7);
  set_mtime(tmp_old, (int64_t)time(NULL) - 7200);
  struct run r;

  KILN(&r, NULL, "cache", "stats", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "stats with a stale entry");
  ck_assert_int_eq(jq_int(r.out, "len(d['devices'])"), 2);
  ck_assert_int_eq(jq_int(r.out, "[g['entries'] for g in d['devices'] if g['driver'] == "
                                 "'0.0-fake-driver'][0]"),
                   1);
  ck_assert_int_eq(jq_int(r.out, "d['stale_temp_files']"), 1);
  run_free(&r);

  /* show says the entry matches no device present. */
  KILN(&r, NULL, "cache", "show", fake, "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "show of a stale entry");
  jq_expect(r.out, "d['matches_device'], d['entry']['driver']", "False 0.0-fake-driver");
  run_free(&r);

  /* Without any OpenCL platform --stale refuses: every entry would look stale. */
  char *before = snapshot(dir);
  KILN(&r, no_platform_env(), "cache", "prune", "--stale", "--dir", dir);
  EXPECT_STATUS(&r, 1, "prune --stale without a platform");
  ck_assert_msg(strstr(r.err, "no OpenCL device"), "%s", r.err);
  run_free(&r);
  KILN(&r, NULL, "cache", "prune", "--stale", "--dry-run", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "prune --stale --dry-run");
  jq_expect(r.out, "d['entries'], d['temp_files'], sorted(x['reason'] for x in d['removed'])",
            "1 1 ['stale', 'temp file']");
  jq_expect(r.out, "[x['key'] for x in d['removed'] if x['reason'] == 'stale'][0]", fake);
  run_free(&r);
  char *after = snapshot(dir);
  ck_assert_str_eq(before, after);
  free(before);
  free(after);

  KILN(&r, NULL, "cache", "prune", "--stale", "--dir", dir);
  EXPECT_STATUS(&r, 0, "prune --stale");
  ck_assert_msg(strstr(r.out, "removed 1 entry") && strstr(r.out, "1 stale temp file") &&
                    strstr(r.out, "stale"),
                "%s", r.out);
  run_free(&r);
  struct kfile g[64];
  ck_assert_uint_eq(entry_files(dir, g, 64), n);
  for (size_t i = 0; i < n; i++)
    ck_assert_str_eq(g[i].key, f[i].key);
  ck_assert_int_eq(access(tmp_old, F_OK), -1);
  ck_assert_int_eq(access(tmp_new, F_OK), 0);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(export_then_import_gives_identical_entries_that_hit)
{
  char *a = copy_master();
  struct kfile f[64];
  size_t n = entry_files(a, f, 64);
  char fake[33];
  write_fake_entry(a, NULL, "0.0-fake-driver", 2, fake);
  char archive[4300], b[4300], c[4300];
  snprintf(archive, sizeof archive, "%s/cache.kca", scratch);
  snprintf(b, sizeof b, "%s/import-b", scratch);
  snprintf(c, sizeof c, "%s/import-c", scratch);
  harness_rmtree(b);
  harness_rmtree(c);
  struct run r;

  KILN(&r, NULL, "cache", "export", archive, "--dir", a, "--json");
  EXPECT_STATUS(&r, 0, "export");
  ck_assert_int_eq(jq_int(r.out, "d['entries']"), (long long)n + 1);
  run_free(&r);
  KILN(&r, NULL, "cache", "export", archive, "--dir", a, "--device", "no such device");
  EXPECT_STATUS(&r, 1, "export matching no entry");
  ck_assert_msg(strstr(r.err, "no entries"), "%s", r.err);
  run_free(&r);

  /*
   * Another directory has another key: without the exporter's key nothing is
   * imported (every entry is refused and counted); with --key it all is.
   */
  KILN(&r, NULL, "cache", "import", archive, "--dir", b);
  EXPECT_STATUS(&r, 1, "import of another cache's archive without --key");
  char count[100];
  snprintf(count, sizeof count, "%zu of %zu entries refused", n + 1, n + 1);
  ck_assert_msg(strstr(r.err, count) && strstr(r.err, "MAC mismatch") && strstr(r.err, "--key") &&
                    strstr(r.err, "nothing was imported"),
                "%s", r.err);
  run_free(&r);
  struct kfile g[64];
  ck_assert_uint_eq(entry_files(b, g, 64), 0);
  /* Its own archive goes back into the exporting cache without --key. */
  KILN(&r, NULL, "cache", "import", archive, "--all", "--dir", a);
  EXPECT_STATUS(&r, 0, "import into the exporting cache");
  run_free(&r);
  char *akey = key_file_of(a);

  /* Into a directory that does not exist yet: the stale entry is skipped. */
  KILN(&r, NULL, "cache", "import", archive, "--dir", b, "--json", "--key", akey);
  EXPECT_STATUS(&r, 0, "import");
  char want[100];
  snprintf(want, sizeof want, "%zu %zu 1 %s", n + 1, n, fake);
  jq_expect(r.out, "d['records'], d['imported'], d['skipped'], d['skipped_entries'][0]['key']",
            want);
  run_free(&r);
  ck_assert_uint_eq(entry_files(b, g, 64), n);
  for (size_t i = 0; i < n; i++) {
    /* The same entry, now vouched for by b's own key: only the MAC differs. */
    ck_assert_str_eq(g[i].key, f[i].key);
    size_t la, lb;
    char *da = slurp(f[i].path, &la), *db = slurp(g[i].path, &lb);
    ck_assert_msg(
        la == lb && memcmp(da, db, la - KILN__DC_TRAILER) == 0 &&
            memcmp(da + la - KILN__DC_TRAILER, db + lb - KILN__DC_TRAILER, KILN__DC_TRAILER) != 0,
        "entry %s: not the same entry under b's key after import", f[i].key);
    free(da);
    free(db);
  }

  /* The library hits every imported entry: no build, and the hit counters say so. */
  kiln_cache_warm_result res = warm_into(b, WARM_VARIANTS);
  ck_assert_uint_eq(res.cached, WARM_VARIANTS);
  ck_assert_uint_eq(res.built, 0);
  KILN(&r, NULL, "cache", "stats", "--dir", b, "--json");
  EXPECT_STATUS(&r, 0, "stats after import");
  ck_assert_int_eq(jq_int(r.out, "d['counters']['hits']"), WARM_VARIANTS);
  ck_assert_int_eq(jq_int(r.out, "d['counters']['misses']"), 0);
  ck_assert_int_eq(jq_int(r.out, "d['entries']"), (long long)n);
  run_free(&r);

  /* --all takes the stale entry too, and needs no OpenCL. */
  KILN(&r, no_platform_env(), "cache", "import", archive, "--all", "--dir", c, "--key", akey);
  EXPECT_STATUS(&r, 0, "import --all");
  snprintf(want, sizeof want, "imported %zu of %zu entries", n + 1, n + 1);
  ck_assert_msg(strstr(r.out, want), "%s", r.out);
  run_free(&r);
  ck_assert_uint_eq(entry_files(c, g, 64), n + 1);
  free(akey);
  harness_rmtree(a);
  harness_rmtree(b);
  harness_rmtree(c);
  free(a);
}
END_TEST

static uint32_t
crc32_ieee(const uint8_t *p, size_t n)
{
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++)
      c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
  }
  return ~c;
}

static uint64_t
le64(const uint8_t *p)
{
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static void
put_le32(uint8_t *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* Recomputes the CRCs of an archive (docs/cli.md): every record's too when records is set, so
   that only deeper checks can catch a change. */
static void
fix_crcs(uint8_t *a, size_t n, int records)
{
  size_t off = 24;
  while (records && off + 16 <= n - 20) {
    uint64_t len = le64(a + off);
    put_le32(a + off + 8, crc32_ieee(a + off + 16, (size_t)len));
    off += 16 + (size_t)len;
  }
  put_le32(a + n - 4, crc32_ieee(a, n - 4));
}

/*
 * The middle byte of an archive's largest record: inside a program binary, whichever entries
 * the warm made (the middle of the whole archive can land in an entry's header).
 */
static long
largest_record_middle(const uint8_t *a, size_t n)
{
  size_t off = 24, best = n / 2;
  uint64_t best_len = 0;
  while (off + 16 <= n - 20) {
    uint64_t l = le64(a + off);
    if (l > best_len) {
      best_len = l;
      best = off + 16 + (size_t)(l / 2);
    }
    off += 16 + (size_t)l;
  }
  return (long)best;
}

START_TEST(corrupt_or_truncated_archives_import_nothing)
{
  char *a = copy_master();
  char archive[4300], bad[4300], target[4300], tmp[4300], tmpvar[4400];
  snprintf(archive, sizeof archive, "%s/good.kca", scratch);
  snprintf(bad, sizeof bad, "%s/bad.kca", scratch);
  snprintf(target, sizeof target, "%s/import-target", scratch);
  snprintf(tmp, sizeof tmp, "%s/staging-tmp", scratch);
  snprintf(tmpvar, sizeof tmpvar, "TMPDIR=%s", tmp);
  mkdir(tmp, 0700);
  const char *env[] = {tmpvar, NULL};
  struct run r;
  KILN(&r, NULL, "cache", "export", archive, "--dir", a);
  EXPECT_STATUS(&r, 0, "export");
  run_free(&r);
  /* The exporter's key is trusted throughout: what is refused is refused for its damage. */
  char *akey = key_file_of(a);
  size_t len;
  char *good = slurp(archive, &len);
  ck_assert_uint_gt(len, 1000);
  ck_assert_int_eq(memcmp(good, "KILNCARC", 8), 0);
  ck_assert_int_eq(memcmp(good + len - 20, "KILNCEND", 8), 0);
  const long in_binary = largest_record_middle((const uint8_t *)good, len);

  struct {
    const char *what;
    size_t keep; /* bytes kept (truncation), or len */
    long flip;   /* byte flipped, or -1 */
    int append;  /* a byte appended */
    int fix;     /* then recompute: 1 the archive CRC, 2 every CRC */
  } cases[] = {
      {"empty file", 0, -1, 0, 0},
      {"header only", 24, -1, 0, 0},
      {"cut inside the first record's length", 28, -1, 0, 0},
      {"cut inside the first entry", 24 + 16 + 100, -1, 0, 0},
      {"cut before the trailer", len - 20, -1, 0, 0},
      {"cut inside the trailer", len - 5, -1, 0, 0},
      {"last byte missing", len - 1, -1, 0, 0},
      {"flipped byte in a binary", len, in_binary, 0, 0},
      {"flipped byte in the first record's checksum", len, 24 + 8, 0, 0},
      {"flipped byte in the trailer's count", len, (long)(len - 12), 0, 0},
      {"flipped byte in the archive checksum", len, (long)(len - 2), 0, 0},
      {"wrong magic", len, 0, 0, 0},
      {"wrong archive version", len, 8, 0, 0},
      {"bytes after the trailer", len, -1, 1, 0},
      /* Damage that only one check can see: each must hold on its own. */
      {"wrong record checksum, archive checksum recomputed", len, 24 + 8, 0, 1},
      {"trailer count off, archive checksum recomputed", len, (long)(len - 12), 0, 1},
      /* A forgery: binary changed, entry key (public inputs) and every CRC right, MAC not. */
      {"flipped byte in a binary, every checksum recomputed (the entry's MAC catches it)", len,
       in_binary, 0, 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *copy = malloc(len + 1);
    memcpy(copy, good, len);
    size_t n = cases[i].keep;
    if (cases[i].flip >= 0)
      copy[cases[i].flip] ^= 0x04;
    if (cases[i].append)
      copy[n++] = 'x';
    if (cases[i].fix)
      fix_crcs((uint8_t *)copy, n, cases[i].fix == 2);
    spit(bad, copy, n);
    free(copy);
    harness_rmtree(target);
    KILN(&r, env, "cache", "import", bad, "--all", "--dir", target, "--key", akey);
    ck_assert_msg(r.status == 1, "%s: exit %d\n%s%s", cases[i].what, r.status, r.out, r.err);
    ck_assert_msg(strstr(r.err, "kiln cache import: ") && strstr(r.err, "nothing was imported"),
                  "%s: stderr:\n%s", cases[i].what, r.err);
    char refused[64];
    snprintf(refused, sizeof refused, "1 of %d entries refused", WARM_VARIANTS);
    if (cases[i].fix == 2)
      ck_assert_msg(strstr(r.err, "MAC mismatch") && strstr(r.err, refused), "%s: stderr:\n%s",
                    cases[i].what, r.err);
    run_free(&r);
    struct kfile g[64];
    ck_assert_msg(entry_files(target, g, 64) == 0, "%s: entries were imported", cases[i].what);
    /* The staging directory is gone too. */
    DIR *d = opendir(tmp);
    struct dirent *de;
    while ((de = readdir(d)))
      ck_assert_msg(de->d_name[0] == '.', "%s: left %s/%s", cases[i].what, tmp, de->d_name);
    closedir(d);
  }
  /* The intact archive imports. */
  harness_rmtree(target);
  KILN(&r, env, "cache", "import", archive, "--all", "--dir", target, "--key", akey);
  EXPECT_STATUS(&r, 0, "import of the intact archive");
  run_free(&r);
  struct kfile g[64];
  ck_assert_uint_eq(entry_files(target, g, 64), WARM_VARIANTS);
  free(good);
  free(akey);
  harness_rmtree(target);
  harness_rmtree(a);
  free(a);
}
END_TEST

START_TEST(json_output_parses_and_escapes_every_string)
{
  char *dir = copy_master();
  /* A device name with a quote, a backslash, a newline, a control byte and invalid UTF-8. */
  char key[33];
  write_fake_entry(dir, "dev \"q\" \\ b\nl\x01 \xff end", "0.0-fake-driver", 3, key);
  char archive[4300], other[4300];
  snprintf(archive, sizeof archive, "%s/json.kca", scratch);
  snprintf(other, sizeof other, "%s/json-import", scratch);
  harness_rmtree(other);
  struct {
    const char *args[12];
  } cmds[] = {
      {{"cache", "stats", "--json"}},
      {{"cache", "stats", "--json", "--recount"}},
      {{"cache", "list", "--json"}},
      {{"cache", "list", "--json", "--tuning"}},
      {{"cache", "show", key, "--json"}},
      {{"cache", "verify", "--json"}},
      {{"cache", "prune", "--json", "--dry-run", "--stale"}},
      {{"cache", "export", archive, "--json"}},
      {{"cache", "warm", "--json", "--limit", "1"}},
  };
  struct run r;
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    const char *args[16];
    size_t n = 0;
    for (; cmds[i].args[n]; n++)
      args[n] = cmds[i].args[n];
    args[n++] = "--dir";
    args[n++] = dir;
    args[n] = NULL;
    kiln_v(&r, NULL, args);
    EXPECT_STATUS(&r, 0, cmds[i].args[1]);
    free(jq(r.out, "type(d).__name__")); /* fails unless it parses */
    jq_expect(r.out, "d['dir']", dir);
    run_free(&r);
  }
  KILN(&r, NULL, "cache", "list", "--json", "--dir", dir);
  char expr[200];
  snprintf(expr, sizeof expr, "json.dumps([e['device'] for e in d['entries'] if e['key'] == '%s'])",
           key);
  jq_expect(r.out, expr, "[\"dev \\\"q\\\" \\\\ b\\nl\\u0001 \\ufffd end\"]");
  run_free(&r);
  char *dkey = key_file_of(dir);
  KILN(&r, NULL, "cache", "import", archive, "--json", "--dir", other, "--key", dkey);
  free(dkey);
  EXPECT_STATUS(&r, 0, "import --json");
  jq_expect(r.out, "json.dumps(d['skipped_entries'][0]['device'])",
            "\"dev \\\"q\\\" \\\\ b\\nl\\u0001 \\ufffd end\"");
  run_free(&r);
  KILN(&r, NULL, "cache", "clear", "--json", "--dir", other);
  EXPECT_STATUS(&r, 0, "clear --json");
  ck_assert_int_eq(jq_int(r.out, "d['entries']"), WARM_VARIANTS);
  run_free(&r);
  harness_rmtree(other);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/* Text output shows what an entry's header says, never what it would do to a terminal. */
START_TEST(text_output_escapes_control_characters)
{
  char *dir = copy_master();
  char key[33];
  /* Clear the screen, set the window title, a C1 CSI (as UTF-8), a newline to forge a line. */
  write_fake_entry_opts(dir,
                        "evil\x1b[2J\x1b]0;pwned\x07\ndev\xc2\x9b"
                        "1m",
                        "1.0\x1b[31m", "-DX=1 \x1b[8m\r\n-DY=2", 4, key);
  struct {
    const char *args[8];
    const char *want[3]; /* escaped forms that must appear */
  } cmds[] = {
      {{"cache", "list"}, {"evil\\x1b[2J\\x1b]0;pwned\\x07\\x0adev\\xc2\\x9b1m", "1.0\\x1b[31m"}},
      {{"cache", "show", key}, {"evil\\x1b[2J", "-DX=1 \\x1b[8m\\x0d\\x0a-DY=2", "1.0\\x1b[31m"}},
      {{"cache", "stats"}, {"evil\\x1b[2J\\x1b]0;pwned\\x07\\x0adev", "1.0\\x1b[31m"}},
  };
  struct run r;
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    const char *args[16];
    size_t n = 0;
    for (; cmds[i].args[n]; n++)
      args[n] = cmds[i].args[n];
    args[n++] = "--dir";
    args[n++] = dir;
    args[n] = NULL;
    kiln_v(&r, NULL, args);
    EXPECT_STATUS(&r, 0, cmds[i].args[1]);
    for (const char *p = r.out; *p; p++)
      ck_assert_msg(*p == '\n' || ((unsigned char)*p >= 0x20 && *p != 0x7f),
                    "%s: raw control byte 0x%02x at offset %zu:\n%s", cmds[i].args[1],
                    (unsigned char)*p, (size_t)(p - r.out), r.out);
    ck_assert_msg(!strstr(r.out, "\xc2\x9b"), "%s: raw C1 control:\n%s", cmds[i].args[1], r.out);
    for (int k = 0; k < 3 && cmds[i].want[k]; k++)
      ck_assert_msg(strstr(r.out, cmds[i].want[k]), "%s: no %s in:\n%s", cmds[i].args[1],
                    cmds[i].want[k], r.out);
    run_free(&r);
  }
  /* JSON keeps the exact bytes, escaped per JSON. */
  KILN(&r, NULL, "cache", "show", key, "--json", "--dir", dir);
  EXPECT_STATUS(&r, 0, "show --json");
  jq_expect(r.out, "repr((d['entry']['device'], d['entry']['driver'], d['entry']['options']))",
            "('evil\\x1b[2J\\x1b]0;pwned\\x07\\ndev\\x9b1m', '1.0\\x1b[31m', "
            "'-DX=1 \\x1b[8m\\r\\n-DY=2')");
  run_free(&r);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/* Archive and key paths are untrusted: a FIFO (or a directory) fails at once, never hangs. */
START_TEST(import_refuses_a_fifo_without_waiting)
{
  char *dir = copy_master();
  char fifo[4300], target[4300], archive[4300];
  snprintf(fifo, sizeof fifo, "%s/archive.fifo", scratch);
  snprintf(target, sizeof target, "%s/fifo-target", scratch);
  snprintf(archive, sizeof archive, "%s/fifo-good.kca", scratch);
  unlink(fifo);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  struct run r;
  KILN(&r, NULL, "cache", "export", archive, "--dir", dir);
  EXPECT_STATUS(&r, 0, "export");
  run_free(&r);
  char *key = key_file_of(dir);
  /* Without the fix the tool blocks in open() forever: the alarm ends the test instead. */
  alarm(60);
  KILN(&r, NULL, "cache", "import", fifo, "--all", "--dir", target);
  EXPECT_STATUS(&r, 1, "import of a FIFO");
  ck_assert_msg(strstr(r.err, "is not a regular file"), "%s", r.err);
  run_free(&r);
  KILN(&r, NULL, "cache", "import", archive, "--all", "--dir", target, "--key", fifo);
  EXPECT_STATUS(&r, 1, "import with a FIFO as the key file");
  ck_assert_msg(strstr(r.err, "is not a regular file"), "%s", r.err);
  run_free(&r);
  KILN(&r, NULL, "cache", "import", scratch, "--all", "--dir", target, "--key", key);
  EXPECT_STATUS(&r, 1, "import of a directory");
  ck_assert_msg(strstr(r.err, "is not a regular file"), "%s", r.err);
  run_free(&r);
  alarm(0);
  struct kfile g[64];
  ck_assert_uint_eq(entry_files(target, g, 64), 0);
  unlink(fifo);
  unlink(archive);
  free(key);
  harness_rmtree(target);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/*
 * export replaces FILE by a rename: a FIFO or a directory there is refused before anything is
 * written and stays what it was; a symbolic link to a regular file stays a link, the archive
 * replacing the file it names (an import of the link then gives the entries back).
 */
START_TEST(export_refuses_special_files_and_keeps_links)
{
  char *dir = copy_master();
  char fifo[4300], link[4300], real[4300], target[4300];
  snprintf(fifo, sizeof fifo, "%s/export.fifo", scratch);
  snprintf(link, sizeof link, "%s/export-link.kca", scratch);
  snprintf(real, sizeof real, "%s/export-real.kca", scratch);
  snprintf(target, sizeof target, "%s/export-link-target", scratch);
  unlink(fifo);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  struct run r;
  alarm(60); /* an export that opened the FIFO would block: the alarm ends the test */
  KILN(&r, NULL, "cache", "export", fifo, "--dir", dir);
  EXPECT_STATUS(&r, 1, "export to a FIFO");
  ck_assert_msg(strstr(r.err, "is not a regular file"), "%s", r.err);
  run_free(&r);
  alarm(0);
  struct stat st;
  ck_assert_int_eq(lstat(fifo, &st), 0);
  ck_assert_msg(S_ISFIFO(st.st_mode), "export replaced the FIFO");
  KILN(&r, NULL, "cache", "export", scratch, "--dir", dir);
  EXPECT_STATUS(&r, 1, "export to a directory");
  ck_assert_msg(strstr(r.err, "is not a regular file"), "%s", r.err);
  run_free(&r);
  FILE *f = fopen(real, "w");
  ck_assert_ptr_nonnull(f);
  fputs("old contents\n", f);
  fclose(f);
  unlink(link);
  ck_assert_int_eq(symlink(real, link), 0);
  KILN(&r, NULL, "cache", "export", link, "--dir", dir);
  EXPECT_STATUS(&r, 0, "export through a symbolic link");
  run_free(&r);
  ck_assert_int_eq(lstat(link, &st), 0);
  ck_assert_msg(S_ISLNK(st.st_mode), "export replaced the symbolic link");
  char *key = key_file_of(dir);
  KILN(&r, NULL, "cache", "import", link, "--all", "--dir", target, "--key", key);
  EXPECT_STATUS(&r, 0, "import of the linked archive");
  run_free(&r);
  struct kfile g[64];
  ck_assert_uint_gt(entry_files(target, g, 64), 0);
  unlink(fifo);
  unlink(link);
  unlink(real);
  free(key);
  harness_rmtree(target);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(bad_arguments_exit_2_with_a_message)
{
  char *dir = copy_master();
  static const char *const bad[][8] = {
      {"cache"},
      {"cache", "frobnicate"},
      {"cache", "stats", "--bogus"},
      {"cache", "stats", "extra"},
      {"cache", "list", "--sort", "colour"},
      {"cache", "list", "--sort"},
      {"cache", "list", "--older-than", "7x"},
      {"cache", "list", "--older-than", "0d"},
      {"cache", "list", "--older-than="},
      {"cache", "list", "--device"},
      {"cache", "list", "--tuning", "--sort", "size"},
      {"cache", "show"},
      {"cache", "show", "xyz"},
      {"cache", "show", "0123456789abcdef0123456789abcdef0"},
      {"cache", "show", "ab", "cd"},
      {"cache", "verify", "--fix=yes"},
      {"cache", "prune", "--max-size", "12Q"},
      {"cache", "prune", "--max-size", "0"},
      {"cache", "prune", "--max-size", "-5M"},
      {"cache", "prune", "--older-than", "-1d"},
      {"cache", "prune", "--older-than", "12"},
      {"cache", "clear", "now"},
      {"cache", "warm", "--limit", "x"},
      {"cache", "export"},
      {"cache", "export", "a.kca", "b.kca"},
      {"cache", "import"},
      {"cache", "import", "--every"},
      {"cache", "stats", "--dir"},
  };
  struct run r;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *args[16];
    size_t n = 0;
    for (; n < 8 && bad[i][n]; n++)
      args[n] = bad[i][n];
    if (strcmp(args[n - 1], "--dir") != 0 && n > 1) {
      args[n++] = "--dir";
      args[n++] = dir;
    }
    args[n] = NULL;
    kiln_v(&r, NULL, args);
    char what[200] = "";
    for (size_t k = 0; args[k]; k++)
      snprintf(what + strlen(what), sizeof what - strlen(what), "%s ", args[k]);
    EXPECT_STATUS(&r, 2, what);
    ck_assert_msg(strstr(r.err, "kiln cache") || strstr(r.err, "usage: kiln cache"),
                  "%s: no message on stderr:\n%s", what, r.err);
    ck_assert_msg(r.out[0] == 0, "%s: wrote to stdout:\n%s", what, r.out);
    run_free(&r);
  }
  /* --help for the group and every command: usage on stdout, exit 0. */
  static const char *const cmds[] = {"stats", "list", "show",   "verify", "prune",
                                     "clear", "warm", "export", "import"};
  KILN(&r, NULL, "cache", "--help");
  EXPECT_STATUS(&r, 0, "cache --help");
  ck_assert_msg(strstr(r.out, "usage: kiln cache <command>"), "%s", r.out);
  run_free(&r);
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    KILN(&r, NULL, "cache", cmds[i], "--help");
    EXPECT_STATUS(&r, 0, cmds[i]);
    char want[64];
    snprintf(want, sizeof want, "usage: kiln cache %s", cmds[i]);
    ck_assert_msg(strncmp(r.out, want, strlen(want)) == 0, "%s --help:\n%s", cmds[i], r.out);
    ck_assert_msg(strstr(r.out, "--dir DIR") && strstr(r.out, "--json"), "%s --help:\n%s", cmds[i],
                  r.out);
    run_free(&r);
  }
  KILN(&r, NULL, "--help");
  ck_assert_msg(r.status == 0 && strstr(r.out, "cache"), "kiln --help:\n%s", r.out);
  run_free(&r);
  /* Failures that are not usage errors: exit 1 with the cause. */
  char file[4300];
  snprintf(file, sizeof file, "%s/not-a-dir", scratch);
  spit(file, "x", 1);
  KILN(&r, NULL, "cache", "list", "--dir", file);
  EXPECT_STATUS(&r, 1, "list on a file");
  ck_assert_msg(strstr(r.err, "not a directory"), "%s", r.err);
  run_free(&r);
  KILN(&r, NULL, "cache", "import", "/nonexistent/archive.kca", "--all", "--dir", dir);
  EXPECT_STATUS(&r, 1, "import of a missing file");
  ck_assert_msg(strstr(r.err, "No such file"), "%s", r.err);
  run_free(&r);
  KILN(&r, NULL, "cache", "warm", "--device", "no such device", "--dir", dir);
  EXPECT_STATUS(&r, 1, "warm on a missing device");
  ck_assert_msg(strstr(r.err, "no such device"), "%s", r.err);
  run_free(&r);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(file_commands_work_without_an_opencl_platform)
{
  const char *const *np = no_platform_env();
  struct run r;
  KILN(&r, np, "info");
  EXPECT_STATUS(&r, 1, "kiln info with no platform");
  ck_assert_msg(strstr(r.out, "no OpenCL devices"), "%s", r.out);
  run_free(&r);

  char *dir = copy_master();
  char archive[4300], other[4300];
  snprintf(archive, sizeof archive, "%s/np.kca", scratch);
  snprintf(other, sizeof other, "%s/np-import", scratch);
  harness_rmtree(other);
  struct kfile f[64];
  size_t n = entry_files(dir, f, 64);
  set_mtime(f[0].path, (int64_t)time(NULL) - 30 * 86400);

  static const char *const ok[][8] = {
      {"cache", "stats"},
      {"cache", "stats", "--recount"},
      {"cache", "list"},
      {"cache", "list", "--tuning"},
      {"cache", "verify"},
      {"cache", "prune", "--dry-run", "--max-size", "1K"},
      {"cache", "prune", "--older-than", "20d"},
      {"cache", "verify", "--fix"},
      {"cache", "stats", "--zero"},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    const char *args[16];
    size_t k = 0;
    for (; k < 8 && ok[i][k]; k++)
      args[k] = ok[i][k];
    args[k++] = "--dir";
    args[k++] = dir;
    args[k] = NULL;
    kiln_v(&r, np, args);
    EXPECT_STATUS(&r, 0, ok[i][1]);
    run_free(&r);
  }
  ck_assert_int_eq(access(f[0].path, F_OK), -1); /* pruned by age */
  KILN(&r, np, "cache", "show", f[1].key, "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "show");
  jq_expect(r.out, "d['matches_device'], d['devices_present'], d['entry']['state']", "False 0 ok");
  run_free(&r);
  KILN(&r, np, "cache", "export", archive, "--dir", dir);
  EXPECT_STATUS(&r, 0, "export");
  run_free(&r);
  /* Without --all nothing matches a device here: all skipped, not an error. */
  char *dkey = key_file_of(dir);
  KILN(&r, np, "cache", "import", archive, "--dir", other, "--json", "--key", dkey);
  EXPECT_STATUS(&r, 0, "import");
  char want[64];
  snprintf(want, sizeof want, "0 %zu", n - 1);
  jq_expect(r.out, "d['imported'], d['skipped']", want);
  run_free(&r);
  KILN(&r, np, "cache", "import", archive, "--all", "--dir", other, "--key", dkey);
  EXPECT_STATUS(&r, 0, "import --all");
  run_free(&r);
  free(dkey);
  struct kfile g[64];
  ck_assert_uint_eq(entry_files(other, g, 64), n - 1);
  KILN(&r, np, "cache", "clear", "--dir", other);
  EXPECT_STATUS(&r, 0, "clear");
  run_free(&r);
  ck_assert_uint_eq(entry_files(other, g, 64), 0);
  harness_rmtree(other);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(stats_zero_keeps_entries_and_recount_follows_the_files)
{
  char *dir = copy_master();
  struct kfile f[64];
  size_t n = entry_files(dir, f, 64);
  struct run r;
  KILN(&r, NULL, "cache", "stats", "--zero", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "stats --zero");
  jq_expect(r.out, "sum(d['counters'].values()), d['zeroed_at'] > 0", "0 True");
  ck_assert_int_eq(jq_int(r.out, "d['entries']"), (long long)n);
  ck_assert_int_eq(jq_int(r.out, "d['tracked_entries']"), (long long)n);
  run_free(&r);
  ck_assert_uint_eq(entry_files(dir, f + 32, 32), n);
  KILN(&r, NULL, "cache", "stats", "--dir", dir);
  EXPECT_STATUS(&r, 0, "stats after --zero");
  ck_assert_msg(strstr(r.out, "counters since") && strstr(r.out, "(just now)"), "%s", r.out);
  run_free(&r);

  /* A file removed behind kiln's back: the walk sees it at once, the tracked figures after
     --recount. */
  ck_assert_int_eq(unlink(f[0].path), 0);
  KILN(&r, NULL, "cache", "stats", "--dir", dir, "--json");
  ck_assert_int_eq(jq_int(r.out, "d['entries']"), (long long)n - 1);
  ck_assert_int_eq(jq_int(r.out, "d['tracked_entries']"), (long long)n);
  run_free(&r);
  KILN(&r, NULL, "cache", "stats", "--dir", dir);
  ck_assert_msg(strstr(r.out, "--recount"), "%s", r.out);
  run_free(&r);
  KILN(&r, NULL, "cache", "stats", "--recount", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "stats --recount");
  ck_assert_int_eq(jq_int(r.out, "d['tracked_entries']"), (long long)n - 1);
  jq_expect(r.out, "d['tracked_bytes'] == d['bytes']", "True");
  run_free(&r);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(clear_and_verify_touch_only_kiln_files_and_never_follow_links)
{
  char *dir = copy_master();
  struct kfile f[64];
  size_t n = entry_files(dir, f, 64);
  /* Outside the cache: a file that looks like an entry, and a directory of them. */
  char outside[4300], outdir[4300], cmd[20000];
  snprintf(outside, sizeof outside, "%s/outside.kbin", scratch);
  snprintf(outdir, sizeof outdir, "%s/outside-dir", scratch);
  harness_rmtree(outdir);
  mkdir(outdir, 0700);
  size_t len;
  char *entry = slurp(f[0].path, &len);
  spit(outside, entry, len);
  char victim[4400];
  snprintf(victim, sizeof victim, "%s/%.30s.kbin", outdir, "0123456789abcdef0123456789abcd");
  spit(victim, entry, len);
  free(entry);
  /* Inside: links to them in entry places, and files kiln does not own. */
  char link1[4400], link2[4400], foreign[6][4400];
  snprintf(link1, sizeof link1, "%s/" VDIR "/%.2s/%.30s.kbin", dir, "ee",
           "ffffffffffffffffffffffffffffff");
  snprintf(link2, sizeof link2, "%s/" VDIR "/01", dir);
  snprintf(cmd, sizeof cmd, "mkdir -p '%s/" VDIR "/ee' && ln -s '%s' '%s' && ln -s '%s' '%s'", dir,
           outside, link1, outdir, link2);
  ck_assert_int_eq(system(cmd), 0);
  snprintf(foreign[0], sizeof foreign[0], "%s/notes.txt", dir);
  snprintf(foreign[1], sizeof foreign[1], "%s/" VDIR "/README", dir);
  snprintf(foreign[2], sizeof foreign[2], "%s/" VDIR "/%.2s/keep.me", dir, f[0].key);
  snprintf(foreign[3], sizeof foreign[3], "%s/tuning", dir);
  mkdir(foreign[3], 0700);
  snprintf(foreign[3], sizeof foreign[3], "%s/tuning/some-device--3.1.txt", dir);
  snprintf(foreign[4], sizeof foreign[4], "%s/v2", dir);
  mkdir(foreign[4], 0700);
  snprintf(foreign[4], sizeof foreign[4], "%s/v2/newer-format-data", dir);
  snprintf(foreign[5], sizeof foreign[5], "%s/" VDIR "/%.2s/%.30s.kbin.bak", dir, f[1].key,
           f[1].key + 2);
  for (int i = 0; i < 6; i++)
    spit(foreign[i], "mine", 4);
  spit(foreign[3], TUNING_FILE, strlen(TUNING_FILE));
  struct run r;

  /* The link in an entry's place is an unreadable entry, not the file it points to. */
  KILN(&r, NULL, "cache", "list", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "list with links");
  jq_expect(r.out,
            "[e['state'] + ': ' + e['problem'] for e in d['entries'] if "
            "e['key'].startswith('eeffff')]",
            "['unreadable: symbolic link']");
  ck_assert_int_eq(jq_int(r.out, "d['count']"), (long long)n + 1);
  run_free(&r);
  /* verify --fix reports the link but leaves it: it is not kiln's to delete. */
  KILN(&r, NULL, "cache", "verify", "--fix", "--dir", dir);
  EXPECT_STATUS(&r, 1, "verify --fix with a link in an entry's place");
  ck_assert_msg(strstr(r.out, "symbolic link") && strstr(r.out, "1 bad, 0 removed"), "%s", r.out);
  run_free(&r);
  ck_assert_int_eq(access(outside, F_OK), 0);
  KILN(&r, NULL, "cache", "clear", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "clear");
  ck_assert_int_eq(jq_int(r.out, "d['entries']"), (long long)n + 1);
  ck_assert_int_eq(jq_int(r.out, "d['tuning_files_kept']"), 1);
  run_free(&r);
  struct kfile g[64];
  ck_assert_uint_eq(entry_files(dir, g, 64), 0);
  for (int i = 0; i < 6; i++)
    ck_assert_msg(access(foreign[i], F_OK) == 0, "clear removed %s", foreign[i]);
  ck_assert_int_eq(access(outside, F_OK), 0);
  ck_assert_int_eq(access(victim, F_OK), 0);
  char tag[4300];
  snprintf(tag, sizeof tag, "%s/CACHEDIR.TAG", dir);
  ck_assert_int_eq(access(tag, F_OK), -1);
  /* What is left is the link, listed as unreadable, and the statistics are gone. */
  KILN(&r, NULL, "cache", "stats", "--dir", dir, "--json");
  jq_expect(r.out, "d['entries'], d['corrupt_entries'], d['counters']['stores']", "1 1 0");
  run_free(&r);
  harness_rmtree(outdir);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(tuning_results_in_stats_and_list)
{
  char *dir = copy_master();
  char tdir[4300], file[4400], other[4400], outside[4300];
  snprintf(tdir, sizeof tdir, "%s/tuning", dir);
  mkdir(tdir, 0700);
  snprintf(file, sizeof file, "%s/some-device--3.1.txt", tdir);
  spit(file, TUNING_FILE, strlen(TUNING_FILE));
  /* A file of a newer format: ignored whole, counted as unusable. */
  snprintf(other, sizeof other, "%s/other-gpu--550.1.txt", tdir);
  static const char newer[] = "kiln-tuning v9\nv9 anything\n";
  spit(other, newer, strlen(newer));
  struct run r;

  KILN(&r, NULL, "cache", "list", "--tuning", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "list --tuning");
  jq_expect(r.out,
            "d['tuning']['count'], [(e['device'], e['driver'], e['family'], e['dtype'], "
            "e['bucket'], e['time_ns'], e['default_ns'], e['failed']) for e in "
            "d['tuning']['entries']]",
            "3 [('some-device', '3.1', 'elementwise', 'f32', 'flat.2^20', 501234, 552345, ''), "
            "('some-device', '3.1', 'reduce', 'f32', 'row.2^20', 144046, 284712, ''), "
            "('some-device', '3.1', 'reduce', 'f32', 'row.2^20', 0, 0, 'wrong')]");
  jq_expect(r.out, "d['tuning']['entries'][1]['params']",
            "wg_size=512 items_per_thread=16 two_pass_min=8192 groups_per_cu=4 blocked=1 "
            "cols_per_item=16");
  run_free(&r);
  KILN(&r, NULL, "cache", "list", "--tuning", "--dir", dir);
  EXPECT_STATUS(&r, 0, "list --tuning (table)");
  ck_assert_msg(strstr(r.out, "1.98x") && strstr(r.out, "failed: wrong") &&
                    strstr(r.out, "144.0 us") && strstr(r.out, "2 tuned keys, 1 failed candidate"),
                "%s", r.out);
  run_free(&r);
  KILN(&r, NULL, "cache", "list", "--tuning", "--device", "OTHER", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "list --tuning --device");
  ck_assert_int_eq(jq_int(r.out, "d['tuning']['count']"), 0);
  run_free(&r);

  KILN(&r, NULL, "cache", "stats", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "stats with tuning files");
  jq_expect(r.out,
            "[d['tuning'][k] for k in ('present', 'files', 'results', 'failures', "
            "'unusable_files', 'bad_lines', 'error')]",
            "[True, 2, 2, 1, 1, 1, '']");
  run_free(&r);
  KILN(&r, NULL, "cache", "stats", "--dir", dir);
  ck_assert_msg(strstr(r.out, "2 tuned keys, 1 failed candidate, 2 files") &&
                    strstr(r.out, "1 unusable file and 1 malformed line skipped"),
                "%s", r.out);
  run_free(&r);

  /* DIR/tuning as a link to elsewhere is refused, not followed; stats still reports the rest. */
  snprintf(outside, sizeof outside, "%s/tuning-elsewhere", scratch);
  harness_rmtree(outside);
  ck_assert_int_eq(rename(tdir, outside), 0);
  ck_assert_int_eq(symlink(outside, tdir), 0);
  KILN(&r, NULL, "cache", "list", "--tuning", "--dir", dir);
  EXPECT_STATUS(&r, 1, "list --tuning through a link");
  ck_assert_msg(strstr(r.err, "tuning") && r.out[0] == 0, "%s\n%s", r.out, r.err);
  run_free(&r);
  KILN(&r, NULL, "cache", "stats", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 1, "stats with a linked tuning directory");
  ck_assert_int_eq(jq_int(r.out, "d['entries']"), WARM_VARIANTS);
  jq_expect(r.out, "d['tuning']['error'] != ''", "True");
  run_free(&r);
  harness_rmtree(outside);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/* Output a child wrote to the terminal it had as stderr. */
static char *
read_pty(int master_fd)
{
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  struct pollfd p = {master_fd, POLLIN, 0};
  while (n + 1 < cap && poll(&p, 1, 100) > 0) {
    ssize_t got = read(master_fd, buf + n, cap - n - 1);
    if (got <= 0)
      break;
    n += (size_t)got;
  }
  buf[n] = 0;
  return buf;
}

START_TEST(warm_prints_lines_or_a_progress_bar_then_count_and_time)
{
  char *dir = harness_tempdir();
  struct run r;
  KILN(&r, NULL, "cache", "warm", "--limit", "2", "--dir", dir);
  EXPECT_STATUS(&r, 0, "warm --limit 2");
  ck_assert_msg(strstr(r.out, "[1/2] ") && strstr(r.out, "[2/2] ") &&
                    strstr(r.out, "warmed 2 of ") &&
                    strstr(r.out, " s: 0 already cached, 2 built, "
                                  "2 stored, 0 failed"),
                "%s", r.out);
  run_free(&r);
  struct kfile g[64];
  ck_assert_uint_eq(entry_files(dir, g, 64), 2);

  /* On a terminal: a bar on stderr, redrawn with carriage returns, and no per-variant lines. */
  int m = posix_openpt(O_RDWR | O_NOCTTY);
  ck_assert_int_ge(m, 0);
  ck_assert_int_eq(grantpt(m), 0);
  ck_assert_int_eq(unlockpt(m), 0);
  char *slave = strdup(ptsname(m));
  const char *argv[] = {kiln_path(), "cache", "warm", "--limit", "3", "--dir", dir, NULL};
  run_cmd(&r, scratch, NULL, NULL, slave, 0, argv);
  char *tty = read_pty(m);
  close(m);
  free(slave);
  EXPECT_STATUS(&r, 0, "warm on a terminal");
  ck_assert_msg(strstr(tty, "\r[") && strstr(tty, "] 3/3 ") && strstr(tty, "#"),
                "terminal output: %s", tty);
  ck_assert_msg(!strstr(r.out, "[1/3]") && strstr(r.out, "warmed 3 of ") &&
                    strstr(r.out, "2 already cached, 1 built, 1 stored"),
                "%s", r.out);
  free(tty);
  run_free(&r);
  KILN(&r, NULL, "cache", "warm", "--limit", "3", "--dir", dir, "--json");
  EXPECT_STATUS(&r, 0, "warm --json");
  jq_expect(r.out, "d['done'], d['cached'], d['built'], d['seconds'] >= 0", "3 3 0 True");
  ck_assert_msg(strstr(r.err, "[3/3] "), "progress lines go to stderr with --json: %s", r.err);
  run_free(&r);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *
suite(void)
{
  Suite *s = suite_create("tools");
  TCase *tc = tcase_create("cache_cli");
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, list_show_stats_match_the_files);
  tcase_add_test(tc, verify_finds_corruption_and_fix_lets_the_library_rebuild);
  tcase_add_test(tc, prune_by_size_oldest_first_and_dry_run_changes_nothing);
  tcase_add_test(tc, prune_by_age_and_list_filters);
  tcase_add_test(tc, prune_stale_entries_and_temp_files);
  tcase_add_test(tc, export_then_import_gives_identical_entries_that_hit);
  tcase_add_test(tc, corrupt_or_truncated_archives_import_nothing);
  tcase_add_test(tc, json_output_parses_and_escapes_every_string);
  tcase_add_test(tc, text_output_escapes_control_characters);
  tcase_add_test(tc, import_refuses_a_fifo_without_waiting);
  tcase_add_test(tc, bad_arguments_exit_2_with_a_message);
  tcase_add_test(tc, file_commands_work_without_an_opencl_platform);
  tcase_add_test(tc, stats_zero_keeps_entries_and_recount_follows_the_files);
  tcase_add_test(tc, clear_and_verify_touch_only_kiln_files_and_never_follow_links);
  tcase_add_test(tc, tuning_results_in_stats_and_list);
  tcase_add_test(tc, warm_prints_lines_or_a_progress_bar_then_count_and_time);
  suite_add_tcase(s, tc);
  TCase *ex = tcase_create("export_files");
  tcase_set_timeout(ex, 120);
  tcase_add_test(ex, export_refuses_special_files_and_keeps_links);
  suite_add_tcase(s, ex);
  return s;
}

int
main(void)
{
  scratch = harness_tempdir();
  snprintf(novendors, sizeof novendors, "%s/no-vendors", scratch);
  mkdir(novendors, 0700);
  const char *py = getenv("KILN_TEST_PYTHON");
  snprintf(python, sizeof python, "%s", py && *py ? py : "/usr/bin/python3");
  char cmd[4300];
  snprintf(cmd, sizeof cmd, "'%s' -c 'import sys; print(sys.executable)'", python);
  FILE *p = popen(cmd, "r");
  char exe[4096];
  if (p && fgets(exe, sizeof exe, p) && exe[0] == '/') {
    exe[strcspn(exe, "\n")] = 0;
    snprintf(python, sizeof python, "%s", exe);
  }
  if (p)
    pclose(p);
  /* The CLI reads cache files, whatever the optimiser did to them; kernel_index builds every
   * program optimised. The master's 16 variants took 43 s optimised, 17 s without. */
  setenv("POCL_EXTRA_BUILD_FLAGS", "-cl-opt-disable", 0);
  int rc = harness_main(suite(), 1);
  harness_rmtree(master);
  harness_rmtree(scratch);
  free(master);
  free(scratch);
  return rc;
}
