/* `simpler run EXAMPLE`: set up one example case, run it through the worker
 * on the chosen runtime, compare with its golden, and end with one PASS or
 * FAIL line (or one JSON object). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/run.h"
#include "cli/run_trace.h"
#include "common/paths.h"
#include "example.h"
#include "simpler/status.h"

/* --save: every tensor argument as DIR/<name>.npy. 0 or CLI_EXIT_IO. */
static int save_tensors(const ex_instance *inst, const char *dir)
{
    int rc = run_save_dir(dir);
    for (uint32_t i = 0; !rc && i < inst->args.tensor_count; i++) {
        const sp_tensor *t = &inst->args.tensors[i];
        rc = run_save_tensor(dir, inst->arg_names[i] ? inst->arg_names[i] : "arg", t,
                             (const void *)(uintptr_t)t->addr);
    }
    return rc;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* --trace-cost: per pair, traced minus untraced; the median pair, per task. */
static void print_trace_cost(long rounds, uint64_t *cost_ns[2], const sp_run_stats *st,
                             const sp_run_trace *tr, uint32_t level)
{
    int64_t *diff = calloc((size_t)rounds, sizeof *diff);
    for (long i = 0; diff && i < rounds; i++)
        diff[i] = (int64_t)(cost_ns[1][i] - cost_ns[0][i]);
    qsort(cost_ns[0], (size_t)rounds, sizeof(uint64_t), run_cmp_u64);
    qsort(cost_ns[1], (size_t)rounds, sizeof(uint64_t), run_cmp_u64);
    if (diff)
        qsort(diff, (size_t)rounds, sizeof *diff, cmp_i64);
    double tasks = st->tasks ? (double)st->tasks : 1.0;
    double recs = tr && tr->record_count ? (double)tr->record_count : 1.0;
    double d = diff ? (double)diff[rounds / 2] : 0.0;
    printf("trace_cost rounds=%ld tasks=%llu records=%.0f level=%u device_us median "
           "off=%.1f on=%.1f per_task_ns=%.1f per_record_ns=%.1f (median of per-pair "
           "differences)\n",
           rounds, (unsigned long long)st->tasks, recs, level, cost_ns[0][rounds / 2] / 1e3,
           cost_ns[1][rounds / 2] / 1e3, d / tasks, d / recs);
    free(diff);
}

/* The example and case `o` names, refused as usage errors (with the closest
 * name) before anything runs. */
static int find_example(const run_opts *o, const ex_example **ex_out, const char **case_out)
{
    const ex_example *ex = ex_find(o->target);
    if (!ex) {
        int n;
        const ex_example *const *all = ex_registry(&n);
        const char *names[64];
        for (int i = 0; i < n && i < 64; i++)
            names[i] = all[i]->name;
        const char *best = cli_suggest(o->target, names, n < 64 ? n : 64);
        if (best)
            return cli_usage_error("run", "no example '%s' (did you mean %s?)", o->target, best);
        return cli_usage_error("run", "no example '%s' (simpler list shows them)", o->target);
    }
    const ex_case *c = o->case_name ? NULL : &ex->cases[0];
    for (int i = 0; !c && i < ex->case_count; i++)
        if (strcmp(ex->cases[i].name, o->case_name) == 0)
            c = &ex->cases[i];
    if (!c) {
        const char *names[64];
        int n = ex->case_count < 64 ? ex->case_count : 64;
        for (int i = 0; i < n; i++)
            names[i] = ex->cases[i].name;
        const char *best = cli_suggest(o->case_name, names, n);
        if (best)
            return cli_usage_error("run", "%s has no case '%s' (did you mean %s?)", ex->name,
                                   o->case_name, best);
        return cli_usage_error("run", "%s has no case '%s' (simpler list shows its cases)",
                               ex->name, o->case_name);
    }
    if (c->needs_live_read && run_opts_is_hbg(o))
        return cli_usage_error("run",
                               "case '%s' of %s is tmr only: its orchestration reads a task's "
                               "output mid-run, which host_build_graph cannot serve (use "
                               "--runtime tmr)",
                               c->name, ex->name);
    *ex_out = ex;
    *case_out = c->name;
    return 0;
}

static int prepare(ex_instance *inst, const ex_example *ex, const char *case_name,
                   const run_opts *o, char *err, size_t err_len)
{
    if (ex_instance_init(inst, ex, case_name, o->overrides, err, err_len))
        return -1;
    if (ex->setup(inst, err, err_len)) {
        ex_instance_free(inst);
        return -1;
    }
    return 0;
}

int run_example(const run_opts *o)
{
    const ex_example *ex = NULL;
    const char *case_name = NULL;
    int rc = find_example(o, &ex, &case_name);
    if (rc)
        return rc;
    char err[EX_ERR_LEN] = "";
    ex_instance inst;
    if (prepare(&inst, ex, case_name, o, err, sizeof err))
        return cli_usage_error("run", "%s %s: %s", ex->name, case_name, err);

    /* Installed (<prefix>/share/simpler/examples) or in the build tree; when
     * neither exists, the installed path, which register's error names. */
    char callable[PATH_MAX], rel[128];
    snprintf(rel, sizeof rel, "examples/%s.spc", ex->name);
    sp__data_path(callable, sizeof callable, rel);

    run_report r = {.target = ex->name, .runtime = o->runtime, .case_name = case_name};
    r.rounds = o->rounds;
    r.replay = o->replay;
    sp_worker *w = NULL;
    sp_call_config cfg;
    char werr[640] = "";
    if ((rc = run_open(o, &w, &cfg, &r, werr, sizeof werr)) != 0) {
        ex_instance_free(&inst);
        return rc;
    }
    if (r.status == SP_OK && (r.status = sp_worker_register_callable_file(w, 0, callable)) != SP_OK)
        snprintf(werr, sizeof werr, "%s", sp_worker_last_error(w));

    /* --trace-cost: each round is a pair of runs, untraced and traced, in
     * alternating order so neither always runs first. */
    long runs = o->trace_cost ? 2 * o->rounds : o->rounds;
    sp_call_config cfg_on = cfg;
    cfg_on.trace_level = o->trace_level ? (uint32_t)o->trace_level : SP_TRACE_TASKS;
    cfg_on.trace_records = (uint64_t)o->trace_records;
    uint64_t *cost_ns[2] = {calloc((size_t)o->rounds, sizeof(uint64_t)),
                            calloc((size_t)o->rounds, sizeof(uint64_t))};
    uint64_t *device_ns = calloc((size_t)o->rounds, sizeof *device_ns);
    if (r.status == SP_OK && (!device_ns || !cost_ns[0] || !cost_ns[1])) {
        r.status = SP_ENOMEM;
        snprintf(werr, sizeof werr, "no host memory for the timings of %ld rounds", o->rounds);
    }
    char why[EX_ERR_LEN] = "";
    for (long i = 0; r.status == SP_OK && !r.wrong && i < runs; i++) {
        bool traced = o->trace_cost && (i % 2) == ((i / 2) % 2 == 0);
        if (i > 0) { /* fresh inputs: INOUT arguments were changed by the last round */
            ex_instance_free(&inst);
            if (prepare(&inst, ex, case_name, o, err, sizeof err)) {
                r.status = SP_EINVAL;
                snprintf(werr, sizeof werr, "%s", err);
                break;
            }
        }
        r.status = sp_worker_run(w, 0, &inst.args, traced ? &cfg_on : &cfg, &r.st);
        if (r.status) {
            snprintf(werr, sizeof werr, "%s", sp_worker_last_error(w));
            break;
        }
        r.replayed += r.st.replay == SP_RUN_REPLAYED;
        if (o->trace_cost)
            cost_ns[traced][i / 2] = r.st.device_ns;
        else
            device_ns[i] = r.st.device_ns;
        run_progress(i + 1, runs);
        if (ex->check(&inst, &r.max_err, why, sizeof why))
            r.wrong = true;
        else if (inst.expect_tasks >= 0 && (int64_t)r.st.tasks != inst.expect_tasks)
            r.wrong = snprintf(why, sizeof why, "expected %lld tasks, the run had %llu",
                               (long long)inst.expect_tasks, (unsigned long long)r.st.tasks) > 0;
        else if (inst.expect_edges >= 0 && (int64_t)r.st.edges != inst.expect_edges)
            r.wrong = snprintf(why, sizeof why, "expected %lld edges, the run had %llu",
                               (long long)inst.expect_edges, (unsigned long long)r.st.edges) > 0;
    }
    if (r.wrong)
        r.why = why;
    int io = 0;
    if (o->save_dir && r.status == SP_OK)
        io = save_tensors(&inst, o->save_dir);
    char *stats_text = NULL;
    if (!io && r.status == SP_OK && !r.wrong && run_opts_wants_trace(o)) {
        io = run_trace_write(o, w, &stats_text);
        r.trace = sp_worker_last_trace(w);
        r.stats_text = stats_text;
    }
    if (io && !r.wrong) {
        r.wrong = true;
        r.why = "an output file could not be written";
    }
    if (r.status) {
        run_print_status(o, r.status, werr);
        r.error = werr;
    }
    for (uint32_t i = 0; r.status == SP_OK && i < inst.args.tensor_count; i++) {
        const sp_tensor *t = &inst.args.tensors[i];
        if (run_dir_written(inst.args.dirs[i]))
            run_report_output(&r, inst.arg_names[i] ? inst.arg_names[i] : "arg", t,
                              (const void *)(uintptr_t)t->addr);
    }
    if (!o->trace_cost && o->rounds > 1 && r.status == SP_OK && !r.wrong) {
        qsort(device_ns, (size_t)o->rounds, sizeof *device_ns, run_cmp_u64);
        r.device_ns = device_ns;
    }
    if (o->json) {
        run_report_json(&r, stdout);
    } else {
        run_report_text(&r, stdout);
        if (r.status == SP_OK && !r.wrong && o->trace_cost)
            print_trace_cost(o->rounds, cost_ns, &r.st, sp_worker_last_trace(w),
                             cfg_on.trace_level);
        if (stats_text)
            fputs(stats_text, stdout);
    }
    free(stats_text);
    free(device_ns);
    free(cost_ns[0]);
    free(cost_ns[1]);
    sp_worker_close(w);
    cli_log_end(&r.log, r.status != SP_OK);
    ex_instance_free(&inst);
    if (io)
        return io;
    return r.status || r.wrong ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
