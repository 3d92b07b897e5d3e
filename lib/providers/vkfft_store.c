/*
 * The file store behind VkFFT's saved binaries (see vkfft.c for the policy):
 * <kiln cache>/vkfft/<FNV-1a-64 of key>.bin holding magic, format, the key,
 * the payload and an FNV-1a checksum over key and payload; written to a
 * unique temp file in the same directory and renamed. Kept apart from
 * vkfft.c so that it builds and is tested without vkFFT.h; it moves into
 * the kernel cache's entry format when that lands.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "providers/vkfft_store.h"
#include "runtime/runtime.h"

#define STORE_MAGIC "KILNVKFT"
#define STORE_FORMAT KILN__VKFFT_STORE_FORMAT

static uint64_t
fnv1a(uint64_t h, const void *data, size_t len)
{
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

#define FNV_INIT 0xcbf29ce484222325ull

/* <cache>/vkfft/<hash>.bin; -1 when there is no cache directory. */
int
kiln__vkfft_store_path(const char *key, char *path, size_t len, int create_dir)
{
  char dir[4096];
  if (kiln__cache_dir(dir, sizeof dir - 8) != 0)
    return -1;
  strcat(dir, "/vkfft");
  if (create_dir && kiln__mkdir_p(dir) != 0)
    return -1;
  int n = snprintf(path, len, "%s/%016llx.bin", dir,
                   (unsigned long long)fnv1a(FNV_INIT, key, strlen(key)));
  return n > 0 && (size_t)n < len ? 0 : -1;
}

/*
 * Reads the payload stored for key: NULL on a miss. An entry whose key or
 * checksum differs is a miss (a hash collision or a torn/corrupt file).
 */
char *
kiln__vkfft_store_read(const char *key, uint64_t *size)
{
  char path[4200];
  if (kiln__vkfft_store_path(key, path, sizeof path, 0) != 0)
    return NULL;
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char magic[8];
  uint32_t fmt = 0, klen = 0;
  uint64_t plen = 0, sum = 0;
  char *stored_key = NULL, *payload = NULL;
  size_t want = strlen(key);
  int ok = fread(magic, 1, 8, f) == 8 && memcmp(magic, STORE_MAGIC, 8) == 0 &&
           fread(&fmt, sizeof fmt, 1, f) == 1 && fmt == STORE_FORMAT &&
           fread(&klen, sizeof klen, 1, f) == 1 && klen == want &&
           (stored_key = malloc(klen + 1)) != NULL && fread(stored_key, 1, klen, f) == klen &&
           memcmp(stored_key, key, klen) == 0 && fread(&plen, sizeof plen, 1, f) == 1 && plen > 0 &&
           plen < ((uint64_t)1 << 32) && (payload = malloc((size_t)plen)) != NULL &&
           fread(payload, 1, (size_t)plen, f) == plen && fread(&sum, sizeof sum, 1, f) == 1 &&
           sum == fnv1a(fnv1a(FNV_INIT, key, klen), payload, (size_t)plen);
  fclose(f);
  free(stored_key);
  if (!ok) {
    free(payload);
    return NULL;
  }
  *size = plen;
  return payload;
}

void
kiln__vkfft_store_remove(const char *key)
{
  char path[4200];
  if (kiln__vkfft_store_path(key, path, sizeof path, 0) == 0)
    unlink(path);
}

static int
write_all(int fd, const void *data, size_t len)
{
  const char *p = data;
  while (len) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

/* Publishes payload for key: a unique temp file in the same directory, then rename. */
int
kiln__vkfft_store_write(const char *key, const void *payload, uint64_t plen)
{
  char path[4200], tmp[4300];
  if (kiln__vkfft_store_path(key, path, sizeof path, 1) != 0)
    return -1;
  snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0)
    return -1;
  uint32_t fmt = STORE_FORMAT, klen = (uint32_t)strlen(key);
  uint64_t sum = fnv1a(fnv1a(FNV_INIT, key, klen), payload, (size_t)plen);
  int rc = write_all(fd, STORE_MAGIC, 8) || write_all(fd, &fmt, sizeof fmt) ||
           write_all(fd, &klen, sizeof klen) || write_all(fd, key, klen) ||
           write_all(fd, &plen, sizeof plen) || write_all(fd, payload, (size_t)plen) ||
           write_all(fd, &sum, sizeof sum) || fdatasync(fd);
  if (close(fd) != 0)
    rc = -1;
  if (rc == 0 && rename(tmp, path) != 0)
    rc = -1;
  if (rc != 0)
    unlink(tmp);
  return rc;
}

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
