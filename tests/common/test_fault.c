/* Crash guards: a fault inside a guarded call comes back to the guard, an
 * interrupt aimed at another call (by its token) leaves this one alone, a
 * stray signal cannot fake the interrupt, and the previous handlers are
 * restored when the last reference goes. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fault.h"

static volatile int reached_end;

__attribute__((noinline)) static int guarded_raise(int sig)
{
    sp__fault_guard g;
    reached_end = 0;
    if (SP_FAULT_TRY(&g)) {
        raise(sig);
        reached_end = 1;
    }
    sp__fault_end(&g);
    return g.sig;
}

Test(fault, a_fault_returns_to_the_guard)
{
    cr_assert_eq(sp__fault_install(), 0);
    /* One fault per test: ThreadSanitizer holds back a raise() that follows
     * a jump out of its handler (repeated kernel faults are covered by the
     * scene tests, on core threads). */
    cr_expect_eq(guarded_raise(SIGSEGV), SIGSEGV);
    cr_expect_eq(reached_end, 0);
    sp__fault_uninstall();
}

Test(fault, an_abort_returns_to_the_guard)
{
    cr_assert_eq(sp__fault_install(), 0);
    sp__fault_guard g;
    reached_end = 0;
    if (SP_FAULT_TRY(&g)) {
        abort();
        reached_end = 1;
    }
    sp__fault_end(&g);
    cr_expect_eq(g.sig, SIGABRT);
    cr_expect_eq(reached_end, 0);
    sp__fault_uninstall();
}

/* `how`: 0 the real interrupt, 1 a plain raise of the same signal (what a
 * stray kill looks like), 2 a queued one with another token. */
__attribute__((noinline)) static int guarded_interrupt(_Atomic uint32_t *cancel, uint32_t token,
                                                       int how)
{
    sp__fault_guard g;
    reached_end = 0;
    if (SP_FAULT_TRY_FOR(&g, cancel, token)) {
        if (how == 0)
            sp__fault_interrupt(pthread_self(), token);
        else if (how == 1)
            raise(SP_FAULT_INTERRUPT);
        else
            sp__fault_interrupt(pthread_self(), token + 1);
        /* TSan holds an asynchronous signal back until the thread enters
         * one of its interceptors: give it one inside the guarded call, so
         * the interrupt lands here in every build, not after the guard. */
        usleep(1000);
        reached_end = 1;
    }
    sp__fault_end(&g);
    return g.sig;
}

Test(fault, an_interrupt_for_another_ticket_is_ignored)
{
    cr_assert_eq(sp__fault_install(), 0);
    _Atomic uint32_t cancel = 41;
    /* Meant for ticket 41, arriving while ticket 42 runs: 42 carries on. */
    cr_expect_eq(guarded_interrupt(&cancel, 42, 0), 0);
    cr_expect_eq(reached_end, 1, "the call ran to its end");
    /* Meant for the running ticket: it is broken off. */
    atomic_store(&cancel, 42);
    cr_expect_eq(guarded_interrupt(&cancel, 42, 0), SP_FAULT_INTERRUPT);
    cr_expect_eq(reached_end, 0);
    sp__fault_uninstall();
}

Test(fault, a_stray_signal_cannot_fake_the_interrupt)
{
    cr_assert_eq(sp__fault_install(), 0);
    _Atomic uint32_t cancel = 42;
    cr_expect_eq(guarded_interrupt(&cancel, 42, 1), 0, "a raise()d interrupt signal counted");
    cr_expect_eq(reached_end, 1);
    cr_expect_eq(guarded_interrupt(&cancel, 42, 2), 0, "an interrupt for another token counted");
    cr_expect_eq(reached_end, 1);
    sp__fault_uninstall();
}

static void host_handler(int sig)
{
    (void)sig;
}

Test(fault, the_last_reference_restores_the_previous_handlers)
{
    struct sigaction sa, cur;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = host_handler;
    sigemptyset(&sa.sa_mask);
    cr_assert_eq(sigaction(SIGSEGV, &sa, NULL), 0);
    cr_assert_eq(sp__fault_install(), 0);
    cr_assert_eq(sp__fault_install(), 0);
    sp__fault_uninstall();
    sigaction(SIGSEGV, NULL, &cur);
    cr_expect(cur.sa_handler != host_handler, "one reference is still held");
    sp__fault_uninstall();
    sigaction(SIGSEGV, NULL, &cur);
    cr_expect(cur.sa_handler == host_handler, "the host's handler is back");
}

/* A thread registered with its own object: many guarded calls, no syscall
 * per call; a fault in one does not disturb the next. */
Test(fault, a_registered_thread_runs_guarded_calls)
{
    cr_assert_eq(sp__fault_install(), 0);
    sp__fault_thread t;
    cr_assert_eq(sp__fault_thread_enter(&t), 0);
    for (int i = 0; i < 3; i++) {
        sp__fault_guard g;
        if (SP_FAULT_TRY_ON(&t, &g, NULL, 0)) {
            if (i == 1)
                raise(SIGFPE);
        }
        sp__fault_end(&g);
        cr_expect_eq(g.sig, i == 1 ? SIGFPE : 0, "call %d", i);
    }
    sp__fault_thread_leave(&t);
    sp__fault_uninstall();
}

/* An interrupt that arrives while the call defers it (inside the runtime's
 * own code) is only marked pending; the call takes it where the deferral
 * ends, not where it landed. */
__attribute__((noinline)) static int guarded_deferred(_Atomic uint32_t *cancel, uint32_t token,
                                                      uint32_t *seen)
{
    sp__fault_guard g;
    reached_end = 0;
    if (SP_FAULT_TRY_FOR(&g, cancel, token)) {
        atomic_store(cancel, token | SP_FAULT_DEFER);
        sp__fault_interrupt(pthread_self(), token); /* delivered before this returns */
        reached_end = 1;                            /* the deferred part ran to its end */
        *seen = atomic_exchange(cancel, token);
        if (*seen & SP_FAULT_PENDING)
            sp__fault_jump(&g, SP_FAULT_INTERRUPT);
        reached_end = 2;
    }
    sp__fault_end(&g);
    return g.sig;
}

Test(fault, a_deferred_interrupt_is_taken_where_the_deferral_ends)
{
    cr_assert_eq(sp__fault_install(), 0);
    _Atomic uint32_t cancel = 7;
    uint32_t seen = 0;
    cr_expect_eq(guarded_deferred(&cancel, 7, &seen), SP_FAULT_INTERRUPT);
    cr_expect_eq(reached_end, 1, "jumped inside the deferred part, or not at all");
    cr_expect_eq(seen, 7u | SP_FAULT_DEFER | SP_FAULT_PENDING);
    sp__fault_uninstall();
}

/* A kernel may reset the interrupt's disposition (process-wide) to SIG_IGN
 * or SIG_DFL, which would drop it or kill the process: the guard puts its
 * handler back before it interrupts. */
Test(fault, an_interrupt_reinstalls_a_reset_disposition)
{
    cr_assert_eq(sp__fault_install(), 0);
    _Atomic uint32_t cancel = 9;
    signal(SP_FAULT_INTERRUPT, SIG_IGN);
    cr_expect_eq(guarded_interrupt(&cancel, 9, 0), SP_FAULT_INTERRUPT);
    signal(SP_FAULT_INTERRUPT, SIG_DFL);
    cr_expect_eq(guarded_interrupt(&cancel, 9, 0), SP_FAULT_INTERRUPT, "SIG_DFL kills the process");
    sp__fault_uninstall();
}
