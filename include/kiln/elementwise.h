/*
 * Elementwise operations: unary math, binary math with NumPy broadcasting,
 * scalar forms, where, clamp and casts.
 *
 * Output convention for every operation here: if *out is NULL, kiln creates
 * the result tensor and stores it in *out (the caller releases it). If *out
 * is a tensor, it must already have the result's shape and dtype and belong
 * to the same context; kiln writes into it. *out may be one of the inputs
 * when it has the result's shape and dtype (in-place update), or share
 * bytes with one in any other way (an output one element after its input):
 * kiln then computes into a temporary and copies, so the result is as if
 * the inputs had been read first (docs/ops.md, "Aliasing", for every
 * family). kiln_copy onto the same bytes does nothing; onto partly
 * overlapping bytes it copies through a temporary.
 *
 * Statuses common to every operation here:
 *   KILN_OK; KILN_ERR_INVALID_HANDLE (NULL, released or foreign ctx/tensor);
 *   KILN_ERR_INVALID_ARGUMENT (NULL out, op outside the enum);
 *   KILN_ERR_CONTEXT_MISMATCH (a tensor of another context);
 *   KILN_ERR_DTYPE (dtype the op does not accept, mixed input dtypes, or a
 *   given *out of the wrong dtype); KILN_ERR_SHAPE (not broadcastable, or a
 *   given *out of the wrong shape); KILN_ERR_BUILD (kernel failed to compile;
 *   the log is in the message); KILN_ERR_OPENCL; KILN_ERR_DEVICE_MEMORY;
 *   KILN_ERR_HOST_MEMORY.
 * Inputs of binary operations must have the same dtype: kiln_dtype_promote()
 * gives the common one, kiln_cast() converts to it.
 *
 * f16 and bf16 (every op of a class that names them): storage types.
 * Elements are loaded into f32, computed in f32 and stored rounded to
 * nearest even (overflow gives inf, NaN stays NaN); scalars and clamp bounds
 * are rounded to the tensor's dtype first. add, sub, mul, div, sqrt come out
 * correctly rounded (docs/ops.md, "f16 and bf16").
 * Complex dtypes: only the ops listed in KILN_COMPLEX_UNARY_OPS and
 * KILN_COMPLEX_BINARY_OPS (others: KILN_ERR_DTYPE); a kiln_scalar operand is
 * the complex number s + 0i (docs/ops.md, "Complex numbers").
 */
#ifndef KILN_ELEMENTWISE_H
#define KILN_ELEMENTWISE_H

#include "kiln/op_table.h"
#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Unary ops, one per row of KILN_UNARY_OPS (include/kiln/op_table.h). */
typedef enum kiln_unary_op {
#define KILN_X_(E, n, d, r, expr) KILN_OP_##E,
  KILN_UNARY_OPS(KILN_X_)
#undef KILN_X_
  KILN_UNARY_OP_COUNT
} kiln_unary_op;

/** Binary ops, one per row of KILN_BINARY_OPS. */
typedef enum kiln_binary_op {
#define KILN_X_(E, n, d, r, expr) KILN_OP_##E,
  KILN_BINARY_OPS(KILN_X_)
#undef KILN_X_
  KILN_BINARY_OP_COUNT
} kiln_binary_op;

/** Lower-case name of an op ("exp", "add"); "?" outside the enum. */
KILN_API const char *kiln_unary_op_name(kiln_unary_op op);
KILN_API const char *kiln_binary_op_name(kiln_binary_op op);

/** Nonzero if the op accepts inputs of this dtype (the op table's class, f16 and bf16 included). */
KILN_API int kiln_unary_op_supports(kiln_unary_op op, kiln_dtype dtype);
KILN_API int kiln_binary_op_supports(kiln_binary_op op, kiln_dtype dtype);

/**
 * y = op(x). Result dtype: x's, or bool for predicates; for complex x (c64,
 * c128), real, imag, abs and angle give the part type (f32, f64). Complex
 * tensors accept the ops of KILN_COMPLEX_UNARY_OPS (include/kiln/complex.h).
 */
KILN_API kiln_status kiln_unary(kiln_context *ctx, kiln_unary_op op, const kiln_tensor *x,
                                kiln_tensor **out);

/** c = op(a, b) with NumPy broadcasting. Result dtype: the inputs', or bool for comparisons and logical ops. */
KILN_API kiln_status kiln_binary(kiln_context *ctx, kiln_binary_op op, const kiln_tensor *a,
                                 const kiln_tensor *b, kiln_tensor **out);

/**
 * c = op(x, s) (scalar_first == 0) or c = op(s, x) (scalar_first != 0),
 * where s is converted to x's dtype by kiln_cast() rules (for f16 and bf16:
 * rounded once to the 16-bit type, then used as its exact f32 value). No
 * tensor is made for s.
 */
KILN_API kiln_status kiln_binary_scalar(kiln_context *ctx, kiln_binary_op op,
                                        const kiln_tensor *x, kiln_scalar s, int scalar_first,
                                        kiln_tensor **out);

/**
 * out = cond ? a : b, elementwise with broadcasting of all three. cond may be
 * any dtype kiln_cast() converts to bool (nonzero is true; bool and u8 are
 * read directly); a and b must share a dtype, which is the result's. f16 and
 * bf16 values are copied bit for bit.
 */
KILN_API kiln_status kiln_where(kiln_context *ctx, const kiln_tensor *cond, const kiln_tensor *a,
                                const kiln_tensor *b, kiln_tensor **out);

/**
 * out = min(max(x, lo), hi) with lo and hi converted to x's dtype. NaN in x
 * stays NaN. Accepts NUM dtypes (f16 and bf16 included: the bounds are
 * rounded to them). lo > hi gives hi everywhere (NumPy clip). Bool and complex
 * x: KILN_ERR_DTYPE.
 */
KILN_API kiln_status kiln_clamp(kiln_context *ctx, const kiln_tensor *x, kiln_scalar lo,
                                kiln_scalar hi, kiln_tensor **out);

/**
 * Converts x to dtype; any of the ten dtypes to any other (docs/ops.md, "Cast
 * rules"). Rules: float to integer truncates toward zero and saturates at the
 * target's range, NaN becomes 0; integer to narrower integer wraps (keeps the
 * low bits); anything to bool is (x != 0), NaN and complex numbers with any
 * nonzero part included; to f32, f64, f16 or bf16 rounds to nearest even
 * once, from any source (f64 to f16 does not go through f32); f16 and bf16 to
 * wider floats are exact. Complex to a real dtype keeps the real part and
 * drops the imaginary one (NumPy does the same with a ComplexWarning; kiln
 * does not warn); real to complex sets the imaginary part to +0; c64 <-> c128
 * converts both parts. Casting to x's own dtype copies. To find the dtype two
 * tensors have in common before a binary op, see kiln_dtype_promote().
 * Besides the common statuses: KILN_ERR_INVALID_ARGUMENT (dtype outside the
 * enum); KILN_ERR_UNSUPPORTED (x or dtype is f64 or c128 and the device lacks
 * fp64).
 */
KILN_API kiln_status kiln_cast(kiln_context *ctx, const kiln_tensor *x, kiln_dtype dtype,
                               kiln_tensor **out);

/**
 * Copies src into dst (same shape and dtype, may be in different pooled
 * buffers). Enqueued, not blocking.
 */
KILN_API kiln_status kiln_copy(kiln_context *ctx, const kiln_tensor *src, kiln_tensor *dst);

#ifdef __cplusplus
}
#endif
#endif
