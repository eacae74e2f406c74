/* The worker: one loaded module, one device context, and the lane that runs
 * what is submitted (lane.c). A synchronous run is a submit followed by a
 * wait. Module logging is bound to the library's log route (log_route.c)
 * so module lines look like ours, follow the settings' log level and reach
 * the sink a host gave (sp_worker_options.log_sink). */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "callable/callable_internal.h"
#include "common/log.h"
#include "simpler/status.h"
#include "worker/worker_internal.h"

static int worker_fail(sp_worker *w, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int worker_fail(sp_worker *w, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->last_error, sizeof w->last_error, fmt, ap);
    va_end(ap);
    return status;
}

/* The lane's depth and each slot's arena bank, from the module's contract:
 * arena resources that are exec-handles come one per slot, so slot s uses
 * bank s and runs can be prepared concurrently; anything else is depth 1. */
static void lane_shape(sp_worker *w, const sp_pipeline_contract *c)
{
    bool per_slot = true;
    for (uint32_t i = 0; i < c->resource_count; i++) {
        uint32_t k = c->resources[i].kind;
        bool arena = k == SP_RESOURCE_HEAP || k == SP_RESOURCE_SHARED_MEMORY ||
                     k == SP_RESOURCE_RUNTIME_IMAGE;
        if (arena && c->resources[i].resource_class != SP_CLASS_EXEC_HANDLE)
            per_slot = false;
    }
    w->depth = per_slot && c->pipeline_depth >= 2 ? 2 : 1;
    for (uint32_t s = 0; s < SP_PIPELINE_MAX_DEPTH; s++)
        w->bank_of[s] = per_slot ? s : 0;
}

SP_EXPORT int sp_worker_open(const char *module_path, const sp_worker_options *opt, sp_worker **out,
                             char *err, size_t err_len)
{
    char no_err[1];
    if (!err) { /* the caller does not want the text: never write through NULL */
        err = no_err;
        err_len = sizeof no_err;
    }
    if (!out) {
        snprintf(err, err_len, "NULL output pointer");
        return SP_EINVAL;
    }
    *out = NULL;
    /* The settings first: the caller's, the environment for what they
     * leave 0 (read here, once), checked before anything is loaded. */
    sp_worker_options o = {0};
    if (opt)
        o = *opt;
    int rc = wk_settings_check(&o.settings, err, err_len);
    if (rc)
        return rc;
    sp_worker *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, err_len, "no host memory for the worker");
        return SP_ENOMEM;
    }
    /* The sink first: what reading the environment warns about is ours. */
    wk_log_route_add(w, o.log_sink, o.log_user);
    sp_settings_from_env(&o.settings);
    /* The log threshold is the process's: the last worker opened with a
     * level sets it; one opened without leaves it as it is. */
    if (o.settings.log_level)
        sp__log_set_level(o.settings.log_level - 1);
    pthread_mutex_init(&w->submit_lock, NULL);
    w->settings = o.settings;
    w->close_timeout_ns =
        (o.close_timeout_ms ? o.close_timeout_ms : SP_WORKER_CLOSE_TIMEOUT_MS) * 1000000ull;
    if (wk_trace_open(w, &o, module_path) != SP_OK) {
        snprintf(err, err_len, "no host memory for the worker's trace path");
        wk_log_route_remove(w);
        pthread_mutex_destroy(&w->submit_lock);
        free(w);
        return SP_ENOMEM;
    }
    rc = wk_module_open(module_path, &w->m, err, err_len);
    if (rc) {
        wk_trace_free(w);
        wk_log_route_remove(w);
        pthread_mutex_destroy(&w->submit_lock);
        free(w);
        return rc;
    }
    /* The module's lines (and its device's) join the route (log_route.c). */
    w->m.simpler_bind_logging(sp__log_level(), wk_log_route_line, NULL);
    lane_shape(w, w->m.simpler_get_pipeline_contract());
    /* pipeline_depth 1: one run in flight at a time (the serial lane),
     * whatever the module allows. */
    if (w->settings.pipeline_depth && w->settings.pipeline_depth < w->depth)
        w->depth = w->settings.pipeline_depth;
    size_t align = 64;
    if ((rc = w->m.simpler_run_storage_size(&w->run_size, &align)) != SP_OK ||
        (rc = w->m.simpler_create_device_context(&w->ctx)) != SP_OK) {
        snprintf(err, err_len, "module setup failed: %s", sp_status_name(rc));
        w->ctx = NULL;
        sp_worker_close(w);
        return rc;
    }
    if (align < 64)
        align = 64;
    size_t bytes = (w->run_size + align - 1) / align * align;
    for (uint32_t s = 0; s < w->depth; s++) {
        w->lease[s].run = aligned_alloc(align, bytes);
        if (!w->lease[s].run) {
            snprintf(err, err_len, "no host memory for run storage of %zu bytes", bytes);
            sp_worker_close(w);
            return SP_ENOMEM;
        }
        memset(w->lease[s].run, 0, bytes);
    }
    rc = w->m.simpler_init(w->ctx, o.device_id, &o.prewarm, &w->settings);
    if (rc) {
        snprintf(err, err_len, "%s", w->m.simpler_last_error(w->ctx));
        sp_worker_close(w);
        return rc;
    }
    if ((rc = wk_lane_start(w)) != SP_OK) {
        snprintf(err, err_len, "cannot start the worker's lane thread");
        sp_worker_close(w);
        return rc;
    }
    *out = w;
    return SP_OK;
}

/* Workers close had to abandon (what still ran uses them): kept, and
 * reachable from here, for the process's life. */
static _Atomic(sp_worker *) kept_workers;

static void keep_worker(sp_worker *w)
{
    sp_worker *head = atomic_load_explicit(&kept_workers, memory_order_relaxed);
    do
        w->next_kept = head;
    while (!atomic_compare_exchange_weak_explicit(&kept_workers, &head, w, memory_order_release,
                                                  memory_order_relaxed));
}

SP_EXPORT void sp_worker_close(sp_worker *w)
{
    if (!w)
        return;
    /* Runs still queued execute first, within the close bound. */
    if (!wk_lane_stop(w)) {
        /* The lane waits for a device side that never ends and still
         * uses the worker: everything is left to it (the process keeps it). */
        wk_log(w, SP_LOG_WARN,
               "worker closed while its lane still waited for a run after %llu ms: the lane, "
               "its device context and the module are abandoned to the process",
               (unsigned long long)(w->close_timeout_ns / 1000000));
        wk_log_route_remove(w);
        keep_worker(w);
        return;
    }
    wk_trace_free(w);
    wk_callables_free(w);
    wk_signature_free_all(w);
    if (atomic_load_explicit(&w->stuck, memory_order_acquire)) {
        /* A launched run never finished: the device side still uses the
         * context, the run storage and the module's code. Keep them. */
        wk_log(w, SP_LOG_WARN,
               "worker closed after a run whose device side never finished: its device context "
               "and run storage are abandoned to the process");
        wk_log_route_remove(w);
        keep_worker(w);
        return;
    }
    if (w->ctx)
        w->m.simpler_destroy_device_context(w->ctx);
    /* After the context: its teardown's lines may still reach this sink. */
    wk_log_route_remove(w);
    for (uint32_t s = 0; s < SP_PIPELINE_MAX_DEPTH; s++)
        free(w->lease[s].run);
    wk_module_close(&w->m);
    pthread_mutex_destroy(&w->submit_lock);
    free(w);
}

SP_EXPORT int sp_worker_register_callable(sp_worker *w, uint32_t id, const void *blob, size_t size)
{
    if (!w)
        return SP_EINVAL;
    int rc = w->m.simpler_register_callable(w->ctx, id, blob, size);
    if (rc)
        return worker_fail(w, rc, "%s", w->m.simpler_last_error(w->ctx));
    /* The worker's copy names the kernels of this callable's traces. */
    if ((rc = wk_callable_keep(w, id, blob, size)) != SP_OK) {
        w->m.simpler_unregister_callable(w->ctx, id);
        return worker_fail(w, rc, "no host memory to keep callable %u (%zu bytes)", id, size);
    }
    /* Its argument signature, parsed once, checks every run (arg_check.c). */
    if ((rc = wk_signature_register(w, id, wk_callable_find(w, id)->view.orch_args)) != SP_OK) {
        wk_callable_drop(w, id);
        w->m.simpler_unregister_callable(w->ctx, id);
    }
    return rc;
}

SP_EXPORT int sp_worker_register_callable_file(sp_worker *w, uint32_t id, const char *path)
{
    if (!w || !path)
        return SP_EINVAL;
    void *blob = NULL;
    size_t size = 0;
    /* The tree's one whole-file reader (src/callable/read_file.c). */
    int rc =
        callable_read_file(path, "callable", &blob, &size, w->last_error, sizeof w->last_error);
    if (rc == SP_OK && size == 0)
        rc = worker_fail(w, SP_ESYS, "cannot read callable '%s': the file is empty", path);
    if (rc == SP_OK)
        rc = sp_worker_register_callable(w, id, blob, size);
    free(blob);
    return rc;
}

SP_EXPORT int sp_worker_unregister_callable(sp_worker *w, uint32_t id)
{
    if (!w)
        return SP_EINVAL;
    int rc = w->m.simpler_unregister_callable(w->ctx, id);
    if (rc)
        return worker_fail(w, rc, "%s", w->m.simpler_last_error(w->ctx));
    wk_callable_drop(w, id);
    wk_signature_drop(w, id);
    return SP_OK;
}

SP_EXPORT int sp_worker_run(sp_worker *w, uint32_t id, const sp_args *args,
                            const sp_call_config *config, sp_run_stats *stats)
{
    if (!w)
        return SP_EINVAL;
    sp_run_handle h;
    int rc = sp_worker_submit(w, id, args, config, &h);
    if (rc)
        return rc;
    return sp_worker_wait(w, &h, stats);
}

SP_EXPORT int sp_worker_device_info(sp_worker *w, sp_device_info *out)
{
    if (!w || !out)
        return SP_EINVAL;
    memset(out, 0, sizeof *out);
    int rc = w->m.simpler_device_info(w->ctx, out);
    return rc ? worker_fail(w, rc, "%s", w->m.simpler_last_error(w->ctx)) : SP_OK;
}

SP_EXPORT int sp_worker_forget(sp_worker *w, uint32_t id, const sp_args *args,
                               const sp_call_config *config)
{
    if (!w)
        return SP_EINVAL;
    int rc = w->m.simpler_forget_graph(w->ctx, id, args, config);
    return rc ? worker_fail(w, rc, "%s", w->m.simpler_last_error(w->ctx)) : SP_OK;
}

SP_EXPORT int sp_worker_graph_cache_info(sp_worker *w, sp_graph_cache_info *out)
{
    if (!w || !out)
        return SP_EINVAL;
    int rc = w->m.simpler_graph_cache_info(w->ctx, out);
    return rc ? worker_fail(w, rc, "%s", w->m.simpler_last_error(w->ctx)) : SP_OK;
}

SP_EXPORT const char *sp_worker_last_error(const sp_worker *w)
{
    return w ? w->last_error : "no worker";
}

SP_EXPORT const sp_pipeline_contract *sp_worker_contract(const sp_worker *w)
{
    return w ? w->m.simpler_get_pipeline_contract() : NULL;
}
