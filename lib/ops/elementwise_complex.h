/*
 * The elementwise family's complex dtypes (c64, c128): elementwise.c's
 * public entry points hand complex tensors to elementwise_complex.c, which
 * runs cl_kernels/complex.cl through elementwise.c's launch helpers
 * (declared here too). Which op accepts complex comes from one table,
 * KILN_COMPLEX_UNARY_OPS / KILN_COMPLEX_BINARY_OPS (include/kiln/op_table.h).
 */
#ifndef KILN_OPS_ELEMENTWISE_COMPLEX_H
#define KILN_OPS_ELEMENTWISE_COMPLEX_H

#include "kiln/elementwise.h"
#include "runtime/runtime.h"

/* Nonzero when op has a complex row and dtype is c64 or c128 (c128 also on devices without fp64,
 * as f64: tensors of it cannot be made there). */
int kiln__ew_complex_unary_supports(kiln_unary_op op, kiln_dtype dtype);
int kiln__ew_complex_binary_supports(kiln_binary_op op, kiln_dtype dtype);

/* kiln_unary on a checked complex x (op: the caller's name for messages). */
kiln_status kiln__ew_complex_unary(const char *op, kiln_context *ctx, kiln_unary_op uop,
                                   const kiln_tensor *x, kiln_tensor **out);

/* kiln_binary / kiln_binary_scalar on checked complex inputs of one dtype: a or b NULL stands
 * for scalar (the dtype's bytes). */
kiln_status kiln__ew_complex_binary(const char *op, kiln_context *ctx, kiln_binary_op bop,
                                    const kiln_tensor *a, const kiln_tensor *b,
                                    const unsigned char *scalar, kiln_tensor **out);

/* ---- launch helpers of elementwise.c ---- */

/*
 * Kernel kname of source (built for kdtype) over a and b with broadcasting
 * into a result of dtype rdtype, with the output convention; a or b NULL
 * stands for scalar. The kernel has elementwise.cl's binary arguments; its
 * two scalar arguments are esz (at most 16) bytes each.
 */
kiln_status kiln__ew_bcast_run(const char *op, kiln_context *ctx, const char *source,
                               const char *kname, kiln_dtype kdtype, kiln_dtype rdtype,
                               const kiln_tensor *a, const kiln_tensor *b,
                               const unsigned char *scalar, size_t esz, kiln_tensor **out);

/* Kernel kname(x, xoff, y, yoff, n) of source (built for x's dtype) into a result of rdtype. */
kiln_status kiln__ew_map(const char *op, kiln_context *ctx, const char *source, const char *kname,
                         const kiln_tensor *x, kiln_dtype rdtype, kiln_tensor **out);

#endif
