/* tensormap_and_ringbuffer, the run lifecycle (host side): prepare stages
 * the arguments and commits the bank's static arena — the control block,
 * task ring, ready queues, TensorMap block and a device copy of the
 * callable's validation tables in shared memory, the heap ring in the heap
 * — and writes the control block; launch starts the orchestrator thread and
 * the scheduler threads together; completion reads the control block back. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/wait.h"
#include "runtime/host/dev_callable_write.h"
#include "runtime/host/fault_report.h"
#include "runtime/host/host_run.h"
#include "runtime/host/redzone.h"
#include "runtime/host/staging.h"
#include "runtime/host/trace_read.h"
#include "runtime/runtime.h"
#include "runtime/tensormap_and_ringbuffer/device/tmr_device.h"
#include "runtime/tensormap_and_ringbuffer/host/tmr_graph.h"
#include "simpler/status.h"

#define ALIGN64(x) (((x) + 63) & ~(uint64_t)63)
#define TMR_MAP_ENTRIES_PER_SLOT 16u

struct rt_run {
    rt_host_run h; /* first: rt_run_finalize frees the run through it */
    uint32_t threads;
    uint64_t build_ns;
    tmr_ctl result; /* the control block read back after the run */
    int have_result;
    tmr_replay_state replay; /* recorded / replayed graph (tmr_graph.h) */
};
_Static_assert(offsetof(struct rt_run, h) == 0, "rt_run_finalize frees the run through h");

#define TMR_DEFAULT_TRACE_RECORDS (1ull << 18)

typedef struct tmr_shm_layout {
    uint64_t slots_off, arg_off, arg_bytes, cells_off, map_off, map_bytes, callable_off,
        callable_bytes, total;
    uint32_t map_entries;
} tmr_shm_layout;

static int config_check(const rt_prepare *p, const sp_geometry *geo, uint32_t *window,
                        uint64_t *heap, uint32_t *threads)
{
    *window = p->config.task_window ? p->config.task_window : TMR_DEFAULT_WINDOW;
    *heap = p->config.heap_bytes ? p->config.heap_bytes : TMR_DEFAULT_HEAP;
    *threads = p->config.sched_threads ? p->config.sched_threads
                                       : (geo->aicpu_threads > 1 ? geo->aicpu_threads - 1 : 1);
    if (*window < 4 || *window > (1u << 20) || (*window & (*window - 1))) {
        snprintf(p->err, p->err_len, "task_window %u must be a power of two in [4, 2^20]", *window);
        return SP_EINVAL;
    }
    if (*heap < 4096 || *heap > (1ull << 40)) {
        snprintf(p->err, p->err_len, "heap_bytes %llu must be in [4 KiB, 1 TiB]",
                 (unsigned long long)*heap);
        return SP_EINVAL;
    }
    if (*threads + 1 > geo->aicpu_threads) {
        snprintf(p->err, p->err_len,
                 "config asks for %u scheduler threads and an orchestrator thread; the device "
                 "has %u AICPU threads: a device's threads are set when it is first opened, so "
                 "open the worker with prewarm.sched_threads = %u (sp_worker_options)",
                 *threads, geo->aicpu_threads, *threads);
        return SP_EINVAL;
    }
    const rt_loaded_callable *lc = p->callable;
    if (lc->orch_config && (p->args->tensor_count < lc->config.tensor_count ||
                            p->args->scalar_count < lc->config.scalar_count)) {
        snprintf(p->err, p->err_len,
                 "callable %u expects %u tensors and %u scalars; the run passes %u and %u", lc->id,
                 lc->config.tensor_count, lc->config.scalar_count, p->args->tensor_count,
                 p->args->scalar_count);
        return SP_EARGCOUNT;
    }
    return SP_OK;
}

static tmr_shm_layout layout_of(const rt_loaded_callable *lc, uint32_t window)
{
    tmr_shm_layout l;
    uint64_t off = ALIGN64(sizeof(tmr_ctl));
    l.slots_off = off;
    off = ALIGN64(off + (uint64_t)window * sizeof(tmr_task));
    /* Reserved for the window, touched only as far as tasks really use it.
     * Two largest extents on top of the slots' share: with one task live
     * anywhere in the ring, one of the two free pieces still takes a
     * largest carve (a small window of large tasks does not stall). */
    l.arg_off = off;
    l.arg_bytes = (uint64_t)window * TMR_ARG_BYTES_PER_SLOT + 2 * TMR_EXTENT_MAX;
    off = ALIGN64(off + l.arg_bytes);
    l.cells_off = off;
    off = ALIGN64(off + (uint64_t)SP_QUEUES * window * sizeof(tmr_cell));
    l.map_entries = window * TMR_MAP_ENTRIES_PER_SLOT;
    l.map_off = off;
    l.map_bytes = rt_tensormap_bytes(l.map_entries);
    off = ALIGN64(off + l.map_bytes);
    l.callable_off = off;
    l.callable_bytes = rt_dev_callable_bytes(lc);
    l.total = off + l.callable_bytes;
    return l;
}

static int run_prepare(const rt_prepare *p, rt_run **out)
{
    *out = NULL;
    uint32_t window, threads;
    uint64_t heap;
    if (!p->args) {
        snprintf(p->err, p->err_len, "run arguments are NULL");
        return SP_EINVAL;
    }
    sp_device_info dev;
    int rc = rt_describe(p, &dev);
    if (rc == SP_OK)
        rc = config_check(p, &dev.geometry, &window, &heap, &threads);
    if (rc)
        return rc;
    rt_run *r = calloc(1, sizeof *r);
    if (!r)
        return SP_ENOMEM;
    rt_host_run_init(&r->h, p, &dev.geometry);
    r->threads = threads;
    uint64_t t0 = sp_now_ns();
    bool check = p->check;
    uint64_t image_bytes;
    /* Before staging: a replay-only run with nothing to replay stops here. */
    if ((rc = tmr_graph_plan(&r->replay, p, &image_bytes)) != SP_OK) {
        free(r);
        return rc;
    }
    rc = rt_staging_stage(&r->h.staging, p->api, p->args, false, check, p->err, p->err_len);
    if (rc) {
        tmr_graph_release(&r->replay);
        free(r);
        return rc;
    }
    const rt_loaded_callable *lc = p->callable;
    tmr_shm_layout l = layout_of(lc, window);
    sp_arena_request req = {.heap_bytes = heap, .shm_bytes = l.total, .image_bytes = image_bytes};
    rc = sp_host_arena_commit(p->api, &req, &r->h.arena);
    if (rc == SP_EDEVMEM && r->replay.recording) {
        /* No device memory for the stream's buffer: the run goes on fresh. */
        tmr_graph_release(&r->replay);
        r->replay.recording = false;
        req.image_bytes = 0;
        rc = sp_host_arena_commit(p->api, &req, &r->h.arena);
    }
    if (rc) {
        snprintf(p->err, p->err_len,
                 "arena commit (heap %llu, ring state %llu bytes for a %u-slot window, recorded "
                 "stream %llu): %s",
                 (unsigned long long)heap, (unsigned long long)l.total, window,
                 (unsigned long long)req.image_bytes, sp_status_name(rc));
        goto fail;
    }
    size_t host_bytes = sizeof(tmr_ctl) + l.callable_bytes;
    if ((rc = rt_host_scratch_reserve(p->scratch, host_bytes)) != SP_OK) {
        snprintf(p->err, p->err_len, "host scratch of %zu bytes", host_bytes);
        goto fail;
    }
    uint64_t shm = r->h.arena.shm;
    tmr_ctl *c = p->scratch->ptr;
    memset(c, 0, sizeof *c);
    c->magic = TMR_MAGIC;
    c->window = window;
    c->mask = window - 1;
    c->sched_threads = threads;
    c->kernel_count = lc->kernel_count;
    c->slots = (tmr_task *)(uintptr_t)(shm + l.slots_off);
    c->arg_base = (char *)(uintptr_t)(shm + l.arg_off);
    c->arg_bytes = l.arg_bytes;
    c->cells = (tmr_cell *)(uintptr_t)(shm + l.cells_off);
    c->map_mem = (void *)(uintptr_t)(shm + l.map_off);
    c->map_bytes = l.map_bytes;
    c->map_entries = l.map_entries;
    c->callable = (const rt_dev_callable *)(uintptr_t)(shm + l.callable_off);
    c->heap_base = r->h.arena.heap;
    c->heap_bytes = heap;
    c->ktab = (const sp_kernel_fn *)(uintptr_t)lc->kernel_table;
    c->entry = lc->orch_entry;
    c->backstop_ns =
        p->config.timeout_us ? p->config.timeout_us * 1000ull : TMR_DEFAULT_BACKSTOP_NS;
    c->kernel_timeout_ns = p->kernel_timeout_ns;
    c->orch_timeout_ns = p->orch_timeout_ns;
    c->redzones = check;
    c->args = r->h.staging.device_args;
    if ((rc = tmr_graph_place(&r->replay, p->api, r->h.arena.image, c, p->err, p->err_len)) !=
        SP_OK)
        goto fail;
    r->h.trace.phase_ns[SP_TRACE_PHASE_STAGE][0] = t0;
    r->h.trace.phase_ns[SP_TRACE_PHASE_STAGE][1] = sp_now_ns();
    if (p->config.trace_level) {
        /* The task count is unknown before the run: a bounded buffer, full drops. */
        uint64_t n = p->config.trace_records ? p->config.trace_records : TMR_DEFAULT_TRACE_RECORDS;
        if ((rc = rt_trace_dev_alloc(&r->h.trace, p->api, p->config.trace_level, n, n, lc, p->err,
                                     p->err_len)) != SP_OK)
            goto fail;
        c->trace = rt_trace_dev_buf(&r->h.trace);
    }
    void *cc = (char *)p->scratch->ptr + sizeof(tmr_ctl);
    rt_dev_callable_write(lc, cc, shm + l.callable_off);
    if ((rc = sp_host_copy_to_device(p->api, shm, c, sizeof *c)) != SP_OK ||
        (rc = sp_host_copy_to_device(p->api, shm + l.callable_off, cc, l.callable_bytes)) !=
            SP_OK) {
        snprintf(p->err, p->err_len, "writing the ring state: %s", sp_status_name(rc));
        goto fail;
    }
    r->build_ns = sp_now_ns() - t0;
    *out = r;
    return SP_OK;
fail:
    tmr_graph_release(&r->replay);
    rt_trace_dev_free(&r->h.trace, p->api);
    rt_staging_release(&r->h.staging, p->api);
    free(r);
    return rc;
}

static int run_launch(rt_run *r)
{
    /* The scheduler threads and, last, the orchestrator thread. */
    return rt_host_run_launch(&r->h, tmr_device_main, (void *)(uintptr_t)r->h.arena.shm,
                              r->threads + 1);
}

/* After the device side finished: read the control block back for the
 * status message and the figures. */
static int collect(rt_run *r, int rc)
{
    char *err = r->h.err;
    size_t err_len = r->h.err_len;
    if (!r->have_result &&
        sp_host_copy_from_device(r->h.api, &r->result, r->h.arena.shm, sizeof r->result) == SP_OK)
        r->have_result = 1;
    if (rc && r->have_result &&
        atomic_load_explicit(&r->result.fault.claimed, memory_order_relaxed) &&
        (rc == SP_EKERNEL_FAULT || rc == SP_EKERNEL_TIMEOUT))
        rc = rt_fault_report_format(r->h.api, &r->result.fault, r->h.callable, err, err_len);
    else if (rc == SP_EKERNEL_OVERRUN && r->have_result &&
             atomic_load_explicit(&r->result.overrun.claimed, memory_order_relaxed))
        rc = rt_overrun_format(r->h.api, &r->result.overrun, r->h.callable, err, err_len);
    else if (rc && r->have_result && r->result.message[0])
        snprintf(err, err_len, "%s", r->result.message);
    else if (rc)
        snprintf(err, err_len, "device side failed: %s", sp_status_name(rc));
    /* Only a run that completed without any error keeps its recording. */
    tmr_graph_complete(&r->replay, r->h.api,
                       rc == SP_OK && r->have_result &&
                           atomic_load_explicit(&r->result.error, memory_order_relaxed) == 0);
    return rc;
}

static int run_poll(rt_run *r)
{
    int rc = rt_host_run_poll(&r->h);
    return rc == SP_RUN_NOT_READY ? rc : collect(r, rc);
}

static int run_wait(rt_run *r, uint64_t deadline_ns)
{
    int rc = rt_host_run_wait(&r->h, deadline_ns);
    return rc == SP_ETIMEOUT ? rc : collect(r, rc);
}

static void run_stats(const rt_run *r, sp_run_stats *out)
{
    memset(out, 0, sizeof *out);
    out->build_ns = r->build_ns;
    out->device_ns = r->h.device_ns;
    out->replay = r->replay.mode;
    out->patch_bytes = r->replay.patch_bytes;
    if (!r->have_result)
        return;
    const tmr_ctl *c = &r->result;
    out->tasks = (uint64_t)atomic_load_explicit(&c->submitted, memory_order_relaxed);
    out->edges = c->edges;
    out->skipped = (uint32_t)atomic_load_explicit(&c->skipped, memory_order_relaxed);
    out->chained = atomic_load_explicit(&c->chained, memory_order_relaxed);
    if (c->orch_end_ns > r->h.launch_ns)
        out->orch_ns = c->orch_end_ns - r->h.launch_ns;
    uint64_t first = atomic_load_explicit(&c->first_complete_ns, memory_order_relaxed);
    if (first > r->h.launch_ns)
        out->first_complete_ns = first - r->h.launch_ns;
}

static int run_trace(rt_run *r, sp_run_trace *io)
{
    if (r->have_result) {
        io->orch_begin_ns = r->result.orch_begin_ns;
        io->orch_end_ns = r->result.orch_end_ns;
    }
    return rt_host_run_trace(&r->h, r->threads, io);
}

static int run_finalize(rt_run *r, int completed_ok)
{
    tmr_graph_release(&r->replay);
    return rt_run_finalize(r, completed_ok);
}

const rt_ops tmr_runtime_ops = {
    .name = "tmr",
    .contract = rt_contract,
    .prepare = run_prepare,
    .launch = run_launch,
    .poll = run_poll,
    .wait = run_wait,
    .finalize = run_finalize,
    .stats = run_stats,
    .trace = run_trace,
};
