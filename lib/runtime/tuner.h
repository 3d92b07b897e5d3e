/*
 * The autotuner's runtime side: the description of a tuned family, lookups for the
 * ops, tuning (for `kiln tune`, kiln_tune_run and mode ONLINE) and the
 * per-context state (mode, loaded tables, overrides). The public API is
 * include/kiln/tune.h; the file format is lib/runtime/tune_file.h.
 *
 * A family plugs in by pointing its struct kiln__family (runtime/family.h)
 * at a struct kiln__tune_family: its parameter struct and parameters (name,
 * offset, range, candidate values), layouts, defaults, and a problem to time
 * (setup, run, bytes moved). Its op then calls kiln__tune_lookup() with its
 * key before launching.
 */
#ifndef KILN_RUNTIME_TUNER_H
#define KILN_RUNTIME_TUNER_H

#include <stdint.h>

#include "kiln/tune.h"
#include "runtime/runtime.h"

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

/* One tunable of a family: a 4- or 8-byte field of the family's parameter struct. */
struct kiln__tune_param {
  const char *name;
  size_t offset, size;
  uint64_t min, max;
  const uint64_t *full; /* candidates of `kiln tune` */
  size_t nfull;
  const uint64_t *quick; /* the small set: online tuning, --quick, CI */
  size_t nquick;
  int local_size;   /* a work-group size: candidates above the kernels' limit are dropped */
  unsigned layouts; /* layouts whose kernels it changes (bits of kiln__tune_layout); 0: all */
  int pow2;         /* only powers of two are valid (vector widths) */
};

struct kiln__tune_family;

/* One timed problem: inputs made once, the output reused by every run. */
struct kiln__tune_problem {
  kiln_context *ctx;
  const struct kiln__tune_family *f;
  int fam; /* the tuner's index of f */
  kiln_dtype dtype;
  enum kiln__tune_layout layout;
  int k;
  uint64_t n; /* 2^k */
  int64_t shape[2];
  size_t ndim;
  int64_t axis;
  kiln_tensor *in[2];
  kiln_tensor *out;
  char desc[64]; /* the timed shape for reports, when setup describes it ("" otherwise) */
};

/*
 * What the autotuner knows of a tuned family (the `tune` member of its
 * struct kiln__family): its parameters, layouts and defaults, and a problem
 * to time. run re-enters the family's op with explicit parameters; lookups
 * the op makes during a run get the candidate being timed.
 */
struct kiln__tune_family {
  const char *name, *description;
  const char *part_of;         /* a request to tune that family tunes this one too; NULL: none */
  const char *source;          /* embedded source of the timed op's kernels; NULL: none */
  const char *kernel_prefix;   /* names of the timed op's kernels: they bound the work-group size */
  size_t local_bytes_per_item; /* local memory a work-item of its cooperative kernels needs */
  size_t params_size;          /* at most KILN__TUNE_PARAMS_MAX */
  const struct kiln__tune_param *params;
  size_t nparams;
  unsigned layouts; /* bit per enum kiln__tune_layout */
  const char *layout_names;
  int ninputs;
  int float_sum;  /* float outputs are sums: compared within the sum tolerance, else bitwise */
  int wall_clock; /* timed by wall time per call (host work included), else device time */
  int (*dtype_ok)(kiln_dtype dtype);
  /* the built-in parameters of (dtype, layout) for problems of 2^log2n to 2^(log2n+1) - 1
   * elements (the tuner's size bucket) */
  void (*defaults)(const kiln_context *ctx, kiln_dtype dtype, int layout, int log2n, void *params);
  kiln_status (*run)(struct kiln__tune_problem *pb, const void *params);
  double (*bytes)(const struct kiln__tune_problem *pb);
  /* Optional: */
  int (*available)(const kiln_context *ctx); /* there is a choice to make on ctx; NULL: always */
  const char *needs;                         /* what available() checks, for messages */
  /* makes the inputs; NULL: ninputs of pb->shape (kiln__tune_input) */
  kiln_status (*setup)(struct kiln__tune_problem *pb);
  /* output comparison with the reference; NULL: bitwise, or the sum tolerance (float_sum) */
  int (*match)(const struct kiln__tune_problem *pb, const void *ref, const void *got, size_t bytes);
  /* nonzero when a and b run the same code on pb: the candidate is not timed again */
  int (*same_run)(const struct kiln__tune_problem *pb, const void *a, const void *b);
  const uint64_t *sizes; /* kiln_tune_run's sizes when the request has none; NULL: defaults */
  size_t nsizes;
};

/* Largest parameter struct of a family. */
#define KILN__TUNE_PARAMS_MAX 64

/*
 * Deterministic tuning input shaped [ndim, shape]: floats are multiples of
 * 1/16 in [-2, 2] without zeros, so sums of realistic lines are exact in any
 * order. Statuses as kiln_tensor_create and kiln_tensor_upload,
 * KILN_ERR_HOST_MEMORY.
 */
kiln_status kiln__tune_input(kiln_context *ctx, kiln_dtype dt, size_t ndim, const int64_t *shape,
                             uint32_t seed, kiln_tensor **out);

/* Bytes an op with one input of pb->n elements and output pb->out moves. */
double kiln__tune_in_out_bytes(const struct kiln__tune_problem *pb);

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
void kiln__tune_lookup(kiln_context *ctx, const struct kiln__tune_family *fam, kiln_dtype dtype,
                       enum kiln__tune_layout layout, uint64_t elements, void *params);

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
