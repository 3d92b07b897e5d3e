/*
 * Dense linear algebra on the device: LU with partial pivoting (packed and unpacked),
 * lu_solve, solve, inv, det, slogdet, a 1-norm condition estimate, Cholesky with its solve
 * and inverse, and triangular solve and multiply (docs/linalg.md). The QR, least-squares,
 * eigen and SVD routines are in kiln/linalg_spectral.h.
 *
 * Dtypes: f32, f64, c64 and c128 (f64 and c128 need fp64: KILN_ERR_UNSUPPORTED otherwise).
 * Complex LU pivots on |re| + |im| (LAPACK's izamax), and
 * KILN_CONJ_TRANS is the conjugate transpose for complex operands (A^T for real ones). Pivots
 * are i32 and 1-based, as LAPACK's ipiv and torch.linalg.lu_factor: row i was interchanged
 * with row pivots[i] - 1 (in order i = 0, 1, ...).
 *
 * Layout (torch.linalg conventions): row-major, the last two dimensions of a tensor are the
 * matrix and the leading ones are batch dimensions, [..., rows, cols]. Right-hand sides B
 * are [..., n, k], or vectors [..., n] where noted. Batch dimensions of two operands must
 * be equal (no broadcasting in this version). Every matrix of a batch is factored on its
 * own; matrices with both dimensions <= 64 run one work-group per matrix in local memory,
 * with or without batch dimensions, so a batched result equals the unbatched one bitwise.
 *
 * Output convention (every result): *out NULL allocates (the caller releases it); a given
 * *out must have the result's shape, dtype and context. A result may be the very bytes of
 * the input it replaces (in place: lu over a, x over b, out over a), any other overlap
 * with an input or between results is KILN_ERR_INVALID_ARGUMENT, nothing written.
 *
 * Statuses common to every call:
 *   KILN_OK; KILN_ERR_INVALID_HANDLE (NULL, released or foreign ctx or tensor);
 *   KILN_ERR_INVALID_ARGUMENT (NULL out pointer, a flag outside its enum, overlapping
 *   results); KILN_ERR_CONTEXT_MISMATCH; KILN_ERR_DTYPE (not f32/f64/c64/c128, operands of
 *   different dtypes, pivots not i32, a given result of another dtype); KILN_ERR_SHAPE (fewer
 *   than 2 dimensions, a non-square matrix given to a square-only op, batch or row counts of A
 *   and B that differ, a given result of the wrong shape: the message names op and shapes);
 *   KILN_ERR_OVERFLOW (a matrix with more than 2^31-1 rows, columns or right-hand sides);
 *   KILN_ERR_UNSUPPORTED (f64 without fp64); KILN_ERR_BUILD; KILN_ERR_OPENCL;
 *   KILN_ERR_DEVICE_MEMORY; KILN_ERR_HOST_MEMORY; KILN_ERR_PROVIDER (CLBlast failed; the raw
 *   status is kiln_last_error_code()).
 * Calls that must report singular or indefinite matrices (solve, inv, cholesky and the
 * rest marked below) read a status word back, so they wait for their kernels; the others
 * enqueue and return.
 *
 * NaN and Inf: nothing checks for them. LU picks as pivot the first largest |a| of a
 * column (LAPACK's idamax: a NaN below the diagonal is never chosen, a NaN on it stays),
 * and NaN/Inf propagate through the arithmetic; only an exactly zero pivot counts as
 * singular. Cholesky fails (KILN_ERR_NOT_POSITIVE_DEFINITE) at the first pivot that is not
 * > 0, which a NaN reaching the diagonal also is.
 */
#ifndef KILN_LINALG_H
#define KILN_LINALG_H

#include "kiln/blas.h"
#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Side of a triangular matrix in kiln_trsm / kiln_trmm. */
typedef enum kiln_side {
  KILN_LEFT = 0,  /**< op(A) X = alpha B, or B = alpha op(A) B */
  KILN_RIGHT = 1, /**< X op(A) = alpha B, or B = alpha B op(A) */
} kiln_side;

/** Whether a triangular matrix has an implicit unit diagonal. */
typedef enum kiln_diag_kind {
  KILN_NON_UNIT = 0, /**< the stored diagonal is used */
  KILN_UNIT = 1,     /**< the diagonal is taken as 1 and never read */
} kiln_diag_kind;

/**
 * LU factorization with partial pivoting of [..., m, n] matrices (LAPACK getrf,
 * torch.linalg.lu_factor): P A = L U with L unit lower (m x k) and U upper (k x n),
 * k = min(m, n), packed into lu (same shape as a; L's unit diagonal not stored).
 * @param lu [..., m, n]; may be a itself (factored in place).
 * @param pivots [..., k], i32, 1-based (see above).
 * A singular matrix is not an error here: U has a zero on its diagonal, as LAPACK's
 * info > 0 (use kiln_linalg_solve / kiln_linalg_inv for a status).
 * @return the common statuses.
 */
KILN_API kiln_status kiln_linalg_lu_factor(kiln_context *ctx, const kiln_tensor *a,
                                           kiln_tensor **lu, kiln_tensor **pivots);

/**
 * The unpacked form of kiln_linalg_lu_factor (torch.linalg.lu): A = P L U with P [..., m, m]
 * a permutation matrix, L [..., m, k] unit lower and U [..., k, n] upper, in a's dtype.
 * @return the common statuses.
 */
KILN_API kiln_status kiln_linalg_lu(kiln_context *ctx, const kiln_tensor *a, kiln_tensor **p,
                                    kiln_tensor **l, kiln_tensor **u);

/**
 * Solves op(A) X = B from A's packed LU (kiln_linalg_lu_factor of square matrices):
 * trans KILN_NO_TRANS solves A X = B, KILN_TRANS A^T X = B, KILN_CONJ_TRANS A^H X = B (A^T for
 * real dtypes).
 * @param lu [..., n, n]; pivots [..., n] i32 as kiln_linalg_lu_factor made them (values
 *        outside 1..n are not checked and give undefined results).
 * @param b [..., n, k] (the same batch dimensions as lu); x the same shape, may be b.
 * An exactly singular U gives Inf/NaN, not a status (no read-back).
 * @return the common statuses.
 */
KILN_API kiln_status kiln_linalg_lu_solve(kiln_context *ctx, const kiln_tensor *lu,
                                          const kiln_tensor *pivots, const kiln_tensor *b,
                                          kiln_trans trans, kiln_tensor **x);

/**
 * Solves A X = B for square A (torch.linalg.solve, left): b is [..., n, k] or a vector
 * [..., n] (b's shape is a's without the last dimension, or b is 1-D and a 2-D); x has b's
 * shape and may be b. Waits for the result of its factorization.
 * @return the common statuses; KILN_ERR_SINGULAR when a matrix has an exactly zero pivot
 *         (the message names the batch entry and the pivot's index; x is then undefined).
 */
KILN_API kiln_status kiln_linalg_solve(kiln_context *ctx, const kiln_tensor *a,
                                       const kiln_tensor *b, kiln_tensor **x);

/**
 * Inverse of square matrices [..., n, n] (torch.linalg.inv); out may be a.
 * @return the common statuses; KILN_ERR_SINGULAR as kiln_linalg_solve.
 */
KILN_API kiln_status kiln_linalg_inv(kiln_context *ctx, const kiln_tensor *a, kiln_tensor **out);

/**
 * Determinants of square matrices [..., n, n] into out [...] (a 0-d tensor for one
 * matrix), from the LU: the product of U's diagonal and the pivots' sign. A singular
 * matrix has determinant 0 (not an error); 0x0 matrices 1. May overflow to +-Inf.
 * @return the common statuses.
 */
KILN_API kiln_status kiln_linalg_det(kiln_context *ctx, const kiln_tensor *a, kiln_tensor **out);

/**
 * sign(det) and log|det| of square matrices (torch.linalg.slogdet), both [...]: a singular
 * matrix gives sign 0 and log|det| -Inf; NaN in U gives NaN in both. For complex A (as torch)
 * sign is complex, det / |det| (modulus 1), and logabsdet real: f32 for c64, f64 for c128.
 * @return the common statuses; KILN_ERR_INVALID_ARGUMENT when sign and logabsdet overlap.
 */
KILN_API kiln_status kiln_linalg_slogdet(kiln_context *ctx, const kiln_tensor *a,
                                         kiln_tensor **sign, kiln_tensor **logabsdet);

/**
 * Reciprocal 1-norm condition number estimate of square matrices, 1 / (||A||_1 est(||A^-1||_1))
 * into out [...] (LAPACK gecon, MATLAB rcond): the estimate of ||A^-1||_1 is Hager's method
 * with Higham's refinements (at most 5 iterations plus the alternating test vector), so it
 * is a lower bound of the norm, usually within a factor 3 (complex A: LAPACK zlacn2's
 * variant, complex sign vectors; out is real, f32 for c64, f64 for c128). An exactly singular
 * matrix gives
 * 0, a zero matrix 0, a 0x0 matrix Inf. Waits (it iterates on the host).
 * @return the common statuses.
 */
KILN_API kiln_status kiln_linalg_rcond(kiln_context *ctx, const kiln_tensor *a, kiln_tensor **out);

/**
 * Cholesky factorization of symmetric (complex: Hermitian) positive definite matrices
 * [..., n, n] (torch.linalg.cholesky): A = L L^H (uplo KILN_LOWER) or A = U^H U (KILN_UPPER),
 * L^H = L^T for real A. Only the named triangle of A is read (complex: the imaginary parts of
 * its diagonal are ignored, as zpotrf); the other triangle of the result is zero. out may be a.
 * Waits for the status.
 * @return the common statuses; KILN_ERR_NOT_POSITIVE_DEFINITE when a leading minor is not
 *         positive definite (the message names the batch entry and the minor's order,
 *         1-based, as torch and LAPACK's info); out is then undefined.
 */
KILN_API kiln_status kiln_linalg_cholesky(kiln_context *ctx, const kiln_tensor *a, kiln_uplo uplo,
                                          kiln_tensor **out);

/**
 * Solves A X = B given A's Cholesky factor (torch.cholesky_solve): factor [..., n, n] as
 * kiln_linalg_cholesky made it for uplo (only that triangle is read), b [..., n, k], x like
 * b (may be b).
 * @return the common statuses.
 */
KILN_API kiln_status kiln_linalg_cholesky_solve(kiln_context *ctx, const kiln_tensor *factor,
                                                kiln_uplo uplo, const kiln_tensor *b,
                                                kiln_tensor **x);

/**
 * A^-1 from A's Cholesky factor (torch.cholesky_inverse); out [..., n, n] is the full
 * symmetric inverse.
 * @return the common statuses.
 */
KILN_API kiln_status kiln_linalg_cholesky_inverse(kiln_context *ctx, const kiln_tensor *factor,
                                                  kiln_uplo uplo, kiln_tensor **out);

/**
 * Triangular solve (BLAS trsm): X = alpha op(A)^-1 B (side KILN_LEFT, A [..., m, m]) or
 * X = alpha B op(A)^-1 (KILN_RIGHT, A [..., n, n]), B and X [..., m, n]. Only the uplo
 * triangle of A is read, its diagonal not at all with KILN_UNIT. x may be b. A zero on a
 * non-unit diagonal gives Inf/NaN (no check).
 * @return the common statuses (KILN_ERR_INVALID_ARGUMENT for side, uplo, trans or diag
 *         outside their enums).
 */
KILN_API kiln_status kiln_trsm(kiln_context *ctx, kiln_side side, kiln_uplo uplo, kiln_trans trans,
                               kiln_diag_kind diag, double alpha, const kiln_tensor *a,
                               const kiln_tensor *b, kiln_tensor **x);

/**
 * Triangular multiply (BLAS trmm): out = alpha op(A) B (KILN_LEFT) or alpha B op(A)
 * (KILN_RIGHT), shapes and flags as kiln_trsm; out may be b.
 * @return the statuses of kiln_trsm.
 */
KILN_API kiln_status kiln_trmm(kiln_context *ctx, kiln_side side, kiln_uplo uplo, kiln_trans trans,
                               kiln_diag_kind diag, double alpha, const kiln_tensor *a,
                               const kiln_tensor *b, kiln_tensor **out);

#ifdef __cplusplus
}
#endif
#endif
