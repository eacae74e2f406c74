/* The checking mode's red zones, the chip's half (issue 12): guard bytes
 * of a known pattern around every device buffer the runtime places — staged
 * run arguments and runtime-allocated outputs — filled where a buffer is
 * placed and verified by the scheduler when a task completes, for the
 * buffers that task wrote. The first damaged zone claims the run's overrun
 * report; the host names it (runtime/host/redzone.h).
 *
 * Zones of a buffer [addr, addr + bytes): RZ bytes before it, and from its
 * end to RZ bytes past its 64-byte rounded end. Placement leaves that room
 * (staging.c, hbg's heap, tmr's heap ring and static allocations); the
 * checks then only compare bytes, on the chip, per written buffer. */
#ifndef RT_DEVICE_REDZONE_CHECK_H
#define RT_DEVICE_REDZONE_CHECK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "simpler/types.h"

#define SP_REDZONE_BYTES 256u
#define SP_REDZONE_FILL 0xfd /* a byte no float or small integer is made of */

/* End of buffer [addr, addr + bytes)'s trailing zone. */
static inline uint64_t rt_redzone_after_end(uint64_t addr, uint64_t bytes)
{
    return ((addr + bytes + 63) & ~63ull) + SP_REDZONE_BYTES;
}

/* Bytes a buffer of `bytes` takes with its zones, when placed RZ past a
 * 64-byte aligned start: leading zone + buffer + trailing zone. */
static inline uint64_t rt_redzone_span(uint64_t bytes)
{
    return SP_REDZONE_BYTES + ((bytes + 63) & ~63ull) + SP_REDZONE_BYTES;
}

/* The first overrun the chip found. */
typedef struct rt_overrun_report {
    _Atomic int32_t claimed; /* 0 until the first overrun takes the report */
    int32_t arg;             /* tensor argument index */
    uint64_t task;
    int32_t kernel[3]; /* kernel-table index per lane, -1 for none */
    int32_t pad;
    int64_t at; /* first damaged byte, relative to the buffer's start */
    uint64_t buf_bytes;
} rt_overrun_report;

/* Device side, on a buffer the caller placed with zones: true if both are
 * intact, else false with *at the first damaged byte (relative to addr). */
bool rt_redzone_intact(uint64_t addr, uint64_t bytes, int64_t *at);
/* Device side: write the pattern over both zones of [addr, addr + bytes). */
void rt_redzone_fill(uint64_t addr, uint64_t bytes);
/* Record an overrun if none was recorded yet; returns true for the first. */
bool rt_overrun_claim(rt_overrun_report *r, uint64_t task, const int32_t kernel[3], int32_t arg,
                      int64_t at, uint64_t buf_bytes);
/* The directions whose buffers a task's completion verifies: every one a
 * kernel may write. */
static inline bool rt_redzone_dir_written(int dir)
{
    return dir == SP_OUT || dir == SP_INOUT || dir == SP_OUT_EXISTING || dir == SP_NO_DEP;
}

#endif
