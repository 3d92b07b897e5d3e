/*
 * Complex tensors (c64: two f32, c128: two f64, real part first): building
 * one from its parts and viewing one as real numbers and back. The
 * elementwise ops on complex tensors go through kiln_unary, kiln_binary,
 * kiln_binary_scalar and kiln_where (include/kiln/elementwise.h; the
 * accepted ops are the rows of KILN_COMPLEX_UNARY_OPS and
 * KILN_COMPLEX_BINARY_OPS in include/kiln/op_table.h; docs/ops.md, "Complex
 * numbers").
 *
 * c128 needs a device with fp64 (KILN_ERR_UNSUPPORTED otherwise, as f64).
 *
 * Statuses common to every function here: KILN_OK; KILN_ERR_INVALID_HANDLE
 * (NULL, released or foreign ctx/tensor); KILN_ERR_INVALID_ARGUMENT (NULL
 * out); KILN_ERR_CONTEXT_MISMATCH (a tensor of another context);
 * KILN_ERR_HOST_MEMORY.
 */
#ifndef KILN_COMPLEX_H
#define KILN_COMPLEX_H

#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * out = re + i im, elementwise with NumPy broadcasting of re and im, which
 * must share a dtype: f32 gives c64, f64 gives c128. Output convention of
 * include/kiln/elementwise.h (*out NULL: allocated; else written in place,
 * aliasing handled). Further statuses: KILN_ERR_DTYPE (re and im of
 * different dtypes, or not f32/f64, or a given *out not of the complex
 * dtype); KILN_ERR_SHAPE (re and im do not broadcast, or a given *out of
 * another shape); KILN_ERR_UNSUPPORTED (f64 without fp64); KILN_ERR_BUILD;
 * KILN_ERR_OPENCL; KILN_ERR_DEVICE_MEMORY.
 */
KILN_API kiln_status kiln_complex(kiln_context *ctx, const kiln_tensor *re, const kiln_tensor *im,
                                  kiln_tensor **out);

/**
 * The real numbers of complex tensor c: shape c's shape plus a trailing
 * dimension of 2 (real part, imaginary part), dtype f32 for c64 and f64 for
 * c128. With *out NULL, *out becomes a new view over c's buffer (no copy:
 * writes through either handle show in the other; the caller releases the
 * view, and the buffer lives until both are released). A given *out must
 * have that shape and dtype and receives a copy. Further statuses:
 * KILN_ERR_DTYPE (c is not c64/c128, or a given *out of another dtype);
 * KILN_ERR_SHAPE (c has 8 dimensions already, or a given *out of another
 * shape); KILN_ERR_OPENCL (the copy).
 */
KILN_API kiln_status kiln_view_as_real(kiln_context *ctx, const kiln_tensor *c, kiln_tensor **out);

/**
 * The complex numbers of real tensor r, whose last dimension is 2 (real
 * part, imaginary part): shape r's without that dimension, dtype c64 for
 * f32 and c128 for f64. With *out NULL, a view over r's buffer (no copy, as
 * kiln_view_as_real); r's element offset in its buffer must be even (a view
 * starting mid-number is refused); a given *out receives a copy. Further
 * statuses: KILN_ERR_DTYPE (r is not f32/f64, or a given *out of another
 * dtype); KILN_ERR_SHAPE (r has no dimensions or its last is not 2, or a
 * given *out of another shape); KILN_ERR_INVALID_ARGUMENT (odd element
 * offset); KILN_ERR_UNSUPPORTED (f64 without fp64); KILN_ERR_OPENCL (the
 * copy).
 */
KILN_API kiln_status kiln_view_as_complex(kiln_context *ctx, const kiln_tensor *r,
                                          kiln_tensor **out);

#ifdef __cplusplus
}
#endif
#endif
