/* `simpler run`'s options: parsed with getopt_long and checked before
 * anything runs (a bad one is a usage error, exit 2), for both forms:
 * `simpler run EXAMPLE` and `simpler run FILE.spc --input ... --output ...`. */
#ifndef SP_CLI_RUN_OPTS_H
#define SP_CLI_RUN_OPTS_H

#include <stdbool.h>

/* One argument of a callable file run, in command-line order. */
typedef enum run_arg_kind {
    RUN_ARG_INPUT = 1,  /* --input NAME=FILE.npy  (IN) */
    RUN_ARG_INOUT = 2,  /* --inout NAME=FILE.npy  (INOUT) */
    RUN_ARG_OUTPUT = 3, /* --output NAME=SHAPE:DTYPE  (OUT) */
    RUN_ARG_SCALAR = 4, /* --scalar NAME=VALUE */
} run_arg_kind;

typedef struct run_arg {
    run_arg_kind kind;
    char name[64];
    const char *value; /* after the '=' (points into argv) */
} run_arg;

typedef struct run_opts {
    const char *target; /* example name, or the callable file when is_file */
    bool is_file;       /* ends in .spc or contains '/' */
    const char *runtime;
    const char *case_name; /* examples */
    const char *save_dir;
    long rounds, clusters, sched, window, heap;
    long trace_level, trace_records;
    const char *trace_json, *swimlane, *deps; /* output files, NULL: none */
    bool stats, trace_cost, json;
    int replay; /* --replay: 0 off, 1 auto, 2 only (sp_call_config.flags SP_CALL_REPLAY_*) */
    bool help;  /* --help was printed: exit 0 */
    /* Examples: "KEY=VALUE" overrides, NULL-terminated; KEY=@FILE is read
     * here, the copies owned by `owned`. */
    const char **overrides;
    int override_count;
    char **owned;
    int owned_count;
    /* Callable files: the arguments. */
    run_arg *args;
    int arg_count;
} run_opts;

/* Parse and check argv (argv[0] is "run"); 0 (with `help` set when --help
 * was printed), or the exit code to return (CLI_EXIT_USAGE, CLI_EXIT_IO for
 * an unreadable @FILE) with the message printed. run_opts_free in every case. */
int run_opts_parse(int argc, char **argv, run_opts *o);
void run_opts_free(run_opts *o);
/* The runtime is host_build_graph (no task window, no live reads). */
bool run_opts_is_hbg(const run_opts *o);
/* Do the options ask for a trace (any trace file or --stats)? */
bool run_opts_wants_trace(const run_opts *o);

#endif
