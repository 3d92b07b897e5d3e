/*
 * What the FFT family (lib/ops/fft.c) needs from a back end (clFFT in
 * clfft.c, VkFFT in vkfft.c). Back ends see zero-offset buffers (the family
 * stages tensors that start inside a buffer) and run unnormalised.
 */
#ifndef KILN_BACKENDS_FFT_BACKEND_H
#define KILN_BACKENDS_FFT_BACKEND_H

#include "kiln/fft.h"
#include "kiln_config.h"
#include "runtime/runtime.h"

/* Everything that defines a compiled plan on one context (the plan-cache key). */
struct kiln__fft_key {
  kiln_fft_kind kind;
  uint32_t rank;
  int64_t sizes[3]; /* outermost first; unused entries 0 */
  int64_t batch;
  kiln_dtype precision;
  int inplace;
  kiln_fft_backend backend; /* resolved, never AUTO */
};

/* Element counts of one transform: the real side and the complex side (in complex numbers). */
static inline uint64_t
kiln__fft_real_count(const struct kiln__fft_key *k)
{
  uint64_t n = 1;
  for (uint32_t i = 0; i < k->rank; i++)
    n *= (uint64_t)k->sizes[i];
  return n;
}

static inline uint64_t
kiln__fft_complex_count(const struct kiln__fft_key *k)
{
  if (k->kind == KILN_FFT_C2C)
    return kiln__fft_real_count(k);
  uint64_t n = (uint64_t)k->sizes[k->rank - 1] / 2 + 1;
  for (uint32_t i = 0; i + 1 < k->rank; i++)
    n *= (uint64_t)k->sizes[i];
  return n;
}

/* Counters the back ends bump (the family's kiln_fft_stats, under ctx->lock or its own). */
struct kiln__fft_counters {
  uint64_t binary_hits, binary_stores, binary_rejects, binary_unusable;
};

/*
 * One back end's entry points. The family (lib/ops/fft.c) picks the table
 * by kiln_fft_backend; a back end this libkiln was built without has a NULL
 * table.
 */
struct kiln__fft_backend_ops {
  /* Nonzero when the back end can do key, else the reason in why. */
  int (*supports)(const struct kiln__fft_key *key, char *why, size_t len);
  /*
   * Compiles a plan for key on ctx. binary_cache: 1 store and reload
   * compiled binaries in kiln's cache directory (back ends that can), 0 do
   * not; counters may be NULL.
   */
  kiln_status (*create)(const char *op, kiln_context *ctx, const struct kiln__fft_key *key,
                        int binary_cache, struct kiln__fft_counters *counters, void **plan);
  /* Enqueues on ctx's queue (ctx->lock held). For in-place plans out is ignored. */
  kiln_status (*execute)(const char *op, kiln_context *ctx, void *plan, int inverse, cl_mem in,
                         cl_mem out);
  void (*destroy)(void *plan);
  /* Whether binaries may be stored and reloaded on ctx's platform by default; NULL: never. */
  int (*binaries_reloadable)(const kiln_context *ctx);
};

/*
 * clFFT (clfft.c): plan creation and teardown serialised process-wide.
 * VkFFT (vkfft.c): binaries reloadable on NVIDIA only (VkFFT 1.2.26 copies
 * OpenCL binaries as C strings, which only survives text binaries such as
 * NVIDIA's PTX).
 */
#if KILN_HAVE_CLFFT
extern const struct kiln__fft_backend_ops kiln__clfft_ops;
#define KILN__CLFFT_OPS (&kiln__clfft_ops)
#else
#define KILN__CLFFT_OPS NULL
#endif
#if KILN_HAVE_VKFFT
extern const struct kiln__fft_backend_ops kiln__vkfft_ops;
#define KILN__VKFFT_OPS (&kiln__vkfft_ops)
#else
#define KILN__VKFFT_OPS NULL
#endif

#endif
