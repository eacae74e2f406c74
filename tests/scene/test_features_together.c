/* Issue 16's features together, on both runtimes: predicated tasks inside
 * graph tasks (predicates on a boundary flags tensor that a router outside
 * writes before each instance: a run argument, a router's fresh output or
 * an sp_alloc_tensor buffer; on flags the body makes itself, rewritten
 * after their readers; and on a staged boundary row), the same graphs
 * recorded and replayed across runs (SP_CALL_REPLAY_AUTO, then ONLY) with
 * new host buffers, flags and data scalar each run, graph tasks under
 * replay, two replays in flight on the async lane each with its own flags,
 * a kernel crash in a predicated replay, and a body called directly with
 * graph-scalar sources (never kept: a replay could not patch its data).
 * Every run is checked against a sequential reference computed here
 * (outputs, skipped tasks' outputs unchanged, stats.skipped, the trace's
 * SKIPPED records), every replay against a fresh run of the same inputs,
 * bit for bit, and graph-task runs' edges against the body called
 * directly, pair for pair. The orchestration is tests/kernels/
 * together_orch.c, the kernels together_kernels.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pred_ref.h"
#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/orchestration.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/trace.h"
#include "simpler/worker.h"
#include "trace_pairs.h"

#define HBG_MODULE SP_MODULE_DIR "/libsimpler_hbg_sim.so"
#define TMR_MODULE SP_MODULE_DIR "/libsimpler_tmr_sim.so"

enum { RT_HBG = 0, RT_TMR = 1, RT_COUNT = 2 };
static const char *const rt_module[RT_COUNT] = {HBG_MODULE, TMR_MODULE};
static const char *const rt_name[RT_COUNT] = {"hbg", "tmr"};
/* Whether the runtime replays these graphs across runs (both do: tmr's
 * record keeps a predicate's element symbolically since this test). */
static const bool rt_replays[RT_COUNT] = {true, true};

/* As together_orch.c. */
#define TG_K 8
#define TG_S 16
#define TG_LMAX 16
enum { TG_GRAPH = 0, TG_DIRECT = 1, TG_DIRECT_RAW = 2 };
enum {
    TG_FLAGS_ARG = 0,
    TG_FLAGS_HEAP = 1,
    TG_NO_PRED = 2,
    TG_FLAGS_INNER = 3,
    TG_FLAGS_ALLOC = 4
};
static const char *const kind_name[5] = {"flags argument", "heap flags", "no predicates",
                                         "inner flags", "allocated flags"};
static const char *const mode_name[3] = {"graph tasks", "direct", "direct raw"};

static sp_worker *w[RT_COUNT];

static void open_workers(void)
{
    const char *kpath = SP_TEST_KERNEL_DIR "/together_kernels.so";
    sp_callable_kernel_spec ks[4] = {
        {.func_id = 0, .core_type = SP_CORE_AIV, .path = kpath, .entry = "together_route"},
        {.func_id = 1, .core_type = SP_CORE_AIV, .path = kpath, .entry = "together_mix"},
        {.func_id = 2, .core_type = SP_CORE_AIV, .path = kpath, .entry = "together_fold"},
        {.func_id = 3, .core_type = SP_CORE_AIV, .path = kpath, .entry = "together_store"},
    };
    sp_callable_spec spec = {.orch_path = SP_TEST_KERNEL_DIR "/together_orch.so",
                             .orch_entry = "together_orch",
                             .orch_config = "together_config",
                             .kernels = ks,
                             .kernel_count = 4};
    void *blob;
    size_t size;
    char err[1024] = "";
    cr_assert_eq(sp_callable_build(&spec, &blob, &size, err, sizeof err), SP_OK, "%s", err);
    for (int r = 0; r < RT_COUNT; r++) {
        cr_assert_eq(sp_worker_open(rt_module[r], NULL, &w[r], err, sizeof err), SP_OK, "%s: %s",
                     rt_name[r], err);
        cr_assert_eq(sp_worker_register_callable(w[r], 0, blob, size), SP_OK, "%s: %s", rt_name[r],
                     sp_worker_last_error(w[r]));
    }
    free(blob);
}

static void close_workers(void)
{
    for (int r = 0; r < RT_COUNT; r++)
        sp_worker_close(w[r]);
}

TestSuite(together, .init = open_workers, .fini = close_workers, .timeout = 120);

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xbf58476d1ce4e5b9ull;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* One run's host buffers, malloc'd afresh per job (new host addresses). */
typedef struct job {
    int64_t layers;
    uint64_t *x, *y, *z, *report;
    int32_t *sel, *flags;
    sp_args args;
} job;

static void job_init(job *j, int mode, int64_t layers, int kind, uint64_t data, uint64_t seed)
{
    memset(j, 0, sizeof *j);
    j->layers = layers;
    j->x = malloc((size_t)layers * TG_S * sizeof *j->x);
    j->y = malloc(TG_K * TG_S * sizeof *j->y);
    j->z = malloc((size_t)layers * TG_S * sizeof *j->z);
    j->report = calloc(8, sizeof *j->report);
    j->sel = malloc((size_t)layers * TG_K * sizeof *j->sel);
    j->flags = malloc(TG_K * sizeof *j->flags);
    cr_assert(j->x && j->y && j->z && j->report && j->sel && j->flags);
    uint64_t s = seed;
    for (int64_t i = 0; i < layers * TG_S; i++) {
        j->x[i] = splitmix(&s);
        j->z[i] = 0x5a5a0000u + (uint64_t)i;
    }
    for (int64_t i = 0; i < TG_K * TG_S; i++)
        j->y[i] = splitmix(&s);
    for (int64_t i = 0; i < layers * TG_K; i++)
        j->sel[i] = (int32_t)(splitmix(&s) % 7) - 3;
    for (int64_t i = 0; i < TG_K; i++)
        j->flags[i] = 99;
    int64_t nx = layers * TG_S, nsel = layers * TG_K, nk = TG_K, ny = TG_K * TG_S, nr = 8;
    sp_args *a = &j->args;
    sp_tensor_init(&a->tensors[0], (uint64_t)(uintptr_t)j->x, SP_DTYPE_U64, 1, &nx);
    sp_tensor_init(&a->tensors[1], (uint64_t)(uintptr_t)j->sel, SP_DTYPE_I32, 1, &nsel);
    sp_tensor_init(&a->tensors[2], (uint64_t)(uintptr_t)j->flags, SP_DTYPE_I32, 1, &nk);
    sp_tensor_init(&a->tensors[3], (uint64_t)(uintptr_t)j->y, SP_DTYPE_U64, 1, &ny);
    sp_tensor_init(&a->tensors[4], (uint64_t)(uintptr_t)j->z, SP_DTYPE_U64, 1, &nx);
    sp_tensor_init(&a->tensors[5], (uint64_t)(uintptr_t)j->report, SP_DTYPE_U64, 1, &nr);
    a->dirs[0] = SP_IN;
    a->dirs[1] = SP_IN;
    a->dirs[2] = SP_INOUT;
    a->dirs[3] = SP_INOUT;
    a->dirs[4] = SP_OUT_EXISTING;
    a->dirs[5] = SP_OUT_EXISTING;
    a->tensor_count = 6;
    a->scalars[0] = (uint64_t)mode;
    a->scalars[1] = (uint64_t)layers;
    a->scalars[2] = data;
    a->scalars[3] = (uint64_t)kind;
    a->scalar_count = 4;
}

static void job_free(job *j)
{
    free(j->x);
    free(j->y);
    free(j->z);
    free(j->report);
    free(j->sel);
    free(j->flags);
}

#define MAX_TASKS (TG_LMAX * (2 * TG_K + 3) + 1)

/* The graph computed sequentially, in together_orch.c's submit order. */
typedef struct reference {
    uint64_t y[TG_K * TG_S], z[TG_LMAX * TG_S];
    int32_t flags[TG_K];
    bool skipped[MAX_TASKS];
    uint64_t tasks, skip_count;
} reference;

static void reference_run(const job *j, reference *r)
{
    memset(r, 0, sizeof *r);
    const int kind = (int)j->args.scalars[3];
    const uint64_t data = j->args.scalars[2];
    const bool pred = kind != TG_NO_PRED;
    memcpy(r->y, j->y, sizeof r->y);
    memcpy(r->z, j->z, (size_t)j->layers * TG_S * sizeof *r->z);
    memcpy(r->flags, j->flags, sizeof r->flags);
    int32_t f[TG_K];
    uint64_t id = 0;
    for (int64_t l = 0; l < j->layers; l++) {
        const int32_t *sel = &j->sel[l * TG_K];
        if (pred) {
            memcpy(f, sel, sizeof f);
            if (kind == TG_FLAGS_ARG)
                memcpy(r->flags, sel, sizeof f);
            id++; /* the router runs */
        }
        for (int64_t k = 0; k < TG_K; k++) {
            bool run = !pred || pred_ref_holds(f[k], 1 + (int)(k % 6), (k * 5) % 7 - 3);
            r->skipped[id++] = !run;
            for (int64_t e = 0; run && e < TG_S; e++) {
                uint64_t *o = &r->y[k * TG_S + e];
                *o = mix(mix(mix(mix((uint64_t)k, data), (uint64_t)l), *o), j->x[l * TG_S + e]);
            }
        }
        if (kind == TG_FLAGS_INNER) {
            for (int64_t k = 0; k < TG_K; k++)
                f[k] = sel[k] + 1;
            id++; /* the second inner router runs */
        }
        for (int64_t k = 0; k < TG_K; k++) {
            int32_t e = kind == TG_FLAGS_INNER && k % 2 == 0 ? f[(3 * k + 1) % TG_K]
                                                             : sel[(3 * k + 1) % TG_K];
            bool run = !pred || e >= 0;
            r->skipped[id++] = !run;
            for (int64_t e = 0; run && e < TG_S; e++) {
                uint64_t *o = &r->y[k * TG_S + e];
                *o = mix(mix(mix(mix(100 + (uint64_t)k, data), (uint64_t)l), *o),
                         r->y[((k + 1) % TG_K) * TG_S + e]);
            }
        }
        for (int64_t e = 0; e < TG_S; e++) {
            uint64_t h = mix(data, (uint64_t)l);
            for (int64_t k = 0; k < TG_K; k++)
                h = mix(h, r->y[k * TG_S + e]);
            r->z[l * TG_S + e] = h;
        }
        id++;
    }
    id++; /* the report */
    r->tasks = id;
    for (uint64_t t = 0; t < id; t++)
        r->skip_count += r->skipped[t];
}

/* The job's buffers against the reference; `what` names the run. */
static void assert_reference(const job *j, const reference *r, const sp_run_stats *st,
                             const char *what)
{
    cr_assert_eq(st->tasks, r->tasks, "%s: %llu tasks, expected %llu", what,
                 (unsigned long long)st->tasks, (unsigned long long)r->tasks);
    cr_assert_eq(st->skipped, r->skip_count, "%s: stats.skipped %u, expected %llu", what,
                 st->skipped, (unsigned long long)r->skip_count);
    for (int64_t i = 0; i < TG_K * TG_S; i++)
        cr_assert_eq(j->y[i], r->y[i], "%s: y[%lld] = %llx, expected %llx", what, (long long)i,
                     (unsigned long long)j->y[i], (unsigned long long)r->y[i]);
    for (int64_t i = 0; i < j->layers * TG_S; i++)
        cr_assert_eq(j->z[i], r->z[i], "%s: z[%lld] = %llx, expected %llx", what, (long long)i,
                     (unsigned long long)j->z[i], (unsigned long long)r->z[i]);
    for (int64_t i = 0; i < TG_K; i++)
        cr_assert_eq(j->flags[i], r->flags[i], "%s: flags[%lld] = %d, expected %d", what,
                     (long long)i, j->flags[i], r->flags[i]);
}

/* Two jobs' outputs, bit for bit. */
static void assert_same(const job *a, const job *b, const char *what)
{
    size_t nz = (size_t)a->layers * TG_S * sizeof *a->z;
    cr_assert(memcmp(a->y, b->y, TG_K * TG_S * sizeof *a->y) == 0, "%s: y differs", what);
    cr_assert(memcmp(a->z, b->z, nz) == 0, "%s: z differs", what);
    cr_assert(memcmp(a->flags, b->flags, TG_K * sizeof *a->flags) == 0, "%s: flags differ", what);
    cr_assert(memcmp(a->report, b->report, 8 * sizeof *a->report) == 0, "%s: report differs", what);
}

/* The trace's SKIPPED records are exactly the reference's skipped tasks,
 * and a skipped task has no slice. */
static void assert_trace(int rt, const reference *r, const char *what)
{
    const sp_run_trace *tr = sp_worker_last_trace(w[rt]);
    cr_assert_not_null(tr, "%s: no trace", what);
    cr_assert_eq(tr->records_dropped, 0);
    static uint32_t skips[MAX_TASKS], slices[MAX_TASKS];
    memset(skips, 0, sizeof skips);
    memset(slices, 0, sizeof slices);
    for (uint64_t k = 0; k < tr->record_count; k++) {
        const sp_trace_record *rec = &tr->records[k];
        cr_assert_lt(rec->task, r->tasks, "%s: a record of task %llu", what,
                     (unsigned long long)rec->task);
        if (rec->kind == SP_TRACE_SKIPPED)
            skips[rec->task]++;
        else if (rec->kind == SP_TRACE_SLICE)
            slices[rec->task]++;
    }
    for (uint64_t t = 0; t < r->tasks; t++) {
        cr_assert_eq(skips[t], r->skipped[t] ? 1u : 0u, "%s: task %llu has %u SKIPPED records",
                     what, (unsigned long long)t, skips[t]);
        cr_assert_eq(slices[t] > 0, !r->skipped[t], "%s: task %llu has %u slices", what,
                     (unsigned long long)t, slices[t]);
    }
}

static const sp_call_config fresh_cfg = {.flags = SP_CALL_NO_CHECK};
/* NO_CHECK: the sanitizer phases set SIMPLER_CHECK=1, and checking-mode
 * runs are never kept. */
static const sp_call_config auto_cfg = {.flags = SP_CALL_REPLAY_AUTO | SP_CALL_NO_CHECK};

static sp_run_stats run_job(int rt, job *j, const sp_call_config *cfg, const char *what)
{
    sp_run_stats st;
    int rc = sp_worker_run(w[rt], 0, &j->args, cfg, &st);
    cr_assert_eq(rc, SP_OK, "%s: %s: %s", what, sp_status_name(rc), sp_worker_last_error(w[rt]));
    return st;
}

/* 1. Predicates inside graph tasks: each layer's instance reads the flags
 * its router wrote (other values per layer) and a staged row, or flags
 * its body made; the body runs once; the same body called directly gives
 * the same results and, traced, the same edges pair for pair (so the
 * predicates' reads are ordered in an instance as one by one). */
static void predicates_inside_graph_tasks_in(int rt, int kind, uint32_t window)
{
    static reference ref;
    char what[128];
    pair *edges[2] = {NULL, NULL};
    uint64_t edge_count[2] = {0, 0};
    for (uint64_t seed = 1; seed <= 8; seed++)
        for (int mode = TG_GRAPH; mode <= TG_DIRECT; mode++) {
            const int64_t layers = 12;
            snprintf(what, sizeof what, "%s, %s, %s, seed %llu", rt_name[rt], kind_name[kind],
                     mode_name[mode], (unsigned long long)seed);
            job j;
            job_init(&j, mode, layers, kind, 77 + seed, seed);
            reference_run(&j, &ref);
            cr_assert(ref.skip_count > 0 && ref.skip_count < ref.tasks, "%s: the seed skips some",
                      what);
            /* Fresh runs: in the checking mode too, where the test phase sets it. */
            sp_call_config cfg = {.task_window = window,
                                  .trace_level = seed == 1 ? SP_TRACE_TASKS : 0};
            sp_run_stats st = run_job(rt, &j, &cfg, what);
            cr_assert_eq(st.replay, SP_RUN_FRESH);
            assert_reference(&j, &ref, &st, what);
            /* A window smaller than a layer may run a body one by one. */
            if (!window)
                cr_assert_eq(j.report[0], mode == TG_GRAPH ? 1u : (uint64_t)layers,
                             "%s: the body ran %llu times", what, (unsigned long long)j.report[0]);
            if (seed == 1) {
                assert_trace(rt, &ref, what);
                edges[mode] = trace_pairs(sp_worker_last_trace(w[rt]), &edge_count[mode]);
            }
            job_free(&j);
        }
    snprintf(what, sizeof what, "%s, %s", rt_name[rt], kind_name[kind]);
    cr_assert_eq(edge_count[0], edge_count[1], "%s: %llu edges, one by one %llu", what,
                 (unsigned long long)edge_count[0], (unsigned long long)edge_count[1]);
    for (uint64_t i = 0; i < edge_count[0]; i++)
        cr_assert(
            edges[0][i].producer == edges[1][i].producer &&
                edges[0][i].consumer == edges[1][i].consumer,
            "%s: edge %llu is %llu -> %llu, one by one %llu -> %llu", what, (unsigned long long)i,
            (unsigned long long)edges[0][i].producer, (unsigned long long)edges[0][i].consumer,
            (unsigned long long)edges[1][i].producer, (unsigned long long)edges[1][i].consumer);
    free(edges[0]);
    free(edges[1]);
}

static void predicates_inside_graph_tasks(int rt, int kind)
{
    predicates_inside_graph_tasks_in(rt, kind, 0);
}

Test(together, predicates_inside_graph_tasks_hbg)
{
    predicates_inside_graph_tasks(RT_HBG, TG_FLAGS_ARG);
    predicates_inside_graph_tasks(RT_HBG, TG_FLAGS_HEAP);
    predicates_inside_graph_tasks(RT_HBG, TG_FLAGS_INNER);
    predicates_inside_graph_tasks(RT_HBG, TG_FLAGS_ALLOC);
}

Test(together, predicates_inside_graph_tasks_tmr)
{
    predicates_inside_graph_tasks(RT_TMR, TG_FLAGS_ARG);
    predicates_inside_graph_tasks(RT_TMR, TG_FLAGS_HEAP);
    predicates_inside_graph_tasks(RT_TMR, TG_FLAGS_INNER);
    predicates_inside_graph_tasks(RT_TMR, TG_FLAGS_ALLOC);
}

/* 2 and 3. Record, then `runs` replays whose flags, data scalar and host
 * buffers differ each run: each equals a fresh run of the same inputs bit
 * for bit and the reference, with the reference's skipped count. */
static void replays_equal_fresh(int rt, int mode, int kind, int runs)
{
    static reference ref;
    char what[160];
    const int64_t layers = 10;
    sp_worker_forget(w[rt], 0, NULL, NULL);
    for (int i = 0; i <= runs; i++) {
        snprintf(what, sizeof what, "%s, %s, %s, run %d", rt_name[rt], mode_name[mode],
                 kind_name[kind], i);
        uint64_t data = 1000u + (uint64_t)i * 7919u, seed = 500u + (uint64_t)i;
        job fresh, rep;
        job_init(&fresh, mode, layers, kind, data, seed);
        job_init(&rep, mode, layers, kind, data, seed);
        reference_run(&rep, &ref);
        sp_run_stats fs = run_job(rt, &fresh, &fresh_cfg, what);
        /* Every tenth replay traced: its SKIPPED records are this run's. */
        sp_call_config cfg = auto_cfg;
        cfg.trace_level = i % 10 == 3 ? SP_TRACE_TASKS : 0;
        sp_run_stats rs = run_job(rt, &rep, &cfg, what);
        /* A body called directly with graph-scalar sources is never kept. */
        uint32_t want = !rt_replays[rt] || mode == TG_DIRECT_RAW ? SP_RUN_FRESH
                        : i == 0                                 ? SP_RUN_RECORDED
                                                                 : SP_RUN_REPLAYED;
        cr_assert_eq(rs.replay, want, "%s: replay state %u, expected %u", what, rs.replay, want);
        assert_reference(&rep, &ref, &rs, what);
        assert_same(&fresh, &rep, what);
        cr_assert_eq(fs.skipped, rs.skipped);
        if (cfg.trace_level)
            assert_trace(rt, &ref, what);
        if (mode == TG_GRAPH)
            cr_assert_eq(rep.report[0], 1);
        job_free(&fresh);
        job_free(&rep);
        if (i % 17 == 8) {
            /* A bigger fresh run in a bigger heap moves the slot's staging
             * and the bank's heap: the next replay patches the predicates'
             * element addresses with the rest. */
            job big;
            job_init(&big, mode == TG_DIRECT_RAW ? TG_DIRECT : mode, TG_LMAX, kind, 5, 99);
            reference_run(&big, &ref);
            sp_call_config big_heap = {.heap_bytes = (64ull + (uint64_t)i) << 20,
                                       .flags = SP_CALL_NO_CHECK};
            sp_run_stats bs = run_job(rt, &big, &big_heap, "a bigger run");
            cr_assert_eq(bs.replay, SP_RUN_FRESH);
            assert_reference(&big, &ref, &bs, "a bigger run");
            job_free(&big);
        }
    }
    if (rt_replays[rt] && mode != TG_DIRECT_RAW) {
        /* Replay only: replayed, with this run's flags. */
        job j;
        job_init(&j, mode, layers, kind, 4242, 4242);
        reference_run(&j, &ref);
        sp_call_config only = {.flags = SP_CALL_REPLAY_ONLY | SP_CALL_NO_CHECK};
        sp_run_stats st = run_job(rt, &j, &only, "replay only");
        cr_assert_eq(st.replay, SP_RUN_REPLAYED);
        assert_reference(&j, &ref, &st, "replay only");
        job_free(&j);
    }
    sp_worker_forget(w[rt], 0, NULL, NULL);
}

static void predicates_under_replay(int rt)
{
    replays_equal_fresh(rt, TG_DIRECT, TG_FLAGS_ARG, 50);
    replays_equal_fresh(rt, TG_DIRECT, TG_FLAGS_HEAP, 50);
    replays_equal_fresh(rt, TG_DIRECT, TG_FLAGS_INNER, 50);
    replays_equal_fresh(rt, TG_DIRECT, TG_FLAGS_ALLOC, 50);
}

/* On tmr a window smaller than a layer (19 tasks, 16 slots: the flags
 * argument, an allocated flags buffer) or than two (20 tasks each, 32
 * slots): the instances stream through it, their predicated tasks and
 * routers too. Not smaller for the inner flags, whose creator every task
 * of the layer holds (a 16-slot window deadlocks one by one as well), nor
 * the heap flags (their creator, the first router, retires within the
 * window: a later router's use is SP_ETENSOR_RETIRED one by one too). */
Test(together, predicates_inside_graph_tasks_through_a_small_window_tmr)
{
    predicates_inside_graph_tasks_in(RT_TMR, TG_FLAGS_ARG, 16);
    predicates_inside_graph_tasks_in(RT_TMR, TG_FLAGS_INNER, 32);
    predicates_inside_graph_tasks_in(RT_TMR, TG_FLAGS_ALLOC, 16);
}

Test(together, predicates_under_replay_hbg)
{
    predicates_under_replay(RT_HBG);
}

Test(together, predicates_under_replay_tmr)
{
    predicates_under_replay(RT_TMR);
}

static void graph_tasks_under_replay(int rt)
{
    replays_equal_fresh(rt, TG_GRAPH, TG_NO_PRED, 50);
    replays_equal_fresh(rt, TG_GRAPH, TG_FLAGS_ARG, 50);
    replays_equal_fresh(rt, TG_GRAPH, TG_FLAGS_HEAP, 50);
    replays_equal_fresh(rt, TG_GRAPH, TG_FLAGS_INNER, 50);
    replays_equal_fresh(rt, TG_GRAPH, TG_FLAGS_ALLOC, 50);
}

Test(together, graph_tasks_under_replay_hbg)
{
    graph_tasks_under_replay(RT_HBG);
}

Test(together, graph_tasks_under_replay_tmr)
{
    graph_tasks_under_replay(RT_TMR);
}

/* A body called directly whose scalars go through sp_task_graph_scalar
 * (marked as graph scalars outside any graph task, so the data scalar
 * passed on is not marked as the run's): its graph is never kept, since
 * a replay would keep the recorded value (it did, before), and ONLY misses. */
static void direct_raw_under_replay(int rt)
{
    replays_equal_fresh(rt, TG_DIRECT_RAW, TG_FLAGS_ARG, 5);
    if (!rt_replays[rt])
        return;
    job j;
    job_init(&j, TG_DIRECT_RAW, 4, TG_FLAGS_ARG, 1, 1);
    sp_call_config only = {.flags = SP_CALL_REPLAY_ONLY | SP_CALL_NO_CHECK};
    int rc = sp_worker_run(w[rt], 0, &j.args, &only, NULL);
    const char *msg = sp_worker_last_error(w[rt]);
    cr_assert_eq(rc, SP_EREPLAY_MISS, "%s: %s", sp_status_name(rc), msg);
    cr_assert(strstr(msg, "recorded for this") != NULL, "%s", msg);
    static reference ref;
    reference_run(&j, &ref);
    sp_run_stats st = run_job(rt, &j, &auto_cfg, "after the miss");
    assert_reference(&j, &ref, &st, "after the miss");
    job_free(&j);
}

Test(together, a_body_called_directly_under_replay_hbg)
{
    direct_raw_under_replay(RT_HBG);
}

Test(together, a_body_called_directly_under_replay_tmr)
{
    direct_raw_under_replay(RT_TMR);
}

/* A kernel crash in a replay of predicated tasks (the data scalar, which
 * a replay patches, makes the always-running fold crash): named, and the
 * next replays, with new flags, are right. */
#define TG_CRASH 0xc0ffeeull

static void a_crash_in_a_replay(int rt, int mode, int kind)
{
    static reference ref;
    char what[160];
    sp_worker_forget(w[rt], 0, NULL, NULL);
    for (int i = 0; i < 6; i++) {
        snprintf(what, sizeof what, "%s, %s, %s, run %d", rt_name[rt], mode_name[mode],
                 kind_name[kind], i);
        job j;
        job_init(&j, mode, 6, kind, i == 2 ? TG_CRASH : 10u + (uint64_t)i, 70u + (uint64_t)i);
        reference_run(&j, &ref);
        sp_run_stats st;
        int rc = sp_worker_run(w[rt], 0, &j.args, &auto_cfg, &st);
        if (i == 2) {
            const char *msg = sp_worker_last_error(w[rt]);
            cr_assert_eq(rc, SP_EKERNEL_FAULT, "%s: %s: %s", what, sp_status_name(rc), msg);
            cr_assert(strstr(msg, "together_fold") != NULL, "%s: %s", what, msg);
        } else {
            cr_assert_eq(rc, SP_OK, "%s: %s: %s", what, sp_status_name(rc),
                         sp_worker_last_error(w[rt]));
            cr_assert_eq(st.replay, i == 0 ? SP_RUN_RECORDED : SP_RUN_REPLAYED, "%s: %u", what,
                         st.replay);
            assert_reference(&j, &ref, &st, what);
        }
        job_free(&j);
    }
    sp_worker_forget(w[rt], 0, NULL, NULL);
}

static void crashes(int rt)
{
    a_crash_in_a_replay(rt, TG_DIRECT, TG_FLAGS_ARG);
    a_crash_in_a_replay(rt, TG_GRAPH, TG_FLAGS_HEAP);
    a_crash_in_a_replay(rt, TG_GRAPH, TG_FLAGS_INNER);
}

Test(together, a_kernel_crash_in_a_predicated_replay_is_named_hbg)
{
    crashes(RT_HBG);
}

Test(together, a_kernel_crash_in_a_predicated_replay_is_named_tmr)
{
    crashes(RT_TMR);
}

/* 4. Two replays in flight on the async lane, both predicated, each with
 * its own flags, data and buffers. */
static void two_replays_in_flight(int rt, int mode, int kind)
{
    static reference ra, rb;
    char what[160];
    const int64_t layers = 10;
    sp_worker_forget(w[rt], 0, NULL, NULL);
    job first;
    job_init(&first, mode, layers, kind, 3, 1);
    sp_run_stats st = run_job(rt, &first, &auto_cfg, "the recording");
    cr_assert_eq(st.replay, rt_replays[rt] ? SP_RUN_RECORDED : SP_RUN_FRESH);
    job_free(&first);
    cr_assert_eq(sp_worker_lane_depth(w[rt]), 2);
    for (int i = 0; i < 25; i++) {
        snprintf(what, sizeof what, "%s, %s, %s, pair %d", rt_name[rt], mode_name[mode],
                 kind_name[kind], i);
        job a, b;
        job_init(&a, mode, layers, kind, 11u + (uint64_t)i, 100u + (uint64_t)i);
        job_init(&b, mode, layers, kind, 5000u + (uint64_t)i, 900u + (uint64_t)i);
        reference_run(&a, &ra);
        reference_run(&b, &rb);
        sp_run_handle ha, hb;
        cr_assert_eq(sp_worker_submit(w[rt], 0, &a.args, &auto_cfg, &ha), SP_OK, "%s: %s", what,
                     sp_worker_last_error(w[rt]));
        cr_assert_eq(sp_worker_submit(w[rt], 0, &b.args, &auto_cfg, &hb), SP_OK, "%s: %s", what,
                     sp_worker_last_error(w[rt]));
        cr_assert_neq(ha.slot, hb.slot);
        sp_run_stats sa, sb;
        int rc = sp_worker_wait(w[rt], &ha, &sa);
        cr_assert_eq(rc, SP_OK, "%s: %s: %s", what, sp_status_name(rc),
                     sp_worker_last_error(w[rt]));
        rc = sp_worker_wait(w[rt], &hb, &sb);
        cr_assert_eq(rc, SP_OK, "%s: %s: %s", what, sp_status_name(rc),
                     sp_worker_last_error(w[rt]));
        uint32_t want = rt_replays[rt] ? SP_RUN_REPLAYED : SP_RUN_FRESH;
        cr_assert_eq(sa.replay, want, "%s: first %u", what, sa.replay);
        cr_assert_eq(sb.replay, want, "%s: second %u", what, sb.replay);
        assert_reference(&a, &ra, &sa, what);
        assert_reference(&b, &rb, &sb, what);
        job_free(&a);
        job_free(&b);
    }
    sp_worker_forget(w[rt], 0, NULL, NULL);
}

static void async_lane(int rt)
{
    two_replays_in_flight(rt, TG_DIRECT, TG_FLAGS_ARG);
    two_replays_in_flight(rt, TG_DIRECT, TG_FLAGS_HEAP);
    two_replays_in_flight(rt, TG_GRAPH, TG_FLAGS_ARG);
    two_replays_in_flight(rt, TG_GRAPH, TG_FLAGS_HEAP);
    two_replays_in_flight(rt, TG_GRAPH, TG_FLAGS_INNER);
    two_replays_in_flight(rt, TG_GRAPH, TG_FLAGS_ALLOC);
}

Test(together, two_replays_in_flight_each_with_its_flags_hbg)
{
    async_lane(RT_HBG);
}

Test(together, two_replays_in_flight_each_with_its_flags_tmr)
{
    async_lane(RT_TMR);
}
