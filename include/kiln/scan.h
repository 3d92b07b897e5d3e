/*
 * Scans and differences: running results along one axis (cumsum, cumprod,
 * cummin, cummax, logcumsumexp), inclusive or exclusive, with the position
 * of each running minimum or maximum on request; kiln_diff takes n-th order
 * differences along one axis. The op list is KILN_SCAN_OPS in
 * include/kiln/reduce_table.h; docs/reductions.md has the semantics and the
 * kernel strategies.
 *
 * The axis, output convention, NaN policy (kiln_nan_policy) and the statuses
 * common to every function here are those of include/kiln/reduce.h. A scan
 * may write into its input (*out == x) when the result dtype equals x's.
 * f16 and bf16 scan in f32 and store each result rounded (cumsum of f16 is
 * f16); c64 and c128 take cumsum and cumprod (KILN_SCAN_COMPLEX_OPS) and
 * kiln_diff; cummin, cummax and logcumsumexp of complex are KILN_ERR_DTYPE.
 */
#ifndef KILN_SCAN_H
#define KILN_SCAN_H

#include "kiln/reduce.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Scan ops, one per row of KILN_SCAN_OPS. */
typedef enum kiln_scan_op {
#define KILN_X_(E, n, d, r) KILN_SCAN_##E,
  KILN_SCAN_OPS(KILN_X_)
#undef KILN_X_
  KILN_SCAN_OP_COUNT
} kiln_scan_op;

/** Per-call options of kiln_scan() and kiln_scan_indexed(); zero-initialised (or NULL) = defaults. */
typedef struct kiln_scan_options {
  /**
   * Nonzero: exclusive scan, out[i] = op(x[0..i-1]); out[0] is the op's
   * empty value (0 cumsum, 1 cumprod, -inf logcumsumexp; cummin/cummax: NaN
   * for floats, the dtype's largest/smallest value for integers; index -1).
   * Zero: inclusive, out[i] = op(x[0..i]).
   */
  int exclusive;
  /** KILN_NAN_OMIT: NaN elements are skipped (nancumsum ...); see kiln_nan_policy. */
  kiln_nan_policy nan_policy;
} kiln_scan_options;

/** Lower-case name of an op ("cumsum"); "?" outside the enum. */
KILN_API const char *kiln_scan_op_name(kiln_scan_op op);

/** Nonzero if the op accepts inputs of this dtype. */
KILN_API int kiln_scan_op_supports(kiln_scan_op op, kiln_dtype dtype);

/**
 * Dtype of the result of op on an input of dtype `in` on ctx's device, for
 * callers that allocate *out (kiln_scan_indexed: the values keep the input's
 * dtype, the indices are i64).
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE (ctx); KILN_ERR_INVALID_ARGUMENT
 *         (NULL out, op or dtype outside the enum); KILN_ERR_DTYPE (the op
 *         does not accept `in`).
 */
KILN_API kiln_status kiln_scan_result_dtype(const kiln_context *ctx, kiln_scan_op op,
                                            kiln_dtype in, kiln_dtype *out);

/**
 * out = running op of x along axis; out has x's shape and the dtype of the
 * table's result column (cumsum of i32 is i64, as in NumPy).
 * @param opts NULL or options (exclusive, NaN policy).
 * Statuses: the common ones above.
 */
KILN_API kiln_status kiln_scan(kiln_context *ctx, kiln_scan_op op, const kiln_tensor *x,
                               int64_t axis, const kiln_scan_options *opts, kiln_tensor **out);

/**
 * Running minimum or maximum with the position where it was reached: op is
 * KILN_SCAN_CUMMIN or KILN_SCAN_CUMMAX. indices[i] is the index along axis
 * of the first element equal to values[i] among those scanned (-1 where no
 * element was scanned: exclusive position 0, or an all-NaN prefix under
 * KILN_NAN_OMIT).
 * @param values  NULL when not wanted, else output convention with x's dtype and shape.
 * @param indices i64, x's shape; output convention.
 * Statuses: the common ones; KILN_ERR_INVALID_ARGUMENT also for another op
 * or NULL indices. On failure both results kiln allocated are released.
 */
KILN_API kiln_status kiln_scan_indexed(kiln_context *ctx, kiln_scan_op op, const kiln_tensor *x,
                                       int64_t axis, const kiln_scan_options *opts,
                                       kiln_tensor **values, kiln_tensor **indices);

/**
 * n-th order discrete difference along axis (numpy.diff): out[i] = x[i+1]
 * - x[i], applied n times. The result has x's dtype and x's shape with the
 * axis shortened by n (to 0 when n >= its length); n == 0 copies x. Integer
 * differences wrap; for bool the difference is x[i+1] != x[i].
 * Statuses: the common ones; KILN_ERR_INVALID_ARGUMENT also for n < 0.
 */
KILN_API kiln_status kiln_diff(kiln_context *ctx, const kiln_tensor *x, int64_t axis, int64_t n,
                               kiln_tensor **out);

#ifdef __cplusplus
}
#endif
#endif
