/*
 * y = a*x + y on the default OpenCL device, built against the installed
 * libkiln through pkg-config:  cc saxpy.c $(pkg-config --cflags --libs kiln)
 */
#include <kiln.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define TRY(call)                                                                    \
  do {                                                                               \
    kiln_status s_ = (call);                                                         \
    if (s_ != KILN_OK) {                                                             \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, kiln_last_error(),              \
              kiln_status_name(s_));                                                 \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

int
main(void)
{
  enum { N = 1000003 };
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *r = malloc(N * sizeof *r);
  for (int i = 0; i < N; i++) {
    x[i] = (float)i * 0.001f;
    y[i] = 1.0f - (float)i * 0.002f;
  }

  kiln_context *ctx = NULL;
  TRY(kiln_context_create(NULL, &ctx)); /* KILN_DEVICE picks another device */
  kiln_device_info info;
  TRY(kiln_context_device_info(ctx, &info));

  int64_t shape[1] = {N};
  kiln_tensor *tx = NULL, *ty = NULL, *ax = NULL;
  TRY(kiln_tensor_from_host(ctx, KILN_F32, 1, shape, x, &tx));
  TRY(kiln_tensor_from_host(ctx, KILN_F32, 1, shape, y, &ty));
  TRY(kiln_binary_scalar(ctx, KILN_OP_MUL, tx, kiln_scalar_f64(2.5), 0, &ax)); /* ax = 2.5 x */
  TRY(kiln_binary(ctx, KILN_OP_ADD, ax, ty, &ty));                              /* y += ax, in place */
  TRY(kiln_tensor_download(ty, r, N * sizeof *r));

  int bad = 0;
  for (int i = 0; i < N; i++)
    bad += fabsf(r[i] - (2.5f * x[i] + y[i])) > 1e-4f * (1.0f + fabsf(r[i]));
  printf("saxpy on %s: %d elements, %d mismatches\n", info.name, N, bad);

  kiln_tensor_release(tx);
  kiln_tensor_release(ty);
  kiln_tensor_release(ax);
  kiln_context_release(ctx);
  free(x);
  free(y);
  free(r);
  return bad != 0;
}
