/* The worker's side of tracing: after a run completes (before its
 * finalize) the lane copies the module's trace into the lease's buffers,
 * grown as needed and reused; the wait that releases the run hands them to
 * the worker, where sp_worker_last_trace reads them and
 * sp_worker_write_trace exports them (src/trace) with the kernel names of
 * the worker's copy of the callable. With a trace path (options.trace_path
 * or SIMPLER_TRACE) every run is traced and each wait writes its file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "simpler/status.h"
#include "worker/worker_internal.h"

static int grow(void **p, uint64_t *cap, uint64_t need, size_t elem)
{
    if (need <= *cap)
        return SP_OK;
    void *n = realloc(*p, need * elem);
    if (!n)
        return SP_ENOMEM;
    *p = n;
    *cap = need;
    return SP_OK;
}

void wk_lease_trace_capture(sp_worker *w, wk_lease *l)
{
    sp_run_trace *t = &l->trace;
    void *recs = t->records, *edges = t->edges;
    uint64_t rcap = t->record_cap, ecap = t->edge_cap;
    memset(t, 0, sizeof *t);
    /* First the counts, then the copy into buffers that fit them. */
    int rc = w->m.simpler_run_trace(w->ctx, l->run, t);
    if (rc == SP_OK && t->level &&
        (rc = grow(&recs, &rcap, t->record_count, sizeof(sp_trace_record))) == SP_OK &&
        (rc = grow(&edges, &ecap, t->edge_count, sizeof(sp_trace_edge))) == SP_OK) {
        t->records = recs;
        t->record_cap = rcap;
        t->edges = edges;
        t->edge_cap = ecap;
        rc = w->m.simpler_run_trace(w->ctx, l->run, t);
    }
    if (rc)
        t->level = 0; /* no trace rather than a partial one; the run itself stands */
    t->records = recs;
    t->record_cap = rcap;
    t->edges = edges;
    t->edge_cap = ecap;
}

void wk_lease_trace_take(sp_worker *w, wk_lease *l)
{
    sp_run_trace mine = w->trace;
    w->trace = l->trace;
    l->trace = mine; /* the lease reuses the older buffers */
    w->trace_callable = l->callable_id;
    w->trace_stats = l->stats;
}

int wk_trace_open(sp_worker *w, const sp_worker_options *o, const char *module_path)
{
    const char *path = o->trace_path ? o->trace_path : wk_env_trace_path();
    if (path && *path && !(w->trace_path = strdup(path)))
        return SP_ENOMEM;
    pthread_mutex_init(&w->callables_lock, NULL); /* destroyed by wk_trace_free */
    pthread_mutex_init(&w->wait_lock, NULL);      /* the same */
    /* libsimpler_<runtime>_<platform>.so names the runtime (discover.c). */
    const char *base = module_path ? strrchr(module_path, '/') : NULL;
    base = base ? base + 1 : module_path;
    const char *under = base ? strrchr(base, '_') : NULL;
    if (base && under && strncmp(base, "libsimpler_", 11) == 0 && under > base + 11 &&
        (size_t)(under - base - 11) < sizeof w->runtime)
        snprintf(w->runtime, sizeof w->runtime, "%.*s", (int)(under - base - 11), base + 11);
    return SP_OK;
}

const sp_call_config *wk_trace_config(const sp_worker *w, const sp_call_config *config,
                                      sp_call_config *buf)
{
    if (!w->trace_path || (config && config->trace_level))
        return config;
    if (config)
        *buf = *config;
    else
        memset(buf, 0, sizeof *buf);
    buf->trace_level = SP_TRACE_TASKS;
    return buf;
}

/* The trace path with each "%n" replaced by `seq` ("%%": a '%'). */
static int expand_path(const char *pattern, uint64_t seq, char *out, size_t len)
{
    size_t o = 0;
    for (const char *p = pattern; *p; p++) {
        int n;
        if (p[0] == '%' && p[1] == 'n') {
            n = snprintf(out + o, len - o, "%llu", (unsigned long long)seq);
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            n = snprintf(out + o, len - o, "%%");
            p++;
        } else {
            n = snprintf(out + o, len - o, "%c", *p);
        }
        if (n < 0 || (size_t)n >= len - o)
            return -1;
        o += (size_t)n;
    }
    return 0;
}

/* To `path`, or to the stream `f` when path is NULL. */
static int write_last(sp_worker *w, int format, const char *path, FILE *f, char *err,
                      size_t err_len)
{
    pthread_mutex_lock(&w->callables_lock); /* the names stay while they are written */
    const wk_callable *c = wk_callable_find(w, w->trace_callable);
    sp_trace_info info = {
        .runtime = w->runtime,
        .callable = c ? &c->view : NULL,
        .stats = &w->trace_stats,
    };
    int rc = path ? sp_trace_write(&w->trace, &info, format, path, err, err_len)
                  : sp_trace_write_file(&w->trace, &info, format, f, err, err_len);
    pthread_mutex_unlock(&w->callables_lock);
    return rc;
}

void wk_trace_autowrite(sp_worker *w)
{
    if (!w->trace_path || !w->trace.level)
        return;
    uint64_t seq = w->traces_written++;
    char path[4096], err[512];
    if (expand_path(w->trace_path, seq, path, sizeof path)) {
        wk_log(w, SP_LOG_WARN,
               "trace path '%s' is too long once expanded: run %llu's trace not written",
               w->trace_path, (unsigned long long)seq);
        return;
    }
    int format = sp_trace_format_of(path);
    int rc = write_last(w, format ? format : SP_TRACE_FORMAT_JSON, path, NULL, err, sizeof err);
    if (rc)
        wk_log(w, SP_LOG_WARN, "%s: %s (the run itself is unaffected)", sp_status_name(rc), err);
}

/* The last run waited for was traced: 0, else SP_EINVAL with the message. */
static int check_traced(sp_worker *w)
{
    if (w->trace.level)
        return SP_OK;
    snprintf(w->last_error, sizeof w->last_error,
             "write trace: the last run waited for was not traced: give it a "
             "sp_call_config.trace_level (or open the worker with trace_path)");
    return SP_EINVAL;
}

SP_EXPORT int sp_worker_write_trace(sp_worker *w, int format, const char *path)
{
    if (!w)
        return SP_EINVAL;
    int rc = check_traced(w);
    if (rc)
        return rc;
    if (!path) {
        snprintf(w->last_error, sizeof w->last_error, "write trace: no output path");
        return SP_EINVAL;
    }
    return write_last(w, format, path, NULL, w->last_error, sizeof w->last_error);
}

SP_EXPORT int sp_worker_write_trace_file(sp_worker *w, int format, FILE *f)
{
    if (!w)
        return SP_EINVAL;
    int rc = check_traced(w);
    return rc ? rc : write_last(w, format, NULL, f, w->last_error, sizeof w->last_error);
}

void wk_trace_free(sp_worker *w)
{
    free(w->trace_path);
    w->trace_path = NULL;
    pthread_mutex_destroy(&w->callables_lock);
    pthread_mutex_destroy(&w->wait_lock);
    free(w->trace.records);
    free(w->trace.edges);
    memset(&w->trace, 0, sizeof w->trace);
    for (uint32_t s = 0; s < SP_PIPELINE_MAX_DEPTH; s++) {
        free(w->lease[s].trace.records);
        free(w->lease[s].trace.edges);
        memset(&w->lease[s].trace, 0, sizeof w->lease[s].trace);
    }
}

SP_EXPORT const sp_run_trace *sp_worker_last_trace(const sp_worker *w)
{
    return w && w->trace.level ? &w->trace : NULL;
}
