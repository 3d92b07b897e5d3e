/*
 * Sorting, selection, unique, searching and set operations on the device (docs/sort.md has
 * the algorithms, the measured figures and the differences from NumPy, PyTorch and MATLAB).
 *
 * Dtypes: every real dtype (bool, u8, i32, i64, f16, bf16, f32, f64; f64 needs a device
 * with fp64). Complex tensors are refused (KILN_ERR_DTYPE). Index results are i64.
 *
 * Order: ascending by value; every NaN after +inf (NumPy's order), -0.0 and +0.0 equal
 * (whichever comes first in the input comes first: the values are moved, never rebuilt, so
 * -0.0 keeps its sign and a NaN its bits). Every sort here is stable: equal values keep their
 * input order, in descending order too (descending is the reverse of the value order with
 * ties still in input order, so NaNs come first, as torch.sort(descending=True) puts them).
 *
 * Output convention. Fixed-shape results (sort, argsort, topk, kthvalue, sortrows,
 * searchsorted, isin): an output pointer may be NULL where the function says so (that result
 * is not computed); if *p is NULL kiln creates the result and stores it in *p (the caller
 * releases it); if *p is a tensor it must have the result's shape and dtype and belong to the
 * context, and kiln writes into it (one that shares bytes with an input is computed into a
 * temporary and copied; two given outputs must not share bytes). Data-dependent results
 * (unique, unique_consecutive, union, intersect, setdiff, setxor) are always created: *p must
 * be NULL. On failure the results kiln allocated are released and their *p left NULL; a given
 * *p may have been partly written.
 *
 * Sizes: a sort holds fewer than 2^32 elements in all (KILN_ERR_OVERFLOW otherwise).
 *
 * Statuses common to every function here:
 *   KILN_OK; KILN_ERR_INVALID_HANDLE (NULL, released or foreign ctx or tensor);
 *   KILN_ERR_INVALID_ARGUMENT (every output pointer NULL, a given *p where a created result
 *   is required, an axis outside [-ndim, ndim), an option outside its enum, the bad values
 *   each function lists); KILN_ERR_CONTEXT_MISMATCH; KILN_ERR_DTYPE (complex input, inputs
 *   of different dtypes where one is needed, a given output of the wrong dtype);
 *   KILN_ERR_SHAPE (shapes that do not fit, a given output of the wrong shape);
 *   KILN_ERR_UNSUPPORTED (f64 on a device without fp64); KILN_ERR_OVERFLOW (2^32 or more
 *   elements, or a temporary larger than the device's largest allocation); KILN_ERR_BUILD;
 *   KILN_ERR_OPENCL; KILN_ERR_DEVICE_MEMORY; KILN_ERR_HOST_MEMORY.
 * Functions with data-dependent result sizes read a count back and so wait for the queue;
 * the others only enqueue.
 */
#ifndef KILN_SORT_H
#define KILN_SORT_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Which strategy a sort takes (the default picks; the others are for tests and tuning). */
typedef enum kiln_sort_path {
  /** Rows that fit in local memory (kiln_sort_local_max()) take LOCAL, longer ones RADIX. */
  KILN_SORT_AUTO = 0,
  /**
   * One work-group per row sorts (key, position) pairs in local memory (bitonic, ties broken
   * by position). Rows longer than kiln_sort_local_max(): KILN_ERR_INVALID_ARGUMENT.
   */
  KILN_SORT_LOCAL = 1,
  /** LSD radix sort of (key, position) pairs, 8 bits a pass, then passes over the row. */
  KILN_SORT_RADIX = 2,
} kiln_sort_path;

/** Options of kiln_sort and kiln_argsort; NULL or zero-initialised means the defaults. */
typedef struct kiln_sort_options {
  int descending;      /**< nonzero: largest first (still stable) */
  kiln_sort_path path; /**< KILN_SORT_AUTO */
} kiln_sort_options;

/**
 * Longest row of dtype the local path sorts on ctx's device (0 for a bad ctx).
 */
KILN_API uint64_t kiln_sort_local_max(const kiln_context *ctx, kiln_dtype dtype);

/**
 * Sorts x along axis (negative counts from the end), stably.
 * @param values  NULL (not wanted) or the sorted values: x's shape and dtype.
 * @param indices NULL (not wanted) or, i64 of x's shape, the position along axis of each
 *                sorted value in x (numpy.argsort(kind="stable"), torch.sort(stable=True)).
 * @return the common statuses; KILN_ERR_INVALID_ARGUMENT when both values and indices are
 *         NULL, or a LOCAL path for rows longer than kiln_sort_local_max().
 */
KILN_API kiln_status kiln_sort(kiln_context *ctx, const kiln_tensor *x, int64_t axis,
                               const kiln_sort_options *opts, kiln_tensor **values,
                               kiln_tensor **indices);

/** kiln_sort with only the indices (indices must not be NULL). */
KILN_API kiln_status kiln_argsort(kiln_context *ctx, const kiln_tensor *x, int64_t axis,
                                  const kiln_sort_options *opts, kiln_tensor **indices);

/**
 * The k largest (largest != 0) or smallest values along axis and their positions
 * (torch.topk). The result has x's shape with axis of length k. With sorted != 0 they are in
 * order (largest first for largest, else smallest first); sorted == 0 allows any order, and
 * kiln gives the sorted one. Ties go to the earlier position. NaN counts as the largest value.
 * @param values, indices as kiln_sort's (either may be NULL, not both).
 * @return the common statuses; KILN_ERR_INVALID_ARGUMENT for k above the axis length.
 */
KILN_API kiln_status kiln_topk(kiln_context *ctx, const kiln_tensor *x, uint64_t k, int64_t axis,
                               int largest, int sorted, kiln_tensor **values,
                               kiln_tensor **indices);

/**
 * The k-th smallest value (k from 1) along axis and its position (torch.kthvalue; of equal
 * values the earliest position). The result has x's shape without axis (with keepdim, axis
 * of length 1).
 * @return the common statuses; KILN_ERR_INVALID_ARGUMENT for k == 0 or above the axis length.
 */
KILN_API kiln_status kiln_kthvalue(kiln_context *ctx, const kiln_tensor *x, uint64_t k,
                                   int64_t axis, int keepdim, kiln_tensor **values,
                                   kiln_tensor **indices);

/**
 * MATLAB's sortrows: the rows of a 2-D x sorted lexicographically by the given columns (in
 * that order of priority), each ascending or descending; stable, so rows equal in every
 * given column keep their order.
 * @param cols       ncols column numbers from 0; NULL with ncols == 0 means every column,
 *                   left to right.
 * @param descending NULL (all ascending) or ncols flags.
 * @param values     NULL or the sorted rows (x's shape and dtype).
 * @param indices    NULL or, i64 [rows], the row of x each sorted row came from.
 * @return the common statuses; KILN_ERR_SHAPE for x not 2-D; KILN_ERR_INVALID_ARGUMENT for
 *         a column outside [0, columns) or cols NULL with ncols > 0.
 */
KILN_API kiln_status kiln_sortrows(kiln_context *ctx, const kiln_tensor *x, const int64_t *cols,
                                   size_t ncols, const int *descending, kiln_tensor **values,
                                   kiln_tensor **indices);

/**
 * The sorted distinct values of x (numpy.unique): flattened when axis is NULL, or the
 * distinct rows of a 2-D x for *axis == 0 (numpy.unique(axis=0); rows compare element by
 * element). -0.0 equals +0.0 and all NaNs are one value (NumPy's equal_nan=True); the value
 * kept is that of the first occurrence.
 * @param values  [u] (rows: [u, columns]) of x's dtype; must not be NULL.
 * @param first   NULL or i64 [u]: the first position (row) in x of each value.
 * @param inverse NULL or i64 [numel(x)] (rows: [rows]): the index in values of each element.
 * @param counts  NULL or i64 [u]: the occurrences of each value.
 * @return the common statuses; KILN_ERR_INVALID_ARGUMENT for *axis other than 0 or -2 of
 *         a 2-D x (KILN_ERR_SHAPE for a given axis and x not 2-D).
 */
KILN_API kiln_status kiln_unique(kiln_context *ctx, const kiln_tensor *x, const int64_t *axis,
                                 kiln_tensor **values, kiln_tensor **first,
                                 kiln_tensor **inverse, kiln_tensor **counts);

/**
 * Collapses runs of equal consecutive elements of x, flattened (torch.unique_consecutive);
 * the outputs as kiln_unique's (inverse: the run of each element; values and counts in run
 * order).
 */
KILN_API kiln_status kiln_unique_consecutive(kiln_context *ctx, const kiln_tensor *x,
                                             kiln_tensor **values, kiln_tensor **inverse,
                                             kiln_tensor **counts);

/**
 * Insertion points of v into the ascending seq (numpy.searchsorted, torch.searchsorted):
 * for each element of v the number of elements of its seq row that are smaller (right == 0)
 * or smaller or equal (right != 0), in kiln's order (NaN largest). seq is 1-D (every element
 * of v searches it), or N-D with v of the same leading dimensions (row-wise, as torch).
 * @param sorter NULL, or i64 of seq's shape: seq's positions in ascending order (an argsort).
 * @param out    i64 of v's shape; must not be NULL.
 * @return the common statuses; KILN_ERR_DTYPE when v's dtype is not seq's or sorter not
 *         i64; KILN_ERR_SHAPE for leading dimensions that differ or a 0-D seq.
 * A seq that is not sorted gives unspecified positions (it is not checked).
 */
KILN_API kiln_status kiln_searchsorted(kiln_context *ctx, const kiln_tensor *seq,
                                       const kiln_tensor *v, int right, const kiln_tensor *sorter,
                                       kiln_tensor **out);

/**
 * Membership of each element of a in s (numpy.isin, MATLAB ismember), both flattened and of
 * one dtype. NaN is a member of nothing; -0.0 matches +0.0.
 * @param tf  NULL or bool of a's shape: 1 where the element occurs in s.
 * @param loc NULL or i64 of a's shape: the lowest position in s of the match, -1 where none
 *            (MATLAB's Locb less one).
 * @return the common statuses (tf and loc both NULL: KILN_ERR_INVALID_ARGUMENT).
 */
KILN_API kiln_status kiln_isin(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *s,
                               kiln_tensor **tf, kiln_tensor **loc);

/** The sorted distinct values in a or b (numpy.union1d), both flattened, of one dtype. */
KILN_API kiln_status kiln_union(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b,
                                kiln_tensor **out);

/**
 * The sorted distinct values in both a and b (numpy.intersect1d, MATLAB intersect); NaN is in
 * no intersection.
 * @param ia, ib NULL or i64: the first position in a (b) of each value.
 */
KILN_API kiln_status kiln_intersect(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b,
                                    kiln_tensor **out, kiln_tensor **ia, kiln_tensor **ib);

/**
 * The sorted distinct values of a that are not in b (numpy.setdiff1d, MATLAB setdiff).
 * @param ia NULL or i64: the first position in a of each value.
 */
KILN_API kiln_status kiln_setdiff(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b,
                                  kiln_tensor **out, kiln_tensor **ia);

/** The sorted distinct values in exactly one of a and b (numpy.setxor1d). */
KILN_API kiln_status kiln_setxor(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b,
                                 kiln_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
