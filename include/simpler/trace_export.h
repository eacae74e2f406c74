/* Exporters of a run's trace (simpler/trace.h) for any host program: the
 * `simpler` command's --trace, --swimlane, --deps and --stats are these. */
#ifndef SIMPLER_TRACE_EXPORT_H
#define SIMPLER_TRACE_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "simpler/callable.h"
#include "simpler/export.h"
#include "simpler/module.h"
#include "simpler/trace.h"

/* Pictures and figures of one run's trace, for any host program (the
 * `simpler` command uses exactly these). Formats:
 *   JSON  Chrome trace / Perfetto: one track per core (its slices and the
 *         time each sat queued on the core after dispatch), scheduler and
 *         orchestrator tracks, dependency flows; the critical path marked
 *         (args.critical, its flows in their own colour)
 *   SVG   swimlane: a lane per core (AIC, AIV0, AIV1 per cluster), per
 *         scheduler thread and (tmr) the orchestrator; queued time drawn
 *         lighter before each slice; the critical path outlined
 *   DOT   the dependency graph, ranked by depth and coloured by kernel,
 *         critical path bold; past SP_TRACE_DOT_DETAIL_MAX tasks a summary
 *         graph (one node per kernel per depth band, edge counts)
 *   STATS text lines: tasks, edges by kind, per-kernel time, critical path,
 *         queueing, core utilisation (what `simpler run --stats` prints) */
typedef enum sp_trace_format {
    SP_TRACE_FORMAT_JSON = 1,
    SP_TRACE_FORMAT_SVG = 2,
    SP_TRACE_FORMAT_DOT = 3,
    SP_TRACE_FORMAT_STATS = 4,
} sp_trace_format;

#define SP_TRACE_DOT_DETAIL_MAX 400u

/* What an exporter needs beside the records: all fields optional. */
typedef struct sp_trace_info {
    const char *runtime;              /* "hbg", "tmr" (lane layout, titles); NULL: "" */
    const sp_callable_view *callable; /* kernel names by func_id; NULL: "f<id>" */
    const sp_run_stats *stats;        /* the run's figures, for titles and STATS */
    uint32_t dot_detail_max;          /* 0: SP_TRACE_DOT_DETAIL_MAX */
    uint32_t reserved[7];
} sp_trace_info;

/* The format a file name asks for by its extension: .json, .svg, .dot,
 * .txt / .stats; 0 for any other. */
SP_EXPORT int sp_trace_format_of(const char *path);
/* Write `tr` in `format` to `path` ("-": stdout). 0, SP_EINVAL (NULL
 * trace, a trace with level 0, unknown format), SP_ENOMEM, or SP_ESYS when
 * the file cannot be written (errno's text in `err`). */
SP_EXPORT int sp_trace_write(const sp_run_trace *tr, const sp_trace_info *info, int format,
                             const char *path, char *err, size_t err_len);

/* sp_trace_write into an open stream (not closed; flushed): a memory
 * stream (open_memstream) gets the text without a file. The same statuses,
 * SP_EINVAL for a NULL stream, SP_ESYS when a write to it fails. */
SP_EXPORT int sp_trace_write_file(const sp_run_trace *tr, const sp_trace_info *info, int format,
                                  FILE *f, char *err, size_t err_len);

#endif
