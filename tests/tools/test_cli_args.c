/*
 * Tools suite: every documented `kiln` command and flag (docs/cli.md) given odd values:
 * empty, negative, huge, non-numeric, malformed lists, missing values, device selectors
 * that used to wrap, a FIFO where a file is expected. Each must end in its documented
 * exit status with a message on stderr that names the flag, never hang and never crash;
 * each child runs under a deadline and is killed past it. Also `kiln tune --list --json`
 * parsed by Python's json module (KILN_TEST_PYTHON).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "runtime/tune_file.h"
#include "tool_run.h"

#define DEADLINE_S 120 /* per command; the slowest here compiles a few kernels on PoCL */

static char *scratch;

static void
kiln_v(struct run *r, const char *const *env, const char *const *args)
{
  run_kiln(r, scratch, env, DEADLINE_S, args);
}

static const char *
show(const char *const *args, char *buf, size_t len)
{
  buf[0] = 0;
  for (size_t k = 0; args[k]; k++)
    snprintf(buf + strlen(buf), len - strlen(buf), "'%s' ", args[k]);
  return buf;
}

/* Runs `kiln ARGS` and checks the exit status, that every wanted string is on stderr and that
   a usage error printed nothing on stdout. */
static void
expect(const char *const *env, int status, const char *const *want, const char *const *args)
{
  struct run r;
  char what[512];
  kiln_v(&r, env, args);
  show(args, what, sizeof what);
  ck_assert_msg(r.status != -1, "kiln %s: still running after %d s (hangs)", what, DEADLINE_S);
  ck_assert_msg(r.status == status, "kiln %s: exit %d, expected %d\nstdout:\n%s\nstderr:\n%s", what,
                r.status, status, r.out, r.err);
  for (size_t i = 0; want && want[i]; i++)
    ck_assert_msg(strstr(r.err, want[i]) != NULL, "kiln %s: stderr lacks \"%s\":\n%s", what,
                  want[i], r.err);
  if (status == 2)
    ck_assert_msg(r.out[0] == 0, "kiln %s: a usage error wrote to stdout:\n%s", what, r.out);
  run_free(&r);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define EXPECT(env, status, want, ...) expect((env), (status), (want), ARGS(__VA_ARGS__))

/* ------------------------------------------------------------ list flags */

START_TEST(list_flags_refuse_empty_lists_and_items)
{
  /* Each used to run with the defaults (or tune nothing) and exit 0. */
  static const char *const lists[][3] = {
      {"bench", "--sizes", ""},    {"bench", "--sizes", ",,,"},  {"bench", "--sizes", "1,,2"},
      {"bench", "--sizes", "1,"},  {"bench", "--sizes", ",1"},   {"bench", "--dtype", ""},
      {"bench", "--dtype", ","},   {"bench", "--dtype", "f32,"}, {"tune", "--dtype", ""},
      {"tune", "--dtype", ",f32"}, {"tune", "--sizes", ","},     {"tune", "--sizes", ""},
      {"tune", "--layout", ""},    {"tune", "--layout", "row,"}, {"tune", "--layout", ",,"},
      {"tune", "--family", ""},    {"bench", "--filter", ""},    {"bench", "--device", ""},
      {"tune", "--device", ""},    {"bench", "--reps", ""},      {"tune", "--reps", ""},
  };
  for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
    const char *want[] = {lists[i][1], "see 'kiln", NULL};
    EXPECT(NULL, 2, want, lists[i][0], lists[i][1], lists[i][2]);
    char joined[64];
    snprintf(joined, sizeof joined, "%s=%s", lists[i][1], lists[i][2]);
    EXPECT(NULL, 2, want, lists[i][0], joined);
  }
  /* Missing values, unknown options, stray arguments, bad list items. */
  EXPECT(NULL, 2, ARGS("--sizes needs a value"), "bench", "--sizes");
  EXPECT(NULL, 2, ARGS("--dtype needs a value"), "tune", "--dtype");
  EXPECT(NULL, 2, ARGS("--size needs a value"), "demo", "--size");
  EXPECT(NULL, 2, ARGS("unexpected argument '--bogus'"), "tune", "--bogus");
  EXPECT(NULL, 2, ARGS("unexpected argument 'x'"), "demo", "x");
  EXPECT(NULL, 2, ARGS("unexpected argument 'x'"), "info", "x");
  EXPECT(NULL, 2, ARGS("--dtype: bad dtype 'f33'"), "bench", "--dtype", "f32,f33");
  EXPECT(NULL, 2, ARGS("--layout: no layout 'rows'"), "tune", "--layout", "row,rows");
  EXPECT(NULL, 2, ARGS("--family: no family 'reduces'"), "tune", "--family", "reduces");
  /* Filters and layouts that select nothing ran nothing and exited 0. */
  EXPECT(NULL, 2, ARGS("--filter: no case name contains 'zzz'"), "bench", "--filter", "zzz");
  EXPECT(NULL, 2, ARGS("--filter: no case name contains 'zzz'"), "bench", "--list", "--filter",
         "zzz");
  EXPECT(NULL, 2, ARGS("--filter: no case name contains 'zzz,yyy'"), "bench", "--filter",
         "zzz,yyy");
  EXPECT(NULL, 2, ARGS("--tune: 'linalg' is not FAMILY:PARAMS"), "bench", "--tune", "linalg");
  EXPECT(NULL, 2, ARGS("--tune nofamily:nb=1"), "bench", "--filter", "linalg.lu", "--sizes", "4k",
         "--tune", "nofamily:nb=1");
  EXPECT(NULL, 2, ARGS("--tune linalg:bogus=1"), "bench", "--filter", "linalg.lu", "--sizes", "4k",
         "--tune", "linalg:bogus=1");
  EXPECT(NULL, 2, ARGS("--override: 'elementwise' is not FAMILY:PARAMS"), "bench", "--override",
         "elementwise");
  EXPECT(NULL, 2, ARGS("--override needs a value"), "bench", "--override");
  EXPECT(NULL, 2, ARGS("--layout: fft has no layout 'row'"), "tune", "--family", "fft", "--layout",
         "row");
  EXPECT(NULL, 2, ARGS("--layout: reduce has no layout 'flat'"), "tune", "--family", "reduce",
         "--layout", "row,flat");
  char cache_env[4400];
  snprintf(cache_env, sizeof cache_env, "KILN_CACHE_DIR=%s/nothing", scratch);
  const char *env[] = {"KILN_DEBUG_NO_FP64=1", cache_env, NULL};
  EXPECT(env, 1, ARGS("nothing to tune"), "tune", "--family", "elementwise", "--dtype", "f64",
         "--dry-run", "--no-copy");
  EXPECT(NULL, 2, ARGS("--sizes: at most 32 items"), "bench", "--sizes",
         "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,"
         "33");
}
END_TEST

/* ------------------------------------------------------------ numbers */

START_TEST(size_arguments_are_range_checked)
{
  /* --size 2^62 wrapped the host allocation (a heap overflow); 2^40 and up exited 1 silently. */
  static const char *const sizes[] = {"4611686018427387904",
                                      "1099511627777",
                                      "2^41",
                                      "2^70",
                                      "-1",
                                      "abc",
                                      "1.5",
                                      "0x10",
                                      "1e3",
                                      " 5",
                                      "+5",
                                      "5 ",
                                      "99999999999999999999999999"};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    EXPECT(NULL, 2, ARGS("--size", "0 to 2^40"), "demo", "--size", sizes[i]);
    EXPECT(NULL, 2, ARGS("--sizes", "1 to 2^40"), "bench", "--sizes", sizes[i]);
    EXPECT(NULL, 2, ARGS("--sizes", "1 to 2^40"), "tune", "--sizes", sizes[i]);
  }
  EXPECT(NULL, 2, ARGS("--sizes", "1 to 2^40"), "bench", "--sizes", "0");
  static const char *const counts[] = {"0", "-1", "5x", "1e3", "+5", "99999999999999999999"};
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
    EXPECT(NULL, 2, ARGS("--reps", "1 to 100000"), "bench", "--reps", counts[i]);
    EXPECT(NULL, 2, ARGS("--reps", "1 to 1000"), "tune", "--reps", counts[i]);
    EXPECT(NULL, 2, ARGS("--limit", "1 to 1000000"), "cache", "warm", "--limit", counts[i], "--dir",
           scratch);
  }
  EXPECT(NULL, 2, ARGS("--reps", "1 to 100000"), "bench", "--reps", "100001");
  EXPECT(NULL, 2, ARGS("--reps", "1 to 1000"), "tune", "--reps", "1001");
  static const char *const bytes[] = {"-1",       "abc", "1e9", "1.5.5", "99999999999999999999",
                                      "16777216T"};
  for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++)
    EXPECT(NULL, 2, ARGS("--max-size: bad size", "16 EiB"), "cache", "prune", "--max-size",
           bytes[i], "--dir", scratch);
  EXPECT(NULL, 2, ARGS("--max-size", "at least 1 byte"), "cache", "prune", "--max-size", "0.5",
         "--dir", scratch);
  static const char *const ages[] = {
      "0s", "5", "-1d", "1d-1h", "101y", "5300w", "99999999999999999999s"};
  for (size_t i = 0; i < sizeof ages / sizeof ages[0]; i++) {
    EXPECT(NULL, 2, ARGS("--older-than: bad age", "100 years"), "cache", "prune", "--older-than",
           ages[i], "--dir", scratch);
    EXPECT(NULL, 2, ARGS("--older-than: bad age", "100 years"), "cache", "list", "--older-than",
           ages[i], "--dir", scratch);
  }
  /* Empty filters used to match everything (warm --device '': the default device). */
  EXPECT(NULL, 2, ARGS("--device needs a value"), "cache", "list", "--device", "", "--dir",
         scratch);
  EXPECT(NULL, 2, ARGS("--device needs a value"), "cache", "warm", "--device=", "--dir", scratch);
  EXPECT(NULL, 2, ARGS("--from needs a value"), "cache", "warm", "--from", "", "--dir", scratch);
  EXPECT(NULL, 1, ARGS("cannot open /nonexistent/kernels.ini"), "cache", "warm", "--from",
         "/nonexistent/kernels.ini", "--dir", scratch);
  EXPECT(NULL, 2, ARGS("--source needs a value"), "cache", "list", "--source", "", "--dir",
         scratch);
  EXPECT(NULL, 2, ARGS("--device needs a value"), "cache", "export", "x.kca", "--device", "",
         "--dir", scratch);
  /* --tune with no family or no parameters used to time the defaults and exit 0 */
  EXPECT(NULL, 2, ARGS("is not FAMILY:PARAMS"), "bench", "--tune", "linalg:", "--sizes", "16");
  EXPECT(NULL, 2, ARGS("is not FAMILY:PARAMS"), "bench", "--tune", ":wg_size=64", "--sizes", "16");
  EXPECT(NULL, 2, ARGS("is not FAMILY:PARAMS"), "bench", "--override=reduce: ", "--sizes", "16");
  EXPECT(NULL, 2, ARGS("wg_size=abc is not a whole number"), "bench", "--tune", "reduce:wg_size=abc",
         "--sizes", "16");
  EXPECT(NULL, 2, ARGS("wg_size=99999999999999999999 is outside"), "bench", "--tune",
         "reduce:wg_size=99999999999999999999", "--sizes", "16");
  /* A value left out before the next option used to take the option as the value (list
   * --device --dir D then read D as an unexpected argument); --name=VALUE still takes any. */
  EXPECT(NULL, 2, ARGS("--device needs a value before --dir"), "cache", "list", "--device",
         "--dir", scratch);
  EXPECT(NULL, 2, ARGS("--filter needs a value before --sizes"), "bench", "--filter", "--sizes",
         "16");
  EXPECT(NULL, 0, NULL, "cache", "list", "--device=--x", "--dir", scratch);

  /* In range but more than the device can hold: a failure with the reason, not a crash. */
  EXPECT(NULL, 1, ARGS("kiln demo: ", "largest allocation"), "demo", "--size", "2^40");
  /* The smallest sizes work; a repeated flag takes the last value. */
  EXPECT(NULL, 0, NULL, "demo", "--size", "0");
  EXPECT(NULL, 0, NULL, "demo", "--size", "2^40", "--size=1.5k");
}
END_TEST

/* ------------------------------------------------------------ devices and files */

START_TEST(device_selectors_and_special_files)
{
  /* KILN_DEVICE=0:4294967296 used to pick device 0:0. */
  static const char *const envs[][2] = {
      {"KILN_DEVICE=0:4294967296", NULL}, {"KILN_DEVICE=-1:0", NULL}, {"KILN_DEVICE=0:", NULL}};
  for (size_t i = 0; i < sizeof envs / sizeof envs[0]; i++) {
    EXPECT(envs[i], 1, ARGS("malformed device selector"), "demo", "--size", "1");
    struct run r;
    kiln_v(&r, envs[i], ARGS("info"));
    ck_assert_msg(r.status == 1 && strstr(r.out, "matches no device") &&
                      strstr(r.out, "malformed device selector"),
                  "info with %s: %d\n%s", envs[i][0], r.status, r.out);
    run_free(&r);
  }
  EXPECT(NULL, 2, ARGS("malformed device selector"), "bench", "--device", "0:+1", "--sizes", "1");
  EXPECT(NULL, 2, ARGS("malformed device selector"), "tune", "--device", "4294967296:0", "--list");
  EXPECT(NULL, 2, ARGS("malformed device selector"), "cache", "warm", "--device", "0:0:0", "--dir",
         scratch);

  /* A FIFO as the archive to import: refused at once instead of waiting for a writer. */
  char fifo[4300], dir[4300];
  snprintf(fifo, sizeof fifo, "%s/archive.fifo", scratch);
  snprintf(dir, sizeof dir, "%s/import-target", scratch);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  EXPECT(NULL, 1, ARGS("not a regular file"), "cache", "import", fifo, "--all", "--dir", dir);
  EXPECT(NULL, 1, ARGS("not a regular file"), "cache", "import", "/dev/null", "--all", "--dir",
         dir);
  /* and as the kernel list to warm from: kiln_user_kernel_warm_file used to block in open() */
  alarm(60);
  EXPECT(NULL, 1, ARGS("not a regular file"), "cache", "warm", "--from", fifo, "--dir", dir);
  alarm(0);
  EXPECT(NULL, 1, ARGS("is a directory"), "cache", "warm", "--from", scratch, "--dir", dir);
  unlink(fifo);

  /* A FIFO as this device's tuning file: every command that reads it must not block. */
  kiln_device_info info;
  size_t n = 0, def = 0;
  KOK(kiln_device_list(&info, 1, &n, &def));
  ck_assert_uint_eq(def, 0);
  char cache[4300], tdir[4400], dn[96], vn[96], name[256], path[4700];
  snprintf(cache, sizeof cache, "%s/fifo-cache", scratch);
  const char *why = "";
  ck_assert_int_eq(kiln__tf_dir(cache, 1, tdir, sizeof tdir, &why), 0);
  kiln__tf_normalize(info.name, 1, dn, sizeof dn);
  kiln__tf_normalize(info.driver_version, 0, vn, sizeof vn);
  ck_assert_int_eq(kiln__tf_file_name(dn, vn, name, sizeof name), 0);
  snprintf(path, sizeof path, "%s/%s", tdir, name);
  ck_assert_int_eq(mkfifo(path, 0600), 0);
  char env_dir[4400];
  snprintf(env_dir, sizeof env_dir, "KILN_CACHE_DIR=%s", cache);
  const char *env[] = {env_dir, NULL};
  EXPECT(env, 0, NULL, "demo", "--size", "1000");
  EXPECT(env, 0, NULL, "tune", "--list");
  EXPECT(NULL, 0, NULL, "cache", "stats", "--dir", cache);
  EXPECT(NULL, 0, NULL, "cache", "list", "--tuning", "--dir", cache);
}
END_TEST

/* ------------------------------------------------------------ tune --list --json */

static char *
json_eval(const char *doc, const char *expr)
{
  char in[4300], script[2048];
  snprintf(in, sizeof in, "%s/json-in", scratch);
  FILE *f = fopen(in, "wb");
  ck_assert_ptr_nonnull(f);
  fputs(doc, f);
  fclose(f);
  snprintf(script, sizeof script,
           "import json, sys\nd = json.load(open(sys.argv[1], 'rb'))\nprint(%s)\n", expr);
  const char *py = getenv("KILN_TEST_PYTHON");
  ck_assert_msg(py && *py, "KILN_TEST_PYTHON is not set");
  struct run r;
  run_cmd(&r, scratch, NULL, NULL, NULL, DEADLINE_S, ARGS(py, "-c", script, in));
  ck_assert_msg(r.status == 0, "JSON check '%s' failed (%d): %s\ndocument:\n%s", expr, r.status,
                r.err, doc);
  char *s = strdup(r.out);
  s[strcspn(s, "\n")] = 0;
  run_free(&r);
  return s;
}

START_TEST(tune_list_json)
{
  kiln_device_info info;
  size_t n = 0, def = 0;
  KOK(kiln_device_list(&info, 1, &n, &def));
  char cache[4300], tdir[4400], dn[96], vn[96], name[256], path[4700];
  snprintf(cache, sizeof cache, "%s/json-cache", scratch);
  const char *why = "";
  ck_assert_int_eq(kiln__tf_dir(cache, 1, tdir, sizeof tdir, &why), 0);
  kiln__tf_normalize(info.name, 1, dn, sizeof dn);
  kiln__tf_normalize(info.driver_version, 0, vn, sizeof vn);
  ck_assert_int_eq(kiln__tf_file_name(dn, vn, name, sizeof name), 0);
  snprintf(path, sizeof path, "%s/%s", tdir, name);
  char env_dir[4400];
  snprintf(env_dir, sizeof env_dir, "KILN_CACHE_DIR=%s", cache);
  const char *env[] = {env_dir, NULL};

  /* bench --list --json: the cases as a JSON document (it printed the text list before) */
  struct run r;
  kiln_v(&r, NULL, ARGS("bench", "--list", "--json", "--filter", "nn.gelu"));
  ck_assert_msg(r.status == 0, "%d: %s", r.status, r.err);
  char *cases = json_eval(r.out, "[c['name'] + ':' + c['family'] for c in d['cases']]");
  ck_assert_str_eq(cases, "['nn.gelu:nn', 'nn.gelu_tanh:nn', 'nn.gelu_bwd:nn']");
  free(cases);
  run_free(&r);

  /* No tuning file: an empty list, still a JSON document (it printed plain text before). */
  kiln_v(&r, env, ARGS("tune", "--list", "--json"));
  ck_assert_msg(r.status == 0, "%d: %s", r.status, r.err);
  char *v = json_eval(r.out, "(len(d['entries']), sorted(d['device']))");
  ck_assert_str_eq(v, "(0, ['driver', 'name', 'platform'])");
  free(v);
  run_free(&r);

  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  fprintf(f,
          "kiln-tuning v1\ndevice %s\ndriver %s\n"
          "v1 reduce f32 row.2^16 wg_size=64 time_ns=100 default_ns=200\n"
          "v1 reduce f32 row.2^16 wg_size=1024 failed=wrong\n",
          info.name, info.driver_version);
  fclose(f);
  kiln_v(&r, env, ARGS("tune", "--json", "--list"));
  ck_assert_msg(r.status == 0, "%d: %s", r.status, r.err);
  v = json_eval(r.out, "(d['device']['name'], d['device']['driver'])");
  char want[1024];
  snprintf(want, sizeof want, "('%s', '%s')", info.name, info.driver_version);
  ck_assert_str_eq(v, want);
  free(v);
  v = json_eval(r.out, "sorted((e['family'], e['dtype'], e['bucket'], e['params'], e['time_ns'], "
                       "e['default_ns'], e['failed'], e['path'].endswith('.txt')) "
                       " for e in d['entries'])");
  ck_assert_str_eq(v, "[('reduce', 'f32', 'row.2^16', 'wg_size=1024', 0, 0, 'wrong', True), "
                      "('reduce', 'f32', 'row.2^16', 'wg_size=64', 100, 200, '', True)]");
  free(v);
  run_free(&r);
  /* The plain listing is unchanged: one line per entry. */
  kiln_v(&r, env, ARGS("tune", "--list"));
  ck_assert_msg(r.status == 0 && strstr(r.out, "wg_size=64") && strstr(r.out, "failed=wrong"),
                "%d: %s", r.status, r.out);
  run_free(&r);
}
END_TEST

/* ------------------------------------------------------------ new dtypes */

/*
 * bench and tune take the 16-bit and complex dtype names; a case or family
 * without a dtype is skipped with a note, an error only when asked for by
 * name; the copy reference covers 2- and 16-byte elements.
 */
START_TEST(bench_and_tune_new_dtypes)
{
  EXPECT(NULL, 2, ARGS("--dtype: bad dtype 'f33'", "bf16", "c128"), "bench", "--dtype", "f33");
  kiln_device_info info;
  size_t n = 0, def = 0;
  KOK(kiln_device_list(&info, 1, &n, &def));
  struct run r;
  kiln_v(&r, NULL,
         ARGS("bench", "--filter", "copy.kiln_copy", "--dtype",
              info.has_fp64 ? "f16,bf16,c64,c128" : "f16,bf16,c64", "--sizes", "1k", "--reps", "2",
              "--no-startup", "--json"));
  ck_assert_msg(r.status == 0, "%d: %s", r.status, r.err);
  char *v = json_eval(r.out, "sorted((x['dtype'], x['copy_gbps'] is not None and "
                             "x['copy_gbps'] > 0) for x in d['results'])");
  ck_assert_str_eq(v, info.has_fp64 ? "[('bf16', True), ('c128', True), ('c64', True), ('f16', True)]"
                                    : "[('bf16', True), ('c64', True), ('f16', True)]");
  free(v);
  run_free(&r);

  /* unary.exp takes no integers: a note, exit 0; unary.neg i32 runs; c64 runs (complex exp) or is a
   * note. */
  kiln_v(&r, NULL,
         ARGS("bench", "--filter", "unary.", "--dtype", "i32,c64", "--sizes", "1k", "--reps", "1",
              "--no-startup", "--json"));
  ck_assert_msg(r.status == 0, "%d: %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "note: skipped unary.exp i32"), "%s", r.err);
  v = json_eval(r.out, "(sorted((x['case'], x['dtype']) for x in d['skipped'] "
                       "if x['case'] == 'unary.exp'), ('unary.neg', 'i32') in "
                       "[(x['case'], x['dtype']) for x in d['results']], "
                       "('unary.neg', 'c64') in [(x['case'], x['dtype']) for x in "
                       "d['results'] + d['skipped']])");
  ck_assert_str_eq(v, "([('unary.exp', 'i32')], True, True)");
  free(v);
  run_free(&r);
  EXPECT(NULL, 1, ARGS("unary.exp i32: the case does not take this dtype"), "bench", "--filter",
         "unary.exp", "--dtype", "i32", "--sizes", "1k", "--no-startup");

  EXPECT(NULL, 2, ARGS("--dtype: gemm has no tuning keys of dtype i32"), "tune", "--family",
         "gemm", "--dtype", "i32", "--dry-run");
  /* Only fft has "points" buckets and no u8 keys: notes for the families without u8 keys,
   * then nothing to tune. */
  EXPECT(NULL, 1, ARGS("note: skipped fft u8", "note: skipped gemm u8", "nothing to tune"), "tune",
         "--dtype", "u8", "--layout", "points", "--dry-run", "--no-copy");
}
END_TEST

/*
 * Output lost to a full device (or a closed pipe) is a failure: `kiln bench --json >
 * results.json` on a full disk used to exit 0 with a truncated file.
 */
START_TEST(lost_output_is_a_failure)
{
  struct stat full;
  if (stat("/dev/full", &full) != 0 || !S_ISCHR(full.st_mode))
    return; /* a machine without /dev/full (a minimal container): nothing to write into */
  const char *const cmds[][8] = {
      {"--version"},
      {"info"},
      {"bench", "--no-startup", "--json", "--filter", "unary.neg", "--sizes", "16"},
      {"cache", "stats", "--dir", scratch},
  };
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    char line[8192];
    int n = snprintf(line, sizeof line, "exec '%s'", kiln_path());
    for (size_t j = 0; j < 8 && cmds[i][j]; j++)
      n += snprintf(line + n, sizeof line - (size_t)n, " '%s'", cmds[i][j]);
    snprintf(line + n, sizeof line - (size_t)n, " > /dev/full");
    const char *argv[] = {"/bin/sh", "-c", line, NULL};
    struct run r;
    run_cmd(&r, scratch, NULL, NULL, NULL, 120, argv);
    ck_assert_msg(r.status == 1 && strstr(r.err, "cannot write the output"),
                  "%s: exit %d, stderr:\n%s", line, r.status, r.err);
    run_free(&r);
  }
}
END_TEST

static Suite *
cli_suite(void)
{
  Suite *s = suite_create("cli_args");
  TCase *tc = tcase_create("args");
  tcase_add_test(tc, list_flags_refuse_empty_lists_and_items);
  tcase_add_test(tc, size_arguments_are_range_checked);
  tcase_add_test(tc, device_selectors_and_special_files);
  tcase_add_test(tc, tune_list_json);
  tcase_add_test(tc, bench_and_tune_new_dtypes);
  tcase_set_timeout(tc, 600);
  suite_add_tcase(s, tc);
  TCase *out = tcase_create("output");
  tcase_add_test(out, lost_output_is_a_failure);
  tcase_set_timeout(out, 300);
  suite_add_tcase(s, out);
  return s;
}

int
main(void)
{
  scratch = harness_tempdir();
  int rc = harness_main(cli_suite(), 1);
  harness_rmtree(scratch);
  free(scratch);
  return rc;
}
