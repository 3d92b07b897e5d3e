/*
 * linalg family: LU (packed and unpacked), lu_solve, solve, inv, det, slogdet, rcond,
 * Cholesky with its solve and inverse, trsm and trmm (include/kiln/linalg.h,
 * docs/linalg.md).
 *
 * Matrices with both dimensions <= KILN__LINALG_SMALL_MAX factor one work-group per matrix
 * in local memory (lu_small, chol_small), whatever the batch. Larger ones run the blocked
 * right-looking algorithms one matrix at a time: a panel of nb columns factored by one
 * work-group of kiln's kernels, then the trailing update through CLBlast TRSM and GEMM
 * (SYRK for Cholesky), or through kiln's simple kernels (trsm_cols, gemm_acc) when CLBlast
 * is absent or disabled (KILN_DEBUG_NO_CLBLAST). Triangular solves of small systems with
 * few right-hand sides always take trsm_cols, so the route depends on sizes only, never on
 * the batch.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/env.h"
#include "core/error.h"
#include "core/shape.h"
#include "kiln/linalg.h"
#include "kiln_config.h"
#include "ops/blas_route.h"
#include "ops/families.h"
#include "ops/linalg_host.h"
#include "ops/linalg_internal.h"
#include "ops/ops_common.h"
#include "runtime/runtime.h"
#include "runtime/tuner.h"
#if KILN_HAVE_LAPACKE
#include <lapacke.h>
#endif
#if KILN_HAVE_CLBLAST
#include "backends/clblast.h"
#endif

#define SRC "linalg"

/* ---------------------------------------------------------------- choices and hooks */

static atomic_int hook_nb = -1, hook_small = -1, hook_own = -1, hook_leaf = -1, hook_route = -1;

static atomic_llong hook_own_max = -1, hook_large_min = -1, hook_solve_nb = -1, hook_lu_nb2 = -1;
static atomic_int hook_gemm = -1, hook_ahead = -1, hook_pwg = -1;

void
kiln__linalg_test_gemm(int gemm)
{
  atomic_store(&hook_gemm, gemm);
}

void
kiln__linalg_test_ahead(int ahead)
{
  atomic_store(&hook_ahead, ahead);
}

void
kiln__linalg_test_pwg(int pwg)
{
  atomic_store(&hook_pwg, pwg);
}

static atomic_uint grid_launches, chol_col_cross, cplx_large_calls;

unsigned
kiln__linalg_test_cplx_large(void)
{
  return atomic_load(&cplx_large_calls);
}

unsigned
kiln__linalg_test_chol_col_cross(void)
{
  return atomic_load(&chol_col_cross);
}

unsigned
kiln__linalg_test_grid_launches(void)
{
  return atomic_load(&grid_launches);
}

uint64_t
kiln__linalg_grid_groups(const kiln_context *ctx, uint32_t pwg)
{
  /* one group gains nothing by default (a device of one compute unit, as the oclgrind
   * simulator reports; the test hook still takes it) */
  if (pwg <= 1 || (ctx->info.compute_units < 2 && atomic_load(&hook_pwg) <= 0))
    return 0;
  /* CPUs run one group: PoCL's threads take a launch's groups in chunks, and two groups on
   * the same thread would wait for each other forever */
  uint64_t cu = ctx->info.compute_units ? ctx->info.compute_units : 1;
  return !ctx->info.is_gpu ? 1 : pwg < cu ? pwg : cu;
}

kiln_status
kiln__linalg_zero(const char *op, kiln_context *ctx, kiln_tensor *t)
{
  if (t->nbytes == 0)
    return KILN_OK;
  cl_int zero = 0;
  cl_int err = clEnqueueFillBuffer(ctx->queue, t->mem, &zero, sizeof zero, t->offset, t->nbytes, 0,
                                   NULL, NULL);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "clEnqueueFillBuffer");
}

void
kiln__linalg_test_own_gemm_max(long long v)
{
  atomic_store(&hook_own_max, v);
}

uint64_t
kiln__linalg_own_gemm_max(void)
{
  long long h = atomic_load(&hook_own_max);
  return h >= 0 ? (uint64_t)h : KILN__LINALG_OWN_GEMM_MAX;
}

void
kiln__linalg_test_large_min(long long v)
{
  atomic_store(&hook_large_min, v);
}

uint64_t
kiln__linalg_large_min(void)
{
  long long hl = atomic_load(&hook_large_min);
  return hl >= 0 ? (uint64_t)hl : KILN__LINALG_LARGE_MIN;
}

void
kiln__linalg_test_solve_nb(long long v)
{
  atomic_store(&hook_solve_nb, v);
}

void
kiln__linalg_test_lu_nb2(long long v)
{
  atomic_store(&hook_lu_nb2, v);
}

static atomic_uint lu2_runs;

unsigned
kiln__linalg_test_lu2_runs(void)
{
  return atomic_load(&lu2_runs);
}

uint32_t
kiln__linalg_gemm_of(const kiln_context *ctx, uint32_t gemm)
{
  return gemm ? gemm : ctx->info.is_gpu ? KILN__LINALG_RULE_GEMM_GPU : KILN__LINALG_RULE_GEMM_CPU;
}

/*
 * The real dtype whose large kernel serves dt's products (cplx_large for complex ones). By
 * default c128 on GPUs only: on the H200 (bench/h200/cqr3.sh, session 24) it took c128
 * Cholesky, inverse and solve at 4096 from 11.0 / 95.2 / 50.2 ms to 9.5 / 74.4 / 50.2 (the FP64
 * tensor cores behind the real kernel) and lost nowhere, while c64 moved within -4% / +10%
 * (its real kernel has no tensor cores to gain). KILN_DEBUG_CPLX_LARGE=1 or 0 (or the test
 * hook) forces it on or off for both complex dtypes.
 */
static atomic_int hook_cplx_large = -1;

void
kiln__linalg_test_cplx_large_on(int on)
{
  atomic_store(&hook_cplx_large, on);
}

static kiln_dtype
large_real(const kiln_context *ctx, kiln_dtype dt)
{
  if (dt != KILN_C64 && dt != KILN_C128)
    return dt;
  int on = atomic_load(&hook_cplx_large);
  if (on < 0) {
    const char *v = kiln__env(KILN__ENV_DEBUG_CPLX_LARGE);
    on = v && *v ? strcmp(v, "0") != 0 : ctx->info.is_gpu && dt == KILN_C128;
  }
  if (!on)
    return dt;
  return dt == KILN_C64 ? KILN_F32 : KILN_F64;
}

uint32_t
kiln__linalg_large_bit(const kiln_context *ctx, kiln_dtype dt, uint32_t gemm)
{
  kiln_dtype rt = large_real(ctx, dt);
  return gemm == KILN__LINALG_GEMM_LARGE && (rt == KILN_F32 || rt == KILN_F64) &&
                 kiln__gemm_large_ok(ctx, rt)
             ? KILN__LINALG_TILE_LARGE
             : 0u;
}

void
kiln__linalg_test_route(int route)
{
  atomic_store(&hook_route, route);
}

int
kiln__linalg_hook_route(void)
{
  return atomic_load(&hook_route);
}

int
kiln__linalg_is_host(const kiln_context *ctx, uint32_t route, int rule_host, uint64_t elements)
{
  if (!KILN_HAVE_LAPACKE || route == KILN__LINALG_ROUTE_DEVICE)
    return 0;
  if (route == KILN__LINALG_ROUTE_HOST || !ctx->info.is_gpu)
    return 1;
  return rule_host && elements > KILN__LINALG_RULE_DEVICE_MAX;
}

void
kiln__linalg_choose(const char *op, kiln_context *ctx, kiln_dtype dt, uint64_t elements,
                    kiln__linalg_params *p)
{
  memset(p, 0, sizeof *p);
  p->route = KILN__LINALG_ROUTE_RULE;
  /* complex dtypes take their part type's entries (c128: f64's): the tuner times real LU only,
   * and an override (kiln bench --tune linalg:...) then reaches them too */
  kiln_dtype tdt = kiln__dtype_is_complex(dt) ? kiln__dtype_real_part(dt) : dt;
  if (tdt == KILN_F32 || tdt == KILN_F64)
    kiln__tune_lookup(ctx, &kiln__linalg_tune, tdt, KILN__LAYOUT_FULL, elements ? elements : 1, p);
  if (dt == KILN_F32 || dt == KILN_F64) {
    if (kiln__blas_use_clblast(ctx))
      (void)kiln__blas_xgemm_prepare(op, ctx, dt); /* a failure leaves CLBlast's own set */
  }
  int hr = atomic_load(&hook_route);
  if (hr >= 0)
    p->route = (uint32_t)hr;
  int hg = atomic_load(&hook_gemm);
  if (hg >= 0)
    p->gemm = (uint32_t)hg;
  int ha = atomic_load(&hook_ahead);
  if (ha >= 0)
    p->ahead = (uint32_t)ha;
  int hp = atomic_load(&hook_pwg);
  if (hp > 0)
    p->pwg = (uint32_t)hp;
}

void
kiln__linalg_test_set(int nb, int small_max, int own, int leaf)
{
  atomic_store(&hook_nb, nb);
  atomic_store(&hook_small, small_max);
  atomic_store(&hook_own, own);
  atomic_store(&hook_leaf, leaf);
}

unsigned
kiln__linalg_block(const kiln_device_info *info)
{
  int h = atomic_load(&hook_nb);
  if (h > 0)
    return (unsigned)h;
  return info->is_gpu ? KILN__LINALG_NB_GPU : KILN__LINALG_NB_CPU;
}

/* What one call works with (ctx->lock held while it is used). */
typedef struct la {
  const char *op;
  kiln_context *ctx;
  kiln_dtype dt;
  size_t ts;
  int clblast; /* trailing updates through CLBlast */
  uint64_t nb, small_max;
  uint64_t leaf;        /* widest LU panel lu_panel factors without recursing */
  int tile;             /* every GEMM on gemm_tile (KILN__LINALG_GEMM_TILE or _LARGE) */
  uint32_t large;       /* KILN__LINALG_TILE_LARGE: large products on kiln's large GEMM kernel */
  uint64_t chol_nb;     /* Cholesky's block (panel) size */
  uint32_t chol_large;  /* Cholesky's large bit */
  uint32_t solve_large; /* the blocked solves' large bit (two levels with many right-hand sides) */
  uint64_t solve_nb;    /* and their outer block */
  uint64_t lu_nb2;      /* the device route LU's outer block (0: one level) */
  uint32_t lu_large;    /* and the large bit of its outer updates */
  int ahead;            /* look-ahead on a second queue (device route LU and Cholesky) */
  uint32_t pwg;         /* LU panel work-groups (1: lu_panel, more: lu_panel_grid) */
  int host_lu, host_chol;    /* LU, Cholesky panels on the host (the hybrid route) */
  uint64_t hnb_lu, hnb_chol; /* host route block sizes; 0: the whole matrix */
} la;

/*
 * What an op on a (its last two dimensions the matrix) works with: the route and block sizes
 * chosen before, then ctx->lock taken (the caller drops it).
 */
static la
la_begin(const char *op, kiln_context *ctx, const kiln_tensor *a)
{
  size_t nd = a->shape.ndim;
  uint64_t elems = (uint64_t)a->shape.dims[nd - 1] * (uint64_t)a->shape.dims[nd - 2];
  kiln__linalg_params p;
  kiln__linalg_choose(op, ctx, a->dtype, elems, &p);
  kiln__ctx_lock(ctx);
  kiln_dtype dt = a->dtype;
  la L = {.op = op,
          .ctx = ctx,
          .dt = dt,
          .ts = kiln_dtype_size(dt),
          .nb = kiln__linalg_block(&ctx->info),
          .small_max = KILN__LINALG_SMALL_MAX};
  /* the host route's LAPACK calls are the real ones (dgetrf, dpotrf): complex matrices take
   * the device route */
  int cplx = kiln__dtype_is_complex(dt);
  L.host_lu = !cplx && kiln__linalg_is_host(ctx, p.route, KILN__LINALG_RULE_HOST_LU, elems);
  L.host_chol = !cplx && kiln__linalg_is_host(ctx, p.route, KILN__LINALG_RULE_HOST_CHOL, elems);
  int hnb = atomic_load(&hook_nb);
  uint64_t nb = hnb > 0 ? (uint64_t)hnb : p.nb;
  L.hnb_lu = nb ? nb : ctx->info.is_gpu ? KILN__LINALG_HOST_NB_LU : 0;
  L.hnb_chol = nb ? nb : ctx->info.is_gpu ? KILN__LINALG_HOST_NB_CHOL : 0;
  if (p.nb && hnb <= 0)
    L.nb = p.nb;
  L.clblast = KILN_HAVE_CLBLAST && !kiln__env_flag(KILN__ENV_DEBUG_NO_CLBLAST) &&
              atomic_load(&hook_own) <= 0;
  uint32_t g = kiln__linalg_gemm_of(ctx, p.gemm);
  L.tile = g == KILN__LINALG_GEMM_TILE || g == KILN__LINALG_GEMM_LARGE;
  L.large = kiln__linalg_large_bit(ctx, dt, g);
  L.ahead = (p.ahead ? p.ahead : KILN__LINALG_RULE_AHEAD) == 2;
  L.pwg = p.pwg ? p.pwg : ctx->info.is_gpu ? KILN__LINALG_RULE_PWG_GPU : KILN__LINALG_RULE_PWG_CPU;
  /* Cholesky's rule on GPUs: two-level panels with their SYRK on the large kernel */
  int chol_rule = ctx->info.is_gpu && !p.nb && hnb <= 0 && !L.ahead;
  uint64_t order = a->shape.dims[nd - 1];
  L.chol_nb = !chol_rule ? L.nb
              : order <= KILN__LINALG_CHOL_ONE_PANEL_GPU ? order
                                                         : KILN__LINALG_CHOL_NB_GPU;
  L.chol_large =
      chol_rule && !p.gemm ? kiln__linalg_large_bit(ctx, dt, KILN__LINALG_GEMM_LARGE) : L.large;
  L.solve_large = L.tile && ctx->info.is_gpu && !p.gemm
                      ? kiln__linalg_large_bit(ctx, dt, KILN__LINALG_GEMM_LARGE)
                      : L.large;
  /* LU's two levels: the same conditions as Cholesky's rule, orders of two outer blocks on */
  uint64_t rows = (uint64_t)a->shape.dims[nd - 2], kmin = rows < order ? rows : order;
  long long hn2 = atomic_load(&hook_lu_nb2);
  const char *en2 = kiln__env(KILN__ENV_DEBUG_LU_NB2);
  uint64_t w2 = KILN__LINALG_LU_NB2_GPU;
  L.lu_nb2 = hn2 >= 0                      ? (uint64_t)hn2
             : en2                         ? strtoull(en2, NULL, 10)
             : chol_rule && kmin / 2 >= w2 ? w2
                                           : 0;
  L.lu_large = L.chol_large;
  long long hsn = atomic_load(&hook_solve_nb);
  L.solve_nb = hsn > 0 ? (uint64_t)hsn : KILN__LINALG_SOLVE_NB_GPU;
  int hs = atomic_load(&hook_small);
  if (hs >= 0)
    L.small_max = (uint64_t)hs;
  int hl = atomic_load(&hook_leaf);
  L.leaf = hl > 0              ? (uint64_t)hl
           : !ctx->info.is_gpu ? UINT64_MAX
           : p.leaf            ? p.leaf
                               : KILN__LINALG_LEAF_GPU;
  return L;
}

/* A matrix (or the first of a batch): buffer and element offset. */
typedef struct mat {
  cl_mem mem;
  uint64_t off;
} mat;

static mat
tmat(const kiln_tensor *t)
{
  return (mat){t->mem, kiln__ops_elem_offset(t)};
}

static mat
at(mat x, uint64_t e)
{
  x.off += e;
  return x;
}

static void
args_mat(kiln__args *a, mat x)
{
  kiln__args_mem(a, x.mem);
  kiln__args_u64(a, x.off);
}

void
kiln__linalg_args_scalar(kiln__args *a, kiln_dtype dt, double v)
{
  if (dt == KILN_C64) {
    cl_float2 f = {{(float)v, 0.0f}};
    kiln__args_raw(a, sizeof f, &f);
  } else if (dt == KILN_C128) {
    cl_double2 d = {{v, 0.0}};
    kiln__args_raw(a, sizeof d, &d);
  } else {
    kiln__args_float(a, dt, v);
  }
}

/*
 * Transposes are 0 (none), 1 (transposed) or 2 (conjugate-transposed); for real dtypes 2 is 1.
 * The GEMM kernels take the conjugations as bits of their tri argument.
 */
static int
tr_of(const la *L, int t)
{
  return t == 2 && !kiln__dtype_is_complex(L->dt) ? 1 : t;
}

static uint32_t
conj_bits(const la *L, int ta, int tb)
{
  return (tr_of(L, ta) == 2 ? KILN__LINALG_TILE_CONJ_A : 0u) |
         (tr_of(L, tb) == 2 ? KILN__LINALG_TILE_CONJ_B : 0u);
}

static kiln_status
kern(const la *L, const char *name, cl_kernel *k)
{
  return kiln__ops_kernel(L->op, L->ctx, SRC, L->dt, name, k);
}

/*
 * Launches over (g0, g1) items in fixed work-groups of (l0, l1), the grid rounded up (the
 * kernels check their bounds): a fixed local size keeps PoCL from compiling one
 * specialisation per grid size.
 */
static kiln_status
enqueue2l(const kiln__args *a, const la *L, uint64_t g0, uint64_t g1, size_t l0, size_t l1)
{
  if (a->status != KILN_OK || g0 == 0 || g1 == 0)
    return a->status;
  size_t global[2] = {(size_t)((g0 + l0 - 1) / l0 * l0), (size_t)((g1 + l1 - 1) / l1 * l1)};
  size_t local[2] = {l0, l1};
  return kiln__args_enqueue(a, L->ctx, 2, global, local);
}

static kiln_status
enqueue2(const kiln__args *a, const la *L, uint64_t g0, uint64_t g1)
{
  return enqueue2l(a, L, g0, g1, 64, 1);
}

/*
 * Work-group size of the one-group-per-matrix kernels: on GPUs 32 lanes up to 32 rows, else
 * 64; 64 on CPUs (PoCL compiles each local size anew).
 */
static size_t
small_local(const la *L, cl_kernel k, uint64_t rows)
{
  size_t want = L->ctx->info.is_gpu && rows <= 32 ? 32 : 64,
         max = kiln__launch_pow2_local(L->ctx, k);
  return want < max ? want : max;
}

/*
 * Work-group size of the one-group panel kernels: the largest power of two the kernel takes,
 * at most 1024 on GPUs (the panel is latency-bound: more lanes keep more of its strided
 * loads in flight) and 256 on CPUs.
 */
static size_t
panel_local(const la *L, cl_kernel k)
{
  size_t max = 0, cap = L->ctx->info.is_gpu ? 1024 : 256, p = 1;
  if (clGetKernelWorkGroupInfo(k, L->ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof max, &max,
                               NULL) != CL_SUCCESS ||
      max == 0)
    max = L->ctx->info.max_work_group_size ? L->ctx->info.max_work_group_size : 1;
  if (max > cap)
    max = cap;
  while (p * 2 <= max)
    p *= 2;
  return p;
}

/* Whether an m x n matrix takes the one-work-group kernels (and its local memory fits). */
static int
is_small(const la *L, uint64_t m, uint64_t n)
{
  if (m > L->small_max || n > L->small_max)
    return 0;
  uint64_t bytes = m * (n | 1) * L->ts + 64 * (L->ts + 4);
  return bytes <= L->ctx->info.local_mem_bytes;
}

/* ---------------------------------------------------------------- primitives */

static kiln_status tri(const la *L, int solve, int left, int upper, int trans, int unit, uint64_t m,
                       uint64_t n, double alpha, mat a, uint64_t lda, uint64_t astride, mat b,
                       uint64_t ldb, uint64_t bstride, uint64_t batch);
static kiln_status tri_kernel(const la *L, int solve, int left, int upper, int trans, int unit,
                              uint64_t m, uint64_t n, double alpha, mat a, uint64_t lda,
                              uint64_t astride, mat b, uint64_t ldb, uint64_t bstride,
                              uint64_t batch);
static kiln_status eye_fill(const la *L, mat x, uint64_t n, uint64_t batch);
static kiln_status gemm_g(const la *L, int ta, int tb, uint64_t m, uint64_t n, uint64_t k,
                          double alpha, mat a, uint64_t lda, mat b, uint64_t ldb, double beta,
                          mat c, uint64_t ldc);
static kiln_status copy_rect(const la *L, mat src, uint64_t lds, mat dst, uint64_t ldd,
                             uint64_t rows, uint64_t cols);

/* tri_inv's padded order: a power of two from 8 up, at least n. */
static uint64_t
tri_inv_order(uint64_t n)
{
  return n <= 8 ? 8 : kiln__ops_pow2(n);
}

/* Local memory of tri_inv for an n x n block (its copy padded to N, and the joins' products). */
static uint64_t
tri_inv_local(const la *L, uint64_t n)
{
  const uint64_t N = tri_inv_order(n);
  return (N * (N | 1) + N * N / 4) * L->ts;
}

/*
 * X_b = M_b^-1 for the batch n x n triangles M_b (upper or lower, unit or not, row stride lda,
 * astride apart) into contiguous n x n blocks xstride apart (the other triangle zero): tri_inv,
 * one work-group per block, n <= TRSM_NB.
 */
static kiln_status
tri_inv(const la *L, int upper, int unit, uint64_t n, mat a, uint64_t lda, uint64_t astride, mat x,
        uint64_t xstride, uint64_t batch)
{
  if (n == 0 || batch == 0)
    return KILN_OK;
  const uint64_t N = tri_inv_order(n);
  size_t local = 256;
  if (tri_inv_local(L, n) > L->ctx->info.local_mem_bytes) { /* 64 x 64 f64: 41 KB */
    KILN_TRY(eye_fill(L, x, n, batch));
    return tri_kernel(L, 1, 1, upper, 0, unit, n, n, 1.0, a, lda, astride, x, n, xstride, batch);
  }
  cl_kernel k;
  KILN_TRY(kern(L, "tri_inv", &k));
  size_t max = kiln__launch_pow2_local(L->ctx, k);
  if (local > max)
    local = max;
  if (N > local)
    return kiln__fail(KILN_ERR_INTERNAL, L->op, 0,
                      "tri_inv: a %llu x %llu block needs %llu lanes, the kernel takes %zu",
                      (unsigned long long)n, (unsigned long long)n, (unsigned long long)N, local);
  kiln__args args = kiln__args_begin(L->op, k);
  args_mat(&args, a);
  kiln__args_u64(&args, astride);
  kiln__args_u64(&args, lda);
  kiln__args_u64(&args, 1);
  kiln__args_u32(&args, (uint32_t)n);
  kiln__args_u32(&args, (uint32_t)upper);
  kiln__args_u32(&args, (uint32_t)unit);
  args_mat(&args, x);
  kiln__args_u64(&args, xstride);
  kiln__args_u32(&args, (uint32_t)N);
  kiln__args_local(&args, N * (N | 1) * L->ts);
  kiln__args_local(&args, N * N / 4 * L->ts);
  return kiln__args_enqueue_1d(&args, L->ctx, (size_t)batch * local, local);
}

/* Block of the blocked triangular solve (tri_blocked): at most the small bound. */
#define TRSM_NB 64

/*
 * op(A) X = B in place for one n x n triangle A (row stride lda) and n x nrhs B (ldb), by
 * blocks of TRSM_NB: the inverses of all diagonal blocks first (tri_inv, all full blocks in
 * one launch), then per block X_i = op(A_ii)^-1 B_i and the
 * blocks not yet solved take -= op(A)_ji X_i, both GEMMs. CLBlast's TRSM does the same with
 * 16-wide blocks and many launches per call; on the H200 a 4096 solve with 16 right-hand
 * sides spent 40 ms there.
 */
static kiln_status
tri_blocked(const la *L, int upper, int trans, int unit, uint64_t n, uint64_t nrhs, mat a,
            uint64_t lda, mat b, uint64_t ldb)
{
  /* c128's 64 x 65 block (66 KB) does not fit 48 KiB of local memory, where tri_inv would fall
   * back to trsm_cols: halve the block until it fits */
  uint64_t nb = TRSM_NB;
  while (nb > 16 && tri_inv_local(L, nb) > L->ctx->info.local_mem_bytes)
    nb /= 2;
  uint64_t nblk = (n + nb - 1) / nb, full = n / nb;
  kiln_tensor *inv = NULL, *w = NULL;
  kiln_status s = kiln__ops_scratch(L->op, L->ctx, L->dt, nblk * nb * nb, &inv);
  if (s == KILN_OK)
    s = kiln__ops_scratch(L->op, L->ctx, L->dt, nb * nrhs, &w);
  mat di = s == KILN_OK ? tmat(inv) : (mat){0}, wk = s == KILN_OK ? tmat(w) : (mat){0};
  if (s == KILN_OK && full)
    s = tri_inv(L, upper, unit, nb, a, lda, nb * (lda + 1), di, nb * nb, full);
  uint64_t rest = n - full * nb;
  if (s == KILN_OK && rest)
    s = tri_inv(L, upper, unit, rest, at(a, full * nb * (lda + 1)), lda, 0, at(di, full * nb * nb),
                0, 1);
  /* op(A) lower: forward substitution, else backward. Two levels for many right-hand sides
   * (L->solve_large): outer blocks of q inner ones, the inner steps updating only their outer
   * block's rows, then one update q nb deep of the rows left, on the large GEMM kernel */
  int fwd = upper == (trans != 0);
  uint64_t q = nblk;
  la Lo = *L;
  if (L->solve_large && L->solve_nb >= 2 * nb && nrhs >= L->solve_nb && n >= 2 * L->solve_nb) {
    q = L->solve_nb / nb;
    Lo.large = L->solve_large;
  }
  uint64_t nout = (nblk + q - 1) / q;
  for (uint64_t so = 0; s == KILN_OK && so < nout; so++) {
    uint64_t o = fwd ? so : nout - 1 - so, i0 = o * q, i1 = i0 + q < nblk ? i0 + q : nblk;
    uint64_t R0 = i0 * nb, R1 = i1 * nb < n ? i1 * nb : n;
    for (uint64_t st = 0; s == KILN_OK && st < i1 - i0; st++) {
      uint64_t i = fwd ? i0 + st : i1 - 1 - st, r0 = i * nb, ib = n - r0 < nb ? n - r0 : nb;
      mat bi = at(b, r0 * ldb);
      s = copy_rect(L, bi, ldb, wk, nrhs, ib, nrhs);
      if (s == KILN_OK)
        s = gemm_g(L, trans, 0, ib, nrhs, ib, 1.0, at(di, i * nb * nb), ib, wk, nrhs, 0.0, bi, ldb);
      /* the rows of op(A) in the outer block's other inner blocks times X_i: op(A)[R, C] =
       * A[C, R]^T when trans */
      uint64_t r1 = r0 + ib, rs = fwd ? r1 : R0, rn = fwd ? R1 - r1 : r0 - R0;
      if (s == KILN_OK && rn)
        s = gemm_g(L, trans, 0, rn, nrhs, ib, -1.0,
                   trans ? at(a, r0 * lda + rs) : at(a, rs * lda + r0), lda, bi, ldb, 1.0,
                   at(b, rs * ldb), ldb);
    }
    /* the rows outside the outer block not yet solved, times its X */
    uint64_t rs = fwd ? R1 : 0, rn = fwd ? n - R1 : R0;
    if (s == KILN_OK && rn)
      s = gemm_g(&Lo, trans, 0, rn, nrhs, R1 - R0, -1.0,
                 trans ? at(a, R0 * lda + rs) : at(a, rs * lda + R0), lda, at(b, R0 * ldb), ldb,
                 1.0, at(b, rs * ldb), ldb);
  }
  kiln_tensor_release(inv);
  kiln_tensor_release(w);
  return s;
}

/*
 * X op(A) = B in place for one n x n triangle A (n <= TRSM_NB) and m x n B: A^-1 by tri_inv,
 * then X = B op(A^-1) as one GEMM (the device route's Cholesky block column).
 */
static kiln_status
tri_right_one(const la *L, int upper, int trans, int unit, uint64_t m, uint64_t n, mat a,
              uint64_t lda, mat b, uint64_t ldb)
{
  kiln_tensor *inv = NULL, *w = NULL;
  kiln_status s = kiln__ops_scratch(L->op, L->ctx, L->dt, n * n, &inv);
  if (s == KILN_OK)
    s = kiln__ops_scratch(L->op, L->ctx, L->dt, m * n, &w);
  if (s == KILN_OK)
    s = tri_inv(L, upper, unit, n, a, lda, 0, tmat(inv), 0, 1);
  if (s == KILN_OK)
    s = copy_rect(L, b, ldb, tmat(w), n, m, n);
  if (s == KILN_OK)
    s = gemm_g(L, 0, trans, m, n, n, 1.0, tmat(w), n, tmat(inv), n, 0.0, b, ldb);
  kiln_tensor_release(inv);
  kiln_tensor_release(w);
  return s;
}

/*
 * B = alpha op(A)^-1 B (solve) or alpha op(A) B, A on the left (m x m) or right (n x n) of
 * the m x n matrices B of a batch, row-major with leading dimensions lda, ldb. CLBlast takes
 * systems larger than the small bound (one call per matrix; solves with alpha 1 go to
 * tri_blocked's GEMMs, left, or tri_right_one's, right and up to TRSM_NB), trsm_cols/trmm_cols
 * the rest.
 */
static kiln_status
tri(const la *L, int solve, int left, int upper, int trans, int unit, uint64_t m, uint64_t n,
    double alpha, mat a, uint64_t lda, uint64_t astride, mat b, uint64_t ldb, uint64_t bstride,
    uint64_t batch)
{
  if (m == 0 || n == 0 || batch == 0)
    return KILN_OK;
  trans = tr_of(L, trans);
  uint64_t nsys = left ? m : n, nrhs = left ? n : m;
  /* solves that tri_blocked/tri_right_one turn into GEMMs (CLBlast's or gemm_tile) */
  int blocked = solve && alpha == 1.0 && (left || nsys <= TRSM_NB);
  if ((L->clblast || (L->tile && blocked)) && (nsys > L->small_max || nrhs > L->small_max)) {
    for (uint64_t i = 0; i < batch; i++) {
      mat ai = at(a, i * astride), bi = at(b, i * bstride);
      if (blocked && left)
        KILN_TRY(tri_blocked(L, upper, trans, unit, m, n, ai, lda, bi, ldb));
      else if (blocked)
        KILN_TRY(tri_right_one(L, upper, trans, unit, m, n, ai, lda, bi, ldb));
#if KILN_HAVE_CLBLAST
      else
        KILN_TRY((solve ? kiln__clblast_trsm
                        : kiln__clblast_trmm)(L->op, L->ctx, L->dt, left, upper, trans, unit, m, n,
                                              alpha, ai.mem, ai.off, lda, bi.mem, bi.off, ldb));
#endif
    }
    return KILN_OK;
  }
  return tri_kernel(L, solve, left, upper, trans, unit, m, n, alpha, a, lda, astride, b, ldb,
                    bstride, batch);
}

/* trsm_cols/trmm_cols: one work-item per right-hand side (column of B, row for a right A). */
static kiln_status
tri_kernel(const la *L, int solve, int left, int upper, int trans, int unit, uint64_t m, uint64_t n,
           double alpha, mat a, uint64_t lda, uint64_t astride, mat b, uint64_t ldb,
           uint64_t bstride, uint64_t batch)
{
  if (m == 0 || n == 0 || batch == 0)
    return KILN_OK;
  uint64_t nsys = left ? m : n, nrhs = left ? n : m;
  /* The kernels solve (multiply) M x for each column x; a right-side A is M = op(A)^T acting
   * on the rows of B. */
  uint64_t ars, acs, brs, bcs;
  /* M is A^T; a conjugate transpose conjugates A's elements whichever side it is on */
  int mt = left ? trans != 0 : trans == 0;
  uint32_t conja = tr_of(L, trans) == 2;
  ars = mt ? 1 : lda;
  acs = mt ? lda : 1;
  brs = left ? ldb : 1;
  bcs = left ? 1 : ldb;
  uint32_t lower = (uint32_t)(!upper ^ mt);
  cl_kernel k;
  KILN_TRY(kern(L, solve ? "trsm_cols" : "trmm_cols", &k));
  kiln__args args = kiln__args_begin(L->op, k);
  args_mat(&args, a);
  kiln__args_u64(&args, astride);
  kiln__args_u64(&args, ars);
  kiln__args_u64(&args, acs);
  kiln__args_u32(&args, (uint32_t)nsys);
  kiln__args_u32(&args, lower);
  kiln__args_u32(&args, (uint32_t)unit);
  args_mat(&args, b);
  kiln__args_u64(&args, bstride);
  kiln__args_u64(&args, brs);
  kiln__args_u64(&args, bcs);
  kiln__args_u32(&args, (uint32_t)nrhs);
  kiln__linalg_args_scalar(&args, L->dt, alpha);
  kiln__args_u32(&args, conja);
  return enqueue2(&args, L, nrhs, batch);
}

/*
 * A complex C = alpha A B (overwrite) or C += alpha A B on the real large kernel: B expanded into
 * its real form E (2k x 2n, cplx_expand), then the real views of A (m x 2k) and C (m x 2n)
 * in place, C's triangle by complex columns (gemm_large's tri & 4). The same products as the
 * complex kernel (4 real multiply-adds each), on the FP64 tensor cores where the real kernel
 * has them. A must be row-major (acs 1) and not conjugated, C row-major, one matrix.
 */
static kiln_status
cplx_large(const char *op, kiln_context *ctx, kiln_dtype dt, uint64_t m, uint64_t n, uint64_t k,
           double alpha, cl_mem a, uint64_t aoff, uint64_t ars, cl_mem b, uint64_t boff,
           uint64_t brs, uint64_t bcs, int overwrite, cl_mem c, uint64_t coff, uint64_t crs,
           uint32_t tri_part)
{
  kiln_dtype rt = dt == KILN_C64 ? KILN_F32 : KILN_F64;
  cl_kernel kk;
  KILN_TRY(kiln__ops_kernel(op, ctx, SRC, dt, "cplx_expand", &kk));
  /* E takes 4 k n real values (k = n = 4096 in c128: 512 MiB): where the device cannot hold
   * it, the caller keeps gemm_tile */
  kiln__ops_tmp e = {0};
  if (kiln__ops_tmp_alloc(ctx, 4 * k * n * kiln_dtype_size(rt), &e) != KILN_OK)
    return KILN_ERR_UNSUPPORTED;
  kiln__args args = kiln__args_begin(op, kk);
  kiln__args_mem(&args, b);
  kiln__args_u64(&args, boff);
  kiln__args_u64(&args, brs);
  kiln__args_u64(&args, bcs);
  kiln__args_u32(&args, (uint32_t)k);
  kiln__args_u32(&args, (uint32_t)n);
  kiln__args_u32(&args, tri_part & 8u);
  kiln__args_mem(&args, e.mem);
  int pfast = brs == 1 && bcs != 1;
  uint64_t d0 = pfast ? k : n, d1 = pfast ? n : k;
  size_t global[2] = {(size_t)((d0 + 63) / 64 * 64), (size_t)d1}, local[2] = {64, 1};
  kiln_status s = args.status == KILN_OK ? kiln__args_enqueue(&args, ctx, 2, global, local)
                                         : args.status;
  if (s == KILN_OK) {
    uint32_t tp = tri_part & 3u;
    s = kiln__gemm_large_views(op, ctx, rt, 0, 0, m, 2 * n, 2 * k, alpha, a, 2 * aoff, 2 * ars,
                               e.mem, 0, 2 * n, overwrite ? 0.0 : 1.0, c, 2 * coff, 2 * crs,
                               tp ? tp | 4u : 0u, 1, 0, 0, 0);
    if (s == KILN_OK)
      atomic_fetch_add(&cplx_large_calls, 1);
  }
  kiln__ops_tmp_free(ctx, &e);
  return s;
}

kiln_status
kiln__linalg_tile_gemm(const char *op, kiln_context *ctx, kiln_dtype dt, uint64_t m, uint64_t n,
                       uint64_t k, double alpha, cl_mem a, uint64_t aoff, uint64_t ars,
                       uint64_t acs, cl_mem b, uint64_t boff, uint64_t brs, uint64_t bcs,
                       int overwrite, cl_mem c, uint64_t coff, uint64_t crs, uint64_t ccs,
                       uint32_t tri_part, uint64_t batch, uint64_t az, uint64_t bz, uint64_t cz)
{
  if (m == 0 || n == 0 || batch == 0)
    return KILN_OK;
  uint64_t lmin = kiln__linalg_large_min();
  /* op(A) is row-major with row stride ars (acs 1) or its transpose (ars 1), and so on */
  int ta = acs != 1, tb = bcs != 1;
  if (kiln__dtype_is_complex(dt) && (tri_part & KILN__LINALG_TILE_LARGE) && k > 0 &&
      m >= lmin && n >= lmin && batch == 1 && !ta && !(tri_part & 4u) && ars >= k &&
      ccs == 1 && crs >= n) {
    kiln_status s = cplx_large(op, ctx, dt, m, n, k, alpha, a, aoff, ars, b, boff, brs, bcs,
                               overwrite, c, coff, crs, tri_part);
    if (s != KILN_ERR_UNSUPPORTED)
      return s;
  }
  if ((tri_part & KILN__LINALG_TILE_LARGE) && !kiln__dtype_is_complex(dt) && k > 0 &&
      m >= lmin && n >= lmin &&
      (ta ? ars == 1 && acs >= m : ars >= k) && (tb ? brs == 1 && bcs >= k : brs >= n) &&
      ccs == 1 && crs >= n) {
    kiln_status s = kiln__gemm_large_views(
        op, ctx, dt, ta, tb, m, n, k, alpha, a, aoff, ta ? acs : ars, b, boff, tb ? bcs : brs,
        overwrite ? 0.0 : 1.0, c, coff, crs, tri_part & 3u, batch, az, bz, cz);
    if (s != KILN_ERR_UNSUPPORTED)
      return s;
  }
  tri_part &= ~KILN__LINALG_TILE_LARGE;
  cl_kernel kk;
  KILN_TRY(kiln__ops_kernel(op, ctx, SRC, dt, "gemm_tile", &kk));
  kiln__args args = kiln__args_begin(op, kk);
  kiln__args_u32(&args, (uint32_t)m);
  kiln__args_u32(&args, (uint32_t)n);
  kiln__args_u32(&args, (uint32_t)k);
  kiln__linalg_args_scalar(&args, dt, alpha);
  kiln__args_mem(&args, a);
  kiln__args_u64(&args, aoff);
  kiln__args_u64(&args, ars);
  kiln__args_u64(&args, acs);
  kiln__args_mem(&args, b);
  kiln__args_u64(&args, boff);
  kiln__args_u64(&args, brs);
  kiln__args_u64(&args, bcs);
  kiln__args_u32(&args, (uint32_t)overwrite);
  kiln__args_mem(&args, c);
  kiln__args_u64(&args, coff);
  kiln__args_u64(&args, crs);
  kiln__args_u64(&args, ccs);
  kiln__args_u32(&args, tri_part);
  kiln__args_u64(&args, az);
  kiln__args_u64(&args, bz);
  kiln__args_u64(&args, cz);
  if (args.status != KILN_OK)
    return args.status;
  /* one 16 x 16 group per 64 x 64 tile of C */
  size_t global[3] = {(size_t)((n + 63) / 64 * 16), (size_t)((m + 63) / 64 * 16), (size_t)batch};
  size_t local[3] = {16, 16, 1};
  return kiln__args_enqueue(&args, ctx, 3, global, local);
}

/* kiln__linalg_tile_gemm of one product over mats. */
static kiln_status
tile_gemm(const la *L, uint64_t m, uint64_t n, uint64_t k, double alpha, mat a, uint64_t ars,
          uint64_t acs, mat b, uint64_t brs, uint64_t bcs, int overwrite, mat c, uint64_t crs,
          uint64_t ccs, uint32_t tri_part)
{
  return kiln__linalg_tile_gemm(L->op, L->ctx, L->dt, m, n, k, alpha, a.mem, a.off, ars, acs, b.mem,
                                b.off, brs, bcs, overwrite, c.mem, c.off, crs, ccs,
                                tri_part | L->large, 1, 0, 0, 0);
}

/* C += alpha A B over strided views (tri: 0 all, 1 lower, 2 upper triangle of C). */
static kiln_status
own_gemm(const la *L, uint64_t m, uint64_t n, uint64_t k, double alpha, mat a, uint64_t ars,
         uint64_t acs, mat b, uint64_t brs, uint64_t bcs, mat c, uint64_t crs, uint64_t ccs,
         uint32_t tri_part)
{
  if (m == 0 || n == 0 || k == 0)
    return KILN_OK;
  cl_kernel kk;
  KILN_TRY(kern(L, "gemm_acc", &kk));
  kiln__args args = kiln__args_begin(L->op, kk);
  kiln__args_u32(&args, (uint32_t)m);
  kiln__args_u32(&args, (uint32_t)n);
  kiln__args_u32(&args, (uint32_t)k);
  kiln__linalg_args_scalar(&args, L->dt, alpha);
  args_mat(&args, a);
  kiln__args_u64(&args, ars);
  kiln__args_u64(&args, acs);
  args_mat(&args, b);
  kiln__args_u64(&args, brs);
  kiln__args_u64(&args, bcs);
  args_mat(&args, c);
  kiln__args_u64(&args, crs);
  kiln__args_u64(&args, ccs);
  kiln__args_u32(&args, tri_part);
  return enqueue2l(&args, L, n, m, 8, 8);
}

/* C (m x n, ldc) -= A (m x k, lda) B (k x n, ldb). */
static kiln_status
gemm_sub(const la *L, uint64_t m, uint64_t n, uint64_t k, mat a, uint64_t lda, mat b, uint64_t ldb,
         mat c, uint64_t ldc)
{
  if (m == 0 || n == 0 || k == 0)
    return KILN_OK;
  if (L->tile)
    return tile_gemm(L, m, n, k, -1.0, a, lda, 1, b, ldb, 1, 0, c, ldc, 1, 0);
#if KILN_HAVE_CLBLAST
  if (L->clblast && m * n * k > kiln__linalg_own_gemm_max())
    return kiln__lh_gemm(L->op, L->ctx, L->dt, 0, 0, m, n, k, -1.0, a.mem, a.off, lda, b.mem, b.off,
                         ldb, 1.0, c.mem, c.off, ldc);
#endif
  return own_gemm(L, m, n, k, -1.0, a, lda, 1, b, ldb, 1, c, ldc, 1, 0);
}

/*
 * One triangle of C (n x n) -= A A^H (lower; A n x k) or A^H A (upper; A k x n); A^H is A^T
 * for real dtypes.
 */
static kiln_status
syrk_sub(const la *L, int upper, uint64_t n, uint64_t k, mat a, uint64_t lda, mat c, uint64_t ldc)
{
  if (n == 0 || k == 0)
    return KILN_OK;
  uint32_t cj = upper ? conj_bits(L, 2, 0) : conj_bits(L, 0, 2);
  if (L->tile && upper)
    return tile_gemm(L, n, n, k, -1.0, a, 1, lda, a, lda, 1, 0, c, ldc, 1, 2 | cj);
  if (L->tile)
    return tile_gemm(L, n, n, k, -1.0, a, lda, 1, a, 1, lda, 0, c, ldc, 1, 1 | cj);
#if KILN_HAVE_CLBLAST
  /* CLBlast's SYRK has no conjugate (HERK is another routine): complex takes a GEMM over the
   * whole block, whose other triangle the factorization never reads and zeroes at the end */
  if (L->clblast && cj)
    return kiln__lh_gemm(L->op, L->ctx, L->dt, upper ? 2 : 0, upper ? 0 : 2, n, n, k, -1.0, a.mem,
                         a.off, lda, a.mem, a.off, lda, 1.0, c.mem, c.off, ldc);
  if (L->clblast)
    return kiln__clblast_syrk(L->op, L->ctx, L->dt, upper, upper, n, k,
                              (kiln_complex128){-1.0, 0.0}, a.mem, a.off, lda,
                              (kiln_complex128){1.0, 0.0}, c.mem, c.off, ldc);
#endif
  if (upper)
    return own_gemm(L, n, n, k, -1.0, a, 1, lda, a, lda, 1, c, ldc, 1, 2 | cj);
  return own_gemm(L, n, n, k, -1.0, a, lda, 1, a, 1, lda, c, ldc, 1, 1 | cj);
}

/*
 * Row interchanges k1 .. k2-1 of piv on ncols columns of batch matrices (row stride lda),
 * skipping sw columns from column s0 on (laswp_skip): launches of at most KILN__LASWP_K
 * interchanges, in the order they apply (from k2 down when reverse).
 */
static kiln_status
laswp_skip(const la *L, mat a, uint64_t astride, uint64_t lda, uint64_t ncols, mat piv,
           uint64_t pstride, uint64_t k1, uint64_t k2, int reverse, uint64_t batch, uint64_t s0,
           uint64_t sw)
{
  if (ncols == 0 || k2 <= k1 || batch == 0)
    return KILN_OK;
  cl_kernel k;
  KILN_TRY(kern(L, "laswp", &k));
  size_t lsz = kiln__launch_pow2_local(L->ctx, k);
  lsz = lsz < 256 ? lsz : 256;
  if (lsz < KILN__LASWP_CW)
    return kiln__fail(KILN_ERR_UNSUPPORTED, L->op, 0,
                      "laswp: the device runs %zu lanes a work-group, it needs %d", lsz,
                      KILN__LASWP_CW);
  const uint64_t K = KILN__LASWP_K;
  for (uint64_t c = 0; c < k2 - k1; c += K) {
    const uint64_t n = k2 - k1 - c < K ? k2 - k1 - c : K;
    const uint64_t lo = reverse ? k2 - c - n : k1 + c;
    kiln__args args = kiln__args_begin(L->op, k);
    args_mat(&args, a);
    kiln__args_u64(&args, astride);
    kiln__args_u64(&args, lda);
    kiln__args_u32(&args, (uint32_t)ncols);
    args_mat(&args, piv);
    kiln__args_u64(&args, pstride);
    kiln__args_u32(&args, (uint32_t)lo);
    kiln__args_u32(&args, (uint32_t)(lo + n));
    kiln__args_u32(&args, (uint32_t)reverse);
    kiln__args_u32(&args, (uint32_t)s0);
    kiln__args_u32(&args, (uint32_t)sw);
    kiln__args_local(&args, K * sizeof(cl_int));
    kiln__args_local(&args, K * sizeof(cl_int));
    kiln__args_local(&args, 2 * K * sizeof(cl_int));
    kiln__args_local(&args, 2 * K * sizeof(cl_int));
    kiln__args_local(&args, sizeof(cl_int));
    kiln__args_local(&args, 2 * K * KILN__LASWP_CW * L->ts);
    uint64_t groups = (ncols + KILN__LASWP_CW - 1) / KILN__LASWP_CW;
    KILN_TRY(enqueue2l(&args, L, groups * lsz, batch, lsz, 1));
  }
  return KILN_OK;
}

/* Row interchanges k1 .. k2-1 of piv on ncols columns of batch matrices (row stride lda). */
static kiln_status
laswp(const la *L, mat a, uint64_t astride, uint64_t lda, uint64_t ncols, mat piv, uint64_t pstride,
      uint64_t k1, uint64_t k2, int reverse, uint64_t batch)
{
  return laswp_skip(L, a, astride, lda, ncols, piv, pstride, k1, k2, reverse, batch, ncols, 0);
}

static kiln_status
zero_fill(const la *L, kiln_tensor *t)
{
  return kiln__linalg_zero(L->op, L->ctx, t);
}

/* ---------------------------------------------------------------- factorizations */

/* lu_panel_grid's columns (LUG_W in cl_kernels/linalg.cl): complex elements take two registers. */
static uint64_t
lu_grid_w(kiln_dtype dt)
{
  return kiln__dtype_is_complex(dt) ? KILN__LINALG_GRID_W_COMPLEX : KILN__LINALG_GRID_W;
}

/* The LU panel kernels of one call (lu_run): lu_panel, and lu_panel_grid when pwg > 1. */
typedef struct lu_pan {
  cl_kernel k;
  size_t local;
  cl_kernel gk;      /* NULL: lu_panel only */
  uint64_t gmax;     /* lu_panel_grid's most work-groups */
  uint64_t glocal;   /* and widest work-group */
  kiln_tensor *x;    /* its exchange: rows (T) */
  kiln_tensor *slot; /* and stamped candidates (2 gmax 16 bytes) */
  uint64_t sbase;    /* columns stamped on slot so far */
} lu_pan;

static void
lu_pan_free(lu_pan *P)
{
  kiln_tensor_release(P->x);
  kiln_tensor_release(P->slot);
}

static kiln_status
lu_pan_make(const la *L, lu_pan *P)
{
  *P = (lu_pan){0};
  KILN_TRY(kern(L, "lu_panel", &P->k));
  P->local = panel_local(L, P->k);
  P->gmax = kiln__linalg_grid_groups(L->ctx, L->pwg);
  if (P->gmax == 0)
    return KILN_OK;
  KILN_TRY(kern(L, "lu_panel_grid", &P->gk));
  size_t max = 0;
  if (clGetKernelWorkGroupInfo(P->gk, L->ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof max, &max,
                               NULL) != CL_SUCCESS)
    max = 0;
  /* 256 lanes of 64 registers rows: two groups fit a compute unit's register file */
  P->glocal = 32;
  while (P->glocal * 2 <= max && P->glocal * 2 <= 256)
    P->glocal *= 2;
  if (max < 32)
    P->glocal = 0;
  const uint64_t g = P->gmax, w = lu_grid_w(L->dt);
  kiln_status s = kiln__ops_scratch(L->op, L->ctx, L->dt, 2 * (g + 1) * w, &P->x);
  if (s == KILN_OK)
    s = kiln__ops_scratch(L->op, L->ctx, KILN_I32, 2 * g * 4, &P->slot);
  if (s == KILN_OK)
    s = zero_fill(L, P->slot);
  if (s != KILN_OK)
    lu_pan_free(P);
  return s;
}

/*
 * lu_panel_grid's launch for a panel of `rows` rows: G groups of `local` lanes, one row per
 * lane (a power of two for the argmax trees, at least a warp); 0 when the rows do not fit.
 */
static int
lu_grid_shape(const lu_pan *P, uint64_t rows, uint64_t *G, size_t *local)
{
  if (!P->gk || P->glocal == 0)
    return 0;
  /* lanes about sqrt(rows), so that G <= lanes and each lane polls one group's slot */
  uint64_t l = 32;
  while (l * l < rows && l < P->glocal)
    l *= 2;
  uint64_t g = (rows + l - 1) / l;
  if (g > P->gmax) {
    g = P->gmax;
    while (l * g < rows && l < P->glocal)
      l *= 2;
  }
  if (l * g < rows)
    return 0;
  *G = g ? g : 1;
  *local = (size_t)l;
  return 1;
}

/*
 * LU of the panel columns c0 .. c0+w-1 (rows c0 .. m-1) of an m-row matrix with row stride
 * lda, in place, every interchange applied across the columns s0 .. s0+sw-1 (the top-level
 * panel, which contains these). Panels up to the leaf width run one kernel (lu_panel_grid
 * where its rows fit, else lu_panel); wider ones recurse (Toledo): the left half, TRSM and
 * GEMM into the right half, the right half. The leaves swap whole rows of the top-level panel,
 * so the halves need no laswp. The recursion moves most of lu_panel's flops and memory
 * traffic from one work-group into GEMM calls over the whole device.
 */
static kiln_status
lu_panel_rec(const la *L, lu_pan *P, mat a, uint64_t lda, uint64_t m, uint64_t c0, uint64_t w,
             mat piv, mat info, uint64_t s0, uint64_t sw)
{
  uint64_t G = 0;
  size_t gl = 0;
  int grid = lu_grid_shape(P, m - c0, &G, &gl);
  if (grid && w <= lu_grid_w(L->dt)) {
    if (P->sbase + w >= UINT32_MAX) { /* stamps restart from zeroed slots before they wrap */
      KILN_TRY(zero_fill(L, P->slot));
      P->sbase = 0;
    }
    kiln__args args = kiln__args_begin(L->op, P->gk);
    args_mat(&args, a);
    kiln__args_u64(&args, lda);
    kiln__args_u32(&args, (uint32_t)m);
    kiln__args_u32(&args, (uint32_t)w);
    kiln__args_u32(&args, (uint32_t)c0);
    args_mat(&args, piv);
    args_mat(&args, info);
    kiln__args_u32(&args, (uint32_t)s0);
    kiln__args_u32(&args, (uint32_t)sw);
    kiln__args_mem(&args, P->slot->mem);
    kiln__args_u32(&args, (uint32_t)P->sbase);
    kiln__args_mem(&args, P->x->mem);
    kiln__args_local(&args, gl * L->ts);
    kiln__args_local(&args, gl * sizeof(cl_int));
    kiln__args_local(&args, lu_grid_w(L->dt) * L->ts);
    kiln__args_local(&args, lu_grid_w(L->dt) * L->ts);
    P->sbase += w;
    atomic_fetch_add(&grid_launches, 1);
    return kiln__args_enqueue_1d(&args, L->ctx, G * gl, gl);
  }
  if (w <= (grid ? lu_grid_w(L->dt) : L->leaf)) {
    kiln__args args = kiln__args_begin(L->op, P->k);
    args_mat(&args, a);
    kiln__args_u64(&args, lda);
    kiln__args_u32(&args, (uint32_t)m);
    kiln__args_u32(&args, (uint32_t)w);
    kiln__args_u32(&args, (uint32_t)c0);
    args_mat(&args, piv);
    args_mat(&args, info);
    kiln__args_local(&args, P->local * L->ts);
    kiln__args_local(&args, P->local * sizeof(cl_int));
    kiln__args_local(&args, 2 * sw * L->ts);
    kiln__args_u32(&args, (uint32_t)s0);
    kiln__args_u32(&args, (uint32_t)sw);
    return kiln__args_enqueue_1d(&args, L->ctx, P->local, P->local);
  }
  uint64_t w1 = w / 2, c1 = c0 + w1, w2 = w - w1;
  KILN_TRY(lu_panel_rec(L, P, a, lda, m, c0, w1, piv, info, s0, sw));
  KILN_TRY(tri(L, 1, 1, 0, 0, 1, w1, w2, 1.0, at(a, c0 * lda + c0), lda, 0, at(a, c0 * lda + c1),
               lda, 0, 1));
  KILN_TRY(gemm_sub(L, m - c1, w2, w1, at(a, c1 * lda + c0), lda, at(a, c0 * lda + c1), lda,
                    at(a, c1 * lda + c1), lda));
  return lu_panel_rec(L, P, a, lda, m, c1, w2, piv, info, s0, sw);
}

/* LU of the panel columns c0 .. c0+w-1, interchanges across the panel (lu_panel_rec). */
static kiln_status
lu_panel_run(const la *L, lu_pan *P, mat a, uint64_t lda, uint64_t m, uint64_t c0, uint64_t w,
             mat piv, mat info)
{
  return lu_panel_rec(L, P, a, lda, m, c0, w, piv, info, c0, w);
}

/*
 * Runs the LU panel of columns c0 .. c0+w-1 on queue q2 (the context's queue swapped for the
 * duration: every launch inside, CLBlast's too, goes to ctx->queue), after everything enqueued
 * so far on the context's queue.
 */
static kiln_status
lu_panel_on(const la *L, cl_command_queue q2, lu_pan *P, mat a, uint64_t lda, uint64_t m,
            uint64_t c0, uint64_t w, mat piv, mat info)
{
  cl_command_queue q = L->ctx->queue;
  KILN_TRY(kiln__lh_join(L->op, q, q2));
  L->ctx->queue = q2;
  kiln_status s = lu_panel_run(L, P, a, lda, m, c0, w, piv, info);
  L->ctx->queue = q;
  return s;
}

/*
 * Blocked LU in two levels (L->lu_nb2 > L->nb, no look-ahead): outer blocks of lu_nb2 columns,
 * each factored by steps of nb columns whose interchanges, TRSMs and updates stay inside the
 * block; then the block's interchanges on the columns left and right of it, its TRSM and one
 * update lu_nb2 deep of the trailing matrix, with the large bit of L->lu_large. The steps' TRSMs
 * (nb rows, at most lu_nb2 - nb right-hand sides) run tri_blocked whatever their size where it
 * has GEMMs to run on: trsm_cols, one work-item per right-hand side, took the small ones.
 */
static kiln_status
lu_two_level(const la *L, lu_pan *P, mat a, uint64_t m, uint64_t n, mat piv, mat info)
{
  uint64_t k = m < n ? m : n, nb = L->nb, ob = L->lu_nb2;
  la Lo = *L;
  Lo.large = L->lu_large;
  atomic_fetch_add(&lu2_runs, 1);
  for (uint64_t J0 = 0; J0 < k; J0 += ob) {
    uint64_t JB = k - J0 < ob ? k - J0 : ob, J1 = J0 + JB;
    for (uint64_t j0 = J0; j0 < J1; j0 += nb) {
      uint64_t jb = J1 - j0 < nb ? J1 - j0 : nb, r = j0 + jb;
      KILN_TRY(lu_panel_rec(L, P, a, n, m, j0, jb, piv, info, J0, JB));
      if (r < J1) {
        mat a11 = at(a, j0 * n + j0), a12 = at(a, j0 * n + r);
        if (L->clblast || L->tile)
          KILN_TRY(tri_blocked(L, 0, 0, 1, jb, J1 - r, a11, n, a12, n));
        else
          KILN_TRY(tri(L, 1, 1, 0, 0, 1, jb, J1 - r, 1.0, a11, n, 0, a12, n, 0, 1));
        KILN_TRY(gemm_sub(L, m - r, J1 - r, jb, at(a, r * n + j0), n, a12, n, at(a, r * n + r), n));
      }
    }
    KILN_TRY(laswp_skip(L, a, 0, n, n - JB, piv, 0, J0, J1, 0, 1, J0, JB));
    if (J1 < n) {
      KILN_TRY(tri(L, 1, 1, 0, 0, 1, JB, n - J1, 1.0, at(a, J0 * n + J0), n, 0, at(a, J0 * n + J1),
                   n, 0, 1));
      KILN_TRY(gemm_sub(&Lo, m - J1, n - J1, JB, at(a, J1 * n + J0), n, at(a, J0 * n + J1), n,
                        at(a, J1 * n + J1), n));
    }
  }
  return KILN_OK;
}

/*
 * Blocked right-looking LU of one m x n matrix in place. With look-ahead (L->ahead) the
 * update of each step does the next panel's columns first; that panel is then factored on a
 * second queue while the context's queue runs the rest of the update (columns disjoint from
 * the panel's), and the next step's interchanges wait for it.
 */
static kiln_status
lu_blocked(const la *L, lu_pan *P, mat a, uint64_t m, uint64_t n, mat piv, mat info)
{
  uint64_t k = m < n ? m : n, nb = L->nb;
  if (L->lu_nb2 > nb && !L->ahead && k > nb)
    return lu_two_level(L, P, a, m, n, piv, info);
  cl_command_queue q2 = NULL;
  if (L->ahead && k > nb)
    KILN_TRY(kiln__lh_queue2(L->op, L->ctx, &q2));
  if (q2)
    KILN_TRY(lu_panel_run(L, P, a, n, m, 0, nb, piv, info));
  for (uint64_t j0 = 0; j0 < k; j0 += nb) {
    uint64_t jb = k - j0 < nb ? k - j0 : nb, r = j0 + jb;
    if (!q2)
      KILN_TRY(lu_panel_run(L, P, a, n, m, j0, jb, piv, info));
    /* the columns left and right of the panel in one launch */
    KILN_TRY(laswp_skip(L, a, 0, n, n - jb, piv, 0, j0, r, 0, 1, j0, jb));
    if (r < n) {
      KILN_TRY(tri(L, 1, 1, 0, 0, 1, jb, n - r, 1.0, at(a, j0 * n + j0), n, 0, at(a, j0 * n + r), n,
                   0, 1));
      /* the next panel's columns (look-ahead), then the rest */
      uint64_t jn = q2 && r < k ? (k - r < nb ? k - r : nb) : 0;
      if (jn) {
        KILN_TRY(gemm_sub(L, m - r, jn, jb, at(a, r * n + j0), n, at(a, j0 * n + r), n,
                          at(a, r * n + r), n));
        KILN_TRY(lu_panel_on(L, q2, P, a, n, m, r, jn, piv, info));
      }
      KILN_TRY(gemm_sub(L, m - r, n - r - jn, jb, at(a, r * n + j0), n, at(a, j0 * n + r + jn), n,
                        at(a, r * n + r + jn), n));
      if (jn)
        KILN_TRY(kiln__lh_join(L->op, q2, L->ctx->queue));
    }
  }
  return KILN_OK;
}

/* ---------------------------------------------------------------- hybrid (host panels) */

/*
 * C (m x n) = alpha op(A) op(B) + beta C over row-major views; beta is 0 or 1 (kiln's own
 * kernel accumulates, so beta 0 is only taken on CLBlast, where C is then overwritten).
 */
static kiln_status
gemm_g(const la *L, int ta, int tb, uint64_t m, uint64_t n, uint64_t k, double alpha, mat a,
       uint64_t lda, mat b, uint64_t ldb, double beta, mat c, uint64_t ldc)
{
  if (m == 0 || n == 0 || k == 0)
    return KILN_OK;
  uint32_t cj = conj_bits(L, ta, tb);
  ta = tr_of(L, ta);
  tb = tr_of(L, tb);
  if (L->tile)
    return tile_gemm(L, m, n, k, alpha, a, ta ? 1 : lda, ta ? lda : 1, b, tb ? 1 : ldb,
                     tb ? ldb : 1, beta == 0.0, c, ldc, 1, cj);
#if KILN_HAVE_CLBLAST
  /* kiln's gemm_acc accumulates: small products with beta 0 stay on CLBlast */
  if (L->clblast && (beta == 0.0 || m * n * k > kiln__linalg_own_gemm_max()))
    return kiln__lh_gemm(L->op, L->ctx, L->dt, ta, tb, m, n, k, alpha, a.mem, a.off, lda, b.mem,
                         b.off, ldb, beta, c.mem, c.off, ldc);
#endif
  (void)beta;
  return own_gemm(L, m, n, k, alpha, a, ta ? 1 : lda, ta ? lda : 1, b, tb ? 1 : ldb, tb ? ldb : 1,
                  c, ldc, 1, cj);
}

kiln_status
kiln__linalg_copy_rect(const char *op, kiln_context *ctx, size_t ts, cl_mem src, uint64_t soff,
                       uint64_t lds, cl_mem dst, uint64_t doff, uint64_t ldd, uint64_t rows,
                       uint64_t cols)
{
  if (rows == 0 || cols == 0)
    return KILN_OK;
  size_t so[3] = {(size_t)(soff % lds * ts), (size_t)(soff / lds), 0},
         d0[3] = {(size_t)(doff % ldd * ts), (size_t)(doff / ldd), 0};
  size_t reg[3] = {(size_t)(cols * ts), (size_t)rows, 1};
  cl_int err = clEnqueueCopyBufferRect(ctx->queue, src, dst, so, d0, reg, (size_t)(lds * ts), 0,
                                       (size_t)(ldd * ts), 0, 0, NULL, NULL);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "clEnqueueCopyBufferRect");
}

/* Copies the rows x cols block at src (row stride lds) to dst (row stride ldd). */
static kiln_status
copy_rect(const la *L, mat src, uint64_t lds, mat dst, uint64_t ldd, uint64_t rows, uint64_t cols)
{
  return kiln__linalg_copy_rect(L->op, L->ctx, L->ts, src.mem, src.off, lds, dst.mem, dst.off, ldd,
                                rows, cols);
}

#if KILN_HAVE_LAPACKE
/* Host buffers of one hybrid factorization (ctx->lock held while they live). */
typedef struct hy {
  kiln__lh_buf *panel, *inv, *piv; /* dtype panel, dtype inverse block, i32 pivots */
  double *w, *t;                   /* column-major f64 panel and diagonal block */
  lapack_int *ipiv;
  kiln_tensor *dinv, *wk; /* device: inverse block (nb x nb), copy of the block row */
} hy;

static void
hy_free(const la *L, hy *h)
{
  clFinish(L->ctx->queue); /* transfers from the host buffers may still be queued */
  free(h->w);
  free(h->t);
  free(h->ipiv);
  kiln_tensor_release(h->dinv);
  kiln_tensor_release(h->wk);
  memset(h, 0, sizeof *h);
}

/* Buffers for panels of up to rows x nb and block rows of nb x wcols. */
static kiln_status
hy_make(const la *L, uint64_t rows, uint64_t nb, uint64_t wcols, uint64_t npiv, hy *h)
{
  memset(h, 0, sizeof *h);
  kiln_status s = kiln__lh_slot(L->op, L->ctx, 0, rows * nb * L->ts, &h->panel);
  if (s == KILN_OK)
    s = kiln__lh_slot(L->op, L->ctx, 1, nb * nb * L->ts, &h->inv);
  if (s == KILN_OK)
    s = kiln__lh_slot(L->op, L->ctx, 2, (npiv ? npiv : 1) * sizeof(int32_t), &h->piv);
  h->w = malloc((rows ? rows : 1) * nb * sizeof *h->w);
  h->t = malloc(nb * nb * sizeof *h->t);
  h->ipiv = malloc(nb * sizeof *h->ipiv);
  if (s == KILN_OK && (!h->w || !h->t || !h->ipiv))
    s = kiln__fail(KILN_ERR_HOST_MEMORY, L->op, 0, "no host memory for a %llu x %llu panel",
                   (unsigned long long)rows, (unsigned long long)nb);
  if (s == KILN_OK && L->clblast)
    s = kiln__ops_scratch(L->op, L->ctx, L->dt, nb * nb, &h->dinv);
  if (s == KILN_OK && L->clblast)
    s = kiln__ops_scratch(L->op, L->ctx, L->dt, (wcols ? wcols : 1) * nb, &h->wk);
  if (s != KILN_OK)
    hy_free(L, h);
  return s;
}

/*
 * The inverse of the jb x jb triangle in column-major f64 h->t (dtrtri: uplo 'L'/'U', diag
 * 'U'/'N'), the other triangle zeroed, uploaded row-major to h->dinv. The triangular solves
 * of the trailing updates then run as GEMMs (as CLBlast's and MAGMA's TRSM do with inverted
 * diagonal blocks), one call instead of CLBlast's many small ones.
 */
static kiln_status
hy_inverse(const la *L, hy *h, char uplo, char diag, uint64_t jb)
{
  lapack_int info =
      LAPACKE_dtrtri_work(LAPACK_COL_MAJOR, uplo, diag, (lapack_int)jb, h->t, (lapack_int)jb);
  (void)info; /* a zero diagonal was caught by the factorization: its inverse is not used */
  for (uint64_t j = 0; j < jb; j++)
    for (uint64_t i = 0; i < jb; i++) {
      int keep = uplo == 'L' ? i >= j : i <= j;
      if (!keep)
        h->t[j * jb + i] = 0.0;
      else if (i == j && diag == 'U')
        h->t[j * jb + i] = 1.0;
    }
  kiln__lh_from_colmajor(L->dt, h->t, jb, jb, jb, h->inv->p);
  return kiln__lh_write(L->op, L->ctx, h->dinv->mem, kiln__ops_elem_offset(h->dinv), jb, jb, jb,
                        L->ts, h->inv);
}

/*
 * U12 = L11^-1 A12 on the columns c0 .. c0+w-1 of the block row j0 (jb rows) of the n-column
 * matrix a, L11 the unit lower triangle of the factored panel: with CLBlast a GEMM with the
 * host's inverse (h->dinv) over a copy of the block (h->wk), else kiln's triangular solve.
 */
static kiln_status
hy_lu_trsm(const la *L, hy *h, mat a, uint64_t n, uint64_t j0, uint64_t jb, uint64_t c0, uint64_t w)
{
  if (w == 0)
    return KILN_OK;
  if (!L->clblast)
    return tri(L, 1, 1, 0, 0, 1, jb, w, 1.0, at(a, j0 * n + j0), n, 0, at(a, j0 * n + c0), n, 0, 1);
  mat wk = tmat(h->wk);
  KILN_TRY(copy_rect(L, at(a, j0 * n + c0), n, wk, w, jb, w));
  return gemm_g(L, 0, 0, jb, w, jb, 1.0, tmat(h->dinv), jb, wk, w, 0.0, at(a, j0 * n + c0), n);
}

/* A22 -= L21 U12 on the columns c0 .. c0+w-1, after the LU panel j0 (jb columns). */
static kiln_status
hy_lu_update(const la *L, mat a, uint64_t m, uint64_t n, uint64_t j0, uint64_t jb, uint64_t c0,
             uint64_t w)
{
  uint64_t r = j0 + jb;
  return gemm_sub(L, m - r, w, jb, at(a, r * n + j0), n, at(a, j0 * n + c0), n, at(a, r * n + c0),
                  n);
}

/*
 * Hybrid LU of one m x n matrix in place (MAGMA's scheme): each panel of nb columns goes to
 * the host, LAPACK's dgetrf factors it and it comes back with its pivots; the device applies
 * the interchanges and the trailing update. Look-ahead: the next panel's columns are updated
 * first and read back while the device updates the rest, so the host factors the next panel
 * during that update. The first zero pivot (1-based) goes to *zero.
 */
static kiln_status
lu_hybrid(const la *L, hy *h, mat a, uint64_t m, uint64_t n, mat piv, int32_t *zero)
{
  uint64_t k = m < n ? m : n, nb = L->hnb_lu && L->hnb_lu < k ? L->hnb_lu : k;
  int32_t *hp = h->piv->p;
  *zero = 0;
  uint64_t jb = nb;
  KILN_TRY(kiln__lh_read(L->op, L->ctx, a.mem, a.off, n, m, jb, L->ts, h->panel, NULL));
  for (uint64_t j0 = 0; j0 < k; j0 += nb) {
    jb = k - j0 < nb ? k - j0 : nb;
    uint64_t r = j0 + jb, mr = m - j0;
    kiln__lh_to_colmajor(L->dt, h->panel->p, mr, jb, h->w);
    lapack_int info = LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, (lapack_int)mr, (lapack_int)jb, h->w,
                                          (lapack_int)mr, h->ipiv);
    if (info > 0 && *zero == 0)
      *zero = (int32_t)(j0 + (uint64_t)info);
    for (uint64_t i = 0; i < jb; i++)
      hp[j0 + i] = (int32_t)(h->ipiv[i] + (lapack_int)j0);
    kiln__lh_from_colmajor(L->dt, h->w, mr, mr, jb, h->panel->p);
    KILN_TRY(kiln__lh_write(L->op, L->ctx, a.mem, a.off + j0 * n + j0, n, mr, jb, L->ts, h->panel));
    cl_int err = clEnqueueWriteBuffer(L->ctx->queue, piv.mem, CL_FALSE, (piv.off + j0) * 4, jb * 4,
                                      hp + j0, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      return kiln__fail_cl(L->op, err, "clEnqueueWriteBuffer (pivots)");
    KILN_TRY(laswp(L, a, 0, n, j0, piv, 0, j0, r, 0, 1));
    if (r >= n)
      continue;
    KILN_TRY(laswp(L, at(a, r), 0, n, n - r, piv, 0, j0, r, 0, 1));
    if (L->clblast) {
      for (uint64_t j = 0; j < jb; j++)
        for (uint64_t i = 0; i < jb; i++)
          h->t[j * jb + i] = h->w[j * mr + i];
      KILN_TRY(hy_inverse(L, h, 'L', 'U', jb));
    }
    /* U12 for the whole block row at once: jb x jb x (n - r), small next to the GEMMs */
    KILN_TRY(hy_lu_trsm(L, h, a, n, j0, jb, r, n - r));
    uint64_t jn = r < k ? (k - r < nb ? k - r : nb) : 0;
    if (jn == 0) {
      KILN_TRY(hy_lu_update(L, a, m, n, j0, jb, r, n - r));
      continue;
    }
    KILN_TRY(hy_lu_update(L, a, m, n, j0, jb, r, jn));
    cl_event ev;
    KILN_TRY(
        kiln__lh_read(L->op, L->ctx, a.mem, a.off + r * n + r, n, m - r, jn, L->ts, h->panel, &ev));
    kiln_status s = hy_lu_update(L, a, m, n, j0, jb, r + jn, n - r - jn);
    kiln_status sw = kiln__lh_wait(L->op, L->ctx, ev);
    KILN_TRY(s);
    KILN_TRY(sw);
  }
  return KILN_OK;
}
#endif

/* LU of batch m x n matrices in place; piv [batch, min(m, n)] and info [batch] (zeroed here). */
static kiln_status
lu_run(const la *L, mat a, uint64_t m, uint64_t n, uint64_t batch, mat piv, kiln_tensor *info)
{
  KILN_TRY(zero_fill(L, info));
  uint64_t k = m < n ? m : n;
  if (k == 0 || batch == 0)
    return KILN_OK;
  if (is_small(L, m, n)) {
    cl_kernel kk;
    KILN_TRY(kern(L, "lu_small", &kk));
    size_t local = small_local(L, kk, m);
    kiln__args args = kiln__args_begin(L->op, kk);
    args_mat(&args, a);
    kiln__args_u64(&args, m * n);
    kiln__args_u32(&args, (uint32_t)m);
    kiln__args_u32(&args, (uint32_t)n);
    args_mat(&args, piv);
    kiln__args_u64(&args, k);
    kiln__args_tensor(&args, info);
    kiln__args_local(&args, m * (n | 1) * L->ts);
    kiln__args_local(&args, local * L->ts);
    kiln__args_local(&args, local * sizeof(cl_int));
    return kiln__args_enqueue_1d(&args, L->ctx, (size_t)batch * local, local);
  }
#if KILN_HAVE_LAPACKE
  if (L->host_lu) {
    uint64_t nb = L->hnb_lu && L->hnb_lu < k ? L->hnb_lu : k;
    hy h;
    KILN_TRY(hy_make(L, m, nb, n, k, &h));
    int32_t *zeros = calloc(batch, sizeof *zeros);
    kiln_status s = zeros ? KILN_OK
                          : kiln__fail(KILN_ERR_HOST_MEMORY, L->op, 0, "no memory for %llu words",
                                       (unsigned long long)batch);
    for (uint64_t b = 0; s == KILN_OK && b < batch; b++) {
      s = lu_hybrid(L, &h, at(a, b * m * n), m, n, at(piv, b * k), &zeros[b]);
      /* the pivot buffer is reused by the next matrix: its writes must have run */
      if (s == KILN_OK && b + 1 < batch) {
        cl_int err = clFinish(L->ctx->queue);
        if (err != CL_SUCCESS)
          s = kiln__fail_cl(L->op, err, "clFinish");
      }
    }
    if (s == KILN_OK) {
      cl_int err = clEnqueueWriteBuffer(L->ctx->queue, info->mem, CL_TRUE, info->offset,
                                        batch * sizeof *zeros, zeros, 0, NULL, NULL);
      if (err != CL_SUCCESS)
        s = kiln__fail_cl(L->op, err, "clEnqueueWriteBuffer (info)");
    }
    free(zeros);
    hy_free(L, &h);
    return s;
  }
#endif
  lu_pan P;
  KILN_TRY(lu_pan_make(L, &P));
  kiln_status s = KILN_OK;
  for (uint64_t b = 0; s == KILN_OK && b < batch; b++)
    s = lu_blocked(L, &P, at(a, b * m * n), m, n, at(piv, b * k), at(tmat(info), b));
  lu_pan_free(&P);
  return s;
}

/*
 * Solves op(A) X = B in place on batch n x nrhs matrices x, from A's LU and pivots; trans 0, 1
 * (A^T) or 2 (A^H = U^H L^H P).
 */
static kiln_status
lu_solve_run(const la *L, mat lu, mat piv, uint64_t n, uint64_t nrhs, mat x, uint64_t batch,
             int trans)
{
  uint64_t xs = n * nrhs, as = n * n;
  if (!trans) {
    KILN_TRY(laswp(L, x, xs, nrhs, nrhs, piv, n, 0, n, 0, batch));
    KILN_TRY(tri(L, 1, 1, 0, 0, 1, n, nrhs, 1.0, lu, n, as, x, nrhs, xs, batch));
    return tri(L, 1, 1, 1, 0, 0, n, nrhs, 1.0, lu, n, as, x, nrhs, xs, batch);
  }
  KILN_TRY(tri(L, 1, 1, 1, trans, 0, n, nrhs, 1.0, lu, n, as, x, nrhs, xs, batch));
  KILN_TRY(tri(L, 1, 1, 0, trans, 1, n, nrhs, 1.0, lu, n, as, x, nrhs, xs, batch));
  return laswp(L, x, xs, nrhs, nrhs, piv, n, 0, n, 1, batch);
}

#if KILN_HAVE_LAPACKE
/*
 * The trailing update after the Cholesky diagonal block j0 (jb columns, solved block column
 * L21 / block row U12) of rows c0 .. c0+w-1 (lower; upper: those columns): the part left of
 * the diagonal block (GEMM) and the diagonal block c0 .. c0+w-1 itself (SYRK).
 */
static kiln_status
hy_chol_update(const la *L, mat A, uint64_t n, int upper, uint64_t j0, uint64_t jb, uint64_t c0,
               uint64_t w)
{
  uint64_t r = j0 + jb;
  if (w == 0)
    return KILN_OK;
  if (!upper) {
    /* rows c0..c0+w-1 of A22, columns r..c0-1 (GEMM) and the diagonal block (SYRK) */
    KILN_TRY(gemm_g(L, 0, 1, w, c0 - r, jb, -1.0, at(A, c0 * n + j0), n, at(A, r * n + j0), n, 1.0,
                    at(A, c0 * n + r), n));
    return syrk_sub(L, 0, w, jb, at(A, c0 * n + j0), n, at(A, c0 * n + c0), n);
  }
  KILN_TRY(gemm_g(L, 1, 0, c0 - r, w, jb, -1.0, at(A, j0 * n + r), n, at(A, j0 * n + c0), n, 1.0,
                  at(A, r * n + c0), n));
  return syrk_sub(L, 1, w, jb, at(A, j0 * n + c0), n, at(A, c0 * n + c0), n);
}

/*
 * The order of the first NaN on the diagonal of a jb x jb factor, 0 if none. Reference
 * LAPACK's dpotrf stops at a NaN pivot; OpenBLAS's (the liblapack.so.3 Debian installs with
 * libopenblas0) only at one <= 0, and carries a NaN through with info 0.
 */
static lapack_int
nan_pivot(const double *t, uint64_t jb)
{
  for (uint64_t i = 0; i < jb; i++)
    if (isnan(t[i * jb + i]))
      return (lapack_int)(i + 1);
  return 0;
}

/*
 * Hybrid Cholesky of one n x n matrix in place: each diagonal block goes to the host (dpotrf,
 * and dtrtri for the block column's solve as a GEMM), the device solves the block column and
 * updates the trailing matrix, the next diagonal block first (look-ahead). *bad gets the
 * order of the first minor that is not positive definite (0: none); the factorization stops
 * there.
 */
static kiln_status
chol_hybrid(const la *L, hy *h, mat A, uint64_t n, int upper, int32_t *bad)
{
  uint64_t nb = L->hnb_chol && L->hnb_chol < n ? L->hnb_chol : n;
  *bad = 0;
  KILN_TRY(kiln__lh_read(L->op, L->ctx, A.mem, A.off, n, nb, nb, L->ts, h->panel, NULL));
  for (uint64_t j0 = 0; j0 < n; j0 += nb) {
    uint64_t jb = n - j0 < nb ? n - j0 : nb, r = j0 + jb;
    kiln__lh_to_colmajor(L->dt, h->panel->p, jb, jb, h->t);
    lapack_int info = LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, upper ? 'U' : 'L', (lapack_int)jb, h->t,
                                          (lapack_int)jb);
    if (info == 0)
      info = nan_pivot(h->t, jb);
    if (info != 0) {
      *bad = (int32_t)(j0 + (uint64_t)(info > 0 ? info : 1));
      return KILN_OK;
    }
    kiln__lh_from_colmajor(L->dt, h->t, jb, jb, jb, h->panel->p);
    KILN_TRY(kiln__lh_write(L->op, L->ctx, A.mem, A.off + j0 * n + j0, n, jb, jb, L->ts, h->panel));
    if (r == n)
      break;
    mat d = at(A, j0 * n + j0);
    if (L->clblast) {
      KILN_TRY(hy_inverse(L, h, upper ? 'U' : 'L', 'N', jb));
      mat wk = tmat(h->wk);
      if (!upper) { /* L21 = A21 L11^-T */
        KILN_TRY(copy_rect(L, at(A, r * n + j0), n, wk, jb, n - r, jb));
        KILN_TRY(gemm_g(L, 0, 1, n - r, jb, jb, 1.0, wk, jb, tmat(h->dinv), jb, 0.0,
                        at(A, r * n + j0), n));
      } else { /* U12 = U11^-T A12 */
        KILN_TRY(copy_rect(L, at(A, j0 * n + r), n, wk, n - r, jb, n - r));
        KILN_TRY(gemm_g(L, 1, 0, jb, n - r, jb, 1.0, tmat(h->dinv), jb, wk, n - r, 0.0,
                        at(A, j0 * n + r), n));
      }
    } else if (!upper) {
      KILN_TRY(tri(L, 1, 0, 0, 1, 0, n - r, jb, 1.0, d, n, 0, at(A, r * n + j0), n, 0, 1));
    } else {
      KILN_TRY(tri(L, 1, 1, 1, 1, 0, jb, n - r, 1.0, d, n, 0, at(A, j0 * n + r), n, 0, 1));
    }
    uint64_t jn = n - r < nb ? n - r : nb;
    KILN_TRY(hy_chol_update(L, A, n, upper, j0, jb, r, jn));
    cl_event ev;
    KILN_TRY(
        kiln__lh_read(L->op, L->ctx, A.mem, A.off + r * n + r, n, jn, jn, L->ts, h->panel, &ev));
    kiln_status s = hy_chol_update(L, A, n, upper, j0, jb, r + jn, n - r - jn);
    kiln_status sw = kiln__lh_wait(L->op, L->ctx, ev);
    KILN_TRY(s);
    KILN_TRY(sw);
  }
  return KILN_OK;
}
#endif

/* The device route's Cholesky step kernels and the fused path's scratch (chol_run). */
typedef struct {
  cl_kernel sk, kk, ck, colk; /* chol_small, chol_panel, chol_inv, chol_col (NULL: not taken) */
  size_t slocal, local;
  mat inv;  /* two nb x nb halves: L11^-1 of the step, of the next one (chol_col's) */
  int half; /* the half holding the current step's L11^-1 */
  mat sync; /* chol_col's ticket counter, unused word and row-tile stamps, zeroed per call */
  uint32_t tickets, stamp; /* chol_col's groups launched and launches so far in this call */
} chol_k;

/* Largest diagonal block chol_inv takes: its 16 x 16 lanes hold 4 x 4 elements each. */
#define CHOL_INV_MAX 64

/* Half h (0 or 1) of K->inv. */
static mat
chol_inv_half(const chol_k *K, int h)
{
  return at(K->inv, (uint64_t)h * CHOL_INV_MAX * CHOL_INV_MAX);
}

/* chol_small's and chol_inv's leading arguments for the jb x jb diagonal block at j0 of A:
 * (a, aoff, astride, n, rs, cs, info, ioff, j0) of cl_kernels/linalg.cl. */
static kiln__args
diag_args(const la *L, cl_kernel k, mat A, uint64_t n, int upper, uint64_t j0, uint64_t jb, mat inf)
{
  kiln__args args = kiln__args_begin(L->op, k);
  args_mat(&args, at(A, j0 * n + j0));
  kiln__args_u64(&args, 0);
  kiln__args_u32(&args, (uint32_t)jb);
  kiln__args_u64(&args, upper ? 1 : n);
  kiln__args_u64(&args, upper ? n : 1);
  args_mat(&args, inf);
  kiln__args_u32(&args, (uint32_t)j0);
  return args;
}

/*
 * chol_col after chol_inv at step j0 (jb columns): the block column below the diagonal block
 * (L21 = A21 L11^-H) and the panel's later columns [j0 + jb, pe) updated by it, one launch
 * (cl_kernels/linalg.cl), which within a panel also factors and inverts the next diagonal
 * block into the other half of K->inv. Its groups: one per 64-row tile of the n - r rows below,
 * and one more per (row tile t, later column tile u) with 1 <= u <= t.
 */
static kiln_status
chol_col(const la *L, chol_k *K, mat A, uint64_t n, int upper, uint64_t j0, uint64_t jb,
         uint64_t pe, mat inf)
{
  uint64_t r = j0 + jb, nt = (n - r + 63) / 64, nu = pe > r ? (pe - r + 63) / 64 : 0;
  uint64_t groups = nt;
  for (uint64_t u = 1; u < nu; u++)
    groups += nt - u;
  if (nu > 1)
    atomic_fetch_add(&chol_col_cross, 1);
  kiln__args args = kiln__args_begin(L->op, K->colk);
  args_mat(&args, A);
  kiln__args_u64(&args, upper ? 1 : n);
  kiln__args_u64(&args, upper ? n : 1);
  kiln__args_u32(&args, (uint32_t)n);
  kiln__args_u32(&args, (uint32_t)j0);
  kiln__args_u32(&args, (uint32_t)jb);
  kiln__args_u32(&args, (uint32_t)(pe > r ? pe : r));
  args_mat(&args, chol_inv_half(K, K->half));
  kiln__args_u64(&args, chol_inv_half(K, !K->half).off);
  kiln__args_u32(&args, (uint32_t)upper);
  args_mat(&args, inf);
  args_mat(&args, K->sync);
  kiln__args_u32(&args, K->tickets);
  kiln__args_u32(&args, ++K->stamp);
  K->tickets += (uint32_t)groups;
  if (pe > r)
    K->half = !K->half;
  if (args.status != KILN_OK)
    return args.status;
  size_t global[2] = {(size_t)groups * 16, 16}, local[2] = {16, 16};
  return kiln__args_enqueue(&args, L->ctx, 2, global, local);
}

/*
 * Step j0 of the device route's blocked Cholesky of one n x n matrix: the jb x jb diagonal
 * block, then the block column below it (lower: L21 = A21 L11^-H; upper: U12 = U11^-H A12).
 * Blocks chol_inv takes are factored and inverted in one launch (at a panel's first step;
 * the later ones chol_col did), and chol_col computes the block column with the inverse and
 * updates the panel's later columns [j0 + jb, pe); others run chol_small in local memory
 * (chol_panel in global when the block does not fit) and the GEMM-based solve, which inverts
 * the block again (pe is then j0 + jb).
 */
static kiln_status
chol_step(const la *L, chol_k *K, mat A, uint64_t n, int upper, uint64_t j0, uint64_t jb,
          uint64_t pe, int first, mat inf)
{
  uint64_t r = j0 + jb, rs = upper ? 1 : n, cs = upper ? n : 1;
  if (K->ck && jb <= CHOL_INV_MAX && !first)
    return r == n ? KILN_OK : chol_col(L, K, A, n, upper, j0, jb, pe, inf);
  if (K->ck && jb <= CHOL_INV_MAX) {
    kiln__args args = diag_args(L, K->ck, A, n, upper, j0, jb, inf);
    args_mat(&args, chol_inv_half(K, K->half));
    kiln__args_u64(&args, 0);
    kiln__args_u32(&args, (uint32_t)upper);
    kiln__args_local(&args, 2 * CHOL_INV_MAX * L->ts);
    kiln__args_local(&args, 2 * CHOL_INV_MAX * L->ts);
    size_t local = jb <= CHOL_INV_MAX / 2 ? 64 : 256; /* 8 x 8 or 16 x 16 lanes */
    KILN_TRY(kiln__args_enqueue_1d(&args, L->ctx, local, local));
    return r == n ? KILN_OK : chol_col(L, K, A, n, upper, j0, jb, pe, inf);
  }
  if (is_small(L, jb, jb)) {
    kiln__args args = diag_args(L, K->sk, A, n, upper, j0, jb, inf);
    kiln__args_local(&args, jb * (jb | 1) * L->ts);
    KILN_TRY(kiln__args_enqueue_1d(&args, L->ctx, K->slocal, K->slocal));
  } else {
    kiln__args args = kiln__args_begin(L->op, K->kk);
    args_mat(&args, A);
    kiln__args_u64(&args, rs);
    kiln__args_u64(&args, cs);
    kiln__args_u32(&args, (uint32_t)jb);
    kiln__args_u32(&args, (uint32_t)j0);
    args_mat(&args, inf);
    KILN_TRY(kiln__args_enqueue_1d(&args, L->ctx, K->local, K->local));
  }
  if (r == n)
    return KILN_OK;
  /* lower: L21 = A21 L11^-H; upper: U12 = U11^-H A12 */
  if (!upper)
    return tri(L, 1, 0, 0, 2, 0, n - r, jb, 1.0, at(A, j0 * n + j0), n, 0, at(A, r * n + j0), n, 0,
               1);
  return tri(L, 1, 1, 1, 2, 0, jb, n - r, 1.0, at(A, j0 * n + j0), n, 0, at(A, j0 * n + r), n, 0,
             1);
}

/*
 * The columns [p0, pe) of the device route's blocked Cholesky (chol_blocked's panel), all rows
 * below included. With chol_inv, a panel wider than it takes runs as its 64-column steps,
 * each chol_col updating the panel's later columns (the other triangle of their diagonal
 * block takes values nobody reads); otherwise the panel is one step.
 */
static kiln_status
chol_panel(const la *L, chol_k *K, mat A, uint64_t n, int upper, uint64_t p0, uint64_t pe, mat inf)
{
  const uint64_t w = K->ck ? CHOL_INV_MAX : pe - p0;
  for (uint64_t j0 = p0; j0 < pe; j0 += w)
    KILN_TRY(chol_step(L, K, A, n, upper, j0, pe - j0 < w ? pe - j0 : w, pe, j0 == p0, inf));
  return KILN_OK;
}

/* chol_panel on the second queue q2 after the context queue's work (see lu_panel_on). */
static kiln_status
chol_panel_on(const la *L, cl_command_queue q2, chol_k *K, mat A, uint64_t n, int upper,
              uint64_t p0, uint64_t pe, mat inf)
{
  cl_command_queue q = L->ctx->queue;
  KILN_TRY(kiln__lh_join(L->op, q, q2));
  L->ctx->queue = q2;
  kiln_status s = chol_panel(L, K, A, n, upper, p0, pe, inf);
  L->ctx->queue = q;
  return s;
}

/*
 * chol_inv and chol_col for the device route's steps where the other updates run on CLBlast
 * or gemm_tile (kiln's gemm_acc-only route keeps the solves) and the device gives chol_inv 256
 * lanes: K->ck, K->colk and the scratch (*inv, *sync, released by the caller; sync zeroed),
 * else K->ck stays NULL.
 */
static kiln_status
chol_inv_setup(const la *L, uint64_t n, chol_k *K, kiln_tensor **inv, kiln_tensor **sync)
{
  if (!(L->clblast || L->tile))
    return KILN_OK;
  cl_kernel ck, colk;
  KILN_TRY(kern(L, "chol_inv", &ck));
  if (kiln__launch_pow2_local(L->ctx, ck) < 256)
    return KILN_OK;
  KILN_TRY(kern(L, "chol_col", &colk));
  if (kiln__launch_pow2_local(L->ctx, colk) < 256)
    return KILN_OK;
  KILN_TRY(kiln__ops_scratch(L->op, L->ctx, L->dt, 2 * CHOL_INV_MAX * CHOL_INV_MAX, inv));
  KILN_TRY(kiln__ops_scratch(L->op, L->ctx, KILN_I32, 2 + (n + 63) / 64, sync));
  KILN_TRY(zero_fill(L, *sync));
  K->ck = ck;
  K->colk = colk;
  K->inv = tmat(*inv);
  K->sync = tmat(*sync);
  return KILN_OK;
}

/*
 * The device route's blocked Cholesky of one n x n matrix (chol_run), the other triangle left:
 * panels of nb columns (chol_panel), each followed by one SYRK over the trailing matrix, nb
 * deep. With chol_inv and nb above 64 that is two levels: at 4096 and nb 256, 15 SYRK passes
 * instead of 63, deep enough for the large GEMM kernel. With look-ahead (L->ahead) the next
 * panel's columns are updated first (SYRK of its diagonal block, GEMM below it), and that
 * panel is factored on the second queue while this one runs the rest of the SYRK, so that the
 * panels' chain of one-work-group chol_inv launches overlaps the trailing updates (on the H200
 * it did not pay: the panel's chain is as long as the SYRK it hides; docs/linalg.md).
 */
static kiln_status
chol_blocked(const la *L, chol_k *K, mat A, uint64_t n, int upper, mat inf)
{
  const uint64_t nb = L->nb;
  cl_command_queue q2 = NULL;
  if (L->ahead && n > nb)
    KILN_TRY(kiln__lh_queue2(L->op, L->ctx, &q2));
  if (q2)
    KILN_TRY(chol_panel(L, K, A, n, upper, 0, nb, inf));
  for (uint64_t p0 = 0; p0 < n; p0 += nb) {
    uint64_t pe = n - p0 < nb ? n : p0 + nb;
    /* With chol_col's steps, a remainder under half a panel joins the panel before it: its own
     * SYRK pass would take a whole wave of the large GEMM kernel for a few tiles (H200, f64
     * 4096 in 768-column panels: the SYRK passes 0.97 ms a call against 1.10 with a last panel
     * of 256 columns, docs/linalg.md). */
    if (!q2 && K->ck && n - pe < nb / 2)
      pe = n;
    const uint64_t kb = pe - p0;
    if (!q2)
      KILN_TRY(chol_panel(L, K, A, n, upper, p0, pe, inf));
    if (pe == n)
      break;
    uint64_t pn = q2 ? (n - pe < nb ? n : pe + nb) : pe, jn = pn - pe;
    if (jn && !upper) {
      KILN_TRY(syrk_sub(L, 0, jn, kb, at(A, pe * n + p0), n, at(A, pe * n + pe), n));
      KILN_TRY(gemm_g(L, 0, 2, n - pn, jn, kb, -1.0, at(A, pn * n + p0), n, at(A, pe * n + p0), n,
                      1.0, at(A, pn * n + pe), n));
    } else if (jn) {
      KILN_TRY(syrk_sub(L, 1, jn, kb, at(A, p0 * n + pe), n, at(A, pe * n + pe), n));
      KILN_TRY(gemm_g(L, 2, 0, jn, n - pn, kb, -1.0, at(A, p0 * n + pe), n, at(A, p0 * n + pn), n,
                      1.0, at(A, pe * n + pn), n));
    }
    if (jn)
      KILN_TRY(chol_panel_on(L, q2, K, A, n, upper, pe, pn, inf));
    if (pn < n && !upper)
      KILN_TRY(syrk_sub(L, 0, n - pn, kb, at(A, pn * n + p0), n, at(A, pn * n + pn), n));
    else if (pn < n)
      KILN_TRY(syrk_sub(L, 1, n - pn, kb, at(A, p0 * n + pn), n, at(A, pn * n + pn), n));
    if (jn)
      KILN_TRY(kiln__lh_join(L->op, q2, L->ctx->queue));
  }
  return KILN_OK;
}

/* Zeros the triangle of the n x n matrix A other than the factor's (tri_zero, kernel zk). */
static kiln_status
tri_zero(const la *L, cl_kernel zk, mat A, uint64_t n, int upper)
{
  kiln__args args = kiln__args_begin(L->op, zk);
  args_mat(&args, A);
  kiln__args_u32(&args, (uint32_t)n);
  kiln__args_u64(&args, upper ? 1 : n);
  kiln__args_u64(&args, upper ? n : 1);
  return enqueue2(&args, L, n, n);
}

/* Cholesky of batch n x n matrices in place (the uplo triangle; the other one zeroed). */
static kiln_status
chol_run(const la *L, mat a, uint64_t n, uint64_t batch, int upper, kiln_tensor *info)
{
  KILN_TRY(zero_fill(L, info));
  if (n == 0 || batch == 0)
    return KILN_OK;
  la Lc = *L;
  /* the rule's two-level panels (they need chol_inv, checked below) */
  const uint64_t nb1 = L->nb;
  Lc.nb = L->chol_nb;
  Lc.large = L->chol_large;
  L = &Lc;
  /* Upper is the lower algorithm on the transposed view: U = L^T, A symmetric. */
  uint64_t rs = upper ? 1 : n, cs = upper ? n : 1;
  cl_kernel kk;
  if (is_small(L, n, n)) {
    KILN_TRY(kern(L, "chol_small", &kk));
    size_t local = small_local(L, kk, n);
    kiln__args args = kiln__args_begin(L->op, kk);
    args_mat(&args, a);
    kiln__args_u64(&args, n * n);
    kiln__args_u32(&args, (uint32_t)n);
    kiln__args_u64(&args, rs);
    kiln__args_u64(&args, cs);
    kiln__args_tensor(&args, info);
    kiln__args_u32(&args, 0);
    kiln__args_local(&args, n * (n | 1) * L->ts);
    return kiln__args_enqueue_1d(&args, L->ctx, (size_t)batch * local, local);
  }
  /* Diagonal blocks that fit run chol_small in local memory, others chol_panel in global. */
  chol_k K = {0};
  KILN_TRY(kern(L, "chol_small", &K.sk));
  /* the diagonal blocks: 256 lanes on GPUs (64 took 176 us for a 64 x 64 block on the H200:
   * about 1400 updates per lane), one work-group each */
  K.slocal = small_local(L, K.sk, L->nb);
  if (L->ctx->info.is_gpu) {
    size_t mx = kiln__launch_pow2_local(L->ctx, K.sk);
    K.slocal = mx < 256 ? mx : 256;
  }
  KILN_TRY(kern(L, "chol_panel", &K.kk));
  K.local = kiln__launch_pow2_local(L->ctx, K.kk);
  if (K.local > 256)
    K.local = 256;
  cl_kernel zk;
  KILN_TRY(kern(L, "tri_zero", &zk));
#if KILN_HAVE_LAPACKE
  hy h;
  int32_t *bad = NULL;
  if (L->host_chol) {
    uint64_t nb = L->hnb_chol && L->hnb_chol < n ? L->hnb_chol : n;
    KILN_TRY(hy_make(L, nb, nb, n, 1, &h));
    bad = calloc(batch, sizeof *bad);
    if (!bad) {
      hy_free(L, &h);
      return kiln__fail(KILN_ERR_HOST_MEMORY, L->op, 0, "no memory for %llu words",
                        (unsigned long long)batch);
    }
  }
#endif
  kiln_status s = KILN_OK;
  kiln_tensor *inv = NULL, *sync = NULL;
  if (!L->host_chol)
    s = chol_inv_setup(L, n, &K, &inv, &sync);
  if (!K.ck && Lc.nb > nb1)
    Lc.nb = nb1; /* no chol_inv on this device: one level, as before the rule's panels */
  /* Without chol_inv, complex diagonal blocks that do not fit the local memory (c128 64 x 64
   * on 48 KiB) would take chol_panel, one global barrier per column: halve the block until
   * chol_small takes it. */
  while (!K.ck && kiln__dtype_is_complex(Lc.dt) && Lc.nb > 16 && Lc.nb <= Lc.small_max &&
         !is_small(&Lc, Lc.nb, Lc.nb))
    Lc.nb /= 2;
  for (uint64_t b = 0; s == KILN_OK && b < batch; b++) {
    mat A = at(a, b * n * n), inf = at(tmat(info), b);
#if KILN_HAVE_LAPACKE
    if (L->host_chol) {
      s = chol_hybrid(L, &h, A, n, upper, &bad[b]);
      if (s == KILN_OK)
        s = tri_zero(L, zk, A, n, upper);
      if (s == KILN_OK && b + 1 == batch) {
        cl_int err = clEnqueueWriteBuffer(L->ctx->queue, info->mem, CL_TRUE, info->offset,
                                          batch * sizeof *bad, bad, 0, NULL, NULL);
        if (err != CL_SUCCESS)
          s = kiln__fail_cl(L->op, err, "clEnqueueWriteBuffer (info)");
      }
      if (s != KILN_OK || b + 1 == batch) {
        free(bad);
        hy_free(L, &h);
        return s;
      }
      continue;
    }
#endif
    s = chol_blocked(L, &K, A, n, upper, inf);
    if (s == KILN_OK && !K.ck) /* chol_col zeroes the other triangle as it goes */
      s = tri_zero(L, zk, A, n, upper);
  }
  kiln_tensor_release(inv);
  kiln_tensor_release(sync);
  return s;
}

/*
 * Reads info [batch] back (the lock is dropped while waiting) and fails with status when an
 * entry is set; what names the condition.
 */
static kiln_status
info_check(const la *L, kiln_tensor *info, uint64_t batch, int chol)
{
  if (batch == 0)
    return KILN_OK;
  int32_t *h = malloc(batch * sizeof *h);
  KILN_RETURN_IF(!h, KILN_ERR_HOST_MEMORY, L->op, "no memory for %llu status words",
                 (unsigned long long)batch);
  kiln_status s = kiln__ops_read(L->op, L->ctx, info, 0, h, batch * sizeof *h);
  for (uint64_t b = 0; s == KILN_OK && b < batch; b++) {
    if (h[b] == 0)
      continue;
    if (chol)
      s = kiln__fail(KILN_ERR_NOT_POSITIVE_DEFINITE, L->op, h[b],
                     "matrix %llu of the batch is not positive definite: its leading minor of "
                     "order %d is not (the pivot there is <= 0 or NaN)",
                     (unsigned long long)b, (int)h[b]);
    else
      s = kiln__fail(KILN_ERR_SINGULAR, L->op, h[b],
                     "matrix %llu of the batch is singular: U[%d][%d] of its LU is exactly zero "
                     "(pivot %d, counting from 1)",
                     (unsigned long long)b, (int)h[b] - 1, (int)h[b] - 1, (int)h[b]);
  }
  free(h);
  return s;
}

/* ---------------------------------------------------------------- validation */

static const char *
fmt(const kiln__shape *s, char *buf, size_t len)
{
  return kiln__shape_format(s, buf, len);
}

/* A floating matrix operand: f32/f64/c64/c128 the device runs, at least 2 dimensions. */
static kiln_status
check_mat(const char *op, kiln_context *ctx, const kiln_tensor *t, const char *name)
{
  KILN_TRY(kiln__tensor_check(op, t, ctx));
  KILN_RETURN_IF(t->dtype != KILN_F32 && t->dtype != KILN_F64 && t->dtype != KILN_C64 &&
                     t->dtype != KILN_C128,
                 KILN_ERR_DTYPE, op, "%s is %s; linear algebra accepts f32, f64, c64 and c128",
                 name, kiln_dtype_name(t->dtype));
  KILN_RETURN_IF(!kiln__device_has_dtype(&ctx->info, t->dtype), KILN_ERR_UNSUPPORTED, op,
                 "%s is %s but the device has no fp64", name, kiln_dtype_name(t->dtype));
  char b[128];
  KILN_RETURN_IF(t->shape.ndim < 2, KILN_ERR_SHAPE, op,
                 "%s has shape %s; a matrix needs at least 2 dimensions [..., rows, cols]", name,
                 fmt(&t->shape, b, sizeof b));
  /* Kernels index rows and columns with 32-bit integers, and pivots are i32. */
  KILN_RETURN_IF(t->shape.dims[t->shape.ndim - 1] > INT32_MAX ||
                     t->shape.dims[t->shape.ndim - 2] > INT32_MAX,
                 KILN_ERR_OVERFLOW, op, "%s has shape %s; rows and columns are limited to 2^31-1",
                 name, fmt(&t->shape, b, sizeof b));
  return KILN_OK;
}

static kiln_status
check_square(const char *op, const kiln_tensor *t, const char *name)
{
  char b[128];
  size_t nd = t->shape.ndim;
  KILN_RETURN_IF(t->shape.dims[nd - 1] != t->shape.dims[nd - 2], KILN_ERR_SHAPE, op,
                 "%s has shape %s; this op needs square matrices", name,
                 fmt(&t->shape, b, sizeof b));
  return KILN_OK;
}

static kiln_status
check_same_dtype(const char *op, const kiln_tensor *a, const kiln_tensor *b, const char *an,
                 const char *bn)
{
  KILN_RETURN_IF(a->dtype != b->dtype, KILN_ERR_DTYPE, op, "%s is %s but %s is %s", an,
                 kiln_dtype_name(a->dtype), bn, kiln_dtype_name(b->dtype));
  return KILN_OK;
}

/* Product of the first nd dimensions (the batch). */
static uint64_t
lead(const kiln__shape *s, size_t nd)
{
  uint64_t n = 1;
  for (size_t i = 0; i < nd; i++)
    n *= (uint64_t)s->dims[i];
  return n;
}

static kiln__shape
shape_of(size_t nd, const int64_t *lead_dims, size_t nlead, const int64_t *tail, size_t ntail)
{
  kiln__shape s;
  memset(&s, 0, sizeof s);
  (void)nd;
  for (size_t i = 0; i < nlead; i++)
    s.dims[s.ndim++] = lead_dims[i];
  for (size_t i = 0; i < ntail; i++)
    s.dims[s.ndim++] = tail[i];
  return s;
}

/* b's batch dimensions (all but the last nb_tail) equal a's (all but the last two). */
static kiln_status
check_batch(const char *op, const kiln_tensor *a, const kiln_tensor *b, size_t b_tail,
            const char *an, const char *bn)
{
  char x[128], y[128];
  size_t na = a->shape.ndim - 2, nb = b->shape.ndim >= b_tail ? b->shape.ndim - b_tail : 0;
  int ok = b->shape.ndim >= b_tail && na == nb;
  for (size_t i = 0; ok && i < na; i++)
    ok = a->shape.dims[i] == b->shape.dims[i];
  KILN_RETURN_IF(!ok, KILN_ERR_SHAPE, op,
                 "%s %s and %s %s have different batch dimensions (they must be equal)", an,
                 fmt(&a->shape, x, sizeof x), bn, fmt(&b->shape, y, sizeof y));
  return KILN_OK;
}

/* Up to four results of one call, prepared under the lock and discarded on failure. */
typedef struct outs {
  kiln_tensor **p[4];
  int made[4];
  size_t n;
} outs;

static kiln_status
out_add(outs *o, const char *op, kiln_context *ctx, kiln_dtype dt, const kiln__shape *s,
        kiln_tensor **out)
{
  o->p[o->n] = out;
  o->made[o->n] = 0;
  kiln_status st = kiln__output_prepare(op, ctx, dt, s, out, &o->made[o->n]);
  o->n++;
  return st;
}

static kiln_status
outs_end(outs *o, kiln_status s)
{
  if (s != KILN_OK)
    for (size_t i = 0; i < o->n; i++)
      kiln__output_discard(o->p[i], o->made[i]);
  return s;
}

/* out may be exactly in's bytes when same_ok; any other shared byte is refused. */
static kiln_status
check_overlap(const char *op, const kiln_tensor *out, const kiln_tensor *in, int same_ok,
              const char *on, const char *in_name)
{
  kiln__overlap v = kiln__ops_overlap(out, in);
  KILN_RETURN_IF(v == KILN__OVERLAP_PARTIAL || (v == KILN__OVERLAP_SAME && !same_ok),
                 KILN_ERR_INVALID_ARGUMENT, op, "%s overlaps %s%s; use a separate tensor", on,
                 in_name, same_ok ? " partly (only the very same bytes are allowed)" : "");
  return KILN_OK;
}

#define NONNULL(op, p, name) KILN_RETURN_IF(!(p), KILN_ERR_INVALID_ARGUMENT, op, "%s is NULL", name)

/* ---------------------------------------------------------------- LU API */

/* Packed LU of a into *lu (prepared, same shape) and pivots into piv; info scratch made. */
static kiln_status
lu_into(const la *L, const kiln_tensor *a, kiln_tensor *lu, mat piv, kiln_tensor **info)
{
  size_t nd = a->shape.ndim;
  uint64_t m = (uint64_t)a->shape.dims[nd - 2], n = (uint64_t)a->shape.dims[nd - 1];
  uint64_t batch = lead(&a->shape, nd - 2);
  KILN_TRY(kiln__ops_copy(L->op, L->ctx, a, lu));
  KILN_TRY(kiln__ops_scratch(L->op, L->ctx, KILN_I32, batch, info));
  return lu_run(L, tmat(lu), m, n, batch, piv, *info);
}

kiln_status
kiln_linalg_lu_factor(kiln_context *ctx, const kiln_tensor *a, kiln_tensor **lu,
                      kiln_tensor **pivots)
{
  static const char op[] = "kiln_linalg_lu_factor";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(check_mat(op, ctx, a, "a"));
  NONNULL(op, lu, "lu");
  NONNULL(op, pivots, "pivots");
  size_t nd = a->shape.ndim;
  int64_t k =
      a->shape.dims[nd - 2] < a->shape.dims[nd - 1] ? a->shape.dims[nd - 2] : a->shape.dims[nd - 1];
  kiln__shape ps = shape_of(0, a->shape.dims, nd - 2, &k, 1);
  la L = la_begin(op, ctx, a);
  outs o = {0};
  kiln_status s = out_add(&o, op, ctx, a->dtype, &a->shape, lu);
  if (s == KILN_OK)
    s = out_add(&o, op, ctx, KILN_I32, &ps, pivots);
  if (s == KILN_OK)
    s = check_overlap(op, *lu, a, 1, "lu", "a");
  if (s == KILN_OK)
    s = check_overlap(op, *pivots, a, 0, "pivots", "a");
  if (s == KILN_OK)
    s = check_overlap(op, *pivots, *lu, 0, "pivots", "lu");
  kiln_tensor *info = NULL;
  if (s == KILN_OK)
    s = lu_into(&L, a, *lu, tmat(*pivots), &info);
  kiln_tensor_release(info);
  s = outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_linalg_lu(kiln_context *ctx, const kiln_tensor *a, kiln_tensor **p, kiln_tensor **l,
               kiln_tensor **u)
{
  static const char op[] = "kiln_linalg_lu";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(check_mat(op, ctx, a, "a"));
  NONNULL(op, p, "p");
  NONNULL(op, l, "l");
  NONNULL(op, u, "u");
  size_t nd = a->shape.ndim;
  int64_t m = a->shape.dims[nd - 2], n = a->shape.dims[nd - 1], k = m < n ? m : n;
  int64_t pt[2] = {m, m}, lt[2] = {m, k}, ut[2] = {k, n};
  kiln__shape ps = shape_of(0, a->shape.dims, nd - 2, pt, 2);
  kiln__shape ls = shape_of(0, a->shape.dims, nd - 2, lt, 2);
  kiln__shape us = shape_of(0, a->shape.dims, nd - 2, ut, 2);
  uint64_t batch = lead(&a->shape, nd - 2);
  la L = la_begin(op, ctx, a);
  outs o = {0};
  kiln_status s = out_add(&o, op, ctx, a->dtype, &ps, p);
  if (s == KILN_OK)
    s = out_add(&o, op, ctx, a->dtype, &ls, l);
  if (s == KILN_OK)
    s = out_add(&o, op, ctx, a->dtype, &us, u);
  if (s == KILN_OK) {
    kiln_tensor *const r[3] = {*p, *l, *u};
    static const char *const names[3] = {"p", "l", "u"};
    s = kiln__ops_outputs_disjoint(op, r, names, 3);
    for (int i = 0; s == KILN_OK && i < 3; i++)
      s = check_overlap(op, r[i], a, 0, names[i], "a");
  }
  kiln_tensor *lu = NULL, *piv = NULL, *info = NULL, *perm = NULL;
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, a->dtype, a->numel, &lu);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, KILN_I32, batch * (uint64_t)k, &piv);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, KILN_I32, batch * (uint64_t)m, &perm);
  if (s == KILN_OK && a->numel) {
    kiln_tensor *luv = NULL;
    s = kiln__tensor_view(op, lu, 0, &a->shape, &luv);
    if (s == KILN_OK)
      s = lu_into(&L, a, luv, tmat(piv), &info);
    kiln_tensor_release(luv);
  }
  cl_kernel kk;
  if (s == KILN_OK && batch && m)
    s = kern(&L, "piv_perm", &kk);
  if (s == KILN_OK && batch && m) {
    kiln__args args = kiln__args_begin(op, kk);
    kiln__args_tensor(&args, piv);
    kiln__args_u64(&args, (uint64_t)k);
    kiln__args_u32(&args, (uint32_t)k);
    kiln__args_tensor(&args, perm);
    kiln__args_u32(&args, (uint32_t)m);
    kiln__args_u64(&args, batch);
    s = kiln__args_launch_1d(&args, ctx, batch, 0);
  }
  if (s == KILN_OK && batch && m)
    s = kern(&L, "lu_unpack", &kk);
  if (s == KILN_OK && batch && m) {
    kiln__args args = kiln__args_begin(op, kk);
    kiln__args_tensor(&args, lu);
    kiln__args_u64(&args, (uint64_t)(m * n));
    kiln__args_u32(&args, (uint32_t)m);
    kiln__args_u32(&args, (uint32_t)n);
    kiln__args_u32(&args, (uint32_t)k);
    kiln__args_tensor(&args, perm);
    kiln__args_tensor(&args, *p);
    kiln__args_tensor(&args, *l);
    kiln__args_tensor(&args, *u);
    size_t g0 = (size_t)(m > n ? m : n), g1 = (size_t)m;
    size_t global[3] = {(g0 + 7) / 8 * 8, (g1 + 7) / 8 * 8, (size_t)batch}, local[3] = {8, 8, 1};
    s = args.status == KILN_OK ? kiln__args_enqueue(&args, ctx, 3, global, local) : args.status;
  }
  kiln_tensor_release(lu);
  kiln_tensor_release(piv);
  kiln_tensor_release(info);
  kiln_tensor_release(perm);
  s = outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/*
 * Right-hand sides of a solve against [..., n, n] a: b is [..., n, k], or a vector [..., n]
 * (b 1-D with a 2-D, or b's shape a's without its last dimension). Sets nrhs.
 */
static kiln_status
check_rhs(const char *op, const kiln_tensor *a, const kiln_tensor *b, int allow_vector,
          uint64_t *nrhs, const char *an)
{
  char x[128], y[128];
  size_t nd = a->shape.ndim;
  int64_t n = a->shape.dims[nd - 1];
  int vec = 0;
  if (allow_vector && b->shape.ndim == nd - 1) {
    vec = 1;
    for (size_t i = 0; vec && i < nd - 1; i++)
      vec = b->shape.dims[i] == a->shape.dims[i];
  }
  if (vec) {
    *nrhs = 1;
    return KILN_OK;
  }
  KILN_RETURN_IF(b->shape.ndim < 2, KILN_ERR_SHAPE, op, "b has shape %s; expected [..., %lld, k]%s",
                 fmt(&b->shape, y, sizeof y), (long long)n,
                 allow_vector ? " or a vector of a's shape without its last dimension" : "");
  KILN_TRY(check_batch(op, a, b, 2, an, "b"));
  KILN_RETURN_IF(b->shape.dims[b->shape.ndim - 2] != n, KILN_ERR_SHAPE, op,
                 "%s %s and b %s: b needs %lld rows", an, fmt(&a->shape, x, sizeof x),
                 fmt(&b->shape, y, sizeof y), (long long)n);
  *nrhs = (uint64_t)b->shape.dims[b->shape.ndim - 1];
  KILN_RETURN_IF(*nrhs > INT32_MAX, KILN_ERR_OVERFLOW, op,
                 "b has %llu columns; right-hand sides are limited to 2^31-1",
                 (unsigned long long)*nrhs);
  return KILN_OK;
}

kiln_status
kiln_linalg_lu_solve(kiln_context *ctx, const kiln_tensor *lu, const kiln_tensor *pivots,
                     const kiln_tensor *b, kiln_trans trans, kiln_tensor **x)
{
  static const char op[] = "kiln_linalg_lu_solve";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(check_mat(op, ctx, lu, "lu"));
  KILN_TRY(check_square(op, lu, "lu"));
  KILN_TRY(check_mat(op, ctx, b, "b"));
  KILN_TRY(check_same_dtype(op, lu, b, "lu", "b"));
  KILN_TRY(kiln__tensor_check(op, pivots, ctx));
  KILN_RETURN_IF(pivots->dtype != KILN_I32, KILN_ERR_DTYPE, op, "pivots is %s, expected i32",
                 kiln_dtype_name(pivots->dtype));
  KILN_RETURN_IF(trans != KILN_NO_TRANS && trans != KILN_TRANS && trans != KILN_CONJ_TRANS,
                 KILN_ERR_INVALID_ARGUMENT, op, "trans is %d, not a kiln_trans", (int)trans);
  NONNULL(op, x, "x");
  uint64_t nrhs = 0;
  KILN_TRY(check_rhs(op, lu, b, 0, &nrhs, "lu"));
  size_t nd = lu->shape.ndim;
  int64_t n = lu->shape.dims[nd - 1];
  kiln__shape ps = shape_of(0, lu->shape.dims, nd - 2, &n, 1);
  char y[128], z[128];
  KILN_RETURN_IF(!kiln__shape_equal(&pivots->shape, &ps), KILN_ERR_SHAPE, op,
                 "pivots has shape %s, expected %s", fmt(&pivots->shape, y, sizeof y),
                 fmt(&ps, z, sizeof z));
  uint64_t batch = lead(&lu->shape, nd - 2);
  la L = la_begin(op, ctx, lu);
  outs o = {0};
  kiln_status s = out_add(&o, op, ctx, b->dtype, &b->shape, x);
  if (s == KILN_OK)
    s = check_overlap(op, *x, b, 1, "x", "b");
  if (s == KILN_OK)
    s = check_overlap(op, *x, lu, 0, "x", "lu");
  if (s == KILN_OK)
    s = check_overlap(op, *x, pivots, 0, "x", "pivots");
  if (s == KILN_OK)
    s = kiln__ops_copy(op, ctx, b, *x);
  if (s == KILN_OK && n && nrhs)
    s = lu_solve_run(&L, tmat(lu), tmat(pivots), (uint64_t)n, nrhs, tmat(*x), batch,
                     trans == KILN_CONJ_TRANS ? 2 : trans == KILN_TRANS);
  s = outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/*
 * LU of square a into scratch (lu, piv, info); when check, waits and fails on a singular
 * matrix. ctx->lock held.
 */
static kiln_status
lu_scratch(const la *L, const kiln_tensor *a, int check, kiln_tensor **lu, kiln_tensor **piv,
           kiln_tensor **info)
{
  size_t nd = a->shape.ndim;
  uint64_t n = (uint64_t)a->shape.dims[nd - 1], batch = lead(&a->shape, nd - 2);
  KILN_TRY(kiln__ops_scratch(L->op, L->ctx, a->dtype, a->numel, lu));
  KILN_TRY(kiln__ops_scratch(L->op, L->ctx, KILN_I32, batch * n, piv));
  if (a->numel == 0) {
    KILN_TRY(kiln__ops_scratch(L->op, L->ctx, KILN_I32, batch, info));
    return zero_fill(L, *info);
  }
  kiln_tensor *luv = NULL;
  kiln_status s = kiln__tensor_view(L->op, *lu, 0, &a->shape, &luv);
  if (s == KILN_OK)
    s = lu_into(L, a, luv, tmat(*piv), info);
  kiln_tensor_release(luv);
  if (s == KILN_OK && check)
    s = info_check(L, *info, batch, 0);
  return s;
}

kiln_status
kiln_linalg_solve(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b, kiln_tensor **x)
{
  static const char op[] = "kiln_linalg_solve";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(check_mat(op, ctx, a, "a"));
  KILN_TRY(check_square(op, a, "a"));
  KILN_TRY(kiln__tensor_check(op, b, ctx));
  KILN_TRY(check_same_dtype(op, a, b, "a", "b"));
  NONNULL(op, x, "x");
  uint64_t nrhs = 0;
  KILN_TRY(check_rhs(op, a, b, 1, &nrhs, "a"));
  size_t nd = a->shape.ndim;
  uint64_t n = (uint64_t)a->shape.dims[nd - 1], batch = lead(&a->shape, nd - 2);
  la L = la_begin(op, ctx, a);
  outs o = {0};
  kiln_status s = out_add(&o, op, ctx, b->dtype, &b->shape, x);
  if (s == KILN_OK)
    s = check_overlap(op, *x, b, 1, "x", "b");
  if (s == KILN_OK)
    s = check_overlap(op, *x, a, 0, "x", "a");
  kiln_tensor *lu = NULL, *piv = NULL, *info = NULL;
  if (s == KILN_OK)
    s = lu_scratch(&L, a, 1, &lu, &piv, &info);
  if (s == KILN_OK)
    s = kiln__ops_copy(op, ctx, b, *x);
  if (s == KILN_OK && n && nrhs)
    s = lu_solve_run(&L, tmat(lu), tmat(piv), n, nrhs, tmat(*x), batch, 0);
  kiln_tensor_release(lu);
  kiln_tensor_release(piv);
  kiln_tensor_release(info);
  s = outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

static kiln_status
eye_fill(const la *L, mat x, uint64_t n, uint64_t batch)
{
  cl_kernel k;
  KILN_TRY(kern(L, "eye", &k));
  kiln__args args = kiln__args_begin(L->op, k);
  args_mat(&args, x);
  kiln__args_u64(&args, n * n);
  kiln__args_u32(&args, (uint32_t)n);
  return enqueue2(&args, L, n * n, batch);
}

kiln_status
kiln_linalg_inv(kiln_context *ctx, const kiln_tensor *a, kiln_tensor **out)
{
  static const char op[] = "kiln_linalg_inv";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(check_mat(op, ctx, a, "a"));
  KILN_TRY(check_square(op, a, "a"));
  NONNULL(op, out, "out");
  size_t nd = a->shape.ndim;
  uint64_t n = (uint64_t)a->shape.dims[nd - 1], batch = lead(&a->shape, nd - 2);
  la L = la_begin(op, ctx, a);
  outs o = {0};
  kiln_status s = out_add(&o, op, ctx, a->dtype, &a->shape, out);
  if (s == KILN_OK)
    s = check_overlap(op, *out, a, 1, "out", "a");
  kiln_tensor *lu = NULL, *piv = NULL, *info = NULL;
  if (s == KILN_OK)
    s = lu_scratch(&L, a, 1, &lu, &piv, &info);
  if (s == KILN_OK && n && batch)
    s = eye_fill(&L, tmat(*out), n, batch);
  if (s == KILN_OK && n)
    s = lu_solve_run(&L, tmat(lu), tmat(piv), n, n, tmat(*out), batch, 0);
  kiln_tensor_release(lu);
  kiln_tensor_release(piv);
  kiln_tensor_release(info);
  s = outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/* det (sign NULL) or slogdet of square a into prepared results. */
static kiln_status
det_common(const char *op, kiln_context *ctx, const kiln_tensor *a, kiln_tensor **sign,
           kiln_tensor **val)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(check_mat(op, ctx, a, "a"));
  KILN_TRY(check_square(op, a, "a"));
  NONNULL(op, val, sign ? "logabsdet" : "out");
  size_t nd = a->shape.ndim;
  uint64_t n = (uint64_t)a->shape.dims[nd - 1], batch = lead(&a->shape, nd - 2);
  kiln__shape rs = shape_of(0, a->shape.dims, nd - 2, NULL, 0);
  la L = la_begin(op, ctx, a);
  outs o = {0};
  kiln_status s = KILN_OK;
  if (sign)
    s = out_add(&o, op, ctx, a->dtype, &rs, sign);
  /* slogdet's log|det| is real (f32 for c64, f64 for c128), as torch's */
  if (s == KILN_OK)
    s = out_add(&o, op, ctx, sign ? kiln__dtype_real_part(a->dtype) : a->dtype, &rs, val);
  if (s == KILN_OK && sign)
    s = check_overlap(op, *sign, *val, 0, "sign", "logabsdet");
  kiln_tensor *lu = NULL, *piv = NULL, *info = NULL;
  if (s == KILN_OK)
    s = lu_scratch(&L, a, 0, &lu, &piv, &info);
  cl_kernel k;
  if (s == KILN_OK && batch)
    s = kern(&L, "lu_det", &k);
  if (s == KILN_OK && batch) {
    kiln__args args = kiln__args_begin(op, k);
    kiln__args_tensor(&args, lu);
    kiln__args_u64(&args, n * n);
    kiln__args_u32(&args, (uint32_t)n);
    kiln__args_tensor(&args, piv);
    kiln__args_u64(&args, n);
    kiln__args_u32(&args, sign ? 1u : 0u);
    kiln__args_tensor(&args, sign ? *sign : *val);
    kiln__args_tensor(&args, *val);
    kiln__args_u64(&args, batch);
    s = kiln__args_launch_1d(&args, ctx, batch, 0);
  }
  kiln_tensor_release(lu);
  kiln_tensor_release(piv);
  kiln_tensor_release(info);
  s = outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_linalg_det(kiln_context *ctx, const kiln_tensor *a, kiln_tensor **out)
{
  return det_common("kiln_linalg_det", ctx, a, NULL, out);
}

kiln_status
kiln_linalg_slogdet(kiln_context *ctx, const kiln_tensor *a, kiln_tensor **sign,
                    kiln_tensor **logabsdet)
{
  static const char op[] = "kiln_linalg_slogdet";
  KILN_RETURN_IF(!sign, KILN_ERR_INVALID_ARGUMENT, op, "sign is NULL");
  return det_common(op, ctx, a, sign, logabsdet);
}

/* ---------------------------------------------------------------- rcond */

/*
 * x (host, batch x n; complex dtypes: interleaved real and imaginary parts) to the device
 * vector tensor, solve (trans 0, 1 or 2 as lu_solve_run), and back (ctx->lock held).
 */
static kiln_status
solve_vecs(const la *L, kiln_tensor *lu, kiln_tensor *piv, kiln_tensor *v, double *x, void *hbuf,
           uint64_t n, uint64_t batch, int trans)
{
  uint64_t cnt = n * batch, parts = kiln__dtype_is_complex(L->dt) ? 2 : 1;
  int single = L->dt == KILN_F32 || L->dt == KILN_C64;
  for (uint64_t i = 0; i < cnt * parts; i++) {
    if (single)
      ((float *)hbuf)[i] = (float)x[i];
    else
      ((double *)hbuf)[i] = x[i];
  }
  cl_int err = clEnqueueWriteBuffer(L->ctx->queue, v->mem, CL_FALSE, v->offset, cnt * L->ts, hbuf,
                                    0, NULL, NULL);
  if (err != CL_SUCCESS)
    return kiln__fail_cl(L->op, err, "clEnqueueWriteBuffer");
  KILN_TRY(lu_solve_run(L, tmat(lu), tmat(piv), n, 1, tmat(v), batch, trans));
  KILN_TRY(kiln__ops_read(L->op, L->ctx, v, 0, hbuf, cnt * L->ts));
  for (uint64_t i = 0; i < cnt * parts; i++)
    x[i] = single ? (double)((float *)hbuf)[i] : ((double *)hbuf)[i];
  return KILN_OK;
}

/*
 * The complex estimate of ||A^-1||_1 (LAPACK zlacn2: Hager and Higham with complex sign
 * vectors x_i = y_i / |y_i|, at most 5 iterations, stop when the estimate stops growing or
 * the largest |z_j| repeats, then the alternating vector), all batch matrices at once into
 * est[b]. Vectors are interleaved (re, im) doubles.
 */
static kiln_status
inv_norm1_est_c(const la *L, kiln_tensor *lu, kiln_tensor *piv, uint64_t n, uint64_t batch,
                double *est)
{
  uint64_t cnt = n * batch;
  double *x = malloc(2 * cnt * sizeof *x);
  void *hbuf = malloc(2 * cnt * 8);
  uint64_t *j = calloc(batch, sizeof *j);
  int *done = calloc(batch, sizeof *done);
  kiln_tensor *v = NULL;
  kiln_status s = (!x || !hbuf || !j || !done)
                      ? kiln__fail(KILN_ERR_HOST_MEMORY, L->op, 0, "no memory for rcond vectors")
                      : kiln__ops_scratch(L->op, L->ctx, L->dt, cnt, &v);
#define CABS_(i) hypot(x[2 * (i)], x[2 * (i) + 1])
  if (s == KILN_OK) {
    for (uint64_t i = 0; i < cnt; i++) {
      x[2 * i] = 1.0 / (double)n;
      x[2 * i + 1] = 0.0;
    }
    s = solve_vecs(L, lu, piv, v, x, hbuf, n, batch, 0);
  }
  for (uint64_t b = 0; s == KILN_OK && b < batch; b++) {
    est[b] = 0.0;
    for (uint64_t i = 0; i < n; i++)
      est[b] += CABS_(b * n + i);
  }
  for (int it = 0; s == KILN_OK && it < 5; it++) {
    /* x holds y = A^-1 x: z = A^-H sign(y), then the next x is e_j at the largest |z_j| */
    for (uint64_t i = 0; i < cnt; i++) {
      double a = CABS_(i);
      x[2 * i] = a > 0 ? x[2 * i] / a : 1.0;
      x[2 * i + 1] = a > 0 ? x[2 * i + 1] / a : 0.0;
    }
    s = solve_vecs(L, lu, piv, v, x, hbuf, n, batch, 2);
    int active = 0;
    for (uint64_t b = 0; s == KILN_OK && b < batch; b++) {
      if (done[b])
        continue;
      uint64_t jl = j[b], jm = 0;
      for (uint64_t i = 1; i < n; i++)
        if (CABS_(b * n + i) > CABS_(b * n + jm))
          jm = i;
      j[b] = jm;
      if (it > 0 && CABS_(b * n + jl) == CABS_(b * n + jm))
        done[b] = 1;
      active |= !done[b];
    }
    if (s != KILN_OK || !active)
      break;
    for (uint64_t b = 0; b < batch; b++)
      for (uint64_t i = 0; i < n; i++) {
        x[2 * (b * n + i)] = i == j[b] ? 1.0 : 0.0;
        x[2 * (b * n + i) + 1] = 0.0;
      }
    s = solve_vecs(L, lu, piv, v, x, hbuf, n, batch, 0);
    for (uint64_t b = 0; s == KILN_OK && b < batch; b++) {
      if (done[b])
        continue;
      double e = 0.0;
      for (uint64_t i = 0; i < n; i++)
        e += CABS_(b * n + i);
      if (!(e > est[b]))
        done[b] = 1;
      else
        est[b] = e;
    }
  }
  if (s == KILN_OK) { /* Higham's alternating vector guards against a bad local maximum */
    for (uint64_t b = 0; b < batch; b++)
      for (uint64_t i = 0; i < n; i++) {
        x[2 * (b * n + i)] =
            (i % 2 ? -1.0 : 1.0) * (1.0 + (n > 1 ? (double)i / (double)(n - 1) : 0.0));
        x[2 * (b * n + i) + 1] = 0.0;
      }
    s = solve_vecs(L, lu, piv, v, x, hbuf, n, batch, 0);
    for (uint64_t b = 0; s == KILN_OK && b < batch; b++) {
      double t = 0.0;
      for (uint64_t i = 0; i < n; i++)
        t += CABS_(b * n + i);
      t = 2.0 * t / (3.0 * (double)n);
      if (t > est[b] || isnan(t))
        est[b] = t;
    }
  }
#undef CABS_
  kiln_tensor_release(v);
  free(x);
  free(hbuf);
  free(j);
  free(done);
  return s;
}

static double
norm1v(const double *x, uint64_t n)
{
  double s = 0;
  for (uint64_t i = 0; i < n; i++)
    s += fabs(x[i]);
  return s;
}

/* Index of the largest |x[i]| (the first one). */
static uint64_t
argmax_abs(const double *x, uint64_t n)
{
  uint64_t j = 0;
  for (uint64_t i = 1; i < n; i++)
    if (fabs(x[i]) > fabs(x[j]))
      j = i;
  return j;
}

/*
 * Hager's estimate of ||A^-1||_1 with Higham's refinements (LAPACK dlacn2: at most 5
 * iterations, stop on no growth or a repeated sign vector, then the alternating vector), for
 * all batch matrices at once into est[b].
 */
static kiln_status
inv_norm1_est(const la *L, kiln_tensor *lu, kiln_tensor *piv, uint64_t n, uint64_t batch,
              double *est)
{
  uint64_t cnt = n * batch;
  double *x = malloc(cnt * sizeof *x), *xi = malloc(cnt * sizeof *xi);
  void *hbuf = malloc(cnt * 8);
  uint64_t *j = calloc(batch, sizeof *j);
  int *done = calloc(batch, sizeof *done);
  kiln_tensor *v = NULL;
  kiln_status s = (!x || !xi || !hbuf || !j || !done)
                      ? kiln__fail(KILN_ERR_HOST_MEMORY, L->op, 0, "no memory for rcond vectors")
                      : kiln__ops_scratch(L->op, L->ctx, L->dt, cnt, &v);
  if (s == KILN_OK) {
    for (uint64_t i = 0; i < cnt; i++)
      x[i] = 1.0 / (double)n;
    s = solve_vecs(L, lu, piv, v, x, hbuf, n, batch, 0);
  }
  for (uint64_t b = 0; s == KILN_OK && b < batch; b++)
    est[b] = norm1v(x + b * n, n);
  for (int it = 0; s == KILN_OK && it < 5; it++) {
    /* x holds y = A^-1 x: z = A^-T sign(y), then the next x is e_j at the largest |z_j|. */
    for (uint64_t i = 0; i < cnt; i++)
      xi[i] = x[i] >= 0 ? 1.0 : -1.0;
    memcpy(x, xi, cnt * sizeof *x);
    s = solve_vecs(L, lu, piv, v, x, hbuf, n, batch, 1);
    int active = 0;
    for (uint64_t b = 0; s == KILN_OK && b < batch; b++) {
      if (done[b])
        continue;
      uint64_t jl = j[b];
      j[b] = argmax_abs(x + b * n, n);
      if (it > 0 && fabs(x[b * n + jl]) == fabs(x[b * n + j[b]]))
        done[b] = 1;
      active |= !done[b];
    }
    if (s != KILN_OK || !active)
      break;
    for (uint64_t b = 0; b < batch; b++)
      for (uint64_t i = 0; i < n; i++)
        x[b * n + i] = i == j[b] ? 1.0 : 0.0;
    s = solve_vecs(L, lu, piv, v, x, hbuf, n, batch, 0);
    for (uint64_t b = 0; s == KILN_OK && b < batch; b++) {
      if (done[b])
        continue;
      double e = norm1v(x + b * n, n);
      int same = 1;
      for (uint64_t i = 0; same && i < n; i++)
        same = (x[b * n + i] >= 0 ? 1.0 : -1.0) == xi[b * n + i];
      if (!(e > est[b]) || same)
        done[b] = 1;
      if (e > est[b])
        est[b] = e;
    }
  }
  if (s == KILN_OK) { /* Higham's alternating vector guards against a bad local maximum */
    for (uint64_t b = 0; b < batch; b++)
      for (uint64_t i = 0; i < n; i++)
        x[b * n + i] = (i % 2 ? -1.0 : 1.0) * (1.0 + (n > 1 ? (double)i / (double)(n - 1) : 0.0));
    s = solve_vecs(L, lu, piv, v, x, hbuf, n, batch, 0);
    for (uint64_t b = 0; s == KILN_OK && b < batch; b++) {
      double t = 2.0 * norm1v(x + b * n, n) / (3.0 * (double)n);
      if (t > est[b] || isnan(t))
        est[b] = t;
    }
  }
  kiln_tensor_release(v);
  free(x);
  free(xi);
  free(hbuf);
  free(j);
  free(done);
  return s;
}

kiln_status
kiln_linalg_rcond(kiln_context *ctx, const kiln_tensor *a, kiln_tensor **out)
{
  static const char op[] = "kiln_linalg_rcond";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(check_mat(op, ctx, a, "a"));
  KILN_TRY(check_square(op, a, "a"));
  NONNULL(op, out, "out");
  size_t nd = a->shape.ndim;
  uint64_t n = (uint64_t)a->shape.dims[nd - 1], batch = lead(&a->shape, nd - 2);
  kiln__shape rs = shape_of(0, a->shape.dims, nd - 2, NULL, 0);
  la L = la_begin(op, ctx, a);
  /* the norms, the estimate and the result are real (f32 for c64, f64 for c128) */
  kiln_dtype rdt = kiln__dtype_real_part(a->dtype);
  size_t rts = kiln_dtype_size(rdt);
  outs o = {0};
  kiln_status s = out_add(&o, op, ctx, rdt, &rs, out);
  if (s == KILN_OK)
    s = check_overlap(op, *out, a, 0, "out", "a");
  kiln_tensor *lu = NULL, *piv = NULL, *info = NULL, *an = NULL;
  double *anorm = calloc(batch ? batch : 1, sizeof *anorm),
         *est = calloc(batch ? batch : 1, sizeof *est);
  int32_t *hinfo = calloc(batch ? batch : 1, sizeof *hinfo);
  void *hbuf = malloc((batch ? batch : 1) * 8);
  if (s == KILN_OK && (!anorm || !est || !hinfo || !hbuf))
    s = kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "no memory for %llu estimates",
                   (unsigned long long)batch);
  if (s == KILN_OK && batch && n) {
    s = kiln__ops_scratch(op, ctx, rdt, batch, &an);
    cl_kernel k;
    if (s == KILN_OK)
      s = kern(&L, "norm1", &k);
    if (s == KILN_OK) {
      size_t local = kiln__launch_pow2_local(ctx, k);
      if (local > 256)
        local = 256;
      kiln__args args = kiln__args_begin(op, k);
      kiln__args_tensor(&args, a);
      kiln__args_u64(&args, n * n);
      kiln__args_u32(&args, (uint32_t)n);
      kiln__args_tensor(&args, an);
      kiln__args_local(&args, local * L.ts);
      s = kiln__args_enqueue_1d(&args, ctx, (size_t)batch * local, local);
    }
    if (s == KILN_OK)
      s = kiln__ops_read(op, ctx, an, 0, hbuf, batch * rts);
    for (uint64_t b = 0; s == KILN_OK && b < batch; b++)
      anorm[b] = rdt == KILN_F32 ? ((float *)hbuf)[b] : ((double *)hbuf)[b];
    if (s == KILN_OK)
      s = lu_scratch(&L, a, 0, &lu, &piv, &info);
    if (s == KILN_OK)
      s = kiln__ops_read(op, ctx, info, 0, hinfo, batch * sizeof *hinfo);
    if (s == KILN_OK)
      s = (kiln__dtype_is_complex(L.dt) ? inv_norm1_est_c : inv_norm1_est)(&L, lu, piv, n, batch,
                                                                           est);
  }
  for (uint64_t b = 0; s == KILN_OK && b < batch; b++) {
    double r;
    if (n == 0)
      r = INFINITY;
    else if (isnan(anorm[b]))
      r = NAN;
    else if (hinfo[b] != 0 || anorm[b] == 0.0 || isinf(est[b]))
      r = 0.0; /* exactly singular: the estimate saw Inf/NaN */
    else if (isnan(est[b]))
      r = NAN;
    else
      r = 1.0 / anorm[b] / est[b];
    if (rdt == KILN_F32)
      ((float *)hbuf)[b] = (float)r;
    else
      ((double *)hbuf)[b] = r;
  }
  if (s == KILN_OK && batch) {
    cl_int err = clEnqueueWriteBuffer(ctx->queue, (*out)->mem, CL_TRUE, (*out)->offset, batch * rts,
                                      hbuf, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      s = kiln__fail_cl(op, err, "clEnqueueWriteBuffer");
  }
  kiln_tensor_release(lu);
  kiln_tensor_release(piv);
  kiln_tensor_release(info);
  kiln_tensor_release(an);
  free(anorm);
  free(est);
  free(hinfo);
  free(hbuf);
  s = outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---------------------------------------------------------------- Cholesky API */

static kiln_status
check_uplo(const char *op, kiln_uplo uplo)
{
  KILN_RETURN_IF(uplo != KILN_UPPER && uplo != KILN_LOWER, KILN_ERR_INVALID_ARGUMENT, op,
                 "uplo is %d, not KILN_UPPER or KILN_LOWER", (int)uplo);
  return KILN_OK;
}

kiln_status
kiln_linalg_cholesky(kiln_context *ctx, const kiln_tensor *a, kiln_uplo uplo, kiln_tensor **out)
{
  static const char op[] = "kiln_linalg_cholesky";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(check_mat(op, ctx, a, "a"));
  KILN_TRY(check_square(op, a, "a"));
  KILN_TRY(check_uplo(op, uplo));
  NONNULL(op, out, "out");
  size_t nd = a->shape.ndim;
  uint64_t n = (uint64_t)a->shape.dims[nd - 1], batch = lead(&a->shape, nd - 2);
  la L = la_begin(op, ctx, a);
  outs o = {0};
  kiln_status s = out_add(&o, op, ctx, a->dtype, &a->shape, out);
  if (s == KILN_OK)
    s = check_overlap(op, *out, a, 1, "out", "a");
  kiln_tensor *info = NULL;
  if (s == KILN_OK)
    s = kiln__ops_copy(op, ctx, a, *out);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, KILN_I32, batch, &info);
  if (s == KILN_OK)
    s = chol_run(&L, tmat(*out), n, batch, uplo == KILN_UPPER, info);
  if (s == KILN_OK)
    s = info_check(&L, info, batch, 1);
  kiln_tensor_release(info);
  s = outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/* X = A^-1 X in place from the factor (batch n x nrhs). */
static kiln_status
chol_solve_run(const la *L, mat f, int upper, uint64_t n, uint64_t nrhs, mat x, uint64_t batch)
{
  uint64_t as = n * n, xs = n * nrhs;
  /* lower: L y = b, L^H x = y; upper: U^H y = b, U x = y */
  KILN_TRY(tri(L, 1, 1, upper, upper ? 2 : 0, 0, n, nrhs, 1.0, f, n, as, x, nrhs, xs, batch));
  return tri(L, 1, 1, upper, upper ? 0 : 2, 0, n, nrhs, 1.0, f, n, as, x, nrhs, xs, batch);
}

kiln_status
kiln_linalg_cholesky_solve(kiln_context *ctx, const kiln_tensor *factor, kiln_uplo uplo,
                           const kiln_tensor *b, kiln_tensor **x)
{
  static const char op[] = "kiln_linalg_cholesky_solve";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(check_mat(op, ctx, factor, "factor"));
  KILN_TRY(check_square(op, factor, "factor"));
  KILN_TRY(check_mat(op, ctx, b, "b"));
  KILN_TRY(check_same_dtype(op, factor, b, "factor", "b"));
  KILN_TRY(check_uplo(op, uplo));
  NONNULL(op, x, "x");
  uint64_t nrhs = 0;
  KILN_TRY(check_rhs(op, factor, b, 0, &nrhs, "factor"));
  size_t nd = factor->shape.ndim;
  uint64_t n = (uint64_t)factor->shape.dims[nd - 1], batch = lead(&factor->shape, nd - 2);
  la L = la_begin(op, ctx, factor);
  outs o = {0};
  kiln_status s = out_add(&o, op, ctx, b->dtype, &b->shape, x);
  if (s == KILN_OK)
    s = check_overlap(op, *x, b, 1, "x", "b");
  if (s == KILN_OK)
    s = check_overlap(op, *x, factor, 0, "x", "factor");
  if (s == KILN_OK)
    s = kiln__ops_copy(op, ctx, b, *x);
  if (s == KILN_OK)
    s = chol_solve_run(&L, tmat(factor), uplo == KILN_UPPER, n, nrhs, tmat(*x), batch);
  s = outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_linalg_cholesky_inverse(kiln_context *ctx, const kiln_tensor *factor, kiln_uplo uplo,
                             kiln_tensor **out)
{
  static const char op[] = "kiln_linalg_cholesky_inverse";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(check_mat(op, ctx, factor, "factor"));
  KILN_TRY(check_square(op, factor, "factor"));
  KILN_TRY(check_uplo(op, uplo));
  NONNULL(op, out, "out");
  size_t nd = factor->shape.ndim;
  uint64_t n = (uint64_t)factor->shape.dims[nd - 1], batch = lead(&factor->shape, nd - 2);
  la L = la_begin(op, ctx, factor);
  outs o = {0};
  kiln_status s = out_add(&o, op, ctx, factor->dtype, &factor->shape, out);
  if (s == KILN_OK)
    s = check_overlap(op, *out, factor, 0, "out", "factor");
  if (s == KILN_OK && n && batch)
    s = eye_fill(&L, tmat(*out), n, batch);
  if (s == KILN_OK)
    s = chol_solve_run(&L, tmat(factor), uplo == KILN_UPPER, n, n, tmat(*out), batch);
  s = outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---------------------------------------------------------------- trsm, trmm */

static kiln_status
tri_api(const char *op, int solve, kiln_context *ctx, kiln_side side, kiln_uplo uplo,
        kiln_trans trans, kiln_diag_kind diag, double alpha, const kiln_tensor *a,
        const kiln_tensor *b, kiln_tensor **x)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(check_mat(op, ctx, a, "a"));
  KILN_TRY(check_square(op, a, "a"));
  KILN_TRY(check_mat(op, ctx, b, "b"));
  KILN_TRY(check_same_dtype(op, a, b, "a", "b"));
  KILN_RETURN_IF(side != KILN_LEFT && side != KILN_RIGHT, KILN_ERR_INVALID_ARGUMENT, op,
                 "side is %d, not KILN_LEFT or KILN_RIGHT", (int)side);
  KILN_TRY(check_uplo(op, uplo));
  KILN_RETURN_IF(trans != KILN_NO_TRANS && trans != KILN_TRANS && trans != KILN_CONJ_TRANS,
                 KILN_ERR_INVALID_ARGUMENT, op, "trans is %d, not a kiln_trans", (int)trans);
  KILN_RETURN_IF(diag != KILN_NON_UNIT && diag != KILN_UNIT, KILN_ERR_INVALID_ARGUMENT, op,
                 "diag is %d, not KILN_NON_UNIT or KILN_UNIT", (int)diag);
  NONNULL(op, x, solve ? "x" : "out");
  KILN_TRY(check_batch(op, a, b, 2, "a", "b"));
  size_t nd = a->shape.ndim, bd = b->shape.ndim;
  uint64_t n = (uint64_t)a->shape.dims[nd - 1], batch = lead(&a->shape, nd - 2);
  uint64_t bm = (uint64_t)b->shape.dims[bd - 2], bn = (uint64_t)b->shape.dims[bd - 1];
  char y[128], z[128];
  KILN_RETURN_IF((side == KILN_LEFT ? bm : bn) != n, KILN_ERR_SHAPE, op,
                 "a %s and b %s: with side %s b needs %llu %s", fmt(&a->shape, y, sizeof y),
                 fmt(&b->shape, z, sizeof z), side == KILN_LEFT ? "left" : "right",
                 (unsigned long long)n, side == KILN_LEFT ? "rows" : "columns");
  la L = la_begin(op, ctx, a);
  outs o = {0};
  kiln_status s = out_add(&o, op, ctx, b->dtype, &b->shape, x);
  if (s == KILN_OK)
    s = check_overlap(op, *x, b, 1, solve ? "x" : "out", "b");
  if (s == KILN_OK)
    s = check_overlap(op, *x, a, 0, solve ? "x" : "out", "a");
  if (s == KILN_OK)
    s = kiln__ops_copy(op, ctx, b, *x);
  if (s == KILN_OK)
    s = tri(&L, solve, side == KILN_LEFT, uplo == KILN_UPPER,
            trans == KILN_CONJ_TRANS ? 2 : trans == KILN_TRANS, diag == KILN_UNIT, bm, bn, alpha,
            tmat(a), n, n * n, tmat(*x), bn, bm * bn, batch);
  s = outs_end(&o, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_trsm(kiln_context *ctx, kiln_side side, kiln_uplo uplo, kiln_trans trans, kiln_diag_kind diag,
          double alpha, const kiln_tensor *a, const kiln_tensor *b, kiln_tensor **x)
{
  return tri_api("kiln_trsm", 1, ctx, side, uplo, trans, diag, alpha, a, b, x);
}

kiln_status
kiln_trmm(kiln_context *ctx, kiln_side side, kiln_uplo uplo, kiln_trans trans, kiln_diag_kind diag,
          double alpha, const kiln_tensor *a, const kiln_tensor *b, kiln_tensor **out)
{
  return tri_api("kiln_trmm", 0, ctx, side, uplo, trans, diag, alpha, a, b, out);
}

/* ---------------------------------------------------------------- family */

static const struct kiln__source linalg_sources[] = {{SRC, KILN__DT_FLOATS | KILN__DT_COMPLEX},
                                                     {NULL, 0}};

const struct kiln__family kiln__linalg_family = {.name = "linalg",
                                                 .sources = linalg_sources,
                                                 .tune = &kiln__linalg_tune,
                                                 .state_create = kiln__lh_state_create,
                                                 .state_destroy = kiln__lh_state_destroy};
