/* Kernels that take wall-clock time without using a CPU, for the test that
 * the kernel timeout counts the core's CPU time
 * (tests/scene/test_kernel_cpu_time.c). Same arguments as callable_fill:
 * [0] tensor, [1] scalar written into its first element at the end. */
#include <time.h>

#include "simpler/kernel.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* Off the CPU for 300 ms: like a kernel whose core waited for a CPU. */
SP_KERNEL(sleep_300ms_fill)
{
    (void)ctx;
    sleep_ms(300);
    *(uint64_t *)sp_tensor_data(sp_arg_tensor(args, 0)) = args[1];
}
