#include "core/shape.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"

kiln_status
kiln__shape_make(const char *op, size_t ndim, const int64_t *dims, size_t elem_size,
                 kiln__shape *out, uint64_t *numel, uint64_t *nbytes)
{
  KILN_RETURN_IF(ndim > KILN_MAX_DIMS, KILN_ERR_INVALID_ARGUMENT, op,
                 "ndim %zu exceeds the maximum of %d", ndim, KILN_MAX_DIMS);
  KILN_RETURN_IF(ndim > 0 && !dims, KILN_ERR_INVALID_ARGUMENT, op, "shape is NULL with ndim %zu",
                 ndim);
  uint64_t n = 1;
  int overflow = 0;
  for (size_t i = 0; i < ndim; i++) {
    KILN_RETURN_IF(dims[i] < 0, KILN_ERR_SHAPE, op, "dimension %zu is negative (%lld)", i,
                   (long long)dims[i]);
    if (dims[i] != 0 && n > (uint64_t)INT64_MAX / (uint64_t)dims[i])
      overflow = 1;
    n *= (uint64_t)dims[i];
  }
  /* A zero dimension anywhere makes the tensor empty, whatever the others say. */
  for (size_t i = 0; i < ndim; i++)
    if (dims[i] == 0)
      n = 0, overflow = 0;
  KILN_RETURN_IF(overflow, KILN_ERR_OVERFLOW, op, "element count of the shape overflows");
  KILN_RETURN_IF(elem_size && n > (uint64_t)INT64_MAX / elem_size, KILN_ERR_OVERFLOW, op,
                 "byte size of %llu elements overflows", (unsigned long long)n);
  if (out) {
    memset(out, 0, sizeof *out);
    out->ndim = ndim;
    for (size_t i = 0; i < ndim; i++)
      out->dims[i] = dims[i];
  }
  if (numel)
    *numel = n;
  if (nbytes)
    *nbytes = n * elem_size;
  return KILN_OK;
}

kiln_status
kiln__shape_broadcast(const char *op, const kiln__shape *a, const kiln__shape *b,
                      kiln__shape *out)
{
  kiln__shape r;
  memset(&r, 0, sizeof r);
  r.ndim = a->ndim > b->ndim ? a->ndim : b->ndim;
  for (size_t i = 0; i < r.ndim; i++) {
    /* Walk from the innermost dimension outwards. */
    int64_t da = i < a->ndim ? a->dims[a->ndim - 1 - i] : 1;
    int64_t db = i < b->ndim ? b->dims[b->ndim - 1 - i] : 1;
    int64_t d;
    if (da == db || db == 1)
      d = da;
    else if (da == 1)
      d = db;
    else {
      char sa[160], sb[160];
      return kiln__fail(KILN_ERR_SHAPE, op, 0, "shapes %s and %s do not broadcast",
                        kiln__shape_format(a, sa, sizeof sa), kiln__shape_format(b, sb, sizeof sb));
    }
    r.dims[r.ndim - 1 - i] = d;
  }
  *out = r;
  return KILN_OK;
}

void
kiln__shape_broadcast_strides(const kiln__shape *in, const kiln__shape *out,
                              int64_t strides[KILN_MAX_DIMS])
{
  memset(strides, 0, sizeof(int64_t) * KILN_MAX_DIMS);
  int64_t s = 1;
  for (size_t i = 0; i < in->ndim; i++) {
    size_t di = in->ndim - 1 - i;
    size_t dout = out->ndim - 1 - i;
    strides[dout] = in->dims[di] == 1 ? 0 : s;
    s *= in->dims[di];
  }
}

int
kiln__shape_equal(const kiln__shape *a, const kiln__shape *b)
{
  if (a->ndim != b->ndim)
    return 0;
  for (size_t i = 0; i < a->ndim; i++)
    if (a->dims[i] != b->dims[i])
      return 0;
  return 1;
}

const char *
kiln__shape_format(const kiln__shape *s, char *buf, size_t len)
{
  size_t used = 0;
  if (len == 0)
    return buf;
  buf[0] = 0;
  used += (size_t)snprintf(buf, len, "[");
  for (size_t i = 0; i < s->ndim && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, i ? ",%lld" : "%lld", (long long)s->dims[i]);
  if (used < len)
    snprintf(buf + used, len - used, "]");
  return buf;
}

uint32_t
kiln__bcast_plan(const kiln__shape *out, const kiln__shape *const *ops, size_t nops,
                 kiln__bcast *plan, int *flat)
{
  memset(plan, 0, sizeof *plan);
  int64_t st[3][KILN_MAX_DIMS];
  for (size_t k = 0; k < nops; k++)
    kiln__shape_broadcast_strides(ops[k], out, st[k]);
  /* Drop size-1 dimensions, then merge neighbours that stay linear for every operand. */
  uint32_t nd = 0;
  for (size_t d = 0; d < out->ndim; d++) {
    if (out->dims[d] == 1)
      continue;
    int merge = nd > 0;
    for (size_t k = 0; k < nops && merge; k++)
      merge = plan->stride[k][nd - 1] == (uint64_t)st[k][d] * (uint64_t)out->dims[d];
    if (merge) {
      plan->shape[nd - 1] *= (uint64_t)out->dims[d];
      for (size_t k = 0; k < nops; k++)
        plan->stride[k][nd - 1] = (uint64_t)st[k][d];
    } else {
      plan->shape[nd] = (uint64_t)out->dims[d];
      for (size_t k = 0; k < nops; k++)
        plan->stride[k][nd] = (uint64_t)st[k][d];
      nd++;
    }
  }
  *flat = 1;
  for (size_t k = 0; k < nops; k++)
    if (nd > 1 || (nd == 1 && plan->stride[k][0] != 1))
      *flat = 0;
  return nd;
}
