#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "runtime/build.h"
#include "runtime/program_text.h"

static _Atomic uint64_t text_compiles;

kiln_status (*kiln__warm_expr_hook)(kiln_context *, const char *label, const char *text) = NULL;

uint64_t
kiln__text_compiles(void)
{
  return atomic_load(&text_compiles);
}

/* FNV-1a: a quick filter for the registry walk; equal texts are then compared whole. */
static uint64_t
text_hash(const char *text, size_t len)
{
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < len; i++)
    h = (h ^ (unsigned char)text[i]) * 1099511628211ull;
  return h ^ len;
}

static struct kiln__program *
find_text(kiln_context *ctx, const char *text, size_t len, uint64_t hash, const char *options)
{
  for (size_t i = 0; i < ctx->nprograms; i++) {
    struct kiln__program *p = &ctx->programs[i];
    if (p->text && p->text_hash == hash && p->text_len == len &&
        memcmp(p->text, text, len) == 0 && strcmp(p->options, options) == 0)
      return p;
  }
  return NULL;
}

/* "text:" + the label, cut and made printable: it is shown by `kiln cache list`. */
static char *
source_name(const char *label)
{
  if (!label || !*label)
    label = "text";
  size_t n = strnlen(label, KILN__TEXT_LABEL_MAX);
  char *s = malloc(n + 6);
  if (!s)
    return NULL;
  memcpy(s, "text:", 5);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)label[i];
    s[5 + i] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
  }
  s[5 + n] = 0;
  return s;
}

static kiln_status
add_text(const char *op, kiln_context *ctx, const char *label, const char *text, size_t len,
         uint64_t hash, const char *options, struct kiln__program **out)
{
  KILN_TRY(kiln__registry_reserve_locked(op, ctx));
  char *name = source_name(label);
  char *copy = malloc(len + 1);
  char *opts = strdup(options);
  if (!name || !copy || !opts) {
    free(name);
    free(copy);
    free(opts);
    return kiln__fail(KILN_ERR_HOST_MEMORY, op, 0, "cannot record a program");
  }
  memcpy(copy, text, len);
  copy[len] = 0;
  /* hash NULL marks caller text for the build (numbered source lines in its errors). */
  struct kiln__cl_source src = {name, copy, len, NULL};
  struct kiln__build_outcome outcome;
  cl_program prog = NULL;
  kiln_status s =
      kiln__program_build_locked(op, ctx, &src, options, KILN__BUILD_SMALL, &prog, &outcome);
  if (s != KILN_OK) {
    free(name);
    free(copy);
    free(opts);
    return s;
  }
  if (outcome.compiled)
    atomic_fetch_add(&text_compiles, 1);
  struct kiln__program *p = &ctx->programs[ctx->nprograms++];
  memset(p, 0, sizeof *p);
  p->source = name;
  p->options = opts;
  p->text = copy;
  p->text_len = len;
  p->text_hash = hash;
  p->program = prog;
  *out = p;
  return KILN_OK;
}

kiln_status
kiln__text_kernel_get(const char *op, kiln_context *ctx, const char *label, const char *text,
                      size_t text_len, const char *options, const char *kernel, cl_kernel *out)
{
  KILN__ASSERT_LOCKED(ctx);
  KILN_RETURN_IF(!text || !text_len, KILN_ERR_INVALID_ARGUMENT, op, "empty program text");
  KILN_RETURN_IF(memchr(text, 0, text_len) != NULL, KILN_ERR_INVALID_ARGUMENT, op,
                 "program text contains a NUL byte");
  KILN_RETURN_IF(!kernel || !*kernel, KILN_ERR_INVALID_ARGUMENT, op, "no kernel name");
  KILN_RETURN_IF(!out, KILN_ERR_INVALID_ARGUMENT, op, "out is NULL");
  if (!options)
    options = "";
  uint64_t hash = text_hash(text, text_len);
  struct kiln__program *p = find_text(ctx, text, text_len, hash, options);
  if (!p)
    KILN_TRY(add_text(op, ctx, label, text, text_len, hash, options, &p));
  return kiln__program_kernel_locked(op, p, kernel, out);
}
