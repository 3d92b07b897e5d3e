/*
 * The BLAS family's descriptor (runtime/family.h) and its choices: the
 * per-context route state and option, the autotuner's gemm family (the
 * route per m*n*k bucket), and the build options of kiln's own kernels.
 */
#include "ops/blas_route.h"

#include <stdatomic.h>
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
  cl_mem gemm_temp;  /* CLBlast's GEMM temporaries (kiln__blas_gemm_temp) */
  size_t gemm_temp_bytes;
  struct kiln__gemm_temp_key temp_key; /* kiln__blas_temp_lookup's memo */
  size_t temp_key_bytes;
  int temp_key_set;
  cl_uint cpu_width; /* CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT: gemm_cpu's blocks */
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
  if (clGetDeviceInfo(ctx->device, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof st->cpu_width,
                      &st->cpu_width, NULL) != CL_SUCCESS)
    st->cpu_width = 0; /* the narrowest blocks */
  *state = st;
  return KILN_OK;
}

static void
blas_state_destroy(kiln_context *ctx, void *state)
{
  struct blas_state *st = state;
  if (st && st->gemm_temp)
    clReleaseMemObject(st->gemm_temp);
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

int
kiln__blas_temp_lookup(kiln_context *ctx, const struct kiln__gemm_temp_key *key, size_t *bytes)
{
  struct blas_state *st = state_of(ctx);
  if (!st->temp_key_set || memcmp(&st->temp_key, key, sizeof *key) != 0)
    return 0;
  *bytes = st->temp_key_bytes;
  return 1;
}

void
kiln__blas_temp_store(kiln_context *ctx, const struct kiln__gemm_temp_key *key, size_t bytes)
{
  struct blas_state *st = state_of(ctx);
  st->temp_key = *key;
  st->temp_key_bytes = bytes;
  st->temp_key_set = 1;
}

cl_mem
kiln__blas_gemm_temp(kiln_context *ctx, size_t bytes)
{
  struct blas_state *st = state_of(ctx);
  if (st->gemm_temp_bytes < bytes) {
    if (st->gemm_temp)
      clReleaseMemObject(st->gemm_temp);
    /* Doubling: a run of growing products reallocates a logarithmic number of times. */
    size_t want = bytes < 2 * st->gemm_temp_bytes ? 2 * st->gemm_temp_bytes : bytes;
    cl_int err;
    st->gemm_temp = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, want, NULL, &err);
    st->gemm_temp_bytes = err == CL_SUCCESS ? want : 0;
    if (err != CL_SUCCESS)
      st->gemm_temp = NULL;
  }
  return st->gemm_temp;
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

/*
 * The large kernel's default sets: 128 x 128 tiles of C per 16 x 16 work-group, 8 x 8 results
 * per work-item, k-steps of 8, double-buffered, reads as 16-byte vectors (the layout of the
 * SIMT GEMMs that reach the FMA peak on NVIDIA GPUs).
 */
static const struct kiln__gemm_large large_default[2] = {
    {8, 8, 16, 16, 8, 4, 1, 4, 0}, /* f32 */
    {8, 8, 16, 16, 8, 2, 1, 2, 0}, /* f64 */
};

/* The tensor-core form f64 defaults take where the device has it (0: never; 1: m8n8k4,
 * 2: m16n8k4, cl_kernels/gemm_large.cl's GL_MMA), or the largest below it the device takes.
 * On the H200 (2026-12-02, bench/h200/gemm.sh, docs/blas_fft.md) mma=2 ran DGEMM 4096^3 at
 * 30.9 TFLOP/s against 19.4 on FMAs (mma=1 22.0, mma=3 29.6), and test_blas's large case
 * passed with every mma form there. */
static const uint32_t large_mma = 2;

/* CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV (cl_nv_device_attribute_query). */
#define KILN__CL_CC_MAJOR_NV 0x4000

/* The largest mma value the device takes: 0 none, 1 an NVIDIA GPU of compute capability 8.0
 * on (FP64 tensor cores, PTX mma.sync m8n8k4), 3 from 9.0 (m16n8k4 and m16n8k8 too). */
static int
mma_capable(const kiln_device_info *info, cl_device_id dev)
{
  cl_uint major = 0;
  if (!info->is_gpu || !strstr(info->vendor, "NVIDIA") ||
      clGetDeviceInfo(dev, KILN__CL_CC_MAJOR_NV, sizeof major, &major, NULL) != CL_SUCCESS)
    return 0;
  return major >= 9 ? 3 : major >= 8;
}

/* Why p cannot run for esize-byte elements on info's device (written to buf), or NULL. mma:
 * the device can take mma = 1 (mma_capable). */
static const char *
large_invalid(const struct kiln__gemm_large *p, size_t esize, const kiln_device_info *info, int mma,
              char *buf, size_t len)
{
  const uint32_t nl = p->wx * p->wy, mt = p->wy * p->tm, nt = p->wx * p->tn;
  const uint64_t lbytes =
      (uint64_t)(p->db + 1) * p->bk * (mt + p->pad + nt + p->pad) * (uint64_t)esize;
  if (!p->tm || !p->tn || !p->wx || !p->wy || !p->bk || p->tm > 16 || p->tn > 16 || p->bk > 64 ||
      p->wx > 64 || p->wy > 64 || p->pad > 16 || p->db > 1)
    snprintf(buf, len, "tm and tn 1..16, wx and wy 1..64, bk 1..64, pad 0..16, db 0 or 1");
  else if (p->vw != 1 && p->vw != 2 && p->vw != 4)
    snprintf(buf, len, "vw=%u is not 1, 2 or 4", p->vw);
  else if (p->tm % p->vw || p->tn % p->vw || p->pad % p->vw)
    snprintf(buf, len, "tm=%u, tn=%u and pad=%u must be multiples of vw=%u", p->tm, p->tn, p->pad,
             p->vw);
  else if ((mt * p->bk) % nl || (nt * p->bk) % nl)
    snprintf(buf, len,
             "the tiles (wy*tm=%u and wx*tn=%u by bk=%u) do not split evenly over wx*wy=%u "
             "work-items",
             mt, nt, p->bk, nl);
  else if (nl > info->max_work_group_size)
    snprintf(buf, len, "wx*wy=%u work-items exceed the device's %zu", nl,
             info->max_work_group_size);
  else if (lbytes > info->local_mem_bytes - info->local_mem_bytes / 16)
    snprintf(buf, len, "the local tiles take %llu bytes, more than 15/16 of the device's %llu",
             (unsigned long long)lbytes, (unsigned long long)info->local_mem_bytes);
  else if (p->mma > 3)
    snprintf(buf, len, "mma=%u is not 0, 1, 2 or 3", p->mma);
  else if (p->mma > (uint32_t)mma)
    snprintf(buf, len, "mma=%u needs an NVIDIA GPU of compute capability %s or later", p->mma,
             p->mma == 1 ? "8.0" : "9.0");
  else if (p->mma && (esize != 8 || p->tm != 8 || p->tn != 8 || p->wx != 16 || p->wy != 16 ||
                      p->bk % (p->mma == 3 ? 8 : 4)))
    snprintf(buf, len, "mma=%u takes f64 with tm=tn=8, wx=wy=16 and bk a multiple of %d", p->mma,
             p->mma == 3 ? 8 : 4);
  else
    return NULL;
  return buf;
}

/*
 * The default set for dt on info's device: large_default, or where its work-group or local
 * tiles do not fit (the f64 tiles take 33 KiB: oclgrind's device has 32), the same single-
 * buffered, then with 4x4 per work-item. Returns 0 when none fits.
 */
static int
large_pick(const kiln_device_info *info, kiln_dtype dt, struct kiln__gemm_large *p)
{
  char why[160];
  *p = large_default[dt == KILN_F64];
  if (!large_invalid(p, kiln_dtype_size(dt), info, 0, why, sizeof why))
    return 1;
  p->db = 0;
  if (!large_invalid(p, kiln_dtype_size(dt), info, 0, why, sizeof why))
    return 1;
  p->tm = p->tn = 4;
  return !large_invalid(p, kiln_dtype_size(dt), info, 0, why, sizeof why);
}

kiln_status
kiln__gemm_large_params(const char *op, const kiln_context *ctx, kiln_dtype dt, uint64_t m,
                        uint64_t n, uint64_t batch, struct kiln__gemm_large *p)
{
  static const char *const names[KILN__GEMM_LARGE_NPARAMS] = {KILN__GEMM_LARGE_NAMES};
  memset(p, 0, sizeof *p);
  /* gemm_cpu.cl takes none of these: a device gemm_large.cl's sets do not fit still runs it */
  if (kiln__gemm_cpu_form(ctx))
    return KILN_OK;
  large_pick(&ctx->info, dt, p);
  const char *e = kiln__env(KILN__ENV_DEBUG_GEMM_LARGE);
  /* f64 on the tensor cores where the device has them (the defaults' mma form, large_mma). */
  if ((!e || !*e) && dt == KILN_F64 && large_mma && p->tm == 8 && p->tn == 8 && p->wx == 16 &&
      p->wy == 16) {
    int cap = mma_capable(&ctx->info, ctx->device);
    if (cap > 0) {
      p->mma = (uint32_t)cap < large_mma ? (uint32_t)cap : large_mma;
      p->pad = 8;
    }
  }
  /* Fewer tiles than compute units leaves some idle: 4x4 results per work-item (a quarter of
   * the tile) where that runs. */
  const uint64_t mt = (uint64_t)p->wy * p->tm, nt = (uint64_t)p->wx * p->tn;
  if ((!e || !*e) && p->tm > 4 && p->tn > 4 &&
      (m + mt - 1) / mt * ((n + nt - 1) / nt) * batch < ctx->info.compute_units) {
    struct kiln__gemm_large q = *p;
    char why[160];
    q.tm = q.tn = 4;
    if (!large_invalid(&q, kiln_dtype_size(dt), &ctx->info, 0, why, sizeof why))
      *p = q;
  }
  uint32_t *v = &p->tm;
  for (const char *s = e ? e : ""; *s;) {
    if (*s == ' ' || *s == ',') {
      s++;
      continue;
    }
    size_t len = strcspn(s, " ,"), nlen = strcspn(s, "=");
    int i = 0;
    while (i < KILN__GEMM_LARGE_NPARAMS &&
           !(nlen < len && strlen(names[i]) == nlen && strncmp(s, names[i], nlen) == 0))
      i++;
    char *end = NULL;
    unsigned long val = i < KILN__GEMM_LARGE_NPARAMS ? strtoul(s + nlen + 1, &end, 10) : 0;
    KILN_RETURN_IF(i == KILN__GEMM_LARGE_NPARAMS || end == s + nlen + 1 || end != s + len,
                   KILN_ERR_INVALID_ARGUMENT, op,
                   "KILN_DEBUG_GEMM_LARGE: '%.*s' is not NAME=VALUE with NAME one of tm tn wx wy "
                   "bk vw db pad mma",
                   (int)len, s);
    v[i] = val > 1024 ? 1024 : (uint32_t)val;
    s += len;
  }
  char why[160];
  const char *bad =
      large_invalid(p, kiln_dtype_size(dt), &ctx->info,
                    p->mma ? mma_capable(&ctx->info, ctx->device) : 0, why, sizeof why);
  KILN_RETURN_IF(bad && e && *e, KILN_ERR_INVALID_ARGUMENT, op, "KILN_DEBUG_GEMM_LARGE for %s: %s",
                 kiln_dtype_name(dt), bad);
  KILN_RETURN_IF(bad, KILN_ERR_UNSUPPORTED, op, "the large GEMM kernel for %s: %s",
                 kiln_dtype_name(dt), bad);
  return KILN_OK;
}

/* The large kernel runs dt on ctx's device: f32/f64 and a default set fits the device. */
int
kiln__gemm_large_ok(const kiln_context *ctx, kiln_dtype dt)
{
  struct kiln__gemm_large p;
  return (dt == KILN_F32 || (dt == KILN_F64 && ctx->info.has_fp64)) &&
         (kiln__gemm_cpu_form(ctx) || large_pick(&ctx->info, dt, &p));
}

static atomic_int hook_large_form;

void
kiln__blas_test_large_form(int form)
{
  atomic_store(&hook_large_form, form);
}

int
kiln__gemm_cpu_form(const kiln_context *ctx)
{
  int h = atomic_load(&hook_large_form);
  if (h)
    return h == 2;
  return !ctx->info.is_gpu && !kiln__env(KILN__ENV_DEBUG_GEMM_LARGE);
}

/*
 * gemm_cpu's blocks by the width of the device's vectors (CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT:
 * 16 and up, 8, 4 and less), per dtype (f32, f64): {vector width, rows and columns with op(B)
 * as stored, rows and columns of the dot form (op(B) transposed)}.
 *
 * 64-byte vectors (AVX-512, 32 registers), measured on PoCL here (2 cores,
 * bench/pocl_proto/gemm_cpu_blocks.py N DTYPE BLOCKS), GFLOP/s at 1024^3 and 2048^3: f32
 * 6 x 64 (four 16-wide vectors a row) 359 and 336, 8 x 32 352 and 256, 12 x 32 306 and 258,
 * 8 x 48 271 and 258; f64 6 x 32 (four 8-wide) 203 and 124, 8 x 32 173 and 129, 12 x 16 144
 * and 103, 6 x 40 154 and 106. The dot form, f32 1536^3 before the unrolling: 4 x 6 at 119,
 * 6 x 4 106, 4 x 4 101 (8-wide vectors: 49). OpenBLAS through NumPy took 240-255 GFLOP/s
 * f32 and 118-125 f64 on the same machine (docs/blas_fft.md).
 *
 * Narrower vectors (AVX2 and SSE have 16 registers): the 64-byte blocks would take 48 of
 * them for accumulators alone. There the blocks hold 12 accumulators, as OpenBLAS's AVX2
 * kernels do (6 x 16 f32): 6 rows of two vectors, and 3 x 4 dot products. Not measured on
 * such a CPU; on this one (--vw=8, which the compiler still gives 32 registers) they run
 * 6 x 16 f32 at 147 GFLOP/s and the 3 x 4 dot form at 210, with results as exact.
 */
static const uint32_t cpu_blocks[3][2][5] = {
    {{16, 6, 64, 4, 6}, {8, 6, 32, 4, 6}},
    {{8, 6, 16, 3, 4}, {4, 6, 8, 3, 4}},
    {{4, 6, 8, 3, 4}, {2, 6, 4, 3, 4}},
};

static atomic_uint hook_cpu_width;

void
kiln__blas_test_cpu_width(unsigned width)
{
  atomic_store(&hook_cpu_width, width);
}

const uint32_t *
kiln__gemm_cpu_shape(const kiln_context *ctx, kiln_dtype dt)
{
  unsigned w = atomic_load(&hook_cpu_width);
  if (!w)
    w = state_of(ctx)->cpu_width;
  return cpu_blocks[w >= 16 ? 0 : w >= 8 ? 1 : 2][dt == KILN_F64];
}

void
kiln__gemm_cpu_block(const kiln_context *ctx, kiln_dtype dt, int tb, uint32_t *r, uint32_t *c)
{
  const uint32_t *b = kiln__gemm_cpu_shape(ctx, dt);
  *r = tb ? b[3] : b[1];
  *c = tb ? b[4] : b[2];
}

/*
 * Where the large kernel wins without tuning: the smallest m*n*k from which the default rule
 * takes it, per dtype (f32, f64) on NVIDIA GPUs. UINT64_MAX: never (CLBlast, or kiln's small
 * kernel without CLBlast). H200, 2026-12-02 (bench/h200/gemm.sh, docs/blas_fft.md): f64 19.1 /
 * 19.4 / 20.3 TFLOP/s at 2048^3 / 4096^3 / 8192^3 against CLBlast's 14.3 / 18.9 / 19.9; f32
 * 31.5 / 32.3 / 33.4 against 33.2 / 41.1 / 42.5 (CLBlast keeps f32).
 */
static const uint64_t large_from_nvidia[2] = {UINT64_MAX, (uint64_t)1 << 33};

/* The built-in rule: kiln's small kernel up to the threshold, then the large kernel where it
 * was measured faster, else CLBlast (kiln's small kernel without it). */
static int
rule_route(const kiln_context *ctx, kiln_dtype dt, uint64_t size)
{
  if (size <= (uint64_t)KILN__GEMM_SMALL_MNK_DEFAULT)
    return KILN__GEMM_ROUTE_KILN;
  if (ctx->info.is_gpu && strstr(ctx->info.vendor, "NVIDIA") && kiln__gemm_large_ok(ctx, dt) &&
      size >= large_from_nvidia[dt == KILN_F64])
    return KILN__GEMM_ROUTE_LARGE;
  /* CPU devices: gemm_cpu.cl, 10-20x CLBlast's GPU-shaped kernels there (cpu_blocks). */
  if (!ctx->info.is_gpu && kiln__gemm_cpu_form(ctx) && kiln__gemm_large_ok(ctx, dt))
    return KILN__GEMM_ROUTE_LARGE;
  return state_of(ctx)->use_clblast ? KILN__GEMM_ROUTE_CLBLAST : KILN__GEMM_ROUTE_KILN;
}

int
kiln__blas_route(kiln_context *ctx, kiln_dtype dt, uint64_t size, int route)
{
  if (route < 0) {
    struct blas_state *st = state_of(ctx);
    kiln__ctx_lock(ctx);
    int64_t threshold = st->small_mnk;
    int set = st->small_mnk_set;
    kiln__ctx_unlock(ctx);
    if (set && size <= (uint64_t)threshold)
      return KILN__GEMM_ROUTE_KILN;
    /* The tuner times f32/f64 only: complex products follow the built-in rule. */
    if (!gemm_dtype_ok(dt))
      route = KILN__GEMM_ROUTE_RULE;
    else {
      uint32_t chosen;
      kiln__tune_lookup(ctx, &gemm_tune, dt, KILN__LAYOUT_MNK, size ? size : 1, &chosen);
      route = (int)chosen;
    }
    /* Above the option's threshold: CLBlast unless the tuner's route is the large kernel. */
    if (set && route != KILN__GEMM_ROUTE_LARGE)
      route = st->use_clblast ? KILN__GEMM_ROUTE_CLBLAST : KILN__GEMM_ROUTE_KILN;
  }
  if (route == KILN__GEMM_ROUTE_KILN)
    return route;
  if (route == KILN__GEMM_ROUTE_CLBLAST && state_of(ctx)->use_clblast)
    return route;
  if (route == KILN__GEMM_ROUTE_LARGE && kiln__gemm_large_ok(ctx, dt))
    return route;
  return rule_route(ctx, dt, size);
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
  if (strcmp(source, "gemm_cpu") == 0) {
    /* the variant is kiln__gemm_cpu_shape's row (lib/ops/blas.c) */
    const uint32_t *b = variant ? variant : cpu_blocks[0][dtype == KILN_F64];
    kiln__options_append(buf, len, " -DGC_VW=%u -DGC_MR=%u -DGC_NR=%u -DGC_DM=%u -DGC_DN=%u", b[0],
                         b[1], b[2], b[3], b[4]);
    return;
  }
  if (strcmp(source, "gemm_large") == 0) {
    struct kiln__gemm_large d;
    if (!variant)
      large_pick(info, dtype, &d);
    const struct kiln__gemm_large *p = variant ? variant : &d;
    kiln__options_append(buf, len,
                         " -DGL_TM=%u -DGL_TN=%u -DGL_WX=%u -DGL_WY=%u -DGL_BK=%u -DGL_VW=%u "
                         "-DGL_DB=%u -DGL_PAD=%u -DGL_UNROLL=%d -DGL_MMA=%u",
                         p->tm, p->tn, p->wx, p->wy, p->bk, p->vw, p->db, p->pad, info->is_gpu,
                         p->mma);
    return;
  }
  kiln__options_append(buf, len, " -DKILN_GEMM_TILE=%u -DKILN_DOT_WG=%u",
                       (uint32_t)kiln__gemm_tile(info), (uint32_t)kiln__dot_wg(info));
  if (kiln__dtype_is_half(dtype))
    kiln__options_append(buf, len, " -DKILN_GEMM_TWG=%u -DKILN_GEMM_TRB=%u",
                         (uint32_t)KILN__GEMM_TILED_WG, (uint32_t)KILN__GEMM_TILED_RB);
}

/* ---------------------------------------------------------------- the gemm tuner family */

#define N_(a) (sizeof(a) / sizeof((a)[0]))
#define P2(k) ((uint64_t)1 << (k))

/* One parameter, the route (enum kiln__gemm_route); 0, the rule, is the default only. The
 * quick list leaves the large kernel to the full tuning. */
static const uint64_t gemm_routes[] = {KILN__GEMM_ROUTE_KILN, KILN__GEMM_ROUTE_CLBLAST,
                                       KILN__GEMM_ROUTE_LARGE};

static const struct kiln__tune_param gemm_params[] = {
    {.name = "route",
     .offset = 0,
     .size = sizeof(uint32_t),
     .min = KILN__GEMM_ROUTE_RULE,
     .max = KILN__GEMM_ROUTE_LARGE,
     .full = gemm_routes,
     .nfull = N_(gemm_routes),
     .quick = gemm_routes,
     .nquick = 2},
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
gemm_defaults(const kiln_context *ctx, kiln_dtype dtype, int layout, int log2n, void *params)
{
  (void)log2n;
  *(uint32_t *)params = KILN__GEMM_ROUTE_RULE;
}

/* The route a parameter set takes on pb: the rule resolves by the timed m*n*k (2^k). */
static uint32_t
gemm_effective_route(const struct kiln__tune_problem *pb, const void *params)
{
  return (uint32_t)kiln__blas_route(pb->ctx, pb->dtype, pb->n, (int)*(const uint32_t *)params);
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
    {"gemm_small", KILN__DT_FLOATS | KILN__DT_HALVES | KILN__DT_COMPLEX},
    {"gemm_large", KILN__DT_FLOATS},
    {"gemm_cpu", KILN__DT_FLOATS},
    {NULL, 0}};

/* gemm_cpu's blocks follow the device's vector width (kiln__gemm_cpu_shape): the variant
 * that `kiln cache warm` builds and that lib/ops/blas.c's lookups take. */
static const void *
blas_default_variant(const kiln_context *ctx, const char *source, kiln_dtype dtype)
{
  return strcmp(source, "gemm_cpu") == 0 ? kiln__gemm_cpu_shape(ctx, dtype) : NULL;
}

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
    .default_variant = blas_default_variant,
};
