#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tools/commands.h"

int
tool_wants_help(int argc, char **argv, const char *usage)
{
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(usage, stdout);
      return 1;
    }
  }
  return 0;
}

double
tool_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
