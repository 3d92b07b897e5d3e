#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "core/log.h"
#include "kiln_cl_sources.h"
#include "runtime/build.h"
#include "runtime/family.h"
#include "runtime/runtime.h"

const struct kiln__cl_source *
kiln__cl_source_find(const char *name)
{
  for (size_t i = 0; i < KILN__CL_SOURCE_COUNT; i++)
    if (strcmp(kiln__cl_sources[i].name, name) == 0)
      return &kiln__cl_sources[i];
  return NULL;
}

static struct kiln__program *
find_program(kiln_context *ctx, const char *source, const char *options)
{
  for (size_t i = 0; i < ctx->nprograms; i++) {
    struct kiln__program *p = &ctx->programs[i];
    if (!p->text && strcmp(p->source, source) == 0 && strcmp(p->options, options) == 0)
      return p;
  }
  return NULL;
}

kiln_status
kiln__registry_reserve_locked(const char *op, kiln_context *ctx)
{
  KILN__ASSERT_LOCKED(ctx);
  if (ctx->nprograms == ctx->cap_programs) {
    size_t ncap = ctx->cap_programs ? ctx->cap_programs * 2 : 16;
    struct kiln__program *n = realloc(ctx->programs, ncap * sizeof *n);
    KILN_RETURN_IF(!n, KILN_ERR_HOST_MEMORY, op, "cannot grow the program registry");
    ctx->programs = n;
    ctx->cap_programs = ncap;
  }
  return KILN_OK;
}

static kiln_status
add_program(const char *op, kiln_context *ctx, const char *source, const char *options,
            unsigned flags, struct kiln__build_outcome *outcome, struct kiln__program **out)
{
  const struct kiln__cl_source *src = kiln__cl_source_find(source);
  if (!src)
    return kiln__fail(KILN_ERR_INTERNAL, op, 0, "no embedded kernel source named \"%s\"", source);
  KILN_TRY(kiln__registry_reserve_locked(op, ctx));
  cl_program prog = NULL;
  KILN_TRY(kiln__program_build_locked(op, ctx, src, options, flags, &prog, outcome));
  struct kiln__program *p = &ctx->programs[ctx->nprograms];
  memset(p, 0, sizeof *p);
  p->source = strdup(source);
  p->options = strdup(options);
  if (!p->source || !p->options) {
    free(p->source);
    free(p->options);
    clReleaseProgram(prog);
    return kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "cannot record a program");
  }
  p->program = prog;
  ctx->nprograms++;
  *out = p;
  return KILN_OK;
}

/*
 * Whether embedded sources are built one kernel per program now: on PoCL
 * (ctx->one_kernel) while the disk cache is in use. Without a cache nothing
 * is stored, and one build per source is cheaper than one per kernel.
 */
static int
one_kernel_now(const kiln_context *ctx)
{
  return ctx->one_kernel && kiln__dc_mode(ctx->cache) != KILN_CACHE_OFF;
}

kiln_status
kiln__kernel_get(const char *op, kiln_context *ctx, const char *source, const char *options,
                 const char *kernel, cl_kernel *out)
{
  KILN__ASSERT_LOCKED(ctx);
  unsigned flags = 0;
  char one[1024];
  if (one_kernel_now(ctx)) {
    /* One program per kernel: its binary is one kernel's compile (docs/cache.md). */
    if (kiln__one_kernel_options(options, kernel, one, sizeof one) != 0)
      return kiln__fail(KILN_ERR_INTERNAL, op, 0, "build options of %s too long", kernel);
    options = one;
    flags = KILN__BUILD_SMALL;
  }
  struct kiln__program *p = find_program(ctx, source, options);
  if (!p)
    KILN_TRY(add_program(op, ctx, source, options, flags, NULL, &p));
  return kiln__program_kernel_locked(op, p, kernel, out);
}

int
kiln__one_kernel_options(const char *options, const char *kernel, char *buf, size_t len)
{
  int n = snprintf(buf, len, "%s -DKILN_ONLY -DKILN_ONLY_IS_%s=KILN_K_PROBE_", options, kernel);
  return n < 0 || (size_t)n >= len ? -1 : 0;
}

kiln_status
kiln__program_kernel_locked(const char *op, struct kiln__program *p, const char *kernel,
                            cl_kernel *out)
{
  for (size_t i = 0; i < p->nkernels; i++) {
    if (strcmp(p->kernels[i].name, kernel) == 0) {
      *out = p->kernels[i].kernel;
      return KILN_OK;
    }
  }
  cl_int err;
  cl_kernel k = clCreateKernel(p->program, kernel, &err);
  if (!k) {
    /* A missing kernel in an embedded source is kiln's bug; in caller text, the caller's. */
    kiln_status st = err != CL_INVALID_KERNEL_NAME ? kiln__status_from_cl(err)
                     : p->text                      ? KILN_ERR_INVALID_ARGUMENT
                                                    : KILN_ERR_INTERNAL;
    return kiln__fail(st, op, err, "clCreateKernel(%s) in %s failed: %s", kernel, p->source,
                      kiln__cl_error_name(err));
  }
  struct kiln__kernel *nk = realloc(p->kernels, (p->nkernels + 1) * sizeof *nk);
  char *name = strdup(kernel);
  if (!nk || !name) {
    if (nk)
      p->kernels = nk;
    free(name);
    clReleaseKernel(k);
    return kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "cannot record a kernel");
  }
  p->kernels = nk;
  p->kernels[p->nkernels].name = name;
  p->kernels[p->nkernels].kernel = k;
  p->nkernels++;
  *out = k;
  return KILN_OK;
}

static kiln_status
warm_one(const char *op, kiln_context *ctx, const char *source, const char *options,
         struct kiln__build_outcome *outcome)
{
  struct kiln__program *p = find_program(ctx, source, options);
  if (!p)
    return add_program(op, ctx, source, options, KILN__BUILD_STORE_NOW, outcome, &p);
  kiln__program_cache_existing_locked(ctx, kiln__cl_source_find(source), options, p->program, outcome);
  return KILN_OK;
}

/*
 * Warm-up of a source built one kernel per program: the whole program, built
 * once uncached, names the kernels; each one-kernel program is then warmed.
 * The outcome is the variant's: from the cache when every kernel was, compiled
 * or stored when any was.
 */
static kiln_status
warm_each_kernel(const char *op, kiln_context *ctx, const char *source, const char *options,
                 struct kiln__build_outcome *outcome)
{
  const struct kiln__cl_source *src = kiln__cl_source_find(source);
  if (!src)
    return kiln__fail(KILN_ERR_INTERNAL, op, 0, "no embedded kernel source named \"%s\"", source);
  cl_program whole;
  KILN_TRY(kiln__program_build_uncached(op, ctx, src, options, &whole));
  size_t len = 0;
  char *names = NULL;
  cl_int err = clGetProgramInfo(whole, CL_PROGRAM_KERNEL_NAMES, 0, NULL, &len);
  /* calloc: a program without kernels may report a length and write nothing. */
  if (err == CL_SUCCESS && (names = calloc(1, len + 1)) != NULL)
    err = clGetProgramInfo(whole, CL_PROGRAM_KERNEL_NAMES, len, names, NULL);
  clReleaseProgram(whole);
  if (err != CL_SUCCESS || !names) {
    free(names);
    return err != CL_SUCCESS ? kiln__fail_cl(op, err, "clGetProgramInfo(CL_PROGRAM_KERNEL_NAMES)")
                             : kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "cannot list kernels");
  }
  names[len] = 0;
  struct kiln__build_outcome all = {1, 0, 0};
  kiln_status s = KILN_OK;
  char one[1024];
  for (char *save = NULL, *k = strtok_r(names, ";", &save); k && s == KILN_OK;
       k = strtok_r(NULL, ";", &save)) {
    if (kiln__one_kernel_options(options, k, one, sizeof one) != 0) {
      s = kiln__fail(KILN_ERR_INTERNAL, op, 0, "build options of %s too long", k);
      break;
    }
    struct kiln__build_outcome oc;
    s = warm_one(op, ctx, source, one, &oc);
    all.from_cache &= oc.from_cache;
    all.compiled |= oc.compiled;
    all.stored |= oc.stored;
  }
  free(names);
  if (outcome)
    *outcome = all;
  return s;
}

kiln_status
kiln__program_warm_locked(const char *op, kiln_context *ctx, const char *source, const char *options,
                   struct kiln__build_outcome *outcome)
{
  KILN__ASSERT_LOCKED(ctx);
  if (one_kernel_now(ctx))
    return warm_each_kernel(op, ctx, source, options, outcome);
  return warm_one(op, ctx, source, options, outcome);
}

void
kiln__programs_destroy_locked(kiln_context *ctx)
{
  KILN__ASSERT_LOCKED(ctx);
  for (size_t i = 0; i < ctx->nprograms; i++) {
    struct kiln__program *p = &ctx->programs[i];
    for (size_t k = 0; k < p->nkernels; k++) {
      clReleaseKernel(p->kernels[k].kernel);
      free(p->kernels[k].name);
    }
    free(p->kernels);
    clReleaseProgram(p->program);
    free(p->source);
    free(p->options);
    free(p->text);
  }
  free(ctx->programs);
  ctx->programs = NULL;
  ctx->nprograms = ctx->cap_programs = 0;
}

void
kiln__dtype_options(kiln_dtype dtype, char *buf, size_t len)
{
  static const char *const ids[] = {
#define X(name, ctype, cltype, size, text) "KILN_DT_" #name,
      KILN_DTYPE_MAP(X)
#undef X
  };
  snprintf(buf, len, "-cl-std=CL1.2 -DT=%s -D%s=1", kiln__dtype_cl_compute_name(dtype),
           ids[dtype]);
}

int
kiln__device_has_dtype(const kiln_device_info *info, kiln_dtype dtype)
{
  return kiln__dtype_valid(dtype) && ((dtype != KILN_F64 && dtype != KILN_C128) || info->has_fp64);
}

/* Appends printf-style text to buf (always terminated; truncation shows up as a build miss). */
void
kiln__options_append(char *buf, size_t len, const char *fmt, ...)
{
  size_t used = strlen(buf);
  if (used + 1 >= len)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + used, len - used, fmt, ap);
  va_end(ap);
}

int
kiln__program_options(const kiln_device_info *info, const char *source, kiln_dtype dtype,
                      const void *variant, char *buf, size_t len)
{
  kiln__dtype_options(dtype, buf, len);
  /* Sources that convert to double (cast) need it; for the rest it only enables a pragma. */
  if (info->has_fp64)
    kiln__options_append(buf, len, " -DKILN_FP64=1");
  const struct kiln__source *row = NULL;
  const struct kiln__family *f = kiln__family_of_source(source, &row);
  if (f && f->build_options)
    f->build_options(info, source, dtype, variant, buf, len);
  return !row || (row->dtypes & KILN__DT_BIT(dtype)) != 0;
}
