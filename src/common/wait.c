/* Spin-yield-park waiting on a futex word. The parked count and the value
 * form a Dekker pair: the waiter counts itself in (seq_cst) before its
 * last look at the value, the writer stores the value (seq_cst) before it
 * looks at the count, so at least one of them sees the other and no wake
 * is lost. Only the waiter takes itself out of the count, once it is awake
 * again: a writer that cleared it could consume the mark of a waiter that
 * parked again after the writer's change and before its wake, and that
 * waiter would then sleep through every later write (the lost wake-up of
 * issue 12, item 10b). SP_WAIT_STEP(n) marks each step of the protocol
 * for the test that replays that interleaving; it is nothing otherwise. */
#include "common/wait.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SP_WAIT_STEP
#define SP_WAIT_STEP(step) ((void)0)
#endif

const sp__wait_policy sp__wait_default = {.spin_ns = 20000, .yield_ns = 200000};

uint64_t sp_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void futex_wake_all(_Atomic uint32_t *addr)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Sleep while *addr == old, until woken or the absolute monotonic deadline. */
static void futex_wait_until(_Atomic uint32_t *addr, uint32_t old, uint64_t deadline_ns)
{
    struct timespec ts, *tsp = NULL;
    if (deadline_ns) {
        ts.tv_sec = (time_t)(deadline_ns / 1000000000ull);
        ts.tv_nsec = (long)(deadline_ns % 1000000000ull);
        tsp = &ts;
    }
    /* BITSET takes an absolute CLOCK_MONOTONIC deadline; EAGAIN, EINTR and
     * ETIMEDOUT all just send the caller back to re-check the value. */
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_BITSET_PRIVATE, old, tsp, NULL,
            FUTEX_BITSET_MATCH_ANY);
}

/* The writer's half of the Dekker pair: a seq_cst write of the value, then
 * a seq_cst look at the parked count (seq_cst operations rather than a
 * fence, so ThreadSanitizer can follow the pairing); a syscall only while
 * somebody may be asleep. */
static void wake_if_parked(sp__waitword *w)
{
    if (atomic_load_explicit(&w->parked, memory_order_seq_cst)) {
        SP_WAIT_STEP(SP_WAIT_STEP_WAKE);
        futex_wake_all(&w->value);
    }
}

void sp__waitword_wake(sp__waitword *w)
{
    wake_if_parked(w);
}

void sp__waitword_store(sp__waitword *w, uint32_t v)
{
    atomic_store_explicit(&w->value, v, memory_order_seq_cst);
    wake_if_parked(w);
}

uint32_t sp__waitword_add(sp__waitword *w, uint32_t d)
{
    uint32_t old = atomic_fetch_add_explicit(&w->value, d, memory_order_seq_cst);
    wake_if_parked(w);
    return old;
}

uint32_t sp__waitword_wait_ne(sp__waitword *w, uint32_t old, const sp__wait_policy *policy,
                              uint64_t deadline_ns, int *timed_out)
{
    return sp__waitword_wait_ne_flagged(w, old, policy, deadline_ns, timed_out, NULL);
}

uint32_t sp__waitword_wait_ne_flagged(sp__waitword *w, uint32_t old, const sp__wait_policy *policy,
                                      uint64_t deadline_ns, int *timed_out,
                                      _Atomic uint32_t *park_flag)
{
    return sp__waitword_wait_adaptive(w, old, policy, NULL, deadline_ns, timed_out, park_flag);
}

void sp__wait_adapt_init(sp__wait_adapt *a, const sp__wait_policy *policy)
{
    if (!policy)
        policy = &sp__wait_default;
    /* Relaxed: before the waiters start (a thread start publishes it). */
    atomic_store_explicit(&a->spin_ns, policy->spin_ns, memory_order_relaxed);
    atomic_store_explicit(&a->skip_yield, 0, memory_order_relaxed);
    atomic_store_explicit(&a->backoff, SP_WAIT_SKIP_FIRST, memory_order_relaxed);
}

/* The adapted spin budget, within [floor, the policy's rung]. */
static uint32_t spin_floor(const sp__wait_policy *policy)
{
    return policy->spin_ns < SP_WAIT_SPIN_FLOOR_NS ? policy->spin_ns : SP_WAIT_SPIN_FLOOR_NS;
}

static uint32_t adapted_spin(sp__wait_adapt *a, const sp__wait_policy *policy)
{
    /* Relaxed: a hint (sp__wait_adapt). */
    uint32_t s = atomic_load_explicit(&a->spin_ns, memory_order_relaxed);
    uint32_t lo = spin_floor(policy);
    return s < lo ? lo : s > policy->spin_ns ? policy->spin_ns : s;
}

void sp__wait_adapt_note(sp__wait_adapt *a, const sp__wait_policy *policy, sp__wait_end end,
                         uint64_t waited_ns, bool slow_yield)
{
    if (!policy)
        policy = &sp__wait_default;
    /* A wait the spin caught argues for the policy's full spin (spinning
     * works here: no clock read, and no write once there); one that
     * outlasted the spin but that a spin of the policy's length would have
     * caught, for twice its length; a longer one for the floor. A quarter
     * of the way each time: one odd wait does not undo a trend. All
     * relaxed: hints. */
    uint32_t cur = adapted_spin(a, policy);
    uint64_t target = end == SP_WAIT_END_SPIN        ? policy->spin_ns
                      : waited_ns <= policy->spin_ns ? 2 * waited_ns
                                                     : 0;
    uint32_t lo = spin_floor(policy);
    if (target < lo)
        target = lo;
    if (target > policy->spin_ns)
        target = policy->spin_ns;
    int64_t next = (int64_t)cur + ((int64_t)target - (int64_t)cur) / 4;
    if (target == policy->spin_ns && cur + 4 > target)
        next = target; /* the quarter steps would stop short of it */
    if ((uint32_t)next != atomic_load_explicit(&a->spin_ns, memory_order_relaxed))
        atomic_store_explicit(&a->spin_ns, (uint32_t)next, memory_order_relaxed);
    if (slow_yield) {
        uint32_t b = atomic_load_explicit(&a->backoff, memory_order_relaxed);
        if (b < SP_WAIT_SKIP_FIRST)
            b = SP_WAIT_SKIP_FIRST;
        atomic_store_explicit(&a->skip_yield, b, memory_order_relaxed);
        atomic_store_explicit(&a->backoff, b < SP_WAIT_SKIP_MAX / 2 ? 2 * b : SP_WAIT_SKIP_MAX,
                              memory_order_relaxed);
    } else if (end == SP_WAIT_END_YIELD) {
        /* Yields hand the CPU over briefly again: the next skip starts short. */
        atomic_store_explicit(&a->backoff, SP_WAIT_SKIP_FIRST, memory_order_relaxed);
    }
}

uint32_t sp__waitword_wait_adaptive(sp__waitword *w, uint32_t old, const sp__wait_policy *policy,
                                    sp__wait_adapt *adapt, uint64_t deadline_ns, int *timed_out,
                                    _Atomic uint32_t *park_flag)
{
    if (!policy)
        policy = &sp__wait_default;
    if (timed_out)
        *timed_out = 0;
    uint32_t v = sp__waitword_load(w);
    if (v != old)
        return v;

    uint64_t start = sp_now_ns();
    uint32_t spin_ns = policy->spin_ns, yield_ns = policy->yield_ns;
    if (adapt) {
        spin_ns = adapted_spin(adapt, policy);
        /* Relaxed: a hint; two sharers may both take the same skip. */
        uint32_t skip = atomic_load_explicit(&adapt->skip_yield, memory_order_relaxed);
        if (skip) {
            atomic_store_explicit(&adapt->skip_yield, skip - 1, memory_order_relaxed);
            yield_ns = 0;
        }
    }
    /* Relaxed: the count is a hint about CPU pressure, not a handshake. */
    bool crowded =
        policy->awake && atomic_load_explicit(policy->awake, memory_order_relaxed) > policy->cpus;
    uint64_t spin_end = start + (crowded ? 0 : spin_ns);
    const unsigned look_mask = spin_ns < policy->spin_ns ? 7 : 63;
    uint64_t yield_end = spin_end + yield_ns;
    sp__wait_end end = SP_WAIT_END_SPIN;
    bool slow_yield = false;
    for (unsigned i = 1;; i++) {
        v = sp__waitword_load(w);
        if (v != old)
            goto done;
        /* Read the clock only every 64 looks (every 8 under a shortened
         * budget): it costs more than a pause, but a pause can take ~50 ns,
         * and 64 of them would outlast the short budgets adaptation picks. */
        if ((i & look_mask) == 0) {
            uint64_t now = sp_now_ns();
            if (deadline_ns && now >= deadline_ns)
                goto timeout;
            if (now >= spin_end)
                break;
        }
        sp__cpu_relax();
    }
    end = SP_WAIT_END_YIELD;
    uint32_t lonely = 0;
    for (uint64_t before = 0;;) {
        v = sp__waitword_load(w);
        if (v != old)
            goto done;
        uint64_t now = sp_now_ns();
        if (deadline_ns && now >= deadline_ns)
            goto timeout;
        /* A yield that kept this thread off the CPU for a time slice: the
         * CPU went to somebody who keeps it; waiting on will not get it
         * back sooner than a wake-up does. */
        if (before && now - before >= SP_WAIT_YIELD_SLOW_NS) {
            slow_yield = true;
            break;
        }
        /* Yields that come straight back while the group is crowded: no
         * other thread wants this CPU, so the ones that need one queue on
         * another CPU, and the kernel does not move them onto a CPU that
         * looks busy. Parking frees this one for them, for a waiter whose
         * policy can afford the wake-up (park_when_lonely). */
        if (before)
            lonely = sp__wait_lonely_count(lonely, now - before);
        if (policy->park_when_lonely && sp__wait_lonely_park(lonely, crowded))
            break;
        if (now >= yield_end)
            break;
        before = now;
        sched_yield();
    }
    end = SP_WAIT_END_PARK;
    for (;;) {
        if (park_flag)
            atomic_fetch_add_explicit(park_flag, 1, memory_order_seq_cst);
        atomic_fetch_add_explicit(&w->parked, 1, memory_order_seq_cst);
        v = atomic_load_explicit(&w->value, memory_order_seq_cst);
        if (v == old) {
            /* Relaxed: see `crowded` above. */
            if (policy->counted)
                atomic_fetch_sub_explicit(policy->awake, 1, memory_order_relaxed);
            SP_WAIT_STEP(SP_WAIT_STEP_SLEEP);
            futex_wait_until(&w->value, old, deadline_ns);
            if (policy->counted)
                atomic_fetch_add_explicit(policy->awake, 1, memory_order_relaxed);
        }
        /* Relaxed: a late decrement costs a writer at most a spare wake. */
        atomic_fetch_sub_explicit(&w->parked, 1, memory_order_relaxed);
        /* Relaxed: a late decrement costs a writer at most a spare wake. */
        if (park_flag)
            atomic_fetch_sub_explicit(park_flag, 1, memory_order_relaxed);
        v = sp__waitword_load(w);
        if (v != old)
            goto done;
        if (deadline_ns && sp_now_ns() >= deadline_ns)
            goto timeout;
    }
done:
    if (adapt)
        sp__wait_adapt_note(adapt, policy, end, end == SP_WAIT_END_SPIN ? 0 : sp_now_ns() - start,
                            slow_yield);
    return v;
timeout:
    if (adapt)
        sp__wait_adapt_note(adapt, policy, SP_WAIT_END_PARK, sp_now_ns() - start, slow_yield);
    if (timed_out)
        *timed_out = 1;
    return old;
}
