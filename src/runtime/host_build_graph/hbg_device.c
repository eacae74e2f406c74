/* hbg's scheduler loop. Each scheduler thread owns the clusters whose index
 * is congruent to its own (so every core has exactly one driver), pulls
 * ready blocks from the shared queues, and on a core's FIN releases the
 * task's consumers. Only device memory (the image) and the chip's registers
 * are touched; the busy path is plain atomics, and an idle thread waits on
 * the chip event (spin, yield, park). */
#include "runtime/host_build_graph/hbg_device.h"

#include <stdbool.h>
#include <string.h>

#include "common/wait.h"
#include "runtime/host_build_graph/hbg_image.h"
#include "simpler/orchestration.h"
#include "simpler/status.h"

#define HBG_MAX_CORES 768

typedef struct sched {
    sp_chip *chip;
    hbg_image *img;
    hbg_task *tasks;
    const uint32_t *fanout;
    uint64_t *args;
    const sp_kernel_fn *ktab;
    uint32_t clusters;
    uint32_t thread_count;
    /* Per owned core: running task + 1 (0 idle). MIX blocks hold a whole
     * cluster: the AIC core's entry carries it, lanes_left counts its lanes. */
    uint32_t running[HBG_MAX_CORES];
    uint8_t lanes_left[HBG_MAX_CORES / 3];
    bool mix_cluster[HBG_MAX_CORES / 3];
} sched;

static uint32_t *queue_slots(sched *s, int q)
{
    return (uint32_t *)((char *)s->img + s->img->queues[q].slots_off);
}

static void queue_push(sched *s, uint32_t task)
{
    hbg_task *t = &s->tasks[task];
    int q;
    switch (t->shape) {
    case SP_SHAPE_AIC:
        q = HBG_Q_AIC;
        break;
    case SP_SHAPE_AIV:
        q = HBG_Q_AIV;
        break;
    case SP_SHAPE_MIX:
        q = HBG_Q_MIX;
        break;
    default:
        q = HBG_Q_DUMMY;
        break;
    }
    hbg_queue *hq = &s->img->queues[q];
    uint32_t *slots = queue_slots(s, q);
    /* Relaxed reservation: the slot's release store below publishes it. */
    uint32_t at = atomic_fetch_add_explicit(&hq->tail, t->block_num, memory_order_relaxed);
    for (uint32_t b = 0; b < t->block_num; b++)
        atomic_store_explicit((_Atomic uint32_t *)&slots[at + b], task + 1, memory_order_release);
}

/* Pop one ready block; returns task index + 1, or 0 if the queue is empty. */
static uint32_t queue_pop(sched *s, int q)
{
    hbg_queue *hq = &s->img->queues[q];
    uint32_t h = atomic_load_explicit(&hq->head, memory_order_relaxed);
    for (;;) {
        if (h >= atomic_load_explicit(&hq->tail, memory_order_acquire))
            return 0;
        /* Relaxed CAS on head: the slot's acquire load orders the data. */
        if (atomic_compare_exchange_weak_explicit(&hq->head, &h, h + 1, memory_order_relaxed,
                                                  memory_order_relaxed))
            break;
    }
    _Atomic uint32_t *slot = (_Atomic uint32_t *)&queue_slots(s, q)[h];
    uint32_t v;
    /* The pusher reserved the slot before storing it: wait out that gap. */
    while ((v = atomic_load_explicit(slot, memory_order_acquire)) == 0)
        sp_cpu_relax();
    return v;
}

static void complete_task(sched *s, uint32_t task)
{
    hbg_task *t = &s->tasks[task];
    bool pushed = false;
    for (uint32_t i = 0; i < t->fanout_count; i++) {
        uint32_t c = s->fanout[t->fanout_begin + i];
        /* acq_rel: the last producer to finish sees every other producer's
         * writes before its consumer is queued. */
        if (atomic_fetch_sub_explicit(&s->tasks[c].fanin_left, 1, memory_order_acq_rel) == 1) {
            queue_push(s, c);
            pushed = true;
        }
    }
    uint32_t done = atomic_fetch_add_explicit(&s->img->completed, 1, memory_order_acq_rel) + 1;
    /* Wake the other schedulers for new work, and everyone at the end. */
    if ((pushed && s->thread_count > 1) || done == s->img->task_count)
        sp_chip_event_notify(s->chip);
}

static void finish_block(sched *s, uint32_t task)
{
    if (atomic_fetch_sub_explicit(&s->tasks[task].blocks_left, 1, memory_order_acq_rel) == 1)
        complete_task(s, task);
}

static void dispatch(sched *s, uint32_t core, uint32_t task, uint32_t block, int lane, int kernel)
{
    hbg_task *t = &s->tasks[task];
    sp_chip_payload p = {
        .fn = s->ktab[kernel],
        .args = s->args + t->args_begin,
        .task_id = task,
        .block_idx = block,
        .block_num = t->block_num,
        .sub_block = t->shape == SP_SHAPE_MIX ? (uint32_t)lane : 0,
    };
    s->running[core] = task + 1;
    sp_chip_dispatch(s->chip, core, &p);
}

static uint32_t claim_block(sched *s, uint32_t task)
{
    /* Relaxed: block numbers only need to be unique, not ordered. */
    return atomic_fetch_add_explicit(&s->tasks[task].next_block, 1, memory_order_relaxed);
}

/* One pass over this thread's clusters: reap finished cores, then fill idle
 * ones. Returns true if anything happened. */
static bool schedule_pass(sched *s, uint32_t ti)
{
    bool progress = false;
    uint32_t C = s->clusters;
    for (uint32_t c = ti; c < C; c += s->thread_count) {
        uint32_t cores[3] = {c, C + 2 * c, C + 2 * c + 1};
        for (int l = 0; l < 3; l++) {
            uint32_t core = cores[l];
            uint32_t run = s->running[core];
            if (!run || !sp_chip_core_idle(s->chip, core))
                continue;
            s->running[core] = 0;
            progress = true;
            if (s->mix_cluster[c]) {
                if (--s->lanes_left[c] == 0) {
                    s->mix_cluster[c] = false;
                    finish_block(s, run - 1);
                }
            } else {
                finish_block(s, run - 1);
            }
        }
        bool all_idle = !s->running[cores[0]] && !s->running[cores[1]] && !s->running[cores[2]];
        if (all_idle) {
            uint32_t v = queue_pop(s, HBG_Q_MIX);
            if (v) {
                uint32_t task = v - 1, block = claim_block(s, task);
                hbg_task *t = &s->tasks[task];
                s->mix_cluster[c] = true;
                s->lanes_left[c] = 0;
                for (int l = 0; l < 3; l++)
                    if (t->kernel[l] >= 0) {
                        s->lanes_left[c]++;
                        dispatch(s, cores[l], task, block, l, t->kernel[l]);
                    }
                progress = true;
                continue;
            }
        }
        if (s->mix_cluster[c])
            continue;
        if (!s->running[cores[0]]) {
            uint32_t v = queue_pop(s, HBG_Q_AIC);
            if (v) {
                uint32_t task = v - 1;
                dispatch(s, cores[0], task, claim_block(s, task), SP_LANE_AIC,
                         s->tasks[task].kernel[SP_LANE_AIC]);
                progress = true;
            }
        }
        for (int l = 1; l < 3; l++) {
            if (s->running[cores[l]])
                continue;
            uint32_t v = queue_pop(s, HBG_Q_AIV);
            if (!v)
                break;
            uint32_t task = v - 1;
            dispatch(s, cores[l], task, claim_block(s, task), SP_LANE_AIV0,
                     s->tasks[task].kernel[SP_LANE_AIV0]);
            progress = true;
        }
    }
    uint32_t v;
    while ((v = queue_pop(s, HBG_Q_DUMMY)) != 0) {
        complete_task(s, v - 1);
        progress = true;
    }
    return progress;
}

int hbg_device_main(sp_chip *chip, void *dev_ctx, uint32_t ti, uint32_t tn)
{
    hbg_image *img = dev_ctx;
    if (img->magic != HBG_IMAGE_MAGIC || img->version != HBG_IMAGE_VERSION)
        return SP_EINVAL;
    sched s;
    memset(&s, 0, sizeof s);
    s.chip = chip;
    s.img = img;
    s.tasks = (hbg_task *)((char *)img + img->tasks_off);
    s.fanout = (const uint32_t *)((char *)img + img->fanout_off);
    s.args = (uint64_t *)((char *)img + img->args_off);
    s.ktab = (const sp_kernel_fn *)(uintptr_t)img->kernel_table;
    s.clusters = sp_chip_cluster_count(chip);
    s.thread_count = tn;
    if (s.clusters * 3 > HBG_MAX_CORES)
        return SP_EGEOMETRY;

    for (;;) {
        uint32_t snap = sp_chip_event_snapshot(chip);
        bool progress = schedule_pass(&s, ti);
        bool busy = false;
        for (uint32_t c = ti; c < s.clusters && !busy; c += tn)
            busy =
                s.running[c] || s.running[s.clusters + 2 * c] || s.running[s.clusters + 2 * c + 1];
        if (!busy && atomic_load_explicit(&img->completed, memory_order_acquire) >= img->task_count)
            break;
        if (!progress)
            sp_chip_event_wait(chip, snap, 0);
    }
    return atomic_load_explicit(&img->error, memory_order_acquire);
}
