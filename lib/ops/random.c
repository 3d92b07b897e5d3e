/*
 * Random family: the per-context Philox4x32-10 stream state and the
 * generators. Each call reserves its counter blocks under the context lock
 * and enqueues one kernel over them; see cl_kernels/random.cl for the
 * element-to-word mapping and the device-independent arithmetic.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "kiln/random.h"
#include "ops/families.h"
#include "ops/ops_common.h"
#include "runtime/tuner.h"

/* The family's per-context state: the Philox stream (guarded by ctx->lock). A new
 * context starts at seed 0, counter 0. */
struct rng_state {
  uint64_t seed, counter;
};

static kiln_status
rng_state_create(kiln_context *ctx, void **state)
{
  *state = calloc(1, sizeof(struct rng_state));
  return *state ? KILN_OK
                : kiln__fail(KILN_ERR_HOST_MEMORY, "kiln_context_create", 0,
                             "cannot allocate the random stream state");
}

static void
rng_state_destroy(kiln_context *ctx, void *state)
{
  free(state);
}

/*
 * Launch parameters of random_normal, the one generator whose arithmetic,
 * not memory, bounds it (about 200 instructions per counter block): the
 * local size, the vectors of blocks one work-item turns into values, a
 * work-group apart (KILN_RNG_BLOCKS), and the blocks per vector, computed
 * as SIMD lanes (KILN_RNG_VEC); both compiled in. None changes a bit of the
 * output.
 */
struct rng_params {
  uint32_t wg_size;
  uint32_t blocks_per_item;
  uint32_t vec_width;
};

#define RNG_BLOCKS_MAX 16
#define RNG_VEC_MAX 16

/*
 * Defaults. PoCL on this machine's EPYC (AVX-512; kiln bench, docs/layout.md):
 * 16 lanes ran f32 normals 6x faster than scalar code, which PoCL does not
 * vectorise across work-items. GPUs: scalar work-items, 4 blocks each (H200,
 * bench/h200/core.sh at 2^26 against PyTorch's randn: f32 0.94x with 1 block,
 * 0.92x with 2, 0.95x with 4; f64 1.07x, 1.08x, 1.13x).
 */
static void
rng_default_shape(const kiln_device_info *info, uint32_t *blocks, uint32_t *vec)
{
  *blocks = info->is_gpu ? 4 : 1;
  *vec = info->is_gpu ? 1 : 16;
}

static void
rng_build_options(const kiln_device_info *info, const char *source, kiln_dtype dtype,
                  const void *variant, char *buf, size_t len)
{
  (void)source;
  (void)dtype;
  const kiln__program_variant *v = variant;
  uint32_t blocks, vec;
  rng_default_shape(info, &blocks, &vec);
  if (v && v->rng_blocks)
    blocks = v->rng_blocks;
  if (v && v->rng_vec)
    vec = v->rng_vec;
  if (blocks != 1 || vec != 1)
    kiln__options_append(buf, len, " -DKILN_RNG_BLOCKS=%u -DKILN_RNG_VEC=%u", blocks, vec);
}

static const struct kiln__tune_family rng_tune;

static const struct kiln__source random_sources[] = {{"random", KILN__DT_EVERY}, {NULL, 0}};

const struct kiln__family kiln__random_family = {.name = "random",
                                                 .sources = random_sources,
                                                 .build_options = rng_build_options,
                                                 .state_create = rng_state_create,
                                                 .state_destroy = rng_state_destroy};

static struct rng_state *
rng(const kiln_context *ctx)
{
  return kiln__family_state(ctx, &kiln__random_family);
}

kiln_status
kiln_rng_seed(kiln_context *ctx, uint64_t seed)
{
  KILN_TRY(kiln__ctx_check("kiln_rng_seed", ctx));
  kiln__ctx_lock(ctx);
  rng(ctx)->seed = seed;
  rng(ctx)->counter = 0;
  kiln__ctx_unlock(ctx);
  return KILN_OK;
}

kiln_status
kiln_rng_state_get(const kiln_context *ctx, kiln_rng_state *out)
{
  static const char op[] = "kiln_rng_state_get";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  kiln_context *c = (kiln_context *)ctx; /* the lock is not part of the logical state */
  kiln__ctx_lock(c);
  out->seed = rng(c)->seed;
  out->counter = rng(c)->counter;
  kiln__ctx_unlock(c);
  return KILN_OK;
}

kiln_status
kiln_rng_state_set(kiln_context *ctx, const kiln_rng_state *state)
{
  static const char op[] = "kiln_rng_state_set";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!state, KILN_ERR_INVALID_ARGUMENT, op, "state is NULL");
  kiln__ctx_lock(ctx);
  rng(ctx)->seed = state->seed;
  rng(ctx)->counter = state->counter;
  kiln__ctx_unlock(ctx);
  return KILN_OK;
}

void
kiln__random_stream_locked(kiln_context *ctx, uint64_t *seed, uint64_t *counter)
{
  KILN__ASSERT_LOCKED(ctx);
  *seed = rng(ctx)->seed;
  *counter = rng(ctx)->counter;
}

void
kiln__random_advance_locked(kiln_context *ctx, uint64_t nblocks)
{
  KILN__ASSERT_LOCKED(ctx);
  rng(ctx)->counter += nblocks; /* wraps modulo 2^64 */
}

static kiln_status
get_kernel(const char *op, kiln_context *ctx, kiln_dtype dtype, const char *name, cl_kernel *k)
{
  return kiln__ops_kernel(op, ctx, "random", dtype, name, k);
}

/* The stream arguments (base, k0, k1) of a call that reads nblocks blocks. */
struct stream {
  uint64_t base;
  uint32_t k0, k1;
  uint64_t nblocks;
};

/* Reads the state for a call (ctx->lock held); stream_commit_locked advances it once the call is
 * enqueued.
 */
static struct stream
stream_begin_locked(kiln_context *ctx, uint64_t nblocks)
{
  KILN__ASSERT_LOCKED(ctx);
  const struct rng_state *r = rng(ctx);
  struct stream s = {r->counter, (uint32_t)r->seed, (uint32_t)(r->seed >> 32), nblocks};
  return s;
}

static void
stream_commit_locked(kiln_context *ctx, const struct stream *s)
{
  KILN__ASSERT_LOCKED(ctx);
  rng(ctx)->counter = s->base + s->nblocks; /* wraps modulo 2^64 */
}

static void
stream_args(kiln__args *a, const struct stream *s)
{
  kiln__args_u64(a, s->base);
  kiln__args_u32(a, s->k0);
  kiln__args_u32(a, s->k1);
}

static kiln_status
check_out(const char *op, kiln_context *ctx, const kiln_tensor *out)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  return kiln__tensor_check(op, out, ctx);
}

/*
 * Fills out with kernel `name`, whose arguments are (out, off, n, base, k0,
 * k1, extra...), reading per_block elements from each counter block: one
 * work-item per block, any launch geometry; with lp (random_normal), one
 * work-item per blocks_per_item x vec_width blocks in groups of wg_size.
 */
static kiln_status
fill_with(const char *op, kiln_context *ctx, kiln_tensor *out, const char *name,
          uint64_t per_block, const void *extra, size_t extra_size, size_t nextra,
          const struct rng_params *lp)
{
  uint64_t n = out->numel;
  uint64_t nblocks = (n + per_block - 1) / per_block;
  kiln__program_variant v = {0};
  uint64_t items = nblocks;
  size_t local = 0;
  if (lp) {
    v.rng_blocks = lp->blocks_per_item;
    v.rng_vec = lp->vec_width;
    uint64_t per_item = (uint64_t)lp->blocks_per_item * lp->vec_width;
    items = nblocks / per_item + (nblocks % per_item != 0);
    local = lp->wg_size;
  }
  kiln__ctx_lock(ctx);
  struct stream st = stream_begin_locked(ctx, nblocks);
  kiln_status s = KILN_OK;
  if (n) {
    cl_kernel k;
    s = kiln__ops_kernel_variant(op, ctx, "random", out->dtype, lp ? &v : NULL, name, &k);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, out);
      kiln__args_u64(&a, n);
      stream_args(&a, &st);
      for (size_t i = 0; i < nextra; i++)
        kiln__args_raw(&a, extra_size, (const char *)extra + i * extra_size);
      s = a.status;
    }
    if (s == KILN_OK)
      s = kiln__launch_1d(op, ctx, k, items, local);
  }
  if (s == KILN_OK)
    stream_commit_locked(ctx, &st);
  kiln__ctx_unlock(ctx);
  return s;
}

static kiln_status
fill(const char *op, kiln_context *ctx, kiln_tensor *out, const char *name, uint64_t per_block,
     const void *extra, size_t extra_size, size_t nextra)
{
  return fill_with(op, ctx, out, name, per_block, extra, extra_size, nextra, NULL);
}

/* random_normal's launch parameters for out (a lookup: call it before taking ctx->lock). */
static struct rng_params
normal_params(kiln_context *ctx, const kiln_tensor *out)
{
  struct rng_params p;
  kiln__tune_lookup(ctx, &rng_tune, out->dtype, KILN__LAYOUT_FLAT, out->numel, &p);
  /* Values the kernels do not compile (an override, an imported table) fall back to the
   * defaults rather than failing the op on a build error. */
  uint32_t blocks, vec;
  rng_default_shape(&ctx->info, &blocks, &vec);
  if (p.blocks_per_item < 1 || p.blocks_per_item > RNG_BLOCKS_MAX)
    p.blocks_per_item = blocks;
  if (p.vec_width < 1 || p.vec_width > RNG_VEC_MAX || (p.vec_width & (p.vec_width - 1)))
    p.vec_width = vec;
  if (p.wg_size < 1)
    p.wg_size = 1;
  if (ctx->info.max_work_group_size && p.wg_size > ctx->info.max_work_group_size)
    p.wg_size = (uint32_t)ctx->info.max_work_group_size;
  return p;
}

/* ---- f16 and bf16: the f32 values, rounded to nearest even by the kernel's store ---- */

static uint16_t
half_bits(kiln_dtype dt, double v)
{
  return dt == KILN_F16 ? kiln_f16_from_f64(v) : kiln_bf16_from_f64(v);
}

static float
half_value(kiln_dtype dt, uint16_t b)
{
  return dt == KILN_F16 ? kiln_f16_to_f32(b) : kiln_bf16_to_f32(b);
}

/* The neighbours of a finite 16-bit float (sign and magnitude: both formats order the same way). */
static uint16_t
half_up(uint16_t b)
{
  return b == 0x8000u ? 0x0001u : (b & 0x8000u) ? (uint16_t)(b - 1) : (uint16_t)(b + 1);
}

static uint16_t
half_down(uint16_t b)
{
  return b == 0x0000u ? 0x8001u : (b & 0x8000u) ? (uint16_t)(b + 1) : (uint16_t)(b - 1);
}

/* The smallest storage value >= v (v finite); may be infinite. */
static uint16_t
half_ceil(kiln_dtype dt, double v)
{
  uint16_t b = half_bits(dt, v);
  return (double)half_value(dt, b) < v ? half_up(b) : b;
}

/*
 * Bounds of a 16-bit uniform: L and H are lo and hi rounded up to the
 * storage type (so the storage values in [L, H) are those in [lo, hi)), and
 * top is the largest float whose rounding to nearest even stays below H: the
 * midpoint between H and the value below it, or the float under it when that
 * tie rounds to H. Every value involved is exact in f32.
 */
static kiln_status
half_uniform_bounds(const char *op, kiln_dtype dt, double lo, double hi, float out[3])
{
  const char *name = kiln_dtype_name(dt);
  float l = half_value(dt, half_ceil(dt, lo)), h = half_value(dt, half_ceil(dt, hi));
  KILN_RETURN_IF(!isfinite(l) || !isfinite(h), KILN_ERR_INVALID_ARGUMENT, op,
                 "[%g, %g) reaches beyond the finite %s values", lo, hi, name);
  KILN_RETURN_IF(!(l < h), KILN_ERR_INVALID_ARGUMENT, op, "[%g, %g) holds no %s value", lo, hi,
                 name);
  KILN_RETURN_IF(!isfinite(h - l), KILN_ERR_INVALID_ARGUMENT, op,
                 "[%g, %g) is too wide: hi - lo overflows f32", lo, hi);
  uint16_t hb = half_bits(dt, h);
  float mid = (float)(((double)half_value(dt, half_down(hb)) + (double)h) / 2);
  out[0] = l;
  out[1] = h;
  out[2] = half_value(dt, half_bits(dt, mid)) >= h ? nextafterf(mid, -INFINITY) : mid;
  return KILN_OK;
}

kiln_status
kiln_random_uniform(kiln_context *ctx, kiln_tensor *out, double lo, double hi)
{
  static const char op[] = "kiln_random_uniform";
  KILN_TRY(check_out(op, ctx, out));
  kiln_dtype dt = out->dtype;
  KILN_RETURN_IF(!kiln__dtype_is_floating(dt), KILN_ERR_DTYPE, op,
                 "uniform values are f16, bf16, f32 or f64, not %s", kiln_dtype_name(dt));
  KILN_RETURN_IF(!isfinite(lo) || !isfinite(hi) || !(lo < hi), KILN_ERR_INVALID_ARGUMENT, op,
                 "needs finite lo < hi (got %g, %g)", lo, hi);
  if (kiln__dtype_is_half(dt)) {
    float b[3];
    KILN_TRY(half_uniform_bounds(op, dt, lo, hi, b));
    return fill(op, ctx, out, "random_uniform", 4, b, 4, 3);
  }
  if (dt == KILN_F32) {
    float b[3] = {(float)lo, (float)hi, 0};
    KILN_RETURN_IF(!(b[0] < b[1]) || !isfinite(b[1] - b[0]) || !isfinite(b[0]) || !isfinite(b[1]),
                   KILN_ERR_INVALID_ARGUMENT, op, "[%g, %g) is empty or too wide in f32", lo, hi);
    b[2] = nextafterf(b[1], b[0]);
    return fill(op, ctx, out, "random_uniform", 4, b, 4, 3);
  }
  KILN_RETURN_IF(!isfinite(hi - lo), KILN_ERR_INVALID_ARGUMENT, op,
                 "[%g, %g) is too wide: hi - lo overflows", lo, hi);
  double b[3] = {lo, hi, nextafter(hi, lo)};
  return fill(op, ctx, out, "random_uniform", 2, b, 8, 3);
}

kiln_status
kiln_random_normal(kiln_context *ctx, kiln_tensor *out, double mean, double stddev)
{
  static const char op[] = "kiln_random_normal";
  KILN_TRY(check_out(op, ctx, out));
  kiln_dtype dt = out->dtype;
  KILN_RETURN_IF(!kiln__dtype_is_floating(dt) && !kiln__dtype_is_complex(dt), KILN_ERR_DTYPE, op,
                 "normal values are f16, bf16, f32, f64, c64 or c128, not %s", kiln_dtype_name(dt));
  KILN_RETURN_IF(!isfinite(mean) || !isfinite(stddev) || stddev < 0, KILN_ERR_INVALID_ARGUMENT, op,
                 "needs finite mean and stddev >= 0 (got %g, %g)", mean, stddev);
  /* Complex: each part has variance stddev^2 / 2, so E|z - mean|^2 = stddev^2. */
  double sd = kiln__dtype_is_complex(dt) ? stddev * 0.70710678118654752440 : stddev;
  uint64_t per = dt == KILN_C128 ? 1 : dt == KILN_F64 || dt == KILN_C64 ? 2 : 4;
  struct rng_params lp = normal_params(ctx, out);
  if (kiln__dtype_real_part(dt) == KILN_F64) {
    double p[2] = {mean, sd};
    return fill_with(op, ctx, out, "random_normal", per, p, 8, 2, &lp);
  }
  float p[2] = {(float)mean, (float)sd};
  KILN_RETURN_IF(!isfinite(p[0]) || !isfinite(p[1]), KILN_ERR_INVALID_ARGUMENT, op,
                 "mean %g or stddev %g overflows f32", mean, stddev);
  KILN_RETURN_IF(kiln__dtype_is_half(dt) && (!isfinite(half_value(dt, half_bits(dt, mean))) ||
                                             !isfinite(half_value(dt, half_bits(dt, stddev)))),
                 KILN_ERR_INVALID_ARGUMENT, op, "mean %g or stddev %g overflows %s", mean, stddev,
                 kiln_dtype_name(dt));
  return fill_with(op, ctx, out, "random_normal", per, p, 4, 2, &lp);
}

kiln_status
kiln_random_integers(kiln_context *ctx, kiln_tensor *out, int64_t lo, int64_t hi)
{
  static const char op[] = "kiln_random_integers";
  KILN_TRY(check_out(op, ctx, out));
  kiln_dtype dt = out->dtype;
  KILN_RETURN_IF(dt != KILN_I32 && dt != KILN_I64 && dt != KILN_U8, KILN_ERR_DTYPE, op,
                 "random integers are i32, i64 or u8, not %s", kiln_dtype_name(dt));
  KILN_RETURN_IF(!(lo < hi), KILN_ERR_INVALID_ARGUMENT, op, "needs lo < hi (got %lld, %lld)",
                 (long long)lo, (long long)hi);
  int64_t min = dt == KILN_I32 ? INT32_MIN : dt == KILN_U8 ? 0 : INT64_MIN;
  int64_t max = dt == KILN_I32 ? INT32_MAX : dt == KILN_U8 ? 255 : INT64_MAX;
  KILN_RETURN_IF(lo < min || hi - 1 > max, KILN_ERR_INVALID_ARGUMENT, op,
                 "[%lld, %lld) does not fit %s", (long long)lo, (long long)hi, kiln_dtype_name(dt));
  struct {
    uint64_t span;
    int64_t lo;
  } p = {(uint64_t)hi - (uint64_t)lo, lo};
  unsigned char params[16];
  memcpy(params, &p.span, 8);
  memcpy(params + 8, &p.lo, 8);
  return fill(op, ctx, out, "random_integers", 1, params, 8, 2);
}

kiln_status
kiln_random_bernoulli(kiln_context *ctx, kiln_tensor *out, double p)
{
  static const char op[] = "kiln_random_bernoulli";
  KILN_TRY(check_out(op, ctx, out));
  KILN_RETURN_IF(!(p >= 0.0 && p <= 1.0), KILN_ERR_INVALID_ARGUMENT, op,
                 "p must lie in [0, 1] (got %g)", p);
  uint64_t threshold = (uint64_t)ldexp(p, 32);
  return fill(op, ctx, out, "random_bernoulli", 4, &threshold, 8, 1);
}

kiln_status
kiln_random_bits(kiln_context *ctx, kiln_tensor *out)
{
  static const char op[] = "kiln_random_bits";
  KILN_TRY(check_out(op, ctx, out));
  KILN_RETURN_IF(out->dtype != KILN_I32 && out->dtype != KILN_I64, KILN_ERR_DTYPE, op,
                 "raw bits fill i32 or i64, not %s", kiln_dtype_name(out->dtype));
  return fill(op, ctx, out, "random_bits", out->dtype == KILN_I32 ? 4 : 2, NULL, 0, 0);
}

/*
 * Sorted (key, index) pairs for a permutation of n (ctx->lock held): *vals
 * holds the permutation in its first n entries. Consumes ceil(n / 2) blocks.
 */
static kiln_status
permutation_pairs_locked(const char *op, kiln_context *ctx, kiln_dtype program, uint64_t n,
                         kiln_tensor **vals)
{
  KILN__ASSERT_LOCKED(ctx);
  uint64_t npad = kiln__ops_pow2(n);
  kiln_tensor *keys = NULL;
  struct stream st = stream_begin_locked(ctx, (n + 1) / 2);
  cl_kernel k;
  kiln_status s = get_kernel(op, ctx, program, "perm_keys", &k);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, KILN_I64, npad, &keys);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, KILN_I64, npad, vals);
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, keys);
    kiln__args_tensor(&a, *vals);
    kiln__args_u64(&a, n);
    kiln__args_u64(&a, npad);
    stream_args(&a, &st);
    s = a.status;
  }
  if (s == KILN_OK)
    s = kiln__launch_1d(op, ctx, k, npad, 0);
  if (s == KILN_OK)
    s = kiln__ops_sort_pairs(op, ctx, "random", program, keys, *vals, npad);
  kiln_tensor_release(keys);
  if (s == KILN_OK) {
    stream_commit_locked(ctx, &st);
  } else {
    kiln_tensor_release(*vals);
    *vals = NULL;
  }
  return s;
}

kiln_status
kiln_random_permutation(kiln_context *ctx, int64_t n, kiln_dtype dtype, kiln_tensor **out)
{
  static const char op[] = "kiln_random_permutation";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_RETURN_IF(dtype != KILN_I32 && dtype != KILN_I64, KILN_ERR_DTYPE, op,
                 "permutations are i32 or i64, not %s", kiln_dtype_name(dtype));
  KILN_RETURN_IF(n < 0, KILN_ERR_INVALID_ARGUMENT, op, "n is negative (%lld)", (long long)n);
  KILN_RETURN_IF(dtype == KILN_I32 && n > (int64_t)1 << 31, KILN_ERR_INVALID_ARGUMENT, op,
                 "n = %lld does not fit i32 indices", (long long)n);
  kiln__shape shape;
  KILN_TRY(kiln__shape_make(op, 1, &n, kiln_dtype_size(dtype), &shape, NULL, NULL));
  int made;
  KILN_TRY(kiln__output_prepare(op, ctx, dtype, &shape, out, &made));
  kiln__ctx_lock(ctx);
  kiln_tensor *vals = NULL;
  kiln_status s = KILN_OK;
  if (n) {
    s = permutation_pairs_locked(op, ctx, dtype, (uint64_t)n, &vals);
    cl_kernel k;
    if (s == KILN_OK)
      s = get_kernel(op, ctx, dtype, "perm_write", &k);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, vals);
      kiln__args_u64(&a, (uint64_t)n);
      kiln__args_tensor(&a, *out);
      s = a.status;
    }
    if (s == KILN_OK)
      s = kiln__launch_1d(op, ctx, k, (uint64_t)n, 0);
  }
  kiln_tensor_release(vals);
  kiln__ctx_unlock(ctx);
  if (s != KILN_OK)
    kiln__output_discard(out, made);
  return s;
}

kiln_status
kiln_random_shuffle(kiln_context *ctx, const kiln_tensor *x, kiln_tensor **out)
{
  static const char op[] = "kiln_random_shuffle";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_RETURN_IF(x->shape.ndim == 0, KILN_ERR_SHAPE, op,
                 "x must have at least one dimension to shuffle along");
  const kiln_tensor *ins[1] = {x};
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, &x->shape, out, ins, 1, 0, &t));
  uint64_t rows = (uint64_t)x->shape.dims[0];
  uint64_t inner = rows ? x->numel / rows : 0;
  kiln__ctx_lock(ctx);
  kiln_tensor *vals = NULL;
  kiln_status s = KILN_OK;
  if (rows) {
    /* The permutation consumes the stream even when the rows are empty. */
    s = permutation_pairs_locked(op, ctx, x->dtype, rows, &vals);
    if (s == KILN_OK && x->numel) {
      cl_kernel k;
      s = get_kernel(op, ctx, x->dtype, "gather_rows", &k);
      if (s == KILN_OK) {
        kiln__args a = kiln__args_begin(op, k);
        kiln__args_tensor(&a, x);
        kiln__args_tensor(&a, vals);
        kiln__args_tensor(&a, t.dst);
        kiln__args_u64(&a, x->numel);
        kiln__args_u64(&a, inner);
        s = a.status;
      }
      if (s == KILN_OK)
        s = kiln__launch_1d(op, ctx, k, x->numel, 0);
    }
  }
  kiln_tensor_release(vals);
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln__random_philox_blocks(kiln_context *ctx, const uint32_t key[2], const uint32_t ctr[4],
                           uint64_t nblocks, uint32_t *host)
{
  static const char op[] = "kiln__random_philox_blocks";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!key || !ctr || (!host && nblocks), KILN_ERR_INVALID_ARGUMENT, op,
                 "NULL argument");
  if (!nblocks)
    return KILN_OK;
  kiln__ctx_lock(ctx);
  kiln_tensor *buf = NULL;
  cl_kernel k;
  kiln_status s = get_kernel(op, ctx, KILN_I32, "philox_blocks", &k);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, KILN_I32, nblocks * 4, &buf);
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, buf);
    kiln__args_u64(&a, nblocks);
    kiln__args_u32(&a, key[0]);
    kiln__args_u32(&a, key[1]);
    for (int i = 0; i < 4; i++)
      kiln__args_u32(&a, ctr[i]);
    s = a.status;
  }
  if (s == KILN_OK)
    s = kiln__launch_1d(op, ctx, k, nblocks, 0);
  if (s == KILN_OK)
    s = kiln__ops_read(op, ctx, buf, 0, host, nblocks * 16);
  kiln_tensor_release(buf);
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---------------------------------------------------------------- the tuner's description */

#define N_(a) (sizeof(a) / sizeof((a)[0]))
#define RNG_FIELD(f) .offset = offsetof(struct rng_params, f), .size = sizeof(uint32_t)

static const uint64_t rng_wg_full[] = {64, 128, 256, 512, 1024};
static const uint64_t rng_wg_quick[] = {128, 256};
static const uint64_t rng_blocks_full[] = {1, 2, 4};
static const uint64_t rng_blocks_quick[] = {1, 2};
static const uint64_t rng_vec_full[] = {1, 4, 8, 16};
static const uint64_t rng_vec_quick[] = {1, 8};

static const struct kiln__tune_param rng_tune_params[] = {
    {.name = "wg_size",
     RNG_FIELD(wg_size),
     .min = 1,
     .max = 65536,
     .full = rng_wg_full,
     .nfull = N_(rng_wg_full),
     .quick = rng_wg_quick,
     .nquick = N_(rng_wg_quick),
     .local_size = 1},
    {.name = "blocks_per_item",
     RNG_FIELD(blocks_per_item),
     .min = 1,
     .max = RNG_BLOCKS_MAX,
     .full = rng_blocks_full,
     .nfull = N_(rng_blocks_full),
     .quick = rng_blocks_quick,
     .nquick = N_(rng_blocks_quick)},
    {.name = "vec_width",
     RNG_FIELD(vec_width),
     .min = 1,
     .max = RNG_VEC_MAX,
     .full = rng_vec_full,
     .nfull = N_(rng_vec_full),
     .quick = rng_vec_quick,
     .nquick = N_(rng_vec_quick),
     .pow2 = 1},
};

static int
rng_dtype_ok(kiln_dtype d)
{
  return kiln__dtype_is_floating(d) || kiln__dtype_is_complex(d);
}

static void
rng_defaults(const kiln_context *ctx, kiln_dtype dtype, int layout, int log2n, void *params)
{
  (void)log2n;
  (void)dtype;
  (void)layout;
  struct rng_params *p = params;
  p->wg_size = (uint32_t)ctx->wg_size;
  rng_default_shape(&ctx->info, &p->blocks_per_item, &p->vec_width);
}

static kiln_status
rng_setup(struct kiln__tune_problem *pb)
{
  int64_t n = (int64_t)pb->n;
  snprintf(pb->desc, sizeof pb->desc, "normal [%lld]", (long long)n);
  return kiln_tensor_create(pb->ctx, pb->dtype, 1, &n, &pb->out);
}

/*
 * One normal fill from a fixed state, so that every candidate must give the
 * same bits; the context's own stream is put back afterwards (online tuning
 * runs inside a caller's op).
 */
static kiln_status
rng_run(struct kiln__tune_problem *pb, const void *params)
{
  (void)params;
  kiln_rng_state saved, fixed = {0x6b696c6eu, 0};
  KILN_TRY(kiln_rng_state_get(pb->ctx, &saved));
  KILN_TRY(kiln_rng_state_set(pb->ctx, &fixed));
  kiln_status s = kiln_random_normal(pb->ctx, pb->out, 0.0, 1.0);
  kiln_rng_state_set(pb->ctx, &saved);
  return s;
}

static double
rng_bytes(const struct kiln__tune_problem *pb)
{
  return (double)kiln_tensor_nbytes(pb->out);
}

_Static_assert(sizeof(struct rng_params) <= KILN__TUNE_PARAMS_MAX, "parameter struct too large");

static const struct kiln__tune_family rng_tune = {
    .name = "random",
    .description = "normal values (Philox, Box-Muller), timed on random_normal",
    .source = "random",
    .kernel_prefix = "random_normal",
    .params_size = sizeof(struct rng_params),
    .params = rng_tune_params,
    .nparams = N_(rng_tune_params),
    .layouts = 1u << KILN__LAYOUT_FLAT,
    .layout_names = "flat",
    .ninputs = 0,
    .dtype_ok = rng_dtype_ok,
    .defaults = rng_defaults,
    .run = rng_run,
    .bytes = rng_bytes,
    .setup = rng_setup,
};

/* The tuner's entry, listed after the families that were tuned before it (kiln_tune_family_get
 * indexes them in list order). */
const struct kiln__family kiln__random_tune_family = {.name = "random_tune", .tune = &rng_tune};
