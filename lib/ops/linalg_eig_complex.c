/*
 * kiln_linalg_eig_complex: the general eigenproblem with complex results (c64 for f32 input,
 * c128 for f64), as torch.linalg.eig and numpy.linalg.eig return them. It is kiln_linalg_eig's
 * split real and imaginary parts joined by kiln_complex on the device, so both forms give the
 * same numbers; the given outputs are checked here first so that a wrong one is reported under
 * this op's name, before any work.
 */
#include "core/dtype_traits.h"
#include "core/error.h"
#include "core/shape.h"
#include "kiln/complex.h"
#include "kiln/linalg_spectral.h"
#include "ops/linalg_spectral_internal.h"
#include "runtime/runtime.h"

static kiln_status
check_given(const char *op, kiln_context *ctx, const kiln_tensor *t, kiln_dtype dt, const kiln__shape *sh,
            const char *name)
{
  if (!t)
    return KILN_OK;
  KILN_TRY(kiln__tensor_check(op, t, ctx));
  KILN_RETURN_IF(t->dtype != dt, KILN_ERR_DTYPE, op, "%s is %s, expected %s", name,
                 kiln_dtype_name(t->dtype), kiln_dtype_name(dt));
  KILN_RETURN_IF(!kiln__shape_equal(&t->shape, sh), KILN_ERR_SHAPE, op,
                 "%s does not have the shape of the result", name);
  return KILN_OK;
}

kiln_status
kiln_linalg_eig_complex(kiln_context *ctx, const kiln_tensor *a, kiln_tensor **w, kiln_tensor **v)
{
  static const char op[] = "kiln_linalg_eig_complex";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(kiln__lsp_check_mat(op, ctx, a, "a"));
  KILN_TRY(kiln__lsp_check_square(op, a, "a"));
  KILN_RETURN_IF(!w, KILN_ERR_INVALID_ARGUMENT, op, "w is NULL");
  kiln_dtype cdt = a->dtype == KILN_F32 ? KILN_C64 : KILN_C128;
  int64_t n = a->shape.dims[a->shape.ndim - 1], wt[1] = {n}, vt[2] = {n, n};
  kiln__shape wsh = kiln__lsp_shape(a, wt, 1), vsh = kiln__lsp_shape(a, vt, 2);
  KILN_TRY(check_given(op, ctx, *w, cdt, &wsh, "w"));
  if (v)
    KILN_TRY(check_given(op, ctx, *v, cdt, &vsh, "v"));
  kiln_tensor *wr = NULL, *wi = NULL, *vr = NULL, *vi = NULL, *nw = *w, *nv = v ? *v : NULL;
  kiln_status s = kiln_linalg_eig(ctx, a, &wr, &wi, v ? &vr : NULL, v ? &vi : NULL);
  if (s == KILN_OK)
    s = kiln_complex(ctx, wr, wi, &nw);
  if (s == KILN_OK && v)
    s = kiln_complex(ctx, vr, vi, &nv);
  kiln_tensor_release(wr);
  kiln_tensor_release(wi);
  kiln_tensor_release(vr);
  kiln_tensor_release(vi);
  if (s != KILN_OK) {
    /* Only what this call allocated goes; a caller's tensors stay theirs. */
    if (nw != *w)
      kiln_tensor_release(nw);
    if (v && nv != *v)
      kiln_tensor_release(nv);
    return s;
  }
  *w = nw;
  if (v)
    *v = nv;
  return KILN_OK;
}
