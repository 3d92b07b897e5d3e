/*
 * The workgroup autotuner.
 *
 * Experimental API (docs/stability.md): its shape may change in a minor
 * release, never in a patch release; it has no provider-table slots.
 *
 * Each tuned kernel family (elementwise, reduce, scan) has tunable launch
 * parameters (work-group size, work per item, one-pass vs two-pass strategy
 * ...) whose best values differ between devices by large factors; two more
 * families choose between libraries: "fft" the back end of
 * KILN_FFT_BACKEND_AUTO plans (parameter backend: 1 clFFT, 2 VkFFT, the
 * kiln_fft_backend values) and "gemm" where GEMM, GEMV and SYRK run
 * (parameter route: 0 the built-in m*n*k threshold, 1 kiln's kernel, 2
 * CLBlast). kiln keeps what it learns in one small text file per device
 * identity (normalised device name + driver version) under the cache
 * directory (include/kiln/cache.h): DIR/tuning/<device>--<driver>.txt.
 *
 * A family's results are keyed by dtype and a size bucket,
 * "<layout>.2^<k>": the layout of the problem (elementwise: "flat";
 * reductions and scans: "full" for a whole tensor to one value or line,
 * "row" along a contiguous last axis, "col" along a strided axis; fft:
 * "points"; gemm: "mnk") and k = floor(log2(size)), where the size is the
 * input's element count, the points of one transform (the product of a
 * plan's sizes) or m*n*k of one matrix product.
 *
 * Choices that are not the autotuner's win over it: an explicit back end in
 * kiln_fft_plan_create() or KILN_OPT_FFT_BACKEND / KILN_FFT_BACKEND other
 * than auto; KILN_OPT_GEMM_SMALL_MNK once set on the context. A stored or
 * overridden FFT back end that cannot do a plan's sizes is not used for it
 * (the other one is). docs/tuning.md has the details.
 *
 * Which parameters an operation uses, first match wins:
 *   1. an override set on the context (kiln_tune_override), in every mode;
 *   2. mode OFF: the built-in defaults;
 *   3. the file of this device and driver, else the newest file of the same
 *      device with another driver (logged at info level);
 *   4. mode ONLINE: the key is tuned now with the small candidate set and
 *      stored (once per key and context; only problems of 2^10 elements or
 *      more; never while the context is being profiled with
 *      kiln_profile_begin, nor from inside tuning);
 *   5. the built-in defaults.
 * The mode comes from KILN_TUNE (off, cached, online; default cached; ignored
 * in setuid programs) or KILN_OPT_TUNE_MODE. docs/tuning.md describes the
 * search, the validation of candidates, the file format and measurements.
 */
#ifndef KILN_TUNE_H
#define KILN_TUNE_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/context.h"
#include "kiln/dtype.h"
#include "kiln/export.h"
#include "kiln/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Tuning modes. Values are stable; KILN_OPT_TUNE_MODE takes them. */
typedef enum kiln_tune_mode {
  KILN_TUNE_OFF = 0,    /**< built-in defaults only (overrides still apply) */
  KILN_TUNE_CACHED = 1, /**< stored results where there are some, else defaults (the default) */
  KILN_TUNE_ONLINE = 2, /**< as CACHED, and a missing key is tuned on first use and stored */
} kiln_tune_mode;

/** Where the parameters of a lookup came from. */
typedef enum kiln_tune_source {
  KILN_TUNE_SOURCE_DEFAULT = 0,      /**< built-in defaults */
  KILN_TUNE_SOURCE_STORED = 1,       /**< the tuning file of this device and driver */
  KILN_TUNE_SOURCE_OTHER_DRIVER = 2, /**< the file of this device with another driver */
  KILN_TUNE_SOURCE_OVERRIDE = 3,     /**< kiln_tune_override() */
  KILN_TUNE_SOURCE_PACKAGED = 4,     /**< the tuning file installed with kiln for this device */
} kiln_tune_source;

/** A tuned family, as kiln_tune_family_get() describes it. Strings are static. */
typedef struct kiln_tune_family_desc {
  const char *name;        /**< "elementwise", "reduce", "scan", "fft", "gemm" */
  const char *description; /**< what is timed, one line */
  const char *params;      /**< its parameter names, space separated */
  const char *layouts;     /**< its bucket layouts, space separated ("flat", "full row col",
                                "points", "mnk") */
} kiln_tune_family_desc;

/**
 * Describes the index-th tuned family (0, 1, ... in a stable order).
 * @return KILN_OK; KILN_ERR_NOT_FOUND past the last family;
 *         KILN_ERR_INVALID_ARGUMENT for NULL out.
 */
KILN_API kiln_status kiln_tune_family_get(size_t index, kiln_tune_family_desc *out);

/**
 * Whether family has tuning keys of dtype in this build (*supported 1 or 0):
 * elementwise, reduce and scan follow what their timed op (add, sum,
 * cumsum) supports, gemm the dtypes its own kernel route builds, fft f32 and
 * f64. Independent of the device (f64 and c128 keys also need fp64).
 * @return KILN_OK; KILN_ERR_NOT_FOUND for an unknown family;
 *         KILN_ERR_INVALID_ARGUMENT for NULL arguments or an invalid dtype.
 */
KILN_API kiln_status kiln_tune_family_supports(const char *family, kiln_dtype dtype,
                                               int *supported);

/**
 * The bucket name of a problem: "<layout>.2^<k>", k = floor(log2(elements)).
 * @param family a family name; layout one of its layouts; elements >= 1: the
 *        input's elements, for "points" the points of one transform, for
 *        "mnk" m*n*k.
 * @return KILN_OK; KILN_ERR_NOT_FOUND for an unknown family or layout;
 *         KILN_ERR_INVALID_ARGUMENT for NULL arguments, elements 0, fewer
 *         than 4 elements for "row" or "col", or a buffer too small (16
 *         bytes always suffice).
 */
KILN_API kiln_status kiln_tune_bucket_name(const char *family, const char *layout,
                                           uint64_t elements, char *buf, size_t len);

/**
 * The parameters operations of ctx would use now for (family, dtype,
 * bucket), as "name=value ..." with every parameter of the family. Never
 * tunes (also not in mode ONLINE).
 * @param source may be NULL; receives where the values came from.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_NOT_FOUND (unknown
 *         family); KILN_ERR_INVALID_ARGUMENT (NULL family, bucket or buf,
 *         a malformed bucket or one of a layout the family lacks, an invalid
 *         dtype, or buf too small: 256 bytes always suffice).
 */
KILN_API kiln_status kiln_tune_params_get(kiln_context *ctx, const char *family, kiln_dtype dtype,
                                          const char *bucket, char *buf, size_t len,
                                          kiln_tune_source *source);

/**
 * Overrides parameters of one family for ctx, in every mode, until the
 * context is released or the override is removed. Not stored.
 *
 * @param bucket one bucket ("row.2^20"), or NULL for every bucket (a
 *        bucket-specific override wins over an all-buckets one).
 * @param params "name=value ..." (space separated): names of the family's
 *        parameters (kiln_tune_family_desc.params); parameters not named keep
 *        the values they would have without the override. NULL or "" removes
 *        the override of (family, dtype, bucket).
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_NOT_FOUND (unknown
 *         family); KILN_ERR_INVALID_ARGUMENT (NULL family, invalid dtype,
 *         malformed bucket, unknown or repeated parameter name, a value out of
 *         the parameter's range: the message names it); KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_tune_override(kiln_context *ctx, const char *family, kiln_dtype dtype,
                                        const char *bucket, const char *params);

/** What kiln_tune_run() tunes. Zero-initialise, then set what matters. */
typedef struct kiln_tune_request {
  const char *family;       /**< one family name, or NULL for all of them */
  const kiln_dtype *dtypes; /**< dtypes to tune; NULL: f32 only */
  size_t ndtypes;
  const uint64_t *sizes; /**< sizes as kiln_tune_bucket_name() counts them (each tuned at
                              2^floor(log2)); NULL: each family's defaults (elementwise, reduce,
                              scan: 2^12, 2^16, 2^20, 2^24; fft: every 2^k from 2^8 to 2^24;
                              gemm: every 2^k from 2^10 to 2^24) */
  size_t nsizes;
  const char *layouts; /**< space-separated layouts to tune; NULL: all of each family's */
  int reps;            /**< timed runs per candidate (the median counts); 0: 5 */
  int quick;           /**< nonzero: the small candidate set that online tuning uses */
  int no_store;        /**< nonzero: report only; neither the file nor the context changes */
} kiln_tune_request;

/** The outcome for one key. */
typedef struct kiln_tune_result {
  const char *family; /**< static */
  const char *layout; /**< static */
  kiln_dtype dtype;
  char bucket[32];
  uint64_t elements; /**< the timed problem's size, 2^k: input elements, FFT points or m*n*k */
  char shape[64];    /**< the timed problem, e.g. "[1024,1024] axis 1" */
  double bytes;      /**< bytes the timed operation must move: GB/s = bytes / ns */
  char default_params[256];
  char tuned_params[256];  /**< the winner (the defaults when nothing beat them by 5%) */
  uint64_t default_ns;     /**< median device time of the defaults (fft, gemm: wall time
                                of a call, waited for) */
  uint64_t tuned_ns;       /**< median device time of the winner (fft, gemm: wall time) */
  uint32_t candidates;     /**< candidates considered, the defaults included */
  uint32_t failed;         /**< candidates that failed now (build, launch or wrong result) */
  uint32_t skipped;        /**< candidates skipped: recorded as failed earlier */
  kiln_status status;      /**< KILN_OK, or why the key was not tuned (e.g. out of memory) */
} kiln_tune_result;

/** Progress events of kiln_tune_run(). */
typedef enum kiln_tune_event {
  KILN_TUNE_EVENT_KEY_START = 0, /**< a key begins: result has its identity */
  KILN_TUNE_EVENT_CANDIDATE = 1, /**< a candidate was timed, failed or skipped */
  KILN_TUNE_EVENT_KEY_DONE = 2,  /**< a key ended: result is complete */
} kiln_tune_event;

typedef struct kiln_tune_progress {
  kiln_tune_event event;
  size_t key_index, key_count;             /**< this key (0-based) of how many */
  size_t candidate_index, candidate_limit; /**< candidates evaluated so far for this key, and at most */
  const char *params;  /**< CANDIDATE: its parameters */
  uint64_t median_ns;  /**< CANDIDATE: its median device time (fft, gemm: wall time), 0 when
                            it did not run */
  const char *failed;  /**< CANDIDATE: "" when it ran correctly, else "build", "launch",
                            "memory", "unsupported" (e.g. a back end that cannot do the
                            problem), "wrong", "skipped" (failed before) */
  const kiln_tune_result *result; /**< the current key */
} kiln_tune_progress;

/** Progress callback: return nonzero to stop after the current candidate. */
typedef int (*kiln_tune_progress_fn)(const kiln_tune_progress *p, void *user);

/**
 * Tunes the requested keys on ctx's device: for each, times the built-in
 * defaults and the candidates (filtered by the device's and kernels'
 * work-group and local-memory limits; a coordinate search over the
 * parameters), each compiled through the kernel cache, warmed up, timed
 * with OpenCL profiling events (fft and gemm, choices between libraries: by
 * the wall time of a call, host work included; median of reps runs) and
 * checked against the defaults' output before it may win (bitwise; float
 * sums and matrix products within a rounding tolerance per element, FFTs
 * relative to the signal's norm). A candidate that fails is run once more;
 * failures that repeat are recorded and never retried. Results are merged
 * into the device's tuning file and used by ctx at once. Uses
 * kiln_profile_begin/end on ctx itself: do not call it while profiling.
 *
 * Threads: each key holds ctx while it is tuned, so other threads'
 * operations on ctx wait until the key is done (they run between keys); fn
 * runs with ctx held and must not wait for another thread that uses ctx.
 * A profile begun by another thread between keys stops the run
 * (KILN_ERR_INVALID_ARGUMENT).
 *
 * @param fn may be NULL.
 * @return KILN_OK (also when single keys failed: see their status);
 *         KILN_ERR_INVALID_HANDLE; KILN_ERR_NOT_FOUND (unknown family or
 *         layout); KILN_ERR_INVALID_ARGUMENT (NULL req, an invalid dtype, a
 *         size of 0, reps negative or over 1000, profiling in progress, a call
 *         from a progress callback);
 *         KILN_ERR_UNSUPPORTED (the queue has no profiling, or the one family
 *         asked for has nothing to choose on ctx: fft without both clFFT and
 *         VkFFT, gemm without CLBlast; with family NULL such families are
 *         skipped); KILN_ERR_IO
 *         (results could not be stored; they stay in use by ctx);
 *         KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_tune_run(kiln_context *ctx, const kiln_tune_request *req,
                                   kiln_tune_progress_fn fn, void *user);

/** One stored entry, as the listing calls report it. Pointers valid during the callback. */
typedef struct kiln_tune_entry {
  const char *path;   /**< the tuning file */
  const char *device; /**< normalised device of the file name */
  const char *driver; /**< normalised driver of the file name */
  const char *family;
  const char *dtype;
  const char *bucket;
  const char *params;  /**< "name=value ..." */
  uint64_t time_ns;    /**< tuned median (0 for a failure record) */
  uint64_t default_ns; /**< defaults' median (0 for a failure record) */
  const char *failed;  /**< "" for a result, else the reason a candidate failed */
} kiln_tune_entry;

/** Listing callback: return nonzero to stop. */
typedef int (*kiln_tune_entry_fn)(const kiln_tune_entry *e, void *user);

/**
 * Lists the stored entries for ctx's device: its file, then the entries of
 * the newest file of the same device with another driver for keys its own
 * file lacks (what lookups fall back to). Whatever the mode; files are read
 * again, so entries other processes stored since are included.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (NULL fn).
 */
KILN_API kiln_status kiln_tune_list(kiln_context *ctx, kiln_tune_entry_fn fn, void *user);

/**
 * Lists every entry of every tuning file under a cache directory, for
 * inspection tools (`kiln cache list --tuning`). Makes no OpenCL calls.
 * Unusable files (wrong version, too large, unreadable) are skipped; bad
 * lines are skipped.
 * @param cache_dir the cache directory; NULL: kiln_cache_default_dir().
 * @return KILN_OK (also when there is no tuning directory);
 *         KILN_ERR_INVALID_ARGUMENT (NULL fn); KILN_ERR_NOT_FOUND (no
 *         default directory); KILN_ERR_IO (the tuning directory is not a
 *         directory, belongs to another user or is writable by others).
 */
KILN_API kiln_status kiln_tune_dir_list(const char *cache_dir, kiln_tune_entry_fn fn, void *user);

/** Totals of a tuning directory. */
typedef struct kiln_tune_dir_stats {
  uint64_t files;      /**< tuning files (device identities) */
  uint64_t unusable;   /**< files ignored: wrong version, too large, unreadable */
  uint64_t results;    /**< tuned keys */
  uint64_t failures;   /**< failed-candidate records */
  uint64_t bad_lines;  /**< lines skipped as malformed */
  uint64_t bytes;      /**< total size of the files */
} kiln_tune_dir_stats;

/**
 * Counts the tuning files of a cache directory (`kiln cache stats`). No OpenCL.
 * @param cache_dir the cache directory; NULL: kiln_cache_default_dir().
 * @return KILN_OK (zeros when there is no tuning directory);
 *         KILN_ERR_INVALID_ARGUMENT (NULL out); KILN_ERR_NOT_FOUND (no
 *         default directory); KILN_ERR_IO (as kiln_tune_dir_list).
 */
KILN_API kiln_status kiln_tune_dir_stats_get(const char *cache_dir, kiln_tune_dir_stats *out);

/** kiln_tune_import() flag: accept a file whose header names another device. */
#define KILN_TUNE_IMPORT_ANY_DEVICE 1u

/**
 * Imports a tuning file (from kiln_tune_export() or another machine's
 * tuning directory): its entries are checked (families, parameter names and
 * ranges; others skipped), merged into ctx's device file (same keys are
 * replaced) and used by ctx at once.
 * @param imported may be NULL; receives the number of entries taken.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (NULL
 *         path, unknown flags, not a version-1 tuning file, or a file of
 *         another device without KILN_TUNE_IMPORT_ANY_DEVICE); KILN_ERR_IO
 *         (missing, unreadable, or not a regular file: a FIFO or device is
 *         refused without blocking, a symbolic link to a file is followed;
 *         or the merged file could not be written, errno in
 *         kiln_last_error_code(): the entries are still used by ctx);
 *         KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_tune_import(kiln_context *ctx, const char *path, unsigned flags,
                                      size_t *imported);

/**
 * Writes the stored entries kiln_tune_list() reports (overrides are not
 * included) to path, atomically (a temporary file next to it, renamed into
 * place), as a tuning file for ctx's device. A symbolic link to a regular
 * file stays a link: the file it names is replaced.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (NULL
 *         path); KILN_ERR_IO (path is a device, FIFO or directory, left as it
 *         is; or the write failed, errno in kiln_last_error_code());
 *         KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_tune_export(kiln_context *ctx, const char *path);

#ifdef __cplusplus
}
#endif
#endif
