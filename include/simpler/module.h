/* The runtime module C ABI (DESIGN.md §5). A runtime module is a shared
 * library for one platform × runtime pair, loaded with
 * dlopen(RTLD_NOW|RTLD_LOCAL); every symbol below is mandatory. Every
 * function returns 0 on success or a negative status; none aborts on bad
 * input; the last error's text is kept per context. Any change to a
 * signature here bumps SP_PIPELINE_ABI_VERSION. */
#ifndef SIMPLER_MODULE_H
#define SIMPLER_MODULE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "simpler/device_info.h"
#include "simpler/export.h"
#include "simpler/host_api.h"
#include "simpler/log.h"
#include "simpler/settings.h"
#include "simpler/trace.h"
#include "simpler/types.h"

/* 5: simpler_init takes settings; simpler_device_info. 6: graph replay
 * (sp_run_stats.replay, simpler_forget_graph, simpler_graph_cache_info).
 * 7: simpler_device_host_map / simpler_device_host_unmap (level 3 copies). */
#define SP_PIPELINE_ABI_VERSION 7u
#define SP_PIPELINE_MAX_RESOURCES 8u

typedef enum sp_resource_kind {
    SP_RESOURCE_HEAP = 1,
    SP_RESOURCE_SHARED_MEMORY = 2,
    SP_RESOURCE_RUNTIME_IMAGE = 3,
    SP_RESOURCE_TASK_ARGS = 4,
    SP_RESOURCE_SCHED_STREAM = 5,
    SP_RESOURCE_CORE_STREAM = 6,
} sp_resource_kind;

typedef enum sp_resource_class {
    SP_CLASS_HOST_PER_RUN = 1,   /* one copy per pipeline slot, host side */
    SP_CLASS_EXEC_HANDLE = 2,    /* one copy per pipeline slot (arena bank) */
    SP_CLASS_DEVICE_SCRATCH = 3, /* one copy for the device */
} sp_resource_class;

typedef struct sp_pipeline_resource {
    uint32_t kind;
    uint32_t resource_class;
    uint64_t reserved; /* 0 */
} sp_pipeline_resource;

typedef struct sp_pipeline_contract {
    uint32_t abi_version;
    uint32_t resource_count;
    uint32_t pipeline_depth;
    uint32_t reserved; /* 0 */
    sp_pipeline_resource resources[SP_PIPELINE_MAX_RESOURCES];
} sp_pipeline_contract;

/* A run's resource selection and identity; prepare copies it. */
typedef struct sp_run_descriptor {
    uint32_t pipeline_slot;
    uint32_t arena_bank;
    uint64_t run_id;
    uint64_t generation;
    uint64_t dispatch_id;
    uint64_t run_epoch;
    _Atomic uint64_t *accepted_state; /* NULL: no acceptance word */
    uint64_t accepted_value;
} sp_run_descriptor;

/* What a finished run reports (simpler_run_stats). */
typedef struct sp_run_stats {
    uint64_t tasks;
    uint64_t edges;
    uint64_t build_ns;  /* host-side graph build (hbg) */
    uint64_t upload_ns; /* image upload (hbg) */
    uint64_t device_ns; /* launch to completion */
    uint64_t image_bytes;
    uint64_t orch_ns;           /* tmr: launch to the orchestration's return */
    uint64_t first_complete_ns; /* tmr: launch to the first task's completion */
    uint32_t replay;            /* SP_RUN_FRESH / SP_RUN_RECORDED / SP_RUN_REPLAYED */
    uint32_t skipped;           /* predicated tasks retired without running */
    uint64_t patch_bytes;       /* replayed: bytes uploaded for the patch (hbg) or stream (tmr) */
    uint64_t chained;           /* tasks queued on a core behind their last unfinished producer */
} sp_run_stats;

/* sp_run_stats.replay. */
#define SP_RUN_FRESH 0    /* the orchestration ran; nothing was kept */
#define SP_RUN_RECORDED 1 /* the orchestration ran and its graph was kept */
#define SP_RUN_REPLAYED 2 /* a recorded graph was replayed: no orchestration, no derivation */

/* A context's recorded graphs (simpler_graph_cache_info). */
typedef struct sp_graph_cache_info {
    uint32_t count;      /* graphs kept now */
    uint32_t max_count;  /* the bound (settings.graph_cache_count) */
    uint64_t bytes;      /* host bytes they hold */
    uint64_t max_bytes;  /* the bound (settings.graph_cache_bytes) */
    uint64_t recorded;   /* runs that recorded a graph, since the context began */
    uint64_t replayed;   /* runs that replayed one */
    uint64_t evicted;    /* graphs dropped for the bound */
    uint64_t rerecorded; /* replays refused because a control value read changed */
} sp_graph_cache_info;

/* What one pipeline slot and one arena bank hold now (simpler_probe_storage):
 * device addresses, 0 where nothing is allocated. Lets a test check that
 * runs reuse per-slot and per-bank storage instead of reallocating it. */
typedef struct sp_storage_probe {
    uint64_t retained; /* the slot's retained temp buffer */
    uint64_t retained_bytes;
    uint64_t heap, shm, image; /* the bank's arena parts */
    uint64_t heap_bytes, shm_bytes, image_bytes;
} sp_storage_probe;

#define SP_RUN_STORAGE_MAGIC 0x4e55525250534d53ull /* "SMSPRRUN" */

/* Poll results besides errors. */
#define SP_RUN_COMPLETE 0
#define SP_RUN_NOT_READY 1

/* The module's log sink is the one sink type (simpler/log.h). */
typedef sp_log_sink sp_module_log_sink;

/* The symbols, as function types (the worker resolves each by name). */
typedef const sp_pipeline_contract *(*simpler_get_pipeline_contract_fn)(void);
typedef int (*simpler_bind_logging_fn)(int level, sp_log_sink sink, void *user);
typedef int (*simpler_create_device_context_fn)(void **ctx_out);
typedef int (*simpler_destroy_device_context_fn)(void *ctx);
/* Attach the context to device `device_id`. prewarm's clusters and
 * sched_threads ask for a geometry; settings (may be NULL: defaults) hold
 * the device's and the runtime's knobs, already filled from the
 * environment by the caller. Both apply when this call creates the device;
 * a device already open keeps what it was created with. */
typedef int (*simpler_init_fn)(void *ctx, int device_id, const sp_call_config *prewarm,
                               const sp_settings *settings);
typedef int (*simpler_finalize_device_fn)(void *ctx);
typedef const char *(*simpler_last_error_fn)(void *ctx);
typedef int (*simpler_device_malloc_fn)(void *ctx, uint64_t bytes, uint64_t *dev_out);
typedef int (*simpler_device_free_fn)(void *ctx, uint64_t dev_ptr);
typedef int (*simpler_copy_to_device_fn)(void *ctx, uint64_t dev_dst, const void *src,
                                         uint64_t bytes);
typedef int (*simpler_copy_from_device_fn)(void *ctx, void *dst, uint64_t dev_src, uint64_t bytes);
typedef int (*simpler_run_storage_size_fn)(size_t *size, size_t *align);
typedef int (*simpler_register_callable_fn)(void *ctx, uint32_t callable_id, const void *blob,
                                            size_t size);
typedef int (*simpler_unregister_callable_fn)(void *ctx, uint32_t callable_id);
typedef int (*simpler_prepare_run_fn)(void *ctx, void *run, uint32_t callable_id,
                                      const sp_args *args, const sp_call_config *config,
                                      const sp_run_descriptor *desc);
typedef int (*simpler_launch_run_fn)(void *ctx, void *run);
typedef int (*simpler_poll_run_fn)(void *ctx, void *run);
typedef int (*simpler_wait_run_fn)(void *ctx, void *run, uint64_t timeout_ns);
typedef int (*simpler_finalize_run_fn)(void *ctx, void *run);
typedef int (*simpler_run_fn)(void *ctx, void *run, uint32_t callable_id, const sp_args *args,
                              const sp_call_config *config, const sp_run_descriptor *desc);
typedef int (*simpler_run_stats_fn)(void *ctx, void *run, sp_run_stats *out);
typedef int (*simpler_probe_storage_fn)(void *ctx, uint32_t pipeline_slot, uint32_t arena_bank,
                                        sp_storage_probe *out);
/* A completed (not yet finalized) run's trace records and edges, copied
 * into io's arrays (simpler/trace.h); io->level 0 when it was not traced. */
typedef int (*simpler_run_trace_fn)(void *ctx, void *run, sp_run_trace *io);
/* What the context's device is (platform, geometry, memory); SP_ESTATE
 * before simpler_init. */
typedef int (*simpler_device_info_fn)(void *ctx, sp_device_info *out);
/* Drop the recorded graph that a run of `callable_id` on `args` with
 * `config` (NULL: a run with none) would replay (args NULL: every graph of
 * the callable). 0 (also when none was kept) or a status; a graph a
 * prepared run uses is freed at its finalize. */
typedef int (*simpler_forget_graph_fn)(void *ctx, uint32_t callable_id, const sp_args *args,
                                       const sp_call_config *config);
typedef int (*simpler_graph_cache_info_fn)(void *ctx, sp_graph_cache_info *out);
/* The platform's host-map of [dev, dev + bytes) inside one allocation of
 * this context: 0 and *host, SP_ENOTSUP on a backend (or setting) without
 * one, SP_EBADPTR for a range outside the context's allocations. Pair each
 * success with an unmap before the allocation is freed. */
typedef int (*simpler_device_host_map_fn)(void *ctx, uint64_t dev, uint64_t bytes, void **host);
typedef int (*simpler_device_host_unmap_fn)(void *ctx, uint64_t dev);

/* The list of mandatory symbols: X(name). */
#define SP_MODULE_SYMBOLS(X)                                                                       \
    X(simpler_get_pipeline_contract)                                                               \
    X(simpler_bind_logging)                                                                        \
    X(simpler_create_device_context)                                                               \
    X(simpler_destroy_device_context)                                                              \
    X(simpler_init)                                                                                \
    X(simpler_finalize_device)                                                                     \
    X(simpler_last_error)                                                                          \
    X(simpler_device_malloc)                                                                       \
    X(simpler_device_free)                                                                         \
    X(simpler_copy_to_device)                                                                      \
    X(simpler_copy_from_device)                                                                    \
    X(simpler_run_storage_size)                                                                    \
    X(simpler_register_callable)                                                                   \
    X(simpler_unregister_callable)                                                                 \
    X(simpler_prepare_run)                                                                         \
    X(simpler_launch_run)                                                                          \
    X(simpler_poll_run)                                                                            \
    X(simpler_wait_run)                                                                            \
    X(simpler_finalize_run)                                                                        \
    X(simpler_run)                                                                                 \
    X(simpler_run_stats)                                                                           \
    X(simpler_probe_storage)                                                                       \
    X(simpler_run_trace)                                                                           \
    X(simpler_device_info)                                                                         \
    X(simpler_forget_graph)                                                                        \
    X(simpler_graph_cache_info)                                                                    \
    X(simpler_device_host_map)                                                                     \
    X(simpler_device_host_unmap)

#endif
