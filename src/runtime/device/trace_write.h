/* The trace recorder's device side: scheduler threads (and tmr's
 * orchestrator) write rt_trace_records into one pre-sized array in device
 * memory, without locks — each thread claims a chunk of records with one
 * atomic add and fills it alone; a full array drops and counts. Edges go to
 * a second array written by the orchestrator alone. When tracing is off the
 * buffer pointer is NULL and the hot path pays one predictable branch per
 * dispatch and per reap. The host allocates, clears and reads the buffer
 * (runtime/host/trace_read.h). */
#ifndef RT_DEVICE_TRACE_WRITE_H
#define RT_DEVICE_TRACE_WRITE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ticks.h"
#include "simpler/trace.h"

#define SP_TRACE_CHUNK 64u /* records a thread claims at once */

/* Device-resident header; the record and edge arrays follow it. */
typedef struct rt_trace_buf {
    uint32_t level;
    uint32_t reserved;
    uint64_t rec_cap;
    uint64_t edge_cap;
    sp_trace_record *recs; /* device addresses */
    sp_trace_edge *edges;
    uint64_t func_ids;    /* device address of int32_t[kernel count]: func_id by kernel index */
    uint64_t ticks0, ns0; /* calibration at prepare: record times are sp__ticks() */
    _Alignas(64) _Atomic uint64_t rec_next; /* next unclaimed record */
    _Atomic uint64_t rec_dropped;
    _Alignas(64) uint64_t edge_next; /* written by the orchestrator only */
    uint64_t edge_dropped;
} rt_trace_buf;

/* One thread's cursor into its claimed chunk (thread-private). */
typedef struct rt_trace_writer {
    rt_trace_buf *buf; /* NULL: tracing off */
    sp_trace_record *at, *end;
    uint16_t thread;
    uint8_t level;
} rt_trace_writer;

static inline void rt_trace_writer_init(rt_trace_writer *w, rt_trace_buf *buf, uint32_t thread)
{
    w->buf = buf;
    w->at = w->end = NULL;
    w->thread = (uint16_t)thread;
    w->level = buf ? (uint8_t)buf->level : 0;
}

/* A fresh record (zeroed by the host at prepare), or NULL when the array is
 * full (counted as dropped). */
static inline sp_trace_record *rt_trace_next(rt_trace_writer *w)
{
    if (w->at == w->end) {
        rt_trace_buf *b = w->buf;
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

/* A phase record [begin, end] (sp__ticks() values) of `kind` (level >= 2
 * passes and idles, level >= 3 submits). */
static inline void rt_trace_phase(rt_trace_writer *w, uint8_t kind, uint64_t task, uint64_t begin,
                                  uint64_t end)
{
    sp_trace_record *r = rt_trace_next(w);
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
static inline void rt_trace_edge_add(rt_trace_buf *b, uint64_t producer, uint64_t consumer,
                                     uint32_t kind)
{
    if (b->edge_next >= b->edge_cap) {
        b->edge_dropped++;
        return;
    }
    b->edges[b->edge_next++] =
        (sp_trace_edge){.producer = producer, .consumer = consumer, .kind = kind};
}

#endif
