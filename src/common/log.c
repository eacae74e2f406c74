/* Leveled logging. The threshold and sink are process configuration, not
 * run state: set once at start-up (by the worker from its settings, or by
 * a test), read on every call. */
#include "common/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static _Atomic int log_level = SP_LOG_WARN;
static _Atomic(sp_log_sink) log_sink;
static _Atomic(void *) log_sink_user;

int sp__log_parse_level(const char *name)
{
    static const char *const names[] = {"debug", "info", "warn", "error", "off"};
    if (!name)
        return -1;
    for (int i = 0; i < 5; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

int sp__log_level(void)
{
    /* Relaxed is enough: the level is an independent word, and a line
     * logged just before or after a change of it may go either way. */
    return atomic_load_explicit(&log_level, memory_order_relaxed);
}

void sp__log_set_level(int level)
{
    if (level >= SP_LOG_DEBUG && level <= SP_LOG_OFF)
        atomic_store_explicit(&log_level, level, memory_order_relaxed);
}

void sp__log_set_sink(sp_log_sink sink, void *user)
{
    atomic_store_explicit(&log_sink_user, user, memory_order_relaxed);
    atomic_store_explicit(&log_sink, sink, memory_order_release);
}

void sp__log_vformat(char *line, size_t len, int level, const char *fmt, va_list ap)
{
    static const char *const tags[] = {"debug", "info", "warn", "error"};
    if (!line || len == 0)
        return;
    int n = snprintf(line, len, "simpler %s: ", level >= 0 && level < 4 ? tags[level] : "?");
    if (n >= 0 && (size_t)n < len)
        vsnprintf(line + n, len - (size_t)n, fmt, ap);
}

void sp__log_line(int level, const char *line)
{
    if (level < sp__log_level() || level >= SP_LOG_OFF || !line)
        return;
    sp_log_sink sink = atomic_load_explicit(&log_sink, memory_order_acquire);
    if (sink) {
        sink(level, line, atomic_load_explicit(&log_sink_user, memory_order_relaxed));
        return;
    }
    /* No sink: the one default destination, for warnings and errors
     * (the threshold defaults to warn). */
    fprintf(stderr, "%s\n", line);
}

void sp__log(int level, const char *fmt, ...)
{
    if (level < sp__log_level() || level >= SP_LOG_OFF)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    sp__log_vformat(line, sizeof line, level, fmt, ap);
    va_end(ap);
    sp__log_line(level, line);
}
