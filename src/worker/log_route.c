/* Where log lines go: each worker's own lines to its sink
 * (sp_worker_options.log_sink), the lines of code that knows no worker
 * (its module, the device, the settings reader) to the sink of the most
 * recently opened worker that gave one and is still open, and with no such
 * worker to stderr. With common's logger (log.c, stderr when no sink is
 * set) it is the library's only writer to stderr.
 *
 * The module's logger and the device's are the process's (one platform
 * library, DESIGN.md §11), so a device two workers share cannot tell whose
 * run a line is about: it goes to the newest sink. A reader-writer lock
 * holds a sink's worker open while a line is delivered, so once
 * sp_worker_close returns the worker's sink is never called again. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "common/log.h"
#include "worker/worker_internal.h"

static pthread_rwlock_t route_lock = PTHREAD_RWLOCK_INITIALIZER;
static sp_worker *route_head; /* workers with a sink, newest first */

void wk_log_route_line(int level, const char *line, void *user)
{
    (void)user;
    /* Read lock: lines from several threads are delivered concurrently;
     * only a worker's open and close exclude them. */
    pthread_rwlock_rdlock(&route_lock);
    sp_worker *w = route_head;
    if (w)
        w->log_sink(level, line, w->log_user);
    else
        fprintf(stderr, "%s\n", line);
    pthread_rwlock_unlock(&route_lock);
}

void wk_log_route_add(sp_worker *w, sp_log_sink sink, void *user)
{
    /* The library's own logger (settings warnings, the worker's lines);
     * the module's is bound to the same function at load (worker.c). */
    sp__log_set_sink(wk_log_route_line, NULL);
    if (!sink)
        return;
    pthread_rwlock_wrlock(&route_lock);
    w->log_sink = sink;
    w->log_user = user;
    w->log_next = route_head;
    route_head = w;
    pthread_rwlock_unlock(&route_lock);
}

void wk_log_route_remove(sp_worker *w)
{
    if (!w->log_sink)
        return;
    pthread_rwlock_wrlock(&route_lock);
    for (sp_worker **p = &route_head; *p; p = &(*p)->log_next)
        if (*p == w) {
            *p = w->log_next;
            break;
        }
    pthread_rwlock_unlock(&route_lock);
    w->log_sink = NULL;
}

void wk_log(sp_worker *w, int level, const char *fmt, ...)
{
    if (level < sp__log_level() || level < SP_LOG_DEBUG || level >= SP_LOG_OFF)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    sp__log_vformat(line, sizeof line, level, fmt, ap);
    va_end(ap);
    if (w && w->log_sink)
        w->log_sink(level, line, w->log_user);
    else /* the process's logger: its sink is the route (or a test's) */
        sp__log_line(level, line);
}
