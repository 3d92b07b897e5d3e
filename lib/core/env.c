/* The one place kiln reads its environment (core/env.h). */
#include "core/env.h"

#include <stdlib.h>
#include <string.h>

static const char *const names[] = {
#define X(id, name) name,
    KILN__ENV_VARS(X)
#undef X
};

const char *
kiln__env_name(enum kiln__env var)
{
  return (unsigned)var < KILN__ENV_COUNT ? names[var] : "?";
}

const char *
kiln__env(enum kiln__env var)
{
  /* secure_getenv: a setuid program must not take a cache directory or a device from its
   * caller's environment. */
  return (unsigned)var < KILN__ENV_COUNT ? secure_getenv(names[var]) : NULL;
}

int
kiln__env_flag(enum kiln__env var)
{
  const char *v = kiln__env(var);
  return v && *v && strcmp(v, "0") != 0;
}
