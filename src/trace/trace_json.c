/* SP_TRACE_FORMAT_JSON: Chrome Trace Event JSON that Perfetto
 * (ui.perfetto.dev) and chrome://tracing open as is. Tracks: the host
 * (build phases, the device run), the scheduler threads (passes, idle
 * waits, dummy tasks) and the orchestrator (tmr: the orchestration and its
 * submits), and one process per cluster with a thread per core (AIC, AIV0,
 * AIV1), each followed by its queue rows: the time a block sat queued on
 * the core between its dispatch and its start ("queued" slices; rows so
 * overlapping waits never share a track). Each block a core ran is one
 * complete ("X") event named by its kernel; each dependency edge is one
 * flow arrow ("s" at the producer's end, "f" at the consumer's start). The
 * critical path: args.critical on its slices, its flows in category
 * "critical" with their own colour. A predicated task retired without
 * running is an instant event "skipped <kernel>" (category "skipped") on
 * its scheduler thread. */
#include <string.h>

#include "simpler/status.h"
#include "trace/trace_model.h"

enum { PID_HOST = 1, PID_SCHED = 2, PID_CLUSTER = 100 };
/* A core's queue rows are threads QUEUE_TID + lane * QUEUE_STRIDE + row. */
enum { QUEUE_TID = 16, QUEUE_STRIDE = 64 };

typedef struct json_out {
    FILE *f;
    bool first;
} json_out;

static void sep(json_out *j)
{
    fputs(j->first ? "\n" : ",\n", j->f);
    j->first = false;
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void jstr(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void meta(json_out *j, const char *what, int pid, int tid, const char *name, int sort)
{
    sep(j);
    fprintf(j->f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s\",\"args\":{\"name\":", pid,
            tid, what);
    jstr(j->f, name);
    fputs("}}", j->f);
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
    fprintf(j->f, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"name\":", pid,
            tid, tm_us(m, b), tm_span_us(b, e));
    jstr(j->f, name);
    fprintf(j->f, ",\"cat\":\"%s\"}", cat);
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

static void task_event(json_out *j, trace_model *m, const sp_trace_record *r)
{
    int pid, tid;
    place(m, r, &pid, &tid);
    const tm_task *t = &m->tasks[r->task];
    sep(j);
    fprintf(j->f, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"name\":", pid,
            tid, tm_us(m, r->start_ns), tm_span_us(r->start_ns, r->end_ns));
    jstr(j->f, tm_kernel_name(m, r->func_id));
    fprintf(
        j->f,
        ",\"cat\":\"task\",\"args\":{\"task\":%llu,\"block\":%u,\"func_id\":%d,\"shape\":\"%s\","
        "\"core\":%d,\"sched\":%u,\"depth\":%u,\"ready_us\":%.3f,\"dispatch_us\":%.3f,"
        "\"start_us\":%.3f,\"end_us\":%.3f,\"queued_us\":%.3f,\"critical\":%s",
        (unsigned long long)r->task, r->block, r->func_id, tm_shape_name(r->shape),
        r->core == SP_TRACE_NO_CORE ? -1 : (int)r->core, r->thread, t->depth, tm_us(m, t->ready_ns),
        tm_us(m, r->dispatch_ns), tm_us(m, r->start_ns), tm_us(m, r->end_ns),
        tm_span_us(r->dispatch_ns, r->start_ns), t->critical ? "true" : "false");
    if (r->submit_ns)
        fprintf(j->f, ",\"submit_us\":%.3f", tm_us(m, r->submit_ns));
    if (r->flags & SP_TRACE_F_CHAINED)
        fputs(",\"chained\":true", j->f);
    fputs("}}", j->f);
}

/* A predicated task retired without running: an instant event on the
 * scheduler thread that retired it, named "skipped <kernel>". */
static void skipped_event(json_out *j, trace_model *m, const sp_trace_record *r)
{
    const tm_task *t = &m->tasks[r->task];
    char name[96];
    snprintf(name, sizeof name, "skipped %s", tm_kernel_name(m, r->func_id));
    sep(j);
    fprintf(j->f,
            "{\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%u,\"ts\":%.3f,\"name\":", PID_SCHED,
            r->thread, tm_us(m, r->end_ns));
    jstr(j->f, name);
    fprintf(j->f,
            ",\"cat\":\"skipped\",\"cname\":\"grey\",\"args\":{\"task\":%llu,\"func_id\":%d,"
            "\"shape\":\"%s\",\"skipped\":true,\"depth\":%u,\"ready_us\":%.3f,\"critical\":%s}}",
            (unsigned long long)r->task, r->func_id, tm_shape_name(r->shape), t->depth,
            tm_us(m, t->ready_ns), t->critical ? "true" : "false");
}

/* The block's wait on its core, dispatch -> start, on the core's queue row. */
static void queued_event(json_out *j, trace_model *m, uint64_t i)
{
    const sp_trace_record *r = &m->tr->records[i];
    if (r->kind != SP_TRACE_SLICE || r->core == SP_TRACE_NO_CORE || r->start_ns <= r->dispatch_ns)
        return;
    int pid, tid;
    place(m, r, &pid, &tid);
    tid = QUEUE_TID + tid * QUEUE_STRIDE + m->queue_row[i];
    sep(j);
    fprintf(j->f, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"name\":", pid,
            tid, tm_us(m, r->dispatch_ns), tm_span_us(r->dispatch_ns, r->start_ns));
    char name[96];
    snprintf(name, sizeof name, "queued %s", tm_kernel_name(m, r->func_id));
    jstr(j->f, name);
    fprintf(j->f,
            ",\"cat\":\"queued\",\"cname\":\"grey\",\"args\":{\"task\":%llu,\"block\":%u,"
            "\"core\":%u,\"critical\":%s}}",
            (unsigned long long)r->task, r->block, r->core,
            m->tasks[r->task].critical ? "true" : "false");
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
    bool crit = tm_edge_critical(m, e->producer, e->consumer);
    const char *cat = crit ? "critical" : "dep";
    const char *cname = crit ? ",\"cname\":\"terrible\"" : "";
    sep(j);
    fprintf(j->f,
            "{\"ph\":\"s\",\"id\":%llu,\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"name\":\"%s\",\"cat\":"
            "\"%s\"%s}",
            (unsigned long long)id, pp, tp, ts, kind, cat, cname);
    sep(j);
    fprintf(j->f,
            "{\"ph\":\"f\",\"bp\":\"e\",\"id\":%llu,\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"name\":"
            "\"%s\",\"cat\":\"%s\"%s}",
            (unsigned long long)id, pc, tc, tm_us(m, rc->start_ns), kind, cat, cname);
}

static void tracks(json_out *j, const trace_model *m)
{
    const sp_run_trace *tr = m->tr;
    bool built = tr->phase_ns[SP_TRACE_PHASE_ORCHESTRATE][1] != 0;
    meta(j, "process_name", PID_HOST, 0, "host", 0);
    meta(j, "thread_name", PID_HOST, 1, built ? "build" : "prepare", 0);
    meta(j, "thread_name", PID_HOST, 2, "device run", 1);
    meta(j, "process_name", PID_SCHED, 0, "AICPU", 1);
    for (uint32_t t = 0; t < tr->sched_threads; t++) {
        char name[32];
        snprintf(name, sizeof name, "scheduler %u", t);
        meta(j, "thread_name", PID_SCHED, (int)t, name, (int)t);
    }
    if (tr->orch_end_ns)
        meta(j, "thread_name", PID_SCHED, (int)tr->sched_threads, "orchestrator",
             (int)tr->sched_threads);
    static const char *const lanes[3] = {"AIC", "AIV0", "AIV1"};
    for (uint32_t c = 0; c < tr->clusters; c++) {
        char name[48];
        snprintf(name, sizeof name, "cluster %u", c);
        int pid = PID_CLUSTER + (int)c;
        meta(j, "process_name", pid, 0, name, 2 + (int)c);
        for (int l = 0; l < 3; l++) {
            meta(j, "thread_name", pid, l, lanes[l], l * QUEUE_STRIDE);
            for (uint32_t q = 0; q < m->queue_rows; q++) {
                snprintf(name, sizeof name, "%s queued %u", lanes[l], q);
                meta(j, "thread_name", pid, QUEUE_TID + l * QUEUE_STRIDE + (int)q, name,
                     l * QUEUE_STRIDE + 1 + (int)q);
            }
        }
    }
}

int tm_write_json(trace_model *m, FILE *f)
{
    const sp_run_trace *tr = m->tr;
    json_out j = {.f = f, .first = true};
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"runtime\":", f);
    jstr(f, m->runtime);
    fprintf(f,
            ",\"tasks\":%llu,\"skipped\":%llu,\"edges\":%llu,\"records_dropped\":%llu,"
            "\"edges_dropped\":%llu,"
            "\"critical_path_us\":%.3f,\"critical_path_tasks\":%llu},\"traceEvents\":[",
            (unsigned long long)m->task_count, (unsigned long long)m->skipped,
            (unsigned long long)tr->edge_count, (unsigned long long)tr->records_dropped,
            (unsigned long long)tr->edges_dropped, m->cp_ns / 1e3, (unsigned long long)m->cp_tasks);
    tracks(&j, m);

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
            queued_event(&j, m, i);
            break;
        case SP_TRACE_SKIPPED:
            skipped_event(&j, m, r);
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
    return SP_OK;
}
