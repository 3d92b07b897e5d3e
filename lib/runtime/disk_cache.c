/*
 * The kernel cache's file layer (see disk_cache.h for the layout and format,
 * docs/cache.md for the behaviour). No OpenCL calls here.
 *
 * Concurrency model, after ccache: readers take no lock and trust nothing
 * they read (whole-file MAC, byte-for-byte identity compare); writers
 * publish by rename() of a uniquely named temp file in the target
 * directory, so a reader sees the old file or the new one, never a mix, and
 * a writer killed at any point leaves at most a temp file that cleanup
 * reclaims. The only lock, stats.lock, serialises updates of the small stats
 * file and eviction; it is taken when storing (after a compile, so its cost
 * is noise) and when a handle closes, never on a hit.
 *
 * There is no fsync/fdatasync before the rename: a power loss can leave a
 * renamed entry with missing data, which the MAC turns into a miss and a
 * rebuild, so durability would buy nothing but latency (Mesa and ccache
 * decide the same).
 *
 * Trust: on a CPU device a binary is host code, so an entry is handed to
 * the driver only when its MAC verifies under the directory's secret key
 * (DIR/key). The key hash and file names are computed from public inputs and
 * prove nothing against someone who can write an entry or an archive; the
 * MAC does, as long as the key file stays private.
 *
 * Paths below the cache directory are opened relative to directory file
 * descriptors with O_NOFOLLOW, so a symbolic link planted inside the cache
 * is never followed; the cache directory itself may be a link (users
 * relocate ~/.cache that way).
 */
#include "runtime/disk_cache.h"

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

#include "core/error.h"
#include "core/log.h"
#include "kiln_config.h"

#include <sodium.h>

#if KILN_HAVE_XXHASH
#include <xxhash.h>
#endif

#define TEMP_MAX_AGE_S 3600
#define LOCK_WAIT_MS 2000
#define ENTRY_NAME_LEN 35 /* 30 hex + ".kbin" */
#define TEMP_NAME_LEN 46  /* entry name + ".tmp." + 6 */

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

static uint32_t
get_u32(const uint8_t *p)
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

static void
to_hex(const uint8_t *bytes, size_t n, char *out)
{
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 15];
  }
  out[2 * n] = 0;
}

static int
is_hex_n(const char *s, size_t n)
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
static int
is_sub_name(const char *n)
{
  return strlen(n) == 2 && is_hex_n(n, 2);
}

static int
is_entry_name(const char *n)
{
  return strlen(n) == ENTRY_NAME_LEN && is_hex_n(n, 30) && strcmp(n + 30, ".kbin") == 0;
}

static int
is_temp_name(const char *n)
{
  return strlen(n) == TEMP_NAME_LEN && is_hex_n(n, 30) && strncmp(n + 30, ".kbin.tmp.", 10) == 0 &&
         is_alnum_n(n + 40, 6);
}

static int
is_stats_temp_name(const char *n)
{
  return strlen(n) == 16 && strncmp(n, "stats.tmp.", 10) == 0 && is_alnum_n(n + 10, 6);
}

/* "v<N>" with N a decimal without leading zeros; returns N or 0. */
static uint32_t
version_dir_number(const char *n)
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

static void
random_suffix(char *out6)
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

static int
write_all(int fd, const uint8_t *p, size_t n)
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
static int
read_exact(int fd, uint8_t *p, size_t n)
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
static void
fault_point(const char *where)
{
  const char *v = secure_getenv("KILN_TEST_CACHE_KILL_AT");
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
  to_hex(r->key, 16, r->key_hex);
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
  h->format = get_u32(buf + 8);
  if (h->format != format)
    BAD("other cache format version");
  h->header_size = get_u32(buf + 12);
  h->flags = get_u32(buf + 16);
  h->vendor_id = get_u32(buf + 20);
  h->address_bits = get_u32(buf + 24);
  uint32_t nstr = get_u32(buf + 28);
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
    uint32_t n = get_u32(buf + off);
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
static int
header_matches(const struct kiln__dc_header *h, const struct kiln__dc_req *r)
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

/* ---------------------------------------------------------------- warnings */

static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t warned[256];
static size_t nwarned;
static uint64_t nwarnings;

enum problem {
  P_NO_HOME = 1,
  P_NOT_DIR,
  P_CREATE,
  P_OWNER,
  P_PERMS,
  P_READONLY,
  P_MISSING,
  P_WRITE,
  P_ENV_MODE,
  P_ENV_SIZE,
  P_ENV_STORE,
  P_NO_XXHASH,
  P_KEY,
};

static uint64_t
fnv1a(const char *s, uint64_t h)
{
  for (; s && *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* One warning per (directory, problem) per process: a program making many contexts says it once. */
static void KILN_PRINTF(3, 4)
warn_once(const char *dir, enum problem p, const char *fmt, ...)
{
  uint64_t id = fnv1a(dir, 1469598103934665603ull ^ (uint64_t)p);
  pthread_mutex_lock(&warn_lock);
  size_t known = nwarned < sizeof warned / sizeof warned[0] ? nwarned : sizeof warned / sizeof warned[0];
  for (size_t i = 0; i < known; i++) {
    if (warned[i] == id) {
      pthread_mutex_unlock(&warn_lock);
      return;
    }
  }
  /* Past 256 distinct problems the oldest are forgotten and may be warned about again. */
  warned[nwarned++ % (sizeof warned / sizeof warned[0])] = id;
  nwarnings++;
  pthread_mutex_unlock(&warn_lock);
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kiln__log(KILN__LOG_WARN, "kernel cache: %s", msg);
}

uint64_t
kiln__dc_warnings(void)
{
  pthread_mutex_lock(&warn_lock);
  uint64_t n = nwarnings;
  pthread_mutex_unlock(&warn_lock);
  return n;
}

/* ---------------------------------------------------------------- settings */

int
kiln__dc_parse_size(const char *s, uint64_t *out)
{
  if (!s)
    return -1;
  while (isspace((unsigned char)*s))
    s++;
  if (!isdigit((unsigned char)*s))
    return -1;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno)
    return -1;
  unsigned shift = 0;
  switch (tolower((unsigned char)*end)) {
  case 'k': shift = 10; end++; break;
  case 'm': shift = 20; end++; break;
  case 'g': shift = 30; end++; break;
  case 't': shift = 40; end++; break;
  default: break;
  }
  if (shift && tolower((unsigned char)*end) == 'i' && tolower((unsigned char)end[1]) == 'b')
    end += 2;
  else if (tolower((unsigned char)*end) == 'b')
    end++;
  while (isspace((unsigned char)*end))
    end++;
  /* Caps travel as int64_t options (KILN_OPT_CACHE_MAX_BYTES): larger ones read back negative. */
  if (*end || v > ((uint64_t)INT64_MAX >> shift))
    return -1;
  *out = (uint64_t)v << shift;
  return 0;
}

kiln_cache_mode
kiln__dc_env_mode(void)
{
  const char *v = secure_getenv("KILN_CACHE");
  if (!v || !*v)
    return KILN_CACHE_ON;
  static const struct {
    const char *name;
    kiln_cache_mode mode;
  } names[] = {{"on", KILN_CACHE_ON},         {"1", KILN_CACHE_ON},
               {"yes", KILN_CACHE_ON},        {"readonly", KILN_CACHE_READONLY},
               {"read-only", KILN_CACHE_READONLY}, {"ro", KILN_CACHE_READONLY},
               {"off", KILN_CACHE_OFF},       {"0", KILN_CACHE_OFF},
               {"no", KILN_CACHE_OFF}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcasecmp(v, names[i].name) == 0)
      return names[i].mode;
  warn_once(v, P_ENV_MODE, "KILN_CACHE=\"%s\" is not on, readonly or off; using on", v);
  return KILN_CACHE_ON;
}

kiln_cache_store_policy
kiln__dc_env_store_policy(void)
{
  const char *v = secure_getenv("KILN_CACHE_STORE");
  if (!v || !*v || strcasecmp(v, "auto") == 0)
    return KILN_CACHE_STORE_AUTO;
  if (strcasecmp(v, "always") == 0)
    return KILN_CACHE_STORE_ALWAYS;
  warn_once(v, P_ENV_STORE, "KILN_CACHE_STORE=\"%s\" is not auto or always; using auto", v);
  return KILN_CACHE_STORE_AUTO;
}

uint64_t
kiln__dc_env_max_bytes(void)
{
  const char *v = secure_getenv("KILN_CACHE_MAX_SIZE");
  uint64_t n;
  if (!v || !*v)
    return KILN__DC_DEFAULT_MAX_BYTES;
  if (kiln__dc_parse_size(v, &n) == 0)
    return n;
  warn_once(v, P_ENV_SIZE,
            "KILN_CACHE_MAX_SIZE=\"%s\" is not a size such as 512M or 2G below 8E; using 1G", v);
  return KILN__DC_DEFAULT_MAX_BYTES;
}

/* ---------------------------------------------------------------- directory resolution */

static char *
join(const char *a, const char *b)
{
  size_t na = strlen(a), nb = strlen(b);
  while (na > 1 && a[na - 1] == '/')
    na--;
  char *p = malloc(na + 1 + nb + 1);
  if (!p)
    return NULL;
  memcpy(p, a, na);
  p[na] = '/';
  memcpy(p + na + 1, b, nb + 1);
  return p;
}

static char *
passwd_home(void)
{
  long hint = sysconf(_SC_GETPW_R_SIZE_MAX);
  size_t size = hint > 0 ? (size_t)hint : 1024;
  for (;;) {
    char *buf = malloc(size);
    if (!buf)
      return NULL;
    struct passwd pw, *res = NULL;
    int e = getpwuid_r(getuid(), &pw, buf, size, &res);
    if (e == ERANGE && size < (1u << 20)) {
      free(buf);
      size *= 2;
      continue;
    }
    char *home = (e == 0 && res && res->pw_dir && res->pw_dir[0] == '/') ? strdup(res->pw_dir) : NULL;
    free(buf);
    return home;
  }
}

/* Resolves the cache directory (malloc'd) or NULL with *why set. */
static char *
resolve_dir(const char *explicit_dir, const char **why)
{
  const char *e = explicit_dir && *explicit_dir ? explicit_dir : secure_getenv("KILN_CACHE_DIR");
  if (e && *e) {
    if (e[0] == '/')
      return strdup(e);
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) {
      *why = "cannot make the relative cache directory absolute (getcwd failed)";
      return NULL;
    }
    return join(cwd, e);
  }
  /* The XDG base directory spec says relative values are to be ignored. */
  const char *x = secure_getenv("XDG_CACHE_HOME");
  if (x && x[0] == '/')
    return join(x, "kiln");
  const char *h = secure_getenv("HOME");
  char *home = h && h[0] == '/' ? strdup(h) : passwd_home();
  if (!home) {
    *why = "no cache directory: KILN_CACHE_DIR, XDG_CACHE_HOME and HOME are unset and the "
           "password database has no home directory";
    return NULL;
  }
  char *r = join(home, ".cache/kiln");
  free(home);
  return r;
}

kiln_status
kiln_cache_default_dir(char *buf, size_t len)
{
  static const char op[] = "kiln_cache_default_dir";
  KILN_RETURN_IF(!buf, KILN_ERR_INVALID_ARGUMENT, op, "buf is NULL");
  const char *why = "out of memory";
  char *d = resolve_dir(NULL, &why);
  if (!d)
    return kiln__fail(KILN_ERR_NOT_FOUND, op, 0, "%s", why);
  size_t n = strlen(d);
  if (n + 1 > len) {
    free(d);
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "buffer of %zu bytes too small (need %zu)",
                      len, n + 1);
  }
  memcpy(buf, d, n + 1);
  free(d);
  return KILN_OK;
}

/* mkdir -p with mode 0700 for every directory it creates. 0, or an errno value. */
static int
mkdir_p(const char *path)
{
  char *p = strdup(path);
  if (!p)
    return ENOMEM;
  int err = 0;
  for (char *s = p + 1;; s++) {
    if (*s == '/' || *s == 0) {
      char saved = *s;
      *s = 0;
      if (mkdir(p, 0700) != 0 && errno != EEXIST) {
        err = errno;
        *s = saved;
        break;
      }
      *s = saved;
      if (!saved)
        break;
    }
  }
  free(p);
  return err;
}

/* ---------------------------------------------------------------- the handle */

struct kiln_cache {
  char *dir;     /* absolute top directory; NULL when none could be resolved */
  char *vdir;    /* dir/v<format> */
  char *req_dir; /* as requested; NULL: default resolution */
  uint32_t format;
  kiln_cache_mode requested;
  kiln_cache_mode mode;
  kiln_cache_store_policy store_policy; /* used by lib/runtime/build.c, kept across reopens */
  uint64_t max_bytes;
  char reason[256];
  int have_key;                        /* mac_key holds the directory's key */
  uint8_t mac_key[KILN__DC_KEY_BYTES]; /* DIR/key: what entries are authenticated with */
  char key_problem[512];               /* why have_key is 0 */
  pthread_mutex_t lock; /* guards the counters: contexts may be used from several threads */
  kiln_cache_counters session;
  kiln_cache_counters unsaved;
};

#define NCOUNTERS (sizeof(kiln_cache_counters) / sizeof(uint64_t))

static void
counters_add(kiln_cache_counters *dst, const kiln_cache_counters *src)
{
  uint64_t *d = (uint64_t *)dst;
  const uint64_t *s = (const uint64_t *)src;
  for (size_t i = 0; i < NCOUNTERS; i++)
    d[i] += s[i];
}

/* Adds n to the counter at byte offset off of both the session and the unsaved set. */
static void
count(kiln_cache *c, size_t off, uint64_t n)
{
  if (!c)
    return;
  pthread_mutex_lock(&c->lock);
  *(uint64_t *)((char *)&c->session + off) += n;
  *(uint64_t *)((char *)&c->unsaved + off) += n;
  pthread_mutex_unlock(&c->lock);
}

#define COUNT(c, field, n) count((c), offsetof(kiln_cache_counters, field), (n))

static void
degrade(kiln_cache *c, kiln_cache_mode to, enum problem p, const char *fmt, ...) KILN_PRINTF(4, 5);

static void
degrade(kiln_cache *c, kiln_cache_mode to, enum problem p, const char *fmt, ...)
{
  if (to >= c->mode)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->reason, sizeof c->reason, fmt, ap);
  va_end(ap);
  c->mode = to;
  warn_once(c->dir, p, "%s; running %s", c->reason,
            to == KILN_CACHE_OFF ? "without a disk cache" : "with a read-only disk cache");
}

/* A directory kiln may trust: a real directory, ours, not writable by group or others. */
static int
check_trust(const struct stat *st, const char *path, char *why, size_t whylen, enum problem *p)
{
  if (!S_ISDIR(st->st_mode)) {
    snprintf(why, whylen, "%s is not a directory", path);
    *p = P_NOT_DIR;
    return -1;
  }
  if (st->st_uid != geteuid()) {
    snprintf(why, whylen, "%s is owned by uid %u, not by this user (uid %u)", path,
             (unsigned)st->st_uid, (unsigned)geteuid());
    *p = P_OWNER;
    return -1;
  }
  if (st->st_mode & (S_IWGRP | S_IWOTH)) {
    snprintf(why, whylen, "%s is writable by group or others (mode %03o; fix with chmod go-w)",
             path, (unsigned)(st->st_mode & 0777));
    *p = P_PERMS;
    return -1;
  }
  return 0;
}

/*
 * Opens a directory below dfd (no link followed) and checks it like the
 * cache directory: anyone who could write into it could plant entries or
 * swap them under a reader. -1 with errno (EPERM: not trusted).
 */
static int
open_trusted_dir(int dfd, const char *name)
{
  int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return -1;
  struct stat st;
  char why[256];
  enum problem p;
  int bad = fstat(fd, &st) != 0;
  if (bad)
    snprintf(why, sizeof why, "%s: %s", name, strerror(errno));
  else
    bad = check_trust(&st, name, why, sizeof why, &p) != 0;
  if (bad) {
    kiln__log(KILN__LOG_DEBUG, "kernel cache: %s; its entries are not used", why);
    close(fd);
    errno = EPERM;
    return -1;
  }
  return fd;
}

static int
open_vdir(const kiln_cache *c)
{
  return open_trusted_dir(AT_FDCWD, c->vdir);
}

/* ---------------------------------------------------------------- the MAC key */

#define KEY_FILE "key"

/*
 * Reads DIR/key through topfd. Refused (as if absent) unless it is a regular
 * file of exactly the key's size, owned by this user, with no group or other
 * permission bits: a key that others could read or replace would
 * authenticate their entries. (kiln makes it 0600; 0400 after a chmod -R
 * a-w of a cache made read-only on purpose is as private.) 0, or
 * -1 with errno (ENOENT: there is none) and *why.
 */
static int
key_read_at(int topfd, uint8_t key[KILN__DC_KEY_BYTES], char *why, size_t whylen)
{
  int fd = openat(topfd, KEY_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    snprintf(why, whylen, "%s", e == ELOOP ? "is a symbolic link" : strerror(e));
    errno = e == ELOOP ? EPERM : e;
    return -1;
  }
  struct stat st;
  int e = EPERM;
  if (fstat(fd, &st) != 0)
    snprintf(why, whylen, "%s", strerror(e = errno));
  else if (!S_ISREG(st.st_mode))
    snprintf(why, whylen, "is not a regular file");
  else if (st.st_uid != geteuid())
    snprintf(why, whylen, "is owned by uid %u, not by this user (uid %u)", (unsigned)st.st_uid,
             (unsigned)geteuid());
  else if (st.st_mode & 077)
    snprintf(why, whylen, "is accessible by group or others (mode %04o; it must be 0600)",
             (unsigned)(st.st_mode & 07777));
  else if (st.st_size != KILN__DC_KEY_BYTES)
    snprintf(why, whylen, "has %lld bytes, not %u", (long long)st.st_size, KILN__DC_KEY_BYTES);
  else if (read_exact(fd, key, KILN__DC_KEY_BYTES) != 0)
    snprintf(why, whylen, "cannot be read"), e = EIO;
  else
    e = 0;
  close(fd);
  errno = e;
  return e ? -1 : 0;
}

/*
 * Makes DIR/key when there is none. The key is written to a private temp
 * file and link()ed into place, which never replaces an existing file, so
 * processes racing here all end up reading the one key that won.
 */
static int
key_create_at(int topfd)
{
  uint8_t key[KILN__DC_KEY_BYTES];
  size_t got = 0;
  while (got < sizeof key) {
    ssize_t n = getrandom(key + got, sizeof key - got, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return -1;
    got += (size_t)n;
  }
  char tmp[32] = KEY_FILE ".tmp.";
  size_t base = strlen(tmp);
  int fd = -1;
  for (int tries = 0; fd < 0 && tries < 16; tries++) {
    random_suffix(tmp + base);
    tmp[base + 6] = 0;
    fd = openat(topfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0)
    return -1;
  /* The umask may have taken more than group and other bits. */
  int e = fchmod(fd, 0600) != 0 || write_all(fd, key, sizeof key) != 0 ? errno : 0;
  if (close(fd) != 0 && !e)
    e = errno;
  if (!e && linkat(topfd, tmp, topfd, KEY_FILE, 0) != 0 && errno != EEXIST)
    e = errno;
  unlinkat(topfd, tmp, 0);
  sodium_memzero(key, sizeof key);
  errno = e;
  return e ? -1 : 0;
}

/* Loads (and with create, makes) the directory's key; sets have_key or key_problem. */
static void
key_load(kiln_cache *c, int create)
{
  c->have_key = 0;
  char why[256] = "";
  int topfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (topfd < 0) {
    snprintf(c->key_problem, sizeof c->key_problem, "%s: %s", c->dir, strerror(errno));
    return;
  }
  int r = key_read_at(topfd, c->mac_key, why, sizeof why);
  if (r != 0 && errno == ENOENT && create) {
    if (key_create_at(topfd) != 0)
      snprintf(why, sizeof why, "cannot be created (%s)", strerror(errno));
    else
      r = key_read_at(topfd, c->mac_key, why, sizeof why);
  }
  close(topfd);
  if (r == 0)
    c->have_key = 1;
  else
    snprintf(c->key_problem, sizeof c->key_problem, "key file %s/" KEY_FILE " %s", c->dir,
             strcmp(why, strerror(ENOENT)) == 0 ? "does not exist" : why);
}

const uint8_t *
kiln__dc_mac_key(const kiln_cache *c)
{
  return c && c->have_key ? c->mac_key : NULL;
}

/*
 * Makes the directory usable for c->requested: creates it when allowed,
 * checks trust and writability. In strict mode (kiln_cache_open) a problem
 * is an error with the message recorded; otherwise it degrades c->mode.
 */
static kiln_status
prepare_dirs(kiln_cache *c, int strict, const char *op)
{
  char why[1024];
  enum problem p = P_NOT_DIR;
  int create = c->requested == KILN_CACHE_ON;
  if (create) {
    int e = mkdir_p(c->dir);
    if (e && e != EEXIST && e != ENOTDIR) {
      if (strict)
        return kiln__fail(KILN_ERR_IO, op, e, "cannot create cache directory %s: %s", c->dir,
                          strerror(e));
      struct stat st;
      if (stat(c->dir, &st) != 0) {
        degrade(c, KILN_CACHE_OFF, P_CREATE, "cannot create cache directory %s (%s)", c->dir,
                strerror(e));
        return KILN_OK;
      }
    }
  }
  struct stat st;
  if (stat(c->dir, &st) != 0) {
    int e = errno;
    if (strict)
      return kiln__fail(e == ENOENT ? KILN_ERR_NOT_FOUND : KILN_ERR_IO, op, e,
                        "cache directory %s: %s", c->dir, strerror(e));
    degrade(c, KILN_CACHE_OFF, e == ENOENT ? P_MISSING : P_NOT_DIR, "cache directory %s: %s",
            c->dir, strerror(e));
    return KILN_OK;
  }
  if (check_trust(&st, c->dir, why, sizeof why, &p) != 0) {
    if (strict)
      return kiln__fail(KILN_ERR_IO, op, p == P_NOT_DIR ? ENOTDIR : EPERM, "%s", why);
    degrade(c, KILN_CACHE_OFF, p, "%s", why);
    return KILN_OK;
  }
  struct stat vst;
  int e = lstat(c->vdir, &vst) == 0 ? 0 : errno;
  /* Processes starting together race to create it: EEXIST means another one won. */
  if (e == ENOENT && create) {
    e = mkdir(c->vdir, 0700) == 0 || errno == EEXIST ? 0 : errno;
    if (!e && lstat(c->vdir, &vst) != 0)
      e = errno;
  }
  if (e == ENOENT || e == EACCES || e == EROFS || e == EPERM) {
    /* Nothing stored yet for this format, and no way to create it: nothing to read either. */
    if (strict && create)
      return kiln__fail(KILN_ERR_IO, op, e, "cannot create %s: %s", c->vdir, strerror(e));
    if (!strict)
      degrade(c, KILN_CACHE_READONLY, P_READONLY, "cache directory %s is not writable", c->dir);
    return KILN_OK;
  }
  if (e) {
    if (strict)
      return kiln__fail(KILN_ERR_IO, op, e, "%s: %s", c->vdir, strerror(e));
    degrade(c, KILN_CACHE_OFF, P_NOT_DIR, "%s: %s", c->vdir, strerror(e));
    return KILN_OK;
  }
  if (S_ISLNK(vst.st_mode) || check_trust(&vst, c->vdir, why, sizeof why, &p) != 0) {
    if (S_ISLNK(vst.st_mode))
      snprintf(why, sizeof why, "%s is a symbolic link", c->vdir);
    if (strict)
      return kiln__fail(KILN_ERR_IO, op, EPERM, "%s", why);
    degrade(c, KILN_CACHE_OFF, p, "%s", why);
    return KILN_OK;
  }
  if (c->mode == KILN_CACHE_ON && faccessat(AT_FDCWD, c->vdir, W_OK | X_OK, AT_EACCESS) != 0) {
    if (strict)
      return kiln__fail(KILN_ERR_IO, op, errno, "cache directory %s is not writable: %s", c->vdir,
                        strerror(errno));
    degrade(c, KILN_CACHE_READONLY, P_READONLY, "cache directory %s is not writable", c->dir);
    return KILN_OK;
  }
  if (c->mode == KILN_CACHE_ON) {
    /* https://bford.info/cachedir/: backup tools skip directories holding this file. */
    char *tag = join(c->dir, "CACHEDIR.TAG");
    int fd = tag ? open(tag, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644) : -1;
    if (fd >= 0) {
      static const char text[] = "Signature: 8a477f597d28d172789f06886806bc55\n"
                                 "# This file is a cache directory tag created by kiln.\n"
                                 "# For information about cache directory tags, see "
                                 "https://bford.info/cachedir/\n";
      if (write_all(fd, (const uint8_t *)text, sizeof text - 1) != 0)
        kiln__log(KILN__LOG_DEBUG, "cannot write %s: %s", tag, strerror(errno));
      close(fd);
    }
    free(tag);
  }
  return KILN_OK;
}

/*
 * prepare_dirs, then the MAC key: made when the cache may write, else only
 * read. A context's cache without a key is off (nothing it reads could be
 * trusted, nothing it writes could be); a handle from kiln_cache_open keeps
 * working for what needs no key and reports key_problem where one is needed.
 */
static kiln_status
prepare(kiln_cache *c, int strict, const char *op)
{
  KILN_TRY(prepare_dirs(c, strict, op));
  if (c->mode == KILN_CACHE_OFF)
    return KILN_OK;
  key_load(c, c->mode == KILN_CACHE_ON);
  if (!c->have_key && !strict)
    degrade(c, KILN_CACHE_OFF, P_KEY, "%s", c->key_problem);
  return KILN_OK;
}

static kiln_cache *
cache_alloc(const char *req_dir, kiln_cache_mode mode, uint64_t max_bytes)
{
  kiln_cache *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  if (req_dir && !(c->req_dir = strdup(req_dir))) {
    free(c);
    return NULL;
  }
  pthread_mutex_init(&c->lock, NULL);
  c->requested = c->mode = mode;
  c->max_bytes = max_bytes;
  c->format = kiln__dc_format();
  return c;
}

static void
cache_free(kiln_cache *c)
{
  sodium_memzero(c->mac_key, sizeof c->mac_key);
  pthread_mutex_destroy(&c->lock);
  free(c->dir);
  free(c->vdir);
  free(c->req_dir);
  free(c);
}

static int
set_dirs(kiln_cache *c, const char **why)
{
  c->dir = resolve_dir(c->req_dir, why);
  if (!c->dir)
    return -1;
  char v[16];
  snprintf(v, sizeof v, "v%" PRIu32, c->format);
  c->vdir = join(c->dir, v);
  if (!c->vdir) {
    *why = "out of memory";
    return -1;
  }
  return 0;
}

kiln_cache *
kiln__dc_open_degrading(const char *dir, kiln_cache_mode mode, uint64_t max_bytes)
{
  kiln_cache *c = cache_alloc(dir, mode, max_bytes);
  if (!c)
    return NULL;
#if !KILN_HAVE_XXHASH
  if (mode != KILN_CACHE_OFF) {
    snprintf(c->reason, sizeof c->reason, "kiln was built without xxHash");
    c->mode = KILN_CACHE_OFF;
    warn_once("", P_NO_XXHASH, "kiln was built without xxHash; running without a disk cache");
  }
  return c;
#endif
  const char *why = "out of memory";
  if (set_dirs(c, &why) != 0) {
    if (mode != KILN_CACHE_OFF) {
      snprintf(c->reason, sizeof c->reason, "%s", why);
      c->mode = KILN_CACHE_OFF;
      warn_once("", P_NO_HOME, "%s; running without a disk cache", why);
    }
    return c;
  }
  if (mode != KILN_CACHE_OFF)
    prepare(c, 0, "kiln cache");
  return c;
}

kiln_cache *
kiln__dc_reopen(kiln_cache *old, const char *dir, int keep_dir, kiln_cache_mode mode)
{
  kiln_cache *c = kiln__dc_open_degrading(keep_dir ? old->req_dir : dir, mode, old->max_bytes);
  if (!c)
    return NULL;
  pthread_mutex_lock(&old->lock);
  c->session = old->session;
  pthread_mutex_unlock(&old->lock);
  c->store_policy = old->store_policy;
  kiln_cache_close(old);
  return c;
}

kiln_cache_mode
kiln__dc_mode(const kiln_cache *c)
{
  return c ? c->mode : KILN_CACHE_OFF;
}

kiln_cache_mode
kiln__dc_requested_mode(const kiln_cache *c)
{
  return c ? c->requested : KILN_CACHE_OFF;
}

kiln_cache_store_policy
kiln__dc_store_policy(const kiln_cache *c)
{
  return c ? c->store_policy : KILN_CACHE_STORE_AUTO;
}

void
kiln__dc_set_store_policy(kiln_cache *c, kiln_cache_store_policy policy)
{
  if (c)
    c->store_policy = policy;
}

uint64_t
kiln__dc_max_bytes(const kiln_cache *c)
{
  return c ? c->max_bytes : 0;
}

const char *
kiln__dc_requested_dir(const kiln_cache *c)
{
  return c ? c->req_dir : NULL;
}

const char *
kiln__dc_dir(const kiln_cache *c)
{
  return c ? c->dir : NULL;
}

kiln_status
kiln_cache_open(const char *dir, kiln_cache_mode mode, kiln_cache **out)
{
  static const char op[] = "kiln_cache_open";
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  *out = NULL;
  KILN_RETURN_IF(mode != KILN_CACHE_ON && mode != KILN_CACHE_READONLY, KILN_ERR_INVALID_ARGUMENT,
                 op, "mode must be KILN_CACHE_ON or KILN_CACHE_READONLY (got %d)", (int)mode);
#if !KILN_HAVE_XXHASH
  (void)dir;
  return kiln__fail(KILN_ERR_UNSUPPORTED, op, 0, "kiln was built without xxHash: no disk cache");
#else
  kiln_cache *c = cache_alloc(dir, mode, kiln__dc_env_max_bytes());
  KILN_RETURN_IF(!c, KILN_ERR_HOST_MEMORY, op, "cannot allocate a cache handle");
  const char *why = "out of memory";
  if (set_dirs(c, &why) != 0) {
    cache_free(c);
    return kiln__fail(strcmp(why, "out of memory") ? KILN_ERR_NOT_FOUND : KILN_ERR_HOST_MEMORY, op,
                      0, "%s", why);
  }
  kiln_status s = prepare(c, 1, op);
  if (s != KILN_OK) {
    cache_free(c);
    return s;
  }
  *out = c;
  return KILN_OK;
#endif
}

kiln_status
kiln_cache_set_max_bytes(kiln_cache *cache, uint64_t max_bytes)
{
  static const char op[] = "kiln_cache_set_max_bytes";
  KILN_RETURN_IF(!cache, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(max_bytes > (uint64_t)INT64_MAX, KILN_ERR_INVALID_ARGUMENT, op,
                 "cap of %" PRIu64 " bytes is above the largest (2^63 - 1)", max_bytes);
  cache->max_bytes = max_bytes;
  return KILN_OK;
}

/* ---------------------------------------------------------------- statistics file */

struct stats_file {
  kiln_cache_counters k;
  uint64_t entries;
  uint64_t bytes;
  int64_t zeroed_at;
  char extra[2048]; /* lines of newer kiln versions, kept verbatim */
};

static const struct {
  const char *name;
  size_t off;
} stat_fields[] = {
#define F(n) {#n, offsetof(struct stats_file, k.n)}
    F(hits),     F(misses),   F(stores),         F(evictions),  F(corrupt),
    F(rejected), F(uncached), F(store_failures), F(bytes_read), F(bytes_written),
#undef F
    {"entries", offsetof(struct stats_file, entries)},
    {"bytes", offsetof(struct stats_file, bytes)},
    {"zeroed_at", offsetof(struct stats_file, zeroed_at)},
};

/*
 * A missing or unreadable stats file reads as zeros (counters are advisory,
 * entries are not); returns whether it was there.
 */
static int
stats_read(int vfd, struct stats_file *sf)
{
  memset(sf, 0, sizeof *sf);
  int fd = openat(vfd, "stats", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return 0;
  char buf[8192];
  size_t n = 0;
  for (;;) {
    ssize_t r = read(fd, buf + n, sizeof buf - 1 - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    n += (size_t)r;
    if (n == sizeof buf - 1)
      break;
  }
  close(fd);
  buf[n] = 0;
  size_t extra_len = 0;
  for (char *line = buf, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next)
      *next++ = 0;
    if (line[0] == '#' || !line[0])
      continue;
    char name[64];
    unsigned long long v;
    if (sscanf(line, "%63s %llu", name, &v) != 2)
      continue;
    size_t i;
    for (i = 0; i < sizeof stat_fields / sizeof stat_fields[0]; i++) {
      if (strcmp(name, stat_fields[i].name) == 0) {
        memcpy((char *)sf + stat_fields[i].off, &(uint64_t){v}, sizeof(uint64_t));
        break;
      }
    }
    size_t ll = strlen(line);
    if (i == sizeof stat_fields / sizeof stat_fields[0] && extra_len + ll + 2 < sizeof sf->extra) {
      memcpy(sf->extra + extra_len, line, ll);
      sf->extra[extra_len + ll] = '\n';
      extra_len += ll + 1;
      sf->extra[extra_len] = 0;
    }
  }
  return 1;
}

static int
stats_write(int vfd, const struct stats_file *sf)
{
  char buf[8192];
  int n = snprintf(buf, sizeof buf, "# kiln kernel cache statistics (format 1)\n");
  for (size_t i = 0; i < sizeof stat_fields / sizeof stat_fields[0]; i++) {
    uint64_t v;
    memcpy(&v, (const char *)sf + stat_fields[i].off, sizeof v);
    n += snprintf(buf + n, sizeof buf - (size_t)n, "%s %" PRIu64 "\n", stat_fields[i].name, v);
  }
  n += snprintf(buf + n, sizeof buf - (size_t)n, "%s", sf->extra);
  char tmp[32] = "stats.tmp.";
  int fd = -1;
  for (int tries = 0; fd < 0 && tries < 16; tries++) {
    random_suffix(tmp + 10);
    tmp[16] = 0;
    fd = openat(vfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST)
      return -1;
  }
  if (fd < 0)
    return -1;
  int bad = write_all(fd, (const uint8_t *)buf, (size_t)n) != 0;
  bad |= close(fd) != 0;
  if (bad || renameat(vfd, tmp, vfd, "stats") != 0) {
    unlinkat(vfd, tmp, 0);
    return -1;
  }
  return 0;
}

/* Takes stats.lock, waiting at most LOCK_WAIT_MS: a stopped process must not stall builds. */
static int
lock_stats(int vfd)
{
  int fd = openat(vfd, "stats.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return -1;
  for (int waited = 0;; waited++) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
      return fd;
    if ((errno != EWOULDBLOCK && errno != EINTR) || waited >= LOCK_WAIT_MS)
      break;
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  close(fd);
  return -1;
}

/* Merges the unsaved counters into the file and applies fn, under the lock. */
typedef void (*stats_edit_fn)(struct stats_file *sf, void *arg);

static int
stats_update_locked(kiln_cache *c, int vfd, stats_edit_fn fn, void *arg)
{
  struct stats_file sf;
  stats_read(vfd, &sf);
  pthread_mutex_lock(&c->lock);
  kiln_cache_counters pending = c->unsaved;
  memset(&c->unsaved, 0, sizeof c->unsaved);
  pthread_mutex_unlock(&c->lock);
  counters_add(&sf.k, &pending);
  if (fn)
    fn(&sf, arg);
  if (stats_write(vfd, &sf) != 0) {
    pthread_mutex_lock(&c->lock);
    counters_add(&c->unsaved, &pending);
    pthread_mutex_unlock(&c->lock);
    return -1;
  }
  return 0;
}

static int
stats_update(kiln_cache *c, stats_edit_fn fn, void *arg)
{
  if (c->mode != KILN_CACHE_ON || !c->vdir)
    return -1;
  int vfd = open_vdir(c);
  if (vfd < 0)
    return -1;
  int lk = lock_stats(vfd);
  int r = -1;
  if (lk >= 0) {
    r = stats_update_locked(c, vfd, fn, arg);
    close(lk);
  }
  close(vfd);
  return r;
}

/* ---------------------------------------------------------------- walking the entries */

struct rec {
  char key[33];
  int64_t mtime_ns;
  uint64_t size;
};

struct recs {
  struct rec *v;
  size_t n, cap;
  uint64_t total;
};

static int
recs_push(struct recs *r, const char *sub, const char *name, const struct stat *st)
{
  if (r->n == r->cap) {
    size_t ncap = r->cap ? r->cap * 2 : 256;
    struct rec *nv = realloc(r->v, ncap * sizeof *nv);
    if (!nv)
      return -1;
    r->v = nv;
    r->cap = ncap;
  }
  struct rec *e = &r->v[r->n++];
  memcpy(e->key, sub, 2);
  memcpy(e->key + 2, name, 30);
  e->key[32] = 0;
  e->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
  e->size = (uint64_t)st->st_size;
  r->total += e->size;
  return 0;
}

enum walk_kind { W_ENTRY, W_TEMP };

/* Called with the subdirectory's fd, its name, the file name and lstat data; nonzero stops. */
typedef int (*walk_fn)(int sfd, const char *sub, const char *name, const struct stat *st,
                       enum walk_kind kind, void *arg);

/* Visits every file kiln recognises in vdir's subdirectories. -1 with errno if vdir is unreadable. */
static int
walk_vdir(int vfd, walk_fn fn, void *arg)
{
  int dfd = dup(vfd);
  if (dfd < 0)
    return -1;
  DIR *d = fdopendir(dfd);
  if (!d) {
    close(dfd);
    return -1;
  }
  rewinddir(d);
  struct dirent *de;
  int stop = 0;
  while (!stop && (de = readdir(d))) {
    if (!is_sub_name(de->d_name))
      continue;
    int sfd = open_trusted_dir(vfd, de->d_name);
    if (sfd < 0)
      continue;
    DIR *sd = fdopendir(sfd);
    if (!sd) {
      close(sfd);
      continue;
    }
    struct dirent *fe;
    while (!stop && (fe = readdir(sd))) {
      enum walk_kind kind;
      if (is_entry_name(fe->d_name))
        kind = W_ENTRY;
      else if (is_temp_name(fe->d_name))
        kind = W_TEMP;
      else
        continue;
      struct stat st;
      if (fstatat(sfd, fe->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        continue;
      stop = fn(sfd, de->d_name, fe->d_name, &st, kind, arg);
    }
    closedir(sd);
  }
  closedir(d);
  return 0;
}

static int
temp_is_stale(const struct stat *st)
{
  return S_ISREG(st->st_mode) && time(NULL) - st->st_mtim.tv_sec > TEMP_MAX_AGE_S;
}

struct collect_arg {
  struct recs *recs;
  int remove_stale_temps;
  uint64_t temps_removed;
  int oom;
};

static int
collect_cb(int sfd, const char *sub, const char *name, const struct stat *st, enum walk_kind kind,
           void *arg)
{
  struct collect_arg *a = arg;
  if (kind == W_TEMP) {
    if (a->remove_stale_temps && temp_is_stale(st) && unlinkat(sfd, name, 0) == 0)
      a->temps_removed++;
    return 0;
  }
  if (!S_ISREG(st->st_mode))
    return 0;
  if (recs_push(a->recs, sub, name, st) != 0) {
    a->oom = 1;
    return 1;
  }
  return 0;
}

static int
rec_older(const void *pa, const void *pb)
{
  const struct rec *a = pa, *b = pb;
  if (a->mtime_ns != b->mtime_ns)
    return a->mtime_ns < b->mtime_ns ? -1 : 1;
  return strcmp(a->key, b->key);
}

/* Removes the entry file of key if it still is a regular file; returns 0 when it went. */
static int
unlink_entry(int vfd, const char *key)
{
  char sub[3] = {key[0], key[1], 0};
  char name[ENTRY_NAME_LEN + 1];
  snprintf(name, sizeof name, "%.30s.kbin", key + 2);
  int sfd = open_trusted_dir(vfd, sub);
  if (sfd < 0)
    return -1;
  struct stat st;
  int r = -1;
  if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
    r = unlinkat(sfd, name, 0);
  else
    errno = ENOENT;
  int e = errno;
  close(sfd);
  errno = e;
  return r;
}

struct exact_arg {
  uint64_t entries, bytes;
  uint64_t evictions;
};

static void
set_exact(struct stats_file *sf, void *arg)
{
  struct exact_arg *a = arg;
  sf->entries = a->entries;
  sf->bytes = a->bytes;
  sf->k.evictions += a->evictions;
}

/*
 * With stats.lock held: walks the entries, removes stale temp files and,
 * when over the cap, the least recently used entries down to 90% of it
 * (the slack keeps a full cache from walking on every store), never the
 * entry just written. Writes the exact count and size it found.
 */
static void
evict_locked(kiln_cache *c, int vfd, const char *keep_key)
{
  struct recs r = {0};
  struct collect_arg a = {.recs = &r, .remove_stale_temps = 1};
  if (walk_vdir(vfd, collect_cb, &a) != 0 || a.oom) {
    free(r.v);
    return;
  }
  struct exact_arg ex = {.entries = r.n, .bytes = r.total};
  if (c->max_bytes && r.total > c->max_bytes) {
    qsort(r.v, r.n, sizeof *r.v, rec_older);
    uint64_t target = c->max_bytes - c->max_bytes / 10;
    for (size_t i = 0; i < r.n && ex.bytes > target; i++) {
      if (keep_key && strcmp(r.v[i].key, keep_key) == 0)
        continue;
      if (unlink_entry(vfd, r.v[i].key) == 0) {
        ex.entries--;
        ex.bytes -= r.v[i].size;
        ex.evictions++;
      }
    }
  }
  free(r.v);
  pthread_mutex_lock(&c->lock);
  c->session.evictions += ex.evictions;
  pthread_mutex_unlock(&c->lock);
  stats_update_locked(c, vfd, set_exact, &ex);
}

/* ---------------------------------------------------------------- lookup */

static void
entry_path_parts(const char *key_hex, char sub[3], char name[ENTRY_NAME_LEN + 1])
{
  sub[0] = key_hex[0];
  sub[1] = key_hex[1];
  sub[2] = 0;
  snprintf(name, ENTRY_NAME_LEN + 1, "%.30s.kbin", key_hex + 2);
}

/*
 * Opens and reads an entry file without following links or blocking on
 * FIFOs. Returns the fd (caller closes) with *buf and *len the whole file, or
 * -1 with *why (ENOENT-type absence sets *absent).
 */
static int
read_entry(int vfd, const char *key_hex, uint8_t **buf, size_t *len, int *absent, const char **why)
{
  char sub[3], name[ENTRY_NAME_LEN + 1];
  entry_path_parts(key_hex, sub, name);
  *absent = 0;
  *buf = NULL;
  int sfd = open_trusted_dir(vfd, sub);
  if (sfd < 0) {
    *absent = errno == ENOENT;
    *why = errno == EPERM ? "its subdirectory is not trusted (not ours, or writable by others)"
                          : "subdirectory cannot be opened";
    return -1;
  }
  int fd = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  int e = errno;
  close(sfd);
  if (fd < 0) {
    *absent = e == ENOENT;
    *why = e == ELOOP ? "a symbolic link in place of the entry" : "cannot be opened";
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    *why = "not a regular file";
    close(fd);
    return -1;
  }
  if ((uint64_t)st.st_size < KILN__DC_FIXED + KILN__DC_TRAILER ||
      (uint64_t)st.st_size > KILN__DC_MAX_HEADER + KILN__DC_MAX_PAYLOAD + KILN__DC_TRAILER) {
    *why = "file size out of range";
    close(fd);
    return -1;
  }
  size_t n = (size_t)st.st_size;
  uint8_t *b = malloc(n + 1);
  if (!b) {
    *why = "out of memory";
    close(fd);
    return -1;
  }
  /* One byte more than fstat said: a file that grows meanwhile is caught, not silently cut. */
  int r = read_exact(fd, b, n);
  uint8_t extra;
  if (r != 0 || read(fd, &extra, 1) != 0) {
    *why = r == -2 ? "truncated while reading" : r ? "read error" : "grew while reading";
    free(b);
    close(fd);
    return -1;
  }
  *buf = b;
  *len = n;
  return fd;
}

enum kiln__dc_found
kiln__dc_lookup(kiln_cache *c, const struct kiln__dc_req *r, unsigned flags, void **bufp,
                const void **payload, size_t *payload_len)
{
  *bufp = NULL;
  *payload = NULL;
  *payload_len = 0;
  if (!c || c->mode == KILN_CACHE_OFF)
    return KILN__DC_MISS;
  int counted = !(flags & KILN__DC_NOCOUNT);
  int vfd = open_vdir(c);
  if (vfd < 0) {
    if (counted)
      COUNT(c, misses, 1);
    return KILN__DC_MISS;
  }
  uint8_t *buf;
  size_t len;
  int absent;
  const char *why = "";
  int fd = read_entry(vfd, r->key_hex, &buf, &len, &absent, &why);
  close(vfd);
  enum kiln__dc_found res;
  struct kiln__dc_header h;
  if (fd < 0) {
    res = absent ? KILN__DC_MISS : KILN__DC_BAD;
  } else if (kiln__dc_parse(buf, len, len, 1, r->format, kiln__dc_mac_key(c), &h, &why) != 0) {
    res = KILN__DC_BAD;
  } else if (!header_matches(&h, r)) {
    why = "identity differs from the request";
    res = KILN__DC_BAD;
  } else {
    res = KILN__DC_HIT;
  }
  if (res == KILN__DC_HIT) {
    /* mtime is the LRU clock: atime is unreliable under noatime/relatime. */
    if (c->mode == KILN_CACHE_ON && futimens(fd, NULL) != 0)
      kiln__log(KILN__LOG_DEBUG, "kernel cache: cannot touch entry %s: %s", r->key_hex,
                strerror(errno));
    *bufp = buf;
    *payload = h.payload;
    *payload_len = (size_t)h.payload_size;
    if (counted && !(flags & KILN__DC_DEFER_HIT))
      kiln__dc_note_hit(c, len);
  } else {
    free(buf);
    if (res == KILN__DC_BAD)
      kiln__log(KILN__LOG_DEBUG, "kernel cache: entry %s refused: %s", r->key_hex, why);
    if (counted) {
      COUNT(c, misses, 1);
      if (res == KILN__DC_BAD)
        COUNT(c, corrupt, 1);
    }
  }
  if (fd >= 0)
    close(fd);
  return res;
}

void
kiln__dc_note_hit(kiln_cache *c, size_t entry_bytes)
{
  COUNT(c, hits, 1);
  COUNT(c, bytes_read, entry_bytes);
}

void
kiln__dc_note_rejected(kiln_cache *c)
{
  COUNT(c, misses, 1);
  COUNT(c, rejected, 1);
}

void
kiln__dc_note_uncached(kiln_cache *c)
{
  COUNT(c, uncached, 1);
}

void
kiln__dc_note_store_failure(kiln_cache *c)
{
  COUNT(c, store_failures, 1);
}

/* ---------------------------------------------------------------- publishing */

struct store_delta {
  int64_t entries;
  int64_t bytes;
};

static void
apply_delta(struct stats_file *sf, void *arg)
{
  const struct store_delta *d = arg;
  sf->entries = (uint64_t)((int64_t)sf->entries + d->entries < 0 ? 0 : (int64_t)sf->entries + d->entries);
  sf->bytes = (uint64_t)((int64_t)sf->bytes + d->bytes < 0 ? 0 : (int64_t)sf->bytes + d->bytes);
}

/*
 * Writes bytes as the entry for key_hex: unique temp file, write, close,
 * rename over the final name. Returns 0, or an errno value (temp removed).
 * *old_size receives the size of a replaced regular file, or -1.
 */
static int
publish(int vfd, const char *key_hex, const uint8_t *bytes, size_t len, int64_t *old_size)
{
  char sub[3], name[ENTRY_NAME_LEN + 1], tmp[TEMP_NAME_LEN + 1];
  entry_path_parts(key_hex, sub, name);
  *old_size = -1;
  if (mkdirat(vfd, sub, 0700) != 0 && errno != EEXIST)
    return errno;
  int sfd = open_trusted_dir(vfd, sub);
  if (sfd < 0)
    return errno;
  int fd = -1, e = 0;
  for (int tries = 0; fd < 0 && tries < 32; tries++) {
    memcpy(tmp, name, ENTRY_NAME_LEN);
    memcpy(tmp + ENTRY_NAME_LEN, ".tmp.", 5);
    random_suffix(tmp + ENTRY_NAME_LEN + 5);
    tmp[TEMP_NAME_LEN] = 0;
    fd = openat(sfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0) {
    e = errno;
    close(sfd);
    return e;
  }
  fault_point("before-write");
  size_t half = len / 2;
  if (write_all(fd, bytes, half) != 0)
    e = errno;
  if (!e)
    fault_point("mid-write");
  if (!e && write_all(fd, bytes + half, len - half) != 0)
    e = errno;
  /* close() can be where NFS reports a failed write. */
  if (close(fd) != 0 && !e)
    e = errno;
  if (!e)
    fault_point("before-rename");
  struct stat st;
  if (!e && fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISREG(st.st_mode))
      *old_size = st.st_size;
    else if (S_ISDIR(st.st_mode) && unlinkat(sfd, name, AT_REMOVEDIR) != 0)
      e = errno; /* a non-empty directory is not ours to delete */
  }
  if (!e && renameat(sfd, tmp, sfd, name) != 0)
    e = errno;
  if (e)
    unlinkat(sfd, tmp, 0);
  close(sfd);
  if (!e)
    fault_point("after-rename");
  return e;
}

/* Publishes serialised bytes, updates the tracked size and enforces the cap. */
static int
store_bytes(kiln_cache *c, const char *key_hex, const uint8_t *bytes, size_t len)
{
  if (c->max_bytes && len > c->max_bytes) {
    kiln__log(KILN__LOG_DEBUG, "kernel cache: entry %s (%zu bytes) exceeds the cap; not stored",
              key_hex, len);
    COUNT(c, store_failures, 1);
    errno = EFBIG;
    return -1;
  }
  int vfd = open_vdir(c);
  if (vfd < 0) {
    /* The format directory vanished (cleared by hand): recreate it once. */
    if ((mkdir(c->vdir, 0700) != 0 && errno != EEXIST) || (vfd = open_vdir(c)) < 0) {
      COUNT(c, store_failures, 1);
      return -1;
    }
  }
  int64_t old;
  int e = publish(vfd, key_hex, bytes, len, &old);
  if (e) {
    close(vfd);
    COUNT(c, store_failures, 1);
    if (e == ENOTEMPTY || e == EEXIST || e == EISDIR)
      kiln__log(KILN__LOG_DEBUG, "kernel cache: a directory occupies entry %s; not stored",
                key_hex);
    else
      warn_once(c->dir, P_WRITE, "cannot write to cache directory %s (%s); entries are not stored",
                c->dir, strerror(e));
    errno = e;
    return -1;
  }
  COUNT(c, stores, 1);
  COUNT(c, bytes_written, len);
  struct store_delta d = {old < 0 ? 1 : 0, (int64_t)len - (old < 0 ? 0 : old)};
  int lk = lock_stats(vfd);
  if (lk >= 0) {
    struct stats_file sf;
    /* Without a stats file the tracked size is unknown: recount (evict_locked does) instead of guessing. */
    if (!stats_read(vfd, &sf))
      evict_locked(c, vfd, key_hex);
    else if (stats_update_locked(c, vfd, apply_delta, &d) == 0 && stats_read(vfd, &sf) &&
             c->max_bytes && sf.bytes > c->max_bytes)
      evict_locked(c, vfd, key_hex);
    close(lk);
  }
  close(vfd);
  return 0;
}

int
kiln__dc_store(kiln_cache *c, const struct kiln__dc_req *r, const void *payload, size_t len)
{
  if (!c || c->mode != KILN_CACHE_ON)
    return -1;
  uint8_t *bytes;
  size_t n = kiln__dc_serialize(r, payload, len, (int64_t)time(NULL), kiln__dc_mac_key(c), &bytes);
  if (!n) {
    COUNT(c, store_failures, 1);
    return -1;
  }
  int rc = store_bytes(c, r->key_hex, bytes, n);
  free(bytes);
  return rc;
}

/* ---------------------------------------------------------------- public: stats */

kiln_status
kiln_cache_close(kiln_cache *cache)
{
  if (!cache)
    return KILN_OK;
  kiln_cache_counters zero = {0};
  if (cache->mode == KILN_CACHE_ON && memcmp(&cache->unsaved, &zero, sizeof zero) != 0)
    stats_update(cache, NULL, NULL);
  cache_free(cache);
  return KILN_OK;
}

static void
fill_stats(kiln_cache *c, kiln_cache_stats *out)
{
  memset(out, 0, sizeof *out);
  out->requested_mode = c->requested;
  out->mode = c->mode;
  snprintf(out->reason, sizeof out->reason, "%s", c->reason);
  snprintf(out->dir, sizeof out->dir, "%s", c->dir ? c->dir : "");
  out->max_bytes = c->max_bytes;
  struct stats_file sf;
  memset(&sf, 0, sizeof sf);
  int vfd = c->vdir && c->mode != KILN_CACHE_OFF ? open_vdir(c) : -1;
  if (vfd >= 0) {
    stats_read(vfd, &sf);
    close(vfd);
  }
  out->entries = sf.entries;
  out->bytes = sf.bytes;
  out->zeroed_at = sf.zeroed_at;
  pthread_mutex_lock(&c->lock);
  out->session = c->session;
  out->persistent = sf.k;
  counters_add(&out->persistent, &c->unsaved);
  pthread_mutex_unlock(&c->lock);
}

kiln_status
kiln_cache_stats_get(kiln_cache *cache, kiln_cache_stats *out)
{
  static const char op[] = "kiln_cache_stats_get";
  KILN_RETURN_IF(!cache, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  fill_stats(cache, out);
  return KILN_OK;
}

static kiln_status
need_writable(const kiln_cache *c, const char *op)
{
  KILN_RETURN_IF(!c, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(c->mode != KILN_CACHE_ON, KILN_ERR_UNSUPPORTED, op,
                 "cache %s is open read-only", c->dir ? c->dir : "(none)");
  return KILN_OK;
}

/* A handle with a usable key, or the error that says why there is none. */
static kiln_status
need_key(const kiln_cache *c, const char *op)
{
  KILN_RETURN_IF(!c->have_key, KILN_ERR_UNSUPPORTED, op, "%s: entries cannot be authenticated",
                 c->key_problem);
  return KILN_OK;
}

static void
zero_counters(struct stats_file *sf, void *arg)
{
  (void)arg;
  memset(&sf->k, 0, sizeof sf->k);
  sf->zeroed_at = (int64_t)time(NULL);
}

kiln_status
kiln_cache_stats_zero(kiln_cache *cache)
{
  static const char op[] = "kiln_cache_stats_zero";
  KILN_TRY(need_writable(cache, op));
  if (stats_update(cache, zero_counters, NULL) != 0)
    return kiln__fail(KILN_ERR_IO, op, errno, "cannot update %s/stats: %s", cache->vdir,
                      strerror(errno));
  pthread_mutex_lock(&cache->lock);
  memset(&cache->session, 0, sizeof cache->session);
  memset(&cache->unsaved, 0, sizeof cache->unsaved);
  pthread_mutex_unlock(&cache->lock);
  return KILN_OK;
}

kiln_status
kiln_cache_recount(kiln_cache *cache, kiln_cache_stats *out)
{
  static const char op[] = "kiln_cache_recount";
  KILN_TRY(need_writable(cache, op));
  int vfd = open_vdir(cache);
  if (vfd < 0)
    return kiln__fail(KILN_ERR_IO, op, errno, "cannot open %s: %s", cache->vdir, strerror(errno));
  int lk = lock_stats(vfd);
  if (lk < 0) {
    int e = errno;
    close(vfd);
    return kiln__fail(KILN_ERR_IO, op, e, "cannot lock %s/stats.lock: %s", cache->vdir,
                      strerror(e));
  }
  struct recs r = {0};
  struct collect_arg a = {.recs = &r};
  int w = walk_vdir(vfd, collect_cb, &a);
  struct exact_arg ex = {.entries = r.n, .bytes = r.total};
  free(r.v);
  kiln_status s = KILN_OK;
  if (w != 0 || a.oom)
    s = kiln__fail(a.oom ? KILN_ERR_HOST_MEMORY : KILN_ERR_IO, op, errno, "cannot walk %s",
                   cache->vdir);
  else if (stats_update_locked(cache, vfd, set_exact, &ex) != 0)
    s = kiln__fail(KILN_ERR_IO, op, errno, "cannot write %s/stats: %s", cache->vdir,
                   strerror(errno));
  close(lk);
  close(vfd);
  if (s == KILN_OK && out)
    fill_stats(cache, out);
  return s;
}

/* ---------------------------------------------------------------- public: entries */

/* An entry descriptor with its strings, built from a file. */
struct desc {
  kiln_cache_entry e;
  char path[4200];
  char problem[128];
  char *strings; /* NUL-terminated copies of the header strings */
};

static const char *const empty = "";

static void
desc_init(struct desc *d, const char *vdir, const char *key, const struct stat *st)
{
  memset(&d->e, 0, sizeof d->e);
  d->strings = NULL;
  memcpy(d->e.key, key, 32);
  d->e.key[32] = 0;
  snprintf(d->path, sizeof d->path, "%s/%.2s/%.30s.kbin", vdir, key, key + 2);
  d->e.path = d->path;
  d->problem[0] = 0;
  d->e.problem = d->problem;
  d->e.platform_name = d->e.platform_version = d->e.device_name = d->e.device_version =
      d->e.driver_version = d->e.kiln_version = d->e.options = d->e.source_name = empty;
  if (st) {
    d->e.file_bytes = (uint64_t)st->st_size;
    d->e.last_used = (int64_t)st->st_mtim.tv_sec;
  }
}

static void
desc_fill(struct desc *d, const struct kiln__dc_header *h)
{
  size_t total = 0;
  for (int i = 0; i < KILN__DC_NSTR; i++)
    total += h->len[i] + 1;
  d->strings = malloc(total);
  const char **dst[KILN__DC_NSTR] = {
      &d->e.platform_name,  &d->e.platform_version, &d->e.device_name, &d->e.device_version,
      &d->e.driver_version, &d->e.kiln_version,     &d->e.options,     &d->e.source_name,
  };
  char *p = d->strings;
  for (int i = 0; i < KILN__DC_NSTR && p; i++) {
    memcpy(p, h->str[i], h->len[i]);
    p[h->len[i]] = 0;
    *dst[i] = p;
    p += h->len[i] + 1;
  }
  d->e.format_version = h->format;
  d->e.vendor_id = h->vendor_id;
  d->e.address_bits = h->address_bits;
  d->e.payload_bytes = h->payload_size;
  d->e.created = h->created;
  to_hex(h->source_hash, 16, d->e.source_hash);
}

/* Reads and judges the entry file sub/name (through sfd); fills d. Returns 0 or -1 when out of memory. */
static int
desc_load(struct desc *d, int sfd, const char *name, uint32_t format, const uint8_t *mac_key,
          int verify)
{
  int fd = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    d->e.state = KILN_CACHE_ENTRY_UNREADABLE;
    snprintf(d->problem, sizeof d->problem, "%s",
             fd < 0 ? (errno == ELOOP ? "symbolic link" : strerror(errno)) : "not a regular file");
    if (fd >= 0)
      close(fd);
    return 0;
  }
  d->e.file_bytes = (uint64_t)st.st_size;
  d->e.last_used = (int64_t)st.st_mtim.tv_sec;
  uint64_t size = (uint64_t)st.st_size;
  /* Listing reads headers only (entries are often megabytes); verifying reads everything. */
  int whole = verify && size <= KILN__DC_MAX_HEADER + KILN__DC_MAX_PAYLOAD + KILN__DC_TRAILER;
  size_t want = whole ? (size_t)size : (size_t)(size < 4096 ? size : 4096);
  uint8_t *buf = malloc(want ? want : 1);
  if (!buf) {
    close(fd);
    return -1;
  }
  int r = read_exact(fd, buf, want);
  if (r == 0 && !whole && want >= 16) {
    uint32_t hs = get_u32(buf + 12);
    if (hs > want && hs <= KILN__DC_MAX_HEADER && hs <= size) {
      uint8_t *nb = realloc(buf, hs);
      if (!nb) {
        free(buf);
        close(fd);
        return -1;
      }
      buf = nb;
      r = read_exact(fd, buf + want, hs - want);
      want = hs;
    }
  }
  close(fd);
  if (r != 0) {
    d->e.state = r == -2 ? KILN_CACHE_ENTRY_CORRUPT : KILN_CACHE_ENTRY_UNREADABLE;
    snprintf(d->problem, sizeof d->problem, "%s", r == -2 ? "truncated while reading" : strerror(errno));
    free(buf);
    return 0;
  }
  struct kiln__dc_header h;
  const char *why = "";
  int full = whole;
  if (kiln__dc_parse(buf, want, size, full, format, mac_key, &h, &why) != 0) {
    d->e.state = KILN_CACHE_ENTRY_CORRUPT;
    snprintf(d->problem, sizeof d->problem, "%s", why);
  } else {
    char hex[33];
    to_hex(h.key, 16, hex);
    if (memcmp(hex, d->e.key, 32) != 0) {
      d->e.state = KILN_CACHE_ENTRY_CORRUPT;
      snprintf(d->problem, sizeof d->problem, "key in the header does not match the file name");
    } else {
      desc_fill(d, &h);
      if (!d->strings) {
        free(buf);
        return -1;
      }
      d->e.checksum_verified = full;
    }
  }
  free(buf);
  return 0;
}

struct foreach_arg {
  kiln_cache *c;
  unsigned flags;
  kiln_cache_entry_fn fn;
  void *user;
  const char *prefix; /* only keys starting with it */
  size_t matches;
  int oom;
};

static int
foreach_cb(int sfd, const char *sub, const char *name, const struct stat *st, enum walk_kind kind,
           void *arg)
{
  struct foreach_arg *a = arg;
  if (kind != W_ENTRY)
    return 0;
  char key[33];
  memcpy(key, sub, 2);
  memcpy(key + 2, name, 30);
  key[32] = 0;
  if (a->prefix && strncmp(key, a->prefix, strlen(a->prefix)) != 0)
    return 0;
  a->matches++;
  if (!a->fn)
    return 0;
  struct desc *d = malloc(sizeof *d);
  if (!d) {
    a->oom = 1;
    return 1;
  }
  desc_init(d, a->c->vdir, key, st);
  if (desc_load(d, sfd, name, a->c->format, kiln__dc_mac_key(a->c),
                (a->flags & KILN_CACHE_VERIFY) != 0) != 0) {
    free(d);
    a->oom = 1;
    return 1;
  }
  int stop = a->fn(&d->e, a->user);
  free(d->strings);
  free(d);
  return stop;
}

static kiln_status
walk_entries(kiln_cache *c, const char *op, struct foreach_arg *a)
{
  int vfd = open_vdir(c);
  if (vfd < 0) {
    if (errno == ENOENT)
      return KILN_OK; /* nothing stored for this format yet */
    return kiln__fail(KILN_ERR_IO, op, errno, "cannot open %s: %s", c->vdir, strerror(errno));
  }
  int w = walk_vdir(vfd, foreach_cb, a);
  int e = errno;
  close(vfd);
  if (a->oom)
    return kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "out of memory while reading entries");
  if (w != 0)
    return kiln__fail(KILN_ERR_IO, op, e, "cannot read %s: %s", c->vdir, strerror(e));
  return KILN_OK;
}

kiln_status
kiln_cache_foreach_entry(kiln_cache *cache, unsigned flags, kiln_cache_entry_fn fn, void *user)
{
  static const char op[] = "kiln_cache_foreach_entry";
  KILN_RETURN_IF(!cache, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(!fn, KILN_ERR_INVALID_ARGUMENT, op, "fn is NULL");
  KILN_RETURN_IF(flags & ~(unsigned)KILN_CACHE_VERIFY, KILN_ERR_INVALID_ARGUMENT, op,
                 "unknown flags 0x%x", flags);
  struct foreach_arg a = {.c = cache, .flags = flags, .fn = fn, .user = user};
  return walk_entries(cache, op, &a);
}

int
kiln_cache_entry_matches_device(const kiln_cache_entry *e, const kiln_device_info *d)
{
  if (!e || !d || e->state != KILN_CACHE_ENTRY_OK)
    return 0;
  return e->vendor_id == d->vendor_id && e->address_bits == d->address_bits &&
         strcmp(e->platform_name, d->platform_name) == 0 &&
         strcmp(e->platform_version, d->platform_version) == 0 &&
         strcmp(e->device_name, d->name) == 0 && strcmp(e->device_version, d->device_version) == 0 &&
         strcmp(e->driver_version, d->driver_version) == 0;
}

static int
valid_key(const char *key)
{
  return key && strlen(key) == 32 && is_hex_n(key, 32);
}

kiln_status
kiln_cache_entry_find(kiln_cache *cache, const char *prefix, kiln_cache_entry_fn fn, void *user)
{
  static const char op[] = "kiln_cache_entry_find";
  KILN_RETURN_IF(!cache, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(!prefix || !fn, KILN_ERR_INVALID_ARGUMENT, op, "NULL %s", prefix ? "fn" : "prefix");
  size_t n = strlen(prefix);
  char low[33];
  KILN_RETURN_IF(n == 0 || n > 32, KILN_ERR_INVALID_ARGUMENT, op,
                 "key prefix must have 1 to 32 hex digits (got %zu)", n);
  for (size_t i = 0; i <= n; i++)
    low[i] = (char)tolower((unsigned char)prefix[i]);
  KILN_RETURN_IF(!is_hex_n(low, n), KILN_ERR_INVALID_ARGUMENT, op, "key prefix \"%s\" is not hex",
                 prefix);
  struct foreach_arg a = {.c = cache, .prefix = low};
  KILN_TRY(walk_entries(cache, op, &a));
  if (a.matches == 0)
    return kiln__fail(KILN_ERR_NOT_FOUND, op, 0, "no entry key starts with %s", low);
  if (a.matches > 1)
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                      "%zu entries have keys starting with %s; give more digits", a.matches, low);
  struct foreach_arg b = {.c = cache, .flags = KILN_CACHE_VERIFY, .fn = fn, .user = user,
                          .prefix = low};
  return walk_entries(cache, op, &b);
}

kiln_status
kiln_cache_entry_remove(kiln_cache *cache, const char *key)
{
  static const char op[] = "kiln_cache_entry_remove";
  KILN_RETURN_IF(!cache, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(!valid_key(key), KILN_ERR_INVALID_ARGUMENT, op,
                 "key must be 32 lowercase hex digits");
  KILN_TRY(need_writable(cache, op));
  int vfd = open_vdir(cache);
  if (vfd < 0)
    return kiln__fail(errno == ENOENT ? KILN_ERR_NOT_FOUND : KILN_ERR_IO, op, errno,
                      "no entry %s (%s)", key, strerror(errno));
  char sub[3], name[ENTRY_NAME_LEN + 1];
  entry_path_parts(key, sub, name);
  int sfd = open_trusted_dir(vfd, sub);
  struct stat st;
  kiln_status s = KILN_OK;
  if (sfd < 0 || fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    s = kiln__fail(KILN_ERR_NOT_FOUND, op, ENOENT, "no entry %s", key);
  } else if (S_ISDIR(st.st_mode) ? unlinkat(sfd, name, AT_REMOVEDIR) != 0
                                 : S_ISREG(st.st_mode) ? unlinkat(sfd, name, 0) != 0
                                                       : (errno = EPERM, 1)) {
    s = kiln__fail(KILN_ERR_IO, op, errno, "cannot remove entry %s: %s", key, strerror(errno));
  } else if (S_ISREG(st.st_mode)) {
    struct store_delta d = {-1, -(int64_t)st.st_size};
    stats_update(cache, apply_delta, &d);
  }
  if (sfd >= 0)
    close(sfd);
  close(vfd);
  return s;
}

kiln_status
kiln_cache_entry_read(kiln_cache *cache, const char *key, void **data, size_t *size)
{
  static const char op[] = "kiln_cache_entry_read";
  KILN_RETURN_IF(!cache, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(!data || !size, KILN_ERR_INVALID_ARGUMENT, op, "NULL %s", data ? "size" : "data");
  KILN_RETURN_IF(!valid_key(key), KILN_ERR_INVALID_ARGUMENT, op,
                 "key must be 32 lowercase hex digits");
  *data = NULL;
  *size = 0;
  KILN_TRY(need_key(cache, op));
  int vfd = open_vdir(cache);
  if (vfd < 0)
    return kiln__fail(errno == ENOENT ? KILN_ERR_NOT_FOUND : KILN_ERR_IO, op, errno,
                      "no entry %s (%s)", key, strerror(errno));
  uint8_t *buf;
  size_t len;
  int absent;
  const char *why = "";
  int fd = read_entry(vfd, key, &buf, &len, &absent, &why);
  close(vfd);
  if (fd < 0)
    return kiln__fail(absent ? KILN_ERR_NOT_FOUND : KILN_ERR_IO, op, absent ? ENOENT : EIO,
                      "entry %s: %s", key, absent ? "not found" : why);
  close(fd);
  struct kiln__dc_header h;
  char hex[33];
  if (kiln__dc_parse(buf, len, len, 1, cache->format, kiln__dc_mac_key(cache), &h, &why) != 0 ||
      (to_hex(h.key, 16, hex), strcmp(hex, key) != 0)) {
    free(buf);
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "entry %s is corrupt: %s", key,
                      strcmp(why, "") ? why : "key does not match the file name");
  }
  *data = buf;
  *size = len;
  return KILN_OK;
}

kiln_status
kiln_cache_entry_write_keyed(kiln_cache *cache, const void *data, size_t size,
                             const uint8_t *mac_key, char *key_out)
{
  static const char op[] = "kiln_cache_entry_write";
  KILN_RETURN_IF(!cache, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(!data, KILN_ERR_INVALID_ARGUMENT, op, "data is NULL");
  KILN_TRY(need_writable(cache, op));
  KILN_TRY(need_key(cache, op));
  struct kiln__dc_header h;
  const char *why = "";
  if (kiln__dc_parse(data, size, size, 1, cache->format, mac_key ? mac_key : cache->mac_key, &h,
                     &why) != 0)
    return kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "not a valid cache entry: %s", why);
  char hex[33];
  to_hex(h.key, 16, hex);
  const uint8_t *bytes = data;
  uint8_t *resealed = NULL;
  if (mac_key && sodium_memcmp(mac_key, cache->mac_key, KILN__DC_KEY_BYTES) != 0) {
    /* Authenticated under the sender's key; from now on this directory's key vouches for it. */
    resealed = malloc(size);
    KILN_RETURN_IF(!resealed, KILN_ERR_HOST_MEMORY, op, "cannot allocate %zu bytes", size);
    memcpy(resealed, data, size);
    kiln__dc_mac_seal(resealed, size, cache->mac_key);
    bytes = resealed;
  }
  int rc = store_bytes(cache, hex, bytes, size);
  int e = errno;
  free(resealed);
  if (rc != 0)
    return kiln__fail(KILN_ERR_IO, op, e, "cannot store entry %s in %s: %s", hex, cache->vdir,
                      strerror(e));
  if (key_out)
    memcpy(key_out, hex, 33);
  return KILN_OK;
}

kiln_status
kiln_cache_entry_write(kiln_cache *cache, const void *data, size_t size, char *key_out)
{
  return kiln_cache_entry_write_keyed(cache, data, size, NULL, key_out);
}

kiln_status
kiln_cache_key_path(kiln_cache *cache, char *buf, size_t len)
{
  static const char op[] = "kiln_cache_key_path";
  KILN_RETURN_IF(!cache, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(!buf, KILN_ERR_INVALID_ARGUMENT, op, "buf is NULL");
  int n = snprintf(buf, len, "%s/" KEY_FILE, cache->dir ? cache->dir : "");
  KILN_RETURN_IF(!cache->dir, KILN_ERR_NOT_FOUND, op, "the cache has no directory");
  KILN_RETURN_IF(n < 0 || (size_t)n >= len, KILN_ERR_INVALID_ARGUMENT, op,
                 "buffer of %zu bytes too small (need %d)", len, n + 1);
  KILN_RETURN_IF(!cache->have_key, KILN_ERR_NOT_FOUND, op, "%s", cache->key_problem);
  return KILN_OK;
}

kiln_status
kiln_cache_key_read(const char *path, uint8_t key[KILN_CACHE_KEY_BYTES])
{
  static const char op[] = "kiln_cache_key_read";
  KILN_RETURN_IF(!path || !key, KILN_ERR_INVALID_ARGUMENT, op, "NULL %s", path ? "key" : "path");
  /* O_NONBLOCK: a FIFO given as the key file must not hang the caller before fstat refuses it. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return kiln__fail(errno == ENOENT ? KILN_ERR_NOT_FOUND : KILN_ERR_IO, op, errno,
                      "cannot open key file %s: %s", path, strerror(errno));
  struct stat st;
  kiln_status s = KILN_OK;
  if (fstat(fd, &st) != 0)
    s = kiln__fail(KILN_ERR_IO, op, errno, "key file %s: %s", path, strerror(errno));
  else if (!S_ISREG(st.st_mode))
    s = kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0, "key file %s is not a regular file", path);
  else if (st.st_size != KILN_CACHE_KEY_BYTES)
    s = kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
                   "key file %s has %lld bytes; a kiln cache key has %d", path,
                   (long long)st.st_size, KILN_CACHE_KEY_BYTES);
  else if (read_exact(fd, key, KILN_CACHE_KEY_BYTES) != 0)
    s = kiln__fail(KILN_ERR_IO, op, errno, "cannot read key file %s", path);
  close(fd);
  return s;
}

/* ---------------------------------------------------------------- public: verify, prune, clear */

struct verify_arg {
  kiln_cache_verify_result *res;
  int fix;
  int vfd;
};

static int
verify_cb(const kiln_cache_entry *e, void *user)
{
  struct verify_arg *a = user;
  a->res->checked++;
  if (e->state == KILN_CACHE_ENTRY_OK)
    return 0;
  a->res->bad++;
  kiln__log(KILN__LOG_DEBUG, "kernel cache: %s: %s", e->path, e->problem);
  if (a->fix) {
    char sub[3], name[ENTRY_NAME_LEN + 1];
    entry_path_parts(e->key, sub, name);
    int sfd = open_trusted_dir(a->vfd, sub);
    struct stat st;
    if (sfd >= 0 && fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        (S_ISREG(st.st_mode) ? unlinkat(sfd, name, 0)
                             : S_ISDIR(st.st_mode) ? unlinkat(sfd, name, AT_REMOVEDIR) : -1) == 0)
      a->res->removed++;
    if (sfd >= 0)
      close(sfd);
  }
  return 0;
}

kiln_status
kiln_cache_verify(kiln_cache *cache, int fix, kiln_cache_verify_result *out)
{
  static const char op[] = "kiln_cache_verify";
  KILN_RETURN_IF(!cache, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  if (fix)
    KILN_TRY(need_writable(cache, op));
  KILN_TRY(need_key(cache, op));
  memset(out, 0, sizeof *out);
  struct verify_arg va = {.res = out, .fix = fix, .vfd = -1};
  if (fix && (va.vfd = open_vdir(cache)) < 0 && errno != ENOENT)
    return kiln__fail(KILN_ERR_IO, op, errno, "cannot open %s: %s", cache->vdir, strerror(errno));
  struct foreach_arg a = {.c = cache, .flags = KILN_CACHE_VERIFY, .fn = verify_cb, .user = &va};
  kiln_status s = walk_entries(cache, op, &a);
  if (va.vfd >= 0)
    close(va.vfd);
  if (s == KILN_OK && out->removed)
    s = kiln_cache_recount(cache, NULL);
  return s;
}

/* An entry-like descriptor for a file of another format version (no header parsing). */
static int
report_plain(kiln_cache_entry_fn fn, void *user, const char *dir, const char *sub,
             const char *name, const struct stat *st)
{
  if (!fn)
    return 0;
  struct desc *d = malloc(sizeof *d);
  if (!d)
    return 0;
  char key[33];
  memcpy(key, sub, 2);
  memcpy(key + 2, name, 30);
  desc_init(d, dir, key, st);
  snprintf(d->path, sizeof d->path, "%s/%s/%s", dir, sub, name);
  int r = fn(&d->e, user);
  free(d);
  return r;
}

struct prune_arg {
  kiln_cache *c;
  const kiln_cache_prune_options *o;
  kiln_cache_prune_result *res;
  const char *dir;
  struct recs keep;   /* entries not selected yet (size criterion decides later) */
  int all;            /* remove every recognised entry (old formats) */
  int oom;
};

static int
prune_cb(int sfd, const char *sub, const char *name, const struct stat *st, enum walk_kind kind,
         void *arg)
{
  struct prune_arg *a = arg;
  const kiln_cache_prune_options *o = a->o;
  if (kind == W_TEMP) {
    if ((o->temp_files || a->all) && temp_is_stale(st)) {
      report_plain(o->on_remove, o->on_remove_user, a->dir, sub, name, st);
      if (o->dry_run || unlinkat(sfd, name, 0) == 0)
        a->res->temp_files++;
    }
    return 0;
  }
  if (!S_ISREG(st->st_mode))
    return 0;
  int go = a->all || (o->older_than_s > 0 && time(NULL) - st->st_mtim.tv_sec > o->older_than_s);
  if (!go && o->select && !a->all) {
    struct desc *d = malloc(sizeof *d);
    char key[33];
    memcpy(key, sub, 2);
    memcpy(key + 2, name, 30);
    key[32] = 0;
    if (!d) {
      a->oom = 1;
      return 1;
    }
    desc_init(d, a->dir, key, st);
    if (desc_load(d, sfd, name, a->c->format, NULL, 0) != 0) {
      free(d);
      a->oom = 1;
      return 1;
    }
    go = o->select(&d->e, o->select_user) != 0;
    if (go && o->on_remove)
      o->on_remove(&d->e, o->on_remove_user);
    free(d->strings);
    free(d);
    if (go) {
      if (o->dry_run || unlinkat(sfd, name, 0) == 0) {
        a->res->entries++;
        a->res->bytes += (uint64_t)st->st_size;
      }
      return 0;
    }
  }
  if (go) {
    report_plain(o->on_remove, o->on_remove_user, a->dir, sub, name, st);
    if (o->dry_run || unlinkat(sfd, name, 0) == 0) {
      a->res->entries++;
      a->res->bytes += (uint64_t)st->st_size;
    }
    return 0;
  }
  if (recs_push(&a->keep, sub, name, st) != 0) {
    a->oom = 1;
    return 1;
  }
  return 0;
}

/* Removes kiln's files under an old format directory, then the emptied directories. */
static void
prune_old_format(kiln_cache *c, int topfd, const char *vname, struct prune_arg *a)
{
  int vfd = openat(topfd, vname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (vfd < 0)
    return;
  char *dir = join(c->dir, vname);
  struct prune_arg old = *a;
  old.dir = dir ? dir : c->dir;
  old.all = 1;
  old.keep = (struct recs){0};
  walk_vdir(vfd, prune_cb, &old);
  free(old.keep.v);
  free(dir);
  if (!a->o->dry_run) {
    static const char *const files[] = {"stats", "stats.lock"};
    for (size_t i = 0; i < 2; i++)
      unlinkat(vfd, files[i], 0);
    for (int n = 0; n < 256; n++) {
      char sub[3];
      snprintf(sub, sizeof sub, "%02x", n);
      unlinkat(vfd, sub, AT_REMOVEDIR);
    }
    unlinkat(topfd, vname, AT_REMOVEDIR);
  }
  close(vfd);
}

kiln_status
kiln_cache_prune(kiln_cache *cache, const kiln_cache_prune_options *opts,
                 kiln_cache_prune_result *out)
{
  static const char op[] = "kiln_cache_prune";
  KILN_RETURN_IF(!cache, KILN_ERR_INVALID_HANDLE, op, "cache is NULL");
  KILN_RETURN_IF(!opts, KILN_ERR_INVALID_ARGUMENT, op, "opts is NULL");
  KILN_RETURN_IF(opts->older_than_s < 0, KILN_ERR_INVALID_ARGUMENT, op,
                 "older_than_s is negative (%lld)", (long long)opts->older_than_s);
  if (!opts->dry_run)
    KILN_TRY(need_writable(cache, op));
  kiln_cache_prune_result res = {0};
  struct prune_arg a = {.c = cache, .o = opts, .res = &res, .dir = cache->vdir};

  if (opts->old_formats) {
    int topfd = open(cache->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = topfd >= 0 ? fdopendir(dup(topfd)) : NULL;
    struct dirent *de;
    while (d && (de = readdir(d))) {
      uint32_t v = version_dir_number(de->d_name);
      if (v && v < cache->format)
        prune_old_format(cache, topfd, de->d_name, &a);
    }
    if (d)
      closedir(d);
    if (topfd >= 0)
      close(topfd);
  }

  int vfd = open_vdir(cache);
  if (vfd < 0) {
    if (out)
      *out = res;
    return errno == ENOENT ? KILN_OK
                           : kiln__fail(KILN_ERR_IO, op, errno, "cannot open %s: %s", cache->vdir,
                                        strerror(errno));
  }
  int lk = opts->dry_run ? -1 : lock_stats(vfd);
  walk_vdir(vfd, prune_cb, &a);
  uint64_t target = opts->max_bytes == KILN_CACHE_KEEP_CAP ? cache->max_bytes : opts->max_bytes;
  if (!a.oom && target && a.keep.total > target) {
    qsort(a.keep.v, a.keep.n, sizeof *a.keep.v, rec_older);
    uint64_t total = a.keep.total;
    for (size_t i = 0; i < a.keep.n && total > target; i++) {
      struct rec *r = &a.keep.v[i];
      char sub[3], name[ENTRY_NAME_LEN + 1];
      entry_path_parts(r->key, sub, name);
      struct stat st = {0};
      st.st_size = (off_t)r->size;
      st.st_mtim.tv_sec = (time_t)(r->mtime_ns / 1000000000);
      report_plain(opts->on_remove, opts->on_remove_user, cache->vdir, sub, name, &st);
      if (opts->dry_run || unlink_entry(vfd, r->key) == 0) {
        total -= r->size;
        res.entries++;
        res.bytes += r->size;
      }
    }
  }
  kiln_status s = a.oom ? kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "out of memory") : KILN_OK;
  if (lk >= 0) {
    close(lk);
    if (s == KILN_OK)
      s = kiln_cache_recount(cache, NULL);
  }
  free(a.keep.v);
  close(vfd);
  if (out)
    *out = res;
  return s;
}

/* Removes recognised files of one format directory; counts them; notes the first failure. */
static void
clear_vdir(int vfd, uint64_t *removed, int *err, char *failed, size_t failed_len, const char *vpath)
{
  DIR *d = fdopendir(dup(vfd));
  if (!d)
    return;
  struct dirent *de;
  while ((de = readdir(d))) {
    const char *n = de->d_name;
    if (is_sub_name(n)) {
      int sfd = openat(vfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      DIR *sd = sfd >= 0 ? fdopendir(sfd) : NULL;
      struct dirent *fe;
      while (sd && (fe = readdir(sd))) {
        if (!is_entry_name(fe->d_name) && !is_temp_name(fe->d_name))
          continue;
        struct stat st;
        if (fstatat(sfd, fe->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
          continue;
        if (unlinkat(sfd, fe->d_name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) == 0) {
          (*removed)++;
        } else if (!*err) {
          *err = errno;
          snprintf(failed, failed_len, "%s/%s/%s", vpath, n, fe->d_name);
        }
      }
      if (sd)
        closedir(sd);
      else if (sfd >= 0)
        close(sfd);
      unlinkat(vfd, n, AT_REMOVEDIR);
    } else if (strcmp(n, "stats") == 0 || strcmp(n, "stats.lock") == 0 ||
               is_stats_temp_name(n)) {
      struct stat st;
      if (fstatat(vfd, n, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
        if (unlinkat(vfd, n, 0) == 0) {
          (*removed)++;
        } else if (!*err) {
          *err = errno;
          snprintf(failed, failed_len, "%s/%s", vpath, n);
        }
      }
    }
  }
  closedir(d);
}

/* CACHEDIR.TAG goes only if it is the one kiln wrote (a user's own tag is not ours). */
static int
remove_own_tag(int topfd)
{
  int fd = openat(topfd, "CACHEDIR.TAG", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return -1;
  char buf[512];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return -1;
  buf[n] = 0;
  if (strncmp(buf, "Signature: 8a477f597d28d172789f06886806bc55", 43) != 0 ||
      !strstr(buf, "created by kiln"))
    return -1;
  return unlinkat(topfd, "CACHEDIR.TAG", 0);
}

kiln_status
kiln_cache_clear(kiln_cache *cache, uint64_t *removed)
{
  static const char op[] = "kiln_cache_clear";
  KILN_TRY(need_writable(cache, op));
  uint64_t n = 0;
  int err = 0;
  char failed[4300] = "";
  int topfd = open(cache->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (topfd < 0)
    return kiln__fail(KILN_ERR_IO, op, errno, "cannot open %s: %s", cache->dir, strerror(errno));
  DIR *d = fdopendir(dup(topfd));
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (!version_dir_number(de->d_name))
      continue;
    int vfd = openat(topfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (vfd < 0)
      continue;
    char *vpath = join(cache->dir, de->d_name);
    clear_vdir(vfd, &n, &err, failed, sizeof failed, vpath ? vpath : cache->dir);
    free(vpath);
    close(vfd);
    /* The current format's directory stays, so open handles keep a valid place to store. */
    if (version_dir_number(de->d_name) != cache->format)
      unlinkat(topfd, de->d_name, AT_REMOVEDIR);
  }
  if (d)
    closedir(d);
  if (remove_own_tag(topfd) == 0)
    n++;
  close(topfd);
  if (removed)
    *removed = n;
  pthread_mutex_lock(&cache->lock);
  memset(&cache->unsaved, 0, sizeof cache->unsaved);
  pthread_mutex_unlock(&cache->lock);
  if (err)
    return kiln__fail(KILN_ERR_IO, op, err, "cannot remove %s: %s", failed, strerror(err));
  return KILN_OK;
}
