/*
 * Optimizer steps and gradient-norm clipping over lists of tensors, in place (docs/nn.md,
 * "Optimizers"). The formulas are PyTorch's (torch.optim.SGD, Adam, AdamW with foreach or
 * fused, clip_grad_norm_ with norm_type 2).
 *
 * Lists: n tensors per list, entry i of every list belonging to parameter i. Every tensor of
 * one call has one dtype, f32 or f64 (f64 needs fp64: KILN_ERR_UNSUPPORTED); entry i of
 * every list has params[i]'s shape (the gradient and the state buffers). Up to 8 parameters
 * go into one kernel launch (each launch walks all of them), so a list of n tensors takes
 * ceil(n / 8) launches. n == 0 does nothing. Tensors written (parameters, state buffers, the
 * gradients of kiln_clip_grad_norm) must not share bytes with any other tensor of their
 * entry, and parameters must not share bytes with each other (KILN_ERR_INVALID_ARGUMENT,
 * nothing written); state buffers of different entries must not share bytes either (not
 * checked: the result is then undefined).
 *
 * Statuses common to every function here:
 *   KILN_OK; KILN_ERR_INVALID_HANDLE (NULL ctx, NULL or released tensor in a list);
 *   KILN_ERR_INVALID_ARGUMENT (a NULL list or options pointer with n > 0, a hyperparameter
 *   outside its range as documented, tensors sharing bytes as above, step < 1);
 *   KILN_ERR_CONTEXT_MISMATCH; KILN_ERR_DTYPE (not f32/f64, or dtypes differ);
 *   KILN_ERR_SHAPE (an entry's shape differs from params[i]'s); KILN_ERR_UNSUPPORTED;
 *   KILN_ERR_BUILD; KILN_ERR_OPENCL; KILN_ERR_DEVICE_MEMORY; KILN_ERR_HOST_MEMORY.
 * All checks run before anything is enqueued.
 */
#ifndef KILN_NN_OPTIM_H
#define KILN_NN_OPTIM_H

#include <stddef.h>

#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** SGD hyperparameters (torch.optim.SGD). */
typedef struct kiln_sgd_options {
  double lr;           /**< learning rate, >= 0 */
  double momentum;     /**< >= 0; 0 disables the momentum buffer */
  double dampening;    /**< applied from the second step on */
  double weight_decay; /**< >= 0, L2 penalty added to the gradient */
  int nesterov;        /**< nonzero: Nesterov momentum (needs momentum > 0, dampening 0) */
  int maximize;        /**< nonzero: ascend (the gradient is negated) */
} kiln_sgd_options;

/**
 * One SGD step over n parameters: d = g (+ weight_decay p); with momentum,
 * buf = (step == 1 ? d : momentum buf + (1 - dampening) d), d = nesterov ? d + momentum buf
 * : buf; p -= lr d. step counts from 1 (the momentum buffer's previous contents are ignored
 * at step 1, as PyTorch's missing buffer). momentum_bufs: n tensors when momentum > 0,
 * ignored (may be NULL) otherwise.
 */
KILN_API kiln_status kiln_sgd_step(kiln_context *ctx, size_t n, kiln_tensor *const *params,
                                   const kiln_tensor *const *grads,
                                   kiln_tensor *const *momentum_bufs,
                                   const kiln_sgd_options *opt, int64_t step);

/** Adam / AdamW hyperparameters (torch.optim.Adam, AdamW). */
typedef struct kiln_adam_options {
  double lr;           /**< learning rate, >= 0 */
  double beta1, beta2; /**< each in [0, 1) */
  double eps;          /**< >= 0 */
  double weight_decay; /**< >= 0 */
  int amsgrad;         /**< nonzero: divide by the running maximum of v */
  int decoupled;       /**< nonzero: AdamW (p *= 1 - lr weight_decay), else Adam (g += wd p) */
  int maximize;        /**< nonzero: ascend */
} kiln_adam_options;

/**
 * One Adam (AdamW with opt->decoupled) step over n parameters, step counting from 1:
 *   m = m + (1 - beta1)(g - m);  v = beta2 v + (1 - beta2) g^2;
 *   vmax = max(vmax, v) (amsgrad);  denom = sqrt(v or vmax) / sqrt(1 - beta2^step) + eps;
 *   p -= lr / (1 - beta1^step) * m / denom.
 * exp_avgs (m) and exp_avg_sqs (v) hold the state (zeros before step 1); max_exp_avg_sqs
 * (vmax): n tensors with amsgrad, ignored (may be NULL) otherwise.
 */
KILN_API kiln_status kiln_adam_step(kiln_context *ctx, size_t n, kiln_tensor *const *params,
                                    const kiln_tensor *const *grads,
                                    kiln_tensor *const *exp_avgs, kiln_tensor *const *exp_avg_sqs,
                                    kiln_tensor *const *max_exp_avg_sqs,
                                    const kiln_adam_options *opt, int64_t step);

/**
 * Clips gradients by their global L2 norm, in place: norm = sqrt(sum over every element of
 * every grads[i] of g^2), then each g *= min(1, max_norm / (norm + 1e-6)) (a NaN or infinite
 * norm makes the gradients NaN or leaves them, as PyTorch's clamp does). max_norm >= 0.
 * total_norm: NULL (not wanted), or as the output convention of nn.h (a 0-d tensor of the
 * gradients' dtype; with n == 0 it holds 0). total_norm_host: NULL, or receives the norm
 * (this waits for the device). The whole computation stays on the device: no read back
 * unless total_norm_host is given.
 */
KILN_API kiln_status kiln_clip_grad_norm(kiln_context *ctx, size_t n, kiln_tensor *const *grads,
                                         double max_norm, kiln_tensor **total_norm,
                                         double *total_norm_host);

#ifdef __cplusplus
}
#endif
#endif
