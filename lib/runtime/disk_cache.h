/*
 * The file layer of the kernel cache: directory resolution and trust checks,
 * the entry format, lookups, atomic publication, the size cap, statistics
 * and maintenance. It makes no OpenCL calls, so the `kiln cache` tool can use
 * it (through include/kiln/cache.h) on a machine without an OpenCL platform;
 * lib/runtime/build.c is the layer that turns entries into cl_programs.
 *
 * Layout under the cache directory DIR:
 *   DIR/CACHEDIR.TAG                 tells backup tools to skip the directory
 *   DIR/key                          the per-user MAC key: 32 random bytes, mode 0600
 *   DIR/v<F>/                        everything of cache format version F
 *   DIR/v<F>/ab/<30 hex>.kbin        one entry per key (key = ab + the 30 digits)
 *   DIR/v<F>/ab/<30 hex>.kbin.tmp.X  a write in progress (X: 6 random characters)
 *   DIR/v<F>/stats, stats.lock       persistent counters and the lock serialising their updates
 *
 * Entry file (little-endian):
 *    0  "KILNKBIN"                   magic
 *    8  u32 format version
 *   12  u32 header size H (offset of the payload)
 *   16  u32 flags                    0 (entries with other flags are refused)
 *   20  u32 vendor id
 *   24  u32 address bits
 *   28  u32 string count (8)
 *   32  u64 payload size P
 *   40  i64 created (Unix seconds)
 *   48  16-byte key
 *   64  16-byte XXH3-128 of the source text
 *   80  8 strings, each u32 length + bytes (no NUL): platform name, platform
 *       version, device name, device version, driver version, kiln version,
 *       build options, source name
 *    H  payload (the device binary), P bytes
 *  H+P  32-byte MAC: keyed BLAKE2b-256 of bytes [0, H+P) under DIR/key
 */
#ifndef KILN_RUNTIME_DISK_CACHE_H
#define KILN_RUNTIME_DISK_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/cache.h"

#define KILN__DC_FORMAT 2u
#define KILN__DC_FIXED 80u           /* bytes before the strings */
#define KILN__DC_TRAILER 32u         /* MAC */
#define KILN__DC_KEY_BYTES 32u       /* the MAC key (KILN_CACHE_KEY_BYTES) */
#define KILN__DC_MAX_HEADER (1u << 20)
#define KILN__DC_MAX_STRING 65535u
#define KILN__DC_MAX_PAYLOAD (1ull << 30)
#define KILN__DC_DEFAULT_MAX_BYTES (1ull << 30)

enum kiln__dc_str {
  KILN__DC_PLATFORM_NAME,
  KILN__DC_PLATFORM_VERSION,
  KILN__DC_DEVICE_NAME,
  KILN__DC_DEVICE_VERSION,
  KILN__DC_DRIVER_VERSION,
  KILN__DC_KILN_VERSION,
  KILN__DC_OPTIONS,
  KILN__DC_SOURCE_NAME,
  KILN__DC_NSTR
};

/* Who a binary is for. Strings must not be NULL (use ""). */
struct kiln__dc_ident {
  const char *platform_name;
  const char *platform_version;
  const char *device_name;
  const char *device_version;
  const char *driver_version;
  uint32_t vendor_id;
  uint32_t address_bits;
};

/* A prepared lookup/store request: the strings are borrowed, the hashes computed once. */
struct kiln__dc_req {
  const char *str[KILN__DC_NSTR];
  uint32_t vendor_id;
  uint32_t address_bits;
  uint32_t format;
  uint8_t source_hash[16];
  uint8_t key[16];
  char key_hex[33];
};

/* A parsed header; strings point into the parsed buffer and are not NUL-terminated. */
struct kiln__dc_header {
  uint32_t format;
  uint32_t header_size;
  uint32_t flags;
  uint32_t vendor_id;
  uint32_t address_bits;
  uint64_t payload_size;
  int64_t created;
  uint8_t key[16];
  uint8_t source_hash[16];
  const char *str[KILN__DC_NSTR];
  uint32_t len[KILN__DC_NSTR];
  const uint8_t *payload; /* NULL when only the header was parsed */
};

/* Fills r from an identity, the source text and the options, for the current format version. */
void kiln__dc_req_init(struct kiln__dc_req *r, const struct kiln__dc_ident *id,
                       const char *source_name, const void *text, size_t text_len,
                       const char *options);

/* Recomputes r->key and r->key_hex from r's other fields (after editing them). */
void kiln__dc_req_rekey(struct kiln__dc_req *r);

/*
 * Serialises an entry with its MAC under mac_key (KILN__DC_KEY_BYTES):
 * *out (malloc'd, caller frees) and its length, or 0 when out of memory, the
 * payload is empty, mac_key is NULL or a field exceeds the format's limits.
 */
size_t kiln__dc_serialize(const struct kiln__dc_req *r, const void *payload, size_t payload_len,
                          int64_t created, const uint8_t *mac_key, uint8_t **out);

/*
 * Parses an entry. With full, buf must be the whole file (len == file size)
 * and its MAC is verified under mac_key (NULL: refused, nothing can vouch
 * for the payload); otherwise buf holds at least the header, file_size is
 * the file's length, against which the sizes are checked, and mac_key is
 * unused. The MAC is checked last, so every structural check runs on any
 * input. Returns 0, or -1 with *why set to a static description. Never
 * reads outside [buf, buf + len).
 */
int kiln__dc_parse(const uint8_t *buf, size_t len, uint64_t file_size, int full, uint32_t format,
                   const uint8_t *mac_key, struct kiln__dc_header *h, const char **why);

/* Writes the MAC under mac_key of the entry buf[0, len) (trailer included) into its trailer. */
void kiln__dc_mac_seal(uint8_t *buf, size_t len, const uint8_t *mac_key);

/* The MAC key of the cache directory; NULL when it has no usable one (then nothing is trusted). */
const uint8_t *kiln__dc_mac_key(const kiln_cache *c);

/* The current format version, and a test hook to change it (tests only, not thread-safe). */
uint32_t kiln__dc_format(void);
void kiln__dc_set_format(uint32_t format);

/* Lookup results. */
enum kiln__dc_found {
  KILN__DC_MISS,    /* nothing there */
  KILN__DC_HIT,     /* a sound entry: payload returned */
  KILN__DC_BAD,     /* something unusable was there (corrupt, foreign identity, unreadable) */
};

/* Lookup flags. */
enum {
  KILN__DC_NOCOUNT = 1u,   /* leave the counters alone (warm-up probes) */
  KILN__DC_DEFER_HIT = 2u, /* count a hit only when the caller confirms it with kiln__dc_note_hit */
};

/*
 * Looks r up. On KILN__DC_HIT, *buf is the malloc'd file (caller frees) and
 * *payload and *payload_len point into it. Counts a hit (unless deferred),
 * or a miss (and a corrupt entry for BAD). Touches the entry's mtime on a hit in mode ON.
 * c may be NULL or in mode OFF (then always MISS, nothing counted).
 */
enum kiln__dc_found kiln__dc_lookup(kiln_cache *c, const struct kiln__dc_req *r, unsigned flags,
                                    void **buf, const void **payload, size_t *payload_len);

/*
 * Publishes an entry for r and enforces the size cap. Returns 0 on success,
 * -1 when nothing was stored (mode not ON, empty payload, disk full, I/O
 * error, entry over the cap); never fails the caller's work. Counts a store
 * or a store failure.
 */
int kiln__dc_store(kiln_cache *c, const struct kiln__dc_req *r, const void *payload, size_t len);

/* A deferred hit that the driver accepted (entry_bytes: the whole entry file). */
void kiln__dc_note_hit(kiln_cache *c, size_t entry_bytes);

/* A deferred hit whose binary the driver refused: a miss and a rejection. */
void kiln__dc_note_rejected(kiln_cache *c);

/* A build that bypassed the cache. */
void kiln__dc_note_uncached(kiln_cache *c);

/* A store that could not even be attempted (the driver gave no binary). */
void kiln__dc_note_store_failure(kiln_cache *c);

/*
 * Opens the cache the way a context does: never fails (NULL only when out of
 * memory, which callers treat as mode OFF). dir NULL means the default
 * resolution. An unusable directory degrades the mode with one warning per
 * directory and problem per process.
 */
kiln_cache *kiln__dc_open_degrading(const char *dir, kiln_cache_mode mode, uint64_t max_bytes);

/* Reopens with another mode (dir kept, session counters carried over); old is closed. */
kiln_cache *kiln__dc_reopen(kiln_cache *old, const char *dir, int keep_dir, kiln_cache_mode mode);

kiln_cache_mode kiln__dc_mode(const kiln_cache *c);
kiln_cache_mode kiln__dc_requested_mode(const kiln_cache *c);

/* When builds store binaries (kiln_cache_store_policy); kept with the handle across reopens. */
kiln_cache_store_policy kiln__dc_store_policy(const kiln_cache *c);
void kiln__dc_set_store_policy(kiln_cache *c, kiln_cache_store_policy policy);

/* The policy from KILN_CACHE_STORE (auto, always; default auto). */
kiln_cache_store_policy kiln__dc_env_store_policy(void);
uint64_t kiln__dc_max_bytes(const kiln_cache *c);
const char *kiln__dc_requested_dir(const kiln_cache *c); /* NULL: default resolution */
/* The resolved absolute directory; NULL when none (no home, or kiln built without xxHash). */
const char *kiln__dc_dir(const kiln_cache *c);

/* The requested mode from KILN_CACHE (on, readonly, off; default on). */
kiln_cache_mode kiln__dc_env_mode(void);

/* The size cap from KILN_CACHE_MAX_SIZE (default 1 GiB; 0 means no cap). */
uint64_t kiln__dc_env_max_bytes(void);

/*
 * Parses a size: digits with an optional K, M, G or T suffix (powers of
 * 1024, case-insensitive, optionally followed by "iB" or "B"). Returns 0 or -1.
 */
int kiln__dc_parse_size(const char *s, uint64_t *out);

/* Warnings the cache has printed (or would have, below the log threshold) in this process. */
uint64_t kiln__dc_warnings(void);

#endif
