/* Predicated tasks inside tmr replays (DESIGN §12): a graph whose tasks
 * are predicated on (a) a staged flags input, (b) flags a router task
 * writes as a fresh runtime-owned output, (c) an sp_alloc_tensor flags
 * buffer a router fills, is recorded under SP_CALL_REPLAY_AUTO and then
 * replayed 50 times through an 8-slot window (the ring wraps) with flags
 * that change every run, in new host buffers: each replay is
 * SP_RUN_REPLAYED, its outputs equal a fresh run's bit for bit and a
 * sequential reference, stats.skipped is right every run; a traced replay
 * has a SKIPPED record for exactly the skipped tasks (and no slice of
 * theirs) and the edges of a traced fresh run (so the recorded producers
 * include each predicate's edge); two replays in flight; predicated
 * graph tasks with an allocation after the first. Orchestration:
 * tests/kernels/replay_tmr_pred_orch.c; kernels: pred_kernels.c and
 * replay_tmr_pred_kernels.c. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "pred_ref.h"
#include "register_spec.h"
#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/orchestration.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/trace.h"
#include "simpler/worker.h"

#define TMR_MODULE SP_MODULE_DIR "/libsimpler_tmr_sim.so"

/* As replay_tmr_pred_orch.c. */
enum { MODE_STAGED = 0, MODE_ROUTED = 1, MODE_STATIC = 2, MODE_GRAPH = 3 };
enum { K_ROUTE = 0, K_MARK = 1, K_DOUBLE = 2, K_SUM = 3, K_DUMMY = 4 };

#define N 40
#define MAX_TASKS (5 * N + 2)
#define PAT_OUT(i) (-7000 - (int64_t)(i))
#define PAT_OUT2(i) (-9000 - 3 * (int64_t)(i))
#define PAT_OUT3(i) (-11000 - 5 * (int64_t)(i))

static sp_worker *w;

static void setup(void)
{
    char err[1024] = "";
    cr_assert_eq(sp_worker_open(TMR_MODULE, NULL, &w, err, sizeof err), SP_OK, "%s", err);
    const char *k = SP_TEST_KERNEL_DIR "/pred_kernels.so";
    const char *k2 = SP_TEST_KERNEL_DIR "/replay_tmr_pred_kernels.so";
    sp_callable_kernel_spec ks[5] = {
        {.func_id = 0, .core_type = SP_CORE_AIV, .path = k, .entry = "pred_route"},
        {.func_id = 1, .core_type = SP_CORE_AIV, .path = k, .entry = "pred_mark"},
        {.func_id = 2, .core_type = SP_CORE_AIC, .path = k, .entry = "pred_double"},
        {.func_id = 3, .core_type = SP_CORE_AIV, .path = k, .entry = "pred_sum"},
        {.func_id = 4, .core_type = SP_CORE_AIV, .path = k2, .entry = "pred_scribble"},
    };
    sp_callable_spec spec = {.orch_path = SP_TEST_KERNEL_DIR "/replay_tmr_pred_orch.so",
                             .orch_entry = "replay_tmr_pred",
                             .orch_config = "replay_tmr_pred_config",
                             .kernels = ks,
                             .kernel_count = 5};
    cr_assert_eq(sp_test_register_spec(w, 0, &spec, err, sizeof err), SP_OK, "%s", err);
}

static void teardown(void)
{
    sp_worker_close(w);
}

TestSuite(replay_tmr_pred, .init = setup, .fini = teardown, .timeout = 120);

/* One run's host buffers. */
typedef struct buffers {
    int32_t flags[2 * N], src[2 * N];
    int64_t out[N], out2[N], out3[N];
    sp_args args;
} buffers;

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The arguments over b's own arrays (after a copy, too). */
static void bind(buffers *b, int mode)
{
    memset(&b->args, 0, sizeof b->args);
    int64_t n2 = 2 * N, n = N;
    sp_tensor_init(&b->args.tensors[0], (uint64_t)(uintptr_t)b->flags, SP_DTYPE_I32, 1, &n2);
    sp_tensor_init(&b->args.tensors[1], (uint64_t)(uintptr_t)b->src, SP_DTYPE_I32, 1, &n2);
    sp_tensor_init(&b->args.tensors[2], (uint64_t)(uintptr_t)b->out, SP_DTYPE_I64, 1, &n);
    sp_tensor_init(&b->args.tensors[3], (uint64_t)(uintptr_t)b->out2, SP_DTYPE_I64, 1, &n);
    sp_tensor_init(&b->args.tensors[4], (uint64_t)(uintptr_t)b->out3, SP_DTYPE_I64, 1, &n);
    b->args.dirs[0] = b->args.dirs[1] = SP_IN;
    b->args.dirs[2] = b->args.dirs[3] = b->args.dirs[4] = SP_INOUT;
    b->args.tensor_count = 5;
    b->args.scalars[0] = (uint64_t)mode;
    b->args.scalars[1] = N;
    b->args.scalar_count = 2;
}

/* Fresh flags and src in [-3, 3] from `seed`, the outputs their patterns. */
static void fill(buffers *b, int mode, uint64_t seed)
{
    uint64_t s = seed;
    for (int i = 0; i < 2 * N; i++) {
        b->flags[i] = (int32_t)(splitmix(&s) % 7) - 3;
        b->src[i] = (int32_t)(splitmix(&s) % 7) - 3;
    }
    for (int i = 0; i < N; i++) {
        b->out[i] = PAT_OUT(i);
        b->out2[i] = PAT_OUT2(i);
        b->out3[i] = PAT_OUT3(i);
    }
    bind(b, mode);
}

/* As replay_tmr_pred_orch.c's pred_value. */
static int64_t pred_value(int64_t i)
{
    return (int64_t)(((uint64_t)i * 2654435761u) % 7) - 3;
}

/* The graph the orchestration submits, task by task, and which of its
 * tasks a run on `in` skips: the sequential reference. */
typedef struct model {
    uint32_t tasks, skipped;
    bool skip[MAX_TASKS];
    int64_t out[N], out2[N], out3[N];
} model;

/* MODE_GRAPH: step 0 on flags[0, 2), a router (task 4), steps 1.. on src;
 * each step P, Q, R and a scribble task. */
static void reference_graph(const buffers *in, model *m)
{
    uint32_t id = 0;
    for (int64_t i = 0; i < N; i++) {
        if (i == 1)
            id++;
        const int32_t *v = i == 0 ? in->flags : in->src;
        int op = (int)(1 + i % 6);
        bool p = pred_ref_holds(v[2 * i], op, (int64_t)(op % 7) - 3);
        bool q = pred_ref_holds(v[2 * i + 1], SP_PRED_GE, 0);
        m->skip[id++] = !p;
        m->skip[id++] = !q;
        id += 2; /* R, and the scribble task */
        m->out[i] = p ? 1000 + i : PAT_OUT(i);
        m->out2[i] = q ? 2 * m->out[i] + 1 : PAT_OUT2(i);
        m->out3[i] = m->out[i] + m->out2[i];
    }
    m->tasks = id;
    for (uint32_t t = 0; t < id; t++)
        m->skipped += m->skip[t];
}

static void reference(const buffers *in, int mode, model *m)
{
    memset(m, 0, sizeof *m);
    if (mode == MODE_GRAPH) {
        reference_graph(in, m);
        return;
    }
    /* The predicates' elements: the staged flags, or what the routers copy from src. */
    const int32_t *v = mode == MODE_STAGED ? in->flags : in->src;
    uint32_t id = mode == MODE_STATIC ? 1 : 0;
    for (int64_t i = 0; i < N; i++) {
        if (mode == MODE_ROUTED)
            id++;
        bool p = pred_ref_holds(v[2 * i], (int)(1 + i % 6), pred_value(i));
        bool q = pred_ref_holds(v[2 * i + 1], SP_PRED_GE, 0);
        m->skip[id++] = !p;
        m->skip[id++] = !q;
        if (i % 7 == 3)
            m->skip[id++] = !pred_ref_holds(v[2 * i], SP_PRED_LT, 0);
        id++; /* R */
        m->out[i] = p ? 1000 + i : PAT_OUT(i);
        m->out2[i] = q ? 2 * m->out[i] + 1 : PAT_OUT2(i);
        m->out3[i] = m->out[i] + m->out2[i];
    }
    m->tasks = id;
    for (uint32_t t = 0; t < id; t++)
        m->skipped += m->skip[t];
}

static void assert_reference(const buffers *b, const model *m, const char *what, int run)
{
    for (int i = 0; i < N; i++) {
        cr_assert_eq(b->out[i], m->out[i], "%s run %d: out[%d] = %lld, want %lld", what, run, i,
                     (long long)b->out[i], (long long)m->out[i]);
        cr_assert_eq(b->out2[i], m->out2[i], "%s run %d: out2[%d] = %lld, want %lld", what, run, i,
                     (long long)b->out2[i], (long long)m->out2[i]);
        cr_assert_eq(b->out3[i], m->out3[i], "%s run %d: out3[%d] = %lld, want %lld", what, run, i,
                     (long long)b->out3[i], (long long)m->out3[i]);
    }
}

static sp_call_config cfg_of(uint64_t flags)
{
    /* 8 slots: the ring wraps ~16-20 times a run, so a replay waits for
     * room (and holds a router's output) as the recording did. */
    /* A run that does not ask for the checking mode keeps it off, whatever
     * SIMPLER_CHECK says (make test's sanitizer phases set it). */
    if (!(flags & SP_CALL_CHECK))
        flags |= SP_CALL_NO_CHECK;
    return (sp_call_config){.task_window = 8, .heap_bytes = 4096, .flags = flags};
}

static const char *const mode_name[] = {"staged", "routed", "static", "graph"};

/* Record, then 50 replays, each against a fresh run on a copy in other buffers. */
static void replay_50(int mode)
{
    const char *what = mode_name[mode];
    sp_call_config autoc = cfg_of(SP_CALL_REPLAY_AUTO), fresh = cfg_of(0);
    sp_graph_cache_info i0, i1;
    cr_assert_eq(sp_worker_graph_cache_info(w, &i0), SP_OK);
    uint32_t skipped_total = 0;
    for (int r = 0; r <= 50; r++) {
        /* New buffers every run (new host addresses), new flags. */
        buffers *a = malloc(sizeof *a), *f = malloc(sizeof *f);
        fill(a, mode, 1000 * (uint64_t)(mode + 1) + (uint64_t)r);
        *f = *a;
        bind(f, mode);
        model *m = malloc(sizeof *m);
        reference(a, mode, m);
        sp_run_stats st;
        int rc = sp_worker_run(w, 0, &a->args, &autoc, &st);
        cr_assert_eq(rc, SP_OK, "%s run %d: %s", what, r, sp_worker_last_error(w));
        cr_assert_eq(st.replay, r == 0 ? SP_RUN_RECORDED : SP_RUN_REPLAYED, "%s run %d: replay %u",
                     what, r, st.replay);
        cr_assert_eq(st.tasks, m->tasks, "%s run %d: %llu tasks, want %u", what, r,
                     (unsigned long long)st.tasks, m->tasks);
        cr_assert_eq(st.skipped, m->skipped, "%s run %d: skipped %u, want %u", what, r, st.skipped,
                     m->skipped);
        assert_reference(a, m, what, r);
        rc = sp_worker_run(w, 0, &f->args, &fresh, &st);
        cr_assert_eq(rc, SP_OK, "%s fresh run %d: %s", what, r, sp_worker_last_error(w));
        cr_assert_eq(st.replay, SP_RUN_FRESH);
        cr_assert_eq(st.skipped, m->skipped, "%s fresh run %d", what, r);
        cr_assert_eq(memcmp(a->out, f->out, sizeof a->out), 0, "%s run %d: out differs", what, r);
        cr_assert_eq(memcmp(a->out2, f->out2, sizeof a->out2), 0, "%s run %d: out2", what, r);
        cr_assert_eq(memcmp(a->out3, f->out3, sizeof a->out3), 0, "%s run %d: out3", what, r);
        skipped_total += m->skipped;
        free(m);
        free(a);
        free(f);
    }
    /* The flags matter: some tasks skip, most run. */
    cr_assert_gt(skipped_total, 0);
    cr_assert_eq(sp_worker_graph_cache_info(w, &i1), SP_OK);
    cr_assert_eq(i1.recorded - i0.recorded, 1, "%s", what);
    cr_assert_eq(i1.replayed - i0.replayed, 50, "%s", what);
}

Test(replay_tmr_pred, predicates_on_a_staged_input_replay_50_times)
{
    replay_50(MODE_STAGED);
}

Test(replay_tmr_pred, predicates_on_a_routers_fresh_output_replay_50_times)
{
    replay_50(MODE_ROUTED);
}

Test(replay_tmr_pred, predicates_on_an_alloc_tensor_replay_50_times)
{
    replay_50(MODE_STATIC);
}

static int edge_cmp(const void *a, const void *b)
{
    const sp_trace_edge *x = a, *y = b;
    if (x->consumer != y->consumer)
        return x->consumer < y->consumer ? -1 : 1;
    if (x->producer != y->producer)
        return x->producer < y->producer ? -1 : 1;
    return (int)x->kind - (int)y->kind;
}

enum { EDGE_CAP = 4096 };

/* The last traced run: its SKIPPED records are exactly m's skipped tasks,
 * each once, with no slice; every other kernel task has slices. Its sorted
 * edges into `edges`; returns their count. */
static uint64_t check_trace(const model *m, sp_trace_edge *edges, const char *what, int run)
{
    const sp_run_trace *t = sp_worker_last_trace(w);
    cr_assert_not_null(t);
    cr_assert_eq(t->records_dropped, 0);
    cr_assert_eq(t->edges_dropped, 0);
    static uint32_t skips[MAX_TASKS], slices[MAX_TASKS];
    memset(skips, 0, sizeof skips);
    memset(slices, 0, sizeof slices);
    for (uint64_t i = 0; i < t->record_count; i++) {
        const sp_trace_record *rec = &t->records[i];
        cr_assert_lt(rec->task, MAX_TASKS);
        if (rec->kind == SP_TRACE_SKIPPED)
            skips[rec->task]++;
        else if (rec->kind == SP_TRACE_SLICE || rec->kind == SP_TRACE_DUMMY)
            slices[rec->task]++;
    }
    for (uint32_t i = 0; i < m->tasks; i++) {
        cr_assert_eq(skips[i], m->skip[i] ? 1u : 0u, "%s run %d: task %u has %u SKIPPED records",
                     what, run, i, skips[i]);
        if (m->skip[i])
            cr_assert_eq(slices[i], 0, "%s run %d: skipped task %u ran", what, run, i);
        else
            cr_assert_gt(slices[i], 0, "%s run %d: task %u has no slice", what, run, i);
    }
    cr_assert_leq(t->edge_count, EDGE_CAP);
    memcpy(edges, t->edges, t->edge_count * sizeof *edges);
    qsort(edges, t->edge_count, sizeof *edges, edge_cmp);
    return t->edge_count;
}

/* Traced: a fresh run's edges and skips, then the recording and five
 * replays with other flags, each with exactly its own skips and the same
 * edges (a predicate's edge is recorded with its task's producers). */
static void traced(int mode)
{
    const char *what = mode_name[mode];
    sp_call_config autoc = cfg_of(SP_CALL_REPLAY_AUTO), fresh = cfg_of(0);
    autoc.trace_level = fresh.trace_level = 1;
    static sp_trace_edge e0[EDGE_CAP], e1[EDGE_CAP];
    buffers *b = malloc(sizeof *b);
    model *m = malloc(sizeof *m);
    sp_run_stats st;
    fill(b, mode, 77 + (uint64_t)mode);
    reference(b, mode, m);
    cr_assert_eq(sp_worker_run(w, 0, &b->args, &fresh, &st), SP_OK, "%s", sp_worker_last_error(w));
    uint64_t n0 = check_trace(m, e0, what, -1);
    cr_assert_gt(n0, 0);
    for (int r = 0; r <= 5; r++) {
        fill(b, mode, 500 + 10 * (uint64_t)mode + (uint64_t)r);
        reference(b, mode, m);
        cr_assert_eq(sp_worker_run(w, 0, &b->args, &autoc, &st), SP_OK, "%s run %d: %s", what, r,
                     sp_worker_last_error(w));
        cr_assert_eq(st.replay, r == 0 ? SP_RUN_RECORDED : SP_RUN_REPLAYED, "%s run %d", what, r);
        cr_assert_eq(st.skipped, m->skipped, "%s run %d", what, r);
        assert_reference(b, m, what, r);
        uint64_t n1 = check_trace(m, e1, what, r);
        cr_assert_eq(n1, n0, "%s run %d: %llu edges, fresh %llu", what, r, (unsigned long long)n1,
                     (unsigned long long)n0);
        for (uint64_t i = 0; i < n0; i++)
            cr_assert(e0[i].producer == e1[i].producer && e0[i].consumer == e1[i].consumer &&
                          e0[i].kind == e1[i].kind,
                      "%s run %d: edge %llu differs", what, r, (unsigned long long)i);
    }
    free(m);
    free(b);
}

Test(replay_tmr_pred, a_traced_replay_skips_exactly_the_false_predicates)
{
    traced(MODE_STAGED);
    traced(MODE_ROUTED);
    traced(MODE_STATIC);
}

/* The checking mode (red zones around staged and heap buffers) replays
 * predicated tasks too: five replays per mode, each right. */
Test(replay_tmr_pred, predicated_replays_in_the_checking_mode_are_right)
{
    sp_call_config autoc = cfg_of(SP_CALL_REPLAY_AUTO | SP_CALL_CHECK);
    buffers *b = malloc(sizeof *b);
    model *m = malloc(sizeof *m);
    sp_run_stats st;
    for (int mode = MODE_STAGED; mode <= MODE_STATIC; mode++)
        for (int r = 0; r <= 5; r++) {
            fill(b, mode, 900 + 10 * (uint64_t)mode + (uint64_t)r);
            reference(b, mode, m);
            cr_assert_eq(sp_worker_run(w, 0, &b->args, &autoc, &st), SP_OK, "%s run %d: %s",
                         mode_name[mode], r, sp_worker_last_error(w));
            cr_assert_eq(st.replay, r == 0 ? SP_RUN_RECORDED : SP_RUN_REPLAYED, "%s run %d",
                         mode_name[mode], r);
            cr_assert_eq(st.skipped, m->skipped, "%s run %d", mode_name[mode], r);
            assert_reference(b, m, mode_name[mode], r);
        }
    free(m);
    free(b);
}

/* Graph tasks whose inner tasks are predicated, the first one before an
 * sp_alloc_tensor the later ones' predicates read: recorded and replayed,
 * in the checking mode too. The heap is just large enough for the graph
 * tasks' record region (1/8 of it), and 8 KiB scribble outputs sweep the
 * ring through the heap: a replay that put the allocation elsewhere than
 * the recording addressed it would have the ring overwrite the flags. */
Test(replay_tmr_pred, predicated_graph_tasks_replay_with_an_alloc_after_the_first)
{
    for (int check = 0; check <= 1; check++) {
        sp_call_config autoc = cfg_of(SP_CALL_REPLAY_AUTO | (check ? SP_CALL_CHECK : 0));
        autoc.heap_bytes = 128 << 10; /* a 16 KiB record region for the graph tasks */
        autoc.trace_level = 1;
        buffers *b = malloc(sizeof *b);
        model *m = malloc(sizeof *m);
        static sp_trace_edge e[EDGE_CAP];
        sp_run_stats st;
        for (int r = 0; r <= 10; r++) {
            fill(b, MODE_GRAPH, 3000 + 100 * (uint64_t)check + (uint64_t)r);
            reference(b, MODE_GRAPH, m);
            int rc = sp_worker_run(w, 0, &b->args, &autoc, &st);
            cr_assert_eq(rc, SP_OK, "check %d run %d: %s", check, r, sp_worker_last_error(w));
            cr_assert_eq(st.replay, r == 0 ? SP_RUN_RECORDED : SP_RUN_REPLAYED,
                         "check %d run %d: replay %u", check, r, st.replay);
            cr_assert_eq(st.tasks, m->tasks);
            cr_assert_eq(st.skipped, m->skipped, "check %d run %d", check, r);
            assert_reference(b, m, "graph", r);
            check_trace(m, e, "graph", r);
        }
        free(m);
        free(b);
    }
}

/* Two replays of one predicated graph in flight on the async lane, each
 * with its own flags: each has its own skips and results. */
Test(replay_tmr_pred, two_predicated_replays_in_flight_on_the_async_lane)
{
    sp_call_config autoc = cfg_of(SP_CALL_REPLAY_AUTO);
    buffers *b = calloc(2, sizeof *b);
    model *m = calloc(2, sizeof *m);
    sp_run_stats st;
    fill(&b[0], MODE_ROUTED, 4000);
    cr_assert_eq(sp_worker_run(w, 0, &b[0].args, &autoc, &st), SP_OK, "%s",
                 sp_worker_last_error(w));
    cr_assert_eq(st.replay, SP_RUN_RECORDED);
    for (int r = 0; r < 20; r++) {
        sp_run_handle h[2];
        for (int k = 0; k < 2; k++) {
            fill(&b[k], MODE_ROUTED, 4100 + 2 * (uint64_t)r + (uint64_t)k);
            reference(&b[k], MODE_ROUTED, &m[k]);
            cr_assert_eq(sp_worker_submit(w, 0, &b[k].args, &autoc, &h[k]), SP_OK, "%s",
                         sp_worker_last_error(w));
        }
        for (int k = 0; k < 2; k++) {
            cr_assert_eq(sp_worker_wait(w, &h[k], &st), SP_OK, "round %d run %d: %s", r, k,
                         sp_worker_last_error(w));
            cr_assert_eq(st.replay, SP_RUN_REPLAYED, "round %d run %d", r, k);
            cr_assert_eq(st.skipped, m[k].skipped, "round %d run %d", r, k);
            assert_reference(&b[k], &m[k], "async", r);
        }
    }
    free(m);
    free(b);
}
