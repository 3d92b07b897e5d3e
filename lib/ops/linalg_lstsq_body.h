/*
 * The body of kiln_linalg_lstsq, written once for the real (f32, f64) and the complex (c64,
 * c128) matrices: lib/ops/linalg_eig.c and lib/ops/linalg_spectral_complex.c each include it
 * once, after defining the macros below, and get the static function LSQ_FN. The host stages
 * compute in double or double complex, and C has no generics over those, hence a template.
 *
 * The rules, as torch.linalg.lstsq (driver gelsd) returns them: a tall matrix whose R (the
 * device QR, kiln__lsp_lstsq_qr) has every |R_ii| > eps(dtype) max(m, n) max|R_ii| is solved
 * through the QR by back substitution on the host; every other matrix (wide or rank-deficient)
 * takes the host's gelsd. x has a's dtype, the residuals and singular values its real part's,
 * rank i64.
 *
 * LSQ_FN               name of the function
 * LSQ_T                host element type: double or double complex
 * LSQ_CHECK_MAT        kiln__lsp_check_mat or kiln__lsp_check_mat_complex
 * LSQ_ABS(x)           |x|
 * LSQ_ABS2(x)          |x|^2, as a double
 * LSQ_DOWNLOAD(L,t,o)  t's elements into a new LSQ_T array *o
 * LSQ_UPLOAD(L,t,v)    an LSQ_T array to t (x)
 * LSQ_UPLOAD_REAL(L,t,v)  a double array to t, of the real part's dtype (sv, residuals)
 * LSQ_GELSD            LAPACKE_dgelsd or LAPACKE_zgelsd, and LSQ_GELSD_NAME its routine
 * LSQ_SVALS(op,b,r,n,s)  the singular values of the n x n LSQ_T matrix r (destroyed) into s
 *
 * With KILN_HAVE_LAPACKE 0, LSQ_GELSD and LSQ_SVALS are never expanded.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "core/shape.h"
#include "kiln_config.h"
#include "ops/linalg_spectral_internal.h"
#include "ops/ops_common.h"
#if KILN_HAVE_LAPACKE
#include <lapacke.h>
#endif

static kiln_status
LSQ_FN(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b, double rcond, kiln_tensor **x,
       kiln_tensor **residuals, kiln_tensor **rank, kiln_tensor **sv)
{
  static const char op[] = "kiln_linalg_lstsq";
  KILN_TRY(LSQ_CHECK_MAT(op, ctx, a, "a"));
  KILN_TRY(LSQ_CHECK_MAT(op, ctx, b, "b"));
  KILN_RETURN_IF(a->dtype != b->dtype, KILN_ERR_DTYPE, op, "a is %s but b is %s",
                 kiln_dtype_name(a->dtype), kiln_dtype_name(b->dtype));
  KILN_RETURN_IF(!x, KILN_ERR_INVALID_ARGUMENT, op, "x is NULL");
  KILN_RETURN_IF(residuals && *residuals, KILN_ERR_INVALID_ARGUMENT, op,
                 "*residuals must be NULL: its shape depends on the ranks found");
  KILN_RETURN_IF(isnan(rcond), KILN_ERR_INVALID_ARGUMENT, op, "rcond is NaN");
  size_t nd = a->shape.ndim, bnd = b->shape.ndim;
  uint64_t m = (uint64_t)a->shape.dims[nd - 2], n = (uint64_t)a->shape.dims[nd - 1];
  uint64_t kk = m < n ? m : n, batch = kiln__lsp_batch(a);
  uint64_t nrhs = (uint64_t)b->shape.dims[bnd - 1];
  char s1[128], s2[128];
  int ok = bnd == nd && (uint64_t)b->shape.dims[bnd - 2] == m;
  for (size_t i = 0; ok && i + 2 < nd; i++)
    ok = a->shape.dims[i] == b->shape.dims[i];
  KILN_RETURN_IF(!ok, KILN_ERR_SHAPE, op,
                 "a %s and b %s: b must be [..., %llu, k] with a's batch dimensions",
                 kiln__shape_format(&a->shape, s1, sizeof s1),
                 kiln__shape_format(&b->shape, s2, sizeof s2), (unsigned long long)m);
  KILN_RETURN_IF(sv && !KILN_HAVE_LAPACKE, KILN_ERR_UNSUPPORTED, op,
                 "the singular values of lstsq run on the host through LAPACKE, and this kiln "
                 "was built without it (meson -Dlapacke=enabled with liblapacke-dev installed)");
  kiln_dtype rdt = kiln__dtype_real_part(a->dtype);
  double eps = rdt == KILN_F32 ? 0x1p-23 : 0x1p-52, mx = (double)(m > n ? m : n);
  double cut = rcond >= 0 ? rcond : eps * mx; /* the SVD route's cutoff */
  int64_t xt[2] = {(int64_t)n, (int64_t)nrhs}, st[1] = {(int64_t)kk};
  kiln__shape xs = kiln__lsp_shape(a, xt, 2), ss = kiln__lsp_shape(a, st, 1),
              rs = kiln__lsp_shape(a, NULL, 0);
  kiln__lsp L = kiln__lsp_begin(op, ctx, a);
  kiln__lsp_outs o = {0};
  kiln_status s = kiln__lsp_out(&o, op, ctx, a->dtype, &xs, x);
  if (s == KILN_OK && rank)
    s = kiln__lsp_out(&o, op, ctx, KILN_I64, &rs, rank);
  if (s == KILN_OK && sv)
    s = kiln__lsp_out(&o, op, ctx, rdt, &ss, sv);
  if (s == KILN_OK)
    s = kiln__lsp_outs_check(&o, op, a, b);
  kiln_tensor *qa = NULL, *qb = NULL;
  LSQ_T *ha = NULL, *hb = NULL, *hx = NULL;
  double *hres = NULL, *hs = NULL;
  int64_t *hr = NULL;
  int *via_svd = NULL;
  if (s == KILN_OK) {
    hx = calloc(batch * n * nrhs + 1, sizeof *hx);
    hres = calloc(batch * nrhs + 1, sizeof *hres);
    hs = calloc(batch * kk + 1, sizeof *hs);
    hr = calloc(batch + 1, sizeof *hr);
    via_svd = calloc(batch + 1, sizeof *via_svd);
    s = host_mem(op, hx && hres && hs && hr && via_svd);
  }
  /* The QR route: every tall matrix factors on the device, then R's diagonal decides. */
  if (s == KILN_OK && m >= n && n > 0 && batch) {
    s = kiln__lsp_lstsq_qr(&L, a, b, m, n, nrhs, batch, &qa, &qb);
    if (s == KILN_OK)
      s = LSQ_DOWNLOAD(&L, qa, &ha);
    if (s == KILN_OK && b->numel)
      s = LSQ_DOWNLOAD(&L, qb, &hb);
    for (uint64_t i = 0; s == KILN_OK && i < batch; i++) {
      const LSQ_T *R = ha + i * m * n;
      double big = 0.0;
      for (uint64_t j = 0; j < n; j++)
        big = fmax(big, LSQ_ABS(R[j * n + j]));
      int full = big > 0.0;
      for (uint64_t j = 0; full && j < n; j++)
        full = LSQ_ABS(R[j * n + j]) > eps * mx * big;
      if (!full) {
        via_svd[i] = 1;
        continue;
      }
      hr[i] = (int64_t)n;
      /* x = R^-1 (Q^H b)[:n] by back substitution; the rest of Q^H b is the residual. */
      for (uint64_t c = 0; c < nrhs; c++) {
        const LSQ_T *qtb = hb + i * m * nrhs;
        LSQ_T *X = hx + i * n * nrhs;
        for (uint64_t j = n; j-- > 0;) {
          LSQ_T t = qtb[j * nrhs + c];
          for (uint64_t l = j + 1; l < n; l++)
            t -= R[j * n + l] * X[l * nrhs + c];
          X[j * nrhs + c] = t / R[j * n + j];
        }
        double r2 = 0.0;
        for (uint64_t j = n; j < m; j++)
          r2 += LSQ_ABS2(qtb[j * nrhs + c]);
        hres[i * nrhs + c] = r2;
      }
#if KILN_HAVE_LAPACKE
      if (sv) { /* the singular values of R are A's */
        LSQ_T *rc = calloc(n * n + 1, sizeof *rc);
        s = host_mem(op, rc != NULL);
        for (uint64_t r_ = 0; s == KILN_OK && r_ < n; r_++)
          for (uint64_t c = r_; c < n; c++)
            rc[r_ * n + c] = R[r_ * n + c];
        if (s == KILN_OK)
          s = LSQ_SVALS(op, i, rc, n, hs + i * kk);
        free(rc);
      }
#endif
    }
    free(ha);
    free(hb);
    ha = hb = NULL;
  } else if (s == KILN_OK) {
    for (uint64_t i = 0; i < batch; i++)
      via_svd[i] = n > 0; /* n == 0: x is empty, rank 0 */
  }
  int any_svd = 0;
  for (uint64_t i = 0; s == KILN_OK && i < batch; i++)
    any_svd |= via_svd[i];
  if (s == KILN_OK && any_svd && !KILN_HAVE_LAPACKE)
    s = kiln__fail(KILN_ERR_UNSUPPORTED, op, 0,
                   "the minimum-norm (SVD) route of lstsq runs on the host through LAPACKE, and "
                   "this kiln was built without it (meson -Dlapacke=enabled with liblapacke-dev "
                   "installed)");
#if KILN_HAVE_LAPACKE
  if (s == KILN_OK && any_svd)
    s = LSQ_DOWNLOAD(&L, a, &ha);
  if (s == KILN_OK && any_svd)
    s = LSQ_DOWNLOAD(&L, b, &hb);
  uint64_t ldb = m > n ? m : n;
  LSQ_T *bw = NULL;
  if (s == KILN_OK && any_svd)
    s = host_mem(op, (bw = calloc(ldb * (nrhs ? nrhs : 1) + 1, sizeof *bw)) != NULL);
  for (uint64_t i = 0; s == KILN_OK && i < batch; i++) {
    if (!via_svd[i])
      continue;
    memcpy(bw, hb + i * m * nrhs, m * nrhs * sizeof *bw);
    memset(bw + m * nrhs, 0, (ldb - m) * nrhs * sizeof *bw);
    lapack_int r_ = 0;
    lapack_int info = m == 0
                          ? 0
                          : LSQ_GELSD(LAPACK_ROW_MAJOR, (lapack_int)m, (lapack_int)n,
                                      (lapack_int)(nrhs ? nrhs : 1), ha + i * m * n, (lapack_int)n,
                                      bw, (lapack_int)(nrhs ? nrhs : 1), hs + i * kk, cut, &r_);
    if (info > 0) {
      s = kiln__fail(KILN_ERR_NO_CONVERGENCE, op, (int)info,
                     "LAPACK %s did not converge on matrix %llu of the batch (info %d)",
                     LSQ_GELSD_NAME, (unsigned long long)i, (int)info);
      break;
    }
    if (info < 0) {
      s = kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, (int)info, "LAPACK %s refused argument %d",
                     LSQ_GELSD_NAME, (int)-info);
      break;
    }
    hr[i] = r_;
    if (m == 0) /* no equations: x = 0 */
      continue;
    memcpy(hx + i * n * nrhs, bw, n * nrhs * sizeof *bw);
    for (uint64_t c = 0; c < nrhs; c++) {
      double r2 = 0.0;
      for (uint64_t j = n; j < m; j++)
        r2 += LSQ_ABS2(bw[j * nrhs + c]);
      hres[i * nrhs + c] = r2;
    }
  }
  free(bw);
#else
  (void)cut;
#endif
  if (s == KILN_OK)
    s = LSQ_UPLOAD(&L, *x, hx);
  if (s == KILN_OK && sv)
    s = LSQ_UPLOAD_REAL(&L, *sv, hs);
  if (s == KILN_OK && rank && batch) {
    cl_int err = clEnqueueWriteBuffer(ctx->queue, (*rank)->mem, CL_TRUE, (*rank)->offset,
                                      batch * sizeof *hr, hr, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      s = kiln__fail_cl(op, err, "clEnqueueWriteBuffer");
  }
  if (s == KILN_OK && residuals) {
    int all_full = m > n;
    for (uint64_t i = 0; all_full && i < batch; i++)
      all_full = hr[i] == (int64_t)n;
    int64_t rt[1] = {all_full ? (int64_t)nrhs : 0};
    kiln__shape res = all_full ? kiln__lsp_shape(a, rt, 1) : (kiln__shape){.ndim = 1};
    s = kiln__lsp_out(&o, op, ctx, rdt, &res, residuals);
    if (s == KILN_OK && all_full)
      s = LSQ_UPLOAD_REAL(&L, *residuals, hres);
  }
  kiln_tensor_release(qa);
  kiln_tensor_release(qb);
  free(ha);
  free(hb);
  free(hx);
  free(hres);
  free(hs);
  free(hr);
  free(via_svd);
  s = kiln__lsp_outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

#undef LSQ_FN
#undef LSQ_T
#undef LSQ_CHECK_MAT
#undef LSQ_ABS
#undef LSQ_ABS2
#undef LSQ_DOWNLOAD
#undef LSQ_UPLOAD
#undef LSQ_UPLOAD_REAL
#undef LSQ_GELSD
#undef LSQ_GELSD_NAME
#undef LSQ_SVALS
