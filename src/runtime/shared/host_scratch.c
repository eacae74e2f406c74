/* The per-slot host scratch buffer: grown on demand, reused across runs. */
#include <stdlib.h>

#include "runtime/runtime.h"
#include "simpler/status.h"

int sp_host_scratch_reserve(sp_host_scratch *s, size_t bytes)
{
    if (s->cap >= bytes)
        return SP_OK;
    /* free + malloc, not realloc: the old contents are not needed. */
    void *p = malloc(bytes);
    if (!p)
        return SP_ENOMEM;
    free(s->ptr);
    s->ptr = p;
    s->cap = bytes;
    return SP_OK;
}
