/* Subcommands of the kiln tool: each gets argv starting at its own name and returns an exit status. */
#ifndef KILN_TOOLS_COMMANDS_H
#define KILN_TOOLS_COMMANDS_H

#include <stdint.h>

#include "kiln.h"

struct command {
  const char *name;
  const char *help;
  int (*run)(int argc, char **argv);
};

int cmd_info(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_cache(int argc, char **argv);

/* Nonzero if argv holds --help or -h (after printing usage to stdout). */
int tool_wants_help(int argc, char **argv, const char *usage);

/* Prints "kiln CMD: message" and a pointer to 'kiln CMD --help' on stderr; returns 2. */
int tool_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * argv[*i] as the option `name VALUE` or `name=VALUE`: 1 with *value set (and
 * *i past a separate value), 0 when it is another argument, -1 after a usage
 * error for a missing or empty value.
 */
int tool_opt_value(const char *cmd, int argc, char **argv, int *i, const char *name,
                   const char **value);

/* The largest element count a size argument takes: 2^40 (a 4 TiB f32 tensor). */
#define TOOL_MAX_COUNT ((int64_t)1 << 40)

/*
 * Parses an element count: N, N.Fk, N.FM (powers of 1024; the result must be
 * whole) or 2^N, from min to max. Digits only: no sign, blank, exponent or
 * hex. 0, or -1.
 */
int tool_parse_count(const char *s, int64_t min, int64_t max, int64_t *out);

/* Parses a decimal integer from min (>= 0) to max: digits only. 0, or -1. */
int tool_parse_int(const char *s, long min, long max, long *out);

/* Checks one list item (NUL-terminated) and stores it as item number i; 0, or -1 after
 * printing a usage error. */
typedef int (*tool_item_fn)(const char *item, int i, void *arg);

/*
 * Splits a comma-separated list and calls fn on each item. Returns how many
 * (at least 1), or -1 after a usage error ("kiln CMD: FLAG: ...") for an empty
 * list, an empty item (",", "a,,b", "a,"), more than cap items or a bad item.
 */
int tool_parse_list(const char *cmd, const char *flag, const char *list, int cap, tool_item_fn fn,
                    void *arg);

/* tool_parse_list of counts (tool_parse_count, 1 to TOOL_MAX_COUNT) or dtype names. */
int tool_parse_counts(const char *cmd, const char *flag, const char *list, int64_t *out, int cap);
int tool_parse_dtypes(const char *cmd, const char *flag, const char *list, kiln_dtype *out,
                      int cap);

/* Monotonic seconds. */
double tool_now(void);

#endif
