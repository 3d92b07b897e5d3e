/*
 * What the FFT family (lib/ops/fft.c) needs from a back end (clFFT in
 * clfft.c, VkFFT in vkfft.c). Back ends see zero-offset buffers (the family
 * stages tensors that start inside a buffer) and run unnormalised.
 */
#ifndef KILN_PROVIDERS_FFT_BACKEND_H
#define KILN_PROVIDERS_FFT_BACKEND_H

#include "kiln/fft.h"
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

/* clFFT (clfft.c): plan creation and teardown serialised process-wide. */
int kiln__clfft_supports(const struct kiln__fft_key *key, char *why, size_t len);
kiln_status kiln__clfft_create(const char *op, kiln_context *ctx, const struct kiln__fft_key *key,
                               void **plan);
/* Enqueues on ctx's queue (ctx->lock held). For in-place plans out is ignored. */
kiln_status kiln__clfft_execute(const char *op, kiln_context *ctx, void *plan, int inverse,
                                cl_mem in, cl_mem out);
void kiln__clfft_destroy(void *plan);

/* VkFFT (vkfft.c): nonzero when VkFFT can do key, else the reason in why. */
int kiln__vkfft_supports(const struct kiln__fft_key *key, char *why, size_t len);

/*
 * VkFFT (vkfft.c). binary_cache: 1 store and reload compiled binaries in
 * kiln's cache directory, 0 do not. counters may be NULL.
 */
kiln_status kiln__vkfft_create(const char *op, kiln_context *ctx, const struct kiln__fft_key *key,
                               int binary_cache, struct kiln__fft_counters *counters, void **plan);
kiln_status kiln__vkfft_execute(const char *op, kiln_context *ctx, void *plan, int inverse,
                                cl_mem in, cl_mem out);
void kiln__vkfft_destroy(void *plan);

/*
 * Whether VkFFT binaries may be stored and reloaded on this context's
 * platform by default: NVIDIA only (VkFFT 1.2.26 copies OpenCL binaries as C
 * strings, which only survives text binaries such as NVIDIA's PTX).
 */
int kiln__vkfft_binaries_reloadable(const kiln_context *ctx);

#endif
