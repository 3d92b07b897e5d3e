/*
 * Runs the cache entry fuzz target without libFuzzer: every file of a corpus
 * directory, then mutations of a valid entry (bit flips, byte writes,
 * truncations, extensions, insertions, length fields set to extremes),
 * each also written into a real cache directory and read back through the
 * lookup and listing paths. Every mutation must be refused: the MAC covers
 * every byte but itself, so a changed entry that parses is a bug. The cache
 * directory has a key of its own, so there even the unchanged entry is a
 * forgery (made without that key) and must never be a hit.
 *
 * usage: fuzz_cache_entry_replay CORPUS_DIR [MUTATIONS]
 *        fuzz_cache_entry_replay --write-corpus DIR   (regenerates the seed files)
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "replay_corpus.h"
#include "fuzz_key.h"
#include "runtime/disk_cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct kiln__dc_ident ident = {"Fuzz Platform", "OpenCL 3.0 fuzz", "Fuzz Device",
                                            "OpenCL 3.0", "9.9", 7, 64};
static const char text[] = "kernel void k(global int *x) { x[0] = 1; }";

static size_t
valid_entry(struct kiln__dc_req *r, uint8_t **out)
{
  kiln__dc_req_init(r, &ident, "fuzz", text, sizeof text - 1, "-DT=int");
  static const char payload[] = "a device binary of some length, 64 bytes long, give or take.";
  return kiln__dc_serialize(r, payload, sizeof payload, 1700000000, fuzz_mac_key, out);
}

static void
put32(uint8_t *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* One random mutation of src into a new buffer; returns its length. */
static size_t
mutate(const uint8_t *src, size_t n, uint8_t **out)
{
  size_t cap = n + 64;
  uint8_t *b = malloc(cap);
  memcpy(b, src, n);
  size_t len = n;
  switch (replay_next() % 7) {
  case 0: b[replay_next() % n] ^= (uint8_t)(1u << (replay_next() % 8)); break;
  case 1: b[replay_next() % n] = (uint8_t)replay_next(); break;
  case 2: len = (size_t)(replay_next() % n); break;
  case 3: {
    size_t extra = 1 + (size_t)(replay_next() % 64);
    for (size_t i = 0; i < extra; i++)
      b[n + i] = (uint8_t)replay_next();
    len = n + extra;
    break;
  }
  case 4: {
    size_t at = (size_t)(replay_next() % n);
    memmove(b + at + 1, b + at, n - at);
    b[at] = (uint8_t)replay_next();
    len = n + 1;
    break;
  }
  case 5: {
    /* a length or size field (header size, string count, a string length) at an extreme */
    static const size_t fields[] = {12, 28, 80, 84};
    static const uint32_t values[] = {0, 1, 0x7fffffff, 0xffffffff, 79, 80, 4096};
    put32(b + fields[replay_next() % 4], values[replay_next() % 7]);
    break;
  }
  default:
    for (int k = 0; k < 4; k++)
      b[replay_next() % n] = (uint8_t)replay_next();
    break;
  }
  *out = b;
  return len;
}

static int
count_entries(const kiln_cache_entry *e, void *user)
{
  (void)e;
  (*(int *)user)++;
  return 0;
}

/* Plants bytes as the entry of r in a cache and reads them back through lookup and listing. */
static int
through_files(kiln_cache *c, const char *dir, const struct kiln__dc_req *r, const uint8_t *b,
              size_t n)
{
  char path[4200];
  snprintf(path, sizeof path, "%s/v%u/%.2s", dir, KILN__DC_FORMAT, r->key_hex);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/v%u/%.2s/%.30s.kbin", dir, KILN__DC_FORMAT, r->key_hex,
           r->key_hex + 2);
  /* A fresh file each time: ext4 flushes a file truncated and rewritten at close. */
  unlink(path);
  if (replay_write(path, b, n) != 0)
    return -1;
  void *buf;
  const void *p;
  size_t len;
  enum kiln__dc_found got = kiln__dc_lookup(c, r, 0, &buf, &p, &len);
  free(buf);
  if (got == KILN__DC_HIT) {
    fprintf(stderr, "an entry made without the directory's key was accepted by lookup\n");
    return -1;
  }
  int seen = 0;
  if (kiln_cache_foreach_entry(c, KILN_CACHE_VERIFY, count_entries, &seen) != KILN_OK ||
      seen != 1) {
    fprintf(stderr, "listing failed or saw %d entries\n", seen);
    return -1;
  }
  return 0;
}

static int
write_corpus(const char *dir)
{
  struct kiln__dc_req r;
  uint8_t *e;
  size_t n = valid_entry(&r, &e);
  struct {
    const char *name;
    size_t len;
  } seeds[] = {{"valid", n}, {"empty", 0}, {"fixed-header-only", 80}, {"truncated-payload", n - 20}};
  mkdir(dir, 0755);
  for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
    if (replay_write_seed(dir, seeds[i].name, e, seeds[i].len) != 0)
      return 1;
  }
  /* Hand-made hostile headers: huge lengths, a string overrunning the header, a NUL in a string. */
  static const struct {
    const char *name;
    size_t off;
    uint32_t value;
  } edits[] = {{"huge-header-size", 12, 0xffffffffu},
               {"header-size-below-fixed", 12, 40},
               {"string-overruns", 80, 0x10000u},
               {"string-count-9", 28, 9},
               {"bad-version", 8, KILN__DC_FORMAT - 1},
               {"unknown-flags", 16, 1},
               {"zero-payload-size", 32, 0}};
  for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
    uint8_t *b = malloc(n);
    memcpy(b, e, n);
    put32(b + edits[i].off, edits[i].value);
    if (replay_write_seed(dir, edits[i].name, b, n) != 0)
      return 1;
    free(b);
  }
  uint8_t *b = malloc(n);
  memcpy(b, e, n);
  b[84] = 0; /* first byte of the platform name */
  if (replay_write_seed(dir, "nul-in-string", b, n) != 0)
    return 1;
  free(b);
  free(e);
  return 0;
}

int
main(int argc, char **argv)
{
  long mutations;
  int files;
  int rc = replay_start(argc, argv, write_corpus, 10, 0x9e3779b97f4a7c15ull, &mutations, &files);
  if (rc >= 0)
    return rc;

  struct kiln__dc_req r;
  uint8_t *e;
  size_t n = valid_entry(&r, &e);
  struct kiln__dc_header h;
  const char *why = "";
  if (kiln__dc_parse(e, n, n, 1, KILN__DC_FORMAT, fuzz_mac_key, &h, &why) != 0) {
    fprintf(stderr, "the valid seed does not parse: %s\n", why);
    return 1;
  }
  char tmpl[] = "/tmp/kiln-fuzz-XXXXXX";
  char *dir = mkdtemp(tmpl);
  kiln_cache *c = dir ? kiln__dc_open_degrading(dir, KILN_CACHE_ON, 0) : NULL;
  if (!c || kiln__dc_mode(c) != KILN_CACHE_ON) {
    fprintf(stderr, "cannot open a cache in %s\n", dir ? dir : "/tmp");
    return 1;
  }
  int failures = 0;
  for (long i = 0; i < mutations && !failures; i++) {
    uint8_t *b;
    size_t len = mutate(e, n, &b);
    LLVMFuzzerTestOneInput(b, len);
    int changed = len != n || memcmp(b, e, n) != 0;
    if (changed && kiln__dc_parse(b, len, len, 1, KILN__DC_FORMAT, fuzz_mac_key, &h, &why) == 0) {
      fprintf(stderr, "mutation %ld was accepted\n", i);
      failures++;
    }
    if (i % 10 == 0 && through_files(c, dir, &r, b, len) != 0)
      failures++;
    free(b);
  }
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  kiln_cache_close(c);
  if (system(cmd) != 0)
    fprintf(stderr, "cannot remove %s\n", dir);
  free(e);
  printf("%d corpus files, %ld mutations, %d failures\n", files, mutations, failures);
  return failures ? 1 : 0;
}
