/*
 * Host side of the hybrid factorizations (MAGMA's scheme) shared by lib/ops/linalg.c (LU,
 * Cholesky) and lib/ops/linalg_qr.c (QR): staging buffers in pinned (mapped) host memory,
 * rectangle transfers between a row-major device matrix and a packed host block, and the
 * conversion of such a block to the column-major f64 matrix LAPACKE factors, and back.
 * ctx->lock held by every caller.
 */
#ifndef KILN_OPS_LINALG_HOST_H
#define KILN_OPS_LINALG_HOST_H

#include <stdint.h>

#include "runtime/runtime.h"

/*
 * A host buffer of bytes: pinned (a CL_MEM_ALLOC_HOST_PTR buffer kept mapped) where the
 * device allows it, since transfers from pinned memory run asynchronously at full speed on
 * GPUs; plain malloc otherwise. dev is a device buffer of the same size: blocks of a matrix
 * are packed there by a device-side rectangle copy and cross the bus in one contiguous
 * transfer (a host rectangle transfer of a tall, narrow panel moves one short row at a time).
 */
typedef struct kiln__lh_buf {
  cl_mem pin, dev;
  void *p;
  size_t bytes;
} kiln__lh_buf;

kiln_status kiln__lh_buf_make(const char *op, kiln_context *ctx, size_t bytes, kiln__lh_buf *b);
void kiln__lh_buf_free(kiln_context *ctx, kiln__lh_buf *b);

/*
 * Staging buffers kept per context (the linalg family's state), since pinning host memory
 * costs about as much as a small factorization: slot's buffer of at least bytes, grown when
 * needed. Valid until the next call with that slot (ctx->lock held throughout). Callers use
 * distinct slots within one operation: 0 .. 3 the hybrid factorizations' panels,
 * KILN__LH_SLOT_VECS the eigenvectors and singular vectors eigh and svd upload.
 */
#define KILN__LH_SLOTS 5
#define KILN__LH_SLOT_VECS 4
kiln_status kiln__lh_slot(const char *op, kiln_context *ctx, int slot, size_t bytes,
                          kiln__lh_buf **b);
/*
 * C = alpha op(A) op(B) + beta C (f32/f64, row-major views, batch 1) through CLBlast with a
 * temporary buffer kept per context (grown to the largest need; freed with the context):
 * CLBlast's indirect GEMM pads every view with an offset into a temporary, and without one
 * from the caller it allocates and frees a buffer of about C's size on every call.
 */
kiln_status kiln__lh_gemm(const char *op, kiln_context *ctx, kiln_dtype dt, int ta, int tb,
                          size_t m, size_t n, size_t k, double alpha, cl_mem a, size_t aoff,
                          size_t lda, cl_mem b, size_t boff, size_t ldb, double beta, cl_mem c,
                          size_t coff, size_t ldc);

/*
 * A second in-order queue on the context's device (created on first use, profiling as the
 * context's own), for the look-ahead: the next panel is factored there while the context's
 * queue runs the rest of the trailing update.
 */
kiln_status kiln__lh_queue2(const char *op, kiln_context *ctx, cl_command_queue *q);
/* Makes queue `to` wait for everything enqueued on `from` so far (a marker and a barrier). */
kiln_status kiln__lh_join(const char *op, cl_command_queue from, cl_command_queue to);

/*
 * *mem: at least n ones of dt (f32, f64, c64 or c128; complex ones are 1 + 0i) from element 0,
 * kept with the context (grown and refilled only when a longer run is asked for, freed with
 * it), for the part sums of QR's V^T C (vt_c): a fill per call was two commands per QR panel
 * on the H200. Enqueued on the context's queue; valid for commands enqueued after it.
 */
kiln_status kiln__lh_ones(const char *op, kiln_context *ctx, kiln_dtype dt, uint64_t n,
                          cl_mem *mem);

kiln_status kiln__lh_state_create(kiln_context *ctx, void **state);
void kiln__lh_state_destroy(kiln_context *ctx, void *state);

/*
 * Reads the rows x cols block at element e (row stride ld, element size ts) of mem into
 * b->p, packed row-major. ev NULL: waits; else the read is only enqueued and *ev signals it.
 */
kiln_status kiln__lh_read(const char *op, kiln_context *ctx, cl_mem mem, uint64_t e, uint64_t ld,
                          uint64_t rows, uint64_t cols, size_t ts, const kiln__lh_buf *b,
                          cl_event *ev);

/* Enqueues the write of b->p (packed rows x cols) to the block at e; b must live until it ran. */
kiln_status kiln__lh_write(const char *op, kiln_context *ctx, cl_mem mem, uint64_t e, uint64_t ld,
                           uint64_t rows, uint64_t cols, size_t ts, const kiln__lh_buf *b);

/* Waits for ev (and releases it). */
kiln_status kiln__lh_wait(const char *op, kiln_context *ctx, cl_event ev);

/* Packed row-major rows x cols of dtype dt at src into column-major f64 w (leading dim rows). */
void kiln__lh_to_colmajor(kiln_dtype dt, const void *src, uint64_t rows, uint64_t cols, double *w);
/* The reverse: column-major f64 w (leading dim ldw) to packed row-major dst of dtype dt. */
void kiln__lh_from_colmajor(kiln_dtype dt, const double *w, uint64_t ldw, uint64_t rows,
                            uint64_t cols, void *dst);
/* x[i] (f64) to element i of dst (dtype dt), n elements. */
void kiln__lh_store(kiln_dtype dt, const double *x, uint64_t n, void *dst);

#endif
