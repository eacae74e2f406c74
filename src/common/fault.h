/* Surviving a crash in code we call but do not own (a kernel on a core
 * thread, an orchestration): the call runs under a guard; a SIGSEGV, SIGBUS,
 * SIGFPE or SIGILL raised inside it — or the interrupt another thread sends
 * to stop a call that ran too long — returns control to the guard instead
 * of killing the process. Signals outside any guard go to whatever handler
 * was installed before ours (the default one: the process dies as usual).
 *
 *   sp_fault_guard g;
 *   if (SP_FAULT_TRY(&g)) { call(); sp_fault_end(&g); }
 *   else { ... g.sig says what happened ... }
 *
 * The guard the handler must find is per thread by nature (a signal is
 * delivered to the thread that faulted): one thread-local pointer names the
 * armed guard. It carries no run state. */
#ifndef SP_COMMON_FAULT_H
#define SP_COMMON_FAULT_H

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

/* Sent to a thread to break it out of a guarded call (a kernel timeout). */
#define SP_FAULT_INTERRUPT SIGUSR2

typedef struct sp_fault_guard {
    sigjmp_buf jmp;
    volatile sig_atomic_t sig; /* the signal that ended the call, 0 if none */
    /* Optional: the interrupt ends this call only while *cancel == token, so
     * an interrupt meant for an earlier call on the same thread (which
     * returned just before it arrived) is ignored. NULL: always. */
    const _Atomic uint32_t *cancel;
    uint32_t token;
} sp_fault_guard;

/* Install the handlers once per process (idempotent, thread-safe), and an
 * alternate signal stack for the calling thread (so a stack overflow in a
 * guarded call can be caught). Returns 0 or SP_ESYS. */
int sp_fault_install(void);
/* Arm `g` for the calling thread; use through SP_FAULT_TRY. */
void sp_fault_arm(sp_fault_guard *g);
/* Arm `g` so that the interrupt ends the call only while *cancel == token;
 * use through SP_FAULT_TRY_FOR. */
void sp_fault_arm_for(sp_fault_guard *g, const _Atomic uint32_t *cancel, uint32_t token);
/* Disarm after the guarded call returned normally. */
void sp_fault_end(sp_fault_guard *g);
/* Name of a signal a guard caught ("SIGSEGV", "timeout" for the interrupt). */
const char *sp_fault_name(int sig);

/* Release the calling thread's alternate signal stack (before it exits). */
void sp_fault_release(void);

/* True the first time (run the call); false when a signal ended it. The
 * signal mask is not saved (that would be a syscall per guarded call); the
 * handler unblocks the caught signal itself before jumping back. */
#define SP_FAULT_TRY(g) (sp_fault_arm(g), sigsetjmp((g)->jmp, 0) == 0)
#define SP_FAULT_TRY_FOR(g, cancel, token)                                                         \
    (sp_fault_arm_for(g, cancel, token), sigsetjmp((g)->jmp, 0) == 0)

#endif
