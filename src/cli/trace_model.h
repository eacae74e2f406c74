/* One run's trace as the CLI's exporters see it: the records and edges of
 * sp_worker_last_trace, kernel names from the callable, and per-task
 * figures derived once (first dispatch, first start, last end, when the
 * task became ready, its place on the critical path). Exporters: Chrome
 * trace JSON (trace_json.c), SVG swimlane (trace_svg.c), Graphviz DOT
 * (trace_dot.c), the --stats summary (trace_stats.c). */
#ifndef SP_CLI_TRACE_MODEL_H
#define SP_CLI_TRACE_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "simpler/module.h"
#include "simpler/trace.h"

typedef struct tm_task {
    bool seen;            /* a record names it */
    uint8_t shape;        /* sp_task_shape */
    int32_t func_id;      /* of its first lane with a kernel, -1 for dummies */
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
    const sp_run_stats *stats;
    const char *runtime; /* "hbg" / "tmr" */
    uint64_t task_count; /* 1 + highest task id recorded */
    tm_task *tasks;
    tm_name *names;
    uint32_t name_count;
    uint64_t t0_ns;  /* the earliest time: the exports count from here */
    uint64_t end_ns; /* the latest */
} trace_model;

/* Build the model of `tr`; kernel names from the callable file at
 * `callable_path` (func_id numbers if it cannot be read). 0, or -1 (out of
 * memory). */
int trace_model_build(trace_model *m, const sp_run_trace *tr, const sp_run_stats *stats,
                      const char *runtime, const char *callable_path);
void trace_model_free(trace_model *m);
/* The kernel name of `func_id` ("dummy" for -1). */
const char *tm_kernel_name(const trace_model *m, int32_t func_id);
/* Edge kind names: creator, RAW, WAW, WAR, explicit. */
const char *tm_edge_kind_name(uint32_t kind);
const char *tm_shape_name(uint8_t shape);
/* Cluster and lane (0 AIC, 1 AIV0, 2 AIV1) of core index `core`. */
void tm_core_place(const trace_model *m, uint32_t core, uint32_t *cluster, uint32_t *lane);
/* Microseconds since t0, for the exports. */
static inline double tm_us(const trace_model *m, uint64_t ns)
{
    return ns >= m->t0_ns ? (double)(ns - m->t0_ns) / 1e3 : 0.0;
}

/* The exporters: 0, or -1 with errno set (cannot write `path`). */
int trace_write_json(const trace_model *m, const char *path);
int trace_write_svg(const trace_model *m, const char *path);
int trace_write_dot(const trace_model *m, const char *path);
/* The --stats lines, to `out`. */
void trace_print_stats(const trace_model *m, FILE *out);

#endif
