/* The provider table handed to dlopen() users, and the library version. */
#include "core/error.h"
#include "kiln.h"
#include "kiln_config.h"

#define SLOT(slot, function) .slot = function,
static const kiln_provider provider = {
    .abi_version = KILN_PROVIDER_ABI,
    .struct_size = sizeof(kiln_provider),
    .name = "kiln",
    .version = KILN_VERSION_STRING,
    KILN_PROVIDER_SLOTS(SLOT)
};
#undef SLOT

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
