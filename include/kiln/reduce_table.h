/*
 * The reduction and scan op tables: the single source of truth for the op
 * enums of include/kiln/reduce.h, their names, the dtypes each op accepts,
 * the dtype of its result and what an empty reduction gives. The scan table
 * is also included by cl_kernels/scan.cl, which stamps one set of kernels
 * per row; this header therefore holds nothing but macros.
 *
 * Reductions: X(ENUM, name, dtypes, result, empty)
 * Scans:      X(ENUM, name, dtypes, result)
 *   dtypes: ALL   = every real dtype (f16 bf16 f32 f64 i32 i64 u8 bool)
 *           FLOAT = f16 bf16 f32 f64
 *           Complex dtypes (c64, c128) are in no class: the ops that take them
 *           are the rows of KILN_REDUCE_COMPLEX_OPS / KILN_SCAN_COMPLEX_OPS.
 *   result: SAME  the input dtype (f16 stays f16, as in PyTorch)
 *           WIDE  floats (f16 bf16 f32 f64) and complex stay; i32, i64, u8 and
 *                 bool give i64 (NumPy's sum of int32 is int64; kiln has no
 *                 u64, so u8 also gives i64)
 *           REAL  floats and complex stay; i32, i64, u8 and bool give f64, or
 *                 f32 on a device without fp64
 *           ABS   real dtypes stay; complex gives its real part's dtype (c64:
 *                 f32, c128: f64), as a norm of |z| does
 *           BOOL  bool (0 or 1)
 *           I64   i64
 *   f16 and bf16 are loaded into f32 and every op accumulates in f32; the
 *   result is rounded once to the result dtype.
 *   empty:  VALUE a reduction over zero elements gives the op's empty value
 *                 (sum 0, prod 1, mean/var/std/median NaN, any false, all
 *                 true, count_nonzero 0, norm 0 (order -inf: +inf),
 *                 logsumexp -inf)
 *           ERROR it fails with KILN_ERR_SHAPE (min/max/argmin/argmax of
 *                 nothing have no value, as in NumPy)
 *
 * Semantics (NaN policy, tie rules, error bounds) are in docs/reductions.md.
 */
#ifndef KILN_REDUCE_TABLE_H
#define KILN_REDUCE_TABLE_H

#define KILN_REDUCE_OPS(X)                                   \
  X(SUM, sum, ALL, WIDE, VALUE)                              \
  X(PROD, prod, ALL, WIDE, VALUE)                            \
  X(MEAN, mean, ALL, REAL, VALUE)                            \
  X(VAR, var, ALL, REAL, VALUE)                              \
  X(STD, std, ALL, REAL, VALUE)                              \
  X(MIN, min, ALL, SAME, ERROR)                              \
  X(MAX, max, ALL, SAME, ERROR)                              \
  X(ARGMIN, argmin, ALL, I64, ERROR)                         \
  X(ARGMAX, argmax, ALL, I64, ERROR)                         \
  X(ANY, any, ALL, BOOL, VALUE)                              \
  X(ALL, all, ALL, BOOL, VALUE)                              \
  X(COUNT_NONZERO, count_nonzero, ALL, I64, VALUE)           \
  X(NORM, norm, FLOAT, ABS, VALUE)                           \
  X(LOGSUMEXP, logsumexp, FLOAT, SAME, VALUE)                \
  X(MEDIAN, median, ALL, REAL, VALUE)

#define KILN_SCAN_OPS(X)                                     \
  X(CUMSUM, cumsum, ALL, WIDE)                               \
  X(CUMPROD, cumprod, ALL, WIDE)                             \
  X(CUMMIN, cummin, ALL, SAME)                               \
  X(CUMMAX, cummax, ALL, SAME)                               \
  X(LOGCUMSUMEXP, logcumsumexp, FLOAT, SAME)

/* Ops that also take c64 and c128: sums, means and products of complex numbers, and norms
 * of |z|. Complex numbers have no order, so min, max, argmin, argmax, median, cummin and
 * cummax reject them (KILN_ERR_DTYPE; NumPy's lexicographic order is not offered). */
#define KILN_REDUCE_COMPLEX_OPS(X) X(SUM) X(PROD) X(MEAN) X(NORM)
#define KILN_SCAN_COMPLEX_OPS(X) X(CUMSUM) X(CUMPROD)

#endif
