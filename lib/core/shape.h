/* Shape arithmetic: element counts with overflow checks, broadcasting, formatting. */
#ifndef KILN_CORE_SHAPE_H
#define KILN_CORE_SHAPE_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/status.h"
#include "kiln/tensor.h"

typedef struct kiln__shape {
  size_t ndim;
  int64_t dims[KILN_MAX_DIMS];
} kiln__shape;

/*
 * Validates ndim/dims and computes the element count and byte size for an
 * element of elem_size bytes. Statuses: INVALID_ARGUMENT (ndim too large, NULL
 * dims with ndim > 0), SHAPE (negative dim), OVERFLOW (count or bytes exceed
 * 2^63-1). The message names op.
 */
kiln_status kiln__shape_make(const char *op, size_t ndim, const int64_t *dims, size_t elem_size,
                             kiln__shape *out, uint64_t *numel, uint64_t *nbytes);

/* NumPy broadcast of a and b into out. SHAPE with a message naming op and both shapes. */
kiln_status kiln__shape_broadcast(const char *op, const kiln__shape *a, const kiln__shape *b,
                                  kiln__shape *out);

/*
 * Element strides of a contiguous tensor of shape in, viewed as shape out
 * (which in broadcasts to): 0 along broadcast dimensions, right-aligned.
 */
void kiln__shape_broadcast_strides(const kiln__shape *in, const kiln__shape *out,
                                   int64_t strides[KILN_MAX_DIMS]);

int kiln__shape_equal(const kiln__shape *a, const kiln__shape *b);

/* "[3,4]" into buf (always NUL-terminated); returns buf. */
const char *kiln__shape_format(const kiln__shape *s, char *buf, size_t len);

/*
 * A broadcast launch plan for up to 3 operands against an output shape, with
 * adjacent dimensions merged wherever every operand allows, so kernels do as
 * little index arithmetic as possible. Layout matches kiln_bcast in
 * cl_kernels/common.cl.
 */
typedef struct kiln__bcast {
  uint64_t shape[KILN_MAX_DIMS];
  uint64_t stride[3][KILN_MAX_DIMS];
} kiln__bcast;

/*
 * Fills plan for out and nops operand shapes (each broadcastable to out).
 * Returns the merged rank; *flat is set when every operand is contiguous with
 * out's element order (no index arithmetic needed).
 */
uint32_t kiln__bcast_plan(const kiln__shape *out, const kiln__shape *const *ops, size_t nops,
                          kiln__bcast *plan, int *flat);

#endif
