/*
 * Runs the tuning file fuzz target without libFuzzer: every file of a
 * corpus directory, then mutations of a valid file (bit flips, byte writes,
 * truncations, insertions, deleted and repeated lines, numbers at their
 * limits), each also written to a file and read back through the reader
 * (kiln__tf_read) that lookups use.
 *
 * usage: fuzz_tuning_file_replay CORPUS_DIR [MUTATIONS]
 *        fuzz_tuning_file_replay --write-corpus DIR   (regenerates the seed files)
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "replay_corpus.h"
#include "runtime/tune_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char valid[] =
    "kiln-tuning v1\n"
    "device pthread-skylake-avx512-AMD EPYC\n"
    "driver 3.1+debian\n"
    "# Written by kiln's autotuner; docs/tuning.md describes it.\n"
    "v1 elementwise f32 flat.2^20 wg_size=1024 time_ns=301234 default_ns=402345\n"
    "v1 reduce f32 col.2^16 wg_size=64 items_per_thread=4 two_pass_min=32768 groups_per_cu=4 "
    "blocked=1 cols_per_item=16 time_ns=46019 default_ns=52268\n"
    "v1 reduce f32 row.2^16 wg_size=1024 items_per_thread=4 two_pass_min=32768 groups_per_cu=4 "
    "blocked=1 cols_per_item=16 failed=wrong\n"
    "v1 scan f64 full.2^24 wg_size=256 items_per_thread=64 two_pass_min=18446744073709551615 "
    "groups_per_cu=8 time_ns=9 default_ns=10\n";

/* One random mutation of src into a new buffer; returns its length. */
static size_t
mutate(const char *src, size_t n, char **out)
{
  size_t cap = 2 * n + 64;
  char *b = malloc(cap);
  memcpy(b, src, n);
  size_t len = n;
  switch (replay_next() % 8) {
  case 0: b[replay_next() % n] ^= (char)(1u << (replay_next() % 8)); break;
  case 1: b[replay_next() % n] = (char)replay_next(); break;
  case 2: len = (size_t)(replay_next() % n); break;
  case 3: {
    size_t at = (size_t)(replay_next() % n);
    memmove(b + at + 1, b + at, n - at);
    b[at] = " =\n\r\t#0123456789v.^_-"[replay_next() % 21];
    len = n + 1;
    break;
  }
  case 4: { /* delete a span */
    size_t at = (size_t)(replay_next() % n), k = 1 + (size_t)(replay_next() % 16);
    if (at + k > n)
      k = n - at;
    memmove(b + at, b + at + k, n - at - k);
    len = n - k;
    break;
  }
  case 5: { /* repeat a line */
    size_t at = (size_t)(replay_next() % n);
    while (at > 0 && b[at - 1] != '\n')
      at--;
    const char *nl = memchr(b + at, '\n', n - at);
    size_t ln = nl ? (size_t)(nl - (b + at)) + 1 : n - at;
    memmove(b + at + ln, b + at, n - at);
    len = n + ln;
    break;
  }
  case 6: { /* a number at an edge */
    static const char *const nums[] = {"0", "18446744073709551615", "18446744073709551616",
                                       "99999999999999999999999", "-1", "", "0x10"};
    size_t st = (size_t)(replay_next() % n);
    char *eq = memchr(b + st, '=', n - st);
    if (!eq)
      eq = memchr(b, '=', n);
    if (eq) {
      size_t at = (size_t)(eq - b) + 1, end = at;
      while (end < n && b[end] >= '0' && b[end] <= '9')
        end++;
      const char *v = nums[replay_next() % 7];
      size_t vl = strlen(v);
      memmove(b + at + vl, b + end, n - end);
      memcpy(b + at, v, vl);
      len = n - (end - at) + vl;
    }
    break;
  }
  default:
    for (int k = 0; k < 4; k++)
      b[replay_next() % n] = (char)replay_next();
    break;
  }
  *out = b;
  return len;
}

static int
write_corpus(const char *dir)
{
  mkdir(dir, 0755);
  char path[4200], buf[8192];
  struct {
    const char *name, *text;
  } seeds[] = {
      {"valid", valid},
      {"empty", ""},
      {"header-only", "kiln-tuning v1\n"},
      {"wrong-version", "kiln-tuning v2\nv1 reduce f32 row.2^16 wg_size=64 time_ns=1 default_ns=2\n"},
      {"no-header", "v1 reduce f32 row.2^16 wg_size=64 time_ns=1 default_ns=2\n"},
      {"crlf", "kiln-tuning v1\r\nv1 reduce f32 row.2^16 wg_size=64 time_ns=1 default_ns=2\r\n"},
      {"truncated", "kiln-tuning v1\nv1 reduce f32 row.2^16 wg_size=64 time_ns=1 defa"},
      {"overflow", "kiln-tuning v1\nv1 reduce f32 row.2^16 wg_size=18446744073709551616 "
                   "time_ns=1 default_ns=2\n"},
      {"nine-params", "kiln-tuning v1\nv1 a f32 b a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 i=9 time_ns=1 "
                      "default_ns=2\n"},
      {"mixed-kinds", "kiln-tuning v1\nv1 reduce f32 row.2^16 wg_size=1 failed=wrong time_ns=1\n"},
      {"duplicates", "kiln-tuning v1\nv1 scan f32 col.2^8 wg_size=1 time_ns=1 default_ns=2\n"
                     "v1 scan f32 col.2^8 wg_size=2 time_ns=1 default_ns=2\n"
                     "v1 scan f32 col.2^8 wg_size=2 wg_size=3 time_ns=1 default_ns=2\n"},
      {"junk", "\x7f" "ELF\x02\x01\x01\x00\x00\x00\xff\xfe kiln-tuning v1\n"},
  };
  for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, seeds[i].name);
    size_t n = strcmp(seeds[i].name, "junk") == 0 ? 27 : strlen(seeds[i].text);
    if (replay_write(path, seeds[i].text, n))
      return 1;
  }
  /* A line over the length limit and a NUL inside a line. */
  int n = snprintf(buf, sizeof buf, "kiln-tuning v1\nv1 reduce f32 row.2^16 wg_size=");
  memset(buf + n, '7', 1500);
  n += 1500;
  n += snprintf(buf + n, sizeof buf - (size_t)n, " time_ns=1 default_ns=2\nv1 reduce f32 ");
  buf[n++] = 0;
  n += snprintf(buf + n, sizeof buf - (size_t)n, "row.2^16 wg_size=1 time_ns=1 default_ns=2\n");
  snprintf(path, sizeof path, "%s/long-line-and-nul", dir);
  return replay_write(path, buf, (size_t)n) ? 1 : 0;
}

int
main(int argc, char **argv)
{
  long mutations;
  int files;
  int rc = replay_start(argc, argv, write_corpus, 12, 0x2545f4914f6cdd1dull, &mutations, &files);
  if (rc >= 0)
    return rc;

  struct kiln__tf_table t;
  kiln__tf_init(&t);
  if (kiln__tf_parse(valid, sizeof valid - 1, &t) != KILN__TF_OK || t.n != 4 || t.skipped) {
    fprintf(stderr, "the valid seed does not parse cleanly\n");
    return 1;
  }
  kiln__tf_free(&t);
  char tmpl[] = "/tmp/kiln-fuzz-tuning-XXXXXX";
  char *dir = mkdtemp(tmpl);
  if (!dir) {
    perror("mkdtemp");
    return 1;
  }
  char path[4200];
  snprintf(path, sizeof path, "%s/dev--drv.txt", dir);
  int failures = 0;
  for (long i = 0; i < mutations && !failures; i++) {
    char *b;
    size_t len = mutate(valid, sizeof valid - 1, &b);
    LLVMFuzzerTestOneInput((const uint8_t *)b, len);
    /* Through a file and the reader the lookups use: a parse or a clean refusal. */
    if (i % 10 == 0) {
      if (replay_write(path, b, len) != 0) {
        failures++;
      } else {
        const char *why = NULL;
        int r = kiln__tf_read(path, &t, &why);
        if (r == 0)
          kiln__tf_free(&t);
        else if (r != -1 || !why || !*why) {
          fprintf(stderr, "mutation %ld: reader returned %d without a reason\n", i, r);
          failures++;
        }
      }
    }
    free(b);
  }
  unlink(path);
  rmdir(dir);
  printf("%d corpus files, %ld mutations, %d failures\n", files, mutations, failures);
  return failures ? 1 : 0;
}
