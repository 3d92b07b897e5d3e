/*
 * Wall time of kiln_gemm on one shape and transpose, best of 5 calls after a warm-up, each
 * call waited for (kiln_context_finish):
 *   gemm_shapes M N K [f32|f64] [nn|nt|tn|tt]
 * prints the milliseconds and GFLOP/s (2 M N K). Used for docs/blas_fft.md's figures of the
 * CPU GEMM kernel's transposed-B packing; `kiln bench`'s blas cases are square and plain.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln.h"

static double
now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int
main(int argc, char **argv)
{
  if (argc < 4) {
    fprintf(stderr, "usage: %s M N K [f32|f64] [nn|nt|tn|tt]\n", argv[0]);
    return 2;
  }
  int64_t m = atoll(argv[1]), n = atoll(argv[2]), k = atoll(argv[3]);
  kiln_dtype dt = argc > 4 && strcmp(argv[4], "f64") == 0 ? KILN_F64 : KILN_F32;
  const char *tr = argc > 5 ? argv[5] : "nn";
  int ta = tr[0] == 't', tb = tr[0] && tr[1] == 't';
  kiln_context *ctx = NULL;
  kiln_status s = kiln_context_create(NULL, &ctx);
  int64_t as[2] = {ta ? k : m, ta ? m : k}, bs[2] = {tb ? n : k, tb ? k : n};
  kiln_tensor *a = NULL, *b = NULL, *c = NULL;
  if (s == KILN_OK)
    s = kiln_tensor_create(ctx, dt, 2, as, &a);
  if (s == KILN_OK)
    s = kiln_tensor_create(ctx, dt, 2, bs, &b);
  if (s == KILN_OK)
    s = kiln_random_uniform(ctx, a, -1.0, 1.0);
  if (s == KILN_OK)
    s = kiln_random_uniform(ctx, b, -1.0, 1.0);
  kiln_trans ka = ta ? KILN_TRANS : KILN_NO_TRANS, kb = tb ? KILN_TRANS : KILN_NO_TRANS;
  if (s == KILN_OK)
    s = kiln_gemm(ctx, ka, kb, 1.0, a, b, 0.0, &c);
  if (s == KILN_OK)
    s = kiln_context_finish(ctx);
  double best = 1e30;
  for (int r = 0; r < 5 && s == KILN_OK; r++) {
    double t0 = now();
    s = kiln_gemm(ctx, ka, kb, 1.0, a, b, 0.0, &c);
    if (s == KILN_OK)
      s = kiln_context_finish(ctx);
    double t = now() - t0;
    best = t < best ? t : best;
  }
  if (s != KILN_OK) {
    fprintf(stderr, "%s\n", kiln_last_error());
    return 1;
  }
  printf("%s %s m=%lld n=%lld k=%lld: %.3f ms %.1f GFLOP/s\n", kiln_dtype_name(dt), tr,
         (long long)m, (long long)n, (long long)k, best * 1e3,
         2.0 * (double)m * (double)n * (double)k / best * 1e-9);
  kiln_tensor_release(a);
  kiln_tensor_release(b);
  kiln_tensor_release(c);
  kiln_context_release(ctx);
  return 0;
}
