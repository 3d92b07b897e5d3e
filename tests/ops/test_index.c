/*
 * Index suite: gather, index_select, embedding, scatter (assign and add),
 * masked_fill, masked_select, nonzero, sub2ind/ind2sub and one_hot against
 * host references for every value dtype and both index dtypes, with
 * negative indices, duplicates, empty inputs, multi-level scans, in-place
 * outputs, out-of-range indices (exact status, message naming the position,
 * target untouched) and bad input.
 *
 * Scatter is checked bit for bit against a host loop that applies the
 * index elements in row-major order: the library promises that order for
 * every dtype, floats included.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hostdata.h"
#include "kiln/index.h"
#include "kiln/layout.h"
#include "ops/index_internal.h"

static kiln_context *
ctx(void)
{
  return harness_ctx();
}

static uint64_t rng_state = 0x12345678u;

static uint64_t
next_u64(void)
{
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* An index tensor of idt with values in [lo, hi). *host receives them as int64 (caller frees). */
static kiln_tensor *
make_index(kiln_dtype idt, size_t nd, const int64_t *shape, int64_t lo, int64_t hi, int64_t **host)
{
  uint64_t n = hd_numel(nd, shape);
  int64_t *v = calloc(n ? n : 1, sizeof *v);
  void *raw = calloc(n ? n : 1, 8);
  for (uint64_t i = 0; i < n; i++) {
    v[i] = hi > lo ? lo + (int64_t)(next_u64() % (uint64_t)(hi - lo)) : lo;
    hd_seti(idt, raw, i, v[i]);
  }
  kiln_tensor *t = hd_upload(idt, nd, shape, raw);
  free(raw);
  if (host)
    *host = v;
  else
    free(v);
  return t;
}

/* Uploads explicit index values. */
static kiln_tensor *
index_from(kiln_dtype idt, size_t nd, const int64_t *shape, const int64_t *vals)
{
  uint64_t n = hd_numel(nd, shape);
  void *raw = calloc(n ? n : 1, 8);
  for (uint64_t i = 0; i < n; i++)
    hd_seti(idt, raw, i, vals[i]);
  kiln_tensor *t = hd_upload(idt, nd, shape, raw);
  free(raw);
  return t;
}

static const kiln_dtype index_dtypes[2] = {KILN_I32, KILN_I64};

/* ------------------------------------------------------------------ */
/* gather, index_select, embedding                                      */
/* ------------------------------------------------------------------ */

/* x[xs] gathered along axis by an index of shape is (values in [-len, len)), checked. */
static void
check_gather(kiln_dtype dt, kiln_dtype idt, size_t nd, const int64_t *xs, const int64_t *is,
             int64_t axis, uint64_t seed)
{
  if (!hd_dtype_ok(dt))
    return;
  size_t ax = (size_t)(axis < 0 ? axis + (int64_t)nd : axis);
  void *hx;
  kiln_tensor *x = hd_make(dt, nd, xs, seed, &hx);
  int64_t len = xs[ax], *iv;
  kiln_tensor *idx = make_index(idt, nd, is, -len, len, &iv);
  kiln_tensor *out = NULL;
  KOK(kiln_gather(ctx(), x, axis, idx, &out));
  uint64_t n = hd_numel(nd, is);
  int64_t *src = calloc(n ? n : 1, sizeof *src), c[KILN_MAX_DIMS];
  for (uint64_t i = 0; i < n; i++) {
    hd_unravel(i, nd, is, c);
    c[ax] = iv[i] < 0 ? iv[i] + len : iv[i];
    src[i] = (int64_t)hd_ravel(nd, xs, c);
  }
  hd_expect_shape(out, dt, nd, is);
  void *g = hd_download(out);
  hd_expect_map(dt, g, hx, src, n, NULL, "gather");
  free(g);
  free(src);
  free(iv);
  free(hx);
  KOK(kiln_tensor_release(out));
  KOK(kiln_tensor_release(idx));
  KOK(kiln_tensor_release(x));
}

/*
 * Both forms of gather on every device (kiln__index_force_layout): one work-item per
 * element (GPUs) and one per row of the index's last axis (CPUs), over every dtype and
 * axis, then rows longer than a vector or a work-group, an index narrower than x outside
 * the axis (its rows start at x's strides), and a 1-wide last axis.
 */
START_TEST(gather_all_dtypes)
{
  for (int form = 1; form <= 2; form++) {
    kiln__index_force_layout = form;
    int64_t xs3[3] = {4, 5, 3};
    HD_FOR_EVERY_DTYPE(dt)
    {
      for (int ii = 0; ii < 2; ii++) {
        for (int64_t axis = -1; axis < 3; axis++) {
          int64_t is[3] = {3, 5, 2};
          is[axis < 0 ? 2 : axis] = 7; /* the gathered axis may be longer than x's */
          check_gather(dt, index_dtypes[ii], 3, xs3, is, axis, 1);
        }
      }
    }
    int64_t xs[2] = {37, 300}, is1[2] = {37, 1029}, is0[2] = {50, 300}, isn[2] = {20, 77};
    int64_t x3[3] = {4, 6, 9}, i3[3] = {3, 5, 1};
    check_gather(KILN_F32, KILN_I32, 2, xs, is1, 1, 5);
    check_gather(KILN_F64, KILN_I64, 2, xs, is0, 0, 6);
    check_gather(KILN_I64, KILN_I32, 2, xs, isn, 1, 7);
    check_gather(KILN_U8, KILN_I64, 2, xs, isn, 0, 8);
    check_gather(KILN_C128, KILN_I64, 3, x3, i3, 1, 9);
    check_gather(KILN_F16, KILN_I32, 3, x3, i3, -1, 10);
  }
  kiln__index_force_layout = 0;
}
END_TEST

/* gather's statuses and messages, in the form kiln__index_force_layout selects. */
static void
gather_error_cases(void)
{
  int64_t xs[2] = {4, 5}, is[2] = {2, 5};
  kiln_tensor *x = hd_make(KILN_F32, 2, xs, 0, NULL), *out = NULL;
  int64_t bad[10] = {0, 1, 2, 3, -4, 0, 0, 4, 0, 0}; /* position 7 is 4: out of [-4, 4) */
  kiln_tensor *idx = index_from(KILN_I64, 2, is, bad);
  KEXPECT(kiln_gather(ctx(), x, 0, idx, &out), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(out);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "index 4 at position 7"));
  KOK(kiln_tensor_release(idx));
  bad[7] = -5;
  idx = index_from(KILN_I32, 2, is, bad);
  KEXPECT(kiln_gather(ctx(), x, 0, idx, &out), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "index -5 at position 7"));
  KOK(kiln_tensor_release(idx));
  /* Two bad indices in the second row, another one later: the first position is named. */
  int64_t two[15] = {0, 1, 2, 3, 4, 0, 9, 0, 7, -6, 0, 1, 5, 0, 0}, is3[2] = {3, 5};
  idx = index_from(KILN_I32, 2, is3, two);
  KEXPECT(kiln_gather(ctx(), x, 1, idx, &out), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "index 9 at position 6"));
  KOK(kiln_tensor_release(idx));
  int64_t big[2] = {2, 6};
  idx = make_index(KILN_I32, 2, big, 0, 4, NULL);
  KEXPECT(kiln_gather(ctx(), x, 0, idx, &out), KILN_ERR_SHAPE);
  KOK(kiln_tensor_release(idx));
  int64_t one[1] = {2};
  idx = make_index(KILN_I32, 1, one, 0, 4, NULL);
  KEXPECT(kiln_gather(ctx(), x, 0, idx, &out), KILN_ERR_SHAPE);
  KEXPECT(kiln_gather(ctx(), x, 2, idx, &out), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_gather(ctx(), x, 0, x, &out), KILN_ERR_DTYPE);
  KEXPECT(kiln_gather(ctx(), x, 0, NULL, &out), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_gather(ctx(), x, 0, idx, NULL), KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_tensor_release(idx));
  /* Empty index: empty result, nothing checked. */
  int64_t e[2] = {0, 5};
  idx = make_index(KILN_I64, 2, e, 0, 1, NULL);
  KOK(kiln_gather(ctx(), x, 0, idx, &out));
  hd_expect_shape(out, KILN_F32, 2, e);
  KOK(kiln_tensor_release(out));
  KOK(kiln_tensor_release(idx));
  KOK(kiln_tensor_release(x));
}

START_TEST(gather_errors)
{
  for (int form = 1; form <= 2; form++) {
    kiln__index_force_layout = form;
    gather_error_cases();
  }
  kiln__index_force_layout = 0;
}
END_TEST

/* index_select and embedding in the form kiln__index_force_layout selects. */
static void
index_select_cases(void)
{
  int64_t xs[3] = {5, 4, 3};
  HD_FOR_EVERY_DTYPE(dt)
  {
    void *hx;
    kiln_tensor *x = hd_make(dt, 3, xs, 2, &hx);
    for (size_t ax = 0; ax < 3; ax++) {
      int64_t is[2] = {2, 3};
      int64_t len = xs[ax], *iv;
      kiln_tensor *idx = make_index(index_dtypes[ax % 2], 2, is, -len, len, &iv);
      kiln_tensor *out = NULL;
      KOK(kiln_index_select(ctx(), x, (int64_t)ax, idx, &out));
      int64_t os[4];
      size_t r = 0;
      for (size_t d = 0; d < ax; d++)
        os[r++] = xs[d];
      os[r++] = 2;
      os[r++] = 3;
      for (size_t d = ax + 1; d < 3; d++)
        os[r++] = xs[d];
      uint64_t n = hd_numel(4, os);
      int64_t *src = calloc(n, sizeof *src), oc[4], xc[3];
      for (uint64_t i = 0; i < n; i++) {
        hd_unravel(i, 4, os, oc);
        size_t k = 0;
        for (size_t d = 0; d < 3; d++) {
          if (d == ax) {
            int64_t v = iv[oc[k] * 3 + oc[k + 1]];
            xc[d] = v < 0 ? v + len : v;
            k += 2;
          } else {
            xc[d] = oc[k++];
          }
        }
        src[i] = (int64_t)hd_ravel(3, xs, xc);
      }
      hd_expect_shape(out, dt, 4, os);
      void *g = hd_download(out);
      hd_expect_map(dt, g, hx, src, n, NULL, "index_select");
      free(g);
      free(src);
      free(iv);
      KOK(kiln_tensor_release(out));
      KOK(kiln_tensor_release(idx));
    }
    free(hx);
    KOK(kiln_tensor_release(x));

    /* embedding: weight [10, 3], indices [2, 4] -> [2, 4, 3] */
    int64_t ws[2] = {10, 3}, is[2] = {2, 4}, *iv;
    kiln_tensor *w = hd_make(dt, 2, ws, 3, &hx);
    kiln_tensor *idx = make_index(KILN_I64, 2, is, 0, 10, &iv);
    kiln_tensor *out = NULL;
    KOK(kiln_embedding(ctx(), w, idx, &out));
    int64_t os[3] = {2, 4, 3}, src[24];
    for (int i = 0; i < 24; i++)
      src[i] = iv[i / 3] * 3 + i % 3;
    hd_expect_shape(out, dt, 3, os);
    void *g = hd_download(out);
    hd_expect_map(dt, g, hx, src, 24, NULL, "embedding");
    free(g);
    free(iv);
    free(hx);
    KOK(kiln_tensor_release(out));
    KOK(kiln_tensor_release(idx));
    KOK(kiln_tensor_release(w));
  }

  /* Rows longer than a work-group (257), a prime count of them (1009 selections, i32 and
   * i64 indices), then a bad index: it reads as 0 and names its position in both forms. */
  int64_t ls[2] = {300, 257}, li[1] = {1009};
  void *lh;
  kiln_tensor *lx = hd_make(KILN_F32, 2, ls, 9, &lh);
  for (int ii = 0; ii < 2; ii++) {
    int64_t *iv;
    kiln_tensor *idx = make_index(index_dtypes[ii], 1, li, -300, 300, &iv);
    kiln_tensor *out = NULL;
    KOK(kiln_index_select(ctx(), lx, 0, idx, &out));
    uint64_t n = 1009 * 257;
    int64_t *src = malloc(n * sizeof *src);
    for (uint64_t e = 0; e < n; e++) {
      int64_t v = iv[e / 257];
      src[e] = (v < 0 ? v + 300 : v) * 257 + (int64_t)(e % 257);
    }
    void *g = hd_download(out);
    hd_expect_map(KILN_F32, g, lh, src, n, NULL, "index_select 1009 x 257");
    free(g);
    free(src);
    free(iv);
    KOK(kiln_tensor_release(out));
    KOK(kiln_tensor_release(idx));
  }
  int64_t b3[1] = {3}, badv[3] = {1, -301, 2};
  kiln_tensor *bad = index_from(KILN_I64, 1, b3, badv), *bo = NULL;
  KEXPECT(kiln_index_select(ctx(), lx, 0, bad, &bo), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "at position 1"));
  ck_assert_ptr_null(bo);
  KOK(kiln_tensor_release(bad));
  free(lh);
  KOK(kiln_tensor_release(lx));
}

START_TEST(index_select_and_embedding)
{
  /* Both forms on every device: the GPU one (items along the row) and the CPU one. */
  for (int form = 1; form <= 2; form++) {
    kiln__index_force_layout = form;
    index_select_cases();
  }
  kiln__index_force_layout = 0;
  /* Errors. */
  int64_t ws[2] = {10, 3}, w1[1] = {10}, is[1] = {3};
  kiln_tensor *w = hd_make(KILN_F32, 2, ws, 0, NULL), *v = hd_make(KILN_F32, 1, w1, 0, NULL);
  int64_t badv[3] = {0, 10, 2};
  kiln_tensor *bad = index_from(KILN_I32, 1, is, badv), *out = NULL;
  KEXPECT(kiln_embedding(ctx(), w, bad, &out), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "index 10 at position 1"));
  ck_assert_ptr_null(out);
  KEXPECT(kiln_index_select(ctx(), v, 0, bad, &out), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_embedding(ctx(), v, bad, &out), KILN_ERR_SHAPE);
  KEXPECT(kiln_embedding(ctx(), w, w, &out), KILN_ERR_DTYPE);
  KEXPECT(kiln_index_select(ctx(), w, -3, bad, &out), KILN_ERR_INVALID_ARGUMENT);
  int64_t s8[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  kiln_tensor *i8 = make_index(KILN_I32, 8, s8, 0, 3, NULL);
  KEXPECT(kiln_index_select(ctx(), w, 0, i8, &out), KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_tensor_release(i8));
  /* The output may be the index tensor's own buffer (same dtype and shape). */
  int64_t s3[1] = {3}, vals[3] = {2, 0, 1};
  kiln_tensor *ix = index_from(KILN_I64, 1, s3, vals);
  int64_t xv[3] = {10, 20, 30};
  kiln_tensor *xx = index_from(KILN_I64, 1, s3, xv);
  kiln_tensor *o = ix;
  KOK(kiln_index_select(ctx(), xx, 0, ix, &o));
  int64_t got[3];
  KOK(kiln_tensor_download(ix, got, sizeof got));
  ck_assert(got[0] == 30 && got[1] == 10 && got[2] == 20);
  KOK(kiln_tensor_release(ix));
  KOK(kiln_tensor_release(xx));
  KOK(kiln_tensor_release(bad));
  KOK(kiln_tensor_release(v));
  KOK(kiln_tensor_release(w));
}
END_TEST

/* ------------------------------------------------------------------ */
/* scatter                                                              */
/* ------------------------------------------------------------------ */

/* Host reference: apply index elements in row-major order. */
static void
scatter_ref(kiln_dtype dt, void *x, size_t nd, const int64_t *xs, size_t ax, const int64_t *iv,
            const int64_t *is, const void *src, const int64_t *ss, int add)
{
  uint64_t m = hd_numel(nd, is);
  int64_t c[KILN_MAX_DIMS];
  size_t esz = kiln_dtype_size(dt);
  /* f16/bf16 add each target's run in f32 and round once at the end, as the kernel does. */
  int half = dt == KILN_F16 || dt == KILN_BF16;
  uint64_t nx = hd_numel(nd, xs);
  float *acc = half ? calloc(nx ? nx : 1, sizeof *acc) : NULL;
  uint8_t *hit = half ? calloc(nx ? nx : 1, 1) : NULL;
  for (uint64_t i = 0; half && i < nx; i++)
    acc[i] = (float)hd_getf(dt, x, i);
  for (uint64_t e = 0; e < m; e++) {
    hd_unravel(e, nd, is, c);
    uint64_t si = hd_ravel(nd, ss, c);
    c[ax] = iv[e] < 0 ? iv[e] + xs[ax] : iv[e];
    uint64_t ti = hd_ravel(nd, xs, c);
    if (!add) {
      memcpy((char *)x + ti * esz, (const char *)src + si * esz, esz);
      continue;
    }
    switch (dt) {
    case KILN_F16:
    case KILN_BF16:
      acc[ti] += (float)hd_getf(dt, src, si);
      hit[ti] = 1;
      break;
    case KILN_C64: {
      kiln_complex64 *t = &((kiln_complex64 *)x)[ti];
      const kiln_complex64 *v = &((const kiln_complex64 *)src)[si];
      *t = (kiln_complex64){t->re + v->re, t->im + v->im};
      break;
    }
    case KILN_C128: {
      kiln_complex128 *t = &((kiln_complex128 *)x)[ti];
      const kiln_complex128 *v = &((const kiln_complex128 *)src)[si];
      *t = (kiln_complex128){t->re + v->re, t->im + v->im};
      break;
    }
    case KILN_F32:
      ((float *)x)[ti] = ((float *)x)[ti] + ((const float *)src)[si];
      break;
    case KILN_F64:
      ((double *)x)[ti] = ((double *)x)[ti] + ((const double *)src)[si];
      break;
    case KILN_BOOL:
      ((uint8_t *)x)[ti] = ((uint8_t *)x)[ti] | ((const uint8_t *)src)[si];
      break;
    default:
      hd_seti(dt, x, ti, (int64_t)((uint64_t)hd_geti(dt, x, ti) + (uint64_t)hd_geti(dt, src, si)));
    }
  }
  for (uint64_t i = 0; half && i < nx; i++)
    if (hit[i])
      hd_setf(dt, x, i, acc[i]);
  free(acc);
  free(hit);
}

static void
check_scatter(kiln_dtype dt, kiln_dtype idt, size_t nd, const int64_t *xs, int64_t axis,
              const int64_t *is, const int64_t *ss, int add, int in_place, uint64_t seed)
{
  size_t ax = (size_t)(axis < 0 ? axis + (int64_t)nd : axis);
  void *hx, *hs;
  /* Assign moves bits (random patterns for f16/bf16/complex); add needs finite values. */
  kiln_tensor *x = (add ? hd_make_values : hd_make)(dt, nd, xs, seed, &hx);
  kiln_tensor *src = (add ? hd_make_values : hd_make)(dt, nd, ss, seed + 1, &hs);
  int64_t *iv;
  kiln_tensor *idx = make_index(idt, nd, is, -xs[ax], xs[ax], &iv);
  kiln_tensor *out = in_place ? x : NULL;
  KOK(kiln_scatter(ctx(), x, axis, idx, src, add ? KILN_SCATTER_ADD : KILN_SCATTER_ASSIGN, &out));
  if (in_place)
    ck_assert_ptr_eq(out, x);
  scatter_ref(dt, hx, nd, xs, ax, iv, is, hs, ss, add);
  hd_expect_shape(out, dt, nd, xs);
  void *g = hd_download(out);
  hd_expect_equal(dt, g, hx, hd_numel(nd, xs), add ? "scatter add" : "scatter assign");
  free(g);
  if (!in_place)
    KOK(kiln_tensor_release(out));
  free(iv);
  free(hx);
  free(hs);
  KOK(kiln_tensor_release(idx));
  KOK(kiln_tensor_release(src));
  KOK(kiln_tensor_release(x));
}

START_TEST(scatter_all_dtypes)
{
  HD_FOR_EVERY_DTYPE(dt)
  {
    for (int add = 0; add < 2; add++) {
      int64_t xs[2] = {5, 4}, is[2] = {6, 4}, ss[2] = {6, 5};
      check_scatter(dt, KILN_I64, 2, xs, 0, is, ss, add, 0, 10);
      int64_t is1[2] = {3, 9}, ss1[2] = {4, 9};
      check_scatter(dt, KILN_I32, 2, xs, 1, is1, ss1, add, 1, 20);
      int64_t x3[3] = {3, 4, 5}, i3[3] = {2, 6, 3}, s3[3] = {2, 7, 4};
      check_scatter(dt, KILN_I32, 3, x3, -2, i3, s3, add, 0, 30);
    }
  }
  /* Many duplicates on few targets: the float sum must follow index order exactly. */
  int64_t xs[1] = {7}, is[1] = {harness_size(10007, 1009)}, ss[1] = {is[0]};
  check_scatter(KILN_F32, KILN_I32, 1, xs, 0, is, ss, 1, 0, 40);
  if (harness_has_fp64())
    check_scatter(KILN_F64, KILN_I64, 1, xs, 0, is, ss, 1, 1, 50);
  check_scatter(KILN_I32, KILN_I64, 1, xs, 0, is, ss, 0, 0, 60);
  /* The same for the new dtypes: f16/bf16 sum each run in f32 and round once. */
  check_scatter(KILN_F16, KILN_I32, 1, xs, 0, is, ss, 1, 0, 70);
  check_scatter(KILN_BF16, KILN_I64, 1, xs, 0, is, ss, 1, 1, 80);
  check_scatter(KILN_C64, KILN_I32, 1, xs, 0, is, ss, 1, 0, 90);
  check_scatter(KILN_F16, KILN_I64, 1, xs, 0, is, ss, 0, 0, 100);
}
END_TEST

START_TEST(scatter_add_is_ordered_and_repeatable)
{
  /* 1e8 + 1 + 1 ... in f32 depends on the order: index order is promised. */
  int64_t xs[1] = {2}, n = harness_size(4096, 1000);
  float *vals = malloc((size_t)n * sizeof *vals);
  int64_t *iv = malloc((size_t)n * sizeof *iv);
  for (int64_t i = 0; i < n; i++) {
    vals[i] = i % 97 == 0 ? 1e8f : i % 2 ? 1.0f : -0.75f;
    iv[i] = (i * 7) % 3 == 0 ? 1 : 0;
  }
  float zero[2] = {0, 0};
  kiln_tensor *x = hd_upload(KILN_F32, 1, xs, zero), *src = hd_upload(KILN_F32, 1, &n, vals);
  kiln_tensor *idx = index_from(KILN_I32, 1, &n, iv);
  float want[2] = {0, 0};
  for (int64_t i = 0; i < n; i++)
    want[iv[i]] += vals[i];
  for (int rep = 0; rep < 3; rep++) {
    kiln_tensor *out = NULL;
    KOK(kiln_scatter(ctx(), x, 0, idx, src, KILN_SCATTER_ADD, &out));
    float got[2];
    KOK(kiln_tensor_download(out, got, sizeof got));
    ck_assert_mem_eq(got, want, sizeof got);
    KOK(kiln_tensor_release(out));
  }
  free(vals);
  free(iv);
  KOK(kiln_tensor_release(idx));
  KOK(kiln_tensor_release(src));
  KOK(kiln_tensor_release(x));
}
END_TEST

START_TEST(scatter_errors_leave_target_untouched)
{
  int64_t xs[2] = {3, 4}, is[2] = {2, 4};
  void *hx;
  kiln_tensor *x = hd_make(KILN_I32, 2, xs, 5, &hx), *src = hd_make(KILN_I32, 2, is, 6, NULL);
  int64_t badv[8] = {0, 1, 2, 0, 1, 3, 0, 0}; /* position 5 is 3, out of [-3, 3) */
  kiln_tensor *bad = index_from(KILN_I64, 2, is, badv);
  kiln_tensor *out = x;
  KEXPECT(kiln_scatter(ctx(), x, 0, bad, src, KILN_SCATTER_ADD, &out), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "index 3 at position 5"));
  void *g = hd_download(x);
  hd_expect_equal(KILN_I32, g, hx, 12, "scatter target after an index error");
  free(g);
  out = NULL;
  KEXPECT(kiln_scatter(ctx(), x, 0, bad, src, KILN_SCATTER_ASSIGN, &out),
          KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(out);
  kiln_tensor *good = make_index(KILN_I32, 2, is, 0, 3, NULL);
  kiln_tensor *fsrc = hd_make(KILN_F32, 2, is, 6, NULL);
  KEXPECT(kiln_scatter(ctx(), x, 0, good, fsrc, KILN_SCATTER_ADD, &out), KILN_ERR_DTYPE);
  KEXPECT(kiln_scatter(ctx(), x, 0, fsrc, src, KILN_SCATTER_ADD, &out), KILN_ERR_DTYPE);
  KEXPECT(kiln_scatter(ctx(), x, 0, good, src, (kiln_scatter_mode)3, &out),
          KILN_ERR_INVALID_ARGUMENT);
  int64_t small[2] = {2, 3};
  kiln_tensor *ssrc = hd_make(KILN_I32, 2, small, 1, NULL);
  KEXPECT(kiln_scatter(ctx(), x, 0, good, ssrc, KILN_SCATTER_ADD, &out), KILN_ERR_SHAPE);
  int64_t wide[2] = {2, 5};
  kiln_tensor *widx = make_index(KILN_I32, 2, wide, 0, 3, NULL);
  kiln_tensor *wsrc = hd_make(KILN_I32, 2, wide, 1, NULL);
  KEXPECT(kiln_scatter(ctx(), x, 0, widx, wsrc, KILN_SCATTER_ADD, &out), KILN_ERR_SHAPE);
  KEXPECT(kiln_scatter(ctx(), x, 2, good, src, KILN_SCATTER_ADD, &out), KILN_ERR_INVALID_ARGUMENT);
  /* src that shares the target's buffer (in place, src = x itself). */
  int64_t sq[2] = {3, 3}, perm[9] = {2, 0, 1, 1, 2, 0, 0, 1, 2};
  void *hy;
  kiln_tensor *y = hd_make(KILN_I32, 2, sq, 9, &hy);
  kiln_tensor *pidx = index_from(KILN_I32, 2, sq, perm);
  out = y;
  KOK(kiln_scatter(ctx(), y, 0, pidx, y, KILN_SCATTER_ASSIGN, &out));
  int32_t *want = malloc(36);
  memcpy(want, hy, 36);
  for (int e = 0; e < 9; e++)
    want[perm[e] * 3 + e % 3] = ((int32_t *)hy)[e];
  g = hd_download(y);
  hd_expect_equal(KILN_I32, g, want, 9, "scatter with src = target");
  free(g);
  free(want);
  free(hy);
  KOK(kiln_tensor_release(pidx));
  KOK(kiln_tensor_release(y));
  KOK(kiln_tensor_release(wsrc));
  KOK(kiln_tensor_release(widx));
  KOK(kiln_tensor_release(ssrc));
  KOK(kiln_tensor_release(fsrc));
  KOK(kiln_tensor_release(good));
  KOK(kiln_tensor_release(bad));
  KOK(kiln_tensor_release(src));
  KOK(kiln_tensor_release(x));
  free(hx);
}
END_TEST

/* ------------------------------------------------------------------ */
/* masks and compaction                                                 */
/* ------------------------------------------------------------------ */

static void *
random_mask(uint64_t n, int percent)
{
  uint8_t *m = calloc(n ? n : 1, 1);
  for (uint64_t i = 0; i < n; i++)
    m[i] = (int)(next_u64() % 100) < percent;
  return m;
}

START_TEST(masked_fill_broadcast)
{
  int64_t xs[2] = {3, 4};
  static const int64_t mshapes[][2] = {{3, 4}, {1, 4}, {3, 1}};
  static const size_t mnd[] = {2, 1, 2};
  HD_FOR_EVERY_DTYPE(dt)
  {
    for (size_t c = 0; c < 3; c++) {
      void *hx;
      kiln_tensor *x = hd_make(dt, 2, xs, 70 + c, &hx);
      const int64_t *ms = mnd[c] == 1 ? &mshapes[c][1] : mshapes[c];
      uint64_t mn = hd_numel(mnd[c], ms);
      uint8_t *hm = random_mask(mn, 50);
      kiln_tensor *mask = hd_upload(c == 1 ? KILN_U8 : KILN_BOOL, mnd[c], ms, hm);
      kiln_tensor *out = c == 2 ? x : NULL; /* the last case runs in place */
      KOK(kiln_masked_fill(ctx(), x, mask, kiln_scalar_i64(-3), &out));
      unsigned char fill[16];
      hd_seti(dt, fill, 0, -3);
      int64_t src[12], cc[2];
      for (uint64_t i = 0; i < 12; i++) {
        hd_unravel(i, 2, xs, cc);
        uint64_t mi = mnd[c] == 1  ? (uint64_t)cc[1]
                      : ms[0] == 1 ? (uint64_t)cc[1]
                      : ms[1] == 1 ? (uint64_t)cc[0]
                                   : i;
        src[i] = hm[mi] ? -1 : (int64_t)i;
      }
      void *g = hd_download(out);
      hd_expect_map(dt, g, hx, src, 12, fill, "masked_fill");
      free(g);
      if (out != x)
        KOK(kiln_tensor_release(out));
      free(hm);
      free(hx);
      KOK(kiln_tensor_release(mask));
      KOK(kiln_tensor_release(x));
    }
  }
  kiln_tensor *x = hd_make(KILN_F32, 2, xs, 0, NULL), *out = NULL;
  kiln_tensor *fm = hd_make(KILN_F32, 2, xs, 0, NULL);
  KEXPECT(kiln_masked_fill(ctx(), x, fm, kiln_scalar_i64(0), &out), KILN_ERR_DTYPE);
  int64_t two[1] = {2};
  uint8_t m2[2] = {1, 0};
  kiln_tensor *bm = hd_upload(KILN_BOOL, 1, two, m2);
  KEXPECT(kiln_masked_fill(ctx(), x, bm, kiln_scalar_i64(0), &out), KILN_ERR_SHAPE);
  KEXPECT(kiln_masked_select(ctx(), x, bm, &out, NULL), KILN_ERR_SHAPE);
  KOK(kiln_tensor_release(bm));
  KOK(kiln_tensor_release(fm));
  KOK(kiln_tensor_release(x));
}
END_TEST

/* Element i is nonzero: NaN is, -0 is not; a complex number when either part is. */
static int
nonzero_ref(kiln_dtype dt, const void *buf, uint64_t i)
{
  if (dt == KILN_C64)
    return ((const kiln_complex64 *)buf)[i].re != 0 || ((const kiln_complex64 *)buf)[i].im != 0;
  if (dt == KILN_C128)
    return ((const kiln_complex128 *)buf)[i].re != 0 || ((const kiln_complex128 *)buf)[i].im != 0;
  return hd_getf(dt, buf, i) != 0.0;
}

START_TEST(masked_select_and_nonzero)
{
  static const int64_t sizes[] = {0, 1, 37 * 11, 2048, 2049, 300007};
  HD_FOR_EVERY_DTYPE(dt)
  {
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
      int64_t n = sizes[si];
      if ((n > 5000 && dt != KILN_F32 && dt != KILN_U8 && dt != KILN_F16 && dt != KILN_C64) ||
          !harness_fits((uint64_t)n))
        continue;
      void *hx;
      kiln_tensor *x = hd_make(dt, 1, &n, 80 + si, &hx);
      uint8_t *hm = random_mask((uint64_t)n, si % 2 ? 90 : 30);
      kiln_tensor *mask = hd_upload(KILN_BOOL, 1, &n, hm);
      kiln_tensor *out = NULL;
      uint64_t count = 12345;
      KOK(kiln_masked_select(ctx(), x, mask, &out, &count));
      int64_t *src = calloc((size_t)n + 1, sizeof *src), k = 0;
      for (int64_t i = 0; i < n; i++)
        if (hm[i])
          src[k++] = i;
      ck_assert_uint_eq(count, (uint64_t)k);
      hd_expect_shape(out, dt, 1, &k);
      void *g = hd_download(out);
      hd_expect_map(dt, g, hx, src, (uint64_t)k, NULL, "masked_select");
      free(g);
      KOK(kiln_tensor_release(out));

      /* nonzero of the same data: positions of nonzero values */
      out = NULL;
      KOK(kiln_nonzero(ctx(), x, &out, &count));
      k = 0;
      for (int64_t i = 0; i < n; i++)
        if (nonzero_ref(dt, hx, (uint64_t)i))
          src[k++] = i;
      ck_assert_uint_eq(count, (uint64_t)k);
      hd_expect_shape(out, KILN_I64, 1, &k);
      int64_t *pos = hd_download(out);
      for (int64_t i = 0; i < k; i++)
        ck_assert_int_eq(pos[i], src[i]);
      free(pos);
      KOK(kiln_tensor_release(out));
      free(src);
      free(hm);
      free(hx);
      KOK(kiln_tensor_release(mask));
      KOK(kiln_tensor_release(x));
    }
  }
  /* Broadcast mask over rows, NaN counts as nonzero, more than two scan levels. */
  int64_t xs[2] = {3, 4}, ms[1] = {4};
  float xv[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  uint8_t mv[4] = {1, 0, 0, 1};
  kiln_tensor *x = hd_upload(KILN_F32, 2, xs, xv), *m = hd_upload(KILN_U8, 1, ms, mv), *out = NULL;
  uint64_t count = 0;
  KOK(kiln_masked_select(ctx(), x, m, &out, &count));
  float sel[6];
  ck_assert_uint_eq(count, 6);
  KOK(kiln_tensor_download(out, sel, sizeof sel));
  ck_assert(sel[0] == 0 && sel[1] == 3 && sel[2] == 4 && sel[3] == 7 && sel[4] == 8 &&
            sel[5] == 11);
  KEXPECT(kiln_masked_select(ctx(), x, m, &out, &count), KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_tensor_release(out));
  out = NULL;
  float nanv[3] = {0.0f, NAN, -0.0f};
  int64_t three = 3;
  kiln_tensor *nx = hd_upload(KILN_F32, 1, &three, nanv);
  KOK(kiln_nonzero(ctx(), nx, &out, NULL));
  ck_assert_uint_eq(kiln_tensor_numel(out), 1);
  int64_t p = -1;
  KOK(kiln_tensor_download(out, &p, sizeof p));
  ck_assert_int_eq(p, 1);
  KOK(kiln_tensor_release(out));
  KOK(kiln_tensor_release(nx));
  int64_t big = harness_size(4500000, 1400);
  uint8_t *bv = calloc((size_t)big, 1);
  for (int64_t i = 0; i < big; i += 1237)
    bv[i] = 1;
  kiln_tensor *bx = hd_upload(KILN_U8, 1, &big, bv);
  out = NULL;
  KOK(kiln_nonzero(ctx(), bx, &out, &count));
  ck_assert_uint_eq(count, (uint64_t)((big + 1236) / 1237));
  int64_t *bp = hd_download(out);
  for (uint64_t i = 0; i < count; i++)
    ck_assert_int_eq(bp[i], (int64_t)i * 1237);
  free(bp);
  free(bv);
  KOK(kiln_tensor_release(out));
  KOK(kiln_tensor_release(bx));
  out = NULL;
  KEXPECT(kiln_nonzero(ctx(), NULL, &out, &count), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_nonzero(ctx(), x, NULL, &count), KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_tensor_release(m));
  KOK(kiln_tensor_release(x));
}
END_TEST

/* ------------------------------------------------------------------ */
/* sub2ind, ind2sub, one_hot                                            */
/* ------------------------------------------------------------------ */

START_TEST(sub2ind_ind2sub_round_trip)
{
  int64_t dims[3] = {3, 4, 5};
  for (int ii = 0; ii < 2; ii++) {
    int64_t is[2] = {2, 7}, *iv;
    kiln_tensor *idx = make_index(index_dtypes[ii], 2, is, 0, 60, &iv);
    kiln_tensor *subs = NULL;
    KOK(kiln_ind2sub(ctx(), dims, 3, idx, &subs));
    int64_t ss[3] = {2, 7, 3};
    hd_expect_shape(subs, KILN_I64, 3, ss);
    int64_t *sv = hd_download(subs);
    for (int i = 0; i < 14; i++) {
      ck_assert_int_eq(sv[i * 3 + 0], iv[i] / 20);
      ck_assert_int_eq(sv[i * 3 + 1], (iv[i] / 5) % 4);
      ck_assert_int_eq(sv[i * 3 + 2], iv[i] % 5);
    }
    kiln_tensor *back = NULL;
    KOK(kiln_sub2ind(ctx(), dims, 3, subs, &back));
    hd_expect_shape(back, KILN_I64, 2, is);
    int64_t *bv = hd_download(back);
    for (int i = 0; i < 14; i++)
      ck_assert_int_eq(bv[i], iv[i]);
    free(bv);
    free(sv);
    free(iv);
    KOK(kiln_tensor_release(back));
    KOK(kiln_tensor_release(subs));
    KOK(kiln_tensor_release(idx));
  }
  /* i32 subscripts of one row: a 0-d result. */
  int64_t three = 3, row[3] = {2, 3, 4};
  kiln_tensor *s1 = index_from(KILN_I32, 1, &three, row), *o = NULL;
  KOK(kiln_sub2ind(ctx(), dims, 3, s1, &o));
  ck_assert_uint_eq(kiln_tensor_ndim(o), 0);
  int64_t v = 0;
  KOK(kiln_tensor_download(o, &v, sizeof v));
  ck_assert_int_eq(v, 59);
  KOK(kiln_tensor_release(o));
  o = NULL;
  KOK(kiln_tensor_release(s1));
  /* Out of range: a subscript, a linear index, a negative one, a zero dimension. */
  int64_t two3[2] = {2, 3}, badsub[6] = {0, 0, 0, 1, 4, 2};
  kiln_tensor *bs = index_from(KILN_I64, 2, two3, badsub);
  KEXPECT(kiln_sub2ind(ctx(), dims, 3, bs, &o), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "(1,4,2) of row 1"));
  ck_assert_ptr_null(o);
  int64_t bi[3] = {5, 60, -1};
  kiln_tensor *bidx = index_from(KILN_I32, 1, &three, bi);
  KEXPECT(kiln_ind2sub(ctx(), dims, 3, bidx, &o), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "index 60 at position 1"));
  int64_t zd[2] = {4, 0};
  KEXPECT(kiln_ind2sub(ctx(), zd, 2, bidx, &o), KILN_ERR_INVALID_ARGUMENT);
  int64_t negd[2] = {4, -1};
  KEXPECT(kiln_ind2sub(ctx(), negd, 2, bidx, &o), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_ind2sub(ctx(), dims, 0, bidx, &o), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_ind2sub(ctx(), NULL, 3, bidx, &o), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_sub2ind(ctx(), dims, 2, bs, &o), KILN_ERR_SHAPE);
  ck_assert_ptr_null(o);
  KOK(kiln_tensor_release(bidx));
  KOK(kiln_tensor_release(bs));
}
END_TEST

START_TEST(one_hot_all_dtypes)
{
  int64_t is[2] = {2, 3}, *iv;
  kiln_tensor *idx = make_index(KILN_I64, 2, is, 0, 4, &iv);
  HD_FOR_EVERY_DTYPE(dt)
  {
    kiln_tensor *out = NULL;
    KOK(kiln_one_hot(ctx(), idx, 4, dt, &out));
    int64_t os[3] = {2, 3, 4};
    hd_expect_shape(out, dt, 3, os);
    void *g = hd_download(out);
    unsigned char want[16];
    for (int i = 0; i < 24; i++) {
      hd_setf(dt, want, 0, iv[i / 4] == i % 4 ? 1.0 : 0.0);
      hd_expect_equal(dt, (char *)g + (size_t)i * kiln_dtype_size(dt), want, 1, "one_hot");
    }
    free(g);
    KOK(kiln_tensor_release(out));
  }
  free(iv);
  KOK(kiln_tensor_release(idx));
  int64_t three = 3, bad[3] = {0, -1, 2};
  idx = index_from(KILN_I32, 1, &three, bad);
  kiln_tensor *out = NULL;
  KEXPECT(kiln_one_hot(ctx(), idx, 3, KILN_F32, &out), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "index -1 at position 1"));
  KEXPECT(kiln_one_hot(ctx(), idx, 2, KILN_F32, &out), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_one_hot(ctx(), idx, 0, KILN_F32, &out), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_one_hot(ctx(), idx, 3, (kiln_dtype)77, &out), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(out);
  KOK(kiln_tensor_release(idx));
  KEXPECT(kiln_one_hot(ctx(), idx, 3, KILN_F32, &out), KILN_ERR_INVALID_HANDLE);
}
END_TEST

START_TEST(bad_handles_and_contexts)
{
  int64_t s[1] = {4};
  kiln_tensor *x = hd_make(KILN_F32, 1, s, 0, NULL), *idx = make_index(KILN_I32, 1, s, 0, 4, NULL);
  kiln_context *other = NULL;
  KOK(kiln_context_create(NULL, &other));
  kiln_tensor *oi = NULL, *out = NULL;
  KOK(kiln_tensor_zeros(other, KILN_I32, 1, s, &oi));
  KEXPECT(kiln_gather(ctx(), x, 0, oi, &out), KILN_ERR_CONTEXT_MISMATCH);
  KEXPECT(kiln_index_select(other, x, 0, oi, &out), KILN_ERR_CONTEXT_MISMATCH);
  KEXPECT(kiln_scatter(ctx(), x, 0, idx, x, KILN_SCATTER_ADD, &oi), KILN_ERR_CONTEXT_MISMATCH);
  KOK(kiln_tensor_release(oi));
  KOK(kiln_context_release(other));
  KEXPECT(kiln_nonzero(other, x, &out, NULL), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_masked_fill(NULL, x, x, kiln_scalar_i64(0), &out), KILN_ERR_INVALID_HANDLE);
  KOK(kiln_tensor_release(x));
  KEXPECT(kiln_gather(ctx(), x, 0, idx, &out), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_masked_select(ctx(), x, idx, &out, NULL), KILN_ERR_INVALID_HANDLE);
  KOK(kiln_tensor_release(idx));
  KEXPECT(kiln_one_hot(ctx(), idx, 4, KILN_F32, &out), KILN_ERR_INVALID_HANDLE);
  ck_assert_ptr_null(out);
}
END_TEST

/*
 * Aliasing: outputs one element before or after an input (x, index or
 * src) hold the values a separate output would.
 */
START_TEST(overlapping_outputs)
{
  kiln_context *ctx = harness_ctx();
  enum { N = 601 };
  const int64_t n = N;
  int32_t *hx = malloc(N * sizeof *hx), *hidx = malloc(N * sizeof *hidx);
  uint8_t *hm = malloc(N);
  for (int i = 0; i < N; i++) {
    hx[i] = i * 5 - 7;
    hidx[i] = (i * 7) % N; /* a permutation: 7 and 601 are coprime */
    hm[i] = (uint8_t)(i % 4 == 1);
  }
  kiln_tensor *xs = hd_upload(KILN_I32, 1, &n, hx), *is = hd_upload(KILN_I32, 1, &n, hidx);
  kiln_tensor *mask = hd_upload(KILN_BOOL, 1, &n, hm);
  for (int out_first = 1; out_first >= 0; out_first--) {
    const char *where = out_first ? "before" : "after";
    kiln_tensor *x, *y;
    /* gather with the output over x, then over the index */
    for (int over_index = 0; over_index < 2; over_index++) {
      harness_overlap_pair(KILN_I32, 1, &n, over_index ? hidx : hx, KILN_I32, 1, &n, 4, out_first,
                           &x, &y, NULL);
      KOK(kiln_gather(ctx, over_index ? xs : x, 0, over_index ? x : is, &y));
      int32_t *got = harness_download(y);
      for (int i = 0; i < N; i++)
        ck_assert_msg(got[i] == hx[hidx[i]], "gather, output %s %s: [%d]", where,
                      over_index ? "index" : "x", i);
      free(got);
      kiln_tensor_release(x);
      kiln_tensor_release(y);
    }
    /* scatter of src into x, the output over x */
    harness_overlap_pair(KILN_I32, 1, &n, hx, KILN_I32, 1, &n, 4, out_first, &x, &y, NULL);
    KOK(kiln_scatter(ctx, x, 0, is, xs, KILN_SCATTER_ASSIGN, &y));
    int32_t *got = harness_download(y);
    for (int i = 0; i < N; i++)
      ck_assert_msg(got[hidx[i]] == hx[i], "scatter, output %s x: [%d]", where, hidx[i]);
    free(got);
    kiln_tensor_release(x);
    kiln_tensor_release(y);
    /* masked_fill */
    harness_overlap_pair(KILN_I32, 1, &n, hx, KILN_I32, 1, &n, 4, out_first, &x, &y, NULL);
    KOK(kiln_masked_fill(ctx, x, mask, kiln_scalar_i64(99), &y));
    got = harness_download(y);
    for (int i = 0; i < N; i++)
      ck_assert_msg(got[i] == (hm[i] ? 99 : hx[i]), "masked_fill, output %s x: [%d]", where, i);
    free(got);
    kiln_tensor_release(x);
    kiln_tensor_release(y);
  }
  kiln_tensor_release(xs);
  kiln_tensor_release(is);
  kiln_tensor_release(mask);
  free(hx);
  free(hidx);
  free(hm);
}
END_TEST

/* index_select of x [outer, len, inner] along axis 1 (idx: nidx values), checked against the
 * host: the counter kiln__index_lines_calls[which] must have moved by `moves`. */
static void
select_lines_case(kiln_dtype dt, kiln_tensor *x, const void *hx, int64_t outer, int64_t len,
                  int64_t inner, kiln_dtype idt, int64_t nidx, int which, unsigned moves,
                  const char *what)
{
  int64_t is[1] = {nidx}, *iv;
  kiln_tensor *idx = make_index(idt, 1, is, -len, len, &iv);
  unsigned before = atomic_load(&kiln__index_lines_calls[which]);
  kiln_tensor *out = NULL;
  KOK(kiln_index_select(ctx(), x, outer > 1 ? 1 : 0, idx, &out));
  ck_assert_uint_eq(atomic_load(&kiln__index_lines_calls[which]) - before, moves);
  uint64_t n = (uint64_t)(outer * nidx * inner);
  int64_t *src = malloc(n * sizeof *src);
  for (uint64_t e = 0; e < n; e++) {
    int64_t o = (int64_t)(e / (uint64_t)(nidx * inner)), j = (int64_t)(e / (uint64_t)inner) % nidx;
    int64_t v = iv[j] < 0 ? iv[j] + len : iv[j];
    src[e] = (o * len + v) * inner + (int64_t)(e % (uint64_t)inner);
  }
  void *g = hd_download(out);
  hd_expect_map(dt, g, hx, src, n, NULL, what);
  free(g);
  free(src);
  free(iv);
  KOK(kiln_tensor_release(out));
  KOK(kiln_tensor_release(idx));
}

/*
 * The CPU form over 64-byte lines (index_select_lines and its non-temporal variant, forced on
 * any device): rows of two lines in every dtype, along axis 0 and along axis 1 of a 3-D
 * tensor (several outer slices), a bad index (zeros, its position named), rows of a line and
 * an element (the element loop), a table at an offset that is not a whole line (the element
 * loop), and a 16 MiB output (non-temporal stores).
 */
START_TEST(index_select_lines)
{
  kiln__index_force_layout = 2;
  HD_FOR_EVERY_DTYPE(dt)
  {
    int64_t inner = 128 / (int64_t)kiln_dtype_size(dt);
    int64_t s2[2] = {37, inner}, s3[3] = {3, 11, inner};
    void *h2, *h3;
    kiln_tensor *x2 = hd_make(dt, 2, s2, 5, &h2), *x3 = hd_make(dt, 3, s3, 6, &h3);
    select_lines_case(dt, x2, h2, 1, 37, inner, KILN_I32, 53, 0, 1, "lines, axis 0");
    select_lines_case(dt, x3, h3, 3, 11, inner, KILN_I64, 7, 0, 1, "lines, axis 1");
    free(h2);
    free(h3);
    KOK(kiln_tensor_release(x2));
    KOK(kiln_tensor_release(x3));
  }
  int64_t s[2] = {29, 17}, b3[1] = {3}, badv[3] = {4, 2, 40};
  void *h;
  kiln_tensor *x = hd_make(KILN_F32, 2, s, 7, &h);
  select_lines_case(KILN_F32, x, h, 1, 29, 17, KILN_I64, 31, 0, 0, "rows of 17 f32");
  free(h);
  KOK(kiln_tensor_release(x));
  s[1] = 16;
  x = hd_make(KILN_F32, 2, s, 8, &h);
  kiln_tensor *bad = index_from(KILN_I64, 1, b3, badv), *bo = NULL;
  unsigned before = atomic_load(&kiln__index_lines_calls[0]);
  KEXPECT(kiln_index_select(ctx(), x, 0, bad, &bo), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_uint_eq(atomic_load(&kiln__index_lines_calls[0]) - before, 1);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "at position 2"));
  ck_assert_ptr_null(bo);
  KOK(kiln_tensor_release(bad));
  /* The same table one element into a buffer: its rows are not whole lines apart from 0. */
  cl_mem mem;
  size_t off;
  KOK(kiln_tensor_cl_mem(x, &mem, &off));
  cl_int err;
  cl_context clc;
  KOK(kiln_context_cl_objects(ctx(), &clc, NULL, NULL));
  cl_mem big = clCreateBuffer(clc, CL_MEM_READ_WRITE, (29 * 16 + 1) * sizeof(float), NULL, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  kiln_tensor *shifted = NULL;
  KOK(kiln_tensor_wrap(ctx(), big, sizeof(float), KILN_F32, 2, s, &shifted));
  clReleaseMemObject(big);
  KOK(kiln_tensor_upload(shifted, h, 29 * 16 * sizeof(float)));
  select_lines_case(KILN_F32, shifted, h, 1, 29, 16, KILN_I32, 31, 0, 0, "shifted table");
  KOK(kiln_tensor_release(shifted));
  free(h);
  KOK(kiln_tensor_release(x));
  /* 4096 rows of 1024 f32: 16 MiB out (not in the simulator's small mode: 12 s there) */
  if (!harness_small()) {
    int64_t sl[2] = {300, 1024};
    x = hd_make(KILN_F32, 2, sl, 9, &h);
    select_lines_case(KILN_F32, x, h, 1, 300, 1024, KILN_I64, 4096, 1, 1, "16 MiB, non-temporal");
    free(h);
    KOK(kiln_tensor_release(x));
  }
  kiln__index_force_layout = 0;
}
END_TEST

static Suite *
index_suite(void)
{
  Suite *s = suite_create("index");
  TCase *tc = tcase_create("index");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, gather_all_dtypes);
  tcase_add_test(tc, gather_errors);
  tcase_add_test(tc, index_select_and_embedding);
  tcase_add_test(tc, scatter_all_dtypes);
  tcase_add_test(tc, scatter_add_is_ordered_and_repeatable);
  tcase_add_test(tc, scatter_errors_leave_target_untouched);
  tcase_add_test(tc, masked_fill_broadcast);
  tcase_add_test(tc, masked_select_and_nonzero);
  tcase_add_test(tc, sub2ind_ind2sub_round_trip);
  tcase_add_test(tc, one_hot_all_dtypes);
  tcase_add_test(tc, overlapping_outputs);
  tcase_add_test(tc, bad_handles_and_contexts);
  suite_add_tcase(s, tc);
  tc = tcase_create("lines");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, index_select_lines);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  return harness_main(index_suite(), 1);
}
