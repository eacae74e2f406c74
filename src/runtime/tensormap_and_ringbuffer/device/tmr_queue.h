/* Bounded MPMC queue of task ids with sequence-tagged cells: a cell is
 * free for the producer whose position equals its sequence, and full for
 * the consumer whose position + 1 equals it. No locks, no allocation. */
#ifndef SP_RUNTIME_TMR_QUEUE_H
#define SP_RUNTIME_TMR_QUEUE_H

#include <sched.h>
#include <stdbool.h>

#include "common/wait.h"
#include "runtime/tensormap_and_ringbuffer/device/tmr_layout.h"

/* Set up `q` over `cells` (capacity mask + 1, a power of two). */
static inline void tmr_queue_init(tmr_queue *q, tmr_cell *cells, uint64_t capacity)
{
    q->cells = cells;
    q->mask = capacity - 1;
    for (uint64_t i = 0; i < capacity; i++)
        atomic_store_explicit(&cells[i].seq, i, memory_order_relaxed);
    atomic_store_explicit(&q->head, 0, memory_order_relaxed);
    atomic_store_explicit(&q->tail, 0, memory_order_release);
}

/* Append `v`; never fails; returns the position it took. Capacity covers
 * every task that can be ready at once (a task sits in one queue at most
 * once, and only the window's tasks exist), so a cell that is not yet free
 * for this position is one a popper has claimed (moved head past) but not
 * yet handed back: it may have been preempted between the two, and the
 * push waits for it rather than drop the task (an SPMD task pushed back
 * after handing out a block would lose its other blocks). The wait spins
 * briefly, then yields the CPU to the popper it waits for. */
static inline uint64_t tmr_queue_push(tmr_queue *q, uint64_t v)
{
    uint64_t pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
    for (unsigned waits = 0;;) {
        tmr_cell *c = &q->cells[pos & q->mask];
        uint64_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
        int64_t diff = (int64_t)(seq - pos);
        if (diff == 0) {
            /* Relaxed: the cell's release store of seq publishes the value. */
            if (atomic_compare_exchange_weak_explicit(&q->tail, &pos, pos + 1, memory_order_relaxed,
                                                      memory_order_relaxed)) {
                c->value = v;
                /* seq_cst: the pusher's half of tmr_queue_pushed_first. */
                atomic_store_explicit(&c->seq, pos + 1, memory_order_seq_cst);
                return pos;
            }
        } else if (diff < 0) {
            /* The popper of this cell's previous value has not let go yet. */
            if (++waits < 64)
                sp__cpu_relax();
            else
                sched_yield();
            pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
        } else {
            pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
        }
    }
}

/* Whether a push that took position `pos` found nothing ahead of it that
 * a popper has yet to take (the queue was empty, or has been emptied up to
 * it since): then nobody may be about to pop it, and its pusher must
 * notify the schedulers. Otherwise the popper that takes the entry ahead
 * also finds this one, or has no core to give it and is woken by a finish
 * — a pusher that only appends to work already waiting need not wake
 * anybody. Dekker pair with tmr_queue_pop, all four seq_cst: the push's
 * store of the cell's seq, then this look at head; the pop's CAS of head,
 * then its look at the next cell's seq. Either this sees head moved up to
 * `pos`, or that pop's next look sees this entry. (Not a fence: TSan does
 * not model them.) */
static inline bool tmr_queue_pushed_first(tmr_queue *q, uint64_t pos)
{
    return atomic_load_explicit(&q->head, memory_order_seq_cst) >= pos;
}

static inline bool tmr_queue_pop(tmr_queue *q, uint64_t *v)
{
    /* seq_cst loads and CAS (plain loads and the same locked CAS on x86):
     * the popper's side of tmr_queue_pushed_first. */
    uint64_t pos = atomic_load_explicit(&q->head, memory_order_seq_cst);
    for (;;) {
        tmr_cell *c = &q->cells[pos & q->mask];
        uint64_t seq = atomic_load_explicit(&c->seq, memory_order_seq_cst);
        int64_t diff = (int64_t)(seq - (pos + 1));
        if (diff == 0) {
            /* The seq_cst load of seq above ordered the value. */
            if (atomic_compare_exchange_weak_explicit(&q->head, &pos, pos + 1, memory_order_seq_cst,
                                                      memory_order_seq_cst)) {
                *v = c->value;
                atomic_store_explicit(&c->seq, pos + q->mask + 1, memory_order_release);
                return true;
            }
        } else if (diff < 0) {
            return false;
        } else {
            pos = atomic_load_explicit(&q->head, memory_order_seq_cst);
        }
    }
}

#endif
