/* tmr's ready queue and the rule that lets the orchestrator skip the chip
 * event's notify (tmr_queue_pushed_first): a push that lands behind an
 * entry no popper has taken yet needs no notify, because the popper that
 * takes that entry finds this one too. First the rule step by step, then
 * the protocol it serves run flat out on two threads: a popper that pops
 * until the queue is empty and then waits for the event to move from the
 * value it read before popping, and a pusher that moves the event only for
 * a push the rule says was first. A lost notify leaves the popper waiting
 * with work queued: its wait times out and the test fails. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>

#include "common/wait.h"
#include "runtime/tensormap_and_ringbuffer/device/tmr_queue.h"

Test(tmr_queue, a_push_behind_an_untaken_entry_is_not_first)
{
    static tmr_cell cells[8];
    tmr_queue q;
    tmr_queue_init(&q, cells, 8);
    uint64_t v;
    cr_assert(tmr_queue_pushed_first(&q, tmr_queue_push(&q, 10)), "into an empty queue");
    cr_assert_not(tmr_queue_pushed_first(&q, tmr_queue_push(&q, 11)), "behind 10");
    cr_assert(tmr_queue_pop(&q, &v));
    cr_assert_eq(v, 10);
    cr_assert_not(tmr_queue_pushed_first(&q, tmr_queue_push(&q, 12)), "behind 11, not taken");
    cr_assert(tmr_queue_pop(&q, &v));
    cr_assert(tmr_queue_pop(&q, &v));
    cr_assert_eq(v, 12);
    cr_assert_not(tmr_queue_pop(&q, &v), "empty");
    cr_assert(tmr_queue_pushed_first(&q, tmr_queue_push(&q, 13)), "emptied up to it");
    /* Around the ring several times: the positions keep counting. */
    for (uint64_t i = 0; i < 20; i++) {
        cr_assert(tmr_queue_pop(&q, &v));
        cr_assert(tmr_queue_pushed_first(&q, tmr_queue_push(&q, 100 + i)));
    }
    cr_assert(tmr_queue_pop(&q, &v));
    cr_assert_eq(v, 119);
}

enum { ITEMS = 300000, CAPACITY = 1024 };

typedef struct flat_out {
    tmr_queue q;
    sp__waitword event;
    uint64_t notifies;
} flat_out;

static void *pusher(void *arg)
{
    flat_out *f = arg;
    for (uint64_t i = 0; i < ITEMS; i++)
        if (tmr_queue_pushed_first(&f->q, tmr_queue_push(&f->q, i))) {
            sp__waitword_add(&f->event, 1);
            f->notifies++;
        }
    return NULL;
}

Test(tmr_queue, a_popper_that_waits_once_empty_misses_no_entry, .timeout = 120)
{
    static tmr_cell cells[CAPACITY];
    static flat_out f;
    tmr_queue_init(&f.q, cells, CAPACITY);
    /* Spin a little, yield a little, then park: all three paths run. */
    const sp__wait_policy policy = {.spin_ns = 200, .yield_ns = 2000};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, pusher, &f), 0);
    uint64_t got = 0, next = 0, waits = 0;
    while (got < ITEMS) {
        uint32_t snap = sp__waitword_load(&f.event);
        uint64_t v;
        while (tmr_queue_pop(&f.q, &v)) {
            cr_assert_eq(v, next++, "in order");
            got++;
        }
        if (got == ITEMS)
            break;
        int timed_out = 0;
        sp__waitword_wait_ne(&f.event, snap, &policy, sp_now_ns() + 10ull * 1000 * 1000 * 1000,
                             &timed_out);
        cr_assert_not(timed_out, "no notify for 10 s with %llu of %u taken: a lost notify",
                      (unsigned long long)got, ITEMS);
        waits++;
    }
    pthread_join(t, NULL);
    cr_assert_eq(got, ITEMS);
    /* The rule skipped most notifies (the pusher runs ahead of the popper
     * between waits), and every wait was answered by one. */
    cr_assert_lt(f.notifies, ITEMS);
    cr_assert_leq(waits, f.notifies);
}
