/*
 * The neural-network op tables: the single source of truth for the activation and pointwise
 * loss enums, their names, and the OpenCL C expressions cl_kernels/nn_act.cl stamps into one
 * forward and one backward kernel per row. Rows accept the FLOAT class (f32, f64 today; the
 * kernels load and store through KILN_LOAD/KILN_STORE, so f16/bf16 is a source-mask change).
 *
 * KILN_ACTIVATIONS: X(ENUM, name, backward operand, forward(x), backward(g, v))
 *   In the expressions x is the input, p0 and p1 the op's two scalars (kiln_activation's
 *   params: unused ones are ignored), g the incoming gradient and v the backward operand:
 *   IN = the forward input x, OUT = the forward output y, as PyTorch's backward formulas
 *   take them (threshold_backward, sigmoid_backward and tanh_backward take the result).
 *   Helpers (nn_act.cl): a_sigmoid, a_softplus (log(1 + e^x) without overflow),
 *   a_gelu, a_gelu_d, a_gelu_tanh, a_gelu_tanh_d, a_mish_d, SELU_ALPHA, SELU_SCALE.
 *
 * KILN_POINT_LOSSES: X(ENUM, name, loss(x, y), d loss / d x (x, y))
 *   x is the input, y the target, p0 the op's scalar (smooth_l1's beta, huber's delta) and
 *   w the pos_weight element of bce_with_logits (1 without one).
 */
#ifndef KILN_NN_TABLE_H
#define KILN_NN_TABLE_H

#define KILN_ACTIVATIONS(X)                                                                   \
  X(RELU, relu, OUT, (x < (T)0 ? (T)0 : x), (v > (T)0 ? g : (T)0))                            \
  X(LEAKY_RELU, leaky_relu, IN, (x > (T)0 ? x : x * p0), (v > (T)0 ? g : g * p0))             \
  X(ELU, elu, IN, (x > (T)0 ? x : p0 * expm1(x)), (v > (T)0 ? g : g * p0 * exp(v)))           \
  X(SELU, selu, IN, (SELU_SCALE * (x > (T)0 ? x : SELU_ALPHA * expm1(x))),                    \
    (v > (T)0 ? g * SELU_SCALE : g * SELU_SCALE * SELU_ALPHA * exp(v)))                       \
  X(CELU, celu, IN, (x > (T)0 ? x : p0 * expm1(x / p0)), (v > (T)0 ? g : g * exp(v / p0)))    \
  X(GELU, gelu, IN, a_gelu(x), (g * a_gelu_d(v)))                                             \
  X(GELU_TANH, gelu_tanh, IN, a_gelu_tanh(x), (g * a_gelu_tanh_d(v)))                         \
  X(SILU, silu, IN, (x * a_sigmoid(x)), (g * a_silu_d(v)))                                    \
  X(MISH, mish, IN, (x * tanh(a_softplus(x))), (g * a_mish_d(v)))                             \
  X(SIGMOID, sigmoid, OUT, a_sigmoid(x), (g * v * ((T)1 - v)))                                \
  X(TANH, tanh, OUT, tanh(x), (g * ((T)1 - v * v)))                                           \
  X(SOFTPLUS, softplus, IN, (x * p0 > p1 ? x : a_softplus(x * p0) / p0),                      \
    (v * p0 > p1 ? g : g * a_sigmoid(v * p0)))                                                \
  X(HARDSIGMOID, hardsigmoid, IN, (clamp(x / (T)6 + (T)0.5, (T)0, (T)1)),                     \
    ((v > (T)-3 && v < (T)3) ? g / (T)6 : (T)0))                                              \
  X(HARDSWISH, hardswish, IN, (x * clamp(x + (T)3, (T)0, (T)6) / (T)6),                       \
    (v < (T)-3 ? (T)0 : v <= (T)3 ? g * (v / (T)3 + (T)0.5) : g))                             \
  X(HARDTANH, hardtanh, IN, (x < p0 ? p0 : x > p1 ? p1 : x),                                  \
    ((v <= p0 || v >= p1) ? (T)0 : g))

#define KILN_POINT_LOSSES(X)                                                                  \
  X(MSE, mse, ((x - y) * (x - y)), ((T)2 * (x - y)))                                          \
  X(L1, l1, fabs(x - y), l_sign(x - y))                                                       \
  X(SMOOTH_L1, smooth_l1, l_smooth_l1(x - y, p0), l_smooth_l1_d(x - y, p0))                   \
  X(HUBER, huber, l_huber(x - y, p0), l_huber_d(x - y, p0))                                   \
  X(BCE, bce, l_bce(x, y), ((x - y) / fmax(((T)1 - x) * x, (T)1e-12)))                        \
  X(BCE_WITH_LOGITS, bce_with_logits,                                                         \
    (((T)1 - y) * x + ((T)1 + (w - (T)1) * y) * (log1p(exp(-fabs(x))) + fmax(-x, (T)0))),   \
    (a_sigmoid(x) * (w * y + (T)1 - y) - w * y))                                              \
  X(KL_DIV, kl_div, ((y == (T)0 ? (T)0 : y * log(y)) - y * x), (-y))                           \
  X(KL_DIV_LOG_TARGET, kl_div_log_target, (exp(y) * (y - x)), (-exp(y)))

#endif
