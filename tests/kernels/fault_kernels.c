/* Kernels that fail on purpose, for the fault tests. Built without
 * sanitizers (tests/CMakeLists.txt): the faults must reach the runtime as
 * real signals, not as sanitizer reports. */
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "simpler/kernel.h"

/* args: [0] u64 tensor: marks element 0 with args[1]. */
SP_KERNEL(fault_mark)
{
    (void)ctx;
    *(uint64_t *)sp_tensor_data(sp_arg_tensor(args, 0)) = args[1];
}

SP_KERNEL(fault_segv)
{
    (void)args, (void)ctx;
    volatile uintptr_t bad = 16; /* volatile: the compiler cannot see it is invalid */
    *(volatile int *)bad = 1;
}

SP_KERNEL(fault_fpe)
{
    (void)ctx;
    volatile int zero = (int)args[1] * 0;
    volatile int x = 7 / zero;
    (void)x;
}

SP_KERNEL(fault_bus)
{
    (void)args, (void)ctx;
    raise(SIGBUS);
}

/* Never returns on its own: the scheduler's timeout must stop it. */
SP_KERNEL(fault_hang)
{
    (void)args, (void)ctx;
    for (volatile int spin = 1; spin;)
        ;
}

/* Blocks every signal (the interrupt included) and spins for about three
 * seconds: the timeout's interrupt cannot land, so the core must be
 * abandoned. Bounded only so that the thread it strands does not burn a
 * CPU for the rest of the test process. */
SP_KERNEL(fault_hang_masked)
{
    (void)args, (void)ctx;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while (t.tv_sec - t0.tv_sec < 3);
}

/* Sets every real-time signal (the guard's interrupt among them) to
 * SIG_IGN, then spins forever: the guard must put its handler back. */
SP_KERNEL(fault_hang_ignoring)
{
    (void)args, (void)ctx;
    for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
        signal(s, SIG_IGN);
    for (volatile int spin = 1; spin;)
        ;
}

/* Ends the core's thread. */
SP_KERNEL(fault_thread_exit)
{
    (void)args, (void)ctx;
    pthread_exit(NULL);
}
