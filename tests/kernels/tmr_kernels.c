/* Kernels for the tensormap_and_ringbuffer tests. */
#include <time.h>

#include "simpler/kernel.h"

/* args: [0] tensor (u64 elements), [1] value: stores value into element 0. */
SP_KERNEL(tmr_mark)
{
    (void)ctx;
    *(uint64_t *)sp_tensor_data(sp_arg_tensor(args, 0)) = args[1];
}

/* args: [0] tensor (u64), [1] value, [2] microseconds: busy for that long,
 * then stores value into element 0 (a kernel that is slow but finishes). */
SP_KERNEL(tmr_slow_mark)
{
    (void)ctx;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    uint64_t want = args[2] * 1000ull;
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((uint64_t)((b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec)) < want);
    *(uint64_t *)sp_tensor_data(sp_arg_tensor(args, 0)) = args[1];
}
