#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"
#include "core/log.h"
#include "runtime/build.h"
#include "runtime/store_bg.h"

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

/*
 * For caller-supplied text (no embedded hash): the source lines that the log
 * points at ("<name>:LINE:COL:"), numbered, so that an error in generated or
 * caller code can be read without the text at hand. Appends to buf.
 */
static void
numbered_lines(const char *text, size_t len, const char *log, char *buf, size_t cap)
{
  long seen[4];
  int nseen = 0;
  for (const char *q = log; q && *q && nseen < 4; q++) {
    if (*q != ':' || q[1] < '0' || q[1] > '9')
      continue;
    char *end;
    long line = strtol(q + 1, &end, 10);
    if (*end != ':' || end[1] < '0' || end[1] > '9' || line <= 0)
      continue;
    int dup = 0;
    for (int i = 0; i < nseen; i++)
      dup |= seen[i] == line;
    if (!dup)
      seen[nseen++] = line;
    q = end;
  }
  for (int i = 0; i < nseen; i++) {
    long n = 1;
    size_t at = 0;
    while (at < len && n < seen[i])
      if (text[at++] == '\n')
        n++;
    if (n != seen[i] || at >= len)
      continue;
    size_t e = at;
    while (e < len && text[e] != '\n' && e - at < 160)
      e++;
    size_t used = strlen(buf);
    if (used + 1 < cap)
      snprintf(buf + used, cap - used, "\n%5ld | %.*s", seen[i], (int)(e - at), text + at);
  }
}

/*
 * The text a build with these options compiles: the one-kernel form of an embedded source
 * (scripts/embed_cl.py) selects kernels with variadic macros, which OpenCL C 1.2 does not have
 * (PoCL accepts them, NVIDIA's compiler refuses them), so only one-kernel builds (-DKILN_ONLY,
 * kiln__one_kernel_options) take it; every other build compiles the plain source.
 */
static void
source_text(const struct kiln__cl_source *src, const char *options, const char **text, size_t *len)
{
  int one = options && strstr(options, "-DKILN_ONLY ") != NULL;
  *text = src->plain && !one ? src->plain : src->text;
  *len = src->plain && !one ? src->plain_len : src->len;
}

static kiln_status
build_from_source(const char *op, kiln_context *ctx, const struct kiln__cl_source *src,
                  const char *options, cl_program *out)
{
  cl_int err;
  const char *text;
  size_t len;
  source_text(src, options, &text, &len);
  cl_program prog = clCreateProgramWithSource(ctx->cl, 1, &text, &len, &err);
  if (!prog)
    return kiln__fail_cl(op, err, "clCreateProgramWithSource");
  kiln__log(KILN__LOG_DEBUG, "building %s with \"%s\"", src->name, options);
  err = clBuildProgram(prog, 1, &ctx->device, options, NULL, NULL);
  if (err != CL_SUCCESS) {
    char *log = build_log(prog, ctx->device);
    size_t ll = log ? strlen(log) : 0;
    char lines[800] = "";
    if (!src->hash && log)
      numbered_lines(src->text, src->len, log, lines, sizeof lines);
    size_t keep = lines[0] ? 1000 : 1500;
    kiln_status s = kiln__fail(kiln__status_from_cl(err), op, err,
                               "building kernel source %s with \"%s\" failed: %s (%d)\n%s%s%s",
                               src->name, options, kiln__cl_error_name(err), (int)err,
                               log ? (ll > keep ? log + ll - keep : log) : "(no build log)",
                               lines[0] ? "\nsource lines:" : "", lines);
    free(log);
    clReleaseProgram(prog);
    return s;
  }
  *out = prog;
  return KILN_OK;
}

/* A refused binary is an expected event (driver updated behind an unchanged version string...), not an error. */
static cl_program
build_from_binary(kiln_context *ctx, const void *bin, size_t len, const char *options,
                  const char *key)
{
  cl_int err, bstatus = CL_SUCCESS;
  const unsigned char *b = bin;
  cl_program prog = clCreateProgramWithBinary(ctx->cl, 1, &ctx->device, &len, &b, &bstatus, &err);
  if (!prog || err != CL_SUCCESS || bstatus != CL_SUCCESS) {
    kiln__log(KILN__LOG_DEBUG, "kernel cache: driver refused binary %s: %s / %s", key,
              kiln__cl_error_name(err), kiln__cl_error_name(bstatus));
    if (prog)
      clReleaseProgram(prog);
    return NULL;
  }
  err = clBuildProgram(prog, 1, &ctx->device, options, NULL, NULL);
  if (err != CL_SUCCESS) {
    kiln__log(KILN__LOG_DEBUG, "kernel cache: building binary %s failed: %s", key,
              kiln__cl_error_name(err));
    clReleaseProgram(prog);
    return NULL;
  }
  return prog;
}

/* The device binary of a program built for ctx's one device (malloc'd), or NULL. */
static unsigned char *
program_binary(kiln_context *ctx, cl_program prog, size_t *len)
{
  cl_uint ndev = 0;
  size_t size = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof ndev, &ndev, NULL) != CL_SUCCESS ||
      ndev != 1 ||
      clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS ||
      size == 0)
    return NULL;
  unsigned char *bin = malloc(size);
  if (!bin)
    return NULL;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) != CL_SUCCESS) {
    free(bin);
    return NULL;
  }
  *len = size;
  return bin;
}

static int
contains_ci(const char *hay, const char *needle)
{
  size_t n = strlen(needle);
  for (; *hay; hay++)
    if (strncasecmp(hay, needle, n) == 0)
      return 1;
  return 0;
}

int
kiln__is_pocl(const kiln_device_info *info)
{
  return contains_ci(info->platform_name, "Portable Computing Language") ||
         contains_ci(info->platform_version, "pocl");
}

/*
 * Whether a build that missed stores its binary. Asking PoCL for a binary
 * compiles a generic work-group function for every kernel of the program
 * (measured on PoCL 3.1: 12 s for the whole elementwise program, which
 * builds from source in 1.9 s), so there only programs of one kernel or a
 * few (KILN__BUILD_SMALL: one-kernel builds of embedded sources, text
 * programs) are stored by default; whole programs only on request. Elsewhere
 * the binary is at hand after the build (NVIDIA returns its PTX) and is
 * stored at once. docs/cache.md has the figures.
 */
static int
store_on_miss(const kiln_context *ctx, unsigned flags)
{
  return (flags & (KILN__BUILD_STORE_NOW | KILN__BUILD_SMALL)) ||
         kiln__dc_store_policy(ctx->cache) == KILN_CACHE_STORE_ALWAYS || !kiln__is_pocl(&ctx->info);
}

int
kiln__cache_identity(const kiln_device_info *info, struct kiln__dc_ident *id, const char **why)
{
  id->platform_name = info->platform_name;
  id->platform_version = info->platform_version;
  id->device_name = info->name;
  id->device_version = info->device_version;
  id->driver_version = info->driver_version;
  id->vendor_id = info->vendor_id;
  id->address_bits = info->address_bits;
  const char *d = info->driver_version;
  while (*d == ' ')
    d++;
  if (!*d || strcasecmp(d, "unknown") == 0 || strcasecmp(d, "n/a") == 0) {
    *why = "the device reports no driver version, so a driver update could not be detected";
    return 0;
  }
  if (!info->name[0] || !info->platform_name[0]) {
    *why = "the device reports no device or platform name";
    return 0;
  }
  return 1;
}

int
kiln__options_uncacheable(const char *options)
{
  for (const char *p = options; *p;) {
    while (*p == ' ' || *p == '\t')
      p++;
    if (p[0] == '-' && p[1] == 'I')
      return 1;
    while (*p && *p != ' ' && *p != '\t')
      p++;
  }
  return 0;
}

static void
store_program(kiln_context *ctx, const struct kiln__dc_req *req, cl_program prog,
              struct kiln__build_outcome *outcome)
{
  size_t len = 0;
  unsigned char *bin = program_binary(ctx, prog, &len);
  if (!bin) {
    kiln__log(KILN__LOG_DEBUG, "kernel cache: no binary for %s from the driver", req->key_hex);
    kiln__dc_note_store_failure(ctx->cache);
    return;
  }
  if (kiln__dc_store(ctx->cache, req, bin, len) == 0 && outcome)
    outcome->stored = 1;
  free(bin);
}

/* Fills req for a build, or returns 0 when this build must bypass the cache (counted if asked). */
static int
cache_request(kiln_context *ctx, const struct kiln__cl_source *src, const char *options,
              struct kiln__dc_req *req, int count_bypass)
{
  struct kiln__dc_ident id;
  const char *why;
  if (kiln__dc_mode(ctx->cache) == KILN_CACHE_OFF || !kiln__cache_identity(&ctx->info, &id, &why) ||
      kiln__options_uncacheable(options)) {
    if (count_bypass)
      kiln__dc_note_uncached(ctx->cache);
    return 0;
  }
  const char *text;
  size_t len;
  source_text(src, options, &text, &len);
  kiln__dc_req_init(req, &id, src->name, text, len, options);
  return 1;
}

kiln_status
kiln__program_build_uncached(const char *op, kiln_context *ctx, const struct kiln__cl_source *src,
                             const char *options, cl_program *out)
{
  return build_from_source(op, ctx, src, options, out);
}

kiln_status
kiln__program_build_locked(const char *op, kiln_context *ctx, const struct kiln__cl_source *src,
                    const char *options, unsigned flags, cl_program *out,
                    struct kiln__build_outcome *outcome)
{
  KILN__ASSERT_LOCKED(ctx);
  struct kiln__build_outcome none;
  if (!outcome)
    outcome = &none;
  memset(outcome, 0, sizeof *outcome);
  struct kiln__dc_req req;
  if (!cache_request(ctx, src, options, &req, 1)) {
    KILN_TRY(build_from_source(op, ctx, src, options, out));
    outcome->compiled = 1;
    return KILN_OK;
  }
  void *buf;
  const void *bin;
  size_t len;
  enum kiln__dc_found found =
      kiln__dc_lookup(ctx->cache, &req, KILN__DC_DEFER_HIT, &buf, &bin, &len);
  if (found == KILN__DC_HIT) {
    size_t entry_bytes = (size_t)((const uint8_t *)bin - (const uint8_t *)buf) + len +
                         KILN__DC_TRAILER;
    cl_program prog = build_from_binary(ctx, bin, len, options, req.key_hex);
    free(buf);
    if (prog) {
      kiln__dc_note_hit(ctx->cache, entry_bytes);
      *out = prog;
      outcome->from_cache = 1;
      return KILN_OK;
    }
    kiln__dc_note_rejected(ctx->cache);
  }
  cl_program prog;
  KILN_TRY(build_from_source(op, ctx, src, options, &prog));
  outcome->compiled = 1;
  /*
   * A corrupt or refused entry is replaced whatever the policy: left in
   * place it would be read, refused and rebuilt by every process.
   */
  if (kiln__dc_mode(ctx->cache) == KILN_CACHE_ON && (found != KILN__DC_MISS || store_on_miss(ctx, flags))) {
    /*
     * On PoCL the binary costs a second compile of each kernel (a generic work-group
     * function): a miss leaves it to the context's storer thread, which overlaps it with
     * this thread's work (runtime/store_bg.h). Warm-ups and healing store at once.
     */
    const char *text;
    size_t tlen;
    source_text(src, options, &text, &tlen);
    /*
     * Programs whose kernels declare reqd_work_group_size are stored at once: PoCL 3.1
     * failed an assertion (pocl_release_dlhandle_cache) at a later launch when the storer
     * had rebuilt such a program beside the caller's (nn_attention, nn_conv, linalg).
     */
    static const char reqd[] = "reqd_work_group_size";
    int now = memmem(text, tlen, reqd, sizeof reqd - 1) != NULL;
    if (found != KILN__DC_MISS || (flags & KILN__BUILD_STORE_NOW) || now ||
        !kiln__storer_wanted(ctx) || kiln__storer_enqueue(ctx, &req, text, tlen, options) != 0)
      store_program(ctx, &req, prog, outcome);
  }
  *out = prog;
  return KILN_OK;
}

void
kiln__program_cache_existing_locked(kiln_context *ctx, const struct kiln__cl_source *src,
                             const char *options, cl_program prog,
                             struct kiln__build_outcome *outcome)
{
  KILN__ASSERT_LOCKED(ctx);
  memset(outcome, 0, sizeof *outcome);
  struct kiln__dc_req req;
  if (!cache_request(ctx, src, options, &req, 0))
    return;
  void *buf;
  const void *bin;
  size_t len;
  if (kiln__dc_lookup(ctx->cache, &req, KILN__DC_NOCOUNT, &buf, &bin, &len) == KILN__DC_HIT) {
    free(buf);
    outcome->from_cache = 1;
    return;
  }
  if (kiln__dc_mode(ctx->cache) == KILN_CACHE_ON)
    store_program(ctx, &req, prog, outcome);
}
