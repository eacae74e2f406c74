/* The two forms of `simpler run` and what they share: opening the worker
 * with the options' geometry, checked before anything runs. */
#ifndef SP_CLI_RUN_H
#define SP_CLI_RUN_H

#include "cli/run_opts.h"
#include "cli/run_report.h"
#include "simpler/worker.h"

/* Open the worker for `o` (its runtime, clusters and scheduler threads),
 * check the options that need the device (--sched, --clusters against its
 * geometry: a usage error) and fill the run's config. 0; CLI_EXIT_USAGE
 * (message printed, nothing open); or, when the worker cannot open, 0 with
 * *w NULL and the status and message in `r` / `err`. */
int run_open(const run_opts *o, sp_worker **w, sp_call_config *cfg, run_report *r, char *err,
             size_t err_len);
/* Report a failed open / register / run once: the status on stderr
 * (cli_fail, with a "did you mean" for an unknown runtime). */
void run_print_status(const run_opts *o, int status, const char *msg);

/* --save: create `dir` (it may exist). 0 or CLI_EXIT_IO (message printed). */
int run_save_dir(const char *dir);
/* --save: write `data` (a tensor `t` describes) as DIR/NAME.npy, never
 * through a symbolic link. 0 or CLI_EXIT_IO (message printed). */
int run_save_tensor(const char *dir, const char *name, const sp_tensor *t, const void *data);
/* Record a tensor the run wrote in the report (--json "outputs"): its name
 * and the FNV-1a 64 of its bytes; past RUN_REPORT_MAX_OUTPUTS it is left out. */
void run_report_output(run_report *r, const char *name, const sp_tensor *t, const void *data);
/* Does a run write a tensor passed with direction `dir` (OUT, INOUT,
 * OUT_EXISTING)? */
bool run_dir_written(int dir);
/* qsort comparator of uint64_t (device times). */
int run_cmp_u64(const void *a, const void *b);

int run_example(const run_opts *o);
int run_file(const run_opts *o);

#endif
