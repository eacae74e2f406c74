/* A callable as device code sees it: per kernel, what validating a submit
 * and naming a kernel in a message need (func_id, core type, signature,
 * entry name), the func_id lookup table, and the device address of the
 * kernel entry table the schedulers index. No host object (no shared
 * object handles, no blob): one self-contained block the host lays out
 * (runtime/host/dev_callable_write.h) in host memory for hbg's build, in
 * device memory for tmr's orchestrator. */
#ifndef RT_DEVICE_DEV_CALLABLE_H
#define RT_DEVICE_DEV_CALLABLE_H

#include <stdint.h>

#define RT_FUNC_ID_DIRECT 1024 /* func_ids below this resolve by table */

typedef struct rt_dev_kernel {
    int32_t func_id;
    uint32_t core_type;    /* sp_core_type */
    const char *entry;     /* the kernel's entry name, for messages */
    const char *signature; /* "" = unchecked */
} rt_dev_kernel;

typedef struct rt_dev_callable {
    uint32_t id;
    uint32_t kernel_count;
    const rt_dev_kernel *kernels;
    uint64_t kernel_table;                 /* device address of sp_kernel_fn[kernel_count] */
    int16_t by_func_id[RT_FUNC_ID_DIRECT]; /* kernel index + 1, 0 = none */
} rt_dev_callable;

/* Kernel index of `func_id`, or -1 if the callable has none. */
static inline int rt_dev_callable_kernel(const rt_dev_callable *dc, int32_t func_id)
{
    if (func_id < 0)
        return -1;
    if (func_id < RT_FUNC_ID_DIRECT)
        return dc->by_func_id[func_id] - 1;
    for (uint32_t i = 0; i < dc->kernel_count; i++)
        if (dc->kernels[i].func_id == func_id)
            return (int)i;
    return -1;
}

#endif
