/*
 * The on-disk kernel binary cache.
 *
 * Experimental API (docs/stability.md): its shape may change in a minor
 * release, never in a patch release; it has no provider-table slots.
 *
 * Every program kiln compiles is kept as a device binary in a cache
 * directory, one file per key, so a device pays for a compile once rather
 * than once per process. docs/cache.md describes the layout, the entry
 * format, the environment variables and the measured benefit.
 *
 * Two ways in:
 * - Through a context: each context opens the cache when it is created
 *   (KILN_CACHE_DIR, KILN_CACHE, KILN_CACHE_MAX_SIZE, KILN_CACHE_STORE; API
 *   twins are kiln_context_set_cache_dir(), KILN_OPT_CACHE_MODE,
 *   KILN_OPT_CACHE_MAX_BYTES and KILN_OPT_CACHE_STORE). The library never
 *   fails because of its cache: an unusable directory degrades to read-only
 *   or to no cache, with one warning per directory and problem per process.
 * - Through a kiln_cache handle from kiln_cache_open(): inspection and
 *   maintenance (statistics, listing, verification, pruning, clearing,
 *   archiving entries). These calls make no OpenCL calls, so they work on a
 *   machine without any OpenCL platform. Unlike the context path they report
 *   an unusable directory as an error.
 *
 * Environment values: KILN_CACHE_DIR (a directory), KILN_CACHE (on,
 * readonly, off), KILN_CACHE_MAX_SIZE (e.g. 512M, 2G; 0 for no cap),
 * KILN_CACHE_STORE (auto, always). All are ignored in setuid and setgid
 * programs.
 *
 * Trust: each cache directory holds a secret key (DIR/key, 32 random bytes,
 * mode 0600, made on first use), and every entry carries a MAC under it. An
 * entry whose MAC does not verify is never handed to the driver: a forged or
 * foreign binary is a corrupt entry, rebuilt and overwritten. Archives from
 * another directory are imported with that directory's key
 * (kiln_cache_entry_write_keyed). docs/cache.md has the details.
 *
 * A kiln_cache handle is not thread-safe: use it from one thread at a time.
 * Several handles and processes may share a directory at once.
 */
#ifndef KILN_CACHE_H
#define KILN_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/context.h"
#include "kiln/export.h"
#include "kiln/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What a cache may do. Values are stable; KILN_OPT_CACHE_MODE takes them. */
typedef enum kiln_cache_mode {
  KILN_CACHE_OFF = 0,      /**< no lookups, no stores: every program is compiled from source */
  KILN_CACHE_READONLY = 1, /**< hits are served; nothing is written (no stores, no LRU touch, no stats) */
  KILN_CACHE_ON = 2,       /**< hits are served and misses stored (the default) */
} kiln_cache_mode;

/**
 * When a build that missed stores its binary. Values are stable;
 * KILN_OPT_CACHE_STORE takes them.
 */
typedef enum kiln_cache_store_policy {
  /**
   * On every miss, on every platform. On PoCL, where asking for a program's
   * binary compiles every kernel of it again, kiln builds one kernel per
   * program (docs/cache.md, "Program granularity"), so a binary costs one
   * kernel's compile; whole programs there (KILN_DEBUG_ONE_KERNEL=0) are
   * stored only on purpose: by kiln_context_cache_warm(), an import, or the
   * ALWAYS policy.
   */
  KILN_CACHE_STORE_AUTO = 0,
  KILN_CACHE_STORE_ALWAYS = 1, /**< on every miss, whatever the platform */
} kiln_cache_store_policy;

/**
 * The event counters, one row each: X(field, label, is_bytes). All count
 * program builds (one per key per context), not kernel launches:
 * - hits: programs created from a cached binary
 * - misses: lookups that found no usable entry (corrupt and rejected included)
 * - stores: entries written
 * - evictions: entries removed to keep the directory under its size cap
 * - corrupt: entries refused on read: truncated, bad MAC, foreign identity, unreadable
 * - rejected: entries whose binary the driver refused (then rebuilt from source)
 * - uncached: builds that bypassed the cache (mode off, -I in the options, untrusted
 *   device identity)
 * - store_failures: stores not done: disk full, I/O error, or an entry larger than the cap
 * - bytes_read: entry bytes read by hits
 * - bytes_written: entry bytes written by stores
 * The struct, the statistics file and `kiln cache stats` are generated from this list.
 */
#define KILN_CACHE_COUNTERS(X)          \
  X(hits, "hits", 0)                     \
  X(misses, "misses", 0)                 \
  X(stores, "stores", 0)                 \
  X(evictions, "evictions", 0)           \
  X(corrupt, "corrupt", 0)               \
  X(rejected, "rejected", 0)             \
  X(uncached, "uncached", 0)             \
  X(store_failures, "store failures", 0) \
  X(bytes_read, "bytes read", 1)         \
  X(bytes_written, "bytes written", 1)

/** Event counters (KILN_CACHE_COUNTERS). */
typedef struct kiln_cache_counters {
#define KILN_CACHE_COUNTER_FIELD_(field, label, is_bytes) uint64_t field;
  KILN_CACHE_COUNTERS(KILN_CACHE_COUNTER_FIELD_)
#undef KILN_CACHE_COUNTER_FIELD_
} kiln_cache_counters;

/** A snapshot of a cache's state. */
typedef struct kiln_cache_stats {
  kiln_cache_mode requested_mode; /**< the mode asked for (environment or API) */
  kiln_cache_mode mode;           /**< the mode in force: lower than requested when the directory or device forbids more */
  char reason[256];               /**< why mode is lower than requested_mode; "" when it is not */
  char dir[4096];                 /**< the cache directory (absolute); "" when none could be resolved */
  uint64_t max_bytes;             /**< size cap in bytes; 0 means no cap */
  uint64_t entries;               /**< entries on disk, as last tracked or recounted */
  uint64_t bytes;                 /**< bytes of those entries (file lengths), as last tracked or recounted */
  int64_t zeroed_at;              /**< Unix time of the last kiln_cache_stats_zero(), 0 if never */
  kiln_cache_counters session;    /**< this handle or context since it opened the cache (or was zeroed) */
  kiln_cache_counters persistent; /**< every process since the last zero, this handle's unsaved counts included */
} kiln_cache_stats;

/** Opaque handle on a cache directory. */
typedef struct kiln_cache kiln_cache;

/**
 * The directory the library would use when nothing overrides it for a
 * context: KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln when XDG_CACHE_HOME is
 * absolute, else $HOME/.cache/kiln when HOME is absolute, else the password
 * database's home directory + /.cache/kiln. Environment variables are ignored
 * in setuid/setgid processes. Relative KILN_CACHE_DIR values are made
 * absolute against the current directory. Nothing is created.
 *
 * @param buf receives the NUL-terminated path.
 * @param len capacity of buf.
 * @return KILN_OK; KILN_ERR_INVALID_ARGUMENT if buf is NULL or len too small
 *         (the message gives the needed length); KILN_ERR_NOT_FOUND if no
 *         home directory can be determined.
 */
KILN_API kiln_status kiln_cache_default_dir(char *buf, size_t len);

/**
 * Opens a cache directory for inspection and maintenance.
 *
 * @param dir the directory, or NULL for kiln_cache_default_dir().
 * @param mode KILN_CACHE_ON creates the directory (mode 0700, parents too)
 *        and its MAC key when missing and allows every call; KILN_CACHE_READONLY creates and
 *        writes nothing, and calls that would modify the directory return
 *        KILN_ERR_UNSUPPORTED. KILN_CACHE_OFF is not accepted.
 *        The size cap starts as KILN_CACHE_MAX_SIZE or 1 GiB. A missing or
 *        untrusted key file is not an error here: the calls that need the
 *        key (verifying, reading and writing entries) fail with
 *        KILN_ERR_UNSUPPORTED and say why.
 * @param out receives the handle; release it with kiln_cache_close().
 * @return KILN_OK; KILN_ERR_INVALID_ARGUMENT (NULL out, mode OFF or unknown);
 *         KILN_ERR_NOT_FOUND (READONLY and the directory does not exist, or no
 *         default directory); KILN_ERR_IO (the path is not a directory, cannot
 *         be created, is owned by another user or is writable by group or
 *         others; the errno value is in kiln_last_error_code());
 *         KILN_ERR_UNSUPPORTED (kiln was built without xxHash);
 *         KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_cache_open(const char *dir, kiln_cache_mode mode, kiln_cache **out);

/**
 * Saves the handle's unsaved counters to the directory's statistics file
 * (in mode ON) and frees the handle. NULL is accepted and ignored.
 * @return KILN_OK (a failure to save counters is not an error: they are dropped).
 */
KILN_API kiln_status kiln_cache_close(kiln_cache *cache);

/**
 * Sets the size cap of the handle (used by kiln_cache_stats() and by
 * kiln_cache_prune() when its max_bytes is KILN_CACHE_KEEP_CAP).
 * @param max_bytes the cap; 0 means no cap; at most INT64_MAX (the range of
 *        KILN_OPT_CACHE_MAX_BYTES).
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE for NULL; KILN_ERR_INVALID_ARGUMENT
 *         for a cap above INT64_MAX (the cap is unchanged).
 */
KILN_API kiln_status kiln_cache_set_max_bytes(kiln_cache *cache, uint64_t max_bytes);

/**
 * Reads the statistics: the handle's own counters, the persistent counters
 * of the directory and the tracked entry count and size (which can drift
 * when files change behind kiln's back; kiln_cache_recount() makes them exact).
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT for NULL out.
 */
KILN_API kiln_status kiln_cache_stats_get(kiln_cache *cache, kiln_cache_stats *out);

/**
 * Resets the persistent counters (hits, misses, ...) and the handle's
 * session counters to zero. Entries, their count and size are kept.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_UNSUPPORTED for a
 *         READONLY handle; KILN_ERR_IO if the statistics file cannot be
 *         written (errno in kiln_last_error_code()).
 */
KILN_API kiln_status kiln_cache_stats_zero(kiln_cache *cache);

/**
 * Recomputes the entry count and size from the files and stores the exact
 * figures in the statistics file.
 * @param out receives the statistics afterwards; may be NULL.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_UNSUPPORTED for a
 *         READONLY handle; KILN_ERR_IO if the directory cannot be read or
 *         the statistics file cannot be written.
 */
KILN_API kiln_status kiln_cache_recount(kiln_cache *cache, kiln_cache_stats *out);

/** State of one entry as found by kiln_cache_foreach_entry(). */
typedef enum kiln_cache_entry_state {
  KILN_CACHE_ENTRY_OK = 0,      /**< header (and MAC, when verified) are sound */
  KILN_CACHE_ENTRY_CORRUPT = 1, /**< truncated, extended, bad magic, bad MAC (forged, or no usable key), key not matching its file name */
  KILN_CACHE_ENTRY_UNREADABLE = 2, /**< cannot be opened or read (permissions, a directory in its place, I/O error) */
} kiln_cache_entry_state;

/**
 * One entry. Strings are NUL-terminated and owned by kiln, valid only during
 * the callback that receives the entry. For a corrupt or unreadable entry
 * only key, path, file_bytes, last_used, state and problem are meaningful;
 * the strings are "".
 */
typedef struct kiln_cache_entry {
  char key[33];             /**< 32 lowercase hex digits, from the file name */
  const char *path;         /**< absolute path of the entry file */
  kiln_cache_entry_state state;
  const char *problem;      /**< "" when state is OK, else what is wrong */
  int checksum_verified;    /**< nonzero if the whole file was read and its MAC verified under the directory's key */
  uint32_t format_version;
  const char *platform_name;
  const char *platform_version;
  const char *device_name;
  const char *device_version;
  const char *driver_version;
  uint32_t vendor_id;
  uint32_t address_bits;
  const char *kiln_version; /**< the kiln version that wrote the entry */
  const char *options;      /**< the full build options */
  const char *source_name;  /**< the embedded kernel source ("elementwise", "cast", ...), or "text:<label>" */
  char source_hash[33];     /**< XXH3-128 of the compiled source text, hex */
  uint64_t payload_bytes;   /**< size of the device binary */
  uint64_t file_bytes;      /**< size of the entry file */
  int64_t created;          /**< Unix time the entry was written (from its header) */
  int64_t last_used;        /**< Unix time of the file's mtime: written or last hit */
  /** For a program from caller-supplied text (a user kernel, a fused expression): its label,
   *  the caller's name or the expression text; source_name is then "text:" + label. ""
   *  for embedded sources. */
  const char *label;
} kiln_cache_entry;

/** Callback of kiln_cache_foreach_entry(): return 0 to continue, nonzero to stop. */
typedef int (*kiln_cache_entry_fn)(const kiln_cache_entry *entry, void *user);

/** Flags of kiln_cache_foreach_entry(). */
enum {
  /** Read whole files and check their MACs (else only headers are read and sizes checked). */
  KILN_CACHE_VERIFY = 1u << 0,
};

/**
 * Calls fn for every entry of the handle's format version, in no particular
 * order. Files kiln does not recognise as its own are skipped; symbolic
 * links are never followed. Entries written or removed by other processes
 * during the walk may or may not be seen.
 *
 * @param flags 0 or KILN_CACHE_VERIFY.
 * @return KILN_OK (also when fn stopped the walk); KILN_ERR_INVALID_HANDLE;
 *         KILN_ERR_INVALID_ARGUMENT for NULL fn or unknown flags;
 *         KILN_ERR_IO if the directory cannot be read; KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_cache_foreach_entry(kiln_cache *cache, unsigned flags,
                                              kiln_cache_entry_fn fn, void *user);

/**
 * Nonzero if the entry was built for this device: platform name and version,
 * device name and version, driver version, vendor id and address bits all
 * equal, byte for byte. 0 for NULL arguments or a corrupt entry.
 */
KILN_API int kiln_cache_entry_matches_device(const kiln_cache_entry *entry,
                                             const kiln_device_info *device);

/**
 * Finds the one entry whose key starts with prefix (hex digits, at least 1)
 * and reports it like kiln_cache_foreach_entry() with KILN_CACHE_VERIFY does.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (NULL
 *         prefix or fn, prefix empty, longer than 32 or not hex; or more than
 *         one entry matches, the message says how many); KILN_ERR_NOT_FOUND;
 *         KILN_ERR_IO; KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_cache_entry_find(kiln_cache *cache, const char *prefix,
                                           kiln_cache_entry_fn fn, void *user);

/**
 * Removes the entry with this full key.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (key
 *         NULL or not 32 hex digits); KILN_ERR_UNSUPPORTED (READONLY handle);
 *         KILN_ERR_NOT_FOUND; KILN_ERR_IO (errno in kiln_last_error_code();
 *         a non-empty directory in the entry's place is not removed).
 */
KILN_API kiln_status kiln_cache_entry_remove(kiln_cache *cache, const char *key);

/**
 * Reads the complete file of an entry (header, binary and MAC), after
 * checking it (MAC included), e.g. to put it into an archive.
 * @param data receives a buffer owned by the caller (free() it).
 * @param size receives its length.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (NULL
 *         pointers, key not 32 hex digits, or the entry is corrupt or its
 *         MAC does not verify: the message says why); KILN_ERR_NOT_FOUND;
 *         KILN_ERR_IO; KILN_ERR_UNSUPPORTED (the directory has no usable
 *         key); KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_cache_entry_read(kiln_cache *cache, const char *key, void **data,
                                           size_t *size);

/**
 * Checks a complete entry file from kiln_cache_entry_read() (or an archive)
 * and publishes it under its key, replacing any entry there. The format
 * version and key (recomputed from the header) must be valid, and the MAC
 * must verify under this directory's key. The size cap is enforced
 * afterwards, as for any store. Same as kiln_cache_entry_write_keyed() with
 * a NULL mac_key.
 * @param key_out receives the key (33 bytes: hex digits and NUL); may be NULL.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (NULL
 *         data, or bytes that are not a valid entry of this format version:
 *         the message says why; a MAC that does not verify says "MAC
 *         mismatch"); KILN_ERR_UNSUPPORTED (READONLY handle, or the directory
 *         has no usable key); KILN_ERR_IO (cannot write, e.g. disk full;
 *         errno in kiln_last_error_code()); KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_cache_entry_write(kiln_cache *cache, const void *data, size_t size,
                                            char *key_out);

/** Size of a cache directory's MAC key and of a key file. */
#define KILN_CACHE_KEY_BYTES 32

/**
 * kiln_cache_entry_write() for an entry authenticated under another key,
 * e.g. one from an archive that another cache directory exported: the MAC
 * must verify under mac_key (KILN_CACHE_KEY_BYTES bytes, from
 * kiln_cache_key_read() of that directory's key file, copied over a trusted
 * channel; NULL: this directory's key). The entry is published with a MAC
 * under this directory's key. Returns what kiln_cache_entry_write() returns.
 */
KILN_API kiln_status kiln_cache_entry_write_keyed(kiln_cache *cache, const void *data, size_t size,
                                                  const uint8_t *mac_key, char *key_out);

/**
 * The path of the directory's key file (DIR/key), e.g. to copy it to a
 * machine that imports this cache's archives. Keep it secret: whoever has it
 * can make entries this directory trusts.
 * @param buf receives the NUL-terminated path (also when the key is unusable).
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (NULL
 *         buf, or len too small: the message gives the needed length);
 *         KILN_ERR_NOT_FOUND (the directory has no usable key: missing, not a
 *         regular file, not owned by this user, accessible by group or others, or not 32
 *         bytes; the message says which).
 */
KILN_API kiln_status kiln_cache_key_path(kiln_cache *cache, char *buf, size_t len);

/**
 * Reads a key file (a regular file of exactly KILN_CACHE_KEY_BYTES bytes).
 * Opened without blocking, so a FIFO is refused rather than waited on.
 * @return KILN_OK; KILN_ERR_INVALID_ARGUMENT (NULL arguments, not a regular
 *         file, wrong size); KILN_ERR_NOT_FOUND; KILN_ERR_IO.
 */
KILN_API kiln_status kiln_cache_key_read(const char *path, uint8_t key[KILN_CACHE_KEY_BYTES]);

/** Totals of kiln_cache_verify(). */
typedef struct kiln_cache_verify_result {
  uint64_t checked; /**< entries examined */
  uint64_t bad;     /**< corrupt or unreadable entries found */
  uint64_t removed; /**< of those, removed (only with fix) */
} kiln_cache_verify_result;

/**
 * Reads every entry and checks its header and MAC; with fix, removes
 * the bad ones (never removing anything kiln does not recognise as its own).
 * Report individual entries with kiln_cache_foreach_entry(KILN_CACHE_VERIFY).
 * @return KILN_OK (also when bad entries were found: see out);
 *         KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT for NULL out;
 *         KILN_ERR_UNSUPPORTED (fix on a READONLY handle, or the directory
 *         has no usable key to check MACs with: the message says why);
 *         KILN_ERR_IO; KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_cache_verify(kiln_cache *cache, int fix, kiln_cache_verify_result *out);

/** kiln_cache_prune_options.max_bytes value meaning "use the handle's cap". */
#define KILN_CACHE_KEEP_CAP UINT64_MAX

/**
 * What kiln_cache_prune() removes. Zero-initialise, then set what you need:
 * an all-zero struct removes nothing but stale temporary files when
 * temp_files is set.
 */
typedef struct kiln_cache_prune_options {
  /** Remove least-recently-used entries until the rest fit in this many bytes;
      0 = no size target; KILN_CACHE_KEEP_CAP = the handle's cap (no-op when it is 0). */
  uint64_t max_bytes;
  /** Remove entries not used for more than this many seconds (by mtime); 0 = no age limit. */
  int64_t older_than_s;
  /** Remove entries of older cache format versions (other v<N> directories below the current N). */
  int old_formats;
  /** Remove temporary files left by interrupted writers, older than one hour. */
  int temp_files;
  /** Also remove the entries for which this returns nonzero (e.g. entries for absent devices). */
  int (*select)(const kiln_cache_entry *entry, void *user);
  void *select_user;
  /**
   * Called for each entry or temporary file removed (or that would be, with
   * dry_run); may be NULL. Entries removed through select come with their
   * header fields; the others with key, path, file_bytes and last_used only.
   */
  kiln_cache_entry_fn on_remove;
  void *on_remove_user;
  /** Report what would be removed, remove nothing. */
  int dry_run;
} kiln_cache_prune_options;

/** Totals of kiln_cache_prune(). */
typedef struct kiln_cache_prune_result {
  uint64_t entries; /**< entries removed (or that would be) */
  uint64_t bytes;   /**< their bytes */
  uint64_t temp_files; /**< stale temporary files removed (or that would be) */
} kiln_cache_prune_result;

/**
 * Removes entries by the criteria in opts; an entry goes if any criterion
 * selects it. Tracked size and count are exact afterwards (unless dry_run).
 * For entries of old format versions only the path, key, file size and
 * mtime are filled in the descriptor passed to on_remove.
 * @param out totals; may be NULL.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (NULL
 *         opts, negative older_than_s); KILN_ERR_UNSUPPORTED (READONLY
 *         handle, unless dry_run); KILN_ERR_IO; KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_cache_prune(kiln_cache *cache, const kiln_cache_prune_options *opts,
                                      kiln_cache_prune_result *out);

/**
 * Removes everything kiln owns in the directory: entries and temporary files
 * of every format version, statistics, lock files and empty kiln
 * subdirectories. Files kiln does not recognise stay, and so do the
 * directories that hold them. The directory itself stays.
 * @param removed receives the number of files removed; may be NULL.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_UNSUPPORTED (READONLY
 *         handle); KILN_ERR_IO (some file could not be removed: the message
 *         names it, the rest were removed).
 */
KILN_API kiln_status kiln_cache_clear(kiln_cache *cache, uint64_t *removed);

/**
 * The context's cache statistics: its session counters, the directory's
 * persistent ones, and mode/reason as they apply to the context's device
 * (e.g. mode OFF with a reason when the driver version is unknown).
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT for NULL out.
 */
KILN_API kiln_status kiln_context_cache_stats(kiln_context *ctx, kiln_cache_stats *out);

/**
 * Points the context's cache at another directory (NULL: the default
 * resolution, environment included). Programs already built stay in memory.
 * The mode and size cap carry over. An unusable directory is not an error:
 * the cache degrades as described at the top of this file and
 * kiln_context_cache_stats() says so.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_context_set_cache_dir(kiln_context *ctx, const char *dir);

/**
 * Progress of kiln_context_cache_warm(), called after each variant with the
 * number done so far, the total, the variant's source name and build options
 * and its status. Return 0 to continue, nonzero to stop.
 */
typedef int (*kiln_cache_warm_fn)(size_t done, size_t total, const char *source,
                                  const char *options, kiln_status status, void *user);

/** Totals of kiln_context_cache_warm(). */
typedef struct kiln_cache_warm_result {
  size_t variants; /**< variants for this device (every embedded source x every dtype it supports) */
  size_t done;     /**< variants processed before the end or a stop */
  size_t cached;   /**< of those, already on disk */
  size_t built;    /**< of those, compiled now */
  size_t stored;   /**< of those, written to disk now */
  size_t failed;   /**< of those, failed to compile (reported to progress with KILN_ERR_BUILD) */
} kiln_cache_warm_result;

/**
 * Builds every built-in kernel variant for the context's device (every
 * embedded source x every dtype the device supports), with the same build
 * options the operations use, and stores each in the disk cache, whatever
 * the store policy (so also on PoCL).
 * Variants already on disk are only checked. Programs stay in the context,
 * so later operations start at once. With the cache OFF or READONLY, or for
 * an untrusted device identity, variants are built into memory only.
 * Holds the context's lock while each variant builds.
 * @param progress may be NULL.
 * @param out totals; may be NULL.
 * @return KILN_OK (also when progress stopped the walk); KILN_ERR_INVALID_HANDLE;
 *         KILN_ERR_BUILD when some variants failed to compile (the others
 *         were still built; the message names the first, out counts them);
 *         KILN_ERR_OPENCL, KILN_ERR_DEVICE_MEMORY, KILN_ERR_HOST_MEMORY stop
 *         the walk at once (out says how far it got).
 */
KILN_API kiln_status kiln_context_cache_warm(kiln_context *ctx, kiln_cache_warm_fn progress,
                                             void *user, kiln_cache_warm_result *out);

#ifdef __cplusplus
}
#endif
#endif
