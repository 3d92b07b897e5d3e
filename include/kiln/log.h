/*
 * Diagnostics: where kiln's warnings and debug messages go, and how many.
 *
 * By default messages of level warn and above go to stderr as
 * "kiln <level>: <message>", filtered by the environment variable KILN_LOG
 * (off, error, warn, info, debug), read at the first message. A host
 * application can route them into its own log instead and set the level
 * from code.
 */
#ifndef KILN_LOG_H
#define KILN_LOG_H

#include "kiln/export.h"
#include "kiln/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Message levels, most severe first. */
typedef enum kiln_log_level {
  KILN_LOG_OFF = -1, /**< as a threshold: no messages */
  KILN_LOG_ERROR = 0,
  KILN_LOG_WARN = 1,
  KILN_LOG_INFO = 2,
  KILN_LOG_DEBUG = 3,
} kiln_log_level;

/**
 * Receives one message (without a trailing newline; the text is only valid
 * during the call). May be called from any thread, and from several at once;
 * it must not call back into kiln.
 */
typedef void (*kiln_log_fn)(kiln_log_level level, const char *message, void *user);

/**
 * Sends every later message at or above the threshold to fn with user
 * (process-wide; NULL restores stderr). Safe to call from any thread; a
 * message being delivered while the handler changes goes to either one.
 */
KILN_API void kiln_log_set_handler(kiln_log_fn fn, void *user);

/**
 * Sets the threshold: messages less severe than level are dropped
 * (KILN_LOG_OFF drops all). Replaces what KILN_LOG said, process-wide.
 * @return KILN_OK; KILN_ERR_INVALID_ARGUMENT for a value outside the enum.
 */
KILN_API kiln_status kiln_log_set_level(kiln_log_level level);

/** The threshold in force (KILN_LOG's value, or warn, until kiln_log_set_level). */
KILN_API kiln_log_level kiln_log_get_level(void);

#ifdef __cplusplus
}
#endif
#endif
