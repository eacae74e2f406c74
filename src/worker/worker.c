/* The worker: one loaded module, one device context, synchronous runs.
 * Module logging is bound to this process's logger so module lines look
 * like ours and follow SIMPLER_LOG. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "simpler/status.h"
#include "simpler/worker.h"
#include "worker/module_loader.h"

struct sp_worker {
    sp_module_api m;
    void *ctx;
    void *run_storage; /* one synchronous run at a time */
    size_t run_size;
    uint64_t next_run_id;
    char last_error[640];
};

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

/* Module log lines arrive fully formatted: pass them to our sink/stderr. */
static void module_log(int level, const char *line, void *user)
{
    (void)user;
    if (level >= sp_log_level())
        fprintf(stderr, "%s\n", line);
}

SP_EXPORT int sp_worker_open(const char *module_path, const sp_worker_options *opt, sp_worker **out,
                             char *err, size_t err_len)
{
    if (!out) {
        snprintf(err, err_len, "NULL output pointer");
        return SP_EINVAL;
    }
    *out = NULL;
    sp_worker *w = calloc(1, sizeof *w);
    if (!w)
        return SP_ENOMEM;
    int rc = sp_module_open(module_path, &w->m, err, err_len);
    if (rc) {
        free(w);
        return rc;
    }
    w->m.simpler_bind_logging(sp_log_level(), module_log, NULL);
    size_t align = 64;
    if ((rc = w->m.simpler_run_storage_size(&w->run_size, &align)) != SP_OK ||
        (rc = w->m.simpler_create_device_context(&w->ctx)) != SP_OK) {
        snprintf(err, err_len, "module setup failed: %s", sp_status_name(rc));
        sp_module_close(&w->m);
        free(w);
        return rc;
    }
    if (align < 64)
        align = 64;
    w->run_storage = aligned_alloc(align, (w->run_size + align - 1) / align * align);
    if (!w->run_storage) {
        w->m.simpler_destroy_device_context(w->ctx);
        sp_module_close(&w->m);
        free(w);
        return SP_ENOMEM;
    }
    memset(w->run_storage, 0, w->run_size);
    sp_worker_options o = {0};
    if (opt)
        o = *opt;
    rc = w->m.simpler_init(w->ctx, o.device_id, &o.prewarm);
    if (rc) {
        snprintf(err, err_len, "%s", w->m.simpler_last_error(w->ctx));
        sp_worker_close(w);
        return rc;
    }
    *out = w;
    return SP_OK;
}

SP_EXPORT void sp_worker_close(sp_worker *w)
{
    if (!w)
        return;
    if (w->ctx)
        w->m.simpler_destroy_device_context(w->ctx);
    free(w->run_storage);
    sp_module_close(&w->m);
    free(w);
}

SP_EXPORT int sp_worker_register_callable(sp_worker *w, uint32_t id, const void *blob, size_t size)
{
    if (!w)
        return SP_EINVAL;
    int rc = w->m.simpler_register_callable(w->ctx, id, blob, size);
    return rc ? worker_fail(w, rc, "%s", w->m.simpler_last_error(w->ctx)) : SP_OK;
}

SP_EXPORT int sp_worker_register_callable_file(sp_worker *w, uint32_t id, const char *path)
{
    if (!w || !path)
        return SP_EINVAL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return worker_fail(w, SP_ESYS, "cannot open callable '%s'", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *blob = size > 0 ? malloc((size_t)size) : NULL;
    int rc = SP_OK;
    if (!blob || fread(blob, 1, (size_t)size, f) != (size_t)size)
        rc = worker_fail(w, SP_ESYS, "cannot read callable '%s'", path);
    fclose(f);
    if (rc == SP_OK)
        rc = sp_worker_register_callable(w, id, blob, (size_t)size);
    free(blob);
    return rc;
}

SP_EXPORT int sp_worker_unregister_callable(sp_worker *w, uint32_t id)
{
    if (!w)
        return SP_EINVAL;
    int rc = w->m.simpler_unregister_callable(w->ctx, id);
    return rc ? worker_fail(w, rc, "%s", w->m.simpler_last_error(w->ctx)) : SP_OK;
}

SP_EXPORT int sp_worker_run(sp_worker *w, uint32_t id, const sp_args *args,
                            const sp_call_config *config, sp_run_stats *stats)
{
    if (!w)
        return SP_EINVAL;
    sp_run_descriptor d = {.run_id = ++w->next_run_id};
    void *run = w->run_storage;
    int rc = w->m.simpler_run(w->ctx, run, id, args, config, &d);
    if (rc) {
        worker_fail(w, rc, "%s", w->m.simpler_last_error(w->ctx));
        if (((uint64_t *)run)[0] == SP_RUN_STORAGE_MAGIC)
            w->m.simpler_finalize_run(w->ctx, run);
        return rc;
    }
    if (stats)
        w->m.simpler_run_stats(w->ctx, run, stats);
    rc = w->m.simpler_finalize_run(w->ctx, run);
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
