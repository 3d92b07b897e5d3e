/*
 * Host data of the suites that check float ops against double references (test_nn_train,
 * test_nn_attention, test_nn_conv, test_stats): a xorshift stream of uniform doubles,
 * rounding to the device dtype (f32, f64, f16, bf16), and upload/download as doubles
 * (download takes i64 results too, such as histogram counts). Static inline: each suite gets
 * its own stream, seeded the same.
 */
#ifndef KILN_TESTS_NN_HOSTDATA_H
#define KILN_TESTS_NN_HOSTDATA_H

#include <stdint.h>
#include <stdlib.h>

#include "expect_close.h"
#include "harness.h"

static uint64_t rng = 88172645463325252ull;

static inline double
urand(double lo, double hi)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

static inline double *
rand_vec(size_t n, double lo, double hi)
{
  double *v = malloc((n ? n : 1) * sizeof *v);
  for (size_t i = 0; i < n; i++)
    v[i] = urand(lo, hi);
  return v;
}

static inline uint64_t
numel(size_t nd, const int64_t *shape)
{
  uint64_t n = 1;
  for (size_t i = 0; i < nd; i++)
    n *= (uint64_t)shape[i];
  return n;
}

/* The 2-byte float dtypes, stored as bits and computed with in f32. */
#define NN_HALF(dt) ((dt) == KILN_F16 || (dt) == KILN_BF16)

/* f16 and bf16 bits of v (rounded to nearest even, kiln/dtype.h), and back. */
static inline uint16_t
nhd_to_half(kiln_dtype dt, double v)
{
  return dt == KILN_BF16 ? kiln_bf16_from_f64(v) : kiln_f16_from_f64(v);
}

static inline double
nhd_from_half(kiln_dtype dt, uint16_t h)
{
  return dt == KILN_BF16 ? kiln_bf16_to_f32(h) : kiln_f16_to_f32(h);
}

/* v rounded to dt in place (the reference sees what the device sees). */
static inline void
round_to(kiln_dtype dt, double *v, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    if (dt == KILN_F32)
      v[i] = (double)(float)v[i];
    else if (NN_HALF(dt))
      v[i] = nhd_from_half(dt, nhd_to_half(dt, v[i]));
  }
}

static inline kiln_tensor *
up(kiln_dtype dt, size_t nd, const int64_t *shape, const double *v)
{
  uint64_t n = numel(nd, shape);
  void *h = malloc((n ? n : 1) * 8);
  for (uint64_t i = 0; i < n; i++) {
    if (dt == KILN_F32)
      ((float *)h)[i] = (float)v[i];
    else if (NN_HALF(dt))
      ((uint16_t *)h)[i] = nhd_to_half(dt, v[i]);
    else
      ((double *)h)[i] = v[i];
  }
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_from_host(harness_ctx(), dt, nd, shape, h, &t));
  free(h);
  return t;
}

static inline double *
down(const kiln_tensor *t)
{
  uint64_t n = kiln_tensor_numel(t);
  void *h = malloc(n * 8 + 8);
  KOK(kiln_tensor_download(t, h, kiln_tensor_nbytes(t)));
  double *d = malloc(n * sizeof *d + 8);
  kiln_dtype dt = kiln_tensor_dtype(t);
  for (uint64_t i = 0; i < n; i++)
    d[i] = dt == KILN_F32   ? (double)((float *)h)[i]
           : NN_HALF(dt)    ? nhd_from_half(dt, ((uint16_t *)h)[i])
           : dt == KILN_I64 ? (double)((int64_t *)h)[i]
                            : ((double *)h)[i];
  free(h);
  return d;
}

/* t read back as doubles, compared with want as expect_close does. */
static inline void
expect_tensor(const kiln_tensor *t, const double *want, double tol, const char *what)
{
  double *got = down(t);
  expect_close(got, want, kiln_tensor_numel(t), tol, what);
  free(got);
}

#endif
