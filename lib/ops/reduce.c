/*
 * Reduction family: kiln_reduce, kiln_argreduce. Kernels in cl_kernels/reduce.cl; the
 * strategy (rows, columns, two-pass, permute, median tiers) is chosen here and
 * described in docs/reductions.md.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cl_kernels/reduce_contract.clh"
#include "core/axes.h"
#include "core/dtype_traits.h"
#include "core/error.h"
#include "kiln/reduce.h"
#include "ops/families.h"
#include "ops/launch_params.h"
#include "ops/ops_common.h"
#include "ops/tuned.h"
#include "runtime/runtime.h"

enum result_rule { RES_SAME, RES_WIDE, RES_REAL, RES_ABS, RES_BOOL, RES_I64 };
enum empty_rule { EMPTY_VALUE, EMPTY_ERROR };

struct red_row {
  const char *name;
  enum kiln__dtype_class cls;
  enum result_rule res;
  enum empty_rule empty;
};

static const struct red_row red_rows[] = {
#define X(E, n, cls, res, empty) {#n, KILN__CLASS_##cls, RES_##res, EMPTY_##empty},
    KILN_REDUCE_OPS(X)
#undef X
};

/* Longest row median_sort handles (its keys live in local memory). */
#define MEDIAN_SORT_MAX 4096

const char *
kiln_reduce_op_name(kiln_reduce_op op)
{
  return (unsigned)op < KILN_REDUCE_OP_COUNT ? red_rows[op].name : "?";
}

/* Ops that take complex tensors (a bit per op). */
static const unsigned complex_ops = 0u
#define X(E) | 1u << KILN_REDUCE_##E
    KILN_REDUCE_COMPLEX_OPS(X)
#undef X
    ;

/* The dtypes reduce.cl builds (its source row). */
#define REDUCE_DTYPES (KILN__DT_CLASSIC | KILN__DT_HALVES | KILN__DT_COMPLEX)

int
kiln_reduce_op_supports(kiln_reduce_op op, kiln_dtype dtype)
{
  if ((unsigned)op >= KILN_REDUCE_OP_COUNT || !kiln__dtype_valid(dtype))
    return 0;
  unsigned mask = kiln__dtype_class_mask(red_rows[op].cls);
  if (complex_ops >> op & 1u)
    mask |= KILN__DT_COMPLEX;
  return (mask & REDUCE_DTYPES & KILN__DT_BIT(dtype)) != 0;
}

static kiln_dtype
result_dtype(const kiln_context *ctx, enum result_rule rule, kiln_dtype in)
{
  switch (rule) {
  case RES_SAME:
    return in;
  case RES_WIDE:
    return kiln__dtype_is_floating(in) || kiln__dtype_is_complex(in) ? in : KILN_I64;
  case RES_REAL:
    return kiln__dtype_is_floating(in) || kiln__dtype_is_complex(in) ? in
           : ctx->info.has_fp64                                      ? KILN_F64
                                                                     : KILN_F32;
  case RES_ABS:
    return kiln__dtype_real_part(in);
  case RES_BOOL:
    return KILN_BOOL;
  case RES_I64:
    break;
  }
  return KILN_I64;
}

static kiln_status
check_op_dtype(const char *op, kiln_reduce_op rop, kiln_dtype dtype)
{
  KILN_RETURN_IF((unsigned)rop >= KILN_REDUCE_OP_COUNT, KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown reduction op %d", (int)rop);
  KILN_RETURN_IF(!kiln__dtype_valid(dtype), KILN_ERR_INVALID_ARGUMENT, op, "invalid dtype %d",
                 (int)dtype);
  KILN_RETURN_IF(kiln__dtype_is_complex(dtype) && !kiln_reduce_op_supports(rop, dtype),
                 KILN_ERR_DTYPE, op,
                 "%s does not accept %s (complex tensors take sum, prod, mean and norm; "
                 "complex numbers have no order)",
                 red_rows[rop].name, kiln_dtype_name(dtype));
  KILN_RETURN_IF(!kiln_reduce_op_supports(rop, dtype), KILN_ERR_DTYPE, op,
                 "%s does not accept %s (accepts %s)", red_rows[rop].name, kiln_dtype_name(dtype),
                 kiln__dtype_class_text(red_rows[rop].cls));
  return KILN_OK;
}

kiln_status
kiln_reduce_result_dtype(const kiln_context *ctx, kiln_reduce_op rop, kiln_dtype in,
                         kiln_dtype *out)
{
  static const char op[] = "kiln_reduce_result_dtype";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(check_op_dtype(op, rop, in));
  *out = result_dtype(ctx, red_rows[rop].res, in);
  return KILN_OK;
}

/* ---------------------------------------------------------------------------------- */

/* One reduction as the kernels see it. */
struct red_call {
  const char *op; /* for messages */
  kiln_context *ctx;
  const kiln__launch_params *lp;
  const char *options; /* program build options */
  const char *kop;     /* kernel op name in reduce.cl ("sum", "argmax" ...) */
  cl_uint flags;
  double prm;
  size_t state_bytes;  /* what one partial state may take (reduce_contract.clh) */
  int complex_kernels; /* the program is a complex dtype's (scalar paths only) */
};

/* The kernels' PT: double where the device has fp64, else float. */
static void
arg_prm(kiln__args *a, kiln_context *ctx, double v)
{
  if (ctx->info.has_fp64) {
    cl_double d = v;
    kiln__args_raw(a, sizeof d, &d);
  } else {
    cl_float f = (cl_float)v;
    kiln__args_raw(a, sizeof f, &f);
  }
}

static kiln_status
kernel(struct red_call *rc, const char *suffix, cl_kernel *k)
{
  char name[64];
  snprintf(name, sizeof name, "%s%s", rc->kop, suffix);
  return kiln__kernel_get(rc->op, rc->ctx, "reduce", rc->options, name, k);
}

static uint64_t
pow2_floor(uint64_t v)
{
  uint64_t p = 1;
  while (p * 2 <= v)
    p *= 2;
  return p;
}

static uint64_t
pow2_ceil(uint64_t v)
{
  uint64_t p = 1;
  while (p < v)
    p *= 2;
  return p;
}

/*
 * Work-items sharing a row (GPUs; CPU devices take one, cpu_rows): enough that each folds
 * about items_per_thread elements, but no more than it takes to give the device its target
 * number of work-items, and at most the group size.
 */
static uint32_t
lanes_for(uint64_t len, uint32_t ipt, size_t local, uint64_t rows, uint64_t target_items)
{
  uint64_t want = pow2_ceil((len + ipt - 1) / ipt);
  uint64_t fill = pow2_ceil((target_items + rows - 1) / (rows ? rows : 1));
  uint64_t most = pow2_floor(local);
  if (want > fill)
    want = fill;
  return (uint32_t)(want < most ? want : most);
}

int kiln__reduce_test_gpu_rows;

/*
 * CPU devices (PoCL) run a work-group's items one after another on one core, so lanes
 * sharing a row add a merge tree in local memory and no parallelism: there each row (or
 * row chunk) is one work-item's, and the groups are sized to give the device its target
 * number of them. Measured on PoCL (2 cores), reduce.sum_rows f32 over [n / 1024, 1024]:
 * with the GPUs' lanes (16 per row of 1024 at 2^16 elements) 2^14 / 2^16 / 2^18 took
 * 0.025 / 0.051 / 0.101 ms, one item per row in 8-row groups 0.0026 / 0.0080 / 0.023
 * (NumPy: 0.004 / 0.010 / 0.038); from 2^20 on the two agree (rows of one item already).
 */
static int
cpu_rows(const kiln_context *ctx)
{
  return !ctx->info.is_gpu && !kiln__reduce_test_gpu_rows;
}

/* Items per group for `units` one-item units over `target` groups: a power of two, at most
 * the work-group size. */
static uint32_t
cpu_group(uint64_t units, uint64_t target, uint32_t most)
{
  uint64_t per = units / (target ? target : 1);
  if (per > most)
    per = most;
  return per < 1 ? 1 : (uint32_t)pow2_floor(per);
}

/* The outputs every reduction kernel takes: result (and, for arg-reductions, values). */
static void
args_outputs(kiln__args *a, cl_mem out, uint64_t ooff, cl_mem vals, uint64_t voff)
{
  kiln__args_mem(a, out);
  kiln__args_u64(a, ooff);
  kiln__args_mem(a, vals);
  kiln__args_u64(a, voff);
}

/*
 * The column kernel with vector states (NAME_colsv in reduce.cl) exists for sum, mean, max
 * and min, for columns per item in multiples of 16, on CPU devices (-DKILN_COLSV, set by
 * reduce_build_options).
 */
static int
cols_vector(const struct red_call *rc)
{
  static const char *const ops[] = {"sum", "mean", "max", "min"};
  if (rc->ctx->info.is_gpu || rc->complex_kernels || rc->lp->cols_per_item % 16 != 0)
    return 0;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (strcmp(rc->kop, ops[i]) == 0)
      return 1;
  return 0;
}

/* Columns per item as the program is built: the tile path stops at KILN__TILE_COLS_MAX. */
static uint32_t
cols_per_item(const struct red_call *rc)
{
  uint32_t c = rc->lp->cols_per_item;
  return cols_vector(rc) || c <= KILN__TILE_COLS_MAX ? c : KILN__TILE_COLS_MAX;
}

/*
 * Reduces src (element offset srcoff) viewed as (outer, red, inner) with red > 0 into
 * out (+ vals for argmin/argmax). ctx->lock held.
 */
static kiln_status
run_reduce(struct red_call *rc, cl_mem src, uint64_t srcoff, uint64_t outer, uint64_t red,
           uint64_t inner, cl_mem out, uint64_t ooff, cl_mem vals, uint64_t voff)
{
  KILN__ASSERT_LOCKED(rc->ctx);
  kiln_context *ctx = rc->ctx;
  const kiln__launch_params *lp = rc->lp;
  uint64_t target = kiln__launch_target_groups(ctx, lp);
  kiln__ops_tmp part = {0};
  cl_kernel k;
  size_t local, global;
  kiln_status s;

  if (inner == 1) {
    KILN_TRY(kernel(rc, "_rows", &k));
    int cpu = cpu_rows(ctx);
    uint64_t clen, nchunk;
    uint32_t lanes = 1;
    if (cpu) {
      nchunk = kiln__launch_chunks(lp, outer, red, (uint64_t)lp->wg_size * lp->items_per_thread,
                                   target, &clen);
      KILN_TRY(kiln__launch_local_size(rc->op, ctx, k, cpu_group(outer * nchunk, target, lp->wg_size),
                                       rc->state_bytes, &local));
    } else {
      KILN_TRY(kiln__launch_local_size(rc->op, ctx, k, lp->wg_size, rc->state_bytes, &local));
      nchunk = kiln__launch_chunks(lp, outer, red, (uint64_t)local * lp->items_per_thread, target,
                                   &clen);
      lanes = lanes_for(clen, lp->items_per_thread, local, outer * nchunk, target * local);
    }
    uint64_t rpg = local / lanes;
    if (nchunk > 1)
      KILN_TRY(kiln__ops_tmp_alloc(ctx, outer * nchunk * rc->state_bytes, &part));
    kiln__args a = kiln__args_begin(rc->op, k);
    kiln__args_mem(&a, src);
    kiln__args_u64(&a, srcoff);
    args_outputs(&a, out, ooff, vals, voff);
    kiln__args_mem(&a, part.mem);
    kiln__args_u64(&a, outer);
    kiln__args_u64(&a, red);
    kiln__args_u64(&a, nchunk);
    kiln__args_u64(&a, clen);
    kiln__args_u32(&a, lanes);
    kiln__args_u32(&a, rc->flags);
    arg_prm(&a, ctx, rc->prm);
    kiln__args_raw(&a, local * rc->state_bytes, NULL);
    global = (size_t)(((outer + rpg - 1) / rpg) * nchunk * local);
    s = kiln__args_enqueue_1d(&a, ctx, global, local);
    if (s == KILN_OK && nchunk > 1) {
      s = kernel(rc, "_rows_p", &k);
      size_t local2 = 0;
      if (s == KILN_OK)
        s = kiln__launch_local_size(rc->op, ctx, k,
                                    cpu ? cpu_group(outer, target, lp->wg_size) : lp->wg_size,
                                    rc->state_bytes, &local2);
      if (s == KILN_OK) {
        uint32_t lanes2 = cpu ? 1 : lanes_for(nchunk, 1, local2, outer, target * local2);
        uint64_t rpg2 = local2 / lanes2;
        kiln__args b = kiln__args_begin(rc->op, k);
        kiln__args_mem(&b, part.mem);
        args_outputs(&b, out, ooff, vals, voff);
        kiln__args_u64(&b, outer);
        kiln__args_u64(&b, nchunk);
        kiln__args_u32(&b, lanes2);
        kiln__args_u32(&b, rc->flags);
        arg_prm(&b, ctx, rc->prm);
        kiln__args_raw(&b, local2 * rc->state_bytes, NULL);
        global = (size_t)(((outer + rpg2 - 1) / rpg2) * local2);
        s = kiln__args_enqueue_1d(&b, ctx, global, local2);
      }
    }
    kiln__ops_tmp_free(ctx, &part);
    return s;
  }

  KILN_TRY(kernel(rc, cols_vector(rc) ? "_colsv" : "_cols", &k));
  KILN_TRY(kiln__launch_local_size(rc->op, ctx, k, lp->wg_size, 0, &local));
  uint64_t clen, cols = cols_per_item(rc), nblk = (inner + cols - 1) / cols;
  uint64_t nchunk =
      kiln__launch_chunks(lp, outer * nblk, red, lp->items_per_thread, target * local, &clen);
  if (nchunk > 1)
    KILN_TRY(kiln__ops_tmp_alloc(ctx, outer * nchunk * inner * rc->state_bytes, &part));
  kiln__args a = kiln__args_begin(rc->op, k);
  kiln__args_mem(&a, src);
  kiln__args_u64(&a, srcoff);
  args_outputs(&a, out, ooff, vals, voff);
  kiln__args_mem(&a, part.mem);
  kiln__args_u64(&a, outer);
  kiln__args_u64(&a, red);
  kiln__args_u64(&a, inner);
  kiln__args_u64(&a, nchunk);
  kiln__args_u64(&a, clen);
  kiln__args_u32(&a, rc->flags);
  arg_prm(&a, ctx, rc->prm);
  global = kiln__launch_grid(outer * nchunk * nblk, local);
  s = kiln__args_enqueue_1d(&a, ctx, global, local);
  if (s == KILN_OK && nchunk > 1) {
    /* CPU devices: one item per column as the row kernels size their groups (up to 256, the
     * CPU default; the first pass's one-item groups, 1024 of them scheduled one by one, took
     * 0.77 of a 1.4 ms f32 [4096, 1024] column sum on PoCL). */
    s = kernel(rc, "_cols_p", &k);
    if (s == KILN_OK)
      s = kiln__launch_local_size(rc->op, ctx, k,
                                  cpu_rows(ctx) ? cpu_group(outer * inner, target, 256)
                                                : lp->wg_size,
                                  0, &local);
    if (s == KILN_OK) {
      kiln__args b = kiln__args_begin(rc->op, k);
      kiln__args_mem(&b, part.mem);
      args_outputs(&b, out, ooff, vals, voff);
      kiln__args_u64(&b, outer);
      kiln__args_u64(&b, nchunk);
      kiln__args_u64(&b, inner);
      kiln__args_u32(&b, rc->flags);
      arg_prm(&b, ctx, rc->prm);
      global = kiln__launch_grid(outer * inner, local);
      s = kiln__args_enqueue_1d(&b, ctx, global, local);
    }
  }
  kiln__ops_tmp_free(ctx, &part);
  return s;
}

/* Copies x into dst in the order of plan (shape and source strides). ctx->lock held. */
static kiln_status
run_permute(struct red_call *rc, const kiln_tensor *x, uint32_t ndim, const uint64_t *shape,
            const uint64_t *stride, cl_mem dst)
{
  KILN__ASSERT_LOCKED(rc->ctx);
  kiln__bcast plan;
  memset(&plan, 0, sizeof plan);
  for (uint32_t d = 0; d < ndim; d++) {
    plan.shape[d] = shape[d];
    plan.stride[0][d] = stride[d];
  }
  cl_kernel k;
  size_t local, global;
  KILN_TRY(kiln__kernel_get(rc->op, rc->ctx, "reduce", rc->options, "permute", &k));
  KILN_TRY(kiln__launch_local_size(rc->op, rc->ctx, k, rc->lp->wg_size, 0, &local));
  kiln__args a = kiln__args_begin(rc->op, k);
  kiln__args_mem(&a, x->mem);
  kiln__args_u64(&a, x->offset / kiln_dtype_size(x->dtype));
  kiln__args_mem(&a, dst);
  kiln__args_u64(&a, x->numel);
  kiln__args_u32(&a, ndim);
  kiln__args_raw(&a, sizeof plan, &plan);
  KILN_TRY(a.status);
  /* One work-item per run of RED_PERM_RUN elements of the last dim (permute in reduce.cl). */
  global = kiln__launch_grid(
      x->numel / shape[ndim - 1] * ((shape[ndim - 1] + RED_PERM_RUN - 1) / RED_PERM_RUN), local);
  return kiln__enqueue_kernel(rc->op, rc->ctx, k, 1, &global, &local);
}

/* A 1-D grid-stride launch of a median kernel over `rows` items. */
static kiln_status
launch_items(struct red_call *rc, cl_kernel k, uint64_t n)
{
  size_t local, global;
  KILN_TRY(kiln__launch_local_size(rc->op, rc->ctx, k, rc->lp->wg_size, 0, &local));
  global = kiln__launch_grid(n, local);
  return kiln__enqueue_kernel(rc->op, rc->ctx, k, 1, &global, &local);
}

static unsigned
key_bits(kiln_dtype d)
{
  switch (d) {
  case KILN_F64:
  case KILN_I64:
    return 64;
  case KILN_F32:
  case KILN_I32:
  case KILN_F16: /* keyed as the f32 values they load into */
  case KILN_BF16:
    return 32;
  default:
    return 8;
  }
}

/* Median of each row of src, viewed as (rows, red) with red > 0. ctx->lock held. */
static kiln_status
run_median(struct red_call *rc, kiln_dtype dtype, cl_mem src, uint64_t srcoff, uint64_t rows,
           uint64_t red, cl_mem out, uint64_t ooff)
{
  KILN__ASSERT_LOCKED(rc->ctx);
  kiln_context *ctx = rc->ctx;
  cl_kernel k;
  kiln_status s;
  if (red <= RED_MEDIAN_SMALL) {
    KILN_TRY(kiln__kernel_get(rc->op, ctx, "reduce", rc->options, "median_small", &k));
    kiln__args a = kiln__args_begin(rc->op, k);
    kiln__args_mem(&a, src);
    kiln__args_u64(&a, srcoff);
    kiln__args_mem(&a, out);
    kiln__args_u64(&a, ooff);
    kiln__args_u64(&a, rows);
    kiln__args_u64(&a, red);
    kiln__args_u32(&a, rc->flags);
    KILN_TRY(a.status);
    return launch_items(rc, k, rows);
  }

  uint64_t npow2 = pow2_ceil(red);
  if (red <= MEDIAN_SORT_MAX && npow2 * 8 + 64 <= ctx->info.local_mem_bytes) {
    KILN_TRY(kiln__kernel_get(rc->op, ctx, "reduce", rc->options, "median_sort", &k));
    size_t local, global;
    KILN_TRY(kiln__launch_local_size(rc->op, ctx, k, rc->lp->wg_size, 0, &local));
    kiln__args a = kiln__args_begin(rc->op, k);
    kiln__args_mem(&a, src);
    kiln__args_u64(&a, srcoff);
    kiln__args_mem(&a, out);
    kiln__args_u64(&a, ooff);
    kiln__args_u64(&a, rows);
    kiln__args_u64(&a, red);
    kiln__args_u32(&a, (uint32_t)npow2);
    kiln__args_u32(&a, rc->flags);
    kiln__args_raw(&a, (size_t)npow2 * 8, NULL);
    KILN_TRY(a.status);
    global = (size_t)(rows * local);
    return kiln__enqueue_kernel(rc->op, ctx, k, 1, &global, &local);
  }

  /* Radix selection. NaN count first (floats): it decides the ranks and propagation. */
  kiln__ops_tmp nnan = {0}, sel = {0}, hist = {0};
  int is_float = kiln__dtype_is_floating(dtype);
  s = kiln__ops_tmp_alloc(ctx, rows * sizeof(msel), &sel);
  if (s == KILN_OK && is_float) {
    s = kiln__ops_tmp_alloc(ctx, rows * 8, &nnan);
    if (s == KILN_OK) {
      struct red_call cnt = *rc;
      cnt.kop = "count";
      cnt.flags = RED_F_ISNAN;
      s = run_reduce(&cnt, src, srcoff, rows, red, 1, nnan.mem, 0, NULL, 0);
    }
  }
  if (s == KILN_OK)
    s = kiln__kernel_get(rc->op, ctx, "reduce", rc->options, "median_init", &k);
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(rc->op, k);
    kiln__args_mem(&a, nnan.mem);
    kiln__args_mem(&a, sel.mem);
    kiln__args_u64(&a, rows);
    kiln__args_u64(&a, red);
    kiln__args_u32(&a, rc->flags);
    s = a.status == KILN_OK ? launch_items(rc, k, rows) : a.status;
  }
  cl_kernel kh = NULL, kp = NULL;
  size_t local = 1;
  if (s == KILN_OK)
    s = kiln__kernel_get(rc->op, ctx, "reduce", rc->options, "median_hist", &kh);
  if (s == KILN_OK)
    s = kiln__kernel_get(rc->op, ctx, "reduce", rc->options, "median_pick", &kp);
  if (s == KILN_OK)
    s = kiln__launch_local_size(rc->op, ctx, kh, rc->lp->wg_size, 0, &local);
  uint64_t clen = red, nchunk = 1;
  if (s == KILN_OK) {
    nchunk = kiln__launch_chunks(rc->lp, rows, red, (uint64_t)local * rc->lp->items_per_thread,
                                 kiln__launch_target_groups(ctx, rc->lp), &clen);
    s = kiln__ops_tmp_alloc(ctx, rows * nchunk * RED_MEDIAN_HIST * sizeof(uint32_t), &hist);
  }
  for (int shift = (int)key_bits(dtype) - 8; s == KILN_OK && shift >= 0; shift -= 8) {
    kiln__args a = kiln__args_begin(rc->op, kh);
    kiln__args_mem(&a, src);
    kiln__args_u64(&a, srcoff);
    kiln__args_mem(&a, sel.mem);
    kiln__args_mem(&a, hist.mem);
    kiln__args_u64(&a, rows);
    kiln__args_u64(&a, red);
    kiln__args_u64(&a, nchunk);
    kiln__args_u64(&a, clen);
    kiln__args_u32(&a, (uint32_t)shift);
    kiln__args_u32(&a, rc->lp->blocked);
    size_t global = (size_t)(rows * nchunk * local);
    s = kiln__args_enqueue_1d(&a, ctx, global, local);
    if (s != KILN_OK)
      break;
    kiln__args b = kiln__args_begin(rc->op, kp);
    kiln__args_mem(&b, hist.mem);
    kiln__args_mem(&b, sel.mem);
    kiln__args_u64(&b, rows);
    kiln__args_u64(&b, nchunk);
    kiln__args_u32(&b, (uint32_t)shift);
    s = b.status == KILN_OK ? launch_items(rc, kp, rows) : b.status;
  }
  if (s == KILN_OK)
    s = kiln__kernel_get(rc->op, ctx, "reduce", rc->options, "median_store", &k);
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(rc->op, k);
    kiln__args_mem(&a, sel.mem);
    kiln__args_mem(&a, out);
    kiln__args_u64(&a, ooff);
    kiln__args_u64(&a, rows);
    s = a.status == KILN_OK ? launch_items(rc, k, rows) : a.status;
  }
  kiln__ops_tmp_free(ctx, &hist);
  kiln__ops_tmp_free(ctx, &nnan);
  kiln__ops_tmp_free(ctx, &sel);
  return s;
}

/* ---------------------------------------------------------------------------------- */

/* Kernel op, flags and parameter for a public op with its options. */
static kiln_status
plan_op(const char *op, kiln_reduce_op rop, const kiln_reduce_options *o, struct red_call *rc,
        int *wide_matters)
{
  rc->flags = o->nan_policy == KILN_NAN_OMIT ? RED_F_OMIT : 0u;
  rc->prm = 0;
  *wide_matters = 0;
  switch (rop) {
  case KILN_REDUCE_SUM:
    rc->kop = "sum";
    *wide_matters = 1;
    break;
  case KILN_REDUCE_PROD:
    rc->kop = "prod";
    *wide_matters = 1;
    break;
  case KILN_REDUCE_MEAN:
    rc->kop = "mean";
    *wide_matters = 1;
    break;
  case KILN_REDUCE_VAR:
  case KILN_REDUCE_STD:
    rc->kop = "var";
    rc->prm = o->ddof;
    rc->flags |= rop == KILN_REDUCE_STD ? RED_F_STD : 0u;
    *wide_matters = 1;
    break;
  case KILN_REDUCE_MIN:
    rc->kop = "min";
    break;
  case KILN_REDUCE_MAX:
    rc->kop = "max";
    break;
  case KILN_REDUCE_ARGMIN:
    rc->kop = "argmin";
    break;
  case KILN_REDUCE_ARGMAX:
    rc->kop = "argmax";
    break;
  case KILN_REDUCE_ANY:
    rc->kop = "any";
    break;
  case KILN_REDUCE_ALL:
    rc->kop = "all";
    break;
  case KILN_REDUCE_COUNT_NONZERO:
    rc->kop = "count";
    break;
  case KILN_REDUCE_LOGSUMEXP:
    rc->kop = "lse";
    *wide_matters = 1;
    break;
  case KILN_REDUCE_MEDIAN:
    rc->kop = "median";
    break;
  case KILN_REDUCE_NORM:
    switch (o->norm_ord) {
    case KILN_NORM_L2:
      rc->kop = "normp";
      rc->prm = 2;
      *wide_matters = 1;
      break;
    case KILN_NORM_P:
      KILN_RETURN_IF(!(o->norm_p > 0) || !isfinite(o->norm_p), KILN_ERR_INVALID_ARGUMENT, op,
                     "norm_p must be finite and > 0 (got %g)", o->norm_p);
      rc->kop = "normp";
      rc->prm = o->norm_p;
      *wide_matters = 1;
      break;
    case KILN_NORM_L1:
      rc->kop = "sum";
      rc->flags |= RED_F_ABS;
      *wide_matters = 1;
      break;
    case KILN_NORM_LINF:
      rc->kop = "max";
      rc->flags |= RED_F_ABS;
      break;
    case KILN_NORM_NEG_INF:
      rc->kop = "min";
      rc->flags |= RED_F_ABS;
      break;
    case KILN_NORM_L0:
      rc->kop = "sum";
      rc->flags |= RED_F_NZ;
      *wide_matters = 1;
      break;
    default:
      return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "unknown norm order %d",
                        (int)o->norm_ord);
    }
    break;
  default:
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "unknown reduction op %d", (int)rop);
  }
  return KILN_OK;
}

/* What a reduction over zero elements gives (EMPTY_VALUE ops). */
static double
empty_value(kiln_reduce_op rop, const kiln_reduce_options *o)
{
  switch (rop) {
  case KILN_REDUCE_PROD:
  case KILN_REDUCE_ALL:
    return 1;
  case KILN_REDUCE_MEAN:
  case KILN_REDUCE_VAR:
  case KILN_REDUCE_STD:
  case KILN_REDUCE_MEDIAN:
    return NAN;
  case KILN_REDUCE_LOGSUMEXP:
    return -INFINITY;
  case KILN_REDUCE_NORM:
    return o->norm_ord == KILN_NORM_NEG_INF ? INFINITY : 0;
  default:
    return 0;
  }
}

static kiln_status
fill(const char *op, kiln_context *ctx, kiln_tensor *t, double v)
{
  if (!t->nbytes)
    return KILN_OK;
  unsigned char pattern[16];
  kiln__scalar_to_bytes(kiln_scalar_f64(v), t->dtype, pattern);
  if (kiln__dtype_is_complex(t->dtype) && isnan(v)) {
    /* NumPy's mean of no complex numbers is nan+nanj, not a real NaN with imag 0. */
    size_t half = kiln_dtype_size(t->dtype) / 2;
    memcpy(pattern + half, pattern, half);
  }
  cl_int err = clEnqueueFillBuffer(ctx->queue, t->mem, pattern, kiln_dtype_size(t->dtype),
                                   t->offset, t->nbytes, 0, NULL, NULL);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "clEnqueueFillBuffer");
}

/* Everything after validation and output preparation; ctx->lock held. */
static kiln_status
reduce_locked(struct red_call *rc, kiln_reduce_op rop, const kiln_tensor *x,
              const kiln__reduce_layout *l, const kiln_reduce_options *o, kiln_tensor *vals,
              kiln_tensor *out)
{
  KILN__ASSERT_LOCKED(rc->ctx);
  kiln_context *ctx = rc->ctx;
  if (out->numel == 0)
    return KILN_OK;
  if (l->red == 0) {
    KILN_TRY(fill(rc->op, ctx, out, empty_value(rop, o)));
    return KILN_OK;
  }
  cl_mem src = x->mem;
  uint64_t srcoff = kiln__ops_elem_offset(x);
  uint64_t outer = l->outer, red = l->red, inner = l->inner;
  kiln__ops_tmp perm = {0};
  kiln_status s = KILN_OK;
  int is_median = rop == KILN_REDUCE_MEDIAN;
  if (l->permute || (is_median && inner > 1)) {
    /* Median needs contiguous rows: (outer, red, inner) becomes (outer, inner, red). */
    uint64_t shape[3] = {outer, inner, red}, stride[3] = {red * inner, 1, inner};
    s = kiln__ops_tmp_alloc(ctx, x->nbytes, &perm);
    if (s == KILN_OK)
      s = l->permute ? run_permute(rc, x, l->perm_ndim, l->perm_shape, l->perm_stride, perm.mem)
                     : run_permute(rc, x, 3, shape, stride, perm.mem);
    if (!l->permute)
      outer *= inner;
    inner = 1;
    src = perm.mem;
    srcoff = 0;
  }
  if (s == KILN_OK) {
    if (is_median)
      s = run_median(rc, x->dtype, src, srcoff, outer, red, out->mem, kiln__ops_elem_offset(out));
    else
      s = run_reduce(rc, src, srcoff, outer, red, inner, out->mem, kiln__ops_elem_offset(out),
                     vals ? vals->mem : NULL, kiln__ops_elem_offset(vals));
  }
  kiln__ops_tmp_free(ctx, &perm);
  return s;
}

/* kiln_reduce (arg_call 0) and kiln_argreduce (arg_call 1: out = indices, values optional). */
static kiln_status
reduce_impl(kiln_context *ctx, kiln_reduce_op rop, const kiln_tensor *x, const int64_t *axes,
            size_t naxes, int keepdims, const kiln_reduce_options *opts,
            const kiln__launch_params *lp, int arg_call, kiln_tensor **values, kiln_tensor **out)
{
  char op[64];
  snprintf(op, sizeof op, "%s(%s)", arg_call ? "kiln_argreduce" : "kiln_reduce",
           kiln_reduce_op_name(rop));
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "%s is NULL", arg_call ? "indices" : "out");
  KILN_RETURN_IF((unsigned)rop >= KILN_REDUCE_OP_COUNT, KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown reduction op %d", (int)rop);
  KILN_RETURN_IF(arg_call && rop != KILN_REDUCE_ARGMIN && rop != KILN_REDUCE_ARGMAX,
                 KILN_ERR_INVALID_ARGUMENT, op,
                 "kiln_argreduce takes KILN_REDUCE_ARGMIN or KILN_REDUCE_ARGMAX");
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_TRY(check_op_dtype(op, rop, x->dtype));
  kiln_reduce_options o;
  memset(&o, 0, sizeof o);
  if (opts)
    o = *opts;
  KILN_RETURN_IF(o.nan_policy != KILN_NAN_PROPAGATE && o.nan_policy != KILN_NAN_OMIT,
                 KILN_ERR_INVALID_ARGUMENT, op, "unknown NaN policy %d", (int)o.nan_policy);
  KILN_RETURN_IF(!(o.ddof >= 0) || !isfinite(o.ddof), KILN_ERR_INVALID_ARGUMENT, op,
                 "ddof must be finite and >= 0 (got %g)", o.ddof);
  struct red_call rc = {op, ctx, lp, NULL, NULL, 0, 0, RED_STATE_BYTES, 0};
  int wide_matters;
  KILN_TRY(plan_op(op, rop, &o, &rc, &wide_matters));
  int wide = o.accumulate_f64 && wide_matters && x->dtype == KILN_F32;
  KILN_RETURN_IF(o.accumulate_f64 && !ctx->info.has_fp64, KILN_ERR_UNSUPPORTED, op,
                 "accumulate_f64 needs fp64, which device \"%s\" lacks", ctx->info.name);

  unsigned mask;
  KILN_TRY(kiln__axes_mask(op, x->shape.ndim, axes, naxes, &mask));
  kiln__reduce_layout l;
  kiln__reduce_layout_make(&x->shape, mask, keepdims, &l);
  kiln__launch_params tuned;
  if (!lp) {
    /* Tuned per (dtype, layout, size) bucket, before any lock (online tuning runs kernels). */
    kiln__launch_params_for(ctx, KILN__LAUNCH_REDUCE, x->dtype, l.outer, l.red, l.inner, &tuned);
    lp = &tuned;
  }
  KILN_TRY(kiln__launch_params_check(op, lp));
  rc.lp = lp;
  KILN_RETURN_IF(l.red == 0 && red_rows[rop].empty == EMPTY_ERROR, KILN_ERR_SHAPE, op,
                 "%s of an empty selection has no value (a reduced axis has size 0)",
                 red_rows[rop].name);

  /* Norms of complex tensors run the real part's program on |z| (KILN_CABS in reduce.cl);
   * sum, prod and mean a complex program with scalar paths and larger states. */
  int cabs = kiln__dtype_is_complex(x->dtype) && rop == KILN_REDUCE_NORM;
  if (kiln__dtype_is_complex(x->dtype)) {
    rc.state_bytes = RED_STATE_BYTES_COMPLEX;
    rc.complex_kernels = !cabs;
  }
  char options[192];
  /* The shared options (what `kiln cache warm` builds), then the f64-accumulation variant. */
  kiln__program_options(
      &ctx->info, "reduce", cabs ? kiln__dtype_real_part(x->dtype) : x->dtype,
      &(kiln__program_variant){.cols = cols_per_item(&rc), .lane_order = lp->blocked + 1}, options,
      sizeof options);
  if (wide)
    strncat(options, " -DKILN_REDUCE_WIDE=1", sizeof options - strlen(options) - 1);
  if (cabs)
    strncat(options, " -DKILN_CABS=1", sizeof options - strlen(options) - 1);
  rc.options = options;

  /* Multi-pass strategies read x after writing partial results: any overlap goes through a
   * temporary. */
  kiln__out_target to, tv = {0};
  KILN_TRY(kiln__ops_out_begin(op, ctx, result_dtype(ctx, red_rows[rop].res, x->dtype), &l.out, out,
                               &x, 1, 0, &to));
  kiln_status s = KILN_OK;
  if (values)
    s = kiln__ops_out_begin(op, ctx, x->dtype, &l.out, values, &x, 1, 0, &tv);
  if (s == KILN_OK && values) {
    kiln_tensor *outs[2] = {*values, *out};
    static const char *const names[2] = {"values", "indices"};
    s = kiln__ops_outputs_disjoint(op, outs, names, 2);
  }
  kiln__ctx_lock(ctx);
  if (s == KILN_OK)
    s = reduce_locked(&rc, rop, x, &l, &o, values ? tv.dst : NULL, to.dst);
  s = kiln__ops_out_finish(op, ctx, &to, s);
  if (tv.out)
    s = kiln__ops_out_finish(op, ctx, &tv, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln__reduce_tuned(kiln_context *ctx, kiln_reduce_op op, const kiln_tensor *x, const int64_t *axes,
                   size_t naxes, int keepdims, const kiln_reduce_options *opts,
                   const kiln__launch_params *lp, kiln_tensor **out)
{
  return reduce_impl(ctx, op, x, axes, naxes, keepdims, opts, lp, 0, NULL, out);
}

kiln_status
kiln__argreduce_tuned(kiln_context *ctx, kiln_reduce_op op, const kiln_tensor *x,
                      const int64_t *axes, size_t naxes, int keepdims,
                      const kiln_reduce_options *opts, const kiln__launch_params *lp,
                      kiln_tensor **values, kiln_tensor **indices)
{
  return reduce_impl(ctx, op, x, axes, naxes, keepdims, opts, lp, 1, values, indices);
}

kiln_status
kiln_reduce(kiln_context *ctx, kiln_reduce_op op, const kiln_tensor *x, const int64_t *axes,
            size_t naxes, int keepdims, const kiln_reduce_options *opts, kiln_tensor **out)
{
  return reduce_impl(ctx, op, x, axes, naxes, keepdims, opts, NULL, 0, NULL, out);
}

kiln_status
kiln_argreduce(kiln_context *ctx, kiln_reduce_op op, const kiln_tensor *x, const int64_t *axes,
               size_t naxes, int keepdims, const kiln_reduce_options *opts, kiln_tensor **values,
               kiln_tensor **indices)
{
  return reduce_impl(ctx, op, x, axes, naxes, keepdims, opts, NULL, 1, values, indices);
}

/*
 * Reductions compile their columns per work-item in (a launch parameter), the rows
 * kernel's lane order (also one), and on CPU devices the vector-state column kernels
 * (whole 16-column vectors per work-item).
 */
static void
reduce_build_options(const kiln_device_info *info, const char *source, kiln_dtype dtype,
                     const void *variant, char *buf, size_t len)
{
  (void)source;
  (void)dtype;
  const kiln__program_variant *v = variant;
  uint32_t cols = v && v->cols ? v->cols : kiln__default_cols_per_item(info);
  uint32_t lanes = v && v->lane_order ? v->lane_order - 1 : kiln__default_lane_order(info);
  kiln__options_append(buf, len, " -DKILN_COLS=%u -DKILN_BLOCKED=%u", cols, lanes);
  if (!info->is_gpu && cols % 16 == 0)
    kiln__options_append(buf, len, " -DKILN_COLSV=1");
}

static const struct kiln__source reduce_sources[] = {{"reduce", REDUCE_DTYPES}, {NULL, 0}};

const struct kiln__family kiln__reduce_family = {
    .name = "reduce",
    .sources = reduce_sources,
    .build_options = reduce_build_options,
    .tune = &kiln__reduce_tune,
};
