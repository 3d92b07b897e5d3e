/*
 * Kernel profiling: the device time of every kernel kiln enqueues on a
 * context between kiln_profile_begin() and kiln_profile_end(), measured with
 * OpenCL profiling events. Used by `kiln bench` and the autotuner; useful to
 * separate device time from launch overhead in an application.
 *
 * Experimental API (docs/stability.md): its shape may change in a minor
 * release, never in a patch release; it has no provider-table slots.
 */
#ifndef KILN_PROFILE_H
#define KILN_PROFILE_H

#include <stdint.h>

#include "kiln/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What kiln_profile_end() reports. */
typedef struct kiln_profile {
  uint64_t kernels;   /**< kernels enqueued (and completed) while profiling; one call into
                           CLBlast, clFFT or VkFFT counts as one, timed from a marker
                           enqueued before it to one enqueued after it */
  uint64_t device_ns; /**< sum over kernels of (end - start) on the device */
  uint64_t span_ns;   /**< first kernel's start to last kernel's end */
} kiln_profile;

/**
 * Starts recording (and discards an earlier unfinished recording). Copies
 * and fills done with clEnqueueCopyBuffer/FillBuffer are not kernels and are
 * not counted.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_UNSUPPORTED when the
 *         context wraps a caller's queue created without profiling.
 */
KILN_API kiln_status kiln_profile_begin(kiln_context *ctx);

/**
 * Waits for the recorded kernels, stops recording and reports their times.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (NULL
 *         out, or no recording in progress); KILN_ERR_OPENCL if a kernel failed.
 */
KILN_API kiln_status kiln_profile_end(kiln_context *ctx, kiln_profile *out);

#ifdef __cplusplus
}
#endif
#endif
