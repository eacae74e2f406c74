/* hbg's device side: scheduler threads over an uploaded image. The shared
 * loop and pass (runtime/device/sched_loop.h, sched_pass.h) drive the
 * cores; this file supplies
 * the image's queues (never wrapping, one slot per block, seeded by the
 * host) and the completion rule (a task's last block releases its
 * consumers). Idle threads wait on the chip event: spin, yield, park. */
#include "runtime/host_build_graph/device/hbg_device.h"

#include <string.h>

#include "common/fault.h"
#include "common/wait.h"
#include "runtime/device/pred_task.h"
#include "runtime/device/sched_loop.h"
#include "runtime/host_build_graph/device/hbg_image.h"
#include "simpler/status.h"

typedef struct hbg_rt {
    sp_chip *chip;
    hbg_image *img;
    hbg_task *tasks;
    const uint32_t *fanout;
    const uint64_t *args;
    const sp_kernel_fn *ktab;
    const int32_t *func_ids; /* per kernel index (tracing) */
    rt_trace_writer *tw;     /* this thread's (tracing), else NULL */
    uint32_t thread_count;
} hbg_rt;

static uint32_t *queue_slots(hbg_rt *r, int q)
{
    return (uint32_t *)((char *)r->img + r->img->queues[q].slots_off);
}

static void queue_push(hbg_rt *r, uint32_t task)
{
    hbg_task *t = &r->tasks[task];
    int q = rt_queue_of_shape(t->shape);
    hbg_queue *hq = &r->img->queues[q];
    uint32_t *slots = queue_slots(r, q);
    /* Relaxed reservation: the slot's release store below publishes it. */
    uint32_t at = atomic_fetch_add_explicit(&hq->tail, t->block_num, memory_order_relaxed);
    for (uint32_t b = 0; b < t->block_num; b++)
        atomic_store_explicit((_Atomic uint32_t *)&slots[at + b], task + 1, memory_order_release);
}

/* Pop one ready block; returns task index + 1, or 0 if the queue is empty. */
static uint32_t queue_pop(hbg_rt *r, int q)
{
    hbg_queue *hq = &r->img->queues[q];
    uint32_t h = atomic_load_explicit(&hq->head, memory_order_relaxed);
    for (;;) {
        if (h >= atomic_load_explicit(&hq->tail, memory_order_acquire))
            return 0;
        /* Relaxed CAS on head: the slot's acquire load orders the data. */
        if (atomic_compare_exchange_weak_explicit(&hq->head, &h, h + 1, memory_order_relaxed,
                                                  memory_order_relaxed))
            break;
    }
    _Atomic uint32_t *slot = (_Atomic uint32_t *)&queue_slots(r, q)[h];
    uint32_t v;
    /* The pusher reserved the slot before storing it: wait out that gap. */
    while ((v = atomic_load_explicit(slot, memory_order_acquire)) == 0)
        sp__cpu_relax();
    return v;
}

/* Checking mode: the red zones of every buffer the task may have written.
 * Before its consumers are released, so none of them reads the damage. */
static void check_redzones(hbg_rt *r, const hbg_task *t, uint32_t task)
{
    const uint64_t *args = r->args + t->args_begin;
    for (uint32_t m = t->check_mask; m; m &= m - 1) {
        int i = __builtin_ctz(m);
        const sp_tensor *x = (const sp_tensor *)(uintptr_t)args[i];
        int64_t at;
        if (rt_redzone_intact(x->addr, x->buf_bytes, &at))
            continue;
        if (rt_overrun_claim(&r->img->overrun, task, t->kernel, i, at, x->buf_bytes)) {
            int32_t none = 0;
            atomic_compare_exchange_strong_explicit(&r->img->error, &none, SP_EKERNEL_OVERRUN,
                                                    memory_order_acq_rel, memory_order_relaxed);
        }
        return;
    }
}

static void complete_task(hbg_rt *r, uint32_t task)
{
    hbg_task *t = &r->tasks[task];
    bool pushed = false;
    if (t->check_mask)
        check_redzones(r, t, task);
    for (uint32_t i = 0; i < t->fanout_count; i++) {
        uint32_t c = r->fanout[t->fanout_begin + i];
        /* acq_rel: the last producer to finish sees every other producer's
         * writes before its consumer is queued. */
        if (atomic_fetch_sub_explicit(&r->tasks[c].fanin_left, 1, memory_order_acq_rel) == 1) {
            queue_push(r, c);
            pushed = true;
        }
    }
    uint32_t done = atomic_fetch_add_explicit(&r->img->completed, 1, memory_order_acq_rel) + 1;
    /* Wake the other schedulers for new work, and everyone at the end. */
    if ((pushed && r->thread_count > 1) || done == r->img->task_count)
        sp_chip_event_notify(r->chip);
}

/* A predicated task's verdict, decided at the first pop of any of its
 * blocks and kept: every block follows it, even if a block that runs
 * changes the element. Only the thread that moves the state from
 * UNDECIDED to DECIDING reads the element; another scheduler popping a
 * block meanwhile waits the few instructions until the verdict is out. So
 * no block is dispatched (and no kernel of the task, which may write the
 * element, runs) before the one read: release on the verdict, acquire on
 * reading it. */
static bool pred_skips(const hbg_rt *r, hbg_task *t)
{
    uint8_t st = atomic_load_explicit(&t->pred_state, memory_order_acquire);
    if (st == HBG_PRED_UNDECIDED &&
        atomic_compare_exchange_strong_explicit(&t->pred_state, &st, HBG_PRED_DECIDING,
                                                memory_order_acquire, memory_order_acquire)) {
        /* The element's writers were ordered before by the queue hand-off;
         * the verdict's release store publishes the decision. */
        uint64_t addr = r->args[HBG_PRED_ADDR_WORD(t->args_begin)];
        int64_t value = (int64_t)r->args[HBG_PRED_VALUE_WORD(t->args_begin)];
        st = rt_pred_holds(addr, t->pred_dtype, t->pred_op, value) ? HBG_PRED_RUN : HBG_PRED_SKIP;
        atomic_store_explicit(&t->pred_state, st, memory_order_release);
    }
    while (st == HBG_PRED_DECIDING) {
        sp__cpu_relax();
        st = atomic_load_explicit(&t->pred_state, memory_order_acquire);
    }
    return st == HBG_PRED_SKIP;
}

/* A popped block of a task predicated off: finished without a core. The
 * last one retires the task as if it had run (its consumers released). A
 * lone scheduler gets a notify for what that readied: the pop reports no
 * progress, so its pass may end with the work in another queue. */
static void skip_block(hbg_rt *r, uint32_t task)
{
    hbg_task *t = &r->tasks[task];
    if (atomic_fetch_sub_explicit(&t->blocks_left, 1, memory_order_acq_rel) != 1)
        return;
    if (r->tw) {
        int32_t k = t->kernel[0] >= 0   ? t->kernel[0]
                    : t->kernel[1] >= 0 ? t->kernel[1]
                                        : t->kernel[2];
        rt_trace_skipped(r->tw, task, 0, k >= 0 && r->func_ids ? r->func_ids[k] : -1, t->shape);
    }
    /* Relaxed: a counter the host reads after the launch completed. */
    atomic_fetch_add_explicit(&r->img->skipped, 1, memory_order_relaxed);
    complete_task(r, task);
    if (r->thread_count == 1)
        sp_chip_event_notify(r->chip);
}

/* Pop the next block that runs from queue q (task index + 1, 0: empty):
 * blocks of a task whose predicate is false are finished on the way. */
static uint32_t pop_runnable(hbg_rt *r, int q)
{
    uint32_t v;
    while ((v = queue_pop(r, q)) != 0) {
        hbg_task *t = &r->tasks[v - 1];
        if (__builtin_expect(t->pred_op == SP_PRED_NONE, 1) || !pred_skips(r, t))
            return v;
        skip_block(r, v - 1);
    }
    return 0;
}

static bool hook_pop(void *rt, int q, uint64_t *task, uint32_t *block)
{
    hbg_rt *r = rt;
    uint32_t v = pop_runnable(r, q);
    if (!v)
        return false;
    *task = v - 1;
    /* Relaxed: block numbers only need to be unique, not ordered. */
    *block = atomic_fetch_add_explicit(&r->tasks[v - 1].next_block, 1, memory_order_relaxed);
    return true;
}

static bool hook_payload(void *rt, uint64_t task, uint32_t block, int lane, sp_chip_payload *p)
{
    hbg_rt *r = rt;
    const hbg_task *t = &r->tasks[task];
    if (t->kernel[lane] < 0)
        return false;
    *p = (sp_chip_payload){
        .fn = r->ktab[t->kernel[lane]],
        .args = r->args + t->args_begin,
        .task_id = task,
        .block_idx = block,
        .block_num = t->block_num,
        .sub_block = t->shape == SP_SHAPE_MIX ? (uint32_t)lane : 0,
    };
    return true;
}

static void hook_block_done(void *rt, uint64_t task)
{
    hbg_rt *r = rt;
    if (atomic_fetch_sub_explicit(&r->tasks[task].blocks_left, 1, memory_order_acq_rel) == 1)
        complete_task(r, (uint32_t)task);
}

/* Fan-out entries a follow scans again on each pass at most. */
#define HBG_FOLLOW_RESCAN 16

/* A consumer of `task` (the unfinished tail of a core of queue q's kind)
 * to queue right behind it: see rt_sched_hooks.follow. fanin_left == 1
 * means `task` is the only producer left (it is one of them and has not
 * completed); the CAS claims the consumer against `task`'s own completion
 * (which then finds the count not at 1) and another scheduler's follow.
 * Acquire: the other producers' releases of the count happen before the
 * dispatch that publishes the consumer to the core. */
static int hook_follow(void *rt, uint64_t task, int q, int lane, uint32_t *cursor, uint64_t *next)
{
    hbg_rt *r = rt;
    const hbg_task *t = &r->tasks[task];
    if (!rt_follow_producer_ok(t->block_num, t->shape, t->check_mask))
        return RT_FOLLOW_NEVER;
    const uint32_t *fanout = r->fanout + t->fanout_begin;
    bool waiting = false; /* a consumer of the right shape still waits for another producer */
    for (uint32_t i = *cursor; i < t->fanout_count; i++) {
        hbg_task *ct = &r->tasks[fanout[i]];
        if (!rt_follow_consumer_ok(ct->block_num, ct->shape, q, ct->pred_op, ct->kernel[lane])) {
            if (!waiting)
                *cursor = i + 1; /* never this one: the next scan starts past it */
            continue;
        }
        uint32_t one = 1;
        /* Relaxed pre-check: the CAS decides; this only skips its cost. */
        if (atomic_load_explicit(&ct->fanin_left, memory_order_relaxed) == 1 &&
            atomic_compare_exchange_strong_explicit(&ct->fanin_left, &one, 1u | HBG_FANIN_CHAINED,
                                                    memory_order_acquire, memory_order_relaxed)) {
            *next = fanout[i];
            return RT_FOLLOW_FOUND;
        }
        waiting = true;
    }
    /* A consumer still waiting for another producer may be left with this
     * one alone before it finishes, by that producer's completion (the
     * graph is whole: no consumer is linked later): look again once a
     * payload finished, while the rest of the list is short enough to scan
     * each time. Otherwise it is made ready by the last completion, as
     * usual. */
    return waiting && t->fanout_count - *cursor <= HBG_FOLLOW_RESCAN ? RT_FOLLOW_AFTER_FINISH
                                                                     : RT_FOLLOW_NEVER;
}

static void hook_describe(void *rt, uint64_t task, int lane, sp_trace_record *rec)
{
    hbg_rt *r = rt;
    const hbg_task *t = &r->tasks[task];
    int32_t k = t->kernel[lane];
    rec->func_id = k >= 0 && r->func_ids ? r->func_ids[k] : -1;
    rec->shape = t->shape;
}

static void hook_fault(void *rt, uint64_t task, int lane, uint32_t core, int sig, uint64_t ran_ns)
{
    hbg_rt *r = rt;
    if (rt_fault_report_claim(&r->img->fault, task, core, r->tasks[task].kernel[lane], sig,
                              ran_ns)) {
        int32_t none = 0;
        int status = rt_fault_status(sig);
        atomic_compare_exchange_strong_explicit(&r->img->error, &none, status, memory_order_acq_rel,
                                                memory_order_relaxed);
    }
}

static bool hook_failed(void *rt)
{
    /* Relaxed: a stale "not yet" only runs one more block before the drain. */
    return atomic_load_explicit(&((hbg_rt *)rt)->img->error, memory_order_relaxed) != 0;
}

static bool hook_pop_dummy(void *rt, uint64_t *task, uint64_t *submit_ns)
{
    uint32_t v = pop_runnable(rt, SP_Q_DUMMY);
    if (!v)
        return false;
    *task = v - 1;
    *submit_ns = 0; /* hbg's tasks all exist before the launch */
    return true;
}

static void hook_complete(void *rt, uint64_t task)
{
    complete_task(rt, (uint32_t)task);
}

static bool hook_over(void *rt)
{
    hbg_image *img = ((hbg_rt *)rt)->img;
    return atomic_load_explicit(&img->completed, memory_order_acquire) >= img->task_count;
}

static const rt_sched_hooks hbg_hooks = {
    .pop = hook_pop,
    .payload = hook_payload,
    .block_done = hook_block_done,
    .describe = hook_describe,
    .fault = hook_fault,
    .failed = hook_failed,
    .follow = hook_follow,
};

static const rt_sched_loop_hooks hbg_loop = {
    .pass = &hbg_hooks,
    .pop_dummy = hook_pop_dummy,
    .complete = hook_complete,
    .over = hook_over,
};

/* A share [*b, *e) of n items for thread ti of tn. */
static void share_of(uint64_t n, uint32_t ti, uint32_t tn, uint64_t *b, uint64_t *e)
{
    *b = n * ti / tn;
    *e = n * (ti + 1) / tn;
}

/* A replayed image (img->reset): the host uploaded only a fresh header and
 * the patch, so this thread applies its share of the patch and puts its
 * share of what the last run moved back to pristine (task counters, queue
 * slots past the seeded ones; the header's counters came fresh), then
 * waits for every thread: nothing is dispatched from a half-reset image.
 * Returns 0, or SP_EINVAL for a patch word outside the image (every
 * thread still reaches the gate). */
static int replay_reset(hbg_rt *r, uint32_t ti, uint32_t tn)
{
    hbg_image *img = r->img;
    int rc = SP_OK;
    const hbg_patch *patch = (const hbg_patch *)((char *)img + img->patch_off);
    uint64_t b, e;
    share_of(img->patch_count, ti, tn, &b, &e);
    for (uint64_t i = b; i < e; i++) {
        uint64_t off = patch[i].off;
        /* The header is the host's, the patch its own: only the body. */
        if (off < HBG_IMAGE_TENSORS_OFF || off > img->total_bytes - 8 || (off & 7)) {
            rc = SP_EINVAL;
            continue;
        }
        *(uint64_t *)((char *)img + off) = patch[i].value;
    }
    share_of(img->task_count, ti, tn, &b, &e);
    for (uint64_t i = b; i < e; i++) {
        hbg_task *t = &r->tasks[i];
        /* Relaxed: the gate below publishes the reset to every thread. */
        atomic_store_explicit(&t->fanin_left, t->fanin_init, memory_order_relaxed);
        atomic_store_explicit(&t->blocks_left, t->block_num, memory_order_relaxed);
        atomic_store_explicit(&t->next_block, 0, memory_order_relaxed);
        atomic_store_explicit(&t->pred_state, HBG_PRED_UNDECIDED, memory_order_relaxed);
    }
    for (int q = 0; q < HBG_QUEUES; q++) {
        /* The header's tail is the seeded count: slots past it were pushed. */
        const hbg_queue *hq = &img->queues[q];
        uint32_t seeded = atomic_load_explicit(&hq->tail, memory_order_relaxed);
        share_of(hq->capacity > seeded ? hq->capacity - seeded : 0, ti, tn, &b, &e);
        if (e > b)
            memset(queue_slots(r, q) + seeded + b, 0, (e - b) * sizeof(uint32_t));
    }
    /* seq_cst add: every thread's reset happens before the gate opens. */
    uint32_t v = sp__waitword_add(&img->reset_gate, 1) + 1;
    while (v < tn)
        v = sp__waitword_wait_ne(&img->reset_gate, v, &sp__wait_default, 0, NULL);
    return rc;
}

int hbg_device_main(sp_chip *chip, void *dev_ctx, uint32_t ti, uint32_t tn)
{
    hbg_image *img = dev_ctx;
    if (img->magic != HBG_IMAGE_MAGIC || img->version != HBG_IMAGE_VERSION)
        return SP_EINVAL;
    int rc = rt_sched_geometry_check(chip);
    if (rc)
        return rc;
    hbg_rt r = {
        .chip = chip,
        .img = img,
        .tasks = (hbg_task *)((char *)img + img->tasks_off),
        .fanout = (const uint32_t *)((char *)img + img->fanout_off),
        .args = (const uint64_t *)((char *)img + img->args_off),
        .ktab = (const sp_kernel_fn *)(uintptr_t)img->kernel_table,
        .thread_count = tn,
    };
    if (img->reset) {
        int bad = replay_reset(&r, ti, tn);
        if (bad) {
            int32_t none = 0;
            atomic_compare_exchange_strong_explicit(&img->error, &none, bad, memory_order_acq_rel,
                                                    memory_order_relaxed);
        }
    }
    rt_sched s;
    rt_sched_init(&s, chip, ti, tn);
    s.timeout_ns = img->timeout_ns;
    rt_trace_writer tw;
    rt_trace_writer_init(&tw, (rt_trace_buf *)(uintptr_t)img->trace, ti);
    if (tw.buf) {
        s.trace = &tw;
        r.func_ids = (const int32_t *)(uintptr_t)tw.buf->func_ids;
        r.tw = &tw;
    }
    rt_sched_loop(&s, &hbg_loop, &r, &tw);
    /* Relaxed: a statistic the host reads after the launch completed. */
    if (s.chained)
        atomic_fetch_add_explicit(&img->chained, (uint32_t)s.chained, memory_order_relaxed);
    return atomic_load_explicit(&img->error, memory_order_acquire);
}
