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

/* Elements per work-item of the flat kernels of nn_act.cl on a device (KILN_NN_ITEMS). */
uint32_t kiln__nn_items(const kiln_device_info *info);

#endif
