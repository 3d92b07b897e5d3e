/*
 * Turning an embedded source into a built cl_program: the one place where
 * kiln calls the OpenCL compiler, and the seam where the disk cache sits.
 */
#ifndef KILN_RUNTIME_BUILD_H
#define KILN_RUNTIME_BUILD_H

#include "kiln_cl_sources.h"
#include "runtime/disk_cache.h"
#include "runtime/runtime.h"

const struct kiln__cl_source *kiln__cl_source_find(const char *name);

/* Flags of kiln__program_build_locked. */
enum {
  /* Store the binary whatever the store policy (warm-up). */
  KILN__BUILD_STORE_NOW = 1u,
  /* A program of one kernel (or a few): asking the driver for its binary is cheap even on
   * PoCL, so a miss stores it under the auto policy too. */
  KILN__BUILD_SMALL = 2u,
};

/* What a build did, for the warm-up's totals. */
struct kiln__build_outcome {
  int from_cache; /* created from a cached binary */
  int compiled;   /* compiled from source */
  int stored;     /* its binary was written to the cache */
};

/*
 * Builds src with options for ctx's device, through the disk cache: a hit
 * loads the cached binary; a miss (or a binary the driver refuses) compiles
 * from source and, in mode ON and as the store policy says, stores the binary. On failure the message
 * carries the build log. outcome may be NULL. ctx->lock held.
 */
kiln_status kiln__program_build_locked(const char *op, kiln_context *ctx,
                                const struct kiln__cl_source *src, const char *options,
                                unsigned flags, cl_program *out,
                                struct kiln__build_outcome *outcome);

/*
 * Makes sure the disk cache holds the binary of an already built program
 * (warm-up of a variant the context compiled before). ctx->lock held.
 */
void kiln__program_cache_existing_locked(kiln_context *ctx, const struct kiln__cl_source *src,
                                  const char *options, cl_program prog,
                                  struct kiln__build_outcome *outcome);

/*
 * The identity kiln trusts for ctx's device, or 0 with *why set when it is
 * incomplete (empty or "unknown" driver version, empty device or platform
 * name): then the cache must stay off for the device, since a driver update
 * could not be told apart.
 */
int kiln__cache_identity(const kiln_device_info *info, struct kiln__dc_ident *id,
                         const char **why);

/* Nonzero for PoCL's platform (by its name or version). */
int kiln__is_pocl(const kiln_device_info *info);

/* Builds src from source, bypassing the cache and its counters (ctx->lock held). */
kiln_status kiln__program_build_uncached(const char *op, kiln_context *ctx,
                                         const struct kiln__cl_source *src, const char *options,
                                         cl_program *out);

/*
 * The options of kernel `kernel`'s one-kernel program of an embedded source
 * built with options (scripts/embed_cl.py): options plus -DKILN_ONLY
 * -DKILN_ONLY_IS_<kernel>. Returns 0, or -1 when buf is too small.
 */
int kiln__one_kernel_options(const char *options, const char *kernel, char *buf, size_t len);

/* Nonzero when options make a build uncacheable: -I reads files the key does not cover. */
int kiln__options_uncacheable(const char *options);

/*
 * Warm-up of one variant: builds it into the registry if it is not there
 * (storing its binary at once), else makes sure the disk holds it. ctx->lock held.
 */
kiln_status kiln__program_warm_locked(const char *op, kiln_context *ctx, const char *source,
                               const char *options, struct kiln__build_outcome *outcome);

/* Makes room for one more program in ctx's registry. ctx->lock held. */
kiln_status kiln__registry_reserve_locked(const char *op, kiln_context *ctx);

/* The kernel `kernel` of registered program p, created on first use and owned by p. */
kiln_status kiln__program_kernel_locked(const char *op, struct kiln__program *p,
                                        const char *kernel, cl_kernel *out);

/* Context cache plumbing (context_cache.c); ctx->lock held or the context not yet shared. */
void kiln__ctx_cache_open(kiln_context *ctx);
void kiln__ctx_cache_close(kiln_context *ctx);
kiln_status kiln__ctx_cache_set_option(kiln_context *ctx, kiln_option option, int64_t value);
kiln_status kiln__ctx_cache_get_option(const kiln_context *ctx, kiln_option option,
                                       int64_t *value);

#endif
