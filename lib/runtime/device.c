#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/env.h"
#include "core/error.h"
#include "runtime/runtime.h"

#define MAX_PLATFORMS 16
#define MAX_DEVICES 64

/*
 * The ICD loader's and PoCL 3.1's platform and device discovery is not
 * thread-safe: threads listing platforms while another initialises them got
 * no platform on every later attempt, or crashed in PoCL reading a device
 * name that was not filled in yet (plain OpenCL code does the same). So
 * every call kiln makes on that path takes this one process-wide lock.
 */
static pthread_mutex_t platform_lock = PTHREAD_MUTEX_INITIALIZER;

void
kiln__platform_lock(void)
{
  pthread_mutex_lock(&platform_lock);
}

void
kiln__platform_unlock(void)
{
  pthread_mutex_unlock(&platform_lock);
}

static void
info_string(cl_device_id d, cl_device_info what, char *buf, size_t len)
{
  buf[0] = 0;
  if (clGetDeviceInfo(d, what, len, buf, NULL) != CL_SUCCESS)
    buf[0] = 0;
  buf[len - 1] = 0;
}

struct devref {
  cl_platform_id platform;
  cl_device_id device;
  cl_device_type type;
  uint32_t pi, di;
};

static size_t enumerate(struct devref *refs, size_t cap);

kiln_status
kiln__device_query(cl_platform_id platform, cl_device_id device, kiln_device_info *out)
{
  memset(out, 0, sizeof *out);
  info_string(device, CL_DEVICE_NAME, out->name, sizeof out->name);
  info_string(device, CL_DEVICE_VENDOR, out->vendor, sizeof out->vendor);
  info_string(device, CL_DRIVER_VERSION, out->driver_version, sizeof out->driver_version);
  info_string(device, CL_DEVICE_VERSION, out->device_version, sizeof out->device_version);
  if (clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof out->platform_name, out->platform_name,
                        NULL) != CL_SUCCESS)
    out->platform_name[0] = 0;
  if (clGetPlatformInfo(platform, CL_PLATFORM_VERSION, sizeof out->platform_version,
                        out->platform_version, NULL) != CL_SUCCESS)
    out->platform_version[0] = 0;
  out->platform_name[sizeof out->platform_name - 1] = 0;
  out->platform_version[sizeof out->platform_version - 1] = 0;

  cl_uint u = 0;
  cl_ulong ul = 0;
  size_t sz = 0;
  cl_device_type type = 0;
  if (clGetDeviceInfo(device, CL_DEVICE_VENDOR_ID, sizeof u, &u, NULL) == CL_SUCCESS)
    out->vendor_id = u;
  if (clGetDeviceInfo(device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof u, &u, NULL) == CL_SUCCESS)
    out->compute_units = u;
  if (clGetDeviceInfo(device, CL_DEVICE_ADDRESS_BITS, sizeof u, &u, NULL) == CL_SUCCESS)
    out->address_bits = u;
  if (clGetDeviceInfo(device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof ul, &ul, NULL) == CL_SUCCESS)
    out->global_mem_bytes = ul;
  if (clGetDeviceInfo(device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof ul, &ul, NULL) == CL_SUCCESS)
    out->local_mem_bytes = ul;
  if (clGetDeviceInfo(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof ul, &ul, NULL) == CL_SUCCESS)
    out->max_alloc_bytes = ul;
  if (clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof sz, &sz, NULL) == CL_SUCCESS)
    out->max_work_group_size = sz;
  if (clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof type, &type, NULL) == CL_SUCCESS)
    out->is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;

  /* fp64: a nonzero double FP config is the portable test (the extension string lags on some drivers). */
  cl_device_fp_config fp = 0;
  if (clGetDeviceInfo(device, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp, &fp, NULL) == CL_SUCCESS)
    out->has_fp64 = fp != 0;
  size_t extlen = 0;
  if (clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, 0, NULL, &extlen) == CL_SUCCESS && extlen) {
    char *ext = malloc(extlen + 1);
    if (ext && clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, extlen, ext, NULL) == CL_SUCCESS) {
      ext[extlen] = 0;
      out->has_fp16 = strstr(ext, "cl_khr_fp16") != NULL;
      if (strstr(ext, "cl_khr_fp64"))
        out->has_fp64 = 1;
    }
    free(ext);
  }
  /* Test hook: pretend the device lacks fp64, to exercise the unsupported paths on any device. */
  if (kiln__env_flag(KILN__ENV_DEBUG_NO_FP64))
    out->has_fp64 = 0;

  struct devref refs[MAX_DEVICES];
  size_t n = enumerate(refs, MAX_DEVICES);
  for (size_t i = 0; i < n; i++) {
    if (refs[i].device == device) {
      out->platform_index = refs[i].pi;
      out->device_index = refs[i].di;
    }
  }
  return KILN_OK;
}

/* Every device of every platform, in "P:D" order. */
static size_t
enumerate(struct devref *refs, size_t cap)
{
  cl_platform_id plats[MAX_PLATFORMS];
  cl_uint np = 0;
  if (clGetPlatformIDs(MAX_PLATFORMS, plats, &np) != CL_SUCCESS)
    return 0;
  if (np > MAX_PLATFORMS)
    np = MAX_PLATFORMS;
  size_t n = 0;
  for (cl_uint p = 0; p < np; p++) {
    cl_device_id devs[MAX_DEVICES];
    cl_uint nd = 0;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES, devs, &nd) != CL_SUCCESS)
      continue;
    if (nd > MAX_DEVICES)
      nd = MAX_DEVICES;
    for (cl_uint d = 0; d < nd && n < cap; d++) {
      refs[n].platform = plats[p];
      refs[n].device = devs[d];
      refs[n].pi = p;
      refs[n].di = d;
      refs[n].type = 0;
      clGetDeviceInfo(devs[d], CL_DEVICE_TYPE, sizeof refs[n].type, &refs[n].type, NULL);
      n++;
    }
  }
  return n;
}

static int
contains_ci(const char *hay, const char *needle)
{
  size_t nl = strlen(needle);
  for (const char *h = hay; *h; h++) {
    size_t i = 0;
    while (i < nl && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i]))
      i++;
    if (i == nl)
      return 1;
  }
  return nl == 0;
}

/* One index of a "P:D" selector: decimal digits only, at most UINT32_MAX. 0, or -1. */
static int
parse_part(const char *s, size_t len, uint32_t *out)
{
  if (len == 0)
    return -1;
  uint64_t v = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (uint64_t)(s[i] - '0');
    if (v > UINT32_MAX)
      return -1;
  }
  *out = (uint32_t)v;
  return 0;
}

/*
 * A selector made only of digits, signs, blanks and one or more ':' is meant
 * as "P:D" (no device name looks like that, while names such as
 * "gfx90a:sramecc+:xnack-" hold colons among letters): 1 with both indices
 * set when it is exactly <digits>:<digits> within range; -1 (error recorded)
 * when it is malformed, so that "0:4294967296" or "-1:0" can never select a
 * device by wrapping around; 0 when the selector is a name substring.
 */
static int
parse_index(const char *op, const char *selector, uint32_t *p, uint32_t *d)
{
  if (!strchr(selector, ':') || selector[strspn(selector, "0123456789:+- \t")] != 0)
    return 0;
  const char *colon = strchr(selector, ':');
  if (parse_part(selector, (size_t)(colon - selector), p) != 0 ||
      parse_part(colon + 1, strlen(colon + 1), d) != 0) {
    kiln__fail(KILN_ERR_INVALID_ARGUMENT, op, 0,
               "malformed device selector \"%s\": P:D takes two decimal indices from 0 to %u",
               selector, UINT32_MAX);
    return -1;
  }
  return 1;
}

/* Index into refs chosen by selector (NULL: the default rule), or -1 with a recorded error. */
static long
pick(const char *op, const char *selector, const struct devref *refs, size_t n)
{
  uint32_t p = 0, d = 0;
  int ix = selector && *selector ? parse_index(op, selector, &p, &d) : 0;
  if (ix < 0)
    return -1;
  if (n == 0) {
    kiln__fail(KILN_ERR_NO_DEVICE, op, 0,
               "no OpenCL platform or device found (is an ICD such as pocl-opencl-icd installed?)");
    return -1;
  }
  if (!selector || !*selector) {
    for (size_t i = 0; i < n; i++)
      if (refs[i].type & CL_DEVICE_TYPE_GPU)
        return (long)i;
    for (size_t i = 0; i < n; i++)
      if (refs[i].type & CL_DEVICE_TYPE_CPU)
        return (long)i;
    return 0;
  }
  if (ix) {
    for (size_t i = 0; i < n; i++)
      if (refs[i].pi == p && refs[i].di == d)
        return (long)i;
    kiln__fail(KILN_ERR_NO_DEVICE, op, 0, "no device %u:%u (%zu devices present)", p, d, n);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    char name[256];
    info_string(refs[i].device, CL_DEVICE_NAME, name, sizeof name);
    if (contains_ci(name, selector))
      return (long)i;
  }
  kiln__fail(KILN_ERR_NO_DEVICE, op, 0, "no device name contains \"%s\"", selector);
  return -1;
}

static const char *
env_selector(const char *selector)
{
  if (selector)
    return selector;
  const char *e = kiln__env(KILN__ENV_DEVICE);
  return e && *e ? e : NULL;
}

kiln_status
kiln__device_select(const char *op, const char *selector, cl_platform_id *platform,
                    cl_device_id *device)
{
  struct devref refs[MAX_DEVICES];
  size_t n = enumerate(refs, MAX_DEVICES);
  long i = pick(op, env_selector(selector), refs, n);
  if (i < 0)
    return kiln_last_error_status();
  *platform = refs[i].platform;
  *device = refs[i].device;
  return KILN_OK;
}

kiln_status
kiln_device_list(kiln_device_info *infos, size_t capacity, size_t *count, size_t *default_index)
{
  KILN_RETURN_IF(!count || (!infos && capacity), KILN_ERR_INVALID_ARGUMENT, "kiln_device_list",
                 "NULL count, or NULL infos with capacity %zu", capacity);
  struct devref refs[MAX_DEVICES];
  kiln__platform_lock();
  size_t n = enumerate(refs, MAX_DEVICES);
  for (size_t i = 0; i < n && i < capacity; i++)
    kiln__device_query(refs[i].platform, refs[i].device, &infos[i]);
  long def = default_index ? pick("kiln_device_list", env_selector(NULL), refs, n) : -1;
  kiln__platform_unlock();
  *count = n;
  if (default_index)
    *default_index = def < 0 ? SIZE_MAX : (size_t)def;
  return KILN_OK;
}
