/* Predicated tasks on the device, shared by both runtimes' schedulers: the
 * verdict (the element validation resolved, rt_task_pred's address and
 * dtype, compared as int64 against the task's constant) and the trace
 * record of a task retired without running. Header-only: one load and one
 * compare, inlined into the pop path. */
#ifndef RT_DEVICE_PRED_TASK_H
#define RT_DEVICE_PRED_TASK_H

#include <stdbool.h>
#include <stdint.h>

#include "common/ticks.h"
#include "runtime/device/trace_write.h"
#include "simpler/orchestration.h"
#include "simpler/trace.h"
#include "simpler/types.h"

/* The element at `addr` (of integer `dtype`) read as int64: signed dtypes
 * sign-extended, unsigned ones (and bool) zero-extended (a u64 above
 * INT64_MAX reads negative). The writers of the element completed before
 * the task became ready, and the queue hand-off ordered their writes
 * before this load, so a plain load is enough. */
static inline int64_t rt_pred_load(uint64_t addr, uint8_t dtype)
{
    const void *p = (const void *)(uintptr_t)addr;
    switch (dtype) {
    case SP_DTYPE_I8:
        return *(const int8_t *)p;
    case SP_DTYPE_U8:
    case SP_DTYPE_BOOL:
        return *(const uint8_t *)p;
    case SP_DTYPE_I16:
        return *(const int16_t *)p;
    case SP_DTYPE_U16:
        return *(const uint16_t *)p;
    case SP_DTYPE_I32:
        return *(const int32_t *)p;
    case SP_DTYPE_U32:
        return *(const uint32_t *)p;
    default: /* I64, U64: validation admitted only integer dtypes */
        return (int64_t) * (const uint64_t *)p;
    }
}

/* True if `element op value` holds (op SP_PRED_EQ..GE; NONE holds). */
static inline bool rt_pred_holds(uint64_t addr, uint8_t dtype, uint8_t op, int64_t value)
{
    if (op == SP_PRED_NONE)
        return true;
    int64_t e = rt_pred_load(addr, dtype);
    switch (op) {
    case SP_PRED_EQ:
        return e == value;
    case SP_PRED_NE:
        return e != value;
    case SP_PRED_LT:
        return e < value;
    case SP_PRED_LE:
        return e <= value;
    case SP_PRED_GT:
        return e > value;
    default:
        return e >= value;
    }
}

/* Tracing (w non-NULL): task `task` was retired without running, now. One
 * record per task, in place of its slices. */
static inline void rt_trace_skipped(rt_trace_writer *w, uint64_t task, uint64_t submit_ns,
                                    int32_t func_id, uint8_t shape)
{
    sp_trace_record *rec = w ? rt_trace_next(w) : NULL;
    if (!rec)
        return;
    uint64_t now = sp__ticks();
    rec->kind = SP_TRACE_SKIPPED;
    rec->task = task;
    rec->submit_ns = submit_ns;
    rec->dispatch_ns = rec->start_ns = rec->end_ns = now;
    rec->core = SP_TRACE_NO_CORE;
    rec->func_id = func_id;
    rec->shape = shape;
}

#endif
