/*
 * Runs the archive fuzz target without libFuzzer: every file of a corpus
 * directory, then mutations of a valid archive of two entries (bit flips,
 * byte writes, truncations, extensions, length fields at extremes), half of
 * them with every CRC recomputed so that they get past the archive's own
 * checks into the entries. An entry that comes out sound must be one of the
 * two originals, byte for byte: the CRCs say nothing about who made an
 * entry, its MAC does.
 *
 * usage: fuzz_cache_archive_replay CORPUS_DIR [MUTATIONS]
 *        fuzz_cache_archive_replay --write-corpus DIR   (regenerates the seed files)
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "replay_corpus.h"
#include "fuzz_key.h"
#include "runtime/disk_cache.h"
#include "tools/cache_archive_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct kiln__dc_ident ident = {
    "Fuzz Platform", "OpenCL 3.0 fuzz", "Fuzz Device", "OpenCL 3.0", "9.9", 7, 64};

static uint8_t *entries[2];
static size_t entry_len[2];

static void
put32(uint8_t *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void
put64(uint8_t *p, uint64_t v)
{
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t
get64(const uint8_t *p)
{
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

/* A valid archive (docs/cli.md) of the two entries; malloc'd, length in *n. */
static uint8_t *
valid_archive(size_t *n)
{
  for (int i = 0; i < 2; i++) {
    struct kiln__dc_req r;
    char text[64];
    snprintf(text, sizeof text, "kernel void k%d(global int *x) { x[0] = %d; }", i, i);
    kiln__dc_req_init(&r, &ident, "fuzz", text, strlen(text), "-DT=int");
    static const char payload[] = "a device binary, as far as the archive reader can tell";
    entry_len[i] =
        kiln__dc_serialize(&r, payload, sizeof payload, 1700000000, fuzz_mac_key, &entries[i]);
  }
  size_t total = ARCHIVE_HEADER + 2 * 16 + entry_len[0] + entry_len[1] + 20;
  uint8_t *a = calloc(1, total), *p = a;
  memcpy(p, ARCHIVE_MAGIC, 8);
  put32(p + 8, ARCHIVE_VERSION);
  put64(p + 16, 1700000000);
  p += ARCHIVE_HEADER;
  for (int i = 0; i < 2; i++) {
    put64(p, entry_len[i]);
    put32(p + 8, archive_crc32(0, entries[i], entry_len[i]));
    memcpy(p + 16, entries[i], entry_len[i]);
    p += 16 + entry_len[i];
  }
  memcpy(p, ARCHIVE_END, 8);
  put64(p + 8, 2);
  put32(p + 16, archive_crc32(0, a, total - 4));
  *n = total;
  return a;
}

/* Recomputes every record CRC and the archive CRC, as far as the lengths allow. */
static void
fix_crcs(uint8_t *a, size_t n)
{
  size_t off = ARCHIVE_HEADER;
  while (off + 16 <= n && memcmp(a + off, ARCHIVE_END, 8) != 0) {
    uint64_t len = get64(a + off);
    if (len > n - off - 16)
      return;
    put32(a + off + 8, archive_crc32(0, a + off + 16, (size_t)len));
    off += 16 + (size_t)len;
  }
  if (off + 20 == n)
    put32(a + n - 4, archive_crc32(0, a, n - 4));
}

static size_t
mutate(const uint8_t *src, size_t n, uint8_t *b)
{
  memcpy(b, src, n);
  size_t len = n;
  switch (replay_next() % 5) {
  case 0:
    b[replay_next() % n] ^= (uint8_t)(1u << (replay_next() % 8));
    break;
  case 1:
    b[replay_next() % n] = (uint8_t)replay_next();
    break;
  case 2:
    len = (size_t)(replay_next() % n);
    break;
  case 3: {
    size_t extra = 1 + (size_t)(replay_next() % 64);
    for (size_t i = 0; i < extra; i++)
      b[n + i] = (uint8_t)replay_next();
    len = n + extra;
    break;
  }
  default: {
    /* a record length or the count at an extreme */
    static const uint64_t values[] = {0, 1, 15, 16, 1ull << 31, ~0ull};
    size_t at[] = {ARCHIVE_HEADER, ARCHIVE_HEADER + 16 + entry_len[0], n - 12};
    put64(b + at[replay_next() % 3], values[replay_next() % 6]);
    break;
  }
  }
  if (replay_next() % 2)
    fix_crcs(b, len);
  return len;
}

static int
only_originals(const uint8_t *e, size_t len, uint64_t index, void *user)
{
  (void)index;
  struct kiln__dc_header h;
  const char *why;
  if (kiln__dc_parse(e, len, len, 1, KILN__DC_FORMAT, fuzz_mac_key, &h, &why) == 0) {
    int known = 0;
    for (int i = 0; i < 2; i++)
      known |= len == entry_len[i] && memcmp(e, entries[i], len) == 0;
    if (!known)
      (*(int *)user)++;
  }
  return 0;
}

static int
write_corpus(const char *dir)
{
  size_t n;
  uint8_t *a = valid_archive(&n);
  mkdir(dir, 0755);
  int bad = replay_write_seed(dir, "valid", a, n) | replay_write_seed(dir, "empty", a, 0) |
            replay_write_seed(dir, "header-only", a, ARCHIVE_HEADER) |
            replay_write_seed(dir, "cut-in-first-entry", a, ARCHIVE_HEADER + 16 + 100) |
            replay_write_seed(dir, "no-trailer", a, n - 20);
  a[8] = 2;
  bad |= replay_write_seed(dir, "version-2", a, n);
  a[8] = 1;
  put64(a + ARCHIVE_HEADER, ~0ull);
  bad |= replay_write_seed(dir, "huge-record-length", a, n);
  free(a);
  return bad;
}

int
main(int argc, char **argv)
{
  long mutations;
  int files;
  int rc = replay_start(argc, argv, write_corpus, 7, 0x2545f4914f6cdd1dull, &mutations, &files);
  if (rc >= 0)
    return rc;
  size_t n;
  uint8_t *good = valid_archive(&n);
  uint64_t records;
  char err[512];
  int forged = 0;
  FILE *f = fmemopen(good, n, "rb");
  if (archive_read(f, n, only_originals, &forged, &records, err, sizeof err) != 0 || records != 2) {
    fprintf(stderr, "the valid archive does not read: %s\n", err);
    return 1;
  }
  fclose(f);
  uint8_t *b = malloc(n + 64);
  int failures = 0;
  for (long i = 0; i < mutations && !failures; i++) {
    size_t len = mutate(good, n, b);
    LLVMFuzzerTestOneInput(b, len);
    if (len == 0)
      continue;
    f = fmemopen(b, len, "rb");
    archive_read(f, len, only_originals, &forged, &records, err, sizeof err);
    fclose(f);
    if (forged) {
      fprintf(stderr, "mutation %ld: a changed entry passed as sound\n", i);
      failures++;
    }
  }
  free(b);
  free(good);
  for (int i = 0; i < 2; i++)
    free(entries[i]);
  printf("%d corpus files, %ld mutations, %d failures\n", files, mutations, failures);
  return failures ? 1 : 0;
}
