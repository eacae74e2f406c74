/* `simpler run EXAMPLE`: set up one example case, run it through the worker
 * on the chosen runtime, compare with its golden, and end with one PASS or
 * FAIL line. `simpler list` shows examples, cases and parameters. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/npy.h"
#include "cli/trace_model.h"
#include "common/paths.h"
#include "example.h"
#include "simpler/status.h"
#include "simpler/worker.h"

#define MAX_OVERRIDES 64

typedef struct run_opts {
    const char *example;
    const char *runtime;
    const char *case_name;
    const char *save_dir;
    long rounds;
    long clusters;
    long sched;
    long window;
    long heap;
    const char *overrides[MAX_OVERRIDES + 1];
    int override_count;
    const char *trace_json, *swimlane, *deps; /* output files, NULL: none */
    bool stats;
    bool trace_cost; /* rounds alternate tracing off / on: the recording's cost */
    long trace_level, trace_records;
} run_opts;

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "simpler run: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: simpler run EXAMPLE [--runtime hbg|tmr|...] [--case NAME] "
                    "[--rounds N] [--clusters N] [--sched N] [--window N] [--heap BYTES] "
                    "[--param KEY=VALUE]... [--save DIR] [--trace OUT.json] [--swimlane OUT.svg] "
                    "[--deps OUT.dot] [--stats] [--trace-level 1..3] [--trace-records N] "
                    "[--trace-cost]\n");
    return 2;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_opts(int argc, char **argv, run_opts *o)
{
    memset(o, 0, sizeof *o);
    o->runtime = "hbg";
    o->rounds = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            if (o->example)
                return usage_error("unexpected argument '%s'", a);
            o->example = a;
            continue;
        }
        if (strcmp(a, "--stats") == 0 || strcmp(a, "--trace-cost") == 0) { /* no value */
            *(a[2] == 's' ? &o->stats : &o->trace_cost) = true;
            continue;
        }
        if (!v)
            return usage_error("option '%s' needs a value", a);
        i++;
        if (strcmp(a, "--runtime") == 0) {
            o->runtime = v; /* the worker finds its module, or says there is none */
        } else if (strcmp(a, "--case") == 0) {
            o->case_name = v;
        } else if (strcmp(a, "--rounds") == 0) {
            if (parse_long(v, 1, 1000000, &o->rounds))
                return usage_error("--rounds must be an integer in 1..1000000, not '%s'", v);
        } else if (strcmp(a, "--clusters") == 0) {
            if (parse_long(v, 1, 256, &o->clusters))
                return usage_error("--clusters must be an integer in 1..256, not '%s'", v);
        } else if (strcmp(a, "--sched") == 0) {
            if (parse_long(v, 1, 64, &o->sched))
                return usage_error("--sched must be an integer in 1..64, not '%s'", v);
        } else if (strcmp(a, "--window") == 0) {
            if (parse_long(v, 4, 1 << 20, &o->window))
                return usage_error("--window must be an integer in 4..2^20, not '%s'", v);
        } else if (strcmp(a, "--heap") == 0) {
            if (parse_long(v, 4096, 1L << 40, &o->heap))
                return usage_error("--heap must be a byte count in 4096..2^40, not '%s'", v);
        } else if (strcmp(a, "--param") == 0) {
            if (!strchr(v, '=') || o->override_count >= MAX_OVERRIDES)
                return usage_error("--param takes KEY=VALUE, not '%s'", v);
            o->overrides[o->override_count++] = v;
        } else if (strcmp(a, "--save") == 0) {
            o->save_dir = v;
        } else if (strcmp(a, "--trace") == 0) {
            o->trace_json = v;
        } else if (strcmp(a, "--swimlane") == 0) {
            o->swimlane = v;
        } else if (strcmp(a, "--deps") == 0) {
            o->deps = v;
        } else if (strcmp(a, "--trace-level") == 0) {
            if (parse_long(v, 1, 3, &o->trace_level))
                return usage_error("--trace-level must be 1, 2 or 3, not '%s'", v);
        } else if (strcmp(a, "--trace-records") == 0) {
            if (parse_long(v, 1, 1L << 30, &o->trace_records))
                return usage_error("--trace-records must be an integer in 1..2^30, not '%s'", v);
        } else {
            return usage_error("unknown option '%s'", a);
        }
    }
    if (!o->example)
        return usage_error("%s", "which example? (simpler list shows them)");
    return 0;
}

static int save_tensors(const ex_instance *inst, const char *dir)
{
    if (mkdir(dir, 0755) && errno != EEXIST) {
        fprintf(stderr, "simpler run: cannot create '%s': %s\n", dir, strerror(errno));
        return -1;
    }
    for (uint32_t i = 0; i < inst->args.tensor_count; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s.npy", dir,
                 inst->arg_names[i] ? inst->arg_names[i] : "arg");
        const sp_tensor *t = &inst->args.tensors[i];
        int rc = npy_write(path, t, (const void *)(uintptr_t)t->addr);
        if (rc == NPY_ESYMLINK) {
            fprintf(stderr,
                    "simpler run: refusing to write '%s': it is a symbolic link (--save never "
                    "writes through one; remove it or choose another directory)\n",
                    path);
            return -1;
        }
        if (rc) {
            fprintf(stderr, "simpler run: cannot write '%s': %s\n", path, strerror(errno));
            return -1;
        }
    }
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static bool wants_trace(const run_opts *o)
{
    return o->trace_json || o->swimlane || o->deps || o->stats;
}

/* Write the trace files the options ask for; 0, or -1 with `why` set. */
static int write_trace_files(const run_opts *o, const trace_model *m, char *why, size_t len)
{
    const struct {
        const char *path;
        int (*write)(const trace_model *, const char *);
    } outs[] = {{o->trace_json, trace_write_json},
                {o->swimlane, trace_write_svg},
                {o->deps, trace_write_dot}};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
        if (outs[i].path && outs[i].write(m, outs[i].path)) {
            snprintf(why, len, "cannot write '%s': %s", outs[i].path, strerror(errno));
            return -1;
        }
    return 0;
}

/* --rounds on a terminal: a one-line bar, redrawn in place (stderr is left
 * alone; nothing is drawn when stdout is a file or a pipe). */
static void progress(long done, long total)
{
    int width = 40, filled = (int)(width * done / total);
    printf("\r[%.*s%*s] %ld/%ld", filled, "########################################",
           width - filled, "", done, total);
    if (done == total)
        printf("\r%*s\r", width + 32, "");
    fflush(stdout);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int cli_run(int argc, char **argv)
{
    run_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc)
        return rc;
    const ex_example *ex = ex_find(o.example);
    if (!ex) {
        fprintf(stderr, "simpler run: no example '%s' (simpler list shows them)\n", o.example);
        return 2;
    }
    const char *case_name = o.case_name ? o.case_name : ex->cases[0].name;
    char err[EX_ERR_LEN] = "";
    ex_instance inst;
    if (ex_instance_init(&inst, ex, case_name, o.overrides, err, sizeof err)) {
        fprintf(stderr, "simpler run: %s\n", err);
        return 2;
    }
    if (ex->setup(&inst, err, sizeof err)) {
        fprintf(stderr, "simpler run: %s %s: %s\n", ex->name, case_name, err);
        ex_instance_free(&inst);
        return 2;
    }

    char callable[PATH_MAX], rel[128];
    snprintf(rel, sizeof rel, "examples/%s.spc", ex->name);
    sp__data_path(callable, sizeof callable, rel);

    sp_worker_options wo = {0};
    wo.prewarm.clusters = (uint32_t)o.clusters;
    wo.prewarm.sched_threads = (uint32_t)o.sched;
    sp_call_config cfg = {0};
    cfg.task_window = (uint32_t)o.window;
    cfg.heap_bytes = (uint64_t)o.heap;
    if (wants_trace(&o)) {
        cfg.trace_level = o.trace_level ? (uint32_t)o.trace_level : SP_TRACE_TASKS;
        cfg.trace_records = (uint64_t)o.trace_records;
    }
    bool bar = o.rounds > 1 && isatty(STDOUT_FILENO);
    /* --trace-cost: each round is a pair of runs, untraced and traced, in
     * alternating order so neither always runs first. */
    long runs = o.trace_cost ? 2 * o.rounds : o.rounds;
    sp_call_config cfg_on = cfg;
    cfg_on.trace_level = o.trace_level ? (uint32_t)o.trace_level : SP_TRACE_TASKS;
    cfg_on.trace_records = (uint64_t)o.trace_records;
    uint64_t *cost_ns[2] = {calloc((size_t)o.rounds, sizeof(uint64_t)),
                            calloc((size_t)o.rounds, sizeof(uint64_t))};
    sp_worker *w = NULL;
    char werr[640] = "";
    int status = sp_worker_open_runtime(o.runtime, NULL, &wo, &w, werr, sizeof werr);
    if (status == SP_OK && (status = sp_worker_register_callable_file(w, 0, callable)) != SP_OK)
        snprintf(werr, sizeof werr, "%s", sp_worker_last_error(w));

    uint64_t *device_ns = calloc((size_t)o.rounds, sizeof *device_ns);
    if (status == SP_OK && (!device_ns || !cost_ns[0] || !cost_ns[1])) {
        status = SP_ENOMEM;
        snprintf(werr, sizeof werr, "no host memory for the timings of %ld rounds", o.rounds);
    }
    sp_run_stats st = {0};
    double max_err = 0;
    char why[EX_ERR_LEN] = "";
    int fail = status != SP_OK;
    for (long r = 0; !fail && r < runs; r++) {
        bool traced = o.trace_cost && (r % 2) == ((r / 2) % 2 == 0);
        if (r > 0) { /* fresh inputs: INOUT arguments were changed by the last round */
            ex_instance_free(&inst);
            if (ex_instance_init(&inst, ex, case_name, o.overrides, err, sizeof err) ||
                ex->setup(&inst, err, sizeof err)) {
                snprintf(why, sizeof why, "%s", err);
                fail = 1;
                break;
            }
        }
        status = sp_worker_run(w, 0, &inst.args, traced ? &cfg_on : &cfg, &st);
        if (status) {
            snprintf(werr, sizeof werr, "%s", sp_worker_last_error(w));
            fail = 1;
            break;
        }
        if (o.trace_cost)
            cost_ns[traced][r / 2] = st.device_ns;
        else
            device_ns[r] = st.device_ns;
        if (bar)
            progress(r + 1, runs);
        if (ex->check(&inst, &max_err, why, sizeof why))
            fail = 1;
        else if (inst.expect_tasks >= 0 && (int64_t)st.tasks != inst.expect_tasks)
            fail = snprintf(why, sizeof why, "expected %lld tasks, the run had %llu",
                            (long long)inst.expect_tasks, (unsigned long long)st.tasks) > 0;
        else if (inst.expect_edges >= 0 && (int64_t)st.edges != inst.expect_edges)
            fail = snprintf(why, sizeof why, "expected %lld edges, the run had %llu",
                            (long long)inst.expect_edges, (unsigned long long)st.edges) > 0;
    }
    if (o.save_dir && status == SP_OK && save_tensors(&inst, o.save_dir))
        fail = 1;
    trace_model tm = {0};
    bool have_trace = false;
    if (status == SP_OK && !fail && wants_trace(&o)) {
        const sp_run_trace *tr = sp_worker_last_trace(w);
        if (!tr || trace_model_build(&tm, tr, &st, o.runtime, callable))
            fail = snprintf(why, sizeof why, "the run's trace could not be read") > 0;
        else if (write_trace_files(&o, &tm, why, sizeof why))
            fail = 1;
        else
            have_trace = true;
    }
    if (status != SP_OK)
        printf("FAIL %s runtime=%s case=%s status=%s: %s\n", ex->name, o.runtime, case_name,
               sp_status_name(status), werr);
    else if (fail)
        printf("FAIL %s runtime=%s case=%s tasks=%llu edges=%llu max_err=%g: %s\n", ex->name,
               o.runtime, case_name, (unsigned long long)st.tasks, (unsigned long long)st.edges,
               max_err, why);
    else {
        printf("PASS %s runtime=%s case=%s tasks=%llu edges=%llu build_us=%.1f device_us=%.1f "
               "max_err=%g\n",
               ex->name, o.runtime, case_name, (unsigned long long)st.tasks,
               (unsigned long long)st.edges, (st.build_ns + st.upload_ns) / 1e3, st.device_ns / 1e3,
               max_err);
        if (o.trace_cost) {
            /* Per pair, traced minus untraced; the median pair, per task. */
            int64_t *diff = calloc((size_t)o.rounds, sizeof *diff);
            for (long i = 0; diff && i < o.rounds; i++)
                diff[i] = (int64_t)(cost_ns[1][i] - cost_ns[0][i]);
            qsort(cost_ns[0], (size_t)o.rounds, sizeof(uint64_t), cmp_u64);
            qsort(cost_ns[1], (size_t)o.rounds, sizeof(uint64_t), cmp_u64);
            if (diff)
                qsort(diff, (size_t)o.rounds, sizeof *diff, cmp_i64);
            double tasks = st.tasks ? (double)st.tasks : 1.0;
            const sp_run_trace *tr = sp_worker_last_trace(w);
            double recs = tr && tr->record_count ? (double)tr->record_count : 1.0;
            double d = diff ? (double)diff[o.rounds / 2] : 0.0;
            printf("trace_cost rounds=%ld tasks=%llu records=%.0f level=%u device_us median "
                   "off=%.1f on=%.1f per_task_ns=%.1f per_record_ns=%.1f (median of per-pair "
                   "differences)\n",
                   o.rounds, (unsigned long long)st.tasks, recs, cfg_on.trace_level,
                   cost_ns[0][o.rounds / 2] / 1e3, cost_ns[1][o.rounds / 2] / 1e3, d / tasks,
                   d / recs);
            free(diff);
        } else if (o.rounds > 1) {
            qsort(device_ns, (size_t)o.rounds, sizeof *device_ns, cmp_u64);
            printf("rounds=%ld device_us min=%.1f median=%.1f max=%.1f\n", o.rounds,
                   device_ns[0] / 1e3, device_ns[o.rounds / 2] / 1e3,
                   device_ns[o.rounds - 1] / 1e3);
        }
        if (have_trace && o.stats)
            trace_print_stats(&tm, stdout);
    }
    trace_model_free(&tm);
    free(device_ns);
    free(cost_ns[0]);
    free(cost_ns[1]);
    sp_worker_close(w);
    ex_instance_free(&inst);
    return fail ? 1 : 0;
}

int cli_list(int argc, char **argv)
{
    (void)argc, (void)argv;
    int n;
    const ex_example *const *all = ex_registry(&n);
    for (int i = 0; i < n; i++) {
        const ex_example *ex = all[i];
        printf("%s: %s\n", ex->name, ex->description);
        printf("  cases:");
        for (int c = 0; c < ex->case_count; c++)
            printf(" %s%s", ex->cases[c].name, ex->cases[c].needs_live_read ? " (tmr only)" : "");
        printf("\n  parameters:\n");
        for (int p = 0; p < ex->param_count; p++)
            printf("    %-14s default %-10s %s\n", ex->params[p].name, ex->params[p].default_value,
                   ex->params[p].help);
    }
    return 0;
}
