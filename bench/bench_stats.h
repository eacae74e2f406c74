/* The clock and the median the issue-17 benchmarks share (bench/l3_*.c):
 * CLOCK_MONOTONIC nanoseconds, and the median of n samples in µs (sorts
 * the samples in place). */
#ifndef SP_BENCH_STATS_H
#define SP_BENCH_STATS_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static inline double median_us(uint64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], cmp_u64);
    return (double)v[n / 2] / 1e3;
}

#endif
