/* Busy for `ns` of wall time on the calling thread: the fixed-length
 * kernel body several test kernels share (quoted include, beside them). */
#ifndef SP_TEST_KERNELS_SPIN_H
#define SP_TEST_KERNELS_SPIN_H

#include <stdint.h>
#include <time.h>

static inline void spin_ns(uint64_t ns)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((uint64_t)((b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec)) < ns);
}

#endif
