/*
 * Host data of the suites that check f32/f64 ops against double references (test_nn_train,
 * test_nn_attention, test_stats): a xorshift stream of uniform doubles, rounding to the
 * device dtype, and upload/download as doubles (download takes i64 results too, such as
 * histogram counts). Static inline: each suite gets its own stream, seeded the same.
 */
#ifndef KILN_TESTS_NN_HOSTDATA_H
#define KILN_TESTS_NN_HOSTDATA_H

#include <stdint.h>
#include <stdlib.h>

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

/* v rounded to dt in place (the reference sees what the device sees). */
static inline void
round_to(kiln_dtype dt, double *v, size_t n)
{
  if (dt == KILN_F32)
    for (size_t i = 0; i < n; i++)
      v[i] = (double)(float)v[i];
}

static inline kiln_tensor *
up(kiln_dtype dt, size_t nd, const int64_t *shape, const double *v)
{
  uint64_t n = numel(nd, shape);
  void *h = malloc((n ? n : 1) * 8);
  for (uint64_t i = 0; i < n; i++) {
    if (dt == KILN_F32)
      ((float *)h)[i] = (float)v[i];
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
           : dt == KILN_I64 ? (double)((int64_t *)h)[i]
                            : ((double *)h)[i];
  free(h);
  return d;
}

#endif
