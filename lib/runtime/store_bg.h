/*
 * Storing PoCL binaries off the caller's thread (docs/cache.md, "Storing in the background").
 *
 * Asking PoCL for a program's binary compiles a generic work-group function for each of its
 * kernels, on top of the specialised one the first launch compiles anyway: on the caller's
 * thread that doubled the compile work of a first run. A context's storer is one thread with
 * a cl_context of its own on the same device (PoCL's compiler lock is per cl_context, so its
 * builds overlap the caller's): it rebuilds the program from the same text and options (a hit
 * in PoCL's own cache when that is on), asks for the binary and stores it. Each job waits for
 * the next one, a drain or two seconds, so that the caller has launched the kernel by then:
 * sharing PoCL's cache directory, the binary also carries that launch's work-group function.
 */
#ifndef KILN_RUNTIME_STORE_BG_H
#define KILN_RUNTIME_STORE_BG_H

#include "runtime/disk_cache.h"
#include "runtime/runtime.h"

/* Whether stores of ctx's builds go to the background (PoCL, unless KILN_DEBUG_STORE_BG=0). */
int kiln__storer_wanted(const kiln_context *ctx);

/*
 * Queues the store of the program built from text with options under req (everything is
 * copied). Returns 0, or -1 when it could not be queued (the caller stores at once).
 */
int kiln__storer_enqueue(kiln_context *ctx, const struct kiln__dc_req *req, const char *text,
                         size_t len, const char *options);

/* Waits until every queued store of ctx is done (statistics and cache changes call it). */
void kiln__storer_drain(kiln_context *ctx);

/* Drains, stops the thread and frees the storer (context release). */
void kiln__storer_destroy(kiln_context *ctx);

#endif
