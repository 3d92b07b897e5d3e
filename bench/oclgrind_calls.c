/*
 * Wall time of a few single calls, each twice (the second with its programs built), for
 * finding what the oclgrind suite's time goes to (docs/testing.md, "The oclgrind suite"):
 * a QR of a 5 x 3 f64 matrix, an add of the same, and softmax over rows of four f32 shapes.
 * Run under the simulator as the suite does, e.g.
 *   KILN_CACHE=off KILN_DEBUG_NO_CLBLAST=1 oclgrind --data-races --build-options \
 *     -cl-opt-disable build/bench/oclgrind_calls
 * with KILN_DEBUG_NN=row_wg=32 for narrower rows, or bench/cltrace.c preloaded for the
 * kernels' times. Not installed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kiln.h"

static double
now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Prints the call's status and wall seconds; a failed call ends the program. */
static void
report(const char *what, int rep, kiln_status s, double t0)
{
  printf("%-20s %d: %.3f s\n", what, rep, now() - t0);
  if (s != KILN_OK) {
    fprintf(stderr, "%s: %s\n", what, kiln_last_error());
    exit(1);
  }
}

int
main(void)
{
  kiln_context *ctx = NULL;
  if (kiln_context_create(NULL, &ctx) != KILN_OK) {
    fprintf(stderr, "no context: %s\n", kiln_last_error());
    return 1;
  }
  double a[15] = {1, 2, 3, 4, 5, 6, 7, 8, 10, 1, 1, 1, 2, 3, 1}, back[15];
  int64_t s53[2] = {5, 3};
  kiln_tensor *t = NULL;
  if (kiln_tensor_from_host(ctx, KILN_F64, 2, s53, a, &t) != KILN_OK) {
    fprintf(stderr, "upload: %s\n", kiln_last_error());
    return 1;
  }
  for (int i = 0; i < 2; i++) {
    double t0 = now();
    kiln_tensor *q = NULL, *r = NULL;
    kiln_status s = kiln_linalg_qr(ctx, t, KILN_QR_REDUCED, &q, &r);
    if (s == KILN_OK)
      s = kiln_tensor_download(r, back, 9 * sizeof *back);
    report("qr f64 5x3", i, s, t0);
    kiln_tensor_release(q);
    kiln_tensor_release(r);
  }
  for (int i = 0; i < 2; i++) {
    double t0 = now();
    kiln_tensor *o = NULL;
    kiln_status s = kiln_binary(ctx, KILN_OP_ADD, t, t, &o);
    if (s == KILN_OK)
      s = kiln_tensor_download(o, back, sizeof back);
    report("add f64 5x3", i, s, t0);
    kiln_tensor_release(o);
  }
  kiln_tensor_release(t);
  static const int64_t shapes[][2] = {{61, 301}, {7, 1000}, {3, 5}, {40, 130}};
  for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
    size_t n = (size_t)(shapes[c][0] * shapes[c][1]);
    float *x = calloc(n, sizeof *x);
    kiln_tensor *tx = NULL;
    if (!x || kiln_tensor_from_host(ctx, KILN_F32, 2, shapes[c], x, &tx) != KILN_OK) {
      fprintf(stderr, "upload: %s\n", kiln_last_error());
      return 1;
    }
    char what[32];
    snprintf(what, sizeof what, "softmax f32 %lldx%lld", (long long)shapes[c][0],
             (long long)shapes[c][1]);
    for (int i = 0; i < 2; i++) {
      double t0 = now();
      kiln_tensor *o = NULL;
      kiln_status s = kiln_softmax(ctx, tx, 1, &o);
      if (s == KILN_OK)
        s = kiln_tensor_download(o, x, n * sizeof *x);
      report(what, i, s, t0);
      kiln_tensor_release(o);
    }
    kiln_tensor_release(tx);
    free(x);
  }
  kiln_context_release(ctx);
  return 0;
}
