/*
 * Fuzz target for the tuning file parser (lib/runtime/tune_file.c): the
 * files under DIR/tuning steer kernel launches, and anyone who can write
 * the cache directory can plant one.
 *
 * With clang (CC=clang meson setup ...) the build also makes
 * fuzz_tuning_file_libfuzzer, a libFuzzer binary (commands in
 * tests/fuzz/meson.build and docs/tuning.md). Without libFuzzer,
 * replay_tuning.c drives the same entry point over the checked-in corpus
 * and random mutations in the normal test run (suite "fuzz").
 *
 * Checked for every input: the parser returns one of its statuses; every
 * entry it accepts is well formed; what it accepted survives a round trip
 * through the writer unchanged (same entries, no skipped lines).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/tune_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
same_entry(const struct kiln__tf_entry *a, const struct kiln__tf_entry *b)
{
  if (!kiln__tf_same_key(a, b) || a->nparams != b->nparams || a->time_ns != b->time_ns ||
      a->default_ns != b->default_ns || strcmp(a->failed, b->failed) != 0)
    return 0;
  for (uint32_t i = 0; i < a->nparams; i++) {
    uint64_t v;
    if (!kiln__tf_param(b, a->pname[i], &v) || v != a->pval[i])
      return 0;
  }
  return 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct kiln__tf_table t;
  kiln__tf_init(&t);
  int s = kiln__tf_parse((const char *)data, size, &t);
  if (s != KILN__TF_OK && s != KILN__TF_BAD_HEADER && s != KILN__TF_NOMEM)
    abort();
  if (s != KILN__TF_OK) {
    kiln__tf_free(&t);
    return 0;
  }
  for (size_t i = 0; i < t.n; i++) {
    if (!kiln__tf_entry_valid(&t.e[i]))
      abort();
    for (size_t j = 0; j < i; j++)
      if (kiln__tf_same_key(&t.e[i], &t.e[j]))
        abort(); /* a key appears once: later lines replace earlier ones */
  }
  if (strnlen(t.device, sizeof t.device) == sizeof t.device ||
      strnlen(t.driver, sizeof t.driver) == sizeof t.driver)
    abort();
  size_t len = 0;
  char *text = kiln__tf_format(&t, &len);
  if (text) {
    struct kiln__tf_table u;
    kiln__tf_init(&u);
    if (kiln__tf_parse(text, len, &u) != KILN__TF_OK || u.n != t.n || u.skipped != 0)
      abort();
    for (size_t i = 0; i < t.n; i++) {
      int found = 0;
      for (size_t j = 0; j < u.n && !found; j++)
        found = same_entry(&t.e[i], &u.e[j]);
      if (!found)
        abort();
    }
    kiln__tf_free(&u);
    free(text);
  }
  kiln__tf_free(&t);
  return 0;
}
