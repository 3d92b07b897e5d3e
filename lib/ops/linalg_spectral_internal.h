/*
 * linalg_spectral family internals: shared by lib/ops/linalg_qr.c and lib/ops/linalg_eig.c,
 * and the test hook used by tests/ops/test_linalg_spectral.c.
 */
#ifndef KILN_OPS_LINALG_SPECTRAL_INTERNAL_H
#define KILN_OPS_LINALG_SPECTRAL_INTERNAL_H

#include "kiln/linalg_spectral.h"
#include "runtime/runtime.h"

/*
 * Block size (reflectors per panel) of the blocked QR and of applying Q: 64 on GPUs, where
 * the compact-WY GEMMs dominate, 16 on CPUs (PoCL), where the panel's work-group barriers do.
 */
#define KILN__LSP_NB_GPU 64
#define KILN__LSP_NB_CPU 16
/*
 * eigh's tridiagonal reduction on GPUs under the built-in rule (its back-transformation keeps
 * KILN__LSP_NB_GPU): on the H200 at 4096 f64 the reduction took 157 ms with panels of 32
 * against 168 with 64 and 207 with 128, while applying the reflectors in blocks of 32 took 64
 * ms against 30 with 64 (docs/linalg.md).
 */
#define KILN__LSP_EIGH_NB_GPU 32
/*
 * QR's outer block on GPUs where the large GEMM kernel runs (f32/f64, the linalg family's gemm
 * left to the rule or 3, nb to the rule, device route, KILN__LSP_NB2_MIN rows and columns or
 * more): 64-column panels update only their 256-column block, then one block reflector 256
 * deep (its T assembled from the panels' T by small GEMMs) updates the trailing columns and
 * forms Q on the large kernel.
 */
#define KILN__LSP_NB2_GPU 256
/*
 * The two levels from this many rows and columns on: on the H200 (f64) QR with Q of 4096 took
 * 62.9 ms against 69.8 in one level, of 2048 24.5 against 23.9 (docs/linalg.md).
 */
#define KILN__LSP_NB2_MIN 4096

/*
 * Widest QR panel that one work-group (qr_panel) factors on GPUs; wider panels split in
 * halves recursively, joined by the compact-WY GEMMs. qr_panel walks the panel's columns
 * with strided loads once per column pair (about m w^2 / 2 of them for a w-column panel),
 * all in one compute unit; the recursion moves most of that into GEMMs over the device.
 * CPUs (PoCL) factor whole panels.
 */
#define KILN__LSP_LEAF_GPU 8

/*
 * Widest panel of qr_panel_grid (its QRG_W) and most rows each of its lanes holds (QRG_R).
 * Panels up to that width whose rows fit factor in one launch over up to pwg work-groups
 * (the linalg family's parameter, shared with LU's lu_panel_grid), without the recursion:
 * one exchange through global memory per column where qr_panel streams the panel through one
 * compute unit. Lanes aim at KILN__LSP_GRID_ROWS rows each: on the H200 16 rows in groups of
 * 512 lanes ran QR of 4096 (f64) at 92.9 ms, 32 at 99.6, 8 at 97.6 (docs/linalg.md), and the
 * kernel built for at most 16 (fewer registers) at 77.9; 132 groups of 512 lanes hold 16896
 * rows.
 */
#define KILN__LSP_GRID_W 64
#define KILN__LSP_GRID_R 16
#define KILN__LSP_GRID_ROWS 16
/* Its work-group size (8 row sets of 64 lanes), where the device allows it. */
#define KILN__LSP_GRID_LOCAL 512

/*
 * Test hook: nb > 0 forces the block size, own > 0 kiln's GEMM kernel instead of CLBlast,
 * leaf > 0 the panel leaf width; -1 restores the default of each. Process-wide; not for
 * concurrent use.
 */
void kiln__linalg_spectral_test_set(int nb, int own, int leaf);
/* Test hook: nb2 > 0 forces QR's outer block (a multiple of the block size; the outer products
 * take the GEMM the linalg family's gemm picks); -1 restores the rule. */
void kiln__linalg_spectral_test_nb2(int nb2);

/*
 * Test hook: parts > 0 forces the split of V^T C (the first product of applying a block
 * reflector) into that many row chunks on CLBlast, also on CPUs; 0 never splits; -1 the
 * built-in choice (GPUs only).
 */
void kiln__linalg_spectral_test_split(int parts);

/*
 * Smallest order whose tridiagonal eigenvectors come from MRRR (dstemr, O(n^2)) rather than
 * divide and conquer (dstedc: better orthogonality, but O(n^3) through the host BLAS) when
 * the host LAPACK is the reference one. On the H200's host (reference LAPACK) eigh of 1024
 * took 579 ms with dstedc against 248 ms with dstemr, although dstedc was the faster one on
 * the build machine. With OpenBLAS (threaded BLAS 3 under dstedc's merges) dstedc is used
 * at every order (lib/ops/linalg_eig.c, host_fast_blas).
 */
#define KILN__LSP_MRRR_MIN 512

/* Test hook: the MRRR threshold whatever the host LAPACK (< 0 restores the built-in rule). */
void kiln__linalg_spectral_test_mrrr(int min_n);
/* The hook's threshold, -1 when it is not set. */
int kiln__lsp_mrrr_min(void);

/*
 * Test hook: the host threads of the parallel MRRR (> 0 forces that many, also at small
 * orders; <= 0 restores the online CPUs, one per 64 rows at most).
 */
void kiln__linalg_spectral_test_mrrr_threads(int threads);

/* What one call works with (ctx->lock held while it is used). */
typedef struct kiln__lsp {
  const char *op;
  kiln_context *ctx;
  kiln_dtype dt;
  size_t ts;
  int clblast;
  uint64_t nb;
  uint64_t nb2;   /* outer block of the two-level QR (nb: one level) */
  uint32_t large2; /* and the large bit of its outer products */
  uint64_t leaf;  /* widest panel qr_panel factors without recursing */
  int host;       /* QR panels on the host (the linalg family's HOST route) */
  int tile;       /* every GEMM on kiln's gemm_tile (the linalg family's gemm = TILE or LARGE) */
  uint32_t large; /* KILN__LINALG_TILE_LARGE: large products on kiln's large GEMM kernel */
  uint32_t pwg;   /* QR panel work-groups (the linalg family's pwg; 1: no qr_panel_grid) */
  int nb_rule;    /* nb is the built-in rule's (no tuner value, no test hook) */
} kiln__lsp;

/*
 * What an op on a (its last two dimensions the matrix) works with, the route and block size
 * chosen by kiln__linalg_choose (lib/ops/linalg_internal.h); then takes ctx->lock (the caller
 * drops it).
 */
kiln__lsp kiln__lsp_begin(const char *op, kiln_context *ctx, const kiln_tensor *a);

/* A matrix inside a buffer: element offset and row stride. */
typedef struct kiln__lsp_mat {
  cl_mem mem;
  uint64_t off, ld;
} kiln__lsp_mat;

kiln__lsp_mat kiln__lsp_tmat(const kiln_tensor *t, uint64_t ld);

/*
 * Scratch of the blocked QR and of applying Q to up to ncols columns of m-row matrices; gx
 * (made on first use) is qr_panel_grid's exchange, gstamp the columns stamped on it so far.
 */
typedef struct kiln__lsp_ws {
  kiln_tensor *v, *g, *t, *w, *w2, *gx;
  kiln_tensor *tb, *y; /* two levels: the outer block's T (nb2 x nb2) and a product (nb2 x nb) */
  uint64_t gstamp;
  /* When the caller makes ts, kiln__lsp_geqrf on the device keeps there, from element
   * ts_off on (one nb x nb after the other), the T of each block it computes one for (every
   * block but a last one that reaches column n, n kept in ts_n), and kiln__lsp_orgqr/ormqr of
   * the same factors (ts_off set back to the same matrix's) take those instead of computing
   * them again (V^T V and qr_larft per block). With two levels (nb2 > nb) it keeps the T of
   * every outer block instead, nb2 x nb2 each, and ts_big is set. */
  kiln_tensor *ts;
  uint64_t ts_off, ts_n;
  int ts_big;
} kiln__lsp_ws;

kiln_status kiln__lsp_ws_make(const kiln__lsp *L, uint64_t m, uint64_t ncols, kiln__lsp_ws *ws);
void kiln__lsp_ws_release(kiln__lsp_ws *ws);

/*
 * Householder QR of one m x n matrix in place (LAPACK geqrf layout: R on and above the
 * diagonal, reflectors below), tau[min(m, n)] at tau.
 */
kiln_status kiln__lsp_geqrf(const kiln__lsp *L, kiln__lsp_mat a, uint64_t m, uint64_t n,
                            kiln__lsp_mat tau, kiln__lsp_ws *ws);

/*
 * C (m x ncols) = Q C (trans 0) or Q^T C (trans 1), Q = H_0 .. H_k-1 from the k reflectors
 * stored below the diagonal of the m-row matrix a (geqrf layout) with tau.
 */
kiln_status kiln__lsp_ormqr(const kiln__lsp *L, kiln__lsp_mat a, uint64_t m, uint64_t k,
                            kiln__lsp_mat tau, int trans, kiln__lsp_mat c, uint64_t ncols,
                            kiln__lsp_ws *ws);

/*
 * Q (m x ncols, ncols >= k) = H_0 .. H_k-1 I in place over q, which holds the identity (as
 * LAPACK's orgqr: each block updates only its own and the later columns).
 */
kiln_status kiln__lsp_orgqr(const kiln__lsp *L, kiln__lsp_mat a, uint64_t m, uint64_t k,
                            kiln__lsp_mat tau, kiln__lsp_mat q, uint64_t ncols, kiln__lsp_ws *ws);

/*
 * lstsq's device stage for the batch of m x n (m >= n) matrices a and m x nrhs right-hand
 * sides b: *qa the geqrf factors of every matrix (R on and above the diagonal), *qb Q^T B
 * (Q^H B for complex). Both new scratch tensors the caller releases; NULL on failure.
 */
kiln_status kiln__lsp_lstsq_qr(const kiln__lsp *L, const kiln_tensor *a, const kiln_tensor *b,
                               uint64_t m, uint64_t n, uint64_t nrhs, uint64_t batch,
                               kiln_tensor **qa, kiln_tensor **qb);

/*
 * C (m x n) = alpha op(A) op(B) + beta C over row-major views (the family's GEMM: CLBlast
 * above kiln__linalg_own_gemm_max() multiply-adds, kiln's gemm_s below it or without CLBlast).
 */
kiln_status kiln__lsp_gemm(const kiln__lsp *L, int ta, int tb, uint64_t m, uint64_t n, uint64_t k,
                           double alpha, kiln__lsp_mat a, kiln__lsp_mat b, double beta,
                           kiln__lsp_mat c);

/* Validation shared by the family's calls (f32/f64; _complex also c64/c128). */
kiln_status kiln__lsp_check_mat(const char *op, kiln_context *ctx, const kiln_tensor *t,
                                const char *name);
kiln_status kiln__lsp_check_mat_complex(const char *op, kiln_context *ctx, const kiln_tensor *t,
                                        const char *name);

/*
 * kiln_linalg_lstsq, kiln_linalg_eigh and kiln_linalg_svd of c64/c128 a
 * (lib/ops/linalg_spectral_complex.c); ctx checked, a a valid tensor.
 */
kiln_status kiln__lsp_lstsq_complex(kiln_context *ctx, const kiln_tensor *a, const kiln_tensor *b,
                                    double rcond, kiln_tensor **x, kiln_tensor **residuals,
                                    kiln_tensor **rank, kiln_tensor **sv);
kiln_status kiln__lsp_eigh_complex(kiln_context *ctx, const kiln_tensor *a, kiln_uplo uplo,
                                   kiln_tensor **w, kiln_tensor **v);
kiln_status kiln__lsp_svd_complex(kiln_context *ctx, const kiln_tensor *a, int full_matrices,
                                  kiln_tensor **u, kiln_tensor **s, kiln_tensor **vt);
kiln_status kiln__lsp_pinv_complex(kiln_context *ctx, const kiln_tensor *a, double rcond,
                                   kiln_tensor **out);
kiln_status kiln__lsp_rank_complex(kiln_context *ctx, const kiln_tensor *a, double tol,
                                   kiln_tensor **out);
/* kiln_linalg_matrix_norm (cond 0) and kiln_linalg_cond (cond 1) of complex a, under op. */
kiln_status kiln__lsp_norm_complex(const char *op, kiln_context *ctx, const kiln_tensor *a,
                                   kiln_mnorm p, int cond, kiln_tensor **out);

/* The real norms' arithmetic (lib/ops/linalg_eig.c): a norm of the m x n row-major x that
 * needs no singular values (x the moduli, for complex matrices), and one from descending
 * singular values s[k]. */
double kiln__lsp_norm_direct(const double *x, uint64_t m, uint64_t n, kiln_mnorm p);
double kiln__lsp_norm_svals(const double *s, uint64_t k, kiln_mnorm p);
kiln_status kiln__lsp_check_square(const char *op, const kiln_tensor *t, const char *name);
uint64_t kiln__lsp_batch(const kiln_tensor *a);
/* The batch dimensions of a followed by the ntail dimensions tail. */
kiln__shape kiln__lsp_shape(const kiln_tensor *a, const int64_t *tail, size_t ntail);

/* Up to six results of one call, prepared under the lock and discarded on failure. */
typedef struct kiln__lsp_outs {
  kiln_tensor **p[6];
  int made[6];
  size_t n;
} kiln__lsp_outs;

kiln_status kiln__lsp_out(kiln__lsp_outs *o, const char *op, kiln_context *ctx, kiln_dtype dt,
                          const kiln__shape *s, kiln_tensor **out);
/* Results disjoint from each other and from the inputs (NULL inputs skipped). */
kiln_status kiln__lsp_outs_check(kiln__lsp_outs *o, const char *op, const kiln_tensor *in1,
                                 const kiln_tensor *in2);
kiln_status kiln__lsp_outs_end(kiln__lsp_outs *o, kiln_status s);

/* Host copies in double of a tensor's elements, and back (ctx->lock held; both wait). */
kiln_status kiln__lsp_download(const kiln__lsp *L, const kiln_tensor *t, double **out);
kiln_status kiln__lsp_upload(const kiln__lsp *L, kiln_tensor *t, const double *v);

/*
 * eigh's tridiagonal stage on the device (lib/ops/linalg_tridiag.c) from this order on, on
 * GPUs with fp64: bisection, one representation per group of KILN__TD_GROUP eigenvalues and
 * the twisted factorization per vector, checked by ||Z^T Z - I|| and the residuals, the host
 * route wherever that fails. On the H200 it replaced a host MRRR stage of about 0.47 s at 4096
 * (docs/linalg.md).
 */
#define KILN__LSP_TDEV_MIN 256
#define KILN__TD_GROUP 32

/* The device stage's scratch, kept across the matrices of a batch. */
typedef struct kiln__lsp_tdev kiln__lsp_tdev;

/*
 * Eigenvalues (ascending, into w[n]) of the tridiagonal (d[n], e[n-1]; host f64) on the
 * device; with z.mem, also Z in L->dt at z (n x n row-major, column k the unit vector of
 * w[k]). *done = 0
 * (nothing usable: n < 2, no fp64, non-finite or zero T, too many close eigenvalues, or the
 * checks failed) leaves the host route to the caller; w may then hold anything. *ws is made
 * on first use; kiln__lsp_tdev_release frees it. Statuses: device and host-memory failures.
 */
kiln_status kiln__lsp_tridiag_device(const kiln__lsp *L, kiln__lsp_tdev **ws, uint64_t n,
                                     const double *d, const double *e, double *w, kiln__lsp_mat z,
                                     int *done);
void kiln__lsp_tdev_release(kiln__lsp_tdev *ws);

/*
 * Test hook: mode 1 runs eigh's tridiagonal stage on the device at every order and on any
 * device, 0 never, -1 the built-in rule; group 4 .. 32 sets the eigenvalues per representation
 * (anything else: KILN__TD_GROUP); flag_gap > 0 sends to the host every eigenvalue whose gap
 * is below that many mean gaps (the mixed route at will), < 0 rejects every matrix after the
 * checks (the host route after the device's).
 */
void kiln__linalg_spectral_test_tdev(int mode, int group, double flag_gap);
/* Test hook: how many matrices' vectors the device stage has given (process-wide, never reset). */
unsigned kiln__linalg_spectral_test_tdev_accepted(void);
/* The hook's mode, -1 when it is not set. */
int kiln__lsp_tdev_hook(void);

/* ||Z^T Z - I|| / (n eps) past which eigh redoes a host-route matrix by the next routine
 * (LAPACK's test threshold for its eigensolvers, as svd's check). */
#define KILN__LSP_ORTH_REDO 50.0
/* Test hook: bound > 0 replaces KILN__LSP_ORTH_REDO (a tiny one redoes every host-route
 * matrix with vectors), <= 0 restores it. */
void kiln__linalg_spectral_test_eigh_check(double bound);
/* Test hook: how many times eigh's check has redone a matrix (process-wide, never reset). */
unsigned kiln__linalg_spectral_test_eigh_redone(void);
/* Test hook: eigh's tridiagonal reduction by the persistent panel kernel (tr_panel): mode 1
 * always (one work-group on CPU devices), 0 never (the per-column kernels), -1 the built-in
 * rule (GPUs). Process-wide. */
void kiln__linalg_spectral_test_tr_panel(int mode);
/* Test hook: how many matrices svd's bidiagonal SVD took on the device (the Golub-Kahan matrix
 * through eigh's tridiagonal stage; process-wide, never reset). */
unsigned kiln__linalg_spectral_test_gk_device(void);
/* Test hook: tr_panel's launches so far (process-wide, never reset). */
unsigned kiln__linalg_spectral_test_tr_panel_launches(void);

#endif
