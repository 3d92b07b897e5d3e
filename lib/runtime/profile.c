/* Kernel-level profiling through OpenCL events, for benchmarks and the tuner. */
#include <stdlib.h>

#include "core/error.h"
#include "kiln/profile.h"
#include "runtime/runtime.h"

/* Waits for the recorded events and folds their times into the totals. */
static kiln_status
fold(const char *op, kiln_context *ctx)
{
  struct kiln__profile *p = &ctx->prof;
  kiln_status s = KILN_OK;
  if (p->nevents) {
    cl_int err = clWaitForEvents((cl_uint)p->nevents, p->events);
    if (err != CL_SUCCESS)
      s = kiln__fail_cl(op, err, "clWaitForEvents (profiling)");
  }
  for (size_t i = 0; i < p->nevents; i++) {
    cl_ulong start = 0, end = 0;
    cl_event first = p->begins[i] ? p->begins[i] : p->events[i];
    if (s == KILN_OK &&
        clGetEventProfilingInfo(first, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL) ==
            CL_SUCCESS &&
        clGetEventProfilingInfo(p->events[i], CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) ==
            CL_SUCCESS &&
        end >= start) {
      p->kernels++;
      p->device_ns += end - start;
      if (!p->first_start || start < p->first_start)
        p->first_start = start;
      if (end > p->last_end)
        p->last_end = end;
    }
    clReleaseEvent(p->events[i]);
    if (p->begins[i])
      clReleaseEvent(p->begins[i]);
  }
  p->nevents = 0;
  return s;
}

/* Keeps (begin, end) for the next fold; takes ownership of both events. */
kiln_status
kiln__profile_record_locked(const char *op, kiln_context *ctx, cl_event begin, cl_event end)
{
  KILN__ASSERT_LOCKED(ctx);
  struct kiln__profile *p = &ctx->prof;
  /* Bounded memory: a long profiled loop folds its events every few thousand kernels. */
  if (p->nevents == p->cap) {
    if (p->cap >= 4096) {
      kiln_status s = fold(op, ctx);
      if (s != KILN_OK) {
        clReleaseEvent(end);
        if (begin)
          clReleaseEvent(begin);
        return s;
      }
    } else {
      size_t ncap = p->cap ? p->cap * 2 : 64;
      cl_event *n = realloc(p->events, ncap * sizeof *n);
      if (n)
        p->events = n;
      cl_event *b = n ? realloc(p->begins, ncap * sizeof *b) : NULL;
      if (b)
        p->begins = b;
      if (!n || !b) {
        clReleaseEvent(end);
        if (begin)
          clReleaseEvent(begin);
        return KILN_OK; /* profiling is best effort; the work itself was enqueued */
      }
      p->cap = ncap;
    }
  }
  p->begins[p->nevents] = begin;
  p->events[p->nevents++] = end;
  return KILN_OK;
}

kiln_status
kiln__provider_span_begin(const char *op, kiln_context *ctx, cl_event *begin)
{
  KILN__ASSERT_LOCKED(ctx);
  *begin = NULL;
  if (!ctx->prof.active)
    return KILN_OK;
  cl_int err = clEnqueueMarkerWithWaitList(ctx->queue, 0, NULL, begin);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "clEnqueueMarkerWithWaitList");
}

kiln_status
kiln__provider_span_end(const char *op, kiln_context *ctx, cl_event begin)
{
  KILN__ASSERT_LOCKED(ctx);
  if (!begin)
    return KILN_OK;
  cl_event end = NULL;
  cl_int err = clEnqueueMarkerWithWaitList(ctx->queue, 0, NULL, &end);
  if (err != CL_SUCCESS) {
    clReleaseEvent(begin);
    return kiln__fail_cl(op, err, "clEnqueueMarkerWithWaitList");
  }
  return kiln__profile_record_locked(op, ctx, begin, end);
}

void
kiln__profile_destroy_locked(kiln_context *ctx)
{
  KILN__ASSERT_LOCKED(ctx);
  struct kiln__profile *p = &ctx->prof;
  for (size_t i = 0; i < p->nevents; i++) {
    clReleaseEvent(p->events[i]);
    if (p->begins[i])
      clReleaseEvent(p->begins[i]);
  }
  free(p->events);
  free(p->begins);
  p->events = NULL;
  p->begins = NULL;
  p->nevents = p->cap = 0;
  p->active = 0;
}

kiln_status
kiln_profile_begin(kiln_context *ctx)
{
  static const char op[] = "kiln_profile_begin";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!ctx->queue_profiling, KILN_ERR_UNSUPPORTED, op,
                 "the context's command queue was created without CL_QUEUE_PROFILING_ENABLE");
  kiln__ctx_lock(ctx);
  for (size_t i = 0; i < ctx->prof.nevents; i++) {
    clReleaseEvent(ctx->prof.events[i]);
    if (ctx->prof.begins[i])
      clReleaseEvent(ctx->prof.begins[i]);
  }
  ctx->prof.nevents = 0;
  ctx->prof.kernels = ctx->prof.device_ns = ctx->prof.first_start = ctx->prof.last_end = 0;
  ctx->prof.active = 1;
  kiln__ctx_unlock(ctx);
  return KILN_OK;
}

kiln_status
kiln_profile_end(kiln_context *ctx, kiln_profile *out)
{
  static const char op[] = "kiln_profile_end";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  kiln__ctx_lock(ctx);
  if (!ctx->prof.active) {
    kiln__ctx_unlock(ctx);
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                      "profiling was not started with kiln_profile_begin");
  }
  kiln_status s = fold(op, ctx);
  ctx->prof.active = 0;
  out->kernels = ctx->prof.kernels;
  out->device_ns = ctx->prof.device_ns;
  out->span_ns = ctx->prof.last_end > ctx->prof.first_start
                     ? ctx->prof.last_end - ctx->prof.first_start
                     : 0;
  kiln__ctx_unlock(ctx);
  return s;
}
