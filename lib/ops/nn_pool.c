/*
 * nn_conv family, pooling (cl_kernels/nn_pool.cl): max pooling with indices, average pooling,
 * adaptive average pooling, and their backward passes. The last nd axes are the spatial
 * ones, everything before them one flat batch of planes.
 */
#include <string.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "core/shape.h"
#include "kiln/nn_conv.h"
#include "ops/nn_conv_internal.h"
#include "runtime/runtime.h"

/* Flags of pool_fwd. */
enum { POOL_MAX = 1, POOL_IDX = 2, POOL_INCLUDE_PAD = 4 };

/* A pooling's geometry: planes of the in volume, pooled to out. */
typedef struct {
  uint64_t planes;
  kiln__nn_dims in, out, k, s, p, d;
  kiln__shape out_shape;
} pool_geo;

static uint64_t
vol(const kiln__nn_dims *d)
{
  return (uint64_t)d->v[0] * (uint64_t)d->v[1] * (uint64_t)d->v[2];
}

/* Leading axes and spatial sizes of x for nd spatial axes (1-D and 2-D padded with 1s). */
static kiln_status
planes_of(const char *op, const kiln_tensor *x, int64_t nd, pool_geo *g)
{
  KILN_RETURN_IF(nd < 1 || nd > 3, KILN_ERR_INVALID_ARGUMENT, op, "nd %lld: 1, 2 or 3 spatial axes",
                 (long long)nd);
  KILN_RETURN_IF((int64_t)x->shape.ndim < nd, KILN_ERR_SHAPE, op,
                 "the input has %zu axes, fewer than the %lld spatial ones", x->shape.ndim,
                 (long long)nd);
  memset(g, 0, sizeof *g);
  size_t lead = x->shape.ndim - (size_t)nd;
  g->planes = 1;
  for (size_t i = 0; i < lead; i++)
    g->planes *= (uint64_t)x->shape.dims[i];
  for (int i = 0; i < 3; i++) {
    g->in.v[i] = g->out.v[i] = g->k.v[i] = g->s.v[i] = g->d.v[i] = 1;
    g->p.v[i] = 0;
  }
  for (int64_t i = 0; i < nd; i++)
    g->in.v[3 - nd + i] = x->shape.dims[lead + (size_t)i];
  g->out_shape = x->shape;
  return KILN_OK;
}

static kiln_status
pool_geometry(const char *op, const kiln_tensor *x, const kiln_pool_desc *desc, int max,
              pool_geo *g)
{
  KILN_RETURN_IF(!desc, KILN_ERR_INVALID_HANDLE, op, "desc is NULL");
  KILN_TRY(planes_of(op, x, desc->nd, g));
  int64_t nd = desc->nd;
  size_t lead = x->shape.ndim - (size_t)nd;
  for (int64_t i = 0; i < nd; i++) {
    int64_t k = desc->kernel[i], s = desc->stride[i] ? desc->stride[i] : k, p = desc->padding[i];
    int64_t d = desc->dilation[i] ? desc->dilation[i] : 1, in = g->in.v[3 - nd + i];
    KILN_RETURN_IF(k < 1 || s < 1 || d < 1, KILN_ERR_INVALID_ARGUMENT, op,
                   "axis %lld: kernel %lld, stride %lld and dilation %lld must be >= 1",
                   (long long)i, (long long)k, (long long)s, (long long)d);
    KILN_RETURN_IF(!max && d != 1, KILN_ERR_INVALID_ARGUMENT, op,
                   "axis %lld: average pooling has no dilation (%lld)", (long long)i, (long long)d);
    KILN_RETURN_IF(k > ((int64_t)1 << 31) || s > ((int64_t)1 << 31) || d > ((int64_t)1 << 31),
                   KILN_ERR_OVERFLOW, op, "axis %lld: window parameters above 2^31", (long long)i);
    int64_t eff = d * (k - 1) + 1;
    int64_t limit = max ? eff / 2 : k / 2;
    KILN_RETURN_IF(p < 0 || p > limit, KILN_ERR_INVALID_ARGUMENT, op,
                   "axis %lld: padding %lld must be in [0, %lld] (half the %skernel)",
                   (long long)i, (long long)p, (long long)limit, max ? "dilated " : "");
    int64_t span = in + 2 * p - eff;
    KILN_RETURN_IF(span < 0, KILN_ERR_SHAPE, op,
                   "axis %lld: input size %lld with padding %lld is smaller than the window %lld",
                   (long long)i, (long long)in, (long long)p, (long long)eff);
    int64_t o = (desc->ceil_mode ? (span + s - 1) / s : span / s) + 1;
    /* The last window must start inside the input or the left padding (PyTorch). */
    if (desc->ceil_mode && (o - 1) * s >= in + p)
      o--;
    g->out.v[3 - nd + i] = o;
    g->k.v[3 - nd + i] = k;
    g->s.v[3 - nd + i] = s;
    g->p.v[3 - nd + i] = p;
    g->d.v[3 - nd + i] = d;
    g->out_shape.dims[lead + (size_t)i] = o;
  }
  KILN_TRY(kiln__nn_check_volume(op, vol(&g->in), "input"));
  return kiln__nn_check_volume(op, vol(&g->out), "output");
}

static void
args_geo(kiln__args *a, const pool_geo *g, int with_window)
{
  kiln__args_u64(a, g->planes);
  kiln__nn_args_dims(a, &g->in);
  kiln__nn_args_dims(a, &g->out);
  if (with_window) {
    kiln__nn_args_dims(a, &g->k);
    kiln__nn_args_dims(a, &g->s);
    kiln__nn_args_dims(a, &g->p);
  }
}

/*
 * Whether the windows tile the input (pool_tiled of nn_pool.cl): at most two spatial axes
 * (depth 1), stride = window, no padding or dilation, the last window inside the input, and
 * fewer than 2^32 outputs and input elements.
 */
static int
pool_tiles(const pool_geo *g)
{
  if (g->in.v[0] != 1 || g->k.v[0] != 1 || g->planes * vol(&g->in) >= ((uint64_t)1 << 32))
    return 0;
  for (int i = 1; i < 3; i++)
    if (g->k.v[i] != g->s.v[i] || g->p.v[i] || g->d.v[i] != 1 ||
        g->out.v[i] * g->k.v[i] > g->in.v[i])
      return 0;
  return 1;
}

int kiln__nn_test_gpu_pool;

/* Whether ctx takes the CPU forms (a work-item per row: pool_tiled_rows, pool_max_s2_rows,
 * pool_bwd_rows); kiln__nn_test_gpu_pool keeps the GPUs' kernels tested on CPU devices. */
static int
cpu_rows(const kiln_context *ctx)
{
  return !ctx->info.is_gpu && !kiln__nn_test_gpu_pool;
}

/* The tiled kernels' 32-bit geometry (pool_tiles bounds it): count, ih, iw, oh, ow, kh, kw. */
static void
args_tiled(kiln__args *a, const pool_geo *g, uint64_t count)
{
  kiln__args_u32(a, (uint32_t)count);
  kiln__args_u32(a, (uint32_t)g->in.v[1]);
  kiln__args_u32(a, (uint32_t)g->in.v[2]);
  kiln__args_u32(a, (uint32_t)g->out.v[1]);
  kiln__args_u32(a, (uint32_t)g->out.v[2]);
  kiln__args_u32(a, (uint32_t)g->k.v[1]);
  kiln__args_u32(a, (uint32_t)g->k.v[2]);
}

/* The tiled forward (ctx->lock held). */
static kiln_status
pool_tiled_launch(const char *op, kiln_context *ctx, const kiln_tensor *x, kiln_tensor *y,
                  kiln_tensor *ix, const pool_geo *g, uint32_t flags)
{
  /* CPU devices: a work-item per output row (pool_tiled_rows). */
  int rows = cpu_rows(ctx);
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__NN_POOL_SRC, x->dtype,
                            rows ? "pool_tiled_rows" : "pool_tiled", &k));
  uint64_t total = g->planes * vol(&g->out);
  kiln__args a = kiln__args_begin(op, k);
  kiln__args_tensor(&a, x);
  kiln__args_tensor(&a, y);
  kiln__args_tensor(&a, ix);
  args_tiled(&a, g, total);
  kiln__args_u32(&a, flags);
  return kiln__args_launch_1d(&a, ctx, rows ? total / (uint64_t)g->out.v[2] : total, 0);
}

/* Forward of max (with optional indices) or average pooling. */
static kiln_status
pool_forward(const char *op, kiln_context *ctx, const kiln_tensor *x, const kiln_pool_desc *desc,
             int max, kiln_tensor **out, kiln_tensor **indices)
{
  KILN_TRY(kiln__nn_conv_check_input(op, ctx, x, out));
  pool_geo g;
  KILN_TRY(pool_geometry(op, x, desc, max, &g));
  if (indices && *indices && *out) {
    KILN_TRY(kiln__tensor_check(op, *indices, ctx));
    KILN_TRY(kiln__tensor_check(op, *out, ctx));
    kiln_tensor *given[2] = {*out, *indices};
    static const char *const names[2] = {"out", "indices"};
    KILN_TRY(kiln__ops_outputs_disjoint(op, given, names, 2));
  }
  const kiln_tensor *ins[1] = {x};
  kiln__out_target t, ti;
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, &g.out_shape, out, ins, 1, 0, &t));
  if (indices) {
    kiln_status s = kiln__ops_out_begin(op, ctx, KILN_I64, &g.out_shape, indices, ins, 1, 0, &ti);
    if (s != KILN_OK) {
      kiln__ctx_lock(ctx);
      kiln__ops_out_finish(op, ctx, &t, s);
      kiln__ctx_unlock(ctx);
      return s;
    }
  }
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  uint32_t flags = (max ? POOL_MAX : 0) | (indices ? POOL_IDX : 0) |
                   (desc->count_include_pad ? POOL_INCLUDE_PAD : 0);
  if (g.planes && vol(&g.out) && pool_tiles(&g)) {
    s = pool_tiled_launch(op, ctx, x, t.dst, indices ? ti.dst : NULL, &g, flags);
  } else if (g.planes && vol(&g.out)) {
    /* CPU devices, 2-D max pooling with stride 2 along x: pool_max_s2_rows. */
    int s2 = cpu_rows(ctx) && max && g.in.v[0] == 1 && g.k.v[0] == 1 && g.p.v[0] == 0 &&
             g.s.v[2] == 2 && g.d.v[2] == 1;
    cl_kernel k;
    s = kiln__ops_kernel(op, ctx, KILN__NN_POOL_SRC, x->dtype, s2 ? "pool_max_s2_rows" : "pool_fwd",
                         &k);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, x);
      kiln__args_tensor(&a, t.dst);
      kiln__args_tensor(&a, indices ? ti.dst : NULL);
      args_geo(&a, &g, 1);
      kiln__nn_args_dims(&a, &g.d);
      kiln__args_u32(&a, flags);
      s = s2 ? kiln__args_launch_1d(&a, ctx, g.planes * (uint64_t)g.out.v[1], 0)
             : kiln__nn_launch_planes(&a, ctx, vol(&g.out), g.planes);
    }
  }
  s = kiln__ops_out_finish(op, ctx, &t, s);
  if (indices)
    s = kiln__ops_out_finish(op, ctx, &ti, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_max_pool(kiln_context *ctx, const kiln_tensor *x, const kiln_pool_desc *desc,
              kiln_tensor **out, kiln_tensor **indices)
{
  return pool_forward("kiln_max_pool", ctx, x, desc, 1, out, indices);
}

kiln_status
kiln_avg_pool(kiln_context *ctx, const kiln_tensor *x, const kiln_pool_desc *desc,
              kiln_tensor **out)
{
  return pool_forward("kiln_avg_pool", ctx, x, desc, 0, out, NULL);
}

/* The gather kernels of the backward passes: grad (pooled shape) into *grad_x (x's shape). */
static kiln_status
pool_backward(const char *op, kiln_context *ctx, const kiln_tensor *grad,
              const kiln_tensor *indices, const kiln_tensor *x, const pool_geo *g,
              const char *kernel, int window, uint32_t flags, kiln_tensor **grad_x)
{
  KILN_TRY(kiln__nn_conv_check_tensor(op, ctx, grad, x->dtype, &g->out_shape, "grad"));
  if (indices)
    KILN_TRY(kiln__nn_conv_check_tensor(op, ctx, indices, KILN_I64, &g->out_shape, "indices"));
  const kiln_tensor *ins[2] = {grad, indices};
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, &x->shape, grad_x, ins, indices ? 2 : 1, 0, &t));
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  if (g->planes && vol(&g->in) && window && pool_tiles(g) && cpu_rows(ctx)) {
    /* CPU devices, tiling windows: a work-item per input row (pool_bwd_rows). */
    cl_kernel k;
    s = kiln__ops_kernel(op, ctx, KILN__NN_POOL_SRC, x->dtype, "pool_bwd_rows", &k);
    if (s == KILN_OK) {
      uint64_t rows = g->planes * (uint64_t)g->in.v[1];
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, grad);
      kiln__args_tensor(&a, indices);
      kiln__args_tensor(&a, t.dst);
      args_tiled(&a, g, rows);
      kiln__args_u32(&a, indices ? POOL_MAX : 0);
      s = kiln__args_launch_1d(&a, ctx, rows, 0);
    }
  } else if (g->planes && vol(&g->in)) {
    cl_kernel k;
    s = kiln__ops_kernel(op, ctx, KILN__NN_POOL_SRC, x->dtype, kernel, &k);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, grad);
      if (indices)
        kiln__args_tensor(&a, indices);
      kiln__args_tensor(&a, t.dst);
      args_geo(&a, g, window);
      if (indices)
        kiln__nn_args_dims(&a, &g->d);
      else if (window)
        kiln__args_u32(&a, flags);
      s = kiln__nn_launch_planes(&a, ctx, vol(&g->in), g->planes);
    }
  }
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_max_pool_backward(kiln_context *ctx, const kiln_tensor *grad, const kiln_tensor *indices,
                       const kiln_tensor *x, const kiln_pool_desc *desc, kiln_tensor **grad_x)
{
  const char *op = "kiln_max_pool_backward";
  KILN_TRY(kiln__nn_conv_check_input(op, ctx, x, grad_x));
  pool_geo g;
  KILN_TRY(pool_geometry(op, x, desc, 1, &g));
  KILN_RETURN_IF(!indices, KILN_ERR_INVALID_HANDLE, op, "indices is NULL");
  return pool_backward(op, ctx, grad, indices, x, &g, "pool_max_bwd", 1, 0, grad_x);
}

kiln_status
kiln_avg_pool_backward(kiln_context *ctx, const kiln_tensor *grad, const kiln_tensor *x,
                       const kiln_pool_desc *desc, kiln_tensor **grad_x)
{
  const char *op = "kiln_avg_pool_backward";
  KILN_TRY(kiln__nn_conv_check_input(op, ctx, x, grad_x));
  pool_geo g;
  KILN_TRY(pool_geometry(op, x, desc, 0, &g));
  return pool_backward(op, ctx, grad, NULL, x, &g, "pool_avg_bwd", 1,
                       desc->count_include_pad ? POOL_INCLUDE_PAD : 0, grad_x);
}

static kiln_status
adaptive_geometry(const char *op, const kiln_tensor *x, int64_t nd, const int64_t *size,
                  pool_geo *g)
{
  KILN_TRY(planes_of(op, x, nd, g));
  KILN_RETURN_IF(!size, KILN_ERR_INVALID_ARGUMENT, op, "output_size is NULL");
  size_t lead = x->shape.ndim - (size_t)nd;
  for (int64_t i = 0; i < nd; i++) {
    KILN_RETURN_IF(size[i] < 1, KILN_ERR_INVALID_ARGUMENT, op,
                   "output size %lld of axis %lld must be >= 1", (long long)size[i], (long long)i);
    KILN_RETURN_IF(size[i] > ((int64_t)1 << 31), KILN_ERR_OVERFLOW, op,
                   "output size %lld of axis %lld is above 2^31", (long long)size[i], (long long)i);
    KILN_RETURN_IF(g->in.v[3 - nd + i] == 0 && g->planes, KILN_ERR_SHAPE, op,
                   "spatial axis %lld of the input is empty", (long long)i);
    g->out.v[3 - nd + i] = size[i];
    g->out_shape.dims[lead + (size_t)i] = size[i];
  }
  KILN_TRY(kiln__nn_check_volume(op, vol(&g->in), "input"));
  return kiln__nn_check_volume(op, vol(&g->out), "output");
}

kiln_status
kiln_adaptive_avg_pool(kiln_context *ctx, const kiln_tensor *x, int64_t nd,
                       const int64_t *output_size, kiln_tensor **out)
{
  const char *op = "kiln_adaptive_avg_pool";
  KILN_TRY(kiln__nn_conv_check_input(op, ctx, x, out));
  pool_geo g;
  KILN_TRY(adaptive_geometry(op, x, nd, output_size, &g));
  const kiln_tensor *ins[1] = {x};
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, &g.out_shape, out, ins, 1, 0, &t));
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  if (g.planes && vol(&g.out)) {
    cl_kernel k;
    s = kiln__ops_kernel(op, ctx, KILN__NN_POOL_SRC, x->dtype, "adaptive_fwd", &k);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, x);
      kiln__args_tensor(&a, t.dst);
      args_geo(&a, &g, 0);
      s = kiln__nn_launch_planes(&a, ctx, vol(&g.out), g.planes);
    }
  }
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_adaptive_avg_pool_backward(kiln_context *ctx, const kiln_tensor *grad, const kiln_tensor *x,
                                int64_t nd, kiln_tensor **grad_x)
{
  const char *op = "kiln_adaptive_avg_pool_backward";
  KILN_TRY(kiln__nn_conv_check_input(op, ctx, x, grad_x));
  KILN_TRY(kiln__tensor_check(op, grad, ctx));
  KILN_RETURN_IF(nd < 1 || nd > 3, KILN_ERR_INVALID_ARGUMENT, op, "nd %lld: 1, 2 or 3 spatial axes",
                 (long long)nd);
  KILN_RETURN_IF(grad->shape.ndim != x->shape.ndim, KILN_ERR_SHAPE, op,
                 "grad has %zu axes, the input %zu", grad->shape.ndim, x->shape.ndim);
  pool_geo g;
  KILN_TRY(adaptive_geometry(op, x, nd, grad->shape.dims + (x->shape.ndim - (size_t)nd), &g));
  return pool_backward(op, ctx, grad, NULL, x, &g, "adaptive_bwd", 0, 0, grad_x);
}
