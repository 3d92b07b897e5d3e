/*
 * Axis arguments of reductions and scans: Python-style normalisation and the
 * (outer, reduced, inner) view a reduction kernel works on. No OpenCL here.
 */
#ifndef KILN_CORE_AXES_H
#define KILN_CORE_AXES_H

#include <stdint.h>

#include "core/shape.h"

/* Maps axis (negative counts from the end) into [0, ndim); SHAPE when out of range. */
kiln_status kiln__axis_normalize(const char *op, size_t ndim, int64_t axis, size_t *out);

/*
 * Bit d of *mask set for every reduced axis. axes == NULL with naxes == 0
 * means all axes. INVALID_ARGUMENT for NULL axes with naxes > 0; SHAPE for
 * an axis out of range or named twice. Messages name op.
 */
kiln_status kiln__axes_mask(const char *op, size_t ndim, const int64_t *axes, size_t naxes,
                            unsigned *mask);

/*
 * How a reduction of a contiguous tensor over the axes in mask is run:
 * x viewed as (outer, red, inner), with `red` the product of the reduced
 * dims. Size-1 dims are ignored and neighbouring dims of the same kind
 * merged; when the reduced dims still form more than one block (e.g. axes 0
 * and 2 of a 3-D tensor), the kernels cannot see them as one strided axis,
 * so x is first copied in (kept..., reduced...) order (permute = 1, inner
 * = 1) with the permuted dims' source strides in perm_shape/perm_stride.
 */
typedef struct kiln__reduce_layout {
  kiln__shape out; /* result shape, keepdims applied */
  uint64_t outer, red, inner;
  int permute;
  uint32_t perm_ndim;
  uint64_t perm_shape[KILN_MAX_DIMS];
  uint64_t perm_stride[KILN_MAX_DIMS];
} kiln__reduce_layout;

void kiln__reduce_layout_make(const kiln__shape *in, unsigned mask, int keepdims,
                              kiln__reduce_layout *l);

/* (outer, len, inner) of a scan along axis (already normalised). */
void kiln__axis_split(const kiln__shape *s, size_t axis, uint64_t *outer, uint64_t *len,
                      uint64_t *inner);

#endif
