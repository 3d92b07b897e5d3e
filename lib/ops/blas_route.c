/*
 * The BLAS family's descriptor (runtime/family.h) and its choices: the
 * per-context route state and option, the autotuner's gemm family (the
 * route per m*n*k bucket), and the build options of kiln's own kernels.
 */
#include "ops/blas_route.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/env.h"
#include "core/error.h"
#include "kiln/blas.h"
#include "kiln_config.h"
#include "ops/families.h"
#include "ops/tunables.h"
#include "ops/tuned.h"
#include "runtime/tuner.h"

/* Per-context state; guarded by ctx->lock. */
struct blas_state {
  int64_t small_mnk; /* KILN_OPT_GEMM_SMALL_MNK */
  int small_mnk_set; /* the option was set: it routes every call, not the autotuner */
  int use_clblast;   /* built with CLBlast and not disabled by KILN_DEBUG_NO_CLBLAST */
};

static kiln_status
blas_state_create(kiln_context *ctx, void **state)
{
  struct blas_state *st = calloc(1, sizeof *st);
  if (!st)
    return kiln__fail(KILN_ERR_HOST_MEMORY, "kiln_context_create", 0,
                      "cannot allocate the BLAS state");
  st->small_mnk = KILN__GEMM_SMALL_MNK_DEFAULT;
  /* Debug switch: run a CLBlast build as if it had none (tests reach kiln's own kernels). */
  st->use_clblast = KILN_HAVE_CLBLAST && !kiln__env_flag(KILN__ENV_DEBUG_NO_CLBLAST);
  *state = st;
  return KILN_OK;
}

static void
blas_state_destroy(kiln_context *ctx, void *state)
{
  free(state);
}

static struct blas_state *
state_of(const kiln_context *ctx)
{
  return kiln__family_state(ctx, &kiln__blas_family);
}

int
kiln__blas_use_clblast(const kiln_context *ctx)
{
  return state_of(ctx)->use_clblast;
}

static void
blas_option_set(kiln_context *ctx, void *state, kiln_option option, int64_t value)
{
  struct blas_state *st = state;
  st->small_mnk = value;
  st->small_mnk_set = 1;
}

static int64_t
blas_option_get(const kiln_context *ctx, const void *state, kiln_option option)
{
  const struct blas_state *st = state;
  return st->small_mnk;
}

static const struct kiln__tune_family gemm_tune;
static int gemm_dtype_ok(kiln_dtype d);

int
kiln__blas_route_small(kiln_context *ctx, kiln_dtype dt, uint64_t size, int route)
{
  if (route < 0) {
    struct blas_state *st = state_of(ctx);
    kiln__ctx_lock(ctx);
    int64_t threshold = st->small_mnk;
    int set = st->small_mnk_set;
    kiln__ctx_unlock(ctx);
    /* The tuner times f32/f64 only: complex products follow the built-in rule. */
    if (set)
      return size <= (uint64_t)threshold;
    if (!gemm_dtype_ok(dt))
      return size <= (uint64_t)KILN__GEMM_SMALL_MNK_DEFAULT;
    uint32_t chosen;
    kiln__tune_lookup(ctx, &gemm_tune, dt, KILN__LAYOUT_MNK, size ? size : 1, &chosen);
    route = (int)chosen;
  }
  if (route == KILN__GEMM_ROUTE_KILN || route == KILN__GEMM_ROUTE_CLBLAST)
    return route == KILN__GEMM_ROUTE_KILN;
  return size <= (uint64_t)KILN__GEMM_SMALL_MNK_DEFAULT;
}

size_t
kiln__gemm_tile(const kiln_device_info *info)
{
  size_t t = KILN__GEMM_TILE_DEFAULT;
  while (t > 1 && t * t > info->max_work_group_size)
    t /= 2;
  return t;
}

int
kiln__gemm_tiled_ok(const kiln_device_info *info)
{
  return info->max_work_group_size >= KILN__GEMM_TILED_WG * KILN__GEMM_TILED_WG;
}

size_t
kiln__dot_wg(const kiln_device_info *info)
{
  size_t w = 256;
  while (w > 1 && w > info->max_work_group_size)
    w /= 2;
  return w;
}

static void
blas_build_options(const kiln_device_info *info, const char *source, kiln_dtype dtype,
                   const void *variant, char *buf, size_t len)
{
  kiln__options_append(buf, len, " -DKILN_GEMM_TILE=%u -DKILN_DOT_WG=%u",
                       (uint32_t)kiln__gemm_tile(info), (uint32_t)kiln__dot_wg(info));
  if (kiln__dtype_is_half(dtype))
    kiln__options_append(buf, len, " -DKILN_GEMM_TWG=%u -DKILN_GEMM_TRB=%u",
                         (uint32_t)KILN__GEMM_TILED_WG, (uint32_t)KILN__GEMM_TILED_RB);
}

/* ---------------------------------------------------------------- the gemm tuner family */

#define N_(a) (sizeof(a) / sizeof((a)[0]))
#define P2(k) ((uint64_t)1 << (k))

/* One parameter, the route (enum kiln__gemm_route); 0, the rule, is the default only. */
static const uint64_t gemm_routes[] = {KILN__GEMM_ROUTE_KILN, KILN__GEMM_ROUTE_CLBLAST};

static const struct kiln__tune_param gemm_params[] = {
    {.name = "route",
     .offset = 0,
     .size = sizeof(uint32_t),
     .min = KILN__GEMM_ROUTE_RULE,
     .max = KILN__GEMM_ROUTE_CLBLAST,
     .full = gemm_routes,
     .nfull = N_(gemm_routes),
     .quick = gemm_routes,
     .nquick = N_(gemm_routes)},
};

/* Every bucket matters for a choice between two routes: the defaults leave no gaps. */
static const uint64_t gemm_sizes[] = {P2(10), P2(11), P2(12), P2(13), P2(14),
                                      P2(15), P2(16), P2(17), P2(18), P2(19),
                                      P2(20), P2(21), P2(22), P2(23), P2(24)};

static int
gemm_dtype_ok(kiln_dtype d)
{
  return d == KILN_F32 || d == KILN_F64;
}

static int
gemm_available(const kiln_context *ctx)
{
  return kiln__blas_use_clblast(ctx);
}

static void
gemm_defaults(const kiln_context *ctx, kiln_dtype dtype, int layout, void *params)
{
  *(uint32_t *)params = KILN__GEMM_ROUTE_RULE;
}

/* The route a parameter set takes on pb: the rule resolves by the timed m*n*k (2^k). */
static uint32_t
gemm_effective_route(const struct kiln__tune_problem *pb, const void *params)
{
  uint32_t route = *(const uint32_t *)params;
  if (route != KILN__GEMM_ROUTE_RULE)
    return route;
  return pb->n <= (uint64_t)KILN__GEMM_SMALL_MNK_DEFAULT ? KILN__GEMM_ROUTE_KILN
                                                         : KILN__GEMM_ROUTE_CLBLAST;
}

/*
 * One of the two routes is what the rule (the default) does on the timed
 * problem: timing it again could only let noise store it, and for the
 * bucket the threshold splits, that would move the other half too.
 */
static int
gemm_same_run(const struct kiln__tune_problem *pb, const void *a, const void *b)
{
  return gemm_effective_route(pb, a) == gemm_effective_route(pb, b);
}

static kiln_status
gemm_run(struct kiln__tune_problem *pb, const void *params)
{
  return kiln__matmul_routed(pb->ctx, pb->in[0], pb->in[1], (int)*(const uint32_t *)params,
                             &pb->out);
}

/* A and B read, C written once: what the operation cannot avoid moving. */
double
kiln__gemm_tune_bytes(const struct kiln__tune_problem *pb)
{
  return (double)(kiln_tensor_nbytes(pb->in[0]) + kiln_tensor_nbytes(pb->in[1]) +
                  kiln_tensor_nbytes(pb->out));
}

/*
 * [m, kk] x [kk, n] with m*n*kk = 2^k, as square as powers of two allow.
 * Products of the inputs (multiples of 1/16 in [-2, 2]) are multiples of
 * 1/256 below 4, so every partial sum of a row is exact while kk < 2^14
 * (f32): both routes give the same bits in any summation order.
 */
kiln_status
kiln__gemm_tune_setup(struct kiln__tune_problem *pb)
{
  int e = pb->k / 3, r = pb->k % 3;
  int64_t m = (int64_t)1 << (e + (r > 0)), n = (int64_t)1 << (e + (r > 1)), kk = (int64_t)1 << e;
  int64_t as[2] = {m, kk}, bs[2] = {kk, n};
  pb->ndim = 2;
  pb->shape[0] = m;
  pb->shape[1] = n;
  snprintf(pb->desc, sizeof pb->desc, "[%lld,%lld]x[%lld,%lld]", (long long)m, (long long)kk,
           (long long)kk, (long long)n);
  kiln_status s = kiln__tune_input(pb->ctx, pb->dtype, 2, as, 12345u, &pb->in[0]);
  if (s == KILN_OK)
    s = kiln__tune_input(pb->ctx, pb->dtype, 2, bs, 12345u + 7919u, &pb->in[1]);
  return s;
}

static const struct kiln__tune_family gemm_tune = {
    .name = "gemm",
    .description = "GEMM/GEMV/SYRK route (kiln kernel or CLBlast), timed on a matrix product",
    .params_size = sizeof(uint32_t),
    .params = gemm_params,
    .nparams = N_(gemm_params),
    .layouts = 1u << KILN__LAYOUT_MNK,
    .layout_names = "mnk",
    .ninputs = 2,
    .float_sum = 1,
    .wall_clock = 1,
    .dtype_ok = gemm_dtype_ok,
    .defaults = gemm_defaults,
    .run = gemm_run,
    .bytes = kiln__gemm_tune_bytes,
    .available = gemm_available,
    .needs = "CLBlast (a libkiln built with it, KILN_DEBUG_NO_CLBLAST unset)",
    .setup = kiln__gemm_tune_setup,
    .same_run = gemm_same_run,
    .sizes = gemm_sizes,
    .nsizes = N_(gemm_sizes),
};

/* ---------------------------------------------------------------- the family */

static const struct kiln__source blas_sources[] = {
    {"gemm_small", KILN__DT_FLOATS | KILN__DT_HALVES | KILN__DT_COMPLEX}, {NULL, 0}};

static const struct kiln__family_option blas_options[] = {
    {KILN_OPT_GEMM_SMALL_MNK, 0, INT64_MAX},
};

const struct kiln__family kiln__blas_family = {
    .name = "blas",
    .sources = blas_sources,
    .build_options = blas_build_options,
    .tune = &gemm_tune,
    .state_create = blas_state_create,
    .state_destroy = blas_state_destroy,
    .options = blas_options,
    .noptions = N_(blas_options),
    .option_set = blas_option_set,
    .option_get = blas_option_get,
};
