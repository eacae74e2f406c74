/* Which wait an idle scheduler takes (rt_sched_idle_wait): batched, woken
 * only when a finish leaves its core's queue half empty, while every core
 * of a kind the launch has used is busy; every finish while one of them
 * sits idle, since that finish may release the idle core's next block
 * (paged attention: an AIV softmax released by an AIC qk while the AIC
 * queue is still full). A kind that never ran this launch does not count.
 * Driven over a fake chip (fake_chip_counting.h): a dispatch
 * stays in flight until the test finishes it, and the two waits only
 * count their calls. */
#include <criterion/criterion.h>
#include <string.h>

#include "runtime/device/sched_pass.h"
#include "simpler/status.h"

/* ---- a fake chip: one a2a3 cluster (AIC, AIV, AIV) ---------------------- */

#include "fake_chip_counting.h"

/* ---- a runtime whose ready queues the test fills ------------------------ */

typedef struct fake_rt {
    uint32_t ready[SP_QUEUES]; /* single-block tasks ready per queue */
} fake_rt;

static bool hook_pop(void *rt, int q, uint64_t *task, uint32_t *block)
{
    fake_rt *r = rt;
    if (!r->ready[q])
        return false;
    r->ready[q]--;
    *task = (uint64_t)q;
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
    (void)rt, (void)task;
}

#define FAKE_PASS_HOOKS                                                                            \
    .pop = hook_pop, .payload = hook_payload, .block_done = hook_block_done,                       \
    .describe = hook_describe, .fault = hook_fault, .failed = hook_failed
static const rt_sched_hooks hooks = {FAKE_PASS_HOOKS};

enum { AIC = 0, AIV0 = 1, AIV1 = 2 }; /* core numbers of the one cluster */

static sp_chip chip;
static rt_sched s;
static fake_rt r;

static void launch(void)
{
    memset(&chip, 0, sizeof chip);
    chip.geo = (sp_geometry){.clusters = 1,
                             .lanes = 3,
                             .lane_type = {SP_CORE_AIC, SP_CORE_AIV, SP_CORE_AIV},
                             .aicpu_threads = 1};
    memset(&r, 0, sizeof r);
    cr_assert_eq(rt_sched_geometry_check(&chip), SP_OK);
    fake_sched_init(&s, &chip, 0, 1);
}

static void finish(uint32_t core, uint32_t n)
{
    chip.finished[core] = (chip.finished[core] + n) & SP_CHIP_TICKET_MASK;
}

/* A pass, then the idle wait: which of the two waits it took. */
static bool waits_every_finish(void)
{
    rt_sched_pass(&s, &hooks, &r);
    uint32_t every = chip.waits_every, batched = chip.waits_batched;
    rt_sched_idle_wait(&s, 0);
    cr_assert_eq(chip.waits_every + chip.waits_batched, every + batched + 1, "one wait per call");
    return chip.waits_every > every;
}

Test(sched_idle_wait, an_idle_aiv_lane_takes_every_aic_finish)
{
    launch();
    /* The paged-attention shape: a full AIC queue of qk, a softmax on each
     * AIV lane. */
    r.ready[SP_Q_AIC] = 8;
    r.ready[SP_Q_AIV] = 2;
    cr_assert_not(waits_every_finish(), "every core the launch used is busy: batched");
    cr_assert_eq(rt_sched_inflight(&s, AIC), 4);
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 1);
    cr_assert_eq(rt_sched_inflight(&s, AIV1), 1);
    finish(AIV0, 1); /* a softmax is done; the AIC still holds 4 qk */
    cr_assert(waits_every_finish(), "an AIV lane that ran work sits idle: every finish");
    finish(AIC, 1); /* that finish releases the next softmax */
    r.ready[SP_Q_AIV] = 1;
    cr_assert_not(waits_every_finish(), "the AIV lane is fed again, the AIC refilled: batched");
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 1);
    cr_assert_eq(rt_sched_inflight(&s, AIC), 4);
}

Test(sched_idle_wait, a_kind_the_launch_never_used_does_not_count)
{
    launch();
    r.ready[SP_Q_AIC] = 8; /* AIC work only: both AIV lanes idle, never used */
    cr_assert_not(waits_every_finish());
    launch();
    r.ready[SP_Q_AIV] = 8; /* an AIV-only graph: the AIC idles all launch */
    cr_assert_not(waits_every_finish());
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 4);
    cr_assert_eq(rt_sched_inflight(&s, AIV1), 4);
    finish(AIV1, 4); /* one AIV lane runs dry with nothing ready for it */
    cr_assert(waits_every_finish(), "an idle AIV lane of an AIV graph: every finish");
}

Test(sched_idle_wait, a_new_launch_starts_unused)
{
    launch();
    r.ready[SP_Q_AIV] = 1;
    r.ready[SP_Q_AIC] = 8;
    rt_sched_pass(&s, &hooks, &r);
    finish(AIV0, 1);
    cr_assert(waits_every_finish());
    /* The next launch on the same chip: tickets carry on, the AIV's past
     * work does not make its idle lanes count. */
    finish(AIC, 4);
    fake_sched_init(&s, &chip, 0, 1);
    r.ready[SP_Q_AIC] = 8;
    cr_assert_not(waits_every_finish());
}

/* How often the pass asks a runtime about a follower of a core's last
 * task (rt_sched_hooks.follow): a new tail at once; after RT_FOLLOW_LATER,
 * again at every pass (tmr: a consumer may be linked at any time); after
 * RT_FOLLOW_AFTER_FINISH, only once the chip event moved (hbg: only a
 * completion can leave a consumer waiting on the tail alone), so passes
 * that nothing finished between do not rescan the tail's consumers. */
static int follow_answer;
static uint32_t follow_asked;
static int hook_follow(void *rt, uint64_t task, int q, int lane, uint32_t *cursor, uint64_t *next)
{
    (void)rt, (void)task, (void)q, (void)lane, (void)cursor, (void)next;
    follow_asked++;
    return follow_answer;
}
static const rt_sched_hooks follow_hooks = {FAKE_PASS_HOOKS, .follow = hook_follow};

static uint32_t asks_over_passes(int answer)
{
    launch();
    follow_answer = answer;
    follow_asked = 0;
    r.ready[SP_Q_AIV] = 2; /* one task on each AIV lane, both left running */
    rt_sched_pass(&s, &follow_hooks, &r);
    cr_assert_eq(rt_sched_inflight(&s, AIV0), 1);
    cr_assert_eq(follow_asked, 2, "each new tail is asked about at once");
    for (int p = 0; p < 5; p++) /* nothing finishes */
        rt_sched_pass(&s, &follow_hooks, &r);
    return follow_asked;
}

Test(sched_idle_wait, a_tail_is_asked_again_per_pass_or_after_a_finish)
{
    cr_assert_eq(asks_over_passes(RT_FOLLOW_LATER), 2 + 5 * 2, "LATER: every pass");
    cr_assert_eq(asks_over_passes(RT_FOLLOW_NEVER), 2, "NEVER: not again");
    cr_assert_eq(asks_over_passes(RT_FOLLOW_AFTER_FINISH), 2, "AFTER_FINISH: nothing finished");
    /* One lane's task finishes: the event moves, and the other lane's tail
     * (still running) is asked once more, then not again. */
    finish(AIV1, 1);
    rt_sched_pass(&s, &follow_hooks, &r);
    cr_assert_eq(rt_sched_inflight(&s, AIV1), 0);
    cr_assert_eq(follow_asked, 3);
    rt_sched_pass(&s, &follow_hooks, &r);
    cr_assert_eq(follow_asked, 3);
}
