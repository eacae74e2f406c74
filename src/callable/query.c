/* Lookups on a validated callable: strings by offset, kernels by func_id. */
#include <string.h>

#include "simpler/callable.h"

SP_EXPORT const char *sp_callable_string(const sp_callable_view *view, uint32_t off)
{
    if (!view || !view->header)
        return NULL;
    const sp_callable_section *t = &view->header->strings;
    if (off >= t->size)
        return NULL;
    /* Validation checked only the offsets the blob names; any other one may
     * point into bytes after the table's last NUL. */
    const char *s = (const char *)view->base + t->offset + off;
    return memchr(s, '\0', t->size - off) ? s : NULL;
}

SP_EXPORT int sp_callable_find_kernel(const sp_callable_view *view, int32_t func_id)
{
    if (!view || !view->header || func_id < 0)
        return -1;
    /* Linear: called when a callable is registered or a task is checked on
     * the host, never on the device hot path, and kernel counts are small. */
    for (uint32_t i = 0; i < view->header->kernel_count; i++)
        if (view->kernels[i].func_id == func_id)
            return (int)i;
    return -1;
}
