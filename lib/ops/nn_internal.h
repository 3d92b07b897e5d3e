/*
 * Pieces shared by the nn family's files (nn.c: row kernels and the descriptor; nn_loss.c:
 * activations and losses). Not used by any other family.
 */
#ifndef KILN_OPS_NN_INTERNAL_H
#define KILN_OPS_NN_INTERNAL_H

#include <stdint.h>

#include "kiln/nn.h"
#include "ops/ops_common.h"

/* The nn family's embedded sources. */
#define KILN__NN_ROWS "nn_rows"
/* The dtypes both nn sources build today; f16/bf16 need only this mask widened (the kernels
 * move data through KILN_LOAD/KILN_STORE and keep scratch in the compute dtype). */
#define KILN__NN_DTYPES (KILN__DT_FLOATS | KILN__DT_HALVES)
#define KILN__NN_ACT "nn_act"

/* The dtype kernels compute and keep scratch buffers in (T of common.cl) for dtype. */
kiln_dtype kiln__nn_compute_dtype(kiln_dtype dtype);

/* Lanes of the CPU forms' 64-byte vectors for dtype (KILN_VW64 of common.cl): 8 or 16. */
static inline uint32_t
kiln__nn_vw64(kiln_dtype dtype)
{
  return (uint32_t)(64 / kiln_dtype_size(kiln__nn_compute_dtype(dtype)));
}

/* 64-byte vectors of columns per work-item of the CPU forms' norm_cols (NC_BAND of
 * cl_kernels/nn_rows_cpu.clh). */
#define KILN__NN_COL_BAND 16

/* Checks t (a live tensor of ctx) holds a dtype the source accepts. */
kiln_status kiln__nn_check_float(const char *op, kiln_context *ctx, const kiln_tensor *t);

/* Checks t is a tensor of ctx with ref's dtype and shape; what names it in messages. */
kiln_status kiln__nn_check_like(const char *op, kiln_context *ctx, const kiln_tensor *t,
                                const kiln_tensor *ref, const char *what);

/* KILN_ERR_INVALID_ARGUMENT unless reduction is one of kiln_reduction. */
kiln_status kiln__nn_check_reduction(const char *op, kiln_reduction reduction);

/*
 * The result tensor of a loss: per element (reduction none: shape) or 0-d. grad_out of a
 * reduced loss must hold one element; of reduction none, shape.
 */
kiln_status kiln__nn_check_grad_out(const char *op, kiln_context *ctx, const kiln_tensor *g,
                                    kiln_dtype dtype, const kiln__shape *shape,
                                    kiln_reduction reduction);

/*
 * One work-group (ctx->lock held): out[0] = sum(a[0..n)) * scale, or with b (non-NULL)
 * sum(a) / sum(b). a and b hold compute-dtype values.
 */
kiln_status kiln__nn_finish(const char *op, kiln_context *ctx, kiln_dtype dtype, cl_mem a, cl_mem b,
                            uint64_t n, kiln_tensor *out, double scale);

/*
 * The nn family's launch knobs (docs/nn.md, "Launch knobs"): the device's defaults for the
 * dtype, then
 * KILN_DEBUG_NN's valid entries, then the fields of the tests' hook kiln__nn_test_knobs
 * (ops/tuned.h) that are >= 0.
 */
typedef struct kiln__nn_knobs {
  uint32_t act_items; /* KILN_NN_ITEMS of nn_act.cl: 1, 2, 4 or 8 */
  uint32_t erf;       /* KILN_NN_ERF of nn_act.cl: 0 or 1 */
  uint32_t fast;      /* KILN_NN_FAST of nn_act.cl: 0 or 1 */
  uint32_t act_vec;   /* KILN_NN_VEC of nn_act.cl: 1, 4 (by components), 8 or 16 (vector math) */
  uint32_t row_items; /* KILN_NN_ROW_ITEMS of nn_rows.cl: 0, 4, 8 or 16 */
  uint32_t row_wg;    /* least local size of the row kernels: a power of two, 1 to 1024 */
  uint32_t verbose;   /* 1: log each row kernel's private memory (and NVIDIA's ptxas report) */
  uint32_t maxreg;    /* NVIDIA: -cl-nv-maxrregcount (registers per work-item), 0 none */
  uint32_t row_local; /* row kernels' local cache (row_items 0), KiB per work-group; 0 none */
  uint32_t col_items; /* norm backward's column sums: about 2^col_items work-items, 0 to 22 */
  uint32_t row_cpu;   /* KILN_NN_ROW_CPU of nn_rows.cl: 1 the row kernels' CPU forms, one
                       * work-item per row in 64-byte vectors (CPU devices' default) */
} kiln__nn_knobs;

void kiln__nn_knobs_get(const kiln_context *ctx, kiln_dtype dtype, kiln__nn_knobs *k);

/*
 * The bit row kernels take in their lanes-per-row argument (lpr | this) when the register
 * cache may move 4-vectors: cached rows (row_items > 0) of contiguous elements (inner 1), len
 * a multiple of 4, every row operand (ts, NULL entries skipped) at a 4-aligned offset.
 */
uint32_t kiln__nn_row_vec(const kiln__nn_knobs *k, uint64_t len, uint64_t inner,
                          const kiln_tensor *const *ts, size_t n);

/* Kernel name of source (KILN__NN_ROWS or KILN__NN_ACT) built with knobs k (ctx->lock held). */
kiln_status kiln__nn_kernel(const char *op, kiln_context *ctx, const char *source, kiln_dtype dtype,
                            const kiln__nn_knobs *k, const char *name, cl_kernel *out);

/*
 * The local size and lanes per row of row kernel k (nn_rows.cl) over rows of len elements
 * inner apart: the knobs' local size, raised (up to the kernel's limit) until a row fits in
 * the lanes' register caches (not when streaming: row_items 0); lanes per row the next power
 * of two of len / row_items (of len when streaming), up to the local size; 1 when inner > 1.
 * The CPU forms (knob row_cpu): one lane per row, groups of a power of two of rows up to the
 * knobs' local size, about rows / (4 compute units) (the tests' local size hook still wins).
 */
void kiln__nn_row_shape(kiln_context *ctx, cl_kernel k, const kiln__nn_knobs *kn, uint64_t rows,
                        uint64_t len, uint64_t inner, size_t *local, uint32_t *lpr);

/*
 * The last two arguments of every row kernel: the chunks of 4 elements per lane its local cache
 * holds in each of nbuf buffers (nn_rows.cl, RN 0) and that cache, within the knob row_local
 * and the device's local memory less the kernel's nscratch arrays of one T per work-item.
 * 0 chunks (streaming) for register-cache builds (row_items > 0) or row_local 0.
 */
void kiln__nn_row_cache_args(kiln__args *a, kiln_context *ctx, const kiln__nn_knobs *kn,
                             kiln_dtype dtype, size_t local, uint32_t lpr, uint64_t len,
                             unsigned nbuf, unsigned nscratch);

/* Enqueues row kernel a over rows rows with that shape (groups capped; the kernels loop). */
kiln_status kiln__nn_row_enqueue(const kiln__args *a, kiln_context *ctx, size_t local, uint32_t lpr,
                                 uint64_t rows);

#endif
