/* Diagnostics to stderr or the host's handler (kiln/log.h), filtered by KILN_LOG or kiln_log_set_level. */
#ifndef KILN_CORE_LOG_H
#define KILN_CORE_LOG_H

#include "kiln/export.h"
#include "kiln/log.h"

/* The public levels (kiln/log.h), under internal names. */
enum kiln__log_level {
  KILN__LOG_ERROR = KILN_LOG_ERROR,
  KILN__LOG_WARN = KILN_LOG_WARN,
  KILN__LOG_INFO = KILN_LOG_INFO,
  KILN__LOG_DEBUG = KILN_LOG_DEBUG
};

void kiln__log(enum kiln__log_level level, const char *fmt, ...) KILN_PRINTF(2, 3);

/* Sets the threshold: a kiln_log_level, or below -1 to re-read KILN_LOG. */
void kiln__log_set_level(int level);

/* The threshold in force (a kiln_log_level). */
int kiln__log_level(void);

/* Installs the host's handler (NULL: stderr). */
void kiln__log_set_handler(kiln_log_fn fn, void *user);

#endif
