/* The worker's side of tracing: after a run completes (before its
 * finalize) the lane copies the module's trace into the lease's buffers,
 * grown as needed and reused; the wait that releases the run hands them to
 * the worker, where sp_worker_last_trace reads them. */
#include <stdlib.h>
#include <string.h>

#include "simpler/status.h"
#include "worker/worker_internal.h"

static int grow(void **p, uint64_t *cap, uint64_t need, size_t elem)
{
    if (need <= *cap)
        return SP_OK;
    void *n = realloc(*p, need * elem);
    if (!n)
        return SP_ENOMEM;
    *p = n;
    *cap = need;
    return SP_OK;
}

void wk_lease_trace_capture(sp_worker *w, wk_lease *l)
{
    sp_run_trace *t = &l->trace;
    void *recs = t->records, *edges = t->edges;
    uint64_t rcap = t->record_cap, ecap = t->edge_cap;
    memset(t, 0, sizeof *t);
    /* First the counts, then the copy into buffers that fit them. */
    int rc = w->m.simpler_run_trace(w->ctx, l->run, t);
    if (rc == SP_OK && t->level &&
        (rc = grow(&recs, &rcap, t->record_count, sizeof(sp_trace_record))) == SP_OK &&
        (rc = grow(&edges, &ecap, t->edge_count, sizeof(sp_trace_edge))) == SP_OK) {
        t->records = recs;
        t->record_cap = rcap;
        t->edges = edges;
        t->edge_cap = ecap;
        rc = w->m.simpler_run_trace(w->ctx, l->run, t);
    }
    if (rc)
        t->level = 0; /* no trace rather than a partial one; the run itself stands */
    t->records = recs;
    t->record_cap = rcap;
    t->edges = edges;
    t->edge_cap = ecap;
}

void wk_lease_trace_take(sp_worker *w, wk_lease *l)
{
    sp_run_trace mine = w->trace;
    w->trace = l->trace;
    l->trace = mine; /* the lease reuses the older buffers */
}

void wk_trace_free(sp_worker *w)
{
    free(w->trace.records);
    free(w->trace.edges);
    memset(&w->trace, 0, sizeof w->trace);
    for (uint32_t s = 0; s < SP_PIPELINE_MAX_DEPTH; s++) {
        free(w->lease[s].trace.records);
        free(w->lease[s].trace.edges);
        memset(&w->lease[s].trace, 0, sizeof w->lease[s].trace);
    }
}

SP_EXPORT const sp_run_trace *sp_worker_last_trace(const sp_worker *w)
{
    return w && w->trace.level ? &w->trace : NULL;
}
