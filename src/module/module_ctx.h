/* The state behind the module ABI: a device context (one attached device,
 * the settings it was attached with, its registered callables, the held
 * pipeline slots and banks, the last error) and the run record kept in
 * caller-owned run storage (with the run's message buffer). */
#ifndef SP_MODULE_CTX_H
#define SP_MODULE_CTX_H

#include <pthread.h>
#include <stdbool.h>

#include "module/mod_runtime.h"
#include "platform/device.h"
#include "runtime/host/device_buffers.h"
#include "runtime/host/graph_cache.h"
#include "simpler/module.h"
#include "simpler/settings.h"

#define SP_MODULE_MAX_CALLABLES 256
#define SP_MODULE_ERR_LEN 512

typedef struct mod_ctx {
    pthread_mutex_t lock; /* registry, slots, banks, last error */
    const rt_ops *rt;     /* the runtime this module was built with */
    sp_device *dev;
    sp_host_api reg_api; /* bound outside a run (SP_HOST_API_NO_RUN): callables load through it */
    int device_id;
    sp_settings settings;    /* as simpler_init got them: each run's defaults */
    uint32_t pipeline_depth; /* runs prepared at once: the contract's, or less by settings */
    uint32_t prepared_runs;  /* prepared and not yet finalized */
    bool slot_held[SP_PIPELINE_MAX_DEPTH];
    bool bank_held[SP_PIPELINE_MAX_DEPTH];
    sp_run_descriptor held[SP_PIPELINE_MAX_DEPTH]; /* by slot: ids of prepared runs */
    /* The device's storage slot / bank (sp_device_storage_lease) leased by
     * the run holding each of this context's slots / banks, or leased last
     * (tried first next time: its storage has the right size already);
     * UINT32_MAX: none yet. Other contexts on the device lease others. */
    uint32_t dev_slot[SP_PIPELINE_MAX_DEPTH];
    uint32_t dev_bank[SP_PIPELINE_MAX_DEPTH];
    bool unusable; /* a launch half-started: refuse runs until re-created */
    rt_host_scratch scratch[SP_PIPELINE_MAX_DEPTH][SP_HOST_SCRATCH_SLOT_BUFFERS];
    rt_loaded_callable *callables[SP_MODULE_MAX_CALLABLES];
    rt_graph_cache graphs; /* recorded graphs (replay), bounded by the settings */
    /* simpler_device_malloc's buffers: where SP_TENSOR_DEVICE args may point. */
    rt_device_buffers owned;
    char last_error[SP_MODULE_ERR_LEN];
} mod_ctx;

enum { RUN_EMPTY = 0, RUN_PREPARED = 1, RUN_LAUNCHED = 2, RUN_DONE = 3 };

typedef struct mod_run {
    uint64_t magic; /* SP_RUN_STORAGE_MAGIC while prepared */
    uint32_t state;
    uint32_t callable_id;
    int result;        /* once RUN_DONE */
    const void *owner; /* the context that prepared it: no other may touch it */
    sp_run_descriptor desc;
    sp_host_api api;
    rt_run *rt;
    sp_run_stats stats;
    /* Where the runtime records why the run failed, from prepare to
     * finalize (rt_prepare.err); cleared before each call. */
    char err[SP_MODULE_ERR_LEN];
} mod_run;

#endif
