/*
 * The provider table: every public kiln entry point as one versioned struct,
 * for programs that dlopen() libkiln.so and look up a single symbol:
 *
 *   kiln_get_provider_fn get = (kiln_get_provider_fn)dlsym(h, "kiln_get_provider");
 *   const kiln_provider *kp;
 *   if (get(KILN_PROVIDER_ABI, &kp) != 0) ... // refuse: built for another ABI
 *   kp->context_create(NULL, &ctx);
 *
 * Slots are grouped by family (core, context, tensor, elementwise ...). Later
 * releases only append slots at the end and grow struct_size; a change that
 * breaks existing slots bumps KILN_PROVIDER_ABI. A slot a build does not
 * provide is NULL (for example an FFT family built without an FFT library).
 */
#ifndef KILN_PROVIDER_H
#define KILN_PROVIDER_H

#include "kiln/blas.h"
#include "kiln/elementwise.h"
#include "kiln/create.h"
#include "kiln/index.h"
#include "kiln/layout.h"
#include "kiln/random.h"
#include "kiln/reduce.h"
#include "kiln/fft.h"

#ifdef __cplusplus
extern "C" {
#endif

/** ABI version of struct kiln_provider this header describes. */
#define KILN_PROVIDER_ABI 1u

typedef struct kiln_provider {
  uint32_t abi_version; /**< KILN_PROVIDER_ABI of the library */
  uint32_t struct_size; /**< sizeof(kiln_provider) in the library; slots past it are absent */
  const char *name;     /**< "kiln" */
  const char *version;  /**< library version, "MAJOR.MINOR.PATCH" */

  /* core */
  const char *(*status_name)(kiln_status);
  const char *(*status_string)(kiln_status);
  const char *(*last_error)(void);
  kiln_status (*last_error_status)(void);
  int32_t (*last_error_code)(void);

  /* context */
  kiln_status (*context_create)(const char *, kiln_context **);
  kiln_status (*context_create_from_cl)(cl_context, cl_device_id, cl_command_queue,
                                        kiln_context **);
  kiln_status (*context_release)(kiln_context *);
  kiln_status (*context_finish)(kiln_context *);
  kiln_status (*context_device_info)(const kiln_context *, kiln_device_info *);

  /* tensor */
  kiln_status (*tensor_create)(kiln_context *, kiln_dtype, size_t, const int64_t *,
                               kiln_tensor **);
  kiln_status (*tensor_zeros)(kiln_context *, kiln_dtype, size_t, const int64_t *,
                              kiln_tensor **);
  kiln_status (*tensor_full)(kiln_context *, kiln_dtype, size_t, const int64_t *, kiln_scalar,
                             kiln_tensor **);
  kiln_status (*tensor_from_host)(kiln_context *, kiln_dtype, size_t, const int64_t *,
                                  const void *, kiln_tensor **);
  kiln_status (*tensor_upload)(kiln_tensor *, const void *, size_t);
  kiln_status (*tensor_download)(const kiln_tensor *, void *, size_t);
  kiln_status (*tensor_wrap)(kiln_context *, cl_mem, size_t, kiln_dtype, size_t,
                             const int64_t *, kiln_tensor **);
  kiln_status (*tensor_release)(kiln_tensor *);
  kiln_status (*tensor_cl_mem)(const kiln_tensor *, cl_mem *, size_t *);

  /* elementwise family */
  kiln_status (*unary)(kiln_context *, kiln_unary_op, const kiln_tensor *, kiln_tensor **);
  kiln_status (*binary)(kiln_context *, kiln_binary_op, const kiln_tensor *,
                        const kiln_tensor *, kiln_tensor **);
  kiln_status (*binary_scalar)(kiln_context *, kiln_binary_op, const kiln_tensor *, kiln_scalar,
                               int, kiln_tensor **);
  kiln_status (*where)(kiln_context *, const kiln_tensor *, const kiln_tensor *,
                       const kiln_tensor *, kiln_tensor **);
  kiln_status (*clamp)(kiln_context *, const kiln_tensor *, kiln_scalar, kiln_scalar,
                       kiln_tensor **);
  kiln_status (*cast)(kiln_context *, const kiln_tensor *, kiln_dtype, kiln_tensor **);
  kiln_status (*copy)(kiln_context *, const kiln_tensor *, kiln_tensor *);

  /* reductions and scans (kiln/reduce.h) */
  kiln_status (*reduce)(kiln_context *, kiln_reduce_op, const kiln_tensor *, const int64_t *,
                        size_t, int, const kiln_reduce_options *, kiln_tensor **);
  kiln_status (*argreduce)(kiln_context *, kiln_reduce_op, const kiln_tensor *, const int64_t *,
                           size_t, int, const kiln_reduce_options *, kiln_tensor **,
                           kiln_tensor **);
  kiln_status (*scan)(kiln_context *, kiln_scan_op, const kiln_tensor *, int64_t,
                      const kiln_scan_options *, kiln_tensor **);
  kiln_status (*scan_indexed)(kiln_context *, kiln_scan_op, const kiln_tensor *, int64_t,
                              const kiln_scan_options *, kiln_tensor **, kiln_tensor **);
  kiln_status (*diff)(kiln_context *, const kiln_tensor *, int64_t, int64_t, kiln_tensor **);

  /* layout (kiln/layout.h) */
  kiln_status (*reshape)(kiln_context *, const kiln_tensor *, size_t, const int64_t *,
                         kiln_tensor **);
  kiln_status (*transpose)(kiln_context *, const kiln_tensor *, kiln_tensor **);
  kiln_status (*permute)(kiln_context *, const kiln_tensor *, const int64_t *, size_t,
                         kiln_tensor **);
  kiln_status (*flip)(kiln_context *, const kiln_tensor *, const int64_t *, size_t,
                      kiln_tensor **);
  kiln_status (*roll)(kiln_context *, const kiln_tensor *, const int64_t *, const int64_t *,
                      size_t, kiln_tensor **);
  kiln_status (*concat)(kiln_context *, const kiln_tensor *const *, size_t, int64_t,
                        kiln_tensor **);
  kiln_status (*stack)(kiln_context *, const kiln_tensor *const *, size_t, int64_t,
                       kiln_tensor **);
  kiln_status (*split)(kiln_context *, const kiln_tensor *, int64_t, const int64_t *, size_t,
                       kiln_tensor **);
  kiln_status (*slice)(kiln_context *, const kiln_tensor *, const kiln_range *, size_t,
                       kiln_tensor **);
  kiln_status (*slice_assign)(kiln_context *, kiln_tensor *, const kiln_range *, size_t,
                              const kiln_tensor *);
  kiln_status (*tile)(kiln_context *, const kiln_tensor *, const int64_t *, size_t,
                      kiln_tensor **);
  kiln_status (*repeat)(kiln_context *, const kiln_tensor *, int64_t, int64_t, kiln_tensor **);
  kiln_status (*pad)(kiln_context *, const kiln_tensor *, const int64_t *, const int64_t *,
                     kiln_pad_mode, kiln_scalar, kiln_tensor **);
  kiln_status (*tril)(kiln_context *, const kiln_tensor *, int64_t, kiln_tensor **);
  kiln_status (*triu)(kiln_context *, const kiln_tensor *, int64_t, kiln_tensor **);
  kiln_status (*diag)(kiln_context *, const kiln_tensor *, int64_t, kiln_tensor **);
  kiln_status (*kron)(kiln_context *, const kiln_tensor *, const kiln_tensor *, kiln_tensor **);
  kiln_status (*broadcast_to)(kiln_context *, const kiln_tensor *, size_t, const int64_t *,
                              kiln_tensor **);

  /* indexing (kiln/index.h) */
  kiln_status (*gather)(kiln_context *, const kiln_tensor *, int64_t, const kiln_tensor *,
                        kiln_tensor **);
  kiln_status (*index_select)(kiln_context *, const kiln_tensor *, int64_t, const kiln_tensor *,
                              kiln_tensor **);
  kiln_status (*scatter)(kiln_context *, const kiln_tensor *, int64_t, const kiln_tensor *,
                         const kiln_tensor *, kiln_scatter_mode, kiln_tensor **);
  kiln_status (*masked_fill)(kiln_context *, const kiln_tensor *, const kiln_tensor *,
                             kiln_scalar, kiln_tensor **);
  kiln_status (*masked_select)(kiln_context *, const kiln_tensor *, const kiln_tensor *,
                               kiln_tensor **, uint64_t *);
  kiln_status (*nonzero)(kiln_context *, const kiln_tensor *, kiln_tensor **, uint64_t *);
  kiln_status (*embedding)(kiln_context *, const kiln_tensor *, const kiln_tensor *,
                           kiln_tensor **);
  kiln_status (*sub2ind)(kiln_context *, const int64_t *, size_t, const kiln_tensor *,
                         kiln_tensor **);
  kiln_status (*ind2sub)(kiln_context *, const int64_t *, size_t, const kiln_tensor *,
                         kiln_tensor **);
  kiln_status (*one_hot)(kiln_context *, const kiln_tensor *, int64_t, kiln_dtype,
                         kiln_tensor **);

  /* creation (kiln/create.h) */
  kiln_status (*tensor_ones)(kiln_context *, kiln_dtype, size_t, const int64_t *,
                             kiln_tensor **);
  kiln_status (*tensor_empty_like)(const kiln_tensor *, kiln_tensor **);
  kiln_status (*tensor_zeros_like)(const kiln_tensor *, kiln_tensor **);
  kiln_status (*tensor_ones_like)(const kiln_tensor *, kiln_tensor **);
  kiln_status (*tensor_full_like)(const kiln_tensor *, kiln_scalar, kiln_tensor **);
  kiln_status (*arange)(kiln_context *, kiln_scalar, kiln_scalar, kiln_scalar, kiln_dtype,
                        kiln_tensor **);
  kiln_status (*linspace)(kiln_context *, double, double, int64_t, int, kiln_dtype,
                          kiln_tensor **);
  kiln_status (*logspace)(kiln_context *, double, double, int64_t, int, double, kiln_dtype,
                          kiln_tensor **);
  kiln_status (*eye)(kiln_context *, int64_t, int64_t, int64_t, kiln_dtype, kiln_tensor **);
  kiln_status (*tri)(kiln_context *, int64_t, int64_t, int64_t, kiln_dtype, kiln_tensor **);
  kiln_status (*meshgrid)(kiln_context *, const kiln_tensor *const *, size_t,
                          kiln_meshgrid_indexing, kiln_tensor **);

  /* random numbers (kiln/random.h) */
  kiln_status (*rng_seed)(kiln_context *, uint64_t);
  kiln_status (*rng_state_get)(const kiln_context *, kiln_rng_state *);
  kiln_status (*rng_state_set)(kiln_context *, const kiln_rng_state *);
  kiln_status (*random_uniform)(kiln_context *, kiln_tensor *, double, double);
  kiln_status (*random_normal)(kiln_context *, kiln_tensor *, double, double);
  kiln_status (*random_integers)(kiln_context *, kiln_tensor *, int64_t, int64_t);
  kiln_status (*random_bernoulli)(kiln_context *, kiln_tensor *, double);
  kiln_status (*random_bits)(kiln_context *, kiln_tensor *);
  kiln_status (*random_permutation)(kiln_context *, int64_t, kiln_dtype, kiln_tensor **);
  kiln_status (*random_shuffle)(kiln_context *, const kiln_tensor *, kiln_tensor **);
  /* BLAS family (appended; older libraries have a smaller struct_size) */
  kiln_status (*gemm)(kiln_context *, kiln_trans, kiln_trans, double, const kiln_tensor *,
                      const kiln_tensor *, double, kiln_tensor **);
  kiln_status (*matmul)(kiln_context *, const kiln_tensor *, const kiln_tensor *, kiln_tensor **);
  kiln_status (*gemv)(kiln_context *, kiln_trans, double, const kiln_tensor *,
                      const kiln_tensor *, double, kiln_tensor **);
  kiln_status (*syrk)(kiln_context *, kiln_uplo, kiln_trans, double, const kiln_tensor *,
                      double, kiln_tensor **, int);
  kiln_status (*dot)(kiln_context *, const kiln_tensor *, const kiln_tensor *, kiln_tensor **);
  kiln_status (*axpy)(kiln_context *, double, const kiln_tensor *, kiln_tensor *);
  kiln_status (*scal)(kiln_context *, double, kiln_tensor *);
  kiln_status (*blas_warm)(kiln_context *, kiln_blas_warm_scope);

  /* FFT family (in a build without clFFT and VkFFT, plan creation returns KILN_ERR_UNSUPPORTED) */
  kiln_status (*fft_plan_create)(kiln_context *, kiln_fft_kind, size_t, const int64_t *, int64_t,
                                 kiln_dtype, int, kiln_fft_backend, kiln_fft_plan **);
  kiln_status (*fft_execute)(kiln_fft_plan *, kiln_fft_direction, kiln_fft_norm, kiln_tensor *,
                             kiln_tensor **);
  kiln_status (*fft_plan_release)(kiln_fft_plan *);
} kiln_provider;

/** Type of kiln_get_provider, for dlsym(). */
typedef kiln_status (*kiln_get_provider_fn)(uint32_t abi_version, const kiln_provider **out);

/**
 * Hands out the library's provider table (static; never freed).
 * @return KILN_OK; KILN_ERR_INVALID_ARGUMENT for NULL out; KILN_ERR_ABI when
 *         abi_version is not the library's KILN_PROVIDER_ABI (*out is then set
 *         to NULL and the message names both versions).
 */
KILN_API kiln_status kiln_get_provider(uint32_t abi_version, const kiln_provider **out);

#ifdef __cplusplus
}
#endif
#endif
