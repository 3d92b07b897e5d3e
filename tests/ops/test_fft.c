/*
 * FFT suite: c2c, r2c and c2r plans of rank 1-3, batched, in and out of
 * place, f32 and f64, on clFFT and VkFFT, against a double-precision host DFT
 * with a tolerance that grows with log n; normalisations; the plan cache;
 * bad input; tensors that start inside a buffer; plans outliving their
 * context; clFFT teardown and setup again; VkFFT binaries in a second
 * process.
 *
 * Every plan compiles kernels (about a second each on PoCL), so the cases
 * are chosen to cover the space with few plans and small sizes.
 */
#include <math.h>
#include <pthread.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

extern char **environ;

static const kiln_fft_backend backends[] = {KILN_FFT_BACKEND_CLFFT, KILN_FFT_BACKEND_VKFFT};

/*
 * Under the oclgrind suite (KILN_TEST_OCLGRIND=1) clFFT's generated kernels are left out, as
 * CLBlast's are: they are not kiln's, and oclgrind reports races between the in and out
 * halves of its in-place passes (fft_back) that are clFFT's to judge.
 */
static int
under_oclgrind(void)
{
  const char *v = getenv("KILN_TEST_OCLGRIND");
  return v && strcmp(v, "1") == 0;
}

static int
have(kiln_fft_backend b)
{
  if (b == KILN_FFT_BACKEND_CLFFT && under_oclgrind())
    return 0;
  return kiln_fft_backend_available(b);
}

/* Deterministic values in [-1, 1). */
static void
fill_random(double *v, size_t n, uint32_t seed)
{
  uint32_t x = seed * 2654435761u + 7;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    v[i] = (double)(x >> 8) / 8388608.0 - 1.0;
  }
}

static size_t
prod(size_t rank, const int64_t *sizes)
{
  size_t n = 1;
  for (size_t i = 0; i < rank; i++)
    n *= (size_t)sizes[i];
  return n;
}

/*
 * In-place host DFT of `batch` complex arrays of shape sizes (interleaved
 * doubles), along every axis: sign -1 forward, +1 inverse, unnormalised.
 * Twiddles from the exact index product mod n, so the reference itself is
 * accurate to a few ulps of double.
 */
static void
host_dft(double *x, size_t batch, size_t rank, const int64_t *sizes, int sign)
{
  size_t total = prod(rank, sizes);
  size_t maxn = 1;
  for (size_t a = 0; a < rank; a++)
    if ((size_t)sizes[a] > maxn)
      maxn = (size_t)sizes[a];
  double *line = malloc(2 * maxn * sizeof *line), *res = malloc(2 * maxn * sizeof *res);
  for (size_t a = 0; a < rank; a++) {
    size_t n = (size_t)sizes[a], inner = 1;
    for (size_t b = a + 1; b < rank; b++)
      inner *= (size_t)sizes[b];
    size_t outer = total / (n * inner);
    for (size_t bt = 0; bt < batch; bt++)
      for (size_t o = 0; o < outer; o++)
        for (size_t i = 0; i < inner; i++) {
          double *base = x + 2 * (bt * total + o * n * inner + i);
          for (size_t j = 0; j < n; j++) {
            line[2 * j] = base[2 * j * inner];
            line[2 * j + 1] = base[2 * j * inner + 1];
          }
          for (size_t k = 0; k < n; k++) {
            double re = 0, im = 0;
            for (size_t j = 0; j < n; j++) {
              double ang = sign * 2.0 * M_PI * (double)((j * k) % n) / (double)n;
              double c = cos(ang), s = sin(ang);
              re += line[2 * j] * c - line[2 * j + 1] * s;
              im += line[2 * j] * s + line[2 * j + 1] * c;
            }
            res[2 * k] = re;
            res[2 * k + 1] = im;
          }
          for (size_t j = 0; j < n; j++) {
            base[2 * j * inner] = res[2 * j];
            base[2 * j * inner + 1] = res[2 * j + 1];
          }
        }
  }
  free(line);
  free(res);
}

static kiln_tensor *
upload(kiln_dtype dt, size_t ndim, const int64_t *shape, double *v)
{
  size_t n = prod(ndim, shape);
  kiln_tensor *t = NULL;
  if (dt == KILN_F32) {
    float *f = malloc((n ? n : 1) * sizeof *f);
    for (size_t i = 0; i < n; i++) {
      f[i] = (float)v[i];
      v[i] = f[i];
    }
    KOK(kiln_tensor_from_host(harness_ctx(), dt, ndim, shape, f, &t));
    free(f);
  } else {
    KOK(kiln_tensor_from_host(harness_ctx(), dt, ndim, shape, v, &t));
  }
  return t;
}

static double *
download(const kiln_tensor *t)
{
  uint64_t n = kiln_tensor_numel(t);
  double *v = malloc((n ? n : 1) * sizeof *v);
  if (kiln_tensor_dtype(t) == KILN_F32) {
    float *f = malloc((n ? n : 1) * sizeof *f);
    KOK(kiln_tensor_download(t, f, n * sizeof *f));
    for (uint64_t i = 0; i < n; i++)
      v[i] = f[i];
    free(f);
  } else {
    KOK(kiln_tensor_download(t, v, n * sizeof *v));
  }
  return v;
}

/*
 * Compares batch transforms of `per` reals each. Bound per transform:
 * 8 * eps * (log2 n + 1) * ||input||_2 * |scale| + tiny, the usual FFT error
 * growth with generous headroom (Bluestein included), where input_norm[b]
 * is the 2-norm of that transform's input.
 */
static void
expect_fft_close(const char *what, const double *got, const double *want, size_t batch, size_t per,
                 size_t n, const double *input_norm, double scale, kiln_dtype dt)
{
  double eps = dt == KILN_F32 ? 1.2e-7 : 2.3e-16;
  for (size_t b = 0; b < batch; b++) {
    double bound = 8.0 * eps * (log2((double)n) + 1.0) * input_norm[b] * fabs(scale) + 1e-300;
    if (bound == 0)
      bound = 1e-30;
    for (size_t i = 0; i < per; i++) {
      double g = got[b * per + i], w = want[b * per + i];
      ck_assert_msg(fabs(g - w) <= bound,
                    "%s: transform %zu value %zu is %.10g, want %.10g "
                    "(bound %.3g)",
                    what, b, i, g, w, bound);
    }
  }
}

static void
norms(const double *x, size_t batch, size_t per, double *out)
{
  for (size_t b = 0; b < batch; b++) {
    double s = 0;
    for (size_t i = 0; i < per; i++)
      s += x[b * per + i] * x[b * per + i];
    out[b] = sqrt(s);
  }
}

static double
norm_scale(kiln_fft_direction dir, kiln_fft_norm norm, double n)
{
  switch (norm) {
  case KILN_FFT_NORM_BACKWARD:
    return dir == KILN_FFT_INVERSE ? 1 / n : 1;
  case KILN_FFT_NORM_ORTHO:
    return 1 / sqrt(n);
  case KILN_FFT_NORM_FORWARD:
    return dir == KILN_FFT_FORWARD ? 1 / n : 1;
  case KILN_FFT_NORM_NONE:
    return 1;
  }
  return 1;
}

/* One c2c plan, both directions, checked against host_dft (input must stay unchanged). */
static void
check_c2c(kiln_fft_backend be, kiln_dtype dt, size_t rank, const int64_t *sizes, int64_t batch,
          int inplace, kiln_fft_norm norm)
{
  kiln_context *ctx = harness_ctx();
  kiln_fft_plan *plan = NULL;
  KOK(kiln_fft_plan_create(ctx, KILN_FFT_C2C, rank, sizes, batch, dt, inplace, be, &plan));
  kiln_fft_backend got_be;
  KOK(kiln_fft_plan_backend(plan, &got_be));
  ck_assert_int_eq(got_be, be);
  size_t n = prod(rank, sizes), per = 2 * n, total = per * (size_t)batch;
  int64_t shape[6];
  size_t nd = 0;
  shape[nd++] = batch;
  for (size_t i = 0; i < rank; i++)
    shape[nd++] = sizes[i];
  shape[nd++] = 2;
  double *x = malloc(total * sizeof *x), *nrm = malloc((size_t)batch * sizeof *nrm);
  fill_random(x, total, (uint32_t)(n + rank));
  kiln_tensor *tx = upload(dt, nd, shape, x);
  norms(x, (size_t)batch, per, nrm);
  for (int d = 0; d < 2; d++) {
    kiln_fft_direction dir = d ? KILN_FFT_INVERSE : KILN_FFT_FORWARD;
    kiln_tensor *in = tx, *out = NULL;
    if (inplace) {
      in = upload(dt, nd, shape, x);
      KOK(kiln_fft_execute(plan, dir, norm, in, NULL));
      out = in;
    } else {
      KOK(kiln_fft_execute(plan, dir, norm, in, &out));
    }
    double *got = download(out);
    double *want = malloc(total * sizeof *want);
    memcpy(want, x, total * sizeof *want);
    host_dft(want, (size_t)batch, rank, sizes, d ? 1 : -1);
    double sc = norm_scale(dir, norm, (double)n);
    for (size_t i = 0; i < total; i++)
      want[i] *= sc;
    char what[160];
    snprintf(what, sizeof what, "c2c %s %s rank %zu n=%zu batch %lld %s %s norm %d",
             kiln_fft_backend_name(be), kiln_dtype_name(dt), rank, n, (long long)batch,
             inplace ? "in-place" : "out-of-place", d ? "inverse" : "forward", (int)norm);
    expect_fft_close(what, got, want, (size_t)batch, per, n, nrm, sc * 4.0, dt);
    if (!inplace) {
      /* Out of place leaves the input alone. */
      double *again = download(tx);
      ck_assert_msg(memcmp(again, x, total * sizeof *x) == 0, "%s: input changed", what);
      free(again);
    }
    free(got);
    free(want);
    kiln_tensor_release(out);
  }
  kiln_tensor_release(tx);
  free(x);
  free(nrm);
  KOK(kiln_fft_plan_release(plan));
}

START_TEST(c2c_1d_sizes)
{
  static const int64_t sizes[] = {1, 16, 105, 17};
  for (size_t b = 0; b < 2; b++) {
    if (!have(backends[b]))
      continue;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      if (backends[b] == KILN_FFT_BACKEND_CLFFT && sizes[i] == 17)
        continue; /* prime beyond 13: VkFFT only (checked in bad_input) */
      check_c2c(backends[b], KILN_F32, 1, &sizes[i], 3, 0, KILN_FFT_NORM_BACKWARD);
      if (harness_has_fp64())
        check_c2c(backends[b], KILN_F64, 1, &sizes[i], 2, 0, (kiln_fft_norm)(i % 4));
    }
  }
}
END_TEST

START_TEST(c2c_2d_3d_batched)
{
  static const int64_t s2[2] = {12, 10}, s3[3] = {4, 6, 5}, s3b[3] = {3, 5, 7};
  for (size_t b = 0; b < 2; b++) {
    if (!have(backends[b]))
      continue;
    check_c2c(backends[b], KILN_F32, 2, s2, 3, 0, KILN_FFT_NORM_ORTHO);
    check_c2c(backends[b], KILN_F32, 3, s3, 2, 0, KILN_FFT_NORM_FORWARD);
    if (harness_has_fp64())
      check_c2c(backends[b], KILN_F64, 3, s3b, 1, 0, KILN_FFT_NORM_NONE);
  }
}
END_TEST

START_TEST(c2c_in_place)
{
  static const int64_t s1 = 64, s2[2] = {8, 6};
  for (size_t b = 0; b < 2; b++) {
    if (!have(backends[b]))
      continue;
    check_c2c(backends[b], KILN_F32, 1, &s1, 2, 1, KILN_FFT_NORM_BACKWARD);
    check_c2c(backends[b], KILN_F32, 2, s2, 1, 1, KILN_FFT_NORM_ORTHO);
  }
}
END_TEST

/*
 * r2c of real x against the host DFT (first H outputs of the last axis),
 * then c2r of that spectrum back to x (backward norm), both out of place or
 * both in place (padded rows), with the inputs unchanged out of place.
 */
static void
check_real_round_trip(kiln_fft_backend be, kiln_dtype dt, size_t rank, const int64_t *sizes,
                      int64_t batch, int inplace)
{
  kiln_context *ctx = harness_ctx();
  kiln_fft_plan *fwd = NULL, *inv = NULL;
  KOK(kiln_fft_plan_create(ctx, KILN_FFT_R2C, rank, sizes, batch, dt, inplace, be, &fwd));
  KOK(kiln_fft_plan_create(ctx, KILN_FFT_C2R, rank, sizes, batch, dt, inplace, be, &inv));
  size_t n = prod(rank, sizes), L = (size_t)sizes[rank - 1], H = L / 2 + 1;
  size_t rows = n / L * (size_t)batch;
  int64_t rshape[5], cshape[6];
  size_t nr = 0, nc = 0;
  rshape[nr++] = cshape[nc++] = batch;
  for (size_t i = 0; i + 1 < rank; i++)
    rshape[nr++] = cshape[nc++] = sizes[i];
  rshape[nr++] = (int64_t)L;
  cshape[nc++] = (int64_t)H;
  cshape[nc++] = 2;
  double *x = malloc(rows * L * sizeof *x), *nrm = malloc((size_t)batch * sizeof *nrm);
  fill_random(x, rows * L, (uint32_t)(n * 3 + rank));
  /* Reference spectrum: the full complex DFT of x, cut to H along the last axis. */
  double *full = malloc(2 * rows * L * sizeof *full);
  kiln_tensor *tin;
  if (inplace) {
    double *padded = calloc(rows * 2 * H, sizeof *padded);
    for (size_t r = 0; r < rows; r++)
      for (size_t j = 0; j < L; j++)
        padded[r * 2 * H + j] = x[r * L + j];
    tin = upload(dt, nc, cshape, padded);
    for (size_t r = 0; r < rows; r++)
      for (size_t j = 0; j < L; j++)
        x[r * L + j] = padded[r * 2 * H + j]; /* rounded as uploaded */
    free(padded);
  } else {
    tin = upload(dt, nr, rshape, x);
  }
  for (size_t i = 0; i < rows * L; i++) {
    full[2 * i] = x[i];
    full[2 * i + 1] = 0;
  }
  norms(x, (size_t)batch, n, nrm);
  host_dft(full, (size_t)batch, rank, sizes, -1);
  double *want = malloc(2 * rows * H * sizeof *want);
  for (size_t r = 0; r < rows; r++)
    for (size_t j = 0; j < H; j++) {
      want[2 * (r * H + j)] = full[2 * (r * L + j)];
      want[2 * (r * H + j) + 1] = full[2 * (r * L + j) + 1];
    }
  char what[160];
  snprintf(what, sizeof what, "r2c %s %s rank %zu n=%zu batch %lld %s", kiln_fft_backend_name(be),
           kiln_dtype_name(dt), rank, n, (long long)batch, inplace ? "in-place" : "out-of-place");
  kiln_tensor *spec = NULL;
  if (inplace) {
    KOK(kiln_fft_execute(fwd, KILN_FFT_FORWARD, KILN_FFT_NORM_BACKWARD, tin, NULL));
    spec = tin;
  } else {
    KOK(kiln_fft_execute(fwd, KILN_FFT_FORWARD, KILN_FFT_NORM_BACKWARD, tin, &spec));
    ck_assert_uint_eq(kiln_tensor_ndim(spec), nc);
    for (size_t i = 0; i < nc; i++)
      ck_assert_int_eq(kiln_tensor_dim(spec, i), cshape[i]);
  }
  double *got = download(spec);
  expect_fft_close(what, got, want, (size_t)batch, 2 * H * (n / L), n, nrm, 4.0, dt);
  free(got);
  /* Back to real. */
  kiln_tensor *back = NULL;
  snprintf(what, sizeof what, "c2r %s %s rank %zu n=%zu batch %lld %s", kiln_fft_backend_name(be),
           kiln_dtype_name(dt), rank, n, (long long)batch, inplace ? "in-place" : "out-of-place");
  double *before = inplace ? NULL : download(spec);
  if (inplace) {
    KOK(kiln_fft_execute(inv, KILN_FFT_INVERSE, KILN_FFT_NORM_BACKWARD, spec, NULL));
    back = spec;
  } else {
    KOK(kiln_fft_execute(inv, KILN_FFT_INVERSE, KILN_FFT_NORM_BACKWARD, spec, &back));
    ck_assert_uint_eq(kiln_tensor_ndim(back), nr);
    for (size_t i = 0; i < nr; i++)
      ck_assert_int_eq(kiln_tensor_dim(back, i), rshape[i]);
    double *after = download(spec);
    ck_assert_msg(memcmp(before, after, 2 * rows * H * sizeof *after) == 0, "%s: input changed",
                  what);
    free(after);
  }
  double *res = download(back);
  double *flat = malloc(rows * L * sizeof *flat);
  for (size_t r = 0; r < rows; r++)
    for (size_t j = 0; j < L; j++)
      flat[r * L + j] = inplace ? res[r * 2 * H + j] : res[r * L + j];
  /* The round trip carries the forward error too: bound on ||x|| with the inverse's 1/N. */
  expect_fft_close(what, flat, x, (size_t)batch, n, n, nrm, 2.0 / sqrt((double)n), dt);
  free(res);
  free(flat);
  free(before);
  free(x);
  free(nrm);
  free(full);
  free(want);
  if (!inplace) {
    kiln_tensor_release(back);
    kiln_tensor_release(spec);
  }
  kiln_tensor_release(tin);
  KOK(kiln_fft_plan_release(fwd));
  KOK(kiln_fft_plan_release(inv));
}

/* ---- complex tensors (c64/c128) ---- */

/* Uploads `count` complex values (interleaved doubles, rounded in place) as c64 or c128. */
static kiln_tensor *
upload_complex(kiln_dtype dt, size_t ndim, const int64_t *shape, double *v)
{
  size_t n = 2 * prod(ndim, shape);
  kiln_tensor *t = NULL;
  if (dt == KILN_C64) {
    float *f = malloc((n ? n : 1) * sizeof *f);
    for (size_t i = 0; i < n; i++)
      v[i] = f[i] = (float)v[i];
    KOK(kiln_tensor_from_host(harness_ctx(), dt, ndim, shape, f, &t));
    free(f);
  } else {
    KOK(kiln_tensor_from_host(harness_ctx(), dt, ndim, shape, v, &t));
  }
  return t;
}

/* Interleaved doubles of a c64/c128 tensor, or of a real one (the trailing-2 form). */
static double *
download_reals(const kiln_tensor *t)
{
  kiln_dtype dt = kiln_tensor_dtype(t);
  size_t n = kiln_tensor_numel(t) * (dt == KILN_C64 || dt == KILN_C128 ? 2 : 1);
  double *v = malloc((n ? n : 1) * sizeof *v);
  if (dt == KILN_C64 || dt == KILN_F32) {
    float *f = malloc((n ? n : 1) * sizeof *f);
    KOK(kiln_tensor_download(t, f, n * sizeof *f));
    for (size_t i = 0; i < n; i++)
      v[i] = f[i];
    free(f);
  } else {
    KOK(kiln_tensor_download(t, v, n * sizeof *v));
  }
  return v;
}

/* Relative L2 error of n reals against the reference, bounded by 16 eps (log2 points + 1). */
static void
expect_rel_l2(const char *what, const double *got, const double *want, size_t n, size_t points,
              kiln_dtype dt)
{
  double e = 0, w = 0;
  for (size_t i = 0; i < n; i++) {
    e += (got[i] - want[i]) * (got[i] - want[i]);
    w += want[i] * want[i];
  }
  double eps = dt == KILN_C64 || dt == KILN_F32 ? 1.2e-7 : 2.3e-16;
  double rel = w > 0 ? sqrt(e / w) : sqrt(e);
  double bound = 16.0 * eps * (log2((double)points) + 1.0);
  ck_assert_msg(rel <= bound, "%s: relative L2 error %.3g over the bound %.3g", what, rel, bound);
}

/*
 * C2C on c64/c128 tensors (allocated complex output, a given complex or
 * trailing-2 output), R2C producing a complex tensor from a c64 plan, C2R
 * consuming one; sizes 1, a prime and a composite; against host_dft.
 */
START_TEST(complex_tensors)
{
  kiln_context *ctx = harness_ctx();
  struct {
    kiln_fft_backend be;
    kiln_dtype dt;
    int64_t n, batch;
  } cases[] = {{KILN_FFT_BACKEND_CLFFT, KILN_C64, 12, 3},
               {KILN_FFT_BACKEND_VKFFT, KILN_C64, 17, 2},
               {KILN_FFT_BACKEND_VKFFT, KILN_C128, 1, 2}};
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    kiln_dtype dt = cases[ci].dt, real = dt == KILN_C64 ? KILN_F32 : KILN_F64;
    if (!have(cases[ci].be) || (dt == KILN_C128 && !harness_has_fp64()))
      continue;
    int64_t n = cases[ci].n, batch = cases[ci].batch, shape[2] = {batch, n};
    size_t total = 2 * (size_t)(n * batch);
    kiln_fft_plan *plan = NULL;
    /* A real precision: the complex input alone makes the output complex. */
    KOK(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &n, batch, real, 0, cases[ci].be, &plan));
    double *x = malloc(total * sizeof *x), *want = malloc(total * sizeof *want);
    fill_random(x, total, (uint32_t)(40 + n));
    kiln_tensor *tx = upload_complex(dt, 2, shape, x);
    memcpy(want, x, total * sizeof *x);
    host_dft(want, (size_t)batch, 1, &n, -1);
    char what[160];
    snprintf(what, sizeof what, "c2c %s %s n=%lld complex in/out",
             kiln_fft_backend_name(cases[ci].be), kiln_dtype_name(dt), (long long)n);
    kiln_tensor *out = NULL;
    /* NORM_FORWARD scales the complex output: every real of it, not the first half. */
    KOK(kiln_fft_execute(plan, KILN_FFT_FORWARD, KILN_FFT_NORM_FORWARD, tx, &out));
    ck_assert_int_eq(kiln_tensor_dtype(out), dt);
    ck_assert_uint_eq(kiln_tensor_ndim(out), 2);
    ck_assert_int_eq(kiln_tensor_dim(out, 1), n);
    double *got = download_reals(out);
    for (size_t i = 0; i < total; i++)
      got[i] *= (double)n;
    expect_rel_l2(what, got, want, total, (size_t)n, dt);
    free(got);
    /* Inverse, ortho, into a given trailing-2 output: x / sqrt(n) back. */
    int64_t s2[3] = {batch, n, 2};
    kiln_tensor *o2 = NULL;
    KOK(kiln_tensor_zeros(ctx, real, 3, s2, &o2));
    KOK(kiln_fft_execute(plan, KILN_FFT_INVERSE, KILN_FFT_NORM_ORTHO, out, &o2));
    got = download_reals(o2);
    snprintf(what, sizeof what, "c2c %s %s n=%lld inverse into trailing-2",
             kiln_fft_backend_name(cases[ci].be), kiln_dtype_name(dt), (long long)n);
    for (size_t i = 0; i < total; i++)
      got[i] *= sqrt((double)n);
    expect_rel_l2(what, got, x, total, (size_t)n, dt);
    free(got);
    kiln_tensor_release(out);
    kiln_tensor_release(o2);
    kiln_tensor_release(tx);
    free(x);
    free(want);
    KOK(kiln_fft_plan_release(plan));
  }

  /* R2C into a complex tensor (a c64 plan), then C2R from it (an f32 plan). */
  kiln_fft_backend be =
      have(KILN_FFT_BACKEND_CLFFT) ? KILN_FFT_BACKEND_CLFFT : KILN_FFT_BACKEND_VKFFT;
  int64_t L = 10, B = 2, H = L / 2 + 1, rs[2] = {B, L};
  kiln_fft_plan *fwd = NULL, *inv = NULL;
  KOK(kiln_fft_plan_create(ctx, KILN_FFT_R2C, 1, &L, B, KILN_C64, 0, be, &fwd));
  KOK(kiln_fft_plan_create(ctx, KILN_FFT_C2R, 1, &L, B, KILN_F32, 0, be, &inv));
  double x[20], full[40], want[24];
  fill_random(x, 20, 77);
  kiln_tensor *tx = NULL;
  float xf[20];
  for (int i = 0; i < 20; i++)
    x[i] = xf[i] = (float)x[i];
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 2, rs, xf, &tx));
  for (int i = 0; i < 20; i++) {
    full[2 * i] = x[i];
    full[2 * i + 1] = 0;
  }
  host_dft(full, (size_t)B, 1, &L, -1);
  for (int b = 0; b < B; b++)
    for (int j = 0; j < H; j++) {
      want[2 * (b * H + j)] = full[2 * (b * L + j)];
      want[2 * (b * H + j) + 1] = full[2 * (b * L + j) + 1];
    }
  kiln_tensor *spec = NULL, *back = NULL;
  KOK(kiln_fft_execute(fwd, KILN_FFT_FORWARD, KILN_FFT_NORM_BACKWARD, tx, &spec));
  ck_assert_int_eq(kiln_tensor_dtype(spec), KILN_C64);
  ck_assert_uint_eq(kiln_tensor_ndim(spec), 2);
  ck_assert_int_eq(kiln_tensor_dim(spec, 1), H);
  double *got = download_reals(spec);
  expect_rel_l2("r2c into c64", got, want, (size_t)(2 * B * H), (size_t)L, KILN_C64);
  free(got);
  KOK(kiln_fft_execute(inv, KILN_FFT_INVERSE, KILN_FFT_NORM_BACKWARD, spec, &back));
  ck_assert_int_eq(kiln_tensor_dtype(back), KILN_F32);
  ck_assert_int_eq(kiln_tensor_dim(back, 1), L);
  got = download_reals(back);
  expect_rel_l2("c2r from c64", got, x, 20, (size_t)L, KILN_C64);
  free(got);

  /* Bad input: a complex tensor on a real side, the wrong precision, the wrong shape. */
  KEXPECT(kiln_fft_execute(fwd, KILN_FFT_FORWARD, KILN_FFT_NORM_BACKWARD, spec, &back),
          KILN_ERR_DTYPE);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "kiln_fft_execute"));
  kiln_tensor *wrong = NULL, *o = NULL;
  int64_t ws[2] = {B, L};
  KOK(kiln_tensor_zeros(ctx, KILN_C64, 2, ws, &wrong));
  KEXPECT(kiln_fft_execute(inv, KILN_FFT_INVERSE, KILN_FFT_NORM_BACKWARD, wrong, &o),
          KILN_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "complex tensor"));
  ck_assert_ptr_null(o);
  if (harness_has_fp64()) {
    kiln_tensor *z = NULL;
    int64_t zs[2] = {B, H};
    KOK(kiln_tensor_zeros(ctx, KILN_C128, 2, zs, &z));
    KEXPECT(kiln_fft_execute(inv, KILN_FFT_INVERSE, KILN_FFT_NORM_BACKWARD, z, &o), KILN_ERR_DTYPE);
    kiln_tensor_release(z);
  }
  /* 16-bit precisions: refused with the reason. */
  kiln_fft_plan *p16 = NULL;
  KEXPECT(
      kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &L, 1, KILN_F16, 0, KILN_FFT_BACKEND_AUTO, &p16),
      KILN_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "16-bit"));
  KEXPECT(
      kiln_fft_plan_create(ctx, KILN_FFT_R2C, 1, &L, 1, KILN_BF16, 0, KILN_FFT_BACKEND_AUTO, &p16),
      KILN_ERR_UNSUPPORTED);
  KEXPECT(
      kiln_fft_plan_create(ctx, KILN_FFT_R2C, 1, &L, 1, KILN_I32, 0, KILN_FFT_BACKEND_AUTO, &p16),
      KILN_ERR_DTYPE);
  ck_assert_ptr_null(p16);
  kiln_tensor_release(wrong);
  kiln_tensor_release(spec);
  kiln_tensor_release(back);
  kiln_tensor_release(tx);
  KOK(kiln_fft_plan_release(fwd));
  KOK(kiln_fft_plan_release(inv));
}
END_TEST

START_TEST(real_round_trips)
{
  static const int64_t s16 = 16, s15 = 15, s2[2] = {6, 10}, s3[3] = {4, 4, 6};
  for (size_t b = 0; b < 2; b++) {
    if (!have(backends[b]))
      continue;
    check_real_round_trip(backends[b], KILN_F32, 1, &s16, 3, 0);
    check_real_round_trip(backends[b], KILN_F32, 1, &s15, 2, 0);
    check_real_round_trip(backends[b], KILN_F32, 2, s2, 2, 0);
    check_real_round_trip(backends[b], KILN_F32, 3, s3, 1, 0);
    if (harness_has_fp64())
      check_real_round_trip(backends[b], KILN_F64, 2, s2, 1, 0);
  }
}
END_TEST

START_TEST(real_in_place)
{
  static const int64_t s16 = 16, s2[2] = {6, 10};
  for (size_t b = 0; b < 2; b++) {
    if (!have(backends[b]))
      continue;
    check_real_round_trip(backends[b], KILN_F32, 1, &s16, 2, 1);
    check_real_round_trip(backends[b], KILN_F32, 2, s2, 1, 1);
  }
}
END_TEST

/*
 * numpy.fft.irfftn of a half spectrum c [batch, outer..., H] (interleaved),
 * unnormalised, into x [batch, outer..., L]: an inverse DFT over the outer
 * axes, then per row the real inverse DFT that takes only the real parts of
 * the bins a real result maps onto themselves (0 and, for even L, L/2).
 */
static void
host_irfftn(const double *c, size_t batch, size_t rank, const int64_t *sizes, double *x)
{
  size_t L = (size_t)sizes[rank - 1], H = L / 2 + 1, outer = prod(rank - 1, sizes);
  double *w = malloc(2 * batch * outer * H * sizeof *w), *col = malloc(2 * outer * sizeof *col);
  memcpy(w, c, 2 * batch * outer * H * sizeof *w);
  for (size_t b = 0; b < batch && rank > 1; b++)
    for (size_t k = 0; k < H; k++) {
      double *base = w + 2 * (b * outer * H + k);
      for (size_t j = 0; j < outer; j++)
        col[2 * j] = base[2 * j * H], col[2 * j + 1] = base[2 * j * H + 1];
      host_dft(col, 1, rank - 1, sizes, 1);
      for (size_t j = 0; j < outer; j++)
        base[2 * j * H] = col[2 * j], base[2 * j * H + 1] = col[2 * j + 1];
    }
  for (size_t r = 0; r < batch * outer; r++) {
    const double *z = w + 2 * r * H;
    for (size_t n = 0; n < L; n++) {
      double v = z[0];
      if (L % 2 == 0)
        v += n % 2 ? -z[2 * (H - 1)] : z[2 * (H - 1)];
      for (size_t k = 1; k < (L + 1) / 2; k++) {
        double ang = 2.0 * M_PI * (double)((k * n) % L) / (double)L;
        v += 2.0 * (z[2 * k] * cos(ang) - z[2 * k + 1] * sin(ang));
      }
      x[r * L + n] = v;
    }
  }
  free(w);
  free(col);
}

/*
 * One C2R plan on a random half spectrum whose every bin, DC and Nyquist
 * included, has a nonzero imaginary part, against host_irfftn. The batch
 * is given as leading dims (lead, nlead). fixed, when not NULL, is the
 * spectrum of every row instead (2H reals). In place the real result sits
 * in the first L reals of each row of 2H. The input of an out-of-place call
 * stays unchanged.
 */
static void
check_c2r_irfft(kiln_fft_backend be, kiln_dtype dt, size_t rank, const int64_t *sizes, size_t nlead,
                const int64_t *lead, int inplace, const double *fixed)
{
  int64_t batch = (int64_t)prod(nlead, lead);
  kiln_fft_plan *plan = NULL;
  KOK(kiln_fft_plan_create(harness_ctx(), KILN_FFT_C2R, rank, sizes, batch, dt, inplace, be,
                           &plan));
  size_t n = prod(rank, sizes), L = (size_t)sizes[rank - 1], H = L / 2 + 1;
  size_t rows = n / L * (size_t)batch, per = n / L * 2 * H;
  int64_t cshape[8];
  size_t nc = 0;
  for (size_t i = 0; i < nlead; i++)
    cshape[nc++] = lead[i];
  for (size_t i = 0; i + 1 < rank; i++)
    cshape[nc++] = sizes[i];
  cshape[nc++] = (int64_t)H;
  cshape[nc++] = 2;
  double *c = malloc(rows * 2 * H * sizeof *c), *nrm = malloc((size_t)batch * sizeof *nrm);
  fill_random(c, rows * 2 * H, (uint32_t)(n * 7 + (size_t)batch + rank));
  for (size_t i = 0; fixed && i < rows * 2 * H; i++)
    c[i] = fixed[i % (2 * H)];
  kiln_tensor *in = upload(dt, nc, cshape, c), *out = NULL;
  norms(c, (size_t)batch, per, nrm);
  char what[200];
  snprintf(what, sizeof what, "c2r %s %s rank %zu L=%zu n=%zu batch %lld (%zu leading dims) %s",
           kiln_fft_backend_name(be), kiln_dtype_name(dt), rank, L, n, (long long)batch, nlead,
           inplace ? "in-place" : "out-of-place");
  if (inplace) {
    KOK(kiln_fft_execute(plan, KILN_FFT_INVERSE, KILN_FFT_NORM_NONE, in, NULL));
    out = in;
  } else {
    KOK(kiln_fft_execute(plan, KILN_FFT_INVERSE, KILN_FFT_NORM_NONE, in, &out));
    ck_assert_uint_eq(kiln_tensor_ndim(out), nc - 1);
    ck_assert_int_eq(kiln_tensor_dim(out, nc - 2), (int64_t)L);
    double *after = download(in);
    ck_assert_msg(memcmp(after, c, rows * 2 * H * sizeof *c) == 0, "%s: input changed", what);
    free(after);
  }
  double *got = download(out), *flat = malloc(rows * L * sizeof *flat);
  for (size_t r = 0; r < rows; r++)
    for (size_t j = 0; j < L; j++)
      flat[r * L + j] = inplace ? got[r * 2 * H + j] : got[r * L + j];
  double *want = malloc(rows * L * sizeof *want);
  host_irfftn(c, (size_t)batch, rank, sizes, want);
  /* The unnormalised inverse of a spectrum of norm |c| has norm <= sqrt(2n)|c|. */
  expect_fft_close(what, flat, want, (size_t)batch, n, n, nrm, 4.0 * sqrt((double)n), dt);
  free(got);
  free(flat);
  free(want);
  free(c);
  free(nrm);
  if (!inplace)
    kiln_tensor_release(out);
  kiln_tensor_release(in);
  KOK(kiln_fft_plan_release(plan));
}

/* The back ends this build has, then auto. */
static size_t
c2r_backends(kiln_fft_backend out[3])
{
  size_t nb = 0;
  for (size_t b = 0; b < 2; b++)
    if (have(backends[b]))
      out[nb++] = backends[b];
  out[nb++] = KILN_FFT_BACKEND_AUTO;
  return nb;
}

/* Batches 1-3 (the bugs came with batch >= 2 and with even batches); 2 as two leading dims. */
static size_t
c2r_lead(int64_t batch, int64_t lead[2])
{
  if (batch % 2)
    return lead[0] = batch, 1;
  lead[0] = batch / 2, lead[1] = 2;
  return 2;
}

/*
 * C2R ignores the imaginary parts of the DC and Nyquist bins whatever the
 * batch (clFFT honoured them for batch >= 2, VkFFT for even batch counts).
 * The issue's example first: DC 1+0.75i, Nyquist -0.5i, L = 16, all ones.
 */
START_TEST(c2r_ignores_dc_nyquist_imag)
{
  static const int64_t lens[] = {2, 15, 16, 100, 1024};
  kiln_fft_backend bes[3];
  size_t nb = c2r_backends(bes);
  double issue[18] = {1, 0.75};
  issue[17] = -0.5;
  kiln_dtype dts[2] = {KILN_F64, KILN_F32};
  int both = harness_has_fp64();
  for (size_t t = both ? 0 : 1; t < 2; t++)
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
      /* The DC/Nyquist handling is the same for both precisions (every plan is a clFFT or
       * VkFFT build of its own): f64 takes 2, 16 and 1024, f32 15, 16 and 100. */
      for (int64_t batch = 1; batch <= 3 && !(both && lens[i] != 16 && (i % 2 == 0) != (t == 0));
           batch++)
        for (size_t b = 0; b < nb; b++) {
          int64_t lead[2];
          size_t nl = c2r_lead(batch, lead);
          /* Back to back, the two share one compiled plan (auto's too, from the cache). */
          if (lens[i] == 16)
            check_c2r_irfft(bes[b], dts[t], 1, &lens[i], nl, lead, 0, issue);
          check_c2r_irfft(bes[b], dts[t], 1, &lens[i], nl, lead, 0, NULL);
        }
}
END_TEST

/* In place, and over 2-D and 3-D plans (the DC and Nyquist columns made Hermitian over the
 * outer axes, as numpy.fft.irfftn does). */
START_TEST(c2r_ignores_dc_nyquist_imag_in_place_and_nd)
{
  static const int64_t lens[] = {2, 15, 16, 100, 1024};
  static const int64_t s2[2] = {6, 16}, s2b[2] = {5, 15}, s3[3] = {3, 4, 10};
  kiln_fft_backend bes[3];
  size_t nb = c2r_backends(bes);
  kiln_dtype dt = harness_has_fp64() ? KILN_F64 : KILN_F32;
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
    for (int64_t batch = 1; batch <= 3; batch++)
      for (size_t b = 0; b < nb; b++) {
        int64_t lead[2];
        size_t nl = c2r_lead(batch, lead);
        check_c2r_irfft(bes[b], i % 2 ? KILN_F32 : dt, 1, &lens[i], nl, lead, 1, NULL);
      }
  for (int inplace = 0; inplace < 2; inplace++)
    for (int64_t batch = 1; batch <= 3; batch += 2)
      for (size_t b = 0; b < nb; b++) {
        int64_t lead[2];
        size_t nl = c2r_lead(batch + inplace, lead);
        check_c2r_irfft(bes[b], KILN_F32, 2, s2, nl, lead, inplace, NULL);
        check_c2r_irfft(bes[b], dt, 2, s2b, nl, lead, inplace, NULL);
        check_c2r_irfft(bes[b], KILN_F32, 3, s3, nl, lead, inplace, NULL);
      }
}
END_TEST

/* A prime size through VkFFT's Bluestein path, f32 and f64, and auto's choice. */
START_TEST(prime_sizes_bluestein)
{
  if (!have(KILN_FFT_BACKEND_VKFFT))
    return;
  static const int64_t p17 = 17, p2[2] = {17, 19};
  check_c2c(KILN_FFT_BACKEND_VKFFT, KILN_F32, 1, &p17, 4, 0, KILN_FFT_NORM_ORTHO);
  check_c2c(KILN_FFT_BACKEND_VKFFT, KILN_F32, 2, p2, 1, 0, KILN_FFT_NORM_BACKWARD);
  check_real_round_trip(KILN_FFT_BACKEND_VKFFT, KILN_F32, 1, &p17, 2, 0);
  /* auto never picks clFFT for a size clFFT cannot do. */
  kiln_fft_plan *plan = NULL;
  KOK(kiln_context_set_option(harness_ctx(), KILN_OPT_FFT_BACKEND, KILN_FFT_BACKEND_AUTO));
  KOK(kiln_fft_plan_create(harness_ctx(), KILN_FFT_C2C, 1, &p17, 4, KILN_F32, 0,
                           KILN_FFT_BACKEND_AUTO, &plan));
  kiln_fft_backend be;
  KOK(kiln_fft_plan_backend(plan, &be));
  ck_assert_int_eq(be, KILN_FFT_BACKEND_VKFFT);
  KOK(kiln_fft_plan_release(plan));
}
END_TEST

START_TEST(plan_cache_hits_and_bound)
{
  kiln_context *ctx = NULL;
  KOK(kiln_context_create(NULL, &ctx));
  kiln_fft_stats st0, st;
  KOK(kiln_fft_stats_get(ctx, &st0));
  ck_assert_uint_eq(st0.plan_misses, 0);
  int64_t n = 32;
  kiln_fft_plan *a = NULL, *b = NULL, *c = NULL;
  KOK(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &n, 2, KILN_F32, 0, KILN_FFT_BACKEND_AUTO, &a));
  KOK(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &n, 2, KILN_F32, 0, KILN_FFT_BACKEND_AUTO, &b));
  KOK(kiln_fft_stats_get(ctx, &st));
  ck_assert_uint_eq(st.plan_misses, 1);
  ck_assert_uint_eq(st.plan_hits, 1);
  ck_assert_uint_eq(st.plans_cached, 1);
  ck_assert_ptr_ne(a, b);
  /* Released handles leave the compiled plan cached: the next create is a hit. */
  KOK(kiln_fft_plan_release(a));
  KOK(kiln_fft_plan_release(b));
  KOK(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &n, 2, KILN_F32, 0, KILN_FFT_BACKEND_AUTO, &c));
  KOK(kiln_fft_stats_get(ctx, &st));
  ck_assert_uint_eq(st.plan_hits, 2);
  /* Anything that defines a plan makes a different one: batch, placement, precision. */
  kiln_fft_plan *d = NULL, *e = NULL;
  KOK(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &n, 3, KILN_F32, 0, KILN_FFT_BACKEND_AUTO, &d));
  KOK(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &n, 2, KILN_F32, 1, KILN_FFT_BACKEND_AUTO, &e));
  KOK(kiln_fft_stats_get(ctx, &st));
  ck_assert_uint_eq(st.plan_misses, 3);
  ck_assert_uint_eq(st.plan_hits, 2);
  KOK(kiln_fft_plan_release(d));
  KOK(kiln_fft_plan_release(e));
  /* The bound: 16 idle plans at most; the held one survives. */
  for (int64_t batch = 10; batch < 26; batch++) {
    kiln_fft_plan *p = NULL;
    KOK(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &n, batch, KILN_F32, 0, KILN_FFT_BACKEND_AUTO,
                             &p));
    KOK(kiln_fft_plan_release(p));
  }
  KOK(kiln_fft_stats_get(ctx, &st));
  ck_assert_uint_le(st.plans_cached, 16);
  ck_assert_uint_ge(st.plan_evictions, 3);
  /* c, still held, was not evicted: creating it again is a hit. */
  uint64_t hits = st.plan_hits;
  kiln_fft_plan *c2 = NULL;
  KOK(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &n, 2, KILN_F32, 0, KILN_FFT_BACKEND_AUTO, &c2));
  KOK(kiln_fft_stats_get(ctx, &st));
  ck_assert_uint_eq(st.plan_hits, hits + 1);
  /* A plan outliving its context: execute refuses, release still works. */
  int64_t shape[3] = {2, 32, 2};
  kiln_tensor *x = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 3, shape, &x));
  kiln_tensor *y = NULL;
  KOK(kiln_fft_execute(c2, KILN_FFT_FORWARD, KILN_FFT_NORM_BACKWARD, x, &y));
  KOK(kiln_tensor_release(y));
  y = NULL;
  KOK(kiln_context_release(ctx));
  KEXPECT(kiln_fft_execute(c2, KILN_FFT_FORWARD, KILN_FFT_NORM_BACKWARD, x, &y),
          KILN_ERR_INVALID_HANDLE);
  KOK(kiln_fft_plan_release(c));
  KOK(kiln_fft_plan_release(c2));
  KEXPECT(kiln_fft_plan_release(c2), KILN_ERR_INVALID_HANDLE);
  kiln_tensor_release(x);
}
END_TEST

START_TEST(bad_input)
{
  kiln_context *ctx = harness_ctx();
  int64_t n = 8, zero = 0, p17 = 17;
  kiln_fft_plan *p = NULL;
  KEXPECT(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 0, &n, 1, KILN_F32, 0, KILN_FFT_BACKEND_AUTO, &p),
          KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "kiln_fft_plan_create"));
  KEXPECT(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 4, &n, 1, KILN_F32, 0, KILN_FFT_BACKEND_AUTO, &p),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(
      kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &zero, 1, KILN_F32, 0, KILN_FFT_BACKEND_AUTO, &p),
      KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &n, 0, KILN_F32, 0, KILN_FFT_BACKEND_AUTO, &p),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &n, 1, KILN_I32, 0, KILN_FFT_BACKEND_AUTO, &p),
          KILN_ERR_DTYPE);
  KEXPECT(
      kiln_fft_plan_create(ctx, (kiln_fft_kind)7, 1, &n, 1, KILN_F32, 0, KILN_FFT_BACKEND_AUTO, &p),
      KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &n, 1, KILN_F32, 0, (kiln_fft_backend)9, &p),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(
      kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, NULL, 1, KILN_F32, 0, KILN_FFT_BACKEND_AUTO, &p),
      KILN_ERR_INVALID_ARGUMENT);
  if (have(KILN_FFT_BACKEND_CLFFT)) {
    KEXPECT(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &p17, 1, KILN_F32, 0, KILN_FFT_BACKEND_CLFFT,
                                 &p),
            KILN_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "factor 17"));
  }
  ck_assert_ptr_null(p);

  /* Execution: wrong shapes, dtype, direction, in-place misuse. */
  KOK(kiln_fft_plan_create(ctx, KILN_FFT_R2C, 1, &n, 2, KILN_F32, 0, KILN_FFT_BACKEND_AUTO, &p));
  int64_t good[2] = {2, 8}, bad[2] = {2, 7}, bad_batch[2] = {3, 8}, cplx[3] = {2, 5, 2};
  kiln_tensor *x = NULL, *xb = NULL, *xbb = NULL, *xd = NULL, *y = NULL, *wrong = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, good, &x));
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, bad, &xb));
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, bad_batch, &xbb));
  KOK(kiln_tensor_zeros(ctx, KILN_I32, 2, good, &xd));
  KEXPECT(kiln_fft_execute(p, KILN_FFT_FORWARD, KILN_FFT_NORM_BACKWARD, xb, &y), KILN_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "[batch...,8]"));
  KEXPECT(kiln_fft_execute(p, KILN_FFT_FORWARD, KILN_FFT_NORM_BACKWARD, xbb, &y), KILN_ERR_SHAPE);
  KEXPECT(kiln_fft_execute(p, KILN_FFT_FORWARD, KILN_FFT_NORM_BACKWARD, xd, &y), KILN_ERR_DTYPE);
  KEXPECT(kiln_fft_execute(p, KILN_FFT_INVERSE, KILN_FFT_NORM_BACKWARD, x, &y),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_fft_execute(p, KILN_FFT_FORWARD, (kiln_fft_norm)8, x, &y),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_fft_execute(p, KILN_FFT_FORWARD, KILN_FFT_NORM_BACKWARD, x, NULL),
          KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, good, &wrong));
  KEXPECT(kiln_fft_execute(p, KILN_FFT_FORWARD, KILN_FFT_NORM_BACKWARD, x, &wrong), KILN_ERR_SHAPE);
  ck_assert_ptr_null(y);
  KOK(kiln_fft_execute(p, KILN_FFT_FORWARD, KILN_FFT_NORM_BACKWARD, x, &y));
  ck_assert_int_eq(kiln_tensor_dim(y, 1), 5);
  KOK(kiln_fft_plan_release(p));
  KEXPECT(kiln_fft_execute(p, KILN_FFT_FORWARD, KILN_FFT_NORM_BACKWARD, x, &y),
          KILN_ERR_INVALID_HANDLE);
  kiln_fft_plan *ip = NULL;
  KOK(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &n, 1, KILN_F32, 1, KILN_FFT_BACKEND_AUTO, &ip));
  kiln_tensor *c = NULL, *other = NULL;
  int64_t cs[2] = {8, 2};
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, cs, &c));
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, cs, &other));
  KEXPECT(kiln_fft_execute(ip, KILN_FFT_FORWARD, KILN_FFT_NORM_BACKWARD, c, &other),
          KILN_ERR_INVALID_ARGUMENT);
  kiln_tensor *same = c;
  KOK(kiln_fft_execute(ip, KILN_FFT_FORWARD, KILN_FFT_NORM_BACKWARD, c, &same));
  ck_assert_ptr_eq(same, c);
  KOK(kiln_fft_plan_release(ip));
  (void)cplx;
  kiln_tensor *all[] = {x, xb, xbb, xd, y, wrong, c, other};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    kiln_tensor_release(all[i]);
  KEXPECT(kiln_fft_plan_release((kiln_fft_plan *)x), KILN_ERR_INVALID_HANDLE);
}
END_TEST

/*
 * Limits are checked at plan creation, the same way for every back end and
 * auto: data beyond the device's largest allocation is KILN_ERR_OVERFLOW
 * (clFFT used to accept 2^40 points); clFFT's real-transform bound is
 * KILN_ERR_UNSUPPORTED naming it, and auto then takes VkFFT.
 */
START_TEST(plan_limits)
{
  kiln_context *ctx = harness_ctx();
  const kiln_fft_backend all[3] = {KILN_FFT_BACKEND_CLFFT, KILN_FFT_BACKEND_VKFFT,
                                   KILN_FFT_BACKEND_AUTO};
  const int64_t huge = (int64_t)1 << 40, row = 1024, rows = (int64_t)1 << 30;
  const kiln_fft_kind kinds[3] = {KILN_FFT_C2C, KILN_FFT_R2C, KILN_FFT_C2R};
  for (size_t b = 0; b < 3; b++) {
    if (!have(all[b]))
      continue;
    for (size_t k = 0; k < 3; k++) {
      kiln_fft_plan *p = NULL;
      KEXPECT(kiln_fft_plan_create(ctx, kinds[k], 1, &huge, 1, KILN_F32, (int)k % 2, all[b], &p),
              KILN_ERR_OVERFLOW);
      ck_assert_msg(strstr(kiln_last_error(), "largest allocation"), "%s: %s",
                    kiln_fft_backend_name(all[b]), kiln_last_error());
      /* The same points as a batch of small transforms. */
      KEXPECT(kiln_fft_plan_create(ctx, kinds[k], 1, &row, rows, KILN_F32, 0, all[b], &p),
              KILN_ERR_OVERFLOW);
      ck_assert_ptr_null(p);
    }
  }
  if (!have(KILN_FFT_BACKEND_CLFFT))
    return;
  /* clFFT's own real-transform bounds, where the plan still fits the device's largest
   * allocation (oclgrind's 128 MiB does not hold 2^24 + 1 complex floats: OVERFLOW first). */
  kiln_device_info info;
  KOK(kiln_context_device_info(ctx, &info));
  const int64_t over = (int64_t)1 << 25;
  kiln_fft_plan *p = NULL;
  if (info.max_alloc_bytes >= ((uint64_t)over / 2 + 1) * 8) {
    KEXPECT(kiln_fft_plan_create(ctx, KILN_FFT_R2C, 1, &over, 1, KILN_F32, 0,
                                 KILN_FFT_BACKEND_CLFFT, &p),
            KILN_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(kiln_last_error(), "up to 2^24"), "%s", kiln_last_error());
  }
  if (harness_has_fp64() && info.max_alloc_bytes >= ((uint64_t)1 << 23) * 2 * 16) {
    const int64_t over64 = (int64_t)1 << 23;
    KEXPECT(kiln_fft_plan_create(ctx, KILN_FFT_C2R, 2, (int64_t[]){2, over64}, 1, KILN_F64, 0,
                                 KILN_FFT_BACKEND_CLFFT, &p),
            KILN_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(kiln_last_error(), "up to 2^22"), "%s", kiln_last_error());
  }
  ck_assert_ptr_null(p);
}
END_TEST

/*
 * Some limits only VkFFT's planner knows: on PoCL (64 KiB local memory as
 * kiln reports it to VkFFT) a real transform of odd size beyond one pass,
 * 4375 in f64, 8505 in f32. VkFFT asked directly refuses it naming the
 * limit; auto, having chosen VkFFT, takes clFFT instead of failing.
 */
START_TEST(auto_falls_back)
{
  if (!have(KILN_FFT_BACKEND_CLFFT) || !have(KILN_FFT_BACKEND_VKFFT))
    return;
  kiln_dtype dt = harness_has_fp64() ? KILN_F64 : KILN_F32;
  const int64_t n = dt == KILN_F64 ? 4375 : 8505;
  KOK(kiln_context_set_option(harness_ctx(), KILN_OPT_FFT_BACKEND, KILN_FFT_BACKEND_AUTO));
  for (int k = 1; k <= 2; k++) {
    kiln_fft_plan *p = NULL;
    kiln_status s = kiln_fft_plan_create(harness_ctx(), (kiln_fft_kind)k, 1, &n, 2, dt, 0,
                                         KILN_FFT_BACKEND_VKFFT, &p);
    if (s == KILN_OK) {
      KOK(kiln_fft_plan_release(p)); /* a device with more local memory: nothing to fall from */
      continue;
    }
    ck_assert_int_eq(s, KILN_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(kiln_last_error(), "odd last size"), "%s", kiln_last_error());
    KOK(kiln_fft_plan_create(harness_ctx(), (kiln_fft_kind)k, 1, &n, 2, dt, 0,
                             KILN_FFT_BACKEND_AUTO, &p));
    kiln_fft_backend be;
    KOK(kiln_fft_plan_backend(p, &be));
    ck_assert_int_eq(be, KILN_FFT_BACKEND_CLFFT);
    KOK(kiln_fft_plan_release(p));
  }
  check_real_round_trip(KILN_FFT_BACKEND_AUTO, dt, 1, &n, 2, 0);
}
END_TEST

/* Tensors that start inside a buffer (wrapped with an offset) go through staging. */
START_TEST(offset_tensors)
{
  kiln_context *ctx = harness_ctx();
  cl_context clc;
  KOK(kiln_context_cl_objects(ctx, &clc, NULL, NULL));
  const int64_t n = 16, batch = 2;
  size_t floats = (size_t)(n * batch * 2);
  cl_int err;
  cl_mem big = clCreateBuffer(clc, CL_MEM_READ_WRITE, (floats * 2 + 8) * sizeof(float), NULL, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  int64_t shape[3] = {batch, n, 2};
  kiln_tensor *in = NULL, *out = NULL;
  KOK(kiln_tensor_wrap(ctx, big, 3 * sizeof(float), KILN_F32, 3, shape, &in));
  KOK(kiln_tensor_wrap(ctx, big, (floats + 5) * sizeof(float), KILN_F32, 3, shape, &out));
  double *x = malloc(floats * sizeof *x), *nrm = malloc(2 * sizeof *nrm);
  fill_random(x, floats, 99);
  float *xf = malloc(floats * sizeof *xf);
  for (size_t i = 0; i < floats; i++)
    xf[i] = (float)x[i], x[i] = xf[i];
  KOK(kiln_tensor_upload(in, xf, floats * sizeof *xf));
  norms(x, 2, (size_t)n * 2, nrm);
  for (size_t b = 0; b < 2; b++) {
    if (!have(backends[b]))
      continue;
    kiln_fft_plan *p = NULL, *ip = NULL;
    KOK(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &n, batch, KILN_F32, 0, backends[b], &p));
    KOK(kiln_fft_execute(p, KILN_FFT_FORWARD, KILN_FFT_NORM_BACKWARD, in, &out));
    double *want = malloc(floats * sizeof *want);
    memcpy(want, x, floats * sizeof *want);
    host_dft(want, 2, 1, &n, -1);
    double *got = download(out);
    expect_fft_close("offset out-of-place", got, want, 2, (size_t)n * 2, (size_t)n, nrm, 4,
                     KILN_F32);
    free(got);
    /* In place on the offset output: inverse brings back n * x. */
    KOK(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &n, batch, KILN_F32, 1, backends[b], &ip));
    KOK(kiln_fft_execute(ip, KILN_FFT_INVERSE, KILN_FFT_NORM_BACKWARD, out, NULL));
    got = download(out);
    expect_fft_close("offset in-place", got, x, 2, (size_t)n * 2, (size_t)n, nrm, 2, KILN_F32);
    free(got);
    free(want);
    KOK(kiln_fft_plan_release(p));
    KOK(kiln_fft_plan_release(ip));
  }
  /* The input was not touched, and the floats around the tensors neither. */
  float all[2 * 32 * 2 + 8];
  KOK(kiln_context_finish(ctx));
  cl_command_queue q;
  KOK(kiln_context_cl_objects(ctx, NULL, NULL, &q));
  ck_assert_int_eq(clEnqueueReadBuffer(q, big, CL_TRUE, 0, sizeof all, all, 0, NULL, NULL),
                   CL_SUCCESS);
  ck_assert_int_eq(memcmp(all + 3, xf, floats * sizeof *xf), 0);
  kiln_tensor_release(in);
  kiln_tensor_release(out);
  clReleaseMemObject(big);
  free(x);
  free(xf);
  free(nrm);
}
END_TEST

/* clFFT is torn down after its last plan and set up again for the next; its cache dir is kiln's. */
START_TEST(clfft_lifecycle_and_cache_path)
{
  if (!have(KILN_FFT_BACKEND_CLFFT))
    return;
  int64_t n = 8;
  for (int round = 0; round < 2; round++) {
    kiln_context *ctx = NULL;
    KOK(kiln_context_create(NULL, &ctx));
    kiln_fft_plan *p = NULL;
    KOK(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &n, 1, KILN_F32, 0, KILN_FFT_BACKEND_CLFFT, &p));
    int64_t shape[2] = {8, 2};
    float ones[16];
    for (int i = 0; i < 16; i++)
      ones[i] = i % 2 ? 0.0f : 1.0f;
    kiln_tensor *x = NULL, *y = NULL;
    KOK(kiln_tensor_from_host(ctx, KILN_F32, 2, shape, ones, &x));
    KOK(kiln_fft_execute(p, KILN_FFT_FORWARD, KILN_FFT_NORM_NONE, x, &y));
    float out[16];
    KOK(kiln_tensor_download(y, out, sizeof out));
    ck_assert_float_eq_tol(out[0], 8.0f, 1e-5f);
    for (int i = 1; i < 16; i++)
      ck_assert_float_eq_tol(out[i], 0.0f, 1e-5f);
    kiln_tensor_release(x);
    kiln_tensor_release(y);
    KOK(kiln_fft_plan_release(p));
    /* Releasing the context destroys the cached plan; with no plan left clFFT is torn down. */
    KOK(kiln_context_release(ctx));
  }
  const char *path = getenv("CLFFT_CACHE_PATH"), *kc = getenv("KILN_CACHE_DIR");
  const char *mode = getenv("KILN_CACHE");
  if (mode && (strcmp(mode, "off") == 0 || strcmp(mode, "readonly") == 0)) {
    /* No kernel cache to write to (the oclgrind suite runs with it off): clFFT stays uncached. */
    ck_assert_ptr_null(path);
    return;
  }
  ck_assert_ptr_nonnull(path);
  ck_assert_ptr_nonnull(kc);
  ck_assert_msg(strncmp(path, kc, strlen(kc)) == 0, "CLFFT_CACHE_PATH %s is not under %s", path,
                kc);
}
END_TEST

/* Plans created and run from several threads at once on one context (clFFT serialised inside). */
struct thread_job {
  kiln_fft_backend be;
  int64_t n;
  int ok;
  char error[512];
};

static void *
thread_plan(void *arg)
{
  struct thread_job *j = arg;
  kiln_context *ctx = harness_ctx();
  kiln_fft_plan *p = NULL;
  int64_t shape[2] = {j->n, 2};
  kiln_tensor *x = NULL, *y = NULL;
  float *h = malloc((size_t)j->n * 2 * sizeof *h);
  for (int64_t i = 0; i < 2 * j->n; i++)
    h[i] = i % 2 ? 0.0f : 1.0f;
  j->ok = kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &j->n, 1, KILN_F32, 0, j->be, &p) == KILN_OK &&
          kiln_tensor_from_host(ctx, KILN_F32, 2, shape, h, &x) == KILN_OK &&
          kiln_fft_execute(p, KILN_FFT_FORWARD, KILN_FFT_NORM_NONE, x, &y) == KILN_OK &&
          kiln_tensor_download(y, h, (size_t)j->n * 2 * sizeof *h) == KILN_OK;
  snprintf(j->error, sizeof j->error, "%s", j->ok ? "" : kiln_last_error());
  /* The transform of all ones is n at frequency 0 and 0 elsewhere. */
  for (int64_t i = 0; i < 2 * j->n && j->ok; i++) {
    float want = i == 0 ? (float)j->n : 0.0f;
    if (fabsf(h[i] - want) >= 1e-3f) {
      snprintf(j->error, sizeof j->error, "value %lld is %g, want %g", (long long)i, h[i], want);
      j->ok = 0;
    }
  }
  kiln_tensor_release(x);
  kiln_tensor_release(y);
  kiln_fft_plan_release(p);
  free(h);
  return NULL;
}

START_TEST(plans_from_threads)
{
  /* oclgrind 21.10 runs one kernel at a time per process and asserts
   * (m_kernelInvocation == NULL) when two threads' kernels overlap. */
  if (under_oclgrind())
    return;
  struct thread_job jobs[4];
  pthread_t th[4];
  int nj = 0;
  for (int i = 0; i < 4; i++) {
    kiln_fft_backend be = backends[i % 2];
    if (!have(be))
      continue;
    jobs[nj].be = be;
    jobs[nj].n = 24 + 8 * i; /* distinct plans: every thread compiles */
    jobs[nj].ok = 0;
    ck_assert_int_eq(pthread_create(&th[nj], NULL, thread_plan, &jobs[nj]), 0);
    nj++;
  }
  for (int i = 0; i < nj; i++) {
    pthread_join(th[i], NULL);
    ck_assert_msg(jobs[i].ok, "thread %d (%s, n=%lld) failed: %s", i,
                  kiln_fft_backend_name(jobs[i].be), (long long)jobs[i].n, jobs[i].error);
  }
}
END_TEST

/* ---- VkFFT binaries across processes ---- */

static const int64_t child_size = 40;

/* In the child: same plan, check the result, report the counters through the exit status. */
static int
vkfft_child(void)
{
  kiln_context *ctx = NULL;
  if (kiln_context_create(NULL, &ctx) != KILN_OK)
    return 10;
  kiln_fft_plan *p = NULL;
  if (kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &child_size, 1, KILN_F32, 0,
                           KILN_FFT_BACKEND_VKFFT, &p) != KILN_OK) {
    fprintf(stderr, "child: %s\n", kiln_last_error());
    return 11;
  }
  int64_t shape[2] = {child_size, 2};
  float x[80], y[80];
  for (int i = 0; i < 80; i++)
    x[i] = i % 2 ? 0.0f : 1.0f;
  kiln_tensor *tx = NULL, *ty = NULL;
  if (kiln_tensor_from_host(ctx, KILN_F32, 2, shape, x, &tx) != KILN_OK ||
      kiln_fft_execute(p, KILN_FFT_FORWARD, KILN_FFT_NORM_NONE, tx, &ty) != KILN_OK ||
      kiln_tensor_download(ty, y, sizeof y) != KILN_OK)
    return 12;
  int ok = fabsf(y[0] - 40.0f) < 1e-4f;
  for (int i = 1; i < 80; i++)
    ok = ok && fabsf(y[i]) < 1e-4f;
  kiln_fft_stats st;
  kiln_fft_stats_get(ctx, &st);
  kiln_tensor_release(tx);
  kiln_tensor_release(ty);
  kiln_fft_plan_release(p);
  kiln_context_release(ctx);
  if (!ok)
    return 13;
  fprintf(stderr, "child: vkfft binary hits %llu rejects %llu stores %llu unusable %llu\n",
          (unsigned long long)st.vkfft_binary_hits, (unsigned long long)st.vkfft_binary_rejects,
          (unsigned long long)st.vkfft_binary_stores, (unsigned long long)st.vkfft_binary_unusable);
  /* 0: loaded from the store; 1: the store was refused and rebuilt; 2: nothing found. */
  return st.vkfft_binary_hits ? 0 : st.vkfft_binary_rejects ? 1 : 2;
}

START_TEST(vkfft_binaries_second_process)
{
  if (!have(KILN_FFT_BACKEND_VKFFT))
    return;
  kiln_device_info info;
  KOK(kiln_context_device_info(harness_ctx(), &info));
  int reloadable = strstr(info.platform_name, "NVIDIA") != NULL;
  char *dir = harness_tempdir();
  const char *old = getenv("KILN_CACHE_DIR");
  char *saved = old ? strdup(old) : NULL;
  setenv("KILN_CACHE_DIR", dir, 1);
  /* Default policy on this platform: store only where VkFFT can reload. */
  kiln_context *ctx = NULL;
  KOK(kiln_context_create(NULL, &ctx));
  kiln_fft_plan *p = NULL;
  KOK(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &child_size, 1, KILN_F32, 0,
                           KILN_FFT_BACKEND_VKFFT, &p));
  kiln_fft_stats st;
  KOK(kiln_fft_stats_get(ctx, &st));
  ck_assert_uint_eq(st.vkfft_binary_stores, (uint64_t)reloadable);
  KOK(kiln_fft_plan_release(p));
  KOK(kiln_context_release(ctx));
  /*
   * Forced on. NVIDIA: the binaries stored above load in a new context (a disk
   * hit). Elsewhere (PoCL): VkFFT's binaries come out cut by its C-string
   * copy, so kiln stores nothing and says so.
   */
  setenv("KILN_VKFFT_BINARY_CACHE", "on", 1);
  KOK(kiln_context_create(NULL, &ctx));
  KOK(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &child_size, 1, KILN_F32, 0,
                           KILN_FFT_BACKEND_VKFFT, &p));
  KOK(kiln_fft_stats_get(ctx, &st));
  if (reloadable) {
    ck_assert_uint_eq(st.vkfft_binary_hits, 1);
  } else {
    ck_assert_uint_eq(st.vkfft_binary_stores, 0);
    ck_assert_uint_eq(st.vkfft_binary_unusable, 1);
  }
  KOK(kiln_fft_plan_release(p));
  KOK(kiln_context_release(ctx));
  /* A second process with the same cache directory: a hit on NVIDIA, a clean miss elsewhere. */
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  ck_assert_int_gt(len, 0);
  self[len] = 0;
  char *args[] = {self, "--vkfft-child", NULL};
  pid_t pid;
  ck_assert_int_eq(posix_spawn(&pid, self, NULL, NULL, args, environ), 0);
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFEXITED(status));
  int code = WEXITSTATUS(status);
  ck_assert_msg(code == (reloadable ? 0 : 2), "child exit %d (0 hit, 1 refused, 2 miss, >9 error)",
                code);
  unsetenv("KILN_VKFFT_BINARY_CACHE");
  if (saved)
    setenv("KILN_CACHE_DIR", saved, 1);
  else
    unsetenv("KILN_CACHE_DIR");
  free(saved);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/*
 * Aliasing: an out-of-place plan refuses an output one element before or
 * after its input (and the very same bytes), leaving every byte alone.
 */
START_TEST(overlapping_outputs)
{
  kiln_context *ctx = harness_ctx();
  const int64_t n = 16, batch = 2, shape[3] = {batch, n, 2};
  float x[2 * 16 * 2];
  for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
    x[i] = (float)(i % 7) - 3.0f;
  for (size_t b = 0; b < 2; b++) {
    if (!have(backends[b]))
      continue;
    kiln_fft_plan *p = NULL;
    KOK(kiln_fft_plan_create(ctx, KILN_FFT_C2C, 1, &n, batch, KILN_F32, 0, backends[b], &p));
    for (size_t shift = 0; shift <= 4; shift += 4) {
      for (int out_first = 1; out_first >= 0; out_first--) {
        kiln_tensor *in, *out, *all;
        harness_overlap_pair(KILN_F32, 3, shape, x, KILN_F32, 3, shape, shift, out_first, &in, &out,
                             &all);
        KEXPECT_REFUSED_UNTOUCHED(
            all, kiln_fft_execute(p, KILN_FFT_FORWARD, KILN_FFT_NORM_BACKWARD, in, &out));
        kiln_tensor_release(in);
        kiln_tensor_release(out);
        kiln_tensor_release(all);
      }
    }
    KOK(kiln_fft_plan_release(p));
  }
}
END_TEST

static Suite *
fft_suite(void)
{
  Suite *s = suite_create("fft");
  TCase *tc = tcase_create("fft");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, clfft_lifecycle_and_cache_path); /* first: no clFFT plan exists yet */
  tcase_add_test(tc, c2c_1d_sizes);
  tcase_add_test(tc, c2c_2d_3d_batched);
  tcase_add_test(tc, c2c_in_place);
  tcase_add_test(tc, real_round_trips);
  tcase_add_test(tc, real_in_place);
  tcase_add_test(tc, prime_sizes_bluestein);
  tcase_add_test(tc, plan_cache_hits_and_bound);
  tcase_add_test(tc, bad_input);
  tcase_add_test(tc, plan_limits);
  tcase_add_test(tc, auto_falls_back);
  tcase_add_test(tc, offset_tensors);
  tcase_add_test(tc, overlapping_outputs);
  tcase_add_test(tc, plans_from_threads);
  if (!harness_small()) /* the disk cache across processes: no kernel of its own */
    tcase_add_test(tc, vkfft_binaries_second_process);
  suite_add_tcase(s, tc);
  /* Many small plans: its own case, so CK_RUN_CASE=c2r runs it alone. */
  TCase *c2r = tcase_create("c2r");
  tcase_set_timeout(c2r, 900);
  tcase_add_test(c2r, c2r_ignores_dc_nyquist_imag);
  tcase_add_test(c2r, c2r_ignores_dc_nyquist_imag_in_place_and_nd);
  suite_add_tcase(s, c2r);
  TCase *cplx = tcase_create("complex");
  tcase_set_timeout(cplx, 600);
  tcase_add_test(cplx, complex_tensors);
  suite_add_tcase(s, cplx);
  return s;
}

int
main(int argc, char **argv)
{
  if (argc == 2 && strcmp(argv[1], "--vkfft-child") == 0)
    return vkfft_child();
  if (!kiln_fft_backend_available(KILN_FFT_BACKEND_AUTO)) {
    fprintf(stderr, "built without clFFT and VkFFT: skipping\n");
    return 77;
  }
  return harness_main(fft_suite(), 1);
}
