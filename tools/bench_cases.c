/* The benchmark cases: one row per measured operation. A new op family adds rows here. */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bench.h"
#include "tools/bench_sort.h"

kiln_status
bench_random_tensor(kiln_context *ctx, kiln_dtype dtype, size_t ndim, const int64_t *shape,
                    kiln_tensor **out)
{
  /* The device tensor first: the library checks the byte count (overflow, the device's largest
     allocation) before a host buffer of that size is allocated and filled. */
  kiln_status s = kiln_tensor_create(ctx, dtype, ndim, shape, out);
  if (s != KILN_OK)
    return s;
  uint64_t n = kiln_tensor_numel(*out), bytes = kiln_tensor_nbytes(*out);
  unsigned char *h = bytes < SIZE_MAX ? malloc((size_t)bytes + 1) : NULL;
  if (!h) {
    kiln_tensor_release(*out);
    *out = NULL;
    return KILN_ERR_HOST_MEMORY;
  }
  uint32_t x = 12345;
  for (uint64_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    double v = (double)(x >> 8) / 16777216.0 * 4.0 - 2.0; /* [-2, 2) */
    double v2 = (double)((x * 2654435761u) >> 8) / 16777216.0 * 4.0 - 2.0; /* imaginary parts */
    switch (dtype) {
    case KILN_F32: ((float *)h)[i] = (float)v; break;
    case KILN_F64: ((double *)h)[i] = v; break;
    case KILN_F16: ((uint16_t *)h)[i] = kiln_f16_from_f64(v); break;
    case KILN_BF16: ((uint16_t *)h)[i] = kiln_bf16_from_f64(v); break;
    case KILN_C64: ((kiln_complex64 *)h)[i] = (kiln_complex64){(float)v, (float)v2}; break;
    case KILN_C128: ((kiln_complex128 *)h)[i] = (kiln_complex128){v, v2}; break;
    case KILN_I32: ((int32_t *)h)[i] = (int32_t)(x >> 4); break;
    case KILN_I64: ((int64_t *)h)[i] = (int64_t)x; break;
    case KILN_U8: h[i] = (unsigned char)(x >> 24); break;
    default: h[i] = (unsigned char)(x >> 31); break;
    }
  }
  s = kiln_tensor_upload(*out, h, (size_t)bytes);
  free(h);
  if (s != KILN_OK) {
    kiln_tensor_release(*out);
    *out = NULL;
  }
  return s;
}

void
bench_state_release(struct bench_state *st)
{
  for (size_t i = 0; i < sizeof st->in / sizeof st->in[0]; i++) {
    kiln_tensor_release(st->in[i]);
    st->in[i] = NULL;
  }
  kiln_tensor_release(st->out);
  st->out = NULL;
  kiln_fft_plan_release(st->plan);
  st->plan = NULL;
  kiln_user_kernel_release(st->uk);
  st->uk = NULL;
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

/* The elementwise rows run the dtypes the library takes for their op (f16 and bf16 included). */
static int
neg_dtype(kiln_dtype d)
{
  return kiln_unary_op_supports(KILN_OP_NEG, d);
}

static int
exp_dtype(kiln_dtype d)
{
  return kiln_unary_op_supports(KILN_OP_EXP, d);
}

static int
add_dtype(kiln_dtype d)
{
  return kiln_binary_op_supports(KILN_OP_ADD, d);
}

static int
mul_dtype(kiln_dtype d)
{
  return kiln_binary_op_supports(KILN_OP_MUL, d);
}

/* where's values: every dtype the elementwise kernels build (max's row takes every class). */
static int
where_dtype(kiln_dtype d)
{
  return kiln_binary_op_supports(KILN_OP_MAX, d);
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

/* Two inputs and no output: the first run makes it (a loss's scalar). */
static kiln_status
setup_two_inputs(struct bench_state *st)
{
  kiln_status s = bench_random_tensor(st->ctx, st->dtype, 1, &st->n, &st->in[0]);
  if (s == KILN_OK)
    s = bench_random_tensor(st->ctx, st->dtype, 1, &st->n, &st->in[1]);
  return s;
}

/*
 * [n/1024, 1024] + b: b = [1024] (per_row 0), the common bias-add broadcast, or
 * [n/1024, 1] (per_row 1), the column form (a value per row, as x - rowmax).
 */
static kiln_status
setup_bcast(struct bench_state *st, int per_row)
{
  int64_t cols = st->n < 1024 ? st->n : 1024;
  int64_t shape[2] = {st->n / cols, cols}, bshape[2] = {st->n / cols, 1};
  kiln_status s = bench_random_tensor(st->ctx, st->dtype, 2, shape, &st->in[0]);
  if (s == KILN_OK)
    s = per_row ? bench_random_tensor(st->ctx, st->dtype, 2, bshape, &st->in[1])
                : bench_random_tensor(st->ctx, st->dtype, 1, &cols, &st->in[1]);
  if (s == KILN_OK)
    s = kiln_tensor_create(st->ctx, st->dtype, 2, shape, &st->out);
  return s;
}

static kiln_status
setup_row_bcast(struct bench_state *st)
{
  return setup_bcast(st, 0);
}

static kiln_status
setup_col_bcast(struct bench_state *st)
{
  return setup_bcast(st, 1);
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
run_mul(struct bench_state *st)
{
  return kiln_binary(st->ctx, KILN_OP_MUL, st->in[0], st->in[1], &st->out);
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

/* The reduce and scan rows run the floating dtypes the library sums (f16, bf16, complex too). */
static int
sum_dtype(kiln_dtype d)
{
  return d != KILN_I32 && d != KILN_I64 && d != KILN_U8 && d != KILN_BOOL &&
         kiln_reduce_op_supports(KILN_REDUCE_SUM, d);
}

static int
cumsum_dtype(kiln_dtype d)
{
  return d != KILN_I32 && d != KILN_I64 && d != KILN_U8 && d != KILN_BOOL &&
         kiln_scan_op_supports(KILN_SCAN_CUMSUM, d);
}

/*
 * GEMM: n is the element count of each square operand, so --sizes 2^20 is a
 * 1024 x 1024 x 1024 product (2 * 1024^3 flops). Rows: the default routing
 * (the autotuner's gemm family, whose default is the built-in threshold),
 * and each route forced for every size by a route override (to find the
 * crossover). Not KILN_OPT_GEMM_SMALL_MNK: once set, that option would route
 * the default row too.
 */
static int64_t
square_dim(int64_t n)
{
  int64_t d = (int64_t)sqrt((double)n);
  while (d * d > n)
    d--;
  while ((d + 1) * (d + 1) <= n)
    d++;
  return d > 0 ? d : 1;
}

static double
flops_gemm(int64_t n)
{
  double d = (double)square_dim(n);
  return 2.0 * d * d * d;
}

/* route: NULL the context's own routing, else "route=1" (kiln's kernel) or "route=2" (CLBlast). */
static kiln_status
setup_gemm_route(struct bench_state *st, const char *route)
{
  kiln_status s = kiln_tune_override(st->ctx, "gemm", st->dtype, NULL, route);
  int64_t d = square_dim(st->n), shape[2] = {d, d};
  if (s == KILN_OK)
    s = bench_random_tensor(st->ctx, st->dtype, 2, shape, &st->in[0]);
  if (s == KILN_OK)
    s = bench_random_tensor(st->ctx, st->dtype, 2, shape, &st->in[1]);
  if (s == KILN_OK)
    s = kiln_tensor_create(st->ctx, st->dtype, 2, shape, &st->out);
  return s;
}

static kiln_status
setup_gemm(struct bench_state *st)
{
  return setup_gemm_route(st, NULL);
}

static kiln_status
setup_gemm_clblast(struct bench_state *st)
{
  return setup_gemm_route(st, "route=2");
}

static kiln_status
setup_gemm_kiln(struct bench_state *st)
{
  return setup_gemm_route(st, "route=1");
}

/* kiln's large-product kernel (cl_kernels/gemm_large.cl; KILN_DEBUG_GEMM_LARGE sets its
 * parameters). */
static kiln_status
setup_gemm_large(struct bench_state *st)
{
  return setup_gemm_route(st, "route=3");
}

/* HGEMM / CGEMM rows: f16/bf16 always run on kiln's tiled kernel (no route to force), complex
 * on the context's routing (CGEMM/ZGEMM above the threshold). */
static int
half_dtype(kiln_dtype d)
{
  return d == KILN_F16 || d == KILN_BF16;
}

static int
complex_dtype(kiln_dtype d)
{
  return d == KILN_C64 || d == KILN_C128;
}

static kiln_status
setup_gemm_plain(struct bench_state *st)
{
  int64_t d = square_dim(st->n), shape[2] = {d, d};
  kiln_status s = bench_random_tensor(st->ctx, st->dtype, 2, shape, &st->in[0]);
  if (s == KILN_OK)
    s = bench_random_tensor(st->ctx, st->dtype, 2, shape, &st->in[1]);
  if (s == KILN_OK)
    s = kiln_tensor_create(st->ctx, st->dtype, 2, shape, &st->out);
  return s;
}

/* A complex multiply-add is 8 real flops. */
static double
flops_cgemm(int64_t n)
{
  return 4.0 * flops_gemm(n);
}

static kiln_status
run_gemm(struct bench_state *st)
{
  return kiln_gemm(st->ctx, KILN_NO_TRANS, KILN_NO_TRANS, 1.0, st->in[0], st->in[1], 0.0,
                   &st->out);
}

/*
 * FFT: one complex-to-complex transform of n points (batch 1, out of place,
 * forward, no normalisation pass). Plan creation is in setup, not timed
 * here (docs/blas_fft.md measures it separately).
 */
static kiln_status
setup_fft_backend(struct bench_state *st, kiln_fft_backend be)
{
  int64_t shape[2] = {st->n, 2};
  kiln_status s = kiln_fft_plan_create(st->ctx, KILN_FFT_C2C, 1, &st->n, 1, st->dtype, 0, be,
                                       &st->plan);
  if (s == KILN_OK)
    s = bench_random_tensor(st->ctx, st->dtype, 2, shape, &st->in[0]);
  if (s == KILN_OK)
    s = kiln_tensor_create(st->ctx, st->dtype, 2, shape, &st->out);
  return s;
}

static kiln_status
setup_fft(struct bench_state *st)
{
  return setup_fft_backend(st, KILN_FFT_BACKEND_AUTO);
}

static kiln_status
setup_fft_clfft(struct bench_state *st)
{
  return setup_fft_backend(st, KILN_FFT_BACKEND_CLFFT);
}

static kiln_status
setup_fft_vkfft(struct bench_state *st)
{
  return setup_fft_backend(st, KILN_FFT_BACKEND_VKFFT);
}

/* The same transform on a c64/c128 tensor of n elements (plan precision c64/c128). */
static kiln_status
setup_fft_complex(struct bench_state *st)
{
  kiln_status s = kiln_fft_plan_create(st->ctx, KILN_FFT_C2C, 1, &st->n, 1, st->dtype, 0,
                                       KILN_FFT_BACKEND_AUTO, &st->plan);
  if (s == KILN_OK)
    s = bench_random_tensor(st->ctx, st->dtype, 1, &st->n, &st->in[0]);
  if (s == KILN_OK)
    s = kiln_tensor_create(st->ctx, st->dtype, 1, &st->n, &st->out);
  return s;
}

static kiln_status
run_fft(struct bench_state *st)
{
  return kiln_fft_execute(st->plan, KILN_FFT_FORWARD, KILN_FFT_NORM_BACKWARD, st->in[0], &st->out);
}

/* Complex data read once and written once. */
static double
bytes_fft(int64_t n, size_t esz)
{
  return 4.0 * (double)n * (double)esz;
}

/* esz is a whole complex element here. */
static double
bytes_fft_complex(int64_t n, size_t esz)
{
  return 2.0 * (double)n * (double)esz;
}

/* The customary 5 n log2 n of a complex FFT. */
static double
flops_fft(int64_t n)
{
  return n > 1 ? 5.0 * (double)n * log2((double)n) : 0.0;
}

/* Layout, indexing and random rows: a square transpose, a row gather and normal numbers. */
static kiln_status
setup_square(struct bench_state *st)
{
  int64_t d = 1;
  while ((d * 2) * (d * 2) <= st->n)
    d *= 2;
  int64_t shape[2] = {d, st->n / d};
  kiln_status s = bench_random_tensor(st->ctx, st->dtype, 2, shape, &st->in[0]);
  int64_t tshape[2] = {shape[1], shape[0]};
  if (s == KILN_OK)
    s = kiln_tensor_create(st->ctx, st->dtype, 2, tshape, &st->out);
  return s;
}

static kiln_status
run_transpose(struct bench_state *st)
{
  return kiln_transpose(st->ctx, st->in[0], &st->out);
}

/* index_select of n/64 pseudo-random rows of a [n/64, 64] table: an embedding lookup. */
static kiln_status
setup_gather_rows(struct bench_state *st)
{
  int64_t cols = st->n < 64 ? st->n : 64, rows = st->n / cols;
  int64_t shape[2] = {rows, cols};
  kiln_status s = bench_random_tensor(st->ctx, st->dtype, 2, shape, &st->in[0]);
  if (s != KILN_OK)
    return s; /* no index buffer for a table the device could not hold */
  int64_t *idx = malloc((size_t)rows * sizeof *idx);
  if (!idx)
    return KILN_ERR_HOST_MEMORY;
  uint64_t x = 88172645463325252ull;
  for (int64_t i = 0; i < rows; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    idx[i] = (int64_t)(x % (uint64_t)rows);
  }
  s = kiln_tensor_from_host(st->ctx, KILN_I64, 1, &rows, idx, &st->in[1]);
  free(idx);
  if (s == KILN_OK)
    s = kiln_tensor_create(st->ctx, st->dtype, 2, shape, &st->out);
  return s;
}

static kiln_status
run_gather_rows(struct bench_state *st)
{
  return kiln_index_select(st->ctx, st->in[0], 0, st->in[1], &st->out);
}

/* Row data read and written, plus the 8-byte index of every row (64 elements). */
static double
bytes_gather(int64_t n, size_t esz)
{
  return 2.0 * (double)n * (double)esz + (double)n / 64.0 * 8.0;
}

static kiln_status
setup_out_only(struct bench_state *st)
{
  return kiln_tensor_create(st->ctx, st->dtype, 1, &st->n, &st->out);
}

static kiln_status
run_normal(struct bench_state *st)
{
  return kiln_random_normal(st->ctx, st->out, 0.0, 1.0);
}

static double
bytes_write(int64_t n, size_t esz)
{
  return (double)n * (double)esz;
}

/* nn rows over [n/4096, 4096] (the 16384 x 4096 at n = 2^26); gelu over all of n. */
static kiln_status
setup_nn_rows(struct bench_state *st)
{
  int64_t inner = st->n < 4096 ? st->n : 4096;
  int64_t shape[2] = {st->n / inner, inner};
  return bench_random_tensor(st->ctx, st->dtype, 2, shape, &st->in[0]);
}

static kiln_status
run_softmax(struct bench_state *st)
{
  return kiln_softmax(st->ctx, st->in[0], -1, &st->out);
}

/* layer_norm with a weight and a bias of the row length (ones and zeros). */
static kiln_status
setup_layer_norm(struct bench_state *st)
{
  kiln_status s = setup_nn_rows(st);
  int64_t len = kiln_tensor_dim(st->in[0], 1);
  if (s == KILN_OK)
    s = kiln_tensor_full(st->ctx, st->dtype, 1, &len, kiln_scalar_f64(1), &st->in[1]);
  if (s == KILN_OK)
    s = kiln_tensor_zeros(st->ctx, st->dtype, 1, &len, &st->in[2]);
  return s;
}

static kiln_status
run_layer_norm(struct bench_state *st)
{
  return kiln_layer_norm(st->ctx, st->in[0], -1, st->in[1], st->in[2], 1e-5, &st->out, NULL,
                         NULL);
}

static kiln_status
run_gelu(struct bench_state *st)
{
  return kiln_activation_forward(st->ctx, KILN_ACT_GELU, st->in[0], 0, 0, &st->out);
}

/* nn.mse: the mean squared error of two flat operands (setup_two), reduced to a 0-d mean. */
static kiln_status
run_mse(struct bench_state *st)
{
  return kiln_loss(st->ctx, KILN_LOSS_MSE, st->in[0], st->in[1], NULL, 0, KILN_REDUCTION_MEAN,
                   &st->out);
}

/* Both operands read once. */
static double
bytes_2in(int64_t n, size_t esz)
{
  return 2.0 * (double)n * (double)esz;
}

/* Cross entropy with mean reduction: logits [n/4096, 4096] and one class index per row. */
static kiln_status
setup_cross_entropy(struct bench_state *st)
{
  kiln_status s = setup_nn_rows(st);
  if (s != KILN_OK)
    return s;
  int64_t rows = kiln_tensor_dim(st->in[0], 0), classes = kiln_tensor_dim(st->in[0], 1);
  int64_t *t = malloc((size_t)(rows ? rows : 1) * sizeof *t);
  if (!t)
    return KILN_ERR_HOST_MEMORY;
  uint32_t x = 777;
  for (int64_t i = 0; i < rows; i++) {
    x = x * 1664525u + 1013904223u;
    t[i] = (int64_t)(x >> 8) % classes;
  }
  s = kiln_tensor_from_host(st->ctx, KILN_I64, 1, &rows, t, &st->in[1]);
  free(t);
  return s;
}

static kiln_status
run_cross_entropy(struct bench_state *st)
{
  return kiln_cross_entropy(st->ctx, st->in[0], st->in[1], -100, 0.0, KILN_REDUCTION_MEAN,
                            &st->out);
}

static kiln_status
run_log_softmax(struct bench_state *st)
{
  return kiln_log_softmax(st->ctx, st->in[0], -1, &st->out);
}

/* softmax backward: the gradient and the forward output, both [n/4096, 4096]. */
static kiln_status
setup_softmax_bwd(struct bench_state *st)
{
  kiln_status s = setup_nn_rows(st);
  if (s == KILN_OK)
    s = kiln_softmax(st->ctx, st->in[0], -1, &st->in[1]);
  return s;
}

static kiln_status
run_softmax_bwd(struct bench_state *st)
{
  return kiln_softmax_backward(st->ctx, st->in[0], st->in[1], -1, &st->out);
}

static kiln_status
run_rms_norm(struct bench_state *st)
{
  return kiln_rms_norm(st->ctx, st->in[0], -1, st->in[1], 1e-5, &st->out, NULL);
}

/* Flat activations over all of n; backward ones take the gradient in in[1]. */
static kiln_status
run_gelu_tanh(struct bench_state *st)
{
  return kiln_activation_forward(st->ctx, KILN_ACT_GELU_TANH, st->in[0], 0, 0, &st->out);
}

static kiln_status
run_silu(struct bench_state *st)
{
  return kiln_activation_forward(st->ctx, KILN_ACT_SILU, st->in[0], 0, 0, &st->out);
}

static kiln_status
run_relu(struct bench_state *st)
{
  return kiln_activation_forward(st->ctx, KILN_ACT_RELU, st->in[0], 0, 0, &st->out);
}

static kiln_status
run_gelu_bwd(struct bench_state *st)
{
  return kiln_activation_backward(st->ctx, KILN_ACT_GELU, st->in[1], st->in[0], 0, 0, &st->out);
}

/* cross_entropy backward of the mean: grad_out is one element (1). */
static kiln_status
setup_cross_entropy_bwd(struct bench_state *st)
{
  kiln_status s = setup_cross_entropy(st);
  if (s == KILN_OK)
    s = kiln_tensor_full(st->ctx, st->dtype, 0, NULL, kiln_scalar_f64(1), &st->in[2]);
  return s;
}

static kiln_status
run_cross_entropy_bwd(struct bench_state *st)
{
  return kiln_cross_entropy_backward(st->ctx, st->in[2], st->in[0], st->in[1], -100, 0.0,
                                     KILN_REDUCTION_MEAN, &st->out);
}

/* layer_norm backward with weight and bias: grad, x, the forward's mean and rstd; grad_x into
 * out, grad_weight and grad_bias into in[6], in[7]. */
static kiln_status
setup_layer_norm_bwd(struct bench_state *st)
{
  kiln_status s = setup_layer_norm(st);
  int64_t shape[2] = {s == KILN_OK ? kiln_tensor_dim(st->in[0], 0) : 0,
                      s == KILN_OK ? kiln_tensor_dim(st->in[0], 1) : 0};
  if (s == KILN_OK)
    s = bench_random_tensor(st->ctx, st->dtype, 2, shape, &st->in[3]);
  kiln_tensor *y = NULL;
  if (s == KILN_OK)
    s = kiln_layer_norm(st->ctx, st->in[0], -1, st->in[1], st->in[2], 1e-5, &y, &st->in[4],
                        &st->in[5]);
  kiln_tensor_release(y);
  return s;
}

static kiln_status
run_layer_norm_bwd(struct bench_state *st)
{
  return kiln_layer_norm_backward(st->ctx, st->in[3], st->in[0], st->in[4], st->in[5], st->in[1],
                                  -1, &st->out, &st->in[6], &st->in[7]);
}

/* stats: torch.histc(x, 1000, -2, 2): n values into 1000 bins over [-2, 2]. */
static kiln_status
run_histc(struct bench_state *st)
{
  const double range[2] = {-2, 2};
  return kiln_histogram(st->ctx, st->in[0], 1000, range, NULL, NULL, NULL, &st->out);
}

/* bincount of n i32 values in [0, 4096) (the dtype only names the row). */
static kiln_status
setup_bincount(struct bench_state *st)
{
  int64_t n = st->n;
  int32_t *h = malloc((size_t)(n ? n : 1) * sizeof *h);
  if (!h)
    return KILN_ERR_HOST_MEMORY;
  uint32_t x = 4242;
  for (int64_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    h[i] = (int32_t)((x >> 8) & 4095u);
  }
  kiln_status s = kiln_tensor_from_host(st->ctx, KILN_I32, 1, &n, h, &st->in[0]);
  free(h);
  return s;
}

static kiln_status
run_bincount(struct bench_state *st)
{
  return kiln_bincount(st->ctx, st->in[0], NULL, 4096, NULL, &st->out);
}

static double
bytes_bincount(int64_t n, size_t esz)
{
  (void)esz;
  return 4.0 * (double)n;
}

/* Quantiles 0.25, 0.5, 0.75 along rows of 1024 of min(n, 2^24) elements (torch.quantile's
 * input limit is 2^24). */
static int64_t
quantile_numel(int64_t n)
{
  return n < ((int64_t)1 << 24) ? n : ((int64_t)1 << 24);
}

static kiln_status
setup_quantile(struct bench_state *st)
{
  int64_t m = quantile_numel(st->n), len = m < 1024 ? m : 1024;
  int64_t shape[2] = {m / len, len};
  return bench_random_tensor(st->ctx, st->dtype, 2, shape, &st->in[0]);
}

static kiln_status
run_quantile(struct bench_state *st)
{
  static const double q[3] = {0.25, 0.5, 0.75};
  int64_t axis = -1;
  return kiln_quantile(st->ctx, st->in[0], q, 3, 1, &axis, NULL, &st->out);
}

static double
bytes_quantile(int64_t n, size_t esz)
{
  return (double)quantile_numel(n) * (double)esz;
}

/* cov of min(n, 256) variables (rows) of n / 256 observations: torch.cov(x). */
static kiln_status
setup_cov(struct bench_state *st)
{
  int64_t vars = st->n < 256 ? st->n : 256;
  int64_t shape[2] = {vars, st->n / vars};
  return bench_random_tensor(st->ctx, st->dtype, 2, shape, &st->in[0]);
}

static kiln_status
run_cov(struct bench_state *st)
{
  return kiln_cov(st->ctx, st->in[0], 1, 1, NULL, NULL, &st->out);
}

static double
flops_cov(int64_t n)
{
  double vars = n < 256 ? (double)n : 256.0;
  return vars * vars * (double)(n / (int64_t)vars); /* SYRK: half of a GEMM's 2 v^2 k */
}

/* Cross entropy reads the logits once (the 8-byte index per 4096 is noise). */
static double
bytes_ce(int64_t n, size_t esz)
{
  return (double)n * (double)esz;
}

/*
 * linalg: n is the element count of the square matrix (as blas.gemm), so --sizes 16777216
 * is one 4096 x 4096 matrix. Flops: LU 2/3 d^3, Cholesky 1/3 d^3, solve with 16 right-hand
 * sides LU + 2 * 16 d^2 * 2 (two triangular solves), inverse 2 d^3 (LU and 4/3 d^3 of
 * triangular solves). linalg.lu_batched: 32 x 32 matrices, n / 1024 of them (--sizes
 * 4194304 is 4096 matrices).
 */
static kiln_status
setup_linalg_square(struct bench_state *st)
{
  int64_t d = square_dim(st->n), shape[2] = {d, d};
  return bench_random_tensor(st->ctx, st->dtype, 2, shape, &st->in[0]);
}

/* Symmetric and diagonally dominant: entries in [-2, 2), diagonal 2 d + 1. */
static kiln_status
setup_linalg_spd(struct bench_state *st)
{
  int64_t d = square_dim(st->n), shape[2] = {d, d};
  size_t es = st->dtype == KILN_F32 ? 4 : 8, cnt = (size_t)(d * d);
  unsigned char *h = malloc(cnt * es + 8);
  if (!h)
    return KILN_ERR_HOST_MEMORY;
  uint32_t x = 4242;
  for (int64_t i = 0; i < d; i++)
    for (int64_t j = 0; j <= i; j++) {
      x = x * 1664525u + 1013904223u;
      double v = i == j ? 2.0 * (double)d + 1.0 : (double)(x >> 8) / 16777216.0 * 4.0 - 2.0;
      if (es == 4) {
        ((float *)h)[i * d + j] = (float)v;
        ((float *)h)[j * d + i] = (float)v;
      } else {
        ((double *)h)[i * d + j] = v;
        ((double *)h)[j * d + i] = v;
      }
    }
  kiln_status s = kiln_tensor_from_host(st->ctx, st->dtype, 2, shape, h, &st->in[0]);
  free(h);
  return s;
}

static kiln_status
setup_linalg_solve(struct bench_state *st)
{
  int64_t d = square_dim(st->n), bs[2] = {d, 16};
  kiln_status s = setup_linalg_square(st);
  if (s == KILN_OK)
    s = bench_random_tensor(st->ctx, st->dtype, 2, bs, &st->in[1]);
  return s;
}

static kiln_status
setup_lu_batched(struct bench_state *st)
{
  int64_t b = st->n / 1024 > 0 ? st->n / 1024 : 1, shape[3] = {b, 32, 32};
  return bench_random_tensor(st->ctx, st->dtype, 3, shape, &st->in[0]);
}

/*
 * Complex rows (linalg.clu, csolve, cinv, ccholesky): the real rows' setups with c64/c128 data
 * (both parts random in [-2, 2)); ccholesky a Hermitian matrix with diagonal 2 d + 1. Flops
 * are 4 times the real counts (a complex multiply-add is 8 real flops, a real one 2).
 */
static kiln_status
setup_linalg_hpd(struct bench_state *st)
{
  int64_t d = square_dim(st->n), shape[2] = {d, d};
  size_t cnt = (size_t)(d * d);
  double *h = malloc(cnt * 2 * sizeof *h + 16);
  if (!h)
    return KILN_ERR_HOST_MEMORY;
  uint32_t x = 4242;
  for (int64_t i = 0; i < d; i++)
    for (int64_t j = 0; j <= i; j++) {
      x = x * 1664525u + 1013904223u;
      double re = i == j ? 2.0 * (double)d + 1.0 : (double)(x >> 8) / 16777216.0 * 4.0 - 2.0;
      x = x * 1664525u + 1013904223u;
      double im = i == j ? 0.0 : (double)(x >> 8) / 16777216.0 * 4.0 - 2.0;
      h[2 * (i * d + j)] = re;
      h[2 * (i * d + j) + 1] = im;
      h[2 * (j * d + i)] = re;
      h[2 * (j * d + i) + 1] = -im;
    }
  if (st->dtype == KILN_C64)
    for (size_t i = 0; i < 2 * cnt; i++)
      ((float *)h)[i] = (float)h[i];
  kiln_status s = kiln_tensor_from_host(st->ctx, st->dtype, 2, shape, h, &st->in[0]);
  free(h);
  return s;
}

static kiln_status
run_lu(struct bench_state *st)
{
  return kiln_linalg_lu_factor(st->ctx, st->in[0], &st->out, &st->in[2]);
}

static kiln_status
run_cholesky(struct bench_state *st)
{
  return kiln_linalg_cholesky(st->ctx, st->in[0], KILN_LOWER, &st->out);
}

static kiln_status
run_solve(struct bench_state *st)
{
  return kiln_linalg_solve(st->ctx, st->in[0], st->in[1], &st->out);
}

static kiln_status
run_inv(struct bench_state *st)
{
  return kiln_linalg_inv(st->ctx, st->in[0], &st->out);
}

static double
flops_lu(int64_t n)
{
  double d = (double)square_dim(n);
  return 2.0 / 3.0 * d * d * d;
}

static double
flops_cholesky(int64_t n)
{
  double d = (double)square_dim(n);
  return 1.0 / 3.0 * d * d * d;
}

static double
flops_solve(int64_t n)
{
  double d = (double)square_dim(n);
  return flops_lu(n) + 4.0 * 16.0 * d * d;
}

static double
flops_inv(int64_t n)
{
  double d = (double)square_dim(n);
  return 2.0 * d * d * d;
}

static double
flops_clu(int64_t n)
{
  return 4.0 * flops_lu(n);
}

static double
flops_ccholesky(int64_t n)
{
  return 4.0 * flops_cholesky(n);
}

static double
flops_csolve(int64_t n)
{
  return 4.0 * flops_solve(n);
}

static double
flops_cinv(int64_t n)
{
  return 4.0 * flops_inv(n);
}

/*
 * linalg_spectral (n as the linalg rows): linalg.qr is the reduced Q and R (geqrf 4/3 d^3 and
 * forming Q 4/3 d^3), linalg.eigh values and vectors of a symmetric matrix, linalg.svd values
 * and reduced U, V^T. eigh and svd report times only: their host stages make a flop rate
 * meaningless.
 */
static kiln_status
run_qr(struct bench_state *st)
{
  return kiln_linalg_qr(st->ctx, st->in[0], KILN_QR_REDUCED, &st->in[2], &st->out);
}

static kiln_status
run_eigh(struct bench_state *st)
{
  return kiln_linalg_eigh(st->ctx, st->in[0], KILN_LOWER, &st->out, &st->in[2]);
}

static kiln_status
run_svd(struct bench_state *st)
{
  return kiln_linalg_svd(st->ctx, st->in[0], 0, &st->in[2], &st->out, &st->in[3]);
}

static double
flops_qr(int64_t n)
{
  double d = (double)square_dim(n);
  return 8.0 / 3.0 * d * d * d;
}

/* linalg.cqr: complex QR (Q and R), 4 times the real flops. */
static double
flops_cqr(int64_t n)
{
  return 4.0 * flops_qr(n);
}

static double
flops_lu_batched(int64_t n)
{
  double b = (double)(n / 1024 > 0 ? n / 1024 : 1);
  return b * 2.0 / 3.0 * 32.0 * 32.0 * 32.0;
}

/* nn.conv2d and nn.max_pool2d: x [B, 64, 56, 56] with B = max(1, n / 2^20) (64 at 2^26, the
 * issue's reference shape); conv2d: w [64, 64, 3, 3], padding 1; max_pool2d: 2x2, stride 2. */
/* The nn_conv family takes f16 and bf16 too (stored in 2 bytes, computed in f32). */
static int
conv_dtype(kiln_dtype d)
{
  return float_dtype(d) || half_dtype(d);
}

static int64_t
conv_batch(int64_t n)
{
  return n >> 20 > 0 ? n >> 20 : 1;
}

static kiln_status
setup_conv2d(struct bench_state *st)
{
  int64_t xs[4] = {conv_batch(st->n), 64, 56, 56}, ws[4] = {64, 64, 3, 3};
  kiln_status s = bench_random_tensor(st->ctx, st->dtype, 4, xs, &st->in[0]);
  if (s == KILN_OK)
    s = bench_random_tensor(st->ctx, st->dtype, 4, ws, &st->in[1]);
  return s;
}

static kiln_status
run_conv2d(struct bench_state *st)
{
  kiln_conv_desc d = {.nd = 2, .padding = {1, 1}};
  return kiln_conv(st->ctx, st->in[0], st->in[1], NULL, &d, &st->out);
}

static double
flops_conv2d(int64_t n)
{
  return 2.0 * (double)conv_batch(n) * 64.0 * 64.0 * 9.0 * 56.0 * 56.0;
}

/* nn.conv2d_bwd: the input and weight gradients of nn.conv2d (no bias), from a random
 * output gradient; twice the forward's flops. */
static kiln_status
setup_conv2d_bwd(struct bench_state *st)
{
  int64_t ys[4] = {conv_batch(st->n), 64, 56, 56};
  kiln_status s = setup_conv2d(st);
  if (s == KILN_OK)
    s = bench_random_tensor(st->ctx, st->dtype, 4, ys, &st->in[2]);
  return s;
}

static kiln_status
run_conv2d_bwd(struct bench_state *st)
{
  kiln_conv_desc d = {.nd = 2, .padding = {1, 1}};
  return kiln_conv_backward(st->ctx, st->in[2], st->in[0], st->in[1], &d, &st->out, &st->in[3],
                            NULL);
}

static double
flops_conv2d_bwd(int64_t n)
{
  return 2.0 * flops_conv2d(n);
}

static kiln_status
setup_max_pool2d(struct bench_state *st)
{
  int64_t xs[4] = {conv_batch(st->n), 64, 56, 56};
  return bench_random_tensor(st->ctx, st->dtype, 4, xs, &st->in[0]);
}

static kiln_status
run_max_pool2d(struct bench_state *st)
{
  kiln_pool_desc d = {.nd = 2, .kernel = {2, 2}};
  return kiln_max_pool(st->ctx, st->in[0], &d, &st->out, NULL);
}

/* The gradient and the indices read (a quarter of the input each; the indices 8 bytes), the
 * input gradient written. */
static double
bytes_max_pool2d_bwd(int64_t n, size_t esz)
{
  double in = (double)conv_batch(n) * 64 * 56 * 56;
  return in * (double)esz + in / 4 * ((double)esz + 8);
}

/* nn.max_pool2d_bwd: the gradient of the same pooling through its indices (in[1], from one
 * forward at setup; in[2] the output gradient). */
static kiln_status
setup_max_pool2d_bwd(struct bench_state *st)
{
  kiln_pool_desc d = {.nd = 2, .kernel = {2, 2}};
  int64_t gs[4] = {conv_batch(st->n), 64, 28, 28};
  kiln_status s = setup_max_pool2d(st);
  if (s == KILN_OK)
    s = kiln_max_pool(st->ctx, st->in[0], &d, &st->in[3], &st->in[1]);
  if (s == KILN_OK)
    s = bench_random_tensor(st->ctx, st->dtype, 4, gs, &st->in[2]);
  return s;
}

static kiln_status
run_max_pool2d_bwd(struct bench_state *st)
{
  kiln_pool_desc d = {.nd = 2, .kernel = {2, 2}};
  return kiln_max_pool_backward(st->ctx, st->in[2], st->in[1], st->in[0], &d, &st->out);
}

/* The input read once, a quarter of it written. */
static double
bytes_max_pool2d(int64_t n, size_t esz)
{
  return (double)conv_batch(n) * 64.0 * 56.0 * 56.0 * 1.25 * (double)esz;
}

/* ---- nn training (kiln/nn_optim.h, nn.h, nn_attention.h) ---- */

/* One Adam step over n parameters in one tensor: p, g, m, v. */
static kiln_status
setup_adam(struct bench_state *st)
{
  kiln_status s = bench_random_tensor(st->ctx, st->dtype, 1, &st->n, &st->in[0]);
  if (s == KILN_OK)
    s = bench_random_tensor(st->ctx, st->dtype, 1, &st->n, &st->in[1]);
  if (s == KILN_OK)
    s = kiln_tensor_zeros(st->ctx, st->dtype, 1, &st->n, &st->in[2]);
  if (s == KILN_OK)
    s = kiln_tensor_zeros(st->ctx, st->dtype, 1, &st->n, &st->in[3]);
  return s;
}

static kiln_status
run_adam(struct bench_state *st)
{
  const kiln_adam_options o = {1e-3, 0.9, 0.999, 1e-8, 0, 0, 0, 0};
  const kiln_tensor *g = st->in[1];
  return kiln_adam_step(st->ctx, 1, &st->in[0], &g, &st->in[2], &st->in[3], NULL, &o, 10);
}

/* p, g, m, v read; p, m, v written. */
static double
bytes_adam(int64_t n, size_t esz)
{
  return 7.0 * (double)n * (double)esz;
}

static kiln_status
run_dropout(struct bench_state *st)
{
  return kiln_dropout(st->ctx, st->in[0], 0.1, &st->out, NULL, NULL);
}

/* batch_norm training (running statistics updated) over [N, 64, S], S = 56 x 56 once n
 * allows (the conv shape [64, 64, 56, 56] at n = 2^24 x 0.77). */
static kiln_status
setup_batch_norm(struct bench_state *st)
{
  int64_t C = 64, S = st->n / C < 3136 ? (st->n / C > 0 ? st->n / C : 1) : 3136;
  int64_t N = st->n / (C * S) > 0 ? st->n / (C * S) : 1;
  int64_t shape[3] = {N, C, S};
  kiln_status s = bench_random_tensor(st->ctx, st->dtype, 3, shape, &st->in[0]);
  if (s == KILN_OK)
    s = kiln_tensor_full(st->ctx, st->dtype, 1, &C, kiln_scalar_f64(1), &st->in[1]);
  if (s == KILN_OK)
    s = kiln_tensor_zeros(st->ctx, st->dtype, 1, &C, &st->in[2]);
  if (s == KILN_OK)
    s = kiln_tensor_zeros(st->ctx, st->dtype, 1, &C, &st->in[3]);
  if (s == KILN_OK)
    s = kiln_tensor_full(st->ctx, st->dtype, 1, &C, kiln_scalar_f64(1), &st->in[4]);
  return s;
}

static kiln_status
run_batch_norm(struct bench_state *st)
{
  return kiln_batch_norm(st->ctx, st->in[0], st->in[1], st->in[2], st->in[3], st->in[4], 1, 0.1,
                         1e-5, &st->out, NULL, NULL);
}

/* The attention rows also run f16 and bf16 (2-byte storage, f32 math). */
static int
att_dtype(kiln_dtype d)
{
  return float_dtype(d) || d == KILN_F16 || d == KILN_BF16;
}

/* Attention: batch 8, 16 heads, head 128, tokens = n / 16384 (n the elements of q: 4096
 * tokens, the reference shape, at n = 2^26). */
static int64_t
att_tokens(int64_t n)
{
  return n / 16384 > 0 ? n / 16384 : 1;
}

static kiln_status
setup_attention(struct bench_state *st)
{
  int64_t shape[4] = {8, 16, att_tokens(st->n), 128};
  kiln_status s = KILN_OK;
  for (int i = 0; i < 3 && s == KILN_OK; i++)
    s = bench_random_tensor(st->ctx, st->dtype, 4, shape, &st->in[i]);
  return s;
}

static kiln_status
run_attention(struct bench_state *st)
{
  return kiln_attention(st->ctx, st->in[0], st->in[1], st->in[2], NULL, 0, 0, &st->out, NULL);
}

static double
flops_attention(int64_t n)
{
  double t = (double)att_tokens(n);
  return 4.0 * 8.0 * 16.0 * t * t * 128.0;
}

/* Causal: half the score matrix; GFLOP/s counts the same full 4 B H S^2 D as PyTorch's
 * reference figure (12.2 ms causal next to 23.6 ms). */
static kiln_status
run_attention_causal(struct bench_state *st)
{
  return kiln_attention(st->ctx, st->in[0], st->in[1], st->in[2], NULL, 1, 0, &st->out, NULL);
}

/* nn.attn_backward (not nn.attention_*: --filter nn.attention keeps to the forward rows).
 * Backward: in[3] the output gradient, in[4] out and in[5] lse of one forward made at setup;
 * a call is the backward pass alone (dq, dk, dv: in[6], in[7] and out). GFLOP/s counts
 * FlashAttention's 10 B H S^2 D of a backward pass with recomputation (five products). */
static kiln_status
setup_attention_backward_of(struct bench_state *st, int causal)
{
  int64_t shape[4] = {8, 16, att_tokens(st->n), 128};
  kiln_status s = setup_attention(st);
  if (s == KILN_OK)
    s = bench_random_tensor(st->ctx, st->dtype, 4, shape, &st->in[3]);
  if (s == KILN_OK)
    s = kiln_attention(st->ctx, st->in[0], st->in[1], st->in[2], NULL, causal, 0, &st->in[4],
                       &st->in[5]);
  return s;
}

static kiln_status
setup_attention_backward(struct bench_state *st)
{
  return setup_attention_backward_of(st, 0);
}

static kiln_status
run_attention_backward_of(struct bench_state *st, int causal)
{
  return kiln_attention_backward(st->ctx, st->in[3], st->in[0], st->in[1], st->in[2], NULL, causal,
                                 0, st->in[4], st->in[5], &st->in[6], &st->in[7], &st->out);
}

static kiln_status
run_attention_backward(struct bench_state *st)
{
  return run_attention_backward_of(st, 0);
}

/* nn.attn_backward_causal: the same from a causal forward (GFLOP/s counts the full 10 B H S^2 D
 * as nn.attention_causal counts the full forward). */
static kiln_status
setup_attention_backward_causal(struct bench_state *st)
{
  return setup_attention_backward_of(st, 1);
}

static kiln_status
run_attention_backward_causal(struct bench_state *st)
{
  return run_attention_backward_of(st, 1);
}

static double
flops_attention_backward(int64_t n)
{
  return 2.5 * flops_attention(n);
}

/* ---- user kernels (kiln/kernel.h): the same work as built-in rows, from caller OpenCL C */

static const char *
user_type(kiln_dtype d)
{
  return d == KILN_F64 ? "double" : "float";
}

/* y = a * x + y, to read against binary.add (same bytes: two reads, one write). */
static kiln_status
setup_user_axpy(struct bench_state *st)
{
  char args[96];
  snprintf(args, sizeof args, "%s *y, const %s *x, %s a", user_type(st->dtype),
           user_type(st->dtype), user_type(st->dtype));
  kiln_status s = setup_two(st);
  if (s == KILN_OK)
    s = kiln_elementwise_kernel_create(st->ctx, "bench_axpy", args, "y[i] = a * x[i] + y[i]", NULL,
                                       NULL, &st->uk);
  return s;
}

static kiln_status
run_user_axpy(struct bench_state *st)
{
  kiln_arg a[3] = {kiln_arg_tensor(st->in[1]), kiln_arg_tensor(st->in[0]),
                   st->dtype == KILN_F64 ? kiln_arg_f64(0.5) : kiln_arg_f32(0.5f)};
  return kiln_elementwise_kernel_run(st->uk, 3, a);
}

/* A sum through the user reduction machinery, to read against reduce.sum_all. */
static kiln_status
setup_user_sum(struct bench_state *st)
{
  char args[64];
  snprintf(args, sizeof args, "const %s *x", user_type(st->dtype));
  kiln_status s = setup_flat(st);
  if (s == KILN_OK)
    s = kiln_reduction_kernel_create(st->ctx, "bench_sum", st->dtype, "0", "a + b", "x[i]", args,
                                     NULL, NULL, &st->uk);
  return s;
}

static kiln_status
run_user_sum(struct bench_state *st)
{
  kiln_arg a[1] = {kiln_arg_tensor(st->in[0])};
  return kiln_reduction_kernel_run(st->uk, 1, a, &st->out);
}

/* An inclusive cumsum through the user scan machinery, to read against scan.cumsum_rows. */
static kiln_status
setup_user_cumsum(struct bench_state *st)
{
  char args[64];
  snprintf(args, sizeof args, "%s *y, const %s *x", user_type(st->dtype), user_type(st->dtype));
  kiln_status s = setup_one(st);
  if (s == KILN_OK)
    s = kiln_scan_kernel_create(st->ctx, "bench_cumsum", st->dtype, "0", "a + b", "x[i]",
                                "y[i] = item", 0, args, NULL, NULL, &st->uk);
  return s;
}

static kiln_status
run_user_cumsum(struct bench_state *st)
{
  kiln_arg a[2] = {kiln_arg_tensor(st->out), kiln_arg_tensor(st->in[0])};
  return kiln_scan_kernel_run(st->uk, 2, a);
}

const struct bench_case bench_cases[] = {
    {"copy.kiln_copy", "copy", any_dtype, setup_one, run_copy, bytes_1in_1out, NULL},
    {"unary.neg", "elementwise", neg_dtype, setup_one, run_neg, bytes_1in_1out, NULL},
    {"unary.exp", "elementwise", exp_dtype, setup_one, run_exp, bytes_1in_1out, NULL},
    {"binary.add", "elementwise", add_dtype, setup_two, run_add, bytes_2in_1out, NULL},
    {"binary.mul", "elementwise", mul_dtype, setup_two, run_mul, bytes_2in_1out, NULL},
    {"binary.add_row_bcast", "elementwise", add_dtype, setup_row_bcast, run_add, bytes_bcast, NULL},
    {"binary.add_col_bcast", "elementwise", add_dtype, setup_col_bcast, run_add, bytes_bcast, NULL},
    {"binary.mul_scalar", "elementwise", mul_dtype, setup_one, run_mul_scalar, bytes_1in_1out,
     NULL},
    {"where", "elementwise", where_dtype, setup_where, run_where, bytes_where, NULL},
    {"cast.to_i32", "elementwise", any_dtype, setup_cast, run_cast, bytes_cast, NULL},
    {"reduce.sum_all", "reduce", sum_dtype, setup_flat, run_sum_all, bytes_read, NULL},
    {"reduce.sum_rows", "reduce", sum_dtype, setup_rows, run_sum_axis1, bytes_read, NULL},
    {"reduce.sum_cols", "reduce", sum_dtype, setup_cols, run_sum_axis0, bytes_read, NULL},
    {"scan.cumsum_rows", "scan", cumsum_dtype, setup_rows, run_cumsum_axis1, bytes_1in_1out, NULL},
    {"scan.cumsum_cols", "scan", cumsum_dtype, setup_cols, run_cumsum_axis0, bytes_1in_1out, NULL},
    {"scan.cumsum_all", "scan", cumsum_dtype, setup_flat, run_cumsum_axis0, bytes_1in_1out, NULL},
    {"blas.gemm", "blas", float_dtype, setup_gemm, run_gemm, NULL, flops_gemm},
    {"blas.gemm_clblast", "blas", float_dtype, setup_gemm_clblast, run_gemm, NULL, flops_gemm},
    {"blas.gemm_kiln", "blas", float_dtype, setup_gemm_kiln, run_gemm, NULL, flops_gemm},
    {"blas.gemm_large", "blas", float_dtype, setup_gemm_large, run_gemm, NULL, flops_gemm},
    {"blas.hgemm", "blas", half_dtype, setup_gemm_plain, run_gemm, NULL, flops_gemm},
    {"blas.cgemm", "blas", complex_dtype, setup_gemm_plain, run_gemm, NULL, flops_cgemm},
    {"fft.c2c", "fft", float_dtype, setup_fft, run_fft, bytes_fft, flops_fft},
    {"fft.c2c_clfft", "fft", float_dtype, setup_fft_clfft, run_fft, bytes_fft, flops_fft},
    {"fft.c2c_vkfft", "fft", float_dtype, setup_fft_vkfft, run_fft, bytes_fft, flops_fft},
    {"fft.c2c_complex", "fft", complex_dtype, setup_fft_complex, run_fft, bytes_fft_complex,
     flops_fft},
    {"layout.transpose", "layout", any_dtype, setup_square, run_transpose, bytes_1in_1out, NULL},
    {"index.gather_rows", "index", any_dtype, setup_gather_rows, run_gather_rows, bytes_gather,
     NULL},
    {"random.normal", "random", float_dtype, setup_out_only, run_normal, bytes_write, NULL},
    {"nn.softmax", "nn", float_dtype, setup_nn_rows, run_softmax, bytes_1in_1out, NULL},
    {"nn.layer_norm", "nn", float_dtype, setup_layer_norm, run_layer_norm, bytes_1in_1out, NULL},
    {"nn.gelu", "nn", float_dtype, setup_flat, run_gelu, bytes_1in_1out, NULL},
    {"nn.mse", "nn", float_dtype, setup_two_inputs, run_mse, bytes_2in, NULL},
    {"nn.cross_entropy", "nn", float_dtype, setup_cross_entropy, run_cross_entropy, bytes_ce, NULL},
    {"nn.log_softmax", "nn", float_dtype, setup_nn_rows, run_log_softmax, bytes_1in_1out, NULL},
    {"nn.softmax_bwd", "nn", float_dtype, setup_softmax_bwd, run_softmax_bwd, bytes_2in_1out, NULL},
    {"nn.rms_norm", "nn", float_dtype, setup_layer_norm, run_rms_norm, bytes_1in_1out, NULL},
    {"nn.gelu_tanh", "nn", float_dtype, setup_flat, run_gelu_tanh, bytes_1in_1out, NULL},
    {"nn.silu", "nn", float_dtype, setup_flat, run_silu, bytes_1in_1out, NULL},
    {"nn.relu", "nn", float_dtype, setup_flat, run_relu, bytes_1in_1out, NULL},
    {"nn.gelu_bwd", "nn", float_dtype, setup_two, run_gelu_bwd, bytes_2in_1out, NULL},
    {"nn.ce_bwd", "nn", float_dtype, setup_cross_entropy_bwd, run_cross_entropy_bwd, bytes_1in_1out,
     NULL},
    {"nn.layer_norm_bwd", "nn", float_dtype, setup_layer_norm_bwd, run_layer_norm_bwd,
     bytes_2in_1out, NULL},
    {"stats.histc", "stats", float_dtype, setup_flat, run_histc, bytes_read, NULL},
    {"stats.bincount", "stats", float_dtype, setup_bincount, run_bincount, bytes_bincount, NULL},
    {"stats.quantile", "stats", float_dtype, setup_quantile, run_quantile, bytes_quantile, NULL},
    {"stats.cov", "stats", float_dtype, setup_cov, run_cov, NULL, flops_cov},
    {"linalg.lu", "linalg", float_dtype, setup_linalg_square, run_lu, NULL, flops_lu},
    {"linalg.cholesky", "linalg", float_dtype, setup_linalg_spd, run_cholesky, NULL,
     flops_cholesky},
    {"linalg.solve", "linalg", float_dtype, setup_linalg_solve, run_solve, NULL, flops_solve},
    {"linalg.inv", "linalg", float_dtype, setup_linalg_square, run_inv, NULL, flops_inv},
    {"linalg.lu_batched", "linalg", float_dtype, setup_lu_batched, run_lu, NULL, flops_lu_batched},
    {"linalg.clu", "linalg", complex_dtype, setup_linalg_square, run_lu, NULL, flops_clu},
    {"linalg.ccholesky", "linalg", complex_dtype, setup_linalg_hpd, run_cholesky, NULL,
     flops_ccholesky},
    {"linalg.csolve", "linalg", complex_dtype, setup_linalg_solve, run_solve, NULL, flops_csolve},
    {"linalg.cinv", "linalg", complex_dtype, setup_linalg_square, run_inv, NULL, flops_cinv},
    {"sort.sort", "sort", bench_sort_dtype, bench_setup_sort, bench_run_sort, bench_bytes_sort,
     NULL},
    {"sort.argsort", "sort", bench_sort_dtype, bench_setup_argsort, bench_run_argsort,
     bench_bytes_argsort, NULL},
    {"sort.sort_rows", "sort", bench_sort_dtype, bench_setup_sort_rows, bench_run_sort,
     bench_bytes_sort, NULL},
    {"sort.topk", "sort", bench_sort_dtype, bench_setup_topk, bench_run_topk, bench_bytes_read,
     NULL},
    {"sort.topk_rows", "sort", bench_sort_dtype, bench_setup_topk_rows, bench_run_topk_rows,
     bench_bytes_read, NULL},
    {"sort.unique", "sort", bench_sort_i32, bench_setup_unique, bench_run_unique,
     bench_bytes_unique, NULL},
    {"sort.searchsorted", "sort", bench_sort_dtype, bench_setup_searchsorted,
     bench_run_searchsorted, bench_bytes_searchsorted, NULL},
    {"linalg.qr", "linalg", float_dtype, setup_linalg_square, run_qr, NULL, flops_qr},
    {"linalg.cqr", "linalg", complex_dtype, setup_linalg_square, run_qr, NULL, flops_cqr},
    {"linalg.eigh", "linalg", float_dtype, setup_linalg_spd, run_eigh, NULL, NULL},
    {"linalg.svd", "linalg", float_dtype, setup_linalg_square, run_svd, NULL, NULL},
    {"nn.conv2d", "nn_conv", conv_dtype, setup_conv2d, run_conv2d, NULL, flops_conv2d},
    {"nn.conv2d_bwd", "nn_conv", conv_dtype, setup_conv2d_bwd, run_conv2d_bwd, NULL,
     flops_conv2d_bwd},
    {"nn.max_pool2d", "nn_conv", conv_dtype, setup_max_pool2d, run_max_pool2d, bytes_max_pool2d,
     NULL},
    {"nn.max_pool2d_bwd", "nn_conv", conv_dtype, setup_max_pool2d_bwd, run_max_pool2d_bwd,
     bytes_max_pool2d_bwd, NULL},
    {"nn.adam", "nn_train", float_dtype, setup_adam, run_adam, bytes_adam, NULL},
    {"nn.dropout", "nn_train", float_dtype, setup_flat, run_dropout, bytes_1in_1out, NULL},
    {"nn.batch_norm", "nn_train", float_dtype, setup_batch_norm, run_batch_norm, bytes_1in_1out,
     NULL},
    {"nn.attention", "nn_train", att_dtype, setup_attention, run_attention, NULL, flops_attention},
    {"nn.attention_causal", "nn_train", att_dtype, setup_attention, run_attention_causal, NULL,
     flops_attention},
    {"nn.attn_backward", "nn_train", att_dtype, setup_attention_backward, run_attention_backward,
     NULL, flops_attention_backward},
    {"nn.attn_backward_causal", "nn_train", att_dtype, setup_attention_backward_causal,
     run_attention_backward_causal, NULL, flops_attention_backward},
    /* fused expressions (tools/bench_expr.c); GB/s counts the bytes the fused kernel moves */
    {"expr.demo_chain", "expr", bench_expr_demo_dtype, bench_expr_demo_setup, bench_expr_run,
     bytes_1in_1out, NULL},
    {"expr.demo_chain_unfused", "expr", bench_expr_demo_dtype, bench_expr_demo_unfused_setup,
     bench_expr_demo_unfused_run, bytes_1in_1out, NULL},
    {"expr.sum8", "expr", bench_expr_float_dtype, bench_expr_sum8_setup, bench_expr_run,
     bench_expr_bytes_4in, NULL},
    {"expr.sum8_unfused", "expr", bench_expr_float_dtype, bench_expr_sum8_unfused_setup,
     bench_expr_sum8_unfused_run, bench_expr_bytes_4in, NULL},
    {"user.axpy", "user_kernel", float_dtype, setup_user_axpy, run_user_axpy, bytes_2in_1out, NULL},
    {"user.sum", "user_kernel", float_dtype, setup_user_sum, run_user_sum, bytes_read, NULL},
    {"user.cumsum", "user_kernel", float_dtype, setup_user_cumsum, run_user_cumsum, bytes_1in_1out,
     NULL},
};
const size_t bench_case_count = sizeof bench_cases / sizeof bench_cases[0];

int
bench_case_host_work(const struct bench_case *c)
{
  static const char *const host[] = {"linalg.lu",  "linalg.cholesky", "linalg.solve", "linalg.inv",
                                     "linalg.qr",  "linalg.eigh",     "linalg.svd",
                                     "linalg.clu", "linalg.ccholesky", "linalg.csolve",
                                     "linalg.cinv", "linalg.cqr"};
  for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
    if (strcmp(c->name, host[i]) == 0)
      return 1;
  return 0;
}
