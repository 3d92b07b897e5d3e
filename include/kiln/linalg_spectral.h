/*
 * QR, least squares, eigen decompositions, SVD and the norms and ranks built on them
 * (docs/linalg.md, "Spectral"). Conventions are kiln/linalg.h's: f32 and f64, and c64 and c128
 * for every call but kiln_linalg_eig (KILN_ERR_DTYPE): complex QR and lstsq as the real ones,
 * complex eigh, svd, pinv, matrix_rank, matrix_norm and cond whole on the host's LAPACK, their
 * eigenvalues, singular values, norms and condition numbers real (f32 for c64, f64 for c128);
 * row-major
 * [..., rows, cols] with leading batch dimensions, results allocated when *out is NULL or
 * written into a given tensor of the result's shape and dtype, no overlap between results
 * and inputs (KILN_ERR_INVALID_ARGUMENT).
 *
 * Where the work runs: QR (Householder panels in kiln's kernels, compact-WY trailing updates
 * and Q through CLBlast GEMM, or kiln's GEMM kernel without CLBlast), the reductions of eigh
 * to tridiagonal and of svd to bidiagonal form and their back-transformations run on the
 * device. The tridiagonal and bidiagonal problems (O(n^2) work), and eig, the minimum-norm
 * lstsq, pinv, matrix_rank, cond and the 2-norm/nuclear norms (whole, O(n^3)) run on the
 * host through LAPACKE (liblapacke; the data is copied to the host and back, and these calls
 * wait). The host computes in f64 (f32 is widened and the result rounded). A kiln built
 * without LAPACKE (meson -Dlapacke=disabled) returns KILN_ERR_UNSUPPORTED from the ops that
 * need it, naming the op; QR, the full-rank lstsq and the fro/1/inf norms work without it.
 *
 * Statuses common to every call: those of kiln/linalg.h, and KILN_ERR_NO_CONVERGENCE when a
 * LAPACK iteration did not converge (the message names the batch entry and LAPACK's info);
 * KILN_ERR_INVALID_ARGUMENT when LAPACKE refuses the host stage's input for a NaN, which NaN
 * or Inf entries of an eigh or svd input become (the message names the batch entry).
 */
#ifndef KILN_LINALG_SPECTRAL_H
#define KILN_LINALG_SPECTRAL_H

#include "kiln/linalg.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Which factors kiln_linalg_qr returns (torch.linalg.qr's mode). */
typedef enum kiln_qr_mode {
  KILN_QR_REDUCED = 0,  /**< Q [..., m, k], R [..., k, n], k = min(m, n) */
  KILN_QR_COMPLETE = 1, /**< Q [..., m, m], R [..., m, n] */
  KILN_QR_R = 2,        /**< R [..., k, n] only; q is not touched and may be NULL */
} kiln_qr_mode;

/** Matrix norms (numpy.linalg.norm's ord for matrices). */
typedef enum kiln_mnorm {
  KILN_MNORM_FRO = 0,     /**< Frobenius */
  KILN_MNORM_NUC = 1,     /**< nuclear: sum of singular values (LAPACKE) */
  KILN_MNORM_1 = 2,       /**< largest absolute column sum */
  KILN_MNORM_INF = 3,     /**< largest absolute row sum */
  KILN_MNORM_2 = 4,       /**< largest singular value (LAPACKE) */
  KILN_MNORM_NEG2 = 5,    /**< smallest singular value (LAPACKE) */
  KILN_MNORM_NEG1 = 6,    /**< smallest absolute column sum */
  KILN_MNORM_NEG_INF = 7, /**< smallest absolute row sum */
} kiln_mnorm;

/**
 * Householder QR of [..., m, n] matrices (LAPACK geqrf + orgqr, torch.linalg.qr): A = Q R,
 * Q with orthonormal columns, R upper triangular (R's diagonal may be negative, as LAPACK's).
 * Complex A (c64, c128): zgeqrf's reflectors H = I - tau v v^H, Q unitary, R's diagonal real.
 * @param mode KILN_QR_REDUCED, KILN_QR_COMPLETE or KILN_QR_R (see kiln_qr_mode).
 * @param q Q, in a's dtype (ignored with KILN_QR_R); r R.
 * @return the common statuses (KILN_ERR_INVALID_ARGUMENT for mode outside the enum or q and
 *         r overlapping).
 */
KILN_API kiln_status kiln_linalg_qr(kiln_context *ctx, const kiln_tensor *a, kiln_qr_mode mode,
                                    kiln_tensor **q, kiln_tensor **r);

/**
 * Least squares min ||A X - B||_F of a [..., m, n] and b [..., m, k] (numpy.linalg.lstsq,
 * torch.linalg.lstsq with driver gelsd), into x [..., n, k]. A tall (m >= n) matrix whose R
 * (device QR) has every |R_ii| > eps(dtype) max(m, n) max|R_ii| is solved through the QR;
 * every other one (wide or rank-deficient) gets the minimum-norm solution through the SVD
 * (host LAPACKE gelsd), singular values below rcond * s_max taken as zero.
 * @param rcond relative cutoff for the SVD route; < 0 means eps(dtype) max(m, n).
 * @param residuals NULL, or receives a new tensor (a given *residuals is refused): the squared
 *        residual norms of each column [..., k] when m > n and every matrix has rank n, else a
 *        tensor of shape [0] (torch's rule).
 * @param rank NULL, or [...] i64 (the QR route reports n).
 * @param sv NULL, or the singular values [..., min(m, n)], descending, in a's dtype (the QR
 *        route computes them from R on the host).
 * Complex a and b (c64, c128): the same routes with zgeqrf's QR and zgelsd; x complex,
 * residuals and sv real (f32 for c64, f64 for c128).
 * Needs LAPACKE for the SVD route and for sv (KILN_ERR_UNSUPPORTED without it, nothing
 * written). Waits.
 * @return the common statuses.
 */
KILN_API kiln_status kiln_linalg_lstsq(kiln_context *ctx, const kiln_tensor *a,
                                       const kiln_tensor *b, double rcond, kiln_tensor **x,
                                       kiln_tensor **residuals, kiln_tensor **rank,
                                       kiln_tensor **sv);

/**
 * Eigenvalues (ascending) and optionally eigenvectors of symmetric matrices [..., n, n]
 * (torch.linalg.eigh): only the uplo triangle is read. Householder reduction to tridiagonal
 * form on the device, the tridiagonal problem on the host (LAPACKE dsterf for values,
 * dstedc for vectors below order 512, MRRR dstemr from there on), vectors back-transformed
 * on the device. Waits.
 * Complex Hermitian a (c64, c128): whole on the host (LAPACKE zheevd); w real (f32 for c64,
 * f64 for c128), v complex.
 * @param w [..., n] eigenvalues, ascending.
 * @param v NULL for values only, else [..., n, n] with the eigenvector of w[i] in column i.
 * @return the common statuses; KILN_ERR_INVALID_ARGUMENT for uplo; KILN_ERR_UNSUPPORTED
 *         without LAPACKE.
 */
KILN_API kiln_status kiln_linalg_eigh(kiln_context *ctx, const kiln_tensor *a, kiln_uplo uplo,
                                      kiln_tensor **w, kiln_tensor **v);

/**
 * Eigenvalues and optionally right eigenvectors of general square matrices [..., n, n]
 * (numpy.linalg.eig, host LAPACKE dgeev), with real and imaginary parts in separate tensors:
 * wr, wi [..., n] (conjugate pairs adjacent, positive imaginary part first, in LAPACK's
 * order, not sorted); vr, vi [..., n, n], eigenvector of eigenvalue i in column i, unit
 * Euclidean norm with its largest component real. Waits.
 * @param vr, vi both NULL for values only, or both given.
 * @return the common statuses; KILN_ERR_UNSUPPORTED without LAPACKE.
 */
KILN_API kiln_status kiln_linalg_eig(kiln_context *ctx, const kiln_tensor *a, kiln_tensor **wr,
                                     kiln_tensor **wi, kiln_tensor **vr, kiln_tensor **vi);

/**
 * kiln_linalg_eig with complex results (torch.linalg.eig, numpy.linalg.eig): w [..., n] and
 * v [..., n, n] of dtype c64 for f32 input, c128 for f64, the same numbers as kiln_linalg_eig's
 * parts (conjugate pairs adjacent, positive imaginary part first; eigenvector i in column i,
 * unit norm). Output convention of the elementwise ops: *w (and *v) NULL is allocated and
 * owned by the caller, else written in place. Waits.
 * @param v NULL for values only.
 * @return KILN_ERR_INVALID_ARGUMENT (NULL ctx, a or w); KILN_ERR_RELEASED; KILN_ERR_DTYPE
 *         (a not f32/f64, or a given output not of the complex dtype); KILN_ERR_SHAPE (a not a
 *         square matrix stack, or a given output of another shape); KILN_ERR_UNSUPPORTED
 *         (without LAPACKE, or f64 without fp64); KILN_ERR_NO_CONVERGENCE (dgeev);
 *         KILN_ERR_HOST_MEMORY; KILN_ERR_DEVICE_MEMORY; KILN_ERR_BUILD; KILN_ERR_OPENCL.
 */
KILN_API kiln_status kiln_linalg_eig_complex(kiln_context *ctx, const kiln_tensor *a,
                                             kiln_tensor **w, kiln_tensor **v);

/**
 * Singular value decomposition A = U diag(S) V^T of [..., m, n] matrices
 * (torch.linalg.svd): Householder bidiagonalisation on the device (of A^T when m < n), the
 * bidiagonal SVD on the host (LAPACKE dbdsvdx with vectors, dbdsqr for values only or when
 * dbdsvdx fails), U and V formed on the device. k = min(m, n).
 * @param full_matrices nonzero: U [..., m, m], vt [..., n, n]; zero: U [..., m, k],
 *        vt [..., k, n].
 * Complex a (c64, c128): whole on the host (LAPACKE zgesdd); s real (f32 for c64, f64 for
 * c128), u and vt complex, vt = V^H.
 * @param u, vt both NULL for values only (dgesdd jobz 'N'), or both given.
 * @param s [..., k] descending, nonnegative.
 * Waits. @return the common statuses; KILN_ERR_UNSUPPORTED without LAPACKE.
 */
KILN_API kiln_status kiln_linalg_svd(kiln_context *ctx, const kiln_tensor *a, int full_matrices,
                                     kiln_tensor **u, kiln_tensor **s, kiln_tensor **vt);

/**
 * Moore-Penrose pseudo-inverse [..., n, m] of [..., m, n] matrices through the SVD
 * (numpy.linalg.pinv): singular values <= rcond * s_max are taken as zero.
 * @param rcond < 0 means eps(dtype) max(m, n) (torch's default rtol).
 * Waits. @return the common statuses; KILN_ERR_UNSUPPORTED without LAPACKE.
 */
KILN_API kiln_status kiln_linalg_pinv(kiln_context *ctx, const kiln_tensor *a, double rcond,
                                      kiln_tensor **out);

/**
 * Numerical rank of [..., m, n] matrices into out [...] (i64, numpy.linalg.matrix_rank): the
 * number of singular values > tol.
 * @param tol < 0 means s_max max(m, n) eps(dtype) (NumPy's default).
 * Waits. @return the common statuses; KILN_ERR_UNSUPPORTED without LAPACKE.
 */
KILN_API kiln_status kiln_linalg_matrix_rank(kiln_context *ctx, const kiln_tensor *a, double tol,
                                             kiln_tensor **out);

/**
 * Matrix norms of [..., m, n] matrices into out [...] (numpy.linalg.norm with ord for
 * matrices; a 0x0 matrix has norm 0). FRO, 1, INF, NEG1, NEG_INF are sums on the host;
 * NUC, 2, NEG2 need the singular values (LAPACKE). Waits.
 * @return the common statuses; KILN_ERR_INVALID_ARGUMENT for ord outside kiln_mnorm;
 *         KILN_ERR_UNSUPPORTED for NUC, 2, NEG2 without LAPACKE.
 */
KILN_API kiln_status kiln_linalg_matrix_norm(kiln_context *ctx, const kiln_tensor *a,
                                             kiln_mnorm ord, kiln_tensor **out);

/**
 * Condition numbers of [..., m, n] matrices into out [...] (numpy.linalg.cond): for 2 and
 * NEG2 s_max/s_min and s_min/s_max (any shape; s_min = 0 gives Inf); for the other norms
 * ||A|| ||A^-1|| of square matrices, with the inverse from host LAPACKE getrf/getri (an
 * exactly singular matrix gives Inf). Waits.
 * @return the common statuses; KILN_ERR_SHAPE for a non-square matrix with a norm other than
 *         2 and NEG2; KILN_ERR_UNSUPPORTED without LAPACKE.
 */
KILN_API kiln_status kiln_linalg_cond(kiln_context *ctx, const kiln_tensor *a, kiln_mnorm p,
                                      kiln_tensor **out);

#ifdef __cplusplus
}
#endif
#endif
