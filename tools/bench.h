/* kiln bench: case table and measurement helpers shared by tools/bench_*.c. */
#ifndef KILN_TOOLS_BENCH_H
#define KILN_TOOLS_BENCH_H

#include <stdint.h>

#include "kiln.h"

/* Inputs and output of one case at one (dtype, size); set up once, run many times. */
struct bench_state {
  kiln_context *ctx;
  kiln_dtype dtype;
  int64_t n;
  kiln_tensor *in[8]; /* inputs and extra outputs, released together */
  kiln_tensor *out;
  kiln_fft_plan *plan; /* FFT cases */
  kiln_user_kernel *uk; /* user-kernel cases */
};

struct bench_case {
  const char *name;   /* "family.op", matched by --filter */
  const char *family; /* op family, for grouping in reports */
  /* Nonzero when the case applies to dtype. */
  int (*supports)(kiln_dtype dtype);
  /* Makes inputs (and the output, so runs measure the op, not the allocation). */
  kiln_status (*setup)(struct bench_state *st);
  /* One call of the operation. */
  kiln_status (*run)(struct bench_state *st);
  /*
   * Bytes the op must move (read + write) for n elements of esz bytes: the GB/s
   * numerator. NULL for compute-bound cases (GEMM), whose GB/s and copy ratio
   * would mean nothing.
   */
  double (*bytes)(int64_t n, size_t esz);
  /* Floating-point operations of one call at size n (GFLOP/s numerator); NULL for memory-bound ops. */
  double (*flops)(int64_t n);
};

extern const struct bench_case bench_cases[];
extern const size_t bench_case_count;

/*
 * Nonzero when the case does part of its work on the host (linalg's host panels and LAPACK
 * stages): kernel time would miss that part, so its device time is the wall time.
 */
int bench_case_host_work(const struct bench_case *c);

/* Best plain-copy bandwidth (GB/s, read + write) for nbytes with raw OpenCL kernels of
 * vector widths 1..16, timed with profiling events; also the width that won. */
kiln_status bench_copy_reference(kiln_context *ctx, uint64_t nbytes, int reps, double *gbps,
                                 int *best_width);

/* Shared setup helpers for cases. */
kiln_status bench_random_tensor(kiln_context *ctx, kiln_dtype dtype, size_t ndim,
                                const int64_t *shape, kiln_tensor **out);
void bench_state_release(struct bench_state *st);

/* Fused expression rows (tools/bench_expr.c). */
int bench_expr_demo_dtype(kiln_dtype d);
int bench_expr_float_dtype(kiln_dtype d);
kiln_status bench_expr_demo_setup(struct bench_state *st);
kiln_status bench_expr_run(struct bench_state *st);
kiln_status bench_expr_demo_unfused_setup(struct bench_state *st);
kiln_status bench_expr_demo_unfused_run(struct bench_state *st);
kiln_status bench_expr_sum8_setup(struct bench_state *st);
kiln_status bench_expr_sum8_unfused_setup(struct bench_state *st);
kiln_status bench_expr_sum8_unfused_run(struct bench_state *st);
double bench_expr_bytes_4in(int64_t n, size_t esz);

#endif
