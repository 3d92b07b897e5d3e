/*
 * Launching a kernel, one way for every family: setting its arguments (the
 * sticky-status kiln__args builder, or kiln__arg for one), choosing the
 * global and local sizes of 1-D and 3-D grids, and the one
 * clEnqueueNDRangeKernel call of the library (kiln__enqueue_kernel, which
 * records the kernel for kiln_profile_begin/end). All of it runs with
 * ctx->lock held.
 */
#ifndef KILN_RUNTIME_LAUNCH_H
#define KILN_RUNTIME_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime.h"

/* Sets kernel argument i, recording a message naming op on failure. */
kiln_status kiln__arg(const char *op, cl_kernel k, cl_uint i, size_t size, const void *value);

/* Sequential kernel arguments; the first failure sticks and later adds are no-ops. */
typedef struct kiln__args {
  const char *op;
  cl_kernel k;
  cl_uint next;
  kiln_status status;
} kiln__args;

kiln__args kiln__args_begin(const char *op, cl_kernel k);
void kiln__args_raw(kiln__args *a, size_t size, const void *value);
/* A tensor as (buffer, element offset); NULL passes a NULL buffer and offset 0. */
void kiln__args_tensor(kiln__args *a, const kiln_tensor *t);
/* A plain buffer (one argument, no offset). */
void kiln__args_mem(kiln__args *a, cl_mem m);
void kiln__args_u64(kiln__args *a, uint64_t v);
void kiln__args_i64(kiln__args *a, int64_t v);
void kiln__args_u32(kiln__args *a, uint32_t v);
void kiln__args_f64(kiln__args *a, double v);
/* A T-typed scalar argument of a float dtype (f32 or f64) from a double. */
void kiln__args_float(kiln__args *a, kiln_dtype dtype, double v);
/* __local scratch of bytes. */
void kiln__args_local(kiln__args *a, size_t bytes);

/* Enqueues the arguments' kernel over a 1-D grid (global, local), or returns the first
 * argument failure. */
kiln_status kiln__args_enqueue_1d(const kiln__args *a, kiln_context *ctx, size_t global,
                                  size_t local);
/* The same over a grid of dims dimensions (local may be NULL). */
kiln_status kiln__args_enqueue(const kiln__args *a, kiln_context *ctx, cl_uint dims,
                               const size_t *global, const size_t *local);
/* The first argument failure, or kiln__launch_1d of the arguments' kernel. */
kiln_status kiln__args_launch_1d(const kiln__args *a, kiln_context *ctx, uint64_t n,
                                 size_t local);

/*
 * Enqueues k over n items on a 1-D grid: one item per work-item up to a
 * grid of 2^31 items, the kernel's grid-stride loop beyond. local 0 takes the
 * context's default; a local size above the kernel's limit is clamped. The
 * test hooks below apply. n == 0 enqueues nothing.
 */
kiln_status kiln__launch_1d(const char *op, kiln_context *ctx, cl_kernel k, uint64_t n,
                            size_t local);

/*
 * Enqueues k over n0 x n1 x n2 items (dimension 0 the contiguous inner run).
 * The work-group spans dimension 0 first, then 1; grid sizes are capped (the
 * kernels loop over the rest). The test hooks apply.
 */
kiln_status kiln__launch_3d(const char *op, kiln_context *ctx, cl_kernel k, uint64_t n0,
                            uint64_t n1, uint64_t n2);

/*
 * Local size for a kernel that needs exactly one work-group shape (scans):
 * the context default or the test hook, clamped to the kernel's limit and
 * rounded down to a power of two.
 */
size_t kiln__launch_pow2_local(kiln_context *ctx, cl_kernel k);

/* The enqueue every launch goes through, so that profiling sees all kernels. local may be
 * NULL. */
kiln_status kiln__enqueue_kernel(const char *op, kiln_context *ctx, cl_kernel k, cl_uint dims,
                                 const size_t *global, const size_t *local);

/*
 * Test hooks, set only by tests that link the library's internals, to prove
 * results do not depend on launch shapes: a nonzero local_override replaces
 * the context's default local size of kiln__launch_1d/_3d and
 * kiln__launch_pow2_local (clamped to the kernel's limit); a nonzero
 * max_groups caps the work-groups along each grid dimension, so the kernels'
 * grid-stride loops run several times.
 */
extern size_t kiln__launch_local_override;
extern size_t kiln__launch_max_groups;

#endif
