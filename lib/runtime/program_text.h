/*
 * Programs from caller-supplied OpenCL C text (user kernels, fused
 * expressions), registered and cached next to the embedded sources.
 */
#ifndef KILN_RUNTIME_PROGRAM_TEXT_H
#define KILN_RUNTIME_PROGRAM_TEXT_H

#include <stddef.h>

#include "runtime/runtime.h"

/* Longest label kept (bytes); longer ones are cut, control characters become spaces. */
#define KILN__TEXT_LABEL_MAX 200

/*
 * The kernel `kernel` of caller-supplied OpenCL C `text` (not an embedded .cl source) built with
 * `options`. Programs are kept in the context's program registry keyed by (hash of text, options),
 * and go through the disk cache like embedded sources (key includes the text hash, device, driver,
 * options); `label` is what `kiln cache list` shows for the entry (expression text, caller's name).
 * Called with the context lock held (kiln__ctx_lock). On a compile failure: KILN_ERR_BUILD with the
 * build log (and line numbers) in the message. The kernel is owned by the context.
 *
 * label may be NULL ("text"); options may be NULL (""). On the disk the entry's source name
 * is "text:<label>", so the label is part of the entry's key: the same text under two labels
 * is two entries (and one program in the registry). Text programs hold one kernel or a few,
 * so a miss stores its binary under the auto store policy on every platform.
 * Returns KILN_OK; KILN_ERR_INVALID_ARGUMENT (NULL or empty text or kernel name, a NUL inside
 * text, no kernel of that name in the program); KILN_ERR_BUILD; KILN_ERR_HOST_MEMORY;
 * KILN_ERR_OPENCL or KILN_ERR_DEVICE_MEMORY from the driver.
 */
kiln_status kiln__text_kernel_get(const char *op, kiln_context *ctx, const char *label,
                                  const char *text, size_t text_len, const char *options,
                                  const char *kernel, cl_kernel *out);

/*
 * Compiles the fused expression `text` (the expression family's text form)
 * for ctx, through the registry and the disk cache, labelled `label`: set by
 * the expression family when it is linked, NULL otherwise. Used by
 * kiln_user_kernel_warm_file() for its [expr NAME] sections. Called without
 * the context lock. Returns what compiling the expression returns.
 */
extern kiln_status (*kiln__warm_expr_hook)(kiln_context *, const char *label, const char *text);

/* Test hook: text programs compiled from source (not loaded from the disk) in this process. */
uint64_t kiln__text_compiles(void);

#endif
