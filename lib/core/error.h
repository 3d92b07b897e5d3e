/* Internal error reporting: fill the thread-local record and return a status. */
#ifndef KILN_CORE_ERROR_H
#define KILN_CORE_ERROR_H

#include <stdint.h>

#include "kiln/status.h"

/* Records status, op name, raw code and a formatted message; returns status. */
kiln_status kiln__fail(kiln_status status, const char *op, int32_t raw, const char *fmt, ...)
    KILN_PRINTF(4, 5);

/* Maps an OpenCL error code to a kiln status (out-of-resources/memory to ERR_DEVICE_MEMORY ...). */
kiln_status kiln__status_from_cl(int32_t cl_err);

/* Name of an OpenCL error code ("CL_OUT_OF_RESOURCES"), "CL_UNKNOWN_ERROR" otherwise. */
const char *kiln__cl_error_name(int32_t cl_err);

/* Records a failed OpenCL call: status mapped from err, message "<what>: <CL name> (<err>)". */
kiln_status kiln__fail_cl(const char *op, int32_t err, const char *what);

/*
 * A copy of the calling thread's error record, so that internal work that
 * fails on purpose (the tuner's candidates) can leave the caller's record as
 * it was: successful calls must not change it.
 */
typedef struct kiln__error_saved {
  kiln_status status;
  int32_t raw;
  char op[64];
  char message[2048];
} kiln__error_saved;

void kiln__error_save(kiln__error_saved *s);
void kiln__error_restore(const kiln__error_saved *s);

#define KILN_RETURN_IF(cond, status, op, ...)          \
  do {                                                 \
    if (cond)                                          \
      return kiln__fail((status), (op), 0, __VA_ARGS__); \
  } while (0)

#define KILN_TRY(expr)                  \
  do {                                  \
    kiln_status kiln_try_s_ = (expr);   \
    if (kiln_try_s_ != KILN_OK)         \
      return kiln_try_s_;               \
  } while (0)

#endif
