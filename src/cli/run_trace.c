/* The trace outputs of `simpler run` (run_trace.h), written by the
 * library's exporters (simpler/trace_export.h) through the worker, which
 * names the kernels from the callable it registered. The format is the
 * option's, never the file name's. */
#include "cli/run_trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "simpler/status.h"

/* The STATS lines as a string, written into a memory stream. 0 or a status. */
static int stats_to_text(sp_worker *w, char **text)
{
    size_t len = 0;
    FILE *f = open_memstream(text, &len);
    if (!f)
        return SP_ESYS;
    int rc = sp_worker_write_trace_file(w, SP_TRACE_FORMAT_STATS, f);
    if (fclose(f) && rc == SP_OK)
        rc = SP_ENOMEM;
    if (rc) {
        free(*text);
        *text = NULL;
    }
    return rc;
}

int run_trace_write(const run_opts *o, sp_worker *w, char **stats_text)
{
    *stats_text = NULL;
    if (!sp_worker_last_trace(w))
        return cli_fail(SP_EINVAL, "the run has no trace to write");
    const struct {
        const char *path, *opt;
        int format;
    } outs[] = {{o->trace_json, "--trace", SP_TRACE_FORMAT_JSON},
                {o->swimlane, "--swimlane", SP_TRACE_FORMAT_SVG},
                {o->deps, "--deps", SP_TRACE_FORMAT_DOT}};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
        if (!outs[i].path)
            continue;
        int rc = sp_worker_write_trace(w, outs[i].format, outs[i].path);
        if (rc == SP_ESYS)
            return cli_io_error("write '%s' (%s): %s", outs[i].path, outs[i].opt,
                                sp_worker_last_error(w));
        if (rc)
            return cli_fail(rc, "%s %s: %s", outs[i].opt, outs[i].path, sp_worker_last_error(w));
    }
    if (o->stats) {
        int rc = stats_to_text(w, stats_text);
        if (rc)
            return cli_fail(rc, "the trace summary (--stats): %s",
                            rc == SP_ESYS ? strerror(errno) : sp_worker_last_error(w));
    }
    return 0;
}
