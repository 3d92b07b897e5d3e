/*
 * The op families' descriptors (runtime/family.h), one per lib/ops/<family>.c.
 * A family's own code reaches its per-context state with
 * kiln__family_state(ctx, &kiln__<family>_family).
 */
#ifndef KILN_OPS_FAMILIES_H
#define KILN_OPS_FAMILIES_H

#include "runtime/family.h"

extern const struct kiln__family kiln__elementwise_family;
extern const struct kiln__family kiln__reduce_family;
extern const struct kiln__family kiln__scan_family;
extern const struct kiln__family kiln__layout_family;
extern const struct kiln__family kiln__index_family;
extern const struct kiln__family kiln__create_family;
extern const struct kiln__family kiln__random_family;
extern const struct kiln__family kiln__blas_family;
extern const struct kiln__family kiln__xgemm_family;
extern const struct kiln__family kiln__cast_tune_family;
extern const struct kiln__family kiln__copy_tune_family;
extern const struct kiln__family kiln__random_tune_family;
extern const struct kiln__family kiln__fft_family;
extern const struct kiln__family kiln__nn_family;
extern const struct kiln__family kiln__stats_family;
extern const struct kiln__family kiln__linalg_family;
extern const struct kiln__family kiln__sort_family;
extern const struct kiln__family kiln__linalg_spectral_family;
extern const struct kiln__family kiln__nn_conv_family;
extern const struct kiln__family kiln__nn_train_family;

#endif
