/* Chained dispatch (issue 18, item 2): a consumer whose only unfinished
 * producer is the last task queued on a core is queued right behind it
 * there (runtime/device/sched_pass.h, follow), and its release bookkeeping
 * is done when the scheduler reaps it. Random graphs of AIC, AIV, SPMD,
 * MIX, dummy and predicated tasks over a few cells (chains, diamonds,
 * joins) must give exactly what running the program in order gives, on
 * both runtimes, with core queues 1..8 deep, 1..3 clusters and 1..2
 * scheduler threads, fresh and replayed; a chain must actually be chained
 * (sp_run_stats.chained), and never across core kinds or with a one-deep
 * queue. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"

#include "chain_callable.h"
#include "chain_graph.h"

#define Y_LEN (CHAIN_MAX_CELLS * CHAIN_CELL)

/* Sanitizer builds run fewer graphs: each costs them far more. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define GRAPHS 2
#else
#define GRAPHS 12
#endif

static uint64_t y[Y_LEN], ref[Y_LEN];

static sp_worker *open_rt(const char *rt, uint32_t depth, uint32_t clusters)
{
    char err[1024] = "", path[512];
    snprintf(path, sizeof path, SP_MODULE_DIR "/libsimpler_%s_sim.so", rt);
    sp_worker_options opt = {.prewarm = {.clusters = clusters, .sched_threads = 2}};
    opt.settings.sim.core_queue = depth;
    sp_worker *w = NULL;
    cr_assert_eq(sp_worker_open(path, &opt, &w, err, sizeof err), SP_OK, "%s: %s", rt, err);
    cr_assert_eq(chain_register(w, 0, err, sizeof err), SP_OK, "%s", err);
    return w;
}

/* The program run in order, on ref. */
static void reference(uint32_t mode, uint64_t n, uint64_t seed)
{
    chain_gen g;
    chain_begin(&g, mode, seed);
    for (uint64_t i = 0; i < n; i++) {
        chain_task t = chain_task_at(&g, i);
        if (t.kind == CHAIN_DUMMY)
            continue;
        if (t.pred && !((int64_t)ref[t.pred_cell * CHAIN_CELL] < 0))
            continue;
        uint64_t *out = &ref[t.out * CHAIN_CELL];
        for (uint32_t e = 0; e < CHAIN_CELL; e++) {
            uint64_t v[2];
            for (uint32_t k = 0; k < t.nin; k++)
                v[k] = ref[t.in[k] * CHAIN_CELL + e];
            out[e] = chain_update(out[e], v, t.nin, i, e);
        }
    }
}

/* Run graph (mode, n, seed) and compare y with the reference; returns the
 * run's count of chained tasks (its whole stats in *out, if asked). */
static uint64_t run_graph_stats(sp_worker *w, const char *what, uint32_t mode, uint64_t n,
                                uint64_t seed, const sp_call_config *cfg, sp_run_stats *out)
{
    uint64_t s = seed + 77;
    for (int i = 0; i < Y_LEN; i++)
        y[i] = ref[i] = chain_next(&s);
    sp_args args;
    memset(&args, 0, sizeof args);
    int64_t len = Y_LEN;
    sp_tensor_init(&args.tensors[0], (uint64_t)(uintptr_t)y, SP_DTYPE_U64, 1, &len);
    args.dirs[0] = SP_INOUT;
    args.tensor_count = 1;
    args.scalars[0] = mode;
    args.scalars[1] = n;
    args.scalars[2] = seed;
    args.scalar_count = 3;
    sp_run_stats st;
    int rc = sp_worker_run(w, 0, &args, cfg, &st);
    cr_assert_eq(rc, SP_OK, "%s, mode %u seed %llu: %s: %s", what, mode, (unsigned long long)seed,
                 sp_status_name(rc), sp_worker_last_error(w));
    cr_assert_eq(st.tasks, n, "%s", what);
    reference(mode, n, seed);
    for (int i = 0; i < Y_LEN; i++)
        cr_assert_eq(y[i], ref[i], "%s, mode %u seed %llu: y[%d] (cell %d) = %llx, in order %llx",
                     what, mode, (unsigned long long)seed, i, i / CHAIN_CELL,
                     (unsigned long long)y[i], (unsigned long long)ref[i]);
    if (out)
        *out = st;
    return st.chained;
}

static uint64_t run_graph(sp_worker *w, const char *what, uint32_t mode, uint64_t n, uint64_t seed,
                          const sp_call_config *cfg)
{
    return run_graph_stats(w, what, mode, n, seed, cfg, NULL);
}

TestSuite(chained, .timeout = 600);

Test(chained, random_graphs_match_the_program_run_in_order)
{
    static const char *rts[] = {"hbg", "tmr"};
    uint64_t seed = 1;
    for (int r = 0; r < 2; r++) {
        uint64_t chained = 0;
        /* 1..8, and the deep queues short payloads get (64: the default). */
        static const uint32_t depths[] = {1, 2, 3, 4, 5, 6, 7, 8, 16, 64};
        for (size_t d = 0; d < sizeof depths / sizeof depths[0]; d++) {
            uint32_t depth = depths[d], clusters = 1 + depth % 3;
            sp_worker *w = open_rt(rts[r], depth, clusters);
            char what[128];
            for (int k = 0; k < GRAPHS; k++, seed++) {
                sp_call_config cfg = {.sched_threads = 1 + (uint32_t)(k % 2),
                                      .task_window = k % 3 ? 8u : 64u};
                snprintf(what, sizeof what, "%s, queue %u, %u clusters, %u schedulers", rts[r],
                         depth, clusters, cfg.sched_threads);
                uint64_t n = 50 + seed * 37 % 400;
                chained += run_graph(w, what, CHAIN_MODE_RANDOM, n, seed, &cfg);
                if (k % 4 == 0) { /* again, replayed: the counters come back pristine */
                    /* The checking mode (SIMPLER_CHECK=1) never replays. */
                    cfg.flags |= SP_CALL_REPLAY_AUTO | SP_CALL_NO_CHECK;
                    sp_run_stats st;
                    run_graph(w, what, CHAIN_MODE_RANDOM, n, seed, &cfg);
                    run_graph_stats(w, what, CHAIN_MODE_RANDOM, n, seed, &cfg, &st);
                    cr_assert_eq(st.replay, SP_RUN_REPLAYED, "%s: not replayed", what);
                }
            }
            /* Checking off: the checking mode chains nothing (below). */
            sp_call_config cfg = {.sched_threads = 1 + depth % 2, .flags = SP_CALL_NO_CHECK};
            snprintf(what, sizeof what, "%s, queue %u, %u clusters: a chain", rts[r], depth,
                     clusters);
            uint64_t c = run_graph(w, what, CHAIN_MODE_CHAIN, 300, seed, &cfg);
            if (depth == 1)
                cr_assert_eq(c, 0, "%s: nothing fits behind a task in a one-deep queue", what);
            chained += c;
            sp_worker_close(w);
        }
        cr_assert_gt(chained, 0, "%s: no task was ever chained", rts[r]);
    }
}

/* A chain of AIV tasks runs mostly chained; a chain that alternates AIC
 * and AIV never is (a consumer waits in a queue of its own core kind). */
Test(chained, a_chain_follows_its_producer_on_the_same_kind_of_core)
{
    static const char *rts[] = {"hbg", "tmr"};
    for (int r = 0; r < 2; r++) {
        sp_worker *w = open_rt(rts[r], 4, 1);
        sp_call_config cfg = {.sched_threads = 1, .flags = SP_CALL_NO_CHECK};
        uint64_t n = 2000;
        uint64_t c = run_graph(w, rts[r], CHAIN_MODE_CHAIN, n, 5, &cfg);
        cr_assert_gt(c, 0, "%s: a chain of %llu AIV tasks, none chained", rts[r],
                     (unsigned long long)n);
        cr_assert_lt(c, n, "%s", rts[r]);
        c = run_graph(w, rts[r], CHAIN_MODE_PINGPONG, n, 5, &cfg);
        cr_assert_eq(c, 0, "%s: %llu tasks chained behind a producer of the other core kind",
                     rts[r], (unsigned long long)c);
        sp_worker_close(w);
    }
}

/* The checking mode verifies a task's red zones when the scheduler reaps
 * it; a consumer queued behind it would run before that, and an overrun of
 * its own would be blamed on the producer (scene/test_overrun names the
 * task that did it). So with checking on nothing is chained, and the
 * results are still right. */
Test(chained, the_checking_mode_chains_nothing)
{
    static const char *rts[] = {"hbg", "tmr"};
    for (int r = 0; r < 2; r++) {
        sp_worker *w = open_rt(rts[r], 4, 1);
        sp_call_config cfg = {.sched_threads = 1, .flags = SP_CALL_CHECK};
        uint64_t c = run_graph(w, rts[r], CHAIN_MODE_CHAIN, 2000, 5, &cfg);
        cr_assert_eq(c, 0, "%s: %llu tasks chained in the checking mode", rts[r],
                     (unsigned long long)c);
        sp_worker_close(w);
    }
}
