/*
 * The check that keeps VkFFT 1.2.26 application strings which its C-string
 * copies have cut (PoCL's binaries) out of the kernel cache and away from
 * VkFFT's loader (see vkfft.c). Apart from vkfft.c so that it builds and is
 * tested without vkFFT.h.
 */
#include <string.h>

#include "backends/vkfft_blob.h"

/*
 * Whether a VkFFT application string will load the way it was saved. VkFFT's
 * OpenCL saver writes each binary as "<size>\n" and then the binary through
 * sprintf("%s"); its OpenCL loader reads <size> with strtol, takes the size-2
 * bytes after the newline as the binary and moves on by size +
 * floor(log10(size)) bytes, which lands on the next record only when the
 * text was exactly size-2 bytes (NVIDIA's binaries: PTX text whose reported
 * size counts two bytes past it). A binary with NUL bytes of its own
 * (PoCL's) is cut at the first, so the records no longer line up. This walks
 * the string as that loader does and accepts it only if every record is a
 * decimal size of at least 2, a newline and size-2 bytes without NUL, followed
 * by the next record or by the zero padding VkFFT leaves at the end (its
 * buffer is sized for one more byte per record). *bad, when not NULL, gets
 * the offset of the record that failed.
 */
int
kiln__vkfft_blob_check(const char *blob, uint64_t size, uint64_t *bad)
{
  uint64_t pos = 0;
  while (pos < size && blob[pos]) {
    uint64_t n = 0, digits = 0;
    if (bad)
      *bad = pos;
    while (pos + digits < size && blob[pos + digits] >= '0' && blob[pos + digits] <= '9' &&
           digits < 19)
      n = n * 10 + (uint64_t)(blob[pos + digits++] - '0');
    if (!digits || n < 2 || pos + digits >= size || blob[pos + digits] != '\n')
      return 0;
    uint64_t text = pos + digits + 1;
    if (n - 2 > size - text)
      return 0;
    if (memchr(blob + text, 0, (size_t)(n - 2)))
      return 0;
    pos = text + n - 2;
  }
  if (bad)
    *bad = pos;
  for (; pos < size; pos++)
    if (blob[pos])
      return 0;
  return 1;
}

int
kiln__vkfft_blob_intact(const char *blob, uint64_t size)
{
  return kiln__vkfft_blob_check(blob, size, NULL);
}
