#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <CL/cl.h>

#include "core/log.h"

struct error_record {
  kiln_status status;
  int32_t raw;
  char op[64];
  char message[2048];
};

static _Thread_local struct error_record last;

kiln_status
kiln__fail(kiln_status status, const char *op, int32_t raw, const char *fmt, ...)
{
  last.status = status;
  last.raw = raw;
  snprintf(last.op, sizeof last.op, "%s", op ? op : "kiln");
  int n = snprintf(last.message, sizeof last.message, "%s: ", last.op);
  if (n < 0)
    n = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last.message + n, sizeof last.message - (size_t)n, fmt, ap);
  va_end(ap);
  kiln__log(KILN__LOG_DEBUG, "error %s: %s", kiln_status_name(status), last.message);
  return status;
}

void
kiln__error_save(kiln__error_saved *s)
{
  s->status = last.status;
  s->raw = last.raw;
  memcpy(s->op, last.op, sizeof s->op);
  memcpy(s->message, last.message, sizeof s->message);
}

void
kiln__error_restore(const kiln__error_saved *s)
{
  last.status = s->status;
  last.raw = s->raw;
  memcpy(last.op, s->op, sizeof last.op);
  memcpy(last.message, s->message, sizeof last.message);
}

const char *
kiln_last_error(void)
{
  return last.message;
}

kiln_status
kiln_last_error_status(void)
{
  return last.status;
}

const char *
kiln_last_error_op(void)
{
  return last.op;
}

int32_t
kiln_last_error_code(void)
{
  return last.raw;
}

void
kiln_clear_error(void)
{
  memset(&last, 0, sizeof last);
}

const char *
kiln_status_name(kiln_status status)
{
  switch (status) {
#define X(name, value, text) \
  case KILN_##name:          \
    return "KILN_" #name;
    KILN_STATUS_MAP(X)
#undef X
  }
  return "KILN_UNKNOWN";
}

const char *
kiln_status_string(kiln_status status)
{
  switch (status) {
#define X(name, value, text) \
  case KILN_##name:          \
    return text;
    KILN_STATUS_MAP(X)
#undef X
  }
  return "unknown status";
}

#define CL_ERROR_MAP(X)                                                                      \
  X(CL_DEVICE_NOT_FOUND) X(CL_DEVICE_NOT_AVAILABLE) X(CL_COMPILER_NOT_AVAILABLE)             \
  X(CL_MEM_OBJECT_ALLOCATION_FAILURE) X(CL_OUT_OF_RESOURCES) X(CL_OUT_OF_HOST_MEMORY)        \
  X(CL_PROFILING_INFO_NOT_AVAILABLE) X(CL_MEM_COPY_OVERLAP) X(CL_IMAGE_FORMAT_MISMATCH)      \
  X(CL_IMAGE_FORMAT_NOT_SUPPORTED) X(CL_BUILD_PROGRAM_FAILURE) X(CL_MAP_FAILURE)             \
  X(CL_MISALIGNED_SUB_BUFFER_OFFSET) X(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)         \
  X(CL_COMPILE_PROGRAM_FAILURE) X(CL_LINKER_NOT_AVAILABLE) X(CL_LINK_PROGRAM_FAILURE)        \
  X(CL_DEVICE_PARTITION_FAILED) X(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) X(CL_INVALID_VALUE)      \
  X(CL_INVALID_DEVICE_TYPE) X(CL_INVALID_PLATFORM) X(CL_INVALID_DEVICE) X(CL_INVALID_CONTEXT) \
  X(CL_INVALID_QUEUE_PROPERTIES) X(CL_INVALID_COMMAND_QUEUE) X(CL_INVALID_HOST_PTR)          \
  X(CL_INVALID_MEM_OBJECT) X(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) X(CL_INVALID_IMAGE_SIZE)    \
  X(CL_INVALID_SAMPLER) X(CL_INVALID_BINARY) X(CL_INVALID_BUILD_OPTIONS)                     \
  X(CL_INVALID_PROGRAM) X(CL_INVALID_PROGRAM_EXECUTABLE) X(CL_INVALID_KERNEL_NAME)           \
  X(CL_INVALID_KERNEL_DEFINITION) X(CL_INVALID_KERNEL) X(CL_INVALID_ARG_INDEX)               \
  X(CL_INVALID_ARG_VALUE) X(CL_INVALID_ARG_SIZE) X(CL_INVALID_KERNEL_ARGS)                   \
  X(CL_INVALID_WORK_DIMENSION) X(CL_INVALID_WORK_GROUP_SIZE) X(CL_INVALID_WORK_ITEM_SIZE)    \
  X(CL_INVALID_GLOBAL_OFFSET) X(CL_INVALID_EVENT_WAIT_LIST) X(CL_INVALID_EVENT)              \
  X(CL_INVALID_OPERATION) X(CL_INVALID_GL_OBJECT) X(CL_INVALID_BUFFER_SIZE)                  \
  X(CL_INVALID_MIP_LEVEL) X(CL_INVALID_GLOBAL_WORK_SIZE) X(CL_INVALID_PROPERTY)              \
  X(CL_INVALID_IMAGE_DESCRIPTOR) X(CL_INVALID_COMPILER_OPTIONS) X(CL_INVALID_LINKER_OPTIONS) \
  X(CL_INVALID_DEVICE_PARTITION_COUNT)

const char *
kiln__cl_error_name(int32_t cl_err)
{
  switch (cl_err) {
  case CL_SUCCESS:
    return "CL_SUCCESS";
#define X(c) \
  case c:    \
    return #c;
    CL_ERROR_MAP(X)
#undef X
  case -1001:
    return "CL_PLATFORM_NOT_FOUND_KHR";
  }
  return "CL_UNKNOWN_ERROR";
}

kiln_status
kiln__status_from_cl(int32_t cl_err)
{
  switch (cl_err) {
  case CL_SUCCESS:
    return KILN_OK;
  case CL_OUT_OF_HOST_MEMORY:
    return KILN_ERR_HOST_MEMORY;
  case CL_MEM_OBJECT_ALLOCATION_FAILURE:
  case CL_OUT_OF_RESOURCES:
  case CL_INVALID_BUFFER_SIZE:
    return KILN_ERR_DEVICE_MEMORY;
  case CL_BUILD_PROGRAM_FAILURE:
  case CL_COMPILE_PROGRAM_FAILURE:
  case CL_LINK_PROGRAM_FAILURE:
  case CL_INVALID_BUILD_OPTIONS:
    return KILN_ERR_BUILD;
  case CL_DEVICE_NOT_FOUND:
  case CL_DEVICE_NOT_AVAILABLE:
  case -1001:
    return KILN_ERR_NO_DEVICE;
  default:
    return KILN_ERR_OPENCL;
  }
}

kiln_status
kiln__fail_cl(const char *op, int32_t err, const char *what)
{
  return kiln__fail(kiln__status_from_cl(err), op, err, "%s failed: %s (%d)", what,
                    kiln__cl_error_name(err), (int)err);
}
