/*
 * First-call costs for docs/blas_fft.md, one process per measurement (run by
 * bench/blas_fft_compare.py with cold and warm cache directories):
 *
 *   first_call fft clfft|vkfft N f32|f64
 *     times kiln_fft_plan_create (c2c, 1-D, N points, batch 1), the first
 *     execution (PoCL compiles per work-group size on first launch), and a
 *     second plan_create in the same process (a plan-cache hit).
 *   first_call blas f32|f64
 *     times the first call of each CLBlast routine kiln uses (GEMM 256^3, a
 *     second GEMM, strided-batched GEMM, GEMV, SYRK, dot, axpy, scal) and
 *     kiln_blas_warm(USED) afterwards (nothing left to compile: ~0).
 *
 * Prints one line of JSON. Uses only the public API.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln.h"

static double
now_ms(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int
fail(const char *what)
{
  fprintf(stderr, "first_call: %s: %s\n", what, kiln_last_error());
  return 1;
}

static int
run_fft(kiln_context *ctx, const char *backend, int64_t n, kiln_dtype dt)
{
  kiln_fft_backend be =
      strcmp(backend, "clfft") == 0 ? KILN_FFT_BACKEND_CLFFT : KILN_FFT_BACKEND_VKFFT;
  kiln_fft_plan *p = NULL, *p2 = NULL;
  double t0 = now_ms();
  if (kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &n, 1, dt, 0, be, &p) != KILN_OK)
    return fail("plan_create");
  double t1 = now_ms();
  int64_t shape[2] = {n, 2};
  kiln_tensor *x = NULL, *y = NULL;
  if (kiln_tensor_zeros(ctx, dt, 2, shape, &x) != KILN_OK)
    return fail("tensor");
  double t2 = now_ms();
  if (kiln_fft_execute(p, KILN_FFT_FORWARD, KILN_FFT_NORM_BACKWARD, x, &y) != KILN_OK ||
      kiln_context_finish(ctx) != KILN_OK)
    return fail("execute");
  double t3 = now_ms();
  if (kiln_fft_execute(p, KILN_FFT_FORWARD, KILN_FFT_NORM_BACKWARD, x, &y) != KILN_OK ||
      kiln_context_finish(ctx) != KILN_OK)
    return fail("execute");
  double t4 = now_ms();
  if (kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &n, 1, dt, 0, be, &p2) != KILN_OK)
    return fail("plan_create (again)");
  double t5 = now_ms();
  kiln_fft_stats st;
  kiln_fft_stats_get(ctx, &st);
  printf("{\"what\": \"fft\", \"backend\": \"%s\", \"n\": %lld, \"dtype\": \"%s\", "
         "\"plan_create_ms\": %.2f, \"first_execute_ms\": %.2f, \"second_execute_ms\": %.3f, "
         "\"cached_plan_create_ms\": %.4f, \"vkfft_binary_hits\": %llu, "
         "\"vkfft_binary_stores\": %llu}\n",
         backend, (long long)n, kiln_dtype_name(dt), t1 - t0, t3 - t2, t4 - t3, t5 - t4,
         (unsigned long long)st.vkfft_binary_hits, (unsigned long long)st.vkfft_binary_stores);
  kiln_tensor_release(x);
  kiln_tensor_release(y);
  kiln_fft_plan_release(p);
  kiln_fft_plan_release(p2);
  return 0;
}

/* Times one call (enqueue + finish); -1 on failure. */
#define TIMED(expr) \
  (t0 = now_ms(), ((expr) == KILN_OK && kiln_context_finish(ctx) == KILN_OK) ? now_ms() - t0 : -1)

static int
run_blas(kiln_context *ctx, kiln_dtype dt)
{
  /* Every size is above the small-kernel threshold: each first call is CLBlast's compile. */
  int64_t sq[2] = {256, 256}, b3[3] = {2, 256, 256}, v[1] = {256}, big[1] = {1 << 16};
  kiln_tensor *a = NULL, *ab = NULL, *x = NULL, *xl = NULL, *yl = NULL;
  kiln_tensor *c = NULL, *cb = NULL, *y = NULL, *s = NULL, *sy = NULL;
  if (kiln_tensor_full(ctx, dt, 2, sq, kiln_scalar_f64(1.0), &a) != KILN_OK ||
      kiln_tensor_full(ctx, dt, 3, b3, kiln_scalar_f64(1.0), &ab) != KILN_OK ||
      kiln_tensor_full(ctx, dt, 1, v, kiln_scalar_f64(1.0), &x) != KILN_OK ||
      kiln_tensor_full(ctx, dt, 1, big, kiln_scalar_f64(1.0), &xl) != KILN_OK ||
      kiln_tensor_full(ctx, dt, 1, big, kiln_scalar_f64(1.0), &yl) != KILN_OK)
    return fail("tensor");
  double t0;
  double gemm1 = TIMED(kiln_gemm(ctx, KILN_NO_TRANS, KILN_NO_TRANS, 1.0, a, a, 0.0, &c));
  double gemm2 = TIMED(kiln_gemm(ctx, KILN_NO_TRANS, KILN_NO_TRANS, 1.0, a, a, 0.0, &c));
  double batched = TIMED(kiln_gemm(ctx, KILN_NO_TRANS, KILN_NO_TRANS, 1.0, ab, ab, 0.0, &cb));
  double gemv = TIMED(kiln_gemv(ctx, KILN_NO_TRANS, 1.0, a, x, 0.0, &y));
  double syrk = TIMED(kiln_syrk(ctx, KILN_UPPER, KILN_NO_TRANS, 1.0, a, 0.0, &sy, 0));
  double dot = TIMED(kiln_dot(ctx, xl, yl, &s));
  double axpy = TIMED(kiln_axpy(ctx, 1.0, xl, yl));
  double scal = TIMED(kiln_scal(ctx, 1.0, xl));
  double warm = TIMED(kiln_blas_warm(ctx, KILN_BLAS_WARM_USED));
  if (gemm1 < 0 || gemm2 < 0 || batched < 0 || gemv < 0 || syrk < 0 || dot < 0 || axpy < 0 ||
      scal < 0 || warm < 0)
    return fail("blas routine");
  printf("{\"what\": \"blas\", \"dtype\": \"%s\", \"first_gemm_ms\": %.2f, "
         "\"second_gemm_ms\": %.3f, \"first_gemm_batched_ms\": %.2f, \"first_gemv_ms\": %.2f, "
         "\"first_syrk_ms\": %.2f, \"first_dot_ms\": %.2f, \"first_axpy_ms\": %.2f, "
         "\"first_scal_ms\": %.2f, \"warm_used_after_ms\": %.2f}\n",
         kiln_dtype_name(dt), gemm1, gemm2, batched, gemv, syrk, dot, axpy, scal, warm);
  kiln_tensor *all[] = {a, ab, x, xl, yl, c, cb, y, s, sy};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    kiln_tensor_release(all[i]);
  return 0;
}

int
main(int argc, char **argv)
{
  kiln_dtype dt = KILN_F32;
  int fft = argc == 5 && strcmp(argv[1], "fft") == 0;
  int blas = argc == 3 && strcmp(argv[1], "blas") == 0;
  if ((!fft && !blas) || kiln_dtype_from_name(argv[argc - 1], &dt) != KILN_OK) {
    fprintf(stderr, "usage: first_call fft clfft|vkfft N f32|f64\n"
                    "       first_call blas f32|f64\n");
    return 2;
  }
  kiln_context *ctx = NULL;
  if (kiln_context_create(NULL, &ctx) != KILN_OK)
    return fail("context");
  int rc = fft ? run_fft(ctx, argv[2], atoll(argv[3]), dt) : run_blas(ctx, dt);
  kiln_context_release(ctx);
  return rc;
}
