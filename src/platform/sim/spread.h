/* Spreading the sim's busy cores over the CPUs (issue 18).
 *
 * Linux places a thread when it is created or woken and then almost never
 * moves one that keeps running: a core thread that always has work is
 * cache-hot, and a CPU whose threads are all busy looks as loaded as one
 * with two of them. Measured on a 2-CPU VM (perf sched, Cholesky T=32 with
 * 2 us kernels, 20 processes): no thread migrated once in any run, and
 * every run whose two AIV core threads were placed on one CPU took 13-17
 * ms against 10-11 ms for the others. So a busy core that shares its CPU
 * with another busy core of its chip while some CPU it may use runs no
 * busy core moves itself there, once, and is free again at once: it sets
 * its affinity to that CPU (the kernel migrates it), then back to the
 * chip's mask. It is a hint at placement, never a pin: a chip on a loaded
 * machine is balanced by the kernel as before (pinning cores measured
 * 10-50x slower with one CPU hog).
 *
 * Each core publishes the CPU it runs on on a line of its own, every
 * SIM_SPREAD_EVERY payloads, if it was busy at this look and the one
 * before: it ran dry after at most a quarter of the payloads between
 * them, and they took SIM_SPREAD_MIN_RUN_NS each or more on average (else
 * it publishes SIM_SPREAD_IDLE; a parked core counts as idle too). The
 * decision reads those and nothing else. Of two busy cores on one CPU,
 * the higher-numbered one moves, so they never both do. */
#ifndef SP_PLATFORM_SIM_SPREAD_H
#define SP_PLATFORM_SIM_SPREAD_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

/* A core waiting for work (or that has not looked yet): not busy. */
#define SIM_SPREAD_IDLE (-1)
/* Payloads between two looks at where the core runs. */
#define SIM_SPREAD_EVERY 32u
/* A core whose payloads took less than this each on average since its
 * last look counts as idle: empty kernels. */
#define SIM_SPREAD_MIN_RUN_NS 500u
/* A chip with more cores than this does not spread (the look gathers
 * their CPUs on its stack). */
#define SIM_SPREAD_MAX_CORES 256u
/* At least this long between two moves of one core. */
#define SIM_SPREAD_PAUSE_NS (20ull * 1000 * 1000)

/* Where core `me`, running on CPU `cpus[me]`, should move to: a CPU in
 * `allowed` that no busy core of the chip runs on, if a lower-numbered
 * busy core shares its CPU; -1 to stay. `cpus[k]` is core k's published
 * CPU (SIM_SPREAD_IDLE: not busy), `n` the chip's cores, `allowed_count`
 * CPU_COUNT(allowed). */
static inline int sim_spread_target(uint32_t me, const int32_t *cpus, uint32_t n,
                                    const cpu_set_t *allowed, int allowed_count)
{
    int32_t mine = cpus[me];
    if (mine < 0)
        return -1;
    bool shared = false;
    int busy = 0;
    for (uint32_t k = 0; k < n; k++) {
        if (cpus[k] < 0)
            continue;
        busy++;
        shared |= k < me && cpus[k] == mine;
    }
    /* More busy cores than CPUs: some CPU must hold two. */
    if (!shared || busy > allowed_count)
        return -1;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (c == mine || !CPU_ISSET(c, allowed))
            continue;
        bool used = false;
        for (uint32_t k = 0; k < n && !used; k++)
            used = cpus[k] == c;
        if (!used)
            return c;
    }
    return -1;
}

#endif
