/*
 * The autotuner's runtime side: the table of tuned families, lookups for the
 * ops, tuning (for `kiln tune`, kiln_tune_run and mode ONLINE) and the
 * per-context state (mode, loaded tables, overrides). The public API is
 * include/kiln/tune.h; the file format is lib/runtime/tune_file.h.
 *
 * A new family plugs in with one row of the family table in tuner.c: its
 * parameter struct and parameters (name, offset, range, candidate values),
 * layouts, defaults, and a problem to time (setup, run, bytes moved). Its op
 * then calls kiln__tune_lookup() with its key before launching.
 */
#ifndef KILN_RUNTIME_TUNER_H
#define KILN_RUNTIME_TUNER_H

#include <stdint.h>

#include "kiln/tune.h"
#include "runtime/runtime.h"

enum kiln__tune_fam {
  KILN__TUNE_ELEMENTWISE,
  KILN__TUNE_REDUCE,
  KILN__TUNE_SCAN,
  KILN__TUNE_FFT,  /* the back end of KILN_FFT_BACKEND_AUTO plans */
  KILN__TUNE_GEMM, /* the route of GEMM, GEMV and SYRK: kiln's kernel or CLBlast */
  KILN__TUNE_NFAM
};

/* Bucket layouts. */
enum kiln__tune_layout {
  KILN__LAYOUT_FLAT,   /* elementwise over contiguous elements */
  KILN__LAYOUT_FULL,   /* the whole tensor is one line (outer = inner = 1) */
  KILN__LAYOUT_ROW,    /* lines along a contiguous axis (inner = 1) */
  KILN__LAYOUT_COL,    /* lines along a strided axis (inner > 1) */
  KILN__LAYOUT_POINTS, /* FFT: points of one transform (the product of its sizes) */
  KILN__LAYOUT_MNK,    /* GEMM: m*n*k of one matrix product */
  KILN__LAYOUT_N
};

/* The elementwise family's parameters (flat 1-D launches). */
struct kiln__ew_params {
  uint32_t wg_size;          /* local size; default ctx->wg_size */
  uint32_t items_per_thread; /* vectors per work-item (KILN_EW_ITEMS) */
  uint32_t vec_width;        /* elements per vector access (KILN_EW_VEC) */
};

/*
 * The fft family's parameter: the back end KILN_FFT_BACKEND_AUTO plans take,
 * a kiln_fft_backend value (1 clFFT, 2 VkFFT). Default: the built-in rule
 * (kiln__fft_default_backend). A choice that cannot do a plan's sizes is
 * never used for it (lib/ops/fft.c falls back to the other back end).
 */
struct kiln__fft_tune_params {
  uint32_t backend;
};

/* Values of the gemm family's parameter. */
enum kiln__gemm_route {
  KILN__GEMM_ROUTE_RULE = 0,    /* m*n*k <= KILN__GEMM_SMALL_MNK_DEFAULT: kiln's kernel (default) */
  KILN__GEMM_ROUTE_KILN = 1,    /* kiln's kernel (cl_kernels/gemm_small.cl) */
  KILN__GEMM_ROUTE_CLBLAST = 2, /* CLBlast */
};

/*
 * The gemm family's parameter: where GEMM, GEMV and SYRK calls of a bucket
 * run. It applies only while KILN_OPT_GEMM_SMALL_MNK was never set on the
 * context (an explicit threshold wins) and CLBlast is in use.
 */
struct kiln__gemm_tune_params {
  uint32_t route; /* an enum kiln__gemm_route */
};

/* Per-context state: created with the context (reads KILN_TUNE), freed with it. */
void kiln__tuner_create(kiln_context *ctx);
void kiln__tuner_destroy(kiln_context *ctx);

/* Mode (kiln_tune_mode) for KILN_OPT_TUNE_MODE; no locks taken, safe under ctx->lock. */
int64_t kiln__tuner_mode(const kiln_context *ctx);
void kiln__tuner_set_mode(kiln_context *ctx, int64_t mode);

/* The cache directory changed: tables are re-read at the next lookup. No locks taken. */
void kiln__tuner_dir_changed(kiln_context *ctx);

/*
 * Fills params (the family's parameter struct) for a problem of `elements`
 * input elements: overrides, stored results, online tuning, defaults, as
 * include/kiln/tune.h orders them. Never fails. Call it before taking
 * ctx->lock: in mode ONLINE it may tune the key, which holds ctx->lock for
 * the whole tuning (other threads' ops on the context wait meanwhile).
 */
void kiln__tune_lookup(kiln_context *ctx, enum kiln__tune_fam fam, kiln_dtype dtype,
                       enum kiln__tune_layout layout, uint64_t elements, void *params);

/*
 * The parameters of an elementwise flat launch over n elements of dtype (a
 * lookup), with the local size clamped to the device's limit.
 */
void kiln__tune_elementwise(kiln_context *ctx, kiln_dtype dtype, uint64_t n,
                            struct kiln__ew_params *p);

/* ---- test hooks (tests/tuner) ---- */

/*
 * Pretends ctx's device has this name and driver version for the tuning
 * files (NULL restores the real ones); loaded tables are dropped.
 */
void kiln__tune_set_identity(kiln_context *ctx, const char *device, const char *driver);

/*
 * Sabotages one candidate of a family in every later tuning: the candidate
 * whose parameter `param` equals value claims a 1 ns time and, with corrupt
 * 1, delivers a wrong result (its output is altered after the run: the first
 * float element moved by more than the whole output's 1-norm, so it is wrong
 * by every family's tolerance; integer outputs get bits of their first byte
 * flipped); with corrupt 2 its run fails with KILN_ERR_UNSUPPORTED, as a back
 * end that cannot do the problem would; with corrupt 3 only its first run
 * after the call fails (KILN_ERR_DEVICE_MEMORY), a failure that does not
 * repeat. family NULL removes the hook.
 * Process-wide; not thread-safe.
 */
void kiln__tune_test_sabotage(const char *family, const char *param, uint64_t value, int corrupt);

/* Candidate evaluations (runs of non-default candidates) since the process started. */
uint64_t kiln__tune_test_evaluations(void);

#endif
