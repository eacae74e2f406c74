/* Surviving a crash in code we call but do not own (a kernel on a core
 * thread, an orchestration, a callable's config): the call runs under a
 * guard; a SIGSEGV, SIGBUS, SIGFPE, SIGILL raised inside it, a SIGABRT or
 * SIGTERM its own thread raises (abort(), a failed assert(), raise()), or
 * the interrupt another thread sends to stop a call that ran too long,
 * returns control to the guard instead of killing the process. Every other
 * signal goes to whatever handler was installed before ours (the default
 * one: the process dies as usual).
 *
 *   sp__fault_guard g;
 *   if (SP_FAULT_TRY(&g)) { call(); }
 *   sp__fault_end(&g);   // both ways: it gives the thread's state back
 *   ... g.sig says what happened (0: the call returned) ...
 *
 * No thread-locals (a dlopened module's TLS is allocated lazily by the
 * loader, which aborts when malloc fails, and is lost at dlclose): the
 * handler finds the faulting thread's guard in a small lock-free table of
 * registered threads keyed by kernel thread id. A thread that runs many
 * guarded calls (a core) registers once, with an sp__fault_thread its own
 * object owns, and arms per call with two plain stores (SP_FAULT_TRY_ON);
 * a one-off guard (SP_FAULT_TRY) registers the calling thread for the
 * call's length (a few syscalls per call, not per task).
 *
 * The interrupt is a real-time signal sent with pthread_sigqueue and a
 * value naming the call it is meant for; a signal anyone else sends (kill,
 * another process, another value) cannot fake it. SIGUSR1/SIGUSR2 are left
 * to the host program. */
#ifndef SP_COMMON_FAULT_H
#define SP_COMMON_FAULT_H

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* The interrupt signal (glibc's SIGRTMIN is a function call, not a constant). */
#define SP_FAULT_INTERRUPT (SIGRTMIN + 5)

/* What a core reports for a ticket that no signal ended (not signal
 * numbers: above every real one). ABANDONED: the kernel did not answer the
 * interrupt within the grace period, and its thread was given up and
 * replaced; EXITED: the kernel ended its own thread (pthread_exit). */
#define SP_FAULT_ABANDONED 0x10001
#define SP_FAULT_EXITED 0x10002
/* Not run: an SP_PAYLOAD_CHAINED payload whose predecessor on its core
 * faulted (the run already failed with that fault). */
#define SP_FAULT_UPSTREAM 0x10003

struct sp__fault_guard;

/* A thread that runs guarded calls, as the signal handler finds it. Owned
 * by the thread's own object (a core, an AICPU thread) or by a one-off guard. */
typedef struct sp__fault_thread {
    _Atomic(struct sp__fault_guard *) armed; /* the guard of the running call, or NULL */
    pid_t tid;
    int slot;        /* index in the registry, -1 when not registered */
    void *alt_stack; /* our alternate signal stack, NULL if the thread had its own */
    stack_t old_stack;
} sp__fault_thread;

typedef struct sp__fault_guard {
    sigjmp_buf jmp;
    volatile sig_atomic_t sig; /* the signal that ended the call, 0 if none */
    /* The interrupt ends this call only when its value carries `token` and
     * while *cancel == token (so an interrupt meant for an earlier call on
     * the same thread, which returned just before it arrived, is ignored).
     * cancel NULL: the call cannot be interrupted (faults still end it). */
    const _Atomic uint32_t *cancel;
    uint32_t token;
    sp__fault_thread *thread; /* whom the guard is armed on */
    sp__fault_thread self;    /* a one-off guard's registration (SP_FAULT_TRY) */
} sp__fault_guard;

/* Take a reference on the process's handlers: installed when the first
 * reference is taken (the previous handlers saved), restored when the last
 * one is dropped (if nobody installed over them meanwhile). Thread-safe.
 * Returns 0 or SP_ESYS. Guards work only while a reference is held. */
int sp__fault_install(void);
/* Drop a reference taken by sp__fault_install. */
void sp__fault_uninstall(void);

/* Register the calling thread with `t` (its own object) and give it an
 * alternate signal stack unless it has one (so a stack overflow in a
 * guarded call can be caught). Returns 0, or SP_ENOMEM / SP_ESYS when the
 * registry is full (the thread's calls then run unguarded). */
int sp__fault_thread_enter(sp__fault_thread *t);
/* Unregister the calling thread and give its alternate stack back (call on
 * the thread that entered, before it exits). */
void sp__fault_thread_leave(sp__fault_thread *t);

/* Arm `g` on registered thread `t` (the calling thread); no syscall. Use
 * through SP_FAULT_TRY_ON. */
void sp__fault_arm_on(sp__fault_thread *t, sp__fault_guard *g, const _Atomic uint32_t *cancel,
                      uint32_t token);
/* Register the calling thread for one call and arm `g`; use through
 * SP_FAULT_TRY / SP_FAULT_TRY_FOR. */
void sp__fault_arm(sp__fault_guard *g);
void sp__fault_arm_for(sp__fault_guard *g, const _Atomic uint32_t *cancel, uint32_t token);
/* Disarm, whichever way the call ended; a one-off guard also unregisters
 * the thread. Idempotent. */
void sp__fault_end(sp__fault_guard *g);

/* Interrupts deferred: a guarded call that enters code which must not be
 * jumped out of (the runtime's own, behind an sp_orch call) sets its
 * cancel word to token | SP_FAULT_DEFER; an interrupt then only marks it
 * SP_FAULT_PENDING, and the code, on its way out, restores the token and
 * jumps itself (sp__fault_jump) if one came. Tokens stay below 2^30. */
#define SP_FAULT_DEFER 0x80000000u
#define SP_FAULT_PENDING 0x40000000u
/* From the guarded thread, outside a handler: end the call `g` guards as
 * if `sig` had (the guard's sigsetjmp returns again). */
_Noreturn void sp__fault_jump(sp__fault_guard *g, int sig);

/* Send the interrupt to `thread`, aimed at the call armed with `token`.
 * Dispositions are process-wide and a kernel may have reset the
 * interrupt's to SIG_IGN or SIG_DFL (which would kill the process): ours is
 * put back first in that case. Returns 0 or SP_ESYS (the thread is gone, or
 * the queue is full). */
int sp__fault_interrupt(pthread_t thread, uint32_t token);

/* A one-shot timer that sends the interrupt, aimed at `token`, to the
 * calling thread after `timeout_ns` (a watchdog over a call that cannot be
 * watched from another thread: the orchestration). Returns 0 or SP_ESYS.
 * Stop it before the guard it serves is armed again. */
typedef struct sp__fault_watchdog {
    timer_t timer;
    bool armed;
} sp__fault_watchdog;
int sp__fault_watchdog_start(sp__fault_watchdog *wd, uint32_t token, uint64_t timeout_ns);
void sp__fault_watchdog_stop(sp__fault_watchdog *wd);
/* A token no earlier call in this process used (never 0). */
uint32_t sp__fault_new_token(void);

/* Name of a signal a guard caught ("SIGSEGV", "timeout" for the interrupt). */
const char *sp__fault_name(int sig);

/* True the first time (run the call); false when a signal ended it. The
 * signal mask is not saved (that would be a syscall per guarded call); the
 * handler unblocks the caught signal itself before jumping back. */
#define SP_FAULT_TRY(g) (sp__fault_arm(g), sigsetjmp((g)->jmp, 0) == 0)
#define SP_FAULT_TRY_FOR(g, cancel, token)                                                         \
    (sp__fault_arm_for(g, cancel, token), sigsetjmp((g)->jmp, 0) == 0)
#define SP_FAULT_TRY_ON(t, g, cancel, token)                                                       \
    (sp__fault_arm_on(t, g, cancel, token), sigsetjmp((g)->jmp, 0) == 0)

#endif
