/*
 * The BLAS family's choices (lib/ops/blas_route.c): where a GEMM, GEMV or
 * SYRK runs (kiln's kernel or CLBlast), its per-context state, and the
 * launch geometry of kiln's own kernels (cl_kernels/gemm_small.cl).
 */
#ifndef KILN_OPS_BLAS_ROUTE_H
#define KILN_OPS_BLAS_ROUTE_H

#include <stdint.h>

#include "runtime/runtime.h"

/* Values of the gemm tuner family's parameter. */
enum kiln__gemm_route {
  KILN__GEMM_ROUTE_RULE = 0,    /* m*n*k <= KILN__GEMM_SMALL_MNK_DEFAULT: kiln's kernel (default) */
  KILN__GEMM_ROUTE_KILN = 1,    /* kiln's kernel (cl_kernels/gemm_small.cl) */
  KILN__GEMM_ROUTE_CLBLAST = 2, /* CLBlast */
  KILN__GEMM_ROUTE_LARGE = 3, /* kiln's large-product kernel (cl_kernels/gemm_large.cl), f32/f64 */
};

/* Nonzero when ctx runs CLBlast: built with it and KILN_DEBUG_NO_CLBLAST unset. No locks. */
int kiln__blas_use_clblast(const kiln_context *ctx);

/*
 * The context's buffer for CLBlast's GEMM temporaries, at least bytes long (grown by doubling,
 * kept for the context's life); NULL when it cannot be had (the caller lets CLBlast allocate).
 * ctx->lock held.
 */
cl_mem kiln__blas_gemm_temp(kiln_context *ctx, size_t bytes);

/* The arguments that decide the size of CLBlast's GEMM temporaries, and the context's memo of
 * the last size asked (ctx->lock held): lookup returns nonzero with *bytes on a match. */
struct kiln__gemm_temp_key {
  size_t v[12]; /* dtype, ta, tb, m, n, k, aoff, lda, boff, ldb, coff, ldc */
};
int kiln__blas_temp_lookup(kiln_context *ctx, const struct kiln__gemm_temp_key *key, size_t *bytes);
void kiln__blas_temp_store(kiln_context *ctx, const struct kiln__gemm_temp_key *key, size_t bytes);

/*
 * The route (KILN__GEMM_ROUTE_KILN, _CLBLAST or _LARGE) of a call of m*n*k = size, route a
 * forced enum kiln__gemm_route value or -1 to choose: KILN_OPT_GEMM_SMALL_MNK once set on the
 * context (the caller said so) sends products up to it to kiln's small kernel and larger ones
 * to CLBlast, or to the large kernel where the gemm family's tuned or overridden route says so;
 * without the option, the gemm family of the autotuner for size's bucket, whose default is the
 * built-in rule (kiln__blas_rule_route). A route the context cannot run (CLBlast without it, the
 * large kernel for another dtype or a device too small for its work-group) falls back to the
 * rule. Call it before taking ctx->lock: the lookup may tune online.
 */
int kiln__blas_route(kiln_context *ctx, kiln_dtype dt, uint64_t size, int route);

/*
 * The large kernel's compile-time parameters (cl_kernels/gemm_large.cl): results per work-item
 * tm x tn, work-group wx x wy, k-step bk, local vector width vw, double buffering db, padding
 * pad. The fields are in the order of KILN__GEMM_LARGE_NAMES.
 */
struct kiln__gemm_large {
  uint32_t tm, tn, wx, wy, bk, vw, db, pad;
  uint32_t mma; /* f64 on the FP64 tensor cores: 1 m8n8k4 (NVIDIA, compute capability 8.0 on),
                 * 2 m16n8k4, 3 m16n8k8 (9.0 on) */
};
#define KILN__GEMM_LARGE_NPARAMS 9
#define KILN__GEMM_LARGE_NAMES "tm", "tn", "wx", "wy", "bk", "vw", "db", "pad", "mma"

/*
 * The parameters a large-kernel call of dt (batch products of m x n) runs with on ctx's
 * device: KILN_DEBUG_GEMM_LARGE ("tm=8 tn=8 ...", names not given keep the default's values)
 * when set, else the default set for dt, with 4x4 results per work-item where its tiles would
 * be fewer than the device's compute units. Fails (naming op) on a malformed or unrunnable
 * KILN_DEBUG_GEMM_LARGE. Where the large route runs gemm_cpu.cl (kiln__gemm_cpu_form), *p
 * is all zeros and the call succeeds: that kernel takes none of these.
 */
kiln_status kiln__gemm_large_params(const char *op, const kiln_context *ctx, kiln_dtype dt,
                                    uint64_t m, uint64_t n, uint64_t batch,
                                    struct kiln__gemm_large *p);

/*
 * Whether kiln's large GEMM kernel runs dt on ctx's device (f32, or f64 with fp64, and a
 * default parameter set the device takes, or a CPU device: kiln__gemm_cpu_form).
 */
int kiln__gemm_large_ok(const kiln_context *ctx, kiln_dtype dt);

/*
 * Whether the large route runs cl_kernels/gemm_cpu.cl (nonzero) rather than gemm_large.cl on
 * ctx's device: on devices that are not GPUs, unless KILN_DEBUG_GEMM_LARGE is set (even empty:
 * its parameters are gemm_large.cl's) or the test hook kiln__blas_test_large_form (ops/tuned.h)
 * says otherwise. No locks.
 */
int kiln__gemm_cpu_form(const kiln_context *ctx);

/*
 * gemm_cpu's shape on ctx's device for dt (f32 or f64), chosen by the width of the device's
 * vectors: {vector width, rows and columns of the block of C one work-item computes with op(B)
 * as stored, the same with op(B) transposed}. It is also the program variant of gemm_cpu
 * (its build options). kiln__gemm_cpu_block: the block's rows *r and columns *c for op(B)
 * transposed (tb) or not.
 */
const uint32_t *kiln__gemm_cpu_shape(const kiln_context *ctx, kiln_dtype dt);
void kiln__gemm_cpu_block(const kiln_context *ctx, kiln_dtype dt, int tb, uint32_t *r, uint32_t *c);

/* From this many rows and columns of C on, gemm_cpu runs a transposed B packed as stored
 * (lib/ops/blas.c, cpu_gemm): below them the dot form, which reads B where it lies. */
#define KILN__GEMM_CPU_PACK_M 32
#define KILN__GEMM_CPU_PACK_N 512

/*
 * C = alpha op(A) op(B) + beta C on the large kernel for batch products over raw buffers
 * (element offsets, row-major leading dimensions, the batch's element strides sa, sb, sc; ta/tb
 * 0 or 1), f32/f64, k > 0, for the linalg family's updates; tri 1 writes only j <= i of C and 2
 * only j >= i (tiles wholly outside are skipped). beta 0 never reads C. ctx->lock held.
 * KILN_ERR_UNSUPPORTED where the kernel does not run on the device (the caller takes another GEMM),
 * else the launch's status.
 */
kiln_status kiln__gemm_large_views(const char *op, kiln_context *ctx, kiln_dtype dt, int ta, int tb,
                                   uint64_t m, uint64_t n, uint64_t k, double alpha, cl_mem a,
                                   uint64_t aoff, uint64_t lda, cl_mem b, uint64_t boff,
                                   uint64_t ldb, double beta, cl_mem c, uint64_t coff, uint64_t ldc,
                                   uint32_t tri, uint64_t batch, uint64_t sa, uint64_t sb,
                                   uint64_t sc);

/*
 * Launch geometry the BLAS kernels are built for: the GEMM tile edge
 * (KILN__GEMM_TILE_DEFAULT while TILE^2 fits a work-group) and the dot
 * product's work-group size.
 */
size_t kiln__gemm_tile(const kiln_device_info *info);
size_t kiln__dot_wg(const kiln_device_info *info);

/*
 * gemm_tiled (f16/bf16): a WG x WG work-group, each work-item RB x RB
 * elements of C. Runs where the device takes WG^2 work-items per group
 * (kiln__gemm_tiled_ok); elsewhere f16/bf16 use gemm_small.
 */
struct kiln__tune_problem;
/*
 * The gemm tuner families' problem: [m, kk] x [kk, n] with m*n*kk = 2^k as square as powers of
 * two allow, inputs whose products sum exactly in any order; and the bytes it must move.
 */
kiln_status kiln__gemm_tune_setup(struct kiln__tune_problem *pb);
double kiln__gemm_tune_bytes(const struct kiln__tune_problem *pb);

/*
 * Puts the Xgemm parameters the xgemm tuner family chooses for dt on ctx's device in force in
 * CLBlast (lib/ops/blas_xgemm.c) before a CLBlast GEMM or SYRK: the tuned set, else the
 * device's default set (CLBlast's own database where kiln knows no better). dt other than
 * f32/f64, or no CLBlast: nothing to do. KILN_DEBUG_XGEMM, when set, wins over both on any
 * device (a bad value: KILN_ERR_INVALID_ARGUMENT). Statuses: those of
 * kiln__clblast_xgemm_override.
 * Call it before taking ctx->lock: the lookup may tune online.
 */
kiln_status kiln__blas_xgemm_prepare(const char *op, kiln_context *ctx, kiln_dtype dt);
/* The same for a product of m*n*k = mnk (the family has a set per size class); the plain
 * call above takes the large class. */
kiln_status kiln__blas_xgemm_prepare_mnk(const char *op, kiln_context *ctx, kiln_dtype dt,
                                         uint64_t mnk);

/* The xgemm family's sets: 1 to KILN__XGEMM_NSETS (0: CLBlast's own database). */
#define KILN__XGEMM_NSETS 11
/* The set kiln's defaults use on NVIDIA GPUs for dt (f32/f64), small (m*n*k < 2^35) or large
 * products; for the tests. */
uint32_t kiln__blas_xgemm_nvidia_set(kiln_dtype dt, int large);

/* Test hook: puts Xgemm set `set` (0..KILN__XGEMM_NSETS, 0 CLBlast's database) of dt in force on
 * ctx's device whatever the device type, as kiln__blas_xgemm_prepare would. */
kiln_status kiln__blas_xgemm_test_apply(kiln_context *ctx, kiln_dtype dt, uint32_t set);

#define KILN__GEMM_TILED_WG 16
#define KILN__GEMM_TILED_RB 8
int kiln__gemm_tiled_ok(const kiln_device_info *info);

#endif
