/*
 * kiln bench rows of fused expressions (docs/expr.md): the demo's chain fused and as the
 * demo runs it op by op, and a four-input, eight-op expression with a trailing sum, fused
 * and unfused. The fused rows plan once in setup, so a run is the plan's launch.
 */
#include <stdlib.h>

#include "tools/bench.h"

/* The plan of the case being measured (one case at a time); replaced by the next setup. */
static kiln_expr_plan *plan;
static kiln_expr *expr;

static void
drop_plan(void)
{
  kiln_expr_plan_release(plan);
  kiln_expr_release(expr);
  plan = NULL;
  expr = NULL;
}

static kiln_status
make_plan(struct bench_state *st, const char *text, const char *const *names, size_t nin)
{
  drop_plan();
  kiln_expr_var v[4];
  for (size_t i = 0; i < nin; i++)
    v[i] = (kiln_expr_var){names[i], st->dtype, 0};
  kiln_status s = kiln_expr_parse(text, v, nin, &expr);
  if (s == KILN_OK)
    s = kiln_expr_plan_create(st->ctx, expr, (const kiln_tensor *const *)st->in, nin, &plan);
  return s;
}

int
bench_expr_demo_dtype(kiln_dtype d)
{
  return d == KILN_F32;
}

int
bench_expr_float_dtype(kiln_dtype d)
{
  return d == KILN_F32 || d == KILN_F64;
}

/* The demo's f64 round trip is part of the chain where the device has fp64. */
static int
has_fp64(kiln_context *ctx)
{
  kiln_device_info info;
  return kiln_context_device_info(ctx, &info) == KILN_OK && info.has_fp64;
}

kiln_status
bench_expr_demo_setup(struct bench_state *st)
{
  kiln_status s = bench_random_tensor(st->ctx, st->dtype, 1, &st->n, &st->in[0]);
  if (s != KILN_OK)
    return s;
  const char *names[1] = {"x"};
  return make_plan(st,
                   has_fp64(st->ctx) ? "y = f32(f64(sigmoid(2*x + 1) * cos(x) - relu(x)))"
                                     : "y = sigmoid(2*x + 1) * cos(x) - relu(x)",
                   names, 1);
}

kiln_status
bench_expr_run(struct bench_state *st)
{
  const kiln_tensor *in[4] = {st->in[0], st->in[1], st->in[2], st->in[3]};
  size_t nin = 0;
  kiln_expr_counts(expr, &nin, NULL, NULL);
  return kiln_expr_plan_run(plan, in, nin, NULL, 0, &st->out, 1);
}

kiln_status
bench_expr_demo_unfused_setup(struct bench_state *st)
{
  drop_plan();
  kiln_status s = bench_random_tensor(st->ctx, st->dtype, 1, &st->n, &st->in[0]);
  if (s == KILN_OK)
    s = kiln_tensor_zeros(st->ctx, st->dtype, 0, NULL, &st->in[1]);
  return s;
}

/* The demo's ops (tools/cmd_demo.c), temporaries in in[2..7], reused from run to run. */
kiln_status
bench_expr_demo_unfused_run(struct bench_state *st)
{
  kiln_context *c = st->ctx;
  kiln_tensor *x = st->in[0], *zero = st->in[1];
  kiln_status s = kiln_binary_scalar(c, KILN_OP_MUL, x, kiln_scalar_f64(2.0), 0, &st->in[2]);
  if (s == KILN_OK)
    s = kiln_binary_scalar(c, KILN_OP_ADD, st->in[2], kiln_scalar_f64(1.0), 0, &st->in[2]);
  if (s == KILN_OK)
    s = kiln_unary(c, KILN_OP_SIGMOID, st->in[2], &st->in[3]);
  if (s == KILN_OK)
    s = kiln_unary(c, KILN_OP_COS, x, &st->in[4]);
  if (s == KILN_OK)
    s = kiln_binary(c, KILN_OP_MUL, st->in[3], st->in[4], &st->in[3]);
  if (s == KILN_OK)
    s = kiln_binary_scalar(c, KILN_OP_GT, x, kiln_scalar_f64(0.0), 0, &st->in[5]);
  if (s == KILN_OK)
    s = kiln_where(c, st->in[5], x, zero, &st->in[6]);
  if (s == KILN_OK)
    s = kiln_binary(c, KILN_OP_SUB, st->in[3], st->in[6], &st->out);
  if (s == KILN_OK && has_fp64(c)) {
    s = kiln_cast(c, st->out, KILN_F64, &st->in[7]);
    if (s == KILN_OK)
      s = kiln_cast(c, st->in[7], KILN_F32, &st->out);
  }
  return s;
}

static const char sum8_text[] = "s = sum(a * b + c * d - (a - c) * 0.5 + max(b, d))";

static kiln_status
four_inputs(struct bench_state *st)
{
  kiln_status s = KILN_OK;
  for (int i = 0; i < 4 && s == KILN_OK; i++)
    s = bench_random_tensor(st->ctx, st->dtype, 1, &st->n, &st->in[i]);
  return s;
}

kiln_status
bench_expr_sum8_setup(struct bench_state *st)
{
  kiln_status s = four_inputs(st);
  const char *names[4] = {"a", "b", "c", "d"};
  return s == KILN_OK ? make_plan(st, sum8_text, names, 4) : s;
}

kiln_status
bench_expr_sum8_unfused_setup(struct bench_state *st)
{
  drop_plan();
  return four_inputs(st);
}

/* sum8 op by op; temporaries in in[4..7] and out. */
kiln_status
bench_expr_sum8_unfused_run(struct bench_state *st)
{
  kiln_context *c = st->ctx;
  kiln_tensor **t = st->in;
  kiln_status s = kiln_binary(c, KILN_OP_MUL, t[0], t[1], &t[4]);
  if (s == KILN_OK)
    s = kiln_binary(c, KILN_OP_MUL, t[2], t[3], &t[5]);
  if (s == KILN_OK)
    s = kiln_binary(c, KILN_OP_ADD, t[4], t[5], &t[4]);
  if (s == KILN_OK)
    s = kiln_binary(c, KILN_OP_SUB, t[0], t[2], &t[5]);
  if (s == KILN_OK)
    s = kiln_binary_scalar(c, KILN_OP_MUL, t[5], kiln_scalar_f64(0.5), 0, &t[5]);
  if (s == KILN_OK)
    s = kiln_binary(c, KILN_OP_SUB, t[4], t[5], &t[4]);
  if (s == KILN_OK)
    s = kiln_binary(c, KILN_OP_MAX, t[1], t[3], &t[6]);
  if (s == KILN_OK)
    s = kiln_binary(c, KILN_OP_ADD, t[4], t[6], &t[4]);
  if (s == KILN_OK)
    s = kiln_reduce(c, KILN_REDUCE_SUM, t[4], NULL, 0, 0, NULL, &st->out);
  return s;
}

/* The bytes the fused kernel must move: four inputs read once (the sum is one element). */
double
bench_expr_bytes_4in(int64_t n, size_t esz)
{
  return 4.0 * (double)n * (double)esz;
}
