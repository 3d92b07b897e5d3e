/*
 * Scaled dot-product attention (one flash-style kernel forward, FlashAttention-2 style
 * recomputation backward; on CPU devices in f32 and f64 both as GEMMs around a row kernel)
 * and rotary position embedding (docs/nn.md, "Attention" and "CPU devices").
 *
 * dtypes: f32 and f64 (f64 needs fp64: KILN_ERR_UNSUPPORTED), f16 and bf16 (stored in 2
 * bytes, computed in f32, each output rounded once; attention and RoPE alike). Every
 * floating tensor of a call has q's dtype, except attention's lse, which is f32 for f16 and
 * bf16 (as PyTorch's and FlashAttention's log-sum-exp: the backward pass recomputes the
 * probabilities from it). Output convention and aliasing as in kiln/nn.h: if *out is NULL kiln
 * creates the result, else it must have the result's shape and dtype; several wanted outputs
 * must not share bytes with each other.
 *
 * Statuses common to every function here:
 *   KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (a NULL required pointer, a
 *   bad scale, outputs sharing bytes); KILN_ERR_CONTEXT_MISMATCH; KILN_ERR_DTYPE (not a
 *   dtype listed above, or dtypes differ); KILN_ERR_SHAPE (shapes that do not match as documented);
 *   KILN_ERR_UNSUPPORTED (f64 without fp64; a head dimension above 128; a device whose
 *   work-groups or local memory are too small for every kernel tile: the backward needs 128
 *   items in f32, 64 in f64); KILN_ERR_BUILD;
 *   KILN_ERR_OPENCL; KILN_ERR_DEVICE_MEMORY; KILN_ERR_HOST_MEMORY; KILN_ERR_OVERFLOW (more
 *   than 2^31 - 1 work-groups).
 */
#ifndef KILN_NN_ATTENTION_H
#define KILN_NN_ATTENTION_H

#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * out = softmax(q k^T scale + mask) v over the last two axes, batched over the leading axes
 * (the same leading shape for q, k and v; ndim >= 2):
 *   q [..., Sq, D], k [..., Sk, D], v [..., Sk, Dv], D and Dv in [1, 128].
 * scale: 0 means 1 / sqrt(D); otherwise finite. causal != 0: query i sees keys j <= i
 * (top-left aligned, PyTorch's is_causal). mask: NULL, or an additive mask of q's dtype,
 * shape [Sq, Sk] (shared by every batch) or [..., Sq, Sk]; -inf hides a key. A query row that
 * sees no key gives NaN (as PyTorch) and lse -inf.
 * *out: [..., Sq, Dv]. lse: NULL (not wanted) or [..., Sq] (f32 for f16/bf16 q): the natural
 * log-sum-exp of each row's scaled, masked scores, which kiln_attention_backward takes. Sq or Sk == 0, or an
 * empty batch, is valid (Sk == 0: every row NaN).
 */
KILN_API kiln_status kiln_attention(kiln_context *ctx, const kiln_tensor *q, const kiln_tensor *k,
                                    const kiln_tensor *v, const kiln_tensor *mask, int causal,
                                    double scale, kiln_tensor **out, kiln_tensor **lse);

/**
 * Gradients of kiln_attention with respect to q, k and v, from grad_out ([..., Sq, Dv]), the
 * forward's arguments, its out and lse. The probabilities are recomputed from lse in tiles
 * (no Sq x Sk temporary). grad_q, grad_k, grad_v: each NULL (not wanted) or as the output
 * convention (q's, k's, v's shapes). The mask gets no gradient. On GPUs (f32, f16, bf16) the
 * default computes grad_q with atomic adds, so its last bits may differ run to run (grad_k
 * and grad_v do not); the `attention` tuner override "bwd=2" is deterministic (docs/nn.md).
 */
KILN_API kiln_status kiln_attention_backward(kiln_context *ctx, const kiln_tensor *grad_out,
                                             const kiln_tensor *q, const kiln_tensor *k,
                                             const kiln_tensor *v, const kiln_tensor *mask,
                                             int causal, double scale, const kiln_tensor *out,
                                             const kiln_tensor *lse, kiln_tensor **grad_q,
                                             kiln_tensor **grad_k, kiln_tensor **grad_v);

/** Rotary embedding layouts. */
typedef enum kiln_rope_layout {
  KILN_ROPE_INTERLEAVED = 0, /**< pairs (2i, 2i + 1) (GPT-J, the original RoFormer) */
  KILN_ROPE_HALF = 1,        /**< pairs (i, i + R/2) (GPT-NeoX, Llama's rotate_half) */
} kiln_rope_layout;

/**
 * Rotary position embedding of x [..., S, D] (ndim >= 2; the position of a row is its index
 * along axis -2): with R = 2 cos.shape[1] <= D and pair (a, b) of feature index i < R/2
 * (layout), y_a = x_a cos[s, i] - x_b sin[s, i], y_b = x_b cos[s, i] + x_a sin[s, i];
 * features R.. D - 1 are copied (partial rotary). cos_table, sin_table: [S, R/2], x's dtype (the
 * caller builds them: cos(s theta_i), sin(s theta_i)). *out: x's shape (may be x).
 */
KILN_API kiln_status kiln_rope(kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *cos_table,
                               const kiln_tensor *sin_table, kiln_rope_layout layout,
                               kiln_tensor **out);

/** Gradient of kiln_rope: the rotation by -theta of grad (x's shape). */
KILN_API kiln_status kiln_rope_backward(kiln_context *ctx, const kiln_tensor *grad,
                                        const kiln_tensor *cos, const kiln_tensor *sin,
                                        kiln_rope_layout layout, kiln_tensor **grad_in);

#ifdef __cplusplus
}
#endif
#endif
