#ifndef _GNU_SOURCE /* meson passes it; kept for builds outside meson */
#define _GNU_SOURCE
#endif
#include "harness.h"

#include <ftw.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static kiln_context *shared_ctx;

kiln_context *
harness_ctx(void)
{
  if (!shared_ctx) {
    kiln_status s = kiln_context_create(NULL, &shared_ctx);
    ck_assert_msg(s == KILN_OK, "context: %s", kiln_last_error());
  }
  return shared_ctx;
}

int
harness_has_fp64(void)
{
  kiln_device_info info;
  kiln_context_device_info(harness_ctx(), &info);
  return info.has_fp64;
}

int
harness_small(void)
{
  static int small = -1;
  if (small < 0) {
    const char *v = getenv("KILN_TEST_SMALL");
    small = v && *v && strcmp(v, "0") != 0;
  }
  return small;
}

int
harness_fits(uint64_t numel)
{
  return !harness_small() || numel <= HARNESS_SMALL_NUMEL;
}

int64_t
harness_size(int64_t normal, int64_t small)
{
  return harness_small() ? small : normal;
}

char *
harness_tempdir(void)
{
  const char *base = getenv("TMPDIR");
  char tmpl[4096];
  snprintf(tmpl, sizeof tmpl, "%s/kiln-test-XXXXXX", base && *base ? base : "/tmp");
  char *d = mkdtemp(tmpl);
  if (!d) {
    perror("mkdtemp");
    abort();
  }
  return strdup(d);
}

static int
rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
  (void)sb;
  (void)flag;
  (void)ftw;
  chmod(path, 0700);
  return remove(path);
}

void
harness_rmtree(const char *path)
{
  if (path)
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int
have_device(void)
{
  size_t n = 0;
  return kiln_device_list(NULL, 0, &n, NULL) == KILN_OK && n > 0;
}

/* Set before the first test runs, read only afterwards (tests may assert from threads). */
static int forking = 1;

void
harness_mark_point(const char *file, int line)
{
  if (forking)
    _mark_point(file, line);
}

static int
run_suite(Suite *suite)
{
  char *cache = harness_tempdir();
  if (!getenv("KILN_TEST_KEEP_CACHE_ENV"))
    setenv("KILN_CACHE_DIR", cache, 1);
  SRunner *sr = srunner_create(suite);
  forking = srunner_fork_status(sr) == CK_FORK;
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  if (shared_ctx)
    kiln_context_release(shared_ctx);
  harness_rmtree(cache);
  free(cache);
  return failed ? 1 : 0;
}

int
harness_main(Suite *suite, int needs_device)
{
  if (needs_device && !have_device()) {
    fprintf(stderr, "no OpenCL device: skipping\n");
    return 77;
  }
  return run_suite(suite);
}

int
harness_main_cold(Suite *suite)
{
  /* Forking is safe here: this process has not started OpenCL (or any thread) yet. */
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    return 1;
  }
  if (pid == 0)
    _exit(have_device() ? 0 : 77);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
    fprintf(stderr, "the device check crashed\n");
    return 1;
  }
  if (WEXITSTATUS(status) == 77) {
    fprintf(stderr, "no OpenCL device: skipping\n");
    return 77;
  }
  return run_suite(suite);
}

void
harness_overlap_pair(kiln_dtype in_dt, size_t in_nd, const int64_t *in_shape, const void *host,
                     kiln_dtype out_dt, size_t out_nd, const int64_t *out_shape, size_t shift,
                     int out_first, kiln_tensor **in, kiln_tensor **out, kiln_tensor **all)
{
  kiln_context *ctx = harness_ctx();
  uint64_t nin = 1, nout = 1;
  for (size_t i = 0; i < in_nd; i++)
    nin *= (uint64_t)in_shape[i];
  for (size_t i = 0; i < out_nd; i++)
    nout *= (uint64_t)out_shape[i];
  size_t in_bytes = nin * kiln_dtype_size(in_dt), out_bytes = nout * kiln_dtype_size(out_dt);
  int64_t total = (int64_t)(shift + (in_bytes > out_bytes ? in_bytes : out_bytes));
  cl_context clc;
  ck_assert_int_eq(kiln_context_cl_objects(ctx, &clc, NULL, NULL), KILN_OK);
  cl_int err;
  cl_mem mem = clCreateBuffer(clc, CL_MEM_READ_WRITE, (size_t)total, NULL, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  kiln_tensor *whole = NULL;
  ck_assert_int_eq(kiln_tensor_wrap(ctx, mem, 0, KILN_U8, 1, &total, &whole), KILN_OK);
  void *zero = calloc(1, (size_t)total);
  ck_assert_int_eq(kiln_tensor_upload(whole, zero, (size_t)total), KILN_OK);
  free(zero);
  ck_assert_int_eq(kiln_tensor_wrap(ctx, mem, out_first ? shift : 0, in_dt, in_nd, in_shape, in),
                   KILN_OK);
  ck_assert_int_eq(
      kiln_tensor_wrap(ctx, mem, out_first ? 0 : shift, out_dt, out_nd, out_shape, out), KILN_OK);
  clReleaseMemObject(mem);
  ck_assert_int_eq(kiln_tensor_upload(*in, host, in_bytes), KILN_OK);
  if (all)
    *all = whole;
  else
    kiln_tensor_release(whole);
}

void *
harness_download(const kiln_tensor *t)
{
  size_t bytes = kiln_tensor_nbytes(t);
  void *p = malloc(bytes ? bytes : 1);
  ck_assert_ptr_nonnull(p);
  ck_assert_msg(kiln_tensor_download(t, p, bytes) == KILN_OK, "download: %s", kiln_last_error());
  return p;
}
