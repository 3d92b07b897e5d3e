/*
 * Time to first result of a fresh process, with and without kiln's disk
 * cache and the driver's own cache: the figures of docs/cache.md.
 *
 * Each sample is a new process (this program re-executed with --child) that
 * creates a context, runs one elementwise op (exp over f32) and one cast
 * (f32 -> i32), downloads and checks the results. Reported per sample: the
 * time from spawn to the checked results (the figure that matters), the
 * whole process until exit (adds teardown: PoCL with its cache off deletes
 * its temporary files then), the child's split (context, first exp, first
 * cast) and its cache counters, which are checked against the mode (a
 * "warm" sample that missed is an error).
 *
 * Modes (driver cache = PoCL's kernel cache, or NVIDIA's compute cache):
 *   cold          empty kiln cache and empty driver cache, fresh for every sample
 *   driver        kiln's cache off, the driver's cache warm
 *   kiln          kiln's cache warm, the driver's cache off
 *   both          both warm
 * plus the one-time cost of filling kiln's cache: one process with default
 * settings (the driver's cache on, in a directory of its own), whose entries
 * the "kiln" and "both" modes then read (docs/cache.md: on PoCL they then
 * carry the work-group functions the first launches compiled), and two
 * more cold modes, each sample run next to a cold one (same load):
 *   whole         whole programs, nothing stored (KILN_DEBUG_ONE_KERNEL=0):
 *                 the cold figure before kiln stored on PoCL by default
 *   sync          stores on the calling thread (KILN_DEBUG_STORE_BG=0)
 *
 * --demo runs kiln demo's op-by-op chain instead (seven elementwise kernels,
 * where and two casts, N = 4096): the workload of many kernels of one source,
 * where one-kernel programs cost most.
 *
 * usage: cache_first_result [--runs N] [--device SELECTOR] [--demo] [--json]
 */
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kiln.h"

extern char **environ;

static double
now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------ child */

/* kiln demo's chain op by op (tools/cmd_demo.c) on x; checks y against the host. */
static int
demo_chain(kiln_context *ctx, kiln_tensor *tx, const float *x, int n, double *t_ew)
{
  kiln_tensor *t1 = NULL, *t2 = NULL, *t3 = NULL, *pos = NULL, *zero = NULL, *relu = NULL,
              *y = NULL, *y64 = NULL, *yb = NULL;
  int ok = kiln_binary_scalar(ctx, KILN_OP_MUL, tx, kiln_scalar_f64(2.0), 0, &t1) == KILN_OK &&
           kiln_binary_scalar(ctx, KILN_OP_ADD, t1, kiln_scalar_f64(1.0), 0, &t1) == KILN_OK &&
           kiln_unary(ctx, KILN_OP_SIGMOID, t1, &t2) == KILN_OK &&
           kiln_unary(ctx, KILN_OP_COS, tx, &t3) == KILN_OK &&
           kiln_binary(ctx, KILN_OP_MUL, t2, t3, &t2) == KILN_OK &&
           kiln_binary_scalar(ctx, KILN_OP_GT, tx, kiln_scalar_f64(0.0), 0, &pos) == KILN_OK &&
           kiln_tensor_zeros(ctx, KILN_F32, 0, NULL, &zero) == KILN_OK &&
           kiln_where(ctx, pos, tx, zero, &relu) == KILN_OK &&
           kiln_binary(ctx, KILN_OP_SUB, t2, relu, &y) == KILN_OK &&
           kiln_context_finish(ctx) == KILN_OK;
  *t_ew = now();
  ok = ok && kiln_cast(ctx, y, KILN_F64, &y64) == KILN_OK &&
       kiln_cast(ctx, y64, KILN_F32, &yb) == KILN_OK;
  static float got[4096];
  ok = ok && n <= 4096 && kiln_tensor_download(yb, got, (size_t)n * sizeof *got) == KILN_OK;
  for (int i = 0; ok && i < n; i++) {
    float want = 1.0f / (1.0f + expf(-(2.0f * x[i] + 1.0f))) * cosf(x[i]) - (x[i] > 0 ? x[i] : 0);
    ok = fabsf(got[i] - want) <= 1e-5f * (1.0f + fabsf(want));
  }
  kiln_tensor *all[] = {t1, t2, t3, pos, zero, relu, y, y64, yb};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    kiln_tensor_release(all[i]);
  return ok;
}

static int
child(const char *device, double spawned, int demo)
{
  double t0 = now();
  kiln_context *ctx = NULL;
  if (kiln_context_create(device && *device ? device : NULL, &ctx) != KILN_OK) {
    fprintf(stderr, "child: %s\n", kiln_last_error());
    return 2;
  }
  double t_ctx = now();
  enum { N = 4096 };
  static float x[N], y[N];
  static int32_t z[N];
  for (int i = 0; i < N; i++)
    x[i] = (float)(i % 97) / 16.0f - 3.0f;
  int64_t shape[1] = {N};
  kiln_tensor *tx = NULL, *ty = NULL, *tz = NULL;
  if (demo) {
    double t_ew = 0;
    int good = kiln_tensor_from_host(ctx, KILN_F32, 1, shape, x, &tx) == KILN_OK &&
               demo_chain(ctx, tx, x, N, &t_ew);
    double t_end = now();
    if (!good) {
      fprintf(stderr, "child: wrong result or failure: %s\n", kiln_last_error());
      return 3;
    }
    kiln_cache_stats s;
    kiln_context_cache_stats(ctx, &s);
    kiln_tensor_release(tx);
    kiln_context_release(ctx);
    printf("result_ms=%.3f ctx_ms=%.3f exp_ms=%.3f cast_ms=%.3f hits=%llu misses=%llu "
           "stores=%llu\n",
           (t_end - spawned) * 1e3, (t_ctx - t0) * 1e3, (t_ew - t_ctx) * 1e3, (t_end - t_ew) * 1e3,
           (unsigned long long)s.session.hits, (unsigned long long)s.session.misses,
           (unsigned long long)s.session.stores);
    return 0;
  }
  int ok = kiln_tensor_from_host(ctx, KILN_F32, 1, shape, x, &tx) == KILN_OK &&
           kiln_unary(ctx, KILN_OP_EXP, tx, &ty) == KILN_OK &&
           kiln_tensor_download(ty, y, sizeof y) == KILN_OK;
  double t_exp = now();
  ok = ok && kiln_cast(ctx, tx, KILN_I32, &tz) == KILN_OK &&
       kiln_tensor_download(tz, z, sizeof z) == KILN_OK;
  double t_cast = now();
  for (int i = 0; ok && i < N; i++)
    ok = fabsf(y[i] - expf(x[i])) <= 1e-5f * expf(x[i]) && z[i] == (int32_t)x[i];
  if (!ok) {
    fprintf(stderr, "child: wrong result or failure: %s\n", kiln_last_error());
    return 3;
  }
  kiln_cache_stats s;
  kiln_context_cache_stats(ctx, &s);
  kiln_tensor_release(tx);
  kiln_tensor_release(ty);
  kiln_tensor_release(tz);
  kiln_context_release(ctx);
  printf("result_ms=%.3f ctx_ms=%.3f exp_ms=%.3f cast_ms=%.3f hits=%llu misses=%llu stores=%llu\n",
         (t_cast - spawned) * 1e3, (t_ctx - t0) * 1e3, (t_exp - t_ctx) * 1e3, (t_cast - t_exp) * 1e3,
         (unsigned long long)s.session.hits, (unsigned long long)s.session.misses,
         (unsigned long long)s.session.stores);
  return 0;
}

/* ------------------------------------------------------------ parent */

struct sample {
  double wall_ms, result_ms, ctx_ms, exp_ms, cast_ms;
  unsigned long long hits, misses, stores;
};

static const char *self_path, *device_sel;
static int demo_mode;

/* Runs one child with the environment overrides (NAME=VALUE); 0 on success. */
static int
run(char *const *env_over, int nover, struct sample *s)
{
  size_t ne = 0;
  while (environ[ne])
    ne++;
  char **envp = calloc(ne + (size_t)nover + 1, sizeof *envp);
  size_t k = 0;
  for (size_t i = 0; i < ne; i++) {
    int drop = 0;
    for (int j = 0; j < nover; j++)
      drop |= strncmp(environ[i], env_over[j], strcspn(env_over[j], "=") + 1) == 0;
    if (!drop)
      envp[k++] = environ[i];
  }
  for (int j = 0; j < nover; j++)
    envp[k++] = env_over[j];
  int fd[2];
  if (pipe(fd) != 0)
    return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
  posix_spawn_file_actions_addclose(&fa, fd[0]);
  /* CLOCK_MONOTONIC is system-wide: the child measures from this instant. */
  char when[64];
  double t0 = now();
  snprintf(when, sizeof when, "%.9f", t0);
  char *argv[] = {(char *)self_path, "--child", (char *)(device_sel ? device_sel : ""), when,
                  demo_mode ? "demo" : NULL, NULL};
  pid_t pid;
  int rc = posix_spawn(&pid, self_path, &fa, NULL, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  free(envp);
  close(fd[1]);
  char out[512] = "";
  size_t got = 0;
  ssize_t r;
  while (rc == 0 && got < sizeof out - 1 && (r = read(fd[0], out + got, sizeof out - 1 - got)) > 0)
    got += (size_t)r;
  out[got] = 0;
  close(fd[0]);
  int status = 0;
  if (rc == 0)
    waitpid(pid, &status, 0);
  s->wall_ms = (now() - t0) * 1e3;
  if (rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return -1;
  return sscanf(out, "result_ms=%lf ctx_ms=%lf exp_ms=%lf cast_ms=%lf hits=%llu misses=%llu stores=%llu",
                &s->result_ms, &s->ctx_ms, &s->exp_ms, &s->cast_ms, &s->hits, &s->misses,
                &s->stores) == 7
             ? 0
             : -1;
}

static int
cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct result {
  const char *name;
  double result, wall, ctx, exp, cast, min, max;
};

static char kroot[64], proot[64];

static int
summarise(struct result *res, const char *name, struct sample *s, int n)
{
  double w[64], c[64], e[64], k[64], f[64];
  for (int i = 0; i < n; i++) {
    f[i] = s[i].result_ms;
    w[i] = s[i].wall_ms;
    c[i] = s[i].ctx_ms;
    e[i] = s[i].exp_ms;
    k[i] = s[i].cast_ms;
  }
  res->name = name;
  res->wall = median(w, n);
  res->result = median(f, n);
  res->min = f[0];
  res->max = f[n - 1];
  res->ctx = median(c, n);
  res->exp = median(e, n);
  res->cast = median(k, n);
  return 0;
}

static void
cleanup(void)
{
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", kroot, proot);
  if (system(cmd) != 0)
    fprintf(stderr, "cannot remove %s and %s\n", kroot, proot);
}

int
main(int argc, char **argv)
{
  if (argc >= 4 && strcmp(argv[1], "--child") == 0)
    return child(argv[2], strtod(argv[3], NULL), argc >= 5 && strcmp(argv[4], "demo") == 0);
  int runs = 7, json = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
      device_sel = argv[++i];
    else if (strcmp(argv[i], "--json") == 0)
      json = 1;
    else if (strcmp(argv[i], "--demo") == 0)
      demo_mode = 1;
    else {
      fprintf(stderr, "usage: %s [--runs N] [--device SELECTOR] [--demo] [--json]\n", argv[0]);
      return 2;
    }
  }
  if (runs < 1 || runs > 64) {
    fprintf(stderr, "--runs must be 1..64\n");
    return 2;
  }
  static char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return 1;
  self[n] = 0;
  self_path = self;
  snprintf(kroot, sizeof kroot, "/tmp/kiln-cfr-k-XXXXXX");
  snprintf(proot, sizeof proot, "/tmp/kiln-cfr-p-XXXXXX");
  if (!mkdtemp(kroot) || !mkdtemp(proot))
    return 1;

  char kc[128], pc[128], kcold[128], pcold[128];
  snprintf(kc, sizeof kc, "KILN_CACHE_DIR=%s/warm", kroot);
  snprintf(pc, sizeof pc, "POCL_CACHE_DIR=%s/warm", proot);
  char *pocl_off = "POCL_KERNEL_CACHE=0", *pocl_on = "POCL_KERNEL_CACHE=1";
  char *cuda_off = "CUDA_CACHE_DISABLE=1", *cuda_on = "CUDA_CACHE_DISABLE=0";
  char *kiln_off = "KILN_CACHE=off", *kiln_on = "KILN_CACHE=on";
  char *store_auto = "KILN_CACHE_STORE=auto";
  struct sample s[64], sw[64], ss[64], fill[1];
  struct result res[6];
  int rc = 0;

  /* cold: fresh directories for every sample; each next to a whole-program and a
     store-on-the-calling-thread sample, so that the three see the same load */
  char *whole = "KILN_DEBUG_ONE_KERNEL=0", *one_auto = "KILN_DEBUG_ONE_KERNEL=";
  char *bg_auto = "KILN_DEBUG_STORE_BG=", *bg_off = "KILN_DEBUG_STORE_BG=0";
  for (int i = 0; i < runs && !rc; i++) {
    for (int m = 0; m < 3 && !rc; m++) {
      snprintf(kcold, sizeof kcold, "KILN_CACHE_DIR=%s/cold%d-%d", kroot, i, m);
      snprintf(pcold, sizeof pcold, "POCL_CACHE_DIR=%s/cold%d-%d", proot, i, m);
      char *ov[] = {kcold, pcold, pocl_on, cuda_on, kiln_on, store_auto,
                    m == 1 ? whole : one_auto, m == 2 ? bg_off : bg_auto};
      struct sample *to = m == 0 ? &s[i] : m == 1 ? &sw[i] : &ss[i];
      rc = run(ov, 8, to) || to->hits != 0;
    }
  }
  if (!rc) {
    summarise(&res[0], "cold", s, runs);
    summarise(&res[4], "whole", sw, runs);
    summarise(&res[5], "sync", ss, runs);
  }

  /* filling kiln's cache: a first run with default settings, once */
  char pfill[128];
  snprintf(pfill, sizeof pfill, "POCL_CACHE_DIR=%s/fill", proot);
  char *fill_ov[] = {kc, pfill, pocl_on, cuda_on, kiln_on, store_auto};
  if (!rc)
    rc = run(fill_ov, 6, &fill[0]) || fill[0].stores < 2;

  /* kiln warm, driver cache off */
  char *kiln_ov[] = {kc, pc, pocl_off, cuda_off, kiln_on, store_auto};
  for (int i = 0; i < runs && !rc; i++) {
    rc = run(kiln_ov, 6, &s[i]) || s[i].misses != 0;
    if (rc)
      fprintf(stderr, "warm kiln sample missed (%llu misses)\n", s[i].misses);
  }
  if (!rc)
    summarise(&res[2], "kiln", s, runs);

  /* driver cache only: kiln off, driver cache warmed by one unmeasured run */
  char pdrv[128];
  snprintf(pdrv, sizeof pdrv, "POCL_CACHE_DIR=%s/driver", proot);
  char *drv_ov[] = {kc, pdrv, pocl_on, cuda_on, kiln_off, store_auto};
  struct sample warmup;
  if (!rc)
    rc = run(drv_ov, 6, &warmup);
  for (int i = 0; i < runs && !rc; i++)
    rc = run(drv_ov, 6, &s[i]);
  if (!rc)
    summarise(&res[1], "driver", s, runs);

  /* both warm: the driver cache is warmed by one unmeasured run over kiln's warm entries */
  char *both_ov[] = {kc, pc, pocl_on, cuda_on, kiln_on, store_auto};
  if (!rc)
    rc = run(both_ov, 6, &warmup);
  for (int i = 0; i < runs && !rc; i++)
    rc = run(both_ov, 6, &s[i]) || s[i].misses != 0;
  if (!rc)
    summarise(&res[3], "both", s, runs);
  cleanup();
  if (rc) {
    fprintf(stderr, "a sample failed\n");
    return 1;
  }

  kiln_device_info info;
  size_t count = 0, def = 0;
  kiln_device_list(NULL, 0, &count, &def);
  kiln_device_info *all = calloc(count ? count : 1, sizeof *all);
  kiln_device_list(all, count, &count, &def);
  info = count && def < count ? all[def] : (kiln_device_info){0};
  free(all);
  static const char *const labels[6] = {
      "cold (empty kiln and driver caches)", "driver cache only (kiln cache off)",
      "kiln cache warm, driver cache off", "kiln cache and driver cache warm",
      "cold, whole programs, nothing stored", "cold, storing on the calling thread"};
  if (json) {
    printf("{\n  \"device\": \"%s\",\n  \"driver\": \"%s\",\n  \"runs\": %d,\n", info.name,
           info.driver_version, runs);
    printf("  \"fill_ms\": %.1f,\n  \"modes\": {\n", fill[0].result_ms);
    for (int m = 0; m < 6; m++)
      printf("    \"%s\": {\"result_ms\": %.2f, \"min_ms\": %.2f, \"max_ms\": %.2f, "
             "\"process_ms\": %.2f, \"context_ms\": %.2f, \"first_exp_ms\": %.2f, "
             "\"first_cast_ms\": %.2f}%s\n",
             res[m].name, res[m].result, res[m].min, res[m].max, res[m].wall, res[m].ctx,
             res[m].exp, res[m].cast, m < 5 ? "," : "");
    printf("  }\n}\n");
    return 0;
  }
  printf("device: %s (%s, driver %s)\n", info.name, info.platform_name, info.driver_version);
  printf("time to first result of a new process (%s), median of %d:\n\n",
         demo_mode ? "kiln demo's chain op by op, 4096 f32" : "exp over f32 + cast f32->i32", runs);
  printf("  %-38s %9s %9s %9s %9s %9s %9s  %s\n", "mode", "result", "min-max", "context",
         "exp", "cast", "process", "vs cold");
  for (int m = 0; m < 6; m++)
    printf("  %-38s %7.1fms %4.0f-%-4.0f %7.1fms %7.1fms %7.1fms %7.1fms  %5.1fx\n", labels[m],
           res[m].result, res[m].min, res[m].max, res[m].ctx, res[m].exp, res[m].cast, res[m].wall,
           res[0].result / res[m].result);
  printf("\n  filling kiln's cache once (default settings, empty caches): %.1f ms to "
         "the result, %.1f ms in all\n",
         fill[0].result_ms, fill[0].wall_ms);
  printf("  to the result, driver cache only / kiln warm: %.2fx; driver cache only / both warm: "
         "%.2fx\n",
         res[1].result / res[2].result, res[1].result / res[3].result);
  printf("  first run against whole programs storing nothing: %.2fx to the result, %.2fx in all "
         "(storing on the calling thread: %.2fx, %.2fx)\n",
         res[0].result / res[4].result, res[0].wall / res[4].wall, res[5].result / res[4].result,
         res[5].wall / res[4].wall);
  return 0;
}
