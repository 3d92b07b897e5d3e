/* The autotuner's search: representative problems, timing, candidate checks, tune_key. */
#include "runtime/tune_internal.h"


#include <math.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "core/log.h"
#include "kiln/profile.h"
#include "runtime/disk_cache.h"
#include "runtime/family.h"
#include "runtime/tune_file.h"

/* Tuning rounds of the coordinate search (it stops early when a round changes nothing). */
/* A candidate must beat the defaults by 5% to replace them: medians on a shared or
 * throttling device move by a few percent between runs, and flipping parameters on noise
 * would make results unstable from one tuning to the next. */
/* Largest bucket exponent; larger problems share the last bucket. */
/* Online tuning skips smaller problems: launch overhead dominates them, so any
 * parameters do, and each new work-group size would cost a compile on PoCL. */

/* ---------------------------------------------------------------- tuning */

/*
 * The device tensor comes first: it checks the shape's byte count for overflow and against the
 * device's largest allocation before a host buffer of that size is made.
 */
kiln_status
kiln__tune_input(kiln_context *ctx, kiln_dtype dt, size_t ndim, const int64_t *shape,
                 uint32_t seed, kiln_tensor **out)
{
  kiln_status s = kiln_tensor_create(ctx, dt, ndim, shape, out);
  if (s != KILN_OK)
    return s;
  uint64_t n = kiln_tensor_numel(*out), bytes = kiln_tensor_nbytes(*out);
  unsigned char *h = bytes < SIZE_MAX ? malloc((size_t)bytes + 1) : NULL;
  if (!h) {
    kiln_tensor_release(*out);
    *out = NULL;
    return kiln__fail(KILN_ERR_HOST_MEMORY, "kiln_tune_run", 0, "no memory for %llu inputs",
                      (unsigned long long)n);
  }
  uint32_t x = seed;
  for (uint64_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    int32_t m = (int32_t)((x >> 8) % 64u) - 32;
    if (m >= 0)
      m++; /* [-32, -1] and [1, 32] */
    /* The imaginary part from other bits of the same draw: also nonzero, also m / 16. */
    int32_t mi = (int32_t)((x >> 16) % 64u) - 32;
    if (mi >= 0)
      mi++;
    switch (dt) {
    case KILN_F32: ((float *)h)[i] = (float)m / 16.0f; break;
    case KILN_F64: ((double *)h)[i] = (double)m / 16.0; break;
    case KILN_F16: ((uint16_t *)h)[i] = kiln_f16_from_f64((double)m / 16.0); break; /* exact */
    case KILN_BF16: ((uint16_t *)h)[i] = kiln_bf16_from_f64((double)m / 16.0); break;
    case KILN_C64: ((kiln_complex64 *)h)[i] = (kiln_complex64){(float)m / 16.0f, (float)mi / 16.0f}; break;
    case KILN_C128: ((kiln_complex128 *)h)[i] = (kiln_complex128){(double)m / 16.0, (double)mi / 16.0}; break;
    case KILN_I32: ((int32_t *)h)[i] = (int32_t)((x >> 4) % 2001u) - 1000; break;
    case KILN_I64: ((int64_t *)h)[i] = (int64_t)((x >> 4) % 2001u) - 1000; break;
    case KILN_U8: h[i] = (unsigned char)(x >> 24); break;
    default: h[i] = (unsigned char)(x >> 31); break;
    }
  }
  s = kiln_tensor_upload(*out, h, (size_t)bytes);
  free(h);
  if (s != KILN_OK) {
    kiln_tensor_release(*out);
    *out = NULL;
  }
  return s;
}

double
kiln__tune_in_out_bytes(const struct kiln__tune_problem *pb)
{
  return (double)pb->n * (double)kiln_dtype_size(pb->dtype) +
         (double)kiln_tensor_nbytes(pb->out);
}

static void
problem_free(struct kiln__tune_problem *pb)
{
  kiln_tensor_release(pb->in[0]);
  kiln_tensor_release(pb->in[1]);
  kiln_tensor_release(pb->out);
  memset(pb->in, 0, sizeof pb->in);
  pb->out = NULL;
}

/* The representative problem of a bucket: 2^k elements, rows and columns as square as can be. */
static kiln_status
problem_make(kiln_context *ctx, int fam, kiln_dtype dtype, int layout, int k, struct kiln__tune_problem *pb)
{
  memset(pb, 0, sizeof *pb);
  pb->ctx = ctx;
  pb->fam = fam;
  pb->f = kiln__tn_fam_at(fam);
  pb->dtype = dtype;
  pb->layout = (enum kiln__tune_layout)layout;
  pb->k = k;
  pb->n = (uint64_t)1 << k;
  int64_t lines = (int64_t)1 << (k / 2), len = (int64_t)1 << (k - k / 2);
  switch (layout) {
  case KILN__LAYOUT_ROW:
    pb->ndim = 2, pb->shape[0] = lines, pb->shape[1] = len, pb->axis = 1;
    break;
  case KILN__LAYOUT_COL:
    pb->ndim = 2, pb->shape[0] = len, pb->shape[1] = lines, pb->axis = 0;
    break;
  default:
    pb->ndim = 1, pb->shape[0] = (int64_t)pb->n, pb->axis = 0;
    break;
  }
  kiln_status s = KILN_OK;
  if (pb->f->setup)
    s = pb->f->setup(pb);
  for (int i = 0; i < pb->f->ninputs && s == KILN_OK && !pb->f->setup; i++)
    s = kiln__tune_input(ctx, dtype, pb->ndim, pb->shape, 12345u + 7919u * (uint32_t)i,
                         &pb->in[i]);
  if (s != KILN_OK)
    problem_free(pb);
  return s;
}

/* Real component i of a floating buffer (complex dtypes: 2 per element), and its setter. */
static double
real_at(kiln_dtype dt, const void *buf, size_t i)
{
  switch (dt) {
  case KILN_F32:
  case KILN_C64: return ((const float *)buf)[i];
  case KILN_F64:
  case KILN_C128: return ((const double *)buf)[i];
  case KILN_F16: return kiln_f16_to_f32(((const uint16_t *)buf)[i]);
  case KILN_BF16: return kiln_bf16_to_f32(((const uint16_t *)buf)[i]);
  default: return 0;
  }
}

static void
real_set(kiln_dtype dt, void *buf, size_t i, double v)
{
  switch (dt) {
  case KILN_F32:
  case KILN_C64: ((float *)buf)[i] = (float)v; break;
  case KILN_F64:
  case KILN_C128: ((double *)buf)[i] = v; break;
  case KILN_F16: ((uint16_t *)buf)[i] = kiln_f16_from_f64(v); break;
  case KILN_BF16: ((uint16_t *)buf)[i] = kiln_bf16_from_f64(v); break;
  default: break;
  }
}

/* Real components in bytes of dt, and the machine epsilon of the type they are stored in. */
static size_t
real_count(kiln_dtype dt, size_t bytes)
{
  return bytes / kiln_dtype_size(dt) * (kiln__dtype_is_complex(dt) ? 2 : 1);
}

static double
storage_eps(kiln_dtype dt)
{
  switch (kiln__dtype_real_part(dt)) {
  case KILN_F64: return 2.220446049250313e-16;
  case KILN_F16: return 9.765625e-04;
  case KILN_BF16: return 7.8125e-03;
  default: return 1.1920928955078125e-07;
  }
}

/*
 * Float sums are compared with |a - b| <= 8 eps max(|a|, |b|, 1), eps of the
 * storage type (complex: per component). The inputs (multiples of 1/16,
 * random signs) keep every partial sum of a realistic line exactly
 * representable in the f32/f64 accumulator, so summation orders agree
 * exactly and the tolerance only absorbs rare roundings; one dropped or
 * repeated element (at least 1/16) exceeds it while |sum| < 2^16 (f32).
 */
static int
outputs_match(kiln_dtype dt, int float_sum, const void *a, const void *b, size_t bytes)
{
  if (!float_sum || !(kiln__dtype_is_floating(dt) || kiln__dtype_is_complex(dt)))
    return memcmp(a, b, bytes) == 0;
  size_t n = real_count(dt, bytes);
  double eps = storage_eps(dt);
  for (size_t i = 0; i < n; i++) {
    double x = real_at(dt, a, i), y = real_at(dt, b, i);
    double m = fmax(fmax(fabs(x), fabs(y)), 1.0);
    if (!(fabs(x - y) <= 8 * eps * m)) /* NaN fails too */
      return 0;
  }
  return 1;
}

static int
outputs_agree(const struct kiln__tune_problem *pb, const void *ref, const void *got, size_t bytes)
{
  if (pb->f->match)
    return pb->f->match(pb, ref, got, bytes);
  return outputs_match(kiln_tensor_dtype(pb->out), pb->f->float_sum, ref, got, bytes);
}

/*
 * The sabotage hook's wrong result: wrong by every family's measure, also by
 * tolerances relative to the whole output (fft_match), which a flipped low
 * bit of one float would pass.
 */
static void
corrupt_output(kiln_dtype dt, void *buf, size_t bytes)
{
  if (!kiln__dtype_is_floating(dt) && !kiln__dtype_is_complex(dt)) {
    ((unsigned char *)buf)[0] ^= 0x5a;
    return;
  }
  size_t n = real_count(dt, bytes);
  double l1 = 0;
  for (size_t i = 0; i < n; i++)
    l1 += fabs(real_at(dt, buf, i));
  real_set(dt, buf, 0, real_at(dt, buf, 0) + 1.0 + l1);
}

static int
sabotaged(int fam, const void *params)
{
  return kiln__tn_sabotage.active && kiln__tn_sabotage.fam == fam &&
         kiln__tn_pget(&kiln__tn_fam_at(fam)->params[kiln__tn_sabotage.param], params) == kiln__tn_sabotage.value;
}

/* The failure the sabotage hook makes params' run have (corrupt 2 and 3), else KILN_OK. */
static kiln_status
sabotage_failure(const struct kiln__tune_problem *pb, const void *params)
{
  if (!sabotaged(pb->fam, params))
    return KILN_OK;
  if (kiln__tn_sabotage.corrupt == 2)
    return kiln__fail(KILN_ERR_UNSUPPORTED, "kiln_tune_run", 0, "sabotaged candidate");
  if (kiln__tn_sabotage.corrupt == 3 && kiln__tn_sabotage.transient_left > 0) {
    kiln__tn_sabotage.transient_left--;
    return kiln__fail(KILN_ERR_DEVICE_MEMORY, "kiln_tune_run", 0,
                      "sabotaged candidate (a passing failure)");
  }
  return KILN_OK;
}

static int
cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

struct eval {
  pbuf params;
  uint64_t median_ns;
  char failed[KILN__TF_REASON_LEN]; /* "" when it ran and was right */
};

static const char *
failure_reason(kiln_status s)
{
  switch (s) {
  case KILN_ERR_BUILD:
    return "build";
  case KILN_ERR_DEVICE_MEMORY:
  case KILN_ERR_HOST_MEMORY:
    return "memory";
  case KILN_ERR_UNSUPPORTED:
    return "unsupported"; /* e.g. a back end that cannot do the problem */
  default:
    return "launch";
  }
}

/*
 * Wall time of one call, waited for: a choice between libraries is about
 * what a call costs its caller, and for small problems that is mostly host
 * work (CLBlast's per-call work, a library's enqueue path), which device time
 * leaves out. On PoCL here device time put CLBlast's SGEMM well ahead of
 * kiln's kernel from 2^10 to 2^14 (2.5-7 us against 4-16 us), while a call
 * costs 15-55 us of wall time on either route.
 */
static kiln_status
time_call(struct kiln__tune_problem *pb, const void *params, uint64_t *ns)
{
  kiln_status s = kiln_context_finish(pb->ctx); /* earlier work is not this call's */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (s == KILN_OK)
    s = pb->f->run(pb, params);
  if (s == KILN_OK)
    s = kiln_context_finish(pb->ctx);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  int64_t d = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
  if (s == KILN_OK)
    *ns = d > 0 ? (uint64_t)d : 1;
  return s;
}

/* Device time of one run of params on pb (the caller forces params for lookups). */
static kiln_status
time_once(struct kiln__tune_problem *pb, const void *params, uint64_t *ns)
{
  if (pb->f->wall_clock)
    return time_call(pb, params, ns);
  kiln_profile p;
  kiln_status s = kiln_profile_begin(pb->ctx);
  if (s == KILN_OK)
    s = pb->f->run(pb, params);
  if (s == KILN_OK)
    s = kiln_profile_end(pb->ctx, &p);
  else
    kiln_profile_end(pb->ctx, &p); /* stops the recording; the run's status is what counts */
  if (s == KILN_OK)
    *ns = p.device_ns ? p.device_ns : 1;
  return s;
}

static void
force(struct kiln__tune_problem *pb, const void *params)
{
  kiln__tn_tl.ctx = pb->ctx;
  kiln__tn_tl.fam = pb->fam;
  memcpy(kiln__tn_tl.params.b, params, pb->f->params_size);
}

static void
unforce(void)
{
  kiln__tn_tl.fam = -1;
  kiln__tn_tl.ctx = NULL;
}

/*
 * Runs params on pb: once to build and check the output against ref (NULL:
 * this is the reference, kept in *got), once more to warm up, then reps
 * timed runs; fills e. Returns KILN_OK, or the failure status (e->failed set).
 */
static kiln_status
evaluate(struct kiln__tune_problem *pb, const void *params, const void *ref, void **got, size_t *got_bytes,
         int reps, struct eval *e)
{
  kiln_context *ctx = pb->ctx;
  const struct kiln__tune_family *f = pb->f;
  memcpy(e->params.b, params, f->params_size);
  e->median_ns = 0;
  e->failed[0] = 0;
  /* Elementwise ops take their local size from a lookup: force it on this thread. */
  force(pb, params);
  kiln_status s = ref ? sabotage_failure(pb, params) : KILN_OK;
  if (s == KILN_OK)
    s = f->run(pb, params);
  if (s == KILN_OK)
    s = kiln_context_finish(ctx);
  void *buf = NULL;
  size_t bytes = pb->out ? (size_t)kiln_tensor_nbytes(pb->out) : 0;
  if (s == KILN_OK) {
    buf = malloc(bytes + 1);
    s = buf ? kiln_tensor_download(pb->out, buf, bytes) : KILN_ERR_HOST_MEMORY;
  }
  if (s != KILN_OK) {
    snprintf(e->failed, sizeof e->failed, "%s", failure_reason(s));
  } else {
    if (ref && kiln__tn_sabotage.corrupt == 1 && sabotaged(pb->fam, params) && bytes)
      corrupt_output(kiln_tensor_dtype(pb->out), buf, bytes);
    if (ref && (bytes != *got_bytes || !outputs_agree(pb, ref, buf, bytes))) {
      snprintf(e->failed, sizeof e->failed, "wrong");
      s = KILN_ERR_INTERNAL;
    }
  }
  if (s == KILN_OK)
    s = f->run(pb, params); /* warm-up: caches, PoCL's per-local-size code */
  uint64_t *t = s == KILN_OK ? calloc((size_t)reps, sizeof *t) : NULL;
  if (s == KILN_OK && !t)
    s = KILN_ERR_HOST_MEMORY;
  for (int r = 0; r < reps && s == KILN_OK; r++)
    s = time_once(pb, params, &t[r]);
  if (s != KILN_OK && !e->failed[0])
    snprintf(e->failed, sizeof e->failed, "%s", failure_reason(s));
  if (s == KILN_OK) {
    qsort(t, (size_t)reps, sizeof *t, cmp_u64);
    e->median_ns = t[reps / 2] ? t[reps / 2] : 1;
    if (ref && sabotaged(pb->fam, params))
      e->median_ns = 1;
  }
  free(t);
  unforce();
  if (!ref && s == KILN_OK) {
    *got = buf;
    *got_bytes = bytes;
  } else {
    free(buf);
  }
  return s;
}

/*
 * evaluate(), run a second time when it fails: only a failure that repeats
 * counts (and is recorded, in the context and in the tuning file). The
 * context is held for the tuning (kiln__tn_tune_hold), so the second run has it to
 * itself; a failure that other contexts or processes on the device caused
 * (device memory they held, say) must not keep a candidate out for good.
 */
static kiln_status
evaluate_confirmed(struct kiln__tune_problem *pb, const void *params, const void *ref, void **got,
                   size_t *got_bytes, int reps, struct eval *e)
{
  kiln_status s = evaluate(pb, params, ref, got, got_bytes, reps, e);
  if (s != KILN_OK)
    s = evaluate(pb, params, ref, got, got_bytes, reps, e);
  return s;
}

/* A failure record for a candidate (an entry of the tuning file). */
static void
failure_entry(int fam, kiln_dtype dtype, const char *bucket, const struct eval *ev,
              struct kiln__tf_entry *e)
{
  const struct kiln__tune_family *f = kiln__tn_fam_at(fam);
  memset(e, 0, sizeof *e);
  snprintf(e->family, sizeof e->family, "%s", f->name);
  snprintf(e->dtype, sizeof e->dtype, "%s", kiln_dtype_name(dtype));
  snprintf(e->bucket, sizeof e->bucket, "%s", bucket);
  for (size_t i = 0; i < f->nparams && i < KILN__TF_MAX_PARAMS; i++) {
    snprintf(e->pname[i], sizeof e->pname[i], "%s", f->params[i].name);
    e->pval[i] = kiln__tn_pget(&f->params[i], ev->params.b);
  }
  e->nparams = (uint32_t)f->nparams;
  snprintf(e->failed, sizeof e->failed, "%s", ev->failed);
}

/* Nonzero when the context recorded params as failed for this key (t->lock taken). */
static int
failed_before(struct kiln__tuner *t, int fam, kiln_dtype dtype, const char *bucket,
              const void *params)
{
  if (!t)
    return 0;
  struct eval ev;
  memcpy(ev.params.b, params, kiln__tn_fam_at(fam)->params_size);
  snprintf(ev.failed, sizeof ev.failed, "x");
  struct kiln__tf_entry e;
  failure_entry(fam, dtype, bucket, &ev, &e);
  int hit = 0;
  pthread_mutex_lock(&t->lock);
  for (size_t i = 0; i < t->fails.n && !hit; i++)
    hit = kiln__tf_same_key(&t->fails.e[i], &e);
  pthread_mutex_unlock(&t->lock);
  return hit;
}

/*
 * The largest work-group size the timed op's kernels of this dtype accept on
 * the device (those the defaults' run created), and what their local memory
 * leaves (ctx->lock taken). Larger candidates would only be clamped at launch
 * and time the same configuration again.
 */
static uint64_t
local_limit(kiln_context *ctx, const struct kiln__tune_family *f, kiln_dtype dtype)
{
  uint64_t lim = ctx->info.max_work_group_size ? ctx->info.max_work_group_size : 1024;
  if (!f->source)
    return lim; /* no kernels of kiln's: nothing bounds a work-group size parameter */
  char opts[192];
  kiln__dtype_options(dtype, opts, sizeof opts);
  size_t ol = strlen(opts);
  cl_ulong kmem_max = 0;
  kiln__ctx_lock(ctx);
  for (size_t i = 0; i < ctx->nprograms; i++) {
    const struct kiln__program *p = &ctx->programs[i];
    if (strcmp(p->source, f->source) != 0 || strncmp(p->options, opts, ol) != 0 ||
        (p->options[ol] != 0 && p->options[ol] != ' '))
      continue;
    for (size_t j = 0; j < p->nkernels; j++) {
      if (strncmp(p->kernels[j].name, f->kernel_prefix, strlen(f->kernel_prefix)) != 0)
        continue;
      size_t kwg = 0;
      cl_ulong kmem = 0;
      if (clGetKernelWorkGroupInfo(p->kernels[j].kernel, ctx->device, CL_KERNEL_WORK_GROUP_SIZE,
                                   sizeof kwg, &kwg, NULL) == CL_SUCCESS &&
          kwg && kwg < lim)
        lim = kwg;
      if (clGetKernelWorkGroupInfo(p->kernels[j].kernel, ctx->device, CL_KERNEL_LOCAL_MEM_SIZE,
                                   sizeof kmem, &kmem, NULL) == CL_SUCCESS &&
          kmem > kmem_max)
        kmem_max = kmem;
    }
  }
  kiln__ctx_unlock(ctx);
  if (f->local_bytes_per_item) {
    uint64_t avail =
        ctx->info.local_mem_bytes > kmem_max ? ctx->info.local_mem_bytes - kmem_max : 0;
    uint64_t by_mem = avail / f->local_bytes_per_item;
    if (by_mem < lim)
      lim = by_mem ? by_mem : 1;
  }
  return lim;
}

static int
notify(struct tune_opts *o, kiln_tune_event ev, size_t idx, size_t limit, const char *params,
       uint64_t ns, const char *failed, const kiln_tune_result *res)
{
  if (!o->fn)
    return 0;
  kiln_tune_progress p = {ev, o->key_index, o->key_count, idx, limit, params, ns, failed, res};
  if (o->fn(&p, o->user))
    o->stop = 1;
  return o->stop;
}

/* Stores a key's winner and the new failure records: in the context, then in the file. */
static kiln_status
store_key(kiln_context *ctx, int fam, kiln_dtype dtype, int layout, int k, const void *best,
          uint64_t tuned_ns, uint64_t default_ns, const struct kiln__tf_table *newfails)
{
  static const char op[] = "kiln_tune_run";
  struct kiln__tuner *t = ctx->tuner;
  if (!t)
    return kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "the context has no tuner state");
  const struct kiln__tune_family *f = kiln__tn_fam_at(fam);
  uint64_t val[KILN__TF_MAX_PARAMS] = {0};
  for (size_t i = 0; i < f->nparams; i++)
    val[i] = kiln__tn_pget(&f->params[i], best);
  struct kiln__tf_table up;
  kiln__tf_init(&up);
  snprintf(up.device, sizeof up.device, "%s", t->dev_raw);
  snprintf(up.driver, sizeof up.driver, "%s", t->drv_raw);
  struct kiln__tf_entry e;
  struct eval ev;
  memcpy(ev.params.b, best, f->params_size);
  ev.failed[0] = 0;
  char bucket[32];
  kiln__tn_bucket_text(layout, k, bucket, sizeof bucket);
  failure_entry(fam, dtype, bucket, &ev, &e);
  e.time_ns = tuned_ns;
  e.default_ns = default_ns;
  kiln_status s = kiln__tf_put(&up, &e) == 0 ? KILN_OK : KILN_ERR_HOST_MEMORY;
  for (size_t i = 0; i < newfails->n && s == KILN_OK; i++)
    if (kiln__tf_put(&up, &newfails->e[i]) != 0)
      s = KILN_ERR_HOST_MEMORY;
  char dir[4096];
  pthread_mutex_lock(&t->lock);
  kiln__tn_rec_put(t, kiln__tn_pack_key(fam, dtype, layout, k), KILN_TUNE_SOURCE_STORED,
          (1u << f->nparams) - 1u, val);
  for (size_t i = 0; i < newfails->n; i++)
    kiln__tf_put(&t->fails, &newfails->e[i]);
  snprintf(dir, sizeof dir, "%s", t->dir);
  char name[256];
  snprintf(name, sizeof name, "%s", t->exact_name);
  pthread_mutex_unlock(&t->lock);
  if (s != KILN_OK) {
    kiln__tf_free(&up);
    return kiln__fail(s, op, 0, "no memory to store the results");
  }
  char tdir[4200], path[4600];
  const char *why = "";
  if (!dir[0]) {
    kiln__tf_free(&up);
    return kiln__fail(KILN_ERR_IO, op, 0,
                      "no cache directory to store tuning results in (kept for this context)");
  }
  if (kiln__tf_dir(dir, 1, tdir, sizeof tdir, &why) != 0) {
    kiln__tf_free(&up);
    return kiln__fail(KILN_ERR_IO, op, 0, "%s/tuning: %s", dir, why);
  }
  snprintf(path, sizeof path, "%s/%s", tdir, name);
  int err = kiln__tf_merge(path, &up);
  kiln__tf_free(&up);
  if (err)
    return kiln__fail(KILN_ERR_IO, op, err, "cannot write %s: %s", path, strerror(err));
  return KILN_OK;
}

static int
eval_same(const struct kiln__tune_family *f, const void *a, const void *b)
{
  for (size_t i = 0; i < f->nparams; i++)
    if (kiln__tn_pget(&f->params[i], a) != kiln__tn_pget(&f->params[i], b))
      return 0;
  return 1;
}

/* Tunes one key (see kiln_tune_run). res is filled whatever happens. */
kiln_status
kiln__tn_tune_key(kiln_context *ctx, int fam, kiln_dtype dtype, int layout, int k, struct tune_opts *o,
         kiln_tune_result *res)
{
  const struct kiln__tune_family *f = kiln__tn_fam_at(fam);
  memset(res, 0, sizeof *res);
  res->family = f->name;
  res->layout = kiln__tn_layout_names[layout];
  res->dtype = dtype;
  kiln__tn_bucket_text(layout, k, res->bucket, sizeof res->bucket);
  res->elements = (uint64_t)1 << k;
  pbuf def;
  f->defaults(ctx, dtype, layout, k, def.b);
  kiln__tn_params_text(f, def.b, res->default_params, sizeof res->default_params);
  snprintf(res->tuned_params, sizeof res->tuned_params, "%s", res->default_params);

  size_t limit_count = 1;
  for (size_t i = 0; i < f->nparams; i++)
    if (!f->params[i].layouts || (f->params[i].layouts & (1u << layout)))
      limit_count += ROUNDS * (o->quick ? f->params[i].nquick : f->params[i].nfull);

  kiln__tn_tl.tuning++;
  struct kiln__tune_problem pb;
  kiln_status s = problem_make(ctx, fam, dtype, layout, k, &pb);
  if (pb.desc[0])
    snprintf(res->shape, sizeof res->shape, "%s", pb.desc);
  else if (pb.ndim == 2)
    snprintf(res->shape, sizeof res->shape, "[%lld,%lld] axis %lld", (long long)pb.shape[0],
             (long long)pb.shape[1], (long long)pb.axis);
  else
    snprintf(res->shape, sizeof res->shape, "[%lld]", (long long)pb.shape[0]);
  notify(o, KILN_TUNE_EVENT_KEY_START, 0, limit_count, NULL, 0, "", res);

  void *ref = NULL;
  size_t ref_bytes = 0;
  struct eval *memo = calloc(limit_count, sizeof *memo);
  size_t nmemo = 0;
  struct kiln__tf_table newfails;
  kiln__tf_init(&newfails);
  if (s == KILN_OK && !memo)
    s = kiln__fail(KILN_ERR_HOST_MEMORY, "kiln_tune_run", 0, "out of memory");
  if (s == KILN_OK) {
    s = evaluate_confirmed(&pb, def.b, NULL, &ref, &ref_bytes, o->reps, &memo[0]);
    if (s != KILN_OK)
      s = kiln__fail(s, "kiln_tune_run", 0, "%s %s %s: the defaults failed (%s)", f->name,
                     kiln_dtype_name(dtype), res->bucket, memo[0].failed);
  }
  if (s == KILN_OK) {
    nmemo = 1;
    res->bytes = f->bytes(&pb);
    res->default_ns = res->tuned_ns = memo[0].median_ns;
    res->candidates = 1;
    notify(o, KILN_TUNE_EVENT_CANDIDATE, 1, limit_count, res->default_params, memo[0].median_ns,
           "", res);
  }
  uint64_t lim = s == KILN_OK ? local_limit(ctx, f, dtype) : 0;
  pbuf best = def;
  uint64_t best_ns = s == KILN_OK ? memo[0].median_ns : 0;
  for (int round = 0; round < ROUNDS && s == KILN_OK && !o->stop; round++) {
    int changed = 0;
    for (size_t pi = 0; pi < f->nparams && !o->stop; pi++) {
      const struct kiln__tune_param *p = &f->params[pi];
      if (p->layouts && !(p->layouts & (1u << layout)))
        continue; /* it changes nothing here: the defaults' value stays */
      const uint64_t *vals = o->quick ? p->quick : p->full;
      size_t nv = o->quick ? p->nquick : p->nfull;
      pbuf pick = best;
      uint64_t pick_ns = best_ns;
      for (size_t vi = 0; vi < nv && !o->stop; vi++) {
        if (p->local_size && vals[vi] > lim)
          continue;
        pbuf c = best;
        kiln__tn_pset(p, c.b, vals[vi]);
        if (eval_same(f, c.b, best.b) || (f->same_run && f->same_run(&pb, c.b, def.b)))
          continue; /* nothing new to time */
        struct eval *ev = NULL;
        for (size_t m = 0; m < nmemo && !ev; m++)
          if (eval_same(f, memo[m].params.b, c.b))
            ev = &memo[m];
        if (!ev && nmemo < limit_count) {
          ev = &memo[nmemo++];
          char ptext[256];
          kiln__tn_params_text(f, c.b, ptext, sizeof ptext);
          res->candidates++;
          if (failed_before(ctx->tuner, fam, dtype, res->bucket, c.b)) {
            memcpy(ev->params.b, c.b, f->params_size);
            ev->median_ns = 0;
            snprintf(ev->failed, sizeof ev->failed, "skipped");
            res->skipped++;
          } else {
            atomic_fetch_add(&kiln__tn_evaluations, 1);
            if (evaluate_confirmed(&pb, c.b, ref, NULL, &ref_bytes, o->reps, ev) != KILN_OK) {
              res->failed++;
              struct kiln__tf_entry fe;
              failure_entry(fam, dtype, res->bucket, ev, &fe);
              kiln__tf_put(&newfails, &fe);
            }
          }
          notify(o, KILN_TUNE_EVENT_CANDIDATE, res->candidates, limit_count, ptext,
                 ev->median_ns, ev->failed, res);
        }
        if (ev && !ev->failed[0] && ev->median_ns < pick_ns) {
          pick = ev->params;
          pick_ns = ev->median_ns;
        }
      }
      if (!eval_same(f, pick.b, best.b)) {
        best = pick;
        best_ns = pick_ns;
        changed = 1;
      }
    }
    if (!changed)
      break;
  }
  if (s == KILN_OK && !eval_same(f, best.b, def.b) && !o->stop) {
    /*
     * The defaults were timed first and the winner minutes later: on a shared or throttling
     * device that alone can fake a speedup. Both are timed again, alternating, and these
     * medians decide and are reported.
     */
    uint64_t *td = calloc((size_t)o->reps, sizeof *td), *tb = calloc((size_t)o->reps, sizeof *tb);
    kiln_status cs = td && tb ? KILN_OK : KILN_ERR_HOST_MEMORY;
    for (int r = 0; r < o->reps && cs == KILN_OK; r++) {
      force(&pb, def.b);
      cs = time_once(&pb, def.b, &td[r]);
      force(&pb, best.b);
      if (cs == KILN_OK)
        cs = time_once(&pb, best.b, &tb[r]);
    }
    unforce();
    if (cs == KILN_OK && !sabotaged(fam, best.b)) {
      qsort(td, (size_t)o->reps, sizeof *td, cmp_u64);
      qsort(tb, (size_t)o->reps, sizeof *tb, cmp_u64);
      res->default_ns = td[o->reps / 2];
      best_ns = tb[o->reps / 2];
    }
    free(td);
    free(tb);
  }
  if (s == KILN_OK) {
    /* Noise must not replace the defaults: a winner has to be clearly faster. */
    if ((double)best_ns > (double)res->default_ns * WIN_MARGIN) {
      best = def;
      best_ns = res->default_ns;
    }
    res->tuned_ns = best_ns;
    kiln__tn_params_text(f, best.b, res->tuned_params, sizeof res->tuned_params);
    if (o->store && !o->stop)
      s = store_key(ctx, fam, dtype, layout, k, best.b, best_ns, res->default_ns, &newfails);
    else if (o->store && newfails.n && ctx->tuner) {
      /* Stopped early: keep the failures so they are not retried, but no winner. */
      pthread_mutex_lock(&ctx->tuner->lock);
      for (size_t i = 0; i < newfails.n; i++)
        kiln__tf_put(&ctx->tuner->fails, &newfails.e[i]);
      pthread_mutex_unlock(&ctx->tuner->lock);
    }
  }
  res->status = s;
  notify(o, KILN_TUNE_EVENT_KEY_DONE, res->candidates, limit_count, NULL, 0, "", res);
  kiln__tf_free(&newfails);
  free(memo);
  free(ref);
  problem_free(&pb);
  kiln__tn_tl.tuning--;
  return s;
}
