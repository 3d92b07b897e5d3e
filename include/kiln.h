/*
 * kiln: a portable OpenCL compute library.
 *
 * This umbrella header declares the whole API. Everything is stable except
 * kiln/cache.h, kiln/tune.h and kiln/profile.h, which are experimental: their
 * shape may change in a minor release (docs/stability.md). See README.md for
 * an example and docs/ for the op semantics, the kernel cache and the
 * environment variables.
 */
#ifndef KILN_H
#define KILN_H

#include "kiln/status.h"
#include "kiln/log.h"
#include "kiln/dtype.h"
#include "kiln/context.h"
#include "kiln/cache.h"
#include "kiln/tensor.h"
#include "kiln/elementwise.h"
#include "kiln/complex.h"
#include "kiln/layout.h"
#include "kiln/create.h"
#include "kiln/index.h"
#include "kiln/random.h"
#include "kiln/reduce.h"
#include "kiln/scan.h"
#include "kiln/blas.h"
#include "kiln/fft.h"
#include "kiln/nn.h"
#include "kiln/stats.h"
#include "kiln/linalg.h"
#include "kiln/sort.h"
#include "kiln/linalg_spectral.h"
#include "kiln/nn_conv.h"
#include "kiln/nn_optim.h"
#include "kiln/nn_attention.h"
#include "kiln/kernel.h"
#include "kiln/expr.h"
#include "kiln/profile.h"
#include "kiln/tune.h"
#include "kiln/provider.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Library version as "MAJOR.MINOR.PATCH". */
KILN_API const char *kiln_version(void);

#ifdef __cplusplus
}
#endif
#endif
