/*
 * The host memory-bandwidth limit for the peers report: STREAM-like copy,
 * scale, add and triad over N elements with OpenMP, best of several runs.
 * Prints one JSON object. Bytes count reads plus writes, as kiln bench does.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double
now(void)
{
  return omp_get_wtime();
}

#define RUN(name, bytes_per_elem, body)                                     \
  do {                                                                      \
    double best = 1e30;                                                     \
    for (int r = 0; r < reps; r++) {                                        \
      double t0 = now();                                                    \
      _Pragma("omp parallel for schedule(static)") for (long i = 0; i < n; i++) body; \
      double t = now() - t0;                                                \
      if (t < best)                                                         \
        best = t;                                                           \
    }                                                                       \
    printf("%s\"%s\": %.3f", first ? "" : ", ", name,                       \
           (double)(bytes_per_elem) * (double)n / best * 1e-9);             \
    first = 0;                                                              \
  } while (0)

int
main(int argc, char **argv)
{
  long n = argc > 1 ? atol(argv[1]) : (1L << 26);
  int reps = argc > 2 ? atoi(argv[2]) : 10;
  float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b),
        *c = malloc((size_t)n * sizeof *c);
  if (!a || !b || !c || n <= 0 || reps <= 0) {
    fprintf(stderr, "usage: stream_omp [N] [REPS]\n");
    return 2;
  }
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i++) {
    a[i] = 1.0f;
    b[i] = 2.0f;
    c[i] = 0.0f;
  }
  int first = 1;
  printf("{\"n\": %ld, \"threads\": %d, \"gbps\": {", n, omp_get_max_threads());
  RUN("copy", 8, c[i] = a[i]);
  RUN("scale", 8, b[i] = 3.0f * c[i]);
  RUN("add", 12, c[i] = a[i] + b[i]);
  RUN("triad", 12, a[i] = b[i] + 3.0f * c[i]);
  printf("}}\n");
  free(a);
  free(b);
  free(c);
  return 0;
}
