/*
 * Indexing operations: gather, index_select, scatter (assign and add),
 * masked_fill, masked_select, nonzero, embedding, sub2ind/ind2sub and
 * one_hot. docs/layout.md has the semantics with examples.
 *
 * Values may be of any dtype, f16, bf16, c64 and c128 included. Ops that
 * move values (gather, index_select, embedding, scatter assign, masked_fill,
 * masked_select) copy them bit for bit; scatter add sums each target's run in
 * index order (f16/bf16 in f32, rounded once at the end; complex part by
 * part); nonzero counts a complex number when either part is nonzero; one_hot
 * writes 1 + 0i for complex. masked_fill's value converts by kiln_cast()
 * rules (complex: imaginary part 0). docs/ops.md has the details.
 *
 * Index tensors are i32 or i64 (else KILN_ERR_DTYPE). Where an index
 * addresses an axis of length n, values in [-n, n) are accepted and a
 * negative value counts from the end (NumPy); one_hot, sub2ind and ind2sub
 * take only non-negative values. An index outside its range makes the call
 * return KILN_ERR_INVALID_ARGUMENT with a message naming the first bad
 * position and its value; kiln checks on the device and never reads or
 * writes memory out of bounds. The check costs one small read-back per call
 * (the call waits for its kernels). On that error a result kiln created is
 * released (*out stays NULL); a caller-given *out of a gather-type op
 * (gather, index_select, embedding, one_hot, sub2ind, ind2sub) holds
 * unspecified values, while scatter leaves its target untouched (it
 * validates before writing).
 *
 * Output convention (as in elementwise.h): if *out is NULL kiln creates the
 * result; otherwise *out must have the result's shape and dtype and belong
 * to ctx. *out may share bytes with an input: kiln then works through a
 * temporary (docs/ops.md, "Aliasing"). masked_select and nonzero, whose
 * result size depends on the data, require *out == NULL.
 *
 * Statuses common to every operation here:
 *   KILN_OK; KILN_ERR_INVALID_HANDLE (NULL, released or foreign ctx/tensor);
 *   KILN_ERR_INVALID_ARGUMENT (NULL out or array, an axis out of range, an
 *   index out of range, other values named below);
 *   KILN_ERR_CONTEXT_MISMATCH; KILN_ERR_DTYPE (index not i32/i64, values of
 *   mismatched dtypes, a given *out of the wrong dtype); KILN_ERR_SHAPE
 *   (shapes that do not fit as described, a given *out of the wrong shape);
 *   KILN_ERR_OVERFLOW; KILN_ERR_BUILD; KILN_ERR_OPENCL;
 *   KILN_ERR_DEVICE_MEMORY; KILN_ERR_HOST_MEMORY.
 */
#ifndef KILN_INDEX_H
#define KILN_INDEX_H

#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * torch.gather / numpy.take_along_axis: out has index's shape and
 * out[i][j][k] = x[index[i][j][k]][j][k] for axis 0 (likewise for other
 * axes). index must have x's rank (>= 1) and index.shape[d] <= x.shape[d]
 * for every d != axis (KILN_ERR_SHAPE).
 */
KILN_API kiln_status kiln_gather(kiln_context *ctx, const kiln_tensor *x, int64_t axis,
                                 const kiln_tensor *index, kiln_tensor **out);

/**
 * numpy.take(x, index, axis): picks whole slices of x along axis. index may
 * have any shape, which replaces the axis: the result has shape
 * x.shape[:axis] + index.shape + x.shape[axis+1:] (rank <= KILN_MAX_DIMS).
 * x must have rank >= 1.
 */
KILN_API kiln_status kiln_index_select(kiln_context *ctx, const kiln_tensor *x, int64_t axis,
                                       const kiln_tensor *index, kiln_tensor **out);

/** How kiln_scatter combines values that land on one element. */
typedef enum kiln_scatter_mode {
  KILN_SCATTER_ASSIGN = 0, /**< the element takes the value of the last (row-major) index element aiming at it */
  KILN_SCATTER_ADD,        /**< the element adds every value aiming at it, in row-major index order */
} kiln_scatter_mode;

/**
 * The inverse of kiln_gather (torch.scatter / scatter_add): the result is a
 * copy of x where, for axis 0, out[index[i][j][k]][j][k] receives
 * src[i][j][k] (likewise for other axes). index, src and x have one rank
 * (>= 1); index.shape[d] <= src.shape[d] for every d and <= x.shape[d] for
 * d != axis (KILN_ERR_SHAPE); src has x's dtype (KILN_ERR_DTYPE).
 *
 * Deterministic for every dtype and any duplicates: the (target, position)
 * pairs are sorted on the device, then each target folds its values in
 * row-major index order (no atomics, so float sums are bitwise
 * reproducible). Integer sums wrap; bool sums are logical or. Cost:
 * O(m log^2 m) for m = index elements (a bitonic sort), plus a serial pass
 * over each run of equal targets (O(m) when every index hits one element).
 * *out may be x (in place).
 */
KILN_API kiln_status kiln_scatter(kiln_context *ctx, const kiln_tensor *x, int64_t axis,
                                  const kiln_tensor *index, const kiln_tensor *src,
                                  kiln_scatter_mode mode, kiln_tensor **out);

/**
 * out = x with value (converted to x's dtype by kiln_cast() rules) wherever
 * mask is true. mask is bool or u8 (nonzero is true) and broadcasts to x's
 * shape (KILN_ERR_SHAPE otherwise); the result has x's shape. *out may be x.
 */
KILN_API kiln_status kiln_masked_fill(kiln_context *ctx, const kiln_tensor *x,
                                      const kiln_tensor *mask, kiln_scalar value,
                                      kiln_tensor **out);

/**
 * The elements of x where mask (bool or u8, broadcast to x's shape) is
 * true, in row-major order, as a 1-D tensor of x's dtype. *out must be NULL;
 * count (may be NULL) receives the number of elements. Computed by stream
 * compaction on the device (a scan of the mask); the count costs one
 * read-back.
 */
KILN_API kiln_status kiln_masked_select(kiln_context *ctx, const kiln_tensor *x,
                                        const kiln_tensor *mask, kiln_tensor **out,
                                        uint64_t *count);

/**
 * MATLAB find / numpy.flatnonzero: the row-major linear indices of x's
 * nonzero elements (NaN counts as nonzero), ascending, as a 1-D i64 tensor.
 * kiln_ind2sub turns them into subscripts. *out must be NULL; count (may be
 * NULL) receives their number. Stream compaction on the device, one read-back.
 */
KILN_API kiln_status kiln_nonzero(kiln_context *ctx, const kiln_tensor *x, kiln_tensor **out,
                                  uint64_t *count);

/**
 * Embedding lookup: rows of weight (2-D, [rows, dim], any dtype) picked by
 * indices (any shape, rank <= KILN_MAX_DIMS - 1); the result has shape
 * indices.shape + [dim]. Equivalent to kiln_index_select(weight, 0, indices).
 */
KILN_API kiln_status kiln_embedding(kiln_context *ctx, const kiln_tensor *weight,
                                    const kiln_tensor *indices, kiln_tensor **out);

/**
 * Row-major linear indices from subscripts: subs (i32/i64) has shape
 * [..., ndims] and each row holds one subscript per dimension of dims
 * (ndims entries, each >= 0, 1 <= ndims <= KILN_MAX_DIMS); the result (i64)
 * has shape [...]. A subscript outside [0, dims[d]) is an index error.
 * A column-major (MATLAB) caller reverses dims and the subscript order.
 */
KILN_API kiln_status kiln_sub2ind(kiln_context *ctx, const int64_t *dims, size_t ndims,
                                  const kiln_tensor *subs, kiln_tensor **out);

/**
 * The inverse of kiln_sub2ind: index (i32/i64, any shape, rank <=
 * KILN_MAX_DIMS - 1, values in [0, product of dims)) becomes i64 subscripts
 * of shape index.shape + [ndims].
 */
KILN_API kiln_status kiln_ind2sub(kiln_context *ctx, const int64_t *dims, size_t ndims,
                                  const kiln_tensor *index, kiln_tensor **out);

/**
 * One-hot encoding: the result (any dtype) has shape indices.shape +
 * [num_classes] and holds 1 where the last coordinate equals the index, 0
 * elsewhere. num_classes >= 1 (KILN_ERR_INVALID_ARGUMENT); indices must lie
 * in [0, num_classes).
 */
KILN_API kiln_status kiln_one_hot(kiln_context *ctx, const kiln_tensor *indices,
                                  int64_t num_classes, kiln_dtype dtype, kiln_tensor **out);

#ifdef __cplusplus
}
#endif
#endif
