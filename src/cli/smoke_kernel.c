/* The kernel `simpler smoke` runs on every core: args[0] is a uint32
 * tensor with one slot per core, args[1] the core type the task was
 * submitted for. The core stores its id + 1, its type in bits 16..23 and,
 * in bit 31, whether that type differs from the one the task asked for;
 * then it naps a millisecond so the other tasks of the run spread over
 * the other cores. */
#include <time.h>

#include "simpler/kernel.h"

SP_KERNEL(smoke_mark)
{
    uint32_t *slots = sp_tensor_data(sp_arg_tensor(args, 0));
    uint32_t wrong = ctx->core_type != (uint32_t)args[1] ? 1u << 31 : 0;
    slots[ctx->core_id] = (ctx->core_id + 1) | (ctx->core_type << 16) | wrong;
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 1000000};
    nanosleep(&ts, NULL);
}
