/*
 * A small real pipeline: y = sigmoid(2x + 1) * cos(x) - where(x > 0, x, 0),
 * then a cast to f64 and back, checked element by element against the host.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"
#include "tools/commands.h"

static const char usage[] =
    "usage: kiln demo [--size N]\n\n"
    "Runs y = sigmoid(2x + 1) * cos(x) - relu(x) on N f32 elements (0 to 2^40; k/M suffixes\n"
    "and 2^N accepted; default 1048576) on the default device (KILN_DEVICE selects another),\n"
    "prints the device, the time of each phase and the largest difference from a host\n"
    "computation, then runs the same chain as one fused expression (kiln_expr) and prints\n"
    "its timing and check too. Exit status 1 if the results disagree or the device cannot hold N elements,\n"
    "2 for a usage error.\n";

#define CHECK(call)                                                                            \
  do {                                                                                         \
    kiln_status s_ = (call);                                                                   \
    if (s_ != KILN_OK) {                                                                       \
      fprintf(stderr, "kiln demo: %s: %s\n", kiln_status_name(s_), kiln_last_error());         \
      goto done;                                                                               \
    }                                                                                          \
  } while (0)

int
cmd_demo(int argc, char **argv)
{
  if (tool_wants_help(argc, argv, usage))
    return 0;
  int64_t n = 1 << 20;
  for (int i = 1; i < argc; i++) {
    const char *v;
    int r = tool_opt_value("demo", argc, argv, &i, "--size", &v);
    if (r < 0)
      return 2;
    if (r == 0)
      return tool_usage_error("demo", "unexpected argument '%s'", argv[i]);
    if (tool_parse_count(v, 0, TOOL_MAX_COUNT, &n) != 0)
      return tool_usage_error("demo",
                              "--size: bad count '%s' (N, Nk, NM or 2^N: a whole count "
                              "from 0 to 2^40)",
                              v);
  }
  int rc = 1;
  kiln_context *ctx = NULL;
  kiln_tensor *x = NULL, *t1 = NULL, *t2 = NULL, *t3 = NULL, *zero = NULL, *pos = NULL, *relu = NULL,
              *y = NULL, *y64 = NULL, *yback = NULL;
  float *hx = NULL, *hy = NULL;
  kiln_expr *fexpr = NULL;
  kiln_expr_plan *fplan = NULL;
  kiln_tensor *fy = NULL;

  double t0 = tool_now();
  CHECK(kiln_context_create(NULL, &ctx));
  kiln_device_info info;
  kiln_context_device_info(ctx, &info);
  double t_ctx = tool_now();
  printf("device:  %s (%s, driver %s)\n", info.name, info.platform_name, info.driver_version);

  /* The device tensor first: the library checks the size against the device's largest
     allocation before the host buffers (two of n floats; n <= 2^40 cannot overflow) exist. */
  int64_t shape[1] = {n};
  CHECK(kiln_tensor_create(ctx, KILN_F32, 1, shape, &x));
  size_t bytes = (size_t)n * sizeof *hx;
  hx = malloc(bytes + 1);
  hy = malloc(bytes + 1);
  if (!hx || !hy) {
    fprintf(stderr, "kiln demo: --size %lld: cannot allocate 2 x %zu bytes of host memory\n",
            (long long)n, bytes);
    goto done;
  }
  for (int64_t i = 0; i < n; i++)
    hx[i] = (float)(((double)i / (double)(n ? n : 1)) * 8.0 - 4.0);
  CHECK(kiln_tensor_upload(x, hx, bytes));
  double t_start = tool_now(); /* the host setup is not part of the first pass */
  CHECK(kiln_binary_scalar(ctx, KILN_OP_MUL, x, kiln_scalar_f64(2.0), 0, &t1));
  CHECK(kiln_binary_scalar(ctx, KILN_OP_ADD, t1, kiln_scalar_f64(1.0), 0, &t1));
  CHECK(kiln_unary(ctx, KILN_OP_SIGMOID, t1, &t2));
  CHECK(kiln_unary(ctx, KILN_OP_COS, x, &t3));
  CHECK(kiln_binary(ctx, KILN_OP_MUL, t2, t3, &t2));
  CHECK(kiln_binary_scalar(ctx, KILN_OP_GT, x, kiln_scalar_f64(0.0), 0, &pos));
  CHECK(kiln_tensor_zeros(ctx, KILN_F32, 0, NULL, &zero));
  CHECK(kiln_where(ctx, pos, x, zero, &relu));
  CHECK(kiln_binary(ctx, KILN_OP_SUB, t2, relu, &y));
  if (info.has_fp64) {
    CHECK(kiln_cast(ctx, y, KILN_F64, &y64));
    CHECK(kiln_cast(ctx, y64, KILN_F32, &yback));
  }
  CHECK(kiln_tensor_download(yback ? yback : y, hy, (size_t)n * sizeof *hy));
  double t_first = tool_now();

  /* Second pass: programs are built and buffers pooled, so this is the steady state. */
  CHECK(kiln_binary_scalar(ctx, KILN_OP_MUL, x, kiln_scalar_f64(2.0), 0, &t1));
  CHECK(kiln_binary_scalar(ctx, KILN_OP_ADD, t1, kiln_scalar_f64(1.0), 0, &t1));
  CHECK(kiln_unary(ctx, KILN_OP_SIGMOID, t1, &t2));
  CHECK(kiln_unary(ctx, KILN_OP_COS, x, &t3));
  CHECK(kiln_binary(ctx, KILN_OP_MUL, t2, t3, &t2));
  CHECK(kiln_where(ctx, pos, x, zero, &relu));
  CHECK(kiln_binary(ctx, KILN_OP_SUB, t2, relu, &y));
  CHECK(kiln_context_finish(ctx));
  double t_second = tool_now();

  double maxerr = 0;
  long long bad = 0;
  for (long long i = 0; i < n; i++) {
    double v = hx[i];
    double ref = 1.0 / (1.0 + exp(-(2.0 * v + 1.0))) * cos(v) - (v > 0 ? v : 0);
    double err = fabs(hy[i] - ref);
    if (err > maxerr)
      maxerr = err;
    if (!(err <= 1e-5 + 1e-5 * fabs(ref)))
      bad++;
  }
  printf("computed y = sigmoid(2x + 1) * cos(x) - relu(x) on %lld f32 elements%s\n", (long long)n,
         yback ? ", round trip through f64" : "");
  if (n > 0)
    printf("samples: y(%g) = %.6f, y(%g) = %.6f, y(%g) = %.6f\n", hx[0], hy[0], hx[n / 2],
           hy[n / 2], hx[n - 1], hy[n - 1]);
  printf("timing:  context %.1f ms, first pass (compiles kernels) %.1f ms, second pass %.2f ms\n",
         (t_ctx - t0) * 1e3, (t_first - t_start) * 1e3, (t_second - t_first) * 1e3);
  printf("check:   max |device - host| = %.3g, %lld of %lld elements outside tolerance: %s\n",
         maxerr, bad, (long long)n, bad ? "FAILED" : "ok");
  rc = bad ? 1 : 0;
  /* The same chain as one fused expression (docs/expr.md): one kernel, one launch a pass. */
  {
    kiln_expr_var var = {"x", KILN_F32, 0};
    const kiln_tensor *in[1] = {x};
    double f0 = tool_now();
    CHECK(kiln_expr_parse(info.has_fp64 ? "y = f32(f64(sigmoid(2*x + 1) * cos(x) - relu(x)))"
                                        : "y = sigmoid(2*x + 1) * cos(x) - relu(x)",
                          &var, 1, &fexpr));
    CHECK(kiln_expr_plan_create(ctx, fexpr, in, 1, &fplan));
    CHECK(kiln_expr_plan_run(fplan, in, 1, NULL, 0, &fy, 1));
    CHECK(kiln_tensor_download(fy, hy, (size_t)n * sizeof *hy));
    double f1 = tool_now();
    CHECK(kiln_expr_plan_run(fplan, in, 1, NULL, 0, &fy, 1));
    CHECK(kiln_context_finish(ctx));
    double f2 = tool_now();
    double fmax = 0;
    long long fbad = 0;
    for (long long i = 0; i < n; i++) {
      double v = hx[i];
      double ref = 1.0 / (1.0 + exp(-(2.0 * v + 1.0))) * cos(v) - (v > 0 ? v : 0);
      double err = fabs(hy[i] - ref);
      if (err > fmax)
        fmax = err;
      if (!(err <= 1e-5 + 1e-5 * fabs(ref)))
        fbad++;
    }
    printf("fused:   the same chain as one kernel: first pass (plans and compiles) %.1f ms, "
           "second pass %.2f ms\n",
           (f1 - f0) * 1e3, (f2 - f1) * 1e3);
    printf("check:   max |device - host| = %.3g, %lld of %lld elements outside tolerance: %s\n",
           fmax, fbad, (long long)n, fbad ? "FAILED" : "ok");
    if (fbad)
      rc = 1;
  }
done:;
  kiln_expr_plan_release(fplan);
  kiln_expr_release(fexpr);
  kiln_tensor_release(fy);
  kiln_tensor *all[] = {x, t1, t2, t3, zero, pos, relu, y, y64, yback};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    kiln_tensor_release(all[i]);
  kiln_context_release(ctx);
  free(hx);
  free(hy);
  return rc;
}
