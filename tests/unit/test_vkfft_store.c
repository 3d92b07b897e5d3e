/*
 * The VkFFT binary store (lib/providers/vkfft_store.c) without a device:
 * round trip, misses on key mismatch, corruption and truncation, atomic
 * replacement, and the check that rejects application strings VkFFT 1.2.26's
 * C-string copies have cut (what PoCL's binaries suffer). Links internals.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "providers/vkfft_store.h"

static const char payload[] = "12\nhello world9\nsecond!\n\0\0";

START_TEST(round_trip_and_replace)
{
  uint64_t size = 0;
  ck_assert_ptr_null(kiln__vkfft_store_read("key-a", &size));
  ck_assert_int_eq(kiln__vkfft_store_write("key-a", payload, sizeof payload), 0);
  char *got = kiln__vkfft_store_read("key-a", &size);
  ck_assert_ptr_nonnull(got);
  ck_assert_uint_eq(size, sizeof payload);
  ck_assert_int_eq(memcmp(got, payload, sizeof payload), 0);
  free(got);
  /* Another key is another entry. */
  ck_assert_ptr_null(kiln__vkfft_store_read("key-b", &size));
  /* Rewriting replaces the entry whole. */
  ck_assert_int_eq(kiln__vkfft_store_write("key-a", "3\nab", 4), 0);
  got = kiln__vkfft_store_read("key-a", &size);
  ck_assert_ptr_nonnull(got);
  ck_assert_uint_eq(size, 4);
  ck_assert_int_eq(memcmp(got, "3\nab", 4), 0);
  free(got);
  kiln__vkfft_store_remove("key-a");
  ck_assert_ptr_null(kiln__vkfft_store_read("key-a", &size));
  /* No temp files left behind. */
  char path[4200];
  ck_assert_int_eq(kiln__vkfft_store_path("key-a", path, sizeof path, 0), 0);
  char *slash = strrchr(path, '/');
  *slash = 0;
  char cmd[4400];
  snprintf(cmd, sizeof cmd, "ls '%s' | grep -c tmp", path);
  FILE *p = popen(cmd, "r");
  int n = -1;
  ck_assert_int_eq(fscanf(p, "%d", &n), 1);
  pclose(p);
  ck_assert_int_eq(n, 0);
}
END_TEST

/* Rewrites one byte of key's entry file at offset (from the end when negative). */
static void
poke(const char *key, long offset, int value)
{
  char path[4200];
  ck_assert_int_eq(kiln__vkfft_store_path(key, path, sizeof path, 0), 0);
  FILE *f = fopen(path, "r+b");
  ck_assert_ptr_nonnull(f);
  fseek(f, offset, offset < 0 ? SEEK_END : SEEK_SET);
  fputc(value, f);
  fclose(f);
}

START_TEST(damaged_entries_are_misses)
{
  uint64_t size;
  /* A flipped payload byte fails the checksum. */
  ck_assert_int_eq(kiln__vkfft_store_write("k1", payload, sizeof payload), 0);
  poke("k1", -12, 'X');
  ck_assert_ptr_null(kiln__vkfft_store_read("k1", &size));
  /* A bad magic. */
  ck_assert_int_eq(kiln__vkfft_store_write("k2", payload, sizeof payload), 0);
  poke("k2", 0, 'Q');
  ck_assert_ptr_null(kiln__vkfft_store_read("k2", &size));
  /* A file cut short. */
  ck_assert_int_eq(kiln__vkfft_store_write("k3", payload, sizeof payload), 0);
  char path[4200];
  ck_assert_int_eq(kiln__vkfft_store_path("k3", path, sizeof path, 0), 0);
  ck_assert_int_eq(truncate(path, 30), 0);
  ck_assert_ptr_null(kiln__vkfft_store_read("k3", &size));
  /* An entry written for another key at this key's path (a hash collision) is not this key's. */
  char other[4200];
  ck_assert_int_eq(kiln__vkfft_store_write("k4", payload, sizeof payload), 0);
  ck_assert_int_eq(kiln__vkfft_store_path("k4", other, sizeof other, 0), 0);
  ck_assert_int_eq(kiln__vkfft_store_path("k5", path, sizeof path, 0), 0);
  ck_assert_int_eq(rename(other, path), 0);
  ck_assert_ptr_null(kiln__vkfft_store_read("k5", &size));
}
END_TEST

START_TEST(no_cache_dir_no_store)
{
  setenv("KILN_CACHE", "off", 1);
  uint64_t size;
  ck_assert_int_ne(kiln__vkfft_store_write("k", payload, sizeof payload), 0);
  ck_assert_ptr_null(kiln__vkfft_store_read("k", &size));
  unsetenv("KILN_CACHE");
}
END_TEST

START_TEST(blob_check)
{
  /* Text records as NVIDIA's PTX gives them, then VkFFT's zero padding: intact. */
  static const char ok[] = "6\nabcde4\nxyz\0\0";
  ck_assert(kiln__vkfft_blob_intact(ok, sizeof ok - 1));
  ck_assert(kiln__vkfft_blob_intact(payload, sizeof payload));
  /*
   * A binary with a NUL inside, written with "%s": the record says 9 bytes
   * but only 3 came out before the next record.
   */
  static const char cut[] = "9\nab\x01"
                            "6\nabcde\0\0\0\0\0\0";
  ck_assert(!kiln__vkfft_blob_intact(cut, sizeof cut - 1));
  /* Data after the padding, a record running past the end, a missing newline, a zero size. */
  static const char late[] = "3\nab\0\0x";
  ck_assert(!kiln__vkfft_blob_intact(late, sizeof late - 1));
  static const char past[] = "40\nabc";
  ck_assert(!kiln__vkfft_blob_intact(past, sizeof past - 1));
  static const char nonl[] = "3ab\0";
  ck_assert(!kiln__vkfft_blob_intact(nonl, sizeof nonl - 1));
  static const char zero[] = "0\n\0";
  ck_assert(!kiln__vkfft_blob_intact(zero, sizeof zero - 1));
  /* An embedded NUL inside a record's text. */
  static const char nul[] = "5\nab\0d\0";
  ck_assert(!kiln__vkfft_blob_intact(nul, sizeof nul - 1));
}
END_TEST

static Suite *
store_suite(void)
{
  Suite *s = suite_create("vkfft_store");
  TCase *tc = tcase_create("store");
  tcase_add_test(tc, round_trip_and_replace);
  tcase_add_test(tc, damaged_entries_are_misses);
  tcase_add_test(tc, no_cache_dir_no_store);
  tcase_add_test(tc, blob_check);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  return harness_main(store_suite(), 0);
}
