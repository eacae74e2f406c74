/* The worker: the host-side client that loads a runtime module, checks its
 * contract, attaches a device, registers callables and runs them. Every
 * failure is a negative status plus a message (sp_worker_last_error). */
#ifndef SIMPLER_WORKER_H
#define SIMPLER_WORKER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "simpler/export.h"
#include "simpler/log.h"
#include "simpler/module.h"
#include "simpler/settings.h"
#include "simpler/trace_export.h"
#include "simpler/types.h"

typedef struct sp_worker sp_worker;

typedef struct sp_worker_options {
    int device_id;          /* device to attach (default 0) */
    sp_call_config prewarm; /* geometry wishes: clusters, sched_threads (0 = default) */
    /* How long sp_worker_close waits for the runs still queued or running;
     * past it, what still runs is abandoned to the process and close
     * returns. 0: SP_WORKER_CLOSE_TIMEOUT_MS. */
    uint64_t close_timeout_ms;
    /* The device's and the runtime's knobs (simpler/settings.h); fields
     * left 0 are filled from the environment, then default. */
    sp_settings settings;
    /* Where sp_worker_open_runtime finds modules; NULL: SIMPLER_MODULE_PATH,
     * else <dir of libsimpler.so>/simpler (installed), else the directory
     * libsimpler.so itself is in (the build tree). */
    const char *module_dir;
    /* Where simpler's log lines go (the worker's, its module's and its
     * device's): NULL sends lines at log_level and above to stderr, where
     * the level defaults to warn (settings.log_level). The library writes
     * nothing to stderr but through this. The level and the module's and
     * device's lines are the process's: with several workers, they go to
     * the sink of the newest open worker that gave one (each worker's own
     * lines to its own); after sp_worker_close the sink is not called. */
    sp_log_sink log_sink;
    void *log_user;
    /* Write a trace of every run this worker waits for to this file (its
     * extension picks the format, sp_trace_format_of; a "%n" in it is
     * replaced by the run's sequence number, else each run overwrites it),
     * tracing runs whose config leaves trace_level 0 at SP_TRACE_TASKS.
     * NULL: SIMPLER_TRACE, else off. A file that cannot be written is
     * logged at warn and does not fail the run. */
    const char *trace_path;
} sp_worker_options;

#define SP_WORKER_CLOSE_TIMEOUT_MS 60000u

/* Load the module at `module_path`, validate it and attach the device.
 * Returns 0, or SP_EMODULE / SP_EMODULE_SYMBOL / SP_EABI / SP_ECONTRACT /
 * a device status, with the reason in `err`. */
SP_EXPORT int sp_worker_open(const char *module_path, const sp_worker_options *opt, sp_worker **out,
                             char *err, size_t err_len);
/* Open the module of `runtime` ("hbg", "tmr") on `platform` (NULL: "sim"),
 * libsimpler_<runtime>_<platform>.so in the module directory (see
 * module_dir), as sp_worker_open does. SP_EINVAL for a name outside
 * [a-z0-9_], SP_EMODULE when no such module exists, with the path in err. */
SP_EXPORT int sp_worker_open_runtime(const char *runtime, const char *platform,
                                     const sp_worker_options *opt, sp_worker **out, char *err,
                                     size_t err_len);
/* What the worker's device is: platform, id, geometry, memory and what of
 * it is committed (by every module on that device id), health. 0 or a
 * status (message in last error). */
SP_EXPORT int sp_worker_device_info(sp_worker *w, sp_device_info *out);
/* Detach the device and unload the module. NULL is ignored. Always
 * returns: runs still queued execute first, for at most close_timeout_ms;
 * a run that is still running then (or whose device side never finished,
 * SP_ESTALL) is abandoned with what it uses, and a warning is logged. */
SP_EXPORT void sp_worker_close(sp_worker *w);
/* Register a callable blob under `id`; 0 or a status (message in last error). */
SP_EXPORT int sp_worker_register_callable(sp_worker *w, uint32_t id, const void *blob, size_t size);
/* Read a callable blob file (.spc) and register it under `id`. */
SP_EXPORT int sp_worker_register_callable_file(sp_worker *w, uint32_t id, const char *path);
/* Unregister callable `id`; 0 or a status. */
SP_EXPORT int sp_worker_unregister_callable(sp_worker *w, uint32_t id);
/* Run callable `id` on `args` synchronously; outputs are copied back into
 * the host buffers of `args`. `stats` (may be NULL) gets the run's figures.
 * Returns 0 or the run's failure status. */
SP_EXPORT int sp_worker_run(sp_worker *w, uint32_t id, const sp_args *args,
                            const sp_call_config *config, sp_run_stats *stats);

/* ---- the async lane --------------------------------------------------------
 * submit prepares a run at once (in the caller's thread) and queues it; the
 * worker's lane thread launches queued runs one at a time in submit order,
 * so the next run is prepared while the current one executes. At most
 * sp_worker_lane_depth() runs may be submitted and not yet waited for. The
 * caller's args must stay valid, and are written with the outputs, until
 * the run is waited for. */

/* Names one submitted run; generation-counted, so a stale or replayed
 * handle is refused (SP_ESTALE) instead of naming another run. */
typedef struct sp_run_handle {
    uint64_t run_id;
    uint64_t epoch; /* process-unique */
    uint64_t generation;
    uint32_t slot;
    uint32_t reserved;
} sp_run_handle;

/* Prepare and queue a run. 0 and a handle; SP_EBUSY if every slot holds an
 * unwaited run; or the prepare's failure status (message in last error). */
SP_EXPORT int sp_worker_submit(sp_worker *w, uint32_t id, const sp_args *args,
                               const sp_call_config *config, sp_run_handle *out);
/* SP_RUN_COMPLETE (0) with the run's status folded in, SP_RUN_NOT_READY, the
 * run's failure status, or SP_ESTALE. Does not release the run. */
SP_EXPORT int sp_worker_poll(sp_worker *w, const sp_run_handle *h);
/* Wait for the run, fill `stats` (may be NULL), release its slot. Returns
 * the run's status, or SP_ESTALE for a handle already waited for. */
SP_EXPORT int sp_worker_wait(sp_worker *w, const sp_run_handle *h, sp_run_stats *stats);
/* sp_worker_wait, giving up after `timeout_ms` (0: only look): then
 * SP_ETIMEOUT, and the run stays in flight and its handle valid (wait again). */
SP_EXPORT int sp_worker_wait_for(sp_worker *w, const sp_run_handle *h, sp_run_stats *stats,
                                 uint64_t timeout_ms);
/* Runs that may be in flight at once: 2 with a module that prepares
 * concurrently, 1 otherwise. */
SP_EXPORT uint32_t sp_worker_lane_depth(const sp_worker *w);
/* The trace of the last run waited for (sp_worker_run / sp_worker_wait),
 * when its config had a trace_level; NULL otherwise. Valid until the next
 * wait or sp_worker_close. simpler/trace.h describes the records. */
SP_EXPORT const sp_run_trace *sp_worker_last_trace(const sp_worker *w);
/* Write the trace of the last run waited for (sp_worker_last_trace) with
 * the kernel names of its callable: sp_trace_write's formats and statuses;
 * SP_EINVAL when the last run was not traced. */
SP_EXPORT int sp_worker_write_trace(sp_worker *w, int format, const char *path);
/* sp_worker_write_trace into an open stream (sp_trace_write_file). */
SP_EXPORT int sp_worker_write_trace_file(sp_worker *w, int format, FILE *f);
/* ---- recorded graphs (sp_call_config.flags SP_CALL_REPLAY_*) -------------
 * The worker keeps the graphs of runs made with SP_CALL_REPLAY_AUTO, at
 * most settings.graph_cache_count of them in settings.graph_cache_bytes,
 * least recently used dropped first. */

/* Drop the graph a run of callable `id` on `args` with `config` (NULL: a
 * run with none; the key holds the config fields that shape a graph)
 * would replay; args NULL: every graph of the callable. 0, also when none
 * was kept. */
SP_EXPORT int sp_worker_forget(sp_worker *w, uint32_t id, const sp_args *args,
                               const sp_call_config *config);
/* What the worker keeps: counts, bytes, bounds, and how often it recorded,
 * replayed, evicted and re-recorded. */
SP_EXPORT int sp_worker_graph_cache_info(sp_worker *w, sp_graph_cache_info *out);

/* ---- device-resident buffers -----------------------------------------------
 * Device memory the worker owns across runs (weights, KV caches): a run
 * argument with SP_TENSOR_DEVICE (simpler/types.h) and `addr` inside such a
 * buffer is used in place, never staged. Freed by sp_worker_device_free or
 * at sp_worker_close. A buffer named by a run not yet waited for cannot be
 * freed or copied to or from (SP_EBUSY); a run argument outside every live
 * buffer is refused at submit (SP_EBADPTR, or SP_EBOUNDS past a buffer's
 * end), naming the argument; so are two device arguments of one run whose
 * ranges overlap without being the same (SP_EINVAL). Runs see a buffer in
 * submit order (the lane launches one at a time), but a host
 * orchestration (hbg) reads control values when the run is prepared,
 * which may be while the previous run still executes: keep a control
 * tensor an earlier run in flight writes staged, or wait first. */

/* Allocate `bytes` (> 0) of device memory; 0 and its address in *dev, or
 * SP_EINVAL / SP_EDEVMEM / SP_ENOMEM (message in last error). */
SP_EXPORT int sp_worker_device_alloc(sp_worker *w, uint64_t bytes, uint64_t *dev);
/* Free a buffer by its base: 0, SP_EBUSY (a run not yet waited for names
 * it), SP_EDOUBLEFREE (not a live buffer of this worker: freed already or
 * never allocated here), SP_EBADPTR (inside a buffer, not its base). */
SP_EXPORT int sp_worker_device_free(sp_worker *w, uint64_t dev);
/* Copy `bytes` between host memory and [dev, dev + bytes), which must lie
 * in one live buffer (SP_EBADPTR / SP_EBOUNDS) that no run not yet waited
 * for names (SP_EBUSY). */
SP_EXPORT int sp_worker_copy_to_device(sp_worker *w, uint64_t dev, const void *host,
                                       uint64_t bytes);
SP_EXPORT int sp_worker_copy_from_device(sp_worker *w, void *host, uint64_t dev, uint64_t bytes);

/* A host address for [dev, dev + bytes) inside one live buffer (the
 * platform's host-map: the same bytes the device sees, no copy). Unlike
 * the copies it does not refuse a buffer a run in flight names: ordering
 * the host's accesses against runs is then the caller's job (level 3 does
 * it by dependencies). 0 and *host; SP_EBADPTR / SP_EBOUNDS; SP_ENOTSUP on
 * a backend without host-map. Unmap before sp_worker_device_free
 * (SP_EMAPPED otherwise); each map needs its own unmap. */
SP_EXPORT int sp_worker_device_map(sp_worker *w, uint64_t dev, uint64_t bytes, void **host);
SP_EXPORT int sp_worker_device_unmap(sp_worker *w, uint64_t dev);

/* Text of the last failure on this worker ("" if none). */
SP_EXPORT const char *sp_worker_last_error(const sp_worker *w);
/* The module's pipeline contract (valid while the worker is open). */
SP_EXPORT const sp_pipeline_contract *sp_worker_contract(const sp_worker *w);

#endif
