/* host_build_graph's part of tracing: size the run's trace buffer from the
 * built graph, keep the graph's edges on the host (the host knows every
 * edge and its kind), and point the image at the buffer. */
#ifndef SP_RUNTIME_HBG_TRACE_H
#define SP_RUNTIME_HBG_TRACE_H

#include "runtime/host/trace_read.h"
#include "runtime/host_build_graph/host/hbg_build.h"
#include "runtime/runtime.h"

/* With p->config.trace_level set: allocate t's device buffer for `g` run by
 * `threads` schedulers, copy g's edges, and set the trace address in the
 * written (not yet uploaded) image at `image`. Level 0: nothing. 0 or a
 * status, reason in p->err. */
int hbg_trace_prepare(rt_trace_dev *t, const rt_prepare *p, const hbg_graph *g, uint32_t threads,
                      void *image);

/* The same for a replay of a recorded graph of `task_count` tasks
 * (`tasks`, the record's pristine ones, give each consumer's edge count)
 * with its `edge_count` edges `deps`: the caller points the header at
 * t->dev. */
int hbg_trace_prepare_replay(rt_trace_dev *t, const rt_prepare *p, uint64_t slices,
                             uint32_t task_count, const hbg_dep *deps, uint64_t edge_count,
                             const hbg_task *tasks, uint32_t threads);

#endif
