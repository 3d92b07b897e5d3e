/*
 * The autotuner's linalg family (runtime/tuner.h): where the panels of the blocked LU,
 * Cholesky and QR are factored (route: kiln's device kernels or the host through LAPACKE,
 * lib/ops/linalg_internal.h), the block size nb and the GEMM of the updates (gemm: CLBlast or
 * kiln's gemm_tile), the look-ahead (ahead), the GPU panel leaf width (leaf) and the LU panel's
 * work-groups (pwg), per precision and matrix size (elements of one matrix, "full" buckets),
 * timed on LU of a square matrix.
 */
#include <math.h>
#include <stdio.h>

#include "kiln/linalg.h"
#include "kiln_config.h"
#include "ops/linalg_internal.h"
#include "runtime/tuner.h"

#define N_(a) (sizeof(a) / sizeof((a)[0]))
#define P2(k) ((uint64_t)1 << (k))

static const uint64_t la_routes[] = {KILN__LINALG_ROUTE_DEVICE, KILN__LINALG_ROUTE_HOST};
static const uint64_t la_nb_full[] = {16, 32, 64, 128, 256};
static const uint64_t la_nb_quick[] = {32, 64};
static const uint64_t la_gemm[] = {KILN__LINALG_GEMM_CLBLAST, KILN__LINALG_GEMM_TILE,
                                   KILN__LINALG_GEMM_LARGE};
static const uint64_t la_gemm_quick[] = {KILN__LINALG_GEMM_RULE};
static const uint64_t la_ahead[] = {1, 2};
static const uint64_t la_ahead_quick[] = {0};
static const uint64_t la_leaf[] = {8, 16, 32};
static const uint64_t la_leaf_quick[] = {0};
static const uint64_t la_pwg[] = {1, 32, 1024};
static const uint64_t la_pwg_quick[] = {0};

static const struct kiln__tune_param la_params[] = {
    {.name = "route",
     .offset = offsetof(kiln__linalg_params, route),
     .size = sizeof(uint32_t),
     .min = KILN__LINALG_ROUTE_RULE,
     .max = KILN__LINALG_ROUTE_HOST,
     .full = la_routes,
     .nfull = N_(la_routes),
     .quick = la_routes,
     .nquick = N_(la_routes)},
    {.name = "nb",
     .offset = offsetof(kiln__linalg_params, nb),
     .size = sizeof(uint32_t),
     .min = 0,
     .max = 4096,
     .full = la_nb_full,
     .nfull = N_(la_nb_full),
     .quick = la_nb_quick,
     .nquick = N_(la_nb_quick)},
    {.name = "gemm",
     .offset = offsetof(kiln__linalg_params, gemm),
     .size = sizeof(uint32_t),
     .min = KILN__LINALG_GEMM_RULE,
     .max = KILN__LINALG_GEMM_LARGE,
     .full = la_gemm,
     .nfull = N_(la_gemm),
     .quick = la_gemm_quick,
     .nquick = N_(la_gemm_quick)},
    {.name = "ahead",
     .offset = offsetof(kiln__linalg_params, ahead),
     .size = sizeof(uint32_t),
     .min = 0,
     .max = 2,
     .full = la_ahead,
     .nfull = N_(la_ahead),
     .quick = la_ahead_quick,
     .nquick = N_(la_ahead_quick)},
    {.name = "leaf",
     .offset = offsetof(kiln__linalg_params, leaf),
     .size = sizeof(uint32_t),
     .min = 0,
     .max = 256,
     .full = la_leaf,
     .nfull = N_(la_leaf),
     .quick = la_leaf_quick,
     .nquick = N_(la_leaf_quick)},
    {.name = "pwg",
     .offset = offsetof(kiln__linalg_params, pwg),
     .size = sizeof(uint32_t),
     .min = 0,
     .max = 4096,
     .full = la_pwg,
     .nfull = N_(la_pwg),
     .quick = la_pwg_quick,
     .nquick = N_(la_pwg_quick)},
};

/*
 * Blocked factorizations start above 64 x 64 (smaller ones are one work-group each): 256,
 * 1024 and 4096 square. Other sizes take their bucket's defaults unless asked for (--sizes).
 */
static const uint64_t la_sizes[] = {P2(16), P2(20), P2(24)};

static int
la_dtype_ok(kiln_dtype d)
{
  return d == KILN_F32 || d == KILN_F64;
}

static void
la_defaults(const kiln_context *ctx, kiln_dtype dtype, int layout, int log2n, void *params)
{
  (void)log2n;
  (void)ctx;
  (void)dtype;
  (void)layout;
  kiln__linalg_params *p = params;
  p->route = KILN__LINALG_ROUTE_RULE;
  p->nb = 0;
  p->gemm = KILN__LINALG_GEMM_RULE;
  p->ahead = 0;
  p->leaf = 0;
  p->pwg = 0;
}

/* LU of one square matrix of 2^k elements (2^(k/2) rows, k rounded down to even). */
static kiln_status
la_setup(struct kiln__tune_problem *pb)
{
  int64_t n = (int64_t)1 << (pb->k / 2);
  pb->ndim = 2;
  pb->shape[0] = n;
  pb->shape[1] = n;
  snprintf(pb->desc, sizeof pb->desc, "lu [%lld,%lld]", (long long)n, (long long)n);
  return kiln__tune_input(pb->ctx, pb->dtype, 2, pb->shape, 12345u, &pb->in[0]);
}

static kiln_status
la_run(struct kiln__tune_problem *pb, const void *params)
{
  (void)params; /* the op's own lookup gets the candidate being timed */
  kiln_tensor *piv = NULL;
  kiln_status s = kiln_linalg_lu_factor(pb->ctx, pb->in[0], &pb->out, &piv);
  kiln_tensor_release(piv);
  return s;
}

static double
la_bytes(const struct kiln__tune_problem *pb)
{
  return 2.0 * (double)kiln_tensor_nbytes(pb->in[0]);
}

/*
 * Routes and block sizes round differently (and may break ties between equal pivot
 * candidates differently: the tuning input has many equal magnitudes), so factors are
 * compared by size only: both finite with 1-norms within a factor of 2 of each other. The
 * suite (tests/ops/test_linalg.c) checks every route's backward error.
 */
static int
la_match(const struct kiln__tune_problem *pb, const void *ref, const void *got, size_t bytes)
{
  int f32 = pb->dtype == KILN_F32;
  size_t n = bytes / (f32 ? 4 : 8);
  double r = 0, g = 0;
  for (size_t i = 0; i < n; i++) {
    r += fabs(f32 ? ((const float *)ref)[i] : ((const double *)ref)[i]);
    g += fabs(f32 ? ((const float *)got)[i] : ((const double *)got)[i]);
  }
  return isfinite(r) && isfinite(g) && g <= 2 * r + 1 && r <= 2 * g + 1;
}

const struct kiln__tune_family kiln__linalg_tune = {
    .name = "linalg",
    .description =
        "panel route (device kernels or host LAPACKE), block size, GEMM and look-ahead of LU, "
        "Cholesky and QR, timed on LU",
    .params_size = sizeof(kiln__linalg_params),
    .params = la_params,
    .nparams = N_(la_params),
    .layouts = 1u << KILN__LAYOUT_FULL,
    .layout_names = "full",
    .ninputs = 1,
    .wall_clock = 1,
    .dtype_ok = la_dtype_ok,
    .defaults = la_defaults,
    .run = la_run,
    .bytes = la_bytes,
    .setup = la_setup,
    .match = la_match,
    .sizes = la_sizes,
    .nsizes = N_(la_sizes),
};
