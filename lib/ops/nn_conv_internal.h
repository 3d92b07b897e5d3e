/*
 * Pieces shared by the nn_conv family's files (nn_conv.c: convolution, the tuner family and
 * the descriptor; nn_pool.c: pooling). Not used by any other family.
 */
#ifndef KILN_OPS_NN_CONV_INTERNAL_H
#define KILN_OPS_NN_CONV_INTERNAL_H

#include <stdint.h>

#include "kiln/nn_conv.h"
#include "ops/ops_common.h"

/* The family's embedded sources and the dtypes they build. */
#define KILN__NN_CONV_SRC "nn_conv"
#define KILN__NN_POOL_SRC "nn_pool"
/* f16 and bf16 are stored in 2 bytes and computed in f32 (common.cl's KILN_LOAD/KILN_STORE). */
#define KILN__NN_CONV_DTYPES (KILN__DT_FLOATS | KILN__DT_HALVES)

/* Spatial sizes of up to three axes as the kernels take them (.x depth, .y height, .z width). */
typedef struct kiln__nn_dims {
  int64_t v[3];
} kiln__nn_dims;

/* Appends dims as one long4 kernel argument (the fourth lane 0). */
void kiln__nn_args_dims(kiln__args *a, const kiln__nn_dims *d);

/*
 * Enqueues the arguments' kernel on the 2-D grid of the nn_conv kernels: dimension 0 over vol
 * positions (rounded up to the work-group size), dimension 1 over rows (planes, channels;
 * on CPU devices fewer, for about eight work-groups per compute unit: the kernels loop over
 * rows).
 * vol must be below 2^31 (the kernels split positions in 32-bit arithmetic). Nothing to do
 * for vol or rows 0.
 */
kiln_status kiln__nn_launch_planes(const kiln__args *a, kiln_context *ctx, uint64_t vol,
                                   uint64_t rows);

/* KILN_ERR_OVERFLOW unless a spatial volume (positions of one plane) is below 2^31. */
kiln_status kiln__nn_check_volume(const char *op, uint64_t vol, const char *what);

/* Checks ctx, out (non-NULL) and that x is a live f16/bf16/f32/f64 tensor of ctx. */
kiln_status kiln__nn_conv_check_input(const char *op, kiln_context *ctx, const kiln_tensor *x,
                                      kiln_tensor **out);

/* Checks t is a live tensor of ctx of dtype and shape; what names it in messages. */
kiln_status kiln__nn_conv_check_tensor(const char *op, kiln_context *ctx, const kiln_tensor *t,
                                       kiln_dtype dtype, const kiln__shape *shape,
                                       const char *what);

#endif
