/* The trace model behind the CLI's exporters (trace_model.h): per-task
 * figures from the records, ready times from the edges, the critical path
 * by task durations, kernel names from the callable blob. */
#include "cli/trace_model.h"

#include <stdlib.h>
#include <string.h>

#include "simpler/callable.h"
#include "simpler/orchestration.h"

static void load_names(trace_model *m, const char *path)
{
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f)
        return;
    void *blob = NULL;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (blob = malloc((size_t)size)) && fread(blob, 1, (size_t)size, f) != (size_t)size) {
        free(blob);
        blob = NULL;
    }
    fclose(f);
    sp_callable_view v;
    if (blob && sp_callable_validate(blob, (size_t)size, &v, NULL, 0) == 0) {
        uint32_t n = v.header->kernel_count;
        m->names = calloc(n ? n : 1, sizeof *m->names);
        for (uint32_t i = 0; m->names && i < n; i++) {
            const char *s = sp_callable_string(&v, v.kernels[i].entry);
            m->names[i].func_id = v.kernels[i].func_id;
            snprintf(m->names[i].name, sizeof m->names[i].name, "%s", s ? s : "?");
        }
        if (m->names)
            m->name_count = n;
    }
    free(blob);
}

const char *tm_kernel_name(const trace_model *m, int32_t func_id)
{
    if (func_id < 0)
        return "dummy";
    for (uint32_t i = 0; i < m->name_count; i++)
        if (m->names[i].func_id == func_id)
            return m->names[i].name;
    return "unnamed"; /* the callable could not be read */
}

const char *tm_edge_kind_name(uint32_t kind)
{
    static const char *const names[SP_TRACE_EDGE_KINDS] = {"creator", "RAW", "WAW", "WAR",
                                                           "explicit"};
    return kind < SP_TRACE_EDGE_KINDS ? names[kind] : "?";
}

const char *tm_shape_name(uint8_t shape)
{
    switch (shape) {
    case SP_SHAPE_AIC:
        return "AIC";
    case SP_SHAPE_AIV:
        return "AIV";
    case SP_SHAPE_MIX:
        return "MIX";
    default:
        return "dummy";
    }
}

void tm_core_place(const trace_model *m, uint32_t core, uint32_t *cluster, uint32_t *lane)
{
    uint32_t C = m->tr->clusters ? m->tr->clusters : 1;
    if (core < C) {
        *cluster = core;
        *lane = 0;
    } else {
        *cluster = (core - C) / 2;
        *lane = 1 + (core - C) % 2;
    }
}

static bool is_task_record(const sp_trace_record *r)
{
    return r->kind == SP_TRACE_SLICE || r->kind == SP_TRACE_DUMMY;
}

static int cmp_edge_consumer(const void *a, const void *b)
{
    const sp_trace_edge *x = a, *y = b;
    return x->consumer < y->consumer ? -1 : x->consumer > y->consumer;
}

int trace_model_build(trace_model *m, const sp_run_trace *tr, const sp_run_stats *stats,
                      const char *runtime, const char *callable_path)
{
    memset(m, 0, sizeof *m);
    m->tr = tr;
    m->stats = stats;
    m->runtime = runtime;
    uint64_t n = stats ? stats->tasks : 0;
    for (uint64_t i = 0; i < tr->record_count; i++)
        if (is_task_record(&tr->records[i]) && tr->records[i].task + 1 > n)
            n = tr->records[i].task + 1;
    for (uint64_t i = 0; i < tr->edge_count; i++)
        if (tr->edges[i].consumer + 1 > n)
            n = tr->edges[i].consumer + 1;
    m->task_count = n;
    m->tasks = calloc(n ? n : 1, sizeof *m->tasks);
    if (!m->tasks)
        return -1;
    load_names(m, callable_path);

    m->t0_ns = tr->launch_ns;
    m->end_ns = tr->done_ns;
    for (int p = 0; p < SP_TRACE_PHASES; p++)
        if (tr->phase_ns[p][0] && tr->phase_ns[p][0] < m->t0_ns)
            m->t0_ns = tr->phase_ns[p][0];
    for (uint64_t i = 0; i < tr->record_count; i++) {
        const sp_trace_record *r = &tr->records[i];
        if (r->dispatch_ns && r->dispatch_ns < m->t0_ns)
            m->t0_ns = r->dispatch_ns;
        if (r->end_ns > m->end_ns)
            m->end_ns = r->end_ns;
        if (!is_task_record(r))
            continue;
        tm_task *t = &m->tasks[r->task];
        if (!t->seen) {
            t->seen = true;
            t->shape = r->shape;
            t->func_id = r->func_id;
            t->submit_ns = r->submit_ns;
            t->dispatch_ns = r->dispatch_ns;
            t->start_ns = r->start_ns;
            t->end_ns = r->end_ns;
            t->first_rec = t->last_rec = (int64_t)i;
            continue;
        }
        if (t->func_id < 0 || (r->lane == 0 && r->func_id >= 0))
            t->func_id = r->func_id;
        if (r->dispatch_ns < t->dispatch_ns)
            t->dispatch_ns = r->dispatch_ns;
        if (r->start_ns < t->start_ns) {
            t->start_ns = r->start_ns;
            t->first_rec = (int64_t)i;
        }
        if (r->end_ns > t->end_ns) {
            t->end_ns = r->end_ns;
            t->last_rec = (int64_t)i;
        }
    }

    /* Ready: the last producer's end, not before submit; roots at submit
     * (tmr) or launch (hbg). Critical path: producers precede consumers. */
    sp_trace_edge *e = NULL;
    if (tr->edge_count) {
        e = malloc(tr->edge_count * sizeof *e);
        if (!e)
            return -1;
        memcpy(e, tr->edges, tr->edge_count * sizeof *e);
        qsort(e, tr->edge_count, sizeof *e, cmp_edge_consumer);
    }
    uint64_t k = 0;
    for (uint64_t c = 0; c < n; c++) {
        tm_task *t = &m->tasks[c];
        t->ready_ns = t->submit_ns ? t->submit_ns : tr->launch_ns;
        t->cp_prev = -1;
        uint64_t best = 0;
        for (; k < tr->edge_count && e[k].consumer == c; k++) {
            const tm_task *p = &m->tasks[e[k].producer];
            if (e[k].producer >= c || !p->seen)
                continue;
            if (p->end_ns > t->ready_ns)
                t->ready_ns = p->end_ns;
            if (p->cp_ns > best || t->cp_prev < 0) {
                best = p->cp_ns;
                t->cp_prev = (int64_t)e[k].producer;
            }
        }
        t->cp_ns = best + (t->seen && t->end_ns > t->start_ns ? t->end_ns - t->start_ns : 0);
    }
    free(e);
    return 0;
}

void trace_model_free(trace_model *m)
{
    free(m->tasks);
    free(m->names);
    memset(m, 0, sizeof *m);
}
