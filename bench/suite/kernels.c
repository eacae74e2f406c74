/* simpler's synthetic suite kernel: spin for the task duration, then count
 * one write on the written tile (the last tensor), exactly what the peers'
 * task body does. One entry per tile count, because the spin scalar comes
 * after the tensors in the argument list. */
#include "simpler/kernel.h"

#include <time.h>

static void body(const uint64_t *args, int tensors)
{
    const uint64_t ns = args[tensors];
    if (ns) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        const uint64_t end = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + ns;
        do
            clock_gettime(CLOCK_MONOTONIC, &ts);
        while ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec < end);
    }
    float *w = sp_tensor_data(sp_arg_tensor(args, tensors - 1));
    w[0] += 1.0f;
}

SP_KERNEL(suite_task1)
{
    (void)ctx;
    body(args, 1);
}
SP_KERNEL(suite_task2)
{
    (void)ctx;
    body(args, 2);
}
SP_KERNEL(suite_task3)
{
    (void)ctx;
    body(args, 3);
}
