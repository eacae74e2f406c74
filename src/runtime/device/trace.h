/* The trace recorder, both sides of it. Device side: scheduler threads (and
 * tmr's orchestrator) write sp_trace_records into one pre-sized array in
 * device memory, without locks — each thread claims a chunk of records with
 * one atomic add and fills it alone; a full array drops and counts. Edges go
 * to a second array written by the orchestrator alone. Host side: allocate
 * and clear the buffer at prepare, copy it out after completion, free it at
 * finalize. When tracing is off the buffer pointer is NULL and the hot path
 * pays one predictable branch per dispatch and per reap. */
#ifndef SP_RUNTIME_SHARED_TRACE_H
#define SP_RUNTIME_SHARED_TRACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ticks.h"
#include "runtime/host/loaded_callable.h"
#include "simpler/host_api.h"
#include "simpler/trace.h"

#define SP_TRACE_CHUNK 64u /* records a thread claims at once */

/* Device-resident header; the record and edge arrays follow it. */
typedef struct sp_trace_buf {
    uint32_t level;
    uint32_t reserved;
    uint64_t rec_cap;
    uint64_t edge_cap;
    sp_trace_record *recs; /* device addresses */
    sp_trace_edge *edges;
    uint64_t func_ids;    /* device address of int32_t[kernel count]: func_id by kernel index */
    uint64_t ticks0, ns0; /* calibration at prepare: record times are sp_ticks() */
    _Alignas(64) _Atomic uint64_t rec_next; /* next unclaimed record */
    _Atomic uint64_t rec_dropped;
    _Alignas(64) uint64_t edge_next; /* written by the orchestrator only */
    uint64_t edge_dropped;
} sp_trace_buf;

/* One thread's cursor into its claimed chunk (thread-private). */
typedef struct sp_trace_writer {
    sp_trace_buf *buf; /* NULL: tracing off */
    sp_trace_record *at, *end;
    uint16_t thread;
    uint8_t level;
} sp_trace_writer;

static inline void sp_trace_writer_init(sp_trace_writer *w, sp_trace_buf *buf, uint32_t thread)
{
    w->buf = buf;
    w->at = w->end = NULL;
    w->thread = (uint16_t)thread;
    w->level = buf ? (uint8_t)buf->level : 0;
}

/* A fresh record (zeroed by the host at prepare), or NULL when the array is
 * full (counted as dropped). */
static inline sp_trace_record *sp_trace_next(sp_trace_writer *w)
{
    if (w->at == w->end) {
        sp_trace_buf *b = w->buf;
        /* Relaxed: claims need only be disjoint; the host reads the records
         * after the launch completed, which orders everything. */
        uint64_t at = atomic_fetch_add_explicit(&b->rec_next, SP_TRACE_CHUNK, memory_order_relaxed);
        if (at >= b->rec_cap) {
            /* Relaxed: a counter read after the launch completed. */
            atomic_fetch_add_explicit(&b->rec_dropped, 1, memory_order_relaxed);
            return NULL;
        }
        uint64_t end = at + SP_TRACE_CHUNK < b->rec_cap ? at + SP_TRACE_CHUNK : b->rec_cap;
        w->at = b->recs + at;
        w->end = b->recs + end;
    }
    sp_trace_record *r = w->at++;
    r->thread = w->thread;
    return r;
}

/* A phase record [begin, end] (sp_ticks() values) of `kind` (level >= 2
 * passes and idles, level >= 3 submits). */
static inline void sp_trace_phase(sp_trace_writer *w, uint8_t kind, uint64_t task, uint64_t begin,
                                  uint64_t end)
{
    sp_trace_record *r = sp_trace_next(w);
    if (!r)
        return;
    r->kind = kind;
    r->task = task;
    r->dispatch_ns = begin;
    r->start_ns = begin;
    r->end_ns = end;
    r->core = SP_TRACE_NO_CORE;
    r->func_id = -1;
}

/* One edge (the orchestrator's thread only). */
static inline void sp_trace_edge_add(sp_trace_buf *b, uint64_t producer, uint64_t consumer,
                                     uint32_t kind)
{
    if (b->edge_next >= b->edge_cap) {
        b->edge_dropped++;
        return;
    }
    b->edges[b->edge_next++] =
        (sp_trace_edge){.producer = producer, .consumer = consumer, .kind = kind};
}

/* ---- host side ------------------------------------------------------------ */

/* A run's trace buffer as its runtime holds it on the host. */
typedef struct sp_trace_dev {
    uint32_t level;   /* 0: tracing off, nothing allocated */
    uint64_t dev;     /* device address of the sp_trace_buf */
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
} sp_trace_dev;

/* Records a run of `slices` core executions and `tasks` tasks needs at
 * `level`, plus one partial chunk per thread (`threads` writers). */
uint64_t sp_trace_records_for(uint32_t level, uint64_t slices, uint64_t tasks, uint32_t threads);

/* Allocate and clear a buffer of `rec_cap` records and `edge_cap` edges in
 * device memory, with `lc`'s func_id table. level 0 allocates nothing.
 * 0 or a status, reason in err. */
int sp_trace_dev_alloc(sp_trace_dev *t, const sp_host_api *api, uint32_t level, uint64_t rec_cap,
                       uint64_t edge_cap, const sp_loaded_callable *lc, char *err, size_t err_len);
/* The device-side header (NULL when off), for the runtime's control block. */
static inline sp_trace_buf *sp_trace_dev_buf(const sp_trace_dev *t)
{
    return t->level ? (sp_trace_buf *)(uintptr_t)t->dev : NULL;
}
/* Copy the records (written ones only) and edges into io's arrays and set
 * its counts, level and phases; the first call reads the device buffer.
 * 0 or a status. */
int sp_trace_dev_read(sp_trace_dev *t, const sp_host_api *api, sp_run_trace *io);
/* Free the device buffer and the host edges. */
void sp_trace_dev_free(sp_trace_dev *t, const sp_host_api *api);

#endif
