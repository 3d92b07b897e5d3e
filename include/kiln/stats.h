/*
 * Statistics: histograms (1-D with a range or explicit edges, 2-D), bincount, quantiles and
 * percentiles (with NaN-ignoring forms), covariance and correlation coefficients. NumPy's
 * semantics unless a function says otherwise; docs/stats.md has the details, the algorithms
 * and the differences.
 *
 * Dtypes. Quantiles, cov and corrcoef take f32 and f64 inputs (f64 needs a device with
 * fp64: KILN_ERR_UNSUPPORTED otherwise) and compute in the input's precision. Histograms
 * take f32 and f64 (weights, edges of the same dtype) and i32, i64, u8 and bool, whose values
 * are converted to the value type: the weights' dtype (f32 or f64) when given, else the
 * edges' dtype, else f64 (f32 on devices without fp64). bincount takes i32, i64, u8 and
 * bool. Histogram counts are i64; with weights the result has the weights' dtype.
 *
 * Output convention (every function here): if *out is NULL, kiln creates the result and
 * stores it in *out (the caller releases it). If *out is a tensor it must have the result's
 * shape and dtype and belong to the context; kiln writes into it (an *out sharing bytes
 * with an input is computed into a temporary and copied; docs/ops.md, "Aliasing"). On
 * failure a result kiln allocated is released and *out left NULL; a given *out may have
 * been partly written.
 *
 * Statuses common to every function here:
 *   KILN_OK; KILN_ERR_INVALID_HANDLE (NULL, released or foreign ctx or tensor);
 *   KILN_ERR_INVALID_ARGUMENT (NULL out, an option outside its enum, the bad argument
 *   values each function lists); KILN_ERR_CONTEXT_MISMATCH; KILN_ERR_DTYPE (a dtype the
 *   function does not take, or a given *out of the wrong dtype); KILN_ERR_SHAPE (shapes
 *   that do not match, a given *out of the wrong shape); KILN_ERR_UNSUPPORTED (f64 on a
 *   device without fp64; f64 weights of histograms and bincount need the device's
 *   cl_khr_int64_base_atomics); KILN_ERR_BUILD; KILN_ERR_OPENCL; KILN_ERR_DEVICE_MEMORY;
 *   KILN_ERR_HOST_MEMORY; KILN_ERR_OVERFLOW (a temporary or result exceeds the device's
 *   largest allocation); and for cov/corrcoef the statuses of kiln_syrk.
 * Functions that must look at the data before they can size or check their work (a default
 * histogram range, bincount's length and its negative values, cov's weights) read a few
 * values back and so wait for the queue; the others only enqueue.
 */
#ifndef KILN_STATS_H
#define KILN_STATS_H

#include "kiln/reduce.h"
#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Which kernel strategy a call uses (the default picks; the others are for tests and tuning). */
typedef enum kiln_stats_path {
  /**
   * The default: histograms and quantiles on GPUs take the work-group-local strategy when it
   * fits, else the global one; quantiles on other devices take KILN_STATS_SERIAL.
   */
  KILN_STATS_AUTO = 0,
  /**
   * Histograms: one private histogram per work-group in local memory, merged after
   * (needs the bins to fit in local memory: KILN_ERR_INVALID_ARGUMENT otherwise).
   * Quantiles: one work-group sorts each row in local memory (rows of at most
   * kiln_quantile_local_max() elements: KILN_ERR_INVALID_ARGUMENT otherwise).
   */
  KILN_STATS_LOCAL = 1,
  /**
   * Histograms: atomics on one histogram in global memory. Quantiles: a global sort of
   * (row, value) pairs, then a pick per row and q.
   */
  KILN_STATS_GLOBAL = 2,
  /**
   * Quantiles only: one work-item per slice selects the needed order statistics
   * (quickselect, expected O(n) per q) in a copy of the slice; the default on CPU devices.
   * Histograms refuse it (KILN_ERR_INVALID_ARGUMENT).
   */
  KILN_STATS_SERIAL = 3,
} kiln_stats_path;

/** Options of the histogram functions; NULL or zero-initialised means the defaults. */
typedef struct kiln_histogram_options {
  kiln_stats_path path;
} kiln_histogram_options;

/**
 * Histogram of x (any shape, flattened) into `bins` equal bins (numpy.histogram with an
 * integer bins; torch.histc with NumPy's edge rules).
 *
 * @param bins   number of bins, >= 1.
 * @param range  NULL: [min(x), max(x)] over the non-NaN elements ((0, 1) when there are
 *               none); else {lo, hi}, finite, lo <= hi. Either way, lo == hi widens the
 *               range to [lo - 0.5, hi + 0.5] (NumPy).
 * @param weights NULL, or a tensor of x's dtype (any float dtype for integer x) and number
 *               of elements: each element adds its weight to its bin instead of 1 (the
 *               result then has the weights' dtype).
 * @param range_used NULL, or receives the range the bins span {lo, hi} (after widening).
 * @param out    [bins], i64 counts (or the weights' dtype).
 *
 * Bin i is [lo + i w, lo + (i + 1) w) with w = (hi - lo) / bins, the last bin [.., hi]
 * closed; the index is computed as NumPy computes it, in x's precision. Elements outside
 * [lo, hi] and NaN elements fall in no bin (NumPy refuses NaN with a default range).
 * @return the common statuses; KILN_ERR_INVALID_ARGUMENT for bins == 0, a range that is
 *         not finite or has lo > hi, or a default range with infinite data.
 */
KILN_API kiln_status kiln_histogram(kiln_context *ctx, const kiln_tensor *x, uint64_t bins,
                                    const double *range, const kiln_tensor *weights,
                                    const kiln_histogram_options *opts, double *range_used,
                                    kiln_tensor **out);

/**
 * Histogram of x into the bins of explicit edges (numpy.histogram with an array of bins):
 * edges is 1-D of x's dtype (f32 or f64 for integer x; the weights then have the edges'
 * dtype) with at least 2 elements, non-decreasing; bin i is
 * [edges[i], edges[i + 1]) and the last one [edges[n-1], edges[n]] is closed. Each
 * element's bin is found by a binary search of the edges on the device.
 * @param out [numel(edges) - 1], i64 counts (or the weights' dtype).
 * @return the common statuses; KILN_ERR_SHAPE for edges not 1-D or shorter than 2;
 *         KILN_ERR_INVALID_ARGUMENT for decreasing or NaN edges (the edges are read back).
 */
KILN_API kiln_status kiln_histogram_edges(kiln_context *ctx, const kiln_tensor *x,
                                          const kiln_tensor *edges, const kiln_tensor *weights,
                                          const kiln_histogram_options *opts, kiln_tensor **out);

/**
 * 2-D histogram of the points (x[i], y[i]) (numpy.histogram2d with integer bins):
 * x and y of one dtype (as kiln_histogram's x) and the same number of elements.
 * @param range NULL (each dimension's [min, max] of its non-NaN values) or
 *              {xlo, xhi, ylo, yhi}; each dimension widened as kiln_histogram's.
 * @param range_used NULL or receives the four bounds used.
 * @param out  [bins_x, bins_y]; a point counts when both coordinates fall in a bin.
 * @return as kiln_histogram; KILN_ERR_SHAPE when x and y differ in size.
 */
KILN_API kiln_status kiln_histogram2d(kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *y,
                                      uint64_t bins_x, uint64_t bins_y, const double *range,
                                      const kiln_tensor *weights,
                                      const kiln_histogram_options *opts, double *range_used,
                                      kiln_tensor **out);

/**
 * Occurrences of each non-negative integer in x (numpy.bincount; any shape, flattened).
 * @param weights NULL, or f32/f64 with x's number of elements: sums of weights instead of
 *                counts (the result has the weights' dtype; NumPy always gives f64).
 * @param minlength the result has max(max(x) + 1, minlength) elements (minlength for an
 *                empty x).
 * @return the common statuses; KILN_ERR_INVALID_ARGUMENT when x holds a negative value
 *         (x is read back: its minimum and maximum size the result).
 */
KILN_API kiln_status kiln_bincount(kiln_context *ctx, const kiln_tensor *x,
                                   const kiln_tensor *weights, uint64_t minlength,
                                   const kiln_histogram_options *opts, kiln_tensor **out);

/** Interpolation of kiln_quantile between the two order statistics around q (n - 1). */
typedef enum kiln_quantile_method {
  KILN_QUANTILE_LINEAR = 0, /**< a[i] + (a[i+1] - a[i]) * frac (NumPy's default) */
  KILN_QUANTILE_LOWER,      /**< a[floor] */
  KILN_QUANTILE_HIGHER,     /**< a[ceil] */
  KILN_QUANTILE_NEAREST,    /**< a[round half to even] */
  KILN_QUANTILE_MIDPOINT,   /**< (a[floor] + a[ceil]) / 2 */
} kiln_quantile_method;

/** Options of kiln_quantile; NULL or zero-initialised: linear, NaN propagates, no keepdims. */
typedef struct kiln_quantile_options {
  kiln_quantile_method method;
  /** KILN_NAN_PROPAGATE: a slice with a NaN gives NaN (numpy.quantile); KILN_NAN_OMIT: NaN
   * elements are dropped first (numpy.nanquantile), an all-NaN slice gives NaN. */
  kiln_nan_policy nan_policy;
  /** Nonzero: the reduced axis (all axes when axis is NULL) stays with size 1. */
  int keepdims;
  kiln_stats_path path;
} kiln_quantile_options;

/**
 * Quantiles of x along one axis or over the whole tensor (numpy.quantile).
 *
 * @param q        nq probabilities in [0, 1] (host memory, read during the call).
 * @param q_vector zero: nq must be 1 and the result has no q dimension (a scalar q);
 *                 nonzero: the result's first dimension is nq (a 1-D q; nq may be 0).
 * @param axis     NULL: over all elements; else the axis (negative counts from the end).
 * @param out      x's dtype; shape [nq] (q_vector) + x's shape without the axis (with it as
 *                 1 under keepdims). A slice of length 0 gives NaN (NumPy raises).
 * @return the common statuses; KILN_ERR_INVALID_ARGUMENT for NULL q with nq > 0, a scalar q
 *         with nq != 1, q outside [0, 1] or NaN, a method or NaN policy outside its enum,
 *         an axis out of range, or KILN_STATS_LOCAL for a slice longer than
 *         kiln_quantile_local_max(); KILN_ERR_SHAPE when the result would have more than
 *         KILN_MAX_DIMS dimensions.
 */
KILN_API kiln_status kiln_quantile(kiln_context *ctx, const kiln_tensor *x, const double *q,
                                   size_t nq, int q_vector, const int64_t *axis,
                                   const kiln_quantile_options *opts, kiln_tensor **out);

/** kiln_quantile with q given in percent, in [0, 100] (numpy.percentile, nanpercentile). */
KILN_API kiln_status kiln_percentile(kiln_context *ctx, const kiln_tensor *x, const double *p,
                                     size_t np, int q_vector, const int64_t *axis,
                                     const kiln_quantile_options *opts, kiln_tensor **out);

/**
 * Longest slice kiln_quantile sorts within one work-group on ctx's device of dtype (its
 * keys live in local memory); longer slices take the global sort. 0 for a bad handle.
 */
KILN_API uint64_t kiln_quantile_local_max(const kiln_context *ctx, kiln_dtype dtype);

/**
 * Covariance matrix (numpy.cov): x is 1-D (one variable) or 2-D, rows are variables and
 * columns observations (rowvar nonzero, NumPy's default) or the reverse (rowvar zero).
 * The centred data (weighted means, on the device) go through kiln_syrk.
 *
 * @param ddof     the divisor is N - ddof (NumPy's default is ddof = 1; bias=True is 0); with
 *                 weights v1 - ddof (fweights only) or v1 - ddof * sum(w a) / v1
 *                 (aweights), v1 = sum(w), w = fweights * aweights. A divisor <= 0 is taken
 *                 as 0, as NumPy (results inf or NaN).
 * @param fweights NULL or 1-D of x's dtype, one per observation: integer frequencies >= 0.
 * @param aweights NULL or 1-D of x's dtype, one per observation: weights >= 0.
 * @param out      [nvars, nvars] of x's dtype; a single variable gives a 0-d result (NumPy
 *                 squeezes).
 * @return the common statuses; KILN_ERR_SHAPE for x not 1-D or 2-D or weights of the wrong
 *         length; KILN_ERR_INVALID_ARGUMENT for negative, non-finite or (fweights)
 *         non-integer weights, or weights that sum to zero (the weights are checked on the
 *         device and the result read back).
 */
KILN_API kiln_status kiln_cov(kiln_context *ctx, const kiln_tensor *x, int rowvar, int64_t ddof,
                              const kiln_tensor *fweights, const kiln_tensor *aweights,
                              kiln_tensor **out);

/**
 * Pearson correlation coefficients (numpy.corrcoef): cov(x) / sqrt(d_i d_j), d its diagonal,
 * clipped to [-1, 1]. A constant variable gives NaN in its row and column (NumPy, without
 * the warning); a single variable gives 1 (or NaN) as a 0-d result.
 * @return the statuses of kiln_cov.
 */
KILN_API kiln_status kiln_corrcoef(kiln_context *ctx, const kiln_tensor *x, int rowvar,
                                   kiln_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
