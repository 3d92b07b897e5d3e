/*
 * The complex (c64, c128) lstsq, eigh and svd of the linalg_spectral family: kiln_linalg_lstsq,
 * kiln_linalg_eigh and kiln_linalg_svd (lib/ops/linalg_eig.c) hand complex a over to the
 * functions here.
 *
 * eigh and svd run whole on the host (LAPACKE zheevd, zgesdd), as eig, pinv and the SVD route
 * of lstsq do for real matrices: the device reductions to tridiagonal and bidiagonal form that
 * the real eigh and svd use are real only (docs/linalg.md, "Complex matrices").
 *
 * lstsq is the real routine's body (lib/ops/linalg_lstsq_body.h) in complex arithmetic: Q^H B
 * on the device (ormqr), zgelsd and zgesvd on the host. x is complex, the residuals and
 * singular values real (f32 for c64, f64 for c128), rank i64.
 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "core/shape.h"
#include "kiln/linalg_spectral.h"
#include "kiln_config.h"
#include "ops/linalg_spectral_internal.h"
#include "ops/ops_common.h"
#if KILN_HAVE_LAPACKE
#include <lapacke.h>
#endif

typedef double complex zc;

/* t's complex elements as double complex (ctx->lock held; waits). */
static kiln_status
down_c(const char *op, kiln_context *ctx, const kiln_tensor *t, zc **out)
{
  uint64_t n = t->numel;
  zc *d = malloc((n ? n : 1) * sizeof *d);
  KILN_RETURN_IF(!d, KILN_ERR_HOST_MEMORY, op, "no memory for %llu elements on the host",
                 (unsigned long long)n);
  kiln_status s = n ? kiln__ops_read(op, ctx, t, 0, d, n * kiln_dtype_size(t->dtype)) : KILN_OK;
  /* c64 widens in place from the back */
  if (s == KILN_OK && t->dtype == KILN_C64)
    for (uint64_t i = n; i-- > 0;)
      d[i] = CMPLX(((float *)d)[2 * i], ((float *)d)[2 * i + 1]);
  if (s != KILN_OK) {
    free(d);
    d = NULL;
  }
  *out = d;
  return s;
}

/* v (n values: complex when cplx, else real) to t, narrowed to t's dtype (waits). */
static kiln_status
up_any(const char *op, kiln_context *ctx, kiln_tensor *t, const void *v, int cplx)
{
  uint64_t n = t->numel, parts = cplx ? 2 : 1;
  if (n == 0)
    return KILN_OK;
  const double *src = v;
  const void *data = src;
  float *f = NULL;
  if (t->dtype == KILN_C64 || t->dtype == KILN_F32) {
    f = malloc(n * parts * sizeof *f);
    KILN_RETURN_IF(!f, KILN_ERR_HOST_MEMORY, op, "no memory for %llu elements on the host",
                   (unsigned long long)n);
    for (uint64_t i = 0; i < n * parts; i++)
      f[i] = (float)src[i];
    data = f;
  }
  cl_int err = clEnqueueWriteBuffer(ctx->queue, t->mem, CL_TRUE, t->offset,
                                    n * kiln_dtype_size(t->dtype), data, 0, NULL, NULL);
  free(f);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "clEnqueueWriteBuffer");
}

static kiln_status
host_mem(const char *op, int ok)
{
  return ok ? KILN_OK : kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "no memory for host workspaces");
}

#if KILN_HAVE_LAPACKE
static kiln_status
lapack_fail(const char *op, const char *routine, uint64_t b, lapack_int info)
{
  return kiln__fail(info > 0 ? KILN_ERR_NO_CONVERGENCE : KILN_ERR_INTERNAL, op, (int)info,
                    "LAPACK %s failed on matrix %llu of the batch (info %d)", routine,
                    (unsigned long long)b, (int)info);
}

/* The singular values of lstsq's n x n R (destroyed), descending, into s[n]. */
static kiln_status
r_svals(const char *op, uint64_t b, zc *r, uint64_t n, double *s)
{
  double *sup = malloc((n + 1) * sizeof *sup);
  KILN_TRY(host_mem(op, sup != NULL));
  lapack_int info = LAPACKE_zgesvd(LAPACK_ROW_MAJOR, 'N', 'N', (lapack_int)n, (lapack_int)n, r,
                                   (lapack_int)n, s, NULL, 1, NULL, 1, sup);
  free(sup);
  return info == 0 ? KILN_OK : lapack_fail(op, "zgesvd", b, info);
}
#endif

#define LSQ_FN lstsq_complex
#define LSQ_T zc
#define LSQ_CHECK_MAT kiln__lsp_check_mat_complex
#define LSQ_ABS(x) cabs(x)
#define LSQ_ABS2(x) creal((x)*conj(x))
#define LSQ_DOWNLOAD(L, t, out) down_c((L)->op, (L)->ctx, (t), (out))
#define LSQ_UPLOAD(L, t, v) up_any((L)->op, (L)->ctx, (t), (v), 1)
#define LSQ_UPLOAD_REAL(L, t, v) up_any((L)->op, (L)->ctx, (t), (v), 0)
#define LSQ_GELSD LAPACKE_zgelsd
#define LSQ_GELSD_NAME "zgelsd"
#define LSQ_SVALS(op, b, r, n, s) r_svals((op), (b), (r), (n), (s))
#include "ops/linalg_lstsq_body.h"

kiln_status
kiln__lsp_lstsq_complex(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b, double rcond,
                        kiln_tensor **x, kiln_tensor **residuals, kiln_tensor **rank,
                        kiln_tensor **sv)
{
  return lstsq_complex(ctx, a, b, rcond, x, residuals, rank, sv);
}

static kiln_status
no_lapacke(const char *op, const char *what)
{
  return kiln__fail(KILN_ERR_UNSUPPORTED, op, 0,
                    "%s runs on the host through LAPACKE, and this kiln was built without it",
                    what);
}

kiln_status
kiln__lsp_eigh_complex(kiln_context *ctx, const kiln_tensor *a, kiln_uplo uplo, kiln_tensor **w,
                       kiln_tensor **v)
{
  static const char op[] = "kiln_linalg_eigh";
  KILN_TRY(kiln__lsp_check_mat_complex(op, ctx, a, "a"));
  KILN_TRY(kiln__lsp_check_square(op, a, "a"));
  KILN_RETURN_IF(uplo != KILN_UPPER && uplo != KILN_LOWER, KILN_ERR_INVALID_ARGUMENT, op,
                 "uplo is %d, not KILN_UPPER or KILN_LOWER", (int)uplo);
  KILN_RETURN_IF(!w, KILN_ERR_INVALID_ARGUMENT, op, "w is NULL");
  if (!KILN_HAVE_LAPACKE)
    return no_lapacke(op, "the complex eigh");
  size_t nd = a->shape.ndim;
  uint64_t n = (uint64_t)a->shape.dims[nd - 1], batch = kiln__lsp_batch(a);
  int64_t wt[1] = {(int64_t)n}, vt[2] = {(int64_t)n, (int64_t)n};
  kiln__shape wsh = kiln__lsp_shape(a, wt, 1), vsh = kiln__lsp_shape(a, vt, 2);
  kiln__lsp L = kiln__lsp_begin(op, ctx, a);
  kiln__lsp_outs o = {0};
  kiln_status s = kiln__lsp_out(&o, op, ctx, kiln__dtype_real_part(a->dtype), &wsh, w);
  if (s == KILN_OK && v)
    s = kiln__lsp_out(&o, op, ctx, a->dtype, &vsh, v);
  if (s == KILN_OK)
    s = kiln__lsp_outs_check(&o, op, a, NULL);
  zc *ha = NULL;
  double *hw = NULL;
  if (s == KILN_OK)
    s = host_mem(op, (hw = calloc(batch * n + 1, sizeof *hw)) != NULL);
  if (s == KILN_OK)
    s = down_c(op, ctx, a, &ha);
#if KILN_HAVE_LAPACKE
  for (uint64_t b = 0; s == KILN_OK && b < batch && n; b++) {
    lapack_int info =
        LAPACKE_zheevd(LAPACK_ROW_MAJOR, v ? 'V' : 'N', uplo == KILN_UPPER ? 'U' : 'L',
                       (lapack_int)n, ha + b * n * n, (lapack_int)n, hw + b * n);
    if (info != 0)
      s = lapack_fail(op, "zheevd", b, info);
  }
#endif
  if (s == KILN_OK)
    s = up_any(op, ctx, *w, hw, 0);
  if (s == KILN_OK && v)
    s = up_any(op, ctx, *v, ha, 1);
  free(ha);
  free(hw);
  (void)L;
  s = kiln__lsp_outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln__lsp_svd_complex(kiln_context *ctx, const kiln_tensor *a, int full_matrices, kiln_tensor **u,
                      kiln_tensor **s, kiln_tensor **vt)
{
  static const char op[] = "kiln_linalg_svd";
  KILN_TRY(kiln__lsp_check_mat_complex(op, ctx, a, "a"));
  KILN_RETURN_IF(!s, KILN_ERR_INVALID_ARGUMENT, op, "s is NULL");
  KILN_RETURN_IF(!u != !vt, KILN_ERR_INVALID_ARGUMENT, op,
                 "u and vt must both be given or both be NULL");
  if (!KILN_HAVE_LAPACKE)
    return no_lapacke(op, "the complex svd");
  size_t nd = a->shape.ndim;
  uint64_t m = (uint64_t)a->shape.dims[nd - 2], n = (uint64_t)a->shape.dims[nd - 1];
  uint64_t k = m < n ? m : n, batch = kiln__lsp_batch(a);
  uint64_t uc = full_matrices ? m : k, vr = full_matrices ? n : k;
  int64_t st[1] = {(int64_t)k}, ut[2] = {(int64_t)m, (int64_t)uc},
          vtt[2] = {(int64_t)vr, (int64_t)n};
  kiln__shape ss = kiln__lsp_shape(a, st, 1), us = kiln__lsp_shape(a, ut, 2),
              vs = kiln__lsp_shape(a, vtt, 2);
  kiln__lsp L = kiln__lsp_begin(op, ctx, a);
  kiln__lsp_outs o = {0};
  kiln_status st_ = kiln__lsp_out(&o, op, ctx, kiln__dtype_real_part(a->dtype), &ss, s);
  if (st_ == KILN_OK && u)
    st_ = kiln__lsp_out(&o, op, ctx, a->dtype, &us, u);
  if (st_ == KILN_OK && u)
    st_ = kiln__lsp_out(&o, op, ctx, a->dtype, &vs, vt);
  if (st_ == KILN_OK)
    st_ = kiln__lsp_outs_check(&o, op, a, NULL);
  zc *ha = NULL, *hu = NULL, *hv = NULL;
  double *hs = NULL;
  if (st_ == KILN_OK) {
    hs = calloc(batch * k + 1, sizeof *hs);
    hu = u ? calloc(batch * m * uc + 1, sizeof *hu) : NULL;
    hv = u ? calloc(batch * vr * n + 1, sizeof *hv) : NULL;
    st_ = host_mem(op, hs && (!u || (hu && hv)));
  }
  if (st_ == KILN_OK)
    st_ = down_c(op, ctx, a, &ha);
  for (uint64_t b = 0; st_ == KILN_OK && b < batch; b++) {
    zc *U = u ? hu + b * m * uc : NULL, *V = u ? hv + b * vr * n : NULL;
    if (k == 0) { /* no singular values: U and V^H are identities (full), or empty */
      for (uint64_t i = 0; u && i < m && i < uc; i++)
        U[i * uc + i] = 1;
      for (uint64_t i = 0; u && i < vr && i < n; i++)
        V[i * n + i] = 1;
      continue;
    }
#if KILN_HAVE_LAPACKE
    /* jobz 'N' never touches U and V^H, but LAPACKE checks their leading dimensions */
    zc dummy = 0;
    lapack_int info =
        LAPACKE_zgesdd(LAPACK_ROW_MAJOR, u ? (full_matrices ? 'A' : 'S') : 'N', (lapack_int)m,
                       (lapack_int)n, ha + b * m * n, (lapack_int)n, hs + b * k, u ? U : &dummy,
                       u ? (lapack_int)uc : (lapack_int)m, u ? V : &dummy, (lapack_int)n);
    if (info != 0)
      st_ = lapack_fail(op, "zgesdd", b, info);
#endif
  }
  if (st_ == KILN_OK)
    st_ = up_any(op, ctx, *s, hs, 0);
  if (st_ == KILN_OK && u)
    st_ = up_any(op, ctx, *u, hu, 1);
  if (st_ == KILN_OK && u)
    st_ = up_any(op, ctx, *vt, hv, 1);
  free(ha);
  free(hu);
  free(hv);
  free(hs);
  (void)L;
  st_ = kiln__lsp_outs_end(&o, st_);
  kiln__ctx_unlock(ctx);
  return st_;
}

#if KILN_HAVE_LAPACKE
/*
 * The singular values of the m x n row-major complex x (destroyed), descending, into s[min(m,
 * n)] (zgesdd jobz 'N'); with u (m x k) and vt (k x n) when u is given (jobz 'S').
 */
static kiln_status
host_zsvd(const char *op, uint64_t b, zc *x, uint64_t m, uint64_t n, double *s, zc *u, zc *vt)
{
  uint64_t k = m < n ? m : n;
  if (k == 0)
    return KILN_OK;
  zc dummy = 0;
  lapack_int info = LAPACKE_zgesdd(
      LAPACK_ROW_MAJOR, u ? 'S' : 'N', (lapack_int)m, (lapack_int)n, x, (lapack_int)n, s,
      u ? u : &dummy, u ? (lapack_int)k : (lapack_int)m, u ? vt : &dummy, (lapack_int)n);
  return info == 0 ? KILN_OK : lapack_fail(op, "zgesdd", b, info);
}
#endif

kiln_status
kiln__lsp_pinv_complex(kiln_context *ctx, const kiln_tensor *a, double rcond, kiln_tensor **out)
{
  static const char op[] = "kiln_linalg_pinv";
  KILN_TRY(kiln__lsp_check_mat_complex(op, ctx, a, "a"));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_RETURN_IF(isnan(rcond), KILN_ERR_INVALID_ARGUMENT, op, "rcond is NaN");
  if (!KILN_HAVE_LAPACKE)
    return no_lapacke(op, "pinv");
  size_t nd = a->shape.ndim;
  uint64_t m = (uint64_t)a->shape.dims[nd - 2], n = (uint64_t)a->shape.dims[nd - 1];
  uint64_t k = m < n ? m : n, batch = kiln__lsp_batch(a);
  int64_t pt[2] = {(int64_t)n, (int64_t)m};
  kiln__shape ps = kiln__lsp_shape(a, pt, 2);
  if (rcond < 0)
    rcond = (a->dtype == KILN_C64 ? 0x1p-23 : 0x1p-52) * (double)(m > n ? m : n);
  kiln__lsp L = kiln__lsp_begin(op, ctx, a);
  kiln__lsp_outs o = {0};
  kiln_status s = kiln__lsp_out(&o, op, ctx, a->dtype, &ps, out);
  if (s == KILN_OK)
    s = kiln__lsp_outs_check(&o, op, a, NULL);
  zc *h = NULL, *hu = NULL, *hv = NULL, *hp = NULL;
  double *hs = NULL;
  if (s == KILN_OK)
    s = down_c(op, ctx, a, &h);
  if (s == KILN_OK) {
    hs = malloc((k + 1) * sizeof *hs);
    hu = malloc((m * k + 1) * sizeof *hu);
    hv = malloc((k * n + 1) * sizeof *hv);
    hp = calloc(batch * n * m + 1, sizeof *hp);
    s = host_mem(op, hs && hu && hv && hp);
  }
#if KILN_HAVE_LAPACKE
  for (uint64_t b = 0; s == KILN_OK && b < batch; b++) {
    s = host_zsvd(op, b, h + b * m * n, m, n, hs, hu, hv);
    double cut = k ? rcond * hs[0] : 0.0;
    zc *P = hp + b * n * m;
    /* pinv = V diag(1/s) U^H over the singular values above the cutoff (V = (V^H)^H) */
    for (uint64_t l = 0; s == KILN_OK && l < k; l++) {
      if (!(hs[l] > cut))
        break;
      double r = 1.0 / hs[l];
      for (uint64_t i = 0; i < n; i++) {
        zc vi = conj(hv[l * n + i]) * r;
        for (uint64_t j = 0; j < m; j++)
          P[i * m + j] += vi * conj(hu[j * k + l]);
      }
    }
  }
#endif
  if (s == KILN_OK)
    s = up_any(op, ctx, *out, hp, 1);
  free(h);
  free(hs);
  free(hu);
  free(hv);
  free(hp);
  (void)L;
  s = kiln__lsp_outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/* Singular values of every matrix of complex a, [batch][min(m, n)] (ctx->lock held). */
static kiln_status
batch_zsvals(const char *op, kiln_context *ctx, const kiln_tensor *a, double **out)
{
  size_t nd = a->shape.ndim;
  uint64_t m = (uint64_t)a->shape.dims[nd - 2], n = (uint64_t)a->shape.dims[nd - 1];
  uint64_t k = m < n ? m : n, batch = kiln__lsp_batch(a);
  zc *h = NULL;
  double *sv = calloc(batch * k + 1, sizeof *sv);
  kiln_status s = host_mem(op, sv != NULL);
  if (s == KILN_OK)
    s = down_c(op, ctx, a, &h);
#if KILN_HAVE_LAPACKE
  for (uint64_t b = 0; s == KILN_OK && b < batch; b++)
    s = host_zsvd(op, b, h + b * m * n, m, n, sv + b * k, NULL, NULL);
#endif
  free(h);
  if (s != KILN_OK) {
    free(sv);
    sv = NULL;
  }
  *out = sv;
  return s;
}

kiln_status
kiln__lsp_rank_complex(kiln_context *ctx, const kiln_tensor *a, double tol, kiln_tensor **out)
{
  static const char op[] = "kiln_linalg_matrix_rank";
  KILN_TRY(kiln__lsp_check_mat_complex(op, ctx, a, "a"));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_RETURN_IF(isnan(tol), KILN_ERR_INVALID_ARGUMENT, op, "tol is NaN");
  if (!KILN_HAVE_LAPACKE)
    return no_lapacke(op, "matrix_rank");
  size_t nd = a->shape.ndim;
  uint64_t m = (uint64_t)a->shape.dims[nd - 2], n = (uint64_t)a->shape.dims[nd - 1];
  uint64_t k = m < n ? m : n, batch = kiln__lsp_batch(a);
  double eps = a->dtype == KILN_C64 ? 0x1p-23 : 0x1p-52;
  kiln__shape rs = kiln__lsp_shape(a, NULL, 0);
  kiln__lsp L = kiln__lsp_begin(op, ctx, a);
  kiln__lsp_outs o = {0};
  kiln_status s = kiln__lsp_out(&o, op, ctx, KILN_I64, &rs, out);
  if (s == KILN_OK)
    s = kiln__lsp_outs_check(&o, op, a, NULL);
  double *sv = NULL;
  int64_t *r = NULL;
  if (s == KILN_OK)
    s = batch_zsvals(op, ctx, a, &sv);
  if (s == KILN_OK)
    s = host_mem(op, (r = malloc((batch + 1) * sizeof *r)) != NULL);
  for (uint64_t b = 0; s == KILN_OK && b < batch; b++) {
    double t = tol >= 0 ? tol : (k ? sv[b * k] : 0.0) * (double)(m > n ? m : n) * eps;
    r[b] = 0;
    for (uint64_t l = 0; l < k; l++)
      r[b] += sv[b * k + l] > t;
  }
  if (s == KILN_OK && batch) {
    cl_int err = clEnqueueWriteBuffer(ctx->queue, (*out)->mem, CL_TRUE, (*out)->offset,
                                      batch * sizeof *r, r, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      s = kiln__fail_cl(op, err, "clEnqueueWriteBuffer");
  }
  free(sv);
  free(r);
  (void)L;
  s = kiln__lsp_outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln__lsp_norm_complex(const char *op, kiln_context *ctx, const kiln_tensor *a, kiln_mnorm p,
                       int cond, kiln_tensor **out)
{
  KILN_TRY(kiln__lsp_check_mat_complex(op, ctx, a, "a"));
  KILN_RETURN_IF(p < KILN_MNORM_FRO || p > KILN_MNORM_NEG_INF, KILN_ERR_INVALID_ARGUMENT, op,
                 "%s is %d, not a kiln_mnorm", cond ? "p" : "ord", (int)p);
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  int svd_p = p == KILN_MNORM_NUC || p == KILN_MNORM_2 || p == KILN_MNORM_NEG2;
  int svd = svd_p && !(cond && p == KILN_MNORM_NUC);
  if (cond && !svd)
    KILN_TRY(kiln__lsp_check_square(op, a, "a (cond with a norm other than 2 and -2)"));
  if ((svd || cond) && !KILN_HAVE_LAPACKE)
    return no_lapacke(op, cond ? "cond" : "the 2-norm and nuclear norms");
  size_t nd = a->shape.ndim;
  uint64_t m = (uint64_t)a->shape.dims[nd - 2], n = (uint64_t)a->shape.dims[nd - 1];
  uint64_t k = m < n ? m : n, batch = kiln__lsp_batch(a);
  kiln__shape rs = kiln__lsp_shape(a, NULL, 0);
  kiln__lsp L = kiln__lsp_begin(op, ctx, a);
  kiln__lsp_outs o = {0};
  kiln_status s = kiln__lsp_out(&o, op, ctx, kiln__dtype_real_part(a->dtype), &rs, out);
  if (s == KILN_OK)
    s = kiln__lsp_outs_check(&o, op, a, NULL);
  zc *h = NULL, *inv = NULL;
  double *r = NULL, *sv = NULL, *mod = NULL, *s1 = NULL;
  if (s == KILN_OK)
    s = host_mem(op, (r = malloc((batch + 1) * sizeof *r)) != NULL);
  if (s == KILN_OK && svd)
    s = batch_zsvals(op, ctx, a, &sv);
  else if (s == KILN_OK)
    s = down_c(op, ctx, a, &h);
  if (s == KILN_OK && !svd)
    s = host_mem(op, (mod = malloc((m * n + 1) * sizeof *mod)) != NULL);
  if (s == KILN_OK && cond && !svd) {
    inv = malloc((n * n + 1) * sizeof *inv);
    s1 = malloc((n + 1) * sizeof *s1);
    s = host_mem(op, inv && s1);
  }
  for (uint64_t b = 0; s == KILN_OK && b < batch; b++) {
    if (svd) {
      const double *sb = sv + b * k;
      double big = k ? sb[0] : 0.0, small = k ? sb[k - 1] : 0.0;
      r[b] = !cond               ? kiln__lsp_norm_svals(sb, k, p)
             : k == 0            ? 0.0
             : p == KILN_MNORM_2 ? big / small
                                 : small / big;
      continue;
    }
    const zc *x = h + b * m * n;
    for (uint64_t i = 0; i < m * n; i++)
      mod[i] = cabs(x[i]);
    if (!cond) { /* the norms without singular values are those of the moduli */
      r[b] = kiln__lsp_norm_direct(mod, m, n, p);
      continue;
    }
#if KILN_HAVE_LAPACKE
    memcpy(inv, x, n * n * sizeof *inv);
    lapack_int *ip = malloc((n + 1) * sizeof *ip);
    s = host_mem(op, ip != NULL);
    if (s != KILN_OK)
      break;
    lapack_int info =
        n ? LAPACKE_zgetrf(LAPACK_ROW_MAJOR, (lapack_int)n, (lapack_int)n, inv, (lapack_int)n, ip)
          : 0;
    if (info > 0) {
      r[b] = INFINITY;
    } else if (p == KILN_MNORM_NUC) {
      /* sum s * sum 1/s from A's singular values */
      memcpy(inv, x, n * n * sizeof *inv);
      s = host_zsvd(op, b, inv, n, n, s1, NULL, NULL);
      double t1 = 0, t2 = 0;
      for (uint64_t i = 0; s == KILN_OK && i < n; i++) {
        t1 += s1[i];
        t2 += 1.0 / s1[i];
      }
      r[b] = t1 * t2;
    } else {
      if (n)
        info = LAPACKE_zgetri(LAPACK_ROW_MAJOR, (lapack_int)n, inv, (lapack_int)n, ip);
      double na = kiln__lsp_norm_direct(mod, n, n, p);
      for (uint64_t i = 0; i < n * n; i++)
        mod[i] = cabs(inv[i]);
      r[b] = info > 0 ? INFINITY : na * kiln__lsp_norm_direct(mod, n, n, p);
    }
    free(ip);
#endif
  }
  if (s == KILN_OK)
    s = up_any(op, ctx, *out, r, 0);
  free(h);
  free(inv);
  free(r);
  free(sv);
  free(mod);
  free(s1);
  (void)L;
  s = kiln__lsp_outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}
