/* The orchestrator's internal seam: the publish half of a submit, shared by
 * the orchestration's submit (which validates the task and derives its
 * producers through the TensorMap first), the replay driver (which takes
 * both from a recorded stream) and graph tasks (dependencies given). One
 * copy of the ring mechanism: pins, back-pressure, holds, fan-out links,
 * readiness. All of it runs on the orchestrator thread only. */
#ifndef SP_RUNTIME_TMR_ORCH_H
#define SP_RUNTIME_TMR_ORCH_H

#include <stdint.h>

#include "runtime/tensormap_and_ringbuffer/device/tmr_layout.h"

/* The producers a task pinned (their refs raised) while it waits for room. */
typedef struct tmr_pins {
    int64_t id[SP_MAX_TASK_TENSORS + 1]; /* + a predicate's tensor */
    int n;
} tmr_pins;

/* Pin `owner`, the creator of argument `arg` of task `id` (a runtime-owned
 * input), so making room never reclaims it. 0, or SP_ETENSOR_RETIRED (the
 * run failed by name, every pin in `p` dropped). */
int tmr_pin(tmr_orch *o, tmr_pins *p, int64_t id, int arg, int64_t owner);
/* Drop every pin in `p`. */
void tmr_unpin(tmr_orch *o, tmr_pins *p);
/* Back-pressure: wait for a slot, room in the argument ring for a task of
 * `tensors` and `scalars` arguments, `need` heap bytes and (map_need > 0)
 * that many TensorMap entries, then carve the extent (the slot's arrays
 * point into it) and the heap: *at is the heap carve's offset,
 * o->heap.head its end. 0, or the deadlock / stall status (the
 * run failed by name, pins dropped). */
int tmr_reserve(tmr_orch *o, tmr_pins *p, uint64_t need, uint32_t map_need, uint32_t tensors,
                uint32_t scalars, uint64_t *at);
/* Give back what tmr_reserve carved (heap at `heap_at`, the extent) for a
 * task that will not be published. */
void tmr_reserve_undo(tmr_orch *o, uint64_t heap_at);
/* Publish task t->id in slot `t`, which the caller filled after
 * tmr_reserve (id, shape, block_num, kernel, tensor and scalar counts,
 * tensors, args, heap_end, heap_need, check_mask), with producers `deps`
 * (count <= TMR_MAX_HOLDS, ids below t->id): hold and link them, keep the
 * creators of runtime-owned inputs, drop the pins, count the edges, make
 * the task visible and ready if nothing is pending. `scalar_src` (NULL:
 * all literal) is what a recording keeps of where each scalar came from.
 * Returns t->id. */
int64_t tmr_publish(tmr_orch *o, tmr_task *t, const rt_dep_list *deps, tmr_pins *pins,
                    const uint16_t *scalar_src);
/* sp_alloc_tensor's carve: `bytes` from the heap's far end (the ring
 * shrinks), waiting until the ring is clear of it. 0 with *top the carve's
 * offset, or a status (the run failed by name). */
int tmr_static_carve(tmr_orch *o, uint64_t bytes, uint64_t *top);
/* Scopes: open one (SP_SCOPE_AUTO / MANUAL), close the innermost. */
int tmr_scope_open(tmr_orch *o, int mode);
void tmr_scope_close(tmr_orch *o);
/* The run's first error so far (0: none). */
int tmr_orch_error(tmr_orch *o);

#endif
