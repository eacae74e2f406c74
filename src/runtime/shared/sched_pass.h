/* The scheduler's pass over its clusters, shared by both runtimes: reap
 * cores that finished, then hand ready blocks to idle cores (a MIX block
 * takes a whole idle cluster, AIC blocks the AIC core, AIV blocks the two
 * AIV cores). Each runtime supplies its task storage through a hooks table;
 * the table is a compile-time constant, so the calls inline. Device-side:
 * only the chip's registers and the runtime's device memory are touched. */
#ifndef SP_RUNTIME_SCHED_PASS_H
#define SP_RUNTIME_SCHED_PASS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/ticks.h"
#include "platform/chip.h"
#include "runtime/shared/trace.h"
#include "simpler/orchestration.h"

#define SP_SCHED_MAX_CLUSTERS 256

/* Queues a runtime keeps: one per dispatch shape plus one for dummies. */
enum { SP_Q_AIC = 0, SP_Q_AIV = 1, SP_Q_MIX = 2, SP_Q_DUMMY = 3, SP_QUEUES = 4 };

static inline int sp_queue_of_shape(uint8_t shape)
{
    switch (shape) {
    case SP_SHAPE_AIC:
        return SP_Q_AIC;
    case SP_SHAPE_AIV:
        return SP_Q_AIV;
    case SP_SHAPE_MIX:
        return SP_Q_MIX;
    default:
        return SP_Q_DUMMY;
    }
}

typedef struct sp_sched_hooks {
    /* Take one ready block from queue q: task handle and block index. */
    bool (*pop)(void *rt, int q, uint64_t *task, uint32_t *block);
    /* Fill what core lane `lane` runs for (task, block); false: lane idle. */
    bool (*payload)(void *rt, uint64_t task, uint32_t block, int lane, sp_chip_payload *p);
    /* A block finished on every lane it used. */
    void (*block_done)(void *rt, uint64_t task);
    /* Tracing only: fill a slice record's func_id, shape and submit_ns. */
    void (*describe)(void *rt, uint64_t task, int lane, sp_trace_record *r);
    /* The kernel of (task, lane) on `core` ended with signal `sig` (a crash,
     * or the timeout interrupt) after running about `ran_ns`. */
    void (*fault)(void *rt, uint64_t task, int lane, uint32_t core, int sig, uint64_t ran_ns);
    /* The run has failed: ready blocks are finished without running. */
    bool (*failed)(void *rt);
} sp_sched_hooks;

typedef struct sp_sched {
    sp_chip *chip;
    uint32_t clusters;
    uint32_t thread_index;
    uint32_t thread_count;
    /* Per core: running task handle + 1 (0 idle). A MIX block holds its
     * whole cluster: lanes_left counts the lanes still running. */
    uint64_t running[3 * SP_SCHED_MAX_CLUSTERS];
    uint8_t lanes_left[SP_SCHED_MAX_CLUSTERS];
    bool mix_cluster[SP_SCHED_MAX_CLUSTERS];
    /* Tracing: NULL when off. Per core, the record of what it runs. */
    sp_trace_writer *trace;
    sp_trace_record *slice[3 * SP_SCHED_MAX_CLUSTERS];
    /* Timeouts: 0 = none. `now` is a coarse clock refreshed when the thread
     * checks timeouts (idle, or every 1024 passes), so dispatch costs no
     * clock read; started/lane/interrupted are per core. */
    uint64_t timeout_ns;
    uint64_t now;
    uint32_t passes;
    uint64_t started[3 * SP_SCHED_MAX_CLUSTERS];
    uint8_t lane[3 * SP_SCHED_MAX_CLUSTERS];
    bool interrupted[3 * SP_SCHED_MAX_CLUSTERS];
} sp_sched;

static inline void sp_sched_init(sp_sched *s, sp_chip *chip, uint32_t ti, uint32_t tn)
{
    s->chip = chip;
    s->clusters = sp_chip_cluster_count(chip);
    s->thread_index = ti;
    s->thread_count = tn;
    for (uint32_t i = 0; i < 3 * SP_SCHED_MAX_CLUSTERS; i++)
        s->running[i] = 0;
    for (uint32_t c = 0; c < SP_SCHED_MAX_CLUSTERS; c++) {
        s->lanes_left[c] = 0;
        s->mix_cluster[c] = false;
    }
    s->trace = NULL;
    s->timeout_ns = 0;
    s->now = sp_now_ns();
    s->passes = 0;
}

/* Tracing: open a slice record for what `core` is about to run and ask the
 * core to time it. Off the common path: only called when tracing. */
static inline void sp_sched_trace_dispatch(sp_sched *s, const sp_sched_hooks *h, void *rt,
                                           uint32_t core, uint64_t task, uint32_t block, int lane,
                                           sp_chip_payload *p)
{
    sp_trace_record *r = sp_trace_next(s->trace);
    s->slice[core] = r;
    if (!r)
        return;
    r->kind = SP_TRACE_SLICE;
    r->task = task;
    r->block = block;
    r->core = (uint16_t)core;
    r->lane = (uint8_t)lane;
    h->describe(rt, task, lane, r);
    p->flags |= SP_PAYLOAD_TIMED;
    r->dispatch_ns = sp_ticks();
}

/* Tracing: `core` finished; close its slice record with the core's times. */
static inline void sp_sched_trace_reap(sp_sched *s, uint32_t core)
{
    sp_trace_record *r = s->slice[core];
    if (r)
        sp_chip_core_times(s->chip, core, &r->start_ns, &r->end_ns);
}

/* True while any core this thread owns still runs something. */
static inline bool sp_sched_busy(const sp_sched *s)
{
    uint32_t C = s->clusters;
    for (uint32_t c = s->thread_index; c < C; c += s->thread_count)
        if (s->running[c] || s->running[C + 2 * c] || s->running[C + 2 * c + 1])
            return true;
    return false;
}

static inline void sp_sched_dispatch(sp_sched *s, const sp_sched_hooks *h, void *rt, uint32_t core,
                                     uint64_t task, uint32_t block, int lane)
{
    sp_chip_payload p;
    if (!h->payload(rt, task, block, lane, &p))
        return;
    if (s->trace)
        sp_sched_trace_dispatch(s, h, rt, core, task, block, lane, &p);
    s->running[core] = task + 1;
    s->started[core] = s->now;
    s->lane[core] = (uint8_t)lane;
    s->interrupted[core] = false;
    sp_chip_dispatch(s->chip, core, &p);
}

/* Pop a ready block to run; once the run has failed, blocks are finished
 * here without running (the graph drains, the run ends with its error). */
static inline bool sp_sched_pop(const sp_sched_hooks *h, void *rt, int q, uint64_t *task,
                                uint32_t *block)
{
    while (h->pop(rt, q, task, block)) {
        if (!h->failed(rt))
            return true;
        h->block_done(rt, *task);
    }
    return false;
}

/* Interrupt kernels that ran past the timeout. Returns the earliest time
 * (sp_now_ns) another one could expire, or 0 if nothing can. */
static inline uint64_t sp_sched_timeouts(sp_sched *s)
{
    if (!s->timeout_ns)
        return 0;
    s->now = sp_now_ns();
    uint64_t next = 0;
    uint32_t C = s->clusters;
    for (uint32_t c = s->thread_index; c < C; c += s->thread_count) {
        uint32_t cores[3] = {c, C + 2 * c, C + 2 * c + 1};
        for (int l = 0; l < 3; l++) {
            uint32_t k = cores[l];
            if (!s->running[k] || s->interrupted[k])
                continue;
            uint64_t expiry = s->started[k] + s->timeout_ns;
            if (s->now >= expiry) {
                s->interrupted[k] = true;
                sp_chip_core_interrupt(s->chip, k);
            } else if (!next || expiry < next) {
                next = expiry;
            }
        }
    }
    return next;
}

/* One pass over this thread's clusters. Returns true if anything happened. */
static inline bool sp_sched_pass(sp_sched *s, const sp_sched_hooks *h, void *rt)
{
    bool progress = false;
    uint32_t C = s->clusters;
    for (uint32_t c = s->thread_index; c < C; c += s->thread_count) {
        uint32_t cores[3] = {c, C + 2 * c, C + 2 * c + 1};
        for (int l = 0; l < 3; l++) {
            uint64_t run = s->running[cores[l]];
            if (!run || !sp_chip_core_idle(s->chip, cores[l]))
                continue;
            s->running[cores[l]] = 0;
            progress = true;
            if (s->trace)
                sp_sched_trace_reap(s, cores[l]);
            int sig = sp_chip_core_fault(s->chip, cores[l]);
            if (sig) {
                uint64_t ran = sp_now_ns() - s->started[cores[l]];
                h->fault(rt, run - 1, s->lane[cores[l]], cores[l], sig, ran);
            }
            if (!s->mix_cluster[c] || --s->lanes_left[c] == 0) {
                s->mix_cluster[c] = false;
                h->block_done(rt, run - 1);
            }
        }
        uint64_t task;
        uint32_t block;
        if (!s->running[cores[0]] && !s->running[cores[1]] && !s->running[cores[2]] &&
            sp_sched_pop(h, rt, SP_Q_MIX, &task, &block)) {
            s->mix_cluster[c] = true;
            s->lanes_left[c] = 0;
            for (int l = 0; l < 3; l++) {
                sp_sched_dispatch(s, h, rt, cores[l], task, block, l);
                if (s->running[cores[l]])
                    s->lanes_left[c]++;
            }
            progress = true;
            continue;
        }
        if (s->mix_cluster[c])
            continue;
        if (!s->running[cores[0]] && sp_sched_pop(h, rt, SP_Q_AIC, &task, &block)) {
            sp_sched_dispatch(s, h, rt, cores[0], task, block, SP_LANE_AIC);
            progress = true;
        }
        for (int l = 1; l < 3; l++) {
            if (s->running[cores[l]])
                continue;
            if (!sp_sched_pop(h, rt, SP_Q_AIV, &task, &block))
                break;
            sp_sched_dispatch(s, h, rt, cores[l], task, block, SP_LANE_AIV0);
            progress = true;
        }
    }
    if (s->timeout_ns && (++s->passes & 1023) == 0)
        sp_sched_timeouts(s);
    return progress;
}

/* An idle scheduler's wait: for the chip event, or until the next kernel
 * could run past the timeout (then interrupt it). */
static inline void sp_sched_idle_wait(sp_sched *s, uint32_t snapshot)
{
    uint64_t deadline = sp_sched_timeouts(s);
    sp_chip_event_wait(s->chip, snapshot, deadline);
    if (deadline)
        sp_sched_timeouts(s);
}

#endif
