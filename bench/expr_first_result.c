/*
 * Time to first result of a fused expression in a warm process (docs/expr.md).
 *
 * The process creates its context and runs one elementwise op and one fused expression
 * first, so that the driver, kiln's program registry and the expression code are all up.
 * Then, for each of --reps expressions that this process has not seen (the demo's chain
 * plus r extra terms, so each is a new kernel), it times parse + plan + run + download of
 * --size f32 elements, and says whether the kernel came from kiln's disk cache (a hit) or
 * was compiled (a miss), from the context's cache counters. Run it twice with the same
 * KILN_CACHE_DIR: the first run compiles (and stores), the second shows the disk hits.
 *
 * usage: expr_first_result [--size N] [--reps R] [--device SELECTOR]
 * Prints one line per expression and the medians of each kind.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln.h"

static double
now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int
cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
  if (n == 0)
    return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define CHECK(call)                                                                            \
  do {                                                                                         \
    kiln_status s_ = (call);                                                                   \
    if (s_ != KILN_OK) {                                                                       \
      fprintf(stderr, "expr_first_result: %s: %s\n", #call, kiln_last_error());               \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)

int
main(int argc, char **argv)
{
  int64_t n = 1 << 20;
  int reps = 9;
  const char *device = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--size") && i + 1 < argc)
      n = strtoll(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--device") && i + 1 < argc)
      device = argv[++i];
    else {
      fprintf(stderr, "usage: expr_first_result [--size N] [--reps R] [--device SELECTOR]\n");
      return 2;
    }
  }
  if (reps < 1 || reps > 64 || n < 1) {
    fprintf(stderr, "expr_first_result: --reps 1..64 and --size >= 1\n");
    return 2;
  }
  kiln_context *ctx;
  CHECK(kiln_context_create(device, &ctx));
  kiln_device_info info;
  CHECK(kiln_context_device_info(ctx, &info));
  float *h = malloc((size_t)n * sizeof *h);
  if (!h)
    return 1;
  for (int64_t i = 0; i < n; i++)
    h[i] = (float)((double)i / (double)n * 8.0 - 4.0);
  kiln_tensor *x = NULL, *w = NULL;
  CHECK(kiln_tensor_from_host(ctx, KILN_F32, 1, &n, h, &x));
  /* warm-up: an op of the elementwise family and a fused expression */
  CHECK(kiln_unary(ctx, KILN_OP_EXP, x, &w));
  kiln_expr_var var = {"x", KILN_F32, 0};
  kiln_expr *e;
  CHECK(kiln_expr_parse("y = x * 3 - 1", &var, 1, &e));
  const kiln_tensor *in[1] = {x};
  CHECK(kiln_expr_eval(ctx, e, in, 1, NULL, 0, &w, 1));
  CHECK(kiln_context_finish(ctx));
  kiln_expr_release(e);
  printf("device: %s (%s, driver %s); %lld f32 elements\n", info.name, info.platform_name,
         info.driver_version, (long long)n);

  double hit[64], miss[64];
  int nhit = 0, nmiss = 0;
  for (int r = 0; r < reps; r++) {
    char text[1024] = "y = sigmoid(2*x + 1) * cos(x) - relu(x)";
    for (int k = 0; k <= r; k++)
      strncat(text, " + x", sizeof text - strlen(text) - 1);
    kiln_cache_stats before, after;
    CHECK(kiln_context_cache_stats(ctx, &before));
    kiln_tensor *y = NULL;
    kiln_expr_plan *p = NULL;
    double t0 = now();
    CHECK(kiln_expr_parse(text, &var, 1, &e));
    CHECK(kiln_expr_plan_create(ctx, e, in, 1, &p));
    CHECK(kiln_expr_plan_run(p, in, 1, NULL, 0, &y, 1));
    CHECK(kiln_tensor_download(y, h, (size_t)n * sizeof *h));
    double t = (now() - t0) * 1e3;
    CHECK(kiln_context_cache_stats(ctx, &after));
    int was_hit = after.session.hits > before.session.hits;
    const double v = -4.0; /* x[0] */
    double want = 1.0 / (1.0 + exp(-(2 * v + 1))) * cos(v) - 0.0 + (r + 1) * v;
    if (fabs(h[0] - want) > 1e-4 * (1 + fabs(want))) {
      fprintf(stderr, "expr_first_result: wrong result %g (want %g)\n", h[0], want);
      return 1;
    }
    printf("expression %2d (%d extra terms): %8.2f ms  %s\n", r, r + 1, t,
           was_hit ? "disk cache hit" : "compiled");
    if (was_hit)
      hit[nhit++] = t;
    else
      miss[nmiss++] = t;
    kiln_tensor_release(y);
    kiln_expr_plan_release(p);
    kiln_expr_release(e);
  }
  printf("median time to first result: %.2f ms with a disk cache hit (%d), %.2f ms compiling "
         "(%d)\n",
         median(hit, nhit), nhit, median(miss, nmiss), nmiss);
  kiln_tensor_release(x);
  kiln_tensor_release(w);
  kiln_context_release(ctx);
  free(h);
  return 0;
}
