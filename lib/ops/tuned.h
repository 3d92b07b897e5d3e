/*
 * Entry points of the reduce and scan families that take explicit launch
 * parameters, for the autotuner and for tests that sweep the tunables. The
 * public functions call these with NULL (the device defaults of
 * lib/runtime/launch_params.c). Arguments and statuses otherwise as in
 * include/kiln/reduce.h; invalid parameters are KILN_ERR_INVALID_ARGUMENT.
 */
#ifndef KILN_OPS_TUNED_H
#define KILN_OPS_TUNED_H

#include "kiln/reduce.h"
#include "runtime/launch_params.h"

kiln_status kiln__reduce_tuned(kiln_context *ctx, kiln_reduce_op op, const kiln_tensor *x,
                               const int64_t *axes, size_t naxes, int keepdims,
                               const kiln_reduce_options *opts, const kiln__launch_params *lp,
                               kiln_tensor **out);

kiln_status kiln__argreduce_tuned(kiln_context *ctx, kiln_reduce_op op, const kiln_tensor *x,
                                  const int64_t *axes, size_t naxes, int keepdims,
                                  const kiln_reduce_options *opts,
                                  const kiln__launch_params *lp, kiln_tensor **values,
                                  kiln_tensor **indices);

kiln_status kiln__scan_tuned(kiln_context *ctx, kiln_scan_op op, const kiln_tensor *x,
                             int64_t axis, const kiln_scan_options *opts,
                             const kiln__launch_params *lp, kiln_tensor **out);

kiln_status kiln__scan_indexed_tuned(kiln_context *ctx, kiln_scan_op op, const kiln_tensor *x,
                                     int64_t axis, const kiln_scan_options *opts,
                                     const kiln__launch_params *lp, kiln_tensor **values,
                                     kiln_tensor **indices);

#endif
