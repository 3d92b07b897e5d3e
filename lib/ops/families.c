/*
 * The family table the runtime walks (runtime/family.h): one line per op family. The order
 * of the tuned ones is the order kiln_tune_family_get() lists them in.
 */
#include "ops/families.h"

const struct kiln__family *const kiln__families[] = {
    &kiln__elementwise_family,
    &kiln__reduce_family,
    &kiln__scan_family,
    &kiln__layout_family,
    &kiln__index_family,
    &kiln__create_family,
    &kiln__random_family,
    &kiln__fft_family,
    &kiln__blas_family,
    &kiln__nn_family,
    &kiln__xgemm_family,
    &kiln__stats_family,
    &kiln__linalg_family,
    &kiln__sort_family,
    &kiln__linalg_spectral_family,
    &kiln__nn_conv_family,
    &kiln__nn_train_family,
    &kiln__cast_tune_family,
    &kiln__copy_tune_family,
    &kiln__random_tune_family,
    NULL,
};

_Static_assert(sizeof kiln__families / sizeof kiln__families[0] - 1 <= KILN__FAMILY_SLOTS,
               "more families than KILN__FAMILY_SLOTS");
