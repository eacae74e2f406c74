/* Replay across runs on tensormap_and_ringbuffer (DESIGN §12): a recorded
 * run's submit stream, replayed, gives the results of a fresh run bit for
 * bit while inputs, host buffers and a data scalar change — through a
 * small window (the ring wraps, back-pressure during replay), with heap
 * intermediates, scopes and a static allocation, on both lanes with two
 * runs in flight; a changed key or control value records afresh; a read
 * of a value the run produced is never kept; replay-only with nothing
 * recorded is refused by name; a kernel crash during a replay is named and
 * the next replay is right; a traced replay has a fresh run's records and
 * edges. Orchestrations: tests/kernels/replay_tmr_orch.c. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "register_spec.h"
#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/module.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/trace.h"
#include "simpler/worker.h"

#define TMR_MODULE SP_MODULE_DIR "/libsimpler_tmr_sim.so"

enum { MODE_PIPE = 0, MODE_CONTROL = 1, MODE_READ_PRODUCED = 2, MODE_WRITE = 5 };

#define L 4
#define BLOCKS 16
#define LEN ((BLOCKS + 1) * L)
#define CRASH 0xdeadull

static sp_worker *w;

/* Callable `id`: the replay orchestration with config function `config`. */
static void register_orch(uint32_t id, const char *config)
{
    char err[1024] = "";
    const char *k = SP_TEST_KERNEL_DIR "/replay_tmr_kernels.so";
    sp_callable_kernel_spec ks[2] = {
        {.func_id = 0, .core_type = SP_CORE_AIV, .path = k, .entry = "rt_affine"},
        {.func_id = 1, .core_type = SP_CORE_AIV, .path = k, .entry = "rt_acc"},
    };
    sp_callable_spec spec = {.orch_path = SP_TEST_KERNEL_DIR "/replay_tmr_orch.so",
                             .orch_entry = "replay_tmr",
                             .orch_config = config,
                             .kernels = ks,
                             .kernel_count = 2};
    cr_assert_eq(sp_test_register_spec(w, id, &spec, err, sizeof err), SP_OK, "%s", err);
}

static void setup_with(const sp_worker_options *opt)
{
    char err[1024] = "";
    cr_assert_eq(sp_worker_open(TMR_MODULE, opt, &w, err, sizeof err), SP_OK, "%s", err);
    register_orch(0, "replay_tmr_config");
}

static void setup(void)
{
    setup_with(NULL);
}

static void teardown(void)
{
    sp_worker_close(w);
}

TestSuite(replay_tmr, .init = setup, .fini = teardown, .timeout = 120);

/* One run's host buffers. */
typedef struct buffers {
    uint64_t x[LEN], y[LEN], ctl[4];
    sp_args args;
} buffers;

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 17;
}

static void fill(buffers *b, uint64_t seed, int mode, uint64_t n, uint64_t data)
{
    for (int i = 0; i < LEN; i++) {
        b->x[i] = rnd(&seed) % 1000;
        b->y[i] = rnd(&seed);
    }
    memset(&b->args, 0, sizeof b->args);
    int64_t len = LEN, four = 4;
    sp_tensor_init(&b->args.tensors[0], (uint64_t)(uintptr_t)b->x, SP_DTYPE_U64, 1, &len);
    sp_tensor_init(&b->args.tensors[1], (uint64_t)(uintptr_t)b->y, SP_DTYPE_U64, 1, &len);
    sp_tensor_init(&b->args.tensors[2], (uint64_t)(uintptr_t)b->ctl, SP_DTYPE_U64, 1, &four);
    b->args.dirs[0] = SP_IN;
    b->args.dirs[1] = SP_INOUT;
    b->args.dirs[2] = SP_IN;
    b->args.tensor_count = 3;
    b->args.scalars[0] = (uint64_t)mode;
    b->args.scalars[1] = n;
    b->args.scalars[2] = data;
    b->args.scalar_count = 3;
}

/* What MODE_PIPE leaves in y (replay_tmr_orch.c's pipe, sequentially). */
static void pipe_reference(const buffers *in, uint64_t n, uint64_t data, uint64_t *y)
{
    memcpy(y, in->y, sizeof in->y);
    uint64_t a[L] = {0};
    for (uint64_t i = 0; i < n; i++) {
        uint64_t b = i % BLOCKS;
        for (int j = 0; j < L; j++) {
            uint64_t h = in->x[b * L + j] * 3 + data;
            y[b * L + j] = h + i;
            if (i % 10 == 0)
                a[j] += h;
        }
    }
    memcpy(&y[BLOCKS * L], a, sizeof a);
}

static sp_call_config cfg_of(uint64_t flags)
{
    /* 8 slots: the ring wraps ~26 times over 212 tasks, so the replay
     * waits for room as the recording did. */
    return (sp_call_config){.task_window = 8, .heap_bytes = 4096, .flags = flags};
}

static void assert_pipe(const buffers *b, const uint64_t *before_y, uint64_t n, uint64_t data,
                        const char *what, int run)
{
    buffers in = *b;
    memcpy(in.y, before_y, sizeof in.y);
    uint64_t want[LEN];
    pipe_reference(&in, n, data, want);
    for (int i = 0; i < LEN; i++)
        cr_assert_eq(b->y[i], want[i], "%s run %d: y[%d] = %llu, want %llu", what, run, i,
                     (unsigned long long)b->y[i], (unsigned long long)want[i]);
}

Test(replay_tmr, a_replay_equals_a_fresh_run_over_100_runs)
{
    const uint64_t n = 100;
    sp_run_stats st;
    sp_graph_cache_info info0, info;
    cr_assert_eq(sp_worker_graph_cache_info(w, &info0), SP_OK);
    sp_call_config fresh = cfg_of(0), autoc = cfg_of(SP_CALL_REPLAY_AUTO);
    uint64_t uploads = 0;
    for (int r = 0; r < 100; r++) {
        /* New buffers every run (so new host addresses), new data. */
        buffers *a = malloc(sizeof *a), *f = malloc(sizeof *f);
        uint64_t data = (uint64_t)r * 7 + 1;
        fill(a, 1000 + (uint64_t)r, MODE_PIPE, n, data);
        *f = *a;
        f->args.tensors[0].addr = (uint64_t)(uintptr_t)f->x;
        f->args.tensors[1].addr = (uint64_t)(uintptr_t)f->y;
        f->args.tensors[2].addr = (uint64_t)(uintptr_t)f->ctl;
        uint64_t before[LEN];
        memcpy(before, a->y, sizeof before);
        int rc = sp_worker_run(w, 0, &a->args, &autoc, &st);
        cr_assert_eq(rc, SP_OK, "run %d: %s", r, sp_worker_last_error(w));
        cr_assert_eq(st.replay, r == 0 ? SP_RUN_RECORDED : SP_RUN_REPLAYED, "run %d: replay %u", r,
                     st.replay);
        cr_assert_eq(st.tasks, 2 * n + n / 10 + 2);
        if (r == 0)
            cr_assert_eq(st.patch_bytes, 0); /* a recording uploads nothing */
        uploads += st.patch_bytes != 0;
        rc = sp_worker_run(w, 0, &f->args, &fresh, &st);
        cr_assert_eq(rc, SP_OK, "fresh run %d: %s", r, sp_worker_last_error(w));
        cr_assert_eq(st.replay, SP_RUN_FRESH);
        cr_assert_eq(memcmp(a->y, f->y, sizeof a->y), 0, "run %d: replay and fresh differ", r);
        assert_pipe(a, before, n, data, "replayed", r);
        free(a);
        free(f);
    }
    /* The bank that recorded holds the stream; another uploads it once. */
    cr_assert_leq(uploads, 1, "%llu replays uploaded the stream", (unsigned long long)uploads);
    cr_assert_eq(sp_worker_graph_cache_info(w, &info), SP_OK);
    cr_assert_eq(info.recorded - info0.recorded, 1);
    cr_assert_eq(info.replayed - info0.replayed, 99);
    cr_assert_eq(info.count, 1);
}

Test(replay_tmr, two_replays_of_one_graph_in_flight_on_the_async_lane)
{
    const uint64_t n = 100;
    sp_call_config autoc = cfg_of(SP_CALL_REPLAY_AUTO);
    buffers *b = calloc(2, sizeof *b);
    uint64_t before[2][LEN];
    sp_run_stats st;
    fill(&b[0], 7, MODE_PIPE, n, 3);
    cr_assert_eq(sp_worker_run(w, 0, &b[0].args, &autoc, &st), SP_OK, "%s",
                 sp_worker_last_error(w));
    cr_assert_eq(st.replay, SP_RUN_RECORDED);
    cr_assert_eq(sp_worker_lane_depth(w), 2);
    uint64_t uploads = 0;
    for (int r = 0; r < 50; r++) {
        sp_run_handle h[2];
        for (int k = 0; k < 2; k++) {
            fill(&b[k], 100 + (uint64_t)(2 * r + k), MODE_PIPE, n, (uint64_t)(5 * r + k));
            memcpy(before[k], b[k].y, sizeof before[k]);
            cr_assert_eq(sp_worker_submit(w, 0, &b[k].args, &autoc, &h[k]), SP_OK, "%s",
                         sp_worker_last_error(w));
        }
        for (int k = 0; k < 2; k++) {
            cr_assert_eq(sp_worker_wait(w, &h[k], &st), SP_OK, "round %d run %d: %s", r, k,
                         sp_worker_last_error(w));
            cr_assert_eq(st.replay, SP_RUN_REPLAYED, "round %d run %d", r, k);
            uploads += st.patch_bytes != 0;
            assert_pipe(&b[k], before[k], n, (uint64_t)(5 * r + k), "async", r);
        }
    }
    /* Each bank gets the stream once (one of them holds it from the
     * recording): later replays upload nothing. */
    cr_assert_leq(uploads, 2, "%llu replays uploaded the stream", (unsigned long long)uploads);
    free(b);
}

Test(replay_tmr, a_changed_key_records_afresh)
{
    sp_call_config autoc = cfg_of(SP_CALL_REPLAY_AUTO);
    buffers *b = malloc(sizeof *b);
    sp_run_stats st;
    static const uint64_t ns[] = {100, 50, 100, 50};
    static const uint32_t want[] = {SP_RUN_RECORDED, SP_RUN_RECORDED, SP_RUN_REPLAYED,
                                    SP_RUN_REPLAYED};
    for (int r = 0; r < 4; r++) {
        fill(b, 11 + (uint64_t)r, MODE_PIPE, ns[r], 9);
        uint64_t before[LEN];
        memcpy(before, b->y, sizeof before);
        cr_assert_eq(sp_worker_run(w, 0, &b->args, &autoc, &st), SP_OK, "%s",
                     sp_worker_last_error(w));
        cr_assert_eq(st.replay, want[r], "run %d (n %llu): replay %u", r, (unsigned long long)ns[r],
                     st.replay);
        assert_pipe(b, before, ns[r], 9, "key", r);
    }
    /* Another window is another key too (it shapes the ring's waits). */
    sp_call_config wider = autoc;
    wider.task_window = 16;
    fill(b, 99, MODE_PIPE, 100, 9);
    cr_assert_eq(sp_worker_run(w, 0, &b->args, &wider, &st), SP_OK);
    cr_assert_eq(st.replay, SP_RUN_RECORDED);
    free(b);
}

/* MODE_CONTROL: ctl[0] blocks of y = x * 2 + block. */
static void assert_control(const buffers *b, const uint64_t *before, uint64_t k)
{
    for (uint64_t blk = 0; blk <= BLOCKS; blk++)
        for (int j = 0; j < L; j++) {
            uint64_t i = blk * L + (uint64_t)j;
            uint64_t want = blk < k ? b->x[i] * 2 + blk : before[i];
            cr_assert_eq(b->y[i], want, "ctl %llu: y[%llu]", (unsigned long long)k,
                         (unsigned long long)i);
        }
}

Test(replay_tmr, a_changed_control_value_records_afresh)
{
    sp_call_config autoc = cfg_of(SP_CALL_REPLAY_AUTO);
    buffers *b = malloc(sizeof *b);
    sp_run_stats st;
    sp_graph_cache_info i0, i1;
    cr_assert_eq(sp_worker_graph_cache_info(w, &i0), SP_OK);
    static const uint64_t ks[] = {5, 5, 7, 7, 5};
    static const uint32_t want[] = {SP_RUN_RECORDED, SP_RUN_REPLAYED, SP_RUN_RECORDED,
                                    SP_RUN_REPLAYED, SP_RUN_RECORDED};
    for (int r = 0; r < 5; r++) {
        fill(b, 40 + (uint64_t)r, MODE_CONTROL, 0, 0);
        b->ctl[0] = ks[r];
        uint64_t before[LEN];
        memcpy(before, b->y, sizeof before);
        cr_assert_eq(sp_worker_run(w, 0, &b->args, &autoc, &st), SP_OK, "%s",
                     sp_worker_last_error(w));
        cr_assert_eq(st.replay, want[r], "run %d (ctl %llu): replay %u", r,
                     (unsigned long long)ks[r], st.replay);
        cr_assert_eq(st.tasks, ks[r]);
        assert_control(b, before, ks[r]);
    }
    cr_assert_eq(sp_worker_graph_cache_info(w, &i1), SP_OK);
    cr_assert_eq(i1.rerecorded - i0.rerecorded, 2);
    free(b);
}

Test(replay_tmr, a_read_of_a_produced_value_is_never_kept)
{
    sp_call_config autoc = cfg_of(SP_CALL_REPLAY_AUTO);
    buffers *b = malloc(sizeof *b);
    sp_run_stats st;
    for (int r = 0; r < 3; r++) {
        uint64_t data = 10 + (uint64_t)r;
        fill(b, 60 + (uint64_t)r, MODE_READ_PRODUCED, 0, data);
        uint64_t before[LEN];
        memcpy(before, b->y, sizeof before);
        cr_assert_eq(sp_worker_run(w, 0, &b->args, &autoc, &st), SP_OK, "%s",
                     sp_worker_last_error(w));
        cr_assert_eq(st.replay, SP_RUN_FRESH, "run %d: replay %u", r, st.replay);
        uint64_t v = b->x[0] + data, k = v % 3 + 1;
        cr_assert_eq(st.tasks, 1 + k);
        for (uint64_t i = 0; i < LEN; i++)
            cr_assert_eq(b->y[i], i / L < k ? b->x[i] + v : before[i], "run %d: y[%llu]", r,
                         (unsigned long long)i);
    }
    sp_graph_cache_info info;
    cr_assert_eq(sp_worker_graph_cache_info(w, &info), SP_OK);
    cr_assert_eq(info.count, 0);
    free(b);
}

/* Control writes are not replayed (a replay runs no orchestration to make
 * them): an orchestration that writes is never kept. */
Test(replay_tmr, an_orchestration_that_writes_a_control_value_is_never_kept)
{
    sp_call_config autoc = cfg_of(SP_CALL_REPLAY_AUTO);
    buffers *b = malloc(sizeof *b);
    sp_run_stats st;
    for (int r = 0; r < 3; r++) {
        uint64_t before[LEN];
        fill(b, 140 + (uint64_t)r, MODE_WRITE, 0, 500 + (uint64_t)r);
        memcpy(before, b->y, sizeof before);
        cr_assert_eq(sp_worker_run(w, 0, &b->args, &autoc, &st), SP_OK, "%s",
                     sp_worker_last_error(w));
        cr_assert_eq(st.replay, SP_RUN_FRESH, "run %d: replay %u", r, st.replay);
        for (int i = 0; i < LEN; i++) {
            uint64_t want = i == 0 ? 500 + (uint64_t)r : i / L == 1 ? b->x[i] * 2 + 1 : before[i];
            cr_assert_eq(b->y[i], want, "run %d: y[%d]", r, i);
        }
    }
    free(b);
}

Test(replay_tmr, replay_only_with_nothing_recorded_is_refused_by_name)
{
    sp_call_config only = cfg_of(SP_CALL_REPLAY_ONLY);
    buffers *b = malloc(sizeof *b);
    sp_run_stats st;
    fill(b, 5, MODE_PIPE, 30, 1);
    uint64_t before[LEN];
    memcpy(before, b->y, sizeof before);
    int rc = sp_worker_run(w, 0, &b->args, &only, &st);
    cr_assert_eq(rc, SP_EREPLAY_MISS, "got %s", sp_status_name(rc));
    cr_assert(strstr(sp_worker_last_error(w), "callable 0") != NULL, "%s", sp_worker_last_error(w));
    cr_assert(strstr(sp_worker_last_error(w), "no graph recorded") != NULL, "%s",
              sp_worker_last_error(w));
    cr_assert_eq(memcmp(b->y, before, sizeof before), 0, "nothing ran");
    /* Usable: record, then replay-only replays. */
    sp_call_config autoc = cfg_of(SP_CALL_REPLAY_AUTO);
    cr_assert_eq(sp_worker_run(w, 0, &b->args, &autoc, &st), SP_OK, "%s", sp_worker_last_error(w));
    cr_assert_eq(st.replay, SP_RUN_RECORDED);
    fill(b, 6, MODE_PIPE, 30, 2);
    memcpy(before, b->y, sizeof before);
    cr_assert_eq(sp_worker_run(w, 0, &b->args, &only, &st), SP_OK, "%s", sp_worker_last_error(w));
    cr_assert_eq(st.replay, SP_RUN_REPLAYED);
    assert_pipe(b, before, 30, 2, "only", 0);
    /* Forget by arguments needs the run's config: its window and heap are
     * part of the key. Without it, nothing matches and the graph stays. */
    cr_assert_eq(sp_worker_forget(w, 0, &b->args, NULL), SP_OK);
    cr_assert_eq(sp_worker_run(w, 0, &b->args, &only, &st), SP_OK, "%s", sp_worker_last_error(w));
    cr_assert_eq(sp_worker_forget(w, 0, &b->args, &only), SP_OK);
    cr_assert_eq(sp_worker_run(w, 0, &b->args, &only, &st), SP_EREPLAY_MISS);
    cr_assert_eq(sp_worker_run(w, 0, &b->args, &autoc, &st), SP_OK, "%s", sp_worker_last_error(w));
    cr_assert_eq(sp_worker_forget(w, 0, NULL, NULL), SP_OK);
    cr_assert_eq(sp_worker_run(w, 0, &b->args, &only, &st), SP_EREPLAY_MISS);
    free(b);
}

Test(replay_tmr, a_kernel_crash_during_a_replay_is_named_and_the_next_replay_is_right)
{
    sp_call_config autoc = cfg_of(SP_CALL_REPLAY_AUTO);
    buffers *b = malloc(sizeof *b);
    sp_run_stats st;
    uint64_t before[LEN];
    fill(b, 70, MODE_PIPE, 100, 4);
    cr_assert_eq(sp_worker_run(w, 0, &b->args, &autoc, &st), SP_OK, "%s", sp_worker_last_error(w));
    cr_assert_eq(st.replay, SP_RUN_RECORDED);
    sp_graph_cache_info i0, i1;
    cr_assert_eq(sp_worker_graph_cache_info(w, &i0), SP_OK);
    fill(b, 71, MODE_PIPE, 100, 4);
    b->x[5 * L + 1] = CRASH; /* block 5's first reader crashes: task 1 + 2 * 5 + 1 = 12 */
    int rc = sp_worker_run(w, 0, &b->args, &autoc, &st);
    cr_assert_eq(rc, SP_EKERNEL_FAULT, "got %s: %s", sp_status_name(rc), sp_worker_last_error(w));
    cr_assert(strstr(sp_worker_last_error(w), "task 12") != NULL, "%s", sp_worker_last_error(w));
    fill(b, 72, MODE_PIPE, 100, 8);
    memcpy(before, b->y, sizeof before);
    cr_assert_eq(sp_worker_run(w, 0, &b->args, &autoc, &st), SP_OK, "%s", sp_worker_last_error(w));
    cr_assert_eq(st.replay, SP_RUN_REPLAYED);
    assert_pipe(b, before, 100, 8, "after the crash", 0);
    /* The crashed run was a replay of the kept graph: nothing recorded since. */
    cr_assert_eq(sp_worker_graph_cache_info(w, &i1), SP_OK);
    cr_assert_eq(i1.recorded, i0.recorded);
    cr_assert_eq(i1.replayed, i0.replayed + 1);
    free(b);
}

/* The checking mode (red zones around staged and heap buffers, verified at
 * each completion) is part of the key, and a replay in it fills and checks
 * the zones of its fresh carves as a submit does. */
Test(replay_tmr, a_replay_in_the_checking_mode_equals_a_fresh_run)
{
    sp_call_config autoc = cfg_of(SP_CALL_REPLAY_AUTO | SP_CALL_CHECK);
    buffers *b = malloc(sizeof *b);
    sp_run_stats st;
    for (int r = 0; r < 5; r++) {
        uint64_t before[LEN];
        fill(b, 90 + (uint64_t)r, MODE_PIPE, 100, (uint64_t)r);
        memcpy(before, b->y, sizeof before);
        cr_assert_eq(sp_worker_run(w, 0, &b->args, &autoc, &st), SP_OK, "%s",
                     sp_worker_last_error(w));
        cr_assert_eq(st.replay, r == 0 ? SP_RUN_RECORDED : SP_RUN_REPLAYED);
        assert_pipe(b, before, 100, (uint64_t)r, "checking", r);
    }
    free(b);
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

/* The sorted edges and the per-task record count of the last traced run. */
static uint64_t trace_of(sp_trace_edge *edges, uint64_t cap, uint32_t *tasks_seen, uint64_t ntasks)
{
    const sp_run_trace *t = sp_worker_last_trace(w);
    cr_assert_not_null(t);
    cr_assert_eq(t->edges_dropped, 0);
    cr_assert_eq(t->records_dropped, 0);
    cr_assert_leq(t->edge_count, cap);
    memcpy(edges, t->edges, t->edge_count * sizeof *edges);
    qsort(edges, t->edge_count, sizeof *edges, edge_cmp);
    memset(tasks_seen, 0, ntasks * sizeof *tasks_seen);
    for (uint64_t i = 0; i < t->record_count; i++)
        if (t->records[i].kind == SP_TRACE_SLICE && t->records[i].task < ntasks)
            tasks_seen[t->records[i].task]++;
    return t->edge_count;
}

Test(replay_tmr, a_traced_replay_has_the_records_and_edges_of_a_fresh_run)
{
    enum { N = 60, TASKS = 2 * N + N / 10 + 2, CAP = 4096 };
    buffers *b = malloc(sizeof *b);
    sp_run_stats st;
    sp_call_config fresh = cfg_of(0), autoc = cfg_of(SP_CALL_REPLAY_AUTO);
    fresh.trace_level = autoc.trace_level = 1;
    static sp_trace_edge e0[CAP], e1[CAP];
    static uint32_t s0[TASKS], s1[TASKS];
    fill(b, 80, MODE_PIPE, N, 1);
    cr_assert_eq(sp_worker_run(w, 0, &b->args, &fresh, &st), SP_OK, "%s", sp_worker_last_error(w));
    uint64_t n0 = trace_of(e0, CAP, s0, TASKS);
    cr_assert_gt(n0, 0);
    cr_assert_eq(sp_worker_run(w, 0, &b->args, &autoc, &st), SP_OK);
    cr_assert_eq(st.replay, SP_RUN_RECORDED);
    fill(b, 81, MODE_PIPE, N, 2);
    cr_assert_eq(sp_worker_run(w, 0, &b->args, &autoc, &st), SP_OK);
    cr_assert_eq(st.replay, SP_RUN_REPLAYED);
    uint64_t n1 = trace_of(e1, CAP, s1, TASKS);
    cr_assert_eq(n1, n0, "replayed %llu edges, fresh %llu", (unsigned long long)n1,
                 (unsigned long long)n0);
    for (uint64_t i = 0; i < n0; i++)
        cr_assert(e0[i].producer == e1[i].producer && e0[i].consumer == e1[i].consumer &&
                      e0[i].kind == e1[i].kind,
                  "edge %llu differs", (unsigned long long)i);
    cr_assert_eq(memcmp(s0, s1, sizeof s0), 0, "per-task records differ");
    for (int i = 0; i < TASKS; i++)
        cr_assert_eq(s1[i], 1, "task %d has %u records", i, s1[i]);
    /* Level 3: the replay driver's submits are drawn as a submit's. */
    autoc.trace_level = 3;
    fill(b, 82, MODE_PIPE, N, 3);
    cr_assert_eq(sp_worker_run(w, 0, &b->args, &autoc, &st), SP_OK);
    cr_assert_eq(st.replay, SP_RUN_REPLAYED);
    const sp_run_trace *t = sp_worker_last_trace(w);
    cr_assert_not_null(t);
    memset(s1, 0, sizeof s1);
    for (uint64_t i = 0; i < t->record_count; i++)
        if (t->records[i].kind == SP_TRACE_SUBMIT && t->records[i].task < TASKS)
            s1[t->records[i].task]++;
    for (int i = 0; i < TASKS; i++)
        cr_assert_eq(s1[i], 1, "task %d has %u submit records", i, s1[i]);
    free(b);
}

Test(replay_tmr, a_stream_that_does_not_fit_is_not_kept_and_the_run_goes_on)
{
    sp_call_config small = cfg_of(SP_CALL_REPLAY_AUTO);
    small.graph_bytes = 4096; /* ~10 of the 212 tasks */
    buffers *b = malloc(sizeof *b);
    sp_run_stats st;
    for (int r = 0; r < 2; r++) {
        uint64_t before[LEN];
        fill(b, 120 + (uint64_t)r, MODE_PIPE, 100, 3);
        memcpy(before, b->y, sizeof before);
        cr_assert_eq(sp_worker_run(w, 0, &b->args, &small, &st), SP_OK, "%s",
                     sp_worker_last_error(w));
        cr_assert_eq(st.replay, SP_RUN_FRESH, "run %d: replay %u", r, st.replay);
        assert_pipe(b, before, 100, 3, "too big", r);
    }
    sp_graph_cache_info info;
    cr_assert_eq(sp_worker_graph_cache_info(w, &info), SP_OK);
    cr_assert_eq(info.count, 0);
    free(b);
}

Test(replay_tmr, a_failed_orchestration_is_never_kept)
{
    sp_call_config autoc = cfg_of(SP_CALL_REPLAY_AUTO);
    buffers *b = malloc(sizeof *b);
    sp_run_stats st;
    fill(b, 130, 9 /* no such mode: the orchestration reports a fatal error */, 10, 0);
    for (int r = 0; r < 2; r++)
        cr_assert_eq(sp_worker_run(w, 0, &b->args, &autoc, &st), SP_EINVAL, "%s",
                     sp_worker_last_error(w));
    sp_graph_cache_info info;
    cr_assert_eq(sp_worker_graph_cache_info(w, &info), SP_OK);
    cr_assert_eq(info.count, 0);
    cr_assert_eq(info.recorded, 0);
    free(b);
}

Test(replay_tmr, the_cache_bound_evicts_and_a_rerun_records_again)
{
    /* This test's own worker: a cache of one graph. */
    sp_worker_close(w);
    sp_worker_options opt = {.settings = {.graph_cache_count = 1}};
    setup_with(&opt);
    sp_call_config autoc = cfg_of(SP_CALL_REPLAY_AUTO);
    buffers *b = malloc(sizeof *b);
    sp_run_stats st;
    static const uint64_t ns[] = {40, 40, 20, 40};
    static const uint32_t want[] = {SP_RUN_RECORDED, SP_RUN_REPLAYED, SP_RUN_RECORDED,
                                    SP_RUN_RECORDED};
    for (int r = 0; r < 4; r++) {
        uint64_t before[LEN];
        fill(b, 150 + (uint64_t)r, MODE_PIPE, ns[r], 6);
        memcpy(before, b->y, sizeof before);
        cr_assert_eq(sp_worker_run(w, 0, &b->args, &autoc, &st), SP_OK, "%s",
                     sp_worker_last_error(w));
        cr_assert_eq(st.replay, want[r], "run %d (n %llu): replay %u", r, (unsigned long long)ns[r],
                     st.replay);
        assert_pipe(b, before, ns[r], 6, "bound", r);
    }
    sp_graph_cache_info info;
    cr_assert_eq(sp_worker_graph_cache_info(w, &info), SP_OK);
    cr_assert_eq(info.count, 1);
    cr_assert_eq(info.max_count, 1);
    cr_assert_eq(info.evicted, 2);
    free(b);
}

Test(replay_tmr, an_orchestration_declared_never_kept_runs_fresh_and_refuses_replay_only)
{
    register_orch(1, "replay_tmr_never_config");
    buffers *b = malloc(sizeof *b);
    sp_run_stats st;
    sp_call_config autoc = cfg_of(SP_CALL_REPLAY_AUTO), only = cfg_of(SP_CALL_REPLAY_ONLY);
    for (int r = 0; r < 2; r++) {
        uint64_t before[LEN];
        fill(b, 160 + (uint64_t)r, MODE_PIPE, 30, 2);
        memcpy(before, b->y, sizeof before);
        cr_assert_eq(sp_worker_run(w, 1, &b->args, &autoc, &st), SP_OK, "%s",
                     sp_worker_last_error(w));
        cr_assert_eq(st.replay, SP_RUN_FRESH);
        assert_pipe(b, before, 30, 2, "never", r);
    }
    cr_assert_eq(sp_worker_run(w, 1, &b->args, &only, &st), SP_EREPLAY_MISS);
    cr_assert(strstr(sp_worker_last_error(w), "SP_ORCH_REPLAY_NEVER") != NULL, "%s",
              sp_worker_last_error(w));
    free(b);
}
