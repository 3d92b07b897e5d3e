/* Walking the family table (runtime/family.h) on behalf of the runtime. */
#include "runtime/family.h"

#include <string.h>

#include "core/error.h"

static size_t
family_index(const struct kiln__family *family)
{
  size_t i = 0;
  while (kiln__families[i] && kiln__families[i] != family)
    i++;
  return i;
}

void *
kiln__family_state(const kiln_context *ctx, const struct kiln__family *family)
{
  size_t i = family_index(family);
  return i < KILN__FAMILY_SLOTS ? ctx->family_state[i] : NULL;
}

const struct kiln__family *
kiln__family_of_source(const char *source, const struct kiln__source **row)
{
  for (size_t i = 0; kiln__families[i]; i++)
    for (const struct kiln__source *s = kiln__families[i]->sources; s && s->name; s++)
      if (strcmp(s->name, source) == 0) {
        if (row)
          *row = s;
        return kiln__families[i];
      }
  return NULL;
}

const struct kiln__family *
kiln__family_of_option(kiln_option option, const struct kiln__family_option **row)
{
  for (size_t i = 0; kiln__families[i]; i++)
    for (size_t j = 0; j < kiln__families[i]->noptions; j++)
      if (kiln__families[i]->options[j].option == option) {
        if (row)
          *row = &kiln__families[i]->options[j];
        return kiln__families[i];
      }
  return NULL;
}

kiln_status
kiln__family_states_create(const char *op, kiln_context *ctx)
{
  for (size_t i = 0; kiln__families[i]; i++) {
    if (i >= KILN__FAMILY_SLOTS) {
      kiln__family_states_destroy_locked(ctx);
      return kiln__fail(KILN_ERR_INTERNAL, op, 0, "more op families than KILN__FAMILY_SLOTS");
    }
    const struct kiln__family *f = kiln__families[i];
    if (!f->state_create)
      continue;
    kiln_status s = f->state_create(ctx, &ctx->family_state[i]);
    if (s != KILN_OK) {
      kiln__family_states_destroy_locked(ctx);
      return s;
    }
  }
  return KILN_OK;
}

void
kiln__family_states_destroy_locked(kiln_context *ctx)
{
  KILN__ASSERT_LOCKED(ctx);
  for (size_t i = 0; kiln__families[i] && i < KILN__FAMILY_SLOTS; i++) {
    if (ctx->family_state[i] && kiln__families[i]->state_destroy)
      kiln__families[i]->state_destroy(ctx, ctx->family_state[i]);
    ctx->family_state[i] = NULL;
  }
}
