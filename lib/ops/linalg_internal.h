/*
 * linalg family internals shared with its test (tests/ops/test_linalg.c): the route and
 * blocking choices and a hook that overrides them.
 */
#ifndef KILN_OPS_LINALG_INTERNAL_H
#define KILN_OPS_LINALG_INTERNAL_H

#include "kiln/context.h"

/*
 * Built-in block size of the blocked LU and Cholesky (columns per panel): 64 on GPUs, where
 * the trailing GEMM dominates and a wider panel feeds it larger products, 32 on CPUs.
 */
#define KILN__LINALG_NB_GPU 64
#define KILN__LINALG_NB_CPU 32

/*
 * Widest LU panel that one work-group (lu_panel) factors on GPUs; wider panels split in
 * halves recursively, the halves joined by TRSM and GEMM over the whole device. One
 * work-group streams its panel through the cache once per column (about m w^2 / 2
 * elements), which for w = 64 and m = 4096 is 134 MB through one compute unit per panel.
 * CPUs (PoCL) factor whole panels (no recursion).
 */
#define KILN__LINALG_LEAF_GPU 16

/* Largest rows/cols of a matrix that the one-work-group-per-matrix kernels take. */
#define KILN__LINALG_SMALL_MAX 64

/* The block size kiln uses on a device (the hook's override, else the built-in default). */
unsigned kiln__linalg_block(const kiln_device_info *info);

/*
 * Test hook: nb > 0 forces the block size, small_max >= 0 the small-matrix bound (0: every
 * matrix takes the blocked path), own > 0 kiln's own kernels instead of CLBlast, leaf > 0
 * the LU panel leaf width (KILN__LINALG_LEAF_GPU); -1 keeps (restores) the default of each.
 * Process-wide; not for concurrent use.
 */
void kiln__linalg_test_set(int nb, int small_max, int own, int leaf);

#endif
