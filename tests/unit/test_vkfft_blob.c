/*
 * The check that rejects VkFFT 1.2.26 application strings its C-string
 * copies have cut (what PoCL's binaries suffer), without a device. Storage
 * itself is the kernel cache's and tested there. Links internals.
 */
#include "harness.h"
#include "backends/vkfft_blob.h"

/* Records of size-2 text bytes each, as VkFFT's OpenCL loader reads them. */
static const char payload[] = "12\nhello worl9\nsecond!\0\0";

START_TEST(blob_check)
{
  /* Text records as NVIDIA's PTX gives them, then VkFFT's zero padding: intact. */
  static const char ok[] = "6\nabcd4\nxy\0\0";
  ck_assert(kiln__vkfft_blob_intact(ok, sizeof ok - 1));
  uint64_t bad = 99;
  ck_assert(kiln__vkfft_blob_check(ok, sizeof ok - 1, &bad));
  ck_assert_uint_eq(bad, 10);
  /* One byte too many per record (size-1 bytes of text): the loader would drift, refused. */
  static const char drift[] = "6\nabcde4\nxyz\0\0";
  ck_assert(!kiln__vkfft_blob_check(drift, sizeof drift - 1, &bad));
  ck_assert_uint_eq(bad, 6);
  ck_assert(kiln__vkfft_blob_intact(payload, sizeof payload));
  /*
   * A binary with a NUL inside, written with "%s": the record says 9 bytes
   * but only 3 came out before the next record.
   */
  static const char cut[] = "9\nab\x01"
                            "6\nabcd\0\0\0\0\0\0";
  ck_assert(!kiln__vkfft_blob_intact(cut, sizeof cut - 1));
  /* Data after the padding, a record running past the end, a missing newline, a zero size. */
  static const char late[] = "4\nab\0\0x";
  ck_assert(!kiln__vkfft_blob_intact(late, sizeof late - 1));
  static const char past[] = "40\nabc";
  ck_assert(!kiln__vkfft_blob_intact(past, sizeof past - 1));
  static const char nonl[] = "3ab\0";
  ck_assert(!kiln__vkfft_blob_intact(nonl, sizeof nonl - 1));
  static const char zero[] = "0\n\0";
  ck_assert(!kiln__vkfft_blob_intact(zero, sizeof zero - 1));
  static const char one[] = "1\n\0";
  ck_assert(!kiln__vkfft_blob_intact(one, sizeof one - 1));
  /* An embedded NUL inside a record's text. */
  static const char nul[] = "6\nab\0d\0";
  ck_assert(!kiln__vkfft_blob_intact(nul, sizeof nul - 1));
}
END_TEST

static Suite *
blob_suite(void)
{
  Suite *s = suite_create("vkfft_blob");
  TCase *tc = tcase_create("blob");
  tcase_add_test(tc, blob_check);
  suite_add_tcase(s, tc);
  return s;
}

int
main(void)
{
  return harness_main(blob_suite(), 0);
}
