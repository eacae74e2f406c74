/* Crash guards: a fault inside a guarded call comes back to the guard, and
 * an interrupt aimed at another call (by its token) leaves this one alone. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "common/fault.h"

static volatile int reached_end;

__attribute__((noinline)) static int guarded_raise(int sig)
{
    sp_fault_guard g;
    reached_end = 0;
    if (SP_FAULT_TRY(&g)) {
        raise(sig);
        reached_end = 1;
        sp_fault_end(&g);
        return 0;
    }
    return g.sig;
}

Test(fault, a_fault_returns_to_the_guard)
{
    cr_assert_eq(sp_fault_install(), 0);
    /* One fault per test: ThreadSanitizer holds back a raise() that follows
     * a jump out of its handler (repeated kernel faults are covered by the
     * scene tests, on core threads). */
    cr_expect_eq(guarded_raise(SIGSEGV), SIGSEGV);
    cr_expect_eq(reached_end, 0);
    sp_fault_release();
}

/* The interrupt ends a call armed for `token` only while *cancel names it. */
__attribute__((noinline)) static int guarded_interrupt(_Atomic uint32_t *cancel, uint32_t token)
{
    sp_fault_guard g;
    reached_end = 0;
    if (SP_FAULT_TRY_FOR(&g, cancel, token)) {
        raise(SP_FAULT_INTERRUPT);
        reached_end = 1;
        sp_fault_end(&g);
        return 0;
    }
    return g.sig;
}

Test(fault, an_interrupt_for_another_ticket_is_ignored)
{
    cr_assert_eq(sp_fault_install(), 0);
    _Atomic uint32_t cancel = 41;
    /* Meant for ticket 41, arriving while ticket 42 runs: 42 carries on. */
    cr_expect_eq(guarded_interrupt(&cancel, 42), 0);
    cr_expect_eq(reached_end, 1, "the call ran to its end");
    /* Meant for the running ticket: it is broken off. */
    atomic_store(&cancel, 42);
    cr_expect_eq(guarded_interrupt(&cancel, 42), SP_FAULT_INTERRUPT);
    cr_expect_eq(reached_end, 0);
    sp_fault_release();
}
