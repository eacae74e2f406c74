/* tensormap_and_ringbuffer's scheduler threads and task completion. The
 * shared loop and pass (runtime/device/sched_loop.h, sched_pass.h) drive
 * the cores; here are the
 * ring's hooks: ready queues hold task ids (an SPMD task is pushed back
 * while it has blocks to hand out), and completing a task closes its
 * fan-out list (so the orchestrator links no more consumers to it),
 * releases each consumer waiting on it, drops its holds on its producers
 * and its own reference, and wakes whoever waits. */
#include <string.h>

#include "common/fault.h"
#include "common/wait.h"
#include "runtime/device/pred_task.h"
#include "runtime/device/sched_loop.h"
#include "runtime/tensormap_and_ringbuffer/device/tmr_device.h"
#include "runtime/tensormap_and_ringbuffer/device/tmr_queue.h"
#include "simpler/status.h"

typedef struct tmr_rt {
    tmr_ctl *c;
    sp_chip *chip;
    rt_trace_writer *tw; /* this thread's (tracing), else NULL */
    uint64_t abandon_at; /* scheduler 0: when to give the orchestrator up (0: no watch) */
    uint32_t watch_tick; /* passes; the watch reads the clock every WATCH_EVERY of them */
} tmr_rt;

/* The orchestrator watch's deadline is minutes away: a clock read every
 * pass cost the scheduler a quarter of its time on small tasks. An idle
 * scheduler's wait ends at the deadline (s->wake_by), so the watch is at
 * most this many quick passes late. */
#define WATCH_EVERY 256u

void tmr_fail(tmr_ctl *c, int status, const char *msg)
{
    int expected = 0;
    /* First error wins; the message is written by the winner only. */
    if (atomic_compare_exchange_strong_explicit(&c->error, &expected, status, memory_order_acq_rel,
                                                memory_order_acquire))
        snprintf(c->message, sizeof c->message, "%s", msg);
}

static void tmr_queue_ready(tmr_ctl *c, sp_chip *chip, int64_t id, bool wake)
{
    tmr_task *t = tmr_slot(c, id);
    tmr_queue_push(&c->queues[rt_queue_of_shape(t->shape)], (uint64_t)id);
    if (wake)
        sp_chip_event_notify(chip);
}

/* The orchestrator's: a task it readies behind others still queued needs
 * no notify (tmr_queue_pushed_first), so a stream of ready tasks costs the
 * chip event's line one RMW per burst, not one per task. */
void tmr_make_ready(tmr_ctl *c, sp_chip *chip, int64_t id)
{
    tmr_queue *q = &c->queues[rt_queue_of_shape(tmr_slot(c, id)->shape)];
    if (tmr_queue_pushed_first(q, tmr_queue_push(q, (uint64_t)id)))
        sp_chip_event_notify(chip);
}

/* Checking mode: the red zones of every buffer the task may have written.
 * Before its consumers are released, so none of them reads the damage. */
static void check_redzones(tmr_ctl *c, const tmr_task *t)
{
    for (uint32_t m = t->check_mask; m; m &= m - 1) {
        int i = __builtin_ctz(m);
        const sp_tensor *x = &t->tensors[i];
        int64_t at;
        if (rt_redzone_intact(x->addr, x->buf_bytes, &at))
            continue;
        if (rt_overrun_claim(&c->overrun, (uint64_t)t->id, t->kernel, i, at, x->buf_bytes))
            tmr_fail(c, SP_EKERNEL_OVERRUN, "");
        return;
    }
}

static void complete_task(tmr_rt *r, int64_t id)
{
    tmr_ctl *c = r->c;
    tmr_task *t = tmr_slot(c, id);
    if (t->check_mask)
        check_redzones(c, t);
    /* A lone scheduler pops what it readies here in its next pass (the
     * pass that reaped this task reports progress and does not wait), so
     * waking the chip event would only wake itself. It still does while
     * draining a failed run, where the pop that finished this task may
     * report no progress. Relaxed: this thread's own hook_failed load, if
     * any, already saw the error; otherwise the pass reported progress. */
    bool wake = c->sched_threads > 1 || atomic_load_explicit(&c->error, memory_order_relaxed);
    /* Close the fan-out: acq_rel pairs with the orchestrator's release CAS,
     * so every linked node (and its next pointer) is visible. */
    uint64_t h =
        atomic_exchange_explicit(&t->fanout_head, TMR_FANOUT_CLOSED, memory_order_acq_rel) >> 1;
    while (h) {
        const tmr_hold *e = tmr_hold_at(c, h - 1);
        /* Read the link before the release below: once its count reaches zero
         * the consumer may run, finish and have its slot (and extent) reused. */
        h = e->next >> 1;
        int64_t cid = e->consumer;
        tmr_task *consumer = tmr_slot(c, cid);
        if (atomic_fetch_sub_explicit(&consumer->fanin_left, 1, memory_order_acq_rel) == 1)
            tmr_queue_ready(c, r->chip, cid, wake);
    }
    for (uint16_t k = 0; k < t->hold_count; k++)
        atomic_fetch_sub_explicit(&tmr_slot(c, t->holds[k].producer)->refs, 1,
                                  memory_order_release);
    /* Relaxed: a statistic; only the first completions pay for the clock
     * and the CAS, not every one. */
    uint64_t zero = 0;
    if (atomic_load_explicit(&c->first_complete_ns, memory_order_relaxed) == 0)
        atomic_compare_exchange_strong_explicit(&c->first_complete_ns, &zero, sp_now_ns(),
                                                memory_order_relaxed, memory_order_relaxed);
    atomic_store_explicit(&t->state, TMR_SLOT_COMPLETE, memory_order_release);
    atomic_fetch_sub_explicit(&t->refs, 1, memory_order_release);
    /* Dekker with the orchestrator (tmr_orch.c, orch_wait_completed): this
     * seq_cst increment, then a seq_cst look at orch_wake_at; it sets
     * orch_wake_at, then reads `completed` seq_cst. Either it sees this
     * completion (and the writes before it) or this thread sees its target. */
    int64_t done = atomic_fetch_add_explicit(&c->completed, 1, memory_order_seq_cst) + 1;
    int64_t wake_at = atomic_load_explicit(&c->orch_wake_at, memory_order_seq_cst);
    if (wake_at && done >= wake_at)
        sp__waitword_add(&c->orch_word, 1);
    /* Everyone waits for the last task once the orchestration has returned. */
    if (atomic_load_explicit(&c->orch_done, memory_order_acquire) &&
        done == atomic_load_explicit(&c->submitted, memory_order_acquire))
        sp_chip_event_notify(r->chip);
}

/* A popped task with a predicate, at its first block (the holder of the
 * queue entry is alone with it, so the verdict is decided once, before any
 * block is handed out): false, and it is retired here without running —
 * its blocks never dispatched, its consumers released as if it had run. A
 * lone scheduler gets a notify for what that readied: the pop reports no
 * progress, so its pass may end with the work in another queue. */
static bool pred_skip(tmr_rt *r, tmr_task *t)
{
    if (rt_pred_holds(t->pred_addr, t->pred_dtype, t->pred_op, t->pred_value))
        return false;
    if (r->tw) {
        const int32_t *func_ids = (const int32_t *)(uintptr_t)r->c->trace->func_ids;
        int32_t k = t->kernel[0] >= 0   ? t->kernel[0]
                    : t->kernel[1] >= 0 ? t->kernel[1]
                                        : t->kernel[2];
        rt_trace_skipped(r->tw, (uint64_t)t->id, t->submit_ns, k >= 0 ? func_ids[k] : -1, t->shape);
    }
    /* Relaxed: a counter the host reads after the launch completed. */
    atomic_fetch_add_explicit(&r->c->skipped, 1, memory_order_relaxed);
    complete_task(r, t->id);
    if (r->c->sched_threads == 1)
        sp_chip_event_notify(r->chip);
    return true;
}

static bool hook_pop(void *rt, int q, uint64_t *task, uint32_t *block)
{
    tmr_rt *r = rt;
    uint64_t id;
    tmr_task *t;
    uint32_t b;
    do {
        if (!tmr_queue_pop(&r->c->queues[q], &id))
            return false;
        t = tmr_slot(r->c, (int64_t)id);
        /* Relaxed: only the holder of the queue entry hands out blocks. */
        b = atomic_fetch_add_explicit(&t->next_block, 1, memory_order_relaxed);
    } while (__builtin_expect(t->pred_op != SP_PRED_NONE, 0) && b == 0 && pred_skip(r, t));
    if (b + 1 < t->block_num)
        tmr_queue_push(&r->c->queues[q], id); /* more blocks for other cores (never dropped) */
    *task = id;
    *block = b;
    return true;
}

static bool hook_payload(void *rt, uint64_t task, uint32_t block, int lane, sp_chip_payload *p)
{
    tmr_rt *r = rt;
    const tmr_task *t = tmr_slot(r->c, (int64_t)task);
    if (t->kernel[lane] < 0)
        return false;
    *p = (sp_chip_payload){
        .fn = r->c->ktab[t->kernel[lane]],
        .args = t->args,
        .task_id = task,
        .block_idx = block,
        .block_num = t->block_num,
        .sub_block = t->shape == SP_SHAPE_MIX ? (uint32_t)lane : 0,
    };
    return true;
}

static void hook_block_done(void *rt, uint64_t task)
{
    tmr_rt *r = rt;
    tmr_task *t = tmr_slot(r->c, (int64_t)task);
    if (atomic_fetch_sub_explicit(&t->blocks_left, 1, memory_order_acq_rel) == 1)
        complete_task(r, (int64_t)task);
}

/* A consumer of `task` (the unfinished tail of a core of queue q's kind)
 * to queue right behind it: see rt_sched_hooks.follow. The fan-out list
 * is open (only `task`'s completion, on this thread, closes it) and grows
 * at its head while the orchestrator links consumers, so each call looks
 * at the newest TMR_FOLLOW_SCAN nodes and answers LATER, not NEVER. A
 * linked consumer cannot complete (nor its slot be reused) before `task`
 * does. fanin_left == 1 means it is fully submitted (the submit guard is
 * gone) and `task` is its only producer left; the CAS claims it against
 * `task`'s completion and other schedulers. Acquire: the other producers'
 * releases of the count happen before the dispatch that publishes it. */
static int hook_follow(void *rt, uint64_t task, int q, int lane, uint32_t *cursor, uint64_t *next)
{
    (void)cursor;
    tmr_rt *r = rt;
    tmr_ctl *c = r->c;
    const tmr_task *t = tmr_slot(c, (int64_t)task);
    if (!rt_follow_producer_ok(t->block_num, t->shape, t->check_mask))
        return RT_FOLLOW_NEVER;
    /* Acquire: pairs with the link's release CAS: the consumer's slot and
     * its hold (edge node) are visible. */
    uint64_t h = atomic_load_explicit(&t->fanout_head, memory_order_acquire) >> 1;
    for (int n = 0; h && n < TMR_FOLLOW_SCAN; n++) {
        const tmr_hold *e = tmr_hold_at(c, h - 1);
        h = e->next >> 1;
        tmr_task *ct = tmr_slot(c, e->consumer);
        if (!rt_follow_consumer_ok(ct->block_num, ct->shape, q, ct->pred_op, ct->kernel[lane]))
            continue;
        uint32_t one = 1;
        /* Relaxed pre-check: the CAS decides; this only skips its cost. */
        if (atomic_load_explicit(&ct->fanin_left, memory_order_relaxed) == 1 &&
            atomic_compare_exchange_strong_explicit(&ct->fanin_left, &one, 1u | TMR_FANIN_CHAINED,
                                                    memory_order_acquire, memory_order_relaxed)) {
            *next = (uint64_t)ct->id;
            return RT_FOLLOW_FOUND;
        }
    }
    return RT_FOLLOW_LATER;
}

static void hook_describe(void *rt, uint64_t task, int lane, sp_trace_record *rec)
{
    tmr_rt *r = rt;
    const tmr_task *t = tmr_slot(r->c, (int64_t)task);
    const int32_t *func_ids = (const int32_t *)(uintptr_t)r->c->trace->func_ids;
    rec->func_id = t->kernel[lane] >= 0 ? func_ids[t->kernel[lane]] : -1;
    rec->shape = t->shape;
    rec->submit_ns = t->submit_ns;
}

static void hook_fault(void *rt, uint64_t task, int lane, uint32_t core, int sig, uint64_t ran_ns)
{
    tmr_rt *r = rt;
    const tmr_task *t = tmr_slot(r->c, (int64_t)task);
    if (rt_fault_report_claim(&r->c->fault, task, core, t->kernel[lane], sig, ran_ns))
        tmr_fail(r->c, rt_fault_status(sig), "");
}

static bool hook_failed(void *rt)
{
    /* Relaxed: a stale "not yet" only runs one more block before the drain. */
    return atomic_load_explicit(&((tmr_rt *)rt)->c->error, memory_order_relaxed) != 0;
}

/* Scheduler 0 watches the orchestrator thread: one still running past its
 * watchdog and the grace period did not answer the watchdog's interrupt
 * (it blocks signals), so its thread is given up and the run ends. Returns
 * the time to look again, 0 when there is nothing to watch. */
static uint64_t watch_orchestrator(tmr_ctl *c, sp_chip *chip, uint64_t abandon_at)
{
    if (!abandon_at || atomic_load_explicit(&c->orch_done, memory_order_acquire))
        return 0;
    if (sp_now_ns() < abandon_at)
        return abandon_at;
    if (!sp_chip_abandon_thread(chip, c->sched_threads))
        return 0; /* it finished meanwhile: its own orch_done follows */
    char msg[256];
    snprintf(msg, sizeof msg,
             "the orchestration timed out: still running on the chip %llu ms after its %llu ms "
             "watchdog (orch_timeout_us) and did not answer the interrupt (it blocks signals): "
             "its thread was abandoned after %lld submits; the device is degraded",
             (unsigned long long)((abandon_at - c->orch_begin_ns) / 1000000 -
                                  c->orch_timeout_ns / 1000000),
             (unsigned long long)(c->orch_timeout_ns / 1000000),
             (long long)atomic_load_explicit(&c->submitted, memory_order_relaxed));
    tmr_fail(c, SP_EORCH_CRASH, msg);
    atomic_store_explicit(&c->orch_done, 1, memory_order_release);
    sp_chip_event_notify(chip);
    return 0;
}

static void hook_before_pass(void *rt, rt_sched *s)
{
    tmr_rt *r = rt;
    if (r->abandon_at && ++r->watch_tick % WATCH_EVERY == 0)
        s->wake_by = r->abandon_at = watch_orchestrator(r->c, r->chip, r->abandon_at);
}

static bool hook_pop_dummy(void *rt, uint64_t *task, uint64_t *submit_ns)
{
    tmr_rt *r = rt;
    tmr_ctl *c = r->c;
    tmr_task *t;
    do {
        if (!tmr_queue_pop(&c->queues[SP_Q_DUMMY], task))
            return false;
        t = tmr_slot(c, (int64_t)*task);
    } while (__builtin_expect(t->pred_op != SP_PRED_NONE, 0) && pred_skip(r, t));
    *submit_ns = t->submit_ns;
    return true;
}

static void hook_complete(void *rt, uint64_t task)
{
    complete_task(rt, (int64_t)task);
}

static bool hook_over(void *rt)
{
    tmr_ctl *c = ((tmr_rt *)rt)->c;
    return atomic_load_explicit(&c->orch_done, memory_order_acquire) &&
           atomic_load_explicit(&c->completed, memory_order_acquire) ==
               atomic_load_explicit(&c->submitted, memory_order_acquire);
}

static const rt_sched_hooks tmr_hooks = {
    .pop = hook_pop,
    .payload = hook_payload,
    .block_done = hook_block_done,
    .describe = hook_describe,
    .fault = hook_fault,
    .failed = hook_failed,
    .follow = hook_follow,
};

static const rt_sched_loop_hooks tmr_loop = {
    .pass = &tmr_hooks,
    .before_pass = hook_before_pass,
    .pop_dummy = hook_pop_dummy,
    .complete = hook_complete,
    .over = hook_over,
};

static int schedule(tmr_ctl *c, sp_chip *chip, uint32_t ti, uint32_t tn)
{
    while (!atomic_load_explicit(&c->booted, memory_order_acquire)) {
        uint32_t snap = sp_chip_event_snapshot(chip);
        if (atomic_load_explicit(&c->booted, memory_order_acquire))
            break;
        sp_chip_event_wait(chip, snap, 0);
    }
    /* orch_begin_ns was written before `booted` was released. */
    tmr_rt r = {.c = c,
                .chip = chip,
                .abandon_at = ti == 0 && c->orch_timeout_ns
                                  ? c->orch_begin_ns + c->orch_timeout_ns +
                                        rt_sched_grace_ns(c->orch_timeout_ns)
                                  : 0};
    rt_sched s;
    rt_sched_init(&s, chip, ti, tn);
    s.timeout_ns = c->kernel_timeout_ns;
    s.wake_by = r.abandon_at; /* an idle wait ends in time for the watch */
    rt_trace_writer tw;
    rt_trace_writer_init(&tw, c->trace, ti);
    if (tw.buf)
        s.trace = r.tw = &tw;
    rt_sched_loop(&s, &tmr_loop, &r, &tw);
    /* Relaxed: a statistic the host reads after the launch completed. */
    if (s.chained)
        atomic_fetch_add_explicit(&c->chained, s.chained, memory_order_relaxed);
    /* A kernel fault recorded by any thread is the launch's result too. */
    return atomic_load_explicit(&c->error, memory_order_acquire);
}

int tmr_device_main(sp_chip *chip, void *dev_ctx, uint32_t ti, uint32_t tn)
{
    tmr_ctl *c = dev_ctx;
    if (c->magic != TMR_MAGIC)
        return SP_EINVAL;
    int rc = rt_sched_geometry_check(chip);
    if (rc)
        return rc;
    if (ti == c->sched_threads)
        return tmr_orchestrate(c, chip);
    return schedule(c, chip, ti, tn - 1);
}
