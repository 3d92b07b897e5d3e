/*
 * The bandwidth reference: the best of plain copy kernels with vector widths
 * 1..16, written against raw OpenCL so that kiln's own code is not what it
 * is compared with. Same queue, same device, same run as the cases.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tools/bench.h"

/* Two shapes per width: a grid-stride loop (what GPUs like) and one element per
 * work-item (what PoCL vectorises across work-items). */
static const char copy_src[] =
    "#define K(W, T) kernel void copy_##W(global const T *a, global T *b, ulong n) {\\\n"
    "  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) b[i] = a[i]; }\\\n"
    "  kernel void copy1_##W(global const T *a, global T *b, ulong n) {\\\n"
    "  ulong i = get_global_id(0); if (i < n) b[i] = a[i]; }\n"
    "K(1, uint) K(2, uint2) K(4, uint4) K(8, uint8) K(16, uint16)\n";

static int
cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

kiln_status
bench_copy_reference(kiln_context *ctx, uint64_t nbytes, int reps, double *gbps, int *best_width)
{
  cl_context clc;
  cl_device_id dev;
  cl_command_queue q;
  kiln_status st = kiln_context_cl_objects(ctx, &clc, &dev, &q);
  if (st != KILN_OK)
    return st;
  kiln_device_info info;
  kiln_context_device_info(ctx, &info);
  cl_int err;
  const char *src = copy_src;
  cl_program prog = clCreateProgramWithSource(clc, 1, &src, NULL, &err);
  if (!prog || clBuildProgram(prog, 1, &dev, "-cl-std=CL1.2", NULL, NULL) != CL_SUCCESS) {
    if (prog)
      clReleaseProgram(prog);
    return KILN_ERR_BUILD;
  }
  nbytes = (nbytes + 63) / 64 * 64;
  cl_mem a = clCreateBuffer(clc, CL_MEM_READ_WRITE, nbytes, NULL, &err);
  cl_mem b = clCreateBuffer(clc, CL_MEM_READ_WRITE, nbytes, NULL, &err);
  *gbps = 0;
  *best_width = 0;
  if (!a || !b) {
    st = KILN_ERR_DEVICE_MEMORY;
    goto done;
  }
  unsigned zero = 0;
  clEnqueueFillBuffer(q, a, &zero, sizeof zero, 0, nbytes, 0, NULL, NULL);
  const int widths[] = {1, 2, 4, 8, 16};
  double *t = malloc(sizeof(double) * (size_t)reps);
  for (int v = 0; v < 10 && t; v++) {
    int w = v % 5, per_item = v >= 5;
    char name[16];
    snprintf(name, sizeof name, per_item ? "copy1_%d" : "copy_%d", widths[w]);
    cl_kernel k = clCreateKernel(prog, name, &err);
    if (!k)
      continue;
    cl_ulong n = nbytes / (4u * (unsigned)widths[w]);
    clSetKernelArg(k, 0, sizeof a, &a);
    clSetKernelArg(k, 1, sizeof b, &b);
    clSetKernelArg(k, 2, sizeof n, &n);
    size_t local = info.max_work_group_size < 256 ? info.max_work_group_size : 256;
    size_t groups = (size_t)((n + local - 1) / local);
    size_t maxg = (size_t)(info.compute_units ? info.compute_units : 1) * 64;
    size_t global = (per_item || groups < maxg ? groups : maxg) * local;
    int ok = 1;
    for (int r = -1; r < reps && ok; r++) { /* r = -1 is the warm-up */
      cl_event ev;
      ok = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, &ev) == CL_SUCCESS;
      if (!ok)
        break;
      clWaitForEvents(1, &ev);
      cl_ulong s0 = 0, s1 = 0;
      clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof s0, &s0, NULL);
      clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof s1, &s1, NULL);
      clReleaseEvent(ev);
      if (r >= 0)
        t[r] = (double)(s1 - s0) * 1e-9;
    }
    clReleaseKernel(k);
    if (!ok)
      continue;
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    double med = t[reps / 2];
    double bw = med > 0 ? 2.0 * (double)nbytes / med * 1e-9 : 0;
    if (bw > *gbps) {
      *gbps = bw;
      *best_width = widths[w];
    }
  }
  free(t);
done:
  if (a)
    clReleaseMemObject(a);
  if (b)
    clReleaseMemObject(b);
  clReleaseProgram(prog);
  return st;
}
