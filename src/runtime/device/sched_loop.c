/* The scheduler loop's out-of-line part: a dummy task's trace record. */
#include "runtime/device/sched_loop.h"

void rt_trace_dummy(rt_trace_writer *w, uint64_t task, uint64_t submit_ns)
{
    sp_trace_record *rec = rt_trace_next(w);
    if (!rec)
        return;
    uint64_t now = sp__ticks();
    rec->kind = SP_TRACE_DUMMY;
    rec->task = task;
    rec->submit_ns = submit_ns;
    rec->dispatch_ns = rec->start_ns = rec->end_ns = now;
    rec->core = SP_TRACE_NO_CORE;
    rec->func_id = -1;
    rec->shape = SP_SHAPE_DUMMY;
}
