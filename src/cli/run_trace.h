/* `simpler run`'s trace outputs: the --trace, --swimlane and --deps files
 * and the --stats summary of the last run a worker waited for. */
#ifndef SP_CLI_RUN_TRACE_H
#define SP_CLI_RUN_TRACE_H

#include "cli/run_opts.h"
#include "simpler/worker.h"

/* Write the files `o` asks for from the last run of `w` (through
 * sp_worker_write_trace: the worker names the kernels from the callable it
 * registered), and when --stats, the summary lines into *stats_text
 * (malloc'd, free it). 0; CLI_EXIT_IO (a file could not be written) or
 * CLI_EXIT_FAIL (the run has no trace), message printed. */
int run_trace_write(const run_opts *o, sp_worker *w, char **stats_text);

#endif
