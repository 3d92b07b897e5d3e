/* Elementwise family: unary, binary (with broadcasting and scalar forms), where, clamp, cast, copy.
 */
#include <stdio.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/error.h"
#include "kiln/elementwise.h"
#include "ops/elementwise_complex.h"
#include "ops/families.h"
#include "ops/ops_common.h"
#include "runtime/runtime.h"
#include "runtime/tuner.h"

enum result_kind { RES_SAME, RES_BOOL };

struct op_row {
  const char *name;
  enum kiln__dtype_class cls;
  enum result_kind res;
};

static const struct op_row unary_rows[] = {
#define X(E, n, cls, res, expr) {#n, KILN__CLASS_##cls, RES_##res},
    KILN_UNARY_OPS(X)
#undef X
};

static const struct op_row binary_rows[] = {
#define X(E, n, cls, res, expr) {#n, KILN__CLASS_##cls, RES_##res},
    KILN_BINARY_OPS(X)
#undef X
};

const char *
kiln_unary_op_name(kiln_unary_op op)
{
  return (unsigned)op < KILN_UNARY_OP_COUNT ? unary_rows[op].name : "?";
}

const char *
kiln_binary_op_name(kiln_binary_op op)
{
  return (unsigned)op < KILN_BINARY_OP_COUNT ? binary_rows[op].name : "?";
}

/* The dtypes elementwise.cl builds (its ew_sources row); complex has complex.cl. */
#define EW_DTYPES (KILN__DT_CLASSIC | KILN__DT_HALVES)

static int
row_supports(const struct op_row *row, kiln_dtype dtype)
{
  return kiln__dtype_valid(dtype) &&
         (kiln__dtype_class_mask(row->cls) & EW_DTYPES & KILN__DT_BIT(dtype));
}

int
kiln_unary_op_supports(kiln_unary_op op, kiln_dtype dtype)
{
  if (kiln__dtype_is_complex(dtype))
    return kiln__ew_complex_unary_supports(op, dtype);
  return (unsigned)op < KILN_UNARY_OP_COUNT && row_supports(&unary_rows[op], dtype);
}

int
kiln_binary_op_supports(kiln_binary_op op, kiln_dtype dtype)
{
  if (kiln__dtype_is_complex(dtype))
    return kiln__ew_complex_binary_supports(op, dtype);
  return (unsigned)op < KILN_BINARY_OP_COUNT && row_supports(&binary_rows[op], dtype);
}

static kiln_dtype
result_dtype(const struct op_row *row, kiln_dtype in)
{
  return row->res == RES_BOOL ? KILN_BOOL : in;
}

/*
 * Bytes of a scalar argument as the kernels take it: their compute type T.
 * The value is first converted to dtype (the kiln_cast rules), so for f16
 * and bf16 it is rounded to the 16-bit type, then widened to the f32 the
 * kernels compute in (exactly). Returns the argument's size.
 */
static size_t
scalar_arg(kiln_scalar s, kiln_dtype dtype, unsigned char out[sizeof(kiln_complex128)])
{
  kiln__scalar_to_bytes(s, dtype, out);
  if (!kiln__dtype_is_half(dtype))
    return kiln_dtype_size(dtype);
  uint16_t h;
  memcpy(&h, out, sizeof h);
  float f = dtype == KILN_F16 ? kiln_f16_to_f32(h) : kiln_bf16_to_f32(h);
  memcpy(out, &f, sizeof f);
  return sizeof f;
}

static kiln_status
check_supports(const char *op, const struct op_row *row, kiln_dtype dtype)
{
  if (row_supports(row, dtype))
    return KILN_OK;
  return kiln__fail(KILN_ERR_DTYPE, op, 0, "%s does not accept %s (accepts %s)", row->name,
                    kiln_dtype_name(dtype), kiln__dtype_class_text(row->cls));
}

/* ---------------------------------------------------------------- launch shape and tuning */

/* Limits of the flat shape: vector widths are 1, 2, 4, 8 or 16. */
#define EW_ITEMS_MAX 16
#define EW_VEC_MAX 16
/* The widest vector a flat kernel's tail follows (vec_width, cast lanes, copy widths). */
#define FLAT_TAIL_ITEMS 16

/* The family's tuned parameters (flat 1-D launches). */
struct ew_params {
  uint32_t wg_size;          /* local size; default ctx->wg_size */
  uint32_t items_per_thread; /* vectors per work-item (KILN_EW_ITEMS) */
  uint32_t vec_width;        /* elements per vector access (KILN_EW_VEC) */
};

/* Default shape of flat launches of dtype: vectors per work-item and elements per vector access. */
static void
ew_default_shape(const kiln_device_info *info, kiln_dtype dtype, uint32_t *items, uint32_t *vec)
{
  /*
   * Measured with `kiln tune --family elementwise` (docs/tuning.md). H200:
   * four elements per item, a work-group apart, lift a + b over 2^26 floats
   * from 62% to 104% of the copy bandwidth; vector accesses gained nothing.
   * PoCL: 8-wide accesses run 4-byte and 1-byte types 1.3x-3.5x faster at
   * 2^16-2^22 elements, i64 and f64 gain with 4-wide ones (f64 loses with 8-wide ones).
   * f16 and bf16 want the same 16 bytes per work-item as f32, as two
   * 4-wide vectors: on the H200 (`kiln tune --family elementwise --dtype
   * f16,bf16 --sizes 2^22,2^26 --dry-run`, 2026-12-01) a + b over 2^26 f16
   * took 112 us with 2 items of 4 against 165 us with 4 items of 2 (0.95 and
   * 0.64 of the same run's copy bandwidth); 8-wide ones were as fast at 2^26
   * but 2x slower for f16 at 2^22. bf16 converts with integer vector ops and
   * wants 8-wide ones: 2 items of 8 ran a + b over 2^26 at 3495 GB/s (0.90 of
   * the same run's copy), 2 of 4 at 2917 GB/s (`kiln bench --filter
   * binary.add --dtype bf16,f16 --sizes 2^26`). PoCL takes 8-wide ones
   * (vloada_half8), which ran a + b over 2^22 elements at about f32's speed per byte.
   */
  if (info->is_gpu) {
    /*
     * 4-byte types: 2 items of 4-wide vectors, the same 32 bytes in flight as 4 scalars but
     * in 16-byte accesses (H200, KILN_TUNE=off with overrides, bench/h200/core.sh, 2^26 f32
     * next to PyTorch: a * 3 0.88x -> 0.97x, -a 0.96x -> 0.95x, a + b 0.99x -> 0.98x; at
     * 2^22 a * 3 0.54x -> 0.65x, -a 0.65x -> 0.70x; /work/gpu-results/core, 2026-12-02).
     */
    /*
     * 8-byte types (not complex): likewise 2 items of 2-wide vectors. H200, session 24
     * (bench/h200/ew64.sh, `--tune 'elementwise:items_per_thread=2 vec_width=2'` against the
     * default then, 4 scalar items; ms at 2^26, PyTorch in the same run): the row and column
     * broadcasts of f64 0.313 -> 0.270 and 0.314 -> 0.272 (PyTorch 0.276 and 0.283; with
     * scalars the broadcast launch has no vector path), a + b 0.378 -> 0.374, a * 3 0.266 ->
     * 0.263, exp 0.264 -> 0.262. One 4-wide vector per item ran the broadcasts at 0.260-0.265
     * but exp 3% slower.
     */
    int four = kiln_dtype_size(dtype) == 4;
    int eight = kiln_dtype_size(dtype) == 8 && !kiln__dtype_is_complex(dtype);
    *items = kiln__dtype_is_half(dtype) || four || eight ? 2 : 4;
    *vec = dtype == KILN_F16 || four ? 4 : dtype == KILN_BF16 ? 8 : eight ? 2 : 1;
    return;
  }
  *items = 1;
  /*
   * A complex element is already a 2-wide vector access (complex.cl). 8-byte types take
   * 4-wide ones: PoCL, f64 in three interleaved rounds under load (2026-12-02), width 4
   * against 1: [n/1024, 1024] + [1024] 2.3 against 72 ms at 2^22 (at width 1 the broadcast
   * path is scalar), exp 100 against 240 ms; a + b, a * 3 and -a the same or faster.
   */
  *vec = kiln__dtype_is_complex(dtype) ? 1 : kiln_dtype_size(dtype) == 8 ? 4 : 8;
}

static const struct kiln__tune_family ew_tune;

/*
 * The parameters of a flat launch over n elements of dtype (a lookup), with
 * the local size clamped to the device's limit.
 */
static void
ew_lookup(kiln_context *ctx, kiln_dtype dtype, uint64_t n, struct ew_params *p)
{
  kiln__tune_lookup(ctx, &ew_tune, dtype, KILN__LAYOUT_FLAT, n, p);
  if (p->wg_size < 1)
    p->wg_size = 1;
  /* Values outside what the kernels compile (from an override or an imported table) fall
   * back to the defaults rather than failing the op on a build error. */
  uint32_t items, vec;
  ew_default_shape(&ctx->info, dtype, &items, &vec);
  if (p->items_per_thread < 1 || p->items_per_thread > EW_ITEMS_MAX)
    p->items_per_thread = items;
  if (p->vec_width < 1 || p->vec_width > EW_VEC_MAX || (p->vec_width & (p->vec_width - 1)))
    p->vec_width = vec;
  /* Stored and overridden values may exceed this device's limit; the launch must not. */
  if (ctx->info.max_work_group_size && p->wg_size > ctx->info.max_work_group_size)
    p->wg_size = (uint32_t)ctx->info.max_work_group_size;
}

/*
 * How a flat launch runs: the tuned local size and the program variant with
 * the tuned vectors per item and vector width (cl_kernels/elementwise.cl).
 * Looked up before taking ctx->lock (online tuning runs kernels).
 */
typedef struct {
  size_t local;
  kiln__program_variant variant;
} flat_shape;

/*
 * The shape for n elements of dtype whose vector-accessed operands are
 * ts[0..nts) (NULL entries: scalars). A vector access needs every operand's
 * element offset to be a multiple of the width: views at other offsets take
 * width 1 (another program of the same family).
 */
static flat_shape
flat_shape_for(kiln_context *ctx, kiln_dtype dtype, uint64_t n, const kiln_tensor *const *ts,
               size_t nts)
{
  struct ew_params p;
  ew_lookup(ctx, dtype, n, &p);
  if (kiln__dtype_is_complex(dtype))
    p.vec_width = 1;
  for (size_t i = 0; i < nts; i++)
    if (ts[i] && kiln__ops_elem_offset(ts[i]) % p.vec_width)
      p.vec_width = 1;
  flat_shape sh = {p.wg_size, {.ew_items = p.items_per_thread, .ew_vec = p.vec_width}};
  return sh;
}

/* ---------------------------------------------------------------- casts and copies */

/*
 * kiln_cast and kiln_copy's kernel path run cast.cl (one small program per
 * source dtype; its variants do not rebuild the whole elementwise program).
 * Their parameters are tuner families of their own, "cast" and "copy", so
 * each is timed on its own op: elements per work-item (a work-group apart,
 * loads before stores) for both, and for copies the vector width and the
 * choice between the kernel and clEnqueueCopyBuffer.
 */
struct cast_params {
  uint32_t wg_size;
  uint32_t items_per_thread;
  uint32_t lanes; /* consecutive elements per step (KILN_CAST_LANES) */
};

struct copy_params {
  uint32_t wg_size;
  uint32_t items_per_thread;
  uint32_t vec_width;
  uint32_t kernel; /* 1: copy_values, 0: clEnqueueCopyBuffer */
};

static const struct kiln__tune_family cast_tune, copy_tune;

/*
 * Defaults: copies through the kernel, one 16-byte vector per work-item on GPUs, one 64-byte
 * vector on CPU devices. H200 (bench/h200/flat.sh, session 17, 2^26 against PyTorch's copy
 * in the same run): f32 0.96x, f64 0.99x with one vector, 0.93x and 0.96x with four (the
 * earlier default), where clEnqueueCopyBuffer ran 0.85x and 0.92x (bench/h200/core.sh). PoCL
 * (2^22 f32, alternating runs under load): the kernel 1.19-1.21 ms every time, the buffer
 * copy 0.97-1.94 ms.
 */
static void
copy_default(const kiln_device_info *info, kiln_dtype dtype, struct copy_params *p)
{
  size_t esz = kiln_dtype_size(dtype);
  p->wg_size = 0;
  p->items_per_thread = 1;
  /* CPU devices: 64-byte vectors (a cache line, one AVX-512 register; at most 16 elements).
   * PoCL, 2^22 f32 in alternating runs under load: 43-56 GB/s against 29-30 with 4-wide
   * ones. */
  size_t bytes = info->is_gpu ? 16 : 64;
  p->vec_width = esz >= 16 ? 1 : (uint32_t)(bytes / esz > 16 ? 16 : bytes / esz);
  p->kernel = 1;
}

static uint32_t
cast_default_items(const kiln_device_info *info)
{
  return info->is_gpu ? 4 : 1;
}

/*
 * Elements per cast step: 1 on GPUs (a warp's loads stay contiguous); 8 on CPU devices,
 * which the compiler turns into vector loads, conversions and stores (PoCL does not
 * vectorise the cast loops across work-items: f32 to i32 over 2^22 elements went from
 * about 1 to 13-25 GB/s on this machine, under load).
 */
static uint32_t
cast_default_lanes(const kiln_device_info *info)
{
  return info->is_gpu ? 1 : 8;
}

#define CAST_LANES_MAX 16
#define COPY_ITEMS_MAX 16
#define COPY_VEC_MAX 16
_Static_assert(CAST_LANES_MAX <= FLAT_TAIL_ITEMS && COPY_VEC_MAX <= FLAT_TAIL_ITEMS &&
                   EW_VEC_MAX <= FLAT_TAIL_ITEMS,
               "a flat kernel's tail takes a work-item per element");

/*
 * Whether kiln_copy's kernel stores its vectors non-temporally (KILN_NT_STORE, a program of
 * its own): on CPU devices, for outputs of 16 MiB and more (which do not stay in cache for a
 * next op anyway) moved in whole 64-byte lines. PoCL, two runs of three interleaved rounds
 * under load, non-temporal against plain: 2^24 f32 3.6 and 4.1 against 25 and 28 ms (the
 * plain kernel measured 4-8 ms in other runs of the hour), 2^22 f32 0.55 and 0.99 against
 * 0.82 and 1.03 ms, 2^22 f64 1.37 and 2.2 against 2.6 and 2.7 ms, 2^24 f64 50 and 44 against
 * 54 and 41 ms (a plain store first reads its line). The elementwise kernels' 32-byte vectors ran
 * 1.2-2.4x slower with non-temporal stores at 2^24 (a + b, a * 3, -a): they keep plain ones.
 * GPUs never (their stores do not read lines).
 */
static uint32_t
copy_nt_store(const kiln_context *ctx, kiln_dtype dtype, uint64_t n, uint32_t vec)
{
  size_t esz = kiln_dtype_size(dtype);
  return !ctx->info.is_gpu && vec * esz >= 64 && n * esz >= KILN__NT_STORE_MIN_BYTES;
}

static void
copy_lookup(kiln_context *ctx, kiln_dtype dtype, uint64_t n, struct copy_params *p)
{
  kiln__tune_lookup(ctx, &copy_tune, dtype, KILN__LAYOUT_FLAT, n, p);
  struct copy_params d;
  copy_default(&ctx->info, dtype, &d);
  if (p->items_per_thread < 1 || p->items_per_thread > COPY_ITEMS_MAX)
    p->items_per_thread = d.items_per_thread;
  if (p->vec_width < 1 || p->vec_width > COPY_VEC_MAX || (p->vec_width & (p->vec_width - 1)))
    p->vec_width = d.vec_width;
  if (kiln_dtype_size(dtype) >= 16)
    p->vec_width = 1;
  if (p->wg_size < 1)
    p->wg_size = (uint32_t)ctx->wg_size;
  if (ctx->info.max_work_group_size && p->wg_size > ctx->info.max_work_group_size)
    p->wg_size = (uint32_t)ctx->info.max_work_group_size;
}

/*
 * The shape of a cast of n elements of dtype: the cast family's local size and
 * items, in the program whose vector width copies of dtype use by default (the
 * casts ignore it), so that a cast and a copy share one build where their items agree (CPU
 * devices; on GPUs a copy takes one step a work-item and a cast four: the H200's cast to i32
 * of 2^26 f32 took 0.177 ms with one, 0.136 with four, bench/h200/copycast.sh).
 */
static flat_shape
cast_shape_for(kiln_context *ctx, kiln_dtype dtype, uint64_t n)
{
  struct cast_params p;
  kiln__tune_lookup(ctx, &cast_tune, dtype, KILN__LAYOUT_FLAT, n, &p);
  if (p.items_per_thread < 1 || p.items_per_thread > COPY_ITEMS_MAX)
    p.items_per_thread = cast_default_items(&ctx->info);
  if (p.lanes < 1 || p.lanes > CAST_LANES_MAX)
    p.lanes = cast_default_lanes(&ctx->info);
  if (p.wg_size < 1)
    p.wg_size = (uint32_t)ctx->wg_size;
  if (ctx->info.max_work_group_size && p.wg_size > ctx->info.max_work_group_size)
    p.wg_size = (uint32_t)ctx->info.max_work_group_size;
  struct copy_params c;
  copy_default(&ctx->info, dtype, &c);
  flat_shape sh = {p.wg_size,
                   {.ew_items = p.items_per_thread, .ew_vec = c.vec_width, .cast_lanes = p.lanes}};
  return sh;
}

/* Launches a flat kernel over n elements: one work-item per KILN_EW_ITEMS vectors. */
static kiln_status
launch_flat(const char *op, kiln_context *ctx, cl_kernel k, uint64_t n, const flat_shape *sh)
{
  /* flat_shape_for's fields are validated launch parameters: both at least 1. */
  uint64_t per_item = (uint64_t)sh->variant.ew_items * sh->variant.ew_vec;
  uint64_t items = n / per_item + (n % per_item != 0);
  /* FLAT_TAIL (ew_loops.clh) gives each of the fewer than 16 elements after the last whole
   * vector a work-item of its own, without a loop. */
  uint64_t tail = n < FLAT_TAIL_ITEMS ? n : FLAT_TAIL_ITEMS;
  return kiln__launch_1d(op, ctx, k, items > tail ? items : tail, sh->local);
}

/*
 * Enqueues kernel kname(in, inoff, out, outoff, n [, extra args]) of source
 * with flat shape sh, under the lock.
 */
static kiln_status
run_map(const char *op, kiln_context *ctx, const char *source, kiln_dtype dtype, const char *kname,
        const kiln_tensor *in, kiln_tensor *out, const void *extra, size_t extra_size,
        size_t nextra, const flat_shape *sh)
{
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel_variant(op, ctx, source, dtype, &sh->variant, kname, &k));
  kiln__args args = kiln__args_begin(op, k);
  kiln__args_tensor(&args, in);
  kiln__args_tensor(&args, out);
  kiln__args_u64(&args, out->numel);
  for (size_t i = 0; i < nextra; i++)
    kiln__args_raw(&args, extra_size, (const char *)extra + i * extra_size);
  KILN_TRY(args.status);
  return launch_flat(op, ctx, k, out->numel, sh);
}

/* The arguments binary and where kernels end with: output, n, rank, broadcast plan, flags. */
static void
bcast_tail_args(kiln__args *args, const kiln_tensor *out, cl_ulong n, cl_uint ndim,
                const kiln__bcast *plan, cl_uint flags)
{
  kiln__args_tensor(args, out);
  kiln__args_u64(args, n);
  kiln__args_u32(args, ndim);
  kiln__args_raw(args, sizeof *plan, plan);
  kiln__args_u32(args, flags);
}

/*
 * The 2-D grid of a broadcast launch over n > 0 elements: dimension 0 over
 * the innermost merged dimension, `items` steps of `vec` elements per
 * work-item (the KILN_EW_ITEMS the program is built with; vec divides the
 * inner length), 1 over rows. Returns whether it
 * covers every element (then the kernels skip their grid-stride loops: flag 8).
 */
static int
bcast_grid(const kiln_context *ctx, uint64_t n, uint32_t ndim, const kiln__bcast *plan,
           uint32_t items, uint32_t vec, size_t global[2], size_t local[2])
{
  uint64_t inner = plan->shape[ndim - 1], rows = n / inner;
  uint64_t units = (inner / vec + items - 1) / items;
  /*
   * Two local shapes only: PoCL compiles a specialised kernel for every new
   * local size at first launch (~0.1-0.5 s each), so adapting the shape to
   * every inner length multiplied first-use cost several times over. GPUs
   * compile a program once for every local size: there a row that needs
   * fewer items than a group (1024 f32 in 2 steps of 4: 128) takes a
   * narrower one, down to a warp, with more rows per group.
   */
  size_t l0 = inner >= 32 || ctx->wg_size < 256 ? ctx->wg_size : 16;
  if (ctx->info.is_gpu)
    while (l0 > 32 && l0 / 2 >= units)
      l0 /= 2;
  size_t l1 = ctx->wg_size / l0;
  /* Caps keep the grid within 2^31 work-items; the kernels loop over the rest. */
  uint64_t g0 = (units < ((uint64_t)1 << 24) ? units : ((uint64_t)1 << 24)) + l0 - 1;
  g0 -= g0 % l0;
  uint64_t max_rows = ((uint64_t)1 << 31) / g0;
  uint64_t g1 = (rows < max_rows ? rows : max_rows) + l1 - 1;
  g1 -= g1 % l1;
  if (g1 == 0)
    g1 = l1;
  global[0] = (size_t)g0;
  global[1] = (size_t)g1;
  local[0] = l0;
  local[1] = l1;
  return g0 >= units && g1 >= rows;
}

/* How a binary or where kernel runs over n elements: flat, or 2-D over a broadcast plan. */
typedef struct {
  int flat;
  flat_shape sh;              /* flat launches (looked up before taking ctx->lock) */
  size_t global[2], local[2]; /* broadcast launches: bcast_grid */
  cl_uint flags; /* kernel flags 4 (broadcast), 8 (its grid covers all), 16 (vector steps) */
} bcast_launch;

/*
 * The launch of n elements of dtype; ts[0..nts) are the operands (see flat_shape_for).
 * vec_ok: the kernel has elementwise.cl's vector broadcast path (binary ops, flag 16).
 */
static bcast_launch
bcast_launch_for(kiln_context *ctx, kiln_dtype dtype, uint64_t n, uint32_t ndim,
                 const kiln__bcast *plan, int flat, const kiln_tensor *const *ts, size_t nts,
                 int vec_ok)
{
  bcast_launch l = {.flat = flat, .sh = {.local = ctx->wg_size}};
  /* Broadcast launches run in the program a flat launch of n elements takes (no build of
   * their own): its items per work-item, and its vector width where every operand's inner
   * stride is 0 or 1 and the width divides the inner length. */
  l.sh = flat_shape_for(ctx, dtype, n, ts, nts);
  if (flat)
    return l;
  l.flags = 4u;
  if (!n)
    return l;
  uint32_t vec = l.sh.variant.ew_vec ? l.sh.variant.ew_vec : 1;
  if (vec > 1 && vec_ok && !kiln__dtype_is_half(dtype) && plan->shape[ndim - 1] % vec == 0 &&
      plan->stride[0][ndim - 1] <= 1 && plan->stride[1][ndim - 1] <= 1) {
    if (bcast_grid(ctx, n, ndim, plan, l.sh.variant.ew_items, vec, l.global, l.local)) {
      l.flags |= 8u | 16u;
      return l;
    }
  }
  if (bcast_grid(ctx, n, ndim, plan, l.sh.variant.ew_items, 1, l.global, l.local))
    l.flags |= 8u;
  return l;
}

static kiln_status
launch_bcast(const char *op, kiln_context *ctx, cl_kernel k, uint64_t n, const bcast_launch *l)
{
  if (n == 0)
    return KILN_OK;
  if (l->flat)
    return launch_flat(op, ctx, k, n, &l->sh);
  return kiln__enqueue_kernel(op, ctx, k, 2, l->global, l->local);
}

/* The shared prologue: handles, context, op range. */
static kiln_status
check_common(const char *op, kiln_context *ctx, kiln_tensor **out)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  return KILN_OK;
}

kiln_status
kiln_unary(kiln_context *ctx, kiln_unary_op uop, const kiln_tensor *x, kiln_tensor **out)
{
  char op[64];
  snprintf(op, sizeof op, "kiln_unary(%s)", kiln_unary_op_name(uop));
  KILN_TRY(check_common(op, ctx, out));
  KILN_RETURN_IF((unsigned)uop >= KILN_UNARY_OP_COUNT, KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown unary op %d", (int)uop);
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  if (kiln__dtype_is_complex(x->dtype))
    return kiln__ew_complex_unary(op, ctx, uop, x, out);
  const struct op_row *row = &unary_rows[uop];
  KILN_TRY(check_supports(op, row, x->dtype));
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, result_dtype(row, x->dtype), &x->shape, out, &x, 1, 1, &t));
  char kname[64];
  snprintf(kname, sizeof kname, "unary_%s", row->name);
  const kiln_tensor *ts[] = {x, t.dst};
  flat_shape sh = flat_shape_for(ctx, x->dtype, x->numel, ts, 2);
  kiln__ctx_lock(ctx);
  kiln_status s = run_map(op, ctx, "elementwise", x->dtype, kname, x, t.dst, NULL, 0, 0, &sh);
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/*
 * Shared body of kiln_binary and kiln_binary_scalar: a or b may be NULL,
 * standing for the scalar (already in the kernels' form: scalar_arg, esz bytes).
 */
static kiln_status
binary_run(const char *op, kiln_context *ctx, kiln_binary_op bop, const kiln_tensor *a,
           const kiln_tensor *b, const unsigned char *scalar, size_t esz, kiln_tensor **out)
{
  const struct op_row *row = &binary_rows[bop];
  const kiln_tensor *t = a ? a : b;
  char kname[64];
  snprintf(kname, sizeof kname, "binary_%s", row->name);
  return kiln__ew_bcast_run(op, ctx, "elementwise", kname, t->dtype, result_dtype(row, t->dtype), a,
                            b, scalar, esz, out);
}

kiln_status
kiln__ew_bcast_run(const char *op, kiln_context *ctx, const char *source, const char *kname,
                   kiln_dtype kdtype, kiln_dtype rdtype, const kiln_tensor *a, const kiln_tensor *b,
                   const unsigned char *scalar, size_t esz, kiln_tensor **out)
{
  const kiln_tensor *t = a ? a : b;
  kiln__shape shape = t->shape;
  if (a && b)
    KILN_TRY(kiln__shape_broadcast(op, &a->shape, &b->shape, &shape));
  const kiln_tensor *ins[2] = {a, b};
  kiln__out_target target;
  KILN_TRY(kiln__ops_out_begin(op, ctx, rdtype, &shape, out, ins, 2, 1, &target));
  kiln_tensor *dst = target.dst;

  kiln__bcast plan;
  int flat = 1;
  uint32_t ndim = 0;
  if (a && b) {
    const kiln__shape *ops[2] = {&a->shape, &b->shape};
    ndim = kiln__bcast_plan(&shape, ops, 2, &plan, &flat);
  } else {
    memset(&plan, 0, sizeof plan);
  }
  unsigned char zero[16] = {0};
  cl_ulong n = dst->numel;
  const kiln_tensor *ts[] = {a, b, dst};
  bcast_launch l =
      bcast_launch_for(ctx, kdtype, n, ndim, &plan, flat, ts, 3, strcmp(source, "elementwise") == 0);
  cl_uint flags = (a ? 0u : 1u) | (b ? 0u : 2u) | l.flags;

  kiln__ctx_lock(ctx);
  cl_kernel k;
  kiln_status s = kiln__ops_kernel_variant(op, ctx, source, kdtype, &l.sh.variant, kname, &k);
  if (s == KILN_OK) {
    kiln__args args = kiln__args_begin(op, k);
    kiln__args_tensor(&args, a);
    kiln__args_raw(&args, esz, a ? zero : scalar);
    kiln__args_tensor(&args, b);
    kiln__args_raw(&args, esz, b ? zero : scalar);
    bcast_tail_args(&args, dst, n, ndim, &plan, flags);
    s = args.status;
  }
  if (s == KILN_OK)
    s = launch_bcast(op, ctx, k, n, &l);
  s = kiln__ops_out_finish(op, ctx, &target, s);
  kiln__ctx_unlock(ctx);
  return s;
}

static kiln_status
check_binary_op(const char *op, kiln_binary_op bop)
{
  KILN_RETURN_IF((unsigned)bop >= KILN_BINARY_OP_COUNT, KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown binary op %d", (int)bop);
  return KILN_OK;
}

kiln_status
kiln_binary(kiln_context *ctx, kiln_binary_op bop, const kiln_tensor *a, const kiln_tensor *b,
            kiln_tensor **out)
{
  char op[64];
  snprintf(op, sizeof op, "kiln_binary(%s)", kiln_binary_op_name(bop));
  KILN_TRY(check_common(op, ctx, out));
  KILN_TRY(check_binary_op(op, bop));
  KILN_TRY(kiln__tensor_check(op, a, ctx));
  KILN_TRY(kiln__tensor_check(op, b, ctx));
  KILN_RETURN_IF(a->dtype != b->dtype, KILN_ERR_DTYPE, op,
                 "inputs have different dtypes (%s and %s); cast one with kiln_cast",
                 kiln_dtype_name(a->dtype), kiln_dtype_name(b->dtype));
  if (kiln__dtype_is_complex(a->dtype))
    return kiln__ew_complex_binary(op, ctx, bop, a, b, NULL, out);
  KILN_TRY(check_supports(op, &binary_rows[bop], a->dtype));
  /* No scalar: the unused scalar arguments still take the compute type's size. */
  unsigned char unused[sizeof(kiln_complex128)];
  size_t esz = scalar_arg(kiln_scalar_i64(0), a->dtype, unused);
  return binary_run(op, ctx, bop, a, b, NULL, esz, out);
}

kiln_status
kiln_binary_scalar(kiln_context *ctx, kiln_binary_op bop, const kiln_tensor *x, kiln_scalar s,
                   int scalar_first, kiln_tensor **out)
{
  char op[64];
  snprintf(op, sizeof op, "kiln_binary_scalar(%s)", kiln_binary_op_name(bop));
  KILN_TRY(check_common(op, ctx, out));
  KILN_TRY(check_binary_op(op, bop));
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  unsigned char bytes[sizeof(kiln_complex128)];
  if (kiln__dtype_is_complex(x->dtype)) {
    kiln__scalar_to_bytes(s, x->dtype, bytes);
    return kiln__ew_complex_binary(op, ctx, bop, scalar_first ? NULL : x, scalar_first ? x : NULL,
                                   bytes, out);
  }
  KILN_TRY(check_supports(op, &binary_rows[bop], x->dtype));
  size_t esz = scalar_arg(s, x->dtype, bytes);
  return binary_run(op, ctx, bop, scalar_first ? NULL : x, scalar_first ? x : NULL, bytes, esz,
                    out);
}

kiln_status
kiln_cast(kiln_context *ctx, const kiln_tensor *x, kiln_dtype dtype, kiln_tensor **out)
{
  static const char op[] = "kiln_cast";
  KILN_TRY(check_common(op, ctx, out));
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_RETURN_IF(!kiln__dtype_valid(dtype), KILN_ERR_INVALID_ARGUMENT, op, "invalid dtype %d",
                 (int)dtype);
  /* f64 tensors cannot exist without fp64, c128 ones can (they are bytes until a kernel
   * reads them); either end needs the device's doubles. */
  for (int end = 0; end < 2; end++) {
    kiln_dtype d = end ? dtype : x->dtype;
    KILN_RETURN_IF(!kiln__device_has_dtype(&ctx->info, d), KILN_ERR_UNSUPPORTED, op,
                   "%s needs fp64 support, which device \"%s\" lacks", kiln_dtype_name(d),
                   ctx->info.name);
  }
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, dtype, &x->shape, out, &x, 1, 1, &t));
  char kname[32];
  snprintf(kname, sizeof kname, "cast_to_%s", kiln_dtype_name(dtype));
  flat_shape sh = cast_shape_for(ctx, x->dtype, x->numel);
  kiln__ctx_lock(ctx);
  kiln_status s = run_map(op, ctx, "cast", x->dtype, kname, x, t.dst, NULL, 0, 0, &sh);
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_clamp(kiln_context *ctx, const kiln_tensor *x, kiln_scalar lo, kiln_scalar hi,
           kiln_tensor **out)
{
  static const char op[] = "kiln_clamp";
  KILN_TRY(check_common(op, ctx, out));
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_RETURN_IF(x->dtype == KILN_BOOL || kiln__dtype_is_complex(x->dtype), KILN_ERR_DTYPE, op,
                 "clamp does not accept %s (accepts %s)", kiln_dtype_name(x->dtype),
                 kiln__dtype_class_text(KILN__CLASS_NUM));
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, x->dtype, &x->shape, out, &x, 1, 1, &t));
  unsigned char bounds[2][sizeof(kiln_complex128)];
  size_t esz = scalar_arg(lo, x->dtype, bounds[0]);
  scalar_arg(hi, x->dtype, bounds[1]);
  /* The two bounds go as consecutive compute-type args; pack them densely for run_map. */
  unsigned char packed[16];
  memcpy(packed, bounds[0], esz);
  memcpy(packed + esz, bounds[1], esz);
  const kiln_tensor *ts[] = {x, t.dst};
  flat_shape sh = flat_shape_for(ctx, x->dtype, x->numel, ts, 2);
  kiln__ctx_lock(ctx);
  kiln_status s =
      run_map(op, ctx, "elementwise", x->dtype, "clamp_values", x, t.dst, packed, esz, 2, &sh);
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln_where(kiln_context *ctx, const kiln_tensor *cond, const kiln_tensor *a, const kiln_tensor *b,
           kiln_tensor **out)
{
  static const char op[] = "kiln_where";
  KILN_TRY(check_common(op, ctx, out));
  KILN_TRY(kiln__tensor_check(op, cond, ctx));
  KILN_TRY(kiln__tensor_check(op, a, ctx));
  KILN_TRY(kiln__tensor_check(op, b, ctx));
  KILN_RETURN_IF(a->dtype != b->dtype, KILN_ERR_DTYPE, op,
                 "value tensors have different dtypes (%s and %s)", kiln_dtype_name(a->dtype),
                 kiln_dtype_name(b->dtype));
  kiln__shape ab, shape;
  KILN_TRY(kiln__shape_broadcast(op, &a->shape, &b->shape, &ab));
  KILN_TRY(kiln__shape_broadcast(op, &cond->shape, &ab, &shape));

  /* The kernel reads the condition as bytes; other dtypes become bool first. */
  kiln_tensor *cbytes = NULL;
  if (cond->dtype != KILN_BOOL && cond->dtype != KILN_U8)
    KILN_TRY(kiln_cast(ctx, cond, KILN_BOOL, &cbytes));
  const kiln_tensor *c = cbytes ? cbytes : cond;

  const kiln_tensor *ins[3] = {c, a, b};
  kiln__out_target t;
  kiln_status s = kiln__ops_out_begin(op, ctx, a->dtype, &shape, out, ins, 3, 1, &t);
  if (s != KILN_OK) {
    kiln_tensor_release(cbytes);
    return s;
  }
  const kiln__shape *ops[3] = {&c->shape, &a->shape, &b->shape};
  kiln__bcast plan;
  int flat;
  cl_uint ndim = kiln__bcast_plan(&shape, ops, 3, &plan, &flat);
  cl_ulong n = t.dst->numel;
  const kiln_tensor *ts[] = {c, a, b, t.dst};
  bcast_launch l = bcast_launch_for(ctx, a->dtype, n, ndim, &plan, flat, ts, 4, 0);

  kiln__ctx_lock(ctx);
  cl_kernel k;
  s = kiln__ops_kernel_variant(op, ctx,
                               kiln__dtype_is_complex(a->dtype) ? "complex" : "elementwise",
                               a->dtype, &l.sh.variant, "where_values", &k);
  if (s == KILN_OK) {
    kiln__args args = kiln__args_begin(op, k);
    kiln__args_tensor(&args, c);
    kiln__args_tensor(&args, a);
    kiln__args_tensor(&args, b);
    bcast_tail_args(&args, t.dst, n, ndim, &plan, l.flags);
    s = args.status;
  }
  if (s == KILN_OK)
    s = launch_bcast(op, ctx, k, n, &l);
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  kiln_tensor_release(cbytes);
  return s;
}

kiln_status
kiln_copy(kiln_context *ctx, const kiln_tensor *src, kiln_tensor *dst)
{
  static const char op[] = "kiln_copy";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(kiln__tensor_check(op, src, ctx));
  KILN_TRY(kiln__tensor_check(op, dst, ctx));
  KILN_RETURN_IF(src->dtype != dst->dtype, KILN_ERR_DTYPE, op, "dtypes differ (%s and %s)",
                 kiln_dtype_name(src->dtype), kiln_dtype_name(dst->dtype));
  if (!kiln__shape_equal(&src->shape, &dst->shape)) {
    char sa[160], sb[160];
    return kiln__fail(KILN_ERR_SHAPE, op, 0, "shapes differ (%s and %s)",
                      kiln__shape_format(&src->shape, sa, sizeof sa),
                      kiln__shape_format(&dst->shape, sb, sizeof sb));
  }
  struct copy_params p;
  copy_lookup(ctx, src->dtype, src->numel, &p);
  kiln__ctx_lock(ctx);
  kiln_status s;
  if (p.kernel && kiln__ops_overlap(src, dst) == KILN__OVERLAP_NONE) {
    /* A vector access needs both element offsets to be multiples of the width. */
    uint32_t vec = p.vec_width;
    while (vec > 1 && (kiln__ops_elem_offset(src) % vec || kiln__ops_elem_offset(dst) % vec))
      vec /= 2;
    flat_shape sh = {p.wg_size,
                     {.ew_items = p.items_per_thread,
                      .ew_vec = vec,
                      .nt_store = copy_nt_store(ctx, src->dtype, src->numel, vec)}};
    s = run_map(op, ctx, "cast", src->dtype, "copy_values", src, dst, NULL, 0, 0, &sh);
  } else {
    s = kiln__ops_copy(op, ctx, src, dst);
  }
  kiln__ctx_unlock(ctx);
  return s;
}

kiln_status
kiln__ew_map(const char *op, kiln_context *ctx, const char *source, const char *kname,
             const kiln_tensor *x, kiln_dtype rdtype, kiln_tensor **out)
{
  kiln__out_target t;
  KILN_TRY(kiln__ops_out_begin(op, ctx, rdtype, &x->shape, out, &x, 1, 1, &t));
  const kiln_tensor *ts[] = {x, t.dst};
  flat_shape sh = flat_shape_for(ctx, x->dtype, x->numel, ts, 2);
  kiln__ctx_lock(ctx);
  kiln_status s = run_map(op, ctx, source, x->dtype, kname, x, t.dst, NULL, 0, 0, &sh);
  s = kiln__ops_out_finish(op, ctx, &t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---------------------------------------------------------------- the family */

static void
ew_build_options(const kiln_device_info *info, const char *source, kiln_dtype dtype,
                 const void *variant, char *buf, size_t len)
{
  /* Flat launches compile their vector width and vectors per item in. The kernels' own
   * defaults are 1 and 1, so that variant keeps the plain option string. */
  const kiln__program_variant *v = variant;
  uint32_t items, vec;
  if (strcmp(source, "cast") == 0) {
    struct copy_params c;
    copy_default(info, dtype, &c);
    items = cast_default_items(info);
    vec = c.vec_width;
  } else if (strcmp(source, "elementwise") == 0 || strcmp(source, "complex") == 0) {
    ew_default_shape(info, dtype, &items, &vec);
  } else {
    return;
  }
  if (v && v->ew_items)
    items = v->ew_items;
  if (v && v->ew_vec)
    vec = v->ew_vec;
  if (items != 1 || vec != 1)
    kiln__options_append(buf, len, " -DKILN_EW_ITEMS=%u -DKILN_EW_VEC=%u", items, vec);
  if (v && v->nt_store)
    kiln__options_append(buf, len, " -DKILN_NT_STORE=1");
  /* kiln's own branch-free exp for doubles where PoCL-like CPU compilers vectorize it */
  if (strcmp(source, "elementwise") == 0 && dtype == KILN_F64 && !info->is_gpu)
    kiln__options_append(buf, len, " -DKILN_EXP64=1");
  uint32_t lanes = v && v->cast_lanes ? v->cast_lanes : cast_default_lanes(info);
  if (strcmp(source, "cast") == 0 && lanes != 1)
    kiln__options_append(buf, len, " -DKILN_CAST_LANES=%u", lanes);
}

#define N_(a) (sizeof(a) / sizeof((a)[0]))
#define EW_FIELD(f) .offset = offsetof(struct ew_params, f), .size = sizeof(uint32_t)

static const uint64_t ew_wg_full[] = {16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
static const uint64_t ew_wg_quick[] = {64, 256, 1024};
/* Each vector width and item count is a program of its own (compile-time in the kernels). */
static const uint64_t ew_items_full[] = {1, 2, 4, 8};
static const uint64_t ew_vec_full[] = {1, 2, 4, 8};
static const uint64_t ew_shape_quick[] = {1, 4};

static const struct kiln__tune_param ew_tune_params[] = {
    {.name = "wg_size",
     EW_FIELD(wg_size),
     .min = 1,
     .max = 65536,
     .full = ew_wg_full,
     .nfull = N_(ew_wg_full),
     .quick = ew_wg_quick,
     .nquick = N_(ew_wg_quick),
     .local_size = 1},
    {.name = "items_per_thread",
     EW_FIELD(items_per_thread),
     .min = 1,
     .max = EW_ITEMS_MAX,
     .full = ew_items_full,
     .nfull = N_(ew_items_full),
     .quick = ew_shape_quick,
     .nquick = N_(ew_shape_quick)},
    {.name = "vec_width",
     EW_FIELD(vec_width),
     .min = 1,
     .max = EW_VEC_MAX,
     .full = ew_vec_full,
     .nfull = N_(ew_vec_full),
     .quick = ew_shape_quick,
     .nquick = N_(ew_shape_quick),
     .pow2 = 1},
};

static int
ew_dtype_ok(kiln_dtype d)
{
  return kiln_binary_op_supports(KILN_OP_ADD, d);
}

static void
ew_defaults(const kiln_context *ctx, kiln_dtype dtype, int layout, int log2n, void *params)
{
  (void)log2n;
  (void)layout;
  struct ew_params *p = params;
  p->wg_size = (uint32_t)ctx->wg_size;
  ew_default_shape(&ctx->info, dtype, &p->items_per_thread, &p->vec_width);
}

/* The flat launch timed: a + b over n elements (its local size comes from the lookup). */
static kiln_status
ew_run(struct kiln__tune_problem *pb, const void *params)
{
  (void)params;
  return kiln_binary(pb->ctx, KILN_OP_ADD, pb->in[0], pb->in[1], &pb->out);
}

static double
ew_bytes(const struct kiln__tune_problem *pb)
{
  return 3.0 * (double)pb->n * (double)kiln_dtype_size(pb->dtype);
}

_Static_assert(sizeof(struct ew_params) <= KILN__TUNE_PARAMS_MAX, "parameter struct too large");

static const struct kiln__tune_family ew_tune = {
    .name = "elementwise",
    .description = "flat 1-D launches, timed on a + b",
    .source = "elementwise",
    .kernel_prefix = "binary_add",
    .params_size = sizeof(struct ew_params),
    .params = ew_tune_params,
    .nparams = N_(ew_tune_params),
    .layouts = 1u << KILN__LAYOUT_FLAT,
    .layout_names = "flat",
    .ninputs = 2,
    .dtype_ok = ew_dtype_ok,
    .defaults = ew_defaults,
    .run = ew_run,
    .bytes = ew_bytes,
};

static const struct kiln__source ew_sources[] = {
    {"elementwise", EW_DTYPES},
    {"cast", KILN__DT_EVERY},
    {"complex", KILN__DT_COMPLEX},
    {NULL, 0},
};

const struct kiln__family kiln__elementwise_family = {
    .name = "elementwise",
    .sources = ew_sources,
    .build_options = ew_build_options,
    .tune = &ew_tune,
};

/* ---------------------------------------------------------------- casts and copies: the tuner */

#define CAST_FIELD(f) .offset = offsetof(struct cast_params, f), .size = sizeof(uint32_t)
#define COPY_FIELD(f) .offset = offsetof(struct copy_params, f), .size = sizeof(uint32_t)

static const uint64_t cc_wg_full[] = {64, 128, 256, 512, 1024};
static const uint64_t cc_wg_quick[] = {256};
static const uint64_t cc_items[] = {1, 2, 4, 8};
static const uint64_t cc_items_quick[] = {1, 4};
static const uint64_t copy_vec_full[] = {1, 4, 16};
static const uint64_t copy_vec_quick[] = {4, 16};
static const uint64_t copy_kernel_all[] = {0, 1};
static const uint64_t cast_lanes_all[] = {1, 8};

static const struct kiln__tune_param cast_tune_params[] = {
    {.name = "wg_size", CAST_FIELD(wg_size), .min = 1, .max = 65536, .full = cc_wg_full,
     .nfull = N_(cc_wg_full), .quick = cc_wg_quick, .nquick = N_(cc_wg_quick), .local_size = 1},
    {.name = "items_per_thread", CAST_FIELD(items_per_thread), .min = 1, .max = COPY_ITEMS_MAX,
     .full = cc_items, .nfull = N_(cc_items), .quick = cc_items_quick,
     .nquick = N_(cc_items_quick)},
    {.name = "lanes", CAST_FIELD(lanes), .min = 1, .max = CAST_LANES_MAX, .full = cast_lanes_all,
     .nfull = N_(cast_lanes_all), .quick = cast_lanes_all, .nquick = N_(cast_lanes_all)},
};

static const struct kiln__tune_param copy_tune_params[] = {
    {.name = "kernel", COPY_FIELD(kernel), .min = 0, .max = 1, .full = copy_kernel_all,
     .nfull = N_(copy_kernel_all), .quick = copy_kernel_all, .nquick = N_(copy_kernel_all)},
    {.name = "wg_size", COPY_FIELD(wg_size), .min = 1, .max = 65536, .full = cc_wg_full,
     .nfull = N_(cc_wg_full), .quick = cc_wg_quick, .nquick = N_(cc_wg_quick), .local_size = 1},
    {.name = "items_per_thread", COPY_FIELD(items_per_thread), .min = 1, .max = COPY_ITEMS_MAX,
     .full = cc_items, .nfull = N_(cc_items), .quick = cc_items_quick,
     .nquick = N_(cc_items_quick)},
    {.name = "vec_width", COPY_FIELD(vec_width), .min = 1, .max = COPY_VEC_MAX,
     .full = copy_vec_full, .nfull = N_(copy_vec_full), .quick = copy_vec_quick,
     .nquick = N_(copy_vec_quick), .pow2 = 1},
};

static int
cc_dtype_ok(kiln_dtype d)
{
  return kiln__dtype_valid(d);
}

static void
cast_defaults(const kiln_context *ctx, kiln_dtype dtype, int layout, int log2n, void *params)
{
  (void)log2n;
  (void)layout;
  (void)dtype;
  struct cast_params *p = params;
  p->wg_size = (uint32_t)ctx->wg_size;
  p->items_per_thread = cast_default_items(&ctx->info);
  p->lanes = cast_default_lanes(&ctx->info);
}

static void
copy_defaults(const kiln_context *ctx, kiln_dtype dtype, int layout, int log2n, void *params)
{
  (void)log2n;
  (void)layout;
  struct copy_params *p = params;
  copy_default(&ctx->info, dtype, p);
  p->wg_size = (uint32_t)ctx->wg_size;
}

/* The cast timed: to i32 (to f32 from i32), the cast bench's case. */
static kiln_status
cast_run(struct kiln__tune_problem *pb, const void *params)
{
  (void)params;
  kiln_tensor_release(pb->out);
  pb->out = NULL;
  return kiln_cast(pb->ctx, pb->in[0], pb->dtype == KILN_I32 ? KILN_F32 : KILN_I32, &pb->out);
}

static kiln_status
copy_setup(struct kiln__tune_problem *pb)
{
  KILN_TRY(kiln__tune_input(pb->ctx, pb->dtype, pb->ndim, pb->shape, 12345u, &pb->in[0]));
  return kiln_tensor_create(pb->ctx, pb->dtype, pb->ndim, pb->shape, &pb->out);
}

static kiln_status
copy_run(struct kiln__tune_problem *pb, const void *params)
{
  (void)params;
  return kiln_copy(pb->ctx, pb->in[0], pb->out);
}

_Static_assert(sizeof(struct cast_params) <= KILN__TUNE_PARAMS_MAX, "parameter struct too large");
_Static_assert(sizeof(struct copy_params) <= KILN__TUNE_PARAMS_MAX, "parameter struct too large");

static const struct kiln__tune_family cast_tune = {
    .name = "cast",
    .description = "casts, timed on a cast to i32",
    .source = "cast",
    .kernel_prefix = "cast_to_",
    .params_size = sizeof(struct cast_params),
    .params = cast_tune_params,
    .nparams = N_(cast_tune_params),
    .layouts = 1u << KILN__LAYOUT_FLAT,
    .layout_names = "flat",
    .ninputs = 1,
    .dtype_ok = cc_dtype_ok,
    .defaults = cast_defaults,
    .run = cast_run,
    .bytes = kiln__tune_in_out_bytes,
};

/* Copies are timed by wall clock: clEnqueueCopyBuffer records no kernel event. */
static const struct kiln__tune_family copy_tune = {
    .name = "copy",
    .description = "kiln_copy: clEnqueueCopyBuffer or a vector copy kernel",
    .source = "cast",
    .kernel_prefix = "copy_values",
    .params_size = sizeof(struct copy_params),
    .params = copy_tune_params,
    .nparams = N_(copy_tune_params),
    .layouts = 1u << KILN__LAYOUT_FLAT,
    .layout_names = "flat",
    .ninputs = 1,
    .wall_clock = 1,
    .dtype_ok = cc_dtype_ok,
    .defaults = copy_defaults,
    .run = copy_run,
    .bytes = kiln__tune_in_out_bytes,
    .setup = copy_setup,
};

/* Tuner entries, listed after the families tuned before them (kiln_tune_family_get indexes
 * them in list order). */
const struct kiln__family kiln__cast_tune_family = {
    .name = "cast_tune",
    .tune = &cast_tune,
};

const struct kiln__family kiln__copy_tune_family = {
    .name = "copy_tune",
    .tune = &copy_tune,
};
