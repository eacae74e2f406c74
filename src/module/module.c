/* The runtime module C ABI (DESIGN.md §5): contexts, device memory,
 * callables and the run lifecycle with its state machine, slot and bank
 * holding, run identity in errors, and launch acceptance. The runtime the
 * build picked for this module (mod_runtime(): its rt_ops table,
 * src/runtime/runtime.h) does the actual work; a failing runtime call
 * leaves its message in the run's buffer, which becomes the context's last
 * error. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/wait.h"
#include "module/module_ctx.h"
#include "simpler/status.h"

#define EXPORT SP_EXPORT

static int ctx_fail(mod_ctx *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int ctx_fail(mod_ctx *c, int status, const char *fmt, ...)
{
    char msg[SP_MODULE_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c) {
        pthread_mutex_lock(&c->lock);
        snprintf(c->last_error, sizeof c->last_error, "%s: %s", sp_status_name(status), msg);
        pthread_mutex_unlock(&c->lock);
    }
    /* The message is the caller's to report (the status and last error):
     * logged again only at debug, so an error is printed once. */
    SP_DEBUG("%s: %s (%s)", sp_status_name(status), msg, sp_status_hint(status));
    return status;
}

/* "run 7" for error messages: what the caller knows the run by. Its slot,
 * bank, generation and epoch are the runtime's counters, not the user's:
 * they go to a debug line beside the message. */
static void run_identity(const sp_run_descriptor *d, char *buf, size_t len)
{
    snprintf(buf, len, "run %llu", (unsigned long long)d->run_id);
    SP_DEBUG("run %llu: slot %u, bank %u, generation %llu, dispatch %llu, epoch %llu",
             (unsigned long long)d->run_id, d->pipeline_slot, d->arena_bank,
             (unsigned long long)d->generation, (unsigned long long)d->dispatch_id,
             (unsigned long long)d->run_epoch);
}

static int run_fail(mod_ctx *c, const mod_run *r, int status, const char *what)
{
    char id[160];
    run_identity(&r->desc, id, sizeof id);
    return ctx_fail(c, status, "%s: %s", id, what);
}

EXPORT const sp_pipeline_contract *simpler_get_pipeline_contract(void)
{
    return mod_runtime()->contract();
}

EXPORT int simpler_bind_logging(int level, sp_module_log_sink sink, void *user)
{
    if (level >= SP_LOG_DEBUG && level <= SP_LOG_OFF)
        sp__log_set_level(level);
    sp__log_set_sink(sink, user);
    return SP_OK;
}

EXPORT int simpler_create_device_context(void **ctx_out)
{
    if (!ctx_out)
        return SP_EINVAL;
    mod_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return SP_ENOMEM;
    pthread_mutex_init(&c->lock, NULL);
    if (rt_graph_cache_init(&c->graphs, 0, 0) != SP_OK) {
        pthread_mutex_destroy(&c->lock);
        free(c);
        return SP_ESYS;
    }
    if (rt_device_buffers_init(&c->owned) != SP_OK) {
        rt_graph_cache_destroy(&c->graphs);
        pthread_mutex_destroy(&c->lock);
        free(c);
        return SP_ESYS;
    }
    c->rt = mod_runtime();
    c->device_id = -1;
    c->pipeline_depth = c->rt->contract()->pipeline_depth;
    for (int s = 0; s < SP_PIPELINE_MAX_DEPTH; s++)
        c->dev_slot[s] = c->dev_bank[s] = UINT32_MAX;
    *ctx_out = c;
    return SP_OK;
}

EXPORT int simpler_finalize_device(void *ctx)
{
    mod_ctx *c = ctx;
    if (!c)
        return SP_EINVAL;
    if (c->prepared_runs)
        return ctx_fail(c, SP_EBUSY, "device %d has %u run(s) prepared; finalize them first",
                        c->device_id, c->prepared_runs);
    for (int i = 0; i < SP_MODULE_MAX_CALLABLES; i++) {
        if (c->callables[i])
            rt_graph_cache_forget(&c->graphs, (uint32_t)i, NULL);
        rt_loaded_callable_unload(&c->reg_api, c->callables[i]);
        c->callables[i] = NULL;
    }
    if (c->dev)
        sp_device_close(c->dev);
    c->dev = NULL;
    rt_device_buffers_clear(&c->owned);
    c->device_id = -1;
    return SP_OK;
}

EXPORT int simpler_destroy_device_context(void *ctx)
{
    mod_ctx *c = ctx;
    if (!c)
        return SP_EINVAL;
    int rc = simpler_finalize_device(c);
    if (rc)
        return rc;
    for (int s = 0; s < SP_PIPELINE_MAX_DEPTH; s++)
        for (int b = 0; b < SP_HOST_SCRATCH_SLOT_BUFFERS; b++)
            free(c->scratch[s][b].ptr);
    rt_graph_cache_destroy(&c->graphs);
    rt_device_buffers_destroy(&c->owned);
    pthread_mutex_destroy(&c->lock);
    free(c);
    return SP_OK;
}

EXPORT int simpler_init(void *ctx, int device_id, const sp_call_config *prewarm,
                        const sp_settings *settings)
{
    mod_ctx *c = ctx;
    if (!c)
        return SP_EINVAL;
    if (c->dev)
        return ctx_fail(c, SP_ESTATE, "context already attached to device %d", c->device_id);
    char why[256] = "";
    if (settings && rt_settings_check(settings, why, sizeof why) != SP_OK)
        return ctx_fail(c, SP_EINVAL, "cannot attach device %d: %s", device_id, why);
    sp_device_options opt;
    memset(&opt, 0, sizeof opt);
    if (prewarm) {
        opt.geometry.clusters = prewarm->clusters;
        /* The schedulers plus the orchestrator's thread (runtime.h); the
         * largest count would wrap to 0, "the default". */
        if (prewarm->sched_threads == UINT32_MAX)
            return ctx_fail(c, SP_EGEOMETRY, "cannot attach device %d: %u scheduler threads",
                            device_id, prewarm->sched_threads);
        if (prewarm->sched_threads)
            opt.geometry.aicpu_threads = prewarm->sched_threads + 1;
    }
    if (settings)
        opt.settings = *settings;
    int rc = sp_device_open(device_id, &opt, &c->dev);
    if (rc)
        return ctx_fail(c, rc, "cannot attach device %d", device_id);
    /* A device already open keeps its geometry: a larger wish is not met,
     * and a run asking for it would fail later without this line. */
    const sp_geometry *geo = sp_device_geometry(c->dev);
    if (geo && ((opt.geometry.aicpu_threads && geo->aicpu_threads < opt.geometry.aicpu_threads) ||
                (opt.geometry.clusters && geo->clusters < opt.geometry.clusters)))
        SP_WARN("device %d was already open with %u clusters and %u scheduler threads; "
                "prewarm asks for %u and %u, which it cannot give: set prewarm in the worker "
                "that opens the device first",
                device_id, geo->clusters, geo->aicpu_threads > 1 ? geo->aicpu_threads - 1 : 1,
                opt.geometry.clusters ? opt.geometry.clusters : geo->clusters,
                opt.geometry.aicpu_threads ? opt.geometry.aicpu_threads - 1
                                           : (geo->aicpu_threads > 1 ? geo->aicpu_threads - 1 : 1));
    /* Registration's way to the platform: a value of no run (it loads
     * kernels and uploads tables, never touches run storage). */
    if ((rc = sp_device_bind_host_api(c->dev, SP_HOST_API_NO_RUN, SP_HOST_API_NO_RUN,
                                      &c->reg_api)) != SP_OK) {
        sp_device_close(c->dev);
        c->dev = NULL;
        return ctx_fail(c, rc, "device %d: cannot bind the host API for registration", device_id);
    }
    c->device_id = device_id;
    memset(&c->settings, 0, sizeof c->settings);
    if (settings)
        c->settings = *settings;
    /* A depth below the contract's: slots and banks past it are refused. */
    uint32_t depth = c->rt->contract()->pipeline_depth;
    if (c->settings.pipeline_depth && c->settings.pipeline_depth < depth)
        depth = c->settings.pipeline_depth;
    c->pipeline_depth = depth;
    /* The bounds of the recorded graphs (empty before a device is attached). */
    c->graphs.max_count =
        c->settings.graph_cache_count ? c->settings.graph_cache_count : RT_GRAPH_CACHE_COUNT;
    c->graphs.max_bytes =
        c->settings.graph_cache_bytes ? c->settings.graph_cache_bytes : RT_GRAPH_CACHE_BYTES;
    return SP_OK;
}

EXPORT int simpler_device_info(void *ctx, sp_device_info *out)
{
    mod_ctx *c = ctx;
    if (!c || !out)
        return SP_EINVAL;
    if (!c->dev)
        return ctx_fail(c, SP_ESTATE,
                        "device_info: context has no device: call simpler_init first");
    int rc = sp_device_describe(c->dev, out);
    return rc ? ctx_fail(c, rc, "device_info: device %d cannot be described", c->device_id) : SP_OK;
}

EXPORT const char *simpler_last_error(void *ctx)
{
    mod_ctx *c = ctx;
    return c ? c->last_error : "no context";
}

static int need_device(mod_ctx *c)
{
    if (!c)
        return SP_EINVAL;
    if (!c->dev)
        return ctx_fail(c, SP_ESTATE, "context has no device: call simpler_init first");
    return SP_OK;
}

EXPORT int simpler_device_malloc(void *ctx, uint64_t bytes, uint64_t *dev_out)
{
    int rc = need_device(ctx);
    if (rc)
        return rc;
    if (!dev_out)
        return ctx_fail(ctx, SP_EINVAL, "device_malloc: NULL output pointer");
    mod_ctx *c = ctx;
    rc = sp_device_malloc(c->dev, bytes, dev_out);
    if (rc)
        return ctx_fail(ctx, rc, "device_malloc of %llu bytes", (unsigned long long)bytes);
    /* A run argument may name it (SP_TENSOR_DEVICE). */
    if (rt_device_buffers_add(&c->owned, *dev_out, bytes) != SP_OK) {
        sp_device_free(c->dev, *dev_out);
        *dev_out = 0;
        return ctx_fail(ctx, SP_ENOMEM, "device_malloc: no host memory to track the buffer");
    }
    return 0;
}

EXPORT int simpler_device_free(void *ctx, uint64_t dev_ptr)
{
    int rc = need_device(ctx);
    if (rc)
        return rc;
    rc = sp_device_free(((mod_ctx *)ctx)->dev, dev_ptr);
    if (rc == SP_OK)
        rt_device_buffers_remove(&((mod_ctx *)ctx)->owned, dev_ptr);
    return rc ? ctx_fail(ctx, rc, "device_free of 0x%llx", (unsigned long long)dev_ptr) : 0;
}

EXPORT int simpler_copy_to_device(void *ctx, uint64_t dev_dst, const void *src, uint64_t bytes)
{
    int rc = need_device(ctx);
    if (rc)
        return rc;
    rc = sp_device_copy_to(((mod_ctx *)ctx)->dev, dev_dst, src, bytes);
    return rc ? ctx_fail(ctx, rc, "copy_to_device 0x%llx (%llu bytes)", (unsigned long long)dev_dst,
                         (unsigned long long)bytes)
              : 0;
}

EXPORT int simpler_copy_from_device(void *ctx, void *dst, uint64_t dev_src, uint64_t bytes)
{
    int rc = need_device(ctx);
    if (rc)
        return rc;
    rc = sp_device_copy_from(((mod_ctx *)ctx)->dev, dst, dev_src, bytes);
    return rc ? ctx_fail(ctx, rc, "copy_from_device 0x%llx (%llu bytes)",
                         (unsigned long long)dev_src, (unsigned long long)bytes)
              : 0;
}

EXPORT int simpler_run_storage_size(size_t *size, size_t *align)
{
    if (!size || !align)
        return SP_EINVAL;
    *size = sizeof(mod_run);
    *align = 64;
    return SP_OK;
}

EXPORT int simpler_register_callable(void *ctx, uint32_t id, const void *blob, size_t size)
{
    mod_ctx *c = ctx;
    int rc = need_device(c);
    if (rc)
        return rc;
    if (!blob || !size)
        return ctx_fail(c, SP_EINVAL, "register_callable %u: no blob", id);
    if (id >= SP_MODULE_MAX_CALLABLES)
        return ctx_fail(c, SP_ECALLABLE, "callable id %u out of range (< %d)", id,
                        SP_MODULE_MAX_CALLABLES);
    pthread_mutex_lock(&c->lock);
    bool busy = c->prepared_runs > 0, taken = c->callables[id] != NULL;
    pthread_mutex_unlock(&c->lock);
    if (busy)
        return ctx_fail(c, SP_EBUSY, "register_callable %u while %u run(s) are prepared", id,
                        c->prepared_runs);
    if (taken)
        return ctx_fail(c, SP_ECALLABLE, "callable id %u is already registered", id);
    char err[256] = "";
    rt_loaded_callable *lc;
    rc = rt_loaded_callable_load(&c->reg_api, id, blob, size, &lc, err, sizeof err);
    if (rc)
        return ctx_fail(c, rc, "%s", err);
    c->callables[id] = lc;
    return SP_OK;
}

EXPORT int simpler_unregister_callable(void *ctx, uint32_t id)
{
    mod_ctx *c = ctx;
    int rc = need_device(c);
    if (rc)
        return rc;
    if (id >= SP_MODULE_MAX_CALLABLES || !c->callables[id])
        return ctx_fail(c, SP_ECALLABLE, "unregister_callable: no callable %u", id);
    if (c->prepared_runs)
        return ctx_fail(c, SP_EBUSY, "unregister_callable %u while %u run(s) are prepared", id,
                        c->prepared_runs);
    rt_graph_cache_forget(&c->graphs, id, NULL);
    rt_loaded_callable_unload(&c->reg_api, c->callables[id]);
    c->callables[id] = NULL;
    return SP_OK;
}

EXPORT int simpler_forget_graph(void *ctx, uint32_t callable_id, const sp_args *args,
                                const sp_call_config *config)
{
    mod_ctx *c = ctx;
    int rc = need_device(c);
    if (rc)
        return rc;
    if (callable_id >= SP_MODULE_MAX_CALLABLES || !c->callables[callable_id])
        return ctx_fail(c, SP_ECALLABLE, "forget_graph: no callable %u", callable_id);
    if (!args) {
        rt_graph_cache_forget(&c->graphs, callable_id, NULL);
        return SP_OK;
    }
    rt_graph_key *k = malloc(sizeof *k);
    if (!k)
        return ctx_fail(c, SP_ENOMEM, "forget_graph: no host memory for the key");
    /* The key a run on these arguments with this config makes: its
     * checking mode resolved as prepare resolves it. */
    rt_prepare p = {.callable = c->callables[callable_id]};
    if (config)
        p.config = *config;
    rt_run_defaults(&p, &c->settings);
    rc = rt_graph_key_build(k, c->callables[callable_id], args, &p.config, p.check);
    if (rc == SP_OK)
        rt_graph_cache_forget(&c->graphs, callable_id, k);
    free(k);
    if (rc == SP_ENOTSUP)
        return SP_OK; /* an orchestration that is never kept */
    return rc ? ctx_fail(c, rc, "forget_graph: callable %u: the arguments make no key", callable_id)
              : SP_OK;
}

EXPORT int simpler_graph_cache_info(void *ctx, sp_graph_cache_info *out)
{
    mod_ctx *c = ctx;
    if (!c || !out)
        return SP_EINVAL;
    rt_graph_cache_info(&c->graphs, out);
    return SP_OK;
}

EXPORT int simpler_device_host_map(void *ctx, uint64_t dev, uint64_t bytes, void **host)
{
    int rc = need_device(ctx);
    if (rc)
        return rc;
    mod_ctx *c = ctx;
    if (!host)
        return ctx_fail(c, SP_EINVAL, "device_host_map: NULL output pointer");
    *host = NULL;
    if (c->settings.sim.no_host_map)
        return ctx_fail(c, SP_ENOTSUP,
                        "device_host_map: host-map is off (settings.sim.no_host_map)");
    void *p = sp_device_host_map(c->dev, dev, bytes);
    if (!p)
        return ctx_fail(c, SP_EBADPTR,
                        "device_host_map: [0x%llx, +%llu) is not inside one live allocation",
                        (unsigned long long)dev, (unsigned long long)bytes);
    *host = p;
    return SP_OK;
}

EXPORT int simpler_device_host_unmap(void *ctx, uint64_t dev)
{
    int rc = need_device(ctx);
    if (rc)
        return rc;
    rc = sp_device_host_unmap(((mod_ctx *)ctx)->dev, dev);
    return rc ? ctx_fail(ctx, rc, "device_host_unmap 0x%llx", (unsigned long long)dev) : SP_OK;
}

/* Take the run's slot and bank, or refuse if either is held or out of range. */
static int hold_slot_bank(mod_ctx *c, const sp_run_descriptor *d, char *why, size_t len)
{
    uint32_t depth = c->pipeline_depth;
    if (d->pipeline_slot >= depth || d->arena_bank >= depth) {
        snprintf(why, len, "slot %u / bank %u out of range for pipeline depth %u%s",
                 d->pipeline_slot, d->arena_bank, depth,
                 c->settings.pipeline_depth == depth ? " (settings.pipeline_depth)" : "");
        return SP_ESLOT;
    }
    int rc = SP_OK;
    pthread_mutex_lock(&c->lock);
    if (c->slot_held[d->pipeline_slot] || c->bank_held[d->arena_bank]) {
        snprintf(why, len, "slot %u or bank %u is held by a prepared run", d->pipeline_slot,
                 d->arena_bank);
        rc = SP_EBUSY;
    }
    /* Ids are identity: two runs in flight may not share one (0 = unset). */
    for (uint32_t s = 0; rc == SP_OK && s < SP_PIPELINE_MAX_DEPTH; s++) {
        const sp_run_descriptor *h = &c->held[s];
        if (!c->slot_held[s])
            continue;
        if ((d->run_id && h->run_id == d->run_id) ||
            (d->dispatch_id && h->dispatch_id == d->dispatch_id)) {
            snprintf(why, len, "run id %llu / dispatch id %llu already in flight in slot %u",
                     (unsigned long long)d->run_id, (unsigned long long)d->dispatch_id, s);
            rc = SP_EDUPLICATE;
        }
    }
    /* The storage itself is the device's: lease a slot and a bank no other
     * run in flight on the device holds, whichever context it belongs to. */
    uint32_t ds = UINT32_MAX, db = UINT32_MAX;
    if (rc == SP_OK &&
        ((rc = sp_device_storage_lease(c->dev, SP_STORAGE_SLOT, c->dev_slot[d->pipeline_slot],
                                       &ds)) != SP_OK ||
         (rc = sp_device_storage_lease(c->dev, SP_STORAGE_BANK, c->dev_bank[d->arena_bank], &db)) !=
             SP_OK)) {
        if (ds != UINT32_MAX)
            sp_device_storage_unlease(c->dev, SP_STORAGE_SLOT, ds);
        snprintf(why, len,
                 "device %d: all %d run-storage slots or banks are held by runs in flight "
                 "(of every context on the device); wait for one",
                 c->device_id, SP_DEVICE_STORAGE_SLOTS);
    }
    if (rc == SP_OK) {
        c->dev_slot[d->pipeline_slot] = ds;
        c->dev_bank[d->arena_bank] = db;
        c->slot_held[d->pipeline_slot] = true;
        c->bank_held[d->arena_bank] = true;
        c->held[d->pipeline_slot] = *d;
        c->prepared_runs++;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

static void release_slot_bank(mod_ctx *c, const sp_run_descriptor *d)
{
    pthread_mutex_lock(&c->lock);
    sp_device_storage_unlease(c->dev, SP_STORAGE_SLOT, c->dev_slot[d->pipeline_slot]);
    sp_device_storage_unlease(c->dev, SP_STORAGE_BANK, c->dev_bank[d->arena_bank]);
    c->slot_held[d->pipeline_slot] = false;
    c->bank_held[d->arena_bank] = false;
    memset(&c->held[d->pipeline_slot], 0, sizeof c->held[0]);
    c->prepared_runs--;
    pthread_mutex_unlock(&c->lock);
}

EXPORT int simpler_prepare_run(void *ctx, void *run, uint32_t callable_id, const sp_args *args,
                               const sp_call_config *config, const sp_run_descriptor *desc)
{
    mod_ctx *c = ctx;
    int rc = need_device(c);
    if (rc)
        return rc;
    mod_run *r = run;
    if (!r || !desc || !args)
        return ctx_fail(c, SP_EINVAL, "prepare_run: NULL run storage, arguments or descriptor");
    if (((uintptr_t)r & 63) != 0)
        return ctx_fail(c, SP_EINVAL, "prepare_run: run storage is not 64-byte aligned");
    if (r->magic != 0 || r->state != RUN_EMPTY)
        return ctx_fail(c, SP_ESTATE, "prepare_run: run storage is in use or not zeroed");
    if (c->unusable) {
        char id[160];
        run_identity(desc, id, sizeof id);
        return ctx_fail(c, SP_EUNUSABLE,
                        "%s: prepare_run: device %d is unusable since a launch half-started", id,
                        c->device_id);
    }
    if (callable_id >= SP_MODULE_MAX_CALLABLES || !c->callables[callable_id]) {
        char id[160];
        run_identity(desc, id, sizeof id);
        return ctx_fail(c, SP_ECALLABLE, "%s: prepare_run: no callable %u registered", id,
                        callable_id);
    }
    char why[SP_MODULE_ERR_LEN] = "";
    r->desc = *desc;
    if ((rc = hold_slot_bank(c, desc, why, sizeof why)) != SP_OK) {
        memset(r, 0, sizeof *r);
        char id[160];
        run_identity(desc, id, sizeof id);
        return ctx_fail(c, rc, "%s: prepare_run: %s", id, why);
    }
    /* Bound to the device's storage this run leased, not to the
     * descriptor's slot and bank, which only this context knows. */
    rc = sp_device_bind_host_api(c->dev, c->dev_slot[desc->pipeline_slot],
                                 c->dev_bank[desc->arena_bank], &r->api);
    if (rc)
        snprintf(r->err, sizeof r->err, "binding the host API: %s", sp_status_name(rc));
    rt_prepare p = {
        .api = &r->api,
        .callable = c->callables[callable_id],
        .args = args,
        .scratch = c->scratch[desc->pipeline_slot],
        .graphs = &c->graphs,
        .dev_bank = c->dev_bank[desc->arena_bank],
        .err = r->err,
        .err_len = sizeof r->err,
    };
    if (config)
        p.config = *config;
    rt_run_defaults(&p, &c->settings);
    p.replay = (p.config.flags & SP_CALL_REPLAY_ONLY)   ? RT_REPLAY_ONLY
               : (p.config.flags & SP_CALL_REPLAY_AUTO) ? RT_REPLAY_AUTO
                                                        : RT_REPLAY_OFF;
    /* Device-resident arguments only in this context's own buffers. */
    if (rc == SP_OK)
        rc = rt_device_buffers_check_args(&c->owned, args, r->err, sizeof r->err);
    if (rc == SP_OK)
        rc = c->rt->prepare(&p, &r->rt);
    if (rc == SP_EDEVMEM) {
        /* Name the limit that was hit: the device's size and what is in use
         * (after the failed request was rolled back). */
        size_t n = strlen(r->err);
        snprintf(r->err + n, sizeof r->err - n, " (device %d memory: %llu of %llu bytes in use)",
                 c->device_id, (unsigned long long)sp_device_committed_bytes(c->dev),
                 (unsigned long long)sp_device_memory_bytes(c->dev));
    }
    if (rc) {
        run_fail(c, r, rc, r->err);
        release_slot_bank(c, desc);
        memset(r, 0, sizeof *r);
        return rc;
    }
    r->callable_id = callable_id;
    r->owner = c;
    r->state = RUN_PREPARED;
    r->magic = SP_RUN_STORAGE_MAGIC;
    return SP_OK;
}

static int check_run(mod_ctx *c, mod_run *r, const char *op)
{
    if (!c)
        return SP_EINVAL;
    if (!r)
        return ctx_fail(c, SP_EINVAL, "%s: NULL run storage", op);
    if (r->magic != SP_RUN_STORAGE_MAGIC)
        return ctx_fail(c, SP_ESTATE, "%s: run storage holds no prepared run", op);
    /* Another context's run would release this one's slots and banks. */
    if (r->owner != c)
        return ctx_fail(c, SP_EINVAL, "%s: run storage was prepared by another context", op);
    return SP_OK;
}

EXPORT int simpler_launch_run(void *ctx, void *run)
{
    mod_ctx *c = ctx;
    mod_run *r = run;
    int rc = check_run(c, r, "launch_run");
    if (rc)
        return rc;
    if (r->state != RUN_PREPARED)
        return run_fail(c, r, SP_ESTATE, "launch_run: already launched");
    r->err[0] = '\0';
    rc = c->rt->launch(r->rt);
    if (rc == SP_ELAUNCH_PARTIAL) {
        /* Part of the device side runs: neither this run nor the device can
         * be trusted. The run is over; the device refuses runs until the
         * context is destroyed and created again. */
        pthread_mutex_lock(&c->lock);
        c->unusable = true;
        pthread_mutex_unlock(&c->lock);
        r->state = RUN_DONE;
        r->result = rc;
        return run_fail(c, r, rc, r->err);
    }
    if (rc)
        return run_fail(c, r, rc, r->err); /* still prepared: may be finalized */
    r->state = RUN_LAUNCHED;
    /* Acceptance: only now is the device side really running. */
    if (r->desc.accepted_state)
        atomic_store_explicit(r->desc.accepted_state, r->desc.accepted_value, memory_order_release);
    return SP_OK;
}

static int settle(mod_ctx *c, mod_run *r, int rc)
{
    r->state = RUN_DONE;
    r->result = rc;
    c->rt->stats(r->rt, &r->stats);
    return rc ? run_fail(c, r, rc, r->err) : SP_OK;
}

EXPORT int simpler_poll_run(void *ctx, void *run)
{
    mod_ctx *c = ctx;
    mod_run *r = run;
    int rc = check_run(c, r, "poll_run");
    if (rc)
        return rc;
    if (r->state == RUN_DONE)
        return r->result;
    if (r->state != RUN_LAUNCHED)
        return run_fail(c, r, SP_ESTATE, "poll_run: not launched");
    r->err[0] = '\0';
    rc = c->rt->poll(r->rt);
    if (rc == SP_RUN_NOT_READY)
        return rc;
    return settle(c, r, rc);
}

EXPORT int simpler_wait_run(void *ctx, void *run, uint64_t timeout_ns)
{
    mod_ctx *c = ctx;
    mod_run *r = run;
    int rc = check_run(c, r, "wait_run");
    if (rc)
        return rc;
    if (r->state == RUN_DONE)
        return r->result;
    if (r->state != RUN_LAUNCHED)
        return run_fail(c, r, SP_ESTATE, "wait_run: not launched");
    r->err[0] = '\0';
    uint64_t deadline = timeout_ns ? sp_now_ns() + timeout_ns : 0;
    rc = c->rt->wait(r->rt, deadline);
    if (rc == SP_ETIMEOUT)
        return run_fail(c, r, rc, r->err); /* still running: wait again */
    return settle(c, r, rc);
}

EXPORT int simpler_finalize_run(void *ctx, void *run)
{
    mod_ctx *c = ctx;
    mod_run *r = run;
    int rc = check_run(c, r, "finalize_run");
    if (rc)
        return rc;
    if (r->state == RUN_LAUNCHED)
        return run_fail(c, r, SP_EBUSY, "finalize_run: still running; wait for it first");
    r->err[0] = '\0';
    int ok = r->state == RUN_DONE && r->result == SP_OK;
    rc = c->rt->finalize(r->rt, ok);
    r->rt = NULL;
    sp_run_descriptor d = r->desc;
    if (rc)
        run_fail(c, r, rc, r->err);
    release_slot_bank(c, &d);
    memset(r, 0, sizeof *r); /* re-zeroed: the storage may be reused */
    return rc;
}

EXPORT int simpler_run_stats(void *ctx, void *run, sp_run_stats *out)
{
    mod_ctx *c = ctx;
    mod_run *r = run;
    int rc = check_run(c, r, "run_stats");
    if (rc)
        return rc;
    if (!out)
        return ctx_fail(c, SP_EINVAL, "run_stats: NULL output");
    if (r->state != RUN_DONE)
        return run_fail(c, r, SP_ESTATE, "run_stats: run has not completed");
    *out = r->stats;
    return SP_OK;
}

EXPORT int simpler_probe_storage(void *ctx, uint32_t pipeline_slot, uint32_t arena_bank,
                                 sp_storage_probe *out)
{
    mod_ctx *c = ctx;
    int rc = need_device(c);
    if (rc)
        return rc;
    if (!out)
        return ctx_fail(c, SP_EINVAL, "probe_storage: NULL output");
    if (pipeline_slot >= SP_PIPELINE_MAX_DEPTH || arena_bank >= SP_PIPELINE_MAX_DEPTH)
        return ctx_fail(c, SP_ESLOT, "probe_storage: slot %u / bank %u out of range (depth %d)",
                        pipeline_slot, arena_bank, SP_PIPELINE_MAX_DEPTH);
    /* What this context's slot and bank use: the device storage they
     * leased last (nothing before a first run). */
    pthread_mutex_lock(&c->lock);
    uint32_t ds = c->dev_slot[pipeline_slot], db = c->dev_bank[arena_bank];
    pthread_mutex_unlock(&c->lock);
    sp_arena a;
    rc = sp_device_probe_storage(c->dev, ds == UINT32_MAX ? 0 : ds, db == UINT32_MAX ? 0 : db,
                                 &out->retained, &out->retained_bytes, &a);
    if (rc)
        return ctx_fail(c, rc, "probe_storage: slot %u / bank %u", pipeline_slot, arena_bank);
    if (ds == UINT32_MAX)
        out->retained = out->retained_bytes = 0;
    if (db == UINT32_MAX)
        memset(&a, 0, sizeof a);
    out->heap = a.heap;
    out->shm = a.shm;
    out->image = a.image;
    out->heap_bytes = a.size.heap_bytes;
    out->shm_bytes = a.size.shm_bytes;
    out->image_bytes = a.size.image_bytes;
    return SP_OK;
}

EXPORT int simpler_run(void *ctx, void *run, uint32_t callable_id, const sp_args *args,
                       const sp_call_config *config, const sp_run_descriptor *desc)
{
    int rc = simpler_prepare_run(ctx, run, callable_id, args, config, desc);
    if (rc)
        return rc;
    rc = simpler_launch_run(ctx, run);
    if (rc == SP_OK)
        rc = simpler_wait_run(ctx, run, 0);
    /* The caller reads stats before finalize; simpler_run leaves the run
     * DONE so it can, and the caller finalizes. */
    if (rc && ((mod_run *)run)->state != RUN_DONE) {
        simpler_finalize_run(ctx, run);
        return rc;
    }
    return rc;
}

EXPORT int simpler_run_trace(void *ctx, void *run, sp_run_trace *io)
{
    mod_ctx *c = ctx;
    mod_run *r = run;
    int rc = check_run(c, r, "run_trace");
    if (rc)
        return rc;
    if (!io)
        return ctx_fail(c, SP_EINVAL, "run_trace: NULL output");
    if (r->state != RUN_DONE)
        return run_fail(c, r, SP_ESTATE, "run_trace: run has not completed");
    rc = c->rt->trace(r->rt, io);
    return rc ? run_fail(c, r, rc, "run_trace: reading the trace buffer back") : SP_OK;
}
