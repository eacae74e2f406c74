/* Kernels that fail on purpose, for the fault tests. Built without
 * sanitizers (tests/CMakeLists.txt): the faults must reach the runtime as
 * real signals, not as sanitizer reports. */
#include <signal.h>

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
