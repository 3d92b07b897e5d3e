/*
 * Shared by the `kiln cache` subcommands: tools/cmd_cache.c (dispatch,
 * stats, list, show), tools/cache_maint.c (verify, prune, clear, warm) and
 * tools/cache_archive.c (export, import). docs/cli.md documents the
 * commands, their JSON fields and exit codes.
 *
 * Everything here goes through include/kiln/cache.h, so the commands that
 * only read or manage files make no OpenCL calls; only warm, show (device
 * match), prune --stale and import without --all list devices.
 */
#ifndef KILN_TOOLS_CACHE_CLI_H
#define KILN_TOOLS_CACHE_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kiln.h"
#include "tools/json.h"

/* Exit statuses of every kiln command. */
enum { EXIT_OK = 0, EXIT_PROBLEM = 1, EXIT_USAGE = 2 };

/* What SIZE (units_parse_size, at least 1 byte) and AGE (units_parse_age, positive) take,
   for usage errors. */
#define SIZE_RANGE                                                                        \
  "a number of bytes from 1 to 16 EiB, fractions allowed, with an optional K, M, G or T " \
  "suffix: 65536, 512K, 1.5G"
#define AGE_RANGE "1 second to 100 years as <integer><unit> parts, unit s, m, h, d or w: 7d, 1d12h"

/* One invocation of a cache subcommand. */
struct cache_cli {
  const char *name;    /* the subcommand, for messages */
  const char *usage;   /* its --help text */
  const char *dir_arg; /* --dir as given; NULL for the library's default */
  int json;            /* --json */
  char dir[4096];      /* the directory (absolute), after cli_resolve_dir */
  int exists;          /* the directory exists */
};

void cli_init(struct cache_cli *c, const char *name, const char *usage);

/* Prints "kiln cache NAME: message" and a pointer to --help on stderr; returns EXIT_USAGE. */
int cli_usage_error(const struct cache_cli *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints "kiln cache NAME: message" on stderr; returns EXIT_PROBLEM. */
int cli_fail(const struct cache_cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* cli_fail with kiln_last_error() as the cause. */
int cli_fail_kiln(const struct cache_cli *c);

/*
 * Option matching. argv[*i] is the argument being looked at.
 * cli_opt_value: 1 if it is `name VALUE` or `name=VALUE` (*value set, *i
 * advanced past a separate value), 0 if it is another argument, -1 if the
 * value is missing or empty (usage error printed).
 */
int cli_opt_value(const struct cache_cli *c, int argc, char **argv, int *i, const char *name,
                  const char **value);

/* --dir DIR and --json: 1 consumed, 0 not one of them, -1 usage error printed. */
int cli_common_opt(struct cache_cli *c, int argc, char **argv, int *i);

/* The usual end of an option loop: an unknown option or a stray argument. Returns EXIT_USAGE. */
int cli_unexpected(const struct cache_cli *c, const char *arg);

/* Sets c->dir (the --dir value or the library's default, made absolute) and c->exists.
   Returns EXIT_OK or EXIT_PROBLEM (message printed). */
int cli_resolve_dir(struct cache_cli *c);

/* kiln_cache_open on c->dir; EXIT_OK or EXIT_PROBLEM (message printed). */
int cli_open(const struct cache_cli *c, kiln_cache_mode mode, kiln_cache **out);

/* ---- entries collected from kiln_cache_foreach_entry (strings owned) */

struct entry_list {
  kiln_cache_entry *v;
  size_t n, cap;
  int oom;
};

/* A kiln_cache_entry_fn that appends a copy of the entry to the entry_list in user. */
int entry_list_add(const kiln_cache_entry *e, void *user);
void entry_list_free(struct entry_list *l);
/* Frees the strings of one entry copied by entry_list_add. */
void entry_free_strings(kiln_cache_entry *e);
/* The entry with this full key, or NULL (l must be sorted by key_cmp). */
const kiln_cache_entry *entry_list_find(const struct entry_list *l, const char *key);
int entry_cmp_key(const void *a, const void *b);

/* Collects every entry of the cache (flags as kiln_cache_foreach_entry), sorted by key.
   EXIT_OK or EXIT_PROBLEM (message printed). */
int cli_collect(const struct cache_cli *c, kiln_cache *cache, unsigned flags,
                struct entry_list *out);

const char *entry_state_name(kiln_cache_entry_state s);

/* The entry as a JSON object (fields documented in docs/cli.md). */
void json_entry(struct json *j, const char *key, const kiln_cache_entry *e);

/* Case-insensitive substring test (an empty needle matches). */
int contains_nocase(const char *haystack, const char *needle);

/* ---- devices (OpenCL: only for the commands that need them) */

/* Every device present; *n may be 0. EXIT_OK or EXIT_PROBLEM (message printed). */
int cli_devices(const struct cache_cli *c, kiln_device_info **infos, size_t *n);

/* Index of the first device the entry was built for, or -1. */
int entry_device_match(const kiln_cache_entry *e, const kiln_device_info *infos, size_t n);

/* ---- human output */

/*
 * Text that came out of a cache entry (an imported archive controls it) for a
 * terminal: control characters (C0, DEL, and C1 as UTF-8) become \xNN and a
 * backslash \\, so no escape sequence reaches the terminal. JSON output
 * needs none of this: json.c escapes per JSON.
 * text_escape: a malloc'd copy, NULL when out of memory; text_put: to f.
 */
char *text_escape(const char *s);
void text_put(FILE *f, const char *s);

/* A text table: add cells row by row, then print with every column as wide as its widest cell. */
struct table {
  int ncols;
  unsigned right_align; /* bit i: column i is right-aligned */
  char **cells;         /* row-major, header row first */
  size_t nrows, cap;
};

void table_init(struct table *t, int ncols, unsigned right_align, const char *const *header);
void table_row(struct table *t, const char *const *cells);
/* Prints with `indent` leading spaces; the last column is not padded. */
void table_print(const struct table *t, FILE *f, int indent);
void table_free(struct table *t);

/* ---- subcommands (argv starts at the subcommand's name) */

int cache_stats(int argc, char **argv);
int cache_list(int argc, char **argv);
int cache_show(int argc, char **argv);
int cache_verify(int argc, char **argv);
int cache_prune(int argc, char **argv);
int cache_clear(int argc, char **argv);
int cache_warm(int argc, char **argv);
int cache_export(int argc, char **argv);
int cache_import(int argc, char **argv);

/* ---- the autotuner's files under DIR/tuning (tools/cache_tuning.c, include/kiln/tune.h) */

struct tuning_summary {
  int present;        /* DIR/tuning exists */
  uint64_t files;     /* tuning files (device identities) */
  uint64_t bytes;     /* their size */
  uint64_t results;   /* tuned keys */
  uint64_t failures;  /* failed-candidate records */
  uint64_t unusable;  /* files ignored: wrong version, too large, unreadable */
  uint64_t bad_lines; /* malformed lines skipped */
  char error[512];    /* why the directory could not be read; "" when it could */
};

/* Counts the tuning files and entries; EXIT_OK or EXIT_PROBLEM (message printed). */
int tuning_summary(const struct cache_cli *c, struct tuning_summary *out);

/* Prints (or, with j, writes as JSON) one row per tuning entry, optionally only those whose
   device contains `device`; EXIT_OK or EXIT_PROBLEM (message printed). */
int tuning_list(const struct cache_cli *c, const char *device, struct json *j);

#endif
