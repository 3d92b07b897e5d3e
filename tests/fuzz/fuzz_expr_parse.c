/*
 * Fuzz target for the expression parser (kiln_expr_parse, lib/expr/parse.c): its text comes
 * from callers and from `[expr]` sections of the files `kiln cache warm --from` reads.
 *
 * Checked for every input: the parser returns one of its documented statuses and no
 * expression with an error; an accepted expression hashes, counts its parts, and parses to
 * the same hash again from the same text. 20000 nested parentheses crashed it (a stack
 * overflow) before its nesting was bounded.
 *
 * replay_expr.c drives it over the checked-in corpus and random mutations in the normal test
 * run (suite "fuzz"); with clang and libFuzzer the same entry point serves a fuzzer binary.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/context.h"
#include "kiln/expr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const kiln_expr_var vars[] = {
    {"x", KILN_F32, 0}, {"y", KILN_F64, 0}, {"k", KILN_I32, 0}, {"s", KILN_F32, 1}};

static void
fail(const char *what, const char *text)
{
  fprintf(stderr, "fuzz_expr_parse: %s for text \"%.200s\"\n", what, text);
  abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = malloc(size + 1);
  if (!text)
    return 0;
  memcpy(text, data, size);
  text[size] = 0;                    /* the parser reads up to the first NUL */
  kiln_expr *e = (kiln_expr *)&text; /* must be replaced: NULL on errors */
  kiln_status s = kiln_expr_parse(text, vars, sizeof vars / sizeof vars[0], &e);
  if (s != KILN_OK) {
    if (s != KILN_ERR_PARSE && s != KILN_ERR_DTYPE && s != KILN_ERR_INVALID_ARGUMENT &&
        s != KILN_ERR_HOST_MEMORY && s != KILN_ERR_UNSUPPORTED)
      fail("an undocumented status", text);
    if (e)
      fail("an expression along with an error", text);
    if (!*kiln_last_error())
      fail("an error without a message", text);
  } else {
    uint64_t h = 0, h2 = 0;
    size_t ni = 0, ns = 0, no = 0;
    if (!e || kiln_expr_hash(e, &h) != KILN_OK || kiln_expr_counts(e, &ni, &ns, &no) != KILN_OK)
      fail("an accepted expression that does not hash or count", text);
    if (no == 0 || ni + ns > sizeof vars / sizeof vars[0])
      fail("impossible counts", text);
    kiln_expr *e2 = NULL;
    if (kiln_expr_parse(text, vars, sizeof vars / sizeof vars[0], &e2) != KILN_OK ||
        kiln_expr_hash(e2, &h2) != KILN_OK || h2 != h)
      fail("a second parse that differs", text);
    kiln_expr_release(e2);
    kiln_expr_release(e);
  }
  free(text);
  return 0;
}
