/* The spin-yield-park wait: wakes across all three rungs, times out with a
 * deadline, and a parked waiter really sleeps (no CPU while parked). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sys/resource.h>

#include "common/wait.h"
#include "cpu_while_sleeping.h"

static sp__waitword word;

static void *waiter(void *arg)
{
    uint32_t old = (uint32_t)(uintptr_t)arg;
    uint32_t v = sp__waitword_wait_ne(&word, old, NULL, 0, NULL);
    return (void *)(uintptr_t)v;
}

Test(wait, returns_at_once_when_value_already_differs)
{
    atomic_store(&word.value, 7);
    int to = -1;
    cr_assert_eq(sp__waitword_wait_ne(&word, 3, NULL, 0, &to), 7);
    cr_assert_eq(to, 0);
}

Test(wait, times_out_at_deadline)
{
    atomic_store(&word.value, 1);
    int to = 0;
    sp__wait_policy quick = {.spin_ns = 1000, .yield_ns = 1000};
    uint64_t deadline = sp_now_ns() + 20 * 1000 * 1000;
    cr_assert_eq(sp__waitword_wait_ne(&word, 1, &quick, deadline, &to), 1);
    cr_assert_eq(to, 1);
    cr_assert_geq(sp_now_ns(), deadline);
}

static void wake_after_parked(void)
{
    /* Wait (with a deadline) until the waiter has announced it is parked. */
    uint64_t deadline = sp_now_ns() + 5ull * 1000 * 1000 * 1000;
    while (atomic_load(&word.parked) == 0)
        cr_assert_lt(sp_now_ns(), deadline, "waiter never parked");
}

Test(wait, parked_waiter_is_woken_by_store)
{
    atomic_store(&word.value, 10);
    pthread_t th;
    pthread_create(&th, NULL, waiter, (void *)(uintptr_t)10);
    wake_after_parked();
    sp__waitword_store(&word, 11);
    void *ret;
    pthread_join(th, &ret);
    cr_assert_eq((uint32_t)(uintptr_t)ret, 11);
    cr_assert_eq(atomic_load(&word.parked), 0);
}

Test(wait, parked_waiter_is_woken_by_add_and_uses_no_cpu)
{
    atomic_store(&word.value, 0);
    pthread_t th;
    pthread_create(&th, NULL, waiter, (void *)(uintptr_t)0);
    wake_after_parked();
    /* Let the parked waiter sit for a while: it must not burn CPU. */
    double cpu_ms = cpu_ms_while_sleeping(200ull * 1000 * 1000);
    cr_assert_lt(cpu_ms, 10.0, "parked waiter used %.1f ms CPU in 200 ms", cpu_ms);
    sp__waitword_add(&word, 5);
    void *ret;
    pthread_join(th, &ret);
    cr_assert_eq((uint32_t)(uintptr_t)ret, 5);
}
