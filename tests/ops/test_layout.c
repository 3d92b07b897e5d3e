/*
 * Layout suite: every op of include/kiln/layout.h against a host reference,
 * for every dtype, with odd shapes (0, 1, primes, non-multiples of the
 * 32x32 transpose tile), zero-size views, 6-D permutations, slices with
 * negative steps, slice-assignment round trips, in-place outputs that alias
 * an input, and bad input with exact statuses.
 *
 * Layout ops move bytes, so each reference is a map "output element i comes
 * from input element src[i]" (or a fill value) computed here by plain index
 * loops, independent of the library's plans, and compared byte for byte.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "hostdata.h"
#include "kiln/layout.h"

#define DT_LOOP(dt) HD_FOR_EVERY_DTYPE(dt)

static kiln_context *
ctx(void)
{
  return harness_ctx();
}

static int64_t *
alloc_src(uint64_t n)
{
  int64_t *s = calloc(n ? n : 1, sizeof *s);
  ck_assert_ptr_nonnull(s);
  return s;
}

/* Downloads out, checks shape and the map, releases out. */
static void
check_out(kiln_tensor *out, kiln_dtype dt, size_t nd, const int64_t *shape, const void *in,
          const int64_t *src, const void *fill, const char *what)
{
  hd_expect_shape(out, dt, nd, shape);
  void *got = hd_download(out);
  hd_expect_map(dt, got, in, src, hd_numel(nd, shape), fill, what);
  free(got);
  KOK(kiln_tensor_release(out));
}

/* ------------------------------------------------------------------ */
/* reshape and views                                                    */
/* ------------------------------------------------------------------ */

START_TEST(reshape_is_a_view)
{
  DT_LOOP(dt)
  {
    int64_t shape[3] = {2, 3, 5};
    void *host;
    kiln_tensor *x = hd_make(dt, 3, shape, 1, &host);
    kiln_pool_stats before, after;
    KOK(kiln_pool_stats_get(ctx(), &before));
    kiln_tensor *v = NULL;
    int64_t ns[2] = {5, -1};
    KOK(kiln_reshape(ctx(), x, 2, ns, &v));
    int64_t want[2] = {5, 6};
    hd_expect_shape(v, dt, 2, want);
    KOK(kiln_pool_stats_get(ctx(), &after));
    ck_assert_uint_eq(after.bytes_in_use, before.bytes_in_use); /* no new buffer */
    cl_mem mx, mv;
    size_t ox, ov;
    KOK(kiln_tensor_cl_mem(x, &mx, &ox));
    KOK(kiln_tensor_cl_mem(v, &mv, &ov));
    ck_assert_ptr_eq(mx, mv);
    ck_assert_uint_eq(ox, ov);

    /* Writes through the view are seen by the base. */
    void *other = hd_pattern(dt, 30, 99);
    KOK(kiln_tensor_upload(v, other, 30 * kiln_dtype_size(dt)));
    void *got = hd_download(x);
    hd_expect_equal(dt, got, other, 30, "base after writing the view");
    free(got);

    /* The view outlives its base, and the pool does not hand the buffer out again. */
    KOK(kiln_tensor_release(x));
    kiln_tensor *y = NULL;
    KOK(kiln_tensor_full(ctx(), dt, 3, shape, kiln_scalar_i64(0), &y));
    got = hd_download(v);
    hd_expect_equal(dt, got, other, 30, "view after releasing the base");
    free(got);
    KOK(kiln_tensor_release(y));
    /* A view of a view, then release in creation order. */
    kiln_tensor *w = NULL;
    int64_t flat = 30;
    KOK(kiln_reshape(ctx(), v, 1, &flat, &w));
    KOK(kiln_tensor_release(v));
    got = hd_download(w);
    hd_expect_equal(dt, got, other, 30, "view of a view");
    free(got);
    KOK(kiln_tensor_release(w));
    free(other);
    free(host);
  }
}
END_TEST

START_TEST(reshape_pool_accounting)
{
  kiln_pool_stats s0, s1, s2;
  KOK(kiln_pool_stats_get(ctx(), &s0));
  int64_t shape[1] = {1000};
  kiln_tensor *x = hd_make(KILN_F32, 1, shape, 3, NULL);
  KOK(kiln_pool_stats_get(ctx(), &s1));
  ck_assert_uint_gt(s1.bytes_in_use, s0.bytes_in_use);
  kiln_tensor *v = NULL;
  int64_t ns[2] = {10, 100};
  KOK(kiln_reshape(ctx(), x, 2, ns, &v));
  KOK(kiln_tensor_release(x));
  KOK(kiln_pool_stats_get(ctx(), &s2));
  ck_assert_uint_eq(s2.bytes_in_use, s1.bytes_in_use); /* still held by the view */
  KOK(kiln_tensor_release(v));
  KOK(kiln_pool_stats_get(ctx(), &s2));
  ck_assert_uint_eq(s2.bytes_in_use, s0.bytes_in_use); /* the last release returns it */
}
END_TEST

START_TEST(reshape_zero_size_and_errors)
{
  int64_t shape[2] = {0, 5};
  kiln_tensor *x = NULL;
  KOK(kiln_tensor_create(ctx(), KILN_I32, 2, shape, &x));
  kiln_tensor *v = NULL;
  int64_t ns[3] = {5, 0, 3};
  KOK(kiln_reshape(ctx(), x, 3, ns, &v));
  hd_expect_shape(v, KILN_I32, 3, ns);
  ck_assert_uint_eq(kiln_tensor_numel(v), 0);
  kiln_tensor *w = NULL;
  int64_t inf[2] = {-1, 0};
  KEXPECT(kiln_reshape(ctx(), x, 2, inf, &w), KILN_ERR_SHAPE);
  KOK(kiln_tensor_release(v));

  int64_t s6[1] = {6};
  kiln_tensor *y = hd_make(KILN_F32, 1, s6, 5, NULL);
  int64_t bad[2] = {4, 2};
  KEXPECT(kiln_reshape(ctx(), y, 2, bad, &w), KILN_ERR_SHAPE);
  int64_t two[2] = {-1, -1};
  KEXPECT(kiln_reshape(ctx(), y, 2, two, &w), KILN_ERR_SHAPE);
  int64_t neg[2] = {-2, -3};
  KEXPECT(kiln_reshape(ctx(), y, 2, neg, &w), KILN_ERR_SHAPE);
  int64_t nd4[1] = {4};
  KEXPECT(kiln_reshape(ctx(), y, 1, nd4, &w), KILN_ERR_SHAPE);
  KEXPECT(kiln_reshape(ctx(), y, 1, NULL, &w), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_reshape(ctx(), y, 1, s6, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_reshape(NULL, y, 1, s6, &w), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_reshape(ctx(), NULL, 1, s6, &w), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_reshape(ctx(), y, 9, s6, &w), KILN_ERR_INVALID_ARGUMENT);

  /* With a given output, reshape copies. */
  int64_t s23[2] = {2, 3};
  kiln_tensor *o = NULL;
  KOK(kiln_tensor_zeros(ctx(), KILN_F32, 2, s23, &o));
  kiln_tensor *o2 = o;
  KOK(kiln_reshape(ctx(), y, 2, s23, &o2));
  ck_assert_ptr_eq(o2, o);
  float a[6], b[6];
  KOK(kiln_tensor_download(y, a, sizeof a));
  KOK(kiln_tensor_download(o, b, sizeof b));
  ck_assert_mem_eq(a, b, sizeof a);
  cl_mem my, mo;
  KOK(kiln_tensor_cl_mem(y, &my, NULL));
  KOK(kiln_tensor_cl_mem(o, &mo, NULL));
  ck_assert_ptr_ne(my, mo);
  kiln_tensor *wrong = NULL;
  KOK(kiln_tensor_zeros(ctx(), KILN_F32, 1, s6, &wrong));
  KEXPECT(kiln_reshape(ctx(), y, 2, s23, &wrong), KILN_ERR_SHAPE);
  KOK(kiln_tensor_release(wrong));
  KOK(kiln_tensor_release(o));

  KOK(kiln_tensor_release(y));
  KEXPECT(kiln_reshape(ctx(), y, 1, s6, &w), KILN_ERR_INVALID_HANDLE); /* released */
  KOK(kiln_tensor_release(x));
}
END_TEST

START_TEST(reshape_of_wrapped_buffer)
{
  cl_context clc;
  KOK(kiln_context_cl_objects(ctx(), &clc, NULL, NULL));
  cl_int err;
  int32_t data[12];
  for (int i = 0; i < 12; i++)
    data[i] = i * 3 - 7;
  cl_mem m = clCreateBuffer(clc, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof data, data, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  int64_t s[1] = {12};
  kiln_tensor *x = NULL, *v = NULL;
  KOK(kiln_tensor_wrap(ctx(), m, 0, KILN_I32, 1, s, &x));
  clReleaseMemObject(m); /* kiln's references keep it alive */
  int64_t ns[2] = {3, 4};
  KOK(kiln_reshape(ctx(), x, 2, ns, &v));
  KOK(kiln_tensor_release(x));
  int32_t got[12];
  KOK(kiln_tensor_download(v, got, sizeof got));
  ck_assert_mem_eq(got, data, sizeof data);
  KOK(kiln_tensor_release(v));
}
END_TEST

/* ------------------------------------------------------------------ */
/* transpose and permute                                                */
/* ------------------------------------------------------------------ */

/* Reference map of a permutation: out axis i is in axis perm[i]. */
static int64_t *
permute_ref(size_t nd, const int64_t *shape, const int64_t *perm, int64_t *oshape)
{
  for (size_t i = 0; i < nd; i++)
    oshape[i] = shape[perm[i]];
  uint64_t n = hd_numel(nd, shape);
  int64_t *src = alloc_src(n);
  int64_t oc[KILN_MAX_DIMS], ic[KILN_MAX_DIMS];
  for (uint64_t i = 0; i < n; i++) {
    hd_unravel(i, nd, oshape, oc);
    for (size_t d = 0; d < nd; d++)
      ic[perm[d]] = oc[d];
    src[i] = (int64_t)hd_ravel(nd, shape, ic);
  }
  return src;
}

static void
check_permute(kiln_dtype dt, size_t nd, const int64_t *shape, const int64_t *perm, int transpose)
{
  if (!harness_fits(hd_numel(nd, shape)))
    return;
  void *host;
  kiln_tensor *x = hd_make(dt, nd, shape, nd * 31 + (uint64_t)perm[0], &host);
  int64_t oshape[KILN_MAX_DIMS];
  int64_t *src = permute_ref(nd, shape, perm, oshape);
  kiln_tensor *out = NULL;
  if (transpose)
    KOK(kiln_transpose(ctx(), x, &out));
  else
    KOK(kiln_permute(ctx(), x, perm, nd, &out));
  check_out(out, dt, nd, oshape, host, src, NULL, transpose ? "transpose" : "permute");
  free(src);
  free(host);
  KOK(kiln_tensor_release(x));
}

START_TEST(transpose_shapes_all_dtypes)
{
  /* The small mode's 33 x 40 still holds a whole 32 x 32 tile and partial ones. */
  const int64_t shapes[][3] = {
      {1, 1, 0},    {3, 5, 0},  {31, 33, 0}, {harness_size(64, 33), harness_size(64, 40), 0},
      {37, 129, 0}, {0, 5, 0},  {1, 7, 0},   {3, 17, 40},
      {2, 1, 7},    {5, 32, 1}, {2, 0, 3}};
  DT_LOOP(dt)
  {
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      size_t nd = shapes[s][2] ? 3 : 2;
      int64_t perm[3] = {0, 1, 2};
      perm[nd - 2] = (int64_t)nd - 1;
      perm[nd - 1] = (int64_t)nd - 2;
      check_permute(dt, nd, shapes[s], perm, 1);
    }
  }
  int64_t s1[1] = {4};
  kiln_tensor *v = hd_make(KILN_F32, 1, s1, 0, NULL), *o = NULL;
  KEXPECT(kiln_transpose(ctx(), v, &o), KILN_ERR_SHAPE);
  KOK(kiln_tensor_release(v));
}
END_TEST

START_TEST(transpose_in_place_aliasing)
{
  int64_t s[2] = {7, 7};
  void *host;
  kiln_tensor *x = hd_make(KILN_I64, 2, s, 4, &host);
  int64_t perm[2] = {1, 0}, os[2];
  int64_t *src = permute_ref(2, s, perm, os);
  kiln_tensor *o = x;
  KOK(kiln_transpose(ctx(), x, &o)); /* out is the input */
  ck_assert_ptr_eq(o, x);
  void *got = hd_download(x);
  hd_expect_map(KILN_I64, got, host, src, 49, NULL, "in-place transpose");
  free(got);
  free(src);
  free(host);
  KOK(kiln_tensor_release(x));
}
END_TEST

START_TEST(permute_6d)
{
  static const int64_t shape[6] = {2, 3, 1, 4, 5, 2};
  static const int64_t perms[][6] = {{0, 1, 2, 3, 4, 5},  {5, 4, 3, 2, 1, 0}, {1, 0, 3, 2, 5, 4},
                                     {2, 4, 0, 5, 1, 3},  {0, 1, 2, 3, 5, 4}, {3, 5, 1, 0, 4, 2},
                                     {0, -1, 1, 2, 3, -2}};
  DT_LOOP(dt)
  {
    for (size_t p = 0; p < sizeof perms / sizeof perms[0]; p++) {
      int64_t norm[6];
      for (int i = 0; i < 6; i++)
        norm[i] = perms[p][i] < 0 ? perms[p][i] + 6 : perms[p][i];
      void *host;
      kiln_tensor *x = hd_make(dt, 6, shape, p, &host);
      int64_t oshape[6];
      int64_t *src = permute_ref(6, shape, norm, oshape);
      kiln_tensor *out = NULL;
      KOK(kiln_permute(ctx(), x, perms[p], 6, &out));
      check_out(out, dt, 6, oshape, host, src, NULL, "permute 6-D");
      free(src);
      free(host);
      KOK(kiln_tensor_release(x));
    }
  }
  /* 4-D: NCHW -> NHWC (a batched transpose after merging) and the attention swap. */
  int64_t s4[4] = {3, 5, 7, 11};
  int64_t p1[4] = {0, 2, 3, 1}, p2[4] = {0, 2, 1, 3}, p3[4] = {3, 2, 1, 0};
  check_permute(KILN_F32, 4, s4, p1, 0);
  check_permute(KILN_F32, 4, s4, p2, 0);
  check_permute(KILN_U8, 4, s4, p3, 0);
  /* Tiled with several batch axes, and a full reversal (tiled over the outer pair). */
  int64_t s5[5] = {3, 16, 5, 9, 12}, p5[5] = {2, 4, 0, 3, 1};
  int64_t sr[4] = {9, 10, 11, 12}, pr[4] = {3, 2, 1, 0};
  HD_FOR_DTYPES(dt)
  {
    if (hd_small_skip(dt))
      continue;
    check_permute(dt, 5, s5, p5, 0);
    check_permute(dt, 4, sr, pr, 0);
  }
  /* Zero-size and 0-d. */
  int64_t sz[3] = {4, 0, 2}, pz[3] = {2, 0, 1};
  check_permute(KILN_I32, 3, sz, pz, 0);
  kiln_tensor *s0 = NULL, *o0 = NULL;
  KOK(kiln_tensor_full(ctx(), KILN_I32, 0, NULL, kiln_scalar_i64(42), &s0));
  KOK(kiln_permute(ctx(), s0, NULL, 0, &o0));
  int32_t v = 0;
  KOK(kiln_tensor_download(o0, &v, sizeof v));
  ck_assert_int_eq(v, 42);
  KOK(kiln_tensor_release(o0));
  KOK(kiln_tensor_release(s0));

  /* Bad permutations. */
  kiln_tensor *x = hd_make(KILN_F32, 6, shape, 0, NULL), *o = NULL;
  int64_t dup[6] = {0, 1, 2, 3, 4, 4}, oob[6] = {0, 1, 2, 3, 4, 6};
  KEXPECT(kiln_permute(ctx(), x, dup, 6, &o), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_permute(ctx(), x, oob, 6, &o), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_permute(ctx(), x, dup, 5, &o), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_permute(ctx(), x, NULL, 6, &o), KILN_ERR_INVALID_ARGUMENT);
  kiln_tensor *wrong = NULL;
  KOK(kiln_tensor_zeros(ctx(), KILN_F32, 6, shape, &wrong));
  int64_t rev[6] = {5, 4, 3, 2, 1, 0};
  KEXPECT(kiln_permute(ctx(), x, rev, 6, &wrong), KILN_ERR_SHAPE);
  KOK(kiln_tensor_release(wrong));
  KOK(kiln_tensor_zeros(ctx(), KILN_I32, 6, shape, &wrong));
  KEXPECT(kiln_permute(ctx(), x, perms[0], 6, &wrong), KILN_ERR_DTYPE);
  KOK(kiln_tensor_release(wrong));
  KOK(kiln_tensor_release(x));
}
END_TEST

/* ------------------------------------------------------------------ */
/* flip, roll                                                           */
/* ------------------------------------------------------------------ */

START_TEST(flip_axes)
{
  int64_t shape[3] = {3, 4, 5};
  static const int64_t axsets[][3] = {{0, 2, 0}, {-1, 0, 0}, {1, 0, 0}};
  static const size_t nax[] = {2, 1, 1};
  DT_LOOP(dt)
  {
    void *host;
    kiln_tensor *x = hd_make(dt, 3, shape, 7, &host);
    for (size_t a = 0; a <= 3; a++) {
      int fl[3] = {0, 0, 0};
      kiln_tensor *out = NULL;
      if (a == 3) {
        fl[0] = fl[1] = fl[2] = 1;
        KOK(kiln_flip(ctx(), x, NULL, 0, &out));
      } else {
        for (size_t i = 0; i < nax[a]; i++)
          fl[(axsets[a][i] + 3) % 3] = 1;
        KOK(kiln_flip(ctx(), x, axsets[a], nax[a], &out));
      }
      int64_t *src = alloc_src(60), c[3];
      for (uint64_t i = 0; i < 60; i++) {
        hd_unravel(i, 3, shape, c);
        for (int d = 0; d < 3; d++)
          if (fl[d])
            c[d] = shape[d] - 1 - c[d];
        src[i] = (int64_t)hd_ravel(3, shape, c);
      }
      check_out(out, dt, 3, shape, host, src, NULL, "flip");
      free(src);
    }
    free(host);
    KOK(kiln_tensor_release(x));
  }
  kiln_tensor *x = hd_make(KILN_F32, 3, shape, 0, NULL), *o = NULL;
  int64_t dup[2] = {1, -2};
  KEXPECT(kiln_flip(ctx(), x, dup, 2, &o), KILN_ERR_INVALID_ARGUMENT);
  int64_t oob[1] = {3};
  KEXPECT(kiln_flip(ctx(), x, oob, 1, &o), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_flip(ctx(), x, NULL, 2, &o), KILN_ERR_INVALID_ARGUMENT);
  /* In place. */
  void *before = hd_download(x);
  o = x;
  KOK(kiln_flip(ctx(), x, NULL, 0, &o));
  float *after = hd_download(x);
  for (int i = 0; i < 60; i++)
    ck_assert(after[i] == ((float *)before)[59 - i]);
  free(before);
  free(after);
  KOK(kiln_tensor_release(x));
}
END_TEST

static int64_t
fmod_pos(int64_t a, int64_t m)
{
  int64_t r = a % m;
  return r < 0 ? r + m : r;
}

START_TEST(roll_axes_and_flat)
{
  int64_t shape[2] = {5, 7};
  DT_LOOP(dt)
  {
    void *host;
    kiln_tensor *x = hd_make(dt, 2, shape, 11, &host);
    int64_t sh[3] = {2, -3, 100}, ax[3] = {0, 1, -1};
    kiln_tensor *out = NULL;
    KOK(kiln_roll(ctx(), x, sh, ax, 3, &out));
    int64_t *src = alloc_src(35), c[2];
    int64_t tot[2] = {2, -3 + 100};
    for (uint64_t i = 0; i < 35; i++) {
      hd_unravel(i, 2, shape, c);
      for (int d = 0; d < 2; d++)
        c[d] = fmod_pos(c[d] - tot[d], shape[d]);
      src[i] = (int64_t)hd_ravel(2, shape, c);
    }
    check_out(out, dt, 2, shape, host, src, NULL, "roll axes");
    int64_t fs = -38;
    out = NULL;
    KOK(kiln_roll(ctx(), x, &fs, NULL, 1, &out));
    for (uint64_t i = 0; i < 35; i++)
      src[i] = fmod_pos((int64_t)i - fs, 35);
    check_out(out, dt, 2, shape, host, src, NULL, "roll flat");
    free(src);
    free(host);
    KOK(kiln_tensor_release(x));
  }
  int64_t s0[2] = {0, 3};
  kiln_tensor *e = NULL, *o = NULL;
  KOK(kiln_tensor_create(ctx(), KILN_F32, 2, s0, &e));
  int64_t sh = 5, ax = 0;
  KOK(kiln_roll(ctx(), e, &sh, &ax, 1, &o));
  hd_expect_shape(o, KILN_F32, 2, s0);
  KOK(kiln_tensor_release(o));
  o = NULL;
  KEXPECT(kiln_roll(ctx(), e, &sh, NULL, 2, &o), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_roll(ctx(), e, NULL, &ax, 1, &o), KILN_ERR_INVALID_ARGUMENT);
  ax = 2;
  KEXPECT(kiln_roll(ctx(), e, &sh, &ax, 1, &o), KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_tensor_release(e));
}
END_TEST

/* ------------------------------------------------------------------ */
/* concat, stack, split                                                 */
/* ------------------------------------------------------------------ */

START_TEST(concat_stack_split)
{
  DT_LOOP(dt)
  {
    /* concat along axis 1 of [2,3], [2,0], [2,5] and along axis 0. */
    int64_t sa[2] = {2, 3}, sb[2] = {2, 0}, sc[2] = {2, 5};
    void *ha, *hb, *hc;
    kiln_tensor *a = hd_make(dt, 2, sa, 1, &ha), *b = hd_make(dt, 2, sb, 2, &hb),
                *c = hd_make(dt, 2, sc, 3, &hc);
    const kiln_tensor *ins[3] = {a, b, c};
    kiln_tensor *out = NULL;
    KOK(kiln_concat(ctx(), ins, 3, -1, &out));
    int64_t os[2] = {2, 8};
    void *got = hd_download(out);
    hd_expect_shape(out, dt, 2, os);
    size_t esz = kiln_dtype_size(dt);
    for (int r = 0; r < 2; r++)
      for (int k = 0; k < 8; k++) {
        const void *want =
            k < 3 ? (char *)ha + (r * 3 + k) * esz : (char *)hc + (r * 5 + k - 3) * esz;
        ck_assert_msg(memcmp((char *)got + (r * 8 + k) * esz, want, esz) == 0, "concat %s [%d,%d]",
                      kiln_dtype_name(dt), r, k);
      }
    free(got);

    /* split it back into [2,3], [2,0], [2,5] and compare. */
    kiln_tensor *pieces[3] = {NULL, NULL, NULL};
    int64_t sizes[3] = {3, 0, 5};
    KOK(kiln_split(ctx(), out, 1, sizes, 3, pieces));
    void *hs[3] = {ha, hb, hc};
    for (int i = 0; i < 3; i++) {
      int64_t ps[2] = {2, sizes[i]};
      hd_expect_shape(pieces[i], dt, 2, ps);
      void *g = hd_download(pieces[i]);
      hd_expect_equal(dt, g, hs[i], (uint64_t)(2 * sizes[i]), "split piece");
      free(g);
      KOK(kiln_tensor_release(pieces[i]));
    }
    KOK(kiln_tensor_release(out));

    /* axis 0: [2,3] + [2,3] -> [4,3] */
    const kiln_tensor *two[2] = {a, a};
    out = NULL;
    KOK(kiln_concat(ctx(), two, 2, 0, &out));
    int64_t o0[2] = {4, 3};
    int64_t *src = alloc_src(12);
    for (int i = 0; i < 12; i++)
      src[i] = i % 6;
    check_out(out, dt, 2, o0, ha, src, NULL, "concat axis 0");
    free(src);

    /* stack [2,3] x3 along 0, 1 and -1. */
    for (int64_t axis = 0; axis <= 2; axis++) {
      const kiln_tensor *st[3] = {a, NULL, NULL};
      kiln_tensor *sx[3] = {a, NULL, NULL};
      void *hx[3] = {ha, NULL, NULL};
      for (int i = 1; i < 3; i++) {
        sx[i] = hd_make(dt, 2, sa, 10 + (uint64_t)i, &hx[i]);
        st[i] = sx[i];
      }
      out = NULL;
      KOK(kiln_stack(ctx(), st, 3, axis == 2 ? -1 : axis, &out));
      int64_t ost[3];
      for (int d = 0, k = 0; d < 3; d++)
        ost[d] = d == axis ? 3 : sa[k++];
      hd_expect_shape(out, dt, 3, ost);
      got = hd_download(out);
      int64_t cc[3];
      for (uint64_t i = 0; i < 18; i++) {
        hd_unravel(i, 3, ost, cc);
        int64_t which = cc[axis], inner[2];
        for (int d = 0, k = 0; d < 3; d++)
          if (d != axis)
            inner[k++] = cc[d];
        const char *w = (const char *)hx[which] + (inner[0] * 3 + inner[1]) * (int64_t)esz;
        ck_assert_msg(memcmp((char *)got + i * esz, w, esz) == 0, "stack axis %lld",
                      (long long)axis);
      }
      free(got);
      KOK(kiln_tensor_release(out));
      for (int i = 1; i < 3; i++) {
        free(hx[i]);
        KOK(kiln_tensor_release(sx[i]));
      }
    }
    free(ha);
    free(hb);
    free(hc);
    KOK(kiln_tensor_release(a));
    KOK(kiln_tensor_release(b));
    KOK(kiln_tensor_release(c));
  }

  /* Errors. */
  int64_t s23[2] = {2, 3}, s24[2] = {2, 4}, s3[1] = {3};
  kiln_tensor *a = hd_make(KILN_F32, 2, s23, 0, NULL), *b = hd_make(KILN_F32, 2, s24, 0, NULL);
  kiln_tensor *ci = hd_make(KILN_I32, 2, s23, 0, NULL), *v = hd_make(KILN_F32, 1, s3, 0, NULL);
  kiln_tensor *o = NULL;
  const kiln_tensor *ab[2] = {a, b}, *aci[2] = {a, ci}, *av[2] = {a, v};
  KEXPECT(kiln_concat(ctx(), ab, 2, 0, &o), KILN_ERR_SHAPE);
  KOK(kiln_concat(ctx(), ab, 2, 1, &o));
  KOK(kiln_tensor_release(o));
  o = NULL;
  KEXPECT(kiln_concat(ctx(), aci, 2, 1, &o), KILN_ERR_DTYPE);
  KEXPECT(kiln_concat(ctx(), av, 2, 0, &o), KILN_ERR_SHAPE);
  KEXPECT(kiln_concat(ctx(), ab, 0, 0, &o), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_concat(ctx(), NULL, 2, 0, &o), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_concat(ctx(), ab, 2, 2, &o), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_stack(ctx(), ab, 2, 0, &o), KILN_ERR_SHAPE);
  KEXPECT(kiln_stack(ctx(), aci, 2, 0, &o), KILN_ERR_DTYPE);
  KEXPECT(kiln_stack(ctx(), ab, 2, 4, &o), KILN_ERR_INVALID_ARGUMENT);
  kiln_tensor *outs[2] = {NULL, NULL};
  int64_t bad[2] = {1, 3}, negs[2] = {-1, 4};
  KEXPECT(kiln_split(ctx(), a, 1, bad, 2, outs), KILN_ERR_SHAPE);
  KEXPECT(kiln_split(ctx(), a, 1, negs, 2, outs), KILN_ERR_SHAPE);
  KEXPECT(kiln_split(ctx(), a, 1, NULL, 2, outs), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(outs[0]);
  /* A failing piece (wrong given output) unwinds the pieces kiln made. */
  int64_t ok2[2] = {1, 2};
  kiln_tensor *wrongp = NULL;
  KOK(kiln_tensor_zeros(ctx(), KILN_F32, 2, s23, &wrongp));
  outs[1] = wrongp;
  KEXPECT(kiln_split(ctx(), a, 1, ok2, 2, outs), KILN_ERR_SHAPE);
  ck_assert_ptr_null(outs[0]);
  ck_assert_ptr_eq(outs[1], wrongp);
  KOK(kiln_tensor_release(wrongp));
  /* Concat where the output is one of the inputs' buffers fails on shape, not silently. */
  const kiln_tensor *aa[2] = {a, a};
  o = a;
  KEXPECT(kiln_concat(ctx(), aa, 2, 0, &o), KILN_ERR_SHAPE);
  KOK(kiln_tensor_release(a));
  KOK(kiln_tensor_release(b));
  KOK(kiln_tensor_release(ci));
  KOK(kiln_tensor_release(v));
  KEXPECT(kiln_concat(ctx(), ab, 2, 1, &o), KILN_ERR_INVALID_HANDLE);
}
END_TEST

/* ------------------------------------------------------------------ */
/* slices                                                               */
/* ------------------------------------------------------------------ */

/* Python's range of a slice, written out plainly: the index list of rg over n. */
static int64_t
py_indices(kiln_range rg, int64_t n, int64_t *idx)
{
  int64_t start, stop, step = rg.step;
  if (step > 0) {
    start = rg.start == KILN_SLICE_OMIT ? 0 : rg.start < 0 ? rg.start + n : rg.start;
    stop = rg.stop == KILN_SLICE_OMIT ? n : rg.stop < 0 ? rg.stop + n : rg.stop;
    start = start < 0 ? 0 : start > n ? n : start;
    stop = stop < 0 ? 0 : stop > n ? n : stop;
  } else {
    start = rg.start == KILN_SLICE_OMIT ? n - 1 : rg.start < 0 ? rg.start + n : rg.start;
    stop = rg.stop == KILN_SLICE_OMIT ? -1 : rg.stop < 0 ? rg.stop + n : rg.stop;
    if (rg.start != KILN_SLICE_OMIT)
      start = start < -1 ? -1 : start > n - 1 ? n - 1 : start;
    if (rg.stop != KILN_SLICE_OMIT)
      stop = stop < -1 ? -1 : stop > n - 1 ? n - 1 : stop;
  }
  int64_t k = 0;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
    idx[k++] = i;
  return k;
}

#define OM KILN_SLICE_OMIT
static const kiln_range slice_cases[][2] = {
    {{1, 8, 3}, {OM, OM, 1}},        {{OM, OM, -1}, {OM, OM, -2}},      {{-3, OM, 1}, {2, -1, 1}},
    {{5, 2, -2}, {6, 0, -1}},        {{100, -100, -7}, {-100, 100, 3}}, {{3, 3, 1}, {OM, OM, 1}},
    {{OM, OM, 100}, {OM, OM, -100}}, {{-1, -11, -1}, {0, 1, 1}},        {{9, OM, -4}, {OM, 4, 1}}};

START_TEST(slice_read)
{
  int64_t shape[3] = {10, 7, 2};
  DT_LOOP(dt)
  {
    void *host;
    kiln_tensor *x = hd_make(dt, 3, shape, 5, &host);
    for (size_t c = 0; c < sizeof slice_cases / sizeof slice_cases[0]; c++) {
      int64_t i0[16], i1[16];
      int64_t n0 = py_indices(slice_cases[c][0], 10, i0);
      int64_t n1 = py_indices(slice_cases[c][1], 7, i1);
      int64_t os[3] = {n0, n1, 2};
      int64_t *src = alloc_src((uint64_t)(n0 * n1 * 2));
      for (int64_t a = 0; a < n0; a++)
        for (int64_t b = 0; b < n1; b++)
          for (int64_t k = 0; k < 2; k++)
            src[(a * n1 + b) * 2 + k] = (i0[a] * 7 + i1[b]) * 2 + k;
      kiln_tensor *out = NULL;
      KOK(kiln_slice(ctx(), x, slice_cases[c], 2, &out));
      char what[64];
      snprintf(what, sizeof what, "slice case %zu", c);
      check_out(out, dt, 3, os, host, src, NULL, what);
      free(src);
    }
    free(host);
    KOK(kiln_tensor_release(x));
  }
  kiln_tensor *x = hd_make(KILN_F32, 3, shape, 0, NULL), *o = NULL;
  kiln_range zero[1] = {{0, 5, 0}};
  KEXPECT(kiln_slice(ctx(), x, zero, 1, &o), KILN_ERR_INVALID_ARGUMENT);
  kiln_range all[4] = {kiln_range_all(), kiln_range_all(), kiln_range_all(), kiln_range_all()};
  KEXPECT(kiln_slice(ctx(), x, all, 4, &o), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_slice(ctx(), x, NULL, 1, &o), KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_slice(ctx(), x, NULL, 0, &o)); /* whole tensor: a copy */
  hd_expect_shape(o, KILN_F32, 3, shape);
  KOK(kiln_tensor_release(o));
  KOK(kiln_tensor_release(x));
}
END_TEST

START_TEST(slice_assign_round_trip)
{
  int64_t shape[2] = {6, 8};
  DT_LOOP(dt)
  {
    for (size_t c = 0; c < sizeof slice_cases / sizeof slice_cases[0]; c++) {
      void *hx;
      kiln_tensor *x = hd_make(dt, 2, shape, 21, &hx);
      int64_t i0[16], i1[16];
      int64_t n0 = py_indices(slice_cases[c][0], 6, i0);
      int64_t n1 = py_indices(slice_cases[c][1], 8, i1);
      int64_t vs[2] = {n0, n1};
      void *hv;
      kiln_tensor *v = hd_make(dt, 2, vs, 1000 + c, &hv);
      KOK(kiln_slice_assign(ctx(), x, slice_cases[c], 2, v));
      /* Reading the slice back gives the values... */
      kiln_tensor *back = NULL;
      KOK(kiln_slice(ctx(), x, slice_cases[c], 2, &back));
      void *gb = hd_download(back);
      hd_expect_equal(dt, gb, hv, (uint64_t)(n0 * n1), "slice assign round trip");
      free(gb);
      KOK(kiln_tensor_release(back));
      /* ...and every other element is untouched. */
      size_t esz = kiln_dtype_size(dt);
      void *want = malloc(48 * esz);
      memcpy(want, hx, 48 * esz);
      for (int64_t a = 0; a < n0; a++)
        for (int64_t b = 0; b < n1; b++)
          memcpy((char *)want + (i0[a] * 8 + i1[b]) * (int64_t)esz,
                 (char *)hv + (a * n1 + b) * (int64_t)esz, esz);
      void *gx = hd_download(x);
      hd_expect_equal(dt, gx, want, 48, "slice assign target");
      free(gx);
      free(want);
      free(hv);
      free(hx);
      KOK(kiln_tensor_release(v));
      KOK(kiln_tensor_release(x));
    }
  }
  /* Broadcast values, and values that share x's buffer (a reversed row of x). */
  void *hx;
  kiln_tensor *x = hd_make(KILN_I32, 2, shape, 3, &hx);
  int32_t seven = 7;
  int64_t one[1] = {1};
  kiln_tensor *sv = hd_upload(KILN_I32, 1, one, &seven);
  kiln_range col[2] = {kiln_range_all(), {2, 3, 1}};
  KOK(kiln_slice_assign(ctx(), x, col, 2, sv));
  int32_t *g = hd_download(x);
  for (int r = 0; r < 6; r++)
    for (int k = 0; k < 8; k++)
      ck_assert_int_eq(g[r * 8 + k], k == 2 ? 7 : ((int32_t *)hx)[r * 8 + k]);
  free(g);
  kiln_tensor *xv = NULL;
  int64_t flat[1] = {48};
  KOK(kiln_reshape(ctx(), x, 1, flat, &xv)); /* same buffer as x */
  int32_t *before = hd_download(x);
  kiln_range rows[1] = {{OM, OM, -1}};
  kiln_tensor *xflat = NULL;
  KOK(kiln_reshape(ctx(), x, 1, flat, &xflat));
  KOK(kiln_slice_assign(ctx(), xflat, rows, 1, xv)); /* x[::-1] = x, overlapping */
  g = hd_download(x);
  for (int i = 0; i < 48; i++)
    ck_assert_int_eq(g[i], before[47 - i]);
  free(g);
  free(before);
  /* Errors. */
  kiln_tensor *wrong = NULL;
  int64_t s3[1] = {3};
  KOK(kiln_tensor_zeros(ctx(), KILN_I32, 1, s3, &wrong));
  KEXPECT(kiln_slice_assign(ctx(), x, col, 2, wrong), KILN_ERR_SHAPE);
  KOK(kiln_tensor_release(wrong));
  wrong = NULL;
  KOK(kiln_tensor_zeros(ctx(), KILN_F32, 1, one, &wrong));
  KEXPECT(kiln_slice_assign(ctx(), x, col, 2, wrong), KILN_ERR_DTYPE);
  KEXPECT(kiln_slice_assign(ctx(), x, col, 2, NULL), KILN_ERR_INVALID_HANDLE);
  kiln_range z[1] = {{0, 1, 0}};
  KEXPECT(kiln_slice_assign(ctx(), x, z, 1, sv), KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_tensor_release(wrong));
  KOK(kiln_tensor_release(xflat));
  KOK(kiln_tensor_release(xv));
  KOK(kiln_tensor_release(sv));
  KOK(kiln_tensor_release(x));
  free(hx);
}
END_TEST

/* ------------------------------------------------------------------ */
/* tile, repeat, pad, broadcast_to                                      */
/* ------------------------------------------------------------------ */

START_TEST(tile_repeat_broadcast)
{
  int64_t shape[2] = {2, 3};
  DT_LOOP(dt)
  {
    void *host;
    kiln_tensor *x = hd_make(dt, 2, shape, 8, &host);
    /* tile: reps (2,3), (2,1,2) (longer than ndim), (3) (shorter), (0,1). */
    static const int64_t reps[][3] = {{2, 3, 0}, {2, 1, 2}, {3, 0, 0}, {0, 1, 0}};
    static const size_t nreps[] = {2, 3, 1, 2};
    for (size_t r = 0; r < 4; r++) {
      size_t nd = nreps[r] > 2 ? nreps[r] : 2;
      int64_t in[3], rp[3], os[3];
      for (size_t i = 0; i < nd; i++) {
        in[i] = i + 2 >= nd ? shape[i + 2 - nd] : 1;
        rp[i] = i + nreps[r] >= nd ? reps[r][i + nreps[r] - nd] : 1;
        os[i] = in[i] * rp[i];
      }
      uint64_t n = hd_numel(nd, os);
      int64_t *src = alloc_src(n), c[3];
      for (uint64_t i = 0; i < n; i++) {
        hd_unravel(i, nd, os, c);
        for (size_t d = 0; d < nd; d++)
          c[d] %= in[d];
        src[i] = (int64_t)hd_ravel(nd, in, c);
      }
      kiln_tensor *out = NULL;
      KOK(kiln_tile(ctx(), x, reps[r], nreps[r], &out));
      check_out(out, dt, nd, os, host, src, NULL, "tile");
      free(src);
    }
    /* repeat 3 along axis 1 and 2 along axis 0, and 0 times. */
    for (int ax = 0; ax < 2; ax++) {
      int64_t rep = ax ? 3 : 2;
      int64_t os[2] = {shape[0], shape[1]};
      os[ax] *= rep;
      int64_t *src = alloc_src(hd_numel(2, os)), c[2];
      for (uint64_t i = 0; i < hd_numel(2, os); i++) {
        hd_unravel(i, 2, os, c);
        c[ax] /= rep;
        src[i] = (int64_t)hd_ravel(2, shape, c);
      }
      kiln_tensor *out = NULL;
      KOK(kiln_repeat(ctx(), x, rep, ax - 2, &out));
      check_out(out, dt, 2, os, host, src, NULL, "repeat");
      free(src);
    }
    kiln_tensor *out = NULL;
    KOK(kiln_repeat(ctx(), x, 0, 1, &out));
    int64_t z[2] = {2, 0};
    hd_expect_shape(out, dt, 2, z);
    KOK(kiln_tensor_release(out));
    /* broadcast_to [2,3] -> [4,2,3] and a [2,1] column -> [2,5]. */
    int64_t bs[3] = {4, 2, 3};
    int64_t *src = alloc_src(24);
    for (int i = 0; i < 24; i++)
      src[i] = i % 6;
    out = NULL;
    KOK(kiln_broadcast_to(ctx(), x, 3, bs, &out));
    check_out(out, dt, 3, bs, host, src, NULL, "broadcast_to");
    free(src);
    free(host);
    KOK(kiln_tensor_release(x));
    int64_t cs[2] = {2, 1}, ct[2] = {2, 5};
    x = hd_make(dt, 2, cs, 9, &host);
    src = alloc_src(10);
    for (int i = 0; i < 10; i++)
      src[i] = i / 5;
    out = NULL;
    KOK(kiln_broadcast_to(ctx(), x, 2, ct, &out));
    check_out(out, dt, 2, ct, host, src, NULL, "broadcast_to column");
    free(src);
    free(host);
    KOK(kiln_tensor_release(x));
  }
  kiln_tensor *x = hd_make(KILN_F32, 2, shape, 0, NULL), *o = NULL;
  int64_t bad[2] = {2, 4}, small[1] = {3}, negr[1] = {-1};
  KEXPECT(kiln_broadcast_to(ctx(), x, 2, bad, &o), KILN_ERR_SHAPE);
  KEXPECT(kiln_broadcast_to(ctx(), x, 1, small, &o), KILN_ERR_SHAPE);
  KEXPECT(kiln_tile(ctx(), x, negr, 1, &o), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tile(ctx(), x, NULL, 1, &o), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_repeat(ctx(), x, -1, 0, &o), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_repeat(ctx(), x, 2, 2, &o), KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_tensor_release(x));
}
END_TEST

/* Reference pad index: reflect and symmetric extend periodically (NumPy). */
static int64_t
pad_index(kiln_pad_mode mode, int64_t c, int64_t before, int64_t n)
{
  int64_t x = c - before;
  switch (mode) {
  case KILN_PAD_CONSTANT:
    return x < 0 || x >= n ? -1 : x;
  case KILN_PAD_EDGE:
    return x < 0 ? 0 : x >= n ? n - 1 : x;
  case KILN_PAD_REFLECT:
    if (n == 1)
      return 0;
    while (x < 0 || x >= n)
      x = x < 0 ? -x : 2 * (n - 1) - x;
    return x;
  case KILN_PAD_SYMMETRIC:
    while (x < 0 || x >= n)
      x = x < 0 ? -x - 1 : 2 * n - 1 - x;
    return x;
  }
  return -1;
}

START_TEST(pad_modes)
{
  int64_t shape[2] = {3, 4};
  int64_t before[2] = {2, 9}, after[2] = {5, 1};
  DT_LOOP(dt)
  {
    void *host;
    kiln_tensor *x = hd_make(dt, 2, shape, 12, &host);
    for (int m = KILN_PAD_CONSTANT; m <= KILN_PAD_SYMMETRIC; m++) {
      int64_t os[2] = {shape[0] + before[0] + after[0], shape[1] + before[1] + after[1]};
      uint64_t n = hd_numel(2, os);
      int64_t *src = alloc_src(n), c[2];
      for (uint64_t i = 0; i < n; i++) {
        hd_unravel(i, 2, os, c);
        int64_t r = pad_index((kiln_pad_mode)m, c[0], before[0], shape[0]);
        int64_t k = pad_index((kiln_pad_mode)m, c[1], before[1], shape[1]);
        src[i] = r < 0 || k < 0 ? -1 : r * shape[1] + k;
      }
      unsigned char fill[16];
      hd_seti(dt, fill, 0, 7);
      kiln_tensor *out = NULL;
      KOK(kiln_pad(ctx(), x, before, after, (kiln_pad_mode)m, kiln_scalar_i64(7), &out));
      check_out(out, dt, 2, os, host, src, fill, "pad");
      free(src);
    }
    free(host);
    KOK(kiln_tensor_release(x));
  }
  /* One-element axis reflects to itself; an empty axis pads only with a constant. */
  int64_t s1[1] = {1}, b1[1] = {3}, a1[1] = {2};
  float one = 2.5f;
  kiln_tensor *x = hd_upload(KILN_F32, 1, s1, &one), *o = NULL;
  KOK(kiln_pad(ctx(), x, b1, a1, KILN_PAD_REFLECT, kiln_scalar_f64(0), &o));
  float got[6];
  KOK(kiln_tensor_download(o, got, sizeof got));
  for (int i = 0; i < 6; i++)
    ck_assert(got[i] == 2.5f);
  KOK(kiln_tensor_release(o));
  KOK(kiln_tensor_release(x));
  int64_t s0[1] = {0};
  KOK(kiln_tensor_create(ctx(), KILN_F32, 1, s0, &x));
  o = NULL;
  KOK(kiln_pad(ctx(), x, b1, a1, KILN_PAD_CONSTANT, kiln_scalar_f64(-1.5), &o));
  KOK(kiln_tensor_download(o, got, 5 * sizeof(float)));
  for (int i = 0; i < 5; i++)
    ck_assert(got[i] == -1.5f);
  KOK(kiln_tensor_release(o));
  o = NULL;
  KEXPECT(kiln_pad(ctx(), x, b1, a1, KILN_PAD_EDGE, kiln_scalar_f64(0), &o), KILN_ERR_SHAPE);
  int64_t neg[1] = {-1};
  KEXPECT(kiln_pad(ctx(), x, neg, a1, KILN_PAD_CONSTANT, kiln_scalar_f64(0), &o),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_pad(ctx(), x, b1, a1, (kiln_pad_mode)9, kiln_scalar_f64(0), &o),
          KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_pad(ctx(), x, NULL, a1, KILN_PAD_CONSTANT, kiln_scalar_f64(0), &o),
          KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_tensor_release(x));
}
END_TEST

/* ------------------------------------------------------------------ */
/* tril/triu, diag, kron                                                */
/* ------------------------------------------------------------------ */

START_TEST(tril_triu)
{
  int64_t shape[3] = {2, 4, 5};
  static const int64_t ks[] = {-2, 0, 1, 10, -10};
  DT_LOOP(dt)
  {
    void *host;
    kiln_tensor *x = hd_make(dt, 3, shape, 13, &host);
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
      for (int upper = 0; upper < 2; upper++) {
        int64_t *src = alloc_src(40), c[3];
        for (uint64_t i = 0; i < 40; i++) {
          hd_unravel(i, 3, shape, c);
          int64_t d = c[2] - c[1];
          int keep = upper ? d >= ks[ki] : d <= ks[ki];
          src[i] = keep ? (int64_t)i : -1;
        }
        unsigned char zero[16] = {0};
        kiln_tensor *out = NULL;
        if (upper)
          KOK(kiln_triu(ctx(), x, ks[ki], &out));
        else
          KOK(kiln_tril(ctx(), x, ks[ki], &out));
        check_out(out, dt, 3, shape, host, src, zero, upper ? "triu" : "tril");
        free(src);
      }
    }
    free(host);
    KOK(kiln_tensor_release(x));
  }
  int64_t s1[1] = {4};
  kiln_tensor *v = hd_make(KILN_F32, 1, s1, 0, NULL), *o = NULL;
  KEXPECT(kiln_tril(ctx(), v, 0, &o), KILN_ERR_SHAPE);
  KEXPECT(kiln_triu(ctx(), v, 0, &o), KILN_ERR_SHAPE);
  KOK(kiln_tensor_release(v));
}
END_TEST

START_TEST(diag_both_ways)
{
  DT_LOOP(dt)
  {
    int64_t s4[1] = {4};
    void *hv;
    kiln_tensor *v = hd_make(dt, 1, s4, 14, &hv);
    static const int64_t kv[] = {0, 2, -1};
    for (size_t ki = 0; ki < 3; ki++) {
      int64_t k = kv[ki], m = 4 + (k < 0 ? -k : k);
      int64_t os[2] = {m, m};
      int64_t *src = alloc_src((uint64_t)(m * m));
      for (int64_t r = 0; r < m; r++)
        for (int64_t c = 0; c < m; c++) {
          int64_t i = k >= 0 ? r : c;
          src[r * m + c] = c - r == k ? i : -1;
        }
      unsigned char zero[16] = {0};
      /* A given output full of junk must be fully overwritten. */
      kiln_tensor *out = NULL;
      KOK(kiln_tensor_full(ctx(), dt, 2, os, kiln_scalar_i64(1), &out));
      kiln_tensor *given = out;
      KOK(kiln_diag(ctx(), v, k, &out));
      ck_assert_ptr_eq(out, given);
      check_out(out, dt, 2, os, hv, src, zero, "diag of a vector");
      free(src);
    }
    free(hv);
    KOK(kiln_tensor_release(v));

    int64_t s35[2] = {3, 5};
    void *hm;
    kiln_tensor *mtx = hd_make(dt, 2, s35, 15, &hm);
    static const int64_t km[] = {0, 1, -2, 4, 5, -3, 100, -100};
    for (size_t ki = 0; ki < sizeof km / sizeof km[0]; ki++) {
      int64_t k = km[ki], src[8], n = 0;
      for (int64_t r = 0; r < 3; r++)
        for (int64_t c = 0; c < 5; c++)
          if (c - r == k)
            src[n++] = r * 5 + c;
      kiln_tensor *out = NULL;
      KOK(kiln_diag(ctx(), mtx, k, &out));
      check_out(out, dt, 1, &n, hm, src, NULL, "diag of a matrix");
    }
    free(hm);
    KOK(kiln_tensor_release(mtx));
  }
  int64_t s3[3] = {2, 2, 2};
  kiln_tensor *t = hd_make(KILN_F32, 3, s3, 0, NULL), *o = NULL;
  KEXPECT(kiln_diag(ctx(), t, 0, &o), KILN_ERR_SHAPE);
  KOK(kiln_tensor_release(t));
}
END_TEST

/* want = a[ia] * b[ib] for the kron reference: halves multiply in f32 (exact) and round once,
 * complex as (ar br - ai bi, ar bi + ai br) with every operation rounded to the part type. */
static void
kron_ref(kiln_dtype dt, const void *ha, uint64_t ia, const void *hb, uint64_t ib, void *want)
{
  if (dt == KILN_C64) {
    kiln_complex64 a = ((const kiln_complex64 *)ha)[ia], b = ((const kiln_complex64 *)hb)[ib];
    float rr = a.re * b.re, ii = a.im * b.im, ri = a.re * b.im, ir = a.im * b.re;
    *(kiln_complex64 *)want = (kiln_complex64){rr - ii, ri + ir};
  } else if (dt == KILN_C128) {
    kiln_complex128 a = ((const kiln_complex128 *)ha)[ia], b = ((const kiln_complex128 *)hb)[ib];
    double rr = a.re * b.re, ii = a.im * b.im, ri = a.re * b.im, ir = a.im * b.re;
    *(kiln_complex128 *)want = (kiln_complex128){rr - ii, ri + ir};
  } else if (dt == KILN_F16 || dt == KILN_BF16) {
    hd_setf(dt, want, 0, (double)((float)hd_getf(dt, ha, ia) * (float)hd_getf(dt, hb, ib)));
  } else if (dt == KILN_F32 || dt == KILN_F64) {
    hd_setf(dt, want, 0, hd_getf(dt, ha, ia) * hd_getf(dt, hb, ib));
  } else {
    hd_seti(dt, want, 0, (int64_t)((uint64_t)hd_geti(dt, ha, ia) * (uint64_t)hd_geti(dt, hb, ib)));
  }
}

START_TEST(kron_products)
{
  DT_LOOP(dt)
  {
    static const int64_t cases[][2][3] = {{{2, 3, 0}, {4, 1, 0}},
                                          {{2, 0, 0}, {3, 2, 0}},
                                          {{1, 2, 3}, {2, 1, 2}},
                                          {{0, 3, 0}, {2, 2, 0}}};
    static const size_t nds[][2] = {{2, 2}, {1, 2}, {3, 3}, {2, 2}};
    for (size_t c = 0; c < 4; c++) {
      size_t na = nds[c][0], nb = nds[c][1], nd = na > nb ? na : nb;
      void *ha, *hb;
      kiln_tensor *a = hd_make_values(dt, na, cases[c][0], 16 + c, &ha);
      kiln_tensor *b = hd_make_values(dt, nb, cases[c][1], 26 + c, &hb);
      int64_t ad[3], bd[3], od[3];
      for (size_t i = 0; i < nd; i++) {
        ad[i] = i + na >= nd ? cases[c][0][i + na - nd] : 1;
        bd[i] = i + nb >= nd ? cases[c][1][i + nb - nd] : 1;
        od[i] = ad[i] * bd[i];
      }
      kiln_tensor *out = NULL;
      KOK(kiln_kron(ctx(), a, b, &out));
      hd_expect_shape(out, dt, nd, od);
      void *got = hd_download(out);
      uint64_t n = hd_numel(nd, od);
      int64_t oc[3], ac[3], bc[3];
      for (uint64_t i = 0; i < n; i++) {
        hd_unravel(i, nd, od, oc);
        for (size_t d = 0; d < nd; d++) {
          ac[d] = oc[d] / bd[d];
          bc[d] = oc[d] % bd[d];
        }
        uint64_t ia = hd_ravel(nd, ad, ac), ib = hd_ravel(nd, bd, bc);
        unsigned char want[16];
        kron_ref(dt, ha, ia, hb, ib, want);
        hd_expect_equal(dt, (char *)got + i * kiln_dtype_size(dt), want, 1, "kron");
      }
      free(got);
      free(ha);
      free(hb);
      KOK(kiln_tensor_release(out));
      KOK(kiln_tensor_release(a));
      KOK(kiln_tensor_release(b));
    }
  }
  int64_t s2[1] = {2};
  kiln_tensor *a = hd_make(KILN_F32, 1, s2, 0, NULL), *b = hd_make(KILN_I32, 1, s2, 0, NULL);
  kiln_tensor *o = NULL;
  KEXPECT(kiln_kron(ctx(), a, b, &o), KILN_ERR_DTYPE);
  KEXPECT(kiln_kron(ctx(), a, NULL, &o), KILN_ERR_INVALID_HANDLE);
  /* In place: kron(a, [1]) into a. */
  float onev = 1.0f;
  int64_t s1[1] = {1};
  kiln_tensor *one = hd_upload(KILN_F32, 1, s1, &onev);
  float before[2];
  KOK(kiln_tensor_download(a, before, sizeof before));
  o = a;
  KOK(kiln_kron(ctx(), a, one, &o));
  float after[2];
  KOK(kiln_tensor_download(a, after, sizeof after));
  ck_assert_mem_eq(before, after, sizeof before);
  KOK(kiln_tensor_release(one));
  KOK(kiln_tensor_release(a));
  KOK(kiln_tensor_release(b));
}
END_TEST

/*
 * f16, bf16, c64 and c128 at the sizes of CODING_STYLE.md (0, 1, a prime, non-multiples of
 * the work-group and of the 32x32 tile, about 2^16): transpose (tiled kernel), flip (affine
 * kernel), roll (generic kernel) and constant pad of random bit patterns, byte for byte.
 * The other tests run every op over these dtypes on small shapes.
 */
START_TEST(new_dtypes_sizes)
{
  static const int64_t shapes[][2] = {{0, 7}, {1, 1}, {13, 97}, {33, 1000}, {257, 263}};
  static const kiln_dtype dts[] = {KILN_F16, KILN_BF16, KILN_C64, KILN_C128};
  /* Under a simulator (small mode) the shapes up to 13 x 97 cover every kernel path. */
  size_t nshapes = harness_small() ? 3 : sizeof shapes / sizeof shapes[0];
  for (size_t di = 0; di < 4; di++) {
    kiln_dtype dt = dts[di];
    if (!hd_dtype_ok(dt))
      continue;
    for (size_t si = 0; si < nshapes; si++) {
      const int64_t *sh = shapes[si];
      uint64_t n = hd_numel(2, sh);
      void *host;
      kiln_tensor *x = hd_make(dt, 2, sh, 40 + si, &host);
      int64_t *src = alloc_src(n), c[2];
      kiln_tensor *out = NULL;
      int64_t ts[2] = {sh[1], sh[0]};
      for (uint64_t i = 0; i < n; i++) {
        hd_unravel(i, 2, ts, c);
        src[i] = c[1] * sh[1] + c[0];
      }
      KOK(kiln_transpose(ctx(), x, &out));
      check_out(out, dt, 2, ts, host, src, NULL, "transpose");
      for (uint64_t i = 0; i < n; i++)
        src[i] = (int64_t)(n - 1 - i);
      int64_t flat = (int64_t)n;
      kiln_tensor *v = NULL;
      KOK(kiln_reshape(ctx(), x, 1, &flat, &v));
      out = NULL;
      KOK(kiln_flip(ctx(), v, NULL, 0, &out));
      check_out(out, dt, 1, &flat, host, src, NULL, "flip");
      int64_t shift = 5, axis = 1;
      for (uint64_t i = 0; i < n; i++) {
        hd_unravel(i, 2, sh, c);
        int64_t k = ((c[1] - shift) % sh[1] + sh[1]) % sh[1];
        src[i] = c[0] * sh[1] + k;
      }
      out = NULL;
      KOK(kiln_roll(ctx(), x, &shift, &axis, 1, &out));
      check_out(out, dt, 2, sh, host, src, NULL, "roll");
      int64_t before = 3, after = 2, padded = flat + 5;
      int64_t *psrc = alloc_src((uint64_t)padded);
      for (int64_t i = 0; i < padded; i++)
        psrc[i] = i < before || i >= before + flat ? -1 : i - before;
      unsigned char fill[16];
      hd_setf(dt, fill, 0, -2.5);
      out = NULL;
      KOK(kiln_pad(ctx(), v, &before, &after, KILN_PAD_CONSTANT, kiln_scalar_f64(-2.5), &out));
      check_out(out, dt, 1, &padded, host, psrc, fill, "pad");
      free(psrc);
      free(src);
      free(host);
      KOK(kiln_tensor_release(v));
      KOK(kiln_tensor_release(x));
    }
  }
}
END_TEST

/* ------------------------------------------------------------------ */
/* handles and contexts                                                 */
/* ------------------------------------------------------------------ */

START_TEST(bad_handles_and_contexts)
{
  int64_t s[2] = {2, 3};
  kiln_tensor *x = hd_make(KILN_F32, 2, s, 0, NULL), *o = NULL;
  kiln_context *other = NULL;
  KOK(kiln_context_create(NULL, &other));
  kiln_tensor *y = NULL;
  KOK(kiln_tensor_zeros(other, KILN_F32, 2, s, &y));
  KEXPECT(kiln_transpose(other, x, &o), KILN_ERR_CONTEXT_MISMATCH);
  int64_t perm[2] = {1, 0};
  KEXPECT(kiln_permute(ctx(), y, perm, 2, &o), KILN_ERR_CONTEXT_MISMATCH);
  const kiln_tensor *xy[2] = {x, y};
  KEXPECT(kiln_concat(ctx(), xy, 2, 0, &o), KILN_ERR_CONTEXT_MISMATCH);
  kiln_tensor *yo = y;
  KEXPECT(kiln_flip(ctx(), x, NULL, 0, &yo), KILN_ERR_CONTEXT_MISMATCH);
  KEXPECT(kiln_transpose(ctx(), x, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tril(NULL, x, 0, &o), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_diag(ctx(), NULL, 0, &o), KILN_ERR_INVALID_HANDLE);
  KOK(kiln_tensor_release(y));
  KOK(kiln_context_release(other));
  KEXPECT(kiln_transpose(other, x, &o), KILN_ERR_INVALID_HANDLE);
  KOK(kiln_tensor_release(x));
  KEXPECT(kiln_kron(ctx(), x, x, &o), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_pad(ctx(), x, NULL, NULL, KILN_PAD_EDGE, kiln_scalar_i64(0), &o),
          KILN_ERR_INVALID_HANDLE);
  ck_assert_ptr_null(o);
}
END_TEST

/* The provider table carries the layout, index, create and random slots. */
START_TEST(provider_slots)
{
  const kiln_provider *p = NULL;
  KOK(kiln_get_provider(KILN_PROVIDER_ABI, &p));
  ck_assert_uint_ge(p->struct_size,
                    offsetof(kiln_provider, random_shuffle) + sizeof p->random_shuffle);
#define SLOT(name) ck_assert_msg(p->name == kiln_##name, "provider slot " #name)
  SLOT(reshape);
  SLOT(transpose);
  SLOT(permute);
  SLOT(flip);
  SLOT(roll);
  SLOT(concat);
  SLOT(stack);
  SLOT(split);
  SLOT(slice);
  SLOT(slice_assign);
  SLOT(tile);
  SLOT(repeat);
  SLOT(pad);
  SLOT(tril);
  SLOT(triu);
  SLOT(diag);
  SLOT(kron);
  SLOT(broadcast_to);
  SLOT(gather);
  SLOT(index_select);
  SLOT(scatter);
  SLOT(masked_fill);
  SLOT(masked_select);
  SLOT(nonzero);
  SLOT(embedding);
  SLOT(sub2ind);
  SLOT(ind2sub);
  SLOT(one_hot);
  SLOT(tensor_ones);
  SLOT(tensor_empty_like);
  SLOT(tensor_zeros_like);
  SLOT(tensor_ones_like);
  SLOT(tensor_full_like);
  SLOT(arange);
  SLOT(linspace);
  SLOT(logspace);
  SLOT(eye);
  SLOT(tri);
  SLOT(meshgrid);
  SLOT(rng_seed);
  SLOT(rng_state_get);
  SLOT(rng_state_set);
  SLOT(random_uniform);
  SLOT(random_normal);
  SLOT(random_integers);
  SLOT(random_bernoulli);
  SLOT(random_bits);
  SLOT(random_permutation);
  SLOT(random_shuffle);
#undef SLOT
  /* A call through the table works like the direct one. */
  int64_t s[2] = {2, 3};
  kiln_tensor *x = hd_make(KILN_I32, 2, s, 1, NULL), *o = NULL;
  KOK(p->transpose(ctx(), x, &o));
  ck_assert_int_eq(kiln_tensor_dim(o, 0), 3);
  KOK(kiln_tensor_release(o));
  KOK(kiln_tensor_release(x));
}
END_TEST

/*
 * Aliasing: outputs one element before or after their input hold the
 * values a separate output would (through a temporary); split pieces over
 * shared bytes are refused with every byte left alone.
 */
START_TEST(overlapping_outputs)
{
  kiln_context *ctx = harness_ctx();
  enum { R = 23, C = 41 };
  const int64_t xs[2] = {R, C}, ts[2] = {C, R}, n = R * C, b_n = 17, cn = n + b_n;
  int32_t *hx = malloc(n * sizeof *hx), hb[17];
  for (int i = 0; i < n; i++)
    hx[i] = i * 3 + 1;
  for (int i = 0; i < b_n; i++)
    hb[i] = -i;
  kiln_tensor *b = hd_upload(KILN_I32, 1, &b_n, hb);
  for (int out_first = 1; out_first >= 0; out_first--) {
    const char *where = out_first ? "before" : "after";
    kiln_tensor *x, *y;
    harness_overlap_pair(KILN_I32, 2, xs, hx, KILN_I32, 2, ts, 4, out_first, &x, &y, NULL);
    KOK(kiln_transpose(ctx, x, &y));
    int32_t *got = harness_download(y);
    for (int i = 0; i < R; i++)
      for (int j = 0; j < C; j++)
        ck_assert_msg(got[j * R + i] == hx[i * C + j], "transpose, output %s x: [%d,%d]", where, j,
                      i);
    free(got);
    kiln_tensor_release(x);
    kiln_tensor_release(y);

    harness_overlap_pair(KILN_I32, 1, &n, hx, KILN_I32, 1, &n, 4, out_first, &x, &y, NULL);
    const int64_t axis0 = 0;
    KOK(kiln_flip(ctx, x, &axis0, 1, &y));
    got = harness_download(y);
    for (int i = 0; i < n; i++)
      ck_assert_msg(got[i] == hx[n - 1 - i], "flip, output %s x: [%d]", where, i);
    free(got);
    kiln_tensor_release(x);
    kiln_tensor_release(y);

    harness_overlap_pair(KILN_I32, 1, &n, hx, KILN_I32, 1, &cn, 4, out_first, &x, &y, NULL);
    const kiln_tensor *ins[2] = {x, b};
    KOK(kiln_concat(ctx, ins, 2, 0, &y));
    got = harness_download(y);
    for (int i = 0; i < cn; i++)
      ck_assert_msg(got[i] == (i < n ? hx[i] : hb[i - n]), "concat, output %s x: [%d]", where, i);
    free(got);
    kiln_tensor_release(x);
    kiln_tensor_release(y);

    harness_overlap_pair(KILN_I32, 2, xs, hx, KILN_I32, 2, xs, 4, out_first, &x, &y, NULL);
    KOK(kiln_tril(ctx, x, 0, &y));
    got = harness_download(y);
    for (int i = 0; i < R; i++)
      for (int j = 0; j < C; j++)
        ck_assert_msg(got[i * C + j] == (j <= i ? hx[i * C + j] : 0), "tril, output %s x: [%d,%d]",
                      where, i, j);
    free(got);
    kiln_tensor_release(x);
    kiln_tensor_release(y);

    harness_overlap_pair(KILN_I32, 1, &n, hx, KILN_I32, 2, xs, 4, out_first, &x, &y, NULL);
    KOK(kiln_reshape(ctx, x, 2, xs, &y));
    got = harness_download(y);
    hd_expect_equal(KILN_I32, got, hx, n,
                    out_first ? "reshape into bytes before x" : "reshape into bytes after x");
    free(got);
    kiln_tensor_release(x);
    kiln_tensor_release(y);

    /* Two pieces of a split over shared bytes. */
    kiln_tensor *whole = hd_upload(KILN_I32, 1, &n, hx), *p[2], *all;
    const int64_t half = n / 2, sizes[2] = {half, n - half};
    harness_overlap_pair(KILN_I32, 1, &half, hx, KILN_I32, 1, &sizes[1], 4, out_first, &p[0], &p[1],
                         &all);
    KEXPECT_REFUSED_UNTOUCHED(all, kiln_split(ctx, whole, 0, sizes, 2, p));
    kiln_tensor_release(p[0]);
    kiln_tensor_release(p[1]);
    kiln_tensor_release(all);
    kiln_tensor_release(whole);
  }
  kiln_tensor_release(b);
  free(hx);
}
END_TEST

/*
 * CPU devices move transposes in blocks of 32 x 1 KiB (permute_blocked), with
 * non-temporal stores for outputs of 16 MiB and more whose destination lines are all
 * aligned (permute_blocked_nt): outputs just over 16 MiB with aligned rows and partial
 * blocks at both edges, batched, with rows that are not a multiple of 8 (the plain kernel),
 * for 4- and 8-byte dtypes. GPUs run the tiled kernel on the same shapes.
 */
START_TEST(blocked_runs_and_nt)
{
  static const struct {
    kiln_dtype dt;
    size_t nd;
    int64_t shape[3];
  } cases[] = {
      {KILN_F32, 2, {2056, 2047, 0}}, /* out rows of 2056: aligned; a and b edges partial */
      {KILN_I32, 3, {2, 1033, 2048}}, /* batched; out rows of 1033: not aligned */
      {KILN_F64, 2, {1456, 1441, 0}}, /* aligned */
      {KILN_C64, 3, {2, 1032, 1021}}, /* batched and aligned */
      {KILN_I64, 2, {1441, 1456, 0}}, /* not aligned */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (!hd_dtype_ok(cases[i].dt))
      continue;
    size_t nd = cases[i].nd;
    int64_t perm[3] = {0, 1, 2};
    perm[nd - 2] = (int64_t)nd - 1;
    perm[nd - 1] = (int64_t)nd - 2;
    check_permute(cases[i].dt, nd, cases[i].shape, perm, nd == 2);
  }
}
END_TEST

/*
 * CPU devices copy permutes whose innermost axis stays innermost as runs (remap_runs): a
 * work-item takes several consecutive runs and steps its coordinates across them, wrapping
 * more than one axis; runs shorter than, equal to and longer than the 8-element vectors,
 * with tails. GPUs run the remap kernels on the same shapes.
 */
START_TEST(remap_runs_shapes)
{
  static const struct {
    kiln_dtype dt;
    size_t nd;
    int64_t shape[5], perm[5];
  } cases[] = {
      {KILN_F32, 4, {4, 6, 10, 12}, {0, 2, 1, 3}}, {KILN_I32, 5, {3, 5, 7, 9, 8}, {1, 3, 0, 2, 4}},
      {KILN_U8, 3, {64, 33, 17}, {1, 0, 2}},       {KILN_C128, 3, {8, 9, 5}, {1, 0, 2}},
      {KILN_F16, 4, {2, 7, 3, 3}, {1, 2, 0, 3}},   {KILN_F64, 4, {16, 256, 8, 64}, {0, 2, 1, 3}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (hd_dtype_ok(cases[i].dt))
      check_permute(cases[i].dt, cases[i].nd, cases[i].shape, cases[i].perm, 0);
}
END_TEST

static Suite *
layout_suite(void)
{
  Suite *s = suite_create("layout");
  TCase *tc = tcase_create("layout");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, reshape_is_a_view);
  tcase_add_test(tc, reshape_pool_accounting);
  tcase_add_test(tc, reshape_zero_size_and_errors);
  tcase_add_test(tc, reshape_of_wrapped_buffer);
  tcase_add_test(tc, transpose_shapes_all_dtypes);
  tcase_add_test(tc, transpose_in_place_aliasing);
  tcase_add_test(tc, permute_6d);
  tcase_add_test(tc, flip_axes);
  tcase_add_test(tc, roll_axes_and_flat);
  tcase_add_test(tc, concat_stack_split);
  tcase_add_test(tc, slice_read);
  tcase_add_test(tc, slice_assign_round_trip);
  tcase_add_test(tc, tile_repeat_broadcast);
  tcase_add_test(tc, pad_modes);
  tcase_add_test(tc, tril_triu);
  tcase_add_test(tc, diag_both_ways);
  tcase_add_test(tc, kron_products);
  tcase_add_test(tc, new_dtypes_sizes);
  tcase_add_test(tc, overlapping_outputs);
  tcase_add_test(tc, bad_handles_and_contexts);
  tcase_add_test(tc, provider_slots);
  suite_add_tcase(s, tc);
  tc = tcase_create("blocked");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, blocked_runs_and_nt);
  tcase_add_test(tc, remap_runs_shapes);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  return harness_main(layout_suite(), 1);
}
