/*
 * linalg_spectral family, QR part: blocked Householder QR (geqrf), applying and forming Q
 * (ormqr, orgqr), kiln_linalg_qr, and the helpers the family's other file shares
 * (lib/ops/linalg_spectral_internal.h; include/kiln/linalg_spectral.h; docs/linalg.md).
 *
 * Blocked right-looking QR, one matrix at a time: qr_panel factors nb columns in one
 * work-group; qr_vcopy lays the panel's reflectors out as an explicit V, G = V^T V (GEMM)
 * and qr_larft give the compact-WY T of H_0 .. H_nb-1 = I - V T V^T, and the trailing
 * columns take C -= V (T^T (V^T C)) as three GEMMs (CLBlast, or gemm_s without it). Q is
 * the identity with the blocks applied last to first.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/env.h"
#include "core/error.h"
#include "core/shape.h"
#include "kiln_config.h"
#include "ops/families.h"
#include "ops/linalg_host.h"
#include "ops/linalg_internal.h"
#include "ops/linalg_spectral_internal.h"
#include "ops/ops_common.h"
#if KILN_HAVE_LAPACKE
#include <lapacke.h>
#endif
#if KILN_HAVE_CLBLAST
#include "backends/clblast.h"
#endif

#define SRC "linalg_qr"

/* qr_panel reduces this many columns' products at once (QR_CHUNK in cl_kernels/linalg_qr.cl) */
#define QR_CHUNK 8

static atomic_int hook_nb = -1, hook_own = -1, hook_mrrr = -1, hook_leaf = -1, hook_split = -1,
                  hook_nb2 = -1;
static atomic_uint qr_grid_launches;

unsigned
kiln__linalg_test_qr_grid_launches(void)
{
  return atomic_load(&qr_grid_launches);
}

void
kiln__linalg_spectral_test_split(int parts)
{
  atomic_store(&hook_split, parts);
}

void
kiln__linalg_spectral_test_mrrr(int min_n)
{
  atomic_store(&hook_mrrr, min_n);
}

int
kiln__lsp_mrrr_min(void)
{
  int h = atomic_load(&hook_mrrr);
  return h;
}

void
kiln__linalg_spectral_test_set(int nb, int own, int leaf)
{
  atomic_store(&hook_nb, nb);
  atomic_store(&hook_own, own);
  atomic_store(&hook_leaf, leaf);
}

void
kiln__linalg_spectral_test_nb2(int nb2)
{
  atomic_store(&hook_nb2, nb2);
}

kiln__lsp
kiln__lsp_begin(const char *op, kiln_context *ctx, const kiln_tensor *a)
{
  size_t nd = a->shape.ndim;
  uint64_t elems = (uint64_t)a->shape.dims[nd - 1] * (uint64_t)a->shape.dims[nd - 2];
  int64_t d1 = a->shape.dims[nd - 1], d2 = a->shape.dims[nd - 2];
  uint64_t mn_min = (uint64_t)(d1 < d2 ? d1 : d2);
  kiln__linalg_params p;
  kiln__linalg_choose(op, ctx, a->dtype, elems, &p);
  kiln__ctx_lock(ctx);
  kiln_dtype dt = a->dtype;
  kiln__lsp L = {.op = op, .ctx = ctx, .dt = dt, .ts = kiln_dtype_size(dt)};
  /* the host route's LAPACK (dgeqrf, dlarft) is real: complex QR stays on the device */
  L.host = !kiln__dtype_is_complex(dt) &&
           kiln__linalg_is_host(ctx, p.route, KILN__LINALG_RULE_HOST_QR, elems);
  int h = atomic_load(&hook_nb);
  if (h > 0)
    L.nb = (uint64_t)h;
  else if (p.nb)
    L.nb = p.nb;
  else if (L.host)
    L.nb = KILN__LINALG_HOST_NB_QR;
  else {
    L.nb = ctx->info.is_gpu ? KILN__LSP_NB_GPU : KILN__LSP_NB_CPU;
    L.nb_rule = 1;
  }
  if (L.host && h <= 0 && L.nb > KILN__LINALG_HOST_NB_QR_MAX)
    L.nb = KILN__LINALG_HOST_NB_QR_MAX;
  L.clblast = KILN_HAVE_CLBLAST && !kiln__env_flag(KILN__ENV_DEBUG_NO_CLBLAST) &&
              atomic_load(&hook_own) <= 0;
  uint32_t g = kiln__linalg_gemm_of(ctx, p.gemm);
  L.tile = g == KILN__LINALG_GEMM_TILE || g == KILN__LINALG_GEMM_LARGE;
  L.large = kiln__linalg_large_bit(ctx, dt, g);
  int hl = atomic_load(&hook_leaf);
  L.leaf = hl > 0              ? (uint64_t)hl
           : !ctx->info.is_gpu ? UINT64_MAX
           : p.leaf            ? p.leaf
                               : KILN__LSP_LEAF_GPU;
  L.pwg = p.pwg ? p.pwg : ctx->info.is_gpu ? KILN__LINALG_RULE_PWG_GPU : KILN__LINALG_RULE_PWG_CPU;
  /* two levels: on GPUs where the large kernel runs, with the gemm rule or gemm=3 (as the
   * blocked solves), or the test hook */
  L.nb2 = L.nb;
  L.large2 = L.large;
  int h2 = atomic_load(&hook_nb2);
  uint32_t lb = kiln__linalg_large_bit(ctx, dt, KILN__LINALG_GEMM_LARGE);
  if (h2 > 0 && (uint64_t)h2 > L.nb && (uint64_t)h2 % L.nb == 0 && !L.host) {
    L.nb2 = (uint64_t)h2;
  } else if (h2 <= 0 && !L.host && ctx->info.is_gpu && (p.gemm ? L.large != 0 : L.tile) && !p.nb &&
             h <= 0 && lb && KILN__LSP_NB2_GPU % L.nb == 0 && mn_min >= KILN__LSP_NB2_MIN) {
    L.nb2 = KILN__LSP_NB2_GPU;
    L.large2 = lb;
  }
  return L;
}

kiln__lsp_mat
kiln__lsp_tmat(const kiln_tensor *t, uint64_t ld)
{
  return (kiln__lsp_mat){t->mem, kiln__ops_elem_offset(t), ld};
}

static kiln__lsp_mat
at(kiln__lsp_mat x, uint64_t i, uint64_t j)
{
  x.off += i * x.ld + j;
  return x;
}

static void
args_mat(kiln__args *a, kiln__lsp_mat x)
{
  kiln__args_mem(a, x.mem);
  kiln__args_u64(a, x.off);
}

static kiln_status
kern(const kiln__lsp *L, const char *name, cl_kernel *k)
{
  return kiln__ops_kernel(L->op, L->ctx, SRC, L->dt, name, k);
}

/* A fixed local size (l0, l1) and the grid rounded up to it (the kernels check bounds). */
static kiln_status
enqueue2(const kiln__args *a, const kiln__lsp *L, uint64_t g0, uint64_t g1, size_t l0, size_t l1)
{
  if (a->status != KILN_OK || g0 == 0 || g1 == 0)
    return a->status;
  size_t global[2] = {(size_t)((g0 + l0 - 1) / l0 * l0), (size_t)((g1 + l1 - 1) / l1 * l1)};
  size_t local[2] = {l0, l1};
  return kiln__args_enqueue(a, L->ctx, 2, global, local);
}

/* Power-of-two local size of a one-work-group kernel: up to 256 on GPUs, 64 on CPUs. */
static size_t
group_local(const kiln__lsp *L, cl_kernel k)
{
  size_t max = kiln__launch_pow2_local(L->ctx, k), cap = L->ctx->info.is_gpu ? 256 : 64;
  return max < cap ? max : cap;
}

/* The conjugate transpose for complex dtypes, the transpose for real ones (CT in gemm). */
static int
ct(const kiln__lsp *L)
{
  return kiln__dtype_is_complex(L->dt) ? 2 : 1;
}

/*
 * C (m x n) = alpha op(A) op(B) + beta C, op(A) m x k, row-major views with row strides
 * a.ld, b.ld, c.ld; ta/tb 0, 1 (transposed) or 2 (conjugate-transposed, complex only).
 * beta 0 never reads C (scratch may hold anything).
 */
static kiln_status
gemm(const kiln__lsp *L, int ta, int tb, uint64_t m, uint64_t n, uint64_t k, double alpha,
     kiln__lsp_mat a, kiln__lsp_mat b, double beta, kiln__lsp_mat c)
{
  if (m == 0 || n == 0)
    return KILN_OK;
  uint32_t cj =
      (ta == 2 ? KILN__LINALG_TILE_CONJ_A : 0u) | (tb == 2 ? KILN__LINALG_TILE_CONJ_B : 0u);
  if (L->tile)
    return kiln__linalg_tile_gemm(L->op, L->ctx, L->dt, m, n, k, alpha, a.mem, a.off, ta ? 1 : a.ld,
                                  ta ? a.ld : 1, b.mem, b.off, tb ? 1 : b.ld, tb ? b.ld : 1,
                                  beta == 0.0, c.mem, c.off, c.ld, 1, cj | L->large, 1, 0, 0, 0);
#if KILN_HAVE_CLBLAST
  if (L->clblast && k > 0 && m * n * k > kiln__linalg_own_gemm_max()) {
    if (beta == 0.0) { /* CLBlast scales C by beta, and 0 * NaN from scratch is NaN */
      uint64_t rows = c.ld == n ? 1 : m, len = c.ld == n ? m * n : n;
      for (uint64_t i = 0; i < rows; i++) {
        cl_int zero = 0;
        cl_int err = clEnqueueFillBuffer(L->ctx->queue, c.mem, &zero, sizeof zero,
                                         (c.off + i * c.ld) * L->ts, len * L->ts, 0, NULL, NULL);
        if (err != CL_SUCCESS)
          return kiln__fail_cl(L->op, err, "clEnqueueFillBuffer");
      }
    }
    return kiln__lh_gemm(L->op, L->ctx, L->dt, ta, tb, m, n, k, alpha, a.mem, a.off, a.ld, b.mem,
                         b.off, b.ld, beta, c.mem, c.off, c.ld);
  }
#endif
  cl_kernel kk;
  KILN_TRY(kern(L, "gemm_s", &kk));
  kiln__args args = kiln__args_begin(L->op, kk);
  kiln__args_u32(&args, (uint32_t)m);
  kiln__args_u32(&args, (uint32_t)n);
  kiln__args_u32(&args, (uint32_t)k);
  kiln__linalg_args_scalar(&args, L->dt, alpha);
  args_mat(&args, a);
  kiln__args_u64(&args, ta ? 1 : a.ld);
  kiln__args_u64(&args, ta ? a.ld : 1);
  args_mat(&args, b);
  kiln__args_u64(&args, tb ? 1 : b.ld);
  kiln__args_u64(&args, tb ? b.ld : 1);
  kiln__linalg_args_scalar(&args, L->dt, beta);
  args_mat(&args, c);
  kiln__args_u64(&args, c.ld);
  kiln__args_u32(&args, cj);
  return enqueue2(&args, L, n, m, 8, 8);
}

kiln_status
kiln__lsp_ws_make(const kiln__lsp *L, uint64_t m, uint64_t ncols, kiln__lsp_ws *ws)
{
  memset(ws, 0, sizeof *ws);
  uint64_t nb = L->nb, nb2 = L->nb2, wn = (ncols ? ncols : 1) * nb2;
  kiln_status s = kiln__ops_scratch(L->op, L->ctx, L->dt, (m ? m : 1) * nb2, &ws->v);
  if (s == KILN_OK)
    s = kiln__ops_scratch(L->op, L->ctx, L->dt, nb2 * nb2, &ws->g);
  if (s == KILN_OK)
    s = kiln__ops_scratch(L->op, L->ctx, L->dt, nb * nb, &ws->t);
  if (s == KILN_OK)
    s = kiln__ops_scratch(L->op, L->ctx, L->dt, wn, &ws->w);
  if (s == KILN_OK)
    s = kiln__ops_scratch(L->op, L->ctx, L->dt, wn, &ws->w2);
  if (s == KILN_OK && nb2 > nb)
    s = kiln__ops_scratch(L->op, L->ctx, L->dt, nb2 * nb2, &ws->tb);
  if (s == KILN_OK && nb2 > nb)
    s = kiln__ops_scratch(L->op, L->ctx, L->dt, nb2 * nb, &ws->y);
  if (s != KILN_OK)
    kiln__lsp_ws_release(ws);
  return s;
}

void
kiln__lsp_ws_release(kiln__lsp_ws *ws)
{
  kiln_tensor_release(ws->v);
  kiln_tensor_release(ws->g);
  kiln_tensor_release(ws->t);
  kiln_tensor_release(ws->w);
  kiln_tensor_release(ws->w2);
  kiln_tensor_release(ws->gx);
  kiln_tensor_release(ws->ts);
  kiln_tensor_release(ws->tb);
  kiln_tensor_release(ws->y);
  memset(ws, 0, sizeof *ws);
}

kiln_status
kiln__lsp_lstsq_qr(const kiln__lsp *L, const kiln_tensor *a, const kiln_tensor *b, uint64_t m,
                   uint64_t n, uint64_t nrhs, uint64_t batch, kiln_tensor **qa, kiln_tensor **qb)
{
  const char *op = L->op;
  kiln_context *ctx = L->ctx;
  kiln_tensor *tau = NULL, *view = NULL;
  kiln__lsp_ws ws = {0};
  *qa = *qb = NULL;
  kiln_status s = kiln__ops_scratch(op, ctx, a->dtype, a->numel, qa);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, a->dtype, b->numel ? b->numel : 1, qb);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, a->dtype, batch * n, &tau);
  if (s == KILN_OK)
    s = kiln__lsp_ws_make(L, m, n > nrhs ? n : nrhs, &ws);
  if (s == KILN_OK)
    s = kiln__tensor_view(op, *qa, 0, &a->shape, &view);
  if (s == KILN_OK)
    s = kiln__ops_copy(op, ctx, a, view);
  kiln_tensor_release(view);
  view = NULL;
  if (s == KILN_OK && b->numel)
    s = kiln__tensor_view(op, *qb, 0, &b->shape, &view);
  if (s == KILN_OK && b->numel)
    s = kiln__ops_copy(op, ctx, b, view);
  kiln_tensor_release(view);
  for (uint64_t i = 0; s == KILN_OK && i < batch; i++) {
    kiln__lsp_mat ab = kiln__lsp_tmat(*qa, n), tb = kiln__lsp_tmat(tau, 1),
                  bb = kiln__lsp_tmat(*qb, nrhs);
    ab.off += i * m * n;
    tb.off += i * n;
    bb.off += i * m * nrhs;
    s = kiln__lsp_geqrf(L, ab, m, n, tb, &ws);
    if (s == KILN_OK && nrhs) /* Q^T B (Q^H B for complex) */
      s = kiln__lsp_ormqr(L, ab, m, n, tb, 1, bb, nrhs, &ws);
  }
  kiln__lsp_ws_release(&ws);
  kiln_tensor_release(tau);
  if (s != KILN_OK) {
    kiln_tensor_release(*qa);
    kiln_tensor_release(*qb);
    *qa = *qb = NULL;
  }
  return s;
}

static kiln_status vt_c(const kiln__lsp *L, uint64_t rows, uint64_t jb, kiln__lsp_mat v,
                        kiln__lsp_mat c, uint64_t ncols, kiln__lsp_mat w);

/* V (ws->v, rows x jb) of the jb reflectors stored from (0, 0) of the rows-row view a. */
static kiln_status
block_v(const kiln__lsp *L, kiln__lsp_mat a, uint64_t rows, uint64_t jb, kiln__lsp_ws *ws)
{
  cl_kernel k;
  KILN_TRY(kern(L, "qr_vcopy", &k));
  kiln__args args = kiln__args_begin(L->op, k);
  args_mat(&args, a);
  kiln__args_u64(&args, a.ld);
  kiln__args_u32(&args, (uint32_t)rows);
  kiln__args_u32(&args, (uint32_t)jb);
  kiln__args_tensor(&args, ws->v);
  return enqueue2(&args, L, jb, rows, 8, 8);
}

/* The jb x jb T (contiguous, jb^2 elements) at element soff of src to doff of dst. */
static kiln_status
t_copy(const kiln__lsp *L, kiln_tensor *src, uint64_t soff, kiln_tensor *dst, uint64_t doff,
       uint64_t jb)
{
  cl_int err = clEnqueueCopyBuffer(L->ctx->queue, src->mem, dst->mem, src->offset + soff * L->ts,
                                   dst->offset + doff * L->ts, jb * jb * L->ts, 0, NULL, NULL);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(L->op, err, "clEnqueueCopyBuffer (T)");
}

/* V as block_v, and T (ws->t, jb x jb) of the same reflectors with tau at tau. */
static kiln_status
block_vt(const kiln__lsp *L, kiln__lsp_mat a, uint64_t rows, uint64_t jb, kiln__lsp_mat tau,
         kiln__lsp_ws *ws)
{
  cl_kernel k;
  KILN_TRY(block_v(L, a, rows, jb, ws));
  kiln__lsp_mat v = kiln__lsp_tmat(ws->v, jb), g = kiln__lsp_tmat(ws->g, jb);
  KILN_TRY(vt_c(L, rows, jb, v, v, jb, g)); /* G = V^T V: the same short, long-k shape */
  /* T in local memory (with the leaves' blocks of G and tau: jb <= 64 for f64) where the
   * device leaves room */
  uint64_t lm = L->ctx->info.local_mem_bytes, cap = lm > 40960 ? lm - 2048 : lm / 2;
  uint64_t lt = jb * (jb + 1) + 8 * ((jb + 7) / 8 * 8) + jb;
  int in_local = lt * L->ts <= cap;
  KILN_TRY(kern(L, in_local ? "qr_larft_l" : "qr_larft", &k));
  kiln__args args = kiln__args_begin(L->op, k);
  args_mat(&args, g);
  args_mat(&args, tau);
  kiln__args_u32(&args, (uint32_t)jb);
  kiln__args_tensor(&args, ws->t);
  if (in_local)
    kiln__args_local(&args, lt * L->ts);
  size_t local = group_local(L, k);
  return kiln__args_enqueue_1d(&args, L->ctx, local, local);
}

/*
 * Row chunks for W = V^T C (jb x ncols, k = rows): one chunk gives CLBlast about
 * ncols / 128 work-groups of 64 x 128 results (jb <= 64) each running the whole k = rows
 * loop, a few dozen on a GPU of 132 compute units; chunks of at least 256 rows as one
 * strided batch fill it. GPUs with CLBlast only (or the test hook).
 */
static uint64_t
vtc_parts(const kiln__lsp *L, uint64_t rows, uint64_t ncols)
{
  int h = atomic_load(&hook_split);
  if ((!L->clblast && !L->tile) || h == 0)
    return 1;
  if (h > 0)
    return rows / (uint64_t)h >= 1 ? (uint64_t)h : 1;
  if (!L->ctx->info.is_gpu)
    return 1;
  uint64_t groups = (ncols + 127) / 128, want = 2 * (uint64_t)L->ctx->info.compute_units;
  uint64_t parts = (want + groups - 1) / groups, most = rows / 256;
  if (parts > most)
    parts = most;
  if (parts > 32)
    parts = 32;
  return parts ? parts : 1;
}

/*
 * W (jb x ncols, contiguous) = V^H C (V^T C for real dtypes), split over row chunks
 * (vtc_parts) and summed.
 */
static kiln_status
vt_c(const kiln__lsp *L, uint64_t rows, uint64_t jb, kiln__lsp_mat v, kiln__lsp_mat c,
     uint64_t ncols, kiln__lsp_mat w)
{
  uint64_t parts = vtc_parts(L, rows, ncols);
  uint64_t lmin = kiln__linalg_large_min();
  int large = L->tile && L->large && jb >= lmin && ncols >= lmin;
  if (large && parts > 1 && atomic_load(&hook_split) <= 0) {
    /* the large kernel's 128 x 128 tiles: about one group per compute unit in all */
    uint64_t tiles = (jb + 127) / 128 * ((ncols + 127) / 128), cu = L->ctx->info.compute_units;
    parts = (cu + tiles - 1) / tiles;
    if (parts > rows / 256)
      parts = rows / 256;
  }
  if (parts <= 1 ||
      (atomic_load(&hook_split) <= 0 && jb * ncols * rows <= kiln__linalg_own_gemm_max()))
    return gemm(L, ct(L), 0, jb, ncols, rows, 1.0, v, c, 0.0, w);
  uint64_t mc = rows / parts, rest = rows - parts * mc, len = jb * ncols;
  if (L->tile) {
    /* the parts as one batched gemm_tile into P, then W = ones^T P (1 x len, k = parts) */
    kiln_tensor *p = NULL;
    cl_mem ones = NULL;
    kiln_status s = kiln__ops_scratch(L->op, L->ctx, L->dt, parts * len, &p);
    if (s == KILN_OK)
      s = kiln__lh_ones(L->op, L->ctx, L->dt, parts, &ones);
    uint64_t po = p ? kiln__ops_elem_offset(p) : 0;
    /* the outer blocks of a two-level QR take the large kernel (batched as gemm_tile) */
    uint32_t cj = (ct(L) == 2 ? KILN__LINALG_TILE_CONJ_A : 0u) | (large ? L->large : 0u);
    if (s == KILN_OK)
      s = kiln__linalg_tile_gemm(L->op, L->ctx, L->dt, jb, ncols, mc, 1.0, v.mem, v.off, 1, v.ld,
                                 c.mem, c.off, c.ld, 1, 1, p->mem, po, ncols, 1, cj, parts,
                                 mc * v.ld, mc * c.ld, len);
    if (s == KILN_OK)
      s = kiln__linalg_tile_gemm(L->op, L->ctx, L->dt, 1, len, parts, 1.0, ones, 0, parts, 1,
                                 p->mem, po, len, 1, 1, w.mem, w.off, len, 1, 0, 1, 0, 0, 0);
    if (s == KILN_OK && rest)
      s = gemm(L, ct(L), 0, jb, ncols, rest, 1.0, at(v, parts * mc, 0), at(c, parts * mc, 0), 1.0,
               w);
    kiln_tensor_release(p);
    return s;
  }
#if KILN_HAVE_CLBLAST
  kiln_tensor *p = NULL;
  cl_mem ones = NULL;
  kiln_status s = kiln__ops_scratch(L->op, L->ctx, L->dt, parts * len, &p);
  cl_int err = CL_SUCCESS;
  if (s == KILN_OK)
    s = kiln__lh_ones(L->op, L->ctx, L->dt, parts, &ones);
  if (s == KILN_OK) {
    cl_int zero = 0;
    /* CLBlast scales C and y by beta: 0 * NaN from scratch would be NaN */
    err = clEnqueueFillBuffer(L->ctx->queue, p->mem, &zero, sizeof zero, p->offset,
                              parts * len * L->ts, 0, NULL, NULL);
    if (err == CL_SUCCESS)
      err = clEnqueueFillBuffer(L->ctx->queue, w.mem, &zero, sizeof zero, w.off * L->ts,
                                len * L->ts, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      s = kiln__fail_cl(L->op, err, "clEnqueueFillBuffer");
  }
  if (s == KILN_OK)
    s = kiln__clblast_gemm(L->op, L->ctx, L->dt, ct(L), 0, jb, ncols, mc,
                           (kiln_complex128){1.0, 0.0}, v.mem, v.off, v.ld, mc * v.ld, c.mem, c.off,
                           c.ld, mc * c.ld, (kiln_complex128){0.0, 0.0}, p->mem,
                           kiln__ops_elem_offset(p), ncols, len, parts);
  /* W = P^T ones: the partial products summed by one GEMV over the parts */
  if (s == KILN_OK)
    s = kiln__clblast_gemv(L->op, L->ctx, L->dt, 1, parts, len, (kiln_complex128){1.0, 0.0}, p->mem,
                           kiln__ops_elem_offset(p), len, ones, 0, (kiln_complex128){0.0, 0.0},
                           w.mem, w.off);
  if (s == KILN_OK && rest)
    s = gemm(L, ct(L), 0, jb, ncols, rest, 1.0, at(v, parts * mc, 0), at(c, parts * mc, 0), 1.0, w);
  kiln_tensor_release(p);
  return s;
#else
  return gemm(L, ct(L), 0, jb, ncols, rows, 1.0, v, c, 0.0, w);
#endif
}

/*
 * C (rows x ncols) = (I - V op(T) V^H) C with ws->v, ws->t of jb reflectors: Q C (trans_t 0)
 * or Q^H C (trans_t 1: T^H).
 */
static kiln_status
block_apply_t(const kiln__lsp *L, uint64_t rows, uint64_t jb, int trans_t, kiln__lsp_mat c,
              uint64_t ncols, kiln__lsp_mat t, kiln__lsp_ws *ws)
{
  if (ncols == 0 || rows == 0)
    return KILN_OK;
  kiln__lsp_mat v = kiln__lsp_tmat(ws->v, jb);
  kiln__lsp_mat w = kiln__lsp_tmat(ws->w, ncols), w2 = kiln__lsp_tmat(ws->w2, ncols);
  KILN_TRY(vt_c(L, rows, jb, v, c, ncols, w));
  /* op(T) W is a short product (jb x ncols, k = jb): gemm_tile's 64 x 64 tiles fill the device
   * where the large kernel's would not */
  kiln__lsp Ls = *L;
  Ls.large = 0;
  KILN_TRY(gemm(&Ls, trans_t ? ct(L) : 0, 0, jb, ncols, jb, 1.0, t, w, 0.0, w2));
  return gemm(L, 0, 0, rows, ncols, jb, -1.0, v, w2, 1.0, c);
}

static kiln_status
block_apply(const kiln__lsp *L, uint64_t rows, uint64_t jb, int trans_t, kiln__lsp_mat c,
            uint64_t ncols, kiln__lsp_ws *ws)
{
  return block_apply_t(L, rows, jb, trans_t, c, ncols, kiln__lsp_tmat(ws->t, jb), ws);
}

/* The panel kernels of one geqrf: qr_panel, and qr_panel_grid when pwg > 1. */
typedef struct qr_pan {
  cl_kernel k;
  size_t local;
  cl_kernel gk;  /* NULL: qr_panel only */
  uint64_t gmax; /* qr_panel_grid's most work-groups */
  size_t glocal; /* and its work-group size (a multiple of KILN__LSP_GRID_W) */
  uint64_t rows; /* rows per lane it aims at */
  int with_t;    /* whether it builds T (its local memory holds T's 64 x 65 / 2 entries) */
} qr_pan;

/* qr_panel_grid's tg: T's upper triangle packed (with_t), else one unused element. */
static size_t
qr_grid_tg(int with_t)
{
  return with_t ? KILN__LSP_GRID_W * (KILN__LSP_GRID_W + 1) / 2 : 1;
}

/* qr_panel_grid's local memory for groups of `local` lanes: xs, rm, rv, rc, re, tg, ra. */
static size_t
qr_grid_local(const kiln__lsp *L, size_t local, int with_t)
{
  size_t q = local / KILN__LSP_GRID_W, w = KILN__LSP_GRID_W;
  return (2 * q * KILN__LSP_GRID_R + q + 2 * q * w + qr_grid_tg(with_t) + w) * L->ts +
         q * sizeof(cl_int);
}

/* KILN_DEBUG_QR_GRID=local=N,rows=N,t=0|1 (debug: the grid panel's shape, for measuring). */
static void
qr_grid_debug(size_t *local, uint64_t *rows, int *with_t)
{
  const char *e = kiln__env(KILN__ENV_DEBUG_QR_GRID);
  while (e && *e) {
    unsigned long v = 0;
    char name[8] = {0};
    if (sscanf(e, "%7[a-z]=%lu", name, &v) == 2) {
      if (!strcmp(name, "local") && v >= KILN__LSP_GRID_W && (v & (v - 1)) == 0)
        *local = v;
      else if (!strcmp(name, "rows") && v >= 1 && v <= KILN__LSP_GRID_R)
        *rows = v;
      else if (!strcmp(name, "t"))
        *with_t = v != 0;
    }
    e = strchr(e, ',');
    e = e ? e + 1 : NULL;
  }
}

/*
 * The panel kernels for L; the grid kernel's exchange buffer lives in ws (ws->gx), made and
 * zeroed once for all the matrices of a call, its stamps counted on in ws->gstamp.
 */
static kiln_status
qr_pan_make(const kiln__lsp *L, kiln__lsp_ws *ws, qr_pan *P)
{
  *P = (qr_pan){0};
  KILN_TRY(kern(L, "qr_panel", &P->k));
  P->local = group_local(L, P->k);
  const uint64_t g = kiln__linalg_grid_groups(L->ctx, L->pwg);
  /* stamped 16-byte entries per exchanged value: one per real part */
  const uint64_t w = KILN__LSP_GRID_W, np = kiln__dtype_is_complex(L->dt) ? 2 : 1;
  if (g == 0)
    return KILN_OK;
  cl_kernel gk;
  KILN_TRY(kern(L, "qr_panel_grid", &gk));
  size_t max = kiln__launch_pow2_local(L->ctx, gk), want = KILN__LSP_GRID_LOCAL;
  P->rows = KILN__LSP_GRID_ROWS;
  P->with_t = 1;
  qr_grid_debug(&want, &P->rows, &P->with_t);
  P->glocal = max < want ? max : want;
  /* T needs 64 x 65 / 2 T of local memory beside the rest; narrower groups where the device
   * has less, down to four row sets (c128 on 48 KiB), else no T and the widest groups (c128
   * had 64 lanes on the H200 while its T never fit: 4096 panel rows then overflowed the
   * grid and took qr_panel's recursion, 10x slower) */
  uint64_t lm = L->ctx->info.local_mem_bytes;
  if (P->with_t) {
    size_t floor = 4 * KILN__LSP_GRID_W < P->glocal ? 4 * KILN__LSP_GRID_W : P->glocal;
    size_t tl = P->glocal;
    while (tl > floor && qr_grid_local(L, tl, 1) > lm)
      tl /= 2;
    if (qr_grid_local(L, tl, 1) <= lm)
      P->glocal = tl;
    else
      P->with_t = 0;
  }
  while (P->glocal > KILN__LSP_GRID_W && qr_grid_local(L, P->glocal, P->with_t) > lm)
    P->glocal /= 2;
  if (P->glocal < KILN__LSP_GRID_W || qr_grid_local(L, P->glocal, 0) > lm)
    return KILN_OK;
  if (!ws->gx) {
    /* 2 (g + 1) w np stamped 16-byte entries; no stamp is zero */
    KILN_TRY(kiln__ops_scratch(L->op, L->ctx, KILN_I32, 2 * (g + 1) * w * np * 4, &ws->gx));
    kiln_status s = kiln__linalg_zero(L->op, L->ctx, ws->gx);
    if (s != KILN_OK) {
      kiln_tensor_release(ws->gx);
      ws->gx = NULL;
      return s;
    }
  }
  P->gk = gk;
  P->gmax = g;
  return KILN_OK;
}

/*
 * qr_panel_grid's launch for a panel of `rows` rows: G groups, nk rows per lane; 0 when the
 * rows do not fit.
 */
static int
qr_grid_shape(const qr_pan *P, uint64_t rows, uint64_t *G, uint32_t *nk)
{
  if (!P->gk || rows == 0)
    return 0;
  uint64_t sets = P->glocal / KILN__LSP_GRID_W; /* row sets of a group */
  uint64_t g = (rows + sets * P->rows - 1) / (sets * P->rows);
  if (g > P->gmax)
    g = P->gmax;
  uint64_t k = (rows + g * sets - 1) / (g * sets);
  if (k > KILN__LSP_GRID_R)
    return 0;
  *G = g;
  *nk = (uint32_t)k;
  return 1;
}

/*
 * QR of the rows x w panel at a in place, tau at tau: qr_panel_grid where the panel fits it,
 * qr_panel up to the leaf width, else the left half, its reflectors on the right half
 * (compact WY), then the right half below the left half's rows. With t, *t_done tells
 * whether the panel's T (w x w) is in t (qr_panel_grid builds it on the way).
 */
static kiln_status
panel_run(const kiln__lsp *L, qr_pan *P, kiln__lsp_mat a, uint64_t rows, uint64_t w,
          kiln__lsp_mat tau, kiln__lsp_ws *ws, kiln_tensor *t, int *t_done)
{
  uint64_t G = 0;
  uint32_t nk = 0;
  if (t_done)
    *t_done = 0;
  if (w <= KILN__LSP_GRID_W && qr_grid_shape(P, rows, &G, &nk)) {
    int with_t = t && P->with_t;
    kiln__args args = kiln__args_begin(L->op, P->gk);
    args_mat(&args, a);
    kiln__args_u64(&args, a.ld);
    kiln__args_u32(&args, (uint32_t)rows);
    kiln__args_u32(&args, (uint32_t)w);
    args_mat(&args, tau);
    kiln__args_u32(&args, nk);
    kiln__args_u64(&args, ws->gstamp);
    kiln__args_mem(&args, ws->gx->mem);
    kiln__args_u32(&args, (uint32_t)with_t);
    kiln__args_mem(&args, with_t ? t->mem : ws->gx->mem);
    kiln__args_u64(&args, with_t ? kiln__ops_elem_offset(t) : 0);
    size_t q = P->glocal / KILN__LSP_GRID_W, wd = KILN__LSP_GRID_W;
    kiln__args_local(&args, 2 * q * KILN__LSP_GRID_R * L->ts);
    kiln__args_local(&args, q * L->ts);
    kiln__args_local(&args, q * wd * L->ts);
    kiln__args_local(&args, q * wd * L->ts);
    kiln__args_local(&args, q * sizeof(cl_int));
    kiln__args_local(&args, qr_grid_tg(with_t) * L->ts);
    kiln__args_local(&args, wd * L->ts);
    ws->gstamp += w;
    if (t_done)
      *t_done = with_t;
    kiln_status s = kiln__args_enqueue_1d(&args, L->ctx, G * P->glocal, P->glocal);
    if (s == KILN_OK)
      atomic_fetch_add(&qr_grid_launches, 1);
    return s;
  }
  if (w <= L->leaf) {
    kiln__args args = kiln__args_begin(L->op, P->k);
    args_mat(&args, a);
    kiln__args_u64(&args, a.ld);
    kiln__args_u32(&args, (uint32_t)rows);
    kiln__args_u32(&args, 0);
    kiln__args_u32(&args, (uint32_t)w);
    args_mat(&args, tau);
    kiln__args_local(&args, (P->local * QR_CHUNK + w) * L->ts);
    return kiln__args_enqueue_1d(&args, L->ctx, P->local, P->local);
  }
  uint64_t w1 = w / 2;
  KILN_TRY(panel_run(L, P, a, rows, w1, tau, ws, NULL, NULL));
  KILN_TRY(block_vt(L, a, rows, w1, tau, ws));
  KILN_TRY(block_apply(L, rows, w1, 1, at(a, 0, w1), w - w1, ws));
  kiln__lsp_mat t2 = tau;
  t2.off += w1;
  return panel_run(L, P, at(a, w1, w1), rows - w1, w - w1, t2, ws, NULL, NULL);
}

#if KILN_HAVE_LAPACKE
/* Host buffers of the hybrid QR. */
typedef struct hq {
  kiln__lh_buf *panel, *v, *t, *tau;
  double *w, *tf, *tauf, *work;
  lapack_int lwork;
} hq;

static void
hq_free(const kiln__lsp *L, hq *h)
{
  clFinish(L->ctx->queue); /* transfers from the host buffers may still be queued */
  free(h->w);
  free(h->tf);
  free(h->tauf);
  free(h->work);
  memset(h, 0, sizeof *h);
}

static kiln_status
hq_make(const kiln__lsp *L, uint64_t m, uint64_t nb, hq *h)
{
  memset(h, 0, sizeof *h);
  uint64_t rows = m ? m : 1;
  kiln_status s = kiln__lh_slot(L->op, L->ctx, 0, rows * nb * L->ts, &h->panel);
  if (s == KILN_OK)
    s = kiln__lh_slot(L->op, L->ctx, 3, rows * nb * L->ts, &h->v);
  if (s == KILN_OK)
    s = kiln__lh_slot(L->op, L->ctx, 1, nb * nb * L->ts, &h->t);
  if (s == KILN_OK)
    s = kiln__lh_slot(L->op, L->ctx, 2, nb * L->ts, &h->tau);
  h->w = malloc(rows * nb * sizeof *h->w);
  h->tf = malloc(nb * nb * sizeof *h->tf);
  h->tauf = malloc(nb * sizeof *h->tauf);
  double q = 0;
  if (h->w && LAPACKE_dgeqrf_work(LAPACK_COL_MAJOR, (lapack_int)rows, (lapack_int)nb, h->w,
                                  (lapack_int)rows, h->tauf, &q, -1) == 0)
    h->lwork = (lapack_int)q > (lapack_int)nb ? (lapack_int)q : (lapack_int)nb;
  else
    h->lwork = (lapack_int)(nb * 64);
  h->work = malloc((size_t)h->lwork * sizeof *h->work);
  if (s == KILN_OK && (!h->w || !h->tf || !h->tauf || !h->work))
    s = kiln__fail(KILN_ERR_HOST_MEMORY, L->op, 0, "no host memory for a %llu x %llu panel",
                   (unsigned long long)rows, (unsigned long long)nb);
  if (s != KILN_OK)
    hq_free(L, h);
  return s;
}

/*
 * Hybrid QR (MAGMA's scheme): each panel goes to the host, dgeqrf factors it and dlarft forms
 * its T; the panel (R and the reflectors), tau, the explicit V and T come back and the device
 * applies I - V T^T V^T to the trailing columns by three GEMMs, the next panel's columns first
 * and read back while the rest is updated (look-ahead).
 */
static kiln_status
geqrf_hybrid(const kiln__lsp *L, kiln__lsp_mat a, uint64_t m, uint64_t n, kiln__lsp_mat tau,
             kiln__lsp_ws *ws)
{
  uint64_t k = m < n ? m : n, nb = L->nb;
  hq h;
  KILN_TRY(hq_make(L, m, nb, &h));
  uint64_t jb = k < nb ? k : nb;
  kiln_status s = kiln__lh_read(L->op, L->ctx, a.mem, a.off, a.ld, m, jb, L->ts, h.panel, NULL);
  for (uint64_t j0 = 0; s == KILN_OK && j0 < k; j0 += nb) {
    jb = k - j0 < nb ? k - j0 : nb;
    uint64_t mr = m - j0, r = j0 + jb;
    kiln__lh_to_colmajor(L->dt, h.panel->p, mr, jb, h.w);
    lapack_int info = LAPACKE_dgeqrf_work(LAPACK_COL_MAJOR, (lapack_int)mr, (lapack_int)jb, h.w,
                                          (lapack_int)mr, h.tauf, h.work, h.lwork);
    if (info != 0) {
      s = kiln__fail(KILN_ERR_INTERNAL, L->op, info, "LAPACK dgeqrf rejected a panel (info %d)",
                     (int)info);
      break;
    }
    kiln__lh_from_colmajor(L->dt, h.w, mr, mr, jb, h.panel->p);
    s = kiln__lh_write(L->op, L->ctx, a.mem, a.off + j0 * a.ld + j0, a.ld, mr, jb, L->ts, h.panel);
    kiln__lh_store(L->dt, h.tauf, jb, h.tau->p);
    if (s == KILN_OK)
      s = kiln__lh_write(L->op, L->ctx, tau.mem, tau.off + j0, jb, 1, jb, L->ts, h.tau);
    if (s != KILN_OK || r >= n)
      continue;
    LAPACKE_dlarft_work(LAPACK_COL_MAJOR, 'F', 'C', (lapack_int)mr, (lapack_int)jb, h.w,
                        (lapack_int)mr, h.tauf, h.tf, (lapack_int)jb);
    /* V explicit (unit diagonal, zeros above) and T upper, both row-major for the GEMMs */
    for (uint64_t j = 0; j < jb; j++) {
      for (uint64_t i = 0; i < j && i < mr; i++)
        h.w[j * mr + i] = 0.0;
      if (j < mr)
        h.w[j * mr + j] = 1.0;
      for (uint64_t i = j + 1; i < jb; i++)
        h.tf[j * jb + i] = 0.0;
    }
    kiln__lh_from_colmajor(L->dt, h.w, mr, mr, jb, h.v->p);
    kiln__lh_from_colmajor(L->dt, h.tf, jb, jb, jb, h.t->p);
    s = kiln__lh_write(L->op, L->ctx, ws->v->mem, kiln__ops_elem_offset(ws->v), jb, mr, jb, L->ts,
                       h.v);
    if (s == KILN_OK)
      s = kiln__lh_write(L->op, L->ctx, ws->t->mem, kiln__ops_elem_offset(ws->t), jb, jb, jb, L->ts,
                         h.t);
    /* C -= V (T^T (V^T C)) with the two small products over all n - r columns at once, the
     * last GEMM first on the next panel's columns, which are then read back */
    uint64_t jn = r < k ? (k - r < nb ? k - r : nb) : 0, nc = n - r;
    kiln__lsp_mat v = kiln__lsp_tmat(ws->v, jb), t = kiln__lsp_tmat(ws->t, jb);
    kiln__lsp_mat w = kiln__lsp_tmat(ws->w, nc), w2 = kiln__lsp_tmat(ws->w2, nc);
    if (s == KILN_OK)
      s = vt_c(L, mr, jb, v, at(a, j0, r), nc, w);
    if (s == KILN_OK)
      s = gemm(L, 1, 0, jb, nc, jb, 1.0, t, w, 0.0, w2);
    if (s == KILN_OK)
      s = gemm(L, 0, 0, mr, jn ? jn : nc, jb, -1.0, v, w2, 1.0, at(a, j0, r));
    if (s != KILN_OK || jn == 0)
      continue;
    cl_event ev;
    s = kiln__lh_read(L->op, L->ctx, a.mem, a.off + r * a.ld + r, a.ld, m - r, jn, L->ts, h.panel,
                      &ev);
    if (s != KILN_OK)
      break;
    s = gemm(L, 0, 0, mr, nc - jn, jb, -1.0, v, at(w2, 0, jn), 1.0, at(a, j0, r + jn));
    kiln_status sw = kiln__lh_wait(L->op, L->ctx, ev);
    if (s == KILN_OK)
      s = sw;
  }
  hq_free(L, &h);
  return s;
}
#endif

/* Copies the jb x jb T of one panel (ws->t, contiguous) into the outer block's T (ws->tb, row
 * stride JB) at (r, r). */
static kiln_status
t_place(const kiln__lsp *L, kiln__lsp_ws *ws, uint64_t JB, uint64_t r, uint64_t jb)
{
  return kiln__linalg_copy_rect(L->op, L->ctx, L->ts, ws->t->mem, kiln__ops_elem_offset(ws->t), jb,
                                ws->tb->mem, kiln__ops_elem_offset(ws->tb) + r * JB + r, JB, jb,
                                jb);
}

/*
 * The outer block's T (ws->tb, JB x JB, the panels' T already on its diagonal, zero below) of
 * the JB reflectors in ws->v (rows x JB): block column c is -T[0:c, 0:c] (V[:, 0:c]^H V[:, c:])
 * T_c, LAPACK dlarft's recurrence by blocks (V[:, c:] is zero above row c, so the product runs
 * over rows c and below).
 */
static kiln_status
t_join(const kiln__lsp *L, uint64_t rows, uint64_t JB, kiln__lsp_ws *ws)
{
  kiln__lsp_mat v = kiln__lsp_tmat(ws->v, JB), tb = kiln__lsp_tmat(ws->tb, JB);
  for (uint64_t c = L->nb; c < JB && c < rows; c += L->nb) {
    uint64_t jb = JB - c < L->nb ? JB - c : L->nb;
    kiln__lsp_mat g = kiln__lsp_tmat(ws->g, jb), y = kiln__lsp_tmat(ws->y, jb);
    KILN_TRY(vt_c(L, rows - c, c, at(v, c, 0), at(v, c, c), jb, g));
    KILN_TRY(gemm(L, 0, 0, c, jb, jb, 1.0, g, at(tb, c, c), 0.0, y));
    KILN_TRY(gemm(L, 0, 0, c, jb, c, -1.0, tb, y, 0.0, at(tb, 0, c)));
  }
  return KILN_OK;
}

/*
 * Device route: panels of nb columns; with two levels (L->nb2 > nb) each panel updates only
 * the columns of its outer block of nb2, and the outer block's reflectors then update the
 * trailing columns at once with its assembled T, on the large GEMM kernel (L->large2).
 */
kiln_status
kiln__lsp_geqrf(const kiln__lsp *L, kiln__lsp_mat a, uint64_t m, uint64_t n, kiln__lsp_mat tau,
                kiln__lsp_ws *ws)
{
  uint64_t k = m < n ? m : n, nb = L->nb, nb2 = L->nb2;
  ws->ts_n = 0;
  ws->ts_big = 0;
  if (k == 0)
    return KILN_OK;
#if KILN_HAVE_LAPACKE
  if (L->host)
    return geqrf_hybrid(L, a, m, n, tau, ws);
#endif
  qr_pan P;
  KILN_TRY(qr_pan_make(L, ws, &P));
  if (ws->ts) {
    ws->ts_n = n;
    ws->ts_big = nb2 > nb;
  }
  kiln__lsp L2 = *L;
  L2.large = L->large2;
  kiln_status s = KILN_OK;
  for (uint64_t J0 = 0; s == KILN_OK && J0 < k; J0 += nb2) {
    uint64_t JB = k - J0 < nb2 ? k - J0 : nb2, JE = nb2 > nb ? J0 + JB : n;
    int big = nb2 > nb && (J0 + JB < n || ws->ts);
    if (big)
      s = kiln__linalg_zero(L->op, L->ctx, ws->tb);
    for (uint64_t j0 = J0; s == KILN_OK && j0 < J0 + JB; j0 += nb) {
      uint64_t jb = J0 + JB - j0 < nb ? J0 + JB - j0 : nb;
      kiln__lsp_mat tj = tau;
      tj.off += j0;
      int t_done = 0, more = j0 + jb < JE, want_t = more || big;
      s = panel_run(L, &P, at(a, j0, j0), m - j0, jb, tj, ws, want_t ? ws->t : NULL, &t_done);
      if (s != KILN_OK || !want_t)
        continue;
      s = t_done ? block_v(L, at(a, j0, j0), m - j0, jb, ws)
                 : block_vt(L, at(a, j0, j0), m - j0, jb, tj, ws);
      if (s == KILN_OK && ws->ts && !ws->ts_big)
        s = t_copy(L, ws->t, 0, ws->ts, ws->ts_off + j0 * nb, jb);
      if (s == KILN_OK && big)
        s = t_place(L, ws, JB, j0 - J0, jb);
      if (s == KILN_OK && more)
        s = block_apply(L, m - j0, jb, 1, at(a, j0, j0 + jb), JE - j0 - jb, ws);
    }
    if (s != KILN_OK || !big)
      continue;
    s = block_v(L, at(a, J0, J0), m - J0, JB, ws);
    if (s == KILN_OK)
      s = t_join(L, m - J0, JB, ws);
    if (s == KILN_OK && ws->ts)
      s = t_copy(L, ws->tb, 0, ws->ts, ws->ts_off + J0 * nb2, JB);
    if (s == KILN_OK && J0 + JB < n)
      s = block_apply_t(&L2, m - J0, JB, 1, at(a, J0, J0 + JB), n - J0 - JB,
                        kiln__lsp_tmat(ws->tb, JB), ws);
  }
  return s;
}

/* kiln__lsp_ormqr; with identity (trans 0 only), C is the identity and each block touches
 * only its own columns and those right of them (dorgqr): applied last to first, the blocks
 * leave the identity's columns left of j0 zero in rows j0 and below. With the outer blocks'
 * T kept by geqrf (ws->ts_big) the blocks are those, on the large GEMM kernel. */
static kiln_status
ormqr_blocks(const kiln__lsp *L, kiln__lsp_mat a, uint64_t m, uint64_t k, kiln__lsp_mat tau,
             int trans, kiln__lsp_mat c, uint64_t ncols, kiln__lsp_ws *ws, int identity)
{
  int big = ws->ts && ws->ts_big;
  uint64_t nb = big ? L->nb2 : L->nb, nblk = (k + nb - 1) / nb;
  if (ncols == 0 || m == 0)
    return KILN_OK;
  kiln__lsp L2 = *L;
  L2.large = L->large2;
  /* Q C applies H_0 (H_1 (.. C)): the blocks last to first; Q^T C the other way round. */
  for (uint64_t i = 0; i < nblk; i++) {
    uint64_t blk = trans ? i : nblk - 1 - i, j0 = blk * nb, jb = k - j0 < nb ? k - j0 : nb;
    uint64_t c0 = identity ? j0 : 0;
    kiln__lsp_mat tj = tau;
    tj.off += j0;
    if (big) {
      KILN_TRY(block_v(L, at(a, j0, j0), m - j0, jb, ws));
      KILN_TRY(t_copy(L, ws->ts, ws->ts_off + j0 * nb, ws->tb, 0, jb));
      KILN_TRY(block_apply_t(&L2, m - j0, jb, trans, at(c, j0, c0), ncols - c0,
                             kiln__lsp_tmat(ws->tb, jb), ws));
      continue;
    }
    if (ws->ts && j0 + jb < ws->ts_n) { /* geqrf's T of this block */
      KILN_TRY(block_v(L, at(a, j0, j0), m - j0, jb, ws));
      KILN_TRY(t_copy(L, ws->ts, ws->ts_off + j0 * nb, ws->t, 0, jb));
    } else {
      KILN_TRY(block_vt(L, at(a, j0, j0), m - j0, jb, tj, ws));
    }
    KILN_TRY(block_apply(L, m - j0, jb, trans, at(c, j0, c0), ncols - c0, ws));
  }
  return KILN_OK;
}

kiln_status
kiln__lsp_ormqr(const kiln__lsp *L, kiln__lsp_mat a, uint64_t m, uint64_t k, kiln__lsp_mat tau,
                int trans, kiln__lsp_mat c, uint64_t ncols, kiln__lsp_ws *ws)
{
  return ormqr_blocks(L, a, m, k, tau, trans, c, ncols, ws, 0);
}

kiln_status
kiln__lsp_orgqr(const kiln__lsp *L, kiln__lsp_mat a, uint64_t m, uint64_t k, kiln__lsp_mat tau,
                kiln__lsp_mat q, uint64_t ncols, kiln__lsp_ws *ws)
{
  return ormqr_blocks(L, a, m, k, tau, 0, q, ncols, ws, 1);
}

/* ---------------------------------------------------------------- validation, results */

/* A matrix operand of f32/f64, or also c64/c128 when complex_ok (QR). */
static kiln_status
check_mat_dt(const char *op, kiln_context *ctx, const kiln_tensor *t, const char *name,
             int complex_ok)
{
  KILN_TRY(kiln__tensor_check(op, t, ctx));
  int cplx = complex_ok && (t->dtype == KILN_C64 || t->dtype == KILN_C128);
  KILN_RETURN_IF(t->dtype != KILN_F32 && t->dtype != KILN_F64 && !cplx, KILN_ERR_DTYPE, op,
                 "%s is %s; this op accepts f32 and f64%s", name, kiln_dtype_name(t->dtype),
                 complex_ok ? ", c64 and c128" : " (complex: not yet)");
  KILN_RETURN_IF(!kiln__device_has_dtype(&ctx->info, t->dtype), KILN_ERR_UNSUPPORTED, op,
                 "%s is %s but the device has no fp64", name, kiln_dtype_name(t->dtype));
  char b[128];
  KILN_RETURN_IF(t->shape.ndim < 2, KILN_ERR_SHAPE, op,
                 "%s has shape %s; a matrix needs at least 2 dimensions [..., rows, cols]", name,
                 kiln__shape_format(&t->shape, b, sizeof b));
  KILN_RETURN_IF(t->shape.dims[t->shape.ndim - 1] > INT32_MAX ||
                     t->shape.dims[t->shape.ndim - 2] > INT32_MAX,
                 KILN_ERR_OVERFLOW, op, "%s has shape %s; rows and columns are limited to 2^31-1",
                 name, kiln__shape_format(&t->shape, b, sizeof b));
  return KILN_OK;
}

kiln_status
kiln__lsp_check_mat(const char *op, kiln_context *ctx, const kiln_tensor *t, const char *name)
{
  return check_mat_dt(op, ctx, t, name, 0);
}

kiln_status
kiln__lsp_check_mat_complex(const char *op, kiln_context *ctx, const kiln_tensor *t,
                            const char *name)
{
  return check_mat_dt(op, ctx, t, name, 1);
}

kiln_status
kiln__lsp_check_square(const char *op, const kiln_tensor *t, const char *name)
{
  char b[128];
  size_t nd = t->shape.ndim;
  KILN_RETURN_IF(t->shape.dims[nd - 1] != t->shape.dims[nd - 2], KILN_ERR_SHAPE, op,
                 "%s has shape %s; this op needs square matrices", name,
                 kiln__shape_format(&t->shape, b, sizeof b));
  return KILN_OK;
}

uint64_t
kiln__lsp_batch(const kiln_tensor *a)
{
  uint64_t n = 1;
  for (size_t i = 0; i + 2 < a->shape.ndim; i++)
    n *= (uint64_t)a->shape.dims[i];
  return n;
}

kiln__shape
kiln__lsp_shape(const kiln_tensor *a, const int64_t *tail, size_t ntail)
{
  kiln__shape s;
  memset(&s, 0, sizeof s);
  for (size_t i = 0; i + 2 < a->shape.ndim; i++)
    s.dims[s.ndim++] = a->shape.dims[i];
  for (size_t i = 0; i < ntail; i++)
    s.dims[s.ndim++] = tail[i];
  return s;
}

kiln_status
kiln__lsp_out(kiln__lsp_outs *o, const char *op, kiln_context *ctx, kiln_dtype dt,
              const kiln__shape *s, kiln_tensor **out)
{
  o->p[o->n] = out;
  o->made[o->n] = 0;
  kiln_status st = kiln__output_prepare(op, ctx, dt, s, out, &o->made[o->n]);
  o->n++;
  return st;
}

kiln_status
kiln__lsp_outs_check(kiln__lsp_outs *o, const char *op, const kiln_tensor *in1,
                     const kiln_tensor *in2)
{
  kiln_tensor *r[6];
  for (size_t i = 0; i < o->n; i++)
    r[i] = *o->p[i];
  KILN_TRY(kiln__ops_outputs_disjoint(op, r, NULL, o->n));
  for (size_t i = 0; i < o->n; i++) {
    KILN_RETURN_IF((in1 && kiln__ops_alias(r[i], in1)) || (in2 && kiln__ops_alias(r[i], in2)),
                   KILN_ERR_INVALID_ARGUMENT, op,
                   "result %zu overlaps an input; use a separate tensor", i + 1);
  }
  return KILN_OK;
}

kiln_status
kiln__lsp_outs_end(kiln__lsp_outs *o, kiln_status s)
{
  if (s != KILN_OK)
    for (size_t i = 0; i < o->n; i++)
      kiln__output_discard(o->p[i], o->made[i]);
  return s;
}

kiln_status
kiln__lsp_download(const kiln__lsp *L, const kiln_tensor *t, double **out)
{
  uint64_t n = t->numel;
  double *d = malloc((n ? n : 1) * sizeof *d);
  KILN_RETURN_IF(!d, KILN_ERR_HOST_MEMORY, L->op, "no memory for %llu elements on the host",
                 (unsigned long long)n);
  kiln_status s = n ? kiln__ops_read(L->op, L->ctx, t, 0, d, n * L->ts) : KILN_OK;
  /* f32 widens in place from the back, so no second buffer is needed. */
  if (s == KILN_OK && L->dt == KILN_F32)
    for (uint64_t i = n; i-- > 0;)
      d[i] = (double)((float *)d)[i];
  if (s != KILN_OK) {
    free(d);
    d = NULL;
  }
  *out = d;
  return s;
}

kiln_status
kiln__lsp_upload(const kiln__lsp *L, kiln_tensor *t, const double *v)
{
  uint64_t n = t->numel;
  if (n == 0)
    return KILN_OK;
  const void *src = v;
  float *f = NULL;
  if (L->dt == KILN_F32) {
    f = malloc(n * sizeof *f);
    KILN_RETURN_IF(!f, KILN_ERR_HOST_MEMORY, L->op, "no memory for %llu elements on the host",
                   (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++)
      f[i] = (float)v[i];
    src = f;
  }
  cl_int err = clEnqueueWriteBuffer(L->ctx->queue, t->mem, CL_TRUE, t->offset, n * L->ts, src, 0,
                                    NULL, NULL);
  free(f);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(L->op, err, "clEnqueueWriteBuffer");
}

/* ---------------------------------------------------------------- kiln_linalg_qr */

kiln_status
kiln_linalg_qr(kiln_context *ctx, const kiln_tensor *a, kiln_qr_mode mode, kiln_tensor **q,
               kiln_tensor **r)
{
  static const char op[] = "kiln_linalg_qr";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(kiln__lsp_check_mat_complex(op, ctx, a, "a"));
  KILN_RETURN_IF(mode != KILN_QR_REDUCED && mode != KILN_QR_COMPLETE && mode != KILN_QR_R,
                 KILN_ERR_INVALID_ARGUMENT, op, "mode is %d, not a kiln_qr_mode", (int)mode);
  KILN_RETURN_IF(mode != KILN_QR_R && !q, KILN_ERR_INVALID_ARGUMENT, op, "q is NULL");
  KILN_RETURN_IF(!r, KILN_ERR_INVALID_ARGUMENT, op, "r is NULL");
  size_t nd = a->shape.ndim;
  uint64_t m = (uint64_t)a->shape.dims[nd - 2], n = (uint64_t)a->shape.dims[nd - 1];
  uint64_t k = m < n ? m : n, batch = kiln__lsp_batch(a);
  uint64_t qc = mode == KILN_QR_COMPLETE ? m : k, rr = mode == KILN_QR_COMPLETE ? m : k;
  int64_t qt[2] = {(int64_t)m, (int64_t)qc}, rt[2] = {(int64_t)rr, (int64_t)n};
  kiln__shape qs = kiln__lsp_shape(a, qt, 2), rs = kiln__lsp_shape(a, rt, 2);
  kiln__lsp L = kiln__lsp_begin(op, ctx, a);
  kiln__lsp_outs o = {0};
  kiln_status s = kiln__lsp_out(&o, op, ctx, a->dtype, &rs, r);
  if (s == KILN_OK && mode != KILN_QR_R)
    s = kiln__lsp_out(&o, op, ctx, a->dtype, &qs, q);
  if (s == KILN_OK)
    s = kiln__lsp_outs_check(&o, op, a, NULL);
  kiln_tensor *w = NULL, *tau = NULL;
  kiln__lsp_ws ws = {0};
  if (s == KILN_OK && a->numel)
    s = kiln__ops_scratch(op, ctx, a->dtype, a->numel, &w);
  if (s == KILN_OK && a->numel)
    s = kiln__ops_scratch(op, ctx, a->dtype, batch * k, &tau);
  if (s == KILN_OK && a->numel)
    s = kiln__lsp_ws_make(&L, m, n > qc ? n : qc, &ws);
  /* forming Q reuses geqrf's T of each block: every matrix of the batch alike, so that
   * batched results stay equal to unbatched ones bit for bit (at most 2 k nb elements each;
   * with two levels the outer blocks' T, at most 2 k nb2) */
  uint64_t tsz = (k + L.nb2 - 1) / L.nb2 * L.nb2 * L.nb2;
  if (s == KILN_OK && a->numel && mode != KILN_QR_R && k > L.nb)
    s = kiln__ops_scratch(op, ctx, a->dtype, batch * tsz, &ws.ts);
  if (s == KILN_OK && a->numel) {
    kiln_tensor *wv = NULL;
    s = kiln__tensor_view(op, w, 0, &a->shape, &wv);
    if (s == KILN_OK)
      s = kiln__ops_copy(op, ctx, a, wv);
    kiln_tensor_release(wv);
  }
  for (uint64_t b = 0; s == KILN_OK && b < batch && k; b++) {
    kiln__lsp_mat ab = kiln__lsp_tmat(w, n), tb = kiln__lsp_tmat(tau, 1);
    ab.off += b * m * n;
    tb.off += b * k;
    ws.ts_off = b * tsz;
    s = kiln__lsp_geqrf(&L, ab, m, n, tb, &ws);
  }
  /* R from the factored copy; zero rows past k (complete mode, m > n) and empty matrices. */
  cl_kernel kk;
  if (s == KILN_OK && (*r)->numel)
    s = kern(&L, "qr_triu", &kk);
  if (s == KILN_OK && (*r)->numel) {
    kiln__args args = kiln__args_begin(op, kk);
    if (w)
      kiln__args_tensor(&args, w);
    else
      kiln__args_tensor(&args, *r); /* m or n is 0: never read */
    kiln__args_u64(&args, m * n);
    kiln__args_u32(&args, (uint32_t)m);
    kiln__args_u32(&args, (uint32_t)n);
    kiln__args_tensor(&args, *r);
    kiln__args_u64(&args, rr * n);
    kiln__args_u32(&args, (uint32_t)rr);
    kiln__args_u64(&args, batch);
    s = enqueue2(&args, &L, n, rr * batch, 8, 8);
  }
  if (s == KILN_OK && mode != KILN_QR_R && (*q)->numel) {
    s = kern(&L, "eye_rect", &kk);
    if (s == KILN_OK) {
      kiln__args args = kiln__args_begin(op, kk);
      kiln__args_tensor(&args, *q);
      kiln__args_u64(&args, m * qc);
      kiln__args_u32(&args, (uint32_t)m);
      kiln__args_u32(&args, (uint32_t)qc);
      kiln__args_u64(&args, batch);
      s = enqueue2(&args, &L, qc, m * batch, 8, 8);
    }
    for (uint64_t b = 0; s == KILN_OK && b < batch && k; b++) {
      kiln__lsp_mat ab = kiln__lsp_tmat(w, n), tb = kiln__lsp_tmat(tau, 1),
                    qb = kiln__lsp_tmat(*q, qc);
      ab.off += b * m * n;
      tb.off += b * k;
      qb.off += b * m * qc;
      ws.ts_off = b * tsz;
      s = kiln__lsp_orgqr(&L, ab, m, k, tb, qb, qc, &ws);
    }
  }
  kiln__lsp_ws_release(&ws);
  kiln_tensor_release(w);
  kiln_tensor_release(tau);
  s = kiln__lsp_outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---------------------------------------------------------------- family */

static const struct kiln__source spectral_sources[] = {{SRC, KILN__DT_FLOATS | KILN__DT_COMPLEX},
                                                       {"linalg_eig", KILN__DT_FLOATS},
                                                       {"linalg_tridiag", KILN__DT_BIT(KILN_F64)},
                                                       {NULL, 0}};

const struct kiln__family kiln__linalg_spectral_family = {.name = "linalg_spectral",
                                                          .sources = spectral_sources};

kiln_status
kiln__lsp_gemm(const kiln__lsp *L, int ta, int tb, uint64_t m, uint64_t n, uint64_t k, double alpha,
               kiln__lsp_mat a, kiln__lsp_mat b, double beta, kiln__lsp_mat c)
{
  return gemm(L, ta, tb, m, n, k, alpha, a, b, beta, c);
}
