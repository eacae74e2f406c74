/* The seam between the module layer and a runtime. Each runtime
 * (host_build_graph, tensormap_and_ringbuffer) provides one rt_ops table;
 * a runtime module is built for one runtime x platform pair and calls the
 * table the build picked for it (mod_runtime(), src/module/mod_runtime.h,
 * generated from mod_runtime.c.in). The module layer owns the ABI, the run
 * storage and the state machine around the table's calls. */
#ifndef SP_RUNTIME_RUNTIME_H
#define SP_RUNTIME_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/host/loaded_callable.h"
#include "simpler/device_info.h"
#include "simpler/host_api.h"
#include "simpler/module.h"
#include "simpler/settings.h"

typedef struct rt_run rt_run; /* the runtime's per-run state */

/* A host buffer kept per pipeline slot (image staging, graph arrays):
 * reused across runs, so a run in steady state allocates nothing and writes
 * into pages that are already mapped. A slot has
 * SP_HOST_SCRATCH_SLOT_BUFFERS of them; the runtime decides what each
 * holds. The module layer frees `ptr` when the context goes. */
typedef struct rt_host_scratch {
    void *ptr;
    size_t cap;
} rt_host_scratch;

#define SP_HOST_SCRATCH_SLOT_BUFFERS 12

/* Grow `s` to at least `bytes` (contents not kept). 0 or SP_ENOMEM. */
int rt_host_scratch_reserve(rt_host_scratch *s, size_t bytes);
/* Grow `s` to at least `bytes`, its first `keep` bytes kept, backed by huge
 * pages (2 MiB aligned, MADV_HUGEPAGE: a hint) from `huge_from` bytes on (2
 * MiB at least; SIZE_MAX: never) — for big stores whose first run would
 * otherwise fault in tens of MB by 4 KiB pages. 0 or SP_ENOMEM (s
 * unchanged). */
int rt_host_scratch_grow(rt_host_scratch *s, size_t bytes, size_t keep, size_t huge_from);
#define SP_HOST_SCRATCH_HUGE_PAGE ((size_t)2 << 20)

/* What a run is prepared from. The message buffer `err` is the run's: it
 * lives (in the module's run storage) from prepare to finalize, and the
 * runtime keeps it and writes every failure of the run there — prepare's,
 * launch's, poll's, wait's, finalize's. The module copies it into the
 * context's last error. */
typedef struct rt_prepare {
    const sp_host_api *api; /* bound to the run's slot and bank: the way to the platform */
    const rt_loaded_callable *callable;
    const sp_args *args;
    sp_call_config config; /* as the caller gave it (zero: none) */
    /* What the run gets where the config leaves it 0, resolved by the
     * module from the context's settings (rt_run_defaults). */
    uint64_t kernel_timeout_ns; /* per-task timeout */
    uint64_t orch_timeout_ns;   /* the orchestration's watchdog */
    bool check;                 /* the checking mode (red zones) */
    rt_host_scratch *scratch;   /* the slot's SP_HOST_SCRATCH_SLOT_BUFFERS buffers */
    /* Replay (DESIGN §12): the policy from config.flags (RT_REPLAY_*), the
     * context's cache of recorded graphs (runtime/host/graph_cache.h), and
     * the device's arena bank the run leased (a record keeps what each
     * bank's image holds, so a replay uploads only the patch). */
    uint32_t replay;
    struct rt_graph_cache *graphs;
    uint32_t dev_bank;
    char *err;
    size_t err_len;
} rt_prepare;

/* One runtime, as the module layer drives it. Every call that fails
 * returns a status and leaves its message in the run's buffer (rt_prepare). */
typedef struct rt_ops {
    const char *name; /* "hbg" / "tmr" */
    const sp_pipeline_contract *(*contract)(void);
    /* Build what the run needs before launch; *out owns it. 0 or a status. */
    int (*prepare)(const rt_prepare *p, rt_run **out);
    /* Start the device side. 0, or a status with nothing started
     * (SP_ELAUNCH_PARTIAL: part of it started). */
    int (*launch)(rt_run *r);
    /* SP_RUN_COMPLETE, SP_RUN_NOT_READY, or the run's failure status. */
    int (*poll)(rt_run *r);
    /* Until complete (0 / failure status) or the deadline (SP_ETIMEOUT). */
    int (*wait)(rt_run *r, uint64_t deadline_ns);
    /* Copy results back if `completed_ok`, release everything, free `r`. */
    int (*finalize)(rt_run *r, int completed_ok);
    void (*stats)(const rt_run *r, sp_run_stats *out);
    /* A completed run's trace (simpler/trace.h): header, records and edges
     * into io's arrays; io->level 0 when the run was not traced. */
    int (*trace)(rt_run *r, sp_run_trace *io);
} rt_ops;

extern const rt_ops hbg_runtime_ops; /* host_build_graph/host/hbg_runtime.c */
extern const rt_ops tmr_runtime_ops; /* tensormap_and_ringbuffer/host/tmr_runtime.c */

/* The pipeline contract both runtimes declare (contract.c): fixed, the
 * same for every context; a context's settings.pipeline_depth may only
 * lower the depth it uses. */
const sp_pipeline_contract *rt_contract(void);

/* Check the runtime side of `s` (kernel and orchestration timeouts,
 * pipeline depth, check): 0, or SP_EINVAL with the field, its value and
 * its range in `err`. */
int rt_settings_check(const sp_settings *s, char *err, size_t err_len);
/* Fill p's kernel_timeout_ns, orch_timeout_ns and check from p->config,
 * and where it leaves them 0, from the context's settings `s`, else the
 * runtime's defaults. */
void rt_run_defaults(rt_prepare *p, const sp_settings *s);

#endif
