/* Crash guards: sigsetjmp before a guarded call, siglongjmp out of the
 * signal handler when the signalled thread has a guard armed.
 *
 * Where the handler lives: each runtime module links its own copy of this
 * file, and a module is dlclosed with its worker. A signal disposition is
 * process-wide, and once ours is installed another library may save it as
 * its "previous" handler and chain to it at any later time, so code that
 * was ever installed must stay mapped: the modules are linked -z nodelete
 * (src/CMakeLists.txt), and this file restores the previous handlers when
 * the last reference goes if ours is still the one installed. Two copies
 * (an hbg and a tmr module in one process) chain to each other like any
 * two libraries: a signal the top one does not own goes to the one below. */
#include "common/fault.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "simpler/status.h"

/* The synchronous faults a guard catches when the kernel raised them (or
 * its own thread did: raise(SIGSEGV) in a test kernel), then the signals
 * caught only when the guarded thread sent them to itself (abort, assert,
 * raise(SIGTERM)): from anyone else they keep their meaning. The interrupt
 * is last. */
static const int guarded_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, 0};
#define NSIG_GUARDED (int)(sizeof guarded_signals / sizeof guarded_signals[0])
#define INTERRUPT_INDEX (NSIG_GUARDED - 1)

/* The interrupt's value: this tag in the high half, the token in the low. */
#define INTERRUPT_TAG 0x5350494eull /* "SPIN" */

static int signal_at(int i)
{
    return i == INTERRUPT_INDEX ? SP_FAULT_INTERRUPT : guarded_signals[i];
}

/* The handlers that were there before ours. Written under `lock` while
 * ours is not installed for that signal, read by the handler. */
static struct sigaction previous[NSIG_GUARDED];
static bool installed[NSIG_GUARDED]; /* ours is in the chain for this signal */
static unsigned users;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Registered threads: tid, and the thread's object. A slot is claimed by
 * CAS on its tid and only ever read for the calling thread's own tid by
 * the handler, so an object is never read by another thread than its own. */
#define REGISTRY_SLOTS 4096
static struct {
    _Atomic pid_t tid;
    _Atomic(sp__fault_thread *) t;
} registry[REGISTRY_SLOTS];

static pid_t current_tid(void)
{
    return (pid_t)syscall(SYS_gettid);
}

/* The armed guard of the calling thread, or NULL; *known: the thread is
 * registered here at all. A thread may hold two registrations (its own
 * object and a one-off guard); one is armed. */
static sp__fault_guard *armed_guard(pid_t tid, bool *known)
{
    *known = false;
    for (uint32_t n = 0, i = (uint32_t)tid % REGISTRY_SLOTS; n < REGISTRY_SLOTS;
         n++, i = (i + 1) % REGISTRY_SLOTS) {
        /* Relaxed: the slot was written by this same thread (or, for a
         * foreign tid, its value does not matter). */
        if (atomic_load_explicit(&registry[i].tid, memory_order_relaxed) != tid)
            continue;
        *known = true;
        sp__fault_thread *t = atomic_load_explicit(&registry[i].t, memory_order_relaxed);
        sp__fault_guard *g = t ? atomic_load_explicit(&t->armed, memory_order_relaxed) : NULL;
        if (g)
            return g;
    }
    return NULL;
}

/* Hand a signal we do not own to the handler installed before ours. */
static void chain(int i, int sig, siginfo_t *info, void *uctx)
{
    const struct sigaction *p = &previous[i];
    if ((p->sa_flags & SA_SIGINFO) && p->sa_sigaction) {
        p->sa_sigaction(sig, info, uctx);
        return;
    }
    if (p->sa_handler == SIG_IGN)
        return;
    if (p->sa_handler != SIG_DFL) {
        p->sa_handler(sig);
        return;
    }
    if (i == INTERRUPT_INDEX)
        return; /* a stray interrupt is harmless: ours is the only meaning it has here */
    /* The default action: die as if we had never been here. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    raise(sig);
}

/* Sent by this process to this very thread (raise, abort, pthread_kill of self). */
static bool self_sent(const siginfo_t *info)
{
    return info && info->si_code == SI_TKILL && info->si_pid == getpid();
}

static bool ours(int i, int sig, const siginfo_t *info, const sp__fault_guard *g)
{
    if (!g)
        return false;
    if (i == INTERRUPT_INDEX) {
        /* Queued by a thread of ours, or by a watchdog timer of ours (a
         * thread-targeted timer can only be made by this process). */
        if (!info ||
            !((info->si_code == SI_QUEUE && info->si_pid == getpid()) || info->si_code == SI_TIMER))
            return false;
        uint64_t v = (uint64_t)(uintptr_t)info->si_value.sival_ptr;
        return (v >> 32) == INTERRUPT_TAG && g->cancel && (uint32_t)v == g->token &&
               atomic_load_explicit(g->cancel, memory_order_acquire) == g->token;
    }
    if (sig == SIGABRT || sig == SIGTERM)
        return self_sent(info);
    return (info && info->si_code > 0) || self_sent(info); /* the kernel's, or raise() */
}

static void fault_handler(int sig, siginfo_t *info, void *uctx)
{
    int saved_errno = errno;
    int i = 0;
    while (i < INTERRUPT_INDEX && guarded_signals[i] != sig)
        i++;
    bool known;
    sp__fault_guard *g = armed_guard(current_tid(), &known);
    if (i == INTERRUPT_INDEX && g && g->cancel && info &&
        (info->si_code == SI_QUEUE || info->si_code == SI_TIMER)) {
        uint64_t v = (uint64_t)(uintptr_t)info->si_value.sival_ptr;
        /* Cast: a cancel word that can be deferred is its owner's own
         * variable; only a deferred one is written here. */
        _Atomic uint32_t *cw = (_Atomic uint32_t *)(uintptr_t)g->cancel;
        if ((v >> 32) == INTERRUPT_TAG && (uint32_t)v == g->token &&
            atomic_load_explicit(cw, memory_order_relaxed) == (g->token | SP_FAULT_DEFER)) {
            atomic_store_explicit(cw, g->token | SP_FAULT_DEFER | SP_FAULT_PENDING,
                                  memory_order_relaxed);
            errno = saved_errno;
            return;
        }
    }
    if (!ours(i, sig, info, g)) {
        /* An interrupt of ours aimed at a call that has returned: drop it.
         * Only for a thread registered here: another copy of this code (an
         * hbg and a tmr module in one process) sends the same tag to its
         * own threads, and its handler is further down the chain. */
        bool stale = i == INTERRUPT_INDEX && known && info &&
                     (info->si_code == SI_QUEUE || info->si_code == SI_TIMER) &&
                     ((uint64_t)(uintptr_t)info->si_value.sival_ptr >> 32) == INTERRUPT_TAG;
        if (!stale)
            chain(i, sig, info, uctx);
        errno = saved_errno;
        return;
    }
    atomic_store_explicit(&g->thread->armed, NULL, memory_order_relaxed);
    g->sig = sig;
    /* The jump leaves the handler early: unblock the signal, or the next
     * fault of this kind in this thread would kill the process. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    siglongjmp(g->jmp, 1);
}

int sp__fault_install(void)
{
    int rc = SP_OK;
    pthread_mutex_lock(&lock);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fault_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < NSIG_GUARDED; i++) {
        if (installed[i])
            continue;
        if (sigaction(signal_at(i), &sa, &previous[i]) != 0)
            rc = SP_ESYS;
        else
            installed[i] = true;
    }
    if (rc == SP_OK)
        users++;
    pthread_mutex_unlock(&lock);
    return rc;
}

void sp__fault_uninstall(void)
{
    pthread_mutex_lock(&lock);
    if (users && --users == 0) {
        for (int i = 0; i < NSIG_GUARDED; i++) {
            struct sigaction cur;
            /* Someone installed over ours (and may chain to it): leave ours
             * in place, still valid since this code is never unmapped. */
            if (!installed[i] || sigaction(signal_at(i), NULL, &cur) != 0 ||
                !(cur.sa_flags & SA_SIGINFO) || cur.sa_sigaction != fault_handler)
                continue;
            if (sigaction(signal_at(i), &previous[i], NULL) == 0)
                installed[i] = false;
        }
    }
    pthread_mutex_unlock(&lock);
}

#define ALT_STACK_BYTES (64 * 1024)

int sp__fault_thread_enter(sp__fault_thread *t)
{
    atomic_store_explicit(&t->armed, NULL, memory_order_relaxed);
    t->tid = current_tid();
    t->slot = -1;
    t->alt_stack = NULL;
    for (uint32_t n = 0, i = (uint32_t)t->tid % REGISTRY_SLOTS; n < REGISTRY_SLOTS;
         n++, i = (i + 1) % REGISTRY_SLOTS) {
        pid_t free_tid = 0;
        if (atomic_compare_exchange_strong_explicit(&registry[i].tid, &free_tid, t->tid,
                                                    memory_order_relaxed, memory_order_relaxed)) {
            atomic_store_explicit(&registry[i].t, t, memory_order_relaxed);
            t->slot = (int)i;
            break;
        }
    }
    if (t->slot < 0)
        return SP_ESYS;
    /* Keep an alternate stack the thread already has (the host's own, or
     * the one its own object gave it); otherwise give it ours. */
    stack_t cur;
    if (sigaltstack(NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE))
        return SP_OK;
    void *mem = malloc(ALT_STACK_BYTES);
    if (!mem)
        return SP_ENOMEM; /* registered: faults are caught, a stack overflow is not */
    stack_t st = {.ss_sp = mem, .ss_size = ALT_STACK_BYTES, .ss_flags = 0};
    if (sigaltstack(&st, &t->old_stack) != 0) {
        free(mem);
        return SP_ESYS;
    }
    t->alt_stack = mem;
    return SP_OK;
}

void sp__fault_thread_leave(sp__fault_thread *t)
{
    if (t->alt_stack) {
        stack_t cur;
        /* Give the thread back the stack setting it had, if ours is still it. */
        if (sigaltstack(NULL, &cur) == 0 && cur.ss_sp == t->alt_stack) {
            stack_t off = {.ss_flags = SS_DISABLE};
            sigaltstack(t->old_stack.ss_sp ? &t->old_stack : &off, NULL);
        }
        free(t->alt_stack);
        t->alt_stack = NULL;
    }
    if (t->slot >= 0) {
        atomic_store_explicit(&registry[t->slot].t, NULL, memory_order_relaxed);
        /* Release: the slot's next owner sees it empty only after this. */
        atomic_store_explicit(&registry[t->slot].tid, 0, memory_order_release);
        t->slot = -1;
    }
}

void sp__fault_arm_on(sp__fault_thread *t, sp__fault_guard *g, const _Atomic uint32_t *cancel,
                      uint32_t token)
{
    g->sig = 0;
    g->cancel = cancel;
    g->token = token;
    g->thread = t;
    /* Relaxed plus a signal fence: only this thread's handler reads it. */
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&t->armed, g, memory_order_relaxed);
}

void sp__fault_arm_for(sp__fault_guard *g, const _Atomic uint32_t *cancel, uint32_t token)
{
    sp__fault_thread_enter(&g->self); /* on failure the call runs unguarded */
    sp__fault_arm_on(&g->self, g, cancel, token);
}

void sp__fault_arm(sp__fault_guard *g)
{
    sp__fault_arm_for(g, NULL, 0);
}

void sp__fault_end(sp__fault_guard *g)
{
    if (g->thread)
        atomic_store_explicit(&g->thread->armed, NULL, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    if (g->thread == &g->self)
        sp__fault_thread_leave(&g->self);
    g->thread = NULL;
}

/* Put our interrupt handler back if something reset the disposition to
 * SIG_IGN or SIG_DFL since it was installed; a handler someone installed
 * over ours is left alone (it may chain to ours). */
static void keep_interrupt_handler(void)
{
    pthread_mutex_lock(&lock);
    struct sigaction cur;
    if (users && sigaction(SP_FAULT_INTERRUPT, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
        (cur.sa_handler == SIG_IGN || cur.sa_handler == SIG_DFL)) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = fault_handler;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(SP_FAULT_INTERRUPT, &sa, NULL);
    }
    pthread_mutex_unlock(&lock);
}

void sp__fault_jump(sp__fault_guard *g, int sig)
{
    atomic_store_explicit(&g->thread->armed, NULL, memory_order_relaxed);
    g->sig = sig;
    siglongjmp(g->jmp, 1);
}

int sp__fault_interrupt(pthread_t thread, uint32_t token)
{
    keep_interrupt_handler();
    union sigval v = {.sival_ptr = (void *)(uintptr_t)(INTERRUPT_TAG << 32 | token)};
    return pthread_sigqueue(thread, SP_FAULT_INTERRUPT, v) == 0 ? SP_OK : SP_ESYS;
}

int sp__fault_watchdog_start(sp__fault_watchdog *wd, uint32_t token, uint64_t timeout_ns)
{
    wd->armed = false;
    keep_interrupt_handler();
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SP_FAULT_INTERRUPT;
    sev.sigev_value.sival_ptr = (void *)(uintptr_t)(INTERRUPT_TAG << 32 | token);
    sev._sigev_un._tid = current_tid(); /* glibc 2.36 lacks sigev_notify_thread_id */
    if (timer_create(CLOCK_MONOTONIC, &sev, &wd->timer) != 0)
        return SP_ESYS;
    struct itimerspec when = {.it_value = {.tv_sec = (time_t)(timeout_ns / 1000000000u),
                                           .tv_nsec = (long)(timeout_ns % 1000000000u)}};
    if (when.it_value.tv_sec == 0 && when.it_value.tv_nsec == 0)
        when.it_value.tv_nsec = 1;
    if (timer_settime(wd->timer, 0, &when, NULL) != 0) {
        timer_delete(wd->timer);
        return SP_ESYS;
    }
    wd->armed = true;
    return SP_OK;
}

void sp__fault_watchdog_stop(sp__fault_watchdog *wd)
{
    /* A signal the timer sent just before is delivered as this call
     * returns to user space: the guard, already disarmed, drops it. */
    if (wd->armed)
        timer_delete(wd->timer);
    wd->armed = false;
}

uint32_t sp__fault_new_token(void)
{
    static _Atomic uint32_t next;
    uint32_t t;
    do /* relaxed: only uniqueness matters */
        t = (atomic_fetch_add_explicit(&next, 1, memory_order_relaxed) + 1) & 0x3fffffffu;
    while (t == 0);
    return t;
}

const char *sp__fault_name(int sig)
{
    if (sig == SP_FAULT_INTERRUPT)
        return "timeout";
    if (sig == SP_FAULT_ABANDONED)
        return "abandoned";
    if (sig == SP_FAULT_EXITED)
        return "thread exit";
    if (sig == SP_FAULT_UPSTREAM)
        return "not run: the payload ahead of it faulted";
    switch (sig) {
    case SIGSEGV:
        return "SIGSEGV";
    case SIGBUS:
        return "SIGBUS";
    case SIGFPE:
        return "SIGFPE";
    case SIGILL:
        return "SIGILL";
    case SIGABRT:
        return "SIGABRT";
    case SIGTERM:
        return "SIGTERM";
    default:
        return "signal";
    }
}
