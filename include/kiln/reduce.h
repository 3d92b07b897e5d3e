/*
 * Reductions (scans and differences: kiln/scan.h, included at the end).
 *
 * Reductions fold a tensor over a set of axes (sum, prod, mean, var, std,
 * min, max, argmin, argmax, any, all, count_nonzero, norm, logsumexp,
 * median). The op lists (scans' too) are the tables in
 * include/kiln/reduce_table.h; docs/reductions.md has the full semantics,
 * the error bounds and the kernel strategies.
 *
 * f16 and bf16 compute in f32 and round the result once (sum of f16 is
 * f16, as in PyTorch); c64 and c128 take sum, prod, mean and norm (of |z|,
 * giving the real part's dtype) and nothing that needs an order
 * (KILN_ERR_DTYPE). KILN_REDUCE_COMPLEX_OPS lists them; docs/reductions.md
 * has every result dtype.
 *
 * Axes are int64_t and may be negative (Python style: -1 is the last axis).
 * A list of axes must not name an axis twice.
 *
 * Output convention (every function here): if *out is NULL, kiln creates the
 * result tensor and stores it in *out (the caller releases it). If *out is a
 * tensor, it must already have the result's shape and dtype and belong to
 * the same context; kiln writes into it. An output may be (scans: *out ==
 * x when the result dtype equals x's) or share bytes with x: kiln then
 * computes into a temporary and copies. The two outputs of
 * kiln_argreduce and kiln_scan_indexed must not share bytes with each
 * other (KILN_ERR_INVALID_ARGUMENT, nothing written). docs/ops.md,
 * "Aliasing".
 *
 * Statuses common to every function here:
 *   KILN_OK; KILN_ERR_INVALID_HANDLE (NULL, released or foreign ctx/tensor);
 *   KILN_ERR_INVALID_ARGUMENT (NULL out, op outside the enum or not accepted
 *   by this function, NULL axes with naxes > 0, bad option values);
 *   KILN_ERR_CONTEXT_MISMATCH (a tensor of another context); KILN_ERR_DTYPE
 *   (dtype the op does not accept, or a given *out of the wrong dtype);
 *   KILN_ERR_SHAPE (axis out of range, an axis named twice, a given *out of
 *   the wrong shape, or an empty reduction of an op without an empty value);
 *   KILN_ERR_UNSUPPORTED (accumulate_f64 on a device without fp64);
 *   KILN_ERR_BUILD (kernel failed to compile; the log is in the message);
 *   KILN_ERR_OPENCL; KILN_ERR_DEVICE_MEMORY; KILN_ERR_HOST_MEMORY;
 *   KILN_ERR_OVERFLOW (a temporary buffer exceeds the device's largest
 *   allocation).
 * On failure a result kiln allocated is released and *out is left NULL; a
 * tensor the caller passed in *out may have been partly written.
 */
#ifndef KILN_REDUCE_H
#define KILN_REDUCE_H

#include "kiln/reduce_table.h"
#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Reduction ops, one per row of KILN_REDUCE_OPS. */
typedef enum kiln_reduce_op {
#define KILN_X_(E, n, d, r, e) KILN_REDUCE_##E,
  KILN_REDUCE_OPS(KILN_X_)
#undef KILN_X_
  KILN_REDUCE_OP_COUNT
} kiln_reduce_op;

/** What happens to NaN elements of floating-point inputs (integers have none). */
typedef enum kiln_nan_policy {
  /** NaN in, NaN out (NumPy sum, max, argmax ...): min/max/argmin/argmax pick the first NaN. */
  KILN_NAN_PROPAGATE = 0,
  /**
   * NaN elements are dropped before the op is applied (NumPy nansum, nanmax,
   * nanargmax ...). A slice left with no element gives the op's empty value:
   * 0 for sum, 1 for prod, NaN for mean/var/std/median/min/max, -1 for
   * argmin/argmax, false for any, true for all, -inf for logsumexp.
   */
  KILN_NAN_OMIT = 1,
} kiln_nan_policy;

/** Order of KILN_REDUCE_NORM (vector norms of the reduced elements, as numpy.linalg.norm). */
typedef enum kiln_norm_ord {
  KILN_NORM_L2 = 0,  /**< sqrt(sum |x|^2), scaled so it neither overflows nor underflows */
  KILN_NORM_L1,      /**< sum |x| */
  KILN_NORM_LINF,    /**< max |x| */
  KILN_NORM_NEG_INF, /**< min |x| */
  KILN_NORM_L0,      /**< number of nonzero elements (as a float) */
  KILN_NORM_P,       /**< (sum |x|^p)^(1/p) for norm_p > 0, scaled like L2 */
} kiln_norm_ord;

/**
 * Per-call options of kiln_reduce() and kiln_argreduce(). A zero-initialised
 * struct (or passing NULL) means the defaults: NaN propagate, ddof 0, L2
 * norm, accumulation in the input's precision.
 */
typedef struct kiln_reduce_options {
  kiln_nan_policy nan_policy;
  /** var/std divide by (n - ddof), n the number of elements (after NaN omission). >= 0. */
  double ddof;
  kiln_norm_ord norm_ord;
  /** Exponent of KILN_NORM_P: finite and > 0. Ignored for other orders. */
  double norm_p;
  /**
   * Nonzero: f32 inputs of sum, prod, mean, var, std, norm and logsumexp
   * accumulate in f64 (the result stays f32). Needs fp64
   * (KILN_ERR_UNSUPPORTED otherwise); no effect on other dtypes and ops.
   */
  int accumulate_f64;
} kiln_reduce_options;

/** Lower-case name of an op ("sum"); "?" outside the enum. */
KILN_API const char *kiln_reduce_op_name(kiln_reduce_op op);

/** Nonzero if the op accepts inputs of this dtype. */
KILN_API int kiln_reduce_op_supports(kiln_reduce_op op, kiln_dtype dtype);

/**
 * Dtype of the result of op on an input of dtype `in` on ctx's device (which
 * decides f64 or f32 for the REAL rule), for callers that allocate *out.
 * For kiln_argreduce the indices are always i64 and the values keep the
 * input's dtype.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE (ctx); KILN_ERR_INVALID_ARGUMENT
 *         (NULL out, op or dtype outside the enum); KILN_ERR_DTYPE (the op
 *         does not accept `in`).
 */
KILN_API kiln_status kiln_reduce_result_dtype(const kiln_context *ctx, kiln_reduce_op op,
                                              kiln_dtype in, kiln_dtype *out);

/**
 * out = op(x) over the given axes.
 *
 * @param axes   the axes to reduce, naxes of them; axes == NULL with naxes
 *               == 0 reduces over all axes; a non-NULL axes with naxes == 0
 *               reduces over no axis (every output element is the op of one
 *               element: sum(x) is x converted to the result dtype, var 0).
 * @param keepdims nonzero: reduced axes stay in the result with size 1;
 *               zero: they are removed (reducing everything gives a 0-d tensor).
 * @param opts   NULL or options (NaN policy, ddof, norm order, f64 accumulation).
 * @param out    result; dtype from the table's result column
 *               (kiln_reduce_result_dtype()).
 *
 * Every op of KILN_REDUCE_OPS is accepted. ARGMIN/ARGMAX give the position
 * of the first minimum/maximum as an i64 index into the reduced elements in
 * row-major order of the reduced axes (for one axis, the index along it;
 * for all axes, the flat index). An empty reduction (a reduced axis of size
 * 0) of MIN, MAX, ARGMIN or ARGMAX is KILN_ERR_SHAPE; the other ops give
 * their empty value. Statuses: the common ones above.
 */
KILN_API kiln_status kiln_reduce(kiln_context *ctx, kiln_reduce_op op, const kiln_tensor *x,
                                 const int64_t *axes, size_t naxes, int keepdims,
                                 const kiln_reduce_options *opts, kiln_tensor **out);

/**
 * Minimum or maximum together with its position: op is KILN_REDUCE_ARGMIN
 * or KILN_REDUCE_ARGMAX (MATLAB's [m, i] = max(x, [], dim), torch.max(x,
 * dim)). Axes, keepdims and options as in kiln_reduce().
 *
 * @param values  NULL when the values are not wanted; else *values follows
 *                the output convention with x's dtype and the reduced shape.
 * @param indices i64 indices (first occurrence; -1 for a slice that NaN
 *                omission left empty, whose value is NaN); output convention.
 * Statuses: the common ones; KILN_ERR_INVALID_ARGUMENT also for another op
 * or NULL indices. On failure both results kiln allocated are released.
 */
KILN_API kiln_status kiln_argreduce(kiln_context *ctx, kiln_reduce_op op, const kiln_tensor *x,
                                    const int64_t *axes, size_t naxes, int keepdims,
                                    const kiln_reduce_options *opts, kiln_tensor **values,
                                    kiln_tensor **indices);

#ifdef __cplusplus
}
#endif

/* Scans share kiln_nan_policy and the statuses above; included here so that code written
 * when they were declared in this header keeps compiling. */
#include "kiln/scan.h"

#endif
