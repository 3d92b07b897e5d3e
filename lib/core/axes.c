#include "core/axes.h"

#include <string.h>

#include "core/error.h"

kiln_status
kiln__axis_normalize(const char *op, size_t ndim, int64_t axis, size_t *out)
{
  int64_t n = (int64_t)ndim;
  KILN_RETURN_IF(axis < -n || axis >= n, KILN_ERR_SHAPE, op,
                 "axis %lld is out of range for a tensor of %zu dimension%s", (long long)axis,
                 ndim, ndim == 1 ? "" : "s");
  *out = (size_t)(axis < 0 ? axis + n : axis);
  return KILN_OK;
}

kiln_status
kiln__axes_mask(const char *op, size_t ndim, const int64_t *axes, size_t naxes, unsigned *mask)
{
  KILN_RETURN_IF(!axes && naxes, KILN_ERR_INVALID_ARGUMENT, op, "axes is NULL with naxes %zu",
                 naxes);
  if (!axes) {
    *mask = ndim ? (1u << ndim) - 1u : 0u;
    return KILN_OK;
  }
  unsigned m = 0;
  for (size_t i = 0; i < naxes; i++) {
    size_t a = 0;
    KILN_TRY(kiln__axis_normalize(op, ndim, axes[i], &a));
    KILN_RETURN_IF(m & (1u << a), KILN_ERR_SHAPE, op, "axis %lld is named twice (as axis %zu)",
                   (long long)axes[i], a);
    m |= 1u << a;
  }
  *mask = m;
  return KILN_OK;
}

void
kiln__reduce_layout_make(const kiln__shape *in, unsigned mask, int keepdims,
                         kiln__reduce_layout *l)
{
  memset(l, 0, sizeof *l);
  uint64_t kept = 1, red = 1, numel = 1;
  for (size_t d = 0; d < in->ndim; d++) {
    uint64_t n = (uint64_t)in->dims[d];
    numel *= n;
    if (mask & (1u << d)) {
      red *= n;
      if (keepdims)
        l->out.dims[l->out.ndim++] = 1;
    } else {
      kept *= n;
      l->out.dims[l->out.ndim++] = in->dims[d];
    }
  }
  l->outer = kept;
  l->red = red;
  l->inner = 1;
  if (numel == 0)
    return; /* nothing is read: only the output count and the empty value matter */

  /* Runs of neighbouring dims of one kind, size-1 dims skipped (they change no address). */
  uint64_t gsize[KILN_MAX_DIMS], gstride[KILN_MAX_DIMS];
  int gred[KILN_MAX_DIMS];
  size_t ng = 0, nred_groups = 0;
  uint64_t stride = 1;
  for (size_t d = in->ndim; d-- > 0;) {
    uint64_t n = (uint64_t)in->dims[d];
    int r = (mask >> d) & 1u;
    if (n != 1) {
      if (ng && gred[ng - 1] == r) {
        gsize[ng - 1] *= n;
      } else {
        gsize[ng] = n;
        gstride[ng] = stride; /* the innermost dim's stride: the run is contiguous above it */
        gred[ng] = r;
        nred_groups += (size_t)r;
        ng++;
      }
    }
    stride *= n;
  }
  /* The groups were collected innermost first. */
  if (nred_groups <= 1) {
    uint64_t before = 1, after = 1;
    int seen = 0;
    for (size_t g = ng; g-- > 0;) {
      if (gred[g])
        seen = 1;
      else if (seen)
        after *= gsize[g];
      else
        before *= gsize[g];
    }
    if (!seen) {
      l->outer = kept;
      l->red = 1;
      l->inner = 1;
    } else {
      l->outer = before;
      l->inner = after;
    }
    return;
  }
  l->permute = 1;
  for (int pass = 0; pass < 2; pass++)
    for (size_t g = ng; g-- > 0;)
      if (gred[g] == pass) {
        l->perm_shape[l->perm_ndim] = gsize[g];
        l->perm_stride[l->perm_ndim] = gstride[g];
        l->perm_ndim++;
      }
}

void
kiln__axis_split(const kiln__shape *s, size_t axis, uint64_t *outer, uint64_t *len,
                 uint64_t *inner)
{
  uint64_t o = 1, i = 1;
  for (size_t d = 0; d < axis; d++)
    o *= (uint64_t)s->dims[d];
  for (size_t d = axis + 1; d < s->ndim; d++)
    i *= (uint64_t)s->dims[d];
  *outer = o;
  *len = (uint64_t)s->dims[axis];
  *inner = i;
}
