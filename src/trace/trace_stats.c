/* SP_TRACE_FORMAT_STATS: a summary of the run's trace as text lines, each
 * starting with "stats:" so scripts can pick them — tasks by shape, edges
 * by kind, the critical path and its share of the device run, per-kernel
 * count and time, core utilisation, queueing (ready -> dispatch in the
 * scheduler, dispatch -> start queued on the core) and the host phases. */
#include <stdlib.h>
#include <string.h>

#include "simpler/orchestration.h"
#include "simpler/status.h"
#include "trace/trace_model.h"

typedef struct kstat {
    int32_t func_id;
    uint64_t count, sum_ns, max_ns;
} kstat;

static void kernel_lines(trace_model *m, FILE *out, kstat *ks)
{
    const sp_run_trace *tr = m->tr;
    uint32_t nk = 0;
    for (uint64_t i = 0; i < tr->record_count; i++) {
        const sp_trace_record *r = &tr->records[i];
        if (r->kind != SP_TRACE_SLICE)
            continue;
        uint64_t d = r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0;
        uint32_t k = 0;
        while (k < nk && ks[k].func_id != r->func_id)
            k++;
        if (k == nk) {
            if (nk == m->name_count + 1)
                continue; /* more kernels than the callable names: not counted */
            ks[nk++].func_id = r->func_id;
        }
        ks[k].count++;
        ks[k].sum_ns += d;
        if (d > ks[k].max_ns)
            ks[k].max_ns = d;
    }
    for (uint32_t k = 0; k < nk; k++)
        fprintf(out, "stats: kernel %s count=%llu total_us=%.1f mean_us=%.2f max_us=%.2f\n",
                tm_kernel_name(m, ks[k].func_id), (unsigned long long)ks[k].count,
                ks[k].sum_ns / 1e3, ks[k].sum_ns / 1e3 / (double)ks[k].count, ks[k].max_ns / 1e3);
}

int tm_write_stats(trace_model *m, FILE *out)
{
    const sp_run_trace *tr = m->tr;
    uint64_t shapes[4] = {0}, kinds[SP_TRACE_EDGE_KINDS] = {0};
    for (uint64_t i = 0; i < m->task_count; i++)
        if (m->tasks[i].seen)
            shapes[m->tasks[i].shape & 3]++;
    for (uint64_t i = 0; i < tr->edge_count; i++)
        if (tr->edges[i].kind < SP_TRACE_EDGE_KINDS)
            kinds[tr->edges[i].kind]++;
    fprintf(out, "stats: tasks=%llu AIC=%llu AIV=%llu MIX=%llu dummy=%llu depth=%u skipped=%llu\n",
            (unsigned long long)m->task_count, (unsigned long long)shapes[SP_SHAPE_AIC],
            (unsigned long long)shapes[SP_SHAPE_AIV], (unsigned long long)shapes[SP_SHAPE_MIX],
            (unsigned long long)shapes[SP_SHAPE_DUMMY], m->task_count ? m->max_depth + 1 : 0,
            (unsigned long long)m->skipped);
    fprintf(out, "stats: edges=%llu", (unsigned long long)tr->edge_count);
    for (int k = 0; k < SP_TRACE_EDGE_KINDS; k++)
        fprintf(out, " %s=%llu", tm_edge_kind_name((uint32_t)k), (unsigned long long)kinds[k]);
    fputc('\n', out);

    /* The critical path: the longest chain by task durations (first start
     * to last end of each task), what no schedule can beat. */
    uint64_t device_ns = tr->done_ns > tr->launch_ns ? tr->done_ns - tr->launch_ns : 0;
    fprintf(out,
            "stats: critical_path_us=%.1f tasks_on_path=%llu device_us=%.1f "
            "critical_share=%.1f%%\n",
            m->cp_ns / 1e3, (unsigned long long)m->cp_tasks, device_ns / 1e3,
            device_ns ? 100.0 * (double)m->cp_ns / (double)device_ns : 0.0);

    kstat *ks = calloc(m->name_count + 1, sizeof *ks);
    if (!ks)
        return SP_ENOMEM;
    kernel_lines(m, out, ks);
    free(ks);

    /* Busy time per core type, queueing per block. */
    uint64_t busy[2] = {0}, slices = 0, queued_ns = 0, queued_max = 0, wait_ns = 0;
    for (uint64_t i = 0; i < tr->record_count; i++) {
        const sp_trace_record *r = &tr->records[i];
        if (r->kind != SP_TRACE_SLICE)
            continue;
        busy[r->lane == 0] += r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0;
        slices++;
        uint64_t q = r->start_ns > r->dispatch_ns ? r->start_ns - r->dispatch_ns : 0;
        queued_ns += q;
        queued_max = q > queued_max ? q : queued_max;
        uint64_t ready = m->tasks[r->task].ready_ns;
        wait_ns += r->dispatch_ns > ready ? r->dispatch_ns - ready : 0;
    }
    uint32_t C = tr->clusters ? tr->clusters : 1;
    double dev = device_ns ? (double)device_ns : 1.0;
    fprintf(out, "stats: utilisation AIC=%.1f%% AIV=%.1f%% (busy / cores x device time)\n",
            100.0 * busy[1] / (dev * C), 100.0 * busy[0] / (dev * 2 * C));
    double per = slices ? (double)slices : 1.0;
    fprintf(out,
            "stats: queued on core (dispatch -> start) total_us=%.1f mean_us=%.2f max_us=%.2f "
            "per block\n",
            queued_ns / 1e3, queued_ns / 1e3 / per, queued_max / 1e3);

    /* Scheduler overhead: ready to dispatch (the scheduler's reaction and
     * waiting for a free core) and dispatch to start, per block; at level
     * >= 2 also the scheduler threads' pass time per task. */
    uint64_t pass_ns = 0;
    for (uint64_t i = 0; i < tr->record_count; i++)
        if (tr->records[i].kind == SP_TRACE_SCHED_PASS &&
            tr->records[i].end_ns > tr->records[i].dispatch_ns)
            pass_ns += tr->records[i].end_ns - tr->records[i].dispatch_ns;
    fprintf(out, "stats: sched ready_to_dispatch_us=%.2f dispatch_to_start_us=%.2f per block",
            wait_ns / 1e3 / per, queued_ns / 1e3 / per);
    if (tr->level >= SP_TRACE_SCHED && m->task_count)
        fprintf(out, " pass_us_per_task=%.2f", pass_ns / 1e3 / (double)m->task_count);
    fputc('\n', out);

    if (tr->phase_ns[SP_TRACE_PHASE_ORCHESTRATE][1]) { /* the host built the graph (hbg) */
        static const char *const names[SP_TRACE_PHASES] = {"stage", "orchestrate", "wire",
                                                           "upload"};
        fprintf(out, "stats: build");
        for (int p = 0; p < SP_TRACE_PHASES; p++)
            fprintf(out, " %s_us=%.1f", names[p],
                    tm_span_us(tr->phase_ns[p][0], tr->phase_ns[p][1]));
        fputc('\n', out);
    } else if (tr->orch_end_ns) {
        fprintf(out, "stats: prepare stage_us=%.1f orchestration_us=%.1f\n",
                tm_span_us(tr->phase_ns[0][0], tr->phase_ns[0][1]),
                tm_span_us(tr->orch_begin_ns, tr->orch_end_ns));
    }
    if (tr->records_dropped || tr->edges_dropped)
        fprintf(out,
                "stats: trace buffer full: %llu records and %llu edges dropped (raise "
                "sp_call_config.trace_records)\n",
                (unsigned long long)tr->records_dropped, (unsigned long long)tr->edges_dropped);
    return SP_OK;
}
