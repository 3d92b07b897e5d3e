/* Test hooks of the user kernels (lib/ops/user_kernel.c). */
#ifndef KILN_OPS_USER_KERNEL_INTERNAL_H
#define KILN_OPS_USER_KERNEL_INTERNAL_H

/*
 * The work split of reductions and scans created from now on: -1 the
 * device's (runs of contiguous elements per work-item on CPU devices,
 * interleaved items and local-memory tiles on GPUs), 0 always the GPUs', 1
 * always the CPUs'. Lets a suite on one device check both. Not thread-safe.
 */
extern int kiln__user_kernel_blocked_override;

#endif
