/* Replay across runs on host_build_graph (issue 16, DESIGN §12): a run
 * with SP_CALL_REPLAY_AUTO records its graph, a later run with the same
 * graph key replays it (no orchestration, only the patch uploaded), and the
 * replay's results equal a fresh build's bit for bit while the data, the
 * data scalar and the host buffers change, on both lanes. A key that
 * differs, or a control value the orchestration read that differs,
 * records again; ONLY misses by name and leaves the worker usable; the
 * cache's bounds evict; forget and unregister drop graphs; a failed run is
 * never kept; a kernel crash in a replay is named and the next replay is
 * right; a traced replay has the fresh run's records and edges.
 *
 * The orchestration: tests/kernels/replay_hbg_orch.c (per row a chain of
 * `stages` + 2 tasks through heap intermediates). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "register_spec.h"
#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/trace.h"
#include "simpler/worker.h"

#define REPLAY_FATAL 0xdeadull
#define REPLAY_CRASH 0xc0ffeeull
#define W 16

static sp_worker *w;

static int register_config(sp_worker *wk, uint32_t id, const char *config)
{
    const char *kernels = SP_TEST_KERNEL_DIR "/replay_hbg_kernels.so";
    sp_callable_kernel_spec k[2] = {
        {.func_id = 0, .core_type = SP_CORE_AIV, .path = kernels, .entry = "replay_add"},
        {.func_id = 1, .core_type = SP_CORE_AIV, .path = kernels, .entry = "replay_mac"},
    };
    sp_callable_spec spec = {.orch_path = SP_TEST_KERNEL_DIR "/replay_hbg_orch.so",
                             .orch_entry = "replay_hbg_orch",
                             .orch_config = config,
                             .kernels = k,
                             .kernel_count = 2};
    char err[512] = "";
    return sp_test_register_spec(wk, id, &spec, err, sizeof err);
}

static int register_replay(sp_worker *wk, uint32_t id)
{
    return register_config(wk, id, "replay_hbg_config");
}

static void open_with(uint32_t cache_count, uint64_t cache_bytes)
{
    sp_worker_options o = {.module_dir = SP_MODULE_DIR};
    o.settings.graph_cache_count = cache_count;
    o.settings.graph_cache_bytes = cache_bytes;
    char err[1024] = "";
    cr_assert_eq(sp_worker_open_runtime("hbg", NULL, &o, &w, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(register_replay(w, 0), SP_OK, "%s", sp_worker_last_error(w));
}

static void open_default(void)
{
    open_with(0, 0);
}

static void close_worker(void)
{
    sp_worker_close(w);
    w = NULL;
}

TestSuite(replay_hbg, .init = open_default, .fini = close_worker, .timeout = 60);
/* The cache's bounds: each test opens its worker with its own settings. */
TestSuite(replay_hbg_bounds, .fini = close_worker, .timeout = 60);

/* One run's host buffers (malloc'd afresh for each job: new host addresses). */
typedef struct job {
    int64_t rows;
    uint64_t *x, *y, *out;
    uint64_t ctl[4];
    sp_args args;
} job;

static void job_init(job *j, int64_t rows, uint64_t stages, uint64_t bias, unsigned seed)
{
    memset(j, 0, sizeof *j);
    j->rows = rows;
    size_t n = (size_t)rows * W;
    j->x = malloc(n * sizeof *j->x);
    j->y = malloc(n * sizeof *j->y);
    j->out = calloc(n, sizeof *j->out);
    cr_assert(j->x && j->y && j->out);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        j->x[i] = seed >> 8;
        seed = seed * 1103515245u + 12345u;
        j->y[i] = (seed >> 8) | 1;
    }
    int64_t shape[2] = {rows, W}, four = 4;
    sp_tensor_init(&j->args.tensors[0], (uint64_t)(uintptr_t)j->x, SP_DTYPE_U64, 2, shape);
    sp_tensor_init(&j->args.tensors[1], (uint64_t)(uintptr_t)j->y, SP_DTYPE_U64, 2, shape);
    sp_tensor_init(&j->args.tensors[2], (uint64_t)(uintptr_t)j->out, SP_DTYPE_U64, 2, shape);
    sp_tensor_init(&j->args.tensors[3], (uint64_t)(uintptr_t)j->ctl, SP_DTYPE_U64, 1, &four);
    j->args.dirs[0] = SP_IN;
    j->args.dirs[1] = SP_IN;
    j->args.dirs[2] = SP_OUT_EXISTING;
    j->args.dirs[3] = SP_IN;
    j->args.tensor_count = 4;
    j->args.scalars[0] = stages;
    j->args.scalars[1] = bias;
    j->args.scalar_count = 2;
}

static void job_free(job *j)
{
    free(j->x);
    free(j->y);
    free(j->out);
}

/* The result the orchestration's graph computes, independently. */
static void assert_result(const job *j)
{
    uint64_t stages = j->args.scalars[0], bias = j->args.scalars[1];
    for (int64_t r = 0; r < j->rows; r++)
        for (int c = 0; c < W; c++) {
            size_t i = (size_t)r * W + (size_t)c;
            uint64_t h = j->x[i] + bias;
            for (uint64_t s = 0; s < stages; s++)
                h = h * j->y[i] + (s + 1);
            h += (uint64_t)r + j->ctl[0];
            cr_assert_eq(j->out[i], h, "out[%lld][%d] = %llu, expected %llu", (long long)r, c,
                         (unsigned long long)j->out[i], (unsigned long long)h);
        }
}

/* NO_CHECK: the sanitizer phases run every test with SIMPLER_CHECK=1, and
 * checking-mode runs are never kept. */
static const sp_call_config auto_cfg = {.flags = SP_CALL_REPLAY_AUTO | SP_CALL_NO_CHECK};
static const sp_call_config only_cfg = {.flags = SP_CALL_REPLAY_ONLY | SP_CALL_NO_CHECK};

static uint32_t run_job(job *j, const sp_call_config *cfg)
{
    sp_run_stats st;
    int rc = sp_worker_run(w, 0, &j->args, cfg, &st);
    cr_assert_eq(rc, SP_OK, "%s: %s", sp_status_name(rc), sp_worker_last_error(w));
    return st.replay;
}

static sp_graph_cache_info info(void)
{
    sp_graph_cache_info i;
    cr_assert_eq(sp_worker_graph_cache_info(w, &i), SP_OK);
    return i;
}

Test(replay_hbg, replay_equals_a_fresh_build_bit_for_bit_over_100_runs)
{
    const int64_t rows = 8;
    for (int i = 0; i < 100; i++) {
        job fresh, rep;
        uint64_t bias = 1000u + (uint64_t)i * 7919u;
        job_init(&fresh, rows, 3, bias, (unsigned)i + 1);
        job_init(&rep, rows, 3, bias, (unsigned)i + 1);
        cr_assert_eq(run_job(&fresh, NULL), SP_RUN_FRESH);
        sp_run_stats st;
        int rc = sp_worker_run(w, 0, &rep.args, &auto_cfg, &st);
        cr_assert_eq(rc, SP_OK, "%s: %s", sp_status_name(rc), sp_worker_last_error(w));
        cr_assert_eq(st.replay, i == 0 ? SP_RUN_RECORDED : SP_RUN_REPLAYED, "run %d: %u", i,
                     st.replay);
        cr_assert_eq(st.tasks, (uint64_t)rows * 5);
        cr_assert_eq(memcmp(fresh.out, rep.out, (size_t)rows * W * sizeof *rep.out), 0,
                     "run %d: the replay differs from the fresh build", i);
        /* The same data in other host buffers, replayed again: the bank
         * holds the record now, so only the patch goes up. */
        job again;
        job_init(&again, rows, 3, bias, (unsigned)i + 1);
        rc = sp_worker_run(w, 0, &again.args, &auto_cfg, &st);
        cr_assert_eq(rc, SP_OK, "%s: %s", sp_status_name(rc), sp_worker_last_error(w));
        cr_assert_eq(st.replay, SP_RUN_REPLAYED);
        cr_assert_gt(st.patch_bytes, 0);
        cr_assert_lt(st.patch_bytes, st.image_bytes, "run %d uploaded the whole image", i);
        cr_assert_eq(memcmp(fresh.out, again.out, (size_t)rows * W * sizeof *again.out), 0,
                     "run %d: the second replay differs from the fresh build", i);
        job_free(&again);
        assert_result(&rep);
        job_free(&fresh);
        job_free(&rep);
        if (i % 10 == 5) {
            /* A bigger run moves the slot's staging (new argument addresses)
             * and the bank's heap (grown each time) and image: the next
             * replay patches them. */
            job big;
            job_init(&big, 64, 6, 5, 99u);
            sp_call_config big_heap = {.heap_bytes = (65ull + (uint64_t)i / 10) << 20,
                                       .flags = SP_CALL_NO_CHECK};
            cr_assert_eq(run_job(&big, &big_heap), SP_RUN_FRESH);
            assert_result(&big);
            job_free(&big);
        }
    }
    sp_graph_cache_info ci = info();
    cr_assert_eq(ci.count, 1);
    cr_assert_eq(ci.recorded, 1);
    cr_assert_eq(ci.replayed, 199);
}

Test(replay_hbg, two_replays_in_flight_on_the_async_lane_each_get_their_patch)
{
    cr_assert_eq(sp_worker_lane_depth(w), 2);
    job first;
    job_init(&first, 6, 2, 3, 7u);
    cr_assert_eq(run_job(&first, &auto_cfg), SP_RUN_RECORDED);
    assert_result(&first);
    job_free(&first);
    for (int i = 0; i < 50; i++) {
        job a, b;
        job_init(&a, 6, 2, 11u + (uint64_t)i, 100u + (unsigned)i);
        job_init(&b, 6, 2, 5000u + (uint64_t)i, 900u + (unsigned)i);
        sp_run_handle ha, hb;
        cr_assert_eq(sp_worker_submit(w, 0, &a.args, &auto_cfg, &ha), SP_OK, "%s",
                     sp_worker_last_error(w));
        cr_assert_eq(sp_worker_submit(w, 0, &b.args, &auto_cfg, &hb), SP_OK, "%s",
                     sp_worker_last_error(w));
        cr_assert_neq(ha.slot, hb.slot);
        sp_run_stats sa, sb;
        int rc = sp_worker_wait(w, &ha, &sa);
        cr_assert_eq(rc, SP_OK, "%s: %s", sp_status_name(rc), sp_worker_last_error(w));
        rc = sp_worker_wait(w, &hb, &sb);
        cr_assert_eq(rc, SP_OK, "%s: %s", sp_status_name(rc), sp_worker_last_error(w));
        cr_assert_eq(sa.replay, SP_RUN_REPLAYED);
        cr_assert_eq(sb.replay, SP_RUN_REPLAYED);
        assert_result(&a);
        assert_result(&b);
        job_free(&a);
        job_free(&b);
    }
    cr_assert_eq(info().replayed, 100);
}

Test(replay_hbg, another_shape_or_shaping_scalar_records_again)
{
    job a, b, c;
    job_init(&a, 4, 2, 1, 1u);
    job_init(&b, 5, 2, 1, 2u); /* another shape */
    job_init(&c, 4, 3, 1, 3u); /* another shaping scalar */
    cr_assert_eq(run_job(&a, &auto_cfg), SP_RUN_RECORDED);
    cr_assert_eq(run_job(&b, &auto_cfg), SP_RUN_RECORDED);
    cr_assert_eq(run_job(&c, &auto_cfg), SP_RUN_RECORDED);
    a.args.scalars[1] = 77; /* data: the same key */
    cr_assert_eq(run_job(&a, &auto_cfg), SP_RUN_REPLAYED);
    cr_assert_eq(run_job(&b, &auto_cfg), SP_RUN_REPLAYED);
    cr_assert_eq(run_job(&c, &auto_cfg), SP_RUN_REPLAYED);
    assert_result(&a);
    assert_result(&b);
    assert_result(&c);
    cr_assert_eq(info().count, 3);
    job_free(&a);
    job_free(&b);
    job_free(&c);
}

Test(replay_hbg, a_changed_control_value_records_again_and_stays_right)
{
    job a;
    job_init(&a, 4, 2, 9, 1u);
    cr_assert_eq(run_job(&a, &auto_cfg), SP_RUN_RECORDED);
    cr_assert_eq(run_job(&a, &auto_cfg), SP_RUN_REPLAYED);
    a.ctl[0] = 1000; /* read by the orchestration: the graph's scalars differ */
    memset(a.out, 0, 4 * W * sizeof *a.out);
    cr_assert_eq(run_job(&a, &auto_cfg), SP_RUN_RECORDED);
    assert_result(&a);
    cr_assert_eq(info().rerecorded, 1);
    cr_assert_eq(run_job(&a, &auto_cfg), SP_RUN_REPLAYED);
    assert_result(&a);
    a.ctl[0] = 0;
    int rc = sp_worker_run(w, 0, &a.args, &only_cfg, NULL);
    cr_assert_eq(rc, SP_EREPLAY_MISS, "%s", sp_status_name(rc));
    cr_assert(strstr(sp_worker_last_error(w), "control-tensor value") != NULL, "%s",
              sp_worker_last_error(w));
    job_free(&a);
}

Test(replay_hbg, replay_only_with_nothing_recorded_misses_by_name_and_the_worker_runs_on)
{
    job a;
    job_init(&a, 4, 2, 9, 1u);
    a.out[0] = 12345;
    int rc = sp_worker_run(w, 0, &a.args, &only_cfg, NULL);
    cr_assert_eq(rc, SP_EREPLAY_MISS, "%s", sp_status_name(rc));
    const char *msg = sp_worker_last_error(w);
    cr_assert(strstr(msg, "replay_hbg_orch") != NULL, "%s", msg);
    cr_assert(strstr(msg, "no graph is recorded") != NULL, "%s", msg);
    cr_assert_eq(a.out[0], 12345, "nothing ran");
    /* Checking mode is never kept: named as such. */
    sp_call_config chk = {.flags = SP_CALL_REPLAY_ONLY | SP_CALL_CHECK};
    rc = sp_worker_run(w, 0, &a.args, &chk, NULL);
    cr_assert_eq(rc, SP_EREPLAY_MISS);
    cr_assert(strstr(sp_worker_last_error(w), "checking-mode") != NULL, "%s",
              sp_worker_last_error(w));
    chk.flags = SP_CALL_REPLAY_AUTO | SP_CALL_CHECK;
    cr_assert_eq(run_job(&a, &chk), SP_RUN_FRESH);
    assert_result(&a);
    cr_assert_eq(run_job(&a, &auto_cfg), SP_RUN_RECORDED);
    cr_assert_eq(run_job(&a, &only_cfg), SP_RUN_REPLAYED);
    assert_result(&a);
    job_free(&a);
}

Test(replay_hbg, an_orchestration_that_writes_a_control_tensor_is_never_kept)
{
    job a;
    job_init(&a, 4, 2, 9, 1u);
    a.ctl[2] = 1;
    cr_assert_eq(run_job(&a, &auto_cfg), SP_RUN_FRESH);
    assert_result(&a);
    cr_assert_eq(info().count, 0);
    int rc = sp_worker_run(w, 0, &a.args, &only_cfg, NULL);
    cr_assert_eq(rc, SP_EREPLAY_MISS);
    job_free(&a);
}

Test(replay_hbg, a_failed_run_is_never_kept)
{
    job a;
    job_init(&a, 4, 2, 9, 1u);
    a.ctl[1] = REPLAY_FATAL;
    int rc = sp_worker_run(w, 0, &a.args, &auto_cfg, NULL);
    cr_assert_eq(rc, SP_EORCH_FATAL, "%s", sp_status_name(rc));
    sp_graph_cache_info ci = info();
    cr_assert_eq(ci.count, 0);
    cr_assert_eq(ci.recorded, 0);
    /* A kernel crash while recording: not kept either. */
    a.ctl[1] = 0;
    a.args.scalars[1] = REPLAY_CRASH;
    rc = sp_worker_run(w, 0, &a.args, &auto_cfg, NULL);
    cr_assert_eq(rc, SP_EKERNEL_FAULT, "%s", sp_status_name(rc));
    cr_assert_eq(info().count, 0);
    a.args.scalars[1] = 4;
    cr_assert_eq(run_job(&a, &auto_cfg), SP_RUN_RECORDED);
    assert_result(&a);
    job_free(&a);
}

Test(replay_hbg, a_kernel_crash_in_a_replay_is_named_and_the_next_replay_is_right)
{
    job a;
    job_init(&a, 4, 2, 9, 1u);
    cr_assert_eq(run_job(&a, &auto_cfg), SP_RUN_RECORDED);
    a.args.scalars[1] = REPLAY_CRASH; /* data: still a replay, whose first task faults */
    sp_run_stats st;
    int rc = sp_worker_run(w, 0, &a.args, &auto_cfg, &st);
    cr_assert_eq(rc, SP_EKERNEL_FAULT, "%s", sp_status_name(rc));
    cr_assert(strstr(sp_worker_last_error(w), "replay_add") != NULL, "%s", sp_worker_last_error(w));
    for (int i = 0; i < 3; i++) {
        a.args.scalars[1] = 31 + (uint64_t)i;
        memset(a.out, 0, 4 * W * sizeof *a.out);
        cr_assert_eq(run_job(&a, &auto_cfg), SP_RUN_REPLAYED);
        assert_result(&a);
    }
    job_free(&a);
}

Test(replay_hbg, forget_drops_one_graph_or_all_of_a_callable_and_unregister_drops_them)
{
    job a, b;
    job_init(&a, 4, 2, 9, 1u);
    job_init(&b, 4, 3, 9, 1u);
    cr_assert_eq(run_job(&a, &auto_cfg), SP_RUN_RECORDED);
    cr_assert_eq(run_job(&b, &auto_cfg), SP_RUN_RECORDED);
    cr_assert_eq(info().count, 2);
    cr_assert_eq(sp_worker_forget(w, 0, &a.args, &auto_cfg), SP_OK, "%s", sp_worker_last_error(w));
    cr_assert_eq(info().count, 1);
    cr_assert_eq(run_job(&b, &auto_cfg), SP_RUN_REPLAYED);
    cr_assert_eq(run_job(&a, &auto_cfg), SP_RUN_RECORDED);
    cr_assert_eq(sp_worker_forget(w, 0, NULL, NULL), SP_OK);
    cr_assert_eq(info().count, 0);
    cr_assert_eq(run_job(&a, &auto_cfg), SP_RUN_RECORDED);
    cr_assert_eq(run_job(&b, &auto_cfg), SP_RUN_RECORDED);
    cr_assert_eq(sp_worker_unregister_callable(w, 0), SP_OK);
    cr_assert_eq(info().count, 0);
    cr_assert_eq(register_replay(w, 0), SP_OK);
    cr_assert_eq(run_job(&a, &auto_cfg), SP_RUN_RECORDED);
    assert_result(&a);
    job_free(&a);
    job_free(&b);
}

Test(replay_hbg_bounds, the_count_bound_evicts_least_recently_used)
{
    open_with(2, 0);
    job j[3];
    for (int i = 0; i < 3; i++) {
        job_init(&j[i], 4, (uint64_t)i + 1, 9, 1u);
        cr_assert_eq(run_job(&j[i], &auto_cfg), SP_RUN_RECORDED);
    }
    sp_graph_cache_info ci = info();
    cr_assert_eq(ci.count, 2);
    cr_assert_eq(ci.evicted, 1);
    cr_assert_eq(run_job(&j[2], &auto_cfg), SP_RUN_REPLAYED);
    cr_assert_eq(run_job(&j[1], &auto_cfg), SP_RUN_REPLAYED);
    cr_assert_eq(run_job(&j[0], &auto_cfg), SP_RUN_RECORDED, "the evicted graph records again");
    /* j[2] was the least recently used: now evicted. */
    cr_assert_eq(run_job(&j[1], &auto_cfg), SP_RUN_REPLAYED);
    cr_assert_eq(run_job(&j[2], &auto_cfg), SP_RUN_RECORDED);
    for (int i = 0; i < 3; i++) {
        assert_result(&j[i]);
        job_free(&j[i]);
    }
}

Test(replay_hbg_bounds, a_graph_past_the_byte_bound_is_not_kept_and_the_run_succeeds)
{
    open_with(0, 4096); /* smaller than any image */
    job a;
    job_init(&a, 4, 2, 9, 1u);
    cr_assert_eq(run_job(&a, &auto_cfg), SP_RUN_FRESH);
    assert_result(&a);
    sp_graph_cache_info ci = info();
    cr_assert_eq(ci.count, 0);
    cr_assert_eq(ci.max_bytes, 4096);
    cr_assert_eq(sp_worker_run(w, 0, &a.args, &only_cfg, NULL), SP_EREPLAY_MISS);
    job_free(&a);
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

/* A trace's kernel records as (task, func_id, block) keys, sorted. */
static uint64_t *kernel_keys(const sp_run_trace *t, uint64_t *n)
{
    uint64_t *k = malloc((t->record_count + 1) * sizeof *k);
    *n = 0;
    for (uint64_t i = 0; i < t->record_count; i++)
        if (t->records[i].kind == SP_TRACE_SLICE)
            k[(*n)++] = (t->records[i].task << 24) | ((uint64_t)(t->records[i].func_id + 1) << 16) |
                        t->records[i].block;
    for (uint64_t i = 1; i < *n; i++)
        for (uint64_t j = i; j > 0 && k[j - 1] > k[j]; j--) {
            uint64_t s = k[j];
            k[j] = k[j - 1];
            k[j - 1] = s;
        }
    return k;
}

Test(replay_hbg, a_traced_replay_has_the_fresh_runs_records_and_edges)
{
    job a;
    job_init(&a, 4, 2, 9, 1u);
    cr_assert_eq(run_job(&a, &auto_cfg), SP_RUN_RECORDED); /* untraced */
    sp_call_config fresh = {.trace_level = 1, .flags = SP_CALL_NO_CHECK},
                   rep = {.trace_level = 1, .flags = SP_CALL_REPLAY_ONLY | SP_CALL_NO_CHECK};
    cr_assert_eq(run_job(&a, &fresh), SP_RUN_FRESH);
    const sp_run_trace *t = sp_worker_last_trace(w);
    cr_assert_not_null(t);
    uint64_t fe = t->edge_count, fk_n;
    sp_trace_edge *f_edges = malloc((fe + 1) * sizeof *f_edges);
    memcpy(f_edges, t->edges, fe * sizeof *f_edges);
    uint64_t *fk = kernel_keys(t, &fk_n);
    cr_assert_eq(run_job(&a, &rep), SP_RUN_REPLAYED);
    assert_result(&a);
    t = sp_worker_last_trace(w);
    cr_assert_not_null(t);
    cr_assert_eq(t->edge_count, fe);
    cr_assert_gt(fe, 0);
    sp_trace_edge *r_edges = malloc((fe + 1) * sizeof *r_edges);
    memcpy(r_edges, t->edges, fe * sizeof *r_edges);
    qsort(f_edges, fe, sizeof *f_edges, edge_cmp);
    qsort(r_edges, fe, sizeof *r_edges, edge_cmp);
    for (uint64_t i = 0; i < fe; i++)
        cr_assert_eq(edge_cmp(&f_edges[i], &r_edges[i]), 0, "edge %llu differs",
                     (unsigned long long)i);
    uint64_t rk_n;
    uint64_t *rk = kernel_keys(t, &rk_n);
    cr_assert_eq(rk_n, fk_n);
    cr_assert_eq(rk_n, 4 * 4);
    cr_assert_eq(memcmp(rk, fk, rk_n * sizeof *rk), 0, "the kernel records differ");
    free(f_edges);
    free(r_edges);
    free(fk);
    free(rk);
    job_free(&a);
}

Test(replay_hbg, a_replay_patches_buffers_that_moved_on_a_bank_that_holds_its_image)
{
    job a;
    job_init(&a, 4, 2, 9, 1u);
    cr_assert_eq(run_job(&a, &auto_cfg), SP_RUN_RECORDED);
    sp_run_stats st;
    cr_assert_eq(sp_worker_run(w, 0, &a.args, &auto_cfg, &st), SP_OK);
    const uint64_t header_only = st.patch_bytes;
    /* A bigger run that fails in its orchestration: it grew the slot's
     * staging (new argument addresses) and the bank's heap, and never
     * reached the image, so the bank still holds the record's. */
    job big;
    job_init(&big, 256, 2, 9, 5u);
    big.ctl[1] = REPLAY_FATAL;
    sp_call_config big_heap = {.heap_bytes = 80ull << 20, .flags = SP_CALL_NO_CHECK};
    cr_assert_eq(sp_worker_run(w, 0, &big.args, &big_heap, NULL), SP_EORCH_FATAL);
    a.args.scalars[1] = 12;
    memset(a.out, 0, 4 * W * sizeof *a.out);
    cr_assert_eq(sp_worker_run(w, 0, &a.args, &auto_cfg, &st), SP_OK, "%s",
                 sp_worker_last_error(w));
    cr_assert_eq(st.replay, SP_RUN_REPLAYED);
    cr_assert_gt(st.patch_bytes, header_only, "the moved buffers were not patched");
    cr_assert_lt(st.patch_bytes, st.image_bytes, "the whole image went up");
    assert_result(&a);
    job_free(&a);
    job_free(&big);
}

Test(replay_hbg, an_orchestration_configured_never_to_be_kept_runs_fresh)
{
    cr_assert_eq(register_config(w, 1, "replay_hbg_never_config"), SP_OK, "%s",
                 sp_worker_last_error(w));
    job a;
    job_init(&a, 4, 2, 9, 1u);
    sp_run_stats st;
    cr_assert_eq(sp_worker_run(w, 1, &a.args, &auto_cfg, &st), SP_OK, "%s",
                 sp_worker_last_error(w));
    cr_assert_eq(st.replay, SP_RUN_FRESH);
    assert_result(&a);
    cr_assert_eq(info().count, 0);
    int rc = sp_worker_run(w, 1, &a.args, &only_cfg, NULL);
    cr_assert_eq(rc, SP_EREPLAY_MISS);
    cr_assert(strstr(sp_worker_last_error(w), "SP_ORCH_REPLAY_NEVER") != NULL, "%s",
              sp_worker_last_error(w));
    job_free(&a);
}

Test(replay_hbg_bounds, the_byte_bound_evicts_least_recently_used)
{
    /* The bytes two graphs hold, measured on a worker with room for both. */
    open_with(0, 0);
    job j[2];
    for (int i = 0; i < 2; i++)
        job_init(&j[i], 4, (uint64_t)i + 1, 9, 1u);
    cr_assert_eq(run_job(&j[0], &auto_cfg), SP_RUN_RECORDED);
    const uint64_t b0 = info().bytes;
    cr_assert_eq(run_job(&j[1], &auto_cfg), SP_RUN_RECORDED);
    const uint64_t both = info().bytes;
    cr_assert_gt(both, b0);
    close_worker();
    /* One byte short of both: the second graph evicts the first. */
    open_with(0, both - 1);
    cr_assert_eq(run_job(&j[0], &auto_cfg), SP_RUN_RECORDED);
    cr_assert_eq(run_job(&j[1], &auto_cfg), SP_RUN_RECORDED);
    sp_graph_cache_info ci = info();
    cr_assert_eq(ci.count, 1);
    cr_assert_eq(ci.evicted, 1);
    cr_assert_leq(ci.bytes, both - 1);
    cr_assert_eq(run_job(&j[1], &auto_cfg), SP_RUN_REPLAYED);
    cr_assert_eq(run_job(&j[0], &auto_cfg), SP_RUN_RECORDED, "the evicted graph records again");
    cr_assert_eq(info().evicted, 2);
    for (int i = 0; i < 2; i++) {
        assert_result(&j[i]);
        job_free(&j[i]);
    }
}
