/*
 * Neural-network building blocks, forward and backward (docs/nn.md has the formulas, the
 * layouts and the edge cases).
 *
 * - Row kernels: softmax, log_softmax (one pass, online max and sum) and their backward
 *   passes from the output; layer_norm and rms_norm with the statistics the backward pass
 *   takes, and backward passes giving the input, weight and bias gradients.
 * - Activations with gradients: one table, include/kiln/nn_table.h (KILN_ACTIVATIONS).
 * - Losses with reduction none, mean or sum, forward and backward: cross_entropy from
 *   logits (class indices with ignore_index and label smoothing, or probabilities), nll,
 *   and the pointwise losses of KILN_POINT_LOSSES (mse, l1, smooth_l1, huber,
 *   binary_cross_entropy, bce_with_logits with pos_weight, kl_div).
 * - Training pieces (the nn_train family, declared at the end): dropout from the context's
 *   Philox stream, group_norm and batch_norm, embedding backward and embedding_bag, and
 *   cross_entropy/nll with class weights. Optimizer steps are in kiln/nn_optim.h, attention
 *   and RoPE in kiln/nn_attention.h.
 *
 * dtypes: f32 and f64 (f64 needs a device with fp64: KILN_ERR_UNSUPPORTED otherwise); the
 * row kernels, activations and losses also take f16 and bf16, stored in 2 bytes and computed
 * in f32 (scratch and saved statistics included), rounded to nearest even on the way out.
 * The training ops below (dropout, group_norm, batch_norm, embedding backward/bag, weighted
 * losses) take f32 and f64 only. Every floating tensor of one call has the input's dtype;
 * class indices are i64.
 * kiln_activation_supports and kiln_nn_supports say what a build accepts.
 *
 * Output convention (every function here): if *out is NULL, kiln creates the result and
 * stores it in *out (the caller releases it). If *out is a tensor, it must already have the
 * result's shape and dtype and belong to the same context; kiln writes into it. An output
 * may be exactly an input (computed in place) or share some of its bytes (kiln computes into
 * a temporary and copies). Functions with several outputs take NULL for the ones not wanted
 * where documented; the wanted ones must not share bytes with each other
 * (KILN_ERR_INVALID_ARGUMENT, nothing written).
 *
 * Statuses common to every function here:
 *   KILN_OK; KILN_ERR_INVALID_HANDLE (NULL, released or foreign ctx or tensor);
 *   KILN_ERR_INVALID_ARGUMENT (a NULL required output pointer, an op outside its enum, a
 *   reduction outside kiln_reduction, an axis out of range, a bad scalar: eps < 0 or NaN,
 *   label_smoothing outside [0, 1], outputs sharing bytes); KILN_ERR_CONTEXT_MISMATCH (a
 *   tensor of another context); KILN_ERR_DTYPE (a dtype other than f16/bf16/f32/f64, tensors of
 *   different dtypes, a target of the wrong dtype, a given *out of the wrong dtype);
 *   KILN_ERR_SHAPE (shapes that do not match as documented, a given *out of the wrong
 *   shape); KILN_ERR_UNSUPPORTED (f64 without fp64); KILN_ERR_BUILD (a kernel failed to
 *   compile; the log is in the message); KILN_ERR_OPENCL; KILN_ERR_DEVICE_MEMORY;
 *   KILN_ERR_HOST_MEMORY; KILN_ERR_OVERFLOW (a temporary exceeds the device's largest
 *   allocation).
 * On failure results kiln allocated are released and their pointers left NULL; a tensor the
 * caller passed may have been partly written.
 */
#ifndef KILN_NN_H
#define KILN_NN_H

#include "kiln/nn_table.h"
#include "kiln/random.h"
#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ row kernels */

/**
 * y = softmax(x) along axis: exp(x - max) / sum(exp(x - max)), one pass over the row for
 * the max and the sum (online rescaling), one for the output. axis may be negative. Rows
 * holding -inf give 0 there; a row of only -inf gives NaN everywhere (as PyTorch); a NaN
 * anywhere in a row gives a row of NaN; +inf gives NaN. Empty rows and batches are valid.
 * *out: x's shape and dtype.
 */
KILN_API kiln_status kiln_softmax(kiln_context *ctx, const kiln_tensor *x, int64_t axis,
                                  kiln_tensor **out);

/** y = log_softmax(x) = x - max - log(sum(exp(x - max))) along axis; as kiln_softmax (a row of
 * only -inf gives NaN). */
KILN_API kiln_status kiln_log_softmax(kiln_context *ctx, const kiln_tensor *x, int64_t axis,
                                      kiln_tensor **out);

/**
 * Gradient of softmax from its output: dx = y * (g - sum(g * y)) along axis. grad and y
 * have one shape and dtype; *grad_in gets it.
 */
KILN_API kiln_status kiln_softmax_backward(kiln_context *ctx, const kiln_tensor *grad,
                                           const kiln_tensor *y, int64_t axis,
                                           kiln_tensor **grad_in);

/** Gradient of log_softmax from its output: dx = g - exp(y) * sum(g) along axis. */
KILN_API kiln_status kiln_log_softmax_backward(kiln_context *ctx, const kiln_tensor *grad,
                                               const kiln_tensor *y, int64_t axis,
                                               kiln_tensor **grad_in);

/**
 * Layer normalisation over the trailing axes [axis, ndim) of x, taken as one row of
 * D = x.shape[axis] * ... * x.shape[ndim - 1] elements (PyTorch's normalized_shape):
 *   y = (x - mean) * rstd * weight + bias,  rstd = 1 / sqrt(var + eps),
 * var the biased variance (Welford per lane, Chan's combination across lanes).
 * weight and bias (either may be NULL: 1 and 0) hold D elements (any shape of D elements).
 * eps >= 0. *out: x's shape. mean and rstd (each may be NULL: not wanted) receive the row
 * statistics, shape x.shape[0:axis] (0-d when axis is 0), for kiln_layer_norm_backward.
 * A row of D = 0 elements is refused (KILN_ERR_SHAPE), an empty batch is not.
 */
KILN_API kiln_status kiln_layer_norm(kiln_context *ctx, const kiln_tensor *x, int64_t axis,
                                     const kiln_tensor *weight, const kiln_tensor *bias, double eps,
                                     kiln_tensor **out, kiln_tensor **mean, kiln_tensor **rstd);

/**
 * Gradients of kiln_layer_norm from grad (x's shape), x, the forward's mean and rstd and its
 * weight (NULL when the forward had none). xhat = (x - mean) * rstd, gw = grad * weight:
 *   dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))   (means over the row),
 *   dweight = sum over rows of grad * xhat,  dbias = sum over rows of grad.
 * grad_x, grad_weight, grad_bias: each may be NULL (not wanted); grad_weight and grad_bias
 * get D elements shaped like x.shape[axis:]. grad_weight without a weight is still the
 * gradient the weight would have at 1.
 */
KILN_API kiln_status kiln_layer_norm_backward(kiln_context *ctx, const kiln_tensor *grad,
                                              const kiln_tensor *x, const kiln_tensor *mean,
                                              const kiln_tensor *rstd, const kiln_tensor *weight,
                                              int64_t axis, kiln_tensor **grad_x,
                                              kiln_tensor **grad_weight, kiln_tensor **grad_bias);

/**
 * RMS normalisation over the trailing axes [axis, ndim): y = x * rstd * weight with
 * rstd = 1 / sqrt(mean(x^2) + eps). weight may be NULL (1). rstd (may be NULL) as in
 * kiln_layer_norm.
 */
KILN_API kiln_status kiln_rms_norm(kiln_context *ctx, const kiln_tensor *x, int64_t axis,
                                   const kiln_tensor *weight, double eps, kiln_tensor **out,
                                   kiln_tensor **rstd);

/**
 * Gradients of kiln_rms_norm: xhat = x * rstd, gw = grad * weight,
 *   dx = rstd * (gw - xhat * mean(gw * xhat)),  dweight = sum over rows of grad * xhat.
 * grad_x and grad_weight may each be NULL (not wanted).
 */
KILN_API kiln_status kiln_rms_norm_backward(kiln_context *ctx, const kiln_tensor *grad,
                                            const kiln_tensor *x, const kiln_tensor *rstd,
                                            const kiln_tensor *weight, int64_t axis,
                                            kiln_tensor **grad_x, kiln_tensor **grad_weight);

/* ------------------------------------------------------------------------ activations */

/** Activations, one per row of KILN_ACTIVATIONS. */
typedef enum kiln_activation {
#define KILN_X_(E, n, v, f, b) KILN_ACT_##E,
  KILN_ACTIVATIONS(KILN_X_)
#undef KILN_X_
      KILN_ACTIVATION_COUNT
} kiln_activation;

/** Name of an activation ("gelu_tanh"); "?" outside the enum. Never NULL. */
KILN_API const char *kiln_activation_name(kiln_activation op);

/** Nonzero when op accepts dtype in this build. */
KILN_API int kiln_activation_supports(kiln_activation op, kiln_dtype dtype);

/**
 * Nonzero when kiln_activation_backward of op takes the forward's output y (relu, sigmoid,
 * tanh), zero when it takes the input x; -1 outside the enum.
 */
KILN_API int kiln_activation_backward_uses_output(kiln_activation op);

/**
 * y = op(x) elementwise. p0 and p1 are the op's scalars (PyTorch's defaults in brackets),
 * ignored by the others: leaky_relu p0 = negative_slope (0.01); elu, celu p0 = alpha (1);
 * softplus p0 = beta (1), p1 = threshold (20); hardtanh p0 = min_val (-1), p1 = max_val (1).
 * *out: x's shape and dtype.
 */
KILN_API kiln_status kiln_activation_forward(kiln_context *ctx, kiln_activation op,
                                             const kiln_tensor *x, double p0, double p1,
                                             kiln_tensor **out);

/**
 * dx = g * op'(.) elementwise, PyTorch's formulas: v is the forward input x, or its output
 * y when kiln_activation_backward_uses_output(op). grad and v have one shape and dtype.
 */
KILN_API kiln_status kiln_activation_backward(kiln_context *ctx, kiln_activation op,
                                              const kiln_tensor *grad, const kiln_tensor *v,
                                              double p0, double p1, kiln_tensor **grad_in);

/* ------------------------------------------------------------------------ losses */

/** How a loss folds its per-element (per-row) values. */
typedef enum kiln_reduction {
  KILN_REDUCTION_NONE = 0, /**< one value per element (per row for cross_entropy and nll) */
  KILN_REDUCTION_MEAN = 1, /**< their mean, a 0-d tensor (see each loss for the divisor) */
  KILN_REDUCTION_SUM = 2,  /**< their sum, a 0-d tensor */
} kiln_reduction;

/**
 * Cross entropy from logits whose last axis holds C classes (batch shape B = the leading
 * axes; PyTorch's class axis 1 of a [N, C, d...] input is a kiln_permute away).
 * target: i64 class indices of shape B, or probabilities of the logits' dtype and shape.
 * With indices, per row, lse = logsumexp(z), e = label_smoothing:
 *   loss = lse - (1 - e) * z[t] - e / C * sum_j z[j];  rows with t == ignore_index give 0,
 * and mean divides by the number of rows not ignored (NaN when every row is ignored, as
 * PyTorch). An index outside [0, C) other than ignore_index gives NaN for its row (no
 * device-to-host check). With probabilities p, q = (1 - e) p + e / C:
 *   loss = sum_j q[j] * (lse - z[j]);  mean divides by the number of rows.
 * ignore_index is unused with probabilities. label_smoothing in [0, 1].
 * *out: shape B (none) or 0-d (mean, sum), the logits' dtype.
 */
KILN_API kiln_status kiln_cross_entropy(kiln_context *ctx, const kiln_tensor *logits,
                                        const kiln_tensor *target, int64_t ignore_index,
                                        double label_smoothing, kiln_reduction reduction,
                                        kiln_tensor **out);

/**
 * Gradient of kiln_cross_entropy with respect to the logits, with the forward's arguments:
 * dz = g * (softmax(z) * sum_j q[j] - q) per row, q the smoothed target (0 for ignored
 * rows), g = grad_out[row] (none: shape B) or grad_out / divisor (mean) or grad_out (sum;
 * grad_out 0-d or of one element). *grad_logits: the logits' shape.
 */
KILN_API kiln_status kiln_cross_entropy_backward(kiln_context *ctx, const kiln_tensor *grad_out,
                                                 const kiln_tensor *logits,
                                                 const kiln_tensor *target, int64_t ignore_index,
                                                 double label_smoothing, kiln_reduction reduction,
                                                 kiln_tensor **grad_logits);

/**
 * Negative log likelihood: loss = -logp[row, t] for i64 targets t of shape B (logp: B + [C]),
 * 0 for t == ignore_index; mean divides by the rows not ignored (NaN when none is); an index
 * outside [0, C) gives NaN for its row. *out as kiln_cross_entropy.
 */
KILN_API kiln_status kiln_nll_loss(kiln_context *ctx, const kiln_tensor *logp,
                                   const kiln_tensor *target, int64_t ignore_index,
                                   kiln_reduction reduction, kiln_tensor **out);

/** Gradient of kiln_nll_loss: -g at [row, t], 0 elsewhere (and in ignored rows). */
KILN_API kiln_status kiln_nll_loss_backward(kiln_context *ctx, const kiln_tensor *grad_out,
                                            const kiln_tensor *logp, const kiln_tensor *target,
                                            int64_t ignore_index, kiln_reduction reduction,
                                            kiln_tensor **grad_logp);

/** Pointwise losses, one per row of KILN_POINT_LOSSES. */
typedef enum kiln_loss_op {
#define KILN_X_(E, n, f, b) KILN_LOSS_##E,
  KILN_POINT_LOSSES(KILN_X_)
#undef KILN_X_
      KILN_LOSS_OP_COUNT
} kiln_loss_op;

/** Name of a pointwise loss ("smooth_l1"); "?" outside the enum. Never NULL. */
KILN_API const char *kiln_loss_op_name(kiln_loss_op op);

/**
 * A pointwise loss of input x against target y (same shape and dtype), elementwise then
 * reduced (mean divides by the element count: NaN for an empty input, as PyTorch; sum of
 * none is 0). param: smooth_l1's beta (>= 0; 0 is l1), huber's delta (> 0), ignored by the
 * others. pos_weight: bce_with_logits only (NULL for the others, else
 * KILN_ERR_INVALID_ARGUMENT), NULL or a tensor of the last axis' length (broadcast over
 * the leading axes). bce takes probabilities and clamps each log at -100 (as PyTorch);
 * kl_div takes log-probabilities x and probabilities y (kl_div_log_target: log y), and its
 * mean is over elements (PyTorch's batchmean is sum / batch). *out: x's shape (none) or 0-d.
 */
KILN_API kiln_status kiln_loss(kiln_context *ctx, kiln_loss_op op, const kiln_tensor *input,
                               const kiln_tensor *target, const kiln_tensor *pos_weight,
                               double param, kiln_reduction reduction, kiln_tensor **out);

/**
 * Gradient of kiln_loss with respect to input (the formulas of KILN_POINT_LOSSES, PyTorch's
 * bce clamp of the denominator at 1e-12), times grad_out (x's shape for none, else 0-d or
 * one element), divided by the element count for mean. *grad_input: x's shape.
 */
KILN_API kiln_status kiln_loss_backward(kiln_context *ctx, kiln_loss_op op,
                                        const kiln_tensor *grad_out, const kiln_tensor *input,
                                        const kiln_tensor *target, const kiln_tensor *pos_weight,
                                        double param, kiln_reduction reduction,
                                        kiln_tensor **grad_input);

/** Nonzero when the nn row kernels and losses accept dtype in this build (f16, bf16, f32, f64). */
KILN_API int kiln_nn_supports(kiln_dtype dtype);

/* ------------------------------------------------------------------------ dropout
 * (lib/ops/nn_norm.c, kernels in cl_kernels/nn_norm.cl; docs/nn.md "Dropout") */

/**
 * Training-mode dropout: out = keep ? x / (1 - p) : 0 elementwise (p == 1: every element 0),
 * with keep drawn from the context's Philox stream (kiln/random.h): element e is kept when
 * word e % 4 of counter block counter + e / 4 is >= p 2^32 (rounded down), i.e. exactly
 * when kiln_random_bernoulli(p) from the same state would draw 0 there. The stream's
 * counter advances by ceil(numel / 4) blocks (as kiln_random_bernoulli's). Dropped
 * elements are 0 even where x is NaN or infinite. Evaluation mode is the identity: do not
 * call this. p in [0, 1] (else KILN_ERR_INVALID_ARGUMENT).
 * *out: x's shape and dtype (may be x itself). mask: NULL (not wanted) or a bool tensor of
 * x's shape (output convention), 1 where kept. state: NULL or receives the stream state the
 * call started from, which kiln_dropout_backward replays without a mask.
 */
KILN_API kiln_status kiln_dropout(kiln_context *ctx, const kiln_tensor *x, double p,
                                  kiln_tensor **out, kiln_tensor **mask, kiln_rng_state *state);

/**
 * Gradient of kiln_dropout: grad_in = keep ? grad / (1 - p) : 0, keep read from mask (the
 * forward's bool mask, grad's shape) or, when mask is NULL, replayed from state (the state
 * kiln_dropout reported: the same bits for the same shape, whatever the work-group size).
 * Exactly one of mask and state must be non-NULL. The context's stream is not touched.
 */
KILN_API kiln_status kiln_dropout_backward(kiln_context *ctx, const kiln_tensor *grad,
                                           const kiln_tensor *mask, const kiln_rng_state *state,
                                           double p, kiln_tensor **grad_in);

/* ------------------------------------------------------------------------ group_norm,
 * batch_norm (lib/ops/nn_norm.c). x is [N, C, *] (ndim >= 2; the trailing axes, S elements
 * per channel, may be absent). weight and bias: NULL (1 and 0) or C elements. */

/**
 * Group normalisation: the C channels fall into `groups` groups of C / groups channels
 * (groups > 0 dividing C, else KILN_ERR_INVALID_ARGUMENT); each (n, group) is normalised
 * over its C / groups * S elements with the biased variance (two passes: mean, then centred
 * squares): y = (x - mean) rstd weight[c] + bias[c], rstd = 1 / sqrt(var + eps), eps >= 0.
 * *out: x's shape. mean and rstd: NULL (not wanted) or [N, groups] (output convention).
 */
KILN_API kiln_status kiln_group_norm(kiln_context *ctx, const kiln_tensor *x, int64_t groups,
                                     const kiln_tensor *weight, const kiln_tensor *bias,
                                     double eps, kiln_tensor **out, kiln_tensor **mean,
                                     kiln_tensor **rstd);

/**
 * Gradients of kiln_group_norm from grad (x's shape), x, the forward's mean and rstd
 * ([N, groups]) and weight (NULL when the forward had none). Per (n, group), gw = grad w[c],
 * xhat = (x - mean) rstd: dx = rstd (gw - mean(gw) - xhat mean(gw xhat));
 * dweight[c] = sum over n, s of grad xhat; dbias[c] = sum of grad. grad_x, grad_weight,
 * grad_bias: each NULL (not wanted) or as the output convention ([C] for the last two).
 */
KILN_API kiln_status kiln_group_norm_backward(kiln_context *ctx, const kiln_tensor *grad,
                                              const kiln_tensor *x, const kiln_tensor *mean,
                                              const kiln_tensor *rstd, const kiln_tensor *weight,
                                              int64_t groups, kiln_tensor **grad_x,
                                              kiln_tensor **grad_weight, kiln_tensor **grad_bias);

/**
 * Batch normalisation over N and the trailing axes, per channel.
 * training != 0: mean and the biased variance of the batch (two passes); when running_mean
 * and running_var are given (both or neither, [C], updated in place) they become
 * (1 - momentum) running + momentum batch, with the unbiased variance (N S - 1; N S == 1
 * gives inf or NaN there, as PyTorch). momentum in [0, 1].
 * training == 0: running_mean and running_var are required and used as the statistics.
 * y = (x - mean) rstd weight[c] + bias[c], rstd = 1 / sqrt(var + eps), eps >= 0.
 * *out: x's shape. save_mean, save_rstd: NULL (not wanted) or [C] (output convention): the
 * statistics used (in evaluation, the running mean and 1 / sqrt(running_var + eps)), which
 * kiln_batch_norm_backward takes. An empty batch (N S == 0) in training is
 * KILN_ERR_SHAPE.
 */
KILN_API kiln_status kiln_batch_norm(kiln_context *ctx, const kiln_tensor *x,
                                     const kiln_tensor *weight, const kiln_tensor *bias,
                                     kiln_tensor *running_mean, kiln_tensor *running_var,
                                     int training, double momentum, double eps,
                                     kiln_tensor **out, kiln_tensor **save_mean,
                                     kiln_tensor **save_rstd);

/**
 * Gradients of kiln_batch_norm from grad, x, weight (NULL when the forward had none) and the
 * forward's save_mean and save_rstd, with M = N S and xhat = (x - mean) rstd:
 * training != 0: dx = weight rstd (grad - sum(grad) / M - xhat sum(grad xhat) / M) (sums per
 * channel); training == 0: dx = grad weight rstd (the statistics are constants).
 * dweight = sum grad xhat, dbias = sum grad per channel. Outputs as kiln_group_norm_backward.
 */
KILN_API kiln_status kiln_batch_norm_backward(kiln_context *ctx, const kiln_tensor *grad,
                                              const kiln_tensor *x, const kiln_tensor *weight,
                                              const kiln_tensor *save_mean,
                                              const kiln_tensor *save_rstd, int training,
                                              kiln_tensor **grad_x, kiln_tensor **grad_weight,
                                              kiln_tensor **grad_bias);

/* ------------------------------------------------------------------------ embeddings
 * (lib/ops/nn_embed.c). Index tensors are i32 or i64; a token outside [-V, V) (negative
 * counting from V, as kiln_embedding) is KILN_ERR_INVALID_ARGUMENT naming its position,
 * found on the device (one small read-back per call), before anything is written. */

/**
 * Gradient of kiln_embedding: grad_weight [num_weights, E] with row v = the sum of grad's rows
 * [t, :] over the tokens t whose index is v (grad: indices.shape + [E], f32/f64). Deterministic:
 * the (index, token) pairs are sorted on the device and each row sums its tokens in token
 * order (no atomics). Rows no token hits, and row padding_idx (when 0 <= padding_idx <
 * num_weights; pass -1 for none), are 0. Cost: a bitonic sort of the tokens,
 * O(T log^2 T), plus one pass over grad.
 */
KILN_API kiln_status kiln_embedding_backward(kiln_context *ctx, const kiln_tensor *grad,
                                             const kiln_tensor *indices, int64_t num_weights,
                                             int64_t padding_idx, kiln_tensor **grad_weight);

/** How kiln_embedding_bag folds a bag. */
typedef enum kiln_bag_mode {
  KILN_BAG_SUM = 0,  /**< the sum of the bag's rows (weighted by per_sample_weights) */
  KILN_BAG_MEAN = 1, /**< their mean (an empty bag gives 0) */
} kiln_bag_mode;

/**
 * embedding_bag in PyTorch's offsets form: indices 1-D [T], offsets 1-D [B] (bag b holds tokens
 * offsets[b] .. offsets[b + 1] - 1, the last bag up to T; offsets[0] == 0, non-decreasing, <= T,
 * else KILN_ERR_INVALID_ARGUMENT). out[b, :] = sum (or mean) of weight[indices[t], :] over the
 * bag, each row times per_sample_weights[t] (NULL: 1; only with KILN_BAG_SUM, as PyTorch).
 * weight [V, E] f32/f64; *out: [B, E]. Empty bags give 0.
 */
KILN_API kiln_status kiln_embedding_bag(kiln_context *ctx, const kiln_tensor *weight,
                                        const kiln_tensor *indices, const kiln_tensor *offsets,
                                        kiln_bag_mode mode,
                                        const kiln_tensor *per_sample_weights,
                                        kiln_tensor **out);

/**
 * Gradient of kiln_embedding_bag with respect to the weight: grad [B, E]; row v of
 * grad_weight [num_weights, E] sums grad[bag(t), :] * per_sample_weights[t] (/ bag length for
 * mean) over the tokens t with index v, deterministically as kiln_embedding_backward.
 */
KILN_API kiln_status kiln_embedding_bag_backward(kiln_context *ctx, const kiln_tensor *grad,
                                                 const kiln_tensor *indices,
                                                 const kiln_tensor *offsets, kiln_bag_mode mode,
                                                 const kiln_tensor *per_sample_weights,
                                                 int64_t num_weights, kiln_tensor **grad_weight);

/* ------------------------------------------------------------------------ class weights
 * (lib/ops/nn_wloss.c): cross_entropy and nll with a per-class weight, PyTorch's `weight=`. */

/**
 * kiln_cross_entropy with class weights w (NULL: all 1; else C elements of the logits' dtype).
 * With class indices t, per row (label smoothing e): loss = (1 - e) w[t] (lse - z[t]) +
 * e / C sum_j w[j] (lse - z[j]); mean divides the sum by sum over rows not ignored of w[t]
 * (NaN when that is 0, as PyTorch). With probabilities q: loss = sum_j w[j] q'[j] (lse - z[j]),
 * q' the smoothed q, mean over rows. Other arguments, the shapes and statuses as
 * kiln_cross_entropy. One work-group per row.
 */
KILN_API kiln_status kiln_cross_entropy_weighted(kiln_context *ctx, const kiln_tensor *logits,
                                                 const kiln_tensor *target,
                                                 const kiln_tensor *weight, int64_t ignore_index,
                                                 double label_smoothing,
                                                 kiln_reduction reduction, kiln_tensor **out);

/** Gradient of kiln_cross_entropy_weighted: dz = g (softmax(z) sum(a) - a), a the weighted
 * (smoothed) target of the row; grad_out and the result as kiln_cross_entropy_backward. */
KILN_API kiln_status kiln_cross_entropy_weighted_backward(
    kiln_context *ctx, const kiln_tensor *grad_out, const kiln_tensor *logits,
    const kiln_tensor *target, const kiln_tensor *weight, int64_t ignore_index,
    double label_smoothing, kiln_reduction reduction, kiln_tensor **grad_logits);

/** kiln_nll_loss with class weights: loss = -w[t] logp[t]; mean divides by the sum of w[t]
 * over rows not ignored. */
KILN_API kiln_status kiln_nll_loss_weighted(kiln_context *ctx, const kiln_tensor *logp,
                                            const kiln_tensor *target, const kiln_tensor *weight,
                                            int64_t ignore_index, kiln_reduction reduction,
                                            kiln_tensor **out);

/** Gradient of kiln_nll_loss_weighted: -g w[t] at [row, t], 0 elsewhere. */
KILN_API kiln_status kiln_nll_loss_weighted_backward(kiln_context *ctx,
                                                     const kiln_tensor *grad_out,
                                                     const kiln_tensor *logp,
                                                     const kiln_tensor *target,
                                                     const kiln_tensor *weight,
                                                     int64_t ignore_index,
                                                     kiln_reduction reduction,
                                                     kiln_tensor **grad_logp);

#ifdef __cplusplus
}
#endif
#endif
