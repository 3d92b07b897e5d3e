/*
 * Dense linear algebra: GEMM (batched, broadcasting), matmul, GEMV, SYRK and
 * the level-1 routines dot, axpy and scal, on f32, f64, f16, bf16, c64 and
 * c128 tensors.
 *
 * Dtypes. Both inputs have one dtype. f16 and bf16 are loaded into f32,
 * multiplied and summed in f32 and rounded once (to nearest even) into the
 * result; kiln_gemm and kiln_matmul write an f32 result instead when the
 * caller passes an f32 *out (an allocated result has the inputs' dtype).
 * They always run on kiln's own kernels (CLBlast's half routines accumulate
 * in half precision, and neither PoCL nor NVIDIA's OpenCL has cl_khr_fp16).
 * c64/c128 GEMM, GEMV and SYRK run on CLBlast (CGEMM/ZGEMM, ...) above the
 * size threshold and on kiln's kernel below it; dot, axpy and scal on
 * f16/bf16/c64/c128 run on kiln's kernels. kiln_dot of complex vectors is
 * unconjugated (sum x[i] y[i], as numpy.dot); conjugate x first for vdot.
 * Scalars given as double are real: alpha = alpha + 0i for complex tensors
 * (kiln_gemm_complex takes complex alpha and beta).
 *
 * Layout. Tensors are row-major (C order) and the last two dimensions of a
 * tensor are its matrix: shape [..., rows, cols]. Leading dimensions are
 * batch dimensions: a GEMM over [b, m, k] and [b, k, n] tensors is b
 * independent products, run as one strided-batched call. A column-major
 * caller passes its matrices as they lie in memory and swaps roles (C^T =
 * B^T A^T) or uses the transpose flags; kiln never copies to change layout.
 *
 * Who runs it. Problems whose m*n*k (per matrix) is at most the context
 * option KILN_OPT_GEMM_SMALL_MNK (default 32^3) run on kiln's own tiled
 * kernel, larger ones on CLBlast, except f32/f64 GEMMs on CPU devices, which
 * run on kiln's CPU kernel (docs/blas_fft.md). CLBlast compiles each routine's kernels
 * once per process and per OpenCL context, and keeps no disk cache: the
 * first call of a routine and precision takes seconds (measured in
 * docs/blas_fft.md). kiln_blas_warm() pays that cost up front.
 *
 * Output convention (kiln_gemm, kiln_matmul, kiln_gemv, kiln_syrk, kiln_dot):
 * if *out is NULL kiln allocates the result and stores it in *out (the
 * caller releases it); beta is then ignored (the product is written, as if
 * beta were 0). If *out is a tensor it must have the result's shape and
 * dtype and belong to the context; kiln updates it in place. With beta == 0
 * the previous contents of *out are never read, so NaN or Inf there do not
 * propagate (BLAS semantics). The output must not share any byte with an
 * input (KILN_ERR_INVALID_ARGUMENT, nothing written; kiln_axpy below is the
 * exception). docs/ops.md, "Aliasing".
 *
 * Statuses common to every call here:
 *   KILN_OK; KILN_ERR_INVALID_HANDLE (NULL, released or foreign ctx or
 *   tensor); KILN_ERR_INVALID_ARGUMENT (NULL out, a flag outside its enum,
 *   an output overlapping an input); KILN_ERR_CONTEXT_MISMATCH; KILN_ERR_DTYPE
 *   (an integer or bool dtype, inputs of different dtypes, or a given
 *   output of another dtype than described above); KILN_ERR_SHAPE (the
 *   message names the op and the shapes); KILN_ERR_UNSUPPORTED (f64/c128 on
 *   a device without fp64);
 *   KILN_ERR_BUILD; KILN_ERR_OPENCL; KILN_ERR_DEVICE_MEMORY;
 *   KILN_ERR_HOST_MEMORY; KILN_ERR_PROVIDER (CLBlast failed; the raw
 *   CLBlast status is kiln_last_error_code() and the message names it);
 *   KILN_ERR_INTERNAL (CLBlast rejected arguments kiln had validated).
 * Every call enqueues its work and returns; downloads and
 * kiln_context_finish() wait for it.
 */
#ifndef KILN_BLAS_H
#define KILN_BLAS_H

#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Whether a matrix operand is used as stored, transposed or conjugate-transposed. */
typedef enum kiln_trans {
  KILN_NO_TRANS = 0,   /**< op(X) = X */
  KILN_TRANS = 1,      /**< op(X) = X^T */
  KILN_CONJ_TRANS = 2, /**< op(X) = X^H (conjugate transpose); X^T for real dtypes (BLAS 'C') */
} kiln_trans;

/** Triangle of a symmetric result (row-major: upper holds the elements with column >= row). */
typedef enum kiln_uplo {
  KILN_UPPER = 0,
  KILN_LOWER = 1,
} kiln_uplo;

/**
 * General matrix product, batched: C = alpha * op(A) @ op(B) + beta * C.
 *
 * @param a shape [batch_a..., m, k] (trans_a == KILN_NO_TRANS) or
 *          [batch_a..., k, m] (KILN_TRANS, KILN_CONJ_TRANS); at least 2 dimensions.
 * @param b shape [batch_b..., k, n] or [batch_b..., n, k]; at least 2 dimensions.
 * @param c result [batch..., m, n], where batch is the NumPy broadcast of
 *          batch_a and batch_b (a missing or size-1 batch dimension repeats
 *          that operand's matrix). See the output convention above; for
 *          f16/bf16 inputs a given c may be f32.
 * Zero-size m, n or batch is a no-op; k == 0 or alpha == 0 gives beta * C
 * (0 for beta == 0) without reading A or B.
 * @return the common statuses; KILN_ERR_SHAPE when an operand has fewer than
 *         2 dimensions, the inner dimensions differ, or the batch dimensions
 *         do not broadcast.
 */
KILN_API kiln_status kiln_gemm(kiln_context *ctx, kiln_trans trans_a, kiln_trans trans_b,
                               double alpha, const kiln_tensor *a, const kiln_tensor *b,
                               double beta, kiln_tensor **c);

/**
 * kiln_gemm with complex alpha and beta, for c64 and c128 tensors:
 * C = alpha * op(A) @ op(B) + beta * C, op() as kiln_trans says (conjugate
 * transposes included). beta == 0 + 0i never reads a given C.
 * @return the statuses of kiln_gemm; KILN_ERR_DTYPE when a is not c64/c128.
 */
KILN_API kiln_status kiln_gemm_complex(kiln_context *ctx, kiln_trans trans_a, kiln_trans trans_b,
                                       kiln_complex128 alpha, const kiln_tensor *a,
                                       const kiln_tensor *b, kiln_complex128 beta, kiln_tensor **c);

/**
 * Matrix product with NumPy matmul semantics: out = a @ b.
 * Both inputs at least 1-D. A 1-D a of length k acts as a [1, k] matrix and a
 * 1-D b as a [k, 1] matrix; the added dimension is removed from the result
 * (1-D @ 1-D gives a 0-d tensor). Batch dimensions broadcast.
 * @return the common statuses; KILN_ERR_SHAPE for a 0-d input, differing
 *         inner dimensions or batch dimensions that do not broadcast.
 */
KILN_API kiln_status kiln_matmul(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b,
                                 kiln_tensor **out);

/**
 * Matrix-vector product: y = alpha * op(A) @ x + beta * y.
 * @param a shape [m, n]; op(A) is m x n (KILN_NO_TRANS) or n x m (KILN_TRANS,
 *          KILN_CONJ_TRANS).
 * @param x 1-D, length n (KILN_NO_TRANS) or m (KILN_TRANS).
 * @param y 1-D result, length m (KILN_NO_TRANS) or n (KILN_TRANS).
 * @return the common statuses; KILN_ERR_SHAPE when a is not 2-D, x or a given
 *         y is not 1-D, or the lengths do not match.
 */
KILN_API kiln_status kiln_gemv(kiln_context *ctx, kiln_trans trans, double alpha,
                               const kiln_tensor *a, const kiln_tensor *x, double beta,
                               kiln_tensor **y);

/**
 * Symmetric rank-k update of one triangle: C = alpha * A @ A^T + beta * C
 * (trans == KILN_NO_TRANS, a is [batch..., n, k]) or C = alpha * A^T @ A
 * (KILN_TRANS, a is [batch..., k, n]); c is [batch..., n, n] with the same
 * batch dimensions as a. Complex A gives the symmetric (not Hermitian)
 * update; KILN_CONJ_TRANS is KILN_TRANS for real dtypes and
 * KILN_ERR_INVALID_ARGUMENT for complex ones.
 * Only the triangle named by uplo is computed. With fill_other != 0 the
 * other triangle is then overwritten with the mirror of the computed one,
 * leaving a full symmetric matrix; with fill_other == 0 a given C keeps its
 * other triangle untouched, and a C that kiln allocates has zeros there.
 * @return the common statuses; KILN_ERR_SHAPE when a has fewer than 2
 *         dimensions or a given c has the wrong shape.
 */
KILN_API kiln_status kiln_syrk(kiln_context *ctx, kiln_uplo uplo, kiln_trans trans, double alpha,
                               const kiln_tensor *a, double beta, kiln_tensor **c, int fill_other);

/**
 * Inner product of two 1-D tensors of equal length into a 0-d tensor
 * (0 for length 0).
 * @return the common statuses; KILN_ERR_SHAPE when x or y is not 1-D, the
 *         lengths differ or a given out is not 0-d.
 */
KILN_API kiln_status kiln_dot(kiln_context *ctx, const kiln_tensor *x, const kiln_tensor *y,
                              kiln_tensor **out);

/**
 * y += alpha * x, in place on y, over every element; x and y have the same
 * shape and dtype. y may be x's very bytes (x itself or another handle over
 * them): then y = (1 + alpha) x. A partial overlap (y shifted against x)
 * is KILN_ERR_INVALID_ARGUMENT, nothing written.
 * @return the common statuses; KILN_ERR_SHAPE when the shapes differ.
 */
KILN_API kiln_status kiln_axpy(kiln_context *ctx, double alpha, const kiln_tensor *x,
                               kiln_tensor *y);

/**
 * x *= alpha, in place, over every element. As in BLAS, alpha == 0 still
 * multiplies (NaN * 0 stays NaN).
 * @return the common statuses.
 */
KILN_API kiln_status kiln_scal(kiln_context *ctx, double alpha, kiln_tensor *x);

/** What kiln_blas_warm() compiles. */
typedef enum kiln_blas_warm_scope {
  /**
   * The CLBlast routines kiln calls (GEMM, strided-batched GEMM, GEMV, SYRK,
   * dot, axpy, scal) for f32 and, with fp64, f64, run once on tiny operands
   * in this context, plus kiln's own BLAS kernels for f32/f64. Afterwards
   * no first-call compile is left in this context for f32/f64; the f16,
   * bf16 and complex kernels and CLBlast's complex routines compile on
   * first use.
   */
  KILN_BLAS_WARM_USED = 0,
  /**
   * CLBlastFillCache(): every CLBlast routine in every precision the device
   * has, compiled in a throw-away context. Later contexts on the device build
   * from the kept binaries instead of from source. Much slower than USED.
   */
  KILN_BLAS_WARM_ALL = 1,
} kiln_blas_warm_scope;

/**
 * Compiles BLAS kernels ahead of the first call (for `kiln cache warm` and
 * for latency-sensitive programs). Blocks until done; the time is the
 * first-call cost documented in docs/blas_fft.md.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (scope
 *         outside the enum); KILN_ERR_UNSUPPORTED (KILN_BLAS_WARM_ALL in a
 *         build without CLBlast); KILN_ERR_BUILD; KILN_ERR_OPENCL;
 *         KILN_ERR_DEVICE_MEMORY; KILN_ERR_HOST_MEMORY; KILN_ERR_PROVIDER.
 */
KILN_API kiln_status kiln_blas_warm(kiln_context *ctx, kiln_blas_warm_scope scope);

/** Nonzero when this libkiln was built with CLBlast. */
KILN_API int kiln_blas_has_clblast(void);

#ifdef __cplusplus
}
#endif
#endif
