/*
 * Contexts: one OpenCL device, one in-order command queue, the compiled
 * programs, the buffer pool and the settings of one kiln user.
 * Operations enqueue work and return; kiln_tensor_download() and
 * kiln_context_finish() wait for it.
 *
 * Threads. Every kiln function may be called from any thread; the error
 * record (kiln_last_error()) is per thread.
 *
 * - Process-wide: kiln_device_list(), kiln_context_create(),
 *   kiln_context_create_from_cl() and the OpenCL part of
 *   kiln_context_release() take one process-wide lock around platform and
 *   device listing, device and queue queries and cl_context/queue creation
 *   and release, because OpenCL implementations (PoCL 3.1, the ICD loader)
 *   are not thread-safe there. Any number of threads may create and release
 *   contexts at once. That lock covers kiln's own OpenCL calls only: a
 *   program that lists platforms or creates cl_contexts itself on other
 *   threads at the same time must serialise those calls itself (or make them
 *   before it starts threads). clFFT's library state (set up with the first
 *   clFFT plan, torn down after the last) and every clFFT call are
 *   serialised by another process-wide lock.
 * - A shared context: any number of threads may use one context at once.
 *   Each operation takes the context's lock to allocate and enqueue its
 *   work on the context's single in-order queue (an operation that waits for
 *   the device lets go of it while it waits), and each gives the result it
 *   would give alone. kiln does not order operations of different threads
 *   beyond the order they take the lock in: a thread that reads a tensor
 *   another thread writes must wait for the writer itself, and two threads
 *   writing one tensor (in place) race.
 *   Options set on a shared context apply to operations that start
 *   afterwards. kiln_profile_begin()/kiln_profile_end() count the kernels of
 *   every thread on the context.
 * - Tuning (include/kiln/tune.h): the tuning of one key, online or through
 *   kiln_tune_run(), holds the context until the key's result is stored;
 *   operations of other threads on the context wait for it. A context being
 *   profiled is not tuned.
 * - Releasing: kiln_context_release() and kiln_tensor_release() must not run
 *   while another thread still uses the same handle; different contexts and
 *   tensors are independent.
 */
#ifndef KILN_CONTEXT_H
#define KILN_CONTEXT_H

#include <stddef.h>
#include <stdint.h>

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include "kiln/export.h"
#include "kiln/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque context handle. */
typedef struct kiln_context kiln_context;

/** What kiln knows about a device. Strings are NUL-terminated and truncated to fit. */
typedef struct kiln_device_info {
  char name[256];
  char vendor[256];
  char driver_version[128];
  char device_version[128]; /**< e.g. "OpenCL 3.0 CUDA" */
  char platform_name[256];
  char platform_version[128];
  uint32_t platform_index; /**< position in clGetPlatformIDs order */
  uint32_t device_index;   /**< position within the platform */
  uint32_t vendor_id;
  uint32_t compute_units;
  uint32_t address_bits;
  uint64_t global_mem_bytes;
  uint64_t local_mem_bytes;
  uint64_t max_alloc_bytes;
  size_t max_work_group_size;
  int is_gpu;  /**< CL_DEVICE_TYPE_GPU */
  int has_fp64;
  int has_fp16;
} kiln_device_info;

/**
 * Creates a context. Safe from any thread, also while other threads create
 * or release contexts (see "Threads" above).
 *
 * @param selector which device: NULL means the KILN_DEVICE environment
 *        variable if set, else the first GPU, else the first CPU device (in
 *        platform order). A selector is either "P:D" (platform and device
 *        index, each decimal digits from 0 to UINT32_MAX) or a
 *        case-insensitive substring of the device name. A selector of only
 *        digits, signs, blanks and colons is read as "P:D" and is malformed
 *        unless exactly <digits>:<digits> in range ("0:4294967296", "-1:0",
 *        "0:", " 0:0", "0:0:0").
 * @param out receives the context; release with kiln_context_release().
 * @return KILN_OK; KILN_ERR_INVALID_ARGUMENT if out is NULL or the selector
 *         (or KILN_DEVICE) is malformed; KILN_ERR_NO_DEVICE if no
 *         platform/device matches; KILN_ERR_OPENCL if the context or queue
 *         cannot be created; KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_context_create(const char *selector, kiln_context **out);

/**
 * Creates a context over OpenCL objects the caller already has. kiln retains
 * them and releases its references on kiln_context_release(); the caller keeps
 * its own. The queue must be in-order; NULL makes kiln create one. Safe from
 * any thread; several kiln contexts may share one cl_context and queue
 * (operations of different kiln contexts on one queue are not ordered
 * against each other beyond the queue's own order).
 *
 * @return KILN_OK; KILN_ERR_INVALID_ARGUMENT for NULL context/device/out or an
 *         out-of-order queue; KILN_ERR_CONTEXT_MISMATCH if the queue belongs to
 *         another context or device; KILN_ERR_OPENCL; KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_context_create_from_cl(cl_context cl_ctx, cl_device_id device,
                                                 cl_command_queue queue, kiln_context **out);

/**
 * Waits for all queued work, then releases the context, its pooled buffers,
 * programs and queue. Tensors still alive keep their buffers until they are
 * released; using them in operations afterwards returns
 * KILN_ERR_INVALID_HANDLE. NULL is accepted and ignored.
 *
 * @return KILN_OK, or KILN_ERR_INVALID_HANDLE for a released or foreign pointer.
 */
KILN_API kiln_status kiln_context_release(kiln_context *ctx);

/**
 * Blocks until all work queued on the context has finished.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_OPENCL if the device
 *         reported a failure (the raw code is in the error record).
 */
KILN_API kiln_status kiln_context_finish(kiln_context *ctx);

/**
 * Describes the context's device.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT for NULL out.
 */
KILN_API kiln_status kiln_context_device_info(const kiln_context *ctx, kiln_device_info *out);

/**
 * The OpenCL objects of a context, for interoperation. kiln keeps ownership:
 * retain them if they must outlive the context. Any out pointer may be NULL.
 * @return KILN_OK or KILN_ERR_INVALID_HANDLE.
 */
KILN_API kiln_status kiln_context_cl_objects(const kiln_context *ctx, cl_context *cl_ctx,
                                             cl_device_id *device, cl_command_queue *queue);

/**
 * Lists every OpenCL device on the machine, in the order "P:D" selectors use.
 *
 * @param infos array of capacity entries to fill (may be NULL when capacity is 0).
 * @param count receives the total number of devices (may exceed capacity).
 * @param default_index receives the index (into the full list) of the device
 *        kiln_context_create(NULL, ...) would pick, honouring KILN_DEVICE, or
 *        SIZE_MAX if it would fail; may be NULL.
 * @return KILN_OK (also with zero devices); KILN_ERR_INVALID_ARGUMENT if count
 *         is NULL or infos is NULL with capacity > 0.
 */
KILN_API kiln_status kiln_device_list(kiln_device_info *infos, size_t capacity, size_t *count,
                                      size_t *default_index);

/** Statistics of a context's buffer pool. */
typedef struct kiln_pool_stats {
  uint64_t hits;         /**< allocations served from the pool */
  uint64_t misses;       /**< allocations that called clCreateBuffer */
  uint64_t bytes_in_use; /**< bytes held by live tensors (rounded sizes) */
  uint64_t bytes_cached; /**< bytes held idle in the pool */
  uint64_t buffers_cached;
  uint64_t limit_bytes; /**< idle bytes above this are released at once */
} kiln_pool_stats;

/**
 * Reads the pool statistics.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT for NULL out.
 */
KILN_API kiln_status kiln_pool_stats_get(kiln_context *ctx, kiln_pool_stats *out);

/**
 * Releases idle pooled buffers until at most keep_bytes stay cached
 * (0 releases all of them). Live tensors are not affected.
 * @return KILN_OK or KILN_ERR_INVALID_HANDLE.
 */
KILN_API kiln_status kiln_pool_trim(kiln_context *ctx, uint64_t keep_bytes);

/** Context options, set with kiln_context_set_option(). */
typedef enum kiln_option {
  /** Most idle bytes the buffer pool keeps (default: 1/4 of device memory, at most 2 GiB). */
  KILN_OPT_POOL_LIMIT_BYTES = 1,
  /**
   * Disk kernel cache mode, a kiln_cache_mode (include/kiln/cache.h):
   * KILN_CACHE_OFF (0), KILN_CACHE_READONLY (1) or KILN_CACHE_ON (2).
   * Default: the KILN_CACHE environment variable (on, readonly, off), else ON.
   * Setting it reopens the context's cache directory. Reading it gives the
   * mode in force, which is lower than the one set when the directory does
   * not allow more (kiln_context_cache_stats() says why).
   */
  KILN_OPT_CACHE_MODE = 2,
  /**
   * Size cap of the disk kernel cache in bytes, 0 for none. Default:
   * KILN_CACHE_MAX_SIZE (e.g. 512M, 2G), else 1 GiB. Enforced at the next
   * store (least recently used entries go first).
   */
  KILN_OPT_CACHE_MAX_BYTES = 3,
  /**
   * When builds that miss the disk cache store their binary, a
   * kiln_cache_store_policy: KILN_CACHE_STORE_AUTO (0, per platform: not on
   * PoCL) or KILN_CACHE_STORE_ALWAYS (1). Default: KILN_CACHE_STORE (auto,
   * always), else AUTO.
   */
  KILN_OPT_CACHE_STORE = 4,
  /**
   * Autotuner mode, a kiln_tune_mode (include/kiln/tune.h): KILN_TUNE_OFF
   * (0, built-in launch parameters), KILN_TUNE_CACHED (1, stored tuning
   * results where there are some) or KILN_TUNE_ONLINE (2, and tune a missing
   * key on first use). Default: the KILN_TUNE environment variable (off,
   * cached, online), else CACHED.
   */
  KILN_OPT_TUNE_MODE = 5,
  /**
   * GEMM, GEMV and SYRK calls whose m*n*k (per matrix) is at most this run on
   * kiln's own kernel instead of CLBlast; 0 sends everything CLBlast can take
   * to CLBlast. Until it is set, the route comes from the autotuner's "gemm"
   * family (stored per device and m*n*k bucket, include/kiln/tune.h), whose
   * default is this threshold at 32768 (32^3); once set on a context it
   * decides every call of that context, over tuned and overridden routes.
   * Reading it gives 32768 until it is set. Without CLBlast in the build
   * every such call runs on kiln's kernel. See docs/blas_fft.md.
   */
  KILN_OPT_GEMM_SMALL_MNK = 6,
  /**
   * FFT back end for plans created with KILN_FFT_BACKEND_AUTO: a
   * kiln_fft_backend value (0 auto, 1 clFFT, 2 VkFFT). Default: the
   * KILN_FFT_BACKEND environment variable ("auto", "clfft", "vkfft") read at
   * context creation, else auto. Auto takes the autotuner's "fft" choice for
   * the precision and size bucket (include/kiln/fft.h).
   */
  KILN_OPT_FFT_BACKEND = 7,
  /**
   * 1: VkFFT plans store their compiled kernels in kiln's cache directory and
   * reload them in later processes; 0: they compile every time. Default: the
   * KILN_VKFFT_BINARY_CACHE environment variable ("on", "off") read at
   * context creation, else 1 on NVIDIA and 0 elsewhere (docs/blas_fft.md:
   * VkFFT 1.2.26 reloads only text binaries). Applies to plans created after
   * it is set.
   */
  KILN_OPT_VKFFT_BINARY_CACHE = 8,
} kiln_option;

/**
 * Sets an option on a context.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT for an
 *         unknown option or a value outside kiln_option_bounds();
 *         KILN_ERR_HOST_MEMORY (KILN_OPT_CACHE_MODE: the cache could not be
 *         reopened; the context then runs without a disk cache).
 */
KILN_API kiln_status kiln_context_set_option(kiln_context *ctx, kiln_option option, int64_t value);

/**
 * Reads an option.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT for an
 *         unknown option or NULL value.
 */
KILN_API kiln_status kiln_context_get_option(const kiln_context *ctx, kiln_option option,
                                             int64_t *value);

/**
 * Valid range of an option's value, inclusive.
 * @return KILN_OK or KILN_ERR_INVALID_ARGUMENT for an unknown option or NULL bounds.
 */
KILN_API kiln_status kiln_option_bounds(kiln_option option, int64_t *lower, int64_t *upper);

#ifdef __cplusplus
}
#endif
#endif
