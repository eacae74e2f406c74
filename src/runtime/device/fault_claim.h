/* The device half of kernel fault reporting: the first kernel that crashed
 * or ran too long claims the run's report (task, kernel index, core,
 * signal, how long it ran) on the chip; the host turns it into a named
 * status and a message with the kernel's name (runtime/host/fault_report.h). */
#ifndef RT_DEVICE_FAULT_CLAIM_H
#define RT_DEVICE_FAULT_CLAIM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct rt_fault_report {
    _Atomic int32_t claimed; /* 0 until the first fault takes the report */
    int32_t sig;
    uint64_t task;
    uint32_t core;
    int32_t kernel; /* kernel-table index */
    uint64_t ran_ns;
} rt_fault_report;

/* Record a fault if none was recorded yet; returns true for the first. */
bool rt_fault_report_claim(rt_fault_report *r, uint64_t task, uint32_t core, int32_t kernel,
                           int sig, uint64_t ran_ns);
/* The run status of a fault a core reported: SP_EKERNEL_TIMEOUT for the
 * interrupt and an abandoned core, SP_EKERNEL_FAULT for the rest. */
int rt_fault_status(int sig);

#endif
