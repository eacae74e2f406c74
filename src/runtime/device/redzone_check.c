/* Red zones on the chip: filled where buffers are placed, verified when
 * the task that wrote a buffer completes. */
#include "runtime/device/redzone_check.h"

#include <string.h>

/* First byte of [p, p + n) that is not the fill, or -1. Word at a time:
 * the zones are 64-byte aligned apart from a buffer's unaligned end. */
static int64_t first_damaged(const unsigned char *p, uint64_t n)
{
    const uint64_t fill = 0x0101010101010101ull * SP_REDZONE_FILL;
    uint64_t i = 0;
    for (; i < n && ((uintptr_t)(p + i) & 7); i++)
        if (p[i] != SP_REDZONE_FILL)
            return (int64_t)i;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w != fill)
            break;
    }
    for (; i < n; i++)
        if (p[i] != SP_REDZONE_FILL)
            return (int64_t)i;
    return -1;
}

bool rt_redzone_intact(uint64_t addr, uint64_t bytes, int64_t *at)
{
    const unsigned char *before = (const unsigned char *)(uintptr_t)(addr - SP_REDZONE_BYTES);
    int64_t k = first_damaged(before, SP_REDZONE_BYTES);
    if (k >= 0) {
        *at = k - (int64_t)SP_REDZONE_BYTES;
        return false;
    }
    uint64_t end = addr + bytes;
    k = first_damaged((const unsigned char *)(uintptr_t)end,
                      rt_redzone_after_end(addr, bytes) - end);
    if (k >= 0) {
        *at = (int64_t)bytes + k;
        return false;
    }
    return true;
}

void rt_redzone_fill(uint64_t addr, uint64_t bytes)
{
    memset((void *)(uintptr_t)(addr - SP_REDZONE_BYTES), SP_REDZONE_FILL, SP_REDZONE_BYTES);
    uint64_t end = addr + bytes;
    memset((void *)(uintptr_t)end, SP_REDZONE_FILL, rt_redzone_after_end(addr, bytes) - end);
}

bool rt_overrun_claim(rt_overrun_report *r, uint64_t task, const int32_t kernel[3], int32_t arg,
                      int64_t at, uint64_t buf_bytes)
{
    int32_t expected = 0;
    if (!atomic_compare_exchange_strong_explicit(&r->claimed, &expected, 1, memory_order_acq_rel,
                                                 memory_order_relaxed))
        return false;
    r->task = task;
    memcpy(r->kernel, kernel, sizeof r->kernel);
    r->arg = arg;
    r->at = at;
    r->buf_bytes = buf_bytes;
    return true;
}
