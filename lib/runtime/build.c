#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/log.h"
#include "runtime/build.h"

/* The tail of the build log, which is where compilers put the first error's context last. */
static char *
build_log(cl_program prog, cl_device_id dev)
{
  size_t len = 0;
  if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &len) != CL_SUCCESS || !len)
    return NULL;
  char *log = malloc(len + 1);
  if (!log)
    return NULL;
  if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, len, log, NULL) != CL_SUCCESS) {
    free(log);
    return NULL;
  }
  log[len] = 0;
  return log;
}

kiln_status
kiln__program_build(const char *op, kiln_context *ctx, const struct kiln__cl_source *src,
                    const char *options, cl_program *out)
{
  cl_int err;
  const char *text = src->text;
  size_t len = src->len;
  cl_program prog = clCreateProgramWithSource(ctx->cl, 1, &text, &len, &err);
  if (!prog)
    return kiln__fail_cl(op, err, "clCreateProgramWithSource");
  kiln__log(KILN__LOG_DEBUG, "building %s with \"%s\"", src->name, options);
  err = clBuildProgram(prog, 1, &ctx->device, options, NULL, NULL);
  if (err != CL_SUCCESS) {
    char *log = build_log(prog, ctx->device);
    size_t ll = log ? strlen(log) : 0;
    kiln_status s = kiln__fail(kiln__status_from_cl(err), op, err,
                               "building kernel source %s with \"%s\" failed: %s (%d)\n%s",
                               src->name, options, kiln__cl_error_name(err), (int)err,
                               log ? (ll > 1500 ? log + ll - 1500 : log) : "(no build log)");
    free(log);
    clReleaseProgram(prog);
    return s;
  }
  *out = prog;
  return KILN_OK;
}
