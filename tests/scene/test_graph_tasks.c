/* Graph tasks (sp_submit_graph) on both runtimes, against the same bodies
 * called one by one: random programs of graph-task calls (several keys,
 * boundary slices that move over shared buffers, inner intermediates,
 * scopes, explicit dependencies) and outer tasks between them give the
 * same edges, pair for pair, and the same bytes; a layer loop records its
 * body once; on tmr an instance longer than the ring window streams
 * through it; bad graph-task arguments and a failure inside a body are
 * named, and the device stays usable. The orchestration is
 * tests/kernels/graph_orch.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "register_spec.h"
#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/trace.h"
#include "simpler/worker.h"
#include "trace_pairs.h"

#define HBG_MODULE SP_MODULE_DIR "/libsimpler_hbg_sim.so"
#define TMR_MODULE SP_MODULE_DIR "/libsimpler_tmr_sim.so"

#define GRAPH_BUF 512
enum { PROG_RANDOM = 0, PROG_LAYERS = 1, PROG_LONG = 2, PROG_ERRORS = 3, PROG_MISC = 4 };
enum { MODE_GRAPH = 0, MODE_DIRECT = 1 };

/* One run's results: the buffers, the report, the edges (sorted pairs). */
typedef struct outcome {
    uint64_t buf[4][GRAPH_BUF];
    uint64_t report[8];
    pair *edges;
    uint64_t edge_count;
    sp_run_stats stats;
} outcome;

static sp_worker *open_worker(const char *module)
{
    char err[1024] = "";
    sp_worker *w;
    cr_assert_eq(sp_worker_open(module, NULL, &w, err, sizeof err), SP_OK, "%s", err);
    sp_callable_kernel_spec k[2] = {
        {.func_id = 0,
         .core_type = SP_CORE_AIV,
         .path = SP_TEST_KERNEL_DIR "/graph_kernels.so",
         .entry = "graph_mix"},
        {.func_id = 1,
         .core_type = SP_CORE_AIV,
         .path = SP_TEST_KERNEL_DIR "/graph_kernels.so",
         .entry = "graph_store"},
    };
    sp_callable_spec spec = {.orch_path = SP_TEST_KERNEL_DIR "/graph_orch.so",
                             .orch_entry = "graph_orch",
                             .orch_config = "graph_orch_config",
                             .kernels = k,
                             .kernel_count = 2};
    cr_assert_eq(sp_test_register_spec(w, 0, &spec, err, sizeof err), SP_OK, "%s", err);
    return w;
}

/* Run program `prog` in `mode`; fills *out (edges when traced). */
static int run(sp_worker *w, int prog, int mode, uint64_t seed, uint64_t variant,
               const sp_call_config *cfg, outcome *out)
{
    memset(out, 0, sizeof *out);
    for (int b = 0; b < 4; b++)
        for (int i = 0; i < GRAPH_BUF; i++)
            out->buf[b][i] = (uint64_t)b * 1000003u + (uint64_t)i * 7919u + seed;
    sp_args args;
    memset(&args, 0, sizeof args);
    int64_t len = GRAPH_BUF, rlen = 8;
    for (int b = 0; b < 4; b++) {
        sp_tensor_init(&args.tensors[b], (uint64_t)(uintptr_t)out->buf[b], SP_DTYPE_U64, 1, &len);
        args.dirs[b] = SP_INOUT;
    }
    sp_tensor_init(&args.tensors[4], (uint64_t)(uintptr_t)out->report, SP_DTYPE_U64, 1, &rlen);
    args.dirs[4] = SP_OUT_EXISTING;
    args.tensor_count = 5;
    args.scalars[0] = (uint64_t)prog;
    args.scalars[1] = (uint64_t)mode;
    args.scalars[2] = seed;
    args.scalars[3] = variant;
    args.scalar_count = 4;
    int rc = sp_worker_run(w, 0, &args, cfg, &out->stats);
    const sp_run_trace *tr = rc == SP_OK ? sp_worker_last_trace(w) : NULL;
    if (tr) {
        out->edges = trace_pairs(tr, &out->edge_count);
    }
    return rc;
}

/* Graph mode against the one-by-one reference: same tasks, edges, bytes. */
static void assert_same(const outcome *g, const outcome *d, const char *what)
{
    cr_assert_eq(g->stats.tasks, d->stats.tasks, "%s: %llu tasks, one by one %llu", what,
                 (unsigned long long)g->stats.tasks, (unsigned long long)d->stats.tasks);
    cr_assert_eq(g->edge_count, d->edge_count, "%s: %llu edges, one by one %llu", what,
                 (unsigned long long)g->edge_count, (unsigned long long)d->edge_count);
    for (uint64_t i = 0; i < g->edge_count; i++)
        cr_assert(
            g->edges[i].producer == d->edges[i].producer &&
                g->edges[i].consumer == d->edges[i].consumer,
            "%s: edge %llu is %llu -> %llu, one by one %llu -> %llu", what, (unsigned long long)i,
            (unsigned long long)g->edges[i].producer, (unsigned long long)g->edges[i].consumer,
            (unsigned long long)d->edges[i].producer, (unsigned long long)d->edges[i].consumer);
    cr_assert(memcmp(g->buf, d->buf, sizeof g->buf) == 0, "%s: the buffers differ", what);
}

static void random_dags(const char *module, uint64_t seeds)
{
    sp_worker *w = open_worker(module);
    sp_call_config cfg = {.trace_level = SP_TRACE_TASKS};
    static outcome g, d;
    uint64_t graph_calls = 0, direct_calls = 0;
    for (uint64_t s = 1; s <= seeds; s++) {
        char what[64];
        snprintf(what, sizeof what, "seed %llu", (unsigned long long)s);
        int rc = run(w, PROG_RANDOM, MODE_GRAPH, s, 0, &cfg, &g);
        cr_assert_eq(rc, SP_OK, "%s: %s", what, sp_worker_last_error(w));
        rc = run(w, PROG_RANDOM, MODE_DIRECT, s, 0, &cfg, &d);
        cr_assert_eq(rc, SP_OK, "%s one by one: %s", what, sp_worker_last_error(w));
        assert_same(&g, &d, what);
        graph_calls += g.report[0];
        direct_calls += d.report[0];
        free(g.edges);
        free(d.edges);
    }
    /* Most calls were instances: their bodies did not run. */
    cr_assert_lt(graph_calls * 2, direct_calls,
                 "bodies ran %llu times with graph tasks, %llu one "
                 "by one",
                 (unsigned long long)graph_calls, (unsigned long long)direct_calls);
    sp_worker_close(w);
}

Test(graph_tasks, random_dags_match_one_by_one_hbg, .timeout = 60)
{
    random_dags(HBG_MODULE, 150);
}

Test(graph_tasks, random_dags_match_one_by_one_tmr, .timeout = 60)
{
    random_dags(TMR_MODULE, 150);
}

static void layer_loop(const char *module)
{
    sp_worker *w = open_worker(module);
    sp_call_config cfg = {.trace_level = SP_TRACE_TASKS};
    static outcome g, d;
    cr_assert_eq(run(w, PROG_LAYERS, MODE_GRAPH, 64, 0, &cfg, &g), SP_OK, "%s",
                 sp_worker_last_error(w));
    cr_assert_eq(run(w, PROG_LAYERS, MODE_DIRECT, 64, 0, &cfg, &d), SP_OK, "%s",
                 sp_worker_last_error(w));
    cr_assert_eq(g.report[0], 1, "the layer body ran %llu times", (unsigned long long)g.report[0]);
    cr_assert_eq(d.report[0], 64);
    cr_assert_eq(g.stats.tasks, 64 * 16 + 1);
    assert_same(&g, &d, "64 layers");
    free(g.edges);
    free(d.edges);
    sp_worker_close(w);
}

Test(graph_tasks, a_layer_loop_records_one_layer_hbg)
{
    layer_loop(HBG_MODULE);
}

Test(graph_tasks, a_layer_loop_records_one_layer_tmr)
{
    layer_loop(TMR_MODULE);
}

/* Two instances of a 300-task chain through a 16-slot window: the
 * instance waits for room as one-by-one submits do. */
Test(graph_tasks, an_instance_longer_than_the_window_streams_tmr)
{
    sp_worker *w = open_worker(TMR_MODULE);
    sp_call_config cfg = {.task_window = 16};
    static outcome g, d;
    cr_assert_eq(run(w, PROG_LONG, MODE_GRAPH, 300, 0, &cfg, &g), SP_OK, "%s",
                 sp_worker_last_error(w));
    cr_assert_eq(run(w, PROG_LONG, MODE_DIRECT, 300, 0, &cfg, &d), SP_OK, "%s",
                 sp_worker_last_error(w));
    cr_assert_eq(g.report[0], 1, "the body ran %llu times", (unsigned long long)g.report[0]);
    cr_assert_eq(g.stats.tasks, 601);
    assert_same(&g, &d, "300-task chain, 16-slot window");
    sp_worker_close(w);
}

/* Bodies recorded differently: one that reads a control element runs every
 * time; one with a MANUAL scope records its explicit inner edge (its
 * calls write disjoint slices: a manual scope orders nothing else); a graph
 * task inside a body leaves the outer key one by one (the inner body runs
 * twice inline while the outer one is tried, once more to be recorded at
 * the outer key's second call) and instantiates the inner one (the
 * reference calls the outer body directly, the inner one is a graph task
 * there too). Each equals its reference run. */
static void misc_bodies(const char *module)
{
    static const struct {
        uint64_t variant, graph_calls, direct_calls;
    } cases[] = {{1, 8, 8}, {2, 1, 8}, {3, 8 + 3, 8 + 1}};
    sp_worker *w = open_worker(module);
    sp_call_config cfg = {.trace_level = SP_TRACE_TASKS};
    static outcome g, d;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[32];
        snprintf(what, sizeof what, "variant %llu", (unsigned long long)cases[i].variant);
        cr_assert_eq(run(w, PROG_MISC, MODE_GRAPH, 0, cases[i].variant, &cfg, &g), SP_OK, "%s: %s",
                     what, sp_worker_last_error(w));
        cr_assert_eq(run(w, PROG_MISC, MODE_DIRECT, 0, cases[i].variant, &cfg, &d), SP_OK, "%s: %s",
                     what, sp_worker_last_error(w));
        cr_assert_eq(g.report[0], cases[i].graph_calls, "%s: bodies ran %llu times", what,
                     (unsigned long long)g.report[0]);
        cr_assert_eq(d.report[0], cases[i].direct_calls);
        assert_same(&g, &d, what);
        free(g.edges);
        free(d.edges);
    }
    sp_worker_close(w);
}

Test(graph_tasks, bodies_recorded_differently_hbg)
{
    misc_bodies(HBG_MODULE);
}

Test(graph_tasks, bodies_recorded_differently_tmr)
{
    misc_bodies(TMR_MODULE);
}

/* A record larger than its region is not kept: with a 256 KiB heap tmr's
 * region is 32 KiB, and a 120-task body needs more; every call runs the
 * body, and the run equals the one-by-one one. */
Test(graph_tasks, a_record_that_does_not_fit_runs_one_by_one_tmr)
{
    sp_worker *w = open_worker(TMR_MODULE);
    sp_call_config cfg = {.heap_bytes = 256u << 10, .trace_level = SP_TRACE_TASKS};
    static outcome g, d;
    cr_assert_eq(run(w, PROG_LONG, MODE_GRAPH, 120, 0, &cfg, &g), SP_OK, "%s",
                 sp_worker_last_error(w));
    cr_assert_eq(run(w, PROG_LONG, MODE_DIRECT, 120, 0, &cfg, &d), SP_OK, "%s",
                 sp_worker_last_error(w));
    cr_assert_eq(g.report[0], 2, "the body ran %llu times", (unsigned long long)g.report[0]);
    assert_same(&g, &d, "120-task chain, 32 KiB region");
    free(g.edges);
    free(d.edges);
    /* The same body in a region that holds it is recorded. */
    cfg.heap_bytes = 8u << 20;
    cr_assert_eq(run(w, PROG_LONG, MODE_GRAPH, 120, 0, &cfg, &g), SP_OK, "%s",
                 sp_worker_last_error(w));
    cr_assert_eq(g.report[0], 1);
    free(g.edges);
    sp_worker_close(w);
}

typedef struct error_case {
    uint64_t variant;
    int status;
    const char *needle[2];
} error_case;

static void errors_named(const char *module)
{
    static const error_case cases[] = {
        {1, SP_EGRAPH_TASK, {"graph task key 1", "NULL body"}},
        {2, SP_EGRAPH_TASK, {"graph task key 2", "33 boundary tensors"}},
        {3, SP_EGRAPH_TASK, {"graph task key 3", "boundary tensor 0 is malformed"}},
        {4, SP_EGRAPH_TASK, {"graph task key 4", "scalar 1 has source"}},
        {5, SP_EINVAL, {"the body gives up", "in graph task key 5"}},
        {6, SP_EGRAPH_TASK, {"SP_SCALAR_GRAPH(3)", "in graph task key 6"}},
        {8, SP_EFUNC_ID, {"func_id 99", "in graph task key 8"}},
    };
    sp_worker *w = open_worker(module);
    static outcome o;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const error_case *c = &cases[i];
        int rc = run(w, PROG_ERRORS, MODE_GRAPH, 0, c->variant, NULL, &o);
        const char *msg = sp_worker_last_error(w);
        cr_assert_eq(rc, c->status, "variant %llu: got %s: %s", (unsigned long long)c->variant,
                     sp_status_name(rc), msg);
        for (int k = 0; k < 2; k++)
            cr_assert_not_null(strstr(msg, c->needle[k]), "variant %llu: '%s' not in: %s",
                               (unsigned long long)c->variant, c->needle[k], msg);
        /* The device stays usable: a good graph-task run passes. */
        rc = run(w, PROG_LAYERS, MODE_GRAPH, 3, 0, NULL, &o);
        cr_assert_eq(rc, SP_OK, "after variant %llu: %s", (unsigned long long)c->variant,
                     sp_worker_last_error(w));
        cr_assert_eq(o.report[0], 1);
    }
    sp_worker_close(w);
}

/* An instance inside a scope that holds more tasks than the window: the
 * same deadlock one-by-one submits get, named with the graph task. */
Test(graph_tasks, an_instance_deadlock_is_named_tmr)
{
    sp_worker *w = open_worker(TMR_MODULE);
    sp_call_config cfg = {.task_window = 16};
    static outcome o;
    int rc = run(w, PROG_ERRORS, MODE_GRAPH, 0, 7, &cfg, &o);
    const char *msg = sp_worker_last_error(w);
    cr_assert_eq(rc, SP_ESCOPE_DEADLOCK, "got %s: %s", sp_status_name(rc), msg);
    cr_assert_not_null(strstr(msg, "16-slot window"), "%s", msg);
    cr_assert_not_null(strstr(msg, "in graph task key 7"), "%s", msg);
    cr_assert_eq(run(w, PROG_LAYERS, MODE_GRAPH, 3, 0, &cfg, &o), SP_OK, "%s",
                 sp_worker_last_error(w));
    sp_worker_close(w);
}

Test(graph_tasks, errors_are_named_hbg)
{
    errors_named(HBG_MODULE);
}

Test(graph_tasks, errors_are_named_tmr)
{
    errors_named(TMR_MODULE);
}
