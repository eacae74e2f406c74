/* Per-task trace records of one run (DESIGN.md §10): what a runtime records
 * on the chip when sp_call_config.trace_level is non-zero, and what
 * simpler_run_trace / sp_worker_last_trace hand back. All times are
 * sp_now_ns() values: one monotonic clock for the host and the chip. */
#ifndef SIMPLER_TRACE_H
#define SIMPLER_TRACE_H

#include <stdint.h>

#include "simpler/export.h"

/* sp_call_config.trace_level. */
enum {
    SP_TRACE_OFF = 0,
    SP_TRACE_TASKS = 1,   /* one record per block a core ran, the dependency edges */
    SP_TRACE_SCHED = 2,   /* + scheduler passes and idle waits */
    SP_TRACE_SUBMITS = 3, /* + the orchestrator's submits (tmr) */
};

/* sp_trace_record.kind; 0 marks an unwritten record and is never returned. */
enum {
    SP_TRACE_SLICE = 1,      /* one block of a task on one core */
    SP_TRACE_DUMMY = 2,      /* a dummy task, completed by a scheduler without a core */
    SP_TRACE_SCHED_PASS = 3, /* a scheduler pass that did something: [dispatch_ns, end_ns] */
    SP_TRACE_SCHED_IDLE = 4, /* a scheduler waiting for the chip event */
    SP_TRACE_SUBMIT = 5,     /* the orchestrator's submit of `task` */
    SP_TRACE_SKIPPED = 6,    /* a predicated task retired without running (its predicate false) */
};

#define SP_TRACE_NO_CORE 0xffffu

typedef struct sp_trace_record {
    uint64_t task;        /* task id (slices, dummies, submits) */
    uint64_t submit_ns;   /* tmr: when the orchestrator published the task; hbg: 0 */
    uint64_t dispatch_ns; /* the scheduler rang the doorbell (phases: begin) */
    uint64_t start_ns;    /* the core began the kernel */
    uint64_t end_ns;      /* the core finished it (phases: end) */
    int32_t func_id;      /* the kernel's func_id, -1 for none */
    uint32_t block;       /* block index */
    uint16_t core;        /* core index (AICs first, then 2 AIV per cluster), or NO_CORE */
    uint16_t thread;      /* scheduler thread (the orchestrator: sched_threads) */
    uint8_t kind;         /* SP_TRACE_* kind */
    uint8_t shape;        /* sp_task_shape */
    uint8_t lane;         /* 0 AIC, 1 AIV0, 2 AIV1 */
    uint8_t flags;        /* SP_TRACE_F_* */
} sp_trace_record;

/* sp_trace_record.flags. CHAINED: a slice queued on its core behind its
 * last producer before that producer finished (chained dispatch): its
 * dispatch may precede the time it became ready, never its start. */
#define SP_TRACE_F_CHAINED 0x1u

_Static_assert(sizeof(sp_trace_record) == 56, "sp_trace_record is a 56-byte POD");

/* Edge kinds (the TensorMap's): creator, RAW, WAW, WAR, explicit. */
enum {
    SP_TRACE_EDGE_CREATOR = 0,
    SP_TRACE_EDGE_RAW = 1,
    SP_TRACE_EDGE_WAW = 2,
    SP_TRACE_EDGE_WAR = 3,
    SP_TRACE_EDGE_EXPLICIT = 4,
    SP_TRACE_EDGE_KINDS = 5,
};

typedef struct sp_trace_edge {
    uint64_t producer;
    uint64_t consumer;
    uint32_t kind;
    uint32_t reserved;
} sp_trace_edge;

/* Host-side phases of a run's prepare (hbg: stage, orchestrate, wire,
 * upload; tmr: stage, ring setup), [begin, end] each, 0 when absent. */
enum {
    SP_TRACE_PHASE_STAGE = 0,
    SP_TRACE_PHASE_ORCHESTRATE = 1,
    SP_TRACE_PHASE_WIRE = 2,
    SP_TRACE_PHASE_UPLOAD = 3,
    SP_TRACE_PHASES = 4,
};

/* simpler_run_trace's in/out: the caller sets records/record_cap and
 * edges/edge_cap (NULL/0 to learn the counts first); the module fills the
 * rest and copies min(count, cap) of each. */
typedef struct sp_run_trace {
    uint32_t level;         /* the run's trace level (0: not traced, nothing else set) */
    uint32_t sched_threads; /* scheduler threads of the run */
    uint32_t clusters;      /* clusters of the chip (cores = 3 x clusters) */
    uint32_t reserved0;
    uint64_t launch_ns;                     /* the device side was launched */
    uint64_t done_ns;                       /* the host saw it complete */
    uint64_t orch_begin_ns, orch_end_ns;    /* tmr: the orchestration on the chip */
    uint64_t phase_ns[SP_TRACE_PHASES][2];  /* host phases of the prepare */
    uint64_t record_count, records_dropped; /* dropped: the buffer was full */
    uint64_t edge_count, edges_dropped;
    sp_trace_record *records;
    uint64_t record_cap;
    sp_trace_edge *edges;
    uint64_t edge_cap;
    uint64_t reserved[4];
} sp_run_trace;

#endif
