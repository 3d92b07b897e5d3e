/*
 * Reduction and scan bandwidth against the same device's copy bandwidth, measured in the
 * same run: the figures of docs/performance.md ("Reductions and scans").
 *
 * Cases (f32): sum and max of 2^26 elements, the row-wise sum of an 8192 x 8192 matrix
 * (the three), plus argmax and mean of the 2^26 elements, the column-wise sum of
 * the matrix and the cumsum of the 2^26 elements. Each case runs once untimed (program
 * build, first-launch compile), then --reps times; reported are the medians of
 *   device: the summed OpenCL profiling times of the op's kernels (kiln_profile_*),
 *   wall:   the host clock around the call and kiln_context_finish().
 * GB/s = bytes the op must move / time: a reduction reads its input once (the output is
 * negligible), a scan reads and writes it. The copy reference moves 2 x bytes (read +
 * write) and is the better of clEnqueueCopyBuffer and a float4 copy kernel, timed with
 * profiling events on the context's own queue (kiln_context_cl_objects).
 *
 * usage: bench_reduce [--reps N] [--log2n K] [--rows R] [--cols C] [--device SELECTOR]
 */
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
cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define CHECK(call)                                                                          \
  do {                                                                                       \
    kiln_status s_ = (call);                                                                 \
    if (s_ != KILN_OK) {                                                                     \
      fprintf(stderr, "%s: %s\n", #call, kiln_last_error());                                 \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

static const char copy_src[] =
    "kernel void copy4(global const float4 *a, global float4 *b) {\n"
    "  b[get_global_id(0)] = a[get_global_id(0)];\n"
    "}\n";

/* Seconds of one profiled command. */
static double
event_seconds(cl_event ev)
{
  cl_ulong t0 = 0, t1 = 0;
  clWaitForEvents(1, &ev);
  clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
  clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
  clReleaseEvent(ev);
  return (double)(t1 - t0) * 1e-9;
}

/* Best of clEnqueueCopyBuffer and a float4 copy kernel: GB/s of read + write. */
static double
copy_bandwidth(kiln_context *ctx, uint64_t bytes, int reps, const char **how)
{
  cl_context cl;
  cl_device_id dev;
  cl_command_queue q;
  CHECK(kiln_context_cl_objects(ctx, &cl, &dev, &q));
  cl_int err;
  cl_mem a = clCreateBuffer(cl, CL_MEM_READ_WRITE, bytes, NULL, &err);
  cl_mem b = clCreateBuffer(cl, CL_MEM_READ_WRITE, bytes, NULL, &err);
  if (!a || !b) {
    fprintf(stderr, "copy reference: clCreateBuffer failed (%d)\n", err);
    exit(1);
  }
  float zero = 0;
  clEnqueueFillBuffer(q, a, &zero, sizeof zero, 0, bytes, 0, NULL, NULL);
  clEnqueueFillBuffer(q, b, &zero, sizeof zero, 0, bytes, 0, NULL, NULL);
  clFinish(q);
  double *t = malloc((size_t)reps * sizeof *t);
  /* clEnqueueCopyBuffer */
  for (int r = -1; r < reps; r++) {
    cl_event ev;
    clEnqueueCopyBuffer(q, a, b, 0, 0, bytes, 0, NULL, &ev);
    double s = event_seconds(ev);
    if (r >= 0)
      t[r] = s;
  }
  double best = 2.0 * (double)bytes / median(t, reps) / 1e9;
  *how = "clEnqueueCopyBuffer";
  /* A float4 copy kernel */
  const char *src = copy_src;
  cl_program prog = clCreateProgramWithSource(cl, 1, &src, NULL, &err);
  if (prog && clBuildProgram(prog, 1, &dev, "", NULL, NULL) == CL_SUCCESS) {
    cl_kernel k = clCreateKernel(prog, "copy4", &err);
    clSetKernelArg(k, 0, sizeof a, &a);
    clSetKernelArg(k, 1, sizeof b, &b);
    size_t global = (size_t)(bytes / 16), local = 256;
    for (int r = -1; r < reps; r++) {
      cl_event ev;
      clEnqueueNDRangeKernel(q, k, 1, NULL, &global, global % local ? NULL : &local, 0, NULL,
                             &ev);
      double s = event_seconds(ev);
      if (r >= 0)
        t[r] = s;
    }
    double k_gbs = 2.0 * (double)bytes / median(t, reps) / 1e9;
    if (k_gbs > best) {
      best = k_gbs;
      *how = "float4 copy kernel";
    }
    clReleaseKernel(k);
  }
  if (prog)
    clReleaseProgram(prog);
  clReleaseMemObject(a);
  clReleaseMemObject(b);
  free(t);
  return best;
}

enum kind { REDUCE, ARGREDUCE, SCAN };

struct bcase {
  const char *name;
  enum kind kind;
  int op;
  int matrix; /* input: 0 the vector, 1 the matrix */
  int64_t axis; /* -1: all axes */
  double traffic; /* bytes moved per input byte: 1 (read) or 2 (read + write) */
};

static void
run_case(kiln_context *ctx, const struct bcase *c, kiln_tensor *x, int reps, double copy_gbs)
{
  double *dev = malloc((size_t)reps * sizeof *dev), *wall = malloc((size_t)reps * sizeof *wall);
  uint64_t kernels = 0;
  for (int r = -1; r < reps; r++) {
    kiln_tensor *y = NULL, *v = NULL;
    CHECK(kiln_context_finish(ctx));
    CHECK(kiln_profile_begin(ctx));
    double t0 = now();
    if (c->kind == REDUCE)
      CHECK(kiln_reduce(ctx, (kiln_reduce_op)c->op, x, c->axis < 0 ? NULL : &c->axis,
                        c->axis < 0 ? 0 : 1, 0, NULL, &y));
    else if (c->kind == ARGREDUCE)
      CHECK(kiln_argreduce(ctx, (kiln_reduce_op)c->op, x, NULL, 0, 0, NULL, &v, &y));
    else
      CHECK(kiln_scan(ctx, (kiln_scan_op)c->op, x, c->axis, NULL, &y));
    CHECK(kiln_context_finish(ctx));
    double t1 = now();
    kiln_profile prof;
    CHECK(kiln_profile_end(ctx, &prof));
    if (r >= 0) {
      dev[r] = (double)prof.device_ns * 1e-9;
      wall[r] = t1 - t0;
      kernels = prof.kernels;
    }
    kiln_tensor_release(y);
    kiln_tensor_release(v);
  }
  double bytes = (double)kiln_tensor_nbytes(x) * c->traffic;
  double md = median(dev, reps), mw = median(wall, reps);
  printf("%-30s %8.2f %8.2f %8.2f %8.2f %6.0f%% %4llu\n", c->name, md * 1e3, mw * 1e3,
         bytes / md / 1e9, bytes / mw / 1e9, 100.0 * (bytes / md / 1e9) / copy_gbs,
         (unsigned long long)kernels);
  free(dev);
  free(wall);
}

int
main(int argc, char **argv)
{
  int reps = 7, log2n = 26;
  int64_t rows = 8192, cols = 8192;
  const char *device = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--log2n") && i + 1 < argc)
      log2n = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--rows") && i + 1 < argc)
      rows = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--cols") && i + 1 < argc)
      cols = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--device") && i + 1 < argc)
      device = argv[++i];
    else {
      fprintf(stderr,
              "usage: %s [--reps N] [--log2n K] [--rows R] [--cols C] [--device SELECTOR]\n",
              argv[0]);
      return 2;
    }
  }
  if (reps < 1 || log2n < 4 || log2n > 34 || rows < 1 || cols < 1) {
    fprintf(stderr, "bad arguments\n");
    return 2;
  }
  kiln_context *ctx = NULL;
  CHECK(kiln_context_create(device, &ctx));
  kiln_device_info info;
  CHECK(kiln_context_device_info(ctx, &info));

  int64_t n = (int64_t)1 << log2n;
  int64_t shape[2] = {rows, cols};
  uint64_t big = (uint64_t)(n > rows * cols ? n : rows * cols);
  float *h = malloc(big * sizeof *h);
  if (!h) {
    fprintf(stderr, "out of host memory\n");
    return 1;
  }
  uint32_t s = 12345;
  for (uint64_t i = 0; i < big; i++) {
    s = s * 1664525u + 1013904223u;
    h[i] = (float)(s >> 8) / 16777216.0f * 4.0f - 2.0f;
  }
  kiln_tensor *vec = NULL, *mat = NULL;
  CHECK(kiln_tensor_from_host(ctx, KILN_F32, 1, &n, h, &vec));
  CHECK(kiln_tensor_from_host(ctx, KILN_F32, 2, shape, h, &mat));
  free(h);

  const char *how = "";
  double copy_gbs = copy_bandwidth(ctx, (uint64_t)n * 4, reps, &how);
  printf("device: %s (%s, driver %s), %u compute units\n", info.name, info.platform_name,
         info.driver_version, info.compute_units);
  printf("copy reference: %.2f GB/s (read + write, %s, %.0f MiB)\n", copy_gbs, how,
         (double)n * 4 / 1048576.0);
  printf("medians of %d runs; GB/s = bytes moved / time; %% = device GB/s / copy GB/s\n", reps);
  printf("%-30s %8s %8s %8s %8s %7s %4s\n", "case", "dev ms", "wall ms", "dev GB/s",
         "wall GB/s", "% copy", "kern");

  char n_name[6][64];
  snprintf(n_name[0], sizeof n_name[0], "sum 2^%d f32", log2n);
  snprintf(n_name[1], sizeof n_name[1], "max 2^%d f32", log2n);
  snprintf(n_name[2], sizeof n_name[2], "sum rows %lldx%lld f32", (long long)rows,
           (long long)cols);
  snprintf(n_name[3], sizeof n_name[3], "argmax 2^%d f32", log2n);
  snprintf(n_name[4], sizeof n_name[4], "mean 2^%d f32", log2n);
  snprintf(n_name[5], sizeof n_name[5], "sum cols %lldx%lld f32", (long long)rows,
           (long long)cols);
  char scan_name[48];
  snprintf(scan_name, sizeof scan_name, "cumsum 2^%d f32", log2n);
  const struct bcase cases[] = {
      {n_name[0], REDUCE, KILN_REDUCE_SUM, 0, -1, 1},
      {n_name[1], REDUCE, KILN_REDUCE_MAX, 0, -1, 1},
      {n_name[2], REDUCE, KILN_REDUCE_SUM, 1, 1, 1},
      {n_name[3], ARGREDUCE, KILN_REDUCE_ARGMAX, 0, -1, 1},
      {n_name[4], REDUCE, KILN_REDUCE_MEAN, 0, -1, 1},
      {n_name[5], REDUCE, KILN_REDUCE_SUM, 1, 0, 1},
      {scan_name, SCAN, KILN_SCAN_CUMSUM, 0, 0, 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    run_case(ctx, &cases[i], cases[i].matrix ? mat : vec, reps, copy_gbs);

  kiln_tensor_release(vec);
  kiln_tensor_release(mat);
  CHECK(kiln_context_release(ctx));
  return 0;
}
