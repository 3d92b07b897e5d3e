/* The public face of the log (kiln/log.h); core/log.c does the work without error records. */
#include "core/error.h"
#include "core/log.h"

void
kiln_log_set_handler(kiln_log_fn fn, void *user)
{
  kiln__log_set_handler(fn, user);
}

kiln_status
kiln_log_set_level(kiln_log_level level)
{
  KILN_RETURN_IF(level < KILN_LOG_OFF || level > KILN_LOG_DEBUG, KILN_ERR_INVALID_ARGUMENT,
                 "kiln_log_set_level", "level %d is not a kiln_log_level", (int)level);
  kiln__log_set_level((int)level);
  return KILN_OK;
}

kiln_log_level
kiln_log_get_level(void)
{
  return (kiln_log_level)kiln__log_level();
}
