/*
 * Tensors: a device buffer with a dtype and a contiguous row-major shape.
 *
 * Up to KILN_MAX_DIMS dimensions; a dimension of size 0 is valid and makes an
 * empty tensor (which owns no device memory). A 0-d tensor (ndim 0) holds one
 * element. Shapes are int64_t; a negative dimension is KILN_ERR_SHAPE.
 *
 * Tensors belong to the context that made them. Release each exactly once;
 * a released handle passed to kiln returns KILN_ERR_INVALID_HANDLE (kiln keeps
 * released handles poisoned for a while to detect that, but a handle reused
 * long after release is undefined behaviour, as with free()).
 */
#ifndef KILN_TENSOR_H
#define KILN_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/context.h"
#include "kiln/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_MAX_DIMS 8

/** Opaque tensor handle. */
typedef struct kiln_tensor kiln_tensor;

/**
 * Creates a tensor with uninitialised contents.
 *
 * @param shape ndim sizes (may be NULL when ndim is 0).
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE (ctx); KILN_ERR_INVALID_ARGUMENT
 *         (NULL out, ndim > KILN_MAX_DIMS, bad dtype); KILN_ERR_SHAPE (negative
 *         size); KILN_ERR_OVERFLOW (element or byte count overflows, or exceeds
 *         the device's largest allocation); KILN_ERR_UNSUPPORTED (f64 or c128 without
 *         fp64); KILN_ERR_DEVICE_MEMORY; KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_tensor_create(kiln_context *ctx, kiln_dtype dtype, size_t ndim,
                                        const int64_t *shape, kiln_tensor **out);

/** As kiln_tensor_create(), then every element set to 0. Same statuses. */
KILN_API kiln_status kiln_tensor_zeros(kiln_context *ctx, kiln_dtype dtype, size_t ndim,
                                       const int64_t *shape, kiln_tensor **out);

/**
 * As kiln_tensor_create(), then every element set to value converted to dtype
 * (kiln_cast() rules: f16/bf16 rounded once to nearest even; complex gets
 * imaginary part 0, kiln_tensor_full_complex() in create.h takes any complex
 * value). Same statuses.
 */
KILN_API kiln_status kiln_tensor_full(kiln_context *ctx, kiln_dtype dtype, size_t ndim,
                                      const int64_t *shape, kiln_scalar value, kiln_tensor **out);

/**
 * Creates a tensor and copies numel*dtype-size bytes from host memory into it.
 * The copy completes before the call returns (the host buffer may be reused).
 * Same statuses as kiln_tensor_create(), plus KILN_ERR_INVALID_ARGUMENT for a
 * NULL host pointer with a non-empty shape and KILN_ERR_OPENCL.
 */
KILN_API kiln_status kiln_tensor_from_host(kiln_context *ctx, kiln_dtype dtype, size_t ndim,
                                           const int64_t *shape, const void *host,
                                           kiln_tensor **out);

/**
 * Copies bytes (exactly kiln_tensor_nbytes()) from host memory into an existing
 * tensor, blocking.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (NULL
 *         host with bytes > 0, or bytes != nbytes); KILN_ERR_OPENCL.
 */
KILN_API kiln_status kiln_tensor_upload(kiln_tensor *t, const void *host, size_t bytes);

/**
 * Waits for pending work on the tensor's context and copies its contents to
 * host memory (exactly kiln_tensor_nbytes() bytes).
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (NULL
 *         host with bytes > 0, or bytes != nbytes); KILN_ERR_OPENCL (the raw
 *         code of a failed kernel shows up here).
 */
KILN_API kiln_status kiln_tensor_download(const kiln_tensor *t, void *host, size_t bytes);

/**
 * Wraps a buffer the caller owns. kiln retains the cl_mem and releases its
 * reference when the tensor is released. offset_bytes must be a multiple of
 * the dtype size and offset + nbytes must fit in the buffer.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (NULL
 *         mem/out, misaligned offset); KILN_ERR_SHAPE; KILN_ERR_OVERFLOW (the
 *         tensor does not fit in the buffer); KILN_ERR_CONTEXT_MISMATCH (buffer
 *         from another cl_context); KILN_ERR_UNSUPPORTED (f64 without fp64).
 */
KILN_API kiln_status kiln_tensor_wrap(kiln_context *ctx, cl_mem mem, size_t offset_bytes,
                                      kiln_dtype dtype, size_t ndim, const int64_t *shape,
                                      kiln_tensor **out);

/**
 * Releases a tensor. Its buffer returns to the context's pool (or, for a
 * wrapped buffer, kiln drops its reference). Work already queued that reads
 * the tensor still sees its data. NULL is accepted and ignored.
 * @return KILN_OK or KILN_ERR_INVALID_HANDLE (already released / not a tensor).
 */
KILN_API kiln_status kiln_tensor_release(kiln_tensor *t);

/**
 * The buffer behind a tensor (NULL for an empty tensor) and the byte offset
 * of element 0 in it. kiln keeps ownership.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (NULL mem).
 */
KILN_API kiln_status kiln_tensor_cl_mem(const kiln_tensor *t, cl_mem *mem, size_t *offset_bytes);

/** dtype of a valid tensor (KILN_DTYPE_COUNT for an invalid handle). */
KILN_API kiln_dtype kiln_tensor_dtype(const kiln_tensor *t);

/** Number of dimensions (0 for an invalid handle). */
KILN_API size_t kiln_tensor_ndim(const kiln_tensor *t);

/** Size of dimension i (-1 for an invalid handle or i >= ndim). */
KILN_API int64_t kiln_tensor_dim(const kiln_tensor *t, size_t i);

/** Number of elements (0 for an invalid handle). */
KILN_API uint64_t kiln_tensor_numel(const kiln_tensor *t);

/** Size in bytes (0 for an invalid handle). */
KILN_API uint64_t kiln_tensor_nbytes(const kiln_tensor *t);

/** The context a tensor belongs to (NULL for an invalid handle). */
KILN_API kiln_context *kiln_tensor_context(const kiln_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
