/* The orchestrator thread of tensormap_and_ringbuffer. The orchestration
 * runs here, on the chip, against these ops while the schedulers dispatch:
 * a submit validates the task, waits for a free slot and heap room (the
 * back-pressure of the bounded rings), carves its outputs from the heap
 * ring, derives its producers through the TensorMap, links itself into each
 * unfinished producer's fan-out, and becomes ready at once if nothing is
 * pending. Slots and heap are reclaimed strictly in order behind the
 * retirement watermark. Everything here is device memory; only this thread
 * writes the orchestrator state, so it takes no locks. The publish half of
 * a submit (pins, room, holds, links, readiness: tmr_orch.h) is shared with
 * the replay driver (tmr_replay.c) and graph tasks; a recorded run's
 * recorder (tmr_record.c) hooks into it, the scopes, allocations and
 * control reads. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/fault.h"
#include "common/log.h"
#include "common/wait.h"
#include "runtime/device/orch_fatal.h"
#include "runtime/device/orch_guard.h"
#include "runtime/device/orch_ops.h"
#include "runtime/tensormap_and_ringbuffer/device/tmr_device.h"
#include "runtime/tensormap_and_ringbuffer/device/tmr_orch.h"
#include "runtime/tensormap_and_ringbuffer/device/tmr_queue.h"
#include "runtime/tensormap_and_ringbuffer/device/tmr_replay.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

#define ALIGN64(x) (((x) + 63) & ~(uint64_t)63)

static int orch_fail(tmr_orch *o, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int orch_fail(tmr_orch *o, int status, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rt_subgraph_note(&o->subgraph, msg, sizeof msg);
    tmr_fail(o->ctl, status, msg);
    return status;
}

static int orch_error(tmr_orch *o)
{
    return atomic_load_explicit(&o->ctl->error, memory_order_acquire);
}

int tmr_orch_error(tmr_orch *o)
{
    return orch_error(o);
}

/* sp_orch is single-threaded: a call from a thread other than the one
 * running the entry (this orchestrator thread) is refused before it
 * touches the orchestrator's state, and fails the run by name. One
 * pthread_self() (a register read) per call. */
static bool refuse_foreign(tmr_orch *o, const char *op)
{
    if (pthread_equal(pthread_self(), o->thread))
        return false;
    char msg[160];
    snprintf(msg, sizeof msg,
             "sp_orch %s called from a thread other than the orchestration's: sp_orch is "
             "single-threaded",
             op);
    tmr_fail(o->ctl, SP_EORCH_THREAD, msg);
    return true;
}

/* ---- retirement and the heap ring ------------------------------------------ */

/* Retire the oldest task if nobody holds it any more: its slot and the heap
 * up to its outputs' end become free. Returns false if it is still held. */
static bool retire_one(tmr_orch *o)
{
    tmr_ctl *c = o->ctl;
    /* Relaxed: only this thread writes retired and submitted. */
    int64_t r = atomic_load_explicit(&c->retired, memory_order_relaxed);
    int64_t s = atomic_load_explicit(&c->submitted, memory_order_relaxed);
    if (r == s)
        return false;
    tmr_task *t = tmr_slot(c, r);
    /* Acquire: the completer's release of its last reference orders all of
     * its writes (and its kernels') before the slot is reused. */
    if (atomic_load_explicit(&t->refs, memory_order_acquire) != 0)
        return false;
    tmr_heap_ring_release(&o->heap, t->heap_end, r + 1 == s);
    /* The argument ring's oldest live extent is the next task's, where it
     * starts: not this one's end, since the ring wraps early (fit_low) and
     * the space past this end may be free. */
    uint64_t next_at =
        r + 1 == s ? 0 : (uint64_t)((char *)tmr_slot(c, r + 1)->tensors - c->arg_base);
    tmr_heap_ring_release(&o->argring, next_at, r + 1 == s);
    atomic_store_explicit(&t->state, TMR_SLOT_FREE, memory_order_relaxed);
    atomic_store_explicit(&c->retired, r + 1, memory_order_release);
    rt_tensormap_retire_below(&o->map, r + 1);
    return true;
}

/* How the orchestrator waits for completions: no spinning (the threads it
 * waits for need the CPUs), a short yield, then park until a completer
 * bumps orch_word. */
static const sp__wait_policy orch_wait_policy = {.spin_ns = 0, .yield_ns = 10000};

/* Sleep until `completed` reaches `target` (<= submitted) or the deadline
 * passes. Dekker with complete_task (tmr_sched.c): this seq_cst store of
 * orch_wake_at, then a seq_cst look at `completed`; the completer's seq_cst
 * increment, then a seq_cst look at orch_wake_at. Either this thread sees
 * the completion or the completer sees the target and bumps the word. */
static int orch_wait_completed(tmr_orch *o, int64_t target, uint64_t deadline)
{
    tmr_ctl *c = o->ctl;
    int timed_out = 0;
    uint32_t snap = sp__waitword_load(&c->orch_word);
    atomic_store_explicit(&c->orch_wake_at, target, memory_order_seq_cst);
    if (atomic_load_explicit(&c->completed, memory_order_seq_cst) < target)
        sp__waitword_wait_ne(&c->orch_word, snap, &orch_wait_policy, deadline, &timed_out);
    /* Relaxed: a completer that still sees the old target only bumps the
     * word once more, which costs this thread one spare look. */
    atomic_store_explicit(&c->orch_wake_at, 0, memory_order_relaxed);
    return timed_out ? SP_ETIMEOUT : SP_OK;
}

/* Completions the orchestrator sleeps through when it is short of room:
 * an eighth of the window, so it wakes a few times per window, not once
 * per task, while the rest of the window keeps the schedulers busy. */
static int64_t orch_wait_batch(const tmr_ctl *c)
{
    return c->window >= 16 ? c->window / 8 : 1;
}

typedef enum { WAIT_SLOT, WAIT_ARGS, WAIT_HEAP, WAIT_MAP, WAIT_STATIC } wait_kind;

static bool ring_empty(tmr_orch *o)
{
    /* Relaxed: only this thread writes both counters. */
    return atomic_load_explicit(&o->ctl->retired, memory_order_relaxed) ==
           atomic_load_explicit(&o->ctl->submitted, memory_order_relaxed);
}

static bool room_for(tmr_orch *o, wait_kind kind, uint64_t need)
{
    tmr_ctl *c = o->ctl;
    int64_t s = atomic_load_explicit(&c->submitted, memory_order_relaxed);
    int64_t r = atomic_load_explicit(&c->retired, memory_order_relaxed);
    switch (kind) {
    case WAIT_SLOT:
        return s - r < (int64_t)c->window;
    case WAIT_ARGS:
        return tmr_heap_ring_fit_low(&o->argring, need, r == s) != SP_HEAP_RING_NONE;
    case WAIT_HEAP:
        return tmr_heap_ring_fit(&o->heap, need, r == s) != SP_HEAP_RING_NONE;
    case WAIT_MAP:
        if ((uint32_t)(o->map.capacity - o->map.used) >= need)
            return true;
        rt_tensormap_sweep(&o->map);
        return (uint32_t)(o->map.capacity - o->map.used) >= need;
    case WAIT_STATIC:
        /* The ring must not reach into [need, heap end): empty or below it. */
        return tmr_heap_ring_below(&o->heap, need, r == s);
    }
    return false;
}

/* Back-pressure: wait until there is room, retiring as tasks are released.
 * If nothing is in flight and there is still no room, nothing ever will
 * free it: a structural deadlock, reported at once by name. The backstop
 * deadline catches what the structure cannot see (a hung kernel). */
static int wait_for_room(tmr_orch *o, wait_kind kind, uint64_t need)
{
    tmr_ctl *c = o->ctl;
    /* Retire lazily, only when room is short: a task's outputs stay valid
     * for as long as the rings can afford. */
    if (room_for(o, kind, need))
        return SP_OK;
    uint64_t deadline = 0; /* read the clock only if it comes to a wait */
    for (;;) {
        /* Oldest first, and no more than needed: the newest outputs are the
         * ones the orchestration is most likely to pass on. */
        bool room = false;
        while (!(room = room_for(o, kind, need)) && retire_one(o))
            ;
        if (room)
            return SP_OK;
        int64_t s = atomic_load_explicit(&c->submitted, memory_order_relaxed);
        int64_t done = atomic_load_explicit(&c->completed, memory_order_acquire);
        if (done == s) {
            /* Everything finished: whatever can retire now is all there is. */
            while (!(room = room_for(o, kind, need)) && retire_one(o))
                ;
            if (room)
                return SP_OK;
            /* Nothing runs and nothing can retire: only open scopes hold tasks. */
            int64_t r = atomic_load_explicit(&c->retired, memory_order_relaxed);
            /* The argument ring is the window's too: its room is the slots'. */
            bool window = kind == WAIT_SLOT || kind == WAIT_MAP || kind == WAIT_ARGS;
            const char *what = kind == WAIT_ARGS ? " (its argument ring)" : "";
            if (window && o->scope_depth)
                return orch_fail(o, SP_ESCOPE_DEADLOCK,
                                 "task %lld: the %u-slot window%s is full of %lld completed tasks "
                                 "held by %u open scope(s)",
                                 (long long)s, c->window, what, (long long)(s - r), o->scope_depth);
            if (window)
                return orch_fail(o, SP_EWINDOW_DEADLOCK,
                                 "task %lld: the %u-slot window%s is full of %lld completed tasks "
                                 "whose outputs are still needed",
                                 (long long)s, c->window, what, (long long)(s - r));
            return orch_fail(o, SP_EHEAP_DEADLOCK,
                             "task %lld: %llu heap bytes needed; the %llu-byte ring is held by "
                             "%lld completed tasks (%u open scope(s), and the task's own inputs)",
                             (long long)s, (unsigned long long)need,
                             (unsigned long long)o->heap.size, (long long)(s - r), o->scope_depth);
        }
        if (!deadline)
            deadline = sp_now_ns() + c->backstop_ns;
        int64_t target = done + orch_wait_batch(c);
        if (orch_wait_completed(o, target < s ? target : s, deadline) == SP_ETIMEOUT)
            return orch_fail(o, SP_ESTALL,
                             "task %lld: no task finished in %llu ms while the orchestrator "
                             "waited for room",
                             (long long)s, (unsigned long long)(c->backstop_ns / 1000000));
    }
}

/* ---- submit ------------------------------------------------------------------ */

/* Hold producer `p` (keep it from retiring until this task completes) and,
 * for a dependency, link into its fan-out unless it already finished.
 * Returns true if it linked: the producer's completer now counts us down
 * (the caller counted every edge into fanin_left beforehand). */
static bool hold_producer(tmr_ctl *c, tmr_task *t, int64_t p, bool edge)
{
    tmr_hold *e = &t->holds[t->hold_count++];
    tmr_task *pt = tmr_slot(c, p);
    e->producer = p;
    e->consumer = t->id;
    /* Relaxed: the orchestrator is the only one to retire, and only on a
     * zero count it reads with acquire after completers' releases. */
    atomic_fetch_add_explicit(&pt->refs, 1, memory_order_relaxed);
    if (!edge)
        return false;
    uint64_t node = tmr_hold_node(c, e);
    uint64_t h = atomic_load_explicit(&pt->fanout_head, memory_order_acquire);
    for (;;) {
        if (h & TMR_FANOUT_CLOSED)
            return false; /* it finished before we linked: nothing to wait for */
        e->next = h;
        if (atomic_compare_exchange_weak_explicit(&pt->fanout_head, &h, (node + 1) << 1,
                                                  memory_order_release, memory_order_acquire))
            return true;
    }
}

/* True if the task holds a producer no younger than `p` (which then
 * cannot retire before the task completes either). */
static bool holds_at_or_before(const tmr_task *t, int64_t p)
{
    for (uint16_t i = 0; i < t->hold_count; i++)
        if (t->holds[i].producer <= p)
            return true;
    return false;
}

/* ---- the publish half: shared by submit, replay and graph tasks ------------ */

void tmr_unpin(tmr_orch *o, tmr_pins *p)
{
    for (int k = 0; k < p->n; k++)
        atomic_fetch_sub_explicit(&tmr_slot(o->ctl, p->id[k])->refs, 1, memory_order_release);
    p->n = 0;
}

int tmr_pin(tmr_orch *o, tmr_pins *p, int64_t id, int arg, int64_t owner)
{
    tmr_ctl *c = o->ctl;
    int64_t retired = atomic_load_explicit(&c->retired, memory_order_relaxed);
    if (owner < retired) {
        tmr_unpin(o, p);
        return orch_fail(o, SP_ETENSOR_RETIRED,
                         "task %lld: argument %d was made by task %lld, retired (watermark "
                         "%lld) and its buffer reused",
                         (long long)id, arg, (long long)owner, (long long)retired);
    }
    for (int k = 0; k < p->n; k++)
        if (p->id[k] == owner)
            return SP_OK;
    p->id[p->n++] = owner;
    /* Relaxed: only this thread retires, and it is this thread. */
    atomic_fetch_add_explicit(&tmr_slot(c, owner)->refs, 1, memory_order_relaxed);
    return SP_OK;
}

int tmr_reserve(tmr_orch *o, tmr_pins *p, uint64_t need, uint32_t map_need, uint32_t tensors,
                uint32_t scalars, uint64_t *at)
{
    int rc;
    /* The extent as if the task held the most producers it may: the
     * real count is known only after the TensorMap lookups, and publish
     * gives the unused tail back (the ring's head is this carve's end). */
    uint64_t extent = tmr_extent_bytes(tensors, scalars, TMR_MAX_HOLDS + 1);
    if ((rc = wait_for_room(o, WAIT_SLOT, 0)) || (rc = wait_for_room(o, WAIT_ARGS, extent)) ||
        (rc = wait_for_room(o, WAIT_HEAP, need)) ||
        (map_need && (rc = wait_for_room(o, WAIT_MAP, map_need)))) {
        tmr_unpin(o, p);
        return rc;
    }
    /* Room for the extent was there and retiring for the heap only adds
     * to it. */
    o->arg_at = tmr_heap_ring_fit_low(&o->argring, extent, ring_empty(o));
    tmr_heap_ring_take(&o->argring, o->arg_at, extent);
    tmr_task *t = tmr_slot(o->ctl, atomic_load_explicit(&o->ctl->submitted, memory_order_relaxed));
    tmr_extent_place(o->ctl, t, o->arg_at, tensors, scalars);
    *at = tmr_heap_ring_fit(&o->heap, need, ring_empty(o));
    tmr_heap_ring_take(&o->heap, *at, need);
    return SP_OK;
}

void tmr_reserve_undo(tmr_orch *o, uint64_t heap_at)
{
    o->heap.head = heap_at;
    o->argring.head = o->arg_at;
}

int64_t tmr_publish(tmr_orch *o, tmr_task *t, const rt_dep_list *deps, tmr_pins *pins,
                    const uint16_t *scalar_src)
{
    tmr_ctl *c = o->ctl;
    int64_t id = t->id;
    int64_t retired = atomic_load_explicit(&c->retired, memory_order_relaxed);
    if (o->rec)
        tmr_record_task(o->rec, o, t, deps, scalar_src);
    t->scope_depth = (uint8_t)o->scope_depth;
    t->hold_count = 0;
    t->submit_ns = c->trace ? sp__ticks() : 0; /* traces only; rdtsc can trap in a VM */
    atomic_store_explicit(&t->fanout_head, 0, memory_order_relaxed);
    atomic_store_explicit(&t->next_block, 0, memory_order_relaxed);
    atomic_store_explicit(&t->blocks_left, t->block_num, memory_order_relaxed);
    atomic_store_explicit(&t->refs, 1u + (o->scope_depth ? 1u : 0u), memory_order_relaxed);
    atomic_store_explicit(&t->state, TMR_SLOT_PENDING, memory_order_relaxed);

    /* Producers still in the ring: hold them, and wait for those we depend on. */
    /* Count every edge (and the guard) up front, before the first link
     * publishes the slot to a completer: one store instead of an add per
     * edge, and one subtraction below for the guard and the edges that did
     * not link. Relaxed: the link's release CAS publishes it. */
    atomic_store_explicit(&t->fanin_left, 1u + deps->count, memory_order_relaxed);
    uint32_t linked = 0;
    for (uint32_t i = 0; i < deps->count; i++)
        if (deps->producer[i] >= retired)
            linked += hold_producer(c, t, deps->producer[i], true);
    /* A runtime-owned argument keeps its creator's buffer alive until we
     * finish. Tasks retire strictly in order, so one hold on the oldest
     * such creator keeps every newer one too, and a producer held above at
     * or before it already does: at most one hold, in the entry reserved
     * for it, however many producers the task has. */
    int64_t keep = INT64_MAX;
    for (int i = 0; i < t->tensor_count; i++) {
        int64_t p = t->tensors[i].owner_task;
        if (p != SP_NO_TASK && p != id && p >= retired && p < keep &&
            (t->tensors[i].flags & SP_TENSOR_RUNTIME_OWNED))
            keep = p;
    }
    if (t->pred_op != SP_PRED_NONE && t->pred_owner != SP_NO_TASK && t->pred_owner >= retired &&
        t->pred_owner < keep)
        keep = t->pred_owner; /* the predicate's buffer, read at pop */
    if (keep != INT64_MAX && !holds_at_or_before(t, keep))
        hold_producer(c, t, keep, false);
    /* The holds are all in: give the rest of the extent back. */
    o->argring.head = tmr_extent_end(c, t);
    tmr_unpin(o, pins); /* the holds above keep what is still needed */
    if (c->trace)
        for (uint32_t i = 0; i < deps->count; i++)
            rt_trace_edge_add(c->trace, (uint64_t)deps->producer[i], (uint64_t)id, deps->kind[i]);
    c->edges += deps->count;
    /* Release: schedulers that see the new count see the whole slot. */
    atomic_store_explicit(&c->submitted, id + 1, memory_order_release);
    uint32_t drop = 1u + deps->count - linked;
    if (!linked) {
        /* No completer can count us down: no RMW needed. Relaxed: nobody
         * else reads fanin_left of an unlinked task. */
        atomic_store_explicit(&t->fanin_left, 0, memory_order_relaxed);
        tmr_make_ready(c, o->chip, id);
    } else if (atomic_fetch_sub_explicit(&t->fanin_left, drop, memory_order_acq_rel) == drop) {
        tmr_make_ready(c, o->chip, id);
    }
    return id;
}

/* ---- submit: validate and derive, then publish ------------------------------ */

/* Checking mode: whether a task argument's home is a device-resident run
 * argument (SP_TENSOR_DEVICE, no red zones). A scan of the run's
 * arguments, only for written arguments in the checking mode. */
static bool home_is_device(const tmr_orch *o, const rt_range *home)
{
    const sp_args *a = &o->ctl->args;
    for (uint32_t j = 0; j < a->tensor_count; j++)
        if (o->ranges[j].dev == home->dev && o->ranges[j].bytes == home->bytes)
            return (a->tensors[j].flags & SP_TENSOR_DEVICE) != 0;
    return false;
}

/* A predicated task reads its predicate's tensor like an input: a
 * runtime-owned one's creator is pinned as the arguments' are. 0, or
 * SP_ETENSOR_RETIRED (the pins released). */
static int pred_pin(tmr_orch *o, const sp_task *task, int64_t id, tmr_pins *pins)
{
    const sp_tensor *x = rt_task_has_predicate(task) ? task->pred_tensor : NULL;
    if (!x || !(x->flags & SP_TENSOR_RUNTIME_OWNED) || x->owner_task == SP_NO_TASK)
        return SP_OK;
    int64_t retired = atomic_load_explicit(&o->ctl->retired, memory_order_relaxed);
    if (x->owner_task < retired) {
        tmr_unpin(o, pins);
        return orch_fail(o, SP_ETENSOR_RETIRED,
                         "task %lld: its predicate's tensor was made by task %lld, retired "
                         "(watermark %lld) and its buffer reused",
                         (long long)id, (long long)x->owner_task, (long long)retired);
    }
    return tmr_pin(o, pins, id, task->tensor_count, x->owner_task);
}

static int64_t op_submit(sp_orch *so, sp_task *task)
{
    tmr_orch *o = (tmr_orch *)so;
    if (refuse_foreign(o, "submit"))
        return SP_EORCH_THREAD;
    tmr_ctl *c = o->ctl;
    int rc = orch_error(o);
    if (rc)
        return rc;
    int64_t id = atomic_load_explicit(&c->submitted, memory_order_relaxed);
    int32_t kernel[3];
    if ((rc = rt_task_validate(&o->check, (uint64_t)id, task, kernel)) != SP_OK)
        return orch_fail(o, rc, "%s", o->msg);

    /* Checking mode: each output between red zones, inside the task's carve. */
    const uint64_t rz = c->redzones ? SP_REDZONE_BYTES : 0;
    uint64_t need = 0;
    for (int i = 0; i < task->tensor_count; i++)
        if (task->dirs[i] == SP_OUT)
            need += ALIGN64((uint64_t)sp_tensor_numel(task->tensors[i]) *
                            sp_tensor_elem_size(task->tensors[i])) +
                    rz;
    if (need)
        need += rz;
    if (need > o->heap.size)
        return orch_fail(o, SP_EHEAP_TOO_SMALL,
                         "task %lld: outputs need %llu bytes, the heap ring has %llu",
                         (long long)id, (unsigned long long)need, (unsigned long long)o->heap.size);
    /* Pin the creators of runtime-owned inputs while this task waits for
     * room, so making room never reclaims what the task is about to read. */
    tmr_pins pins = {.n = 0};
    for (int i = 0; i < task->tensor_count; i++) {
        const sp_tensor *x = task->tensors[i];
        if (task->dirs[i] == SP_OUT || !(x->flags & SP_TENSOR_RUNTIME_OWNED) ||
            x->owner_task == SP_NO_TASK)
            continue;
        if ((rc = tmr_pin(o, &pins, id, i, x->owner_task)) != SP_OK)
            return rc;
    }
    if ((rc = pred_pin(o, task, id, &pins)) != SP_OK)
        return rc;
    uint64_t at;
    if ((rc = tmr_reserve(o, &pins, need, task->tensor_count + rt_task_has_predicate(task),
                          task->tensor_count, task->scalar_count, &at)) != SP_OK)
        return rc;

    tmr_task *t = tmr_slot(c, id);
    bool manual = o->scope_depth && o->scopes[o->scope_depth - 1].mode == SP_SCOPE_MANUAL;
    t->id = id;
    t->shape = task->shape;
    t->block_num = task->block_num;
    t->tensor_count = task->tensor_count;
    t->scalar_count = task->scalar_count;
    memcpy(t->dirs, task->dirs, task->tensor_count);
    memcpy(t->kernel, kernel, sizeof t->kernel);
    t->heap_end = o->heap.head;
    t->heap_need = need;

    rt_dep_list *deps = &o->deps;
    deps->count = 0;
    for (int i = 0; i < task->dep_count && rc == SP_OK; i++)
        rc = rt_dep_list_add(deps, task->deps[i], id, SP_EDGE_EXPLICIT);
    uint64_t off = at + rz;
    t->check_mask = 0;
    for (int i = 0; i < task->tensor_count && rc == SP_OK; i++) {
        sp_tensor *x = task->tensors[i];
        if (task->dirs[i] == SP_OUT) {
            int64_t shape[SP_MAX_DIMS];
            memcpy(shape, x->shape, sizeof shape);
            sp_tensor_init(x, c->heap_base + off, x->dtype, x->ndim, shape);
            off += ALIGN64(x->buf_bytes) + rz;
            x->owner_task = id;
            x->flags |= SP_TENSOR_RUNTIME_OWNED;
            if (rz)
                rt_redzone_fill(x->addr, x->buf_bytes);
        }
        /* The kernel and the TensorMap see the argument at its buffer's
         * base (a view starting inside a staged buffer is rehomed). */
        sp_tensor *d = &t->tensors[i];
        *d = *x;
        rt_tensor_rehome(d, &o->home[i]);
        if (!rt_subgraph_skips_map(&o->subgraph, task->dirs[i]))
            rc = rt_tensormap_access(&o->map, id, d, task->dirs[i], manual, deps);
        t->args[i] = (uint64_t)(uintptr_t)d;
        /* Red zones surround staged buffers and runtime-owned heap ones;
         * a device-resident argument (SP_TENSOR_DEVICE) has none. */
        if (rz && rt_redzone_dir_written(task->dirs[i]) &&
            ((o->home[i].bytes && !home_is_device(o, &o->home[i])) ||
             ((d->flags & SP_TENSOR_RUNTIME_OWNED) &&
              rt_range_holds(&o->check.heap, d->addr, d->buf_bytes))))
            t->check_mask |= 1u << i;
    }
    for (int i = 0; i < task->scalar_count; i++)
        t->args[task->tensor_count + i] = task->scalars[i];
    /* The predicate's element is read: the task waits for its writers. */
    t->pred_op = SP_PRED_NONE;
    t->pred_owner = SP_NO_TASK;
    if (rt_task_has_predicate(task)) {
        const sp_tensor *px = task->pred_tensor;
        if (px->owner_task != id && (px->flags & SP_TENSOR_RUNTIME_OWNED))
            t->pred_owner = px->owner_task; /* its buffer is read at pop: held in publish */
        t->pred_op = o->pred.op;
        t->pred_dtype = o->pred.dtype;
        t->pred_addr = o->pred.addr;
        t->pred_value = o->pred.value;
        if (rc == SP_OK)
            rc = rt_tensormap_access(&o->map, id, &o->pred.view, SP_IN, manual, deps);
    }
    rt_subgraph_drop_inner_creators(&o->subgraph, deps);
    if (rc == SP_OK && deps->count > TMR_MAX_HOLDS)
        rc = SP_EGRAPH_LIMIT;
    if (rc) {
        /* Nothing is linked yet: the slot stays unpublished and is reused. */
        tmr_reserve_undo(o, at);
        tmr_unpin(o, &pins);
        return orch_fail(o, rc, "task %lld: more than %d producers", (long long)id,
                         deps->count > TMR_MAX_HOLDS ? TMR_MAX_HOLDS : SP_MAX_PRODUCERS);
    }
    return tmr_publish(o, t, deps, &pins, task->abi >= 2 ? task->scalar_src : NULL);
}

int tmr_static_carve(tmr_orch *o, uint64_t bytes, uint64_t *top)
{
    if (bytes > o->static_top)
        return orch_fail(o, SP_EHEAP_TOO_SMALL, "alloc_tensor: %llu bytes exceed the heap",
                         (unsigned long long)bytes);
    uint64_t at = o->static_top - bytes;
    /* Run-long allocations come from the heap's far end; the ring shrinks. */
    int rc = wait_for_room(o, WAIT_STATIC, at);
    if (rc != SP_OK)
        return rc;
    o->static_top = at;
    o->heap.size = at;
    *top = at;
    return SP_OK;
}

static int op_alloc_tensor(sp_orch *so, sp_tensor *x)
{
    tmr_orch *o = (tmr_orch *)so;
    if (refuse_foreign(o, "alloc_tensor"))
        return SP_EORCH_THREAD;
    int rc = orch_error(o);
    if (rc)
        return rc;
    if (!x || !sp_dtype_size(x->dtype) || sp_tensor_numel(x) == 0)
        return orch_fail(o, SP_ESHAPE, "alloc_tensor: bad dtype or shape");
    /* Checking mode: red zones on both sides, inside the carve. */
    const uint64_t rz = o->ctl->redzones ? SP_REDZONE_BYTES : 0;
    uint64_t bytes = ALIGN64((uint64_t)sp_tensor_numel(x) * sp_tensor_elem_size(x)) + 2 * rz;
    uint64_t top = 0;
    if ((rc = tmr_static_carve(o, bytes, &top)) != SP_OK)
        return rc;
    int64_t shape[SP_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    sp_tensor_init(x, o->ctl->heap_base + top + rz, x->dtype, x->ndim, shape);
    x->owner_task = SP_NO_TASK;
    x->flags |= SP_TENSOR_RUNTIME_OWNED;
    if (rz)
        rt_redzone_fill(x->addr, x->buf_bytes);
    if (o->rec)
        tmr_record_op(o->rec, TMR_OP_ALLOC, bytes, x->buf_bytes);
    return SP_OK;
}

static int op_scope_begin(sp_orch *so, int mode)
{
    tmr_orch *o = (tmr_orch *)so;
    if (refuse_foreign(o, "scope_begin"))
        return SP_EORCH_THREAD;
    int rc = orch_error(o);
    if (rc)
        return rc;
    if ((rc = tmr_scope_open(o, mode)) == SP_OK && o->rec)
        tmr_record_op(o->rec, TMR_OP_SCOPE_BEGIN, (uint64_t)mode, 0);
    return rc;
}

int tmr_scope_open(tmr_orch *o, int mode)
{
    if (mode != SP_SCOPE_AUTO && mode != SP_SCOPE_MANUAL)
        return orch_fail(o, SP_EINVAL, "scope_begin: unknown mode %d", mode);
    if (o->scope_depth >= TMR_MAX_SCOPES)
        return orch_fail(o, SP_ESCOPE, "scope_begin: deeper than %d", TMR_MAX_SCOPES);
    o->scopes[o->scope_depth].first_task =
        atomic_load_explicit(&o->ctl->submitted, memory_order_relaxed);
    o->scopes[o->scope_depth++].mode = (uint8_t)mode;
    return SP_OK;
}

/* Drop the innermost scope's reference on the tasks it holds. */
static void scope_release(tmr_orch *o)
{
    tmr_ctl *c = o->ctl;
    uint32_t depth = o->scope_depth;
    int64_t end = atomic_load_explicit(&c->submitted, memory_order_relaxed);
    for (int64_t id = o->scopes[depth - 1].first_task; id < end; id++) {
        tmr_task *t = tmr_slot(c, id);
        if (t->scope_depth == depth) {
            t->scope_depth = 0;
            /* Release: retirement reads refs with acquire. */
            atomic_fetch_sub_explicit(&t->refs, 1, memory_order_release);
        }
    }
    o->scope_depth--;
}

void tmr_scope_close(tmr_orch *o)
{
    scope_release(o);
}

static int op_scope_end(sp_orch *so)
{
    tmr_orch *o = (tmr_orch *)so;
    if (refuse_foreign(o, "scope_end"))
        return SP_EORCH_THREAD;
    int rc = orch_error(o);
    if (rc)
        return rc;
    if (o->scope_depth == 0)
        return orch_fail(o, SP_ESCOPE, "scope_end without a scope_begin");
    scope_release(o);
    if (o->rec)
        tmr_record_op(o->rec, TMR_OP_SCOPE_END, 0, 0);
    return SP_OK;
}

/* Wait until every task in `ids` has completed (control-tensor access). */
static int wait_tasks(tmr_orch *o, const int64_t *ids, uint32_t n, const char *what)
{
    tmr_ctl *c = o->ctl;
    uint64_t deadline = sp_now_ns() + c->backstop_ns;
    for (uint32_t i = 0; i < n; i++) {
        for (;;) {
            int64_t r = atomic_load_explicit(&c->retired, memory_order_relaxed);
            if (ids[i] < r || atomic_load_explicit(&tmr_slot(c, ids[i])->state,
                                                   memory_order_acquire) == TMR_SLOT_COMPLETE)
                break;
            /* Any completion may be this one: wake at the next. */
            int64_t done = atomic_load_explicit(&c->completed, memory_order_acquire);
            if (atomic_load_explicit(&tmr_slot(c, ids[i])->state, memory_order_acquire) ==
                TMR_SLOT_COMPLETE)
                continue;
            if (orch_wait_completed(o, done + 1, deadline) == SP_ETIMEOUT)
                return orch_fail(o, SP_ECONTROL_WAIT,
                                 "%s waited %llu ms for task %lld, which never finished", what,
                                 (unsigned long long)(c->backstop_ns / 1000000), (long long)ids[i]);
        }
    }
    return SP_OK;
}

/* Shared part of read and write: locate the element, wait for the tasks
 * that must finish first (its writers; for a write, its readers too). */
static int control_element(tmr_orch *o, const sp_tensor *t, int64_t index, bool write, void **addr,
                           int *arg, uint64_t *arg_off)
{
    const char *what = write ? "tensor_write" : "tensor_read";
    uint64_t off;
    if (!t)
        return orch_fail(o, SP_EINVAL, "%s: NULL tensor", what);
    if (sp_tensor_element_offset(t, index, &off) != SP_OK)
        return orch_fail(o, SP_ESHAPE, "%s: element %lld outside the view", what, (long long)index);
    bool known = rt_range_holds(&o->check.heap, t->addr, t->buf_bytes);
    /* Tasks' accesses to a staged buffer are keyed on its base (rehomed),
     * so look there; a heap tensor keeps its own address. */
    uint64_t key = t->addr, at = off;
    *arg = -1;
    for (uint32_t i = 0; !known && i < o->check.range_count; i++)
        if ((known = rt_range_holds(&o->ranges[i], t->addr, t->buf_bytes))) {
            key = o->ranges[i].dev;
            at = off + (t->addr - key);
            *arg = (int)i;
        }
    *arg_off = at;
    if (!known)
        return orch_fail(o, SP_EBOUNDS, "%s: tensor 0x%llx is in no device buffer of this run",
                         what, (unsigned long long)t->addr);
    uint64_t es = sp_tensor_elem_size(t);
    int64_t ids[64];
    uint32_t n;
    /* More overlapping tasks than fit: wait for these, then look again. */
    while ((n = rt_tensormap_overlapping(&o->map, key, at, at + es, !write, ids, 64)) > 0) {
        int rc = wait_tasks(o, ids, n < 64 ? n : 64, what);
        if (rc)
            return rc;
        if (n <= 64)
            break;
        retire_one(o); /* retired entries stop overlapping */
    }
    *addr = (char *)(uintptr_t)t->addr + off;
    return SP_OK;
}

static int op_tensor_read(sp_orch *so, const sp_tensor *t, int64_t index, void *out)
{
    tmr_orch *o = (tmr_orch *)so;
    if (refuse_foreign(o, "tensor_read"))
        return SP_EORCH_THREAD;
    int rc = orch_error(o);
    if (rc)
        return rc;
    if (!out)
        return orch_fail(o, SP_EINVAL, "tensor_read: NULL destination");
    void *src;
    int arg;
    uint64_t at;
    if ((rc = control_element(o, t, index, false, &src, &arg, &at)) != SP_OK)
        return rc;
    memcpy(out, src, sp_tensor_elem_size(t));
    /* A recording keeps what it read of the run's staged data (a replay
     * needs the same values); a value a task made ends the recording. */
    if (o->rec && arg >= 0 && (o->ctl->args.tensors[arg].flags & SP_TENSOR_DEVICE))
        tmr_record_abandon(o->rec, TMR_REC_READ_DEVICE); /* not checkable on the host */
    else if (o->rec)
        tmr_record_read(o->rec, arg, at, (uint32_t)sp_tensor_elem_size(t), src);
    return SP_OK;
}

static int op_tensor_write(sp_orch *so, const sp_tensor *t, int64_t index, const void *v)
{
    tmr_orch *o = (tmr_orch *)so;
    if (refuse_foreign(o, "tensor_write"))
        return SP_EORCH_THREAD;
    int rc = orch_error(o);
    if (rc)
        return rc;
    if (!v)
        return orch_fail(o, SP_EINVAL, "tensor_write: NULL value");
    void *dst;
    int arg;
    uint64_t at;
    if ((rc = control_element(o, t, index, true, &dst, &arg, &at)) != SP_OK)
        return rc;
    if (o->rec)
        tmr_record_abandon(o->rec, TMR_REC_WRITE); /* writes are not replayed */
    memcpy(dst, v, sp_tensor_elem_size(t));
    return SP_OK;
}

static void op_fatal(sp_orch *so, int status, const char *msg)
{
    if (refuse_foreign((tmr_orch *)so, "fatal"))
        return;
    orch_fail((tmr_orch *)so, rt_orch_fatal_status(status), "orchestration fatal: %s",
              msg ? msg : "(no message)");
}

static int op_error(sp_orch *so)
{
    if (refuse_foreign((tmr_orch *)so, "error"))
        return SP_EORCH_THREAD;
    return orch_error((tmr_orch *)so);
}

/* ---- graph tasks (runtime/device/subgraph) -------------------------------- */

static uint32_t sg_derived(sp_orch *so, int64_t id, int64_t *out, uint32_t max)
{
    const tmr_orch *o = (const tmr_orch *)so;
    (void)id; /* o->deps still holds the producers of the last submit, `id` */
    for (uint32_t i = 0; i < o->deps.count && i < max; i++)
        out[i] = o->deps.producer[i];
    return o->deps.count;
}

static int64_t sg_next_id(sp_orch *so)
{
    /* Relaxed: only this thread writes it. */
    return atomic_load_explicit(&((tmr_orch *)so)->ctl->submitted, memory_order_relaxed);
}

static int64_t sg_live_below(sp_orch *so)
{
    /* Relaxed: only this thread retires. */
    return atomic_load_explicit(&((tmr_orch *)so)->ctl->retired, memory_order_relaxed);
}

static int sg_scope_mode(sp_orch *so)
{
    const tmr_orch *o = (const tmr_orch *)so;
    return o->scope_depth ? o->scopes[o->scope_depth - 1].mode : SP_SCOPE_AUTO;
}

static int sg_fail(sp_orch *so, int status, const char *msg)
{
    return orch_fail((tmr_orch *)so, status, "%s", msg);
}

static const rt_subgraph_hooks tmr_subgraph_hooks = {
    .derived = sg_derived,
    .next_id = sg_next_id,
    .live_below = sg_live_below,
    .scope_mode = sg_scope_mode,
    .fail = sg_fail,
};

/* The records' region: an eighth of the heap, at most 1 MiB, carved from
 * its far end like sp_alloc_tensor's at the run's first graph task (a run
 * without one keeps its whole heap). Only if it is free right now: a run
 * never waits, or fails, for it; without it every graph task runs its body
 * one by one. */
#define TMR_GRAPH_RECORD_MAX (1ull << 20)
#define TMR_GRAPH_RECORD_MIN (16ull << 10)

static void carve_graph_region(tmr_orch *o)
{
    o->subgraph_tried = true;
    uint64_t bytes = o->ctl->heap_bytes / 8;
    bytes = (bytes > TMR_GRAPH_RECORD_MAX ? TMR_GRAPH_RECORD_MAX : bytes) & ~(uint64_t)63;
    if (bytes < TMR_GRAPH_RECORD_MIN || bytes > o->static_top)
        return;
    uint64_t top = o->static_top - bytes;
    if (!room_for(o, WAIT_STATIC, top))
        return;
    o->static_top = top;
    o->heap.size = top;
    if (o->rec) /* a replay carves it too: later allocations keep their offsets */
        tmr_record_op(o->rec, TMR_OP_REGION, bytes, 0);
    rt_subgraph_init(&o->subgraph, &tmr_subgraph_hooks,
                     (void *)(uintptr_t)(o->ctl->heap_base + top), bytes);
}

static int64_t op_submit_graph(sp_orch *so, sp_graph_fn fn, const sp_graph_args *a, uint64_t key)
{
    tmr_orch *o = (tmr_orch *)so;
    if (refuse_foreign(o, "submit_graph"))
        return SP_EORCH_THREAD;
    if (!o->subgraph_tried)
        carve_graph_region(o);
    return rt_subgraph_submit(&o->subgraph, so, fn, a, key);
}

static const sp_orch_ops tmr_orch_ops = RT_ORCH_OPS(op, op_submit, rt_orch_log);

/* Trace level >= 3: each submit, waits for room included, as a record. */
static int64_t op_submit_traced(sp_orch *so, sp_task *task)
{
    tmr_orch *o = (tmr_orch *)so;
    uint64_t t0 = sp__ticks();
    int64_t id = op_submit(so, task);
    if (id >= 0)
        rt_trace_phase(&o->trace, SP_TRACE_SUBMIT, (uint64_t)id, t0, sp__ticks());
    return id;
}

static const sp_orch_ops tmr_orch_ops_traced = RT_ORCH_OPS(op, op_submit_traced, rt_orch_log);

/* Lay out the rings and the orchestrator state for this run. */
static int boot(tmr_ctl *c, sp_chip *chip)
{
    for (int q = 0; q < SP_QUEUES; q++)
        tmr_queue_init(&c->queues[q], c->cells + (uint64_t)q * c->window, c->window);
    for (uint32_t i = 0; i < c->window; i++)
        atomic_store_explicit(&c->slots[i].state, TMR_SLOT_FREE, memory_order_relaxed);
    tmr_orch *o = &c->orch;
    memset(o, 0, sizeof *o);
    rt_trace_writer_init(&o->trace, c->trace, c->sched_threads);
    o->orch.ops = o->trace.level >= SP_TRACE_SUBMITS ? &tmr_orch_ops_traced : &tmr_orch_ops;
    o->ctl = c;
    o->chip = chip;
    o->thread = pthread_self(); /* boot runs on the thread that runs the entry */
    o->heap.size = c->heap_bytes;
    o->argring.size = c->arg_bytes;
    o->static_top = c->heap_bytes;
    rt_subgraph_init(&o->subgraph, &tmr_subgraph_hooks, NULL, 0);
    if (c->rec && !c->replay) {
        tmr_record_begin(&o->recorder, c->rec, c->args.tensor_count);
        o->rec = &o->recorder;
    }
    for (uint32_t i = 0; i < c->args.tensor_count; i++)
        o->ranges[i] =
            (rt_range){.dev = c->args.tensors[i].addr, .bytes = c->args.tensors[i].buf_bytes};
    o->check = (rt_task_check){
        .callable = c->callable,
        .ranges = o->ranges,
        .range_count = c->args.tensor_count,
        .heap = {.dev = c->heap_base, .bytes = c->heap_bytes},
        .msg = o->msg,
        .msg_len = sizeof o->msg,
        .memo = o->lane_memo,
        .view = &o->view_memo,
        .home = o->home,
        .pred = &o->pred,
        .lane_type = sp_chip_geometry(chip)->lane_type,
        .lanes = sp_chip_geometry(chip)->lanes,
    };
    return rt_tensormap_init(&o->map, c->map_mem, c->map_bytes, c->map_entries);
}

typedef struct orch_claim {
    sp_chip *chip;
    uint32_t index;
} orch_claim;

static bool still_mine(void *arg)
{
    orch_claim *cl = arg;
    return sp_chip_thread_claim(cl->chip, cl->index);
}

int tmr_orchestrate(tmr_ctl *c, sp_chip *chip)
{
    uint32_t self_index = c->sched_threads; /* this thread's launch index */
    c->orch_begin_ns = sp_now_ns();
    int rc = boot(c, chip);
    atomic_store_explicit(&c->booted, 1, memory_order_release);
    sp_chip_event_notify(chip);
    if (rc) {
        tmr_fail(c, rc, "orchestrator: TensorMap layout failed");
    } else {
        tmr_orch *o = &c->orch;
        /* A scheduler may have given this thread up (it did not answer the
         * watchdog) and ended the run: then the run, and maybe the memory
         * under `c`, belong to someone else now. */
        orch_claim claim = {.chip = chip, .index = self_index};
        int sig = 0;
        /* A replay calls no user code: the driver runs unguarded (its
         * waits have the backstop), the orchestration not at all. */
        if (c->replay) {
            tmr_replay_run(o, c->rec);
            if (!still_mine(&claim))
                sig = SP_FAULT_ABANDONED; /* given up, as an orchestration may be */
        } else {
            sig = rt_orch_guarded_call(c->entry, &o->orch, &c->args, c->orch_timeout_ns, still_mine,
                                       &claim);
        }
        if (sig == SP_FAULT_ABANDONED)
            return SP_OK;
        if (sig == SP_FAULT_INTERRUPT)
            orch_fail(o, SP_EORCH_CRASH,
                      "the orchestration timed out: still running on the chip after %llu ms "
                      "(orch_timeout_us), stopped after %lld submits",
                      (unsigned long long)(c->orch_timeout_ns / 1000000),
                      (long long)atomic_load_explicit(&c->submitted, memory_order_relaxed));
        else if (sig)
            orch_fail(o, SP_EORCH_CRASH,
                      "the orchestration crashed with %s on the chip after %lld submits",
                      sp__fault_name(sig),
                      (long long)atomic_load_explicit(&c->submitted, memory_order_relaxed));
        if (o->scope_depth && !orch_error(o))
            orch_fail(o, SP_ESCOPE, "orchestration returned with %u scope(s) open", o->scope_depth);
        while (o->scope_depth)
            scope_release(o);
    }
    c->orch_end_ns = sp_now_ns();
    atomic_store_explicit(&c->orch_done, 1, memory_order_release);
    sp_chip_event_notify(chip);
    return atomic_load_explicit(&c->error, memory_order_acquire);
}
