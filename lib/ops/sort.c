/*
 * sort family: sort, argsort, topk, kthvalue, sortrows (this file) and unique, searchsorted,
 * isin and the set operations (sort_set.c); kernels in cl_kernels/sort.cl (typed: keys,
 * gathers, the local sort, searches) and cl_kernels/sort_radix.cl (key-only radix passes and
 * the scan, built for i32 = 32-bit keys and i64 = 64-bit keys). docs/sort.md.
 */
#include <stdlib.h>
#include <string.h>

#include "core/dtype_traits.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "core/shape.h"
#include "kiln/sort.h"
#include "ops/families.h"
#include "ops/ops_common.h"
#include "ops/sort_internal.h"
#include "runtime/runtime.h"

/* Local memory the local sort may take: half the device's (two groups per compute unit), at
 * most this. */
#define SORT_LOCAL_CAP 32768u
#define SORT_MAX_GROUPS ((uint64_t)1 << 16)

uint32_t kiln__sort_radix_local = 0;
uint64_t kiln__sort_radix_tile = 0;
uint32_t kiln__sort_radix_bits = 0;
int kiln__sort_force_select = 0;
int kiln__sort_force_pairs = 0;
int kiln__sort_onesweep = 0;
uint32_t kiln__sort_onesweep_ipt = 0;
uint32_t kiln__sort_ss_splitters = 0;

/* ---------------------------------------------------------------- helpers */

int
kiln__sort_key64(kiln_dtype dt)
{
  return dt == KILN_I64 || dt == KILN_F64;
}

static kiln_dtype
key_dtype(kiln_dtype dt)
{
  return kiln__sort_key64(dt) ? KILN_I64 : KILN_I32;
}

/* Key bits the passes must cover: one byte for bool and u8, else the key's width. */
static uint32_t
key_bits(kiln_dtype dt)
{
  if (dt == KILN_U8 || dt == KILN_BOOL)
    return 8;
  return kiln__sort_key64(dt) ? 64 : 32;
}

kiln_status
kiln__sort_check_x(const char *op, kiln_context *ctx, const kiln_tensor *x, const char *what)
{
  KILN_TRY(kiln__tensor_check(op, x, ctx));
  KILN_RETURN_IF(!(KILN__SORT_DTYPES & KILN__DT_BIT(x->dtype)), KILN_ERR_DTYPE, op,
                 "%s is %s; sorting takes bool, u8, i32, i64, f16, bf16, f32 and f64", what,
                 kiln_dtype_name(x->dtype));
  KILN_RETURN_IF(!kiln__device_has_dtype(&ctx->info, x->dtype), KILN_ERR_UNSUPPORTED, op,
                 "%s needs a device with fp64", kiln_dtype_name(x->dtype));
  KILN_RETURN_IF(x->numel >= ((uint64_t)1 << 32), KILN_ERR_OVERFLOW, op,
                 "%s has %llu elements; a sort holds fewer than 2^32", what,
                 (unsigned long long)x->numel);
  return KILN_OK;
}

static uint64_t
local_cap(const kiln_context *ctx)
{
  uint64_t half = ctx->info.local_mem_bytes / 2;
  return half < SORT_LOCAL_CAP ? half : SORT_LOCAL_CAP;
}

uint64_t
kiln_sort_local_max(const kiln_context *ctx, kiln_dtype dtype)
{
  if (kiln__ctx_check("kiln_sort_local_max", ctx) != KILN_OK)
    return 0;
  uint64_t per = (kiln__sort_key64(dtype) ? 8 : 4) + 4, n = 1;
  while (n * 2 * per <= local_cap(ctx))
    n *= 2;
  return n;
}

static uint64_t
groups_for(uint64_t items)
{
  return items < 1 ? 1 : items > SORT_MAX_GROUPS ? SORT_MAX_GROUPS : items;
}

static kiln_status
fill_u32(const char *op, kiln_context *ctx, cl_mem mem, uint32_t v, uint64_t n)
{
  cl_int err = clEnqueueFillBuffer(ctx->queue, mem, &v, sizeof v, 0, n * 4, 0, NULL, NULL);
  return err == CL_SUCCESS ? KILN_OK : kiln__fail_cl(op, err, "clEnqueueFillBuffer");
}

/* Rows of x as the sort sees them: rows of len elements, inner apart. */
typedef struct sort_geo {
  uint64_t rows, len, inner;
} sort_geo;

/* The arguments the row kernels of sort.cl (sort_keys, sort_local, tk_hist, tk_collect,
 * tk_rows_local) start with, in this order. */
static void
args_rows(kiln__args *a, const kiln_tensor *x, const sort_geo *g, int desc)
{
  kiln__args_tensor(a, x);
  kiln__args_u64(a, g->rows);
  kiln__args_u64(a, g->len);
  kiln__args_u64(a, g->inner);
  kiln__args_u32(a, (uint32_t) !!desc);
}

/* The placement arguments of the kernels that write results (sort_gather, sort_local,
 * tk_rows_local): positions [ostart, ostart + olen) of each sorted row into vout and iout,
 * either NULL. */
static void
args_out(kiln__args *a, uint64_t ostart, uint64_t olen, kiln_tensor *vout, kiln_tensor *iout)
{
  kiln__args_u64(a, ostart);
  kiln__args_u64(a, olen);
  kiln__args_tensor(a, vout);
  kiln__args_tensor(a, iout);
  kiln__args_u32(a, (vout ? 1u : 0u) | (iout ? 2u : 0u));
}

/* The local key and payload arrays of the work-group sorts (sort_local, tk_rows_local,
 * pairs_local) for np pairs, and np. */
static void
args_local_pairs(kiln__args *a, uint64_t np, int key64)
{
  kiln__args_local(a, (size_t)(np * (key64 ? 8 : 4)));
  kiln__args_local(a, (size_t)(np * 4));
  kiln__args_u64(a, np);
}

/* sort_keys (kernel k of x's dtype): the keys of g's rows of x and, with vals, their
 * positions. */
static kiln_status
launch_keys(const char *op, kiln_context *ctx, cl_kernel k, const kiln_tensor *x, const sort_geo *g,
            int desc, kiln_tensor *keys, kiln_tensor *vals)
{
  kiln__args a = kiln__args_begin(op, k);
  args_rows(&a, x, g, desc);
  kiln__args_tensor(&a, keys);
  kiln__args_tensor(&a, vals);
  return kiln__args_launch_1d(&a, ctx, g->rows * g->len, 0);
}

/* sort_gather: places the sorted rows given by their payloads vals (rows of vlen) as args_out
 * says. */
static kiln_status
launch_gather(const char *op, kiln_context *ctx, const kiln_tensor *x, const sort_geo *g,
              const kiln_tensor *vals, uint64_t vlen, uint64_t ostart, uint64_t olen,
              kiln_tensor *vout, kiln_tensor *iout)
{
  cl_kernel k;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__SORT_SRC, x->dtype, "sort_gather", &k));
  kiln__args a = kiln__args_begin(op, k);
  kiln__args_tensor(&a, x);
  kiln__args_u64(&a, g->rows);
  kiln__args_u64(&a, g->len);
  kiln__args_u64(&a, g->inner);
  kiln__args_tensor(&a, vals);
  kiln__args_u64(&a, vlen);
  args_out(&a, ostart, olen, vout, iout);
  return kiln__args_launch_1d(&a, ctx, g->rows * olen, 0);
}

/* A producer of (keys, vals) that fails hands back neither. */
static void
drop_pairs(kiln_tensor **keys, kiln_tensor **vals)
{
  kiln_tensor_release(*keys);
  kiln_tensor_release(*vals);
  *keys = *vals = NULL;
}

/* A radix pass's result becomes its input: the pairs and their scratch trade places. */
static void
swap_pairs(kiln_tensor **keys, kiln_tensor **vals, kiln_tensor **k2, kiln_tensor **v2)
{
  kiln_tensor *t = *keys;
  *keys = *k2;
  *k2 = t;
  t = *vals;
  *vals = *v2;
  *v2 = t;
}

/* ---------------------------------------------------------------- scan */

uint64_t
kiln__sort_chunk(const kiln_context *ctx, size_t L, uint64_t n)
{
  uint64_t cu = ctx->info.compute_units ? ctx->info.compute_units : 1;
  /* GPUs: 16 per work-item; CPUs: a few long serial chunks per core. The chunk count stays
   * small: one work-group scans the chunk sums. */
  uint64_t chunk = ctx->info.is_gpu ? (uint64_t)L * 16 : (n + 4 * cu - 1) / (4 * cu);
  if (chunk < 1024)
    chunk = 1024;
  while ((n + chunk - 1) / chunk > 8192)
    chunk *= 2;
  return chunk;
}

/* scan_reduce and scan_down: one group of L items per chunk of buf's m counts. */
static kiln_status
scan_chunks(const char *op, kiln_context *ctx, cl_kernel k, cl_mem buf, uint64_t m, uint64_t chunk,
            cl_mem sums, uint64_t nb, size_t L)
{
  kiln__args a = kiln__args_begin(op, k);
  kiln__args_mem(&a, buf);
  kiln__args_u64(&a, m);
  kiln__args_u64(&a, chunk);
  kiln__args_mem(&a, sums);
  kiln__args_local(&a, L * 4);
  return kiln__args_enqueue_1d(&a, ctx, (size_t)(nb * L), L);
}

kiln_status
kiln__sort_scan(const char *op, kiln_context *ctx, cl_mem buf, uint64_t m)
{
  if (!m)
    return KILN_OK;
  cl_kernel kr, kt, kd;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__SORT_RADIX_SRC, KILN_I32, "scan_reduce", &kr));
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__SORT_RADIX_SRC, KILN_I32, "scan_top", &kt));
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__SORT_RADIX_SRC, KILN_I32, "scan_down", &kd));
  size_t L = ctx->info.is_gpu ? kiln__launch_pow2_local(ctx, kd) : 1;
  if (kiln__sort_radix_local)
    L = kiln__sort_radix_local;
  uint64_t chunk = kiln__sort_chunk(ctx, L, m);
  uint64_t nb = (m + chunk - 1) / chunk;
  kiln__ops_tmp sums = {0};
  KILN_TRY(kiln__ops_tmp_alloc(ctx, nb * 4, &sums));
  kiln_status s = scan_chunks(op, ctx, kr, buf, m, chunk, sums.mem, nb, L);
  if (s == KILN_OK) {
    kiln__args b = kiln__args_begin(op, kt);
    kiln__args_mem(&b, sums.mem);
    kiln__args_u64(&b, nb);
    kiln__args_local(&b, L * 4);
    s = kiln__args_enqueue_1d(&b, ctx, L, L);
  }
  if (s == KILN_OK)
    s = scan_chunks(op, ctx, kd, buf, m, chunk, sums.mem, nb, L);
  kiln__ops_tmp_free(ctx, &sums);
  return s;
}

/* ---------------------------------------------------------------- onesweep passes */

/* Work-items of an onesweep group (OS_L of sort_onesweep.cl). */
#define OS_L 256u

/* Local memory os_pass takes with ipt keys per work-item of ksz bytes. */
static uint64_t
os_local_bytes(uint32_t ipt, uint64_t ksz)
{
  uint64_t t = (uint64_t)OS_L * ipt, c = 16 * OS_L;
  return (t + t / 32) * ksz + (c + c / 16) * 4 + (3 * 256 + OS_L + 16 + 1) * 4;
}

/* The device's default keys per work-item: the most that fit, 16 (32-bit keys) or 8. */
static uint32_t
os_default_ipt(const kiln_device_info *info, kiln_dtype dt)
{
  uint64_t ksz = kiln__sort_key64(dt) ? 8 : 4;
  uint32_t ipt = ksz == 8 ? 8 : 16;
  while (ipt > 1 && os_local_bytes(ipt, ksz) > info->local_mem_bytes)
    ipt /= 2;
  return ipt;
}

static void
sort_build_options(const kiln_device_info *info, const char *source, kiln_dtype dtype,
                   const void *variant, char *buf, size_t len)
{
  if (strcmp(source, KILN__SORT_OS_SRC) != 0)
    return;
  uint32_t ipt = variant ? *(const uint32_t *)variant : os_default_ipt(info, dtype);
  kiln__options_append(buf, len, " -DOS_IPT=%u", ipt);
}

/*
 * The dtype whose onesweep program sorts the keys of dt: dt itself where the program can
 * also read the values (f32, f64, i32, i64), else the key width's (i32, i64).
 */
static kiln_dtype
os_dtype(kiln_dtype dt)
{
  return dt == KILN_F32 || dt == KILN_F64 || dt == KILN_I32 || dt == KILN_I64 ? dt
                                                                             : key_dtype(dt);
}

/* Kernel name of the onesweep program of dtype bdt with ipt keys per work-item. */
static kiln_status
os_kernel(const char *op, kiln_context *ctx, kiln_dtype kdt, uint32_t ipt, const char *name,
          cl_kernel *k)
{
  char options[192];
  KILN_RETURN_IF(!kiln__program_options(&ctx->info, KILN__SORT_OS_SRC, kdt, &ipt, options,
                                        sizeof options),
                 KILN_ERR_DTYPE, op, "dtype %s is not supported by the %s.cl kernels",
                 kiln_dtype_name(kdt), KILN__SORT_OS_SRC);
  return kiln__kernel_get(op, ctx, KILN__SORT_OS_SRC, options, name, k);
}

/*
 * Whether n keys of dt's values take the onesweep passes, and with how many keys per
 * work-item (*ipt). Order of say: the test hooks, KILN_SORT_RADIX (classic, onesweep or
 * onesweep:IPT), the device (GPUs onesweep, CPUs the classic passes). The look-back packs
 * counts in 30 bits and a group needs 256 work-items and its tile in local memory. A program
 * that does not build sends the sort to the classic passes (logged).
 */
static int
use_onesweep(const char *op, kiln_context *ctx, kiln_dtype dt, uint64_t n, int pay, uint32_t *ipt)
{
  int mode = kiln__sort_onesweep;
  uint32_t want = kiln__sort_onesweep_ipt;
  if (kiln__sort_radix_local || kiln__sort_radix_tile || kiln__sort_radix_bits)
    return 0; /* the classic passes' test hooks */
  if (!mode) {
    const char *e = kiln__env(KILN__ENV_SORT_RADIX);
    if (e && strcmp(e, "classic") == 0) {
      mode = -1;
    } else if (e && strncmp(e, "onesweep", 8) == 0) {
      mode = 1;
      if (e[8] == ':')
        want = (uint32_t)strtoul(e + 9, NULL, 10);
    }
  }
  if (!mode)
    mode = ctx->info.is_gpu ? 1 : -1;
  if (mode < 0 || n < 2 || n >= ((uint64_t)1 << 30) || ctx->info.max_work_group_size < OS_L)
    return 0;
  uint64_t ksz = kiln__sort_key64(dt) ? 8 : 4;
  /* 32-bit keys with payloads: 8 per work-item (H200: argsort of 2^26 f32 4.9 ms against 5.7
   * with 16, row sorts 7.4 against 8.8 ms); keys alone: 16 (3.3 ms against 3.6 for i32). */
  uint32_t p = want >= 1 && want <= 16 ? want : os_default_ipt(&ctx->info, dt);
  if (!(want >= 1 && want <= 16) && pay && p > 8)
    p = 8;
  while (p > 1 && os_local_bytes(p, ksz) > ctx->info.local_mem_bytes)
    p /= 2;
  if (os_local_bytes(p, ksz) > ctx->info.local_mem_bytes)
    return 0;
  cl_kernel k;
  if (os_kernel(op, ctx, os_dtype(dt), p, "os_pass", &k) != KILN_OK) {
    kiln__log(KILN__LOG_WARN, "%s: the onesweep radix kernels did not build; classic passes", op);
    return 0;
  }
  *ipt = p;
  return 1;
}

/*
 * Where the onesweep passes find the keys: src 0, in *keys (and *vals), made before; else
 * made from x (one contiguous row) by the histogram and the first pass, with payloads 1 the
 * positions, 2 the f32 bits, 3 none (os_pass's src).
 */
typedef struct os_source {
  const kiln_tensor *x;
  uint32_t src;
  int desc;
} os_source;

/* Whether the onesweep passes can make x's keys themselves (rows of len, inner 1). */
static int
os_fused(const char *op, kiln_context *ctx, const kiln_tensor *x, uint64_t n, uint64_t inner,
         int pay, uint32_t *ipt)
{
  return inner == 1 && os_dtype(x->dtype) == x->dtype &&
         use_onesweep(op, ctx, x->dtype, n, pay, ipt);
}

/*
 * radix_passes by onesweep (sort_onesweep.cl): one histogram of every pass's digits, then
 * per 8-bit digit one pass that ranks each tile locally and finds its place by decoupled
 * look-back. Same contract as radix_passes.
 */
static kiln_status
onesweep_passes(const char *op, kiln_context *ctx, kiln_dtype dt, kiln_tensor **keys,
                kiln_tensor **vals, uint64_t n, uint32_t kbits, uint64_t rows, uint64_t len,
                uint32_t ipt, cl_mem special, const os_source *from)
{
  const kiln_dtype kdt = key_dtype(dt), bdt = os_dtype(dt);
  const os_source none = {NULL, 0, 0};
  if (!from)
    from = &none;
  const uint32_t nov = *vals ? 0u : 2u;
  uint32_t row_bits = 0;
  while (rows > 1 && ((uint64_t)1 << row_bits) < rows)
    row_bits++;
  const uint32_t kpasses = (kbits + 7) / 8, rpasses = (row_bits + 7) / 8;
  const uint32_t np = kpasses + rpasses;
  const uint64_t tile = (uint64_t)OS_L * ipt, ntiles = (n + tile - 1) / tile;
  const uint64_t nlook = 32 + ntiles * 256;
  cl_kernel kh, khs, kp;
  KILN_TRY(os_kernel(op, ctx, bdt, ipt, "os_hist", &kh));
  KILN_TRY(os_kernel(op, ctx, bdt, ipt, "os_hist_scan", &khs));
  KILN_TRY(os_kernel(op, ctx, bdt, ipt, "os_pass", &kp));
  kiln_tensor *k2 = NULL, *v2 = NULL;
  kiln__ops_tmp hist = {0}, look = {0};
  kiln_status s = kiln__ops_scratch(op, ctx, kdt, n, &k2);
  if (s == KILN_OK && !nov)
    s = kiln__ops_scratch(op, ctx, KILN_I32, n, &v2);
  if (s == KILN_OK)
    s = kiln__ops_tmp_alloc(ctx, (12 * 256 + 12) * 4, &hist); /* OS_CONST flags after 12 rows */
  if (s == KILN_OK)
    s = kiln__ops_tmp_alloc(ctx, nlook * 4, &look);
  if (s == KILN_OK)
    s = fill_u32(op, ctx, hist.mem, 0, (uint64_t)np * 256);
  if (s == KILN_OK) {
    uint64_t cu = ctx->info.compute_units ? ctx->info.compute_units : 1;
    uint64_t groups = ntiles < 8 * cu ? ntiles : 8 * cu;
    kiln__args a = kiln__args_begin(op, kh);
    kiln__args_tensor(&a, *keys);
    kiln__args_tensor(&a, *vals);
    kiln__args_u64(&a, n);
    kiln__args_u32(&a, kpasses);
    kiln__args_u32(&a, rpasses);
    kiln__args_u64(&a, len);
    kiln__args_mem(&a, hist.mem);
    kiln__args_tensor(&a, from->x);
    kiln__args_u32(&a, from->src);
    kiln__args_u32(&a, (uint32_t) !!from->desc);
    kiln__args_mem(&a, special);
    s = kiln__args_enqueue_1d(&a, ctx, (size_t)(groups * OS_L), OS_L);
  }
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, khs);
    kiln__args_mem(&a, hist.mem);
    kiln__args_u32(&a, np);
    s = kiln__args_launch_1d(&a, ctx, np, 0);
  }
  for (uint32_t p = 0; s == KILN_OK && p < np; p++) {
    uint32_t mode = p >= kpasses, shift = 8 * (mode ? p - kpasses : p);
    s = fill_u32(op, ctx, look.mem, 0, nlook);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, kp);
      kiln__args_tensor(&a, *keys);
      kiln__args_tensor(&a, *vals);
      kiln__args_u64(&a, n);
      kiln__args_u32(&a, shift);
      kiln__args_u32(&a, mode | nov);
      kiln__args_u64(&a, len);
      kiln__args_mem(&a, hist.mem);
      kiln__args_u32(&a, p);
      kiln__args_mem(&a, look.mem);
      kiln__args_tensor(&a, k2);
      kiln__args_tensor(&a, v2);
      kiln__args_mem(&a, special);
      /* The first pass reads x when the keys are not made yet. */
      kiln__args_tensor(&a, p == 0 ? from->x : NULL);
      kiln__args_u32(&a, p == 0 ? from->src : 0);
      kiln__args_u32(&a, (uint32_t) !!from->desc);
      s = kiln__args_enqueue_1d(&a, ctx, (size_t)(ntiles * OS_L), OS_L);
    }
    if (s == KILN_OK)
      swap_pairs(keys, vals, &k2, &v2);
  }
  kiln__ops_tmp_free(ctx, &hist);
  kiln__ops_tmp_free(ctx, &look);
  kiln_tensor_release(k2);
  kiln_tensor_release(v2);
  return s;
}

/* ---------------------------------------------------------------- radix passes */

/* The arguments radix_count and radix_scatter (sort_radix.cl) start with: the pairs, the
 * digit's tiles and the per-group digit counts. */
static void
args_digit(kiln__args *a, const kiln_tensor *keys, const kiln_tensor *vals, uint64_t n,
           uint64_t tile, uint32_t shift, uint32_t rbits, uint32_t mode, uint64_t len, cl_mem hist)
{
  kiln__args_tensor(a, keys);
  kiln__args_tensor(a, vals);
  kiln__args_u64(a, n);
  kiln__args_u64(a, tile);
  kiln__args_u32(a, shift);
  kiln__args_u32(a, rbits);
  kiln__args_u32(a, mode);
  kiln__args_u64(a, len);
  kiln__args_mem(a, hist);
}

/*
 * Sorts the n pairs in (*keys, *vals) stably by key bits [0, kbits), then, with rows > 1, by
 * the payloads' rows (payload / len). Ping-pongs with two more scratch tensors; on return
 * *keys and *vals hold the result (the others released). special: NULL, or a device flag
 * whose 0 allows leaving the payloads unsorted (os_pass).
 */
static kiln_status
radix_passes(const char *op, kiln_context *ctx, kiln_dtype dt, kiln_tensor **keys,
             kiln_tensor **vals, uint64_t n, uint32_t kbits, uint64_t rows, uint64_t len,
             cl_mem special)
{
  const kiln_dtype kdt = key_dtype(dt);
  /* No payloads (*vals NULL): keys only, one row. */
  const uint32_t nov = *vals ? 0u : 2u;
  if (n < 2)
    return KILN_OK;
  uint32_t ipt;
  if (use_onesweep(op, ctx, dt, n, *vals != NULL && !special, &ipt))
    return onesweep_passes(op, ctx, dt, keys, vals, n, kbits, rows, len, ipt, special, NULL);
  cl_kernel kc, ks;
  /* CPUs: one work-item per group walks a long tile serially (no local traffic, no
   * barriers); GPUs: up to 32 work-items share the 256 counters of each (32 KiB). 8-bit
   * digits on both: 11 bits (3 passes for 32-bit keys) measured 15% slower on PoCL (2048
   * scatter streams). */
  uint32_t rbits = 8;
  if (kiln__sort_radix_bits)
    rbits = kiln__sort_radix_bits;

  uint64_t L = 1;
  if (ctx->info.is_gpu) {
    L = 32;
    while (L > 1 && L * ((uint64_t)4 << rbits) > ctx->info.local_mem_bytes / 2)
      L /= 2;
  }
  if (kiln__sort_radix_local)
    L = kiln__sort_radix_local;
  const uint64_t buckets = (uint64_t)1 << rbits;
  /* Groups of one work-item: the private-counter kernels (measured faster on PoCL). */
  const int one = L == 1;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__SORT_RADIX_SRC, kdt,
                            one ? "radix_count1" : "radix_count", &kc));
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__SORT_RADIX_SRC, kdt,
                            one ? "radix_scatter1" : "radix_scatter", &ks));
  uint64_t cu = ctx->info.compute_units ? ctx->info.compute_units : 1;
  uint64_t tile = ctx->info.is_gpu ? L * 128 : (n + 4 * cu - 1) / (4 * cu);
  if (!ctx->info.is_gpu && tile < 16384)
    tile = 16384;
  if (kiln__sort_radix_tile)
    tile = kiln__sort_radix_tile;

  tile = (tile + L - 1) / L * L;
  /* Few enough groups that the per-group digit counts stay small (2^26 counters). */
  while ((n + tile - 1) / tile * buckets > ((uint64_t)1 << 26))
    tile *= 2;
  uint64_t ng = (n + tile - 1) / tile;
  kiln_tensor *k2 = NULL, *v2 = NULL;
  kiln__ops_tmp hist = {0};
  kiln_status s = kiln__ops_scratch(op, ctx, kdt, n, &k2);
  if (s == KILN_OK && !nov)
    s = kiln__ops_scratch(op, ctx, KILN_I32, n, &v2);
  if (s == KILN_OK)
    s = kiln__ops_tmp_alloc(ctx, ng * buckets * 4, &hist);
  uint32_t row_bits = 0;
  while (rows > 1 && ((uint64_t)1 << row_bits) < rows)
    row_bits++;
  const uint32_t key_passes = (kbits + rbits - 1) / rbits;
  const uint32_t passes = key_passes + (row_bits + rbits - 1) / rbits;
  for (uint32_t p = 0; s == KILN_OK && p < passes; p++) {
    uint32_t mode = p >= key_passes, shift = rbits * (mode ? p - key_passes : p);
    kiln__args a = kiln__args_begin(op, kc);
    args_digit(&a, *keys, *vals, n, tile, shift, rbits, mode | nov, len, hist.mem);
    if (!one)
      kiln__args_local(&a, (size_t)(buckets * L * 4));
    s = kiln__args_enqueue_1d(&a, ctx, (size_t)(ng * L), (size_t)L);
    if (s == KILN_OK)
      s = kiln__sort_scan(op, ctx, hist.mem, ng * buckets);
    if (s == KILN_OK) {
      kiln__args b = kiln__args_begin(op, ks);
      args_digit(&b, *keys, *vals, n, tile, shift, rbits, mode | nov, len, hist.mem);
      kiln__args_tensor(&b, k2);
      kiln__args_tensor(&b, v2);
      if (!one)
        kiln__args_local(&b, (size_t)(buckets * L * 4));
      kiln__args_mem(&b, special);
      s = kiln__args_enqueue_1d(&b, ctx, (size_t)(ng * L), (size_t)L);
    }
    if (s == KILN_OK)
      swap_pairs(keys, vals, &k2, &v2);
  }
  kiln__ops_tmp_free(ctx, &hist);
  kiln_tensor_release(k2);
  kiln_tensor_release(v2);
  return s;
}

kiln_status
kiln__sort_pairs_radix(const char *op, kiln_context *ctx, const kiln_tensor *x, uint64_t rows,
                       uint64_t len, uint64_t inner, int desc, kiln_tensor **keys,
                       kiln_tensor **vals)
{
  const uint64_t n = rows * len;
  const kiln_dtype kdt = key_dtype(x->dtype);
  *keys = *vals = NULL;
  cl_kernel k;
  uint32_t ipt;
  const int fused = os_fused(op, ctx, x, n, inner, 1, &ipt);
  kiln_status s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, x->dtype, "sort_keys", &k);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, kdt, n, keys);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, KILN_I32, n, vals);
  if (s == KILN_OK && fused) {
    /* The passes make the keys from x and the positions themselves. */
    const os_source from = {x, 1, desc};
    s = onesweep_passes(op, ctx, x->dtype, keys, vals, n, key_bits(x->dtype), rows, len, ipt,
                        NULL, &from);
  } else if (s == KILN_OK) {
    const sort_geo g = {rows, len, inner};
    s = launch_keys(op, ctx, k, x, &g, desc, *keys, *vals);
    if (s == KILN_OK)
      s = radix_passes(op, ctx, x->dtype, keys, vals, n, key_bits(x->dtype), rows, len, NULL);
  }
  if (s != KILN_OK)
    drop_pairs(keys, vals);
  return s;
}

kiln_status
kiln__sort_rows_radix(const char *op, kiln_context *ctx, const kiln_tensor *x, uint64_t nrows,
                      uint64_t ncols, const int64_t *cols, size_t ncol, const int *desc,
                      kiln_tensor **keys, kiln_tensor **vals)
{
  const kiln_dtype kdt = key_dtype(x->dtype);
  *keys = *vals = NULL;
  cl_kernel k;
  kiln_status s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, x->dtype, "sort_col_keys", &k);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, kdt, nrows, keys);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, KILN_I32, nrows, vals);
  /* LSD over the columns: the least significant column first, each pass stable. */
  size_t nc = cols ? ncol : (size_t)ncols;
  for (size_t c = nc; s == KILN_OK && c-- > 0;) {
    uint64_t col = cols ? (uint64_t)cols[c] : c;
    kiln__args a = kiln__args_begin(op, k);
    kiln__args_tensor(&a, x);
    kiln__args_u64(&a, ncols);
    kiln__args_u64(&a, col);
    kiln__args_u32(&a, (uint32_t)(desc && desc[c]));
    kiln__args_u32(&a, c == nc - 1);
    kiln__args_u64(&a, nrows);
    kiln__args_tensor(&a, *keys);
    kiln__args_tensor(&a, *vals);
    s = kiln__args_launch_1d(&a, ctx, nrows, 0);
    if (s == KILN_OK)
      s = radix_passes(op, ctx, x->dtype, keys, vals, nrows, key_bits(x->dtype), 1, nrows, NULL);
  }
  if (s == KILN_OK && nc == 0) {
    /* No column to sort by: the identity permutation. */
    cl_kernel ki;
    s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, x->dtype, "iota", &ki);
    if (s == KILN_OK) {
      kiln__args a = kiln__args_begin(op, ki);
      kiln__args_tensor(&a, *vals);
      kiln__args_u64(&a, nrows);
      s = kiln__args_launch_1d(&a, ctx, nrows, 0);
    }
  }
  if (s != KILN_OK)
    drop_pairs(keys, vals);
  return s;
}

/* ---------------------------------------------------------------- sort core */

static kiln_status
geometry(const char *op, const kiln_tensor *x, int64_t axis, size_t *ax, sort_geo *g)
{
  g->rows = 1;
  g->len = 1;
  g->inner = 1;
  if (x->shape.ndim == 0) {
    /* A 0-D tensor sorts as one element (axis 0 or -1, as NumPy's flattened view). */
    KILN_RETURN_IF(axis != 0 && axis != -1, KILN_ERR_INVALID_ARGUMENT, op,
                   "axis %lld of a 0-D tensor (0 or -1)", (long long)axis);
    *ax = 0;
    return KILN_OK;
  }
  KILN_TRY(kiln__ops_axis(op, axis, x->shape.ndim, ax));
  for (size_t i = 0; i < x->shape.ndim; i++) {
    uint64_t d = (uint64_t)x->shape.dims[i];
    if (i == *ax)
      g->len = d;
    else
      g->rows *= d;
    if (i > *ax)
      g->inner *= d;
  }
  if (g->inner == 0)
    g->inner = 1;
  return KILN_OK;
}

/*
 * The k smallest (key, position) pairs of each row (desc: largest values) by a radix
 * selection reading x directly (sort.cl, "selection"): the k-th key, then, in rows with ties
 * at it, the position of the last equal pair wanted; exactly k pairs per row are collected
 * and a work-group sorts them (pairs_local). Places positions [ostart, ostart + olen) of the
 * k as sort_core does (ctx->lock held). k <= kiln_sort_local_max(); len > 0.
 */
static kiln_status
select_core(const char *op, kiln_context *ctx, const kiln_tensor *x, const sort_geo *g, int desc,
            uint64_t k, uint64_t ostart, uint64_t olen, kiln_tensor *vout, kiln_tensor *iout)
{
  const uint64_t rows = g->rows, len = g->len;
  const kiln_dtype kdt = key_dtype(x->dtype);
  const int k64 = kdt == KILN_I64;
  enum { NT = 6 };
  kiln_tensor *t[NT] = {NULL};
  kiln_tensor **prefix = &t[0], **need = &t[1], **ppre = &t[2], **tie = &t[3], **hist = &t[4],
              **rowcnt = &t[5];
  kiln_tensor *ck = NULL, *cv = NULL;
  cl_kernel kh, kp, kc, kl;
  kiln_status s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, x->dtype, "tk_hist", &kh);
  if (s == KILN_OK)
    s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, x->dtype, "tk_pick", &kp);
  if (s == KILN_OK)
    s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, x->dtype, "tk_collect", &kc);
  if (s == KILN_OK)
    s = kiln__ops_kernel(op, ctx, KILN__SORT_RADIX_SRC, kdt, "pairs_local", &kl);
  const kiln_dtype tdt[NT] = {kdt, KILN_I32, KILN_I32, KILN_I32, KILN_I32, KILN_I32};
  const uint64_t tn[NT] = {rows, rows, rows, rows, rows * 256, rows};
  for (size_t i = 0; s == KILN_OK && i < NT; i++)
    s = kiln__ops_scratch(op, ctx, tdt[i], tn[i], &t[i]);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, kdt, rows * k, &ck);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, KILN_I32, rows * k, &cv);
  if (s == KILN_OK)
    s = fill_u32(op, ctx, (*prefix)->mem, 0, rows * (k64 ? 2 : 1));
  if (s == KILN_OK)
    s = fill_u32(op, ctx, (*need)->mem, (uint32_t)k, rows);
  if (s == KILN_OK)
    s = fill_u32(op, ctx, (*ppre)->mem, 0, rows);
  if (s == KILN_OK)
    s = fill_u32(op, ctx, (*tie)->mem, 0, rows);
  if (s == KILN_OK)
    s = fill_u32(op, ctx, (*rowcnt)->mem, 0, rows);
  if (s == KILN_OK)
    s = fill_u32(op, ctx, (*hist)->mem, 0, rows * 256);
  /* CPUs: one work-item per group counts its chunk without atomics. */
  size_t local = s == KILN_OK && ctx->info.is_gpu ? kiln__launch_pow2_local(ctx, kh) : 1;
  if (kiln__sort_radix_local)
    local = kiln__sort_radix_local;
  uint64_t cu = ctx->info.compute_units ? ctx->info.compute_units : 1;
  /* Chunks of a row per work-group: enough groups to fill the device. */
  uint64_t per = ctx->info.is_gpu ? local * 64 : 65536;
  uint64_t nchunk = (len + per - 1) / per, most = (8 * cu + rows - 1) / rows;
  if (nchunk > most)
    nchunk = most;
  if (nchunk < 1)
    nchunk = 1;
  const uint32_t kbits = key_bits(x->dtype);
  uint32_t pbits = 0;
  while (((uint64_t)1 << pbits) < len)
    pbits++;
  const uint32_t kpass = kbits / 8, ppass = (pbits + 7) / 8;
  for (uint32_t p = 0; s == KILN_OK && p < kpass + ppass; p++) {
    /* Key passes from the top digit, then position passes from the top digit; the bits
     * above the digit are decided. */
    const uint32_t mode = p >= kpass;
    const uint32_t shift = mode ? 8 * (ppass - 1 - (p - kpass)) : kbits - 8 * (p + 1);
    uint64_t pmask = shift + 8 >= 64 ? 0 : ~(((uint64_t)1 << (shift + 8)) - 1);
    if (!k64)
      pmask &= 0xffffffffu;
    kiln__args a = kiln__args_begin(op, kh);
    args_rows(&a, x, g, desc);
    kiln__args_u64(&a, nchunk);
    kiln__args_mem(&a, (*prefix)->mem);
    if (k64)
      kiln__args_u64(&a, mode ? 0 : pmask);
    else
      kiln__args_u32(&a, mode ? 0 : (uint32_t)pmask);
    kiln__args_u32(&a, shift);
    kiln__args_mem(&a, (*ppre)->mem);
    kiln__args_u32(&a, mode ? (uint32_t)pmask : 0);
    kiln__args_u32(&a, mode);
    kiln__args_mem(&a, (*tie)->mem);
    kiln__args_mem(&a, (*hist)->mem);
    kiln__args_local(&a, 256 * 4 * 8); /* TK_COPIES of sort.cl */
    s = kiln__args_enqueue_1d(&a, ctx, (size_t)(groups_for(rows * nchunk) * local), local);
    if (s == KILN_OK) {
      kiln__args b = kiln__args_begin(op, kp);
      kiln__args_mem(&b, (*hist)->mem);
      kiln__args_u64(&b, rows);
      kiln__args_mem(&b, (*need)->mem);
      kiln__args_mem(&b, (*prefix)->mem);
      kiln__args_mem(&b, (*ppre)->mem);
      kiln__args_mem(&b, (*tie)->mem);
      kiln__args_u32(&b, shift);
      kiln__args_u32(&b, mode);
      kiln__args_u32(&b, p + 1 == kpass);
      s = kiln__args_launch_1d(&b, ctx, rows, 0);
    }
  }
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, kc);
    args_rows(&a, x, g, desc);
    kiln__args_mem(&a, (*prefix)->mem);
    kiln__args_mem(&a, (*ppre)->mem);
    kiln__args_mem(&a, (*tie)->mem);
    kiln__args_u64(&a, k);
    kiln__args_mem(&a, (*rowcnt)->mem);
    kiln__args_mem(&a, ck->mem);
    kiln__args_mem(&a, cv->mem);
    s = kiln__args_launch_1d(&a, ctx, rows * len, 0);
  }
  if (s == KILN_OK && k > 1) {
    uint64_t np = kiln__ops_pow2(k);
    size_t lsz = kiln__launch_pow2_local(ctx, kl);
    while (lsz > 1 && lsz > np / 2)
      lsz /= 2;
    kiln__args a = kiln__args_begin(op, kl);
    kiln__args_mem(&a, ck->mem);
    kiln__args_mem(&a, cv->mem);
    kiln__args_u64(&a, rows);
    kiln__args_u64(&a, k);
    args_local_pairs(&a, np, k64);
    s = kiln__args_enqueue_1d(&a, ctx, (size_t)(groups_for(rows) * lsz), lsz);
  }
  if (s == KILN_OK)
    s = launch_gather(op, ctx, x, g, cv, k, ostart, olen, vout, iout);
  for (size_t i = 0; i < NT; i++)
    kiln_tensor_release(t[i]);
  kiln_tensor_release(ck);
  kiln_tensor_release(cv);
  return s;
}

/*
 * select_core for many rows: one work-group per row selects and sorts its k pairs
 * (tk_rows_local), reading x a few times from the caches and launching once (ctx->lock
 * held). k <= kiln_sort_local_max().
 */
static kiln_status
select_rows_local(const char *op, kiln_context *ctx, const kiln_tensor *x, const sort_geo *g,
                  int desc, uint64_t k, uint64_t ostart, uint64_t olen, kiln_tensor *vout,
                  kiln_tensor *iout)
{
  cl_kernel kr;
  KILN_TRY(kiln__ops_kernel(op, ctx, KILN__SORT_SRC, x->dtype, "tk_rows_local", &kr));
  uint64_t kp = kiln__ops_pow2(k);
  size_t L = kiln__launch_pow2_local(ctx, kr);
  if (L > 256)
    L = 256;
  if (kiln__sort_radix_local)
    L = kiln__sort_radix_local;
  kiln__args a = kiln__args_begin(op, kr);
  args_rows(&a, x, g, desc);
  kiln__args_u64(&a, k);
  args_out(&a, ostart, olen, vout, iout);
  args_local_pairs(&a, kp, kiln__sort_key64(x->dtype));
  kiln__args_u32(&a, key_bits(x->dtype));
  return kiln__args_enqueue_1d(&a, ctx, (size_t)(groups_for(g->rows) * L), L);
}

/*
 * Values-only sort of one row of integers (equal values are indistinguishable, so stability
 * needs no positions): the keys alone through the radix passes, then back to values.
 */
kiln_status
kiln__sort_keys_only(const char *op, kiln_context *ctx, const kiln_tensor *x, uint64_t n, int desc,
                     kiln_tensor **out)
{
  const kiln_dtype kdt = key_dtype(x->dtype);
  kiln_tensor *keys = NULL, *none = NULL;
  cl_kernel kk;
  uint32_t ipt;
  const int fused = os_fused(op, ctx, x, n, 1, 0, &ipt);
  kiln_status s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, x->dtype, "sort_keys", &kk);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, kdt, n, &keys);
  if (s == KILN_OK && fused) {
    const os_source from = {x, 3, desc};
    s = onesweep_passes(op, ctx, x->dtype, &keys, &none, n, key_bits(x->dtype), 1, n, ipt, NULL,
                        &from);
  } else if (s == KILN_OK) {
    const sort_geo g = {1, n, 1};
    s = launch_keys(op, ctx, kk, x, &g, desc, keys, NULL);
    if (s == KILN_OK)
      s = radix_passes(op, ctx, x->dtype, &keys, &none, n, key_bits(x->dtype), 1, n, NULL);
  }
  if (s != KILN_OK) {
    kiln_tensor_release(keys);
    keys = NULL;
  }
  *out = keys;
  return s;
}

static kiln_status
keys_only(const char *op, kiln_context *ctx, const kiln_tensor *x, uint64_t n, int desc,
          kiln_tensor *vout)
{
  kiln_tensor *keys = NULL;
  cl_kernel kv;
  kiln_status s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, x->dtype, "keys_values", &kv);
  if (s == KILN_OK)
    s = kiln__sort_keys_only(op, ctx, x, n, desc, &keys);
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, kv);
    kiln__args_tensor(&a, keys);
    kiln__args_u64(&a, n);
    kiln__args_u32(&a, (uint32_t) !!desc);
    kiln__args_tensor(&a, vout);
    s = kiln__args_launch_1d(&a, ctx, n, 0);
  }
  kiln_tensor_release(keys);
  return s;
}

/*
 * rows_serial over rows x len contiguous (key, payload) pairs in keys/vals: one work-item per
 * row sorts it in the core's cache (CPUs with many long rows). special: NULL, or the f32 flag
 * without which the payloads stay unmoved (ctx->lock held).
 */
static kiln_status
launch_rows_serial(const char *op, kiln_context *ctx, kiln_dtype dt, kiln_tensor *keys,
                   kiln_tensor *vals, uint64_t rows, uint64_t len, cl_mem special)
{
  const kiln_dtype kdt = key_dtype(dt);
  const uint64_t n = rows * len;
  kiln_tensor *tk = NULL, *tv = NULL;
  cl_kernel kr;
  kiln_status s = kiln__ops_kernel(op, ctx, KILN__SORT_RADIX_SRC, kdt, "rows_serial", &kr);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, kdt, n, &tk);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, KILN_I32, n, &tv);
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, kr);
    kiln__args_tensor(&a, keys);
    kiln__args_tensor(&a, vals);
    kiln__args_mem(&a, tk->mem);
    kiln__args_mem(&a, tv->mem);
    kiln__args_u64(&a, rows);
    kiln__args_u64(&a, len);
    kiln__args_u32(&a, key_bits(dt));
    kiln__args_mem(&a, special);
    /* One work-item per group: PoCL runs each group's rows on one thread. */
    s = kiln__args_launch_1d(&a, ctx, rows, 1);
  }
  kiln_tensor_release(tk);
  kiln_tensor_release(tv);
  return s;
}

/*
 * Values-only sort of f32, f16 or bf16, rows rows of len contiguous elements: the payloads are
 * the values' own bits (32 bits hold them), so the stable passes carry -0.0 and NaN bits in
 * input order and the result needs no gather through positions. One row takes the global
 * passes; many (CPUs with many long rows) rows_serial, where f32 without -0.0 and NaNs moves
 * the keys alone.
 */
static kiln_status
raw_payloads(const char *op, kiln_context *ctx, const kiln_tensor *x, uint64_t rows, uint64_t len,
             int desc, kiln_tensor *vout)
{
  const uint64_t n = rows * len;
  kiln_tensor *keys = NULL, *vals = NULL, *special = NULL;
  cl_kernel kk, kv;
  kiln_status s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, x->dtype, "sort_keys_raw", &kk);
  if (s == KILN_OK)
    s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, x->dtype, "raw_values", &kv);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, KILN_I32, n, &keys);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, KILN_I32, n, &vals);
  /* f32: a flag for -0.0 and NaNs, without which the keys alone give the values back. */
  if (s == KILN_OK && x->dtype == KILN_F32)
    s = kiln__ops_scratch(op, ctx, KILN_I32, 1, &special);
  if (s == KILN_OK && special)
    s = fill_u32(op, ctx, special->mem, 0, 1);
  uint32_t ipt;
  if (s == KILN_OK && rows == 1 && special && os_fused(op, ctx, x, n, 1, 0, &ipt)) {
    /* The histogram pass flags -0.0 and NaNs and the first pass makes the keys. */
    const os_source from = {x, 2, desc};
    s = onesweep_passes(op, ctx, x->dtype, &keys, &vals, n, key_bits(x->dtype), 1, n, ipt,
                        special->mem, &from);
  } else if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, kk);
    kiln__args_tensor(&a, x);
    kiln__args_u64(&a, n);
    kiln__args_u32(&a, (uint32_t) !!desc);
    kiln__args_tensor(&a, keys);
    kiln__args_tensor(&a, vals);
    kiln__args_mem(&a, special ? special->mem : NULL);
    s = kiln__args_launch_1d(&a, ctx, n, 0);
    if (s == KILN_OK && rows > 1)
      s = launch_rows_serial(op, ctx, x->dtype, keys, vals, rows, len,
                             special ? special->mem : NULL);
    else if (s == KILN_OK)
      s = radix_passes(op, ctx, x->dtype, &keys, &vals, n, key_bits(x->dtype), 1, n,
                       special ? special->mem : NULL);
  }
  if (s == KILN_OK) {
    kiln__args a = kiln__args_begin(op, kv);
    kiln__args_tensor(&a, vals);
    kiln__args_u64(&a, n);
    kiln__args_tensor(&a, vout);
    kiln__args_tensor(&a, keys);
    kiln__args_u32(&a, (uint32_t) !!desc);
    kiln__args_mem(&a, special ? special->mem : NULL);
    s = kiln__args_launch_1d(&a, ctx, n, 0);
  }
  kiln_tensor_release(keys);
  kiln_tensor_release(vals);
  kiln_tensor_release(special);
  return s;
}

/*
 * CPUs with many long rows: the keys of every row, then one work-item per row sorts its row
 * serially (rows_serial: all passes of a row in the core's cache, no row passes). *keys and
 * *vals as kiln__sort_pairs_radix's (ctx->lock held).
 */
static kiln_status
rows_serial(const char *op, kiln_context *ctx, const kiln_tensor *x, const sort_geo *g, int desc,
            kiln_tensor **keys, kiln_tensor **vals)
{
  const uint64_t n = g->rows * g->len;
  *keys = *vals = NULL;
  cl_kernel kk;
  kiln_status s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, x->dtype, "sort_keys", &kk);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, key_dtype(x->dtype), n, keys);
  if (s == KILN_OK)
    s = kiln__ops_scratch(op, ctx, KILN_I32, n, vals);
  if (s == KILN_OK)
    s = launch_keys(op, ctx, kk, x, g, desc, *keys, *vals);
  if (s == KILN_OK)
    s = launch_rows_serial(op, ctx, x->dtype, *keys, *vals, g->rows, g->len, NULL);
  if (s != KILN_OK)
    drop_pairs(keys, vals);
  return s;
}

/*
 * Sorts the rows of x and places positions [ostart, ostart + olen) of each sorted row into
 * vout / iout (either NULL), rows of olen elements in x's layout (ctx->lock held).
 */
static kiln_status
sort_core(const char *op, kiln_context *ctx, const kiln_tensor *x, const sort_geo *g, int desc,
          kiln_sort_path path, uint64_t ostart, uint64_t olen, kiln_tensor *vout, kiln_tensor *iout)
{
  const uint64_t n = g->rows * g->len;
  if (!n || !olen)
    return KILN_OK;
  uint64_t lmax = kiln_sort_local_max(ctx, x->dtype);
  /* Only the first k of each row are wanted (topk, kthvalue): select them when rows are too
   * long for the work-group sort and k is short enough to be one. */
  const uint64_t nk = ostart + olen;
  uint64_t cu = ctx->info.compute_units ? ctx->info.compute_units : 1;
  /* CPUs with many long rows: rows_serial sorts each row in cache, faster than selecting. */
  /* (The radix local-size hook asks for the GPU-shaped passes: tests of the row passes.) */
  const int cpu_rows =
      !ctx->info.is_gpu && !kiln__sort_radix_local && g->rows >= 4 * cu && g->len > 1;
  /* Rows enough to fill a GPU: one work-group per row selects (hook: force_select 2). */
  const int rows_local = kiln__sort_force_select == 2 ||
                         (!kiln__sort_force_select && ctx->info.is_gpu && g->rows >= cu);
  if (path == KILN_SORT_AUTO && nk <= lmax &&
      (kiln__sort_force_select || (g->len > lmax && nk * 8 <= g->len && !cpu_rows)))
    return rows_local ? select_rows_local(op, ctx, x, g, desc, nk, ostart, olen, vout, iout)
                      : select_core(op, ctx, x, g, desc, nk, ostart, olen, vout, iout);
  if (path == KILN_SORT_AUTO)
    path = g->len <= lmax && g->len > 1 && !cpu_rows ? KILN_SORT_LOCAL : KILN_SORT_RADIX;
  if (path == KILN_SORT_LOCAL) {
    cl_kernel k;
    KILN_TRY(kiln__ops_kernel(op, ctx, KILN__SORT_SRC, x->dtype, "sort_local", &k));
    uint64_t np = kiln__ops_pow2(g->len);
    size_t local = kiln__launch_pow2_local(ctx, k);
    while (local > 1 && local > np / 2)
      local /= 2;
    kiln__args a = kiln__args_begin(op, k);
    args_rows(&a, x, g, desc);
    args_out(&a, ostart, olen, vout, iout);
    args_local_pairs(&a, np, kiln__sort_key64(x->dtype));
    return kiln__args_enqueue_1d(&a, ctx, (size_t)(groups_for(g->rows) * local), local);
  }
  kiln_tensor *keys = NULL, *vals = NULL;
  /* Whole rows of values: no positions to carry (hook: force_pairs); one row, or on a CPU
   * many contiguous ones (rows_serial with the values' own bits as payloads). */
  const int values = !iout && ostart == 0 && olen == g->len && !kiln__sort_force_pairs;
  const int raw = (KILN__DT_HALVES | KILN__DT_BIT(KILN_F32)) & KILN__DT_BIT(x->dtype);
  if (values && g->rows == 1 && (KILN__DT_INTS | KILN__DT_BIT(KILN_BOOL)) & KILN__DT_BIT(x->dtype))
    return keys_only(op, ctx, x, g->len, desc, vout);
  if (values && raw && (g->rows == 1 || (cpu_rows && g->inner == 1)))
    return raw_payloads(op, ctx, x, g->rows, g->len, desc, vout);
  if (cpu_rows)
    KILN_TRY(rows_serial(op, ctx, x, g, desc, &keys, &vals));
  else
    KILN_TRY(kiln__sort_pairs_radix(op, ctx, x, g->rows, g->len, g->inner, desc, &keys, &vals));
  kiln_status s = launch_gather(op, ctx, x, g, vals, g->len, ostart, olen, vout, iout);
  kiln_tensor_release(keys);
  kiln_tensor_release(vals);
  return s;
}

kiln_status
kiln__sort_values_flat(const char *op, kiln_context *ctx, const kiln_tensor *x, kiln_tensor *out)
{
  sort_geo g = {1, x->numel, 1};
  return sort_core(op, ctx, x, &g, 0, KILN_SORT_AUTO, 0, x->numel, out, NULL);
}

/* ---------------------------------------------------------------- outputs */

/* Checks and starts the wanted ones (outs[i] non-NULL) of n output targets (values, indices)
 * of the given dtypes and shapes. Call without ctx->lock. */
static kiln_status
targets_begin(const char *op, kiln_context *ctx, kiln_tensor **const *outs,
              const kiln_dtype *dtypes, const kiln__shape *const *shapes, const kiln_tensor *x,
              size_t n, kiln__out_target *t)
{
  static const char *const names[2] = {"values", "indices"};
  KILN_TRY(kiln__ops_outs_check(op, ctx, outs, names, n));
  return kiln__ops_outs_begin(op, ctx, dtypes, shapes, outs, &x, 1, n, 0, t);
}

/*
 * The common body of sort, topk and kthvalue: sorts x along axis and writes positions
 * [ostart, ostart + olen) of each sorted row; the results have x's shape with axis of length
 * olen, or without axis when drop_axis.
 */
static kiln_status
select_run(const char *op, kiln_context *ctx, const kiln_tensor *x, int64_t axis, int desc,
           kiln_sort_path path, uint64_t ostart, uint64_t olen, int drop_axis, kiln_tensor **values,
           kiln_tensor **indices)
{
  size_t ax;
  sort_geo g;
  KILN_TRY(geometry(op, x, axis, &ax, &g));
  kiln__shape shape = x->shape;
  if (shape.ndim) {
    if (drop_axis) {
      for (size_t i = ax; i + 1 < shape.ndim; i++)
        shape.dims[i] = shape.dims[i + 1];
      shape.ndim--;
    } else {
      shape.dims[ax] = (int64_t)olen;
    }
  }
  KILN_RETURN_IF(path == KILN_SORT_LOCAL && g.len > kiln_sort_local_max(ctx, x->dtype),
                 KILN_ERR_INVALID_ARGUMENT, op,
                 "rows of %llu elements are longer than the local sort holds (%llu)",
                 (unsigned long long)g.len, (unsigned long long)kiln_sort_local_max(ctx, x->dtype));
  kiln_tensor **outs[2] = {values, indices};
  const kiln_dtype dts[2] = {x->dtype, KILN_I64};
  const kiln__shape *shapes[2] = {&shape, &shape};
  kiln__out_target t[2];
  KILN_TRY(targets_begin(op, ctx, outs, dts, shapes, x, 2, t));
  kiln__ctx_lock(ctx);
  kiln_status s = sort_core(op, ctx, x, &g, desc, path, ostart, olen, values ? t[0].dst : NULL,
                            indices ? t[1].dst : NULL);
  s = kiln__ops_outs_finish(op, ctx, outs, 2, t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---------------------------------------------------------------- public */

/* The checks every public call of this file starts with. */
static kiln_status
check_call(const char *op, kiln_context *ctx, const kiln_tensor *x, kiln_tensor **values,
           kiln_tensor **indices)
{
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_TRY(kiln__sort_check_x(op, ctx, x, "x"));
  KILN_RETURN_IF(!values && !indices, KILN_ERR_INVALID_ARGUMENT, op,
                 "values and indices are both NULL");
  return KILN_OK;
}

/* x's length along axis into *len; a 0-D x is one element long. */
static kiln_status
axis_len(const char *op, const kiln_tensor *x, int64_t axis, uint64_t *len)
{
  *len = 1;
  if (x->shape.ndim) {
    size_t ax;
    KILN_TRY(kiln__ops_axis(op, axis, x->shape.ndim, &ax));
    *len = (uint64_t)x->shape.dims[ax];
  }
  return KILN_OK;
}

kiln_status
kiln_sort(kiln_context *ctx, const kiln_tensor *x, int64_t axis, const kiln_sort_options *opts,
          kiln_tensor **values, kiln_tensor **indices)
{
  const char *op = "kiln_sort";
  KILN_TRY(check_call(op, ctx, x, values, indices));
  kiln_sort_options o = {0};
  if (opts)
    o = *opts;
  KILN_RETURN_IF((unsigned)o.path > KILN_SORT_RADIX, KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown path %d (auto, local or radix)", (int)o.path);
  uint64_t len;
  KILN_TRY(axis_len(op, x, axis, &len));
  return select_run(op, ctx, x, axis, o.descending, o.path, 0, len, 0, values, indices);
}

kiln_status
kiln_argsort(kiln_context *ctx, const kiln_tensor *x, int64_t axis, const kiln_sort_options *opts,
             kiln_tensor **indices)
{
  const char *op = "kiln_argsort";
  KILN_TRY(kiln__ctx_check(op, ctx));
  KILN_RETURN_IF(!indices, KILN_ERR_INVALID_ARGUMENT, op, "indices is NULL");
  return kiln_sort(ctx, x, axis, opts, NULL, indices);
}

kiln_status
kiln_topk(kiln_context *ctx, const kiln_tensor *x, uint64_t k, int64_t axis, int largest,
          int sorted, kiln_tensor **values, kiln_tensor **indices)
{
  const char *op = "kiln_topk";
  (void)sorted; /* the sorted order is always given */
  KILN_TRY(check_call(op, ctx, x, values, indices));
  uint64_t len;
  KILN_TRY(axis_len(op, x, axis, &len));
  KILN_RETURN_IF(k > len, KILN_ERR_INVALID_ARGUMENT, op, "k = %llu is above the axis length %llu",
                 (unsigned long long)k, (unsigned long long)len);
  return select_run(op, ctx, x, axis, largest, KILN_SORT_AUTO, 0, k, 0, values, indices);
}

kiln_status
kiln_kthvalue(kiln_context *ctx, const kiln_tensor *x, uint64_t k, int64_t axis, int keepdim,
              kiln_tensor **values, kiln_tensor **indices)
{
  const char *op = "kiln_kthvalue";
  KILN_TRY(check_call(op, ctx, x, values, indices));
  uint64_t len;
  KILN_TRY(axis_len(op, x, axis, &len));
  KILN_RETURN_IF(k == 0 || k > len, KILN_ERR_INVALID_ARGUMENT, op, "k = %llu is outside [1, %llu]",
                 (unsigned long long)k, (unsigned long long)len);
  return select_run(op, ctx, x, axis, 0, KILN_SORT_AUTO, k - 1, 1, !keepdim, values, indices);
}

kiln_status
kiln_sortrows(kiln_context *ctx, const kiln_tensor *x, const int64_t *cols, size_t ncols,
              const int *descending, kiln_tensor **values, kiln_tensor **indices)
{
  const char *op = "kiln_sortrows";
  KILN_TRY(check_call(op, ctx, x, values, indices));
  KILN_RETURN_IF(x->shape.ndim != 2, KILN_ERR_SHAPE, op, "x has %zu dimensions, expected 2",
                 x->shape.ndim);
  KILN_RETURN_IF(!cols && ncols, KILN_ERR_INVALID_ARGUMENT, op, "cols is NULL with ncols = %zu",
                 ncols);
  const uint64_t nrows = (uint64_t)x->shape.dims[0], nc = (uint64_t)x->shape.dims[1];
  for (size_t i = 0; cols && i < ncols; i++)
    KILN_RETURN_IF(cols[i] < 0 || (uint64_t)cols[i] >= nc, KILN_ERR_INVALID_ARGUMENT, op,
                   "cols[%zu] = %lld is outside [0, %llu)", i, (long long)cols[i],
                   (unsigned long long)nc);
  kiln__shape ishape = {.ndim = 1, .dims = {(int64_t)nrows}};
  kiln_tensor **outs[2] = {values, indices};
  const kiln_dtype dts[2] = {x->dtype, KILN_I64};
  const kiln__shape *shapes[2] = {&x->shape, &ishape};
  kiln__out_target t[2];
  KILN_TRY(targets_begin(op, ctx, outs, dts, shapes, x, 2, t));
  kiln__ctx_lock(ctx);
  kiln_status s = KILN_OK;
  kiln_tensor *keys = NULL, *vals = NULL;
  if (nrows) {
    s = kiln__sort_rows_radix(op, ctx, x, nrows, nc, cols, cols ? ncols : 0, descending, &keys,
                              &vals);
    cl_kernel k;
    if (s == KILN_OK)
      s = kiln__ops_kernel(op, ctx, KILN__SORT_SRC, x->dtype, "rows_gather", &k);
    if (s == KILN_OK) {
      /* Zero columns: the indices alone (one item per row). */
      kiln__args a = kiln__args_begin(op, k);
      kiln__args_tensor(&a, x);
      kiln__args_u64(&a, nrows);
      kiln__args_u64(&a, nc ? nc : 1);
      kiln__args_tensor(&a, vals);
      kiln__args_tensor(&a, values ? t[0].dst : NULL);
      kiln__args_tensor(&a, indices ? t[1].dst : NULL);
      kiln__args_u32(&a, (values && nc ? 1u : 0u) | (indices ? 2u : 0u));
      s = kiln__args_launch_1d(&a, ctx, nrows * (nc ? nc : 1), 0);
    }
  }
  kiln_tensor_release(keys);
  kiln_tensor_release(vals);
  s = kiln__ops_outs_finish(op, ctx, outs, 2, t, s);
  kiln__ctx_unlock(ctx);
  return s;
}

/* ---------------------------------------------------------------- family */

static const struct kiln__source sort_sources[] = {
    {KILN__SORT_SRC, KILN__SORT_DTYPES},
    {KILN__SORT_RADIX_SRC, KILN__DT_BIT(KILN_I32) | KILN__DT_BIT(KILN_I64)},
    {KILN__SORT_OS_SRC, KILN__DT_BIT(KILN_I32) | KILN__DT_BIT(KILN_I64) | KILN__DT_BIT(KILN_F32) |
                            KILN__DT_BIT(KILN_F64)},
    {NULL, 0}};

const struct kiln__family kiln__sort_family = {
    .name = "sort", .sources = sort_sources, .build_options = sort_build_options};
