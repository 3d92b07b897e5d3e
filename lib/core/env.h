/*
 * Every environment variable kiln reads, in one table, read in one place
 * (core/env.c). Each KILN_ variable a user sets has an API twin (README.md's
 * table names it); the debug and test switches do not.
 */
#ifndef KILN_CORE_ENV_H
#define KILN_CORE_ENV_H

/* X(ID, name) */
#define KILN__ENV_VARS(X)                                                                     \
  X(DEVICE, "KILN_DEVICE")                   /* twin: kiln_context_create's selector */      \
  X(LOG, "KILN_LOG")                         /* twin: kiln_log_set_level */                  \
  X(CACHE_DIR, "KILN_CACHE_DIR")             /* twin: kiln_context_set_cache_dir */          \
  X(CACHE, "KILN_CACHE")                     /* twin: KILN_OPT_CACHE_MODE */                 \
  X(CACHE_MAX_SIZE, "KILN_CACHE_MAX_SIZE")   /* twin: KILN_OPT_CACHE_MAX_BYTES */            \
  X(CACHE_STORE, "KILN_CACHE_STORE")         /* twin: KILN_OPT_CACHE_STORE */                \
  X(TUNE, "KILN_TUNE")                       /* twin: KILN_OPT_TUNE_MODE */                  \
  X(FFT_BACKEND, "KILN_FFT_BACKEND")         /* twin: KILN_OPT_FFT_BACKEND */                \
  X(VKFFT_BINARY_CACHE, "KILN_VKFFT_BINARY_CACHE") /* twin: KILN_OPT_VKFFT_BINARY_CACHE */   \
  X(DEBUG_NO_FP64, "KILN_DEBUG_NO_FP64")     /* debug: treat the device as lacking fp64 */   \
  X(DEBUG_NO_CLBLAST, "KILN_DEBUG_NO_CLBLAST") /* debug: kiln's own BLAS kernels only */     \
  X(DEBUG_ONE_KERNEL, "KILN_DEBUG_ONE_KERNEL") /* debug: one-kernel programs 1 always, 0 never */ \
  X(DEBUG_VKFFT, "KILN_DEBUG_VKFFT")         /* debug: VkFFT configuration overrides */     \
  X(DEBUG_LINALG_HOST, "KILN_DEBUG_LINALG_HOST") /* debug: eigh/svd host routines (stedc, ...) */ \
  X(SORT_RADIX, "KILN_SORT_RADIX")           /* tuning: the sort family's radix passes */   \
  X(DEBUG_STORE_BG, "KILN_DEBUG_STORE_BG")   /* debug: PoCL stores in the background 1 always, 0 never */ \
  X(DEBUG_NN, "KILN_DEBUG_NN")               /* debug: the nn family's launch knobs */       \
  X(DEBUG_XGEMM, "KILN_DEBUG_XGEMM")         /* debug: CLBlast Xgemm parameters to time */   \
  X(DEBUG_GEMM_LARGE, "KILN_DEBUG_GEMM_LARGE") /* debug: the large GEMM kernel's parameters */ \
  X(DEBUG_CLBLAST, "KILN_DEBUG_CLBLAST")     /* debug: CLBlast parameter overrides to time */ \
  X(DEBUG_GEMM_TEMP, "KILN_DEBUG_GEMM_TEMP") /* debug: CLBlast GEMMs with a kept temporary */ \
  X(DEBUG_QR_GRID, "KILN_DEBUG_QR_GRID")   /* debug: qr_panel_grid's lanes, rows, T (docs/linalg.md) */ \
  X(DEBUG_CPLX_LARGE, "KILN_DEBUG_CPLX_LARGE") /* debug: 1 / 0 forces complex linalg GEMMs on / off the large kernel */ \
  X(DEBUG_LU_NB2, "KILN_DEBUG_LU_NB2") /* debug: the device route LU's two levels: outer block width (0: one level) */ \
  X(TEST_CACHE_KILL_AT, "KILN_TEST_CACHE_KILL_AT") /* test hook of the cache's writers */    \
  X(TEST_TUNING_DATA, "KILN_TEST_TUNING_DATA") /* test hook: the packaged tuning files' dir */ \
  X(XDG_CACHE_HOME, "XDG_CACHE_HOME")        /* the default cache directory */               \
  X(HOME, "HOME")                                                                             \
  X(CLFFT_CACHE_PATH, "CLFFT_CACHE_PATH")    /* clFFT's own; kiln sets it only when unset */

enum kiln__env {
#define X(id, name) KILN__ENV_##id,
  KILN__ENV_VARS(X)
#undef X
  KILN__ENV_COUNT
};

/* The variable's value, or NULL when unset; always NULL in setuid/setgid processes. */
const char *kiln__env(enum kiln__env var);

/* Nonzero when a switch variable is set to something other than "" or "0". */
int kiln__env_flag(enum kiln__env var);

/* The variable's name ("KILN_DEVICE"). */
const char *kiln__env_name(enum kiln__env var);

#endif
