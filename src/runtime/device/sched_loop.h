/* The scheduler thread's main loop, shared by both runtimes: snapshot the
 * chip event, run a pass (sched_pass.h), complete the dummy tasks that are
 * ready (they need no core), record the pass and idle phases when traced,
 * stop once this thread's cores are idle and the runtime says the run is
 * over, and otherwise wait when nothing happened. The runtime's part is a
 * static const hooks table; the loop is inlined into each runtime's
 * scheduler with the table a constant, so no hook costs an indirect call. */
#ifndef RT_DEVICE_SCHED_LOOP_H
#define RT_DEVICE_SCHED_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/device/sched_pass.h"
#include "runtime/device/trace_write.h"

typedef struct rt_sched_loop_hooks {
    const rt_sched_hooks *pass; /* the pass's hooks */
    /* Optional (NULL: none): before each pass, e.g. a watch whose deadline
     * it may set in s->wake_by. */
    void (*before_pass)(void *rt, rt_sched *s);
    /* Take one ready dummy task: its handle and (traces) submit time. */
    bool (*pop_dummy)(void *rt, uint64_t *task, uint64_t *submit_ns);
    /* Complete a task (a dummy, once popped). */
    void (*complete)(void *rt, uint64_t task);
    /* The run is over (read once this thread's cores are all idle). */
    bool (*over)(void *rt);
} rt_sched_loop_hooks;

/* Tracing: a dummy task completes on the scheduler thread, with no core. */
void rt_trace_dummy(rt_trace_writer *w, uint64_t task, uint64_t submit_ns);

/* Run scheduler `s` (initialised, its trace writer set when traced) until
 * the run is over. */
__attribute__((always_inline)) static inline void
rt_sched_loop(rt_sched *s, const rt_sched_loop_hooks *h, void *rt, rt_trace_writer *tw)
{
    bool phases = tw->level >= SP_TRACE_SCHED;
    for (;;) {
        uint32_t snap = sp_chip_event_snapshot(s->chip);
        uint64_t t0 = phases ? sp__ticks() : 0;
        if (h->before_pass)
            h->before_pass(rt, s);
        bool progress = rt_sched_pass(s, h->pass, rt);
        uint64_t task, submit_ns;
        while (h->pop_dummy(rt, &task, &submit_ns)) {
            if (s->trace)
                rt_trace_dummy(tw, task, submit_ns);
            h->complete(rt, task);
            progress = true;
        }
        if (phases && progress)
            rt_trace_phase(tw, SP_TRACE_SCHED_PASS, 0, t0, sp__ticks());
        if (!rt_sched_busy(s) && h->over(rt))
            break;
        if (!progress) {
            uint64_t w0 = phases ? sp__ticks() : 0;
            rt_sched_idle_wait(s, snap);
            if (phases)
                rt_trace_phase(tw, SP_TRACE_SCHED_IDLE, 0, w0, sp__ticks());
        }
    }
}

#endif
