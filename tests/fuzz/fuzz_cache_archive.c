/*
 * Fuzz target for the archive reader of `kiln cache import`
 * (tools/cache_archive_read.c): archives arrive from elsewhere, so every
 * byte of one is hostile. Each record the reader accepts goes on into the
 * entry parser, with its MAC checked under the fuzz key, as import does.
 *
 * With clang there is a libFuzzer binary (tests/fuzz/meson.build); without
 * it, replay_archive.c drives this entry point over the corpus and mutations.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_key.h"
#include "runtime/disk_cache.h"
#include "tools/cache_archive_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Counts the entries of an archive that are sound under the fuzz key. */
static int
check_record(const uint8_t *entry, size_t len, uint64_t index, void *user)
{
  (void)index;
  struct kiln__dc_header h;
  const char *why = NULL;
  if (kiln__dc_parse(entry, len, len, 1, KILN__DC_FORMAT, fuzz_mac_key, &h, &why) == 0) {
    if (!h.payload || h.payload != entry + h.header_size ||
        (uint64_t)h.header_size + h.payload_size + KILN__DC_TRAILER != len)
      abort();
    (*(uint64_t *)user)++;
  } else if (!why || !*why) {
    abort();
  }
  return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  /* The reader takes a stream, as the tool gives it a file; fmemopen needs a non-empty buffer. */
  FILE *f = fmemopen(size ? (void *)data : (void *)"", size ? size : 1, "rb");
  if (!f)
    abort();
  if (!size)
    fgetc(f);
  uint64_t records = 0, sound = 0;
  char err[512] = "";
  int r = archive_read(f, size, check_record, &sound, &records, err, sizeof err);
  fclose(f);
  if (r != 0 && !err[0])
    abort(); /* every refusal says why */
  if (r == 0 && sound > records)
    abort();
  return 0;
}
