/* Crash guards: sigsetjmp before a guarded call, siglongjmp out of the
 * signal handler when the faulting thread has a guard armed. */
#include "common/fault.h"

#include <stdlib.h>
#include <string.h>

#include "simpler/status.h"

static const int guarded_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SP_FAULT_INTERRUPT};
#define NSIG_GUARDED (int)(sizeof guarded_signals / sizeof guarded_signals[0])

/* The handlers that were there before ours, for signals outside a guard.
 * Written once under pthread_once, read by the handler afterwards. */
static struct sigaction previous[NSIG_GUARDED];
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_status;

/* The calling thread's armed guard (see fault.h for why this is a TLS). */
static __thread sp_fault_guard *armed;
static __thread void *alt_stack;

static void fault_handler(int sig, siginfo_t *info, void *uctx)
{
    sp_fault_guard *g = armed;
    /* An interrupt aimed at a call that has returned: the thread has moved
     * on to another one, which must not be broken off. */
    if (g && sig == SP_FAULT_INTERRUPT && g->cancel &&
        atomic_load_explicit(g->cancel, memory_order_acquire) != g->token)
        return;
    if (g) {
        armed = NULL;
        g->sig = sig;
        /* The jump leaves the handler early: unblock the signal, or the
         * next fault of this kind in this thread would kill the process. */
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        siglongjmp(g->jmp, 1);
    }
    /* Not ours: hand it to the previous handler, or die as the default would. */
    for (int i = 0; i < NSIG_GUARDED; i++) {
        if (guarded_signals[i] != sig)
            continue;
        const struct sigaction *p = &previous[i];
        if ((p->sa_flags & SA_SIGINFO) && p->sa_sigaction) {
            p->sa_sigaction(sig, info, uctx);
            return;
        }
        if (p->sa_handler == SIG_IGN || (sig == SP_FAULT_INTERRUPT && p->sa_handler == SIG_DFL))
            return; /* a stray interrupt is harmless */
        if (p->sa_handler != SIG_DFL) {
            p->sa_handler(sig);
            return;
        }
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fault_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < NSIG_GUARDED; i++)
        if (sigaction(guarded_signals[i], &sa, &previous[i]) != 0)
            install_status = SP_ESYS;
}

int sp_fault_install(void)
{
    pthread_once(&install_once, install_handlers);
    if (install_status)
        return install_status;
    if (!alt_stack) {
        size_t size = 64 * 1024;
        alt_stack = malloc(size);
        if (!alt_stack)
            return SP_ENOMEM;
        stack_t st = {.ss_sp = alt_stack, .ss_size = size, .ss_flags = 0};
        if (sigaltstack(&st, NULL) != 0)
            return SP_ESYS;
    }
    return SP_OK;
}

void sp_fault_release(void)
{
    if (!alt_stack)
        return;
    stack_t st = {.ss_flags = SS_DISABLE};
    sigaltstack(&st, NULL);
    free(alt_stack);
    alt_stack = NULL;
}

void sp_fault_arm(sp_fault_guard *g)
{
    g->sig = 0;
    g->cancel = NULL;
    armed = g;
}

void sp_fault_arm_for(sp_fault_guard *g, const _Atomic uint32_t *cancel, uint32_t token)
{
    g->sig = 0;
    g->cancel = cancel;
    g->token = token;
    armed = g;
}

void sp_fault_end(sp_fault_guard *g)
{
    (void)g;
    armed = NULL;
}

const char *sp_fault_name(int sig)
{
    switch (sig) {
    case SIGSEGV:
        return "SIGSEGV";
    case SIGBUS:
        return "SIGBUS";
    case SIGFPE:
        return "SIGFPE";
    case SIGILL:
        return "SIGILL";
    case SP_FAULT_INTERRUPT:
        return "timeout";
    default:
        return "signal";
    }
}
