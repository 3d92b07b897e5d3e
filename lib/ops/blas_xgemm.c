/*
 * CLBlast's own GEMM kernel, tuned: the xgemm tuner family. CLBlast picks the parameters of its
 * Xgemm kernel (tile sizes, vector widths, local-memory use) from a database built before
 * recent GPUs existed; a device it does not know gets its vendor's generic set (on an H200:
 * 8-element register tiles, 0.66x cuBLAS for SGEMM and 0.23x for DGEMM, docs/performance.md).
 * This family times a short list of parameter sets on a 4096^3 product and keeps the fastest
 * in kiln's tuning file with every other family's results; kiln__blas_xgemm_prepare puts the
 * chosen set in force through CLBlastOverrideParameters before CLBlast's GEMM and SYRK run.
 * `kiln tune --family gemm` tunes it together with the route (tuner.h: part_of).
 */
#include <string.h>

#include "core/error.h"
#include "kiln/blas.h"
#include "kiln_config.h"
#include "ops/blas_route.h"
#include "ops/families.h"
#include "ops/tuned.h"
#include "runtime/tuner.h"

#if KILN_HAVE_CLBLAST
#include "backends/clblast.h"
#endif

#define N_(a) (sizeof(a) / sizeof((a)[0]))

/*
 * The candidate sets, KILN__XGEMM_PARAM_NAMES order: GEMMK KREG KWG KWI MDIMA MDIMC MWG NDIMB
 * NDIMC NWG SA SB STRM STRN VWM VWN. Set i of the tuner is row i - 1; 0 is CLBlast's database.
 * Each satisfies Xgemm's constraints (MWG a multiple of MDIMC*VWM and MDIMA*VWM, NWG of
 * NDIMC*VWN and NDIMB*VWN, KWG of KWI and of MDIMC*NDIMC over MDIMA and over NDIMB) and keeps
 * its A and B tiles within 32 KiB of local memory. The f32 rows are register tiles of 8x8,
 * 4x8 and 4x4 results per work-item in 128- and 256-item groups, with vector widths 2 and 4 and
 * both stride modes; the f64 rows the same shapes at half the vector width; the last row of
 * each is CLBlast's generic NVIDIA set, what a device missing from its database gets.
 */
#define XGEMM_NSETS 10
static const size_t xgemm_sets[2][XGEMM_NSETS][16] = {
    {
        {0, 1, 16, 2, 16, 16, 128, 16, 16, 128, 1, 1, 1, 1, 4, 4},
        {0, 1, 32, 2, 16, 16, 128, 16, 16, 128, 1, 1, 1, 1, 4, 4},
        {0, 1, 16, 2, 16, 16, 128, 16, 16, 128, 1, 1, 0, 0, 4, 4},
        {0, 1, 16, 8, 16, 16, 128, 16, 16, 128, 1, 1, 1, 1, 4, 4},
        {0, 1, 16, 2, 16, 16, 128, 16, 16, 128, 1, 1, 1, 1, 2, 2},
        {0, 1, 16, 2, 16, 16, 64, 16, 16, 128, 1, 1, 1, 1, 4, 4},
        {0, 1, 16, 2, 16, 8, 64, 8, 16, 128, 1, 1, 1, 1, 4, 4},
        {0, 1, 32, 2, 32, 16, 128, 8, 16, 128, 1, 1, 1, 1, 4, 4},
        {0, 1, 32, 2, 16, 16, 64, 16, 16, 64, 1, 1, 0, 0, 4, 4},
        {0, 1, 32, 2, 8, 8, 32, 32, 32, 64, 1, 1, 0, 0, 4, 2},
    },
    {
        {0, 1, 16, 2, 16, 16, 64, 16, 16, 64, 1, 1, 1, 1, 2, 2},
        {0, 1, 16, 2, 16, 16, 128, 16, 16, 64, 1, 1, 1, 1, 2, 2},
        {0, 1, 16, 2, 16, 16, 64, 16, 16, 128, 1, 1, 1, 1, 2, 2},
        {0, 1, 16, 2, 16, 16, 128, 16, 16, 128, 1, 1, 1, 1, 2, 2},
        {0, 1, 32, 2, 16, 16, 64, 16, 16, 64, 1, 1, 1, 1, 2, 2},
        {0, 1, 16, 2, 16, 16, 128, 16, 16, 128, 1, 1, 0, 0, 2, 2},
        {0, 1, 16, 2, 16, 16, 128, 16, 16, 64, 1, 1, 1, 1, 4, 2},
        {0, 1, 16, 8, 16, 16, 128, 16, 16, 128, 1, 1, 1, 1, 2, 2},
        {0, 1, 16, 2, 16, 8, 64, 8, 16, 128, 1, 1, 1, 1, 2, 2},
        {0, 1, 32, 2, 16, 16, 32, 8, 8, 64, 0, 0, 0, 0, 2, 1},
    },
};

/* The one bucket: 4096^3, large enough to fill a big GPU with any of the tiles above. */
#define XGEMM_MNK ((uint64_t)1 << 36)

static const uint64_t set_ids[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
static const uint64_t set_ids_quick[] = {0, 1, 4};
static const uint64_t xgemm_sizes[] = {XGEMM_MNK};

static const struct kiln__tune_param xgemm_params[] = {
    {.name = "set",
     .offset = 0,
     .size = sizeof(uint32_t),
     .min = 0,
     .max = XGEMM_NSETS,
     .full = set_ids,
     .nfull = N_(set_ids),
     .quick = set_ids_quick,
     .nquick = N_(set_ids_quick)},
};

static int
xgemm_dtype_ok(kiln_dtype d)
{
  return d == KILN_F32 || d == KILN_F64;
}

/* GPUs only: CLBlast's CPU sets are tuned for CPUs, and timing 4096^3 products on one takes
 * minutes per candidate. */
static int
xgemm_available(const kiln_context *ctx)
{
  return kiln__blas_use_clblast(ctx) && ctx->info.is_gpu;
}

/*
 * NVIDIA GPUs start from the sets measured best on an H200 (`kiln tune --family xgemm --dtype
 * f32,f64`, docs/perf-data/h200-2026-12-01-issue21/tune-xgemm.json): f32 set 8 at 40.6 TFLOP/s
 * on 4096^3 against 29.5 with CLBlast's generic NVIDIA set, f64 set 9 at 17.8 against 11.7.
 * Other devices keep CLBlast's database, which was tuned on many of them.
 */
static void
xgemm_defaults(const kiln_context *ctx, kiln_dtype dtype, int layout, void *params)
{
  (void)layout;
  int nvidia = ctx->info.is_gpu && strstr(ctx->info.vendor, "NVIDIA") != NULL;
  *(uint32_t *)params = !nvidia ? 0 : dtype == KILN_F64 ? 9 : 8;
}

static kiln_status
xgemm_run(struct kiln__tune_problem *pb, const void *params)
{
  (void)params; /* the product's own kiln__blas_xgemm_prepare looks the candidate up */
  return kiln__matmul_routed(pb->ctx, pb->in[0], pb->in[1], KILN__GEMM_ROUTE_CLBLAST, &pb->out);
}

static const struct kiln__tune_family xgemm_tune = {
    .name = "xgemm",
    .description = "CLBlast's GEMM kernel parameters (GPUs), timed on a 4096^3 product",
    .part_of = "gemm",
    .params_size = sizeof(uint32_t),
    .params = xgemm_params,
    .nparams = N_(xgemm_params),
    .layouts = 1u << KILN__LAYOUT_MNK,
    .layout_names = "mnk",
    .ninputs = 2,
    .float_sum = 1,
    .wall_clock = 1,
    .dtype_ok = xgemm_dtype_ok,
    .defaults = xgemm_defaults,
    .run = xgemm_run,
    .bytes = kiln__gemm_tune_bytes,
    .available = xgemm_available,
    .needs = "CLBlast on a GPU",
    .setup = kiln__gemm_tune_setup,
    .sizes = xgemm_sizes,
    .nsizes = N_(xgemm_sizes),
};

kiln_status
kiln__blas_xgemm_prepare(const char *op, kiln_context *ctx, kiln_dtype dt)
{
#if KILN_HAVE_CLBLAST
  if (!xgemm_dtype_ok(dt) || !xgemm_available(ctx))
    return KILN_OK;
  uint32_t set = 0;
  kiln__tune_lookup(ctx, &xgemm_tune, dt, KILN__LAYOUT_MNK, XGEMM_MNK, &set);
  KILN_RETURN_IF(set > XGEMM_NSETS, KILN_ERR_INTERNAL, op, "Xgemm parameter set %u", set);
  return kiln__clblast_xgemm_override(op, ctx, dt, set,
                                      set ? xgemm_sets[dt == KILN_F64][set - 1] : NULL);
#else
  (void)op;
  (void)ctx;
  (void)dt;
  return KILN_OK;
#endif
}

kiln_status
kiln__blas_xgemm_test_apply(kiln_context *ctx, kiln_dtype dt, uint32_t set)
{
  static const char op[] = "kiln__blas_xgemm_test_apply";
#if KILN_HAVE_CLBLAST
  KILN_RETURN_IF(!xgemm_dtype_ok(dt) || set > XGEMM_NSETS, KILN_ERR_INVALID_ARGUMENT, op,
                 "no Xgemm set %u for %s", set, kiln_dtype_name(dt));
  return kiln__clblast_xgemm_override(op, ctx, dt, set,
                                      set ? xgemm_sets[dt == KILN_F64][set - 1] : NULL);
#else
  (void)ctx;
  (void)dt;
  (void)set;
  return kiln__fail(KILN_ERR_UNSUPPORTED, op, 0, "built without CLBlast");
#endif
}

const struct kiln__family kiln__xgemm_family = {
    .name = "xgemm",
    .tune = &xgemm_tune,
};
