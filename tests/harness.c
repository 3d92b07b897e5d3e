#ifndef _GNU_SOURCE /* meson passes it; kept for builds outside meson */
#define _GNU_SOURCE
#endif
#include "harness.h"

#include <ftw.h>
#include <string.h>
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

int
harness_main(Suite *suite, int needs_device)
{
  if (needs_device) {
    size_t n = 0;
    if (kiln_device_list(NULL, 0, &n, NULL) != KILN_OK || n == 0) {
      fprintf(stderr, "no OpenCL device: skipping\n");
      return 77;
    }
  }
  char *cache = harness_tempdir();
  if (!getenv("KILN_TEST_KEEP_CACHE_ENV"))
    setenv("KILN_CACHE_DIR", cache, 1);
  SRunner *sr = srunner_create(suite);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  if (shared_ctx)
    kiln_context_release(shared_ctx);
  harness_rmtree(cache);
  free(cache);
  return failed ? 1 : 0;
}
