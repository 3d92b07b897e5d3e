/*
 * sort suite: sort/argsort (both paths, every dtype, NaN/+-inf/-0.0, duplicates, all-equal,
 * sorted and reverse-sorted input, lengths 0, 1, 2^k +- 1 and a few million, many short rows,
 * axes first/middle/last, descending, the GPU-shaped radix launch on any device), topk,
 * kthvalue, sortrows, unique (flat and rows, with first/inverse/counts), unique_consecutive,
 * searchsorted (left/right, sorter, batched), isin and the set operations, against host
 * references: a stable comparison sort of the raw host values with NumPy's order (NaN last,
 * -0.0 == +0.0, ties by position). Sorted values are compared bit for bit (so -0.0 keeps its
 * sign and NaNs their bits) and indices exactly (a stable sort has one answer).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/sort_internal.h"

#define EXPECT(cond, ...)        \
  do {                           \
    if (!(cond))                 \
      ck_abort_msg(__VA_ARGS__); \
  } while (0)

static const kiln_dtype all_dtypes[] = {KILN_F32, KILN_F64,  KILN_I32, KILN_I64,
                                        KILN_U8,  KILN_BOOL, KILN_F16, KILN_BF16};
#define NDT (sizeof all_dtypes / sizeof all_dtypes[0])

static int
dt_ok(kiln_dtype dt)
{
  return dt != KILN_F64 || harness_has_fp64();
}

static uint64_t rng = 88172645463325252ull;

static uint64_t
rnd(void)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static int
is_float(kiln_dtype dt)
{
  return dt == KILN_F32 || dt == KILN_F64 || dt == KILN_F16 || dt == KILN_BF16;
}

/* Element i of raw as a double (i64 as its nearest double; ordering of i64 uses hi64). */
static double
hval(kiln_dtype dt, const void *raw, uint64_t i)
{
  switch (dt) {
  case KILN_F32:
    return ((const float *)raw)[i];
  case KILN_F64:
    return ((const double *)raw)[i];
  case KILN_I32:
    return ((const int32_t *)raw)[i];
  case KILN_I64:
    return (double)((const int64_t *)raw)[i];
  case KILN_U8:
  case KILN_BOOL:
    return ((const uint8_t *)raw)[i];
  case KILN_F16:
    return kiln_f16_to_f32(((const uint16_t *)raw)[i]);
  case KILN_BF16:
    return kiln_bf16_to_f32(((const uint16_t *)raw)[i]);
  default:
    return 0;
  }
}

/* NumPy's order of elements i and j of raw: -1, 0, 1 (NaN last, zeros equal). */
static int
hcmp(kiln_dtype dt, const void *raw, uint64_t i, uint64_t j)
{
  if (dt == KILN_I64) {
    int64_t a = ((const int64_t *)raw)[i], b = ((const int64_t *)raw)[j];
    return a < b ? -1 : a > b;
  }
  double a = hval(dt, raw, i), b = hval(dt, raw, j);
  int na = isnan(a), nb = isnan(b);
  if (na || nb)
    return na - nb;
  return a < b ? -1 : a > b;
}

static kiln_dtype cmp_dt;
static const void *cmp_raw;
static const uint8_t *cmp_base; /* rows: the element offsets of each row start */
static int cmp_desc;

static int
idx_cmp(const void *pa, const void *pb)
{
  uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
  int c = hcmp(cmp_dt, cmp_raw, a, b);
  if (cmp_desc)
    c = -c;
  return c ? c : (a > b) - (a < b);
}

/* perm (n element offsets of raw, in input order) sorted stably in place. */
static void
ref_sort(kiln_dtype dt, const void *raw, uint64_t *perm, uint64_t n, int desc)
{
  cmp_dt = dt;
  cmp_raw = raw;
  cmp_desc = desc;
  (void)cmp_base;
  qsort(perm, n, sizeof *perm, idx_cmp);
}

enum { PAT_RANDOM, PAT_DUPS, PAT_SPECIAL, PAT_EQUAL, PAT_SORTED, PAT_REVERSE, PAT_COUNT };

/* n values of dt of the pattern into a new host buffer. */
static void *
make_data(kiln_dtype dt, uint64_t n, int pat)
{
  size_t es = kiln_dtype_size(dt);
  uint8_t *h = malloc(n * es + 16);
  for (uint64_t i = 0; i < n; i++) {
    double v;
    uint64_t r = rnd();
    switch (pat) {
    case PAT_DUPS:
      v = (double)(r % 7) - 3;
      break;
    case PAT_EQUAL:
      v = 5;
      break;
    case PAT_SORTED:
      v = (double)(i % 100000);
      break;
    case PAT_REVERSE:
      v = (double)((n - i) % 100000);
      break;
    case PAT_SPECIAL: {
      static const double sp[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.5, -2.25, -NAN};
      v = sp[r % 8];
      if (!is_float(dt))
        v = (double)(r % 5);
      break;
    }
    default:
      v = (double)((int64_t)(r >> 20) % 2000001 - 1000000) / 8;
    }
    if (dt == KILN_BOOL)
      v = v != 0 && !isnan(v);
    else if (dt == KILN_U8)
      v = fmod(fabs(isnan(v) || isinf(v) ? 7 : v), 256);
    switch (dt) {
    case KILN_F32:
      ((float *)h)[i] = (float)v;
      break;
    case KILN_F64:
      ((double *)h)[i] = v;
      break;
    case KILN_I32:
      ((int32_t *)h)[i] = pat == PAT_RANDOM ? (int32_t)(uint32_t)r : (int32_t)v;
      break;
    case KILN_I64:
      ((int64_t *)h)[i] = pat == PAT_RANDOM ? (int64_t)r : (int64_t)v;
      break;
    case KILN_U8:
    case KILN_BOOL:
      ((uint8_t *)h)[i] = (uint8_t)v;
      break;
    case KILN_F16:
      ((uint16_t *)h)[i] = kiln_f16_from_f32((float)v);
      break;
    case KILN_BF16:
      ((uint16_t *)h)[i] = kiln_bf16_from_f32((float)v);
      break;
    default:
      break;
    }
  }
  return h;
}

static kiln_tensor *
upload(kiln_dtype dt, size_t nd, const int64_t *shape, const void *h)
{
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_from_host(harness_ctx(), dt, nd, shape, h, &t));
  return t;
}

static int64_t *
down_i64(const kiln_tensor *t)
{
  return harness_download(t);
}

/*
 * Checks values/indices of a sort of x (host raw, shape) along axis against the reference;
 * positions [ostart, ostart + olen) of each sorted row (the whole row for a sort).
 */
static void
check_rows(kiln_dtype dt, const void *raw, size_t nd, const int64_t *shape, size_t ax, int desc,
           uint64_t ostart, uint64_t olen, const kiln_tensor *vals, const kiln_tensor *idx,
           const char *what)
{
  uint64_t len = nd ? (uint64_t)shape[ax] : 1, inner = 1, rows = 1;
  for (size_t i = 0; i < nd; i++) {
    if (i > ax)
      inner *= (uint64_t)shape[i];
    if (i != ax)
      rows *= (uint64_t)shape[i];
  }
  size_t es = kiln_dtype_size(dt);
  uint8_t *hv = vals ? harness_download(vals) : NULL;
  int64_t *hi = idx ? down_i64(idx) : NULL;
  uint64_t *perm = malloc((len + 1) * sizeof *perm);
  for (uint64_t r = 0; r < rows; r++) {
    uint64_t base = (r / inner) * len * inner + r % inner;
    for (uint64_t j = 0; j < len; j++)
      perm[j] = base + j * inner;
    ref_sort(dt, raw, perm, len, desc);
    uint64_t obase = (r / inner) * olen * inner + r % inner;
    for (uint64_t jj = 0; jj < olen; jj++) {
      uint64_t want = perm[ostart + jj], o = obase + jj * inner;
      if (hi)
        EXPECT((uint64_t)hi[o] == (want - base) / inner,
               "%s %s: row %llu position %llu index %lld, expected %llu", what, kiln_dtype_name(dt),
               (unsigned long long)r, (unsigned long long)jj, (long long)hi[o],
               (unsigned long long)((want - base) / inner));
      if (hv)
        EXPECT(!memcmp(hv + o * es, (const uint8_t *)raw + want * es, es),
               "%s %s: row %llu position %llu value %g, expected %g (bits)", what,
               kiln_dtype_name(dt), (unsigned long long)r, (unsigned long long)jj, hval(dt, hv, o),
               hval(dt, raw, want));
    }
  }
  free(perm);
  free(hv);
  free(hi);
}

static void
sort_case(kiln_dtype dt, size_t nd, const int64_t *shape, int64_t axis, int pat, int desc,
          kiln_sort_path path, const char *what)
{
  uint64_t n = 1;
  for (size_t i = 0; i < nd; i++)
    n *= (uint64_t)shape[i];
  void *h = make_data(dt, n, pat);
  kiln_tensor *x = upload(dt, nd, shape, h), *v = NULL, *ix = NULL;
  kiln_sort_options o = {.descending = desc, .path = path};
  KOK(kiln_sort(harness_ctx(), x, axis, &o, &v, &ix));
  size_t ax = nd ? (size_t)(axis < 0 ? axis + (int64_t)nd : axis) : 0;
  char buf[160];
  snprintf(buf, sizeof buf, "%s pattern %d desc %d path %d n %llu", what, pat, desc, (int)path,
           (unsigned long long)n);
  check_rows(dt, h, nd, shape, ax, desc, 0, nd ? (uint64_t)shape[ax] : 1, v, ix, buf);
  /* Values alone (integers: a keys-only sort) are the same values. */
  kiln_tensor *v2 = NULL;
  KOK(kiln_sort(harness_ctx(), x, axis, &o, &v2, NULL));
  check_rows(dt, h, nd, shape, ax, desc, 0, nd ? (uint64_t)shape[ax] : 1, v2, NULL, buf);
  kiln_tensor_release(v2);
  /* argsort alone gives the same indices. */
  kiln_tensor *ix2 = NULL;
  KOK(kiln_argsort(harness_ctx(), x, axis, &o, &ix2));
  check_rows(dt, h, nd, shape, ax, desc, 0, nd ? (uint64_t)shape[ax] : 1, NULL, ix2, buf);
  kiln_tensor_release(ix2);
  kiln_tensor_release(x);
  kiln_tensor_release(v);
  kiln_tensor_release(ix);
  free(h);
}

START_TEST(test_sort_lengths)
{
  static const int64_t lens[] = {0, 1, 2, 3, 7, 31, 33, 255, 257, 1025, 4097, 65537};
  for (size_t d = 0; d < NDT; d++) {
    kiln_dtype dt = all_dtypes[d];
    if (!dt_ok(dt))
      continue;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
      if (!harness_fits((uint64_t)lens[li]))
        continue;
      for (int pat = 0; pat < PAT_COUNT; pat++) {
        if (lens[li] > 300 && pat != PAT_SPECIAL && pat != PAT_RANDOM &&
            (pat != PAT_DUPS || lens[li] > 5000))
          continue;
        sort_case(dt, 1, &lens[li], 0, pat, pat == PAT_DUPS, KILN_SORT_AUTO, "auto");
        sort_case(dt, 1, &lens[li], 0, pat, pat == PAT_SPECIAL, KILN_SORT_RADIX, "radix");
        if ((uint64_t)lens[li] <= kiln_sort_local_max(harness_ctx(), dt))
          sort_case(dt, 1, &lens[li], -1, pat, pat == PAT_EQUAL, KILN_SORT_LOCAL, "local");
      }
    }
  }
}
END_TEST

START_TEST(test_sort_rows_axes)
{
  for (size_t d = 0; d < NDT; d++) {
    kiln_dtype dt = all_dtypes[d];
    if (!dt_ok(dt))
      continue;
    const int64_t many[2] = {harness_size(1000, 50), 5};
    const int64_t s3[3] = {3, 37, 4};
    const int64_t s2[2] = {17, 300};
    for (int desc = 0; desc < 2; desc++) {
      sort_case(dt, 2, many, -1, PAT_DUPS, desc, KILN_SORT_AUTO, "many short rows");
      sort_case(dt, 2, many, -1, PAT_SPECIAL, desc, KILN_SORT_RADIX, "many short rows radix");
      sort_case(dt, 3, s3, 1, PAT_RANDOM, desc, KILN_SORT_AUTO, "middle axis");
      sort_case(dt, 3, s3, 1, PAT_SPECIAL, desc, KILN_SORT_RADIX, "middle axis radix");
      sort_case(dt, 2, s2, 0, PAT_DUPS, desc, KILN_SORT_RADIX, "first axis radix");
      sort_case(dt, 2, s2, 0, PAT_RANDOM, desc, KILN_SORT_LOCAL, "first axis local");
      sort_case(dt, 0, NULL, 0, PAT_RANDOM, desc, KILN_SORT_AUTO, "0-D");
    }
  }
}
END_TEST

START_TEST(test_sort_large)
{
  /* A few million keys: many tiles and groups, every radix pass. */
  const int64_t n = harness_size(3000017, 1000);
  sort_case(KILN_F32, 1, &n, 0, PAT_SPECIAL, 0, KILN_SORT_AUTO, "large");
  sort_case(KILN_I32, 1, &n, 0, PAT_RANDOM, 1, KILN_SORT_AUTO, "large");
  const int64_t rows[2] = {harness_size(300, 4), harness_size(10007, 100)};
  sort_case(KILN_F32, 2, rows, 1, PAT_RANDOM, 0, KILN_SORT_RADIX, "long rows");
}
END_TEST

static void topk_case(kiln_dtype dt, size_t nd, const int64_t *shape, int64_t axis, uint64_t k,
                      int largest);

START_TEST(test_sort_gpu_shapes)
{
  /* The radix passes with several work-items per group and small tiles, as GPUs run them. */
  static const uint32_t locals[] = {2, 8, 32};
  for (size_t i = 0; i < 3; i++) {
    kiln__sort_radix_local = locals[i];
    kiln__sort_radix_tile = locals[i] * 3;
    const int64_t n = 1000, rows[2] = {9, 131};
    sort_case(KILN_F32, 1, &n, 0, PAT_SPECIAL, 0, KILN_SORT_RADIX, "gpu shape");
    sort_case(KILN_I64, 1, &n, 0, PAT_RANDOM, 1, KILN_SORT_RADIX, "gpu shape");
    sort_case(KILN_U8, 2, rows, 1, PAT_DUPS, 0, KILN_SORT_RADIX, "gpu shape rows");
    /* The selection's histograms with several work-items (local atomics). */
    kiln__sort_force_select = 1;
    topk_case(KILN_F32, 2, rows, 1, 10, 1);
    topk_case(KILN_I64, 1, &n, 0, 33, 0);
    kiln__sort_force_select = 0;
  }
  /* Digits of 3 and 11 bits: passes that do not divide the key width, the row passes. */
  static const uint32_t bits[] = {3, 11};
  for (size_t i = 0; i < 2; i++) {
    kiln__sort_radix_bits = bits[i];
    kiln__sort_radix_local = 4;
    kiln__sort_radix_tile = 40;
    const int64_t n = 777, rows[2] = {300, 7};
    sort_case(KILN_F64, 1, &n, 0, PAT_SPECIAL, 1, KILN_SORT_RADIX, "digit bits");
    sort_case(KILN_I32, 2, rows, 1, PAT_RANDOM, 0, KILN_SORT_RADIX, "digit bits rows");
  }
  kiln__sort_radix_bits = 0;
  kiln__sort_radix_local = 0;
  kiln__sort_radix_tile = 0;
}
END_TEST

START_TEST(test_sort_onesweep)
{
  /* The onesweep passes on any device: tiles of 768 and 4096 pairs (many tiles, so long
   * look-back chains; lengths around the tile), every dtype and pattern, keys with positions,
   * keys alone (integers' values) and raw payloads (f32 values), and the row passes. Two
   * tile sizes only: every one is a program build per key program (PoCL's compile time). */
  static const uint32_t ipts[] = {3, 16};
  static const int64_t lens[] = {2, 255, 257, 769, 4097, 9001};
  kiln__sort_onesweep = 1;
  for (size_t q = 0; q < sizeof ipts / sizeof ipts[0]; q++) {
    kiln__sort_onesweep_ipt = ipts[q];
    for (size_t d = 0; d < NDT; d++) {
      kiln_dtype dt = all_dtypes[d];
      /* Tiles of 4096: the dtypes of 4 and 8 bytes (the smaller dtypes differ only in how
       * their keys are made). */
      if (!dt_ok(dt) || (q == 1 && kiln_dtype_size(dt) < 4))
        continue;
      for (size_t li = q; li < sizeof lens / sizeof lens[0]; li += 1 + q) {
        int pat = (int)((li + q + d) % PAT_COUNT);
        sort_case(dt, 1, &lens[li], 0, pat, (int)(li & 1), KILN_SORT_RADIX, "onesweep");
      }
      if (q == 0)
        sort_case(dt, 1, &lens[5], 0, PAT_SPECIAL, 1, KILN_SORT_RADIX, "onesweep special");
      const int64_t rows[2] = {37, 300};
      sort_case(dt, 2, rows, 1, PAT_DUPS, (int)q, KILN_SORT_RADIX, "onesweep rows");
    }
  }
  const int64_t n = harness_size(60013, 1000);
  kiln__sort_onesweep_ipt = 3;
  sort_case(KILN_I32, 1, &n, 0, PAT_RANDOM, 0, KILN_SORT_RADIX, "onesweep many tiles");
  sort_case(KILN_F64, 1, &n, 0, PAT_SORTED, 1, KILN_SORT_RADIX, "onesweep many tiles");
  kiln__sort_onesweep = 0;
  kiln__sort_onesweep_ipt = 0;
}
END_TEST

static void
topk_case(kiln_dtype dt, size_t nd, const int64_t *shape, int64_t axis, uint64_t k, int largest)
{
  uint64_t n = 1;
  for (size_t i = 0; i < nd; i++)
    n *= (uint64_t)shape[i];
  void *h = make_data(dt, n, PAT_SPECIAL);
  kiln_tensor *x = upload(dt, nd, shape, h), *v = NULL, *ix = NULL;
  KOK(kiln_topk(harness_ctx(), x, k, axis, largest, 1, &v, &ix));
  size_t ax = (size_t)(axis < 0 ? axis + (int64_t)nd : axis);
  ck_assert_int_eq(kiln_tensor_dim(v, ax), (int64_t)k);
  check_rows(dt, h, nd, shape, ax, largest, 0, k, v, ix, "topk");
  kiln_tensor_release(v);
  kiln_tensor_release(ix);
  v = ix = NULL;
  if (k >= 1) {
    KOK(kiln_kthvalue(harness_ctx(), x, k, axis, 1, &v, &ix));
    check_rows(dt, h, nd, shape, ax, 0, k - 1, 1, v, ix, "kthvalue");
    ck_assert_uint_eq(kiln_tensor_ndim(v), nd);
    kiln_tensor_release(v);
    kiln_tensor_release(ix);
    v = NULL;
    KOK(kiln_kthvalue(harness_ctx(), x, k, axis, 0, &v, NULL));
    ck_assert_uint_eq(kiln_tensor_ndim(v), nd - 1);
    kiln_tensor_release(v);
  }
  kiln_tensor_release(x);
  free(h);
}

START_TEST(test_topk_kthvalue)
{
  for (int sel = 0; sel < 3; sel++) {
    /* sel: the radix selection on every size (else only on long rows with small k): 1 the
     * chunked passes, 2 one work-group per row. */
    kiln__sort_force_select = sel;
    for (size_t d = 0; d < NDT; d++) {
      kiln_dtype dt = all_dtypes[d];
      if (!dt_ok(dt))
        continue;
      const int64_t s1[1] = {harness_size(100003, 1000)};
      const int64_t s2[2] = {harness_size(64, 8), 129};
      topk_case(dt, 1, s1, 0, 100, 1);
      topk_case(dt, 1, s1, 0, 7, 0);
      topk_case(dt, 2, s2, 1, 16, 1);
      topk_case(dt, 2, s2, 0, 3, 0);
      topk_case(dt, 2, s2, -1, 129, 0);
      topk_case(dt, 2, s2, -1, 0, 1);
      const int64_t s3[3] = {3, harness_size(20011, 500), 2};
      topk_case(dt, 3, s3, 1, 5, 0);
    }
  }
  kiln__sort_force_select = 0;
}
END_TEST

START_TEST(test_sortrows)
{
  for (size_t d = 0; d < NDT; d++) {
    kiln_dtype dt = all_dtypes[d];
    if (!dt_ok(dt))
      continue;
    const int64_t shape[2] = {harness_size(2003, 300), 4};
    uint64_t nr = (uint64_t)shape[0];
    uint8_t *h = make_data(dt, nr * 4, PAT_DUPS);
    kiln_tensor *x = upload(dt, 2, shape, h);
    static const int64_t cols[3] = {2, 0, 3};
    static const int descs[3] = {1, 0, 1};
    kiln_tensor *v = NULL, *ix = NULL;
    KOK(kiln_sortrows(harness_ctx(), x, cols, 3, descs, &v, &ix));
    uint8_t *hv = harness_download(v);
    int64_t *hi = down_i64(ix);
    size_t es = kiln_dtype_size(dt);
    for (uint64_t i = 0; i < nr; i++) {
      ck_assert_int_ge(hi[i], 0);
      ck_assert_int_lt(hi[i], (int64_t)nr);
      EXPECT(!memcmp(hv + i * 4 * es, h + (uint64_t)hi[i] * 4 * es, 4 * es), "row %llu",
             (unsigned long long)i);
      if (i == 0)
        continue;
      /* Lexicographic by the given columns, ties in input order. */
      int c = 0;
      for (int q = 0; q < 3 && !c; q++) {
        c = hcmp(dt, h, (uint64_t)hi[i - 1] * 4 + (uint64_t)cols[q],
                 (uint64_t)hi[i] * 4 + (uint64_t)cols[q]);
        if (descs[q])
          c = -c;
      }
      EXPECT(c < 0 || (c == 0 && hi[i - 1] < hi[i]), "%s sortrows: rows %llu and %llu out of order",
             kiln_dtype_name(dt), (unsigned long long)i - 1, (unsigned long long)i);
    }
    free(hv);
    free(hi);
    kiln_tensor_release(v);
    kiln_tensor_release(ix);
    /* Every column (cols NULL), indices only. */
    ix = NULL;
    KOK(kiln_sortrows(harness_ctx(), x, NULL, 0, NULL, NULL, &ix));
    hi = down_i64(ix);
    for (uint64_t i = 1; i < nr; i++) {
      int c = 0;
      for (uint64_t q = 0; q < 4 && !c; q++)
        c = hcmp(dt, h, (uint64_t)hi[i - 1] * 4 + q, (uint64_t)hi[i] * 4 + q);
      EXPECT(c < 0 || (c == 0 && hi[i - 1] < hi[i]), "sortrows all columns: row %llu",
             (unsigned long long)i);
    }
    free(hi);
    kiln_tensor_release(ix);
    kiln_tensor_release(x);
    free(h);
  }
}
END_TEST

/* Host unique of raw (n elements): sorted run starts of perm; returns the number of runs. */
static uint64_t
ref_unique(kiln_dtype dt, const void *raw, uint64_t n, uint64_t *perm, uint64_t *starts)
{
  for (uint64_t i = 0; i < n; i++)
    perm[i] = i;
  ref_sort(dt, raw, perm, n, 0);
  uint64_t nu = 0;
  for (uint64_t i = 0; i < n; i++)
    if (i == 0 || hcmp(dt, raw, perm[i - 1], perm[i]) != 0)
      starts[nu++] = i;
  return nu;
}

START_TEST(test_unique)
{
  static const int64_t lens[] = {0, 1, 2, 33, 1000, 70001};
  for (size_t d = 0; d < NDT; d++) {
    kiln_dtype dt = all_dtypes[d];
    if (!dt_ok(dt))
      continue;
    for (size_t li = 0; li < 6; li++) {
      if (!harness_fits((uint64_t)lens[li]))
        continue;
      for (int pat = PAT_DUPS; pat <= PAT_EQUAL; pat++) {
        uint64_t n = (uint64_t)lens[li];
        void *h = make_data(dt, n, pat);
        kiln_tensor *x = upload(dt, 1, &lens[li], h);
        kiln_tensor *v = NULL, *f = NULL, *inv = NULL, *c = NULL;
        KOK(kiln_unique(harness_ctx(), x, NULL, &v, &f, &inv, &c));
        uint64_t *perm = malloc((n + 1) * 8), *starts = malloc((n + 1) * 8);
        uint64_t nu = ref_unique(dt, h, n, perm, starts);
        ck_assert_int_eq(kiln_tensor_numel(v), nu);
        uint8_t *hv = harness_download(v);
        int64_t *hf = down_i64(f), *hinv = down_i64(inv), *hc = down_i64(c);
        size_t es = kiln_dtype_size(dt);
        for (uint64_t g = 0; g < nu; g++) {
          uint64_t end = g + 1 < nu ? starts[g + 1] : n;
          EXPECT((uint64_t)hf[g] == perm[starts[g]], "%s unique first[%llu] %lld, expected %llu",
                 kiln_dtype_name(dt), (unsigned long long)g, (long long)hf[g],
                 (unsigned long long)perm[starts[g]]);
          EXPECT(!memcmp(hv + g * es, (uint8_t *)h + perm[starts[g]] * es, es), "unique value %llu",
                 (unsigned long long)g);
          EXPECT((uint64_t)hc[g] == end - starts[g], "unique count %llu", (unsigned long long)g);
          for (uint64_t i = starts[g]; i < end; i++)
            EXPECT((uint64_t)hinv[perm[i]] == g, "unique inverse %llu", (unsigned long long)i);
        }
        /* Values and counts alone (integers: from the keys, without positions). */
        kiln_tensor *v2 = NULL, *c2 = NULL;
        KOK(kiln_unique(harness_ctx(), x, NULL, &v2, NULL, NULL, &c2));
        ck_assert_int_eq(kiln_tensor_numel(v2), nu);
        uint8_t *hv2 = harness_download(v2);
        int64_t *hc2 = down_i64(c2);
        for (uint64_t g = 0; g < nu; g++) {
          uint8_t pair[16];
          memcpy(pair, hv2 + g * es, es);
          memcpy(pair + es, hv + g * es, es);
          EXPECT(hcmp(dt, pair, 0, 1) == 0 && hc2[g] == hc[g], "%s unique values/counts %llu",
                 kiln_dtype_name(dt), (unsigned long long)g);
        }
        free(hv2);
        free(hc2);
        kiln_tensor_release(v2);
        kiln_tensor_release(c2);
        free(hv);
        free(hf);
        free(hinv);
        free(hc);
        kiln_tensor_release(v);
        kiln_tensor_release(f);
        kiln_tensor_release(inv);
        kiln_tensor_release(c);
        /* unique_consecutive: runs in input order. */
        v = inv = c = NULL;
        KOK(kiln_unique_consecutive(harness_ctx(), x, &v, &inv, &c));
        hv = harness_download(v);
        hinv = down_i64(inv);
        hc = down_i64(c);
        uint64_t run = 0, g = 0;
        for (uint64_t i = 0; i < n; i++) {
          if (i && hcmp(dt, h, i - 1, i) != 0) {
            EXPECT((uint64_t)hc[g] == run, "consecutive count %llu", (unsigned long long)g);
            g++;
            run = 0;
          }
          if (run == 0)
            EXPECT(!memcmp(hv + g * es, (uint8_t *)h + i * es, es), "consecutive value");
          EXPECT((uint64_t)hinv[i] == g, "consecutive inverse %llu", (unsigned long long)i);
          run++;
        }
        ck_assert_int_eq(kiln_tensor_numel(v), n ? g + 1 : 0);
        free(hv);
        free(hinv);
        free(hc);
        kiln_tensor_release(v);
        kiln_tensor_release(inv);
        kiln_tensor_release(c);
        kiln_tensor_release(x);
        free(perm);
        free(starts);
        free(h);
      }
    }
  }
  /* Integer values and counts with several work-items per chunk (as GPUs run them), many
   * distinct values and runs across chunks. */
  static const uint32_t locals[] = {8, 1};
  for (size_t q = 0; q < 2; q++) {
    kiln__sort_radix_local = locals[q];
    const int64_t n = 5003 + (int64_t)q * 3000;
    int32_t *h = malloc((size_t)n * sizeof *h);
    for (int64_t i = 0; i < n; i++)
      h[i] = (int32_t)(rnd() % (q ? 40 : 4000)) - 100;
    kiln_tensor *x = upload(KILN_I32, 1, &n, h), *v = NULL, *c = NULL;
    KOK(kiln_unique(harness_ctx(), x, NULL, &v, NULL, NULL, &c));
    kiln__sort_radix_local = 0;
    int32_t *hv = harness_download(v);
    int64_t *hc = down_i64(c), total = 0;
    for (uint64_t g = 0; g < kiln_tensor_numel(v); g++) {
      int64_t cnt = 0;
      for (int64_t i = 0; i < n; i++)
        cnt += h[i] == hv[g];
      EXPECT(cnt == hc[g] && (g == 0 || hv[g - 1] < hv[g]), "unique chunks value %d count %lld",
             hv[g], (long long)hc[g]);
      total += hc[g];
    }
    ck_assert_int_eq(total, n);
    free(h);
    free(hv);
    free(hc);
    kiln_tensor_release(x);
    kiln_tensor_release(v);
    kiln_tensor_release(c);
  }
}
END_TEST

START_TEST(test_unique_rows)
{
  for (size_t d = 0; d < NDT; d++) {
    kiln_dtype dt = all_dtypes[d];
    if (!dt_ok(dt))
      continue;
    const int64_t shape[2] = {harness_size(999, 100), 3};
    uint64_t nr = (uint64_t)shape[0];
    uint8_t *h = make_data(dt, nr * 3, PAT_SPECIAL);
    kiln_tensor *x = upload(dt, 2, shape, h), *v = NULL, *f = NULL, *inv = NULL, *c = NULL;
    int64_t axis = 0;
    KOK(kiln_unique(harness_ctx(), x, &axis, &v, &f, &inv, &c));
    uint64_t nu = kiln_tensor_numel(c);
    ck_assert_int_eq(kiln_tensor_dim(v, 0), (int64_t)nu);
    uint8_t *hv = harness_download(v);
    int64_t *hf = down_i64(f), *hinv = down_i64(inv), *hc = down_i64(c);
    size_t es = kiln_dtype_size(dt);
    int64_t total = 0;
    for (uint64_t g = 0; g < nu; g++) {
      total += hc[g];
      EXPECT(!memcmp(hv + g * 3 * es, h + (uint64_t)hf[g] * 3 * es, 3 * es), "row value");
      if (g) {
        int cmpv = 0;
        for (uint64_t q = 0; q < 3 && !cmpv; q++)
          cmpv = hcmp(dt, h, (uint64_t)hf[g - 1] * 3 + q, (uint64_t)hf[g] * 3 + q);
        EXPECT(cmpv < 0, "%s unique rows %llu not increasing", kiln_dtype_name(dt),
               (unsigned long long)g);
      }
    }
    ck_assert_int_eq(total, (int64_t)nr);
    for (uint64_t i = 0; i < nr; i++) {
      uint64_t g = (uint64_t)hinv[i];
      ck_assert_uint_lt(g, nu);
      for (uint64_t q = 0; q < 3; q++)
        EXPECT(hcmp(dt, h, i * 3 + q, (uint64_t)hf[g] * 3 + q) == 0, "row %llu inverse",
               (unsigned long long)i);
      EXPECT(hf[g] <= (int64_t)i, "first occurrence after row %llu", (unsigned long long)i);
    }
    free(hv);
    free(hf);
    free(hinv);
    free(hc);
    kiln_tensor_release(v);
    kiln_tensor_release(f);
    kiln_tensor_release(inv);
    kiln_tensor_release(c);
    kiln_tensor_release(x);
    free(h);
  }
}
END_TEST

START_TEST(test_searchsorted)
{
  for (size_t d = 0; d < NDT; d++) {
    kiln_dtype dt = all_dtypes[d];
    if (!dt_ok(dt))
      continue;
    const int64_t ns = harness_size(1001, 50), nq = harness_size(5003, 200);
    uint8_t *hs = make_data(dt, (uint64_t)ns, PAT_SPECIAL);
    uint8_t *hq = make_data(dt, (uint64_t)nq, PAT_SPECIAL);
    kiln_tensor *s = upload(dt, 1, &ns, hs), *q = upload(dt, 1, &nq, hq);
    kiln_tensor *sorter = NULL, *sorted = NULL;
    KOK(kiln_sort(harness_ctx(), s, 0, NULL, &sorted, &sorter));
    size_t es = kiln_dtype_size(dt);
    /* The host copy of the sorted seq, with queries appended for hcmp. */
    uint8_t *hsorted = harness_download(sorted);
    uint8_t *both = malloc((uint64_t)(ns + nq) * es);
    memcpy(both, hsorted, (uint64_t)ns * es);
    memcpy(both + (uint64_t)ns * es, hq, (uint64_t)nq * es);
    for (int right = 0; right < 2; right++) {
      /* Variants 2 and 3: the first probes in 7 or 64 splitters in local memory. */
      for (int variant = 0; variant < 4; variant++) {
        const int use_sorter = variant == 1;
        kiln__sort_ss_splitters = variant == 2 ? 7 : variant == 3 ? 64 : 0;
        kiln_tensor *out = NULL;
        KOK(kiln_searchsorted(harness_ctx(), use_sorter ? s : sorted, q, right,
                              use_sorter ? sorter : NULL, &out));
        kiln__sort_ss_splitters = 0;
        int64_t *ho = down_i64(out);
        for (int64_t i = 0; i < nq; i++) {
          int64_t want = 0;
          while (want < ns) {
            int c = hcmp(dt, both, (uint64_t)want, (uint64_t)(ns + i));
            if (c < 0 || (right && c == 0))
              want++;
            else
              break;
          }
          EXPECT(
              ho[i] == want, "%s searchsorted right %d variant %d query %lld: %lld, expected %lld",
              kiln_dtype_name(dt), right, variant, (long long)i, (long long)ho[i], (long long)want);
        }
        free(ho);
        kiln_tensor_release(out);
      }
    }
    /* Batched: each row of a 2-D seq with its own row of queries. */
    const int64_t bs[2] = {3, 40}, bq[2] = {3, 17};
    uint8_t *hb = make_data(dt, 120, PAT_DUPS), *hbq = make_data(dt, 51, PAT_DUPS);
    kiln_tensor *b = upload(dt, 2, bs, hb), *bqt = upload(dt, 2, bq, hbq), *bsorted = NULL;
    KOK(kiln_sort(harness_ctx(), b, 1, NULL, &bsorted, NULL));
    kiln_tensor *out = NULL;
    KOK(kiln_searchsorted(harness_ctx(), bsorted, bqt, 1, NULL, &out));
    uint8_t *hbs = harness_download(bsorted);
    int64_t *ho = down_i64(out);
    for (uint64_t r = 0; r < 3; r++)
      for (uint64_t i = 0; i < 17; i++) {
        int64_t want = 0;
        for (uint64_t j = 0; j < 40; j++)
          want += hval(dt, hbs, r * 40 + j) <= hval(dt, hbq, r * 17 + i);
        EXPECT(ho[r * 17 + i] == want, "batched searchsorted row %llu query %llu",
               (unsigned long long)r, (unsigned long long)i);
      }
    free(hbs);
    free(ho);
    free(hb);
    free(hbq);
    kiln_tensor_release(out);
    kiln_tensor_release(b);
    kiln_tensor_release(bqt);
    kiln_tensor_release(bsorted);
    free(hsorted);
    free(both);
    free(hs);
    free(hq);
    kiln_tensor_release(s);
    kiln_tensor_release(q);
    kiln_tensor_release(sorter);
    kiln_tensor_release(sorted);
  }
}
END_TEST

/* Lowest position in s (raw, ns) equal to a[i] (raw); NaN matches nothing; -1 when none. */
static int64_t
ref_find(kiln_dtype dt, const uint8_t *a, uint64_t i, const uint8_t *s, uint64_t ns)
{
  size_t es = kiln_dtype_size(dt);
  uint8_t pair[16];
  if (isnan(hval(dt, a, i)))
    return -1;
  for (uint64_t j = 0; j < ns; j++) {
    memcpy(pair, a + i * es, es);
    memcpy(pair + es, s + j * es, es);
    if (hcmp(dt, pair, 0, 1) == 0)
      return (int64_t)j;
  }
  return -1;
}

/* Checks a set result (sorted, distinct) against membership predicates. */
static void
check_set(kiln_dtype dt, const kiln_tensor *out, const uint8_t *ha, uint64_t na, const uint8_t *hb,
          uint64_t nb, int want_a, int want_b, int xor_mode, const char *what)
{
  /* The expected set: distinct values v of a and/or b with the membership rule. */
  size_t es = kiln_dtype_size(dt);
  uint8_t *all = malloc((na + nb + 1) * es);
  memcpy(all, ha, na * es);
  memcpy(all + na * es, hb, nb * es);
  uint64_t *perm = malloc((na + nb + 1) * 8), *starts = malloc((na + nb + 1) * 8);
  uint64_t nu = ref_unique(dt, all, na + nb, perm, starts);
  uint8_t *exp = malloc((na + nb + 1) * es);
  uint64_t ne = 0;
  for (uint64_t g = 0; g < nu; g++) {
    uint64_t at = perm[starts[g]];
    int in_a = ref_find(dt, all, at, ha, na) >= 0, in_b = ref_find(dt, all, at, hb, nb) >= 0;
    int nan = isnan(hval(dt, all, at));
    if (nan) {
      /* NaN is a member of nothing: union keeps one, setdiff keeps a's, setxor one per side. */
      int has_a = 0, has_b = 0;
      for (uint64_t i = 0; i < na; i++)
        has_a |= isnan(hval(dt, ha, i));
      for (uint64_t i = 0; i < nb; i++)
        has_b |= isnan(hval(dt, hb, i));
      int copies = xor_mode ? has_a + has_b : want_a && want_b > 0 ? 0 : want_a ? has_a : 1;
      for (int c = 0; c < copies; c++)
        memcpy(exp + (ne++) * es, all + at * es, es);
      continue;
    }
    int keep =
        xor_mode ? in_a != in_b : (!want_a || in_a) && (want_b < 0 ? !in_b : !want_b || in_b);
    if (keep)
      memcpy(exp + (ne++) * es, all + at * es, es);
  }
  ck_assert_msg(kiln_tensor_numel(out) == ne, "%s %s: %llu values, expected %llu", what,
                kiln_dtype_name(dt), (unsigned long long)kiln_tensor_numel(out),
                (unsigned long long)ne);
  uint8_t *ho = harness_download(out);
  for (uint64_t i = 0; i < ne; i++) {
    uint8_t pair[16];
    memcpy(pair, ho + i * es, es);
    memcpy(pair + es, exp + i * es, es);
    EXPECT(hcmp(dt, pair, 0, 1) == 0, "%s %s value %llu: %g, expected %g", what,
           kiln_dtype_name(dt), (unsigned long long)i, hval(dt, ho, i), hval(dt, exp, i));
  }
  free(ho);
  free(all);
  free(perm);
  free(starts);
  free(exp);
}

START_TEST(test_isin_and_sets)
{
  for (size_t d = 0; d < NDT; d++) {
    kiln_dtype dt = all_dtypes[d];
    if (!dt_ok(dt))
      continue;
    static const int64_t sizes[][2] = {{0, 0}, {0, 5}, {7, 0}, {1, 1}, {333, 101}, {2000, 3001}};
    for (size_t si = 0; si < 6; si++) {
      int64_t na = sizes[si][0], nb = sizes[si][1];
      if (!harness_fits((uint64_t)(na + nb)))
        continue;
      uint8_t *ha = make_data(dt, (uint64_t)na, PAT_SPECIAL);
      uint8_t *hb = make_data(dt, (uint64_t)nb, si % 2 ? PAT_DUPS : PAT_SPECIAL);
      kiln_tensor *a = upload(dt, 1, &na, ha), *b = upload(dt, 1, &nb, hb);
      kiln_tensor *tf = NULL, *loc = NULL;
      KOK(kiln_isin(harness_ctx(), a, b, &tf, &loc));
      uint8_t *htf = harness_download(tf);
      int64_t *hloc = down_i64(loc);
      for (int64_t i = 0; i < na; i++) {
        int64_t want = ref_find(dt, ha, (uint64_t)i, hb, (uint64_t)nb);
        EXPECT(hloc[i] == want && htf[i] == (want >= 0),
               "%s isin %lld: loc %lld tf %d, expected %lld", kiln_dtype_name(dt), (long long)i,
               (long long)hloc[i], htf[i], (long long)want);
      }
      free(htf);
      free(hloc);
      kiln_tensor_release(tf);
      kiln_tensor_release(loc);
      kiln_tensor *u = NULL, *in = NULL, *ia = NULL, *ib = NULL, *df = NULL, *dia = NULL,
                  *xr = NULL;
      KOK(kiln_union(harness_ctx(), a, b, &u));
      check_set(dt, u, ha, (uint64_t)na, hb, (uint64_t)nb, 0, 0, 0, "union");
      KOK(kiln_intersect(harness_ctx(), a, b, &in, &ia, &ib));
      check_set(dt, in, ha, (uint64_t)na, hb, (uint64_t)nb, 1, 1, 0, "intersect");
      KOK(kiln_setdiff(harness_ctx(), a, b, &df, &dia));
      check_set(dt, df, ha, (uint64_t)na, hb, (uint64_t)nb, 1, -1, 0, "setdiff");
      KOK(kiln_setxor(harness_ctx(), a, b, &xr));
      check_set(dt, xr, ha, (uint64_t)na, hb, (uint64_t)nb, 0, 0, 1, "setxor");
      /* Index outputs: the first positions of each value. */
      uint8_t *hin = harness_download(in), *hdf = harness_download(df);
      int64_t *hia = down_i64(ia), *hib = down_i64(ib), *hdia = down_i64(dia);
      for (uint64_t i = 0; i < kiln_tensor_numel(in); i++) {
        EXPECT(hia[i] == ref_find(dt, hin, i, ha, (uint64_t)na), "intersect ia %llu",
               (unsigned long long)i);
        EXPECT(hib[i] == ref_find(dt, hin, i, hb, (uint64_t)nb), "intersect ib %llu",
               (unsigned long long)i);
      }
      for (uint64_t i = 0; i < kiln_tensor_numel(df); i++) {
        if (isnan(hval(dt, hdf, i)))
          continue;
        EXPECT(hdia[i] == ref_find(dt, hdf, i, ha, (uint64_t)na), "setdiff ia %llu",
               (unsigned long long)i);
      }
      free(hin);
      free(hdf);
      free(hia);
      free(hib);
      free(hdia);
      kiln_tensor_release(u);
      kiln_tensor_release(in);
      kiln_tensor_release(ia);
      kiln_tensor_release(ib);
      kiln_tensor_release(df);
      kiln_tensor_release(dia);
      kiln_tensor_release(xr);
      kiln_tensor_release(a);
      kiln_tensor_release(b);
      free(ha);
      free(hb);
    }
  }
}
END_TEST

START_TEST(test_errors)
{
  kiln_context *ctx = harness_ctx();
  const int64_t shape[2] = {4, 5};
  kiln_tensor *x = NULL, *c = NULL, *v = NULL, *wrong = NULL, *i32 = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 2, shape, &x));
  KOK(kiln_tensor_zeros(ctx, KILN_C64, 2, shape, &c));
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 1, shape, &wrong));
  KOK(kiln_tensor_zeros(ctx, KILN_I32, 2, shape, &i32));
  KEXPECT(kiln_sort(ctx, x, 0, NULL, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_sort(ctx, x, 2, NULL, &v, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_sort(ctx, x, -3, NULL, &v, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_sort(ctx, c, 0, NULL, &v, NULL), KILN_ERR_DTYPE);
  KEXPECT(kiln_sort(ctx, NULL, 0, NULL, &v, NULL), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_sort(ctx, x, 0, NULL, &wrong, NULL), KILN_ERR_SHAPE);
  KEXPECT(kiln_sort(ctx, x, 0, NULL, NULL, &i32), KILN_ERR_DTYPE);
  kiln_sort_options o = {.path = (kiln_sort_path)7};
  KEXPECT(kiln_sort(ctx, x, 0, &o, &v, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_argsort(ctx, x, 0, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_topk(ctx, x, 6, 1, 1, 1, &v, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_kthvalue(ctx, x, 0, 1, 0, &v, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_kthvalue(ctx, x, 6, 1, 0, &v, NULL), KILN_ERR_INVALID_ARGUMENT);
  static const int64_t badcol[1] = {5};
  KEXPECT(kiln_sortrows(ctx, x, badcol, 1, NULL, &v, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_sortrows(ctx, wrong, NULL, 0, NULL, &v, NULL), KILN_ERR_SHAPE);
  int64_t axis = 1;
  KEXPECT(kiln_unique(ctx, x, &axis, &v, NULL, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_unique(ctx, wrong, &axis, &v, NULL, NULL, NULL), KILN_ERR_SHAPE);
  KEXPECT(kiln_unique(ctx, x, NULL, &x, NULL, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_unique(ctx, x, NULL, NULL, NULL, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_searchsorted(ctx, x, i32, 0, NULL, &v), KILN_ERR_DTYPE);
  KEXPECT(kiln_searchsorted(ctx, x, wrong, 0, NULL, &v), KILN_ERR_SHAPE);
  KEXPECT(kiln_searchsorted(ctx, wrong, x, 0, x, &v), KILN_ERR_DTYPE);
  KEXPECT(kiln_isin(ctx, x, i32, &v, NULL), KILN_ERR_DTYPE);
  KEXPECT(kiln_isin(ctx, x, x, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_union(ctx, x, i32, &v), KILN_ERR_DTYPE);
  KEXPECT(kiln_intersect(ctx, x, x, &x, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_setdiff(ctx, c, c, &v, NULL), KILN_ERR_DTYPE);
  KEXPECT(kiln_setxor(ctx, x, x, NULL), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(v);
  /* A given output over the input: sorted through a temporary. */
  const float h[5] = {3, -1, 2, -0.0f, 0.0f};
  const int64_t n5 = 5;
  kiln_tensor *y = upload(KILN_F32, 1, &n5, h);
  KOK(kiln_sort(ctx, y, 0, NULL, &y, NULL));
  float got[5];
  KOK(kiln_tensor_download(y, got, sizeof got));
  ck_assert(got[0] == -1 && got[1] == 0 && signbit(got[1]) && got[2] == 0 && !signbit(got[2]) &&
            got[3] == 2 && got[4] == 3);
  kiln_tensor_release(y);
  kiln_tensor_release(x);
  kiln_tensor_release(c);
  kiln_tensor_release(wrong);
  kiln_tensor_release(i32);
}
END_TEST

/*
 * The small mode (oclgrind): every kernel once on small inputs of both key widths (f32 and
 * i64), the radix passes with several work-items per group as GPUs run them.
 */
START_TEST(test_small_every_kernel)
{
  static const kiln_dtype dts[2] = {KILN_F32, KILN_I64};
  for (size_t d = 0; d < 2; d++) {
    kiln_dtype dt = dts[d];
    const int64_t n = 45, rows[2] = {6, 11}, s3[3] = {2, 5, 3};
    kiln__sort_radix_local = 4;
    kiln__sort_radix_tile = 12;
    sort_case(dt, 1, &n, 0, PAT_SPECIAL, 0, KILN_SORT_RADIX, "small radix");
    sort_case(dt, 2, rows, 1, PAT_DUPS, 1, KILN_SORT_RADIX, "small radix rows");
    kiln__sort_radix_local = 0;
    kiln__sort_radix_tile = 0;
    sort_case(dt, 3, s3, 1, PAT_SPECIAL, 1, KILN_SORT_LOCAL, "small local");
    sort_case(dt, 2, rows, 0, PAT_RANDOM, 0, KILN_SORT_RADIX, "small radix first axis");
    topk_case(dt, 2, rows, 1, 3, 1);
    kiln__sort_force_select = 1;
    topk_case(dt, 2, rows, 1, 3, 0);
    kiln__sort_force_select = 2;
    topk_case(dt, 2, rows, 1, 4, 1);
    kiln__sort_force_select = 0;
    /* the operations built on the sorts (sortrows, unique, the sets) on f32 only: their own
     * kernels move indices and flags, whatever the key type */
    if (dt != KILN_F32)
      continue;
    void *h = make_data(dt, 60, PAT_DUPS);
    const int64_t m[2] = {20, 3};
    kiln_tensor *x = upload(dt, 2, m, h), *v = NULL, *ix = NULL, *f = NULL, *inv = NULL, *c = NULL;
    static const int64_t cols[2] = {1, 0};
    static const int desc[2] = {1, 0};
    KOK(kiln_sortrows(harness_ctx(), x, cols, 2, desc, &v, &ix));
    kiln_tensor_release(v);
    kiln_tensor_release(ix);
    v = ix = NULL;
    int64_t axis = 0;
    KOK(kiln_unique(harness_ctx(), x, &axis, &v, &f, &inv, &c));
    ck_assert_int_eq(kiln_tensor_numel(inv), 20);
    kiln_tensor_release(v);
    kiln_tensor_release(f);
    kiln_tensor_release(inv);
    kiln_tensor_release(c);
    v = f = inv = c = NULL;
    KOK(kiln_unique(harness_ctx(), x, NULL, &v, &f, &inv, &c));
    int64_t *hc = harness_download(c);
    int64_t total = 0;
    for (uint64_t g = 0; g < kiln_tensor_numel(c); g++)
      total += hc[g];
    ck_assert_int_eq(total, 60);
    free(hc);
    kiln_tensor_release(v);
    kiln_tensor_release(f);
    kiln_tensor_release(inv);
    kiln_tensor_release(c);
    v = inv = c = NULL;
    KOK(kiln_unique_consecutive(harness_ctx(), x, &v, &inv, &c));
    kiln_tensor_release(v);
    kiln_tensor_release(inv);
    kiln_tensor_release(c);
    v = NULL;
    /* searchsorted with a sorter, isin and a set operation with index outputs. */
    kiln_tensor *sorter = NULL, *ss = NULL, *tf = NULL, *loc = NULL, *ia = NULL, *ib = NULL;
    KOK(kiln_argsort(harness_ctx(), x, -1, NULL, &sorter));
    KOK(kiln_searchsorted(harness_ctx(), x, x, 1, sorter, &ss));
    KOK(kiln_isin(harness_ctx(), x, x, &tf, &loc));
    uint8_t *htf = harness_download(tf);
    for (int i = 0; i < 60; i++)
      ck_assert_int_eq(htf[i], 1);
    free(htf);
    KOK(kiln_intersect(harness_ctx(), x, x, &v, &ia, &ib));
    kiln_tensor_release(v);
    v = NULL;
    KOK(kiln_setxor(harness_ctx(), x, x, &v));
    ck_assert_int_eq(kiln_tensor_numel(v), 0);
    kiln_tensor_release(v);
    kiln_tensor_release(sorter);
    kiln_tensor_release(ss);
    kiln_tensor_release(tf);
    kiln_tensor_release(loc);
    kiln_tensor_release(ia);
    kiln_tensor_release(ib);
    kiln_tensor_release(x);
    free(h);
  }
}
END_TEST

/*
 * Many whole rows of f32, f16 and bf16 values (on CPUs rows_serial with the values' own bits as
 * payloads, f32 without -0.0 and NaNs moving its keys alone): rows longer than 32 (the radix
 * passes) and of 20 (the insertion sort), random, duplicated and special values (-0.0, NaN,
 * infinities: the f32 flag set), both directions; values, indices, and values alone bit for
 * bit (sort_case).
 */
START_TEST(test_sort_value_rows)
{
  static const kiln_dtype dts[] = {KILN_F32, KILN_F16, KILN_BF16};
  /* the simulator (small mode): f32 ascending, 8 rows of 40 and of 20, with and without the
   * flag (a case there costs seconds) */
  const int small = harness_small();
  const int64_t longr[2] = {small ? 8 : 40, small ? 40 : 301}, shortr[2] = {small ? 8 : 40, 20};
  for (size_t d = 0; d < (small ? 1 : sizeof dts / sizeof dts[0]); d++) {
    if (!dt_ok(dts[d]))
      continue;
    for (int desc = 0; desc < 2 - small; desc++)
      for (int pat = PAT_RANDOM; pat <= PAT_SPECIAL; pat += 1 + small) {
        sort_case(dts[d], 2, longr, -1, pat, desc, KILN_SORT_AUTO, "value rows");
        sort_case(dts[d], 2, shortr, 1, pat, desc, KILN_SORT_AUTO, "short value rows");
      }
  }
}
END_TEST

static Suite *
sort_suite(void)
{
  Suite *s = suite_create("sort");
  TCase *tc = tcase_create("sort");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_small_every_kernel);
  if (!harness_small()) {
    tcase_add_test(tc, test_sort_lengths);
    tcase_add_test(tc, test_sort_rows_axes);
    tcase_add_test(tc, test_sort_gpu_shapes);
    tcase_add_test(tc, test_sort_onesweep);
    tcase_add_test(tc, test_topk_kthvalue);
    tcase_add_test(tc, test_sortrows);
    tcase_add_test(tc, test_unique);
    tcase_add_test(tc, test_unique_rows);
    tcase_add_test(tc, test_searchsorted);
    tcase_add_test(tc, test_isin_and_sets);
    tcase_add_test(tc, test_sort_large);
    tcase_add_test(tc, test_errors);
  }
  suite_add_tcase(s, tc);
  TCase *vr = tcase_create("value_rows");
  tcase_set_timeout(vr, 300);
  tcase_add_test(vr, test_sort_value_rows);
  suite_add_tcase(s, vr);
  return s;
}

int
main(void)
{
  return harness_main(sort_suite(), 1);
}
