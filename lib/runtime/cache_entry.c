/* The cache entry format: keys, MACs, serialising and parsing entries (see cache_internal.h). */
#include "runtime/cache_internal.h"


#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "kiln_config.h"

#include <sodium.h>

#if KILN_HAVE_XXHASH
#include <xxhash.h>
#endif

/* ---------------------------------------------------------------- helpers */

static uint32_t current_format = KILN__DC_FORMAT;

uint32_t
kiln__dc_format(void)
{
  return current_format;
}

void
kiln__dc_set_format(uint32_t format)
{
  current_format = format;
}

static void
put_u32(uint8_t *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void
put_u64(uint8_t *p, uint64_t v)
{
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

uint32_t
kiln__dc_get_u32(const uint8_t *p)
{
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

static uint64_t
get_u64(const uint8_t *p)
{
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

void
kiln__dc_to_hex(const uint8_t *bytes, size_t n, char *out)
{
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 15];
  }
  out[2 * n] = 0;
}

int
kiln__dc_is_hex_n(const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return 0;
  return 1;
}

static int
is_alnum_n(const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]))
      return 0;
  return 1;
}

/* Names kiln creates, recognised exactly so that nothing else is ever deleted. */
int
kiln__dc_is_sub_name(const char *n)
{
  return strlen(n) == 2 && kiln__dc_is_hex_n(n, 2);
}

int
kiln__dc_is_entry_name(const char *n)
{
  return strlen(n) == ENTRY_NAME_LEN && kiln__dc_is_hex_n(n, 30) && strcmp(n + 30, ".kbin") == 0;
}

int
kiln__dc_is_temp_name(const char *n)
{
  return strlen(n) == TEMP_NAME_LEN && kiln__dc_is_hex_n(n, 30) && strncmp(n + 30, ".kbin.tmp.", 10) == 0 &&
         is_alnum_n(n + 40, 6);
}

int
kiln__dc_is_stats_temp_name(const char *n)
{
  return strlen(n) == 16 && strncmp(n, "stats.tmp.", 10) == 0 && is_alnum_n(n + 10, 6);
}

/* "v<N>" with N a decimal without leading zeros; returns N or 0. */
uint32_t
kiln__dc_version_dir_number(const char *n)
{
  if (n[0] != 'v' || n[1] < '1' || n[1] > '9' || strlen(n) > 10)
    return 0;
  uint32_t v = 0;
  for (const char *p = n + 1; *p; p++) {
    if (*p < '0' || *p > '9')
      return 0;
    v = v * 10 + (uint32_t)(*p - '0');
  }
  return v;
}

void
kiln__dc_random_suffix(char *out6)
{
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  unsigned char r[6];
  if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
    /* No entropy yet (early boot): uniqueness is all that matters, O_EXCL retries collisions. */
    static _Atomic unsigned counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 20) ^ (uint64_t)counter++ << 40;
    for (int i = 0; i < 6; i++, x = x * 6364136223846793005ull + 1442695040888963407ull)
      r[i] = (unsigned char)(x >> 33);
  }
  for (int i = 0; i < 6; i++)
    out6[i] = alphabet[r[i] % 62];
}

int
kiln__dc_write_all(int fd, const uint8_t *p, size_t n)
{
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    if (w == 0) {
      errno = EIO;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Reads exactly n bytes; -1 with errno, or -2 when the file ended early. */
int
kiln__dc_read_exact(int fd, uint8_t *p, size_t n)
{
  while (n) {
    ssize_t r = read(fd, p, n);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    if (r == 0)
      return -2;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

/*
 * Test hook: KILN_TEST_CACHE_KILL_AT=before-write|mid-write|before-rename|
 * after-rename makes a writer die by SIGKILL there, so tests can check that
 * no kill point leaves a visible partial entry. secure_getenv keeps it away
 * from setuid programs.
 */
void
kiln__dc_fault_point(const char *where)
{
  const char *v = kiln__env(KILN__ENV_TEST_CACHE_KILL_AT);
  if (v && strcmp(v, where) == 0)
    raise(SIGKILL);
}

/* ---------------------------------------------------------------- hashing */

#if KILN_HAVE_XXHASH
static void
hash128(const void *p, size_t n, uint8_t out[16])
{
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(p, n));
  memcpy(out, c.digest, 16);
}
#endif

/* sodium_init picks the fastest BLAKE2b implementation; it is idempotent, once is enough. */
static pthread_once_t sodium_once = PTHREAD_ONCE_INIT;

static void
sodium_start(void)
{
  if (sodium_init() < 0)
    kiln__log(KILN__LOG_DEBUG, "kernel cache: sodium_init failed; using libsodium's defaults");
}

static void
mac_compute(const uint8_t *p, size_t n, const uint8_t *mac_key, uint8_t out[KILN__DC_TRAILER])
{
  pthread_once(&sodium_once, sodium_start);
  crypto_generichash(out, KILN__DC_TRAILER, p, n, mac_key, KILN__DC_KEY_BYTES);
}

void
kiln__dc_mac_seal(uint8_t *buf, size_t len, const uint8_t *mac_key)
{
  mac_compute(buf, len - KILN__DC_TRAILER, mac_key, buf + len - KILN__DC_TRAILER);
}

static int
mac_ok(const uint8_t *buf, size_t len, const uint8_t *mac_key)
{
  uint8_t mac[KILN__DC_TRAILER];
  mac_compute(buf, len - KILN__DC_TRAILER, mac_key, mac);
  return crypto_verify_32(mac, buf + len - KILN__DC_TRAILER) == 0;
}

/*
 * The key covers every input of the compile: the cache format version, the
 * identity, kiln's version, the options, the source name and (through its
 * 128-bit hash) the source text. Fields are length-prefixed so that no two
 * different inputs serialise alike. Computable from a header alone, which
 * lets an imported entry be checked against its own key.
 */
static int
key_compute(uint32_t format, const char *const *str, const uint32_t *len, uint32_t vendor_id,
            uint32_t address_bits, const uint8_t source_hash[16], uint8_t key[16])
{
#if KILN_HAVE_XXHASH
  size_t total = 8 + 12 + 16;
  for (int i = 0; i < KILN__DC_NSTR; i++)
    total += 4 + len[i];
  uint8_t *b = malloc(total);
  if (!b)
    return -1;
  uint8_t *p = b;
  memcpy(p, "kiln-key", 8);
  p += 8;
  put_u32(p, format);
  put_u32(p + 4, vendor_id);
  put_u32(p + 8, address_bits);
  p += 12;
  for (int i = 0; i < KILN__DC_NSTR; i++) {
    put_u32(p, len[i]);
    memcpy(p + 4, str[i], len[i]);
    p += 4 + len[i];
  }
  memcpy(p, source_hash, 16);
  hash128(b, total, key);
  free(b);
  return 0;
#else
  (void)format, (void)str, (void)len, (void)vendor_id, (void)address_bits, (void)source_hash;
  memset(key, 0, 16);
  return -1;
#endif
}

void
kiln__dc_req_init(struct kiln__dc_req *r, const struct kiln__dc_ident *id,
                  const char *source_name, const void *text, size_t text_len, const char *options)
{
  memset(r, 0, sizeof *r);
  r->str[KILN__DC_PLATFORM_NAME] = id->platform_name;
  r->str[KILN__DC_PLATFORM_VERSION] = id->platform_version;
  r->str[KILN__DC_DEVICE_NAME] = id->device_name;
  r->str[KILN__DC_DEVICE_VERSION] = id->device_version;
  r->str[KILN__DC_DRIVER_VERSION] = id->driver_version;
  r->str[KILN__DC_KILN_VERSION] = KILN_VERSION_STRING;
  r->str[KILN__DC_OPTIONS] = options;
  r->str[KILN__DC_SOURCE_NAME] = source_name;
  r->vendor_id = id->vendor_id;
  r->address_bits = id->address_bits;
  r->format = kiln__dc_format();
#if KILN_HAVE_XXHASH
  hash128(text, text_len, r->source_hash);
#else
  (void)text, (void)text_len;
#endif
  kiln__dc_req_rekey(r);
}

void
kiln__dc_req_rekey(struct kiln__dc_req *r)
{
  uint32_t len[KILN__DC_NSTR];
  for (int i = 0; i < KILN__DC_NSTR; i++) {
    size_t n = strlen(r->str[i]);
    len[i] = n > KILN__DC_MAX_STRING ? KILN__DC_MAX_STRING + 1 : (uint32_t)n;
  }
  if (key_compute(r->format, r->str, len, r->vendor_id, r->address_bits, r->source_hash, r->key))
    memset(r->key, 0, sizeof r->key);
  kiln__dc_to_hex(r->key, 16, r->key_hex);
}

/* ---------------------------------------------------------------- format */

size_t
kiln__dc_serialize(const struct kiln__dc_req *r, const void *payload, size_t payload_len,
                   int64_t created, const uint8_t *mac_key, uint8_t **out)
{
  *out = NULL;
#if KILN_HAVE_XXHASH
  if (!payload || !payload_len || !mac_key)
    return 0;
  size_t header = KILN__DC_FIXED;
  uint32_t len[KILN__DC_NSTR];
  for (int i = 0; i < KILN__DC_NSTR; i++) {
    size_t n = strlen(r->str[i]);
    if (n > KILN__DC_MAX_STRING)
      return 0;
    len[i] = (uint32_t)n;
    header += 4 + n;
  }
  if (header > KILN__DC_MAX_HEADER || payload_len > KILN__DC_MAX_PAYLOAD)
    return 0;
  size_t total = header + payload_len + KILN__DC_TRAILER;
  uint8_t *b = malloc(total);
  if (!b)
    return 0;
  memcpy(b, "KILNKBIN", 8);
  put_u32(b + 8, r->format);
  put_u32(b + 12, (uint32_t)header);
  put_u32(b + 16, 0);
  put_u32(b + 20, r->vendor_id);
  put_u32(b + 24, r->address_bits);
  put_u32(b + 28, KILN__DC_NSTR);
  put_u64(b + 32, payload_len);
  put_u64(b + 40, (uint64_t)created);
  memcpy(b + 48, r->key, 16);
  memcpy(b + 64, r->source_hash, 16);
  uint8_t *p = b + KILN__DC_FIXED;
  for (int i = 0; i < KILN__DC_NSTR; i++) {
    put_u32(p, len[i]);
    memcpy(p + 4, r->str[i], len[i]);
    p += 4 + len[i];
  }
  memcpy(p, payload, payload_len);
  kiln__dc_mac_seal(b, total, mac_key);
  *out = b;
  return total;
#else
  (void)r, (void)payload, (void)payload_len, (void)created, (void)mac_key;
  return 0;
#endif
}

int
kiln__dc_parse(const uint8_t *buf, size_t len, uint64_t file_size, int full, uint32_t format,
               const uint8_t *mac_key, struct kiln__dc_header *h, const char **why)
{
#define BAD(msg)    \
  do {              \
    *why = (msg);   \
    return -1;      \
  } while (0)
  memset(h, 0, sizeof *h);
  if (full)
    file_size = len;
  if (file_size < KILN__DC_FIXED + KILN__DC_TRAILER || len < KILN__DC_FIXED)
    BAD("file shorter than the fixed header");
  if (memcmp(buf, "KILNKBIN", 8) != 0)
    BAD("bad magic (not a kiln cache entry)");
  h->format = kiln__dc_get_u32(buf + 8);
  if (h->format != format)
    BAD("other cache format version");
  h->header_size = kiln__dc_get_u32(buf + 12);
  h->flags = kiln__dc_get_u32(buf + 16);
  h->vendor_id = kiln__dc_get_u32(buf + 20);
  h->address_bits = kiln__dc_get_u32(buf + 24);
  uint32_t nstr = kiln__dc_get_u32(buf + 28);
  h->payload_size = get_u64(buf + 32);
  h->created = (int64_t)get_u64(buf + 40);
  memcpy(h->key, buf + 48, 16);
  memcpy(h->source_hash, buf + 64, 16);
  if (nstr != KILN__DC_NSTR)
    BAD("bad string count");
  if (h->flags)
    BAD("unknown flags (written by a newer kiln?)");
  if (h->header_size < KILN__DC_FIXED + 4 * KILN__DC_NSTR || h->header_size > KILN__DC_MAX_HEADER)
    BAD("bad header size");
  if (h->payload_size > KILN__DC_MAX_PAYLOAD)
    BAD("bad payload size");
  if (h->payload_size == 0)
    BAD("empty payload");
  uint64_t expect = (uint64_t)h->header_size + h->payload_size + KILN__DC_TRAILER;
  if (file_size < expect)
    BAD("truncated");
  if (file_size > expect)
    BAD("trailing bytes after the MAC");
  if (len < h->header_size)
    BAD("truncated header");
#if !KILN_HAVE_XXHASH
  if (full)
    BAD("kiln was built without xxHash: keys cannot be verified");
#endif
  size_t off = KILN__DC_FIXED;
  for (int i = 0; i < KILN__DC_NSTR; i++) {
    if (h->header_size - off < 4)
      BAD("strings overrun the header");
    uint32_t n = kiln__dc_get_u32(buf + off);
    off += 4;
    if (n > KILN__DC_MAX_STRING || n > h->header_size - off)
      BAD("strings overrun the header");
    if (memchr(buf + off, 0, n))
      BAD("NUL byte inside a string");
    h->str[i] = (const char *)buf + off;
    h->len[i] = n;
    off += n;
  }
  if (off != h->header_size)
    BAD("header size does not match its strings");
  uint8_t key[16];
  if (key_compute(h->format, h->str, h->len, h->vendor_id, h->address_bits, h->source_hash, key) ||
      memcmp(key, h->key, 16) != 0)
    BAD("key does not match the header");
  if (full && !mac_key)
    BAD("no usable MAC key: the entry cannot be authenticated");
  if (full && !mac_ok(buf, len, mac_key))
    BAD("MAC mismatch (forged, or written under another key)");
  h->payload = full ? buf + h->header_size : NULL;
  return 0;
#undef BAD
}

/* Byte-for-byte identity compare of a parsed header against a request. */
int
kiln__dc_header_matches(const struct kiln__dc_header *h, const struct kiln__dc_req *r)
{
  if (h->format != r->format || h->vendor_id != r->vendor_id ||
      h->address_bits != r->address_bits || memcmp(h->key, r->key, 16) != 0 ||
      memcmp(h->source_hash, r->source_hash, 16) != 0)
    return 0;
  for (int i = 0; i < KILN__DC_NSTR; i++)
    if (strlen(r->str[i]) != h->len[i] || memcmp(h->str[i], r->str[i], h->len[i]) != 0)
      return 0;
  return 1;
}
