/*
 * Convolution and pooling, forward and backward (docs/nn_conv.md has the formulas, the
 * routes and the edge cases).
 *
 * - Pooling over the last nd axes (nd = 1, 2 or 3) of a tensor of any leading batch shape
 *   (NCL, NCHW, NCDHW or more leading axes): max pooling with argmax indices, average
 *   pooling, adaptive average pooling, and the backward pass of each.
 * - Convolution of an [N, C_in, spatial...] input (nd spatial axes) with stride, padding,
 *   dilation, groups and bias: forward, backward (input, weight and bias gradients), and
 *   the transposed convolution through the backward-data path.
 *
 * dtypes: f32, f64 (f64 needs a device with fp64: KILN_ERR_UNSUPPORTED otherwise), f16 and
 * bf16 (stored in 2 bytes, computed in f32 and rounded once on the way out); every floating
 * tensor of a call has the input's dtype; max-pooling indices are i64.
 *
 * Output convention (every function here, as include/kiln/nn.h): if *out is NULL, kiln
 * creates the result and stores it in *out (the caller releases it); if *out is a tensor it
 * must already have the result's shape and dtype and belong to the same context, and kiln
 * writes into it. An output sharing bytes with an input is computed into a temporary and
 * copied. Outputs documented as optional take NULL (not wanted); the wanted ones must not
 * share bytes with each other (KILN_ERR_INVALID_ARGUMENT).
 *
 * Statuses common to every function here:
 *   KILN_OK; KILN_ERR_INVALID_HANDLE (NULL, released or foreign ctx or tensor, a NULL
 *   descriptor); KILN_ERR_INVALID_ARGUMENT (a NULL required output pointer, nd outside
 *   [1, 3], a kernel size, stride or dilation < 1, a negative padding, padding larger than
 *   half the (dilated) kernel for pooling, groups < 1, outputs sharing bytes);
 *   KILN_ERR_CONTEXT_MISMATCH; KILN_ERR_DTYPE (a dtype other than f16/bf16/f32/f64, tensors of
 *   different dtypes, indices not i64); KILN_ERR_SHAPE (too few axes, channels not
 *   divisible by groups, a weight or bias of the wrong shape, an output size below 1, a
 *   given *out of the wrong shape); KILN_ERR_UNSUPPORTED (f64 without fp64); KILN_ERR_BUILD;
 *   KILN_ERR_OPENCL; KILN_ERR_PROVIDER (CLBlast); KILN_ERR_DEVICE_MEMORY;
 *   KILN_ERR_HOST_MEMORY; KILN_ERR_OVERFLOW (a plane of 2^31 or more spatial positions, in
 *   the input, the output or the kernel; a stride, dilation, padding or window above 2^31).
 * On failure results kiln allocated are released and their pointers left NULL; a tensor the
 * caller passed may have been partly written.
 */
#ifndef KILN_NN_CONV_H
#define KILN_NN_CONV_H

#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ pooling */

/**
 * A pooling window over the last nd axes; entry i of each array is spatial axis i (only the
 * first nd entries are read). Zero-initialise, then set what matters.
 */
typedef struct kiln_pool_desc {
  int64_t nd;          /**< spatial axes: 1, 2 or 3 */
  int64_t kernel[3];   /**< window size, >= 1 */
  int64_t stride[3];   /**< 0: the window size (PyTorch's default) */
  int64_t padding[3];  /**< implicit padding on both sides, 0 <= padding <= effective kernel / 2 */
  int64_t dilation[3]; /**< max pooling only; 0 or 1: none (average pooling refuses > 1) */
  int ceil_mode;       /**< output size rounded up (a window must start inside the input or
                            the left padding, as PyTorch) */
  int count_include_pad; /**< average pooling: padded positions count in the divisor */
} kiln_pool_desc;

/**
 * Max pooling: out[..., o] = max over the window of x (NaN wins, as PyTorch; padding is
 * -inf). Output size per axis: floor or ceil((in + 2 pad - dil (k - 1) - 1) / stride) + 1.
 * indices (may be NULL: not wanted) gets, as i64 of out's shape, the flat position of each
 * maximum within its input plane (z * H * W + y * W + x), the first one on ties; a window
 * that lies wholly in the padding (possible with dilation only) gives -inf and index -1.
 * The padding limit is PyTorch's: pad <= (dil (k - 1) + 1) / 2.
 */
KILN_API kiln_status kiln_max_pool(kiln_context *ctx, const kiln_tensor *x,
                                   const kiln_pool_desc *desc, kiln_tensor **out,
                                   kiln_tensor **indices);

/**
 * Gradient of kiln_max_pool: grad_x[p] = sum of grad[o] over the outputs o whose index is
 * p, summed in a fixed order (deterministic, no atomics). grad and indices have the pooled
 * shape; x is the forward's input (its shape and dtype). *grad_x: x's shape.
 */
KILN_API kiln_status kiln_max_pool_backward(kiln_context *ctx, const kiln_tensor *grad,
                                            const kiln_tensor *indices, const kiln_tensor *x,
                                            const kiln_pool_desc *desc, kiln_tensor **grad_x);

/**
 * Average pooling (dilation 1): the window's sum divided by the number of its positions
 * inside the input (count_include_pad 0) or inside input plus padding (1), PyTorch's
 * divisors with ceil_mode included. Padding limit: pad <= k / 2.
 */
KILN_API kiln_status kiln_avg_pool(kiln_context *ctx, const kiln_tensor *x,
                                   const kiln_pool_desc *desc, kiln_tensor **out);

/** Gradient of kiln_avg_pool: each grad[o] / divisor(o) spread over o's window. */
KILN_API kiln_status kiln_avg_pool_backward(kiln_context *ctx, const kiln_tensor *grad,
                                            const kiln_tensor *x, const kiln_pool_desc *desc,
                                            kiln_tensor **grad_x);

/**
 * Adaptive average pooling of the last nd axes to output_size[0..nd) (each >= 1): output o
 * of an axis of length n averages [floor(o n / out), ceil((o + 1) n / out)). An input axis
 * of length 0 with a non-empty batch is KILN_ERR_SHAPE.
 */
KILN_API kiln_status kiln_adaptive_avg_pool(kiln_context *ctx, const kiln_tensor *x, int64_t nd,
                                            const int64_t *output_size, kiln_tensor **out);

/** Gradient of kiln_adaptive_avg_pool; grad has the pooled shape, x is the forward input. */
KILN_API kiln_status kiln_adaptive_avg_pool_backward(kiln_context *ctx, const kiln_tensor *grad,
                                                     const kiln_tensor *x, int64_t nd,
                                                     kiln_tensor **grad_x);

/* ------------------------------------------------------------------------ convolution */

/** A convolution's geometry over nd spatial axes. Zero-initialise, then set what matters. */
typedef struct kiln_conv_desc {
  int64_t nd;                /**< spatial axes: 1, 2 or 3 */
  int64_t stride[3];         /**< 0: 1 */
  int64_t padding[3];        /**< zero padding on both sides, >= 0 */
  int64_t dilation[3];       /**< 0: 1 */
  int64_t groups;            /**< 0: 1; divides C_in and C_out */
  int64_t output_padding[3]; /**< kiln_conv_transpose only: < max(stride, dilation) */
} kiln_conv_desc;

/**
 * y = conv(x, weight) + bias (cross-correlation, as PyTorch): x [N, C_in, in...],
 * weight [C_out, C_in / groups, k...], bias NULL or [C_out]; *out [N, C_out, out...] with
 * out = (in + 2 pad - dil (k - 1) - 1) / stride + 1 per axis (>= 1). N may be 0.
 * Routes (docs/nn_conv.md), chosen per shape by the `conv` tuner family: kiln's direct
 * kernel; im2col (chunked over the batch to bound its buffer) and a GEMM (CLBlast where the
 * build has it); CLBlast's convgemm; kiln's implicit-GEMM kernels.
 */
KILN_API kiln_status kiln_conv(kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *weight,
                               const kiln_tensor *bias, const kiln_conv_desc *desc,
                               kiln_tensor **out);

/**
 * Gradients of kiln_conv from grad ([N, C_out, out...]), the forward's x and weight:
 * grad_x (x's shape), grad_weight (weight's shape), grad_bias ([C_out]); each may be NULL
 * (not wanted). Sums run in a fixed order (deterministic).
 */
KILN_API kiln_status kiln_conv_backward(kiln_context *ctx, const kiln_tensor *grad,
                                        const kiln_tensor *x, const kiln_tensor *weight,
                                        const kiln_conv_desc *desc, kiln_tensor **grad_x,
                                        kiln_tensor **grad_weight, kiln_tensor **grad_bias);

/**
 * Transposed convolution (PyTorch's conv_transpose1d/2d/3d): x [N, C_in, in...],
 * weight [C_in, C_out / groups, k...], bias NULL or [C_out]; *out [N, C_out, out...] with
 * out = (in - 1) stride - 2 pad + dil (k - 1) + output_padding + 1 (>= 1). It is the
 * backward-data pass of the convolution weight describes, and runs on the same routes.
 * Its own gradients: with respect to x, kiln_conv of the gradient with the same weight and
 * desc; with respect to the weight, kiln_conv_backward's grad_weight with the roles of x and
 * grad exchanged.
 */
KILN_API kiln_status kiln_conv_transpose(kiln_context *ctx, const kiln_tensor *x,
                                         const kiln_tensor *weight, const kiln_tensor *bias,
                                         const kiln_conv_desc *desc, kiln_tensor **out);

#ifdef __cplusplus
}
#endif
#endif
