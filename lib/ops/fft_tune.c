/*
 * The autotuner's fft family (runtime/tuner.h): the back end
 * KILN_FFT_BACKEND_AUTO plans take per precision and size bucket, timed on
 * one forward 1-D c2c transform. A choice that cannot do a plan's sizes is
 * never used for it (lib/ops/fft.c falls back to the other back end).
 */
#include <math.h>
#include <stdio.h>

#include "kiln/fft.h"
#include "ops/tuned.h"
#include "runtime/tuner.h"

#define N_(a) (sizeof(a) / sizeof((a)[0]))
#define P2(k) ((uint64_t)1 << (k))

/* One parameter, the back end as kiln_fft_backend numbers it (1 clFFT, 2 VkFFT). */
static const uint64_t fft_backends[] = {KILN_FFT_BACKEND_CLFFT, KILN_FFT_BACKEND_VKFFT};

static const struct kiln__tune_param fft_params[] = {
    {.name = "backend",
     .offset = 0,
     .size = sizeof(uint32_t),
     .min = KILN_FFT_BACKEND_CLFFT,
     .max = KILN_FFT_BACKEND_VKFFT,
     .full = fft_backends,
     .nfull = N_(fft_backends),
     .quick = fft_backends,
     .nquick = N_(fft_backends)},
};

/* Every bucket matters for a choice between two back ends: the defaults leave no gaps. */
static const uint64_t fft_sizes[] = {P2(8),  P2(9),  P2(10), P2(11), P2(12), P2(13),
                                     P2(14), P2(15), P2(16), P2(17), P2(18), P2(19),
                                     P2(20), P2(21), P2(22), P2(23), P2(24)};

/* Keys are per precision of the transform; f16 has no FFT back end here. */
static int
fft_dtype_ok(kiln_dtype d)
{
  return d == KILN_F32 || d == KILN_F64;
}

/* Choosing needs both back ends; a build with one has nothing to tune. */
static int
fft_available(const kiln_context *ctx)
{
  (void)ctx;
  return kiln_fft_backend_available(KILN_FFT_BACKEND_CLFFT) &&
         kiln_fft_backend_available(KILN_FFT_BACKEND_VKFFT);
}

static void
fft_defaults(const kiln_context *ctx, kiln_dtype dtype, int layout, int log2n, void *params)
{
  (void)layout;
  *(uint32_t *)params = (uint32_t)kiln__fft_default_backend(ctx, dtype, log2n);
}

static kiln_status
fft_run(struct kiln__tune_problem *pb, const void *params)
{
  return kiln__fft_c2c_forward(pb->ctx, pb->in[0], (kiln_fft_backend) * (const uint32_t *)params,
                               &pb->out);
}

/* Complex input and output, each 2^k points of two reals. */
static double
fft_bytes(const struct kiln__tune_problem *pb)
{
  return 4.0 * (double)pb->n * (double)kiln_dtype_size(pb->dtype);
}

/* One transform of 2^k complex points, [2^k, 2]. */
static kiln_status
fft_setup(struct kiln__tune_problem *pb)
{
  pb->ndim = 2;
  pb->shape[0] = (int64_t)pb->n;
  pb->shape[1] = 2;
  snprintf(pb->desc, sizeof pb->desc, "c2c [%lld]", (long long)pb->n);
  return kiln__tune_input(pb->ctx, pb->dtype, 2, pb->shape, 12345u, &pb->in[0]);
}

/*
 * Two FFTs of one input differ by rounding that grows with log2 n; compared
 * over the whole output as ||got - ref||_2 <= 8 eps (log2 n + 1) ||ref||_2
 * (eps of the dtype), i.e. relative to the signal's norm, never bitwise.
 * clFFT and VkFFT agree within 1 to 2% of that bound on PoCL (2^8 to 2^20
 * points, f32 and f64), while a single output bin off by its typical size
 * (norm / sqrt(n)) exceeds it below 2^30 points. NaN or Inf never match.
 */
static int
fft_match(const struct kiln__tune_problem *pb, const void *ref, const void *got, size_t bytes)
{
  int f32 = pb->dtype == KILN_F32;
  size_t n = bytes / kiln_dtype_size(pb->dtype);
  double eps = f32 ? 1.1920928955078125e-07 : 2.220446049250313e-16;
  double d2 = 0, r2 = 0;
  for (size_t i = 0; i < n; i++) {
    double x = f32 ? ((const float *)ref)[i] : ((const double *)ref)[i];
    double y = f32 ? ((const float *)got)[i] : ((const double *)got)[i];
    d2 += (x - y) * (x - y);
    r2 += x * x;
  }
  double tol = 8.0 * eps * (double)(pb->k + 1);
  return isfinite(d2) && isfinite(r2) && d2 <= tol * tol * r2;
}

const struct kiln__tune_family kiln__fft_tune = {
    .name = "fft",
    .description = "back end of auto FFT plans, timed on a 1-D c2c transform",
    .params_size = sizeof(uint32_t),
    .params = fft_params,
    .nparams = N_(fft_params),
    .layouts = 1u << KILN__LAYOUT_POINTS,
    .layout_names = "points",
    .ninputs = 1,
    .wall_clock = 1,
    .dtype_ok = fft_dtype_ok,
    .defaults = fft_defaults,
    .run = fft_run,
    .bytes = fft_bytes,
    .available = fft_available,
    .needs = "a libkiln built with both clFFT and VkFFT",
    .setup = fft_setup,
    .match = fft_match,
    .sizes = fft_sizes,
    .nsizes = N_(fft_sizes),
};
