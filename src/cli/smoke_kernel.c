/* The kernel `simpler smoke` loads from bytes and runs on every core:
 * args[0] is a device array of uint32, one slot per core; each core stores
 * its id + 1 (and its type in the high half) into its slot. */
#include "simpler/kernel.h"

SP_KERNEL(smoke_mark)
{
    uint32_t *slots = (uint32_t *)(uintptr_t)args[0];
    slots[ctx->core_id] = (ctx->core_id + 1) | (ctx->core_type << 16);
}
