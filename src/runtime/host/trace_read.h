/* The trace recorder's host side: size, allocate and clear a run's device
 * trace buffer at prepare (runtime/device/trace_write.h is what the chip
 * writes into it), read it back once after the run, hand it out through
 * simpler_run_trace, free it at finalize. */
#ifndef RT_HOST_TRACE_READ_H
#define RT_HOST_TRACE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/device/trace_write.h"
#include "runtime/host/loaded_callable.h"
#include "simpler/host_api.h"
#include "simpler/trace.h"

/* A run's trace buffer as its runtime holds it on the host. */
typedef struct rt_trace_dev {
    uint32_t level;   /* 0: tracing off, nothing allocated */
    uint64_t dev;     /* device address of the rt_trace_buf */
    uint64_t bytes;   /* of the whole allocation */
    uint64_t rec_cap; /* records the array holds */
    uint64_t edge_cap;
    /* Edges the host knew (hbg builds them on the host): copied out as is. */
    sp_trace_edge *host_edges;
    uint64_t host_edge_count;
    uint64_t phase_ns[SP_TRACE_PHASES][2];
    /* The written records, read back once after the run. */
    sp_trace_record *host_recs;
    uint64_t host_rec_count, recs_dropped;
    sp_trace_edge *dev_edges; /* edges read back from the device (tmr) */
    uint64_t dev_edge_count, edges_dropped;
    bool read;
} rt_trace_dev;

/* Records a run of `slices` core executions and `tasks` tasks needs at
 * `level`, plus one partial chunk per thread (`threads` writers). */
uint64_t rt_trace_records_for(uint32_t level, uint64_t slices, uint64_t tasks, uint32_t threads);

/* Allocate and clear a buffer of `rec_cap` records and `edge_cap` edges in
 * device memory, with `lc`'s func_id table. level 0 allocates nothing.
 * 0 or a status, reason in err. */
int rt_trace_dev_alloc(rt_trace_dev *t, const sp_host_api *api, uint32_t level, uint64_t rec_cap,
                       uint64_t edge_cap, const rt_loaded_callable *lc, char *err, size_t err_len);
/* The device-side header (NULL when off), for the runtime's control block. */
static inline rt_trace_buf *rt_trace_dev_buf(const rt_trace_dev *t)
{
    return t->level ? (rt_trace_buf *)(uintptr_t)t->dev : NULL;
}
/* Copy the records (written ones only) and edges into io's arrays and set
 * its counts, level and phases; the first call reads the device buffer.
 * 0 or a status. */
int rt_trace_dev_read(rt_trace_dev *t, const sp_host_api *api, sp_run_trace *io);
/* Free the device buffer and the host edges. */
void rt_trace_dev_free(rt_trace_dev *t, const sp_host_api *api);

#endif
