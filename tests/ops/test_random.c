/*
 * Random suite.
 *
 * 1. Philox4x32-10 known-answer vectors from Random123 (kat_vectors) on the
 *    host replica and on the device (internal hook), plus a long run of
 *    blocks across a 32-bit counter carry.
 * 2. Bitwise checks of every generator against a host replica of the stream
 *    definition (docs/layout.md, cl_kernels/random.cl): same words, same
 *    operation sequences, IEEE float arithmetic with C's fma()/fmaf() where
 *    the kernels call fma() and no other contraction (the suite is compiled
 *    as ISO C11, which keeps GCC from fusing on its own).
 * 3. Determinism: identical bits for forced work-group sizes 1, 7 and 64
 *    (through the ops test hook) and for chunked vs whole generation;
 *    save/restore of the state; the counter advance of every generator.
 * 4. Statistics with fixed seeds: mean and variance (5 sigma), chi-square
 *    on bins (p = 0.001 critical values), Kolmogorov-Smirnov for normals
 *    (1.63 / sqrt(n), the 1% level), a modulo-bias probe for integers, and
 *    permutation uniformity.
 * 5. f16, bf16, c64 and c128: the replica above covers them bitwise; their
 *    relation to the f32/f64 stream (rounding of the same values, complex
 *    pairs), the uniform bounds after rounding, and their statistics.
 * 6. Bad input with exact statuses.
 *
 * This suite links the library's internals for the two test hooks.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "det_math.h"
#include "hostdata.h"
#include "kiln/create.h"
#include "kiln/index.h"
#include "kiln/layout.h"
#include "kiln/random.h"
#include "kiln/tune.h"
#include "ops/ops_common.h"

static kiln_context *
ctx(void)
{
  return harness_ctx();
}

/* ------------------------------------------------------------------ */
/* host replica of the stream                                           */
/* ------------------------------------------------------------------ */

static void
philox(uint32_t c[4], uint32_t k0, uint32_t k1)
{
  for (int r = 0; r < 10; r++) {
    if (r) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = (uint32_t)p1;
    c[2] = n2;
    c[3] = (uint32_t)p0;
  }
}

static void
block_words(uint64_t b, uint32_t c2, uint64_t seed, uint32_t w[4])
{
  w[0] = (uint32_t)b;
  w[1] = (uint32_t)(b >> 32);
  w[2] = c2;
  w[3] = 0;
  philox(w, (uint32_t)seed, (uint32_t)(seed >> 32));
}

static uint64_t
bits53(uint32_t hi, uint32_t lo)
{
  return ((uint64_t)(hi >> 5) << 26) | (lo >> 6);
}

__extension__ typedef unsigned __int128 u128; /* GCC/Clang: the 64x64 -> 128 product of Lemire's method */

/* Host replica: n elements of a generator from state st, into host buffer out. */
enum gen { G_BITS, G_UNIFORM, G_NORMAL, G_INTEGERS, G_BERNOULLI };

struct gen_params {
  double a, b;     /* uniform lo/hi, normal mean/std, bernoulli p */
  int64_t lo, hi;  /* integers */
};

static uint64_t
per_block(enum gen g, kiln_dtype dt)
{
  if (g == G_INTEGERS)
    return 1;
  if (g == G_BERNOULLI)
    return 4;
  if (dt == KILN_C128)
    return 1;
  return kiln_dtype_size(dt) == 8 ? 2 : 4;
}

/* c128 needs fp64 like f64. */
static int
dt_ok(kiln_dtype dt)
{
  return hd_dtype_ok(dt == KILN_C128 ? KILN_F64 : dt);
}

static int
is_half(kiln_dtype dt)
{
  return dt == KILN_F16 || dt == KILN_BF16;
}

static uint16_t
half_round(kiln_dtype dt, float v)
{
  return dt == KILN_F16 ? kiln_f16_from_f32(v) : kiln_bf16_from_f32(v);
}

static float
half_float(kiln_dtype dt, uint16_t b)
{
  return dt == KILN_F16 ? kiln_f16_to_f32(b) : kiln_bf16_to_f32(b);
}

/*
 * The finite storage values nearest a bound, by search over all 2^16
 * patterns (independent of the library's neighbour arithmetic): *up the
 * smallest >= v, *below the largest < v (NAN when none).
 */
static void
half_around(kiln_dtype dt, double v, float *up, float *below)
{
  *up = INFINITY;
  *below = -INFINITY;
  for (uint32_t b = 0; b < 0x10000u; b++) {
    float x = half_float(dt, (uint16_t)b);
    if (!isfinite(x))
      continue;
    if ((double)x >= v && x < *up)
      *up = x;
    if ((double)x < v && x > *below)
      *below = x;
  }
}

static void
set_half(void *out, uint64_t i, uint16_t b)
{
  ((uint16_t *)out)[i] = b;
}

static void
replica(enum gen g, kiln_dtype dt, uint64_t seed, uint64_t counter, uint64_t n,
        const struct gen_params *p, void *out)
{
  uint64_t per = per_block(g, dt);
  float hlo = 0, hhi = 0, hbelow = 0, dummy;
  if (g == G_UNIFORM && is_half(dt)) {
    half_around(dt, p->a, &hlo, &dummy);
    half_around(dt, p->b, &hhi, &dummy);
    half_around(dt, hhi, &dummy, &hbelow);
  }
  for (uint64_t i = 0; i < n; i++) {
    uint64_t j = i / per, t = i % per;
    uint32_t w[4];
    block_words(counter + (g == G_INTEGERS ? i : j), 0, seed, w);
    switch (g) {
    case G_BITS:
      if (dt == KILN_I64)
        ((int64_t *)out)[i] = (int64_t)(((uint64_t)w[2 * t + 1] << 32) | w[2 * t]);
      else
        ((int32_t *)out)[i] = (int32_t)w[t];
      break;
    case G_UNIFORM:
      if (is_half(dt)) {
        /* The documented definition: the f32 element for [L, H), rounded, kept below H. */
        float lo = hlo, hi = hhi;
        float u = (float)(w[t] >> 8) * 0x1p-24f;
        float v = lo + (hi - lo) * u;
        v = v >= hi ? nextafterf(hi, lo) : v;
        uint16_t b = half_round(dt, v);
        set_half(out, i, half_float(dt, b) >= hi ? half_round(dt, hbelow) : b);
      } else if (dt == KILN_F32) {
        float lo = (float)p->a, hi = (float)p->b;
        float u = (float)(w[t] >> 8) * 0x1p-24f;
        float v = lo + (hi - lo) * u;
        ((float *)out)[i] = v >= hi ? nextafterf(hi, lo) : v;
      } else {
        double u = (double)bits53(w[2 * t], w[2 * t + 1]) * 0x1p-53;
        double v = p->a + (p->b - p->a) * u;
        ((double *)out)[i] = v >= p->b ? nextafter(p->b, p->a) : v;
      }
      break;
    case G_NORMAL:
      if (dt == KILN_F32 || is_half(dt) || dt == KILN_C64) {
        /* c64: element i is the pair of f32 elements 2i, 2i + 1 (mean 0 for the imaginary part). */
        int cx = dt == KILN_C64;
        float mean = (float)p->a, sd = cx ? (float)(p->b * 0.70710678118654752440) : (float)p->b;
        for (int part = 0; part <= cx; part++) {
          uint64_t tt = cx ? 2 * t + (uint64_t)part : t, pr = tt / 2;
          float r = det_sqrt_f32(det_m2log_f32((w[2 * pr] >> 8) + 1u));
          float s, c;
          det_sincos_f32(w[2 * pr + 1] >> 8, &s, &c);
          float z = tt % 2 ? r * s : r * c;
          float v = fmaf(sd, z, part ? 0.0f : mean);
          if (is_half(dt))
            set_half(out, i, half_round(dt, v));
          else
            ((float *)out)[cx ? 2 * i + (uint64_t)part : i] = v;
        }
      } else {
        int cx = dt == KILN_C128;
        double sd = cx ? p->b * 0.70710678118654752440 : p->b;
        double r = sqrt(-2.0 * det_log_f64(bits53(w[0], w[1]) + 1));
        double s, c;
        det_sincos_f64(bits53(w[2], w[3]), &s, &c);
        if (cx) {
          ((double *)out)[2 * i] = fma(sd, r * c, p->a);
          ((double *)out)[2 * i + 1] = fma(sd, r * s, 0.0);
        } else {
          ((double *)out)[i] = fma(sd, t ? r * s : r * c, p->a);
        }
      }
      break;
    case G_INTEGERS: {
      uint64_t span = (uint64_t)p->hi - (uint64_t)p->lo, value = 0;
      int wide = span > 0x100000000ull;
      uint64_t thr = wide ? (0 - span) % span : (0x100000000ull - span) % span;
      for (uint32_t round = 0;; round++) {
        if (round)
          block_words(counter + i, round, seed, w);
        int done = 0;
        for (int k = 0; k < (wide ? 2 : 4) && !done; k++) {
          if (wide) {
            uint64_t x = ((uint64_t)w[2 * k + 1] << 32) | w[2 * k];
            u128 m = (u128)x * span;
            if ((uint64_t)m >= thr) {
              value = (uint64_t)(m >> 64);
              done = 1;
            }
          } else {
            uint64_t m = (uint64_t)w[k] * span;
            if ((m & 0xffffffffull) >= thr) {
              value = m >> 32;
              done = 1;
            }
          }
        }
        if (done)
          break;
      }
      hd_seti(dt, out, i, (int64_t)((uint64_t)p->lo + value));
      break;
    }
    case G_BERNOULLI: {
      uint64_t thr = (uint64_t)ldexp(p->a, 32);
      int one = (uint64_t)w[t] < thr;
      if (is_half(dt))
        set_half(out, i, half_round(dt, (float)one));
      else if (dt == KILN_C64)
        ((float *)out)[2 * i] = (float)one, ((float *)out)[2 * i + 1] = 0.0f;
      else if (dt == KILN_C128)
        ((double *)out)[2 * i] = one, ((double *)out)[2 * i + 1] = 0.0;
      else
        hd_seti(dt, out, i, one);
      break;
    }
    }
  }
}

/* Runs generator g on the device into a fresh tensor of n elements; returns its host copy. */
static void *
device_gen(enum gen g, kiln_dtype dt, uint64_t n, const struct gen_params *p)
{
  int64_t shape = (int64_t)n;
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_create(ctx(), dt, 1, &shape, &t));
  switch (g) {
  case G_BITS:
    KOK(kiln_random_bits(ctx(), t));
    break;
  case G_UNIFORM:
    KOK(kiln_random_uniform(ctx(), t, p->a, p->b));
    break;
  case G_NORMAL:
    KOK(kiln_random_normal(ctx(), t, p->a, p->b));
    break;
  case G_INTEGERS:
    KOK(kiln_random_integers(ctx(), t, p->lo, p->hi));
    break;
  case G_BERNOULLI:
    KOK(kiln_random_bernoulli(ctx(), t, p->a));
    break;
  }
  void *h = hd_download(t);
  KOK(kiln_tensor_release(t));
  return h;
}

struct gen_case {
  enum gen g;
  kiln_dtype dt;
  struct gen_params p;
  const char *name;
};

static const struct gen_case gen_cases[] = {
    {G_BITS, KILN_I32, {0, 0, 0, 0}, "bits i32"},
    {G_BITS, KILN_I64, {0, 0, 0, 0}, "bits i64"},
    {G_UNIFORM, KILN_F32, {0, 1, 0, 0}, "uniform f32 [0,1)"},
    {G_UNIFORM, KILN_F32, {1, 2, 0, 0}, "uniform f32 [1,2)"},
    {G_UNIFORM, KILN_F32, {-3.5, 1e3, 0, 0}, "uniform f32 [-3.5,1000)"},
    {G_UNIFORM, KILN_F64, {0, 1, 0, 0}, "uniform f64 [0,1)"},
    {G_UNIFORM, KILN_F64, {-1e-3, 7, 0, 0}, "uniform f64"},
    {G_NORMAL, KILN_F32, {0, 1, 0, 0}, "normal f32"},
    {G_NORMAL, KILN_F32, {-2, 0.5, 0, 0}, "normal f32 shifted"},
    {G_NORMAL, KILN_F64, {0, 1, 0, 0}, "normal f64"},
    {G_NORMAL, KILN_F64, {10, 3, 0, 0}, "normal f64 shifted"},
    {G_INTEGERS, KILN_I32, {0, 0, -5, 17}, "integers i32 [-5,17)"},
    {G_INTEGERS, KILN_I32, {0, 0, INT32_MIN, INT32_MAX}, "integers i32 wide"},
    {G_INTEGERS, KILN_I64, {0, 0, 0, 3ll << 40}, "integers i64 [0,3<<40)"},
    {G_INTEGERS, KILN_I64, {0, 0, INT64_MIN, INT64_MAX}, "integers i64 full"},
    {G_INTEGERS, KILN_I64, {0, 0, 0, 0xC0000000ll}, "integers i64 3<<30"},
    {G_INTEGERS, KILN_I64, {0, 0, 0, 1ll << 32}, "integers i64 span 2^32"},
    {G_INTEGERS, KILN_I64, {0, 0, -1, 1ll << 32}, "integers i64 span 2^32+1"},
    {G_INTEGERS, KILN_U8, {0, 0, 0, 256}, "integers u8"},
    {G_INTEGERS, KILN_U8, {0, 0, 3, 10}, "integers u8 [3,10)"},
    {G_BERNOULLI, KILN_BOOL, {0.3, 0, 0, 0}, "bernoulli bool"},
    {G_BERNOULLI, KILN_F32, {0.75, 0, 0, 0}, "bernoulli f32"},
    {G_BERNOULLI, KILN_I64, {1.0, 0, 0, 0}, "bernoulli i64 p=1"},
    {G_BERNOULLI, KILN_U8, {0.0, 0, 0, 0}, "bernoulli u8 p=0"},
    {G_UNIFORM, KILN_F16, {0, 1, 0, 0}, "uniform f16 [0,1)"},
    {G_UNIFORM, KILN_F16, {-3.5, 1e3, 0, 0}, "uniform f16 [-3.5,1000)"},
    {G_UNIFORM, KILN_F16, {0.1, 0.3, 0, 0}, "uniform f16 [0.1,0.3) (bounds not in f16)"},
    {G_UNIFORM, KILN_F16, {1, 1.0009765625, 0, 0}, "uniform f16 [1,1+2^-10) (one value)"},
    {G_UNIFORM, KILN_F16, {-1, 0, 0, 0}, "uniform f16 [-1,0) (tie at -0)"},
    {G_UNIFORM, KILN_BF16, {0, 1, 0, 0}, "uniform bf16 [0,1)"},
    {G_UNIFORM, KILN_BF16, {100, 101, 0, 0}, "uniform bf16 [100,101)"},
    {G_NORMAL, KILN_F16, {0, 1, 0, 0}, "normal f16"},
    {G_NORMAL, KILN_BF16, {-2, 0.5, 0, 0}, "normal bf16 shifted"},
    {G_NORMAL, KILN_C64, {0, 1, 0, 0}, "normal c64"},
    {G_NORMAL, KILN_C64, {3, 2, 0, 0}, "normal c64 shifted"},
    {G_NORMAL, KILN_C128, {0, 1, 0, 0}, "normal c128"},
    {G_NORMAL, KILN_C128, {-1, 0.25, 0, 0}, "normal c128 shifted"},
    {G_BERNOULLI, KILN_F16, {0.5, 0, 0, 0}, "bernoulli f16"},
    {G_BERNOULLI, KILN_BF16, {0.25, 0, 0, 0}, "bernoulli bf16"},
    {G_BERNOULLI, KILN_C64, {0.5, 0, 0, 0}, "bernoulli c64"},
    {G_BERNOULLI, KILN_C128, {0.9, 0, 0, 0}, "bernoulli c128"},
};
#define NGEN (sizeof gen_cases / sizeof gen_cases[0])

/* ------------------------------------------------------------------ */
/* known answers                                                        */
/* ------------------------------------------------------------------ */

static const uint32_t kat[3][10] = {
    /* ctr[4], key[2], expected[4]; Random123 kat_vectors, philox4x32 10 */
    {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
    {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e,
     0xa20bc7c6, 0x6d5451fd},
    {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb,
     0x5001e420, 0x24126ea1},
};

START_TEST(philox_known_answers)
{
  for (int v = 0; v < 3; v++) {
    uint32_t c[4] = {kat[v][0], kat[v][1], kat[v][2], kat[v][3]};
    philox(c, kat[v][4], kat[v][5]);
    for (int i = 0; i < 4; i++)
      ck_assert_msg(c[i] == kat[v][6 + i], "host KAT %d word %d: %08x", v, i, c[i]);
    uint32_t got[4];
    KOK(kiln__random_philox_blocks(ctx(), &kat[v][4], &kat[v][0], 1, got));
    for (int i = 0; i < 4; i++)
      ck_assert_msg(got[i] == kat[v][6 + i], "device KAT %d word %d: %08x, expected %08x", v, i,
                    got[i], kat[v][6 + i]);
  }
  /* 3000 blocks crossing the 2^32 carry of the low counter word. */
  uint32_t key[2] = {0x01234567, 0x89abcdef}, ctr[4] = {0xfffffa00u, 41, 7, 9};
  uint32_t *got = malloc(3000 * 16);
  KOK(kiln__random_philox_blocks(ctx(), key, ctr, 3000, got));
  for (uint64_t j = 0; j < 3000; j++) {
    uint64_t b = (((uint64_t)ctr[1] << 32) | ctr[0]) + j;
    uint32_t c[4] = {(uint32_t)b, (uint32_t)(b >> 32), ctr[2], ctr[3]};
    philox(c, key[0], key[1]);
    for (int i = 0; i < 4; i++)
      ck_assert_msg(got[j * 4 + i] == c[i], "block %llu word %d", (unsigned long long)j, i);
  }
  free(got);
  /* The public stream: bits of seed 0 at counter 0 start with the first KAT vector. */
  KOK(kiln_rng_seed(ctx(), 0));
  int64_t four = 4;
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_create(ctx(), KILN_I32, 1, &four, &t));
  KOK(kiln_random_bits(ctx(), t));
  uint32_t w[4];
  KOK(kiln_tensor_download(t, w, sizeof w));
  for (int i = 0; i < 4; i++)
    ck_assert_uint_eq(w[i], kat[0][6 + i]);
  KOK(kiln_tensor_release(t));
}
END_TEST

/* ------------------------------------------------------------------ */
/* bitwise replica, determinism, state                                  */
/* ------------------------------------------------------------------ */

START_TEST(generators_match_the_stream_definition)
{
  static const uint64_t sizes[] = {0, 1, 3, 4, 5, 1021, 4096};
  for (size_t c = 0; c < NGEN; c++) {
    const struct gen_case *gc = &gen_cases[c];
    if (!dt_ok(gc->dt))
      continue;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
      uint64_t n = sizes[si];
      if (!harness_fits(n))
        continue;
      kiln_rng_state st = {0x9e3779b97f4a7c15ull ^ (c * 1000 + si), 0xfffffffffffff000ull + si};
      KOK(kiln_rng_state_set(ctx(), &st));
      void *got = device_gen(gc->g, gc->dt, n, &gc->p);
      void *want = calloc(n ? n : 1, 16);
      replica(gc->g, gc->dt, st.seed, st.counter, n, &gc->p, want);
      hd_expect_equal(gc->dt, got, want, n, gc->name);
      /* The counter moved past exactly the blocks read (wrapping through 2^64). */
      kiln_rng_state after;
      KOK(kiln_rng_state_get(ctx(), &after));
      uint64_t per = per_block(gc->g, gc->dt);
      ck_assert_msg(after.counter == st.counter + (n + per - 1) / per && after.seed == st.seed,
                    "%s: counter advanced to %llx", gc->name, (unsigned long long)after.counter);
      free(got);
      free(want);
    }
  }
}
END_TEST

START_TEST(independent_of_local_size_and_chunking)
{
  static const size_t locals[] = {1, 7, 64};
  const uint64_t n = (uint64_t)harness_size(4096, 1024);
  for (size_t c = 0; c < NGEN; c++) {
    const struct gen_case *gc = &gen_cases[c];
    if (!dt_ok(gc->dt))
      continue;
    kiln_rng_state st = {1234567 + c, 99};
    KOK(kiln_rng_state_set(ctx(), &st));
    void *whole = device_gen(gc->g, gc->dt, n, &gc->p);
    for (size_t l = 0; l < sizeof locals / sizeof locals[0]; l++) {
      kiln__launch_local_override = locals[l];
      KOK(kiln_rng_state_set(ctx(), &st));
      void *got = device_gen(gc->g, gc->dt, n, &gc->p);
      kiln__launch_local_override = 0;
      hd_expect_equal(gc->dt, got, whole, n, gc->name);
      free(got);
    }
    /* Chunks whose sizes are multiples of the per-block count give the same values. */
    uint64_t per = per_block(gc->g, gc->dt);
    uint64_t chunks[3] = {per * 3, per * 250, n - per * 253};
    size_t esz = kiln_dtype_size(gc->dt);
    unsigned char *joined = malloc(n * esz);
    KOK(kiln_rng_state_set(ctx(), &st));
    for (uint64_t k = 0, pos = 0; k < 3; pos += chunks[k], k++) {
      void *part = device_gen(gc->g, gc->dt, chunks[k], &gc->p);
      memcpy(joined + pos * esz, part, chunks[k] * esz);
      free(part);
    }
    hd_expect_equal(gc->dt, joined, whole, n, gc->name);
    free(joined);
    free(whole);
  }
}
END_TEST

/*
 * random_normal's launch parameters (the tuner family "random": local size,
 * KILN_RNG_BLOCKS, the block vectors per work-item, and KILN_RNG_VEC, the
 * blocks per vector) change no bit: every value
 * the tuner or the defaults can pick, for each normal dtype, at element
 * offsets that keep the kernel's vector stores aligned (0) and that do not
 * (1, 3), sizes with tail blocks, and a capped grid (the grid-stride loop);
 * the elements around the view stay untouched.
 */
START_TEST(normal_launch_shapes_and_offsets)
{
  static const kiln_dtype dts[] = {KILN_F32, KILN_F64, KILN_F16, KILN_BF16, KILN_C64, KILN_C128};
  static const char *const shapes[] = {"", "blocks_per_item=1 vec_width=1 wg_size=64",
                                       "blocks_per_item=2 vec_width=4 wg_size=128",
                                       "blocks_per_item=4 vec_width=16",
                                       "blocks_per_item=1 vec_width=8 wg_size=16"};
  static const uint64_t sizes[] = {1, 5, 1021, 4099};
  static const uint64_t offs[] = {0, 1, 3};
  const struct gen_params p = {0.5, 2, 0, 0};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
    kiln_dtype dt = dts[d];
    if (!dt_ok(dt))
      continue;
    size_t esz = kiln_dtype_size(dt);
    /* The 16-bit and complex dtypes share the f32 and f64 arithmetic: every shape for f32 and
     * f64, the defaults and one other for the others (a program build each on PoCL). */
    int all = dt == KILN_F32 || dt == KILN_F64;
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
      if (!all && sh != 0 && sh != 2)
        continue;
      KOK(kiln_tune_override(ctx(), "random", dt, NULL, shapes[sh][0] ? shapes[sh] : NULL));
      for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        for (size_t oi = 0; oi < sizeof offs / sizeof offs[0]; oi++) {
          uint64_t n = sizes[si], off = offs[oi];
          int64_t whole = (int64_t)(off + n + 5);
          kiln_tensor *buf = NULL, *view = NULL;
          KOK(kiln_tensor_zeros(ctx(), dt, 1, &whole, &buf));
          cl_mem mem;
          size_t base;
          KOK(kiln_tensor_cl_mem(buf, &mem, &base));
          int64_t shape = (int64_t)n;
          KOK(kiln_tensor_wrap(ctx(), mem, base + off * esz, dt, 1, &shape, &view));
          kiln_rng_state st = {0xfeedull + sh, 0xfffffffffffffff0ull + si};
          KOK(kiln_rng_state_set(ctx(), &st));
          /* A capped grid: each work-item's loop takes several rounds. */
          kiln__launch_max_groups = si == 3 && oi == 1 ? 2 : 0;
          KOK(kiln_random_normal(ctx(), view, p.a, p.b));
          kiln__launch_max_groups = 0;
          unsigned char *got = hd_download(buf);
          unsigned char *want = calloc((size_t)whole, esz);
          replica(G_NORMAL, dt, st.seed, st.counter, n, &p, want + off * esz);
          char what[96];
          snprintf(what, sizeof what, "normal %s '%s' n=%llu offset %llu", kiln_dtype_name(dt),
                   shapes[sh], (unsigned long long)n, (unsigned long long)off);
          hd_expect_equal(dt, got, want, (uint64_t)whole, what);
          free(got);
          free(want);
          KOK(kiln_tensor_release(view));
          KOK(kiln_tensor_release(buf));
        }
      }
    }
    KOK(kiln_tune_override(ctx(), "random", dt, NULL, NULL));
  }
}
END_TEST

START_TEST(state_save_restore)
{
  KOK(kiln_rng_seed(ctx(), 42));
  kiln_rng_state s0;
  KOK(kiln_rng_state_get(ctx(), &s0));
  ck_assert(s0.seed == 42 && s0.counter == 0);
  struct gen_params p = {0, 1, 0, 0};
  void *a = device_gen(G_NORMAL, KILN_F32, 1000, &p);
  void *b = device_gen(G_NORMAL, KILN_F32, 1000, &p);
  ck_assert(memcmp(a, b, 4000) != 0); /* the stream moved on */
  KOK(kiln_rng_state_set(ctx(), &s0));
  void *c = device_gen(G_NORMAL, KILN_F32, 1000, &p);
  ck_assert_mem_eq(a, c, 4000);
  /* A different seed gives a different stream; a new context starts at {0, 0}. */
  KOK(kiln_rng_seed(ctx(), 43));
  void *d = device_gen(G_NORMAL, KILN_F32, 1000, &p);
  ck_assert(memcmp(a, d, 4000) != 0);
  kiln_context *fresh = NULL;
  KOK(kiln_context_create(NULL, &fresh));
  kiln_rng_state fs;
  KOK(kiln_rng_state_get(fresh, &fs));
  ck_assert(fs.seed == 0 && fs.counter == 0);
  KOK(kiln_context_release(fresh));
  free(a);
  free(b);
  free(c);
  free(d);
  /* A failed call leaves the state alone. */
  KOK(kiln_rng_state_get(ctx(), &s0));
  int64_t four = 4;
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_create(ctx(), KILN_I32, 1, &four, &t));
  KEXPECT(kiln_random_uniform(ctx(), t, 0, 1), KILN_ERR_DTYPE);
  kiln_rng_state s1;
  KOK(kiln_rng_state_get(ctx(), &s1));
  ck_assert(s1.counter == s0.counter);
  KOK(kiln_tensor_release(t));
  KEXPECT(kiln_rng_state_get(ctx(), NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_rng_state_set(ctx(), NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_rng_seed(NULL, 1), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_rng_state_get(NULL, &s1), KILN_ERR_INVALID_HANDLE);
}
END_TEST

/* ------------------------------------------------------------------ */
/* statistics                                                           */
/* ------------------------------------------------------------------ */

/* Chi-square critical value at p = 0.001 (Wilson-Hilferty). */
static double
chi2_crit(double dof)
{
  double z = 3.090232, a = 2.0 / (9.0 * dof);
  double v = 1.0 - a + z * sqrt(a);
  return dof * v * v * v;
}

static double
chi2(const uint64_t *counts, size_t bins, double expected)
{
  double x = 0;
  for (size_t i = 0; i < bins; i++)
    x += ((double)counts[i] - expected) * ((double)counts[i] - expected) / expected;
  return x;
}

static int
cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

START_TEST(uniform_statistics)
{
  const uint64_t n = 1 << 20;
  if (!harness_fits(n))
    return;
  for (int f = 0; f < 2; f++) {
    kiln_dtype dt = f ? KILN_F64 : KILN_F32;
    if (!hd_dtype_ok(dt))
      continue;
    KOK(kiln_rng_seed(ctx(), 2024 + (uint64_t)f));
    struct gen_params p = {-2, 6, 0, 0};
    void *h = device_gen(G_UNIFORM, dt, n, &p);
    double sum = 0, sq = 0;
    uint64_t counts[100] = {0};
    for (uint64_t i = 0; i < n; i++) {
      double v = hd_getf(dt, h, i);
      ck_assert(v >= -2 && v < 6);
      sum += v;
      sq += v * v;
      counts[(int)((v + 2) / 8 * 100)]++;
    }
    double mean = sum / n, var = sq / n - mean * mean;
    /* mean 2, variance 64/12; sigma of the mean sqrt(var/n), of the variance ~ sqrt(0.8 var^2/n) */
    ck_assert_msg(fabs(mean - 2.0) < 5 * sqrt(64.0 / 12 / n), "uniform mean %g", mean);
    ck_assert_msg(fabs(var - 64.0 / 12) < 5 * sqrt(0.8 / n) * 64.0 / 12, "uniform variance %g", var);
    double x2 = chi2(counts, 100, n / 100.0);
    ck_assert_msg(x2 < chi2_crit(99), "uniform chi-square %g over 99 dof", x2);
    free(h);
  }
}
END_TEST

/* Standard normal CDF. */
static double
phi(double x)
{
  return 0.5 * erfc(-x / sqrt(2.0));
}

START_TEST(normal_statistics)
{
  const uint64_t n = 200000;
  if (!harness_fits(n))
    return;
  for (int f = 0; f < 2; f++) {
    kiln_dtype dt = f ? KILN_F64 : KILN_F32;
    if (!hd_dtype_ok(dt))
      continue;
    KOK(kiln_rng_seed(ctx(), 77 + (uint64_t)f));
    struct gen_params p = {1.5, 2.0, 0, 0};
    void *h = device_gen(G_NORMAL, dt, n, &p);
    double *z = malloc(n * sizeof *z), sum = 0, sq = 0, m4 = 0;
    for (uint64_t i = 0; i < n; i++) {
      double v = hd_getf(dt, h, i);
      ck_assert(isfinite(v));
      z[i] = (v - 1.5) / 2.0;
      sum += z[i];
      sq += z[i] * z[i];
      m4 += z[i] * z[i] * z[i] * z[i];
    }
    double mean = sum / n, var = sq / n - mean * mean, kurt = m4 / n;
    ck_assert_msg(fabs(mean) < 5 / sqrt((double)n), "normal mean %g", mean);
    ck_assert_msg(fabs(var - 1) < 5 * sqrt(2.0 / n), "normal variance %g", var);
    ck_assert_msg(fabs(kurt - 3) < 5 * sqrt(96.0 / n), "normal fourth moment %g", kurt);
    qsort(z, n, sizeof *z, cmp_double);
    double d = 0;
    for (uint64_t i = 0; i < n; i++) {
      double c = phi(z[i]);
      double lo = c - (double)i / n, hi = (double)(i + 1) / n - c;
      d = fmax(d, fmax(lo, hi));
    }
    ck_assert_msg(d < 1.63 / sqrt((double)n), "normal KS distance %g (limit %g)", d,
                  1.63 / sqrt((double)n));
    /* Chi-square on 40 equiprobable bins through the CDF. */
    uint64_t counts[40] = {0};
    for (uint64_t i = 0; i < n; i++) {
      int b = (int)(phi(z[i]) * 40);
      counts[b > 39 ? 39 : b]++;
    }
    double x2 = chi2(counts, 40, n / 40.0);
    ck_assert_msg(x2 < chi2_crit(39), "normal chi-square %g over 39 dof", x2);
    free(z);
    free(h);
  }
}
END_TEST

START_TEST(integer_statistics_and_bias)
{
  const uint64_t n = 1 << 18;
  if (!harness_fits(n))
    return;
  KOK(kiln_rng_seed(ctx(), 5));
  struct gen_params p = {0, 0, -3, 14};
  int32_t *h = device_gen(G_INTEGERS, KILN_I32, n, &p);
  uint64_t counts[17] = {0};
  for (uint64_t i = 0; i < n; i++) {
    ck_assert(h[i] >= -3 && h[i] < 14);
    counts[h[i] + 3]++;
  }
  double x2 = chi2(counts, 17, n / 17.0);
  ck_assert_msg(x2 < chi2_crit(16), "integers chi-square %g over 16 dof", x2);
  free(h);
  /* span 3 * 2^30: reducing a 32-bit word modulo the span would put half of
   * the values below 2^30; an unbiased draw puts a third there. */
  struct gen_params q = {0, 0, 0, 0xC0000000ll};
  int64_t *g = device_gen(G_INTEGERS, KILN_I64, n, &q);
  uint64_t low = 0;
  for (uint64_t i = 0; i < n; i++) {
    ck_assert(g[i] >= 0 && g[i] < 0xC0000000ll);
    low += g[i] < (1ll << 30);
  }
  double frac = (double)low / n;
  ck_assert_msg(fabs(frac - 1.0 / 3) < 5 * sqrt(2.0 / 9 / n), "fraction below 2^30: %g", frac);
  free(g);
  /* The full i64 range: both halves, and the extremes' neighbourhood reachable. */
  struct gen_params r = {0, 0, INT64_MIN, INT64_MAX};
  g = device_gen(G_INTEGERS, KILN_I64, n, &r);
  uint64_t neg = 0;
  for (uint64_t i = 0; i < n; i++)
    neg += g[i] < 0;
  ck_assert_msg(fabs((double)neg / n - 0.5) < 5 * sqrt(0.25 / n), "negative fraction %g",
                (double)neg / n);
  free(g);
  /* Bernoulli mean. */
  struct gen_params b = {0.3, 0, 0, 0};
  uint8_t *m = device_gen(G_BERNOULLI, KILN_BOOL, n, &b);
  uint64_t ones = 0;
  for (uint64_t i = 0; i < n; i++) {
    ck_assert(m[i] <= 1);
    ones += m[i];
  }
  ck_assert_msg(fabs((double)ones / n - 0.3) < 5 * sqrt(0.21 / n), "bernoulli mean %g",
                (double)ones / n);
  free(m);
}
END_TEST

/* ------------------------------------------------------------------ */
/* permutation and shuffle                                              */
/* ------------------------------------------------------------------ */

static int
cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Host replica: indices sorted by (64-bit key, index). */
static void
replica_permutation(uint64_t seed, uint64_t counter, uint64_t n, int64_t *perm)
{
  uint64_t *pairs = malloc(2 * n * sizeof *pairs);
  for (uint64_t i = 0; i < n; i++) {
    uint32_t w[4];
    block_words(counter + i / 2, 0, seed, w);
    uint64_t t = i % 2;
    pairs[2 * i] = ((uint64_t)w[2 * t + 1] << 32) | w[2 * t];
    pairs[2 * i + 1] = i;
  }
  /* sort pairs lexicographically: keys are distinct in practice; ties fall back to the index */
  qsort(pairs, n, 2 * sizeof *pairs, cmp_u64);
  for (uint64_t i = 0; i + 1 < n; i++)
    if (pairs[2 * i] == pairs[2 * i + 2] && pairs[2 * i + 1] > pairs[2 * i + 3]) {
      uint64_t v = pairs[2 * i + 1];
      pairs[2 * i + 1] = pairs[2 * i + 3];
      pairs[2 * i + 3] = v;
    }
  for (uint64_t i = 0; i < n; i++)
    perm[i] = (int64_t)pairs[2 * i + 1];
  free(pairs);
}

START_TEST(permutation_and_shuffle)
{
  static const int64_t sizes[] = {0, 1, 2, 5, 1000, 65537};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    for (int d = 0; d < 2; d++) {
      kiln_dtype dt = d ? KILN_I64 : KILN_I32;
      int64_t n = sizes[s];
      if (!harness_fits((uint64_t)n))
        continue;
      kiln_rng_state st = {31337 + s, 1000 * s};
      KOK(kiln_rng_state_set(ctx(), &st));
      kiln_tensor *t = NULL;
      KOK(kiln_random_permutation(ctx(), n, dt, &t));
      hd_expect_shape(t, dt, 1, &n);
      void *h = hd_download(t);
      int64_t *want = malloc(((size_t)n + 1) * sizeof *want);
      replica_permutation(st.seed, st.counter, (uint64_t)n, want);
      uint8_t *seen = calloc((size_t)n + 1, 1);
      for (int64_t i = 0; i < n; i++) {
        int64_t v = hd_geti(dt, h, (uint64_t)i);
        ck_assert(v >= 0 && v < n && !seen[v]);
        seen[v] = 1;
        ck_assert_int_eq(v, want[i]);
      }
      kiln_rng_state after;
      KOK(kiln_rng_state_get(ctx(), &after));
      ck_assert(after.counter == st.counter + (uint64_t)(n + 1) / 2);
      free(seen);
      free(want);
      free(h);
      KOK(kiln_tensor_release(t));
    }
  }
  /* Uniformity over the 120 orders of 5 elements. */
  KOK(kiln_rng_seed(ctx(), 8));
  uint64_t counts[120] = {0};
  const int draws = (int)harness_size(1200, 0); /* the small mode: no statistics */
  for (int k = 0; k < draws; k++) {
    int64_t five = 5;
    kiln_tensor *t = NULL;
    KOK(kiln_random_permutation(ctx(), five, KILN_I64, &t));
    int64_t p[5];
    KOK(kiln_tensor_download(t, p, sizeof p));
    KOK(kiln_tensor_release(t));
    /* Lehmer code -> rank in [0, 120) */
    int rank = 0, used[5] = {0};
    static const int fact[5] = {24, 6, 2, 1, 1};
    for (int i = 0; i < 5; i++) {
      int smaller = 0;
      for (int j = 0; j < p[i]; j++)
        smaller += !used[j];
      used[p[i]] = 1;
      rank += smaller * fact[i];
    }
    counts[rank]++;
  }
  if (draws) {
    double x2 = chi2(counts, 120, draws / 120.0);
    ck_assert_msg(x2 < chi2_crit(119), "permutation chi-square %g over 119 dof", x2);
  }

  /* Shuffle = the same permutation applied to rows; in place works. */
  HD_FOR_DTYPES(dt)
  {
    int64_t shape[3] = {37, 2, 3};
    void *hx;
    kiln_tensor *x = hd_make(dt, 3, shape, 90, &hx);
    kiln_rng_state st = {555, 12};
    KOK(kiln_rng_state_set(ctx(), &st));
    kiln_tensor *out = NULL;
    KOK(kiln_random_shuffle(ctx(), x, &out));
    int64_t perm[37], src[222];
    replica_permutation(st.seed, st.counter, 37, perm);
    for (int i = 0; i < 222; i++)
      src[i] = perm[i / 6] * 6 + i % 6;
    void *g = hd_download(out);
    hd_expect_map(dt, g, hx, src, 222, NULL, "shuffle");
    free(g);
    KOK(kiln_tensor_release(out));
    KOK(kiln_rng_state_set(ctx(), &st));
    out = x;
    KOK(kiln_random_shuffle(ctx(), x, &out));
    g = hd_download(x);
    hd_expect_map(dt, g, hx, src, 222, NULL, "shuffle in place");
    free(g);
    free(hx);
    KOK(kiln_tensor_release(x));
  }
}
END_TEST

/* ------------------------------------------------------------------ */
/* f16, bf16, c64, c128                                                 */
/* ------------------------------------------------------------------ */

/*
 * The 16-bit and complex generators against the f32/f64 ones from the same
 * state (docs/layout.md): f16/bf16 normals are the f32 normals rounded;
 * uniforms with bounds exact in the storage type too, except that a value
 * rounding to hi becomes the one below it; complex normals with mean 0 are
 * the real normals of twice the elements with stddev / sqrt(2). Counters
 * advance as the f32/f64 call's would (complex: per element pair).
 */
START_TEST(half_and_complex_follow_the_real_stream)
{
  const uint64_t n = (uint64_t)harness_size(1 << 16, 1021), n2 = 2 * n;
  kiln_rng_state st = {0xfeedface12345678ull, 77};
  static const kiln_dtype halves[2] = {KILN_F16, KILN_BF16};
  for (int h = 0; h < 2; h++) {
    kiln_dtype dt = halves[h];
    for (int g = 0; g < 2; g++) {
      struct gen_params p = g ? (struct gen_params){-2, 6, 0, 0} : (struct gen_params){1, 3, 0, 0};
      enum gen which = g ? G_UNIFORM : G_NORMAL;
      KOK(kiln_rng_state_set(ctx(), &st));
      float *f = device_gen(which, KILN_F32, n, &p);
      kiln_rng_state after_f;
      KOK(kiln_rng_state_get(ctx(), &after_f));
      KOK(kiln_rng_state_set(ctx(), &st));
      uint16_t *x = device_gen(which, dt, n, &p);
      kiln_rng_state after_x;
      KOK(kiln_rng_state_get(ctx(), &after_x));
      ck_assert(after_x.counter == after_f.counter);
      uint64_t clamped = 0;
      uint16_t below6 = half_round(dt, 6.0f) - 1;
      for (uint64_t i = 0; i < n; i++) {
        uint16_t want = half_round(dt, f[i]);
        if (g && half_float(dt, want) >= 6.0f) {
          want = below6;
          clamped++;
        }
        ck_assert_msg(x[i] == want, "%s %s element %llu: %04x, f32 %.9g rounds to %04x",
                      kiln_dtype_name(dt), g ? "uniform" : "normal", (unsigned long long)i, x[i],
                      (double)f[i], want);
      }
      /* bf16 at 6 is 2^-5 apart: about one value in 500 rounds up to 6 and is kept below. */
      if (g && dt == KILN_BF16 && n >= 4096)
        ck_assert_msg(clamped > 0, "no bf16 uniform rounded to hi: the bound is not exercised");
      free(f);
      free(x);
    }
  }
  /* Complex normal with mean 0 = real normal of 2n elements with stddev / sqrt(2). */
  for (int c = 0; c < 2; c++) {
    kiln_dtype cdt = c ? KILN_C128 : KILN_C64, rdt = c ? KILN_F64 : KILN_F32;
    if (!dt_ok(cdt))
      continue;
    struct gen_params cp = {0, 2, 0, 0};
    struct gen_params rp = {0, c ? 2 * 0.70710678118654752440 : (float)(2 * 0.70710678118654752440),
                            0, 0};
    KOK(kiln_rng_state_set(ctx(), &st));
    void *z = device_gen(G_NORMAL, cdt, n, &cp);
    kiln_rng_state after_z, after_r;
    KOK(kiln_rng_state_get(ctx(), &after_z));
    KOK(kiln_rng_state_set(ctx(), &st));
    void *r = device_gen(G_NORMAL, rdt, n2, &rp);
    KOK(kiln_rng_state_get(ctx(), &after_r));
    ck_assert(after_z.counter == after_r.counter);
    hd_expect_equal(rdt, z, r, n2, c ? "c128 as f64 pairs" : "c64 as f32 pairs");
    free(z);
    free(r);
  }
}
END_TEST

/* Every value in [lo, hi) after rounding, at the sizes of the style guide; bad bounds refused. */
START_TEST(half_uniform_bounds)
{
  static const uint64_t sizes[] = {0, 1, 1021, 1 << 18};
  static const struct {
    kiln_dtype dt;
    double lo, hi;
  } cases[] = {
      {KILN_F16, 1, 1.0009765625}, /* only 1.0; half the f32 values round up to hi */
      {KILN_F16, -1, 0},           /* values rounding to -0 equal hi */
      {KILN_F16, 0.1, 0.3},        /* bounds between f16 values */
      {KILN_F16, 65000, 65504},    /* the top of the range */
      {KILN_F16, -65504, 65504},
      {KILN_BF16, 100, 101},       /* 100 and 100.5 */
      {KILN_BF16, -1e38, 1e38},
      {KILN_BF16, 1e-40, 2e-40},   /* subnormals */
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    kiln_dtype dt = cases[c].dt;
    float top, dummy;
    half_around(dt, cases[c].hi, &dummy, &top);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
      uint64_t n = sizes[si];
      if (!harness_fits(n))
        continue;
      KOK(kiln_rng_seed(ctx(), 900 + c));
      struct gen_params p = {cases[c].lo, cases[c].hi, 0, 0};
      uint16_t *x = device_gen(G_UNIFORM, dt, n, &p);
      int saw_top = 0;
      for (uint64_t i = 0; i < n; i++) {
        double v = half_float(dt, x[i]);
        ck_assert_msg(v >= cases[c].lo && v < cases[c].hi, "%s [%g, %g) element %llu = %g",
                      kiln_dtype_name(dt), cases[c].lo, cases[c].hi, (unsigned long long)i, v);
        saw_top |= (float)v == top;
      }
      if ((c == 0 && n > 0) || (c == 5 && n > 1000))
        ck_assert_msg(saw_top, "%s [%g, %g): the largest value below hi never drawn",
                      kiln_dtype_name(dt), cases[c].lo, cases[c].hi);
      free(x);
    }
  }
  int64_t four = 4;
  kiln_tensor *h = NULL, *b = NULL, *z = NULL;
  KOK(kiln_tensor_create(ctx(), KILN_F16, 1, &four, &h));
  KOK(kiln_tensor_create(ctx(), KILN_BF16, 1, &four, &b));
  KOK(kiln_tensor_create(ctx(), KILN_C64, 1, &four, &z));
  kiln_rng_state s0, s1;
  KOK(kiln_rng_state_get(ctx(), &s0));
  KEXPECT(kiln_random_uniform(ctx(), h, 0.1, 0.10003), KILN_ERR_INVALID_ARGUMENT); /* no f16 */
  KEXPECT(kiln_random_uniform(ctx(), h, 0, 65505), KILN_ERR_INVALID_ARGUMENT);    /* H = inf */
  KEXPECT(kiln_random_uniform(ctx(), b, -3.3e38, 3.3e38), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_random_uniform(ctx(), z, 0, 1), KILN_ERR_DTYPE);
  KEXPECT(kiln_random_normal(ctx(), h, 1e6, 1), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_random_normal(ctx(), h, 0, 7e4), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_random_integers(ctx(), h, 0, 5), KILN_ERR_DTYPE);
  KEXPECT(kiln_random_bits(ctx(), z), KILN_ERR_DTYPE);
  KOK(kiln_random_uniform(ctx(), h, 0, 65504));
  KOK(kiln_rng_state_set(ctx(), &s0));
  KOK(kiln_rng_state_get(ctx(), &s1));
  ck_assert(s1.counter == s0.counter);
  KOK(kiln_tensor_release(h));
  KOK(kiln_tensor_release(b));
  KOK(kiln_tensor_release(z));
}
END_TEST

START_TEST(half_and_complex_statistics)
{
  const uint64_t n = 1 << 18;
  if (!harness_fits(n))
    return;
  static const kiln_dtype halves[2] = {KILN_F16, KILN_BF16};
  for (int h = 0; h < 2; h++) {
    kiln_dtype dt = halves[h];
    /* bf16 rounding (relative 2^-9) adds variance of a few 1e-6: far inside the bounds below. */
    KOK(kiln_rng_seed(ctx(), 3030 + (uint64_t)h));
    struct gen_params u = {-2, 6, 0, 0};
    uint16_t *x = device_gen(G_UNIFORM, dt, n, &u);
    double sum = 0, sq = 0;
    for (uint64_t i = 0; i < n; i++) {
      double v = half_float(dt, x[i]);
      ck_assert(v >= -2 && v < 6);
      sum += v;
      sq += v * v;
    }
    double mean = sum / n, var = sq / n - mean * mean;
    ck_assert_msg(fabs(mean - 2.0) < 5 * sqrt(64.0 / 12 / n), "%s uniform mean %g",
                  kiln_dtype_name(dt), mean);
    ck_assert_msg(fabs(var - 64.0 / 12) < 5 * sqrt(0.8 / n) * 64.0 / 12, "%s uniform variance %g",
                  kiln_dtype_name(dt), var);
    free(x);
    struct gen_params g = {1.5, 2.0, 0, 0};
    x = device_gen(G_NORMAL, dt, n, &g);
    sum = sq = 0;
    for (uint64_t i = 0; i < n; i++) {
      double z = (half_float(dt, x[i]) - 1.5) / 2.0;
      ck_assert(isfinite(z));
      sum += z;
      sq += z * z;
    }
    mean = sum / n, var = sq / n - mean * mean;
    ck_assert_msg(fabs(mean) < 5 / sqrt((double)n), "%s normal mean %g", kiln_dtype_name(dt),
                  mean);
    ck_assert_msg(fabs(var - 1) < 5 * sqrt(2.0 / n) + 1e-3, "%s normal variance %g",
                  kiln_dtype_name(dt), var);
    free(x);
  }
  /* Complex: parts independent with variance std^2 / 2 each, E|x - mean|^2 = std^2. */
  for (int c = 0; c < 2; c++) {
    kiln_dtype dt = c ? KILN_C128 : KILN_C64;
    if (!dt_ok(dt))
      continue;
    KOK(kiln_rng_seed(ctx(), 4040 + (uint64_t)c));
    struct gen_params g = {0.5, 3.0, 0, 0};
    void *x = device_gen(G_NORMAL, dt, n, &g);
    double sr = 0, si = 0, srr = 0, sii = 0, sri = 0;
    for (uint64_t i = 0; i < n; i++) {
      double re = c ? ((double *)x)[2 * i] : ((float *)x)[2 * i];
      double im = c ? ((double *)x)[2 * i + 1] : ((float *)x)[2 * i + 1];
      re = (re - 0.5) / 3.0;
      im /= 3.0;
      sr += re, si += im, srr += re * re, sii += im * im, sri += re * im;
    }
    double mr = sr / n, mi = si / n, vr = srr / n - mr * mr, vi = sii / n - mi * mi;
    double cov = sri / n - mr * mi;
    /* sigma of a part's mean sqrt(0.5/n), of its variance 0.5 sqrt(2/n), of the covariance 0.5/sqrt(n) */
    ck_assert_msg(fabs(mr) < 5 * sqrt(0.5 / n) && fabs(mi) < 5 * sqrt(0.5 / n),
                  "%s means %g %g", kiln_dtype_name(dt), mr, mi);
    ck_assert_msg(fabs(vr - 0.5) < 2.5 * sqrt(2.0 / n) && fabs(vi - 0.5) < 2.5 * sqrt(2.0 / n),
                  "%s part variances %g %g (want 1/2 each)", kiln_dtype_name(dt), vr, vi);
    ck_assert_msg(fabs(vr + vi - 1) < 5 * sqrt(1.0 / n), "%s E|z|^2 = %g", kiln_dtype_name(dt),
                  vr + vi);
    ck_assert_msg(fabs(cov) < 2.5 / sqrt((double)n), "%s covariance of parts %g",
                  kiln_dtype_name(dt), cov);
    free(x);
  }
}
END_TEST

/* Shuffle moves whole elements of every new dtype (f16 as bits: NaN patterns survive). */
START_TEST(shuffle_half_and_complex)
{
  static const kiln_dtype dts[4] = {KILN_F16, KILN_BF16, KILN_C64, KILN_C128};
  for (int d = 0; d < 4; d++) {
    kiln_dtype dt = dts[d];
    if (!dt_ok(dt))
      continue;
    int64_t shape[2] = {41, 3};
    size_t esz = kiln_dtype_size(dt), total = 123;
    unsigned char *hx = malloc(total * esz);
    for (size_t i = 0; i < total * esz; i++)
      hx[i] = (unsigned char)(i * 37 + 11);
    if (dt == KILN_F16)
      ((uint16_t *)hx)[5] = 0x7d01; /* a signalling NaN pattern */
    kiln_tensor *x = hd_upload(dt, 2, shape, hx), *out = NULL;
    kiln_rng_state st = {999, 3};
    KOK(kiln_rng_state_set(ctx(), &st));
    KOK(kiln_random_shuffle(ctx(), x, &out));
    int64_t perm[41], src[123];
    replica_permutation(st.seed, st.counter, 41, perm);
    for (int i = 0; i < 123; i++)
      src[i] = perm[i / 3] * 3 + i % 3;
    void *g = hd_download(out);
    hd_expect_map(dt, g, hx, src, 123, NULL, "shuffle");
    free(g);
    free(hx);
    KOK(kiln_tensor_release(out));
    KOK(kiln_tensor_release(x));
  }
}
END_TEST

/* ------------------------------------------------------------------ */
/* launch geometry of the other families                                */
/* ------------------------------------------------------------------ */

/*
 * This suite links the internals, so it also checks the layout, index and
 * creation kernels under forced geometries: tiny work-groups of odd sizes
 * and at most two work-groups per grid dimension, which makes every
 * grid-stride loop run many times. Results must equal the default launch
 * bit for bit.
 */
/* A tensor full of junk, so an element a kernel forgot cannot pass as correct. */
static kiln_tensor *
junk(kiln_dtype dt, size_t nd, const int64_t *shape)
{
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_full(ctx(), dt, nd, shape, kiln_scalar_i64(-77), &t));
  return t;
}

static void *
run_mix(size_t *bytes)
{
  kiln_context *c = ctx();
  int64_t s4[4] = {3, 5, 7, 11}, perm[4] = {2, 0, 3, 1}, ps[4] = {7, 3, 11, 5};
  int64_t s2[2] = {33, 17}, before[2] = {3, 40}, after[2] = {5, 2}, pads[2] = {41, 59};
  int64_t ts[2] = {17, 33}, ss[2] = {29, 17}, na = 933, ni = 29;
  kiln_tensor *x = NULL, *x2 = NULL, *idx = NULL, *gi = NULL, *mask = NULL, *ms = NULL;
  kiln_tensor *p = junk(KILN_F32, 4, ps), *pad = junk(KILN_I32, 2, pads);
  kiln_tensor *tr = junk(KILN_I32, 2, ts), *sel = junk(KILN_I32, 2, ss);
  kiln_tensor *g = junk(KILN_I32, 2, s2), *sc = junk(KILN_I32, 2, s2), *ar = junk(KILN_F32, 1, &na);
  KOK(kiln_rng_seed(c, 3));
  KOK(kiln_tensor_create(c, KILN_F32, 4, s4, &x));
  KOK(kiln_random_normal(c, x, 0, 1));
  KOK(kiln_permute(c, x, perm, 4, &p));
  KOK(kiln_tensor_create(c, KILN_I32, 2, s2, &x2));
  KOK(kiln_random_integers(c, x2, -50, 50));
  KOK(kiln_pad(c, x2, before, after, KILN_PAD_REFLECT, kiln_scalar_i64(0), &pad));
  KOK(kiln_transpose(c, x2, &tr));
  KOK(kiln_tensor_create(c, KILN_I64, 1, &ni, &idx));
  KOK(kiln_random_integers(c, idx, -33, 33));
  KOK(kiln_index_select(c, x2, 0, idx, &sel));
  KOK(kiln_tensor_create(c, KILN_I32, 2, s2, &gi));
  KOK(kiln_random_integers(c, gi, 0, 17));
  KOK(kiln_gather(c, x2, 1, gi, &g));
  KOK(kiln_scatter(c, x2, 1, gi, x2, KILN_SCATTER_ADD, &sc));
  KOK(kiln_tensor_create(c, KILN_BOOL, 4, s4, &mask));
  KOK(kiln_random_bernoulli(c, mask, 0.4));
  uint64_t count = 0;
  KOK(kiln_masked_select(c, x, mask, &ms, &count));
  KOK(kiln_arange(c, kiln_scalar_f64(0.5), kiln_scalar_f64(700), kiln_scalar_f64(0.75), KILN_F32,
                  &ar));
  kiln_tensor *all[] = {p, pad, tr, sel, g, sc, ms, ar};
  size_t total = 0;
  for (size_t i = 0; i < 8; i++)
    total += (size_t)kiln_tensor_nbytes(all[i]);
  unsigned char *buf = malloc(total + 8), *at = buf;
  memcpy(at, &count, 8);
  at += 8;
  for (size_t i = 0; i < 8; i++) {
    size_t nb = (size_t)kiln_tensor_nbytes(all[i]);
    KOK(kiln_tensor_download(all[i], at, nb));
    at += nb;
    KOK(kiln_tensor_release(all[i]));
  }
  *bytes = total + 8;
  kiln_tensor *rest[] = {x, x2, idx, gi, mask};
  for (size_t i = 0; i < 5; i++)
    KOK(kiln_tensor_release(rest[i]));
  return buf;
}

START_TEST(other_families_any_geometry)
{
  size_t nwant = 0;
  void *want = run_mix(&nwant);
  static const size_t locals[] = {1, 3, 0};
  static const size_t groups[] = {0, 2, 2};
  for (int g = 0; g < 3; g++) {
    kiln__launch_local_override = locals[g];
    kiln__launch_max_groups = groups[g];
    size_t ngot = 0;
    void *got = run_mix(&ngot);
    kiln__launch_local_override = 0;
    kiln__launch_max_groups = 0;
    ck_assert_uint_eq(ngot, nwant);
    ck_assert_msg(memcmp(got, want, nwant) == 0, "geometry %d changed a result", g);
    free(got);
  }
  free(want);
}
END_TEST

/* ------------------------------------------------------------------ */
/* bad input                                                            */
/* ------------------------------------------------------------------ */

START_TEST(bad_input)
{
  int64_t four = 4;
  kiln_tensor *f = NULL, *i = NULL, *u = NULL, *b = NULL, *o = NULL;
  KOK(kiln_tensor_create(ctx(), KILN_F32, 1, &four, &f));
  KOK(kiln_tensor_create(ctx(), KILN_I32, 1, &four, &i));
  KOK(kiln_tensor_create(ctx(), KILN_U8, 1, &four, &u));
  KOK(kiln_tensor_create(ctx(), KILN_BOOL, 1, &four, &b));
  KEXPECT(kiln_random_uniform(ctx(), f, 1, 1), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_random_uniform(ctx(), f, 2, 1), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_random_uniform(ctx(), f, NAN, 1), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_random_uniform(ctx(), f, -3e38, 3e38), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_random_uniform(ctx(), f, 1, 1 + 1e-9), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_random_uniform(ctx(), i, 0, 1), KILN_ERR_DTYPE);
  KEXPECT(kiln_random_normal(ctx(), f, 0, -1), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_random_normal(ctx(), f, INFINITY, 1), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_random_normal(ctx(), b, 0, 1), KILN_ERR_DTYPE);
  KEXPECT(kiln_random_integers(ctx(), i, 5, 5), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_random_integers(ctx(), i, 0, (int64_t)INT32_MAX + 2), KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_random_integers(ctx(), i, INT32_MIN, (int64_t)INT32_MAX + 1));
  KEXPECT(kiln_random_integers(ctx(), u, -1, 5), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_random_integers(ctx(), u, 0, 257), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_random_integers(ctx(), f, 0, 5), KILN_ERR_DTYPE);
  KEXPECT(kiln_random_integers(ctx(), b, 0, 2), KILN_ERR_DTYPE);
  KEXPECT(kiln_random_bernoulli(ctx(), b, 1.5), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_random_bernoulli(ctx(), b, NAN), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_random_bits(ctx(), f), KILN_ERR_DTYPE);
  KEXPECT(kiln_random_permutation(ctx(), -1, KILN_I64, &o), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_random_permutation(ctx(), 3, KILN_F32, &o), KILN_ERR_DTYPE);
  KEXPECT(kiln_random_permutation(ctx(), 3, KILN_I64, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_random_permutation(ctx(), 5, KILN_I64, &f), KILN_ERR_DTYPE);
  kiln_tensor *wrong = NULL;
  KOK(kiln_tensor_create(ctx(), KILN_I64, 1, &four, &wrong));
  KEXPECT(kiln_random_permutation(ctx(), 5, KILN_I64, &wrong), KILN_ERR_SHAPE);
  KOK(kiln_tensor_release(wrong));
  kiln_tensor *s0 = NULL;
  KOK(kiln_tensor_zeros(ctx(), KILN_F32, 0, NULL, &s0));
  KEXPECT(kiln_random_shuffle(ctx(), s0, &o), KILN_ERR_SHAPE);
  KEXPECT(kiln_random_shuffle(ctx(), NULL, &o), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_random_uniform(ctx(), NULL, 0, 1), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_random_normal(NULL, f, 0, 1), KILN_ERR_INVALID_HANDLE);
  kiln_context *other = NULL;
  KOK(kiln_context_create(NULL, &other));
  KEXPECT(kiln_random_bits(other, i), KILN_ERR_CONTEXT_MISMATCH);
  KOK(kiln_context_release(other));
  KEXPECT(kiln_random_bits(other, i), KILN_ERR_INVALID_HANDLE);
  ck_assert_ptr_null(o);
  KOK(kiln_tensor_release(s0));
  KOK(kiln_tensor_release(f));
  KOK(kiln_tensor_release(i));
  KOK(kiln_tensor_release(u));
  KOK(kiln_tensor_release(b));
  KEXPECT(kiln_random_bernoulli(ctx(), b, 0.5), KILN_ERR_INVALID_HANDLE);
}
END_TEST

/*
 * Aliasing: a shuffle into bytes one element before or after x gives what
 * a separate output gives from the same generator state.
 */
START_TEST(overlapping_outputs)
{
  kiln_context *ctx = harness_ctx();
  enum { R = 301, C = 3 };
  const int64_t xs[2] = {R, C};
  int32_t *hx = malloc(R * C * sizeof *hx);
  for (int i = 0; i < R * C; i++)
    hx[i] = i;
  kiln_tensor *sep = hd_upload(KILN_I32, 2, xs, hx);
  for (int out_first = 1; out_first >= 0; out_first--) {
    kiln_rng_state st;
    KOK(kiln_rng_state_get(ctx, &st));
    kiln_tensor *ref = NULL, *x, *y;
    KOK(kiln_random_shuffle(ctx, sep, &ref));
    KOK(kiln_rng_state_set(ctx, &st));
    harness_overlap_pair(KILN_I32, 2, xs, hx, KILN_I32, 2, xs, 4, out_first, &x, &y, NULL);
    KOK(kiln_random_shuffle(ctx, x, &y));
    int32_t *want = harness_download(ref), *got = harness_download(y);
    hd_expect_equal(KILN_I32, got, want, R * C,
                    out_first ? "shuffle into bytes before x" : "shuffle into bytes after x");
    free(want);
    free(got);
    kiln_tensor_release(ref);
    kiln_tensor_release(x);
    kiln_tensor_release(y);
  }
  kiln_tensor_release(sep);
  free(hx);
}
END_TEST

static Suite *
random_suite(void)
{
  Suite *s = suite_create("random");
  TCase *tc = tcase_create("random");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, philox_known_answers);
  tcase_add_test(tc, generators_match_the_stream_definition);
  tcase_add_test(tc, independent_of_local_size_and_chunking);
  tcase_add_test(tc, normal_launch_shapes_and_offsets);
  tcase_add_test(tc, state_save_restore);
  tcase_add_test(tc, uniform_statistics);
  tcase_add_test(tc, normal_statistics);
  tcase_add_test(tc, integer_statistics_and_bias);
  tcase_add_test(tc, permutation_and_shuffle);
  tcase_add_test(tc, half_and_complex_follow_the_real_stream);
  tcase_add_test(tc, half_uniform_bounds);
  tcase_add_test(tc, half_and_complex_statistics);
  tcase_add_test(tc, shuffle_half_and_complex);
  tcase_add_test(tc, overlapping_outputs);
  tcase_add_test(tc, other_families_any_geometry);
  tcase_add_test(tc, bad_input);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  return harness_main(random_suite(), 1);
}
