/* The provider table handed to dlopen() users, and the library version. */
#include "core/error.h"
#include "kiln.h"
#include "kiln_config.h"

static const kiln_provider provider = {
    .abi_version = KILN_PROVIDER_ABI,
    .struct_size = sizeof(kiln_provider),
    .name = "kiln",
    .version = KILN_VERSION_STRING,
    .status_name = kiln_status_name,
    .status_string = kiln_status_string,
    .last_error = kiln_last_error,
    .last_error_status = kiln_last_error_status,
    .last_error_code = kiln_last_error_code,
    .context_create = kiln_context_create,
    .context_create_from_cl = kiln_context_create_from_cl,
    .context_release = kiln_context_release,
    .context_finish = kiln_context_finish,
    .context_device_info = kiln_context_device_info,
    .tensor_create = kiln_tensor_create,
    .tensor_zeros = kiln_tensor_zeros,
    .tensor_full = kiln_tensor_full,
    .tensor_from_host = kiln_tensor_from_host,
    .tensor_upload = kiln_tensor_upload,
    .tensor_download = kiln_tensor_download,
    .tensor_wrap = kiln_tensor_wrap,
    .tensor_release = kiln_tensor_release,
    .tensor_cl_mem = kiln_tensor_cl_mem,
    .unary = kiln_unary,
    .binary = kiln_binary,
    .binary_scalar = kiln_binary_scalar,
    .where = kiln_where,
    .clamp = kiln_clamp,
    .cast = kiln_cast,
    .copy = kiln_copy,
    .reduce = kiln_reduce,
    .argreduce = kiln_argreduce,
    .scan = kiln_scan,
    .scan_indexed = kiln_scan_indexed,
    .diff = kiln_diff,
    .reshape = kiln_reshape,
    .transpose = kiln_transpose,
    .permute = kiln_permute,
    .flip = kiln_flip,
    .roll = kiln_roll,
    .concat = kiln_concat,
    .stack = kiln_stack,
    .split = kiln_split,
    .slice = kiln_slice,
    .slice_assign = kiln_slice_assign,
    .tile = kiln_tile,
    .repeat = kiln_repeat,
    .pad = kiln_pad,
    .tril = kiln_tril,
    .triu = kiln_triu,
    .diag = kiln_diag,
    .kron = kiln_kron,
    .broadcast_to = kiln_broadcast_to,
    .gather = kiln_gather,
    .index_select = kiln_index_select,
    .scatter = kiln_scatter,
    .masked_fill = kiln_masked_fill,
    .masked_select = kiln_masked_select,
    .nonzero = kiln_nonzero,
    .embedding = kiln_embedding,
    .sub2ind = kiln_sub2ind,
    .ind2sub = kiln_ind2sub,
    .one_hot = kiln_one_hot,
    .tensor_ones = kiln_tensor_ones,
    .tensor_empty_like = kiln_tensor_empty_like,
    .tensor_zeros_like = kiln_tensor_zeros_like,
    .tensor_ones_like = kiln_tensor_ones_like,
    .tensor_full_like = kiln_tensor_full_like,
    .arange = kiln_arange,
    .linspace = kiln_linspace,
    .logspace = kiln_logspace,
    .eye = kiln_eye,
    .tri = kiln_tri,
    .meshgrid = kiln_meshgrid,
    .rng_seed = kiln_rng_seed,
    .rng_state_get = kiln_rng_state_get,
    .rng_state_set = kiln_rng_state_set,
    .random_uniform = kiln_random_uniform,
    .random_normal = kiln_random_normal,
    .random_integers = kiln_random_integers,
    .random_bernoulli = kiln_random_bernoulli,
    .random_bits = kiln_random_bits,
    .random_permutation = kiln_random_permutation,
    .random_shuffle = kiln_random_shuffle,
    .gemm = kiln_gemm,
    .matmul = kiln_matmul,
    .gemv = kiln_gemv,
    .syrk = kiln_syrk,
    .dot = kiln_dot,
    .axpy = kiln_axpy,
    .scal = kiln_scal,
    .blas_warm = kiln_blas_warm,
    /* Present in every build: without clFFT and VkFFT, plan creation says KILN_ERR_UNSUPPORTED. */
    .fft_plan_create = kiln_fft_plan_create,
    .fft_execute = kiln_fft_execute,
    .fft_plan_release = kiln_fft_plan_release,
};

kiln_status
kiln_get_provider(uint32_t abi_version, const kiln_provider **out)
{
  static const char op[] = "kiln_get_provider";
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  if (abi_version != KILN_PROVIDER_ABI) {
    *out = NULL;
    return kiln__fail(KILN_ERR_ABI, op, 0,
                      "caller was built for provider ABI %u, this libkiln %s provides ABI %u",
                      abi_version, KILN_VERSION_STRING, KILN_PROVIDER_ABI);
  }
  *out = &provider;
  return KILN_OK;
}

const char *
kiln_version(void)
{
  return KILN_VERSION_STRING;
}
