/*
 * linalg_spectral family: eigh's tridiagonal eigenproblem on the device
 * (cl_kernels/linalg_tridiag.cl, docs/linalg.md "The tridiagonal stage on the device").
 *
 * The host's MRRR spent most of eigh's time at large orders (0.51 s of 0.69 at 4096 on the
 * H200), and most of that in bisection, which is one independent search per eigenvalue: the
 * device's kind of work. So:
 *   1. every eigenvalue of T by multisection on Sturm counts (absolute accuracy, eps ||T||);
 *   2. the spectrum cut into groups of about KILN__TD_GROUP eigenvalues at the widest gaps;
 *      each group gets a representation L D L^T = T - sigma I with sigma in the gap on its
 *      left or right (the smaller pivots), in which its eigenvalues are found again to
 *      relative accuracy (as MRRR's child representations: the vectors' errors then scale
 *      with |lambda - sigma|, a few gaps, not with ||T||);
 *   3. each vector by the twisted factorization of L D L^T - mu I (dlar1v);
 *   4. eigenvalues too close to their neighbours even for that (TD_MINRGP) go to the host's
 *      dstemr, their index range only;
 *   5. a Cholesky QR per group through the diagonal blocks of Z^T Z (one GEMM), which makes
 *      the vectors of close eigenvalues in one group orthonormal again;
 *   6. checks: ||Z^T Z - I|| outside those blocks and every vector's residual against T. A
 *      matrix that fails them (or has too many close eigenvalues, or non-finite entries) goes
 *      wholly to the host route, so the device route never returns vectors past the bounds
 *      below.
 */
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/log.h"
#include "kiln/linalg_spectral.h"
#include "kiln_config.h"
#include "ops/linalg_internal.h"
#include "ops/linalg_spectral_internal.h"
#include "ops/ops_common.h"
#if KILN_HAVE_LAPACKE
#include <lapacke.h>
#endif

#define SRC "linalg_tridiag"
/* td_cholqr's lanes, its widest group and its local memory (cl_kernels/linalg_tridiag.cl's
 * TD_QR, TD_QM, r and xs) */
#define KILN__TD_QR 32
#define KILN__TD_QM 48
#define TD_LOCAL_BYTES ((KILN__TD_QM * KILN__TD_QM + KILN__TD_QR * (KILN__TD_QM + 1)) * 8)

/* Acceptance: ||Z^T Z - I||_F <= TD_ORTH n eps and ||T Z - Z W||_F <= TD_RES n eps ||T||. */
#define TD_ORTH 10.0
#define TD_RES 10.0
/*
 * The relative gap below which an eigenvalue's vector comes from the host. MRRR's bound is
 * 1e-3; here the group's Cholesky QR repairs what closer eigenvalues cost (their vectors lean
 * by about eps / relgap times the pivots' growth, far from parallel at 1e-6), and the checks
 * catch the rest. At 1e-3 four values of a random 4096 went to the host, whose dstemr calls
 * cost about 10 ms a call on the H200 (blocking writes of their columns).
 */
#define TD_MINRGP 1e-6

static atomic_int hook_mode = -1, hook_group = -1;
static _Atomic double hook_flag = 0.0;
static atomic_uint accepted; /* matrices whose vectors the device stage gave */

void
kiln__linalg_spectral_test_tdev(int mode, int group, double flag_gap)
{
  atomic_store(&hook_mode, mode);
  atomic_store(&hook_group, group);
  atomic_store(&hook_flag, flag_gap);
}

int
kiln__lsp_tdev_hook(void)
{
  return atomic_load(&hook_mode);
}

unsigned
kiln__linalg_spectral_test_tdev_accepted(void)
{
  return atomic_load(&accepted);
}

/* Eigenvalues per group, and the most groups that gives for n. */
static uint64_t
group_size(void)
{
  /* td_cholqr takes groups of up to KILN__TD_QM: 1.25 times the size at most (td_groups) */
  int h = atomic_load(&hook_group);
  return h >= 4 && h <= 32 ? (uint64_t)h : KILN__TD_GROUP;
}

static uint64_t
max_groups(uint64_t n)
{
  uint64_t g = group_size();
  return n / (g - g / 4) + 2;
}

static kiln_status
kern(const kiln__lsp *L, const char *name, cl_kernel *k)
{
  return kiln__ops_kernel(L->op, L->ctx, SRC, KILN_F64, name, k);
}

static kiln_status
put(const kiln__lsp *L, kiln_tensor *t, const void *src, size_t bytes)
{
  cl_int err =
      clEnqueueWriteBuffer(L->ctx->queue, t->mem, CL_TRUE, t->offset, bytes, src, 0, NULL, NULL);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(L->op, err, "clEnqueueWriteBuffer");
}

/* Multisection (cl_kernels/linalg_tridiag.cl): TD_MS lanes per eigenvalue, TD_MSG a group;
 * td_refine's rounds from its bracket of 32 atol (2 ulp of values down to about 1e-5 ||T||;
 * lane 0 bisects past that) */
#define TD_MS 8
#define TD_MSG 64
#define TD_REFINE_ROUNDS 7

static size_t
ms_global(uint64_t n)
{
  return (size_t)((n + TD_MSG / TD_MS - 1) / (TD_MSG / TD_MS)) * TD_MSG;
}

/* Scratch tensors own their buffers (element offset 0): the kernels take plain pointers. */
static void
targ(kiln__args *a, const kiln_tensor *t)
{
  kiln__args_mem(a, t->mem);
}

static kiln_status
launch(const kiln__lsp *L, kiln__args *a, uint64_t count)
{
  return kiln__args_launch_1d(a, L->ctx, count, 0);
}

/* Group cuts: about g eigenvalues each, cut at the widest gap within g/4 of the even cut. */
static uint64_t
td_groups(const double *w, uint64_t n, uint64_t g, uint64_t *start)
{
  uint64_t ng = 0, s = 0, reach = g / 4 ? g / 4 : 1;
  while (s < n) {
    start[ng++] = s;
    uint64_t c = s + g;
    if (c + reach >= n) /* the rest is one group */
      break;
    uint64_t best = c;
    for (uint64_t j = c - reach; j <= c + reach; j++)
      if (w[j] - w[j - 1] > w[best] - w[best - 1])
        best = j;
    s = best;
  }
  start[ng] = n;
  return ng;
}

#if KILN_HAVE_LAPACKE
/* Pairs k0 .. k1 (0-based) of T by the host's dstemr into w and the columns of z (f64). */
static kiln_status
host_range(const kiln__lsp *L, uint64_t n, const double *d, const double *e, uint64_t k0,
           uint64_t k1, double *w, kiln_tensor *z, int *ok)
{
  uint64_t m = k1 - k0 + 1;
  double *dc = malloc(n * sizeof *dc), *ec = malloc(n * sizeof *ec), *wt = malloc(n * sizeof *wt);
  double *zc = malloc(n * m * sizeof *zc), *zr = malloc(n * m * sizeof *zr);
  lapack_int *supp = malloc(2 * m * sizeof *supp), found = 0, tryrac = 1;
  kiln_status s = KILN_OK;
  *ok = 0;
  if (!dc || !ec || !wt || !zc || !zr || !supp) {
    s = kiln__fail(KILN_ERR_HOST_MEMORY, L->op, 0, "no memory for %llu eigenvectors on the host",
                   (unsigned long long)m);
  } else {
    memcpy(dc, d, n * sizeof *dc);
    memcpy(ec, e, n * sizeof *ec);
    ec[n - 1] = 0.0;
    lapack_int info = LAPACKE_dstemr(LAPACK_COL_MAJOR, 'V', 'I', (lapack_int)n, dc, ec, 0.0, 0.0,
                                     (lapack_int)(k0 + 1), (lapack_int)(k1 + 1), &found, wt, zc,
                                     (lapack_int)n, (lapack_int)m, supp, &tryrac);
    if (info == 0 && (uint64_t)found == m) {
      for (uint64_t j = 0; j < m; j++) {
        w[k0 + j] = wt[j];
        for (uint64_t i = 0; i < n; i++)
          zr[i * m + j] = zc[j * n + i];
      }
      size_t origin[3] = {(size_t)(z->offset + k0 * 8), 0, 0}, region[3] = {(size_t)(m * 8), n, 1};
      size_t zero[3] = {0, 0, 0};
      cl_int err = clEnqueueWriteBufferRect(L->ctx->queue, z->mem, CL_TRUE, origin, zero, region,
                                            n * 8, 0, m * 8, 0, zr, 0, NULL, NULL);
      if (err != CL_SUCCESS)
        s = kiln__fail_cl(L->op, err, "clEnqueueWriteBufferRect (eigenvectors)");
      *ok = s == KILN_OK;
    }
  }
  free(dc);
  free(ec);
  free(wt);
  free(zc);
  free(zr);
  free(supp);
  return s;
}
#endif

/* The scratch of one call (kiln__lsp_tdev_release frees it). */
struct kiln__lsp_tdev {
  kiln_tensor *t, *w0, *w, *res, *cand, *growth, *grp, *gs, *rep, *z, *g;
  uint64_t n;
};

void
kiln__lsp_tdev_release(kiln__lsp_tdev *s)
{
  if (!s)
    return;
  kiln_tensor *all[] = {s->t,   s->w0, s->w,   s->res, s->cand, s->growth,
                        s->grp, s->gs, s->rep, s->z,   s->g};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    kiln_tensor_release(all[i]);
  free(s);
}

static kiln_status
scratch(const kiln__lsp *L, kiln__lsp_tdev **ws, uint64_t n, int vectors)
{
  kiln__lsp_tdev *s = *ws;
  if (s && s->n == n && (!vectors || s->z))
    return KILN_OK;
  kiln__lsp_tdev_release(s);
  *ws = s = calloc(1, sizeof *s);
  KILN_RETURN_IF(!s, KILN_ERR_HOST_MEMORY, L->op, "no memory for the tridiagonal stage's state");
  s->n = n;
  uint64_t gmax = max_groups(n);
  const char *op = L->op;
  kiln_context *ctx = L->ctx;
  kiln_status st = kiln__ops_scratch(op, ctx, KILN_F64, 3 * n, &s->t);
  if (st == KILN_OK)
    st = kiln__ops_scratch(op, ctx, KILN_F64, n, &s->w0);
  if (st == KILN_OK && vectors) {
    st = kiln__ops_scratch(op, ctx, KILN_F64, n, &s->w);
    if (st == KILN_OK)
      st = kiln__ops_scratch(op, ctx, KILN_F64, n, &s->res);
    if (st == KILN_OK)
      st = kiln__ops_scratch(op, ctx, KILN_F64, 2 * gmax, &s->cand);
    if (st == KILN_OK)
      st = kiln__ops_scratch(op, ctx, KILN_F64, 2 * gmax, &s->growth);
    if (st == KILN_OK)
      st = kiln__ops_scratch(op, ctx, KILN_I32, n, &s->grp);
    if (st == KILN_OK)
      st = kiln__ops_scratch(op, ctx, KILN_I32, gmax + 1, &s->gs);
    if (st == KILN_OK)
      st = kiln__ops_scratch(op, ctx, KILN_F64, 8 * n * gmax, &s->rep);
    if (st == KILN_OK)
      st = kiln__ops_scratch(op, ctx, KILN_F64, n * n, &s->z);
    if (st == KILN_OK)
      st = kiln__ops_scratch(op, ctx, KILN_F64, n * n, &s->g);
  }
  if (st != KILN_OK) {
    kiln__lsp_tdev_release(s);
    *ws = NULL;
  }
  return st;
}

/* The device stage past the eigenvalues: vectors into s->z, values into w, *ok from the checks. */
static kiln_status
vectors(const kiln__lsp *L, kiln__lsp_tdev *s, uint64_t n, const double *d, const double *e,
        double tnorm, double pivmin, double atol, double *w, int *ok)
{
  *ok = 0;
  uint64_t g = group_size();
  uint64_t *start = malloc((n + 2) * sizeof *start);
  double *sig = malloc(2 * (n + 1) * sizeof *sig), *back = malloc(3 * n * sizeof *back);
  uint32_t *grp = malloc(n * sizeof *grp), *gs = malloc((n + 2) * sizeof *gs);
  uint8_t *flag = calloc(n, 1);
  kiln_status st = KILN_OK;
  if (!start || !sig || !back || !grp || !gs || !flag) {
    st = kiln__fail(KILN_ERR_HOST_MEMORY, L->op, 0, "no memory for the tridiagonal stage's groups");
    goto done;
  }
  uint64_t ng = td_groups(w, n, g, start);
  /* candidate shifts in the middle of the gaps left and right of each group (outside the
   * spectrum at its ends); td_rrr makes both, the later kernels take the one with the smaller
   * pivots */
  double outer = fmax(w[n - 1] - w[0], 4.0 * atol) / (double)n;
  for (uint64_t j = 0; j < ng; j++) {
    uint64_t a = start[j], b = start[j + 1];
    sig[2 * j] = a ? 0.5 * (w[a - 1] + w[a]) : w[0] - outer;
    sig[2 * j + 1] = b < n ? 0.5 * (w[b - 1] + w[b]) : w[n - 1] + outer;
    for (uint64_t k = a; k < b; k++)
      grp[k] = (uint32_t)j;
  }
  /* eigenvalues whose relative gap in their group's representation is below MRRR's bound
   * (or, through the test hook, below flag_gap times the mean gap) go to the host */
  double fl = atomic_load(&hook_flag), mean = n > 1 ? (w[n - 1] - w[0]) / (double)(n - 1) : 0.0;
  uint64_t nflag = 0;
  for (uint64_t k = 0; k < n; k++) {
    double gl = k ? w[k] - w[k - 1] : INFINITY, gr = k + 1 < n ? w[k + 1] - w[k] : INFINITY;
    double gap = fmin(gl, gr);
    double mu = fmax(fabs(w[k] - sig[2 * grp[k]]), fabs(w[k] - sig[2 * grp[k] + 1]));
    flag[k] = gap < TD_MINRGP * mu || gap < 64.0 * atol || gap < fl * mean;
    nflag += flag[k];
  }
  if (nflag > n / 4) {
    kiln__log(KILN__LOG_DEBUG, "%s: %llu of %llu eigenvalues too close for the device route", L->op,
              (unsigned long long)nflag, (unsigned long long)n);
    goto done;
  }
  st = put(L, s->cand, sig, 2 * ng * sizeof *sig);
  if (st == KILN_OK)
    st = put(L, s->grp, grp, n * sizeof *grp);
  for (uint64_t j = 0; j <= ng; j++)
    gs[j] = (uint32_t)start[j];
  if (st == KILN_OK)
    st = put(L, s->gs, gs, (ng + 1) * sizeof *gs);
  cl_kernel kr, kf, kv, kq, kx, kg;
  if (st == KILN_OK)
    st = kern(L, "td_rrr", &kr);
  if (st == KILN_OK)
    st = kern(L, "td_refine", &kf);
  if (st == KILN_OK)
    st = kern(L, "td_vec", &kv);
  if (st == KILN_OK)
    st = kern(L, "td_cholqr", &kq);
  if (st == KILN_OK)
    st = kern(L, "td_resid", &kx);
  if (st == KILN_OK)
    st = kern(L, "td_gram_dev", &kg);
  if (st != KILN_OK)
    goto done;
  kiln__args a = kiln__args_begin(L->op, kr);
  targ(&a, s->t);
  kiln__args_u32(&a, (uint32_t)n);
  kiln__args_f64(&a, pivmin);
  targ(&a, s->cand);
  kiln__args_u32(&a, (uint32_t)(2 * ng));
  targ(&a, s->rep);
  targ(&a, s->growth);
  st = launch(L, &a, 2 * ng);
  if (st == KILN_OK) {
    a = kiln__args_begin(L->op, kf);
    targ(&a, s->rep);
    kiln__args_u32(&a, (uint32_t)n);
    targ(&a, s->grp);
    targ(&a, s->cand);
    targ(&a, s->growth);
    targ(&a, s->w0);
    kiln__args_f64(&a, atol);
    kiln__args_f64(&a, pivmin);
    kiln__args_u32(&a, TD_REFINE_ROUNDS);
    targ(&a, s->w);
    st = kiln__args_enqueue_1d(&a, L->ctx, ms_global(n), TD_MSG);
  }
  if (st == KILN_OK) {
    a = kiln__args_begin(L->op, kv);
    targ(&a, s->rep);
    kiln__args_u32(&a, (uint32_t)n);
    targ(&a, s->grp);
    targ(&a, s->cand);
    targ(&a, s->growth);
    targ(&a, s->w);
    kiln__args_f64(&a, pivmin);
    targ(&a, s->z);
    st = launch(L, &a, n);
  }
  if (st == KILN_OK) {
    cl_int err = clFlush(L->ctx->queue);
    if (err != CL_SUCCESS)
      st = kiln__fail_cl(L->op, err, "clFlush");
  }
  /* the close eigenvalues' index ranges on the host meanwhile (their values replace the
   * device's once those are read back) */
  double *hw = back + 2 * n;
#if KILN_HAVE_LAPACKE
  for (uint64_t k = 0; st == KILN_OK && k < n;) {
    if (!flag[k]) {
      k++;
      continue;
    }
    uint64_t k1 = k;
    while (k1 + 1 < n && flag[k1 + 1])
      k1++;
    int hok = 0;
    st = host_range(L, n, d, e, k, k1, hw, s->z, &hok);
    if (st == KILN_OK && !hok) {
      kiln__log(KILN__LOG_DEBUG, "%s: dstemr gave up on eigenvalues %llu .. %llu", L->op,
                (unsigned long long)k, (unsigned long long)k1);
      goto done;
    }
    k = k1 + 1;
  }
#else
  if (nflag)
    goto done;
#endif
  /* G = Z^T Z in f64; each group orthonormalised through its diagonal block; the residuals
   * after that, and the squares of G outside the diagonal blocks, column by column */
  kiln__lsp L64 = *L;
  L64.dt = KILN_F64;
  L64.ts = 8;
  /* a square product: kiln's large GEMM kernel where the device has it (on NVIDIA the FP64
   * tensor cores) */
  if (L64.tile)
    L64.large = kiln__linalg_large_bit(L->ctx, KILN_F64, KILN__LINALG_GEMM_LARGE);
  kiln__lsp_mat zm = kiln__lsp_tmat(s->z, n), gm = kiln__lsp_tmat(s->g, n);
  /* its lower triangle is enough (td_cholqr and td_gram_dev read no more): half the tiles of
   * kiln's GEMM kernels */
  if (st == KILN_OK && L64.tile)
    st =
        kiln__linalg_tile_gemm(L->op, L->ctx, KILN_F64, n, n, n, 1.0, s->z->mem, 0, 1, n, s->z->mem,
                               0, n, 1, 1, s->g->mem, 0, n, 1, 1u | L64.large, 1, 0, 0, 0);
  else if (st == KILN_OK)
    st = kiln__lsp_gemm(&L64, 1, 0, n, n, n, 1.0, zm, zm, 0.0, gm);
  if (st == KILN_OK) {
    a = kiln__args_begin(L->op, kq);
    targ(&a, s->g);
    kiln__args_u32(&a, (uint32_t)n);
    targ(&a, s->gs);
    targ(&a, s->z);
    st = kiln__args_enqueue_1d(&a, L->ctx, ng * KILN__TD_QR, KILN__TD_QR);
  }
  if (st == KILN_OK) {
    a = kiln__args_begin(L->op, kx);
    targ(&a, s->t);
    kiln__args_u32(&a, (uint32_t)n);
    targ(&a, s->w);
    targ(&a, s->z);
    targ(&a, s->res);
    st = launch(L, &a, n);
  }
  if (st == KILN_OK) {
    a = kiln__args_begin(L->op, kg);
    targ(&a, s->g);
    kiln__args_u32(&a, (uint32_t)n);
    targ(&a, s->grp);
    targ(&a, s->w0); /* w0 is read back already: its buffer holds the columns' sums */
    st = launch(L, &a, n);
  }
  if (st == KILN_OK)
    st = kiln__ops_read(L->op, L->ctx, s->w0, 0, back, n * 8);
  if (st == KILN_OK)
    st = kiln__ops_read(L->op, L->ctx, s->res, 0, back + n, n * 8);
  if (st == KILN_OK)
    st = kiln__ops_read(L->op, L->ctx, s->w, 0, w, n * 8);
  if (st != KILN_OK)
    goto done;
  double orth = 0.0, res = 0.0;
  for (uint64_t k = 0; k < n; k++) {
    orth += back[k];
    if (flag[k])
      w[k] = hw[k];
    else
      res += back[n + k];
  }
  /* in the eps of the result: an f32 matrix gets Z rounded to f32, so f64's eps would reject
   * vectors orders of magnitude better than the result can hold (on the H200 an f32 4096
   * matrix at 89.8 n eps of f64 went to the host route, 0.55 s instead of 0.03) */
  const double eps = L->dt == KILN_F32 ? (double)FLT_EPSILON : DBL_EPSILON;
  orth = sqrt(orth) / ((double)n * eps);
  res = sqrt(res) / ((double)n * eps * tnorm);
  int asc = 1;
  for (uint64_t k = 1; k < n; k++)
    asc &= w[k] >= w[k - 1];
  *ok = orth <= TD_ORTH && res <= TD_RES && asc && fl >= 0.0; /* the hook's < 0: reject */
  kiln__log(KILN__LOG_DEBUG,
            "%s: device tridiagonal stage n %llu: %llu groups, %llu values on the host, "
            "||Z^T Z - I|| %.2f n eps, ||T Z - Z W|| %.2f n eps ||T||%s%s",
            L->op, (unsigned long long)n, (unsigned long long)ng, (unsigned long long)nflag, orth,
            res, asc ? "" : ", not ascending", *ok ? "" : ": the host route instead");
done:
  free(start);
  free(sig);
  free(back);
  free(grp);
  free(gs);
  free(flag);
  return st;
}

kiln_status
kiln__lsp_tridiag_device(const kiln__lsp *L, kiln__lsp_tdev **ws, uint64_t n, const double *d,
                         const double *e, double *w, kiln__lsp_mat z, int *done)
{
  *done = 0;
  if (n < 2 || !kiln__device_has_dtype(&L->ctx->info, KILN_F64) ||
      (z.mem && L->ctx->info.local_mem_bytes < TD_LOCAL_BYTES))
    return KILN_OK;
  double gl = INFINITY, gu = -INFINITY, e2max = 0.0;
  for (uint64_t i = 0; i < n; i++) {
    double el = i ? fabs(e[i - 1]) : 0.0, er = i + 1 < n ? fabs(e[i]) : 0.0;
    gl = fmin(gl, d[i] - el - er);
    gu = fmax(gu, d[i] + el + er);
    e2max = fmax(e2max, er * er);
  }
  double tnorm = fmax(fabs(gl), fabs(gu));
  if (!isfinite(gl) || !isfinite(gu) || !isfinite(e2max) || tnorm == 0.0)
    return KILN_OK; /* NaN, inf or a zero matrix: the host route's behaviour */
  double pivmin = DBL_MIN * fmax(1.0, e2max), eps = DBL_EPSILON;
  /* dstebz's widening of the Gershgorin interval, and its absolute tolerance */
  gl -= 2.1 * tnorm * eps * (double)n + 4.2 * pivmin;
  gu += 2.1 * tnorm * eps * (double)n + 4.2 * pivmin;
  double atol = 2.0 * eps * tnorm + pivmin;
  KILN_TRY(scratch(L, ws, n, z.mem != NULL));
  kiln__lsp_tdev *s = *ws;
  double *t = malloc(3 * n * sizeof *t);
  KILN_RETURN_IF(!t, KILN_ERR_HOST_MEMORY, L->op, "no memory for %llu elements on the host",
                 (unsigned long long)(3 * n));
  memcpy(t, d, n * sizeof *t);
  for (uint64_t i = 0; i < n; i++) {
    t[n + i] = i + 1 < n ? e[i] : 0.0;
    t[2 * n + i] = t[n + i] * t[n + i];
  }
  kiln_status st = put(L, s->t, t, 3 * n * sizeof *t);
  free(t);
  cl_kernel kb;
  if (st == KILN_OK)
    st = kern(L, "td_bisect", &kb);
  if (st == KILN_OK) {
    kiln__args a = kiln__args_begin(L->op, kb);
    targ(&a, s->t);
    kiln__args_u32(&a, (uint32_t)n);
    kiln__args_f64(&a, gl);
    kiln__args_f64(&a, gu);
    kiln__args_f64(&a, atol);
    kiln__args_f64(&a, pivmin);
    /* rounds of ninefold narrowing from the Gershgorin width to atol */
    kiln__args_u32(&a, (uint32_t)ceil(log((gu - gl) / atol) / log(TD_MS + 1.0)));
    targ(&a, s->w0);
    st = kiln__args_enqueue_1d(&a, L->ctx, ms_global(n), TD_MSG);
  }
  if (st == KILN_OK)
    st = kiln__ops_read(L->op, L->ctx, s->w0, 0, w, n * sizeof *w);
  if (st != KILN_OK || !z.mem) {
    *done = st == KILN_OK;
    return st;
  }
  int ok = 0;
  KILN_TRY(vectors(L, s, n, d, e, tnorm, pivmin, atol, w, &ok));
  if (!ok)
    return KILN_OK;
  cl_kernel ks;
  KILN_TRY(kern(L, "td_store", &ks));
  kiln__args a = kiln__args_begin(L->op, ks);
  targ(&a, s->z);
  kiln__args_u64(&a, n * n);
  kiln__args_mem(&a, z.mem);
  kiln__args_mem(&a, z.mem);
  kiln__args_u64(&a, z.off);
  kiln__args_u32(&a, L->dt == KILN_F32);
  KILN_TRY(launch(L, &a, n * n));
  *done = 1;
  atomic_fetch_add(&accepted, 1u);
  return KILN_OK;
}
