/* kiln: command-line tool. Subcommands live in tools/cmd_*.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kiln.h"
#include "tools/commands.h"

static const struct command commands[] = {
    {"info", "list OpenCL platforms and devices, and the one kiln would pick", cmd_info},
    {"demo", "run a small pipeline of ops on the default device and check it against the host",
     cmd_demo},
    {"bench", "time operations against the device's copy bandwidth; dispatch and startup costs",
     cmd_bench},
    {"tune", "find and store the fastest launch parameters of kiln's kernels on this device",
     cmd_tune},
    {"cache", "inspect and manage the disk kernel cache: stats, list, verify, prune, warm, ...",
     cmd_cache},
};

static void
usage(FILE *f)
{
  fprintf(f, "usage: kiln <command> [options]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
  fprintf(f, "\n'kiln <command> --help' describes a command. Exit status: 0 ok, 1 problems "
             "found or an operation failed, 2 usage error.\n");
}

static int
run(int argc, char **argv)
{
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("kiln %s\n", kiln_version());
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(argv[1], commands[i].name) == 0)
      return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "kiln: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}

int
main(int argc, char **argv)
{
  int rc = run(argc, argv);
  /* Output lost to a full disk or a closed pipe (kiln bench --json > results.json) is a
   * failure, not a silent success with a truncated file. */
  errno = 0;
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "kiln: cannot write the output: %s\n", errno ? strerror(errno) : "error");
    if (rc == 0)
      rc = 1;
  }
  return rc;
}
