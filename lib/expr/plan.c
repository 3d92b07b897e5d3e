/*
 * Plans: an expression bound to a context and input shapes. Planning
 * decides how each input is addressed (kx_layout), generates the kernel
 * text, gets its kernels from the program registry (kiln__text_kernel_get:
 * one compile per text and device, through the disk cache) and keeps the
 * launch sizes, so a run only checks its tensors, sets arguments and
 * enqueues.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "expr/expr_internal.h"
#include "ops/ops_common.h"
#include "runtime/program_text.h"

#define PLAN_MAGIC 0x6b706c6eu /* "kpln" */

int kiln__expr_test_gpu_shapes;
#define PART_BYTES 8           /* bytes per partial result, any accumulator */

struct kiln_expr_plan {
  uint32_t magic;
  kiln_context *ctx;
  struct kx_canon canon;
  struct kx_layout lay;
  size_t nnamed; /* named scalars */
  kiln__shape in_shape[KILN_EXPR_MAX_INPUTS];
  kiln__shape out_shape[KILN_EXPR_MAX_OUTPUTS];
  uint64_t n;          /* elements of the iteration (no reduction) */
  uint64_t nout, R, gp; /* reduction: output elements, reduced elements, groups per output */
  uint64_t kd[KILN_MAX_DIMS], rd[KILN_MAX_DIMS];
  uint64_t tk[KILN_EXPR_MAX_INPUTS][KILN_MAX_DIMS], tr[KILN_EXPR_MAX_INPUTS][KILN_MAX_DIMS];
  uint32_t nkd, nrd; /* merged dimensions (the layout's kdims/rdims are 0 when nothing strides) */
  uint64_t osk[KILN_MAX_DIMS], osr; /* scans: the output's strides over the kept and scan dims */
  cl_kernel kmain, kfinal;
  char *text;
  size_t len;
};

static kiln_status
plan_check(const char *op, const kiln_expr_plan *p)
{
  KILN_RETURN_IF(!p || p->magic != PLAN_MAGIC, KILN_ERR_INVALID_HANDLE, op,
                 "plan is NULL or not a kiln_expr_plan");
  return KILN_OK;
}

/* Iteration dimensions of one group (kept or reduced): sizes and every input's strides. */
struct dims {
  uint32_t n;
  uint64_t size[KILN_MAX_DIMS];
  int64_t st[KILN_EXPR_MAX_INPUTS + 1][KILN_MAX_DIMS]; /* + 1: a scan's output */
};

/* Drops size-1 dimensions and merges neighbours every input walks contiguously. */
static void
merge(struct dims *d, size_t ninputs)
{
  struct dims m;
  memset(&m, 0, sizeof m);
  for (uint32_t j = 0; j < d->n; j++) {
    if (d->size[j] == 1)
      continue;
    int joins = m.n > 0;
    for (size_t k = 0; joins && k < ninputs; k++)
      joins = m.st[k][m.n - 1] == d->st[k][j] * (int64_t)d->size[j];
    if (joins) {
      m.size[m.n - 1] *= d->size[j];
      for (size_t k = 0; k < ninputs; k++)
        m.st[k][m.n - 1] = d->st[k][j];
      continue;
    }
    m.size[m.n] = d->size[j];
    for (size_t k = 0; k < ninputs; k++)
      m.st[k][m.n] = d->st[k][j];
    m.n++;
  }
  *d = m;
}

static uint64_t
prod(const struct dims *d)
{
  uint64_t n = 1;
  for (uint32_t j = 0; j < d->n; j++)
    n *= d->size[j];
  return n;
}

/* Nonzero when input k's strides over d are the row-major ones times scale. */
static int
is_rowmajor(const struct dims *d, size_t k, uint64_t scale)
{
  uint64_t s = scale;
  for (uint32_t j = d->n; j-- > 0;) {
    if ((uint64_t)d->st[k][j] != s)
      return 0;
    s *= d->size[j];
  }
  return 1;
}

static int
all_zero(const struct dims *d, size_t k)
{
  for (uint32_t j = 0; j < d->n; j++)
    if (d->st[k][j] != 0)
      return 0;
  return 1;
}

static uint32_t
pow2_floor(size_t v)
{
  uint32_t p = 1;
  while ((size_t)p * 2 <= v && p < (1u << 30))
    p *= 2;
  return p;
}

static kiln_status
build(const char *op, kiln_expr_plan *p)
{
  free(p->text);
  p->text = NULL;
  KILN_TRY(kiln__expr_codegen(op, &p->canon, &p->lay, &p->text, &p->len));
  char label[KILN__TEXT_LABEL_MAX];
  kiln__expr_canon_label(&p->canon, p->nnamed,
                         p->lay.scan ? " (scanned)" : p->lay.reduce ? " (reduced)" : "", label,
                         sizeof label);
  kiln_context *ctx = p->ctx;
  kiln__ctx_lock(ctx);
  kiln_status s = kiln__text_kernel_get(op, ctx, label, p->text, p->len, "-cl-std=CL1.2",
                                        p->lay.scan     ? "kx_scan"
                                        : p->lay.reduce ? "kx_reduce"
                                                        : "kx_map",
                                        &p->kmain);
  if (s == KILN_OK && p->lay.reduce)
    s = kiln__text_kernel_get(op, ctx, label, p->text, p->len, "-cl-std=CL1.2", "kx_final",
                              &p->kfinal);
  kiln__ctx_unlock(ctx);
  return s;
}

static size_t
kernel_wg_limit(kiln_context *ctx, cl_kernel k)
{
  size_t max = 0;
  if (clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof max, &max,
                               NULL) != CL_SUCCESS)
    return 0;
  return max;
}

static kiln_status
plan_layout(const char *op, kiln_context *ctx, const kiln_expr *e,
            const kiln_tensor *const *inputs, kiln_expr_plan *p)
{
  struct kx_layout *l = &p->lay;
  const size_t ni = e->ninputs;
  kiln__shape S = {0, {0}};
  for (size_t k = 0; k < ni; k++) {
    const kiln_tensor *t = inputs[k];
    KILN_TRY(kiln__tensor_check(op, t, ctx));
    KILN_RETURN_IF(t->dtype != e->inputs[k].dtype, KILN_ERR_DTYPE, op,
                   "input %zu ('%s') is %s, declared %s", k, e->inputs[k].name,
                   kiln_dtype_name(t->dtype), kiln_dtype_name(e->inputs[k].dtype));
    p->in_shape[k] = t->shape;
    kiln__shape b;
    KILN_TRY(kiln__shape_broadcast(op, &S, &t->shape, &b));
    S = b;
    l->in_dtype[k] = t->dtype;
  }
  l->ninputs = ni;

  /* which axes are reduced */
  int reduced[KILN_MAX_DIMS] = {0};
  if (e->has_scan) {
    int64_t a = e->saxis;
    KILN_RETURN_IF(a < -(int64_t)S.ndim || a >= (int64_t)S.ndim, KILN_ERR_SHAPE, op,
                   "scan axis %lld is outside the %zu dimensions of the broadcast shape",
                   (long long)a, S.ndim);
    reduced[a < 0 ? a + (int64_t)S.ndim : a] = 1;
  }
  if (e->has_reduce) {
    if (e->raxes_all) {
      for (size_t j = 0; j < S.ndim; j++)
        reduced[j] = 1;
    }
    for (size_t i = 0; i < e->nraxes; i++) {
      int64_t a = e->raxes[i];
      KILN_RETURN_IF(a < -(int64_t)S.ndim || a >= (int64_t)S.ndim, KILN_ERR_SHAPE, op,
                     "axis %lld is outside the %zu dimensions of the broadcast shape",
                     (long long)a, S.ndim);
      size_t j = (size_t)(a < 0 ? a + (int64_t)S.ndim : a);
      KILN_RETURN_IF(reduced[j], KILN_ERR_SHAPE, op, "axis %zu is named twice", j);
      reduced[j] = 1;
    }
  }
  int64_t st[KILN_EXPR_MAX_INPUTS + 1][KILN_MAX_DIMS];
  for (size_t k = 0; k < ni; k++)
    kiln__shape_broadcast_strides(&inputs[k]->shape, &S, st[k]);
  /* a scan writes the whole broadcast shape: its output walks like one more input */
  const size_t nw = e->has_scan ? ni + 1 : ni;
  if (e->has_scan)
    kiln__shape_broadcast_strides(&S, &S, st[ni]);
  struct dims kept, red;
  memset(&kept, 0, sizeof kept);
  memset(&red, 0, sizeof red);
  for (size_t j = 0; j < S.ndim; j++) {
    struct dims *d = reduced[j] ? &red : &kept;
    d->size[d->n] = (uint64_t)S.dims[j];
    for (size_t k = 0; k < nw; k++)
      d->st[k][d->n] = st[k][j];
    d->n++;
  }
  /* output shapes, before merging */
  kiln__shape os = {0, {0}};
  for (size_t j = 0; j < S.ndim; j++) {
    if (!reduced[j] || e->has_scan)
      os.dims[os.ndim++] = S.dims[j];
    else if (e->keepdims)
      os.dims[os.ndim++] = 1;
  }
  merge(&kept, nw);
  merge(&red, nw);
  p->nout = prod(&kept);
  p->R = prod(&red);
  p->n = p->nout;

  int strided = 0;
  for (size_t k = 0; k < ni; k++) {
    /* flat first: a one-element input of a one-element iteration is flat, so that size 1
       shares the kernel of every other size */
    if (is_rowmajor(&red, k, 1) && is_rowmajor(&kept, k, p->R))
      l->access[k] = KX_FLAT;
    else if (all_zero(&kept, k) && all_zero(&red, k))
      l->access[k] = KX_SPLAT;
    else
      l->access[k] = KX_STRIDED;
    strided |= l->access[k] == KX_STRIDED;
  }
  p->nkd = kept.n;
  p->nrd = red.n;
  for (uint32_t j = 0; j < kept.n; j++)
    p->kd[j] = kept.size[j];
  for (uint32_t j = 0; j < red.n; j++)
    p->rd[j] = red.size[j];
  for (size_t k = 0; k < ni; k++) {
    for (uint32_t j = 0; j < kept.n; j++)
      p->tk[k][j] = (uint64_t)kept.st[k][j];
    for (uint32_t j = 0; j < red.n; j++)
      p->tr[k][j] = (uint64_t)red.st[k][j];
  }
  /* the text depends on the merged rank only when an input (or a scan's output) needs it */
  l->kdims = strided || e->has_scan ? kept.n : 0;
  l->rdims = strided && (e->has_reduce || e->has_scan) ? red.n : 0;
  if (e->has_scan) {
    for (uint32_t j = 0; j < kept.n; j++)
      p->osk[j] = (uint64_t)kept.st[ni][j];
    p->osr = red.n ? (uint64_t)red.st[ni][0] : 0;
  }
  /* an elementwise launch with strides decomposes i over the kept dims */

  /* scalars: named ones, then the constants in canonical order */
  p->nnamed = e->nscalars;
  for (size_t s = 0; s < e->nscalars; s++)
    l->scalar_dtype[s] = e->scalars[s].dtype;
  for (size_t i = 0; i < p->canon.nnodes; i++)
    if (p->canon.nodes[i].kind == KX_CONST)
      l->scalar_dtype[e->nscalars + (size_t)p->canon.nodes[i].slot] = p->canon.nodes[i].dtype;
  l->nscalars = e->nscalars + p->canon.nconsts;

  l->fp64 = ctx->info.has_fp64;
  l->reduce = e->has_reduce;
  l->rop = e->rop;
  l->scan = e->has_scan;
  l->exclusive = e->sexclusive;
  if (l->scan)
    l->rop = e->sop == KILN_SCAN_CUMSUM    ? KILN_REDUCE_SUM
             : e->sop == KILN_SCAN_CUMPROD ? KILN_REDUCE_PROD
             : e->sop == KILN_SCAN_CUMMIN  ? KILN_REDUCE_MIN
                                           : KILN_REDUCE_MAX;
  for (size_t k = 0; k < p->canon.noutputs; k++) {
    kiln_dtype od = p->canon.out_dtype[k];
    l->res_dtype[k] =
        l->reduce || l->scan ? kiln__expr_reduce_dtype(l->rop, od, l->fp64) : od;
    p->out_shape[k] = os;
  }
  if (l->reduce || l->scan) {
    kiln_dtype od = p->canon.out_dtype[0];
    l->acc_dtype = l->rop == KILN_REDUCE_ANY || l->rop == KILN_REDUCE_ALL ? KILN_BOOL
                                                                          : l->res_dtype[0];
    if (l->rop == KILN_REDUCE_MAX || l->rop == KILN_REDUCE_MIN)
      l->acc_dtype = od;
    for (size_t k = 1; k < p->canon.noutputs; k++)
      KILN_RETURN_IF(l->res_dtype[k] != l->res_dtype[0], KILN_ERR_DTYPE, op,
                     "reduced outputs must share a result dtype: '%s' gives %s, '%s' %s",
                     e->outputs[0].name, kiln_dtype_name(l->res_dtype[0]), e->outputs[k].name,
                     kiln_dtype_name(l->res_dtype[k]));
  }
  /* fp64 anywhere needs the device's */
  int needs64 = l->acc_dtype == KILN_F64 && (l->reduce || l->scan);
  for (size_t i = 0; i < p->canon.nnodes; i++)
    needs64 |= p->canon.nodes[i].dtype == KILN_F64;
  for (size_t k = 0; k < p->canon.noutputs; k++)
    needs64 |= l->res_dtype[k] == KILN_F64;
  KILN_RETURN_IF(needs64 && !l->fp64, KILN_ERR_UNSUPPORTED, op,
                 "the expression computes in f64 and the device has no fp64");

  /* launch shapes */
  int gpu = ctx->info.is_gpu || kiln__expr_test_gpu_shapes;
  l->items = gpu ? 4 : 1;
  l->blocked = !gpu;
  l->lanes = gpu ? 1 : 8;
  /* f16/bf16 are loaded and stored one element at a time (CPUs: one a work-item) */
  int halves = 0;
  for (size_t k = 0; k < ni; k++)
    halves |= kiln__dtype_is_half(l->in_dtype[k]);
  for (size_t i = 0; i < p->canon.nnodes; i++)
    halves |= kiln__dtype_is_half(p->canon.nodes[i].dtype);
  for (size_t k = 0; k < p->canon.noutputs; k++)
    halves |= kiln__dtype_is_half(l->res_dtype[k]);
  if (halves)
    l->lanes = 1;
  l->wg = pow2_floor(ctx->wg_size < 256 ? (ctx->wg_size ? ctx->wg_size : 64) : 256);
  if (l->reduce) {
    uint64_t target = (uint64_t)(ctx->info.compute_units ? ctx->info.compute_units : 1) *
                      (gpu ? 8 : 2);
    uint64_t gp = p->nout ? (target + p->nout - 1) / p->nout : 1;
    uint64_t most = (p->R + (uint64_t)l->wg * 4 - 1) / ((uint64_t)l->wg * 4);
    if (gp > most)
      gp = most;
    p->gp = gp ? gp : 1;
  }
  return KILN_OK;
}

kiln_status
kiln_expr_plan_create(kiln_context *ctx, const kiln_expr *e, const kiln_tensor *const *inputs,
                      size_t ninputs, kiln_expr_plan **out)
{
  const char *op = "kiln_expr_plan_create";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(kiln__expr_check(op, e));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  *out = NULL;
  KILN_RETURN_IF(ninputs != e->ninputs, KILN_ERR_INVALID_ARGUMENT, op,
                 "%zu inputs given, the expression declares %zu", ninputs, e->ninputs);
  KILN_RETURN_IF(ninputs && !inputs, KILN_ERR_INVALID_ARGUMENT, op, "inputs is NULL");
  kiln_expr_plan *p = calloc(1, sizeof *p);
  KILN_RETURN_IF(!p, KILN_ERR_HOST_MEMORY, op, "no memory for a plan");
  p->magic = PLAN_MAGIC;
  p->ctx = ctx;
  kiln_status s = kiln__expr_canon(op, e, &p->canon);
  if (s == KILN_OK)
    s = plan_layout(op, ctx, e, inputs, p);
  if (s == KILN_OK)
    s = build(op, p);
  if (s == KILN_OK && (p->lay.reduce || p->lay.scan)) {
    /* the reduction's work-group size must fit both kernels */
    size_t lim = kernel_wg_limit(ctx, p->kmain);
    size_t lim2 = p->lay.reduce ? kernel_wg_limit(ctx, p->kfinal) : lim;
    if (lim2 < lim)
      lim = lim2;
    if (lim && lim < p->lay.wg) {
      p->lay.wg = pow2_floor(lim);
      s = build(op, p);
    }
  }
  if (s != KILN_OK) {
    kiln_expr_plan_release(p);
    return s;
  }
  *out = p;
  return KILN_OK;
}

void
kiln_expr_plan_release(kiln_expr_plan *p)
{
  if (!p || p->magic != PLAN_MAGIC)
    return;
  p->magic = 0;
  kiln__expr_canon_free(&p->canon);
  free(p->text);
  free(p);
}

const char *
kiln_expr_plan_source(const kiln_expr_plan *p)
{
  return p && p->magic == PLAN_MAGIC ? p->text : NULL;
}

kiln_status
kiln_expr_plan_output(const kiln_expr_plan *p, size_t k, kiln_dtype *dtype, size_t *ndim,
                      int64_t *shape)
{
  const char *op = "kiln_expr_plan_output";
  KILN_TRY(plan_check(op, p));
  KILN_RETURN_IF(k >= p->canon.noutputs, KILN_ERR_INVALID_ARGUMENT, op,
                 "output %zu of %zu", k, p->canon.noutputs);
  KILN_RETURN_IF(!dtype || !ndim || !shape, KILN_ERR_INVALID_ARGUMENT, op, "NULL pointer");
  *dtype = p->lay.res_dtype[k];
  *ndim = p->out_shape[k].ndim;
  for (size_t j = 0; j < p->out_shape[k].ndim; j++)
    shape[j] = p->out_shape[k].dims[j];
  return KILN_OK;
}

/* Arguments common to kx_map and kx_reduce: inputs, scalars, outputs, dims and strides. */
static void
common_args(kiln_expr_plan *p, kiln__args *a, const kiln_tensor *const *inputs,
            const unsigned char (*sv)[8], kiln_tensor *const *outs)
{
  const struct kx_layout *l = &p->lay;
  for (size_t k = 0; k < l->ninputs; k++)
    kiln__args_tensor(a, inputs[k]);
  for (size_t s = 0; s < l->nscalars; s++)
    kiln__args_raw(a, kiln__dtype_is_half(l->scalar_dtype[s]) ? sizeof(float)
                                                              : kiln_dtype_size(l->scalar_dtype[s]),
                   sv[s]);
  for (size_t k = 0; k < p->canon.noutputs; k++)
    kiln__args_tensor(a, outs[k]);
  int strided = 0;
  for (size_t k = 0; k < l->ninputs; k++)
    strided |= l->access[k] == KX_STRIDED;
  if (!strided && !l->scan)
    return;
  for (uint32_t j = 0; j < l->kdims; j++)
    kiln__args_u64(a, p->kd[j]);
  for (uint32_t j = 0; j < l->rdims; j++)
    kiln__args_u64(a, p->rd[j]);
  for (size_t k = 0; k < l->ninputs; k++) {
    if (l->access[k] != KX_STRIDED)
      continue;
    for (uint32_t j = 0; j < l->kdims; j++)
      kiln__args_u64(a, p->tk[k][j]);
    for (uint32_t j = 0; j < l->rdims; j++)
      kiln__args_u64(a, p->tr[k][j]);
  }
}

/* Enqueues the plan's kernels (ctx->lock held). */
static kiln_status
enqueue_locked(const char *op, kiln_expr_plan *p, const kiln_tensor *const *inputs,
               const unsigned char (*sv)[8], kiln_tensor *const *outs)
{
  kiln_context *ctx = p->ctx;
  const struct kx_layout *l = &p->lay;
  if (l->scan) {
    if (p->nout == 0 || p->R == 0)
      return KILN_OK;
    uint64_t groups = p->nout, cap = ((uint64_t)1 << 31) / l->wg;
    if (groups > cap)
      groups = cap;
    if (kiln__launch_max_groups && groups > kiln__launch_max_groups)
      groups = kiln__launch_max_groups;
    kiln__args a = kiln__args_begin(op, p->kmain);
    common_args(p, &a, inputs, sv, outs);
    kiln__args_u64(&a, p->nout);
    kiln__args_u64(&a, p->R);
    kiln__args_u64(&a, p->osr);
    for (uint32_t j = 0; j < l->kdims; j++)
      kiln__args_u64(&a, p->osk[j]);
    return kiln__args_enqueue_1d(&a, ctx, (size_t)(groups * l->wg), l->wg);
  }
  if (!l->reduce) {
    if (p->n == 0)
      return KILN_OK;
    kiln__args a = kiln__args_begin(op, p->kmain);
    common_args(p, &a, inputs, sv, outs);
    kiln__args_u64(&a, p->n);
    uint64_t per = l->items == 1 ? l->lanes : l->items;
    return kiln__args_launch_1d(&a, ctx, (p->n + per - 1) / per, 0);
  }
  if (p->nout == 0)
    return KILN_OK;
  kiln__ops_tmp part = {0};
  if (p->gp > 1)
    KILN_TRY(kiln__ops_tmp_alloc(ctx, p->canon.noutputs * p->nout * p->gp * PART_BYTES, &part));
  uint64_t groups = p->nout * p->gp;
  uint64_t cap = ((uint64_t)1 << 31) / l->wg;
  if (groups > cap)
    groups = cap;
  if (kiln__launch_max_groups && groups > kiln__launch_max_groups)
    groups = kiln__launch_max_groups;
  kiln__args a = kiln__args_begin(op, p->kmain);
  common_args(p, &a, inputs, sv, outs);
  kiln__args_u64(&a, p->nout);
  kiln__args_u64(&a, p->R);
  kiln__args_u64(&a, p->gp);
  kiln__args_mem(&a, part.mem);
  kiln_status s = kiln__args_enqueue_1d(&a, ctx, (size_t)(groups * l->wg), l->wg);
  if (s == KILN_OK && p->gp > 1) {
    groups = p->nout < cap ? p->nout : cap;
    if (kiln__launch_max_groups && groups > kiln__launch_max_groups)
      groups = kiln__launch_max_groups;
    kiln__args f = kiln__args_begin(op, p->kfinal);
    for (size_t k = 0; k < p->canon.noutputs; k++)
      kiln__args_tensor(&f, outs[k]);
    kiln__args_u64(&f, p->nout);
    kiln__args_u64(&f, p->R);
    kiln__args_u64(&f, p->gp);
    kiln__args_mem(&f, part.mem);
    s = kiln__args_enqueue_1d(&f, ctx, (size_t)(groups * l->wg), l->wg);
  }
  if (part.mem)
    kiln__ops_tmp_free(ctx, &part);
  return s;
}

kiln_status
kiln_expr_plan_run(kiln_expr_plan *p, const kiln_tensor *const *inputs, size_t ninputs,
                   const kiln_scalar *scalars, size_t nscalars, kiln_tensor **outs,
                   size_t noutputs)
{
  const char *op = "kiln_expr_plan_run";
  KILN_TRY(plan_check(op, p));
  kiln_context *ctx = p->ctx;
  KILN_TRY(kiln__ctx_check(op, ctx));
  const struct kx_layout *l = &p->lay;
  KILN_RETURN_IF(ninputs != l->ninputs, KILN_ERR_INVALID_ARGUMENT, op,
                 "%zu inputs given, the plan takes %zu", ninputs, l->ninputs);
  KILN_RETURN_IF(ninputs && !inputs, KILN_ERR_INVALID_ARGUMENT, op, "inputs is NULL");
  KILN_RETURN_IF(nscalars != p->nnamed, KILN_ERR_INVALID_ARGUMENT, op,
                 "%zu scalars given, the expression declares %zu", nscalars, p->nnamed);
  KILN_RETURN_IF(nscalars && !scalars, KILN_ERR_INVALID_ARGUMENT, op, "scalars is NULL");
  KILN_RETURN_IF(noutputs != p->canon.noutputs || !outs, KILN_ERR_INVALID_ARGUMENT, op,
                 "%zu outputs given, the expression has %zu", noutputs, p->canon.noutputs);
  for (size_t k = 0; k < ninputs; k++) {
    const kiln_tensor *t = inputs[k];
    KILN_TRY(kiln__tensor_check(op, t, ctx));
    KILN_RETURN_IF(t->dtype != l->in_dtype[k], KILN_ERR_DTYPE, op,
                   "input %zu is %s, the plan was made for %s", k, kiln_dtype_name(t->dtype),
                   kiln_dtype_name(l->in_dtype[k]));
    if (!kiln__shape_equal(&t->shape, &p->in_shape[k])) {
      char a[160], b[160];
      return kiln__fail(KILN_ERR_SHAPE, op, 0, "input %zu has shape %s, the plan was made for %s",
                        k, kiln__shape_format(&t->shape, a, sizeof a),
                        kiln__shape_format(&p->in_shape[k], b, sizeof b));
    }
  }
  KILN_RETURN_IF(l->reduce && p->R == 0 && p->nout > 0 &&
                     (l->rop == KILN_REDUCE_MIN || l->rop == KILN_REDUCE_MAX),
                 KILN_ERR_SHAPE, op, "%s over zero elements has no value",
                 kiln_reduce_op_name(l->rop));
  unsigned char sv[KILN_EXPR_MAX_SCALARS][8];
  memset(sv, 0, sizeof sv);
  for (size_t s = 0; s < l->nscalars; s++) {
    kiln_scalar v = s < p->nnamed ? scalars[s] : p->canon.consts[s - p->nnamed];
    kiln__scalar_to_bytes(v, l->scalar_dtype[s], sv[s]);
    if (kiln__dtype_is_half(l->scalar_dtype[s])) {
      /* rounded to the 16-bit type once, passed as the float the kernel computes in */
      uint16_t h;
      memcpy(&h, sv[s], sizeof h);
      float f = l->scalar_dtype[s] == KILN_F16 ? kiln_f16_to_f32(h) : kiln_bf16_to_f32(h);
      memcpy(sv[s], &f, sizeof f);
    }
  }
  int made[KILN_EXPR_MAX_OUTPUTS] = {0};
  kiln_status st = KILN_OK;
  size_t k;
  for (k = 0; k < noutputs && st == KILN_OK; k++)
    st = kiln__output_prepare(op, ctx, l->res_dtype[k], &p->out_shape[k], &outs[k], &made[k]);
  if (st == KILN_OK)
    st = kiln__ops_outputs_disjoint(op, outs, NULL, noutputs);
  for (size_t j = 0; j < noutputs && st == KILN_OK; j++) {
    for (size_t i = 0; i < ninputs && st == KILN_OK; i++) {
      kiln__overlap ov = kiln__ops_overlap(outs[j], inputs[i]);
      /* an output over exactly a flat input's bytes: each element is read before it is written */
      if (ov == KILN__OVERLAP_NONE ||
          (ov == KILN__OVERLAP_SAME && !l->reduce && l->access[i] == KX_FLAT))
        continue;
      st = kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                      "output %zu shares bytes with input %zu (only an elementwise output over "
                      "exactly a same-shaped input's bytes may)",
                      j, i);
    }
  }
  if (st == KILN_OK) {
    kiln__ctx_lock(ctx);
    st = enqueue_locked(op, p, inputs, (const unsigned char(*)[8])sv, outs);
    kiln__ctx_unlock(ctx);
  }
  if (st != KILN_OK)
    for (size_t j = 0; j < noutputs; j++)
      kiln__output_discard(&outs[j], made[j]);
  return st;
}

kiln_status
kiln_expr_eval(kiln_context *ctx, const kiln_expr *e, const kiln_tensor *const *inputs,
               size_t ninputs, const kiln_scalar *scalars, size_t nscalars, kiln_tensor **outs,
               size_t noutputs)
{
  kiln_expr_plan *p;
  KILN_TRY(kiln_expr_plan_create(ctx, e, inputs, ninputs, &p));
  kiln_status s = kiln_expr_plan_run(p, inputs, ninputs, scalars, nscalars, outs, noutputs);
  kiln_expr_plan_release(p);
  return s;
}

/*
 * `kiln cache warm --from FILE`'s [expr NAME] sections (kiln__warm_expr_hook): the text's
 * undeclared names are f32 inputs, all of one shape of 2s with as many dimensions as the
 * reduction's axes need, so that the kernel built is the one a later call on same-shaped
 * contiguous inputs (any size) plans. The label is the canonical one the plan gives (it is
 * part of the disk key, so that equal expressions share the entry), not the section's name.
 */
static kiln_status
warm_expr(kiln_context *ctx, const char *label, const char *text)
{
  const char *op = "kiln cache warm (expr)";
  (void)label;
  kiln_expr *e;
  KILN_TRY(kiln__expr_parse_implicit(text, KILN_F32, &e));
  size_t nd = 1;
  for (size_t i = 0; i < e->nraxes; i++) {
    size_t need = (size_t)(e->raxes[i] >= 0 ? e->raxes[i] + 1 : -e->raxes[i]);
    nd = need > nd ? need : nd;
  }
  if (nd > KILN_MAX_DIMS)
    nd = KILN_MAX_DIMS;
  int64_t shape[KILN_MAX_DIMS];
  for (size_t j = 0; j < nd; j++)
    shape[j] = 2;
  kiln_tensor *t[KILN_EXPR_MAX_INPUTS] = {0};
  kiln_status s = KILN_OK;
  for (size_t k = 0; k < e->ninputs && s == KILN_OK; k++)
    s = kiln_tensor_zeros(ctx, e->inputs[k].dtype, nd, shape, &t[k]);
  kiln_expr_plan *p = NULL;
  if (s == KILN_OK)
    s = kiln_expr_plan_create(ctx, e, (const kiln_tensor *const *)t, e->ninputs, &p);
  if (s != KILN_OK && kiln_last_error_op()[0] == 0)
    s = kiln__fail(s, op, 0, "could not plan '%s'", text);
  kiln_expr_plan_release(p);
  for (size_t k = 0; k < e->ninputs; k++)
    kiln_tensor_release(t[k]);
  kiln_expr_release(e);
  return s;
}

/* The expression family is linked: `kiln cache warm --from` may compile [expr] sections. */
__attribute__((constructor)) static void
set_warm_hook(void)
{
  kiln__warm_expr_hook = warm_expr;
}
