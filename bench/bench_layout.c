/*
 * bench_layout: layout, indexing and random-number throughput next to the
 * same device's copy bandwidth, measured in the same run.
 *
 *   bench_layout [--device SELECTOR] [--reps N] [--size N] [--only SECTION]
 *
 * SECTION is one of transpose (with copy), permute, gather, random.
 *
 * Reports, each as the median of N runs (default 7) after one warm-up run,
 * timed with OpenCL profiling events (kiln_profile_begin/end sums the device
 * time of the kernels an operation enqueues):
 *   copy       clEnqueueCopyBuffer of the transpose's bytes (the reference)
 *   transpose  size x size f32 (default 8192), tiled kernel
 *   permute    4-D f32 tensors of the same byte count, three permutations:
 *              (0,2,3,1) NCHW->NHWC (a batched transpose after merging),
 *              (0,2,1,3) (inner rows stay contiguous), (3,2,1,0) (full reversal)
 *   gather     embedding lookup and index_select of rows, torch-style gather
 *   random     normal f32/f64 and uniform f32 generation
 * GB/s counts bytes read plus bytes written once each. Prints one line per
 * case; nothing is asserted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"

static int reps = 7;
static const char *only;

static int
wanted(const char *section)
{
  return !only || !strcmp(only, section);
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

#define CHECK(call)                                                                            \
  do {                                                                                         \
    kiln_status s_ = (call);                                                                   \
    if (s_ != KILN_OK) {                                                                       \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, kiln_status_name(s_), kiln_last_error()); \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

/* One measured operation: a callback with its state. */
typedef kiln_status (*op_fn)(kiln_context *ctx, void *state);

/* Median device seconds of the kernels op enqueues (warm-up run first). */
static double
time_kernels(kiln_context *ctx, op_fn op, void *state)
{
  double *t = malloc((size_t)reps * sizeof *t);
  CHECK(op(ctx, state));
  CHECK(kiln_context_finish(ctx));
  for (int r = 0; r < reps; r++) {
    kiln_profile p;
    CHECK(kiln_profile_begin(ctx));
    CHECK(op(ctx, state));
    CHECK(kiln_profile_end(ctx, &p));
    t[r] = (double)p.device_ns * 1e-9;
  }
  double m = median(t, reps);
  free(t);
  return m;
}

/* Median device seconds of clEnqueueCopyBuffer between two tensors' buffers. */
static double
time_copy(kiln_context *ctx, kiln_tensor *a, kiln_tensor *b)
{
  cl_command_queue q;
  CHECK(kiln_context_cl_objects(ctx, NULL, NULL, &q));
  cl_mem ma, mb;
  size_t oa, ob;
  CHECK(kiln_tensor_cl_mem(a, &ma, &oa));
  CHECK(kiln_tensor_cl_mem(b, &mb, &ob));
  size_t bytes = (size_t)kiln_tensor_nbytes(a);
  double *t = malloc((size_t)(reps + 1) * sizeof *t);
  for (int r = 0; r <= reps; r++) {
    cl_event ev;
    if (clEnqueueCopyBuffer(q, ma, mb, oa, ob, bytes, 0, NULL, &ev) != CL_SUCCESS ||
        clWaitForEvents(1, &ev) != CL_SUCCESS) {
      fprintf(stderr, "copy failed\n");
      exit(1);
    }
    cl_ulong s = 0, e = 0;
    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof s, &s, NULL);
    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof e, &e, NULL);
    clReleaseEvent(ev);
    t[r] = (double)(e - s) * 1e-9;
  }
  double m = median(t + 1, reps); /* the first copy is the warm-up */
  free(t);
  return m;
}

struct unary_state {
  kiln_tensor *x, *out;
  const int64_t *perm;
  size_t nperm;
};

static kiln_status
op_transpose(kiln_context *ctx, void *s)
{
  struct unary_state *u = s;
  return kiln_transpose(ctx, u->x, &u->out);
}

static kiln_status
op_permute(kiln_context *ctx, void *s)
{
  struct unary_state *u = s;
  return kiln_permute(ctx, u->x, u->perm, u->nperm, &u->out);
}

struct gather_state {
  kiln_tensor *x, *index, *out;
  int kind; /* 0 embedding, 1 index_select axis 0, 2 gather axis 1 */
};

static kiln_status
op_gather(kiln_context *ctx, void *s)
{
  struct gather_state *g = s;
  switch (g->kind) {
  case 0:
    return kiln_embedding(ctx, g->x, g->index, &g->out);
  case 1:
    return kiln_index_select(ctx, g->x, 0, g->index, &g->out);
  default:
    return kiln_gather(ctx, g->x, 1, g->index, &g->out);
  }
}

struct random_state {
  kiln_tensor *out;
  int normal;
};

static kiln_status
op_random(kiln_context *ctx, void *s)
{
  struct random_state *r = s;
  return r->normal ? kiln_random_normal(ctx, r->out, 0.0, 1.0)
                   : kiln_random_uniform(ctx, r->out, 0.0, 1.0);
}

static void
report(const char *name, double seconds, double bytes, double copy_gbps)
{
  double gbps = bytes / seconds * 1e-9;
  printf("%-34s %9.3f ms  %7.2f GB/s  %5.1f%% of copy\n", name, seconds * 1e3, gbps,
         100.0 * gbps / copy_gbps);
}

int
main(int argc, char **argv)
{
  const char *device = NULL;
  int64_t size = 8192;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc)
      device = argv[++i];
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--size") && i + 1 < argc)
      size = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else {
      fprintf(stderr,
              "usage: %s [--device SELECTOR] [--reps N] [--size N] "
              "[--only transpose|permute|gather|random]\n",
              argv[0]);
      return 2;
    }
  }
  if (reps < 1 || size < 256 || size % 256) {
    fprintf(stderr, "reps must be >= 1 and size a positive multiple of 256\n");
    return 2;
  }
  kiln_context *ctx = NULL;
  CHECK(kiln_context_create(device, &ctx));
  kiln_device_info info;
  CHECK(kiln_context_device_info(ctx, &info));
  printf("device: %s (%s, driver %s), %u compute units\n", info.name, info.platform_name,
         info.driver_version, info.compute_units);
  printf("median of %d runs after a warm-up; device time from OpenCL profiling events\n\n", reps);

  /* Reference and transpose: size x size f32. */
  int64_t sq[2] = {size, size};
  kiln_tensor *a = NULL, *b = NULL;
  CHECK(kiln_tensor_create(ctx, KILN_F32, 2, sq, &a));
  CHECK(kiln_rng_seed(ctx, 1));
  CHECK(kiln_random_uniform(ctx, a, -1.0, 1.0));
  CHECK(kiln_tensor_create(ctx, KILN_F32, 2, sq, &b));
  double bytes = 2.0 * (double)kiln_tensor_nbytes(a);
  double copy_s = time_copy(ctx, a, b);
  double copy_gbps = bytes / copy_s * 1e-9;
  char name[96];
  snprintf(name, sizeof name, "copy %lldx%lld f32", (long long)size, (long long)size);
  report(name, copy_s, bytes, copy_gbps);
  struct unary_state u = {a, b, NULL, 0};
  snprintf(name, sizeof name, "transpose %lldx%lld f32", (long long)size, (long long)size);
  if (wanted("transpose"))
    report(name, time_kernels(ctx, op_transpose, &u), bytes, copy_gbps);
  CHECK(kiln_tensor_release(b));

  /* 4-D permutes of the same tensor viewed as [n, c, h, w] = [size^2 / 2^16, 64, 32, 32]. */
  int64_t s4[4] = {size * size / 65536, 64, 32, 32};
  kiln_tensor *x4 = NULL;
  CHECK(kiln_reshape(ctx, a, 4, s4, &x4));
  static const int64_t perms[3][4] = {{0, 2, 3, 1}, {0, 2, 1, 3}, {3, 2, 1, 0}};
  for (int p = 0; p < 3 && wanted("permute"); p++) {
    struct unary_state pu = {x4, NULL, perms[p], 4};
    snprintf(name, sizeof name, "permute [%lld,64,32,32] (%lld,%lld,%lld,%lld)", (long long)s4[0],
             (long long)perms[p][0], (long long)perms[p][1], (long long)perms[p][2],
             (long long)perms[p][3]);
    CHECK(op_permute(ctx, &pu)); /* allocates the output once */
    report(name, time_kernels(ctx, op_permute, &pu), bytes, copy_gbps);
    CHECK(kiln_tensor_release(pu.out));
  }
  CHECK(kiln_tensor_release(x4));
  CHECK(kiln_tensor_release(a));

  if (wanted("gather")) {
    /* Gathers: an embedding table of 65536 x 128 f32 and 2^18 random rows. */
    int64_t ws[2] = {65536, 128}, nidx = 1 << 18;
    kiln_tensor *w = NULL, *idx = NULL;
    CHECK(kiln_tensor_create(ctx, KILN_F32, 2, ws, &w));
    CHECK(kiln_random_uniform(ctx, w, -1.0, 1.0));
    CHECK(kiln_tensor_create(ctx, KILN_I64, 1, &nidx, &idx));
    CHECK(kiln_random_integers(ctx, idx, 0, ws[0]));
    struct gather_state g = {w, idx, NULL, 0};
    CHECK(op_gather(ctx, &g));
    double gb = 2.0 * (double)kiln_tensor_nbytes(g.out) + (double)kiln_tensor_nbytes(idx);
    double gs = time_kernels(ctx, op_gather, &g);
    report("embedding 2^18 rows of 128 f32", gs, gb, copy_gbps);
    printf("%-34s %9.1f M rows/s\n", "", (double)nidx / gs * 1e-6);
    CHECK(kiln_tensor_release(g.out));
    g.kind = 1;
    g.out = NULL;
    CHECK(op_gather(ctx, &g));
    report("index_select axis 0 (same rows)", time_kernels(ctx, op_gather, &g), gb, copy_gbps);
    CHECK(kiln_tensor_release(g.out));
    /* torch.gather along axis 1: every output element picks its own column. */
    int64_t gs2[2] = {4096, 1024};
    kiln_tensor *gx = NULL, *gi = NULL;
    CHECK(kiln_tensor_create(ctx, KILN_F32, 2, gs2, &gx));
    CHECK(kiln_random_uniform(ctx, gx, 0.0, 1.0));
    CHECK(kiln_tensor_create(ctx, KILN_I32, 2, gs2, &gi));
    CHECK(kiln_random_integers(ctx, gi, 0, gs2[1]));
    struct gather_state g2 = {gx, gi, NULL, 2};
    CHECK(op_gather(ctx, &g2));
    double g2b = 2.0 * (double)kiln_tensor_nbytes(gx) + (double)kiln_tensor_nbytes(gi);
    double g2s = time_kernels(ctx, op_gather, &g2);
    report("gather axis 1 4096x1024 f32", g2s, g2b, copy_gbps);
    printf("%-34s %9.1f M elements/s\n", "", (double)kiln_tensor_numel(gx) / g2s * 1e-6);
    CHECK(kiln_tensor_release(g2.out));
    CHECK(kiln_tensor_release(gi));
    CHECK(kiln_tensor_release(gx));
    CHECK(kiln_tensor_release(idx));
    CHECK(kiln_tensor_release(w));
  }

  /* Random generation: 2^26 values. */
  int64_t rn = (int64_t)1 << 26;
  for (int c = 0; c < 3 && wanted("random"); c++) {
    kiln_dtype dt = c == 1 ? KILN_F64 : KILN_F32;
    if (dt == KILN_F64 && !info.has_fp64)
      continue;
    struct random_state r = {NULL, c < 2};
    CHECK(kiln_tensor_create(ctx, dt, 1, &rn, &r.out));
    double t = time_kernels(ctx, op_random, &r);
    snprintf(name, sizeof name, "random %s %s 2^26", c < 2 ? "normal" : "uniform",
             kiln_dtype_name(dt));
    report(name, t, (double)kiln_tensor_nbytes(r.out), copy_gbps);
    printf("%-34s %9.1f M values/s\n", "", (double)rn / t * 1e-6);
    CHECK(kiln_tensor_release(r.out));
  }
  CHECK(kiln_context_release(ctx));
  return 0;
}
