/* The public entry of the exporters (simpler/trace_export.h): check the
 * request, build the model once, open the destination, run the format's
 * writer and report a write failure with errno's text. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "simpler/status.h"
#include "trace/trace_model.h"

#define TASK_ID_MAX (1ull << 32)

SP_EXPORT int sp_trace_format_of(const char *path)
{
    const char *dot = path ? strrchr(path, '.') : NULL;
    if (!dot || strchr(dot, '/'))
        return 0;
    static const struct {
        const char *ext;
        int format;
    } exts[] = {{".json", SP_TRACE_FORMAT_JSON}, {".svg", SP_TRACE_FORMAT_SVG},
                {".dot", SP_TRACE_FORMAT_DOT},   {".gv", SP_TRACE_FORMAT_DOT},
                {".txt", SP_TRACE_FORMAT_STATS}, {".stats", SP_TRACE_FORMAT_STATS}};
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++)
        if (strcasecmp(dot, exts[i].ext) == 0)
            return exts[i].format;
    return 0;
}

static int fail(int status, char *err, size_t err_len, const char *fmt, const char *a,
                const char *b)
{
    if (err && err_len)
        snprintf(err, err_len, fmt, a, b);
    return status;
}

/* What every request must satisfy, whatever its destination. */
static int check_request(const sp_run_trace *tr, int format, char *err, size_t err_len)
{
    if (!tr)
        return fail(SP_EINVAL, err, err_len, "%s%s", "trace: NULL trace", "");
    if (tr->level == SP_TRACE_OFF)
        return fail(SP_EINVAL, err, err_len, "%s%s",
                    "trace: the run was not traced (level 0): set sp_call_config.trace_level", "");
    if (format < SP_TRACE_FORMAT_JSON || format > SP_TRACE_FORMAT_STATS)
        return fail(SP_EINVAL, err, err_len, "%s%s",
                    "trace: unknown format (want SP_TRACE_FORMAT_JSON, SVG, DOT or STATS)", "");
    if ((tr->record_count && !tr->records) || (tr->edge_count && !tr->edges) ||
        tr->record_count > tr->record_cap || tr->edge_count > tr->edge_cap)
        return fail(SP_EINVAL, err, err_len, "%s%s",
                    "trace: record_count / edge_count exceed the buffers given (read the counts "
                    "first, then the records, as sp_run_trace describes)",
                    "");
    /* The model has a row per task id: ids past TASK_ID_MAX are not a
     * run's (a hand-made or damaged trace), and would not fit. */
    for (uint64_t i = 0; i < tr->record_count; i++)
        if (tm_is_task_record(&tr->records[i]) && tr->records[i].task >= TASK_ID_MAX)
            return fail(SP_EINVAL, err, err_len, "%s%s",
                        "trace: a record names a task id past 2^32", "");
    for (uint64_t i = 0; i < tr->edge_count; i++) {
        if (tr->edges[i].producer >= tr->edges[i].consumer)
            return fail(SP_EINVAL, err, err_len, "%s%s",
                        "trace: an edge whose producer does not precede its consumer", "");
        if (tr->edges[i].consumer >= TASK_ID_MAX)
            return fail(SP_EINVAL, err, err_len, "%s%s", "trace: an edge names a task id past 2^32",
                        "");
    }
    return SP_OK;
}

/* Build the model and run the format's writer into `f`: 0 or SP_ENOMEM
 * (a write error is left in ferror(f) for the caller). */
static int write_model(const sp_run_trace *tr, const sp_trace_info *info, int format, FILE *f,
                       char *err, size_t err_len)
{
    trace_model m;
    if (tm_build(&m, tr, info))
        return fail(SP_ENOMEM, err, err_len, "%s%s", "trace: no host memory for the model", "");
    int rc;
    switch (format) {
    case SP_TRACE_FORMAT_JSON:
        rc = tm_write_json(&m, f);
        break;
    case SP_TRACE_FORMAT_SVG:
        rc = tm_write_svg(&m, f);
        break;
    case SP_TRACE_FORMAT_DOT:
        rc = tm_write_dot(&m, f);
        break;
    default:
        rc = tm_write_stats(&m, f);
        break;
    }
    tm_free(&m);
    if (rc)
        return fail(rc, err, err_len, "%s%s", "trace: no host memory while writing", "");
    return SP_OK;
}

SP_EXPORT int sp_trace_write_file(const sp_run_trace *tr, const sp_trace_info *info, int format,
                                  FILE *f, char *err, size_t err_len)
{
    if (err && err_len)
        err[0] = 0;
    int rc = check_request(tr, format, err, err_len);
    if (rc)
        return rc;
    if (!f)
        return fail(SP_EINVAL, err, err_len, "%s%s", "trace: NULL stream", "");
    if ((rc = write_model(tr, info, format, f, err, err_len)))
        return rc;
    errno = 0;
    if (ferror(f) || fflush(f))
        return fail(SP_ESYS, err, err_len, "cannot write the trace%s: %s", "",
                    strerror(errno ? errno : EIO));
    return SP_OK;
}

SP_EXPORT int sp_trace_write(const sp_run_trace *tr, const sp_trace_info *info, int format,
                             const char *path, char *err, size_t err_len)
{
    if (err && err_len)
        err[0] = 0;
    int rc = check_request(tr, format, err, err_len);
    if (rc)
        return rc;
    if (!path || !*path)
        return fail(SP_EINVAL, err, err_len, "%s%s", "trace: no output path", "");
    bool to_stdout = strcmp(path, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(path, "w");
    if (!f) {
        int e = errno;
        return fail(SP_ESYS, err, err_len, "cannot write the trace '%s': %s", path, strerror(e));
    }
    rc = write_model(tr, info, format, f, err, err_len);
    errno = 0;
    bool bad = ferror(f) != 0;
    bad |= to_stdout ? fflush(f) != 0 : fclose(f) != 0;
    if (rc)
        return rc;
    if (bad)
        return fail(SP_ESYS, err, err_len, "cannot write the trace '%s': %s", path,
                    strerror(errno ? errno : EIO));
    return SP_OK;
}
