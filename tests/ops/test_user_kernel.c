/*
 * User kernels (include/kiln/kernel.h) and the runtime's text programs
 * (runtime/program_text.h) they are built on: every kind against a host
 * reference, the disk cache across processes, one build for many threads,
 * build errors with their log.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "kiln_cl_sources.h"
#include "ops/user_kernel_internal.h"
#include "runtime/build.h"
#include "runtime/family.h"
#include "runtime/program_text.h"
#include "runtime/runtime.h"
#include "spawn_child.h"

/* ------------------------------------------------------------ text programs */

static const char axpb_text[] =
    "__kernel void axpb(__global float *y, __global const float *x, float a, float b, uint n)\n"
    "{\n"
    "  size_t i = get_global_id(0);\n"
    "  if (i < n)\n"
    "    y[i] = a * x[i] + b;\n"
    "}\n";

/* Runs axpb from text (with a distinguishing comment) over n elements and checks it. */
static void
run_axpb(kiln_context *ctx, const char *text, uint32_t n)
{
  float *h = malloc((n ? n : 1) * sizeof *h), *r = malloc((n ? n : 1) * sizeof *r);
  for (uint32_t i = 0; i < n; i++)
    h[i] = (float)i * 0.5f - 3.0f;
  int64_t shape[1] = {n};
  kiln_tensor *x, *y;
  KOK(kiln_tensor_create(ctx, KILN_F32, 1, shape, &x));
  KOK(kiln_tensor_create(ctx, KILN_F32, 1, shape, &y));
  if (n)
    KOK(kiln_tensor_upload(x, h, n * sizeof *h));
  kiln__ctx_lock(ctx);
  cl_kernel k;
  kiln_status s = kiln__text_kernel_get("test", ctx, "axpb test", text, strlen(text), "-cl-std=CL1.2",
                                        "axpb", &k);
  ck_assert_msg(s == KILN_OK, "%s", kiln_last_error());
  if (n) {
    float a = 2.0f, b = 1.0f;
    cl_mem ym = y->mem, xm = x->mem;
    ck_assert(y->offset == 0 && x->offset == 0);
    clSetKernelArg(k, 0, sizeof ym, &ym);
    clSetKernelArg(k, 1, sizeof xm, &xm);
    clSetKernelArg(k, 2, sizeof a, &a);
    clSetKernelArg(k, 3, sizeof b, &b);
    clSetKernelArg(k, 4, sizeof n, &n);
    size_t g = n;
    ck_assert_int_eq(clEnqueueNDRangeKernel(ctx->queue, k, 1, NULL, &g, NULL, 0, NULL, NULL), 0);
  }
  kiln__ctx_unlock(ctx);
  if (n) {
    KOK(kiln_tensor_download(y, r, n * sizeof *r));
    for (uint32_t i = 0; i < n; i++)
      ck_assert_msg(r[i] == 2.0f * h[i] + 1.0f, "axpb[%u] = %g", i, (double)r[i]);
  }
  kiln_tensor_release(x);
  kiln_tensor_release(y);
  free(h);
  free(r);
}

/* A text no earlier run has compiled: a comment that differs per process and call. */
static char *
fresh_text(const char *base)
{
  static int serial;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char *t = malloc(strlen(base) + 96);
  sprintf(t, "/* %d %ld %ld %d */\n%s", (int)getpid(), (long)ts.tv_sec, ts.tv_nsec, serial++, base);
  return t;
}

START_TEST(text_program_runs_and_is_registered_once)
{
  kiln_context *ctx = harness_ctx();
  char *text = fresh_text(axpb_text);
  uint64_t c0 = kiln__text_compiles();
  run_axpb(ctx, text, 1);
  run_axpb(ctx, text, 1000);
  run_axpb(ctx, text, 0);
  ck_assert_uint_eq(kiln__text_compiles() - c0, 1);
  /* Other options are another program. */
  kiln__ctx_lock(ctx);
  cl_kernel k1, k2;
  KOK(kiln__text_kernel_get("test", ctx, "x", text, strlen(text), "-cl-std=CL1.2", "axpb", &k1));
  KOK(kiln__text_kernel_get("test", ctx, "x", text, strlen(text), "-cl-std=CL1.2 -DX=1", "axpb", &k2));
  ck_assert_ptr_ne(k1, k2);
  ck_assert_uint_eq(kiln__text_compiles() - c0, 2);
  kiln__ctx_unlock(ctx);
  free(text);
}
END_TEST

START_TEST(text_program_bad_input)
{
  kiln_context *ctx = harness_ctx();
  cl_kernel k;
  kiln__ctx_lock(ctx);
  KEXPECT(kiln__text_kernel_get("test", ctx, "x", "", 0, NULL, "k", &k), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln__text_kernel_get("test", ctx, "x", NULL, 4, NULL, "k", &k), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln__text_kernel_get("test", ctx, "x", "ab\0c", 4, NULL, "k", &k),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln__text_kernel_get("test", ctx, "x", axpb_text, strlen(axpb_text), NULL, "", &k),
          KILN_ERR_INVALID_ARGUMENT);
  /* A kernel name the program lacks is the caller's mistake, not kiln's. */
  KEXPECT(kiln__text_kernel_get("test", ctx, "x", axpb_text, strlen(axpb_text), NULL, "nope", &k),
          KILN_ERR_INVALID_ARGUMENT);
  ck_assert_msg(strstr(kiln_last_error(), "nope"), "%s", kiln_last_error());
  /* A compile error: the build log and the numbered source line it points at. */
  const char *bad = "__kernel void broken(__global float *y)\n"
                    "{\n"
                    "  y[0] = undeclared_thing + 1.0f;\n"
                    "}\n";
  KEXPECT(kiln__text_kernel_get("test", ctx, "broken one", bad, strlen(bad), NULL, "broken", &k),
          KILN_ERR_BUILD);
  const char *msg = kiln_last_error();
  ck_assert_msg(strstr(msg, "undeclared_thing"), "no build log: %s", msg);
  ck_assert_msg(strstr(msg, "text:broken one"), "no label: %s", msg);
  ck_assert_msg(strstr(msg, "    3 |   y[0] = undeclared_thing"), "no numbered line: %s", msg);
  kiln__ctx_unlock(ctx);
}
END_TEST

struct race {
  kiln_context *ctx;
  const char *text;
  pthread_barrier_t *bar;
  cl_kernel k;
  kiln_status s;
};

static void *
race_thread(void *arg)
{
  struct race *r = arg;
  pthread_barrier_wait(r->bar);
  kiln__ctx_lock(r->ctx);
  r->s = kiln__text_kernel_get("test", r->ctx, "race", r->text, strlen(r->text), "-cl-std=CL1.2",
                               "axpb", &r->k);
  kiln__ctx_unlock(r->ctx);
  return NULL;
}

START_TEST(many_threads_build_one_text_once)
{
  enum { N = 8 };
  kiln_context *ctx = harness_ctx();
  char *text = fresh_text(axpb_text);
  uint64_t c0 = kiln__text_compiles();
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, N);
  struct race r[N];
  pthread_t th[N];
  for (int i = 0; i < N; i++) {
    r[i] = (struct race){ctx, text, &bar, NULL, KILN_ERR_INTERNAL};
    pthread_create(&th[i], NULL, race_thread, &r[i]);
  }
  for (int i = 0; i < N; i++)
    pthread_join(th[i], NULL);
  for (int i = 0; i < N; i++) {
    ck_assert_int_eq(r[i].s, KILN_OK);
    ck_assert_ptr_eq(r[i].k, r[0].k);
  }
  ck_assert_uint_eq(kiln__text_compiles() - c0, 1);
  pthread_barrier_destroy(&bar);
  free(text);
}
END_TEST


/* ------------------------------------------------------------ user kernels */

static const int64_t sizes[] = {0, 1, 7, 97, 256, 1000, 4099, 100003};
#define NSIZES (sizeof sizes / sizeof *sizes)

static kiln_tensor *
upload(kiln_dtype dt, int64_t n, const void *host)
{
  kiln_tensor *t;
  KOK(kiln_tensor_create(harness_ctx(), dt, 1, &n, &t));
  if (n)
    KOK(kiln_tensor_upload(t, host, (size_t)n * kiln_dtype_size(dt)));
  return t;
}

static void *
download(kiln_tensor *t)
{
  size_t bytes = (size_t)kiln_tensor_numel(t) * kiln_dtype_size(kiln_tensor_dtype(t));
  void *h = malloc(bytes ? bytes : 1);
  if (bytes)
    KOK(kiln_tensor_download(t, h, bytes));
  return h;
}

START_TEST(elementwise_kernels_match_host)
{
  kiln_context *ctx = harness_ctx();
  kiln_user_kernel *kf, *kd = NULL, *ki, *kl;
  KOK(kiln_elementwise_kernel_create(ctx, "axpbz_f32", "float *y, const float *x, float a, __global const float *z",
                                     "y[i] = a * x[i] + z[i] * 0.5f", NULL, NULL, &kf));
  if (harness_has_fp64())
    KOK(kiln_elementwise_kernel_create(ctx, "axpbz_f64", "double *y, const double *x, double a, const double *z",
                                       "y[i] = a * x[i] + helper(z[i])",
                                       "inline double helper(double v) { return v * 0.5; }", NULL, &kd));
  KOK(kiln_elementwise_kernel_create(ctx, "iota_i32", "int *y, const int *x, int k",
                                     "y[i] = x[i] * k + (int)i", NULL, NULL, &ki));
  KOK(kiln_elementwise_kernel_create(ctx, "mix_i64", "long *y, const long *x, ulong k, uchar *flag",
                                     "y[i] = x[i] * (long)k - (long)i; flag[i] = x[i] > 0", NULL, NULL, &kl));
  for (size_t si = 0; si < NSIZES; si++) {
    int64_t n = sizes[si];
    if (!harness_fits((uint64_t)n))
      continue;
    size_t m = n ? (size_t)n : 1;
    float *xf = malloc(m * 4), *zf = malloc(m * 4);
    double *xd = malloc(m * 8), *zd = malloc(m * 8);
    int32_t *xi = malloc(m * 4);
    int64_t *xl = malloc(m * 8);
    for (int64_t i = 0; i < n; i++) {
      xf[i] = (float)((i % 29) - 14) * 0.125f; /* exact with or without contraction to fma */
      zf[i] = (float)(i % 13) - 6.0f;
      xd[i] = (double)((i % 37) - 18) * 0.25;
      zd[i] = (double)(i % 17) / 3.0;
      xi[i] = (int32_t)(i * 7919 % 2001) - 1000;
      xl[i] = (i * 104729) % 4000001 - 2000000;
    }
    kiln_tensor *x = upload(KILN_F32, n, xf), *z = upload(KILN_F32, n, zf), *y = upload(KILN_F32, n, zf);
    kiln_arg a[] = {kiln_arg_tensor(y), kiln_arg_tensor(x), kiln_arg_f32(2.5f), kiln_arg_tensor(z)};
    KOK(kiln_elementwise_kernel_run(kf, 4, a));
    float *rf = download(y);
    for (int64_t i = 0; i < n; i++)
      ck_assert_msg(rf[i] == 2.5f * xf[i] + zf[i] * 0.5f, "f32 n=%lld i=%lld: %g", (long long)n,
                    (long long)i, (double)rf[i]);
    free(rf);
    kiln_tensor_release(x), kiln_tensor_release(y), kiln_tensor_release(z);
    if (kd) {
      x = upload(KILN_F64, n, xd), z = upload(KILN_F64, n, zd), y = upload(KILN_F64, n, zd);
      kiln_arg b[] = {kiln_arg_tensor(y), kiln_arg_tensor(x), kiln_arg_f64(-1.25), kiln_arg_tensor(z)};
      KOK(kiln_elementwise_kernel_run(kd, 4, b));
      double *rd = download(y);
      for (int64_t i = 0; i < n; i++)
        ck_assert_msg(rd[i] == -1.25 * xd[i] + zd[i] * 0.5, "f64 n=%lld i=%lld", (long long)n,
                      (long long)i);
      free(rd);
      kiln_tensor_release(x), kiln_tensor_release(y), kiln_tensor_release(z);
    }
    x = upload(KILN_I32, n, xi), y = upload(KILN_I32, n, xi);
    kiln_arg c[] = {kiln_arg_tensor(y), kiln_arg_tensor(x), kiln_arg_i32(-3)};
    KOK(kiln_elementwise_kernel_run(ki, 3, c));
    int32_t *ri = download(y);
    for (int64_t i = 0; i < n; i++)
      ck_assert_int_eq(ri[i], xi[i] * -3 + (int32_t)i);
    free(ri);
    kiln_tensor_release(x), kiln_tensor_release(y);
    x = upload(KILN_I64, n, xl), y = upload(KILN_I64, n, xl);
    kiln_tensor *flag;
    KOK(kiln_tensor_create(ctx, KILN_BOOL, 1, &n, &flag));
    kiln_arg d[] = {kiln_arg_tensor(y), kiln_arg_tensor(x), kiln_arg_u64(3), kiln_arg_tensor(flag)};
    KOK(kiln_elementwise_kernel_run(kl, 4, d));
    int64_t *rl = download(y);
    uint8_t *rb = download(flag);
    for (int64_t i = 0; i < n; i++) {
      ck_assert_int_eq(rl[i], xl[i] * 3 - i);
      ck_assert_int_eq(rb[i], xl[i] > 0);
    }
    free(rl), free(rb);
    kiln_tensor_release(x), kiln_tensor_release(y), kiln_tensor_release(flag);
    free(xf), free(zf), free(xd), free(zd), free(xi), free(xl);
  }
  /* A view at an offset is addressed from its own first element. */
  {
    int64_t n = 100;
    float h[100];
    for (int i = 0; i < 100; i++)
      h[i] = (float)i;
    kiln_tensor *base = upload(KILN_F32, n, h), *view;
    kiln__shape sh = {1, {60}};
    KOK(kiln__tensor_view("test", base, 40 * sizeof(float), &sh, &view));
    kiln_arg a[] = {kiln_arg_tensor(view), kiln_arg_tensor(view), kiln_arg_f32(2.0f), kiln_arg_tensor(view)};
    KOK(kiln_elementwise_kernel_run(kf, 4, a));
    float *r = download(base);
    for (int i = 0; i < 100; i++)
      ck_assert_msg(r[i] == (i < 40 ? (float)i : 2.5f * (float)i), "view [%d] = %g", i, (double)r[i]);
    free(r);
    kiln_tensor_release(view), kiln_tensor_release(base);
  }
  const char *text;
  KOK(kiln_user_kernel_source(ki, &text));
  ck_assert_msg(strstr(text, "y[i] = x[i] * k + (int)i"), "%s", text);
  kiln_user_kernel_release(kf), kiln_user_kernel_release(kd), kiln_user_kernel_release(ki),
      kiln_user_kernel_release(kl);
}
END_TEST

START_TEST(reduction_kernels_match_host)
{
  /* Both work splits (the CPUs' runs and the GPUs' interleaving) on whatever device this is. */
  kiln__user_kernel_blocked_override = _i;
  kiln_context *ctx = harness_ctx();
  int fp64 = harness_has_fp64();
  kiln_user_kernel *dot32, *sum64 = NULL, *maxi, *suml, *maxu8;
  KOK(kiln_reduction_kernel_create(ctx, "dot_f32", KILN_F32, "0.0f", "a + b", "x[i] * y[i]",
                                   "const float *x, const float *y", NULL, NULL, &dot32));
  if (fp64)
    KOK(kiln_reduction_kernel_create(ctx, "sumsq_f64", KILN_F64, "0.0", "a + b",
                                     "(x[i] - c) * (x[i] - c)", "const double *x, double c", NULL,
                                     NULL, &sum64));
  KOK(kiln_reduction_kernel_create(ctx, "max_i32", KILN_I32, "INT_MIN", "max(a, b)", "x[i]",
                                   "const int *x", NULL, NULL, &maxi));
  KOK(kiln_reduction_kernel_create(ctx, "wsum_i64", KILN_I64, "0L", "a + b", "x[i] * (long)(i % 5)",
                                   "const long *x", NULL, NULL, &suml));
  KOK(kiln_reduction_kernel_create(ctx, "max_u8", KILN_U8, "(uchar)0", "max(a, b)", "x[i]",
                                   "const uchar *x", NULL, NULL, &maxu8));
  for (size_t si = 0; si < NSIZES; si++) {
    int64_t n = sizes[si];
    if (!harness_fits((uint64_t)n))
      continue;
    size_t m = n ? (size_t)n : 1;
    float *xf = malloc(m * 4), *yf = malloc(m * 4);
    double *xd = malloc(m * 8);
    int32_t *xi = malloc(m * 4);
    int64_t *xl = malloc(m * 8);
    uint8_t *xu = malloc(m);
    double ref_dot = 0, ref_sq = 0;
    int32_t ref_max = INT32_MIN;
    int64_t ref_sum = 0;
    uint8_t ref_u8 = 0;
    for (int64_t i = 0; i < n; i++) {
      xf[i] = (float)((i % 19) - 9) * 0.25f;
      yf[i] = (float)((i % 7) - 3);
      xd[i] = sin((double)i) * 10.0;
      xi[i] = (int32_t)((i * 2654435761u) % 1000003) - 500000;
      xl[i] = (i * 97) % 10007 - 5000;
      xu[i] = (uint8_t)((i * 31) % 251);
      ref_dot += (double)xf[i] * yf[i];
      ref_sq += (xd[i] - 0.5) * (xd[i] - 0.5);
      ref_max = xi[i] > ref_max ? xi[i] : ref_max;
      ref_sum += xl[i] * (i % 5);
      ref_u8 = xu[i] > ref_u8 ? xu[i] : ref_u8;
    }
    kiln_tensor *x = upload(KILN_F32, n, xf), *y = upload(KILN_F32, n, yf), *r = NULL;
    kiln_arg a[] = {kiln_arg_tensor(x), kiln_arg_tensor(y)};
    KOK(kiln_reduction_kernel_run(dot32, 2, a, &r));
    ck_assert_int_eq((int)kiln_tensor_ndim(r), 0);
    float got;
    KOK(kiln_tensor_download(r, &got, sizeof got));
    /* Products and partial sums of quarters of small integers are exact in f32. */
    ck_assert_msg(got == (float)ref_dot, "dot n=%lld: %g vs %g", (long long)n, (double)got, ref_dot);
    /* Into a given output. */
    KOK(kiln_reduction_kernel_run(dot32, 2, a, &r));
    kiln_tensor_release(r), kiln_tensor_release(x), kiln_tensor_release(y);
    if (sum64) {
      x = upload(KILN_F64, n, xd), r = NULL;
      kiln_arg b[] = {kiln_arg_tensor(x), kiln_arg_f64(0.5)};
      KOK(kiln_reduction_kernel_run(sum64, 2, b, &r));
      double gd;
      KOK(kiln_tensor_download(r, &gd, sizeof gd));
      ck_assert_msg(fabs(gd - ref_sq) <= 1e-12 * (ref_sq + 1) * 8, "sumsq n=%lld: %.17g vs %.17g",
                    (long long)n, gd, ref_sq);
      kiln_tensor_release(r), kiln_tensor_release(x);
    }
    x = upload(KILN_I32, n, xi), r = NULL;
    kiln_arg c[] = {kiln_arg_tensor(x)};
    KOK(kiln_reduction_kernel_run(maxi, 1, c, &r));
    int32_t gi;
    KOK(kiln_tensor_download(r, &gi, sizeof gi));
    ck_assert_int_eq(gi, ref_max);
    kiln_tensor_release(r), kiln_tensor_release(x);
    x = upload(KILN_I64, n, xl), r = NULL;
    c[0] = kiln_arg_tensor(x);
    KOK(kiln_reduction_kernel_run(suml, 1, c, &r));
    int64_t gl;
    KOK(kiln_tensor_download(r, &gl, sizeof gl));
    ck_assert_int_eq(gl, ref_sum);
    kiln_tensor_release(r), kiln_tensor_release(x);
    x = upload(KILN_U8, n, xu), r = NULL;
    c[0] = kiln_arg_tensor(x);
    KOK(kiln_reduction_kernel_run(maxu8, 1, c, &r));
    uint8_t gu;
    KOK(kiln_tensor_download(r, &gu, sizeof gu));
    ck_assert_int_eq(gu, ref_u8);
    kiln_tensor_release(r), kiln_tensor_release(x);
    free(xf), free(yf), free(xd), free(xi), free(xl), free(xu);
  }
  /* A given output of another dtype or shape is refused. */
  kiln_tensor *x = upload(KILN_I32, 0, NULL), *bad;
  int64_t one = 1;
  KOK(kiln_tensor_create(ctx, KILN_I64, 0, NULL, &bad));
  kiln_arg c[] = {kiln_arg_tensor(x)};
  KEXPECT(kiln_reduction_kernel_run(maxi, 1, c, &bad), KILN_ERR_DTYPE);
  kiln_tensor_release(bad);
  KOK(kiln_tensor_create(ctx, KILN_I32, 1, &one, &bad));
  KEXPECT(kiln_reduction_kernel_run(maxi, 1, c, &bad), KILN_ERR_SHAPE);
  kiln_tensor_release(bad), kiln_tensor_release(x);
  kiln_user_kernel_release(dot32), kiln_user_kernel_release(sum64), kiln_user_kernel_release(maxi),
      kiln_user_kernel_release(suml), kiln_user_kernel_release(maxu8);
  kiln__user_kernel_blocked_override = -1;
}
END_TEST

START_TEST(scan_kernels_match_host)
{
  /* Both work splits (the CPUs' runs and the GPUs' tiles) on whatever device this is. */
  kiln__user_kernel_blocked_override = _i;
  kiln_context *ctx = harness_ctx();
  int fp64 = harness_has_fp64();
  kiln_user_kernel *inc, *exc, *lmax, *dsum = NULL, *affine;
  KOK(kiln_scan_kernel_create(ctx, "cumsum_i32", KILN_I32, "0", "a + b", "x[i]", "y[i] = item", 0,
                              "int *y, const int *x", NULL, NULL, &inc));
  KOK(kiln_scan_kernel_create(ctx, "excl_i64", KILN_I64, "0L", "a + b", "x[i] * k",
                              "y[i] = item; last[0] = i", 1, "long *y, const long *x, long k, long *last", NULL,
                              NULL, &exc));
  KOK(kiln_scan_kernel_create(ctx, "runmax_f32", KILN_F32, "-INFINITY", "fmax(a, b)", "x[i]",
                              "y[i] = item", 0, "float *y, const float *x", NULL, NULL, &lmax));
  if (fp64)
    KOK(kiln_scan_kernel_create(ctx, "cumsum_f64", KILN_F64, "0.0", "a + b", "x[i]", "y[i] = item",
                                0, "double *y, const double *x", NULL, NULL, &dsum));
  /*
   * Not commutative: composing affine maps v -> m v + c, packed as
   * (m << 32) | c in a long with m, c in [0, 2^16) mod 65521. The scan must keep the order.
   */
  KOK(kiln_scan_kernel_create(ctx, "affine_i64", KILN_I64, "(1L << 32)",
                              "compose(a, b)", "x[i]", "y[i] = item", 0, "long *y, const long *x",
                              "inline long compose(long a, long b) {\n"
                              "  long ma = a >> 32, ca = a & 0xffffffffL, mb = b >> 32, cb = b & 0xffffffffL;\n"
                              "  return (((mb * ma) % 65521) << 32) | ((mb * ca + cb) % 65521);\n"
                              "}\n",
                              NULL, &affine));
  for (size_t si = 0; si < NSIZES; si++) {
    int64_t n = sizes[si];
    if (!harness_fits((uint64_t)n))
      continue;
    size_t m = n ? (size_t)n : 1;
    int32_t *xi = malloc(m * 4), *ri;
    int64_t *xl = malloc(m * 8), *rl, *xa = malloc(m * 8);
    float *xf = malloc(m * 4), *rf;
    double *xd = malloc(m * 8), *rd;
    for (int64_t i = 0; i < n; i++) {
      xi[i] = (int32_t)((i * 37) % 101) - 50;
      xl[i] = (i * 7) % 1001 - 500;
      xf[i] = (float)sin((double)i * 0.37) * (float)(i % 1000);
      xd[i] = (double)((i * 13) % 29) * 0.125;
      xa[i] = ((int64_t)((i * 17) % 65521 + 1) << 32) | ((i * 23) % 65521);
    }
    kiln_tensor *x = upload(KILN_I32, n, xi), *y = upload(KILN_I32, n, xi);
    kiln_arg a[] = {kiln_arg_tensor(y), kiln_arg_tensor(x)};
    KOK(kiln_scan_kernel_run(inc, 2, a));
    ri = download(y);
    int32_t acc = 0;
    for (int64_t i = 0; i < n; i++) {
      acc += xi[i];
      ck_assert_msg(ri[i] == acc, "cumsum n=%lld i=%lld: %d vs %d", (long long)n, (long long)i, ri[i], acc);
    }
    free(ri), kiln_tensor_release(x), kiln_tensor_release(y);
    x = upload(KILN_I64, n, xl), y = upload(KILN_I64, n, xl);
    int64_t one = 1;
    kiln_tensor *last;
    KOK(kiln_tensor_create(ctx, KILN_I64, 1, &one, &last));
    kiln_arg b[] = {kiln_arg_tensor(y), kiln_arg_tensor(x), kiln_arg_i64(3), kiln_arg_tensor(last)};
    if (n > 1) /* last has 1 element, fewer than n */
      KEXPECT(kiln_scan_kernel_run(exc, 4, b), KILN_ERR_SHAPE);
    kiln_tensor_release(last);
    KOK(kiln_tensor_create(ctx, KILN_I64, 1, &n, &last));
    b[3] = kiln_arg_tensor(last);
    KOK(kiln_scan_kernel_run(exc, 4, b));
    rl = download(y);
    int64_t accl = 0;
    for (int64_t i = 0; i < n; i++) {
      ck_assert_msg(rl[i] == accl, "exclusive n=%lld i=%lld", (long long)n, (long long)i);
      accl += xl[i] * 3;
    }
    free(rl), kiln_tensor_release(x), kiln_tensor_release(y), kiln_tensor_release(last);
    x = upload(KILN_F32, n, xf), y = upload(KILN_F32, n, xf);
    a[0] = kiln_arg_tensor(y), a[1] = kiln_arg_tensor(x);
    KOK(kiln_scan_kernel_run(lmax, 2, a));
    rf = download(y);
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
      mx = fmaxf(mx, xf[i]);
      ck_assert(rf[i] == mx);
    }
    free(rf), kiln_tensor_release(x), kiln_tensor_release(y);
    if (dsum) {
      x = upload(KILN_F64, n, xd), y = upload(KILN_F64, n, xd);
      a[0] = kiln_arg_tensor(y), a[1] = kiln_arg_tensor(x);
      KOK(kiln_scan_kernel_run(dsum, 2, a));
      rd = download(y);
      double s = 0;
      /* Eighths below 2^40 sum exactly in any order. */
      for (int64_t i = 0; i < n; i++) {
        s += xd[i];
        ck_assert(rd[i] == s);
      }
      free(rd), kiln_tensor_release(x), kiln_tensor_release(y);
    }
    x = upload(KILN_I64, n, xa), y = upload(KILN_I64, n, xa);
    a[0] = kiln_arg_tensor(y), a[1] = kiln_arg_tensor(x);
    KOK(kiln_scan_kernel_run(affine, 2, a));
    rl = download(y);
    int64_t mm = 1, cc = 0;
    for (int64_t i = 0; i < n; i++) {
      int64_t mb = xa[i] >> 32, cb = xa[i] & 0xffffffff;
      mm = (mb * mm) % 65521;
      cc = (mb * cc + cb) % 65521;
      ck_assert_msg(rl[i] == ((mm << 32) | cc), "affine n=%lld i=%lld", (long long)n, (long long)i);
    }
    free(rl), kiln_tensor_release(x), kiln_tensor_release(y);
    free(xi), free(xl), free(xf), free(xd), free(xa);
  }
  kiln_user_kernel_release(inc), kiln_user_kernel_release(exc), kiln_user_kernel_release(lmax),
      kiln_user_kernel_release(dsum), kiln_user_kernel_release(affine);
  kiln__user_kernel_blocked_override = -1;
}
END_TEST

static const char raw_src[] =
    "__kernel void tile_sum(__global const float *x, __global float *rows, __local float *tmp,\n"
    "                       uint cols, float scale)\n"
    "{\n"
    "  size_t r = get_global_id(1), c = get_local_id(0), L = get_local_size(0);\n"
    "  float acc = 0.0f;\n"
    "  for (size_t j = c; j < cols; j += L)\n"
    "    acc += x[r * cols + j];\n"
    "  tmp[c] = acc;\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  if (c == 0) {\n"
    "    float s = 0.0f;\n"
    "    for (size_t k = 0; k < L; k++)\n"
    "      s += tmp[k];\n"
    "    rows[r] = s * scale;\n"
    "  }\n"
    "}\n";

START_TEST(raw_kernels_run_and_check_arguments)
{
  kiln_context *ctx = harness_ctx();
  kiln_user_kernel *k;
  KOK(kiln_raw_kernel_create(ctx, "my tile sum", raw_src, "tile_sum", NULL, &k));
  const int64_t rows = 37, cols = 129;
  float *h = malloc(rows * cols * sizeof *h);
  for (int64_t i = 0; i < rows * cols; i++)
    h[i] = (float)(i % 11);
  kiln_tensor *x = upload(KILN_F32, rows * cols, h), *r;
  KOK(kiln_tensor_create(ctx, KILN_F32, 1, &rows, &r));
  kiln_arg a[] = {kiln_arg_tensor(x), kiln_arg_tensor(r), kiln_arg_local(8 * sizeof(float)),
                  kiln_arg_u32((uint32_t)cols), kiln_arg_f32(0.5f)};
  uint64_t g[2] = {8, (uint64_t)rows}, l[2] = {8, 1};
  KOK(kiln_raw_kernel_run(k, 2, g, l, 5, a));
  float *got = download(r);
  for (int64_t i = 0; i < rows; i++) {
    double s = 0;
    for (int64_t j = 0; j < cols; j++)
      s += h[i * cols + j];
    ck_assert_msg(got[i] == (float)(s * 0.5), "row %lld: %g vs %g", (long long)i, (double)got[i], s * 0.5);
  }
  free(got);
  /* Everything below is refused before anything is enqueued. */
  KEXPECT(kiln_raw_kernel_run(k, 2, g, l, 4, a), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_msg(strstr(kiln_last_error(), "takes 5 arguments, 4 given"), "%s", kiln_last_error());
  kiln_arg w[5];
  memcpy(w, a, sizeof w);
  w[3] = kiln_arg_i32(5);
  KEXPECT(kiln_raw_kernel_run(k, 2, g, l, 5, w), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_msg(strstr(kiln_last_error(), "cols"), "%s", kiln_last_error());
  memcpy(w, a, sizeof w);
  w[2] = kiln_arg_u32(8);
  KEXPECT(kiln_raw_kernel_run(k, 2, g, l, 5, w), KILN_ERR_INVALID_ARGUMENT);
  memcpy(w, a, sizeof w);
  kiln_tensor *xi;
  KOK(kiln_tensor_create(ctx, KILN_I32, 1, &rows, &xi));
  w[1] = kiln_arg_tensor(xi);
  KEXPECT(kiln_raw_kernel_run(k, 2, g, l, 5, w), KILN_ERR_DTYPE);
  kiln_tensor_release(xi);
  kiln_tensor *view;
  kiln__shape sh = {1, {10}};
  KOK(kiln__tensor_view("test", x, 4 * sizeof(float), &sh, &view));
  memcpy(w, a, sizeof w);
  w[0] = kiln_arg_tensor(view);
  KEXPECT(kiln_raw_kernel_run(k, 2, g, l, 5, w), KILN_ERR_INVALID_ARGUMENT);
  kiln_tensor_release(view);
  uint64_t g_bad[2] = {9, (uint64_t)rows};
  KEXPECT(kiln_raw_kernel_run(k, 2, g_bad, l, 5, a), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_raw_kernel_run(k, 4, g, l, 5, a), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_elementwise_kernel_run(k, 5, a), KILN_ERR_INVALID_ARGUMENT);
  /* A zero range enqueues nothing. */
  uint64_t g0[2] = {0, 3};
  KOK(kiln_raw_kernel_run(k, 2, g0, NULL, 5, a));
  kiln_tensor_release(x), kiln_tensor_release(r);
  KOK(kiln_user_kernel_release(k));
  KEXPECT(kiln_user_kernel_release(k), KILN_ERR_INVALID_HANDLE);
  /* Build errors carry the log; a missing kernel name is the caller's mistake. */
  KEXPECT(kiln_raw_kernel_create(ctx, NULL, "__kernel void f(__global int *p) { p[0] = q; }\n", "f",
                                 NULL, &k),
          KILN_ERR_BUILD);
  ck_assert_msg(strstr(kiln_last_error(), "q"), "%s", kiln_last_error());
  ck_assert_ptr_null(k);
  KEXPECT(kiln_raw_kernel_create(ctx, NULL, raw_src, "other", NULL, &k), KILN_ERR_INVALID_ARGUMENT);
  free(h);
}
END_TEST

START_TEST(declarations_and_errors)
{
  kiln_context *ctx = harness_ctx();
  kiln_user_kernel *k = NULL;
  struct {
    const char *name, *args, *what;
  } bad[] = {
      {"ok", "float *y, float2 x, int z", "scalar type"},
      {"ok", "short *y", "element type"},
      {"ok", "float *y, float *y", "declared twice"},
      {"ok", "float *i", "reserved"},
      {"ok", "float *n", "reserved"},
      {"ok", "float *y__", "reserved"},
      {"ok", "float *kiln_y", "reserved"},
      {"ok", "float **y", "not a declaration"},
      {"ok", "float *y, ", "not a declaration"},
      {"ok", "float y[4]", "unexpected character"},
      {"ok", "float a", "no pointer"},
      {"1bad", "float *y", "not a C identifier"},
      {"kiln_x", "float *y", "not a C identifier"},
      {"", "float *y", "not a C identifier"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    KEXPECT(kiln_elementwise_kernel_create(ctx, bad[i].name, bad[i].args, "y[i] = 0", NULL, NULL, &k),
            KILN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(kiln_last_error(), bad[i].what), "%s: %s", bad[i].args, kiln_last_error());
    ck_assert_ptr_null(k);
  }
  KEXPECT(kiln_elementwise_kernel_create(ctx, "e", "float *y", NULL, NULL, NULL, &k),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_elementwise_kernel_create(NULL, "e", "float *y", "y[i] = 1", NULL, NULL, &k),
          KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_reduction_kernel_create(ctx, "r", KILN_C64, "0", "a + b", "x[i]", "const float2 *x",
                                       NULL, NULL, &k),
          KILN_ERR_DTYPE);
  KEXPECT(kiln_scan_kernel_create(ctx, "s", KILN_F32, "0", "a + b", "x[i]", NULL, 0, "float *x",
                                  NULL, NULL, &k),
          KILN_ERR_INVALID_ARGUMENT);
  /* A body that does not compile: KILN_ERR_BUILD with the log and the generated line. */
  KEXPECT(kiln_elementwise_kernel_create(ctx, "broken", "float *y, const float *x",
                                         "y[i] = x[i] + not_declared", NULL, NULL, &k),
          KILN_ERR_BUILD);
  const char *msg = kiln_last_error();
  ck_assert_msg(strstr(msg, "not_declared") && strstr(msg, " | y[i] = x[i] + not_declared"),
                "%s", msg);
  ck_assert_msg(strstr(msg, "text:broken"), "%s", msg);
  /* Wrong arguments at launch, before anything is enqueued. */
  KOK(kiln_elementwise_kernel_create(ctx, "scale", "float *y, float s", "y[i] *= s", NULL, NULL, &k));
  int64_t n = 5;
  kiln_tensor *t, *ti, *other_ctx_t = NULL;
  KOK(kiln_tensor_create(ctx, KILN_F32, 1, &n, &t));
  KOK(kiln_tensor_create(ctx, KILN_I32, 1, &n, &ti));
  kiln_arg ok[] = {kiln_arg_tensor(t), kiln_arg_f32(2)};
  KEXPECT(kiln_elementwise_kernel_run(k, 1, ok), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_elementwise_kernel_run(k, 3, ok), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_elementwise_kernel_run(k, 2, NULL), KILN_ERR_INVALID_ARGUMENT);
  kiln_arg w1[] = {kiln_arg_f32(2), kiln_arg_tensor(t)};
  KEXPECT(kiln_elementwise_kernel_run(k, 2, w1), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_msg(strstr(kiln_last_error(), "needs a tensor, got a scalar"), "%s", kiln_last_error());
  kiln_arg w2[] = {kiln_arg_tensor(t), kiln_arg_f64(2)};
  KEXPECT(kiln_elementwise_kernel_run(k, 2, w2), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_msg(strstr(kiln_last_error(), "needs a float scalar, got double"), "%s", kiln_last_error());
  kiln_arg w3[] = {kiln_arg_tensor(ti), kiln_arg_f32(2)};
  KEXPECT(kiln_elementwise_kernel_run(k, 2, w3), KILN_ERR_DTYPE);
  kiln_arg w4[] = {kiln_arg_tensor(NULL), kiln_arg_f32(2)};
  KEXPECT(kiln_elementwise_kernel_run(k, 2, w4), KILN_ERR_INVALID_HANDLE);
  kiln_arg w5[] = {kiln_arg_tensor(t), kiln_arg_local(4)};
  KEXPECT(kiln_elementwise_kernel_run(k, 2, w5), KILN_ERR_INVALID_ARGUMENT);
  kiln_context *c2;
  KOK(kiln_context_create(NULL, &c2));
  KOK(kiln_tensor_create(c2, KILN_F32, 1, &n, &other_ctx_t));
  kiln_arg w6[] = {kiln_arg_tensor(other_ctx_t), kiln_arg_f32(2)};
  KEXPECT(kiln_elementwise_kernel_run(k, 2, w6), KILN_ERR_CONTEXT_MISMATCH);
  kiln_tensor_release(other_ctx_t);
  /* A kernel keeps working on its context; a released context is refused. */
  kiln_user_kernel *k2;
  KOK(kiln_elementwise_kernel_create(c2, "scale", "float *y, float s", "y[i] *= s", NULL, NULL, &k2));
  KOK(kiln_context_release(c2));
  KEXPECT(kiln_elementwise_kernel_run(k2, 2, ok), KILN_ERR_INVALID_HANDLE);
  KOK(kiln_user_kernel_release(k2));
  kiln_tensor *r = NULL;
  KEXPECT(kiln_reduction_kernel_run(k, 2, ok, &r), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_scan_kernel_run(k, 2, ok), KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_elementwise_kernel_run(k, 2, ok));
  kiln_tensor_release(t), kiln_tensor_release(ti);
  KOK(kiln_user_kernel_release(k));
  KOK(kiln_user_kernel_release(NULL));
}
END_TEST


/* ------------------------------------------------------------ warm --from */

static const char warm_file[] =
    "# kernels for the image\n"
    "[kernel tile_sum]\n"
    "source <<END\n"
    "__kernel void tile_sum(__global const float *x, __global float *rows, __local float *tmp,\n"
    "                       uint cols, float scale) { rows[0] = x[0] * scale; }\n"
    "END\n"
    "\n"
    "[kernel axpy_warm]\n"
    "kind = elementwise\n"
    "arguments = float *y, const float *x, float a\n"
    "operation = y[i] += a * x[i]\n"
    "options = -cl-mad-enable\n"
    "; a reduction and a scan\n"
    "[kernel dot_warm]\n"
    "kind = reduction\n"
    "dtype = f32\n"
    "neutral = 0.0f\n"
    "reduce = a + b\n"
    "map = x[i] * y[i]\n"
    "arguments = const float *x, const float *y\n"
    "[kernel cumsum_warm]\n"
    "kind = scan\n"
    "dtype = i32\n"
    "neutral = 0\n"
    "scan = a + b\n"
    "input = x[i]\n"
    "output = y[i] = item\n"
    "exclusive = 1\n"
    "arguments = int *y, const int *x\n";

static char hook_label[64], hook_text[128];

static kiln_status
test_expr_hook(kiln_context *ctx, const char *label, const char *text)
{
  (void)ctx;
  snprintf(hook_label, sizeof hook_label, "%s", label);
  snprintf(hook_text, sizeof hook_text, "%s", text);
  return KILN_OK;
}

static char *
write_file(const char *dir, const char *name, const char *text)
{
  char *path = malloc(strlen(dir) + strlen(name) + 2);
  sprintf(path, "%s/%s", dir, name);
  FILE *fp = fopen(path, "w");
  ck_assert_ptr_nonnull(fp);
  fputs(text, fp);
  fclose(fp);
  return path;
}

static kiln_context *
context_in(const char *dir)
{
  kiln_context *ctx;
  KOK(kiln_context_create(NULL, &ctx));
  KOK(kiln_context_set_cache_dir(ctx, dir));
  KOK(kiln_context_set_option(ctx, KILN_OPT_CACHE_MODE, KILN_CACHE_ON));
  return ctx;
}

START_TEST(warm_file_compiles_into_the_cache)
{
  if (getenv("KILN_TEST_OCLGRIND"))
    return;
  char *dir = harness_tempdir();
  char *path = write_file(dir, "kernels.ini", warm_file);
  char cache[4200];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  kiln_context *ctx = context_in(cache);
  kiln_cache_warm_result r;
  KOK(kiln_user_kernel_warm_file(ctx, path, NULL, NULL, &r));
  ck_assert_uint_eq(r.variants, 4);
  ck_assert_uint_eq(r.done, 4);
  ck_assert_uint_eq(r.built, 4);
  ck_assert_uint_eq(r.stored, 4);
  ck_assert_uint_eq(r.failed, 0);
  KOK(kiln_context_release(ctx));
  /* A new context finds every item on the disk; a user kernel made as the file says hits. */
  ctx = context_in(cache);
  KOK(kiln_user_kernel_warm_file(ctx, path, NULL, NULL, &r));
  ck_assert_uint_eq(r.cached, 4);
  ck_assert_uint_eq(r.built, 0);
  kiln_user_kernel *k;
  kiln_cache_stats st0, st1;
  KOK(kiln_context_cache_stats(ctx, &st0));
  KOK(kiln_elementwise_kernel_create(ctx, "axpy_warm", "float *y, const float *x, float a",
                                     "y[i] += a * x[i]", NULL, "-cl-mad-enable", &k));
  KOK(kiln_context_cache_stats(ctx, &st1));
  ck_assert_uint_eq(st1.session.misses, st0.session.misses); /* already in the registry */
  kiln_user_kernel_release(k);
  KOK(kiln_context_release(ctx));
  /* [expr] goes through the expression hook; without one it is UNSUPPORTED, the rest goes on. */
  char *epath = write_file(dir, "expr.ini",
                           "[expr fused1]\ntext = y = sigmoid(2*x + 1)\n[kernel k2]\nkind = elementwise\n"
                           "arguments = float *y\noperation = y[i] = 1\n");
  ctx = context_in(cache);
  kiln_status (*saved)(kiln_context *, const char *, const char *) = kiln__warm_expr_hook;
  kiln__warm_expr_hook = NULL;
  KEXPECT(kiln_user_kernel_warm_file(ctx, epath, NULL, NULL, &r), KILN_ERR_UNSUPPORTED);
  ck_assert_uint_eq(r.done, 2);
  ck_assert_uint_eq(r.failed, 1);
  ck_assert_msg(strstr(kiln_last_error(), "fused1"), "%s", kiln_last_error());
  kiln__warm_expr_hook = test_expr_hook;
  KOK(kiln_user_kernel_warm_file(ctx, epath, NULL, NULL, &r));
  ck_assert_str_eq(hook_label, "fused1");
  ck_assert_str_eq(hook_text, "y = sigmoid(2*x + 1)");
  kiln__warm_expr_hook = saved;
  /* A kernel that does not build: BUILD naming it, after the others were done. */
  char *bpath = write_file(dir, "bad.ini",
                           "[kernel good]\nkind = elementwise\narguments = float *y\noperation = y[i] = 2\n"
                           "[kernel broken]\nsource = __kernel void broken() { nope; }\n"
                           "[kernel good2]\nkind = elementwise\narguments = float *y\noperation = y[i] = 3\n");
  KEXPECT(kiln_user_kernel_warm_file(ctx, bpath, NULL, NULL, &r), KILN_ERR_BUILD);
  ck_assert_uint_eq(r.done, 3);
  ck_assert_uint_eq(r.failed, 1);
  ck_assert_msg(strstr(kiln_last_error(), "[kernel broken] (line 5)"), "%s", kiln_last_error());
  /* Files that do not parse: FILE:LINE and what is wrong, nothing built. */
  struct {
    const char *text, *what;
  } bad[] = {
      {"key = value\n", ":1: a key before the first section"},
      {"[kernel a\n", ":1: a section header without ']'"},
      {"[thing a]\n", ":1: a section must be"},
      {"[kernel ]\n", ":1: a section without a name"},
      {"[kernel a]\nno equals sign\n", ":2: expected KEY = VALUE"},
      {"[kernel a]\nsource <<END\nnever closed\n", ":2: no line \"END\" ends this value"},
      {"[kernel a]\nkind = raw\nkind = raw\n", ":3: key \"kind\" given twice"},
      {"[kernel a]\nkind = magic\n", ":1: [a]: kind \"magic\""},
      {"[kernel a]\nkind = elementwise\nsource = x\n", ":3: key \"source\" is not one of [a]'s"},
      {"[kernel a]\nkind = scan\ndtype = f99\n", ":1: [a]: dtype \"f99\""},
      {"[kernel a]\nkind = scan\ndtype = i32\nexclusive = yes\n", "exclusive must be 0 or 1"},
      {"[expr e]\nsource = x\n", ":2: key \"source\" is not one of [e]'s"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char *bp = write_file(dir, "parse.ini", bad[i].text);
    KEXPECT(kiln_user_kernel_warm_file(ctx, bp, NULL, NULL, &r), KILN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(kiln_last_error(), bad[i].what), "case %zu: %s", i, kiln_last_error());
    ck_assert_uint_eq(r.done, 0);
    free(bp);
  }
  char missing[4300];
  snprintf(missing, sizeof missing, "%s/no-such-file", dir);
  KEXPECT(kiln_user_kernel_warm_file(ctx, missing, NULL, NULL, &r), KILN_ERR_IO);
  KEXPECT(kiln_user_kernel_warm_file(ctx, NULL, NULL, NULL, &r), KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_context_release(ctx));
  harness_rmtree(dir);
  free(dir), free(path), free(epath), free(bpath);
}
END_TEST


/* ------------------------------------------------------------ one-kernel programs */

/*
 * The kernel names docs/kernels.md lists for source `name` (the kernel_index test keeps the
 * page current: names of the first dtype each source builds, sorted), as a copy of the
 * line, split in place into list[]; the count, 0 when the page has no line for it.
 */
static size_t
indexed_kernels(const char *name, char **line, char **list, size_t most)
{
  FILE *f = fopen(KILN_TEST_SOURCE_ROOT "/docs/kernels.md", "r");
  ck_assert_msg(f != NULL, "docs/kernels.md: %s", strerror(errno));
  char head[128], buf[65536];
  snprintf(head, sizeof head, "`%s.cl`: ", name);
  size_t n = 0;
  *line = NULL;
  while (!*line && fgets(buf, sizeof buf, f))
    if (strncmp(buf, head, strlen(head)) == 0)
      *line = strdup(buf + strlen(head));
  fclose(f);
  for (char *save = NULL, *k = *line ? strtok_r(*line, ", \n", &save) : NULL; k && n < most;
       k = strtok_r(NULL, ", \n", &save)) {
    size_t len = strlen(k);
    ck_assert_msg(len > 2 && k[0] == '`' && k[len - 1] == '`', "%s: %s", name, k);
    k[len - 1] = 0;
    list[n++] = k + 1;
  }
  return n;
}

/*
 * Every embedded source's kernels can be built alone (scripts/embed_cl.py): for each
 * source, the first and the last of the kernels docs/kernels.md lists for it are each
 * built alone, for the first dtype the source builds, and must give a program with exactly
 * that kernel. (Checking every kernel of every source takes minutes on PoCL; this samples
 * each source's forms. The names come from the index rather than a build of the whole
 * program, which kernel_index makes already.)
 */
START_TEST(every_source_builds_one_kernel_programs)
{
  /* One-kernel programs exist on PoCL only (their text needs variadic macros: build.c). */
  if (harness_small() || !kiln__is_pocl(&harness_ctx()->info))
    return;
  kiln_context *ctx = harness_ctx();
  size_t checked = 0;
  for (size_t i = 0; i < KILN__CL_SOURCE_COUNT; i++) {
    const struct kiln__cl_source *src = &kiln__cl_sources[i];
    const struct kiln__source *row = NULL;
    if (!kiln__family_of_source(src->name, &row) || !row)
      continue;
    /* The index's dtype: f32, or the first the source builds (complex.cl: c64). */
    int d = KILN_F32;
    for (int e = 0; !(row->dtypes >> d & 1u) && e < KILN_DTYPE_COUNT; e++)
      d = e;
    if (!(row->dtypes >> d & 1u) || !kiln__device_has_dtype(&ctx->info, (kiln_dtype)d))
      continue;
    char opts[512], one[1024], *line, *list[512];
    size_t n = indexed_kernels(src->name, &line, list, 512);
    ck_assert_msg(n > 0, "docs/kernels.md lists no kernels of %s.cl", src->name);
    kiln__program_options(&ctx->info, src->name, (kiln_dtype)d, NULL, opts, sizeof opts);
    kiln__ctx_lock(ctx);
    size_t pick[2] = {0, n - 1};
    for (size_t j = 0; j < 2; j++) {
      if (j && pick[j] == pick[j - 1])
        continue;
      const char *k = list[pick[j]];
      ck_assert_int_eq(kiln__one_kernel_options(opts, k, one, sizeof one), 0);
      cl_program p;
      kiln_status s = kiln__program_build_uncached("test", ctx, src, one, &p);
      ck_assert_msg(s == KILN_OK, "%s/%s: %s", src->name, k, kiln_last_error());
      char got[1024] = "";
      clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, sizeof got, got, NULL);
      clReleaseProgram(p);
      ck_assert_msg(strcmp(got, k) == 0, "%s/%s: the program has \"%s\"", src->name, k, got);
      checked++;
    }
    kiln__ctx_unlock(ctx);
    free(line);
  }
  ck_assert_uint_ge(checked, 20);
}
END_TEST

/* Child: creates an elementwise user kernel tagged with tag and reports the cache counters. */
static int
child_ukernel(const char *tag)
{
  kiln_context *ctx;
  if (kiln_context_create(NULL, &ctx) != KILN_OK)
    return 3;
  char op[160];
  snprintf(op, sizeof op, "y[i] = 2 * y[i]; /* %s */", tag);
  kiln_user_kernel *k;
  uint64_t c0 = kiln__text_compiles();
  if (kiln_elementwise_kernel_create(ctx, "twice", "float *y", op, NULL, NULL, &k) != KILN_OK) {
    printf("error %s\n", kiln_last_error());
    return 4;
  }
  kiln_cache_stats st;
  kiln_context_cache_stats(ctx, &st);
  printf("compiles=%llu hits=%llu stores=%llu\n", (unsigned long long)(kiln__text_compiles() - c0),
         (unsigned long long)st.session.hits, (unsigned long long)st.session.stores);
  kiln_user_kernel_release(k);
  kiln_context_release(ctx);
  return 0;
}

/* Child: builds the text program argv[3] names (a comment tag) and reports the cache counters. */
static int
child_text(const char *tag)
{
  kiln_context *ctx;
  if (kiln_context_create(NULL, &ctx) != KILN_OK)
    return 3;
  char *text = malloc(strlen(axpb_text) + strlen(tag) + 16);
  sprintf(text, "/* %s */\n%s", tag, axpb_text);
  kiln__ctx_lock(ctx);
  cl_kernel k;
  kiln_status s =
      kiln__text_kernel_get("child", ctx, "child axpb", text, strlen(text), NULL, "axpb", &k);
  kiln__ctx_unlock(ctx);
  if (s != KILN_OK) {
    printf("error %s\n", kiln_last_error());
    return 4;
  }
  kiln_cache_stats st;
  kiln_context_cache_stats(ctx, &st);
  printf("compiles=%llu hits=%llu misses=%llu stores=%llu\n",
         (unsigned long long)kiln__text_compiles(), (unsigned long long)st.session.hits,
         (unsigned long long)st.session.misses, (unsigned long long)st.session.stores);
  kiln_context_release(ctx);
  free(text);
  return 0;
}

/* Counts entries labelled "child axpb" or "twice" (the children's programs). */
static int
count_label(const kiln_cache_entry *e, void *user)
{
  int *n = user;
  if (strcmp(e->label, "child axpb") == 0 || strcmp(e->label, "twice") == 0)
    (*n)++;
  return 0;
}

START_TEST(second_process_gets_a_disk_hit)
{
  /* Under the simulator (KILN_CACHE=off, a device identity of its own) there is no disk cache to test. */
  if (getenv("KILN_TEST_OCLGRIND"))
    return;
  char *dir = harness_tempdir();
  char env_dir[4200], tag[64];
  snprintf(env_dir, sizeof env_dir, "KILN_CACHE_DIR=%s", dir);
  snprintf(tag, sizeof tag, "%d-%ld", (int)getpid(), (long)time(NULL));
  /* The default store policy: a text program is stored on a miss on every platform. */
  const char *env[] = {env_dir, "KILN_CACHE=on", "KILN_CACHE_STORE=auto", NULL};
  const char *args[] = {"text", tag, NULL};
  char out[4096];
  ck_assert_msg(spawn_child("/proc/self/exe", "test_user_kernel", args, env, out, sizeof out) == 0,
                "first child: %s", out);
  ck_assert_msg(strstr(out, "compiles=1 hits=0 misses=1 stores=1"), "first child: %s", out);
  ck_assert_msg(spawn_child("/proc/self/exe", "test_user_kernel", args, env, out, sizeof out) == 0,
                "second child: %s", out);
  ck_assert_msg(strstr(out, "compiles=0 hits=1 misses=0 stores=0"), "second child: %s", out);
  /* The same for a user kernel, which `kiln cache list` shows under its name. */
  const char *uargs[] = {"ukernel", tag, NULL};
  ck_assert_msg(spawn_child("/proc/self/exe", "test_user_kernel", uargs, env, out, sizeof out) == 0,
                "first child: %s", out);
  ck_assert_msg(strstr(out, "compiles=1 hits=0 stores=1"), "first child: %s", out);
  ck_assert_msg(spawn_child("/proc/self/exe", "test_user_kernel", uargs, env, out, sizeof out) == 0,
                "second child: %s", out);
  ck_assert_msg(strstr(out, "compiles=0 hits=1 stores=0"), "second child: %s", out);
  kiln_cache *c;
  KOK(kiln_cache_open(dir, KILN_CACHE_READONLY, &c));
  int labels = 0;
  KOK(kiln_cache_foreach_entry(c, 0, count_label, &labels));
  ck_assert_int_eq(labels, 2);
  kiln_cache_close(c);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *
user_kernel_suite(void)
{
  Suite *s = suite_create("user_kernel");
  TCase *tc = tcase_create("text programs");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, text_program_runs_and_is_registered_once);
  tcase_add_test(tc, text_program_bad_input);
  tcase_add_test(tc, many_threads_build_one_text_once);
  tcase_add_test(tc, second_process_gets_a_disk_hit);
  suite_add_tcase(s, tc);
  TCase *uk = tcase_create("user kernels");
  tcase_set_timeout(uk, 240);
  tcase_add_test(uk, elementwise_kernels_match_host);
  tcase_add_loop_test(uk, reduction_kernels_match_host, 0, 2);
  tcase_add_loop_test(uk, scan_kernels_match_host, 0, 2);
  tcase_add_test(uk, raw_kernels_run_and_check_arguments);
  tcase_add_test(uk, declarations_and_errors);
  tcase_add_test(uk, warm_file_compiles_into_the_cache);
  suite_add_tcase(s, uk);
  TCase *gran = tcase_create("program granularity");
  tcase_set_timeout(gran, 240);
  tcase_add_test(gran, every_source_builds_one_kernel_programs);
  suite_add_tcase(s, gran);
  return s;
}

int
main(int argc, char **argv)
{
  if (argc > 3 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "text") == 0)
    return child_text(argv[3]);
  if (argc > 3 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "ukernel") == 0)
    return child_ukernel(argv[3]);
  return harness_main(user_kernel_suite(), 1);
}
