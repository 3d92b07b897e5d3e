/*
 * Launch parameters of the cooperative kernels (reductions and scans): the
 * knobs a workgroup autotuner turns, with per-device defaults in one place.
 *
 * Every kernel that takes these is correct for every value accepted by
 * kiln__launch_params_check(); the values only change speed (and, for float
 * sums, the rounding order within the documented error bound).
 */
#ifndef KILN_OPS_LAUNCH_PARAMS_H
#define KILN_OPS_LAUNCH_PARAMS_H

#include <stdint.h>

#include "runtime/runtime.h"

typedef struct kiln__launch_params {
  /* Work-group size of the cooperative kernels (any value >= 1; clamped at launch to what
   * the device, the kernel and local memory allow). Also the local size of the
   * one-item-per-line kernels. The scans take it as a bound: their single pass cuts groups
   * to what a line needs, their line kernel until every compute unit gets two groups. */
  uint32_t wg_size;
  /* Fewest elements one work-item folds (reduction) or scans (scan tile) per chunk before a
   * line is split further: larger values mean fewer, longer chunks. >= 1. */
  uint32_t items_per_thread;
  /* Reduced (or scanned) length from which one line is split across several work-groups
   * (two-pass: per-chunk partials, then a pass over the partials). Shorter lines are done
   * in one pass. >= 1; UINT64_MAX never splits. */
  uint64_t two_pass_min;
  /* Work-groups per compute unit that a split aims for (the partials' count). >= 1. */
  uint32_t groups_per_cu;
  /* Memory order of the work-items sharing a row: 0 interleaved (item k reads k, k + lanes,
   * ...: coalesced on GPUs), 1 blocked (each item one contiguous block: CPU devices run a
   * group's items one after another, so this reads memory in order), 2 interleaved
   * aligned 4-element vectors, four per 16-element block (coalesced 16-byte loads of f32,
   * several in flight: GPUs). */
  uint32_t blocked;
  /* Neighbouring columns (inner positions) one work-item of the column kernels handles, 1 to
   * KILN__COLS_MAX; above 1 it reads 16-row tiles so each column folds as one vector (at
   * most KILN__TILE_COLS_MAX); on CPU devices, multiples of 16 take vector states for sum,
   * mean, max and min (NAME_colsv: 1024, the CPU default, reads 4 KB of f32 per row). 4
   * suits GPUs (more spills registers). A program build option, so each value is its own
   * program. */
  uint32_t cols_per_item;
  /* Scans only (reductions ignore it): 1 scans contiguous lines of at least two_pass_min
   * elements in one pass (NAME_lookback: tiles chained by decoupled look-back, where the
   * device lets a waiting work-group rely on the ones already running), 2 likewise but
   * lines longer than a tile in chunks of items_per_thread elements per item (NAME_chain:
   * one look-back per chunk, the chunk's tiles after the first read twice), 3 with
   * NAME_lookback's tiles but their prefixes computed beforehand (NAME_tileagg folds every
   * tile, NAME_tilepre scans the folds: x read twice, no group waits on another, so any
   * device), 0 with the tile kernel and, for split lines, the totals and fixup passes.
   * 0 to 3. */
  uint32_t single_pass;
} kiln__launch_params;

#define KILN__COLS_MAX 1024
/* Most columns per item of the tile path (NAME_cols); reductions without vector states
 * (lib/ops/reduce.c) take min(cols_per_item, this). */
#define KILN__TILE_COLS_MAX 64

enum kiln__launch_family {
  KILN__LAUNCH_REDUCE,
  KILN__LAUNCH_SCAN,
};

/* Default columns per work-item of the reduce and scan kernels (compiled in as KILN_COLS). */
uint32_t kiln__default_cols_per_item(const kiln_device_info *info);

/* Default lane order (`blocked`) of the reduce rows kernel (compiled in as KILN_BLOCKED). */
uint32_t kiln__default_lane_order(const kiln_device_info *info);

/* Built-in defaults for ctx's device (kiln__launch_params_for adds the tuned values). */
void kiln__launch_params_default(const kiln_context *ctx, enum kiln__launch_family fam,
                                 kiln__launch_params *p);

/*
 * Turns reduce defaults p into the defaults of column layouts (inner > 1) on ctx's device:
 * on GPUs fewer, smaller groups; on CPUs 256 columns per item in 8-item groups; on both a
 * split from 1024 reduced rows on.
 */
void kiln__launch_params_columns(const kiln_context *ctx, kiln__launch_params *p);

/*
 * The parameters for a problem of dtype viewed as (outer, len, inner), len
 * the reduced or scanned length: the defaults with the autotuner's
 * overridden, stored or online-tuned values for its bucket (runtime/tuner.c).
 * Call it before taking ctx->lock: in mode ONLINE it may tune.
 */
void kiln__launch_params_for(kiln_context *ctx, enum kiln__launch_family fam, kiln_dtype dtype,
                             uint64_t outer, uint64_t len, uint64_t inner, kiln__launch_params *p);

/*
 * Test hook (lib/ops/reduce.c): nonzero makes the reduce rows kernels share rows between
 * lanes as on GPUs on every device, so CPU devices run that path too.
 */
extern int kiln__reduce_test_gpu_rows;

/* INVALID_ARGUMENT with a message naming op for a value outside the ranges above. */
kiln_status kiln__launch_params_check(const char *op, const kiln__launch_params *p);

/*
 * The local size to launch kernel k with: want, clamped to the device's and
 * the kernel's work-group limits, so that want * local_bytes_per_item fits
 * in local memory next to the kernel's own, and on non-GPU devices so that
 * the group's private column arrays (the KILN_COLS tiles and states of the
 * reduce and scan column kernels) take at most a quarter of a worker
 * thread's stack (ctx->lock held).
 */
kiln_status kiln__launch_local_size(const char *op, kiln_context *ctx, cl_kernel k, uint32_t want,
                                    size_t local_bytes_per_item, size_t *out);

/*
 * How many chunks to cut each of `lines` lines of length len into: 1 below
 * two_pass_min, else enough to give about target_units units of work in
 * total, with no chunk shorter than min_chunk. *chunk_len receives the
 * chunk length (every chunk but the last has exactly that many elements).
 */
uint64_t kiln__launch_chunks(const kiln__launch_params *p, uint64_t lines, uint64_t len,
                             uint64_t min_chunk, uint64_t target_units, uint64_t *chunk_len);

/* Global size for a kernel with one work-item per unit of n (grid-stride beyond 2^31 items). */
size_t kiln__launch_grid(uint64_t n, size_t local);

/* Work-groups the device should hold at once for a split: compute units x groups_per_cu. */
uint64_t kiln__launch_target_groups(const kiln_context *ctx, const kiln__launch_params *p);

/* The autotuner's descriptions of the reduce and scan families (runtime/tuner.h). */
struct kiln__tune_family;
extern const struct kiln__tune_family kiln__reduce_tune;
extern const struct kiln__tune_family kiln__scan_tune;

#endif
