/* How deep the scheduler fills a core's queue (rt_sched_cap): the chip's
 * whole depth while the core's payloads are short or not measured yet; for
 * payloads longer than the bound (RT_SCHED_QUEUE_NS of expected run time
 * queued behind the running one), one running and one queued, so a long
 * kernel strands at most one ready block while another core idles. Chained
 * dispatch (`follow`) obeys the same bound. The estimate is driven by the
 * test's clock (rt_sched.clock_ns) over a fake chip: a dispatch stays in
 * flight until the test finishes it. A scheduler that reaps late (off its
 * CPU) finds a core that ran dry: that sample may only lower the estimate,
 * and how late it came deepens the queues of long tasks until the
 * scheduler is prompt again. */
#include <criterion/criterion.h>
#include <string.h>

#include "runtime/device/sched_pass.h"
#include "simpler/status.h"

/* ---- a fake chip: one a2a3 cluster (AIC, AIV, AIV) ---------------------- */

#include "fake_chip_counting.h"

/* ---- a runtime whose ready queues the test fills ------------------------ */

typedef struct fake_rt {
    uint32_t ready[SP_QUEUES]; /* single-block tasks ready per queue */
    uint32_t followers;        /* consumers `follow` may still hand out */
    uint64_t popped;           /* tasks handed out: task n is 1000 + n */
    uint64_t done;             /* tasks finished */
    bool one_core;             /* only one core works: finishes come in pop order */
} fake_rt;

static bool hook_pop(void *rt, int q, uint64_t *task, uint32_t *block)
{
    fake_rt *r = rt;
    if (!r->ready[q])
        return false;
    r->ready[q]--;
    *task = 1000 + r->popped++;
    *block = 0;
    return true;
}
static bool hook_payload(void *rt, uint64_t task, uint32_t block, int lane, sp_chip_payload *p)
{
    (void)rt, (void)lane;
    *p = (sp_chip_payload){.task_id = task, .block_idx = block, .block_num = 1};
    return true;
}
static void hook_block_done(void *rt, uint64_t task)
{
    fake_rt *r = rt;
    if (r->one_core)
        cr_assert_eq(task, 1000 + r->done, "finished out of order");
    r->done++;
}
/* Every tail has a consumer that may follow it while `followers` lasts. */
static int hook_follow(void *rt, uint64_t task, int q, int lane, uint32_t *cursor, uint64_t *next)
{
    fake_rt *r = rt;
    (void)task, (void)q, (void)lane, (void)cursor;
    if (!r->followers)
        return RT_FOLLOW_NEVER;
    r->followers--;
    *next = 100;
    return RT_FOLLOW_FOUND;
}

static const rt_sched_hooks hooks = {
    .pop = hook_pop,
    .payload = hook_payload,
    .block_done = hook_block_done,
    .describe = hook_describe,
    .fault = hook_fault,
    .failed = hook_failed,
    .follow = hook_follow,
};

enum { AIC = 0, AIV0 = 1, AIV1 = 2 }; /* core numbers of the one cluster */
enum { US = 1000, MS = 1000 * 1000 };

static sp_chip chip;
static rt_sched s;
static fake_rt r;
static uint64_t fake_now; /* the scheduler's clock, moved by the test */

static uint64_t fake_clock(void)
{
    return fake_now;
}

static void launch(void)
{
    memset(&chip, 0, sizeof chip);
    chip.geo = (sp_geometry){.clusters = 1,
                             .lanes = 3,
                             .lane_type = {SP_CORE_AIC, SP_CORE_AIV, SP_CORE_AIV},
                             .aicpu_threads = 1};
    memset(&r, 0, sizeof r);
    cr_assert_eq(rt_sched_geometry_check(&chip), SP_OK);
    rt_sched_init(&s, &chip, 0, 1);
    fake_now = 1 * MS;
    s.clock_ns = fake_clock;
    cr_assert_eq(s.depth, 4);
}

/* `n` more payloads of `core` finished, `dt` ns later; then a pass. */
static void finish_then_pass(uint32_t core, uint32_t n, uint64_t dt)
{
    fake_now += dt;
    chip.finished[core] = (chip.finished[core] + n) & SP_CHIP_TICKET_MASK;
    rt_sched_pass(&s, &hooks, &r);
}

Test(sched_queue_cap, unmeasured_cores_take_the_whole_depth)
{
    launch();
    r.ready[SP_Q_AIV] = 100;
    rt_sched_pass(&s, &hooks, &r);
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 4);
    cr_assert_eq(rt_sched_inflight(&s, AIV1), 4);
}

Test(sched_queue_cap, a_long_task_is_queued_behind_one_running_task_at_most)
{
    launch();
    r.ready[SP_Q_AIV] = 100;
    rt_sched_pass(&s, &hooks, &r);
    finish_then_pass(AIV0, 1, 4 * MS); /* 4 ms kernels */
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 3, "no refill: 3 queued is past the bound");
    cr_assert_eq(rt_sched_cap(&s, AIV0), 2);
    cr_assert_eq(rt_sched_cap(&s, AIV1), 2, "a core not measured yet goes by another's");
    finish_then_pass(AIV0, 1, 4 * MS);
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 2);
    finish_then_pass(AIV0, 1, 4 * MS);
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 2, "refilled to one running, one queued");
    finish_then_pass(AIV0, 2, 8 * MS);
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 2);
    cr_assert_eq(r.ready[SP_Q_AIV], 100 - 4 - 4 - 1 - 2);
}

Test(sched_queue_cap, short_tasks_keep_the_whole_depth)
{
    launch();
    r.ready[SP_Q_AIV] = 100;
    rt_sched_pass(&s, &hooks, &r);
    finish_then_pass(AIV0, 4, 4 * US); /* 1 us kernels; it ran dry */
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 4);
    finish_then_pass(AIV0, 2, 2 * US);
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 4);
    cr_assert_eq(rt_sched_cap(&s, AIV0), 4);
    /* 25 us tasks: one running, then what 40 us behind it reaches into: 2. */
    for (int i = 0; i < 40; i++)
        finish_then_pass(AIV0, 1, 25 * US);
    cr_assert_eq(rt_sched_cap(&s, AIV0), 3);
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 3);
}

Test(sched_queue_cap, a_late_reap_does_not_make_short_tasks_look_long)
{
    launch();
    r.ready[SP_Q_AIV] = 100;
    rt_sched_pass(&s, &hooks, &r);
    finish_then_pass(AIV0, 2, 2 * US);
    finish_then_pass(AIV0, 2, 2 * US);
    cr_assert_eq(rt_sched_cap(&s, AIV0), 4);
    /* The scheduler was off its CPU for 10 ms: the core ran dry long ago. */
    finish_then_pass(AIV0, 4, 10 * MS);
    cr_assert_eq(rt_sched_cap(&s, AIV0), 4);
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 4);
}

Test(sched_queue_cap, long_then_short_tasks_deepen_the_queue_again)
{
    launch();
    r.ready[SP_Q_AIV] = 1000;
    rt_sched_pass(&s, &hooks, &r);
    finish_then_pass(AIV0, 1, 4 * MS);
    cr_assert_eq(rt_sched_cap(&s, AIV0), 2);
    int reaps = 0;
    while (rt_sched_cap(&s, AIV0) < 4 && reaps < 100) {
        finish_then_pass(AIV0, 1, 1 * US); /* still busy: an exact sample */
        reaps++;
    }
    cr_assert_lt(reaps, 100);
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 4);
}

Test(sched_queue_cap, followers_obey_the_bound)
{
    launch();
    r.ready[SP_Q_AIV] = 1;
    r.followers = 100;
    rt_sched_pass(&s, &hooks, &r);
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 4, "unmeasured: followers fill the depth");
    cr_assert_eq(s.chained, 3);
    finish_then_pass(AIV0, 1, 4 * MS);
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 3);
    finish_then_pass(AIV0, 2, 8 * MS);
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 2, "one follower behind the running task");
    cr_assert_eq(s.chained, 4);
    finish_then_pass(AIV0, 1, 4 * MS);
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 2);
    cr_assert_eq(s.chained, 5);
}

Test(sched_queue_cap, a_scheduler_that_comes_late_keeps_long_queues_deep)
{
    launch();
    r.ready[SP_Q_AIV] = 1000;
    rt_sched_pass(&s, &hooks, &r);
    finish_then_pass(AIV0, 1, 4 * MS); /* 4 ms kernels: one running, one queued */
    finish_then_pass(AIV0, 2, 8 * MS);
    cr_assert_eq(rt_sched_cap(&s, AIV0), 2);
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 2);
    /* The scheduler gets its CPU 8 ms after each of the core's finishes: the
     * core ran dry 4 ms before each reap. */
    int reaps = 0;
    while (rt_sched_cap(&s, AIV0) < 4 && reaps < 100) {
        finish_then_pass(AIV0, rt_sched_inflight(&s, AIV0),
                         4 * MS * rt_sched_inflight(&s, AIV0) + 8 * MS);
        reaps++;
    }
    cr_assert_lt(reaps, 100, "the queue deepens to cover the scheduler's lateness");
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 4);
    /* Prompt reaps of a core that ran dry for want of ready work: the
     * lateness fades, the queue gets shallow again. */
    r.ready[SP_Q_AIV] = 0;
    finish_then_pass(AIV0, 4, 16 * MS);
    reaps = 0;
    while (rt_sched_cap(&s, AIV0) > 2 && reaps < 100) {
        r.ready[SP_Q_AIV] = 2;
        rt_sched_pass(&s, &hooks, &r);
        cr_assert_eq(rt_sched_inflight(&s, AIV0), 2);
        finish_then_pass(AIV0, 1, 4 * MS);
        finish_then_pass(AIV0, 1, 4 * MS);
        reaps++;
    }
    cr_assert_lt(reaps, 100);
    cr_assert_eq(rt_sched_cap(&s, AIV0), 2);
}

Test(sched_queue_cap, a_core_slow_to_start_keeps_long_queues_deep)
{
    launch();
    r.ready[SP_Q_AIV] = 4;
    rt_sched_pass(&s, &hooks, &r); /* 2 on each AIV core */
    finish_then_pass(AIV0, 1, 4 * MS);
    finish_then_pass(AIV0, 1, 4 * MS); /* ran dry: nothing was ready */
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 0);
    cr_assert_eq(rt_sched_cap(&s, AIV0), 2);
    /* Each time it is handed work while empty, its thread gets a CPU 10 ms
     * later (a loaded machine): the scheduler's reaps are prompt, the
     * start is not. */
    int rounds = 0;
    while (rt_sched_cap(&s, AIV0) < 3 && rounds < 100) {
        r.ready[SP_Q_AIV] = 2;
        rt_sched_pass(&s, &hooks, &r);
        cr_assert_eq(rt_sched_inflight(&s, AIV0), 2);
        r.ready[SP_Q_AIV] = 0;
        finish_then_pass(AIV0, 1, 10 * MS + 4 * MS);
        finish_then_pass(AIV0, 1, 4 * MS);
        rounds++;
    }
    cr_assert_lt(rounds, 100, "a queue deep enough to cover a slow start");
}

Test(sched_queue_cap, a_core_below_its_bound_takes_every_finish)
{
    launch();
    r.ready[SP_Q_AIV] = 100;
    rt_sched_pass(&s, &hooks, &r);
    finish_then_pass(AIV0, 1, 4 * MS); /* AIV0: 4 ms kernels, 3 held */
    finish_then_pass(AIV0, 2, 8 * MS); /* 1 held, the bound is 2: refilled */
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 2);
    r.ready[SP_Q_AIV] = 0;
    finish_then_pass(AIV0, 1, 4 * MS); /* nothing ready: 1 held, below the bound */
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 1);
    uint32_t every = chip.waits_every;
    rt_sched_idle_wait(&s, 0);
    cr_assert_eq(chip.waits_every, every + 1, "the next finish may release its next block");
    r.ready[SP_Q_AIV] = 1;
    rt_sched_pass(&s, &hooks, &r);
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 2);
    uint32_t batched = chip.waits_batched;
    rt_sched_idle_wait(&s, 0);
    cr_assert_eq(chip.waits_batched, batched + 1, "full to its bound: batched");
}

/* A chip as deep as the scheduler's slots allow per core (64) gets that
 * depth while one thread owns few cores; one that owns many fills each
 * less deep (the slots are one array on the thread's stack), a power of
 * two so that a core's slots wrap with its tickets. */
Test(sched_queue_cap, the_depth_follows_the_slots_a_thread_has_per_core)
{
    static const struct {
        uint32_t clusters, threads, depth;
    } cases[] = {{1, 1, 64}, {42, 1, 64}, {43, 1, 32}, {256, 1, 8}, {256, 2, 16}, {256, 4, 32}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memset(&chip, 0, sizeof chip);
        chip.depth = RT_SCHED_QUEUE_MAX;
        chip.geo = (sp_geometry){.clusters = cases[i].clusters,
                                 .lanes = 3,
                                 .lane_type = {SP_CORE_AIC, SP_CORE_AIV, SP_CORE_AIV},
                                 .aicpu_threads = cases[i].threads};
        cr_assert_eq(rt_sched_geometry_check(&chip), SP_OK);
        for (uint32_t ti = 0; ti < cases[i].threads; ti++) {
            rt_sched_init(&s, &chip, ti, cases[i].threads);
            cr_assert_eq(s.depth, cases[i].depth, "%u clusters, thread %u of %u: depth %u",
                         cases[i].clusters, ti, cases[i].threads, s.depth);
            /* Every owned core's slots lie in the array and apart. */
            uint32_t owned = 0;
            for (uint32_t c = ti; c < chip.geo.clusters; c += cases[i].threads)
                for (uint32_t l = 0; l < 3; l++) {
                    uint32_t k = s.core[c][l];
                    cr_assert_eq(s.slot_base[k], owned++ * (s.slot_mask + 1));
                    cr_assert_leq(rt_sched_slot(&s, k, SP_CHIP_TICKET_MASK), RT_SCHED_SLOTS - 1);
                }
        }
    }
    /* A chip shallower than the slots keeps its own depth. */
    memset(&chip, 0, sizeof chip);
    chip.depth = 6;
    chip.geo = (sp_geometry){.clusters = 1,
                             .lanes = 3,
                             .lane_type = {SP_CORE_AIC, SP_CORE_AIV, SP_CORE_AIV},
                             .aicpu_threads = 1};
    rt_sched_init(&s, &chip, 0, 1);
    cr_assert_eq(s.depth, 6);
}

/* A full queue of 64 short payloads, run through a ticket wrap: every
 * finish reaps the task its slot was given. */
Test(sched_queue_cap, a_deep_queue_wraps_its_tickets_and_slots_together)
{
    memset(&chip, 0, sizeof chip);
    chip.depth = RT_SCHED_QUEUE_MAX;
    chip.geo = (sp_geometry){.clusters = 1,
                             .lanes = 3,
                             .lane_type = {SP_CORE_AIC, SP_CORE_AIV, SP_CORE_AIV},
                             .aicpu_threads = 1};
    /* The previous launch left the cores 10 tickets short of the wrap. */
    for (uint32_t k = 0; k < 3; k++)
        chip.sent[k] = chip.finished[k] = SP_CHIP_TICKET_MASK - 10;
    memset(&r, 0, sizeof r);
    r.one_core = true;
    rt_sched_init(&s, &chip, 0, 1);
    fake_now = 1 * MS;
    s.clock_ns = fake_clock;
    r.ready[SP_Q_AIC] = 1000;
    rt_sched_pass(&s, &hooks, &r);
    cr_assert_eq(rt_sched_inflight(&s, AIC), 64, "short or unmeasured: the whole depth");
    for (int i = 0; i < 30; i++) {
        /* Each queued slot holds the task dispatched with its ticket. */
        for (uint32_t t = 1; t <= 64; t++)
            cr_assert_eq(s.task[rt_sched_slot(&s, AIC, (s.reaped[AIC] + t) & SP_CHIP_TICKET_MASK)],
                         1000 + r.done + t - 1);
        finish_then_pass(AIC, 7, 700);
        cr_assert_eq(rt_sched_inflight(&s, AIC), 64);
    }
    cr_assert_lt(s.sent[AIC], 1000u, "the tickets wrapped");
    cr_assert_eq(r.ready[SP_Q_AIC], 1000 - 64 - 30 * 7);
    cr_assert_eq(r.done, 30 * 7, "every finish reaped its own task");
}
