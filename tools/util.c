#include <stdio.h>
#include <stdlib.h>
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

int
tool_parse_count(const char *s, int64_t *out)
{
  char *end;
  if (strncmp(s, "2^", 2) == 0) {
    long e = strtol(s + 2, &end, 10);
    if (*end || e < 0 || e > 40 || end == s + 2)
      return -1;
    *out = (int64_t)1 << e;
    return 0;
  }
  double v = strtod(s, &end);
  double mul = 1;
  if (*end == 'k' || *end == 'K')
    mul = 1024, end++;
  else if (*end == 'm' || *end == 'M')
    mul = 1024 * 1024, end++;
  if (*end || end == s || !(v >= 1) || v * mul > 1e12)
    return -1;
  *out = (int64_t)(v * mul);
  return 0;
}

int
tool_parse_counts(const char *cmd, const char *list, int64_t *out, int cap)
{
  char *copy = strdup(list), *save = NULL;
  int n = 0;
  for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
    if (n == cap || tool_parse_count(t, &out[n]) != 0) {
      fprintf(stderr, "kiln %s: bad size '%s' (N, Nk, NM or 2^N; at most %d)\n", cmd, t, cap);
      free(copy);
      return -1;
    }
    n++;
  }
  free(copy);
  return n;
}

int
tool_parse_dtypes(const char *cmd, const char *list, kiln_dtype *out, int cap)
{
  char *copy = strdup(list), *save = NULL;
  int n = 0;
  for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
    if (n == cap || kiln_dtype_from_name(t, &out[n]) != KILN_OK) {
      fprintf(stderr, "kiln %s: bad dtype '%s' (f32, f64, i32, i64, u8, bool)\n", cmd, t);
      free(copy);
      return -1;
    }
    n++;
  }
  free(copy);
  return n;
}
