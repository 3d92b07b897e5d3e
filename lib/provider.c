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
