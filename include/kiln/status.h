/*
 * Status codes and the per-thread error record.
 *
 * Every kiln call returns a kiln_status; KILN_OK (0) is success. On failure
 * the calling thread's error record holds the operation name, a readable
 * message and, where the failure came from OpenCL or a provider library, the
 * raw code it returned. The record stays valid until the next failing kiln
 * call on the same thread; successful calls leave it untouched.
 */
#ifndef KILN_STATUS_H
#define KILN_STATUS_H

#include <stdint.h>

#include "kiln/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The one map from which the enum, kiln_status_name() and
 * kiln_status_string() are generated. Numbers are stable once released.
 */
#define KILN_STATUS_MAP(X)                                                            \
  X(OK, 0, "success")                                                                 \
  X(ERR_INVALID_ARGUMENT, 1, "invalid argument (NULL pointer or value out of range)") \
  X(ERR_INVALID_HANDLE, 2, "handle is NULL, released or not a kiln object")           \
  X(ERR_SHAPE, 3, "shapes are invalid, mismatched or not broadcastable")              \
  X(ERR_DTYPE, 4, "dtype not supported by this operation")                            \
  X(ERR_OVERFLOW, 5, "size arithmetic overflows")                                     \
  X(ERR_UNSUPPORTED, 6, "not supported by this device or build")                      \
  X(ERR_CONTEXT_MISMATCH, 7, "objects belong to different contexts")                  \
  X(ERR_HOST_MEMORY, 8, "out of host memory")                                         \
  X(ERR_DEVICE_MEMORY, 9, "out of device memory")                                     \
  X(ERR_NO_DEVICE, 10, "no matching OpenCL device")                                   \
  X(ERR_BUILD, 11, "OpenCL program build failed")                                     \
  X(ERR_OPENCL, 12, "OpenCL call failed")                                             \
  X(ERR_PROVIDER, 13, "provider library (CLBlast, clFFT, VkFFT) failed")              \
  X(ERR_ABI, 14, "ABI version mismatch")                                              \
  X(ERR_IO, 15, "file or directory operation failed")                                 \
  X(ERR_NOT_FOUND, 16, "no such entry")                                               \
  X(ERR_INTERNAL, 17, "internal error (a kiln bug)")                                  \
  X(ERR_SINGULAR, 18, "matrix is singular (an exactly zero pivot)")                   \
  X(ERR_NOT_POSITIVE_DEFINITE, 19, "matrix is not positive definite")                 \
  X(ERR_NO_CONVERGENCE, 20, "an iterative algorithm did not converge")                \
  X(ERR_PARSE, 21, "text could not be parsed (expression or kernel source)")

/** Result of every kiln call. */
typedef enum kiln_status {
#define KILN_X_(name, value, text) KILN_##name = value,
  KILN_STATUS_MAP(KILN_X_)
#undef KILN_X_
} kiln_status;

/** Symbolic name of a status, e.g. "KILN_ERR_SHAPE"; "KILN_UNKNOWN" for values outside the map.
 * Never NULL. */
KILN_API const char *kiln_status_name(kiln_status status);

/** One-line English description of a status. Never NULL. */
KILN_API const char *kiln_status_string(kiln_status status);

/**
 * Message of the last failure on this thread, e.g.
 * "kiln_binary(add): shapes [3,4] and [5] do not broadcast".
 * Empty string when no call on this thread has failed. The pointer is owned by
 * kiln and valid until the thread's next failing kiln call.
 */
KILN_API const char *kiln_last_error(void);

/** Status of the last failure on this thread (KILN_OK if none). */
KILN_API kiln_status kiln_last_error_status(void);

/** Name of the operation that failed last on this thread ("" if none). */
KILN_API const char *kiln_last_error_op(void);

/**
 * Raw code from the library below kiln for the last failure on this thread:
 * an OpenCL cl_int for KILN_ERR_OPENCL/BUILD/DEVICE_MEMORY, a CLBlast or clFFT
 * status for KILN_ERR_PROVIDER, an errno value for KILN_ERR_IO; 0 if none.
 */
KILN_API int32_t kiln_last_error_code(void);

/** Forget the last failure on this thread. */
KILN_API void kiln_clear_error(void);

#ifdef __cplusplus
}
#endif
#endif
