/* Red zones, the host's half: the checking mode, and the report of an
 * overrun the chip found (runtime/device/redzone_check.c checks). */
#include "runtime/host/redzone.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/host/fault_report.h"
#include "simpler/status.h"

int rt_overrun_format(const sp_host_api *api, const rt_overrun_report *r,
                      const rt_loaded_callable *lc, char *msg, size_t len)
{
    char dev[32];
    rt_device_prefix(api, dev, sizeof dev);
    char kernels[160] = "";
    size_t used = 0;
    for (int l = 0; l < 3; l++) {
        int32_t k = r->kernel[l];
        if (k < 0 || !lc || (uint32_t)k >= lc->kernel_count)
            continue;
        int n = snprintf(kernels + used, sizeof kernels - used, "%s'%s' (func_id %d)",
                         used ? " / " : "", lc->kernels[k].entry, lc->kernels[k].func_id);
        if (n < 0 || (size_t)n >= sizeof kernels - used)
            break;
        used += (size_t)n;
    }
    if (r->at < 0)
        snprintf(msg, len,
                 "%stask %llu: kernel %s wrote %lld bytes before the start of tensor argument %d "
                 "(a %llu-byte buffer): underrun caught by the red zone",
                 dev, (unsigned long long)r->task, used ? kernels : "?", (long long)-r->at, r->arg,
                 (unsigned long long)r->buf_bytes);
    else
        snprintf(msg, len,
                 "%stask %llu: kernel %s wrote past the end of tensor argument %d (a %llu-byte "
                 "buffer; damage at byte %lld): overrun caught by the red zone",
                 dev, (unsigned long long)r->task, used ? kernels : "?", r->arg,
                 (unsigned long long)r->buf_bytes, (long long)r->at);
    return SP_EKERNEL_OVERRUN;
}

bool rt_check_mode(const sp_call_config *config)
{
    if (config->flags & SP_CALL_NO_CHECK)
        return false;
    return (config->flags & SP_CALL_CHECK) != 0;
}
