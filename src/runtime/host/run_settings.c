/* The settings a runtime takes from its context (simpler/settings.h):
 * checked once, when the context is attached, and applied to each run as
 * the defaults of what its config leaves 0 — so a caller of the raw module
 * ABI gets them as the worker's callers do. */
#include <stdio.h>

#include "runtime/host/fault_report.h"
#include "runtime/host/redzone.h"
#include "runtime/runtime.h"
#include "simpler/status.h"

#define ORCH_TIMEOUT_MAX_MS (1ull << 32)

int rt_settings_check(const sp_settings *s, char *err, size_t err_len)
{
    if (s->kernel_timeout_ms > SP_MAX_KERNEL_TIMEOUT_MS) {
        snprintf(err, err_len, "settings.kernel_timeout_ms %llu: want 1..%llu ms (0: 30 s)",
                 (unsigned long long)s->kernel_timeout_ms,
                 (unsigned long long)SP_MAX_KERNEL_TIMEOUT_MS);
        return SP_EINVAL;
    }
    if (s->orch_timeout_ms > ORCH_TIMEOUT_MAX_MS) {
        snprintf(err, err_len, "settings.orch_timeout_ms %llu: want 1..%llu ms (0: 300 s)",
                 (unsigned long long)s->orch_timeout_ms, (unsigned long long)ORCH_TIMEOUT_MAX_MS);
        return SP_EINVAL;
    }
    if (s->pipeline_depth > SP_PIPELINE_MAX_DEPTH) {
        snprintf(err, err_len, "settings.pipeline_depth %u: want 1..%d (0: the module's)",
                 s->pipeline_depth, SP_PIPELINE_MAX_DEPTH);
        return SP_EINVAL;
    }
    if (s->check > 1) {
        snprintf(err, err_len, "settings.check %u: want 0 or 1", s->check);
        return SP_EINVAL;
    }
    return SP_OK;
}

void rt_run_defaults(rt_prepare *p, const sp_settings *s)
{
    /* The config's own value wins (fault_report.h clamps it); 0 there takes
     * the context's setting (checked at attach: no overflow), and 0 there
     * the default — never the environment, which the worker read once. */
    uint64_t kernel_us = p->config.timeout_us ? p->config.timeout_us : s->kernel_timeout_ms * 1000;
    uint64_t orch_us =
        p->config.orch_timeout_us ? p->config.orch_timeout_us : s->orch_timeout_ms * 1000;
    p->kernel_timeout_ns =
        kernel_us ? rt_kernel_timeout_ns(kernel_us) : SP_DEFAULT_KERNEL_TIMEOUT_NS;
    p->orch_timeout_ns = orch_us ? rt_orch_timeout_ns(orch_us) : SP_DEFAULT_ORCH_TIMEOUT_NS;
    sp_call_config c = p->config;
    if (s->check && !(c.flags & (SP_CALL_CHECK | SP_CALL_NO_CHECK)))
        c.flags |= SP_CALL_CHECK;
    p->check = rt_check_mode(&c);
}
