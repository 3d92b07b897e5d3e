/*
 * Helpers shared by the op families: kernel lookup with dtype options,
 * argument lists, 1-D launches, axis and stride arithmetic, the device error
 * flag, the device pair sort, and the one place that decides how an output
 * overlapping an input is handled (kiln__ops_overlap, kiln__ops_out_begin;
 * docs/ops.md "Aliasing"). None of them is an op family of its own; each
 * family still owns its kernels.
 */
#ifndef KILN_OPS_COMMON_H
#define KILN_OPS_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "runtime/launch.h"
#include "runtime/runtime.h"

/*
 * Outputs of this many bytes and more are stored non-temporally on CPU devices (kiln_copy's
 * kernel, the CPU transpose): they leave the cache before a next op would read them, and a
 * plain store first reads its line (measured in lib/ops/elementwise.c, copy_nt_store).
 */
#define KILN__NT_STORE_MIN_BYTES ((uint64_t)1 << 24)

/*
 * Test hook of the random family: raw Philox4x32-10 words of nblocks blocks
 * whose counters are (ctr[0], ctr[1]) + j as a 64-bit number with ctr[2],
 * ctr[3] fixed, under key (key[0], key[1]), into host (4 * nblocks words).
 * Blocking; does not touch the context's stream state.
 */
kiln_status kiln__random_philox_blocks(kiln_context *ctx, const uint32_t key[2],
                                       const uint32_t ctr[4], uint64_t nblocks, uint32_t *host);

/*
 * The context's Philox stream for other families' kernels (dropout): the state a call starts
 * from, and advancing the counter past the nblocks blocks it read (modulo 2^64) once its
 * kernel is enqueued. ctx->lock held across both.
 */
void kiln__random_stream_locked(kiln_context *ctx, uint64_t *seed, uint64_t *counter);
void kiln__random_advance_locked(kiln_context *ctx, uint64_t nblocks);

/*
 * A program variant: the compile-time launch parameters of some sources (the
 * `variant` of kiln__program_options); 0 = the device default. Read by the
 * build-option callbacks of the reduce, scan, elementwise, nn and random families.
 */
typedef struct kiln__program_variant {
  uint32_t cols;       /* reduce, scan: KILN_COLS (columns per work-item) */
  uint32_t lane_order; /* reduce: KILN_BLOCKED + 1 (the rows kernel's lane order; 0 default) */
  uint32_t ew_items;   /* elementwise: KILN_EW_ITEMS (vectors per work-item of flat launches) */
  uint32_t ew_vec;     /* elementwise: KILN_EW_VEC (elements per vector access) */
  uint32_t nn_items;   /* nn: KILN_NN_ITEMS of nn_act.cl (elements per work-item) */
  uint32_t nn_erf;     /* nn: KILN_NN_ERF + 1 of nn_act.cl (0 default) */
  uint32_t nn_row_items; /* nn: KILN_NN_ROW_ITEMS + 1 of nn_rows.cl (0 default) */
  uint32_t nn_fast;      /* nn: KILN_NN_FAST + 1 of nn_act.cl (0 default) */
  uint32_t nn_vec;       /* nn: KILN_NN_VEC of nn_act.cl (0 default) */
  uint32_t nn_verbose;   /* nn: 1 adds -cl-nv-verbose on NVIDIA (KILN_DEBUG_NN=verbose=1) */
  uint32_t nn_maxreg;    /* nn: -cl-nv-maxrregcount on NVIDIA (0: none) */
  uint32_t nn_row_cpu;   /* nn: KILN_NN_ROW_CPU + 1 of nn_rows.cl (0 default) */
  uint32_t cast_lanes; /* elementwise (cast.cl): KILN_CAST_LANES (elements per cast step) */
  uint32_t rng_blocks; /* random: KILN_RNG_BLOCKS (block vectors per work-item of normals) */
  uint32_t rng_vec;    /* random: KILN_RNG_VEC (counter blocks per vector, as SIMD lanes) */
  uint32_t nt_store;   /* elementwise, cast.cl: 1 = KILN_NT_STORE (non-temporal vector stores) */
} kiln__program_variant;

/*
 * Kernel `name` of embedded source `source` built for dtype with the
 * options of kiln__program_options(), which the cache warm-up uses too
 * (ctx->lock held).
 */
kiln_status kiln__ops_kernel(const char *op, kiln_context *ctx, const char *source,
                             kiln_dtype dtype, const char *name, cl_kernel *k);

/* The same from one program variant (NULL: the device defaults, as kiln__ops_kernel). */
kiln_status kiln__ops_kernel_variant(const char *op, kiln_context *ctx, const char *source,
                                     kiln_dtype dtype, const kiln__program_variant *v,
                                     const char *name, cl_kernel *k);

/*
 * The dtype whose program runs kernels that only move dtype's elements
 * (typed MT in cl_kernels/common.cl): bf16 for f16 and i64 for c64, so that
 * equal-sized byte movers compile once; any other dtype itself.
 */
kiln_dtype kiln__ops_move_dtype(kiln_dtype dtype);

/* Normalises an axis in [-ndim, ndim) to [0, ndim); INVALID_ARGUMENT otherwise. */
kiln_status kiln__ops_axis(const char *op, int64_t axis, size_t ndim, size_t *out);

/* Row-major element strides of a contiguous shape. */
void kiln__ops_strides(const kiln__shape *s, int64_t strides[KILN_MAX_DIMS]);

/* Element offset of a tensor within its buffer (0 for NULL, as kiln__args_tensor passes). */
uint64_t kiln__ops_elem_offset(const kiln_tensor *t);

/*
 * A temporary device buffer of at least bytes (at least 1) from the context's
 * pool (ctx->lock held). Freeing it right after enqueueing the kernels that
 * use it is safe: the queue is in order, so a later user of the same pool
 * buffer runs after them.
 */
typedef struct kiln__ops_tmp {
  cl_mem mem;
  uint64_t cap;
} kiln__ops_tmp;
kiln_status kiln__ops_tmp_alloc(kiln_context *ctx, uint64_t bytes, kiln__ops_tmp *t);
void kiln__ops_tmp_free(kiln_context *ctx, kiln__ops_tmp *t);

/*
 * How the bytes of two tensors relate (docs/ops.md, "Aliasing"). Tensors
 * are compared as byte ranges of one underlying buffer: a wrapped
 * sub-buffer (clCreateSubBuffer) counts as its parent at the sub-buffer's
 * origin, so wraps of one cl_mem, of its sub-buffers and kiln's own views
 * all compare. Empty tensors overlap nothing.
 */
typedef enum kiln__overlap {
  KILN__OVERLAP_NONE,    /* no shared byte */
  KILN__OVERLAP_SAME,    /* exactly the same bytes: same buffer, first byte and size */
  KILN__OVERLAP_PARTIAL, /* some shared bytes, not the same range */
} kiln__overlap;

kiln__overlap kiln__ops_overlap(const kiln_tensor *a, const kiln_tensor *b);

/* Nonzero when two tensors share any byte. */
int kiln__ops_alias(const kiln_tensor *a, const kiln_tensor *b);

/*
 * INVALID_ARGUMENT when two of the n outputs of one op (NULL entries
 * skipped; checked handles) share a byte: which result would land there
 * is undefined. names (NULL: the messages give positions) name them.
 */
kiln_status kiln__ops_outputs_disjoint(const char *op, kiln_tensor *const *outs,
                                       const char *const *names, size_t n);

/*
 * The destination of an op: *out resolved by the output convention, or a
 * scratch tensor when *out shares bytes with one of the inputs, copied
 * over by kiln__ops_out_finish. With inplace, an output over exactly an
 * input's bytes (KILN__OVERLAP_SAME) is written directly: for kernels that
 * read each element before writing it and nothing else (elementwise maps).
 * Kernels write to dst.
 */
typedef struct kiln__out_target {
  kiln_tensor **out;
  kiln_tensor *dst;
  kiln_tensor *scratch;
  int made;
} kiln__out_target;

/* Takes ctx->lock itself (call without it). NULL entries of inputs are skipped. */
kiln_status kiln__ops_out_begin(const char *op, kiln_context *ctx, kiln_dtype dtype,
                                const kiln__shape *shape, kiln_tensor **out,
                                const kiln_tensor *const *inputs, size_t ninputs, int inplace,
                                kiln__out_target *t);

/*
 * Completes the target (status s OK: copies a scratch result over) or
 * unwinds it (releases what kiln made); returns the final status. ctx->lock held.
 */
kiln_status kiln__ops_out_finish(const char *op, kiln_context *ctx, kiln__out_target *t,
                                 kiln_status s);

/*
 * Ops with several outputs (outs[i] NULL: that output is not wanted; at most 4).
 * kiln__ops_outs_check: the given ones (*outs[i] non-NULL) are live handles of ctx and share no
 * byte (names name them in messages). kiln__ops_outs_begin: starts each wanted target with
 * kiln__ops_out_begin (only the first may be written over exactly an input, with
 * inplace_first), unwinding those begun on failure; call without ctx->lock.
 * kiln__ops_outs_finish: completes or unwinds every wanted target (ctx->lock held).
 */
kiln_status kiln__ops_outs_check(const char *op, kiln_context *ctx, kiln_tensor **const *outs,
                                 const char *const *names, size_t n);
kiln_status kiln__ops_outs_begin(const char *op, kiln_context *ctx, const kiln_dtype *dtypes,
                                 const kiln__shape *const *shapes, kiln_tensor **const *outs,
                                 const kiln_tensor *const *ins, size_t nins, size_t n,
                                 int inplace_first, kiln__out_target *t);
kiln_status kiln__ops_outs_finish(const char *op, kiln_context *ctx, kiln_tensor **const *outs,
                                  size_t n, kiln__out_target *t, kiln_status s);

/*
 * Enqueues a copy of src's bytes over dst's (same size; ctx->lock held). The
 * same bytes on both sides copy nothing; partly overlapping ones go through
 * a pooled temporary (clEnqueueCopyBuffer refuses overlapping ranges).
 */
kiln_status kiln__ops_copy(const char *op, kiln_context *ctx, const kiln_tensor *src,
                           kiln_tensor *dst);

/*
 * The device error flag: four uints [any bad, lowest bad position (32-bit,
 * saturated), 0, 0], written by kernels that validate data (indices) and read
 * back once per call. kiln__ops_flag_new makes and initialises one (ctx->lock
 * held); kiln__ops_flag_read releases the lock while it waits, then re-takes it.
 */
kiln_status kiln__ops_flag_new(const char *op, kiln_context *ctx, kiln_tensor **flag);
kiln_status kiln__ops_flag_read(const char *op, kiln_context *ctx, kiln_tensor *flag,
                                uint32_t out[4]);

/* A scratch tensor of n elements of dtype (ctx->lock held); never an empty-buffer tensor. */
kiln_status kiln__ops_scratch(const char *op, kiln_context *ctx, kiln_dtype dtype, uint64_t n,
                              kiln_tensor **out);

/* Blocking read of bytes at byte offset of a tensor's buffer; the lock is dropped while waiting. */
kiln_status kiln__ops_read(const char *op, kiln_context *ctx, const kiln_tensor *t,
                           uint64_t offset_bytes, void *host, size_t bytes);

/*
 * Sorts n pairs (keys[i], vals[i]) of ulongs in place, ascending by key then
 * value, with the bitonic_step kernel of the given source (every family source
 * that includes sort_pairs.clh has one). n must be a power of two; pad with
 * (UINT64_MAX, UINT64_MAX). O(n log^2 n) work, log2(n)(log2(n)+1)/2 launches.
 */
kiln_status kiln__ops_sort_pairs(const char *op, kiln_context *ctx, const char *source,
                                 kiln_dtype dtype, kiln_tensor *keys, kiln_tensor *vals,
                                 uint64_t n);

/* Smallest power of two >= n (1 for n <= 1). */
uint64_t kiln__ops_pow2(uint64_t n);

#endif
