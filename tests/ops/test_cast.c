/*
 * Cast suite: kiln_cast between every pair of the ten dtypes against a host
 * reference written independently of cast.cl, and the 16-bit float
 * conversions in depth:
 * - all 65,536 f16 and all 65,536 bf16 bit patterns to f32, f64 and the other
 *   16-bit format and back, bit-exact against kiln_f16_to_f32 / kiln_f16_from_f32
 *   and the bf16 twins (host conversions tested exhaustively in the unit suite);
 * - f32 to f16/bf16 on every tie between two neighbouring 16-bit values and the
 *   f32 values just below and above it, overflow to inf, subnormals, NaN;
 * - f64 to f16/bf16 a hair beside those ties, where rounding through f32 would
 *   give the other neighbour (the test checks that such values are present);
 * - i32/i64/u8 to f16, bf16, f32, c64 (and f64, c128) against integer rounding
 *   done exactly on the host (no double rounding through (double)i);
 * - every (from, to) pair on mixed vectors of special and random values at sizes
 *   0, 1, 1031 (a prime) and 2^18 + 1, and into a given output tensor;
 * - bad dtypes and a device without fp64.
 * Every result is compared bit for bit, NaN included: the kernels give the
 * NaN the host conversions give (sign and top payload bits from a float
 * source, the canonical quiet NaN from a double one). One exception: under
 * the oclgrind simulator, which quiets every float it moves, a signalling NaN
 * expected in an f32/f64 result matches its quiet twin (quieted_nan_ok).
 *
 * Programs: one per source dtype (cast.cl holds every target), ten in all.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "harness.h"
#include "hostdata.h"
#include "kiln/tune.h"

#define NDT KILN_DTYPE_COUNT

static int
dt_ok(kiln_dtype dt)
{
  return (dt != KILN_F64 && dt != KILN_C128) || harness_has_fp64();
}

static void *
xmalloc(size_t n)
{
  void *p = malloc(n ? n : 1);
  ck_assert_ptr_nonnull(p);
  return p;
}

static kiln_tensor *
upload(kiln_dtype dt, uint64_t n, const void *data)
{
  int64_t shape = (int64_t)n;
  return hd_upload(dt, 1, &shape, data);
}

/* kiln_cast of host data of n elements: the result downloaded (caller frees). */
static void *
cast_host(kiln_dtype from, const void *data, uint64_t n, kiln_dtype to)
{
  kiln_tensor *x = upload(from, n, data), *y = NULL;
  KOK(kiln_cast(harness_ctx(), x, to, &y));
  hd_expect_shape(y, to, 1, (const int64_t[]){(int64_t)n});
  void *got = hd_download(y);
  KOK(kiln_tensor_release(y));
  KOK(kiln_tensor_release(x));
  return got;
}

static float
f32_of(uint32_t u)
{
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/*
 * Under the oclgrind simulator (KILN_TEST_OCLGRIND=1) every float a kernel moves comes out
 * quiet: a signalling NaN expected in an f32/f64 part matches its quiet twin there.
 */
static int
quieted_nan_ok(kiln_dtype dt, const unsigned char *g, const unsigned char *w)
{
  static int oclgrind = -1;
  if (oclgrind < 0) {
    const char *v = getenv("KILN_TEST_OCLGRIND");
    oclgrind = v && *v && strcmp(v, "0") != 0;
  }
  if (!oclgrind || !(dt == KILN_F32 || dt == KILN_F64 || dt == KILN_C64 || dt == KILN_C128))
    return 0;
  size_t part = dt == KILN_F32 || dt == KILN_C64 ? 4 : 8, es = kiln_dtype_size(dt);
  for (size_t o = 0; o < es; o += part) {
    if (part == 4) {
      uint32_t gu, wu;
      memcpy(&gu, g + o, 4);
      memcpy(&wu, w + o, 4);
      if (gu != wu && !(isnan(f32_of(wu)) && gu == (wu | 0x00400000u)))
        return 0;
    } else {
      uint64_t gu, wu;
      double wd;
      memcpy(&gu, g + o, 8);
      memcpy(&wu, w + o, 8);
      memcpy(&wd, w + o, 8);
      if (gu != wu && !(isnan(wd) && gu == (wu | (UINT64_C(1) << 51))))
        return 0;
    }
  }
  return 1;
}

/* Asserts n elements of dtype are byte-identical, naming the first difference. */
static void
expect_bytes(kiln_dtype dt, const void *got, const void *want, uint64_t n, const char *what)
{
  size_t es = kiln_dtype_size(dt);
  for (uint64_t i = 0; i < n; i++) {
    const unsigned char *g = (const unsigned char *)got + i * es,
                        *w = (const unsigned char *)want + i * es;
    if (memcmp(g, w, es) == 0 || quieted_nan_ok(dt, g, w))
      continue;
    char gs[40] = "", ws[40] = "";
    for (size_t b = es; b-- > 0;) {
      snprintf(gs + strlen(gs), sizeof gs - strlen(gs), "%02x", g[b]);
      snprintf(ws + strlen(ws), sizeof ws - strlen(ws), "%02x", w[b]);
    }
    ck_abort_msg("%s: element %llu of %llu is 0x%s, expected 0x%s", what, (unsigned long long)i,
                 (unsigned long long)n, gs, ws);
  }
}

/* ------------------------------------------------------------------ */
/* The host reference                                                  */
/* ------------------------------------------------------------------ */

/* One source element: an exact integer, or a float (f32 based: f, else the doubles). */
typedef struct {
  int is_int;
  int64_t i;
  int f32_based; /* f32, f16, bf16, c64: the value is f (and fi), NaN payload included */
  float f, fi;
  double re, im;
} hval;

static hval
hv_get(kiln_dtype dt, const void *buf, uint64_t k)
{
  hval v = {0, 0, 0, 0, 0, 0, 0};
  switch (dt) {
  case KILN_I32:
    v.is_int = 1, v.i = ((const int32_t *)buf)[k];
    break;
  case KILN_I64:
    v.is_int = 1, v.i = ((const int64_t *)buf)[k];
    break;
  case KILN_U8:
  case KILN_BOOL:
    v.is_int = 1, v.i = ((const uint8_t *)buf)[k];
    break;
  case KILN_F32:
    v.f32_based = 1, v.f = ((const float *)buf)[k];
    break;
  case KILN_F16:
    v.f32_based = 1, v.f = kiln_f16_to_f32(((const uint16_t *)buf)[k]);
    break;
  case KILN_BF16:
    v.f32_based = 1, v.f = kiln_bf16_to_f32(((const uint16_t *)buf)[k]);
    break;
  case KILN_C64:
    v.f32_based = 1, v.f = ((const kiln_complex64 *)buf)[k].re;
    v.fi = ((const kiln_complex64 *)buf)[k].im;
    break;
  case KILN_F64:
    v.re = ((const double *)buf)[k];
    break;
  case KILN_C128:
    v.re = ((const kiln_complex128 *)buf)[k].re, v.im = ((const kiln_complex128 *)buf)[k].im;
    break;
  case KILN_DTYPE_COUNT:
    break;
  }
  if (v.f32_based)
    v.re = v.f, v.im = v.fi;
  return v;
}

/* i rounded to nearest even at p significant bits, done in integers (exact in a double). */
static double
int_round(int64_t i, int p)
{
  uint64_t u = i < 0 ? 0 - (uint64_t)i : (uint64_t)i;
  int top = 63;
  while (top > 0 && !(u >> top))
    top--;
  int sh = top + 1 - p;
  if (sh > 0) {
    uint64_t q = u >> sh, rem = u & ((UINT64_C(1) << sh) - 1), half = UINT64_C(1) << (sh - 1);
    if (rem > half || (rem == half && (q & 1)))
      q++;
    double d = ldexp((double)q, sh);
    return i < 0 ? -d : d;
  }
  return (double)i; /* exact */
}

static int64_t
to_int(const hval *v, kiln_dtype to)
{
  if (v->is_int)
    return v->i;
  double f = v->re, t = trunc(f);
  if (isnan(f))
    return 0;
  if (to == KILN_I64)
    return t >= 0x1p63 ? INT64_MAX : t < -0x1p63 ? INT64_MIN : (int64_t)t;
  double lo = to == KILN_I32 ? -2147483648.0 : 0.0, hi = to == KILN_I32 ? 2147483647.0 : 255.0;
  return (int64_t)(t < lo ? lo : t > hi ? hi : t);
}

static float
to_f32(const hval *v, int imag)
{
  if (v->is_int)
    return imag ? 0.0f : (float)int_round(v->i, 24);
  if (v->f32_based)
    return imag ? v->fi : v->f;
  return (float)(imag ? v->im : v->re);
}

static double
to_f64(const hval *v, int imag)
{
  if (v->is_int)
    return imag ? 0.0 : (double)v->i;
  return imag ? v->im : v->re;
}

static uint16_t
to_half(const hval *v, kiln_dtype to)
{
  int f16 = to == KILN_F16;
  if (v->is_int) /* int_round is exact in a double: no second rounding below */
    return f16 ? kiln_f16_from_f64(int_round(v->i, 11)) : kiln_bf16_from_f64(int_round(v->i, 8));
  if (v->f32_based)
    return f16 ? kiln_f16_from_f32(v->f) : kiln_bf16_from_f32(v->f);
  return f16 ? kiln_f16_from_f64(v->re) : kiln_bf16_from_f64(v->re);
}

/* Element k of the kiln_cast(from -> to) result of element k of in. */
static void
ref_cast(kiln_dtype from, const void *in, kiln_dtype to, void *out, uint64_t k)
{
  if (from == to) { /* a copy, bits and all */
    size_t es = kiln_dtype_size(to);
    memcpy((char *)out + k * es, (const char *)in + k * es, es);
    return;
  }
  hval v = hv_get(from, in, k);
  switch (to) {
  case KILN_F32:
    ((float *)out)[k] = to_f32(&v, 0);
    return;
  case KILN_F64:
    ((double *)out)[k] = to_f64(&v, 0);
    return;
  case KILN_I32:
    ((int32_t *)out)[k] = (int32_t)(uint32_t)(uint64_t)to_int(&v, to);
    return;
  case KILN_I64:
    ((int64_t *)out)[k] = to_int(&v, to);
    return;
  case KILN_U8:
    ((uint8_t *)out)[k] = (uint8_t)(uint64_t)to_int(&v, to);
    return;
  case KILN_BOOL:
    ((uint8_t *)out)[k] = v.is_int ? v.i != 0 : (v.re != 0 || v.im != 0);
    return;
  case KILN_F16:
  case KILN_BF16:
    ((uint16_t *)out)[k] = to_half(&v, to);
    return;
  case KILN_C64:
    ((kiln_complex64 *)out)[k] = (kiln_complex64){to_f32(&v, 0), to_f32(&v, 1)};
    return;
  case KILN_C128:
    ((kiln_complex128 *)out)[k] = (kiln_complex128){to_f64(&v, 0), to_f64(&v, 1)};
    return;
  case KILN_DTYPE_COUNT:
    break;
  }
  ck_abort_msg("ref_cast: bad dtype");
}

/* ------------------------------------------------------------------ */
/* Mixed test vectors                                                  */
/* ------------------------------------------------------------------ */

static const double float_edges[] = {
    NAN, -NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -1.9, 1.9, 127.5, 255.5, 255.9,
    256.0, 300.0, -1.0, -300.0, 2147483647.0, 2147483648.0, 2147483520.0, -2147483648.0,
    -2147483904.0, -2147483649.0, 4294967296.0, 9007199254740993.0, 0x1p63, -0x1p63,
    9223372036854774784.0, -9.3e18, 1e20, -1e20, 3.4e38, 1e39, -1e39, 1e300, -1e300, 1e-40, 1e-310,
    1.0 + 0x1p-24, 1.0 + 3 * 0x1p-24, 0.1, 16777217.0, -0.99, 0.99,
    /* 16-bit float ranges: f16 max, its tie to inf and just below it, f16 subnormals and
     * half the smallest one, f16 and bf16 ties and a hair above them */
    65504.0, 65520.0, 65519.99, -65520.0, 0x1p-14, 0x1p-24, 0x1p-25, 0x1.8p-25, 0x1p-26,
    1.0 + 0x1p-11, 1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-8, 1.0 + 0x1p-8 + 0x1p-40, 0x1p-133,
    0x1.fep127, 0x1.fe00001p127, 0x1p-149, -0x1p-150, 2049.0, 2051.0, 33554433.0};
#define N_FLOAT_EDGES (sizeof float_edges / sizeof float_edges[0])

static const int64_t int_edges[] = {0,
                                    1,
                                    -1,
                                    2,
                                    127,
                                    128,
                                    255,
                                    256,
                                    257,
                                    -255,
                                    -256,
                                    2049,
                                    2051,
                                    -2051,
                                    65504,
                                    65519,
                                    65520,
                                    65535,
                                    65536,
                                    -65520,
                                    16777217,
                                    16777219,
                                    2147483647,
                                    INT32_MIN,
                                    (INT64_C(1) << 25) + (INT64_C(1) << 17) + 1,
                                    -(INT64_C(1) << 25) - (INT64_C(1) << 17) - 1,
                                    (INT64_C(1) << 32) + 5,
                                    -(INT64_C(1) << 32) - 5,
                                    (INT64_C(1) << 53) + 1,
                                    (INT64_C(1) << 53) + 3,
                                    (INT64_C(1) << 60) + (INT64_C(1) << 52) + 1,
                                    -(INT64_C(1) << 60) - (INT64_C(1) << 52) - 1,
                                    (INT64_C(1) << 60) + (INT64_C(1) << 36) + 1,
                                    INT64_MAX,
                                    INT64_MIN,
                                    INT64_MAX - 1,
                                    0x7fffff80,
                                    0x7fffffc0,
                                    (INT64_C(1) << 40) + 0x80};
#define N_INT_EDGES (sizeof int_edges / sizeof int_edges[0])

static uint64_t
splitmix(uint64_t *s)
{
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* A random double over many binades (about 2^-30 to 2^70, either sign), or a small one. */
static double
rand_double(uint64_t *s)
{
  uint64_t u = splitmix(s);
  double m = (double)(u >> 11) * 0x1p-53;
  if (u & 1)
    return ((u >> 1) & 1 ? -1 : 1) * m * 600.0;
  return ((u >> 1) & 1 ? -1 : 1) * ldexp(0.5 + m, (int)((u >> 2) % 100) - 30);
}

/* Element k of a mixed vector of dtype: edge values first, then random ones. */
static void
mixed_put(kiln_dtype dt, void *buf, uint64_t k, uint64_t *s)
{
  int edge_f = k < N_FLOAT_EDGES, edge_i = k < N_INT_EDGES;
  double d = edge_f ? float_edges[k] : rand_double(s);
  double d2 = edge_f ? float_edges[(k * 7 + 3) % N_FLOAT_EDGES] : rand_double(s);
  uint64_t r = splitmix(s);
  int64_t i = edge_i ? int_edges[k] : (int64_t)(r >> (r & 63));
  if (!edge_i && (r & 64))
    i = -i;
  switch (dt) {
  case KILN_F32:
    ((float *)buf)[k] = (float)d;
    return;
  case KILN_F64:
    ((double *)buf)[k] = d;
    return;
  case KILN_I32:
    ((int32_t *)buf)[k] = (int32_t)(uint32_t)(uint64_t)i;
    return;
  case KILN_I64:
    ((int64_t *)buf)[k] = i;
    return;
  case KILN_U8:
    ((uint8_t *)buf)[k] = (uint8_t)(uint64_t)i;
    return;
  case KILN_BOOL:
    ((uint8_t *)buf)[k] = (uint8_t)((r >> 7) & 1);
    return;
  case KILN_F16: /* every third element a random bit pattern (NaN payloads, subnormals) */
    ((uint16_t *)buf)[k] = !edge_f && r % 3 == 0 ? (uint16_t)(r >> 16) : kiln_f16_from_f64(d);
    return;
  case KILN_BF16:
    ((uint16_t *)buf)[k] = !edge_f && r % 3 == 0 ? (uint16_t)(r >> 16) : kiln_bf16_from_f64(d);
    return;
  case KILN_C64:
    ((kiln_complex64 *)buf)[k] = (kiln_complex64){(float)d, (float)d2};
    return;
  case KILN_C128:
    ((kiln_complex128 *)buf)[k] = (kiln_complex128){d, d2};
    return;
  case KILN_DTYPE_COUNT:
    break;
  }
}

static const uint64_t pair_sizes[] = {0, 1, 1031, (UINT64_C(1) << 18) + 1};
#define N_PAIR_SIZES (sizeof pair_sizes / sizeof pair_sizes[0])

/*
 * Every step count per work-item (1, 2, 4, 8) and step width (lanes 1, 8; 3 leaves a tail)
 * the cast family's tuner or defaults can pick (a program each): all of them for f32
 * sources, for f64 (the other float source of the vector path) 4 steps and lanes 1 and 3,
 * the defaults for the others (their GPU runs take the GPU defaults); the non-default ones
 * at the smaller sizes.
 */
static const char *const cast_shapes[] = {
    NULL, "items_per_thread=4", "items_per_thread=1 lanes=1", "items_per_thread=2 wg_size=64",
    "items_per_thread=8 lanes=8", "items_per_thread=4 lanes=1", "lanes=3"};

/* Every target of one source dtype (one program), at every size; _i is the source dtype. */
START_TEST(cast_every_pair)
{
  kiln_dtype from = (kiln_dtype)_i;
  if (!dt_ok(from))
    return;
  kiln_context *ctx = harness_ctx();
  /* Bit k: cast_shapes[k] runs. */
  unsigned shapes = from == KILN_F32 ? 0x7fu : from == KILN_F64 ? 0x47u : 1u;
  for (size_t si = 0; si < N_PAIR_SIZES * 7; si++) {
    uint64_t n = pair_sizes[si % N_PAIR_SIZES];
    const char *shape = cast_shapes[si / N_PAIR_SIZES];
    if (!(shapes >> (si / N_PAIR_SIZES) & 1u) || !harness_fits(n) ||
        (shape && (n == 0 || n > 1031)))
      continue;
    KOK(kiln_tune_override(ctx, "cast", from, NULL, shape));
    uint64_t seed = 1000 * (uint64_t)from + si;
    void *h = xmalloc(n * kiln_dtype_size(from));
    for (uint64_t k = 0; k < n; k++)
      mixed_put(from, h, k, &seed);
    kiln_tensor *x = upload(from, n, h);
    for (int t = 0; t < NDT; t++) {
      kiln_dtype to = (kiln_dtype)t;
      if (!dt_ok(to))
        continue;
      void *want = xmalloc(n * kiln_dtype_size(to));
      for (uint64_t k = 0; k < n; k++)
        ref_cast(from, h, to, want, k);
      char what[96];
      snprintf(what, sizeof what, "cast %s -> %s, n = %llu, '%s'", kiln_dtype_name(from),
               kiln_dtype_name(to), (unsigned long long)n, shape ? shape : "defaults");
      kiln_tensor *y = NULL;
      KOK(kiln_cast(ctx, x, to, &y));
      hd_expect_shape(y, to, 1, (const int64_t[]){(int64_t)n});
      void *got = hd_download(y);
      expect_bytes(to, got, want, n, what);
      free(got);
      if (n == 1031) { /* into a given output, and in place where the dtypes agree */
        kiln_tensor *o = NULL, *given;
        KOK(kiln_tensor_create(ctx, to, 1, (const int64_t[]){(int64_t)n}, &o));
        given = o;
        KOK(kiln_cast(ctx, x, to, &o));
        ck_assert_ptr_eq(o, given);
        got = hd_download(o);
        expect_bytes(to, got, want, n, what);
        free(got);
        KOK(kiln_tensor_release(o));
        if (to == from) {
          kiln_tensor *xi = upload(from, n, h), *same = xi;
          KOK(kiln_cast(ctx, xi, to, &xi));
          ck_assert_ptr_eq(xi, same);
          got = hd_download(xi);
          expect_bytes(to, got, want, n, what);
          free(got);
          KOK(kiln_tensor_release(xi));
        }
      }
      KOK(kiln_tensor_release(y));
      free(want);
    }
    KOK(kiln_tensor_release(x));
    free(h);
  }
  KOK(kiln_tune_override(ctx, "cast", from, NULL, NULL));
}
END_TEST

/*
 * kiln_copy (its kernel path lives in cast.cl): clEnqueueCopyBuffer and the copy kernel with
 * every vector width and element count per work-item the copy family's tuner or defaults can
 * pick, at view offsets that allow the vector width (0 and 16) and, at the defaults, that
 * force narrower ones (source at 2, destination at 1, 3, 6), sizes with and without a tail;
 * the bytes around the destination stay untouched. Every dtype takes the defaults and the
 * buffer copy, f32 and f64 every value. _i is the dtype.
 */
START_TEST(copy_every_shape)
{
  static const char *const shapes[] = {NULL,
                                       "kernel=0",
                                       "kernel=1 items_per_thread=4",
                                       "kernel=1 items_per_thread=1 vec_width=1 wg_size=64",
                                       "kernel=1 items_per_thread=2 vec_width=16",
                                       "kernel=1 items_per_thread=8 vec_width=4"};
  /* (size, source offset, destination offset); the narrowed widths (the last four) at the
   * defaults only: each (items, width) is a program, and the aligned ones are cast_every_pair's. */
  static const uint64_t cases[][3] = {{1, 0, 0},    {1031, 16, 0}, {4099, 0, 16}, {7, 2, 1},
                                      {1031, 2, 3}, {4099, 2, 6},  {1, 2, 6}};
  kiln_dtype dt = (kiln_dtype)_i;
  if (!dt_ok(dt))
    return;
  kiln_context *ctx = harness_ctx();
  size_t esz = kiln_dtype_size(dt), nshapes = dt == KILN_F32 || dt == KILN_F64 ? 6 : 2;
  for (size_t sh = 0; sh < nshapes; sh++) {
    KOK(kiln_tune_override(ctx, "copy", dt, NULL, shapes[sh]));
    for (size_t si = 0; si < (sh == 0 ? 7u : 3u); si++) {
      uint64_t n = cases[si][0], soff = cases[si][1], off = cases[si][2], whole = n + 16;
      uint64_t seed = 77 * (uint64_t)dt + si;
      unsigned char *h = xmalloc(whole * esz);
      for (uint64_t k = 0; k < whole; k++)
        mixed_put(dt, h, k, &seed);
      kiln_tensor *src = upload(dt, whole, h), *buf = NULL, *s = NULL, *d = NULL;
      KOK(kiln_tensor_zeros(ctx, dt, 1, (const int64_t[]){(int64_t)whole}, &buf));
      cl_mem ms, md;
      size_t bs, bd;
      KOK(kiln_tensor_cl_mem(src, &ms, &bs));
      KOK(kiln_tensor_cl_mem(buf, &md, &bd));
      KOK(kiln_tensor_wrap(ctx, ms, bs + soff * esz, dt, 1, (const int64_t[]){(int64_t)n}, &s));
      KOK(kiln_tensor_wrap(ctx, md, bd + off * esz, dt, 1, (const int64_t[]){(int64_t)n}, &d));
      KOK(kiln_copy(ctx, s, d));
      unsigned char *got = hd_download(buf), *want = calloc(whole, esz);
      memcpy(want + off * esz, h + soff * esz, n * esz);
      char what[128];
      snprintf(what, sizeof what, "copy %s n = %llu from %llu to %llu, '%s'", kiln_dtype_name(dt),
               (unsigned long long)n, (unsigned long long)soff, (unsigned long long)off,
               shapes[sh] ? shapes[sh] : "defaults");
      ck_assert_msg(memcmp(got, want, whole * esz) == 0, "%s: wrong bytes", what);
      free(got);
      free(want);
      free(h);
      KOK(kiln_tensor_release(s));
      KOK(kiln_tensor_release(d));
      KOK(kiln_tensor_release(src));
      KOK(kiln_tensor_release(buf));
    }
  }
  KOK(kiln_tune_override(ctx, "copy", dt, NULL, NULL));
}
END_TEST

/*
 * Casts between views whose offsets break the alignment of the lane vectors (source at
 * element 1, destination at 3: cast.cl's vloadN/vstoreN branch), f32, f64 and i64 sources
 * to every target, at the defaults and at 8 and 16 lanes.
 */
START_TEST(cast_views)
{
  static const char *const shapes[] = {NULL, "lanes=8", "lanes=16"};
  static const kiln_dtype froms[] = {KILN_F32, KILN_F64, KILN_I64};
  kiln_context *ctx = harness_ctx();
  const uint64_t n = 1031, whole = n + 8;
  for (size_t fi = 0; fi < sizeof froms / sizeof froms[0]; fi++) {
    kiln_dtype from = froms[fi];
    if (!dt_ok(from))
      continue;
    size_t fes = kiln_dtype_size(from);
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
      KOK(kiln_tune_override(ctx, "cast", from, NULL, shapes[sh]));
      uint64_t seed = 4242 + 10 * fi + sh;
      unsigned char *h = xmalloc(whole * fes);
      for (uint64_t k = 0; k < whole; k++)
        mixed_put(from, h, k, &seed);
      kiln_tensor *src = upload(from, whole, h), *x = NULL;
      cl_mem ms;
      size_t bs;
      KOK(kiln_tensor_cl_mem(src, &ms, &bs));
      KOK(kiln_tensor_wrap(ctx, ms, bs + fes, from, 1, (const int64_t[]){(int64_t)n}, &x));
      for (int t = 0; t < NDT; t++) {
        kiln_dtype to = (kiln_dtype)t;
        if (!dt_ok(to))
          continue;
        size_t tes = kiln_dtype_size(to);
        kiln_tensor *buf = NULL, *y = NULL;
        KOK(kiln_tensor_zeros(ctx, to, 1, (const int64_t[]){(int64_t)whole}, &buf));
        cl_mem md;
        size_t bd;
        KOK(kiln_tensor_cl_mem(buf, &md, &bd));
        KOK(kiln_tensor_wrap(ctx, md, bd + 3 * tes, to, 1, (const int64_t[]){(int64_t)n}, &y));
        KOK(kiln_cast(ctx, x, to, &y));
        void *want = xmalloc(n * tes);
        for (uint64_t k = 0; k < n; k++)
          ref_cast(from, h + fes, to, want, k);
        char what[96];
        snprintf(what, sizeof what, "cast %s -> %s of views at 1 and 3, '%s'",
                 kiln_dtype_name(from), kiln_dtype_name(to), shapes[sh] ? shapes[sh] : "defaults");
        void *got = hd_download(y);
        expect_bytes(to, got, want, n, what);
        free(got);
        free(want);
        KOK(kiln_tensor_release(y));
        KOK(kiln_tensor_release(buf));
      }
      KOK(kiln_tensor_release(x));
      KOK(kiln_tensor_release(src));
      free(h);
    }
    KOK(kiln_tune_override(ctx, "cast", from, NULL, NULL));
  }
}
END_TEST

/* ------------------------------------------------------------------ */
/* 16-bit floats in depth                                              */
/* ------------------------------------------------------------------ */

/* All 65,536 patterns of f16 (_i == 0) or bf16 to f32, f64 and the other 16-bit format,
 * and the f32/f64 results back. */
START_TEST(half_every_pattern_round_trips)
{
  const int f16 = _i == 0;
  const kiln_dtype hd = f16 ? KILN_F16 : KILN_BF16, other = f16 ? KILN_BF16 : KILN_F16;
  const uint64_t n = harness_small() ? 1024 : 65536;
  const uint64_t step = 65536 / n; /* the small mode samples every 64th pattern */
  uint16_t *h = xmalloc(n * 2), *want16 = xmalloc(n * 2);
  float *wf = xmalloc(n * 4);
  double *wd = xmalloc(n * 8);
  for (uint64_t k = 0; k < n; k++) {
    h[k] = (uint16_t)(k * step + (step > 1 ? k % step : 0));
    wf[k] = f16 ? kiln_f16_to_f32(h[k]) : kiln_bf16_to_f32(h[k]);
    wd[k] = wf[k];
  }
  char what[64];
  snprintf(what, sizeof what, "%s -> f32", kiln_dtype_name(hd));
  float *gf = cast_host(hd, h, n, KILN_F32);
  expect_bytes(KILN_F32, gf, wf, n, what);
  /* back: the f32 of every pattern (NaN payloads included) gives the host's bits */
  for (uint64_t k = 0; k < n; k++)
    want16[k] = f16 ? kiln_f16_from_f32(wf[k]) : kiln_bf16_from_f32(wf[k]);
  uint16_t *g16 = cast_host(KILN_F32, wf, n, hd);
  snprintf(what, sizeof what, "f32 -> %s (every pattern)", kiln_dtype_name(hd));
  expect_bytes(hd, g16, want16, n, what);
  free(g16);
  /* to the other 16-bit format: one rounding from the exact f32 */
  for (uint64_t k = 0; k < n; k++)
    want16[k] = f16 ? kiln_bf16_from_f32(wf[k]) : kiln_f16_from_f32(wf[k]);
  g16 = cast_host(hd, h, n, other);
  snprintf(what, sizeof what, "%s -> %s", kiln_dtype_name(hd), kiln_dtype_name(other));
  expect_bytes(other, g16, want16, n, what);
  free(g16);
  if (harness_has_fp64()) {
    double *gd = cast_host(hd, h, n, KILN_F64);
    snprintf(what, sizeof what, "%s -> f64", kiln_dtype_name(hd));
    expect_bytes(KILN_F64, gd, wd, n, what);
    free(gd);
    for (uint64_t k = 0; k < n; k++)
      want16[k] = f16 ? kiln_f16_from_f64(wd[k]) : kiln_bf16_from_f64(wd[k]);
    g16 = cast_host(KILN_F64, wd, n, hd);
    snprintf(what, sizeof what, "f64 -> %s (every pattern)", kiln_dtype_name(hd));
    expect_bytes(hd, g16, want16, n, what);
    free(g16);
  }
  free(gf);
  free(h);
  free(want16);
  free(wf);
  free(wd);
}
END_TEST

/*
 * Values around every rounding boundary of the 16-bit format: for each pair of
 * neighbouring non-negative values (the largest finite one and 2^(emax+1), for overflow),
 * the midpoint and the values beside it at distance off(midpoint, half-ulp), both signs.
 * Returns the count; vals has room for 6 * 65536.
 */
static uint64_t
boundaries(int f16, double (*off)(double mid, double half_ulp), double *vals)
{
  const uint16_t top = f16 ? 0x7c00 : 0x7f80; /* +inf */
  uint64_t n = 0;
  for (uint32_t b = 0; b < top; b++) {
    double v0 = f16 ? kiln_f16_to_f32((uint16_t)b) : kiln_bf16_to_f32((uint16_t)b);
    double v1 = b + 1 == top ? (f16 ? 0x1p16 : 0x1p128)
                             : (f16 ? kiln_f16_to_f32((uint16_t)(b + 1))
                                    : kiln_bf16_to_f32((uint16_t)(b + 1)));
    double mid = (v0 + v1) / 2, d = off(mid, (v1 - v0) / 2);
    double three[3] = {mid, mid - d, mid + d};
    for (int j = 0; j < 3; j++) {
      vals[n++] = three[j];
      vals[n++] = -three[j];
    }
  }
  return n;
}

/* The f32 neighbours of the midpoint. */
static double
f32_step(double mid, double half_ulp)
{
  (void)half_ulp;
  return (double)nextafterf((float)mid, INFINITY) - mid;
}

/* Far below an f32 ulp of the midpoint: the f64 lies beside the tie, its f32 on it. */
static double
f64_hair(double mid, double half_ulp)
{
  (void)mid;
  return ldexp(half_ulp, -30);
}

static const uint32_t f32_extra[] = {0x7fc00000u,
                                     0xffc00000u,
                                     0x7f800001u,
                                     0xff800001u,
                                     0x7fffffffu,
                                     0xff812345u,
                                     0x7fa00000u,
                                     0x00000001u,
                                     0x80000001u,
                                     0x007fffffu,
                                     0x807fffffu,
                                     0x00400000u,
                                     0x7f7fffffu,
                                     0xff7fffffu,
                                     0x7f800000u,
                                     0xff800000u,
                                     0x477ff000u /* 65520 */,
                                     0x477fefffu,
                                     0x33000000u /* 2^-25 */,
                                     0x33000001u,
                                     0xb3000000u,
                                     0x33800000u /* 2^-24 */};
#define N_F32_EXTRA (sizeof f32_extra / sizeof f32_extra[0])

/* f32 -> f16 and bf16 on every tie and its f32 neighbours, overflow, subnormals and NaN. */
START_TEST(f32_to_half_rounding)
{
  if (harness_small())
    return; /* hundreds of thousands of values: the every-pair case covers the small mode */
  double *d = xmalloc(2 * 6 * 65536 * sizeof *d);
  uint64_t n = boundaries(1, f32_step, d);
  n += boundaries(0, f32_step, d + n);
  float *x = xmalloc((n + N_F32_EXTRA) * 4);
  for (uint64_t k = 0; k < n; k++)
    x[k] = (float)d[k]; /* exact: f32 values by construction */
  for (size_t k = 0; k < N_F32_EXTRA; k++)
    x[n++] = f32_of(f32_extra[k]);
  uint16_t *want = xmalloc(n * 2);
  for (int f16 = 0; f16 < 2; f16++) {
    kiln_dtype hd = f16 ? KILN_F16 : KILN_BF16;
    for (uint64_t k = 0; k < n; k++)
      want[k] = f16 ? kiln_f16_from_f32(x[k]) : kiln_bf16_from_f32(x[k]);
    uint16_t *got = cast_host(KILN_F32, x, n, hd);
    expect_bytes(hd, got, want, n, f16 ? "f32 -> f16 around ties" : "f32 -> bf16 around ties");
    free(got);
  }
  /* Spot checks that the reference itself is what IEEE says (exhaustive in the unit suite). */
  ck_assert_uint_eq(kiln_f16_from_f32(65520.0f), 0x7c00);
  ck_assert_uint_eq(kiln_f16_from_f32(nextafterf(65520.0f, 0)), 0x7bff);
  ck_assert_uint_eq(kiln_f16_from_f32(f32_of(0xffc00000u)), 0xfe00);
  ck_assert_uint_eq(kiln_bf16_from_f32(f32_of(0x80000001u)), 0x8000);
  free(want);
  free(x);
  free(d);
}
END_TEST

/* f64 -> f16 and bf16 a hair beside every tie (and c128 -> f16/bf16 on a sample): one
 * rounding, where rounding through f32 would land on the tie and then on the even value. */
START_TEST(f64_to_half_single_rounding)
{
  if (!harness_has_fp64() || harness_small())
    return;
  double *x = xmalloc((2 * 6 * 65536 + 16) * sizeof *x);
  uint64_t n = boundaries(1, f64_hair, x);
  n += boundaries(0, f64_hair, x + n);
  static const double extra[] = {65520.0 - 0x1p-30,
                                 -65520.0 + 0x1p-30,
                                 0x1.fep127 - 0x1p90,
                                 0x1.fep127 + 0x1p90,
                                 1e300,
                                 -1e300,
                                 1e-300,
                                 -1e-300,
                                 0x1p-1074,
                                 NAN,
                                 -NAN,
                                 INFINITY,
                                 -INFINITY,
                                 DBL_MAX,
                                 0.0,
                                 -0.0};
  for (size_t k = 0; k < sizeof extra / sizeof extra[0]; k++)
    x[n++] = extra[k];
  uint16_t *want = xmalloc(n * 2);
  for (int f16 = 0; f16 < 2; f16++) {
    kiln_dtype hd = f16 ? KILN_F16 : KILN_BF16;
    uint64_t differ = 0;
    for (uint64_t k = 0; k < n; k++) {
      want[k] = f16 ? kiln_f16_from_f64(x[k]) : kiln_bf16_from_f64(x[k]);
      differ += want[k] != (f16 ? kiln_f16_from_f32((float)x[k]) : kiln_bf16_from_f32((float)x[k]));
    }
    ck_assert_uint_gt(differ, 10000); /* the cases double rounding would get wrong */
    uint16_t *got = cast_host(KILN_F64, x, n, hd);
    expect_bytes(hd, got, want, n, f16 ? "f64 -> f16 beside ties" : "f64 -> bf16 beside ties");
    free(got);
    /* the same values as the real parts of c128 (every 16th, to keep it small) */
    uint64_t m = n / 16;
    kiln_complex128 *c = xmalloc(m * sizeof *c);
    uint16_t *wc = xmalloc(m * 2);
    for (uint64_t k = 0; k < m; k++) {
      c[k] = (kiln_complex128){x[16 * k + 1], 1.0};
      wc[k] = want[16 * k + 1];
    }
    got = cast_host(KILN_C128, c, m, hd);
    expect_bytes(hd, got, wc, m, f16 ? "c128 -> f16 beside ties" : "c128 -> bf16 beside ties");
    free(got);
    free(c);
    free(wc);
  }
  free(want);
  free(x);
}
END_TEST

/* Integers to every float target: all of [-70000, 70000] (f16 ties, overflow), and values
 * around the bf16 and f32 ties of every binade up to 2^62, against int_round(). */
START_TEST(int_to_half_rounding)
{
  if (harness_small())
    return;
  uint64_t cap = 140001 + 60 * 8 * 9 + 4096;
  int64_t *v = xmalloc(cap * sizeof *v);
  uint64_t n = 0;
  for (int64_t i = -70000; i <= 70000; i++)
    v[n++] = i;
  static const int64_t qs[] = {128, 129, 200, 255, 0x800000, 0x800001, 0xabcdef, 0xffffff};
  for (int e = 9; e <= 62; e++)
    for (size_t j = 0; j < sizeof qs / sizeof qs[0]; j++) {
      /* q has p significant bits; shifted so its top bit is bit e, the value half a unit
       * above it is a tie of a p-bit format (bf16: 8, f32: 24) */
      int p = qs[j] < 256 ? 8 : 24;
      if (e < p)
        continue;
      int64_t half = INT64_C(1) << (e - p), tie = (qs[j] << (e + 1 - p)) + half;
      for (int64_t dlt = -1; dlt <= 1; dlt++)
        for (int sg = -1; sg <= 1; sg += 2)
          v[n++] = sg * (tie + dlt);
    }
  uint64_t s = 77;
  for (int k = 0; k < 4096 && n < cap; k++) {
    uint64_t r = splitmix(&s);
    v[n++] = (int64_t)(r >> (r & 63)) * ((r & 64) ? -1 : 1);
  }
  ck_assert_uint_le(n, cap);
  int32_t *v32 = xmalloc(n * 4);
  uint64_t n32 = 0;
  for (uint64_t k = 0; k < n; k++)
    if (v[k] >= INT32_MIN && v[k] <= INT32_MAX)
      v32[n32++] = (int32_t)v[k];
  static const kiln_dtype targets[] = {KILN_F16, KILN_BF16, KILN_F32,
                                       KILN_C64, KILN_F64,  KILN_C128};
  for (int wide = 0; wide < 2; wide++) {
    kiln_dtype from = wide ? KILN_I64 : KILN_I32;
    const void *src = wide ? (const void *)v : (const void *)v32;
    uint64_t cnt = wide ? n : n32;
    for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
      kiln_dtype to = targets[t];
      if (!dt_ok(to))
        continue;
      void *want = xmalloc(cnt * kiln_dtype_size(to));
      for (uint64_t k = 0; k < cnt; k++)
        ref_cast(from, src, to, want, k);
      void *got = cast_host(from, src, cnt, to);
      char what[64];
      snprintf(what, sizeof what, "%s -> %s around ties", kiln_dtype_name(from),
               kiln_dtype_name(to));
      expect_bytes(to, got, want, cnt, what);
      free(got);
      free(want);
    }
  }
  /* The reference's rounding on the cases (double)i or f32 would round twice. */
  ck_assert(int_round((INT64_C(1) << 60) + (INT64_C(1) << 52) + 1, 8) == 0x1p60 + 0x1p53);
  ck_assert(int_round((INT64_C(1) << 25) + (INT64_C(1) << 17) + 1, 8) == 0x1p25 + 0x1p18);
  ck_assert(int_round(65520, 11) == 65536.0);
  free(v32);
  free(v);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Bad input                                                           */
/* ------------------------------------------------------------------ */

START_TEST(cast_bad_input)
{
  kiln_context *ctx = harness_ctx();
  float h[3] = {1, 2, 3};
  kiln_tensor *x = upload(KILN_F32, 3, h), *y = NULL;
  KEXPECT(kiln_cast(ctx, x, KILN_DTYPE_COUNT, &y), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "kiln_cast"));
  KEXPECT(kiln_cast(ctx, x, (kiln_dtype)-1, &y), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_cast(ctx, x, KILN_F16, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_cast(ctx, NULL, KILN_F16, &y), KILN_ERR_INVALID_HANDLE);
  ck_assert_ptr_null(y);
  /* a given output of another dtype or shape */
  KOK(kiln_tensor_create(ctx, KILN_BF16, 1, (const int64_t[]){3}, &y));
  KEXPECT(kiln_cast(ctx, x, KILN_F16, &y), KILN_ERR_DTYPE);
  KOK(kiln_tensor_release(y));
  y = NULL;
  KOK(kiln_tensor_create(ctx, KILN_C64, 1, (const int64_t[]){4}, &y));
  KEXPECT(kiln_cast(ctx, x, KILN_C64, &y), KILN_ERR_SHAPE);
  KOK(kiln_tensor_release(y));
  KOK(kiln_tensor_release(x));
}
END_TEST

/* A device without fp64 (simulated): c128 at either end is refused, c64 still works. */
START_TEST(cast_without_fp64)
{
  setenv("KILN_DEBUG_NO_FP64", "1", 1);
  kiln_context *ctx = NULL;
  kiln_status s = kiln_context_create(NULL, &ctx);
  unsetenv("KILN_DEBUG_NO_FP64");
  KOK(s);
  const int64_t n = 2;
  kiln_complex64 h[2] = {{1.5f, -2.0f}, {0.25f, 8.0f}};
  kiln_tensor *x = NULL, *y = NULL, *z = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_C64, 1, &n, h, &x));
  KEXPECT(kiln_cast(ctx, x, KILN_C128, &y), KILN_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "fp64"));
  ck_assert_ptr_null(y);
  KEXPECT(kiln_cast(ctx, x, KILN_F64, &y), KILN_ERR_UNSUPPORTED);
  s = kiln_tensor_create(ctx, KILN_C128, 1, &n, &z);
  if (s == KILN_OK) /* c128 tensors may exist without fp64; casting them may not */
    KEXPECT(kiln_cast(ctx, z, KILN_F32, &y), KILN_ERR_UNSUPPORTED);
  else
    ck_assert_int_eq(s, KILN_ERR_UNSUPPORTED);
  KOK(kiln_cast(ctx, x, KILN_F16, &y));
  uint16_t got[2];
  KOK(kiln_tensor_download(y, got, sizeof got));
  ck_assert_uint_eq(got[0], kiln_f16_from_f32(1.5f));
  ck_assert_uint_eq(got[1], kiln_f16_from_f32(0.25f));
  KOK(kiln_tensor_release(y));
  if (z)
    KOK(kiln_tensor_release(z));
  KOK(kiln_tensor_release(x));
  KOK(kiln_context_release(ctx));
}
END_TEST

static Suite *
cast_suite(void)
{
  Suite *s = suite_create("cast");
  TCase *tc = tcase_create("cast");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, cast_every_pair, 0, NDT);
  tcase_add_loop_test(tc, copy_every_shape, 0, NDT);
  tcase_add_test(tc, cast_views);
  tcase_add_loop_test(tc, half_every_pattern_round_trips, 0, 2);
  tcase_add_test(tc, f32_to_half_rounding);
  tcase_add_test(tc, f64_to_half_single_rounding);
  tcase_add_test(tc, int_to_half_rounding);
  tcase_add_test(tc, cast_bad_input);
  tcase_add_test(tc, cast_without_fp64);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  return harness_main(cast_suite(), 1);
}
