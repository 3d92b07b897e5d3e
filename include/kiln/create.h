/*
 * Creation operations: ones, full_complex and the *_like family, arange,
 * linspace (real and complex endpoints), logspace, eye (identity), tri and
 * meshgrid. kiln_tensor_create (empty), kiln_tensor_zeros and
 * kiln_tensor_full are in tensor.h. docs/layout.md has the semantics.
 *
 * Every operation takes f16, bf16, c64 and c128 (arange, linspace and
 * logspace: every floating and complex dtype): f16/bf16 values are computed
 * in double (float without fp64) and rounded once; complex results from real
 * arguments have imaginary part 0 (kiln_tensor_full_complex and
 * kiln_linspace_complex take complex values). docs/ops.md has the details.
 *
 * Every element of a result is written by kiln (pooled buffers are never
 * handed out with stale contents), except for kiln_tensor_empty_like.
 *
 * Output convention for arange, linspace, logspace, eye, tri and meshgrid
 * (as in elementwise.h): if *out is NULL kiln creates the result; otherwise
 * *out must already have the result's shape and dtype and belong to ctx.
 * A meshgrid output may share bytes with an input (computed through a
 * temporary), not with another output (KILN_ERR_INVALID_ARGUMENT, nothing
 * written); docs/ops.md, "Aliasing". The *_like functions and kiln_tensor_ones always create a new
 * tensor, as kiln_tensor_create does (*out is set to NULL first, then to the result).
 *
 * Statuses common to every operation here:
 *   KILN_OK; KILN_ERR_INVALID_HANDLE (NULL, released or foreign ctx/tensor);
 *   KILN_ERR_INVALID_ARGUMENT (NULL out, a dtype outside the enum, argument
 *   values named below); KILN_ERR_CONTEXT_MISMATCH; KILN_ERR_DTYPE (a dtype
 *   the operation does not accept, or a given *out of another dtype);
 *   KILN_ERR_SHAPE (a given *out of the wrong shape); KILN_ERR_UNSUPPORTED
 *   (f64 without fp64); KILN_ERR_OVERFLOW (result too large); KILN_ERR_BUILD;
 *   KILN_ERR_OPENCL; KILN_ERR_DEVICE_MEMORY; KILN_ERR_HOST_MEMORY.
 */
#ifndef KILN_CREATE_H
#define KILN_CREATE_H

#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** As kiln_tensor_full() with the value 1 (true for bool, 1 + 0i for complex). Same statuses. */
KILN_API kiln_status kiln_tensor_ones(kiln_context *ctx, kiln_dtype dtype, size_t ndim,
                                      const int64_t *shape, kiln_tensor **out);

/**
 * A new complex tensor with every element value: the way to fill with a
 * nonzero imaginary part (kiln_tensor_full takes a real kiln_scalar, whose
 * imaginary part is 0). dtype must be c64 (each part rounded to f32) or c128;
 * any other is KILN_ERR_DTYPE. Always creates (*out is set to NULL first);
 * the caller releases *out. Other statuses as kiln_tensor_create().
 */
KILN_API kiln_status kiln_tensor_full_complex(kiln_context *ctx, kiln_dtype dtype, size_t ndim,
                                              const int64_t *shape, kiln_complex128 value,
                                              kiln_tensor **out);

/**
 * A new tensor with x's context, dtype and shape: uninitialised (empty_like),
 * 0, 1, or value converted to x's dtype by kiln_cast() rules (full_like).
 * The caller releases *out.
 */
KILN_API kiln_status kiln_tensor_empty_like(const kiln_tensor *x, kiln_tensor **out);
KILN_API kiln_status kiln_tensor_zeros_like(const kiln_tensor *x, kiln_tensor **out);
KILN_API kiln_status kiln_tensor_ones_like(const kiln_tensor *x, kiln_tensor **out);
KILN_API kiln_status kiln_tensor_full_like(const kiln_tensor *x, kiln_scalar value,
                                           kiln_tensor **out);

/**
 * The 1-D tensor start, start + step, ... up to but excluding stop (NumPy
 * arange). Length: ceil((stop - start) / step), at least 0.
 *
 * dtype f32/f64/f16/bf16: element i is start + i * step computed in double
 * (in float on devices without fp64) and rounded once to dtype (to nearest
 * even; f16/bf16 with no double rounding through f32). dtype c64/c128: the
 * same real values, imaginary part 0. dtype i32/i64/u8: start,
 * stop and step must be integral (integer scalars, or floats with integral
 * values); element i is start + i * step in exact 64-bit arithmetic,
 * wrapped to dtype like kiln_cast(). bool is KILN_ERR_DTYPE.
 * step 0, a non-finite start, stop or step, or a length that is not finite
 * ((stop - start) / step overflows double towards stop, as in
 * arange(0, 1e300, 1e-300)) is KILN_ERR_INVALID_ARGUMENT. A finite length
 * too large for the result (2^63 or more, more bytes than int64 or the
 * device's largest allocation hold) is KILN_ERR_OVERFLOW. A range that runs
 * away from stop is empty, however large the quotient.
 */
KILN_API kiln_status kiln_arange(kiln_context *ctx, kiln_scalar start, kiln_scalar stop,
                                 kiln_scalar step, kiln_dtype dtype, kiln_tensor **out);

/**
 * n evenly spaced values from start to stop (NumPy linspace, MATLAB
 * linspace with endpoint != 0). With endpoint, the step is
 * (stop - start) / (n - 1) and the last element is exactly stop; without,
 * the step is (stop - start) / n and stop is excluded. Element i is
 * start + i * step, computed in double (float without fp64) and rounded
 * once to dtype. dtype f16, bf16, f32, f64, or c64/c128 (real values,
 * imaginary part 0; kiln_linspace_complex() takes complex endpoints); any
 * other is KILN_ERR_DTYPE. n >= 0. A non-finite start or stop, or a step
 * that is not finite (stop - start overflows double, as in
 * linspace(-1e308, 1e308, 3)), is KILN_ERR_INVALID_ARGUMENT; an n too large
 * for the result (more bytes than int64 or the device's largest
 * allocation hold) is KILN_ERR_OVERFLOW.
 */
KILN_API kiln_status kiln_linspace(kiln_context *ctx, double start, double stop, int64_t n,
                                   int endpoint, kiln_dtype dtype, kiln_tensor **out);

/**
 * kiln_linspace() between complex endpoints (NumPy linspace of complex
 * start/stop): the real and imaginary parts are spaced independently, each
 * computed in double (float without fp64) and rounded once to the part's
 * type; with endpoint the last element is exactly stop. dtype c64 or c128
 * (else KILN_ERR_DTYPE). A non-finite part, or a part whose step is not
 * finite, is KILN_ERR_INVALID_ARGUMENT; other statuses as kiln_linspace().
 */
KILN_API kiln_status kiln_linspace_complex(kiln_context *ctx, kiln_complex128 start,
                                           kiln_complex128 stop, int64_t n, int endpoint,
                                           kiln_dtype dtype, kiln_tensor **out);

/**
 * base raised to kiln_linspace(start, stop, n, endpoint): n values from
 * base^start to base^stop (NumPy logspace). dtype f16, bf16, f32, f64
 * (f16/bf16: pow in double, or float without fp64, rounded once), or
 * c64/c128 (real values, imaginary part 0); base > 0. pow is the device's
 * (OpenCL allows it a few ulp of error).
 */
KILN_API kiln_status kiln_logspace(kiln_context *ctx, double start, double stop, int64_t n,
                                   int endpoint, double base, kiln_dtype dtype, kiln_tensor **out);

/**
 * rows x cols matrix with ones on diagonal k (k > 0 above the main one,
 * k < 0 below) and zeros elsewhere, every element written. Any dtype
 * (complex: 1 + 0i and 0 + 0i). The
 * identity matrix is kiln_eye(ctx, n, n, 0, dtype, &out). rows, cols >= 0.
 */
KILN_API kiln_status kiln_eye(kiln_context *ctx, int64_t rows, int64_t cols, int64_t k,
                              kiln_dtype dtype, kiln_tensor **out);

/**
 * rows x cols matrix with ones at and below diagonal k (column - row <= k)
 * and zeros elsewhere (NumPy tri). Any dtype (complex: 1 + 0i). rows, cols >= 0.
 */
KILN_API kiln_status kiln_tri(kiln_context *ctx, int64_t rows, int64_t cols, int64_t k,
                              kiln_dtype dtype, kiln_tensor **out);

/** Axis order of kiln_meshgrid results. */
typedef enum kiln_meshgrid_indexing {
  KILN_MESHGRID_XY = 0, /**< Cartesian (MATLAB, NumPy default): the first two axes swapped */
  KILN_MESHGRID_IJ,     /**< matrix: result axis i follows input i */
} kiln_meshgrid_indexing;

/**
 * Coordinate grids from n 1-D tensors of one dtype (1 <= n <= KILN_MAX_DIMS).
 * With IJ indexing every result has shape (len0, len1, ..., len(n-1)) and
 * outs[i][..., j, ...] = inputs[i][j] along axis i; XY swaps the first two
 * axes of the shape (for n >= 2), so outs[0] varies along axis 1 and outs[1]
 * along axis 0. outs[i] follows the output convention for each result; on
 * failure the results kiln made are released and reset to NULL. Inputs that
 * are not 1-D are KILN_ERR_SHAPE, mixed dtypes KILN_ERR_DTYPE.
 */
KILN_API kiln_status kiln_meshgrid(kiln_context *ctx, const kiln_tensor *const *inputs, size_t n,
                                   kiln_meshgrid_indexing indexing, kiln_tensor **outs);

#ifdef __cplusplus
}
#endif
#endif
