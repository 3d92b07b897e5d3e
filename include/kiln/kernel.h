/*
 * User kernels: OpenCL C from the caller, compiled and launched by kiln, in
 * four forms (PyOpenCL's ElementwiseKernel, ReductionKernel and ScanKernel,
 * and raw kernels). docs/kernels-user.md has the generated code, examples
 * and the cache behaviour.
 *
 * Argument declarations (`arguments` of the elementwise, reduction and scan
 * forms) are a comma-separated list of C declarations, e.g.
 * "float *y, const float *x, float a, long n". A pointer is a tensor argument
 * (`__global`, written or omitted; `const` allowed) of element type float (f32),
 * double (f64), int (i32), long (i64), uchar (u8 or bool), float2 (c64) or
 * double2 (c128); anything else is a scalar of type float, double, int, uint,
 * long or ulong. Names must be C identifiers not starting with `kiln_` and
 * not ending in `__` (kiln's own names), and not `i`, `n` or `item`,
 * which the generated code defines. In the code given, `i` (ulong) is the
 * element index and `n` (ulong) the element count. Tensors are passed as
 * pointers to their first element (views at an offset work).
 *
 * Compilation happens at creation, through the context's program registry
 * and the disk kernel cache (docs/cache.md): a second process, or a second
 * kernel with the same text and options, compiles nothing. `name` is the
 * kernel's label in `kiln cache list` (its source shows as "text:NAME") and
 * the generated kernel's name, so it must be a C identifier of at most 64
 * characters.
 *
 * Launches check the arguments before anything is enqueued: their number
 * and kinds against the declarations, each tensor's handle, context and
 * dtype (KILN_ERR_INVALID_ARGUMENT, KILN_ERR_INVALID_HANDLE,
 * KILN_ERR_CONTEXT_MISMATCH, KILN_ERR_DTYPE, with the argument named). A
 * launch only enqueues; results are there for the next op on the context's
 * queue or after a download.
 *
 * Statuses common to every function here: KILN_OK; KILN_ERR_INVALID_HANDLE (NULL, released
 * or foreign handles, a released context); KILN_ERR_INVALID_ARGUMENT (NULL where a value is
 * needed, declarations or names that do not parse, the argument mistakes above);
 * KILN_ERR_BUILD (code that does not compile: the message has the build log and the numbered
 * generated lines it points at; kiln_user_kernel_source() gives the whole text);
 * KILN_ERR_UNSUPPORTED (f64 or c128 on a device without fp64); KILN_ERR_OPENCL;
 * KILN_ERR_DEVICE_MEMORY; KILN_ERR_HOST_MEMORY.
 */
#ifndef KILN_KERNEL_H
#define KILN_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/cache.h"
#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque handle on a compiled user kernel (any of the four forms). */
typedef struct kiln_user_kernel kiln_user_kernel;

/** What a launch argument is. */
typedef enum kiln_arg_kind {
  KILN_ARG_TENSOR = 1, /**< a tensor (a __global pointer parameter) */
  KILN_ARG_SCALAR = 2, /**< a scalar passed by value */
  KILN_ARG_LOCAL = 3,  /**< __local memory of a size (raw kernels only) */
} kiln_arg_kind;

/** The type of a scalar argument, which must equal the parameter's declared type. */
typedef enum kiln_scalar_type {
  KILN_SCALAR_F32 = 1, /**< float */
  KILN_SCALAR_F64 = 2, /**< double */
  KILN_SCALAR_I32 = 3, /**< int */
  KILN_SCALAR_U32 = 4, /**< uint */
  KILN_SCALAR_I64 = 5, /**< long */
  KILN_SCALAR_U64 = 6, /**< ulong */
} kiln_scalar_type;

/** One launch argument; make them with the kiln_arg_* helpers below. */
typedef struct kiln_arg {
  kiln_arg_kind kind;
  kiln_tensor *tensor;          /**< KILN_ARG_TENSOR */
  kiln_scalar_type scalar_type; /**< KILN_ARG_SCALAR */
  union {
    float f32;
    double f64;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
  } value;                      /**< KILN_ARG_SCALAR */
  size_t local_bytes;           /**< KILN_ARG_LOCAL: bytes of __local memory (> 0) */
} kiln_arg;

/** A tensor argument (borrowed for the call). */
static inline kiln_arg
kiln_arg_tensor(kiln_tensor *t)
{
  kiln_arg a = {KILN_ARG_TENSOR, t, KILN_SCALAR_F32, {0}, 0};
  return a;
}

/** Scalar arguments of each type. */
static inline kiln_arg
kiln_arg_f32(float v)
{
  kiln_arg a = {KILN_ARG_SCALAR, NULL, KILN_SCALAR_F32, {0}, 0};
  a.value.f32 = v;
  return a;
}
static inline kiln_arg
kiln_arg_f64(double v)
{
  kiln_arg a = {KILN_ARG_SCALAR, NULL, KILN_SCALAR_F64, {0}, 0};
  a.value.f64 = v;
  return a;
}
static inline kiln_arg
kiln_arg_i32(int32_t v)
{
  kiln_arg a = {KILN_ARG_SCALAR, NULL, KILN_SCALAR_I32, {0}, 0};
  a.value.i32 = v;
  return a;
}
static inline kiln_arg
kiln_arg_u32(uint32_t v)
{
  kiln_arg a = {KILN_ARG_SCALAR, NULL, KILN_SCALAR_U32, {0}, 0};
  a.value.u32 = v;
  return a;
}
static inline kiln_arg
kiln_arg_i64(int64_t v)
{
  kiln_arg a = {KILN_ARG_SCALAR, NULL, KILN_SCALAR_I64, {0}, 0};
  a.value.i64 = v;
  return a;
}
static inline kiln_arg
kiln_arg_u64(uint64_t v)
{
  kiln_arg a = {KILN_ARG_SCALAR, NULL, KILN_SCALAR_U64, {0}, 0};
  a.value.u64 = v;
  return a;
}

/** __local memory of bytes for a raw kernel's `__local T *` parameter. */
static inline kiln_arg
kiln_arg_local(size_t bytes)
{
  kiln_arg a = {KILN_ARG_LOCAL, NULL, KILN_SCALAR_F32, {0}, bytes};
  return a;
}

/**
 * An elementwise kernel: `operation` (OpenCL C statements) runs once per
 * element index i in [0, n), n the element count of the first tensor
 * argument, in a grid-stride loop launched like the elementwise family's flat
 * kernels (the context's work-group size, a grid of at most 2^31 work-items). Every tensor argument must have at least n elements.
 * Example: arguments "float *y, const float *x, float a", operation
 * "y[i] = a * x[i] + 1.0f".
 *
 * @param ctx the context the kernel runs on (the kernel holds a reference).
 * @param name the label and kernel name (a C identifier, at most 64 characters).
 * @param arguments the parameter declarations (see the top of this header); at least one tensor.
 * @param operation the per-element statements.
 * @param preamble OpenCL C placed before the kernel (helper functions, #defines); may be NULL.
 * @param options extra build options (e.g. "-cl-fast-relaxed-math"); may be NULL.
 *        Options with -I are built but never cached (docs/cache.md).
 * @param out receives the kernel; release it with kiln_user_kernel_release().
 * @return the common statuses.
 */
KILN_API kiln_status kiln_elementwise_kernel_create(kiln_context *ctx, const char *name,
                                                    const char *arguments, const char *operation,
                                                    const char *preamble, const char *options,
                                                    kiln_user_kernel **out);

/**
 * Runs an elementwise kernel with args (in declaration order). n == 0 enqueues nothing.
 * @return the common statuses; KILN_ERR_SHAPE when a tensor argument has fewer than n
 *         elements; KILN_ERR_INVALID_ARGUMENT when k is not an elementwise kernel.
 */
KILN_API kiln_status kiln_elementwise_kernel_run(kiln_user_kernel *k, size_t nargs,
                                                 const kiln_arg *args);

/**
 * A reduction kernel: the value of `reduce_expr` folded over `map_expr`
 * evaluated at every index i in [0, n), n the element count of the first
 * tensor argument, starting from `neutral`. reduce_expr combines two values
 * `a` and `b` of dtype's type; it must be associative and commutative (work is
 * split across work-items and groups) and neutral must be its identity.
 * kiln runs it as a tree within work-groups and two passes across them, with
 * the reduce family's launch parameters for the device. Example: dtype f32,
 * neutral "0.0f", reduce "a + b", map "x[i] * y[i]", arguments "const float
 * *x, const float *y" is a dot product.
 *
 * @param dtype the value type: f32, f64, i32, i64 or u8.
 * @param neutral, reduce_expr, map_expr OpenCL C expressions (not NULL).
 * The other parameters are those of kiln_elementwise_kernel_create().
 * @return the common statuses; KILN_ERR_DTYPE for another dtype.
 */
KILN_API kiln_status kiln_reduction_kernel_create(kiln_context *ctx, const char *name,
                                                  kiln_dtype dtype, const char *neutral,
                                                  const char *reduce_expr, const char *map_expr,
                                                  const char *arguments, const char *preamble,
                                                  const char *options, kiln_user_kernel **out);

/**
 * Runs a reduction kernel: the result is a 0-d tensor of the kernel's dtype.
 * Output convention: if *out is NULL, kiln creates the result and stores it in
 * *out (the caller releases it); else *out must be a 0-d tensor of the
 * dtype in the context, written in place. n == 0 gives neutral.
 * @return the common statuses; KILN_ERR_DTYPE or KILN_ERR_SHAPE for a given *out
 *         of another dtype or size; KILN_ERR_INVALID_ARGUMENT when k is not a reduction
 *         kernel or out is NULL.
 */
KILN_API kiln_status kiln_reduction_kernel_run(kiln_user_kernel *k, size_t nargs,
                                               const kiln_arg *args, kiln_tensor **out);

/**
 * A scan kernel: with v(i) = `input_expr` at index i, item(i) is the
 * inclusive scan v(0) op ... op v(i) (exclusive: v(0) op ... op v(i-1), with
 * item(0) = neutral), op being `scan_expr` over `a` and `b`, associative
 * (order is kept: it need not be commutative) with identity `neutral`.
 * `output_statement` runs once per index with `item` and `i` defined, e.g.
 * "y[i] = item". n is the element count of the first tensor argument. kiln
 * scans tiles of a work-group in local memory (on CPU devices, one contiguous
 * run per work-item), then carries the chunks' totals across work-groups
 * (three passes).
 *
 * @param dtype the value type: f32, f64, i32, i64 or u8.
 * @param exclusive nonzero for an exclusive scan.
 * The other parameters are those of kiln_reduction_kernel_create().
 * @return the common statuses; KILN_ERR_DTYPE for another dtype.
 */
KILN_API kiln_status kiln_scan_kernel_create(kiln_context *ctx, const char *name, kiln_dtype dtype,
                                             const char *neutral, const char *scan_expr,
                                             const char *input_expr, const char *output_statement,
                                             int exclusive, const char *arguments,
                                             const char *preamble, const char *options,
                                             kiln_user_kernel **out);

/**
 * Runs a scan kernel. n == 0 enqueues nothing.
 * @return the common statuses; KILN_ERR_SHAPE when a tensor argument has fewer than n
 *         elements; KILN_ERR_INVALID_ARGUMENT when k is not a scan kernel.
 */
KILN_API kiln_status kiln_scan_kernel_run(kiln_user_kernel *k, size_t nargs,
                                          const kiln_arg *args);

/**
 * A raw kernel: kernel `kernel_name` of OpenCL C `source`, built with
 * `options` (kiln adds -cl-kernel-arg-info, so that launches can check each
 * argument's kind and type). `name` labels the program in `kiln cache list`
 * (any printable text; NULL: kernel_name).
 * @return the common statuses; KILN_ERR_INVALID_ARGUMENT when the program has no kernel
 *         of that name.
 */
KILN_API kiln_status kiln_raw_kernel_create(kiln_context *ctx, const char *name,
                                            const char *source, const char *kernel_name,
                                            const char *options, kiln_user_kernel **out);

/**
 * Runs a raw kernel over a dims-dimensional range (1 to 3): global[d] work-items
 * along dimension d, in work-groups of local[d] (local NULL: the driver chooses).
 * Arguments are set by index: tensors for __global and __constant pointers (a
 * tensor at a nonzero offset is refused: a raw kernel gets the buffer's start),
 * kiln_arg_local for __local pointers, scalars for the rest, with element and
 * scalar types checked against the parameter's declared type where the driver
 * reports it (a tensor for a `void *` or `uchar *` parameter takes any dtype).
 * A zero global size enqueues nothing.
 * @return the common statuses; KILN_ERR_INVALID_ARGUMENT for dims outside 1..3, a
 *         global size not a multiple of the local size, a zero local size, or a tensor
 *         at an offset; KILN_ERR_DTYPE for a tensor of the wrong element type.
 */
KILN_API kiln_status kiln_raw_kernel_run(kiln_user_kernel *k, unsigned dims,
                                         const uint64_t *global, const uint64_t *local,
                                         size_t nargs, const kiln_arg *args);

/**
 * The OpenCL C text kiln compiled for k (the generated kernel around the
 * caller's code, or a raw kernel's source), owned by k.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (text NULL).
 */
KILN_API kiln_status kiln_user_kernel_source(const kiln_user_kernel *k, const char **text);

/**
 * Releases a user kernel (NULL is a no-op). Launches already enqueued are
 * unaffected; the compiled program stays in the context's registry.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE for a handle already released.
 */
KILN_API kiln_status kiln_user_kernel_release(kiln_user_kernel *k);

/**
 * Compiles, ahead of use, the user kernels and fused expressions listed in the
 * file at path, so that their programs land in the context's disk cache (e.g.
 * while building a container image; `kiln cache warm --from FILE`). The format
 * (docs/cli.md, "warm --from"): `[kernel NAME]` sections with `kind` (raw,
 * elementwise, reduction, scan) and the arguments of the matching create
 * function as `key = value` lines or `key <<END` ... `END` blocks, and
 * `[expr NAME]` sections with `text = EXPRESSION`. Items that fail to build
 * are counted and reported to progress with their status, and the others go on.
 * @param progress called after each item with (done, total, "text:NAME", options,
 *        status, user); nonzero stops the walk. May be NULL.
 * @param out totals (variants = items in the file); may be NULL.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (path NULL,
 *         a file that does not parse: the message gives FILE:LINE); KILN_ERR_IO (the
 *         file cannot be read, or is a FIFO, device or directory: refused without
 *         blocking); KILN_ERR_BUILD (some items did not compile: the first
 *         is named); KILN_ERR_UNSUPPORTED ([expr] sections when expressions are not
 *         built in, or an f64 kernel without fp64); KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_user_kernel_warm_file(kiln_context *ctx, const char *path,
                                                kiln_cache_warm_fn progress, void *user,
                                                kiln_cache_warm_result *out);

#ifdef __cplusplus
}
#endif

#endif
