/* Kernel fault reports, the host's half: formatted with the kernel's names. */
#include "runtime/host/fault_report.h"

#include <stdio.h>

#include "common/fault.h"
#include "simpler/status.h"

const char *rt_device_prefix(const sp_host_api *api, char *buf, size_t len)
{
    sp_device_info info;
    if (!api || !api->functions || !api->functions->describe || len == 0 ||
        sp_host_describe(api, &info) != SP_OK) {
        if (len)
            buf[0] = '\0';
        return buf;
    }
    snprintf(buf, len, "device %d: ", (int)info.device_id);
    return buf;
}

int rt_fault_report_format(const sp_host_api *api, const rt_fault_report *r,
                           const rt_loaded_callable *lc, char *msg, size_t len)
{
    char dev[32];
    rt_device_prefix(api, dev, sizeof dev);
    int32_t func_id = -1;
    const char *entry = "?";
    if (lc && r->kernel >= 0 && (uint32_t)r->kernel < lc->kernel_count) {
        func_id = lc->kernels[r->kernel].func_id;
        entry = lc->kernels[r->kernel].entry;
    }
    if (r->sig == SP_FAULT_ABANDONED) {
        snprintf(
            msg, len,
            "%stask %llu: kernel '%s' (func_id %d) on core %u ran past its timeout and did not "
            "answer the interrupt (it blocks or ignores signals, or sits in a system call): "
            "its thread was abandoned after %.1f ms and the core runs on a fresh one; the "
            "device is degraded",
            dev, (unsigned long long)r->task, entry, func_id, r->core, r->ran_ns / 1e6);
        return SP_EKERNEL_TIMEOUT;
    }
    if (r->sig == SP_FAULT_EXITED) {
        snprintf(msg, len,
                 "%stask %llu: kernel '%s' (func_id %d) exited its thread (pthread_exit) on core "
                 "%u; the core runs on a fresh thread",
                 dev, (unsigned long long)r->task, entry, func_id, r->core);
        return SP_EKERNEL_FAULT;
    }
    if (r->sig == SP_FAULT_INTERRUPT) {
        snprintf(msg, len,
                 "%stask %llu: kernel '%s' (func_id %d) on core %u ran %.1f ms, past its timeout, "
                 "and was stopped",
                 dev, (unsigned long long)r->task, entry, func_id, r->core, r->ran_ns / 1e6);
        return SP_EKERNEL_TIMEOUT;
    }
    snprintf(msg, len, "%stask %llu: kernel '%s' (func_id %d) crashed on core %u with %s", dev,
             (unsigned long long)r->task, entry, func_id, r->core, sp__fault_name(r->sig));
    return SP_EKERNEL_FAULT;
}

uint64_t rt_kernel_timeout_ns(uint64_t config_timeout_us)
{
    /* Past the longest timeout a deadline (start + timeout) could overflow:
     * a larger one means "never", which it is clamped to. */
    if (config_timeout_us)
        return config_timeout_us < SP_MAX_KERNEL_TIMEOUT_NS / 1000ull ? config_timeout_us * 1000ull
                                                                      : SP_MAX_KERNEL_TIMEOUT_NS;
    return SP_DEFAULT_KERNEL_TIMEOUT_NS;
}

uint64_t rt_orch_timeout_ns(uint64_t config_orch_timeout_us)
{
    if (config_orch_timeout_us)
        return config_orch_timeout_us > UINT64_MAX / 1000 ? UINT64_MAX
                                                          : config_orch_timeout_us * 1000;
    return SP_DEFAULT_ORCH_TIMEOUT_NS;
}
