/* VkFFT application-string check (vkfft_blob.c): internal, also used by
 * tests/unit/test_vkfft_blob.c. */
#ifndef KILN_PROVIDERS_VKFFT_BLOB_H
#define KILN_PROVIDERS_VKFFT_BLOB_H

#include <stdint.h>

/*
 * Version of how kiln configures VkFFT (buffer layout, limits, flags); part of
 * every cached plan's key, so a change turns old entries into misses.
 */
#define KILN__VKFFT_LAYOUT 1u

/*
 * Whether a VkFFT 1.2.26 application string will load the way it was saved
 * (every record "<size>\n" plus size-2 bytes without NUL, as VkFFT's OpenCL
 * loader reads them, then zero padding). The _check form also reports the
 * offset of the first record that does not (NULL: not wanted).
 */
int kiln__vkfft_blob_intact(const char *blob, uint64_t size);
int kiln__vkfft_blob_check(const char *blob, uint64_t size, uint64_t *bad);

#endif
