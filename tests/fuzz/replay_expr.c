/*
 * Runs the expression parser's fuzz target without libFuzzer: every file of a corpus
 * directory, then mutations of valid texts (bytes flipped, written, deleted and inserted from
 * the grammar's alphabet, a span repeated, two texts spliced, nesting piled up to thousands of
 * levels).
 *
 * usage: fuzz_expr_parse_replay CORPUS_DIR [MUTATIONS]
 *        fuzz_expr_parse_replay --write-corpus DIR   (regenerates the seed files)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "replay_corpus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const seeds[] = {
    "z = x * 2 + 1",
    "z = sigmoid(2 * x + 1) * cos(x) - relu(x)",
    "# comment\nz = -x ** 2 + (x % 3) / 2 - +1e-3 ; w = where(x >= 0, f64(k), cast(x, f64)) * pi",
    "z = sum(x * x)",
    "z = mean(exp(x - s), 0, 1)",
    "z = cumsum(x, 0, exclusive)",
    "z = clamp(x, -1, 1); w = z * 2",
    "z = shl(k, 2) != k",
    "z = max(x, y) \\\n  + min(x, 1.5e300)",
    "z = amax(abs(x), 1, keepdims)",
};

/* Characters and words of the grammar, to insert. */
static const char *const pieces[] = {
    "(",        ")",         "+",  "-",    "*",    "/",        "%",         "**",
    "<",        "<=",        "==", "!=",   ",",    ";",        "\n",        "#",
    "\\\n",     "x",         "y",  "k",    "s",    "z",        "=",         "1e309",
    "0x",       ".",         "e",  "sum(", "exp(", "where(",   "cast(x, ",  "f64(",
    "keepdims", "exclusive", " ",  "\t",   "\xff", "\xc3\xa9", "9999999999"};

static size_t
mutate(char **out)
{
  const char *a = seeds[replay_next() % (sizeof seeds / sizeof seeds[0])];
  size_t n = strlen(a), cap = 4 * n + 40000;
  char *b = malloc(cap);
  memcpy(b, a, n);
  size_t len = n;
  int rounds = 1 + (int)(replay_next() % 3);
  for (int r = 0; r < rounds && len > 0; r++) {
    size_t at = (size_t)(replay_next() % len);
    switch (replay_next() % 7) {
    case 0:
      b[at] ^= (char)(1u << (replay_next() % 8));
      break;
    case 1:
      b[at] = (char)replay_next();
      break;
    case 2: { /* delete a span */
      size_t k = 1 + (size_t)(replay_next() % 8);
      if (at + k > len)
        k = len - at;
      memmove(b + at, b + at + k, len - at - k);
      len -= k;
      break;
    }
    case 3: { /* insert a piece */
      const char *p = pieces[replay_next() % (sizeof pieces / sizeof pieces[0])];
      size_t k = strlen(p);
      if (len + k >= cap)
        break;
      memmove(b + at + k, b + at, len - at);
      memcpy(b + at, p, k);
      len += k;
      break;
    }
    case 4: { /* splice the tail of another seed */
      const char *o = seeds[replay_next() % (sizeof seeds / sizeof seeds[0])];
      size_t on = strlen(o), from = (size_t)(replay_next() % (on + 1));
      if (at + on - from >= cap)
        break;
      memcpy(b + at, o + from, on - from);
      len = at + on - from;
      break;
    }
    case 5: { /* repeat a short span */
      size_t k = 1 + (size_t)(replay_next() % 6), times = 1 + (size_t)(replay_next() % 40);
      if (at + k > len)
        k = len - at;
      if (len + k * times >= cap)
        break;
      /* the span moves right with the rest, then its copies fill the gap before it */
      memmove(b + at + k * times, b + at, len - at);
      for (size_t t = 0; t < times; t++)
        memcpy(b + at + k * t, b + at + k * times, k);
      len += k * times;
      break;
    }
    default: { /* nesting piled up: "(" or "-" or "exp(" thousands deep before x */
      static const char *const open[] = {"(", "-", "exp(", "+"};
      const char *o = open[replay_next() % 4];
      size_t k = strlen(o), depth = 200 + (size_t)(replay_next() % 5000);
      size_t close = o[k - 1] == '(' ? depth : 0;
      if (4 + depth * k + 1 + close + 1 >= cap)
        break;
      char *q = b + sprintf(b, "z = ");
      for (size_t t = 0; t < depth; t++, q += k)
        memcpy(q, o, k);
      *q++ = 'x';
      for (size_t t = 0; t < close; t++)
        *q++ = ')';
      len = (size_t)(q - b);
      break;
    }
    }
  }
  *out = b;
  return len;
}

static int
write_corpus(const char *dir)
{
  mkdir(dir, 0755);
  char name[32];
  for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
    snprintf(name, sizeof name, "seed-%02zu", i);
    if (replay_write_seed(dir, name, seeds[i], strlen(seeds[i])))
      return 1;
  }
  static const struct {
    const char *name, *text;
  } bad[] = {
      {"empty", ""},
      {"unclosed", "z = sigmoid(x"},
      {"chained-compare", "z = x < x < x"},
      {"reduction-mid", "z = 1 + sum(x)"},
      {"unknown-name", "z = q + 1"},
      {"type-error", "z = 1 + bitwise_and(x, 3)"},
      {"two-reductions", "z = sum(x)\nw = mean(x)"},
      {"assign-input", "x = 1"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (replay_write_seed(dir, bad[i].name, bad[i].text, strlen(bad[i].text)))
      return 1;
  /* 20000 nested parentheses: a stack overflow before the parser bounded its nesting */
  size_t depth = 20000;
  char *d = malloc(2 * depth + 16), *q = d + sprintf(d, "z = ");
  memset(q, '(', depth);
  q += depth;
  *q++ = 'x';
  memset(q, ')', depth);
  q += depth;
  int rc = replay_write_seed(dir, "deep-parentheses", d, (size_t)(q - d));
  free(d);
  return rc ? 1 : 0;
}

int
main(int argc, char **argv)
{
  long mutations;
  int files;
  int rc = replay_start(argc, argv, write_corpus, 18, 0x9e3779b97f4a7c15ull, &mutations, &files);
  if (rc >= 0)
    return rc;
  for (long i = 0; i < mutations; i++) {
    char *b;
    size_t len = mutate(&b);
    LLVMFuzzerTestOneInput((const uint8_t *)b, len);
    free(b);
  }
  printf("%d corpus files, %ld mutations\n", files, mutations);
  return 0;
}
