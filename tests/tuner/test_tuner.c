/*
 * Tuner suite: the tuning file format and its writer (round trip, a killed
 * writer, concurrent merges, corrupt and truncated files), lookups (fallback
 * order with fake device identities, the three modes, overrides), tuning
 * (candidate validation with a sabotaged candidate, failures never retried,
 * online tuning), import/export and the listing calls; the fft and gemm
 * families: what auto FFT plans and GEMM routes take from them, and their
 * tuning; online tuning on a context shared by threads.
 *
 * Candidate sets stay small: on PoCL every new local size is a compile.
 * The killed-writer test runs its writers as separate processes (this binary
 * re-executed with --tune-writer), since this process has OpenCL threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "ops/blas_route.h"
#include "ops/linalg_internal.h"
#include "ops/tuned.h"
#include "runtime/tune_file.h"
#include "runtime/tuner.h"

extern char **environ;

/* ---------------------------------------------------------------- helpers */

static void
write_text(const char *path, const char *text, size_t len)
{
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(text, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
}

/* Writes text as the tuning file of (device, driver) under cache dir; returns its path (static). */
static const char *
plant(const char *dir, const char *device, const char *driver, const char *text)
{
  static char path[4600];
  char tdir[4200], dn[96], vn[96], name[256];
  const char *why = "";
  ck_assert_int_eq(kiln__tf_dir(dir, 1, tdir, sizeof tdir, &why), 0);
  kiln__tf_normalize(device, 1, dn, sizeof dn);
  kiln__tf_normalize(driver, 0, vn, sizeof vn);
  ck_assert_int_eq(kiln__tf_file_name(dn, vn, name, sizeof name), 0);
  snprintf(path, sizeof path, "%s/%s", tdir, name);
  write_text(path, text, strlen(text));
  return path;
}

/* The shared context, pointed at a cache dir with a fake identity, mode CACHED, no overrides. */
static kiln_context *
use(const char *dir, const char *device, const char *driver)
{
  kiln_context *ctx = harness_ctx();
  KOK(kiln_context_set_cache_dir(ctx, dir));
  kiln__tune_set_identity(ctx, device, driver);
  KOK(kiln_context_set_option(ctx, KILN_OPT_TUNE_MODE, KILN_TUNE_CACHED));
  static const char *const fams[] = {"elementwise", "reduce", "scan", "fft", "gemm"};
  static const char *const buckets[] = {NULL,         "flat.2^12",   "row.2^14", "row.2^16",
                                        "points.2^4", "points.2^10", "mnk.2^12", "mnk.2^18"};
  for (size_t f = 0; f < 5; f++)
    for (size_t b = 0; b < 8; b++)
      kiln_tune_override(ctx, fams[f], KILN_F32, buckets[b], NULL); /* not all buckets exist */
  kiln_clear_error();
  return ctx;
}

static void
expect_params(kiln_context *ctx, const char *family, const char *bucket, const char *want_sub,
              kiln_tune_source want_src)
{
  char buf[256];
  kiln_tune_source src;
  KOK(kiln_tune_params_get(ctx, family, KILN_F32, bucket, buf, sizeof buf, &src));
  ck_assert_msg(src == want_src, "%s %s: source %d, expected %d (%s)", family, bucket, (int)src,
                (int)want_src, buf);
  if (want_sub)
    ck_assert_msg(strstr(buf, want_sub) != NULL, "%s %s: \"%s\" lacks \"%s\"", family, bucket, buf,
                  want_sub);
}

/* The source of the parameters of (family, dtype, bucket) must be want_src. */
static void
expect_params_dt(kiln_context *ctx, const char *family, kiln_dtype dtype, const char *bucket,
                 kiln_tune_source want_src)
{
  char buf[256];
  kiln_tune_source src;
  KOK(kiln_tune_params_get(ctx, family, dtype, bucket, buf, sizeof buf, &src));
  ck_assert_msg(src == want_src, "%s %s %s: source %d, expected %d (%s)", family,
                kiln_dtype_name(dtype), bucket, (int)src, (int)want_src, buf);
}

static char *
read_all(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *b = malloc(1 << 21);
  *len = fread(b, 1, 1 << 21, f);
  fclose(f);
  b[*len] = 0;
  return b;
}

/* Host sum of the rows of a [rows, len] f32 tensor, in double. */
static void
check_row_sums(kiln_context *ctx, int64_t rows, int64_t len)
{
  int64_t shape[2] = {rows, len};
  float *h = malloc(sizeof(float) * (size_t)(rows * len));
  for (int64_t i = 0; i < rows * len; i++)
    h[i] = (float)((i * 7919) % 61 - 30) / 8.0f;
  kiln_tensor *x = NULL, *y = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 2, shape, h, &x));
  int64_t axis = 1;
  KOK(kiln_reduce(ctx, KILN_REDUCE_SUM, x, &axis, 1, 0, NULL, &y));
  float *got = malloc(sizeof(float) * (size_t)rows);
  KOK(kiln_tensor_download(y, got, sizeof(float) * (size_t)rows));
  for (int64_t r = 0; r < rows; r++) {
    double s = 0;
    for (int64_t i = 0; i < len; i++)
      s += h[r * len + i];
    ck_assert_msg(got[r] == (float)s, "row %lld: %g, expected %g", (long long)r, got[r], s);
  }
  kiln_tensor_release(x);
  kiln_tensor_release(y);
  free(h);
  free(got);
}

/* a + b over n f32 elements, checked against the host. */
static void
check_add(kiln_context *ctx, int64_t n)
{
  float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    a[i] = (float)i * 0.5f;
    b[i] = (float)(n - i);
  }
  kiln_tensor *ta = NULL, *tb = NULL, *tc = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 1, &n, a, &ta));
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 1, &n, b, &tb));
  KOK(kiln_binary(ctx, KILN_OP_ADD, ta, tb, &tc));
  float *c = malloc(sizeof(float) * (size_t)n);
  KOK(kiln_tensor_download(tc, c, sizeof(float) * (size_t)n));
  for (int64_t i = 0; i < n; i++)
    ck_assert_msg(c[i] == a[i] + b[i], "element %lld", (long long)i);
  kiln_tensor_release(ta);
  kiln_tensor_release(tb);
  kiln_tensor_release(tc);
  free(a);
  free(b);
  free(c);
}

static const char good_file[] =
    "kiln-tuning v1\n"
    "device Fake Device\n"
    "driver 1.0\n"
    "v1 reduce f32 row.2^16 wg_size=64 items_per_thread=16 time_ns=100 default_ns=200\n"
    "v1 scan f32 col.2^20 wg_size=128 two_pass_min=1024 time_ns=5 default_ns=9\n"
    "v1 elementwise f64 flat.2^24 wg_size=512 time_ns=7 default_ns=8\n"
    "v1 reduce f32 row.2^16 wg_size=1024 items_per_thread=16 failed=wrong\n";

/* ---------------------------------------------------------------- the file layer */

START_TEST(file_round_trip)
{
  struct kiln__tf_table t;
  kiln__tf_init(&t);
  ck_assert_int_eq(kiln__tf_parse(good_file, strlen(good_file), &t), KILN__TF_OK);
  ck_assert_uint_eq(t.n, 4);
  ck_assert_uint_eq(t.skipped, 0);
  ck_assert_str_eq(t.device, "Fake Device");
  ck_assert_str_eq(t.driver, "1.0");
  uint64_t v = 0;
  ck_assert(kiln__tf_param(&t.e[0], "items_per_thread", &v) && v == 16);
  ck_assert_uint_eq(t.e[1].time_ns, 5);
  ck_assert_str_eq(t.e[3].failed, "wrong");

  /* format -> parse gives the same entries; write -> read too. */
  size_t len;
  char *text = kiln__tf_format(&t, &len);
  struct kiln__tf_table u;
  kiln__tf_init(&u);
  ck_assert_int_eq(kiln__tf_parse(text, len, &u), KILN__TF_OK);
  ck_assert_uint_eq(u.n, t.n);
  for (size_t i = 0; i < t.n; i++) {
    int found = 0;
    for (size_t j = 0; j < u.n; j++)
      found |= kiln__tf_same_key(&t.e[i], &u.e[j]) && memcmp(&t.e[i], &u.e[j], sizeof t.e[i]) == 0;
    ck_assert_msg(found, "entry %zu lost in the round trip", i);
  }
  char *dir = harness_tempdir();
  char path[4200];
  snprintf(path, sizeof path, "%s/t.txt", dir);
  ck_assert_int_eq(kiln__tf_write(path, &t), 0);
  struct kiln__tf_table r;
  const char *why = "";
  ck_assert_int_eq(kiln__tf_read(path, &r, &why), 0);
  ck_assert_uint_eq(r.n, 4);

  /* Merge: same key replaced, new key added, others kept; header from the update. */
  struct kiln__tf_table up;
  kiln__tf_init(&up);
  snprintf(up.device, sizeof up.device, "Other Name");
  struct kiln__tf_entry e = r.e[0];
  e.time_ns = 42;
  ck_assert_int_eq(kiln__tf_put(&up, &e), 0);
  snprintf(e.bucket, sizeof e.bucket, "row.2^18");
  ck_assert_int_eq(kiln__tf_put(&up, &e), 0);
  ck_assert_int_eq(kiln__tf_merge(path, &up), 0);
  struct kiln__tf_table m;
  ck_assert_int_eq(kiln__tf_read(path, &m, &why), 0);
  ck_assert_uint_eq(m.n, 5);
  ck_assert_str_eq(m.device, "Other Name");
  ck_assert_str_eq(m.driver, "1.0");
  int replaced = 0;
  for (size_t i = 0; i < m.n; i++)
    replaced |= kiln__tf_same_key(&m.e[i], &r.e[0]) && m.e[i].time_ns == 42;
  ck_assert(replaced);

  /* A newer version's file is not overwritten by a merge; a damaged one is replaced. */
  write_text(path, "kiln-tuning v2\nanything\n", 24);
  ck_assert_int_eq(kiln__tf_merge(path, &up), ENOTSUP);
  size_t vlen = 0;
  char *v2 = read_all(path, &vlen);
  ck_assert_uint_eq(vlen, 24);
  free(v2);
  write_text(path, "\x01\x02 garbage", 10);
  ck_assert_int_eq(kiln__tf_merge(path, &up), 0);
  struct kiln__tf_table g;
  ck_assert_int_eq(kiln__tf_read(path, &g, &why), 0);
  ck_assert_uint_eq(g.n, 2);
  kiln__tf_free(&g);

  /* Identity names. */
  char n1[96], n2[96], name[256];
  kiln__tf_normalize("pthread-skylake-avx512-AMD EPYC", 1, n1, sizeof n1);
  ck_assert_str_eq(n1, "skylake-avx512-amd-epyc");
  kiln__tf_normalize("3.1+debian", 0, n2, sizeof n2);
  ck_assert_str_eq(n2, "3.1-debian");
  kiln__tf_normalize("  --//  ", 0, n2, sizeof n2);
  ck_assert_str_eq(n2, "unknown");
  kiln__tf_normalize("NVIDIA H200 (565.57.01) -- x", 1, n2, sizeof n2);
  ck_assert_str_eq(n2, "nvidia-h200-565.57.01-x");
  ck_assert_int_eq(kiln__tf_file_name(n1, "3.1-debian", name, sizeof name), 0);
  ck_assert_str_eq(name, "skylake-avx512-amd-epyc--3.1-debian.txt");

  kiln__tf_free(&t);
  kiln__tf_free(&u);
  kiln__tf_free(&r);
  kiln__tf_free(&up);
  kiln__tf_free(&m);
  free(text);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(parser_refuses_bad_input)
{
  static const struct {
    const char *text;
    int status;
    size_t entries, skipped;
  } cases[] = {
      {"", KILN__TF_BAD_HEADER, 0, 0},
      {"kiln-tuning v2\nv1 reduce f32 row.2^16 wg_size=64 time_ns=1 default_ns=2\n",
       KILN__TF_BAD_HEADER, 0, 0},
      {"v1 reduce f32 row.2^16 wg_size=64 time_ns=1 default_ns=2\n", KILN__TF_BAD_HEADER, 0, 0},
      {"kiln-tuning v1 extra\n", KILN__TF_BAD_HEADER, 0, 0},
      {"\n# comment\n  \nkiln-tuning v1\r\n", KILN__TF_OK, 0, 0},
      {"kiln-tuning v1\n"
       "v1 reduce f32 row.2^16 wg_size=64 time_ns=1 default_ns=2\n" /* good */
       "v1 reduce f32 row.2^16 wg_size=64 time_ns=1\n"              /* a time missing */
       "v1 reduce f32 row.2^16 time_ns=1 default_ns=2\n"            /* no parameter */
       "v1 reduce f32 row.2^16 wg_size=-4 time_ns=1 default_ns=2\n" /* sign */
       "v1 reduce f32 row.2^16 wg_size=18446744073709551616 time_ns=1 default_ns=2\n"
       "v1 reduce f32 row.2^16 wg_size=1 wg_size=2 time_ns=1 default_ns=2\n" /* repeated */
       "v1 Reduce f32 row.2^16 wg_size=1 time_ns=1 default_ns=2\n"           /* upper case */
       "v1 reduce f32 row/2^16 wg_size=1 time_ns=1 default_ns=2\n"           /* bad bucket char */
       "v1 reduce f32 row.2^16 wg_size=1 failed=wrong time_ns=3 default_ns=4\n" /* both kinds */
       "v1 reduce f32 row.2^16 wg_size=1 failed=Wrong!\n"
       "v2 reduce f32 row.2^16 wg_size=64 time_ns=1 default_ns=2\n" /* other line version */
       "v1 reduce f32\n"
       "v1 a b c d=1 e=2 f=3 g=4 h=5 i=6 j=7 k=8 l=9 time_ns=1 default_ns=2\n" /* 9 params */
       "v1 reduce f32 row.2^16 wg_size time_ns=1 default_ns=2\n"
       "v1 reduce f32 row.2^16 wg_size=1 time_ns=1 default_ns=2", /* no newline: fine */
       KILN__TF_OK, 1, 13},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct kiln__tf_table t;
    kiln__tf_init(&t);
    int s = kiln__tf_parse(cases[i].text, strlen(cases[i].text), &t);
    ck_assert_msg(s == cases[i].status, "case %zu: status %d", i, s);
    if (s == KILN__TF_OK) {
      ck_assert_msg(t.n == cases[i].entries, "case %zu: %zu entries", i, t.n);
      ck_assert_msg(t.skipped == cases[i].skipped, "case %zu: %zu skipped", i, t.skipped);
      if (t.n)
        ck_assert_uint_eq(t.e[0].pval[0], 1); /* the last good line replaced the first */
    }
    kiln__tf_free(&t);
  }
  /* A line of 2000 characters and a NUL byte: skipped; parsing never runs past len. */
  char buf[4096];
  int n = snprintf(buf, sizeof buf, "kiln-tuning v1\nv1 reduce f32 row.2^16 wg_size=");
  memset(buf + n, '1', 2000);
  n += 2000;
  n += snprintf(buf + n, sizeof buf - (size_t)n, " time_ns=1 default_ns=2\nv1 reduce f32 ");
  buf[n++] = 0;
  n += snprintf(buf + n, sizeof buf - (size_t)n, "row.2^16 wg_size=1 time_ns=1 default_ns=2\n");
  struct kiln__tf_table t;
  kiln__tf_init(&t);
  ck_assert_int_eq(kiln__tf_parse(buf, (size_t)n, &t), KILN__TF_OK);
  ck_assert_uint_eq(t.n, 0);
  ck_assert_uint_eq(t.skipped, 2);
  /* Every prefix of a good file parses or is refused; none crashes, none invents entries. */
  for (size_t len = 0; len <= strlen(good_file); len++) {
    kiln__tf_free(&t);
    int s = kiln__tf_parse(good_file, len, &t);
    ck_assert(s == KILN__TF_OK || s == KILN__TF_BAD_HEADER);
    ck_assert_uint_le(t.n, 4);
  }
  kiln__tf_free(&t);
}
END_TEST

/* ---- the killed writer: helpers run as child processes (no OpenCL in them) ---- */

static void
fill_table(struct kiln__tf_table *t, uint64_t stamp, size_t n, const char *family)
{
  kiln__tf_init(t);
  snprintf(t->device, sizeof t->device, "Writer Device");
  snprintf(t->driver, sizeof t->driver, "1");
  for (size_t i = 0; i < n; i++) {
    struct kiln__tf_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.family, sizeof e.family, "%s", family);
    snprintf(e.dtype, sizeof e.dtype, "f32");
    snprintf(e.bucket, sizeof e.bucket, "b%zu", i);
    e.nparams = 2;
    snprintf(e.pname[0], sizeof e.pname[0], "wg_size");
    snprintf(e.pname[1], sizeof e.pname[1], "items_per_thread");
    e.pval[0] = stamp;
    e.pval[1] = i;
    e.time_ns = stamp;
    e.default_ns = stamp + 1;
    kiln__tf_put(t, &e);
  }
}

static void
slow_down(void)
{
  usleep(3000);
}

/* Rewrites path forever, alternating two contents of 2000 entries, slowed down mid-write. */
static int
writer_main(const char *path)
{
  struct kiln__tf_table a, b;
  fill_table(&a, 1, 2000, "fam");
  fill_table(&b, 2, 2000, "fam");
  kiln__tf_test_mid_write = slow_down;
  for (unsigned i = 0;; i++)
    if (kiln__tf_write(path, i % 2 ? &b : &a) != 0)
      return 1;
}

/* Merges n single-entry updates of its own family into path, one merge each. */
static int
merger_main(const char *path, const char *family, int n)
{
  for (int i = 0; i < n; i++) {
    struct kiln__tf_table up;
    fill_table(&up, 7, 1, family);
    snprintf(up.e[0].bucket, sizeof up.e[0].bucket, "b%d", i);
    if (kiln__tf_merge(path, &up) != 0)
      return 1;
    kiln__tf_free(&up);
  }
  return 0;
}

static pid_t
spawn_self(char *const *args)
{
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  ck_assert_int_gt(n, 0);
  self[n] = 0;
  pid_t pid;
  ck_assert_int_eq(posix_spawn(&pid, self, NULL, NULL, (char *const *)args, environ), 0);
  return pid;
}

START_TEST(atomic_write_survives_kill)
{
  char *dir = harness_tempdir();
  char path[4200];
  snprintf(path, sizeof path, "%s/w.txt", dir);
  struct timespec seed;
  clock_gettime(CLOCK_MONOTONIC, &seed);
  srand((unsigned)seed.tv_nsec);
  int complete_a = 0, complete_b = 0;
  for (int round = 0; round < 12; round++) {
    char *args[] = {"test_tuner", "--tune-writer", path, NULL};
    unlink(path);
    pid_t pid = spawn_self(args);
    /* Once the first write is published the writer is in its loop: kill it anywhere in there. */
    for (int wait = 0; wait < 1000 && access(path, F_OK) != 0; wait++)
      usleep(10000);
    usleep((useconds_t)(rand() % 20000));
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    ck_assert(WIFSIGNALED(st));
    struct kiln__tf_table t;
    const char *why = "";
    int r = kiln__tf_read(path, &t, &why);
    ck_assert_msg(r == 0, "round %d: %s", round, why);
    ck_assert_uint_eq(t.n, 2000);
    ck_assert_uint_eq(t.skipped, 0);
    uint64_t stamp = t.e[0].time_ns;
    for (size_t i = 0; i < t.n; i++)
      ck_assert_msg(t.e[i].time_ns == stamp, "round %d: a mix of two writes", round);
    complete_a += stamp == 1;
    complete_b += stamp == 2;
    kiln__tf_free(&t);
  }
  ck_assert_int_eq(complete_a + complete_b, 12);

  /* Kills leave temp files; readers ignore them, and merges remove stale ones. */
  char tmp[4300];
  snprintf(tmp, sizeof tmp, "%s.tmp.ABCDEF", path);
  write_text(tmp, "kiln-tuning v1\nhalf a li", 24);
  struct timespec old[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
  ck_assert_int_eq(utimensat(AT_FDCWD, tmp, old, 0), 0);
  struct kiln__tf_table up;
  fill_table(&up, 3, 1, "other");
  ck_assert_int_eq(kiln__tf_merge(path, &up), 0);
  kiln__tf_free(&up);
  ck_assert_int_ne(access(tmp, F_OK), 0);

  /* Two concurrent mergers: the lock makes every key of both survive. */
  char merged[4200];
  snprintf(merged, sizeof merged, "%s/m.txt", dir);
  char *a1[] = {"test_tuner", "--tune-merger", merged, "alpha", NULL};
  char *a2[] = {"test_tuner", "--tune-merger", merged, "beta", NULL};
  pid_t p1 = spawn_self(a1), p2 = spawn_self(a2);
  int s1, s2;
  waitpid(p1, &s1, 0);
  waitpid(p2, &s2, 0);
  ck_assert(WIFEXITED(s1) && WEXITSTATUS(s1) == 0);
  ck_assert(WIFEXITED(s2) && WEXITSTATUS(s2) == 0);
  struct kiln__tf_table m;
  const char *why = "";
  ck_assert_int_eq(kiln__tf_read(merged, &m, &why), 0);
  ck_assert_uint_eq(m.n, 2 * 40);
  kiln__tf_free(&m);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/* ---------------------------------------------------------------- lookups */

START_TEST(corrupt_files_are_misses)
{
  char *dir = harness_tempdir();
  kiln_context *ctx = use(dir, "Fake Device", "1.0");
  static const char *const bad[] = {
      "\x7f"
      "ELF\x01\x02garbage\n\x00\x01",
      "kiln-tuning v9\nv1 reduce f32 row.2^16 wg_size=64 time_ns=1 default_ns=2\n",
      "kiln-tuning v1\nv1 reduce f32 row.2^16 wg_size=0 time_ns=1 default_ns=2\n",   /* range */
      "kiln-tuning v1\nv1 reduce f32 row.2^16 bogus=3 time_ns=1 default_ns=2\n",     /* name */
      "kiln-tuning v1\nv1 reduce f32 row.2^99 wg_size=64 time_ns=1 default_ns=2\n",  /* bucket */
      "kiln-tuning v1\nv1 reduce q32 row.2^16 wg_size=64 time_ns=1 default_ns=2\n",  /* dtype */
      "kiln-tuning v1\nv1 reduce f32 flat.2^16 wg_size=64 time_ns=1 default_ns=2\n", /* layout */
      "kiln-tuning v1\nv1 reduce f32 row.2^16 wg_size=64 time_ns=1 defau",           /* truncated */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *path = plant(dir, "Fake Device", "1.0", "");
    write_text(path, bad[i], i == 0 ? 16 : strlen(bad[i]));
    kiln__tune_set_identity(ctx, "Fake Device", "1.0"); /* re-read */
    expect_params(ctx, "reduce", "row.2^16", NULL, KILN_TUNE_SOURCE_DEFAULT);
  }
  check_row_sums(ctx, 4, 256); /* and the op still runs */

  /* Truncated after a good line: the good line counts, the cut one not. */
  const char *path = plant(dir, "Fake Device", "1.0",
                           "kiln-tuning v1\n"
                           "v1 reduce f32 row.2^14 wg_size=32 time_ns=1 default_ns=2\n"
                           "v1 reduce f32 row.2^16 wg_size=64 tim");
  kiln__tune_set_identity(ctx, "Fake Device", "1.0");
  expect_params(ctx, "reduce", "row.2^14", "wg_size=32 ", KILN_TUNE_SOURCE_STORED);
  expect_params(ctx, "reduce", "row.2^16", NULL, KILN_TUNE_SOURCE_DEFAULT);

  /* Not a regular file, a symbolic link, over 1 MiB: ignored. */
  unlink(path);
  ck_assert_int_eq(mkdir(path, 0700), 0);
  kiln__tune_set_identity(ctx, "Fake Device", "1.0");
  expect_params(ctx, "reduce", "row.2^14", NULL, KILN_TUNE_SOURCE_DEFAULT);
  rmdir(path);
  char target[4300];
  snprintf(target, sizeof target, "%s/elsewhere.txt", dir);
  write_text(target, good_file, strlen(good_file));
  ck_assert_int_eq(symlink(target, path), 0);
  kiln__tune_set_identity(ctx, "Fake Device", "1.0");
  expect_params(ctx, "reduce", "row.2^16", NULL, KILN_TUNE_SOURCE_DEFAULT);
  unlink(path);
  size_t big = (1u << 20) + 100;
  char *huge = malloc(big);
  memset(huge, '#', big);
  memcpy(huge, good_file, strlen(good_file));
  huge[strlen(good_file)] = '\n';
  write_text(path, huge, big);
  free(huge);
  kiln__tune_set_identity(ctx, "Fake Device", "1.0");
  expect_params(ctx, "reduce", "row.2^16", NULL, KILN_TUNE_SOURCE_DEFAULT);

  /* A tuning directory others may write: not trusted. */
  unlink(path);
  plant(dir, "Fake Device", "1.0", good_file);
  char tdir[4300];
  snprintf(tdir, sizeof tdir, "%s/tuning", dir);
  ck_assert_int_eq(chmod(tdir, 0777), 0);
  kiln__tune_set_identity(ctx, "Fake Device", "1.0");
  expect_params(ctx, "reduce", "row.2^16", NULL, KILN_TUNE_SOURCE_DEFAULT);
  ck_assert_int_eq(chmod(tdir, 0700), 0);
  kiln__tune_set_identity(ctx, "Fake Device", "1.0");
  expect_params(ctx, "reduce", "row.2^16", "wg_size=64 ", KILN_TUNE_SOURCE_STORED);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/*
 * The 16-bit and complex dtypes as tuning keys: a family's keys follow what
 * its timed op supports (kiln_tune_family_supports), tuning files name them
 * like any dtype, an entry whose family has no such keys is skipped without
 * spoiling the rest of the file, and one it has is used.
 */
START_TEST(new_dtype_keys)
{
  for (int d = 0; d < KILN_DTYPE_COUNT; d++) {
    kiln_dtype dt = (kiln_dtype)d;
    int ew = -1, red = -1, scan = -1, gemm = -1, fft = -1;
    KOK(kiln_tune_family_supports("elementwise", dt, &ew));
    KOK(kiln_tune_family_supports("reduce", dt, &red));
    KOK(kiln_tune_family_supports("scan", dt, &scan));
    KOK(kiln_tune_family_supports("gemm", dt, &gemm));
    KOK(kiln_tune_family_supports("fft", dt, &fft));
    ck_assert_int_eq(ew, kiln_binary_op_supports(KILN_OP_ADD, dt) != 0);
    ck_assert_int_eq(red, kiln_reduce_op_supports(KILN_REDUCE_SUM, dt) != 0);
    ck_assert_int_eq(scan, kiln_scan_op_supports(KILN_SCAN_CUMSUM, dt) != 0);
    ck_assert_int_eq(fft, dt == KILN_F32 || dt == KILN_F64);
    if (dt == KILN_F32 || dt == KILN_F64)
      ck_assert_int_eq(gemm, 1);
    if (dt == KILN_I32 || dt == KILN_BOOL || dt == KILN_U8 || dt == KILN_I64)
      ck_assert_int_eq(gemm, 0);
  }
  int ok;
  KEXPECT(kiln_tune_family_supports("nope", KILN_F32, &ok), KILN_ERR_NOT_FOUND);
  KEXPECT(kiln_tune_family_supports(NULL, KILN_F32, &ok), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tune_family_supports("scan", KILN_F32, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tune_family_supports("scan", KILN_DTYPE_COUNT, &ok), KILN_ERR_INVALID_ARGUMENT);

  /* The file layer takes every dtype name and keeps it through a round trip. */
  static const char text[] = "kiln-tuning v1\n"
                             "v1 elementwise f16 flat.2^12 wg_size=64 time_ns=1 default_ns=2\n"
                             "v1 reduce bf16 row.2^16 wg_size=32 time_ns=1 default_ns=2\n"
                             "v1 scan c64 col.2^16 wg_size=16 time_ns=1 default_ns=2\n"
                             "v1 gemm c128 mnk.2^12 route=2 time_ns=1 default_ns=2\n"
                             "v1 reduce f32 row.2^16 wg_size=64 time_ns=1 default_ns=2\n";
  struct kiln__tf_table t;
  kiln__tf_init(&t);
  ck_assert_int_eq(kiln__tf_parse(text, strlen(text), &t), KILN__TF_OK);
  ck_assert_uint_eq(t.n, 5);
  ck_assert_uint_eq(t.skipped, 0);
  ck_assert_str_eq(t.e[0].dtype, "f16");
  ck_assert_str_eq(t.e[1].dtype, "bf16");
  ck_assert_str_eq(t.e[2].dtype, "c64");
  ck_assert_str_eq(t.e[3].dtype, "c128");
  size_t len;
  char *out = kiln__tf_format(&t, &len);
  ck_assert_ptr_nonnull(strstr(out, "v1 gemm c128 mnk.2^12 route=2"));
  free(out);
  kiln__tf_free(&t);

  /* Through a context: the f32 entry always counts; each new-dtype entry exactly when its
   * family has the key. */
  char *dir = harness_tempdir();
  plant(dir, "Fake Device", "1.0", text);
  kiln_context *ctx = use(dir, "Fake Device", "1.0");
  expect_params(ctx, "reduce", "row.2^16", "wg_size=64 ", KILN_TUNE_SOURCE_STORED);
  static const struct {
    const char *family, *bucket;
    kiln_dtype dt;
  } keys[] = {{"elementwise", "flat.2^12", KILN_F16},
              {"reduce", "row.2^16", KILN_BF16},
              {"scan", "col.2^16", KILN_C64},
              {"gemm", "mnk.2^12", KILN_C128}};
  for (size_t i = 0; i < 4; i++) {
    int sup = 0;
    KOK(kiln_tune_family_supports(keys[i].family, keys[i].dt, &sup));
    char buf[256];
    kiln_tune_source src;
    kiln_status st = kiln_tune_params_get(ctx, keys[i].family, keys[i].dt, keys[i].bucket, buf,
                                          sizeof buf, &src);
    if (!sup) {
      ck_assert_int_eq(st, KILN_ERR_INVALID_ARGUMENT);
      continue;
    }
    int dev = keys[i].dt != KILN_C128 || harness_has_fp64();
    ck_assert_int_eq(st, dev ? KILN_OK : KILN_ERR_INVALID_ARGUMENT);
    if (dev)
      ck_assert_msg(src == KILN_TUNE_SOURCE_STORED, "%s %s: source %d", keys[i].family,
                    kiln_dtype_name(keys[i].dt), (int)src);
  }
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/*
 * The tuning file installed with kiln for a device (data/tuning/<device>.txt; here a temporary
 * directory named by KILN_TEST_TUNING_DATA) fills the keys the local files leave open, under
 * whatever driver; a local result of the same key wins; other devices do not see it.
 */
START_TEST(packaged_tuning_file)
{
  char *dir = harness_tempdir(), *data = harness_tempdir();
  char path[4600];
  snprintf(path, sizeof path, "%s/fake-device.txt", data);
  const char *text = "kiln-tuning v1\ndevice Fake Device\ndriver 0.9\n"
                     "v1 reduce f32 row.2^16 wg_size=512 time_ns=1 default_ns=2\n"
                     "v1 reduce f32 col.2^16 wg_size=256 time_ns=1 default_ns=2\n";
  write_text(path, text, strlen(text));
  ck_assert_int_eq(setenv("KILN_TEST_TUNING_DATA", data, 1), 0);
  kiln_context *ctx = use(dir, "Fake Device", "1.0");
  expect_params(ctx, "reduce", "row.2^16", "wg_size=512 ", KILN_TUNE_SOURCE_PACKAGED);
  expect_params(ctx, "reduce", "col.2^16", "wg_size=256 ", KILN_TUNE_SOURCE_PACKAGED);
  expect_params(ctx, "reduce", "full.2^16", NULL, KILN_TUNE_SOURCE_DEFAULT);
  plant(dir, "Fake Device", "1.0",
        "kiln-tuning v1\ndevice Fake Device\ndriver 1.0\n"
        "v1 reduce f32 row.2^16 wg_size=64 time_ns=1 default_ns=2\n");
  ctx = use(dir, "Fake Device", "1.0");
  expect_params(ctx, "reduce", "row.2^16", "wg_size=64 ", KILN_TUNE_SOURCE_STORED);
  expect_params(ctx, "reduce", "col.2^16", "wg_size=256 ", KILN_TUNE_SOURCE_PACKAGED);
  /* Other devices never see it. */
  ctx = use(dir, "Other Device", "1.0");
  expect_params(ctx, "reduce", "col.2^16", NULL, KILN_TUNE_SOURCE_DEFAULT);
  /* A broken packaged file is ignored with a warning, never fatal. */
  write_text(path, "kiln-tuning v7\n", 15);
  ctx = use(dir, "Fake Device", "1.0");
  expect_params(ctx, "reduce", "col.2^16", NULL, KILN_TUNE_SOURCE_DEFAULT);
  ck_assert_int_eq(unsetenv("KILN_TEST_TUNING_DATA"), 0);
  harness_rmtree(data);
  harness_rmtree(dir);
  free(data);
  free(dir);
}
END_TEST

START_TEST(fallback_order)
{
  char *dir = harness_tempdir();
  const char *a = plant(dir, "Fake Device", "1.0",
                        "kiln-tuning v1\ndevice Fake Device\ndriver 1.0\n"
                        "v1 reduce f32 row.2^16 wg_size=64 time_ns=1 default_ns=2\n");
  const char *b = plant(dir, "Fake Device", "2.0",
                        "kiln-tuning v1\ndevice Fake Device\ndriver 2.0\n"
                        "v1 reduce f32 row.2^16 wg_size=128 time_ns=1 default_ns=2\n"
                        "v1 reduce f32 col.2^16 wg_size=32 time_ns=1 default_ns=2\n");
  (void)a;
  /* The newest other-driver file is the one used. */
  struct timespec older[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
  ck_assert_int_eq(utimensat(AT_FDCWD, b, older, 0), 0);

  /* Exact device and driver first; keys it lacks from the same device's other driver. */
  kiln_context *ctx = use(dir, "Fake Device", "1.0");
  expect_params(ctx, "reduce", "row.2^16", "wg_size=64 ", KILN_TUNE_SOURCE_STORED);
  expect_params(ctx, "reduce", "col.2^16", "wg_size=32 ", KILN_TUNE_SOURCE_OTHER_DRIVER);
  expect_params(ctx, "reduce", "full.2^16", NULL, KILN_TUNE_SOURCE_DEFAULT);

  /* A third driver: the newest other file (1.0) wins over the older one (2.0). */
  ctx = use(dir, "Fake Device", "3.0");
  expect_params(ctx, "reduce", "row.2^16", "wg_size=64 ", KILN_TUNE_SOURCE_OTHER_DRIVER);
  expect_params(ctx, "reduce", "col.2^16", NULL, KILN_TUNE_SOURCE_DEFAULT);

  /* Another device (even one whose name starts the same): defaults. */
  ctx = use(dir, "Fake", "1.0");
  expect_params(ctx, "reduce", "row.2^16", NULL, KILN_TUNE_SOURCE_DEFAULT);
  ctx = use(dir, "Other Device", "1.0");
  expect_params(ctx, "reduce", "row.2^16", NULL, KILN_TUNE_SOURCE_DEFAULT);

  /* Defaults are the built-in ones: the same as in mode OFF. */
  ctx = use(dir, "Fake Device", "1.0");
  char on[256], off[256];
  KOK(kiln_tune_params_get(ctx, "reduce", KILN_F32, "full.2^16", on, sizeof on, NULL));
  KOK(kiln_context_set_option(ctx, KILN_OPT_TUNE_MODE, KILN_TUNE_OFF));
  KOK(kiln_tune_params_get(ctx, "reduce", KILN_F32, "full.2^16", off, sizeof off, NULL));
  ck_assert_str_eq(on, off);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(modes)
{
  char *dir = harness_tempdir();
  const char *path = plant(dir, "Fake Device", "1.0",
                           "kiln-tuning v1\ndevice Fake Device\ndriver 1.0\n"
                           "v1 reduce f32 row.2^14 wg_size=32 items_per_thread=1 time_ns=1 "
                           "default_ns=2\n");
  kiln_context *ctx = use(dir, "Fake Device", "1.0");
  int64_t lo, hi, v;
  KOK(kiln_option_bounds(KILN_OPT_TUNE_MODE, &lo, &hi));
  ck_assert_int_eq(lo, KILN_TUNE_OFF);
  ck_assert_int_eq(hi, KILN_TUNE_ONLINE);
  KEXPECT(kiln_context_set_option(ctx, KILN_OPT_TUNE_MODE, 3), KILN_ERR_INVALID_ARGUMENT);

  /* off: defaults although a result is stored; cached: the stored one. */
  KOK(kiln_context_set_option(ctx, KILN_OPT_TUNE_MODE, KILN_TUNE_OFF));
  KOK(kiln_context_get_option(ctx, KILN_OPT_TUNE_MODE, &v));
  ck_assert_int_eq(v, KILN_TUNE_OFF);
  expect_params(ctx, "reduce", "row.2^14", NULL, KILN_TUNE_SOURCE_DEFAULT);
  check_row_sums(ctx, 64, 256);
  KOK(kiln_context_set_option(ctx, KILN_OPT_TUNE_MODE, KILN_TUNE_CACHED));
  expect_params(ctx, "reduce", "row.2^14", "wg_size=32 items_per_thread=1 ",
                KILN_TUNE_SOURCE_STORED);
  check_row_sums(ctx, 64, 256); /* the stored parameters give the same sums */

  /* cached: a missing key is not tuned; the file stays as it was. */
  size_t len0 = 0, len1 = 0;
  char *before = read_all(path, &len0);
  uint64_t ev0 = kiln__tune_test_evaluations();
  check_add(ctx, 4096);
  ck_assert_uint_eq(kiln__tune_test_evaluations(), ev0);
  char *after = read_all(path, &len1);
  ck_assert(len0 == len1 && memcmp(before, after, len0) == 0);
  free(before);
  free(after);
  expect_params(ctx, "elementwise", "flat.2^12", NULL, KILN_TUNE_SOURCE_DEFAULT);

  /* online: the first use of a missing key tunes and stores it; the second does not. */
  KOK(kiln_context_set_option(ctx, KILN_OPT_TUNE_MODE, KILN_TUNE_ONLINE));
  check_add(ctx, 4096);
  uint64_t ev1 = kiln__tune_test_evaluations();
  ck_assert_uint_gt(ev1, ev0);
  expect_params(ctx, "elementwise", "flat.2^12", NULL, KILN_TUNE_SOURCE_STORED);
  check_add(ctx, 5000); /* same bucket */
  ck_assert_uint_eq(kiln__tune_test_evaluations(), ev1);
  char *now = read_all(path, &len1);
  ck_assert_ptr_nonnull(strstr(now, "v1 elementwise f32 flat.2^12 wg_size="));
  ck_assert_ptr_nonnull(strstr(now, "v1 reduce f32 row.2^14 wg_size=32 ")); /* kept */
  free(now);
  /* Small problems are not worth tuning online. */
  check_add(ctx, 100);
  ck_assert_uint_eq(kiln__tune_test_evaluations(), ev1);
  /* Nor while the caller profiles: tuning would reset the recording. */
  KOK(kiln_profile_begin(ctx));
  check_add(ctx, 1 << 13);
  kiln_profile p;
  KOK(kiln_profile_end(ctx, &p));
  ck_assert_uint_eq(kiln__tune_test_evaluations(), ev1);
  ck_assert_uint_ge(p.kernels, 1);

  /* The environment variable sets the mode of new contexts (an unknown value warns). */
  static const struct {
    const char *value;
    int64_t mode;
  } env[] = {{"off", KILN_TUNE_OFF},
             {"ONLINE", KILN_TUNE_ONLINE},
             {"cached", KILN_TUNE_CACHED},
             {"sometimes", KILN_TUNE_CACHED}};
  for (size_t i = 0; i < 4; i++) {
    setenv("KILN_TUNE", env[i].value, 1);
    kiln_context *c2 = NULL;
    KOK(kiln_context_create(NULL, &c2));
    KOK(kiln_context_get_option(c2, KILN_OPT_TUNE_MODE, &v));
    ck_assert_msg(v == env[i].mode, "KILN_TUNE=%s gave %lld", env[i].value, (long long)v);
    KOK(kiln_context_release(c2));
  }
  unsetenv("KILN_TUNE");
  harness_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(override_api)
{
  char *dir = harness_tempdir();
  plant(dir, "Fake Device", "1.0",
        "kiln-tuning v1\nv1 reduce f32 row.2^14 wg_size=32 time_ns=1 default_ns=2\n");
  kiln_context *ctx = use(dir, "Fake Device", "1.0");
  char def[256];
  KOK(kiln_tune_params_get(ctx, "reduce", KILN_F32, "full.2^16", def, sizeof def, NULL));

  /* Every bucket, then one bucket: the bucket's own wins; unnamed parameters keep theirs. */
  KOK(kiln_tune_override(ctx, "reduce", KILN_F32, NULL, "wg_size=16 two_pass_min=1024"));
  expect_params(ctx, "reduce", "full.2^16", "wg_size=16 ", KILN_TUNE_SOURCE_OVERRIDE);
  expect_params(ctx, "reduce", "row.2^14", "two_pass_min=1024 ", KILN_TUNE_SOURCE_OVERRIDE);
  KOK(kiln_tune_override(ctx, "reduce", KILN_F32, "row.2^14", "wg_size=8"));
  expect_params(ctx, "reduce", "row.2^14", "wg_size=8 ", KILN_TUNE_SOURCE_OVERRIDE);
  expect_params(ctx, "reduce", "row.2^14", "two_pass_min=1024 ", KILN_TUNE_SOURCE_OVERRIDE);
  char buf[256], tok[64];
  KOK(kiln_tune_params_get(ctx, "reduce", KILN_F32, "full.2^16", buf, sizeof buf, NULL));
  const char *g = strstr(def, "groups_per_cu=");
  snprintf(tok, sizeof tok, "%.*s", (int)strcspn(g, " "), g);
  ck_assert_ptr_nonnull(strstr(buf, tok)); /* the parameters not named are untouched */
  check_row_sums(ctx, 16, 1024);           /* runs, and right, with the overridden values */
  check_row_sums(ctx, 2, 70000);           /* two-pass from 1024 on */

  /* Overrides apply in mode OFF too; other dtypes and families are not affected. */
  KOK(kiln_context_set_option(ctx, KILN_OPT_TUNE_MODE, KILN_TUNE_OFF));
  expect_params(ctx, "reduce", "row.2^14", "wg_size=8 ", KILN_TUNE_SOURCE_OVERRIDE);
  KOK(kiln_tune_params_get(ctx, "reduce", KILN_I32, "row.2^14", buf, sizeof buf, NULL));
  ck_assert_ptr_null(strstr(buf, "wg_size=8 "));
  expect_params(ctx, "scan", "row.2^14", NULL, KILN_TUNE_SOURCE_DEFAULT);
  KOK(kiln_context_set_option(ctx, KILN_OPT_TUNE_MODE, KILN_TUNE_CACHED));

  /* Elementwise: a local size the launch clamps to what the kernel allows. */
  KOK(kiln_tune_override(ctx, "elementwise", KILN_F32, NULL, "wg_size=65536"));
  check_add(ctx, 3000);
  KOK(kiln_tune_override(ctx, "elementwise", KILN_F32, NULL, "wg_size=1"));
  check_add(ctx, 3001);
  KOK(kiln_tune_override(ctx, "elementwise", KILN_F32, NULL, NULL));

  /* Removing: the bucket's, then every bucket's; the stored value is back. */
  KOK(kiln_tune_override(ctx, "reduce", KILN_F32, "row.2^14", NULL));
  expect_params(ctx, "reduce", "row.2^14", "wg_size=16 ", KILN_TUNE_SOURCE_OVERRIDE);
  KOK(kiln_tune_override(ctx, "reduce", KILN_F32, NULL, ""));
  expect_params(ctx, "reduce", "row.2^14", "wg_size=32 ", KILN_TUNE_SOURCE_STORED);
  expect_params(ctx, "reduce", "full.2^16", NULL, KILN_TUNE_SOURCE_DEFAULT);

  /* Refusals name the problem. */
  KEXPECT(kiln_tune_override(ctx, "reduce", KILN_F32, NULL, "bogus=1"), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "bogus"));
  KEXPECT(kiln_tune_override(ctx, "reduce", KILN_F32, NULL, "wg_size=0"),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tune_override(ctx, "reduce", KILN_F32, NULL, "wg_size=1 wg_size=2"),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tune_override(ctx, "reduce", KILN_F32, NULL, "wg_size"), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tune_override(ctx, "reduce", KILN_F32, NULL, "wg_size=12x"),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tune_override(ctx, "reduce", KILN_F32, "row.2^x", "wg_size=4"),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tune_override(ctx, "reduce", KILN_F32, "flat.2^4", "wg_size=4"),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tune_override(ctx, "reduce", (kiln_dtype)99, NULL, "wg_size=4"),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tune_override(ctx, "nosuch", KILN_F32, NULL, "wg_size=4"), KILN_ERR_NOT_FOUND);
  KEXPECT(kiln_tune_override(NULL, "reduce", KILN_F32, NULL, "wg_size=4"), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_tune_params_get(ctx, "reduce", KILN_F32, "row.2^1", buf, sizeof buf, NULL),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tune_params_get(ctx, "reduce", KILN_F32, "row.2^14", buf, 8, NULL),
          KILN_ERR_INVALID_ARGUMENT);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/* ---------------------------------------------------------------- tuning */

struct events {
  int starts, dones, candidates;
  kiln_tune_result last;
  const char *family; /* count this family's keys only (NULL: every key) */
};

static int
count_events(const kiln_tune_progress *p, void *user)
{
  struct events *e = user;
  /* `gemm` tunes CLBlast's xgemm keys with it on GPUs (tuner.h: part_of) */
  if (e->family && p->result && strcmp(p->result->family, e->family) != 0)
    return 0;
  e->starts += p->event == KILN_TUNE_EVENT_KEY_START;
  e->dones += p->event == KILN_TUNE_EVENT_KEY_DONE;
  e->candidates += p->event == KILN_TUNE_EVENT_CANDIDATE;
  ck_assert_uint_lt(p->key_index, p->key_count);
  if (p->event == KILN_TUNE_EVENT_KEY_DONE)
    e->last = *p->result;
  return 0;
}

static kiln_tune_result
tune_one(kiln_context *ctx, const char *family, const char *layout, uint64_t n, int store)
{
  kiln_tune_request req;
  memset(&req, 0, sizeof req);
  req.family = family;
  req.layouts = layout;
  req.sizes = &n;
  req.nsizes = 1;
  req.reps = 1;
  req.quick = 1;
  req.no_store = !store;
  struct events ev = {0, 0, 0, {0}, family};
  KOK(kiln_tune_run(ctx, &req, count_events, &ev));
  ck_assert_int_eq(ev.starts, 1);
  ck_assert_int_eq(ev.dones, 1);
  ck_assert_int_eq(ev.candidates, (int)ev.last.candidates);
  ck_assert_int_eq(ev.last.status, KILN_OK);
  return ev.last;
}

/* Parameters with the sabotaged work-group size (whatever the family's other parameters). */
static int
wg64(const char *params)
{
  return strncmp(params, "wg_size=64 ", 11) == 0 || strcmp(params, "wg_size=64") == 0;
}

START_TEST(wrong_candidate_never_wins)
{
  char *dir = harness_tempdir();
  kiln_context *ctx = use(dir, "Fake Device", "1.0");
  char def[256];
  KOK(kiln_tune_params_get(ctx, "elementwise", KILN_F32, "flat.2^12", def, sizeof def, NULL));
  ck_assert(!wg64(def));

  /* The hook alone makes wg_size=64 the fastest (1 ns): it wins while its output is right. */
  kiln__tune_test_sabotage("elementwise", "wg_size", 64, 0);
  kiln_tune_result r = tune_one(ctx, "elementwise", "flat", 4096, 0);
  ck_assert(wg64(r.tuned_params));
  ck_assert_uint_eq(r.tuned_ns, 1);

  /* Fast but wrong: refused, recorded, and the winner is another candidate. */
  kiln__tune_test_sabotage("elementwise", "wg_size", 64, 1);
  r = tune_one(ctx, "elementwise", "flat", 4096, 1);
  ck_assert(!wg64(r.tuned_params));
  ck_assert_uint_ge(r.failed, 1);
  ck_assert_uint_gt(r.tuned_ns, 1);
  char tuned[256];
  kiln_tune_source src;
  KOK(kiln_tune_params_get(ctx, "elementwise", KILN_F32, "flat.2^12", tuned, sizeof tuned, &src));
  ck_assert_int_eq(src, KILN_TUNE_SOURCE_STORED);
  ck_assert(!wg64(tuned));
  char tdir[4300], path[4600];
  snprintf(tdir, sizeof tdir, "%s/tuning", dir);
  snprintf(path, sizeof path, "%s/fake-device--1.0.txt", tdir);
  size_t len;
  char *text = read_all(path, &len);
  ck_assert_ptr_nonnull(text);
  /* The failure is recorded with the candidate's whole parameter set: the defaults' other values.
   */
  char want_line[400];
  snprintf(want_line, sizeof want_line, "v1 elementwise f32 flat.2^12 wg_size=64%s failed=wrong\n",
           strchr(def, ' ') ? strchr(def, ' ') : "");
  ck_assert_ptr_nonnull(strstr(text, want_line));
  free(text);

  /* Never retried: in this context, nor in a fresh one that reads the file. */
  uint64_t ev0 = kiln__tune_test_evaluations();
  r = tune_one(ctx, "elementwise", "flat", 4096, 1);
  ck_assert_uint_ge(r.skipped, 1);
  ck_assert(!wg64(r.tuned_params));
  ck_assert_uint_eq(kiln__tune_test_evaluations() - ev0, r.candidates - 1 - r.skipped);
  /*
   * The search may reach wg_size=64 with other values of the family's other
   * parameters (timings steer it; they differ between runs on a GPU): those
   * are new candidates and fail afresh. The same candidate never fails twice.
   */
  text = read_all(path, &len);
  ck_assert_ptr_nonnull(text);
  for (char *line = strstr(text, "failed=wrong"); line; line = strstr(line + 1, "failed=wrong")) {
    char *start = line;
    while (start > text && start[-1] != '\n')
      start--;
    char once[400];
    snprintf(once, sizeof once, "%.*s", (int)(line - start), start);
    ck_assert_ptr_eq(strstr(text, once), start);
    ck_assert_ptr_null(strstr(line, once));
  }
  free(text);
  kiln_context *c2 = NULL;
  KOK(kiln_context_create(NULL, &c2));
  KOK(kiln_context_set_cache_dir(c2, dir));
  kiln__tune_set_identity(c2, "Fake Device", "1.0");
  r = tune_one(c2, "elementwise", "flat", 4096, 0);
  ck_assert_uint_ge(r.skipped, 1);
  ck_assert(!wg64(r.tuned_params));
  KOK(kiln_context_release(c2));
  kiln__tune_test_sabotage(NULL, NULL, 0, 0);

  /* The same for a reduction candidate: wrong sums never win. The sabotaged value is the
   * quick-set candidate that is not this device's default (4 on GPUs, 64 on CPUs): the
   * default is the reference, not a candidate. */
  kiln_device_info dinfo;
  KOK(kiln_context_device_info(ctx, &dinfo));
  uint64_t bad_ipt = dinfo.is_gpu ? 64 : 4;
  char bad_text[40];
  snprintf(bad_text, sizeof bad_text, "items_per_thread=%llu ", (unsigned long long)bad_ipt);
  kiln__tune_test_sabotage("reduce", "items_per_thread", bad_ipt, 1);
  r = tune_one(ctx, "reduce", "row", 1 << 12, 1);
  ck_assert_ptr_null(strstr(r.tuned_params, bad_text));
  ck_assert_uint_ge(r.failed, 1);
  kiln__tune_test_sabotage(NULL, NULL, 0, 0);
  check_row_sums(ctx, 64, 64); /* with what was stored */
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/*
 * A candidate whose first run fails and whose second succeeds (the test hook's corrupt 3; on a
 * device shared with other contexts, device memory they held) is run again: the failure is not
 * recorded, and the candidate competes (here it wins with its claimed 1 ns).
 */
START_TEST(passing_failure_not_recorded)
{
  char *dir = harness_tempdir();
  kiln_context *ctx = use(dir, "Fake Device", "1.0");
  kiln__tune_test_sabotage("elementwise", "wg_size", 64, 3);
  kiln_tune_result r = tune_one(ctx, "elementwise", "flat", 4096, 1);
  kiln__tune_test_sabotage(NULL, NULL, 0, 0);
  ck_assert_uint_eq(r.failed, 0);
  ck_assert_msg(wg64(r.tuned_params), "tuned %s", r.tuned_params);
  char path[4600];
  snprintf(path, sizeof path, "%s/tuning/fake-device--1.0.txt", dir);
  size_t len;
  char *text = read_all(path, &len);
  ck_assert_ptr_nonnull(text);
  ck_assert_msg(strstr(text, "failed=") == NULL, "a failure was recorded:\n%s", text);
  free(text);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/* Counts listed results (failure records are not counted). */
static int
collect_entries(const kiln_tune_entry *e, void *user)
{
  int *n = user;
  ck_assert_str_ne(e->family, "");
  ck_assert_ptr_nonnull(strstr(e->path, "/tuning/"));
  ck_assert(e->failed[0] ? e->time_ns == 0 : e->time_ns > 0);
  *n += !e->failed[0];
  return 0;
}

/*
 * A FIFO, a device or a symbolic link in a tuning file's place: a miss or a refusal, never a
 * hang. An open() that blocked on the FIFO would wait for a writer forever; alarm() turns that
 * into a failure.
 */
START_TEST(special_files_never_block)
{
  char *dir = harness_tempdir();
  kiln_context *ctx = use(dir, "Fake Device", "1.0");
  const char *planted = plant(dir, "Fake Device", "1.0", good_file);
  char path[4600], fifo[4300], link[4300], copy[4300];
  snprintf(path, sizeof path, "%s", planted);
  snprintf(fifo, sizeof fifo, "%s/import.fifo", dir);
  snprintf(link, sizeof link, "%s/import-link.txt", dir);
  snprintf(copy, sizeof copy, "%s/import.txt", dir);
  ck_assert_int_eq(unlink(path), 0);
  ck_assert_int_eq(mkfifo(path, 0600), 0);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  alarm(60);
  /* The device's own file is a FIFO: the lookup is a miss (and the op still runs). */
  kiln__tune_set_identity(ctx, "Fake Device", "1.0");
  expect_params(ctx, "reduce", "row.2^16", NULL, KILN_TUNE_SOURCE_DEFAULT);
  check_row_sums(ctx, 4, 256);
  int n = 0;
  KOK(kiln_tune_list(ctx, collect_entries, &n));
  ck_assert_int_eq(n, 0);
  kiln_tune_dir_stats st;
  KOK(kiln_tune_dir_stats_get(dir, &st));
  ck_assert_uint_eq(st.results, 0);
  /* Importing a FIFO or a character device: KILN_ERR_IO naming the problem. */
  KEXPECT(kiln_tune_import(ctx, fifo, KILN_TUNE_IMPORT_ANY_DEVICE, NULL), KILN_ERR_IO);
  ck_assert_msg(strstr(kiln_last_error(), "not a regular file") != NULL, "%s", kiln_last_error());
  KEXPECT(kiln_tune_import(ctx, "/dev/null", KILN_TUNE_IMPORT_ANY_DEVICE, NULL), KILN_ERR_IO);
  ck_assert_msg(strstr(kiln_last_error(), "not a regular file") != NULL, "%s", kiln_last_error());
  /* An import merges into the device file: with a FIFO there it is rewritten, not read. */
  write_text(copy, good_file, strlen(good_file));
  size_t imported = 0;
  KOK(kiln_tune_import(ctx, copy, 0, &imported));
  ck_assert_uint_eq(imported, 4);
  struct stat sb;
  ck_assert_int_eq(lstat(path, &sb), 0);
  ck_assert(S_ISREG(sb.st_mode));
  /* The caller's own file may be reached through a symbolic link (kiln's files may not). */
  ck_assert_int_eq(symlink(copy, link), 0);
  KOK(kiln_tune_import(ctx, link, 0, &imported));
  ck_assert_uint_eq(imported, 4);
  alarm(0);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(run_list_import_export)
{
  char *dir = harness_tempdir();
  kiln_context *ctx = use(dir, "Fake Device", "1.0");

  /* A real (quick) tuning of one scan key: stored, listed, used, and still right. */
  kiln_tune_result r = tune_one(ctx, "scan", "row", 1 << 12, 1);
  ck_assert_str_eq(r.bucket, "row.2^12");
  ck_assert_str_eq(r.shape, "[64,64] axis 1");
  ck_assert_uint_gt(r.default_ns, 0);
  ck_assert(r.bytes > 0);
  expect_params(ctx, "scan", "row.2^12", NULL, KILN_TUNE_SOURCE_STORED);
  int64_t shape[2] = {64, 64};
  float h[64 * 64], got[64 * 64];
  for (int i = 0; i < 64 * 64; i++)
    h[i] = (float)(i % 13) - 6.0f;
  kiln_tensor *x = NULL, *y = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 2, shape, h, &x));
  KOK(kiln_scan(ctx, KILN_SCAN_CUMSUM, x, 1, NULL, &y));
  KOK(kiln_tensor_download(y, got, sizeof got));
  for (int row = 0; row < 64; row++) {
    float s = 0;
    for (int i = 0; i < 64; i++) {
      s += h[row * 64 + i];
      ck_assert(got[row * 64 + i] == s);
    }
  }
  kiln_tensor_release(x);
  kiln_tensor_release(y);
  int n = 0;
  KOK(kiln_tune_list(ctx, collect_entries, &n));
  ck_assert_int_eq(n, 1);
  n = 0;
  KOK(kiln_tune_dir_list(dir, collect_entries, &n));
  ck_assert_int_eq(n, 1);
  kiln_tune_dir_stats st;
  KOK(kiln_tune_dir_stats_get(dir, &st));
  ck_assert_uint_eq(st.files, 1);
  ck_assert_uint_eq(st.results, 1);
  ck_assert_uint_gt(st.bytes, 0);

  /* Export -> a fresh cache directory -> import: the entries and their effect come along. */
  plant(dir, "Fake Device", "1.0", good_file); /* replaces the file: 3 results, 1 failure */
  char out[4300];
  snprintf(out, sizeof out, "%s/exported.txt", dir);
  ctx = use(dir, "Fake Device", "1.0");
  KOK(kiln_tune_export(ctx, out));
  char *dir2 = harness_tempdir();
  ctx = use(dir2, "Fake Device", "1.0");
  n = 0;
  KOK(kiln_tune_list(ctx, collect_entries, &n));
  ck_assert_int_eq(n, 0);
  expect_params(ctx, "reduce", "row.2^16", NULL, KILN_TUNE_SOURCE_DEFAULT);
  size_t imported = 0;
  KOK(kiln_tune_import(ctx, out, 0, &imported));
  ck_assert_uint_eq(imported, 4);
  expect_params(ctx, "reduce", "row.2^16", "wg_size=64 items_per_thread=16 ",
                KILN_TUNE_SOURCE_STORED);
  n = 0;
  KOK(kiln_tune_list(ctx, collect_entries, &n));
  ck_assert_int_eq(n, 3);
  KOK(kiln_tune_dir_stats_get(dir2, &st));
  ck_assert_uint_eq(st.results, 3);
  ck_assert_uint_eq(st.failures, 1);

  /* Another device's file needs the flag; broken and missing files are refused. */
  ctx = use(dir2, "Another Device", "1.0");
  KEXPECT(kiln_tune_import(ctx, out, 0, NULL), KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_tune_import(ctx, out, KILN_TUNE_IMPORT_ANY_DEVICE, &imported));
  expect_params(ctx, "reduce", "row.2^16", "wg_size=64 ", KILN_TUNE_SOURCE_STORED);
  KOK(kiln_tune_dir_stats_get(dir2, &st));
  ck_assert_uint_eq(st.files, 2);
  char broken[4300];
  snprintf(broken, sizeof broken, "%s/broken.txt", dir);
  write_text(broken, "kiln-tuning v7\n", 15);
  KEXPECT(kiln_tune_import(ctx, broken, KILN_TUNE_IMPORT_ANY_DEVICE, NULL),
          KILN_ERR_INVALID_ARGUMENT);
  snprintf(broken, sizeof broken, "%s/missing.txt", dir);
  KEXPECT(kiln_tune_import(ctx, broken, 0, NULL), KILN_ERR_IO);
  KEXPECT(kiln_tune_import(ctx, out, 8, NULL), KILN_ERR_INVALID_ARGUMENT);
  snprintf(broken, sizeof broken, "%s/no/such/dir/x.txt", dir);
  KEXPECT(kiln_tune_export(ctx, broken), KILN_ERR_IO);

  /* Families and bucket names. */
  kiln_tune_family_desc d;
  KOK(kiln_tune_family_get(1, &d));
  ck_assert_str_eq(d.name, "reduce");
  ck_assert_ptr_nonnull(strstr(d.params, "two_pass_min"));
  ck_assert_str_eq(d.layouts, "full row col");
  /* Every family once, whatever the registration order; the list ends with NOT_FOUND. */
  static const char *const fams[] = {"elementwise", "reduce", "scan",      "fft",
                                     "gemm",        "xgemm",  "linalg",    "conv",
                                     "attention",   "cast",   "copy",      "random"};
  size_t nfam = sizeof fams / sizeof fams[0];
  int seen[sizeof fams / sizeof fams[0]] = {0};
  for (size_t i = 0; i < nfam; i++) {
    KOK(kiln_tune_family_get(i, &d));
    for (size_t j = 0; j < nfam; j++)
      if (strcmp(d.name, fams[j]) == 0) {
        seen[j]++;
        if (strcmp(d.name, "linalg") == 0) {
          ck_assert_str_eq(d.params, "route nb gemm ahead leaf pwg");
          ck_assert_str_eq(d.layouts, "full");
        }
      }
  }
  for (size_t j = 0; j < nfam; j++)
    ck_assert_msg(seen[j] == 1, "tuner family %s listed %d times", fams[j], seen[j]);
  KEXPECT(kiln_tune_family_get(nfam, &d), KILN_ERR_NOT_FOUND);
  char b[32];
  KOK(kiln_tune_bucket_name("reduce", "col", 1500000, b, sizeof b));
  ck_assert_str_eq(b, "col.2^20");
  KEXPECT(kiln_tune_bucket_name("reduce", "flat", 1, b, sizeof b), KILN_ERR_NOT_FOUND);
  KEXPECT(kiln_tune_bucket_name("reduce", "row", 3, b, sizeof b), KILN_ERR_INVALID_ARGUMENT);
  harness_rmtree(dir2);
  free(dir2);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/* ---------------------------------------------------------------- the fft and gemm families */

/* The value of the family's only parameter for a bucket ("backend=2" -> 2), and its source. */
static uint64_t
param_value(kiln_context *ctx, const char *family, const char *bucket, kiln_tune_source *src)
{
  char buf[256];
  KOK(kiln_tune_params_get(ctx, family, KILN_F32, bucket, buf, sizeof buf, src));
  const char *eq = strchr(buf, '=');
  ck_assert_ptr_nonnull(eq);
  return strtoull(eq + 1, NULL, 10);
}

static int
file_has(const char *dir, const char *name, const char *line)
{
  char path[4600];
  snprintf(path, sizeof path, "%s/tuning/%s", dir, name);
  size_t len;
  char *text = read_all(path, &len);
  int has = text && strstr(text, line) != NULL;
  free(text);
  return has;
}

/*
 * Makes a KILN_FFT_BACKEND_AUTO plan (1-D c2c, n points, f32), checks one
 * forward transform against a DFT in double on the host, and returns the
 * back end the plan got.
 */
static kiln_fft_backend
auto_fft(kiln_context *ctx, int64_t n)
{
  kiln_fft_plan *plan = NULL;
  KOK(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &n, 1, KILN_F32, 0, KILN_FFT_BACKEND_AUTO, &plan));
  kiln_fft_backend be;
  KOK(kiln_fft_plan_backend(plan, &be));
  int64_t shape[2] = {n, 2};
  float *x = malloc(sizeof(float) * 2 * (size_t)n), *y = malloc(sizeof(float) * 2 * (size_t)n);
  for (int64_t i = 0; i < 2 * n; i++)
    x[i] = (float)((i * 37) % 11 - 5) / 4.0f;
  kiln_tensor *tx = NULL, *ty = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 2, shape, x, &tx));
  KOK(kiln_fft_execute(plan, KILN_FFT_FORWARD, KILN_FFT_NORM_NONE, tx, &ty));
  KOK(kiln_tensor_download(ty, y, sizeof(float) * 2 * (size_t)n));
  double d2 = 0, r2 = 0;
  for (int64_t k = 0; k < n; k++) {
    double re = 0, im = 0;
    for (int64_t j = 0; j < n; j++) {
      double a = -2.0 * M_PI * (double)((j * k) % n) / (double)n;
      re += x[2 * j] * cos(a) - x[2 * j + 1] * sin(a);
      im += x[2 * j] * sin(a) + x[2 * j + 1] * cos(a);
    }
    d2 += (y[2 * k] - re) * (y[2 * k] - re) + (y[2 * k + 1] - im) * (y[2 * k + 1] - im);
    r2 += re * re + im * im;
  }
  ck_assert_msg(sqrt(d2) <= 1e-5 * sqrt(r2), "auto FFT of %lld points on %s: relative error %g",
                (long long)n, kiln_fft_backend_name(be), sqrt(d2 / r2));
  kiln_tensor_release(tx);
  kiln_tensor_release(ty);
  KOK(kiln_fft_plan_release(plan));
  free(x);
  free(y);
  return be;
}

START_TEST(fft_family_chooses_auto_backend)
{
  if (!kiln_fft_backend_available(KILN_FFT_BACKEND_CLFFT) ||
      !kiln_fft_backend_available(KILN_FFT_BACKEND_VKFFT))
    return; /* one back end: nothing to choose */
  kiln_tune_family_desc d;
  KOK(kiln_tune_family_get(3, &d));
  ck_assert_str_eq(d.name, "fft");
  ck_assert_str_eq(d.params, "backend");
  ck_assert_str_eq(d.layouts, "points");
  char b[32];
  KOK(kiln_tune_bucket_name("fft", "points", 1000, b, sizeof b));
  ck_assert_str_eq(b, "points.2^9");

  char *dir = harness_tempdir();
  kiln_context *ctx = use(dir, "Fake Device", "1.0");
  kiln_tune_source src;
  uint64_t def = param_value(ctx, "fft", "points.2^10", &src);
  ck_assert_int_eq(src, KILN_TUNE_SOURCE_DEFAULT);
  ck_assert(def == KILN_FFT_BACKEND_CLFFT || def == KILN_FFT_BACKEND_VKFFT);
  uint64_t other = def == KILN_FFT_BACKEND_CLFFT ? KILN_FFT_BACKEND_VKFFT : KILN_FFT_BACKEND_CLFFT;
  char def_text[32], other_text[32], line[128];
  snprintf(def_text, sizeof def_text, "backend=%llu", (unsigned long long)def);
  snprintf(other_text, sizeof other_text, "backend=%llu", (unsigned long long)other);

  /* Online: the first auto plan of a missing key times both back ends, stores and uses the
   * winner; the next plan of the bucket does not tune again. */
  KOK(kiln_context_set_option(ctx, KILN_OPT_TUNE_MODE, KILN_TUNE_ONLINE));
  uint64_t ev0 = kiln__tune_test_evaluations();
  kiln_fft_backend got = auto_fft(ctx, 1024);
  ck_assert_uint_eq(kiln__tune_test_evaluations(), ev0 + 1);
  ck_assert_uint_eq(param_value(ctx, "fft", "points.2^10", &src), (uint64_t)got);
  ck_assert_int_eq(src, KILN_TUNE_SOURCE_STORED);
  ck_assert(file_has(dir, "fake-device--1.0.txt", "v1 fft f32 points.2^10 backend="));
  ck_assert_int_eq(auto_fft(ctx, 1024), got);
  ck_assert_uint_eq(kiln__tune_test_evaluations(), ev0 + 1);
  KOK(kiln_context_set_option(ctx, KILN_OPT_TUNE_MODE, KILN_TUNE_CACHED));

  /* The other back end made to claim 1 ns wins while its output is right: outputs of two
   * libraries are compared within a tolerance, not bitwise... */
  kiln__tune_test_sabotage("fft", "backend", other, 0);
  kiln_tune_result r = tune_one(ctx, "fft", "points", 1024, 0);
  ck_assert_str_eq(r.tuned_params, other_text);
  ck_assert_str_eq(r.shape, "c2c [1024]");
  /* ...and never when it is wrong: refused, recorded, the defaults stored. */
  kiln__tune_test_sabotage("fft", "backend", other, 1);
  r = tune_one(ctx, "fft", "points", 1024, 1);
  ck_assert_str_eq(r.tuned_params, def_text);
  ck_assert_uint_eq(r.failed, 1);
  snprintf(line, sizeof line, "v1 fft f32 points.2^10 %s failed=wrong\n", other_text);
  ck_assert(file_has(dir, "fake-device--1.0.txt", line));
  snprintf(line, sizeof line, "v1 fft f32 points.2^10 %s time_ns=", def_text);
  ck_assert(file_has(dir, "fake-device--1.0.txt", line));
  ck_assert_uint_eq(param_value(ctx, "fft", "points.2^10", &src), def);
  /* A candidate that cannot run (as a back end that cannot do a size): recorded, never chosen.
   * Another driver's file, so the failure above does not make it a skip. */
  ctx = use(dir, "Fake Device", "2.0");
  kiln__tune_test_sabotage("fft", "backend", other, 2);
  r = tune_one(ctx, "fft", "points", 1024, 1);
  kiln__tune_test_sabotage(NULL, NULL, 0, 0);
  ck_assert_str_eq(r.tuned_params, def_text);
  ck_assert_uint_eq(r.failed, 1);
  snprintf(line, sizeof line, "v1 fft f32 points.2^10 %s failed=unsupported\n", other_text);
  ck_assert(file_has(dir, "fake-device--2.0.txt", line));

  /* A stored choice is what auto takes (also against the built-in rule); mode off, an
   * explicit context option and an override take precedence as documented. */
  snprintf(line, sizeof line, "kiln-tuning v1\nv1 fft f32 points.2^10 %s time_ns=1 default_ns=2\n",
           other_text);
  plant(dir, "Fake Device", "1.0", line);
  ctx = use(dir, "Fake Device", "1.0");
  ck_assert_uint_eq(auto_fft(ctx, 1024), other);
  KOK(kiln_context_set_option(ctx, KILN_OPT_TUNE_MODE, KILN_TUNE_OFF));
  ck_assert_uint_eq(auto_fft(ctx, 1024), def);
  KOK(kiln_context_set_option(ctx, KILN_OPT_TUNE_MODE, KILN_TUNE_CACHED));
  KOK(kiln_context_set_option(ctx, KILN_OPT_FFT_BACKEND, (int64_t)def));
  ck_assert_uint_eq(auto_fft(ctx, 1024), def);
  KOK(kiln_context_set_option(ctx, KILN_OPT_FFT_BACKEND, KILN_FFT_BACKEND_AUTO));
  KOK(kiln_tune_override(ctx, "fft", KILN_F32, "points.2^10", def_text));
  ck_assert_uint_eq(auto_fft(ctx, 1024), def);

  /* A choice that cannot do the size is not taken: clFFT everywhere, but 17 points go to
   * VkFFT (and are right), 16 to clFFT. */
  KOK(kiln_tune_override(ctx, "fft", KILN_F32, NULL, "backend=1"));
  ck_assert_int_eq(auto_fft(ctx, 17), KILN_FFT_BACKEND_VKFFT);
  ck_assert_int_eq(auto_fft(ctx, 16), KILN_FFT_BACKEND_CLFFT);
  KEXPECT(kiln_tune_override(ctx, "fft", KILN_F32, NULL, "backend=3"), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tune_override(ctx, "fft", KILN_F32, "row.2^4", "backend=1"),
          KILN_ERR_INVALID_ARGUMENT);
  use(dir, "Fake Device", "1.0");
  harness_rmtree(dir);
  free(dir);
}
END_TEST


/*
 * The fft family's built-in rule by size (kiln__fft_default_backend): on CPU devices clFFT for
 * f32 at 2^13-2^22 points and f64 at 2^11-2^20, VkFFT outside; VkFFT on GPUs.
 */
START_TEST(fft_default_by_size)
{
  if (!kiln_fft_backend_available(KILN_FFT_BACKEND_CLFFT) ||
      !kiln_fft_backend_available(KILN_FFT_BACKEND_VKFFT))
    return; /* one back end: nothing to choose */
  /* a context of its own: the tcases before it may have released the shared one */
  char *dir = harness_tempdir();
  kiln_context *ctx = NULL;
  KOK(kiln_context_create(NULL, &ctx));
  KOK(kiln_context_set_cache_dir(ctx, dir));
  kiln__tune_set_identity(ctx, "Fake Device", "1.0");
  KOK(kiln_context_set_option(ctx, KILN_OPT_TUNE_MODE, KILN_TUNE_CACHED));
  kiln_device_info info;
  KOK(kiln_context_device_info(ctx, &info));
  static const struct {
    kiln_dtype dt;
    const char *bucket;
    int clfft_on_cpu;
  } rule[] = {{KILN_F32, "points.2^12", 0}, {KILN_F32, "points.2^13", 1},
              {KILN_F32, "points.2^22", 1}, {KILN_F32, "points.2^23", 0},
              {KILN_F64, "points.2^10", 0}, {KILN_F64, "points.2^11", 1},
              {KILN_F64, "points.2^20", 1}, {KILN_F64, "points.2^21", 0}};
  for (size_t i = 0; i < sizeof rule / sizeof rule[0]; i++) {
    if (rule[i].dt == KILN_F64 && !info.has_fp64)
      continue;
    char buf[64];
    kiln_tune_source src;
    KOK(kiln_tune_params_get(ctx, "fft", rule[i].dt, rule[i].bucket, buf, sizeof buf, &src));
    ck_assert_int_eq(src, KILN_TUNE_SOURCE_DEFAULT);
    int want = !info.is_gpu && rule[i].clfft_on_cpu ? KILN_FFT_BACKEND_CLFFT : KILN_FFT_BACKEND_VKFFT;
    char expect[32];
    snprintf(expect, sizeof expect, "backend=%d", want);
    ck_assert_msg(strcmp(buf, expect) == 0, "%s %s: %s, expected %s",
                  kiln_dtype_name(rule[i].dt), rule[i].bucket, buf, expect);
  }
  KOK(kiln_context_release(ctx));
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/* Where matmul_route() saw a product run: kiln's small kernel, CLBlast, the large route. */
enum { ON_KILN, ON_CLBLAST, ON_LARGE };

/*
 * [m, k] x [k, n] f32 through kiln_matmul on ctx, checked exactly against the
 * host (small integers: every route gives the exact products); returns the
 * route it took, which must be the only one counted (unless online tuning
 * may run more).
 */
static int
matmul_route_counted(kiln_context *ctx, int64_t m, int64_t k, int64_t n, int only_one)
{
  int64_t as[2] = {m, k}, bs[2] = {k, n};
  float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(k * n));
  float *c = malloc(sizeof(float) * (size_t)(m * n));
  for (int64_t i = 0; i < m * k; i++)
    a[i] = (float)((i * 7) % 5 - 2);
  for (int64_t i = 0; i < k * n; i++)
    b[i] = (float)((i * 3) % 7 - 3);
  kiln_tensor *ta = NULL, *tb = NULL, *tc = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 2, as, a, &ta));
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 2, bs, b, &tb));
  uint64_t before[2], after[2], large0 = kiln__blas_test_large_calls();
  kiln__blas_test_routes(before);
  KOK(kiln_matmul(ctx, ta, tb, &tc));
  kiln__blas_test_routes(after);
  uint64_t large = kiln__blas_test_large_calls() - large0;
  KOK(kiln_tensor_download(tc, c, sizeof(float) * (size_t)(m * n)));
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0;
      for (int64_t p = 0; p < k; p++)
        s += (double)a[i * k + p] * b[p * n + j];
      ck_assert_msg(c[i * n + j] == (float)s, "c[%lld,%lld] = %g, want %g", (long long)i,
                    (long long)j, c[i * n + j], s);
    }
  if (only_one)
    ck_assert_uint_eq(after[0] - before[0] + after[1] - before[1] + large, 1);
  kiln_tensor_release(ta);
  kiln_tensor_release(tb);
  kiln_tensor_release(tc);
  free(a);
  free(b);
  free(c);
  return large ? ON_LARGE : after[1] > before[1] ? ON_CLBLAST : ON_KILN;
}

static int
matmul_route(kiln_context *ctx, int64_t m, int64_t k, int64_t n)
{
  return matmul_route_counted(ctx, m, k, n, 1);
}

/*
 * The Xgemm parameter sets of the xgemm family compute right products through CLBlast (its
 * tuner only runs on GPUs; here the sets are put in force by hand on the test device). The
 * product goes to CLBlast's indirect Xgemm kernel, the one the sets configure (forced for the
 * rest of the process: at 521 x 389 x 263 it took XgemmDirect, which the sets leave alone), and
 * is odd-sized past one tile each way, so the padding around the tiles is exercised too. Each
 * set is a CLBlast build, so the suite checks the sets kiln's defaults use (each size class's)
 * and KILN_TEST_XGEMM_ALL=1 all of them; the tuner itself never stores a set whose product
 * differs from the default's (the validation every family's candidates go through).
 */
/* Host doubles to and from an f32 or f64 tensor of n elements. */
static kiln_status
upload_as(kiln_tensor *t, const double *v, size_t n)
{
  if (kiln_tensor_dtype(t) == KILN_F64)
    return kiln_tensor_upload(t, v, n * sizeof(double));
  float *f = malloc(n * sizeof(float));
  ck_assert_ptr_nonnull(f);
  for (size_t i = 0; i < n; i++)
    f[i] = (float)v[i];
  kiln_status s = kiln_tensor_upload(t, f, n * sizeof(float));
  free(f);
  return s;
}

static kiln_status
download_as(const kiln_tensor *t, double *v, size_t n)
{
  if (kiln_tensor_dtype(t) == KILN_F64)
    return kiln_tensor_download(t, v, n * sizeof(double));
  float *f = malloc(n * sizeof(float));
  ck_assert_ptr_nonnull(f);
  kiln_status s = kiln_tensor_download(t, f, n * sizeof(float));
  for (size_t i = 0; i < n; i++)
    v[i] = f[i];
  free(f);
  return s;
}

START_TEST(xgemm_sets_compute_products)
{
  if (!kiln_blas_has_clblast())
    return;
  kiln_context *ctx = harness_ctx();
  const char *env = getenv("KILN_TEST_XGEMM_ALL");
  int all = env && strcmp(env, "1") == 0;
  const int64_t m = 261, k = 97, n = 133;
  int64_t as[2] = {m, k}, bs[2] = {k, n};
  double *a = malloc(sizeof(double) * (size_t)(m * k)),
         *b = malloc(sizeof(double) * (size_t)(k * n));
  double *ref = calloc((size_t)(m * n), sizeof(double)),
         *got = malloc(sizeof(double) * (size_t)(m * n));
  ck_assert(a && b && ref && got);
  /* Multiples of 1/16 in [-2, 2]: every partial sum is exact in f32 and f64. */
  for (int64_t i = 0; i < m * k; i++)
    a[i] = (double)((i * 7919 + 13) % 64 - 32) / 16.0;
  for (int64_t i = 0; i < k * n; i++)
    b[i] = (double)((i * 104729 + 5) % 64 - 32) / 16.0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t p = 0; p < k; p++)
      for (int64_t j = 0; j < n; j++)
        ref[i * n + j] += a[i * k + p] * b[p * n + j];
  for (int d = 0; d < 2; d++) {
    kiln_dtype dt = d ? KILN_F64 : KILN_F32;
    if (dt == KILN_F64 && !harness_has_fp64())
      continue;
    kiln_tensor *ta = NULL, *tb = NULL;
    KOK(kiln_tensor_create(ctx, dt, 2, as, &ta));
    KOK(kiln_tensor_create(ctx, dt, 2, bs, &tb));
    KOK(upload_as(ta, a, (size_t)(m * k)));
    KOK(upload_as(tb, b, (size_t)(k * n)));
    /* KILN_DEBUG_XGEMM: a GEMMK=1 configuration (no set uses that kernel) is accepted and the
     * product stays right on the direct kernel this size takes; bad names, values and
     * constraint breaks fail the call and name the variable. On the indirect kernel this GEMMK=1
     * configuration gives wrong products on PoCL (docs/tuning.md, "Known problems"), so it runs
     * before the indirect kernel is forced below. */
    static const struct {
      const char *spec;
      kiln_status want;
    } dbg[] = {
        {"GEMMK=1 KREG=4 KWG=1 KWI=1 MDIMA=8 MDIMC=8 MWG=32 NDIMB=8 NDIMC=8 NWG=64 SA=0 SB=0 "
         "STRM=0 STRN=0 VWM=2,VWN=4",
         KILN_OK},
        {"MWG=128 FOO=1", KILN_ERR_INVALID_ARGUMENT},
        {"MWG=", KILN_ERR_INVALID_ARGUMENT},
        {"MWG=12x", KILN_ERR_INVALID_ARGUMENT},
        {"MWG=96", KILN_ERR_INVALID_ARGUMENT},
        {"VWN=3", KILN_ERR_INVALID_ARGUMENT},
        {"KWG=24 KWI=16", KILN_ERR_INVALID_ARGUMENT},
        {"SA=2", KILN_ERR_INVALID_ARGUMENT},
        {"GEMMK=1 KREG=2 VWN=4", KILN_ERR_INVALID_ARGUMENT},
        /* more work-items than any device takes; more local memory than any has */
        {"MDIMC=1024 NDIMC=1024 MDIMA=1024 NDIMB=1024 MWG=1024 NWG=1024 VWM=1 VWN=1 KWG=1024",
         KILN_ERR_INVALID_ARGUMENT},
        {"KWG=1024 MWG=1024 NWG=1024 MDIMA=16 NDIMB=16", KILN_ERR_INVALID_ARGUMENT},
    };
    for (size_t i = 0; dt == KILN_F32 && i < sizeof dbg / sizeof dbg[0]; i++) {
      ck_assert_int_eq(setenv("KILN_DEBUG_XGEMM", dbg[i].spec, 1), 0);
      kiln_tensor *c = NULL;
      kiln_status st = kiln__matmul_routed(ctx, ta, tb, KILN__GEMM_ROUTE_CLBLAST, &c);
      ck_assert_msg(st == dbg[i].want, "KILN_DEBUG_XGEMM=\"%s\": status %d", dbg[i].spec, st);
      if (st == KILN_OK) {
        KOK(download_as(c, got, (size_t)(m * n)));
        for (int64_t j = 0; j < m * n; j++)
          ck_assert_msg(got[j] == ref[j], "KILN_DEBUG_XGEMM=\"%s\": C[%lld] = %g, expected %g",
                        dbg[i].spec, (long long)j, got[j], ref[j]);
        kiln_tensor_release(c);
      } else {
        ck_assert_ptr_null(c);
        ck_assert_ptr_nonnull(strstr(kiln_last_error(), "KILN_DEBUG_XGEMM"));
      }
    }
    unsetenv("KILN_DEBUG_XGEMM");
    KOK(kiln__linalg_test_gemm_indirect(ctx, dt));
    for (uint32_t set = 1; set <= KILN__XGEMM_NSETS; set++) {
      if (!all && set != kiln__blas_xgemm_nvidia_set(dt, 0) &&
          set != kiln__blas_xgemm_nvidia_set(dt, 1))
        continue;
      KOK(kiln__blas_xgemm_test_apply(ctx, dt, set));
      kiln_tensor *c = NULL;
      KOK(kiln__matmul_routed(ctx, ta, tb, KILN__GEMM_ROUTE_CLBLAST, &c));
      KOK(download_as(c, got, (size_t)(m * n)));
      for (int64_t i = 0; i < m * n; i++)
        ck_assert_msg(got[i] == ref[i], "%s set %u: C[%lld] = %g, expected %g", kiln_dtype_name(dt),
                      set, (long long)i, got[i], ref[i]);
      kiln_tensor_release(c);
    }
    /* CLBlast's own parameters cannot come back once overridden: refused, not ignored. */
    KEXPECT(kiln__blas_xgemm_test_apply(ctx, dt, 0), KILN_ERR_UNSUPPORTED);
    KEXPECT(kiln__blas_xgemm_test_apply(ctx, dt, KILN__XGEMM_NSETS + 1), KILN_ERR_INVALID_ARGUMENT);
    kiln_tensor_release(ta);
    kiln_tensor_release(tb);
  }
  free(a);
  free(b);
  free(ref);
  free(got);
  kiln_context_release(ctx);
}
END_TEST

START_TEST(gemm_family_routes)
{
  if (!kiln_blas_has_clblast())
    return; /* no CLBlast: nothing to choose */
  kiln_tune_family_desc d;
  KOK(kiln_tune_family_get(4, &d));
  ck_assert_str_eq(d.name, "gemm");
  ck_assert_str_eq(d.params, "route");
  ck_assert_str_eq(d.layouts, "mnk");
  char *dir = harness_tempdir();
  kiln_context *ctx = use(dir, "Fake Device", "1.0");
  kiln_tune_source src;
  ck_assert_uint_eq(param_value(ctx, "gemm", "mnk.2^12", &src), 0);
  ck_assert_int_eq(src, KILN_TUNE_SOURCE_DEFAULT);

  /* Defaults: the built-in threshold, 32^3; above it CLBlast, or on CPU devices kiln's CPU
   * GEMM kernel (the large route). */
  kiln_device_info info;
  KOK(kiln_context_device_info(ctx, &info));
  const int big = info.is_gpu ? ON_CLBLAST : ON_LARGE;
  ck_assert_int_eq(matmul_route(ctx, 16, 16, 16), ON_KILN);
  ck_assert_int_eq(matmul_route(ctx, 32, 32, 32), ON_KILN);
  ck_assert_int_eq(matmul_route(ctx, 33, 32, 32), big);
  ck_assert_int_eq(matmul_route(ctx, 64, 64, 64), big);
  /* Per-bucket overrides turn both around; other buckets keep the threshold. */
  KOK(kiln_tune_override(ctx, "gemm", KILN_F32, "mnk.2^12", "route=2"));
  KOK(kiln_tune_override(ctx, "gemm", KILN_F32, "mnk.2^18", "route=1"));
  ck_assert_int_eq(matmul_route(ctx, 16, 16, 16), ON_CLBLAST);
  ck_assert_int_eq(matmul_route(ctx, 64, 64, 64), ON_KILN);
  ck_assert_int_eq(matmul_route(ctx, 32, 32, 32), ON_KILN);
  ck_assert_int_eq(matmul_route(ctx, 128, 64, 64), big);
  KOK(kiln_tune_override(ctx, "gemm", KILN_F32, "mnk.2^12", NULL));
  KOK(kiln_tune_override(ctx, "gemm", KILN_F32, "mnk.2^18", NULL));
  KEXPECT(kiln_tune_override(ctx, "gemm", KILN_F32, NULL, "route=4"), KILN_ERR_INVALID_ARGUMENT);
  /* Route 3, kiln's large kernel, the product exact. */
  KOK(kiln_tune_override(ctx, "gemm", KILN_F32, "mnk.2^18", "route=3"));
  ck_assert_int_eq(matmul_route(ctx, 64, 64, 64), ON_LARGE);
  KOK(kiln_tune_override(ctx, "gemm", KILN_F32, "mnk.2^18", NULL));

  /* A stored route is used. */
  plant(dir, "Fake Device", "1.0",
        "kiln-tuning v1\nv1 gemm f32 mnk.2^12 route=2 time_ns=1 default_ns=2\n");
  ctx = use(dir, "Fake Device", "1.0");
  ck_assert_int_eq(matmul_route(ctx, 16, 16, 16), ON_CLBLAST);

  /* Tuning: the CLBlast route made to claim 1 ns wins while right, never while wrong. */
  kiln__tune_test_sabotage("gemm", "route", KILN__GEMM_ROUTE_CLBLAST, 0);
  kiln_tune_result r = tune_one(ctx, "gemm", "mnk", 4096, 0);
  ck_assert_str_eq(r.tuned_params, "route=2");
  ck_assert_str_eq(r.shape, "[16,16]x[16,16]");
  kiln__tune_test_sabotage("gemm", "route", KILN__GEMM_ROUTE_CLBLAST, 1);
  r = tune_one(ctx, "gemm", "mnk", 4096, 1);
  kiln__tune_test_sabotage(NULL, NULL, 0, 0);
  ck_assert_str_ne(r.tuned_params, "route=2");
  ck_assert_uint_eq(r.failed, 1);
  ck_assert(file_has(dir, "fake-device--1.0.txt", "v1 gemm f32 mnk.2^12 route=2 failed=wrong\n"));
  ck_assert_uint_ne(param_value(ctx, "gemm", "mnk.2^12", &src), KILN__GEMM_ROUTE_CLBLAST);
  ck_assert_int_eq(src, KILN_TUNE_SOURCE_STORED);
  ck_assert_int_eq(matmul_route(ctx, 16, 16, 16), ON_KILN);

  /* Online: a missing key is tuned on its first call, once. */
  KOK(kiln_context_set_option(ctx, KILN_OPT_TUNE_MODE, KILN_TUNE_ONLINE));
  uint64_t ev0 = kiln__tune_test_evaluations();
  matmul_route_counted(ctx, 32, 32, 16, 0);
  ck_assert_uint_gt(kiln__tune_test_evaluations(), ev0);
  param_value(ctx, "gemm", "mnk.2^14", &src);
  ck_assert_int_eq(src, KILN_TUNE_SOURCE_STORED);
  ev0 = kiln__tune_test_evaluations();
  matmul_route(ctx, 32, 32, 16);
  ck_assert_uint_eq(kiln__tune_test_evaluations(), ev0);
  KOK(kiln_context_set_option(ctx, KILN_OPT_TUNE_MODE, KILN_TUNE_CACHED));

  /* KILN_OPT_GEMM_SMALL_MNK, once set, wins over stored and overridden routes (a context of
   * its own: the option stays set for the context's life). */
  kiln_context *c2 = NULL;
  KOK(kiln_context_create(NULL, &c2));
  KOK(kiln_context_set_cache_dir(c2, dir));
  kiln__tune_set_identity(c2, "Fake Device", "1.0");
  KOK(kiln_tune_override(c2, "gemm", KILN_F32, "mnk.2^12", "route=2"));
  KOK(kiln_tune_override(c2, "gemm", KILN_F32, "mnk.2^18", "route=1"));
  ck_assert_int_eq(matmul_route(c2, 16, 16, 16), ON_CLBLAST);
  KOK(kiln_context_set_option(c2, KILN_OPT_GEMM_SMALL_MNK, 32 * 32 * 32));
  ck_assert_int_eq(matmul_route(c2, 16, 16, 16), ON_KILN);
  ck_assert_int_eq(matmul_route(c2, 64, 64, 64), ON_CLBLAST);
  KOK(kiln_context_set_option(c2, KILN_OPT_GEMM_SMALL_MNK, INT64_MAX));
  ck_assert_int_eq(matmul_route(c2, 64, 64, 64), ON_KILN);
  KOK(kiln_context_release(c2));

  /* Without CLBlast there is nothing to tune. */
  setenv("KILN_DEBUG_NO_CLBLAST", "1", 1);
  KOK(kiln_context_create(NULL, &c2));
  unsetenv("KILN_DEBUG_NO_CLBLAST");
  kiln_tune_request req;
  memset(&req, 0, sizeof req);
  req.family = "gemm";
  req.no_store = 1;
  KEXPECT(kiln_tune_run(c2, &req, NULL, NULL), KILN_ERR_UNSUPPORTED);
  KOK(kiln_context_release(c2));
  use(dir, "Fake Device", "1.0");
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/* ---------------------------------------------------------------- threads */

/* An op of one tuned key, run by a thread of online_tuning_shared_by_threads. */
struct shared_job {
  const char *family;
  kiln_dtype dtype;
  const char *bucket;
  enum { JOB_ADD, JOB_SUM, JOB_CUMSUM } kind;
  int64_t rows, cols; /* rows 0: 1-D of cols elements */
  int64_t axis;
};

/*
 * Keys whose candidates share their programs (so a cold PoCL cache compiles each once), two
 * threads per key: one tunes it, the other runs with the defaults meanwhile.
 */
static const struct shared_job shared_jobs[] = {
    {"elementwise", KILN_F32, "flat.2^12", JOB_ADD, 0, 4096, 0},
    {"elementwise", KILN_F32, "flat.2^13", JOB_ADD, 0, 8192, 0},
    {"elementwise", KILN_F32, "flat.2^14", JOB_ADD, 0, 16384, 0},
    {"reduce", KILN_F32, "row.2^12", JOB_SUM, 32, 128, 1},
    {"elementwise", KILN_F32, "flat.2^12", JOB_ADD, 0, 4500, 0},
    {"elementwise", KILN_F32, "flat.2^13", JOB_ADD, 0, 9000, 0},
    {"elementwise", KILN_F32, "flat.2^14", JOB_ADD, 0, 20000, 0},
    {"reduce", KILN_F32, "row.2^12", JOB_SUM, 64, 64, 1},
};
#define N_SHARED_JOBS (sizeof shared_jobs / sizeof shared_jobs[0])

/*
 * Runs job once on ctx and checks every element against the host; returns 0, or 1 with a message
 * in err. No ck_assert: it runs on other threads. Inputs are multiples of 1/8 in [-4, 4], so every
 * sum of these sizes is exact in f32 and any summation order gives the host's value.
 */
static int
run_shared_job(kiln_context *ctx, const struct shared_job *j, int seed, char *err, size_t errlen)
{
  int64_t n = j->rows ? j->rows * j->cols : j->cols;
  int64_t shape[2] = {j->rows ? j->rows : j->cols, j->cols};
  size_t ndim = j->rows ? 2 : 1;
  size_t esz = kiln_dtype_size(j->dtype);
  unsigned char *a = malloc((size_t)n * esz), *b = malloc((size_t)n * esz);
  double *want = calloc((size_t)n, sizeof *want);
  double *got = calloc((size_t)n, sizeof *got);
  for (int64_t i = 0; i < n; i++) {
    double va = (double)((i * 7919 + seed * 31) % 65 - 32) / 8.0;
    double vb = (double)((i * 104729 + seed) % 65 - 32) / 8.0;
    if (j->dtype == KILN_I32) {
      ((int32_t *)a)[i] = (int32_t)(va * 8);
      ((int32_t *)b)[i] = (int32_t)(vb * 8);
    } else {
      ((float *)a)[i] = (float)va;
      ((float *)b)[i] = (float)vb;
    }
  }
  int64_t inner = j->rows && j->axis == 0 ? j->cols : 1;
  int64_t len = j->rows ? shape[j->axis] : n;
  int64_t nout = j->kind == JOB_SUM ? n / len : n;
  for (int64_t o = 0; o < n / len; o++) {
    int64_t base = (o / inner) * len * inner + o % inner;
    double acc = 0;
    for (int64_t i = 0; i < len; i++) {
      int64_t at = base + i * inner;
      double x = j->dtype == KILN_I32 ? ((int32_t *)a)[at] : ((float *)a)[at];
      double y = j->dtype == KILN_I32 ? ((int32_t *)b)[at] : ((float *)b)[at];
      acc += x;
      if (j->kind == JOB_ADD)
        want[at] = x + y;
      else if (j->kind == JOB_CUMSUM)
        want[at] = acc;
    }
    if (j->kind == JOB_SUM)
      want[o] = acc;
  }
  kiln_tensor *ta = NULL, *tb = NULL, *out = NULL;
  kiln_status s = kiln_tensor_from_host(ctx, j->dtype, ndim, shape + (ndim == 1), a, &ta);
  if (s == KILN_OK && j->kind == JOB_ADD)
    s = kiln_tensor_from_host(ctx, j->dtype, ndim, shape + (ndim == 1), b, &tb);
  if (s == KILN_OK && j->kind == JOB_ADD)
    s = kiln_binary(ctx, KILN_OP_ADD, ta, tb, &out);
  else if (s == KILN_OK && j->kind == JOB_SUM)
    s = kiln_reduce(ctx, KILN_REDUCE_SUM, ta, &j->axis, 1, 0, NULL, &out);
  else if (s == KILN_OK)
    s = kiln_scan(ctx, KILN_SCAN_CUMSUM, ta, j->axis, NULL, &out);
  unsigned char *h = malloc((size_t)nout * esz);
  if (s == KILN_OK)
    s = kiln_tensor_download(out, h, (size_t)nout * esz);
  int bad = s != KILN_OK;
  if (bad)
    snprintf(err, errlen, "%s %s: %s", j->family, j->bucket, kiln_last_error());
  for (int64_t i = 0; i < nout && !bad; i++) {
    got[i] = j->dtype == KILN_I32 ? ((int32_t *)h)[i] : ((float *)h)[i];
    if (got[i] != want[i]) {
      snprintf(err, errlen, "%s %s: element %lld is %g, expected %g", j->family, j->bucket,
               (long long)i, got[i], want[i]);
      bad = 1;
    }
  }
  kiln_tensor_release(ta);
  kiln_tensor_release(tb);
  kiln_tensor_release(out);
  free(a);
  free(b);
  free(h);
  free(want);
  free(got);
  return bad;
}

struct shared_worker {
  kiln_context *ctx;
  const struct shared_job *job;
  int seed;
  int failures;
  char first[512];
};

static void *
shared_worker_run(void *arg)
{
  struct shared_worker *w = arg;
  char err[512];
  for (int it = 0; it < 3; it++)
    if (run_shared_job(w->ctx, w->job, w->seed + it, err, sizeof err) && w->failures++ == 0)
      snprintf(w->first, sizeof w->first, "%s", err);
  return NULL;
}

struct listed_failure {
  char family[32], bucket[32], dtype[8], params[256], failed[32];
};

static int
collect_failures(const kiln_tune_entry *e, void *user)
{
  struct listed_failure *f = user;
  if (!e->failed[0])
    return 0;
  for (; f->family[0]; f++)
    ;
  snprintf(f->family, sizeof f->family, "%s", e->family);
  snprintf(f->bucket, sizeof f->bucket, "%s", e->bucket);
  snprintf(f->dtype, sizeof f->dtype, "%s", e->dtype);
  snprintf(f->params, sizeof f->params, "%s", e->params);
  snprintf(f->failed, sizeof f->failed, "%s", e->failed);
  return 0;
}

/*
 * Threads running ops of several keys on one context in mode online: each key is tuned by one of
 * them while the others keep running ops. Every result must be right, and a candidate recorded as
 * failed must fail when it runs alone (here: forced through an override, in the same context).
 */
START_TEST(online_tuning_shared_by_threads)
{
  char *dir = harness_tempdir();
  kiln_context *ctx = NULL;
  KOK(kiln_context_create(NULL, &ctx));
  KOK(kiln_context_set_cache_dir(ctx, dir));
  KOK(kiln_context_set_option(ctx, KILN_OPT_TUNE_MODE, KILN_TUNE_ONLINE));
  uint64_t ev0 = kiln__tune_test_evaluations();
  pthread_t th[N_SHARED_JOBS];
  struct shared_worker w[N_SHARED_JOBS];
  for (size_t i = 0; i < N_SHARED_JOBS; i++) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].ctx = ctx;
    w[i].job = &shared_jobs[i];
    w[i].seed = (int)i;
    ck_assert_int_eq(pthread_create(&th[i], NULL, shared_worker_run, &w[i]), 0);
  }
  for (size_t i = 0; i < N_SHARED_JOBS; i++)
    pthread_join(th[i], NULL);
  for (size_t i = 0; i < N_SHARED_JOBS; i++)
    ck_assert_msg(w[i].failures == 0, "%d wrong or failed ops, first %s", w[i].failures,
                  w[i].first);
  ck_assert_uint_gt(kiln__tune_test_evaluations(), ev0); /* something was tuned */

  /* Every key was tuned and stored; each failure record must reproduce alone. */
  KOK(kiln_context_set_option(ctx, KILN_OPT_TUNE_MODE, KILN_TUNE_CACHED));
  for (size_t i = 0; i < N_SHARED_JOBS; i++)
    expect_params_dt(ctx, shared_jobs[i].family, shared_jobs[i].dtype, shared_jobs[i].bucket,
                     KILN_TUNE_SOURCE_STORED);
  static struct listed_failure fails[512];
  memset(fails, 0, sizeof fails);
  KOK(kiln_tune_list(ctx, collect_failures, fails));
  for (struct listed_failure *f = fails; f->family[0]; f++) {
    const struct shared_job *j = NULL;
    for (size_t i = 0; i < N_SHARED_JOBS && !j; i++)
      if (strcmp(shared_jobs[i].family, f->family) == 0 &&
          strcmp(shared_jobs[i].bucket, f->bucket) == 0 &&
          strcmp(kiln_dtype_name(shared_jobs[i].dtype), f->dtype) == 0)
        j = &shared_jobs[i];
    ck_assert_msg(j != NULL, "failure record for a key no thread ran: %s %s %s", f->family,
                  f->dtype, f->bucket);
    KOK(kiln_tune_override(ctx, j->family, j->dtype, j->bucket, f->params));
    char err[512] = "";
    int bad = run_shared_job(ctx, j, 99, err, sizeof err);
    KOK(kiln_tune_override(ctx, j->family, j->dtype, j->bucket, NULL));
    ck_assert_msg(bad, "%s %s %s %s recorded failed=%s, but it runs correctly alone", f->family,
                  f->dtype, f->bucket, f->params, f->failed);
  }
  KOK(kiln_context_release(ctx));
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/*
 * kiln_tune_export replaces path by a rename: a FIFO or a directory there is refused
 * (KILN_ERR_IO) and stays what it was; a symbolic link to a regular file stays a link, the
 * file it names getting the entries (an import through the link takes them back).
 */
START_TEST(export_refuses_special_files)
{
  /* a context of its own: the tcases before it may have released the shared one */
  char *dir = harness_tempdir();
  plant(dir, "Fake Device", "1.0", good_file);
  kiln_context *ctx = NULL;
  KOK(kiln_context_create(NULL, &ctx));
  KOK(kiln_context_set_cache_dir(ctx, dir));
  kiln__tune_set_identity(ctx, "Fake Device", "1.0");
  KOK(kiln_context_set_option(ctx, KILN_OPT_TUNE_MODE, KILN_TUNE_CACHED));
  char fifo[4300], real[4300], link[4300];
  snprintf(fifo, sizeof fifo, "%s/export.fifo", dir);
  snprintf(real, sizeof real, "%s/real.txt", dir);
  snprintf(link, sizeof link, "%s/link.txt", dir);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  alarm(60); /* an export that opened the FIFO would block */
  KEXPECT(kiln_tune_export(ctx, fifo), KILN_ERR_IO);
  alarm(0);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "not a regular file"));
  struct stat st;
  ck_assert_int_eq(lstat(fifo, &st), 0);
  ck_assert_msg(S_ISFIFO(st.st_mode), "kiln_tune_export replaced the FIFO");
  KEXPECT(kiln_tune_export(ctx, dir), KILN_ERR_IO);
  write_text(real, "old\n", 4);
  ck_assert_int_eq(symlink(real, link), 0);
  KOK(kiln_tune_export(ctx, link));
  ck_assert_int_eq(lstat(link, &st), 0);
  ck_assert_msg(S_ISLNK(st.st_mode), "kiln_tune_export replaced the symbolic link");
  char *dir2 = harness_tempdir();
  KOK(kiln_context_set_cache_dir(ctx, dir2));
  size_t imported = 0;
  KOK(kiln_tune_import(ctx, link, 0, &imported));
  ck_assert_uint_eq(imported, 4);
  KOK(kiln_context_release(ctx));
  harness_rmtree(dir2);
  harness_rmtree(dir);
  free(dir2);
  free(dir);
}
END_TEST

static Suite *
tuner_suite(void)
{
  Suite *s = suite_create("tuner");
  TCase *files = tcase_create("files");
  tcase_add_test(files, file_round_trip);
  tcase_add_test(files, parser_refuses_bad_input);
  tcase_add_test(files, atomic_write_survives_kill);
  tcase_set_timeout(files, 60);
  suite_add_tcase(s, files);
  TCase *device = tcase_create("device");
  tcase_add_test(device, corrupt_files_are_misses);
  tcase_add_test(device, special_files_never_block);
  tcase_add_test(device, fallback_order);
  tcase_add_test(device, packaged_tuning_file);
  tcase_add_test(device, new_dtype_keys);
  tcase_add_test(device, modes);
  tcase_add_test(device, override_api);
  tcase_add_test(device, wrong_candidate_never_wins);
  tcase_add_test(device, passing_failure_not_recorded);
  tcase_add_test(device, run_list_import_export);
  tcase_set_timeout(device, 120);
  suite_add_tcase(s, device);
  /* Plans of both FFT libraries and CLBlast's SGEMM: seconds each with a cold PoCL cache. */
  TCase *choices = tcase_create("choices");
  tcase_add_test(choices, fft_family_chooses_auto_backend);
  tcase_add_test(choices, gemm_family_routes);
  tcase_set_timeout(choices, 180);
  suite_add_tcase(s, choices);
  /* CLBlast builds its GEMM program once per parameter set: 20 builds. */
  TCase *xgemm = tcase_create("xgemm");
  tcase_add_test(xgemm, xgemm_sets_compute_products);
  tcase_set_timeout(xgemm, 300);
  suite_add_tcase(s, xgemm);
  /* Online tuning of eight keys at once: tens of seconds with a cold PoCL cache. */
  TCase *threads = tcase_create("threads");
  tcase_add_test(threads, online_tuning_shared_by_threads);
  tcase_set_timeout(threads, 240);
  suite_add_tcase(s, threads);
  TCase *exports = tcase_create("export_files");
  tcase_add_test(exports, export_refuses_special_files);
  suite_add_tcase(s, exports);
  TCase *fft_rule = tcase_create("fft_rule");
  tcase_add_test(fft_rule, fft_default_by_size);
  suite_add_tcase(s, fft_rule);
  return s;
}

int
main(int argc, char **argv)
{
  if (argc == 3 && strcmp(argv[1], "--tune-writer") == 0)
    return writer_main(argv[2]);
  if (argc == 4 && strcmp(argv[1], "--tune-merger") == 0)
    return merger_main(argv[2], argv[3], 40);
  return harness_main(tuner_suite(), 1);
}
