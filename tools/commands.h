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

/* Parses an element count: N, Nk, NM (powers of 1024) or 2^N, at least 1. 0 or -1. */
int tool_parse_count(const char *s, int64_t *out);

/* Parses a comma-separated list of counts (or dtypes) into out[cap]; returns how many, or
 * -1 after printing "kiln CMD: bad ..." to stderr. */
int tool_parse_counts(const char *cmd, const char *list, int64_t *out, int cap);
int tool_parse_dtypes(const char *cmd, const char *list, kiln_dtype *out, int cap);

/* Monotonic seconds. */
double tool_now(void);

#endif
