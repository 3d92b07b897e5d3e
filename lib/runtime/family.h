/*
 * The one seam between the runtime and the op families.
 *
 * Each family (lib/ops/<family>.c) describes itself once in a struct
 * kiln__family: the embedded sources it owns and their build options, its
 * autotuner description, its per-context state and the context options it
 * owns. lib/ops/families.c lists them; the runtime walks that list and never
 * names a family (tests/layers checks that lib/runtime includes no ops
 * header).
 */
#ifndef KILN_RUNTIME_FAMILY_H
#define KILN_RUNTIME_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype_traits.h"
#include "runtime/runtime.h"

struct kiln__tune_family; /* runtime/tuner.h */

/* A context option a family owns, with its bounds (kiln_option_bounds). */
struct kiln__family_option {
  kiln_option option;
  int64_t lower, upper;
};

/* An embedded source (cl_kernels/<name>.cl) and the dtypes it builds for (KILN__DT_BIT mask,
 * core/dtype_traits.h): `kiln cache warm` builds only those, and a kernel lookup for another
 * dtype fails with KILN_ERR_DTYPE before any compile. */
struct kiln__source {
  const char *name;
  unsigned dtypes;
};

struct kiln__family {
  const char *name;
  /* The sources the family builds, ended by {NULL}. Every embedded source belongs to
   * exactly one family (tests/unit checks it). */
  const struct kiln__source *sources;
  /*
   * Appends the family's own build options of source for dtype on a device to buf
   * (after the common dtype options). variant: a family-defined set of compile-time
   * launch parameters; NULL means the device defaults, which is what `kiln cache warm`
   * builds. NULL callback: no options of its own.
   */
  void (*build_options)(const kiln_device_info *info, const char *source, kiln_dtype dtype,
                        const void *variant, char *buf, size_t len);
  /* The autotuner's description of the family (runtime/tuner.h); NULL: not tuned. */
  const struct kiln__tune_family *tune;
  /*
   * Per-context state: made by state_create when the context is created (ctx->info is
   * set, ctx->lock not yet usable by others), freed by state_destroy at release with
   * ctx->lock held, after the queue is drained and before any cl object goes. Reached
   * with kiln__family_state(). NULL callbacks: no state.
   */
  kiln_status (*state_create)(kiln_context *ctx, void **state);
  void (*state_destroy)(kiln_context *ctx, void *state);
  /* Context options the family owns; set and get run with ctx->lock held, the value
   * already checked against the bounds. */
  const struct kiln__family_option *options;
  size_t noptions;
  void (*option_set)(kiln_context *ctx, void *state, kiln_option option, int64_t value);
  int64_t (*option_get)(const kiln_context *ctx, const void *state, kiln_option option);
  /* The variant that stands for the device defaults of source for dtype where they depend on
   * more than ctx->info (on state made by state_create): `kiln cache warm` builds it, and the
   * family's own lookups take it. NULL callback or result: the variant NULL. */
  const void *(*default_variant)(const kiln_context *ctx, const char *source, kiln_dtype dtype);
};

/* lib/ops/families.c: every family, NULL-terminated. */
extern const struct kiln__family *const kiln__families[];

/* The family's state on ctx (NULL when it has none). No locks taken. */
void *kiln__family_state(const kiln_context *ctx, const struct kiln__family *family);

/* The family that owns embedded source `source`, or NULL; *row (optional) gets its row. */
const struct kiln__family *kiln__family_of_source(const char *source,
                                                  const struct kiln__source **row);

/* The family that owns option, or NULL. */
const struct kiln__family *kiln__family_of_option(kiln_option option,
                                                  const struct kiln__family_option **row);

/* Creates every family's state on a new context; on failure the ones made are freed. */
kiln_status kiln__family_states_create(const char *op, kiln_context *ctx);

/* Frees every family's state (context release, ctx->lock held). */
void kiln__family_states_destroy_locked(kiln_context *ctx);

#endif
