/* What a runtime offers the module layer. Each runtime module links exactly
 * one runtime (host_build_graph or tensormap_and_ringbuffer), which defines
 * these functions; the module layer (src/module/) owns the ABI, the run
 * storage and the state machine around them. */
#ifndef SP_RUNTIME_RUNTIME_H
#define SP_RUNTIME_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "platform/device.h"
#include "runtime/host/loaded_callable.h"
#include "simpler/module.h"

typedef struct sp_rt_run sp_rt_run; /* the runtime's per-run state */

/* A host buffer kept per pipeline slot (image staging, graph arrays):
 * reused across runs, so a run in steady state allocates nothing and writes
 * into pages that are already mapped. A slot has
 * SP_HOST_SCRATCH_SLOT_BUFFERS of them; the runtime decides what each
 * holds. The module layer frees `ptr` when the context goes. */
typedef struct sp_host_scratch {
    void *ptr;
    size_t cap;
} sp_host_scratch;

#define SP_HOST_SCRATCH_SLOT_BUFFERS 8

/* Grow `s` to at least `bytes` (contents not kept). 0 or SP_ENOMEM. */
int sp_host_scratch_reserve(sp_host_scratch *s, size_t bytes);
/* Grow `s` to at least `bytes`, its first `keep` bytes kept, backed by huge
 * pages (2 MiB aligned, MADV_HUGEPAGE: a hint) from `huge_from` bytes on (2
 * MiB at least; SIZE_MAX: never) — for big stores whose first run would
 * otherwise fault in tens of MB by 4 KiB pages. 0 or SP_ENOMEM (s
 * unchanged). */
int sp_host_scratch_grow(sp_host_scratch *s, size_t bytes, size_t keep, size_t huge_from);
#define SP_HOST_SCRATCH_HUGE_PAGE ((size_t)2 << 20)

typedef struct sp_rt_prepare {
    sp_device *dev;
    const sp_host_api *api; /* bound to the run's slot and bank */
    const sp_loaded_callable *callable;
    const sp_args *args;
    sp_call_config config;
    sp_host_scratch *scratch; /* the slot's SP_HOST_SCRATCH_SLOT_BUFFERS buffers */
    char *err;
    size_t err_len;
} sp_rt_prepare;

const sp_pipeline_contract *sp_runtime_contract(void);
const char *sp_runtime_name(void); /* "hbg" or "tmr" */

/* Build what the run needs before launch; *out owns it. 0 or a status. */
int sp_runtime_prepare(const sp_rt_prepare *p, sp_rt_run **out);
/* Start the device side. 0, or a status with nothing started. */
int sp_runtime_launch(sp_rt_run *r, char *err, size_t err_len);
/* SP_RUN_COMPLETE, SP_RUN_NOT_READY, or the run's failure status. */
int sp_runtime_poll(sp_rt_run *r, char *err, size_t err_len);
/* Wait until complete (0 / failure status) or the deadline (SP_ETIMEOUT). */
int sp_runtime_wait(sp_rt_run *r, uint64_t deadline_ns, char *err, size_t err_len);
/* Copy results back if `completed_ok`, release everything, free `r`. */
int sp_runtime_finalize(sp_rt_run *r, int completed_ok, char *err, size_t err_len);
void sp_runtime_stats(const sp_rt_run *r, sp_run_stats *out);
/* A completed run's trace (simpler/trace.h): header, records and edges
 * into io's arrays; io->level 0 when the run was not traced. 0 or a status. */
int sp_runtime_trace(sp_rt_run *r, sp_run_trace *io);

#endif
