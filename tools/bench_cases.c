/* The benchmark cases: one row per measured operation. A new op family adds rows here. */
#include <stdlib.h>

#include "tools/bench.h"

kiln_status
bench_random_tensor(kiln_context *ctx, kiln_dtype dtype, size_t ndim, const int64_t *shape,
                    kiln_tensor **out)
{
  int64_t n = 1;
  for (size_t i = 0; i < ndim; i++)
    n *= shape[i];
  size_t esz = kiln_dtype_size(dtype);
  unsigned char *h = malloc((size_t)n * esz + 1);
  if (!h)
    return KILN_ERR_HOST_MEMORY;
  uint32_t x = 12345;
  for (int64_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    double v = (double)(x >> 8) / 16777216.0 * 4.0 - 2.0; /* [-2, 2) */
    switch (dtype) {
    case KILN_F32: ((float *)h)[i] = (float)v; break;
    case KILN_F64: ((double *)h)[i] = v; break;
    case KILN_I32: ((int32_t *)h)[i] = (int32_t)(x >> 4); break;
    case KILN_I64: ((int64_t *)h)[i] = (int64_t)x; break;
    case KILN_U8: h[i] = (unsigned char)(x >> 24); break;
    default: h[i] = (unsigned char)(x >> 31); break;
    }
  }
  kiln_status s = kiln_tensor_from_host(ctx, dtype, ndim, shape, h, out);
  free(h);
  return s;
}

void
bench_state_release(struct bench_state *st)
{
  for (int i = 0; i < 3; i++) {
    kiln_tensor_release(st->in[i]);
    st->in[i] = NULL;
  }
  kiln_tensor_release(st->out);
  st->out = NULL;
}

static int
any_dtype(kiln_dtype d)
{
  (void)d;
  return 1;
}

static int
float_dtype(kiln_dtype d)
{
  return d == KILN_F32 || d == KILN_F64;
}

static int
num_dtype(kiln_dtype d)
{
  return d != KILN_BOOL;
}

static double
bytes_1in_1out(int64_t n, size_t esz)
{
  return 2.0 * (double)n * (double)esz;
}

static double
bytes_2in_1out(int64_t n, size_t esz)
{
  return 3.0 * (double)n * (double)esz;
}

/* A broadcast row is read once from cache: count the big operand and the output. */
static double
bytes_bcast(int64_t n, size_t esz)
{
  return 2.0 * (double)n * (double)esz;
}

static double
bytes_where(int64_t n, size_t esz)
{
  return (double)n * (3.0 * (double)esz + 1.0);
}

static kiln_status
setup_one(struct bench_state *st)
{
  kiln_status s = bench_random_tensor(st->ctx, st->dtype, 1, &st->n, &st->in[0]);
  if (s == KILN_OK)
    s = kiln_tensor_create(st->ctx, st->dtype, 1, &st->n, &st->out);
  return s;
}

static kiln_status
setup_two(struct bench_state *st)
{
  kiln_status s = setup_one(st);
  if (s == KILN_OK)
    s = bench_random_tensor(st->ctx, st->dtype, 1, &st->n, &st->in[1]);
  return s;
}

/* [n/1024, 1024] + [1024]: the common bias-add broadcast. */
static kiln_status
setup_row_bcast(struct bench_state *st)
{
  int64_t cols = st->n < 1024 ? st->n : 1024;
  int64_t shape[2] = {st->n / cols, cols};
  kiln_status s = bench_random_tensor(st->ctx, st->dtype, 2, shape, &st->in[0]);
  if (s == KILN_OK)
    s = bench_random_tensor(st->ctx, st->dtype, 1, &cols, &st->in[1]);
  if (s == KILN_OK)
    s = kiln_tensor_create(st->ctx, st->dtype, 2, shape, &st->out);
  return s;
}

static kiln_status
setup_where(struct bench_state *st)
{
  kiln_status s = setup_two(st);
  if (s == KILN_OK)
    s = bench_random_tensor(st->ctx, KILN_BOOL, 1, &st->n, &st->in[2]);
  return s;
}

static kiln_status
setup_cast(struct bench_state *st)
{
  kiln_status s = bench_random_tensor(st->ctx, st->dtype, 1, &st->n, &st->in[0]);
  if (s == KILN_OK)
    s = kiln_tensor_create(st->ctx, KILN_I32, 1, &st->n, &st->out);
  return s;
}

static double
bytes_cast(int64_t n, size_t esz)
{
  return (double)n * ((double)esz + 4.0);
}

static kiln_status
run_copy(struct bench_state *st)
{
  return kiln_copy(st->ctx, st->in[0], st->out);
}

static kiln_status
run_neg(struct bench_state *st)
{
  return kiln_unary(st->ctx, KILN_OP_NEG, st->in[0], &st->out);
}

static kiln_status
run_exp(struct bench_state *st)
{
  return kiln_unary(st->ctx, KILN_OP_EXP, st->in[0], &st->out);
}

static kiln_status
run_add(struct bench_state *st)
{
  return kiln_binary(st->ctx, KILN_OP_ADD, st->in[0], st->in[1], &st->out);
}

static kiln_status
run_mul_scalar(struct bench_state *st)
{
  return kiln_binary_scalar(st->ctx, KILN_OP_MUL, st->in[0], kiln_scalar_f64(3.0), 0, &st->out);
}

static kiln_status
run_where(struct bench_state *st)
{
  return kiln_where(st->ctx, st->in[2], st->in[0], st->in[1], &st->out);
}

static kiln_status
run_cast(struct bench_state *st)
{
  return kiln_cast(st->ctx, st->in[0], KILN_I32, &st->out);
}

/* Reductions and scans over [n/1024, 1024] (rows) or [1024, n/1024] (columns), or all of n. */
static kiln_status
setup_matrix(struct bench_state *st, int cols_first)
{
  int64_t inner = st->n < 1024 ? st->n : 1024;
  int64_t shape[2] = {st->n / inner, inner};
  if (cols_first) {
    shape[0] = inner;
    shape[1] = st->n / inner;
  }
  return bench_random_tensor(st->ctx, st->dtype, 2, shape, &st->in[0]);
}

static kiln_status
setup_rows(struct bench_state *st)
{
  return setup_matrix(st, 0);
}

static kiln_status
setup_cols(struct bench_state *st)
{
  return setup_matrix(st, 1);
}

static kiln_status
setup_flat(struct bench_state *st)
{
  return bench_random_tensor(st->ctx, st->dtype, 1, &st->n, &st->in[0]);
}

/* The output is made by the first run (its shape depends on the case) and reused after. */
static kiln_status
run_sum_all(struct bench_state *st)
{
  return kiln_reduce(st->ctx, KILN_REDUCE_SUM, st->in[0], NULL, 0, 0, NULL, &st->out);
}

static kiln_status
run_sum_axis1(struct bench_state *st)
{
  int64_t axis = 1;
  return kiln_reduce(st->ctx, KILN_REDUCE_SUM, st->in[0], &axis, 1, 0, NULL, &st->out);
}

static kiln_status
run_sum_axis0(struct bench_state *st)
{
  int64_t axis = 0;
  return kiln_reduce(st->ctx, KILN_REDUCE_SUM, st->in[0], &axis, 1, 0, NULL, &st->out);
}

static kiln_status
run_cumsum_axis1(struct bench_state *st)
{
  return kiln_scan(st->ctx, KILN_SCAN_CUMSUM, st->in[0], 1, NULL, &st->out);
}

static kiln_status
run_cumsum_axis0(struct bench_state *st)
{
  return kiln_scan(st->ctx, KILN_SCAN_CUMSUM, st->in[0], 0, NULL, &st->out);
}

/* A reduction reads its input once; its outputs are a rounding error next to it. */
static double
bytes_read(int64_t n, size_t esz)
{
  return (double)n * (double)esz;
}

static int
float_only(kiln_dtype d)
{
  return d == KILN_F32 || d == KILN_F64;
}

const struct bench_case bench_cases[] = {
    {"copy.kiln_copy", "copy", any_dtype, setup_one, run_copy, bytes_1in_1out},
    {"unary.neg", "elementwise", num_dtype, setup_one, run_neg, bytes_1in_1out},
    {"unary.exp", "elementwise", float_dtype, setup_one, run_exp, bytes_1in_1out},
    {"binary.add", "elementwise", num_dtype, setup_two, run_add, bytes_2in_1out},
    {"binary.add_row_bcast", "elementwise", num_dtype, setup_row_bcast, run_add, bytes_bcast},
    {"binary.mul_scalar", "elementwise", num_dtype, setup_one, run_mul_scalar, bytes_1in_1out},
    {"where", "elementwise", any_dtype, setup_where, run_where, bytes_where},
    {"cast.to_i32", "elementwise", any_dtype, setup_cast, run_cast, bytes_cast},
    {"reduce.sum_all", "reduce", float_only, setup_flat, run_sum_all, bytes_read},
    {"reduce.sum_rows", "reduce", float_only, setup_rows, run_sum_axis1, bytes_read},
    {"reduce.sum_cols", "reduce", float_only, setup_cols, run_sum_axis0, bytes_read},
    {"scan.cumsum_rows", "scan", float_only, setup_rows, run_cumsum_axis1, bytes_1in_1out},
    {"scan.cumsum_cols", "scan", float_only, setup_cols, run_cumsum_axis0, bytes_1in_1out},
};
const size_t bench_case_count = sizeof bench_cases / sizeof bench_cases[0];
