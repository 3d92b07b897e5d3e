/*
 * Comparisons of device results read back as doubles with a double reference, for the
 * suites that check f32/f64 ops against host references (test_stats and test_nn, test_nn_train
 * and test_nn_attention through nn_hostdata.h; test_nn_conv keeps copies).
 * close_to: NaN matches only NaN, an infinity only the same infinity, else
 * |got - want| <= tol * (1 + |want|).
 */
#ifndef KILN_TESTS_EXPECT_CLOSE_H
#define KILN_TESTS_EXPECT_CLOSE_H

#include <math.h>
#include <stdint.h>

#include "harness.h"

/* ck_assert_msg records a checkpoint even when it passes (a write and flush per call with
 * CK_FORK=no); comparisons of many elements use this instead. */
#define EXPECT(cond, ...)        \
  do {                           \
    if (!(cond))                 \
      ck_abort_msg(__VA_ARGS__); \
  } while (0)

static inline int
close_to(double got, double want, double tol)
{
  if (isnan(want))
    return isnan(got);
  if (isinf(want))
    return got == want;
  return fabs(got - want) <= tol * (1 + fabs(want));
}

static inline void
expect_close(const double *got, const double *want, uint64_t n, double tol, const char *what)
{
  for (uint64_t i = 0; i < n; i++)
    EXPECT(close_to(got[i], want[i], tol), "%s: element %llu is %.17g, expected %.17g", what,
           (unsigned long long)i, got[i], want[i]);
}

#endif
