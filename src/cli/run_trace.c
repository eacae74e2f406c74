/* The trace outputs of `simpler run` (run_trace.h). */
#include "cli/run_trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/trace_model.h"
#include "simpler/status.h"

int run_trace_write(const run_opts *o, sp_worker *w, const sp_run_stats *st,
                    const char *callable_path, char **stats_text)
{
    *stats_text = NULL;
    const sp_run_trace *tr = sp_worker_last_trace(w);
    trace_model tm = {0};
    if (!tr || trace_model_build(&tm, tr, st, o->runtime, callable_path))
        return cli_fail(tr ? SP_ENOMEM : SP_EINVAL, "the run's trace could not be read");
    const struct {
        const char *path, *opt;
        int (*write)(const trace_model *, const char *);
    } outs[] = {{o->trace_json, "--trace", trace_write_json},
                {o->swimlane, "--swimlane", trace_write_svg},
                {o->deps, "--deps", trace_write_dot}};
    int rc = 0;
    for (size_t i = 0; !rc && i < sizeof outs / sizeof outs[0]; i++)
        if (outs[i].path && outs[i].write(&tm, outs[i].path))
            rc = cli_io_error("write '%s' (%s): %s", outs[i].path, outs[i].opt, strerror(errno));
    if (!rc && o->stats) {
        size_t len = 0;
        FILE *f = open_memstream(stats_text, &len);
        if (!f)
            rc = cli_fail(SP_ENOMEM, "no host memory for the trace summary");
        else {
            trace_print_stats(&tm, f);
            fclose(f);
        }
    }
    trace_model_free(&tm);
    return rc;
}
