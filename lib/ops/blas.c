/*
 * BLAS family: GEMM (batched, broadcasting), matmul, GEMV, SYRK, dot, axpy,
 * scal. Validation and batch planning live here; the arithmetic runs either
 * on kiln's own kernels (cl_kernels/gemm_small.cl) or on CLBlast
 * (lib/backends/clblast.c), chosen per call by size (use_small: the context
 * option, else the autotuner's gemm route, else the built-in threshold).
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "kiln/blas.h"
#include "kiln/layout.h"
#include "kiln/reduce.h"
#include "kiln_config.h"
#include "ops/blas_route.h"
#include "ops/families.h"
#include "ops/ops_common.h"
#include "ops/tunables.h"
#include "ops/tuned.h"
#include "runtime/runtime.h"
#if KILN_HAVE_CLBLAST
#include "backends/clblast.h"
#endif

/* ---- kiln's own kernels ---- */

/* The family's build options add the tile and dot sizes (blas_route.c), so `kiln cache warm`
 * builds the same variant. */
static kiln_status
get_kernel_of(const char *op, kiln_context *ctx, const char *source, kiln_dtype dt,
              const char *name, cl_kernel *k)
{
  char opts[192];
  kiln__program_options(&ctx->info, source, dt, kiln__blas_family.default_variant(ctx, source, dt),
                        opts, sizeof opts);
  return kiln__kernel_get(op, ctx, source, opts, name, k);
}

static kiln_status
get_kernel(const char *op, kiln_context *ctx, kiln_dtype dt, const char *name, cl_kernel *k)
{
  return get_kernel_of(op, ctx, "gemm_small", dt, name, k);
}

/* One matrix operand as the kernels and CLBlast see it (offset and ld in elements). */
struct mat {
  cl_mem mem;
  uint64_t off, ld;
  int trans; /* 0 as stored, 1 transposed, 2 conjugate-transposed (complex only) */
};

/* A scalar argument in the kernels' compute type T (float for f16/bf16, float2 for c64). */
static void
args_scalar(kiln__args *a, kiln_dtype dt, kiln_complex128 v)
{
  if (dt == KILN_F64) {
    kiln__args_raw(a, sizeof v.re, &v.re);
  } else if (dt == KILN_C128) {
    cl_double2 d = {{v.re, v.im}};
    kiln__args_raw(a, sizeof d, &d);
  } else if (dt == KILN_C64) {
    cl_float2 f = {{(float)v.re, (float)v.im}};
    kiln__args_raw(a, sizeof f, &f);
  } else {
    float f = (float)v.re;
    kiln__args_raw(a, sizeof f, &f);
  }
}

static kiln_complex128
real_scalar(double v)
{
  return (kiln_complex128){v, 0.0};
}

static int
scalar_is_zero(kiln_complex128 v)
{
  return v.re == 0.0 && v.im == 0.0;
}

static uint64_t
elem_off(const kiln_tensor *t)
{
  return t->offset / kiln_dtype_size(t->dtype);
}

/* m*n*k without overflow (saturates). */
static uint64_t
mnk(uint64_t m, uint64_t n, uint64_t k)
{
  uint64_t r;
  if (__builtin_mul_overflow(m, n, &r) || __builtin_mul_overflow(r, k, &r))
    return UINT64_MAX;
  return r;
}

/* Adds (buffer, offset, ld, batch stride[, trans]) arguments. */
static void
mat_args(kiln__args *a, const struct mat *x, uint64_t batch_stride, int with_trans)
{
  kiln__args_mem(a, x->mem);
  kiln__args_u64(a, x->off);
  kiln__args_u64(a, x->ld);
  kiln__args_u64(a, batch_stride);
  if (with_trans)
    kiln__args_u32(a, (uint32_t)x->trans);
}

/*
 * kiln's GEMM over batch matrices (ctx->lock held). k == 0 never touches A
 * or B. dt is the inputs' dtype; cf32: C is f32 (f16/bf16 inputs only).
 * Large f16/bf16 products without a triangle run on gemm_tiled, the rest on
 * gemm_small.
 */
/* The arguments gemm_small, gemm_tiled and gemm_large share, in their order. */
static kiln__args
gemm_args(const char *op, cl_kernel kern, kiln_dtype dt, uint64_t m, uint64_t n, uint64_t k,
          kiln_complex128 alpha, kiln_complex128 beta, const struct mat *a, uint64_t astride,
          const struct mat *b, uint64_t bstride, const struct mat *c, uint64_t cstride)
{
  kiln__args args = kiln__args_begin(op, kern);
  kiln__args_u64(&args, m);
  kiln__args_u64(&args, n);
  kiln__args_u64(&args, k);
  args_scalar(&args, dt, alpha);
  args_scalar(&args, dt, beta);
  mat_args(&args, a, astride, 1);
  mat_args(&args, b, bstride, 1);
  mat_args(&args, c, cstride, 0);
  return args;
}

static kiln_status
small_gemm(const char *op, kiln_context *ctx, kiln_dtype dt, uint64_t m, uint64_t n, uint64_t k,
           kiln_complex128 alpha, kiln_complex128 beta, const struct mat *a, uint64_t astride,
           const struct mat *b, uint64_t bstride, const struct mat *c, uint64_t cstride,
           uint64_t batch, cl_uint tri, int cf32)
{
  int tiled = kiln__dtype_is_half(dt) && tri == 0 && kiln__gemm_tiled_ok(&ctx->info) &&
              mnk(m, n, k) > (uint64_t)KILN__GEMM_SMALL_MNK_DEFAULT;
  cl_kernel kern;
  KILN_TRY(get_kernel(op, ctx, dt, tiled ? "gemm_tiled" : "gemm_small", &kern));
  kiln__args args =
      gemm_args(op, kern, dt, m, n, k, alpha, beta, a, astride, b, bstride, c, cstride);
  if (!tiled)
    kiln__args_u32(&args, tri);
  kiln__args_u32(&args, (uint32_t)cf32);
  if (tiled) {
    size_t w = KILN__GEMM_TILED_WG, bx = KILN__GEMM_TILED_WG * KILN__GEMM_TILED_RB;
    size_t global[3] = {(size_t)((n + bx - 1) / bx * w), (size_t)((m + bx - 1) / bx * w),
                        (size_t)batch};
    size_t local[3] = {w, w, 1};
    return kiln__args_enqueue(&args, ctx, 3, global, local);
  }
  size_t t = kiln__gemm_tile(&ctx->info);
  size_t global[3] = {(size_t)((n + t - 1) / t * t), (size_t)((m + t - 1) / t * t), (size_t)batch};
  size_t local[3] = {t, t, 1};
  return kiln__args_enqueue(&args, ctx, 3, global, local);
}

static atomic_uint_fast64_t cpu_calls; /* kiln__blas_test_cpu_calls */

uint64_t
kiln__blas_test_cpu_calls(void)
{
  return atomic_load(&cpu_calls);
}

/*
 * B^T packed as stored (k x n row-major per matrix) into the scratch tensor packed, by
 * gemm_cpu.cl's gemm_cpu_pack_bt (ctx->lock held); *bp becomes it, *bpstride its batch stride
 * (0 when B's is: one B for every product).
 */
static kiln_status
cpu_pack_bt(const char *op, kiln_context *ctx, kiln_dtype dt, uint64_t n, uint64_t k,
            const struct mat *b, uint64_t bstride, uint64_t batch, kiln_tensor *packed,
            struct mat *bp, uint64_t *bpstride)
{
  uint64_t nb = bstride ? batch : 1;
  cl_kernel kern;
  KILN_TRY(get_kernel_of(op, ctx, "gemm_cpu", dt, "gemm_cpu_pack_bt", &kern));
  kiln__args args = kiln__args_begin(op, kern);
  kiln__args_mem(&args, b->mem);
  kiln__args_u64(&args, b->off);
  kiln__args_u64(&args, b->ld);
  kiln__args_u64(&args, bstride);
  kiln__args_u64(&args, k);
  kiln__args_u64(&args, n);
  kiln__args_tensor(&args, packed);
  size_t global[3] = {(size_t)((n + 7) / 8), (size_t)((k + 63) / 64), (size_t)nb};
  size_t local[3] = {1, 1, 1};
  *bp = (struct mat){packed->mem, elem_off(packed), n, 0};
  *bpstride = bstride ? k * n : 0;
  return kiln__args_enqueue(&args, ctx, 3, global, local);
}

/*
 * The large route's kernel on a CPU device, cl_kernels/gemm_cpu.cl (ctx->lock held): each
 * work-item a block of C in registers, the block kiln__gemm_cpu_block gives. A transposed B
 * is packed as stored first where C has at least KILN__GEMM_CPU_PACK_M rows and
 * KILN__GEMM_CPU_PACK_N columns (or A is transposed too), so that the broadcast form runs
 * it: the dot form reuses each vector of A 6 times, the broadcast form each value 32 times.
 * PoCL, f32 2048^3: A B^T through kiln_gemm, packed, 300 GFLOP/s (bench/gemm_shapes 2048 2048
 * 2048 f32 nt), the dot form alone 226 (bench/pocl_proto/gemm_cpu_blocks.py 2048 f32 --dot
 * 4x6); with 12 x 32 blocks, 4096 x 4096 x 256 ran 286 packed against 128 on the dot form.
 * kiln_cov's [256, 256] products (stats.cov) ran 25-35% slower packed, the dot form's passes
 * over A being few there: hence the columns bound.
 * Without the scratch memory the dot form runs it, or, A transposed too,
 * KILN_ERR_UNSUPPORTED (the caller falls back).
 */
static kiln_status
cpu_gemm(const char *op, kiln_context *ctx, kiln_dtype dt, uint64_t m, uint64_t n, uint64_t k,
         kiln_complex128 alpha, kiln_complex128 beta, const struct mat *a, uint64_t astride,
         const struct mat *b, uint64_t bstride, const struct mat *c, uint64_t cstride,
         uint64_t batch, uint32_t tri)
{
  kiln_tensor *packed = NULL;
  struct mat bp = *b;
  uint64_t bps = bstride;
  kiln_status s = KILN_OK;
  if (b->trans && (a->trans || (m >= KILN__GEMM_CPU_PACK_M && n >= KILN__GEMM_CPU_PACK_N)) &&
      kiln__ops_scratch(op, ctx, dt, (bstride ? batch : 1) * k * n, &packed) == KILN_OK)
    s = cpu_pack_bt(op, ctx, dt, n, k, b, bstride, batch, packed, &bp, &bps);
  cl_kernel kern;
  if (s == KILN_OK && a->trans && bp.trans)
    s = kiln__fail(KILN_ERR_UNSUPPORTED, op, 0,
                   "the CPU GEMM kernel does not take both operands transposed");
  if (s == KILN_OK)
    s = get_kernel_of(op, ctx, "gemm_cpu", dt, "gemm_cpu", &kern);
  if (s == KILN_OK) {
    kiln__args args =
        gemm_args(op, kern, dt, m, n, k, alpha, beta, a, astride, &bp, bps, c, cstride);
    kiln__args_u32(&args, tri);
    uint32_t br, bc;
    kiln__gemm_cpu_block(ctx, dt, bp.trans, &br, &bc);
    atomic_fetch_add(&cpu_calls, 1);
    /* groups of 8 along m, which share their columns of op(B) (gemm_cpu.cl), and one local
     * shape (one PoCL compile) */
    size_t local[3] = {8, 1, 1};
    size_t global[3] = {(size_t)((m + br - 1) / br + 7) / 8 * 8, (size_t)((n + bc - 1) / bc),
                        (size_t)batch};
    s = kiln__args_enqueue(&args, ctx, 3, global, local);
  }
  /* the in-order queue runs the product before any later use of the scratch memory */
  kiln_tensor_release(packed);
  return s;
}

/*
 * kiln's large-product kernel (cl_kernels/gemm_large.cl) over batch matrices, f32/f64, k > 0
 * (ctx->lock held). The parameters come from kiln__gemm_large_params, read before the lock.
 * CPU devices run cpu_gemm instead, unless KILN_DEBUG_GEMM_LARGE is set (its parameters are
 * gemm_large.cl's) or the test hook asks for gemm_large.cl.
 */
static kiln_status
large_gemm(const char *op, kiln_context *ctx, kiln_dtype dt, const struct kiln__gemm_large *p,
           uint64_t m, uint64_t n, uint64_t k, kiln_complex128 alpha, kiln_complex128 beta,
           const struct mat *a, uint64_t astride, const struct mat *b, uint64_t bstride,
           const struct mat *c, uint64_t cstride, uint64_t batch, uint32_t tri)
{
  if (kiln__gemm_cpu_form(ctx))
    return cpu_gemm(op, ctx, dt, m, n, k, alpha, beta, a, astride, b, bstride, c, cstride, batch,
                    tri);
  char opts[256];
  kiln__program_options(&ctx->info, "gemm_large", dt, p, opts, sizeof opts);
  cl_kernel kern;
  kiln_status ks = kiln__kernel_get(op, ctx, "gemm_large", opts, "gemm_large", &kern);
  if (ks != KILN_OK && p->mma) {
    /* The tensor-core form is inline PTX: a driver that refuses it still has the FMA form. */
    struct kiln__gemm_large q = *p;
    q.mma = 0;
    kiln__log(KILN__LOG_WARN, "%s: the large GEMM kernel's mma form did not build; using FMAs", op);
    return large_gemm(op, ctx, dt, &q, m, n, k, alpha, beta, a, astride, b, bstride, c, cstride,
                      batch, tri);
  }
  KILN_TRY(ks);
  /* A set whose registers do not fit its work-group on this device: the caller falls back. */
  size_t kwg = 0;
  cl_int err = clGetKernelWorkGroupInfo(kern, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg,
                                        &kwg, NULL);
  KILN_RETURN_IF(err != CL_SUCCESS || kwg < (size_t)p->wx * p->wy, KILN_ERR_UNSUPPORTED, op,
                 "the large GEMM kernel (%ux%u work-items) runs at most %zu per group here", p->wx,
                 p->wy, kwg);
  kiln__args args =
      gemm_args(op, kern, dt, m, n, k, alpha, beta, a, astride, b, bstride, c, cstride);
  kiln__args_u32(&args, tri);
  const uint64_t mt = (uint64_t)p->wy * p->tm, nt = (uint64_t)p->wx * p->tn;
  size_t global[3] = {(size_t)((n + nt - 1) / nt * p->wx), (size_t)((m + mt - 1) / mt * p->wy),
                      (size_t)batch};
  size_t local[3] = {p->wx, p->wy, 1};
  return kiln__args_enqueue(&args, ctx, 3, global, local);
}

/* sym_fill over batch n x n matrices (ctx->lock held). */
static kiln_status
small_sym_fill(const char *op, kiln_context *ctx, kiln_dtype dt, uint64_t n, const struct mat *c,
               uint64_t cstride, uint64_t batch, cl_uint tri)
{
  cl_kernel kern;
  KILN_TRY(get_kernel(op, ctx, dt, "sym_fill", &kern));
  kiln__args args = kiln__args_begin(op, kern);
  kiln__args_u64(&args, n);
  mat_args(&args, c, cstride, 0);
  kiln__args_u32(&args, tri);
  size_t t = kiln__gemm_tile(&ctx->info);
  size_t global[3] = {(size_t)((n + t - 1) / t * t), (size_t)((n + t - 1) / t * t), (size_t)batch};
  size_t local[3] = {t, t, 1};
  return kiln__args_enqueue(&args, ctx, 3, global, local);
}

/* Routed calls by route (kiln__blas_test_routes): [0] kiln's small kernel, [1] CLBlast, [2]
 * kiln's large kernel. */
static atomic_uint_fast64_t routed[3];

/* The route a caller asks for instead of the usual choice (kiln__matmul_routed). */
#define ROUTE_CHOOSE (-1)

/*
 * The route of a GEMM-shaped call of this size: kiln's small kernel when there is nothing to
 * multiply (k == 0, alpha == 0) or for f16/bf16 inputs, else kiln__blas_route. Call it before
 * taking ctx->lock.
 */
static int
gemm_route(kiln_context *ctx, kiln_dtype dt, uint64_t m, uint64_t n, uint64_t k,
           kiln_complex128 alpha, int route)
{
  /* CLBlast's half routines accumulate in half: f16/bf16 always run on kiln's kernels. */
  if (k == 0 || scalar_is_zero(alpha) || kiln__dtype_is_half(dt))
    return KILN__GEMM_ROUTE_KILN;
  return kiln__blas_route(ctx, dt, mnk(m, n, k), route);
}

/* GEMV and SYRK have no large-kernel form: CLBlast where the route is not kiln's small kernel
 * and the context has it. */
static int
use_small(kiln_context *ctx, kiln_dtype dt, uint64_t m, uint64_t n, uint64_t k,
          kiln_complex128 alpha, int route)
{
  return !kiln__blas_use_clblast(ctx) ||
         gemm_route(ctx, dt, m, n, k, alpha, route) == KILN__GEMM_ROUTE_KILN;
}

static void
count_route(int small)
{
  atomic_fetch_add(&routed[small ? 0 : 1], 1);
}

void
kiln__blas_test_routes(uint64_t out[2])
{
  out[0] = atomic_load(&routed[0]);
  out[1] = atomic_load(&routed[1]);
}

uint64_t
kiln__blas_test_large_calls(void)
{
  return atomic_load(&routed[2]);
}

kiln_status
kiln__gemm_large_views(const char *op, kiln_context *ctx, kiln_dtype dt, int ta, int tb, uint64_t m,
                       uint64_t n, uint64_t k, double alpha, cl_mem a, uint64_t aoff, uint64_t lda,
                       cl_mem b, uint64_t boff, uint64_t ldb, double beta, cl_mem c, uint64_t coff,
                       uint64_t ldc, uint32_t tri, uint64_t batch, uint64_t sa, uint64_t sb,
                       uint64_t sc)
{
  KILN__ASSERT_LOCKED(ctx);
  struct kiln__gemm_large p;
  KILN_TRY(kiln__gemm_large_params(op, ctx, dt, m, n, batch, &p));
  const struct mat am = {a, aoff, lda, ta}, bm = {b, boff, ldb, tb}, cm = {c, coff, ldc, 0};
  atomic_fetch_add(&routed[2], 1);
  return large_gemm(op, ctx, dt, &p, m, n, k, real_scalar(alpha), real_scalar(beta), &am, sa, &bm,
                    sb, &cm, sc, batch, tri);
}

/* ---- validation helpers ---- */

static kiln_status
check_float(const char *op, const kiln_tensor *t, const char *name)
{
  KILN_RETURN_IF(!kiln__dtype_is_floating(t->dtype) && !kiln__dtype_is_complex(t->dtype),
                 KILN_ERR_DTYPE, op,
                 "%s is %s; BLAS routines accept f16, bf16, f32, f64, c64 and c128", name,
                 kiln_dtype_name(t->dtype));
  return KILN_OK;
}

static kiln_status
check_same_dtype(const char *op, const kiln_tensor *a, const kiln_tensor *b, const char *an,
                 const char *bn)
{
  KILN_TRY(check_float(op, a, an));
  KILN_RETURN_IF(a->dtype != b->dtype, KILN_ERR_DTYPE, op,
                 "%s is %s but %s is %s; cast one with kiln_cast", an, kiln_dtype_name(a->dtype),
                 bn, kiln_dtype_name(b->dtype));
  return KILN_OK;
}

static kiln_status
check_trans(const char *op, kiln_trans t, const char *name)
{
  KILN_RETURN_IF(t != KILN_NO_TRANS && t != KILN_TRANS && t != KILN_CONJ_TRANS,
                 KILN_ERR_INVALID_ARGUMENT, op,
                 "%s is %d, not KILN_NO_TRANS, KILN_TRANS or KILN_CONJ_TRANS", name, (int)t);
  return KILN_OK;
}

/* struct mat's trans for a flag: conjugation means nothing for real dtypes (BLAS's 'C'). */
static int
trans_code(kiln_trans t, kiln_dtype dt)
{
  if (t == KILN_CONJ_TRANS)
    return kiln__dtype_is_complex(dt) ? 2 : 1;
  return t == KILN_TRANS;
}

/*
 * GEMM, GEMV, SYRK and dot read their inputs while writing the output, and
 * a temporary would hide a caller's mistake at the cost of a full copy of
 * C: any shared byte (the same bytes too) is refused.
 */
static kiln_status
check_no_overlap(const char *op, const kiln_tensor *out, const kiln_tensor *in, const char *name)
{
  KILN_RETURN_IF(kiln__ops_alias(out, in), KILN_ERR_INVALID_ARGUMENT, op,
                 "the output overlaps input %s; use a separate output tensor", name);
  return KILN_OK;
}

static const char *
fmt(const kiln__shape *s, char *buf, size_t len)
{
  return kiln__shape_format(s, buf, len);
}

/* The batch dimensions of a shape (all but the last two). */
static kiln__shape
batch_of(const kiln__shape *s)
{
  kiln__shape b;
  memset(&b, 0, sizeof b);
  b.ndim = s->ndim - 2;
  for (size_t i = 0; i < b.ndim; i++)
    b.dims[i] = s->dims[i];
  return b;
}

/* ---- batched GEMM over shape views ---- */

/*
 * A batch of GEMMs split into an outer loop and an inner strided batch.
 * Batch dimensions of size 1 are dropped and neighbours merged wherever the
 * strides of all three operands stay linear, so the common cases (one
 * operand repeated, or every operand a contiguous batch) become a single
 * strided call.
 */
struct batch_plan {
  uint32_t ndim;
  uint64_t dims[KILN_MAX_DIMS];
  uint64_t stride[3][KILN_MAX_DIMS]; /* elements, per operand a, b, c */
};

static void
plan_batches(const kiln__shape *ab, const kiln__shape *bb, const kiln__shape *cb,
             const uint64_t matsize[3], struct batch_plan *p)
{
  int64_t st[3][KILN_MAX_DIMS];
  const kiln__shape *ops[3] = {ab, bb, cb};
  for (int o = 0; o < 3; o++)
    kiln__shape_broadcast_strides(ops[o], cb, st[o]);
  memset(p, 0, sizeof *p);
  for (size_t d = 0; d < cb->ndim; d++) {
    uint64_t len = (uint64_t)cb->dims[d];
    if (len == 1)
      continue;
    int merge = p->ndim > 0;
    for (int o = 0; o < 3 && merge; o++)
      merge = p->stride[o][p->ndim - 1] == (uint64_t)st[o][d] * matsize[o] * len;
    if (merge) {
      p->dims[p->ndim - 1] *= len;
      for (int o = 0; o < 3; o++)
        p->stride[o][p->ndim - 1] = (uint64_t)st[o][d] * matsize[o];
    } else {
      p->dims[p->ndim] = len;
      for (int o = 0; o < 3; o++)
        p->stride[o][p->ndim] = (uint64_t)st[o][d] * matsize[o];
      p->ndim++;
    }
  }
}

struct gemm_args {
  kiln_dtype dt; /* of a and b */
  uint64_t m, n, k;
  kiln_complex128 alpha, beta;
  struct mat a, b, c;
  int route;                     /* gemm_route(), decided before ctx->lock was taken */
  int cf32;                      /* f16/bf16 inputs, f32 output */
  struct kiln__gemm_large large; /* route KILN__GEMM_ROUTE_LARGE: its parameters */
};

#if KILN_HAVE_CLBLAST
/*
 * CLBlast's CGEMM runs at ~0.8 of its SGEMM on the H200 (issue 16), so a
 * complex C = alpha A op(B) + beta C with real beta runs as one real GEMM on
 * the interleaved data: A viewed as a real m x 2k matrix (no copy), times
 * B2, the real 2k x 2n matrix that cgemm_b2 builds from alpha op(B), plus
 * beta C with C viewed as real m x 2n. A transposed, or a complex beta,
 * keeps CGEMM/ZGEMM. B2 costs 4kn reals of scratch per distinct B matrix.
 */
static int
realify_ok(const struct gemm_args *g, uint64_t bstride, uint64_t batch)
{
  uint64_t r;
  return kiln__dtype_is_complex(g->dt) && g->a.trans == 0 && g->beta.im == 0.0 &&
         !__builtin_mul_overflow(4 * g->k, g->n, &r) &&
         !__builtin_mul_overflow(r, bstride ? batch : 1, &r);
}

static kiln_status
realified_gemm(const char *op, kiln_context *ctx, const struct gemm_args *g, uint64_t astride,
               uint64_t bstride, uint64_t cstride, uint64_t batch)
{
  uint64_t nb = bstride ? batch : 1, b2n = 2 * g->k * g->n; /* complex elements per B2 */
  cl_kernel kern;
  KILN_TRY(get_kernel(op, ctx, g->dt, "cgemm_b2", &kern));
  kiln_tensor *b2 = NULL;
  KILN_TRY(kiln__ops_scratch(op, ctx, g->dt, nb * b2n, &b2));
  kiln__args args = kiln__args_begin(op, kern);
  kiln__args_u64(&args, g->k);
  kiln__args_u64(&args, g->n);
  args_scalar(&args, g->dt, g->alpha);
  mat_args(&args, &g->b, bstride, 1);
  kiln__args_tensor(&args, b2);
  size_t t = kiln__gemm_tile(&ctx->info);
  size_t global[3] = {(size_t)((g->n + t - 1) / t * t), (size_t)((g->k + t - 1) / t * t),
                      (size_t)nb};
  size_t local[3] = {t, t, 1};
  kiln_status s = kiln__args_enqueue(&args, ctx, 3, global, local);
  if (s == KILN_OK) {
    s = kiln__clblast_gemm(op, ctx, kiln__dtype_real_part(g->dt), 0, 0, g->m, 2 * g->n, 2 * g->k,
                           real_scalar(1.0), g->a.mem, 2 * g->a.off, 2 * g->a.ld, 2 * astride,
                           b2->mem, 2 * elem_off(b2), 2 * g->n, bstride ? 2 * b2n : 0, g->beta,
                           g->c.mem, 2 * g->c.off, 2 * g->c.ld, 2 * cstride, batch);
  }
  kiln_tensor_release(b2);
  return s;
}
#endif

#if KILN_HAVE_CLBLAST
/*
 * One-matrix f32/f64 GEMMs on CLBlast get the context's temporary buffer (kiln__blas_gemm_temp)
 * instead of creating and releasing theirs per call: on the H200 each release waited about
 * 1.2 ms on the host (bench/cltrace.c), and SGEMM 2048^3 went from 0.517 to 0.445 ms.
 * KILN_DEBUG_GEMM_TEMP=0 turns it off.
 */
static int
gemm_temp_on(void)
{
  const char *e = kiln__env(KILN__ENV_DEBUG_GEMM_TEMP);
  return !e || strcmp(e, "0") != 0;
}
#endif

/* One strided batch of GEMMs, routed by size (ctx->lock held). */
static kiln_status
gemm_strided(const char *op, kiln_context *ctx, const struct gemm_args *g, uint64_t astride,
             uint64_t bstride, uint64_t cstride, uint64_t batch)
{
  int route = g->route;
  if (route == KILN__GEMM_ROUTE_LARGE) {
    atomic_fetch_add(&routed[2], 1);
    kiln_status s = large_gemm(op, ctx, g->dt, &g->large, g->m, g->n, g->k, g->alpha, g->beta,
                               &g->a, astride, &g->b, bstride, &g->c, cstride, batch, 0);
    if (s != KILN_ERR_UNSUPPORTED)
      return s;
    route = kiln__blas_use_clblast(ctx) ? KILN__GEMM_ROUTE_CLBLAST : KILN__GEMM_ROUTE_KILN;
  }
  count_route(route == KILN__GEMM_ROUTE_KILN);
  if (route == KILN__GEMM_ROUTE_KILN) {
    /* alpha == 0 is BLAS's "A and B are not referenced": run it as k == 0. */
    uint64_t k = scalar_is_zero(g->alpha) ? 0 : g->k;
    return small_gemm(op, ctx, g->dt, g->m, g->n, k, g->alpha, g->beta, &g->a, astride, &g->b,
                      bstride, &g->c, cstride, batch, 0, g->cf32);
  }
#if KILN_HAVE_CLBLAST
  if (realify_ok(g, bstride, batch))
    return realified_gemm(op, ctx, g, astride, bstride, cstride, batch);
  if (batch == 1 && kiln__dtype_is_float(g->dt) && gemm_temp_on()) {
    /* CLBlast's size query builds its parameter database on every call: asked again only
     * when the arguments change. */
    struct kiln__gemm_temp_key key = {{(size_t)g->dt, (size_t)g->a.trans, (size_t)g->b.trans, g->m,
                                       g->n, g->k, g->a.off, g->a.ld, g->b.off, g->b.ld, g->c.off,
                                       g->c.ld}};
    size_t bytes = 0;
    cl_mem temp = NULL;
    if (kiln__blas_temp_lookup(ctx, &key, &bytes) ||
        kiln__clblast_gemm_temp_size(op, ctx, g->dt, g->a.trans, g->b.trans, g->m, g->n, g->k,
                                     g->a.off, g->a.ld, g->b.off, g->b.ld, g->c.off, g->c.ld,
                                     &bytes) == KILN_OK) {
      kiln__blas_temp_store(ctx, &key, bytes);
      /* A buffer of 0 bytes cannot be made: 1 element at least. */
      temp = kiln__blas_gemm_temp(ctx, bytes ? bytes : 8);
    }
    if (temp && kiln__clblast_gemm_with_temp(op, ctx, g->dt, g->a.trans, g->b.trans, g->m, g->n,
                                             g->k, g->alpha.re, g->a.mem, g->a.off, g->a.ld,
                                             g->b.mem, g->b.off, g->b.ld, g->beta.re, g->c.mem,
                                             g->c.off, g->c.ld, temp) == KILN_OK)
      return KILN_OK;
  }
  return kiln__clblast_gemm(op, ctx, g->dt, g->a.trans, g->b.trans, g->m, g->n, g->k, g->alpha,
                            g->a.mem, g->a.off, g->a.ld, astride, g->b.mem, g->b.off, g->b.ld,
                            bstride, g->beta, g->c.mem, g->c.off, g->c.ld, cstride, batch);
#else
  (void)astride;
  (void)bstride;
  (void)cstride;
  (void)batch;
  return kiln__fail(KILN_ERR_INTERNAL, op, 0, "CLBlast route taken in a build without CLBlast");
#endif
}

/* Runs the whole batch plan: odometer over the outer dimensions, strided calls inside. */
static kiln_status
gemm_plan_run(const char *op, kiln_context *ctx, const struct gemm_args *g,
              const struct batch_plan *p)
{
  if (p->ndim == 0)
    return gemm_strided(op, ctx, g, 0, 0, 0, 1);
  uint32_t in = p->ndim - 1;
  uint64_t idx[KILN_MAX_DIMS] = {0};
  for (;;) {
    struct gemm_args h = *g;
    for (uint32_t d = 0; d < in; d++) {
      h.a.off += idx[d] * p->stride[0][d];
      h.b.off += idx[d] * p->stride[1][d];
      h.c.off += idx[d] * p->stride[2][d];
    }
    KILN_TRY(gemm_strided(op, ctx, &h, p->stride[0][in], p->stride[1][in], p->stride[2][in],
                          p->dims[in]));
    int d = (int)in - 1;
    while (d >= 0 && ++idx[d] == p->dims[d])
      idx[d--] = 0;
    if (d < 0)
      return KILN_OK;
  }
}

/*
 * The dtype of a GEMM's result: a given output's when it is f32 and the
 * inputs are f16/bf16 (f32 accumulation kept), else the inputs' (a given
 * output of another dtype is then refused by kiln__output_prepare).
 */
static kiln_dtype
gemm_out_dtype(kiln_dtype in, kiln_tensor **out)
{
  if (kiln__dtype_is_half(in) && *out && (*out)->magic == KILN__TENSOR_MAGIC &&
      (*out)->dtype == KILN_F32)
    return KILN_F32;
  return in;
}

/*
 * GEMM on shape views of a and b (matmul inserts unit dimensions). The
 * result's own shape is res_shape when given (same element count and layout
 * as [batch..., m, n]), else [batch..., m, n]. ta, tb: struct mat's trans.
 */
static kiln_status
gemm_views(const char *op, kiln_context *ctx, int ta, int tb, kiln_complex128 alpha,
           const kiln_tensor *a, const kiln__shape *as, const kiln_tensor *b, const kiln__shape *bs,
           kiln_complex128 beta, kiln_tensor **c, const kiln__shape *res_shape, int route)
{
  char s1[160], s2[160];
  KILN_RETURN_IF(as->ndim < 2 || bs->ndim < 2, KILN_ERR_SHAPE, op,
                 "operands need at least 2 dimensions, got a %s and b %s",
                 fmt(&a->shape, s1, sizeof s1), fmt(&b->shape, s2, sizeof s2));
  uint64_t ar = (uint64_t)as->dims[as->ndim - 2], ac = (uint64_t)as->dims[as->ndim - 1];
  uint64_t br = (uint64_t)bs->dims[bs->ndim - 2], bc = (uint64_t)bs->dims[bs->ndim - 1];
  uint64_t m = ta ? ac : ar, k = ta ? ar : ac, kb = tb ? bc : br, n = tb ? br : bc;
  if (k != kb)
    return kiln__fail(KILN_ERR_SHAPE, op, 0,
                      "inner dimensions differ: op(a) is %llux%llu (a %s%s), op(b) is %llux%llu "
                      "(b %s%s)",
                      (unsigned long long)m, (unsigned long long)k, fmt(as, s1, sizeof s1),
                      ta ? ", transposed" : "", (unsigned long long)kb, (unsigned long long)n,
                      fmt(bs, s2, sizeof s2), tb ? ", transposed" : "");
  kiln__shape ab = batch_of(as), bb = batch_of(bs), cb;
  KILN_TRY(kiln__shape_broadcast(op, &ab, &bb, &cb));
  kiln__shape view = cb;
  view.dims[view.ndim++] = (int64_t)m;
  view.dims[view.ndim++] = (int64_t)n;
  const kiln__shape *shape = res_shape ? res_shape : &view;
  int made;
  kiln_dtype out_dt = gemm_out_dtype(a->dtype, c);
  KILN_TRY(kiln__output_prepare(op, ctx, out_dt, shape, c, &made));
  kiln_tensor *ct = *c;
  kiln_status s = check_no_overlap(op, ct, a, "a");
  if (s == KILN_OK)
    s = check_no_overlap(op, ct, b, "b");
  if (s != KILN_OK || !ct->numel) {
    if (s != KILN_OK)
      kiln__output_discard(c, made);
    return s;
  }
  struct gemm_args g = {a->dtype,
                        m,
                        n,
                        k,
                        alpha,
                        made ? real_scalar(0.0) : beta,
                        {a->mem, elem_off(a), ac, ta},
                        {b->mem, elem_off(b), bc, tb},
                        {ct->mem, elem_off(ct), n, 0},
                        gemm_route(ctx, a->dtype, m, n, k, alpha, route),
                        out_dt != a->dtype,
                        {0}};
  uint64_t matsize[3] = {ar * ac, br * bc, m * n};
  struct batch_plan plan;
  plan_batches(&ab, &bb, &cb, matsize, &plan);
  /* Complex products may run as one real product (the CGEMM route): its precision's set. */
  if (g.route == KILN__GEMM_ROUTE_CLBLAST)
    s = kiln__blas_xgemm_prepare_mnk(op, ctx, kiln__dtype_real_part(a->dtype), mnk(m, n, k));
  else if (g.route == KILN__GEMM_ROUTE_LARGE)
    s = kiln__gemm_large_params(op, ctx, a->dtype, m, n, ct->numel / (m * n), &g.large);
  if (s == KILN_OK) {
    kiln__ctx_lock(ctx);
    s = gemm_plan_run(op, ctx, &g, &plan);
    kiln__ctx_unlock(ctx);
  }
  if (s != KILN_OK)
    kiln__output_discard(c, made);
  return s;
}

static kiln_status
check_ctx_out(const char *op, kiln_context *ctx, const void *out)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  return KILN_OK;
}

static kiln_status
gemm_entry(const char *op, kiln_context *ctx, kiln_trans trans_a, kiln_trans trans_b,
           kiln_complex128 alpha, const kiln_tensor *a, const kiln_tensor *b, kiln_complex128 beta,
           kiln_tensor **c)
{
  KILN_TRY(check_ctx_out(op, ctx, c));
  KILN_TRY(check_trans(op, trans_a, "trans_a"));
  KILN_TRY(check_trans(op, trans_b, "trans_b"));
  KILN_TRY(kiln__tensor_check(op, a, ctx));
  KILN_TRY(kiln__tensor_check(op, b, ctx));
  KILN_TRY(check_same_dtype(op, a, b, "a", "b"));
  return gemm_views(op, ctx, trans_code(trans_a, a->dtype), trans_code(trans_b, b->dtype), alpha, a,
                    &a->shape, b, &b->shape, beta, c, NULL, ROUTE_CHOOSE);
}

kiln_status
kiln_gemm(kiln_context *ctx, kiln_trans trans_a, kiln_trans trans_b, double alpha,
          const kiln_tensor *a, const kiln_tensor *b, double beta, kiln_tensor **c)
{
  return gemm_entry("kiln_gemm", ctx, trans_a, trans_b, real_scalar(alpha), a, b, real_scalar(beta),
                    c);
}

kiln_status
kiln_gemm_complex(kiln_context *ctx, kiln_trans trans_a, kiln_trans trans_b, kiln_complex128 alpha,
                  const kiln_tensor *a, const kiln_tensor *b, kiln_complex128 beta, kiln_tensor **c)
{
  static const char op[] = "kiln_gemm_complex";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(kiln__tensor_check(op, a, ctx));
  KILN_RETURN_IF(!kiln__dtype_is_complex(a->dtype), KILN_ERR_DTYPE, op,
                 "a is %s; kiln_gemm_complex takes c64 and c128 (kiln_gemm takes real dtypes)",
                 kiln_dtype_name(a->dtype));
  return gemm_entry(op, ctx, trans_a, trans_b, alpha, a, b, beta, c);
}

kiln_status
kiln_matmul(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b, kiln_tensor **out)
{
  static const char op[] = "kiln_matmul";
  KILN_TRY(check_ctx_out(op, ctx, out));
  KILN_TRY(kiln__tensor_check(op, a, ctx));
  KILN_TRY(kiln__tensor_check(op, b, ctx));
  KILN_TRY(check_same_dtype(op, a, b, "a", "b"));
  char s1[160], s2[160];
  KILN_RETURN_IF(a->shape.ndim == 0 || b->shape.ndim == 0, KILN_ERR_SHAPE, op,
                 "matmul needs inputs of at least 1 dimension, got a %s and b %s",
                 fmt(&a->shape, s1, sizeof s1), fmt(&b->shape, s2, sizeof s2));
  /* NumPy: a 1-D a is a row [1, k], a 1-D b a column [k, 1]; those unit dims leave the result. */
  kiln__shape as = a->shape, bs = b->shape;
  int a_vec = as.ndim == 1, b_vec = bs.ndim == 1;
  if (a_vec) {
    as.dims[1] = as.dims[0];
    as.dims[0] = 1;
    as.ndim = 2;
  }
  if (b_vec) {
    bs.dims[1] = 1;
    bs.ndim = 2;
  }
  if (as.dims[as.ndim - 1] != bs.dims[bs.ndim - 2])
    return kiln__fail(KILN_ERR_SHAPE, op, 0,
                      "a %s and b %s: a's last dimension (%lld) differs from b's %s (%lld)",
                      fmt(&a->shape, s1, sizeof s1), fmt(&b->shape, s2, sizeof s2),
                      (long long)as.dims[as.ndim - 1], b_vec ? "only dimension" : "second-to-last",
                      (long long)bs.dims[bs.ndim - 2]);
  kiln__shape ab = batch_of(&as), bb = batch_of(&bs), res;
  KILN_TRY(kiln__shape_broadcast(op, &ab, &bb, &res));
  if (!a_vec)
    res.dims[res.ndim++] = as.dims[as.ndim - 2];
  if (!b_vec)
    res.dims[res.ndim++] = bs.dims[bs.ndim - 1];
  return gemm_views(op, ctx, 0, 0, real_scalar(1.0), a, &as, b, &bs, real_scalar(0.0), out, &res,
                    ROUTE_CHOOSE);
}

kiln_status
kiln__matmul_routed(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b, int route,
                    kiln_tensor **out)
{
  static const char op[] = "kiln_matmul";
  KILN_TRY(check_ctx_out(op, ctx, out));
  KILN_TRY(kiln__tensor_check(op, a, ctx));
  KILN_TRY(kiln__tensor_check(op, b, ctx));
  KILN_TRY(check_same_dtype(op, a, b, "a", "b"));
  KILN_RETURN_IF(route != KILN__GEMM_ROUTE_RULE && route != KILN__GEMM_ROUTE_KILN &&
                     route != KILN__GEMM_ROUTE_CLBLAST && route != KILN__GEMM_ROUTE_LARGE,
                 KILN_ERR_INVALID_ARGUMENT, op, "route %d is not a kiln__gemm_route", route);
  KILN_RETURN_IF(route == KILN__GEMM_ROUTE_CLBLAST && !kiln__blas_use_clblast(ctx),
                 KILN_ERR_UNSUPPORTED, op, "the CLBlast route on a context without CLBlast");
  char s1[160], s2[160];
  KILN_RETURN_IF(a->shape.ndim != 2 || b->shape.ndim != 2, KILN_ERR_SHAPE, op,
                 "a routed matmul takes matrices, got a %s and b %s", fmt(&a->shape, s1, sizeof s1),
                 fmt(&b->shape, s2, sizeof s2));
  return gemm_views(op, ctx, 0, 0, real_scalar(1.0), a, &a->shape, b, &b->shape, real_scalar(0.0),
                    out, NULL, route);
}

kiln_status
kiln_gemv(kiln_context *ctx, kiln_trans trans, double alpha, const kiln_tensor *a,
          const kiln_tensor *x, double beta, kiln_tensor **y)
{
  static const char op[] = "kiln_gemv";
  KILN_TRY(check_ctx_out(op, ctx, y));
  KILN_TRY(check_trans(op, trans, "trans"));
  KILN_TRY(kiln__tensor_check(op, a, ctx));
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_TRY(check_same_dtype(op, a, x, "a", "x"));
  char s1[160], s2[160];
  KILN_RETURN_IF(a->shape.ndim != 2 || x->shape.ndim != 1, KILN_ERR_SHAPE, op,
                 "a must be 2-D and x 1-D, got a %s and x %s", fmt(&a->shape, s1, sizeof s1),
                 fmt(&x->shape, s2, sizeof s2));
  int ta = trans_code(trans, a->dtype);
  uint64_t ar = (uint64_t)a->shape.dims[0], ac = (uint64_t)a->shape.dims[1];
  uint64_t rows = ta ? ac : ar, cols = ta ? ar : ac;
  if ((uint64_t)x->shape.dims[0] != cols)
    return kiln__fail(KILN_ERR_SHAPE, op, 0, "op(a) is %llux%llu (a %s%s) but x has length %lld",
                      (unsigned long long)rows, (unsigned long long)cols,
                      fmt(&a->shape, s1, sizeof s1), ta ? ", transposed" : "",
                      (long long)x->shape.dims[0]);
  kiln__shape ys = {1, {(int64_t)rows}};
  int made;
  KILN_TRY(kiln__output_prepare(op, ctx, a->dtype, &ys, y, &made));
  kiln_tensor *yt = *y;
  kiln_status s = check_no_overlap(op, yt, a, "a");
  if (s == KILN_OK)
    s = check_no_overlap(op, yt, x, "x");
  if (s != KILN_OK || !rows) {
    if (s != KILN_OK)
      kiln__output_discard(y, made);
    return s;
  }
  double b = made ? 0.0 : beta;
  struct mat am = {a->mem, elem_off(a), ac, ta}, xm = {x->mem, elem_off(x), 1, 0};
  struct mat ym = {yt->mem, elem_off(yt), 1, 0};
  int small = use_small(ctx, a->dtype, rows, 1, cols, real_scalar(alpha), ROUTE_CHOOSE);
  count_route(small);
  kiln__ctx_lock(ctx);
  if (small)
    s = small_gemm(op, ctx, a->dtype, rows, 1, alpha == 0.0 ? 0 : cols, real_scalar(alpha),
                   real_scalar(b), &am, 0, &xm, 0, &ym, 0, 1, 0, 0);
  else {
#if KILN_HAVE_CLBLAST
    /* CLBlast's GEMV reads y even for beta == 0 (a NaN there would survive): clear it first. */
    if (b == 0.0) {
      unsigned char zero[16] = {0};
      cl_int err = clEnqueueFillBuffer(ctx->queue, yt->mem, zero, kiln_dtype_size(yt->dtype),
                                       yt->offset, yt->nbytes, 0, NULL, NULL);
      if (err != CL_SUCCESS)
        s = kiln__fail_cl(op, err, "clEnqueueFillBuffer");
    }
    if (s == KILN_OK)
      s = kiln__clblast_gemv(op, ctx, a->dtype, ta, ar, ac, real_scalar(alpha), am.mem, am.off, ac,
                             xm.mem, xm.off, real_scalar(b), ym.mem, ym.off);
#else
    s = kiln__fail(KILN_ERR_INTERNAL, op, 0, "CLBlast route taken in a build without CLBlast");
#endif
  }
  kiln__ctx_unlock(ctx);
  if (s != KILN_OK)
    kiln__output_discard(y, made);
  return s;
}

#if KILN_HAVE_CLBLAST
/*
 * CLBlast's SYRK spreads the work over tiles of C only, so a small C with a long k (the
 * covariance of a few hundred variables over 10^5 or more observations) runs on a handful of
 * work-groups: about 1 TFLOP/s on the H200 for n = 256, k = 2^18, against 33 for a GEMM of the
 * same work. Splitting k into chunks, one strided batched GEMM for the chunks' products and a
 * column sum over them fills the device. Worth it from k >= 16 n; n above 1024 already has
 * enough tiles. At most 64 chunks keeps the scratch (chunks x n x n) bounded.
 */
static uint64_t
syrk_splits(uint64_t n, uint64_t k)
{
  if (n > 1024 || k < 16 * n)
    return 1;
  uint64_t s = k / (4 * n > 1024 ? 4 * n : 1024);
  return s > 64 ? 64 : s;
}

/* C (contiguous, n x n, overwritten: beta is 0) = alpha op(A) op(A)^T by k-chunks. Both
 * triangles are written: only for fill_other, where that is the result. ctx->lock held. */
static kiln_status
syrk_split_k(const char *op, kiln_context *ctx, kiln_dtype dt, int ta, uint64_t n, uint64_t k,
             uint64_t splits, kiln_complex128 alpha, const struct mat *am, kiln_tensor *c)
{
  uint64_t kc = k / splits, rest = k - kc * splits, slots = splits + (rest ? 1 : 0);
  /* Chunk j of op(A) (n x kc): columns j*kc.. of A (n x k), or rows j*kc.. of A (k x n). */
  uint64_t chunk = ta ? kc * am->ld : kc;
  kiln_tensor *part = NULL, *view = NULL;
  kiln_status s = kiln__ops_scratch(op, ctx, dt, slots * n * n, &part);
  if (s == KILN_OK)
    s = kiln__clblast_gemm(op, ctx, dt, ta, !ta, n, n, kc, alpha, am->mem, am->off, am->ld, chunk,
                           am->mem, am->off, am->ld, chunk, real_scalar(0.0), part->mem, 0, n,
                           n * n, splits);
  if (s == KILN_OK && rest)
    s = kiln__clblast_gemm(op, ctx, dt, ta, !ta, n, n, rest, alpha, am->mem,
                           am->off + splits * chunk, am->ld, 0, am->mem, am->off + splits * chunk,
                           am->ld, 0, real_scalar(0.0), part->mem, splits * n * n, n, 0, 1);
  int64_t dims[KILN_MAX_DIMS + 1];
  dims[0] = (int64_t)slots;
  for (size_t i = 0; i < c->shape.ndim; i++)
    dims[i + 1] = c->shape.dims[i];
  if (s == KILN_OK)
    s = kiln_reshape(ctx, part, c->shape.ndim + 1, dims, &view);
  const int64_t axis0 = 0;
  if (s == KILN_OK)
    s = kiln_reduce(ctx, KILN_REDUCE_SUM, view, &axis0, 1, 0, NULL, &c);
  kiln_tensor_release(view);
  kiln_tensor_release(part);
  return s;
}
#endif

kiln_status
kiln_syrk(kiln_context *ctx, kiln_uplo uplo, kiln_trans trans, double alpha, const kiln_tensor *a,
          double beta, kiln_tensor **c, int fill_other)
{
  static const char op[] = "kiln_syrk";
  KILN_TRY(check_ctx_out(op, ctx, c));
  KILN_TRY(check_trans(op, trans, "trans"));
  KILN_RETURN_IF(uplo != KILN_UPPER && uplo != KILN_LOWER, KILN_ERR_INVALID_ARGUMENT, op,
                 "uplo is %d, not KILN_UPPER or KILN_LOWER", (int)uplo);
  KILN_TRY(kiln__tensor_check(op, a, ctx));
  KILN_TRY(check_float(op, a, "a"));
  KILN_RETURN_IF(trans == KILN_CONJ_TRANS && kiln__dtype_is_complex(a->dtype),
                 KILN_ERR_INVALID_ARGUMENT, op,
                 "kiln_syrk is the symmetric update A A^T; KILN_CONJ_TRANS on %s would be the "
                 "Hermitian one, which kiln does not offer",
                 kiln_dtype_name(a->dtype));
  char s1[160];
  KILN_RETURN_IF(a->shape.ndim < 2, KILN_ERR_SHAPE, op, "a needs at least 2 dimensions, got %s",
                 fmt(&a->shape, s1, sizeof s1));
  int ta = trans != KILN_NO_TRANS;
  size_t nd = a->shape.ndim;
  uint64_t ar = (uint64_t)a->shape.dims[nd - 2], ac = (uint64_t)a->shape.dims[nd - 1];
  uint64_t n = ta ? ac : ar, k = ta ? ar : ac;
  kiln__shape cs = a->shape;
  cs.dims[nd - 2] = cs.dims[nd - 1] = (int64_t)n;
  int made = 0;
  if (!*c) {
    /* A fresh C starts at zero, so the triangle SYRK does not write is defined. */
    KILN_TRY(kiln_tensor_zeros(ctx, a->dtype, cs.ndim, cs.dims, c));
    made = 1;
  } else {
    KILN_TRY(kiln__output_prepare(op, ctx, a->dtype, &cs, c, &made));
  }
  kiln_tensor *ct = *c;
  kiln_status s = check_no_overlap(op, ct, a, "a");
  if (s != KILN_OK || !ct->numel) {
    if (s != KILN_OK)
      kiln__output_discard(c, made);
    return s;
  }
  double b = made ? 0.0 : beta;
  uint64_t batch = ct->numel / (n * n);
  cl_uint tri = uplo == KILN_UPPER ? 1 : 2;
  /* op(A) op(A)^T: the kernel's B is A itself with the opposite transpose. */
  struct mat am = {a->mem, elem_off(a), ac, ta}, bm = {a->mem, elem_off(a), ac, !ta};
  struct mat cm = {ct->mem, elem_off(ct), n, 0};
  uint64_t astride = ar * ac, cstride = n * n;
  int small = use_small(ctx, a->dtype, n, n, k, real_scalar(alpha), ROUTE_CHOOSE);
  /* CPU devices: the triangle on kiln's CPU GEMM kernel, whose tri counts the other way */
  int cpu = !small && kiln__gemm_cpu_form(ctx) && kiln__gemm_large_ok(ctx, a->dtype);
  count_route(small);
  if (!small && !cpu)
    s = kiln__blas_xgemm_prepare_mnk(op, ctx, a->dtype, mnk(n, n, k));
  kiln__ctx_lock(ctx);
  if (small) {
    s = small_gemm(op, ctx, a->dtype, n, n, alpha == 0.0 ? 0 : k, real_scalar(alpha),
                   real_scalar(b), &am, astride, &bm, astride, &cm, cstride, batch, tri, 0);
  } else if (cpu) {
    s = cpu_gemm(op, ctx, a->dtype, n, n, k, real_scalar(alpha), real_scalar(b), &am, astride, &bm,
                 astride, &cm, cstride, batch, uplo == KILN_UPPER ? 2u : 1u);
  } else {
#if KILN_HAVE_CLBLAST
    uint64_t splits = batch == 1 && b == 0.0 && fill_other ? syrk_splits(n, k) : 1;
    if (splits > 1)
      s = syrk_split_k(op, ctx, a->dtype, ta, n, k, splits, real_scalar(alpha), &am, ct);
    /* CLBlast has no batched SYRK: one call per matrix. */
    for (uint64_t i = 0; splits == 1 && i < batch && s == KILN_OK; i++)
      s = kiln__clblast_syrk(op, ctx, a->dtype, uplo == KILN_UPPER, ta, n, k, real_scalar(alpha),
                             am.mem, am.off + i * astride, ac, real_scalar(b), cm.mem,
                             cm.off + i * cstride, n);
#else
    s = kiln__fail(KILN_ERR_INTERNAL, op, 0, "CLBlast route taken in a build without CLBlast");
#endif
  }
  if (s == KILN_OK && fill_other)
    s = small_sym_fill(op, ctx, a->dtype, n, &cm, cstride, batch, tri);
  kiln__ctx_unlock(ctx);
  if (s != KILN_OK)
    kiln__output_discard(c, made);
  return s;
}

/* ---- level 1 ---- */

/* f32/f64 with CLBlast; f16/bf16 and complex run on kiln's kernels (a dot product of complex
 * vectors is unconjugated, as numpy.dot). */
static int
use_clblast_level1(const kiln_context *ctx, kiln_dtype dt)
{
  return kiln__blas_use_clblast(ctx) && kiln__dtype_is_float(dt);
}

static kiln_status
launch_level1(const char *op, kiln_context *ctx, kiln_dtype dt, const char *name, uint64_t n,
              double alpha, const kiln_tensor *x, const kiln_tensor *y)
{
  cl_kernel k;
  KILN_TRY(get_kernel(op, ctx, dt, name, &k));
  kiln__args args = kiln__args_begin(op, k);
  kiln__args_u64(&args, n);
  args_scalar(&args, dt, real_scalar(alpha));
  kiln__args_tensor(&args, x);
  if (y)
    kiln__args_tensor(&args, y);
  return kiln__args_launch_1d(&args, ctx, n, 0);
}

kiln_status
kiln_dot(kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *y, kiln_tensor **out)
{
  static const char op[] = "kiln_dot";
  KILN_TRY(check_ctx_out(op, ctx, out));
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_TRY(kiln__tensor_check(op, y, ctx));
  KILN_TRY(check_same_dtype(op, x, y, "x", "y"));
  char s1[160], s2[160];
  KILN_RETURN_IF(x->shape.ndim != 1 || y->shape.ndim != 1 || x->numel != y->numel, KILN_ERR_SHAPE,
                 op, "x and y must be 1-D of equal length, got %s and %s",
                 fmt(&x->shape, s1, sizeof s1), fmt(&y->shape, s2, sizeof s2));
  kiln__shape scalar = {0, {0}};
  int made;
  KILN_TRY(kiln__output_prepare(op, ctx, x->dtype, &scalar, out, &made));
  kiln_tensor *o = *out;
  kiln_status s = check_no_overlap(op, o, x, "x");
  if (s == KILN_OK)
    s = check_no_overlap(op, o, y, "y");
  if (s != KILN_OK) {
    kiln__output_discard(out, made);
    return s;
  }
  uint64_t n = x->numel;
  kiln__ctx_lock(ctx);
  if (n == 0) {
    unsigned char zero[16] = {0};
    cl_int err = clEnqueueFillBuffer(ctx->queue, o->mem, zero, kiln_dtype_size(o->dtype), o->offset,
                                     o->nbytes, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      s = kiln__fail_cl(op, err, "clEnqueueFillBuffer");
  }
#if KILN_HAVE_CLBLAST
  else if (use_clblast_level1(ctx, x->dtype)) {
    s = kiln__clblast_dot(op, ctx, x->dtype, n, x->mem, elem_off(x), y->mem, elem_off(y), o->mem,
                          elem_off(o));
  }
#endif
  else {
    cl_kernel k;
    s = get_kernel(op, ctx, x->dtype, "blas_dot", &k);
    if (s == KILN_OK) {
      kiln__args args = kiln__args_begin(op, k);
      kiln__args_u64(&args, n);
      kiln__args_tensor(&args, x);
      kiln__args_tensor(&args, y);
      kiln__args_tensor(&args, o);
      size_t wg = kiln__dot_wg(&ctx->info);
      s = kiln__args_enqueue_1d(&args, ctx, wg, wg);
    }
  }
  kiln__ctx_unlock(ctx);
  if (s != KILN_OK)
    kiln__output_discard(out, made);
  return s;
}

kiln_status
kiln_axpy(kiln_context *ctx, double alpha, const kiln_tensor *x, kiln_tensor *y)
{
  static const char op[] = "kiln_axpy";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_TRY(kiln__tensor_check(op, y, ctx));
  KILN_TRY(check_same_dtype(op, x, y, "x", "y"));
  if (!kiln__shape_equal(&x->shape, &y->shape)) {
    char s1[160], s2[160];
    return kiln__fail(KILN_ERR_SHAPE, op, 0, "x %s and y %s differ in shape",
                      fmt(&x->shape, s1, sizeof s1), fmt(&y->shape, s2, sizeof s2));
  }
  /* The same elements on both sides are fine elementwise (y = (1 + alpha) x); a shifted
   * overlap would read elements another work-item already updated. */
  KILN_RETURN_IF(kiln__ops_overlap(x, y) == KILN__OVERLAP_PARTIAL, KILN_ERR_INVALID_ARGUMENT, op,
                 "x and y partly overlap; y may be x's very bytes or disjoint from them");
  if (!x->numel)
    return KILN_OK;
  kiln_status s;
  kiln__ctx_lock(ctx);
#if KILN_HAVE_CLBLAST
  if (use_clblast_level1(ctx, x->dtype))
    s = kiln__clblast_axpy(op, ctx, x->dtype, x->numel, alpha, x->mem, elem_off(x), y->mem,
                           elem_off(y));
  else
#endif
    s = launch_level1(op, ctx, x->dtype, "blas_axpy", x->numel, alpha, x, y);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_scal(kiln_context *ctx, double alpha, kiln_tensor *x)
{
  static const char op[] = "kiln_scal";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_TRY(check_float(op, x, "x"));
  if (!x->numel)
    return KILN_OK;
  kiln_status s;
  kiln__ctx_lock(ctx);
#if KILN_HAVE_CLBLAST
  if (use_clblast_level1(ctx, x->dtype))
    s = kiln__clblast_scal(op, ctx, x->dtype, x->numel, alpha, x->mem, elem_off(x));
  else
#endif
    s = launch_level1(op, ctx, x->dtype, "blas_scal", x->numel, alpha, x, NULL);
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---- warm-up ---- */

int
kiln_blas_has_clblast(void)
{
  return KILN_HAVE_CLBLAST;
}

/* Builds kiln's BLAS kernels for dt and, with CLBlast, runs each routine kiln uses once. */
static kiln_status
warm_dtype(const char *op, kiln_context *ctx, kiln_dtype dt)
{
  static const char *const kernels[] = {"gemm_small", "sym_fill", "blas_axpy", "blas_scal",
                                        "blas_dot"};
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0] && s == KILN_OK; i++) {
    cl_kernel k;
    s = get_kernel(op, ctx, dt, kernels[i], &k);
  }
  kiln__ctx_unlock(ctx);
  if (s != KILN_OK || !kiln__blas_use_clblast(ctx))
    return s;
#if KILN_HAVE_CLBLAST
  /* Tiny operands: the compile is the cost, the arithmetic is nothing. */
  const int64_t sq[3] = {2, 2, 2};
  kiln_tensor *a = NULL, *b = NULL, *c = NULL;
  s = kiln_tensor_zeros(ctx, dt, 3, sq, &a);
  if (s == KILN_OK)
    s = kiln_tensor_zeros(ctx, dt, 3, sq, &b);
  if (s == KILN_OK)
    s = kiln_tensor_zeros(ctx, dt, 3, sq, &c);
  if (s == KILN_OK) {
    size_t off = elem_off(a), boff = elem_off(b), coff = elem_off(c);
    kiln_complex128 one = real_scalar(1.0), zero = real_scalar(0.0);
    kiln__ctx_lock(ctx);
    s = kiln__clblast_gemm(op, ctx, dt, 0, 0, 2, 2, 2, one, a->mem, off, 2, 4, b->mem, boff, 2, 4,
                           zero, c->mem, coff, 2, 4, 1);
    if (s == KILN_OK)
      s = kiln__clblast_gemm(op, ctx, dt, 0, 0, 2, 2, 2, one, a->mem, off, 2, 4, b->mem, boff, 2, 4,
                             zero, c->mem, coff, 2, 4, 2);
    if (s == KILN_OK)
      s = kiln__clblast_gemv(op, ctx, dt, 0, 2, 2, one, a->mem, off, 2, b->mem, boff, zero, c->mem,
                             coff);
    if (s == KILN_OK)
      s = kiln__clblast_syrk(op, ctx, dt, 1, 0, 2, 2, one, a->mem, off, 2, zero, c->mem, coff, 2);
    if (s == KILN_OK)
      s = kiln__clblast_dot(op, ctx, dt, 2, a->mem, off, b->mem, boff, c->mem, coff);
    if (s == KILN_OK)
      s = kiln__clblast_axpy(op, ctx, dt, 2, 1.0, a->mem, off, b->mem, boff);
    if (s == KILN_OK)
      s = kiln__clblast_scal(op, ctx, dt, 2, 1.0, a->mem, off);
    kiln__ctx_unlock(ctx);
  }
  if (s == KILN_OK)
    s = kiln_context_finish(ctx);
  kiln_tensor_release(a);
  kiln_tensor_release(b);
  kiln_tensor_release(c);
#endif
  return s;
}

kiln_status
kiln_blas_warm(kiln_context *ctx, kiln_blas_warm_scope scope)
{
  static const char op[] = "kiln_blas_warm";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(scope != KILN_BLAS_WARM_USED && scope != KILN_BLAS_WARM_ALL,
                 KILN_ERR_INVALID_ARGUMENT, op, "scope %d is not a kiln_blas_warm_scope",
                 (int)scope);
  if (scope == KILN_BLAS_WARM_ALL) {
#if KILN_HAVE_CLBLAST
    KILN_TRY(kiln__clblast_fill_cache(op, ctx));
#else
    return kiln__fail(KILN_ERR_UNSUPPORTED, op, 0, "this libkiln was built without CLBlast");
#endif
  }
  KILN_TRY(warm_dtype(op, ctx, KILN_F32));
  if (ctx->info.has_fp64)
    KILN_TRY(warm_dtype(op, ctx, KILN_F64));
  return KILN_OK;
}
