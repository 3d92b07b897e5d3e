/*
 * Turning an embedded source into a built cl_program: the one place where
 * kiln calls the OpenCL compiler, and the seam where the disk cache sits.
 */
#ifndef KILN_RUNTIME_BUILD_H
#define KILN_RUNTIME_BUILD_H

#include "kiln_cl_sources.h"
#include "runtime/runtime.h"

const struct kiln__cl_source *kiln__cl_source_find(const char *name);

/* Builds src with options for ctx's device. On failure the message carries the build log. */
kiln_status kiln__program_build(const char *op, kiln_context *ctx,
                                const struct kiln__cl_source *src, const char *options,
                                cl_program *out);

#endif
