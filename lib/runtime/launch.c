/* Kernel arguments, launch geometry and the enqueue (see launch.h). */
#include "runtime/launch.h"

#include "core/error.h"

size_t kiln__launch_local_override;
size_t kiln__launch_max_groups;

kiln_status
kiln__arg(const char *op, cl_kernel k, cl_uint i, size_t size, const void *value)
{
  cl_int err = clSetKernelArg(k, i, size, value);
  if (err != CL_SUCCESS)
    return kiln__fail(kiln__status_from_cl(err), op, err, "clSetKernelArg(%u) failed: %s", i,
                      kiln__cl_error_name(err));
  return KILN_OK;
}

kiln__args
kiln__args_begin(const char *op, cl_kernel k)
{
  kiln__args a = {op, k, 0, KILN_OK};
  return a;
}

void
kiln__args_raw(kiln__args *a, size_t size, const void *value)
{
  if (a->status == KILN_OK)
    a->status = kiln__arg(a->op, a->k, a->next, size, value);
  a->next++;
}

void
kiln__args_tensor(kiln__args *a, const kiln_tensor *t)
{
  cl_mem m = t ? t->mem : NULL;
  cl_ulong off = t ? t->offset / kiln_dtype_size(t->dtype) : 0;
  kiln__args_raw(a, sizeof m, &m);
  kiln__args_raw(a, sizeof off, &off);
}

void
kiln__args_mem(kiln__args *a, cl_mem m)
{
  kiln__args_raw(a, sizeof m, &m);
}

void
kiln__args_u64(kiln__args *a, uint64_t v)
{
  cl_ulong x = v;
  kiln__args_raw(a, sizeof x, &x);
}

void
kiln__args_i64(kiln__args *a, int64_t v)
{
  cl_long x = v;
  kiln__args_raw(a, sizeof x, &x);
}

void
kiln__args_u32(kiln__args *a, uint32_t v)
{
  cl_uint x = v;
  kiln__args_raw(a, sizeof x, &x);
}

void
kiln__args_f64(kiln__args *a, double v)
{
  kiln__args_raw(a, sizeof v, &v);
}

void
kiln__args_float(kiln__args *a, kiln_dtype dtype, double v)
{
  if (dtype == KILN_F32) {
    float f = (float)v;
    kiln__args_raw(a, sizeof f, &f);
  } else {
    kiln__args_raw(a, sizeof v, &v);
  }
}

void
kiln__args_local(kiln__args *a, size_t bytes)
{
  kiln__args_raw(a, bytes, NULL);
}

kiln_status
kiln__args_enqueue(const kiln__args *a, kiln_context *ctx, cl_uint dims, const size_t *global,
                   const size_t *local)
{
  if (a->status != KILN_OK)
    return a->status;
  return kiln__enqueue_kernel(a->op, ctx, a->k, dims, global, local);
}

kiln_status
kiln__args_enqueue_1d(const kiln__args *a, kiln_context *ctx, size_t global, size_t local)
{
  return kiln__args_enqueue(a, ctx, 1, &global, &local);
}

kiln_status
kiln__args_launch_1d(const kiln__args *a, kiln_context *ctx, uint64_t n, size_t local)
{
  if (a->status != KILN_OK)
    return a->status;
  return kiln__launch_1d(a->op, ctx, a->k, n, local);
}

static uint64_t
cap_groups(uint64_t groups)
{
  return kiln__launch_max_groups && groups > kiln__launch_max_groups ? kiln__launch_max_groups
                                                                     : groups;
}

static size_t
kernel_max_wg(kiln_context *ctx, cl_kernel k)
{
  size_t max = 0;
  if (clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof max, &max,
                               NULL) != CL_SUCCESS ||
      max == 0)
    max = ctx->info.max_work_group_size ? ctx->info.max_work_group_size : 1;
  return max;
}

/* The local size to launch with: the hook, else local, else the context default; clamped to
 * the kernel's limit when above the default (which every kernel accepts). */
static size_t
local_for(kiln_context *ctx, cl_kernel k, size_t local)
{
  size_t want = kiln__launch_local_override ? kiln__launch_local_override
                : local                     ? local
                                            : ctx->wg_size;
  if (want > ctx->wg_size) {
    size_t max = kernel_max_wg(ctx, k);
    if (want > max)
      want = max;
  }
  return want ? want : 1;
}

kiln_status
kiln__launch_1d(const char *op, kiln_context *ctx, cl_kernel k, uint64_t n, size_t local)
{
  if (n == 0)
    return KILN_OK;
  local = local_for(ctx, k, local);
  /*
   * One item per work-item up to a very large grid: PoCL vectorises across
   * work-items only when each does one element (measured: 28 GB/s vs 1 GB/s
   * for a grid-stride loop over 2^24 floats). Beyond the cap the kernels'
   * grid-stride loops take the rest.
   */
  uint64_t max_groups = ((uint64_t)1 << 31) / local;
  uint64_t groups = (n + local - 1) / local;
  if (groups > max_groups)
    groups = max_groups;
  size_t global = (size_t)(cap_groups(groups) * local);
  return kiln__enqueue_kernel(op, ctx, k, 1, &global, &local);
}

kiln_status
kiln__launch_3d(const char *op, kiln_context *ctx, cl_kernel k, uint64_t n0, uint64_t n1,
                uint64_t n2)
{
  if (n0 == 0 || n1 == 0 || n2 == 0)
    return KILN_OK;
  size_t wg = local_for(ctx, k, 0);
  /*
   * Few work-group shapes on purpose: PoCL compiles a specialised kernel per
   * local size (~100 ms each), so dimension 0 takes 256, 64, 16 or 1 items
   * (the largest that n0 fills, at most wg) and dimension 1 the rest of wg.
   */
  static const size_t widths[] = {256, 64, 16, 1};
  size_t l0 = 1;
  for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
    if (widths[i] <= wg && widths[i] <= n0) {
      l0 = widths[i];
      break;
    }
  }
  size_t l1 = wg / l0 ? wg / l0 : 1;
  /* One item per work-item up to a large grid (2^31 items in all); the kernels loop beyond it. */
  uint64_t n0c = n0 < ((uint64_t)1 << 24) ? n0 : ((uint64_t)1 << 24);
  uint64_t g0 = cap_groups((n0c + l0 - 1) / l0) * l0;
  uint64_t c1 = ((uint64_t)1 << 31) / g0;
  uint64_t g1 = cap_groups(((n1 < c1 ? n1 : c1) + l1 - 1) / l1) * l1;
  uint64_t c2 = ((uint64_t)1 << 31) / (g0 * g1);
  if (c2 < 1)
    c2 = 1;
  uint64_t g2 = cap_groups(n2 < c2 ? n2 : c2);
  size_t global[3] = {(size_t)g0, (size_t)g1, (size_t)g2};
  size_t local[3] = {l0, l1, 1};
  return kiln__enqueue_kernel(op, ctx, k, 3, global, local);
}

size_t
kiln__launch_pow2_local(kiln_context *ctx, cl_kernel k)
{
  size_t want = kiln__launch_local_override ? kiln__launch_local_override : ctx->wg_size;
  size_t max = kernel_max_wg(ctx, k);
  if (want > max)
    want = max;
  size_t p = 1;
  while (p * 2 <= want)
    p *= 2;
  return p;
}

kiln_status
kiln__enqueue_kernel(const char *op, kiln_context *ctx, cl_kernel k, cl_uint dims,
                     const size_t *global, const size_t *local)
{
  KILN__ASSERT_LOCKED(ctx);
  cl_event ev = NULL;
  cl_int err = clEnqueueNDRangeKernel(ctx->queue, k, dims, NULL, global, local, 0, NULL,
                                      ctx->prof.active ? &ev : NULL);
  if (err != CL_SUCCESS)
    return kiln__fail_cl(op, err, "clEnqueueNDRangeKernel");
  return ev ? kiln__profile_record_locked(op, ctx, NULL, ev) : KILN_OK;
}
