/* host_build_graph's part of tracing (hbg_trace.h). The buffer holds
 * exactly the records the graph can produce: one per block per lane with a
 * kernel, one per dummy task, and room for scheduler phases at level >= 2. */
#include "runtime/host_build_graph/host/hbg_trace.h"

#include <stdio.h>
#include <stdlib.h>

#include "runtime/host_build_graph/device/hbg_image.h"
#include "simpler/status.h"

_Static_assert((int)SP_EDGE_CREATOR == SP_TRACE_EDGE_CREATOR &&
                   (int)SP_EDGE_EXPLICIT == SP_TRACE_EDGE_EXPLICIT &&
                   (int)SP_EDGE_KINDS == SP_TRACE_EDGE_KINDS,
               "trace edge kinds are the TensorMap's");

int hbg_trace_prepare_replay(rt_trace_dev *t, const rt_prepare *p, uint64_t slices,
                             uint32_t task_count, const hbg_dep *deps, uint64_t edge_count,
                             const hbg_task *tasks, uint32_t threads)
{
    uint32_t level = p->config.trace_level;
    if (!level)
        return SP_OK;
    uint64_t recs = rt_trace_records_for(level, slices, task_count, threads);
    int rc = rt_trace_dev_alloc(t, p->api, level, recs, 0, p->callable, p->err, p->err_len);
    if (rc)
        return rc;
    if (edge_count) {
        t->host_edges = malloc(edge_count * sizeof *t->host_edges);
        if (!t->host_edges) {
            snprintf(p->err, p->err_len, "trace: %llu edges", (unsigned long long)edge_count);
            return SP_ENOMEM;
        }
    }
    /* The record's edges, consumer by consumer as the build derived them. */
    uint64_t at = 0;
    for (uint32_t i = 0; i < task_count; i++)
        for (uint32_t d = 0; d < tasks[i].fanin_init && at < edge_count; d++, at++)
            t->host_edges[t->host_edge_count++] = (sp_trace_edge){
                .producer = deps[at].producer, .consumer = i, .kind = deps[at].kind};
    return SP_OK;
}

int hbg_trace_prepare(rt_trace_dev *t, const rt_prepare *p, const hbg_graph *g, uint32_t threads,
                      void *image)
{
    uint32_t level = p->config.trace_level;
    if (!level)
        return SP_OK;
    uint64_t slices = 0;
    for (uint32_t i = 0; i < g->task_count; i++) {
        const hbg_build_task *bt = &g->tasks[i];
        uint32_t lanes = 0;
        for (int l = 0; l < 3; l++)
            lanes += bt->kernel[l] >= 0;
        slices += (uint64_t)bt->block_num * lanes;
    }
    uint64_t recs = rt_trace_records_for(level, slices, g->task_count, threads);
    int rc = rt_trace_dev_alloc(t, p->api, level, recs, 0, p->callable, p->err, p->err_len);
    if (rc)
        return rc;
    if (g->dep_count) {
        t->host_edges = malloc(g->dep_count * sizeof *t->host_edges);
        if (!t->host_edges) {
            snprintf(p->err, p->err_len, "trace: %llu edges", (unsigned long long)g->dep_count);
            return SP_ENOMEM;
        }
    }
    for (uint32_t i = 0; i < g->task_count; i++) {
        const hbg_build_task *bt = &g->tasks[i];
        for (uint32_t d = 0; d < bt->dep_count; d++) {
            const hbg_dep *dep = &g->deps[bt->deps_begin + d];
            t->host_edges[t->host_edge_count++] =
                (sp_trace_edge){.producer = dep->producer, .consumer = i, .kind = dep->kind};
        }
    }
    ((hbg_image *)image)->trace = t->dev;
    return SP_OK;
}
