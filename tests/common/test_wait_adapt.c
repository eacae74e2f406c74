/* The adaptive wait (issue 18): the spin budget follows the recent waits'
 * length (down to a floor when the partner is off its CPU, back up when
 * handoffs are short again), a slow yield makes the next waits skip the
 * yield rung for a doubling number of waits, yields that come straight
 * back in a crowded group end the yield rung, and an adaptive waiter that
 * has nothing to wait for still parks (no CPU while idle). No timing is
 * asserted: the rule is checked on given wait lengths, and the waits
 * below end by deadlines, which only bound them from below. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

#include "common/wait.h"
#include "cpu_while_sleeping.h"

static const sp__wait_policy policy = {.spin_ns = 2000, .yield_ns = 1000};

static uint32_t spin_of(sp__wait_adapt *a)
{
    return atomic_load(&a->spin_ns);
}

Test(wait_adapt, starts_at_the_policys_rungs)
{
    sp__wait_adapt a;
    sp__wait_adapt_init(&a, &policy);
    cr_assert_eq(spin_of(&a), 2000);
    cr_assert_eq(atomic_load(&a.skip_yield), 0);
    cr_assert_eq(atomic_load(&a.backoff), SP_WAIT_SKIP_FIRST);
}

Test(wait_adapt, long_waits_shrink_the_spin_to_the_floor_and_short_ones_grow_it_back)
{
    sp__wait_adapt a;
    sp__wait_adapt_init(&a, &policy);
    /* A quarter of the way to the floor: 2000 + (200 - 2000) / 4. */
    sp__wait_adapt_note(&a, &policy, SP_WAIT_END_PARK, 1000000, false);
    cr_assert_eq(spin_of(&a), 1550);
    for (int i = 0; i < 64; i++)
        sp__wait_adapt_note(&a, &policy, SP_WAIT_END_PARK, 1000000, false);
    cr_assert_leq(spin_of(&a), SP_WAIT_SPIN_FLOOR_NS + 3);
    cr_assert_geq(spin_of(&a), SP_WAIT_SPIN_FLOOR_NS);
    /* Handoffs of 700 ns: a spin of twice that catches them. */
    for (int i = 0; i < 64; i++)
        sp__wait_adapt_note(&a, &policy, SP_WAIT_END_YIELD, 700, false);
    cr_assert_geq(spin_of(&a), 1400 - 3);
    cr_assert_leq(spin_of(&a), 1400);
    /* Waits the spin caught: spinning works, back to the policy's rung
     * (and exactly to it, not short of it by the rounding of the steps). */
    for (int i = 0; i < 64; i++)
        sp__wait_adapt_note(&a, &policy, SP_WAIT_END_PARK, 1000000, false);
    for (int i = 0; i < 64; i++)
        sp__wait_adapt_note(&a, &policy, SP_WAIT_END_SPIN, 0, false);
    cr_assert_eq(spin_of(&a), 2000);
    /* Never above the policy's rung. */
    for (int i = 0; i < 64; i++)
        sp__wait_adapt_note(&a, &policy, SP_WAIT_END_SPIN, 1900, false);
    cr_assert_geq(spin_of(&a), 2000 - 3);
    cr_assert_leq(spin_of(&a), 2000);
}

Test(wait_adapt, slow_yields_skip_the_yield_rung_for_doubling_stretches)
{
    sp__wait_adapt a;
    sp__wait_adapt_init(&a, &policy);
    sp__wait_adapt_note(&a, &policy, SP_WAIT_END_PARK, 100000, true);
    cr_assert_eq(atomic_load(&a.skip_yield), SP_WAIT_SKIP_FIRST);
    sp__wait_adapt_note(&a, &policy, SP_WAIT_END_PARK, 100000, true);
    cr_assert_eq(atomic_load(&a.skip_yield), 2 * SP_WAIT_SKIP_FIRST);
    for (int i = 0; i < 20; i++)
        sp__wait_adapt_note(&a, &policy, SP_WAIT_END_PARK, 100000, true);
    cr_assert_eq(atomic_load(&a.skip_yield), SP_WAIT_SKIP_MAX);
    /* A wait that ended while yielding with quick yields: the next skip is short again. */
    sp__wait_adapt_note(&a, &policy, SP_WAIT_END_YIELD, 5000, false);
    cr_assert_eq(atomic_load(&a.backoff), SP_WAIT_SKIP_FIRST);
}

static sp__waitword word;

Test(wait_adapt, a_timed_out_wait_teaches_and_a_skip_is_consumed)
{
    sp__wait_adapt a;
    sp__wait_adapt_init(&a, &policy);
    atomic_store(&a.skip_yield, 2);
    atomic_store(&word.value, 1);
    int to = 0;
    uint64_t deadline = sp_now_ns() + 2 * 1000 * 1000;
    cr_assert_eq(sp__waitword_wait_adaptive(&word, 1, &policy, &a, deadline, &to, NULL), 1);
    cr_assert_eq(to, 1);
    /* It waited at least 2 ms: far beyond a spin, so the budget went down. */
    cr_assert_eq(spin_of(&a), 1550);
    cr_assert_eq(atomic_load(&a.skip_yield), 1);
}

static sp__wait_adapt shared;

static void *adaptive_waiter(void *arg)
{
    uint32_t old = (uint32_t)(uintptr_t)arg;
    uint32_t v = sp__waitword_wait_adaptive(&word, old, &policy, &shared, 0, NULL, NULL);
    return (void *)(uintptr_t)v;
}

Test(wait_adapt, an_idle_adaptive_waiter_still_parks_and_is_woken)
{
    sp__wait_adapt_init(&shared, &policy);
    atomic_store(&word.value, 0);
    pthread_t th;
    pthread_create(&th, NULL, adaptive_waiter, (void *)(uintptr_t)0);
    uint64_t deadline = sp_now_ns() + 5ull * 1000 * 1000 * 1000;
    while (atomic_load(&word.parked) == 0)
        cr_assert_lt(sp_now_ns(), deadline, "adaptive waiter never parked");
    double cpu_ms = cpu_ms_while_sleeping(100ull * 1000 * 1000);
    cr_assert_lt(cpu_ms, 10.0, "parked adaptive waiter used %.1f ms CPU in 100 ms", cpu_ms);
    sp__waitword_store(&word, 3);
    void *ret;
    pthread_join(th, &ret);
    cr_assert_eq((uint32_t)(uintptr_t)ret, 3);
    /* It waited over 100 ms: the shared history says "spin no more than the floor". */
    cr_assert_lt(spin_of(&shared), 2000);
}

/* The lonely-yield rule on given yield lengths: in a crowded group (more
 * awake threads than CPUs), SP_WAIT_LONELY_YIELDS yields in a row that
 * came straight back (nobody else wanted the CPU: the threads that need
 * one queue on another CPU, and the kernel does not move them onto one
 * that looks busy) end the yield rung; one that handed the CPU over starts
 * the count again; an uncrowded group yields on. */
Test(wait_adapt, lonely_yields_in_a_crowded_group_end_the_yield_rung)
{
    uint32_t lonely = 0;
    for (uint32_t i = 1; i < SP_WAIT_LONELY_YIELDS; i++) {
        lonely = sp__wait_lonely_count(lonely, 300);
        cr_assert_not(sp__wait_lonely_park(lonely, true), "parked after %u lonely yields", i);
    }
    cr_assert_eq(sp__wait_lonely_count(lonely, 5000), 0, "a yield that switched restarts it");
    lonely = sp__wait_lonely_count(lonely, SP_WAIT_YIELD_LONELY_NS - 1);
    cr_assert(sp__wait_lonely_park(lonely, true));
    cr_assert_not(sp__wait_lonely_park(lonely, false), "an uncrowded group yields on");
    cr_assert_not(
        sp__wait_lonely_park(sp__wait_lonely_count(lonely, SP_WAIT_YIELD_LONELY_NS), true));
}

/* And a crowded waiter alone on its CPU parks well inside its 4 s yield
 * rung, and is woken. */
static _Atomic uint32_t crowd = 5;
static const sp__wait_policy crowded_policy = {.spin_ns = 2000,
                                               .yield_ns = 4000000000u,
                                               .awake = &crowd,
                                               .cpus = 1,
                                               .counted = false,
                                               .park_when_lonely = true};

static void *crowded_waiter(void *arg)
{
    (void)arg;
    return (void *)(uintptr_t)sp__waitword_wait_adaptive(&word, 0, &crowded_policy, NULL, 0, NULL,
                                                         NULL);
}

Test(wait_adapt, a_crowded_waiter_whose_yields_come_straight_back_parks)
{
    atomic_store(&word.value, 0);
    pthread_t th;
    pthread_create(&th, NULL, crowded_waiter, NULL);
    /* This thread looks only every millisecond, off the CPU in between, so
     * the waiter's yields find nobody to hand its CPU to. */
    uint64_t deadline = sp_now_ns() + 2000ull * 1000 * 1000;
    const struct timespec ms = {0, 1000 * 1000};
    while (atomic_load(&word.parked) == 0) {
        cr_assert_lt(sp_now_ns(), deadline, "a crowded waiter yielded on alone for 2 s");
        nanosleep(&ms, NULL);
    }
    sp__waitword_store(&word, 7);
    void *ret;
    pthread_join(th, &ret);
    cr_assert_eq((uint32_t)(uintptr_t)ret, 7);
}
