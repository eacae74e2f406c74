/* A cheap timestamp for the trace recorder: the CPU's invariant cycle
 * counter where there is one (rdtsc costs ~15 ns where clock_gettime costs
 * ~45 ns in a VM), otherwise sp_now_ns() itself. Ticks are only compared
 * with ticks; the trace's read-back maps them onto sp_now_ns() time with two
 * calibration points (runtime/host/trace.c), so exported times stay on
 * the one monotonic clock. */
#ifndef SP_COMMON_TICKS_H
#define SP_COMMON_TICKS_H

#include <stdint.h>

#include "common/wait.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t sp__ticks(void)
{
    return __rdtsc();
}
#define SP_TICKS_ARE_NS 0
#else
static inline uint64_t sp__ticks(void)
{
    return sp_now_ns();
}
#define SP_TICKS_ARE_NS 1
#endif

#endif
