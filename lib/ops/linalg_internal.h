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
 * Cholesky's built-in panel width on GPUs for real dtypes where chol_inv runs, when neither the
 * tuner nor look-ahead sets one: panels of 768 columns, each factored as 64-column steps
 * (chol_inv at the panel's first, then chol_col, which updates the panel's later columns and
 * factors the next diagonal block), and one SYRK 768 deep per panel on kiln's large GEMM
 * kernel (f32/f64 where it runs). H200, f64 4096: 4.38 ms against 4.99 with 256-column
 * panels, 4.80 with 512 and 4.70 with 1024 (docs/perf-data/h200-2026-12-04-s21/chol8/).
 */
#define KILN__LINALG_CHOL_NB_GPU 768
/*
 * The device route LU's outer block on GPUs where Cholesky's two levels apply, for orders of
 * at least twice it: steps of KILN__LINALG_NB_GPU columns whose updates stay inside the outer
 * block, then the block's interchanges, its TRSM and one update that deep on kiln's large GEMM
 * kernel (rank-64 updates on gemm_tile ran at 6.5 TFLOP/s on an H200). The rule is off (0)
 * until a GPU run has timed it against one level (bench/h200/s25b.sh, written in session 25,
 * when no GPU was lent for it); KILN_DEBUG_LU_NB2 (a width, 0 one level) or the test hook
 * (kiln__linalg_test_lu_nb2) turns it on.
 */
#define KILN__LINALG_LU_NB2_GPU 0
/* Orders up to which that rule takes the whole matrix as one panel (no SYRK: chol_col's
 * updates alone): H200, f64 1024, 0.86 ms against 0.93 in 768-column panels (chol8/). */
#define KILN__LINALG_CHOL_ONE_PANEL_GPU 1024
/*
 * The blocked triangular solves' outer block where the large GEMM kernel takes their updates (the
 * GPU rule, or the linalg family's gemm=3), with at least this many right-hand sides and twice
 * as many rows: 64-row steps inside each block of this many rows, then one update this deep of
 * the rows below (inv's solves with n right-hand sides).
 */
#define KILN__LINALG_SOLVE_NB_GPU 256

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

/*
 * Where the panels of the blocked LU, Cholesky and QR are factored (the linalg tuner family's
 * "route" parameter): RULE is the built-in choice (HOST where kiln has LAPACKE, else DEVICE);
 * DEVICE runs kiln's panel kernels (lu_panel, chol_small/chol_panel, qr_panel); HOST is the
 * hybrid scheme of MAGMA: each panel goes to the host, LAPACKE factors it (dgetrf, dpotrf,
 * dgeqrf + dlarft) and it comes back, while the device keeps the trailing updates (GEMM, and
 * the triangular solves as GEMMs with the inverse of the diagonal block that the host forms
 * with dtrtri), with look-ahead: the next panel's columns are updated first and read back
 * while the rest of the trailing update runs.
 */
enum kiln__linalg_route {
  KILN__LINALG_ROUTE_RULE = 0,
  KILN__LINALG_ROUTE_DEVICE = 1,
  KILN__LINALG_ROUTE_HOST = 2,
};

/*
 * Which GEMM the blocked factorizations' updates run on (the linalg tuner family's "gemm"
 * parameter): RULE the built-in choice (KILN__LINALG_RULE_GEMM_GPU/_CPU), CLBLAST CLBlast's GEMM
 * and SYRK (large products; small ones kiln's gemm_acc, KILN__LINALG_OWN_GEMM_MAX), TILE kiln's
 * gemm_tile for every product: 64 x 64 tiles read in place, where CLBlast's large-matrix GEMM
 * copies every view (an offset or a leading dimension: every trailing submatrix) into padded
 * temporaries, C in and out, and its SYRK allocates its temporaries on each call.
 */
enum kiln__linalg_gemm {
  KILN__LINALG_GEMM_RULE = 0,
  KILN__LINALG_GEMM_CLBLAST = 1,
  KILN__LINALG_GEMM_TILE = 2,
  /* TILE, with the products whose m and n are both at least KILN__LINALG_LARGE_MIN on kiln's
   * large GEMM kernel (f32/f64 where kiln__gemm_large_ok: the FP64 tensor cores on NVIDIA) */
  KILN__LINALG_GEMM_LARGE = 3,
};
#define KILN__LINALG_LARGE_MIN 256
/*
 * The rule's GEMM: on GPUs gemm_tile (H200, 2026-12-02, f64 4096: Cholesky 23 ms against 39
 * on CLBlast, solve 149 against 161, LU 140 against 143, QR 411 at nb 64 against 472 on
 * CLBlast at nb 128), on CPUs CLBlast.
 */
#define KILN__LINALG_RULE_GEMM_GPU KILN__LINALG_GEMM_TILE
#define KILN__LINALG_RULE_GEMM_CPU KILN__LINALG_GEMM_CLBLAST

/*
 * Look-ahead of the device route's LU and Cholesky (the linalg tuner family's "ahead"
 * parameter): 1 off, 2 on: each step updates the next panel's columns first, then that panel
 * is factored on a second queue (kiln__lh_queue2) while the context's queue runs the rest of
 * the trailing update; 0 the rule, KILN__LINALG_RULE_AHEAD.
 */
#define KILN__LINALG_RULE_AHEAD 1

/* The linalg tuner family's parameters (nb 0: each op's built-in block size). */
typedef struct kiln__linalg_params {
  uint32_t route;
  uint32_t nb;
  uint32_t gemm;  /* enum kiln__linalg_gemm */
  uint32_t ahead; /* 0 rule, 1 off, 2 on */
  uint32_t
      leaf; /* GPU panel leaf width of LU and QR; 0: KILN__LINALG_LEAF_GPU, KILN__LSP_LEAF_GPU */
  uint32_t pwg; /* LU panel work-groups; 0: KILN__LINALG_RULE_PWG_GPU / _CPU */
} kiln__linalg_params;

/*
 * Work-groups of the device route's LU panel (the linalg family's "pwg" parameter): 1 is
 * lu_panel, one work-group streaming the panel (with the leaf recursion); k > 1 is
 * lu_panel_grid over at most k work-groups (never more than the device's compute units, so
 * all of them are resident at once: they wait for each other every column), each row of the
 * panel held in registers; panels wider than its KILN__LINALG_GRID_W columns recurse (leaf
 * KILN__LINALG_GRID_W). CPUs keep one work-group: PoCL's threads take work-groups in chunks,
 * so two groups of one launch may run one after the other on the same thread and wait
 * forever. Complex rows hold KILN__LINALG_GRID_W_COMPLEX columns (two registers an element).
 * On the H200 (2026-12-02, f64, docs/linalg.md) LU of 4096 took 35.4 ms with lu_panel_grid over
 * all 132 compute units (35.8 over 32, 35.4 over 64) against 134 on lu_panel.
 */
#define KILN__LINALG_RULE_PWG_GPU 1024
#define KILN__LINALG_RULE_PWG_CPU 1
#define KILN__LINALG_GRID_W 64
#define KILN__LINALG_GRID_W_COMPLEX 32

/* laswp's interchanges per launch and columns per work-group (LASWP_K, LASWP_CW in
 * cl_kernels/linalg.cl) */
#define KILN__LASWP_K 64
#define KILN__LASWP_CW 16

/*
 * The most work-groups the grid panel kernels (lu_panel_grid, qr_panel_grid) take for pwg on
 * ctx's device: 0 where they do not run (pwg <= 1, a device of one compute unit unless
 * kiln__linalg_test_pwg is set), 1 on CPUs, else min(pwg, compute units), so that every group
 * is resident at once. (qr_panel_grid is real only: its caller checks the dtype.)
 */
uint64_t kiln__linalg_grid_groups(const kiln_context *ctx, uint32_t pwg);

/* Copies the rows x cols block of ts-byte elements at element soff of src (row stride lds) to
 * doff of dst (row stride ldd), ctx->lock held; failures name op and clEnqueueCopyBufferRect. */
kiln_status kiln__linalg_copy_rect(const char *op, kiln_context *ctx, size_t ts, cl_mem src,
                                   uint64_t soff, uint64_t lds, cl_mem dst, uint64_t doff,
                                   uint64_t ldd, uint64_t rows, uint64_t cols);

/* Zeroes every byte of t (ctx->lock held); failures name op and clEnqueueFillBuffer. */
kiln_status kiln__linalg_zero(const char *op, kiln_context *ctx, kiln_tensor *t);

/*
 * Built-in block sizes of the host route on GPUs: the host's panel work grows with nb (LU
 * m nb^2, QR 2 m nb^2), the device's GEMM efficiency with it. Cholesky's host work is only
 * the diagonal block (reference dpotrf + dtrtri here: 0.04 ms at 64, 0.26 ms at 128, 3 ms
 * at 256), so its steps' round trips decide. CPUs (PoCL) factor the whole
 * matrix in one panel (the host is the device there), except QR, which keeps blocks so that
 * forming Q stays blocked.
 */
#define KILN__LINALG_HOST_NB_LU 32
#define KILN__LINALG_HOST_NB_CHOL 64
#define KILN__LINALG_HOST_NB_QR 32

/*
 * Widest host QR panel: LAPACK's dgeqrf factors panels narrower than its crossover (128) with
 * the unblocked dgeqr2, whose level-2 sweeps fall out of the cache from 64 columns of 4096
 * rows (reference LAPACK on the build machine: 1.7 ms for 4096 x 32, 14 ms for 4096 x 64).
 * A larger nb from the tuner (timed on LU) is capped here for QR.
 */
#define KILN__LINALG_HOST_NB_QR_MAX 32

/*
 * The route and block size for an op on matrices of `elements` (rows * cols) of dtype dt:
 * the test hook, else the tuner's linalg family (override, stored, default). Also puts the
 * tuned CLBlast GEMM parameters in force. Call it before taking ctx->lock.
 */
void kiln__linalg_choose(const char *op, kiln_context *ctx, kiln_dtype dt, uint64_t elements,
                         kiln__linalg_params *p);

/*
 * What the rule (route 0) picks on GPUs per factorization, 1 the host route, 0 the device
 * route, for matrices of more than KILN__LINALG_RULE_DEVICE_MAX elements (up to that many take
 * the device route). CPUs always take the host route (the host is the device there). On the
 * H200 with Debian's reference LAPACK on its host (2026-12-02, f64, docs/linalg.md) the
 * device route won LU (153 ms against 177-206 at 4096, 14 against 18-25 at 1024), Cholesky
 * (45 against 46-222) and QR (300 against 374-438); solve and inverse were mixed within the
 * run's noise. A faster host LAPACK (OpenBLAS) can change that: the tuner's linalg family
 * times both routes.
 */
#define KILN__LINALG_RULE_HOST_LU 0
#define KILN__LINALG_RULE_HOST_CHOL 0
#define KILN__LINALG_RULE_HOST_QR 0
#define KILN__LINALG_RULE_DEVICE_MAX 0

/*
 * 1 when the panels of a factorization of matrices of `elements` take the host route: kiln
 * has LAPACKE, and route is HOST, or RULE with rule_host (one of KILN__LINALG_RULE_HOST_*)
 * set or a CPU device.
 */
int kiln__linalg_is_host(const kiln_context *ctx, uint32_t route, int rule_host, uint64_t elements);

/* The block size kiln uses on a device (the hook's override, else the built-in default). */
unsigned kiln__linalg_block(const kiln_device_info *info);

/*
 * GEMMs of at most this many multiply-adds (m * n * k) run on kiln's simple kernels
 * (gemm_acc, gemm_s) rather than CLBlast: the panels' recursion and the solves' block steps
 * make thousands of small calls (QR of 4096: about 3000), and on the H200 each step of the
 * factorizations cost some 0.5-1 ms whatever its flops, which CLBlast's per-call work
 * (kernel objects, padding launches) is the likeliest share of. 2^22 covers 4096 x 32 x 32.
 */
#define KILN__LINALG_OWN_GEMM_MAX (1u << 22)

/* The bound in force (the test hook's, else KILN__LINALG_OWN_GEMM_MAX). */
uint64_t kiln__linalg_own_gemm_max(void);
/* Test hook: the bound (0: every GEMM on CLBlast); < 0 restores the default. */
void kiln__linalg_test_own_gemm_max(long long v);

/* The autotuner's linalg family (lib/ops/linalg_tune.c), timed on LU. */
struct kiln__tune_family;
extern const struct kiln__tune_family kiln__linalg_tune;

/*
 * Test hook: nb > 0 forces the block size, small_max >= 0 the small-matrix bound (0: every
 * matrix takes the blocked path), own > 0 kiln's own kernels instead of CLBlast, leaf > 0
 * the LU panel leaf width (KILN__LINALG_LEAF_GPU); -1 keeps (restores) the default of each.
 * Process-wide; not for concurrent use.
 */
void kiln__linalg_test_set(int nb, int small_max, int own, int leaf);

/*
 * Test hook: route >= 0 forces the panel route (enum kiln__linalg_route) of LU, Cholesky and
 * QR; -1 restores the tuner's choice. The block size comes from kiln__linalg_test_set (LU,
 * Cholesky) and kiln__linalg_spectral_test_set (QR).
 */
void kiln__linalg_test_route(int route);

/*
 * Test hook: makes CLBlast run every dt GEMM of ctx's device through its indirect kernel
 * (the one that pads views into a temporary, as large GEMMs on GPUs do), so that
 * kiln__lh_gemm's temporary buffer is used on a CPU too. Process-wide and not undone;
 * KILN_ERR_UNSUPPORTED without CLBlast.
 */
kiln_status kiln__linalg_test_gemm_indirect(kiln_context *ctx, kiln_dtype dt);

/*
 * C = alpha A B (overwrite) or C += alpha A B on kiln's gemm_tile (cl_kernels/linalg.cl) over
 * strided views (element (i, j) of A at aoff + i ars + j acs, and so on), for batch products
 * whose operands lie az, bz, cz elements apart; tri_part 1 writes only j <= i of C, 2 only
 * j >= i. The caller holds ctx->lock.
 */
kiln_status kiln__linalg_tile_gemm(const char *op, kiln_context *ctx, kiln_dtype dt, uint64_t m,
                                   uint64_t n, uint64_t k, double alpha, cl_mem a, uint64_t aoff,
                                   uint64_t ars, uint64_t acs, cl_mem b, uint64_t boff,
                                   uint64_t brs, uint64_t bcs, int overwrite, cl_mem c,
                                   uint64_t coff, uint64_t crs, uint64_t ccs, uint32_t tri_part,
                                   uint64_t batch, uint64_t az, uint64_t bz, uint64_t cz);

/* A T-typed scalar kernel argument from a real value: f32/f64 as kiln__args_float, complex
 * dtypes v + 0i (float2/double2). */
struct kiln__args;
void kiln__linalg_args_scalar(struct kiln__args *a, kiln_dtype dt, double v);

/*
 * Bits of kiln__linalg_tile_gemm's tri_part (above the triangle's 1 or 2) that conjugate A's or
 * B's elements as they are read, for the conjugate transposes of complex dtypes (real dtypes
 * ignore them).
 */
#define KILN__LINALG_TILE_CONJ_A 4u
#define KILN__LINALG_TILE_CONJ_B 8u
/* tri_part bit: the product may run on kiln's large GEMM kernel (KILN__LINALG_GEMM_LARGE) when
 * it is one real product of at least KILN__LINALG_LARGE_MIN rows and columns whose views are
 * plain or transposed row-major matrices. */
#define KILN__LINALG_TILE_LARGE 16u

/*
 * The GEMM of the updates (enum kiln__linalg_gemm, RULE resolved for ctx's device) from the
 * tuner's gemm parameter, and the tri_part bits that selects for dt (KILN__LINALG_TILE_LARGE
 * or 0).
 */
uint32_t kiln__linalg_gemm_of(const kiln_context *ctx, uint32_t gemm);
uint32_t kiln__linalg_large_bit(const kiln_context *ctx, kiln_dtype dt, uint32_t gemm);
/* Test hook: v >= 0 replaces KILN__LINALG_LARGE_MIN; -1 restores it. */
void kiln__linalg_test_large_min(long long v);
/* KILN__LINALG_LARGE_MIN, or the test hook's value. */
uint64_t kiln__linalg_large_min(void);
/* Test hook: v > 0 replaces KILN__LINALG_SOLVE_NB_GPU (a multiple of 64); -1 restores it. */
void kiln__linalg_test_solve_nb(long long v);
/* Test hook: v >= 0 sets the device route LU's outer block (0: one level; any device, any
 * block size); -1 restores the rule (KILN__LINALG_LU_NB2_GPU, KILN_DEBUG_LU_NB2). */
void kiln__linalg_test_lu_nb2(long long v);
/* Test hook: LU factorizations that took the two levels since the process started. */
unsigned kiln__linalg_test_lu2_runs(void);

/* Test hook: gemm >= 0 forces the GEMM (enum kiln__linalg_gemm) of LU, Cholesky and their
 * solves; -1 restores the tuner's choice. */
void kiln__linalg_test_gemm(int gemm);
/* Test hook: ahead >= 0 forces the look-ahead parameter (0 rule, 1 off, 2 on); -1 restores. */
void kiln__linalg_test_ahead(int ahead);
/* Test hook: pwg > 0 forces the LU and QR panels' work-groups (the "pwg" parameter; on CPUs
 * the grid kernels then run as one work-group); -1 restores the tuner's choice. */
void kiln__linalg_test_pwg(int pwg);
/* Test hook: complex products run on the real large GEMM kernel since the process started. */
unsigned kiln__linalg_test_cplx_large(void);
/* Test hook: on > 0 lets complex products take the real large kernel (as
 * KILN_DEBUG_CPLX_LARGE=1), 0 keeps them off it; -1 restores the environment's choice. */
void kiln__linalg_test_cplx_large_on(int on);
/* Test hooks: lu_panel_grid's and qr_panel_grid's launches since the process started. */
unsigned kiln__linalg_test_grid_launches(void);
unsigned kiln__linalg_test_qr_grid_launches(void);
/* Test hook: chol_col's launches with groups for later column tiles past the first (its
 * (row tile, column tile) groups that wait for two row tiles) since the process started. */
unsigned kiln__linalg_test_chol_col_cross(void);

/* Test hook: GEMMs run with kiln's CLBlast temporary buffer since the process started. */
uint64_t kiln__linalg_test_temp_gemms(void);
int kiln__linalg_hook_route(void);

#endif
