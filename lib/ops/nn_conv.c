/*
 * nn_conv family: convolution forward, backward (input, weight, bias) and transposed
 * (cl_kernels/nn_conv.cl), the `conv` tuner family that chooses the route per shape, the
 * helpers nn_pool.c shares and the family descriptor.
 *
 * Routes (docs/nn_conv.md):
 *  - direct: one work-item per output (forward), per input element (backward-data, a
 *    gather) or per weight element (backward-weight); no temporary. Wins for small channel
 *    counts (depthwise, the first layer of a network), where a GEMM has little to reuse.
 *  - gemm: im2col of a chunk of samples into a [nc][C_in/g * kvol][L] buffer (chunked so it
 *    stays under kiln__conv_col_bytes), then one strided-batched GEMM per group (CLBlast, or
 *    kiln's plain gemm_batched without it); backward-data is the transposed GEMM and col2im
 *    (a gather, deterministic); backward-weight per chunk and group a GEMM whose inner
 *    dimension runs over the chunk's positions, split over its samples into partial sums
 *    added in order (the product alone is too small to fill a GPU), chunks accumulating in
 *    order.
 *  - convgemm: CLBlast's implicit-GEMM convolution (forward, ungrouped 1-D and 2-D).
 *  - igemm: kiln's implicit GEMM (conv_pack, then conv_igemm forward, conv_igemm_bwd
 *    backward-data and transposed, conv_igemm_wgrad backward-weight with a split reduction):
 *    the weights packed once per call, the columns gathered into local memory tile by tile
 *    over the whole batch, register-tiled in one of four tile shapes (the tuner's `tile`),
 *    no column buffer.
 * The tuner's `conv` family times them on a 3x3 convolution per m*n*k bucket; its default,
 * the rule, takes igemm (where it cannot run, the im2col GEMM with CLBlast) when
 * C_out/g * C_in/g * kvol >= 512, else the direct kernels.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/env.h"
#include "core/error.h"
#include "core/shape.h"
#include "kiln/nn_conv.h"
#include "kiln_config.h"
#include "ops/blas_route.h"
#include "ops/families.h"
#include "ops/nn_conv_internal.h"
#include "ops/tuned.h"
#include "runtime/runtime.h"
#include "runtime/tuner.h"

#if KILN_HAVE_CLBLAST
#include "backends/clblast.h"
#endif

/* Largest im2col buffer of one chunk (bytes); a quarter of the device's largest allocation
 * where that is smaller. A variable for the tests (ops/tuned.h). */
uint64_t kiln__conv_col_bytes = (uint64_t)256 << 20;
/* The rule: the GEMM route from this many multiply-adds per output element and group. */
#define KILN__CONV_GEMM_MIN_REUSE 512

/* Values of the conv tuner family's parameter. */
enum { ROUTE_RULE = 0, ROUTE_DIRECT = 1, ROUTE_GEMM = 2, ROUTE_CONVGEMM = 3, ROUTE_IGEMM = 4 };

/* ---------------------------------------------------------------- shared helpers */

void
kiln__nn_args_dims(kiln__args *a, const kiln__nn_dims *d)
{
  cl_long4 v;
  memset(&v, 0, sizeof v);
  for (int i = 0; i < 3; i++)
    v.s[i] = d->v[i];
  kiln__args_raw(a, sizeof v, &v);
}

kiln_status
kiln__nn_launch_planes(const kiln__args *a, kiln_context *ctx, uint64_t vol, uint64_t rows)
{
  if (a->status != KILN_OK || vol == 0 || rows == 0)
    return a->status;
  size_t local = kiln__launch_pow2_local(ctx, a->k);
  if (local > 256)
    local = 256;
  /* Small planes take a smaller group: the next power of two on GPUs; on CPUs only 16, 64
   * or 256 items (PoCL compiles a work-group function per local size and kernel: every power
   * of two would be up to nine compiles of each kernel). */
  if (ctx->info.is_gpu) {
    while (local > 1 && local / 2 >= vol)
      local /= 2;
  } else {
    size_t want = vol <= 16 ? 16 : vol <= 64 ? 64 : 256;
    local = want < local ? want : local;
  }
  /* Grids of more than 65535 groups along dimension 1 fail on some drivers (CUDA's limit):
   * the kernels loop over the rows beyond. CPU devices take about eight groups per compute
   * unit in all, each work-item looping over rows: PoCL pays for every work-group, and one row
   * per group made im2col over [576 rows, 3136 positions] (a 3x3 convolution of 64 channels
   * at 56 x 56) take 11 ms, 0.65 GB/s of columns. */
  uint64_t g0 = (vol + local - 1) / local, g1 = rows < 65535 ? rows : 65535;
  if (!ctx->info.is_gpu) {
    uint64_t cu = ctx->info.compute_units ? ctx->info.compute_units : 1;
    uint64_t want = (8 * cu + g0 - 1) / g0;
    if (g1 > want)
      g1 = want;
  }
  size_t global[2] = {(size_t)(g0 * local), (size_t)g1};
  size_t loc[2] = {local, 1};
  return kiln__args_enqueue(a, ctx, 2, global, loc);
}

kiln_status
kiln__nn_check_volume(const char *op, uint64_t vol, const char *what)
{
  KILN_RETURN_IF(vol >= ((uint64_t)1 << 31), KILN_ERR_OVERFLOW, op,
                 "the %s holds %llu positions per plane, more than 2^31 - 1", what,
                 (unsigned long long)vol);
  return KILN_OK;
}

kiln_status
kiln__nn_conv_check_input(const char *op, kiln_context *ctx, const kiln_tensor *x,
                          kiln_tensor **out)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_RETURN_IF(!(KILN__NN_CONV_DTYPES & KILN__DT_BIT(x->dtype)), KILN_ERR_DTYPE, op,
                 "dtype %s is not accepted (f16, bf16, f32 or f64)", kiln_dtype_name(x->dtype));
  return KILN_OK;
}

kiln_status
kiln__nn_conv_check_tensor(const char *op, kiln_context *ctx, const kiln_tensor *t,
                           kiln_dtype dtype, const kiln__shape *shape, const char *what)
{
  KILN_RETURN_IF(!t, KILN_ERR_INVALID_HANDLE, op, "%s is NULL", what);
  KILN_TRY(kiln__tensor_check(op, t, ctx));
  KILN_RETURN_IF(t->dtype != dtype, KILN_ERR_DTYPE, op, "%s is %s, expected %s", what,
                 kiln_dtype_name(t->dtype), kiln_dtype_name(dtype));
  if (!kiln__shape_equal(&t->shape, shape)) {
    char a[128], b[128];
    return kiln__fail(KILN_ERR_SHAPE, op, 0, "%s has shape %s, expected %s", what,
                      kiln__shape_format(&t->shape, a, sizeof a),
                      kiln__shape_format(shape, b, sizeof b));
  }
  return KILN_OK;
}

/* ---------------------------------------------------------------- geometry */

/* A convolution as the forward pass sees it: x [N, C_in, in] * w [C_out, C_in/G, k] = y. */
typedef struct {
  int64_t N, Cin, Cout, G, cig, cog;
  kiln__nn_dims in, out, k, s, p, d;
  uint64_t ivol, ovol, kvol;
  kiln__shape x_shape, w_shape, y_shape, b_shape;
} conv_geo;

static uint64_t
vol3(const kiln__nn_dims *d)
{
  return (uint64_t)d->v[0] * (uint64_t)d->v[1] * (uint64_t)d->v[2];
}

/*
 * Reads desc and the weight: the forward convolution of x_shape-shaped inputs (transposed 0),
 * or the one whose backward-data pass the transposed convolution of x is (transposed 1:
 * x is then the forward's output and the forward's input shape is computed).
 */
static kiln_status
conv_geometry(const char *op, const kiln_tensor *x, const kiln_tensor *w,
              const kiln_conv_desc *desc, int transposed, conv_geo *g)
{
  KILN_RETURN_IF(!desc, KILN_ERR_INVALID_HANDLE, op, "desc is NULL");
  int64_t nd = desc->nd;
  KILN_RETURN_IF(nd < 1 || nd > 3, KILN_ERR_INVALID_ARGUMENT, op, "nd %lld: 1, 2 or 3 spatial axes",
                 (long long)nd);
  KILN_RETURN_IF(x->shape.ndim != (size_t)nd + 2, KILN_ERR_SHAPE, op,
                 "the input has %zu axes, expected %lld ([N, C, %lld spatial])", x->shape.ndim,
                 (long long)(nd + 2), (long long)nd);
  KILN_RETURN_IF(w->shape.ndim != (size_t)nd + 2, KILN_ERR_SHAPE, op,
                 "the weight has %zu axes, expected %lld", w->shape.ndim, (long long)(nd + 2));
  memset(g, 0, sizeof *g);
  g->G = desc->groups ? desc->groups : 1;
  KILN_RETURN_IF(g->G < 1, KILN_ERR_INVALID_ARGUMENT, op, "groups %lld must be >= 1",
                 (long long)g->G);
  g->N = x->shape.dims[0];
  /* Forward channels: the weight is [C_out, C_in/G, k] for both directions. */
  g->Cout = w->shape.dims[0];
  g->cig = w->shape.dims[1];
  g->Cin = g->cig * g->G;
  int64_t xc = x->shape.dims[1];
  KILN_RETURN_IF(g->Cout % g->G, KILN_ERR_SHAPE, op,
                 "%s channels %lld are not divisible by groups %lld",
                 transposed ? "input" : "output", (long long)g->Cout, (long long)g->G);
  KILN_RETURN_IF(xc != (transposed ? g->Cout : g->Cin), KILN_ERR_SHAPE, op,
                 "the input has %lld channels, the weight expects %lld (groups %lld)",
                 (long long)xc, (long long)(transposed ? g->Cout : g->Cin), (long long)g->G);
  g->cog = g->Cout / g->G;
  for (int i = 0; i < 3; i++) {
    g->in.v[i] = g->out.v[i] = g->k.v[i] = g->s.v[i] = g->d.v[i] = 1;
    g->p.v[i] = 0;
  }
  for (int64_t i = 0; i < nd; i++) {
    int64_t k = w->shape.dims[2 + i], s = desc->stride[i] ? desc->stride[i] : 1;
    int64_t d = desc->dilation[i] ? desc->dilation[i] : 1, p = desc->padding[i];
    int64_t xs = x->shape.dims[2 + i], op_ = desc->output_padding[i];
    KILN_RETURN_IF(k < 1, KILN_ERR_SHAPE, op, "kernel axis %lld is empty", (long long)i);
    KILN_RETURN_IF(s < 1 || d < 1 || p < 0, KILN_ERR_INVALID_ARGUMENT, op,
                   "axis %lld: stride %lld and dilation %lld must be >= 1, padding %lld >= 0",
                   (long long)i, (long long)s, (long long)d, (long long)p);
    KILN_RETURN_IF(s > ((int64_t)1 << 31) || d > ((int64_t)1 << 31) || p > ((int64_t)1 << 31),
                   KILN_ERR_OVERFLOW, op, "axis %lld: stride, dilation or padding above 2^31",
                   (long long)i);
    int64_t eff = d * (k - 1) + 1, in, out;
    if (transposed) {
      KILN_RETURN_IF(op_ < 0 || (op_ >= s && op_ >= d), KILN_ERR_INVALID_ARGUMENT, op,
                     "axis %lld: output_padding %lld must be in [0, max(stride, dilation))",
                     (long long)i, (long long)op_);
      out = xs;
      in = (xs - 1) * s - 2 * p + eff + op_;
      KILN_RETURN_IF(in < 1, KILN_ERR_SHAPE, op, "axis %lld: output size %lld is below 1",
                     (long long)i, (long long)in);
    } else {
      KILN_RETURN_IF(op_ != 0, KILN_ERR_INVALID_ARGUMENT, op,
                     "output_padding is for kiln_conv_transpose only");
      in = xs;
      int64_t span = in + 2 * p - eff;
      KILN_RETURN_IF(span < 0, KILN_ERR_SHAPE, op,
                     "axis %lld: input size %lld with padding %lld is smaller than the "
                     "dilated kernel %lld",
                     (long long)i, (long long)in, (long long)p, (long long)eff);
      out = span / s + 1;
    }
    int j = 3 - (int)nd + (int)i;
    g->in.v[j] = in;
    g->out.v[j] = out;
    g->k.v[j] = k;
    g->s.v[j] = s;
    g->p.v[j] = p;
    g->d.v[j] = d;
  }
  g->ivol = vol3(&g->in);
  g->ovol = vol3(&g->out);
  g->kvol = vol3(&g->k);
  KILN_TRY(kiln__nn_check_volume(op, g->ivol, "input"));
  KILN_TRY(kiln__nn_check_volume(op, g->ovol, "output"));
  KILN_TRY(kiln__nn_check_volume(op, g->kvol, "kernel"));
  g->x_shape.ndim = g->y_shape.ndim = (size_t)nd + 2;
  g->x_shape.dims[0] = g->y_shape.dims[0] = g->N;
  g->x_shape.dims[1] = g->Cin;
  g->y_shape.dims[1] = g->Cout;
  for (int64_t i = 0; i < nd; i++) {
    g->x_shape.dims[2 + i] = g->in.v[3 - nd + i];
    g->y_shape.dims[2 + i] = g->out.v[3 - nd + i];
  }
  g->w_shape = w->shape;
  g->b_shape.ndim = 1;
  g->b_shape.dims[0] = transposed ? g->Cin : g->Cout;
  return KILN_OK;
}

/* The kernels' channel vector: N, C_in, C_out, groups. */
static cl_long4
geo_channels(const conv_geo *g)
{
  cl_long4 v = {{g->N, g->Cin, g->Cout, g->G}};
  return v;
}

static void
args_geo(kiln__args *a, const conv_geo *g)
{
  cl_long4 v = geo_channels(g);
  kiln__args_raw(a, sizeof v, &v);
  kiln__nn_args_dims(a, &g->in);
  kiln__nn_args_dims(a, &g->out);
  kiln__nn_args_dims(a, &g->k);
  kiln__nn_args_dims(a, &g->s);
  kiln__nn_args_dims(a, &g->p);
  kiln__nn_args_dims(a, &g->d);
}

/* ---------------------------------------------------------------- routes */

static const struct kiln__tune_family conv_tune;

static int
have_clblast(void)
{
  return KILN_HAVE_CLBLAST && !kiln__env_flag(KILN__ENV_DEBUG_NO_CLBLAST);
}

/* Bytes of one element of T, the type the kernels compute in: f16 and bf16 compute in f32,
 * so route 4's packed weight, partial sums and local tiles and bias_grad's scratch hold f32
 * for them (one rounding, on the way out). */
static size_t
comp_size(kiln_dtype dt)
{
  return kiln__dtype_is_half(dt) ? 4 : kiln_dtype_size(dt);
}

/* Multiply-adds of the forward convolution: the tuner's m*n*k key. */
static uint64_t
conv_mnk(const conv_geo *g)
{
  return (uint64_t)g->Cout * (uint64_t)g->cig * g->kvol * (uint64_t)g->N * g->ovol;
}

/* Samples per chunk whose temporaries take rows * L elements per sample (the columns: C_in/g
 * kvol rows), 0 when even one sample's do not fit. */
static uint64_t
chunk_rows(kiln_context *ctx, const conv_geo *g, kiln_dtype dt, uint64_t rows)
{
  uint64_t limit = kiln__conv_col_bytes;
  if (ctx->info.max_alloc_bytes / 4 < limit)
    limit = ctx->info.max_alloc_bytes / 4;
  uint64_t per = rows * g->ovol * kiln_dtype_size(dt);
  if (per == 0 || per > limit)
    return 0;
  uint64_t nc = limit / per;
  return nc < (uint64_t)g->N ? nc : (uint64_t)g->N;
}

static uint64_t
chunk_samples(kiln_context *ctx, const conv_geo *g, kiln_dtype dt)
{
  return chunk_rows(ctx, g, dt, (uint64_t)g->cig * g->kvol);
}

/* CLBlast's convgemm serves the forward pass of ungrouped 1-D and 2-D convolutions. */
static int
convgemm_ok(const conv_geo *g)
{
  return have_clblast() && g->G == 1 && g->in.v[0] == 1 && g->k.v[0] == 1;
}

/*
 * Tiles of the implicit GEMM (cl_kernels/nn_conv.cl, route 4), the `tile` tuner parameter:
 * results per item (rows x columns) and items along the columns of a 256-item work-group.
 * 1: 64 x 64 tiles of 4 x 4 (CPUs: few registers per lane, small local footprint);
 * 2: 64 x 128 of 4 x 8; 3: 64 x 256 of 8 x 8 (32 x 8 items: a warp reads 32 contiguous
 * 4-vectors of B and broadcasts A); 4: 128 x 128 of 8 x 8 (more than 64 channels).
 */
typedef struct {
  uint32_t rm, rn, wx;
} igemm_tile_shape;

#define IGEMM_NTILES 4
static const igemm_tile_shape igemm_tiles[IGEMM_NTILES + 1] = {
    {0, 0, 0}, {4, 4, 16}, {4, 8, 16}, {8, 8, 32}, {8, 8, 16}};

static uint32_t
igemm_tm(uint32_t tile)
{
  return 256 / igemm_tiles[tile].wx * igemm_tiles[tile].rm;
}

static uint32_t
igemm_tn(uint32_t tile)
{
  return igemm_tiles[tile].wx * igemm_tiles[tile].rn;
}

/*
 * The tile of tile 0 (the default) for M rows per group, measured on the H200
 * (docs/nn_conv.md, bench/h200/conv.sh: batch 64 of 64 channels at 56 x 56, 128 at 28 x 28,
 * 256 at 14 x 14). f32: the forward and backward-data passes ran fastest on 64 x 64 tiles of
 * 4 x 4 (25 TFLOP/s on all three layers; the 8 x 8 tiles 17-23), the weight gradient, whose
 * split reduction runs fewer and longer tiles, on 64 x 128 (4 x 8) for 64 channels and
 * 128 x 128 (8 x 8) for more. f64: 64 x 256 tiles of 8 x 8 in every pass (13 TFLOP/s forward
 * against 9.4 for 4 x 8). CPUs: 64 x 64.
 */
static uint32_t
igemm_default_tile(const kiln_device_info *info, kiln_dtype dt, uint64_t m, int wgrad)
{
  if (!info->is_gpu)
    return 1;
  if (dt == KILN_F64)
    return 3;
  if (!wgrad)
    return 1;
  return m > 64 ? 4 : 2;
}

/* The family's program variant (the runtime hands it to nn_conv_build_options untouched). */
typedef struct {
  uint32_t tile;
} conv_variant;

/* Kernel name of the nn_conv source built with tile (ctx->lock held). */
static kiln_status
conv_kernel_tile(const char *op, kiln_context *ctx, kiln_dtype dt, uint32_t tile, const char *name,
                 cl_kernel *k)
{
  conv_variant v = {tile};
  char options[192];
  KILN_RETURN_IF(
      !kiln__program_options(&ctx->info, KILN__NN_CONV_SRC, dt, &v, options, sizeof options),
      KILN_ERR_DTYPE, op, "dtype %s is not supported by the nn_conv.cl kernels",
      kiln_dtype_name(dt));
  return kiln__kernel_get(op, ctx, KILN__NN_CONV_SRC, options, name, k);
}

static void
nn_conv_build_options(const kiln_device_info *info, const char *source, kiln_dtype dtype,
                      const void *variant, char *buf, size_t len)
{
  if (strcmp(source, KILN__NN_CONV_SRC) != 0)
    return;
  const conv_variant *v = variant;
  uint32_t tile = v && v->tile >= 1 && v->tile <= IGEMM_NTILES
                      ? v->tile
                      : igemm_default_tile(info, dtype, 64, 0);
  kiln__options_append(buf, len, " -DKILN_CONV_RM=%u -DKILN_CONV_RN=%u -DKILN_CONV_WX=%u",
                       igemm_tiles[tile].rm, igemm_tiles[tile].rn, igemm_tiles[tile].wx);
  if (info->is_gpu)
    kiln__options_append(buf, len, " -DKILN_CONV_GPU=1");
}

/* One direction of the implicit GEMM: the forward (bwd 0) or backward-data (1) pass of g. */
typedef struct {
  int bwd;
  int64_t csrc, cdst;    /* channels of the gathered source and of the destination */
  kiln__nn_dims cd, sd;  /* spatial sizes of the destination (columns) and the source */
  uint64_t cv, sv, m, k; /* their volumes, rows per group, reduction length */
} igemm_dir;

static igemm_dir
igemm_direction(const conv_geo *g, int bwd)
{
  igemm_dir d;
  d.bwd = bwd;
  d.csrc = bwd ? g->Cout : g->Cin;
  d.cdst = bwd ? g->Cin : g->Cout;
  d.cd = bwd ? g->in : g->out;
  d.sd = bwd ? g->out : g->in;
  d.cv = bwd ? g->ivol : g->ovol;
  d.sv = bwd ? g->ovol : g->ivol;
  d.m = (uint64_t)(bwd ? g->cig : g->cog);
  d.k = (uint64_t)(bwd ? g->cog : g->cig) * g->kvol;
  return d;
}

/* Local memory of conv_igemm_wgrad (the largest of route 4's kernels): As and Bs with rows
 * padded by 4 elements, the double-buffered row tables rt (int4) and rl (int), the column
 * table ct (int4). */
static uint64_t
wgrad_local_bytes(uint32_t tile, uint64_t esz)
{
  return (uint64_t)(igemm_tm(tile) + 4 + igemm_tn(tile) + 4) * 16 * esz + 2 * 16 * (16 + 4) +
         (uint64_t)igemm_tn(tile) * 16;
}

/* Route 4 runs where its 256-item groups and local tiles fit and its 32-bit index arithmetic
 * cannot overflow: columns, source offsets within a group, the padded volume (column base
 * positions), the packed operand. */
static int
igemm_ok(const kiln_device_info *info, const conv_geo *g, kiln_dtype dt, uint32_t tile)
{
  const uint64_t lim = (uint64_t)1 << 31;
  uint64_t esz = comp_size(dt);
  if (info->max_work_group_size < 256 || wgrad_local_bytes(tile, esz) > info->local_mem_bytes)
    return 0;
  uint64_t padded = 1;
  for (int i = 0; i < 3; i++) {
    if (g->s.v[i] >= (1 << 20) || g->p.v[i] >= (1 << 20) || g->d.v[i] * g->k.v[i] >= (1 << 24))
      return 0;
    padded *= (uint64_t)(g->in.v[i] + 2 * g->p.v[i] + g->s.v[i] + g->d.v[i] * g->k.v[i]);
  }
  if (padded >= lim)
    return 0;
  for (int bwd = 0; bwd < 2; bwd++) {
    igemm_dir d = igemm_direction(g, bwd);
    uint64_t kpad = (d.k + 15) / 16 * 16,
             mpad = (d.m + igemm_tm(tile) - 1) / igemm_tm(tile) * igemm_tm(tile);
    if ((uint64_t)g->N * d.cv >= lim || (uint64_t)(d.csrc / g->G) * d.sv >= lim || kpad >= lim ||
        (uint64_t)g->G * kpad * mpad >= ((uint64_t)1 << 40))
      return 0;
  }
  return 1;
}

/* The tile a pass of route 4 runs with: the one asked for (1-4), else the default of the pass
 * (wgrad: the weight gradient), else the smallest where the default's local tiles do not fit. */
static uint32_t
resolve_tile(const kiln_device_info *info, const conv_geo *g, kiln_dtype dt, uint32_t tile,
             int wgrad)
{
  if (tile >= 1 && tile <= IGEMM_NTILES)
    return tile;
  tile = igemm_default_tile(info, dt, (uint64_t)g->cog, wgrad);
  return igemm_ok(info, g, dt, tile) ? tile : 1;
}

/* What a route asks for becomes on this problem: the GEMM routes need a batch whose columns
 * fit (nc > 0), convgemm and the implicit GEMM their special cases (else the im2col GEMM
 * serves). */
static int
route_effective(const kiln_device_info *info, const conv_geo *g, kiln_dtype dt, int route,
                uint32_t tile, uint64_t nc)
{
  tile = resolve_tile(info, g, dt, tile, 0);
  int half = kiln__dtype_is_half(dt);
  if (route == ROUTE_RULE) {
    int big = (uint64_t)g->cog * (uint64_t)g->cig * g->kvol >= KILN__CONV_GEMM_MIN_REUSE;
    /* GPUs: the implicit GEMM (no column traffic), else CLBlast's GEMM on the columns where
     * route 4 cannot run; small channel counts: the direct kernel. CPU devices: the columns
     * (im2col_lines) and kiln's CPU GEMM kernel, f32 and f64 (PoCL, [1, 64, 56, 56] with 64
     * 3x3 filters: forward 1.0-1.4 ms against 18 ms on route 4, docs/nn_conv.md). */
    if (big && !half && !info->is_gpu && nc > 0)
      route = ROUTE_GEMM;
    else if (big && igemm_ok(info, g, dt, tile))
      route = ROUTE_IGEMM;
    else
      route = big && have_clblast() && !half ? ROUTE_GEMM : ROUTE_DIRECT;
  }
  /* f16 and bf16: CLBlast has no bf16 routines and computes its HGEMM in half precision
   * (kiln's kernels accumulate in f32), and the im2col route's column and partial-sum
   * buffers have the storage type, which would round the backward passes' sums twice: both
   * GEMM routes run kiln's implicit GEMM instead, or the direct kernels where it cannot run. */
  if (half && (route == ROUTE_GEMM || route == ROUTE_CONVGEMM))
    route = igemm_ok(info, g, dt, tile) ? ROUTE_IGEMM : ROUTE_DIRECT;
  if (route == ROUTE_CONVGEMM && !convgemm_ok(g))
    route = ROUTE_GEMM;
  if (route == ROUTE_IGEMM && !igemm_ok(info, g, dt, tile))
    route = ROUTE_GEMM;
  if (route == ROUTE_IGEMM && g->N == 0)
    route = ROUTE_DIRECT;
  if ((route == ROUTE_GEMM || route == ROUTE_CONVGEMM) && (g->N == 0 || nc == 0))
    route = ROUTE_DIRECT;
  return route;
}

/* The conv tuner family's parameters. */
typedef struct {
  uint32_t route, tile;
} conv_choice;

/* The route of one call and in *tile route 4's tile as asked for (0: each pass's default,
 * resolve_tile) (call before taking ctx->lock: the lookup may tune online); forced NULL: look
 * them up. */
static int
conv_route(kiln_context *ctx, const conv_geo *g, kiln_dtype dt, const conv_choice *forced,
           uint32_t *tile)
{
  conv_choice chosen = {ROUTE_RULE, 0};
  if (forced) {
    chosen = *forced;
  } else {
    uint64_t mnk = conv_mnk(g);
    kiln__tune_lookup(ctx, &conv_tune, dt, KILN__LAYOUT_MNK, mnk ? mnk : 1, &chosen);
  }
  *tile = chosen.tile;
  return route_effective(&ctx->info, g, dt, (int)chosen.route, *tile, chunk_samples(ctx, g, dt));
}

/* C = op(A) op(B) (+ C with acc) for batch matrices; offsets, lds and strides in elements. */
typedef struct {
  cl_mem mem;
  uint64_t off, ld, stride;
} gmat;

static kiln_status
gemm(const char *op, kiln_context *ctx, kiln_dtype dt, int ta, int tb, uint64_t m, uint64_t n,
     uint64_t k, gmat a, gmat b, gmat c, uint64_t batch, int acc)
{
  /* CPU devices: kiln's CPU GEMM kernel (docs/blas_fft.md), about 10x CLBlast's there */
  if (kiln__gemm_cpu_form(ctx) && kiln__gemm_large_ok(ctx, dt) && k > 0 && !(ta && tb)) {
    kiln_status s = kiln__gemm_large_views(op, ctx, dt, ta, tb, m, n, k, 1.0, a.mem, a.off, a.ld,
                                           b.mem, b.off, b.ld, acc ? 1.0 : 0.0, c.mem, c.off, c.ld,
                                           0, batch, a.stride, b.stride, c.stride);
    if (s != KILN_ERR_UNSUPPORTED)
      return s;
  }
#if KILN_HAVE_CLBLAST
  if (have_clblast())
    return kiln__clblast_gemm(op, ctx, dt, ta, tb, m, n, k, (kiln_complex128){1.0, 0.0}, a.mem,
                              a.off, a.ld, a.stride, b.mem, b.off, b.ld, b.stride,
                              (kiln_complex128){acc ? 1.0 : 0.0, 0.0}, c.mem, c.off, c.ld, c.stride,
                              batch);
#endif
  cl_kernel kk;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__NN_CONV_SRC, dt, "gemm_batched", &kk));
  kiln__args x = kiln__args_begin(op, kk);
  kiln__args_mem(&x, a.mem);
  kiln__args_u64(&x, a.off);
  kiln__args_u64(&x, a.ld);
  kiln__args_u64(&x, a.stride);
  kiln__args_mem(&x, b.mem);
  kiln__args_u64(&x, b.off);
  kiln__args_u64(&x, b.ld);
  kiln__args_u64(&x, b.stride);
  kiln__args_mem(&x, c.mem);
  kiln__args_u64(&x, c.off);
  kiln__args_u64(&x, c.ld);
  kiln__args_u64(&x, c.stride);
  kiln__args_u64(&x, m);
  kiln__args_u64(&x, n);
  kiln__args_u64(&x, k);
  kiln__args_u64(&x, batch);
  kiln__args_u32(&x, (ta ? 1u : 0u) | (tb ? 2u : 0u) | (acc ? 4u : 0u));
  return kiln__args_launch_1d(&x, ctx, batch * m * n, 0);
}

int kiln__nn_test_gpu_im2col;

static gmat
gm(const kiln_tensor *t, uint64_t off, uint64_t ld, uint64_t stride)
{
  gmat r = {t->mem, kiln__ops_elem_offset(t) + off, ld, stride};
  return r;
}

static gmat
gmem(cl_mem m, uint64_t off, uint64_t ld, uint64_t stride)
{
  gmat r = {m, off, ld, stride};
  return r;
}

static kiln_status
launch_im2col(const char *op, kiln_context *ctx, kiln_dtype dt, const kiln_tensor *x,
              const conv_geo *g, cl_mem col, uint64_t n0, uint64_t nc, int64_t grp, uint32_t tr)
{
  /* CPU devices: a work-item per line of positions (im2col_lines; col2im_lines likewise),
   * kiln__nn_test_gpu_im2col aside. */
  int lines = !ctx->info.is_gpu && !kiln__nn_test_gpu_im2col;
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__NN_CONV_SRC, dt, lines ? "im2col_lines" : "im2col", &k));
  kiln__args a = kiln__args_begin(op, k);
  kiln__args_tensor(&a, x);
  kiln__args_mem(&a, col);
  args_geo(&a, g);
  kiln__args_i64(&a, (int64_t)n0);
  kiln__args_i64(&a, (int64_t)nc);
  kiln__args_i64(&a, grp);
  kiln__args_u32(&a, tr);
  uint64_t rows = nc * (uint64_t)g->cig * g->kvol;
  if (lines)
    return kiln__args_launch_1d(&a, ctx, rows * (uint64_t)(g->out.v[0] * g->out.v[1]), 0);
  return kiln__nn_launch_planes(&a, ctx, g->ovol, rows);
}

/* dw[base + i] (+ dw[base + i] with acc) = the sum over p < nparts of part[p nout + i], in
 * order (the split reductions' partial sums, held in the compute type). */
static kiln_status
launch_sum_parts(const char *op, kiln_context *ctx, kiln_dtype dt, cl_mem part, uint64_t nout,
                 uint64_t nparts, kiln_tensor *dw, uint64_t base, int acc)
{
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__NN_CONV_SRC, dt, "sum_parts", &k));
  kiln__args a = kiln__args_begin(op, k);
  kiln__args_mem(&a, part);
  kiln__args_u64(&a, nout);
  kiln__args_u64(&a, nparts);
  kiln__args_tensor(&a, dw);
  kiln__args_u64(&a, base);
  kiln__args_u32(&a, acc ? 1u : 0u);
  return kiln__args_launch_1d(&a, ctx, nout, 0);
}

/* Route 4's GEMM kernel name built with tile; *ran 0 when the compiled kernel takes fewer
 * than the 256 items a group needs (the caller takes another route). */
static kiln_status
route4_kernel(const char *op, kiln_context *ctx, kiln_dtype dt, uint32_t tile, const char *name,
              cl_kernel *k, int *ran)
{
  KILN_TRY(conv_kernel_tile(op, ctx, dt, tile, name, k));
  size_t kmax = 0;
  *ran = clGetKernelWorkGroupInfo(*k, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax,
                                  NULL) == CL_SUCCESS &&
         kmax >= 256;
  return KILN_OK;
}

/* conv_pack: the tap table of the K rows (kpad of them) into tab and, with mpad > 0, w packed
 * at element pkoff of pk; ch and sd as the GEMM kernel that reads them. conv_pack reads no
 * tile option: the default program's, one build fewer per tile. */
static kiln_status
launch_pack(const char *op, kiln_context *ctx, kiln_dtype dt, const kiln_tensor *w, cl_mem tab,
            cl_mem pk, uint64_t pkoff, const cl_long4 *ch, const kiln__nn_dims *sd,
            const conv_geo *g, int bwd, uint64_t k, uint64_t kpad, uint64_t mpad)
{
  cl_kernel kp;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__NN_CONV_SRC, dt, "conv_pack", &kp));
  kiln__args a = kiln__args_begin(op, kp);
  kiln__args_tensor(&a, w);
  kiln__args_mem(&a, tab);
  kiln__args_mem(&a, pk);
  kiln__args_u64(&a, pkoff);
  kiln__args_raw(&a, sizeof *ch, ch);
  kiln__nn_args_dims(&a, sd);
  kiln__nn_args_dims(&a, &g->k);
  kiln__nn_args_dims(&a, &g->d);
  kiln__args_u32(&a, (uint32_t)bwd);
  kiln__args_u32(&a, (uint32_t)k);
  kiln__args_u32(&a, (uint32_t)kpad);
  kiln__args_u32(&a, (uint32_t)mpad);
  return kiln__args_launch_1d(&a, ctx, kpad + (uint64_t)g->G * kpad * mpad, 0);
}

/* Route 4's grid: groups of 256 items along dimension 0, rows tiles along dimension 1 (capped
 * at 65535: the kernels loop over the rest). */
static kiln_status
launch_route4(const kiln__args *a, kiln_context *ctx, uint64_t groups, uint64_t rows)
{
  size_t global[2] = {(size_t)(groups * 256), (size_t)(rows < 65535 ? rows : 65535)};
  size_t local[2] = {256, 1};
  return kiln__args_enqueue(a, ctx, 2, global, local);
}

/*
 * Route 4 (ctx->lock held): packs the weight and the tap table into a temporary, then runs
 * conv_igemm (bwd 0: y from x) or conv_igemm_bwd (bwd 1: dx from grad, the transposed
 * convolution's bias fused) on src. *ran 0: the compiled kernel takes fewer than the 256
 * items a group needs; nothing was enqueued and the caller takes another route.
 */
static kiln_status
igemm_run(const char *op, kiln_context *ctx, int bwd, uint32_t tile, const kiln_tensor *src,
          const kiln_tensor *w, const kiln_tensor *bias, kiln_tensor *dst, const conv_geo *g,
          int *ran)
{
  kiln_dtype dt = dst->dtype;
  size_t esz = comp_size(dt);
  cl_kernel k;
  KILN_TRY(route4_kernel(op, ctx, dt, tile, bwd ? "conv_igemm_bwd" : "conv_igemm", &k, ran));
  if (!*ran)
    return KILN_OK;
  igemm_dir d = igemm_direction(g, bwd);
  uint64_t tm = igemm_tm(tile), tn = igemm_tn(tile);
  uint64_t kpad = (d.k + 15) / 16 * 16, mtiles = (d.m + tm - 1) / tm, mpad = mtiles * tm;
  /* The tap table (int4 per row) first, the packed operand after it. */
  uint64_t tab_bytes = kpad * 16, pkoff = tab_bytes / esz;
  uint64_t npk = (uint64_t)g->G * kpad * mpad;
  kiln__ops_tmp tmp;
  KILN_TRY(kiln__ops_tmp_alloc(ctx, tab_bytes + npk * esz, &tmp));
  cl_long4 ch = {{g->N, d.csrc, d.cdst, g->G}};
  kiln_status s =
      launch_pack(op, ctx, dt, w, tmp.mem, tmp.mem, pkoff, &ch, &d.sd, g, bwd, d.k, kpad, mpad);
  if (s == KILN_OK) {
    int unit = g->s.v[0] == 1 && g->s.v[1] == 1 && g->s.v[2] == 1;
    uint32_t flags = (bias ? 1u : 0u) | (bwd && unit ? 2u : 0u);
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, src);
    kiln__args_mem(&a, tmp.mem);
    kiln__args_mem(&a, tmp.mem);
    kiln__args_u64(&a, pkoff);
    kiln__args_tensor(&a, bias);
    kiln__args_tensor(&a, dst);
    kiln__args_raw(&a, sizeof ch, &ch);
    kiln__nn_args_dims(&a, &d.cd);
    kiln__nn_args_dims(&a, &d.sd);
    kiln__nn_args_dims(&a, &g->s);
    kiln__nn_args_dims(&a, &g->p);
    kiln__args_u32(&a, flags);
    kiln__args_u32(&a, (uint32_t)kpad);
    kiln__args_u32(&a, (uint32_t)mpad);
    kiln__args_local(&a, tm * 16 * esz);
    kiln__args_local(&a, tn * 16 * esz);
    uint64_t cols = (uint64_t)g->N * d.cv;
    s = launch_route4(&a, ctx, (cols + tn - 1) / tn, mtiles * (uint64_t)g->G);
  }
  kiln__ops_tmp_free(ctx, &tmp);
  return s;
}

/*
 * Route 4's weight gradient (ctx->lock held): conv_pack's forward tap table, then
 * conv_igemm_wgrad into partial sums over nsplit ranges of the N L reduction (enough tiles to
 * fill the device: the product itself is C_out/g x C_in/g kvol, a few tiles), then sum_parts.
 * *ran 0: the compiled kernel takes fewer than 256 items; nothing was enqueued.
 */
static kiln_status
wgrad_run(const char *op, kiln_context *ctx, uint32_t tile, const kiln_tensor *grad,
          const kiln_tensor *x, const conv_geo *g, kiln_tensor *dw, int *ran)
{
  kiln_dtype dt = dw->dtype;
  size_t esz = comp_size(dt);
  cl_kernel k;
  KILN_TRY(route4_kernel(op, ctx, dt, tile, "conv_igemm_wgrad", &k, ran));
  if (!*ran)
    return KILN_OK;
  uint64_t tm = igemm_tm(tile), tn = igemm_tn(tile), M = (uint64_t)g->cog;
  uint64_t J = (uint64_t)g->cig * g->kvol, jpad = (J + 15) / 16 * 16,
           ktot = (uint64_t)g->N * g->ovol;
  uint64_t tiles = (J + tn - 1) / tn * ((M + tm - 1) / tm) * (uint64_t)g->G;
  /* About four tiles per compute unit, each range at least four K slices long. */
  uint64_t want = (4 * (uint64_t)ctx->info.compute_units + tiles - 1) / tiles;
  uint64_t most = (ktot + 63) / 64;
  if (want > most)
    want = most;
  if (want < 1)
    want = 1;
  uint64_t kc = ((ktot + want - 1) / want + 15) / 16 * 16, nsplit = (ktot + kc - 1) / kc;
  uint64_t nout = (uint64_t)g->G * M * J;
  kiln__ops_tmp tab, part;
  KILN_TRY(kiln__ops_tmp_alloc(ctx, jpad * 16, &tab));
  kiln_status s = kiln__ops_tmp_alloc(ctx, nsplit * nout * esz, &part);
  if (s != KILN_OK) {
    kiln__ops_tmp_free(ctx, &tab);
    return s;
  }
  /* The forward's table (dw is not read: no packed operand, mpad 0). */
  cl_long4 chf = geo_channels(g);
  s = launch_pack(op, ctx, dt, dw, tab.mem, tab.mem, 0, &chf, &g->in, g, 0, J, jpad, 0);
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, grad);
    kiln__args_tensor(&a, x);
    kiln__args_mem(&a, tab.mem);
    kiln__args_mem(&a, part.mem);
    kiln__args_raw(&a, sizeof chf, &chf);
    kiln__nn_args_dims(&a, &g->in);
    kiln__nn_args_dims(&a, &g->out);
    kiln__nn_args_dims(&a, &g->s);
    kiln__nn_args_dims(&a, &g->p);
    kiln__args_u32(&a, (uint32_t)J);
    kiln__args_u32(&a, (uint32_t)kc);
    kiln__args_u32(&a, (uint32_t)nsplit);
    kiln__args_local(&a, (tm + 4) * 16 * esz);
    kiln__args_local(&a, (tn + 4) * 16 * esz);
    kiln__args_local(&a, 2 * 16 * sizeof(cl_int4));
    kiln__args_local(&a, 2 * 16 * sizeof(cl_int));
    kiln__args_local(&a, tn * sizeof(cl_int4));
    s = launch_route4(&a, ctx, (J + tn - 1) / tn, (M + tm - 1) / tm * (uint64_t)g->G * nsplit);
  }
  if (s == KILN_OK)
    s = launch_sum_parts(op, ctx, dt, part.mem, nout, nsplit, dw, 0, 0);
  kiln__ops_tmp_free(ctx, &part);
  kiln__ops_tmp_free(ctx, &tab);
  return s;
}

/* ---------------------------------------------------------------- passes */

/* The three passes of a convolution: the forward (y from x and w; also the tuner's), the
 * backward-data (dx from grad and w; also the transposed convolution's forward) and the
 * weight gradient (dw from grad and x). */
enum { PASS_FORWARD = 0, PASS_DATA = 1, PASS_WEIGHT = 2 };

/* The im2col GEMM where CLBlast runs it and one sample's columns fit, else the direct
 * kernels: where route 4 or 3 cannot serve. */
static int
fallback_route(kiln_context *ctx, const conv_geo *g, kiln_dtype dt)
{
  return have_clblast() && !kiln__dtype_is_half(dt) && chunk_samples(ctx, g, dt) > 0 ? ROUTE_GEMM
                                                                                     : ROUTE_DIRECT;
}

/* Samples in the chunk of at most nc that starts at sample n0. */
static uint64_t
chunk_len(const conv_geo *g, uint64_t n0, uint64_t nc)
{
  return (uint64_t)g->N - n0 < nc ? (uint64_t)g->N - n0 : nc;
}

/* Group grp's weight as a GEMM operand: [C_out/g, C_in/g kvol]. */
static gmat
w_group(const kiln_tensor *w, const conv_geo *g, int64_t grp)
{
  uint64_t kg = (uint64_t)g->cig * g->kvol;
  return gm(w, (uint64_t)grp * (uint64_t)g->cog * kg, kg, 0);
}

/* Group grp's channels of an output-shaped tensor (y or grad) from sample n0 on: one
 * [C_out/g, L] matrix per sample. */
static gmat
y_group(const kiln_tensor *t, const conv_geo *g, uint64_t n0, int64_t grp)
{
  return gm(t, (n0 * (uint64_t)g->Cout + (uint64_t)grp * (uint64_t)g->cog) * g->ovol, g->ovol,
            (uint64_t)g->Cout * g->ovol);
}

/* Route 1 (ctx->lock held): one work-item per element of dst. The forward and backward-data
 * kernels take the bias (per output, respectively input, channel), the weight gradient's
 * none. */
static kiln_status
direct_run(const char *op, kiln_context *ctx, int pass, const kiln_tensor *a, const kiln_tensor *b,
           const kiln_tensor *bias, const conv_geo *g, kiln_tensor *dst)
{
  static const char *const names[3] = {"conv_fwd", "conv_bwd_data", "conv_bwd_weight"};
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__NN_CONV_SRC, dst->dtype, names[pass], &k));
  kiln__args args = kiln__args_begin(op, k);
  kiln__args_tensor(&args, a);
  kiln__args_tensor(&args, b);
  if (pass != PASS_WEIGHT)
    kiln__args_tensor(&args, bias);
  kiln__args_tensor(&args, dst);
  args_geo(&args, g);
  if (pass == PASS_WEIGHT)
    return kiln__args_launch_1d(&args, ctx, dst->numel, 0);
  kiln__args_u32(&args, bias ? 1u : 0u);
  if (pass == PASS_DATA)
    return kiln__nn_launch_planes(&args, ctx, g->ivol, (uint64_t)g->N * (uint64_t)g->Cin);
  return kiln__nn_launch_planes(&args, ctx, g->ovol, (uint64_t)g->N * (uint64_t)g->Cout);
}

/* The im2col route's forward: columns of nc samples at a time, one batched GEMM per group. */
static kiln_status
im2col_forward(const char *op, kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *w,
               const conv_geo *g, kiln_tensor *y, uint64_t nc, uint64_t kg)
{
  kiln_dtype dt = x->dtype;
  kiln__ops_tmp col;
  KILN_TRY(kiln__ops_tmp_alloc(ctx, nc * kg * g->ovol * kiln_dtype_size(dt), &col));
  kiln_status s = KILN_OK;
  for (uint64_t n0 = 0; s == KILN_OK && n0 < (uint64_t)g->N; n0 += nc) {
    uint64_t m = chunk_len(g, n0, nc);
    for (int64_t grp = 0; s == KILN_OK && grp < g->G; grp++) {
      s = launch_im2col(op, ctx, dt, x, g, col.mem, n0, m, grp, 0);
      if (s == KILN_OK)
        s = gemm(op, ctx, dt, 0, 0, (uint64_t)g->cog, g->ovol, kg, w_group(w, g, grp),
                 gmem(col.mem, 0, g->ovol, kg * g->ovol), y_group(y, g, n0, grp), m, 0);
    }
  }
  kiln__ops_tmp_free(ctx, &col);
  return s;
}

/* Routes 2 and 3's forward (ctx->lock held): y = conv(x, w), then the bias. */
static kiln_status
forward_gemm(const char *op, kiln_context *ctx, int route, const kiln_tensor *x,
             const kiln_tensor *w, const kiln_tensor *bias, const conv_geo *g, kiln_tensor *y)
{
  kiln_dtype dt = x->dtype;
  uint64_t nc = chunk_samples(ctx, g, dt), kg = (uint64_t)g->cig * g->kvol;
  kiln_status s = KILN_OK;
  if (route == ROUTE_CONVGEMM) {
#if KILN_HAVE_CLBLAST
    /* Chunked like the im2col route: CLBlast may build the columns internally. */
    for (uint64_t n0 = 0; s == KILN_OK && n0 < (uint64_t)g->N; n0 += nc) {
      uint64_t m = chunk_len(g, n0, nc);
      s = kiln__clblast_convgemm(
          op, ctx, dt, (size_t)g->Cin, (size_t)g->in.v[1], (size_t)g->in.v[2], (size_t)g->k.v[1],
          (size_t)g->k.v[2], (size_t)g->p.v[1], (size_t)g->p.v[2], (size_t)g->s.v[1],
          (size_t)g->s.v[2], (size_t)g->d.v[1], (size_t)g->d.v[2], (size_t)g->Cout, m, x->mem,
          kiln__ops_elem_offset(x) + n0 * (uint64_t)g->Cin * g->ivol, w->mem,
          kiln__ops_elem_offset(w), y->mem,
          kiln__ops_elem_offset(y) + n0 * (uint64_t)g->Cout * g->ovol);
    }
#else
    s = kiln__fail(KILN_ERR_INTERNAL, op, 0, "convgemm route taken without CLBlast");
#endif
  } else {
    s = im2col_forward(op, ctx, x, w, g, y, nc, kg);
  }
  if (s == KILN_OK && bias) {
    cl_kernel k;
    KILN_TRY(kiln__ops_kernel(op, ctx, KILN__NN_CONV_SRC, dt, "bias_add", &k));
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, y);
    kiln__args_tensor(&a, bias);
    kiln__args_u64(&a, (uint64_t)g->N);
    kiln__args_u64(&a, (uint64_t)g->Cout);
    kiln__args_u64(&a, g->ovol);
    s = kiln__nn_launch_planes(&a, ctx, g->ovol, (uint64_t)g->N * (uint64_t)g->Cout);
  }
  return s;
}

/* Route 2's backward-data (ctx->lock held): per chunk and group the transposed GEMM into
 * columns, then col2im gathers them into dx (plus bias per input channel). */
static kiln_status
data_gemm(const char *op, kiln_context *ctx, const kiln_tensor *grad, const kiln_tensor *w,
          const kiln_tensor *bias, const conv_geo *g, kiln_tensor *dx)
{
  kiln_dtype dt = dx->dtype;
  uint64_t nc = chunk_samples(ctx, g, dt), kg = (uint64_t)g->cig * g->kvol;
  kiln__ops_tmp col;
  KILN_TRY(kiln__ops_tmp_alloc(ctx, nc * kg * g->ovol * kiln_dtype_size(dt), &col));
  cl_kernel k;
  int lines = !ctx->info.is_gpu && !kiln__nn_test_gpu_im2col;
  kiln_status s =
      kiln__ops_kernel(op, ctx, KILN__NN_CONV_SRC, dt, lines ? "col2im_lines" : "col2im", &k);
  for (uint64_t n0 = 0; s == KILN_OK && n0 < (uint64_t)g->N; n0 += nc) {
    uint64_t m = chunk_len(g, n0, nc);
    for (int64_t grp = 0; s == KILN_OK && grp < g->G; grp++) {
      s = gemm(op, ctx, dt, 1, 0, kg, g->ovol, (uint64_t)g->cog, w_group(w, g, grp),
               y_group(grad, g, n0, grp), gmem(col.mem, 0, g->ovol, kg * g->ovol), m, 0);
      if (s != KILN_OK)
        break;
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_mem(&a, col.mem);
      kiln__args_tensor(&a, dx);
      kiln__args_tensor(&a, bias);
      args_geo(&a, g);
      kiln__args_i64(&a, (int64_t)n0);
      kiln__args_i64(&a, (int64_t)m);
      kiln__args_i64(&a, grp);
      kiln__args_u32(&a, bias ? 1u : 0u);
      if (lines)
        s = kiln__args_launch_1d(&a, ctx,
                                 m * (uint64_t)g->cig * (uint64_t)(g->in.v[0] * g->in.v[1]), 0);
      else
        s = kiln__nn_launch_planes(&a, ctx, g->ivol, m * (uint64_t)g->cig);
    }
  }
  kiln__ops_tmp_free(ctx, &col);
  return s;
}

/*
 * dW_g [C_out/g, K] (+ dW_g with acc) = gy [C_out/g, m L] x col [K, m L]^T for m samples'
 * columns. The product is small next to its reduction (64 x 576 against 200704 for a ResNet
 * layer: a handful of GEMM tiles for a whole GPU), so the samples are split into groups, one
 * GEMM of the batch per group into partial sums (the remainder samples one more), and
 * sum_parts adds them in order: deterministic, and enough tiles to fill the device.
 */
static kiln_status
weight_gemm(const char *op, kiln_context *ctx, kiln_dtype dt, const conv_geo *g, cl_mem gy,
            cl_mem col, uint64_t m, kiln_tensor *dw, int64_t grp, int acc)
{
  uint64_t cog = (uint64_t)g->cog, kg = (uint64_t)g->cig * g->kvol, L = g->ovol, ld = m * L;
  uint64_t tiles = ((cog + 63) / 64) * ((kg + 63) / 64);
  uint64_t want = 2 * (uint64_t)ctx->info.compute_units / tiles;
  if (want > m)
    want = m;
  if (want <= 1)
    return gemm(op, ctx, dt, 0, 1, cog, kg, ld, gmem(gy, 0, ld, 0), gmem(col, 0, ld, 0),
                gm(dw, (uint64_t)grp * cog * kg, kg, 0), 1, acc);
  uint64_t spl = (m + want - 1) / want, full = m / spl, rem = m - full * spl;
  uint64_t nparts = full + (rem ? 1 : 0), nout = cog * kg;
  kiln__ops_tmp part;
  KILN_TRY(kiln__ops_tmp_alloc(ctx, nparts * nout * kiln_dtype_size(dt), &part));
  kiln_status s = gemm(op, ctx, dt, 0, 1, cog, kg, spl * L, gmem(gy, 0, ld, spl * L),
                       gmem(col, 0, ld, spl * L), gmem(part.mem, 0, kg, nout), full, 0);
  if (s == KILN_OK && rem)
    s = gemm(op, ctx, dt, 0, 1, cog, kg, rem * L, gmem(gy, full * spl * L, ld, 0),
             gmem(col, full * spl * L, ld, 0), gmem(part.mem, full * nout, kg, 0), 1, 0);
  if (s == KILN_OK)
    s = launch_sum_parts(op, ctx, dt, part.mem, nout, nparts, dw, (uint64_t)grp * nout, acc);
  kiln__ops_tmp_free(ctx, &part);
  return s;
}

/* Route 2's weight gradient (ctx->lock held); the direct kernel where not even one sample's
 * columns and gradient rows fit. */
static kiln_status
wgrad_gemm(const char *op, kiln_context *ctx, const kiln_tensor *grad, const kiln_tensor *x,
           const conv_geo *g, kiln_tensor *dw)
{
  kiln_dtype dt = dw->dtype;
  uint64_t cog = (uint64_t)g->cog, kg = (uint64_t)g->cig * g->kvol;
  uint64_t nc = chunk_rows(ctx, g, dt, kg + cog);
  if (nc == 0)
    return direct_run(op, ctx, PASS_WEIGHT, grad, x, NULL, g, dw);
  /* Per chunk and group one GEMM over all its samples' positions:
   * dW_g [C_out/g, K] (+)= grad_g [C_out/g, nc L] x col [K, nc L]^T, the chunks accumulating
   * in order (deterministic). */
  kiln__ops_tmp col, gy;
  KILN_TRY(kiln__ops_tmp_alloc(ctx, nc * kg * g->ovol * kiln_dtype_size(dt), &col));
  kiln_status s = kiln__ops_tmp_alloc(ctx, nc * cog * g->ovol * kiln_dtype_size(dt), &gy);
  if (s != KILN_OK) {
    kiln__ops_tmp_free(ctx, &col);
    return s;
  }
  cl_kernel k;
  s = kiln__ops_kernel(op, ctx, KILN__NN_CONV_SRC, dt, "grad_rows", &k);
  const cl_long4 ch = geo_channels(g);
  for (uint64_t n0 = 0; s == KILN_OK && n0 < (uint64_t)g->N; n0 += nc) {
    uint64_t m = chunk_len(g, n0, nc);
    for (int64_t grp = 0; s == KILN_OK && grp < g->G; grp++) {
      s = launch_im2col(op, ctx, dt, x, g, col.mem, n0, m, grp, 1);
      if (s != KILN_OK)
        break;
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, grad);
      kiln__args_mem(&a, gy.mem);
      kiln__args_raw(&a, sizeof ch, &ch);
      kiln__nn_args_dims(&a, &g->out);
      kiln__args_i64(&a, (int64_t)n0);
      kiln__args_i64(&a, (int64_t)m);
      kiln__args_i64(&a, grp);
      s = kiln__nn_launch_planes(&a, ctx, g->ovol, m * cog);
      if (s == KILN_OK)
        s = weight_gemm(op, ctx, dt, g, gy.mem, col.mem, m, dw, grp, n0 > 0);
    }
  }
  kiln__ops_tmp_free(ctx, &gy);
  kiln__ops_tmp_free(ctx, &col);
  return s;
}

/*
 * One pass of g (ctx->lock held) on the route asked for: forward, dst = y from a = x, b = w
 * (+ bias per output channel); data, dst = dx from a = grad, b = w (+ bias per input channel:
 * the transposed convolution's); weight, dst = dw from a = grad, b = x. Route 4 falls back to
 * fallback_route where its kernel cannot take 256 items; convgemm serves the forward only.
 */
static kiln_status
pass_run(const char *op, kiln_context *ctx, int pass, int route, uint32_t tile,
         const kiln_tensor *a, const kiln_tensor *b, const kiln_tensor *bias, const conv_geo *g,
         kiln_tensor *dst)
{
  kiln_dtype dt = dst->dtype;
  if (dst->numel == 0)
    return KILN_OK;
  if (route == ROUTE_CONVGEMM && pass != PASS_FORWARD)
    route = fallback_route(ctx, g, dt);
  if (route == ROUTE_IGEMM) {
    int ran;
    uint32_t t = resolve_tile(&ctx->info, g, dt, tile, pass == PASS_WEIGHT);
    if (pass == PASS_WEIGHT)
      KILN_TRY(wgrad_run(op, ctx, t, a, b, g, dst, &ran));
    else
      KILN_TRY(igemm_run(op, ctx, pass == PASS_DATA, t, a, b, bias, dst, g, &ran));
    if (ran)
      return KILN_OK;
    route = fallback_route(ctx, g, dt);
  }
  if (route == ROUTE_DIRECT)
    return direct_run(op, ctx, pass, a, b, bias, g, dst);
  if (pass == PASS_FORWARD)
    return forward_gemm(op, ctx, route, a, b, bias, g, dst);
  if (pass == PASS_DATA)
    return data_gemm(op, ctx, a, b, bias, g, dst);
  return wgrad_gemm(op, ctx, a, b, g, dst);
}

/* ---------------------------------------------------------------- entry points */

static kiln_status
check_weight_bias(const char *op, kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *w,
                  const kiln_tensor *bias)
{
  KILN_RETURN_IF(!w, KILN_ERR_INVALID_HANDLE, op, "weight is NULL");
  KILN_TRY(kiln__tensor_check(op, w, ctx));
  KILN_RETURN_IF(w->dtype != x->dtype, KILN_ERR_DTYPE, op, "weight is %s, expected %s",
                 kiln_dtype_name(w->dtype), kiln_dtype_name(x->dtype));
  if (bias) {
    KILN_TRY(kiln__tensor_check(op, bias, ctx));
    KILN_RETURN_IF(bias->dtype != x->dtype, KILN_ERR_DTYPE, op, "bias is %s, expected %s",
                   kiln_dtype_name(bias->dtype), kiln_dtype_name(x->dtype));
  }
  return KILN_OK;
}

/* kiln_conv (transposed 0) and kiln_conv_transpose (1: the backward-data pass of the
 * convolution whose weight w is), on a forced route and tile (NULL: look them up). */
static kiln_status
conv_one(const char *op, kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *w,
         const kiln_tensor *bias, const kiln_conv_desc *desc, int transposed,
         const conv_choice *forced, kiln_tensor **out)
{
  KILN_TRY(kiln__nn_conv_check_input(op, ctx, x, out));
  KILN_TRY(check_weight_bias(op, ctx, x, w, bias));
  conv_geo g;
  KILN_TRY(conv_geometry(op, x, w, desc, transposed, &g));
  if (bias)
    KILN_TRY(kiln__nn_conv_check_tensor(op, ctx, bias, x->dtype, &g.b_shape, "bias"));
  uint32_t tile;
  int route = conv_route(ctx, &g, x->dtype, forced, &tile);
  const kiln_tensor *ins[3] = {x, w, bias};
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, transposed ? &g.x_shape : &g.y_shape, out, ins, 3,
                               0, &t));
  kiln__ctx_lock(ctx);
  kiln_status s =
      pass_run(op, ctx, transposed ? PASS_DATA : PASS_FORWARD, route, tile, x, w, bias, &g, t.dst);
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_conv(kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *weight,
          const kiln_tensor *bias, const kiln_conv_desc *desc, kiln_tensor **out)
{
  return conv_one("kiln_conv", ctx, x, weight, bias, desc, 0, NULL, out);
}

kiln_status
kiln_conv_transpose(kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *weight,
                    const kiln_tensor *bias, const kiln_conv_desc *desc, kiln_tensor **out)
{
  return conv_one("kiln_conv_transpose", ctx, x, weight, bias, desc, 1, NULL, out);
}

static kiln_status
bias_grad_run(const char *op, kiln_context *ctx, const kiln_tensor *grad, const conv_geo *g,
              kiln_tensor *db)
{
  if (g->Cout == 0)
    return KILN_OK;
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__NN_CONV_SRC, db->dtype, "bias_grad", &k));
  size_t local = kiln__launch_pow2_local(ctx, k);
  uint64_t groups = (uint64_t)g->Cout < 65536 ? (uint64_t)g->Cout : 65536;
  kiln__args a = kiln__args_begin(op, k);
  kiln__args_tensor(&a, grad);
  kiln__args_tensor(&a, db);
  kiln__args_u64(&a, (uint64_t)g->N);
  kiln__args_u64(&a, (uint64_t)g->Cout);
  kiln__args_u64(&a, g->ovol);
  kiln__args_local(&a, local * comp_size(db->dtype));
  return kiln__args_enqueue_1d(&a, ctx, (size_t)groups * local, local);
}

kiln_status
kiln_conv_backward(kiln_context *ctx, const kiln_tensor *grad, const kiln_tensor *x,
                   const kiln_tensor *weight, const kiln_conv_desc *desc, kiln_tensor **grad_x,
                   kiln_tensor **grad_weight, kiln_tensor **grad_bias)
{
  const char *op = "kiln_conv_backward";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_RETURN_IF(!(KILN__NN_CONV_DTYPES & KILN__DT_BIT(x->dtype)), KILN_ERR_DTYPE, op,
                 "dtype %s is not accepted (f16, bf16, f32 or f64)", kiln_dtype_name(x->dtype));
  KILN_TRY(check_weight_bias(op, ctx, x, weight, NULL));
  conv_geo g;
  KILN_TRY(conv_geometry(op, x, weight, desc, 0, &g));
  KILN_TRY(kiln__nn_conv_check_tensor(op, ctx, grad, x->dtype, &g.y_shape, "grad"));
  kiln_tensor *given[3] = {NULL, NULL, NULL};
  kiln_tensor **outs[3] = {grad_x, grad_weight, grad_bias};
  for (int i = 0; i < 3; i++)
    if (outs[i] && *outs[i]) {
      KILN_TRY(kiln__tensor_check(op, *outs[i], ctx));
      given[i] = *outs[i];
    }
  static const char *const names[3] = {"grad_x", "grad_weight", "grad_bias"};
  KILN_TRY(kiln__ops_outputs_disjoint(op, given, names, 3));
  uint32_t tile;
  int route = conv_route(ctx, &g, x->dtype, NULL, &tile);
  const kiln__shape *shapes[3] = {&g.x_shape, &g.w_shape, &g.b_shape};
  const kiln_tensor *ins[3] = {grad, x, weight};
  kiln__out_target t[3];
  int begun = 0;
  kiln_status s = KILN_OK;
  for (; begun < 3 && s == KILN_OK; begun++)
    if (outs[begun])
      s = kiln__ops_out_begin(op, ctx, x->dtype, shapes[begun], outs[begun], ins, 3, 0, &t[begun]);
  if (s != KILN_OK)
    begun--; /* the failed one unwound itself */
  kiln__ctx_lock(ctx);
  if (s == KILN_OK && grad_x)
    s = pass_run(op, ctx, PASS_DATA, route, tile, grad, weight, NULL, &g, t[0].dst);
  if (s == KILN_OK && grad_weight)
    s = pass_run(op, ctx, PASS_WEIGHT, route, tile, grad, x, NULL, &g, t[1].dst);
  if (s == KILN_OK && grad_bias)
    s = bias_grad_run(op, ctx, grad, &g, t[2].dst);
  for (int i = 0; i < begun; i++)
    if (outs[i])
      s = kiln__ops_out_finish(op, ctx, &t[i], s);
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---------------------------------------------------------------- the conv tuner family */

#define N_(a) (sizeof(a) / sizeof((a)[0]))
#define P2(k) ((uint64_t)1 << (k))

static const uint64_t conv_routes[] = {ROUTE_DIRECT, ROUTE_GEMM, ROUTE_CONVGEMM, ROUTE_IGEMM};
static const uint64_t conv_tile_ids[] = {1, 2, 3, 4};

static const struct kiln__tune_param conv_params[] = {
    {.name = "route",
     .offset = offsetof(conv_choice, route),
     .size = sizeof(uint32_t),
     .min = ROUTE_RULE,
     .max = ROUTE_IGEMM,
     .full = conv_routes,
     .nfull = N_(conv_routes),
     .quick = conv_routes,
     .nquick = N_(conv_routes)},
    {.name = "tile",
     .offset = offsetof(conv_choice, tile),
     .size = sizeof(uint32_t),
     .min = 0,
     .max = IGEMM_NTILES,
     .full = conv_tile_ids,
     .nfull = N_(conv_tile_ids),
     .quick = conv_tile_ids,
     .nquick = N_(conv_tile_ids)},
};

static const uint64_t conv_sizes[] = {P2(14), P2(16), P2(18), P2(20), P2(22), P2(24), P2(26)};

static int
conv_dtype_ok(kiln_dtype d)
{
  return d == KILN_F32 || d == KILN_F64 || d == KILN_F16 || d == KILN_BF16;
}

static void
conv_defaults(const kiln_context *ctx, kiln_dtype dtype, int layout, int log2n, void *params)
{
  (void)log2n;
  (void)ctx;
  (void)dtype;
  (void)layout;
  conv_choice c = {ROUTE_RULE, 0};
  memcpy(params, &c, sizeof c);
}

/*
 * A 3x3 convolution, padding 1, x [n, c, h, h] and w [c, c, 3, 3], with n * c * c * 9 * h * h
 * about 2^k: c = 2^((k - 3) / 3) up to 64, then h up to 64, then the batch (the shapes of a
 * ResNet stage: large buckets are many images of a middling layer, not one huge image).
 */
static kiln_status
conv_tune_setup(struct kiln__tune_problem *pb)
{
  int e = pb->k > 3 ? pb->k - 3 : 0;
  int ce = e / 3 < 6 ? e / 3 : 6;
  int he = (e - 2 * ce + 1) / 2;
  he = he < 0 ? 0 : he > 6 ? 6 : he;
  int ne = e - 2 * ce - 2 * he > 0 ? e - 2 * ce - 2 * he : 0;
  int64_t c = (int64_t)1 << ce, h = (int64_t)1 << he, n = (int64_t)1 << ne;
  int64_t xs[4] = {n, c, h, h}, ws[4] = {c, c, 3, 3};
  pb->ndim = 2;
  pb->shape[0] = c;
  pb->shape[1] = h * h;
  snprintf(pb->desc, sizeof pb->desc, "[%lld,%lld,%lld,%lld]*[%lld,%lld,3,3]", (long long)n,
           (long long)c, (long long)h, (long long)h, (long long)c, (long long)c);
  kiln_status s = kiln__tune_input(pb->ctx, pb->dtype, 4, xs, 12345u, &pb->in[0]);
  if (s == KILN_OK)
    s = kiln__tune_input(pb->ctx, pb->dtype, 4, ws, 12345u + 7919u, &pb->in[1]);
  return s;
}

static kiln_status
conv_tune_run(struct kiln__tune_problem *pb, const void *params)
{
  kiln_conv_desc d;
  memset(&d, 0, sizeof d);
  d.nd = 2;
  d.padding[0] = d.padding[1] = 1;
  conv_choice c;
  memcpy(&c, params, sizeof c);
  return conv_one("kiln_conv", pb->ctx, pb->in[0], pb->in[1], NULL, &d, 0, &c, &pb->out);
}

/* Two candidates that become the same route (and, for route 4, tile) on pb's problem run the
 * same code. */
static int
conv_same_run(const struct kiln__tune_problem *pb, const void *a, const void *b)
{
  conv_geo g;
  memset(&g, 0, sizeof g);
  g.N = 1;
  g.G = 1;
  g.cig = g.cog = g.Cin = g.Cout = pb->shape[0];
  for (int i = 0; i < 3; i++)
    g.in.v[i] = g.out.v[i] = g.k.v[i] = g.s.v[i] = g.d.v[i] = 1;
  g.k.v[1] = g.k.v[2] = 3;
  g.kvol = 9;
  conv_choice ca, cb;
  memcpy(&ca, a, sizeof ca);
  memcpy(&cb, b, sizeof cb);
  int ra = route_effective(&pb->ctx->info, &g, pb->dtype, (int)ca.route, ca.tile, 1);
  int rb = route_effective(&pb->ctx->info, &g, pb->dtype, (int)cb.route, cb.tile, 1);
  return ra == rb &&
         (ra != ROUTE_IGEMM || resolve_tile(&pb->ctx->info, &g, pb->dtype, ca.tile, 0) ==
                                   resolve_tile(&pb->ctx->info, &g, pb->dtype, cb.tile, 0));
}

static double
conv_tune_bytes(const struct kiln__tune_problem *pb)
{
  return (double)(kiln_tensor_nbytes(pb->in[0]) + kiln_tensor_nbytes(pb->in[1]) +
                  kiln_tensor_nbytes(pb->out));
}

static const struct kiln__tune_family conv_tune = {
    .name = "conv",
    .description = "convolution route (direct, im2col + GEMM, convgemm, implicit GEMM) and the "
                   "implicit GEMM's tile, timed on a 3x3 convolution",
    .params_size = sizeof(conv_choice),
    .params = conv_params,
    .nparams = N_(conv_params),
    .layouts = 1u << KILN__LAYOUT_MNK,
    .layout_names = "mnk",
    .ninputs = 2,
    .float_sum = 1,
    .wall_clock = 1,
    .dtype_ok = conv_dtype_ok,
    .defaults = conv_defaults,
    .run = conv_tune_run,
    .bytes = conv_tune_bytes,
    .setup = conv_tune_setup,
    .same_run = conv_same_run,
    .sizes = conv_sizes,
    .nsizes = N_(conv_sizes),
};

/* ---------------------------------------------------------------- family */

static const struct kiln__source nn_conv_sources[] = {{KILN__NN_CONV_SRC, KILN__NN_CONV_DTYPES},
                                                      {KILN__NN_POOL_SRC, KILN__NN_CONV_DTYPES},
                                                      {NULL, 0}};

const struct kiln__family kiln__nn_conv_family = {.name = "nn_conv",
                                                  .sources = nn_conv_sources,
                                                  .build_options = nn_conv_build_options,
                                                  .tune = &conv_tune};
