/*
 * Every convolution route (and implicit-GEMM tile) on one shape, forward, backward-data and
 * backward-weight, forced through the `conv` tuner family (kiln_tune_override): the figures
 * that choose the built-in defaults (docs/nn_conv.md, bench/h200/conv.sh).
 *
 * Shape (default the reference layer): x [N, C, H, H], w [K, C / g, k, k], padding
 * k / 2, stride 1. Each (dtype, candidate, pass) runs once untimed (builds, first launches),
 * then --reps times; reported is the median of the host clock around the call and
 * kiln_context_finish(), in ms and TFLOP/s (2 N K C/g k^2 H^2 per pass), and the largest
 * difference from the forward of route 2 (im2col + GEMM), relative to its largest magnitude.
 * One JSON object per line.
 *
 * usage: conv_routes [--reps R] [--n N] [--c C] [--k K] [--hw H] [--ks k] [--groups g]
 *                    [--dtype f32|f64|f16|bf16|both] [--only 'route=4 tile=1;default;...']
 *                    [--device SELECTOR]
 * --only takes a list of candidates separated by ';' (default: the built-in choice).
 * f16 and bf16 have no route 2 of their own (it runs as route 4, docs/nn_conv.md): their
 * reference is the default's forward.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln.h"

static double
now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int
cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The candidates, most telling first (a timeout keeps what is printed): the built-in choice
 * (no override), route 4 with each tile, then routes 2, 3 and 1. */
static const char *const candidates[] = {
    NULL,      "route=4 tile=3", "route=4 tile=2", "route=4 tile=4", "route=4 tile=1",
    "route=2", "route=3",        "route=1",
};
#define NCAND (sizeof candidates / sizeof candidates[0])

enum { FWD, BWD_DATA, BWD_WEIGHT, NPASS };
static const char *const pass_names[NPASS] = {"forward", "backward_data", "backward_weight"};

static kiln_status
run_pass(kiln_context *ctx, int pass, kiln_tensor *x, kiln_tensor *w, kiln_tensor *gy,
         const kiln_conv_desc *d, kiln_tensor **out)
{
  if (pass == FWD)
    return kiln_conv(ctx, x, w, NULL, d, out);
  if (pass == BWD_DATA)
    return kiln_conv_backward(ctx, gy, x, w, d, out, NULL, NULL);
  return kiln_conv_backward(ctx, gy, x, w, d, NULL, out, NULL);
}

/* A tensor of uniform values in [-1, 1). */
static kiln_status
make(kiln_context *ctx, kiln_dtype dt, const int64_t *shape, kiln_tensor **t)
{
  kiln_status s = kiln_tensor_create(ctx, dt, 4, shape, t);
  if (s == KILN_OK)
    s = kiln_random_uniform(ctx, *t, -1.0, 1.0);
  return s;
}

static double *
download(kiln_tensor *t, size_t *n)
{
  *n = (size_t)kiln_tensor_numel(t);
  double *v = malloc((*n ? *n : 1) * sizeof *v);
  kiln_dtype dt = kiln_tensor_dtype(t);
  if (dt == KILN_F64) {
    kiln_tensor_download(t, v, *n * sizeof *v);
    return v;
  }
  size_t esz = dt == KILN_F32 ? 4 : 2;
  unsigned char *h = malloc((*n ? *n : 1) * esz);
  kiln_tensor_download(t, h, *n * esz);
  for (size_t i = 0; i < *n; i++) {
    if (dt == KILN_F32) {
      float f;
      memcpy(&f, h + 4 * i, 4);
      v[i] = f;
    } else {
      uint16_t b;
      memcpy(&b, h + 2 * i, 2);
      v[i] = dt == KILN_F16 ? (double)kiln_f16_to_f32(b) : (double)kiln_bf16_to_f32(b);
    }
  }
  free(h);
  return v;
}

/* candidate (NULL: "default") is one of the ';'-separated entries of list. */
static int
listed(const char *list, const char *candidate)
{
  const char *name = candidate ? candidate : "default";
  size_t len = strlen(name);
  for (const char *p = list; *p;) {
    size_t n = strcspn(p, ";");
    if (n == len && !strncmp(p, name, len))
      return 1;
    p += n + (p[n] == ';');
  }
  return 0;
}

int
main(int argc, char **argv)
{
  int reps = 10, both = 1;
  long long N = 64, C = 64, K = 64, H = 56, ks = 3, groups = 1;
  const char *device = NULL, *only = NULL;
  kiln_dtype one = KILN_F32;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      fprintf(stderr, "conv_routes: %s needs a value\n", a);
      return 2;
    }
    if (!strcmp(a, "--reps"))
      reps = atoi(v);
    else if (!strcmp(a, "--n"))
      N = atoll(v);
    else if (!strcmp(a, "--c"))
      C = atoll(v);
    else if (!strcmp(a, "--k"))
      K = atoll(v);
    else if (!strcmp(a, "--hw"))
      H = atoll(v);
    else if (!strcmp(a, "--ks"))
      ks = atoll(v);
    else if (!strcmp(a, "--groups"))
      groups = atoll(v);
    else if (!strcmp(a, "--only"))
      only = v;
    else if (!strcmp(a, "--device"))
      device = v;
    else if (!strcmp(a, "--dtype")) {
      both = !strcmp(v, "both");
      one = !strcmp(v, "f64")    ? KILN_F64
            : !strcmp(v, "f16")  ? KILN_F16
            : !strcmp(v, "bf16") ? KILN_BF16
                                 : KILN_F32;
    } else {
      fprintf(stderr, "conv_routes: unknown option %s\n", a);
      return 2;
    }
    i++;
  }
  if (reps < 1 || N < 1 || C < 1 || K < 1 || H < 1 || ks < 1 || groups < 1 || C % groups ||
      K % groups) {
    fprintf(stderr, "conv_routes: bad sizes\n");
    return 2;
  }
  kiln_context *ctx = NULL;
  if (kiln_context_create(device, &ctx) != KILN_OK) {
    fprintf(stderr, "conv_routes: no device: %s\n", kiln_last_error());
    return 77;
  }
  kiln_conv_desc d = {.nd = 2, .padding = {ks / 2, ks / 2}, .groups = groups};
  double flops = 2.0 * (double)N * (double)K * (double)(C / groups) * (double)(ks * ks) *
                 (double)(H + 2 * (ks / 2) - ks + 1) * (double)(H + 2 * (ks / 2) - ks + 1);
  double *times = malloc((size_t)reps * sizeof *times);
  for (int di = 0; di < 2; di++) {
    kiln_dtype dt = both ? (di ? KILN_F64 : KILN_F32) : one;
    if (!both && di)
      break;
    int64_t xs[4] = {N, C, H, H}, ws[4] = {K, C / groups, ks, ks};
    kiln_tensor *x = NULL, *w = NULL, *gy = NULL, *ref[NPASS] = {NULL, NULL, NULL};
    if (make(ctx, dt, xs, &x) != KILN_OK || make(ctx, dt, ws, &w) != KILN_OK) {
      fprintf(stderr, "conv_routes: %s\n", kiln_last_error());
      continue;
    }
    int64_t ys[4] = {N, K, H + 2 * (ks / 2) - ks + 1, H + 2 * (ks / 2) - ks + 1};
    if (make(ctx, dt, ys, &gy) != KILN_OK) {
      fprintf(stderr, "conv_routes: %s\n", kiln_last_error());
      continue;
    }
    /* References: route 2 (f16 and bf16: the default). */
    int half = dt == KILN_F16 || dt == KILN_BF16;
    kiln_tune_override(ctx, "conv", dt, NULL, half ? NULL : "route=2");
    for (int p = 0; p < NPASS; p++)
      if (run_pass(ctx, p, x, w, gy, &d, &ref[p]) != KILN_OK)
        fprintf(stderr, "conv_routes: reference %s: %s\n", pass_names[p], kiln_last_error());
    double *refv[NPASS];
    size_t refn[NPASS];
    double refmax[NPASS];
    for (int p = 0; p < NPASS; p++) {
      refv[p] = ref[p] ? download(ref[p], &refn[p]) : NULL;
      refmax[p] = 0;
      for (size_t i = 0; refv[p] && i < refn[p]; i++)
        refmax[p] = fmax(refmax[p], fabs(refv[p][i]));
    }
    for (size_t c = 0; c < NCAND; c++) {
      if (only ? !listed(only, candidates[c])
               : half && candidates[c] && strncmp(candidates[c], "route=4", 7))
        continue;
      if (kiln_tune_override(ctx, "conv", dt, NULL, candidates[c]) != KILN_OK) {
        fprintf(stderr, "conv_routes: override %s: %s\n", candidates[c], kiln_last_error());
        continue;
      }
      for (int p = 0; p < NPASS; p++) {
        kiln_tensor *out = NULL;
        kiln_status s = run_pass(ctx, p, x, w, gy, &d, &out);
        if (s == KILN_OK)
          s = kiln_context_finish(ctx);
        double err = NAN;
        if (s == KILN_OK && refv[p]) {
          size_t n;
          double *v = download(out, &n);
          err = 0;
          for (size_t i = 0; i < n && i < refn[p]; i++)
            err = fmax(err, fabs(v[i] - refv[p][i]));
          err /= refmax[p] > 0 ? refmax[p] : 1;
          free(v);
        }
        for (int r = 0; s == KILN_OK && r < reps; r++) {
          double t0 = now();
          s = run_pass(ctx, p, x, w, gy, &d, &out);
          if (s == KILN_OK)
            s = kiln_context_finish(ctx);
          times[r] = now() - t0;
        }
        if (s != KILN_OK) {
          printf(
              "{\"dtype\": \"%s\", \"candidate\": \"%s\", \"pass\": \"%s\", \"error\": \"%s\"}\n",
              kiln_dtype_name(dt), candidates[c] ? candidates[c] : "default", pass_names[p],
              kiln_status_name(s));
          kiln_tensor_release(out);
          continue;
        }
        qsort(times, (size_t)reps, sizeof *times, cmp_double);
        double ms = times[reps / 2] * 1e3;
        printf(
            "{\"dtype\": \"%s\", \"shape\": \"[%lld,%lld,%lld,%lld]*[%lld,%lld,%lld,%lld] g%lld\", "
            "\"candidate\": \"%s\", \"pass\": \"%s\", \"ms\": %.4f, \"min_ms\": %.4f, "
            "\"tflops\": %.2f, \"rel_err\": %.3g}\n",
            kiln_dtype_name(dt), N, C, H, H, K, C / groups, ks, ks, groups,
            candidates[c] ? candidates[c] : "default", pass_names[p], ms, times[0] * 1e3,
            flops / (ms * 1e-3) / 1e12, err);
        fflush(stdout);
        kiln_tensor_release(out);
      }
    }
    kiln_tune_override(ctx, "conv", dt, NULL, NULL);
    for (int p = 0; p < NPASS; p++) {
      free(refv[p]);
      kiln_tensor_release(ref[p]);
    }
    kiln_tensor_release(x);
    kiln_tensor_release(w);
    kiln_tensor_release(gy);
  }
  free(times);
  kiln_context_release(ctx);
  return 0;
}
