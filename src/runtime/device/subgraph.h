/* Graph tasks (sp_submit_graph), recorded once and instantiated, for both
 * runtimes. The first call with a key and a boundary geometry runs the body
 * through a recording proxy of the ops table: every op goes on to the
 * runtime as usual, and each submitted task is kept as a template (its
 * arguments as views of a boundary tensor, of an inner output or
 * allocation, or kept as they are; its scalars with their sources; the
 * edges the runtime derived to the instance's own tasks). Later calls
 * instantiate the templates without calling the body: inner tensors are
 * passed as SP_NO_DEP and the recorded inner edges as explicit
 * dependencies, so only the boundary arguments meet the TensorMap, and the
 * instance's edges to the rest of the graph are those one-by-one
 * submission gives. Records live in a bounded region the runtime hands
 * over (hbg: a host buffer of the run's store; tmr: a block at the far end
 * of the run's heap ring, carved at the first graph task) and last one
 * run; nothing is allocated per call. */
#ifndef RT_DEVICE_SUBGRAPH_H
#define RT_DEVICE_SUBGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/device/tensormap.h"
#include "simpler/orchestration.h"

/* What the recorder asks of the runtime; `o` is the runtime's sp_orch. */
typedef struct rt_subgraph_hooks {
    /* The producers the runtime derived for task `id`, just submitted:
     * up to `max` into `out`; returns how many there are. */
    uint32_t (*derived)(sp_orch *o, int64_t id, int64_t *out, uint32_t max);
    /* The id the next submit gets (tasks are numbered in submission order). */
    int64_t (*next_id)(sp_orch *o);
    /* Tasks below this id have retired: their edges are no longer derived. */
    int64_t (*live_below)(sp_orch *o);
    /* The mode of the innermost open scope (SP_SCOPE_AUTO outside any). */
    int (*scope_mode)(sp_orch *o);
    /* Fail the run with `status` and `msg` (first error wins); returns status. */
    int (*fail)(sp_orch *o, int status, const char *msg);
} rt_subgraph_hooks;

#define RT_SUBGRAPH_BUCKETS 64

/* The recorder's state, one per run, inside the runtime's orchestrator
 * state (only the orchestration's thread touches it). */
typedef struct rt_subgraph {
    const rt_subgraph_hooks *hooks;
    unsigned char *mem; /* the region: records from the bottom, recording scratch from the top */
    uint64_t bytes;
    uint64_t used;                         /* committed records */
    uint32_t buckets[RT_SUBGRAPH_BUCKETS]; /* record offset + 1 by key hash, 0: none */
    int64_t inner_first;                   /* while instantiating: the instance's first id */
    uint64_t key;                          /* the innermost graph task running (error notes) */
    uint32_t depth;                        /* graph tasks running (bodies and instances) */
} rt_subgraph;

/* An empty recorder over `hooks` and the region [mem, mem + bytes) (may be
 * empty: every graph task then runs its body one by one). */
void rt_subgraph_init(rt_subgraph *sg, const rt_subgraph_hooks *hooks, void *mem, uint64_t bytes);

/* The runtime's op_submit_graph: validate, then record or instantiate.
 * Returns the number of tasks submitted, or a negative status (the run
 * has failed with it). */
int64_t rt_subgraph_submit(rt_subgraph *sg, sp_orch *o, sp_graph_fn fn, const sp_graph_args *a,
                           uint64_t key);

/* Append " (in graph task key K)" to a failure message while a graph task
 * runs, so an error inside a body or an instance names it. */
void rt_subgraph_note(const rt_subgraph *sg, char *msg, size_t len);

/* A submit's dependency list, in an instance: an inner tensor is passed as
 * SP_NO_DEP, whose creator edge the recording found implied by another
 * edge (or the instance's explicit inner edges carry it): drop creator
 * edges from the instance's own tasks, as one-by-one submission left them
 * out. One compare per submit outside instances. */
static inline void rt_subgraph_drop_inner_creators(const rt_subgraph *sg, rt_dep_list *deps)
{
    if (sg->inner_first < 0)
        return;
    uint32_t n = 0;
    for (uint32_t i = 0; i < deps->count; i++) {
        if (deps->kind[i] == SP_EDGE_CREATOR && deps->producer[i] >= sg->inner_first)
            continue;
        deps->producer[n] = deps->producer[i];
        deps->kind[n++] = deps->kind[i];
    }
    deps->count = n;
}

/* In an instance, a fresh output (SP_OUT) is an inner tensor that only
 * the instance's tasks touch, as SP_NO_DEP: the TensorMap need not record
 * the write (nothing will ever look it up). */
static inline bool rt_subgraph_skips_map(const rt_subgraph *sg, int dir)
{
    return sg->inner_first >= 0 && dir == SP_OUT;
}

#endif
