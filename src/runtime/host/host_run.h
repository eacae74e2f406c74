/* The host half of a run that both runtimes keep alike: its staged
 * arguments, its arena, its trace buffer, the launch of its device side
 * (launch, poll, wait, with its result and how long it ran) and its message
 * buffer. Each runtime's struct rt_run starts with one, so the lifecycle
 * steps that are the same for both are written once, here. */
#ifndef SP_RUNTIME_HOST_RUN_H
#define SP_RUNTIME_HOST_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/host/staging.h"
#include "runtime/host/trace_read.h"
#include "runtime/runtime.h"

/* How long a launch waits for the device while another context's launch
 * runs on it, before it is refused (SP_EBUSY). */
#define RT_LAUNCH_BUSY_WAIT_NS (600ull * 1000000000ull)

typedef struct rt_host_run {
    const sp_host_api *api; /* the run's only way to the platform */
    const rt_loaded_callable *callable;
    char *err; /* the run's message buffer (rt_prepare), until finalize */
    size_t err_len;
    rt_staging staging;
    sp_arena arena;
    rt_trace_dev trace;   /* level 0: not traced; phase times are kept regardless */
    sp_launch_record rec; /* this launch's outcome, whatever launches next */
    uint64_t launch_ns;
    uint64_t device_ns;
    uint32_t clusters; /* of the device's geometry (sp_host_describe) */
    int launched;
    int done;
    int result;
} rt_host_run;

/* Take what `p` gives every run (API, callable, message buffer) and the
 * device's geometry `geo`. */
void rt_host_run_init(rt_host_run *h, const rt_prepare *p, const sp_geometry *geo);
/* Launch `fn` on `threads` AICPU threads, first waiting (up to
 * RT_LAUNCH_BUSY_WAIT_NS) for a launch of another context on the same
 * device to end. 0, or a status (nothing started), reason in h->err. */
int rt_host_run_launch(rt_host_run *h, sp_launch_fn fn, void *dev_ctx, uint32_t threads);
/* SP_RUN_COMPLETE, SP_RUN_NOT_READY, or the device side's failure status. */
int rt_host_run_poll(rt_host_run *h);
/* Completion status, or SP_ETIMEOUT at the deadline (still running). */
int rt_host_run_wait(rt_host_run *h, uint64_t deadline_ns);
/* The device `p` prepares for, as its platform describes it. 0, or a
 * status with the reason in p->err. */
int rt_describe(const rt_prepare *p, sp_device_info *out);
/* The trace header both runtimes fill alike, then the records and edges. */
int rt_host_run_trace(rt_host_run *h, uint32_t sched_threads, sp_run_trace *io);

/* rt_ops.finalize of both runtimes: copy the outputs back if
 * `completed_ok`, release the staging and the trace buffer, free the run
 * (whose first member is its rt_host_run). */
int rt_run_finalize(rt_run *r, int completed_ok);

#endif
