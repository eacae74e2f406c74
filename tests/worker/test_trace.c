/* Per-task trace records through the worker (sp_worker_last_trace), on both
 * runtimes: one slice per block a core ran, times ordered (dispatch <=
 * start <= end, a consumer starts after each producer ends), the edges are
 * the run's edges with their kinds, scheduler phases at level 2, submits at
 * level 3 (tmr), dummies, a full buffer drops and counts, and tracing does
 * not change a single output byte. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example.h"
#include "simpler/status.h"
#include "simpler/worker.h"

#define HBG_MODULE SP_MODULE_DIR "/libsimpler_hbg_sim.so"
#define TMR_MODULE SP_MODULE_DIR "/libsimpler_tmr_sim.so"

typedef struct traced_run {
    sp_worker *w;
    ex_instance inst;
    sp_run_stats stats;
    const sp_run_trace *tr;
} traced_run;

/* Run `example` (`case_name`, NULL: the first) with `cfg` on `module`. */
static void run_example(traced_run *t, const char *module, const char *example,
                        const char *case_name, const sp_call_config *cfg)
{
    char err[1024] = "";
    memset(t, 0, sizeof *t);
    const ex_example *ex = ex_find(example);
    cr_assert_not_null(ex);
    cr_assert_eq(sp_worker_open(module, NULL, &t->w, err, sizeof err), SP_OK, "%s", err);
    char path[512];
    snprintf(path, sizeof path, SP_BUILD_DIR "/examples/%s.spc", example);
    cr_assert_eq(sp_worker_register_callable_file(t->w, 1, path), SP_OK, "%s",
                 sp_worker_last_error(t->w));
    cr_assert_eq(ex_instance_init(&t->inst, ex, case_name ? case_name : ex->cases[0].name, NULL,
                                  err, sizeof err),
                 0, "%s", err);
    cr_assert_eq(ex->setup(&t->inst, err, sizeof err), 0, "%s", err);
    int rc = sp_worker_run(t->w, 1, &t->inst.args, cfg, &t->stats);
    cr_assert_eq(rc, SP_OK, "%s: %s", sp_status_name(rc), sp_worker_last_error(t->w));
    double max_err;
    cr_assert_eq(ex->check(&t->inst, &max_err, err, sizeof err), 0, "%s", err);
    t->tr = sp_worker_last_trace(t->w);
}

static void close_run(traced_run *t)
{
    ex_instance_free(&t->inst);
    sp_worker_close(t->w);
}

static uint64_t count_kind(const sp_run_trace *tr, uint8_t kind)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < tr->record_count; i++)
        n += tr->records[i].kind == kind;
    return n;
}

/* The checks every traced run passes: a record per (task, block), ordering,
 * edges as the stats count them. `blocks`: blocks per task. */
static void assert_trace_sound(const traced_run *t, uint32_t blocks)
{
    const sp_run_trace *tr = t->tr;
    cr_assert_not_null(tr, "no trace after a traced run");
    cr_assert_geq(tr->level, SP_TRACE_TASKS);
    cr_assert_eq(tr->records_dropped, 0);
    cr_assert_eq(tr->edge_count, t->stats.edges, "trace edges %llu, run edges %llu",
                 (unsigned long long)tr->edge_count, (unsigned long long)t->stats.edges);
    uint64_t n = t->stats.tasks;
    uint64_t *seen = calloc(n * blocks, sizeof *seen);
    uint64_t *first_start = calloc(n, sizeof *first_start), *last_end = calloc(n, sizeof *last_end);
    for (uint64_t i = 0; i < tr->record_count; i++) {
        const sp_trace_record *r = &tr->records[i];
        if (r->kind != SP_TRACE_SLICE && r->kind != SP_TRACE_DUMMY)
            continue;
        cr_assert_lt(r->task, n);
        cr_assert_lt(r->block, blocks);
        if (r->kind == SP_TRACE_SLICE) {
            cr_assert_lt(r->core, 3 * tr->clusters);
            cr_assert_geq(r->func_id, 0);
        }
        seen[r->task * blocks + r->block]++;
        /* Record times are mapped from the cycle counter: against the host's
         * launch and done, allow the mapping's error (well under 2 us). */
        cr_assert_leq(tr->launch_ns, r->dispatch_ns + 2000);
        cr_assert_leq(r->dispatch_ns, r->start_ns, "task %llu: dispatch after start",
                      (unsigned long long)r->task);
        cr_assert_leq(r->start_ns, r->end_ns);
        cr_assert_leq(r->end_ns, tr->done_ns + 2000);
        if (r->submit_ns)
            cr_assert_leq(r->submit_ns, r->dispatch_ns);
        if (!first_start[r->task] || r->start_ns < first_start[r->task])
            first_start[r->task] = r->start_ns;
        if (r->end_ns > last_end[r->task])
            last_end[r->task] = r->end_ns;
    }
    for (uint64_t k = 0; k < n * blocks; k++)
        cr_assert_eq(seen[k], 1, "task %llu block %llu recorded %llu times",
                     (unsigned long long)(k / blocks), (unsigned long long)(k % blocks),
                     (unsigned long long)seen[k]);
    for (uint64_t i = 0; i < tr->edge_count; i++) {
        const sp_trace_edge *e = &tr->edges[i];
        cr_assert_lt(e->producer, e->consumer);
        cr_assert_lt(e->kind, SP_TRACE_EDGE_KINDS);
        cr_assert_geq(first_start[e->consumer], last_end[e->producer],
                      "task %llu started before its producer %llu ended",
                      (unsigned long long)e->consumer, (unsigned long long)e->producer);
    }
    free(seen);
    free(first_start);
    free(last_end);
}

static void vector_tasks(const char *module)
{
    sp_call_config cfg = {.trace_level = SP_TRACE_TASKS};
    traced_run t;
    run_example(&t, module, "vector_example", NULL, &cfg);
    cr_assert_eq(t.stats.tasks, 5);
    cr_assert_eq(count_kind(t.tr, SP_TRACE_SLICE), 5);
    cr_assert_eq(t.tr->record_count, 5, "level 1 records tasks only");
    cr_assert_eq(t.tr->edge_count, 6);
    for (uint64_t i = 0; i < 6; i++)
        cr_assert_eq(t.tr->edges[i].kind, SP_TRACE_EDGE_RAW);
    assert_trace_sound(&t, 1);
    close_run(&t);
}

Test(trace, vector_example_hbg)
{
    vector_tasks(HBG_MODULE);
}

Test(trace, vector_example_tmr)
{
    vector_tasks(TMR_MODULE);
}

/* SPMD: one record per block; level 2 adds scheduler passes. */
static void spmd_with_phases(const char *module)
{
    sp_call_config cfg = {.trace_level = SP_TRACE_SCHED};
    traced_run t;
    run_example(&t, module, "vector_example", "spmd", &cfg);
    cr_assert_eq(count_kind(t.tr, SP_TRACE_SLICE), 5 * 4);
    cr_assert_gt(count_kind(t.tr, SP_TRACE_SCHED_PASS), 0);
    assert_trace_sound(&t, 4);
    close_run(&t);
}

Test(trace, spmd_and_sched_phases_hbg)
{
    spmd_with_phases(HBG_MODULE);
}

Test(trace, spmd_and_sched_phases_tmr)
{
    spmd_with_phases(TMR_MODULE);
}

/* Level 3 on tmr: one submit record per task, on the orchestrator's track. */
Test(trace, tmr_submits)
{
    sp_call_config cfg = {.trace_level = SP_TRACE_SUBMITS};
    traced_run t;
    run_example(&t, TMR_MODULE, "matmul_diamond", NULL, &cfg);
    cr_assert_eq(count_kind(t.tr, SP_TRACE_SUBMIT), t.stats.tasks);
    cr_assert_gt(t.tr->orch_end_ns, t.tr->orch_begin_ns);
    for (uint64_t i = 0; i < t.tr->record_count; i++)
        if (t.tr->records[i].kind == SP_TRACE_SUBMIT)
            cr_assert_eq(t.tr->records[i].thread, t.tr->sched_threads);
    assert_trace_sound(&t, 1);
    close_run(&t);
}

/* Dummy tasks are recorded too, with no core. */
static void dummies(const char *module)
{
    sp_call_config cfg = {.trace_level = SP_TRACE_TASKS};
    traced_run t;
    run_example(&t, module, "dummy_chain", NULL, &cfg);
    uint64_t d = count_kind(t.tr, SP_TRACE_DUMMY), s = count_kind(t.tr, SP_TRACE_SLICE);
    cr_assert_gt(d, 0);
    cr_assert_eq(d + s, t.stats.tasks);
    for (uint64_t i = 0; i < t.tr->record_count; i++)
        if (t.tr->records[i].kind == SP_TRACE_DUMMY)
            cr_assert_eq(t.tr->records[i].core, SP_TRACE_NO_CORE);
    assert_trace_sound(&t, 1);
    close_run(&t);
}

Test(trace, dummies_hbg)
{
    dummies(HBG_MODULE);
}

Test(trace, dummies_tmr)
{
    dummies(TMR_MODULE);
}

/* tmr's bounded buffer: a full one drops and counts; the run still passes. */
Test(trace, tmr_full_buffer_drops)
{
    sp_call_config cfg = {.trace_level = SP_TRACE_TASKS, .trace_records = 3};
    traced_run t;
    run_example(&t, TMR_MODULE, "vector_example", NULL, &cfg);
    cr_assert_leq(t.tr->record_count, 3);
    cr_assert_eq(t.tr->record_count + t.tr->records_dropped, 5);
    close_run(&t);
}

/* Untraced runs have no trace; a traced one does not change any output. */
static void outputs_unchanged(const char *module, const char *example)
{
    sp_call_config off = {0}, on = {.trace_level = SP_TRACE_SUBMITS};
    traced_run a, b;
    run_example(&a, module, example, NULL, &off);
    cr_assert_null(a.tr);
    run_example(&b, module, example, NULL, &on);
    cr_assert_not_null(b.tr);
    cr_assert_eq(a.stats.tasks, b.stats.tasks);
    cr_assert_eq(a.stats.edges, b.stats.edges);
    for (uint32_t i = 0; i < a.inst.args.tensor_count; i++) {
        const sp_tensor *x = &a.inst.args.tensors[i], *y = &b.inst.args.tensors[i];
        cr_assert_eq(x->buf_bytes, y->buf_bytes);
        cr_assert_eq(memcmp((const void *)(uintptr_t)x->addr, (const void *)(uintptr_t)y->addr,
                            x->buf_bytes),
                     0, "%s: tensor %u differs with tracing on", example, i);
    }
    close_run(&a);
    close_run(&b);
}

Test(trace, results_unchanged_hbg, .timeout = 120)
{
    outputs_unchanged(HBG_MODULE, "bgemm");
    outputs_unchanged(HBG_MODULE, "paged_attention");
}

Test(trace, results_unchanged_tmr, .timeout = 120)
{
    outputs_unchanged(TMR_MODULE, "bgemm");
    outputs_unchanged(TMR_MODULE, "paged_attention");
}

/* A level the runtimes do not know is refused by name. */
Test(trace, bad_level_refused)
{
    const char *mods[2] = {HBG_MODULE, TMR_MODULE};
    for (int m = 0; m < 2; m++) {
        char err[1024];
        sp_worker *w;
        cr_assert_eq(sp_worker_open(mods[m], NULL, &w, err, sizeof err), SP_OK, "%s", err);
        cr_assert_eq(
            sp_worker_register_callable_file(w, 1, SP_BUILD_DIR "/examples/vector_example.spc"),
            SP_OK);
        ex_instance inst;
        cr_assert_eq(
            ex_instance_init(&inst, ex_find("vector_example"), "default", NULL, err, sizeof err),
            0);
        cr_assert_eq(inst.example->setup(&inst, err, sizeof err), 0);
        sp_call_config cfg = {.trace_level = 9};
        cr_assert_eq(sp_worker_run(w, 1, &inst.args, &cfg, NULL), SP_EINVAL);
        cr_assert_not_null(strstr(sp_worker_last_error(w), "trace_level"), "%s",
                           sp_worker_last_error(w));
        ex_instance_free(&inst);
        sp_worker_close(w);
    }
}
