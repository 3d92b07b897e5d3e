#include "hostdata.h"

#include <stdlib.h>
#include <string.h>

const kiln_dtype hd_all_dtypes[6] = {KILN_F32, KILN_F64, KILN_I32, KILN_I64, KILN_U8, KILN_BOOL};
const kiln_dtype hd_every_dtype[10] = {KILN_F32,  KILN_F64, KILN_I32,  KILN_I64, KILN_U8,
                                       KILN_BOOL, KILN_F16, KILN_BF16, KILN_C64, KILN_C128};

int
hd_dtype_ok(kiln_dtype dt)
{
  return (dt != KILN_F64 && dt != KILN_C128) || harness_has_fp64();
}

int
hd_small_skip(kiln_dtype dt)
{
  return harness_small() &&
         (dt == KILN_I32 || dt == KILN_I64 || dt == KILN_BOOL || dt == KILN_BF16 || dt == KILN_C64);
}

double
hd_getf(kiln_dtype dt, const void *buf, uint64_t i)
{
  switch (dt) {
  case KILN_F32:
    return ((const float *)buf)[i];
  case KILN_F64:
    return ((const double *)buf)[i];
  case KILN_F16:
    return kiln_f16_to_f32(((const uint16_t *)buf)[i]);
  case KILN_BF16:
    return kiln_bf16_to_f32(((const uint16_t *)buf)[i]);
  case KILN_C64:
    return ((const kiln_complex64 *)buf)[i].re;
  case KILN_C128:
    return ((const kiln_complex128 *)buf)[i].re;
  default:
    return (double)hd_geti(dt, buf, i);
  }
}

int64_t
hd_geti(kiln_dtype dt, const void *buf, uint64_t i)
{
  switch (dt) {
  case KILN_F32:
    return (int64_t)((const float *)buf)[i];
  case KILN_F64:
    return (int64_t)((const double *)buf)[i];
  case KILN_I32:
    return ((const int32_t *)buf)[i];
  case KILN_I64:
    return ((const int64_t *)buf)[i];
  case KILN_F16:
  case KILN_BF16:
  case KILN_C64:
  case KILN_C128:
    return (int64_t)hd_getf(dt, buf, i);
  default:
    return ((const uint8_t *)buf)[i];
  }
}

void
hd_setf(kiln_dtype dt, void *buf, uint64_t i, double v)
{
  switch (dt) {
  case KILN_F32:
    ((float *)buf)[i] = (float)v;
    return;
  case KILN_F64:
    ((double *)buf)[i] = v;
    return;
  case KILN_BOOL:
    ((uint8_t *)buf)[i] = v != 0.0;
    return;
  case KILN_F16:
    ((uint16_t *)buf)[i] = kiln_f16_from_f64(v);
    return;
  case KILN_BF16:
    ((uint16_t *)buf)[i] = kiln_bf16_from_f64(v);
    return;
  case KILN_C64:
    ((kiln_complex64 *)buf)[i] = (kiln_complex64){(float)v, 0.0f};
    return;
  case KILN_C128:
    ((kiln_complex128 *)buf)[i] = (kiln_complex128){v, 0.0};
    return;
  default:
    hd_seti(dt, buf, i, (int64_t)v);
  }
}

void
hd_seti(kiln_dtype dt, void *buf, uint64_t i, int64_t v)
{
  switch (dt) {
  case KILN_F32:
    ((float *)buf)[i] = (float)v;
    return;
  case KILN_F64:
    ((double *)buf)[i] = (double)v;
    return;
  case KILN_I32:
    ((int32_t *)buf)[i] = (int32_t)(uint32_t)(uint64_t)v;
    return;
  case KILN_I64:
    ((int64_t *)buf)[i] = v;
    return;
  case KILN_U8:
    ((uint8_t *)buf)[i] = (uint8_t)(uint64_t)v;
    return;
  case KILN_BOOL:
    ((uint8_t *)buf)[i] = v != 0;
    return;
  case KILN_F16:
  case KILN_BF16:
  case KILN_C64:
  case KILN_C128:
    hd_setf(dt, buf, i, (double)v);
    return;
  default:
    return;
  }
}

static uint64_t
mix(uint64_t x)
{
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

void *
hd_pattern(kiln_dtype dt, uint64_t n, uint64_t seed)
{
  size_t esz = kiln_dtype_size(dt);
  void *buf = calloc(n ? n : 1, esz);
  ck_assert_ptr_nonnull(buf);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t h = mix(i * 0x9e3779b97f4a7c15ull + seed + 1);
    switch (dt) {
    case KILN_F32:
    case KILN_F64:
      /* Distinct, exactly representable: i + a fraction from the hash. */
      hd_setf(dt, buf, i, (double)i + (double)(h % 1024) / 1024.0 - 500.0);
      break;
    case KILN_I32:
      hd_seti(dt, buf, i, (int64_t)(int32_t)(uint32_t)h);
      break;
    case KILN_I64:
      hd_seti(dt, buf, i, (int64_t)h);
      break;
    case KILN_U8:
      hd_seti(dt, buf, i, (int64_t)(h & 0xff));
      break;
    case KILN_BOOL:
      hd_seti(dt, buf, i, (int64_t)((h >> 7) & 1));
      break;
    case KILN_F16:
    case KILN_BF16:
      ((uint16_t *)buf)[i] = (uint16_t)h;
      break;
    case KILN_C64:
      memcpy((char *)buf + i * 8, &h, 8);
      break;
    case KILN_C128: {
      uint64_t w[2] = {h, mix(h + seed)};
      memcpy((char *)buf + i * 16, w, 16);
      break;
    }
    default:
      break;
    }
  }
  return buf;
}

void *
hd_values(kiln_dtype dt, uint64_t n, uint64_t seed)
{
  if (dt != KILN_F16 && dt != KILN_BF16 && dt != KILN_C64 && dt != KILN_C128)
    return hd_pattern(dt, n, seed);
  void *buf = calloc(n ? n : 1, kiln_dtype_size(dt));
  ck_assert_ptr_nonnull(buf);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t h = mix(i * 0x9e3779b97f4a7c15ull + seed + 1);
    double re = (double)(h % 4096) / 97.0 - 21.0, im = (double)((h >> 20) % 4096) / 61.0 - 33.0;
    if (dt == KILN_C64)
      ((kiln_complex64 *)buf)[i] = (kiln_complex64){(float)re, (float)im};
    else if (dt == KILN_C128)
      ((kiln_complex128 *)buf)[i] = (kiln_complex128){re, im};
    else
      hd_setf(dt, buf, i, re);
  }
  return buf;
}

kiln_tensor *
hd_make_values(kiln_dtype dt, size_t nd, const int64_t *shape, uint64_t seed, void **host)
{
  void *data = hd_values(dt, hd_numel(nd, shape), seed);
  kiln_tensor *t = hd_upload(dt, nd, shape, data);
  if (host)
    *host = data;
  else
    free(data);
  return t;
}

kiln_tensor *
hd_upload(kiln_dtype dt, size_t nd, const int64_t *shape, const void *data)
{
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_from_host(harness_ctx(), dt, nd, shape, data, &t));
  return t;
}

kiln_tensor *
hd_make(kiln_dtype dt, size_t nd, const int64_t *shape, uint64_t seed, void **host)
{
  void *data = hd_pattern(dt, hd_numel(nd, shape), seed);
  kiln_tensor *t = hd_upload(dt, nd, shape, data);
  if (host)
    *host = data;
  else
    free(data);
  return t;
}

void *
hd_download(const kiln_tensor *t)
{
  uint64_t nb = kiln_tensor_nbytes(t);
  void *buf = malloc(nb ? nb : 1);
  ck_assert_ptr_nonnull(buf);
  KOK(kiln_tensor_download(t, buf, nb));
  hd_expect_bool01(kiln_tensor_dtype(t), buf, kiln_tensor_numel(t), "hd_download");
  return buf;
}

void
hd_expect_bool01(kiln_dtype dt, const void *got, uint64_t n, const char *what)
{
  if (dt != KILN_BOOL)
    return;
  const uint8_t *b = got;
  for (uint64_t i = 0; i < n; i++)
    if (b[i] > 1)
      ck_abort_msg("%s: bool element %llu holds byte %u, not 0 or 1", what, (unsigned long long)i,
                   (unsigned)b[i]);
}

void
hd_expect_bool01_tensor(const kiln_tensor *t, const char *what)
{
  if (kiln_tensor_dtype(t) != KILN_BOOL)
    return;
  uint64_t n = kiln_tensor_numel(t);
  uint8_t *b = malloc(n ? n : 1);
  ck_assert_ptr_nonnull(b);
  KOK(kiln_tensor_download(t, b, n));
  hd_expect_bool01(KILN_BOOL, b, n, what);
  free(b);
}

uint64_t
hd_numel(size_t nd, const int64_t *shape)
{
  uint64_t n = 1;
  for (size_t i = 0; i < nd; i++)
    n *= (uint64_t)shape[i];
  return n;
}

void
hd_unravel(uint64_t i, size_t nd, const int64_t *shape, int64_t *coord)
{
  for (size_t d = nd; d-- > 0;) {
    coord[d] = (int64_t)(i % (uint64_t)shape[d]);
    i /= (uint64_t)shape[d];
  }
}

uint64_t
hd_ravel(size_t nd, const int64_t *shape, const int64_t *coord)
{
  uint64_t i = 0;
  for (size_t d = 0; d < nd; d++)
    i = i * (uint64_t)shape[d] + (uint64_t)coord[d];
  return i;
}

void
hd_expect_shape(const kiln_tensor *t, kiln_dtype dt, size_t nd, const int64_t *shape)
{
  ck_assert_int_eq(kiln_tensor_dtype(t), dt);
  ck_assert_uint_eq(kiln_tensor_ndim(t), nd);
  for (size_t i = 0; i < nd; i++)
    ck_assert_msg(kiln_tensor_dim(t, i) == shape[i], "dim %zu is %lld, expected %lld", i,
                  (long long)kiln_tensor_dim(t, i), (long long)shape[i]);
}

void
hd_expect_map(kiln_dtype dt, const void *got, const void *in, const int64_t *src, uint64_t n,
              const void *fill, const char *what)
{
  size_t esz = kiln_dtype_size(dt);
  for (uint64_t i = 0; i < n; i++) {
    const unsigned char *g = (const unsigned char *)got + i * esz;
    const unsigned char *w = src[i] < 0 ? (const unsigned char *)fill
                                        : (const unsigned char *)in + (uint64_t)src[i] * esz;
    ck_assert_msg(memcmp(g, w, esz) == 0, "%s (%s): element %llu is %g, expected %g (source %lld)",
                  what, kiln_dtype_name(dt), (unsigned long long)i, hd_getf(dt, got, i),
                  src[i] < 0 ? hd_getf(dt, fill, 0) : hd_getf(dt, in, (uint64_t)src[i]),
                  (long long)src[i]);
  }
}

void
hd_expect_equal(kiln_dtype dt, const void *got, const void *want, uint64_t n, const char *what)
{
  size_t esz = kiln_dtype_size(dt);
  for (uint64_t i = 0; i < n; i++)
    ck_assert_msg(memcmp((const char *)got + i * esz, (const char *)want + i * esz, esz) == 0,
                  "%s (%s): element %llu is %g, expected %g", what, kiln_dtype_name(dt),
                  (unsigned long long)i, hd_getf(dt, got, i), hd_getf(dt, want, i));
}

void
hd_host_alloc(struct hd_host *h, kiln_dtype dt, uint64_t n)
{
  h->dt = dt;
  h->n = n;
  h->raw = malloc(n * kiln_dtype_size(dt) + 8);
  h->v = malloc(n * sizeof(long double) + 16);
  ck_assert(h->raw && h->v);
}

/* The real floating dtypes; the others (integers, bool) go through int64_t, exact where a
 * double would round i64 past 2^53. */
static int
real_float(kiln_dtype dt)
{
  return dt == KILN_F32 || dt == KILN_F64 || dt == KILN_F16 || dt == KILN_BF16;
}

void
hd_host_set(struct hd_host *h, uint64_t i, long double v)
{
  if (real_float(h->dt))
    hd_setf(h->dt, h->raw, i, (double)v);
  else
    hd_seti(h->dt, h->raw, i, (int64_t)v);
  h->v[i] = hd_elem(h->dt, h->raw, i);
}

void
hd_host_free(struct hd_host *h)
{
  free(h->raw);
  free(h->v);
}

long double
hd_elem(kiln_dtype dt, const void *p, uint64_t i)
{
  return real_float(dt) ? (long double)hd_getf(dt, p, i) : (long double)hd_geti(dt, p, i);
}
