/* The per-slot host scratch buffers: grown on demand, reused across runs. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "runtime/runtime.h"
#include "simpler/status.h"

int rt_host_scratch_grow(rt_host_scratch *s, size_t bytes, size_t keep, size_t huge_from)
{
    if (s->cap >= bytes)
        return SP_OK;
    if (huge_from < SP_HOST_SCRATCH_HUGE_PAGE)
        huge_from = SP_HOST_SCRATCH_HUGE_PAGE;
    void *q;
    if (bytes < huge_from && keep) {
        q = realloc(s->ptr, bytes); /* keeps everything */
        if (!q)
            return SP_ENOMEM;
    } else if (bytes < huge_from) {
        /* free + malloc, not realloc: the old contents are not needed. */
        if (!(q = malloc(bytes)))
            return SP_ENOMEM;
        free(s->ptr);
    } else {
        if (bytes > SIZE_MAX - SP_HOST_SCRATCH_HUGE_PAGE)
            return SP_ENOMEM;
        bytes = (bytes + SP_HOST_SCRATCH_HUGE_PAGE - 1) & ~(SP_HOST_SCRATCH_HUGE_PAGE - 1);
        if (posix_memalign(&q, SP_HOST_SCRATCH_HUGE_PAGE, bytes) != 0)
            return SP_ENOMEM;
#ifdef MADV_HUGEPAGE
        (void)madvise(q, bytes, MADV_HUGEPAGE); /* a hint: small pages still work */
#endif
        if (keep && s->ptr)
            memcpy(q, s->ptr, keep < s->cap ? keep : s->cap);
        free(s->ptr);
    }
    s->ptr = q;
    s->cap = bytes;
    return SP_OK;
}

int rt_host_scratch_reserve(rt_host_scratch *s, size_t bytes)
{
    return rt_host_scratch_grow(s, bytes, 0, SIZE_MAX);
}
