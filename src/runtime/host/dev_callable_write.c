/* Laying out a callable's device view: the table, then the kernels, then
 * their entry and signature strings, every pointer rebased to `at`. */
#include "runtime/host/dev_callable_write.h"

#include <string.h>

_Static_assert(RT_FUNC_ID_DIRECT == SP_FUNC_ID_DIRECT, "one func_id lookup table size");

#define ALIGN64(x) (((x) + 63) & ~(uint64_t)63)

static uint64_t kernels_off(void)
{
    return ALIGN64(sizeof(rt_dev_callable));
}

static uint64_t strings_off(const rt_loaded_callable *lc)
{
    return kernels_off() + ALIGN64((uint64_t)lc->kernel_count * sizeof(rt_dev_kernel));
}

uint64_t rt_dev_callable_bytes(const rt_loaded_callable *lc)
{
    uint64_t n = strings_off(lc);
    for (uint32_t i = 0; i < lc->kernel_count; i++)
        n += strlen(lc->kernels[i].entry) + strlen(lc->kernels[i].signature) + 2;
    return ALIGN64(n);
}

rt_dev_callable *rt_dev_callable_write(const rt_loaded_callable *lc, void *buf, uint64_t at)
{
    /* Every byte, padding too: the block goes to the device whole. */
    memset(buf, 0, rt_dev_callable_bytes(lc));
    rt_dev_callable *dc = buf;
    dc->id = lc->id;
    dc->kernel_count = lc->kernel_count;
    dc->kernel_table = lc->kernel_table;
    dc->kernels = (const rt_dev_kernel *)(uintptr_t)(at + kernels_off());
    memcpy(dc->by_func_id, lc->by_func_id, sizeof dc->by_func_id);
    rt_dev_kernel *k = (rt_dev_kernel *)((char *)buf + kernels_off());
    uint64_t str = strings_off(lc);
    for (uint32_t i = 0; i < lc->kernel_count; i++) {
        k[i] = (rt_dev_kernel){.func_id = lc->kernels[i].func_id,
                               .core_type = lc->kernels[i].core_type};
        const char *src[2] = {lc->kernels[i].entry, lc->kernels[i].signature};
        const char **dst[2] = {&k[i].entry, &k[i].signature};
        for (int s = 0; s < 2; s++) {
            size_t len = strlen(src[s]) + 1;
            memcpy((char *)buf + str, src[s], len);
            *dst[s] = (const char *)(uintptr_t)(at + str);
            str += len;
        }
    }
    return dc;
}
