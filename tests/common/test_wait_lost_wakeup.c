/* Issue 12, item 10b: the interleaving that lost a wake-up in the
 * spin-yield-park wait, replayed step by step. The waker used to take the
 * parked mark down as it woke everybody; a waker held up between seeing
 * the mark and taking it down took the mark of a waiter that had woken
 * (thanks to another writer) and parked again, its wake went out before
 * that waiter slept, and the waiter then slept through every later write:
 * the scheduler that missed new ready work while the orchestrator waited
 * for room, SP_ESTALL after 30 s. This file compiles its own copy of
 * src/common/wait.c with its protocol steps (SP_WAIT_STEP) hooked, under
 * other names, so the test can stop a thread at a step and let it go. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#define sp__wait_default hooked_wait_default
#define sp_now_ns hooked_now_ns
#define sp__waitword_store hooked_waitword_store
#define sp__waitword_add hooked_waitword_add
#define sp__waitword_wake hooked_waitword_wake
#define sp__waitword_wait_ne hooked_waitword_wait_ne
#define sp__waitword_wait_ne_flagged hooked_waitword_wait_ne_flagged

static void step(int which);
#define SP_WAIT_STEP(which) step(which)
#include "../../src/common/wait.c"

static sp__waitword word;
static const sp__wait_policy park_at_once = {.spin_ns = 0, .yield_ns = 0};

/* The threads the script stops, and where. */
static pthread_t late_waker, waiter_thread;
static _Atomic int waiter_tid, waiter_round, results;
static _Atomic uint32_t last_seen;
static _Atomic int waker_held, waker_go, waiter_held, waiter_go;

static void step(int which)
{
    pthread_t self = pthread_self();
    if (which == SP_WAIT_STEP_WAKE && pthread_equal(self, late_waker)) {
        atomic_store(&waker_held, 1);
        while (!atomic_load(&waker_go))
            sched_yield();
    }
    if (which == SP_WAIT_STEP_SLEEP && pthread_equal(self, waiter_thread) &&
        atomic_load(&waiter_round) == 2) {
        atomic_store(&waiter_held, 1);
        while (!atomic_load(&waiter_go))
            sched_yield();
    }
}

static void *waiter(void *arg)
{
    (void)arg;
    atomic_store(&waiter_tid, (int)syscall(SYS_gettid));
    for (int round = 1; round <= 3; round++) {
        atomic_store(&waiter_round, round);
        uint32_t old = sp__waitword_load(&word);
        uint32_t v = hooked_waitword_wait_ne(&word, old, &park_at_once, 0, NULL);
        atomic_store(&last_seen, v);
        atomic_fetch_add(&results, 1);
    }
    return NULL;
}

static void *late_add(void *arg)
{
    (void)arg;
    hooked_waitword_add(&word, 1);
    return NULL;
}

/* True once the waiter thread sleeps in the kernel (state S in /proc). */
static bool waiter_sleeps(void)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", atomic_load(&waiter_tid));
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] == 'S';
}

#define WAIT_UNTIL(cond, what)                                                                     \
    do {                                                                                           \
        uint64_t until_ = hooked_now_ns() + 5ull * 1000 * 1000 * 1000;                             \
        while (!(cond)) {                                                                          \
            cr_assert_lt(hooked_now_ns(), until_, "never: %s", what);                              \
            sched_yield();                                                                         \
        }                                                                                          \
    } while (0)

static uint32_t parked_count(void)
{
    return atomic_load(&word.parked);
}

Test(wait_lost_wakeup, a_late_waker_cannot_put_a_parked_waiter_to_sleep_for_good)
{
    atomic_store(&word.value, 0);
    /* Round 1: the waiter parks on 0 and sleeps. */
    pthread_create(&waiter_thread, NULL, waiter, NULL);
    WAIT_UNTIL(atomic_load(&waiter_tid) && parked_count() && waiter_sleeps(), "waiter asleep");
    /* A writer adds and sees the waiter parked; it is held there. */
    pthread_create(&late_waker, NULL, late_add, NULL);
    WAIT_UNTIL(atomic_load(&waker_held), "late waker at its wake");
    /* Another writer wakes the waiter, which sees 2 and parks again
     * (round 2); it is held just before it sleeps. */
    hooked_waitword_add(&word, 1);
    WAIT_UNTIL(atomic_load(&results) == 1 && atomic_load(&waiter_held), "waiter parked again");
    cr_assert_eq(atomic_load(&last_seen), 2);
    /* The late writer goes on: its wake finds nobody asleep yet. */
    atomic_store(&waker_go, 1);
    pthread_join(late_waker, NULL);
    /* The waiter sleeps on 2, rightly: nothing changed since it looked. */
    atomic_store(&waiter_go, 1);
    WAIT_UNTIL(waiter_sleeps(), "waiter asleep again");
    /* A new write must wake it. */
    hooked_waitword_add(&word, 1);
    WAIT_UNTIL(atomic_load(&results) == 2, "the waiter woken by the third write");
    cr_assert_eq(atomic_load(&last_seen), 3);
    /* Round 3 ends the waiter. */
    hooked_waitword_add(&word, 1);
    pthread_join(waiter_thread, NULL);
    cr_assert_eq(atomic_load(&last_seen), 4);
    cr_assert_eq(parked_count(), 0, "every waiter took itself out of the count");
}
