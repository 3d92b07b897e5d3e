/*
 * kiln bench: times every case in tools/bench_cases.c per dtype and size with
 * OpenCL profiling events and the wall clock, and reports each next to the
 * best plain copy kernel measured on the same device in the same run.
 */
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/bench.h"
#include "tools/commands.h"
#include "tools/json.h"

extern char **environ;

static const char usage[] =
    "usage: kiln bench [options]\n\n"
    "Times kiln's operations (device time from OpenCL profiling events, and wall time) and\n"
    "reports medians, spread, effective GB/s and the ratio to the best plain copy kernel on the\n"
    "same device in the same run. Also: per-op dispatch overhead and time to first result of\n"
    "a new process with cold and warm caches.\n\n"
    "options:\n"
    "  --filter SUBSTR    only cases whose name contains SUBSTR (e.g. unary, binary.add);\n"
    "                     a comma-separated list takes the cases that match any of them\n"
    "  --sizes LIST       element counts, comma separated; k/M suffixes and 2^N accepted\n"
    "                     (default 2^10,2^14,2^18,2^22,2^26)\n"
    "  --dtype LIST       dtypes, comma separated: f32, f64, f16, bf16, c64, c128, i32, i64,\n"
    "                     u8, bool (default f32,f64). A case that does not take a dtype (or a\n"
    "                     device without fp64 for f64 and c128) is skipped with a note, and\n"
    "                     is an error when --filter names that one case exactly\n"
    "  --device SEL       device selector as KILN_DEVICE takes it (P:D or name substring)\n"
    "  --reps N           timed runs per point (default: adaptive, 5 to 50)\n"
    "  --json             one JSON document on stdout instead of the table\n"
    "  --no-startup       skip the dispatch-overhead and first-result measurements\n"
    "  --list             print the case names and their families and exit (JSON with --json)\n"
    "  --tune FAMILY:PARAMS  time with these tuner parameters of FAMILY for every dtype and\n"
    "                     size (kiln_tune_override), e.g. --tune 'linalg:route=2 nb=64';\n"
    "                     repeatable (up to 8; --override is the same option). A dtype the\n"
    "                     family does not tune runs with its own choice, with a note; a\n"
    "                     setting no dtype of the run accepts is an error\n\n"
    "GB/s counts bytes read plus written and is left out ('-') for compute-bound cases;\n"
    "GFLOP/s is shown for cases with a flop count (blas.*: 2 d^3 for a d x d x d GEMM,\n"
    "8 d^3 for blas.cgemm;\n"
    "fft.*: 5 n log2 n). For blas.* cases n is the element count of each square matrix\n"
    "(2^20 = 1024 x 1024); for fft.* the number of complex points of one transform.\n";

#define MAX_SIZES 32
#define MAX_DTYPES KILN_DTYPE_COUNT

struct options {
  const char *filter;
  int64_t sizes[MAX_SIZES];
  int nsizes;
  kiln_dtype dtypes[MAX_DTYPES];
  int ndtypes;
  int dtypes_given; /* --dtype was on the command line */
  const char *device;
  int reps;
  int json;
  int startup;
  int list;
  const char *tune[8]; /* --tune FAMILY:PARAMS */
  int ntune;
};

/* Whether case `name` passes --filter (NULL: all; a comma-separated list: any item). */
static int
filter_match(const char *filter, const char *name)
{
  if (!filter)
    return 1;
  for (const char *f = filter;;) {
    size_t len = strcspn(f, ",");
    for (const char *p = name; len && *p; p++)
      if (strncmp(p, f, len) == 0)
        return 1;
    if (!f[len])
      return 0;
    f += len + 1;
  }
}

static int
parse_options(int argc, char **argv, struct options *o)
{
  memset(o, 0, sizeof *o);
  o->startup = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    int r;
    if (strcmp(a, "--json") == 0) {
      o->json = 1;
    } else if (strcmp(a, "--no-startup") == 0) {
      o->startup = 0;
    } else if (strcmp(a, "--list") == 0) {
      o->list = 1;
    } else if ((r = tool_opt_value("bench", argc, argv, &i, "--filter", &v)) != 0) {
      if (r < 0)
        return -1;
      o->filter = v;
    } else if ((r = tool_opt_value("bench", argc, argv, &i, "--tune", &v)) != 0 ||
               (r = tool_opt_value("bench", argc, argv, &i, "--override", &v)) != 0) {
      const char *name = strncmp(a, "--tune", 6) == 0 ? "--tune" : "--override";
      if (r < 0)
        return -1;
      const char *colon = strchr(v, ':');
      if (!colon || colon == v || !colon[1] || strspn(colon + 1, " ") == strlen(colon + 1)) {
        /* an empty family or parameter list would time the defaults under the option's name */
        tool_usage_error("bench", "%s: '%s' is not FAMILY:PARAMS (e.g. 'reduce:wg_size=64')", name,
                         v);
        return -1;
      }
      if (o->ntune == (int)(sizeof o->tune / sizeof o->tune[0])) {
        tool_usage_error("bench", "%s: at most 8 settings", name);
        return -1;
      }
      o->tune[o->ntune++] = v;
    } else if ((r = tool_opt_value("bench", argc, argv, &i, "--device", &v)) != 0) {
      if (r < 0)
        return -1;
      o->device = v;
    } else if ((r = tool_opt_value("bench", argc, argv, &i, "--reps", &v)) != 0) {
      long reps;
      if (r < 0)
        return -1;
      if (tool_parse_int(v, 1, 100000, &reps) != 0) {
        tool_usage_error("bench", "--reps: bad count '%s' (a whole number from 1 to 100000)", v);
        return -1;
      }
      o->reps = (int)reps;
    } else if ((r = tool_opt_value("bench", argc, argv, &i, "--sizes", &v)) != 0) {
      if (r < 0 || (o->nsizes = tool_parse_counts("bench", "--sizes", v, o->sizes, MAX_SIZES)) < 0)
        return -1;
    } else if ((r = tool_opt_value("bench", argc, argv, &i, "--dtype", &v)) != 0) {
      if (r < 0 ||
          (o->ndtypes = tool_parse_dtypes("bench", "--dtype", v, o->dtypes, MAX_DTYPES)) < 0)
        return -1;
      o->dtypes_given = 1;
    } else {
      tool_usage_error("bench", "unexpected argument '%s'", a);
      return -1;
    }
  }
  if (!o->nsizes) {
    const int exps[] = {10, 14, 18, 22, 26};
    for (int i = 0; i < 5; i++)
      o->sizes[o->nsizes++] = (int64_t)1 << exps[i];
  }
  if (!o->ndtypes) {
    o->dtypes[o->ndtypes++] = KILN_F32;
    o->dtypes[o->ndtypes++] = KILN_F64;
  }
  return 0;
}

static int
cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

struct result {
  const char *name;
  kiln_dtype dtype;
  int64_t n;
  int reps;
  double dev_ms, wall_ms, spread_pct, gbps, copy_gbps, gflops; /* gbps/gflops < 0: not applicable */
  kiln_status status;
};

/* Device and wall medians over reps runs after a warm-up; spread is (p90 - p10) / median. */
static kiln_status
measure(const struct bench_case *c, struct bench_state *st, int fixed_reps, struct result *r)
{
  kiln_status s = c->setup(st);
  for (int w = 0; w < 2 && s == KILN_OK; w++)
    s = c->run(st);
  if (s == KILN_OK)
    s = kiln_context_finish(st->ctx);
  if (s != KILN_OK)
    return s;
  enum { MAXR = 50 };
  int cap = fixed_reps ? fixed_reps : MAXR;
  double *dev = calloc((size_t)cap, sizeof *dev), *wall = calloc((size_t)cap, sizeof *wall);
  if (!dev || !wall) {
    free(dev);
    free(wall);
    return KILN_ERR_HOST_MEMORY;
  }
  int n = 0;
  double spent = 0;
  /* Adaptive: at least 5 runs, more while the total stays under half a second. */
  while (n < cap && (fixed_reps || n < 5 || spent < 0.5)) {
    kiln_profile p;
    double t0 = tool_now();
    /* host-work cases report the wall time: kernel events would only add their cost */
    int prof = !bench_case_host_work(c);
    memset(&p, 0, sizeof p);
    s = prof ? kiln_profile_begin(st->ctx) : KILN_OK;
    if (s == KILN_OK)
      s = c->run(st);
    if (s == KILN_OK && prof)
      s = kiln_profile_end(st->ctx, &p);
    if (s == KILN_OK)
      s = kiln_context_finish(st->ctx); /* copies and fills are not kernel events */
    if (s != KILN_OK)
      break;
    double t1 = tool_now();
    wall[n] = (t1 - t0) * 1e3;
    /* Ops without kernels (buffer copies) have no kernel events: their time is the wall time. */
    dev[n] = p.kernels && !bench_case_host_work(c) ? (double)p.device_ns * 1e-6 : wall[n];
    spent += t1 - t0;
    n++;
  }
  if (s == KILN_OK && n > 0) {
    qsort(dev, (size_t)n, sizeof *dev, cmp_double);
    qsort(wall, (size_t)n, sizeof *wall, cmp_double);
    r->reps = n;
    r->dev_ms = dev[n / 2];
    r->wall_ms = wall[n / 2];
    r->spread_pct = r->dev_ms > 0 ? (dev[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1] - dev[n / 10]) /
                                        r->dev_ms * 100.0
                                  : 0;
    double t = r->dev_ms > 0 ? r->dev_ms : r->wall_ms;
    r->gbps = !c->bytes ? -1
              : t > 0   ? c->bytes(st->n, kiln_dtype_size(st->dtype)) / (t * 1e-3) * 1e-9
                        : 0;
    r->gflops = !c->flops ? -1 : t > 0 ? c->flops(st->n) / (t * 1e-3) * 1e-9 : 0;
  }
  free(dev);
  free(wall);
  return s;
}

/* Microseconds per op for a chain of tiny adds, enqueued back to back then finished. */
static double
dispatch_overhead(kiln_context *ctx)
{
  int64_t one = 1;
  kiln_tensor *a = NULL, *b = NULL;
  double best[5];
  int ok = kiln_tensor_zeros(ctx, KILN_F32, 1, &one, &a) == KILN_OK &&
           kiln_tensor_zeros(ctx, KILN_F32, 1, &one, &b) == KILN_OK;
  for (int rep = 0; rep < 5 && ok; rep++) {
    const int chain = 500;
    kiln_context_finish(ctx);
    double t0 = tool_now();
    for (int i = 0; i < chain && ok; i++)
      ok = kiln_binary(ctx, KILN_OP_ADD, a, b, &b) == KILN_OK;
    ok = ok && kiln_context_finish(ctx) == KILN_OK;
    best[rep] = (tool_now() - t0) / chain * 1e6;
  }
  kiln_tensor_release(a);
  kiln_tensor_release(b);
  if (!ok)
    return -1;
  qsort(best, 5, sizeof *best, cmp_double);
  return best[2];
}

/* Runs this binary as a child doing one elementwise op and one cast; returns wall seconds. */
static double
spawn_first_result(const char *self, const char *device, char **envp)
{
  char *args[] = {(char *)self, "bench", "--first-result-child", (char *)(device ? device : ""),
                  NULL};
  double t0 = tool_now();
  pid_t pid;
  if (posix_spawn(&pid, self, NULL, NULL, args, envp) != 0)
    return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  double t = tool_now() - t0;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? t : -1;
}

static int
first_result_child(const char *device)
{
  kiln_context *ctx = NULL;
  int64_t n = 1024;
  kiln_tensor *x = NULL, *y = NULL, *z = NULL;
  int32_t out[1024];
  int ok = kiln_context_create(device && *device ? device : NULL, &ctx) == KILN_OK &&
           kiln_tensor_full(ctx, KILN_F32, 1, &n, kiln_scalar_f64(1.5), &x) == KILN_OK &&
           kiln_unary(ctx, KILN_OP_EXP, x, &y) == KILN_OK &&
           kiln_cast(ctx, y, KILN_I32, &z) == KILN_OK &&
           kiln_tensor_download(z, out, sizeof out) == KILN_OK && out[0] == 4;
  if (!ok)
    fprintf(stderr, "kiln bench: first-result child failed: %s\n", kiln_last_error());
  kiln_tensor_release(x);
  kiln_tensor_release(y);
  kiln_tensor_release(z);
  kiln_context_release(ctx);
  return ok ? 0 : 1;
}

/* Environment for a child: ours plus the given overrides (NAME=VALUE), replacing same names. */
static char **
child_env(char *const *overrides, int n)
{
  size_t count = 0;
  while (environ[count])
    count++;
  char **env = calloc(count + (size_t)n + 1, sizeof *env);
  if (!env)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < count; i++) {
    int replaced = 0;
    for (int j = 0; j < n; j++) {
      size_t len = strcspn(overrides[j], "=") + 1;
      if (strncmp(environ[i], overrides[j], len) == 0)
        replaced = 1;
    }
    if (!replaced)
      env[k++] = environ[i];
  }
  for (int j = 0; j < n; j++)
    env[k++] = overrides[j];
  return env;
}

struct first_result {
  const char *mode;
  double median_ms;
};

static void
measure_first_result(const char *self, const char *device, struct first_result fr[3])
{
  char kdir[] = "/tmp/kiln-bench-kc-XXXXXX", pdir[] = "/tmp/kiln-bench-pc-XXXXXX";
  int have_dirs = mkdtemp(kdir) && mkdtemp(pdir);
  char kv[64], pv[64];
  snprintf(kv, sizeof kv, "KILN_CACHE_DIR=%s", kdir);
  snprintf(pv, sizeof pv, "POCL_CACHE_DIR=%s", pdir);
  /* cold: nothing cached anywhere (fresh kiln dir per run, driver caches off);
   * kiln: kiln's cache warm, driver caches off; all: both warm. */
  const char *modes[3] = {"cold", "warm kiln cache, driver cache off", "warm kiln + driver cache"};
  for (int m = 0; m < 3; m++) {
    double t[5];
    int n = 0;
    for (int r = 0; r < 5 && have_dirs; r++) {
      char cold[64];
      snprintf(cold, sizeof cold, "KILN_CACHE_DIR=%s/cold%d", kdir, r);
      /* The filling run must store: on PoCL kiln stores only when asked (docs/cache.md). */
      char *ov[] = {m == 0 ? cold : kv, pv, m == 2 ? "POCL_KERNEL_CACHE=1" : "POCL_KERNEL_CACHE=0",
                    m == 2 ? "CUDA_CACHE_DISABLE=0" : "CUDA_CACHE_DISABLE=1",
                    m == 0 ? "KILN_CACHE_STORE=auto" : "KILN_CACHE_STORE=always"};
      char **env = child_env(ov, 5);
      if (!env)
        break; /* out of memory: this mode reports no figure (-1) */
      if (m > 0 && r == 0)
        spawn_first_result(self, device, env); /* fills the caches this mode reads */
      double s = spawn_first_result(self, device, env);
      free(env);
      if (s > 0)
        t[n++] = s * 1e3;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    fr[m].mode = modes[m];
    fr[m].median_ms = n ? t[n / 2] : -1;
  }
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", kdir, pdir);
  if (have_dirs && system(cmd) != 0)
    fprintf(stderr, "kiln bench: could not remove %s\n", kdir);
}

static void
progress(int done, int total)
{
  if (!isatty(2))
    return;
  int w = 40, filled = total ? done * w / total : w;
  fprintf(stderr, "\r[%.*s%*s] %d/%d", filled, "########################################",
          w - filled, "", done, total);
  if (done == total)
    fprintf(stderr, "\r%*s\r", w + 20, "");
  fflush(stderr);
}

static const char *
fmt_size(int64_t n, char *buf, size_t len)
{
  int e = 0;
  while (e < 62 && ((int64_t)1 << e) < n)
    e++;
  if (n > 0 && ((int64_t)1 << e) == n)
    snprintf(buf, len, "2^%d", e);
  else
    snprintf(buf, len, "%lld", (long long)n);
  return buf;
}

/* A (case, dtype) pair that was not measured because the case or the device lacks the dtype. */
struct skipped {
  const char *name;
  kiln_dtype dtype;
  char why[160];
};

/*
 * Records that bc does not run dt: a note, or an error when the run asked
 * for exactly this case (--filter naming it) and this dtype (--dtype).
 * Returns 1 for an error.
 */
static int
skip_case(const struct options *o, const struct bench_case *bc, kiln_dtype dt, const char *why,
          struct skipped *sk, size_t *nsk)
{
  int explicit = o->dtypes_given && o->filter && strcmp(o->filter, bc->name) == 0;
  fprintf(stderr, "kiln bench: %s%s %s: %s\n", explicit ? "" : "note: skipped ", bc->name,
          kiln_dtype_name(dt), why);
  if (explicit)
    return 1;
  sk[*nsk].name = bc->name;
  sk[*nsk].dtype = dt;
  snprintf(sk[*nsk].why, sizeof sk[*nsk].why, "%s", why);
  (*nsk)++;
  return 0;
}

int
cmd_bench(int argc, char **argv)
{
  if (tool_wants_help(argc, argv, usage))
    return 0;
  if (argc >= 2 && strcmp(argv[1], "--first-result-child") == 0)
    return first_result_child(argc >= 3 ? argv[2] : NULL);
  struct options o;
  if (parse_options(argc, argv, &o) != 0)
    return 2;
  size_t matching = 0;
  for (size_t i = 0; i < bench_case_count; i++)
    matching += filter_match(o.filter, bench_cases[i].name);
  if (!matching)
    return tool_usage_error("bench",
                            "--filter: no case name contains '%s' (kiln bench --list "
                            "names them)",
                            o.filter);
  if (o.list) {
    /* with --json: {"cases": [{"name": ..., "family": ...}, ...]} (the names are identifiers) */
    int first = 1;
    if (o.json)
      printf("{\"cases\": [");
    for (size_t i = 0; i < bench_case_count; i++) {
      if (!filter_match(o.filter, bench_cases[i].name))
        continue;
      if (o.json)
        printf("%s\n  {\"name\": \"%s\", \"family\": \"%s\"}", first ? "" : ",",
               bench_cases[i].name, bench_cases[i].family);
      else
        printf("%-28s %s\n", bench_cases[i].name, bench_cases[i].family);
      first = 0;
    }
    if (o.json)
      printf("\n]}\n");
    return 0;
  }
  kiln_context *ctx = NULL;
  kiln_status cs = kiln_context_create(o.device, &ctx);
  if (cs != KILN_OK) {
    fprintf(stderr, "kiln bench: %s\n", kiln_last_error());
    return cs == KILN_ERR_INVALID_ARGUMENT ? 2 : 1; /* a malformed --device or KILN_DEVICE */
  }
  kiln_device_info info;
  kiln_context_device_info(ctx, &info);
  for (int t = 0; t < o.ntune; t++) {
    char fam[64];
    size_t len = strcspn(o.tune[t], ":");
    snprintf(fam, sizeof fam, "%.*s", (int)(len < sizeof fam ? len : sizeof fam - 1), o.tune[t]);
    int taken = 0;
    for (int d = 0; d < o.ndtypes; d++) {
      /* A family that does not tune this dtype refuses it: that dtype runs with the family's
       * own choice, which is what the run would do without the setting. */
      if (kiln_tune_override(ctx, fam, o.dtypes[d], NULL, o.tune[t] + len + 1) == KILN_OK)
        taken++;
      else
        fprintf(stderr, "kiln bench: note: --tune %s for %s: %s\n", o.tune[t],
                kiln_dtype_name(o.dtypes[d]), kiln_last_error());
    }
    if (!taken) {
      fprintf(stderr, "kiln bench: --tune %s: no dtype of the run accepts it\n", o.tune[t]);
      kiln_context_release(ctx);
      return 2;
    }
  }

  size_t cap = bench_case_count * (size_t)o.ndtypes * (size_t)o.nsizes;
  struct result *res = calloc(cap, sizeof *res);
  struct skipped *skipped = calloc(bench_case_count * (size_t)o.ndtypes + 1, sizeof *skipped);
  size_t nskipped = 0;
  if (!res || !skipped) {
    free(res);
    free(skipped);
    fprintf(stderr, "kiln bench: out of host memory\n");
    kiln_context_release(ctx);
    return 1;
  }
  size_t nres = 0;
  int total = 0, done = 0;
  for (size_t c = 0; c < bench_case_count; c++)
    if (filter_match(o.filter, bench_cases[c].name))
      total += o.ndtypes * o.nsizes;
  /* Copy reference per (dtype size, n): computed lazily, cached here (sizes 1 to 16 bytes). */
  double copy_cache[MAX_SIZES][17];
  memset(copy_cache, 0, sizeof copy_cache);
  int failures = 0;
  for (size_t c = 0; c < bench_case_count; c++) {
    const struct bench_case *bc = &bench_cases[c];
    if (!filter_match(o.filter, bc->name))
      continue;
    for (int d = 0; d < o.ndtypes; d++) {
      kiln_dtype dt = o.dtypes[d];
      int fp64 = dt == KILN_F64 || dt == KILN_C128;
      const char *why = !bc->supports(dt)          ? "the case does not take this dtype"
                        : fp64 && !info.has_fp64 ? "the device has no fp64"
                                                 : NULL;
      if (why) {
        failures += skip_case(&o, bc, dt, why, skipped, &nskipped);
        done += o.nsizes;
        progress(done, total);
        continue;
      }
      for (int si = 0; si < o.nsizes; si++, progress(++done, total)) {
        struct result *r = &res[nres++];
        r->name = bc->name;
        r->dtype = dt;
        r->n = o.sizes[si];
        struct bench_state st = {.ctx = ctx, .dtype = dt, .n = o.sizes[si]};
        r->status = measure(bc, &st, o.reps, r);
        bench_state_release(&st);
        kiln_pool_trim(ctx, 0);
        if (r->status == KILN_ERR_DTYPE) {
          /* The library's ops do not take the dtype (yet): a note for the pair, no failure. */
          nres--;
          failures += skip_case(&o, bc, dt, kiln_last_error(), skipped, &nskipped);
          done += o.nsizes - si - 1;
          break;
        }
        if (r->status != KILN_OK) {
          /* Host allocations in the tool fail without a library message. */
          fprintf(stderr, "kiln bench: %s %s n=%lld: %s\n", bc->name, kiln_dtype_name(dt),
                  (long long)r->n,
                  r->status == KILN_ERR_HOST_MEMORY ? "out of host memory" : kiln_last_error());
          failures++;
          continue;
        }
        size_t esz = kiln_dtype_size(dt);
        double *cc = &copy_cache[si][esz];
        if (!bc->bytes) {
          r->copy_gbps = -1; /* compute-bound: no bandwidth comparison */
          continue;
        }
        if (*cc == 0) {
          int width;
          if (bench_copy_reference(ctx, (uint64_t)r->n * esz, 9, cc, &width) != KILN_OK)
            *cc = -1;
        }
        r->copy_gbps = *cc;
      }
    }
  }

  double overhead = -1;
  struct first_result fr[3] = {{"cold", -1}, {"warm kiln cache, driver cache off", -1},
                               {"warm kiln + driver cache", -1}};
  if (o.startup) {
    overhead = dispatch_overhead(ctx);
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len > 0) {
      self[len] = 0;
      measure_first_result(self, o.device, fr);
    }
  }

  if (o.json) {
    /* the driver's strings escaped (a quote or backslash in a device name would end the
     * document's string early) */
    printf("{\n  \"kiln_version\": \"%s\",\n  \"device\": {\"name\": ", kiln_version());
    json_write_string(stdout, info.name);
    printf(", \"platform\": ");
    json_write_string(stdout, info.platform_name);
    printf(", \"driver\": ");
    json_write_string(stdout, info.driver_version);
    printf("},\n  \"results\": [\n");
    int first = 1;
    for (size_t i = 0; i < nres; i++) {
      struct result *r = &res[i];
      if (r->status != KILN_OK)
        continue;
      /* Figures that do not apply to a case are null. */
      char gb[32] = "null", cg[32] = "null", ratio[32] = "null", gf[32] = "null";
      if (r->gbps >= 0)
        snprintf(gb, sizeof gb, "%.3f", r->gbps);
      if (r->gbps >= 0 && r->copy_gbps >= 0) {
        snprintf(cg, sizeof cg, "%.3f", r->copy_gbps);
        snprintf(ratio, sizeof ratio, "%.4f", r->copy_gbps > 0 ? r->gbps / r->copy_gbps : 0.0);
      }
      if (r->gflops >= 0)
        snprintf(gf, sizeof gf, "%.3f", r->gflops);
      printf("%s    {\"case\": \"%s\", \"dtype\": \"%s\", \"n\": %lld, \"reps\": %d, "
             "\"device_ms\": %.6f, \"wall_ms\": %.6f, \"spread_pct\": %.2f, \"gbps\": %s, "
             "\"copy_gbps\": %s, \"ratio_to_copy\": %s, \"gflops\": %s}",
             first ? "" : ",\n", r->name, kiln_dtype_name(r->dtype), (long long)r->n, r->reps,
             r->dev_ms, r->wall_ms, r->spread_pct, gb, cg, ratio, gf);
      first = 0;
    }
    printf("\n  ],\n  \"skipped\": [");
    for (size_t i = 0; i < nskipped; i++) {
      printf("%s\n    {\"case\": \"%s\", \"dtype\": \"%s\", \"reason\": \"", i ? "," : "",
             skipped[i].name, kiln_dtype_name(skipped[i].dtype));
      for (const char *c = skipped[i].why; *c; c++) {
        if (*c == '"' || *c == '\\')
          putchar('\\');
        putchar((unsigned char)*c < 0x20 ? ' ' : *c);
      }
      printf("\"}");
    }
    printf("%s],\n  \"dispatch_us_per_op\": %.3f,\n  \"first_result_ms\": {",
           nskipped ? "\n  " : "", overhead);
    for (int m = 0; m < 3; m++)
      printf("%s\"%s\": %.2f", m ? ", " : "", fr[m].mode, fr[m].median_ms);
    printf("}\n}\n");
  } else {
    printf("kiln %s bench on %s (%s, driver %s)\n", kiln_version(), info.name, info.platform_name,
           info.driver_version);
    printf("device time: median of OpenCL profiling events; wall: median per call including "
           "launch and wait\n\n");
    printf("%-24s %-5s %6s %11s %11s %7s %9s %9s %6s %9s\n", "case", "dtype", "n", "device ms",
           "wall ms", "spread", "GB/s", "copy GB/s", "ratio", "GFLOP/s");
    for (size_t i = 0; i < nres; i++) {
      struct result *r = &res[i];
      if (r->status != KILN_OK)
        continue;
      char sz[32], gb[16] = "-", cg[16] = "-", ratio[16] = "-", gf[16] = "-";
      if (r->gbps >= 0)
        snprintf(gb, sizeof gb, "%.2f", r->gbps);
      if (r->gbps >= 0 && r->copy_gbps >= 0) {
        snprintf(cg, sizeof cg, "%.2f", r->copy_gbps);
        snprintf(ratio, sizeof ratio, "%.0f%%",
                 r->copy_gbps > 0 ? 100.0 * r->gbps / r->copy_gbps : 0.0);
      }
      if (r->gflops >= 0)
        snprintf(gf, sizeof gf, "%.2f", r->gflops);
      printf("%-24s %-5s %6s %11.4f %11.4f %6.1f%% %9s %9s %6s %9s\n", r->name,
             kiln_dtype_name(r->dtype), fmt_size(r->n, sz, sizeof sz), r->dev_ms, r->wall_ms,
             r->spread_pct, gb, cg, ratio, gf);
    }
    if (o.startup) {
      printf("\ndispatch overhead: %.2f us per op (chain of tiny adds, wall clock)\n", overhead);
      printf("time to first result of a new process (one exp + one cast, median of 5):\n");
      for (int m = 0; m < 3; m++)
        printf("  %-36s %9.1f ms\n", fr[m].mode, fr[m].median_ms);
    }
  }
  free(res);
  free(skipped);
  kiln_context_release(ctx);
  return failures ? 1 : 0;
}
