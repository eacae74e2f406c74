/* `simpler run --trace out.json`: Chrome Trace Event JSON that Perfetto
 * (ui.perfetto.dev) and chrome://tracing open as is. Tracks: the host
 * (build phases, the device run), the scheduler threads (passes, idle
 * waits, dummy tasks) and the orchestrator, and one process per cluster
 * with a thread per core (AIC, AIV0, AIV1). Each block a core ran is one
 * complete ("X") event named by its kernel; each dependency edge is one
 * flow arrow ("s" at the producer's end, "f" at the consumer's start). */
#include <stdio.h>
#include <string.h>

#include "cli/trace_model.h"

enum { PID_HOST = 1, PID_SCHED = 2, PID_CLUSTER = 100 };

typedef struct json_out {
    FILE *f;
    bool first;
} json_out;

static void sep(json_out *j)
{
    fputs(j->first ? "\n" : ",\n", j->f);
    j->first = false;
}

static void meta(json_out *j, const char *what, int pid, int tid, const char *name, int sort)
{
    sep(j);
    fprintf(j->f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s\",\"args\":{\"name\":\"%s\"}}",
            pid, tid, what, name);
    sep(j);
    fprintf(j->f,
            "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s_sort_index\",\"args\":{\"sort_"
            "index\":%d}}",
            pid, tid, what, sort);
}

static void span(json_out *j, const trace_model *m, int pid, int tid, const char *name,
                 const char *cat, uint64_t b, uint64_t e)
{
    sep(j);
    fprintf(j->f,
            "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"name\":\"%s\",\"cat\":"
            "\"%s\"}",
            pid, tid, tm_us(m, b), e > b ? (double)(e - b) / 1e3 : 0.0, name, cat);
}

/* Where a record's event goes. */
static void place(const trace_model *m, const sp_trace_record *r, int *pid, int *tid)
{
    if (r->kind == SP_TRACE_SLICE && r->core != SP_TRACE_NO_CORE) {
        uint32_t cl, lane;
        tm_core_place(m, r->core, &cl, &lane);
        *pid = PID_CLUSTER + (int)cl;
        *tid = (int)lane;
    } else {
        *pid = PID_SCHED;
        *tid = r->thread;
    }
}

static void task_event(json_out *j, const trace_model *m, const sp_trace_record *r)
{
    int pid, tid;
    place(m, r, &pid, &tid);
    const tm_task *t = &m->tasks[r->task];
    sep(j);
    fprintf(j->f,
            "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"name\":\"%s\",\"cat\":"
            "\"task\",\"args\":{\"task\":%llu,\"block\":%u,\"func_id\":%d,\"shape\":\"%s\","
            "\"core\":%d,\"sched\":%u,\"ready_us\":%.3f,\"dispatch_us\":%.3f,\"start_us\":%.3f,"
            "\"end_us\":%.3f",
            pid, tid, tm_us(m, r->start_ns),
            r->end_ns > r->start_ns ? (double)(r->end_ns - r->start_ns) / 1e3 : 0.0,
            tm_kernel_name(m, r->func_id), (unsigned long long)r->task, r->block, r->func_id,
            tm_shape_name(r->shape), r->core == SP_TRACE_NO_CORE ? -1 : (int)r->core, r->thread,
            tm_us(m, t->ready_ns), tm_us(m, r->dispatch_ns), tm_us(m, r->start_ns),
            tm_us(m, r->end_ns));
    if (r->submit_ns)
        fprintf(j->f, ",\"submit_us\":%.3f", tm_us(m, r->submit_ns));
    fputs("}}", j->f);
}

static void flow(json_out *j, const trace_model *m, uint64_t id, const sp_trace_edge *e)
{
    const tm_task *p = &m->tasks[e->producer], *c = &m->tasks[e->consumer];
    if (!p->seen || !c->seen)
        return; /* a dropped record: no slice to bind the arrow to */
    const sp_trace_record *rp = &m->tr->records[p->last_rec], *rc = &m->tr->records[c->first_rec];
    int pp, tp, pc, tc;
    place(m, rp, &pp, &tp);
    place(m, rc, &pc, &tc);
    /* The start must lie inside the producer's slice to bind to it. */
    double end = tm_us(m, rp->end_ns), start = tm_us(m, rp->start_ns);
    double ts = end - 0.001 > start ? end - 0.001 : start;
    const char *kind = tm_edge_kind_name(e->kind);
    sep(j);
    fprintf(j->f,
            "{\"ph\":\"s\",\"id\":%llu,\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"name\":\"%s\",\"cat\":"
            "\"dep\"}",
            (unsigned long long)id, pp, tp, ts, kind);
    sep(j);
    fprintf(j->f,
            "{\"ph\":\"f\",\"bp\":\"e\",\"id\":%llu,\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"name\":"
            "\"%s\",\"cat\":\"dep\"}",
            (unsigned long long)id, pc, tc, tm_us(m, rc->start_ns), kind);
}

int trace_write_json(const trace_model *m, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    const sp_run_trace *tr = m->tr;
    json_out j = {.f = f, .first = true};
    fprintf(f,
            "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"runtime\":\"%s\",\"tasks\":%llu,"
            "\"edges\":%llu,\"records_dropped\":%llu,\"edges_dropped\":%llu},\"traceEvents\":[",
            m->runtime, (unsigned long long)m->task_count, (unsigned long long)tr->edge_count,
            (unsigned long long)tr->records_dropped, (unsigned long long)tr->edges_dropped);

    meta(&j, "process_name", PID_HOST, 0, "host", 0);
    meta(&j, "thread_name", PID_HOST, 1, strcmp(m->runtime, "hbg") == 0 ? "build" : "prepare", 0);
    meta(&j, "thread_name", PID_HOST, 2, "device run", 1);
    meta(&j, "process_name", PID_SCHED, 0, "AICPU", 1);
    for (uint32_t t = 0; t < tr->sched_threads; t++) {
        char name[32];
        snprintf(name, sizeof name, "scheduler %u", t);
        meta(&j, "thread_name", PID_SCHED, (int)t, name, (int)t);
    }
    if (tr->orch_end_ns)
        meta(&j, "thread_name", PID_SCHED, (int)tr->sched_threads, "orchestrator",
             (int)tr->sched_threads);
    for (uint32_t c = 0; c < tr->clusters; c++) {
        char name[32];
        snprintf(name, sizeof name, "cluster %u", c);
        meta(&j, "process_name", PID_CLUSTER + (int)c, 0, name, 2 + (int)c);
        meta(&j, "thread_name", PID_CLUSTER + (int)c, 0, "AIC", 0);
        meta(&j, "thread_name", PID_CLUSTER + (int)c, 1, "AIV0", 1);
        meta(&j, "thread_name", PID_CLUSTER + (int)c, 2, "AIV1", 2);
    }

    static const char *const phase[SP_TRACE_PHASES] = {"stage", "orchestrate", "wire", "upload"};
    for (int p = 0; p < SP_TRACE_PHASES; p++)
        if (tr->phase_ns[p][1])
            span(&j, m, PID_HOST, 1, phase[p], "host", tr->phase_ns[p][0], tr->phase_ns[p][1]);
    span(&j, m, PID_HOST, 2, "device run", "host", tr->launch_ns, tr->done_ns);
    if (tr->orch_end_ns)
        span(&j, m, PID_SCHED, (int)tr->sched_threads, "orchestration", "orch", tr->orch_begin_ns,
             tr->orch_end_ns);

    for (uint64_t i = 0; i < tr->record_count; i++) {
        const sp_trace_record *r = &tr->records[i];
        char name[48];
        switch (r->kind) {
        case SP_TRACE_SLICE:
        case SP_TRACE_DUMMY:
            task_event(&j, m, r);
            break;
        case SP_TRACE_SCHED_PASS:
            span(&j, m, PID_SCHED, r->thread, "pass", "sched", r->dispatch_ns, r->end_ns);
            break;
        case SP_TRACE_SCHED_IDLE:
            span(&j, m, PID_SCHED, r->thread, "idle", "sched", r->dispatch_ns, r->end_ns);
            break;
        case SP_TRACE_SUBMIT:
            snprintf(name, sizeof name, "submit %llu", (unsigned long long)r->task);
            span(&j, m, PID_SCHED, r->thread, name, "orch", r->dispatch_ns, r->end_ns);
            break;
        default:
            break;
        }
    }
    for (uint64_t i = 0; i < tr->edge_count; i++)
        flow(&j, m, i, &tr->edges[i]);
    fputs("\n]}\n", f);
    return fclose(f) ? -1 : 0;
}
