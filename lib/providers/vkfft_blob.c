/*
 * The check that keeps VkFFT 1.2.26 application strings which its C-string
 * copies have cut (PoCL's binaries) out of the kernel cache and away from
 * VkFFT's loader (see vkfft.c). Apart from vkfft.c so that it builds and is
 * tested without vkFFT.h.
 */
#include <string.h>

#include "providers/vkfft_blob.h"

/*
 * Whether a VkFFT application string will load the way it was saved. VkFFT
 * writes each binary as "<size>\n" followed by the binary through
 * sprintf("%s"), and its loader reads <size> then takes the next size-1
 * bytes as the binary (the size counts a terminating NUL). A binary with
 * NUL bytes of its own (PoCL's) is cut at the first, so the recorded sizes
 * no longer match what follows. This walks the string as VkFFT's loader
 * does and accepts it only if every record is a decimal size, a newline and
 * size-1 bytes without NUL, followed by the next record or by the zero
 * padding VkFFT leaves at the end.
 */
int
kiln__vkfft_blob_intact(const char *blob, uint64_t size)
{
  uint64_t pos = 0;
  while (pos < size && blob[pos]) {
    uint64_t n = 0, digits = 0;
    while (pos + digits < size && blob[pos + digits] >= '0' && blob[pos + digits] <= '9' &&
           digits < 19)
      n = n * 10 + (uint64_t)(blob[pos + digits++] - '0');
    if (!digits || n == 0 || pos + digits >= size || blob[pos + digits] != '\n')
      return 0;
    uint64_t text = pos + digits + 1;
    if (n - 1 > size - text)
      return 0;
    if (memchr(blob + text, 0, (size_t)(n - 1)))
      return 0;
    pos = text + n - 1;
  }
  for (; pos < size; pos++)
    if (blob[pos])
      return 0;
  return 1;
}
