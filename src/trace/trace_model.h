/* One run's trace as the exporters see it (simpler/trace_export.h): the
 * records and edges of an sp_run_trace, kernel names from the callable's
 * view, and per-task figures derived once: first dispatch, first start,
 * last end, when the task became ready, its depth in the graph and its
 * place on the critical path. Exporters: Chrome trace JSON (trace_json.c),
 * SVG swimlane (trace_svg.c), Graphviz DOT (trace_dot.c), the STATS lines
 * (trace_stats.c); trace_write.c is the public entry. */
#ifndef SP_TRACE_MODEL_H
#define SP_TRACE_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "simpler/module.h"
#include "simpler/trace.h"
#include "simpler/trace_export.h"

typedef struct tm_task {
    bool seen;            /* a record names it */
    bool critical;        /* on the critical path */
    bool skipped;         /* predicated off: retired without running (SP_TRACE_SKIPPED) */
    uint8_t shape;        /* sp_task_shape */
    int32_t func_id;      /* of its first lane with a kernel, -1 for dummies */
    uint32_t depth;       /* 0 for a root, else 1 + its deepest producer's */
    uint64_t submit_ns;   /* tmr; 0 on hbg */
    uint64_t ready_ns;    /* its last producer ended (or submit / launch for roots) */
    uint64_t dispatch_ns; /* first dispatch of any block */
    uint64_t start_ns;    /* first start */
    uint64_t end_ns;      /* last end */
    int64_t last_rec;     /* record that ended last (flow arrows start there) */
    int64_t first_rec;    /* record that started first (flow arrows end there) */
    uint64_t cp_ns;       /* longest path ending with this task, by durations */
    int64_t cp_prev;      /* predecessor on that path, -1 none */
} tm_task;

typedef struct tm_name {
    int32_t func_id;
    char name[64];
} tm_name;

typedef struct trace_model {
    const sp_run_trace *tr;
    const sp_run_stats *stats; /* may be NULL */
    const char *runtime;       /* "hbg" / "tmr" / "" */
    uint64_t task_count;       /* 1 + highest task id recorded */
    uint64_t skipped;          /* tasks with an SP_TRACE_SKIPPED record */
    tm_task *tasks;
    tm_name *names; /* the callable's kernels, in its order */
    uint32_t name_count;
    uint32_t max_depth;
    uint32_t dot_detail_max;
    int64_t cp_tail;        /* last task of the critical path, -1 none */
    uint64_t cp_ns;         /* its length, by task durations */
    uint64_t cp_tasks;      /* tasks on it */
    uint8_t *queue_row;     /* per record: its row among the core's queued payloads */
    uint32_t queue_rows;    /* rows used (max over cores) */
    uint64_t t0_ns;         /* the earliest time: the exports count from here */
    uint64_t end_ns;        /* the latest */
    char fallback_name[16]; /* "f<id>" for a kernel the callable does not name */
} trace_model;

/* Build the model of `tr` (level >= 1) with `info` (may be NULL). 0 or
 * SP_ENOMEM. */
int tm_build(trace_model *m, const sp_run_trace *tr, const sp_trace_info *info);
void tm_free(trace_model *m);
/* The kernel name of `func_id`: the callable's, "dummy" for -1, else
 * "f<id>" (valid until the next call). */
const char *tm_kernel_name(trace_model *m, int32_t func_id);
/* Index of `func_id` among the callable's kernels (colours), or -1. */
int tm_kernel_index(const trace_model *m, int32_t func_id);
/* Edge kind names: creator, RAW, WAW, WAR, explicit. */
const char *tm_edge_kind_name(uint32_t kind);
const char *tm_shape_name(uint8_t shape);
/* Cluster and lane (0 AIC, 1 AIV0, 2 AIV1) of core index `core`. */
void tm_core_place(const trace_model *m, uint32_t core, uint32_t *cluster, uint32_t *lane);
/* Is the edge producer -> consumer on the critical path? */
bool tm_edge_critical(const trace_model *m, uint64_t producer, uint64_t consumer);
static inline bool tm_is_task_record(const sp_trace_record *r)
{
    return r->kind == SP_TRACE_SLICE || r->kind == SP_TRACE_DUMMY || r->kind == SP_TRACE_SKIPPED;
}
/* Microseconds since t0, for the exports. */
static inline double tm_us(const trace_model *m, uint64_t ns)
{
    return ns >= m->t0_ns ? (double)(ns - m->t0_ns) / 1e3 : 0.0;
}
static inline double tm_span_us(uint64_t b, uint64_t e)
{
    return e > b ? (double)(e - b) / 1e3 : 0.0;
}

/* The colour of a kernel in every picture (by its index in the callable). */
const char *tm_kernel_colour(const trace_model *m, int32_t func_id);

/* The exporters, writing to `f`; 0 or SP_ENOMEM (write errors: ferror). */
int tm_write_json(trace_model *m, FILE *f);
int tm_write_svg(trace_model *m, FILE *f);
int tm_write_dot(trace_model *m, FILE *f);
int tm_write_stats(trace_model *m, FILE *f);

#endif
