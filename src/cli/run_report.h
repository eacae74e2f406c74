/* What `simpler run` says about a run, for both forms (an example, a
 * callable file): the PASS/FAIL line, or with --json one JSON object; the
 * --rounds progress bar (stderr, terminals only). */
#ifndef SP_CLI_RUN_REPORT_H
#define SP_CLI_RUN_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/cli.h"
#include "simpler/module.h"
#include "simpler/trace.h"

#define RUN_REPORT_MAX_OUTPUTS 256

typedef struct run_report {
    const char *target;    /* example name or callable file */
    bool is_file;          /* target is a callable file */
    const char *runtime;   /* as asked for */
    const char *case_name; /* examples; NULL for files */
    int status;            /* the run's status (or the failing open / register's) */
    const char *error;     /* its message (also printed on stderr) */
    bool wrong;            /* it ran, but the result (or writing a file) failed */
    const char *why;       /* what was wrong */
    sp_run_stats st;       /* of the last round */
    double max_err;        /* examples: largest error against the golden */
    long rounds;
    int replay;    /* --replay asked (0 off): the rounds that replayed are reported */
    long replayed; /* rounds whose run replayed a recorded graph (sp_run_stats.replay) */
    const uint64_t *device_ns; /* sorted, `rounds` of them; NULL when rounds == 1 */
    const sp_run_trace *trace; /* the last round's, NULL if not traced */
    const char *stats_text;    /* the trace summary lines (--stats), NULL if none */
    /* Tensors the run wrote (OUT / INOUT): names and FNV-1a 64 of their bytes. */
    uint32_t output_count;
    const char *output_names[RUN_REPORT_MAX_OUTPUTS];
    uint64_t output_hash[RUN_REPORT_MAX_OUTPUTS];
    /* The worker's log sink while the run is open (cli_log_sink). */
    cli_log log;
} run_report;

/* The text result: "PASS <target> runtime=... tasks=... ..." or "FAIL ...",
 * and the rounds line; the message of a failed status is the caller's to
 * print (once, on stderr, cli_fail). */
void run_report_text(const run_report *r, FILE *out);
/* One JSON object on one line. */
void run_report_json(const run_report *r, FILE *out);
/* FNV-1a 64 of `n` bytes: the --json "outputs" checksums. */
uint64_t run_hash_bytes(const void *p, uint64_t n);
/* The --rounds bar, redrawn in place on stderr when it is a terminal and
 * fitted to its width; cleared when done == total. */
void run_progress(long done, long total);

#endif
