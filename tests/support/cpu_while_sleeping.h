/* The process's CPU time (user + system, ms) over `ns` of the calling
 * thread sleeping: what the other threads burn meanwhile. The wait tests
 * use it to check that a parked waiter costs nothing. */
#ifndef SP_TESTS_CPU_WHILE_SLEEPING_H
#define SP_TESTS_CPU_WHILE_SLEEPING_H

#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

#include "common/wait.h" /* sp_now_ns */

static inline double cpu_ms_while_sleeping(uint64_t ns)
{
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    uint64_t until = sp_now_ns() + ns;
    struct timespec ts = {0, 10 * 1000 * 1000};
    while (sp_now_ns() < until)
        nanosleep(&ts, NULL);
    getrusage(RUSAGE_SELF, &after);
    return (after.ru_utime.tv_sec - before.ru_utime.tv_sec) * 1e3 +
           (after.ru_utime.tv_usec - before.ru_utime.tv_usec) / 1e3 +
           (after.ru_stime.tv_sec - before.ru_stime.tv_sec) * 1e3 +
           (after.ru_stime.tv_usec - before.ru_stime.tv_usec) / 1e3;
}

#endif
