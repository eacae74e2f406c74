/* The trace recorder's host side: size, allocate and clear a run's device
 * trace buffer at prepare, read it back once after the run (keeping only
 * written records), hand it out through simpler_run_trace, free it at
 * finalize. Device-side writing is inline in runtime/device/trace_write.h. */
#include "runtime/host/trace_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simpler/status.h"

#define ALIGN64(x) (((x) + 63) & ~(uint64_t)63)

uint64_t rt_trace_records_for(uint32_t level, uint64_t slices, uint64_t tasks, uint32_t threads)
{
    if (!level)
        return 0;
    uint64_t n = slices + tasks; /* + dummies (at most one per task) */
    if (level >= SP_TRACE_SCHED)
        n += 2 * slices + 64; /* a pass and an idle wait per dispatch, roughly */
    if (level >= SP_TRACE_SUBMITS)
        n += tasks;
    return n + (uint64_t)(threads + 1) * SP_TRACE_CHUNK;
}

int rt_trace_dev_alloc(rt_trace_dev *t, const sp_host_api *api, uint32_t level, uint64_t rec_cap,
                       uint64_t edge_cap, const rt_loaded_callable *lc, char *err, size_t err_len)
{
    /* t starts zeroed (its owner's calloc); phase times may already be set. */
    if (!level)
        return SP_OK;
    if (level > SP_TRACE_SUBMITS) {
        snprintf(err, err_len, "trace_level %u: want 0..%d", level, SP_TRACE_SUBMITS);
        return SP_EINVAL;
    }
    uint64_t rec_off = ALIGN64(sizeof(rt_trace_buf));
    uint64_t edge_off = ALIGN64(rec_off + rec_cap * sizeof(sp_trace_record));
    uint64_t fid_off = ALIGN64(edge_off + edge_cap * sizeof(sp_trace_edge));
    uint64_t bytes = ALIGN64(fid_off + (uint64_t)lc->kernel_count * sizeof(int32_t) + 4);
    int rc = sp_host_malloc(api, bytes, &t->dev);
    if (rc) {
        snprintf(err, err_len, "trace buffer of %llu bytes (%llu records, %llu edges): %s",
                 (unsigned long long)bytes, (unsigned long long)rec_cap,
                 (unsigned long long)edge_cap, sp_status_name(rc));
        t->dev = 0;
        return rc;
    }
    t->level = level;
    t->bytes = bytes;
    t->rec_cap = rec_cap;
    t->edge_cap = edge_cap;
    rt_trace_buf h;
    memset(&h, 0, sizeof h);
    h.level = level;
    h.rec_cap = rec_cap;
    h.edge_cap = edge_cap;
    h.recs = (sp_trace_record *)(uintptr_t)(t->dev + rec_off);
    h.edges = (sp_trace_edge *)(uintptr_t)(t->dev + edge_off);
    h.func_ids = t->dev + fid_off;
    h.ticks0 = sp__ticks();
    h.ns0 = sp_now_ns();
    int32_t fids[SP_CALLABLE_MAX_KERNELS];
    for (uint32_t i = 0; i < lc->kernel_count && i < SP_CALLABLE_MAX_KERNELS; i++)
        fids[i] = lc->kernels[i].func_id;
    /* Records must read as unwritten (kind 0): chunks may end part-filled. */
    if ((rc = sp_host_memset(api, t->dev + rec_off, 0, bytes - rec_off)) != SP_OK ||
        (rc = sp_host_copy_to_device(api, t->dev, &h, sizeof h)) != SP_OK ||
        (lc->kernel_count &&
         (rc = sp_host_copy_to_device(api, h.func_ids, fids, lc->kernel_count * sizeof(int32_t))) !=
             SP_OK)) {
        snprintf(err, err_len, "clearing the trace buffer: %s", sp_status_name(rc));
        rt_trace_dev_free(t, api);
        return rc;
    }
    return SP_OK;
}

/* Record times are sp__ticks(): map them onto sp_now_ns() through the
 * calibration pair taken at prepare and one taken now. */
static void ticks_to_ns(rt_trace_dev *t, const rt_trace_buf *h)
{
    if (SP_TICKS_ARE_NS)
        return;
    uint64_t ticks1 = sp__ticks(), ns1 = sp_now_ns();
    double rate = ticks1 > h->ticks0 ? (double)(ns1 - h->ns0) / (double)(ticks1 - h->ticks0) : 1.0;
    for (uint64_t i = 0; i < t->host_rec_count; i++) {
        sp_trace_record *r = &t->host_recs[i];
        uint64_t *ts[4] = {&r->submit_ns, &r->dispatch_ns, &r->start_ns, &r->end_ns};
        for (int k = 0; k < 4; k++)
            if (*ts[k])
                *ts[k] = h->ns0 + (uint64_t)((double)(int64_t)(*ts[k] - h->ticks0) * rate);
    }
}

static int read_back(rt_trace_dev *t, const sp_host_api *api)
{
    rt_trace_buf h;
    int rc = sp_host_copy_from_device(api, &h, t->dev, sizeof h);
    if (rc)
        return rc;
    uint64_t claimed = atomic_load_explicit(&h.rec_next, memory_order_relaxed);
    uint64_t n = claimed < t->rec_cap ? claimed : t->rec_cap;
    t->recs_dropped = atomic_load_explicit(&h.rec_dropped, memory_order_relaxed);
    t->host_recs = n ? malloc(n * sizeof *t->host_recs) : NULL;
    if (n && !t->host_recs)
        return SP_ENOMEM;
    if (n && (rc = sp_host_copy_from_device(api, t->host_recs, (uint64_t)(uintptr_t)h.recs,
                                            n * sizeof *t->host_recs)) != SP_OK)
        return rc;
    uint64_t k = 0; /* keep the written ones, in claim order */
    for (uint64_t i = 0; i < n; i++)
        if (t->host_recs[i].kind)
            t->host_recs[k++] = t->host_recs[i];
    t->host_rec_count = k;
    ticks_to_ns(t, &h);
    uint64_t e = h.edge_next < t->edge_cap ? h.edge_next : t->edge_cap;
    t->edges_dropped = h.edge_dropped;
    if (e) {
        t->dev_edges = malloc(e * sizeof *t->dev_edges);
        if (!t->dev_edges)
            return SP_ENOMEM;
        if ((rc = sp_host_copy_from_device(api, t->dev_edges, (uint64_t)(uintptr_t)h.edges,
                                           e * sizeof *t->dev_edges)) != SP_OK)
            return rc;
        t->dev_edge_count = e;
    }
    return SP_OK;
}

int rt_trace_dev_read(rt_trace_dev *t, const sp_host_api *api, sp_run_trace *io)
{
    io->level = t->level;
    if (!t->level)
        return SP_OK;
    if (!t->read) {
        int rc = read_back(t, api);
        if (rc)
            return rc;
        t->read = true;
    }
    memcpy(io->phase_ns, t->phase_ns, sizeof io->phase_ns);
    io->record_count = t->host_rec_count;
    io->records_dropped = t->recs_dropped;
    if (io->records && io->record_cap)
        memcpy(io->records, t->host_recs,
               (io->record_cap < t->host_rec_count ? io->record_cap : t->host_rec_count) *
                   sizeof *io->records);
    const sp_trace_edge *edges = t->host_edges ? t->host_edges : t->dev_edges;
    uint64_t ne = t->host_edges ? t->host_edge_count : t->dev_edge_count;
    io->edge_count = ne;
    io->edges_dropped = t->host_edges ? 0 : t->edges_dropped;
    if (io->edges && io->edge_cap && ne)
        memcpy(io->edges, edges, (io->edge_cap < ne ? io->edge_cap : ne) * sizeof *io->edges);
    return SP_OK;
}

void rt_trace_dev_free(rt_trace_dev *t, const sp_host_api *api)
{
    if (t->dev)
        sp_host_free(api, t->dev);
    free(t->host_edges);
    free(t->host_recs);
    free(t->dev_edges);
    memset(t, 0, sizeof *t);
}
