/* The scheduler's pass over its clusters, shared by both runtimes: reap
 * cores that finished, then hand ready blocks to idle cores (a MIX block
 * takes a whole idle cluster, AIC blocks an AIC lane's core, AIV blocks the
 * AIV lanes' cores). The cluster's shape — how many lanes, each lane's core
 * kind, which core is which lane — is the chip's geometry (data, read at
 * init), not a constant. A core's queue runs in ticket order, so a consumer
 * whose only unfinished producer is the last payload queued on a core may
 * be queued right behind it before it finishes (the hooks' `follow`): a
 * chain runs on one core with no round trip through the scheduler per
 * edge, and its bookkeeping is still done here, at each reap, in order.
 * Each runtime supplies its task storage through a hooks table;
 * the table is a compile-time constant, so the calls inline. Device-side:
 * only the chip's registers and the runtime's device memory are touched. */
#ifndef RT_DEVICE_SCHED_PASS_H
#define RT_DEVICE_SCHED_PASS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/ticks.h"
#include "platform/chip.h"
#include "runtime/device/trace_write.h"
#include "simpler/kernel.h"
#include "simpler/orchestration.h"
#include "simpler/status.h"

#define RT_SCHED_MAX_CLUSTERS 256
/* Lanes a cluster may have: a MIX task names a kernel per lane, at most
 * SP_LANES of them (orchestration.h), so a geometry with more is refused. */
#define RT_SCHED_MAX_LANES SP_LANES
#define RT_SCHED_MAX_CORES (RT_SCHED_MAX_LANES * RT_SCHED_MAX_CLUSTERS)

/* Queues a runtime keeps: one per dispatch shape plus one for dummies. */
enum { SP_Q_AIC = 0, SP_Q_AIV = 1, SP_Q_MIX = 2, SP_Q_DUMMY = 3, SP_QUEUES = 4 };

static inline int rt_queue_of_shape(uint8_t shape)
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

typedef struct rt_sched_hooks {
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
    /* Optional (NULL: never). `task` is the last payload queued on a core
     * of queue q's kind and has not finished; find a consumer that may run
     * right behind it there: `task` is one block and not MIX; the consumer
     * is one block of q's shape with a kernel for lane `lane`, no
     * predicate, fully submitted, and `task` is the only producer it still
     * waits for. Claim it (its producers' completions then no longer make
     * it ready) and return RT_FOLLOW_FOUND with *next; its completion
     * comes from its reap, after `task`'s. *cursor (0 when `task` became
     * the tail) is the runtime's place in its scan. RT_FOLLOW_LATER: none
     * now, ask again at the next pass (a consumer may still be linked);
     * RT_FOLLOW_AFTER_FINISH: none until some payload finishes (only a
     * finish can leave a consumer waiting on `task` alone); RT_FOLLOW_NEVER:
     * none from this task. */
    int (*follow)(void *rt, uint64_t task, int q, int lane, uint32_t *cursor, uint64_t *next);
} rt_sched_hooks;

enum { RT_FOLLOW_NEVER = 0, RT_FOLLOW_LATER = 1, RT_FOLLOW_FOUND = 2, RT_FOLLOW_AFTER_FINISH = 3 };

/* The follow rules both runtimes apply (rt_sched_hooks.follow). A producer
 * may be followed when it is one block, not MIX (its other blocks or lanes
 * run elsewhere, unordered), and has no red zones to verify (the checking
 * mode checks them at its reap; a follower would run first and have its
 * own overrun blamed on the producer). */
static inline bool rt_follow_producer_ok(uint32_t block_num, uint8_t shape, uint32_t check_mask)
{
    return block_num == 1 && shape != SP_SHAPE_MIX && !check_mask;
}

/* A consumer may follow on a core of queue q's kind when it is one block of
 * that kind, with a kernel for the core's lane (`lane_kernel` >= 0) and no
 * predicate (the scheduler evaluates it once the producers finished). */
static inline bool rt_follow_consumer_ok(uint32_t block_num, uint8_t shape, int q, uint8_t pred_op,
                                         int32_t lane_kernel)
{
    return block_num == 1 && rt_queue_of_shape(shape) == q && pred_op == SP_PRED_NONE &&
           lane_kernel >= 0;
}

/* Payloads the scheduler keeps queued per core, at most (the chip's depth
 * may be smaller; so may the slots below). */
#define RT_SCHED_QUEUE_MAX 64
/* Slots for what each queued payload runs, shared by the cores one
 * scheduler thread owns: each core gets the largest power of two of them
 * that fits (at most RT_SCHED_QUEUE_MAX), and the thread fills no core
 * deeper than that. 64 each for up to 128 cores, 8 each at the largest
 * geometry on one thread; a fixed array, so the scheduler's state stays
 * on its thread's stack (~200 KiB) and a launch allocates nothing. */
#define RT_SCHED_SLOTS 8192
/* Expected run time a core may hold queued behind the payload it runs
 * (rt_sched_cap): short tasks get the whole queue, a task longer than this
 * waits behind at most one, so ready work is not stranded behind a long
 * kernel while another core idles. */
#define RT_SCHED_QUEUE_NS (40ull * 1000)

typedef struct rt_sched {
    sp_chip *chip;
    uint32_t clusters;
    uint32_t thread_index;
    uint32_t thread_count;
    uint32_t depth; /* payloads per core this scheduler fills up to */
    /* The geometry: lanes per cluster; per lane the queue it serves outside
     * MIX blocks (SP_Q_AIC / SP_Q_AIV, by its core kind) and the task lane
     * whose kernel such a block runs there; per owned cluster, its cores. */
    uint32_t lanes;
    uint8_t lane_queue[RT_SCHED_MAX_LANES];
    uint8_t lane_task[RT_SCHED_MAX_LANES];
    uint32_t core[RT_SCHED_MAX_CLUSTERS][RT_SCHED_MAX_LANES];
    /* Per core: the last ticket dispatched and the last one reaped; what
     * runs in between is task[rt_sched_slot(s, core, ticket)]. A MIX
     * block holds its whole cluster: lanes_left counts its lanes running. */
    uint32_t sent[RT_SCHED_MAX_CORES];
    uint32_t reaped[RT_SCHED_MAX_CORES];
    uint32_t first[RT_SCHED_MAX_CORES]; /* `sent` at launch: moved once the core ran work */
    uint32_t slot_base[RT_SCHED_MAX_CORES];
    uint32_t slot_mask; /* slots per core - 1 */
    uint64_t task[RT_SCHED_SLOTS];
    uint8_t lane[RT_SCHED_SLOTS];
    uint8_t lanes_left[RT_SCHED_MAX_CLUSTERS];
    bool mix_cluster[RT_SCHED_MAX_CLUSTERS];
    /* Tracing: NULL when off. Per queued payload, the record of its run. */
    rt_trace_writer *trace;
    sp_trace_record *slice[RT_SCHED_SLOTS];
    /* Timeouts: 0 = none. `now` is a coarse clock refreshed when the thread
     * checks timeouts (idle, or every 1024 passes), so dispatch costs no
     * clock read. Per core: when its oldest unfinished payload became the
     * oldest (it starts then, or as soon as the core gets the CPU), and
     * whether that one was interrupted already (true) or is past its wall
     * time and watched by its core's CPU time (RT_SCHED_CPU_WATCH, from
     * cpu_at, rechecked at cpu_check: rt_sched_cpu_short). */
    uint64_t timeout_ns;
    uint64_t now;
    uint32_t passes;
    uint64_t started[RT_SCHED_MAX_CORES];
    uint8_t interrupted[RT_SCHED_MAX_CORES]; /* 0, true, or RT_SCHED_CPU_WATCH */
    bool abandoned[RT_SCHED_MAX_CORES];
    /* CPU watch: the core's CPU clock when it began; then when to look
     * again (CPU watch) or, once interrupted, when to give up on it. */
    uint64_t cpu_at[RT_SCHED_MAX_CORES];
    uint64_t cpu_check[RT_SCHED_MAX_CORES];
    uint64_t wake_by; /* a runtime's own deadline for the idle wait (0: none) */
    /* Following (hooks->follow): per core, whether its last queued task
     * may still have a consumer to queue behind it, the runtime's cursor
     * in that task's consumers, and the pass that last found none there
     * (asked again at the next pass, not at every level of this one) or,
     * for RT_FOLLOW_AFTER_FINISH, the chip event then (asked again once it
     * moved: some payload finished); tasks this thread queued so. */
    bool follow_open[RT_SCHED_MAX_CORES];
    bool follow_after_fin[RT_SCHED_MAX_CORES];
    uint32_t follow_at[RT_SCHED_MAX_CORES];
    uint32_t follow_none[RT_SCHED_MAX_CORES];
    uint32_t pass_no;
    uint32_t pass_event; /* the chip event when this pass began */
    uint64_t chained;
    /* Cores with payloads posted in this pass and not rung yet: the pass
     * rings each once at its end (sp_chip_ring), so a core that takes
     * several payloads costs one fenced doorbell store. */
    bool unrung[RT_SCHED_MAX_CORES];
    uint32_t ring[RT_SCHED_MAX_CORES];
    uint32_t ring_count;
    /* The queue bound (rt_sched_cap): per core, a running estimate of its
     * payloads' run time (ns; 0: none measured yet) and since when it has
     * had work without a break (when it was handed work while empty, or
     * the last reap that left it some). The clock is read at most once a
     * pass (`pass_ns`, 0 until read), by a reap that found finished work
     * or a dispatch to an empty core; never per task. `clock_ns` is
     * sp_now_ns (a test may drive its own); `queue_ns` the bound.
     * `any_ns`: the estimate last updated on any core, for a core that
     * has none yet. */
    uint64_t (*clock_ns)(void);
    uint64_t queue_ns;
    uint64_t pass_ns;
    uint64_t any_ns;
    uint64_t late_ns; /* rt_sched_cap, rt_sched_note_runs */
    uint64_t wake_ns;
    /* Per core: the last fill left it short of the depth by the bound
     * while there may have been ready work for it. */
    bool capped[RT_SCHED_MAX_CORES];
    /* Per core, rt_sched_cap as of this pass's reaps: the fill's levels
     * read it without a division each. */
    uint32_t cap[RT_SCHED_MAX_CORES];
    /* Per core: busy_from is when it was handed work while empty (its
     * thread may have to be woken and get a CPU first). */
    bool from_empty[RT_SCHED_MAX_CORES];
    uint64_t run_ns[RT_SCHED_MAX_CORES];
    uint64_t busy_from[RT_SCHED_MAX_CORES];
} rt_sched;

/* How long an interrupted kernel has to answer before its core is
 * abandoned (sp_chip_core_abandon): the timeout again, within [0.5 s, 5 s]
 * — enough for a thread on a loaded machine to get the CPU it needs to
 * take the signal. */
static inline uint64_t rt_sched_grace_ns(uint64_t timeout_ns)
{
    const uint64_t lo = 500ull * 1000 * 1000, hi = 5000ull * 1000 * 1000;
    return timeout_ns < lo ? lo : timeout_ns > hi ? hi : timeout_ns;
}

static inline uint32_t rt_sched_next_ticket(uint32_t t)
{
    return (t + 1) & SP_CHIP_TICKET_MASK;
}

/* The slot of `core`'s ticket t (tickets wrap at a power of two, and so
 * do a core's slots). */
static inline uint32_t rt_sched_slot(const rt_sched *s, uint32_t core, uint32_t t)
{
    return s->slot_base[core] + (t & s->slot_mask);
}

/* Payloads dispatched to `core` and not reaped yet. */
static inline uint32_t rt_sched_inflight(const rt_sched *s, uint32_t core)
{
    return (s->sent[core] - s->reaped[core]) & SP_CHIP_TICKET_MASK;
}

/* The pass's clock: read once, when first needed. */
static inline uint64_t rt_sched_pass_clock(rt_sched *s)
{
    if (!s->pass_ns) {
        s->pass_ns = s->clock_ns();
        if (s->pass_ns > s->now)
            s->now = s->pass_ns; /* a fresher coarse clock for the timeouts too */
    }
    return s->pass_ns;
}

/* How many payloads `core` may hold (the running one included): the
 * chip's depth while its payloads are short or not measured yet (on this
 * core or, lacking that, on any); else as many as fit the bound of
 * expected run time behind the running one — at least one, so the core
 * goes from one to the next without a round trip, and at most the depth.
 * The bound is `queue_ns` plus twice what a core that runs dry has cost
 * lately, at worst (a queued run that fits it only in part counts): the
 * time a core handed work while empty takes to start (`wake_ns`) and the
 * time this scheduler takes to see a core ran dry (`late_ns`). On a loaded
 * machine both are milliseconds (a woken thread waits for a CPU), and a
 * queue that holds less leaves the core idle for longer than a queued
 * successor would strand work. */
static inline uint32_t rt_sched_cap(const rt_sched *s, uint32_t core)
{
    uint64_t run = s->run_ns[core] ? s->run_ns[core] : s->any_ns;
    if (!run || s->depth <= 2)
        return s->depth;
    uint64_t bound = s->queue_ns + 2 * (s->late_ns + s->wake_ns);
    uint64_t fit = 1 + (bound + run - 1) / run;
    return fit < 2 ? 2 : fit > s->depth ? s->depth : (uint32_t)fit;
}

/* `core` finished n payloads by `now`; `busy` whether it still holds some.
 * It has had work without a break since busy_from. If it was reaped busy
 * then and now, (now - busy_from) / n is its mean run time. Otherwise the
 * interval holds more than n runs: the time its thread took to start after
 * it was handed work while empty (woken, and on a loaded machine waiting
 * milliseconds for a CPU), and if it ran dry, the time it sat idle before
 * this reap — and if the bound held ready work back from it and it sat
 * dry longer than `queue_ns`, the response missed a queued run more. What
 * it exceeds n expected runs by is a sample of what a dry core costs,
 * which a queue must cover (rt_sched_cap): of `wake_ns` if the interval
 * began at a hand-over to an empty core, else of `late_ns`. Such an
 * interval lowers the run-time estimate, never raises it (a late scheduler
 * must not make short tasks look long). The run time moves a quarter of
 * the way to each sample, a sample counting at most twice the estimate
 * (one preempted kernel does not make short tasks look long either); the
 * costs hold their peak, fading by 1/8 at each sample below it (their
 * tail is what idles a core, not their mean). */
static inline void rt_sched_note_runs(rt_sched *s, uint32_t core, uint32_t n, uint64_t now,
                                      bool busy)
{
    uint64_t from = s->busy_from[core];
    bool empty = s->from_empty[core], pure = busy && !empty;
    if (busy) {
        s->busy_from[core] = now;
        s->from_empty[core] = false;
    }
    if (!from || now <= from || !n)
        return;
    uint64_t took = now - from, sample = took / n, run = s->run_ns[core];
    if (!pure && run) {
        uint64_t expected = run * n;
        uint64_t late = took > expected ? took - expected : 0;
        if (!busy && s->capped[core] && late > s->queue_ns)
            late += run; /* it sat dry: the response missed a queued run too */
        uint64_t *peak = empty ? &s->wake_ns : &s->late_ns;
        *peak = late > *peak - *peak / 8 ? late : *peak - *peak / 8;
    }
    if (!run)
        run = sample ? sample : 1;
    else if (pure || sample < run) {
        if (sample > 2 * run)
            sample = 2 * run; /* a kernel that lost its CPU a while is one sample */
        run = run - run / 4 + sample / 4 + 1;
    }
    s->run_ns[core] = s->any_ns = run;
}

/* SP_OK if the pass can drive `chip`: at most RT_SCHED_MAX_CLUSTERS
 * clusters of 1..RT_SCHED_MAX_LANES lanes, each an AIC or AIV core;
 * else SP_EGEOMETRY (the launch fails before anything runs). */
static inline int rt_sched_geometry_check(const sp_chip *chip)
{
    const sp_geometry *g = sp_chip_geometry(chip);
    if (!g || g->clusters > RT_SCHED_MAX_CLUSTERS || g->lanes < 1 || g->lanes > RT_SCHED_MAX_LANES)
        return SP_EGEOMETRY;
    for (uint32_t l = 0; l < g->lanes; l++)
        if (g->lane_type[l] != SP_CORE_AIC && g->lane_type[l] != SP_CORE_AIV)
            return SP_EGEOMETRY;
    return SP_OK;
}

/* Set up scheduler thread `ti` of `tn` over `chip` (rt_sched_geometry_check
 * passed). */
static inline void rt_sched_init(rt_sched *s, sp_chip *chip, uint32_t ti, uint32_t tn)
{
    const sp_geometry *g = sp_chip_geometry(chip);
    s->chip = chip;
    s->clusters = g->clusters;
    s->lanes = g->lanes;
    for (uint32_t l = 0; l < s->lanes; l++) {
        bool aic = g->lane_type[l] == SP_CORE_AIC;
        s->lane_queue[l] = aic ? SP_Q_AIC : SP_Q_AIV;
        s->lane_task[l] = aic ? SP_LANE_AIC : SP_LANE_AIV0;
    }
    uint32_t owned = 0;
    for (uint32_t c = ti; c < s->clusters; c += tn)
        owned += s->lanes;
    uint32_t per_core = RT_SCHED_QUEUE_MAX;
    while (per_core > 1 && per_core * owned > RT_SCHED_SLOTS)
        per_core /= 2;
    s->slot_mask = per_core - 1;
    owned = 0;
    for (uint32_t c = ti; c < s->clusters; c += tn)
        for (uint32_t l = 0; l < s->lanes; l++) {
            uint32_t k = s->core[c][l] = sp_chip_cluster_core(chip, c, l);
            s->slot_base[k] = per_core * owned++;
        }
    s->thread_index = ti;
    s->thread_count = tn;
    s->depth = sp_chip_core_queue_depth(chip);
    if (s->depth > per_core)
        s->depth = per_core;
    if (s->depth < 1)
        s->depth = 1;
    /* The chip's tickets carry on from the previous launch on these cores. */
    for (uint32_t i = 0; i < s->lanes * s->clusters && i < RT_SCHED_MAX_CORES; i++) {
        s->sent[i] = s->reaped[i] = s->first[i] = sp_chip_core_finished(chip, i);
        s->interrupted[i] = s->abandoned[i] = false;
        s->follow_open[i] = false;
        s->follow_after_fin[i] = false;
        s->follow_none[i] = 0;
        s->unrung[i] = false;
        s->run_ns[i] = s->busy_from[i] = 0;
        s->capped[i] = s->from_empty[i] = false;
    }
    s->ring_count = 0;
    s->clock_ns = sp_now_ns;
    s->queue_ns = RT_SCHED_QUEUE_NS;
    s->pass_ns = s->any_ns = s->late_ns = s->wake_ns = 0;
    s->pass_no = 1;
    s->chained = 0;
    for (uint32_t c = 0; c < RT_SCHED_MAX_CLUSTERS; c++) {
        s->lanes_left[c] = 0;
        s->mix_cluster[c] = false;
    }
    s->trace = NULL;
    s->timeout_ns = 0;
    s->wake_by = 0;
    s->now = sp_now_ns();
    s->passes = 0;
}

/* Tracing: open a slice record for what `core` is about to run and ask the
 * core to time it. Off the common path: only called when tracing. */
static inline sp_trace_record *rt_sched_trace_dispatch(rt_sched *s, const rt_sched_hooks *h,
                                                       void *rt, uint32_t core, uint64_t task,
                                                       uint32_t block, int lane, sp_chip_payload *p)
{
    sp_trace_record *r = rt_trace_next(s->trace);
    if (!r)
        return NULL;
    r->kind = SP_TRACE_SLICE;
    r->task = task;
    r->block = block;
    r->core = (uint16_t)core;
    r->lane = (uint8_t)lane;
    h->describe(rt, task, lane, r);
    p->flags |= SP_PAYLOAD_TIMED;
    r->dispatch_ns = sp__ticks();
    return r;
}

/* True while any core this thread owns still has payloads in flight. */
static inline bool rt_sched_busy(const rt_sched *s)
{
    for (uint32_t c = s->thread_index; c < s->clusters; c += s->thread_count)
        for (uint32_t l = 0; l < s->lanes; l++)
            if (rt_sched_inflight(s, s->core[c][l]))
                return true;
    return false;
}

/* Queue (task, block) on `core` with payload `flags`; false if the lane
 * has nothing to run. Posted only: the pass rings it (rt_sched_ring). */
static inline bool rt_sched_dispatch_flags(rt_sched *s, const rt_sched_hooks *h, void *rt,
                                           uint32_t core, uint64_t task, uint32_t block, int lane,
                                           uint32_t flags)
{
    sp_chip_payload p;
    if (!h->payload(rt, task, block, lane, &p))
        return false;
    p.flags |= flags;
    uint32_t slot = rt_sched_slot(s, core, rt_sched_next_ticket(s->sent[core]));
    if (s->trace) {
        sp_trace_record *r = rt_sched_trace_dispatch(s, h, rt, core, task, block, lane, &p);
        if (r && (flags & SP_PAYLOAD_CHAINED))
            r->flags |= SP_TRACE_F_CHAINED;
        s->slice[slot] = r;
    }
    if (!rt_sched_inflight(s, core)) {
        s->busy_from[core] = rt_sched_pass_clock(s);
        s->from_empty[core] = true;
        s->started[core] = s->now;
        s->interrupted[core] = s->abandoned[core] = false;
    }
    s->task[slot] = task;
    s->lane[slot] = (uint8_t)lane;
    s->follow_open[core] = h->follow != NULL;
    s->follow_after_fin[core] = false;
    s->follow_at[core] = 0;
    s->follow_none[core] = 0; /* a new tail: ask about it in this pass too */
    s->sent[core] = sp_chip_post(s->chip, core, &p);
    if (!s->unrung[core]) {
        s->unrung[core] = true;
        s->ring[s->ring_count++] = core;
    }
    return true;
}

/* Start what this pass posted: each core's doorbell once. */
static inline void rt_sched_ring(rt_sched *s)
{
    for (uint32_t i = 0; i < s->ring_count; i++) {
        sp_chip_ring(s->chip, s->ring[i]);
        s->unrung[s->ring[i]] = false;
    }
    s->ring_count = 0;
}

static inline bool rt_sched_dispatch(rt_sched *s, const rt_sched_hooks *h, void *rt, uint32_t core,
                                     uint64_t task, uint32_t block, int lane)
{
    return rt_sched_dispatch_flags(s, h, rt, core, task, block, lane, 0);
}

/* Whether to ask hooks->follow about `core`'s last task in this pass: a
 * new tail at once; one that found none, at the next pass, or (after
 * RT_FOLLOW_AFTER_FINISH) once the chip event moved. */
static inline bool rt_sched_follow_due(const rt_sched *s, uint32_t core)
{
    /* A new tail has follow_none 0, which no pass number is. */
    if (!s->follow_open[core])
        return false;
    return s->follow_after_fin[core] ? s->follow_none[core] != s->pass_event
                                     : s->follow_none[core] != s->pass_no;
}

/* Queue a consumer of `core`'s last queued task (unfinished: the core has
 * payloads in flight) right behind it, on lane l of its cluster. Chained:
 * it does not run if that task faults. */
static inline bool rt_sched_follow(rt_sched *s, const rt_sched_hooks *h, void *rt, uint32_t core,
                                   uint32_t l)
{
    if (h->failed(rt)) {
        s->follow_open[core] = false;
        return false;
    }
    uint64_t tail = s->task[rt_sched_slot(s, core, s->sent[core])], next;
    int lane = s->lane_task[l];
    int r = h->follow(rt, tail, s->lane_queue[l], lane, &s->follow_at[core], &next);
    if (r != RT_FOLLOW_FOUND) {
        s->follow_open[core] = r == RT_FOLLOW_LATER || r == RT_FOLLOW_AFTER_FINISH;
        s->follow_after_fin[core] = r == RT_FOLLOW_AFTER_FINISH;
        s->follow_none[core] = r == RT_FOLLOW_AFTER_FINISH ? s->pass_event : s->pass_no;
        return false;
    }
    /* The hook checked the lane has a kernel: this dispatch happens. */
    rt_sched_dispatch_flags(s, h, rt, core, next, 0, lane, SP_PAYLOAD_CHAINED);
    s->chained++;
    return true;
}

/* Pop a ready block to run; once the run has failed, blocks are finished
 * here without running (the graph drains, the run ends with its error). */
static inline bool rt_sched_pop(const rt_sched_hooks *h, void *rt, int q, uint64_t *task,
                                uint32_t *block)
{
    while (h->pop(rt, q, task, block)) {
        if (!h->failed(rt))
            return true;
        h->block_done(rt, *task);
    }
    return false;
}

#define RT_SCHED_CPU_WATCH 2
/* A kernel blocked in the OS uses no CPU: past this many timeouts of wall
 * time it is stopped whatever its CPU time. */
#define RT_SCHED_WALL_CAP 16

/* Core k's oldest kernel has run the timeout in wall-clock time: true
 * (with *expiry, when to look again) while its core thread has not yet had
 * the timeout in CPU time since then, so a kernel that was only waiting
 * for a CPU (other processes, on a loaded machine) is not stopped for it.
 * A kernel is stopped after its first timeout of wall time plus a timeout
 * of its core's CPU time, or at RT_SCHED_WALL_CAP timeouts of wall time.
 * Only kernels already past the timeout get here: a healthy kernel pays
 * nothing, and a slow one one CPU-clock read per check. */
static inline bool rt_sched_cpu_short(rt_sched *s, uint32_t k, uint64_t *expiry)
{
    const uint64_t t = s->timeout_ns;
    uint64_t cap = t <= UINT64_MAX / (2 * RT_SCHED_WALL_CAP) ? s->started[k] + RT_SCHED_WALL_CAP * t
                                                             : UINT64_MAX;
    if (s->now >= cap)
        return false;
    uint64_t cpu = sp_chip_core_cpu_ns(s->chip, k);
    if (!cpu)
        return false; /* no CPU clock for this core: wall-clock only */
    if (s->interrupted[k] != RT_SCHED_CPU_WATCH) {
        s->interrupted[k] = RT_SCHED_CPU_WATCH;
        s->cpu_at[k] = cpu;
    }
    uint64_t used = cpu - s->cpu_at[k];
    if (used >= t)
        return false;
    /* It needs at least the CPU time it lacks, in wall time too. */
    uint64_t again = s->now + (t - used);
    s->cpu_check[k] = *expiry = again < cap ? again : cap;
    return true;
}

/* Interrupt kernels that ran past the timeout, and abandon the cores of
 * those that did not answer within the grace period. Returns the earliest
 * time (sp_now_ns) another one could expire, or 0 if nothing can. */
static inline uint64_t rt_sched_timeouts(rt_sched *s)
{
    if (!s->timeout_ns)
        return 0;
    s->now = sp_now_ns();
    uint64_t next = 0;
    for (uint32_t c = s->thread_index; c < s->clusters; c += s->thread_count) {
        for (uint32_t l = 0; l < s->lanes; l++) {
            uint32_t k = s->core[c][l];
            if (!rt_sched_inflight(s, k) || s->abandoned[k])
                continue;
            uint64_t expiry;
            if (s->interrupted[k] == true) {
                expiry = s->cpu_check[k]; /* the end of its grace period */
                if (s->now >= expiry) {
                    /* Its reap reports the fault (SP_FAULT_ABANDONED). */
                    s->abandoned[k] = true;
                    sp_chip_core_abandon(s->chip, k, rt_sched_next_ticket(s->reaped[k]));
                    continue;
                }
            } else {
                expiry = s->interrupted[k] == RT_SCHED_CPU_WATCH ? s->cpu_check[k]
                                                                 : s->started[k] + s->timeout_ns;
                if (s->now >= expiry && !rt_sched_cpu_short(s, k, &expiry)) {
                    s->interrupted[k] = true;
                    sp_chip_core_interrupt(s->chip, k, rt_sched_next_ticket(s->reaped[k]));
                    s->cpu_check[k] = expiry = s->now + rt_sched_grace_ns(s->timeout_ns);
                }
            }
            if (!next || expiry < next)
                next = expiry;
        }
    }
    return next;
}

/* Reap what `core` (of cluster c) finished. Returns true if anything had. */
static inline bool rt_sched_reap(rt_sched *s, const rt_sched_hooks *h, void *rt, uint32_t c,
                                 uint32_t core)
{
    uint32_t fin = sp_chip_core_finished(s->chip, core);
    if (fin == s->reaped[core])
        return false;
    rt_sched_note_runs(s, core, (fin - s->reaped[core]) & SP_CHIP_TICKET_MASK,
                       rt_sched_pass_clock(s), fin != s->sent[core]);
    while (s->reaped[core] != fin) {
        uint32_t t = s->reaped[core] = rt_sched_next_ticket(s->reaped[core]);
        uint32_t slot = rt_sched_slot(s, core, t);
        uint64_t task = s->task[slot];
        if (s->trace && s->slice[slot])
            sp_chip_core_times(s->chip, core, t, &s->slice[slot]->start_ns,
                               &s->slice[slot]->end_ns);
        int sig = sp_chip_core_fault(s->chip, core, t);
        if (sig) {
            uint64_t ran = sp_now_ns() - s->started[core];
            h->fault(rt, task, s->lane[slot], core, sig, ran);
        }
        if (!s->mix_cluster[c] || --s->lanes_left[c] == 0) {
            s->mix_cluster[c] = false;
            h->block_done(rt, task);
        }
        /* The next queued payload starts now (coarse clock: see `now`). */
        s->started[core] = s->now;
        s->interrupted[core] = s->abandoned[core] = false;
    }
    return true;
}

/* True if no core of cluster c has anything in flight. */
static inline bool rt_sched_cluster_idle(const rt_sched *s, uint32_t c)
{
    for (uint32_t l = 0; l < s->lanes; l++)
        if (rt_sched_inflight(s, s->core[c][l]))
            return false;
    return true;
}

/* One pass over this thread's clusters: reap every core, then fill queues
 * breadth first — every core's first slot before anyone's second, so ready
 * work spreads over idle cores before it queues behind busy ones. Idle
 * cores are rung after the first level; the rest once, at the end. A core
 * with room whose last task has a consumer that may follow it takes that
 * consumer first: it is on the critical path, and its inputs are the
 * core's own last outputs. Returns true if anything happened. */
static inline bool rt_sched_pass(rt_sched *s, const rt_sched_hooks *h, void *rt)
{
    bool progress = false;
    const uint32_t C = s->clusters, L = s->lanes;
    if (++s->pass_no == 0) /* 0 is "never": skip it at the wrap */
        s->pass_no = 1;
    if (h->follow)
        s->pass_event = sp_chip_event_snapshot(s->chip);
    s->pass_ns = 0;
    for (uint32_t c = s->thread_index; c < C; c += s->thread_count)
        for (uint32_t l = 0; l < L; l++)
            progress |= rt_sched_reap(s, h, rt, c, s->core[c][l]);
    for (uint32_t c = s->thread_index; c < C; c += s->thread_count)
        for (uint32_t l = 0; l < L; l++)
            s->cap[s->core[c][l]] = rt_sched_cap(s, s->core[c][l]);
    bool more[SP_QUEUES] = {true, true, true, true};
    for (uint32_t level = 1; level <= s->depth; level++) {
        /* A core that may still take a follower at the next level; one
         * below its bound after this level (with none, the levels left
         * have nothing to fill: a 64-deep chip whose bound holds its cores
         * at 3 stops here, not after 64 levels). */
        bool followers = false, room = false;
        for (uint32_t c = s->thread_index; c < C; c += s->thread_count) {
            const uint32_t *cores = s->core[c];
            uint64_t task;
            uint32_t block;
            if (level == 1 && more[SP_Q_MIX] && rt_sched_cluster_idle(s, c)) {
                if (rt_sched_pop(h, rt, SP_Q_MIX, &task, &block)) {
                    /* Lane l of the cluster runs the task's lane-l kernel. */
                    s->mix_cluster[c] = true;
                    s->lanes_left[c] = 0;
                    for (uint32_t l = 0; l < L; l++)
                        if (rt_sched_dispatch(s, h, rt, cores[l], task, block, (int)l))
                            s->lanes_left[c]++;
                    if (!s->lanes_left[c]) { /* no lane had a kernel: done at once */
                        s->mix_cluster[c] = false;
                        h->block_done(rt, task);
                    }
                    progress = true;
                    continue;
                }
                more[SP_Q_MIX] = false;
            }
            if (s->mix_cluster[c])
                continue;
            /* Each lane takes a follower of its last task, or a block of
             * its core kind's queue. */
            for (uint32_t l = 0; l < L; l++) {
                int q = s->lane_queue[l];
                uint32_t k = cores[l], in = rt_sched_inflight(s, k), cap = s->cap[k];
                if (in >= cap)
                    continue; /* full for its payloads' run time */
                if (in >= level) {
                    /* Not tried yet: it may take one at a later level. */
                    followers |= h->follow && rt_sched_follow_due(s, k);
                    room = true;
                    continue;
                }
                room |= in + 1 < cap; /* if it takes one now */
                if (h->follow && in && rt_sched_follow_due(s, k) &&
                    rt_sched_follow(s, h, rt, k, l)) {
                    progress = followers = true;
                    continue;
                }
                if (!more[q])
                    continue;
                if (!rt_sched_pop(h, rt, q, &task, &block)) {
                    more[q] = false;
                    continue;
                }
                rt_sched_dispatch(s, h, rt, k, task, block, s->lane_task[l]);
                progress = true;
                followers |= h->follow != NULL;
            }
        }
        /* Level 1 fed idle cores: start them now; the cores fed behind
         * running work are rung once, at the end. */
        if (level == 1)
            rt_sched_ring(s);
        if ((!more[SP_Q_AIC] && !more[SP_Q_AIV] && !more[SP_Q_MIX] && !followers) || !room)
            break;
    }
    /* Which cores the bound kept short while their queue may still hold
     * ready work (never found empty this pass): see rt_sched_note_runs. */
    for (uint32_t c = s->thread_index; c < C; c += s->thread_count)
        for (uint32_t l = 0; l < L; l++) {
            uint32_t k = s->core[c][l], in = rt_sched_inflight(s, k);
            s->capped[k] = in < s->depth && in >= s->cap[k] && more[s->lane_queue[l]];
        }
    rt_sched_ring(s);
    if (s->timeout_ns && (++s->passes & 1023) == 0)
        rt_sched_timeouts(s);
    return progress;
}

/* Whether a core this thread owns sits idle while cores of its kind have
 * run work this launch: the graph feeds that kind, and the next ready block
 * for it may be released by any finish (paged attention: an AIV softmax
 * waits on the AIC's qk while the AIC queue is still full). A core the
 * queue bound keeps short (rt_sched_cap) counts as idle while it holds
 * only its running payload, below the bound: a finish elsewhere that
 * releases its next block would otherwise wait until it ran dry. A kind that never ran here (the
 * AIC of an AIV-only graph) does not count. */
static inline bool rt_sched_lane_starved(const rt_sched *s)
{
    bool used[SP_QUEUES] = {false}, idle[SP_QUEUES] = {false};
    for (uint32_t c = s->thread_index; c < s->clusters; c += s->thread_count)
        for (uint32_t l = 0; l < s->lanes; l++) {
            uint32_t k = s->core[c][l], q = s->lane_queue[l];
            used[q] |= s->sent[k] != s->first[k];
            uint32_t in = rt_sched_inflight(s, k), cap = rt_sched_cap(s, k);
            idle[q] |= !in || (cap < s->depth && in < cap && in == 1);
        }
    return (used[SP_Q_AIC] && idle[SP_Q_AIC]) || (used[SP_Q_AIV] && idle[SP_Q_AIV]);
}

/* An idle scheduler's wait: for the chip event, or until the next kernel
 * could run past the timeout (then interrupt it). A pass that found nothing
 * to do left no core with room and ready work of its kind. If every core
 * the graph uses is busy, the wait is batched: a finish wakes it only when
 * it leaves its core's queue half empty (a core that runs dry always wakes
 * it) or by a notify (new ready work from elsewhere); finishes that leave a
 * core busy are reaped later, in one pass. If one of them is idle
 * (rt_sched_lane_starved), every finish wakes it: that finish may release
 * the idle core's next block, which would otherwise wait for another
 * core's queue to drain. */
static inline void rt_sched_idle_wait(rt_sched *s, uint32_t snapshot)
{
    uint64_t deadline = rt_sched_timeouts(s);
    if (s->wake_by && (!deadline || s->wake_by < deadline))
        deadline = s->wake_by;
    int rc = rt_sched_lane_starved(s) ? sp_chip_event_wait(s->chip, snapshot, deadline)
                                      : sp_chip_event_wait_batched(s->chip, snapshot, deadline);
    /* A wait the event ended needs no look now: the next idle wait looks
     * first (and every 1024 passes look). */
    if (deadline && rc == SP_ETIMEOUT)
        rt_sched_timeouts(s);
}

#endif
