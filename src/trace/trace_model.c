/* The trace model behind the exporters (trace_model.h): per-task figures
 * from the records, ready times and depths from the edges, the critical
 * path by task durations, each queued payload's row on its core, kernel
 * names from the callable's view. */
#include "trace/trace_model.h"

#include <stdlib.h>
#include <string.h>

#include "simpler/callable.h"
#include "simpler/orchestration.h"
#include "simpler/status.h"

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
#define PALETTE_N (sizeof palette / sizeof palette[0])

static int load_names(trace_model *m, const sp_callable_view *v)
{
    if (!v || !v->header || !v->kernels)
        return SP_OK;
    uint32_t n = v->header->kernel_count;
    if (!n)
        return SP_OK;
    m->names = calloc(n, sizeof *m->names);
    if (!m->names)
        return SP_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        const char *s = sp_callable_string(v, v->kernels[i].entry);
        m->names[i].func_id = v->kernels[i].func_id;
        snprintf(m->names[i].name, sizeof m->names[i].name, "%s", s ? s : "?");
    }
    m->name_count = n;
    return SP_OK;
}

int tm_kernel_index(const trace_model *m, int32_t func_id)
{
    for (uint32_t i = 0; i < m->name_count; i++)
        if (m->names[i].func_id == func_id)
            return (int)i;
    return -1;
}

const char *tm_kernel_name(trace_model *m, int32_t func_id)
{
    if (func_id < 0)
        return "dummy";
    int i = tm_kernel_index(m, func_id);
    if (i >= 0)
        return m->names[i].name;
    snprintf(m->fallback_name, sizeof m->fallback_name, "f%d", func_id);
    return m->fallback_name;
}

const char *tm_kernel_colour(const trace_model *m, int32_t func_id)
{
    if (func_id < 0)
        return "#888888";
    int i = tm_kernel_index(m, func_id);
    return palette[(uint32_t)(i >= 0 ? i : func_id) % PALETTE_N];
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

bool tm_edge_critical(const trace_model *m, uint64_t producer, uint64_t consumer)
{
    return consumer < m->task_count && m->tasks[consumer].critical &&
           m->tasks[consumer].cp_prev == (int64_t)producer;
}

static int cmp_edge_consumer(const void *a, const void *b)
{
    const sp_trace_edge *x = a, *y = b;
    return x->consumer < y->consumer ? -1 : x->consumer > y->consumer;
}

/* Slice records ordered by core, then dispatch time (queue rows). */
typedef struct rec_ref {
    const sp_trace_record *r;
    uint64_t index;
} rec_ref;

static int cmp_rec_ref(const void *a, const void *b)
{
    const sp_trace_record *x = ((const rec_ref *)a)->r, *y = ((const rec_ref *)b)->r;
    if (x->core != y->core)
        return x->core < y->core ? -1 : 1;
    return x->dispatch_ns < y->dispatch_ns ? -1 : x->dispatch_ns > y->dispatch_ns;
}

/* Each slice's queued time (dispatch -> start) gets the lowest row of its
 * core that is free by its dispatch, so overlapping waits never share a
 * row (the JSON tracks, the SVG strip). */
static int assign_queue_rows(trace_model *m)
{
    const sp_run_trace *tr = m->tr;
    m->queue_row = calloc(tr->record_count ? tr->record_count : 1, 1);
    rec_ref *refs = malloc((tr->record_count ? tr->record_count : 1) * sizeof *refs);
    if (!m->queue_row || !refs) {
        free(refs);
        return SP_ENOMEM;
    }
    uint64_t n = 0;
    for (uint64_t i = 0; i < tr->record_count; i++)
        if (tr->records[i].kind == SP_TRACE_SLICE && tr->records[i].core != SP_TRACE_NO_CORE)
            refs[n++] = (rec_ref){&tr->records[i], i};
    qsort(refs, n, sizeof *refs, cmp_rec_ref);
    enum { MAX_ROWS = 32 };
    uint64_t row_free[MAX_ROWS];
    uint32_t core = UINT32_MAX;
    for (uint64_t k = 0; k < n; k++) {
        const sp_trace_record *r = refs[k].r;
        if (r->core != core) {
            core = r->core;
            memset(row_free, 0, sizeof row_free);
        }
        uint32_t row = 0;
        while (row < MAX_ROWS - 1 && row_free[row] > r->dispatch_ns)
            row++;
        row_free[row] = r->start_ns > r->dispatch_ns ? r->start_ns : r->dispatch_ns + 1;
        m->queue_row[refs[k].index] = (uint8_t)row;
        if (row + 1 > m->queue_rows)
            m->queue_rows = row + 1;
    }
    free(refs);
    return SP_OK;
}

int tm_build(trace_model *m, const sp_run_trace *tr, const sp_trace_info *info)
{
    memset(m, 0, sizeof *m);
    m->tr = tr;
    m->stats = info ? info->stats : NULL;
    m->runtime = info && info->runtime ? info->runtime : "";
    m->dot_detail_max =
        info && info->dot_detail_max ? info->dot_detail_max : SP_TRACE_DOT_DETAIL_MAX;
    m->cp_tail = -1;
    /* The run's task count (its stats), unless that is not a real one. */
    uint64_t n = m->stats && m->stats->tasks < (1ull << 32) ? m->stats->tasks : 0;
    for (uint64_t i = 0; i < tr->record_count; i++)
        if (tm_is_task_record(&tr->records[i]) && tr->records[i].task + 1 > n)
            n = tr->records[i].task + 1;
    for (uint64_t i = 0; i < tr->edge_count; i++)
        if (tr->edges[i].consumer + 1 > n)
            n = tr->edges[i].consumer + 1;
    m->task_count = n;
    m->tasks = calloc(n ? n : 1, sizeof *m->tasks);
    if (!m->tasks || load_names(m, info ? info->callable : NULL) || assign_queue_rows(m)) {
        tm_free(m);
        return SP_ENOMEM;
    }

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
        if (!tm_is_task_record(r))
            continue;
        tm_task *t = &m->tasks[r->task];
        if (r->kind == SP_TRACE_SKIPPED && !t->skipped) {
            t->skipped = true;
            m->skipped++;
        }
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
     * (tmr) or launch (hbg). Depth and the critical path: producers have
     * lower ids than their consumers, so one pass in id order. */
    sp_trace_edge *e = NULL;
    if (tr->edge_count) {
        e = malloc(tr->edge_count * sizeof *e);
        if (!e) {
            tm_free(m);
            return SP_ENOMEM;
        }
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
            if (e[k].producer >= c)
                continue;
            const tm_task *p = &m->tasks[e[k].producer];
            if (p->depth + 1 > t->depth)
                t->depth = p->depth + 1;
            if (!p->seen)
                continue;
            if (p->end_ns > t->ready_ns)
                t->ready_ns = p->end_ns;
            if (p->cp_ns > best || t->cp_prev < 0) {
                best = p->cp_ns;
                t->cp_prev = (int64_t)e[k].producer;
            }
        }
        if (t->depth > m->max_depth)
            m->max_depth = t->depth;
        t->cp_ns = best + (t->seen && t->end_ns > t->start_ns ? t->end_ns - t->start_ns : 0);
        if (t->seen && (m->cp_tail < 0 || t->cp_ns > m->tasks[m->cp_tail].cp_ns))
            m->cp_tail = (int64_t)c;
    }
    free(e);
    if (m->cp_tail >= 0) {
        m->cp_ns = m->tasks[m->cp_tail].cp_ns;
        for (int64_t t = m->cp_tail; t >= 0; t = m->tasks[t].cp_prev) {
            m->tasks[t].critical = true;
            m->cp_tasks++;
        }
    }
    return SP_OK;
}

void tm_free(trace_model *m)
{
    free(m->tasks);
    free(m->names);
    free(m->queue_row);
    memset(m, 0, sizeof *m);
}
