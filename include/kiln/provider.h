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
 * releases only append slots at the end and grow struct_size (check
 * struct_size before using a slot added after the first release, as the
 * list below marks); a change that breaks existing slots bumps
 * KILN_PROVIDER_ABI. Every slot is set in every build: families whose back
 * end is missing return KILN_ERR_UNSUPPORTED. The experimental APIs
 * (kiln/cache.h, kiln/tune.h, kiln/profile.h: docs/stability.md) have no
 * slots; dlsym() them by name.
 */
#ifndef KILN_PROVIDER_H
#define KILN_PROVIDER_H

#include "kiln/blas.h"
#include "kiln/complex.h"
#include "kiln/context.h"
#include "kiln/dtype.h"
#include "kiln/log.h"
#include "kiln/status.h"
#include "kiln/tensor.h"
#include "kiln/elementwise.h"
#include "kiln/create.h"
#include "kiln/index.h"
#include "kiln/layout.h"
#include "kiln/random.h"
#include "kiln/reduce.h"
#include "kiln/fft.h"
#include "kiln/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/** ABI version of struct kiln_provider this header describes. */
#define KILN_PROVIDER_ABI 1u

/*
 * The slots, in table order: X(slot, function). Each slot is a pointer of
 * the function's own type, so a signature is written once, at its
 * documented declaration. Only append.
 */
#define KILN_PROVIDER_SLOTS(X) \
  /* core */ \
  X(status_name, kiln_status_name) \
  X(status_string, kiln_status_string) \
  X(last_error, kiln_last_error) \
  X(last_error_status, kiln_last_error_status) \
  X(last_error_code, kiln_last_error_code) \
  /* context */ \
  X(context_create, kiln_context_create) \
  X(context_create_from_cl, kiln_context_create_from_cl) \
  X(context_release, kiln_context_release) \
  X(context_finish, kiln_context_finish) \
  X(context_device_info, kiln_context_device_info) \
  /* tensor */ \
  X(tensor_create, kiln_tensor_create) \
  X(tensor_zeros, kiln_tensor_zeros) \
  X(tensor_full, kiln_tensor_full) \
  X(tensor_from_host, kiln_tensor_from_host) \
  X(tensor_upload, kiln_tensor_upload) \
  X(tensor_download, kiln_tensor_download) \
  X(tensor_wrap, kiln_tensor_wrap) \
  X(tensor_release, kiln_tensor_release) \
  X(tensor_cl_mem, kiln_tensor_cl_mem) \
  /* elementwise family */ \
  X(unary, kiln_unary) \
  X(binary, kiln_binary) \
  X(binary_scalar, kiln_binary_scalar) \
  X(where, kiln_where) \
  X(clamp, kiln_clamp) \
  X(cast, kiln_cast) \
  X(copy, kiln_copy) \
  /* reductions and scans (kiln/reduce.h) */ \
  X(reduce, kiln_reduce) \
  X(argreduce, kiln_argreduce) \
  X(scan, kiln_scan) \
  X(scan_indexed, kiln_scan_indexed) \
  X(diff, kiln_diff) \
  /* layout (kiln/layout.h) */ \
  X(reshape, kiln_reshape) \
  X(transpose, kiln_transpose) \
  X(permute, kiln_permute) \
  X(flip, kiln_flip) \
  X(roll, kiln_roll) \
  X(concat, kiln_concat) \
  X(stack, kiln_stack) \
  X(split, kiln_split) \
  X(slice, kiln_slice) \
  X(slice_assign, kiln_slice_assign) \
  X(tile, kiln_tile) \
  X(repeat, kiln_repeat) \
  X(pad, kiln_pad) \
  X(tril, kiln_tril) \
  X(triu, kiln_triu) \
  X(diag, kiln_diag) \
  X(kron, kiln_kron) \
  X(broadcast_to, kiln_broadcast_to) \
  /* indexing (kiln/index.h) */ \
  X(gather, kiln_gather) \
  X(index_select, kiln_index_select) \
  X(scatter, kiln_scatter) \
  X(masked_fill, kiln_masked_fill) \
  X(masked_select, kiln_masked_select) \
  X(nonzero, kiln_nonzero) \
  X(embedding, kiln_embedding) \
  X(sub2ind, kiln_sub2ind) \
  X(ind2sub, kiln_ind2sub) \
  X(one_hot, kiln_one_hot) \
  /* creation (kiln/create.h) */ \
  X(tensor_ones, kiln_tensor_ones) \
  X(tensor_empty_like, kiln_tensor_empty_like) \
  X(tensor_zeros_like, kiln_tensor_zeros_like) \
  X(tensor_ones_like, kiln_tensor_ones_like) \
  X(tensor_full_like, kiln_tensor_full_like) \
  X(arange, kiln_arange) \
  X(linspace, kiln_linspace) \
  X(logspace, kiln_logspace) \
  X(eye, kiln_eye) \
  X(tri, kiln_tri) \
  X(meshgrid, kiln_meshgrid) \
  /* random numbers (kiln/random.h) */ \
  X(rng_seed, kiln_rng_seed) \
  X(rng_state_get, kiln_rng_state_get) \
  X(rng_state_set, kiln_rng_state_set) \
  X(random_uniform, kiln_random_uniform) \
  X(random_normal, kiln_random_normal) \
  X(random_integers, kiln_random_integers) \
  X(random_bernoulli, kiln_random_bernoulli) \
  X(random_bits, kiln_random_bits) \
  X(random_permutation, kiln_random_permutation) \
  X(random_shuffle, kiln_random_shuffle) \
  /* BLAS family (appended; older libraries have a smaller struct_size) */ \
  X(gemm, kiln_gemm) \
  X(matmul, kiln_matmul) \
  X(gemv, kiln_gemv) \
  X(syrk, kiln_syrk) \
  X(dot, kiln_dot) \
  X(axpy, kiln_axpy) \
  X(scal, kiln_scal) \
  X(blas_warm, kiln_blas_warm) \
  /* FFT family (in a build without clFFT and VkFFT, plan creation returns KILN_ERR_UNSUPPORTED) */ \
  X(fft_plan_create, kiln_fft_plan_create) \
  X(fft_execute, kiln_fft_execute) \
  X(fft_plan_release, kiln_fft_plan_release) \
  /* ABI 1 appended (struct_size tells a caller whether a library has them): */ \
  /* errors */ \
  X(last_error_op, kiln_last_error_op) \
  X(clear_error, kiln_clear_error) \
  /* context: options, objects, devices, pool */ \
  X(context_set_option, kiln_context_set_option) \
  X(context_get_option, kiln_context_get_option) \
  X(option_bounds, kiln_option_bounds) \
  X(context_cl_objects, kiln_context_cl_objects) \
  X(device_list, kiln_device_list) \
  X(pool_stats_get, kiln_pool_stats_get) \
  X(pool_trim, kiln_pool_trim) \
  /* tensor accessors */ \
  X(tensor_context, kiln_tensor_context) \
  X(tensor_dtype, kiln_tensor_dtype) \
  X(tensor_ndim, kiln_tensor_ndim) \
  X(tensor_dim, kiln_tensor_dim) \
  X(tensor_numel, kiln_tensor_numel) \
  X(tensor_nbytes, kiln_tensor_nbytes) \
  /* dtypes and op tables */ \
  X(dtype_name, kiln_dtype_name) \
  X(dtype_size, kiln_dtype_size) \
  X(dtype_from_name, kiln_dtype_from_name) \
  X(unary_op_name, kiln_unary_op_name) \
  X(unary_op_supports, kiln_unary_op_supports) \
  X(binary_op_name, kiln_binary_op_name) \
  X(binary_op_supports, kiln_binary_op_supports) \
  X(reduce_op_name, kiln_reduce_op_name) \
  X(reduce_op_supports, kiln_reduce_op_supports) \
  X(reduce_result_dtype, kiln_reduce_result_dtype) \
  X(scan_op_name, kiln_scan_op_name) \
  X(scan_op_supports, kiln_scan_op_supports) \
  X(scan_result_dtype, kiln_scan_result_dtype) \
  /* back ends */ \
  X(blas_has_clblast, kiln_blas_has_clblast) \
  X(fft_backend_available, kiln_fft_backend_available) \
  X(fft_backend_name, kiln_fft_backend_name) \
  X(fft_plan_backend, kiln_fft_plan_backend) \
  X(fft_stats_get, kiln_fft_stats_get) \
  /* diagnostics */ \
  X(log_set_handler, kiln_log_set_handler) \
  X(log_set_level, kiln_log_set_level) \
  X(log_get_level, kiln_log_get_level) \
  /* half-precision conversions (f16, bf16) */ \
  X(f16_from_f32, kiln_f16_from_f32) \
  X(f16_from_f64, kiln_f16_from_f64) \
  X(f16_to_f32, kiln_f16_to_f32) \
  X(bf16_from_f32, kiln_bf16_from_f32) \
  X(bf16_from_f64, kiln_bf16_from_f64) \
  X(bf16_to_f32, kiln_bf16_to_f32) \
  /* type promotion */ \
  X(dtype_promote, kiln_dtype_promote) \
  /* nn: row kernels, activations, losses */ \
  X(softmax, kiln_softmax) \
  X(log_softmax, kiln_log_softmax) \
  X(softmax_backward, kiln_softmax_backward) \
  X(log_softmax_backward, kiln_log_softmax_backward) \
  X(layer_norm, kiln_layer_norm) \
  X(layer_norm_backward, kiln_layer_norm_backward) \
  X(rms_norm, kiln_rms_norm) \
  X(rms_norm_backward, kiln_rms_norm_backward) \
  X(activation_name, kiln_activation_name) \
  X(activation_supports, kiln_activation_supports) \
  X(activation_backward_uses_output, kiln_activation_backward_uses_output) \
  X(activation_forward, kiln_activation_forward) \
  X(activation_backward, kiln_activation_backward) \
  X(cross_entropy, kiln_cross_entropy) \
  X(cross_entropy_backward, kiln_cross_entropy_backward) \
  X(nll_loss, kiln_nll_loss) \
  X(nll_loss_backward, kiln_nll_loss_backward) \
  X(loss_op_name, kiln_loss_op_name) \
  X(loss, kiln_loss) \
  X(loss_backward, kiln_loss_backward) \
  X(nn_supports, kiln_nn_supports) \
  X(complex_from_parts, kiln_complex) \
  X(view_as_real, kiln_view_as_real) \
  X(view_as_complex, kiln_view_as_complex) \
  X(gemm_complex, kiln_gemm_complex) \
  /* complex creation */ \
  X(tensor_full_complex, kiln_tensor_full_complex) \
  X(linspace_complex, kiln_linspace_complex) \
  /* stats: histograms, bincount, quantiles, cov */ \
  X(histogram, kiln_histogram) \
  X(histogram_edges, kiln_histogram_edges) \
  X(histogram2d, kiln_histogram2d) \
  X(bincount, kiln_bincount) \
  X(quantile, kiln_quantile) \
  X(percentile, kiln_percentile) \
  X(quantile_local_max, kiln_quantile_local_max) \
  X(cov, kiln_cov) \
  X(corrcoef, kiln_corrcoef) \
  /* linalg: LU, Cholesky, triangular */ \
  X(linalg_lu_factor, kiln_linalg_lu_factor) \
  X(linalg_lu, kiln_linalg_lu) \
  X(linalg_lu_solve, kiln_linalg_lu_solve) \
  X(linalg_solve, kiln_linalg_solve) \
  X(linalg_inv, kiln_linalg_inv) \
  X(linalg_det, kiln_linalg_det) \
  X(linalg_slogdet, kiln_linalg_slogdet) \
  X(linalg_rcond, kiln_linalg_rcond) \
  X(linalg_cholesky, kiln_linalg_cholesky) \
  X(linalg_cholesky_solve, kiln_linalg_cholesky_solve) \
  X(linalg_cholesky_inverse, kiln_linalg_cholesky_inverse) \
  X(trsm, kiln_trsm) \
  X(trmm, kiln_trmm) \
  /* sort: sorting, selection, unique, searching, set operations */ \
  X(sort, kiln_sort) \
  X(argsort, kiln_argsort) \
  X(topk, kiln_topk) \
  X(kthvalue, kiln_kthvalue) \
  X(sortrows, kiln_sortrows) \
  X(sort_local_max, kiln_sort_local_max) \
  X(unique, kiln_unique) \
  X(unique_consecutive, kiln_unique_consecutive) \
  X(searchsorted, kiln_searchsorted) \
  X(isin, kiln_isin) \
  X(set_union, kiln_union) \
  X(intersect, kiln_intersect) \
  X(setdiff, kiln_setdiff) \
  X(setxor, kiln_setxor) \
  /* linalg_spectral: QR, least squares, eigen, SVD, norms */ \
  X(linalg_qr, kiln_linalg_qr) \
  X(linalg_lstsq, kiln_linalg_lstsq) \
  X(linalg_eigh, kiln_linalg_eigh) \
  X(linalg_eig, kiln_linalg_eig) \
  X(linalg_svd, kiln_linalg_svd) \
  X(linalg_pinv, kiln_linalg_pinv) \
  X(linalg_matrix_rank, kiln_linalg_matrix_rank) \
  X(linalg_matrix_norm, kiln_linalg_matrix_norm) \
  X(linalg_cond, kiln_linalg_cond) \
  /* nn_conv: pooling and convolution */ \
  X(max_pool, kiln_max_pool) \
  X(max_pool_backward, kiln_max_pool_backward) \
  X(avg_pool, kiln_avg_pool) \
  X(avg_pool_backward, kiln_avg_pool_backward) \
  X(adaptive_avg_pool, kiln_adaptive_avg_pool) \
  X(adaptive_avg_pool_backward, kiln_adaptive_avg_pool_backward) \
  X(conv, kiln_conv) \
  X(conv_backward, kiln_conv_backward) \
  X(conv_transpose, kiln_conv_transpose) \
  /* nn training: optimizers, clipping, dropout, group/batch norm, attention, RoPE */ \
  X(sgd_step, kiln_sgd_step) \
  X(adam_step, kiln_adam_step) \
  X(clip_grad_norm, kiln_clip_grad_norm) \
  X(dropout, kiln_dropout) \
  X(dropout_backward, kiln_dropout_backward) \
  X(group_norm, kiln_group_norm) \
  X(group_norm_backward, kiln_group_norm_backward) \
  X(batch_norm, kiln_batch_norm) \
  X(batch_norm_backward, kiln_batch_norm_backward) \
  X(attention, kiln_attention) \
  X(attention_backward, kiln_attention_backward) \
  X(rope, kiln_rope) \
  X(rope_backward, kiln_rope_backward) \
  X(embedding_backward, kiln_embedding_backward) \
  X(embedding_bag, kiln_embedding_bag) \
  X(embedding_bag_backward, kiln_embedding_bag_backward) \
  X(cross_entropy_weighted, kiln_cross_entropy_weighted) \
  X(cross_entropy_weighted_backward, kiln_cross_entropy_weighted_backward) \
  X(nll_loss_weighted, kiln_nll_loss_weighted) \
  X(nll_loss_weighted_backward, kiln_nll_loss_weighted_backward) \
  /* user kernels (kiln/kernel.h) */ \
  X(elementwise_kernel_create, kiln_elementwise_kernel_create) \
  X(elementwise_kernel_run, kiln_elementwise_kernel_run) \
  X(reduction_kernel_create, kiln_reduction_kernel_create) \
  X(reduction_kernel_run, kiln_reduction_kernel_run) \
  X(scan_kernel_create, kiln_scan_kernel_create) \
  X(scan_kernel_run, kiln_scan_kernel_run) \
  X(raw_kernel_create, kiln_raw_kernel_create) \
  X(raw_kernel_run, kiln_raw_kernel_run) \
  X(user_kernel_source, kiln_user_kernel_source) \
  X(user_kernel_release, kiln_user_kernel_release) \
  /* expr: fused expressions */ \
  X(expr_create, kiln_expr_create) \
  X(expr_release, kiln_expr_release) \
  X(expr_input, kiln_expr_input) \
  X(expr_scalar, kiln_expr_scalar) \
  X(expr_constant, kiln_expr_constant) \
  X(expr_unary, kiln_expr_unary) \
  X(expr_binary, kiln_expr_binary) \
  X(expr_where, kiln_expr_where) \
  X(expr_clamp, kiln_expr_clamp) \
  X(expr_cast, kiln_expr_cast) \
  X(expr_output, kiln_expr_output) \
  X(expr_reduce, kiln_expr_reduce) \
  X(expr_parse, kiln_expr_parse) \
  X(expr_hash, kiln_expr_hash) \
  X(expr_counts, kiln_expr_counts) \
  X(expr_plan_create, kiln_expr_plan_create) \
  X(expr_plan_release, kiln_expr_plan_release) \
  X(expr_plan_output, kiln_expr_plan_output) \
  X(expr_plan_run, kiln_expr_plan_run) \
  X(expr_eval, kiln_expr_eval) \
  X(expr_plan_source, kiln_expr_plan_source) \
  X(expr_scan, kiln_expr_scan) \
  /* linear algebra: complex eigen results (issue 18) */ \
  X(linalg_eig_complex, kiln_linalg_eig_complex)

#define KILN_PROVIDER_SLOT_(slot, function) __typeof__(function) *slot;

typedef struct kiln_provider {
  uint32_t abi_version; /**< KILN_PROVIDER_ABI of the library */
  uint32_t struct_size; /**< sizeof(kiln_provider) in the library; slots past it are absent */
  const char *name;     /**< "kiln" */
  const char *version;  /**< library version, "MAJOR.MINOR.PATCH" */
  KILN_PROVIDER_SLOTS(KILN_PROVIDER_SLOT_)
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
