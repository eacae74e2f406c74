/* How a run's device side reports a kernel that crashed or ran too long:
 * the first such fault is recorded on the chip (task, kernel index, core,
 * signal, how long it ran) and turned into a named status and a message on
 * the host, where the kernel's func_id and entry name are known. */
#ifndef SP_RUNTIME_FAULT_REPORT_H
#define SP_RUNTIME_FAULT_REPORT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/host/loaded_callable.h"

#define SP_DEFAULT_KERNEL_TIMEOUT_NS (30ull * 1000 * 1000 * 1000)
#define SP_DEFAULT_ORCH_TIMEOUT_NS (300ull * 1000 * 1000 * 1000)

typedef struct sp_fault_report {
    _Atomic int32_t claimed; /* 0 until the first fault takes the report */
    int32_t sig;
    uint64_t task;
    uint32_t core;
    int32_t kernel; /* kernel-table index */
    uint64_t ran_ns;
} sp_fault_report;

/* Record a fault if none was recorded yet; returns true for the first. */
bool sp_fault_report_claim(sp_fault_report *r, uint64_t task, uint32_t core, int32_t kernel,
                           int sig, uint64_t ran_ns);
/* SP_EKERNEL_TIMEOUT or SP_EKERNEL_FAULT, and a message naming the task,
 * the kernel (func_id, entry), the core and the signal or run time. */
int sp_fault_report_format(const sp_fault_report *r, const sp_loaded_callable *lc, char *msg,
                           size_t len);
/* The run status of a fault a core reported: SP_EKERNEL_TIMEOUT for the
 * interrupt and an abandoned core, SP_EKERNEL_FAULT for the rest. */
int sp_fault_status(int sig);
/* The per-task timeout of a run: the config's timeout_us (clamped to
 * SP_MAX_KERNEL_TIMEOUT_NS), else SIMPLER_KERNEL_TIMEOUT_MS if it is a
 * number of ms in 1..SP_MAX_KERNEL_TIMEOUT_MS (anything else is ignored
 * with a warning), else 30 s. */
#define SP_MAX_KERNEL_TIMEOUT_MS (7ull * 24 * 3600 * 1000) /* a week */
#define SP_MAX_KERNEL_TIMEOUT_NS (SP_MAX_KERNEL_TIMEOUT_MS * 1000000ull)
uint64_t sp_kernel_timeout_ns(uint64_t config_timeout_us);
/* The orchestration's watchdog: the config's orch_timeout_us, else
 * SIMPLER_ORCH_TIMEOUT_MS (1 .. 2^32), else 300 s. */
uint64_t sp_orch_timeout_ns(uint64_t config_orch_timeout_us);

#endif
