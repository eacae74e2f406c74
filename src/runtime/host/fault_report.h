/* The host half of kernel fault reporting: the first kernel fault a run's
 * device side claimed (runtime/device/fault_claim.h) becomes a named status
 * and a message naming the device, the task and the kernel (func_id and
 * entry, known on the host); and the run's two timeout settings. */
#ifndef SP_RUNTIME_FAULT_REPORT_H
#define SP_RUNTIME_FAULT_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/device/fault_claim.h"
#include "runtime/host/loaded_callable.h"
#include "simpler/host_api.h"

#define SP_DEFAULT_KERNEL_TIMEOUT_NS (30ull * 1000 * 1000 * 1000)
#define SP_DEFAULT_ORCH_TIMEOUT_NS (300ull * 1000 * 1000 * 1000)

/* SP_EKERNEL_TIMEOUT or SP_EKERNEL_FAULT, and a message naming the device
 * (`api`'s: "device 1: task 7: kernel 'x' ..."), the task, the kernel
 * (func_id, entry), the core and the signal or run time. */
int rt_fault_report_format(const sp_host_api *api, const rt_fault_report *r,
                           const rt_loaded_callable *lc, char *msg, size_t len);
/* "device <id>: " for `api`'s device into buf (len >= 32; "" if the
 * platform cannot describe it): how a run's device-side failure names where
 * it happened, so two devices in one process are told apart. */
const char *rt_device_prefix(const sp_host_api *api, char *buf, size_t len);
/* The per-task timeout of a run: `config_timeout_us` (the config's, or the
 * context's settings.kernel_timeout_ms folded in by rt_run_defaults)
 * clamped to SP_MAX_KERNEL_TIMEOUT_NS, 0: 30 s. No environment: the worker
 * reads it once (sp_settings_from_env). */
#define SP_MAX_KERNEL_TIMEOUT_MS (7ull * 24 * 3600 * 1000) /* a week */
#define SP_MAX_KERNEL_TIMEOUT_NS (SP_MAX_KERNEL_TIMEOUT_MS * 1000000ull)
uint64_t rt_kernel_timeout_ns(uint64_t config_timeout_us);
/* The orchestration's watchdog: `config_orch_timeout_us`, 0: 300 s. */
uint64_t rt_orch_timeout_ns(uint64_t config_orch_timeout_us);

#endif
