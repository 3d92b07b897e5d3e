#include "ops/launch_params.h"

#include "cl_kernels/reduce_contract.clh"
#include "core/dtype_traits.h"
#include "core/error.h"
#include "kiln/reduce.h"
#include "ops/tuned.h"
#include "runtime/tuner.h"

#include <stdlib.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <sys/resource.h>
#endif

uint32_t
kiln__default_cols_per_item(const kiln_device_info *info)
{
  /* Measured: four columns per item in 16-row tiles on an H200; 16 on PoCL (docs/reductions.md). */
  return info->is_gpu ? 4 : 16;
}

uint32_t
kiln__default_lane_order(const kiln_device_info *info)
{
  return info->is_gpu ? 2 : 1;
}

void
kiln__launch_params_default(const kiln_context *ctx, enum kiln__launch_family fam,
                            kiln__launch_params *p)
{
  const kiln_device_info *info = &ctx->info;
  if (info->is_gpu) {
    /* GPUs: many groups in flight, coalesced strided loops; a split pays off early. */
    p->wg_size = 256;
    p->items_per_thread = fam == KILN__LAUNCH_SCAN ? 8 : 4;
    p->two_pass_min = fam == KILN__LAUNCH_SCAN ? 16384 : 8192;
    p->groups_per_cu = 8;
    /* Measured on an H200 (docs/performance.md): aligned 4-vectors per lane, four to a
     * block, read sums at 2^26 at 1.9x the speed of 16-wide vload16 lanes (which were
     * 1.45x faster than scalars); four columns per item in 16-row tiles 1.6x faster than
     * one. */
    p->blocked = kiln__default_lane_order(info);
    p->cols_per_item = kiln__default_cols_per_item(info);
  } else {
    /*
     * CPU devices (PoCL): a work-group runs on one core, so a split only needs a few
     * groups per core, and a line too short to keep two cores busy for a while is not
     * worth a second pass. Measured with bench/bench_reduce (docs/performance.md).
     */
    p->wg_size = 256;
    p->items_per_thread = fam == KILN__LAUNCH_SCAN ? 1024 : 64;
    p->two_pass_min = 32768;
    p->groups_per_cu = 4;
    p->blocked = kiln__default_lane_order(info);
    p->cols_per_item = kiln__default_cols_per_item(info);
  }
  /* Measured on an H200 (docs/reductions.md): one pass reads and writes each element once,
   * where the chunked tiles read it three times and write it twice. */
  p->single_pass = fam == KILN__LAUNCH_SCAN && info->is_gpu;
  if (p->wg_size > info->max_work_group_size && info->max_work_group_size > 0)
    p->wg_size = (uint32_t)info->max_work_group_size;
}

void
kiln__launch_params_columns(const kiln_context *ctx, kiln__launch_params *p)
{
  /*
   * Measured on an H200 (`kiln tune --family reduce --layout col`, docs/tuning.md): every
   * tuned column key used 32- or 64-item groups, 1-8 groups per compute unit and a split
   * from 1024 rows on. A [4096, 4096] axis-0 sum is not split at the row defaults (4096 <
   * two_pass_min), leaving 1024 work-items for 132 compute units (22% of copy), and
   * where it is split they make so many chunks that partials and their second pass cost
   * more than the split saves.
   */
  p->two_pass_min = 1024;
  if (!ctx->info.is_gpu) {
    /*
     * Measured on PoCL (2 cores; `kiln tune --family reduce`, docs/tuning.md): an item
     * that reads 1 KB of each row (256 f32 columns as 16-vectors, NAME_colsv) lets the
     * prefetchers stream, where 64 bytes per row at a stride of 16-64 KB left the tuned
     * sum over axis 0 of 2^22 and 2^24 floats at 1.9 and 2.2 GB/s; 4 KB (1024 columns) in
     * groups of one item streams further: reduce.sum_cols over [1024, n / 1024], medians of
     * seven alternating rounds (session 25, docs/reductions.md), f32 2^22 / 2^24 0.592 /
     * 2.68 ms with 256 columns in 8-item groups against 0.462 / 2.15, f64 1.02 / 5.01
     * against 0.88 / 4.64. One-item groups let PoCL spread the few items over the cores.
     */
    p->wg_size = 1;
    p->cols_per_item = 1024;
    return;
  }
  p->wg_size = p->wg_size < 64 ? p->wg_size : 64;
  p->groups_per_cu = 2;
}

kiln_status
kiln__launch_params_check(const char *op, const kiln__launch_params *p)
{
  KILN_RETURN_IF(!p, KILN_ERR_INVALID_ARGUMENT, op, "launch parameters are NULL");
  KILN_RETURN_IF(p->wg_size < 1, KILN_ERR_INVALID_ARGUMENT, op, "work-group size is 0");
  KILN_RETURN_IF(p->items_per_thread < 1, KILN_ERR_INVALID_ARGUMENT, op, "items per thread is 0");
  KILN_RETURN_IF(p->two_pass_min < 1, KILN_ERR_INVALID_ARGUMENT, op, "two-pass threshold is 0");
  KILN_RETURN_IF(p->groups_per_cu < 1, KILN_ERR_INVALID_ARGUMENT, op, "groups per CU is 0");
  KILN_RETURN_IF(p->blocked > 2, KILN_ERR_INVALID_ARGUMENT, op, "blocked must be 0, 1 or 2");
  KILN_RETURN_IF(p->single_pass > 3, KILN_ERR_INVALID_ARGUMENT, op,
                 "single_pass must be 0, 1, 2 or 3 (got %u)", p->single_pass);
  KILN_RETURN_IF(p->cols_per_item < 1 || p->cols_per_item > KILN__COLS_MAX,
                 KILN_ERR_INVALID_ARGUMENT, op, "columns per item must be 1 to %d (got %u)",
                 KILN__COLS_MAX, p->cols_per_item);
  return KILN_OK;
}

/*
 * Private bytes one work-item of k may hold on a CPU device's worker stack, and the
 * most a work-group's items may hold together. PoCL runs a work-group on one worker
 * thread with every item's private arrays on that thread's stack, and its
 * CL_KERNEL_PRIVATE_MEM_SIZE says 1024 bytes for every kiln kernel (PoCL 3.1 here), so
 * the bound comes from what the column kernels keep per item: NAME_cols (reduce.cl) a
 * 16-row tile of KILN_COLS elements and KILN_COLS states, NAME_lines (scan.cl) a block of
 * rows and KILN_COLS states (counted as the tile), NAME_colsv KILN_COLS states (whole
 * vectors), a state being at most
 * 32 bytes (STATE_BYTES of lib/ops). Other kernels hold a few scalars (0 here).
 *
 * Measured on PoCL with 8 MiB stacks (ulimit -s 8192), columns of a [300, 700] f64
 * tensor: prod_cols, var_cols, argmax_cols and lse_cols at KILN_COLS=64 (the tile path's
 * most; 10 KiB each by this bound) ran in groups of 512 and crashed (SIGSEGV) in groups
 * of 1024; sum_colsv at KILN_COLS=256 (8 KiB) ran at 1024 and crashed at 2048, at 64
 * ran at 4096; the scan family's cumsum..logcumsumexp _lines at 64 ran at 4096, and so
 * did the elementwise kernels at 8 vectors of 8 f64 per item (no KILN_COLS arrays). The
 * worker stacks follow RLIMIT_STACK (ulimit -s 4096: prod_cols at 64 crashed at 1024, ran
 * at 256; 16384: ran at 1024), and are glibc's 2 MiB where it is unlimited (prod_cols at
 * 64 crashed at 256). A quarter of the stack leaves room for the bound's error and the
 * rest of the thread's frames.
 */
static uint64_t
private_bytes_per_item(kiln_context *ctx, cl_kernel k, uint64_t *budget)
{
  uint64_t stack = 8u << 20;
#if defined(__unix__) || defined(__APPLE__)
  struct rlimit rl;
  if (getrlimit(RLIMIT_STACK, &rl) == 0)
    stack = rl.rlim_cur == RLIM_INFINITY ? 2u << 20 : (uint64_t)rl.rlim_cur;
#endif
  *budget = stack / 4;
  char name[128] = "", opts[512] = "";
  cl_program prog = NULL;
  if (clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL) != CL_SUCCESS ||
      clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof prog, &prog, NULL) != CL_SUCCESS ||
      clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_OPTIONS, sizeof opts, opts, NULL) !=
          CL_SUCCESS)
    return 0;
  size_t n = strlen(name);
  /* The scans' NAME_lines holds LN_ROWS rows of 64 bytes per column (scan.cl): within a
   * 16-row tile of the widest element. */
  int tile = (n > 5 && strcmp(name + n - 5, "_cols") == 0) ||
             (n > 6 && strcmp(name + n - 6, "_lines") == 0);
  int states = n > 6 && strcmp(name + n - 6, "_colsv") == 0;
  const char *c = strstr(opts, "-DKILN_COLS=");
  if (!(tile || states) || !c)
    return 0;
  uint64_t cols = strtoull(c + strlen("-DKILN_COLS="), NULL, 10), elem = 8, state = RED_STATE_BYTES;
  /* The program's options start with its dtype's (kiln__dtype_options). */
  for (int d = 0; d < KILN_DTYPE_COUNT; d++) {
    char dt[96];
    kiln__dtype_options((kiln_dtype)d, dt, sizeof dt);
    size_t l = strlen(dt);
    if (strncmp(opts, dt, l) == 0 && (opts[l] == ' ' || opts[l] == 0)) {
      /* Tiles hold the compute type (f32 for f16 and bf16); complex states are larger. */
      elem = kiln__dtype_is_half((kiln_dtype)d) ? 4 : kiln_dtype_size((kiln_dtype)d);
      state = kiln__dtype_is_complex((kiln_dtype)d) ? RED_STATE_BYTES_COMPLEX : RED_STATE_BYTES;
    }
  }
  return cols * ((tile ? 16 * elem : 0) + state);
}

kiln_status
kiln__launch_local_size(const char *op, kiln_context *ctx, cl_kernel k, uint32_t want,
                        size_t local_bytes_per_item, size_t *out)
{
  size_t kmax = 0;
  cl_ulong kmem = 0;
  cl_int err =
      clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax, NULL);
  if (err != CL_SUCCESS)
    return kiln__fail_cl(op, err, "clGetKernelWorkGroupInfo(CL_KERNEL_WORK_GROUP_SIZE)");
  err =
      clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof kmem, &kmem, NULL);
  if (err != CL_SUCCESS)
    return kiln__fail_cl(op, err, "clGetKernelWorkGroupInfo(CL_KERNEL_LOCAL_MEM_SIZE)");
  size_t wg = want;
  if (ctx->info.max_work_group_size && wg > ctx->info.max_work_group_size)
    wg = ctx->info.max_work_group_size;
  if (kmax && wg > kmax)
    wg = kmax;
  /* GPUs keep private arrays in registers and per-item scratch, not on one thread's stack. */
  if (!ctx->info.is_gpu) {
    uint64_t budget, per_item = private_bytes_per_item(ctx, k, &budget);
    while (wg > 1 && (uint64_t)wg * per_item > budget)
      wg /= 2;
  }
  if (local_bytes_per_item) {
    uint64_t avail = ctx->info.local_mem_bytes > kmem ? ctx->info.local_mem_bytes - kmem : 0;
    while (wg > 1 && (uint64_t)wg * local_bytes_per_item > avail)
      wg /= 2;
    KILN_RETURN_IF((uint64_t)wg * local_bytes_per_item > avail, KILN_ERR_UNSUPPORTED, op,
                   "the device's %llu bytes of local memory are too few",
                   (unsigned long long)ctx->info.local_mem_bytes);
  }
  *out = wg ? wg : 1;
  return KILN_OK;
}

uint64_t
kiln__launch_chunks(const kiln__launch_params *p, uint64_t lines, uint64_t len, uint64_t min_chunk,
                    uint64_t target_units, uint64_t *chunk_len)
{
  uint64_t c = 1;
  if (len >= p->two_pass_min && len > 1 && lines > 0) {
    if (min_chunk < 1)
      min_chunk = 1;
    uint64_t want = (target_units + lines - 1) / lines;
    uint64_t most = (len + min_chunk - 1) / min_chunk;
    c = want < most ? want : most;
    if (c < 1)
      c = 1;
  }
  uint64_t clen = len ? (len + c - 1) / c : 1;
  if (clen < 1)
    clen = 1;
  /* Rounding the length up can leave the last chunks empty: recount. */
  c = len ? (len + clen - 1) / clen : 1;
  *chunk_len = clen;
  return c;
}

size_t
kiln__launch_grid(uint64_t n, size_t local)
{
  /*
   * One work-item per unit: PoCL runs a group's items one after another, so a grid-stride
   * loop would make every item sweep the whole range (measured: 1/10 of the bandwidth).
   * The cap keeps the global size within 32-bit size_t devices; kernels loop beyond it.
   */
  uint64_t groups = (n + local - 1) / local;
  uint64_t cap = ((uint64_t)1 << 31) / local;
  if (groups > cap)
    groups = cap;
  if (groups < 1)
    groups = 1;
  return (size_t)(groups * local);
}

uint64_t
kiln__launch_target_groups(const kiln_context *ctx, const kiln__launch_params *p)
{
  uint64_t cu = ctx->info.compute_units ? ctx->info.compute_units : 1;
  return cu * p->groups_per_cu;
}

void
kiln__launch_params_for(kiln_context *ctx, enum kiln__launch_family fam, kiln_dtype dtype,
                        uint64_t outer, uint64_t len, uint64_t inner, kiln__launch_params *p)
{
  enum kiln__tune_layout layout = outer * inner <= 1 ? KILN__LAYOUT_FULL
                                  : inner == 1       ? KILN__LAYOUT_ROW
                                                     : KILN__LAYOUT_COL;
  kiln__tune_lookup(ctx, fam == KILN__LAUNCH_SCAN ? &kiln__scan_tune : &kiln__reduce_tune, dtype,
                    layout, outer * len * inner, p);
}

/* ---------------------------------------------------------------- tuner descriptions */

#define N_(a) (sizeof(a) / sizeof((a)[0]))
#define LP_FIELD(f) \
  .offset = offsetof(kiln__launch_params, f), .size = sizeof(((kiln__launch_params *)0)->f)
#define CANDIDATES(f, q) .full = f, .nfull = N_(f), .quick = q, .nquick = N_(q)

static const uint64_t wg_full[] = {32, 64, 128, 256, 512, 1024};
static const uint64_t wg_quick[] = {64, 256};
static const uint64_t red_ipt_full[] = {1, 4, 16, 64, 256};
static const uint64_t scan_ipt_full[] = {1, 4, 8, 16, 64, 256};
static const uint64_t ipt_quick[] = {4, 64};
static const uint64_t tpm_full[] = {1024, 8192, 32768, 262144, UINT64_MAX};
static const uint64_t tpm_quick[] = {8192, 262144};
static const uint64_t gpc_full[] = {1, 2, 4, 8, 16};
static const uint64_t gpc_quick[] = {2, 8};
static const uint64_t blocked_all[] = {0, 1, 2};
static const uint64_t cols_full[] = {1, 4, 16, 64};
/* 256: the vector-state column kernel of sum/mean/max/min (the tile path stops at 64). */
static const uint64_t red_cols_full[] = {1, 4, 16, 64, 256};
static const uint64_t cols_quick[] = {4, 16};
static const uint64_t single_pass_all[] = {0, 1, 2, 3};

/*
 * The kiln__launch_params fields, in the order the coordinate search visits
 * them. Each new cols_per_item value is a program build of its own, so it is
 * searched only where it matters: column layouts.
 */
static const struct kiln__tune_param red_params[] = {
    {.name = "wg_size",
     LP_FIELD(wg_size),
     .min = 1,
     .max = 65536,
     CANDIDATES(wg_full, wg_quick),
     .local_size = 1},
    {.name = "items_per_thread",
     LP_FIELD(items_per_thread),
     .min = 1,
     .max = 1u << 20,
     CANDIDATES(red_ipt_full, ipt_quick)},
    {.name = "two_pass_min",
     LP_FIELD(two_pass_min),
     .min = 1,
     .max = UINT64_MAX,
     CANDIDATES(tpm_full, tpm_quick)},
    {.name = "groups_per_cu",
     LP_FIELD(groups_per_cu),
     .min = 1,
     .max = 1024,
     CANDIDATES(gpc_full, gpc_quick)},
    {.name = "blocked",
     LP_FIELD(blocked),
     .min = 0,
     .max = 2,
     CANDIDATES(blocked_all, blocked_all)},
    {.name = "cols_per_item",
     LP_FIELD(cols_per_item),
     .min = 1,
     .max = KILN__COLS_MAX,
     CANDIDATES(red_cols_full, cols_quick),
     .layouts = 1u << KILN__LAYOUT_COL},
};

/* The scan kernels do not read blocked: it is no parameter of this family. */
static const struct kiln__tune_param scan_params[] = {
    {.name = "single_pass",
     LP_FIELD(single_pass),
     .min = 0,
     .max = 3,
     CANDIDATES(single_pass_all, single_pass_all),
     .layouts = 1u << KILN__LAYOUT_FULL | 1u << KILN__LAYOUT_ROW},
    {.name = "wg_size",
     LP_FIELD(wg_size),
     .min = 1,
     .max = 65536,
     CANDIDATES(wg_full, wg_quick),
     .local_size = 1},
    {.name = "items_per_thread",
     LP_FIELD(items_per_thread),
     .min = 1,
     .max = 1u << 20,
     CANDIDATES(scan_ipt_full, ipt_quick)},
    {.name = "two_pass_min",
     LP_FIELD(two_pass_min),
     .min = 1,
     .max = UINT64_MAX,
     CANDIDATES(tpm_full, tpm_quick)},
    {.name = "groups_per_cu",
     LP_FIELD(groups_per_cu),
     .min = 1,
     .max = 1024,
     CANDIDATES(gpc_full, gpc_quick)},
    /* The scan kernels have no vector-state path: at most the tile path's columns. */
    {.name = "cols_per_item",
     LP_FIELD(cols_per_item),
     .min = 1,
     .max = KILN__TILE_COLS_MAX,
     CANDIDATES(cols_full, cols_quick),
     .layouts = 1u << KILN__LAYOUT_COL},
};

static int
sum_dtype_ok(kiln_dtype d)
{
  return kiln_reduce_op_supports(KILN_REDUCE_SUM, d);
}

static int
cumsum_dtype_ok(kiln_dtype d)
{
  return kiln_scan_op_supports(KILN_SCAN_CUMSUM, d);
}

static void
red_defaults(const kiln_context *ctx, kiln_dtype dtype, int layout, int log2n, void *params)
{
  (void)log2n;
  (void)dtype;
  kiln__launch_params_default(ctx, KILN__LAUNCH_REDUCE, params);
  if (layout == KILN__LAYOUT_COL)
    kiln__launch_params_columns(ctx, params);
}

static void
scan_defaults(const kiln_context *ctx, kiln_dtype dtype, int layout, int log2n, void *params)
{
  kiln__launch_params *p = params;
  kiln__launch_params_default(ctx, KILN__LAUNCH_SCAN, p);
  if (!ctx->info.is_gpu) {
    /*
     * Column scans on CPU devices: 64 columns per work-item, a row's 256 bytes of f32 per
     * step. PoCL (2 cores), scan.cumsum_cols of [1024, n / 1024], fastest of three
     * alternating runs with `--tune scan:cols_per_item=16` and `=64`: f32 2^20 / 2^22 / 2^24
     * 0.271 / 0.956 / 12.1 ms with 16 against 0.072 / 0.946 / 5.04 with 64, f64 0.307 / 2.05
     * / 11.1 against 0.153 / 1.65 / 7.78; `kiln tune --family scan` had picked 64 for every
     * column key (docs/perf-data/pocl-2026-12-02-issue21). Fewer work-items: a line of fewer
     * than 64 columns per core leaves cores idle (the tuner can pick 16 or 4 there).
     */
    if (layout == KILN__LAYOUT_COL)
      p->cols_per_item = 64;
    return;
  }
  /*
   * Rows and whole tensors take the single pass (NAME_lookback) from 1024 elements on; its
   * groups are cut down to what a line needs (64 items for a row of 1024 f32), so wg_size
   * bounds the tile of long lines. items_per_thread and groups_per_cu serve the multi-pass
   * path (single_pass = 0), with what `kiln tune --family scan` chose for it on an H200
   * (docs/perf-data/h200-tune-scan.json: rows of 1024 in 32-item groups of 4 elements per
   * item). Column scans keep the generic defaults: the column reductions' narrow groups ran
   * cumsum over axis 0 of [1024, 65536] at 0.30x PyTorch against the generic 0.70x
   * (docs/perf-data/h200-2026-12-01-issue21).
   */
  if (layout == KILN__LAYOUT_ROW || layout == KILN__LAYOUT_FULL) {
    p->wg_size = 256;
    p->items_per_thread = 4;
    p->two_pass_min = 1024;
    p->groups_per_cu = layout == KILN__LAYOUT_ROW ? 16 : 8;
    /*
     * Large tensors take the tile prefixes computed beforehand (single_pass 3: x read twice,
     * no look-back). Measured on an H200 (bench/h200/scan5.sh, docs/reductions.md), cumsum
     * over a whole tensor: f32 look-back / tile prefixes 0.0492 / 0.0522 ms at 2^23, 0.0853
     * / 0.0810 at 2^24, 0.311 / 0.260 at 2^26; f64 0.0332 / 0.0328 at 2^21, 0.0575 / 0.0507
     * at 2^22, 0.794 / 0.532 at 2^26. 8-byte states (f64, complex, the integers' i64 sums)
     * make the look-back's tiles half as long and its status words twice as wide, so they
     * switch at a quarter of the elements. Rows of one tile scan the same either way.
     */
    int wide = kiln_dtype_size(dtype) >= 8 || !kiln__dtype_is_floating(dtype);
    if (log2n >= (wide ? 22 : 24))
      p->single_pass = 3;
  }
}

static kiln_status
red_run(struct kiln__tune_problem *pb, const void *params)
{
  return kiln__reduce_tuned(pb->ctx, KILN_REDUCE_SUM, pb->in[0], &pb->axis, 1, 0, NULL, params,
                            &pb->out);
}

static kiln_status
scan_run(struct kiln__tune_problem *pb, const void *params)
{
  return kiln__scan_tuned(pb->ctx, KILN_SCAN_CUMSUM, pb->in[0], pb->axis, NULL, params, &pb->out);
}

_Static_assert(sizeof(kiln__launch_params) <= KILN__TUNE_PARAMS_MAX, "parameters too large");

#define LAYOUTS_LINES (1u << KILN__LAYOUT_FULL | 1u << KILN__LAYOUT_ROW | 1u << KILN__LAYOUT_COL)

const struct kiln__tune_family kiln__reduce_tune = {
    .name = "reduce",
    .description = "reductions (rows, columns, two-pass), timed on sum",
    .source = "reduce",
    .kernel_prefix = "sum_",
    .local_bytes_per_item = 32,
    .params_size = sizeof(kiln__launch_params),
    .params = red_params,
    .nparams = N_(red_params),
    .layouts = LAYOUTS_LINES,
    .layout_names = "full row col",
    .ninputs = 1,
    .float_sum = 1,
    .dtype_ok = sum_dtype_ok,
    .defaults = red_defaults,
    .run = red_run,
    .bytes = kiln__tune_in_out_bytes,
};

const struct kiln__tune_family kiln__scan_tune = {
    .name = "scan",
    .description = "scans (lines, tiles, two-pass), timed on cumsum",
    .source = "scan",
    .kernel_prefix = "cumsum_",
    .local_bytes_per_item = 32,
    .params_size = sizeof(kiln__launch_params),
    .params = scan_params,
    .nparams = N_(scan_params),
    .layouts = LAYOUTS_LINES,
    .layout_names = "full row col",
    .ninputs = 1,
    .float_sum = 1,
    .dtype_ok = cumsum_dtype_ok,
    .defaults = scan_defaults,
    .run = scan_run,
    .bytes = kiln__tune_in_out_bytes,
};
