/* The heap ring: task outputs are carved from one region in submission
 * order and given back in the same order, so the free space is always one
 * or two contiguous pieces. Offsets are relative to the heap's start. */
#ifndef SP_RUNTIME_TMR_HEAP_RING_H
#define SP_RUNTIME_TMR_HEAP_RING_H

#include <stdbool.h>
#include <stdint.h>

#define SP_HEAP_RING_NONE UINT64_MAX

typedef struct tmr_heap_ring {
    uint64_t size; /* bytes the ring may use */
    uint64_t head; /* next free offset */
    uint64_t tail; /* start of the oldest live allocation */
} tmr_heap_ring;

/* Offset where `need` bytes fit now, or SP_HEAP_RING_NONE. `empty` says no
 * allocation is live (the caller tracks that: head == tail is ambiguous). */
static inline uint64_t tmr_heap_ring_fit(const tmr_heap_ring *r, uint64_t need, bool empty)
{
    if (empty)
        return need <= r->size ? 0 : SP_HEAP_RING_NONE;
    if (r->head >= r->tail) {
        if (r->size - r->head >= need)
            return r->head;
        /* Wrap to the start; strictly below the tail, so full never looks empty. */
        return need < r->tail ? 0 : SP_HEAP_RING_NONE;
    }
    return r->tail - r->head > need ? r->head : SP_HEAP_RING_NONE;
}

/* The same, for a ring whose pages should stay few: it wraps to the start
 * as soon as the start holds as much as is live now plus `need`, instead
 * of first using the whole ring. The pages it touches then stay within
 * about twice the most it held at once, however large the ring is
 * (the argument ring, sized for a whole window of large tasks). */
static inline uint64_t tmr_heap_ring_fit_low(const tmr_heap_ring *r, uint64_t need, bool empty)
{
    if (!empty && r->head >= r->tail && r->tail > r->head - r->tail + need)
        return 0;
    return tmr_heap_ring_fit(r, need, empty);
}

/* Take `need` bytes at `at` (from tmr_heap_ring_fit); returns the new head,
 * which the caller keeps as the allocation's end. */
static inline uint64_t tmr_heap_ring_take(tmr_heap_ring *r, uint64_t at, uint64_t need)
{
    r->head = at + need;
    return r->head;
}

/* The oldest live allocation, which ended at `end`, was given back. With
 * nothing live any more the ring rebases to its start. */
static inline void tmr_heap_ring_release(tmr_heap_ring *r, uint64_t end, bool now_empty)
{
    r->tail = end;
    if (now_empty)
        r->head = r->tail = 0;
}

/* True if nothing live lies at or above `limit` (so the ring may shrink to it). */
static inline bool tmr_heap_ring_below(const tmr_heap_ring *r, uint64_t limit, bool empty)
{
    return empty || (r->head >= r->tail && r->head <= limit);
}

#endif
