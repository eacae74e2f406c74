/* host_build_graph, the run lifecycle: prepare runs the orchestration on the
 * host and uploads the whole graph as one image (or, with replay, patches
 * a recorded one: hbg_replay.h); launch boots the device scheduler-only;
 * finalize copies results back and keeps a recorded graph. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fault.h"
#include "common/log.h"
#include "common/wait.h"
#include "runtime/device/orch_guard.h"
#include "runtime/host/fault_report.h"
#include "runtime/host/host_run.h"
#include "runtime/host/redzone.h"
#include "runtime/host/staging.h"
#include "runtime/host_build_graph/device/hbg_device.h"
#include "runtime/host_build_graph/host/hbg_build.h"
#include "runtime/host_build_graph/host/hbg_image_write.h"
#include "runtime/host_build_graph/host/hbg_replay.h"
#include "runtime/host_build_graph/host/hbg_trace.h"
#include "runtime/runtime.h"
#include "simpler/status.h"

#define HBG_DEFAULT_HEAP (64ull << 20)

struct rt_run {
    rt_host_run h;   /* first: rt_run_finalize frees the run through it */
    sp_geometry geo; /* the device's: task validation checks lanes against its clusters */
    uint32_t sched_threads;
    uint32_t task_count;
    uint64_t edge_count;
    uint64_t image_bytes;
    uint64_t build_ns, upload_ns;
    uint32_t pred_tasks; /* predicated tasks: stats read the image's skip count */
    /* Replay: the graph this run replays (held), or the one it recorded
     * (not yet in the cache: kept at finalize if the run succeeded). */
    rt_graph_cache *graphs;
    rt_graph *entry;
    uint32_t replay; /* SP_RUN_* */
    uint32_t bank;
    uint64_t patch_bytes;
};
_Static_assert(offsetof(struct rt_run, h) == 0, "rt_run_finalize frees the run through h");

/* Commit the heap and run the orchestration into `g`. With `heap_auto`
 * the bank's heap may be larger than asked (a previous run grew it): the
 * graph gets all of it. */
static int build_graph(rt_run *r, const rt_prepare *p, hbg_graph *g, uint64_t heap, bool heap_auto,
                       sp_arena_request *req, hbg_recording *rec)
{
    const rt_loaded_callable *lc = p->callable;
    hbg_buffer bufs[SP_MAX_RUN_TENSORS];
    for (uint32_t i = 0; i < r->h.staging.count; i++)
        bufs[i] = (hbg_buffer){.dev = r->h.staging.t[i].dev,
                               .bytes = r->h.staging.t[i].bytes,
                               .host_map = r->h.staging.t[i].host_map,
                               .device = r->h.staging.t[i].device};
    *req = (sp_arena_request){.heap_bytes = heap, .shm_bytes = 0, .image_bytes = 0};
    int rc = sp_host_arena_commit(p->api, req, &r->h.arena);
    if (rc) {
        snprintf(p->err, p->err_len, "arena commit (heap %llu bytes): %s", (unsigned long long)heap,
                 sp_status_name(rc));
        return rc;
    }
    if (heap_auto && r->h.arena.size.heap_bytes > heap)
        heap = r->h.arena.size.heap_bytes;
    rc = hbg_graph_init(g, p->api, lc, r->h.arena.heap, heap, bufs, r->h.staging.count, p->scratch);
    if (rc) {
        snprintf(p->err, p->err_len, "graph init: %s", sp_status_name(rc));
        return rc;
    }
    g->redzones = p->check;
    g->heap_auto = heap_auto;
    if (rec) {
        /* A second build (the heap grew) notes afresh. */
        hbg_recording_free(rec);
        rec->never[0] = '\0';
        g->rec = rec;
    }
    g->check.lane_type = r->geo.lane_type;
    g->check.lanes = r->geo.lanes;
    hbg_graph_set_limits(g, p->config.graph_tasks, p->config.graph_bytes);
    uint64_t(*ph)[2] = r->h.trace.phase_ns;
    ph[SP_TRACE_PHASE_ORCHESTRATE][0] = sp_now_ns();
    /* The device holds the crash guard's handlers. */
    uint64_t orch_timeout = p->orch_timeout_ns;
    int sig = rt_orch_guarded_call(lc->orch_entry, &g->orch, &r->h.staging.device_args,
                                   orch_timeout, NULL, NULL);
    if (sig == SP_FAULT_INTERRUPT) {
        snprintf(p->err, p->err_len,
                 "orchestration '%s' of callable %u timed out: still running after %llu ms "
                 "(orch_timeout_us), stopped while building the graph (%u tasks submitted)",
                 lc->view.orch_entry, lc->id, (unsigned long long)(orch_timeout / 1000000),
                 g->task_count);
        return SP_EORCH_CRASH;
    }
    if (sig) {
        snprintf(p->err, p->err_len,
                 "orchestration '%s' of callable %u crashed with %s while building the graph "
                 "(%u tasks submitted)",
                 lc->view.orch_entry, lc->id, sp__fault_name(sig), g->task_count);
        return SP_EORCH_CRASH;
    }
    ph[SP_TRACE_PHASE_ORCHESTRATE][1] = ph[SP_TRACE_PHASE_WIRE][0] = sp_now_ns();
    if ((rc = hbg_graph_finish(g)) != SP_OK)
        snprintf(p->err, p->err_len, "%s", g->message);
    return rc;
}

/* The graph's outputs outgrew the default heap: may it be built again with
 * a heap of `need` bytes? Only if the device has them free, and the
 * orchestration wrote no control tensor (a second run of it would write
 * them again). Else the message says what the graph needs and the limit. */
static bool may_rebuild(const rt_prepare *p, const hbg_graph *g, uint64_t need)
{
    const rt_loaded_callable *lc = p->callable;
    sp_device_info dev;
    if (rt_describe(p, &dev) != SP_OK)
        return false;
    uint64_t free_bytes =
        dev.memory_bytes > dev.committed_bytes ? dev.memory_bytes - dev.committed_bytes : 0;
    if (need > free_bytes) {
        snprintf(p->err, p->err_len,
                 "callable %u: the graph's outputs need %llu bytes of heap; device %d has %llu "
                 "of its %llu bytes free: open the device with more memory "
                 "(sp_settings.memory_bytes, SIMPLER_SIM_MEMORY_MB)",
                 lc->id, (unsigned long long)need, dev.device_id, (unsigned long long)free_bytes,
                 (unsigned long long)dev.memory_bytes);
        return false;
    }
    if (g->control_writes) {
        snprintf(p->err, p->err_len,
                 "callable %u: the graph's outputs need %llu bytes of heap, more than the "
                 "default %llu, and its orchestration writes control tensors, so it is not run "
                 "twice: set sp_call_config.heap_bytes to %llu",
                 lc->id, (unsigned long long)need, (unsigned long long)g->heap_bytes,
                 (unsigned long long)need);
        return false;
    }
    return true;
}

/* Keep the record of the graph just written at `image` (before its upload)
 * in a new cache entry held by the run: a graph that may not be kept, that
 * would not fit the cache's byte bound, or whose record finds no host
 * memory, is simply not (the run goes on fresh). */
static void record_graph(rt_run *r, const rt_prepare *p, const rt_graph_key *key, hbg_graph *g,
                         hbg_recording *rec, const hbg_layout *l, uint8_t *image)
{
    hbg_record *rd;
    int rc =
        hbg_record_make(&rd, rec, g, l, image, &r->h.staging, &r->h.arena, p->args, p->dev_bank);
    if (rc == SP_ENOTSUP) {
        SP_DEBUG("callable %u: graph not kept: %s", p->callable->id, rec->never);
        return;
    }
    rt_graph *e = rc ? NULL : rt_graph_new(key);
    if (!e) {
        hbg_record_free(rd);
        SP_WARN("callable %u: graph not kept: no host memory for its record of %u tasks",
                p->callable->id, g->task_count);
        return;
    }
    e->record = rd;
    e->record_bytes = hbg_record_bytes(rd);
    e->free_record = hbg_record_free;
    e->reads = rec->reads;
    e->read_count = rec->read_count;
    rec->reads = NULL;
    rec->read_count = rec->read_cap = 0;
    /* The bound is set once, when the device is attached: no lock needed. */
    if (e->record_bytes + e->key_len + (uint64_t)e->read_count * sizeof *e->reads >
        p->graphs->max_bytes) {
        SP_DEBUG("callable %u: graph of %llu bytes not kept: the cache holds %llu "
                 "(settings.graph_cache_bytes)",
                 p->callable->id, (unsigned long long)e->record_bytes,
                 (unsigned long long)p->graphs->max_bytes);
        rt_graph_cache_release(p->graphs, e);
        return;
    }
    ((hbg_image *)image)->replay_tag = rd->tag; /* the upload makes the bank hold it */
    r->entry = e;
    r->replay = SP_RUN_RECORDED;
}

/* Run the orchestration and turn its graph into an uploaded image. The heap
 * is sp_call_config.heap_bytes, or (0) sized from the graph: a graph whose
 * outputs outgrow the default is measured and built again with a heap that
 * holds them, bounded by the device's free memory. With `rec` the build is
 * recorded under `key`. */
static int build_and_upload_graph(rt_run *r, const rt_prepare *p, hbg_graph *g,
                                  const rt_graph_key *key, hbg_recording *rec)
{
    const rt_loaded_callable *lc = p->callable;
    const bool heap_auto = p->config.heap_bytes == 0;
    sp_arena_request req;
    int rc = build_graph(r, p, g, heap_auto ? HBG_DEFAULT_HEAP : p->config.heap_bytes, heap_auto,
                         &req, rec);
    if (rc == SP_EDEVMEM && g->heap_short) {
        /* Room for the red zones' rounding too: 1 MiB granules. */
        uint64_t need = (g->heap_used + (1ull << 20) - 1) & ~((1ull << 20) - 1);
        if (!may_rebuild(p, g, need))
            return rc;
        SP_DEBUG("callable %u: the graph's outputs need %llu bytes of heap: built again with "
                 "that heap",
                 lc->id, (unsigned long long)need);
        hbg_graph_free(g);
        rc = build_graph(r, p, g, need, heap_auto, &req, rec);
    }
    if (rc)
        return rc;
    uint64_t(*ph)[2] = r->h.trace.phase_ns;
    hbg_layout l;
    if ((rc = hbg_layout_compute(g, &l)) != SP_OK) {
        snprintf(p->err, p->err_len, "graph of %u tasks exceeds the image limits", g->task_count);
        return rc;
    }
    /* A graph that may be kept gets room for its replays' patch too. */
    req.image_bytes = l.total + (rec ? hbg_replay_patch_bytes(g, rec) : 0);
    if ((rc = sp_host_arena_commit(p->api, &req, &r->h.arena)) != SP_OK) {
        snprintf(p->err, p->err_len, "image of %llu bytes (%u tasks) does not fit: %s",
                 (unsigned long long)l.total, g->task_count, sp_status_name(rc));
        return rc;
    }
    rc = hbg_image_write(g, &l, r->h.arena.image, lc->kernel_table, lc->kernel_count,
                         p->kernel_timeout_ns);
    if (rc) {
        snprintf(p->err, p->err_len, "host staging of %llu bytes for the image: %s",
                 (unsigned long long)l.total, sp_status_name(rc));
        return rc;
    }
    void *image = hbg_image_of(g);
    if ((rc = hbg_trace_prepare(&r->h.trace, p, g, r->sched_threads, image)) != SP_OK)
        return rc;
    if (rec)
        record_graph(r, p, key, g, rec, &l, image);
    uint64_t t0 = sp_now_ns();
    ph[SP_TRACE_PHASE_WIRE][1] = ph[SP_TRACE_PHASE_UPLOAD][0] = t0;
    rc = sp_host_copy_to_device(p->api, r->h.arena.image, image, l.total);
    r->upload_ns = sp_now_ns() - t0;
    ph[SP_TRACE_PHASE_UPLOAD][1] = t0 + r->upload_ns;
    if (rc) {
        snprintf(p->err, p->err_len, "uploading the %llu-byte image: %s",
                 (unsigned long long)l.total, sp_status_name(rc));
        return rc;
    }
    r->task_count = g->task_count;
    r->edge_count = hbg_graph_edge_count(g);
    r->image_bytes = l.total;
    r->pred_tasks = g->pred_tasks;
    return SP_OK;
}

static int build_and_upload(rt_run *r, const rt_prepare *p, hbg_graph *g, const rt_graph_key *key)
{
    hbg_recording rec_store = {.callable = p->callable, .args = p->args};
    hbg_recording *rec = key ? &rec_store : NULL;
    int rc = build_and_upload_graph(r, p, g, key, rec);
    if (rec)
        hbg_recording_free(rec);
    return rc;
}

/* Replay policy AUTO / ONLY: the run's graph key and the recorded graph
 * for it (*hit, held), or in *key the key a miss records under (NULL: the
 * graph is never kept, the run goes fresh). ONLY and a miss:
 * SP_EREPLAY_MISS naming the callable and why, before anything is staged. */
static int replay_lookup(const rt_prepare *p, rt_graph **hit, const rt_graph_key **key)
{
    const rt_loaded_callable *lc = p->callable;
    *hit = NULL;
    *key = NULL;
    char never[160] = "";
    bool stale = false;
    rt_host_scratch *ks = &p->scratch[HBG_STORE_KEY];
    if (p->check)
        snprintf(never, sizeof never,
                 "checking-mode runs (red zones, SP_CALL_CHECK) are never kept");
    else if (rt_host_scratch_reserve(ks, sizeof(rt_graph_key)) != SP_OK)
        snprintf(never, sizeof never, "no host memory for its graph key");
    else {
        rt_graph_key *k = ks->ptr;
        int rc = rt_graph_key_build(k, lc, p->args, &p->config, false);
        if (rc == SP_ENOTSUP)
            snprintf(never, sizeof never,
                     "its orchestration's config says SP_ORCH_REPLAY_NEVER: never kept");
        else if (rc)
            snprintf(never, sizeof never, "its arguments make no graph key (%s)",
                     sp_status_name(rc));
        else if (!(*hit = rt_graph_cache_acquire(p->graphs, k, p->args, &stale)))
            *key = k;
    }
    if (*hit || p->replay != RT_REPLAY_ONLY)
        return SP_OK;
    snprintf(p->err, p->err_len, "callable %u ('%s'): replay only (SP_CALL_REPLAY_ONLY), and %s",
             lc->id, lc->view.orch_entry,
             never[0] ? never
             : stale  ? "a control-tensor value its orchestration read while recording differs "
                        "in this run (a run with SP_CALL_REPLAY_AUTO records it again)"
                      : "no graph is recorded for this graph key (argument geometry and "
                        "shaping scalars)");
    return SP_EREPLAY_MISS;
}

/* A hit: no orchestration, no derivation. The arguments are staged (by
 * the caller), the arena committed as the record needs, and the bank's
 * image made the record's with this run's sources patched in. */
static int replay_graph(rt_run *r, const rt_prepare *p, rt_graph *e)
{
    hbg_record *rd = e->record;
    sp_arena_request req = {.heap_bytes = rd->heap_need,
                            .image_bytes = rd->patch_off + rd->reloc_count * sizeof(hbg_patch)};
    int rc = sp_host_arena_commit(p->api, &req, &r->h.arena);
    if (rc) {
        snprintf(p->err, p->err_len, "replay: arena commit (heap %llu, image %llu bytes): %s",
                 (unsigned long long)req.heap_bytes, (unsigned long long)req.image_bytes,
                 sp_status_name(rc));
        return rc;
    }
    const hbg_task *tasks = (const hbg_task *)(rd->image + ((hbg_image *)rd->image)->tasks_off);
    rc = hbg_trace_prepare_replay(&r->h.trace, p, rd->trace_slices, rd->task_count, rd->deps,
                                  rd->edge_count, tasks, r->sched_threads);
    if (rc)
        return rc;
    uint64_t(*ph)[2] = r->h.trace.phase_ns;
    uint64_t t0 = sp_now_ns();
    ph[SP_TRACE_PHASE_UPLOAD][0] = t0;
    rc = hbg_replay_upload(rd, p, &r->h.staging, &r->h.arena, r->h.trace.level ? r->h.trace.dev : 0,
                           &p->scratch[HBG_STORE_IMAGE], &r->patch_bytes);
    r->upload_ns = sp_now_ns() - t0;
    ph[SP_TRACE_PHASE_UPLOAD][1] = t0 + r->upload_ns;
    if (rc)
        return rc;
    r->task_count = rd->task_count;
    r->edge_count = rd->edge_count;
    r->pred_tasks = rd->pred_tasks;
    r->image_bytes = rd->image_bytes;
    r->replay = SP_RUN_REPLAYED;
    rt_graph_cache_count_replay(p->graphs);
    return SP_OK;
}

static int run_prepare(const rt_prepare *p, rt_run **out)
{
    *out = NULL;
    sp_device_info dev;
    int rc = rt_describe(p, &dev);
    if (rc)
        return rc;
    const sp_geometry *geo = &dev.geometry;
    /* One AICPU thread is the orchestrator's on a chip (tmr uses it): the
     * schedulers are the others, the same count for both runtimes. */
    uint32_t max = geo->aicpu_threads > 1 ? geo->aicpu_threads - 1 : 1;
    uint32_t threads = p->config.sched_threads ? p->config.sched_threads : max;
    if (threads > max) {
        snprintf(p->err, p->err_len,
                 "config asks for %u scheduler threads; device %d has %u: a device's threads are "
                 "set when it is first opened, so open the worker with prewarm.sched_threads = %u "
                 "(sp_worker_options)",
                 threads, dev.device_id, max, threads);
        return SP_EINVAL;
    }
    const rt_loaded_callable *lc = p->callable;
    if (lc->orch_config && p->args &&
        (p->args->tensor_count < lc->config.tensor_count ||
         p->args->scalar_count < lc->config.scalar_count)) {
        snprintf(p->err, p->err_len,
                 "callable %u expects %u tensors and %u scalars; the run passes %u and %u", lc->id,
                 lc->config.tensor_count, lc->config.scalar_count, p->args->tensor_count,
                 p->args->scalar_count);
        return SP_EARGCOUNT;
    }
    rt_graph *hit = NULL;
    const rt_graph_key *key = NULL;
    /* The host's cost of the run counts the key and the lookup too. */
    const uint64_t t_host = sp_now_ns();
    if (p->replay != RT_REPLAY_OFF && p->graphs && (rc = replay_lookup(p, &hit, &key)) != SP_OK)
        return rc;
    rt_run *r = calloc(1, sizeof *r);
    if (!r) {
        if (hit)
            rt_graph_cache_release(p->graphs, hit);
        return SP_ENOMEM;
    }
    rt_host_run_init(&r->h, p, geo);
    r->geo = *geo;
    r->sched_threads = threads;
    r->graphs = p->graphs;
    r->bank = p->dev_bank;
    r->entry = hit; /* held until finalize */
    uint64_t t0 = sp_now_ns();
    /* A replay runs no orchestration: no host-maps for control reads. */
    rc = rt_staging_stage(&r->h.staging, p->api, p->args, !hit, p->check, p->err, p->err_len);
    if (rc) {
        if (hit)
            rt_graph_cache_release(p->graphs, hit);
        free(r);
        return rc;
    }
    r->h.trace.phase_ns[SP_TRACE_PHASE_STAGE][0] = t0;
    r->h.trace.phase_ns[SP_TRACE_PHASE_STAGE][1] = sp_now_ns();
    if (hit) {
        rc = replay_graph(r, p, hit);
    } else {
        hbg_graph g;
        /* Zeroed: build_and_upload can fail (arena commit) before graph
         * init, and hbg_graph_free below must then free nothing. */
        memset(&g, 0, sizeof g);
        rc = build_and_upload(r, p, &g, key);
        if (rc) /* a runaway graph must not keep its memory until the context goes */
            hbg_graph_give_back(&g);
        hbg_graph_free(&g);
        /* The orchestration is done with control tensors: drop the host-maps. */
        rt_staging_unmap(&r->h.staging, p->api);
    }
    r->build_ns = sp_now_ns() - t_host - r->upload_ns;
    if (rc) {
        if (r->entry) {
            if (hit)
                hbg_record_bank_drop(hit->record, r->bank);
            rt_graph_cache_release(p->graphs, r->entry);
        }
        rt_trace_dev_free(&r->h.trace, p->api);
        rt_staging_release(&r->h.staging, p->api);
        free(r);
        return rc;
    }
    *out = r;
    return SP_OK;
}

static int run_launch(rt_run *r)
{
    return rt_host_run_launch(&r->h, hbg_device_main, (void *)(uintptr_t)r->h.arena.image,
                              r->sched_threads);
}

/* The device side failed: a kernel fault is explained from the image's
 * report (the host knows the kernels' names); anything else by its name. */
static int explain(rt_run *r, int rc)
{
    char *err = r->h.err;
    size_t err_len = r->h.err_len;
    hbg_image h;
    if ((rc == SP_EKERNEL_FAULT || rc == SP_EKERNEL_TIMEOUT) &&
        sp_host_copy_from_device(r->h.api, &h, r->h.arena.image, sizeof h) == SP_OK &&
        atomic_load_explicit(&h.fault.claimed, memory_order_relaxed))
        return rt_fault_report_format(r->h.api, &h.fault, r->h.callable, err, err_len);
    if (rc == SP_EKERNEL_OVERRUN &&
        sp_host_copy_from_device(r->h.api, &h, r->h.arena.image, sizeof h) == SP_OK &&
        atomic_load_explicit(&h.overrun.claimed, memory_order_relaxed))
        return rt_overrun_format(r->h.api, &h.overrun, r->h.callable, err, err_len);
    snprintf(err, err_len, "device side failed: %s", sp_status_name(rc));
    return rc;
}

static int run_poll(rt_run *r)
{
    int rc = rt_host_run_poll(&r->h);
    if (rc != SP_OK && rc != SP_RUN_NOT_READY)
        rc = explain(r, rc);
    return rc;
}

static int run_wait(rt_run *r, uint64_t deadline_ns)
{
    int rc = rt_host_run_wait(&r->h, deadline_ns);
    if (rc && rc != SP_ETIMEOUT)
        rc = explain(r, rc);
    return rc;
}

/* Copy back and free the run; then a recorded graph of a run that
 * succeeded is kept, and a replayed one is let go (its bank's image no
 * longer trusted if the run failed: a kernel may have written anywhere). */
static int run_finalize(rt_run *r, int completed_ok)
{
    rt_graph_cache *c = r->graphs;
    rt_graph *e = r->entry;
    const bool replayed = r->replay == SP_RUN_REPLAYED;
    const uint32_t bank = r->bank;
    int rc = rt_run_finalize(r, completed_ok);
    if (!e)
        return rc;
    const bool ok = completed_ok && rc == SP_OK;
    if (replayed && !ok)
        hbg_record_bank_drop(e->record, bank);
    if (!replayed && ok && rt_graph_cache_insert(c, e) != SP_OK)
        SP_DEBUG("a recorded graph outgrew the cache's byte bound: not kept");
    rt_graph_cache_release(c, e);
    return rc;
}

static void run_stats(const rt_run *r, sp_run_stats *out)
{
    memset(out, 0, sizeof *out);
    /* A recording run keeps its graph only if it succeeds. */
    out->replay = r->replay == SP_RUN_RECORDED && r->h.result != SP_OK ? SP_RUN_FRESH : r->replay;
    out->patch_bytes = r->patch_bytes;
    out->tasks = r->task_count;
    out->edges = r->edge_count;
    out->build_ns = r->build_ns;
    out->upload_ns = r->upload_ns;
    out->device_ns = r->h.device_ns;
    out->image_bytes = r->image_bytes;
    /* The two device counters sit side by side: one copy for both. */
    _Static_assert(offsetof(hbg_image, chained) == offsetof(hbg_image, skipped) + 4,
                   "hbg_image: skipped and chained adjacent");
    uint32_t counts[2];
    if ((r->pred_tasks || r->edge_count) &&
        sp_host_copy_from_device(r->h.api, counts, r->h.arena.image + offsetof(hbg_image, skipped),
                                 sizeof counts) == SP_OK) {
        out->skipped = counts[0];
        out->chained = counts[1];
    }
}

static int run_trace(rt_run *r, sp_run_trace *io)
{
    return rt_host_run_trace(&r->h, r->sched_threads, io);
}

const rt_ops hbg_runtime_ops = {
    .name = "hbg",
    .contract = rt_contract,
    .prepare = run_prepare,
    .launch = run_launch,
    .poll = run_poll,
    .wait = run_wait,
    .finalize = run_finalize,
    .stats = run_stats,
    .trace = run_trace,
};
