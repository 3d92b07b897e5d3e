/*
 * Fuzz target for the cache entry parser, the one parser in kiln that reads
 * bytes anyone with write access to the cache directory can plant.
 *
 * With clang (CC=clang meson setup ...) the build also makes
 * fuzz_cache_entry_libfuzzer, a libFuzzer binary (commands in
 * tests/fuzz/meson.build and docs/cache.md). Without libFuzzer, replay.c
 * drives the same entry point over the checked-in corpus and random
 * mutations in the normal test run (suite "fuzz").
 *
 * Each input is parsed as it is (its MAC almost never verifies, so only the
 * checks before the MAC run to the end) and once more resealed with the
 * fuzz key, which takes arbitrary headers through the whole parser: the
 * view of someone who holds the key, the worst case for the parser.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_key.h"
#include "runtime/disk_cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads every byte the header claims, so a sanitizer sees any out-of-bounds view. */
static unsigned
touch(const struct kiln__dc_header *h, const uint8_t *lo, const uint8_t *hi)
{
  unsigned sum = 0;
  for (int i = 0; i < KILN__DC_NSTR; i++) {
    const uint8_t *p = (const uint8_t *)h->str[i];
    if (p < lo || p + h->len[i] > hi || memchr(p, 0, h->len[i]))
      abort();
    for (uint32_t k = 0; k < h->len[i]; k++)
      sum += p[k];
  }
  return sum;
}

/* A whole-file parse; an accepted entry must describe exactly the bytes it came from. */
static unsigned
parse_full(const uint8_t *data, size_t size)
{
  struct kiln__dc_header h;
  const char *why = NULL;
  unsigned sum = 0;
  if (kiln__dc_parse(data, size, size, 1, KILN__DC_FORMAT, fuzz_mac_key, &h, &why) == 0) {
    if ((uint64_t)h.header_size + h.payload_size + KILN__DC_TRAILER != size || !h.payload ||
        h.payload != data + h.header_size)
      abort();
    sum += touch(&h, data, data + h.header_size);
    for (uint64_t i = 0; i < h.payload_size; i++)
      sum += h.payload[i];
  } else if (!why || !*why) {
    abort(); /* every refusal says why: the CLI prints it */
  }
  return sum;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct kiln__dc_header h;
  const char *why = NULL;
  volatile unsigned sink = 0;
  sink += parse_full(data, size);
  if (size >= KILN__DC_TRAILER) {
    uint8_t *sealed = malloc(size);
    if (!sealed)
      abort();
    memcpy(sealed, data, size);
    kiln__dc_mac_seal(sealed, size, fuzz_mac_key);
    sink += parse_full(sealed, size);
    free(sealed);
  }
  /* The listing path parses a header prefix against the file's full size. */
  size_t n = size < 4096 ? size : 4096;
  if (kiln__dc_parse(data, n, size, 0, KILN__DC_FORMAT, NULL, &h, &why) == 0) {
    if (h.payload || h.header_size > n)
      abort();
    sink += touch(&h, data, data + h.header_size);
  }
  (void)sink;
  return 0;
}
