/*
 * Shared between the sort family's files (sort.c: sorting and selection; sort_set.c: unique,
 * searching, membership and set operations). All with ctx->lock held unless noted.
 */
#ifndef KILN_OPS_SORT_INTERNAL_H
#define KILN_OPS_SORT_INTERNAL_H

#include <stdint.h>

#include "core/dtype_traits.h"
#include "runtime/runtime.h"

#define KILN__SORT_SRC "sort"
#define KILN__SORT_RADIX_SRC "sort_radix"
#define KILN__SORT_OS_SRC "sort_onesweep"
#define KILN__SORT_DTYPES (KILN__DT_CLASSIC | KILN__DT_HALVES)

/* Test hooks (0: the device defaults): the radix passes' local size (also the unique chunk
 * kernels'), tile and digit bits (1 to 11). */
extern uint32_t kiln__sort_radix_local;
extern uint64_t kiln__sort_radix_tile;
extern uint32_t kiln__sort_radix_bits;
/* Test hook: nonzero makes topk and kthvalue take the radix selection whenever k fits (2:
 * the one-work-group-per-row selection, else the chunked passes). */
extern int kiln__sort_force_select;
/* Test hook: nonzero sorts integers with positions even when only values are wanted. */
extern int kiln__sort_force_pairs;
/* Test hooks: 1 takes the onesweep radix passes, -1 the classic ones, 0 the device's choice
 * (KILN_SORT_RADIX, else onesweep on GPUs); the onesweep keys per work-item (1 to 16, 0: the
 * device default). */
extern int kiln__sort_onesweep;
extern uint32_t kiln__sort_onesweep_ipt;
/* Test hook: searchsorted's splitters in local memory (0: the device's choice, GPUs only). */
extern uint32_t kiln__sort_ss_splitters;

/* Nonzero when dtype's keys are 64 bits (i64, f64). */
int kiln__sort_key64(kiln_dtype dt);

/* A tensor the family sorts: a real dtype the device runs, fewer than 2^32 elements. */
kiln_status kiln__sort_check_x(const char *op, kiln_context *ctx, const kiln_tensor *x,
                               const char *what);

/* Elements per chunk of the chunked passes over n elements with work-groups of L items
 * (kiln__sort_scan, unique's run counts): at most 8192 chunks, whose sums one work-group
 * scans. */
uint64_t kiln__sort_chunk(const kiln_context *ctx, size_t L, uint64_t n);

/* Exclusive scan in place of m uints at the start of buffer a. */
kiln_status kiln__sort_scan(const char *op, kiln_context *ctx, cl_mem a, uint64_t m);

/*
 * Sorted (key, payload) pairs of x's rows geometry (rows x len, inner; see sort.cl), by the
 * radix passes: *keys (key dtype: i64 for 64-bit keys, else i32) and *vals (i32, payloads
 * r * len + j) are new scratch tensors of rows * len elements (rows * len > 0), the caller
 * releases them.
 */
kiln_status kiln__sort_pairs_radix(const char *op, kiln_context *ctx, const kiln_tensor *x,
                                   uint64_t rows, uint64_t len, uint64_t inner, int desc,
                                   kiln_tensor **keys, kiln_tensor **vals);

/* The sorted keys alone of x's n elements (one row; desc flips them): a new scratch tensor of
 * the key dtype in *out. For integers, whose equal values are indistinguishable. */
kiln_status kiln__sort_keys_only(const char *op, kiln_context *ctx, const kiln_tensor *x,
                                 uint64_t n, int desc, kiln_tensor **out);

/* The same for the rows of a 2-D x (nrows x ncols) by every column, ascending (sortrows). */
kiln_status kiln__sort_rows_radix(const char *op, kiln_context *ctx, const kiln_tensor *x,
                                  uint64_t nrows, uint64_t ncols, const int64_t *cols, size_t ncol,
                                  const int *desc, kiln_tensor **keys, kiln_tensor **vals);

/* Sorted values of x (flattened, ascending) into out (x's dtype, numel(x) elements). */
kiln_status kiln__sort_values_flat(const char *op, kiln_context *ctx, const kiln_tensor *x,
                                   kiln_tensor *out);

#endif
