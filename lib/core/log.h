/* Diagnostics to stderr, filtered by KILN_LOG (error, warn, info, debug; default warn). */
#ifndef KILN_CORE_LOG_H
#define KILN_CORE_LOG_H

#include "kiln/export.h"

enum kiln__log_level { KILN__LOG_ERROR, KILN__LOG_WARN, KILN__LOG_INFO, KILN__LOG_DEBUG };

void kiln__log(enum kiln__log_level level, const char *fmt, ...) KILN_PRINTF(2, 3);

/* Sets the threshold; -1 re-reads KILN_LOG. */
void kiln__log_set_level(int level);

#endif
