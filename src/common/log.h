/* Leveled logging to stderr (or a sink a host installs). The threshold
 * defaults to warn; the worker sets it from its settings (SIMPLER_LOG is
 * read there, with the other settings, never here). */
#ifndef SP_COMMON_LOG_H
#define SP_COMMON_LOG_H

#include <stdarg.h>
#include <stddef.h>

#include "simpler/log.h" /* the levels and sp_log_sink */

/* Current threshold: messages below it are dropped. */
int sp__log_level(void);
/* Parse a level name ("debug".."off"); -1 if unknown. */
int sp__log_parse_level(const char *name);
/* Override the threshold (tests, CLI flags). */
void sp__log_set_level(int level);
/* Send lines to `sink` instead of stderr; NULL restores stderr. */
void sp__log_set_sink(sp_log_sink sink, void *user);
void sp__log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Deliver a line already formatted (sp__log_vformat) as sp__log does. */
void sp__log_line(int level, const char *line);
/* Format one line as sp__log does ("simpler warn: ..."), for code that
 * delivers lines of its own (the worker's per-worker sink). */
void sp__log_vformat(char *line, size_t len, int level, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

#define SP_LOG_ENABLED(lvl) ((lvl) >= sp__log_level())
#define SP_DEBUG(...) (SP_LOG_ENABLED(SP_LOG_DEBUG) ? sp__log(SP_LOG_DEBUG, __VA_ARGS__) : (void)0)
#define SP_INFO(...) (SP_LOG_ENABLED(SP_LOG_INFO) ? sp__log(SP_LOG_INFO, __VA_ARGS__) : (void)0)
#define SP_WARN(...) (SP_LOG_ENABLED(SP_LOG_WARN) ? sp__log(SP_LOG_WARN, __VA_ARGS__) : (void)0)
#define SP_ERROR(...) (SP_LOG_ENABLED(SP_LOG_ERROR) ? sp__log(SP_LOG_ERROR, __VA_ARGS__) : (void)0)

#endif
