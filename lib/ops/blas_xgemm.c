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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/env.h"
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
 * both stride modes; the f64 rows the same shapes at half the vector width; row 10 of each is
 * CLBlast's generic NVIDIA set, what a device missing from its database gets. Set 11 came from
 * the KILN_DEBUG_XGEMM sweep on the H200 (bench/h200/gemm.sh, docs/tuning.md): f32 64x128
 * tiles of 8x8 per item in 128-item groups (for 2048^3), f64 set 9 with KWI 4.
 */
#define XGEMM_NSETS KILN__XGEMM_NSETS
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
        {0, 1, 32, 2, 16, 8, 64, 8, 16, 128, 1, 1, 1, 1, 4, 4},
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
        {0, 1, 16, 4, 16, 8, 64, 8, 16, 128, 1, 1, 1, 1, 2, 2},
    },
};

/*
 * Two size classes, each one bucket: products up to m*n*k < 2^35 are timed and looked up as
 * 2048^3 (a 128x128 tile gives 256 work-groups there, two per compute unit of an H200: the
 * tile that fills the GPU best differs from the large class's), larger ones as 4096^3.
 */
#define XGEMM_MNK_SMALL ((uint64_t)1 << 33)
#define XGEMM_MNK ((uint64_t)1 << 36)
#define XGEMM_SPLIT ((uint64_t)1 << 35)

/* The `set` value of the defaults (not a candidate): kiln's rule, xgemm_rule below. Apart from
 * the sets' ids so that adding sets keeps the meaning of stored results. */
#define XGEMM_RULE 99

static const uint64_t set_ids[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
static const uint64_t set_ids_quick[] = {0, 1, 4};
static const uint64_t xgemm_sizes[] = {XGEMM_MNK_SMALL, XGEMM_MNK};

static const struct kiln__tune_param xgemm_params[] = {
    {.name = "set",
     .offset = 0,
     .size = sizeof(uint32_t),
     .min = 0,
     .max = XGEMM_RULE,
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
 * on 4096^3 against 29.5 with CLBlast's generic NVIDIA set, f64 set 9 at 17.8 against 11.7;
 * then f64 set 11 from the sweep of 2026-12-02 (15.1, 18.0, 19.8 TFLOP/s at 2048^3, 4096^3,
 * 8192^3 against set 9's 13.4, 17.3, 19.0 in the same run).
 * Other devices keep CLBlast's database, which was tuned on many of them. mnk: the bucket.
 */
static const uint32_t xgemm_nvidia[2][2] = {{8, 8}, {11, 11}}; /* [f64][large class] */

static uint32_t
xgemm_rule(const kiln_context *ctx, kiln_dtype dt, uint64_t mnk)
{
  if (!ctx->info.is_gpu || strstr(ctx->info.vendor, "NVIDIA") == NULL)
    return 0;
  return xgemm_nvidia[dt == KILN_F64][mnk >= XGEMM_SPLIT];
}

uint32_t
kiln__blas_xgemm_nvidia_set(kiln_dtype dt, int large)
{
  return xgemm_nvidia[dt == KILN_F64][large != 0];
}

/* The defaults do not see the bucket: the rule is resolved where the product's size is known. */
static void
xgemm_defaults(const kiln_context *ctx, kiln_dtype dtype, int layout, int log2n, void *params)
{
  (void)log2n;
  (void)ctx;
  (void)dtype;
  (void)layout;
  *(uint32_t *)params = XGEMM_RULE;
}

static kiln_status
xgemm_run(struct kiln__tune_problem *pb, const void *params)
{
  (void)params; /* the product's own kiln__blas_xgemm_prepare looks the candidate up */
  return kiln__matmul_routed(pb->ctx, pb->in[0], pb->in[1], KILN__GEMM_ROUTE_CLBLAST, &pb->out);
}

static const struct kiln__tune_family xgemm_tune = {
    .name = "xgemm",
    .description = "CLBlast's GEMM kernel parameters (GPUs), timed on 2048^3 and 4096^3 products",
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

#if KILN_HAVE_CLBLAST
/* Indices of KILN__XGEMM_PARAM_NAMES. */
enum { P_GEMMK, P_KREG, P_KWG, P_KWI, P_MDIMA, P_MDIMC, P_MWG, P_NDIMB, P_NDIMC, P_NWG, P_SA, P_SB,
       P_STRM, P_STRN, P_VWM, P_VWN };

/*
 * Why v is not a configuration Xgemm can run for esize-byte elements on info's device, written
 * to buf; NULL when it is. The constraints of CLBlast's own tuner (src/tuning/kernels/xgemm.hpp,
 * GEMMK 1 with its restrictions) and the device's limits: CLBlast itself would only report a
 * failed build or launch, or a kernel whose tiles do not cover the product.
 */
static const char *
xgemm_invalid(const size_t *v, size_t esize, const kiln_device_info *info, char *buf, size_t len)
{
  static const char *const names[KILN__XGEMM_NPARAMS] = {KILN__XGEMM_PARAM_NAMES};
  for (int i = 0; i < KILN__XGEMM_NPARAMS; i++) {
    int flag = i == P_GEMMK || i == P_SA || i == P_SB || i == P_STRM || i == P_STRN;
    if (flag ? v[i] > 1 : v[i] == 0 || v[i] > 1024) {
      snprintf(buf, len, "%s=%zu out of range (%s)", names[i], v[i], flag ? "0 or 1" : "1..1024");
      return buf;
    }
  }
  for (int i = P_VWM; i <= P_VWN; i++)
    if ((v[i] & (v[i] - 1)) != 0 || v[i] > 16) {
      snprintf(buf, len, "%s=%zu is not a vector width (1, 2, 4, 8, 16)", names[i], v[i]);
      return buf;
    }
  const size_t wg = v[P_MDIMC] * v[P_NDIMC];
  if (v[P_KWG] % v[P_KWI])
    snprintf(buf, len, "KWG=%zu is not a multiple of KWI=%zu", v[P_KWG], v[P_KWI]);
  else if (v[P_MWG] % (v[P_MDIMC] * v[P_VWM]) || v[P_MWG] % (v[P_MDIMA] * v[P_VWM]))
    snprintf(buf, len, "MWG=%zu is not a multiple of MDIMC*VWM=%zu and MDIMA*VWM=%zu", v[P_MWG],
             v[P_MDIMC] * v[P_VWM], v[P_MDIMA] * v[P_VWM]);
  else if (v[P_NWG] % (v[P_NDIMC] * v[P_VWN]) || v[P_NWG] % (v[P_NDIMB] * v[P_VWN]))
    snprintf(buf, len, "NWG=%zu is not a multiple of NDIMC*VWN=%zu and NDIMB*VWN=%zu", v[P_NWG],
             v[P_NDIMC] * v[P_VWN], v[P_NDIMB] * v[P_VWN]);
  else if (v[P_GEMMK] == 0 && (wg % v[P_MDIMA] || wg % v[P_NDIMB] || v[P_KWG] % (wg / v[P_MDIMA]) ||
                               v[P_KWG] % (wg / v[P_NDIMB])))
    snprintf(buf, len,
             "KWG=%zu is not a multiple of MDIMC*NDIMC=%zu over MDIMA=%zu and over NDIMB=%zu "
             "(each a whole number)",
             v[P_KWG], wg, v[P_MDIMA], v[P_NDIMB]);
  else if (v[P_GEMMK] == 1 && (v[P_KREG] % v[P_VWN] || v[P_MDIMA] != v[P_MDIMC] ||
                               v[P_NDIMB] != v[P_NDIMC] || v[P_SA] || v[P_SB]))
    snprintf(buf, len, "GEMMK=1 needs KREG a multiple of VWN, MDIMA=MDIMC, NDIMB=NDIMC, SA=SB=0");
  else if (wg > info->max_work_group_size)
    snprintf(buf, len, "MDIMC*NDIMC=%zu work-items exceed the device's %zu", wg,
             info->max_work_group_size);
  else if ((v[P_SA] * v[P_MWG] + v[P_SB] * v[P_NWG]) * v[P_KWG] * esize >
           info->local_mem_bytes - info->local_mem_bytes / 16)
    snprintf(buf, len,
             "the local tiles (SA*MWG + SB*NWG)*KWG take %zu bytes, more than 15/16 of the "
             "device's %llu (the compiler adds its own)",
             (v[P_SA] * v[P_MWG] + v[P_SB] * v[P_NWG]) * v[P_KWG] * esize,
             (unsigned long long)info->local_mem_bytes);
  else
    return NULL;
  return buf;
}

/*
 * KILN_DEBUG_XGEMM="NAME=VALUE ..." (spaces or commas between): Xgemm parameters to time without
 * a rebuild, in force for f32 and f64 on any device CLBlast runs on, over the tuner's choice.
 * Names not given keep the value of kiln's NVIDIA default set for dt's large class. Returns 0 when unset, 1
 * with v filled, or a failure naming the bad entry. id: a hash of v, so that a changed value
 * is put in force and an unchanged one is not put again.
 */
static int
xgemm_debug(const char *op, const kiln_context *ctx, kiln_dtype dt, size_t *v, uint32_t *id,
            kiln_status *s)
{
  static const char *const names[KILN__XGEMM_NPARAMS] = {KILN__XGEMM_PARAM_NAMES};
  const char *e = kiln__env(KILN__ENV_DEBUG_XGEMM);
  if (!e || !*e)
    return 0;
  memcpy(v, xgemm_sets[dt == KILN_F64][xgemm_nvidia[dt == KILN_F64][1] - 1], sizeof(size_t) * 16);
  for (const char *p = e; *p;) {
    if (*p == ' ' || *p == ',') {
      p++;
      continue;
    }
    size_t len = strcspn(p, " ,"), nlen = strcspn(p, "=");
    int i = 0;
    while (i < KILN__XGEMM_NPARAMS && !(nlen < len && strlen(names[i]) == nlen &&
                                         strncasecmp(p, names[i], nlen) == 0))
      i++;
    char *end = NULL;
    unsigned long long val = i < KILN__XGEMM_NPARAMS ? strtoull(p + nlen + 1, &end, 10) : 0;
    if (i == KILN__XGEMM_NPARAMS || end == p + nlen + 1 || end != p + len) {
      *s = kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                      "KILN_DEBUG_XGEMM: '%.*s' is not NAME=VALUE with NAME one of GEMMK KREG KWG "
                      "KWI MDIMA MDIMC MWG NDIMB NDIMC NWG SA SB STRM STRN VWM VWN",
                      (int)len, p);
      return -1;
    }
    v[i] = val > 1u << 20 ? (size_t)1 << 20 : (size_t)val;
    p += len;
  }
  char why[160];
  if (xgemm_invalid(v, kiln_dtype_size(dt), &ctx->info, why, sizeof why)) {
    *s = kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "KILN_DEBUG_XGEMM for %s: %s",
                    kiln_dtype_name(dt), why);
    return -1;
  }
  uint32_t h = 2166136261u;
  for (int i = 0; i < KILN__XGEMM_NPARAMS; i++)
    h = (h ^ (uint32_t)v[i]) * 16777619u;
  /* Above the sets' ids, never 0 (CLBlast's database). */
  *id = 0x80000000u | h;
  return 1;
}
#endif

kiln_status
kiln__blas_xgemm_prepare(const char *op, kiln_context *ctx, kiln_dtype dt)
{
  return kiln__blas_xgemm_prepare_mnk(op, ctx, dt, XGEMM_MNK);
}

kiln_status
kiln__blas_xgemm_prepare_mnk(const char *op, kiln_context *ctx, kiln_dtype dt, uint64_t mnk)
{
#if KILN_HAVE_CLBLAST
  if (!xgemm_dtype_ok(dt) || !kiln__blas_use_clblast(ctx))
    return KILN_OK;
  const char *cp = kiln__env(KILN__ENV_DEBUG_CLBLAST);
  if (cp && *cp)
    KILN_TRY(kiln__clblast_debug_params(op, ctx, dt, cp));
  size_t dv[KILN__XGEMM_NPARAMS];
  uint32_t did = 0;
  kiln_status ds = KILN_OK;
  int d = xgemm_debug(op, ctx, dt, dv, &did, &ds);
  if (d)
    return d < 0 ? ds : kiln__clblast_xgemm_override(op, ctx, dt, did, dv);
  if (!xgemm_available(ctx))
    return KILN_OK;
  uint32_t set = 0;
  uint64_t bucket = mnk < XGEMM_SPLIT ? XGEMM_MNK_SMALL : XGEMM_MNK;
  kiln__tune_lookup(ctx, &xgemm_tune, dt, KILN__LAYOUT_MNK, bucket, &set);
  if (set == XGEMM_RULE)
    set = xgemm_rule(ctx, dt, bucket);
  KILN_RETURN_IF(set > XGEMM_NSETS, KILN_ERR_INVALID_ARGUMENT, op,
                 "Xgemm parameter set %u (tuned or overridden): the sets are 0 to %d", set,
                 XGEMM_NSETS);
  return kiln__clblast_xgemm_override(op, ctx, dt, set,
                                      set ? xgemm_sets[dt == KILN_F64][set - 1] : NULL);
#else
  (void)op;
  (void)ctx;
  (void)dt;
  (void)mnk;
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
