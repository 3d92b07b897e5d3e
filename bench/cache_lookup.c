/*
 * The cost of a disk cache lookup (docs/cache.md, "Trust"): stores one entry
 * with a payload of the given size in a fresh directory, then times
 * kiln__dc_lookup (open, read, parse, identity compare and MAC check) and,
 * apart, the keyed BLAKE2b MAC and the XXH3-64 checksum the format used
 * before over the same bytes. Prints best and mean of each.
 *
 * usage: cache_lookup [PAYLOAD_BYTES [REPEATS]]   (default 1200000 200)
 */
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kiln_config.h"
#include "runtime/disk_cache.h"

#if KILN_HAVE_XXHASH
#include <xxhash.h>
#endif

static double
now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

struct timing {
  double best, total;
};

static void
note(struct timing *t, double ms)
{
  if (t->total == 0 || ms < t->best)
    t->best = ms;
  t->total += ms;
}

int
main(int argc, char **argv)
{
  size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 1200000;
  int reps = argc > 2 ? atoi(argv[2]) : 200;
  if (n == 0 || reps <= 0) {
    fprintf(stderr, "usage: %s [PAYLOAD_BYTES [REPEATS]]\n", argv[0]);
    return 2;
  }
  char dir[] = "/tmp/kiln-lookup-XXXXXX";
  if (!mkdtemp(dir) || sodium_init() < 0)
    return 1;
  kiln_cache *c = kiln__dc_open_degrading(dir, KILN_CACHE_ON, 0);
  if (!c || kiln__dc_mode(c) != KILN_CACHE_ON) {
    fprintf(stderr, "cannot open a cache in %s\n", dir);
    return 1;
  }
  static const struct kiln__dc_ident id = {
      "Bench Platform", "OpenCL 3.0", "Bench Device", "OpenCL 3.0", "1.0", 1, 64};
  struct kiln__dc_req r;
  kiln__dc_req_init(&r, &id, "bench", "kernel void k() {}", 18, "-DT=float");
  uint8_t *payload = malloc(n);
  randombytes_buf(payload, n);
  if (kiln__dc_store(c, &r, payload, n) != 0) {
    fprintf(stderr, "store failed\n");
    return 1;
  }
  struct timing lookup = {0}, mac = {0}, xxh = {0};
  uint8_t out[32];
  volatile uint64_t sink = 0;
  for (int i = 0; i < reps; i++) {
    void *buf;
    const void *p;
    size_t len;
    double t0 = now_ms();
    enum kiln__dc_found f = kiln__dc_lookup(c, &r, KILN__DC_NOCOUNT, &buf, &p, &len);
    note(&lookup, now_ms() - t0);
    if (f != KILN__DC_HIT) {
      fprintf(stderr, "lookup %d missed\n", i);
      return 1;
    }
    free(buf);
    t0 = now_ms();
    crypto_generichash(out, sizeof out, payload, n, kiln__dc_mac_key(c), KILN__DC_KEY_BYTES);
    note(&mac, now_ms() - t0);
    sink += out[0];
#if KILN_HAVE_XXHASH
    t0 = now_ms();
    sink += XXH3_64bits(payload, n);
    note(&xxh, now_ms() - t0);
#endif
  }
  printf("payload %zu bytes, %d repeats (best / mean, ms)\n", n, reps);
  printf("  lookup (read, parse, MAC check)  %.3f / %.3f\n", lookup.best, lookup.total / reps);
  printf("  keyed BLAKE2b-256 of the payload %.3f / %.3f (%.0f MB/s best)\n", mac.best,
         mac.total / reps, (double)n / 1e3 / mac.best);
#if KILN_HAVE_XXHASH
  printf("  XXH3-64 of the payload (format 1) %.3f / %.3f\n", xxh.best, xxh.total / reps);
#endif
  kiln_cache_close(c);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  free(payload);
  return system(cmd) == 0 ? 0 : 1;
}
