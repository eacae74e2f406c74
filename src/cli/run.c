/* `simpler run`: parse and check the options, then run an example
 * (run_example.c) or a callable file (run_file.c); the worker they share. */
#include "cli/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <limits.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/npy.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

void run_print_status(const run_opts *o, int status, const char *msg)
{
    static const char *const runtimes[] = {"hbg", "tmr"};
    const char *best = status == SP_EMODULE ? cli_suggest(o->runtime, runtimes, 2) : NULL;
    if (best && strcmp(best, o->runtime) != 0)
        cli_fail(status, "%s (did you mean --runtime %s?)", msg, best);
    else
        cli_fail(status, "%s", msg);
}

int run_open(const run_opts *o, sp_worker **w, sp_call_config *cfg, run_report *r, char *err,
             size_t err_len)
{
    sp_worker_options wo = {0};
    /* Error lines the library logs restate the failure this command
     * prints once; they are shown only when asked for (SIMPLER_LOG). */
    const char *level = getenv("SIMPLER_LOG");
    r->log.verbose = level && (strcmp(level, "debug") == 0 || strcmp(level, "info") == 0);
    wo.log_sink = cli_log_sink;
    wo.log_user = &r->log;
    wo.prewarm.clusters = (uint32_t)o->clusters;
    wo.prewarm.sched_threads = (uint32_t)o->sched;
    memset(cfg, 0, sizeof *cfg);
    cfg->sched_threads = (uint32_t)o->sched;
    cfg->task_window = (uint32_t)o->window;
    cfg->heap_bytes = (uint64_t)o->heap;
    cfg->flags |= o->replay == 1 ? SP_CALL_REPLAY_AUTO : o->replay == 2 ? SP_CALL_REPLAY_ONLY : 0;
    if (run_opts_wants_trace(o)) {
        cfg->trace_level = o->trace_level ? (uint32_t)o->trace_level : SP_TRACE_TASKS;
        cfg->trace_records = (uint64_t)o->trace_records;
    }
    *w = NULL;
    r->status = sp_worker_open_runtime(o->runtime, NULL, &wo, w, err, err_len);
    if (r->status)
        return 0;
    /* The device this process got: a wish it could not grant is the
     * user's to change, before anything runs. */
    sp_device_info d;
    if ((r->status = sp_worker_device_info(*w, &d)) != SP_OK) {
        snprintf(err, err_len, "%s", sp_worker_last_error(*w));
        return 0;
    }
    uint32_t sched = d.geometry.aicpu_threads > 1 ? d.geometry.aicpu_threads - 1 : 1;
    int rc = 0;
    if (o->sched && (uint32_t)o->sched > sched)
        rc = cli_usage_error("run",
                             "--sched %ld is beyond the device: it has %u scheduler thread(s) "
                             "(%u AICPU threads, one the orchestrator's)",
                             o->sched, sched, d.geometry.aicpu_threads);
    else if (o->clusters && (uint32_t)o->clusters > d.geometry.clusters)
        rc = cli_usage_error("run", "--clusters %ld is beyond the device: it has %u", o->clusters,
                             d.geometry.clusters);
    if (rc) {
        sp_worker_close(*w);
        *w = NULL;
    }
    return rc;
}

int cli_run(int argc, char **argv)
{
    run_opts o;
    int rc = run_opts_parse(argc, argv, &o);
    if (rc == 0 && !o.help)
        rc = o.is_file ? run_file(&o) : run_example(&o);
    run_opts_free(&o);
    return rc;
}

int run_save_dir(const char *dir)
{
    if (mkdir(dir, 0755) && errno != EEXIST)
        return cli_io_error("create '%s' (--save): %s", dir, strerror(errno));
    return 0;
}

int run_save_tensor(const char *dir, const char *name, const sp_tensor *t, const void *data)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s.npy", dir, name) >= (int)sizeof path)
        return cli_io_error("write into '%s': the path is too long", dir);
    int rc = npy_write(path, t, data);
    if (rc == NPY_ESYMLINK)
        return cli_io_error("write '%s': it is a symbolic link (--save never writes through "
                            "one; remove it or choose another directory)",
                            path);
    if (rc)
        return cli_io_error("write '%s': %s", path, strerror(errno));
    return 0;
}

void run_report_output(run_report *r, const char *name, const sp_tensor *t, const void *data)
{
    if (r->output_count == RUN_REPORT_MAX_OUTPUTS)
        return;
    r->output_names[r->output_count] = name;
    r->output_hash[r->output_count++] =
        run_hash_bytes(data, (uint64_t)sp_tensor_numel(t) * sp_dtype_size(t->dtype));
}

int run_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

bool run_dir_written(int dir)
{
    return dir == SP_OUT || dir == SP_INOUT || dir == SP_OUT_EXISTING;
}
