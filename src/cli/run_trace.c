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

/* The STATS lines as a string: written to a private temporary file and
 * read back (the exporter writes to a path). 0 or a status. */
static int stats_to_text(sp_worker *w, char **text)
{
    char path[] = "/tmp/simpler-stats-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return SP_ESYS;
    int rc = sp_worker_write_trace(w, SP_TRACE_FORMAT_STATS, path);
    FILE *f = rc == SP_OK ? fdopen(fd, "r") : NULL;
    if (rc == SP_OK && !f)
        rc = SP_ESYS;
    if (f) {
        size_t cap = 4096, len = 0, n;
        char *buf = malloc(cap);
        while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0)
            if ((len += n) + 1 == cap) {
                char *bigger = realloc(buf, cap *= 2);
                if (!bigger)
                    free(buf);
                buf = bigger;
            }
        if (buf)
            buf[len] = '\0';
        else
            rc = SP_ENOMEM;
        *text = buf;
        fclose(f);
    } else {
        close(fd);
    }
    unlink(path);
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
