/* Orchestration for the fault tests: scalar 0 picks the failing kernel
 * (func_id 1..7), 10 for an orchestration that never returns, or 9 for a crash of the orchestration
 * itself; tasks that mark y run around it. Built without sanitizers (see fault_kernels.c). */
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "simpler/orchestration.h"

enum { F_MARK = 0 };
#define CRASH_ORCHESTRATION 9
#define LOOP_ORCHESTRATION 10   /* an orchestration that never returns */
#define MASKED_ORCHESTRATION 11 /* blocks every signal, then spins ~3 s */
#define SUBMIT_FOREVER 12       /* submits until a submit fails */

SP_ORCHESTRATION(fault_orch)
{
    sp_tensor y = args->tensors[0];
    uint64_t mode = args->scalars[0];
    sp_tensor e0, e1;
    sp_tensor_slice(&y, 0, 0, 1, &e0);
    sp_tensor_slice(&y, 0, 1, 1, &e1);
    sp_task t = sp_task_aiv(F_MARK);
    sp_task_arg(&t, &e0, SP_OUT_EXISTING);
    sp_task_scalar(&t, 11);
    if (sp_submit(o, &t) < 0)
        return;
    if (mode == CRASH_ORCHESTRATION) {
        volatile uintptr_t bad = 8; /* volatile: the compiler cannot see it is invalid */
        *(volatile int *)bad = 1;
    }
    if (mode == LOOP_ORCHESTRATION)
        for (volatile int spin = 1; spin;)
            ;
    if (mode == MASKED_ORCHESTRATION) {
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, NULL);
        struct timespec t0, now;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do
            clock_gettime(CLOCK_MONOTONIC, &now);
        while (now.tv_sec - t0.tv_sec < 3);
        return;
    }
    if (mode == SUBMIT_FOREVER)
        for (;;) {
            sp_task m = sp_task_aiv(F_MARK);
            sp_task_arg(&m, &e1, SP_INOUT);
            sp_task_scalar(&m, 22);
            if (sp_submit(o, &m) < 0)
                return;
        }
    if (mode) {
        sp_task f = sp_task_aiv((int32_t)mode);
        sp_task_arg(&f, &e1, SP_OUT_EXISTING);
        sp_task_scalar(&f, 1);
        if (sp_submit(o, &f) < 0)
            return;
    }
    t = sp_task_aiv(F_MARK);
    sp_task_arg(&t, &e1, SP_INOUT);
    sp_task_scalar(&t, 22);
    sp_submit(o, &t);
}
