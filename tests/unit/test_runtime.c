/* Runtime suite: contexts, device selection, tensors, the buffer pool, bad input, dlopen provider. */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "harness.h"

static const kiln_dtype all_dtypes[] = {KILN_F32, KILN_F64, KILN_I32, KILN_I64, KILN_U8, KILN_BOOL};

START_TEST(context_default_and_selectors)
{
  kiln_context *ctx = NULL;
  KOK(kiln_context_create(NULL, &ctx));
  kiln_device_info info;
  KOK(kiln_context_device_info(ctx, &info));
  ck_assert_str_ne(info.name, "");
  ck_assert_uint_gt(info.max_work_group_size, 0);
  ck_assert_uint_gt(info.global_mem_bytes, 0);
  ck_assert_uint_gt(info.compute_units, 0);

  /* The same device by index and by a case-flipped substring of its name. */
  char sel[32];
  snprintf(sel, sizeof sel, "%u:%u", info.platform_index, info.device_index);
  kiln_context *c2 = NULL;
  KOK(kiln_context_create(sel, &c2));
  kiln_device_info i2;
  KOK(kiln_context_device_info(c2, &i2));
  ck_assert_str_eq(i2.name, info.name);
  KOK(kiln_context_release(c2));
  char sub[8] = {0};
  for (int i = 0; i < 4 && info.name[i]; i++) {
    char ch = info.name[i];
    sub[i] = (char)(ch >= 'a' && ch <= 'z' ? ch - 32 : ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
  }
  KOK(kiln_context_create(sub, &c2));
  KOK(kiln_context_release(c2));

  /* The environment variable is honoured when no selector is given. */
  setenv("KILN_DEVICE", "no-such-device-xyz", 1);
  KEXPECT(kiln_context_create(NULL, &c2), KILN_ERR_NO_DEVICE);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "no-such-device-xyz"));
  size_t n = 0, def = 0;
  KOK(kiln_device_list(NULL, 0, &n, &def));
  ck_assert_uint_eq(def, SIZE_MAX);
  setenv("KILN_DEVICE", sel, 1);
  KOK(kiln_context_create(NULL, &c2));
  KOK(kiln_context_release(c2));
  unsetenv("KILN_DEVICE");

  KEXPECT(kiln_context_create("99:99", &c2), KILN_ERR_NO_DEVICE);
  KEXPECT(kiln_context_create(NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_context_release(ctx));
  KOK(kiln_context_release(NULL));
}
END_TEST

/*
 * Index selectors are parsed with range checks: an index past UINT32_MAX used to wrap
 * ("0:4294967296" chose device 0:0), a sign or blank slipped through sscanf. Each is
 * refused as malformed, from the argument and from KILN_DEVICE alike; colons among other
 * characters still make a name substring (AMD names such as "gfx90a:sramecc+:xnack-").
 */
START_TEST(index_selectors_checked)
{
  kiln_device_info info;
  size_t n = 0;
  KOK(kiln_device_list(&info, 1, &n, NULL));
  ck_assert_uint_ge(n, 1);
  char wrapped[64];
  snprintf(wrapped, sizeof wrapped, "%u:%llu", info.platform_index,
           (unsigned long long)info.device_index + 4294967296ull);
  const char *const bad[] = {wrapped,  "4294967296:0", "0:18446744073709551616", "-1:0",
                             "0:-0",   "+0:0",         "0:+0",                   " 0:0",
                             "0: 0",   "0:0 ",         ":0",                     "0:",
                             ":",      "0:0:0",        "00000000000000000000004294967296:0"};
  kiln_context *c = NULL;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    KEXPECT(kiln_context_create(bad[i], &c), KILN_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(kiln_last_error(), "malformed device selector") != NULL, "%s: %s", bad[i],
                  kiln_last_error());
    setenv("KILN_DEVICE", bad[i], 1);
    KEXPECT(kiln_context_create(NULL, &c), KILN_ERR_INVALID_ARGUMENT);
    size_t def = 0;
    KOK(kiln_device_list(NULL, 0, &n, &def));
    ck_assert_uint_eq(def, SIZE_MAX);
  }
  unsetenv("KILN_DEVICE");
  /* Leading zeros are still decimal; the largest index is merely absent. */
  char padded[64];
  snprintf(padded, sizeof padded, "00%u:000%u", info.platform_index, info.device_index);
  KOK(kiln_context_create(padded, &c));
  KOK(kiln_context_release(c));
  KEXPECT(kiln_context_create("4294967295:4294967295", &c), KILN_ERR_NO_DEVICE);
  KEXPECT(kiln_context_create("0:0x", &c), KILN_ERR_NO_DEVICE); /* a name substring */
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "no device name contains"));
}
END_TEST

START_TEST(device_list_matches_default)
{
  size_t n = 0, def = SIZE_MAX;
  KOK(kiln_device_list(NULL, 0, &n, &def));
  ck_assert_uint_gt(n, 0);
  ck_assert_uint_lt(def, n);
  kiln_device_info *infos = calloc(n, sizeof *infos);
  KOK(kiln_device_list(infos, n, &n, &def));
  kiln_device_info mine;
  KOK(kiln_context_device_info(harness_ctx(), &mine));
  ck_assert_str_eq(infos[def].name, mine.name);
  ck_assert_uint_eq(infos[def].platform_index, mine.platform_index);
  free(infos);
  KEXPECT(kiln_device_list(NULL, 3, &n, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_device_list(NULL, 0, NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(context_from_cl_objects)
{
  cl_context clc;
  cl_device_id dev;
  cl_command_queue q;
  KOK(kiln_context_cl_objects(harness_ctx(), &clc, &dev, &q));
  kiln_context *ctx = NULL;
  KOK(kiln_context_create_from_cl(clc, dev, q, &ctx));
  float host[5] = {1, 2, 3, 4, 5}, back[5];
  int64_t shape[1] = {5};
  kiln_tensor *t = NULL, *u = NULL;
  KOK(kiln_tensor_from_host(ctx, KILN_F32, 1, shape, host, &t));
  KOK(kiln_unary(ctx, KILN_OP_NEG, t, &u));
  KOK(kiln_tensor_download(u, back, sizeof back));
  for (int i = 0; i < 5; i++)
    ck_assert(back[i] == -host[i]);
  kiln_tensor_release(t);
  kiln_tensor_release(u);
  KOK(kiln_context_release(ctx));
  /* Without a queue kiln makes its own. */
  KOK(kiln_context_create_from_cl(clc, dev, NULL, &ctx));
  KOK(kiln_context_release(ctx));

  cl_int err;
  cl_command_queue ooo = clCreateCommandQueue(clc, dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
  if (ooo) {
    KEXPECT(kiln_context_create_from_cl(clc, dev, ooo, &ctx), KILN_ERR_INVALID_ARGUMENT);
    clReleaseCommandQueue(ooo);
  }
  KEXPECT(kiln_context_create_from_cl(NULL, dev, q, &ctx), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_context_create_from_cl(clc, NULL, q, &ctx), KILN_ERR_INVALID_ARGUMENT);
  /* A queue from another cl_context is refused. */
  cl_context other = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  ck_assert_ptr_nonnull(other);
  KEXPECT(kiln_context_create_from_cl(other, dev, q, &ctx), KILN_ERR_CONTEXT_MISMATCH);
  clReleaseContext(other);
}
END_TEST

START_TEST(tensor_round_trip_all_dtypes)
{
  kiln_context *ctx = harness_ctx();
  for (size_t d = 0; d < sizeof all_dtypes / sizeof all_dtypes[0]; d++) {
    kiln_dtype dt = all_dtypes[d];
    if (dt == KILN_F64 && !harness_has_fp64())
      continue;
    size_t es = kiln_dtype_size(dt);
    const int64_t sizes[] = {1, 7, 1023, 1 << 20};
    for (size_t si = 0; si < 4; si++) {
      int64_t n = sizes[si];
      unsigned char *in = malloc((size_t)n * es), *out = malloc((size_t)n * es);
      for (size_t i = 0; i < (size_t)n * es; i++)
        in[i] = (unsigned char)(i * 131 + 7);
      if (dt == KILN_BOOL)
        for (int64_t i = 0; i < n; i++)
          in[i] &= 1;
      kiln_tensor *t = NULL;
      KOK(kiln_tensor_from_host(ctx, dt, 1, &n, in, &t));
      ck_assert_int_eq(kiln_tensor_dtype(t), dt);
      ck_assert_uint_eq(kiln_tensor_numel(t), (uint64_t)n);
      ck_assert_uint_eq(kiln_tensor_nbytes(t), (uint64_t)n * es);
      KOK(kiln_tensor_download(t, out, (size_t)n * es));
      ck_assert_mem_eq(in, out, (size_t)n * es);
      KEXPECT(kiln_tensor_download(t, out, (size_t)n * es - 1), KILN_ERR_INVALID_ARGUMENT);
      KEXPECT(kiln_tensor_upload(t, NULL, (size_t)n * es), KILN_ERR_INVALID_ARGUMENT);
      KOK(kiln_tensor_release(t));
      free(in);
      free(out);
    }
  }
}
END_TEST

START_TEST(tensor_fill_and_shapes)
{
  kiln_context *ctx = harness_ctx();
  int64_t shape[3] = {2, 3, 5};
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_full(ctx, KILN_I64, 3, shape, kiln_scalar_i64(-(1ll << 60) - 3), &t));
  int64_t h[30];
  KOK(kiln_tensor_download(t, h, sizeof h));
  for (int i = 0; i < 30; i++)
    ck_assert_int_eq(h[i], -(1ll << 60) - 3);
  ck_assert_uint_eq(kiln_tensor_ndim(t), 3);
  ck_assert_int_eq(kiln_tensor_dim(t, 2), 5);
  ck_assert_int_eq(kiln_tensor_dim(t, 3), -1);
  kiln_tensor_release(t);
  t = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 3, shape, &t));
  float f[30];
  KOK(kiln_tensor_download(t, f, sizeof f));
  for (int i = 0; i < 30; i++)
    ck_assert(f[i] == 0.0f);
  kiln_tensor_release(t);
  t = NULL;
  KOK(kiln_tensor_full(ctx, KILN_U8, 3, shape, kiln_scalar_f64(1e9), &t));
  uint8_t u[30];
  KOK(kiln_tensor_download(t, u, sizeof u));
  ck_assert_uint_eq(u[29], 255); /* float to u8 saturates */
  kiln_tensor_release(t);

  /* 0-d, empty and 8-d tensors. */
  t = NULL;
  KOK(kiln_tensor_full(ctx, KILN_F32, 0, NULL, kiln_scalar_f64(2.5), &t));
  ck_assert_uint_eq(kiln_tensor_numel(t), 1);
  KOK(kiln_tensor_download(t, f, 4));
  ck_assert(f[0] == 2.5f);
  kiln_tensor_release(t);
  int64_t empty[2] = {0, 1000000};
  t = NULL;
  KOK(kiln_tensor_create(ctx, KILN_F32, 2, empty, &t));
  ck_assert_uint_eq(kiln_tensor_nbytes(t), 0);
  cl_mem m = (cl_mem)1;
  KOK(kiln_tensor_cl_mem(t, &m, NULL));
  ck_assert_ptr_null(m);
  KOK(kiln_tensor_download(t, NULL, 0));
  KOK(kiln_tensor_upload(t, NULL, 0));
  kiln_tensor_release(t);
  int64_t eight[8] = {2, 1, 2, 1, 2, 1, 2, 3};
  t = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_BOOL, 8, eight, &t));
  ck_assert_uint_eq(kiln_tensor_numel(t), 48);
  kiln_tensor_release(t);
}
END_TEST

START_TEST(tensor_bad_input)
{
  kiln_context *ctx = harness_ctx();
  kiln_tensor *t = NULL;
  int64_t ok[1] = {4};
  int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  int64_t neg[2] = {4, -2};
  int64_t huge[2] = {1ll << 40, 1ll << 40};
  int64_t too_big[1] = {1ll << 50};
  KEXPECT(kiln_tensor_create(NULL, KILN_F32, 1, ok, &t), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_tensor_create(ctx, KILN_F32, 1, ok, NULL), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tensor_create(ctx, (kiln_dtype)42, 1, ok, &t), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tensor_create(ctx, KILN_F32, 9, nine, &t), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tensor_create(ctx, KILN_F32, 1, NULL, &t), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tensor_create(ctx, KILN_F32, 2, neg, &t), KILN_ERR_SHAPE);
  KEXPECT(kiln_tensor_create(ctx, KILN_F32, 2, huge, &t), KILN_ERR_OVERFLOW);
  KEXPECT(kiln_tensor_create(ctx, KILN_F32, 1, too_big, &t), KILN_ERR_OVERFLOW);
  ck_assert_ptr_null(t);
  KEXPECT(kiln_tensor_from_host(ctx, KILN_F32, 1, ok, NULL, &t), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(t);

  /* A released tensor is refused everywhere, and a second release is reported. */
  KOK(kiln_tensor_create(ctx, KILN_F32, 1, ok, &t));
  KOK(kiln_tensor_release(t));
  float h[4];
  kiln_tensor *y = NULL;
  KEXPECT(kiln_tensor_download(t, h, sizeof h), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_unary(ctx, KILN_OP_NEG, t, &y), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_tensor_release(t), KILN_ERR_INVALID_HANDLE);
  ck_assert_int_eq(kiln_tensor_dtype(t), KILN_DTYPE_COUNT);
  ck_assert_uint_eq(kiln_tensor_numel(t), 0);
  ck_assert_ptr_null(kiln_tensor_context(t));
  KOK(kiln_tensor_release(NULL));
  KEXPECT(kiln_tensor_cl_mem(NULL, NULL, NULL), KILN_ERR_INVALID_HANDLE);
}
END_TEST

START_TEST(f64_unsupported_device_is_reported)
{
  setenv("KILN_DEBUG_NO_FP64", "1", 1);
  kiln_context *ctx = NULL;
  KOK(kiln_context_create(NULL, &ctx));
  unsetenv("KILN_DEBUG_NO_FP64");
  kiln_device_info info;
  KOK(kiln_context_device_info(ctx, &info));
  ck_assert(!info.has_fp64);
  kiln_tensor *t = NULL;
  int64_t n[1] = {3};
  KEXPECT(kiln_tensor_create(ctx, KILN_F64, 1, n, &t), KILN_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "fp64"));
  KEXPECT(kiln_tensor_create(ctx, KILN_C128, 1, n, &t), KILN_ERR_UNSUPPORTED);
  kiln_complex128 v = {1, 2};
  KEXPECT(kiln_tensor_full_complex(ctx, KILN_C128, 1, n, v, &t), KILN_ERR_UNSUPPORTED);
  /* Casting to f64 is refused too, and f32 work goes on. */
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 1, n, &t));
  kiln_tensor *d = NULL;
  KEXPECT(kiln_cast(ctx, t, KILN_F64, &d), KILN_ERR_UNSUPPORTED);
  KOK(kiln_cast(ctx, t, KILN_I32, &d));
  kiln_tensor_release(d);
  kiln_tensor_release(t);
  KOK(kiln_context_release(ctx));
}
END_TEST

START_TEST(wrap_existing_buffer)
{
  kiln_context *ctx = harness_ctx();
  cl_context clc;
  cl_command_queue q;
  KOK(kiln_context_cl_objects(ctx, &clc, NULL, &q));
  cl_int err;
  float host[16];
  for (int i = 0; i < 16; i++)
    host[i] = (float)i;
  cl_mem m = clCreateBuffer(clc, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host, host, &err);
  ck_assert_ptr_nonnull(m);
  kiln_tensor *t = NULL, *y = NULL;
  int64_t shape[2] = {2, 4};
  /* Elements 4..11 as a 2x4 tensor. */
  KOK(kiln_tensor_wrap(ctx, m, 4 * sizeof(float), KILN_F32, 2, shape, &t));
  clReleaseMemObject(m); /* the tensor keeps its own reference */
  KOK(kiln_binary_scalar(ctx, KILN_OP_MUL, t, kiln_scalar_f64(10), 0, &y));
  float back[8];
  KOK(kiln_tensor_download(y, back, sizeof back));
  for (int i = 0; i < 8; i++)
    ck_assert(back[i] == 10.0f * (float)(i + 4));
  /* In place into the wrapped buffer, read back through the original cl_mem. */
  KOK(kiln_unary(ctx, KILN_OP_NEG, t, &t));
  cl_mem mm;
  size_t off;
  KOK(kiln_tensor_cl_mem(t, &mm, &off));
  ck_assert_uint_eq(off, 16);
  float all[16];
  ck_assert_int_eq(clEnqueueReadBuffer(q, mm, CL_TRUE, 0, sizeof all, all, 0, NULL, NULL), 0);
  ck_assert(all[3] == 3.0f && all[4] == -4.0f && all[11] == -11.0f && all[12] == 12.0f);
  kiln_tensor_release(y);

  kiln_tensor *bad = NULL;
  KEXPECT(kiln_tensor_wrap(ctx, mm, 2, KILN_F32, 2, shape, &bad), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_tensor_wrap(ctx, mm, 40, KILN_F32, 2, shape, &bad), KILN_ERR_OVERFLOW);
  KEXPECT(kiln_tensor_wrap(ctx, NULL, 0, KILN_F32, 2, shape, &bad), KILN_ERR_INVALID_ARGUMENT);
  kiln_context *other = NULL;
  KOK(kiln_context_create(NULL, &other));
  KEXPECT(kiln_tensor_wrap(other, mm, 0, KILN_F32, 2, shape, &bad), KILN_ERR_CONTEXT_MISMATCH);
  KOK(kiln_context_release(other));
  kiln_tensor_release(t);
}
END_TEST

START_TEST(pool_reuses_buffers_in_steady_state)
{
  kiln_context *ctx = NULL;
  KOK(kiln_context_create(NULL, &ctx));
  int64_t n[1] = {100000};
  kiln_tensor *x = NULL;
  KOK(kiln_tensor_full(ctx, KILN_F32, 1, n, kiln_scalar_f64(1), &x));
  /* Warm-up iteration, then the loop must be served entirely by the pool. */
  for (int it = 0; it < 20; it++) {
    kiln_pool_stats before;
    KOK(kiln_pool_stats_get(ctx, &before));
    kiln_tensor *a = NULL, *b = NULL;
    KOK(kiln_unary(ctx, KILN_OP_EXP, x, &a));
    KOK(kiln_binary(ctx, KILN_OP_ADD, a, x, &b));
    kiln_tensor_release(a);
    kiln_tensor_release(b);
    kiln_pool_stats after;
    KOK(kiln_pool_stats_get(ctx, &after));
    if (it > 0) {
      ck_assert_uint_eq(after.misses, before.misses);
      ck_assert_uint_eq(after.hits, before.hits + 2);
    }
  }
  kiln_pool_stats st;
  KOK(kiln_pool_stats_get(ctx, &st));
  ck_assert_uint_gt(st.bytes_cached, 0);
  ck_assert_uint_ge(st.bytes_in_use, 400000);
  KOK(kiln_pool_trim(ctx, 0));
  KOK(kiln_pool_stats_get(ctx, &st));
  ck_assert_uint_eq(st.bytes_cached, 0);
  ck_assert_uint_eq(st.buffers_cached, 0);

  /* A limit of 0 keeps nothing idle. */
  KOK(kiln_context_set_option(ctx, KILN_OPT_POOL_LIMIT_BYTES, 0));
  int64_t v = -1;
  KOK(kiln_context_get_option(ctx, KILN_OPT_POOL_LIMIT_BYTES, &v));
  ck_assert_int_eq(v, 0);
  kiln_tensor *a = NULL;
  KOK(kiln_unary(ctx, KILN_OP_EXP, x, &a));
  kiln_tensor_release(a);
  KOK(kiln_pool_stats_get(ctx, &st));
  ck_assert_uint_eq(st.bytes_cached, 0);
  KEXPECT(kiln_context_set_option(ctx, KILN_OPT_POOL_LIMIT_BYTES, -1), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_context_set_option(ctx, (kiln_option)999, 1), KILN_ERR_INVALID_ARGUMENT);
  int64_t lo, hi;
  KEXPECT(kiln_option_bounds((kiln_option)999, &lo, &hi), KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_option_bounds(KILN_OPT_POOL_LIMIT_BYTES, &lo, &hi));
  ck_assert_int_eq(lo, 0);
  kiln_tensor_release(x);
  KOK(kiln_context_release(ctx));
}
END_TEST

START_TEST(tensors_outlive_their_context)
{
  kiln_context *ctx = NULL;
  KOK(kiln_context_create(NULL, &ctx));
  int64_t n[1] = {10};
  kiln_tensor *t = NULL;
  KOK(kiln_tensor_zeros(ctx, KILN_F32, 1, n, &t));
  KOK(kiln_context_release(ctx));
  float h[10];
  KEXPECT(kiln_tensor_download(t, h, sizeof h), KILN_ERR_INVALID_HANDLE);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "released context"));
  KOK(kiln_tensor_release(t));
  KEXPECT(kiln_context_release(ctx), KILN_ERR_INVALID_HANDLE);
  kiln_tensor *u = NULL;
  KEXPECT(kiln_tensor_create(ctx, KILN_F32, 1, n, &u), KILN_ERR_INVALID_HANDLE);
  KEXPECT(kiln_context_finish(ctx), KILN_ERR_INVALID_HANDLE);
}
END_TEST

struct worker {
  kiln_context *ctx;
  int seed;
  int ok;
};

static void *
worker_run(void *arg)
{
  struct worker *w = arg;
  int64_t n[1] = {4099};
  float *h = malloc(4099 * sizeof *h), *r = malloc(4099 * sizeof *r);
  w->ok = 1;
  for (int it = 0; it < 25 && w->ok; it++) {
    for (int i = 0; i < 4099; i++)
      h[i] = (float)(w->seed * 1000 + it + i);
    kiln_tensor *x = NULL, *y = NULL;
    if (kiln_tensor_from_host(w->ctx, KILN_F32, 1, n, h, &x) != KILN_OK ||
        kiln_binary_scalar(w->ctx, KILN_OP_SUB, x, kiln_scalar_f64(w->seed), 0, &y) != KILN_OK ||
        kiln_tensor_download(y, r, 4099 * sizeof *r) != KILN_OK)
      w->ok = 0;
    for (int i = 0; i < 4099 && w->ok; i++)
      if (r[i] != h[i] - (float)w->seed)
        w->ok = 0;
    kiln_tensor_release(x);
    kiln_tensor_release(y);
  }
  free(h);
  free(r);
  return NULL;
}

START_TEST(context_is_thread_safe)
{
  kiln_context *ctx = harness_ctx();
  pthread_t th[4];
  struct worker w[4];
  for (int i = 0; i < 4; i++) {
    w[i].ctx = ctx;
    w[i].seed = i + 1;
    pthread_create(&th[i], NULL, worker_run, &w[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    ck_assert_msg(w[i].ok, "worker %d saw a wrong result", i);
  }
}
END_TEST

START_TEST(dlopen_provider)
{
  const char *path = getenv("KILN_TEST_LIBKILN");
  ck_assert_msg(path && *path, "KILN_TEST_LIBKILN is not set");
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(h != NULL, "dlopen: %s", dlerror());
  /* POSIX's way to take a function from dlsym without converting an object pointer. */
  kiln_get_provider_fn get = NULL;
  void *sym = dlsym(h, "kiln_get_provider");
  memcpy(&get, &sym, sizeof get);
  ck_assert(get != NULL);
  const kiln_provider *kp = NULL;
  ck_assert_int_eq(get(KILN_PROVIDER_ABI + 7, &kp), KILN_ERR_ABI);
  ck_assert_ptr_null(kp);
  ck_assert_int_eq(get(KILN_PROVIDER_ABI, &kp), KILN_OK);
  kiln_context *ctx = NULL;
  ck_assert_int_eq(kp->context_create(NULL, &ctx), KILN_OK);
  int64_t n[1] = {3};
  int32_t a[3] = {1, -2, 3}, out[3];
  kiln_tensor *x = NULL, *y = NULL;
  ck_assert_int_eq(kp->tensor_from_host(ctx, KILN_I32, 1, n, a, &x), KILN_OK);
  ck_assert_int_eq(kp->binary(ctx, KILN_OP_MUL, x, x, &y), KILN_OK);
  ck_assert_int_eq(kp->tensor_download(y, out, sizeof out), KILN_OK);
  ck_assert_int_eq(out[1], 4);
  ck_assert_int_eq(kp->binary(ctx, KILN_OP_POW, x, x, &y), KILN_ERR_DTYPE);
  ck_assert_ptr_nonnull(strstr(kp->last_error(), "pow"));
  /* Shape accessors reach a dlopen user through the table too. */
  ck_assert_uint_eq(kp->tensor_ndim(y), 1);
  ck_assert_int_eq(kp->tensor_dim(y, 0), 3);
  ck_assert_int_eq(kp->tensor_dtype(y), KILN_I32);
  kp->tensor_release(x);
  kp->tensor_release(y);
  kp->context_release(ctx);
  /* Every slot is set, to the exported function of its name. */
  ck_assert_uint_eq(kp->struct_size, sizeof(kiln_provider));
#define CHECK_SLOT(slot, function)                                                              \
  ck_assert_msg(kp->slot != NULL && kp->slot == function, "slot " #slot " is not " #function);
  KILN_PROVIDER_SLOTS(CHECK_SLOT)
#undef CHECK_SLOT
  /* Internal symbols stay hidden. */
  ck_assert_ptr_null(dlsym(h, "kiln__fail"));
  ck_assert_ptr_null(dlsym(h, "kiln__pool_alloc"));
  dlclose(h);
}
END_TEST

static Suite *
runtime_suite(void)
{
  Suite *s = suite_create("runtime");
  TCase *tc = tcase_create("runtime");
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, context_default_and_selectors);
  tcase_add_test(tc, index_selectors_checked);
  tcase_add_test(tc, device_list_matches_default);
  tcase_add_test(tc, context_from_cl_objects);
  tcase_add_test(tc, tensor_round_trip_all_dtypes);
  tcase_add_test(tc, tensor_fill_and_shapes);
  tcase_add_test(tc, tensor_bad_input);
  tcase_add_test(tc, f64_unsupported_device_is_reported);
  tcase_add_test(tc, wrap_existing_buffer);
  tcase_add_test(tc, pool_reuses_buffers_in_steady_state);
  tcase_add_test(tc, tensors_outlive_their_context);
  tcase_add_test(tc, context_is_thread_safe);
  tcase_add_test(tc, dlopen_provider);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  return harness_main(runtime_suite(), 1);
}
