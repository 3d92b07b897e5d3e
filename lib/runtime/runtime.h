/* Internal runtime objects: contexts, tensors, the buffer pool and the program registry. */
#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include <assert.h>
#include <pthread.h>
#include <stdint.h>

#include "core/shape.h"
#include "kiln/context.h"
#include "kiln/tensor.h"

#define KILN__CTX_MAGIC 0x6b636f6eu  /* "kcon" */
#define KILN__TENSOR_MAGIC 0x6b74656eu /* "kten" */
#define KILN__DEAD_MAGIC 0xdeadbeefu

struct kiln__pooled {
  cl_mem mem;
  uint64_t size;
};

struct kiln__pool {
  struct kiln__pooled *free;
  size_t nfree, cap;
  uint64_t limit;
  kiln_pool_stats stats;
};

/* Kernel events recorded between kiln_profile_begin and kiln_profile_end. */
struct kiln__profile {
  int active;
  cl_event *events; /* completion event of each kernel (or provider call) */
  cl_event *begins; /* NULL for a kernel; the marker before a provider call */
  size_t nevents, cap;
  uint64_t kernels, device_ns, first_start, last_end;
};

struct kiln__kernel {
  char *name;
  cl_kernel kernel;
};

struct kiln__program {
  char *source; /* embedded source name; "text:<label>" for caller-supplied text */
  char *options;
  /* Caller-supplied program text (runtime/program_text.h), NULL for embedded sources: text
   * programs are found by (text, options), embedded ones by (source, options). */
  char *text;
  size_t text_len;
  uint64_t text_hash;
  cl_program program;
  struct kiln__kernel *kernels;
  size_t nkernels;
};

/* Most op families a build can hold (runtime/family.h: their per-context state slots). */
#define KILN__FAMILY_SLOTS 32

struct kiln_context {
  uint32_t magic;
  int released;  /* kiln_context_release() ran; struct lives on while tensors refer to it */
  int64_t refs;  /* 1 for the caller plus one per live tensor */
  /* Guards everything below; held across an op's enqueue. Recursive (docs/architecture.md,
   * "The context lock"); taken and dropped only through kiln__ctx_lock/unlock. */
  pthread_mutex_t lock;
  /* Debug builds: the holder of lock (a per-thread token, NULL when free) and its depth, for
   * KILN__ASSERT_LOCKED. Written by the holder only; lock_owner is read by any thread. */
  _Atomic(const void *) lock_owner;
  unsigned lock_depth;
  cl_platform_id platform;
  cl_context cl;
  cl_device_id device;
  cl_command_queue queue;
  kiln_device_info info;
  size_t wg_size; /* default work-group size for 1-D kernels */
  struct kiln__pool pool;
  struct kiln__program *programs;
  size_t nprograms, cap_programs;
  struct kiln_cache *cache; /* disk kernel cache (runtime/disk_cache.h); NULL acts as mode OFF */
  /* Embedded sources are built one kernel per program (PoCL: docs/cache.md, "Program
   * granularity"); set when the cache is opened. */
  int one_kernel;
  /* On PoCL, misses are stored by a thread of their own (runtime/store_bg.h); started at the
   * first such store. */
  int store_bg;
  struct kiln__storer *storer;
  int queue_profiling; /* the queue was created with CL_QUEUE_PROFILING_ENABLE */
  struct kiln__profile prof;
  /* Autotuner state (runtime/tuner.c): mode, stored tables, overrides. NULL: defaults only. */
  struct kiln__tuner *tuner;
  /* Each family's state (runtime/family.h), by its index in kiln__families. */
  void *family_state[KILN__FAMILY_SLOTS];
};

struct kiln_tensor {
  uint32_t magic;
  kiln_context *ctx;
  cl_mem mem;          /* NULL for empty tensors */
  uint64_t offset;     /* bytes from the start of mem */
  uint64_t capacity;   /* pooled allocation size; 0 when wrapped */
  int wrapped;
  /*
   * Views (kiln__tensor_view): tensors sharing one pooled buffer share this
   * counter of live tensors on it (guarded by ctx->lock); the last release
   * returns the buffer to the pool. NULL while a buffer has never been
   * shared. Wrapped buffers need no counter: each view retains the cl_mem.
   */
  int64_t *shared;
  kiln_dtype dtype;
  kiln__shape shape;
  uint64_t numel;
  uint64_t nbytes;
};

/* Handle checks; each records a message naming op on failure. */
kiln_status kiln__ctx_check(const char *op, const kiln_context *ctx);
kiln_status kiln__tensor_check(const char *op, const kiln_tensor *t, const kiln_context *ctx);

/*
 * The context lock (context.c). Functions that need it held end in _locked
 * or say "ctx->lock held", and assert it with KILN__ASSERT_LOCKED, which
 * debug builds check and NDEBUG builds compile out.
 */
void kiln__ctx_lock(kiln_context *ctx);
void kiln__ctx_unlock(kiln_context *ctx);
/* 1 when the calling thread holds ctx->lock, 0 when it does not; -1 under NDEBUG (untracked). */
int kiln__ctx_lock_held(const kiln_context *ctx);
#define KILN__ASSERT_LOCKED(ctx) assert(kiln__ctx_lock_held(ctx) != 0)

/* Drops one context reference; the last one frees the struct (through the quarantine). */
void kiln__ctx_unref(kiln_context *ctx);

/*
 * The process-wide lock of OpenCL platform work (device.c): platform and
 * device listing, device and queue queries, cl_context and command queue
 * creation and release. Taken after ctx->lock where both are held; nothing
 * else is taken under it.
 */
void kiln__platform_lock(void);
void kiln__platform_unlock(void);

/* Device enumeration and selection (device.c); the caller holds the platform lock. */
kiln_status kiln__device_query(cl_platform_id platform, cl_device_id device, kiln_device_info *out);
kiln_status kiln__device_select(const char *op, const char *selector, cl_platform_id *platform,
                                cl_device_id *device);

/* Buffer pool (pool.c); called with ctx->lock held. */
kiln_status kiln__pool_alloc(kiln_context *ctx, uint64_t bytes, cl_mem *mem, uint64_t *capacity);
void kiln__pool_free(kiln_context *ctx, cl_mem mem, uint64_t capacity);
void kiln__pool_trim_locked(kiln_context *ctx, uint64_t keep_bytes);
void kiln__pool_destroy_locked(kiln_context *ctx);

/*
 * Creates a tensor of the given shape with ctx->lock held (op results).
 * Validates nothing beyond byte-size limits: callers pass checked shapes.
 */
kiln_status kiln__tensor_new_locked(const char *op, kiln_context *ctx, kiln_dtype dtype,
                                    const kiln__shape *shape, kiln_tensor **out);

/*
 * Resolves the output of an op: allocates when *out is NULL, else checks
 * that *out matches shape, dtype and context. Sets *made when it allocated.
 */
kiln_status kiln__output_prepare(const char *op, kiln_context *ctx, kiln_dtype dtype,
                                 const kiln__shape *shape, kiln_tensor **out, int *made);

/*
 * Makes a new tensor handle over src's buffer, starting offset_bytes after
 * src's first element, with the given shape (whose bytes must fit in src's).
 * Writes through either handle are seen by the other; the buffer lives
 * until the last of them is released. Takes ctx->lock itself.
 */
kiln_status kiln__tensor_view(const char *op, kiln_tensor *src, uint64_t offset_bytes,
                              const kiln__shape *shape, kiln_tensor **out);
/* The same with another dtype over the same bytes (complex <-> real views). */
kiln_status kiln__tensor_view_as(const char *op, kiln_tensor *src, uint64_t offset_bytes,
                                 kiln_dtype dtype, const kiln__shape *shape, kiln_tensor **out);

/* Releases a tensor made by kiln__output_prepare on a failure path. */
void kiln__output_discard(kiln_tensor **out, int made);

/*
 * Program registry (program.c): the kernel `kernel` of embedded source
 * `source` built with `options`, compiled on first use per context. Called
 * with ctx->lock held. The returned kernel is owned by the context.
 */
kiln_status kiln__kernel_get(const char *op, kiln_context *ctx, const char *source,
                             const char *options, const char *kernel, cl_kernel *out);
void kiln__programs_destroy_locked(kiln_context *ctx);


/*
 * Provider libraries (CLBlast, clFFT, VkFFT) enqueue kernels kiln cannot see.
 * Bracketing their calls with these (ctx->lock held) makes profiling count
 * each call as one kernel spanning from a marker before it to a marker after
 * it. Both are no-ops returning KILN_OK when profiling is off; *begin is then NULL.
 */
kiln_status kiln__provider_span_begin(const char *op, kiln_context *ctx, cl_event *begin);
kiln_status kiln__provider_span_end(const char *op, kiln_context *ctx, cl_event begin);


/* Records a kernel's (or a provider span's) events while profiling is on (ctx->lock held). */
kiln_status kiln__profile_record_locked(const char *op, kiln_context *ctx, cl_event begin, cl_event end);

/* Drops recorded profiling events (context release). */
void kiln__profile_destroy_locked(kiln_context *ctx);


/* Build options every program gets for dtype (the -D that select T). */
void kiln__dtype_options(kiln_dtype dtype, char *buf, size_t len);

/*
 * The build options of embedded source `source` for dtype on a device: the
 * common dtype options, then those of the family that owns the source
 * (runtime/family.h). variant is that family's compile-time launch
 * parameters, NULL for the device defaults. The one place options are
 * computed, so the ops and the cache warm-up (which builds the NULL variant
 * of every source ahead of use) cannot disagree. Returns 0 (options still
 * written) when the source's row does not list dtype (struct kiln__source), so
 * that a kernel lookup can refuse it without a second walk of the family table.
 */
int kiln__program_options(const kiln_device_info *info, const char *source, kiln_dtype dtype,
                           const void *variant, char *buf, size_t len);

/* Appends printf-style text to build options buf (always terminated). */
void kiln__options_append(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Nonzero if the device can run kernels of dtype (f64 needs fp64). */
int kiln__device_has_dtype(const kiln_device_info *info, kiln_dtype dtype);

/* Bounded quarantine for released handles, so later misuse reads poisoned memory, not freed memory. */
void kiln__quarantine(void *p);

#endif
