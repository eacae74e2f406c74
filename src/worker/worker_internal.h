/* The worker's state, shared by its files: worker.c (open, callables,
 * synchronous runs), lane.c (the async lane). Not part of the public API. */
#ifndef SP_WORKER_INTERNAL_H
#define SP_WORKER_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "common/wait.h"
#include "simpler/callable.h"
#include "simpler/worker.h"
#include "worker/module_loader.h"

/* Callable ids the worker keeps an argument signature for (the modules'
 * own limit: an id at or past it is refused at registration). */
#define WK_MAX_CALLABLES 256u

/* A lease goes FREE -> RESERVED (being prepared) -> PREPARED (queued) ->
 * RUNNING (launched by the lane) -> DONE (result kept) -> FREE (waited). */
enum {
    LEASE_FREE = 0,
    LEASE_PREPARED = 1,
    LEASE_RUNNING = 2,
    LEASE_DONE = 3,
    LEASE_RESERVED = 4,
};

/* One pipeline slot's lease: the run that holds the slot, from submit to wait. */
typedef struct wk_lease {
    _Alignas(SP_CACHE_LINE) sp__waitword state; /* LEASE_*: waiters park on it */
    uint64_t generation;                        /* bumped at each acquire; 0 never valid */
    uint64_t epoch;
    uint64_t run_id;
    uint64_t dispatch_id;
    void *run;               /* the module's run storage for this slot */
    uint64_t run_timeout_ns; /* the lane's bound on the launched run; 0: none */
    int result;
    sp_run_stats stats;
    char error[640];
    sp_run_trace trace;   /* the run's trace (trace.c); buffers reused */
    uint32_t callable_id; /* what the run runs (the trace's kernel names) */
    /* The device buffers (sp_worker_device_alloc) the run's arguments name,
     * by base address, each held once from submit to wait (device_buffers.c). */
    uint32_t dev_held_count;
    uint64_t dev_held[SP_MAX_RUN_TENSORS];
} wk_lease;

/* One device buffer of the worker (sp_worker_device_alloc): its range and
 * how many prepared or running runs name it. */
typedef struct wk_devbuf {
    uint64_t dev, bytes;
    uint32_t busy;
} wk_devbuf;

/* The worker's copy of a registered callable (callables.c): what it knows
 * of a callable beside the module, e.g. the kernel names its traces show. */
typedef struct wk_callable {
    uint32_t id;
    void *blob; /* the worker's own copy, 8-byte aligned */
    size_t size;
    sp_callable_view view; /* validated, into blob */
} wk_callable;

struct sp_worker {
    wk_module_api m;
    void *ctx;
    size_t run_size;
    uint32_t depth;      /* leases in the lane: 1, or 2 with concurrent prepare */
    uint32_t bank_of[2]; /* arena bank each slot's runs use */
    wk_lease lease[SP_PIPELINE_MAX_DEPTH];

    pthread_mutex_t submit_lock; /* lease acquisition and ids (not per task) */
    uint64_t next_run_id;
    uint64_t next_dispatch_id;

    pthread_t lane;
    bool lane_started;
    sp__waitword kick; /* bumped when a run is queued or the lane must stop */
    _Atomic int stop;
    /* A run's device side never finished (SP_ESTALL): its context, run
     * storage and module stay as they are; the worker can only be closed. */
    _Atomic int stuck;
    uint64_t close_timeout_ns;   /* how long close waits for the lane */
    struct sp_worker *next_kept; /* the list of workers close abandoned (worker.c) */

    /* The caller's settings, filled from the environment once at open
     * (settings.c): this worker's own, whatever another worker was given. */
    sp_settings settings;
    /* This worker's log sink (log_route.c): NULL for none; log_next links
     * the workers that have one, newest first. */
    sp_log_sink log_sink;
    void *log_user;
    struct sp_worker *log_next;

    char last_error[640];
    /* Orders the waits that finish runs into the worker's "last run" state
     * below (and its trace file): threads may wait on different runs of one
     * worker at once, as level 3's driver and caller do. Per wait. */
    pthread_mutex_t wait_lock;
    sp_run_trace trace;       /* the last waited run's trace (sp_worker_last_trace) */
    uint32_t trace_callable;  /* ... the callable it ran */
    sp_run_stats trace_stats; /* ... and its figures */

    /* Registered callables, unordered (callables.c); the lock orders a
     * register or unregister against a trace being written with their names
     * in a waiting thread (per register and per traced run, never per task). */
    pthread_mutex_t callables_lock;
    wk_callable *callables;
    uint32_t callable_count, callable_cap;

    /* options.trace_path / SIMPLER_TRACE (the worker's copy), or NULL;
     * traces_written numbers the files ("%n"). */
    char *trace_path;
    uint64_t traces_written;
    char runtime[32]; /* from the module's file name (libsimpler_<rt>_<p>.so), or "" */

    /* Per callable id: its parsed argument signature, or NULL (none
     * declared); read and swapped under submit_lock (arg_check.c). */
    sp_callable_signature *signature[WK_MAX_CALLABLES];

    /* The worker's device buffers, sorted by address; under submit_lock
     * (device_buffers.c: per alloc / free and once per run, never per task). */
    wk_devbuf *devbufs;
    uint32_t devbuf_count, devbuf_cap;
};

/* settings.c: SIMPLER_TRACE (the default of options.trace_path), NULL if
 * unset or empty. */
const char *wk_env_trace_path(void);

/* settings.c: 0, or SP_EINVAL naming the first field a caller set outside
 * its range (the ranges of the environment variables). */
int wk_settings_check(const sp_settings *s, char *err, size_t err_len);
/* settings.c: SIMPLER_MODULE_PATH, or NULL when unset or empty. */
const char *wk_env_module_path(void);

/* log_route.c: the worker's own lines go to its sink, the lines of code
 * that knows no worker (module, device, settings) to the newest open
 * worker's sink, else stderr. add registers w's sink (NULL: none) and
 * binds the library's logger to the route; remove unregisters it (after
 * it returns the sink is not called again). */
void wk_log_route_add(sp_worker *w, sp_log_sink sink, void *user);
void wk_log_route_remove(sp_worker *w);
void wk_log_route_line(int level, const char *line, void *user);
void wk_log(sp_worker *w, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Start / stop the lane thread that launches queued runs in order. */
int wk_lane_start(sp_worker *w);
/* False: the lane did not stop within w->close_timeout_ns (it waits for a
 * device side that never ends) and was left running, detached. */
bool wk_lane_stop(sp_worker *w);

/* trace.c: copy a completed run's trace into its lease (before finalize),
 * hand it to the worker at wait, free every trace buffer (and the trace
 * path, callables_lock: what wk_trace_open made) at close. */
void wk_lease_trace_capture(sp_worker *w, wk_lease *l);
void wk_lease_trace_take(sp_worker *w, wk_lease *l);
void wk_trace_free(sp_worker *w);
/* trace.c: the trace settings of a worker being opened: its copy of the
 * trace path (options, else SIMPLER_TRACE) and the runtime's name. 0 or
 * SP_ENOMEM. */
int wk_trace_open(sp_worker *w, const sp_worker_options *o, const char *module_path);
/* trace.c: the config a run is prepared with: `config`, or when the worker
 * writes traces and `config` leaves trace_level 0, a copy in `buf` with
 * SP_TRACE_TASKS. */
const sp_call_config *wk_trace_config(const sp_worker *w, const sp_call_config *config,
                                      sp_call_config *buf);
/* trace.c: after a wait handed the worker a run's trace, write it to the
 * trace path; a failure is logged at warn and changes nothing else. */
void wk_trace_autowrite(sp_worker *w);

/* callables.c: keep a copy of a callable the module registered under `id`
 * (replacing one kept under it); forget it; find it (NULL: none; the caller
 * holds callables_lock while it uses what it found). */
int wk_callable_keep(sp_worker *w, uint32_t id, const void *blob, size_t size);
void wk_callable_drop(sp_worker *w, uint32_t id);
const wk_callable *wk_callable_find(const sp_worker *w, uint32_t id);
void wk_callables_free(sp_worker *w);

/* arg_check.c: parse and keep the argument signature `text` (the kept
 * callable's view.orch_args; NULL: none) of a callable the module has just
 * registered (0, or SP_ENOMEM with last_error set), drop it at
 * unregister, free all at close; check a run's arguments before it is
 * prepared (0, or SP_EARG_SIGNATURE with the argument named in last_error). */
int wk_signature_register(sp_worker *w, uint32_t id, const char *text);
void wk_signature_drop(sp_worker *w, uint32_t id);
void wk_signature_free_all(sp_worker *w);
int wk_signature_check(sp_worker *w, uint32_t id, const sp_args *args);

/* device_buffers.c: check a run's SP_TENSOR_DEVICE arguments against the
 * worker's live device buffers and hold each buffer they name in `l` (0,
 * or SP_EBADPTR / SP_EBOUNDS with the argument named in last_error; nothing
 * held then); drop a lease's holds (after its run is finalized); free every
 * buffer at close. */
int wk_devbufs_hold(sp_worker *w, wk_lease *l, const sp_args *args);
void wk_devbufs_release(sp_worker *w, wk_lease *l);
void wk_devbufs_free_all(sp_worker *w);

#endif
