/* The heap ring allocator of tensormap_and_ringbuffer: in-order carving,
 * wrap to the start, the rule that keeps full from looking empty, rebase of
 * an empty ring, exhaustion, and shrinking for run-long allocations. */
#include <criterion/criterion.h>
#include <string.h>

#include "runtime/tensormap_and_ringbuffer/device/heap_ring.h"

Test(heap_ring, carves_in_order_and_exhausts)
{
    tmr_heap_ring r = {.size = 1000};
    uint64_t at = tmr_heap_ring_fit(&r, 400, true);
    cr_assert_eq(at, 0);
    cr_assert_eq(tmr_heap_ring_take(&r, at, 400), 400);
    at = tmr_heap_ring_fit(&r, 400, false);
    cr_assert_eq(at, 400);
    tmr_heap_ring_take(&r, at, 400);
    /* 200 bytes left at the end, nothing free at the start (tail is 0). */
    cr_assert_eq(tmr_heap_ring_fit(&r, 300, false), SP_HEAP_RING_NONE);
    cr_assert_eq(tmr_heap_ring_fit(&r, 200, false), 800);
    cr_assert_eq(tmr_heap_ring_fit(&r, 1001, true), SP_HEAP_RING_NONE);
}

Test(heap_ring, wraps_to_the_start_once_the_oldest_is_released)
{
    tmr_heap_ring r = {.size = 1000};
    tmr_heap_ring_take(&r, 0, 400);                                 /* A: [0, 400) */
    tmr_heap_ring_take(&r, tmr_heap_ring_fit(&r, 400, false), 400); /* B: [400, 800) */
    tmr_heap_ring_release(&r, 400, false);                          /* A released */
    uint64_t at = tmr_heap_ring_fit(&r, 300, false);
    cr_assert_eq(at, 0, "300 bytes do not fit the 200 at the end: wrap");
    tmr_heap_ring_take(&r, at, 300); /* C: [0, 300), head < tail now */
    cr_assert_eq(tmr_heap_ring_fit(&r, 100, false), SP_HEAP_RING_NONE,
                 "only 100 bytes between head and tail: strictly less is needed");
    cr_assert_eq(tmr_heap_ring_fit(&r, 99, false), 300);
}

Test(heap_ring, full_never_looks_empty)
{
    tmr_heap_ring r = {.size = 1000};
    tmr_heap_ring_take(&r, 0, 600);
    tmr_heap_ring_release(&r, 600, false); /* as if [0,600) was retired, more live after */
    r.head = 1000;                         /* live: [600, 1000) */
    /* Wrapping to exactly the tail would make head == tail: refused. */
    cr_assert_eq(tmr_heap_ring_fit(&r, 600, false), SP_HEAP_RING_NONE);
    cr_assert_eq(tmr_heap_ring_fit(&r, 599, false), 0);
}

Test(heap_ring, an_empty_ring_rebases_to_its_start)
{
    tmr_heap_ring r = {.size = 1000};
    tmr_heap_ring_take(&r, 0, 700);
    tmr_heap_ring_release(&r, 700, true); /* the last live allocation went away */
    cr_assert_eq(r.head, 0);
    cr_assert_eq(r.tail, 0);
    cr_assert_eq(tmr_heap_ring_fit(&r, 1000, true), 0, "the whole ring is usable again");
}

Test(heap_ring, shrinking_for_static_allocations)
{
    tmr_heap_ring r = {.size = 1000};
    cr_assert(tmr_heap_ring_below(&r, 500, true));
    tmr_heap_ring_take(&r, 0, 600);
    cr_assert_not(tmr_heap_ring_below(&r, 500, false), "live bytes reach above 500");
    cr_assert(tmr_heap_ring_below(&r, 600, false));
    tmr_heap_ring_release(&r, 300, false);
    r.head = 100; /* wrapped: live [300, 1000) and [0, 100) */
    cr_assert_not(tmr_heap_ring_below(&r, 900, false));
}

/* Issue 18: the argument ring wraps as soon as its start holds what is live
 * plus the new carve, so a steady stream of small extents keeps touching
 * the same few bytes of a large ring instead of sweeping all of it. */
Test(heap_ring, fit_low_wraps_early_and_stays_compact)
{
    tmr_heap_ring r = {.size = 1000000};
    uint64_t live_at[4] = {0}, most = 0;
    int n = 0;
    /* A stream of 100-byte extents, at most 4 live, released in order at
     * the next one's start (as the orchestrator does). */
    for (int i = 0; i < 10000; i++) {
        if (n == 4) {
            tmr_heap_ring_release(&r, live_at[1], false);
            memmove(live_at, live_at + 1, 3 * sizeof live_at[0]);
            n--;
        }
        uint64_t at = tmr_heap_ring_fit_low(&r, 100, n == 0);
        cr_assert_neq(at, SP_HEAP_RING_NONE, "extent %d found no room", i);
        tmr_heap_ring_take(&r, at, 100);
        live_at[n++] = at;
        if (r.head > most)
            most = r.head;
    }
    cr_assert_leq(most, 1000, "the stream reached offset %llu of a 1 MB ring",
                  (unsigned long long)most);
}

Test(heap_ring, fit_low_keeps_the_plain_rules_when_the_start_is_short)
{
    tmr_heap_ring r = {.size = 1000};
    tmr_heap_ring_take(&r, 0, 100);
    tmr_heap_ring_take(&r, 100, 300); /* live [0, 400) */
    tmr_heap_ring_release(&r, 100, false);
    /* The start holds 100 < live 300 + need: carve at the head. */
    cr_assert_eq(tmr_heap_ring_fit_low(&r, 50, false), 400);
    tmr_heap_ring_release(&r, 400, false); /* live: nothing before the head... */
    r.head = 450;                          /* ...but [400, 450) */
    /* The start holds 400 > live 50 + need 300: wrap. */
    cr_assert_eq(tmr_heap_ring_fit_low(&r, 300, false), 0);
    cr_assert_eq(tmr_heap_ring_fit_low(&r, 400, false), 450, "would reach the tail: the plain fit");
}
