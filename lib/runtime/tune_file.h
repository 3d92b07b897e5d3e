/*
 * The file layer of the autotuner: the tuning file format, its parser and
 * writer, atomic publication, merging and the directory listing. It makes no
 * OpenCL calls (the fuzz target and `kiln cache list --tuning` build it
 * without a device) and knows nothing about the families: it checks that
 * lines are well formed; lib/runtime/tuner.c checks names and value ranges.
 *
 * Layout under the cache directory DIR:
 *   DIR/tuning/<device>--<driver>.txt      one file per device identity
 *   DIR/tuning/<device>--<driver>.txt.lock serialises merges (flock)
 *   DIR/tuning/<...>.txt.tmp.XXXXXX        a write in progress
 *
 * File format (text, at most KILN__TF_MAX_FILE bytes, lines of at most
 * KILN__TF_MAX_LINE bytes):
 *   kiln-tuning v1                         first line that is not blank or a comment
 *   device <device name as the driver gave it>
 *   driver <driver version as the driver gave it>
 *   # comment
 *   v1 <family> <dtype> <bucket> <param>=<value> ... time_ns=<t> default_ns=<t>
 *   v1 <family> <dtype> <bucket> <param>=<value> ... failed=<reason>
 * A header with another version makes the whole file unusable (ignored); any
 * other malformed line is skipped. Tokens: family and parameter names
 * [a-z0-9_]{1,31}, dtype [a-z0-9]{1,7}, bucket [a-z0-9_.^]{1,31}, reason
 * [a-z_]{1,15}, values decimal without sign, at most UINT64_MAX. A result line
 * has at least one parameter and both times; a failure line records a
 * candidate that failed (reason build, launch, wrong, ...) so it is not
 * retried. Results are keyed by (family, dtype, bucket), failures by that
 * plus the parameters; a later line with the same key replaces an earlier one.
 */
#ifndef KILN_RUNTIME_TUNE_FILE_H
#define KILN_RUNTIME_TUNE_FILE_H

#include <stddef.h>
#include <stdint.h>

#define KILN__TF_VERSION 1
#define KILN__TF_MAX_PARAMS 8
#define KILN__TF_NAME_LEN 32   /* family, parameter and bucket tokens, NUL included */
#define KILN__TF_DTYPE_LEN 8
#define KILN__TF_REASON_LEN 16
#define KILN__TF_IDENT_LEN 128 /* header device/driver text, NUL included */
#define KILN__TF_MAX_FILE (1u << 20)
#define KILN__TF_MAX_LINE 1024
#define KILN__TF_MAX_ENTRIES 16384

struct kiln__tf_entry {
  char family[KILN__TF_NAME_LEN];
  char dtype[KILN__TF_DTYPE_LEN];
  char bucket[KILN__TF_NAME_LEN];
  uint32_t nparams;
  char pname[KILN__TF_MAX_PARAMS][KILN__TF_NAME_LEN];
  uint64_t pval[KILN__TF_MAX_PARAMS];
  uint64_t time_ns, default_ns; /* results only */
  char failed[KILN__TF_REASON_LEN]; /* "" for a result */
};

struct kiln__tf_table {
  char device[KILN__TF_IDENT_LEN]; /* header lines; "" when absent */
  char driver[KILN__TF_IDENT_LEN];
  struct kiln__tf_entry *e;
  size_t n, cap;
  size_t skipped; /* lines the last parse refused */
};

void kiln__tf_init(struct kiln__tf_table *t);
void kiln__tf_free(struct kiln__tf_table *t);

enum kiln__tf_status {
  KILN__TF_OK = 0,
  KILN__TF_BAD_HEADER = -1, /* not a tuning file, or another version: ignore it whole */
  KILN__TF_NOMEM = -2,
};

/*
 * Parses len bytes (no terminator needed) and adds the entries to t (which
 * may already hold some: same keys are replaced). Never reads outside
 * [buf, buf + len). Returns a kiln__tf_status.
 */
int kiln__tf_parse(const char *buf, size_t len, struct kiln__tf_table *t);

/* Nonzero when every token of e is well formed (what the parser guarantees). */
int kiln__tf_entry_valid(const struct kiln__tf_entry *e);

/* Nonzero when a and b are the same key (see the header comment). */
int kiln__tf_same_key(const struct kiln__tf_entry *a, const struct kiln__tf_entry *b);

/* Adds e, replacing an entry with the same key. 0, or KILN__TF_NOMEM (also when full). */
int kiln__tf_put(struct kiln__tf_table *t, const struct kiln__tf_entry *e);

/* Value of parameter name in e; 0 when absent, 1 when found. */
int kiln__tf_param(const struct kiln__tf_entry *e, const char *name, uint64_t *value);

/* "name=value name=value" of e's parameters; returns the length snprintf would. */
int kiln__tf_format_params(const struct kiln__tf_entry *e, char *buf, size_t len);

/* The whole file text (malloc'd, *len set), or NULL when out of memory. Entries sorted. */
char *kiln__tf_format(const struct kiln__tf_table *t, size_t *len);

/*
 * Normalises a device name or driver version for a file name: lower case,
 * runs of anything but [a-z0-9.] become one '-', no '-' at either end, at
 * most 80 characters, never empty ("unknown"). For device names PoCL's
 * "pthread-" / "cpu-" prefixes go first, as CLBlast does, so that one CPU
 * keeps its file across PoCL's device-driver renames.
 */
void kiln__tf_normalize(const char *in, int is_device, char *out, size_t len);

/* "<device>--<driver>.txt" from normalised parts. 0, or -1 when it does not fit. */
int kiln__tf_file_name(const char *device_norm, const char *driver_norm, char *out, size_t len);

/*
 * The tuning directory of a cache directory (DIR/tuning) into out. With
 * create, missing directories are made (mode 0700). 0 when it exists, is a
 * real directory owned by this user and not writable by group or others;
 * 1 when it does not exist (and create was 0); -1 with *why set otherwise.
 */
int kiln__tf_dir(const char *cache_dir, int create, char *out, size_t len, const char **why);

/*
 * Reads one of kiln's own tuning files (a symbolic link in its place is
 * refused). 0: parsed into t (t->skipped says how many lines were refused);
 * 1: no such file; -1: unusable (not a regular file, too large, unreadable,
 * wrong header), *why set. t is left empty on 1 and -1. Never blocks on a
 * FIFO or device in the file's place (core/file.h).
 */
int kiln__tf_read(const char *path, struct kiln__tf_table *t, const char **why);

/* kiln__tf_read of a file the caller named (kiln_tune_import): symbolic links are followed. */
int kiln__tf_read_named(const char *path, struct kiln__tf_table *t, const char **why);

/* Writes t to path atomically (temp file, fsync, rename). 0, or an errno value. */
int kiln__tf_write(const char *path, const struct kiln__tf_table *t);

/*
 * Merges updates into the file at path: under an exclusive flock on
 * path.lock, re-reads the file (a malformed one counts as empty and is
 * replaced), replaces or adds each update's entries, writes atomically. The
 * header lines of updates (device, driver) win when not empty. Stale temp
 * files (over an hour old) of the directory are removed. 0, or an errno
 * value: ENOTSUP when the file has another version's header (a newer kiln's
 * file is not overwritten).
 */
int kiln__tf_merge(const char *path, const struct kiln__tf_table *updates);

/*
 * The newest file "<device_norm>--*.txt" in tdir other than exclude_name:
 * its name into out. 0 when found, 1 when none.
 */
int kiln__tf_find_other_driver(const char *tdir, const char *device_norm,
                               const char *exclude_name, char *out, size_t len);

/* Test hook: when set, kiln__tf_write calls it after writing half the temp file. */
extern void (*kiln__tf_test_mid_write)(void);

#endif
