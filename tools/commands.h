/* Subcommands of the kiln tool: each gets argv starting at its own name and returns an exit status. */
#ifndef KILN_TOOLS_COMMANDS_H
#define KILN_TOOLS_COMMANDS_H

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

/* Monotonic seconds. */
double tool_now(void);

#endif
